/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma's CQ poll yields (vrdma_cq_spin_after_yield): a long yield that
 * found little of the CQ's work queued opens a spin window, as long as the
 * yield and doubling while such yields repeat, bounded; a long yield that
 * found a batch closes it; a short one changes nothing, unless it ended a
 * wait that spun out its budget inside the window: that closes it.
 */
#include "harness.h"
#include "libvrdma/rdma_priv.h"

static void test_spin_window(void)
{
	const uint64_t lng = VRDMA_CQ_YIELD_LONG_NS, max = VRDMA_CQ_SPIN_MAX_NS;
	uint64_t spin = 0;

	/* Short yields: the machine had nothing else to run. */
	CHECK_EQ(vrdma_cq_spin_after_yield(0, lng - 1, 0, false), 0);
	CHECK_EQ(vrdma_cq_spin_after_yield(5000, 1000, 0, false), 5000);

	/* A slice went elsewhere while one message was awaited. */
	spin = vrdma_cq_spin_after_yield(spin, 3 * lng, 1, false);
	CHECK_EQ(spin, 3 * lng);
	spin = vrdma_cq_spin_after_yield(spin, lng, VRDMA_CQ_YIELD_BATCH - 1, false);
	CHECK_EQ(spin, 6 * lng);
	/* A yield longer than twice the window sets it. */
	spin = vrdma_cq_spin_after_yield(spin, 20 * lng, 0, false);
	CHECK_EQ(spin, 20 * lng);
	for (int i = 0; i < 64; i++)
		spin = vrdma_cq_spin_after_yield(spin, lng, 0, false);
	CHECK_EQ(spin, max);
	CHECK_EQ(vrdma_cq_spin_after_yield(0, UINT64_MAX, 0, false), max);

	/* The device was working through a queue of this CQ's work. */
	CHECK_EQ(vrdma_cq_spin_after_yield(spin, lng, VRDMA_CQ_YIELD_BATCH, false), 0);
	CHECK_EQ(vrdma_cq_spin_after_yield(spin, 10 * lng, 1000, false), 0);
}

/* A wait that spun out its budget inside a window, then yielded. */
static void test_spin_wait_spent(void)
{
	const uint64_t lng = VRDMA_CQ_YIELD_LONG_NS, max = VRDMA_CQ_SPIN_MAX_NS;

	/* A short yield then: what the CQ waits for ran on this CPU, which
	 * the spinning kept from it. The window closes. */
	CHECK_EQ(vrdma_cq_spin_after_yield(4 * lng, lng - 1, 0, true), 0);
	CHECK_EQ(vrdma_cq_spin_after_yield(max, 0, 0, true), 0);
	/* A long one: another program's slice, as without the spin. */
	CHECK_EQ(vrdma_cq_spin_after_yield(4 * lng, lng, 1, true), 8 * lng);
	CHECK_EQ(vrdma_cq_spin_after_yield(4 * lng, lng, VRDMA_CQ_YIELD_BATCH, true), 0);
	CHECK_EQ(vrdma_cq_spin_after_yield(max, 3 * lng, 0, true), max);
}

int main(void)
{
	TEST_PROGRAM("test_libvrdma_cq");
	RUN(test_spin_window);
	RUN(test_spin_wait_spent);
	return TEST_DONE();
}
