/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Holding other threads' writes off a range while mem_share.c copies it and
 * maps the copy over it (docs/design.md, "Registering private memory").
 */
#ifndef VRDMA_LIBVRDMA_MEM_GUARD_H
#define VRDMA_LIBVRDMA_MEM_GUARD_H

#include <stdint.h>

/* Makes sure the SIGSEGV handler that parks writers is installed (chaining
 * to the one found). Call from the registering thread before the side task
 * runs; 0 or -errno. */
int vrdma_mem_guard_arm(void);

/* The rest from the side task only (raw system calls, see mem_share.c).
 * [s, e) is about to be copied and swapped: from now on a thread that
 * writes to a held piece of it waits until vrdma_mem_guard_close, then its
 * write lands in the new pages. */
void vrdma_mem_guard_open(uintptr_t s, uintptr_t e);

/* Holds the piece [s, e) of protection prot: read-only until the swap maps
 * the new pages with prot (or the caller puts prot back). 0 or -errno. */
int vrdma_mem_guard_hold(uintptr_t s, uintptr_t e, int prot);

/* The swap is done or given up (held pieces not swapped got their
 * protection back): parked writers go on. */
void vrdma_mem_guard_close(void);

#endif
