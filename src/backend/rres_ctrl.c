/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control commands of class VIRTIO_NET_CTRL_ROCE (RFC: "RoCE
 * Configuration"): decode the untrusted little-endian command data, check its
 * length, run the operation (rres_res.c, rres_qp_state.c), encode the ack
 * data, count the outcome. Nothing here trusts in_len, alignment or any value.
 */
#include "backend/rres_dev.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define VRDMA_VARLEN ((size_t)-1)
#define CMD(name) sizeof(struct virtio_rdma_cmd_##name)
#define ACK(name) sizeof(struct virtio_rdma_ack_##name)

static const struct {
	const char *name;
	size_t in;  /* command data length, VRDMA_VARLEN: checked by the handler */
	size_t out; /* ack data length */
	uint64_t cap; /* extension: capability bit required (0: ROCE_EXT only) */
} cmd_info[VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS] = {
	[VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE] = { "QUERY_DEVICE", 0,
		ACK(query_device), 0 },
	[VIRTIO_NET_CTRL_ROCE_QUERY_PORT] = { "QUERY_PORT", 0,
		ACK(query_port), 0 },
	[VIRTIO_NET_CTRL_ROCE_CREATE_CQ] = { "CREATE_CQ",
		CMD(create_cq), ACK(create_cq), 0 },
	[VIRTIO_NET_CTRL_ROCE_DESTROY_CQ] = { "DESTROY_CQ",
		CMD(destroy_cq), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_CREATE_PD] = { "CREATE_PD", 0,
		ACK(create_pd), 0 },
	[VIRTIO_NET_CTRL_ROCE_DESTROY_PD] = { "DESTROY_PD",
		CMD(destroy_pd), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_GET_DMA_MR] = { "GET_DMA_MR",
		CMD(get_dma_mr), ACK(get_dma_mr), 0 },
	[VIRTIO_NET_CTRL_ROCE_REG_USER_MR] = { "REG_USER_MR", VRDMA_VARLEN,
		ACK(reg_user_mr), 0 },
	[VIRTIO_NET_CTRL_ROCE_DEREG_MR] = { "DEREG_MR",
		CMD(dereg_mr), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_CREATE_QP] = { "CREATE_QP",
		CMD(create_qp), ACK(create_qp), 0 },
	[VIRTIO_NET_CTRL_ROCE_MODIFY_QP] = { "MODIFY_QP",
		CMD(modify_qp), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_QUERY_QP] = { "QUERY_QP",
		CMD(query_qp), ACK(query_qp), 0 },
	[VIRTIO_NET_CTRL_ROCE_DESTROY_QP] = { "DESTROY_QP",
		CMD(destroy_qp), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_CREATE_AH] = { "CREATE_AH",
		CMD(create_ah), ACK(create_ah), 0 },
	[VIRTIO_NET_CTRL_ROCE_DESTROY_AH] = { "DESTROY_AH",
		CMD(destroy_ah), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_ADD_GID] = { "ADD_GID",
		CMD(add_gid), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_DEL_GID] = { "DEL_GID",
		CMD(del_gid), 0, 0 },
	[VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ] = { "REQ_NOTIFY_CQ",
		CMD(req_notify), 0, 0 },
	/* extension (ROCE_EXT) */
	[VIRTIO_NET_CTRL_ROCE_CREATE_SRQ] = { "CREATE_SRQ",
		CMD(create_srq), ACK(create_srq), VIRTIO_IB_DEVICE_SRQ },
	[VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ] = { "MODIFY_SRQ",
		CMD(modify_srq), 0, VIRTIO_IB_DEVICE_SRQ },
	[VIRTIO_NET_CTRL_ROCE_QUERY_SRQ] = { "QUERY_SRQ",
		CMD(query_srq), ACK(query_srq), VIRTIO_IB_DEVICE_SRQ },
	[VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ] = { "DESTROY_SRQ",
		CMD(destroy_srq), 0, VIRTIO_IB_DEVICE_SRQ },
	[VIRTIO_NET_CTRL_ROCE_ALLOC_MR] = { "ALLOC_MR",
		CMD(alloc_mr), ACK(alloc_mr), VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS },
	[VIRTIO_NET_CTRL_ROCE_ALLOC_MW] = { "ALLOC_MW",
		CMD(alloc_mw), ACK(alloc_mw), VIRTIO_IB_DEVICE_MEM_WINDOW },
	[VIRTIO_NET_CTRL_ROCE_DEALLOC_MW] = { "DEALLOC_MW",
		CMD(dealloc_mw), 0, VIRTIO_IB_DEVICE_MEM_WINDOW },
	[VIRTIO_NET_CTRL_ROCE_RESIZE_CQ] = { "RESIZE_CQ",
		CMD(resize_cq), ACK(resize_cq), VIRTIO_IB_DEVICE_RESIZE_CQ },
	[VIRTIO_NET_CTRL_ROCE_RESIZE_QP] = { "RESIZE_QP",
		CMD(resize_qp), ACK(resize_qp), VIRTIO_IB_DEVICE_RESIZE_MAX_WR },
	[VIRTIO_NET_CTRL_ROCE_QUERY_PKEY] = { "QUERY_PKEY",
		CMD(query_pkey), ACK(query_pkey), 0 },
};

static const char *const err_names[RRES_ERR_MAX] = {
	[RRES_OK] = "ok",
	[RRES_ERR_UNKNOWN_CMD] = "unknown_cmd",
	[RRES_ERR_BAD_LEN] = "bad_len",
	[RRES_ERR_OUT_SPACE] = "out_space",
	[RRES_ERR_BAD_HANDLE] = "bad_handle",
	[RRES_ERR_WRONG_PD] = "wrong_pd",
	[RRES_ERR_IN_USE] = "in_use",
	[RRES_ERR_LIMIT] = "limit",
	[RRES_ERR_RANGE] = "range",
	[RRES_ERR_FLAGS] = "flags",
	[RRES_ERR_QP_TYPE] = "qp_type",
	[RRES_ERR_STATE] = "state",
	[RRES_ERR_ATTR_MASK] = "attr_mask",
	[RRES_ERR_NPAGES] = "npages",
	[RRES_ERR_PAGE] = "page",
	[RRES_ERR_GID] = "gid",
	[RRES_ERR_NOMEM] = "nomem",
	[RRES_ERR_CQ_STATE] = "cq_state",
};

const char *rres_err_name(enum rres_err e)
{
	return (unsigned)e < RRES_ERR_MAX ? err_names[e] : "?";
}

const char *rres_cmd_name(uint8_t cmd)
{
	return cmd < VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS ? cmd_info[cmd].name : "?";
}

#define IN32(s, f)  get_le32((const uint8_t *)in + offsetof(struct s, f))
#define IN16(s, f)  get_le16((const uint8_t *)in + offsetof(struct s, f))
#define IN64(s, f)  get_le64((const uint8_t *)in + offsetof(struct s, f))
#define IN8(s, f)   (((const uint8_t *)in)[offsetof(struct s, f)])
#define OUT32(s, f, v) put_le32((uint8_t *)out + offsetof(struct s, f), (v))

static enum rres_err cmd_query_device(struct rres_dev *rd, void *out)
{
	struct virtio_rdma_ack_query_device_ext a;
	const struct rres_dev_attr *d = &rd->attr;

	memset(&a, 0, sizeof(a));
	put_le64(&a.device_cap_flags,
		 d->device_cap_flags | (rd->ext ? d->ext_cap_flags : 0));
	put_le64(&a.max_mr_size, d->max_mr_size);
	put_le64(&a.page_size_cap, d->page_size_cap);
	put_le32(&a.hw_ver, d->hw_ver);
	put_le32(&a.max_qp_wr, d->max_qp_wr);
	put_le32(&a.max_send_sge, d->max_send_sge);
	put_le32(&a.max_recv_sge, d->max_recv_sge);
	put_le32(&a.max_sge_rd, d->max_sge_rd);
	put_le32(&a.max_cqe, d->max_cqe);
	put_le32(&a.max_mr, d->max_mr);
	put_le32(&a.max_pd, d->max_pd);
	put_le32(&a.max_qp_rd_atom, d->max_qp_rd_atom);
	put_le32(&a.max_qp_init_rd_atom, d->max_qp_init_rd_atom);
	put_le32(&a.max_ah, d->max_ah);
	a.local_ca_ack_delay = d->local_ca_ack_delay;
	if (rd->ext) {
		put_le32(&a.max_srq_wr, d->max_srq_wr);
		put_le32(&a.max_srq_sge, d->max_srq_sge);
		put_le32(&a.max_mw, d->max_mw);
		put_le32(&a.max_fast_reg_page_list_len, d->max_fast_reg_page_list_len);
		put_le16(&a.max_pkeys, d->max_pkeys);
		a.atomic_cap = d->atomic_cap;
	}
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static enum rres_err cmd_query_port(struct rres_dev *rd, void *out)
{
	struct virtio_rdma_ack_query_port_ext a;

	memset(&a, 0, sizeof(a));
	put_le32(&a.gid_tbl_len, rd->attr.gid_tbl_len);
	put_le32(&a.max_msg_sz, rd->attr.max_msg_sz);
	if (rd->ext)
		put_le16(&a.pkey_tbl_len, rd->attr.max_pkeys);
	if (rd->has_ip4)
		memcpy(a.gid1_ipv4, &rd->ip4, 4);
	if (rd->has_ip6)
		memcpy(a.gid2_ipv6, rd->ip6, 16);
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

/* Check the REG_USER_MR length against its own npages, then register. */
static enum rres_err cmd_reg_user_mr(struct rres_dev *rd, const void *in, size_t in_len,
				     void *out)
{
	const size_t hdr = CMD(reg_user_mr);
	struct rres_mr *mr;
	enum rres_err err;
	uint32_t npages;

	if (in_len < hdr || (in_len - hdr) % 8)
		return RRES_ERR_BAD_LEN;
	npages = IN32(virtio_rdma_cmd_reg_user_mr, npages);
	if ((in_len - hdr) / 8 != npages)
		return RRES_ERR_BAD_LEN;
	err = rres_mr_reg_user(rd, IN32(virtio_rdma_cmd_reg_user_mr, pdn),
			       IN32(virtio_rdma_cmd_reg_user_mr, access_flags),
			       IN64(virtio_rdma_cmd_reg_user_mr, virt_addr),
			       IN64(virtio_rdma_cmd_reg_user_mr, length), npages,
			       (const uint8_t *)in + hdr, &mr);
	if (err)
		return err;
	OUT32(virtio_rdma_ack_reg_user_mr, mrn, mr->mrn);
	OUT32(virtio_rdma_ack_reg_user_mr, lkey, mr->lkey);
	OUT32(virtio_rdma_ack_reg_user_mr, rkey, mr->rkey);
	return RRES_OK;
}

static enum rres_err cmd_create_qp(struct rres_dev *rd, const void *in, void *out)
{
	struct virtio_rdma_cmd_create_qp_ext c;
	struct rres_qp_init init;
	struct rres_qp *qp;
	enum rres_err err;

	memcpy(&c, in, sizeof(c));
	memset(&init, 0, sizeof(init));
	if (rd->ext) { /* without ROCE_EXT these words are ignored */
		init.ext_flags = le32toh(c.ext_flags);
		init.srqn = le32toh(c.srqn);
	}
	init.pdn = le32toh(c.pdn);
	init.qp_type = c.qp_type;
	init.sq_sig_all = c.sq_sig_all;
	init.send_cqn = le32toh(c.send_cqn);
	init.recv_cqn = le32toh(c.recv_cqn);
	init.cap.max_send_wr = le32toh(c.cap.max_send_wr);
	init.cap.max_recv_wr = le32toh(c.cap.max_recv_wr);
	init.cap.max_send_sge = le32toh(c.cap.max_send_sge);
	init.cap.max_recv_sge = le32toh(c.cap.max_recv_sge);
	init.cap.max_inline_data = le32toh(c.cap.max_inline_data);
	err = rres_qp_create(rd, &init, &qp);
	if (err)
		return err;
	OUT32(virtio_rdma_ack_create_qp, qpn, qp->qpn);
	return RRES_OK;
}

static enum rres_err cmd_modify_qp(struct rres_dev *rd, const void *in)
{
	struct virtio_rdma_cmd_modify_qp c;
	struct rres_qp_modify m;

	memcpy(&c, in, sizeof(c));
	memset(&m, 0, sizeof(m));
	m.attr_mask = le32toh(c.attr_mask);
	m.qp_state = c.qp_state;
	m.cur_qp_state = c.cur_qp_state;
	m.path_mtu = c.path_mtu;
	m.max_rd_atomic = c.max_rd_atomic;
	m.max_dest_rd_atomic = c.max_dest_rd_atomic;
	m.min_rnr_timer = c.min_rnr_timer;
	m.timeout = c.timeout;
	m.retry_cnt = c.retry_cnt;
	m.rnr_retry = c.rnr_retry;
	m.qkey = le32toh(c.qkey);
	m.rq_psn = le32toh(c.rq_psn);
	m.sq_psn = le32toh(c.sq_psn);
	m.dest_qp_num = le32toh(c.dest_qp_num);
	m.qp_access_flags = le32toh(c.qp_access_flags);
	m.rate_limit = le32toh(c.rate_limit);
	m.ah_attr = c.ah_attr;
	return rres_qp_modify(rd, le32toh(c.qpn), &m);
}

static void av_to_wire(const struct rres_dev *rd, const struct rres_av *av,
		       struct virtio_rdma_ah_attr *w)
{
	memset(w, 0, sizeof(*w));
	memcpy(w->grh.dgid, av->dgid, 16);
	put_le32(&w->grh.flow_label, av->flow_label);
	w->grh.sgid_index = av->sgid_index;
	w->grh.hop_limit = av->hop_limit;
	w->grh.traffic_class = av->traffic_class;
	memcpy(w->dmac, av->dmac, 6);
	w->sl = av->sl;
	if (rd->vlan_id) {
		w->flags = VIRTIO_RDMA_AH_F_VLAN;
		put_le16(&w->vlan_id, rd->vlan_id);
	}
}

static enum rres_err cmd_query_qp(struct rres_dev *rd, const void *in, void *out)
{
	uint32_t mask = IN32(virtio_rdma_cmd_query_qp, attr_mask);
	struct rres_qp *qp = rres_qp_lookup(rd, IN32(virtio_rdma_cmd_query_qp, qpn));
	struct virtio_rdma_ack_query_qp_ext a;
	const struct rres_qp_attr *at;

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	if (mask & ~(uint32_t)VIRTIO_IB_QP_ATTR_MASK_ALL)
		return RRES_ERR_ATTR_MASK;
	at = &qp->attr;
	memset(&a, 0, sizeof(a));
	a.qp_state = at->qp_state;
	a.path_mtu = at->path_mtu;
	a.sq_draining = qp->sq_draining;
	a.max_rd_atomic = at->max_rd_atomic;
	a.max_dest_rd_atomic = at->max_dest_rd_atomic;
	a.min_rnr_timer = at->min_rnr_timer;
	a.timeout = at->timeout;
	a.retry_cnt = at->retry_cnt;
	a.rnr_retry = at->rnr_retry;
	put_le32(&a.qkey, at->qkey);
	put_le32(&a.rq_psn, at->rq_psn);
	put_le32(&a.sq_psn, at->sq_psn);
	put_le32(&a.dest_qp_num, at->dest_qp_num);
	put_le32(&a.qp_access_flags, at->qp_access_flags);
	put_le32(&a.rate_limit, at->rate_limit);
	put_le32(&a.cap.max_send_wr, qp->cap.max_send_wr);
	put_le32(&a.cap.max_recv_wr, qp->cap.max_recv_wr);
	put_le32(&a.cap.max_send_sge, qp->cap.max_send_sge);
	put_le32(&a.cap.max_recv_sge, qp->cap.max_recv_sge);
	put_le32(&a.cap.max_inline_data, qp->cap.max_inline_data);
	if (at->av_valid)
		av_to_wire(rd, &at->av, &a.ah_attr);
	if (rd->ext) {
		put_le32(&a.ext_flags, qp->ext_flags);
		put_le32(&a.srqn, qp->srq ? qp->srq->srqn : 0);
	}
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

/* ---- commands of the extension ---- */

static enum rres_err cmd_create_srq(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_srq *srq;
	enum rres_err err;

	err = rres_srq_create(rd, IN32(virtio_rdma_cmd_create_srq, pdn),
			      IN32(virtio_rdma_cmd_create_srq, max_wr),
			      IN32(virtio_rdma_cmd_create_srq, max_sge), &srq);
	if (err)
		return err;
	memset(out, 0, ACK(create_srq));
	OUT32(virtio_rdma_ack_create_srq, srqn, srq->srqn);
	OUT32(virtio_rdma_ack_create_srq, max_wr, srq->max_wr);
	OUT32(virtio_rdma_ack_create_srq, max_sge, srq->max_sge);
	return RRES_OK;
}

static enum rres_err cmd_query_srq(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_srq *srq = rres_srq_lookup(rd, IN32(virtio_rdma_cmd_query_srq, srqn));

	if (!srq)
		return RRES_ERR_BAD_HANDLE;
	memset(out, 0, ACK(query_srq));
	OUT32(virtio_rdma_ack_query_srq, max_wr, srq->max_wr);
	OUT32(virtio_rdma_ack_query_srq, max_sge, srq->max_sge);
	OUT32(virtio_rdma_ack_query_srq, srq_limit, srq->srq_limit);
	return RRES_OK;
}

static enum rres_err cmd_alloc_mr(struct rres_dev *rd, const void *in, void *out)
{
	uint32_t pdn = IN32(virtio_rdma_cmd_alloc_mr, pdn);
	struct rres_mr *mr;
	enum rres_err err;

	if (!rres_pd_lookup(rd, pdn))
		return RRES_ERR_BAD_HANDLE;
	if (IN32(virtio_rdma_cmd_alloc_mr, mr_type) != VIRTIO_IB_MR_TYPE_MEM_REG)
		return RRES_ERR_RANGE;
	err = rres_mr_alloc(rd, pdn, IN32(virtio_rdma_cmd_alloc_mr, max_num_sg), &mr);
	if (err)
		return err;
	OUT32(virtio_rdma_ack_alloc_mr, mrn, mr->mrn);
	OUT32(virtio_rdma_ack_alloc_mr, lkey, mr->lkey);
	OUT32(virtio_rdma_ack_alloc_mr, rkey, mr->rkey);
	return RRES_OK;
}

static enum rres_err cmd_alloc_mw(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_mr *mw;
	enum rres_err err;

	err = rres_mw_alloc(rd, IN32(virtio_rdma_cmd_alloc_mw, pdn),
			    IN32(virtio_rdma_cmd_alloc_mw, mw_type), &mw);
	if (err)
		return err;
	OUT32(virtio_rdma_ack_alloc_mw, mwn, mw->mrn);
	OUT32(virtio_rdma_ack_alloc_mw, rkey, mw->rkey);
	return RRES_OK;
}

static enum rres_err cmd_resize_qp(struct rres_dev *rd, const void *in, void *out)
{
	struct virtio_rdma_cmd_resize_qp c;
	struct virtio_rdma_ack_resize_qp a;
	struct rres_qp_cap cap;
	struct rres_qp *qp;
	enum rres_err err;

	memcpy(&c, in, sizeof(c));
	cap.max_send_wr = le32toh(c.cap.max_send_wr);
	cap.max_recv_wr = le32toh(c.cap.max_recv_wr);
	cap.max_send_sge = le32toh(c.cap.max_send_sge);
	cap.max_recv_sge = le32toh(c.cap.max_recv_sge);
	cap.max_inline_data = le32toh(c.cap.max_inline_data);
	err = rres_qp_resize(rd, le32toh(c.qpn), &cap);
	if (err)
		return err;
	qp = rres_qp_lookup(rd, le32toh(c.qpn));
	memset(&a, 0, sizeof(a));
	put_le32(&a.cap.max_send_wr, qp->cap.max_send_wr);
	put_le32(&a.cap.max_recv_wr, qp->cap.max_recv_wr);
	put_le32(&a.cap.max_send_sge, qp->cap.max_send_sge);
	put_le32(&a.cap.max_recv_sge, qp->cap.max_recv_sge);
	put_le32(&a.cap.max_inline_data, qp->cap.max_inline_data);
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static enum rres_err cmd_query_pkey(struct rres_dev *rd, const void *in, void *out)
{
	if (IN16(virtio_rdma_cmd_query_pkey, index) >= rd->attr.max_pkeys)
		return RRES_ERR_RANGE;
	memset(out, 0, ACK(query_pkey));
	put_le16(out, 0xffff); /* the default P_Key, full membership */
	return RRES_OK;
}

static enum rres_err cmd_dispatch(struct rres_dev *rd, uint8_t cmd, const void *in,
				  size_t in_len, void *out)
{
	struct virtio_rdma_cmd_create_ah ca;
	struct virtio_rdma_cmd_add_gid ag;
	struct rres_mr *mr;
	enum rres_err err;
	uint32_t v;

	switch (cmd) {
	case VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE:
		return cmd_query_device(rd, out);
	case VIRTIO_NET_CTRL_ROCE_QUERY_PORT:
		return cmd_query_port(rd, out);
	case VIRTIO_NET_CTRL_ROCE_CREATE_CQ:
		err = rres_cq_create(rd, IN32(virtio_rdma_cmd_create_cq, cqe), &v);
		if (!err)
			OUT32(virtio_rdma_ack_create_cq, cqn, v);
		return err;
	case VIRTIO_NET_CTRL_ROCE_DESTROY_CQ:
		return rres_cq_destroy(rd, IN32(virtio_rdma_cmd_destroy_cq, cqn));
	case VIRTIO_NET_CTRL_ROCE_CREATE_PD:
		err = rres_pd_create(rd, &v);
		if (!err)
			OUT32(virtio_rdma_ack_create_pd, pdn, v);
		return err;
	case VIRTIO_NET_CTRL_ROCE_DESTROY_PD:
		return rres_pd_destroy(rd, IN32(virtio_rdma_cmd_destroy_pd, pdn));
	case VIRTIO_NET_CTRL_ROCE_GET_DMA_MR:
		err = rres_mr_get_dma(rd, IN32(virtio_rdma_cmd_get_dma_mr, pdn),
				      IN32(virtio_rdma_cmd_get_dma_mr, access_flags), &mr);
		if (err)
			return err;
		OUT32(virtio_rdma_ack_get_dma_mr, mrn, mr->mrn);
		OUT32(virtio_rdma_ack_get_dma_mr, lkey, mr->lkey);
		OUT32(virtio_rdma_ack_get_dma_mr, rkey, mr->rkey);
		return RRES_OK;
	case VIRTIO_NET_CTRL_ROCE_REG_USER_MR:
		return cmd_reg_user_mr(rd, in, in_len, out);
	case VIRTIO_NET_CTRL_ROCE_DEREG_MR:
		return rres_mr_dereg(rd, IN32(virtio_rdma_cmd_dereg_mr, mrn));
	case VIRTIO_NET_CTRL_ROCE_CREATE_QP:
		return cmd_create_qp(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_MODIFY_QP:
		return cmd_modify_qp(rd, in);
	case VIRTIO_NET_CTRL_ROCE_QUERY_QP:
		return cmd_query_qp(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_DESTROY_QP:
		return rres_qp_destroy(rd, IN32(virtio_rdma_cmd_destroy_qp, qpn));
	case VIRTIO_NET_CTRL_ROCE_CREATE_AH:
		memcpy(&ca, in, sizeof(ca));
		err = rres_ah_create(rd, le32toh(ca.pdn), &ca.ah_attr, &v);
		if (!err)
			OUT32(virtio_rdma_ack_create_ah, ah, v);
		return err;
	case VIRTIO_NET_CTRL_ROCE_DESTROY_AH:
		return rres_ah_destroy(rd, IN32(virtio_rdma_cmd_destroy_ah, pdn),
				       IN32(virtio_rdma_cmd_destroy_ah, ah));
	case VIRTIO_NET_CTRL_ROCE_ADD_GID:
		memcpy(&ag, in, sizeof(ag));
		return rres_gid_add(rd, le16toh(ag.index), ag.gid);
	case VIRTIO_NET_CTRL_ROCE_DEL_GID:
		return rres_gid_del(rd, IN16(virtio_rdma_cmd_del_gid, index));
	case VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ:
		return rres_cq_req_notify(rd, IN32(virtio_rdma_cmd_req_notify, cqn),
					  IN32(virtio_rdma_cmd_req_notify, flags));
	case VIRTIO_NET_CTRL_ROCE_CREATE_SRQ:
		return cmd_create_srq(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ:
		return rres_srq_modify(rd, IN32(virtio_rdma_cmd_modify_srq, srqn),
				       IN32(virtio_rdma_cmd_modify_srq, attr_mask),
				       IN32(virtio_rdma_cmd_modify_srq, srq_limit));
	case VIRTIO_NET_CTRL_ROCE_QUERY_SRQ:
		return cmd_query_srq(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ:
		return rres_srq_destroy(rd, IN32(virtio_rdma_cmd_destroy_srq, srqn));
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MR:
		return cmd_alloc_mr(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MW:
		return cmd_alloc_mw(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_DEALLOC_MW:
		return rres_mw_dealloc(rd, IN32(virtio_rdma_cmd_dealloc_mw, mwn));
	case VIRTIO_NET_CTRL_ROCE_RESIZE_CQ:
		v = IN32(virtio_rdma_cmd_resize_cq, cqe);
		err = rres_cq_resize(rd, IN32(virtio_rdma_cmd_resize_cq, cqn), v);
		if (!err)
			OUT32(virtio_rdma_ack_resize_cq, cqe, v);
		return err;
	case VIRTIO_NET_CTRL_ROCE_RESIZE_QP:
		return cmd_resize_qp(rd, in, out);
	case VIRTIO_NET_CTRL_ROCE_QUERY_PKEY:
		return cmd_query_pkey(rd, in, out);
	default:
		return RRES_ERR_UNKNOWN_CMD;
	}
}

enum rres_err rres_ctrl_exec_err(struct rres_dev *rd, uint8_t cmd, const void *in,
				 size_t in_len, void *out, size_t out_cap, size_t *out_len)
{
	enum rres_err err;
	uint8_t ack[ACK(query_device)];

	_Static_assert(ACK(query_device) >= ACK(query_qp), "ack buffer holds every ack");
	_Static_assert(ACK(query_device_ext) == ACK(query_device), "same ack size");
	_Static_assert(ACK(query_port_ext) == ACK(query_port), "same ack size");
	_Static_assert(ACK(query_qp_ext) == ACK(query_qp), "same ack size");
	_Static_assert(CMD(create_qp_ext) == CMD(create_qp), "same command size");
	*out_len = 0;
	if (cmd >= VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS) {
		err = RRES_ERR_UNKNOWN_CMD;
		goto done;
	}
	rd->stats.cmds[cmd]++;
	/* commands of the extension: ROCE_EXT negotiated and the capability
	 * reported, else unknown like any other number */
	if (cmd >= VIRTIO_NET_CTRL_ROCE_NUM_CMDS &&
	    (!rd->ext || (cmd_info[cmd].cap && !(rd->attr.ext_cap_flags & cmd_info[cmd].cap)))) {
		err = RRES_ERR_UNKNOWN_CMD;
		goto done;
	}
	if ((!in && in_len) ||
	    (cmd_info[cmd].in != VRDMA_VARLEN && in_len != cmd_info[cmd].in)) {
		err = RRES_ERR_BAD_LEN;
		goto done;
	}
	if (out_cap < cmd_info[cmd].out || (cmd_info[cmd].out && !out)) {
		err = RRES_ERR_OUT_SPACE;
		goto done;
	}
	/* Handlers write into a local buffer: out is only touched on success. */
	err = cmd_dispatch(rd, cmd, in, in_len, ack);
	if (!err) {
		if (cmd_info[cmd].out)
			memcpy(out, ack, cmd_info[cmd].out);
		*out_len = cmd_info[cmd].out;
	}
done:
	if (err) {
		rd->stats.err++;
		rd->stats.errs[err]++;
		LOG_DEBUG("roce: %s failed: %s", rres_cmd_name(cmd), rres_err_name(err));
	} else {
		rd->stats.ok++;
	}
	return err;
}

int rres_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
		   void *out, size_t out_cap, size_t *out_len)
{
	return rres_ctrl_exec_err(rd, cmd, in, in_len, out, out_cap, out_len) == RRES_OK
		       ? VIRTIO_NET_OK
		       : VIRTIO_NET_ERR;
}
