// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "data": work requests through libvrdma's data path and the
 * daemon's RoCE v2 transport, between device A and device B of one daemon
 * (through its switch) and in loopback (two QPs of device A). Every payload
 * is generated from (seed, offset) and compared byte for byte where it
 * lands. Completions are checked field by field.
 *
 * Waiting: --events sleeps on the CQ's event fd (vrdma_cq_wait: arm, sleep,
 * consume); otherwise the CQ is polled. Every wait gives up after
 * WAIT_MS (a failure, never a synchronisation); then the endpoint's rings
 * are printed as libvrdma sees them (its internals: driver/rdma_priv.h) to
 * tell a lost kick from a lost completion.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libvrdma/rdma_priv.h"
#include "rt.h"
#include "vhost/vhost_proto.h"

#define WAIT_MS   20000
#define BUF_LEN   (4u << 20)
#define CAP_WR    64
#define QKEY      0x11111111u

struct ep {
	struct vrdma_dev *d;
	uint8_t type;
	uint32_t pdn;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr_info mr;
	uint8_t mac[6], gid[16];
	uint8_t mtu;
	uint32_t ah;              /* UD: to the peer */
	uint32_t peer_qpn;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u;

	return (uint8_t)(x ^ (x >> 13) ^ (i >> 9));
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

/* Offset of the first byte that differs from the pattern, or n. */
static size_t diff(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return i;
	return n;
}

static int ep_init(struct ep *e, struct vrdma_dev *d, uint8_t type)
{
	const uint32_t acc = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vrdma_port_attr pa;
	struct vrdma_qp_init in;
	int rc;

	memset(e, 0, sizeof(*e));
	e->d = d;
	e->type = type;
	vrdma_dev_mac(d, e->mac);
	rt_gid_linklocal(e->mac, e->gid);
	rc = vrdma_query_port(d, &pa);
	if (rc)
		return rc;
	e->mtu = pa.active_mtu;
	e->buf = aligned_alloc(4096, BUF_LEN);
	if (!e->buf)
		return -ENOMEM;
	memset(e->buf, 0, BUF_LEN);
	rc = vrdma_pd_alloc(d, &e->pdn);
	if (!rc)
		rc = vrdma_mr_reg(d, e->pdn, e->buf, BUF_LEN, (uintptr_t)e->buf, acc, &e->mr);
	if (!rc)
		rc = vrdma_cq_create(d, 4 * CAP_WR, &e->cq);
	if (rc)
		return rc;
	memset(&in, 0, sizeof(in));
	in.pdn = e->pdn;
	in.qp_type = type;
	in.send_cq = in.recv_cq = e->cq;
	in.cap.max_send_wr = in.cap.max_recv_wr = CAP_WR;
	in.cap.max_send_sge = in.cap.max_recv_sge = 4;
	in.cap.max_inline_data = 512;
	return vrdma_qp_create(d, &in, &e->qp);
}

static void ep_fini(struct ep *e)
{
	if (e->ah)
		vrdma_ah_destroy(e->d, e->pdn, e->ah);
	if (e->qp)
		vrdma_qp_destroy(e->qp);
	if (e->cq)
		vrdma_cq_destroy(e->cq);
	if (e->mr.mrn)
		vrdma_mr_dereg(e->d, e->mr.mrn);
	if (e->pdn)
		vrdma_pd_free(e->d, e->pdn);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Move e to RTS aimed at peer (dest_qpn overrides the peer's QPN if not
 * 0). */
static int ep_connect(struct ep *e, const struct ep *peer, uint32_t dest_qpn, uint8_t timeout,
		      uint8_t retry)
{
	struct vrdma_qp_attr a;
	int rc;

	e->peer_qpn = dest_qpn ? dest_qpn : vrdma_qp_num(peer->qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	if (e->type == VIRTIO_IB_QPT_UD) {
		a.qkey = QKEY;
		rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY);
		if (rc)
			return rc;
		a.qp_state = VIRTIO_IB_QPS_RTR;
		rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE);
		if (rc)
			return rc;
		a.qp_state = VIRTIO_IB_QPS_RTS;
		a.sq_psn = 0x100;
		rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN);
		if (rc)
			return rc;
		{
			struct vrdma_ah_attr av;

			memset(&av, 0, sizeof(av));
			memcpy(av.grh.dgid, peer->gid, 16);
			av.grh.hop_limit = 64;
			memcpy(av.dmac, peer->mac, 6);
			return vrdma_ah_create(e->d, e->pdn, &av, &e->ah);
		}
	}
	a.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			    VIRTIO_IB_ACCESS_REMOTE_READ;
	rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTR;
	a.path_mtu = e->mtu;
	a.dest_qp_num = e->peer_qpn;
	a.rq_psn = 0x1000;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.grh.dgid, peer->gid, 16);
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.dmac, peer->mac, 6);
	rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV |
				       VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
				       VIRTIO_IB_QP_RQ_PSN |
				       (e->type == VIRTIO_IB_QPT_RC ?
						VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
							VIRTIO_IB_QP_MIN_RNR_TIMER : 0));
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.sq_psn = 0x1000;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN |
					  (e->type == VIRTIO_IB_QPT_RC ?
						   VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT |
							   VIRTIO_IB_QP_RNR_RETRY |
							   VIRTIO_IB_QP_MAX_QP_RD_ATOMIC : 0));
}

/* Two endpoints of type on devices da / db, connected. */
static int pair_init(struct ep *a, struct ep *b, struct vrdma_dev *da, struct vrdma_dev *db,
		     uint8_t type)
{
	int rc = ep_init(a, da, type);

	if (!rc)
		rc = ep_init(b, db, type);
	if (!rc)
		rc = ep_connect(a, b, 0, 14, 7);
	if (!rc)
		rc = ep_connect(b, a, 0, 14, 7);
	return rc;
}

/* The next completion of e's CQ into *wc: 1, 0 (timeout), -errno. */
static int wait_wc(struct rt_ctx *c, struct ep *e, struct vrdma_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		int n = vrdma_cq_poll(e->cq, wc, 1), rc;
		uint64_t now;

		if (n)
			return n;
		now = now_ms();
		if (now >= end)
			return 0;
		if (c->event_mode) {
			rc = vrdma_cq_wait(e->cq, (int)(end - now));
			if (rc < 0)
				return rc;
		} else {
			sched_yield();
		}
	}
}

/* On a stall: the driver's view of an endpoint's rings (libvrdma
 * internals), to tell a lost kick from a lost completion. */
static void dump_vq(const char *n, const struct vq_drv *vq)
{
	const volatile uint16_t *used_event =
		(const volatile uint16_t *)((const char *)vq->avail + 4 + 2 * vq->num);
	const volatile uint16_t *avail_event =
		(const volatile uint16_t *)((const char *)vq->used + 4 + 8 * vq->num);

	printf("#   %s: num %u free %u avail %u (published %u, kicked at %u) used %u/%u "
	       "avail_event %u used_event %u\n", n, vq->num, vq->num_free, vq->avail_idx,
	       vq->avail->idx, vq->last_kick_idx, vq->last_used_idx, vq->used->idx, *avail_event,
	       *used_event);
}

static void dump_ep(const char *name, const struct ep *e)
{
	printf("# %s:\n", name);
	dump_vq("sq", &e->qp->sq.q->vq);
	dump_vq("rq", &e->qp->rq.q->vq);
	dump_vq("cq", &e->cq->q->vq);
	printf("#   sq log %u..%u free %u; rq log %u..%u free %u\n",
	       (unsigned)e->qp->sq.log_head, (unsigned)e->qp->sq.log_tail, e->qp->sq.nfree,
	       (unsigned)e->qp->rq.log_head, (unsigned)e->qp->rq.log_tail, e->qp->rq.nfree);
}

/* Wait for a completion and check it. */
static bool expect_wc(struct rt_ctx *c, struct ep *e, uint64_t wr_id, uint8_t opcode,
		      uint8_t status, int64_t byte_len, const char *what)
{
	struct vrdma_wc wc;
	int rc = wait_wc(c, e, &wc);

	RT_CHECK(rc == 1, "%s: no completion (%d)", what, rc);
	if (rc != 1) {
		dump_ep("this endpoint", e);
		return false;
	}
	RT_CHECK(wc.wr_id == wr_id, "%s: wr_id %#" PRIx64 " != %#" PRIx64, what, wc.wr_id, wr_id);
	RT_CHECK(wc.status == status, "%s: status %u != %u (vendor_err %u)", what, wc.status,
		 status, wc.vendor_err);
	if (status == VIRTIO_IB_WC_SUCCESS)
		RT_CHECK(wc.opcode == opcode, "%s: opcode %u != %u", what, wc.opcode, opcode);
	RT_CHECK(wc.qp_num == vrdma_qp_num(e->qp), "%s: qp_num %#x", what, wc.qp_num);
	if (byte_len >= 0)
		RT_CHECK(wc.byte_len == (uint64_t)byte_len, "%s: byte_len %u != %lld", what,
			 wc.byte_len, (long long)byte_len);
	return wc.wr_id == wr_id && wc.status == status;
}

static int post_recv1(struct ep *e, uint64_t wr_id, size_t off, uint32_t len)
{
	struct vrdma_sge s = { (uintptr_t)e->buf + off, len, e->mr.lkey };
	struct vrdma_recv_wr w = { wr_id, len ? 1 : 0, &s };

	return vrdma_post_recv(e->qp, &w, 1);
}

static int post_send1(struct ep *e, uint64_t wr_id, uint8_t op, uint8_t flags, size_t off,
		      uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct vrdma_sge s = { (uintptr_t)e->buf + off, len, e->mr.lkey };
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = op;
	w.send_flags = flags | VIRTIO_IB_SEND_SIGNALED;
	w.imm_data = imm;
	w.num_sge = len ? 1 : 0;
	w.sg_list = &s;
	if (e->type == VIRTIO_IB_QPT_UD) {
		w.ud.remote_qpn = e->peer_qpn;
		w.ud.remote_qkey = QKEY;
		w.ud.ah = e->ah;
	} else {
		w.rdma.remote_addr = raddr;
		w.rdma.rkey = rkey;
	}
	return vrdma_post_send(e->qp, &w, 1) == 1 ? 0 : -EIO;
}

static struct vrdma_dev *dev(struct rt_ctx *c, int i)
{
	if (!c->sock[i])
		return NULL;
	if (!c->dev[i])
		c->dev[i] = rt_open(c->sock[i]);
	return c->dev[i];
}

static const uint32_t rc_sizes[] = { 0, 1, 63, 511, 512, 513, 1023, 1024, 1025, 2047, 2048,
				     2049, 4095, 4096, 4097, 65536, 65537, 1u << 20, 3u << 20,
				     BUF_LEN };

/* SEND / SEND_WITH_IMM from a to b, every size. */
static void send_sizes(struct rt_ctx *c, struct ep *a, struct ep *b, const uint32_t *sizes,
		       unsigned nsizes)
{
	char what[64];

	for (unsigned i = 0; i < nsizes; i++) {
		uint32_t n = sizes[i], seed = 1000 + i;
		bool imm = i & 1;

		snprintf(what, sizeof(what), "send %u bytes", n);
		fill(a->buf, n, seed);
		memset(b->buf, 0xee, n);
		RT_REQUIRE(post_recv1(b, 100 + i, 0, BUF_LEN) == 1, "%s: post_recv", what);
		RT_REQUIRE(post_send1(a, 200 + i, imm ? VIRTIO_IB_WR_SEND_WITH_IMM : VIRTIO_IB_WR_SEND,
				      0, 0, n, 0, 0, htobe32(0xabcd0000u + i)) == 0,
			   "%s: post_send", what);
		if (!expect_wc(c, a, 200 + i, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, what))
			return;
		{
			struct vrdma_wc wc;

			RT_REQUIRE(wait_wc(c, b, &wc) == 1, "%s: no receive completion", what);
			RT_CHECK(wc.wr_id == 100 + i && wc.status == VIRTIO_IB_WC_SUCCESS &&
					 wc.opcode == VIRTIO_IB_WC_RECV && wc.byte_len == n,
				 "%s: recv wc id %" PRIu64 " status %u opcode %u len %u", what,
				 wc.wr_id, wc.status, wc.opcode, wc.byte_len);
			RT_CHECK(!!(wc.wc_flags & VIRTIO_IB_WC_WITH_IMM) == imm, "%s: WITH_IMM", what);
			if (imm)
				RT_CHECK(wc.imm_data == htobe32(0xabcd0000u + i), "%s: imm", what);
			RT_CHECK(wc.qp_num == vrdma_qp_num(b->qp), "%s: qp_num", what);
		}
		RT_CHECK(diff(b->buf, n, seed) == n, "%s: byte %zu differs", what,
			 diff(b->buf, n, seed));
		if (rt_fails)
			return;
	}
}

static void write_read_sizes(struct rt_ctx *c, struct ep *a, struct ep *b, bool read)
{
	char what[64];

	for (unsigned i = 0; i < sizeof(rc_sizes) / sizeof(rc_sizes[0]); i++) {
		uint32_t n = rc_sizes[i], seed = 3000 + i;
		struct ep *src = read ? b : a, *dst = read ? a : b;

		snprintf(what, sizeof(what), "%s %u bytes", read ? "read" : "write", n);
		fill(src->buf, n, seed);
		memset(dst->buf, 0x5a, n);
		RT_REQUIRE(post_send1(a, 300 + i, read ? VIRTIO_IB_WR_RDMA_READ :
						     VIRTIO_IB_WR_RDMA_WRITE, 0, 0, n,
				      (uintptr_t)b->buf, b->mr.rkey, 0) == 0, "%s: post", what);
		if (!expect_wc(c, a, 300 + i, read ? VIRTIO_IB_WC_RDMA_READ : VIRTIO_IB_WC_RDMA_WRITE,
			       VIRTIO_IB_WC_SUCCESS, read ? (int64_t)n : -1, what))
			return;
		RT_CHECK(diff(dst->buf, n, seed) == n, "%s: byte %zu differs", what,
			 diff(dst->buf, n, seed));
		if (rt_fails)
			return;
	}
	if (read)
		return;
	/* WRITE_WITH_IMM consumes a receive (no SGE needed) */
	fill(a->buf, 5000, 77);
	RT_REQUIRE(post_recv1(b, 400, 0, 0) == 1, "post_recv");
	RT_REQUIRE(post_send1(a, 401, VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM, 0, 0, 5000,
			      (uintptr_t)b->buf + 8192, b->mr.rkey, htobe32(0x12345678)) == 0,
		   "post");
	expect_wc(c, a, 401, VIRTIO_IB_WC_RDMA_WRITE, VIRTIO_IB_WC_SUCCESS, -1, "write_imm");
	{
		struct vrdma_wc wc;

		RT_REQUIRE(wait_wc(c, b, &wc) == 1, "write_imm: no receive completion");
		RT_CHECK(wc.wr_id == 400 && wc.status == 0 &&
				 wc.opcode == VIRTIO_IB_WC_RECV_RDMA_WITH_IMM && wc.byte_len == 5000 &&
				 (wc.wc_flags & VIRTIO_IB_WC_WITH_IMM) &&
				 wc.imm_data == htobe32(0x12345678),
			 "write_imm: wc id %" PRIu64 " status %u opcode %u len %u flags %#x",
			 wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.wc_flags);
	}
	RT_CHECK(diff(b->buf + 8192, 5000, 77) == 5000, "write_imm: data differs");
}

static void t_rc_send(struct rt_ctx *c)
{
	struct ep a, b;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	send_sizes(c, &a, &b, rc_sizes, sizeof(rc_sizes) / sizeof(rc_sizes[0]));
	send_sizes(c, &b, &a, rc_sizes, 8);
	ep_fini(&a);
	ep_fini(&b);
}

static void t_rc_write(struct rt_ctx *c)
{
	struct ep a, b;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	write_read_sizes(c, &a, &b, false);
	ep_fini(&a);
	ep_fini(&b);
}

static void t_rc_read(struct rt_ctx *c)
{
	struct ep a, b;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	write_read_sizes(c, &a, &b, true);
	ep_fini(&a);
	ep_fini(&b);
}

/* Gather from 3 SGEs, scatter into 2; inline sends from unregistered
 * memory. */
static void t_rc_sge_inline(struct rt_ctx *c)
{
	struct vrdma_sge s[3], r[2];
	struct vrdma_send_wr w;
	struct vrdma_recv_wr rw;
	struct vrdma_wc wc;
	uint8_t stackbuf[512], exp[3000];
	struct ep a, b;
	uint32_t len[] = { 100, 1500, 7 };
	size_t off = 0;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	fill(a.buf, 3 * 4096, 5);
	for (int i = 0; i < 3; i++) {
		s[i].addr = (uintptr_t)a.buf + (size_t)i * 4096 + 11;
		s[i].length = len[i];
		s[i].lkey = a.mr.lkey;
		memcpy(exp + off, a.buf + (size_t)i * 4096 + 11, len[i]);
		off += len[i];
	}
	memset(b.buf, 0, 3 * 4096);
	r[0] = (struct vrdma_sge){ (uintptr_t)b.buf + 3, 1000, b.mr.lkey };
	r[1] = (struct vrdma_sge){ (uintptr_t)b.buf + 8000, 2000, b.mr.lkey };
	rw = (struct vrdma_recv_wr){ 1, 2, r };
	RT_REQUIRE(vrdma_post_recv(b.qp, &rw, 1) == 1, "post_recv");
	memset(&w, 0, sizeof(w));
	w.wr_id = 2;
	w.opcode = VIRTIO_IB_WR_SEND;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.num_sge = 3;
	w.sg_list = s;
	RT_REQUIRE(vrdma_post_send(a.qp, &w, 1) == 1, "post_send");
	expect_wc(c, &a, 2, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "gather");
	expect_wc(c, &b, 1, VIRTIO_IB_WC_RECV, VIRTIO_IB_WC_SUCCESS, (int64_t)off, "scatter");
	RT_CHECK(!memcmp(b.buf + 3, exp, 1000) && !memcmp(b.buf + 8000, exp + 1000, off - 1000),
		 "scattered data differs");

	/* Inline: 1..512 bytes from the stack, several per post. */
	for (uint32_t n = 1; n <= 512; n = n < 64 ? n + 21 : n * 2) {
		struct vrdma_send_wr ws[2];
		struct vrdma_sge is = { (uintptr_t)stackbuf, n, 0xdeadbeef };

		fill(stackbuf, n, n);
		RT_REQUIRE(post_recv1(&b, 10, 0, 4096) == 1 && post_recv1(&b, 11, 4096, 4096) == 1,
			   "post_recv");
		memset(ws, 0, sizeof(ws));
		for (int k = 0; k < 2; k++) {
			ws[k].wr_id = 20 + (uint64_t)k;
			ws[k].opcode = VIRTIO_IB_WR_SEND;
			ws[k].send_flags = VIRTIO_IB_SEND_INLINE | (k ? VIRTIO_IB_SEND_SIGNALED : 0);
			ws[k].num_sge = 1;
			ws[k].sg_list = &is;
		}
		RT_REQUIRE(vrdma_post_send(a.qp, ws, 2) == 2, "post inline");
		memset(stackbuf, 0, n); /* copied at post time */
		expect_wc(c, &a, 21, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "inline");
		expect_wc(c, &b, 10, VIRTIO_IB_WC_RECV, VIRTIO_IB_WC_SUCCESS, n, "inline recv");
		expect_wc(c, &b, 11, VIRTIO_IB_WC_RECV, VIRTIO_IB_WC_SUCCESS, n, "inline recv");
		RT_CHECK(diff(b.buf, n, n) == n && diff(b.buf + 4096, n, n) == n,
			 "inline %u bytes differ", n);
		if (rt_fails)
			break;
	}
	/* Too much inline data is refused at post time. */
	{
		struct vrdma_sge big = { (uintptr_t)a.buf, 513, 0 };

		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_SEND;
		w.send_flags = VIRTIO_IB_SEND_INLINE;
		w.num_sge = 1;
		w.sg_list = &big;
		RT_EQ(vrdma_post_send(a.qp, &w, 1), -EINVAL);
	}
	RT_EQ(vrdma_cq_poll(a.cq, &wc, 1), 0);
	ep_fini(&a);
	ep_fini(&b);
}

/* RC, UC and UD with both QPs on device A (the switch hairpins). */
static void t_loopback(struct rt_ctx *c)
{
	static const uint32_t sizes[] = { 0, 1, 1024, 1025, 70000 };
	struct ep a, b;

	RT_REQUIRE(dev(c, 0), "no device");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[0], VIRTIO_IB_QPT_RC) == 0, "setup RC");
	send_sizes(c, &a, &b, sizes, 5);
	write_read_sizes(c, &a, &b, false);
	write_read_sizes(c, &a, &b, true);
	ep_fini(&a);
	ep_fini(&b);
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[0], VIRTIO_IB_QPT_UC) == 0, "setup UC");
	send_sizes(c, &a, &b, sizes, 5);
	ep_fini(&a);
	ep_fini(&b);
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[0], VIRTIO_IB_QPT_UD) == 0, "setup UD");
	{
		uint32_t n = 1000;

		fill(a.buf, n, 9);
		RT_REQUIRE(post_recv1(&b, 1, 0, 40 + n) == 1, "post_recv");
		RT_REQUIRE(post_send1(&a, 2, VIRTIO_IB_WR_SEND, 0, 0, n, 0, 0, 0) == 0, "post");
		expect_wc(c, &a, 2, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "ud loop send");
		expect_wc(c, &b, 1, VIRTIO_IB_WC_RECV, VIRTIO_IB_WC_SUCCESS, 40 + n, "ud loop recv");
		RT_CHECK(diff(b.buf + 40, n, 9) == n, "ud loopback data differs");
	}
	ep_fini(&a);
	ep_fini(&b);
}

static void t_uc(struct rt_ctx *c)
{
	static const uint32_t sizes[] = { 0, 1, 1023, 1024, 1025, 4097, 65536, 1u << 20 };
	struct ep a, b;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_UC) == 0, "setup");
	send_sizes(c, &a, &b, sizes, sizeof(sizes) / sizeof(sizes[0]));
	/* WRITE */
	fill(a.buf, 100000, 44);
	memset(b.buf, 0, 100000);
	RT_REQUIRE(post_send1(&a, 9, VIRTIO_IB_WR_RDMA_WRITE, 0, 0, 100000, (uintptr_t)b.buf,
			      b.mr.rkey, 0) == 0, "post");
	expect_wc(c, &a, 9, VIRTIO_IB_WC_RDMA_WRITE, VIRTIO_IB_WC_SUCCESS, -1, "uc write");
	/* UC has no ACK: the write is complete when a later SEND arrives. */
	RT_REQUIRE(post_recv1(&b, 10, 200000, 16) == 1, "post_recv");
	RT_REQUIRE(post_send1(&a, 11, VIRTIO_IB_WR_SEND, 0, 0, 1, 0, 0, 0) == 0, "post");
	expect_wc(c, &a, 11, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "uc send");
	expect_wc(c, &b, 10, VIRTIO_IB_WC_RECV, VIRTIO_IB_WC_SUCCESS, 1, "uc recv");
	RT_CHECK(diff(b.buf, 100000, 44) == 100000, "uc write data differs");
	/* READ is not a UC operation */
	RT_EQ(post_send1(&a, 12, VIRTIO_IB_WR_RDMA_READ, 0, 0, 8, (uintptr_t)b.buf, b.mr.rkey, 0),
	      -EIO);
	ep_fini(&a);
	ep_fini(&b);
}

static const uint32_t ud_sizes[] = { 0, 1, 2, 7, 8, 100, 255, 256, 257, 511, 512, 513, 1000,
				     1023, 1024, 2048, 4096, UINT32_MAX };

static void t_ud(struct rt_ctx *c)
{
	struct ep a, b;
	uint32_t max;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_UD) == 0, "setup");
	max = 128u << a.mtu;
	for (unsigned i = 0; i < sizeof(ud_sizes) / sizeof(ud_sizes[0]); i++) {
		uint32_t n = ud_sizes[i] == UINT32_MAX ? max : ud_sizes[i];
		char what[48];
		struct vrdma_wc wc;

		if (n > max)
			continue;

		snprintf(what, sizeof(what), "ud %u bytes", n);
		fill(a.buf, n, n + 7);
		memset(b.buf, 0, 40 + n);
		RT_REQUIRE(post_recv1(&b, n, 0, 40 + max) == 1, "post_recv");
		RT_REQUIRE(post_send1(&a, n + 1, n & 1 ? VIRTIO_IB_WR_SEND_WITH_IMM : VIRTIO_IB_WR_SEND,
				      0, 0, n, 0, 0, htobe32(n)) == 0, "post");
		expect_wc(c, &a, n + 1, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, what);
		RT_REQUIRE(wait_wc(c, &b, &wc) == 1, "%s: no receive", what);
		RT_CHECK(wc.wr_id == n && wc.status == 0 && wc.opcode == VIRTIO_IB_WC_RECV &&
				 wc.byte_len == 40 + n && (wc.wc_flags & VIRTIO_IB_WC_GRH) &&
				 wc.src_qp == vrdma_qp_num(a.qp),
			 "%s: wc id %" PRIu64 " status %u len %u flags %#x src %#x", what, wc.wr_id,
			 wc.status, wc.byte_len, wc.wc_flags, wc.src_qp);
		if (n & 1)
			RT_CHECK(wc.imm_data == htobe32(n) && (wc.wc_flags & VIRTIO_IB_WC_WITH_IMM),
				 "%s: imm", what);
		RT_CHECK(diff(b.buf + 40, n, n + 7) == n, "%s: payload differs", what);
		if (rt_fails)
			break;
	}
	/* above the path MTU: refused by the device */
	RT_REQUIRE(post_send1(&a, 5, VIRTIO_IB_WR_SEND, 0, 0, max + 1, 0, 0, 0) == 0, "post");
	expect_wc(c, &a, 5, 0, VIRTIO_IB_WC_LOC_LEN_ERR, -1, "ud above the MTU");
	ep_fini(&a);
	ep_fini(&b);
}

/* Completion events: NEXT_COMPLETION and SOLICITED through the event fd. */
static void t_events(struct rt_ctx *c)
{
	struct pollfd p;
	struct vrdma_wc wc;
	struct ep a, b;
	int fd;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	fd = vrdma_cq_event_fd(b.cq);
	RT_REQUIRE(fd >= 0, "no event fd");
	for (int round = 0; round < 2; round++) {
		uint32_t flags = round ? VIRTIO_IB_NOTIFY_SOLICITED : VIRTIO_IB_NOTIFY_NEXT_COMPLETION;

		RT_EQ(vrdma_cq_consume_event(b.cq), 0);
		RT_EQ(vrdma_cq_arm(b.cq, flags), 0);
		RT_REQUIRE(post_recv1(&b, 50 + (uint64_t)round, 0, 64) == 1, "post_recv");
		RT_REQUIRE(post_send1(&a, 60, VIRTIO_IB_WR_SEND, round ? VIRTIO_IB_SEND_SOLICITED : 0,
				      0, 64, 0, 0, 0) == 0, "post");
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		RT_CHECK(poll(&p, 1, WAIT_MS) == 1, "round %d: no event", round);
		RT_EQ(vrdma_cq_consume_event(b.cq), 1);
		RT_EQ(vrdma_cq_poll(b.cq, &wc, 1), 1);
		RT_EQ(wc.wr_id, 50 + round);
		expect_wc(c, &a, 60, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "send");
	}
	/* An event whose completion was polled before it was consumed is not
	 * handed out (nothing to poll), and the CQ is armed for the next one. */
	RT_EQ(vrdma_cq_arm(b.cq, VIRTIO_IB_NOTIFY_NEXT_COMPLETION), 0);
	for (int k = 0; k < 2; k++) {
		RT_REQUIRE(post_recv1(&b, 80 + (uint64_t)k, 0, 64) == 1, "post_recv");
		RT_REQUIRE(post_send1(&a, 90 + (uint64_t)k, VIRTIO_IB_WR_SEND, 0, 0, 64, 0, 0, 0) == 0,
			   "post");
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		RT_CHECK(poll(&p, 1, WAIT_MS) == 1, "polled first %d: no event", k);
		if (k == 0) {
			RT_EQ(vrdma_cq_poll(b.cq, &wc, 1), 1);
			RT_EQ(vrdma_cq_consume_event(b.cq), 0);
		} else {
			RT_EQ(vrdma_cq_consume_event(b.cq), 1);
			RT_EQ(vrdma_cq_poll(b.cq, &wc, 1), 1);
		}
		RT_EQ(wc.wr_id, 80 + (uint64_t)k);
		expect_wc(c, &a, 90 + (uint64_t)k, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "send");
	}
	/* vrdma_cq_wait sleeps until the completion arrives */
	RT_REQUIRE(post_recv1(&b, 70, 0, 64) == 1, "post_recv");
	RT_REQUIRE(post_send1(&a, 71, VIRTIO_IB_WR_SEND, 0, 0, 64, 0, 0, 0) == 0, "post");
	RT_EQ(vrdma_cq_wait(b.cq, WAIT_MS), 1);
	RT_EQ(vrdma_cq_poll(b.cq, &wc, 1), 1);
	RT_EQ(wc.wr_id, 70);
	expect_wc(c, &a, 71, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "send");
	ep_fini(&a);
	ep_fini(&b);
}

/* The send ring bounds outstanding WRs; flushes give the slots back. */
static void t_queue_full_flush(struct rt_ctx *c)
{
	struct vrdma_qp_attr qa;
	struct vrdma_qp_cap cap;
	struct ep a, b;
	uint32_t i, k;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(ep_init(&a, c->dev[0], VIRTIO_IB_QPT_RC) == 0 &&
			   ep_init(&b, c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	/* Aimed at a QPN that does not exist on B: nothing is ever
	 * acknowledged (timeout code 31: hours between retries). */
	RT_REQUIRE(ep_connect(&a, &b, vrdma_qp_num(b.qp) ^ (1u << 14), 31, 7) == 0 &&
			   ep_connect(&b, &a, 0, 14, 7) == 0, "connect");
	vrdma_qp_get_cap(a.qp, &cap);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < cap.max_send_wr; i++)
			RT_REQUIRE(post_send1(&a, i, VIRTIO_IB_WR_SEND, 0, 0, 8, 0, 0, 0) == 0,
				   "post %u", i);
		{
			struct vrdma_send_wr w;

			memset(&w, 0, sizeof(w));
			w.opcode = VIRTIO_IB_WR_SEND;
			RT_EQ(vrdma_post_send(a.qp, &w, 1), -ENOMEM);
		}
		/* -> ERR flushes every WR, in order */
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = VIRTIO_IB_QPS_ERR;
		RT_REQUIRE(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE) == 0, "-> ERR");
		for (i = 0; i < cap.max_send_wr; i++)
			if (!expect_wc(c, &a, i, 0, VIRTIO_IB_WC_WR_FLUSH_ERR, -1, "flush"))
				break;
		if (rt_fails)
			break;
		/* back to RTS for the second round */
		qa.qp_state = VIRTIO_IB_QPS_RESET;
		RT_REQUIRE(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE) == 0, "-> RESET");
		RT_REQUIRE(ep_connect(&a, &b, vrdma_qp_num(b.qp) ^ (1u << 14), 31, 7) == 0,
			   "reconnect");
	}
	/* Receives flush too. */
	for (i = 0; i < 5; i++)
		RT_REQUIRE(post_recv1(&b, 900 + i, 0, 64) == 1, "post_recv");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VIRTIO_IB_QPS_ERR;
	RT_REQUIRE(vrdma_qp_modify(b.qp, &qa, VIRTIO_IB_QP_STATE) == 0, "-> ERR");
	for (i = 0; i < 5; i++)
		expect_wc(c, &b, 900 + i, 0, VIRTIO_IB_WC_WR_FLUSH_ERR, -1, "recv flush");
	/* Destroy: the device flushes what is outstanding (its completions are
	 * written before the command's ack), and the library never returns
	 * them: a destroyed QP has no completions (as mlx5 cleans its CQs). */
	for (i = 0; i < 3; i++)
		RT_REQUIRE(post_send1(&a, 700 + i, VIRTIO_IB_WR_SEND, 0, 0, 8, 0, 0, 0) == 0, "post");
	{
		struct vrdma_rdma_stats s0, s1;
		struct vrdma_wc wc;
		int n;

		RT_EQ(vrdma_rdma_get_stats(a.d, &s0), 0);
		RT_EQ(vrdma_qp_destroy(a.qp), 0);
		a.qp = NULL;
		n = vrdma_cq_poll(a.cq, &wc, 1);
		RT_CHECK(n == 0, "a destroyed QP's flush returned (%d)", n);
		RT_EQ(vrdma_rdma_get_stats(a.d, &s1), 0);
		RT_CHECK(s1.dropped_wcs - s0.dropped_wcs == 3, "%llu flushed completions dropped, 3 expected",
			 (unsigned long long)(s1.dropped_wcs - s0.dropped_wcs));
	}
	ep_fini(&a);
	ep_fini(&b);
}

/* Remote and local protection errors. */
static void t_errors(struct rt_ctx *c)
{
	struct vrdma_qp_attr qa;
	struct vrdma_mr_info other;
	struct ep a, b;
	uint32_t pd2;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	/* a bad rkey */
	RT_REQUIRE(post_send1(&a, 1, VIRTIO_IB_WR_RDMA_WRITE, 0, 0, 64, (uintptr_t)b.buf,
			      b.mr.rkey ^ 0x5a5a, 0) == 0, "post");
	expect_wc(c, &a, 1, 0, VIRTIO_IB_WC_REM_ACCESS_ERR, -1, "bad rkey");
	RT_EQ(vrdma_qp_query(a.qp, 0, &qa), 0);
	RT_EQ(qa.qp_state, VIRTIO_IB_QPS_ERR);
	ep_fini(&a);
	ep_fini(&b);
	/* beyond the MR */
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	RT_REQUIRE(post_send1(&a, 2, VIRTIO_IB_WR_RDMA_READ, 0, 0, 64,
			      (uintptr_t)b.buf + BUF_LEN - 32, b.mr.rkey, 0) == 0, "post");
	expect_wc(c, &a, 2, 0, VIRTIO_IB_WC_REM_ACCESS_ERR, -1, "read past the MR");
	ep_fini(&a);
	ep_fini(&b);
	/* an lkey of another PD */
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	RT_REQUIRE(vrdma_pd_alloc(a.d, &pd2) == 0 &&
			   vrdma_mr_reg(a.d, pd2, a.buf, 4096, (uintptr_t)a.buf,
					VIRTIO_IB_ACCESS_LOCAL_WRITE, &other) == 0, "mr");
	{
		struct vrdma_sge s = { (uintptr_t)a.buf, 64, other.lkey };
		struct vrdma_send_wr w;

		memset(&w, 0, sizeof(w));
		w.wr_id = 3;
		w.opcode = VIRTIO_IB_WR_SEND;
		w.send_flags = VIRTIO_IB_SEND_SIGNALED;
		w.num_sge = 1;
		w.sg_list = &s;
		RT_REQUIRE(vrdma_post_send(a.qp, &w, 1) == 1, "post");
		expect_wc(c, &a, 3, 0, VIRTIO_IB_WC_LOC_PROT_ERR, -1, "lkey of another PD");
	}
	vrdma_mr_dereg(a.d, other.mrn);
	vrdma_pd_free(a.d, pd2);
	ep_fini(&a);
	ep_fini(&b);
}

/*
 * A front-end without the wide-index extension: rings >= 256 get no
 * eventfds (the device polls them, and cannot interrupt them). Every QP
 * ring is such a ring; a CQ is once its index is >= 253. Data still flows,
 * such a CQ has no event fd, cannot be armed, and vrdma_cq_wait polls.
 */
static void t_no_wide_index(struct rt_ctx *c)
{
	struct vrdma_dev_opts o;
	struct vrdma_cq *extra[256];
	struct vrdma_wc wc;
	unsigned nextra = 0, i;
	struct ep a, b;
	int rc;

	RT_REQUIRE(c->sock[1], "needs two devices");
	for (i = 0; i < 2; i++) {
		vrdma_dev_close(c->dev[i]);
		memset(&o, 0, sizeof(o));
		o.timeout_ms = 20000;
		o.protocol_features_off = 1ull << VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX;
		c->dev[i] = vrdma_dev_open(c->sock[i], &o);
		RT_REQUIRE(c->dev[i], "open without wide index");
		RT_CHECK(!(vrdma_dev_protocol_features(c->dev[i]) &
			   (1ull << VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX)), "still negotiated");
	}
	/* Push B's next CQ index past ring 255. */
	while (nextra < 256) {
		RT_REQUIRE(vrdma_cq_create(c->dev[1], 2, &extra[nextra]) == 0, "cq");
		if (vrdma_vq_cq(1, vrdma_cq_num(extra[nextra++])) >= 255)
			break;
	}
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	RT_CHECK(vrdma_vq_cq(1, vrdma_cq_num(b.cq)) >= 256, "CQ ring %u",
		 vrdma_vq_cq(1, vrdma_cq_num(b.cq)));
	RT_EQ(vrdma_cq_event_fd(b.cq), -1);
	RT_EQ(vrdma_cq_arm(b.cq, VIRTIO_IB_NOTIFY_NEXT_COMPLETION), -EOPNOTSUPP);
	RT_EQ(vrdma_cq_consume_event(b.cq), -EOPNOTSUPP);
	send_sizes(c, &a, &b, rc_sizes, 12);
	write_read_sizes(c, &a, &b, true);
	/* vrdma_cq_wait polls the ring */
	RT_REQUIRE(post_recv1(&b, 70, 0, 64) == 1, "post_recv");
	RT_REQUIRE(post_send1(&a, 71, VIRTIO_IB_WR_SEND, 0, 0, 64, 0, 0, 0) == 0, "post");
	rc = vrdma_cq_wait(b.cq, WAIT_MS);
	RT_EQ(rc, 1);
	RT_EQ(vrdma_cq_poll(b.cq, &wc, 1), 1);
	RT_EQ(wc.wr_id, 70);
	expect_wc(c, &a, 71, VIRTIO_IB_WC_SEND, VIRTIO_IB_WC_SUCCESS, -1, "send");
	ep_fini(&a);
	ep_fini(&b);
	for (i = 0; i < nextra; i++)
		RT_EQ(vrdma_cq_destroy(extra[i]), 0);
	for (i = 0; i < 2; i++) {
		vrdma_dev_close(c->dev[i]);
		c->dev[i] = NULL;
	}
}

/* Several threads post WRITEs to one QP while others poll its CQ: every
 * WR completes exactly once. */
#define MT_POSTERS 4
#define MT_POLLERS 2
#define MT_PER     2000

struct mt {
	struct ep *a, *b;
	unsigned id;
	_Atomic unsigned done;
	_Atomic uint8_t *seen;
	_Atomic int errors;
};

static struct mt mt_shared;

static void *mt_post(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, i = 0;
	struct mt *m = &mt_shared;
	uint64_t end = now_ms() + 60000;

	while (i < MT_PER && now_ms() < end) {
		uint64_t wr = (uint64_t)id * MT_PER + i;
		struct vrdma_sge s = { (uintptr_t)m->a->buf + (wr % 64) * 64, 64, m->a->mr.lkey };
		struct vrdma_send_wr w;
		int rc;

		memset(&w, 0, sizeof(w));
		w.wr_id = wr;
		w.opcode = VIRTIO_IB_WR_RDMA_WRITE;
		w.send_flags = VIRTIO_IB_SEND_SIGNALED;
		w.num_sge = 1;
		w.sg_list = &s;
		w.rdma.remote_addr = (uintptr_t)m->b->buf + (wr % 64) * 64;
		w.rdma.rkey = m->b->mr.rkey;
		rc = vrdma_post_send(m->a->qp, &w, 1);
		if (rc == 1)
			i++;
		else if (rc == -ENOMEM)
			sched_yield();
		else {
			atomic_fetch_add(&m->errors, 1);
			break;
		}
	}
	return NULL;
}

static void *mt_poll(void *arg)
{
	struct mt *m = &mt_shared;
	uint64_t end = now_ms() + 60000;
	struct vrdma_wc wc[8];

	(void)arg;
	while (atomic_load(&m->done) < MT_POSTERS * MT_PER && now_ms() < end &&
	       !atomic_load(&m->errors)) {
		int n = vrdma_cq_poll(m->a->cq, wc, 8);

		for (int i = 0; i < n; i++) {
			if (wc[i].status || wc[i].wr_id >= MT_POSTERS * MT_PER ||
			    atomic_fetch_add(&m->seen[wc[i].wr_id], 1))
				atomic_fetch_add(&m->errors, 1);
			atomic_fetch_add(&m->done, 1);
		}
	}
	return NULL;
}

static void t_threads(struct rt_ctx *c)
{
	pthread_t t[MT_POSTERS + MT_POLLERS];
	struct ep a, b;
	unsigned i;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	memset(&mt_shared, 0, sizeof(mt_shared));
	mt_shared.a = &a;
	mt_shared.b = &b;
	mt_shared.seen = calloc(MT_POSTERS * MT_PER, 1);
	RT_REQUIRE(mt_shared.seen, "calloc");
	for (i = 0; i < MT_POSTERS; i++)
		pthread_create(&t[i], NULL, mt_post, (void *)(uintptr_t)i);
	for (i = 0; i < MT_POLLERS; i++)
		pthread_create(&t[MT_POSTERS + i], NULL, mt_poll, NULL);
	for (i = 0; i < MT_POSTERS + MT_POLLERS; i++)
		pthread_join(t[i], NULL);
	RT_EQ(atomic_load(&mt_shared.errors), 0);
	RT_EQ(atomic_load(&mt_shared.done), MT_POSTERS * MT_PER);
	for (i = 0; i < MT_POSTERS * MT_PER; i++)
		if (mt_shared.seen[i] != 1) {
			RT_CHECK(0, "wr %u completed %u times", i, (unsigned)mt_shared.seen[i]);
			break;
		}
	free((void *)mt_shared.seen);
	ep_fini(&a);
	ep_fini(&b);
}

/* Round trips A -> B -> A of 64-byte SENDs (reported, not judged). */
static void t_pingpong(struct rt_ctx *c)
{
	unsigned n = c->count ? c->count : 1000, i;
	struct ep a, b;
	uint64_t t0, t1;

	RT_REQUIRE(dev(c, 0) && dev(c, 1), "needs two devices");
	RT_REQUIRE(pair_init(&a, &b, c->dev[0], c->dev[1], VIRTIO_IB_QPT_RC) == 0, "setup");
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		RT_REQUIRE(post_recv1(&b, 1, 0, 64) == 1 && post_recv1(&a, 2, 0, 64) == 1, "recv");
		RT_REQUIRE(post_send1(&a, 3, VIRTIO_IB_WR_SEND, 0, 64, 64, 0, 0, 0) == 0, "send");
		if (!expect_wc(c, &b, 1, VIRTIO_IB_WC_RECV, 0, 64, "ping")) {
			dump_ep("A", &a);
			break;
		}
		RT_REQUIRE(post_send1(&b, 4, VIRTIO_IB_WR_SEND, 0, 64, 64, 0, 0, 0) == 0, "send");
		if (!expect_wc(c, &b, 4, VIRTIO_IB_WC_SEND, 0, -1, "pong sent") ||
		    !expect_wc(c, &a, 3, VIRTIO_IB_WC_SEND, 0, -1, "ping sent") ||
		    !expect_wc(c, &a, 2, VIRTIO_IB_WC_RECV, 0, 64, "pong"))
			break;
	}
	t1 = now_ms();
	printf("# %u round trips in %" PRIu64 " ms (%s)\n", i, t1 - t0,
	       c->event_mode ? "events" : "polling");
	ep_fini(&a);
	ep_fini(&b);
}

void rt_data(struct rt_ctx *c)
{
	RT_RUN(c, t_rc_send);
	RT_RUN(c, t_rc_write);
	RT_RUN(c, t_rc_read);
	RT_RUN(c, t_rc_sge_inline);
	RT_RUN(c, t_loopback);
	RT_RUN(c, t_uc);
	RT_RUN(c, t_ud);
	RT_RUN(c, t_events);
	RT_RUN(c, t_queue_full_flush);
	RT_RUN(c, t_errors);
	RT_RUN(c, t_threads);
	RT_RUN(c, t_pingpong);
	RT_RUN(c, t_no_wide_index);
}
