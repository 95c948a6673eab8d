/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Budgets of a device (docs/spec.md "Tenant isolation"): the state-mem=
 * budget is one struct roce_budget charged by the transports of all the
 * device's contexts; the mem= budget is one struct vhost_mem_budget charged
 * by the memory tables of all its contexts (also by regions that outlive
 * their table); a QP's send slots follow its max_send_wr (0: one slot),
 * never the ring's size, so what is charged is what is allocated.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include "../harness.h"
#include "common/log.h"
#include "unit/roce_tp_fake.h"

static struct roce_tq *tq_of(struct fk_dev *d, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);

	return qp ? qp->transport : NULL;
}

static uint32_t qp_raw(struct fk_dev *d, uint32_t pdn, uint32_t cqn, uint32_t send_wr,
		       enum rres_err *err)
{
	struct rres_qp_init in = {
		.pdn = pdn, .qp_type = VIRTIO_IB_QPT_RC, .send_cqn = cqn, .recv_cqn = cqn,
		.cap = { send_wr, 16, 4, 4, 0 },
	};
	struct rres_qp *qp = NULL;

	*err = rres_qp_create(&d->rd, &in, &qp);
	return *err == RRES_OK ? qp->qpn : 0;
}

/* A send ring of 4096 entries does not give a QP 4096 slots: max_send_wr
 * decides, 0 means one. */
static void test_sq_slots_follow_max_send_wr(void)
{
	struct fk_env env;
	struct fk_dev *d;
	uint32_t pd, cq, q0, q100;
	struct roce_tq *t0, *t100;
	enum rres_err e;

	REQUIRE(fk_env_init(&env, false) == 0);
	d = fk_dev_new(&env, &(struct fk_dev_cfg){ 0 });
	pd = fk_pd(d);
	cq = fk_cq(d, 64, 64, false);
	q0 = qp_raw(d, pd, cq, 0, &e);
	CHECK_EQ(e, RRES_OK);
	q100 = qp_raw(d, pd, cq, 100, &e);
	CHECK_EQ(e, RRES_OK);
	fk_ring_setup(d, rres_qp_lookup(&d->rd, q0)->sq_vq, 4096, 64, true);
	fk_ring_setup(d, rres_qp_lookup(&d->rd, q100)->sq_vq, 4096, 64, true);
	t0 = tq_of(d, q0);
	t100 = tq_of(d, q100);
	REQUIRE(t0 && t100);
	CHECK_EQ(t0->sq_slots, 1u);
	CHECK_EQ(t100->sq_slots, 128u);
	/* charged at least what the slots take */
	CHECK((uint64_t)t0->sq_slots * t0->sq_stride <= t0->budget);
	CHECK((uint64_t)t100->sq_slots * t100->sq_stride <= t100->budget);
	CHECK(t0->budget < t100->budget);
	fk_env_fini(&env);
}

/* Two contexts (transports) of one device charge one budget: what one
 * takes, the other cannot; destroys give it back to both. */
static void test_state_budget_shared(void)
{
	struct roce_budget b = { 0 };
	struct fk_env env;
	struct fk_dev *x, *y;
	uint32_t px, py, cx, cy, qps[64], q;
	uint64_t x0, y0;
	unsigned n = 0;
	enum rres_err e;

	REQUIRE(fk_env_init(&env, false) == 0);
	x = fk_dev_new(&env, &(struct fk_dev_cfg){ .qps = 80 });
	y = fk_dev_new(&env, &(struct fk_dev_cfg){ .qps = 80 });
	px = fk_pd(x);
	py = fk_pd(y);
	/* the CQs before the shared budget: only the QPs below charge it */
	cx = fk_cq(x, 16, 16, false);
	cy = fk_cq(y, 16, 16, false);
	b.max = 8 * roce_budget_qp(&(struct rres_qp_cap){ 4096, 16, 4, 4, 0 }, 0) +
		roce_budget_qp(&(struct rres_qp_cap){ 1, 16, 4, 4, 0 }, 0) + 1000;
	roce_tp_share_state_budget(x->tp, &b);
	roce_tp_share_state_budget(y->tp, &b);
	x0 = x->tp->state_mem;
	y0 = y->tp->state_mem;
	while (n < 64 && (q = qp_raw(x, px, cx, 4096, &e)))
		qps[n++] = q;
	CHECK_EQ(n, 8u);
	CHECK_EQ(e, RRES_ERR_NOMEM);
	CHECK(b.used <= b.max);
	CHECK_EQ(x->tp->state_mem - x0, b.used);
	CHECK_EQ(y->tp->state_mem, y0);
	/* the other context, which holds nothing itself, is refused too */
	CHECK_EQ(qp_raw(y, py, cy, 4096, &e), 0u);
	CHECK_EQ(e, RRES_ERR_NOMEM);
	CHECK_EQ(y->tp->stats.state_refused, 1u);
	/* small QPs still fit in what is left */
	q = qp_raw(y, py, cy, 1, &e);
	CHECK_EQ(e, RRES_OK);
	CHECK_EQ(rres_qp_destroy(&y->rd, q), RRES_OK);
	CHECK_EQ(y->tp->state_mem, y0);
	/* one destroy in x makes room in y */
	CHECK_EQ(rres_qp_destroy(&x->rd, qps[--n]), RRES_OK);
	q = qp_raw(y, py, cy, 4096, &e);
	CHECK_EQ(e, RRES_OK);
	CHECK_EQ(rres_qp_destroy(&y->rd, q), RRES_OK);
	while (n)
		CHECK_EQ(rres_qp_destroy(&x->rd, qps[--n]), RRES_OK);
	CHECK_EQ(b.used, 0u);
	fk_env_fini(&env);
}

static int memfd_of(uint64_t size)
{
	int fd = memfd_create("budget", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Two memory tables of one device: their regions together stay within the
 * budget; a region held after its table is cleared still counts until it is
 * unmapped; the budget outlives the owner's reference while regions hold
 * it. */
static void test_mem_budget_shared(void)
{
	struct vhost_mem a, b;
	struct vhost_mem_budget *mb = vhost_mem_budget_new(3u << 20);
	struct vhost_mem_region *held;
	const uint64_t M = 1u << 20;

	REQUIRE(mb != NULL);
	vhost_mem_init(&a);
	vhost_mem_init(&b);
	a.budget = b.budget = mb;
	CHECK_EQ(vhost_mem_add(&a, 0, 2 * M, 0x10000000, 0, memfd_of(2 * M)), 0);
	CHECK_EQ(vhost_mem_add(&b, 0, 2 * M, 0x10000000, 0, memfd_of(2 * M)), -EDQUOT);
	CHECK_EQ(mb->refused, 1u);
	CHECK_EQ(b.mapped_refused, 1u);
	CHECK_EQ(vhost_mem_add(&b, 0, M, 0x10000000, 0, memfd_of(M)), 0);
	CHECK_EQ(mb->mapped, 3 * M);
	/* a holder keeps a's region mapped after a is cleared: still counted */
	held = vhost_mem_find(&a, 0);
	REQUIRE(held != NULL);
	vhost_mem_region_get(held);
	vhost_mem_clear(&a);
	CHECK_EQ(mb->mapped, 3 * M);
	CHECK_EQ(vhost_mem_add(&a, 0, M, 0x10000000, 0, memfd_of(M)), -EDQUOT);
	/* the owner lets go first: the region's account keeps it alive */
	vhost_mem_budget_put(mb);
	vhost_mem_clear(&b);
	vhost_mem_region_put(held); /* unmapped now; the last reference goes */
	vhost_mem_clear(&a);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	TEST_PROGRAM("test_roce_budget");
	vlog_level = VLOG_ERR;
	RUN(test_sq_slots_follow_max_send_wr);
	RUN(test_state_budget_shared);
	RUN(test_mem_budget_shared);
	return TEST_DONE();
}
