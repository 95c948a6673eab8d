/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Holding other threads' writes off a range while mem_share.c copies it and
 * maps the copy over it (docs/design.md, "Registering private memory").
 */
#ifndef VRDMA_LIBVRDMA_MEM_GUARD_H
#define VRDMA_LIBVRDMA_MEM_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

/* Makes sure the SIGSEGV handler that parks writers is in front (once in
 * front of the one found first; again if the program put the default
 * back). Call from the registering thread before the side task runs. 0, or
 * -errno and then nothing is held (writes can be lost as before): -EBUSY
 * (a handler the program installed later is in front), -EPERM (refused),
 * -EDEADLK (thread *blocker blocks SIGSEGV: its write to a held page would
 * end the process). */
int vrdma_mem_guard_arm(long *blocker);

/* Another thread of the process that blocks SIGSEGV (its write to a held
 * page would end the process: the kernel does not queue a fault, so while
 * one exists nothing is held): its tid, or 0. */
long vrdma_mem_guard_blocker(void);

/* The rest from the side task only (raw system calls, see mem_share.c).
 * A range is about to be copied and swapped: from now on a thread that
 * writes to a held piece waits until vrdma_mem_guard_close, then its write
 * lands in the new pages. */
void vrdma_mem_guard_open(void);

/* Holds the piece [s, e) of protection prot: read-only until the swap maps
 * the new pages with prot (or the caller puts prot back). 0 or -errno. */
int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot);

/* Everything is held; the copy comes next. */
void vrdma_mem_guard_copying(void);

/* The swap is done or given up (held pieces not swapped got their
 * protection back): parked writers go on. Idempotent. The side task calls
 * it; if it died, the registering thread does, once it has put every piece
 * back. */
void vrdma_mem_guard_close(void);

/* Writers parked so far (all conversions). */
uint32_t vrdma_mem_guard_parked(void);

/* For tests: a copy whose held pages contain this address (0: none) waits
 * until a writer has parked in its window. */
extern _Atomic uintptr_t vrdma_mem_guard_park_probe;

#endif
