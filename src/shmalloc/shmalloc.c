// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma-shmalloc (see shmalloc.h): a preloaded allocator that serves
 * large requests from one shared (memfd) heap so that registering them with
 * a vrdma device needs no copy.
 *
 * Interposed: malloc, free, calloc, realloc, memalign, posix_memalign,
 * aligned_alloc, valloc, pvalloc, malloc_usable_size, and mmap/mmap64,
 * munmap, mremap, madvise for anonymous private read-write mappings;
 * mprotect only notes that some heap page lost read-write access (freed
 * pages are then made read-write again before reuse).
 * Requests below the threshold (and anything else) go to glibc through its
 * __libc_* entry points (no dlsym on the allocation path, so no reentrancy
 * problem); a pointer is ours exactly when it lies in the heap's range, so
 * foreign pointers are freed by glibc.
 *
 * Heap layout: pages [0, top) of the range have been handed out at some
 * point; each is either in an allocated block (blk[first page] = its length
 * in pages, blk[] being a sparse, lazily touched anonymous array) or in a
 * free extent (sorted, coalesced array). Allocation is first fit over the
 * free extents, then from top. Freeing punches the pages out of the memfd
 * (FALLOC_FL_PUNCH_HOLE) before they become free, so free pages are always
 * holes: they cost no memory and a new block reads as zeroes (calloc needs
 * no memset), like fresh anonymous memory.
 *
 * Anonymous mmap semantics kept: munmap of any page range of a block
 * (splitting it), mremap shrinking / growing / moving, madvise
 * DONTNEED/FREE/REMOVE reading back zeroes. Not emulated: a freed page stays
 * mapped (reads zero instead of faulting), MAP_FIXED over the heap range is
 * passed to the kernel (the heap does not know it lost those pages).
 *
 * fork(): the child must not share the heap with its parent. The child
 * handler copies the heap's data (SEEK_DATA ranges of the memfd, in the
 * kernel) into a new memfd, maps that over the whole range (MAP_FIXED: no
 * moment without memory), restores non read-write protections, and carries
 * on with the same block layout. This costs a copy of the heap's live data
 * per fork() (posix_spawn, vfork and system() do not fork the address space
 * and cost nothing). A parent thread writing heap memory while fork() runs
 * may see that write show up in the child's copy.
 *
 * One mutex guards the heap state; it is held across fork() (prepare /
 * parent / child handlers).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shmalloc/shmalloc.h"

/* glibc's own allocator, exported for exactly this purpose. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

#define SHM_PAGE 4096ul
#define SHM_MIN_DEFAULT (64ul << 10)
#define SHM_HEAP_DEFAULT (64ull << 30)
#define SHM_HEAP_LEAST (1ull << 30)
/* Freed pages kept (not punched) for reuse, at most this many bytes. */
#define SHM_DIRTY_MAX (64ul << 20)
/* Core dumps cover the heap up to top, rounded up to this many pages. */
#define SHM_DUMP_STEP 16384ul

#define EXPORT __attribute__((visibility("default")))

struct shm_ext {
	size_t pg, n;
	bool dirty; /* holds freed data not punched yet */
};

enum { ST_UNINIT, ST_ACTIVE, ST_OFF };

static struct {
	pthread_mutex_t lock;
	_Atomic int state;
	_Atomic int configured;
	size_t min;        /* threshold in bytes */
	size_t want_size;  /* VRDMA_SHMALLOC_HEAP */
	bool enabled;
	int fd;
	uintptr_t base;
	size_t npages;
	size_t top;
	uint32_t *blk;
	struct shm_ext *fr;
	size_t nfr, capfr;
	size_t dirty;      /* pages in dirty free extents */
	size_t dumped;     /* pages [0, dumped) are in core dumps */
	_Atomic bool any_prot; /* mprotect made some heap page not read-write */
} H = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static size_t (*real_usable)(void *);

/* ---- configuration --------------------------------------------------------- */

static size_t parse_size(const char *s, size_t dflt)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return dflt;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	return *end ? dflt : (size_t)v;
}

/* Read the environment once (lock held). */
static void config_locked(void)
{
	const char *e;

	if (atomic_load(&H.configured))
		return;
	e = getenv("VRDMA_SHMALLOC");

	H.enabled = !(e && !strcmp(e, "0"));
	H.min = parse_size(getenv("VRDMA_SHMALLOC_MIN"), SHM_MIN_DEFAULT);
	if (H.min < SHM_PAGE)
		H.min = SHM_PAGE;
	H.want_size = parse_size(getenv("VRDMA_SHMALLOC_HEAP"), SHM_HEAP_DEFAULT);
	H.want_size &= ~(SHM_PAGE - 1);
	if (H.want_size < SHM_HEAP_LEAST)
		H.want_size = SHM_HEAP_LEAST;
	if (!H.enabled)
		atomic_store(&H.state, ST_OFF);
	atomic_store_explicit(&H.configured, 1, memory_order_release);
}

static void *sys_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

static int sys_munmap(void *a, size_t len)
{
	return (int)syscall(SYS_munmap, a, len);
}

/* Create the heap (lock held). Returns true if active afterwards. */
static bool heap_init_locked(void)
{
	int st = atomic_load(&H.state);
	size_t size;

	if (st != ST_UNINIT)
		return st == ST_ACTIVE;
	config_locked();
	if (!H.enabled)
		goto off;
	H.fd = memfd_create("vrdma-heap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (H.fd < 0)
		goto off;
	for (size = H.want_size; size >= SHM_HEAP_LEAST; size /= 2) {
		void *p, *b;

		if (ftruncate(H.fd, (off_t)size) < 0)
			break;
		p = sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			     H.fd, 0);
		if (p == MAP_FAILED)
			continue;
		b = sys_mmap(NULL, size / SHM_PAGE * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (b == MAP_FAILED) {
			sys_munmap(p, size);
			continue;
		}
		H.base = (uintptr_t)p;
		H.npages = size / SHM_PAGE;
		H.blk = b;
		/* A core dump should not hold the whole (sparse) range. */
		syscall(SYS_madvise, p, size, MADV_DONTDUMP);
		(void)fcntl(H.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		atomic_store_explicit(&H.state, ST_ACTIVE, memory_order_release);
		return true;
	}
	close(H.fd);
	H.fd = -1;
off:
	atomic_store_explicit(&H.state, ST_OFF, memory_order_release);
	return false;
}

/* Threshold (configuration read on first use). */
static size_t threshold(void)
{
	if (!atomic_load_explicit(&H.configured, memory_order_acquire)) {
		pthread_mutex_lock(&H.lock);
		config_locked();
		pthread_mutex_unlock(&H.lock);
	}
	return atomic_load_explicit(&H.state, memory_order_acquire) == ST_OFF ? SIZE_MAX : H.min;
}

static bool ours(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	return atomic_load_explicit(&H.state, memory_order_acquire) == ST_ACTIVE &&
	       a >= H.base && a - H.base < H.npages * SHM_PAGE;
}

static bool ours_range(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	return ours(p) && len <= H.npages * SHM_PAGE - (a - H.base);
}

static size_t pg_of(const void *p)
{
	return ((uintptr_t)p - H.base) / SHM_PAGE;
}

static void *ptr_of(size_t pg)
{
	return (void *)(H.base + pg * SHM_PAGE);
}

/* ---- page allocator (lock held unless said otherwise) ---------------------- */

/* top grew: include the used part of the heap in core dumps. */
static void top_grew_locked(void)
{
	size_t want;

	if (H.top <= H.dumped)
		return;
	want = (H.top + SHM_DUMP_STEP - 1) / SHM_DUMP_STEP * SHM_DUMP_STEP;
	if (want > H.npages)
		want = H.npages;
	syscall(SYS_madvise, H.base + H.dumped * SHM_PAGE, (want - H.dumped) * SHM_PAGE,
		MADV_DODUMP);
	H.dumped = want;
}

/* Give pages [pg, pg+n) back to the kernel (no lock needed). */
static void punch(size_t pg, size_t n)
{
	(void)fallocate(H.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)(pg * SHM_PAGE), (off_t)(n * SHM_PAGE));
}

static int fr_insert_at(size_t i, size_t pg, size_t n, bool dirty)
{
	if (H.nfr == H.capfr) {
		size_t cap = H.capfr ? H.capfr * 2 : 64;
		struct shm_ext *v = __libc_realloc(H.fr, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		H.fr = v;
		H.capfr = cap;
	}
	memmove(&H.fr[i + 1], &H.fr[i], (H.nfr - i) * sizeof(H.fr[0]));
	H.fr[i].pg = pg;
	H.fr[i].n = n;
	H.fr[i].dirty = dirty;
	H.nfr++;
	if (dirty)
		H.dirty += n;
	return 0;
}

static void fr_remove_at(size_t i)
{
	if (H.fr[i].dirty)
		H.dirty -= H.fr[i].n;
	memmove(&H.fr[i], &H.fr[i + 1], (H.nfr - i - 1) * sizeof(H.fr[0]));
	H.nfr--;
}

/* Free extent i grows by n pages (dirty or not) on one side. */
static void fr_extend(size_t i, size_t n, bool dirty)
{
	if (dirty && !H.fr[i].dirty) {
		H.fr[i].dirty = true;
		H.dirty += H.fr[i].n;
	}
	H.fr[i].n += n;
	if (H.fr[i].dirty)
		H.dirty += n;
}

/* Too much freed data kept: punch every dirty extent. */
static void fr_purge(void)
{
	for (size_t i = 0; i < H.nfr; i++) {
		if (H.fr[i].dirty) {
			punch(H.fr[i].pg, H.fr[i].n);
			H.fr[i].dirty = false;
		}
	}
	H.dirty = 0;
}

/* Pages [pg, pg+n) become free; dirty: they may hold data. Pages at or
 * above top are always holes. */
static void pages_free_locked(size_t pg, size_t n, bool dirty)
{
	size_t lo = 0, hi = H.nfr;

	/* A freed block is read-write again, whatever the program did. */
	if (dirty && atomic_load_explicit(&H.any_prot, memory_order_relaxed))
		syscall(SYS_mprotect, ptr_of(pg), n * SHM_PAGE, PROT_READ | PROT_WRITE);

	if (pg + n == H.top) {
		if (dirty)
			punch(pg, n);
		H.top = pg;
		if (H.nfr && H.fr[H.nfr - 1].pg + H.fr[H.nfr - 1].n == H.top) {
			struct shm_ext *e = &H.fr[H.nfr - 1];

			if (e->dirty)
				punch(e->pg, e->n);
			H.top = e->pg;
			fr_remove_at(H.nfr - 1);
		}
		return;
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (H.fr[mid].pg < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first extent above pg. Merge with the previous and/or next. */
	if (lo > 0 && H.fr[lo - 1].pg + H.fr[lo - 1].n == pg) {
		fr_extend(lo - 1, n, dirty);
		if (lo < H.nfr && H.fr[lo - 1].pg + H.fr[lo - 1].n == H.fr[lo].pg) {
			size_t m = H.fr[lo].n;
			bool d = H.fr[lo].dirty;

			fr_remove_at(lo);
			fr_extend(lo - 1, m, d);
		}
	} else if (lo < H.nfr && pg + n == H.fr[lo].pg) {
		H.fr[lo].pg = pg;
		fr_extend(lo, n, dirty);
	} else if (fr_insert_at(lo, pg, n, dirty) < 0) {
		/* No memory for the free list: the pages are lost to the
		 * heap; punched, they at least cost nothing. */
		punch(pg, n);
	}
	if (H.dirty * SHM_PAGE > SHM_DIRTY_MAX)
		fr_purge();
}

/* Take [pg, pg+n) out of free extent i (which contains it); *dirty: whether
 * those pages may hold old data. */
static int fr_take(size_t i, size_t pg, size_t n, bool *dirty)
{
	struct shm_ext e = H.fr[i];
	size_t end = e.pg + e.n;

	*dirty = e.dirty;
	if (pg == e.pg && pg + n == end) {
		fr_remove_at(i);
		return 0;
	}
	if (pg != e.pg && pg + n != end) {
		/* Split: the tail is inserted uncounted, then flagged. */
		if (fr_insert_at(i + 1, pg + n, end - pg - n, false) < 0)
			return -ENOMEM;
		H.fr[i + 1].dirty = e.dirty;
		H.fr[i].n = pg - e.pg;
	} else if (pg == e.pg) {
		H.fr[i].pg += n;
		H.fr[i].n -= n;
	} else {
		H.fr[i].n -= n;
	}
	if (e.dirty)
		H.dirty -= n;
	return 0;
}

/* First page index >= pg whose address is aligned to al pages. */
static size_t align_pg(size_t pg, size_t al)
{
	size_t off = H.base / SHM_PAGE;

	return ((pg + off + al - 1) & ~(al - 1)) - off;
}

/* n pages aligned to al pages (a power of two). Returns the first page or
 * SIZE_MAX; *dirty tells whether they may hold old data. */
static size_t pages_alloc_locked(size_t n, size_t al, bool *dirty)
{
	size_t pg;

	for (size_t i = 0; i < H.nfr; i++) {
		pg = align_pg(H.fr[i].pg, al);
		if (pg + n <= H.fr[i].pg + H.fr[i].n) {
			if (fr_take(i, pg, n, dirty) < 0)
				return SIZE_MAX;
			H.blk[pg] = (uint32_t)n;
			return pg;
		}
	}
	*dirty = false;
	pg = align_pg(H.top, al);
	if (pg > H.npages || n > H.npages - pg)
		return SIZE_MAX;
	if (pg > H.top) {
		size_t gap = pg - H.top, old = H.top;

		/* The alignment gap becomes a (clean) free extent. */
		if (H.nfr && H.fr[H.nfr - 1].pg + H.fr[H.nfr - 1].n == old)
			fr_extend(H.nfr - 1, gap, false);
		else if (fr_insert_at(H.nfr, old, gap, false) < 0)
			return SIZE_MAX;
	}
	H.top = pg + n;
	H.blk[pg] = (uint32_t)n;
	top_grew_locked();
	return pg;
}

/* A block of size bytes aligned to align bytes, zeroed if zero, or NULL
 * (no lock held). */
static void *heap_alloc(size_t size, size_t align, bool zero)
{
	size_t n = (size + SHM_PAGE - 1) / SHM_PAGE, al = align > SHM_PAGE ? align / SHM_PAGE : 1;
	size_t pg = SIZE_MAX;
	bool dirty = false;

	if (n == 0 || size > ((size_t)UINT32_MAX) * SHM_PAGE)
		return NULL;
	pthread_mutex_lock(&H.lock);
	if (heap_init_locked())
		pg = pages_alloc_locked(n, al, &dirty);
	pthread_mutex_unlock(&H.lock);
	if (pg == SIZE_MAX)
		return NULL;
	if (dirty && zero)
		memset(ptr_of(pg), 0, n * SHM_PAGE);
	return ptr_of(pg);
}

static size_t block_pages(const void *p)
{
	return H.blk[pg_of(p)];
}

static void heap_free(void *p)
{
	size_t pg = pg_of(p), n;

	if ((uintptr_t)p & (SHM_PAGE - 1))
		return; /* not a block start: ignore (glibc would abort) */
	pthread_mutex_lock(&H.lock);
	n = H.blk[pg];
	if (n) {
		H.blk[pg] = 0;
		pages_free_locked(pg, n, true);
	}
	pthread_mutex_unlock(&H.lock);
}

/* Grow the block at pg from n to want pages in place if the pages after it
 * are free (no lock held). Returns true on success; *dirty: whether the new
 * pages may hold old data. */
static bool heap_grow_in_place(size_t pg, size_t n, size_t want, bool *dirty)
{
	size_t end = pg + n, more = want - n;
	bool ok = false;

	*dirty = false;
	pthread_mutex_lock(&H.lock);
	if (H.blk[pg] != n) {
		/* raced with a bad free: leave it */
	} else if (end == H.top) {
		if (more <= H.npages - H.top) {
			H.top += more;
			top_grew_locked();
			ok = true;
		}
	} else {
		for (size_t i = 0; i < H.nfr; i++) {
			if (H.fr[i].pg == end) {
				if (H.fr[i].n >= more && fr_take(i, end, more, dirty) == 0)
					ok = true;
				break;
			}
			if (H.fr[i].pg > end)
				break;
		}
	}
	if (ok)
		H.blk[pg] = (uint32_t)want;
	pthread_mutex_unlock(&H.lock);
	return ok;
}

/* Shrink the block at pg from n to keep pages (keep < n; no lock held). */
static void heap_shrink(size_t pg, size_t n, size_t keep)
{
	pthread_mutex_lock(&H.lock);
	H.blk[pg] = (uint32_t)keep;
	pages_free_locked(pg + keep, n - keep, true);
	pthread_mutex_unlock(&H.lock);
}

/* ---- malloc family --------------------------------------------------------- */

EXPORT void *malloc(size_t size)
{
	if (size >= threshold()) {
		void *p = heap_alloc(size, 0, false);

		if (p)
			return p;
	}
	return __libc_malloc(size);
}

EXPORT void free(void *p)
{
	if (!p)
		return;
	if (ours(p))
		heap_free(p);
	else
		__libc_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (total >= threshold()) {
		void *p = heap_alloc(total, 0, true);

		if (p)
			return p;
	}
	return __libc_calloc(n, size);
}

static size_t foreign_usable(void *p)
{
	if (!real_usable)
		real_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	return real_usable ? real_usable(p) : 0;
}

EXPORT void *realloc(void *p, size_t size)
{
	void *np;
	size_t old;

	if (!p)
		return malloc(size);
	if (size == 0) {
		free(p);
		return NULL;
	}
	if (!ours(p)) {
		if (size < threshold())
			return __libc_realloc(p, size);
		np = heap_alloc(size, 0, false);
		if (!np)
			return __libc_realloc(p, size);
		old = foreign_usable(p);
		memcpy(np, p, old < size ? old : size);
		__libc_free(p);
		return np;
	}
	{
		size_t pg = pg_of(p), n = block_pages(p);
		size_t want = (size + SHM_PAGE - 1) / SHM_PAGE;
		bool dirty;

		if (n == 0) {
			errno = EINVAL;
			return NULL;
		}
		if (want <= n) {
			if (want < n)
				heap_shrink(pg, n, want);
			return p;
		}
		if (want <= UINT32_MAX && heap_grow_in_place(pg, n, want, &dirty))
			return p;
		np = malloc(size);
		if (!np)
			return NULL;
		memcpy(np, p, n * SHM_PAGE);
		heap_free(p);
		return np;
	}
}

EXPORT void *memalign(size_t align, size_t size)
{
	if (align && (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (size >= threshold()) {
		void *p = heap_alloc(size, align, false);

		if (p)
			return p;
	}
	return __libc_memalign(align, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

EXPORT void *valloc(size_t size)
{
	return memalign(SHM_PAGE, size);
}

EXPORT void *pvalloc(size_t size)
{
	size_t r = (size + SHM_PAGE - 1) & ~(SHM_PAGE - 1);

	return memalign(SHM_PAGE, r ? r : SHM_PAGE);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (ours(p))
		return block_pages(p) * SHM_PAGE;
	return foreign_usable(p);
}

/* ---- mmap family ----------------------------------------------------------- */

static bool anon_private_rw(void *addr, int prot, int flags, int fd, off_t off)
{
	return !addr && fd == -1 && off == 0 && prot == (PROT_READ | PROT_WRITE) &&
	       (flags & ~MAP_POPULATE) == (MAP_PRIVATE | MAP_ANONYMOUS);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (len && anon_private_rw(addr, prot, flags, fd, off) && len >= threshold()) {
		void *p = heap_alloc(len, 0, true);

		if (p)
			return p;
	}
	return sys_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

/* First page of the block holding page p, or SIZE_MAX (free page). */
static size_t block_of(size_t p)
{
	for (size_t q = p + 1; q-- > 0;)
		if (H.blk[q])
			return q + H.blk[q] > p ? q : SIZE_MAX;
	return SIZE_MAX;
}

/* Unmap the heap pages [a, b): every block part in it is freed. */
static void heap_unmap(size_t a, size_t b)
{
	size_t p = a;

	pthread_mutex_lock(&H.lock);
	while (p < b) {
		size_t s = block_of(p), n, e, cs, ce;

		if (s == SIZE_MAX) {
			p++;
			continue;
		}
		n = H.blk[s];
		e = s + n;
		cs = s > p ? s : p;
		ce = e < b ? e : b;
		if (e > b)
			H.blk[b] = (uint32_t)(e - b);
		if (s < cs)
			H.blk[s] = (uint32_t)(cs - s);
		else
			H.blk[s] = 0;
		pages_free_locked(cs, ce - cs, true);
		p = ce;
	}
	pthread_mutex_unlock(&H.lock);
}

EXPORT int munmap(void *addr, size_t len)
{
	if (ours(addr) && len) {
		uintptr_t a = (uintptr_t)addr;

		if ((a & (SHM_PAGE - 1)) || !ours_range(addr, len)) {
			errno = EINVAL;
			return -1;
		}
		heap_unmap(pg_of(addr), pg_of(addr) + (len + SHM_PAGE - 1) / SHM_PAGE);
		return 0;
	}
	return sys_munmap(addr, len);
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *target = NULL;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		target = va_arg(ap, void *);
		va_end(ap);
	}
	if (ours(old) && !(flags & ~MREMAP_MAYMOVE)) {
		size_t pg = pg_of(old), n, on, nn;
		bool dirty;
		void *np;

		if (((uintptr_t)old & (SHM_PAGE - 1)) || !new_len) {
			errno = EINVAL;
			return MAP_FAILED;
		}
		on = (old_len + SHM_PAGE - 1) / SHM_PAGE;
		nn = (new_len + SHM_PAGE - 1) / SHM_PAGE;
		n = H.blk[pg];
		if (n != on) {
			/* Only whole blocks are remapped here. */
			errno = EINVAL;
			return MAP_FAILED;
		}
		if (nn < n) {
			heap_shrink(pg, n, nn);
			return old;
		}
		if (nn == n)
			return old;
		if (nn <= UINT32_MAX && heap_grow_in_place(pg, n, nn, &dirty)) {
			if (dirty) /* grown anonymous memory reads as zeroes */
				memset(ptr_of(pg + n), 0, (nn - n) * SHM_PAGE);
			return old;
		}
		if (!(flags & MREMAP_MAYMOVE)) {
			errno = ENOMEM;
			return MAP_FAILED;
		}
		np = heap_alloc(new_len, 0, true);
		if (!np) {
			errno = ENOMEM;
			return MAP_FAILED;
		}
		memcpy(np, old, n * SHM_PAGE);
		heap_free(old);
		return np;
	}
	if (ours(old)) {
		errno = EINVAL; /* MREMAP_FIXED / DONTUNMAP of heap pages */
		return MAP_FAILED;
	}
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, target);
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	uintptr_t a = (uintptr_t)addr;

	if (prot != (PROT_READ | PROT_WRITE) &&
	    atomic_load_explicit(&H.state, memory_order_acquire) == ST_ACTIVE &&
	    a < H.base + H.npages * SHM_PAGE && a + len > H.base)
		atomic_store(&H.any_prot, true);
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	if (ours(addr) && len && ours_range(addr, len) &&
	    (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE)) {
		uintptr_t a = (uintptr_t)addr;

		if (a & (SHM_PAGE - 1)) {
			errno = EINVAL;
			return -1;
		}
		/* Anonymous semantics: the pages read as zeroes afterwards. */
		punch(pg_of(addr), (len + SHM_PAGE - 1) / SHM_PAGE);
		return 0;
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* ---- query for libvrdma ---------------------------------------------------- */

EXPORT int vrdma_shmalloc_heap(uintptr_t *start, uintptr_t *end, int *fd)
{
	if (atomic_load_explicit(&H.state, memory_order_acquire) != ST_ACTIVE)
		return -ENOENT;
	*start = H.base;
	*end = H.base + H.npages * SHM_PAGE;
	*fd = H.fd;
	return 0;
}

/* ---- fork ------------------------------------------------------------------ */

/* The parent waits (pipe) until the child has its copy, so that the
 * forking thread's own writes after fork() never reach the child. */
static int fork_pipe[2] = { -1, -1 };

static void atfork_prepare(void)
{
	pthread_mutex_lock(&H.lock);
	fork_pipe[0] = fork_pipe[1] = -1;
	if (atomic_load(&H.state) == ST_ACTIVE && pipe2(fork_pipe, O_CLOEXEC) < 0)
		fork_pipe[0] = fork_pipe[1] = -1;
}

static void atfork_parent(void)
{
	if (fork_pipe[0] >= 0) {
		char b;

		close(fork_pipe[1]);
		/* One byte when the child is done, EOF if it died. */
		while (read(fork_pipe[0], &b, 1) < 0 && errno == EINTR)
			;
		close(fork_pipe[0]);
	}
	pthread_mutex_unlock(&H.lock);
}

/* Copy the data of old into nfd over [0, len) (holes stay holes). */
static int copy_data(int old, int nfd, off_t len)
{
	off_t pos = 0;

	while (pos < len) {
		off_t d = lseek(old, pos, SEEK_DATA), h;

		if (d < 0 || d >= len)
			break;
		h = lseek(old, d, SEEK_HOLE);
		if (h < 0 || h > len)
			h = len;
		for (off_t o = d; o < h;) {
			loff_t in = o, out = o;
			ssize_t r = copy_file_range(old, &in, nfd, &out, (size_t)(h - o), 0);

			if (r <= 0) {
				/* Fall back to a copy through the mapping. */
				ssize_t w = pwrite(nfd, (void *)(H.base + o), (size_t)(h - o), o);

				if (w <= 0)
					return -1;
				r = w;
			}
			o += r;
		}
		pos = h;
	}
	return 0;
}

struct prot_range {
	uintptr_t s, e;
	int prot;
};

/* Non read-write VMAs of the heap, read from /proc/self/maps without
 * allocating (in the fork child, glibc's heap may still be shared). */
static size_t heap_prots(struct prot_range *v, size_t max)
{
	static char buf[16384];
	uintptr_t hs = H.base, he = H.base + H.npages * SHM_PAGE;
	size_t n = 0, have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = '\0';
		while (n < max && (nl = strchr(line, '\n'))) {
			unsigned long s, e;
			char perms[8];

			*nl = '\0';
			if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && e > hs &&
			    s < he && strncmp(perms, "rw", 2)) {
				v[n].s = s < hs ? hs : s;
				v[n].e = e > he ? he : e;
				v[n].prot = (perms[0] == 'r' ? PROT_READ : 0) |
					    (perms[1] == 'w' ? PROT_WRITE : 0) |
					    (perms[2] == 'x' ? PROT_EXEC : 0);
				n++;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: skip it */
	}
	close(fd);
	return n;
}

static void atfork_child(void)
{
	static struct prot_range prots[256];
	size_t size = H.npages * SHM_PAGE, np;
	int nfd;

	if (atomic_load(&H.state) != ST_ACTIVE)
		goto out;
	np = heap_prots(prots, 256);
	nfd = memfd_create("vrdma-heap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (nfd < 0 || ftruncate(nfd, (off_t)size) < 0 ||
	    copy_data(H.fd, nfd, (off_t)(H.top * SHM_PAGE)) < 0 ||
	    sys_mmap((void *)H.base, size, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_FIXED | MAP_NORESERVE, nfd, 0) == MAP_FAILED) {
		/* Keep sharing with the parent rather than lose memory. */
		static const char msg[] =
			"libvrdma-shmalloc: fork: could not copy the shared heap; "
			"the child shares it with its parent\n";

		if (write(2, msg, sizeof(msg) - 1) < 0) {
			/* nothing more to do */
		}
		if (nfd >= 0)
			close(nfd);
		goto out;
	}
	for (size_t i = 0; i < np; i++)
		mprotect((void *)prots[i].s, prots[i].e - prots[i].s, prots[i].prot);
	syscall(SYS_madvise, H.base + H.dumped * SHM_PAGE, size - H.dumped * SHM_PAGE,
		MADV_DONTDUMP);
	(void)fcntl(nfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	close(H.fd);
	H.fd = nfd;
out:
	if (fork_pipe[1] >= 0) {
		if (write(fork_pipe[1], "", 1) < 0) {
			/* the parent then sees EOF */
		}
		close(fork_pipe[0]);
		close(fork_pipe[1]);
	}
	pthread_mutex_unlock(&H.lock);
}

__attribute__((constructor)) static void shmalloc_init(void)
{
	void *m;

	(void)threshold();
	real_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	/* Another allocator first in the search order (a sanitizer runtime
	 * preloaded before us): ours would only see part of the calls. */
	m = dlsym(RTLD_DEFAULT, "malloc");
	if (m && m != (void *)malloc) {
		pthread_mutex_lock(&H.lock);
		if (atomic_load(&H.state) == ST_UNINIT) {
			H.enabled = false;
			atomic_store(&H.state, ST_OFF);
		}
		pthread_mutex_unlock(&H.lock);
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
