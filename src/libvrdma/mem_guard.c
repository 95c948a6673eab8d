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

static struct {
	_Atomic uint32_t busy;    /* futex word: 1 while a range is held */
	_Atomic uint32_t seq;     /* conversions begun */
	_Atomic uint32_t side;    /* the side task's tid while it holds */
	_Atomic uint32_t parked;  /* writers parked so far (futex word too) */
	uint32_t parked_at_open;
	bool held;                /* this conversion made a page read-only */
	_Atomic bool installed;   /* the handler went in once */
	_Atomic bool armed;       /* it is the installed SIGSEGV handler now */
	struct sigaction prev;    /* the handler it found, written once */
} guard;

atomic_bool vrdma_mem_guard_hold_until_parked;

/* The conversion (seq + 1) in which this thread was last let write again:
 * a second fault in the same conversion is a real one. Initial-exec: a
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
	/* The default action. A fault comes again on return and kills; a
	 * signal somebody sent is sent again (SA_NODEFER: delivered now). */
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0 || si->si_code == SI_KERNEL)
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void guard_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uint32_t seq;

	if (si->si_code != SEGV_ACCERR) {
		guard_chain(sig, si, uc);
		errno = saved;
		return;
	}
	/* The side task itself (errno lies in the registering thread's TLS,
	 * which may be in the range): that page becomes writable. */
	if (atomic_load(&guard.busy) && (uint32_t)syscall(SYS_gettid) == atomic_load(&guard.side)) {
		uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);

		syscall(SYS_mprotect, (uintptr_t)si->si_addr & ~(ps - 1), ps,
			PROT_READ | PROT_WRITE);
		errno = saved;
		return;
	}
	if (atomic_load(&guard.busy)) {
		atomic_fetch_add(&guard.parked, 1);
		sys_futex(&guard.parked, FUTEX_WAKE_PRIVATE, INT_MAX);
		while (atomic_load(&guard.busy))
			sys_futex(&guard.busy, FUTEX_WAIT_PRIVATE, 1);
	}
	/* One more try per conversion, whichever it was: the fault may have
	 * come from the last one and reached us late. */
	seq = atomic_load(&guard.seq);
	if (guard_retried != seq + 1) {
		guard_retried = seq + 1;
		errno = saved;
		return;
	}
	guard_chain(sig, si, uc);
	errno = saved;
}

int vrdma_mem_guard_arm(void)
{
	struct sigaction cur, sa = { .sa_sigaction = guard_segv,
				     .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART };

	if (sigaction(SIGSEGV, NULL, &cur) < 0)
		return -errno;
	if (handler_is(&cur, guard_segv)) {
		atomic_store(&guard.armed, true);
		return 0;
	}
	/* Once in front of the handler found first. A handler the program
	 * put since may call ours in turn: we do not go in front of it. */
	if (atomic_load(&guard.installed) && cur.sa_handler != SIG_DFL &&
	    cur.sa_handler != SIG_IGN) {
		atomic_store(&guard.armed, false);
		return -EBUSY;
	}
	if (!atomic_load(&guard.installed))
		guard.prev = cur;
	else
		guard.prev = (struct sigaction){ .sa_handler = SIG_DFL };
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
	atomic_fetch_add(&guard.seq, 1);
	guard.parked_at_open = atomic_load(&guard.parked);
	guard.held = false;
	atomic_store(&guard.side, (uint32_t)syscall(SYS_gettid));
	atomic_store(&guard.busy, 1);
}

int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot)
{
	if (!(prot & PROT_WRITE) || !atomic_load(&guard.armed))
		return 0;
	if (syscall(SYS_mprotect, s, e - s, prot & ~PROT_WRITE) < 0)
		return -errno;
	guard.held = true;
	return 0;
}

void vrdma_mem_guard_copying(void)
{
	uint32_t p = guard.parked_at_open;

	if (atomic_load(&vrdma_mem_guard_hold_until_parked) && guard.held)
		while (atomic_load(&guard.parked) == p)
			sys_futex(&guard.parked, FUTEX_WAIT_PRIVATE, p);
}

void vrdma_mem_guard_close(void)
{
	if (!atomic_load(&guard.busy))
		return;
	atomic_store(&guard.side, 0);
	atomic_store(&guard.busy, 0);
	sys_futex(&guard.busy, FUTEX_WAKE_PRIVATE, INT_MAX);
}

uint32_t vrdma_mem_guard_parked(void)
{
	return atomic_load(&guard.parked);
}
