/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver's shared memory as the device sees it: a table of regions, each
 * an mmap of an fd the front-end passed (SET_MEM_TABLE / ADD_MEM_REG).
 *
 * Two address spaces are translated:
 *  - guest physical addresses (GPA): what descriptors, SGEs and MR page arrays
 *    carry;
 *  - front-end user addresses (UVA): what SET_VRING_ADDR carries.
 * (libvrdma uses identity mapping, GPA == UVA == its own virtual address; QEMU
 * and DPDK do not.)
 *
 * Every translation checks the whole range [addr, addr + len): a range that is
 * not entirely inside shared memory is refused (NULL / -EFAULT). This is the
 * device's only way to reach driver memory, so it is the security boundary.
 *
 * Regions are reference counted: an object that keeps pointers into a region
 * across events (a vring, a memory region of the RDMA device) holds a
 * reference. REM_MEM_REG or a new SET_MEM_TABLE removes a region from lookup at
 * once, but its mapping lives until the last reference is dropped, so the
 * device never touches unmapped memory. Holders learn about removal through
 * vhost_mem_region_dead().
 *
 * Not thread-safe: used from the loop thread that owns the device.
 */
#ifndef VRDMA_VHOST_MEM_H
#define VRDMA_VHOST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Most regions one device accepts (GET_MAX_MEM_SLOTS answers this). */
#define VHOST_MEM_MAX_REGIONS 509

struct vhost_mem_region {
	uint64_t gpa;         /* guest physical start */
	uint64_t size;        /* bytes */
	uint64_t uva;         /* front-end user address of gpa */
	uint64_t mmap_offset; /* offset of gpa inside the fd */
	uint8_t *host;        /* our address of gpa */
	void *map_base;       /* what mmap returned (for munmap) */
	size_t map_len;
	unsigned refcnt;      /* table's reference + holders */
	bool dead;            /* removed from the table */
};

struct vhost_mem {
	struct vhost_mem_region **regions; /* live regions, sorted by gpa */
	unsigned nregions;
	unsigned max_regions;              /* VHOST_MEM_MAX_REGIONS by default */
	uint64_t generation;               /* bumped on every change */
};

void vhost_mem_init(struct vhost_mem *m);
/* Drop every region (mappings with holders stay until they are released). */
void vhost_mem_clear(struct vhost_mem *m);

/*
 * Map fd and add the region. Takes ownership of fd in every case (closed after
 * mmap or on error). Validates: size > 0, no overflow of gpa+size, uva+size,
 * offset+size; no overlap in GPA with a live region; table not full; mmap
 * succeeds. Returns 0 or -errno (-EINVAL, -EEXIST overlap, -ENOSPC, mmap errno).
 */
int vhost_mem_add(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva,
		  uint64_t mmap_offset, int fd);

/* Remove the live region that exactly matches gpa/size (and uva). Returns 0 or
 * -ENOENT. The mapping stays while references are held. */
int vhost_mem_remove(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva);

/* Host pointer for [gpa, gpa+len) if it lies inside one live region, else NULL.
 * len == 0 is treated as 1 for the containment check. */
void *vhost_mem_gpa_to_host(const struct vhost_mem *m, uint64_t gpa, uint64_t len);

/* The same for front-end user addresses (vring addresses). */
void *vhost_mem_uva_to_host(const struct vhost_mem *m, uint64_t uva, uint64_t len);

/* The live region containing gpa, or NULL. */
struct vhost_mem_region *vhost_mem_find(const struct vhost_mem *m, uint64_t gpa);

/*
 * Split [gpa, gpa+len) over regions into at most max iovecs. Returns the number
 * of iovecs used, -EFAULT if any byte is outside shared memory, -E2BIG if more
 * than max pieces would be needed.
 */
int vhost_mem_gpa_to_iov(const struct vhost_mem *m, uint64_t gpa, uint64_t len,
			 struct iovec *iov, unsigned max);

/* References for holders that keep host pointers past the current event. */
void vhost_mem_region_get(struct vhost_mem_region *r);
void vhost_mem_region_put(struct vhost_mem_region *r);
static inline bool vhost_mem_region_dead(const struct vhost_mem_region *r) { return r->dead; }

#endif /* VRDMA_VHOST_MEM_H */
