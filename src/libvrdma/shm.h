/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma shared memory (private).
 *
 * Identity mapping: every address libvrdma gives the device (ring addresses as
 * UVA, descriptor and SGE addresses as GPA) is its own virtual address, so
 * each region is announced with guest_phys_addr == userspace_addr == the
 * pointer, mmap_offset == offset of that pointer in the region's fd.
 *
 * Three sources of shared memory:
 *  - arenas: memfd_create(MFD_CLOEXEC) files mmap'ed MAP_SHARED, announced
 *    with ADD_MEM_REG (or the whole table with SET_MEM_TABLE when the
 *    back-end lacks CONFIGURE_MEM_SLOTS). vrdma_shm_alloc() carves rings,
 *    control buffers and frame buffers out of them (first fit, coalescing
 *    free list); when no arena has room a new one is added (each twice the
 *    previous size, up to 256 MiB, at least the request), so the number of
 *    memory slots used stays logarithmic. Arenas are MADV_DONTFORK: a forked
 *    child never shares the rings.
 *  - application ranges converted in place (mem_share.c, vrdma_mem_share());
 *  - application ranges in the preloaded shared-heap allocator's memfd
 *    (src/shmalloc), announced as they are: region fd = a dup of the heap's
 *    fd, mmap_offset = the range's offset in the heap (mem_share.c).
 *
 * All functions here need the device lock (dev->lock, recursive) held; the
 * vrdma_shm_alloc/free wrappers take it themselves.
 */
#ifndef VRDMA_LIBVRDMA_SHM_H
#define VRDMA_LIBVRDMA_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vrdma_dev;

/* One region the back-end knows. fd is borrowed from its owner (arena or
 * shared chunk), which keeps it open while the region is announced. */
struct vrdma_mreg {
	uint64_t addr;    /* GPA == UVA == our pointer */
	uint64_t size;
	uint64_t offset;  /* mmap_offset into fd */
	int fd;
};

/* Default size of the first arena. */
#define VRDMA_ARENA_DEFAULT (4u << 20)
/* Arenas stop doubling at this size (bigger requests get exact arenas). */
#define VRDMA_ARENA_MAX (256u << 20)
/* Smallest allocation unit and default alignment. */
#define VRDMA_SHM_GRAIN 64

/* Zeroed shared memory of size bytes aligned to align (a power of two, at
 * most 1 MiB; 0 = VRDMA_SHM_GRAIN). Takes the device lock. Returns the
 * pointer (also the device address), or NULL with errno set (ENOMEM, ENOSPC:
 * no memory slot left, ENOTCONN, EINVAL). */
void *vrdma_shm_alloc(struct vrdma_dev *dev, size_t size, size_t align);
/* Give back a block from vrdma_shm_alloc (same size). NULL is ignored. */
void vrdma_shm_free(struct vrdma_dev *dev, void *p, size_t size);
/* True if [p, p+len) lies inside one of this device's arenas. */
bool vrdma_shm_contains(const struct vrdma_dev *dev, const void *p, size_t len);

/* Free every arena (munmap, close); the regions are not removed from the
 * back-end (used on close, after the reset). */
void vrdma_shm_destroy(struct vrdma_dev *dev);

/* Announce / withdraw a region. Returns 0 or -errno (-ENOSPC when the
 * back-end's slots or the SET_MEM_TABLE limit are exhausted). */
int vrdma_mreg_add(struct vrdma_dev *dev, uint64_t addr, uint64_t size, int fd,
		   uint64_t offset);
int vrdma_mreg_remove(struct vrdma_dev *dev, uint64_t addr, uint64_t size);

#endif /* VRDMA_LIBVRDMA_SHM_H */
