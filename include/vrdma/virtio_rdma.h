/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The standalone virtio-rdma device (virtio device id 42): wire ABI shared by
 * the device (backend) and the driver (libvrdma).
 *
 * Source: "[RFC] Virtio RDMA" (Feb 2022), the "RDMA Device" section: device
 * ID, virtqueues, configuration layout, control commands, send / receive /
 * completion queue elements. Field names and order are the document's.
 * Where it is silent or inconsistent, docs/spec.md "The virtio-rdma device"
 * says what we decided ("[spec.md]" below).
 *
 * Every multi-byte field is little-endian (le16/le32/le64 mark it); imm_data
 * is opaque (network byte order). The document lists fields of mixed sizes
 * without padding; every structure here is PACKED, as the reference
 * implementations of that document lay them out, and pinned by
 * _Static_assert on size and offsets. Readers copy them out with memcpy.
 *
 * Names carry the prefix virtio_rdma_dev_ / VIRTIO_RDMA_DEV_ so they do not
 * clash with the RoCE extension of virtio-net (virtio_net_roce.h), whose
 * control structures took the virtio_rdma_ prefix first.
 */
#ifndef VRDMA_VIRTIO_RDMA_H
#define VRDMA_VIRTIO_RDMA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vrdma/virtio_net_roce.h" /* le16/le32/le64, VRDMA_ABI_* */

#define VRDMA_PACKED __attribute__((packed))

/* ---- device id, virtqueues, features ----------------------------------- */

#define VIRTIO_ID_RDMA 42

/* Virtqueues: 0 control; 1..N completion queues (N = max_cq); then for QP
 * pair i = 1..M (M = max_qp): send queue N+2i-1, receive queue N+2i. */
#define VIRTIO_RDMA_DEV_MAX_QPS 16384
#define VIRTIO_RDMA_DEV_MAX_CQS 16384
static inline uint32_t virtio_rdma_dev_vq_cq(uint32_t cqn) { return cqn; }
static inline uint32_t virtio_rdma_dev_vq_sq(uint32_t max_cq, uint32_t pair)
{
	return max_cq + 2 * pair - 1;
}
static inline uint32_t virtio_rdma_dev_vq_rq(uint32_t max_cq, uint32_t pair)
{
	return max_cq + 2 * pair;
}
static inline uint32_t virtio_rdma_dev_vq_count(uint32_t max_cq, uint32_t max_qp)
{
	return 1 + max_cq + 2 * max_qp;
}
/* What virtqueue vq is in the layout (max_cq, max_qp): VRDMA_VQ_CTRL,
 * VRDMA_VQ_CQ (*idx = cqn - 1, the core's CQ index), VRDMA_VQ_SQ / _RQ
 * (*idx = pair i), or VRDMA_VQ_INVALID. */
static inline enum vrdma_vq_kind virtio_rdma_dev_vq_decode(uint32_t max_cq, uint32_t max_qp,
							   uint32_t vq, uint32_t *idx)
{
	*idx = 0;
	if (vq == 0)
		return VRDMA_VQ_CTRL;
	if (vq <= max_cq) {
		*idx = vq - 1;
		return VRDMA_VQ_CQ;
	}
	if ((uint64_t)vq < virtio_rdma_dev_vq_count(max_cq, max_qp)) {
		uint32_t off = vq - max_cq - 1;

		*idx = off / 2 + 1;
		return off & 1 ? VRDMA_VQ_RQ : VRDMA_VQ_SQ;
	}
	return VRDMA_VQ_INVALID;
}
/* The QP's virtqueue pair is the low 14 bits of its qpn [spec.md]. */
static inline uint32_t virtio_rdma_dev_qp_pair(uint32_t qpn)
{
	return qpn & VRDMA_QPN_INDEX_MASK;
}

/* The document defines no feature bits. */

/* ---- configuration ------------------------------------------------------ */

/* device_cap_flags (the IB verbs bit numbers) */
#define VIRTIO_RDMA_DEV_CAP_BAD_PKEY_CNTR         (1ull << 1)
#define VIRTIO_RDMA_DEV_CAP_BAD_QKEY_CNTR         (1ull << 2)
#define VIRTIO_RDMA_DEV_CAP_CHANGE_PHY_PORT       (1ull << 5)
#define VIRTIO_RDMA_DEV_CAP_UD_AV_PORT_ENFORCE    (1ull << 6)
#define VIRTIO_RDMA_DEV_CAP_SYS_IMAGE_GUID        (1ull << 11)
#define VIRTIO_RDMA_DEV_CAP_RC_RNR_NAK_GEN        (1ull << 12)
#define VIRTIO_RDMA_DEV_CAP_MEM_MGT_EXTENSIONS    (1ull << 21)
#define VIRTIO_RDMA_DEV_CAP_BLOCK_MULTICAST_LOOPBACK (1ull << 22)
#define VIRTIO_RDMA_DEV_CAP_SG_GAPS_REG           (1ull << 32)

/* atomic_cap */
#define VIRTIO_RDMA_DEV_ATOMIC_NONE 0
#define VIRTIO_RDMA_DEV_ATOMIC_HCA  1
#define VIRTIO_RDMA_DEV_ATOMIC_GLOB 2

struct VRDMA_PACKED virtio_rdma_dev_config {
	le32 phys_port_cnt;
	le64 sys_image_guid;          /* network byte order */
	le32 vendor_id;
	le32 vendor_part_id;
	le32 hw_ver;
	le64 max_mr_size;
	le64 page_size_cap;
	le32 max_qp;
	le32 max_qp_wr;
	le64 device_cap_flags;        /* VIRTIO_RDMA_DEV_CAP_* */
	le32 max_send_sge;
	le32 max_recv_sge;
	le32 max_sge_rd;
	le32 max_cq;
	le32 max_cqe;
	le32 max_mr;
	le32 max_pd;
	le32 max_qp_rd_atom;
	le32 max_res_rd_atom;
	le32 max_qp_init_rd_atom;
	uint8_t atomic_cap;           /* VIRTIO_RDMA_DEV_ATOMIC_* */
	le32 max_mw;
	le32 max_mcast_grp;
	le32 max_mcast_qp_attach;
	le32 max_total_mcast_qp_attach;
	le32 max_ah;
	le32 max_fast_reg_page_list_len;
	le32 max_pi_fast_reg_page_list_len;
	le16 max_pkeys;
	uint8_t local_ca_ack_delay;
	le64 reserved[64];
};

/* ---- control queue ------------------------------------------------------ */

/* Request: u8 command, command data (device-readable); u8 response,
 * response data (device-writable). */
#define VIRTIO_RDMA_DEV_CTRL_OK  0
#define VIRTIO_RDMA_DEV_CTRL_ERR 1

enum virtio_rdma_dev_cmd {
	VIRTIO_RDMA_DEV_CMD_QUERY_PORT = 1,
	VIRTIO_RDMA_DEV_CMD_CREATE_CQ,
	VIRTIO_RDMA_DEV_CMD_DESTROY_CQ,
	VIRTIO_RDMA_DEV_CMD_CREATE_PD,
	VIRTIO_RDMA_DEV_CMD_DESTROY_PD,
	VIRTIO_RDMA_DEV_CMD_GET_DMA_MR,
	VIRTIO_RDMA_DEV_CMD_CREATE_MR,
	VIRTIO_RDMA_DEV_CMD_MAP_MR_SG,
	VIRTIO_RDMA_DEV_CMD_REG_USER_MR,
	VIRTIO_RDMA_DEV_CMD_DEREG_MR,
	VIRTIO_RDMA_DEV_CMD_CREATE_QP,
	VIRTIO_RDMA_DEV_CMD_MODIFY_QP,
	VIRTIO_RDMA_DEV_CMD_QUERY_QP,
	VIRTIO_RDMA_DEV_CMD_DESTROY_QP,
	VIRTIO_RDMA_DEV_CMD_QUERY_PKEY,
	VIRTIO_RDMA_DEV_CMD_ADD_GID,
	VIRTIO_RDMA_DEV_CMD_DEL_GID,
	VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ,
	VIRTIO_RDMA_DEV_NUM_CMDS /* commands are 1..18 */
};

/* QUERY_PORT */
#define VIRTIO_RDMA_DEV_PORT_CM_SUP (1u << 16)
#define VIRTIO_RDMA_DEV_PORT_DOWN   1
#define VIRTIO_RDMA_DEV_PORT_ACTIVE 4
#define VIRTIO_RDMA_DEV_PHYS_DISABLED 3
#define VIRTIO_RDMA_DEV_PHYS_LINK_UP  5
#define VIRTIO_RDMA_DEV_WIDTH_1X    1
#define VIRTIO_RDMA_DEV_SPEED_EDR   32

struct VRDMA_PACKED virtio_rdma_dev_cmd_query_port {
	uint8_t port;
};

struct VRDMA_PACKED virtio_rdma_dev_rsp_query_port {
	uint8_t state;
	uint8_t max_mtu;
	uint8_t active_mtu;
	le32 phys_mtu;
	le32 gid_tbl_len;
	le32 port_cap_flags;
	le32 max_msg_sz;
	le32 bad_pkey_cntr;
	le32 qkey_viol_cntr;
	le16 pkey_tbl_len;
	uint8_t active_width;
	le16 active_speed;
	uint8_t phys_state;
	/* vrdma: the addresses behind GID 1 (::ffff:a.b.c.d) and GID 2 (the
	 * configured IPv6 address), zeros when absent, as in the virtio-net
	 * RoCE device's QUERY_PORT: a driver has no other way to read the
	 * device's own GIDs; the document's reserved area [spec.md] */
	uint8_t gid1_ipv4[4];
	uint8_t gid2_ipv6[16];
	le32 reserved[27];
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_create_cq {
	le32 cqe;
};
/* cqn is the completion virtqueue's index (1..N) [spec.md] */
struct VRDMA_PACKED virtio_rdma_dev_rsp_create_cq {
	le32 cqn;
};
struct VRDMA_PACKED virtio_rdma_dev_cmd_destroy_cq {
	le32 cqn;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_create_pd {
	le32 pdn;
};
struct VRDMA_PACKED virtio_rdma_dev_cmd_destroy_pd {
	le32 pdn;
};

/* access_flags (IB verbs numbering) */
#define VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE   (1u << 0)
#define VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE  (1u << 1)
#define VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ   (1u << 2)
#define VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC (1u << 3)
#define VIRTIO_RDMA_DEV_ACCESS_MW_BIND       (1u << 4)
#define VIRTIO_RDMA_DEV_ACCESS_ZERO_BASED    (1u << 5)
#define VIRTIO_RDMA_DEV_ACCESS_ON_DEMAND     (1u << 6)
#define VIRTIO_RDMA_DEV_ACCESS_HUGETLB       (1u << 7)
#define VIRTIO_RDMA_DEV_ACCESS_RELAXED_ORDERING (1u << 20)

struct VRDMA_PACKED virtio_rdma_dev_cmd_get_dma_mr {
	le32 pdn;
	le32 access_flags;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_get_dma_mr {
	le32 mrn;
	le32 lkey;
	le32 rkey;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_create_mr {
	le32 pdn;
	le32 access_flags;
	le32 max_num_sg;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_create_mr {
	le32 mrn;
	le32 lkey;
	le32 rkey;
};

/* pages: GPA of an array of npages le64 page addresses */
struct VRDMA_PACKED virtio_rdma_dev_cmd_map_mr_sg {
	le32 mrn;
	le32 npages;
	le64 start;
	le64 length;
	le64 pages;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_map_mr_sg {
	le32 npages;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_reg_user_mr {
	le32 pdn;
	le32 access_flags;
	le64 start;
	le64 length;
	le64 virt_addr;
	le64 pages;               /* GPA of npages le64 page addresses */
	le32 npages;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_reg_user_mr {
	le32 mrn;
	le32 lkey;
	le32 rkey;
};
struct VRDMA_PACKED virtio_rdma_dev_cmd_dereg_mr {
	le32 mrn;
};

/* CREATE_QP */
#define VIRTIO_RDMA_DEV_QPT_SMI 0
#define VIRTIO_RDMA_DEV_QPT_GSI 1
#define VIRTIO_RDMA_DEV_QPT_RC  2
#define VIRTIO_RDMA_DEV_QPT_UC  3
#define VIRTIO_RDMA_DEV_QPT_UD  4
#define VIRTIO_RDMA_DEV_SIGNAL_ALL_WR 0
#define VIRTIO_RDMA_DEV_SIGNAL_REQ_WR 1

struct VRDMA_PACKED virtio_rdma_dev_cmd_create_qp {
	le32 pdn;
	uint8_t qp_type;
	uint8_t sq_sig_type;
	le32 max_send_wr;
	le32 max_send_sge;
	le32 send_cqn;
	le32 max_recv_wr;
	le32 max_recv_sge;
	le32 recv_cqn;
	le32 max_inline_data;
	le32 reserved[8];
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_create_qp {
	le32 qpn;
};

/* MODIFY_QP / QUERY_QP attr_mask (IB verbs numbering) */
#define VIRTIO_RDMA_DEV_QP_STATE              (1u << 0)
#define VIRTIO_RDMA_DEV_QP_CUR_STATE          (1u << 1)
#define VIRTIO_RDMA_DEV_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS       (1u << 3)
#define VIRTIO_RDMA_DEV_QP_PKEY_INDEX         (1u << 4)
#define VIRTIO_RDMA_DEV_QP_PORT               (1u << 5)
#define VIRTIO_RDMA_DEV_QP_QKEY               (1u << 6)
#define VIRTIO_RDMA_DEV_QP_AV                 (1u << 7)
#define VIRTIO_RDMA_DEV_QP_PATH_MTU           (1u << 8)
#define VIRTIO_RDMA_DEV_QP_TIMEOUT            (1u << 9)
#define VIRTIO_RDMA_DEV_QP_RETRY_CNT          (1u << 10)
#define VIRTIO_RDMA_DEV_QP_RNR_RETRY          (1u << 11)
#define VIRTIO_RDMA_DEV_QP_RQ_PSN             (1u << 12)
#define VIRTIO_RDMA_DEV_QP_MAX_QP_RD_ATOMIC   (1u << 13)
#define VIRTIO_RDMA_DEV_QP_ALT_PATH           (1u << 14)
#define VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER      (1u << 15)
#define VIRTIO_RDMA_DEV_QP_SQ_PSN             (1u << 16)
#define VIRTIO_RDMA_DEV_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define VIRTIO_RDMA_DEV_QP_PATH_MIG_STATE     (1u << 18)
#define VIRTIO_RDMA_DEV_QP_CAP                (1u << 19)
#define VIRTIO_RDMA_DEV_QP_DEST_QPN           (1u << 20)
#define VIRTIO_RDMA_DEV_QP_RATE_LIMIT         (1u << 25)

#define VIRTIO_RDMA_DEV_AH_GRH 1  /* ah_flags */

struct VRDMA_PACKED virtio_rdma_dev_global_route {
	uint8_t dgid[16];
	le32 flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct VRDMA_PACKED virtio_rdma_dev_ah_attr {
	struct virtio_rdma_dev_global_route grh;
	uint8_t sl;
	uint8_t static_rate;
	uint8_t port_num;
	uint8_t ah_flags;         /* VIRTIO_RDMA_DEV_AH_GRH */
	uint8_t dmac[6];          /* roce.dmac */
};

/* An address vector in the virtio-net RoCE form (both little-endian wire
 * structures), as the device and the driver of this model both convert it:
 * GRH and dmac; sl is the caller's. */
static inline void virtio_rdma_dev_ah_to_roce(const struct virtio_rdma_dev_ah_attr *w,
					      struct virtio_rdma_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, w->grh.dgid, 16);
	memcpy(&a->grh.flow_label, &w->grh.flow_label, 4);
	a->grh.sgid_index = w->grh.sgid_index;
	a->grh.hop_limit = w->grh.hop_limit;
	a->grh.traffic_class = w->grh.traffic_class;
	memcpy(a->dmac, w->dmac, 6);
}

struct VRDMA_PACKED virtio_rdma_dev_qp_cap {
	le32 max_send_wr;
	le32 max_recv_wr;
	le32 max_send_sge;
	le32 max_recv_sge;
	le32 max_inline_data;
};

struct VRDMA_PACKED virtio_rdma_dev_qp_attr {
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t path_mig_state;
	le32 qkey;
	le32 rq_psn;
	le32 sq_psn;
	le32 dest_qp_num;
	le32 qp_access_flags;
	le16 pkey_index;
	le16 alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	le32 rate_limit;
	struct virtio_rdma_dev_qp_cap cap;
	struct virtio_rdma_dev_ah_attr ah_attr;
	struct virtio_rdma_dev_ah_attr alt_ah_attr;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_modify_qp {
	le32 qpn;
	le32 attr_mask;
	struct virtio_rdma_dev_qp_attr attrs;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_query_qp {
	le32 qpn;
	le32 attr_mask;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_query_qp {
	struct virtio_rdma_dev_qp_attr attr;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_destroy_qp {
	le32 qpn;
};

struct VRDMA_PACKED virtio_rdma_dev_cmd_query_pkey {
	le32 port;
	le16 index;
};
struct VRDMA_PACKED virtio_rdma_dev_rsp_query_pkey {
	le16 pkey;
};

/* gid_type: the Linux ib_gid_type numbering; the device speaks RoCE v2 only */
#define VIRTIO_RDMA_DEV_GID_TYPE_IB      0
#define VIRTIO_RDMA_DEV_GID_TYPE_ROCE    1
#define VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2 2

struct VRDMA_PACKED virtio_rdma_dev_cmd_add_gid {
	uint8_t gid[16];
	le32 gid_type;
	le16 index;
	le32 port_num;
};
struct VRDMA_PACKED virtio_rdma_dev_cmd_del_gid {
	le16 index;
	le32 port;
};

#define VIRTIO_RDMA_DEV_NOTIFY_SOLICITED       (1u << 0)
#define VIRTIO_RDMA_DEV_NOTIFY_NEXT_COMPLETION (1u << 1)
struct VRDMA_PACKED virtio_rdma_dev_cmd_req_notify {
	le32 cqn;
	le32 flags;
};

/* ---- send, receive and completion queue elements ------------------------ */

/* opcode (IB verbs numbering) */
#define VIRTIO_RDMA_DEV_WR_RDMA_WRITE          0
#define VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM 1
#define VIRTIO_RDMA_DEV_WR_SEND                2
#define VIRTIO_RDMA_DEV_WR_SEND_WITH_IMM       3
#define VIRTIO_RDMA_DEV_WR_RDMA_READ           4
#define VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP  5
#define VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD 6
#define VIRTIO_RDMA_DEV_WR_LOCAL_INV           7
#define VIRTIO_RDMA_DEV_WR_SEND_WITH_INV       9
#define VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV  11
#define VIRTIO_RDMA_DEV_WR_REG_MR              0x20

/* send_flags */
#define VIRTIO_RDMA_DEV_SEND_FENCE     (1u << 0)
#define VIRTIO_RDMA_DEV_SEND_SIGNALED  (1u << 1)
#define VIRTIO_RDMA_DEV_SEND_SOLICITED (1u << 2)
#define VIRTIO_RDMA_DEV_SEND_INLINE    (1u << 3)
#define VIRTIO_RDMA_DEV_SEND_IP_CSUM   (1u << 4)

struct VRDMA_PACKED virtio_rdma_dev_sge {
	le64 addr;
	le32 length;
	le32 lkey;
};

struct VRDMA_PACKED virtio_rdma_dev_av {
	le32 port;
	le32 pdn;
	le32 sl_tclass_flowlabel; /* sl 31..28, tclass 27..20, flow label 19..0 */
	uint8_t dgid[16];
	uint8_t gid_index;
	uint8_t static_rate;
	uint8_t hop_limit;
	uint8_t dmac[6];
	uint8_t reserved[6];
};

struct VRDMA_PACKED virtio_rdma_dev_sq_req {
	le32 num_sge;
	le32 send_flags;          /* the document's "enum": 4 bytes [spec.md] */
	le32 opcode;
	le64 wr_id;
	union VRDMA_PACKED {
		le32 imm_data;
		le32 invalidate_rkey;
	} ex;
	union VRDMA_PACKED {
		struct VRDMA_PACKED {
			le64 remote_addr;
			le32 rkey;
		} rdma;
		struct VRDMA_PACKED {
			le64 remote_addr;
			le64 compare_add;
			le64 swap;
			le32 rkey;
		} atomic;
		struct VRDMA_PACKED {
			le32 remote_qpn;
			le32 remote_qkey;
			struct virtio_rdma_dev_av av;
		} ud;
		struct VRDMA_PACKED {
			le32 mrn;
			le32 key;
			le32 access;
			/* pages != 0: the WR carries the mapping (GPA of the
			 * le64 page array of [iova, iova + length)) [spec.md] */
			le64 iova;
			le64 length;
			le64 pages;
		} reg;
	} wr;
	struct virtio_rdma_dev_sge sg_list[];
};

struct VRDMA_PACKED virtio_rdma_dev_rq_req {
	le32 num_sge;
	le64 wr_id;
	struct virtio_rdma_dev_sge sg_list[];
};

/* status: the IB verbs numbering (22 values) */
#define VIRTIO_RDMA_DEV_WC_SUCCESS          0
#define VIRTIO_RDMA_DEV_WC_LOC_LEN_ERR      1
#define VIRTIO_RDMA_DEV_WC_LOC_QP_OP_ERR    2
#define VIRTIO_RDMA_DEV_WC_LOC_EEC_OP_ERR   3
#define VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR     4
#define VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR     5
#define VIRTIO_RDMA_DEV_WC_MW_BIND_ERR      6
#define VIRTIO_RDMA_DEV_WC_BAD_RESP_ERR     7
#define VIRTIO_RDMA_DEV_WC_LOC_ACCESS_ERR   8
#define VIRTIO_RDMA_DEV_WC_REM_INV_REQ_ERR  9
#define VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR   10
#define VIRTIO_RDMA_DEV_WC_REM_OP_ERR       11
#define VIRTIO_RDMA_DEV_WC_RETRY_EXC_ERR    12
#define VIRTIO_RDMA_DEV_WC_RNR_RETRY_EXC_ERR 13
#define VIRTIO_RDMA_DEV_WC_LOC_RDD_VIOL_ERR 14
#define VIRTIO_RDMA_DEV_WC_REM_INV_RD_REQ_ERR 15
#define VIRTIO_RDMA_DEV_WC_REM_ABORT_ERR    16
#define VIRTIO_RDMA_DEV_WC_INV_EECN_ERR     17
#define VIRTIO_RDMA_DEV_WC_INV_EEC_STATE_ERR 18
#define VIRTIO_RDMA_DEV_WC_FATAL_ERR        19
#define VIRTIO_RDMA_DEV_WC_RESP_TIMEOUT_ERR 20
#define VIRTIO_RDMA_DEV_WC_GENERAL_ERR      21

/* opcode of a completion: the IB ib_wc_opcode numbering [spec.md] */
#define VIRTIO_RDMA_DEV_WC_OP_SEND       0
#define VIRTIO_RDMA_DEV_WC_OP_RDMA_WRITE 1
#define VIRTIO_RDMA_DEV_WC_OP_RDMA_READ  2
#define VIRTIO_RDMA_DEV_WC_OP_COMP_SWAP  3
#define VIRTIO_RDMA_DEV_WC_OP_FETCH_ADD  4
#define VIRTIO_RDMA_DEV_WC_OP_BIND_MW    5
#define VIRTIO_RDMA_DEV_WC_OP_LOCAL_INV  6
#define VIRTIO_RDMA_DEV_WC_OP_REG_MR     8
#define VIRTIO_RDMA_DEV_WC_OP_RECV       128
#define VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM 129

/* wc_flags (IB numbering) */
#define VIRTIO_RDMA_DEV_WC_GRH             (1u << 0)
#define VIRTIO_RDMA_DEV_WC_WITH_IMM        (1u << 1)
#define VIRTIO_RDMA_DEV_WC_WITH_INVALIDATE (1u << 2)

struct VRDMA_PACKED virtio_rdma_dev_cq_req {
	le64 wr_id;
	uint8_t status;
	uint8_t opcode;
	le32 vendor_err;
	le32 byte_len;
	union VRDMA_PACKED {
		le32 imm_data;
		le32 invalidate_rkey;
	} ex;
	le32 qp_num;
	le32 src_qp;
	le32 wc_flags;
	le16 pkey_index;
	uint8_t sl;
	uint8_t port_num;
};

/* ---- layouts pinned ------------------------------------------------------ */

VRDMA_ABI_SIZE(virtio_rdma_dev_config, 640);
VRDMA_ABI_OFF(virtio_rdma_dev_config, sys_image_guid, 4);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_mr_size, 24);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_qp, 40);
VRDMA_ABI_OFF(virtio_rdma_dev_config, device_cap_flags, 48);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_cq, 68);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_qp_init_rd_atom, 92);
VRDMA_ABI_OFF(virtio_rdma_dev_config, atomic_cap, 96);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_mw, 97);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_ah, 113);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_fast_reg_page_list_len, 117);
VRDMA_ABI_OFF(virtio_rdma_dev_config, max_pkeys, 125);
VRDMA_ABI_OFF(virtio_rdma_dev_config, local_ca_ack_delay, 127);
VRDMA_ABI_OFF(virtio_rdma_dev_config, reserved, 128);

VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_query_port, 1);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_query_port, 161);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, phys_mtu, 3);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, gid_tbl_len, 7);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, port_cap_flags, 11);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, max_msg_sz, 15);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, pkey_tbl_len, 27);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, active_width, 29);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, active_speed, 30);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, phys_state, 32);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, gid1_ipv4, 33);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, gid2_ipv6, 37);
VRDMA_ABI_OFF(virtio_rdma_dev_rsp_query_port, reserved, 53);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_destroy_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_create_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_destroy_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_get_dma_mr, 8);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_get_dma_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_create_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_create_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_map_mr_sg, 32);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_map_mr_sg, start, 8);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_map_mr_sg, pages, 24);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_map_mr_sg, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_reg_user_mr, 44);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_reg_user_mr, virt_addr, 24);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_reg_user_mr, pages, 32);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_reg_user_mr, npages, 40);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_reg_user_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_dereg_mr, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_create_qp, 66);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, qp_type, 4);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, sq_sig_type, 5);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, max_send_wr, 6);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, send_cqn, 14);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, recv_cqn, 26);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, max_inline_data, 30);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_create_qp, reserved, 34);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_create_qp, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_global_route, 23);
VRDMA_ABI_OFF(virtio_rdma_dev_global_route, flow_label, 16);
VRDMA_ABI_OFF(virtio_rdma_dev_global_route, traffic_class, 22);
VRDMA_ABI_SIZE(virtio_rdma_dev_ah_attr, 33);
VRDMA_ABI_OFF(virtio_rdma_dev_ah_attr, sl, 23);
VRDMA_ABI_OFF(virtio_rdma_dev_ah_attr, port_num, 25);
VRDMA_ABI_OFF(virtio_rdma_dev_ah_attr, ah_flags, 26);
VRDMA_ABI_OFF(virtio_rdma_dev_ah_attr, dmac, 27);
VRDMA_ABI_SIZE(virtio_rdma_dev_qp_cap, 20);
VRDMA_ABI_SIZE(virtio_rdma_dev_qp_attr, 129);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, qkey, 4);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, qp_access_flags, 20);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, pkey_index, 24);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, en_sqd_async_notify, 28);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, port_num, 33);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, alt_timeout, 38);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, rate_limit, 39);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, cap, 43);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, ah_attr, 63);
VRDMA_ABI_OFF(virtio_rdma_dev_qp_attr, alt_ah_attr, 96);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_modify_qp, 137);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_modify_qp, attrs, 8);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_query_qp, 8);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_query_qp, 129);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_destroy_qp, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_query_pkey, 6);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_query_pkey, index, 4);
VRDMA_ABI_SIZE(virtio_rdma_dev_rsp_query_pkey, 2);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_add_gid, 26);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_add_gid, gid_type, 16);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_add_gid, index, 20);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_add_gid, port_num, 22);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_del_gid, 6);
VRDMA_ABI_OFF(virtio_rdma_dev_cmd_del_gid, port, 2);
VRDMA_ABI_SIZE(virtio_rdma_dev_cmd_req_notify, 8);

VRDMA_ABI_SIZE(virtio_rdma_dev_sge, 16);
VRDMA_ABI_SIZE(virtio_rdma_dev_av, 43);
VRDMA_ABI_OFF(virtio_rdma_dev_av, sl_tclass_flowlabel, 8);
VRDMA_ABI_OFF(virtio_rdma_dev_av, dgid, 12);
VRDMA_ABI_OFF(virtio_rdma_dev_av, gid_index, 28);
VRDMA_ABI_OFF(virtio_rdma_dev_av, dmac, 31);
VRDMA_ABI_SIZE(virtio_rdma_dev_sq_req, 75);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, send_flags, 4);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, opcode, 8);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr_id, 12);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, ex, 20);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr, 24);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr.atomic.swap, 40);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr.atomic.rkey, 48);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr.ud.av, 32);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr.reg.iova, 36);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, wr.reg.pages, 52);
VRDMA_ABI_OFF(virtio_rdma_dev_sq_req, sg_list, 75);
VRDMA_ABI_SIZE(virtio_rdma_dev_rq_req, 12);
VRDMA_ABI_OFF(virtio_rdma_dev_rq_req, sg_list, 12);
VRDMA_ABI_SIZE(virtio_rdma_dev_cq_req, 38);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, status, 8);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, vendor_err, 10);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, byte_len, 14);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, ex, 18);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, qp_num, 22);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, src_qp, 26);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, wc_flags, 30);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, pkey_index, 34);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, sl, 36);
VRDMA_ABI_OFF(virtio_rdma_dev_cq_req, port_num, 37);

#endif
