/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The virtio-rdma device (virtio id 42) as the guest kernel sees it: the
 * same packed layouts as include/vrdma/virtio_rdma.h (docs/spec.md "The
 * virtio-rdma device"), with kernel types. Sizes and offsets are asserted
 * against the numbers pinned on the device side.
 */
#ifndef VRG_ABI_H
#define VRG_ABI_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

#define VIRTIO_ID_RDMA 42
#define VRG_QPN_PAIR_MASK 0x3fff /* the qpn's low 14 bits: its virtqueue pair */
/* Bytes of the configuration a driver reads (every defined field is there). */
#define VRG_CONFIG_READ 128

struct vrg_config {
	__le32 phys_port_cnt;
	__le64 sys_image_guid;
	__le32 vendor_id;
	__le32 vendor_part_id;
	__le32 hw_ver;
	__le64 max_mr_size;
	__le64 page_size_cap;
	__le32 max_qp;
	__le32 max_qp_wr;
	__le64 device_cap_flags;
	__le32 max_send_sge;
	__le32 max_recv_sge;
	__le32 max_sge_rd;
	__le32 max_cq;
	__le32 max_cqe;
	__le32 max_mr;
	__le32 max_pd;
	__le32 max_qp_rd_atom;
	__le32 max_res_rd_atom;
	__le32 max_qp_init_rd_atom;
	u8 atomic_cap;
	__le32 max_mw;
	__le32 max_mcast_grp;
	__le32 max_mcast_qp_attach;
	__le32 max_total_mcast_qp_attach;
	__le32 max_ah;
	__le32 max_fast_reg_page_list_len;
	__le32 max_pi_fast_reg_page_list_len;
	__le16 max_pkeys;
	u8 local_ca_ack_delay;
} __packed;

#define VRG_CTRL_OK 0

enum vrg_cmd_op {
	VRG_CMD_QUERY_PORT = 1,
	VRG_CMD_CREATE_CQ,
	VRG_CMD_DESTROY_CQ,
	VRG_CMD_CREATE_PD,
	VRG_CMD_DESTROY_PD,
	VRG_CMD_GET_DMA_MR,
	VRG_CMD_CREATE_MR,
	VRG_CMD_MAP_MR_SG,
	VRG_CMD_REG_USER_MR,
	VRG_CMD_DEREG_MR,
	VRG_CMD_CREATE_QP,
	VRG_CMD_MODIFY_QP,
	VRG_CMD_QUERY_QP,
	VRG_CMD_DESTROY_QP,
	VRG_CMD_QUERY_PKEY,
	VRG_CMD_ADD_GID,
	VRG_CMD_DEL_GID,
	VRG_CMD_REQ_NOTIFY_CQ,
};

struct vrg_rsp_query_port {
	u8 state;
	u8 max_mtu;
	u8 active_mtu;
	__le32 phys_mtu;
	__le32 gid_tbl_len;
	__le32 port_cap_flags;
	__le32 max_msg_sz;
	__le32 bad_pkey_cntr;
	__le32 qkey_viol_cntr;
	__le16 pkey_tbl_len;
	u8 active_width;
	__le16 active_speed;
	u8 phys_state;
	__le32 reserved[32];
} __packed;

struct vrg_cmd_get_dma_mr {
	__le32 pdn;
	__le32 access_flags;
} __packed;

struct vrg_rsp_mr { /* GET_DMA_MR, CREATE_MR, REG_USER_MR */
	__le32 mrn;
	__le32 lkey;
	__le32 rkey;
} __packed;

struct vrg_cmd_create_mr {
	__le32 pdn;
	__le32 access_flags;
	__le32 max_num_sg;
} __packed;

struct vrg_cmd_map_mr_sg {
	__le32 mrn;
	__le32 npages;
	__le64 start;
	__le64 length;
	__le64 pages;
} __packed;

struct vrg_cmd_reg_user_mr {
	__le32 pdn;
	__le32 access_flags;
	__le64 start;
	__le64 length;
	__le64 virt_addr;
	__le64 pages; /* guest-physical address of npages le64 page addresses */
	__le32 npages;
} __packed;

struct vrg_cmd_create_qp {
	__le32 pdn;
	u8 qp_type;
	u8 sq_sig_type;
	__le32 max_send_wr;
	__le32 max_send_sge;
	__le32 send_cqn;
	__le32 max_recv_wr;
	__le32 max_recv_sge;
	__le32 recv_cqn;
	__le32 max_inline_data;
	__le32 reserved[8];
} __packed;

struct vrg_global_route {
	u8 dgid[16];
	__le32 flow_label;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
} __packed;

struct vrg_ah_attr {
	struct vrg_global_route grh;
	u8 sl;
	u8 static_rate;
	u8 port_num;
	u8 ah_flags;
	u8 dmac[6];
} __packed;

struct vrg_qp_cap {
	__le32 max_send_wr;
	__le32 max_recv_wr;
	__le32 max_send_sge;
	__le32 max_recv_sge;
	__le32 max_inline_data;
} __packed;

struct vrg_qp_attr {
	u8 qp_state;
	u8 cur_qp_state;
	u8 path_mtu;
	u8 path_mig_state;
	__le32 qkey;
	__le32 rq_psn;
	__le32 sq_psn;
	__le32 dest_qp_num;
	__le32 qp_access_flags;
	__le16 pkey_index;
	__le16 alt_pkey_index;
	u8 en_sqd_async_notify;
	u8 sq_draining;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 min_rnr_timer;
	u8 port_num;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u8 alt_port_num;
	u8 alt_timeout;
	__le32 rate_limit;
	struct vrg_qp_cap cap;
	struct vrg_ah_attr ah_attr;
	struct vrg_ah_attr alt_ah_attr;
} __packed;

struct vrg_cmd_modify_qp {
	__le32 qpn;
	__le32 attr_mask;
	struct vrg_qp_attr attrs;
} __packed;

struct vrg_cmd_query_qp {
	__le32 qpn;
	__le32 attr_mask;
} __packed;

struct vrg_cmd_query_pkey {
	__le32 port;
	__le16 index;
} __packed;

struct vrg_cmd_add_gid {
	u8 gid[16];
	__le32 gid_type;
	__le16 index;
	__le32 port_num;
} __packed;

struct vrg_cmd_del_gid {
	__le16 index;
	__le32 port;
} __packed;

struct vrg_cmd_req_notify {
	__le32 cqn;
	__le32 flags;
} __packed;

struct vrg_sge {
	__le64 addr;
	__le32 length;
	__le32 lkey;
} __packed;

struct vrg_av {
	__le32 port;
	__le32 pdn;
	__le32 sl_tclass_flowlabel;
	u8 dgid[16];
	u8 gid_index;
	u8 static_rate;
	u8 hop_limit;
	u8 dmac[6];
	u8 reserved[6];
} __packed;

struct vrg_sq_req {
	__le32 num_sge;
	__le32 send_flags;
	__le32 opcode;
	__le64 wr_id;
	__le32 ex; /* imm_data (opaque) or invalidate_rkey */
	union {
		struct {
			__le64 remote_addr;
			__le32 rkey;
		} __packed rdma;
		struct {
			__le64 remote_addr;
			__le64 compare_add;
			__le64 swap;
			__le32 rkey;
		} __packed atomic;
		struct {
			__le32 remote_qpn;
			__le32 remote_qkey;
			struct vrg_av av;
		} __packed ud;
		struct {
			__le32 mrn;
			__le32 key;
			__le32 access;
			__le64 iova;   /* with pages: the mapping comes with the WR */
			__le64 length;
			__le64 pages;  /* GPA of the le64 page array; 0: MAP_MR_SG's */
		} __packed reg;
	} __packed wr;
	struct vrg_sge sg_list[];
} __packed;

struct vrg_rq_req {
	__le32 num_sge;
	__le64 wr_id;
	struct vrg_sge sg_list[];
} __packed;

struct vrg_cq_req {
	__le64 wr_id;
	u8 status;
	u8 opcode;
	__le32 vendor_err;
	__le32 byte_len;
	__le32 ex;
	__le32 qp_num;
	__le32 src_qp;
	__le32 wc_flags;
	__le16 pkey_index;
	u8 sl;
	u8 port_num;
} __packed;

/* The numbers the device side pins (include/vrdma/virtio_rdma.h). */
static_assert(offsetof(struct vrg_config, max_cq) == 68);
static_assert(offsetof(struct vrg_config, atomic_cap) == 96);
static_assert(offsetof(struct vrg_config, local_ca_ack_delay) == 127);
static_assert(sizeof(struct vrg_config) == VRG_CONFIG_READ);
static_assert(sizeof(struct vrg_rsp_query_port) == 161);
static_assert(offsetof(struct vrg_rsp_query_port, phys_state) == 32);
static_assert(sizeof(struct vrg_cmd_map_mr_sg) == 32);
static_assert(sizeof(struct vrg_cmd_reg_user_mr) == 44);
static_assert(offsetof(struct vrg_cmd_reg_user_mr, pages) == 32);
static_assert(sizeof(struct vrg_cmd_create_qp) == 66);
static_assert(offsetof(struct vrg_cmd_create_qp, recv_cqn) == 26);
static_assert(sizeof(struct vrg_ah_attr) == 33);
static_assert(sizeof(struct vrg_qp_attr) == 129);
static_assert(offsetof(struct vrg_qp_attr, cap) == 43);
static_assert(offsetof(struct vrg_qp_attr, ah_attr) == 63);
static_assert(sizeof(struct vrg_cmd_modify_qp) == 137);
static_assert(sizeof(struct vrg_cmd_query_pkey) == 6);
static_assert(sizeof(struct vrg_cmd_add_gid) == 26);
static_assert(sizeof(struct vrg_cmd_del_gid) == 6);
static_assert(sizeof(struct vrg_av) == 43);
static_assert(sizeof(struct vrg_sq_req) == 75);
static_assert(offsetof(struct vrg_sq_req, wr) == 24);
static_assert(offsetof(struct vrg_sq_req, wr.ud.av) == 32);
static_assert(offsetof(struct vrg_sq_req, wr.reg.pages) == 52);
static_assert(sizeof(struct vrg_rq_req) == 12);
static_assert(sizeof(struct vrg_cq_req) == 38);
static_assert(offsetof(struct vrg_cq_req, qp_num) == 22);

#endif
