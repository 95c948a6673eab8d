/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control commands of the virtio-rdma device (id 42): each command is decoded
 * from its packed little-endian request, checked for what this model adds
 * (port numbers, GID types, IB attribute masks, cqn = virtqueue index),
 * translated to the RoCE core's operation (rres_res.c, rres_srq_mw.c,
 * rres_qp_state.c) and its response encoded. Nothing here trusts in_len,
 * alignment or any value; a failure changes nothing.
 */
#include "backend/virtio_rdma_dev.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "backend/rres_priv.h"
#include "vhost/vhost_mem.h"

#define CMD(name) sizeof(struct virtio_rdma_dev_cmd_##name)
#define RSP(name) sizeof(struct virtio_rdma_dev_rsp_##name)

static const struct {
	const char *name;
	size_t in;
	size_t out;
} cmd_info[VIRTIO_RDMA_DEV_NUM_CMDS] = {
	[VIRTIO_RDMA_DEV_CMD_QUERY_PORT] = { "QUERY_PORT", CMD(query_port), RSP(query_port) },
	[VIRTIO_RDMA_DEV_CMD_CREATE_CQ] = { "CREATE_CQ", CMD(create_cq), RSP(create_cq) },
	[VIRTIO_RDMA_DEV_CMD_DESTROY_CQ] = { "DESTROY_CQ", CMD(destroy_cq), 0 },
	[VIRTIO_RDMA_DEV_CMD_CREATE_PD] = { "CREATE_PD", 0, RSP(create_pd) },
	[VIRTIO_RDMA_DEV_CMD_DESTROY_PD] = { "DESTROY_PD", CMD(destroy_pd), 0 },
	[VIRTIO_RDMA_DEV_CMD_GET_DMA_MR] = { "GET_DMA_MR", CMD(get_dma_mr), RSP(get_dma_mr) },
	[VIRTIO_RDMA_DEV_CMD_CREATE_MR] = { "CREATE_MR", CMD(create_mr), RSP(create_mr) },
	[VIRTIO_RDMA_DEV_CMD_MAP_MR_SG] = { "MAP_MR_SG", CMD(map_mr_sg), RSP(map_mr_sg) },
	[VIRTIO_RDMA_DEV_CMD_REG_USER_MR] = { "REG_USER_MR", CMD(reg_user_mr),
					      RSP(reg_user_mr) },
	[VIRTIO_RDMA_DEV_CMD_DEREG_MR] = { "DEREG_MR", CMD(dereg_mr), 0 },
	[VIRTIO_RDMA_DEV_CMD_CREATE_QP] = { "CREATE_QP", CMD(create_qp), RSP(create_qp) },
	[VIRTIO_RDMA_DEV_CMD_MODIFY_QP] = { "MODIFY_QP", CMD(modify_qp), 0 },
	[VIRTIO_RDMA_DEV_CMD_QUERY_QP] = { "QUERY_QP", CMD(query_qp), RSP(query_qp) },
	[VIRTIO_RDMA_DEV_CMD_DESTROY_QP] = { "DESTROY_QP", CMD(destroy_qp), 0 },
	[VIRTIO_RDMA_DEV_CMD_QUERY_PKEY] = { "QUERY_PKEY", CMD(query_pkey), RSP(query_pkey) },
	[VIRTIO_RDMA_DEV_CMD_ADD_GID] = { "ADD_GID", CMD(add_gid), 0 },
	[VIRTIO_RDMA_DEV_CMD_DEL_GID] = { "DEL_GID", CMD(del_gid), 0 },
	[VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ] = { "REQ_NOTIFY_CQ", CMD(req_notify), 0 },
};

/* The one port of the device. */
#define PORT 1u

/* IB access bits that are hints only: accepted and dropped. */
#define ACCESS_HINTS (VIRTIO_RDMA_DEV_ACCESS_HUGETLB | VIRTIO_RDMA_DEV_ACCESS_RELAXED_ORDERING)

/* IB attr_mask bits with a core equivalent (bit b maps to attr_map[b]). */
static const uint32_t attr_map[32] = {
	[0] = VIRTIO_IB_QP_STATE,
	[1] = VIRTIO_IB_QP_CUR_STATE,
	[3] = VIRTIO_IB_QP_ACCESS_FLAGS,
	[6] = VIRTIO_IB_QP_QKEY,
	[7] = VIRTIO_IB_QP_AV,
	[8] = VIRTIO_IB_QP_PATH_MTU,
	[9] = VIRTIO_IB_QP_TIMEOUT,
	[10] = VIRTIO_IB_QP_RETRY_CNT,
	[11] = VIRTIO_IB_QP_RNR_RETRY,
	[12] = VIRTIO_IB_QP_RQ_PSN,
	[13] = VIRTIO_IB_QP_MAX_QP_RD_ATOMIC,
	[15] = VIRTIO_IB_QP_MIN_RNR_TIMER,
	[16] = VIRTIO_IB_QP_SQ_PSN,
	[17] = VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC,
	[19] = VIRTIO_IB_QP_CAP,
	[20] = VIRTIO_IB_QP_DEST_QPN,
	[25] = VIRTIO_IB_QP_RATE_LIMIT,
};
/* Accepted without a core equivalent (checked here, then dropped). */
#define ATTR_LOCAL (VIRTIO_RDMA_DEV_QP_EN_SQD_ASYNC_NOTIFY | VIRTIO_RDMA_DEV_QP_PKEY_INDEX | \
		    VIRTIO_RDMA_DEV_QP_PORT)

const char *virtio_rdma_dev_cmd_name(uint8_t cmd)
{
	return cmd < VIRTIO_RDMA_DEV_NUM_CMDS && cmd_info[cmd].name ? cmd_info[cmd].name : "?";
}

#define IN8(s, f)  (((const uint8_t *)in)[offsetof(struct virtio_rdma_dev_##s, f)])
#define IN16(s, f) get_le16((const uint8_t *)in + offsetof(struct virtio_rdma_dev_##s, f))
#define IN32(s, f) get_le32((const uint8_t *)in + offsetof(struct virtio_rdma_dev_##s, f))
#define IN64(s, f) get_le64((const uint8_t *)in + offsetof(struct virtio_rdma_dev_##s, f))
#define OUT32(s, f, v) put_le32((uint8_t *)out + offsetof(struct virtio_rdma_dev_##s, f), (v))

/* cqn on the wire is the completion virtqueue index: core cqn + 1. */
static uint32_t cqn_from_wire(uint32_t cqn)
{
	return cqn - 1; /* 0 wraps to an invalid handle */
}

/* IB access flags -> core flags; false if a bit is not supported. */
static bool access_from_wire(uint32_t in, uint32_t *out)
{
	in &= ~(uint32_t)ACCESS_HINTS;
	if (in & ~(uint32_t)(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
			     VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ |
			     VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC | VIRTIO_RDMA_DEV_ACCESS_MW_BIND))
		return false;
	*out = in; /* same bit numbers as VIRTIO_IB_ACCESS_* */
	return true;
}

void virtio_rdma_dev_setup(struct rres_dev *rd)
{
	rd->rdma_dev_layout = true; /* before any object: their rings follow it */
	rres_dev_set_ext(rd, true);
}

void virtio_rdma_dev_config(const struct rres_dev *rd, struct virtio_rdma_dev_config *c)
{
	const struct rres_dev_attr *a = &rd->attr;
	uint64_t guid = 0;
	uint8_t *g = (uint8_t *)&guid;

	memset(c, 0, sizeof(*c));
	/* EUI-64 from the MAC, as the link-local GID's interface id */
	g[0] = rd->mac[0] ^ 2;
	g[1] = rd->mac[1];
	g[2] = rd->mac[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = rd->mac[3];
	g[6] = rd->mac[4];
	g[7] = rd->mac[5];
	put_le32(&c->phys_port_cnt, 1);
	memcpy(&c->sys_image_guid, &guid, 8);
	put_le32(&c->vendor_id, 0x1af4); /* the virtio PCI vendor */
	put_le32(&c->vendor_part_id, VIRTIO_ID_RDMA);
	put_le32(&c->hw_ver, a->hw_ver);
	put_le64(&c->max_mr_size, a->max_mr_size);
	put_le64(&c->page_size_cap, a->page_size_cap);
	put_le32(&c->max_qp, a->max_qp);
	put_le32(&c->max_qp_wr, a->max_qp_wr);
	put_le64(&c->device_cap_flags, VIRTIO_RDMA_DEV_CAP_RC_RNR_NAK_GEN |
					      VIRTIO_RDMA_DEV_CAP_SYS_IMAGE_GUID |
					      VIRTIO_RDMA_DEV_CAP_MEM_MGT_EXTENSIONS);
	put_le32(&c->max_send_sge, a->max_send_sge);
	put_le32(&c->max_recv_sge, a->max_recv_sge);
	put_le32(&c->max_sge_rd, a->max_sge_rd);
	put_le32(&c->max_cq, a->max_cq);
	put_le32(&c->max_cqe, a->max_cqe);
	put_le32(&c->max_mr, a->max_mr);
	put_le32(&c->max_pd, a->max_pd);
	put_le32(&c->max_qp_rd_atom, a->max_qp_rd_atom);
	put_le32(&c->max_res_rd_atom, a->max_qp_rd_atom * a->max_qp);
	put_le32(&c->max_qp_init_rd_atom, a->max_qp_init_rd_atom);
	c->atomic_cap = VIRTIO_RDMA_DEV_ATOMIC_HCA;
	/* no command allocates a window in this model: max_mw 0 [spec.md] */
	put_le32(&c->max_ah, a->max_ah);
	put_le32(&c->max_fast_reg_page_list_len, a->max_fast_reg_page_list_len);
	put_le16(&c->max_pkeys, a->max_pkeys);
	c->local_ca_ack_delay = a->local_ca_ack_delay;
}

static enum rres_err cmd_query_port(struct rres_dev *rd, const void *in, void *out)
{
	struct virtio_rdma_dev_rsp_query_port r;

	if (IN8(cmd_query_port, port) != PORT)
		return RRES_ERR_RANGE;
	memset(&r, 0, sizeof(r));
	r.state = VIRTIO_RDMA_DEV_PORT_ACTIVE;
	r.max_mtu = VIRTIO_IB_MTU_4096;
	r.active_mtu = rd->attr.active_mtu;
	put_le32(&r.phys_mtu, virtio_ib_mtu_bytes(rd->attr.active_mtu));
	put_le32(&r.gid_tbl_len, rd->attr.gid_tbl_len);
	put_le32(&r.port_cap_flags, VIRTIO_RDMA_DEV_PORT_CM_SUP);
	put_le32(&r.max_msg_sz, rd->attr.max_msg_sz);
	put_le16(&r.pkey_tbl_len, rd->attr.max_pkeys);
	r.active_width = VIRTIO_RDMA_DEV_WIDTH_1X;
	put_le16(&r.active_speed, VIRTIO_RDMA_DEV_SPEED_EDR);
	r.phys_state = VIRTIO_RDMA_DEV_PHYS_LINK_UP;
	if (rd->has_ip4)
		memcpy(r.gid1_ipv4, &rd->ip4, 4);
	if (rd->has_ip6)
		memcpy(r.gid2_ipv6, rd->ip6, 16);
	memcpy(out, &r, sizeof(r));
	return RRES_OK;
}

static enum rres_err cmd_get_dma_mr(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_mr *mr;
	enum rres_err err;
	uint32_t access;

	if (!access_from_wire(IN32(cmd_get_dma_mr, access_flags), &access))
		return RRES_ERR_FLAGS;
	err = rres_mr_get_dma(rd, IN32(cmd_get_dma_mr, pdn), access, &mr);
	if (err)
		return err;
	OUT32(rsp_get_dma_mr, mrn, mr->mrn);
	OUT32(rsp_get_dma_mr, lkey, mr->lkey);
	OUT32(rsp_get_dma_mr, rkey, mr->rkey);
	return RRES_OK;
}

static enum rres_err cmd_create_mr(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_mr *mr;
	enum rres_err err;
	uint32_t access;

	if (!rres_pd_lookup(rd, IN32(cmd_create_mr, pdn)))
		return RRES_ERR_BAD_HANDLE;
	if (!access_from_wire(IN32(cmd_create_mr, access_flags), &access) ||
	    !rres_mr_access_ok(rd, access))
		return RRES_ERR_FLAGS;
	err = rres_mr_alloc(rd, IN32(cmd_create_mr, pdn), IN32(cmd_create_mr, max_num_sg), &mr);
	if (err)
		return err;
	mr->access = access; /* used by MAP_MR_SG; keys unusable until then */
	OUT32(rsp_create_mr, mrn, mr->mrn);
	OUT32(rsp_create_mr, lkey, mr->lkey);
	OUT32(rsp_create_mr, rkey, mr->rkey);
	return RRES_OK;
}

/* Pages of [va, va+len) in 4 KiB pages (0 for len 0), saturated. */
static uint64_t span_pages(uint64_t va, uint64_t len)
{
	return len ? rres_span_pages(va, len) : 0;
}

static enum rres_err cmd_map_mr_sg(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_mr *mr = rres_mr_lookup(rd, IN32(cmd_map_mr_sg, mrn));
	uint32_t npages = IN32(cmd_map_mr_sg, npages);
	uint64_t start = IN64(cmd_map_mr_sg, start), length = IN64(cmd_map_mr_sg, length);

	if (!mr)
		return RRES_ERR_BAD_HANDLE;
	if (mr->type != RRES_MR_FAST)
		return RRES_ERR_RANGE;
	if (mr->state != RRES_MR_FREE)
		return RRES_ERR_IN_USE;
	if (length > rd->attr.max_mr_size || (length && start > UINT64_MAX - (length - 1)))
		return RRES_ERR_RANGE;
	if (span_pages(start, length) != npages)
		return RRES_ERR_NPAGES;
	if (npages > mr->max_pages)
		return RRES_ERR_LIMIT;
	if (rres_mr_fast_reg(rd, mr->pd, mr->lkey, start, length, IN64(cmd_map_mr_sg, pages),
			     mr->access))
		return RRES_ERR_PAGE;
	OUT32(rsp_map_mr_sg, npages, npages);
	return RRES_OK;
}

static enum rres_err cmd_reg_user_mr(struct rres_dev *rd, const void *in, void *out)
{
	uint32_t npages = IN32(cmd_reg_user_mr, npages), access;
	uint64_t gpa = IN64(cmd_reg_user_mr, pages);
	const void *table;
	struct rres_mr *mr;
	enum rres_err err;
	void *copy;

	if (!access_from_wire(IN32(cmd_reg_user_mr, access_flags), &access))
		return RRES_ERR_FLAGS;
	if (!rres_pd_lookup(rd, IN32(cmd_reg_user_mr, pdn)))
		return RRES_ERR_BAD_HANDLE;
	if (!npages)
		return RRES_ERR_NPAGES;
	if (npages > rd->max_mr_pages)
		return RRES_ERR_LIMIT;
	/* the page table: inside one region of driver memory, copied once so
	 * the driver cannot change it while it is checked */
	table = rd->mem ? vhost_mem_gpa_to_host(rd->mem, gpa, 8ull * npages) : NULL;
	if (!table)
		return RRES_ERR_PAGE;
	copy = malloc(8ull * npages);
	if (!copy)
		return RRES_ERR_NOMEM;
	memcpy(copy, table, 8ull * npages);
	err = rres_mr_reg_user(rd, IN32(cmd_reg_user_mr, pdn), access,
			       IN64(cmd_reg_user_mr, virt_addr), IN64(cmd_reg_user_mr, length),
			       npages, copy, &mr);
	free(copy);
	if (err)
		return err;
	OUT32(rsp_reg_user_mr, mrn, mr->mrn);
	OUT32(rsp_reg_user_mr, lkey, mr->lkey);
	OUT32(rsp_reg_user_mr, rkey, mr->rkey);
	return RRES_OK;
}

static enum rres_err cmd_create_qp(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_qp_init init;
	struct rres_qp *qp;
	enum rres_err err;
	uint8_t sig = IN8(cmd_create_qp, sq_sig_type);

	if (sig != VIRTIO_RDMA_DEV_SIGNAL_ALL_WR && sig != VIRTIO_RDMA_DEV_SIGNAL_REQ_WR)
		return RRES_ERR_RANGE;
	memset(&init, 0, sizeof(init));
	init.pdn = IN32(cmd_create_qp, pdn);
	init.qp_type = IN8(cmd_create_qp, qp_type);
	init.sq_sig_all = sig == VIRTIO_RDMA_DEV_SIGNAL_ALL_WR;
	init.send_cqn = cqn_from_wire(IN32(cmd_create_qp, send_cqn));
	init.recv_cqn = cqn_from_wire(IN32(cmd_create_qp, recv_cqn));
	init.cap.max_send_wr = IN32(cmd_create_qp, max_send_wr);
	init.cap.max_send_sge = IN32(cmd_create_qp, max_send_sge);
	init.cap.max_recv_wr = IN32(cmd_create_qp, max_recv_wr);
	init.cap.max_recv_sge = IN32(cmd_create_qp, max_recv_sge);
	init.cap.max_inline_data = IN32(cmd_create_qp, max_inline_data);
	err = rres_qp_create(rd, &init, &qp);
	if (err)
		return err;
	OUT32(rsp_create_qp, qpn, qp->qpn);
	return RRES_OK;
}

/* The address vector of a connected QP: GRH required (RoCE), port 1. */
static enum rres_err ah_from_wire(const struct virtio_rdma_dev_ah_attr *w,
				  struct virtio_rdma_ah_attr *a)
{
	if (!(w->ah_flags & VIRTIO_RDMA_DEV_AH_GRH) || (w->ah_flags & ~VIRTIO_RDMA_DEV_AH_GRH))
		return RRES_ERR_RANGE;
	if (w->port_num != PORT || w->sl > 15)
		return RRES_ERR_RANGE;
	virtio_rdma_dev_ah_to_roce(w, a);
	return RRES_OK;
}

static enum rres_err cmd_modify_qp(struct rres_dev *rd, const void *in)
{
	struct virtio_rdma_dev_cmd_modify_qp c;
	const struct virtio_rdma_dev_qp_attr *w = &c.attrs;
	struct rres_qp_modify m;
	enum rres_err err;
	uint32_t mask, b;

	memcpy(&c, in, sizeof(c));
	mask = le32toh(c.attr_mask);
	memset(&m, 0, sizeof(m));
	for (b = 0; b < 32; b++) {
		if (!(mask & (1u << b)))
			continue;
		if (attr_map[b])
			m.attr_mask |= attr_map[b];
		else if (!((1u << b) & ATTR_LOCAL))
			return RRES_ERR_ATTR_MASK; /* ALT_PATH, PATH_MIG_STATE, reserved */
	}
	if ((mask & VIRTIO_RDMA_DEV_QP_PKEY_INDEX) && le16toh(w->pkey_index) >= rd->attr.max_pkeys)
		return RRES_ERR_RANGE;
	if ((mask & VIRTIO_RDMA_DEV_QP_PORT) && w->port_num != PORT)
		return RRES_ERR_RANGE;
	if ((mask & VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS) &&
	    !access_from_wire(le32toh(w->qp_access_flags), &m.qp_access_flags))
		return RRES_ERR_FLAGS;
	if (mask & VIRTIO_RDMA_DEV_QP_AV) {
		err = ah_from_wire(&w->ah_attr, &m.ah_attr);
		if (err)
			return err;
	}
	m.qp_state = w->qp_state;
	m.cur_qp_state = w->cur_qp_state;
	m.path_mtu = w->path_mtu;
	m.max_rd_atomic = w->max_rd_atomic;
	m.max_dest_rd_atomic = w->max_dest_rd_atomic;
	m.min_rnr_timer = w->min_rnr_timer;
	m.timeout = w->timeout;
	m.retry_cnt = w->retry_cnt;
	m.rnr_retry = w->rnr_retry;
	m.qkey = le32toh(w->qkey);
	m.rq_psn = le32toh(w->rq_psn);
	m.sq_psn = le32toh(w->sq_psn);
	m.dest_qp_num = le32toh(w->dest_qp_num);
	m.rate_limit = le32toh(w->rate_limit);
	return rres_qp_modify(rd, le32toh(c.qpn), &m);
}

static enum rres_err cmd_query_qp(struct rres_dev *rd, const void *in, void *out)
{
	struct rres_qp *qp = rres_qp_lookup(rd, IN32(cmd_query_qp, qpn));
	uint32_t mask = IN32(cmd_query_qp, attr_mask), b;
	struct virtio_rdma_dev_qp_attr a;
	const struct rres_qp_attr *at;

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	for (b = 0; b < 32; b++)
		if ((mask & (1u << b)) && !attr_map[b] && !((1u << b) & ATTR_LOCAL))
			return RRES_ERR_ATTR_MASK;
	at = &qp->attr;
	memset(&a, 0, sizeof(a));
	a.qp_state = at->qp_state;
	a.cur_qp_state = at->qp_state;
	a.path_mtu = at->path_mtu;
	a.sq_draining = qp->sq_draining;
	a.max_rd_atomic = at->max_rd_atomic;
	a.max_dest_rd_atomic = at->max_dest_rd_atomic;
	a.min_rnr_timer = at->min_rnr_timer;
	a.port_num = PORT;
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
	if (at->av_valid) {
		memcpy(a.ah_attr.grh.dgid, at->av.dgid, 16);
		put_le32(&a.ah_attr.grh.flow_label, at->av.flow_label);
		a.ah_attr.grh.sgid_index = at->av.sgid_index;
		a.ah_attr.grh.hop_limit = at->av.hop_limit;
		a.ah_attr.grh.traffic_class = at->av.traffic_class;
		a.ah_attr.port_num = PORT;
		a.ah_attr.ah_flags = VIRTIO_RDMA_DEV_AH_GRH;
		memcpy(a.ah_attr.dmac, at->av.dmac, 6);
	}
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static enum rres_err cmd_query_pkey(struct rres_dev *rd, const void *in, void *out)
{
	if (IN32(cmd_query_pkey, port) != PORT || IN16(cmd_query_pkey, index) >= rd->attr.max_pkeys)
		return RRES_ERR_RANGE;
	put_le16(out, 0xffff); /* the default P_Key, full membership */
	return RRES_OK;
}

static enum rres_err cmd_add_gid(struct rres_dev *rd, const void *in)
{
	struct virtio_rdma_dev_cmd_add_gid c;

	memcpy(&c, in, sizeof(c));
	if (le32toh(c.port_num) != PORT)
		return RRES_ERR_RANGE;
	/* the transport is RoCE v2 only */
	if (le32toh(c.gid_type) != VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2)
		return RRES_ERR_GID;
	return rres_gid_add(rd, le16toh(c.index), c.gid);
}

static enum rres_err cmd_dispatch(struct rres_dev *rd, uint8_t cmd, const void *in, void *out)
{
	enum rres_err err;
	uint32_t v;

	switch (cmd) {
	case VIRTIO_RDMA_DEV_CMD_QUERY_PORT:
		return cmd_query_port(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_CREATE_CQ:
		err = rres_cq_create(rd, IN32(cmd_create_cq, cqe), &v);
		if (!err)
			OUT32(rsp_create_cq, cqn, v + 1);
		return err;
	case VIRTIO_RDMA_DEV_CMD_DESTROY_CQ:
		return rres_cq_destroy(rd, cqn_from_wire(IN32(cmd_destroy_cq, cqn)));
	case VIRTIO_RDMA_DEV_CMD_CREATE_PD:
		err = rres_pd_create(rd, &v);
		if (!err)
			OUT32(rsp_create_pd, pdn, v);
		return err;
	case VIRTIO_RDMA_DEV_CMD_DESTROY_PD:
		return rres_pd_destroy(rd, IN32(cmd_destroy_pd, pdn));
	case VIRTIO_RDMA_DEV_CMD_GET_DMA_MR:
		return cmd_get_dma_mr(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_CREATE_MR:
		return cmd_create_mr(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_MAP_MR_SG:
		return cmd_map_mr_sg(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_REG_USER_MR:
		return cmd_reg_user_mr(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_DEREG_MR:
		return rres_mr_dereg(rd, IN32(cmd_dereg_mr, mrn));
	case VIRTIO_RDMA_DEV_CMD_CREATE_QP:
		return cmd_create_qp(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_MODIFY_QP:
		return cmd_modify_qp(rd, in);
	case VIRTIO_RDMA_DEV_CMD_QUERY_QP:
		return cmd_query_qp(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_DESTROY_QP:
		return rres_qp_destroy(rd, IN32(cmd_destroy_qp, qpn));
	case VIRTIO_RDMA_DEV_CMD_QUERY_PKEY:
		return cmd_query_pkey(rd, in, out);
	case VIRTIO_RDMA_DEV_CMD_ADD_GID:
		return cmd_add_gid(rd, in);
	case VIRTIO_RDMA_DEV_CMD_DEL_GID:
		if (IN32(cmd_del_gid, port) != PORT)
			return RRES_ERR_RANGE;
		return rres_gid_del(rd, IN16(cmd_del_gid, index));
	case VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ:
		return rres_cq_req_notify(rd, cqn_from_wire(IN32(cmd_req_notify, cqn)),
					  IN32(cmd_req_notify, flags));
	default:
		return RRES_ERR_UNKNOWN_CMD;
	}
}

enum rres_err virtio_rdma_dev_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in,
					size_t in_len, void *out, size_t out_cap,
					size_t *out_len)
{
	uint8_t rsp[RSP(query_port)];
	enum rres_err err;

	_Static_assert(RSP(query_port) >= RSP(query_qp), "response buffer holds every response");
	*out_len = 0;
	if (cmd == 0 || cmd >= VIRTIO_RDMA_DEV_NUM_CMDS) {
		err = RRES_ERR_UNKNOWN_CMD;
		goto done;
	}
	rd->stats.rdma_dev_cmds[cmd]++;
	if ((!in && in_len) || in_len != cmd_info[cmd].in) {
		err = RRES_ERR_BAD_LEN;
		goto done;
	}
	if (out_cap < cmd_info[cmd].out || (cmd_info[cmd].out && !out)) {
		err = RRES_ERR_OUT_SPACE;
		goto done;
	}
	/* handlers write into a local buffer: out is only touched on success */
	memset(rsp, 0, sizeof(rsp));
	err = cmd_dispatch(rd, cmd, in, rsp);
	if (!err) {
		if (cmd_info[cmd].out)
			memcpy(out, rsp, cmd_info[cmd].out);
		*out_len = cmd_info[cmd].out;
	}
done:
	if (err) {
		rd->stats.err++;
		rd->stats.errs[err]++;
		LOG_DEBUG("virtio-rdma: %s failed: %s", virtio_rdma_dev_cmd_name(cmd),
			  rres_err_name(err));
	} else {
		rd->stats.ok++;
	}
	return err;
}
