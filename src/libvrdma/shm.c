// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma shared-memory arenas and the table of regions the back-end knows.
 * See shm.h.
 */
#include "libvrdma/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/dev.h"

/* ---- regions the back-end knows ------------------------------------------- */

static bool mreg_slots_mode(const struct vrdma_dev *dev)
{
	return vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
}

/* Without CONFIGURE_MEM_SLOTS: send the whole table. */
static int mreg_send_table(struct vrdma_dev *dev)
{
	struct vhost_user_mem_region r[VHOST_USER_MEMORY_MAX_NREGIONS];
	int fds[VHOST_USER_MEMORY_MAX_NREGIONS];

	if (dev->nmregs > VHOST_USER_MEMORY_MAX_NREGIONS)
		return -ENOSPC;
	for (unsigned i = 0; i < dev->nmregs; i++) {
		r[i].guest_phys_addr = dev->mregs[i].addr;
		r[i].userspace_addr = dev->mregs[i].addr;
		r[i].memory_size = dev->mregs[i].size;
		r[i].mmap_offset = dev->mregs[i].offset;
		fds[i] = dev->mregs[i].fd;
	}
	return vrdma_dev_vc_result(dev, vhost_client_set_mem_table(&dev->vc, r, fds,
								  dev->nmregs));
}

int vrdma_mreg_add(struct vrdma_dev *dev, uint64_t addr, uint64_t size, int fd,
		   uint64_t offset)
{
	struct vrdma_mreg *m;
	int rc;

	if (vrdma_dev_is_dead(dev))
		return -ENOTCONN;
	if (mreg_slots_mode(dev)) {
		if (dev->nmregs >= dev->max_mem_slots)
			return -ENOSPC;
	} else if (dev->nmregs >= VHOST_USER_MEMORY_MAX_NREGIONS) {
		return -ENOSPC;
	}
	if (dev->nmregs == dev->mregs_cap) {
		unsigned cap = dev->mregs_cap ? dev->mregs_cap * 2 : 16;

		m = realloc(dev->mregs, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		dev->mregs = m;
		dev->mregs_cap = cap;
	}
	m = &dev->mregs[dev->nmregs++];
	m->addr = addr;
	m->size = size;
	m->offset = offset;
	m->fd = fd;
	if (mreg_slots_mode(dev)) {
		struct vhost_user_mem_region r = {
			.guest_phys_addr = addr,
			.memory_size = size,
			.userspace_addr = addr,
			.mmap_offset = offset,
		};
		rc = vrdma_dev_vc_result(dev, vhost_client_add_mem_reg(&dev->vc, &r, fd));
	} else {
		rc = mreg_send_table(dev);
	}
	if (rc < 0) {
		dev->nmregs--;
		/* The table form changed nothing on failure: the back-end keeps
		 * its old table (or the connection is dead anyway). */
		LOG_DEBUG("vrdma: announcing region %#llx+%#llx failed: %d",
			  (unsigned long long)addr, (unsigned long long)size, rc);
	}
	return rc;
}

int vrdma_mreg_remove(struct vrdma_dev *dev, uint64_t addr, uint64_t size)
{
	struct vrdma_mreg m;
	unsigned i;
	int rc = 0;

	for (i = 0; i < dev->nmregs; i++)
		if (dev->mregs[i].addr == addr && dev->mregs[i].size == size)
			break;
	if (i == dev->nmregs)
		return -ENOENT;
	m = dev->mregs[i];
	memmove(&dev->mregs[i], &dev->mregs[i + 1],
		(dev->nmregs - i - 1) * sizeof(dev->mregs[0]));
	dev->nmregs--;
	if (vrdma_dev_is_dead(dev))
		return 0; /* nothing to tell */
	if (mreg_slots_mode(dev)) {
		struct vhost_user_mem_region r = {
			.guest_phys_addr = m.addr,
			.memory_size = m.size,
			.userspace_addr = m.addr,
			.mmap_offset = m.offset,
		};
		rc = vrdma_dev_vc_result(dev, vhost_client_rem_mem_reg(&dev->vc, &r));
	} else {
		rc = mreg_send_table(dev);
	}
	return rc;
}

/* ---- arenas ---------------------------------------------------------------- */

static void arena_free_struct(struct vrdma_arena *a)
{
	if (a->base)
		munmap(a->base, a->size);
	if (a->fd >= 0)
		close(a->fd);
	free(a->free);
	free(a);
}

static int arena_new(struct vrdma_dev *dev, size_t size, struct vrdma_arena **out)
{
	struct vrdma_arena *a;
	void *p;
	int rc;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = memfd_create("vrdma-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (ftruncate(a->fd, (off_t)size) < 0) {
		rc = -errno;
		goto fail;
	}
	/* Arenas never change size (more memory is a new arena): say so, so
	 * the back-end knows the file cannot be truncated under it. */
	(void)fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	a->base = p;
	a->size = size;
	/* A forked child must not share rings with the device. */
	madvise(p, size, MADV_DONTFORK);
	a->free = malloc(16 * sizeof(*a->free));
	if (!a->free) {
		rc = -ENOMEM;
		goto fail;
	}
	a->free_cap = 16;
	a->free[0].off = 0;
	a->free[0].len = size;
	a->nfree = 1;
	rc = vrdma_mreg_add(dev, (uint64_t)(uintptr_t)p, size, a->fd, 0);
	if (rc < 0)
		goto fail;
	*out = a;
	return 0;
fail:
	arena_free_struct(a);
	return rc;
}

/* First fit inside one arena. Returns the offset or (size_t)-1. */
static size_t arena_take(struct vrdma_arena *a, size_t size, size_t align)
{
	for (unsigned i = 0; i < a->nfree; i++) {
		struct vrdma_free_ext *e = &a->free[i];
		size_t start = ALIGN_UP(e->off, align);
		size_t pad = start - e->off;

		if (start < e->off || pad > e->len || e->len - pad < size)
			continue;
		if (pad == 0) {
			e->off += size;
			e->len -= size;
			if (e->len == 0) {
				memmove(e, e + 1, (a->nfree - i - 1) * sizeof(*e));
				a->nfree--;
			}
		} else if (e->len - pad == size) {
			e->len = pad;
		} else {
			/* Split: [off, pad) stays, [start+size, end) is new. */
			if (a->nfree == a->free_cap) {
				unsigned cap = a->free_cap * 2;
				struct vrdma_free_ext *n = realloc(a->free, cap * sizeof(*n));

				if (!n)
					return (size_t)-1;
				a->free = n;
				a->free_cap = cap;
				e = &a->free[i];
			}
			memmove(e + 2, e + 1, (a->nfree - i - 1) * sizeof(*e));
			e[1].off = start + size;
			e[1].len = e->len - pad - size;
			e->len = pad;
			a->nfree++;
		}
		return start;
	}
	return (size_t)-1;
}

/* Return [off, off+size) to the free list, coalescing. Returns 0 or -ENOMEM
 * (the block then leaks; never corrupts). */
static int arena_give(struct vrdma_arena *a, size_t off, size_t size)
{
	unsigned i = 0;

	while (i < a->nfree && a->free[i].off < off)
		i++;
	/* Merge with the previous and/or next extent. */
	if (i > 0 && a->free[i - 1].off + a->free[i - 1].len == off) {
		a->free[i - 1].len += size;
		if (i < a->nfree && off + size == a->free[i].off) {
			a->free[i - 1].len += a->free[i].len;
			memmove(&a->free[i], &a->free[i + 1],
				(a->nfree - i - 1) * sizeof(a->free[0]));
			a->nfree--;
		}
		return 0;
	}
	if (i < a->nfree && off + size == a->free[i].off) {
		a->free[i].off = off;
		a->free[i].len += size;
		return 0;
	}
	if (a->nfree == a->free_cap) {
		unsigned cap = a->free_cap * 2;
		struct vrdma_free_ext *n = realloc(a->free, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		a->free = n;
		a->free_cap = cap;
	}
	memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof(a->free[0]));
	a->free[i].off = off;
	a->free[i].len = size;
	a->nfree++;
	return 0;
}

void *vrdma_shm_alloc(struct vrdma_dev *dev, size_t size, size_t align)
{
	struct vrdma_arena *a;
	size_t off = (size_t)-1, asize;
	void *p = NULL;
	int rc;

	if (align == 0)
		align = VRDMA_SHM_GRAIN;
	if (size == 0 || !IS_POW2(align) || align > (1u << 20) || size > (1ull << 40)) {
		errno = EINVAL;
		return NULL;
	}
	align = MAX(align, (size_t)VRDMA_SHM_GRAIN);
	size = ALIGN_UP(size, (size_t)VRDMA_SHM_GRAIN);

	vrdma_dev_lock(dev);
	for (a = dev->arenas; a; a = a->next) {
		off = arena_take(a, size, align);
		if (off != (size_t)-1)
			break;
	}
	if (!a) {
		asize = dev->next_arena_size;
		if (asize < size + align)
			asize = ALIGN_UP(size + align, (size_t)1 << 20);
		rc = arena_new(dev, asize, &a);
		if (rc < 0) {
			vrdma_dev_unlock(dev);
			errno = -rc;
			return NULL;
		}
		a->next = dev->arenas;
		dev->arenas = a;
		dev->shm_bytes += asize;
		if (dev->next_arena_size < VRDMA_ARENA_MAX)
			dev->next_arena_size *= 2;
		off = arena_take(a, size, align);
	}
	if (off != (size_t)-1) {
		p = a->base + off;
		memset(p, 0, size);
	} else {
		errno = ENOMEM;
	}
	vrdma_dev_unlock(dev);
	return p;
}

void vrdma_shm_free(struct vrdma_dev *dev, void *p, size_t size)
{
	struct vrdma_arena *a;

	if (!p || !size)
		return;
	size = ALIGN_UP(size, (size_t)VRDMA_SHM_GRAIN);
	vrdma_dev_lock(dev);
	for (a = dev->arenas; a; a = a->next) {
		if ((uint8_t *)p >= a->base && (uint8_t *)p < a->base + a->size) {
			size_t off = (size_t)((uint8_t *)p - a->base);

			if (size <= a->size - off)
				arena_give(a, off, size);
			else
				LOG_ERR("vrdma: shm_free of %zu bytes overruns its arena", size);
			break;
		}
	}
	if (!a)
		LOG_ERR("vrdma: shm_free of %p: not ours", p);
	vrdma_dev_unlock(dev);
}

bool vrdma_shm_contains(const struct vrdma_dev *dev, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (const struct vrdma_arena *a = dev->arenas; a; a = a->next)
		if (b >= a->base && b < a->base + a->size &&
		    len <= (size_t)(a->base + a->size - b))
			return true;
	return false;
}

void vrdma_shm_destroy(struct vrdma_dev *dev)
{
	struct vrdma_arena *a = dev->arenas;

	while (a) {
		struct vrdma_arena *n = a->next;

		arena_free_struct(a);
		a = n;
	}
	dev->arenas = NULL;
	dev->shm_bytes = 0;
}
