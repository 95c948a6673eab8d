// SPDX-License-Identifier: BSD-3-Clause
/*
 * Sharing existing application memory with the device (vrdma_mem_share), for
 * memory registration of ordinary heap / stack / mmap / global memory by the
 * drop-in libibverbs.
 *
 * A virtio device can only reach memory the driver put in a shared region,
 * and vhost-user regions are fds.
 *
 * Zero copy: memory from the shared heap of libvrdma-shmalloc (preloaded by
 * vrdma-run: large malloc / memalign / calloc / realloc / anonymous mmap
 * blocks) already lies in a memfd mapped MAP_SHARED. Such a range becomes a
 * "heap chunk": the heap's fd (dup'ed) and the range's offset in it are
 * announced as they are, nothing is copied or remapped. The allocator is
 * found with dlsym(RTLD_DEFAULT, VRDMA_SHMALLOC_HEAP_SYM); without it (or
 * for memory outside its heap) the copy path below is used.
 *
 * Copy path: private anonymous memory has no fd, so the pages are converted
 * in place:
 *   1. memfd_create + ftruncate to the page-rounded length;
 *   2. pwrite() the current contents into it (the kernel copies straight into
 *      the memfd's page cache: no page faults on a temporary mapping);
 *   3. mmap(MAP_SHARED | MAP_FIXED) the memfd over the same virtual range,
 *      one mmap per original mapping piece so each keeps its protection;
 *   4. announce the range to the device (ADD_MEM_REG, GPA == UVA == addr).
 * The application keeps its pointers and sees the same bytes.
 *
 * Bookkeeping is process-wide (one address space, possibly several devices):
 * a sorted table of "chunks", each a page range converted as one memfd, with
 *  - refs: how many share handles (of any device) use it, and
 *  - per device: how many of that device's handles use it (the region is
 *    announced to a device on its first use and withdrawn on its last).
 * A request covering pages that are already converted reuses those chunks
 * and converts only the gaps, so overlapping and repeated registrations cost
 * nothing extra. Chunks are never merged (each stays one region = one memory
 * slot on each device using it).
 *
 * When the last handle of a chunk goes, the range becomes private anonymous
 * memory again with the same contents (pread into a new anonymous mapping,
 * mremap over the range), so fork semantics return to normal. Heap chunks
 * are just forgotten (the memory stays the allocator's).
 *
 * Memory management calls here are raw system calls: with the allocator
 * preloaded, mmap / mremap of anonymous memory would be served from its heap.
 *
 * The copy-path conversions (copy then swap, both directions) must see no
 * write to the range between the copy and the swap, or that write is lost.
 * The calling thread's own stack is the case that always happens (a stack
 * buffer shares pages with the frames of ibv_reg_mr itself), so both steps
 * run in a helper task (clone CLONE_VM | CLONE_VFORK, its own small stack)
 * while the kernel holds the calling thread still inside clone(): its
 * stack does not change until the swap is done. Other threads are held off
 * by mem_guard.c: the range is read-only meanwhile, and a writer waits in
 * its SIGSEGV handler until the swap is done, then writes to the new pages.
 *
 * fork(): a pthread_atfork child handler does the same conversion for every
 * live copy-path chunk the child inherited (all of them, unless the
 * program marked ranges with ibv_dontfork_range; heap chunks: the
 * allocator's own child handler gives the child a private copy of the whole
 * heap), so the child gets a private copy (what a
 * fork-safe verbs library gives) instead of sharing pages with the parent,
 * and it replaces each device's socket by an unconnected one so the back-end
 * still sees the parent's connection close when the parent exits.
 *
 * Lock order: device lock, then the registry lock.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/dev.h"
#include "libvrdma/mem_guard.h"
#include "shmalloc/shmalloc.h"

struct vrdma_piece {
	uintptr_t start, end;
	int prot;
};

struct vrdma_chunk_dev {
	struct vrdma_dev *dev;
	unsigned refs;
};

struct vrdma_chunk {
	uintptr_t start, end;
	int fd;
	bool heap;      /* in the allocator's heap: fd is a dup of its memfd */
	uint64_t off;   /* offset of start in fd */
	unsigned refs;
	struct vrdma_chunk_dev *devs;
	unsigned ndevs;
	struct vrdma_piece *pieces;
	unsigned npieces;
};

struct vrdma_mem_share {
	struct vrdma_dev *dev;
	struct vrdma_mem_share *prev, *next; /* the device's handles */
	uintptr_t start, end;
	struct vrdma_chunk **chunks;
	unsigned nchunks;
};

static struct {
	pthread_mutex_t lock;
	struct vrdma_chunk **v; /* sorted by start, non-overlapping */
	unsigned n, cap;
	struct vrdma_dev *devs;  /* open devices */
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static vrdma_shmalloc_heap_fn *heap_fn;
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

static void heap_fn_init(void)
{
	heap_fn = (vrdma_shmalloc_heap_fn *)dlsym(RTLD_DEFAULT, VRDMA_SHMALLOC_HEAP_SYM);
}

/* The preloaded allocator's heap: true with its bounds and fd. */
static bool heap_get(uintptr_t *hs, uintptr_t *he, int *fd)
{
	pthread_once(&heap_once, heap_fn_init);
	return heap_fn && heap_fn(hs, he, fd) == 0;
}

static void *raw_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

#define SIDE_STACK (256u << 10)

/* Before a conversion of [s, e): other threads' writes are held off, or
 * the reason they are not is logged. */
static void guard_arm(uintptr_t s, uintptr_t e)
{
	static atomic_bool warned;
	long blocker;
	int rc = vrdma_mem_guard_arm(&blocker);
	char why[64];

	if (rc == 0 || atomic_exchange(&warned, true))
		return;
	if (rc == -EDEADLK)
		snprintf(why, sizeof(why), "thread %ld blocks SIGSEGV", blocker);
	else if (rc == -EBUSY)
		snprintf(why, sizeof(why), "the program's SIGSEGV handler is in front");
	else
		snprintf(why, sizeof(why), "SIGSEGV handler not in place: %s", strerror(-rc));
	LOG_WARN("vrdma: other threads' writes to %#lx-%#lx during its conversion may be lost "
		 "(%s; said once)", (unsigned long)s, (unsigned long)e, why);
}

/* What the side task starts with: fn and its argument (a copy, after this). */
struct side_start {
	int (*fn)(void *);
	max_align_t arg[];
};

static int side_entry(void *p)
{
	struct side_start *st = p;
	stack_t off = { .ss_flags = SS_DISABLE };

	/* not on the registering thread's alternate stack, which may lie in
	 * the range it holds (cannot fail here: errno stays untouched) */
	syscall(SYS_sigaltstack, &off, NULL);
	return st->fn(st->arg);
}

/*
 * Run fn on a copy of the size bytes at arg in a task sharing our memory,
 * on its own stack, while this thread waits inside clone() (CLONE_VFORK)
 * until it exits; the copy (fn's results) is copied back to arg. The copy
 * lives in the task's stack mapping, not in arg's memory, which may be in
 * the range being converted. fn must only use system calls (it runs with
 * our thread pointer). The task takes no signal but faults: the program's
 * handlers must not run in it. Returns 0, or -errno if the task could not
 * run, or -ECHILD if it died (it may have left pages held or swapped: the
 * caller puts them back, then calls vrdma_mem_guard_close).
 */
static int side_run(int (*fn)(void *), void *arg, size_t size)
{
	char *stk = raw_mmap(NULL, SIDE_STACK, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct side_start *st = (struct side_start *)(void *)stk;
	sigset_t all, old;
	int pid, ws, rc = 0;

	if (stk == MAP_FAILED)
		return -errno;
	st->fn = fn;
	memcpy(st->arg, arg, size); /* bottom of the mapping; the stack grows down */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	/* (the task inherits this mask; we wait in clone() meanwhile anyway.
	 * Raw: glibc's own signals too) */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, _NSIG / 8);
	pid = clone(side_entry, stk + SIDE_STACK, CLONE_VM | CLONE_VFORK, st);
	if (pid < 0)
		rc = -errno;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, _NSIG / 8);
	if (pid >= 0) {
		int w;

		while ((w = waitpid(pid, &ws, __WCLONE)) < 0 && errno == EINTR)
			;
		if (w < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			rc = -ECHILD;
		memcpy(arg, st->arg, size);
	}
	syscall(SYS_munmap, stk, SIDE_STACK);
	return rc;
}

static size_t page_size(void)
{
	static size_t ps;

	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* ---- raw copies (system calls, so sanitizers do not see our reads of
 *      neighbouring heap redzones on the same pages) ------------------------ */

static int copy_to_fd(int fd, uintptr_t src, size_t len)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pwrite64, fd, (const void *)(src + done),
				 MIN(len - done, (size_t)1 << 30), (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* ---- /proc/self/maps ------------------------------------------------------- */

/*
 * Describe [s, e) as pieces of existing mappings. Every byte must be mapped,
 * readable and private (MAP_PRIVATE, not a kernel special mapping). Returns
 * 0 with a malloc'ed array, or -EFAULT (hole), -EACCES (not readable),
 * -EOPNOTSUPP (shared or special mapping), -ENOMEM, -errno.
 */
static int maps_lookup(uintptr_t s, uintptr_t e, struct vrdma_piece **out, unsigned *nout)
{
	struct vrdma_piece *p = NULL;
	unsigned n = 0, cap = 0;
	uintptr_t cur = s;
	char *line = NULL;
	size_t lcap = 0;
	FILE *f;
	int rc = 0;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (cur < e && getline(&line, &lcap, f) > 0) {
		unsigned long ms, me;
		char perms[8] = "";
		int off = 0;
		const char *path;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &ms, &me, perms, &off) < 3)
			continue;
		if (me <= cur)
			continue;
		if (ms > cur) {
			rc = -EFAULT; /* hole */
			break;
		}
		path = off > 0 ? line + off : "";
		if (perms[0] != 'r') {
			rc = -EACCES;
			break;
		}
		if (perms[3] != 'p' || !strncmp(path, "[vvar]", 6) ||
		    !strncmp(path, "[vdso]", 6) || !strncmp(path, "[vsyscall]", 10)) {
			rc = -EOPNOTSUPP;
			break;
		}
		if (n == cap) {
			struct vrdma_piece *np;

			cap = cap ? cap * 2 : 4;
			np = realloc(p, cap * sizeof(*p));
			if (!np) {
				rc = -ENOMEM;
				break;
			}
			p = np;
		}
		p[n].start = cur;
		p[n].end = MIN((uintptr_t)me, e);
		p[n].prot = PROT_READ | (perms[1] == 'w' ? PROT_WRITE : 0) |
			    (perms[2] == 'x' ? PROT_EXEC : 0);
		cur = p[n].end;
		n++;
	}
	free(line);
	fclose(f);
	if (!rc && cur < e)
		rc = -EFAULT;
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	*nout = n;
	return 0;
}

/* ---- conversion ------------------------------------------------------------ */

/* Replace [s, e) (mapping fd at offset off) by private anonymous memory with
 * the same contents and protection prot. */
static int make_private_piece_direct(uintptr_t s, uintptr_t e, int fd, uint64_t off, int prot)
{
	size_t len = e - s;
	void *tmp, *r;
	size_t done = 0;
	int rc;

	tmp = raw_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED)
		return -errno;
	vrdma_mem_guard_open();
	rc = vrdma_mem_guard_hold(s, e, prot);
	if (!rc)
		vrdma_mem_guard_copying();
	while (!rc && done < len) {
		long n = syscall(SYS_pread64, fd, (char *)tmp + done,
				 MIN(len - done, (size_t)1 << 30), (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	/* Atomic replacement: the range is never unmapped in between. */
	r = rc ? MAP_FAILED
	       : (void *)syscall(SYS_mremap, tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)s);
	if (r == MAP_FAILED) {
		rc = rc ? rc : -errno;
		syscall(SYS_munmap, tmp, len);
	}
	/* the old pages (held) or the new ones (read-write) get prot */
	if (r == MAP_FAILED || prot != (PROT_READ | PROT_WRITE))
		syscall(SYS_mprotect, s, len, prot);
	vrdma_mem_guard_close();
	return rc;
}

struct private_arg {
	uintptr_t s, e;
	uint64_t off;
	int fd, prot, rc;
};

static int private_task(void *p)
{
	struct private_arg *a = p;

	a->rc = make_private_piece_direct(a->s, a->e, a->fd, a->off, a->prot);
	return 0;
}

/* The same, from the side task (see the top of the file). */
static int make_private_piece(uintptr_t s, uintptr_t e, int fd, uint64_t off, int prot)
{
	struct private_arg a = { .s = s, .e = e, .off = off, .fd = fd, .prot = prot,
				 .rc = -EINTR };
	int r;

	guard_arm(s, e);
	r = side_run(private_task, &a, sizeof(a));
	if (r == -ECHILD)
		mprotect((void *)s, e - s, prot);
	vrdma_mem_guard_close(); /* (if the task died holding) */

	return r < 0 ? r : a.rc;
}

/*
 * Turn the parts of [start, end) that still map our memfd (same inode, as
 * /proc/self/maps says) back into private anonymous memory. Parts the
 * application unmapped or replaced meanwhile are left alone: we never map
 * over memory that is no longer ours. Returns 0 or the first error.
 */
static int make_private(uintptr_t start, uintptr_t end, int fd)
{
	struct { uintptr_t s, e; uint64_t off; int prot; } v[64];
	unsigned n = 0;
	char *line = NULL;
	size_t lcap = 0;
	struct stat st;
	FILE *f;
	int rc = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	for (;;) {
		unsigned long ms, me, off, ino;
		char perms[8] = "";
		uintptr_t s, e;
		bool more = getline(&line, &lcap, f) > 0;

		/* Act on a batch when full or at the end (mremap changes the
		 * file we are reading, so collect first). */
		if (!more || n == ARRAY_SIZE(v)) {
			for (unsigned i = 0; i < n; i++) {
				int r = make_private_piece(v[i].s, v[i].e, fd, v[i].off, v[i].prot);

				if (r < 0 && rc == 0)
					rc = r;
			}
			if (!more)
				break;
			n = 0;
		}
		if (sscanf(line, "%lx-%lx %7s %lx %*s %lu", &ms, &me, perms, &off, &ino) < 5)
			continue;
		if (me <= start || ms >= end || ino != (unsigned long)st.st_ino ||
		    perms[3] != 's')
			continue;
		s = MAX((uintptr_t)ms, start);
		e = MIN((uintptr_t)me, end);
		v[n].s = s;
		v[n].e = e;
		v[n].off = off + (s - ms);
		v[n].prot = (perms[0] == 'r' ? PROT_READ : 0) |
			    (perms[1] == 'w' ? PROT_WRITE : 0) |
			    (perms[2] == 'x' ? PROT_EXEC : 0);
		n++;
	}
	free(line);
	fclose(f);
	return rc;
}

static void chunk_free(struct vrdma_chunk *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->devs);
	free(c->pieces);
	free(c);
}

/* Gives the pieces [from, to) of c their protection back (side task). */
static void unhold(const struct vrdma_chunk *c, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		syscall(SYS_mprotect, c->pieces[i].start, c->pieces[i].end - c->pieces[i].start,
			c->pieces[i].prot);
}

struct convert_arg {
	struct vrdma_chunk *c;
	unsigned done; /* pieces swapped */
	bool copied;   /* contents in the memfd */
	int rc;
};

/* In the side task: copy the chunk's pages into its memfd and map that over
 * them, piece by piece. */
static int convert_task(void *p)
{
	struct convert_arg *a = p;
	struct vrdma_chunk *c = a->c;
	unsigned i, held;

	a->done = 0;
	vrdma_mem_guard_open();
	for (held = 0, a->rc = 0; held < c->npieces && !a->rc; held++)
		a->rc = vrdma_mem_guard_hold(c->pieces[held].start, c->pieces[held].end,
					     c->pieces[held].prot);
	if (!a->rc) {
		vrdma_mem_guard_copying();
		a->rc = copy_to_fd(c->fd, c->start, c->end - c->start);
	}
	if (a->rc < 0) {
		unhold(c, 0, held);
		vrdma_mem_guard_close();
		return 0;
	}
	a->copied = true;
	for (i = 0; i < c->npieces; i++) {
		const struct vrdma_piece *pc = &c->pieces[i];
		void *m = raw_mmap((void *)pc->start, pc->end - pc->start, pc->prot,
				   MAP_SHARED | MAP_FIXED, c->fd, (off_t)(pc->start - c->start));

		if (m == MAP_FAILED) {
			a->rc = -errno;
			break;
		}
	}
	a->done = i;
	/* The failed piece (if MAP_FIXED left it) and the ones after it are
	 * still the old pages: writable again (the caller makes the swapped
	 * ones private). */
	if (i < c->npieces)
		unhold(c, i, c->npieces);
	vrdma_mem_guard_close();
	return 0;
}

/* Convert the private pages [s, e) into a new chunk. */
static int chunk_create(uintptr_t s, uintptr_t e, struct vrdma_chunk **out)
{
	struct vrdma_chunk *c;
	bool a_copied = false;
	unsigned i;
	int rc;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->start = s;
	c->end = e;
	c->fd = -1;
	rc = maps_lookup(s, e, &c->pieces, &c->npieces);
	if (rc < 0)
		goto fail;
	c->fd = memfd_create("vrdma-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (ftruncate(c->fd, (off_t)(e - s)) < 0) {
		rc = -errno;
		goto fail;
	}
	/* A chunk never changes size: sealed, so the back-end knows it cannot
	 * be truncated under it. */
	(void)fcntl(c->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	{
		struct convert_arg a = { .c = c, .rc = -EINTR };
		int r;

		guard_arm(s, e);
		r = side_run(convert_task, &a, sizeof(a));
		if (r == -ECHILD) {
			/* died part way: every piece as it was, parked writers
			 * on (before anything here may take a lock they hold) */
			unhold(c, 0, c->npieces);
			vrdma_mem_guard_close();
			(void)make_private(s, e, c->fd);
		}
		if (r < 0) {
			rc = r;
			goto fail;
		}
		rc = a.rc;
		i = a.done;
		a_copied = a.copied;
	}
	if (rc < 0 && !a_copied)
		goto fail; /* nothing swapped */
	if (i < c->npieces) {
		/* Undo the pieces already swapped (and the failed one, which
		 * MAP_FIXED may have unmapped): same contents, private again. */
		LOG_ERR("vrdma: mapping shared pages over %#lx failed: %s",
			(unsigned long)s, strerror(-rc));
		if (make_private(s, c->pieces[i].end, c->fd) < 0)
			LOG_ERR("vrdma: could not restore %#lx-%#lx", (unsigned long)s,
				(unsigned long)c->pieces[i].end);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	chunk_free(c);
	return rc;
}

/* [s, e) inside the allocator's heap (start hs, memfd hfd): a chunk that
 * shares the heap's pages as they are. */
static int chunk_create_heap(uintptr_t s, uintptr_t e, uintptr_t hs, int hfd,
			     struct vrdma_chunk **out)
{
	struct vrdma_chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->start = s;
	c->end = e;
	c->heap = true;
	c->off = s - hs;
	c->fd = fcntl(hfd, F_DUPFD_CLOEXEC, 0);
	if (c->fd < 0) {
		int rc = -errno;

		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* A chunk that is in no table any more: give its pages back (copy path). */
static void chunk_discard(struct vrdma_chunk *c)
{
	if (!c->heap && make_private(c->start, c->end, c->fd) < 0)
		LOG_WARN("vrdma: %#lx-%#lx stays shared memory (could not make it private)",
			 (unsigned long)c->start, (unsigned long)c->end);
	chunk_free(c);
}

/* Last reference gone: private again, out of the table. */
static void chunk_release(struct vrdma_chunk *c)
{
	unsigned i;

	for (i = 0; i < reg.n; i++)
		if (reg.v[i] == c)
			break;
	if (i < reg.n) {
		memmove(&reg.v[i], &reg.v[i + 1], (reg.n - i - 1) * sizeof(reg.v[0]));
		reg.n--;
	}
	chunk_discard(c);
}

static int reg_insert(struct vrdma_chunk *c)
{
	unsigned i;

	if (reg.n == reg.cap) {
		unsigned cap = reg.cap ? reg.cap * 2 : 16;
		struct vrdma_chunk **v = realloc(reg.v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		reg.v = v;
		reg.cap = cap;
	}
	for (i = 0; i < reg.n && reg.v[i]->start < c->start; i++)
		;
	memmove(&reg.v[i + 1], &reg.v[i], (reg.n - i) * sizeof(reg.v[0]));
	reg.v[i] = c;
	reg.n++;
	return 0;
}

/* Index of the first chunk whose end is above addr. */
static unsigned reg_first_after(uintptr_t addr)
{
	unsigned lo = 0, hi = reg.n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (reg.v[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Per-device reference: the first one announces the chunk. */
static int chunk_dev_get(struct vrdma_chunk *c, struct vrdma_dev *dev)
{
	struct vrdma_chunk_dev *d;
	int rc;

	for (unsigned i = 0; i < c->ndevs; i++) {
		if (c->devs[i].dev == dev) {
			c->devs[i].refs++;
			return 0;
		}
	}
	d = realloc(c->devs, (c->ndevs + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->devs = d;
	rc = vrdma_mreg_add(dev, c->start, c->end - c->start, c->fd, c->off);
	if (rc < 0)
		return rc;
	c->devs[c->ndevs].dev = dev;
	c->devs[c->ndevs].refs = 1;
	c->ndevs++;
	return 0;
}

static int chunk_dev_put(struct vrdma_chunk *c, struct vrdma_dev *dev)
{
	int rc = 0;

	for (unsigned i = 0; i < c->ndevs; i++) {
		if (c->devs[i].dev != dev)
			continue;
		if (--c->devs[i].refs == 0) {
			if (!vrdma_dev_is_dead(dev))
				rc = vrdma_mreg_remove(dev, c->start, c->end - c->start);
			c->devs[i] = c->devs[--c->ndevs];
		}
		break;
	}
	return rc;
}

static int chunk_put(struct vrdma_chunk *c, struct vrdma_dev *dev)
{
	int rc = chunk_dev_put(c, dev);

	if (--c->refs == 0)
		chunk_release(c);
	return rc;
}

static int share_add_chunk(struct vrdma_mem_share *sh, struct vrdma_chunk *c)
{
	struct vrdma_chunk **v;
	int rc;

	v = realloc(sh->chunks, (sh->nchunks + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sh->chunks = v;
	rc = chunk_dev_get(c, sh->dev);
	if (rc < 0)
		return rc;
	c->refs++;
	sh->chunks[sh->nchunks++] = c;
	return 0;
}

/* Drop every chunk of sh (registry lock held). Returns the first error. */
static int share_drop(struct vrdma_mem_share *sh)
{
	int rc = 0, r;

	for (unsigned i = 0; i < sh->nchunks; i++) {
		r = chunk_put(sh->chunks[i], sh->dev);
		if (r < 0 && rc == 0)
			rc = r;
	}
	free(sh->chunks);
	sh->chunks = NULL;
	sh->nchunks = 0;
	return rc;
}

static void share_unlink(struct vrdma_mem_share *sh)
{
	struct vrdma_dev *dev = sh->dev;

	if (sh->prev)
		sh->prev->next = sh->next;
	else
		dev->shares = sh->next;
	if (sh->next)
		sh->next->prev = sh->prev;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * Until the child has its private copies, the copy-path pages are shared
 * between parent and child. The parent's handler therefore waits (pipe) for
 * the child's handler to finish, and the child converts them first, with
 * no allocation (glibc's heap may be among them) and from the chunks' own
 * piece lists (the mappings are those of the parent at fork time).
 */
static int fork_pipe[2] = { -1, -1 };

static void atfork_prepare(void)
{
	pthread_mutex_lock(&reg.lock);
	fork_pipe[0] = fork_pipe[1] = -1;
	for (unsigned i = 0; i < reg.n; i++) {
		if (!reg.v[i]->heap) {
			if (pipe2(fork_pipe, O_CLOEXEC) < 0)
				fork_pipe[0] = fork_pipe[1] = -1;
			break;
		}
	}
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
	pthread_mutex_unlock(&reg.lock);
}

/* Whether all of [s, e) is mapped (mincore fails with ENOMEM on holes). */
static bool range_mapped(uintptr_t s, uintptr_t e)
{
	static unsigned char vec[256];
	size_t step = sizeof(vec) * page_size();

	for (uintptr_t a = s; a < e; a += step)
		if (mincore((void *)a, MIN(step, e - a), vec) < 0 && errno == ENOMEM)
			return false;
	return true;
}

/* Whether the object [p, p + n) is mapped. */
static bool obj_mapped(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page_size() - 1);

	return range_mapped(a, (uintptr_t)p + n);
}

/* Chunk i of the registry if the child has it (and its piece list). */
static struct vrdma_chunk *child_chunk(unsigned i)
{
	struct vrdma_chunk *c;

	if (!obj_mapped(&reg.v[i], sizeof(reg.v[i])))
		return NULL;
	c = reg.v[i];
	if (!obj_mapped(c, sizeof(*c)) ||
	    (c->npieces && !obj_mapped(c->pieces, c->npieces * sizeof(c->pieces[0]))))
		return NULL;
	return c;
}

static void atfork_child(void)
{
	/*
	 * A program may have marked registered ranges MADV_DONTFORK
	 * (ibv_dontfork_range), so the child may lack them, and with them whatever else lay on those pages (our
	 * own records too, when they sit in glibc's heap next to a registered
	 * small block): nothing is read here without checking it is mapped.
	 * Only pieces the child inherited are converted (mapping anything
	 * over a hole would be wrong); all are checked before converting any
	 * (a conversion maps memory).
	 */
	for (unsigned i = 0; i < reg.n; i++) {
		struct vrdma_chunk *c = child_chunk(i);

		for (unsigned j = 0; c && !c->heap && j < c->npieces; j++)
			if (!range_mapped(c->pieces[j].start, c->pieces[j].end))
				c->pieces[j].prot = -1;
	}
	for (unsigned i = 0; i < reg.n; i++) {
		struct vrdma_chunk *c = child_chunk(i);

		for (unsigned j = 0; c && !c->heap && j < c->npieces; j++) {
			const struct vrdma_piece *p = &c->pieces[j];

			/* Still the parent's pages if this fails: better no access
			 * than writes into the parent's memory. */
			if (p->prot != -1 &&
			    make_private_piece(p->start, p->end, c->fd, p->start - c->start,
					       p->prot) < 0 &&
			    mprotect((void *)p->start, p->end - p->start, PROT_NONE) == 0)
				LOG_ERR("vrdma: fork: %#lx-%#lx could not be made the child's own; "
					"no access to it in the child", (unsigned long)p->start,
					(unsigned long)p->end);
		}
	}
	if (fork_pipe[1] >= 0) {
		if (write(fork_pipe[1], "", 1) < 0) {
			/* the parent then sees EOF */
		}
		close(fork_pipe[0]);
		close(fork_pipe[1]);
	}
	/* The records are the parent's: close our copies of the fds, but do
	 * not free() them: pages of glibc's heap registered by the parent
	 * may be missing here (MADV_DONTFORK), and the allocator's lists may
	 * run through them. The few bytes stay allocated in the child. */
	for (unsigned i = 0; i < reg.n; i++) {
		struct vrdma_chunk *c = child_chunk(i);

		if (c)
			close(c->fd);
	}
	reg.n = 0;
	reg.cap = 0;
	reg.v = NULL;
	for (struct vrdma_dev *d = reg.devs; d && obj_mapped(d, sizeof(*d)); d = d->next_dev) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int fd = vhost_client_fd(&d->vc);

		/* Our copy of the connection must not keep it open. */
		if (fd >= 0) {
			if (s >= 0)
				dup2(s, fd);
			else
				close(fd);
		}
		if (s >= 0)
			close(s);
		atomic_store(&d->dead, true);
		d->shares = NULL; /* handles are the parent's */
	}
	reg.devs = NULL;
	pthread_mutex_unlock(&reg.lock);
}

static void atfork_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void vrdma_mem_dev_register(struct vrdma_dev *dev)
{
	pthread_once(&atfork_once, atfork_init);
	pthread_mutex_lock(&reg.lock);
	dev->next_dev = reg.devs;
	reg.devs = dev;
	dev->registered = true;
	pthread_mutex_unlock(&reg.lock);
}

void vrdma_mem_dev_unregister(struct vrdma_dev *dev)
{
	pthread_mutex_lock(&reg.lock);
	while (dev->shares) {
		struct vrdma_mem_share *sh = dev->shares;

		share_unlink(sh);
		share_drop(sh);
		free(sh);
	}
	if (dev->registered) {
		for (struct vrdma_dev **pp = &reg.devs; *pp; pp = &(*pp)->next_dev) {
			if (*pp == dev) {
				*pp = dev->next_dev;
				break;
			}
		}
		dev->registered = false;
	}
	pthread_mutex_unlock(&reg.lock);
}

/* ---- public API ------------------------------------------------------------ */

int vrdma_mem_share(struct vrdma_dev *dev, void *addr, size_t len,
		    struct vrdma_mem_share **out)
{
	uintptr_t a = (uintptr_t)addr, s, e, cur;
	struct vrdma_mem_share *sh;
	size_t ps = page_size();
	int rc = 0;

	if (!dev || !out || !addr || len == 0 || a + len < a || a + len > UINTPTR_MAX - ps)
		return -EINVAL;
	s = a & ~(uintptr_t)(ps - 1);
	e = ALIGN_UP(a + len, (uintptr_t)ps);

	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh->dev = dev;
	sh->start = s;
	sh->end = e;

	pthread_once(&atfork_once, atfork_init);
	vrdma_dev_lock(dev);
	if (vrdma_dev_is_dead(dev)) {
		rc = -ENOTCONN;
		goto unlock_dev;
	}
	/* Our own arenas are shared already. */
	if (vrdma_shm_contains(dev, addr, len))
		goto link;

	pthread_mutex_lock(&reg.lock);
	cur = s;
	for (unsigned i = reg_first_after(s); cur < e;) {
		struct vrdma_chunk *c = i < reg.n ? reg.v[i] : NULL;

		if (c && c->start <= cur) {
			/* Already converted: reuse. */
			rc = share_add_chunk(sh, c);
			if (rc < 0)
				break;
			cur = c->end;
			i++;
			continue;
		}
		/* Gap up to the next chunk (or the end): a heap chunk for the
		 * part in the allocator's heap, a converted one elsewhere. */
		{
			uintptr_t ge = c ? MIN(c->start, e) : e, hs = 0, he = 0;
			struct vrdma_chunk *n = NULL;
			int hfd = -1;
			bool heap = heap_get(&hs, &he, &hfd);

			if (heap && cur >= hs && cur < he) {
				ge = MIN(ge, he);
				rc = chunk_create_heap(cur, ge, hs, hfd, &n);
			} else {
				if (heap && hs > cur && hs < ge)
					ge = hs;
				rc = chunk_create(cur, ge, &n);
			}
			if (rc < 0)
				break;
			rc = reg_insert(n);
			if (rc < 0) {
				chunk_discard(n);
				break;
			}
			rc = share_add_chunk(sh, n);
			if (rc < 0) {
				if (n->refs == 0)
					chunk_release(n);
				break;
			}
			cur = ge;
			/* n now sits at index i: step over it. */
			i++;
		}
	}
	if (rc < 0) {
		share_drop(sh);
		pthread_mutex_unlock(&reg.lock);
		goto unlock_dev;
	}
	pthread_mutex_unlock(&reg.lock);
link:
	sh->next = dev->shares;
	if (dev->shares)
		dev->shares->prev = sh;
	dev->shares = sh;
	vrdma_dev_unlock(dev);
	*out = sh;
	return 0;

unlock_dev:
	vrdma_dev_unlock(dev);
	free(sh);
	return rc;
}

int vrdma_mem_unshare(struct vrdma_mem_share *sh)
{
	struct vrdma_dev *dev;
	int rc;

	if (!sh)
		return -EINVAL;
	dev = sh->dev;
	vrdma_dev_lock(dev);
	pthread_mutex_lock(&reg.lock);
	share_unlink(sh);
	rc = share_drop(sh);
	pthread_mutex_unlock(&reg.lock);
	vrdma_dev_unlock(dev);
	free(sh);
	return rc;
}
