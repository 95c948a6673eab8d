// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "ext" and "extoff": the extensions of docs/spec.md
 * "Extensions beyond the RFC" through libvrdma and the daemon, between
 * device A and device B (RC pairs through the daemon's switch).
 *
 *   ext     capabilities and P_Key; an SRQ shared by two QPs (data compared,
 *           completions on the right QP, descriptors recycled); FETCH_AND_ADD
 *           and CMP_AND_SWP across the two devices (results and targets
 *           compared); fast registration (ALLOC_MR + REG_MR with an iova of
 *           its own, WRITE / READ through it, LOCAL_INV, SEND_WITH_INV
 *           received with WITH_INV, then a stale key refused with the
 *           responder's QP_ACCESS_ERR event); memory windows of type 1 and 2
 *           (bind, access inside / outside, invalidate, unbind, a failing
 *           bind: MW_BIND_ERR); CQ resize with completions pending; QP
 *           resize in place and with a ring replacement (EBUSY while busy);
 *           asynchronous events (SRQ_LIMIT_REACHED, CQ_ERR + QP_FATAL of a
 *           CQ overflow; none handed out for objects destroyed since)
 *   extoff  a device without VIRTIO_NET_F_ROCE_EXT: every extension call
 *           fails with EOPNOTSUPP and sends nothing
 *
 * Waits are bounded (WAIT_MS, then a failure), never synchronisation.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libvrdma/rdma_priv.h"
#include "rt.h"

#define WAIT_MS  20000
#define XBUF_LEN (1u << 20)
#define PG       4096u

struct xep {
	struct vrdma_dev *d;
	uint32_t pdn;
	struct vrdma_cq *cq;      /* send and receive CQ */
	bool own_cq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr_info mr;
	uint8_t mac[6], gid[16];
	uint8_t mtu;
	uint32_t access;
};

static uint64_t xnow_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t xpat(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u;

	return (uint8_t)(x ^ (x >> 11));
}

static void xfill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = xpat(seed, i);
}

static bool xsame(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != xpat(seed, i))
			return false;
	return true;
}

static struct vrdma_dev *xdev(struct rt_ctx *c, int i)
{
	if (!c->sock[i])
		return NULL;
	if (!c->dev[i])
		c->dev[i] = rt_open(c->sock[i]);
	return c->dev[i];
}

/* An endpoint: PD, 1 MiB MR, a CQ (or cq), an RC QP (with srq if given). */
static int xep_init(struct xep *e, struct vrdma_dev *d, uint32_t cqe, struct vrdma_srq *srq,
		    uint32_t pdn, uint32_t send_wr)
{
	struct vrdma_device_attr da;
	struct vrdma_port_attr pa;
	struct vrdma_qp_init in;
	int rc;

	memset(e, 0, sizeof(*e));
	e->d = d;
	vrdma_dev_mac(d, e->mac);
	rt_gid_linklocal(e->mac, e->gid);
	rc = vrdma_query_port(d, &pa);
	if (!rc)
		rc = vrdma_query_device(d, &da);
	if (rc)
		return rc;
	e->mtu = pa.active_mtu;
	e->access = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
		    VIRTIO_IB_ACCESS_REMOTE_READ;
	if (da.atomic_cap != VIRTIO_IB_ATOMIC_NONE)
		e->access |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	e->buf = aligned_alloc(PG, XBUF_LEN);
	if (!e->buf)
		return -ENOMEM;
	memset(e->buf, 0, XBUF_LEN);
	if (pdn)
		e->pdn = pdn;
	else
		rc = vrdma_pd_alloc(d, &e->pdn);
	if (!rc)
		rc = vrdma_mr_reg(d, e->pdn, e->buf, XBUF_LEN, (uintptr_t)e->buf, e->access, &e->mr);
	if (!rc) {
		rc = vrdma_cq_create(d, cqe, &e->cq);
		e->own_cq = !rc;
	}
	if (rc)
		return rc;
	memset(&in, 0, sizeof(in));
	in.pdn = e->pdn;
	in.qp_type = VIRTIO_IB_QPT_RC;
	in.send_cq = in.recv_cq = e->cq;
	in.cap.max_send_wr = send_wr;
	in.cap.max_recv_wr = srq ? 0 : 16;
	in.cap.max_send_sge = in.cap.max_recv_sge = 2;
	in.cap.max_inline_data = 64;
	in.srq = srq;
	return vrdma_qp_create(d, &in, &e->qp);
}

static void xep_fini(struct xep *e, bool keep_pd)
{
	if (e->qp)
		vrdma_qp_destroy(e->qp);
	if (e->cq && e->own_cq)
		vrdma_cq_destroy(e->cq);
	if (e->mr.mrn)
		vrdma_mr_dereg(e->d, e->mr.mrn);
	if (e->pdn && !keep_pd)
		vrdma_pd_free(e->d, e->pdn);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* e to RTS aimed at peer. */
static int xep_connect(struct xep *e, const struct xep *peer)
{
	struct vrdma_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.qp_access_flags = e->access & ~(uint32_t)VIRTIO_IB_ACCESS_MW_BIND;
	rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTR;
	a.path_mtu = e->mtu;
	a.dest_qp_num = vrdma_qp_num(peer->qp);
	a.rq_psn = 0x2000;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.grh.dgid, peer->gid, 16);
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.dmac, peer->mac, 6);
	rc = vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV |
				       VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
				       VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
				       VIRTIO_IB_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.sq_psn = 0x2000;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return vrdma_qp_modify(e->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN |
					  VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT |
					  VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC);
}

static int xpair(struct xep *a, struct xep *b, struct vrdma_dev *da, struct vrdma_dev *db,
		 uint32_t cqe, uint32_t send_wr)
{
	int rc = xep_init(a, da, cqe, NULL, 0, send_wr);

	if (!rc)
		rc = xep_init(b, db, cqe, NULL, 0, send_wr);
	if (!rc)
		rc = xep_connect(a, b);
	if (!rc)
		rc = xep_connect(b, a);
	return rc;
}

/* The next completion of cq: 1, 0 (timeout), -errno. */
static int xwait(struct vrdma_cq *cq, struct vrdma_wc *wc)
{
	uint64_t end = xnow_ms() + WAIT_MS;

	for (;;) {
		int n = vrdma_cq_poll(cq, wc, 1);

		if (n)
			return n;
		if (xnow_ms() >= end)
			return 0;
		sched_yield();
	}
}

/* Wait for one completion and check wr_id, status, opcode (on success). */
static bool xexpect(struct vrdma_cq *cq, uint64_t wr_id, uint8_t status, uint8_t opcode,
		    const char *what)
{
	struct vrdma_wc wc;
	int rc = xwait(cq, &wc);

	RT_CHECK(rc == 1, "%s: no completion (%d)", what, rc);
	if (rc != 1)
		return false;
	RT_CHECK(wc.wr_id == wr_id, "%s: wr_id %" PRIu64 " != %" PRIu64, what, wc.wr_id, wr_id);
	RT_CHECK(wc.status == status, "%s: status %u != %u", what, wc.status, status);
	if (status == VIRTIO_IB_WC_SUCCESS)
		RT_CHECK(wc.opcode == opcode, "%s: opcode %u != %u", what, wc.opcode, opcode);
	return wc.wr_id == wr_id && wc.status == status;
}

static int xpost(struct xep *e, const struct vrdma_send_wr *w)
{
	return vrdma_post_send(e->qp, w, 1);
}

/* A signaled WRITE / READ / SEND of len bytes at e->buf + off. */
static int xrdma(struct xep *e, uint64_t wr_id, uint8_t op, size_t off, uint32_t len,
		 uint64_t raddr, uint32_t rkey)
{
	struct vrdma_sge s = { (uintptr_t)e->buf + off, len, e->mr.lkey };
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = op;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.rdma.remote_addr = raddr;
	w.rdma.rkey = rkey;
	w.num_sge = len ? 1 : 0;
	w.sg_list = &s;
	return xpost(e, &w);
}

static int xrecv(struct xep *e, uint64_t wr_id, size_t off, uint32_t len)
{
	struct vrdma_sge s = { (uintptr_t)e->buf + off, len, e->mr.lkey };
	struct vrdma_recv_wr w = { wr_id, 1, &s };

	return vrdma_post_recv(e->qp, &w, 1);
}

/* Wait for an asynchronous event of type on d (others are skipped and
 * counted in *skipped). 1 and *ev, or 0 (timeout). */
static int xevent(struct vrdma_dev *d, uint32_t type, struct vrdma_async_event *ev)
{
	uint64_t end = xnow_ms() + WAIT_MS;
	int fd = vrdma_event_fd(d);

	for (;;) {
		struct pollfd p;
		int rc = vrdma_event_get(d, ev);

		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (ev->type == type)
				return 1;
			printf("#   (event %u id %#x skipped)\n", ev->type, ev->id);
			continue;
		}
		if (xnow_ms() >= end)
			return 0;
		if (fd >= 0) {
			p.fd = fd;
			p.events = POLLIN;
			p.revents = 0;
			poll(&p, 1, (int)(end - xnow_ms()));
		} else {
			sched_yield();
		}
	}
}

/* The device's attributes, or skip the test when the extension or cap
 * (VIRTIO_IB_DEVICE_* bits, 0: none) is missing. */
#define XNEED(d, da, cap)                                                       \
	do {                                                                    \
		RT_REQUIRE((d), "no device");                                   \
		RT_REQUIRE(vrdma_query_device((d), &(da)) == 0, "query");       \
		if (!(da).ext)                                                  \
			RT_SKIP("device without VIRTIO_NET_F_ROCE_EXT");        \
		if ((cap) && ((da).device_cap_flags & (cap)) != (cap))          \
			RT_SKIP("capability not reported");                     \
	} while (0)

/* ---- capabilities ------------------------------------------------------------- */

static void t_ext_caps(struct rt_ctx *c)
{
	struct vrdma_dev *d = xdev(c, 0);
	struct vrdma_device_attr da;
	struct vrdma_port_attr pa;
	uint16_t pkey = 0;

	XNEED(d, da, 0);
	RT_CHECK(!(da.device_cap_flags & ~VIRTIO_IB_DEVICE_CAP_EXT_MASK), "cap bits %#" PRIx64,
		 da.device_cap_flags);
	if (da.device_cap_flags & VIRTIO_IB_DEVICE_SRQ) {
		RT_CHECK(da.max_srq == vrdma_dev_max_rdma_srqs(d) && da.max_srq > 0,
			 "max_srq %u", da.max_srq);
		RT_CHECK(da.max_srq_wr > 0 && da.max_srq_sge > 0, "srq limits");
	}
	if (da.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW)
		RT_CHECK(da.max_mw > 0, "max_mw");
	if (da.device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)
		RT_CHECK(da.max_fast_reg_page_list_len > 0, "max_fast_reg_page_list_len");
	RT_EQ(da.max_pkeys, 1);
	RT_CHECK(da.atomic_cap <= VIRTIO_IB_ATOMIC_HCA, "atomic_cap %u", da.atomic_cap);
	RT_EQ(vrdma_query_port(d, &pa), 0);
	RT_EQ(pa.pkey_tbl_len, 1);
	RT_EQ(vrdma_query_pkey(d, 0, &pkey), 0);
	RT_EQ(pkey, 0xffff);
	RT_EQ(vrdma_query_pkey(d, 1, &pkey), -EINVAL);
	RT_CHECK(vrdma_event_fd(d) >= 0, "event fd %d", vrdma_event_fd(d));
}

/* ---- SRQ ----------------------------------------------------------------------- */

static void t_ext_srq(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct xep a1, a2, b1, b2;
	struct vrdma_device_attr at;
	struct vrdma_srq_attr sa;
	struct vrdma_srq *srq = NULL;
	uint32_t pdn = 0;
	int rc;

	XNEED(da, at, VIRTIO_IB_DEVICE_SRQ);
	RT_REQUIRE(db, "no device B");
	memset(&a1, 0, sizeof(a1));
	memset(&a2, 0, sizeof(a2));
	memset(&b1, 0, sizeof(b1));
	memset(&b2, 0, sizeof(b2));
	RT_REQUIRE(vrdma_pd_alloc(da, &pdn) == 0, "pd");
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 8;
	sa.max_sge = 1;
	rc = vrdma_srq_create(da, pdn, &sa, &srq);
	RT_EQ(rc, 0);
	if (rc)
		goto out;
	RT_EQ(sa.max_wr, 8);
	/* two QPs of A on one SRQ, each with its own CQ */
	rc = xep_init(&a1, da, 64, srq, pdn, 16);
	if (!rc)
		rc = xep_init(&a2, da, 64, srq, pdn, 16);
	if (!rc)
		rc = xep_init(&b1, db, 64, NULL, 0, 16);
	if (!rc)
		rc = xep_init(&b2, db, 64, NULL, 0, 16);
	if (!rc)
		rc = xep_connect(&a1, &b1);
	if (!rc)
		rc = xep_connect(&a2, &b2);
	if (!rc)
		rc = xep_connect(&b1, &a1);
	if (!rc)
		rc = xep_connect(&b2, &a2);
	RT_CHECK(rc == 0, "setup: %d", rc);
	if (rc)
		goto out;
	RT_EQ(xrecv(&a1, 1, 0, 16), -EINVAL); /* never on a QP with an SRQ */
	RT_EQ(vrdma_srq_destroy(srq), -EBUSY);
	/* three rounds of 8: descriptors come back and are reused */
	for (uint32_t round = 0; round < 3 && !rt_fails; round++) {
		for (uint32_t k = 0; k < 8; k++) {
			struct vrdma_sge s = { (uintptr_t)a1.buf + k * 8192, 8192, a1.mr.lkey };
			struct vrdma_recv_wr w = { 1000 + round * 8 + k, 1, &s };

			RT_EQ(vrdma_post_srq_recv(srq, &w, 1), 1);
		}
		{
			struct vrdma_sge s = { (uintptr_t)a1.buf, 16, a1.mr.lkey };
			struct vrdma_recv_wr w = { 1, 1, &s };

			RT_EQ(vrdma_post_srq_recv(srq, &w, 1), -ENOMEM); /* full */
		}
		for (uint32_t k = 0; k < 8 && !rt_fails; k++) {
			struct xep *snd = k & 1 ? &b2 : &b1, *rcv = k & 1 ? &a2 : &a1;
			uint32_t len = 100 + k * 997 + round, seed = round * 100 + k;
			struct vrdma_wc wc;

			xfill(snd->buf, len, seed);
			RT_EQ(xrdma(snd, 50 + k, VIRTIO_IB_WR_SEND, 0, len, 0, 0), 1);
			xexpect(snd->cq, 50 + k, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_SEND, "send");
			RT_REQUIRE(xwait(rcv->cq, &wc) == 1, "no receive completion %u", k);
			RT_EQ(wc.status, VIRTIO_IB_WC_SUCCESS);
			RT_EQ(wc.opcode, VIRTIO_IB_WC_RECV);
			RT_EQ(wc.wr_id, 1000 + round * 8 + k);
			RT_EQ(wc.qp_num, vrdma_qp_num(rcv->qp));
			RT_EQ(wc.byte_len, len);
			RT_CHECK(xsame(a1.buf + k * 8192, len, seed), "message %u differs", k);
		}
	}
out:
	xep_fini(&b1, false);
	xep_fini(&b2, false);
	xep_fini(&a1, true);
	xep_fini(&a2, true);
	if (srq)
		RT_EQ(vrdma_srq_destroy(srq), 0);
	if (pdn)
		RT_EQ(vrdma_pd_free(da, pdn), 0);
}

/* ---- atomics --------------------------------------------------------------------- */

static int xatomic(struct xep *e, uint64_t wr_id, uint8_t op, size_t res_off, uint64_t raddr,
		   uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	struct vrdma_sge s = { (uintptr_t)e->buf + res_off, 8, e->mr.lkey };
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = op;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.atomic.remote_addr = raddr;
	w.atomic.rkey = rkey;
	w.atomic.compare_add = cmp_add;
	w.atomic.swap = swap;
	w.num_sge = 1;
	w.sg_list = &s;
	return xpost(e, &w);
}

static void t_ext_atomic(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct xep a, b;
	uint64_t *target, *res;
	uint64_t raddr;

	XNEED(da, at, 0);
	if (at.atomic_cap == VIRTIO_IB_ATOMIC_NONE)
		RT_SKIP("no atomic_cap");
	RT_REQUIRE(db, "no device B");
	RT_REQUIRE(xpair(&a, &b, da, db, 64, 16) == 0, "pair");
	target = (uint64_t *)(void *)(b.buf + 64);
	res = (uint64_t *)(void *)a.buf;
	raddr = (uintptr_t)target;
	*target = 100;
	*res = 0xdeadbeef;
	RT_EQ(xatomic(&a, 1, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, 0, raddr, b.mr.rkey, 5, 0), 1);
	if (xexpect(a.cq, 1, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_FETCH_ADD, "faa")) {
		RT_EQ(*res, 100);
		RT_EQ(*target, 105);
	}
	RT_EQ(xatomic(&a, 2, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, 8, raddr, b.mr.rkey, 105,
		      0x1122334455667788ull), 1);
	if (xexpect(a.cq, 2, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_COMP_SWAP, "cas")) {
		RT_EQ(res[1], 105);
		RT_CHECK(*target == 0x1122334455667788ull, "target %#" PRIx64, *target);
	}
	/* compare fails: the value is returned, nothing changes */
	RT_EQ(xatomic(&a, 3, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, 16, raddr, b.mr.rkey, 1, 9), 1);
	if (xexpect(a.cq, 3, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_COMP_SWAP, "cas miss")) {
		RT_CHECK(res[2] == 0x1122334455667788ull, "result %#" PRIx64, res[2]);
		RT_CHECK(*target == 0x1122334455667788ull, "target %#" PRIx64, *target);
	}
	/* wraps mod 2^64; from B to A too */
	*res = ~0ull;
	RT_EQ(xatomic(&b, 4, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, 128, (uintptr_t)res, a.mr.rkey, 2,
		      0), 1);
	if (xexpect(b.cq, 4, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_FETCH_ADD, "faa b->a")) {
		RT_CHECK(*(uint64_t *)(void *)(b.buf + 128) == ~0ull, "result");
		RT_EQ(*res, 1);
	}
	/* driver checks: one SGE of >= 8 bytes, no inline */
	{
		struct vrdma_sge s = { (uintptr_t)a.buf, 4, a.mr.lkey };
		struct vrdma_send_wr w;

		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
		w.num_sge = 1;
		w.sg_list = &s;
		RT_EQ(xpost(&a, &w), -EINVAL);
		s.length = 8;
		w.send_flags = VIRTIO_IB_SEND_INLINE;
		RT_EQ(xpost(&a, &w), -EINVAL);
	}
	xep_fini(&a, false);
	xep_fini(&b, false);
}

/* ---- fast registration, invalidation ------------------------------------------- */

static int xreg(struct xep *e, uint64_t wr_id, uint32_t mrn, uint32_t key, uint32_t access,
		uint64_t iova, uint64_t len, const void *addr)
{
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = VIRTIO_IB_WR_REG_MR;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.reg.mrn = mrn;
	w.reg.key = key;
	w.reg.access = access;
	w.reg.iova = iova;
	w.reg.length = len;
	w.reg.addr = addr;
	return xpost(e, &w);
}

static int xinv(struct xep *e, uint64_t wr_id, uint32_t key)
{
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = VIRTIO_IB_WR_LOCAL_INV;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.invalidate_rkey = key;
	return xpost(e, &w);
}

static void t_ext_fastreg(struct rt_ctx *c)
{
	const uint32_t acc = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct vrdma_mr_info fr;
	struct vrdma_async_event ev;
	struct xep a, b;
	const uint64_t iova = 0x5000000000100ull;
	uint8_t *win;
	uint32_t key, key2;

	XNEED(da, at, VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);
	RT_REQUIRE(db, "no device B");
	RT_REQUIRE(xpair(&a, &b, da, db, 64, 16) == 0, "pair");
	RT_EQ(vrdma_mr_alloc(db, b.pdn, 0, &fr), -EINVAL);
	RT_REQUIRE(vrdma_mr_alloc(db, b.pdn, 4, &fr) == 0, "alloc_mr");
	RT_EQ(fr.lkey, fr.rkey);
	/* 8000 bytes at page offset 0x100: 3 pages; iova at the same offset */
	win = b.buf + 3 * PG + 0x100;
	key = vrdma_inc_key(fr.lkey);
	RT_EQ(xreg(&b, 1, fr.mrn, key, acc, iova, 8000, win), 1);
	if (!xexpect(b.cq, 1, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_REG_MR, "reg_mr"))
		goto out;
	/* more pages than the MR holds: refused by the library */
	RT_EQ(xreg(&b, 2, fr.mrn, key, acc, iova, 5 * PG, win), -EINVAL);
	xfill(a.buf, 6000, 11);
	RT_EQ(xrdma(&a, 2, VIRTIO_IB_WR_RDMA_WRITE, 0, 6000, iova + 500, key), 1);
	if (xexpect(a.cq, 2, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "write fastreg"))
		RT_CHECK(xsame(win + 500, 6000, 11), "write through the fast-reg MR differs");
	xfill(win, 8000, 12);
	RT_EQ(xrdma(&a, 3, VIRTIO_IB_WR_RDMA_READ, 65536, 8000, iova, key), 1);
	if (xexpect(a.cq, 3, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_READ, "read fastreg"))
		RT_CHECK(xsame(a.buf + 65536, 8000, 12), "read through the fast-reg MR differs");
	/* LOCAL_INV, then registered again with the next key */
	RT_EQ(xinv(&b, 4, key), 1);
	xexpect(b.cq, 4, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_LOCAL_INV, "local_inv");
	key2 = vrdma_inc_key(key);
	RT_EQ(xreg(&b, 5, fr.mrn, key2, acc, iova, 8000, win), 1);
	xexpect(b.cq, 5, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_REG_MR, "reg_mr again");
	RT_EQ(xrdma(&a, 6, VIRTIO_IB_WR_RDMA_WRITE, 0, 100, iova, key2), 1);
	xexpect(a.cq, 6, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "write key2");
	/* SEND_WITH_INV: the receiver reports the key it invalidated */
	RT_EQ(xrecv(&b, 7, 200000, 4096), 1);
	{
		struct vrdma_sge s = { (uintptr_t)a.buf, 64, a.mr.lkey };
		struct vrdma_send_wr w;
		struct vrdma_wc wc;

		memset(&w, 0, sizeof(w));
		w.wr_id = 8;
		w.opcode = VIRTIO_IB_WR_SEND_WITH_INV;
		w.send_flags = VIRTIO_IB_SEND_SIGNALED;
		w.invalidate_rkey = key2;
		w.num_sge = 1;
		w.sg_list = &s;
		RT_EQ(xpost(&a, &w), 1);
		xexpect(a.cq, 8, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_SEND, "send_with_inv");
		RT_REQUIRE(xwait(b.cq, &wc) == 1, "no receive completion");
		RT_EQ(wc.wr_id, 7);
		RT_EQ(wc.status, VIRTIO_IB_WC_SUCCESS);
		RT_EQ(wc.opcode, VIRTIO_IB_WC_RECV);
		RT_CHECK(wc.wc_flags & VIRTIO_IB_WC_WITH_INV, "wc_flags %#x", wc.wc_flags);
		RT_CHECK(wc.invalidated_rkey == key2, "invalidated_rkey %#x != %#x",
			 wc.invalidated_rkey, key2);
		RT_EQ(wc.byte_len, 64);
	}
	/* the key is dead: remote access error, the responder's event */
	RT_EQ(xrdma(&a, 9, VIRTIO_IB_WR_RDMA_WRITE, 0, 100, iova, key2), 1);
	xexpect(a.cq, 9, VIRTIO_IB_WC_REM_ACCESS_ERR, 0, "write after invalidation");
	if (xevent(db, VIRTIO_IB_EVENT_QP_ACCESS_ERR, &ev) == 1) {
		RT_CHECK(ev.qp == b.qp, "event of QP %#x", ev.id);
		RT_EQ(ev.id, vrdma_qp_num(b.qp));
	} else {
		RT_CHECK(0, "no QP_ACCESS_ERR event");
	}
out:
	RT_EQ(vrdma_mr_dereg(db, fr.mrn), 0);
	xep_fini(&a, false);
	xep_fini(&b, false);
}

/* ---- memory windows --------------------------------------------------------------- */

static int xbind(struct xep *e, uint64_t wr_id, uint32_t rkey, uint32_t mr_lkey, void *addr,
		 uint64_t len, uint32_t access)
{
	struct vrdma_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = VIRTIO_IB_WR_BIND_MW;
	w.send_flags = VIRTIO_IB_SEND_SIGNALED;
	w.bind_mw.addr = (uintptr_t)addr;
	w.bind_mw.length = len;
	w.bind_mw.mr_lkey = mr_lkey;
	w.bind_mw.rkey = rkey;
	w.bind_mw.access = access;
	return xpost(e, &w);
}

static void t_ext_mw(struct rt_ctx *c)
{
	const uint32_t rw = VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct vrdma_mr_info mrw;
	struct vrdma_mw_info w1, w2;
	struct xep a, b;
	uint32_t k1, k2;
	bool type2;

	XNEED(da, at, VIRTIO_IB_DEVICE_MEM_WINDOW);
	RT_REQUIRE(db, "no device B");
	type2 = at.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B;
	memset(&w2, 0, sizeof(w2));
	RT_REQUIRE(xpair(&a, &b, da, db, 64, 16) == 0, "pair");
	/* the usual base of windows: local write + MW_BIND, no remote rights */
	RT_REQUIRE(vrdma_mr_reg(db, b.pdn, b.buf, XBUF_LEN, (uintptr_t)b.buf,
				VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND, &mrw) == 0,
		   "mr with MW_BIND");
	RT_EQ(vrdma_mw_alloc(db, b.pdn, 3, &w1), -EINVAL);
	RT_REQUIRE(vrdma_mw_alloc(db, b.pdn, VIRTIO_IB_MW_TYPE_1, &w1) == 0, "alloc_mw 1");
	k1 = vrdma_inc_key(w1.rkey);
	RT_EQ(xbind(&b, 1, k1, mrw.lkey, b.buf + 16384, PG, rw), 1);
	if (!xexpect(b.cq, 1, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_BIND_MW, "bind type 1"))
		goto out;
	xfill(a.buf, PG, 21);
	RT_EQ(xrdma(&a, 2, VIRTIO_IB_WR_RDMA_WRITE, 0, PG, (uintptr_t)b.buf + 16384, k1), 1);
	if (xexpect(a.cq, 2, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "write window"))
		RT_CHECK(xsame(b.buf + 16384, PG, 21), "write through the window differs");
	RT_EQ(xrdma(&a, 3, VIRTIO_IB_WR_RDMA_READ, 8192, 100, (uintptr_t)b.buf + 16384 + 7, k1), 1);
	if (xexpect(a.cq, 3, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_READ, "read window"))
		RT_CHECK(!memcmp(a.buf + 8192, b.buf + 16384 + 7, 100), "read differs");
	if (type2) {
		RT_REQUIRE(vrdma_mw_alloc(db, b.pdn, VIRTIO_IB_MW_TYPE_2, &w2) == 0, "alloc_mw 2");
		k2 = vrdma_inc_key(w2.rkey);
		RT_EQ(xbind(&b, 4, k2, mrw.lkey, b.buf + 32768, 2 * PG,
			    VIRTIO_IB_ACCESS_REMOTE_WRITE), 1);
		xexpect(b.cq, 4, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_BIND_MW, "bind type 2");
		xfill(a.buf, 2 * PG, 22);
		RT_EQ(xrdma(&a, 5, VIRTIO_IB_WR_RDMA_WRITE, 0, 2 * PG, (uintptr_t)b.buf + 32768, k2),
		      1);
		if (xexpect(a.cq, 5, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "write type 2"))
			RT_CHECK(xsame(b.buf + 32768, 2 * PG, 22), "type 2 write differs");
		/* a bound type 2 window cannot be bound again; invalidate it */
		RT_EQ(xinv(&b, 6, k2), 1);
		xexpect(b.cq, 6, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_LOCAL_INV, "inv type 2");
	}
	/* the MR is in use while a window is bound to it */
	RT_EQ(vrdma_mr_dereg(db, mrw.mrn), -EBUSY);
	/* outside the window: remote access error (the pair is done then) */
	RT_EQ(xrdma(&a, 7, VIRTIO_IB_WR_RDMA_WRITE, 0, 100, (uintptr_t)b.buf + 16384 + PG - 10, k1),
	      1);
	xexpect(a.cq, 7, VIRTIO_IB_WC_REM_ACCESS_ERR, 0, "write beyond the window");
	/* a bind with a key that names no window fails (A's QP, back from
	 * ERR through RESET: the access error stopped both) */
	{
		struct vrdma_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = VIRTIO_IB_QPS_RESET;
		RT_EQ(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE), 0);
		RT_EQ(xep_connect(&a, &b), 0);
		RT_EQ(xbind(&a, 8, vrdma_inc_key(a.mr.lkey), a.mr.lkey, a.buf, PG, rw), 1);
		xexpect(a.cq, 8, VIRTIO_IB_WC_MW_BIND_ERR, 0, "bad bind");
	}
out:
	RT_EQ(vrdma_mw_dealloc(db, w1.mwn), 0);
	if (w2.mwn)
		RT_EQ(vrdma_mw_dealloc(db, w2.mwn), 0);
	RT_EQ(vrdma_mr_dereg(db, mrw.mrn), 0);
	xep_fini(&a, false);
	xep_fini(&b, false);
}

/* ---- resize ------------------------------------------------------------------------ */

/* Used entries of cq's ring not polled yet (libvrdma internals). */
static uint16_t xcq_ready(struct vrdma_cq *cq)
{
	const struct vq_drv *vq = &cq->q->vq;

	return (uint16_t)(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) - vq->last_used_idx);
}

static void t_ext_resize_cq(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct xep a, b;
	uint64_t end;
	uint32_t i;

	XNEED(da, at, VIRTIO_IB_DEVICE_RESIZE_CQ);
	RT_REQUIRE(db, "no device B");
	RT_REQUIRE(xpair(&a, &b, da, db, 4, 32) == 0, "pair");
	RT_EQ(vrdma_cq_size(a.cq), 4);
	/* 4 completions waiting in the ring, not polled */
	for (i = 0; i < 4; i++)
		RT_EQ(xrdma(&a, 100 + i, VIRTIO_IB_WR_RDMA_WRITE, i * 64, 64,
			    (uintptr_t)b.buf + i * 64, b.mr.rkey), 1);
	end = xnow_ms() + WAIT_MS;
	while (xcq_ready(a.cq) < 4 && xnow_ms() < end)
		sched_yield();
	RT_REQUIRE(xcq_ready(a.cq) == 4, "completions did not arrive");
	RT_EQ(vrdma_cq_resize(a.cq, 0), -EINVAL);
	RT_EQ(vrdma_cq_resize(a.cq, 3), 0); /* never shrinks */
	RT_EQ(vrdma_cq_size(a.cq), 4);
	RT_EQ(vrdma_cq_resize(a.cq, 40), 0);
	RT_EQ(vrdma_cq_size(a.cq), 64);
	/* more than the old size, while the old completions are unpolled */
	for (i = 4; i < 24; i++)
		RT_EQ(xrdma(&a, 100 + i, VIRTIO_IB_WR_RDMA_WRITE, i * 64, 64,
			    (uintptr_t)b.buf + i * 64, b.mr.rkey), 1);
	for (i = 0; i < 24 && !rt_fails; i++)
		xexpect(a.cq, 100 + i, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "after resize");
	/* and the CQ keeps working, events included */
	RT_EQ(xrdma(&a, 200, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey), 1);
	RT_EQ(vrdma_cq_wait(a.cq, WAIT_MS), 1);
	xexpect(a.cq, 200, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "last");
	xep_fini(&a, false);
	xep_fini(&b, false);
}

static void t_ext_resize_qp(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct vrdma_qp_cap cap;
	struct vrdma_qp_attr qa;
	struct xep a, b;
	uint32_t i;

	XNEED(da, at, VIRTIO_IB_DEVICE_RESIZE_MAX_WR);
	RT_REQUIRE(db, "no device B");
	RT_REQUIRE(xpair(&a, &b, da, db, 256, 4) == 0, "pair");
	for (i = 0; i < 4; i++)
		RT_EQ(xrdma(&a, i, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey), 1);
	RT_EQ(xrdma(&a, 99, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey),
	      -ENOMEM);
	/* in place (the ring has room), with 4 outstanding */
	RT_EQ(vrdma_qp_resize(a.qp, 8, 16), 0);
	vrdma_qp_get_cap(a.qp, &cap);
	RT_EQ(cap.max_send_wr, 8);
	RT_EQ(vrdma_qp_query(a.qp, 0, &qa), 0);
	RT_EQ(qa.cap.max_send_wr, 8);
	for (i = 4; i < 8; i++)
		RT_EQ(xrdma(&a, i, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey), 1);
	/* below what is outstanding; a ring replacement while busy */
	RT_EQ(vrdma_qp_resize(a.qp, 4, 16), -EBUSY);
	RT_EQ(vrdma_qp_resize(a.qp, 1024, 16), -EBUSY);
	for (i = 0; i < 8; i++)
		xexpect(a.cq, i, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "in place");
	/* quiescent: the ring is replaced, the QP goes on */
	RT_EQ(vrdma_qp_resize(a.qp, 1024, 16), 0);
	vrdma_qp_get_cap(a.qp, &cap);
	RT_EQ(cap.max_send_wr, 1024);
	RT_EQ(vrdma_qp_query(a.qp, 0, &qa), 0);
	RT_CHECK(qa.qp_state == VIRTIO_IB_QPS_RTS, "state %u after a quiescent ring replacement",
		 qa.qp_state);
	for (i = 0; i < 200; i++)
		RT_EQ(xrdma(&a, 1000 + i, VIRTIO_IB_WR_RDMA_WRITE, (i % 16) * 64, 64,
			    (uintptr_t)b.buf + 4096 + (i % 16) * 64, b.mr.rkey), 1);
	for (i = 0; i < 200 && !rt_fails; i++)
		xexpect(a.cq, 1000 + i, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RDMA_WRITE, "replaced");
	/* receive side in place too */
	RT_EQ(vrdma_qp_resize(b.qp, 16, 32), 0);
	vrdma_qp_get_cap(b.qp, &cap);
	RT_EQ(cap.max_recv_wr, 32);
	for (i = 0; i < 32; i++)
		RT_EQ(xrecv(&b, 500 + i, i * 128, 128), 1);
	for (i = 0; i < 32; i++)
		RT_EQ(xrdma(&a, 600 + i, VIRTIO_IB_WR_SEND, 0, 100, 0, 0), 1);
	for (i = 0; i < 32 && !rt_fails; i++) {
		xexpect(a.cq, 600 + i, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_SEND, "send");
		xexpect(b.cq, 500 + i, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RECV, "recv");
	}
	xep_fini(&a, false);
	xep_fini(&b, false);
}

/* ---- asynchronous events ------------------------------------------------------------ */

static void t_ext_events(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct vrdma_async_event ev;
	struct vrdma_srq_attr sa;
	struct vrdma_srq *srq = NULL;
	struct vrdma_qp_attr qa;
	struct xep a, b;
	uint32_t pdn = 0, i;
	bool got_cq = false, got_qp = false;

	XNEED(da, at, 0);
	RT_REQUIRE(db, "no device B");
	/* nothing pending at first (but maybe port / COMM_EST events) */
	RT_CHECK(vrdma_event_get(da, &ev) >= 0, "event_get");
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_SRQ) {
		RT_REQUIRE(vrdma_pd_alloc(da, &pdn) == 0, "pd");
		memset(&sa, 0, sizeof(sa));
		sa.max_wr = 8;
		sa.max_sge = 1;
		RT_REQUIRE(vrdma_srq_create(da, pdn, &sa, &srq) == 0, "srq");
		RT_REQUIRE(xep_init(&a, da, 64, srq, pdn, 16) == 0, "a");
		RT_REQUIRE(xep_init(&b, db, 64, NULL, 0, 16) == 0, "b");
		RT_REQUIRE(xep_connect(&a, &b) == 0 && xep_connect(&b, &a) == 0, "connect");
		for (i = 0; i < 4; i++) {
			struct vrdma_sge s = { (uintptr_t)a.buf + i * 4096, 4096, a.mr.lkey };
			struct vrdma_recv_wr w = { 10 + i, 1, &s };

			RT_EQ(vrdma_post_srq_recv(srq, &w, 1), 1);
		}
		sa.srq_limit = 9;
		RT_EQ(vrdma_srq_modify(srq, &sa, VIRTIO_IB_SRQ_LIMIT), -EINVAL);
		RT_EQ(vrdma_srq_modify(srq, &sa, VIRTIO_IB_SRQ_MAX_WR), -EINVAL);
		sa.srq_limit = 4;
		RT_EQ(vrdma_srq_modify(srq, &sa, VIRTIO_IB_SRQ_LIMIT), 0);
		RT_EQ(vrdma_srq_query(srq, &sa), 0);
		RT_EQ(sa.srq_limit, 4);
		RT_EQ(xrdma(&b, 1, VIRTIO_IB_WR_SEND, 0, 10, 0, 0), 1);
		xexpect(b.cq, 1, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_SEND, "send");
		xexpect(a.cq, 10, VIRTIO_IB_WC_SUCCESS, VIRTIO_IB_WC_RECV, "recv");
		if (xevent(da, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED, &ev) == 1) {
			RT_CHECK(ev.srq == srq, "SRQ_LIMIT_REACHED of srqn %u", ev.id);
			RT_EQ(ev.id, vrdma_srq_num(srq));
			RT_EQ(vrdma_srq_query(srq, &sa), 0);
			RT_EQ(sa.srq_limit, 0); /* disarmed */
		} else {
			RT_CHECK(0, "no SRQ_LIMIT_REACHED");
		}
		xep_fini(&a, true);
		xep_fini(&b, false);
		RT_EQ(vrdma_srq_destroy(srq), 0);
		RT_EQ(vrdma_pd_free(da, pdn), 0);
	}
	/* A CQ overflow: CQ_ERR for the CQ, QP_FATAL for its QP */
	RT_REQUIRE(xpair(&a, &b, da, db, 2, 16) == 0, "pair");
	for (i = 0; i < 12; i++)
		RT_EQ(xrdma(&a, i, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey), 1);
	for (i = 0; i < 2 && !(got_cq && got_qp); i++) {
		uint64_t end = xnow_ms() + WAIT_MS;

		while (!(got_cq && got_qp) && xnow_ms() < end) {
			int rc = vrdma_event_get(da, &ev);

			if (rc == 1 && ev.type == VIRTIO_IB_EVENT_CQ_ERR) {
				RT_CHECK(ev.cq == a.cq, "CQ_ERR of cqn %u", ev.id);
				got_cq = true;
			} else if (rc == 1 && ev.type == VIRTIO_IB_EVENT_QP_FATAL) {
				RT_CHECK(ev.qp == a.qp, "QP_FATAL of qpn %#x", ev.id);
				got_qp = true;
			} else if (rc == 0) {
				struct pollfd p = { vrdma_event_fd(da), POLLIN, 0 };

				poll(&p, 1, 100);
			}
		}
	}
	RT_CHECK(got_cq, "no CQ_ERR");
	RT_CHECK(got_qp, "no QP_FATAL");
	RT_EQ(vrdma_qp_query(a.qp, 0, &qa), 0);
	RT_EQ(qa.qp_state, VIRTIO_IB_QPS_ERR);
	xep_fini(&a, false);
	xep_fini(&b, false);
}

/* Errors the library catches: nothing is sent. */
#define XLOCAL(d, call, exp)                                                    \
	do {                                                                    \
		uint64_t before_ = rt_cmds(d);                                  \
		RT_EQ((call), (exp));                                           \
		RT_CHECK(rt_cmds(d) == before_, "%s sent a command", #call);    \
	} while (0)

static void t_ext_errors(struct rt_ctx *c)
{
	struct vrdma_dev *d = xdev(c, 0);
	struct vrdma_device_attr at;
	struct vrdma_srq_attr sa;
	struct vrdma_srq *srq = NULL;
	struct vrdma_mr_info mr;
	struct vrdma_mw_info mw;
	struct vrdma_sge s[2];
	struct vrdma_send_wr w;
	struct xep a;
	uint16_t pkey;

	XNEED(d, at, 0);
	RT_REQUIRE(xep_init(&a, d, 16, NULL, 0, 4) == 0, "endpoint");
	XLOCAL(d, vrdma_query_pkey(d, 1, &pkey), -EINVAL);
	XLOCAL(d, vrdma_query_pkey(d, 0, NULL), -EINVAL);
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_SRQ) {
		memset(&sa, 0, sizeof(sa));
		sa.max_sge = 1;
		XLOCAL(d, vrdma_srq_create(d, a.pdn, &sa, &srq), -EINVAL);       /* max_wr 0 */
		sa.max_wr = at.max_srq_wr + 1;
		XLOCAL(d, vrdma_srq_create(d, a.pdn, &sa, &srq), -EINVAL);
		sa.max_wr = 4;
		sa.max_sge = at.max_srq_sge + 1;
		XLOCAL(d, vrdma_srq_create(d, a.pdn, &sa, &srq), -EINVAL);
		sa.max_sge = 1;
		XLOCAL(d, vrdma_srq_create(d, 777, &sa, &srq), -EINVAL);          /* no PD */
		RT_REQUIRE(vrdma_srq_create(d, a.pdn, &sa, &srq) == 0, "srq");
		XLOCAL(d, vrdma_srq_modify(srq, &sa, 0), -EINVAL);
		XLOCAL(d, vrdma_srq_modify(srq, &sa, VIRTIO_IB_SRQ_MAX_WR), -EINVAL);
		sa.srq_limit = 5;
		XLOCAL(d, vrdma_srq_modify(srq, &sa, VIRTIO_IB_SRQ_LIMIT), -EINVAL); /* > max_wr */
		RT_EQ(vrdma_pd_free(d, a.pdn), -EBUSY);
		{
			struct vrdma_sge big[2] = { { (uintptr_t)a.buf, 8, a.mr.lkey },
						    { (uintptr_t)a.buf, 8, a.mr.lkey } };
			struct vrdma_recv_wr rw = { 1, 2, big };

			XLOCAL(d, vrdma_post_srq_recv(srq, &rw, 1), -EINVAL); /* 2 SGEs > 1 */
		}
		RT_EQ(vrdma_srq_destroy(srq), 0);
	}
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS) {
		XLOCAL(d, vrdma_mr_alloc(d, a.pdn, 0, &mr), -EINVAL);
		XLOCAL(d, vrdma_mr_alloc(d, a.pdn, at.max_fast_reg_page_list_len + 1, &mr), -EINVAL);
		XLOCAL(d, vrdma_mr_alloc(d, 777, 4, &mr), -EINVAL);
	}
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW) {
		XLOCAL(d, vrdma_mw_alloc(d, a.pdn, 0, &mw), -EINVAL);
		XLOCAL(d, vrdma_mw_alloc(d, 777, VIRTIO_IB_MW_TYPE_1, &mw), -EINVAL);
		XLOCAL(d, vrdma_mw_dealloc(d, a.mr.mrn), -EINVAL);           /* an MR */
		RT_REQUIRE(vrdma_mw_alloc(d, a.pdn, VIRTIO_IB_MW_TYPE_1, &mw) == 0, "mw");
		XLOCAL(d, vrdma_mr_dereg(d, mw.mwn), -EINVAL);               /* a window */
		RT_EQ(vrdma_pd_free(d, a.pdn), -EBUSY);
		RT_EQ(vrdma_mw_dealloc(d, mw.mwn), 0);
	}
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_RESIZE_CQ)
		XLOCAL(d, vrdma_cq_resize(a.cq, at.max_cqe + 1), -EINVAL);
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_RESIZE_MAX_WR)
		XLOCAL(d, vrdma_qp_resize(a.qp, at.max_qp_wr + 1, 1), -EINVAL);
	/* work requests: the QP is moved to ERR, where posting is allowed */
	{
		struct vrdma_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = VIRTIO_IB_QPS_ERR;
		RT_EQ(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE), 0);
	}
	s[0].addr = s[1].addr = (uintptr_t)a.buf;
	s[0].length = s[1].length = 8;
	s[0].lkey = s[1].lkey = a.mr.lkey;
	memset(&w, 0, sizeof(w));
	w.sg_list = s;
	if (at.atomic_cap) {
		w.opcode = VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP;
		w.num_sge = 2;
		RT_EQ(xpost(&a, &w), -EINVAL);
		w.num_sge = 0;
		RT_EQ(xpost(&a, &w), -EINVAL);
	}
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS) {
		w.opcode = VIRTIO_IB_WR_LOCAL_INV;
		w.num_sge = 1;
		RT_EQ(xpost(&a, &w), -EINVAL);                       /* no SGE */
		w.opcode = VIRTIO_IB_WR_REG_MR;
		w.num_sge = 0;
		w.reg.mrn = a.mr.mrn;                                /* not ALLOC_MR */
		w.reg.addr = a.buf;
		RT_EQ(xpost(&a, &w), -EINVAL);
		w.reg.mrn = 0;
		RT_EQ(xpost(&a, &w), -EINVAL);
	}
	if (at.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW) {
		memset(&w.bind_mw, 0, sizeof(w.bind_mw));
		w.opcode = VIRTIO_IB_WR_BIND_MW;
		w.send_flags = VIRTIO_IB_SEND_INLINE;
		RT_EQ(xpost(&a, &w), -EINVAL);
		w.send_flags = 0;
	}
	w.opcode = 10; /* TSO: reserved */
	RT_EQ(xpost(&a, &w), -EINVAL);
	w.opcode = 11; /* RDMA_READ_WITH_INV: reserved */
	RT_EQ(xpost(&a, &w), -EINVAL);
	xep_fini(&a, false);
}

/* Events of destroyed objects are never handed out (the destroy reads the
 * ring up to its used index and drops them). */
static void t_ext_destroy_drops_events(struct rt_ctx *c)
{
	struct vrdma_dev *da = xdev(c, 0), *db = xdev(c, 1);
	struct vrdma_device_attr at;
	struct vrdma_async_event ev;
	struct xep a, b;
	struct pollfd p;
	uint32_t i;
	int rc;

	XNEED(da, at, 0);
	RT_REQUIRE(db, "no device B");
	while (vrdma_event_get(da, &ev) == 1)
		; /* older events */
	RT_REQUIRE(xpair(&a, &b, da, db, 2, 16) == 0, "pair");
	for (i = 0; i < 12; i++)
		RT_EQ(xrdma(&a, i, VIRTIO_IB_WR_RDMA_WRITE, 0, 64, (uintptr_t)b.buf, b.mr.rkey), 1);
	/* the overflow's events are written: the fd fires (not read here) */
	p.fd = vrdma_event_fd(da);
	p.events = POLLIN;
	p.revents = 0;
	RT_REQUIRE(p.fd >= 0, "event fd");
	rc = poll(&p, 1, WAIT_MS);
	RT_REQUIRE(rc == 1, "no event written (%d)", rc);
	RT_EQ(vrdma_qp_destroy(a.qp), 0);
	a.qp = NULL;
	RT_EQ(vrdma_cq_destroy(a.cq), 0);
	a.cq = NULL;
	while ((rc = vrdma_event_get(da, &ev)) == 1)
		RT_CHECK(!ev.cq && !ev.qp && !ev.srq, "event %u of a destroyed object (id %#x)",
			 ev.type, ev.id);
	RT_EQ(rc, 0);
	xep_fini(&a, false);
	xep_fini(&b, false);
}

void rt_ext(struct rt_ctx *c)
{
	RT_RUN(c, t_ext_caps);
	RT_RUN(c, t_ext_errors);
	RT_RUN(c, t_ext_srq);
	RT_RUN(c, t_ext_atomic);
	RT_RUN(c, t_ext_fastreg);
	RT_RUN(c, t_ext_mw);
	RT_RUN(c, t_ext_resize_cq);
	RT_RUN(c, t_ext_resize_qp);
	RT_RUN(c, t_ext_events);
	RT_RUN(c, t_ext_destroy_drops_events);
}

/* ---- a device without the extension ---------------------------------------------- */

#define NOSEND(d, call, exp)                                                    \
	do {                                                                    \
		uint64_t before_ = rt_cmds(d);                                  \
		RT_EQ((call), (exp));                                           \
		RT_CHECK(rt_cmds(d) == before_, "%s sent a command", #call);    \
	} while (0)

static void t_extoff_refused(struct rt_ctx *c)
{
	struct vrdma_dev *d = xdev(c, 0);
	struct vrdma_device_attr at;
	struct vrdma_srq_attr sa = { 8, 1, 0 };
	struct vrdma_srq *srq;
	struct vrdma_mr_info mr;
	struct vrdma_mw_info mw;
	struct vrdma_async_event ev;
	struct xep a;
	uint16_t pkey;
	uint32_t pdn = 0;

	RT_REQUIRE(d, "no device");
	RT_EQ(vrdma_query_device(d, &at), 0);
	RT_CHECK(!at.ext, "ROCE_EXT negotiated");
	RT_EQ(vrdma_dev_max_rdma_srqs(d), 0);
	RT_EQ(at.device_cap_flags & ~(uint64_t)VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN, 0);
	RT_EQ(at.max_srq + at.max_mw + at.max_fast_reg_page_list_len + at.atomic_cap, 0);
	RT_REQUIRE(xep_init(&a, d, 16, NULL, 0, 4) == 0, "endpoint");
	pdn = a.pdn;
	NOSEND(d, vrdma_query_pkey(d, 0, &pkey), -EOPNOTSUPP);
	NOSEND(d, vrdma_srq_create(d, pdn, &sa, &srq), -EOPNOTSUPP);
	NOSEND(d, vrdma_mr_alloc(d, pdn, 4, &mr), -EOPNOTSUPP);
	NOSEND(d, vrdma_mw_alloc(d, pdn, VIRTIO_IB_MW_TYPE_1, &mw), -EOPNOTSUPP);
	NOSEND(d, vrdma_mw_dealloc(d, 1), -EOPNOTSUPP);
	NOSEND(d, vrdma_event_fd(d), -EOPNOTSUPP);
	NOSEND(d, vrdma_event_get(d, &ev), -EOPNOTSUPP);
	NOSEND(d, vrdma_cq_resize(a.cq, 64), -EOPNOTSUPP);
	NOSEND(d, vrdma_qp_resize(a.qp, 8, 8), -EOPNOTSUPP);
	NOSEND(d, vrdma_mr_reg(d, pdn, a.buf, PG, (uintptr_t)a.buf,
			       VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC, &mr),
	       -EOPNOTSUPP);
	NOSEND(d, vrdma_mr_reg(d, pdn, a.buf, PG, (uintptr_t)a.buf,
			       VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND, &mr),
	       -EOPNOTSUPP);
	{
		struct vrdma_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = VIRTIO_IB_QPS_INIT;
		qa.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
		NOSEND(d, vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS),
		       -EOPNOTSUPP);
		qa.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE;
		RT_EQ(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS), 0);
		qa.qp_state = VIRTIO_IB_QPS_ERR; /* posting is allowed in ERR */
		RT_EQ(vrdma_qp_modify(a.qp, &qa, VIRTIO_IB_QP_STATE), 0);
	}
	{
		static const uint8_t ops[] = {
			VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD,
			VIRTIO_IB_WR_LOCAL_INV, VIRTIO_IB_WR_BIND_MW, VIRTIO_IB_WR_SEND_WITH_INV,
			VIRTIO_IB_WR_REG_MR,
		};
		struct vrdma_sge s = { (uintptr_t)a.buf, 8, a.mr.lkey };

		for (unsigned i = 0; i < sizeof(ops); i++) {
			struct vrdma_send_wr w;

			memset(&w, 0, sizeof(w));
			w.opcode = ops[i];
			w.num_sge = (ops[i] == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
				     ops[i] == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD ||
				     ops[i] == VIRTIO_IB_WR_SEND_WITH_INV) ? 1 : 0;
			w.sg_list = &s;
			RT_CHECK(vrdma_post_send(a.qp, &w, 1) == -EOPNOTSUPP, "opcode %u accepted",
				 ops[i]);
		}
	}
	xep_fini(&a, false);
}

void rt_extoff(struct rt_ctx *c)
{
	RT_RUN(c, t_extoff_refused);
}
