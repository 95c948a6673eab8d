/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device's rings on the RoCE transport (src/roce/roce_virtio_rdma.c
 * and the ring boundary in roce_sq.c / roce_rq.c / roce_cq.c): in-process
 * devices on a real switch (tests/unit/roce_tp_fake.h) whose driver writes
 * the device's own elements (75-byte send element with the UD address
 * vector inline, 12-byte receive header, 38-byte completions in the IB
 * numbering). RC SEND / WRITE / READ with immediates, atomics, inline sends,
 * UD, error statuses; between two virtio-rdma devices and between a
 * virtio-rdma device and a virtio-net RoCE device (same RoCE v2 on the
 * wire). Data compared byte for byte, every completion field checked.
 */
#include "roce_tp_fake.h"
#include "harness.h"

#include "backend/virtio_rdma_dev.h"

#define ACC (FK_ACC_ALL | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)

struct v1_wc {
	uint64_t wr_id;
	uint8_t status, opcode;
	uint32_t byte_len, imm, qp_num, src_qp, wc_flags;
	uint8_t port_num;
};

static struct fk_dev *v1_dev(struct fk_env *env)
{
	struct fk_dev_cfg c = { .qps = 9, .cqs = 4 };
	struct fk_dev *d = fk_dev_new(env, &c);

	virtio_rdma_dev_setup(&d->rd); /* before any object */
	return d;
}

static struct fk_dev *net_dev(struct fk_env *env)
{
	struct fk_dev_cfg c = { .qps = 9, .cqs = 4, .ext = true };

	return fk_dev_new(env, &c);
}

struct v1_wr {
	uint64_t wr_id;
	uint32_t opcode, flags;
	uint32_t ex;                 /* imm (network order) or invalidate rkey */
	uint64_t remote_addr, compare_add, swap;
	uint32_t rkey;
	uint32_t remote_qpn, remote_qkey;
	const struct fk_dev *peer;   /* UD: the address vector names it */
	uint32_t pdn;
	const struct fk_sge *sge;
	uint32_t nsge;
	const void *inl;
	uint32_t inl_len;
	uint32_t trunc;              /* != 0: readable length of the chain */
	uint64_t reg_iova, reg_length, reg_pages; /* REG_MR carrying its pages */
};

static int v1_post_send(struct fk_dev *d, struct fk_qp *q, const struct v1_wr *wr)
{
	struct fk_ring *fr = q->sq;
	struct virtio_rdma_dev_sq_req v;
	uint32_t len;
	struct vq_buf out;
	uint8_t *b;

	if (!vq_drv_num_free(&fr->drv))
		return -ENOSPC;
	b = fk_ring_buf(fr);
	memset(&v, 0, sizeof(v));
	v.wr_id = htole64(wr->wr_id);
	v.opcode = htole32(wr->opcode);
	v.send_flags = htole32(wr->flags);
	v.ex.imm_data = wr->ex;
	if (wr->opcode == VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD) {
		v.wr.atomic.remote_addr = htole64(wr->remote_addr);
		v.wr.atomic.compare_add = htole64(wr->compare_add);
		v.wr.atomic.swap = htole64(wr->swap);
		v.wr.atomic.rkey = htole32(wr->rkey);
	} else if (wr->peer) {
		v.wr.ud.remote_qpn = htole32(wr->remote_qpn);
		v.wr.ud.remote_qkey = htole32(wr->remote_qkey);
		v.wr.ud.av.port = htole32(1);
		v.wr.ud.av.pdn = htole32(wr->pdn);
		v.wr.ud.av.sl_tclass_flowlabel = htole32(3u << 28 | 0x28u << 20 | 0x1234u);
		memcpy(v.wr.ud.av.dgid, rres_gid_get(&wr->peer->rd, 1), 16);
		v.wr.ud.av.gid_index = 1;
		v.wr.ud.av.hop_limit = 64;
		memcpy(v.wr.ud.av.dmac, wr->peer->mac, 6);
	} else {
		v.wr.rdma.remote_addr = htole64(wr->remote_addr);
		v.wr.rdma.rkey = htole32(wr->rkey);
	}
	if (wr->opcode == VIRTIO_RDMA_DEV_WR_REG_MR && wr->reg_pages) {
		v.wr.reg.iova = htole64(wr->reg_iova);
		v.wr.reg.length = htole64(wr->reg_length);
		v.wr.reg.pages = htole64(wr->reg_pages);
	}
	if (wr->flags & VIRTIO_RDMA_DEV_SEND_INLINE) {
		v.num_sge = htole32(wr->inl_len);
		memcpy(b + sizeof(v), wr->inl, wr->inl_len);
		len = sizeof(v) + wr->inl_len;
	} else {
		v.num_sge = htole32(wr->nsge);
		for (uint32_t i = 0; i < wr->nsge; i++) {
			struct virtio_rdma_dev_sge s = {
				htole64((uintptr_t)wr->sge[i].addr), htole32(wr->sge[i].len),
				htole32(wr->sge[i].lkey),
			};

			memcpy(b + sizeof(v) + i * 16, &s, 16);
		}
		len = sizeof(v) + wr->nsge * 16;
	}
	memcpy(b, &v, sizeof(v));
	if (wr->trunc)
		len = wr->trunc;
	out = (struct vq_buf){ (uintptr_t)b, len };
	if (vq_drv_add(&fr->drv, &out, 1, NULL, 0, b))
		return -ENOSPC;
	fk_ring_publish(d, fr);
	return 0;
}

static int v1_post_recv(struct fk_dev *d, struct fk_qp *q, uint64_t wr_id,
			const struct fk_sge *sge, uint32_t nsge)
{
	struct fk_ring *fr = q->rq;
	struct virtio_rdma_dev_rq_req v;
	struct vq_buf out;
	uint8_t *b;

	if (!vq_drv_num_free(&fr->drv))
		return -ENOSPC;
	b = fk_ring_buf(fr);
	v.num_sge = htole32(nsge);
	v.wr_id = htole64(wr_id);
	memcpy(b, &v, sizeof(v));
	for (uint32_t i = 0; i < nsge; i++) {
		struct virtio_rdma_dev_sge s = {
			htole64((uintptr_t)sge[i].addr), htole32(sge[i].len), htole32(sge[i].lkey),
		};

		memcpy(b + sizeof(v) + i * 16, &s, 16);
	}
	out = (struct vq_buf){ (uintptr_t)b, (uint32_t)(sizeof(v) + nsge * 16) };
	if (vq_drv_add(&fr->drv, &out, 1, NULL, 0, b))
		return -ENOSPC;
	fk_ring_publish(d, fr);
	return 0;
}

static unsigned v1_poll_cq(struct fk_dev *d, uint32_t cqn, struct v1_wc *out, unsigned max)
{
	struct fk_ring *fr = fk_cq_ring(d, cqn);
	unsigned n = 0;
	uint32_t len;
	void *tok;

	while (n < max && (tok = vq_drv_get_used(&fr->drv, &len))) {
		struct virtio_rdma_dev_cq_req c;
		struct vq_buf in = { (uintptr_t)tok, sizeof(struct virtio_rdma_cq_req) };

		fr->used++;
		if (len != sizeof(c))
			abort();
		memcpy(&c, tok, sizeof(c));
		out[n].wr_id = le64toh(c.wr_id);
		out[n].status = c.status;
		out[n].opcode = c.opcode;
		out[n].byte_len = le32toh(c.byte_len);
		memcpy(&out[n].imm, &c.ex, 4);
		out[n].qp_num = le32toh(c.qp_num);
		out[n].src_qp = le32toh(c.src_qp);
		out[n].wc_flags = le32toh(c.wc_flags);
		out[n].port_num = c.port_num;
		n++;
		vq_drv_add(&fr->drv, NULL, 0, &in, 1, tok);
	}
	if (n)
		fk_ring_publish(d, fr);
	return n;
}

struct v1_wait {
	struct fk_dev *d;
	uint32_t cqn;
	struct v1_wc *wc;
	unsigned want, got;
};

static bool v1_wait_done(void *arg)
{
	struct v1_wait *w = arg;

	w->got += v1_poll_cq(w->d, w->cqn, w->wc + w->got, w->want - w->got);
	return w->got >= w->want;
}

/* n completions within a generous bound (a safety net only). */
static unsigned v1_wait_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn, struct v1_wc *wc,
			   unsigned n)
{
	struct v1_wait w = { d, cqn, wc, n, 0 };

	fk_run_until(env, v1_wait_done, &w, 20000);
	return w.got;
}

struct side {
	struct fk_dev *d;
	bool v1;
	uint32_t pd, cq;
	struct fk_qp q;
	struct fk_mr mr;
};

static void side_up(struct side *s, struct fk_dev *d, bool v1, uint8_t type)
{
	struct fk_qp_cfg qc = { 0 };

	s->d = d;
	s->v1 = v1;
	s->pd = fk_pd(d);
	s->cq = fk_cq(d, 64, 64, true);
	qc.type = type;
	qc.pdn = s->pd;
	qc.scq = qc.rcq = s->cq;
	qc.max_inline = 256;
	s->q = fk_qp_new(d, &qc);
	s->mr = fk_mr_reg(d, s->pd, 65536, ACC);
}

static bool pair_up(struct fk_env *env, struct side *a, struct side *b, bool b_v1, uint8_t type)
{
	struct fk_path p;

	if (fk_env_init(env, true))
		return false;
	side_up(a, v1_dev(env), true, type);
	side_up(b, b_v1 ? v1_dev(env) : net_dev(env), b_v1, type);
	fk_path_default(&p);
	p.access = ACC;
	return fk_connect(a->d, a->q.qpn, b->d, b->q.qpn, &p) == 0 &&
	       fk_connect(b->d, b->q.qpn, a->d, a->q.qpn, &p) == 0;
}

/* Receive on b (whichever model), one completion. */
static void b_recv(struct side *b, uint64_t id, void *buf, uint32_t len)
{
	struct fk_sge s = { buf, len, b->mr.lkey };

	if (b->v1)
		CHECK_EQ(v1_post_recv(b->d, &b->q, id, &s, 1), 0);
	else
		CHECK_EQ(fk_post_recv(b->d, &b->q, id, &s, 1), 0);
}

/* One completion of b in the IB numbering (translating the other model's). */
static bool b_wait(struct fk_env *env, struct side *b, struct v1_wc *w)
{
	struct virtio_rdma_cq_req c;
	static const uint8_t op_ib[] = { 0, 1, 2, 128, 129, 3, 4 };

	if (b->v1)
		return v1_wait_cq(env, b->d, b->cq, w, 1) == 1;
	if (fk_wait_cq(env, b->d, b->cq, &c, 1, 20000) != 1)
		return false;
	memset(w, 0, sizeof(*w));
	w->wr_id = c.wr_id;
	w->status = c.status; /* SUCCESS is 0 in both */
	w->opcode = c.opcode < sizeof(op_ib) ? op_ib[c.opcode] : 0xff;
	w->byte_len = c.byte_len;
	w->imm = c.imm_data;
	w->qp_num = c.qp_num;
	w->src_qp = c.src_qp;
	w->wc_flags = c.wc_flags;
	w->port_num = 1;
	return true;
}

static void b_send(struct side *b, uint64_t id, void *buf, uint32_t len)
{
	struct fk_sge s = { buf, len, b->mr.lkey };

	if (b->v1) {
		struct v1_wr wr = { .wr_id = id, .opcode = VIRTIO_RDMA_DEV_WR_SEND,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .sge = &s, .nsge = 1 };

		CHECK_EQ(v1_post_send(b->d, &b->q, &wr), 0);
	} else {
		struct fk_wr wr = { .wr_id = id, .opcode = VIRTIO_IB_WR_SEND,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &s, .nsge = 1,
				    .trunc = -1 };

		CHECK_EQ(fk_post_send(b->d, &b->q, &wr), 0);
	}
}

/* RC between a (virtio-rdma) and b: every operation a driver of this
 * device can post, checked on both sides. */
static void rc_ops(bool b_v1)
{
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	uint8_t *abuf, *bbuf;
	uint32_t imm = htobe32(0xcafe0001);

	REQUIRE(pair_up(&env, &a, &b, b_v1, VIRTIO_IB_QPT_RC));
	abuf = a.mr.buf;
	bbuf = b.mr.buf;

	/* SEND with immediate, a -> b, 3000 bytes over several packets */
	fk_fill(abuf, 3000, 1);
	b_recv(&b, 11, bbuf, 4096);
	{
		struct fk_sge s = { abuf, 3000, a.mr.lkey };
		struct v1_wr wr = { .wr_id = 1, .opcode = VIRTIO_RDMA_DEV_WR_SEND_WITH_IMM,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .ex = imm,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
	}
	REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
	CHECK_EQ(w.wr_id, 1);
	CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_SEND);
	CHECK_EQ(w.qp_num, a.q.qpn);
	CHECK_EQ(w.port_num, 1);
	REQUIRE(b_wait(&env, &b, &w));
	CHECK_EQ(w.wr_id, 11);
	CHECK_EQ(w.status, 0);
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RECV);
	CHECK_EQ(w.byte_len, 3000);
	CHECK_EQ(w.imm, imm);
	CHECK(w.wc_flags & VIRTIO_RDMA_DEV_WC_WITH_IMM);
	CHECK_MEM(bbuf, abuf, 3000);

	/* SEND b -> a (the other model's requester, our responder) */
	fk_fill(bbuf + 8192, 1500, 2);
	{
		struct fk_sge s = { abuf + 8192, 2000, a.mr.lkey };

		REQUIRE(v1_post_recv(a.d, &a.q, 21, &s, 1) == 0);
	}
	b_send(&b, 22, bbuf + 8192, 1500);
	REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
	CHECK_EQ(w.wr_id, 21);
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RECV);
	CHECK_EQ(w.byte_len, 1500);
	CHECK_EQ(w.wc_flags, 0);
	CHECK_MEM(abuf + 8192, bbuf + 8192, 1500);
	REQUIRE(b_wait(&env, &b, &w));
	CHECK_EQ(w.wr_id, 22);

	/* RDMA WRITE with immediate a -> b */
	fk_fill(abuf + 16384, 5000, 3);
	b_recv(&b, 31, bbuf, 0);
	{
		struct fk_sge s = { abuf + 16384, 5000, a.mr.lkey };
		struct v1_wr wr = { .wr_id = 3, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .ex = imm,
				    .remote_addr = (uintptr_t)bbuf + 16384, .rkey = b.mr.rkey,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
	}
	REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RDMA_WRITE);
	CHECK_EQ(w.status, 0);
	REQUIRE(b_wait(&env, &b, &w));
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM);
	CHECK_EQ(w.byte_len, 5000);
	CHECK_EQ(w.imm, imm);
	CHECK_MEM(bbuf + 16384, abuf + 16384, 5000);

	/* RDMA READ a <- b */
	fk_fill(bbuf + 32768, 7000, 4);
	{
		struct fk_sge s = { abuf + 32768, 7000, a.mr.lkey };
		struct v1_wr wr = { .wr_id = 4, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_READ,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
				    .remote_addr = (uintptr_t)bbuf + 32768, .rkey = b.mr.rkey,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
	}
	REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
	CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RDMA_READ);
	CHECK_EQ(w.status, 0);
	CHECK_EQ(w.byte_len, 7000);
	CHECK_MEM(abuf + 32768, bbuf + 32768, 7000);

	/* atomics on b's memory */
	{
		uint64_t init = htole64(100), got;
		struct fk_sge s = { abuf + 40960, 8, a.mr.lkey };
		struct v1_wr cas = { .wr_id = 5, .opcode = VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
				     .remote_addr = (uintptr_t)bbuf + 40960, .rkey = b.mr.rkey,
				     .compare_add = 100, .swap = 555, .sge = &s, .nsge = 1 };
		struct v1_wr faa = cas;

		memcpy(bbuf + 40960, &init, 8);
		REQUIRE(v1_post_send(a.d, &a.q, &cas) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_COMP_SWAP);
		CHECK_EQ(w.status, 0);
		memcpy(&got, abuf + 40960, 8);
		CHECK_EQ(le64toh(got), 100);
		memcpy(&got, bbuf + 40960, 8);
		CHECK_EQ(le64toh(got), 555);
		faa.wr_id = 6;
		faa.opcode = VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD;
		faa.compare_add = 45;
		REQUIRE(v1_post_send(a.d, &a.q, &faa) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_FETCH_ADD);
		memcpy(&got, abuf + 40960, 8);
		CHECK_EQ(le64toh(got), 555);
		memcpy(&got, bbuf + 40960, 8);
		CHECK_EQ(le64toh(got), 600);
	}

	/* inline SEND: the data follows the element, num_sge is its length */
	{
		static const char msg[] = "inline data of the virtio-rdma device";
		struct v1_wr wr = { .wr_id = 7, .opcode = VIRTIO_RDMA_DEV_WR_SEND,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED |
					     VIRTIO_RDMA_DEV_SEND_INLINE,
				    .inl = msg, .inl_len = sizeof(msg) };

		b_recv(&b, 71, bbuf + 49152, 256);
		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.status, 0);
		REQUIRE(b_wait(&env, &b, &w));
		CHECK_EQ(w.byte_len, sizeof(msg));
		CHECK_MEM(bbuf + 49152, msg, sizeof(msg));
	}

	/* remote access error: IB status 10, then the QP flushes (5) */
	{
		struct fk_sge s = { abuf, 64, a.mr.lkey };
		struct v1_wr bad = { .wr_id = 8, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_WRITE,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
				     .remote_addr = (uintptr_t)bbuf, .rkey = b.mr.rkey ^ 0x100,
				     .sge = &s, .nsge = 1 };
		struct v1_wr next = bad;

		next.wr_id = 9;
		next.rkey = b.mr.rkey;
		REQUIRE(v1_post_send(a.d, &a.q, &bad) == 0);
		REQUIRE(v1_post_send(a.d, &a.q, &next) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 8);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 9);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR);
	}
	fk_env_fini(&env);
}

static void test_rc_v1_v1(void)
{
	rc_ops(true);
}

static void test_rc_v1_net(void)
{
	rc_ops(false);
}

/* UD with the address vector inline in each WR, to both models. */
static void ud_send(bool b_v1)
{
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	uint8_t *abuf, *bbuf;

	REQUIRE(pair_up(&env, &a, &b, b_v1, VIRTIO_IB_QPT_UD));
	abuf = a.mr.buf;
	bbuf = b.mr.buf;
	fk_fill(abuf, 900, 5);
	b_recv(&b, 41, bbuf, 40 + 1024);
	{
		struct fk_sge s = { abuf, 900, a.mr.lkey };
		struct v1_wr wr = { .wr_id = 40, .opcode = VIRTIO_RDMA_DEV_WR_SEND,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .peer = b.d,
				    .pdn = a.pd, .remote_qpn = b.q.qpn, .remote_qkey = 0x11111111,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.status, 0);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_SEND);
		REQUIRE(b_wait(&env, &b, &w));
		CHECK_EQ(w.wr_id, 41);
		CHECK_EQ(w.status, 0);
		CHECK_EQ(w.byte_len, 40 + 900);
		CHECK_EQ(w.src_qp, a.q.qpn);
		CHECK(w.wc_flags & VIRTIO_RDMA_DEV_WC_GRH);
		CHECK_MEM(bbuf + 40, abuf, 900);
		/* the address vector must name the QP's own PD and port 1 */
		wr.wr_id = 42;
		wr.pdn = a.pd + 1;
		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 42);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR);
	}
	fk_env_fini(&env);
}

static void test_ud_v1_v1(void)
{
	ud_send(true);
}

static void test_ud_v1_net(void)
{
	ud_send(false);
}

/* RDMA_READ_WITH_INV: the data lands in a fast-registration MR, then its
 * key is invalidated (the MR can be mapped again); a key that cannot be
 * invalidated completes the WR with LOC_PROT_ERR. */
static void test_read_with_inv(void)
{
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	struct rres_mr *mr;
	uint8_t *buf;
	uint64_t pl;

	REQUIRE(pair_up(&env, &a, &b, false, VIRTIO_IB_QPT_RC));
	buf = fk_alloc(a.d, 8192, 4096);
	pl = fk_page_list(a.d, buf, 8192);
	mr = fk_mr_alloc(a.d, a.pd, 4);
	REQUIRE(rres_mr_fast_reg(&a.d->rd, rres_pd_lookup(&a.d->rd, a.pd), mr->lkey,
				 (uintptr_t)buf, 8192, pl, VIRTIO_IB_ACCESS_LOCAL_WRITE) == 0);
	fk_fill(b.mr.buf, 6000, 9);
	{
		struct fk_sge s = { buf, 6000, mr->lkey };
		struct v1_wr wr = { .wr_id = 80, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .ex = htole32(mr->lkey),
				    .remote_addr = (uintptr_t)b.mr.buf, .rkey = b.mr.rkey,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 80);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_RDMA_READ);
		CHECK_EQ(w.byte_len, 6000);
		CHECK_MEM(buf, b.mr.buf, 6000);
		CHECK_EQ(mr->state, RRES_MR_FREE);
		CHECK(rres_mr_lookup_lkey(&a.d->rd, mr->lkey, mr->pd, 0) == NULL);
		/* again: the key is no longer valid, the read itself fails */
		wr.wr_id = 81;
		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 81);
		CHECK(w.status != VIRTIO_RDMA_DEV_WC_SUCCESS);
	}
	fk_env_fini(&env);
	/* the data is in but the key cannot be invalidated: LOC_PROT_ERR */
	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	{
		struct fk_sge s = { a.mr.buf, 100, a.mr.lkey };
		struct v1_wr wr = { .wr_id = 82, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
				    .ex = htole32(a.mr.lkey), /* a user MR: not invalidatable */
				    .remote_addr = (uintptr_t)b.mr.buf, .rkey = b.mr.rkey,
				    .sge = &s, .nsge = 1 };

		fk_fill(b.mr.buf, 100, 10);
		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 82);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR);
		CHECK_MEM(a.mr.buf, b.mr.buf, 100);
	}
	fk_env_fini(&env);
}

/* The fast-registration flow of this device: CREATE_MR, MAP_MR_SG (control
 * queue), then an IB_WR_REG_MR work request {mrn, key, access} giving the
 * mapped MR a new key and remote rights; the peer writes through the new
 * rkey; LOCAL_INV frees it; a REG_MR of an unmapped MR fails. */
static void test_reg_mr(void)
{
	struct virtio_rdma_dev_cmd_create_mr cm;
	struct virtio_rdma_dev_cmd_map_mr_sg mm;
	uint8_t rsp[64];
	size_t rlen;
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	struct rres_mr *mr;
	uint32_t mrn, key;
	uint8_t *buf;

	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	cm.pdn = htole32(a.pd);
	cm.access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE);
	cm.max_num_sg = htole32(4);
	REQUIRE(virtio_rdma_dev_ctrl_exec(&a.d->rd, VIRTIO_RDMA_DEV_CMD_CREATE_MR, &cm, sizeof(cm),
					  rsp, sizeof(rsp), &rlen) == RRES_OK);
	mrn = get_le32(rsp);
	mr = rres_mr_lookup(&a.d->rd, mrn);
	REQUIRE(mr != NULL);
	buf = fk_alloc(a.d, 8192, 4096);
	mm.mrn = htole32(mrn);
	mm.npages = htole32(2);
	mm.start = htole64((uintptr_t)buf);
	mm.length = htole64(8192);
	mm.pages = htole64(fk_page_list(a.d, buf, 8192));
	REQUIRE(virtio_rdma_dev_ctrl_exec(&a.d->rd, VIRTIO_RDMA_DEV_CMD_MAP_MR_SG, &mm, sizeof(mm),
					  rsp, sizeof(rsp), &rlen) == RRES_OK);
	key = fk_key8(mr->lkey, 0x42);
	{
		struct v1_wr reg = { .wr_id = 90, .opcode = VIRTIO_RDMA_DEV_WR_REG_MR,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .nsge = 0 };

		/* wr.reg goes where wr.rdma is: mrn, key, access */
		reg.remote_addr = (uint64_t)mrn | (uint64_t)key << 32;
		reg.rkey = VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE;
		REQUIRE(v1_post_send(a.d, &a.q, &reg) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 90);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_REG_MR);
		CHECK_EQ(mr->lkey, key);
		CHECK_EQ(mr->rkey, key);
	}
	/* b writes into it through the new rkey */
	fk_fill(b.mr.buf, 5000, 11);
	{
		struct fk_sge s = { b.mr.buf, 5000, b.mr.lkey };
		struct v1_wr wr = { .wr_id = 91, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_WRITE,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
				    .remote_addr = (uintptr_t)buf + 100, .rkey = key,
				    .sge = &s, .nsge = 1 };

		REQUIRE(v1_post_send(b.d, &b.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, b.d, b.cq, &w, 1) == 1);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_MEM(buf + 100, b.mr.buf, 5000);
	}
	/* LOCAL_INV frees it; REG_MR of the unmapped MR fails */
	{
		struct v1_wr inv = { .wr_id = 92, .opcode = VIRTIO_RDMA_DEV_WR_LOCAL_INV,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .ex = htole32(key) };
		struct v1_wr reg = { .wr_id = 93, .opcode = VIRTIO_RDMA_DEV_WR_REG_MR,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED };

		REQUIRE(v1_post_send(a.d, &a.q, &inv) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_LOCAL_INV);
		CHECK_EQ(mr->state, RRES_MR_FREE);
		reg.remote_addr = (uint64_t)mrn | (uint64_t)fk_key8(key, 0x43) << 32;
		reg.rkey = VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE;
		REQUIRE(v1_post_send(a.d, &a.q, &reg) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 93);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR);
	}
	fk_env_fini(&env);
}

/* Elements the device refuses: each completes with its IB status. */
/* REG_MR carrying its page list (no MAP_MR_SG): the key names a free
 * CREATE_MR MR, mapped at iova when the WR runs; the peer writes through it;
 * LOCAL_INV frees it and it is registered again under a new key; last, a
 * misaligned page array fails (the MR stays free). */
static void test_reg_mr_pages(void)
{
	const uint32_t rw = VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE;
	const uint64_t iova = 0x40000100;
	struct virtio_rdma_dev_cmd_create_mr cm;
	uint8_t rsp[64];
	size_t rlen;
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	struct rres_mr *mr;
	uint32_t mrn, key;
	uint64_t list;
	uint8_t *buf;

	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	cm.pdn = htole32(a.pd);
	cm.access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE);
	cm.max_num_sg = htole32(4);
	REQUIRE(virtio_rdma_dev_ctrl_exec(&a.d->rd, VIRTIO_RDMA_DEV_CMD_CREATE_MR, &cm, sizeof(cm),
					  rsp, sizeof(rsp), &rlen) == RRES_OK);
	mrn = get_le32(rsp);
	mr = rres_mr_lookup(&a.d->rd, mrn);
	REQUIRE(mr != NULL);
	buf = fk_alloc(a.d, 8192, 4096);
	list = fk_page_list(a.d, buf, 8192);
	for (int round = 0; round < 2; round++) {
		struct v1_wr reg = { .wr_id = 100, .opcode = VIRTIO_RDMA_DEV_WR_REG_MR,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .rkey = rw,
				     .reg_iova = iova, .reg_length = 7000, .reg_pages = list };
		struct v1_wr inv = { .wr_id = 102, .opcode = VIRTIO_RDMA_DEV_WR_LOCAL_INV,
				     .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED };
		struct fk_sge s = { b.mr.buf, 5000, b.mr.lkey };
		struct v1_wr wr = { .wr_id = 101, .opcode = VIRTIO_RDMA_DEV_WR_RDMA_WRITE,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .remote_addr = iova + 50,
				    .sge = &s, .nsge = 1 };

		key = fk_key8(mr->lkey, (uint8_t)(0x51 + round));
		/* wr.reg where wr.rdma is: mrn 0 (the key names the MR), key, access */
		reg.remote_addr = (uint64_t)key << 32;
		REQUIRE(v1_post_send(a.d, &a.q, &reg) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 100);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(w.opcode, VIRTIO_RDMA_DEV_WC_OP_REG_MR);
		CHECK_EQ(mr->state, RRES_MR_VALID);
		CHECK_EQ(mr->rkey, key);
		fk_fill(b.mr.buf, 5000, (uint8_t)(21 + round));
		wr.rkey = key;
		REQUIRE(v1_post_send(b.d, &b.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, b.d, b.cq, &w, 1) == 1);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_MEM(buf + 0x100 + 50, b.mr.buf, 5000);
		inv.ex = htole32(key);
		REQUIRE(v1_post_send(a.d, &a.q, &inv) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(mr->state, RRES_MR_FREE);
		if (!round)
			continue;
		reg.reg_pages = list + 4; /* misaligned array */
		reg.remote_addr = (uint64_t)fk_key8(key, 0x60) << 32;
		REQUIRE(v1_post_send(a.d, &a.q, &reg) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR);
		CHECK_EQ(mr->state, RRES_MR_FREE);
	}
	fk_env_fini(&env);
}

static void test_bad_elements(void)
{
	struct fk_env env;
	struct side a, b;
	struct v1_wc w;
	struct fk_sge s;

	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	s = (struct fk_sge){ a.mr.buf, 64, a.mr.lkey };
	{
		/* 10, 8, 0x21 and 0x100 are not opcodes of this device */
		static const uint32_t ops[] = { 10, 0x21, 8, 0x100 };

		for (unsigned i = 0; i < 4; i++) {
			struct v1_wr wr = { .wr_id = 50 + i, .opcode = ops[i],
					    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED,
					    .sge = &s, .nsge = 1 };

			REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
			REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
			CHECK_EQ(w.wr_id, 50 + i);
			/* the first fails, the QP enters ERR, the others flush */
			CHECK_EQ(w.status, i == 0 ? VIRTIO_RDMA_DEV_WC_LOC_QP_OP_ERR
						  : VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR);
		}
	}
	fk_env_fini(&env);
	/* a chain shorter than the element; inline data too long */
	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	s = (struct fk_sge){ a.mr.buf, 64, a.mr.lkey };
	{
		struct v1_wr wr = { .wr_id = 60, .opcode = VIRTIO_RDMA_DEV_WR_SEND,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED, .sge = &s, .nsge = 1,
				    .trunc = 40 };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 60);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_QP_OP_ERR);
		CHECK_EQ(a.d->tp->stats.wr_bad_chain, 1);
	}
	fk_env_fini(&env);
	REQUIRE(pair_up(&env, &a, &b, true, VIRTIO_IB_QPT_RC));
	{
		static uint8_t big[600];
		struct v1_wr wr = { .wr_id = 61, .opcode = VIRTIO_RDMA_DEV_WR_SEND,
				    .flags = VIRTIO_RDMA_DEV_SEND_SIGNALED |
					     VIRTIO_RDMA_DEV_SEND_INLINE,
				    .inl = big, .inl_len = sizeof(big) };

		REQUIRE(v1_post_send(a.d, &a.q, &wr) == 0);
		REQUIRE(v1_wait_cq(&env, a.d, a.cq, &w, 1) == 1);
		CHECK_EQ(w.wr_id, 61);
		CHECK_EQ(w.status, VIRTIO_RDMA_DEV_WC_LOC_LEN_ERR);
	}
	fk_env_fini(&env);
}

int main(void)
{
	TEST_PROGRAM("test_virtio_rdma_tp");
	RUN(test_rc_v1_v1);
	RUN(test_rc_v1_net);
	RUN(test_ud_v1_v1);
	RUN(test_ud_v1_net);
	RUN(test_read_with_inv);
	RUN(test_reg_mr);
	RUN(test_reg_mr_pages);
	RUN(test_bad_elements);
	return TEST_DONE();
}
