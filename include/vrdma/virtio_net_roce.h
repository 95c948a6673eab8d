/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-net RoCE extension: wire ABI shared by the device (backend) and
 * the driver (libvrdma).
 *
 * Source: "[RFC v2] virtio-net: Add RoCE (RDMA over Converged Ethernet)
 * support" (virtio-comment list, May 2022; docs/spec.md), sections
 *   - Virtqueues, Feature bits, Device configuration layout,
 *   - Device Operation / Control Virtqueue / RoCE Configuration,
 *   - Device Operation / RoCE Support (send, receive, completion queues).
 * Names and field names are the RFC's. Where the RFC is inconsistent or
 * silent, docs/spec.md "Wire ABI: clarifications of the RFC" says what we
 * decided; the comments here point to it as "[spec.md]".
 *
 * Every multi-byte field is LITTLE-ENDIAN on the wire (le16/le32/le64 below
 * are plain integer typedefs that mark this: convert with le*toh / htole*).
 * imm_data is the exception: it is opaque, in network byte order, copied as
 * is. All structures are naturally aligned (no implicit padding, checked by
 * _Static_assert), so they are not packed; readers must still memcpy them
 * out of driver memory, which may be unaligned.
 *
 * The second part of this file (marked "vrdma definitions") is not in the
 * RFC: virtqueue index arithmetic and the QPN <-> index rule this
 * implementation chose. The third part (marked "vrdma extensions") is the
 * extension set negotiated with VIRTIO_NET_F_ROCE_EXT (SRQ, atomics, memory
 * windows, fast registration, invalidation, resize, async events):
 * docs/spec.md "Extensions beyond the RFC".
 */
#ifndef VRDMA_VIRTIO_NET_ROCE_H
#define VRDMA_VIRTIO_NET_ROCE_H

#include <stddef.h>
#include <stdint.h>

/* Little-endian on the wire. */
typedef uint16_t le16;
typedef uint32_t le32;
typedef uint64_t le64;

/* ------------------------------------------------------------------------ */
/* Feature bit, configuration layout                                        */
/* ------------------------------------------------------------------------ */

/* RFC "Feature bits". NOTE: virtio 1.3 later gave bit 55 to
 * VIRTIO_NET_F_GUEST_USO6; see [spec.md] for what that means. */
#define VIRTIO_NET_F_ROCE 55

/* Requires VIRTIO_NET_F_CTRL_VQ (17). */
#ifndef VIRTIO_NET_F_CTRL_VQ
#define VIRTIO_NET_F_CTRL_VQ 17
#endif

/*
 * RFC "Device configuration layout": the standard virtio_net_config fields
 * up to supported_hash_types, then the two RoCE fields. The RFC's listing
 * spells the last field "max_rdma_cps"; its text and every other place say
 * max_rdma_cqs, which is what it is [spec.md]. Named virtio_net_roce_config
 * so it does not clash with <linux/virtio_net.h>'s virtio_net_config.
 */
struct virtio_net_roce_config {
	uint8_t mac[6];
	le16 status;
	le16 max_virtqueue_pairs;
	le16 mtu;
	le32 speed;
	uint8_t duplex;
	uint8_t rss_max_key_size;
	le16 rss_max_indirection_table_length;
	le32 supported_hash_types;
	/* Only with VIRTIO_NET_F_ROCE: 1..16384 each. */
	le32 max_rdma_qps;
	le32 max_rdma_cqs;
};

#define VIRTIO_NET_ROCE_MAX_QPS 16384
#define VIRTIO_NET_ROCE_MAX_CQS 16384

/* ------------------------------------------------------------------------ */
/* Control virtqueue: header, ack, class and commands                        */
/* ------------------------------------------------------------------------ */

/*
 * RFC "Control Virtqueue": a request is
 *   struct virtio_net_roce_ctrl_hdr | command-specific-data | u8 ack |
 *   ack-specific-data
 * with everything up to the command data device-readable and the ack byte
 * plus ack data device-writable.
 */
struct virtio_net_roce_ctrl_hdr {
	uint8_t class;
	uint8_t command;
};

/* ack values (the same as <linux/virtio_net.h>) */
#ifndef VIRTIO_NET_OK
#define VIRTIO_NET_OK 0
#endif
#ifndef VIRTIO_NET_ERR
#define VIRTIO_NET_ERR 1
#endif

/* NOTE: virtio 1.3 uses class 6 for VIRTIO_NET_CTRL_NOTF_COAL (feature bit
 * 53, never offered by this device) [spec.md]. */
#define VIRTIO_NET_CTRL_ROCE 6
#define VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE   0
#define VIRTIO_NET_CTRL_ROCE_QUERY_PORT     1
#define VIRTIO_NET_CTRL_ROCE_CREATE_CQ      2
#define VIRTIO_NET_CTRL_ROCE_DESTROY_CQ     3
#define VIRTIO_NET_CTRL_ROCE_CREATE_PD      4
#define VIRTIO_NET_CTRL_ROCE_DESTROY_PD     5
#define VIRTIO_NET_CTRL_ROCE_GET_DMA_MR     6
#define VIRTIO_NET_CTRL_ROCE_REG_USER_MR    7
#define VIRTIO_NET_CTRL_ROCE_DEREG_MR       8
#define VIRTIO_NET_CTRL_ROCE_CREATE_QP      9
#define VIRTIO_NET_CTRL_ROCE_MODIFY_QP      10
#define VIRTIO_NET_CTRL_ROCE_QUERY_QP       11
#define VIRTIO_NET_CTRL_ROCE_DESTROY_QP     12
#define VIRTIO_NET_CTRL_ROCE_CREATE_AH      13
#define VIRTIO_NET_CTRL_ROCE_DESTROY_AH     14
#define VIRTIO_NET_CTRL_ROCE_ADD_GID        15
#define VIRTIO_NET_CTRL_ROCE_DEL_GID        16
#define VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ  17
#define VIRTIO_NET_CTRL_ROCE_NUM_CMDS       18
/* The RFC's description list misspells DESTROY_PD as "DESTORY_PD". */

/* ------------------------------------------------------------------------ */
/* Enumerations                                                              */
/* ------------------------------------------------------------------------ */

/* device_cap_flags of QUERY_DEVICE */
#define VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN (1 << 0)

/* MR and QP access flags (RFC: GET_DMA_MR). LOCAL_READ is always allowed. */
enum virtio_ib_access_flags {
	VIRTIO_IB_ACCESS_LOCAL_WRITE = (1 << 0),
	VIRTIO_IB_ACCESS_REMOTE_WRITE = (1 << 1),
	VIRTIO_IB_ACCESS_REMOTE_READ = (1 << 2),
};
/* Reserved for extensions (numbering of the standalone RFC v1 / IBTA verbs);
 * not accepted by the device until a feature negotiates them. */
#define VIRTIO_IB_ACCESS_REMOTE_ATOMIC_RSVD (1 << 3)
#define VIRTIO_IB_ACCESS_MW_BIND_RSVD       (1 << 4)
#define VIRTIO_IB_ACCESS_RFC_MASK                                              \
	(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |        \
	 VIRTIO_IB_ACCESS_REMOTE_READ)
/* The same under its former name (an installed header: kept for programs). */
#define VIRTIO_IB_ACCESS_SEED_MASK VIRTIO_IB_ACCESS_RFC_MASK

/* QP types (RFC: CREATE_QP) */
#define VIRTIO_IB_QPT_SMI 0
#define VIRTIO_IB_QPT_GSI 1
#define VIRTIO_IB_QPT_RC  2
#define VIRTIO_IB_QPT_UC  3
#define VIRTIO_IB_QPT_UD  4

/* MODIFY_QP / QUERY_QP attribute mask (RFC: MODIFY_QP). Note: these bits
 * are NOT the Linux ib_qp_attr_mask values; PKEY_INDEX, PORT, ALT_PATH,
 * PATH_MIG_STATE and EN_SQD_ASYNC_NOTIFY do not exist here [spec.md]. */
enum virtio_ib_qp_attr_mask {
	VIRTIO_IB_QP_STATE = (1 << 0),
	VIRTIO_IB_QP_CUR_STATE = (1 << 1),
	VIRTIO_IB_QP_ACCESS_FLAGS = (1 << 2),
	VIRTIO_IB_QP_QKEY = (1 << 3),
	VIRTIO_IB_QP_AV = (1 << 4),
	VIRTIO_IB_QP_PATH_MTU = (1 << 5),
	VIRTIO_IB_QP_TIMEOUT = (1 << 6),
	VIRTIO_IB_QP_RETRY_CNT = (1 << 7),
	VIRTIO_IB_QP_RNR_RETRY = (1 << 8),
	VIRTIO_IB_QP_RQ_PSN = (1 << 9),
	VIRTIO_IB_QP_MAX_QP_RD_ATOMIC = (1 << 10),
	VIRTIO_IB_QP_MIN_RNR_TIMER = (1 << 11),
	VIRTIO_IB_QP_SQ_PSN = (1 << 12),
	VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC = (1 << 13),
	VIRTIO_IB_QP_CAP = (1 << 14),
	VIRTIO_IB_QP_DEST_QPN = (1 << 15),
	VIRTIO_IB_QP_RATE_LIMIT = (1 << 16),
};
#define VIRTIO_IB_QP_ATTR_MASK_ALL ((1u << 17) - 1)

enum virtio_ib_qp_state {
	VIRTIO_IB_QPS_RESET,
	VIRTIO_IB_QPS_INIT,
	VIRTIO_IB_QPS_RTR,
	VIRTIO_IB_QPS_RTS,
	VIRTIO_IB_QPS_SQD,
	VIRTIO_IB_QPS_SQE,
	VIRTIO_IB_QPS_ERR
};

enum virtio_ib_mtu {
	VIRTIO_IB_MTU_256 = 1,
	VIRTIO_IB_MTU_512 = 2,
	VIRTIO_IB_MTU_1024 = 3,
	VIRTIO_IB_MTU_2048 = 4,
	VIRTIO_IB_MTU_4096 = 5
};

/* Bytes of payload per packet for an enum virtio_ib_mtu value (1..5). */
static inline uint32_t virtio_ib_mtu_bytes(unsigned mtu)
{
	return mtu >= VIRTIO_IB_MTU_256 && mtu <= VIRTIO_IB_MTU_4096 ? 128u << mtu : 0;
}

/* REQ_NOTIFY_CQ flags */
#define VIRTIO_IB_NOTIFY_SOLICITED       (1 << 0)
#define VIRTIO_IB_NOTIFY_NEXT_COMPLETION (1 << 1)

/* Send queue work request opcodes (RFC: RoCE Support). */
enum virtio_ib_wr_opcode {
	VIRTIO_IB_WR_RDMA_WRITE,
	VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM,
	VIRTIO_IB_WR_SEND,
	VIRTIO_IB_WR_SEND_WITH_IMM,
	VIRTIO_IB_WR_RDMA_READ,
};
/* Reserved for extensions, numbered as the standalone RFC v1 (and Linux
 * ib_wr_opcode) does; the device rejects them today. */
#define VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP_RSVD   5
#define VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD_RSVD 6
#define VIRTIO_IB_WR_LOCAL_INV_RSVD            7
#define VIRTIO_IB_WR_SEND_WITH_INV_RSVD        9
#define VIRTIO_IB_WR_RDMA_READ_WITH_INV_RSVD   11
#define VIRTIO_IB_WR_REG_MR_RSVD               0x20

/* send_flags of struct virtio_rdma_sq_req */
#define VIRTIO_IB_SEND_FENCE     (1 << 0)
#define VIRTIO_IB_SEND_SIGNALED  (1 << 1)
#define VIRTIO_IB_SEND_SOLICITED (1 << 2)
#define VIRTIO_IB_SEND_INLINE    (1 << 3)

/* Completion opcodes. NOTE: RECV is 3 here, not 128 as in Linux; values
 * from 5 up are reserved for extensions (atomics, invalidate, ...). */
enum virtio_ib_wc_opcode {
	VIRTIO_IB_WC_SEND,
	VIRTIO_IB_WC_RDMA_WRITE,
	VIRTIO_IB_WC_RDMA_READ,
	VIRTIO_IB_WC_RECV,
	VIRTIO_IB_WC_RECV_RDMA_WITH_IMM,
};

/* Completion status. NOTE: this numbering is the RFC's own (16 values) and
 * differs from Linux ib_wc_status; drivers translate. */
enum virtio_ib_wc_status {
	VIRTIO_IB_WC_SUCCESS,           /* Operation completed successfully */
	VIRTIO_IB_WC_LOC_LEN_ERR,       /* Local Length Error */
	VIRTIO_IB_WC_LOC_QP_OP_ERR,     /* Local QP Operation Error */
	VIRTIO_IB_WC_LOC_PROT_ERR,      /* Local Protection Error */
	VIRTIO_IB_WC_WR_FLUSH_ERR,      /* Work Request Flushed Error */
	VIRTIO_IB_WC_BAD_RESP_ERR,      /* Bad Response Error */
	VIRTIO_IB_WC_LOC_ACCESS_ERR,    /* Local Access Error */
	VIRTIO_IB_WC_REM_INV_REQ_ERR,   /* Remote Invalid Request Error */
	VIRTIO_IB_WC_REM_ACCESS_ERR,    /* Remote Access Error */
	VIRTIO_IB_WC_REM_OP_ERR,        /* Remote Operation Error */
	VIRTIO_IB_WC_RETRY_EXC_ERR,     /* Transport Retry Counter Exceeded */
	VIRTIO_IB_WC_RNR_RETRY_EXC_ERR, /* RNR Retry Counter Exceeded */
	VIRTIO_IB_WC_REM_ABORT_ERR,     /* Remote Aborted Error */
	VIRTIO_IB_WC_FATAL_ERR,         /* Fatal Error */
	VIRTIO_IB_WC_RESP_TIMEOUT_ERR,  /* Response Timeout Error */
	VIRTIO_IB_WC_GENERAL_ERR        /* General Error */
};

/* wc_flags of struct virtio_rdma_cq_req */
#define VIRTIO_IB_WC_GRH      (1 << 0)
#define VIRTIO_IB_WC_WITH_IMM (1 << 1)

/* ------------------------------------------------------------------------ */
/* Control command and ack structures (RFC: RoCE Configuration)             */
/* ------------------------------------------------------------------------ */

/* QUERY_DEVICE: no command data; ack data: */
struct virtio_rdma_ack_query_device {
	le64 device_cap_flags;    /* VIRTIO_IB_DEVICE_* */
	le64 max_mr_size;         /* largest contiguous block that can be registered */
	le64 page_size_cap;       /* supported page sizes (bit n = 2^n bytes) */
	le32 hw_ver;
	le32 max_qp_wr;           /* outstanding WRs per SQ and per RQ */
	le32 max_send_sge;
	le32 max_recv_sge;
	le32 max_sge_rd;          /* s/g per RDMA READ WR */
	le32 max_cqe;
	le32 max_mr;
	le32 max_pd;
	le32 max_qp_rd_atom;      /* outstanding RDMA READs per QP as responder */
	le32 max_qp_init_rd_atom; /* outstanding RDMA READs per QP as initiator */
	le32 max_ah;
	uint8_t local_ca_ack_delay;
	uint8_t padding[3];
	le32 reserved[14];
};

/* QUERY_PORT: no command data; ack data: */
struct virtio_rdma_ack_query_port {
	le32 gid_tbl_len;
	le32 max_msg_sz;
	le32 reserved0;           /* pkey_tbl_len with VIRTIO_NET_F_ROCE_EXT */
	/* vrdma: the IPv4 address behind the default GID 1 (::ffff:a.b.c.d),
	 * network byte order, all zeros when the device has none. A driver
	 * has no other way to read the device's GID table [spec.md]. */
	uint8_t gid1_ipv4[4];
	/* vrdma: the device's configured IPv6 address, preset as GID 2, all
	 * zeros when it has none [spec.md]. */
	uint8_t gid2_ipv6[16];
};

/* CREATE_CQ */
struct virtio_rdma_cmd_create_cq {
	le32 cqe;
};

struct virtio_rdma_ack_create_cq {
	le32 cqn;
};

/* DESTROY_CQ: no ack data */
struct virtio_rdma_cmd_destroy_cq {
	le32 cqn;
};

/* CREATE_PD: no command data */
struct virtio_rdma_ack_create_pd {
	le32 pdn;
};

/* DESTROY_PD: no ack data */
struct virtio_rdma_cmd_destroy_pd {
	le32 pdn;
};

/* GET_DMA_MR */
struct virtio_rdma_cmd_get_dma_mr {
	le32 pdn;
	le32 access_flags; /* enum virtio_ib_access_flags */
};

struct virtio_rdma_ack_get_dma_mr {
	le32 mrn;
	le32 lkey;
	le32 rkey;
};

/* REG_USER_MR: the fixed part is followed by npages le64 guest physical
 * page addresses (pages of VRDMA_PAGE_SIZE bytes [spec.md]). */
struct virtio_rdma_cmd_reg_user_mr {
	le32 pdn;
	le32 access_flags; /* enum virtio_ib_access_flags */
	le64 virt_addr;    /* the MR's I/O virtual address (what SGEs and rkeys use) */
	le64 length;
	le32 npages;
	le32 padding;
	le64 pages[];
};

struct virtio_rdma_ack_reg_user_mr {
	le32 mrn;
	le32 lkey;
	le32 rkey;
};

/* DEREG_MR: no ack data */
struct virtio_rdma_cmd_dereg_mr {
	le32 mrn;
};

/* CREATE_QP */
struct virtio_rdma_qp_cap {
	le32 max_send_wr;
	le32 max_recv_wr;
	le32 max_send_sge;
	le32 max_recv_sge;
	le32 max_inline_data;
	le32 padding;
};

struct virtio_rdma_cmd_create_qp {
	le32 pdn;
	uint8_t qp_type;    /* VIRTIO_IB_QPT_* */
	uint8_t sq_sig_all; /* every WR generates a completion */
	uint8_t padding[2];
	le32 send_cqn;
	le32 recv_cqn;
	struct virtio_rdma_qp_cap cap;
	le32 reserved[4];
};

struct virtio_rdma_ack_create_qp {
	le32 qpn;
};

/* MODIFY_QP: no ack data */
struct virtio_rdma_global_route {
	uint8_t dgid[16];      /* destination GID or MGID */
	le32 flow_label;       /* 20 bits */
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t padding;
};

struct virtio_rdma_ah_attr {
	struct virtio_rdma_global_route grh;
	uint8_t dmac[6];
	/* vrdma [spec.md "RoCE on the network"]: RFC-only drivers leave these 0. */
	uint8_t sl;                /* service level 0..15: the 802.1Q PCP (sl & 7)
				    * when non-zero, else DSCP >> 3 */
	uint8_t flags;             /* VIRTIO_RDMA_AH_F_*; device answers only */
	le16 vlan_id;              /* with VIRTIO_RDMA_AH_F_VLAN (answers only) */
	uint8_t reserved[6];
};

/* virtio_rdma_ah_attr.flags, set by the device in QUERY_QP answers (ignored
 * in commands): the path's frames carry an 802.1Q tag with vlan_id. */
#define VIRTIO_RDMA_AH_F_VLAN 0x01

struct virtio_rdma_cmd_modify_qp {
	le32 qpn;
	le32 attr_mask;            /* enum virtio_ib_qp_attr_mask */
	uint8_t qp_state;          /* enum virtio_ib_qp_state: move to */
	uint8_t cur_qp_state;      /* enum virtio_ib_qp_state: assumed current */
	uint8_t path_mtu;          /* enum virtio_ib_mtu (RC/UC) */
	uint8_t max_rd_atomic;     /* outstanding RDMA READs as initiator (RC) */
	uint8_t max_dest_rd_atomic;/* responder resources for RDMA READ (RC) */
	uint8_t min_rnr_timer;     /* RNR NAK timer code (RC) */
	uint8_t timeout;           /* local ACK timeout code (RC) */
	uint8_t retry_cnt;         /* (RC) */
	uint8_t rnr_retry;         /* (RC) */
	uint8_t padding[7];
	le32 qkey;                 /* (UD, GSI) */
	le32 rq_psn;               /* (RC/UC) */
	le32 sq_psn;
	le32 dest_qp_num;          /* (RC/UC) */
	le32 qp_access_flags;      /* enum virtio_ib_access_flags (RC/UC) */
	le32 rate_limit;           /* kbps, 0 = unlimited */
	struct virtio_rdma_qp_cap cap;
	struct virtio_rdma_ah_attr ah_attr; /* address vector (RC/UC) */
	le32 reserved[4];
};

/* QUERY_QP */
struct virtio_rdma_cmd_query_qp {
	le32 qpn;
	le32 attr_mask; /* enum virtio_ib_qp_attr_mask */
};

/* Note: the ack layout differs from virtio_rdma_cmd_modify_qp (no qpn,
 * attr_mask, cur_qp_state; sq_draining instead) [spec.md]. */
struct virtio_rdma_ack_query_qp {
	uint8_t qp_state;
	uint8_t path_mtu;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t padding[7];
	le32 qkey;
	le32 rq_psn;
	le32 sq_psn;
	le32 dest_qp_num;
	le32 qp_access_flags;
	le32 rate_limit;
	struct virtio_rdma_qp_cap cap;
	struct virtio_rdma_ah_attr ah_attr;
	le32 reserved[4];
};

/* DESTROY_QP: no ack data */
struct virtio_rdma_cmd_destroy_qp {
	le32 qpn;
};

/* CREATE_AH */
struct virtio_rdma_cmd_create_ah {
	le32 pdn;
	le32 padding;
	struct virtio_rdma_ah_attr ah_attr;
};

struct virtio_rdma_ack_create_ah {
	le32 ah;
};

/* DESTROY_AH: no ack data */
struct virtio_rdma_cmd_destroy_ah {
	le32 pdn;
	le32 ah;
};

/* ADD_GID: no ack data */
struct virtio_rdma_cmd_add_gid {
	le16 index;
	le16 padding[3];
	uint8_t gid[16];
};

/* DEL_GID: no ack data. 2 bytes exactly [spec.md]. */
struct virtio_rdma_cmd_del_gid {
	le16 index;
};

/* REQ_NOTIFY_CQ: no ack data */
struct virtio_rdma_cmd_req_notify {
	le32 cqn;
	le32 flags; /* VIRTIO_IB_NOTIFY_* */
};

/* ------------------------------------------------------------------------ */
/* Data path: send, receive and completion queue elements (RFC: RoCE        */
/* Support)                                                                  */
/* ------------------------------------------------------------------------ */

struct virtio_rdma_sge {
	le64 addr;
	le32 length;
	le32 lkey;
};

/* Size of the inline area of a send request. */
#define VIRTIO_RDMA_INLINE_DATA_SIZE 512

/*
 * Send queue element: device-readable, one element per WR; num_sge SGEs
 * follow the fixed 576-byte part. With VIRTIO_IB_SEND_INLINE the data is in
 * inline_data[0 .. inline_len) and the union holds the le16 inline_len (its
 * upper two bytes are ignored); otherwise it holds the le32 num_sge [spec.md].
 */
struct virtio_rdma_sq_req {
	le64 wr_id;
	uint8_t opcode;     /* enum virtio_ib_wr_opcode */
	uint8_t send_flags; /* VIRTIO_IB_SEND_* */
	le16 padding;
	le32 imm_data;      /* network byte order, opaque */
	union {
		struct {
			le64 remote_addr;
			le32 rkey;
		} rdma;
		struct {
			le32 remote_qpn;
			le32 remote_qkey;
			le32 ah;
		} ud;
		le64 reserved[4];
	};
	uint8_t inline_data[VIRTIO_RDMA_INLINE_DATA_SIZE];
	union {
		le32 num_sge;
		le16 inline_len;
	};
	le32 reserved2[3];
	struct virtio_rdma_sge sg_list[];
};

/* Receive queue element: device-readable. */
struct virtio_rdma_rq_req {
	le64 wr_id;
	le32 num_sge;
	le32 reserved[3];
	struct virtio_rdma_sge sg_list[];
};

/* Completion queue element: the device writes one into a device-writable
 * buffer of the completion virtqueue. */
struct virtio_rdma_cq_req {
	le64 wr_id;
	uint8_t status;  /* enum virtio_ib_wc_status */
	uint8_t opcode;  /* enum virtio_ib_wc_opcode */
	le16 padding;
	le32 vendor_err;
	le32 byte_len;
	le32 imm_data;   /* network byte order, opaque */
	le32 qp_num;
	le32 src_qp;     /* UD only */
	le32 wc_flags;   /* VIRTIO_IB_WC_GRH / VIRTIO_IB_WC_WITH_IMM */
	le32 reserved[3];
};

/* ------------------------------------------------------------------------ */
/* Layout checks                                                             */
/* ------------------------------------------------------------------------ */

#define VRDMA_ABI_SIZE(type, n) _Static_assert(sizeof(struct type) == (n), #type " size")
#define VRDMA_ABI_OFF(type, field, n)                                          \
	_Static_assert(offsetof(struct type, field) == (n), #type "." #field " offset")

VRDMA_ABI_SIZE(virtio_net_roce_config, 32);
VRDMA_ABI_OFF(virtio_net_roce_config, status, 6);
VRDMA_ABI_OFF(virtio_net_roce_config, mtu, 10);
VRDMA_ABI_OFF(virtio_net_roce_config, speed, 12);
VRDMA_ABI_OFF(virtio_net_roce_config, supported_hash_types, 20);
VRDMA_ABI_OFF(virtio_net_roce_config, max_rdma_qps, 24);
VRDMA_ABI_OFF(virtio_net_roce_config, max_rdma_cqs, 28);
VRDMA_ABI_SIZE(virtio_net_roce_ctrl_hdr, 2);

VRDMA_ABI_SIZE(virtio_rdma_ack_query_device, 128);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device, hw_ver, 24);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device, max_ah, 64);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device, local_ca_ack_delay, 68);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device, reserved, 72);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_port, 32);
VRDMA_ABI_OFF(virtio_rdma_ack_query_port, gid1_ipv4, 12);
VRDMA_ABI_OFF(virtio_rdma_ack_query_port, gid2_ipv6, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_ack_create_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_ack_create_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_pd, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_get_dma_mr, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_get_dma_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_reg_user_mr, 32);
VRDMA_ABI_OFF(virtio_rdma_cmd_reg_user_mr, virt_addr, 8);
VRDMA_ABI_OFF(virtio_rdma_cmd_reg_user_mr, length, 16);
VRDMA_ABI_OFF(virtio_rdma_cmd_reg_user_mr, npages, 24);
VRDMA_ABI_OFF(virtio_rdma_cmd_reg_user_mr, pages, 32);
VRDMA_ABI_SIZE(virtio_rdma_ack_reg_user_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_dereg_mr, 4);
VRDMA_ABI_SIZE(virtio_rdma_qp_cap, 24);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_qp, 56);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp, qp_type, 4);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp, send_cqn, 8);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp, cap, 16);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp, reserved, 40);
VRDMA_ABI_SIZE(virtio_rdma_ack_create_qp, 4);
VRDMA_ABI_SIZE(virtio_rdma_global_route, 24);
VRDMA_ABI_OFF(virtio_rdma_global_route, flow_label, 16);
VRDMA_ABI_OFF(virtio_rdma_global_route, sgid_index, 20);
VRDMA_ABI_SIZE(virtio_rdma_ah_attr, 40);
VRDMA_ABI_OFF(virtio_rdma_ah_attr, dmac, 24);
VRDMA_ABI_OFF(virtio_rdma_ah_attr, sl, 30);
VRDMA_ABI_OFF(virtio_rdma_ah_attr, flags, 31);
VRDMA_ABI_OFF(virtio_rdma_ah_attr, vlan_id, 32);
VRDMA_ABI_OFF(virtio_rdma_ah_attr, reserved, 34);
VRDMA_ABI_SIZE(virtio_rdma_cmd_modify_qp, 128);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, qp_state, 8);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, rnr_retry, 16);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, qkey, 24);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, rate_limit, 44);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, cap, 48);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, ah_attr, 72);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_qp, reserved, 112);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_qp, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_qp, 120);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp, rnr_retry, 8);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp, qkey, 16);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp, cap, 40);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp, ah_attr, 64);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp, reserved, 104);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_qp, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_ah, 48);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_ah, ah_attr, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_create_ah, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_ah, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_add_gid, 24);
VRDMA_ABI_OFF(virtio_rdma_cmd_add_gid, gid, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_del_gid, 2);
VRDMA_ABI_SIZE(virtio_rdma_cmd_req_notify, 8);

VRDMA_ABI_SIZE(virtio_rdma_sge, 16);
VRDMA_ABI_SIZE(virtio_rdma_sq_req, 576);
VRDMA_ABI_OFF(virtio_rdma_sq_req, opcode, 8);
VRDMA_ABI_OFF(virtio_rdma_sq_req, send_flags, 9);
VRDMA_ABI_OFF(virtio_rdma_sq_req, imm_data, 12);
VRDMA_ABI_OFF(virtio_rdma_sq_req, rdma.remote_addr, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req, rdma.rkey, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req, ud.remote_qpn, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req, ud.remote_qkey, 20);
VRDMA_ABI_OFF(virtio_rdma_sq_req, ud.ah, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req, inline_data, 48);
VRDMA_ABI_OFF(virtio_rdma_sq_req, num_sge, 560);
VRDMA_ABI_OFF(virtio_rdma_sq_req, inline_len, 560);
VRDMA_ABI_OFF(virtio_rdma_sq_req, reserved2, 564);
VRDMA_ABI_OFF(virtio_rdma_sq_req, sg_list, 576);
VRDMA_ABI_SIZE(virtio_rdma_rq_req, 24);
VRDMA_ABI_OFF(virtio_rdma_rq_req, num_sge, 8);
VRDMA_ABI_OFF(virtio_rdma_rq_req, sg_list, 24);
VRDMA_ABI_SIZE(virtio_rdma_cq_req, 48);
VRDMA_ABI_OFF(virtio_rdma_cq_req, status, 8);
VRDMA_ABI_OFF(virtio_rdma_cq_req, opcode, 9);
VRDMA_ABI_OFF(virtio_rdma_cq_req, vendor_err, 12);
VRDMA_ABI_OFF(virtio_rdma_cq_req, imm_data, 20);
VRDMA_ABI_OFF(virtio_rdma_cq_req, qp_num, 24);
VRDMA_ABI_OFF(virtio_rdma_cq_req, wc_flags, 32);

/* ======================================================================== */
/* vrdma definitions (NOT in the RFC): choices of this implementation,     */
/* documented in docs/spec.md.                                              */
/* ======================================================================== */

/* Page size of REG_USER_MR page arrays: every pages[i] is the guest
 * physical address of a 4096-byte, 4096-aligned page. */
#define VRDMA_PAGE_SHIFT 12
#define VRDMA_PAGE_SIZE  (1u << VRDMA_PAGE_SHIFT)

/*
 * QP numbers: qpn = index | (generation << 14). The index (14 bits, 0..16383)
 * selects the QP table slot and the send/receive virtqueue pair; the
 * generation (10 bits) changes each time an index is reused, so a stale QPN
 * (from the network or a driver bug) does not reach the QP that reused the
 * slot. Index 0 is reserved (QP0 / SMI does not exist on RoCE), so vring
 * pair 0 is never used. The GSI QP is QPN 1 (index 1, generation 0). QPN
 * 0xFFFFFF (the multicast QPN) is never allocated.
 * CQ numbers are CQ indexes: cqn = c, 0 <= c < max_rdma_cqs.
 */
#define VRDMA_QPN_INDEX_BITS 14
#define VRDMA_QPN_INDEX_MASK ((1u << VRDMA_QPN_INDEX_BITS) - 1)
#define VRDMA_QPN_GEN_BITS   10
#define VRDMA_QPN_GEN_MASK   ((1u << VRDMA_QPN_GEN_BITS) - 1)
#define VRDMA_QPN_MASK       0xffffffu /* QPNs are 24 bits on the wire */
#define VRDMA_QPN_MULTICAST  0xffffffu
#define VRDMA_QP_INDEX_RESERVED 0
#define VRDMA_GSI_QPN        1
#define VRDMA_MAX_QP_INDEXES (1u << VRDMA_QPN_INDEX_BITS)

/* QPN from an index and a generation. */
static inline uint32_t vrdma_qpn_make(uint32_t index, uint32_t gen)
{
	return (index & VRDMA_QPN_INDEX_MASK) |
	       ((gen & VRDMA_QPN_GEN_MASK) << VRDMA_QPN_INDEX_BITS);
}

/* The QP table index of a QPN. */
static inline uint32_t vrdma_qpn_index(uint32_t qpn)
{
	return qpn & VRDMA_QPN_INDEX_MASK;
}

/* The generation of a QPN. */
static inline uint32_t vrdma_qpn_gen(uint32_t qpn)
{
	return (qpn >> VRDMA_QPN_INDEX_BITS) & VRDMA_QPN_GEN_MASK;
}

/*
 * Virtqueue indexes of the RFC's layout, for n net queue pairs (N, 1 unless
 * MQ/RSS), m = max_rdma_cqs (M) and l = max_rdma_qps (L):
 *   2k, 2k+1       receiveq(k+1), transmitq(k+1)   0 <= k < n
 *   2n             controlq
 *   2n+1+c         completion queue of CQ c        0 <= c < m
 *   2n+m+1+2i      send queue of QP index i        0 <= i < l
 *   2n+m+2+2i      receive queue of QP index i
 * Total 2n+1+m+2l virtqueues.
 */
static inline uint32_t vrdma_vq_ctrl(uint32_t n)
{
	return 2 * n;
}

/* The completion virtqueue of CQ c. */
static inline uint32_t vrdma_vq_cq(uint32_t n, uint32_t c)
{
	return 2 * n + 1 + c;
}

/* The send virtqueue of QP index i. */
static inline uint32_t vrdma_vq_sq(uint32_t n, uint32_t m, uint32_t i)
{
	return 2 * n + m + 1 + 2 * i;
}

/* The receive virtqueue of QP index i. */
static inline uint32_t vrdma_vq_rq(uint32_t n, uint32_t m, uint32_t i)
{
	return 2 * n + m + 2 + 2 * i;
}

/* Number of virtqueues of the whole device. */
static inline uint32_t vrdma_vq_count(uint32_t n, uint32_t m, uint32_t l)
{
	return 2 * n + 1 + m + 2 * l;
}

enum vrdma_vq_kind {
	VRDMA_VQ_INVALID = 0, /* beyond the device's last virtqueue */
	VRDMA_VQ_NET_RX,      /* idx = net queue pair k */
	VRDMA_VQ_NET_TX,
	VRDMA_VQ_CTRL,
	VRDMA_VQ_CQ,          /* idx = CQ index c */
	VRDMA_VQ_SQ,          /* idx = QP index i */
	VRDMA_VQ_RQ,
};

/* What virtqueue vq is in the layout (n, m, l); *idx gets its number
 * within its kind (0 for CTRL and INVALID). Returns the kind. */
static inline enum vrdma_vq_kind vrdma_vq_decode(uint32_t n, uint32_t m, uint32_t l,
						 uint32_t vq, uint32_t *idx)
{
	*idx = 0;
	if (vq < 2 * n) {
		*idx = vq / 2;
		return vq & 1 ? VRDMA_VQ_NET_TX : VRDMA_VQ_NET_RX;
	}
	if (vq == 2 * n)
		return VRDMA_VQ_CTRL;
	if (vq <= 2 * n + m) {
		*idx = vq - 2 * n - 1;
		return VRDMA_VQ_CQ;
	}
	if ((uint64_t)vq < (uint64_t)2 * n + 1 + m + 2 * (uint64_t)l) {
		uint32_t off = vq - (2 * n + m + 1);
		*idx = off / 2;
		return off & 1 ? VRDMA_VQ_RQ : VRDMA_VQ_SQ;
	}
	return VRDMA_VQ_INVALID;
}

/* ======================================================================== */
/* vrdma extensions beyond the RFC (NOT in the RFC): everything below is   */
/* negotiated with VIRTIO_NET_F_ROCE_EXT and specified in docs/spec.md       */
/* "Extensions beyond the RFC" ([ext] below). Numbering follows the         */
/* standalone virtio-rdma RFC (v1) where it defined a value, and       */
/* libibverbs otherwise. A driver that does not negotiate the feature sees   */
/* exactly the RFC-only device; nothing above this line changes meaning.         */
/* ======================================================================== */

/* Feature bit of the whole extension set [ext "Discovery"]. Requires
 * VIRTIO_NET_F_ROCE. Bit 4 is the only unassigned virtio-net device bit
 * below 64 (vhost-user carries 64 feature bits). */
#define VIRTIO_NET_F_ROCE_EXT 4

/*
 * Configuration layout with VIRTIO_NET_F_ROCE_EXT offered: the RFC's 32
 * bytes, then max_rdma_srqs (0..16384, and the device keeps the total number
 * of virtqueues <= 65536) and a reserved word (reads 0).
 */
struct virtio_net_roce_ext_config {
	uint8_t mac[6];
	le16 status;
	le16 max_virtqueue_pairs;
	le16 mtu;
	le32 speed;
	uint8_t duplex;
	uint8_t rss_max_key_size;
	le16 rss_max_indirection_table_length;
	le32 supported_hash_types;
	le32 max_rdma_qps;
	le32 max_rdma_cqs;
	/* Only with VIRTIO_NET_F_ROCE_EXT: */
	le32 max_rdma_srqs;
	le32 ext_reserved;
};

#define VIRTIO_NET_ROCE_MAX_SRQS 16384
/* virtio numbers virtqueues with 16 bits */
#define VIRTIO_NET_ROCE_MAX_VQS  65536u

/* Control commands of the extension (class VIRTIO_NET_CTRL_ROCE). Without
 * VIRTIO_NET_F_ROCE_EXT, or when the capability is not reported, each of
 * them fails with VIRTIO_NET_ERR like any unknown command. */
#define VIRTIO_NET_CTRL_ROCE_CREATE_SRQ     18
#define VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ     19
#define VIRTIO_NET_CTRL_ROCE_QUERY_SRQ      20
#define VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ    21
#define VIRTIO_NET_CTRL_ROCE_ALLOC_MR       22
#define VIRTIO_NET_CTRL_ROCE_ALLOC_MW       23
#define VIRTIO_NET_CTRL_ROCE_DEALLOC_MW     24
#define VIRTIO_NET_CTRL_ROCE_RESIZE_CQ      25
#define VIRTIO_NET_CTRL_ROCE_RESIZE_QP      26
#define VIRTIO_NET_CTRL_ROCE_QUERY_PKEY     27
#define VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS   28 /* commands 0..27 */

/* device_cap_flags of QUERY_DEVICE (RFC bit 0 = RC_RNR_NAK_GEN). Only
 * reported when VIRTIO_NET_F_ROCE_EXT is negotiated [ext "Discovery"]. */
#define VIRTIO_IB_DEVICE_SRQ                 (1ull << 1)
#define VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS  (1ull << 2)
#define VIRTIO_IB_DEVICE_MEM_WINDOW          (1ull << 3) /* type 1 */
#define VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B  (1ull << 4)
#define VIRTIO_IB_DEVICE_RESIZE_CQ           (1ull << 5)
#define VIRTIO_IB_DEVICE_RESIZE_MAX_WR       (1ull << 6) /* RESIZE_QP */
#define VIRTIO_IB_DEVICE_CAP_EXT_MASK        0x7full    /* bits 0..6 */

/* atomic_cap of the extended QUERY_DEVICE ack (values of ibv_atomic_cap). */
enum virtio_ib_atomic_cap {
	VIRTIO_IB_ATOMIC_NONE = 0,
	VIRTIO_IB_ATOMIC_HCA = 1,  /* atomic w.r.t. every QP of this device */
	VIRTIO_IB_ATOMIC_GLOB = 2, /* never reported by vrdma */
};

/* Access flags reserved above, now defined (same values). REMOTE_ATOMIC:
 * MRs, QPs and windows, only with atomic_cap != NONE. MW_BIND: MRs, only
 * with a memory-window capability. Both require LOCAL_WRITE where IBTA does
 * (REMOTE_ATOMIC). */
#define VIRTIO_IB_ACCESS_REMOTE_ATOMIC (1 << 3)
#define VIRTIO_IB_ACCESS_MW_BIND       (1 << 4)
#define VIRTIO_IB_ACCESS_EXT_MASK                                              \
	(VIRTIO_IB_ACCESS_RFC_MASK | VIRTIO_IB_ACCESS_REMOTE_ATOMIC |         \
	 VIRTIO_IB_ACCESS_MW_BIND)
/* Rights a memory window may grant. */
#define VIRTIO_IB_MW_ACCESS_MASK                                               \
	(VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ |        \
	 VIRTIO_IB_ACCESS_REMOTE_ATOMIC)

/* Send work request opcodes of the extension: the virtio-rdma RFC's (v1) numbering, which
 * is also libibverbs' IBV_WR_* for 0..9. 10 (TSO) and 11 (RDMA READ with
 * invalidate) stay reserved and are refused. */
#define VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP   5
#define VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD 6
#define VIRTIO_IB_WR_LOCAL_INV            7
#define VIRTIO_IB_WR_BIND_MW              8
#define VIRTIO_IB_WR_SEND_WITH_INV        9
#define VIRTIO_IB_WR_REG_MR               0x20 /* fast registration */

/* Completion opcodes of the extension (after the RFC's 0..4). A receive
 * of SEND_WITH_INV completes as VIRTIO_IB_WC_RECV with WITH_INV. */
#define VIRTIO_IB_WC_COMP_SWAP  5
#define VIRTIO_IB_WC_FETCH_ADD  6
#define VIRTIO_IB_WC_BIND_MW    7
#define VIRTIO_IB_WC_LOCAL_INV  8
#define VIRTIO_IB_WC_REG_MR     9

/* The completion opcode of a send WR opcode (VIRTIO_IB_WR_* ->
 * VIRTIO_IB_WC_*): the one map of device, driver and providers. Sends
 * (with IMM or INV) and opcodes without one of their own complete as SEND. */
static inline uint8_t virtio_ib_wc_opcode_of_wr(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		return VIRTIO_IB_WC_RDMA_WRITE;
	case VIRTIO_IB_WR_RDMA_READ:
		return VIRTIO_IB_WC_RDMA_READ;
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
		return VIRTIO_IB_WC_COMP_SWAP;
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		return VIRTIO_IB_WC_FETCH_ADD;
	case VIRTIO_IB_WR_LOCAL_INV:
		return VIRTIO_IB_WC_LOCAL_INV;
	case VIRTIO_IB_WR_BIND_MW:
		return VIRTIO_IB_WC_BIND_MW;
	case VIRTIO_IB_WR_REG_MR:
		return VIRTIO_IB_WC_REG_MR;
	default:
		return VIRTIO_IB_WC_SEND;
	}
}

/* Completion status of the extension (after the RFC's 0..15). */
#define VIRTIO_IB_WC_MW_BIND_ERR 16

/* wc_flags: imm_data holds the invalidated rkey (le32). */
#define VIRTIO_IB_WC_WITH_INV (1 << 2)
/* wc_flags, UD receives with VIRTIO_IB_WC_GRH: the datagram came over IPv4
 * (the GRH area holds 20 zero bytes and the IPv4 header); without it, an
 * IPv6 header. */
#define VIRTIO_IB_WC_GRH_IPV4 (1 << 3)

/* The low 8 bits of the key of an ALLOC_MR MR or of a memory window belong
 * to the driver (chosen at each REG_MR / BIND_MW, like ibv_inc_rkey); the
 * device owns bits 8..31, which name the object. */
#define VIRTIO_IB_KEY_CONSUMER_MASK 0xffu

/* ALLOC_MR mr_type */
#define VIRTIO_IB_MR_TYPE_MEM_REG 0
/* ALLOC_MW mw_type (type 2 windows are type 2B: not tied to a QP) */
#define VIRTIO_IB_MW_TYPE_1 1
#define VIRTIO_IB_MW_TYPE_2 2

/* MODIFY_SRQ attr_mask */
#define VIRTIO_IB_SRQ_MAX_WR (1 << 0) /* resize: never accepted */
#define VIRTIO_IB_SRQ_LIMIT  (1 << 1)

/* CREATE_QP ext_flags (the RFC's reserved[0]) */
#define VIRTIO_IB_QP_CREATE_SRQ (1 << 0) /* srqn is valid: receive from it */
#define VIRTIO_IB_QP_CREATE_EXT_MASK VIRTIO_IB_QP_CREATE_SRQ

/* Asynchronous events, written to the event virtqueue. Values are those of
 * enum ibv_event_type (and Linux ib_event_type). */
enum virtio_ib_event_type {
	VIRTIO_IB_EVENT_CQ_ERR = 0,              /* id = cqn */
	VIRTIO_IB_EVENT_QP_FATAL = 1,            /* id = qpn */
	VIRTIO_IB_EVENT_QP_REQ_ERR = 2,          /* id = qpn */
	VIRTIO_IB_EVENT_QP_ACCESS_ERR = 3,       /* id = qpn */
	VIRTIO_IB_EVENT_COMM_EST = 4,            /* id = qpn */
	VIRTIO_IB_EVENT_SQ_DRAINED = 5,          /* id = qpn */
	VIRTIO_IB_EVENT_PATH_MIG = 6,            /* never generated */
	VIRTIO_IB_EVENT_PATH_MIG_ERR = 7,        /* never generated */
	VIRTIO_IB_EVENT_DEVICE_FATAL = 8,        /* never generated */
	VIRTIO_IB_EVENT_PORT_ACTIVE = 9,         /* id = port (1) */
	VIRTIO_IB_EVENT_PORT_ERR = 10,           /* id = port (1) */
	VIRTIO_IB_EVENT_LID_CHANGE = 11,         /* never generated */
	VIRTIO_IB_EVENT_PKEY_CHANGE = 12,        /* never generated */
	VIRTIO_IB_EVENT_SM_CHANGE = 13,          /* never generated */
	VIRTIO_IB_EVENT_SRQ_ERR = 14,            /* id = srqn */
	VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED = 15,  /* id = srqn */
	VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED = 16,/* id = qpn */
	VIRTIO_IB_EVENT_CLIENT_REREGISTER = 17,  /* never generated */
	VIRTIO_IB_EVENT_GID_CHANGE = 18,         /* id = port (1) */
	VIRTIO_IB_EVENT_NUM = 19,
};

/* One event: the device writes one into each device-writable buffer (>= 16
 * bytes) of the event virtqueue. */
struct virtio_rdma_event {
	le32 type;       /* enum virtio_ib_event_type */
	le32 id;         /* cqn, full 24-bit qpn, srqn or port number */
	le32 vendor_err; /* diagnostic only (0 = none); not to be relied on */
	le32 reserved;
};

/* ---- control command and ack structures of the extension ---------------- */

/* QUERY_DEVICE ack with VIRTIO_NET_F_ROCE_EXT: the RFC's reserved[14]
 * (offset 72) gets meaning; the first 72 bytes are the RFC's. */
struct virtio_rdma_ack_query_device_ext {
	le64 device_cap_flags;    /* VIRTIO_IB_DEVICE_* */
	le64 max_mr_size;
	le64 page_size_cap;
	le32 hw_ver;
	le32 max_qp_wr;
	le32 max_send_sge;
	le32 max_recv_sge;
	le32 max_sge_rd;
	le32 max_cqe;
	le32 max_mr;
	le32 max_pd;
	le32 max_qp_rd_atom;      /* RDMA READs + atomics per QP as responder */
	le32 max_qp_init_rd_atom; /* ... as initiator */
	le32 max_ah;
	uint8_t local_ca_ack_delay;
	uint8_t padding[3];
	/* extension (zero without VIRTIO_NET_F_ROCE_EXT) */
	le32 max_srq_wr;          /* receive WRs per SRQ */
	le32 max_srq_sge;         /* SGEs per SRQ receive WR */
	le32 max_mw;              /* memory windows */
	le32 max_fast_reg_page_list_len; /* pages per REG_MR (ALLOC_MR max_num_sg) */
	le16 max_pkeys;           /* P_Key table length (1) */
	uint8_t atomic_cap;       /* enum virtio_ib_atomic_cap */
	uint8_t padding2;
	le32 reserved[9];
};

/* QUERY_PORT ack with VIRTIO_NET_F_ROCE_EXT. */
struct virtio_rdma_ack_query_port_ext {
	le32 gid_tbl_len;
	le32 max_msg_sz;
	le16 pkey_tbl_len;        /* 1 */
	le16 padding;
	uint8_t gid1_ipv4[4];     /* as in virtio_rdma_ack_query_port */
	uint8_t gid2_ipv6[16];    /* as in virtio_rdma_ack_query_port */
};

/* CREATE_QP with VIRTIO_NET_F_ROCE_EXT: the RFC's reserved[0..1] become
 * ext_flags and srqn. */
struct virtio_rdma_cmd_create_qp_ext {
	le32 pdn;
	uint8_t qp_type;
	uint8_t sq_sig_all;
	uint8_t padding[2];
	le32 send_cqn;
	le32 recv_cqn;
	struct virtio_rdma_qp_cap cap;
	le32 ext_flags;           /* VIRTIO_IB_QP_CREATE_* */
	le32 srqn;                /* with VIRTIO_IB_QP_CREATE_SRQ */
	le32 reserved[2];
};

/* QUERY_QP ack with VIRTIO_NET_F_ROCE_EXT: reserved[0..1] report them. */
struct virtio_rdma_ack_query_qp_ext {
	uint8_t qp_state;
	uint8_t path_mtu;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t padding[7];
	le32 qkey;
	le32 rq_psn;
	le32 sq_psn;
	le32 dest_qp_num;
	le32 qp_access_flags;
	le32 rate_limit;
	struct virtio_rdma_qp_cap cap;
	struct virtio_rdma_ah_attr ah_attr;
	le32 ext_flags;           /* VIRTIO_IB_QP_CREATE_* given at creation */
	le32 srqn;
	le32 reserved[2];
};

/* CREATE_SRQ (18) */
struct virtio_rdma_cmd_create_srq {
	le32 pdn;
	le32 max_wr;
	le32 max_sge;
	le32 reserved;
};

struct virtio_rdma_ack_create_srq {
	le32 srqn;                /* SRQ index: its virtqueue is [ext] */
	le32 max_wr;              /* as accepted */
	le32 max_sge;
	le32 reserved;
};

/* MODIFY_SRQ (19): no ack data */
struct virtio_rdma_cmd_modify_srq {
	le32 srqn;
	le32 attr_mask;           /* VIRTIO_IB_SRQ_* */
	le32 max_wr;
	le32 srq_limit;           /* 0 disarms */
};

/* QUERY_SRQ (20) */
struct virtio_rdma_cmd_query_srq {
	le32 srqn;
};

struct virtio_rdma_ack_query_srq {
	le32 max_wr;
	le32 max_sge;
	le32 srq_limit;           /* 0 when not armed */
	le32 reserved;
};

/* DESTROY_SRQ (21): no ack data */
struct virtio_rdma_cmd_destroy_srq {
	le32 srqn;
};

/* ALLOC_MR (22): an MR for fast registration, FREE until a REG_MR WR. */
struct virtio_rdma_cmd_alloc_mr {
	le32 pdn;
	le32 mr_type;             /* VIRTIO_IB_MR_TYPE_MEM_REG */
	le32 max_num_sg;          /* pages a REG_MR may map */
	le32 reserved;
};

struct virtio_rdma_ack_alloc_mr {
	le32 mrn;                 /* freed with DEREG_MR */
	le32 lkey;                /* == rkey */
	le32 rkey;
};

/* ALLOC_MW (23) */
struct virtio_rdma_cmd_alloc_mw {
	le32 pdn;
	le32 mw_type;             /* VIRTIO_IB_MW_TYPE_1 / _2 */
};

struct virtio_rdma_ack_alloc_mw {
	le32 mwn;
	le32 rkey;                /* initial key (not usable until bound) */
};

/* DEALLOC_MW (24): no ack data */
struct virtio_rdma_cmd_dealloc_mw {
	le32 mwn;
};

/* RESIZE_CQ (25) */
struct virtio_rdma_cmd_resize_cq {
	le32 cqn;
	le32 cqe;
};

struct virtio_rdma_ack_resize_cq {
	le32 cqe;                 /* new capacity */
};

/* RESIZE_QP (26): only max_send_wr / max_recv_wr may change. */
struct virtio_rdma_cmd_resize_qp {
	le32 qpn;
	le32 padding;
	struct virtio_rdma_qp_cap cap;
};

struct virtio_rdma_ack_resize_qp {
	struct virtio_rdma_qp_cap cap; /* now in force */
};

/* QUERY_PKEY (27) */
struct virtio_rdma_cmd_query_pkey {
	le16 index;
	le16 padding;
};

struct virtio_rdma_ack_query_pkey {
	le16 pkey;
	le16 padding;
};

/* ---- data path structures of the extension -------------------------------- */

/*
 * Send queue element with the extension's views of the RFC's reserved
 * union (offset 16, 32 bytes) and of imm_data (offset 12). Same size and
 * offsets as struct virtio_rdma_sq_req (checked below).
 *   atomic   CMP_AND_SWP / FETCH_AND_ADD; the result goes to sg_list[0]
 *   bind_mw  BIND_MW: the window is named by rkey (its new key)
 *   reg      REG_MR: the MR is named by key (its new lkey = rkey); the page
 *            list is npages le64 guest physical addresses at page_list
 *   invalidate_rkey  LOCAL_INV, SEND_WITH_INV
 */
struct virtio_rdma_sq_req_ext {
	le64 wr_id;
	uint8_t opcode;     /* VIRTIO_IB_WR_* */
	uint8_t send_flags; /* VIRTIO_IB_SEND_* */
	le16 padding;
	union {
		le32 imm_data;        /* network byte order, opaque */
		le32 invalidate_rkey; /* LOCAL_INV, SEND_WITH_INV */
	};
	union {
		struct {
			le64 remote_addr;
			le32 rkey;
		} rdma;
		struct {
			le32 remote_qpn;
			le32 remote_qkey;
			le32 ah;
		} ud;
		struct {
			le64 remote_addr; /* 8-byte aligned */
			le64 compare_add; /* CAS: compare; FAA: add */
			le64 swap;        /* CAS: swap; FAA: ignored */
			le32 rkey;
			le32 padding;
		} atomic;
		struct {
			le64 addr;        /* window start, in the MR's iova space */
			le64 length;      /* type 1: 0 = unbind */
			le32 mr_lkey;     /* the MR the window is bound to */
			le32 rkey;        /* the window's new rkey */
			le32 access;      /* VIRTIO_IB_MW_ACCESS_MASK bits */
			le32 padding;
		} bind_mw;
		struct {
			le64 iova;
			le64 length;
			le64 page_list;   /* GPA of the le64 page array */
			le32 key;         /* new lkey = rkey of the MR */
			le32 access;      /* VIRTIO_IB_ACCESS_* */
		} reg;
		le64 reserved[4];
	};
	uint8_t inline_data[VIRTIO_RDMA_INLINE_DATA_SIZE];
	union {
		le32 num_sge;
		le16 inline_len;
	};
	le32 reserved2[3];
	struct virtio_rdma_sge sg_list[];
};

/* Completion queue element with the extension's view of imm_data. */
struct virtio_rdma_cq_req_ext {
	le64 wr_id;
	uint8_t status;  /* enum virtio_ib_wc_status or VIRTIO_IB_WC_MW_BIND_ERR */
	uint8_t opcode;  /* enum virtio_ib_wc_opcode or VIRTIO_IB_WC_* above */
	le16 padding;
	le32 vendor_err;
	le32 byte_len;
	union {
		le32 imm_data;         /* with VIRTIO_IB_WC_WITH_IMM */
		le32 invalidated_rkey; /* with VIRTIO_IB_WC_WITH_INV */
	};
	le32 qp_num;
	le32 src_qp;
	le32 wc_flags;   /* VIRTIO_IB_WC_GRH / _WITH_IMM / _WITH_INV */
	le32 reserved[3];
};

/* ---- layout checks of the extension --------------------------------------- */

_Static_assert(VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP_RSVD, "cas");
_Static_assert(VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD_RSVD, "faa");
_Static_assert(VIRTIO_IB_WR_LOCAL_INV == VIRTIO_IB_WR_LOCAL_INV_RSVD, "local inv");
_Static_assert(VIRTIO_IB_WR_SEND_WITH_INV == VIRTIO_IB_WR_SEND_WITH_INV_RSVD, "send inv");
_Static_assert(VIRTIO_IB_WR_REG_MR == VIRTIO_IB_WR_REG_MR_RSVD, "reg mr");
_Static_assert(VIRTIO_IB_ACCESS_REMOTE_ATOMIC == VIRTIO_IB_ACCESS_REMOTE_ATOMIC_RSVD, "atomic");
_Static_assert(VIRTIO_IB_ACCESS_MW_BIND == VIRTIO_IB_ACCESS_MW_BIND_RSVD, "mw bind");
_Static_assert(VIRTIO_IB_WC_COMP_SWAP == VIRTIO_IB_WC_RECV_RDMA_WITH_IMM + 1, "wc opcodes");
_Static_assert(VIRTIO_IB_WC_MW_BIND_ERR == VIRTIO_IB_WC_GENERAL_ERR + 1, "wc status");
_Static_assert(VIRTIO_NET_CTRL_ROCE_CREATE_SRQ == VIRTIO_NET_CTRL_ROCE_NUM_CMDS, "cmd 18");

VRDMA_ABI_SIZE(virtio_net_roce_ext_config, 40);
VRDMA_ABI_OFF(virtio_net_roce_ext_config, max_rdma_qps, 24);
VRDMA_ABI_OFF(virtio_net_roce_ext_config, max_rdma_cqs, 28);
VRDMA_ABI_OFF(virtio_net_roce_ext_config, max_rdma_srqs, 32);
VRDMA_ABI_SIZE(virtio_rdma_event, 16);
VRDMA_ABI_OFF(virtio_rdma_event, id, 4);
VRDMA_ABI_OFF(virtio_rdma_event, vendor_err, 8);

VRDMA_ABI_SIZE(virtio_rdma_ack_query_device_ext, 128);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_ah, 64);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, local_ca_ack_delay, 68);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_srq_wr, 72);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_srq_sge, 76);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_mw, 80);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_fast_reg_page_list_len, 84);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, max_pkeys, 88);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, atomic_cap, 90);
VRDMA_ABI_OFF(virtio_rdma_ack_query_device_ext, reserved, 92);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_port_ext, 32);
VRDMA_ABI_OFF(virtio_rdma_ack_query_port_ext, pkey_tbl_len, 8);
VRDMA_ABI_OFF(virtio_rdma_ack_query_port_ext, gid1_ipv4, 12);
VRDMA_ABI_OFF(virtio_rdma_ack_query_port_ext, gid2_ipv6, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_qp_ext, 56);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp_ext, cap, 16);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp_ext, ext_flags, 40);
VRDMA_ABI_OFF(virtio_rdma_cmd_create_qp_ext, srqn, 44);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_qp_ext, 120);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp_ext, ah_attr, 64);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp_ext, ext_flags, 104);
VRDMA_ABI_OFF(virtio_rdma_ack_query_qp_ext, srqn, 108);
VRDMA_ABI_SIZE(virtio_rdma_cmd_create_srq, 16);
VRDMA_ABI_SIZE(virtio_rdma_ack_create_srq, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_modify_srq, 16);
VRDMA_ABI_OFF(virtio_rdma_cmd_modify_srq, srq_limit, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_srq, 4);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_srq, 16);
VRDMA_ABI_SIZE(virtio_rdma_cmd_destroy_srq, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_alloc_mr, 16);
VRDMA_ABI_SIZE(virtio_rdma_ack_alloc_mr, 12);
VRDMA_ABI_SIZE(virtio_rdma_cmd_alloc_mw, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_alloc_mw, 8);
VRDMA_ABI_SIZE(virtio_rdma_cmd_dealloc_mw, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_resize_cq, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_resize_cq, 4);
VRDMA_ABI_SIZE(virtio_rdma_cmd_resize_qp, 32);
VRDMA_ABI_OFF(virtio_rdma_cmd_resize_qp, cap, 8);
VRDMA_ABI_SIZE(virtio_rdma_ack_resize_qp, 24);
VRDMA_ABI_SIZE(virtio_rdma_cmd_query_pkey, 4);
VRDMA_ABI_SIZE(virtio_rdma_ack_query_pkey, 4);

VRDMA_ABI_SIZE(virtio_rdma_sq_req_ext, 576);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, imm_data, 12);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, invalidate_rkey, 12);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, rdma.remote_addr, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, rdma.rkey, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, ud.ah, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, atomic.remote_addr, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, atomic.compare_add, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, atomic.swap, 32);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, atomic.rkey, 40);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, bind_mw.addr, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, bind_mw.length, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, bind_mw.mr_lkey, 32);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, bind_mw.rkey, 36);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, bind_mw.access, 40);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, reg.iova, 16);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, reg.length, 24);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, reg.page_list, 32);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, reg.key, 40);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, reg.access, 44);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, inline_data, 48);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, num_sge, 560);
VRDMA_ABI_OFF(virtio_rdma_sq_req_ext, sg_list, 576);
_Static_assert(sizeof(((struct virtio_rdma_sq_req_ext *)0)->atomic) == 32, "atomic view");
_Static_assert(sizeof(((struct virtio_rdma_sq_req_ext *)0)->bind_mw) == 32, "bind view");
_Static_assert(sizeof(((struct virtio_rdma_sq_req_ext *)0)->reg) == 32, "reg view");
VRDMA_ABI_SIZE(virtio_rdma_cq_req_ext, 48);
VRDMA_ABI_OFF(virtio_rdma_cq_req_ext, imm_data, 20);
VRDMA_ABI_OFF(virtio_rdma_cq_req_ext, invalidated_rkey, 20);
VRDMA_ABI_OFF(virtio_rdma_cq_req_ext, qp_num, 24);
VRDMA_ABI_OFF(virtio_rdma_cq_req_ext, wc_flags, 32);

/* ---- virtqueues of the extension ------------------------------------------ */

/*
 * With VIRTIO_NET_F_ROCE_EXT the RFC's layout (n, m, l) is followed by
 *   2n+m+2l+1       the event queue
 *   2n+m+2l+2+s     the receive queue of SRQ s, 0 <= s < S = max_rdma_srqs
 * Total 2n+2+m+2l+S virtqueues (<= 65536).
 */
enum vrdma_vq_kind_ext {
	VRDMA_VQ_EVENTQ = VRDMA_VQ_RQ + 1, /* idx 0 */
	VRDMA_VQ_SRQ,                      /* idx = SRQ index s */
};

/* The event virtqueue. */
static inline uint32_t vrdma_vq_eventq(uint32_t n, uint32_t m, uint32_t l)
{
	return 2 * n + m + 2 * l + 1;
}

/* The receive virtqueue of SRQ s. */
static inline uint32_t vrdma_vq_srq(uint32_t n, uint32_t m, uint32_t l, uint32_t s)
{
	return 2 * n + m + 2 * l + 2 + s;
}

/* Number of virtqueues of the whole device with the extension. */
static inline uint32_t vrdma_vq_count_ext(uint32_t n, uint32_t m, uint32_t l, uint32_t s)
{
	return 2 * n + 2 + m + 2 * l + s;
}

/* What virtqueue vq is in the extended layout (n, m, l, s): a value of enum
 * vrdma_vq_kind or enum vrdma_vq_kind_ext; *idx as vrdma_vq_decode. */
static inline int vrdma_vq_decode_ext(uint32_t n, uint32_t m, uint32_t l, uint32_t s,
				      uint32_t vq, uint32_t *idx)
{
	uint64_t ev = (uint64_t)2 * n + m + 2 * (uint64_t)l + 1;
	enum vrdma_vq_kind k = vrdma_vq_decode(n, m, l, vq, idx);

	if (k != VRDMA_VQ_INVALID)
		return (int)k;
	if (vq == ev)
		return VRDMA_VQ_EVENTQ;
	if (vq > ev && vq - ev - 1 < s) {
		*idx = (uint32_t)(vq - ev - 1);
		return VRDMA_VQ_SRQ;
	}
	return VRDMA_VQ_INVALID;
}

#endif /* VRDMA_VIRTIO_NET_ROCE_H */
