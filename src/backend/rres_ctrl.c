/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control commands of class VIRTIO_NET_CTRL_ROCE (RFC: "RoCE
 * Configuration"): one row per command in the table at the end (run by
 * rres_cmd.c, which checks lengths and counts the outcome); each handler
 * decodes the untrusted little-endian command data, runs the operation
 * (rres_res.c, rres_qp_state.c) and encodes the ack data. Nothing here
 * trusts in_len, alignment or any value.
 */
#include "backend/rres_dev.h"

#include <string.h>

#include "backend/rres_cmd.h"
#include "common/util.h"

#define CMD(name) sizeof(struct virtio_rdma_cmd_##name)
#define ACK(name) sizeof(struct virtio_rdma_ack_##name)

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

#define IN32(s, f)  get_le32((const uint8_t *)in + offsetof(struct s, f))
#define IN16(s, f)  get_le16((const uint8_t *)in + offsetof(struct s, f))
#define IN64(s, f)  get_le64((const uint8_t *)in + offsetof(struct s, f))
#define IN8(s, f)   (((const uint8_t *)in)[offsetof(struct s, f)])
#define OUT32(s, f, v) put_le32((uint8_t *)out + offsetof(struct s, f), (v))

static RRES_CMD_FN(cmd_query_device)
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

static RRES_CMD_FN(cmd_query_port)
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

static RRES_CMD_FN(cmd_create_cq)
{
	enum rres_err err;
	uint32_t cqn;

	err = rres_cq_create(rd, IN32(virtio_rdma_cmd_create_cq, cqe), &cqn);
	if (!err)
		OUT32(virtio_rdma_ack_create_cq, cqn, cqn);
	return err;
}

static RRES_CMD_FN(cmd_destroy_cq)
{
	return rres_cq_destroy(rd, IN32(virtio_rdma_cmd_destroy_cq, cqn));
}

static RRES_CMD_FN(cmd_create_pd)
{
	enum rres_err err;
	uint32_t pdn;

	err = rres_pd_create(rd, &pdn);
	if (!err)
		OUT32(virtio_rdma_ack_create_pd, pdn, pdn);
	return err;
}

static RRES_CMD_FN(cmd_destroy_pd)
{
	return rres_pd_destroy(rd, IN32(virtio_rdma_cmd_destroy_pd, pdn));
}

static RRES_CMD_FN(cmd_get_dma_mr)
{
	struct rres_mr *mr;
	enum rres_err err;

	err = rres_mr_get_dma(rd, IN32(virtio_rdma_cmd_get_dma_mr, pdn),
			      IN32(virtio_rdma_cmd_get_dma_mr, access_flags), &mr);
	if (!err)
		rres_cmd_put_mr_keys(out, mr);
	return err;
}

/* Check the REG_USER_MR length against its own npages, then register. */
static RRES_CMD_FN(cmd_reg_user_mr)
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
	if (!err)
		rres_cmd_put_mr_keys(out, mr);
	return err;
}

static RRES_CMD_FN(cmd_dereg_mr)
{
	return rres_mr_dereg(rd, IN32(virtio_rdma_cmd_dereg_mr, mrn));
}

static void qp_cap_from_wire(const struct virtio_rdma_qp_cap *w, struct rres_qp_cap *cap)
{
	cap->max_send_wr = le32toh(w->max_send_wr);
	cap->max_recv_wr = le32toh(w->max_recv_wr);
	cap->max_send_sge = le32toh(w->max_send_sge);
	cap->max_recv_sge = le32toh(w->max_recv_sge);
	cap->max_inline_data = le32toh(w->max_inline_data);
}

static RRES_CMD_FN(cmd_create_qp)
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
	qp_cap_from_wire(&c.cap, &init.cap);
	err = rres_qp_create(rd, &init, &qp);
	if (!err)
		OUT32(virtio_rdma_ack_create_qp, qpn, qp->qpn);
	return err;
}

static RRES_CMD_FN(cmd_modify_qp)
{
	struct virtio_rdma_cmd_modify_qp c;
	struct rres_qp_modify m;

	memcpy(&c, in, sizeof(c));
	memset(&m, 0, sizeof(m));
	m.attr_mask = le32toh(c.attr_mask);
	RRES_CMD_GET_QP_MODIFY(&m, &c);
	m.qp_access_flags = le32toh(c.qp_access_flags);
	m.ah_attr = c.ah_attr;
	return rres_qp_modify(rd, le32toh(c.qpn), &m);
}

static RRES_CMD_FN(cmd_query_qp)
{
	uint32_t mask = IN32(virtio_rdma_cmd_query_qp, attr_mask);
	struct rres_qp *qp = rres_qp_lookup(rd, IN32(virtio_rdma_cmd_query_qp, qpn));
	struct virtio_rdma_ack_query_qp_ext a;

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	if (mask & ~(uint32_t)VIRTIO_IB_QP_ATTR_MASK_ALL)
		return RRES_ERR_ATTR_MASK;
	memset(&a, 0, sizeof(a));
	RRES_CMD_PUT_QP_ATTR(&a, qp);
	if (qp->attr.av_valid) {
		RRES_CMD_PUT_AV(&a.ah_attr, &qp->attr.av);
		a.ah_attr.sl = qp->attr.av.sl;
		if (rd->vlan_id) {
			a.ah_attr.flags = VIRTIO_RDMA_AH_F_VLAN;
			put_le16(&a.ah_attr.vlan_id, rd->vlan_id);
		}
	}
	if (rd->ext) {
		put_le32(&a.ext_flags, qp->ext_flags);
		put_le32(&a.srqn, qp->srq ? qp->srq->srqn : 0);
	}
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static RRES_CMD_FN(cmd_destroy_qp)
{
	return rres_qp_destroy(rd, IN32(virtio_rdma_cmd_destroy_qp, qpn));
}

static RRES_CMD_FN(cmd_create_ah)
{
	struct virtio_rdma_cmd_create_ah c;
	enum rres_err err;
	uint32_t ah;

	memcpy(&c, in, sizeof(c));
	err = rres_ah_create(rd, le32toh(c.pdn), &c.ah_attr, &ah);
	if (!err)
		OUT32(virtio_rdma_ack_create_ah, ah, ah);
	return err;
}

static RRES_CMD_FN(cmd_destroy_ah)
{
	return rres_ah_destroy(rd, IN32(virtio_rdma_cmd_destroy_ah, pdn),
			       IN32(virtio_rdma_cmd_destroy_ah, ah));
}

static RRES_CMD_FN(cmd_add_gid)
{
	struct virtio_rdma_cmd_add_gid c;

	memcpy(&c, in, sizeof(c));
	return rres_gid_add(rd, le16toh(c.index), c.gid);
}

static RRES_CMD_FN(cmd_del_gid)
{
	return rres_gid_del(rd, IN16(virtio_rdma_cmd_del_gid, index));
}

static RRES_CMD_FN(cmd_req_notify_cq)
{
	return rres_cq_req_notify(rd, IN32(virtio_rdma_cmd_req_notify, cqn),
				  IN32(virtio_rdma_cmd_req_notify, flags));
}

/* ---- commands of the extension ---- */

static RRES_CMD_FN(cmd_create_srq)
{
	struct rres_srq *srq;
	enum rres_err err;

	err = rres_srq_create(rd, IN32(virtio_rdma_cmd_create_srq, pdn),
			      IN32(virtio_rdma_cmd_create_srq, max_wr),
			      IN32(virtio_rdma_cmd_create_srq, max_sge), &srq);
	if (err)
		return err;
	OUT32(virtio_rdma_ack_create_srq, srqn, srq->srqn);
	OUT32(virtio_rdma_ack_create_srq, max_wr, srq->max_wr);
	OUT32(virtio_rdma_ack_create_srq, max_sge, srq->max_sge);
	return RRES_OK;
}

static RRES_CMD_FN(cmd_modify_srq)
{
	return rres_srq_modify(rd, IN32(virtio_rdma_cmd_modify_srq, srqn),
			       IN32(virtio_rdma_cmd_modify_srq, attr_mask),
			       IN32(virtio_rdma_cmd_modify_srq, srq_limit));
}

static RRES_CMD_FN(cmd_query_srq)
{
	struct rres_srq *srq = rres_srq_lookup(rd, IN32(virtio_rdma_cmd_query_srq, srqn));

	if (!srq)
		return RRES_ERR_BAD_HANDLE;
	OUT32(virtio_rdma_ack_query_srq, max_wr, srq->max_wr);
	OUT32(virtio_rdma_ack_query_srq, max_sge, srq->max_sge);
	OUT32(virtio_rdma_ack_query_srq, srq_limit, srq->srq_limit);
	return RRES_OK;
}

static RRES_CMD_FN(cmd_destroy_srq)
{
	return rres_srq_destroy(rd, IN32(virtio_rdma_cmd_destroy_srq, srqn));
}

static RRES_CMD_FN(cmd_alloc_mr)
{
	uint32_t pdn = IN32(virtio_rdma_cmd_alloc_mr, pdn);
	struct rres_mr *mr;
	enum rres_err err;

	if (!rres_pd_lookup(rd, pdn))
		return RRES_ERR_BAD_HANDLE;
	if (IN32(virtio_rdma_cmd_alloc_mr, mr_type) != VIRTIO_IB_MR_TYPE_MEM_REG)
		return RRES_ERR_RANGE;
	err = rres_mr_alloc(rd, pdn, IN32(virtio_rdma_cmd_alloc_mr, max_num_sg), &mr);
	if (!err)
		rres_cmd_put_mr_keys(out, mr);
	return err;
}

static RRES_CMD_FN(cmd_alloc_mw)
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

static RRES_CMD_FN(cmd_dealloc_mw)
{
	return rres_mw_dealloc(rd, IN32(virtio_rdma_cmd_dealloc_mw, mwn));
}

static RRES_CMD_FN(cmd_resize_cq)
{
	uint32_t cqe = IN32(virtio_rdma_cmd_resize_cq, cqe);
	enum rres_err err;

	err = rres_cq_resize(rd, IN32(virtio_rdma_cmd_resize_cq, cqn), cqe);
	if (!err)
		OUT32(virtio_rdma_ack_resize_cq, cqe, cqe);
	return err;
}

static RRES_CMD_FN(cmd_resize_qp)
{
	struct virtio_rdma_cmd_resize_qp c;
	struct virtio_rdma_ack_resize_qp a;
	struct rres_qp_cap cap;
	enum rres_err err;

	memcpy(&c, in, sizeof(c));
	qp_cap_from_wire(&c.cap, &cap);
	err = rres_qp_resize(rd, le32toh(c.qpn), &cap);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	RRES_CMD_PUT_QP_CAP(&a.cap, rres_qp_lookup(rd, le32toh(c.qpn)));
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static RRES_CMD_FN(cmd_query_pkey)
{
	if (IN16(virtio_rdma_cmd_query_pkey, index) >= rd->attr.max_pkeys)
		return RRES_ERR_RANGE;
	put_le16(out, 0xffff); /* the default P_Key, full membership */
	return RRES_OK;
}

/* One row per command: id, handler, command and ack data lengths, the
 * capability an extension command needs (0: ROCE_EXT only). */
#define RRES_CTRL_CMDS(X)                                                              \
	X(QUERY_DEVICE, query_device, 0, ACK(query_device), 0)                          \
	X(QUERY_PORT, query_port, 0, ACK(query_port), 0)                                \
	X(CREATE_CQ, create_cq, CMD(create_cq), ACK(create_cq), 0)                      \
	X(DESTROY_CQ, destroy_cq, CMD(destroy_cq), 0, 0)                                \
	X(CREATE_PD, create_pd, 0, ACK(create_pd), 0)                                   \
	X(DESTROY_PD, destroy_pd, CMD(destroy_pd), 0, 0)                                \
	X(GET_DMA_MR, get_dma_mr, CMD(get_dma_mr), ACK(get_dma_mr), 0)                  \
	X(REG_USER_MR, reg_user_mr, RRES_CMD_VARLEN, ACK(reg_user_mr), 0)               \
	X(DEREG_MR, dereg_mr, CMD(dereg_mr), 0, 0)                                      \
	X(CREATE_QP, create_qp, CMD(create_qp), ACK(create_qp), 0)                      \
	X(MODIFY_QP, modify_qp, CMD(modify_qp), 0, 0)                                   \
	X(QUERY_QP, query_qp, CMD(query_qp), ACK(query_qp), 0)                          \
	X(DESTROY_QP, destroy_qp, CMD(destroy_qp), 0, 0)                                \
	X(CREATE_AH, create_ah, CMD(create_ah), ACK(create_ah), 0)                      \
	X(DESTROY_AH, destroy_ah, CMD(destroy_ah), 0, 0)                                \
	X(ADD_GID, add_gid, CMD(add_gid), 0, 0)                                         \
	X(DEL_GID, del_gid, CMD(del_gid), 0, 0)                                         \
	X(REQ_NOTIFY_CQ, req_notify_cq, CMD(req_notify), 0, 0)                          \
	X(CREATE_SRQ, create_srq, CMD(create_srq), ACK(create_srq), VIRTIO_IB_DEVICE_SRQ) \
	X(MODIFY_SRQ, modify_srq, CMD(modify_srq), 0, VIRTIO_IB_DEVICE_SRQ)             \
	X(QUERY_SRQ, query_srq, CMD(query_srq), ACK(query_srq), VIRTIO_IB_DEVICE_SRQ)   \
	X(DESTROY_SRQ, destroy_srq, CMD(destroy_srq), 0, VIRTIO_IB_DEVICE_SRQ)          \
	X(ALLOC_MR, alloc_mr, CMD(alloc_mr), ACK(alloc_mr),                             \
	  VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)                                          \
	X(ALLOC_MW, alloc_mw, CMD(alloc_mw), ACK(alloc_mw), VIRTIO_IB_DEVICE_MEM_WINDOW) \
	X(DEALLOC_MW, dealloc_mw, CMD(dealloc_mw), 0, VIRTIO_IB_DEVICE_MEM_WINDOW)      \
	X(RESIZE_CQ, resize_cq, CMD(resize_cq), ACK(resize_cq), VIRTIO_IB_DEVICE_RESIZE_CQ) \
	X(RESIZE_QP, resize_qp, CMD(resize_qp), ACK(resize_qp),                         \
	  VIRTIO_IB_DEVICE_RESIZE_MAX_WR)                                               \
	X(QUERY_PKEY, query_pkey, CMD(query_pkey), ACK(query_pkey), 0)

#define ROW(id, fn, in, out, cap)                                                      \
	[VIRTIO_NET_CTRL_ROCE_##id] = { #id, in, out,                                   \
					VIRTIO_NET_CTRL_ROCE_##id >= VIRTIO_NET_CTRL_ROCE_NUM_CMDS, \
					cap, cmd_##fn },
static const struct rres_cmd_row rows[VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS] = {
	RRES_CTRL_CMDS(ROW)
};
#undef ROW
#define FITS(id, fn, in, out, cap) \
	_Static_assert((out) <= RRES_CMD_OUT_MAX, #id ": the ack fits the buffer");
RRES_CTRL_CMDS(FITS)
#undef FITS
_Static_assert(ACK(query_device_ext) == ACK(query_device), "same ack size");
_Static_assert(ACK(query_port_ext) == ACK(query_port), "same ack size");
_Static_assert(ACK(query_qp_ext) == ACK(query_qp), "same ack size");
_Static_assert(CMD(create_qp_ext) == CMD(create_qp), "same command size");
_Static_assert(offsetof(struct virtio_rdma_ack_get_dma_mr, rkey) == 8 &&
	       offsetof(struct virtio_rdma_ack_reg_user_mr, rkey) == 8 &&
	       offsetof(struct virtio_rdma_ack_alloc_mr, rkey) == 8,
	       "MR acks: mrn, lkey, rkey (rres_cmd_put_mr_keys)");

static const struct rres_cmd_abi abi = {
	.log_name = "roce",
	.rows = rows,
	.n_rows = VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS,
};

const char *rres_cmd_name(uint8_t cmd)
{
	return rres_cmd_row_name(&abi, cmd);
}

enum rres_err rres_ctrl_exec_err(struct rres_dev *rd, uint8_t cmd, const void *in,
				 size_t in_len, void *out, size_t out_cap, size_t *out_len)
{
	return rres_cmd_exec(&abi, rd->stats.cmds, rd, cmd, in, in_len, out, out_cap, out_len);
}

int rres_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
		   void *out, size_t out_cap, size_t *out_len)
{
	return rres_ctrl_exec_err(rd, cmd, in, in_len, out, out_cap, out_len) == RRES_OK
		       ? VIRTIO_NET_OK
		       : VIRTIO_NET_ERR;
}
