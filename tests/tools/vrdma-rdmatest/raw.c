// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "raw": every RoCE control command as raw bytes through the
 * real control queue of device B (vrdma_ctrl_cmd), success and error paths.
 * An error must be VIRTIO_NET_ERR and leave nothing behind: checked by what
 * the device does next (a PD or CQ that took no reference can be destroyed,
 * a QP's attributes read back unchanged, ...).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define PG 4096
#define OK(call)  RT_EQ((call), 0)
#define ERR(call) RT_EQ((call), 1)

static struct vrdma_dev *dev_b(struct rt_ctx *c)
{
	const char *s = c->sock[1] ? c->sock[1] : c->sock[0];
	int i = c->sock[1] ? 1 : 0;

	if (!c->dev[i])
		c->dev[i] = rt_open(s);
	return c->dev[i];
}

/* ---- object helpers (0 on failure) ---- */

static uint32_t pd_new(struct vrdma_dev *d)
{
	struct virtio_rdma_ack_create_pd a = { 0 };

	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, &a, sizeof(a)) == 0 ?
		       le32toh(a.pdn) : 0;
}

static int pd_del(struct vrdma_dev *d, uint32_t pdn)
{
	struct virtio_rdma_cmd_destroy_pd c = { htole32(pdn) };

	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_PD, &c, sizeof(c), NULL, 0);
}

/* cqn + 1, or 0 */
static uint32_t cq_new(struct vrdma_dev *d, uint32_t cqe)
{
	struct virtio_rdma_cmd_create_cq c = { htole32(cqe) };
	struct virtio_rdma_ack_create_cq a = { 0 };

	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, &c, sizeof(c), &a, sizeof(a)) == 0 ?
		       le32toh(a.cqn) + 1 : 0;
}

static int cq_del(struct vrdma_dev *d, uint32_t cqn)
{
	struct virtio_rdma_cmd_destroy_cq c = { htole32(cqn) };

	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, &c, sizeof(c), NULL, 0);
}

static void qp_cmd(struct virtio_rdma_cmd_create_qp *c, uint32_t pdn, uint8_t type,
		   uint32_t scq, uint32_t rcq)
{
	memset(c, 0, sizeof(*c));
	c->pdn = htole32(pdn);
	c->qp_type = type;
	c->send_cqn = htole32(scq);
	c->recv_cqn = htole32(rcq);
	c->cap.max_send_wr = htole32(16);
	c->cap.max_recv_wr = htole32(16);
	c->cap.max_send_sge = htole32(2);
	c->cap.max_recv_sge = htole32(2);
	c->cap.max_inline_data = htole32(64);
}

/* qpn, or 0 */
static uint32_t qp_new(struct vrdma_dev *d, uint32_t pdn, uint8_t type, uint32_t scq,
		       uint32_t rcq)
{
	struct virtio_rdma_cmd_create_qp c;
	struct virtio_rdma_ack_create_qp a = { 0 };

	qp_cmd(&c, pdn, type, scq, rcq);
	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c), &a, sizeof(a)) == 0 ?
		       le32toh(a.qpn) : 0;
}

static int qp_del(struct vrdma_dev *d, uint32_t qpn)
{
	struct virtio_rdma_cmd_destroy_qp c = { htole32(qpn) };

	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &c, sizeof(c), NULL, 0);
}

static int qp_query(struct vrdma_dev *d, uint32_t qpn, struct virtio_rdma_ack_query_qp *q)
{
	struct virtio_rdma_cmd_query_qp c = { htole32(qpn), 0 };

	memset(q, 0, sizeof(*q));
	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_QP, &c, sizeof(c), q, sizeof(*q));
}

static int modify(struct vrdma_dev *d, struct virtio_rdma_cmd_modify_qp *m, uint32_t qpn,
		  uint32_t mask)
{
	m->qpn = htole32(qpn);
	m->attr_mask = htole32(mask);
	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_MODIFY_QP, m, sizeof(*m), NULL, 0);
}

/* ---- tests ---- */

static void t_raw_framing(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_ack_query_device qd;
	struct virtio_rdma_ack_query_port qp;
	uint8_t junk[8] = { 0 };

	RT_REQUIRE(d, "no device");
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, &qd, sizeof(qd)));
	RT_EQ(le32toh(qd.max_qp_wr), 16384);
	RT_EQ(le64toh(qd.page_size_cap), 4096);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, &qp, sizeof(qp)));
	RT_EQ(le32toh(qp.gid_tbl_len), 16);
	/* unknown commands */
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_NUM_CMDS, NULL, 0, NULL, 0));
	ERR(rt_raw(d, 255, NULL, 0, NULL, 0));
	/* data where none is expected, ack space too small */
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, junk, 1, &qd, sizeof(qd)));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, &qd, sizeof(qd) - 1));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, junk, 4, junk, 4));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, junk, 3));
	/* truncated and over-long command data */
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, junk, 3, junk, 4));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, junk, 5, junk, 4));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, junk, 4, NULL, 0));
}

static void t_raw_pd(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_get_dma_mr g;
	struct virtio_rdma_ack_get_dma_mr ga;
	struct virtio_rdma_cmd_dereg_mr dm;
	uint32_t p1, p2;

	RT_REQUIRE(d, "no device");
	p1 = pd_new(d);
	p2 = pd_new(d);
	RT_CHECK(p1 && p2 && p1 != p2, "pdns %u %u", p1, p2);
	ERR(pd_del(d, 0));
	ERR(pd_del(d, 16385));
	ERR(pd_del(d, 0xffffffffu));
	/* in use by a DMA MR: refused, and the PD still works */
	g.pdn = htole32(p1);
	g.access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	RT_EQ(ga.rkey, 0);
	ERR(pd_del(d, p1));
	dm.mrn = ga.mrn;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	/* GET_DMA_MR errors take no reference */
	g.access_flags = htole32(VIRTIO_IB_ACCESS_REMOTE_READ);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	g.access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	g.access_flags = htole32(1u << 5);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	g.pdn = htole32(9999);
	g.access_flags = 0;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	OK(pd_del(d, p1));
	ERR(pd_del(d, p1)); /* stale */
	g.pdn = htole32(p1);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga, sizeof(ga)));
	OK(pd_del(d, p2));
}

/* REG_USER_MR command for npages pages starting at page0 (identity GPAs). */
static struct virtio_rdma_cmd_reg_user_mr *mr_cmd(uint32_t pdn, uint32_t access, uint64_t va,
						  uint64_t len, uint32_t npages, uint64_t page0,
						  size_t *clen)
{
	struct virtio_rdma_cmd_reg_user_mr *m;

	*clen = sizeof(*m) + (size_t)npages * 8;
	m = calloc(1, *clen);
	if (!m)
		return NULL;
	m->pdn = htole32(pdn);
	m->access_flags = htole32(access);
	m->virt_addr = htole64(va);
	m->length = htole64(len);
	m->npages = htole32(npages);
	for (uint32_t i = 0; i < npages; i++)
		m->pages[i] = htole64(page0 + (uint64_t)i * PG);
	return m;
}

static int reg(struct vrdma_dev *d, struct virtio_rdma_cmd_reg_user_mr *m, size_t clen,
	       struct virtio_rdma_ack_reg_user_mr *a)
{
	return rt_raw(d, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, m, clen, a, sizeof(*a));
}

static void t_raw_mr(struct rt_ctx *c)
{
	const uint32_t all = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_reg_user_mr *m;
	struct virtio_rdma_ack_reg_user_mr a, a2;
	struct virtio_rdma_cmd_dereg_mr dm;
	struct vrdma_mem_share *sh = NULL;
	uint8_t *buf, *priv;
	uint64_t b;
	uint32_t pdn;
	size_t cl;

	RT_REQUIRE(d, "no device");
	buf = aligned_alloc(PG, 4 * PG);
	priv = aligned_alloc(PG, 4 * PG);
	RT_REQUIRE(buf && priv, "alloc");
	memset(priv, 1, 4 * PG);
	RT_REQUIRE(vrdma_mem_share(d, buf, 4 * PG, &sh) == 0, "share");
	b = (uintptr_t)buf;
	pdn = pd_new(d);
	RT_REQUIRE(pdn, "pd");

	/* success: 3 pages at an offset, remote access gives an rkey */
	m = mr_cmd(pdn, all, b + 100, 2 * PG, 3, b, &cl);
	RT_REQUIRE(m, "alloc");
	OK(reg(d, m, cl, &a));
	RT_CHECK(a.mrn && a.lkey && a.rkey && a.lkey != a.rkey, "mrn %u lkey %#x rkey %#x",
		 a.mrn, a.lkey, a.rkey);
	RT_EQ(le32toh(a.lkey) >> 16, le32toh(a.mrn));
	/* again: a new MR with other keys */
	OK(reg(d, m, cl, &a2));
	RT_CHECK(a2.mrn != a.mrn && a2.lkey != a.lkey, "second MR");
	ERR(pd_del(d, pdn));
	dm.mrn = a2.mrn;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	free(m);
	/* local only: rkey 0 */
	m = mr_cmd(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE, b, PG, 1, b, &cl);
	OK(reg(d, m, cl, &a2));
	RT_EQ(a2.rkey, 0);
	dm.mrn = a2.mrn;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	free(m);

	/* errors */
	m = mr_cmd(pdn, all, b, 2 * PG, 2, b, &cl);
	ERR(reg(d, m, cl - 8, &a2));                       /* data for 1 page */
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, m, cl, &a2, sizeof(a2) - 1)); /* ack room */
	m->pdn = htole32(777);
	ERR(reg(d, m, cl, &a2));                           /* no such PD */
	m->pdn = htole32(pdn);
	m->access_flags = htole32(VIRTIO_IB_ACCESS_REMOTE_WRITE);
	ERR(reg(d, m, cl, &a2));                           /* RW without LW */
	m->access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE | (1u << 5));
	ERR(reg(d, m, cl, &a2));                           /* unknown bit */
	m->access_flags = htole32(all);
	m->length = htole64(3 * PG);
	ERR(reg(d, m, cl, &a2));                           /* npages != span */
	m->length = htole64(2 * PG);
	m->virt_addr = htole64(UINT64_MAX - 100);
	ERR(reg(d, m, cl, &a2));                           /* wraps */
	m->virt_addr = htole64(b);
	m->pages[1] = htole64(b + PG + 8);
	ERR(reg(d, m, cl, &a2));                           /* misaligned page */
	m->pages[1] = htole64((uintptr_t)priv);
	ERR(reg(d, m, cl, &a2));                           /* page not shared */
	m->pages[1] = htole64(0x1000);
	ERR(reg(d, m, cl, &a2));                           /* page nowhere */
	m->pages[1] = htole64(b + 3 * PG + PG);
	ERR(reg(d, m, cl, &a2));                           /* just past the share */
	free(m);
	m = mr_cmd(pdn, all, b, 0, 0, b, &cl);
	/* length 0: valid with npages 0 */
	if (reg(d, m, cl, &a2) == 0) {
		dm.mrn = a2.mrn;
		OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	} else {
		RT_CHECK(0, "zero-length MR refused");
	}
	free(m);
	/* above max_mr_size (4 GiB): the page list is long, the answer ERR */
	m = mr_cmd(pdn, all, 0, (1ull << 32) + PG, (1u << 20) + 1, b, &cl);
	if (m)
		ERR(reg(d, m, cl, &a2));
	free(m);
	ERR(pd_del(d, pdn)); /* still the first MR */
	dm.mrn = a.mrn;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	dm.mrn = htole32(0);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	dm.mrn = htole32(65536);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL, 0));
	OK(pd_del(d, pdn)); /* every failed registration left no reference */
	vrdma_mem_unshare(sh);
	free(buf);
	free(priv);
}

static void t_raw_cq(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_req_notify n;
	uint32_t q1, q2, pdn, qpn;

	RT_REQUIRE(d, "no device");
	q1 = cq_new(d, 1);
	q2 = cq_new(d, 32768);
	RT_CHECK(q1 && q2 && q1 != q2, "cqs");
	RT_CHECK(q1 - 1 < vrdma_dev_max_rdma_cqs(d), "cqn %u", q1 - 1);
	RT_EQ(cq_new(d, 0), 0);
	RT_EQ(cq_new(d, (1u << 20) + 1), 0);
	ERR(cq_del(d, vrdma_dev_max_rdma_cqs(d)));
	ERR(cq_del(d, 0xffffffffu));
	/* REQ_NOTIFY_CQ */
	n.cqn = htole32(q1 - 1);
	n.flags = htole32(VIRTIO_IB_NOTIFY_NEXT_COMPLETION);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	n.flags = htole32(VIRTIO_IB_NOTIFY_SOLICITED);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	n.flags = 0;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	n.flags = htole32(4);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	n.cqn = htole32(vrdma_dev_max_rdma_cqs(d) + 3);
	n.flags = htole32(VIRTIO_IB_NOTIFY_SOLICITED);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	/* in use by a QP */
	pdn = pd_new(d);
	qpn = qp_new(d, pdn, VIRTIO_IB_QPT_RC, q1 - 1, q2 - 1);
	RT_CHECK(qpn, "qp");
	ERR(cq_del(d, q1 - 1));
	ERR(cq_del(d, q2 - 1));
	OK(qp_del(d, qpn));
	OK(cq_del(d, q1 - 1));
	ERR(cq_del(d, q1 - 1)); /* stale */
	n.cqn = htole32(q1 - 1);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &n, sizeof(n), NULL, 0));
	OK(cq_del(d, q2 - 1));
	OK(pd_del(d, pdn));
}

static void t_raw_qp(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_create_qp cq;
	struct virtio_rdma_ack_create_qp a;
	struct virtio_rdma_ack_query_qp q;
	uint32_t pdn, s, r, rc, uc, ud, gsi, gsi2;

	RT_REQUIRE(d, "no device");
	pdn = pd_new(d);
	s = cq_new(d, 16) - 1;
	r = cq_new(d, 16) - 1;
	rc = qp_new(d, pdn, VIRTIO_IB_QPT_RC, s, r);
	uc = qp_new(d, pdn, VIRTIO_IB_QPT_UC, s, r);
	ud = qp_new(d, pdn, VIRTIO_IB_QPT_UD, s, s);
	gsi = qp_new(d, pdn, VIRTIO_IB_QPT_GSI, s, r);
	RT_CHECK(rc && uc && ud, "qps %#x %#x %#x", rc, uc, ud);
	RT_EQ(gsi, VRDMA_GSI_QPN);
	RT_CHECK((rc & 0x3fff) >= 2 && (rc & 0x3fff) < vrdma_dev_max_rdma_qps(d), "index");
	gsi2 = qp_new(d, pdn, VIRTIO_IB_QPT_GSI, s, r);
	RT_EQ(gsi2, 0);
	OK(qp_query(d, rc, &q));
	RT_EQ(q.qp_state, VIRTIO_IB_QPS_RESET);
	RT_EQ(le32toh(q.cap.max_send_wr), 16);
	RT_EQ(le32toh(q.cap.max_inline_data), 64);
	/* errors */
	qp_cmd(&cq, pdn, VIRTIO_IB_QPT_SMI, s, r);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.qp_type = 5;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.qp_type = VIRTIO_IB_QPT_RC;
	cq.sq_sig_all = 2;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.sq_sig_all = 1;
	cq.pdn = htole32(5000);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.pdn = htole32(pdn);
	cq.send_cqn = htole32(vrdma_dev_max_rdma_cqs(d));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.send_cqn = htole32(s);
	cq.recv_cqn = htole32(77777);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.recv_cqn = htole32(r);
	cq.cap.max_send_wr = htole32(16385);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.cap.max_send_wr = htole32(16);
	cq.cap.max_recv_wr = htole32(16385);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.cap.max_recv_wr = htole32(16);
	cq.cap.max_send_sge = htole32(33);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.cap.max_send_sge = htole32(2);
	cq.cap.max_recv_sge = htole32(33);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	cq.cap.max_recv_sge = htole32(2);
	cq.cap.max_inline_data = htole32(513);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &a, sizeof(a)));
	/* QUERY / DESTROY of QPNs that do not exist, including a stale
	 * generation of a live index */
	ERR(qp_query(d, rc ^ (1u << 14), &q));
	ERR(qp_query(d, 0, &q));
	ERR(qp_query(d, 0xffffff, &q));
	{
		struct virtio_rdma_cmd_query_qp qq = { htole32(rc), htole32(1u << 17) };

		ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_QP, &qq, sizeof(qq), &q, sizeof(q)));
	}
	ERR(qp_del(d, rc ^ (1u << 14)));
	ERR(qp_del(d, 0));
	ERR(pd_del(d, pdn));
	OK(qp_del(d, rc));
	ERR(qp_del(d, rc));
	ERR(qp_query(d, rc, &q));
	OK(qp_del(d, uc));
	OK(qp_del(d, ud));
	OK(qp_del(d, gsi));
	/* the failed creations took no reference */
	OK(cq_del(d, s));
	OK(cq_del(d, r));
	OK(pd_del(d, pdn));
}

static void t_raw_modify(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_modify_qp m;
	struct virtio_rdma_ack_query_qp before, after;
	uint32_t pdn, s, qpn, ud;

	RT_REQUIRE(d, "no device");
	pdn = pd_new(d);
	s = cq_new(d, 16) - 1;
	qpn = qp_new(d, pdn, VIRTIO_IB_QPT_RC, s, s);
	ud = qp_new(d, pdn, VIRTIO_IB_QPT_UD, s, s);
	RT_REQUIRE(qpn && ud, "qp");
	/* RESET -> INIT */
	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_INIT;
	m.qp_access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE);
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE));       /* ACCESS_FLAGS required */
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS |
				       VIRTIO_IB_QP_QKEY)); /* QKEY not allowed on RC */
	m.qp_access_flags = htole32(1u << 5);
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS));
	m.qp_access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE);
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS | (1u << 17)));
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS | VIRTIO_IB_QP_CAP));
	ERR(modify(d, &m, qpn ^ (1u << 14), VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS));
	m.qp_state = 7;
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS));
	m.qp_state = VIRTIO_IB_QPS_RTR;
	ERR(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS));
	m.qp_state = VIRTIO_IB_QPS_INIT;
	OK(modify(d, &m, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS));
	/* INIT -> RTR with bad values: each refused, nothing changed */
	OK(qp_query(d, qpn, &before));
	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_RTR;
	m.path_mtu = VIRTIO_IB_MTU_1024;
	m.dest_qp_num = htole32(0x123);
	m.rq_psn = htole32(0x456);
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 12;
	m.ah_attr.grh.dgid[0] = 0xfe;
	m.ah_attr.grh.dgid[1] = 0x80;
	m.ah_attr.grh.dgid[15] = 7;
	m.ah_attr.grh.hop_limit = 64;
	m.ah_attr.dmac[0] = 0x02;
	m.ah_attr.dmac[5] = 0x07;
	const uint32_t rtr = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
			     VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN |
			     VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER;
	ERR(modify(d, &m, qpn, rtr & ~VIRTIO_IB_QP_AV));
	m.path_mtu = 6;
	ERR(modify(d, &m, qpn, rtr));
	m.path_mtu = VIRTIO_IB_MTU_4096; /* above the 1500-byte port's 1024 */
	ERR(modify(d, &m, qpn, rtr));
	m.path_mtu = VIRTIO_IB_MTU_1024;
	m.rq_psn = htole32(0x1000000);
	ERR(modify(d, &m, qpn, rtr));
	m.rq_psn = htole32(0x456);
	m.dest_qp_num = htole32(0x1000000);
	ERR(modify(d, &m, qpn, rtr));
	m.dest_qp_num = htole32(0x123);
	m.min_rnr_timer = 32;
	ERR(modify(d, &m, qpn, rtr));
	m.min_rnr_timer = 12;
	m.max_dest_rd_atomic = 200;
	ERR(modify(d, &m, qpn, rtr));
	m.max_dest_rd_atomic = 1;
	m.ah_attr.grh.sgid_index = 9; /* empty entry */
	ERR(modify(d, &m, qpn, rtr));
	m.ah_attr.grh.sgid_index = 0;
	m.ah_attr.grh.flow_label = htole32(0x100000);
	ERR(modify(d, &m, qpn, rtr));
	m.ah_attr.grh.flow_label = 0;
	m.ah_attr.grh.dgid[0] = 0xff; /* multicast path */
	ERR(modify(d, &m, qpn, rtr));
	m.ah_attr.grh.dgid[0] = 0xfe;
	m.ah_attr.dmac[0] = 0x01; /* multicast MAC */
	ERR(modify(d, &m, qpn, rtr));
	m.ah_attr.dmac[0] = 0x02;
	m.cur_qp_state = VIRTIO_IB_QPS_RTS; /* CUR_STATE not allowed INIT->RTR */
	ERR(modify(d, &m, qpn, rtr | VIRTIO_IB_QP_CUR_STATE));
	m.cur_qp_state = 0;
	OK(qp_query(d, qpn, &after));
	RT_CHECK(!memcmp(&before, &after, sizeof(before)), "failed MODIFY_QP changed the QP");
	OK(modify(d, &m, qpn, rtr));
	OK(qp_query(d, qpn, &after));
	RT_EQ(after.qp_state, VIRTIO_IB_QPS_RTR);
	RT_EQ(le32toh(after.dest_qp_num), 0x123);
	RT_EQ(le32toh(after.rq_psn), 0x456);
	RT_EQ(after.min_rnr_timer, 12);
	RT_EQ(after.path_mtu, VIRTIO_IB_MTU_1024);
	RT_CHECK(!memcmp(after.ah_attr.grh.dgid, m.ah_attr.grh.dgid, 16), "dgid");
	/* RTR -> RTS: timeout 32, retry 8 refused; CUR_STATE must match */
	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_RTS;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.sq_psn = htole32(0x789);
	m.max_rd_atomic = 1;
	const uint32_t rts = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT |
			     VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_SQ_PSN |
			     VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
	m.timeout = 32;
	ERR(modify(d, &m, qpn, rts));
	m.timeout = 14;
	m.retry_cnt = 8;
	ERR(modify(d, &m, qpn, rts));
	m.retry_cnt = 7;
	m.cur_qp_state = VIRTIO_IB_QPS_INIT;
	ERR(modify(d, &m, qpn, rts | VIRTIO_IB_QP_CUR_STATE));
	m.cur_qp_state = VIRTIO_IB_QPS_RTR;
	OK(modify(d, &m, qpn, rts | VIRTIO_IB_QP_CUR_STATE));
	OK(qp_query(d, qpn, &after));
	RT_EQ(after.qp_state, VIRTIO_IB_QPS_RTS);
	RT_EQ(le32toh(after.sq_psn), 0x789);
	RT_EQ(after.timeout, 14);
	/* UD: controlled Q_Key only on GSI */
	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_INIT;
	m.qkey = htole32(0x80000000u);
	ERR(modify(d, &m, ud, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY));
	m.qkey = htole32(0x11111111u);
	ERR(modify(d, &m, ud, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS)); /* needs QKEY */
	OK(modify(d, &m, ud, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY));
	/* -> RESET returns defaults */
	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_RESET;
	OK(modify(d, &m, qpn, VIRTIO_IB_QP_STATE));
	OK(qp_query(d, qpn, &after));
	RT_EQ(after.qp_state, VIRTIO_IB_QPS_RESET);
	RT_EQ(after.dest_qp_num, 0);
	RT_EQ(after.sq_psn, 0);
	OK(qp_del(d, qpn));
	OK(qp_del(d, ud));
	OK(cq_del(d, s));
	OK(pd_del(d, pdn));
}

static void t_raw_ah(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_create_ah ca;
	struct virtio_rdma_ack_create_ah aa, ab, ax;
	struct virtio_rdma_cmd_destroy_ah da;
	uint32_t p1, p2;

	RT_REQUIRE(d, "no device");
	p1 = pd_new(d);
	p2 = pd_new(d);
	memset(&ca, 0, sizeof(ca));
	ca.pdn = htole32(p1);
	ca.ah_attr.grh.dgid[0] = 0xfe;
	ca.ah_attr.grh.dgid[1] = 0x80;
	ca.ah_attr.grh.dgid[15] = 3;
	ca.ah_attr.grh.hop_limit = 1;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &aa, sizeof(aa)));
	RT_CHECK(aa.ah != 0, "handle");
	ca.ah_attr.grh.dgid[0] = 0xff; /* multicast is fine for an AH */
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ab, sizeof(ab)));
	ca.ah_attr.grh.sgid_index = 16;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	ca.ah_attr.grh.sgid_index = 4;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	ca.ah_attr.grh.sgid_index = 0;
	ca.ah_attr.grh.flow_label = htole32(0x100000);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	ca.ah_attr.grh.flow_label = 0;
	memset(ca.ah_attr.grh.dgid, 0, 16);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	ca.ah_attr.grh.dgid[10] = 0xff; /* IPv4 destination, IPv6 source */
	ca.ah_attr.grh.dgid[11] = 0xff;
	ca.ah_attr.grh.dgid[12] = 10;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	ca.pdn = htole32(6000);
	ca.ah_attr.grh.dgid[10] = 0;
	ca.ah_attr.grh.dgid[11] = 0;
	ca.ah_attr.grh.dgid[0] = 0xfe;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &ax, sizeof(ax)));
	/* another PD's AH */
	da.pdn = htole32(p2);
	da.ah = aa.ah;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da), NULL, 0));
	da.pdn = htole32(p1);
	da.ah = htole32(0);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da), NULL, 0));
	OK(pd_del(d, p2)); /* no AH took a reference on p2 */
	ERR(pd_del(d, p1));
	da.ah = aa.ah;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da), NULL, 0));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da), NULL, 0));
	da.ah = ab.ah;
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da), NULL, 0));
	OK(pd_del(d, p1));
}

static void t_raw_gid(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_b(c);
	struct virtio_rdma_cmd_add_gid ag;
	struct virtio_rdma_cmd_del_gid dg;

	RT_REQUIRE(d, "no device");
	memset(&ag, 0, sizeof(ag));
	ag.gid[0] = 0x20;
	ag.gid[15] = 1;
	ag.index = htole16(3);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0));
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0)); /* same */
	ag.gid[15] = 2;
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0)); /* in use */
	ag.index = htole16(0);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0));
	ag.index = htole16(1);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0));
	ag.index = htole16(16);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0));
	ag.index = htole16(4);
	memset(ag.gid, 0, 16);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0));
	dg.index = htole16(4);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0)); /* empty */
	dg.index = htole16(0);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0));
	dg.index = htole16(1);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0));
	dg.index = htole16(16);
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0));
	dg.index = htole16(3);
	OK(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0));
	ERR(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEL_GID, &dg, sizeof(dg), NULL, 0));
}

void rt_ctrl_raw(struct rt_ctx *c)
{
	RT_RUN(c, t_raw_framing);
	RT_RUN(c, t_raw_pd);
	RT_RUN(c, t_raw_mr);
	RT_RUN(c, t_raw_cq);
	RT_RUN(c, t_raw_qp);
	RT_RUN(c, t_raw_modify);
	RT_RUN(c, t_raw_ah);
	RT_RUN(c, t_raw_gid);
}
