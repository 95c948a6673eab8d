/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory table: regions mmap'ed from front-end fds, kept in an array
 * sorted by guest physical address so that lookups are a binary search, and
 * in a second array sorted by front-end user address (with a prefix maximum
 * of the range ends, so that a lookup is a binary search too).
 *
 * All range arithmetic is written so that it cannot wrap: a range
 * [addr, addr + len) is inside a region [start, start + size) iff
 * addr >= start, off = addr - start < size and len <= size - off.
 * Regions themselves never wrap (start + size <= UINT64_MAX is checked when
 * they are added).
 *
 * Accounting: a small object (struct vhost_mem_acct) shared by the table and
 * its regions counts the dead regions still mapped and the SIGBUS faults. It
 * lives as long as the table uses it or a region refers to it, so a region
 * may outlive its table's account (vhost_mem_clear) without dangling.
 *
 * SIGBUS guard: a fixed array of slots {start, end, granule, account}, each
 * published under a sequence count, that the signal handler scans (no locks,
 * no allocation in the handler). Slots are added and removed under a mutex by
 * whichever loop thread maps or unmaps a guarded region.
 */
#include "vhost/vhost_mem.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

struct vhost_mem_acct {
	unsigned refs;     /* the table (while it uses it) + each region */
	unsigned ndead;    /* dead regions still mapped */
	int fault_fd;      /* read by the SIGBUS handler (atomic) */
	uint64_t faults;   /* written by the SIGBUS handler (atomic) */
	uint64_t mapped;   /* bytes mapped by its regions, live and dead */
	struct vhost_mem_budget *budget; /* shared budget (a reference), or NULL */
};

/* ---- SIGBUS guard ---------------------------------------------------------- */

/* At least as many as the mappings a process may have (vm.max_map_count
 * defaults to 65530), so the guard is never what runs out first. */
#define VM_GUARD_SLOTS 65536

struct vm_guard {
	unsigned seq;                 /* odd while being written */
	uintptr_t start, end;         /* the mapping; 0, 0 when free */
	uintptr_t gran;               /* page size of the mapping */
	struct vhost_mem_acct *acct;
};

static struct vm_guard vm_guards[VM_GUARD_SLOTS];
static unsigned vm_guard_hi;          /* slots [0, hi) have been used (atomic) */
static unsigned vm_guard_live;        /* slots in use (atomic, for stats) */
static unsigned vm_guard_nfree;       /* free slots below hi, in vm_guard_free */
static uint32_t vm_guard_free[VM_GUARD_SLOTS];
static pthread_mutex_t vm_guard_lock = PTHREAD_MUTEX_INITIALIZER;
static bool vm_handler_installed;     /* under vm_guard_lock */
static struct sigaction vm_old_bus;   /* written before the handler runs */

static void vm_guard_write(struct vm_guard *g, uintptr_t start, uintptr_t end,
			   uintptr_t gran, struct vhost_mem_acct *acct)
{
	unsigned s = g->seq;

	__atomic_store_n(&g->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&g->start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&g->end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&g->gran, gran, __ATOMIC_RELAXED);
	__atomic_store_n(&g->acct, acct, __ATOMIC_RELAXED);
	__atomic_store_n(&g->seq, s + 2, __ATOMIC_RELEASE);
}

/*
 * Signal context: if a is inside a guarded mapping, put anonymous zero pages
 * over it from a's page to the mapping's end, count the fault and signal the
 * owner. Only atomics, mmap and write. Returns true if the access can be
 * retried.
 */
static bool vm_guard_fix(uintptr_t a)
{
	unsigned hi = __atomic_load_n(&vm_guard_hi, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < hi; i++) {
		struct vm_guard *g = &vm_guards[i];
		unsigned s1 = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
		struct vhost_mem_acct *acct;
		uintptr_t start, end, gran, base;
		void *p;

		if (s1 & 1)
			continue;
		start = __atomic_load_n(&g->start, __ATOMIC_RELAXED);
		end = __atomic_load_n(&g->end, __ATOMIC_RELAXED);
		gran = __atomic_load_n(&g->gran, __ATOMIC_RELAXED);
		acct = __atomic_load_n(&g->acct, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&g->seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (a < start || a >= end || !gran)
			continue;
		base = start + ((a - start) & ~(gran - 1));
		p = mmap((void *)base, end - base, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return false;
		if (acct) {
			int fd = __atomic_load_n(&acct->fault_fd, __ATOMIC_ACQUIRE);

			__atomic_add_fetch(&acct->faults, 1, __ATOMIC_SEQ_CST);
			if (fd >= 0) {
				uint64_t one = 1;
				ssize_t n = write(fd, &one, sizeof(one));

				(void)n;
			}
		}
		return true;
	}
	return false;
}

/* Not ours: what would have happened without us. */
static void vm_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *o = &vm_old_bus;
	struct sigaction dfl;

	if (o->sa_flags & SA_SIGINFO) {
		if (o->sa_sigaction) {
			o->sa_sigaction(sig, si, uc);
			return;
		}
	} else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) {
		o->sa_handler(sig);
		return;
	}
	if (o->sa_handler == SIG_IGN && si && si->si_code <= 0)
		return; /* a sent SIGBUS that was ignored before */
	/* Default action: SIGBUS stays blocked until we return, then kills. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	raise(SIGBUS);
}

static void vm_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	/* si_code > 0: raised by the kernel for a faulting access. */
	if (si && si->si_code > 0 && vm_guard_fix((uintptr_t)si->si_addr)) {
		errno = saved;
		return;
	}
	errno = saved;
	vm_chain(sig, si, uc);
}

/* Install the handler (vm_guard_lock held). Returns 0 or -errno. */
static int vm_install(void)
{
	struct sigaction sa;

	if (sigaction(SIGBUS, NULL, &vm_old_bus) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = vm_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		return -errno;
	vm_handler_installed = true;
	return 0;
}

/* Guard [start, end). Returns the slot or -errno (-ENOSPC: no slot left). */
static int vm_guard_add(uintptr_t start, uintptr_t end, uintptr_t gran,
			struct vhost_mem_acct *acct)
{
	int idx, err = 0;

	pthread_mutex_lock(&vm_guard_lock);
	if (!vm_handler_installed) {
		err = vm_install();
		if (err)
			goto out;
	}
	if (vm_guard_nfree) {
		idx = (int)vm_guard_free[--vm_guard_nfree];
		vm_guard_write(&vm_guards[idx], start, end, gran, acct);
	} else if (vm_guard_hi < VM_GUARD_SLOTS) {
		idx = (int)vm_guard_hi;
		vm_guard_write(&vm_guards[idx], start, end, gran, acct);
		__atomic_store_n(&vm_guard_hi, vm_guard_hi + 1, __ATOMIC_RELEASE);
	} else {
		err = -ENOSPC;
		goto out;
	}
	__atomic_add_fetch(&vm_guard_live, 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&vm_guard_lock);
	return err ? err : idx;
}

static void vm_guard_del(int idx)
{
	pthread_mutex_lock(&vm_guard_lock);
	vm_guard_write(&vm_guards[idx], 0, 0, 0, NULL);
	vm_guard_free[vm_guard_nfree++] = (uint32_t)idx;
	__atomic_sub_fetch(&vm_guard_live, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&vm_guard_lock);
}

unsigned vhost_mem_guarded_regions(void)
{
	return __atomic_load_n(&vm_guard_live, __ATOMIC_RELAXED);
}

/*
 * Make sure fd cannot shrink under us: true if F_SEAL_SHRINK is (now) set.
 * Needs a sealable file (memfd created with MFD_ALLOW_SEALING) not yet
 * F_SEAL_SEAL'ed, opened for writing (which MAP_SHARED writable needs anyway).
 */
static bool vm_seal_shrink(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return false;
	if (seals & F_SEAL_SHRINK)
		return true;
	if (seals & F_SEAL_SEAL)
		return false;
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0;
}

/* ---- accounting ------------------------------------------------------------ */

static struct vhost_mem_acct *vm_acct(struct vhost_mem *m)
{
	if (!m->acct) {
		m->acct = calloc(1, sizeof(*m->acct));
		if (!m->acct)
			return NULL;
		m->acct->refs = 1;
		m->acct->fault_fd = m->fault_fd;
		m->acct->budget = m->budget;
		if (m->budget)
			m->budget->refs++;
	}
	return m->acct;
}

static void vm_acct_put(struct vhost_mem_acct *a)
{
	if (a && --a->refs == 0) {
		vhost_mem_budget_put(a->budget);
		free(a);
	}
}

struct vhost_mem_budget *vhost_mem_budget_new(uint64_t max)
{
	struct vhost_mem_budget *b = calloc(1, sizeof(*b));

	if (b) {
		b->refs = 1;
		b->max = max;
	}
	return b;
}

void vhost_mem_budget_put(struct vhost_mem_budget *b)
{
	if (b && --b->refs == 0)
		free(b);
}

void vhost_mem_set_fault_fd(struct vhost_mem *m, int fd)
{
	m->fault_fd = fd;
	if (m->acct)
		__atomic_store_n(&m->acct->fault_fd, fd, __ATOMIC_RELEASE);
}

uint64_t vhost_mem_faults(const struct vhost_mem *m)
{
	return m->acct ? __atomic_load_n(&m->acct->faults, __ATOMIC_SEQ_CST) : 0;
}

uint64_t vhost_mem_mapped(const struct vhost_mem *m)
{
	return m->acct ? m->acct->mapped : 0;
}

unsigned vhost_mem_ndead(const struct vhost_mem *m)
{
	return m->acct ? m->acct->ndead : 0;
}

/* ---- regions --------------------------------------------------------------- */

void vhost_mem_init(struct vhost_mem *m)
{
	memset(m, 0, sizeof(*m));
	m->max_regions = VHOST_MEM_MAX_REGIONS;
	m->max_dead = VHOST_MEM_MAX_DEAD;
	m->fault_fd = -1;
}

/* Set by every transport (one value); atomic: transports start on several
 * loop threads. */
static void (*_Atomic vm_unmap_hook)(void);

void vhost_mem_set_unmap_hook(void (*fn)(void))
{
	atomic_store_explicit(&vm_unmap_hook, fn, memory_order_relaxed);
}

/* Unmap and free a region whose last reference went away. */
static void vhost_mem_region_free(struct vhost_mem_region *r)
{
	/* Whoever still points into the mapping copies out first. */
	void (*hook)(void) = atomic_load_explicit(&vm_unmap_hook, memory_order_relaxed);

	if (hook)
		hook();
	/* No fix-ups for an address that may be reused after munmap. */
	if (r->guard >= 0)
		vm_guard_del(r->guard);
	if (r->map_base)
		munmap(r->map_base, r->map_len);
	if (r->acct) {
		if (r->dead)
			r->acct->ndead--;
		r->acct->mapped -= r->map_len;
		if (r->acct->budget)
			r->acct->budget->mapped -= MIN((uint64_t)r->map_len,
						       r->acct->budget->mapped);
		vm_acct_put(r->acct);
	}
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

/* The table lets go of a region it no longer lists. */
static void vm_kill(struct vhost_mem_region *r)
{
	r->dead = true;
	if (r->acct)
		r->acct->ndead++;
	vhost_mem_region_put(r);
}

/* Recompute uva_maxlast[from .. n). */
static void vm_uva_fix(struct vhost_mem *m, unsigned from, unsigned n)
{
	uint64_t mx = from ? m->uva_maxlast[from - 1] : 0;

	for (unsigned i = from; i < n; i++) {
		const struct vhost_mem_region *r = m->by_uva[i];
		uint64_t last = r->uva + (r->size - 1);

		if (i == 0 || last > mx)
			mx = last;
		m->uva_maxlast[i] = mx;
	}
}

/* Take r out of by_uva (nregions still counts it). */
static void vm_uva_remove(struct vhost_mem *m, const struct vhost_mem_region *r)
{
	unsigned lo = 0, hi = m->nregions, i;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (m->by_uva[mid]->uva < r->uva)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < m->nregions && m->by_uva[i] != r; i++)
		;
	if (i == m->nregions)
		return; /* not reached: every live region is indexed */
	memmove(&m->by_uva[i], &m->by_uva[i + 1],
		(m->nregions - i - 1) * sizeof(*m->by_uva));
	vm_uva_fix(m, i, m->nregions - 1);
}

void vhost_mem_remove_all(struct vhost_mem *m)
{
	unsigned i, n = m->nregions;

	m->nregions = 0;
	for (i = 0; i < n; i++)
		vm_kill(m->regions[i]);
	m->generation++;
}

void vhost_mem_clear(struct vhost_mem *m)
{
	vhost_mem_remove_all(m);
	free(m->regions);
	free(m->by_uva);
	free(m->uva_maxlast);
	m->regions = NULL;
	m->by_uva = NULL;
	m->uva_maxlast = NULL;
	m->cap = 0;
	if (m->acct) {
		/* Regions still held keep the old account, muted. */
		__atomic_store_n(&m->acct->fault_fd, -1, __ATOMIC_RELEASE);
		vm_acct_put(m->acct);
		m->acct = NULL;
	}
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

/* Room for one more region in the three arrays. Returns 0 or -ENOMEM. */
static int vm_reserve(struct vhost_mem *m)
{
	unsigned cap;
	void *p;

	if (m->nregions < m->cap)
		return 0;
	cap = m->cap ? m->cap * 2 : 8;
	p = realloc(m->regions, cap * sizeof(*m->regions));
	if (!p)
		return -ENOMEM;
	m->regions = p;
	p = realloc(m->by_uva, cap * sizeof(*m->by_uva));
	if (!p)
		return -ENOMEM;
	m->by_uva = p;
	p = realloc(m->uva_maxlast, cap * sizeof(*m->uva_maxlast));
	if (!p)
		return -ENOMEM;
	m->uva_maxlast = p;
	m->cap = cap;
	return 0;
}

int vhost_mem_add(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva,
		  uint64_t mmap_offset, int fd)
{
	struct vhost_mem_region *r = NULL;
	uint64_t last, page, delta, aligned_off, gran;
	struct vhost_mem_acct *acct;
	struct vhost_mem_budget *budget;
	struct statfs sfs;
	struct stat st;
	void *base = MAP_FAILED;
	int pos, err;
	unsigned upos;
	size_t map_len;
	bool sealed, guarded;

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

	if (m->nregions >= m->max_regions ||
	    m->nregions + vhost_mem_ndead(m) >= m->max_regions + m->max_dead) {
		err = -ENOSPC;
		goto out_close;
	}
	/* the owner's budget of address space (a sparse file costs nothing to
	 * the driver but its size to us) */
	budget = m->acct ? m->acct->budget : m->budget;
	if (budget ? budget->max && map_len > budget->max - MIN(budget->mapped, budget->max)
		   : m->max_mapped &&
			     map_len > m->max_mapped - MIN(vhost_mem_mapped(m), m->max_mapped)) {
		m->mapped_refused++;
		if (budget)
			budget->refused++;
		err = -EDQUOT;
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
	 * A file shorter than the region would SIGBUS on access. Seal first,
	 * then check the size, so the front-end cannot shrink it in between.
	 */
	sealed = vm_seal_shrink(fd);
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (st.st_size < 0 ||
				    (uint64_t)st.st_size < mmap_offset + size)) {
		err = -EINVAL;
		goto out_close;
	}
	/* hugetlbfs can fault even when sealed (huge page pool exhausted);
	 * its mappings split only at huge page boundaries. */
	gran = page;
	guarded = !sealed;
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC) {
		guarded = true;
		if (sfs.f_bsize > 0 && IS_POW2((uint64_t)sfs.f_bsize))
			gran = (uint64_t)sfs.f_bsize;
	}

	err = vm_reserve(m);
	if (err)
		goto out_close;
	acct = vm_acct(m);
	r = calloc(1, sizeof(*r));
	if (!acct || !r) {
		err = -ENOMEM;
		goto out_close;
	}
	r->guard = -1;

	base = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)aligned_off);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	if (guarded) {
		uintptr_t start = (uintptr_t)base;
		uintptr_t end = start + ALIGN_UP((uintptr_t)map_len, (uintptr_t)gran);

		err = vm_guard_add(start, end, (uintptr_t)gran, acct);
		if (err < 0) {
			LOG_ERR("vhost_mem: cannot guard a region that may be truncated: %s",
				strerror(-err));
			goto out_close;
		}
		r->guard = err;
		err = 0;
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
	r->sealed = sealed;
	r->acct = acct;
	acct->refs++;
	acct->mapped += map_len;
	if (acct->budget)
		acct->budget->mapped += map_len;

	pos++;
	memmove(&m->regions[pos + 1], &m->regions[pos],
		(m->nregions - (unsigned)pos) * sizeof(*m->regions));
	m->regions[pos] = r;

	/* After the last region with the same or a lower uva. */
	{
		unsigned lo = 0, hi = m->nregions;

		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;

			if (m->by_uva[mid]->uva <= uva)
				lo = mid + 1;
			else
				hi = mid;
		}
		upos = lo;
	}
	memmove(&m->by_uva[upos + 1], &m->by_uva[upos],
		(m->nregions - upos) * sizeof(*m->by_uva));
	m->by_uva[upos] = r;
	m->nregions++;
	vm_uva_fix(m, upos, m->nregions);
	m->generation++;
	return 0;

out_close:
	if (base != MAP_FAILED)
		munmap(base, map_len);
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

	vm_uva_remove(m, r);
	memmove(&m->regions[pos], &m->regions[pos + 1],
		(m->nregions - (unsigned)pos - 1) * sizeof(*m->regions));
	m->nregions--;
	m->generation++;
	vm_kill(r);
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

struct vhost_mem_region *vhost_mem_find_uva(const struct vhost_mem *m, uint64_t uva,
					    uint64_t len)
{
	int lo = 0, hi = (int)m->nregions - 1, i = -1;

	if (len == 0)
		len = 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (m->by_uva[mid]->uva <= uva) {
			i = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	/* Candidates start at or below uva; once no region up to i reaches
	 * uva (prefix maximum of the ends), none can contain it. */
	for (unsigned k = 0; i >= 0 && k < VHOST_MEM_UVA_SCAN; i--, k++) {
		struct vhost_mem_region *r = m->by_uva[i];
		uint64_t off = uva - r->uva;

		if (m->uva_maxlast[i] < uva)
			break;
		if (off < r->size && len <= r->size - off)
			return r;
	}
	return NULL;
}

void *vhost_mem_uva_to_host(const struct vhost_mem *m, uint64_t uva, uint64_t len)
{
	const struct vhost_mem_region *r = vhost_mem_find_uva(m, uva, len);

	return r ? r->host + (uva - r->uva) : NULL;
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
