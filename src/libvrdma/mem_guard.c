// SPDX-License-Identifier: BSD-3-Clause
/*
 * Registering private memory copies its pages into a memfd and maps the
 * memfd over them (mem_share.c); giving them back copies the other way. A
 * write by another thread between the copy and the swap would be lost: a
 * lock word, a counter, a queue index. So the writable pages are read-only
 * meanwhile, and a thread that writes there takes SIGSEGV: the handler here
 * parks it until the swap is done and returns, so the write is done again,
 * into the new pages. Every other fault goes to the handler found before.
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

struct guard_range {
	_Atomic uintptr_t start, end;
};

static struct {
	struct guard_range now, before; /* this conversion's range, the last one's */
	_Atomic uint32_t busy;          /* futex word: 1 while a range is held */
	_Atomic uint32_t seq;           /* conversions so far */
	_Atomic uint32_t side;          /* the side task's tid while it holds */
	_Atomic bool armed;             /* the handler is installed */
	struct sigaction prev;          /* the handler found when arming */
} guard;

/* Whom the handler let write again in this conversion (tid << 32 | seq): a
 * second fault of the same thread at the same conversion is a real one. */
#define GUARD_RETRY_SLOTS 64
static _Atomic uint64_t guard_retried[GUARD_RETRY_SLOTS];

static bool range_has(const struct guard_range *r, uintptr_t a)
{
	return a >= atomic_load(&r->start) && a < atomic_load(&r->end);
}

static void guard_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &guard.prev;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if ((p->sa_flags & SA_SIGINFO) && (void *)p->sa_sigaction != (void *)SIG_DFL &&
	    (void *)p->sa_sigaction != (void *)SIG_IGN) {
		p->sa_sigaction(sig, si, uc);
		return;
	}
	if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
		p->sa_handler(sig);
		return;
	}
	/* The default action: returning faults again, and that one kills. */
	sigaction(sig, &dfl, NULL);
}

static void guard_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	/* A write that took the fault during the last conversion may arrive
	 * after the next one began: both ranges are ours. */
	if (si->si_code == SEGV_ACCERR && (range_has(&guard.now, a) || range_has(&guard.before, a))) {
		uint32_t tid = (uint32_t)syscall(SYS_gettid);
		uint64_t key = (uint64_t)tid << 32 | atomic_load(&guard.seq);

		/* The side task itself (errno shares the registering thread's
		 * TLS, which may lie in the range): let that page be written. */
		if (tid == atomic_load(&guard.side) && atomic_load(&guard.busy)) {
			long ps = sysconf(_SC_PAGESIZE);

			syscall(SYS_mprotect, a & ~(uintptr_t)(ps - 1), ps, PROT_READ | PROT_WRITE);
			errno = saved;
			return;
		}
		while (atomic_load(&guard.busy))
			syscall(SYS_futex, &guard.busy, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
		if (atomic_exchange(&guard_retried[tid % GUARD_RETRY_SLOTS], key) != key) {
			errno = saved;
			return;
		}
	}
	errno = saved;
	guard_chain(sig, si, uc);
}

int vrdma_mem_guard_arm(void)
{
	struct sigaction cur, sa = { .sa_sigaction = guard_segv,
				     .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };

	if (sigaction(SIGSEGV, NULL, &cur) < 0)
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == guard_segv)
		return 0;
	/* Not ours (never installed, or the program put its own since): that
	 * one is the next in the chain. */
	guard.prev = cur;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) < 0) {
		atomic_store(&guard.armed, false);
		return -errno;
	}
	atomic_store(&guard.armed, true);
	return 0;
}

void vrdma_mem_guard_open(uintptr_t s, uintptr_t e)
{
	atomic_store(&guard.before.start, 0);
	atomic_store(&guard.before.end, atomic_load(&guard.now.end));
	atomic_store(&guard.before.start, atomic_load(&guard.now.start));
	atomic_store(&guard.now.start, 0);
	atomic_store(&guard.now.end, e);
	atomic_store(&guard.now.start, s);
	atomic_fetch_add(&guard.seq, 1);
	atomic_store(&guard.side, (uint32_t)syscall(SYS_gettid));
	atomic_store(&guard.busy, 1);
}

int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot)
{
	if (!(prot & PROT_WRITE) || !atomic_load(&guard.armed))
		return 0;
	if (syscall(SYS_mprotect, s, e - s, prot & ~PROT_WRITE) < 0)
		return -errno;
	return 0;
}

void vrdma_mem_guard_close(void)
{
	atomic_store(&guard.side, 0);
	atomic_store(&guard.busy, 0);
	syscall(SYS_futex, &guard.busy, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
