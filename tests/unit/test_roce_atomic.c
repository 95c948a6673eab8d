/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's extensions (docs/spec.md "Extensions beyond the RFC")
 * driven by the fake driver (tests/unit/roce_tp_fake.h): atomics (CAS,
 * FAA, errors, duplicates answered from the saved result, many QPs on one
 * counter), fast registration and invalidation (local and remote), memory
 * windows of type 1 and 2, COMM_EST, and the RFC behaviour without
 * ROCE_EXT. Values and bytes are compared, statuses checked on both sides.
 */
#include "../harness.h"
#include "common/log.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 20000
#define NQ 6
#define ACC_ATOM (FK_ACC_ALL | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)
#define SIG VIRTIO_IB_SEND_SIGNALED

/* ---- helpers ---------------------------------------------------------------- */

/* Wait for n completions on cqn into wc[]. Returns how many arrived. */
static unsigned wait_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn,
			struct virtio_rdma_cq_req *wc, unsigned n)
{
	return fk_wait_cq(env, d, cqn, wc, n, WAIT_MS);
}

struct xp {
	struct fk_env env;
	struct fk_dev *a, *b;
	uint32_t pda, pdb, cqa, cqb;
	struct fk_qp qa[NQ], qb[NQ];
	unsigned nq;
};

struct xp_cfg {
	bool ext_a, ext_b;
	uint8_t type;
	unsigned nq;
	uint32_t access_b;        /* b's QP access flags (0: all it may have) */
	uint8_t max_rd, max_dest_rd;
	bool b_rtr;               /* leave b's QPs in RTR */
};

static void xp_cfg_default(struct xp_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->ext_a = c->ext_b = true;
	c->type = VIRTIO_IB_QPT_RC;
	c->nq = 1;
}

static void xp_init(struct xp *p, const struct xp_cfg *c)
{
	struct fk_dev_cfg da = { .arena = 64u << 20, .ext = c->ext_a };
	struct fk_dev_cfg db = { .arena = 64u << 20, .ext = c->ext_b };
	struct fk_qp_cfg qc = { .type = c->type, .sig_all = true, .max_send_sge = 4,
				.max_recv_sge = 4 };
	struct fk_path pa, pb;

	memset(p, 0, sizeof(*p));
	if (fk_env_init(&p->env, true))
		abort();
	p->a = fk_dev_new(&p->env, &da);
	p->b = fk_dev_new(&p->env, &db);
	p->pda = fk_pd(p->a);
	p->pdb = fk_pd(p->b);
	p->cqa = fk_cq(p->a, 1024, 256, true);
	p->cqb = fk_cq(p->b, 1024, 256, true);
	p->nq = c->nq;
	fk_path_default(&pa);
	fk_path_default(&pb);
	if (c->max_rd)
		pa.max_rd = pb.max_rd = c->max_rd;
	if (c->max_dest_rd)
		pa.max_dest_rd = pb.max_dest_rd = c->max_dest_rd;
	pa.access = c->ext_a ? ACC_ATOM : FK_ACC_ALL;
	pb.access = c->access_b ? c->access_b : c->ext_b ? ACC_ATOM : FK_ACC_ALL;
	for (unsigned i = 0; i < c->nq; i++) {
		qc.pdn = p->pda;
		qc.scq = qc.rcq = p->cqa;
		p->qa[i] = fk_qp_new(p->a, &qc);
		qc.pdn = p->pdb;
		qc.scq = qc.rcq = p->cqb;
		p->qb[i] = fk_qp_new(p->b, &qc);
	}
	for (unsigned i = 0; i < c->nq; i++) {
		if (fk_connect(p->a, p->qa[i].qpn, p->b, p->qb[i].qpn, &pa))
			abort();
		if (c->b_rtr) {
			struct rres_qp_modify m;

			memset(&m, 0, sizeof(m));
			m.qp_access_flags = pb.access;
			if (fk_modify(p->b, p->qb[i].qpn, VIRTIO_IB_QPS_INIT,
				      VIRTIO_IB_QP_ACCESS_FLAGS, &m))
				abort();
			fk_ah_attr(p->a, &pb, &m.ah_attr);
			m.path_mtu = pb.mtu;
			m.dest_qp_num = p->qa[i].qpn;
			m.rq_psn = pb.rq_psn;
			m.max_dest_rd_atomic = pb.max_dest_rd;
			m.min_rnr_timer = pb.min_rnr_timer;
			if (fk_modify(p->b, p->qb[i].qpn, VIRTIO_IB_QPS_RTR,
				      VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
				      VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN |
				      (c->type == VIRTIO_IB_QPT_RC ?
				       VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
				       VIRTIO_IB_QP_MIN_RNR_TIMER : 0), &m))
				abort();
		} else if (fk_connect(p->b, p->qb[i].qpn, p->a, p->qa[i].qpn, &pb)) {
			abort();
		}
	}
}

static void xp_fini(struct xp *p)
{
	fk_env_fini(&p->env);
}

static uint8_t qp_state(struct fk_dev *d, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);

	return qp ? qp->attr.qp_state : 0xff;
}

/* Pop every pending event of d; returns the mask of types raised for id. */
static uint32_t events_of(struct fk_dev *d, uint32_t id)
{
	uint32_t mask = 0, eid;
	uint8_t type;

	while (rres_event_pop(&d->rd, &type, &eid))
		if (eid == id)
			mask |= 1u << type;
	return mask;
}

static int post_atomic(struct fk_dev *d, struct fk_qp *q, uint64_t id, uint8_t op,
		       uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap,
		       void *res, uint32_t res_len, uint32_t lkey)
{
	struct fk_sge s = { res, res_len, lkey };
	struct fk_wr wr = {
		.wr_id = id, .opcode = op, .flags = SIG, .remote_addr = raddr, .rkey = rkey,
		.compare_add = cmp_add, .swap = swap, .sge = &s, .nsge = 1, .trunc = -1,
	};

	return fk_post_send(d, q, &wr);
}

static int post_rdma(struct fk_dev *d, struct fk_qp *q, uint64_t id, uint8_t op,
		     const void *buf, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct fk_sge s = { buf, len, lkey };
	struct fk_wr wr = {
		.wr_id = id, .opcode = op, .flags = SIG, .remote_addr = raddr, .rkey = rkey,
		.sge = &s, .nsge = 1, .trunc = -1,
	};

	return fk_post_send(d, q, &wr);
}

static int post_local(struct fk_dev *d, struct fk_qp *q, uint64_t id, const struct fk_wr *w0)
{
	struct fk_wr wr = *w0;

	wr.wr_id = id;
	wr.flags |= SIG;
	wr.trunc = -1;
	return fk_post_send(d, q, &wr);
}

static int post_reg(struct fk_dev *d, struct fk_qp *q, uint64_t id, uint32_t key, uint64_t iova,
		    uint64_t len, uint64_t page_list, uint32_t access)
{
	struct fk_wr wr = { .opcode = VIRTIO_IB_WR_REG_MR };

	wr.reg.key = key;
	wr.reg.iova = iova;
	wr.reg.length = len;
	wr.reg.page_list = page_list;
	wr.reg.access = access;
	return post_local(d, q, id, &wr);
}

static int post_inv(struct fk_dev *d, struct fk_qp *q, uint64_t id, uint32_t key)
{
	struct fk_wr wr = { .opcode = VIRTIO_IB_WR_LOCAL_INV, .inv_rkey = key };

	return post_local(d, q, id, &wr);
}

static int post_bind(struct fk_dev *d, struct fk_qp *q, uint64_t id, uint32_t mw_rkey,
		     uint32_t mr_lkey, uint64_t addr, uint64_t len, uint32_t access)
{
	struct fk_wr wr = { .opcode = VIRTIO_IB_WR_BIND_MW };

	wr.mw.rkey = mw_rkey;
	wr.mw.mr_lkey = mr_lkey;
	wr.mw.addr = addr;
	wr.mw.length = len;
	wr.mw.access = access;
	return post_local(d, q, id, &wr);
}

static uint64_t rd64(const void *p)
{
	return get_le64(p);
}

static void wr64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* One WR on (d, q) must complete on cq with status / opcode. */
#define EXPECT_WC(env, d, cq, id, st, op)                                          \
	do {                                                                        \
		struct virtio_rdma_cq_req w_[1];                                    \
		REQUIRE(wait_cq(env, d, cq, w_, 1) == 1);                           \
		CHECK_EQ(w_[0].wr_id, (id));                                        \
		CHECK_EQ(w_[0].status, (st));                                       \
		CHECK_EQ(w_[0].opcode, (op));                                       \
	} while (0)

/* ---- atomics ----------------------------------------------------------------- */

static void test_atomic_values(void)
{
	struct virtio_rdma_cq_req wc[8];
	struct xp_cfg c;
	struct fk_mr tgt, res;
	struct xp p;
	uint8_t *t;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	tgt = fk_mr_reg(p.b, p.pdb, 8192, ACC_ATOM);
	res = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	t = tgt.buf + 4096 + 64;
	wr64(t, 5);
	/* CAS hit, CAS miss, FAA, FAA wrapping around 2^64 */
	REQUIRE(post_atomic(p.a, &p.qa[0], 1, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)t,
			    tgt.rkey, 5, 9, res.buf, 8, res.lkey) == 0);
	REQUIRE(post_atomic(p.a, &p.qa[0], 2, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)t,
			    tgt.rkey, 5, 77, res.buf + 8, 16, res.lkey) == 0);
	REQUIRE(post_atomic(p.a, &p.qa[0], 3, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)t,
			    tgt.rkey, UINT64_MAX - 5, 1234, res.buf + 32, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 3) == 3);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(wc[i].wr_id, i + 1);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, 8);
		CHECK_EQ(wc[i].opcode, i < 2 ? VIRTIO_IB_WC_COMP_SWAP : VIRTIO_IB_WC_FETCH_ADD);
	}
	CHECK_EQ(rd64(res.buf), 5);
	CHECK_EQ(rd64(res.buf + 8), 9);       /* miss: the current value */
	CHECK_EQ(rd64(res.buf + 16), 0);      /* only 8 bytes written */
	CHECK_EQ(rd64(res.buf + 32), 9);
	CHECK_EQ(rd64(t), 3);                 /* 9 + 2^64 - 6 */
	CHECK_EQ(rd64(t - 8), 0);
	CHECK_EQ(rd64(t + 8), 0);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 3);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	/* a READ and an atomic interleaved, FENCE on the last */
	wr64(t, 100);
	REQUIRE(post_rdma(p.a, &p.qa[0], 4, VIRTIO_IB_WR_RDMA_READ, res.buf + 100, 3000,
			  res.lkey, (uintptr_t)tgt.buf, tgt.rkey) == 0);
	REQUIRE(post_atomic(p.a, &p.qa[0], 5, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)t,
			    tgt.rkey, 1, 0, res.buf + 40, 8, res.lkey) == 0);
	{
		struct fk_sge s = { res.buf + 48, 8, res.lkey };
		struct fk_wr wr = { .wr_id = 6, .opcode = VIRTIO_IB_WR_RDMA_READ,
				    .flags = SIG | VIRTIO_IB_SEND_FENCE,
				    .remote_addr = (uintptr_t)t, .rkey = tgt.rkey,
				    .sge = &s, .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_send(p.a, &p.qa[0], &wr) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 3) == 3);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(wc[i].wr_id, i + 4);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	}
	CHECK_EQ(rd64(res.buf + 40), 100);
	CHECK_EQ(rd64(res.buf + 48), 101);    /* the fenced READ saw the atomic */
	CHECK_MEM(res.buf + 100, tgt.buf, 3000);
	xp_fini(&p);
}

/* Errors of the responder (remote statuses, QP to ERR, events) and of the
 * requester's result buffer (local statuses). */
static void test_atomic_errors(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct xp p;

	for (int k = 0; k < 13; k++) {
		uint8_t op = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, want, want_op;
		uint32_t ev = 0;
		struct fk_mr tgt, ro, res;
		uint64_t va;
		uint32_t rkey, lkey, rlen = 8;
		struct fk_sge s;
		struct fk_wr wr;

		xp_cfg_default(&c);
		if (k == 2)
			c.access_b = FK_ACC_ALL;          /* QP without REMOTE_ATOMIC */
		if (k == 11)
			c.ext_b = false;                  /* responder without atomics */
		if (k == 12)
			c.type = VIRTIO_IB_QPT_UC;
		xp_init(&p, &c);
		tgt = fk_mr_reg(p.b, p.pdb, 4096, c.ext_b ? ACC_ATOM : FK_ACC_ALL);
		ro = fk_mr_reg(p.a, p.pda, 4096, 0);
		res = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
		wr64(tgt.buf + 64, 42);
		va = (uintptr_t)tgt.buf + 64;
		rkey = tgt.rkey;
		lkey = res.lkey;
		want = VIRTIO_IB_WC_REM_ACCESS_ERR;
		ev = 1u << VIRTIO_IB_EVENT_QP_ACCESS_ERR;
		memset(&wr, 0, sizeof(wr));
		wr.nsge = 1;
		switch (k) {
		case 0: va += 4; want = VIRTIO_IB_WC_REM_INV_REQ_ERR;   /* misaligned */
			ev = 1u << VIRTIO_IB_EVENT_QP_REQ_ERR; break;
		case 1: {                                                /* MR without it */
			struct fk_mr m = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);

			va = (uintptr_t)m.buf;
			rkey = m.rkey;
			break;
		}
		case 2: break;                                           /* QP without it */
		case 3: va = (uintptr_t)tgt.buf + 4096; break;           /* past the end */
		case 4: rkey ^= 0x40; break;                             /* wrong key */
		case 5: wr.nsge = 0; want = VIRTIO_IB_WC_LOC_LEN_ERR; ev = 0; break;
		case 6: wr.nsge = 2; want = VIRTIO_IB_WC_LOC_LEN_ERR; ev = 0; break;
		case 7: rlen = 7; want = VIRTIO_IB_WC_LOC_LEN_ERR; ev = 0; break;
		case 8: lkey ^= 0x77; want = VIRTIO_IB_WC_LOC_PROT_ERR; ev = 0; break;
		case 9: lkey = ro.lkey; want = VIRTIO_IB_WC_LOC_PROT_ERR; ev = 0; break;
		case 10: wr.flags = VIRTIO_IB_SEND_INLINE;
			want = VIRTIO_IB_WC_LOC_QP_OP_ERR; ev = 0; break;
		case 11: want = VIRTIO_IB_WC_REM_INV_REQ_ERR; ev = 0; break;
		default: want = VIRTIO_IB_WC_LOC_QP_OP_ERR; ev = 0; break; /* UC */
		}
		s = (struct fk_sge){ res.buf, rlen, lkey };
		wr.wr_id = 7;
		wr.opcode = op;
		wr.flags |= SIG;
		wr.remote_addr = va;
		wr.rkey = rkey;
		wr.compare_add = 1;
		wr.sge = (const struct fk_sge[]){ s, s };
		wr.trunc = -1;
		REQUIRE(fk_post_send(p.a, &p.qa[0], &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		want_op = VIRTIO_IB_WC_FETCH_ADD;
		CHECK_EQ(wc[0].wr_id, 7);
		CHECK_EQ(wc[0].status, want);
		CHECK_EQ(wc[0].opcode, want_op);
		CHECK_EQ(wc[0].byte_len, 0);
		CHECK_EQ(rd64(tgt.buf + 64), 42);                 /* never executed */
		CHECK_EQ(rd64(res.buf), 0);
		CHECK_EQ(qp_state(p.a, p.qa[0].qpn),
			 k == 12 ? VIRTIO_IB_QPS_SQE : VIRTIO_IB_QPS_ERR);
		if (want == VIRTIO_IB_WC_REM_ACCESS_ERR || want == VIRTIO_IB_WC_REM_INV_REQ_ERR)
			CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
		else
			CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
		CHECK_EQ(events_of(p.b, p.qb[0].qpn), ev);
		CHECK_EQ(p.b->tp->stats.atomics_executed, 0);
		if (th_failed_checks)
			printf("#   case %d\n", k);
		xp_fini(&p);
		if (th_failed_checks)
			return;
	}
}

/* Hand b a request packet of a's QP 0 (built here, as a would). */
static void inject_spin(struct xp *p, struct roce_hdr_fields *f, const void *payload,
			uint32_t plen, unsigned spin);

static void inject(struct xp *p, struct roce_hdr_fields *f, const void *payload, uint32_t plen)
{
	inject_spin(p, f, payload, plen, 50);
}

/* Hand b a frame a could have sent, then run spin loop iterations. */
static void inject_spin(struct xp *p, struct roce_hdr_fields *f, const void *payload,
			uint32_t plen, unsigned spin)
{
	struct rres_qp *qa = rres_qp_lookup(&p->a->rd, p->qa[0].qpn);
	struct roce_tq *tq = qa->transport;
	struct roce_path path = tq->path;
	struct pkt *pk = pkt_alloc();

	f->pkey = ROCE_PKEY_DEFAULT;
	f->dqpn = p->qb[0].qpn;
	memcpy(path.smac, p->a->mac, 6);
	if (!pk || roce_pkt_build_frame(pk, &path, f, payload, plen))
		abort();
	if (!roce_tp_input(p->b->tp, pk))
		pkt_free(pk);
	if (spin)
		fk_spin(&p->env, spin);
}

/* The request a sends for an atomic, handed to b again. */
static void replay_atomic(struct xp *p, uint32_t psn, uint64_t va, uint32_t rkey, uint64_t add)
{
	struct roce_hdr_fields f;

	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_FETCH_ADD;
	f.psn = psn;
	f.ackreq = true;
	f.atmeth.va = va;
	f.atmeth.rkey = rkey;
	f.atmeth.swap_add = add;
	inject(p, &f, NULL, 0);
}

/* A late duplicate restarts the answer of an old atomic; the requester,
 * which already had that answer, then sends its next request (max_rd_atomic
 * = max_dest_rd_atomic = 1). The new request takes the resource (the stale
 * replay is cancelled) instead of being refused as "resources exceeded",
 * and it is still executed once. */
static void test_atomic_stale_replay(void)
{
	struct virtio_rdma_cq_req wc[2];
	struct roce_hdr_fields f;
	struct xp_cfg c;
	struct fk_mr tgt, res;
	struct xp p;
	uint64_t va;
	uint32_t psn0 = 0x100;

	xp_cfg_default(&c);
	c.max_dest_rd = 1;
	c.max_rd = 1;
	xp_init(&p, &c);
	tgt = fk_mr_reg(p.b, p.pdb, 4096, ACC_ATOM);
	res = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	va = (uintptr_t)tgt.buf;
	wr64(tgt.buf, 1000);
	REQUIRE(post_atomic(p.a, &p.qa[0], 1, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    10, 0, res.buf, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(rd64(res.buf), 1000);
	/* the late duplicate and the next request arrive together */
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_FETCH_ADD;
	f.psn = psn0;
	f.ackreq = true;
	f.atmeth.va = va;
	f.atmeth.rkey = tgt.rkey;
	f.atmeth.swap_add = 10;
	inject_spin(&p, &f, NULL, 0, 0);
	f.psn = psn0 + 1;
	f.atmeth.swap_add = 1;
	inject_spin(&p, &f, NULL, 0, 50);
	CHECK_EQ(p.b->tp->stats.atomic_errors, 0);
	CHECK_EQ(p.b->tp->stats.stale_replays, 1);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 2);
	CHECK_EQ(rd64(tgt.buf), 1011);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	/* a now sends that same request: a duplicate, answered, not executed */
	REQUIRE(post_atomic(p.a, &p.qa[0], 2, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    1, 0, res.buf + 8, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(rd64(res.buf + 8), 1010);
	CHECK_EQ(rd64(tgt.buf), 1011);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 2);
	CHECK_EQ(qp_state(p.a, p.qa[0].qpn), VIRTIO_IB_QPS_RTS);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	xp_fini(&p);
}

/* A duplicate is answered from the saved result (the counter changes once);
 * when its resource was recycled it is dropped and counted. */
static void test_atomic_duplicate(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr tgt, res;
	struct xp p;
	uint64_t va;
	uint32_t psn0 = 0x100;

	xp_cfg_default(&c);
	c.max_dest_rd = 2;
	c.max_rd = 2;
	xp_init(&p, &c);
	tgt = fk_mr_reg(p.b, p.pdb, 4096, ACC_ATOM);
	res = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	va = (uintptr_t)tgt.buf + 8;
	wr64(tgt.buf + 8, 1000);
	REQUIRE(post_atomic(p.a, &p.qa[0], 1, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    10, 0, res.buf, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(rd64(res.buf), 1000);
	replay_atomic(&p, psn0, va, tgt.rkey, 10);
	replay_atomic(&p, psn0, va, tgt.rkey, 10);
	CHECK_EQ(rd64(tgt.buf + 8), 1010);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 1);
	CHECK_EQ(p.b->tp->stats.atomic_dups_answered, 2);
	CHECK(p.a->tp->stats.rx_stale_resp >= 2);  /* a has nothing outstanding */
	/* not the request it answered: dropped */
	replay_atomic(&p, psn0, va, tgt.rkey ^ 0x100, 10);
	CHECK_EQ(p.b->tp->stats.atomic_dups_dropped, 1);
	/* two more atomics recycle the resource of the first */
	REQUIRE(post_atomic(p.a, &p.qa[0], 2, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    1, 0, res.buf + 8, 8, res.lkey) == 0);
	REQUIRE(post_atomic(p.a, &p.qa[0], 3, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    1, 0, res.buf + 16, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
	CHECK_EQ(rd64(res.buf + 8), 1010);
	CHECK_EQ(rd64(res.buf + 16), 1011);
	replay_atomic(&p, psn0, va, tgt.rkey, 10);
	CHECK_EQ(p.b->tp->stats.atomic_dups_dropped, 2);
	replay_atomic(&p, psn0 + 2, va, tgt.rkey, 1);
	CHECK_EQ(p.b->tp->stats.atomic_dups_answered, 3);
	CHECK_EQ(rd64(tgt.buf + 8), 1012);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 3);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	CHECK_EQ(qp_state(p.a, p.qa[0].qpn), VIRTIO_IB_QPS_RTS);
	xp_fini(&p);
}

/* SQD -> SQD may change max_dest_rd_atomic (the responder resources). It
 * must not reset the responder's expected PSN: a duplicate of an atomic
 * executed before would then be taken as a new request and executed a
 * second time, and the requester's next request would be out of sequence.
 * Saved results survive the resize (up to the new depth). */
static void test_sqd_max_dest(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct rres_qp_modify m;
	struct xp_cfg c;
	struct fk_mr tgt, res;
	struct xp p;
	uint64_t va;
	uint32_t psn0 = 0x100;

	xp_cfg_default(&c);
	c.max_dest_rd = 2;
	c.max_rd = 2;
	xp_init(&p, &c);
	tgt = fk_mr_reg(p.b, p.pdb, 4096, ACC_ATOM);
	res = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	va = (uintptr_t)tgt.buf;
	wr64(tgt.buf, 5);
	REQUIRE(post_atomic(p.a, &p.qa[0], 1, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    1, 0, res.buf, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	/* b: RTS -> SQD -> SQD (4 resources, then 1) -> RTS */
	memset(&m, 0, sizeof(m));
	REQUIRE(fk_modify(p.b, p.qb[0].qpn, VIRTIO_IB_QPS_SQD, 0, &m) == 0);
	fk_spin(&p.env, 5);
	m.max_dest_rd_atomic = 4;
	REQUIRE(fk_modify(p.b, p.qb[0].qpn, VIRTIO_IB_QPS_SQD,
			  VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC, &m) == 0);
	replay_atomic(&p, psn0, va, tgt.rkey, 1);
	CHECK_EQ(rd64(tgt.buf), 6);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 1);
	CHECK_EQ(p.b->tp->stats.atomic_dups_answered, 1);
	m.max_dest_rd_atomic = 1;
	REQUIRE(fk_modify(p.b, p.qb[0].qpn, VIRTIO_IB_QPS_SQD,
			  VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC, &m) == 0);
	REQUIRE(fk_modify(p.b, p.qb[0].qpn, VIRTIO_IB_QPS_RTS, 0, &m) == 0);
	replay_atomic(&p, psn0, va, tgt.rkey, 1);
	CHECK_EQ(rd64(tgt.buf), 6);
	CHECK_EQ(p.b->tp->stats.atomics_executed, 1);
	CHECK_EQ(p.b->tp->stats.atomic_dups_answered, 2);
	/* the connection goes on */
	REQUIRE(post_atomic(p.a, &p.qa[0], 2, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
			    1, 0, res.buf + 8, 8, res.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(rd64(res.buf + 8), 6);
	CHECK_EQ(rd64(tgt.buf), 7);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_RTS);
	xp_fini(&p);
}

/* Many QPs add to one counter: it ends at the total and every completion
 * got a distinct prior value (together: every value below the total). */
static void test_atomic_race(void)
{
	enum { PER = 64 };
	struct virtio_rdma_cq_req wc[NQ * PER];
	static uint8_t seen[NQ * PER];
	struct xp_cfg c;
	struct fk_mr tgt, res;
	struct xp p;
	uint64_t va;
	unsigned n = 0, dup = 0;

	xp_cfg_default(&c);
	c.nq = NQ;
	xp_init(&p, &c);
	tgt = fk_mr_reg(p.b, p.pdb, 4096, ACC_ATOM);
	res = fk_mr_reg(p.a, p.pda, NQ * PER * 8, FK_ACC_ALL);
	va = (uintptr_t)tgt.buf + 4088;
	for (unsigned i = 0; i < PER; i++)
		for (unsigned q = 0; q < NQ; q++) {
			unsigned id = q * PER + i;
			int rc;

			while ((rc = post_atomic(p.a, &p.qa[q], id,
						 VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, va, tgt.rkey,
						 1, 0, res.buf + id * 8, 8, res.lkey)) == -ENOSPC)
				n += fk_poll_cq(p.a, p.cqa, wc + n, NQ * PER - n), fk_spin(&p.env, 1);
			REQUIRE(rc == 0);
		}
	n += wait_cq(&p.env, p.a, p.cqa, wc + n, NQ * PER - n);
	REQUIRE(n == NQ * PER);
	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < n; i++) {
		uint64_t v;

		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
		v = rd64(res.buf + wc[i].wr_id * 8);
		if (v >= NQ * PER || seen[v]++)
			dup++;
	}
	CHECK_EQ(dup, 0);
	CHECK_EQ(rd64(tgt.buf + 4088), NQ * PER);
	CHECK_EQ(p.b->tp->stats.atomics_executed, NQ * PER);
	xp_fini(&p);
}

/* ---- fast registration, invalidation ------------------------------------------ */

/* REG_MR on the responder, then WRITE / READ / atomic through the new key;
 * LOCAL_INV, then the key fails remotely; the stale key never worked. */
static void test_reg_mr_remote(void)
{
	const uint32_t acc = ACC_ATOM;
	const uint64_t iova = 0x7000000000ull + 512;
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr src, dst;
	struct rres_mr *fm;
	uint32_t key, old;
	uint8_t *buf;
	uint64_t pl;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	src = fk_mr_reg(p.a, p.pda, 65536, FK_ACC_ALL);
	dst = fk_mr_reg(p.a, p.pda, 65536, FK_ACC_ALL);
	fk_fill(src.buf, 65536, 3);
	fm = fk_mr_alloc(p.b, p.pdb, 5);
	old = fm->rkey;
	key = fk_key8(old, (uint8_t)(old + 1));
	buf = fk_alloc(p.b, 5 * 4096, 4096);
	pl = fk_page_list(p.b, buf, 5 * 4096);
	/* the key does not work before REG_MR */
	CHECK(rres_mr_lookup_rkey(&p.b->rd, old, rres_pd_lookup(&p.b->rd, p.pdb),
				  VIRTIO_IB_ACCESS_REMOTE_WRITE) == NULL);
	REQUIRE(post_reg(p.b, &p.qb[0], 1, key, iova, 4 * 4096, pl, acc) == 0);
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_REG_MR);
	CHECK_EQ(wc[0].byte_len, 0);
	/* iova + k lives at page[(o + k) >> 12] + ((o + k) & 4095), o = 512 */
	REQUIRE(post_rdma(p.a, &p.qa[0], 2, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 10000, src.lkey,
			  iova + 100, key) == 0);
	REQUIRE(post_rdma(p.a, &p.qa[0], 3, VIRTIO_IB_WR_RDMA_READ, dst.buf, 6000, dst.lkey,
			  iova + 3000, key) == 0);
	/* (READ responses are read from memory when sent: keep the atomic
	 * out of the READ's range, no FENCE here) */
	wr64(buf + 3 * 4096, 0x99);
	REQUIRE(post_atomic(p.a, &p.qa[0], 4, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP,
			    iova + 3 * 4096 - 512, key, 0x99, 0x1122334455667788ull,
			    dst.buf + 8192, 8, dst.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 3) == 3);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_MEM(buf + 612, src.buf, 10000);
	CHECK_MEM(dst.buf, src.buf + 2900, 6000);
	CHECK_EQ(rd64(buf + 3 * 4096), 0x1122334455667788ull);
	CHECK_EQ(rd64(dst.buf + 8192), 0x99);
	/* REG_MR of a VALID MR fails locally (the MR unchanged) */
	REQUIRE(post_reg(p.b, &p.qb[0], 5, fk_key8(key, 0x99), iova, 4096, pl, acc) == 0);
	EXPECT_WC(&p.env, p.b, p.cqb, 5, VIRTIO_IB_WC_LOC_PROT_ERR, VIRTIO_IB_WC_REG_MR);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(fm->rkey, key);
	CHECK_EQ(fm->state, RRES_MR_VALID);
	xp_fini(&p);

	/* LOCAL_INV, then the key (and the stale one) fail remotely */
	for (int k = 0; k < 2; k++) {
		xp_init(&p, &c);
		src = fk_mr_reg(p.a, p.pda, 65536, FK_ACC_ALL);
		fm = fk_mr_alloc(p.b, p.pdb, 5);
		old = fm->rkey;
		key = fk_key8(old, (uint8_t)(old + 1));
		buf = fk_alloc(p.b, 5 * 4096, 4096);
		pl = fk_page_list(p.b, buf, 5 * 4096);
		REQUIRE(post_reg(p.b, &p.qb[0], 1, key, iova, 4 * 4096, pl, acc) == 0);
		if (k == 0)
			REQUIRE(post_inv(p.b, &p.qb[0], 2, key) == 0);
		REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1 + (k == 0)) == 1u + (k == 0));
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		if (k == 0) {
			CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[1].opcode, VIRTIO_IB_WC_LOCAL_INV);
		}
		REQUIRE(post_rdma(p.a, &p.qa[0], 3, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 100,
				  src.lkey, iova, k == 0 ? key : old) == 0);
		EXPECT_WC(&p.env, p.a, p.cqa, 3, VIRTIO_IB_WC_REM_ACCESS_ERR,
			  VIRTIO_IB_WC_RDMA_WRITE);
		CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
		CHECK_EQ(events_of(p.b, p.qb[0].qpn), 1u << VIRTIO_IB_EVENT_QP_ACCESS_ERR);
		CHECK_EQ(buf[512], 0);
		xp_fini(&p);
	}
}

/* A fast-registration MR registered over pages in order translates a range
 * in one piece (mr->contig); invalidated and registered again over the same
 * pages out of order, it walks them. */
static void test_fast_reg_layouts(void)
{
	const struct rres_pd *pd;
	struct xp_cfg c;
	struct rres_mr *fm;
	struct iovec iov[4];
	uint64_t *pl;
	uint8_t *buf;
	uint32_t key;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	pd = rres_pd_lookup(&p.b->rd, p.pdb);
	fm = fk_mr_alloc(p.b, p.pdb, 2);
	key = fk_key8(fm->rkey, 0x41);
	buf = fk_alloc(p.b, 2 * 4096, 4096);
	REQUIRE(rres_mr_fast_reg(&p.b->rd, pd, key, 0x9000, 8192, fk_page_list(p.b, buf, 8192),
				 FK_ACC_ALL) == 0);
	/* (the daemon's mapping of buf is another address: compare bytes) */
	for (unsigned i = 0; i < 8192; i++)
		buf[i] = (uint8_t)(i * 5 + i / 4096);
	CHECK(fm->contig != NULL);
	CHECK_EQ(rres_mr_to_iov(&p.b->rd, fm, 0x9000 + 4000, 200, iov, 4), 1);
	CHECK_EQ(iov[0].iov_len, 200);
	CHECK_MEM(iov[0].iov_base, buf + 4000, 200);
	REQUIRE(rres_key_invalidate(&p.b->rd, pd, key) == 0);
	CHECK(fm->contig == NULL);
	pl = (uint64_t *)(uintptr_t)fk_page_list(p.b, buf, 8192);
	pl[0] = htole64((uintptr_t)buf + 4096); /* the two pages swapped */
	pl[1] = htole64((uintptr_t)buf);
	key = fk_key8(key, 0x42);
	REQUIRE(rres_mr_fast_reg(&p.b->rd, pd, key, 0x9000, 8192, (uintptr_t)pl, FK_ACC_ALL) == 0);
	CHECK(fm->contig == NULL);
	CHECK_EQ(rres_mr_to_iov(&p.b->rd, fm, 0x9000 + 4000, 200, iov, 4), 2);
	CHECK_EQ(iov[0].iov_len, 96);
	CHECK_MEM(iov[0].iov_base, buf + 4096 + 4000, 96);
	CHECK_EQ(iov[1].iov_len, 104);
	CHECK_MEM(iov[1].iov_base, buf, 104);
	xp_fini(&p);
}

/* An invalidation takes effect in the middle of a message: the remaining
 * packets of a WRITE through the key fail (NAK Remote Access Error). */
static void test_inv_mid_message(void)
{
	struct roce_hdr_fields f;
	struct xp_cfg c;
	struct rres_mr *fm;
	uint8_t *buf, data[1024];
	uint32_t key;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	fm = fk_mr_alloc(p.b, p.pdb, 1);
	key = fk_key8(fm->rkey, 0x31);
	buf = fk_alloc(p.b, 4096, 4096);
	REQUIRE(rres_mr_fast_reg(&p.b->rd, rres_pd_lookup(&p.b->rd, p.pdb), key, 0x9000, 4096,
				 fk_page_list(p.b, buf, 4096), FK_ACC_ALL) == 0);
	memset(data, 0xab, sizeof(data));
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_WRITE_FIRST;
	f.psn = 0x100;
	f.reth.va = 0x9000;
	f.reth.rkey = key;
	f.reth.len = 2048;
	inject(&p, &f, data, 1024);
	CHECK_EQ(buf[0], 0xab);
	CHECK_EQ(buf[1023], 0xab);
	/* what a LOCAL_INV or a received SEND_WITH_INV does */
	REQUIRE(rres_key_invalidate(&p.b->rd, rres_pd_lookup(&p.b->rd, p.pdb), key) == 0);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_WRITE_LAST;
	f.psn = 0x101;
	f.ackreq = true;
	inject(&p, &f, data, 1024);
	CHECK_EQ(buf[1024], 0);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(events_of(p.b, p.qb[0].qpn), 1u << VIRTIO_IB_EVENT_QP_ACCESS_ERR);
	CHECK(p.b->tp->stats.naks_sent >= 1);
	xp_fini(&p);
}

/* REG_MR on the requester: a SEND posted right behind it uses the new lkey;
 * after LOCAL_INV the lkey fails (LOC_PROT_ERR); invalidation failures. */
static void test_reg_mr_local(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr rb, um;
	struct rres_mr *fm;
	uint32_t key;
	uint8_t *buf;
	struct xp p;

	for (int k = 0; k < 4; k++) {
		xp_cfg_default(&c);
		xp_init(&p, &c);
		rb = fk_mr_reg(p.b, p.pdb, 8192, FK_ACC_ALL);
		um = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
		fm = fk_mr_alloc(p.a, p.pda, 2);
		key = fk_key8(fm->lkey, 0x42);
		buf = fk_alloc(p.a, 8192, 4096);
		fk_fill(buf, 8192, 9);
		{
			struct fk_sge r = { rb.buf, 8192, rb.lkey };

			REQUIRE(fk_post_recv(p.b, &p.qb[0], 50, &r, 1) == 0);
			REQUIRE(fk_post_recv(p.b, &p.qb[0], 51, &r, 1) == 0);
		}
		REQUIRE(post_reg(p.a, &p.qa[0], 1, key, 0x1000, 8192, fk_page_list(p.a, buf, 8192),
				 VIRTIO_IB_ACCESS_LOCAL_WRITE) == 0);
		REQUIRE(post_rdma(p.a, &p.qa[0], 2, VIRTIO_IB_WR_SEND, (void *)(uintptr_t)0x1100,
				  5000, key, 0, 0) == 0);
		if (k == 0) {
			REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_REG_MR);
			CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[1].opcode, VIRTIO_IB_WC_SEND);
			REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[0].byte_len, 5000);
			CHECK_MEM(rb.buf, buf + 0x100, 5000);
			/* invalidate, then the lkey fails locally */
			REQUIRE(post_inv(p.a, &p.qa[0], 3, key) == 0);
			REQUIRE(post_rdma(p.a, &p.qa[0], 4, VIRTIO_IB_WR_SEND,
					  (void *)(uintptr_t)0x1100, 10, key, 0, 0) == 0);
			REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_LOCAL_INV);
			CHECK_EQ(wc[1].wr_id, 4);
			CHECK_EQ(wc[1].status, VIRTIO_IB_WC_LOC_PROT_ERR);
			CHECK_EQ(qp_state(p.a, p.qa[0].qpn), VIRTIO_IB_QPS_ERR);
			CHECK_EQ(fm->state, RRES_MR_FREE);
		} else {
			/* k 1: LOCAL_INV of a user MR; 2: of a wrong key;
			 * 3: REG_MR with an SGE */
			struct fk_wr wr = { .opcode = VIRTIO_IB_WR_REG_MR };
			struct fk_sge s = { um.buf, 8, um.lkey };

			REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
			if (k == 3) {
				wr.sge = &s;
				wr.nsge = 1;
				wr.reg.key = fk_key8(key, 7);
				REQUIRE(post_local(p.a, &p.qa[0], 3, &wr) == 0);
			} else {
				REQUIRE(post_inv(p.a, &p.qa[0], 3, k == 1 ? um.lkey : key ^ 1) == 0);
			}
			REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
			CHECK_EQ(wc[0].status, k == 3 ? VIRTIO_IB_WC_LOC_QP_OP_ERR :
				 VIRTIO_IB_WC_LOC_PROT_ERR);
			CHECK_EQ(wc[0].opcode, k == 3 ? VIRTIO_IB_WC_REG_MR : VIRTIO_IB_WC_LOCAL_INV);
			CHECK_EQ(fm->state, RRES_MR_VALID);
			CHECK_EQ(qp_state(p.a, p.qa[0].qpn), VIRTIO_IB_QPS_ERR);
		}
		if (th_failed_checks)
			printf("#   case %d\n", k);
		xp_fini(&p);
		if (th_failed_checks)
			return;
	}
}

/* READ into a fast-registered MR, then LOCAL_INV of its key with FENCE:
 * the invalidation waits for the READ's data; the READ completes. */
static void test_fence_local_inv(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr src;
	struct rres_mr *fm;
	uint32_t key;
	uint8_t *buf;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	src = fk_mr_reg(p.b, p.pdb, 16384, FK_ACC_ALL);
	fk_fill(src.buf, 16384, 21);
	fm = fk_mr_alloc(p.a, p.pda, 4);
	key = fk_key8(fm->lkey, 0x10);
	buf = fk_alloc(p.a, 16384, 4096);
	REQUIRE(post_reg(p.a, &p.qa[0], 1, key, 0x40000, 16384, fk_page_list(p.a, buf, 16384),
			 VIRTIO_IB_ACCESS_LOCAL_WRITE) == 0);
	REQUIRE(post_rdma(p.a, &p.qa[0], 2, VIRTIO_IB_WR_RDMA_READ, (void *)(uintptr_t)0x40000,
			  16384, key, (uintptr_t)src.buf, src.rkey) == 0);
	{
		struct fk_wr wr = { .opcode = VIRTIO_IB_WR_LOCAL_INV, .inv_rkey = key,
				    .flags = VIRTIO_IB_SEND_FENCE };

		REQUIRE(post_local(p.a, &p.qa[0], 3, &wr) == 0);
	}
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 3) == 3);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(wc[i].wr_id, i + 1);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	}
	CHECK_EQ(wc[1].byte_len, 16384);
	CHECK_EQ(wc[2].opcode, VIRTIO_IB_WC_LOCAL_INV);
	CHECK_MEM(buf, src.buf, 16384);
	CHECK_EQ(fm->state, RRES_MR_FREE);
	CHECK_EQ(p.a->tp->stats.local_ops, 2);
	xp_fini(&p);
}

/* SEND_WITH_INV: the receiver invalidates its key after the data is placed
 * (RECV + WITH_INV + the key); the key then fails; failures. */
static void test_send_with_inv(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr src, rb, um;
	struct rres_mr *fm;
	uint32_t key;
	uint8_t *buf;
	struct xp p;

	for (int k = 0; k < 5; k++) {
		uint32_t inv;
		struct fk_sge s, r;
		struct fk_wr wr;

		xp_cfg_default(&c);
		if (k == 3)
			c.ext_b = false;
		if (k == 4)
			c.type = VIRTIO_IB_QPT_UC;
		xp_init(&p, &c);
		src = fk_mr_reg(p.a, p.pda, 8192, FK_ACC_ALL);
		fk_fill(src.buf, 8192, 5);
		rb = fk_mr_reg(p.b, p.pdb, 8192, FK_ACC_ALL);
		um = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
		key = 0;
		buf = NULL;
		fm = NULL;
		if (c.ext_b) {
			fm = fk_mr_alloc(p.b, p.pdb, 1);
			key = fk_key8(fm->rkey, 0x21);
			buf = fk_alloc(p.b, 4096, 4096);
			REQUIRE(post_reg(p.b, &p.qb[0], 1, key, 0, 4096, fk_page_list(p.b, buf, 4096),
					 FK_ACC_ALL) == 0);
			REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		}
		r = (struct fk_sge){ rb.buf, 8192, rb.lkey };
		REQUIRE(fk_post_recv(p.b, &p.qb[0], 60, &r, 1) == 0);
		inv = k == 1 ? um.rkey : k == 2 ? key ^ 0x3 : k == 3 ? um.rkey : key;
		s = (struct fk_sge){ src.buf, 3000, src.lkey };
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 9;
		wr.opcode = VIRTIO_IB_WR_SEND_WITH_INV;
		wr.flags = SIG;
		wr.inv_rkey = inv;
		wr.sge = &s;
		wr.nsge = 1;
		wr.trunc = -1;
		REQUIRE(fk_post_send(p.a, &p.qa[0], &wr) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
		CHECK_EQ(wc[0].wr_id, 9);
		CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_SEND);
		if (k == 4) {
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		} else if (k == 0) {
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
			REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
			CHECK_EQ(wc[0].wr_id, 60);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
			CHECK_EQ(wc[0].opcode, VIRTIO_IB_WC_RECV);
			CHECK_EQ(wc[0].byte_len, 3000);
			CHECK_EQ(wc[0].wc_flags, VIRTIO_IB_WC_WITH_INV);
			CHECK_EQ(le32toh(wc[0].imm_data), key);
			CHECK_MEM(rb.buf, src.buf, 3000);
			CHECK_EQ(fm->state, RRES_MR_FREE);
			CHECK_EQ(p.b->tp->stats.remote_inv_ok, 1);
			/* the key is dead */
			REQUIRE(post_rdma(p.a, &p.qa[0], 10, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 8,
					  src.lkey, 0, key) == 0);
			EXPECT_WC(&p.env, p.a, p.cqa, 10, VIRTIO_IB_WC_REM_ACCESS_ERR,
				  VIRTIO_IB_WC_RDMA_WRITE);
			CHECK_EQ(buf[0], 0);
		} else {
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_REM_INV_REQ_ERR);
			CHECK_EQ(qp_state(p.a, p.qa[0].qpn), VIRTIO_IB_QPS_ERR);
			CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
			REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
			CHECK_EQ(wc[0].wr_id, 60);
			CHECK_EQ(wc[0].status, k == 3 ? VIRTIO_IB_WC_WR_FLUSH_ERR :
				 VIRTIO_IB_WC_REM_INV_REQ_ERR);
			CHECK_EQ(wc[0].wc_flags, 0);
			if (fm)
				CHECK_EQ(fm->state, RRES_MR_VALID);
			/* reported by the completion: no event */
			CHECK_EQ(events_of(p.b, p.qb[0].qpn), 0);
		}
		if (th_failed_checks)
			printf("#   case %d\n", k);
		xp_fini(&p);
		if (th_failed_checks)
			return;
	}
}

/* ---- memory windows ----------------------------------------------------------- */

/* Bind type 1 and type 2 windows on the responder, then access them from
 * the requester; case k breaks one rule (-1: none). */
static void mw_case(int k)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr src, base;
	struct rres_mr *mw;
	uint32_t wkey, mracc = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND;
	uint32_t wacc = VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ |
			VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	uint8_t type = (k >= 10) ? VIRTIO_IB_MW_TYPE_2 : VIRTIO_IB_MW_TYPE_1;
	uint8_t bind_st = VIRTIO_IB_WC_SUCCESS;
	uint64_t waddr, wlen = 4096, va;
	uint32_t len = 1000, rkey;
	uint8_t op = VIRTIO_IB_WR_RDMA_WRITE;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	if (k == 3)
		mracc = VIRTIO_IB_ACCESS_MW_BIND;            /* no LOCAL_WRITE */
	src = fk_mr_reg(p.a, p.pda, 8192, FK_ACC_ALL);
	fk_fill(src.buf, 8192, 11);
	base = fk_mr_reg(p.b, p.pdb, 4 * 4096, mracc);
	mw = fk_mw_alloc(p.b, p.pdb, type);
	wkey = fk_key8(mw->rkey, (uint8_t)(mw->rkey + 3));
	waddr = (uintptr_t)base.buf + 4096;
	va = waddr + 100;
	rkey = wkey;
	switch (k) {
	case 0: va = waddr - 8; break;                       /* before the window */
	case 1: va = waddr + wlen - 500; break;              /* past its end */
	case 2: wacc = VIRTIO_IB_ACCESS_REMOTE_READ; break;  /* no write right */
	case 3: bind_st = VIRTIO_IB_WC_MW_BIND_ERR; break;   /* more than its MR */
	case 4: waddr = (uintptr_t)base.buf + 3 * 4096 + 8;  /* beyond the MR */
		bind_st = VIRTIO_IB_WC_MW_BIND_ERR; break;
	case 5: rkey = mw->rkey; break;                      /* stale key */
	case 6: wacc |= VIRTIO_IB_ACCESS_LOCAL_WRITE;        /* not a window right */
		bind_st = VIRTIO_IB_WC_MW_BIND_ERR; break;
	case 7: wacc = VIRTIO_IB_ACCESS_REMOTE_WRITE; op = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
		va = waddr + 64; break;                      /* no atomic right */
	case 8: break;                                       /* unbind, then access */
	case 10: break;                                      /* type 2: LOCAL_INV */
	case 11: break;                                      /* type 2: bound twice */
	case 12: break;                                      /* MR inval. while bound */
	default: break;
	}
	REQUIRE(post_bind(p.b, &p.qb[0], 1, wkey, base.lkey, waddr, wlen, wacc) == 0);
	EXPECT_WC(&p.env, p.b, p.cqb, 1, bind_st, VIRTIO_IB_WC_BIND_MW);
	if (bind_st != VIRTIO_IB_WC_SUCCESS) {
		CHECK_EQ(mw->state, RRES_MR_FREE);
		CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
		xp_fini(&p);
		return;
	}
	CHECK_EQ(mw->rkey, wkey);
	if (k == 8) {
		REQUIRE(post_bind(p.b, &p.qb[0], 2, fk_key8(wkey, 0x77), 0, 0, 0, 0) == 0);
		EXPECT_WC(&p.env, p.b, p.cqb, 2, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_BIND_MW);
		rkey = fk_key8(wkey, 0x77);
	} else if (k == 10) {
		REQUIRE(post_inv(p.b, &p.qb[0], 2, wkey) == 0);
		EXPECT_WC(&p.env, p.b, p.cqb, 2, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_LOCAL_INV);
	} else if (k == 11) {
		REQUIRE(post_bind(p.b, &p.qb[0], 2, fk_key8(wkey, 0x78), base.lkey, waddr, 8,
				  wacc) == 0);
		EXPECT_WC(&p.env, p.b, p.cqb, 2, VIRTIO_IB_WC_MW_BIND_ERR, VIRTIO_IB_WC_BIND_MW);
		CHECK_EQ(mw->rkey, wkey);
		xp_fini(&p);
		return;
	}
	if (k < 0 || k == 9) {
		struct virtio_rdma_cq_req w[3];
		uint8_t *dst = src.buf + 4096;

		/* inside: WRITE, READ, atomic all work through the MR */
		wr64(base.buf + 4096 + 2048, 7);
		REQUIRE(post_rdma(p.a, &p.qa[0], 2, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 2000,
				  src.lkey, waddr, rkey) == 0);
		REQUIRE(post_rdma(p.a, &p.qa[0], 3, VIRTIO_IB_WR_RDMA_READ, dst, 4096, src.lkey,
				  waddr, rkey) == 0);
		REQUIRE(post_atomic(p.a, &p.qa[0], 4, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD,
				    waddr + 2048, rkey, 5, 0, src.buf + 4088, 8, src.lkey) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, w, 3) == 3);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(w[i].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_MEM(base.buf + 4096, src.buf, 2000);
		CHECK_EQ(rd64(src.buf + 4088), 7);
		CHECK_EQ(rd64(base.buf + 4096 + 2048), 12);
		/* the READ may see the atomic (no FENCE): its data is read
		 * when the responses are sent */
		CHECK_MEM(dst, base.buf + 4096, 2048);
		CHECK(rd64(dst + 2048) == 7 || rd64(dst + 2048) == 12);
		CHECK_MEM(dst + 2056, base.buf + 4096 + 2056, 4096 - 2056);
		/* the MR cannot be deregistered while the window is bound */
		CHECK_EQ(rres_mr_dereg(&p.b->rd, base.mrn), RRES_ERR_IN_USE);
		xp_fini(&p);
		return;
	}
	if (op == VIRTIO_IB_WR_RDMA_WRITE)
		REQUIRE(post_rdma(p.a, &p.qa[0], 5, op, src.buf, len, src.lkey, va, rkey) == 0);
	else
		REQUIRE(post_atomic(p.a, &p.qa[0], 5, op, va, rkey, 1, 0, src.buf + 8000, 8,
				    src.lkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_REM_ACCESS_ERR);
	CHECK_EQ(qp_state(p.b, p.qb[0].qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(events_of(p.b, p.qb[0].qpn), 1u << VIRTIO_IB_EVENT_QP_ACCESS_ERR);
	for (unsigned i = 0; i < 4 * 4096; i++)
		if (base.buf[i]) {
			CHECK(!"window wrote outside its rules");
			break;
		}
	xp_fini(&p);
}

static void test_mw(void)
{
	static const int cases[] = { -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11 };

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		mw_case(cases[i]);
		if (th_failed_checks) {
			printf("#   case %d\n", cases[i]);
			return;
		}
	}
}

/* A type 2 window on an ALLOC_MR MR: the MR cannot be invalidated while the
 * window is bound; SEND_WITH_INV of the window's key unbinds it. */
static void test_mw_type2_remote_inv(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr src, rb;
	struct rres_mr *fm, *mw;
	uint32_t mkey, wkey;
	uint8_t *buf;
	struct xp p;

	xp_cfg_default(&c);
	xp_init(&p, &c);
	src = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	rb = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
	fm = fk_mr_alloc(p.b, p.pdb, 2);
	mw = fk_mw_alloc(p.b, p.pdb, VIRTIO_IB_MW_TYPE_2);
	mkey = fk_key8(fm->lkey, 1);
	wkey = fk_key8(mw->rkey, 2);
	buf = fk_alloc(p.b, 8192, 4096);
	REQUIRE(post_reg(p.b, &p.qb[0], 1, mkey, 0x100000, 8192, fk_page_list(p.b, buf, 8192),
			 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND) == 0);
	REQUIRE(post_bind(p.b, &p.qb[0], 2, wkey, mkey, 0x100000 + 4096, 4096,
			  VIRTIO_IB_ACCESS_REMOTE_WRITE) == 0);
	REQUIRE(post_inv(p.b, &p.qb[0], 3, mkey) == 0);   /* fails: window bound */
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 3) == 3);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[2].status, VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(fm->state, RRES_MR_VALID);
	xp_fini(&p);

	xp_init(&p, &c);
	src = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	fk_fill(src.buf, 4096, 1);
	rb = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
	fm = fk_mr_alloc(p.b, p.pdb, 2);
	mw = fk_mw_alloc(p.b, p.pdb, VIRTIO_IB_MW_TYPE_2);
	mkey = fk_key8(fm->lkey, 1);
	wkey = fk_key8(mw->rkey, 2);
	buf = fk_alloc(p.b, 8192, 4096);
	REQUIRE(post_reg(p.b, &p.qb[0], 1, mkey, 0x100000, 8192, fk_page_list(p.b, buf, 8192),
			 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND) == 0);
	REQUIRE(post_bind(p.b, &p.qb[0], 2, wkey, mkey, 0x100000 + 4096, 4096,
			  VIRTIO_IB_ACCESS_REMOTE_WRITE) == 0);
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 2) == 2);
	REQUIRE(post_rdma(p.a, &p.qa[0], 4, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 4096, src.lkey,
			  0x100000 + 4096, wkey) == 0);
	EXPECT_WC(&p.env, p.a, p.cqa, 4, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE);
	CHECK_MEM(buf + 4096, src.buf, 4096);
	{
		struct fk_sge r = { rb.buf, 4096, rb.lkey }, s = { src.buf, 16, src.lkey };
		struct fk_wr wr = { .wr_id = 5, .opcode = VIRTIO_IB_WR_SEND_WITH_INV, .flags = SIG,
				    .inv_rkey = wkey, .sge = &s, .nsge = 1, .trunc = -1 };

		REQUIRE(fk_post_recv(p.b, &p.qb[0], 70, &r, 1) == 0);
		REQUIRE(fk_post_send(p.a, &p.qa[0], &wr) == 0);
	}
	EXPECT_WC(&p.env, p.a, p.cqa, 5, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_SEND);
	REQUIRE(wait_cq(&p.env, p.b, p.cqb, wc, 1) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].wc_flags, VIRTIO_IB_WC_WITH_INV);
	CHECK_EQ(le32toh(wc[0].imm_data), wkey);
	CHECK_EQ(mw->state, RRES_MR_FREE);
	CHECK_EQ(fm->nbound, 0);
	/* now the MR can be invalidated */
	REQUIRE(post_inv(p.b, &p.qb[0], 6, mkey) == 0);
	EXPECT_WC(&p.env, p.b, p.cqb, 6, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_LOCAL_INV);
	REQUIRE(post_rdma(p.a, &p.qa[0], 7, VIRTIO_IB_WR_RDMA_WRITE, src.buf, 16, src.lkey,
			  0x100000 + 4096, wkey) == 0);
	EXPECT_WC(&p.env, p.a, p.cqa, 7, VIRTIO_IB_WC_REM_ACCESS_ERR, VIRTIO_IB_WC_RDMA_WRITE);
	xp_fini(&p);
}

/* ---- seed behaviour, events ------------------------------------------------------ */

/* Without ROCE_EXT every new opcode is LOC_QP_OP_ERR with a seed completion
 * opcode; with it, wrong QP types are refused the same way. */
static void test_no_ext(void)
{
	static const uint8_t ops[] = { 5, 6, 7, 8, 9, 0x20, 10, 11 };
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct xp p;

	for (int e = 0; e < 4; e++) {
		for (unsigned i = 0; i < ARRAY_SIZE(ops); i++) {
			struct fk_mr m;
			struct fk_sge s;
			struct fk_wr wr;
			bool refused;

			xp_cfg_default(&c);
			c.ext_a = c.ext_b = e > 0;
			c.type = e == 2 ? VIRTIO_IB_QPT_UC : e == 3 ? VIRTIO_IB_QPT_UD :
				 VIRTIO_IB_QPT_RC;
			xp_init(&p, &c);
			m = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
			s = (struct fk_sge){ m.buf, 8, m.lkey };
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 3;
			wr.opcode = ops[i];
			wr.flags = SIG;
			wr.sge = &s;
			wr.nsge = ops[i] == 7 || ops[i] == 8 || ops[i] == 0x20 ? 0 : 1;
			wr.trunc = -1;
			if (ops[i] == VIRTIO_IB_WR_SEND_WITH_INV) {
				struct fk_mr rb = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
				struct fk_sge r = { rb.buf, 4096, rb.lkey };

				REQUIRE(fk_post_recv(p.b, &p.qb[0], 1, &r, 1) == 0);
			}
			REQUIRE(fk_post_send(p.a, &p.qa[0], &wr) == 0);
			REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 1) == 1);
			/* UC takes LOCAL_INV, BIND_MW, REG_MR (which fail on
			 * their keys), UD LOCAL_INV and REG_MR; RC takes every
			 * one but 10 and 11 */
			refused = e == 0 || ops[i] == 10 || ops[i] == 11 ||
				  (e >= 2 && (ops[i] == 5 || ops[i] == 6 || ops[i] == 9)) ||
				  (e == 3 && ops[i] == 8);
			if (refused) {
				CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_QP_OP_ERR);
				CHECK_EQ(wc[0].opcode, e == 0 || ops[i] == 10 || ops[i] == 11 ?
					 VIRTIO_IB_WC_SEND :
					 virtio_ib_wc_opcode_of_wr(ops[i]));
			} else {
				CHECK(wc[0].status != VIRTIO_IB_WC_LOC_QP_OP_ERR);
				CHECK(wc[0].status != VIRTIO_IB_WC_SUCCESS);
				CHECK_EQ(wc[0].opcode, virtio_ib_wc_opcode_of_wr(ops[i]));
			}
			/* a local error: RC to ERR, UC / UD to SQE */
			CHECK_EQ(qp_state(p.a, p.qa[0].qpn), c.type == VIRTIO_IB_QPT_RC ?
				 VIRTIO_IB_QPS_ERR : VIRTIO_IB_QPS_SQE);
			CHECK(wc[0].opcode < 5 || e > 0);
			CHECK_EQ(events_of(p.a, p.qa[0].qpn), 0);
			if (th_failed_checks)
				printf("#   ext %d op %u\n", e, ops[i]);
			xp_fini(&p);
			if (th_failed_checks)
				return;
		}
	}
}

/* COMM_EST: the first request packet of a QP in RTR, once. */
static void test_comm_est(void)
{
	struct virtio_rdma_cq_req wc[4];
	struct xp_cfg c;
	struct fk_mr m, r;
	struct xp p;

	for (int e = 0; e < 2; e++) {
		xp_cfg_default(&c);
		c.b_rtr = true;
		c.ext_a = c.ext_b = e;
		xp_init(&p, &c);
		m = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
		r = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
		REQUIRE(post_rdma(p.a, &p.qa[0], 1, VIRTIO_IB_WR_RDMA_WRITE, m.buf, 100, m.lkey,
				  (uintptr_t)r.buf, r.rkey) == 0);
		REQUIRE(post_rdma(p.a, &p.qa[0], 2, VIRTIO_IB_WR_RDMA_WRITE, m.buf, 100, m.lkey,
				  (uintptr_t)r.buf, r.rkey) == 0);
		REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(events_of(p.b, p.qb[0].qpn), e ? 1u << VIRTIO_IB_EVENT_COMM_EST : 0);
		CHECK_EQ(p.b->tp->stats.comm_est, (uint64_t)e);
		CHECK_EQ(events_of(p.a, p.qa[0].qpn), 0);
		/* the connection manager hears it once, with or without the
		 * extension (it treats it as the RTU) */
		CHECK_EQ(p.b->comm_est_calls, 1);
		CHECK_EQ(p.b->comm_est_qpn, p.qb[0].qpn);
		CHECK_EQ(p.a->comm_est_calls, 0);
		xp_fini(&p);
	}
	/* A QP already in RTS (rdma_cm's passive side once its REP is out):
	 * no event (IBTA: RTR), but the connection manager hears it, once. */
	xp_cfg_default(&c);
	c.ext_a = c.ext_b = 1;
	xp_init(&p, &c);
	m = fk_mr_reg(p.a, p.pda, 4096, FK_ACC_ALL);
	r = fk_mr_reg(p.b, p.pdb, 4096, FK_ACC_ALL);
	for (int i = 0; i < 2; i++)
		REQUIRE(post_rdma(p.a, &p.qa[0], (uint64_t)i + 1, VIRTIO_IB_WR_RDMA_WRITE, m.buf,
				  100, m.lkey, (uintptr_t)r.buf, r.rkey) == 0);
	REQUIRE(wait_cq(&p.env, p.a, p.cqa, wc, 2) == 2);
	CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(events_of(p.b, p.qb[0].qpn), 0);
	CHECK_EQ(p.b->tp->stats.comm_est, 0);
	CHECK_EQ(p.b->comm_est_calls, 1);
	CHECK_EQ(p.b->comm_est_qpn, p.qb[0].qpn);
	xp_fini(&p);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	TEST_PROGRAM("test_roce_atomic");
	vlog_level = VLOG_ERR;
	RUN(test_atomic_values);
	RUN(test_atomic_errors);
	RUN(test_atomic_duplicate);
	RUN(test_atomic_stale_replay);
	RUN(test_sqd_max_dest);
	RUN(test_atomic_race);
	RUN(test_reg_mr_remote);
	RUN(test_reg_mr_local);
	RUN(test_inv_mid_message);
	RUN(test_fast_reg_layouts);
	RUN(test_fence_local_inv);
	RUN(test_send_with_inv);
	RUN(test_mw);
	RUN(test_mw_type2_remote_inv);
	RUN(test_no_ext);
	RUN(test_comm_est);
	return TEST_DONE();
}
