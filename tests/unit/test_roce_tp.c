/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RoCE transport engine driven by a fake driver (tests/unit/
 * roce_tp_fake.h): devices on a real switch and loop, rings on memfd
 * memory. Completion queue writer and notification, send/receive queue
 * validation, flushes; UD, RC and UC operations of every kind and size with
 * data compared byte for byte; RNR, retry exhaustion, remote access errors;
 * neighbour resolution; ICRCs of captured frames.
 */
#include <sys/stat.h>

#include "../harness.h"
#include "common/log.h"
#include "port/pcap.h"
#include "port/port_security.h"
#include "roce/roce_icrc.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 20000

/* ---- helpers ---------------------------------------------------------------- */

/* Wait for n completions on cqn into wc[]. Returns how many arrived. */
static unsigned wait_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn,
			struct virtio_rdma_cq_req *wc, unsigned n)
{
	return fk_wait_cq(env, d, cqn, wc, n, WAIT_MS);
}

/* Let the engine settle, then return how many completions are there
 * (buffers are posted again, so a backlog drains too). */
static unsigned drain_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn,
			 struct virtio_rdma_cq_req *wc, unsigned max)
{
	unsigned n = 0, k;

	do {
		fk_spin(env, 20);
		k = fk_poll_cq(d, cqn, wc + n, max - n);
		n += k;
	} while (k && n < max);
	return n;
}

struct pair {
	struct fk_env env;
	union {
		struct fk_rc_pair rc;
		struct { FK_RC_PAIR_MEMBERS };
	};
	struct fk_path path;
};

struct pair_cfg {
	uint8_t type;
	uint16_t eth_mtu;
	bool loopback;            /* both QPs on device a */
	struct fk_path path;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	uint16_t sq_num, rq_num, cq_num;
	uint32_t cqe;
	bool sq_polled, rq_polled, sig_all;
};

static void pair_cfg_default(struct pair_cfg *c, uint8_t type)
{
	memset(c, 0, sizeof(*c));
	c->type = type;
	fk_path_default(&c->path);
	c->max_send_sge = 4;
	c->max_recv_sge = 4;
	c->sq_num = 64;
	c->rq_num = 64;
	c->cq_num = 256;
	c->cqe = 1024;
}

static void pair_init(struct pair *p, const struct pair_cfg *c)
{
	struct fk_dev_cfg dc = { .eth_mtu = c->eth_mtu ? c->eth_mtu : 1500,
				 .arena = 96u << 20, .max_send_sge = 64, .max_recv_sge = 64 };
	struct fk_qp_cfg qc = {
		.type = c->type, .max_send_sge = c->max_send_sge, .max_recv_sge = c->max_recv_sge,
		.max_inline = c->max_inline, .sq_num = c->sq_num, .rq_num = c->rq_num,
		.max_send_wr = c->sq_num, .max_recv_wr = c->rq_num,
		.sq_polled = c->sq_polled, .rq_polled = c->rq_polled, .sig_all = c->sig_all,
	};

	memset(p, 0, sizeof(*p));
	p->path = c->path;
	if (fk_env_init(&p->env, true))
		abort();
	p->a = fk_dev_new(&p->env, &dc);
	p->b = c->loopback ? p->a : fk_dev_new(&p->env, &dc);
	fk_rc_pair_init(&p->rc, &qc, &p->path, c->cqe, c->cq_num, 0);
}

static void pair_fini(struct pair *p)
{
	fk_env_fini(&p->env);
}

static uint8_t qp_state(struct fk_dev *d, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);

	return qp ? qp->attr.qp_state : 0xff;
}

/* ---- CQ writer, flush -------------------------------------------------------- */

static void test_flush_in_err(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *d;
	struct fk_qp q;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC };
	struct virtio_rdma_cq_req wc[64];
	uint32_t pd, scq, rcq;
	struct fk_mr mr;
	unsigned n;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	scq = fk_cq(d, 64, 64, true);
	rcq = fk_cq(d, 64, 64, true);
	mr = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
	qc.pdn = pd;
	qc.scq = scq;
	qc.rcq = rcq;
	q = fk_qp_new(d, &qc);
	/* RESET: nothing is processed. */
	for (int i = 0; i < 3; i++) {
		struct fk_sge s = { mr.buf, 16, mr.lkey };
		struct fk_wr wr = { .wr_id = 100 + i, .opcode = VIRTIO_IB_WR_SEND, .sge = &s,
				    .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		REQUIRE(fk_post_recv(d, &q, 200 + i, &s, 1) == 0);
	}
	CHECK_EQ(drain_cq(&env, d, scq, wc, 64), 0);
	CHECK_EQ(fk_ring_reap(q.sq), 0);
	/* -> ERR: every WR flushes, in order, descriptors given back. */
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	n = fk_poll_cq(d, scq, wc, 64);
	CHECK_EQ(n, 3);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(wc[i].wr_id, 100 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[i].opcode, VIRTIO_IB_WC_SEND);
		CHECK_EQ(wc[i].qp_num, q.qpn);
	}
	n = fk_poll_cq(d, rcq, wc, 64);
	CHECK_EQ(n, 3);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(wc[i].wr_id, 200 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[i].opcode, VIRTIO_IB_WC_RECV);
	}
	CHECK_EQ(fk_ring_reap(q.sq), 3);
	CHECK_EQ(fk_ring_reap(q.rq), 3);
	/* Posted later: flushed too (kick path and, below, polled path). */
	{
		struct fk_sge s = { mr.buf, 16, mr.lkey };
		struct fk_wr wr = { .wr_id = 7, .opcode = VIRTIO_IB_WR_RDMA_READ, .sge = &s,
				    .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		REQUIRE(fk_post_recv(d, &q, 8, &s, 1) == 0);
	}
	n = drain_cq(&env, d, scq, wc, 64);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 7);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_RDMA_READ);
	n = fk_poll_cq(d, rcq, wc, 64);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 8);
	/* DESTROY_QP flushes what is still posted. */
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_RESET, 0, NULL), 0);
	{
		struct fk_sge s = { mr.buf, 16, mr.lkey };
		struct fk_wr wr = { .wr_id = 9, .opcode = VIRTIO_IB_WR_SEND, .sge = &s, .nsge = 1,
				    .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		REQUIRE(fk_post_recv(d, &q, 10, &s, 1) == 0);
	}
	CHECK_EQ(drain_cq(&env, d, scq, wc, 64), 0);
	CHECK_EQ(rres_qp_destroy(&d->rd, q.qpn), RRES_OK);
	n = fk_poll_cq(d, scq, wc, 64);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 9);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	n = fk_poll_cq(d, rcq, wc, 64);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 10);
	fk_env_fini(&env);
	CHECK_EQ(pkt_outstanding(), 0);
}

/* Rings started after the QP / CQ, and rings without kicks (polled). */
static void test_late_and_polled_rings(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *d;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_UD, .no_rings = true };
	struct virtio_rdma_cq_req wc[8];
	struct rres_qp *qp;
	struct fk_qp q;
	uint32_t pd, cqn;
	struct fk_ring *cr;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	REQUIRE(rres_cq_create(&d->rd, 16, &cqn) == RRES_OK);
	qc.pdn = pd;
	qc.scq = qc.rcq = cqn;
	q = fk_qp_new(d, &qc);
	qp = rres_qp_lookup(&d->rd, q.qpn);
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	q.sq = fk_ring_setup(d, qp->sq_vq, 16, fk_sq_stride(4), false);
	q.rq = fk_ring_setup(d, qp->rq_vq, 16, 128, false);
	{
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		REQUIRE(fk_post_recv(d, &q, 2, NULL, 0) == 0);
	}
	fk_spin(&env, 20);
	/* The completion ring comes last: completions waited in the backlog. */
	cr = fk_ring_setup(d, rres_ring_of_cq(&d->rd, cqn), 16, sizeof(struct virtio_rdma_cq_req),
			   false);
	(void)cr;
	fk_cq_post(d, cqn, 16);
	CHECK_EQ(drain_cq(&env, d, cqn, wc, 8), 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[1].wr_id, 2);
	CHECK(d->tp->stats.cqe_backlogged >= 1);
	fk_env_fini(&env);
}

/* No completion buffer: completions wait (never lost); beyond cqe the CQ
 * overflows: counted, its QPs go to ERR. */
static void test_cq_backlog_overflow(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *d;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .sq_num = 64 };
	struct virtio_rdma_cq_req wc[64];
	struct fk_qp q;
	uint32_t pd, cqn, cq2;
	unsigned n, total = 0;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	cqn = fk_cq(d, 8, 8, false); /* cqe 8, no buffers posted */
	cq2 = fk_cq(d, 64, 64, true);
	qc.pdn = pd;
	qc.scq = cqn;
	qc.rcq = cq2;
	q = fk_qp_new(d, &qc);
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	for (int i = 0; i < 8; i++) {
		struct fk_wr wr = { .wr_id = i, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	fk_spin(&env, 20);
	CHECK_EQ(d->tp->stats.cqe_backlogged, 8);
	CHECK_EQ(d->tp->stats.cq_overflows, 0);
	/* Buffers arrive: the backlog drains in order. */
	fk_cq_post(d, cqn, 3);
	fk_spin(&env, 20);
	n = fk_poll_cq2(d, cqn, wc, 64, false);
	CHECK_EQ(n, 3);
	total += n;
	fk_cq_post(d, cqn, 5);
	fk_spin(&env, 20);
	n = fk_poll_cq2(d, cqn, wc + total, 64, false);
	CHECK_EQ(n, 5);
	total += n;
	for (unsigned i = 0; i < total; i++)
		CHECK_EQ(wc[i].wr_id, i);
	/* 3 buffers posted: 3 + 8 (cqe) fit, the 12th overflows. */
	fk_cq_post(d, cqn, 3);
	for (int i = 0; i < 12; i++) {
		struct fk_wr wr = { .wr_id = 100 + i, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	fk_spin(&env, 20);
	CHECK_EQ(d->tp->stats.cq_overflows, 1);
	CHECK_EQ(d->tp->stats.cqe_dropped, 1);
	CHECK_EQ(qp_state(d, q.qpn), VIRTIO_IB_QPS_ERR);
	/* What was accepted is still delivered, in order. */
	n = fk_poll_cq2(d, cqn, wc, 64, false);
	CHECK_EQ(n, 3);
	fk_cq_post(d, cqn, 8);
	fk_spin(&env, 20);
	n += fk_poll_cq2(d, cqn, wc + n, 64, false);
	CHECK_EQ(n, 11);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(wc[i].wr_id, 100 + i);
	fk_env_fini(&env);
}

/* REQ_NOTIFY_CQ: an armed CQ interrupts even when the driver suppresses
 * interrupts; NEXT is one-shot; SOLICITED fires only for solicited or
 * error completions. */
static void test_cq_notify(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *d;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_UD };
	struct virtio_rdma_cq_req wc[8];
	struct fk_ring *cr;
	struct fk_qp q;
	uint32_t pd, cqn;
	uint64_t before;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	cqn = fk_cq(d, 16, 16, true);
	cr = fk_cq_ring(d, cqn);
	vq_drv_disable_cb(&cr->drv);
	qc.pdn = pd;
	qc.scq = qc.rcq = cqn;
	q = fk_qp_new(d, &qc);
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	before = cr->calls;
	{
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	drain_cq(&env, d, cqn, wc, 8);
	CHECK_EQ(cr->calls, before); /* suppressed, not armed */
	CHECK_EQ(rres_cq_req_notify(&d->rd, cqn, VIRTIO_IB_NOTIFY_NEXT_COMPLETION), RRES_OK);
	{
		struct fk_wr wr = { .wr_id = 2, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		wr.wr_id = 3;
		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	drain_cq(&env, d, cqn, wc, 8);
	CHECK_EQ(cr->forced, 1); /* one-shot */
	/* SOLICITED: a flush error counts. */
	CHECK_EQ(rres_cq_req_notify(&d->rd, cqn, VIRTIO_IB_NOTIFY_SOLICITED), RRES_OK);
	{
		struct fk_wr wr = { .wr_id = 4, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	drain_cq(&env, d, cqn, wc, 8);
	CHECK_EQ(cr->forced, 2);
	/* Fast path: interrupts enabled on the ring (event index). */
	before = cr->calls;
	vq_drv_enable_cb(&cr->drv);
	{
		struct fk_wr wr = { .wr_id = 5, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1 };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	drain_cq(&env, d, cqn, wc, 8);
	CHECK_EQ(cr->calls, before + 1);
	CHECK_EQ(cr->forced, 2);
	fk_env_fini(&env);
}

/* ---- UD ------------------------------------------------------------------------- */

static void ud_case(bool ipv6)
{
	struct pair p;
	struct pair_cfg c;
	struct fk_mr sa, rb;
	struct virtio_rdma_cq_req wc[16];
	uint32_t ah, mtu;
	const uint32_t sizes[] = { 0, 1, 100, 1023, 1024 };

	pair_cfg_default(&c, VIRTIO_IB_QPT_UD);
	c.path.ipv6 = ipv6;
	pair_init(&p, &c);
	mtu = 1024;
	sa = fk_mr_reg(p.a, p.pda, 8192, FK_ACC_ALL);
	rb = fk_mr_reg(p.b, p.pdb, 8192, FK_ACC_ALL);
	ah = fk_ah(p.a, p.pda, p.b, &p.path);
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t len = sizes[i];
		struct fk_sge s = { sa.buf, len, sa.lkey };
		struct fk_sge r = { rb.buf, 40 + mtu, rb.lkey };
		struct fk_wr wr = {
			.wr_id = 10 + i,
			.opcode = i & 1 ? VIRTIO_IB_WR_SEND_WITH_IMM : VIRTIO_IB_WR_SEND,
			.flags = VIRTIO_IB_SEND_SIGNALED, .imm = htobe32(0xabc00 + i),
			.remote_qpn = p.qb.qpn, .remote_qkey = p.path.qkey, .ah = ah,
			.sge = &s, .nsge = 1, .trunc = -1,
		};
		struct virtio_rdma_ah_attr a;

		fk_fill(sa.buf, len, i);
		memset(rb.buf, 0xee, 8192);
		REQUIRE(fk_post_recv(p.b, &p.qb, 500 + i, &r, 1) == 0);
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 10 + i);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_SEND);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 500 + i);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_RECV);
		CHECK_EQ(wc[0].byte_len, 40 + len);
		CHECK_EQ(wc[0].src_qp, p.qa.qpn);
		CHECK_EQ(wc[0].qp_num, p.qb.qpn);
		CHECK_EQ(wc[0].wc_flags, VIRTIO_IB_WC_GRH | (i & 1 ? VIRTIO_IB_WC_WITH_IMM : 0));
		if (i & 1)
			CHECK_EQ(wc[0].imm_data, htobe32(0xabc00 + i));
		CHECK_MEM(rb.buf + 40, sa.buf, len);
		CHECK_EQ(rb.buf[40 + len], 0xee);
		fk_ah_attr(p.b, &p.path, &a);
		if (ipv6) {
			CHECK_EQ(rb.buf[0] >> 4, 6);
			CHECK_MEM(rb.buf + 8, rres_gid_get(&p.a->rd, 0), 16);
			CHECK_MEM(rb.buf + 24, rres_gid_get(&p.b->rd, 0), 16);
		} else {
			static const uint8_t z[20];

			CHECK_MEM(rb.buf, z, 20);
			CHECK_EQ(rb.buf[20], 0x45);
			CHECK_MEM(rb.buf + 20 + 12, &p.a->ip4, 4);
			CHECK_MEM(rb.buf + 20 + 16, &p.b->ip4, 4);
		}
	}
	pair_fini(&p);
}

static void test_ud_ipv4(void)
{
	ud_case(false);
}

static void test_ud_ipv6(void)
{
	ud_case(true);
}

/* GSI (QP1): UD with the well-known Q_Key, QPN 1 on both sides. */
static void test_gsi(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *a, *b;
	struct fk_qp qa, qb;
	struct fk_path path;
	struct virtio_rdma_cq_req wc[4];
	uint32_t pda, pdb, cqa, cqb, ah;
	struct fk_mr ma, mb;

	REQUIRE(fk_env_init(&env, true) == 0);
	a = fk_dev_new(&env, &dc);
	b = fk_dev_new(&env, &dc);
	pda = fk_pd(a);
	pdb = fk_pd(b);
	cqa = fk_cq(a, 16, 16, true);
	cqb = fk_cq(b, 16, 16, true);
	{
		struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_GSI, .pdn = pda, .scq = cqa,
					.rcq = cqa };

		qa = fk_qp_new(a, &qc);
		qc.pdn = pdb;
		qc.scq = qc.rcq = cqb;
		qb = fk_qp_new(b, &qc);
	}
	CHECK_EQ(qa.qpn, VRDMA_GSI_QPN);
	CHECK_EQ(qb.qpn, VRDMA_GSI_QPN);
	fk_path_default(&path);
	path.qkey = 0x80010000u;
	REQUIRE(fk_connect(a, qa.qpn, b, qb.qpn, &path) == 0);
	REQUIRE(fk_connect(b, qb.qpn, a, qa.qpn, &path) == 0);
	ma = fk_mr_reg(a, pda, 4096, FK_ACC_ALL);
	mb = fk_mr_reg(b, pdb, 4096, FK_ACC_ALL);
	ah = fk_ah(a, pda, b, &path);
	fk_fill(ma.buf, 256, 3);
	{
		struct fk_sge s = { ma.buf, 256, ma.lkey }, r = { mb.buf, 296, mb.lkey };
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .remote_qpn = VRDMA_GSI_QPN,
				    .remote_qkey = 0x80010000u, .ah = ah, .sge = &s, .nsge = 1,
				    .trunc = -1 };

		REQUIRE(fk_post_recv(b, &qb, 2, &r, 1) == 0);
		REQUIRE(fk_post_send(a, &qa, &wr) == 0);
	}
	REQUIRE(wait_cq(&env, b, cqb, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].src_qp, VRDMA_GSI_QPN);
	CHECK_EQ(wc[0].byte_len, 296);
	CHECK_MEM(mb.buf + 40, ma.buf, 256);
	fk_env_fini(&env);
}

/* MODIFY_QP to RESET gives taken WRs back without completions; a ring the
 * driver stops under a live QP moves it to ERR. */
static void test_reset_and_ring_stop(void)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { 0 };
	struct fk_dev *d;
	struct fk_qp q;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_UC };
	struct virtio_rdma_cq_req wc[8];
	struct fk_path path;
	struct rres_qp *qp;
	struct fk_mr mr;
	uint32_t pd, cq;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	cq = fk_cq(d, 16, 16, true);
	qc.pdn = pd;
	qc.scq = qc.rcq = cq;
	q = fk_qp_new(d, &qc);
	qp = rres_qp_lookup(&d->rd, q.qpn);
	mr = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
	fk_path_default(&path);
	REQUIRE(fk_connect(d, q.qpn, d, q.qpn, &path) == 0); /* talks to itself */
	{
		struct fk_sge s = { mr.buf, 100, mr.lkey };

		/* a receive element taken by a message in progress, then reset */
		REQUIRE(fk_post_recv(d, &q, 1, &s, 1) == 0);
		REQUIRE(fk_post_recv(d, &q, 2, &s, 1) == 0);
	}
	roce_rq_get(qp->transport);
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_RESET, 0, NULL), 0);
	CHECK_EQ(fk_ring_reap(q.rq), 1);
	CHECK_EQ(drain_cq(&env, d, cq, wc, 8), 0);
	/* back up; the second element is still in the ring */
	REQUIRE(fk_connect(d, q.qpn, d, q.qpn, &path) == 0);
	fk_ring_free(d, qp->sq_vq);
	fk_spin(&env, 5);
	CHECK_EQ(qp_state(d, q.qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(drain_cq(&env, d, cq, wc, 8), 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	fk_env_fini(&env);
}

/* Send and receive rings without kick fds are polled by the device. */
static void test_polled_rings_traffic(void);

/* ---- RC / UC operations ------------------------------------------------------- */

struct bufs {
	struct fk_mr la, lb;      /* local MRs on a and b */
	uint64_t size;
};

static void bufs_init(struct pair *p, struct bufs *b, uint64_t size)
{
	b->size = size;
	b->la = fk_mr_reg(p->a, p->pda, size, FK_ACC_ALL);
	b->lb = fk_mr_reg(p->b, p->pdb, size, FK_ACC_ALL);
}

/* Split [buf, buf+len) into n SGEs of uneven sizes (some may be empty). */
static unsigned make_sges(struct fk_sge *s, unsigned n, uint8_t *buf, uint32_t len, uint32_t lkey)
{
	uint32_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t chunk = i + 1 == n ? len - off : (len - off) / (n - i) + (i & 1 ? 3 : 0);

		chunk = MIN(chunk, len - off);
		s[i] = (struct fk_sge){ buf + off, chunk, lkey };
		off += chunk;
	}
	return n;
}

/*
 * One operation from a to b: len bytes in nsge SGEs (or inline). Checks
 * both completions and the data. Returns false on a failed check.
 */
static bool do_op(struct pair *p, struct bufs *b, uint8_t op, uint32_t len, unsigned nsge,
		  bool inl, uint32_t seed)
{
	struct fk_sge ls[64], rs[64];
	struct virtio_rdma_cq_req wc[4];
	bool read = op == VIRTIO_IB_WR_RDMA_READ;
	bool send = op == VIRTIO_IB_WR_SEND || op == VIRTIO_IB_WR_SEND_WITH_IMM;
	bool imm = op == VIRTIO_IB_WR_SEND_WITH_IMM || op == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
	uint8_t *src = read ? b->lb.buf : b->la.buf, *dst = read ? b->la.buf : b->lb.buf;
	uint64_t id = 1000 + seed;
	struct fk_wr wr = {
		.wr_id = id, .opcode = op,
		.flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_SOLICITED,
		.imm = htobe32(seed), .trunc = -1,
	};
	int fails = th_failed_checks;

	fk_fill(src, len, seed);
	memset(dst, 0x5a, MIN((uint64_t)len + 64, b->size));
	if (inl) {
		wr.flags |= VIRTIO_IB_SEND_INLINE;
		wr.inl = src;
		wr.inline_len = (uint16_t)len;
	} else {
		wr.nsge = make_sges(ls, nsge ? nsge : 1, read ? dst : src, len, b->la.lkey);
		wr.sge = ls;
	}
	if (!send) {
		wr.remote_addr = (uintptr_t)(read ? src : dst);
		wr.rkey = read ? b->lb.rkey : b->lb.rkey;
	}
	if (send || imm) {
		unsigned n = send ? make_sges(rs, nsge ? nsge : 1, dst, len + 16, b->lb.lkey) : 0;

		if (fk_post_recv(p->b, &p->qb, id + 1, rs, n))
			return false;
	}
	if (fk_post_send(p->a, &p->qa, &wr))
		return false;
	CHECK_EQ(wait_cq(&p->env, p->a, p->cqa, wc, 1), 1);
	CHECK_EQ(wc[0].wr_id, id);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, virtio_ib_wc_opcode_of_wr(op));
	CHECK_EQ(wc[0].qp_num, p->qa.qpn);
	if (send || imm) {
		CHECK_EQ(wait_cq(&p->env, p->b, p->cqb, wc, 1), 1);
		CHECK_EQ(wc[0].wr_id, id + 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, send ? VIRTIO_IB_WC_RECV : VIRTIO_IB_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(wc[0].byte_len, len);
		CHECK_EQ(wc[0].qp_num, p->qb.qpn);
		CHECK_EQ(wc[0].wc_flags, imm ? VIRTIO_IB_WC_WITH_IMM : 0);
		if (imm)
			CHECK_EQ(wc[0].imm_data, htobe32(seed));
	}
	CHECK(memcmp(src, dst, len) == 0);
	if (len + 1 <= b->size)
		CHECK_EQ(dst[len], 0x5a);
	fk_ring_reap(p->qa.sq);
	fk_ring_reap(p->qb.rq);
	return th_failed_checks == fails;
}

static const uint8_t all_ops[] = {
	VIRTIO_IB_WR_SEND, VIRTIO_IB_WR_SEND_WITH_IMM, VIRTIO_IB_WR_RDMA_WRITE,
	VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM, VIRTIO_IB_WR_RDMA_READ,
};

/* Every operation, every MTU, sizes around every MTU boundary up to 4 MiB. */
static void conn_sizes(uint8_t type, bool ipv6)
{
	for (uint8_t m = VIRTIO_IB_MTU_256; m <= VIRTIO_IB_MTU_4096; m++) {
		uint32_t mtu = virtio_ib_mtu_bytes(m);
		const uint32_t sizes[] = { 0, 1, mtu - 1, mtu, mtu + 1, 2 * mtu - 1, 2 * mtu,
					   2 * mtu + 1, 3 * mtu, 10 * mtu + 7, 65536,
					   (1u << 20) + 3, 4u << 20 };
		struct pair_cfg c;
		struct bufs b;
		struct pair p;
		unsigned bad = 0;

		pair_cfg_default(&c, type);
		c.eth_mtu = 9000;
		c.path.mtu = m;
		c.path.ipv6 = ipv6;
		pair_init(&p, &c);
		bufs_init(&p, &b, (4u << 20) + 4096);
		for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++) {
			if (type == VIRTIO_IB_QPT_UC && all_ops[o] == VIRTIO_IB_WR_RDMA_READ)
				continue;
			for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
				if (!do_op(&p, &b, all_ops[o], sizes[i], 1 + i % 4, false,
					   o * 100 + i)) {
					printf("#   type %u mtu %u op %u size %u failed\n", type,
					       mtu, all_ops[o], sizes[i]);
					if (++bad > 3)
						break;
				}
			}
		}
		if (getenv("FK_STATS")) {
			roce_tp_dump_stats(p.a->tp, stdout);
			roce_tp_dump_stats(p.b->tp, stdout);
		}
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_RTS);
		CHECK_EQ(qp_state(p.b, p.qb.qpn), VIRTIO_IB_QPS_RTS);
		pair_fini(&p);
	}
}

static void test_rc_sizes(void)
{
	conn_sizes(VIRTIO_IB_QPT_RC, false);
}

static void test_rc_sizes_ipv6(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.ipv6 = true;
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
		CHECK(do_op(&p, &b, all_ops[o], 100000, 3, false, o));
	pair_fini(&p);
}

static void test_uc_sizes(void)
{
	conn_sizes(VIRTIO_IB_QPT_UC, false);
}

/* 1 .. max SGEs on both sides, and inline data up to 512 bytes. */
static void test_rc_sges_inline(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.max_send_sge = 32;
	c.max_recv_sge = 32;
	c.max_inline = 512;
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	for (unsigned n = 1; n <= 32; n++)
		for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
			CHECK(do_op(&p, &b, all_ops[o], 3000 + n * 777, n, false, n * 10 + o));
	for (uint32_t len = 0; len <= 512; len += len < 8 ? 1 : 63) {
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, len, 0, true, len));
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM, len, 0, true, len + 1));
	}
	CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 512, 0, true, 9));
	pair_fini(&p);
}

/* Flow control inside the switch: b's receive queue is filled past its
 * high mark with frames for no QP; a SEND from a is then held (not dropped)
 * until b has drained its queue, and completes intact. */
static void test_busy_receiver_holds(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	struct roce_path path;
	struct roce_hdr_fields f;
	struct pkt *tmpl;
	uint32_t i;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 16);
	CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 100, 1, false, 1)); /* MACs learned */

	memset(&path, 0, sizeof(path));
	memcpy(path.smac, p.a->mac, 6);
	memcpy(path.dmac, p.b->mac, 6);
	roce_gid_from_ipv4(path.sgid, (const uint8_t *)&p.a->ip4);
	roce_gid_from_ipv4(path.dgid, (const uint8_t *)&p.b->ip4);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_ACKNOWLEDGE;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = 0xFFFFFE; /* no such QP: dropped as rx_no_qp */
	tmpl = pkt_alloc();
	REQUIRE(tmpl);
	REQUIRE(roce_pkt_build_frame(tmpl, &path, &f, NULL, 0) == 0);
	for (i = 0; i < ROCE_TP_RXQ_HIGH; i++) {
		struct pkt *x = pkt_clone(tmpl);

		REQUIRE(x);
		CHECK(roce_tp_input(p.b->tp, x));
	}
	pkt_free(tmpl);
	CHECK(roce_tp_rx_busy(p.b->tp));

	for (i = 0; i < 3; i++)
		CHECK(do_op(&p, &b, all_ops[i], 20000, 2, false, 10 + i));
	CHECK(p.a->tp->stats.tx_held > 0);
	CHECK_EQ(p.b->tp->stats.rx_queue_full, 0u);
	CHECK_EQ(p.a->tp->stats.tx_queue_full, 0u);
	CHECK(p.b->tp->stats.rx_no_qp >= ROCE_TP_RXQ_HIGH);
	CHECK(!roce_tp_rx_busy(p.b->tp));
	pair_fini(&p);
}

/* Fill d's receive queue up to its high mark with frames for no QP (from
 * src, dropped as rx_no_qp when d polls): d is busy to the switch. */
static void fill_rxq(struct fk_dev *src, struct fk_dev *d)
{
	struct roce_path path;
	struct roce_hdr_fields f;
	struct pkt *tmpl;

	memset(&path, 0, sizeof(path));
	memcpy(path.smac, src->mac, 6);
	memcpy(path.dmac, d->mac, 6);
	roce_gid_from_ipv4(path.sgid, (const uint8_t *)&src->ip4);
	roce_gid_from_ipv4(path.dgid, (const uint8_t *)&d->ip4);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_ACKNOWLEDGE;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = 0xFFFFFE;
	tmpl = pkt_alloc();
	REQUIRE(tmpl);
	REQUIRE(roce_pkt_build_frame(tmpl, &path, &f, NULL, 0) == 0);
	while (d->tp->rxq.len < ROCE_TP_RXQ_HIGH) {
		struct pkt *x = pkt_clone(tmpl);

		REQUIRE(x);
		REQUIRE(roce_tp_input(d->tp, x));
	}
	pkt_free(tmpl);
}

/* Post a signaled RDMA WRITE of len bytes from src (lkey) to the remote
 * buffer dst (rkey). */
static int post_write(struct fk_dev *d, struct fk_qp *q, uint64_t id, const uint8_t *src,
		      uint32_t lkey, uint8_t *dst, uint32_t rkey, uint32_t len)
{
	struct fk_sge sge = { src, len, lkey };
	struct fk_wr wr = {
		.wr_id = id, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .flags = VIRTIO_IB_SEND_SIGNALED,
		.remote_addr = (uintptr_t)dst, .rkey = rkey, .sge = &sge, .nsge = 1, .trunc = -1,
	};

	return fk_post_send(d, q, &wr);
}

/* Holding is per receiver: while b is busy (its poller stopped, so it stays
 * busy whatever the timing), a's QP to b waits, parked, with its frames
 * held, and a's QP to another device c keeps sending and completes. Once b
 * polls again the held WRITE completes intact; nothing is dropped. */
static void test_busy_receiver_is_per_destination(void)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 96u << 20 };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .sq_num = 64, .rq_num = 64,
				.max_send_wr = 64, .max_recv_wr = 64 };
	struct virtio_rdma_cq_req wc[8];
	const uint32_t len = 65536;
	uint32_t pdc, cqa2, cqc;
	struct fk_mr ma2, mc;
	struct fk_qp qa2, qc2;
	struct pair_cfg c;
	struct fk_dev *d;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.timeout = 0; /* no retransmit timer: a's wait for b is not a loss */
	pair_init(&p, &c);
	bufs_init(&p, &b, 4 * len);
	d = fk_dev_new(&p.env, &dc);
	pdc = fk_pd(d);
	cqa2 = fk_cq(p.a, 256, 64, true);
	cqc = fk_cq(d, 256, 64, true);
	qc.pdn = p.pda;
	qc.scq = qc.rcq = cqa2;
	qa2 = fk_qp_new(p.a, &qc);
	qc.pdn = pdc;
	qc.scq = qc.rcq = cqc;
	qc2 = fk_qp_new(d, &qc);
	REQUIRE(fk_connect(p.a, qa2.qpn, d, qc2.qpn, &p.path) == 0);
	REQUIRE(fk_connect(d, qc2.qpn, p.a, qa2.qpn, &p.path) == 0);
	ma2 = fk_mr_reg(p.a, p.pda, 4 * len, FK_ACC_ALL);
	mc = fk_mr_reg(d, pdc, 4 * len, FK_ACC_ALL);

	/* The switch learns every MAC (only learned ports refuse frames). */
	CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 100, 1, false, 1));
	REQUIRE(post_write(p.a, &qa2, 20, ma2.buf, ma2.lkey, mc.buf, mc.rkey, 64) == 0);
	REQUIRE(wait_cq(&p.env, p.a, cqa2, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	fk_ring_reap(qa2.sq);

	/* b stops polling and is busy. */
	loop_del_poller(p.env.loop, p.b->poller);
	p.b->poller = NULL;
	fill_rxq(d, p.b);
	CHECK(roce_tp_rx_busy(p.b->tp));

	fk_fill(b.la.buf, len, 7);
	memset(b.lb.buf, 0x5a, len);
	REQUIRE(post_write(p.a, &p.qa, 10, b.la.buf, b.la.lkey, b.lb.buf, b.lb.rkey, len) == 0);
	for (unsigned i = 0; i < 3; i++) {
		fk_fill(ma2.buf + i * len, len, 20 + i);
		REQUIRE(post_write(p.a, &qa2, 21 + i, ma2.buf + i * len, ma2.lkey,
				   mc.buf + i * len, mc.rkey, len) == 0);
	}
	/* QP a2 -> c completes while b is still busy and a's QP to it waits. */
	CHECK_EQ(wait_cq(&p.env, p.a, cqa2, wc, 3), 3);
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ(wc[i].wr_id, 21 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	}
	CHECK(memcmp(ma2.buf, mc.buf, 3 * len) == 0);
	CHECK(roce_tp_rx_busy(p.b->tp));
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 1), 0u);
	CHECK(p.a->tp->stats.tx_held > 0);
	CHECK(p.a->tp->stats.tx_parked > 0);
	CHECK_EQ(p.a->tp->nhold, 1u);
	CHECK_EQ(p.a->tp->txq.len, 0u);

	/* b polls again: the held WRITE goes out and completes intact. */
	p.b->poller = loop_add_poller(p.env.loop, &fk_poller_ops, p.b);
	REQUIRE(p.b->poller);
	CHECK_EQ(wait_cq(&p.env, p.a, p.cqa, wc, 1), 1);
	CHECK_EQ(wc[0].wr_id, 10u);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(b.la.buf, b.lb.buf, len) == 0);
	CHECK_EQ(p.a->tp->nhold, 0u);
	CHECK(!roce_tp_rx_busy(p.b->tp));
	CHECK_EQ(p.b->tp->stats.rx_queue_full, 0u);
	CHECK_EQ(d->tp->stats.rx_queue_full, 0u);
	CHECK_EQ(p.a->tp->stats.tx_queue_full, 0u);
	CHECK_EQ(p.a->tp->stats.retransmits, 0u);
	pair_fini(&p);
}

static uint32_t held_frames(const struct fk_dev *d)
{
	uint32_t n = d->tp->txq.len;

	for (uint32_t i = 0; i < ROCE_TP_HOLD_DESTS; i++)
		n += d->tp->hold[i].q.len;
	return n;
}

static bool parked(void *arg)
{
	return ((struct fk_dev *)arg)->tp->stats.tx_parked > 0;
}

/* A busy requester (its poller stopped) parks the responder's QP answering
 * its READ, also when the path's MAC comes from the neighbour cache: the
 * responses wait, at most one turn of them held, and then arrive intact. */
static void test_busy_requester_parks_read_responder(void)
{
	struct virtio_rdma_cq_req wc[2];
	const uint32_t len = 256 * 1024;
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	uint32_t held;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.timeout = 0;        /* waiting for a busy device is no loss */
	c.path.zero_dmac = true;   /* MACs from the neighbour cache */
	pair_init(&p, &c);
	bufs_init(&p, &b, len);
	CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 100, 1, false, 1)); /* MACs learned */

	loop_del_poller(p.env.loop, p.a->poller);
	p.a->poller = NULL;
	fk_fill(b.lb.buf, len, 5);
	memset(b.la.buf, 0x5a, len);
	{
		struct fk_sge sge = { b.la.buf, len, b.la.lkey };
		struct fk_wr wr = {
			.wr_id = 30, .opcode = VIRTIO_IB_WR_RDMA_READ,
			.flags = VIRTIO_IB_SEND_SIGNALED, .remote_addr = (uintptr_t)b.lb.buf,
			.rkey = b.lb.rkey, .sge = &sge, .nsge = 1, .trunc = -1,
		};

		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	roce_tp_poll(p.a->tp);   /* the READ request goes out */
	fill_rxq(p.b, p.a);      /* then a is busy */
	CHECK(roce_tp_rx_busy(p.a->tp));
	CHECK(fk_run_until(&p.env, parked, p.b, WAIT_MS));
	CHECK_EQ(p.b->tp->nhold, 1u);
	held = held_frames(p.b);
	CHECK(held > 0 && held <= ROCE_TP_QP_BUDGET);
	fk_spin(&p.env, 50);     /* parked: nothing more is built */
	CHECK_EQ(held_frames(p.b), held);

	p.a->poller = loop_add_poller(p.env.loop, &fk_poller_ops, p.a);
	REQUIRE(p.a->poller);
	CHECK_EQ(wait_cq(&p.env, p.a, p.cqa, wc, 1), 1);
	CHECK_EQ(wc[0].wr_id, 30u);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(b.la.buf, b.lb.buf, len) == 0);
	CHECK_EQ(p.b->tp->nhold, 0u);
	CHECK_EQ(p.a->tp->stats.rx_queue_full, 0u);
	CHECK_EQ(p.b->tp->stats.tx_queue_full, 0u);
	pair_fini(&p);
}

/* Two QPs of one device talk through the switch hairpin. */
static void test_rc_loopback(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.loopback = true;
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
		CHECK(do_op(&p, &b, all_ops[o], 300000 + o, 2, false, o));
	pair_fini(&p);
}

/* ---- errors and recovery ------------------------------------------------------- */

static int post_simple(struct pair *p, uint64_t id, uint8_t op, struct fk_mr *l, uint32_t len,
		       uint64_t raddr, uint32_t rkey)
{
	struct fk_sge s = { l->buf, len, l->lkey };
	struct fk_wr wr = { .wr_id = id, .opcode = op, .flags = VIRTIO_IB_SEND_SIGNALED,
			    .remote_addr = raddr, .rkey = rkey, .sge = &s, .nsge = 1, .trunc = -1 };

	return fk_post_send(p->a, &p->qa, &wr);
}

/* An MR whose pages are not one host range (page array out of order) keeps
 * the page walk; one that is takes the one-piece path (rres_mr_to_iov).
 * WRITE, SEND and READ across its pages place and read every byte where
 * the page array says. */
static void test_mr_scattered_pages(void)
{
	static const unsigned perm[4] = { 2, 0, 3, 1 };
	const uint64_t iova = 0x7000000, P = 4096;
	struct virtio_rdma_cq_req wc[4];
	uint64_t pages[4];
	struct rres_mr *mr;
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	uint8_t *host, *want;
	uint32_t len = 3 * 4096 + 100, off = 1000;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	CHECK(rres_mr_lookup(&p.b->rd, b.lb.mrn)->contig != NULL);
	host = fk_alloc(p.b, 4 * P, P);
	memset(host, 0, 4 * P);
	for (unsigned i = 0; i < 4; i++)
		pages[i] = htole64((uintptr_t)host + perm[i] * P);
	REQUIRE(rres_mr_reg_user(&p.b->rd, p.pdb, FK_ACC_ALL, iova, 4 * P, 4, pages, &mr) == 0);
	CHECK(mr->contig == NULL);
	want = malloc(4 * P);
	REQUIRE(want);
	for (uint32_t i = 0; i < len; i++)
		b.la.buf[i] = (uint8_t)(i * 7 + 3);

	/* WRITE at iova + off: byte o of the MR is at page perm[o / P] */
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_RDMA_WRITE, &b.la, len, iova + off, mr->rkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	for (uint32_t o = 0; o < 4 * P; o++)
		want[o] = o >= off && o < off + len ? b.la.buf[o - off] : 0;
	for (unsigned i = 0; i < 4; i++)
		CHECK_MEM(host + perm[i] * P, want + i * P, P);

	/* READ it back from iova + 500 */
	REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_RDMA_READ, &b.la, 4 * P - 600, iova + 500,
			    mr->rkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_MEM(b.la.buf, want + 500, 4 * P - 600);

	/* a SEND received into it through the MR's lkey, from iova + 4000 */
	{
		struct fk_sge r = { (uint8_t *)(uintptr_t)(iova + 4000), 9000, mr->lkey };

		for (uint32_t i = 0; i < 9000; i++)
			b.la.buf[i] = (uint8_t)(i * 13 + 1);
		REQUIRE(fk_post_recv(p.b, &p.qb, 3, &r, 1) == 0);
		REQUIRE(post_simple(&p, 4, VIRTIO_IB_WR_SEND, &b.la, 9000, 0, 0) == 0);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].byte_len, 9000);
		memcpy(want + 4000, b.la.buf, 9000);
		for (unsigned i = 0; i < 4; i++)
			CHECK_MEM(host + perm[i] * P, want + i * P, P);
	}
	free(want);
	pair_fini(&p);
}

/* The receiver posts late: RNR NAKs, then the message goes through. With a
 * finite rnr_retry the WR fails with RNR_RETRY_EXC_ERR. */
static void test_rnr(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.min_rnr_timer = 1;
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	fk_fill(b.la.buf, 5000, 1);
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_SEND, &b.la, 5000, 0, 0) == 0);
	fk_spin(&p.env, 200);
	CHECK(p.a->tp->stats.rnr_naks_rcvd > 0);
	CHECK(p.b->tp->stats.rnr_naks_sent > 0);
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 8), 0);
	{
		struct fk_sge r = { b.lb.buf, 8192, b.lb.lkey };

		REQUIRE(fk_post_recv(p.b, &p.qb, 2, &r, 1) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].byte_len, 5000);
	CHECK_MEM(b.lb.buf, b.la.buf, 5000);
	pair_fini(&p);

	/* rnr_retry 2: three RNR NAKs and the WR fails; the QP goes to ERR
	 * and the next WR is flushed. */
	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.rnr_retry = 2;
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_SEND_WITH_IMM, &b.la, 100, 0, 0) == 0);
	REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_SEND, &b.la, 100, 0, 0) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(wc[1].wr_id, 2);
	CHECK_EQ(wc[1].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	CHECK_EQ(p.a->tp->stats.rnr_naks_rcvd, 3);
	CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(qp_state(p.b, p.qb.qpn), VIRTIO_IB_QPS_RTS);
	pair_fini(&p);
}

/* The peer is gone: retransmissions, then RETRY_EXC_ERR. */
static void test_retry_exceeded(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	for (int variant = 0; variant < 3; variant++) {
		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.path.timeout = 1;
		c.path.retry_cnt = 3;
		pair_init(&p, &c);
		bufs_init(&p, &b, 65536);
		if (variant == 0) {
			sw_detach(p.env.sw, &p.b->port); /* unplugged */
			p.b->attached = false;
		} else {
			CHECK_EQ(rres_qp_destroy(&p.b->rd, p.qb.qpn), RRES_OK); /* QP gone */
		}
		REQUIRE(post_simple(&p, 1, variant == 2 ? VIRTIO_IB_WR_RDMA_READ :
				    VIRTIO_IB_WR_RDMA_WRITE, &b.la, 3000, (uintptr_t)b.lb.buf,
				    b.lb.rkey) == 0);
		REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_SEND, &b.la, 10, 0, 0) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_RETRY_EXC_ERR);
		CHECK_EQ(wc[1].wr_id, 2);
		CHECK_EQ(wc[1].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(p.a->tp->stats.timeouts, 4);
		CHECK(p.a->tp->stats.retransmits >= 3);
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_ERR);
		pair_fini(&p);
	}
}

/* R_Key, bounds and access violations: REM_ACCESS_ERR at the requester,
 * both QPs in ERR; a SEND longer than the receive buffer: REM_INV_REQ_ERR
 * and LOC_LEN_ERR at the receiver. */
static void test_remote_errors(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	for (int k = 0; k < 7; k++) {
		uint8_t op = k == 2 || k == 3 ? VIRTIO_IB_WR_RDMA_READ : VIRTIO_IB_WR_RDMA_WRITE;
		uint32_t rkey, len = 2000;
		uint64_t raddr;
		struct fk_mr ro;

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		if (k == 5)
			c.path.access = VIRTIO_IB_ACCESS_LOCAL_WRITE; /* no remote access */
		pair_init(&p, &c);
		bufs_init(&p, &b, 65536);
		ro = fk_mr_reg(p.b, p.pdb, 8192, VIRTIO_IB_ACCESS_REMOTE_READ);
		rkey = b.lb.rkey;
		raddr = (uintptr_t)b.lb.buf;
		switch (k) {
		case 0: rkey ^= 0x55; break;                          /* wrong key */
		case 1: raddr += 65536 - 1000; break;                 /* past the end */
		case 2: rkey = b.lb.lkey; break;                      /* an lkey */
		case 3: raddr -= 1; break;                            /* before the start */
		case 4: rkey = ro.rkey; raddr = (uintptr_t)ro.buf; break; /* no REMOTE_WRITE */
		default: break;
		}
		if (k == 6) {
			struct fk_sge r = { b.lb.buf, 1000, b.lb.lkey };

			REQUIRE(fk_post_recv(p.b, &p.qb, 77, &r, 1) == 0);
			op = VIRTIO_IB_WR_SEND;
		}
		REQUIRE(post_simple(&p, 1, op, &b.la, len, raddr, rkey) == 0);
		REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_SEND, &b.la, 10, 0, 0) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_EQ(wc[0].status, k == 6 ? VIRTIO_IB_WC_REM_INV_REQ_ERR :
			 VIRTIO_IB_WC_REM_ACCESS_ERR);
		CHECK_EQ(wc[1].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_ERR);
		CHECK_EQ(qp_state(p.b, p.qb.qpn), VIRTIO_IB_QPS_ERR);
		if (k == 6) {
			REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
			CHECK_EQ(wc[0].wr_id, 77);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_LEN_ERR);
		}
		pair_fini(&p);
	}
}

/* A fault while placing a SEND into a receive WQE (a DMA MR's address that
 * is not guest memory passes the key check at the fetch, then faults): RC and UC both complete the receive with the status the
 * placement returned (LOC_PROT_ERR) and move the QP to ERR; RC also NAKs
 * (Remote Operational Error at the sender), UC's sender completes. */
static void test_recv_placement_fault(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	for (int uc = 0; uc <= 1; uc++) {
		uint64_t gpa = 0x7f0000000000ull; /* not in the memory table */
		struct rres_mr *mr;

		pair_cfg_default(&c, uc ? VIRTIO_IB_QPT_UC : VIRTIO_IB_QPT_RC);
		pair_init(&p, &c);
		bufs_init(&p, &b, 65536);
		REQUIRE(rres_mr_get_dma(&p.b->rd, p.pdb, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr) ==
			RRES_OK);
		{
			struct fk_sge r = { (const void *)(uintptr_t)gpa, 4096, mr->lkey };

			REQUIRE(fk_post_recv(p.b, &p.qb, 7, &r, 1) == 0);
		}
		REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_SEND, &b.la, 100, 0, 0) == 0);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 7);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_PROT_ERR);
		CHECK_EQ(qp_state(p.b, p.qb.qpn), VIRTIO_IB_QPS_ERR);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 1);
		CHECK_EQ(wc[0].status, uc ? VIRTIO_IB_WC_SUCCESS : VIRTIO_IB_WC_REM_OP_ERR);
		if (th_failed_checks)
			printf("#   %s\n", uc ? "UC" : "RC");
		pair_fini(&p);
	}
}

/* Bad WRs complete with the right status, in order, and never break the
 * ring: RC goes to ERR, UD to SQE (recoverable). */
static void test_local_errors(void)
{
	struct virtio_rdma_cq_req wc[16];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	const struct {
		uint8_t op, flags;
		uint32_t lkey_xor, nsge, len;
		int32_t trunc;
		uint16_t inl;
		uint8_t status;
		uint64_t want_id;
	} cases[] = {
		{ VIRTIO_IB_WR_SEND, 0, 0x33, 1, 100, -1, 0, VIRTIO_IB_WC_LOC_PROT_ERR, 1 },
		{ VIRTIO_IB_WR_RDMA_READ, 0, 0, 1, 70000, -1, 0, VIRTIO_IB_WC_LOC_PROT_ERR, 1 },
		{ VIRTIO_IB_WR_SEND, VIRTIO_IB_SEND_INLINE, 0, 0, 0, -1, 65,
		  VIRTIO_IB_WC_LOC_LEN_ERR, 1 },
		{ VIRTIO_IB_WR_RDMA_READ, VIRTIO_IB_SEND_INLINE, 0, 0, 0, -1, 8,
		  VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
		{ VIRTIO_IB_WR_SEND, 0, 0, 5, 10, -1, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
		{ VIRTIO_IB_WR_SEND, 0, 0, 2, 10, 576 + 20, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
		{ VIRTIO_IB_WR_SEND, 0, 0, 1, 10, 100, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
		{ VIRTIO_IB_WR_SEND, 0, 0, 1, 10, 4, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 0 },
		{ 9, 0, 0, 1, 10, -1, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
		{ VIRTIO_IB_WR_RDMA_READ + 1, 0, 0, 1, 10, -1, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR, 1 },
	};

	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		struct fk_sge s[5];
		struct fk_wr wr = {
			.wr_id = 1, .opcode = cases[k].op, .flags = cases[k].flags,
			.remote_addr = 0, .trunc = cases[k].trunc, .inline_len = cases[k].inl,
		};
		uint8_t inl[512] = { 0 };

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.max_inline = 64;
		pair_init(&p, &c);
		bufs_init(&p, &b, 65536);
		wr.remote_addr = (uintptr_t)b.lb.buf;
		wr.rkey = b.lb.rkey;
		/* A good WR first: it completes before the bad one. */
		REQUIRE(post_simple(&p, 0, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 5000,
				    (uintptr_t)b.lb.buf, b.lb.rkey) == 0);
		for (unsigned i = 0; i < cases[k].nsge; i++)
			s[i] = (struct fk_sge){ b.la.buf, cases[k].len,
						b.la.lkey ^ cases[k].lkey_xor };
		wr.sge = s;
		wr.nsge = cases[k].nsge;
		wr.inl = inl;
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_SEND, &b.la, 10, 0, 0) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 3) == 3);
		CHECK_EQ(wc[0].wr_id, 0);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[1].wr_id, cases[k].want_id);
		CHECK_EQ(wc[1].status, cases[k].status);
		CHECK_EQ(wc[2].wr_id, 2);
		CHECK_EQ(wc[2].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_ERR);
		CHECK(!p.qa.sq->r.vq.broken);
		CHECK_EQ(fk_ring_reap(p.qa.sq), 3);
		if (th_failed_checks)
			printf("#   case %u\n", k);
		pair_fini(&p);
	}
}

static void test_ud_errors(void)
{
	struct virtio_rdma_cq_req wc[16];
	struct pair_cfg c;
	struct pair p;
	struct fk_mr sa, rb;
	uint32_t ah, pd2, ah2;

	pair_cfg_default(&c, VIRTIO_IB_QPT_UD);
	pair_init(&p, &c);
	sa = fk_mr_reg(p.a, p.pda, 8192, FK_ACC_ALL);
	rb = fk_mr_reg(p.b, p.pdb, 8192, FK_ACC_ALL);
	ah = fk_ah(p.a, p.pda, p.b, &p.path);
	pd2 = fk_pd(p.a);
	ah2 = fk_ah(p.a, pd2, p.b, &p.path);
	const struct {
		uint8_t op;
		uint32_t ah, len, qkey;
		uint8_t status;
	} cases[] = {
		{ VIRTIO_IB_WR_RDMA_WRITE, 0, 10, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR },
		{ VIRTIO_IB_WR_RDMA_READ, 0, 10, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR },
		{ VIRTIO_IB_WR_SEND, 999, 10, 0, VIRTIO_IB_WC_LOC_QP_OP_ERR },
		{ VIRTIO_IB_WR_SEND, 1, 10, 0, VIRTIO_IB_WC_LOC_PROT_ERR },
		{ VIRTIO_IB_WR_SEND, 0, 1025, 0, VIRTIO_IB_WC_LOC_LEN_ERR },
	};
	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		struct fk_sge s = { sa.buf, cases[k].len, sa.lkey }, s10 = { sa.buf, 10, sa.lkey };
		struct fk_wr wr = { .wr_id = 10 + k, .opcode = cases[k].op, .remote_qpn = p.qb.qpn,
				    .remote_qkey = p.path.qkey, .sge = &s, .nsge = 1, .trunc = -1 };
		struct fk_wr next = wr;

		wr.ah = cases[k].ah == 0 ? ah : cases[k].ah == 1 ? ah2 : cases[k].ah;
		next.wr_id = 50;
		next.opcode = VIRTIO_IB_WR_SEND;
		next.ah = ah;
		next.sge = &s10;
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 10 + k);
		CHECK_EQ(wc[0].status, cases[k].status);
		/* UD: the send queue is in error (SQE); later WRs flush until
		 * the driver moves it back to RTS. */
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_SQE);
		REQUIRE(fk_post_send(p.a, &p.qa, &next) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 50);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
		CHECK_EQ(fk_modify(p.a, p.qa.qpn, VIRTIO_IB_QPS_RTS, 0, NULL), 0);
		next.flags = VIRTIO_IB_SEND_SIGNALED;
		{
			struct fk_sge r = { rb.buf, 2000, rb.lkey };

			REQUIRE(fk_post_recv(p.b, &p.qb, 60, &r, 1) == 0);
		}
		REQUIRE(fk_post_send(p.a, &p.qa, &next) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	}
	/* Q_Key: a wrong one is dropped at the receiver; bit 31 set uses the
	 * QP's own. */
	{
		struct fk_sge s = { sa.buf, 10, sa.lkey };
		struct fk_sge r = { rb.buf, 2000, rb.lkey };
		struct fk_wr wr = { .wr_id = 70, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .remote_qpn = p.qb.qpn,
				    .remote_qkey = p.path.qkey + 1, .ah = ah,
				    .sge = &s, .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_recv(p.b, &p.qb, 71, &r, 1) == 0);
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(drain_cq(&p.env, p.b, p.cqb, wc, 4), 0);
		CHECK_EQ(p.b->tp->stats.rx_qkey, 1);
		wr.remote_qkey = 0x80000000u;
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 71);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	}
	pair_fini(&p);
}

/* Unsignaled WRs: no completion, but their descriptors come back in order;
 * sq_sig_all signals everything. */
static void test_unsignaled(void)
{
	struct virtio_rdma_cq_req wc[16];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	for (int all = 0; all < 2; all++) {
		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.sig_all = all;
		pair_init(&p, &c);
		bufs_init(&p, &b, 65536);
		for (int i = 0; i < 10; i++) {
			struct fk_sge s = { b.la.buf, 3000, b.la.lkey };
			struct fk_wr wr = { .wr_id = i, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
					    .flags = i == 9 ? VIRTIO_IB_SEND_SIGNALED : 0,
					    .remote_addr = (uintptr_t)b.lb.buf, .rkey = b.lb.rkey,
					    .sge = &s, .nsge = 1, .trunc = -1 };

			REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		}
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, all ? 10 : 1) == (all ? 10u : 1u));
		CHECK_EQ(wc[all ? 9 : 0].wr_id, 9);
		CHECK_EQ(drain_cq(&p.env, p.a, p.cqa, wc, 16), 0);
		CHECK_EQ(fk_ring_reap(p.qa.sq), 10);
		pair_fini(&p);
	}
}

/* A polled completion frees its WRs' places: when a CQ ring is published,
 * the send ring already gives back the descriptors of the WRs it covers
 * (unsignaled ones before it included), so a driver that posts again right
 * after polling finds its queue's room. */
struct publish_watch {
	struct vhost_vring *cq;
	struct fk_ring *sq;
	unsigned cq_publishes;
	uint16_t sq_used_at_cq;
};

static void publish_watch_hook(struct vhost_vring *r, void *arg)
{
	struct publish_watch *w = arg;

	if (r != w->cq)
		return;
	w->cq_publishes++;
	w->sq_used_at_cq = le16toh(__atomic_load_n(&w->sq->drv.used->idx, __ATOMIC_ACQUIRE));
}

static void test_sq_published_before_cq(void)
{
	struct virtio_rdma_cq_req wc[16];
	struct publish_watch w = { 0 };
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	w.cq = &fk_cq_ring(p.a, p.cqa)->r;
	w.sq = p.qa.sq;
	fk_publish_hook = publish_watch_hook;
	fk_publish_arg = &w;
	for (int i = 0; i < 10; i++) {
		struct fk_sge s = { b.la.buf, 3000, b.la.lkey };
		struct fk_wr wr = { .wr_id = i, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
				    .flags = i == 9 ? VIRTIO_IB_SEND_SIGNALED : 0,
				    .remote_addr = (uintptr_t)b.lb.buf, .rkey = b.lb.rkey,
				    .sge = &s, .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1u);
	fk_publish_hook = NULL;
	CHECK_EQ(wc[0].wr_id, 9);
	CHECK(w.cq_publishes >= 1);
	CHECK_EQ(w.sq_used_at_cq, 10);
	CHECK_EQ(fk_ring_reap(p.qa.sq), 10);
	pair_fini(&p);
}

/* A fenced WRITE waits for the READ before it: the READ sees the old data
 * although the WRITE overwrites the same remote bytes. */
static void test_fence(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	uint8_t *old;
	const uint32_t len = 1u << 20;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.mtu = VIRTIO_IB_MTU_256;
	pair_init(&p, &c);
	bufs_init(&p, &b, 2 * len);
	old = malloc(len);
	fk_fill(b.lb.buf, len, 7);
	memcpy(old, b.lb.buf, len);
	fk_fill(b.la.buf + len, len, 8);
	{
		struct fk_sge rd = { b.la.buf, len, b.la.lkey };
		struct fk_sge wr_s = { b.la.buf + len, len, b.la.lkey };
		struct fk_wr r = { .wr_id = 1, .opcode = VIRTIO_IB_WR_RDMA_READ,
				   .flags = VIRTIO_IB_SEND_SIGNALED,
				   .remote_addr = (uintptr_t)b.lb.buf,
				   .rkey = b.lb.rkey, .sge = &rd, .nsge = 1, .trunc = -1 };
		struct fk_wr w = { .wr_id = 2, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
				   .flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_FENCE,
				   .remote_addr = (uintptr_t)b.lb.buf, .rkey = b.lb.rkey,
				   .sge = &wr_s, .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_send(p.a, &p.qa, &r) == 0);
		REQUIRE(fk_post_send(p.a, &p.qa, &w) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[1].wr_id, 2);
	CHECK(memcmp(b.la.buf, old, len) == 0);
	CHECK(memcmp(b.lb.buf, b.la.buf + len, len) == 0);
	free(old);
	pair_fini(&p);
}

/* SQD: started WRs finish, new ones wait until SQD -> RTS. */
static void test_sqd(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	struct rres_qp *qp;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	qp = rres_qp_lookup(&p.a->rd, p.qa.qpn);
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 1u << 20, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	fk_spin(&p.env, 2);
	CHECK_EQ(fk_modify(p.a, p.qa.qpn, VIRTIO_IB_QPS_SQD, 0, NULL), 0);
	REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 100, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 1);
	fk_spin(&p.env, 20);
	CHECK(!qp->sq_draining);
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 4), 0);
	CHECK_EQ(fk_modify(p.a, p.qa.qpn, VIRTIO_IB_QPS_RTS, 0, NULL), 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	pair_fini(&p);
}

/* Address vectors without a MAC: the device resolves it (ARP / ND), each
 * device answering for its own addresses. */
static void test_neigh(void)
{
	for (int v6 = 0; v6 < 2; v6++) {
		struct pair_cfg c;
		struct bufs b;
		struct pair p;

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.path.zero_dmac = true;
		c.path.ipv6 = v6;
		pair_init(&p, &c);
		bufs_init(&p, &b, 1u << 20);
		for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
			CHECK(do_op(&p, &b, all_ops[o], 50000, 2, false, o));
		CHECK_EQ(p.a->tp->stats.neigh_requests, 1);
		CHECK_EQ(p.a->tp->stats.neigh_resolved, 1);
		CHECK_EQ(p.b->tp->stats.neigh_replies, 1);
		CHECK_EQ(p.a->tp->stats.neigh_dropped, 0);
		CHECK_EQ(v6 ? p.b->tp->stats.rx_nd : p.b->tp->stats.rx_arp, 2);
		pair_fini(&p);
	}
}

/* No poisoning: once B is resolved, an unsolicited ARP request or reply
 * claiming B's address for another MAC changes nothing (neigh_ignored), and
 * traffic still reaches B without a new resolution. */
static void test_neigh_no_poisoning(void)
{
	static const uint8_t evil[6] = { 0x02, 0xee, 0, 0, 0, 1 };
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.zero_dmac = true;
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	REQUIRE(p.a->rd.gid[1].valid && p.b->rd.gid[1].valid);
	CHECK(do_op(&p, &b, all_ops[0], 50000, 2, false, 0));
	CHECK_EQ(p.a->tp->stats.neigh_resolved, 1);
	for (int oper = 1; oper <= 2; oper++) {
		struct pkt *k = pkt_alloc();
		uint8_t *a;

		REQUIRE(k);
		k->len = 60;
		memset(k->data, 0, 60);
		memcpy(k->data, p.a->rd.mac, 6);
		memcpy(k->data + 6, evil, 6);
		k->data[12] = 0x08;
		k->data[13] = 0x06;
		a = k->data + 14;
		a[1] = 1;
		a[2] = 0x08;
		a[4] = 6;
		a[5] = 4;
		a[7] = (uint8_t)oper;
		memcpy(a + 8, evil, 6);
		memcpy(a + 14, p.b->rd.gid[1].raw + 12, 4);
		memcpy(a + 18, p.a->rd.mac, 6);
		memcpy(a + 24, p.a->rd.gid[1].raw + 12, 4);
		roce_neigh_rx(p.a->tp->neigh, k);
	}
	CHECK_EQ(p.a->tp->stats.neigh_ignored, 2);
	CHECK(do_op(&p, &b, all_ops[0], 50000, 2, false, 1));
	CHECK_EQ(p.a->tp->stats.neigh_requests, 1);
	CHECK_EQ(p.a->tp->stats.neigh_resolved, 1);
	pair_fini(&p);
}

/* Pinned addresses of local devices are cached per destination: a MAC
 * change or an unregistration in the port-security registry is seen by the
 * next look-up. */
static void test_neigh_pinned_follows_registry(void)
{
	static const uint8_t moved[6] = { 0x02, 0x77, 0, 0, 0, 9 };
	struct pair_cfg c;
	struct psec ps;
	struct pair p;
	uint8_t mac[6];
	const uint8_t *sgid, *dgid;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.zero_dmac = true;
	pair_init(&p, &c);
	REQUIRE(p.a->rd.gid[1].valid && p.b->rd.gid[1].valid);
	sgid = p.a->rd.gid[1].raw;
	dgid = p.b->rd.gid[1].raw;
	fk_dev_pin(p.b, &ps);
	for (int i = 0; i < 3; i++) {
		memset(mac, 0, 6);
		CHECK(roce_neigh_lookup(p.a->tp->neigh, sgid, dgid, mac));
		CHECK(!memcmp(mac, p.b->rd.mac, 6));
	}
	CHECK_EQ(p.a->tp->stats.neigh_pinned, 3);
	psec_set_mac(&ps, moved);
	CHECK(roce_neigh_lookup(p.a->tp->neigh, sgid, dgid, mac));
	CHECK(!memcmp(mac, moved, 6));
	psec_unregister(&ps);
	/* no longer pinned: resolution starts (ARP), nothing usable yet */
	CHECK(!roce_neigh_lookup(p.a->tp->neigh, sgid, dgid, mac));
	CHECK_EQ(p.a->tp->stats.neigh_pinned, 4);
	CHECK_EQ(p.a->tp->stats.neigh_requests, 1);
	pair_fini(&p);
}

/* The first message is sent right after RTS, before the ARP answer can
 * have arrived: the requester waits for the MAC (resolution started at
 * RTR), so nothing is dropped, rewound or sent twice. */
static void test_neigh_early_send(void)
{
	for (int v6 = 0; v6 < 2; v6++) {
		struct pair_cfg c;
		struct bufs b;
		struct pair p;

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.path.zero_dmac = true;
		c.path.ipv6 = v6;
		pair_init(&p, &c);
		bufs_init(&p, &b, 1u << 20);
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_RDMA_WRITE, 1u << 20, 1, false, 7));
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 300000, 2, false, 8));
		CHECK_EQ(p.a->tp->stats.neigh_dropped + p.b->tp->stats.neigh_dropped, 0);
		CHECK_EQ(p.a->tp->stats.neigh_queued, 0);
		CHECK_EQ(p.a->tp->stats.rewinds, 0);
		/* nothing resent for loss; a loss probe may fire when this
		 * process is descheduled (timer-driven), and is only a probe */
		CHECK_EQ(p.a->tp->stats.retransmits, p.a->tp->stats.probes);
		CHECK_EQ(p.b->tp->stats.rx_seq_err, 0);
		CHECK_EQ(p.a->tp->stats.neigh_resolved, 1);
		pair_fini(&p);
	}
}

static bool neigh_retried(void *arg)
{
	const struct roce_tp *tp = arg;

	return tp->stats.neigh_failed >= 1 && tp->stats.neigh_requests > ROCE_TP_NEIGH_TRIES;
}

/* Nobody owns the destination: the UD send waits (no frame, no PSN), the
 * round of requests fails and is repeated after the backoff. */
static void test_neigh_unreachable(void)
{
	struct pair_cfg c;
	struct pair p;
	struct fk_mr sa;
	struct virtio_rdma_ah_attr a;
	struct virtio_rdma_cq_req wc[4];
	uint32_t ah;

	pair_cfg_default(&c, VIRTIO_IB_QPT_UD);
	c.path.zero_dmac = true;
	pair_init(&p, &c);
	sa = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	fk_ah_attr(p.b, &p.path, &a);
	a.grh.dgid[15] ^= 0x80; /* an address nobody answers for */
	REQUIRE(rres_ah_create(&p.a->rd, p.pda, &a, &ah) == 0);
	CHECK_EQ(p.a->tp->stats.neigh_requests, 1); /* asked when the AH was made */
	{
		struct fk_sge s = { sa.buf, 64, sa.lkey };
		struct fk_wr wr = {
			.wr_id = 1, .opcode = VIRTIO_IB_WR_SEND, .flags = VIRTIO_IB_SEND_SIGNALED,
			.remote_qpn = p.qb.qpn, .remote_qkey = p.path.qkey, .ah = ah,
			.sge = &s, .nsge = 1, .trunc = -1,
		};

		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	CHECK(fk_run_until(&p.env, neigh_retried, p.a->tp, 20000));
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 4), 0);
	CHECK_EQ(p.a->tp->stats.tx_frames, p.a->tp->stats.neigh_requests);
	CHECK_EQ(p.a->tp->stats.neigh_dropped, 0);
	CHECK(p.a->tp->stats.neigh_waits >= 1);
	pair_fini(&p);
}

static void set_ecn(struct pair *p, const char *spec)
{
	struct fault_cfg cfg;

	REQUIRE(fault_cfg_parse(&cfg, spec) == 0);
	REQUIRE(sw_set_fault(p->env.sw, &cfg, NULL) == 0);
}

/* Every data packet arrives CE-marked: the receiver answers with a CNP
 * (one per QP per interval: here a long one, so exactly one), the sender's
 * reaction point lowers the QP's rate and paces it; the data stays exact. */
static void test_cc_cnp_once(void)
{
	for (int t = 0; t < 2; t++) {
		struct pair_cfg c;
		struct bufs b;
		struct pair p;
		struct roce_tq *tq;

		pair_cfg_default(&c, t ? VIRTIO_IB_QPT_UC : VIRTIO_IB_QPT_RC);
		pair_init(&p, &c);
		p.b->tp->cc.cnp_interval_ns = 3600ull * 1000000000ull;
		p.a->tp->cc.line_rate_bps = 200000000ull; /* 200 Mbit/s */
		set_ecn(&p, "ecn=100,seed=3");
		bufs_init(&p, &b, 1u << 20);
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_RDMA_WRITE, 1u << 20, 1, false, 1));
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_SEND, 200000, 1, false, 2));
		CHECK_EQ(p.b->tp->stats.cnp_sent, 1);
		CHECK_EQ(p.a->tp->stats.rx_cnp, 1);
		CHECK_EQ(p.a->tp->stats.cc_decreases, 1);
		CHECK(p.b->tp->stats.rx_ce > 100);
		CHECK(p.a->tp->stats.cc_paced > 0);
		tq = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
		CHECK(roce_cc_rate(tq) <= 200000000ull);
		pair_fini(&p);
	}
}

/* CNPs at most once per interval and per QP; each lowers the rate; with
 * congestion control off nothing is sent or paced. */
static void test_cc_interval_and_off(void)
{
	for (int off = 0; off < 2; off++) {
		struct pair_cfg c;
		struct bufs b;
		struct pair p;

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		pair_init(&p, &c);
		p.a->tp->cc.enabled = p.b->tp->cc.enabled = !off;
		set_ecn(&p, "ecn=50,seed=9");
		bufs_init(&p, &b, 1u << 20);
		CHECK(do_op(&p, &b, VIRTIO_IB_WR_RDMA_WRITE, 1u << 20, 1, false, 1));
		CHECK(p.b->tp->stats.rx_ce > 100);
		if (off) {
			CHECK_EQ(p.b->tp->stats.cnp_sent, 0);
			CHECK_EQ(p.a->tp->stats.cc_paced, 0);
		} else {
			CHECK(p.b->tp->stats.cnp_sent >= 1);
			CHECK(p.b->tp->stats.cnp_sent <= p.b->tp->stats.rx_ce);
			CHECK_EQ(p.a->tp->stats.cc_decreases, p.a->tp->stats.rx_cnp);
		}
		pair_fini(&p);
	}
}

/* The receive queue marks CE above its threshold (here: behind one frame),
 * which drives CNPs back to the sender; the data stays exact. */
static void test_cc_queue_marks(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	p.b->tp->cc.mark_qlen = 1;
	bufs_init(&p, &b, 1u << 20);
	CHECK(do_op(&p, &b, VIRTIO_IB_WR_RDMA_WRITE, 1u << 20, 1, false, 4));
	CHECK(p.b->tp->stats.rx_ce_marked > 0);
	CHECK_EQ(p.b->tp->stats.rx_ce, p.b->tp->stats.rx_ce_marked);
	CHECK(p.b->tp->stats.cnp_sent >= 1);
	CHECK_EQ(p.a->tp->stats.rx_cnp, p.b->tp->stats.cnp_sent);
	pair_fini(&p);
}

/* Every frame on the switch is captured; each RoCE frame's ICRC is
 * checked here and, when available, by scapy. Every frame has TTL 64 (the
 * AV says 1), the AV's DSCP and ECT(0). */
static void test_pcap_icrc(void)
{
	char path[] = "/tmp/vrdma_roce_tp_XXXXXX";
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	int fd = mkstemp(path);
	unsigned frames = 0, roce = 0, bad = 0;
	FILE *f;

	REQUIRE(fd >= 0);
	close(fd);
	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.path.tclass = 0x68 | 1; /* DSCP 26; the ECN bits are the device's */
	pair_init(&p, &c);
	REQUIRE(sw_set_pcap(p.env.sw, path) == 0);
	bufs_init(&p, &b, 1u << 20);
	for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
		CHECK(do_op(&p, &b, all_ops[o], 3000, 1, false, o));
	REQUIRE(sw_set_pcap(p.env.sw, NULL) == 0);
	pair_fini(&p);
	f = fopen(path, "rb");
	REQUIRE(f);
	{
		uint8_t gh[24], rh[16];
		static uint8_t frame[65536];

		REQUIRE(fread(gh, 1, 24, f) == 24);
		while (fread(rh, 1, 16, f) == 16) {
			uint32_t incl;

			memcpy(&incl, rh + 8, 4);
			if (incl > sizeof(frame) || fread(frame, 1, incl, f) != incl)
				break;
			frames++;
			if (incl > 42 && frame[12] == 0x08 && frame[13] == 0 && frame[23] == 17 &&
			    frame[36] == 0x12 && frame[37] == 0xb7) {
				roce++;
				bad += roce_icrc_frame_verify(frame, incl) != 0;
				bad += frame[22] != 64;                          /* TTL */
				bad += frame[15] != (0x68 | ROCE_ECN_ECT0);       /* TOS */
			}
		}
	}
	fclose(f);
	CHECK(roce > 10);
	CHECK_EQ(bad, 0);
	if (!access("/usr/bin/python3", X_OK) &&
	    system("/usr/bin/python3 -c 'from scapy.contrib.roce import BTH' 2>/dev/null") == 0) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/python3 - '%s' <<'EOF'\n"
			 "import sys, logging\n"
			 "logging.getLogger('scapy.runtime').setLevel(logging.ERROR)\n"
			 "from scapy.all import rdpcap, raw, UDP\n"
			 "from scapy.contrib.roce import BTH\n"
			 "n = bad = 0\n"
			 "for f in rdpcap(sys.argv[1]):\n"
			 "    if UDP in f and f[UDP].dport == 4791:\n"
			 "        n += 1\n"
			 "        g = f.copy(); g[BTH].icrc = None\n"
			 "        if raw(g.__class__(raw(g)))[-4:] != raw(f)[-4:]: bad += 1\n"
			 "sys.exit(0 if n and not bad else 1)\n"
			 "EOF", path);
		CHECK_EQ(system(cmd), 0);
	}
	unlink(path);
	CHECK(frames >= roce);
}

static void test_polled_rings_traffic(void)
{
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.sq_polled = true;
	c.rq_polled = true;
	pair_init(&p, &c);
	bufs_init(&p, &b, 1u << 20);
	for (unsigned o = 0; o < ARRAY_SIZE(all_ops); o++)
		CHECK(do_op(&p, &b, all_ops[o], 70000, 2, false, o));
	pair_fini(&p);
}

/* While the device serves a send ring it suppresses its kicks; a WR posted
 * then (no kick) must still be found when the loop is about to sleep. */
static void test_quiet_send_ring(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	uint64_t kicks;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 3000, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	/* The pollers run, the loop never sleeps: WR 1 is taken (kicks
	 * off), sent, acknowledged and completed. */
	for (int i = 0; i < 4; i++) {
		roce_tp_poll(p.a->tp);
		roce_tp_poll(p.b->tp);
	}
	REQUIRE(fk_poll_cq(p.a, p.cqa, wc, 4) == 1);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK(!p.qa.sq->r.vq.notify_enabled);
	/* the driver posts WR 2 and is told not to kick */
	kicks = p.qa.sq->kicks;
	REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 100, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	CHECK_EQ(p.qa.sq->kicks, kicks);
	/* about to sleep: kicks back on, and the WR found */
	CHECK(roce_tp_arm(p.a->tp));
	CHECK(p.qa.sq->r.vq.notify_enabled);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 2);
	pair_fini(&p);
}

/* A quiet send ring found idle by ROCE_TP_QUIET_IDLE polls gets its kicks
 * back without the loop sleeping (polls do not look at idle QPs forever),
 * and the driver's next post kicks and is served. */
static void test_quiet_ring_rearms(void)
{
	const struct roce_tp_stats *st;
	struct virtio_rdma_cq_req wc[4];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	uint64_t kicks;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	pair_init(&p, &c);
	bufs_init(&p, &b, 65536);
	st = roce_tp_get_stats(p.a->tp);
	REQUIRE(post_simple(&p, 1, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 3000, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	for (int i = 0; i < 2; i++) {
		roce_tp_poll(p.a->tp);
		roce_tp_poll(p.b->tp);
	}
	CHECK(!p.qa.sq->r.vq.notify_enabled);
	CHECK_EQ(st->sched_quiet_rearms, 0);
	for (int i = 0; i < ROCE_TP_QUIET_IDLE + 2; i++) {
		roce_tp_poll(p.a->tp);
		roce_tp_poll(p.b->tp);
	}
	CHECK(p.qa.sq->r.vq.notify_enabled);
	CHECK_EQ(st->sched_quiet_rearms, 1);
	REQUIRE(fk_poll_cq(p.a, p.cqa, wc, 4) == 1);
	CHECK_EQ(wc[0].wr_id, 1);
	kicks = p.qa.sq->kicks;
	REQUIRE(post_simple(&p, 2, VIRTIO_IB_WR_RDMA_WRITE, &b.la, 100, (uintptr_t)b.lb.buf,
			    b.lb.rkey) == 0);
	CHECK(p.qa.sq->kicks > kicks);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK(st->sched_turns > 0);
	pair_fini(&p);
}

/* The send budget per loop pass is the device's (roce_sched.c): contexts a1
 * and a2 of device A share one, context b of device B has its own. All
 * three write the same amount to r over SCHED_QPS QPs each, so each wants
 * more than a budget per pass; pass by pass a1 and a2 together send no more
 * than ROCE_TP_RUN_BUDGET packets, as b alone, and everything arrives. */
#define SCHED_QPS  10
#define SCHED_WRS  2
#define SCHED_LEN  32768u

static void test_device_send_budget(void)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 96u << 20, .qps = 4 * SCHED_QPS };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .sq_num = 64, .rq_num = 64,
				.max_send_wr = 64, .max_recv_wr = 64 };
	static struct roce_sched sa, sb;
	struct virtio_rdma_cq_req wc[64];
	struct fk_dev *s[3], *r;
	struct fk_qp qs[3][SCHED_QPS], qr;
	struct fk_mr ms[3], mr;
	uint32_t cq[3], pd[3], pdr, cqr, got[3] = { 0 };
	uint64_t want = SCHED_QPS * SCHED_WRS, seg = SCHED_WRS * SCHED_LEN, before[3];
	uint64_t sent_max_a = 0, passes = 0;
	struct fk_path path;
	struct fk_env env;
	unsigned i, j;

	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	fk_path_default(&path);
	path.timeout = 0; /* no retransmit timer: nothing is lost */
	REQUIRE(fk_env_init(&env, true) == 0);
	for (i = 0; i < 3; i++)
		s[i] = fk_dev_new(&env, &dc);
	r = fk_dev_new(&env, &dc);
	roce_tp_share_send_budget(s[0]->tp, &sa);
	roce_tp_share_send_budget(s[1]->tp, &sa);
	roce_tp_share_send_budget(s[2]->tp, &sb);
	CHECK_EQ(sa.ntp, 2u);
	pdr = fk_pd(r);
	cqr = fk_cq(r, 256, 64, true);
	mr = fk_mr_reg(r, pdr, 3 * SCHED_QPS * seg, FK_ACC_ALL);
	for (i = 0; i < 3; i++) {
		pd[i] = fk_pd(s[i]);
		cq[i] = fk_cq(s[i], 256, 64, true);
		ms[i] = fk_mr_reg(s[i], pd[i], SCHED_QPS * seg, FK_ACC_ALL);
		fk_fill(ms[i].buf, SCHED_QPS * seg, 40 + i);
		for (j = 0; j < SCHED_QPS; j++) {
			qc.pdn = pd[i];
			qc.scq = qc.rcq = cq[i];
			qs[i][j] = fk_qp_new(s[i], &qc);
			qc.pdn = pdr;
			qc.scq = qc.rcq = cqr;
			qr = fk_qp_new(r, &qc);
			REQUIRE(fk_connect(s[i], qs[i][j].qpn, r, qr.qpn, &path) == 0);
			REQUIRE(fk_connect(r, qr.qpn, s[i], qs[i][j].qpn, &path) == 0);
		}
	}
	memset(mr.buf, 0x5a, 3 * SCHED_QPS * seg);
	for (i = 0; i < 3; i++)
		for (j = 0; j < SCHED_QPS; j++)
			for (unsigned k = 0; k < SCHED_WRS; k++) {
				uint64_t off = j * seg + k * SCHED_LEN;

				REQUIRE(post_write(s[i], &qs[i][j], k, ms[i].buf + off, ms[i].lkey,
						   mr.buf + i * SCHED_QPS * seg + off, mr.rkey,
						   SCHED_LEN) == 0);
			}
	/* Pass by pass (no timing: one loop iteration each). */
	while ((got[0] < want || got[1] < want || got[2] < want) && passes < 1000000) {
		uint64_t da, db;

		for (i = 0; i < 3; i++)
			before[i] = s[i]->tp->stats.tx_frames;
		loop_run_once(env.loop, 0);
		passes++;
		da = s[0]->tp->stats.tx_frames - before[0] + s[1]->tp->stats.tx_frames - before[1];
		db = s[2]->tp->stats.tx_frames - before[2];
		CHECK(da <= ROCE_TP_RUN_BUDGET);
		CHECK(db <= ROCE_TP_RUN_BUDGET);
		if (da > ROCE_TP_RUN_BUDGET || db > ROCE_TP_RUN_BUDGET)
			break;
		sent_max_a = MAX(sent_max_a, da);
		for (i = 0; i < 3; i++)
			if (got[i] < want)
				got[i] += fk_poll_cq(s[i], cq[i], wc,
						     (unsigned)MIN(want - got[i], (uint64_t)64));
	}
	for (i = 0; i < 3; i++) {
		CHECK_EQ(got[i], want);
		CHECK(memcmp(ms[i].buf, mr.buf + i * SCHED_QPS * seg, SCHED_QPS * seg) == 0);
		CHECK_EQ(s[i]->tp->stats.retransmits, 0u);
	}
	/* The device's budget was what cut A's contexts short. */
	CHECK(sa.budget_out > 0);
	CHECK(sent_max_a > 0);
	fk_env_fini(&env);
	CHECK_EQ(sa.ntp, 0u);
	CHECK_EQ(sb.ntp, 0u);
}

/* The shares of roce_sched.c alone (transports with nothing but a loop):
 * with more contexts than packets per pass each still gets one within
 * ceil(n / budget) passes; with few, a context that leaves its share unused
 * passes it on, and the device never exceeds ROCE_TP_RUN_BUDGET. */
static void test_device_send_shares(void)
{
	enum { MANY = 300 };
	static struct roce_tp tps[MANY];
	static uint32_t got[MANY];
	struct roce_sched sc;
	struct loop *l = loop_new();
	unsigned i, pass;
	uint32_t sum, a;

	REQUIRE(l);
	memset(&sc, 0, sizeof(sc));
	memset(tps, 0, sizeof(tps));
	memset(got, 0, sizeof(got));
	for (i = 0; i < MANY; i++) {
		tps[i].loop = l;
		roce_tp_share_send_budget(&tps[i], &sc);
	}
	for (pass = 0; pass < 2; pass++) {
		loop_run_once(l, 0);
		sum = 0;
		for (i = 0; i < MANY; i++) {
			a = roce_sched_take(&tps[i]);
			roce_sched_spent(&tps[i], a);
			got[i] += a;
			sum += a;
		}
		CHECK_EQ(sum, (uint32_t)ROCE_TP_RUN_BUDGET);
	}
	for (i = 0; i < MANY; i++)
		CHECK(got[i] >= 1); /* none starves */
	for (i = 0; i < MANY; i++)
		roce_tp_share_send_budget(&tps[i], NULL);
	CHECK_EQ(sc.ntp, 0u);

	/* Three contexts: the first is idle, its share goes to the others. */
	for (i = 0; i < 3; i++)
		roce_tp_share_send_budget(&tps[i], &sc);
	loop_run_once(l, 0);
	a = roce_sched_take(&tps[0]);
	CHECK(a >= ROCE_TP_RUN_BUDGET / 3 && a <= ROCE_TP_RUN_BUDGET / 3 + 1);
	roce_sched_spent(&tps[0], 0);
	a = roce_sched_take(&tps[1]);
	CHECK(a >= 2 * (ROCE_TP_RUN_BUDGET / 3));
	roce_sched_spent(&tps[1], a);
	a = roce_sched_take(&tps[2]);
	roce_sched_spent(&tps[2], a);
	CHECK(a >= ROCE_TP_RUN_BUDGET / 3);
	CHECK_EQ(sc.left, 0u);
	/* Asked again in the same pass: nothing more. */
	CHECK_EQ(roce_sched_take(&tps[1]), 0u);
	for (i = 0; i < 3; i++)
		roce_tp_share_send_budget(&tps[i], NULL);
	loop_free(l);
}

/* ---- batches of small WRs ------------------------------------------------------ */

/* One fetch takes many WRs (posted before the engine runs): small WRITEs
 * with an SGE, inline WRITEs and SENDs of every inline length class, WRs
 * whose header and SGEs are separate descriptors, SENDs. All complete in
 * order with their data in place byte for byte. */
static void test_sq_batch_mixed(void)
{
	enum { N = 60, SLOT = 1024 };
	struct virtio_rdma_cq_req wc[N];
	uint32_t rlen[N];
	uint8_t kind[N];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;
	unsigned nrecv = 0;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.max_inline = 512;
	c.sq_num = 128; /* a split WR takes two descriptors */
	pair_init(&p, &c);
	bufs_init(&p, &b, N * SLOT);
	memset(b.lb.buf, 0x5a, N * SLOT);
	for (unsigned i = 0; i < N; i++) {
		uint8_t *src = (uint8_t *)b.la.buf + i * SLOT, *dst = (uint8_t *)b.lb.buf + i * SLOT;
		const uint32_t inl_lens[] = { 1, 7, 64, 300, 512 };
		struct fk_sge s = { src, 64, b.la.lkey };
		struct fk_wr wr = { .wr_id = 100 + i, .flags = VIRTIO_IB_SEND_SIGNALED,
				    .remote_addr = (uintptr_t)dst, .rkey = b.lb.rkey,
				    .sge = &s, .nsge = 1, .trunc = -1 };

		kind[i] = (uint8_t)(i % 4);
		rlen[i] = 64;
		wr.opcode = kind[i] == 3 ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE;
		if (kind[i] == 1 || (kind[i] == 3 && i % 8 == 7)) {
			rlen[i] = inl_lens[i % ARRAY_SIZE(inl_lens)];
			wr.flags |= VIRTIO_IB_SEND_INLINE;
			wr.inl = src;
			wr.inline_len = (uint16_t)rlen[i];
			wr.nsge = 0;
		}
		wr.split = kind[i] == 2;
		fk_fill(src, rlen[i], 7 * i + 1);
		if (kind[i] == 3) {
			struct fk_sge r = { dst, SLOT, b.lb.lkey };

			REQUIRE(fk_post_recv(p.b, &p.qb, 500 + i, &r, 1) == 0);
			nrecv++;
		}
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, N) == N);
	for (unsigned i = 0; i < N; i++) {
		CHECK_EQ(wc[i].wr_id, 100 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, rlen[i]);
	}
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, nrecv) == nrecv);
	for (unsigned i = 0, k = 0; i < N; i++) {
		const uint8_t *src = (uint8_t *)b.la.buf + i * SLOT;
		const uint8_t *dst = (uint8_t *)b.lb.buf + i * SLOT;

		CHECK(memcmp(src, dst, rlen[i]) == 0);
		CHECK_EQ(dst[rlen[i]], 0x5a);
		if (kind[i] == 3) {
			CHECK_EQ(wc[k].wr_id, 500 + i);
			CHECK_EQ(wc[k].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[k].byte_len, rlen[i]);
			k++;
		}
		if (th_failed_checks) {
			printf("#   WR %u (kind %u, %u bytes)\n", i, kind[i], rlen[i]);
			break;
		}
	}
	CHECK_EQ(fk_ring_reap(p.qa.sq), N);
	CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_RTS);
	pair_fini(&p);
}

/* A bad WR in the middle of one fetch: the WRs before it complete (in
 * order, data in place), it completes with its own error and wr_id, the
 * ones after it are flushed; the ring is not broken. Bad: a wrong lkey,
 * inline data over the QP's limit, a chain shorter than its SGEs. */
static void test_sq_batch_bad_middle(void)
{
	enum { GOOD = 12, AFTER = 6, N = GOOD + 1 + AFTER };
	const struct {
		uint32_t lkey_xor;
		uint16_t inl;
		int32_t trunc;
		uint8_t status;
	} cases[] = {
		{ 0x77, 0, -1, VIRTIO_IB_WC_LOC_PROT_ERR },
		{ 0, 65, -1, VIRTIO_IB_WC_LOC_LEN_ERR },
		{ 0, 0, 576 + 8, VIRTIO_IB_WC_LOC_QP_OP_ERR },
	};

	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		struct virtio_rdma_cq_req wc[N];
		struct pair_cfg c;
		struct bufs b;
		struct pair p;

		pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
		c.max_inline = 64;
		pair_init(&p, &c);
		bufs_init(&p, &b, N * 64);
		fk_fill(b.la.buf, N * 64, k + 3);
		memset(b.lb.buf, 0x5a, N * 64);
		for (unsigned i = 0; i < N; i++) {
			struct fk_sge s = { (uint8_t *)b.la.buf + i * 64, 64, b.la.lkey };
			struct fk_wr wr = { .wr_id = i, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
					    .flags = VIRTIO_IB_SEND_SIGNALED,
					    .remote_addr = (uintptr_t)b.lb.buf + i * 64,
					    .rkey = b.lb.rkey, .sge = &s, .nsge = 1, .trunc = -1 };

			if (i == GOOD) {
				s.lkey ^= cases[k].lkey_xor;
				wr.trunc = cases[k].trunc;
				if (cases[k].inl) {
					wr.flags |= VIRTIO_IB_SEND_INLINE;
					wr.inl = s.addr;
					wr.inline_len = cases[k].inl;
				}
			}
			REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
		}
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, N) == N);
		for (unsigned i = 0; i < N; i++) {
			CHECK_EQ(wc[i].wr_id, i);
			CHECK_EQ(wc[i].status, i < GOOD ? VIRTIO_IB_WC_SUCCESS :
					       i == GOOD ? cases[k].status : VIRTIO_IB_WC_WR_FLUSH_ERR);
		}
		CHECK(memcmp(b.la.buf, b.lb.buf, GOOD * 64) == 0);
		CHECK_EQ(((uint8_t *)b.lb.buf)[GOOD * 64], 0x5a);
		CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_ERR);
		CHECK(!p.qa.sq->r.vq.broken);
		CHECK_EQ(fk_ring_reap(p.qa.sq), N);
		if (th_failed_checks)
			printf("#   case %u\n", k);
		pair_fini(&p);
	}
}

/* WRs whose 576-byte request is cut into three descriptors inside the
 * header, the inline area or the num_sge word (the fetch's path for a
 * request not in one piece): SGE and inline WRITEs of several lengths
 * complete in order, data byte for byte, nothing written beyond. */
static void test_sq_cut_requests(void)
{
	enum { N = 24, SLOT = 1024 };
	static const uint32_t cuts[][2] = {
		{ 1, 47 }, { 20, 50 }, { 48, 560 }, { 100, 561 }, { 559, 562 }, { 563, 575 },
		{ 8, 16 }, { 300, 400 },
	};
	struct virtio_rdma_cq_req wc[N];
	uint32_t rlen[N];
	struct pair_cfg c;
	struct bufs b;
	struct pair p;

	pair_cfg_default(&c, VIRTIO_IB_QPT_RC);
	c.max_inline = 512;
	c.sq_num = 128;
	pair_init(&p, &c);
	bufs_init(&p, &b, N * SLOT);
	memset(b.lb.buf, 0x5a, N * SLOT);
	for (unsigned i = 0; i < N; i++) {
		uint8_t *src = (uint8_t *)b.la.buf + i * SLOT, *dst = (uint8_t *)b.lb.buf + i * SLOT;
		struct fk_sge s = { src, 64 + i, b.la.lkey };
		struct fk_wr wr = { .wr_id = 100 + i, .flags = VIRTIO_IB_SEND_SIGNALED,
				    .opcode = VIRTIO_IB_WR_RDMA_WRITE,
				    .remote_addr = (uintptr_t)dst, .rkey = b.lb.rkey,
				    .sge = &s, .nsge = 1, .trunc = -1 };

		rlen[i] = 64 + i;
		if (i & 1) {
			rlen[i] = 3 + 21 * i;
			wr.flags |= VIRTIO_IB_SEND_INLINE;
			wr.inl = src;
			wr.inline_len = (uint16_t)rlen[i];
			wr.nsge = 0;
		}
		wr.cut[0] = cuts[i % 8][0];
		wr.cut[1] = cuts[i % 8][1];
		fk_fill(src, rlen[i], 7 * i + 1);
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, N) == N);
	for (unsigned i = 0; i < N; i++) {
		const uint8_t *src = (uint8_t *)b.la.buf + i * SLOT;
		const uint8_t *dst = (uint8_t *)b.lb.buf + i * SLOT;
		int fails = th_failed_checks;

		CHECK_EQ(wc[i].wr_id, 100 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, rlen[i]);
		CHECK(memcmp(src, dst, rlen[i]) == 0);
		CHECK_EQ(dst[rlen[i]], 0x5a);
		if (th_failed_checks != fails) {
			printf("#   WR %u\n", i);
			break;
		}
	}
	CHECK_EQ(qp_state(p.a, p.qa.qpn), VIRTIO_IB_QPS_RTS);
	pair_fini(&p);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	TEST_PROGRAM("test_roce_tp");
	vlog_level = VLOG_ERR;
	RUN(test_flush_in_err);
	RUN(test_late_and_polled_rings);
	RUN(test_cq_backlog_overflow);
	RUN(test_cq_notify);
	RUN(test_ud_ipv4);
	RUN(test_ud_ipv6);
	RUN(test_gsi);
	RUN(test_reset_and_ring_stop);
	RUN(test_polled_rings_traffic);
	RUN(test_quiet_send_ring);
	RUN(test_quiet_ring_rearms);
	RUN(test_rc_loopback);
	RUN(test_mr_scattered_pages);
	RUN(test_busy_receiver_holds);
	RUN(test_busy_receiver_is_per_destination);
	RUN(test_busy_requester_parks_read_responder);
	RUN(test_rc_sges_inline);
	RUN(test_rc_sizes_ipv6);
	RUN(test_rc_sizes);
	RUN(test_uc_sizes);
	RUN(test_rnr);
	RUN(test_retry_exceeded);
	RUN(test_remote_errors);
	RUN(test_recv_placement_fault);
	RUN(test_local_errors);
	RUN(test_ud_errors);
	RUN(test_unsignaled);
	RUN(test_sq_published_before_cq);
	RUN(test_fence);
	RUN(test_sqd);
	RUN(test_neigh);
	RUN(test_neigh_no_poisoning);
	RUN(test_neigh_pinned_follows_registry);
	RUN(test_neigh_early_send);
	RUN(test_neigh_unreachable);
	RUN(test_cc_cnp_once);
	RUN(test_cc_interval_and_off);
	RUN(test_cc_queue_marks);
	RUN(test_pcap_icrc);
	RUN(test_device_send_budget);
	RUN(test_device_send_shares);
	RUN(test_sq_batch_mixed);
	RUN(test_sq_batch_bad_middle);
	RUN(test_sq_cut_requests);
	return TEST_DONE();
}
