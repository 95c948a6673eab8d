/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma-shmalloc: the shared-heap allocator vrdma-run preloads so that
 * ordinary large allocations (malloc and friends, anonymous private mmap) are
 * already shareable with a vrdma device, and ibv_reg_mr can hand their pages
 * to the device without copying them (src/libvrdma/mem_share.c).
 *
 * The heap is one memfd (MFD_CLOEXEC, sealed against shrinking and growing,
 * sparse: only touched pages use memory) mapped MAP_SHARED over one reserved
 * virtual range; its offset of an address is address - heap start. Blocks
 * are whole pages; freed pages are punched out of the file (so they give
 * their memory back and read as zeroes again).
 *
 * Environment (read once, at the first allocation):
 *   VRDMA_SHMALLOC=0        pass everything to glibc (the library is inert)
 *   VRDMA_SHMALLOC_MIN=N    smallest request served from the heap, bytes
 *                           (suffix k, m, g allowed; default 64k)
 *   VRDMA_SHMALLOC_HEAP=N   size of the reserved range (default 64g; halved
 *                           down to 1g if the reservation fails)
 */
#ifndef VRDMA_SHMALLOC_H
#define VRDMA_SHMALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Name of the query function, for dlsym(RTLD_DEFAULT, ...). */
#define VRDMA_SHMALLOC_HEAP_SYM "vrdma_shmalloc_heap"

/*
 * The shared heap of this process: *start and *end bound its virtual range,
 * *fd is the memfd behind it (offset of an address = address - *start; owned
 * by the allocator: dup it to keep it). Returns 0, or -ENOENT when there is
 * no heap (allocator disabled, or nothing allocated from it yet).
 */
typedef int vrdma_shmalloc_heap_fn(uintptr_t *start, uintptr_t *end, int *fd);
int vrdma_shmalloc_heap(uintptr_t *start, uintptr_t *end, int *fd);

#endif /* VRDMA_SHMALLOC_H */
