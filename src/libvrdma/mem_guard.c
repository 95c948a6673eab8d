// SPDX-License-Identifier: BSD-3-Clause
/*
 * Registering private memory copies its pages into a memfd and maps the
 * memfd over them (mem_share.c); giving them back copies the other way. A
 * write by another thread between the copy and the swap would be lost: a
 * lock word, a counter, a queue index. So the writable pages are read-only
 * meanwhile, and a thread that writes there takes SIGSEGV: the handler here
 * parks it until the swap is done and returns, so the write is done again,
 * into the new pages (docs/design.md, "Registering private memory").
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libvrdma/mem_guard.h"

/* state: conversions begun << 1 | 1 while one holds pages. One word, so a
 * thread sees a conversion's number and whether it holds in one load. */
#define GUARD_HOLDING 1u
/* Pieces a conversion holds at most (more are left writable, as before). */
#define GUARD_PIECES 32

static struct {
	_Atomic uint32_t state;   /* futex word */
	_Atomic uint32_t side;    /* the side task's tid while it holds */
	_Atomic uint32_t parked;  /* writers parked so far (futex word too) */
	uint32_t parked_at_open;
	bool probe_held;          /* this conversion holds the test's probe */
	_Atomic bool installed;   /* the handler went in once */
	_Atomic bool armed;       /* it is the installed SIGSEGV handler now */
	_Atomic uint32_t *mark;   /* 1 in a MADV_WIPEONFORK page (0: forked since) */
	long blocker;             /* the last thread found blocking SIGSEGV */
	unsigned nheld;           /* this conversion's held pieces */
	struct { uintptr_t s, e; int prot; } held[GUARD_PIECES];
	/* The action found, in two slots: a re-arm writes the one no handler
	 * is reading, then switches. */
	struct sigaction prev[2];
	_Atomic unsigned prev_i;
} guard;

_Atomic uintptr_t vrdma_mem_guard_park_probe;

/* The conversion (its state, not holding) in which this thread was last let
 * try again: a second fault in the same one is a real one. Initial-exec: a
 * signal handler must not allocate TLS. */
static __thread uint32_t guard_retried __attribute__((tls_model("initial-exec")));

/* A system call that never writes errno (its page may be held, and the side
 * task runs with the registering thread's TLS): the result or -errno. */
static long guard_sys4(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
						  x2 __asm__("x2") = c, x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#else
	int saved = errno;
	long r = syscall(nr, a, b, c, d);

	if (r < 0) {
		r = -errno;
		errno = saved;
	}
	return r;
#endif
}

static long guard_sys(long nr, long a, long b, long c)
{
	return guard_sys4(nr, a, b, c, 0);
}

/* (FUTEX_WAIT without a timeout: the fourth argument is NULL) */
static long guard_futex(_Atomic uint32_t *w, int op, uint32_t val)
{
	return guard_sys4(SYS_futex, (long)w, op, (long)val, 0);
}

static bool handler_is(const struct sigaction *sa, void (*fn)(int, siginfo_t *, void *))
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == fn;
}

static void *action_fn(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
}

static bool action_is_default(const struct sigaction *sa, bool *ign)
{
	void *h = action_fn(sa);

	*ign = h == (void *)SIG_IGN;
	return h == (void *)SIG_DFL || *ign;
}

/* Hands the signal to the action found when the handler went in, as the
 * kernel would have: its mask, SA_RESETHAND, SA_NODEFER. */
static void guard_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction p = guard.prev[atomic_load(&guard.prev_i) & 1];
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t mask;
	bool ign;

	if (action_is_default(&p, &ign)) {
		/* Ignored: a sent one is dropped; a fault cannot be ignored.
		 * Default: a fault comes again on return and kills, a sent one
		 * is sent again (SA_NODEFER: delivered at once). */
		if (ign && si->si_code <= 0)
			return;
		sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0 || si->si_code == SI_KERNEL)
			guard_sys(SYS_tgkill, guard_sys(SYS_getpid, 0, 0, 0),
				  guard_sys(SYS_gettid, 0, 0, 0), sig);
		return;
	}
	mask = p.sa_mask;
	if (!(p.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (p.sa_flags & SA_RESETHAND)
		sigaction(sig, &dfl, NULL);
	/* (a plain handler gets all three too, as from the kernel: some are
	 * declared with them) */
	((void (*)(int, siginfo_t *, void *))action_fn(&p))(sig, si, uc);
}

/* In a child forked (without fork()'s handlers) while its parent held
 * pages: nobody will end the conversion here, so every held piece gets its
 * protection back at once. False if this is not such a child: the marker
 * page is wiped in a forked child only, not in a task sharing our memory
 * (vfork's child), which parks like a thread. */
static bool guard_forked_release(void)
{
	if (!guard.mark || atomic_load(guard.mark))
		return false;
	for (unsigned i = 0; i < guard.nheld; i++)
		guard_sys(SYS_mprotect, (long)guard.held[i].s,
			  (long)(guard.held[i].e - guard.held[i].s), guard.held[i].prot);
	guard.nheld = 0;
	atomic_store(&guard.state, atomic_load(&guard.state) & ~GUARD_HOLDING);
	return true;
}

/* Whether the faulting access should just be tried again: a write held
 * off by a conversion (parked here until it ends), or one that may have
 * been and reached us late (once per thread and conversion). */
static bool guard_retry(const siginfo_t *si)
{
	uint32_t st, counted = 0;

	if (si->si_code != SEGV_ACCERR)
		return false;
	st = atomic_load(&guard.state);
	/* The side task itself (errno lies in the registering thread's TLS,
	 * which may be in the range): that page becomes writable. */
	if ((st & GUARD_HOLDING) &&
	    (uint32_t)guard_sys(SYS_gettid, 0, 0, 0) == atomic_load(&guard.side)) {
		uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);

		return guard_sys(SYS_mprotect, (long)((uintptr_t)si->si_addr & ~(ps - 1)), (long)ps,
				 PROT_READ | PROT_WRITE) == 0;
	}
	if ((st & GUARD_HOLDING) && guard_forked_release())
		return true;
	/* Parked once per conversion it waits in (it may sleep through the
	 * end of one and the start of the next); a test may wait for that. */
	for (; st & GUARD_HOLDING; st = atomic_load(&guard.state)) {
		if (st != counted) {
			counted = st;
			atomic_fetch_add(&guard.parked, 1);
			if (atomic_load(&vrdma_mem_guard_park_probe))
				guard_futex(&guard.parked, FUTEX_WAKE_PRIVATE, INT_MAX);
		}
		guard_futex(&guard.state, FUTEX_WAIT_PRIVATE, st);
	}
	if (guard_retried == st)
		return false;
	guard_retried = st;
	return true;
}

static void guard_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (!guard_retry(si))
		guard_chain(sig, si, uc);
	errno = saved;
}

long vrdma_mem_guard_blocker(void)
{
	long self = syscall(SYS_gettid), found = 0;
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;

	if (!dir)
		return 0;
	while (!found && (de = readdir(dir))) {
		char path[64], line[128];
		long tid = strtol(de->d_name, NULL, 10);
		FILE *f;

		if (tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
		f = fopen(path, "re");
		if (!f)
			continue; /* gone meanwhile */
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "SigBlk:", 7))
				continue;
			if ((strtoull(line + 7, NULL, 16) >> (SIGSEGV - 1)) & 1)
				found = tid;
			break;
		}
		fclose(f);
	}
	closedir(dir);
	return found;
}

int vrdma_mem_guard_arm(long *blocker)
{
	struct sigaction cur, old, sa = { .sa_sigaction = guard_segv,
					  .sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART };
	unsigned slot;
	bool ign;

	*blocker = 0;
	atomic_store(&guard.armed, false);
	if (!guard.mark) {
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		void *m = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return -errno;
		/* (without it a raw fork's child cannot be told apart: it
		 * would park for good, so nothing is held) */
		if (madvise(m, ps, MADV_WIPEONFORK) < 0) {
			int rc = -errno;

			munmap(m, ps);
			return rc;
		}
		guard.mark = m;
	}
	atomic_store(guard.mark, 1);
	if (sigaction(SIGSEGV, NULL, &cur) < 0)
		return -errno;
	if (!handler_is(&cur, guard_segv)) {
		/* Once in front of the action found first. A handler the
		 * program put since may call ours in turn: we do not go in
		 * front of it. */
		if (atomic_load(&guard.installed) && !action_is_default(&cur, &ign))
			return -EBUSY;
		slot = !(atomic_load(&guard.prev_i) & 1);
		guard.prev[slot] = cur;
		atomic_store(&guard.prev_i, slot);
		/* on the alternate stack only if that action wanted it (a
		 * thread's alternate stack may lie in a held page) */
		sa.sa_flags |= cur.sa_flags & SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, &old) < 0)
			return -errno;
		if (action_fn(&old) != action_fn(&cur) || old.sa_flags != cur.sa_flags) {
			/* the program changed it meanwhile */
			if (atomic_load(&guard.installed) && !action_is_default(&old, &ign)) {
				sigaction(SIGSEGV, &old, NULL);
				return -EBUSY;
			}
			slot = !slot;
			guard.prev[slot] = old;
			atomic_store(&guard.prev_i, slot);
			if ((old.sa_flags ^ sa.sa_flags) & SA_ONSTACK) {
				sa.sa_flags ^= SA_ONSTACK;
				if (sigaction(SIGSEGV, &sa, NULL) < 0)
					return -errno;
			}
		}
		/* ASan may refuse the change without saying so: read it back. */
		if (sigaction(SIGSEGV, NULL, &cur) < 0 || !handler_is(&cur, guard_segv))
			return -EPERM;
		atomic_store(&guard.installed, true);
	}
	/* (a thread being created or ending has every signal blocked for a
	 * moment: only one that still does after many looks counts; one seen
	 * so before counts at once) */
	*blocker = vrdma_mem_guard_blocker();
	for (int look = 0; look < 64 && *blocker && *blocker != guard.blocker; look++) {
		sched_yield();
		*blocker = vrdma_mem_guard_blocker();
	}
	if (*blocker) {
		guard.blocker = *blocker;
		return -EDEADLK;
	}
	atomic_store(&guard.armed, true);
	return 0;
}

void vrdma_mem_guard_open(void)
{
	uint32_t st = atomic_load(&guard.state);

	guard.parked_at_open = atomic_load(&guard.parked);
	guard.probe_held = false;
	guard.nheld = 0;
	atomic_store(&guard.side, (uint32_t)guard_sys(SYS_gettid, 0, 0, 0));
	atomic_store(&guard.state, (st & ~GUARD_HOLDING) + 2 + GUARD_HOLDING);
}

int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot)
{
	uintptr_t probe = atomic_load(&vrdma_mem_guard_park_probe);
	long rc;

	if (!(prot & PROT_WRITE) || !atomic_load(&guard.armed) || guard.nheld == GUARD_PIECES)
		return 0;
	guard.held[guard.nheld].s = s;
	guard.held[guard.nheld].e = e;
	guard.held[guard.nheld].prot = prot;
	guard.nheld++;
	rc = guard_sys(SYS_mprotect, (long)s, (long)(e - s), prot & ~PROT_WRITE);
	if (rc < 0) {
		guard.nheld--;
		return (int)rc;
	}
	if (probe >= s && probe < e)
		guard.probe_held = true;
	return 0;
}

void vrdma_mem_guard_copying(void)
{
	uint32_t p = guard.parked_at_open;

	if (guard.probe_held)
		while (atomic_load(&guard.parked) == p)
			guard_futex(&guard.parked, FUTEX_WAIT_PRIVATE, p);
}

void vrdma_mem_guard_close(void)
{
	uint32_t st = atomic_load(&guard.state);

	if (!(st & GUARD_HOLDING))
		return;
	guard.nheld = 0;
	atomic_store(&guard.side, 0);
	atomic_store(&guard.state, st & ~GUARD_HOLDING);
	guard_futex(&guard.state, FUTEX_WAKE_PRIVATE, INT_MAX);
}

uint32_t vrdma_mem_guard_parked(void)
{
	return atomic_load(&guard.parked);
}
