// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma: the virtio-rdma device model (virtio device id 42, the standalone
 * device of "[RFC] Virtio RDMA"; wire ABI include/vrdma/virtio_rdma.h,
 * docs/spec.md "The virtio-rdma device").
 *
 * The RDMA part (rdma_*.c) keeps one set of objects, checks and queue
 * bookkeeping and speaks the virtio-net RoCE command structures; this file
 * is the codec to the other device (docs/design.md "libvrdma device
 * models"):
 *  - commands: each virtio-net RoCE command becomes its virtio-rdma
 *    counterpart (QUERY_DEVICE comes from the configuration space; CREATE_AH
 *    / DESTROY_AH stay in the library, the address vector travels in each
 *    UD work request; ALLOC_MR is CREATE_MR; REG_USER_MR's page array goes
 *    to shared memory; attribute masks, access flags and address vectors in
 *    the IB layout); cqn is the completion virtqueue's index (the library's
 *    cqn + 1);
 *  - rings: control 0, CQ cqn on ring cqn + 1, QP index i on the pair
 *    N + 2i - 1 / N + 2i;
 *  - elements: the 75-byte send element (inline data after it), the
 *    12-byte receive header, the 38-byte completion with IB status and
 *    opcode numbers (decoded to the VIRTIO_IB_* values of the API);
 *  - fast registration: MAP_MR_SG, then the REG_MR work request with the
 *    MR, key and access.
 */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"
#include "libvrdma/virtio_rdma_codec.h"

#define PORT 1

/* Address handles kept by the library (a fixed table: the data path reads
 * it without the device lock). */
#define VRD_MAX_AH 4096u

/* ---- values ----------------------------------------------------------------- */

/* VIRTIO_IB_QP_* (bit b) -> the IB attribute mask bit. */
static const uint32_t attr_to_ib[17] = {
	VIRTIO_RDMA_DEV_QP_STATE,              /* STATE */
	VIRTIO_RDMA_DEV_QP_CUR_STATE,          /* CUR_STATE */
	VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS,       /* ACCESS_FLAGS */
	VIRTIO_RDMA_DEV_QP_QKEY,               /* QKEY */
	VIRTIO_RDMA_DEV_QP_AV,                 /* AV */
	VIRTIO_RDMA_DEV_QP_PATH_MTU,           /* PATH_MTU */
	VIRTIO_RDMA_DEV_QP_TIMEOUT,            /* TIMEOUT */
	VIRTIO_RDMA_DEV_QP_RETRY_CNT,          /* RETRY_CNT */
	VIRTIO_RDMA_DEV_QP_RNR_RETRY,          /* RNR_RETRY */
	VIRTIO_RDMA_DEV_QP_RQ_PSN,             /* RQ_PSN */
	VIRTIO_RDMA_DEV_QP_MAX_QP_RD_ATOMIC,   /* MAX_QP_RD_ATOMIC */
	VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER,      /* MIN_RNR_TIMER */
	VIRTIO_RDMA_DEV_QP_SQ_PSN,             /* SQ_PSN */
	VIRTIO_RDMA_DEV_QP_MAX_DEST_RD_ATOMIC, /* MAX_DEST_RD_ATOMIC */
	VIRTIO_RDMA_DEV_QP_CAP,                /* CAP */
	VIRTIO_RDMA_DEV_QP_DEST_QPN,           /* DEST_QPN */
	VIRTIO_RDMA_DEV_QP_RATE_LIMIT,         /* RATE_LIMIT */
};

uint32_t vrdma_vrd_attr_mask(uint32_t mask)
{
	uint32_t out = 0, b;

	for (b = 0; b < 17; b++)
		if (mask & (1u << b))
			out |= attr_to_ib[b];
	return out;
}

uint8_t vrdma_vrd_wc_status(uint8_t ib)
{
	switch (ib) {
	case VIRTIO_RDMA_DEV_WC_SUCCESS: return VIRTIO_IB_WC_SUCCESS;
	case VIRTIO_RDMA_DEV_WC_LOC_LEN_ERR: return VIRTIO_IB_WC_LOC_LEN_ERR;
	case VIRTIO_RDMA_DEV_WC_LOC_QP_OP_ERR: return VIRTIO_IB_WC_LOC_QP_OP_ERR;
	case VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR: return VIRTIO_IB_WC_LOC_PROT_ERR;
	case VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR: return VIRTIO_IB_WC_WR_FLUSH_ERR;
	case VIRTIO_RDMA_DEV_WC_MW_BIND_ERR: return VIRTIO_IB_WC_MW_BIND_ERR;
	case VIRTIO_RDMA_DEV_WC_BAD_RESP_ERR: return VIRTIO_IB_WC_BAD_RESP_ERR;
	case VIRTIO_RDMA_DEV_WC_LOC_ACCESS_ERR: return VIRTIO_IB_WC_LOC_ACCESS_ERR;
	case VIRTIO_RDMA_DEV_WC_REM_INV_REQ_ERR: return VIRTIO_IB_WC_REM_INV_REQ_ERR;
	case VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR: return VIRTIO_IB_WC_REM_ACCESS_ERR;
	case VIRTIO_RDMA_DEV_WC_REM_OP_ERR: return VIRTIO_IB_WC_REM_OP_ERR;
	case VIRTIO_RDMA_DEV_WC_RETRY_EXC_ERR: return VIRTIO_IB_WC_RETRY_EXC_ERR;
	case VIRTIO_RDMA_DEV_WC_RNR_RETRY_EXC_ERR: return VIRTIO_IB_WC_RNR_RETRY_EXC_ERR;
	case VIRTIO_RDMA_DEV_WC_REM_ABORT_ERR: return VIRTIO_IB_WC_REM_ABORT_ERR;
	case VIRTIO_RDMA_DEV_WC_FATAL_ERR: return VIRTIO_IB_WC_FATAL_ERR;
	case VIRTIO_RDMA_DEV_WC_RESP_TIMEOUT_ERR: return VIRTIO_IB_WC_RESP_TIMEOUT_ERR;
	default: return VIRTIO_IB_WC_GENERAL_ERR; /* EEC / RDD errors, unknown */
	}
}

/* 0xff: not an opcode of the API (the completion is reported with it). */
uint8_t vrdma_vrd_wc_opcode(uint8_t ib)
{
	switch (ib) {
	case VIRTIO_RDMA_DEV_WC_OP_SEND: return VIRTIO_IB_WC_SEND;
	case VIRTIO_RDMA_DEV_WC_OP_RDMA_WRITE: return VIRTIO_IB_WC_RDMA_WRITE;
	case VIRTIO_RDMA_DEV_WC_OP_RDMA_READ: return VIRTIO_IB_WC_RDMA_READ;
	case VIRTIO_RDMA_DEV_WC_OP_COMP_SWAP: return VIRTIO_IB_WC_COMP_SWAP;
	case VIRTIO_RDMA_DEV_WC_OP_FETCH_ADD: return VIRTIO_IB_WC_FETCH_ADD;
	case VIRTIO_RDMA_DEV_WC_OP_BIND_MW: return VIRTIO_IB_WC_BIND_MW;
	case VIRTIO_RDMA_DEV_WC_OP_LOCAL_INV: return VIRTIO_IB_WC_LOCAL_INV;
	case VIRTIO_RDMA_DEV_WC_OP_REG_MR: return VIRTIO_IB_WC_REG_MR;
	case VIRTIO_RDMA_DEV_WC_OP_RECV: return VIRTIO_IB_WC_RECV;
	case VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM: return VIRTIO_IB_WC_RECV_RDMA_WITH_IMM;
	default: return 0xff;
	}
}

/* ---- address vectors ------------------------------------------------------- */

void vrdma_vrd_ah_to_wire(const struct vrdma_ah_attr *a, struct virtio_rdma_dev_ah_attr *w)
{
	memset(w, 0, sizeof(*w));
	memcpy(w->grh.dgid, a->grh.dgid, 16);
	put_le32(&w->grh.flow_label, a->grh.flow_label);
	w->grh.sgid_index = a->grh.sgid_index;
	w->grh.hop_limit = a->grh.hop_limit;
	w->grh.traffic_class = a->grh.traffic_class;
	w->sl = a->sl;
	w->port_num = PORT;
	w->ah_flags = VIRTIO_RDMA_DEV_AH_GRH;
	memcpy(w->dmac, a->dmac, 6);
}

static void ah_from_wire(const struct virtio_rdma_dev_ah_attr *w, struct virtio_rdma_ah_attr *a)
{
	virtio_rdma_dev_ah_to_roce(w, a);
	a->sl = w->sl;
}

void vrdma_vrd_av_to_wire(const struct vrdma_ah_attr *a, uint32_t pdn,
			  struct virtio_rdma_dev_av *w)
{
	memset(w, 0, sizeof(*w));
	put_le32(&w->port, PORT);
	put_le32(&w->pdn, pdn);
	put_le32(&w->sl_tclass_flowlabel, ((uint32_t)(a->sl & 0xf) << 28) |
						   ((uint32_t)a->grh.traffic_class << 20) |
						   (a->grh.flow_label & 0xfffff));
	memcpy(w->dgid, a->grh.dgid, 16);
	w->gid_index = a->grh.sgid_index;
	w->hop_limit = a->grh.hop_limit;
	memcpy(w->dmac, a->dmac, 6);
}

/* ---- commands ----------------------------------------------------------------- */

static int vrd_send(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len, void *out,
		    size_t out_len)
{
	return vrdma_rdma_cmd_raw(r, 0, cmd, in, in_len, out, out_len);
}

/* QUERY_DEVICE from the configuration space read at open. */
void vrdma_vrd_device_attr(const struct virtio_rdma_dev_config *c,
			   struct virtio_rdma_ack_query_device_ext *d)
{
	uint64_t caps = le64toh(c->device_cap_flags), out = 0;

	memset(d, 0, sizeof(*d));
	if (caps & VIRTIO_RDMA_DEV_CAP_RC_RNR_NAK_GEN)
		out |= VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN;
	if (caps & VIRTIO_RDMA_DEV_CAP_MEM_MGT_EXTENSIONS)
		out |= VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* no SRQ, memory windows, resize in this model */
	d->device_cap_flags = htole64(out);
	d->max_mr_size = c->max_mr_size;
	d->page_size_cap = c->page_size_cap;
	d->hw_ver = c->hw_ver;
	d->max_qp_wr = c->max_qp_wr;
	d->max_send_sge = c->max_send_sge;
	d->max_recv_sge = c->max_recv_sge;
	d->max_sge_rd = c->max_sge_rd;
	d->max_cqe = c->max_cqe;
	d->max_mr = c->max_mr;
	d->max_pd = c->max_pd;
	d->max_qp_rd_atom = c->max_qp_rd_atom;
	d->max_qp_init_rd_atom = c->max_qp_init_rd_atom;
	d->max_ah = htole32(MIN(le32toh(c->max_ah), VRD_MAX_AH));
	d->local_ca_ack_delay = c->local_ca_ack_delay;
	if (out & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)
		d->max_fast_reg_page_list_len = c->max_fast_reg_page_list_len;
	d->max_pkeys = c->max_pkeys;
	d->atomic_cap = c->atomic_cap <= VIRTIO_RDMA_DEV_ATOMIC_GLOB ? c->atomic_cap : 0;
}

static int vrd_query_port(struct vrdma_rdma *r, void *out, size_t out_len)
{
	struct virtio_rdma_dev_cmd_query_port c = { .port = PORT };
	struct virtio_rdma_dev_rsp_query_port p;
	struct virtio_rdma_ack_query_port_ext a;
	uint32_t mtu;
	int rc;

	rc = vrd_send(r, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &c, sizeof(c), &p, sizeof(p));
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.gid_tbl_len = p.gid_tbl_len;
	a.max_msg_sz = p.max_msg_sz;
	a.pkey_tbl_len = p.pkey_tbl_len;
	memcpy(a.gid1_ipv4, p.gid1_ipv4, 4);
	memcpy(a.gid2_ipv6, p.gid2_ipv6, 16);
	memcpy(out, &a, MIN(out_len, sizeof(a)));
	/* No Ethernet MTU on this device: the smallest whose payload is the
	 * active MTU with the largest header count any layer assumes (92
	 * bytes: GRH, UDP, BTH, RETH, ICRC), so every layer reports it. */
	mtu = virtio_ib_mtu_bytes(p.active_mtu);
	r->dev->mtu = (uint16_t)(mtu ? mtu + 92 : 1500);
	r->vrd_port.state = p.state;
	r->vrd_port.max_mtu = p.max_mtu;
	r->vrd_port.phys_state = p.phys_state;
	r->vrd_port.active_width = p.active_width;
	r->vrd_port.active_speed = le16toh(p.active_speed);
	r->vrd_port.port_cap_flags = le32toh(p.port_cap_flags);
	r->vrd_port.bad_pkey_cntr = le32toh(p.bad_pkey_cntr);
	r->vrd_port.qkey_viol_cntr = le32toh(p.qkey_viol_cntr);
	return 0;
}

static int vrd_reg_user_mr(struct vrdma_rdma *r, const void *in, size_t in_len, void *out,
			   size_t out_len)
{
	struct virtio_rdma_cmd_reg_user_mr h;
	struct virtio_rdma_dev_cmd_reg_user_mr c;
	size_t bytes;
	void *pages;
	int rc;

	if (in_len < sizeof(h))
		return -EINVAL;
	memcpy(&h, in, sizeof(h));
	bytes = (size_t)le32toh(h.npages) * 8;
	if (in_len != sizeof(h) + bytes || !bytes)
		return -EINVAL;
	/* The page array in memory the device can read (copied once there). */
	pages = vrdma_shm_alloc(r->dev, bytes, 8);
	if (!pages)
		return -ENOMEM;
	memcpy(pages, (const uint8_t *)in + sizeof(h), bytes);
	memset(&c, 0, sizeof(c));
	c.pdn = h.pdn;
	c.access_flags = h.access_flags;
	c.start = h.virt_addr;
	c.length = h.length;
	c.virt_addr = h.virt_addr;
	c.pages = htole64((uint64_t)(uintptr_t)pages);
	c.npages = h.npages;
	rc = vrd_send(r, VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &c, sizeof(c), out, out_len);
	vrdma_shm_free(r->dev, pages, bytes);
	return rc;
}

static int vrd_create_qp(struct vrdma_rdma *r, const void *in, void *out, size_t out_len)
{
	struct virtio_rdma_cmd_create_qp_ext q;
	struct virtio_rdma_dev_cmd_create_qp c;

	memcpy(&q, in, sizeof(q));
	if (le32toh(q.ext_flags))
		return -EOPNOTSUPP; /* no SRQ */
	memset(&c, 0, sizeof(c));
	c.pdn = q.pdn;
	c.qp_type = q.qp_type;
	c.sq_sig_type = q.sq_sig_all ? VIRTIO_RDMA_DEV_SIGNAL_ALL_WR : VIRTIO_RDMA_DEV_SIGNAL_REQ_WR;
	c.max_send_wr = q.cap.max_send_wr;
	c.max_send_sge = q.cap.max_send_sge;
	put_le32(&c.send_cqn, le32toh(q.send_cqn) + 1);
	c.max_recv_wr = q.cap.max_recv_wr;
	c.max_recv_sge = q.cap.max_recv_sge;
	put_le32(&c.recv_cqn, le32toh(q.recv_cqn) + 1);
	c.max_inline_data = q.cap.max_inline_data;
	return vrd_send(r, VIRTIO_RDMA_DEV_CMD_CREATE_QP, &c, sizeof(c), out, out_len);
}

void vrdma_vrd_modify_qp(const struct virtio_rdma_cmd_modify_qp *m,
			 struct virtio_rdma_dev_cmd_modify_qp *c)
{
	struct virtio_rdma_dev_qp_attr *w = &c->attrs;
	uint32_t mask = le32toh(m->attr_mask);
	struct vrdma_ah_attr av;

	memset(c, 0, sizeof(*c));
	c->qpn = m->qpn;
	put_le32(&c->attr_mask, vrdma_vrd_attr_mask(mask));
	w->qp_state = m->qp_state;
	w->cur_qp_state = m->cur_qp_state;
	w->path_mtu = m->path_mtu;
	w->qkey = m->qkey;
	w->rq_psn = m->rq_psn;
	w->sq_psn = m->sq_psn;
	w->dest_qp_num = m->dest_qp_num;
	w->qp_access_flags = m->qp_access_flags;
	w->max_rd_atomic = m->max_rd_atomic;
	w->max_dest_rd_atomic = m->max_dest_rd_atomic;
	w->min_rnr_timer = m->min_rnr_timer;
	w->port_num = PORT;
	w->timeout = m->timeout;
	w->retry_cnt = m->retry_cnt;
	w->rnr_retry = m->rnr_retry;
	w->rate_limit = m->rate_limit;
	if (mask & VIRTIO_IB_QP_AV) {
		vrdma_rdma_av_from_wire(&m->ah_attr, &av);
		vrdma_vrd_ah_to_wire(&av, &w->ah_attr);
	}
}

static int vrd_query_qp(struct vrdma_rdma *r, const void *in, void *out, size_t out_len)
{
	struct virtio_rdma_cmd_query_qp q;
	struct virtio_rdma_dev_cmd_query_qp c;
	struct virtio_rdma_dev_qp_attr w;
	struct virtio_rdma_ack_query_qp_ext a;
	int rc;

	memcpy(&q, in, sizeof(q));
	c.qpn = q.qpn;
	put_le32(&c.attr_mask, vrdma_vrd_attr_mask(le32toh(q.attr_mask)));
	rc = vrd_send(r, VIRTIO_RDMA_DEV_CMD_QUERY_QP, &c, sizeof(c), &w, sizeof(w));
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = w.qp_state;
	a.path_mtu = w.path_mtu;
	a.sq_draining = w.sq_draining;
	a.max_rd_atomic = w.max_rd_atomic;
	a.max_dest_rd_atomic = w.max_dest_rd_atomic;
	a.min_rnr_timer = w.min_rnr_timer;
	a.timeout = w.timeout;
	a.retry_cnt = w.retry_cnt;
	a.rnr_retry = w.rnr_retry;
	a.qkey = w.qkey;
	a.rq_psn = w.rq_psn;
	a.sq_psn = w.sq_psn;
	a.dest_qp_num = w.dest_qp_num;
	a.qp_access_flags = w.qp_access_flags;
	a.rate_limit = w.rate_limit;
	a.cap.max_send_wr = w.cap.max_send_wr;
	a.cap.max_recv_wr = w.cap.max_recv_wr;
	a.cap.max_send_sge = w.cap.max_send_sge;
	a.cap.max_recv_sge = w.cap.max_recv_sge;
	a.cap.max_inline_data = w.cap.max_inline_data;
	ah_from_wire(&w.ah_attr, &a.ah_attr);
	memcpy(out, &a, MIN(out_len, sizeof(a)));
	return 0;
}

/* CREATE_AH: a free handle of the library's table (the caller marks it
 * live); the address vector is kept for the UD WRs. */
static int vrd_create_ah(struct vrdma_rdma *r, const void *in, void *out, size_t out_len)
{
	struct virtio_rdma_cmd_create_ah c;
	struct virtio_rdma_ack_create_ah a;
	uint32_t h;

	memcpy(&c, in, sizeof(c));
	for (h = 1; h < r->ahs_cap; h++)
		if (!r->ahs[h].live)
			break;
	if (h >= r->ahs_cap)
		return 1;
	r->ahs[h].pdn = le32toh(c.pdn);
	vrdma_rdma_av_from_wire(&c.ah_attr, &r->ahs[h].av);
	a.ah = htole32(h);
	memcpy(out, &a, MIN(out_len, sizeof(a)));
	return 0;
}

static int vrd_cmd(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len, void *out,
		   size_t out_len)
{
	union {
		struct virtio_rdma_dev_cmd_add_gid add_gid;
		struct virtio_rdma_dev_cmd_del_gid del_gid;
		struct virtio_rdma_dev_cmd_req_notify notify;
		struct virtio_rdma_dev_cmd_create_mr create_mr;
		struct virtio_rdma_dev_cmd_query_pkey pkey;
		struct virtio_rdma_dev_cmd_modify_qp modify;
		le32 n;
	} c;
	union {
		struct virtio_rdma_ack_query_device_ext dev;
		struct virtio_rdma_ack_create_cq cq;
		le32 n;
	} a;
	int rc;

	memset(&c, 0, sizeof(c));
	switch (cmd) {
	case VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE:
		vrdma_vrd_device_attr(&r->dev->rdma_cfg, &a.dev);
		memcpy(out, &a.dev, MIN(out_len, sizeof(a.dev)));
		return 0;
	case VIRTIO_NET_CTRL_ROCE_QUERY_PORT:
		return vrd_query_port(r, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_CREATE_CQ:
		rc = vrd_send(r, VIRTIO_RDMA_DEV_CMD_CREATE_CQ, in, in_len, &a.cq, sizeof(a.cq));
		if (rc == 0) {
			/* cqn 0 is never valid: it becomes a bad cqn here */
			put_le32(&a.cq.cqn, le32toh(a.cq.cqn) - 1);
			memcpy(out, &a.cq, MIN(out_len, sizeof(a.cq)));
		}
		return rc;
	case VIRTIO_NET_CTRL_ROCE_DESTROY_CQ:
		memcpy(&c.n, in, 4);
		put_le32(&c.n, le32toh(c.n) + 1);
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, &c.n, 4, NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_CREATE_PD:
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_DESTROY_PD:
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_DESTROY_PD, in, in_len, NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_GET_DMA_MR:
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, in, in_len, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_REG_USER_MR:
		return vrd_reg_user_mr(r, in, in_len, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_DEREG_MR:
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_DEREG_MR, in, in_len, NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_CREATE_QP:
		return vrd_create_qp(r, in, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_MODIFY_QP:
		vrdma_vrd_modify_qp(in, &c.modify);
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_MODIFY_QP, &c.modify, sizeof(c.modify),
				NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_QUERY_QP:
		return vrd_query_qp(r, in, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_DESTROY_QP:
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_DESTROY_QP, in, in_len, NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_CREATE_AH:
		return vrd_create_ah(r, in, out, out_len);
	case VIRTIO_NET_CTRL_ROCE_DESTROY_AH:
		return 0; /* the caller forgets it */
	case VIRTIO_NET_CTRL_ROCE_ADD_GID: {
		const struct virtio_rdma_cmd_add_gid *g = in;

		memcpy(c.add_gid.gid, g->gid, 16);
		put_le32(&c.add_gid.gid_type, VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2);
		c.add_gid.index = g->index;
		put_le32(&c.add_gid.port_num, PORT);
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_ADD_GID, &c.add_gid, sizeof(c.add_gid),
				NULL, 0);
	}
	case VIRTIO_NET_CTRL_ROCE_DEL_GID:
		memcpy(&c.del_gid.index, in, 2);
		put_le32(&c.del_gid.port, PORT);
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_DEL_GID, &c.del_gid, sizeof(c.del_gid),
				NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ:
		memcpy(&c.notify, in, sizeof(c.notify));
		put_le32(&c.notify.cqn, le32toh(c.notify.cqn) + 1);
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, &c.notify,
				sizeof(c.notify), NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MR: {
		const struct virtio_rdma_cmd_alloc_mr *m = in;

		/* The rights a REG_MR work request may give later. */
		c.create_mr.pdn = m->pdn;
		put_le32(&c.create_mr.access_flags,
			 VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
				 VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ |
				 (r->attr.atomic_cap ? VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC : 0));
		c.create_mr.max_num_sg = m->max_num_sg;
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_CREATE_MR, &c.create_mr,
				sizeof(c.create_mr), out, out_len);
	}
	case VIRTIO_NET_CTRL_ROCE_QUERY_PKEY: {
		const struct virtio_rdma_cmd_query_pkey *k = in;

		put_le32(&c.pkey.port, PORT);
		c.pkey.index = k->index;
		return vrd_send(r, VIRTIO_RDMA_DEV_CMD_QUERY_PKEY, &c.pkey, sizeof(c.pkey), out,
				MIN(out_len, sizeof(struct virtio_rdma_dev_rsp_query_pkey)));
	}
	default:
		/* SRQs, memory windows, resize: not in this model (their
		 * capability is never reported, so nothing asks). */
		return -EOPNOTSUPP;
	}
}

/* The address handle table never moves (the data path reads it). */
static int vrd_init(struct vrdma_rdma *r)
{
	if (r->attr.max_ah > VRD_MAX_AH)
		r->attr.max_ah = VRD_MAX_AH;
	return vrdma_rdma_table_reserve((void **)&r->ahs, &r->ahs_cap, sizeof(*r->ahs),
					r->attr.max_ah);
}

/* ---- rings ------------------------------------------------------------------------ */

static unsigned vrd_vq_cq(const struct vrdma_rdma *r, uint32_t cqn)
{
	(void)r;
	return virtio_rdma_dev_vq_cq(cqn + 1);
}

static unsigned vrd_vq_sq(const struct vrdma_rdma *r, uint32_t index)
{
	return virtio_rdma_dev_vq_sq(r->ncq_rings, index);
}

static unsigned vrd_vq_rq(const struct vrdma_rdma *r, uint32_t index)
{
	return virtio_rdma_dev_vq_rq(r->ncq_rings, index);
}

static size_t vrd_sq_slot_size(uint32_t max_send_sge, uint32_t max_inline_data)
{
	size_t sges = (size_t)max_send_sge * sizeof(struct virtio_rdma_dev_sge);

	return sizeof(struct virtio_rdma_dev_sq_req) + MAX(sges, (size_t)max_inline_data);
}

static size_t vrd_rq_slot_size(uint32_t max_recv_sge)
{
	return sizeof(struct virtio_rdma_dev_rq_req) +
	       (size_t)max_recv_sge * sizeof(struct virtio_rdma_dev_sge);
}

/* ---- elements ------------------------------------------------------------------- */

/* REG_MR: MAP_MR_SG of the page list now (the device copies it), then the
 * work request names the MR, its new key and rights. */
static int vrd_reg_mr_map(struct vrdma_qp *qp, const struct vrdma_send_wr *wr, const le64 *pages)
{
	struct vrdma_rdma *r = qp->dev->rdma;
	struct virtio_rdma_dev_cmd_map_mr_sg c;
	struct virtio_rdma_dev_rsp_map_mr_sg a;
	uint64_t iova = wr->reg.iova, len = wr->reg.length;
	uint64_t np = len ? ((iova + len - 1) >> VRDMA_PAGE_SHIFT) - (iova >> VRDMA_PAGE_SHIFT) + 1
			  : 0;
	int rc;

	put_le32(&c.mrn, wr->reg.mrn);
	put_le32(&c.npages, (uint32_t)np);
	put_le64(&c.start, iova);
	put_le64(&c.length, len);
	put_le64(&c.pages, (uint64_t)(uintptr_t)pages);
	rc = vrd_send(r, VIRTIO_RDMA_DEV_CMD_MAP_MR_SG, &c, sizeof(c), &a, sizeof(a));
	if (rc > 0)
		return -EINVAL; /* still mapped (not invalidated), bad range */
	return rc;
}

uint32_t vrdma_vrd_sq_encode(const struct vrdma_rdma *r, uint8_t qp_type, uint32_t qp_pdn,
			     uint8_t *slot, const struct vrdma_send_wr *wr, uint64_t len)
{
	struct virtio_rdma_dev_sq_req q;
	uint8_t *p = slot + sizeof(q);
	uint32_t i;

	memset(&q, 0, sizeof(q));
	put_le32(&q.send_flags, wr->send_flags);
	put_le32(&q.opcode, wr->opcode);
	put_le64(&q.wr_id, wr->wr_id);
	switch (wr->opcode) {
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		put_le64(&q.wr.atomic.remote_addr, wr->atomic.remote_addr);
		put_le64(&q.wr.atomic.compare_add, wr->atomic.compare_add);
		put_le64(&q.wr.atomic.swap, wr->atomic.swap);
		put_le32(&q.wr.atomic.rkey, wr->atomic.rkey);
		break;
	case VIRTIO_IB_WR_LOCAL_INV:
		put_le32(&q.ex.invalidate_rkey, wr->invalidate_rkey);
		memcpy(slot, &q, sizeof(q));
		return (uint32_t)sizeof(q);
	case VIRTIO_IB_WR_REG_MR:
		put_le32(&q.wr.reg.mrn, wr->reg.mrn);
		put_le32(&q.wr.reg.key, wr->reg.key);
		put_le32(&q.wr.reg.access, wr->reg.access);
		memcpy(slot, &q, sizeof(q));
		return (uint32_t)sizeof(q);
	case VIRTIO_IB_WR_SEND_WITH_INV:
		put_le32(&q.ex.invalidate_rkey, wr->invalidate_rkey);
		break;
	case VRDMA_WR_RDMA_READ_WITH_INV:
		put_le32(&q.ex.invalidate_rkey, wr->invalidate_rkey);
		put_le64(&q.wr.rdma.remote_addr, wr->rdma.remote_addr);
		put_le32(&q.wr.rdma.rkey, wr->rdma.rkey);
		break;
	default:
		q.ex.imm_data = wr->imm_data; /* opaque, network order */
		if (qp_type == VIRTIO_IB_QPT_UD || qp_type == VIRTIO_IB_QPT_GSI) {
			const struct vrdma_rdma_ah *ah = &r->ahs[wr->ud.ah];

			put_le32(&q.wr.ud.remote_qpn, wr->ud.remote_qpn);
			put_le32(&q.wr.ud.remote_qkey, wr->ud.remote_qkey);
			vrdma_vrd_av_to_wire(&ah->av, qp_pdn, &q.wr.ud.av);
		} else if (wr->opcode != VIRTIO_IB_WR_SEND &&
			   wr->opcode != VIRTIO_IB_WR_SEND_WITH_IMM) {
			put_le64(&q.wr.rdma.remote_addr, wr->rdma.remote_addr);
			put_le32(&q.wr.rdma.rkey, wr->rdma.rkey);
		}
		break;
	}
	if (wr->send_flags & VIRTIO_IB_SEND_INLINE) {
		/* [spec.md] the data follows the fixed part, num_sge is its
		 * length */
		for (i = 0; i < wr->num_sge; i++) {
			uint32_t l = wr->sg_list[i].length;

			if (l)
				memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, l);
			p += l;
		}
		put_le32(&q.num_sge, (uint32_t)len);
		memcpy(slot, &q, sizeof(q));
		return (uint32_t)(sizeof(q) + len);
	}
	put_le32(&q.num_sge, wr->num_sge);
	for (i = 0; i < wr->num_sge; i++) {
		struct virtio_rdma_dev_sge s;

		put_le64(&s.addr, wr->sg_list[i].addr);
		put_le32(&s.length, wr->sg_list[i].length);
		put_le32(&s.lkey, wr->sg_list[i].lkey);
		memcpy(p, &s, sizeof(s));
		p += sizeof(s);
	}
	memcpy(slot, &q, sizeof(q));
	return (uint32_t)(p - slot);
}

static uint32_t vrd_sq_encode(const struct vrdma_qp *qp, uint8_t *slot,
			      const struct vrdma_send_wr *wr, uint64_t len, const le64 *pages)
{
	(void)pages; /* MAP_MR_SG sent them */
	return vrdma_vrd_sq_encode(qp->dev->rdma, qp->type, qp->pdn, slot, wr, len);
}

uint32_t vrdma_vrd_rq_encode(uint8_t *slot, const struct vrdma_recv_wr *wr)
{
	struct virtio_rdma_dev_rq_req q;
	uint8_t *p = slot + sizeof(q);
	uint32_t i;

	put_le32(&q.num_sge, wr->num_sge);
	put_le64(&q.wr_id, wr->wr_id);
	memcpy(slot, &q, sizeof(q));
	for (i = 0; i < wr->num_sge; i++) {
		struct virtio_rdma_dev_sge s;

		put_le64(&s.addr, wr->sg_list[i].addr);
		put_le32(&s.length, wr->sg_list[i].length);
		put_le32(&s.lkey, wr->sg_list[i].lkey);
		memcpy(p, &s, sizeof(s));
		p += sizeof(s);
	}
	return (uint32_t)(p - slot);
}

void vrdma_vrd_cq_decode(const void *b, struct vrdma_wc *wc)
{
	struct virtio_rdma_dev_cq_req e;

	memcpy(&e, b, sizeof(e));
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(e.wr_id);
	wc->status = vrdma_vrd_wc_status(e.status);
	wc->opcode = vrdma_vrd_wc_opcode(e.opcode);
	wc->vendor_err = le32toh(e.vendor_err);
	wc->byte_len = le32toh(e.byte_len);
	wc->qp_num = le32toh(e.qp_num);
	wc->src_qp = le32toh(e.src_qp);
	wc->wc_flags = le32toh(e.wc_flags) &
		       (VIRTIO_IB_WC_GRH | VIRTIO_IB_WC_WITH_IMM | VIRTIO_IB_WC_WITH_INV);
	if (wc->wc_flags & VIRTIO_IB_WC_WITH_INV)
		wc->invalidated_rkey = le32toh(e.ex.invalidate_rkey);
	else
		wc->imm_data = e.ex.imm_data;
}

const struct vrdma_model vrdma_model_virtio_rdma = {
	.name = "virtio-rdma",
	.cmd = vrd_cmd,
	.init = vrd_init,
	.vq_cq = vrd_vq_cq,
	.vq_sq = vrd_vq_sq,
	.vq_rq = vrd_vq_rq,
	.sq_slot_size = vrd_sq_slot_size,
	.rq_slot_size = vrd_rq_slot_size,
	.reg_mr_map = vrd_reg_mr_map,
	.sq_encode = vrd_sq_encode,
	.rq_encode = vrdma_vrd_rq_encode,
	.cqe_size = sizeof(struct virtio_rdma_dev_cq_req),
	.cq_decode = vrdma_vrd_cq_decode,
};
