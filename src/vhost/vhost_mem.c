/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory table: regions mmap'ed from front-end fds, kept in an array
 * sorted by guest physical address so that lookups are a binary search.
 *
 * All range arithmetic is written so that it cannot wrap: a range
 * [addr, addr + len) is inside a region [start, start + size) iff
 * addr >= start, off = addr - start < size and len <= size - off.
 * Regions themselves never wrap (start + size <= UINT64_MAX is checked when
 * they are added).
 */
#include "vhost/vhost_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

void vhost_mem_init(struct vhost_mem *m)
{
	memset(m, 0, sizeof(*m));
	m->max_regions = VHOST_MEM_MAX_REGIONS;
}

/* Unmap and free a region whose last reference went away. */
static void vhost_mem_region_free(struct vhost_mem_region *r)
{
	if (r->map_base)
		munmap(r->map_base, r->map_len);
	free(r);
}

void vhost_mem_region_get(struct vhost_mem_region *r)
{
	r->refcnt++;
}

void vhost_mem_region_put(struct vhost_mem_region *r)
{
	if (!r)
		return;
	if (r->refcnt == 0) {
		LOG_ERR("vhost_mem: region put with no reference");
		return;
	}
	if (--r->refcnt == 0)
		vhost_mem_region_free(r);
}

void vhost_mem_clear(struct vhost_mem *m)
{
	unsigned i;

	for (i = 0; i < m->nregions; i++) {
		struct vhost_mem_region *r = m->regions[i];

		r->dead = true;
		vhost_mem_region_put(r);
	}
	free(m->regions);
	m->regions = NULL;
	m->nregions = 0;
	m->generation++;
}

/*
 * Index of the last region whose gpa <= addr, or -1 if addr is below every
 * region.
 */
static int vhost_mem_floor(const struct vhost_mem *m, uint64_t addr)
{
	int lo = 0, hi = (int)m->nregions - 1, ans = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (m->regions[mid]->gpa <= addr) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

/* a + len - 1 without wrap, for len >= 1; false if it would wrap. */
static inline bool range_last(uint64_t a, uint64_t len, uint64_t *last)
{
	if (len == 0 || len - 1 > UINT64_MAX - a)
		return false;
	*last = a + (len - 1);
	return true;
}

int vhost_mem_add(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva,
		  uint64_t mmap_offset, int fd)
{
	struct vhost_mem_region *r = NULL;
	uint64_t last, page, delta, aligned_off;
	struct stat st;
	void *base;
	int pos, err;
	size_t map_len;

	/* Region ends must be representable: start + size <= UINT64_MAX. */
	if (size == 0 || size > UINT64_MAX - gpa || size > UINT64_MAX - uva ||
	    size > UINT64_MAX - mmap_offset) {
		err = -EINVAL;
		goto out_close;
	}
	last = gpa + size - 1;

	page = (uint64_t)sysconf(_SC_PAGESIZE);
	aligned_off = mmap_offset & ~(page - 1);
	delta = mmap_offset - aligned_off;
	if (size > SIZE_MAX - delta || aligned_off > (uint64_t)INT64_MAX ||
	    size + delta > (uint64_t)INT64_MAX - aligned_off) {
		err = -EINVAL;
		goto out_close;
	}
	map_len = (size_t)(size + delta);

	if (m->nregions >= m->max_regions) {
		err = -ENOSPC;
		goto out_close;
	}

	/* Overlap with the neighbours in GPA order. */
	pos = vhost_mem_floor(m, gpa);
	if (pos >= 0) {
		const struct vhost_mem_region *p = m->regions[pos];

		if (gpa - p->gpa < p->size) {
			err = -EEXIST;
			goto out_close;
		}
	}
	if ((unsigned)(pos + 1) < m->nregions && m->regions[pos + 1]->gpa <= last) {
		err = -EEXIST;
		goto out_close;
	}

	/*
	 * A regular file shorter than the region would SIGBUS on access. (A
	 * front-end that shrinks the file after this check still can: only
	 * F_SEAL_SHRINK or a SIGBUS handler would close that.)
	 */
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (st.st_size < 0 ||
				    (uint64_t)st.st_size < mmap_offset + size)) {
		err = -EINVAL;
		goto out_close;
	}

	if (!m->regions || (m->nregions & (m->nregions - 1)) == 0) {
		/* Grow by doubling (nregions is 0 or a power of two here). */
		unsigned cap = m->nregions ? m->nregions * 2 : 8;
		void *n = realloc(m->regions, cap * sizeof(*m->regions));

		if (!n) {
			err = -ENOMEM;
			goto out_close;
		}
		m->regions = n;
	}

	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto out_close;
	}

	base = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)aligned_off);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	close(fd);

	r->gpa = gpa;
	r->size = size;
	r->uva = uva;
	r->mmap_offset = mmap_offset;
	r->map_base = base;
	r->map_len = map_len;
	r->host = (uint8_t *)base + delta;
	r->refcnt = 1;
	r->dead = false;

	pos++;
	memmove(&m->regions[pos + 1], &m->regions[pos],
		(m->nregions - (unsigned)pos) * sizeof(*m->regions));
	m->regions[pos] = r;
	m->nregions++;
	m->generation++;
	return 0;

out_close:
	free(r);
	if (fd >= 0)
		close(fd);
	return err;
}

int vhost_mem_remove(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva)
{
	struct vhost_mem_region *r;
	int pos = vhost_mem_floor(m, gpa);

	if (pos < 0)
		return -ENOENT;
	r = m->regions[pos];
	if (r->gpa != gpa || r->size != size || r->uva != uva)
		return -ENOENT;

	memmove(&m->regions[pos], &m->regions[pos + 1],
		(m->nregions - (unsigned)pos - 1) * sizeof(*m->regions));
	m->nregions--;
	m->generation++;
	r->dead = true;
	vhost_mem_region_put(r);
	return 0;
}

struct vhost_mem_region *vhost_mem_find(const struct vhost_mem *m, uint64_t gpa)
{
	int pos = vhost_mem_floor(m, gpa);
	struct vhost_mem_region *r;

	if (pos < 0)
		return NULL;
	r = m->regions[pos];
	return gpa - r->gpa < r->size ? r : NULL;
}

void *vhost_mem_gpa_to_host(const struct vhost_mem *m, uint64_t gpa, uint64_t len)
{
	const struct vhost_mem_region *r = vhost_mem_find(m, gpa);
	uint64_t off;

	if (!r)
		return NULL;
	off = gpa - r->gpa;
	if (len == 0)
		len = 1;
	if (len > r->size - off)
		return NULL;
	return r->host + off;
}

void *vhost_mem_uva_to_host(const struct vhost_mem *m, uint64_t uva, uint64_t len)
{
	unsigned i;

	/* Only ring setup uses UVAs: a linear scan is enough. */
	if (len == 0)
		len = 1;
	for (i = 0; i < m->nregions; i++) {
		const struct vhost_mem_region *r = m->regions[i];
		uint64_t off;

		if (uva < r->uva)
			continue;
		off = uva - r->uva;
		if (off >= r->size)
			continue;
		if (len > r->size - off)
			return NULL; /* runs past the end; regions do not chain in UVA */
		return r->host + off;
	}
	return NULL;
}

int vhost_mem_gpa_to_iov(const struct vhost_mem *m, uint64_t gpa, uint64_t len,
			 struct iovec *iov, unsigned max)
{
	unsigned n = 0;
	uint64_t last;

	if (len == 0)
		return 0;
	if (!range_last(gpa, len, &last))
		return -EFAULT;

	for (;;) {
		const struct vhost_mem_region *r = vhost_mem_find(m, gpa);
		uint64_t off, chunk;
		uint8_t *host;

		if (!r)
			return -EFAULT;
		off = gpa - r->gpa;
		chunk = MIN(len, r->size - off);
		host = r->host + off;

		if (n == max)
			return -E2BIG;
		iov[n].iov_base = host;
		iov[n].iov_len = chunk;
		n++;
		len -= chunk;
		if (len == 0)
			return (int)n;
		/* chunk reached the region's end, which is <= last < UINT64_MAX. */
		gpa += chunk;
	}
}
