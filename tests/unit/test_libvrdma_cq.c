/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma's CQ poll yields (vrdma_cq_spin_yielded): a long yield that
 * found little of the CQ's work queued opens a spin window, as long as the
 * yield and doubling while such yields repeat, bounded; a long yield that
 * found a batch closes it. A wait that spins out its budget inside a window
 * closes it, and no window opens for a calm period that doubles with each
 * such wait in a row.
 */
#include "harness.h"
#include "libvrdma/rdma_priv.h"

#define T0 1000000000000ull /* a clock reading, ns */

static void test_spin_window(void)
{
	const uint64_t lng = VRDMA_CQ_YIELD_LONG_NS, max = VRDMA_CQ_SPIN_MAX_NS;
	struct vrdma_cq_spin s = { 0 };

	/* A slice went elsewhere while one message was awaited. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, 3 * lng, 1, false), T0 + 3 * lng);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, lng, VRDMA_CQ_YIELD_BATCH - 1, false), T0 + 6 * lng);
	/* A yield longer than twice the window sets it. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, 20 * lng, 0, false), T0 + 20 * lng);
	for (int i = 0; i < 64; i++)
		vrdma_cq_spin_yielded(&s, T0, lng, 0, false);
	CHECK_EQ(s.window_ns, max);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, 100 * max, 0, false), T0 + max);

	/* The device was working through a queue of this CQ's work. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, lng, VRDMA_CQ_YIELD_BATCH, false), 0);
	CHECK_EQ(s.window_ns, 0);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, 10 * lng, 1000, false), 0);
	/* A short yield is not a reason to open one. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, T0, lng - 1, 0, false), 0);
	CHECK_EQ(s.spun_out, 0);
}

/* Waits that spun out their budget inside a window. */
static void test_spin_wait_spent(void)
{
	const uint64_t lng = VRDMA_CQ_YIELD_LONG_NS, calm = VRDMA_CQ_CALM_NS;
	struct vrdma_cq_spin s = { 0 };
	uint64_t t = T0;

	CHECK(vrdma_cq_spin_yielded(&s, t, 2 * lng, 1, false) != 0);
	/* What the CQ waited for needed this CPU: the window closes, with a
	 * short yield after the spin or a long one. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t, 10, 0, true), 0);
	CHECK_EQ(s.window_ns, 0);
	CHECK_EQ(s.spun_out, 1);
	/* No window opens in the calm period, one opens after it. */
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t + calm - 1, 5 * lng, 0, false), 0);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t + calm, 5 * lng, 0, false), t + calm + 5 * lng);
	/* Each such wait in a row doubles the calm period. */
	t += calm;
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t, 3 * lng, 0, true), 0);
	CHECK_EQ(s.spun_out, 2);
	CHECK_EQ(s.calm_until_ns, t + 2 * calm);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t, 0, 0, true), 0);
	CHECK_EQ(s.calm_until_ns, t + 4 * calm);
	/* ... up to its bound, however many there were. */
	for (int i = 0; i < 100; i++)
		vrdma_cq_spin_yielded(&s, t, 0, 0, true);
	CHECK_EQ(s.calm_until_ns, t + VRDMA_CQ_CALM_MAX_NS);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t + VRDMA_CQ_CALM_MAX_NS - 1, lng, 0, false), 0);
	/* A wait that ends inside its budget (the poll resets spun_out) starts
	 * the count again. */
	s.spun_out = 0;
	t += VRDMA_CQ_CALM_MAX_NS;
	CHECK(vrdma_cq_spin_yielded(&s, t, lng, 0, false) != 0);
	CHECK_EQ(vrdma_cq_spin_yielded(&s, t, lng, 0, true), 0);
	CHECK_EQ(s.calm_until_ns, t + calm);
}

int main(void)
{
	TEST_PROGRAM("test_libvrdma_cq");
	RUN(test_spin_window);
	RUN(test_spin_wait_spent);
	return TEST_DONE();
}
