/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport engine's extensions (docs/spec.md "Extensions beyond the
 * RFC"), through the real transport with fake rings: shared receive queues
 * used by RC, UC and UD QPs, the event virtqueue, CQ and QP resize, and the
 * seed behaviour when ROCE_EXT is not negotiated.
 */
#include "../harness.h"
#include "roce/roce_srq_evq.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 20000
#define NSRQ 4

/* ---- devices with the extension ---------------------------------------------- */

/* fk_dev_new with SRQs (offer: extended layout with S SRQs; negotiate:
 * ROCE_EXT on). */
static struct fk_dev *xdev_new(struct fk_env *env, bool offer, bool negotiate)
{
	struct fk_dev_cfg c = {
		.ext_offered = offer,
		.ext = negotiate,
		.srqs = offer ? NSRQ : 0,
	};

	return fk_dev_new(env, &c);
}

static const struct roce_ext_stats *xs(struct fk_dev *d)
{
	return roce_tp_ext_stats(d->tp);
}

/* A QP (optionally on SRQ srqn, -1: its own receive ring). */
static struct fk_qp xqp_new(struct fk_dev *d, uint8_t type, uint32_t pdn, uint32_t scq,
			    uint32_t rcq, int srqn, uint32_t max_send_wr, uint16_t sq_num)
{
	struct rres_qp_init in = {
		.pdn = pdn, .qp_type = type, .send_cqn = scq, .recv_cqn = rcq,
		.cap = { max_send_wr, srqn >= 0 ? 0 : 64, 4, srqn >= 0 ? 0 : 4, 0 },
		.ext_flags = srqn >= 0 ? VIRTIO_IB_QP_CREATE_SRQ : 0,
		.srqn = srqn >= 0 ? (uint32_t)srqn : 0,
	};
	struct fk_qp q = { 0 };
	struct rres_qp *qp;

	if (rres_qp_create(&d->rd, &in, &qp))
		abort();
	q.qpn = qp->qpn;
	q.max_send_sge = 4;
	q.max_recv_sge = 4;
	q.sq = fk_ring_setup(d, qp->sq_vq, sq_num, fk_sq_stride(4), true);
	if (srqn < 0)
		q.rq = fk_ring_setup(d, qp->rq_vq, 64, 128, true);
	return q;
}

/* ---- event queue -------------------------------------------------------------- */

static struct fk_ring *evq_setup(struct fk_dev *d, uint16_t num)
{
	return fk_ring_setup(d, rres_ring_of_eventq(&d->rd), num, 64, true);
}

/* Give n buffers of len bytes to the event ring. */
static void evq_post(struct fk_dev *d, struct fk_ring *fr, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *b = fk_ring_buf(fr);
		struct vq_buf in = { (uintptr_t)b, len };

		memset(b, 0xee, 64);
		if (vq_drv_add(&fr->drv, NULL, 0, &in, 1, b))
			abort();
	}
	fk_ring_publish(d, fr);
}

struct xev {
	uint32_t type, id, len;
};

/* Read used entries of the event ring. */
static unsigned evq_read(struct fk_ring *fr, struct xev *out, unsigned max)
{
	unsigned n = 0;
	uint32_t len;
	uint8_t *b;

	while (n < max && (b = vq_drv_get_used(&fr->drv, &len))) {
		struct virtio_rdma_event ev;

		memcpy(&ev, b, sizeof(ev));
		out[n].len = len;
		out[n].type = len == 16 ? le32toh(ev.type) : 0xffff;
		out[n].id = len == 16 ? le32toh(ev.id) : 0;
		if (len == 16 && ev.reserved)
			out[n].type = 0xfffe;
		n++;
	}
	return n;
}

/* ---- SRQ environment ------------------------------------------------------------ */

/* Device a sends from RC, UC and UD QPs; device b receives on three QPs of
 * the same types that share one SRQ, each with its own receive CQ. */
struct senv {
	struct fk_env env;
	struct fk_dev *a, *b;
	uint32_t pda, pdb, cqa, cqb[3], scqb;
	struct rres_srq *srq;
	struct fk_ring *srq_ring, *evq;
	struct fk_qp qa[3], qb[3];
	struct fk_mr ma, mb;
	uint32_t ah;
	struct fk_path path;
	uint8_t *next_rbuf;
};

static const uint8_t qtypes[3] = { VIRTIO_IB_QPT_RC, VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD };

static void senv_init(struct senv *s, uint32_t srq_max_wr, uint16_t srq_num)
{
	memset(s, 0, sizeof(*s));
	if (fk_env_init(&s->env, true))
		abort();
	s->a = xdev_new(&s->env, true, true);
	s->b = xdev_new(&s->env, true, true);
	s->evq = evq_setup(s->b, 64);
	evq_post(s->b, s->evq, 32, 16);
	s->pda = fk_pd(s->a);
	s->pdb = fk_pd(s->b);
	s->cqa = fk_cq(s->a, 256, 256, true);
	for (int i = 0; i < 3; i++)
		s->cqb[i] = fk_cq(s->b, 256, 64, true);
	s->scqb = fk_cq(s->b, 256, 64, true);
	if (rres_srq_create(&s->b->rd, s->pdb, srq_max_wr, 2, &s->srq))
		abort();
	s->srq_ring = fk_ring_setup(s->b, s->srq->vq, srq_num, 64, true);
	fk_path_default(&s->path);
	s->path.min_rnr_timer = 1;
	for (int i = 0; i < 3; i++) {
		s->qa[i] = xqp_new(s->a, qtypes[i], s->pda, s->cqa, s->cqa, -1, 64, 64);
		s->qb[i] = xqp_new(s->b, qtypes[i], s->pdb, s->scqb, s->cqb[i],
				   (int)s->srq->srqn, 64, 64);
	}
	for (int i = 0; i < 3; i++) {
		if (fk_connect(s->a, s->qa[i].qpn, s->b, s->qb[i].qpn, &s->path) ||
		    fk_connect(s->b, s->qb[i].qpn, s->a, s->qa[i].qpn, &s->path))
			abort();
	}
	s->ma = fk_mr_reg(s->a, s->pda, 1 << 20, FK_ACC_ALL);
	s->mb = fk_mr_reg(s->b, s->pdb, 1 << 20, FK_ACC_ALL);
	s->next_rbuf = s->mb.buf;
	s->ah = fk_ah(s->a, s->pda, s->b, &s->path);
}

static void senv_fini(struct senv *s)
{
	fk_env_fini(&s->env);
}

/* Post one SRQ element (wr_id, a fresh 8 KiB buffer of mb, or sge). */
static uint8_t *srq_post2(struct senv *s, uint64_t wr_id, const struct fk_sge *sge)
{
	struct fk_qp q = { .rq = s->srq_ring };
	struct fk_sge r;

	if (!sge) {
		r = (struct fk_sge){ s->next_rbuf, 8192, s->mb.lkey };
		s->next_rbuf += 8192;
		sge = &r;
	}
	if (fk_post_recv(s->b, &q, wr_id, sge, 1))
		abort();
	return (uint8_t *)sge->addr;
}

static uint8_t *srq_post(struct senv *s, uint64_t wr_id)
{
	return srq_post2(s, wr_id, NULL);
}

/* Send len bytes (pattern seed) from QP i of a. */
static void send_from(struct senv *s, int i, uint64_t wr_id, uint32_t len, uint32_t seed)
{
	uint8_t *src = s->ma.buf + (uint64_t)(wr_id % 64) * 16384;
	struct fk_sge sg = { src, len, s->ma.lkey };
	struct fk_wr wr = { .wr_id = wr_id, .opcode = VIRTIO_IB_WR_SEND,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &sg, .nsge = 1,
			    .trunc = -1 };

	fk_fill(src, len, seed);
	if (qtypes[i] == VIRTIO_IB_QPT_UD) {
		wr.remote_qpn = s->qb[i].qpn;
		wr.remote_qkey = s->path.qkey;
		wr.ah = s->ah;
	}
	if (fk_post_send(s->a, &s->qa[i], &wr))
		abort();
}

/* Wait for n completions on cqn into wc[]. Returns how many arrived. */
static unsigned wait_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn,
			struct virtio_rdma_cq_req *wc, unsigned n)
{
	return fk_wait_cq(env, d, cqn, wc, n, WAIT_MS);
}

/* Used entries of the SRQ ring, as wr_ids (read back from the element). */
static unsigned srq_used(struct senv *s, uint64_t *ids, unsigned max)
{
	unsigned n = 0;
	uint32_t len;
	uint8_t *b;

	while (n < max && (b = vq_drv_get_used(&s->srq_ring->drv, &len))) {
		uint64_t id;

		memcpy(&id, b, 8);
		ids[n++] = le64toh(id);
	}
	return n;
}

static struct roce_tq *tq_of(struct fk_dev *d, uint32_t qpn)
{
	return rres_qp_lookup(&d->rd, qpn)->transport;
}

static uint8_t qp_state(struct fk_dev *d, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);

	return qp ? qp->attr.qp_state : 0xff;
}

/* ---- SRQ tests ------------------------------------------------------------------- */

/* RC, UC and UD QPs take elements of one SRQ in arrival order; each
 * completion is on the QP's own receive CQ with its qp_num; data lands in
 * the element's buffer. */
static void test_srq_shared(void)
{
	struct virtio_rdma_cq_req wc[8];
	uint8_t *buf[6];
	uint64_t ids[8];
	struct senv s;

	senv_init(&s, 64, 64);
	for (int k = 0; k < 6; k++)
		buf[k] = srq_post(&s, 100 + k);
	/* order of arrival: UD, RC, UC, RC, UD, UC */
	static const int order[6] = { 2, 0, 1, 0, 2, 1 };
	static const uint32_t lens[6] = { 100, 3000, 2500, 1, 1000, 0 };

	for (int k = 0; k < 6; k++) {
		send_from(&s, order[k], 1 + k, lens[k], 7 + k);
		REQUIRE(wait_cq(&s.env, s.b, s.cqb[order[k]], wc, 1) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 100 + k);
		CHECK_EQ(wc[0].qp_num, s.qb[order[k]].qpn);
		CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_RECV);
		{
			uint8_t want[3000];
			uint32_t off = qtypes[order[k]] == VIRTIO_IB_QPT_UD ? 40 : 0;

			CHECK_EQ(wc[0].byte_len, lens[k] + off);
			fk_fill(want, lens[k], 7 + k);
			CHECK_MEM(buf[k] + off, want, lens[k]);
		}
	}
	/* the senders' completions */
	REQUIRE(wait_cq(&s.env, s.a, s.cqa, wc, 6) == 6);
	for (int k = 0; k < 6; k++)
		CHECK_EQ(wc[k].status, VIRTIO_IB_WC_SUCCESS);
	/* nothing on other CQs, every element given back once */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fk_poll_cq(s.b, s.cqb[i], wc, 8), 0);
	CHECK_EQ(srq_used(&s, ids, 8), 6);
	for (int k = 0; k < 6; k++)
		CHECK_EQ(ids[k], 100 + k);
	CHECK_EQ(xs(s.b)->srq_recv_wrs, 6);
	/* the QPs' own receive rings were never used */
	for (int i = 0; i < 3; i++)
		CHECK(tq_of(s.b, s.qb[i].qpn)->rq.r == NULL);
	/* counters in the dump */
	{
		char *text = NULL;
		size_t tlen = 0;
		FILE *f = open_memstream(&text, &tlen);

		REQUIRE(f);
		roce_tp_dump_stats(s.b->tp, f);
		fclose(f);
		CHECK(strstr(text, " srq_recv_wrs 6") != NULL);
		CHECK(strstr(text, " srq_created 1") != NULL);
		CHECK(strstr(text, "roce srq 0 refs 3") != NULL);
		free(text);
	}
	senv_fini(&s);
}

/* An element a QP holds (a message in progress) is given back after later
 * ones taken by other QPs: used entries out of posting order. MODIFY_QP to
 * ERR then flushes only that element, and QP_LAST_WQE_REACHED follows; the
 * other QPs keep using the SRQ. */
static void test_srq_held_and_err(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xev ev[8];
	uint64_t ids[8];
	struct senv s;
	struct roce_tq *tq;

	senv_init(&s, 64, 64);
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	for (int k = 0; k < 4; k++)
		srq_post(&s, 200 + k);
	/* RC QP b0 takes element 200 as the first packet of a message would */
	tq = tq_of(s.b, s.qb[0].qpn);
	REQUIRE(roce_rq_get(tq) == ROCE_RQ_READY);
	CHECK(tq->rwqe->srq == s.srq);
	CHECK_EQ(tq->rwqe->wr_id, 200);
	/* UC and UD messages take 201 and 202 */
	send_from(&s, 1, 1, 500, 1);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[1], wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 201);
	send_from(&s, 2, 2, 500, 2);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 202);
	/* b0 to ERR: its element flushes on its CQ, 203 stays in the SRQ */
	CHECK_EQ(fk_modify(s.b, s.qb[0].qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	REQUIRE(fk_poll_cq(s.b, s.cqb[0], wc, 8) == 1);
	CHECK_EQ(wc[0].wr_id, 200);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc[0].qp_num, s.qb[0].qpn);
	CHECK_EQ(srq_used(&s, ids, 8), 3);
	CHECK_EQ(ids[0], 201);
	CHECK_EQ(ids[1], 202);
	CHECK_EQ(ids[2], 200);
	/* the event was written before MODIFY_QP returned */
	REQUIRE(evq_read(s.evq, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	CHECK_EQ(ev[0].id, s.qb[0].qpn);
	CHECK_EQ(ev[0].len, 16);
	CHECK_EQ(roce_srq_count(s.srq->transport), 1);
	/* again to ERR (ERR -> ERR): no second event */
	fk_modify(s.b, s.qb[0].qpn, VIRTIO_IB_QPS_ERR, 0, NULL);
	fk_spin(&s.env, 20);
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	/* another QP still uses the SRQ */
	send_from(&s, 2, 3, 10, 3);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 203);
	/* a QP in ERR with nothing held: LAST_WQE only */
	CHECK_EQ(fk_modify(s.b, s.qb[1].qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	CHECK_EQ(fk_poll_cq(s.b, s.cqb[1], wc, 8), 0);
	REQUIRE(evq_read(s.evq, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	CHECK_EQ(ev[0].id, s.qb[1].qpn);
	CHECK_EQ(xs(s.b)->last_wqe_events, 2);
	senv_fini(&s);
}

/* Empty SRQ: RC answers RNR NAK and the message completes once an element
 * is posted; UC and UD drop. */
static void test_srq_empty(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct senv s;
	uint8_t want[2000];

	senv_init(&s, 64, 64);
	send_from(&s, 2, 1, 100, 1);     /* UD: dropped */
	send_from(&s, 1, 2, 100, 2);     /* UC: dropped */
	REQUIRE(wait_cq(&s.env, s.a, s.cqa, wc, 2) == 2);
	fk_spin(&s.env, 50);
	CHECK_EQ(s.b->tp->stats.rx_no_rwqe, 2);
	send_from(&s, 0, 3, 2000, 3);    /* RC: RNR */
	fk_spin(&s.env, 200);
	CHECK(s.b->tp->stats.rnr_naks_sent > 0);
	CHECK(xs(s.b)->srq_empty >= 3);
	CHECK_EQ(fk_poll_cq(s.a, s.cqa, wc, 8), 0);
	{
		uint8_t *b = srq_post(&s, 77);

		REQUIRE(wait_cq(&s.env, s.b, s.cqb[0], wc, 1) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, 77);
		CHECK_EQ(wc[0].byte_len, 2000);
		fk_fill(want, 2000, 3);
		CHECK_MEM(b, want, 2000);
	}
	REQUIRE(wait_cq(&s.env, s.a, s.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 3);
	for (int i = 1; i < 3; i++)
		CHECK_EQ(fk_poll_cq(s.b, s.cqb[i], wc, 8), 0);
	senv_fini(&s);
}

/* The limit: the event comes when an element is taken and fewer than the
 * limit remain; once (the SRQ is disarmed). */
static void test_srq_limit(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xev ev[8];
	struct senv s;

	senv_init(&s, 64, 64);
	for (int k = 0; k < 5; k++)
		srq_post(&s, 300 + k);
	CHECK_EQ(rres_srq_modify(&s.b->rd, s.srq->srqn, VIRTIO_IB_SRQ_LIMIT, 3), RRES_OK);
	CHECK_EQ(s.srq->srq_limit, 3);
	CHECK_EQ(evq_read(s.evq, ev, 8), 0); /* arming does not look at the count */
	for (int k = 0; k < 2; k++) {        /* 4, then 3 left: not below 3 */
		send_from(&s, 2, 1 + k, 10, 1);
		REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	}
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	CHECK_EQ(s.srq->srq_limit, 3);
	send_from(&s, 2, 3, 10, 1);          /* 2 left */
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	fk_spin(&s.env, 5);
	REQUIRE(evq_read(s.evq, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	CHECK_EQ(ev[0].id, s.srq->srqn);
	CHECK_EQ(s.srq->srq_limit, 0);       /* disarmed */
	send_from(&s, 2, 4, 10, 1);          /* 1 left: no second event */
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	fk_spin(&s.env, 5);
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	CHECK_EQ(xs(s.b)->srq_limit_events, 1);
	/* armed again above the count: the next element taken fires it */
	CHECK_EQ(rres_srq_modify(&s.b->rd, s.srq->srqn, VIRTIO_IB_SRQ_LIMIT, 10), RRES_OK);
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	send_from(&s, 0, 5, 10, 1);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[0], wc, 1) == 1);
	fk_spin(&s.env, 5);
	REQUIRE(evq_read(s.evq, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	senv_fini(&s);
}

/* DESTROY_SRQ: refused while QPs use it; then its requests are dropped
 * without completion or used entry; its pending events are dropped. */
static void test_srq_destroy(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xev ev[8];
	uint64_t ids[8];
	struct senv s;
	uint32_t srqn;

	senv_init(&s, 64, 64);
	srqn = s.srq->srqn;
	for (int k = 0; k < 3; k++)
		srq_post(&s, 400 + k);
	CHECK_EQ(rres_srq_destroy(&s.b->rd, srqn), RRES_ERR_IN_USE);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(rres_qp_destroy(&s.b->rd, s.qb[i].qpn), RRES_OK);
	/* destroyed QPs: no LAST_WQE event */
	CHECK_EQ(evq_read(s.evq, ev, 8), 0);
	/* a pending event of the SRQ (no buffers left for it) is dropped */
	{
		struct fk_ring *fr = s.evq;
		unsigned n = 0;
		uint32_t len;

		/* take the free buffers back by filling them with events */
		for (int k = 0; k < 40; k++)
			rres_event_raise(&s.b->rd, &s.srq->ev, (uint8_t)(k & 1 ? 14 : 15));
		while (vq_drv_get_used(&fr->drv, &len))
			n++;
		CHECK(n > 0);
	}
	CHECK_EQ(rres_srq_destroy(&s.b->rd, srqn), RRES_OK);
	CHECK(!rres_event_pending(&s.b->rd));
	CHECK_EQ(srq_used(&s, ids, 8), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fk_poll_cq(s.b, s.cqb[i], wc, 8), 0);
	CHECK_EQ(xs(s.b)->srq_dropped, 3);
	CHECK_EQ(xs(s.b)->srq_destroyed, 1);
	senv_fini(&s);
}

/* A broken SRQ ring: SRQ_ERR, then QP_FATAL and QP_LAST_WQE_REACHED for
 * each of its QPs (which go to ERR); the element a QP held is flushed. */
static void test_srq_broken(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xev ev[16];
	struct senv s;
	struct roce_tq *tq;
	unsigned n;

	senv_init(&s, 64, 64);
	srq_post(&s, 500);
	tq = tq_of(s.b, s.qb[1].qpn);
	REQUIRE(roce_rq_get(tq) == ROCE_RQ_READY);          /* UC QP holds 500 */
	{
		/* an element outside the driver's memory */
		struct vq_buf out = { 0x10, 24 };

		REQUIRE(vq_drv_add(&s.srq_ring->drv, &out, 1, NULL, 0, s.srq_ring->bufs) == 0);
		fk_ring_publish(s.b, s.srq_ring);
	}
	send_from(&s, 2, 1, 10, 1);              /* UD message takes it */
	fk_spin(&s.env, 50);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(qp_state(s.b, s.qb[i].qpn), VIRTIO_IB_QPS_ERR);
	REQUIRE(fk_poll_cq(s.b, s.cqb[1], wc, 8) == 1);
	CHECK_EQ(wc[0].wr_id, 500);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	n = evq_read(s.evq, ev, 16);
	REQUIRE(n == 7);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_SRQ_ERR);
	CHECK_EQ(ev[0].id, s.srq->srqn);
	for (unsigned k = 0; k < 3; k++) {
		/* each QP: QP_FATAL then LAST_WQE (object FIFO, type order) */
		CHECK_EQ(ev[1 + 2 * k].type, VIRTIO_IB_EVENT_QP_FATAL);
		CHECK_EQ(ev[2 + 2 * k].type, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
		CHECK_EQ(ev[1 + 2 * k].id, ev[2 + 2 * k].id);
	}
	CHECK_EQ(xs(s.b)->srq_errors, 1);
	CHECK(s.b->ring_errors >= 1);
	senv_fini(&s);
}

/* The driver takes the SRQ's ring back while a QP holds one of its
 * elements: that element is forgotten (no completion, no used entry) and the
 * QP cannot go on (QP_FATAL, LAST_WQE); the other QPs wait for a new ring. */
static void test_srq_ring_stop(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xev ev[8];
	struct senv s;
	struct roce_tq *tq;
	uint32_t idx;

	senv_init(&s, 64, 64);
	srq_post(&s, 700);
	srq_post(&s, 701);
	tq = tq_of(s.b, s.qb[1].qpn);
	REQUIRE(roce_rq_get(tq) == ROCE_RQ_READY);
	idx = s.srq->vq;
	fk_ring_free(s.b, idx);
	CHECK_EQ(qp_state(s.b, s.qb[1].qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(qp_state(s.b, s.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	CHECK_EQ(fk_poll_cq(s.b, s.cqb[1], wc, 8), 0);
	REQUIRE(evq_read(s.evq, ev, 8) == 2);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[1].type, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	CHECK_EQ(ev[1].id, s.qb[1].qpn);
	CHECK_EQ(xs(s.b)->srq_ring_stopped, 1);
	/* a fresh ring: the UD QP receives again */
	s.srq_ring = fk_ring_setup(s.b, idx, 16, 64, false);
	srq_post(&s, 702);
	send_from(&s, 2, 1, 10, 1);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 702);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	senv_fini(&s);
}

/* The SRQ's SGEs are checked against the SRQ's PD, not the QP's. */
static void test_srq_pd(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct senv s;
	uint32_t pd2;
	struct fk_mr m2;

	senv_init(&s, 64, 64);
	pd2 = fk_pd(s.b);
	m2 = fk_mr_reg(s.b, pd2, 8192, FK_ACC_ALL);
	{
		/* an lkey of another PD: LOC_PROT_ERR on the QP's CQ */
		struct fk_sge r = { m2.buf, 8192, m2.lkey };

		srq_post2(&s, 600, &r);
	}
	send_from(&s, 2, 1, 10, 1);
	REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
	CHECK_EQ(wc[0].wr_id, 600);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(wc[0].qp_num, s.qb[2].qpn);
	senv_fini(&s);

	/* an SRQ of another PD than its QPs': its own keys work */
	senv_init(&s, 64, 64);
	pd2 = fk_pd(s.b);
	m2 = fk_mr_reg(s.b, pd2, 8192, FK_ACC_ALL);
	{
		struct rres_srq *srq2;
		struct fk_ring *r2;
		struct fk_qp q2, qs = { 0 };
		struct fk_sge r = { m2.buf, 8192, m2.lkey };
		uint8_t want[1000];

		REQUIRE(rres_srq_create(&s.b->rd, pd2, 16, 1, &srq2) == RRES_OK);
		r2 = fk_ring_setup(s.b, srq2->vq, 16, 64, true);
		q2 = xqp_new(s.b, VIRTIO_IB_QPT_UD, s.pdb, s.scqb, s.cqb[2], (int)srq2->srqn,
			     16, 16);
		REQUIRE(fk_connect(s.b, q2.qpn, s.a, s.qa[2].qpn, &s.path) == 0);
		qs.rq = r2;
		REQUIRE(fk_post_recv(s.b, &qs, 601, &r, 1) == 0);
		s.qb[2] = q2;                   /* the UD sender targets q2 */
		send_from(&s, 2, 2, 1000, 5);
		REQUIRE(wait_cq(&s.env, s.b, s.cqb[2], wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 601);
		CHECK_EQ(wc[0].qp_num, q2.qpn);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		fk_fill(want, 1000, 5);
		CHECK_MEM(m2.buf + 40, want, 1000);
	}
	senv_fini(&s);
}

/* ---- event queue ----------------------------------------------------------------- */

/* Merge, FIFO of objects, type order, short buffers, events waiting for
 * buffers, and dropped on destroy. */
static void test_evq(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *fr;
	struct xev ev[16];
	uint32_t pd, cq1, cq2, cq3;
	struct fk_qp q;
	struct rres_qp *qp;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	pd = fk_pd(d);
	cq1 = fk_cq(d, 16, 16, true);
	cq2 = fk_cq(d, 16, 16, true);
	cq3 = fk_cq(d, 16, 16, true);
	q = xqp_new(d, VIRTIO_IB_QPT_RC, pd, cq1, cq1, -1, 16, 16);
	qp = rres_qp_lookup(&d->rd, q.qpn);
	/* events before the ring exists wait */
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
	rres_event_raise(&d->rd, &rres_cq_lookup(&d->rd, cq2)->ev, VIRTIO_IB_EVENT_CQ_ERR);
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);       /* merged */
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_COMM_EST);       /* same object */
	rres_event_raise(&d->rd, &rres_cq_lookup(&d->rd, cq3)->ev, VIRTIO_IB_EVENT_CQ_ERR);
	rres_event_raise(&d->rd, &d->rd.port_ev, VIRTIO_IB_EVENT_PORT_ACTIVE);
	fr = evq_setup(d, 16);
	fk_spin(&env, 5);
	CHECK_EQ(evq_read(fr, ev, 16), 0);
	/* a short buffer first, then two good ones */
	evq_post(d, fr, 1, 8);
	evq_post(d, fr, 2, 16);
	fk_spin(&env, 5);
	REQUIRE(evq_read(fr, ev, 16) == 3);
	CHECK_EQ(ev[0].len, 0);
	CHECK_EQ(ev[1].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[1].id, q.qpn);
	CHECK_EQ(ev[2].type, VIRTIO_IB_EVENT_COMM_EST);
	CHECK_EQ(ev[2].id, q.qpn);
	CHECK_EQ(xs(d)->ev_short_bufs, 1);
	/* the rest when more buffers come (a 64-byte one is fine too) */
	evq_post(d, fr, 1, 64);
	evq_post(d, fr, 4, 16);
	fk_spin(&env, 5);
	REQUIRE(evq_read(fr, ev, 16) == 3);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(ev[0].id, cq2);
	CHECK_EQ(ev[0].len, 16);
	CHECK_EQ(ev[1].type, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(ev[1].id, cq3);
	CHECK_EQ(ev[2].type, VIRTIO_IB_EVENT_PORT_ACTIVE);
	CHECK_EQ(ev[2].id, 1);
	/* two buffers still free: an event is written at once */
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_SQ_DRAINED);
	REQUIRE(evq_read(fr, ev, 16) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_SQ_DRAINED);
	/* no buffers: pending events of a destroyed object are dropped */
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_COMM_EST);
	REQUIRE(evq_read(fr, ev, 16) == 1);
	rres_event_raise(&d->rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
	rres_event_raise(&d->rd, &rres_cq_lookup(&d->rd, cq2)->ev, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(evq_read(fr, ev, 16), 0);
	CHECK_EQ(rres_qp_destroy(&d->rd, q.qpn), RRES_OK);
	evq_post(d, fr, 4, 16);
	fk_spin(&env, 5);
	REQUIRE(evq_read(fr, ev, 16) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(ev[0].id, cq2);
	/* a polled event ring (no kick fd) works too */
	fk_ring_free(d, rres_ring_of_eventq(&d->rd));
	d->brk += 0;
	{
		struct fk_ring *pr = fk_ring_setup(d, rres_ring_of_eventq(&d->rd), 8, 64, false);

		evq_post(d, pr, 2, 16);
		rres_event_raise(&d->rd, &d->rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
		fk_spin(&env, 5);
		REQUIRE(evq_read(pr, ev, 16) == 1);
		CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_PORT_ERR);
	}
	fk_env_fini(&env);
}

/* CQ overflow: CQ_ERR, then QP_FATAL for each QP of the CQ; the QPs are in
 * ERR when the events are read. */
static void test_cq_overflow_events(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *fr;
	struct xev ev[8];
	uint32_t pd, cq, cq2;
	struct fk_qp q1, q2, q3;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	fr = evq_setup(d, 16);
	evq_post(d, fr, 8, 16);
	pd = fk_pd(d);
	cq = fk_cq(d, 2, 4, false);             /* no buffers: backlog of 2 */
	cq2 = fk_cq(d, 16, 16, true);
	q1 = xqp_new(d, VIRTIO_IB_QPT_RC, pd, cq2, cq, -1, 16, 16);
	q2 = xqp_new(d, VIRTIO_IB_QPT_UD, pd, cq, cq2, -1, 16, 16);
	q3 = xqp_new(d, VIRTIO_IB_QPT_UC, pd, cq2, cq2, -1, 16, 16);
	{
		struct fk_path path;

		fk_path_default(&path);
		REQUIRE(fk_connect(d, q2.qpn, d, q2.qpn, &path) == 0); /* UD in RTS */
	}
	{
		struct fk_mr m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
		struct fk_sge r = { m.buf, 64, m.lkey };

		for (int k = 0; k < 3; k++)
			REQUIRE(fk_post_recv(d, &q1, 1 + k, &r, 1) == 0);
	}
	/* q1 to ERR: 3 flush completions for a CQ holding 2 */
	CHECK_EQ(fk_modify(d, q1.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	fk_spin(&env, 10);
	REQUIRE(evq_read(fr, ev, 8) == 2);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(ev[0].id, cq);
	/* q1 was already in ERR (MODIFY_QP): only q2 gets QP_FATAL */
	CHECK_EQ(ev[1].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[1].id, q2.qpn);
	CHECK_EQ(rres_qp_lookup(&d->rd, q2.qpn)->attr.qp_state, VIRTIO_IB_QPS_ERR);
	CHECK_EQ(rres_qp_lookup(&d->rd, q3.qpn)->attr.qp_state, VIRTIO_IB_QPS_RESET);
	CHECK_EQ(rres_cq_resize(&d->rd, cq, 8), RRES_ERR_CQ_STATE);
	fk_env_fini(&env);
}

/* ---- resize -------------------------------------------------------------------------- */

static void test_cq_resize(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct virtio_rdma_cq_req wc[16];
	uint32_t pd, cq;
	struct fk_qp q;
	struct fk_mr m;
	struct fk_sge r;
	unsigned n;
	uint64_t next = 1;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	pd = fk_pd(d);
	cq = fk_cq(d, 4, 16, false);
	q = xqp_new(d, VIRTIO_IB_QPT_RC, pd, cq, cq, -1, 16, 16);
	m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
	r = (struct fk_sge){ m.buf, 64, m.lkey };
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0);
	/* three completions wait (no buffers) */
	for (int k = 0; k < 3; k++)
		REQUIRE(fk_post_recv(d, &q, next++, &r, 1) == 0);
	fk_spin(&env, 10);
	CHECK_EQ(((struct roce_tcq *)rres_cq_lookup(&d->rd, cq)->transport)->bl_len, 3);
	CHECK_EQ(rres_cq_resize(&d->rd, cq, 2), RRES_ERR_RANGE);
	CHECK_EQ(rres_cq_lookup(&d->rd, cq)->cqe, 4);
	CHECK_EQ(rres_cq_resize(&d->rd, cq, 3), RRES_OK);   /* shrink to what is held */
	CHECK_EQ(rres_cq_resize(&d->rd, cq, 10), RRES_OK);  /* grow */
	for (int k = 0; k < 7; k++)
		REQUIRE(fk_post_recv(d, &q, next++, &r, 1) == 0);
	fk_spin(&env, 10);
	CHECK_EQ(((struct roce_tcq *)rres_cq_lookup(&d->rd, cq)->transport)->bl_len, 10);
	CHECK(!((struct roce_tcq *)rres_cq_lookup(&d->rd, cq)->transport)->overflowed);
	/* buffers: all ten in order */
	fk_cq_post(d, cq, 16);
	fk_spin(&env, 10);
	n = fk_poll_cq2(d, cq, wc, 16, false);
	REQUIRE(n == 10);
	for (unsigned k = 0; k < n; k++) {
		CHECK_EQ(wc[k].wr_id, k + 1);
		CHECK_EQ(wc[k].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	}
	/* shrink to 2 with an empty backlog, then 3 waiting overflow it */
	CHECK_EQ(rres_cq_resize(&d->rd, cq, 2), RRES_OK);
	for (int k = 0; k < 3 + 6; k++)
		REQUIRE(fk_post_recv(d, &q, next++, &r, 1) == 0);
	fk_spin(&env, 10);
	/* 6 buffers were left: 6 written, 2 wait, the 9th overflows */
	CHECK(((struct roce_tcq *)rres_cq_lookup(&d->rd, cq)->transport)->overflowed);
	CHECK_EQ(xs(d)->cq_resizes, 3);
	CHECK_EQ(xs(d)->cq_resize_range, 1);
	fk_env_fini(&env);
}

static bool sq_three(void *arg)
{
	struct roce_tq *tq = arg;

	return tq->sq_tail - tq->sq_head == 3;
}

static void test_qp_resize(void)
{
	struct fk_env env;
	struct fk_dev *a, *b;
	struct virtio_rdma_cq_req wc[32];
	uint32_t pda, pdb, cqa, cqb;
	struct fk_qp qa, qb;
	struct fk_path path;
	struct fk_mr ma, mb;
	struct rres_qp_cap cap;
	struct roce_tq *tq;
	unsigned got = 0;

	REQUIRE(fk_env_init(&env, true) == 0);
	a = xdev_new(&env, true, true);
	b = xdev_new(&env, true, true);
	pda = fk_pd(a);
	pdb = fk_pd(b);
	cqa = fk_cq(a, 64, 64, true);
	cqb = fk_cq(b, 64, 64, true);
	qa = xqp_new(a, VIRTIO_IB_QPT_RC, pda, cqa, cqa, -1, 4, 64);
	qb = xqp_new(b, VIRTIO_IB_QPT_RC, pdb, cqb, cqb, -1, 4, 64);
	ma = fk_mr_reg(a, pda, 65536, FK_ACC_ALL);
	mb = fk_mr_reg(b, pdb, 65536, FK_ACC_ALL);
	tq = tq_of(a, qa.qpn);
	CHECK_EQ(tq->sq_slots, 4);
	/* a in RTS, b still in RESET (drops them): three sends go out and
	 * stay outstanding, in their WQE slots */
	fk_path_default(&path);
	REQUIRE(fk_connect(a, qa.qpn, b, qb.qpn, &path) == 0);
	for (int k = 0; k < 3; k++) {
		struct fk_sge s = { ma.buf + k * 64, 64, ma.lkey };
		struct fk_wr wr = { .wr_id = 1 + k, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &s, .nsge = 1,
				    .trunc = -1 };

		fk_fill(ma.buf + k * 64, 64, k);
		REQUIRE(fk_post_send(a, &qa, &wr) == 0);
	}
	REQUIRE(fk_run_until(&env, sq_three, tq, WAIT_MS));
	/* ten receives on b (not consumed in RESET) */
	for (int k = 0; k < 10; k++) {
		struct fk_sge r = { mb.buf + k * 128, 128, mb.lkey };

		REQUIRE(fk_post_recv(b, &qb, 100 + k, &r, 1) == 0);
	}
	cap = rres_qp_lookup(&a->rd, qa.qpn)->cap;
	cap.max_send_wr = 2;
	CHECK_EQ(rres_qp_resize(&a->rd, qa.qpn, &cap), RRES_ERR_RANGE);
	cap.max_send_wr = 3;
	CHECK_EQ(rres_qp_resize(&a->rd, qa.qpn, &cap), RRES_OK);
	cap = rres_qp_lookup(&b->rd, qb.qpn)->cap;
	cap.max_recv_wr = 9;
	CHECK_EQ(rres_qp_resize(&b->rd, qb.qpn, &cap), RRES_ERR_RANGE);
	cap.max_recv_wr = 10;
	CHECK_EQ(rres_qp_resize(&b->rd, qb.qpn, &cap), RRES_OK);
	CHECK_EQ(rres_qp_lookup(&b->rd, qb.qpn)->cap.max_recv_wr, 10);
	/* grow the send queue beyond its slots, with WRs outstanding */
	cap = rres_qp_lookup(&a->rd, qa.qpn)->cap;
	cap.max_send_wr = 10;
	CHECK_EQ(rres_qp_resize(&a->rd, qa.qpn, &cap), RRES_OK);
	CHECK(tq->sq_slots >= 10);
	for (int k = 3; k < 10; k++) {
		struct fk_sge s = { ma.buf + k * 64, 64, ma.lkey };
		struct fk_wr wr = { .wr_id = 1 + k, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &s, .nsge = 1,
				    .trunc = -1 };

		fk_fill(ma.buf + k * 64, 64, k);
		REQUIRE(fk_post_send(a, &qa, &wr) == 0);
	}
	REQUIRE(fk_connect(b, qb.qpn, a, qa.qpn, &path) == 0);
	got = wait_cq(&env, a, cqa, wc, 10);
	REQUIRE(got == 10);
	for (unsigned k = 0; k < 10; k++) {
		CHECK_EQ(wc[k].wr_id, k + 1);
		CHECK_EQ(wc[k].status, VIRTIO_IB_WC_SUCCESS);
	}
	REQUIRE(wait_cq(&env, b, cqb, wc, 10) == 10);
	for (unsigned k = 0; k < 10; k++) {
		uint8_t want[64];

		CHECK_EQ(wc[k].wr_id, 100 + k);
		fk_fill(want, 64, k);
		CHECK_MEM(mb.buf + k * 128, want, 64);
	}
	CHECK_EQ(xs(a)->qp_resizes, 2);
	CHECK_EQ(xs(a)->qp_resize_range, 1);
	fk_env_fini(&env);
}

static bool sq_busy(void *arg)
{
	struct roce_tq *tq = arg;

	return tq->sq_tail != tq->sq_head;
}

/* SQD: the QP's send queue drains, SQ_DRAINED comes on the event queue. */
static void test_sq_drained(void)
{
	struct senv s;
	struct virtio_rdma_cq_req wc[4];
	struct xev ev[4];
	struct fk_ring *fr;

	senv_init(&s, 64, 64);
	fr = evq_setup(s.a, 16);
	evq_post(s.a, fr, 4, 16);
	srq_post(&s, 1);
	send_from(&s, 0, 1, 3000, 1);
	/* in flight (fetched, not acknowledged) when SQD starts */
	REQUIRE(fk_run_until(&s.env, sq_busy, tq_of(s.a, s.qa[0].qpn), WAIT_MS));
	CHECK_EQ(fk_modify(s.a, s.qa[0].qpn, VIRTIO_IB_QPS_SQD, 0, NULL), 0);
	CHECK_EQ(evq_read(fr, ev, 4), 0);
	REQUIRE(wait_cq(&s.env, s.a, s.cqa, wc, 1) == 1);
	fk_spin(&s.env, 20);
	REQUIRE(evq_read(fr, ev, 4) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_SQ_DRAINED);
	CHECK_EQ(ev[0].id, s.qa[0].qpn);
	CHECK(!rres_qp_lookup(&s.a->rd, s.qa[0].qpn)->sq_draining);
	senv_fini(&s);
}

/* A QP whose own ring the driver broke: ERR and QP_FATAL. */
static void test_ring_broken_fatal(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *fr;
	struct xev ev[8];
	uint32_t pd, cq;
	struct fk_qp q1, q2;
	struct fk_path path;
	struct vq_buf out = { 0x100, 64 };

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	fr = evq_setup(d, 16);
	evq_post(d, fr, 8, 16);
	pd = fk_pd(d);
	cq = fk_cq(d, 16, 16, true);
	q1 = xqp_new(d, VIRTIO_IB_QPT_UD, pd, cq, cq, -1, 16, 16);
	q2 = xqp_new(d, VIRTIO_IB_QPT_UD, pd, cq, cq, -1, 16, 16);
	fk_path_default(&path);
	REQUIRE(fk_connect(d, q1.qpn, d, q1.qpn, &path) == 0);
	REQUIRE(fk_connect(d, q2.qpn, d, q2.qpn, &path) == 0);
	/* a send element outside the driver's memory */
	REQUIRE(vq_drv_add(&q1.sq->drv, &out, 1, NULL, 0, q1.sq->bufs) == 0);
	fk_ring_publish(d, q1.sq);
	fk_spin(&env, 10);
	CHECK_EQ(qp_state(d, q1.qpn), VIRTIO_IB_QPS_ERR);
	REQUIRE(evq_read(fr, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[0].id, q1.qpn);
	/* its receive ring: a datagram for q2 takes a broken element */
	REQUIRE(vq_drv_add(&q2.rq->drv, &out, 1, NULL, 0, q2.rq->bufs) == 0);
	fk_ring_publish(d, q2.rq);
	{
		struct fk_mr m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
		struct fk_sge sg = { m.buf, 10, m.lkey };
		struct fk_qp q3 = xqp_new(d, VIRTIO_IB_QPT_UD, pd, cq, cq, -1, 16, 16);
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND, .sge = &sg,
				    .nsge = 1, .trunc = -1, .remote_qpn = q2.qpn,
				    .remote_qkey = path.qkey, .ah = fk_ah(d, pd, d, &path) };

		REQUIRE(fk_connect(d, q3.qpn, d, q3.qpn, &path) == 0);
		REQUIRE(fk_post_send(d, &q3, &wr) == 0);
	}
	fk_spin(&env, 50);
	CHECK_EQ(qp_state(d, q2.qpn), VIRTIO_IB_QPS_ERR);
	REQUIRE(evq_read(fr, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[0].id, q2.qpn);
	CHECK_EQ(xs(d)->qp_fatal_events, 2);
	fk_env_fini(&env);
}

/* A driver corrupts the event ring's avail index while events wait for
 * buffers: the device finds it when it looks for buffers (poll / arm), and
 * must report it (error eventfd, counted) like a failed pop, once. */
static void test_evq_avail_corrupt(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *fr;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	fr = evq_setup(d, 16);
	fk_spin(&env, 2);
	rres_event_raise(&d->rd, &d->rd.port_ev, VIRTIO_IB_EVENT_PORT_ACTIVE);
	CHECK(rres_event_pending(&d->rd));
	/* 100 new buffers in a ring of 16 */
	fr->r.vq.avail->idx = htole16((uint16_t)(fr->r.vq.last_avail_idx + 100));
	fk_spin(&env, 5);
	CHECK(fr->r.vq.broken);
	CHECK_EQ(d->ring_errors, 1);
	CHECK_EQ(xs(d)->ev_ring_errors, 1);
	/* the event stays pending (bounded); nothing more is reported */
	rres_event_raise(&d->rd, &d->rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
	fk_spin(&env, 5);
	CHECK_EQ(d->ring_errors, 1);
	CHECK(rres_event_pending(&d->rd));
	fk_env_fini(&env);
}

/* The SRQ limit count reads the avail index again after an element was
 * taken: a corrupt index found there is a broken SRQ ring (SRQ_ERR, its QPs
 * to ERR, the element just taken flushed), not an element handed out from
 * a ring the device no longer touches. */
static void test_srq_count_corrupt(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct fk_ring *fr;
	struct senv s;
	struct roce_tq *tq;

	senv_init(&s, 64, 64);
	fr = s.srq_ring;
	CHECK_EQ(rres_srq_modify(&s.b->rd, s.srq->srqn, VIRTIO_IB_SRQ_LIMIT, 1), RRES_OK);
	srq_post(&s, 800);
	srq_post(&s, 801);
	REQUIRE(roce_rq_get(tq_of(s.b, s.qb[0].qpn)) == ROCE_RQ_READY); /* RC holds 800 */
	fr->r.vq.avail->idx = htole16((uint16_t)(fr->r.vq.last_avail_idx + 1000));
	tq = tq_of(s.b, s.qb[1].qpn);
	CHECK_EQ(roce_rq_get(tq), ROCE_RQ_BROKEN);                    /* 801: popped, then broken */
	CHECK(fr->r.vq.broken);
	CHECK(!tq->rwqe->valid);
	CHECK_EQ(xs(s.b)->srq_errors, 1);
	CHECK_EQ(xs(s.b)->srq_limit_events, 0);
	CHECK(s.b->ring_errors >= 1);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(qp_state(s.b, s.qb[i].qpn), VIRTIO_IB_QPS_ERR);
	/* both held elements completed (flushed) on their QPs' CQs */
	fk_spin(&s.env, 5);
	REQUIRE(fk_poll_cq(s.b, s.cqb[0], wc, 8) == 1);
	CHECK_EQ(wc[0].wr_id, 800);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	REQUIRE(fk_poll_cq(s.b, s.cqb[1], wc, 8) == 1);
	CHECK_EQ(wc[0].wr_id, 801);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_WR_FLUSH_ERR);
	senv_fini(&s);
}

/* A send ring whose avail index the driver corrupts after the device went
 * quiet on it (kicks off after a fetch; polled without a kick fd): the
 * device finds it reading the avail index (arm, poll), not in a pop. It
 * must still report the ring (error eventfd) and move the QP to ERR with
 * QP_FATAL, as for a failed pop, instead of leaving the QP stuck. */
static bool ring_reported(void *arg)
{
	return ((struct fk_dev *)arg)->ring_errors > 0;
}

static void sq_avail_corrupt(bool kickable)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *fr, *sq;
	struct xev ev[8];
	struct virtio_rdma_cq_req wc[4];
	uint32_t pd, cq;
	struct fk_path path;
	struct fk_qp q;
	struct rres_qp *qp;
	struct rres_qp_init in;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	fr = evq_setup(d, 16);
	evq_post(d, fr, 8, 16);
	pd = fk_pd(d);
	cq = fk_cq(d, 16, 16, true);
	memset(&in, 0, sizeof(in));
	in.pdn = pd;
	in.qp_type = VIRTIO_IB_QPT_UD;
	in.send_cqn = in.recv_cqn = cq;
	in.cap = (struct rres_qp_cap){ 16, 16, 4, 4, 0 };
	REQUIRE(rres_qp_create(&d->rd, &in, &qp) == RRES_OK);
	memset(&q, 0, sizeof(q));
	q.qpn = qp->qpn;
	q.max_send_sge = 4;
	q.max_recv_sge = 4;
	q.sq = sq = fk_ring_setup(d, qp->sq_vq, 16, fk_sq_stride(4), kickable);
	q.rq = fk_ring_setup(d, qp->rq_vq, 16, 128, true);
	fk_path_default(&path);
	REQUIRE(fk_connect(d, q.qpn, d, q.qpn, &path) == 0);
	{
		/* one good send first: the device fetched from the ring */
		struct fk_mr m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
		struct fk_sge sg = { m.buf, 10, m.lkey };
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &sg, .nsge = 1,
				    .trunc = -1, .remote_qpn = q.qpn, .remote_qkey = path.qkey,
				    .ah = fk_ah(d, pd, d, &path) };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
	}
	fk_spin(&env, 20);
	REQUIRE(fk_poll_cq(d, cq, wc, 4) >= 1);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(qp_state(d, q.qpn), VIRTIO_IB_QPS_RTS);
	CHECK_EQ(d->ring_errors, 0);
	if (kickable) {
		/* a second send fetched by a poll: kicks go off (quiet) */
		struct fk_mr m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
		struct fk_sge sg = { m.buf, 10, m.lkey };
		struct fk_wr wr = { .wr_id = 2, .opcode = VIRTIO_IB_WR_SEND, .sge = &sg,
				    .nsge = 1, .trunc = -1, .remote_qpn = q.qpn,
				    .remote_qkey = path.qkey, .ah = fk_ah(d, pd, d, &path) };

		REQUIRE(fk_post_send(d, &q, &wr) == 0);
		roce_tp_poll(d->tp);
		CHECK(tq_of(d, q.qpn)->quiet);
	}
	/* 200 new requests in a ring of 16, no kick (none is asked for) */
	sq->r.vq.avail->idx = htole16((uint16_t)(sq->r.vq.last_avail_idx + 200));
	if (kickable)
		roce_tp_poll(d->tp);
	/* (a kick-less ring idle for a while is looked at after a delay) */
	REQUIRE(fk_run_until(&env, ring_reported, d, WAIT_MS));
	fk_spin(&env, 20);
	CHECK(sq->r.vq.broken);
	CHECK_EQ(d->ring_errors, 1);
	CHECK_EQ(qp_state(d, q.qpn), VIRTIO_IB_QPS_ERR);
	REQUIRE(evq_read(fr, ev, 8) == 1);
	CHECK_EQ(ev[0].type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(ev[0].id, q.qpn);
	fk_spin(&env, 20);
	CHECK_EQ(d->ring_errors, 1); /* reported once */
	fk_env_fini(&env);
}

static void test_sq_avail_corrupt(void)
{
	sq_avail_corrupt(true);
	sq_avail_corrupt(false);
}

/* A completion ring with completions waiting (backlog, kicks on) whose
 * avail index the driver corrupts: found while arming, it must be reported
 * (error eventfd), once, not just left broken (vrdma-evil
 * ext_cq_avail_jump). */
static void test_cq_avail_corrupt(void)
{
	struct fk_env env;
	struct fk_dev *d;
	struct fk_ring *cr;
	struct roce_wc wc;
	uint32_t cq;

	REQUIRE(fk_env_init(&env, true) == 0);
	d = xdev_new(&env, true, true);
	cq = fk_cq(d, 16, 16, false);
	cr = fk_cq_ring(d, cq);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = 7;
	roce_cq_post(d->tp, rres_cq_lookup(&d->rd, cq), &wc);
	fk_spin(&env, 5);
	CHECK_EQ(d->ring_errors, 0);
	cr->r.vq.avail->idx = htole16((uint16_t)(cr->r.vq.last_avail_idx + 17));
	/* the loop arms before it sleeps: that check sees it first */
	roce_tp_arm(d->tp);
	roce_tp_disarm(d->tp);
	CHECK(cr->r.vq.broken);
	CHECK_EQ(d->ring_errors, 1);
	fk_spin(&env, 5);
	CHECK_EQ(d->ring_errors, 1);
	roce_tp_ring_kick(d->tp, &cr->r);
	fk_spin(&env, 5);
	CHECK_EQ(d->ring_errors, 1);
	fk_env_fini(&env);
}

/* ---- without ROCE_EXT --------------------------------------------------------------- */

static void test_no_ext(void)
{
	struct fk_env env;
	struct fk_dev *d, *d0;
	struct fk_ring *fr;
	struct xev ev[8];
	uint32_t pd, cq;
	struct fk_qp q;
	struct roce_wc w;
	struct virtio_rdma_cq_req wc[4];

	REQUIRE(fk_env_init(&env, true) == 0);
	/* offered, not negotiated */
	d = xdev_new(&env, true, false);
	fr = evq_setup(d, 16);
	evq_post(d, fr, 8, 16);
	pd = fk_pd(d);
	cq = fk_cq(d, 1, 4, false);
	q = xqp_new(d, VIRTIO_IB_QPT_RC, pd, cq, cq, -1, 16, 16);
	rres_event_raise(&d->rd, &d->rd.port_ev, VIRTIO_IB_EVENT_PORT_ACTIVE);
	{
		struct fk_mr m = fk_mr_reg(d, pd, 4096, FK_ACC_ALL);
		struct fk_sge r = { m.buf, 64, m.lkey };

		for (int k = 0; k < 3; k++)
			REQUIRE(fk_post_recv(d, &q, 1 + k, &r, 1) == 0);
	}
	CHECK_EQ(fk_modify(d, q.qpn, VIRTIO_IB_QPS_ERR, 0, NULL), 0); /* overflows */
	fk_spin(&env, 10);
	CHECK(((struct roce_tcq *)rres_cq_lookup(&d->rd, cq)->transport)->overflowed);
	CHECK_EQ(evq_read(fr, ev, 8), 0);
	CHECK(!rres_event_pending(&d->rd));
	CHECK_EQ(xs(d)->ev_written, 0);
	/* an extension completion is never written for an RFC-only driver */
	{
		uint32_t cq2 = fk_cq(d, 4, 4, true);

		memset(&w, 0, sizeof(w));
		w.wr_id = 9;
		w.status = VIRTIO_IB_WC_MW_BIND_ERR;
		w.opcode = VIRTIO_IB_WC_BIND_MW;
		w.wc_flags = VIRTIO_IB_WC_WITH_INV;
		w.imm = 0x1234;
		roce_cq_post(d->tp, rres_cq_lookup(&d->rd, cq2), &w);
		roce_tp_commit(d->tp);
		REQUIRE(fk_poll_cq(d, cq2, wc, 4) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_GENERAL_ERR);
		CHECK(wc[0].opcode <= VIRTIO_IB_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(wc[0].wc_flags & VIRTIO_IB_WC_WITH_INV, 0);
		CHECK_EQ(wc[0].imm_data, 0);
		CHECK_EQ(xs(d)->wc_ext_blocked, 1);
		/* with ROCE_EXT they are written as they are */
		rres_dev_set_ext(&d->rd, true);
		roce_cq_post(d->tp, rres_cq_lookup(&d->rd, cq2), &w);
		roce_tp_commit(d->tp);
		REQUIRE(fk_poll_cq(d, cq2, wc, 4) == 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_MW_BIND_ERR);
		CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_BIND_MW);
		CHECK_EQ(wc[0].wc_flags, VIRTIO_IB_WC_WITH_INV);
		CHECK_EQ(wc[0].imm_data, 0x1234);
		CHECK_EQ(xs(d)->wc_ext, 1);
	}
	/* not offered: the layout ends with the RFC's rings */
	d0 = xdev_new(&env, false, false);
	CHECK_EQ(rres_ring_count(&d0->rd),
		 vrdma_vq_count(d0->rd.net_pairs, d0->rd.max_rdma_cqs, d0->rd.max_rdma_qps));
	CHECK_EQ(rres_ring_count(&d->rd),
		 vrdma_vq_count_ext(d->rd.net_pairs, d->rd.max_rdma_cqs, d->rd.max_rdma_qps,
				    NSRQ));
	fk_env_fini(&env);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	th_prog = "test_roce_srq";
	RUN(test_srq_shared);
	RUN(test_srq_held_and_err);
	RUN(test_srq_empty);
	RUN(test_srq_limit);
	RUN(test_srq_destroy);
	RUN(test_srq_broken);
	RUN(test_srq_ring_stop);
	RUN(test_srq_pd);
	RUN(test_evq);
	RUN(test_cq_overflow_events);
	RUN(test_cq_resize);
	RUN(test_qp_resize);
	RUN(test_sq_drained);
	RUN(test_ring_broken_fatal);
	RUN(test_evq_avail_corrupt);
	RUN(test_srq_count_corrupt);
	RUN(test_sq_avail_corrupt);
	RUN(test_cq_avail_corrupt);
	RUN(test_no_ext);
	return TEST_DONE();
}
