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
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libvrdma/mem_guard.h"

/* state: conversions begun << 1 | 1 while one holds pages. One word, so a
 * thread sees a conversion's number and whether it holds in one load. */
#define GUARD_HOLDING 1u

static struct {
	_Atomic uint32_t state;   /* futex word */
	_Atomic uint32_t side;    /* the side task's tid while it holds */
	_Atomic uint32_t parked;  /* writers parked so far (futex word too) */
	uint32_t parked_at_open;
	bool probe_held;          /* this conversion holds the test's probe */
	_Atomic bool installed;   /* the handler went in once */
	_Atomic bool armed;       /* it is the installed SIGSEGV handler now */
	struct sigaction prev;    /* the action it found */
} guard;

_Atomic uintptr_t vrdma_mem_guard_park_probe;

/* The conversion (its state, not holding) in which this thread was last let
 * try again: a second fault in the same one is a real one. Initial-exec: a
 * signal handler must not allocate TLS. */
static __thread uint32_t guard_retried __attribute__((tls_model("initial-exec")));

static long sys_futex(_Atomic uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static bool handler_is(const struct sigaction *sa, void (*fn)(int, siginfo_t *, void *))
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == fn;
}

static bool action_is_default(const struct sigaction *sa, bool *ign)
{
	void *h = (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;

	*ign = h == (void *)SIG_IGN;
	return h == (void *)SIG_DFL || *ign;
}

/* Hands the signal to the action found when the handler went in, as the
 * kernel would have: its mask, SA_RESETHAND, SA_NODEFER. */
static void guard_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &guard.prev;
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t mask;
	bool ign;

	if (action_is_default(p, &ign)) {
		/* Ignored: a sent one is dropped; a fault cannot be ignored.
		 * Default: a fault comes again on return and kills, a sent one
		 * is sent again (SA_NODEFER: delivered at once). */
		if (ign && si->si_code <= 0)
			return;
		sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0 || si->si_code == SI_KERNEL)
			syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		return;
	}
	mask = p->sa_mask;
	if (!(p->sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (p->sa_flags & SA_RESETHAND)
		sigaction(sig, &dfl, NULL);
	if (p->sa_flags & SA_SIGINFO)
		p->sa_sigaction(sig, si, uc);
	else
		p->sa_handler(sig);
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
	if ((st & GUARD_HOLDING) && (uint32_t)syscall(SYS_gettid) == atomic_load(&guard.side)) {
		uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);

		syscall(SYS_mprotect, (uintptr_t)si->si_addr & ~(ps - 1), ps,
			PROT_READ | PROT_WRITE);
		return true;
	}
	/* Parked once per conversion it waits in (it may sleep through the
	 * end of one and the start of the next); a test may wait for that. */
	for (; st & GUARD_HOLDING; st = atomic_load(&guard.state)) {
		if (st != counted) {
			counted = st;
			atomic_fetch_add(&guard.parked, 1);
			if (atomic_load(&vrdma_mem_guard_park_probe))
				sys_futex(&guard.parked, FUTEX_WAKE_PRIVATE, INT_MAX);
		}
		sys_futex(&guard.state, FUTEX_WAIT_PRIVATE, st);
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

int vrdma_mem_guard_arm(void)
{
	struct sigaction cur, sa = { .sa_sigaction = guard_segv,
				     .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART };
	bool ign;

	if (sigaction(SIGSEGV, NULL, &cur) < 0)
		return -errno;
	if (handler_is(&cur, guard_segv)) {
		atomic_store(&guard.armed, true);
		return 0;
	}
	/* Once in front of the action found first. A handler the program
	 * put since may call ours in turn: we do not go in front of it. */
	if (atomic_load(&guard.installed) && !action_is_default(&cur, &ign)) {
		atomic_store(&guard.armed, false);
		return -EBUSY;
	}
	guard.prev = cur;
	sigemptyset(&sa.sa_mask);
	/* ASan may refuse the change without saying so: read it back. */
	if (sigaction(SIGSEGV, &sa, NULL) < 0 || sigaction(SIGSEGV, NULL, &cur) < 0 ||
	    !handler_is(&cur, guard_segv)) {
		atomic_store(&guard.armed, false);
		return -EPERM;
	}
	atomic_store(&guard.installed, true);
	atomic_store(&guard.armed, true);
	return 0;
}

void vrdma_mem_guard_open(void)
{
	uint32_t st = atomic_load(&guard.state);

	guard.parked_at_open = atomic_load(&guard.parked);
	guard.probe_held = false;
	atomic_store(&guard.side, (uint32_t)syscall(SYS_gettid));
	atomic_store(&guard.state, (st & ~GUARD_HOLDING) + 2 + GUARD_HOLDING);
}

int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot)
{
	uintptr_t probe = atomic_load(&vrdma_mem_guard_park_probe);

	if (!(prot & PROT_WRITE) || !atomic_load(&guard.armed))
		return 0;
	if (syscall(SYS_mprotect, s, e - s, prot & ~PROT_WRITE) < 0)
		return -errno;
	if (probe >= s && probe < e)
		guard.probe_held = true;
	return 0;
}

void vrdma_mem_guard_copying(void)
{
	uint32_t p = guard.parked_at_open;

	if (guard.probe_held)
		while (atomic_load(&guard.parked) == p)
			sys_futex(&guard.parked, FUTEX_WAIT_PRIVATE, p);
}

void vrdma_mem_guard_close(void)
{
	uint32_t st = atomic_load(&guard.state);

	if (!(st & GUARD_HOLDING))
		return;
	atomic_store(&guard.side, 0);
	atomic_store(&guard.state, st & ~GUARD_HOLDING);
	sys_futex(&guard.state, FUTEX_WAKE_PRIVATE, INT_MAX);
}

uint32_t vrdma_mem_guard_parked(void)
{
	return atomic_load(&guard.parked);
}
