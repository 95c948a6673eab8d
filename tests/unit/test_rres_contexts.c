/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contexts of one device (src/backend/rres_res.c, rres_dev_share_tables):
 * two device models drawing PD, CQ, QP and MR indexes from one pool have
 * disjoint handles and QPNs, share the device's limits (a full table refuses
 * every context alike), refuse each other's handles, own QP indexes the
 * port can find, give indexes back when destroyed or reset, and let only one
 * of them own the GSI QP at a time. A context opened after another closed
 * gets neither the QPN nor the MR key the closed one had at the same index.
 */
#include <arpa/inet.h>
#include <stdbool.h>

#include "harness.h"
#include "backend/rres_dev.h"

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x57 };
static struct rres_dev pool, a, b;
static int owner_a, owner_b;

static struct rres_dev_cfg cfg(void)
{
	struct rres_dev_cfg c;

	memset(&c, 0, sizeof(c));
	memcpy(c.mac, MAC, 6);
	c.has_ip4 = true;
	c.ip4 = htonl(0x0a000001);
	c.eth_mtu = 1500;
	c.max_rdma_qps = 6; /* indexes 2..5 allocatable, 1 = GSI */
	c.max_rdma_cqs = 4;
	c.max_pd = 4;
	c.max_mr = 4;
	c.max_ah = 4;
	c.deterministic = true;
	c.seed = 7;
	return c;
}

static bool setup(void)
{
	struct rres_dev_cfg c = cfg();

	if (rres_dev_init(&pool, &c) || rres_dev_init(&a, &c) || rres_dev_init(&b, &c))
		return false;
	rres_dev_share_tables(&a, &pool, &owner_a);
	rres_dev_share_tables(&b, &pool, &owner_b);
	return true;
}

static void teardown(void)
{
	rres_dev_fini(&a);
	rres_dev_fini(&b);
	rres_dev_fini(&pool);
}

static struct rres_qp *qp_in(struct rres_dev *rd, uint32_t pdn, uint32_t cqn, uint8_t type,
			     enum rres_err *err)
{
	struct rres_qp_init in = {
		.pdn = pdn, .qp_type = type, .send_cqn = cqn, .recv_cqn = cqn,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct rres_qp *qp = NULL;

	*err = rres_qp_create(rd, &in, &qp);
	return *err == RRES_OK ? qp : NULL;
}

static void test_disjoint_and_shared_limits(void)
{
	uint32_t pa, pb, ca, cb, c3, c4, c5;
	struct rres_qp *qa, *qb, *q3, *q4;
	enum rres_err e;

	REQUIRE(setup());
	CHECK_EQ(rres_pd_create(&a, &pa), RRES_OK);
	CHECK_EQ(rres_pd_create(&b, &pb), RRES_OK);
	CHECK(pa != pb);
	CHECK_EQ(rres_cq_create(&a, 4, &ca), RRES_OK);
	CHECK_EQ(rres_cq_create(&b, 4, &cb), RRES_OK);
	CHECK(ca != cb);
	qa = qp_in(&a, pa, ca, VIRTIO_IB_QPT_RC, &e);
	qb = qp_in(&b, pb, cb, VIRTIO_IB_QPT_UD, &e);
	REQUIRE(qa && qb);
	CHECK(vrdma_qpn_index(qa->qpn) != vrdma_qpn_index(qb->qpn));
	/* the port finds each QP's context through the pool */
	CHECK(((struct rres_table *)pool.qps.slot[qa->index])->owner == &owner_a);
	CHECK(((struct rres_table *)pool.qps.slot[qb->index])->owner == &owner_b);

	/* foreign handles are bad handles, and change nothing */
	CHECK_EQ(rres_qp_destroy(&b, qa->qpn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(rres_cq_destroy(&b, ca), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(rres_pd_destroy(&b, pa), RRES_ERR_BAD_HANDLE);
	qp_in(&b, pa, cb, VIRTIO_IB_QPT_RC, &e);
	CHECK_EQ(e, RRES_ERR_BAD_HANDLE);
	qp_in(&b, pb, ca, VIRTIO_IB_QPT_RC, &e);
	CHECK_EQ(e, RRES_ERR_BAD_HANDLE);
	CHECK(rres_qp_lookup(&a, qa->qpn) == qa);

	/* CQs: 4 for the device, whichever context asks */
	CHECK_EQ(rres_cq_create(&a, 4, &c3), RRES_OK);
	CHECK_EQ(rres_cq_create(&b, 4, &c4), RRES_OK);
	CHECK_EQ(rres_cq_create(&a, 4, &c5), RRES_ERR_LIMIT);
	CHECK_EQ(rres_cq_create(&b, 4, &c5), RRES_ERR_LIMIT);
	/* QPs: indexes 2..5, two used */
	q3 = qp_in(&a, pa, ca, VIRTIO_IB_QPT_RC, &e);
	q4 = qp_in(&b, pb, cb, VIRTIO_IB_QPT_RC, &e);
	CHECK(q3 && q4);
	qp_in(&a, pa, ca, VIRTIO_IB_QPT_RC, &e);
	CHECK_EQ(e, RRES_ERR_LIMIT);
	qp_in(&b, pb, cb, VIRTIO_IB_QPT_RC, &e);
	CHECK_EQ(e, RRES_ERR_LIMIT);

	/* a destroyed QP's index serves the other context */
	if (q4)
		CHECK_EQ(rres_qp_destroy(&b, q4->qpn), RRES_OK);
	q4 = qp_in(&a, pa, ca, VIRTIO_IB_QPT_RC, &e);
	CHECK(q4 != NULL);

	/* a reset context (its connection closed) gives everything back */
	rres_dev_reset(&a);
	CHECK_EQ(pool.qps.used, 1);   /* b's UD QP */
	CHECK_EQ(pool.cqs.used, 2);   /* cb, c4 */
	CHECK(pool.qps.slot[qb->index] != NULL);
	CHECK(rres_qp_lookup(&b, qb->qpn) == qb);
	CHECK_EQ(rres_cq_create(&b, 4, &c5), RRES_OK);
	teardown();
}

static void test_one_gsi_per_device(void)
{
	uint32_t pa, pb, ca, cb;
	struct rres_qp *ga, *gb;
	enum rres_err e;

	REQUIRE(setup());
	CHECK_EQ(rres_pd_create(&a, &pa), RRES_OK);
	CHECK_EQ(rres_pd_create(&b, &pb), RRES_OK);
	CHECK_EQ(rres_cq_create(&a, 4, &ca), RRES_OK);
	CHECK_EQ(rres_cq_create(&b, 4, &cb), RRES_OK);
	ga = qp_in(&a, pa, ca, VIRTIO_IB_QPT_GSI, &e);
	REQUIRE(ga);
	CHECK_EQ(ga->qpn, VRDMA_GSI_QPN);
	CHECK(((struct rres_table *)pool.qps.slot[vrdma_qpn_index(VRDMA_GSI_QPN)])->owner ==
	      &owner_a);
	gb = qp_in(&b, pb, cb, VIRTIO_IB_QPT_GSI, &e);
	CHECK(gb == NULL);
	CHECK_EQ(e, RRES_ERR_LIMIT);
	CHECK_EQ(rres_qp_destroy(&a, VRDMA_GSI_QPN), RRES_OK);
	gb = qp_in(&b, pb, cb, VIRTIO_IB_QPT_GSI, &e);
	CHECK(gb != NULL);
	teardown();
}

/* A context closed and a new one opened (same seed, same first index):
 * the generation and key history are the device's, not the context's. */
static void test_closed_context_history_kept(void)
{
	struct rres_dev_cfg c = cfg();
	uint32_t pd, cq, qpn, lkey, idx;
	struct rres_qp *qp;
	struct rres_mr *mr;
	enum rres_err e;

	REQUIRE(setup());
	CHECK_EQ(rres_pd_create(&a, &pd), RRES_OK);
	CHECK_EQ(rres_cq_create(&a, 4, &cq), RRES_OK);
	qp = qp_in(&a, pd, cq, VIRTIO_IB_QPT_RC, &e);
	REQUIRE(qp);
	qpn = qp->qpn;
	idx = qp->index;
	CHECK_EQ(rres_mr_get_dma(&a, pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr), RRES_OK);
	REQUIRE(mr);
	lkey = mr->lkey;
	rres_dev_fini(&a);
	REQUIRE(rres_dev_init(&a, &c) == 0);
	rres_dev_share_tables(&a, &pool, &owner_a);
	CHECK_EQ(rres_pd_create(&a, &pd), RRES_OK);
	CHECK_EQ(rres_cq_create(&a, 4, &cq), RRES_OK);
	/* indexes come round again: take them until the closed one's */
	for (int i = 0; i < 8; i++) {
		qp = qp_in(&a, pd, cq, VIRTIO_IB_QPT_RC, &e);
		REQUIRE(qp);
		if (qp->index == idx)
			break;
		CHECK_EQ(rres_qp_destroy(&a, qp->qpn), RRES_OK);
	}
	CHECK_EQ(qp->index, idx);
	CHECK(qp->qpn != qpn);
	for (int i = 0; i < 8; i++) {
		CHECK_EQ(rres_mr_get_dma(&a, pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr), RRES_OK);
		REQUIRE(mr);
		if (mr->lkey >> RRES_KEY_BITS == lkey >> RRES_KEY_BITS)
			break;
		CHECK_EQ(rres_mr_dereg(&a, mr->mrn), RRES_OK);
	}
	CHECK_EQ(mr->lkey >> RRES_KEY_BITS, lkey >> RRES_KEY_BITS);
	CHECK(mr->lkey != lkey);
	teardown();
}

int main(void)
{
	TEST_PROGRAM("test_rres_contexts");
	RUN(test_disjoint_and_shared_limits);
	RUN(test_one_gsi_per_device);
	RUN(test_closed_context_history_kept);
	return TEST_DONE();
}
