/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory for tests of the device side: a memfd-backed region added to
 * a vhost_mem table, plus the test's own mapping of the same pages (what the
 * driver would see).
 */
#ifndef VRDMA_TESTS_COMMON_TEST_GUEST_MEM_H
#define VRDMA_TESTS_COMMON_TEST_GUEST_MEM_H

#include <stdint.h>

#include "vhost/vhost_mem.h"

/* Adds bytes of fresh memfd memory at gpa (its user address is gpa too) to
 * mem; returns the test's own view of it, or NULL on failure. */
uint8_t *tc_guest_region(struct vhost_mem *mem, uint64_t gpa, uint64_t bytes);

#endif
