/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control commands of the virtio-rdma device (id 42): each command is decoded
 * from its packed little-endian request, checked for what this model adds
 * (port numbers, GID types, IB attribute masks, cqn = virtqueue index),
 * translated to the RoCE core's operation (rres_res.c, rres_srq_mw.c,
 * rres_qp_state.c) and its response encoded; the table at the end has a
 * row per command, run by rres_cmd.c. Nothing here trusts in_len,
 * alignment or any value; a failure changes nothing.
 */
#include "backend/virtio_rdma_dev.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "backend/rres_cmd.h"
#include "backend/rres_priv.h"
#include "vhost/vhost_mem.h"

#define CMD(name) sizeof(struct virtio_rdma_dev_cmd_##name)
#define RSP(name) sizeof(struct virtio_rdma_dev_rsp_##name)

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

static RRES_CMD_FN(cmd_query_port)
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

static RRES_CMD_FN(cmd_get_dma_mr)
{
	struct rres_mr *mr;
	enum rres_err err;
	uint32_t access;

	if (!access_from_wire(IN32(cmd_get_dma_mr, access_flags), &access))
		return RRES_ERR_FLAGS;
	err = rres_mr_get_dma(rd, IN32(cmd_get_dma_mr, pdn), access, &mr);
	if (err)
		return err;
	rres_cmd_put_mr_keys(out, mr);
	return RRES_OK;
}

static RRES_CMD_FN(cmd_create_mr)
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
	rres_cmd_put_mr_keys(out, mr);
	return RRES_OK;
}

/* Pages of [va, va+len) in 4 KiB pages (0 for len 0), saturated. */
static uint64_t span_pages(uint64_t va, uint64_t len)
{
	return len ? rres_span_pages(va, len) : 0;
}

static RRES_CMD_FN(cmd_map_mr_sg)
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

static RRES_CMD_FN(cmd_reg_user_mr)
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
	rres_cmd_put_mr_keys(out, mr);
	return RRES_OK;
}

static RRES_CMD_FN(cmd_create_qp)
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

static RRES_CMD_FN(cmd_modify_qp)
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
	RRES_CMD_GET_QP_MODIFY(&m, w);
	return rres_qp_modify(rd, le32toh(c.qpn), &m);
}

static RRES_CMD_FN(cmd_query_qp)
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
	RRES_CMD_PUT_QP_ATTR(&a, qp);
	a.cur_qp_state = at->qp_state;
	a.port_num = PORT;
	if (at->av_valid) {
		RRES_CMD_PUT_AV(&a.ah_attr, &at->av);
		a.ah_attr.port_num = PORT;
		a.ah_attr.ah_flags = VIRTIO_RDMA_DEV_AH_GRH;
	}
	memcpy(out, &a, sizeof(a));
	return RRES_OK;
}

static RRES_CMD_FN(cmd_query_pkey)
{
	if (IN32(cmd_query_pkey, port) != PORT || IN16(cmd_query_pkey, index) >= rd->attr.max_pkeys)
		return RRES_ERR_RANGE;
	put_le16(out, 0xffff); /* the default P_Key, full membership */
	return RRES_OK;
}

static RRES_CMD_FN(cmd_add_gid)
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

static RRES_CMD_FN(cmd_create_cq)
{
	enum rres_err err;
	uint32_t cqn;

	err = rres_cq_create(rd, IN32(cmd_create_cq, cqe), &cqn);
	if (!err)
		OUT32(rsp_create_cq, cqn, cqn + 1);
	return err;
}

static RRES_CMD_FN(cmd_destroy_cq)
{
	return rres_cq_destroy(rd, cqn_from_wire(IN32(cmd_destroy_cq, cqn)));
}

static RRES_CMD_FN(cmd_create_pd)
{
	enum rres_err err;
	uint32_t pdn;

	err = rres_pd_create(rd, &pdn);
	if (!err)
		OUT32(rsp_create_pd, pdn, pdn);
	return err;
}

static RRES_CMD_FN(cmd_destroy_pd)
{
	return rres_pd_destroy(rd, IN32(cmd_destroy_pd, pdn));
}

static RRES_CMD_FN(cmd_dereg_mr)
{
	return rres_mr_dereg(rd, IN32(cmd_dereg_mr, mrn));
}

static RRES_CMD_FN(cmd_destroy_qp)
{
	return rres_qp_destroy(rd, IN32(cmd_destroy_qp, qpn));
}

static RRES_CMD_FN(cmd_del_gid)
{
	if (IN32(cmd_del_gid, port) != PORT)
		return RRES_ERR_RANGE;
	return rres_gid_del(rd, IN16(cmd_del_gid, index));
}

static RRES_CMD_FN(cmd_req_notify_cq)
{
	return rres_cq_req_notify(rd, cqn_from_wire(IN32(cmd_req_notify, cqn)),
				  IN32(cmd_req_notify, flags));
}

/* One row per command: id, handler, request and response lengths. */
#define VIRTIO_RDMA_DEV_CMDS(X)                                               \
	X(QUERY_PORT, query_port, CMD(query_port), RSP(query_port))            \
	X(CREATE_CQ, create_cq, CMD(create_cq), RSP(create_cq))                \
	X(DESTROY_CQ, destroy_cq, CMD(destroy_cq), 0)                          \
	X(CREATE_PD, create_pd, 0, RSP(create_pd))                             \
	X(DESTROY_PD, destroy_pd, CMD(destroy_pd), 0)                          \
	X(GET_DMA_MR, get_dma_mr, CMD(get_dma_mr), RSP(get_dma_mr))            \
	X(CREATE_MR, create_mr, CMD(create_mr), RSP(create_mr))                \
	X(MAP_MR_SG, map_mr_sg, CMD(map_mr_sg), RSP(map_mr_sg))                \
	X(REG_USER_MR, reg_user_mr, CMD(reg_user_mr), RSP(reg_user_mr))        \
	X(DEREG_MR, dereg_mr, CMD(dereg_mr), 0)                                \
	X(CREATE_QP, create_qp, CMD(create_qp), RSP(create_qp))                \
	X(MODIFY_QP, modify_qp, CMD(modify_qp), 0)                             \
	X(QUERY_QP, query_qp, CMD(query_qp), RSP(query_qp))                    \
	X(DESTROY_QP, destroy_qp, CMD(destroy_qp), 0)                          \
	X(QUERY_PKEY, query_pkey, CMD(query_pkey), RSP(query_pkey))            \
	X(ADD_GID, add_gid, CMD(add_gid), 0)                                   \
	X(DEL_GID, del_gid, CMD(del_gid), 0)                                   \
	X(REQ_NOTIFY_CQ, req_notify_cq, CMD(req_notify), 0)

#define ROW(id, fn, in, out) \
	[VIRTIO_RDMA_DEV_CMD_##id] = { #id, in, out, false, 0, cmd_##fn },
static const struct rres_cmd_row rows[VIRTIO_RDMA_DEV_NUM_CMDS] = {
	VIRTIO_RDMA_DEV_CMDS(ROW)
};
#undef ROW
#define FITS(id, fn, in, out) \
	_Static_assert((out) <= RRES_CMD_OUT_MAX, #id ": the response fits the buffer");
VIRTIO_RDMA_DEV_CMDS(FITS)
#undef FITS
_Static_assert(offsetof(struct virtio_rdma_dev_rsp_get_dma_mr, rkey) == 8 &&
	       offsetof(struct virtio_rdma_dev_rsp_create_mr, rkey) == 8 &&
	       offsetof(struct virtio_rdma_dev_rsp_reg_user_mr, rkey) == 8,
	       "MR responses: mrn, lkey, rkey (rres_cmd_put_mr_keys)");
_Static_assert(VIRTIO_RDMA_DEV_NUM_CMDS <= sizeof(((struct rres_stats *)0)->rdma_dev_cmds) /
						   sizeof(uint64_t),
	       "a counter per command");

static const struct rres_cmd_abi abi = {
	.log_name = "virtio-rdma",
	.rows = rows,
	.n_rows = VIRTIO_RDMA_DEV_NUM_CMDS,
};

const char *virtio_rdma_dev_cmd_name(uint8_t cmd)
{
	return rres_cmd_row_name(&abi, cmd);
}

enum rres_err virtio_rdma_dev_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in,
					size_t in_len, void *out, size_t out_cap,
					size_t *out_len)
{
	return rres_cmd_exec(&abi, rd->stats.rdma_dev_cmds, rd, cmd, in, in_len, out, out_cap,
			     out_len);
}
