/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RoCE device's resource model and control path: protection domains,
 * memory regions, completion queues, queue pairs, address handles and the GID
 * table of one virtio-net RoCE device (RFC: "RoCE Configuration").
 *
 * This module does no I/O. rres_ctrl_exec() executes one control command
 * (class VIRTIO_NET_CTRL_ROCE) from its raw bytes; the control virtqueue
 * handler (netdev) feeds it and the transport engine (src/roce) uses the
 * lookups below and the hooks to attach its own per-QP / per-CQ state.
 *
 * Everything a driver sends is untrusted: every command is validated in full
 * before anything changes, so a failed command (VIRTIO_NET_ERR) leaves no
 * partial state, and every failure is counted per reason (struct rres_stats).
 * Behaviour and limits: docs/spec.md "Control commands".
 *
 * Handles: pdn, mrn and AH handles are table indexes starting at 1 (0 is
 * never a valid handle); cqn is the CQ index 0..max_rdma_cqs-1; QPNs follow
 * the rule of include/vrdma/virtio_net_roce.h (index | generation << 14,
 * GSI = 1). lkey/rkey = (MR index << 16) | 16 random bits from a CSPRNG, the
 * lkey and rkey bits drawn independently. ALLOC_MR MRs and memory windows
 * (extensions) have one key: (index << 16) | 8 random bits << 8 | the
 * driver's consumer byte.
 *
 * Single-threaded: owned by the loop thread of its device.
 */
#ifndef VRDMA_BACKEND_RRES_DEV_H
#define VRDMA_BACKEND_RRES_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "vrdma/virtio_net_roce.h"

struct vhost_mem;
struct vhost_mem_region;
struct rres_dev;

/* GID table: 16 entries. 0 = fe80::EUI-64 of the MAC, 1 = ::ffff:IPv4 (if
 * the device has an IPv4 address); both device-managed. ADD_GID/DEL_GID act
 * on 2..15. */
#define RRES_GID_TBL_LEN   16
#define RRES_GID_LINKLOCAL 0
#define RRES_GID_IPV4      1
#define RRES_GID_FIRST_DRV 2
#define RRES_GID_IPV6      2  /* the configured IPv6 address, if any (an
				* entry the driver may delete or keep) */

/* Bytes an Ethernet MTU must leave for RoCE v2 headers around an IB MTU
 * payload: IPv6 40 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4. */
#define RRES_HDR_OVERHEAD 84

/* Defaults of struct rres_dev_cfg limits (used when a field is 0). */
#define RRES_DEF_MAX_PD            16384
#define RRES_DEF_MAX_MR            65535
#define RRES_DEF_MAX_AH            16384
#define RRES_DEF_MAX_CQE           (1u << 20) /* ring <= 32768, the rest in the backlog */
#define RRES_DEF_MAX_QP_WR         16384
#define RRES_DEF_MAX_SGE           32
#define RRES_DEF_MAX_QP_RD_ATOM    128
#define RRES_DEF_MAX_MR_SIZE       (1ull << 32)
/* 8 GiB registered in all; the page arrays then take at most 16 MiB */
#define RRES_DEF_MAX_MR_PAGES      (2u << 20)
#define RRES_DEF_MAX_MSG_SZ        (1u << 31)
/* Keys: (MR index << RRES_KEY_BITS) | random bits (never 0), so a guessed or
 * stale key matches with probability 1 / 65535. */
#define RRES_KEY_BITS              16
#define RRES_KEY_MASK              ((1u << RRES_KEY_BITS) - 1)
#define RRES_MAX_MR_INDEX          ((1u << (32 - RRES_KEY_BITS)) - 1) /* 65535 */
/* Extension defaults (used when the cfg field is 0). */
#define RRES_DEF_MAX_SRQS          1024   /* what netdev offers by default */
#define RRES_DEF_MAX_MW            16384
#define RRES_DEF_MAX_FAST_REG_PAGES 4096  /* 16 MiB per fast-registered MR */

/* Configuration of one device. Zero limits mean "the default". */
struct rres_dev_cfg {
	uint8_t mac[6];
	bool has_ip4;
	uint32_t ip4;             /* network byte order */
	bool has_ip6;
	uint8_t ip6[16];          /* preset as GID 2 */
	uint16_t vlan_id;         /* 802.1Q VLAN of the RoCE traffic, 0: none */
	uint16_t eth_mtu;         /* Ethernet MTU; 0 = 1500 */
	uint32_t net_pairs;       /* N; 0 = 1 */
	uint32_t max_rdma_qps;    /* L: virtqueue pairs, 1..16384 (QPs = L - 1) */
	uint32_t max_rdma_cqs;    /* M: 1..16384 */
	uint32_t max_pd, max_mr, max_ah;
	uint32_t max_cqe, max_qp_wr;
	uint32_t max_send_sge, max_recv_sge, max_sge_rd;
	uint32_t max_qp_rd_atom, max_qp_init_rd_atom;
	uint64_t max_mr_size;
	uint64_t max_mr_pages;    /* all REG_USER_MR pages together */
	const struct vhost_mem *mem; /* driver memory (may be set later) */
	/* Extensions (docs/spec.md "Extensions beyond the RFC"); they are
	 * usable only after rres_dev_set_ext(rd, true). */
	uint32_t max_rdma_srqs;   /* S: 0..16384 (0 = no SRQ virtqueues) */
	uint32_t max_srq_wr, max_srq_sge;
	uint32_t max_mw;
	uint32_t max_fast_reg_page_list_len;
	/* The device offers ROCE_EXT: the event queue and the S SRQ rings are
	 * part of the ring layout (also implied by max_rdma_srqs != 0). */
	bool ext_offered;
	/* Tests and fuzzing only: derive keys from this seed instead of
	 * getrandom(), so runs are reproducible. */
	bool deterministic;
	uint64_t seed;
};

/* Why a command failed. Each has a counter in struct rres_stats. */
enum rres_err {
	RRES_OK = 0,
	RRES_ERR_UNKNOWN_CMD,   /* >= 28, or 18..27 without ROCE_EXT / capability */
	RRES_ERR_BAD_LEN,       /* command data length is not the structure's */
	RRES_ERR_OUT_SPACE,     /* no room for the ack data */
	RRES_ERR_BAD_HANDLE,    /* pdn/cqn/qpn/mrn/ah does not exist */
	RRES_ERR_WRONG_PD,      /* object of another PD */
	RRES_ERR_IN_USE,        /* destroy of an object still referenced */
	RRES_ERR_LIMIT,         /* a table or a device limit is exhausted */
	RRES_ERR_RANGE,         /* a value out of its range */
	RRES_ERR_FLAGS,         /* unknown or illegal flag bits */
	RRES_ERR_QP_TYPE,       /* QP type not supported (SMI, unknown) */
	RRES_ERR_STATE,         /* illegal QP state transition */
	RRES_ERR_ATTR_MASK,     /* required attribute missing / not allowed */
	RRES_ERR_NPAGES,        /* npages inconsistent with virt_addr/length */
	RRES_ERR_PAGE,          /* page misaligned or outside shared memory */
	RRES_ERR_GID,           /* GID index invalid, reserved or empty */
	RRES_ERR_NOMEM,         /* allocation or transport hook failed */
	RRES_ERR_CQ_STATE,      /* RESIZE_CQ of an overflowed CQ ("state") */
	RRES_ERR_MAX
};

/* Printable name of a reason ("bad_handle", ...). */
const char *rres_err_name(enum rres_err e);

struct rres_stats {
	uint64_t cmds[VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS]; /* executed, by command */
	uint64_t ok;
	uint64_t err;
	uint64_t errs[RRES_ERR_MAX];                  /* failures by reason */
	uint64_t rdma_dev_cmds[32];  /* virtio-rdma model: executed, by command */
};

/* Attributes reported by QUERY_DEVICE / QUERY_PORT (host byte order). */
struct rres_dev_attr {
	uint64_t device_cap_flags;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t hw_ver;
	uint32_t max_qp_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_sge_rd;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_ah;
	uint8_t local_ca_ack_delay;
	/* not in QUERY_DEVICE: */
	uint32_t max_qp;          /* max_rdma_qps - 1 (index 0 reserved) */
	uint32_t max_cq;          /* max_rdma_cqs */
	uint32_t max_inline_data; /* 512 */
	/* QUERY_PORT */
	uint32_t gid_tbl_len;
	uint32_t max_msg_sz;
	uint8_t active_mtu;       /* enum virtio_ib_mtu, from the Ethernet MTU */
	/* extensions (reported only with ROCE_EXT negotiated) */
	uint32_t max_srq;         /* max_rdma_srqs */
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_mw;
	uint32_t max_fast_reg_page_list_len;
	uint16_t max_pkeys;       /* 1 */
	uint8_t atomic_cap;       /* VIRTIO_IB_ATOMIC_HCA */
	uint64_t ext_cap_flags;   /* VIRTIO_IB_DEVICE_* bits 1..6 offered */
};

struct rres_pd {
	uint32_t pdn;
	uint32_t refcnt;          /* MRs, windows, SRQs, QPs and AHs using it */
};

/*
 * Asynchronous events (docs/spec.md "Asynchronous events"). Each object that
 * can have events embeds a struct rres_ev_obj: one pending bit per event
 * type, and a link in the device's FIFO of objects with pending bits. Raising
 * an event sets the bit (merging with a pending one) and queues the object;
 * nothing is allocated, nothing is dropped. The transport delivers them into
 * the event virtqueue (rres_event_pop) when it has buffers.
 */
struct rres_ev_obj {
	uint32_t pending;         /* 1 << enum virtio_ib_event_type */
	uint32_t id;              /* cqn, qpn, srqn or 1 (port) */
	bool queued;
	struct rres_ev_obj *next;
	struct rres_ev_obj *prev; /* FIFO links (O(1) drop) */
};

enum rres_mr_type {
	RRES_MR_USER = 1,         /* REG_USER_MR: pinned page array */
	RRES_MR_DMA = 2,          /* GET_DMA_MR: iova = GPA, whole shared memory */
	RRES_MR_FAST = 3,         /* ALLOC_MR: pages set by a REG_MR work request */
	RRES_MR_MW = 4,           /* a memory window (ALLOC_MW), same table */
};

/* State of RRES_MR_FAST MRs and windows (USER and DMA MRs are always VALID). */
enum rres_mr_state {
	RRES_MR_VALID = 0,        /* keys usable (a window: bound) */
	RRES_MR_FREE = 1,         /* keys unusable (not registered / not bound) */
};

struct rres_mr {
	uint32_t mrn;
	uint8_t type;             /* enum rres_mr_type */
	struct rres_pd *pd;
	uint32_t access;          /* VIRTIO_IB_ACCESS_* (LOCAL_READ implied) */
	uint64_t iova;            /* virt_addr (DMA MR: 0) */
	uint64_t length;          /* DMA MR: UINT64_MAX */
	uint32_t page_size;       /* VRDMA_PAGE_SIZE */
	uint32_t npages;
	/* USER: host address of each page, translated once at registration.
	 * They stay valid while the references below are held, even if the
	 * driver removes the region from its memory table. */
	uint8_t **pages;
	/* USER, FAST: pages[0] when every page follows the one before it in
	 * host memory (the MR is one host range: rres_mr_pages_set), or NULL */
	uint8_t *contig;
	uint32_t nregions;
	struct vhost_mem_region **regions;
	uint32_t lkey;
	uint32_t rkey;            /* 0 when no remote access */
	/* ---- extensions ---- */
	uint8_t state;            /* enum rres_mr_state */
	uint32_t max_pages;       /* FAST: capacity of pages[] (max_num_sg) */
	uint32_t nbound;          /* windows bound to this MR */
	uint8_t mw_type;          /* MW: VIRTIO_IB_MW_TYPE_1 / _2 */
	/* MW: the MR it is bound to (VALID) or NULL; iova/length/access are
	 * the window's range (in the MR's iova space) and remote rights, and
	 * rkey (= lkey, never usable locally) its key. */
	struct rres_mr *bound_mr;
};

/* Completion queue arm flags (REQ_NOTIFY_CQ). */
#define RRES_CQ_ARM_SOLICITED VIRTIO_IB_NOTIFY_SOLICITED
#define RRES_CQ_ARM_NEXT      VIRTIO_IB_NOTIFY_NEXT_COMPLETION

struct rres_cq {
	uint32_t cqn;
	uint32_t cqe;             /* requested depth */
	uint32_t vq;              /* its completion virtqueue index */
	uint8_t armed;            /* RRES_CQ_ARM_* */
	uint32_t refcnt;          /* QPs using it (send or receive) */
	struct rres_ev_obj ev;    /* CQ_ERR */
	void *transport;          /* owned by the transport engine */
};

/* A shared receive queue (CREATE_SRQ). */
struct rres_srq {
	uint32_t srqn;            /* index 0..max_rdma_srqs-1 */
	struct rres_pd *pd;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;       /* 0 = not armed */
	uint32_t vq;              /* its virtqueue index */
	uint32_t refcnt;          /* QPs using it */
	struct rres_ev_obj ev;    /* SRQ_ERR, SRQ_LIMIT_REACHED */
	void *transport;          /* owned by the transport engine */
};

/* An address vector: the RFC's virtio_rdma_ah_attr, validated, plus the
 * source GID resolved from sgid_index when it was set. */
struct rres_av {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;               /* service level 0..15 */
	uint8_t dmac[6];
	uint8_t sgid[16];         /* copy of gid[sgid_index] at that time */
	bool ipv4;                /* sgid and dgid are IPv4-mapped */
};

struct rres_ah {
	uint32_t handle;
	struct rres_pd *pd;
	struct rres_av av;
};

struct rres_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* Every attribute of MODIFY_QP, as last set (host byte order). */
struct rres_qp_attr {
	uint8_t qp_state;         /* enum virtio_ib_qp_state */
	uint8_t path_mtu;         /* enum virtio_ib_mtu (0 = not set) */
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint32_t rate_limit;
	bool av_valid;
	struct rres_av av;
};

struct rres_qp {
	uint32_t qpn;
	uint32_t index;           /* vrdma_qpn_index(qpn) */
	uint8_t type;             /* VIRTIO_IB_QPT_RC/UC/UD/GSI */
	bool sq_sig_all;
	struct rres_pd *pd;
	struct rres_cq *send_cq;
	struct rres_cq *recv_cq;
	struct rres_qp_cap cap;
	struct rres_qp_attr attr;
	bool sq_draining;         /* in SQD until the transport says drained */
	uint32_t sq_vq;           /* send virtqueue index */
	uint32_t rq_vq;           /* receive virtqueue index (unused with an SRQ) */
	uint32_t ext_flags;       /* VIRTIO_IB_QP_CREATE_* given at creation */
	struct rres_srq *srq;     /* receives from this SRQ (NULL: its own RQ) */
	struct rres_ev_obj ev;    /* QP_* events */
	/* ---- reserved for the transport engine (src/roce): its per-QP
	 * state, created in hooks.qp_create and freed in hooks.qp_destroy. */
	void *transport;
};

/* Decoded MODIFY_QP (host byte order; fields not in attr_mask ignored). */
struct rres_qp_modify {
	uint32_t attr_mask;
	uint8_t qp_state;
	uint8_t cur_qp_state;
	uint8_t path_mtu;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint32_t rate_limit;
	struct virtio_rdma_ah_attr ah_attr; /* wire layout, le fields */
};

/* Decoded CREATE_QP. */
struct rres_qp_init {
	uint32_t pdn;
	uint8_t qp_type;
	uint8_t sq_sig_all;
	uint32_t send_cqn;
	uint32_t recv_cqn;
	struct rres_qp_cap cap;
	uint32_t ext_flags;       /* ROCE_EXT only: VIRTIO_IB_QP_CREATE_* */
	uint32_t srqn;            /* with VIRTIO_IB_QP_CREATE_SRQ */
};

/*
 * Transport hooks (all optional). create hooks run after every check, before
 * the object becomes visible; a non-zero return fails the command with
 * nothing left behind. qp_modify runs after a successful MODIFY_QP (the
 * transport flushes outstanding WRs with VIRTIO_IB_WC_WR_FLUSH_ERR when the
 * new state is ERR, drops its state on RESET, starts draining on SQD).
 * qp_destroy runs before a QP is freed: the transport flushes the WRs still
 * in its send/receive queues with WR_FLUSH_ERR and frees qp->transport.
 */
struct rres_hooks {
	int (*qp_create)(struct rres_dev *rd, struct rres_qp *qp);
	void (*qp_modify)(struct rres_dev *rd, struct rres_qp *qp, uint8_t old_state,
			  uint32_t attr_mask);
	void (*qp_destroy)(struct rres_dev *rd, struct rres_qp *qp);
	int (*cq_create)(struct rres_dev *rd, struct rres_cq *cq);
	void (*cq_destroy)(struct rres_dev *rd, struct rres_cq *cq);
	/* ---- extensions ---- */
	/* RESIZE_CQ after its checks: -ERANGE if the transport holds more than
	 * cqe completions for cq now, -ENOMEM; 0 = accepted (the caller then
	 * sets cq->cqe). */
	int (*cq_resize)(struct rres_dev *rd, struct rres_cq *cq, uint32_t cqe);
	/* Whether cq has overflowed (RESIZE_CQ fails with "state"). */
	bool (*cq_overflowed)(struct rres_dev *rd, struct rres_cq *cq);
	/* RESIZE_QP after its checks: -ERANGE if a new depth is below the WRs
	 * outstanding on that queue, -ENOMEM; 0 = accepted (the caller then
	 * stores cap). */
	int (*qp_resize)(struct rres_dev *rd, struct rres_qp *qp, const struct rres_qp_cap *cap);
	int (*srq_create)(struct rres_dev *rd, struct rres_srq *srq);
	/* Before an SRQ is freed: stop processing its ring, drop its requests
	 * without completion. */
	void (*srq_destroy)(struct rres_dev *rd, struct rres_srq *srq);
	/* An asynchronous event was queued (the transport should deliver). */
	void (*event_raised)(struct rres_dev *rd);
	/* An AH was created (the transport may start resolving its MAC). */
	void (*ah_create)(struct rres_dev *rd, const struct rres_ah *ah);
	void *arg;
};

/* An index table with a FIFO free list (reuse is delayed as long as
 * possible, so stale handles rarely meet a new object). */
struct rres_table {
	void **slot;              /* size entries, NULL = free */
	uint32_t *fifo;           /* free indexes */
	uint32_t head;            /* next index to hand out */
	uint32_t nfree;
	uint32_t cap;             /* allocatable indexes */
	uint32_t size;            /* slots including reserved ones */
	uint32_t used;            /* live objects */
	/* Indexes come from this table when set: the contexts of one device
	 * share its index space and limits (its slot[] names the owning
	 * context table; see rres_dev_share_tables). */
	struct rres_table *pool;
	void *owner;              /* the context this table belongs to */
};

/* ChaCha20-based CSPRNG for keys, keyed from getrandom(). */
struct rres_rng {
	uint32_t key[8];
	uint64_t counter;
	uint32_t buf[16];
	unsigned pos;             /* next unused word of buf (16 = empty) */
};

struct rres_dev {
	struct rres_dev_attr attr;
	uint32_t net_pairs;       /* N */
	uint32_t max_rdma_qps;    /* L */
	uint32_t max_rdma_cqs;    /* M */
	uint64_t max_mr_pages;
	uint64_t mr_pages;        /* pages held by all user MRs */
	struct rres_dev *pool;    /* the device's shared tables (rres_dev_share_tables) */
	const struct vhost_mem *mem;
	uint8_t mac[6];
	bool has_ip4;
	uint32_t ip4;
	bool has_ip6;
	uint8_t ip6[16];
	uint16_t vlan_id;         /* 0 or 1..4094: RoCE frames tagged */

	struct rres_table pds, mrs, cqs, qps, ahs, srqs;
	uint16_t *qp_gen;         /* next generation per QP index */
	uint16_t *mr_lkey8;       /* last key bits per MR index */
	uint16_t *mr_rkey8;
	struct {
		uint8_t raw[16];
		bool valid;
	} gid[RRES_GID_TBL_LEN];
	uint64_t gid_gen;         /* bumped by every change of gid[] (caches) */

	struct rres_rng rng;
	struct rres_hooks hooks;
	struct rres_stats stats;

	/* ---- extensions ---- */
	bool ext;                 /* VIRTIO_NET_F_ROCE_EXT negotiated */
	bool ext_offered;         /* ROCE_EXT offered: extended ring layout */
	bool rdma_dev_layout;     /* virtio-rdma device (id 42) ring layout */
	uint32_t max_rdma_srqs;   /* S (virtqueues exist for them when offered) */
	uint32_t nmw;             /* live windows (limit attr.max_mw) */
	struct rres_ev_obj port_ev; /* PORT_ACTIVE, PORT_ERR, GID_CHANGE; id 1 */
	struct rres_ev_obj *ev_head, *ev_tail; /* FIFO of objects with events */
	uint64_t events_raised, events_merged;
};

/* ---- device ------------------------------------------------------------ */

/* Initialise rd from cfg (limits clamped to what the ABI can express).
 * Returns 0, -EINVAL (max_rdma_qps/cqs out of 1..16384) or -ENOMEM. */
int rres_dev_init(struct rres_dev *rd, const struct rres_dev_cfg *cfg);
/* Destroy every object (hooks called) and free the tables. */
void rres_dev_fini(struct rres_dev *rd);
/* Take PD, MR, CQ, QP, AH and SRQ indexes from pool's tables from now on
 * (rd has no objects yet): several contexts of one device then have disjoint
 * handles and QPNs and share the device's limits. pool (initialised with the
 * same configuration, never given objects of its own) outlives rd. owner is
 * recorded in rd's tables (the port finds a QPN's context by it). */
void rres_dev_share_tables(struct rres_dev *rd, struct rres_dev *pool, void *owner);
/* Device reset: destroy every object (QPs first, hooks called), GID table
 * back to its defaults, counters kept. */
void rres_dev_reset(struct rres_dev *rd);
/* Set or replace the driver memory table used for REG_USER_MR and DMA MRs. */
void rres_dev_set_mem(struct rres_dev *rd, const struct vhost_mem *mem);
/* Change the MAC (GID 0) or the IPv4 address (GID 1, ip4 in network order). */
void rres_dev_set_mac(struct rres_dev *rd, const uint8_t mac[6]);
void rres_dev_set_ip4(struct rres_dev *rd, bool has_ip4, uint32_t ip4);
/* Change the Ethernet MTU (recomputes the port's active MTU). */
void rres_dev_set_eth_mtu(struct rres_dev *rd, uint16_t eth_mtu);
/* Largest enum virtio_ib_mtu that fits in an Ethernet MTU (0 if none). */
uint8_t rres_mtu_from_eth(uint32_t eth_mtu);

/* Number of live objects of each kind (for tests and stats). */
struct rres_counts {
	uint32_t pd, mr, cq, qp, ah, gid_drv;
	uint32_t srq, mw;         /* mr counts MRs only (not windows) */
};
void rres_dev_counts(const struct rres_dev *rd, struct rres_counts *c);

/* ---- control path ------------------------------------------------------ */

/*
 * Execute control command cmd of class VIRTIO_NET_CTRL_ROCE with its
 * command-specific data in[0..in_len) (untrusted, any alignment). On success
 * the ack-specific data is written to out (at most out_cap bytes, any
 * alignment) and its length to *out_len. Returns VIRTIO_NET_OK, or
 * VIRTIO_NET_ERR with *out_len = 0 and no state changed.
 */
int rres_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
		   void *out, size_t out_cap, size_t *out_len);
/* The same, returning the reason (RRES_OK or the counted error). */
enum rres_err rres_ctrl_exec_err(struct rres_dev *rd, uint8_t cmd, const void *in,
				 size_t in_len, void *out, size_t out_cap, size_t *out_len);
/* Name of a command ("CREATE_QP"), or "?" */
const char *rres_cmd_name(uint8_t cmd);

/* Object operations behind the commands (host byte order). Each returns
 * RRES_OK or the reason, and changes nothing on error. */
enum rres_err rres_pd_create(struct rres_dev *rd, uint32_t *pdn);
enum rres_err rres_pd_destroy(struct rres_dev *rd, uint32_t pdn);
enum rres_err rres_cq_create(struct rres_dev *rd, uint32_t cqe, uint32_t *cqn);
enum rres_err rres_cq_destroy(struct rres_dev *rd, uint32_t cqn);
enum rres_err rres_cq_req_notify(struct rres_dev *rd, uint32_t cqn, uint32_t flags);
enum rres_err rres_mr_get_dma(struct rres_dev *rd, uint32_t pdn, uint32_t access,
			      struct rres_mr **mr);
/* pages_le: npages little-endian u64 GPAs, any alignment. */
enum rres_err rres_mr_reg_user(struct rres_dev *rd, uint32_t pdn, uint32_t access,
			       uint64_t virt_addr, uint64_t length, uint32_t npages,
			       const void *pages_le, struct rres_mr **mr);
enum rres_err rres_mr_dereg(struct rres_dev *rd, uint32_t mrn);
enum rres_err rres_qp_create(struct rres_dev *rd, const struct rres_qp_init *init,
			     struct rres_qp **qp);
enum rres_err rres_qp_destroy(struct rres_dev *rd, uint32_t qpn);
enum rres_err rres_qp_modify(struct rres_dev *rd, uint32_t qpn, const struct rres_qp_modify *m);
enum rres_err rres_ah_create(struct rres_dev *rd, uint32_t pdn,
			     const struct virtio_rdma_ah_attr *attr, uint32_t *handle);
enum rres_err rres_ah_destroy(struct rres_dev *rd, uint32_t pdn, uint32_t handle);
enum rres_err rres_gid_add(struct rres_dev *rd, uint32_t index, const uint8_t gid[16]);
enum rres_err rres_gid_del(struct rres_dev *rd, uint32_t index);

/* ---- QP state machine (rres_qp_state.c) -------------------------------- */

/* Required / optional attribute masks of the transition cur -> next for a QP
 * type (RC, UC, UD, GSI); *valid says whether the transition exists. */
void rres_qp_transition(uint8_t type, uint8_t cur, uint8_t next, bool *valid,
			uint32_t *req, uint32_t *opt);
/* Whether MODIFY_QP with this mask may take a QP of type from cur to next
 * (STATE in mask means next is explicit, otherwise next must equal cur). */
bool rres_qp_modify_is_ok(uint8_t type, uint8_t cur, uint8_t next, uint32_t mask);
/* Full validation of m against qp (transition, masks, every value range).
 * On success *av gets the validated address vector if m sets one. */
enum rres_err rres_qp_check_modify(const struct rres_dev *rd, const struct rres_qp *qp,
				   const struct rres_qp_modify *m, struct rres_av *av);
/* Validate a wire address vector (sgid_index, flow label, families;
 * connected = RC/UC QP path: unicast only) into av. */
enum rres_err rres_av_from_wire(const struct rres_dev *rd, const struct virtio_rdma_ah_attr *w,
				bool connected, struct rres_av *av);
/* Attributes of a fresh (or just reset) QP. */
void rres_qp_attr_default(const struct rres_dev *rd, const struct rres_qp *qp,
			  struct rres_qp_attr *a);

/* For the transport: asynchronous state changes it decides itself.
 * state = VIRTIO_IB_QPS_SQE (UC/UD/GSI in RTS only) or VIRTIO_IB_QPS_ERR
 * (any state but RESET). Returns 0 or -EINVAL. No hook is called. */
int rres_qp_async_state(struct rres_dev *rd, struct rres_qp *qp, uint8_t state);
/* For the transport: the send queue of a QP in SQD has drained. */
void rres_qp_sq_drained(struct rres_qp *qp);

/* ---- lookups for the transport (NULL when absent / not allowed) ------- */

struct rres_pd *rres_pd_lookup(const struct rres_dev *rd, uint32_t pdn);
struct rres_cq *rres_cq_lookup(const struct rres_dev *rd, uint32_t cqn);
/* The QP with exactly this QPN (index and generation). */
struct rres_qp *rres_qp_lookup(const struct rres_dev *rd, uint32_t qpn);
/* The AH with this handle if it belongs to pd. */
struct rres_ah *rres_ah_lookup(const struct rres_dev *rd, uint32_t handle,
			       const struct rres_pd *pd);
struct rres_mr *rres_mr_lookup(const struct rres_dev *rd, uint32_t mrn);
/* The MR of an lkey / rkey if the key matches exactly, the MR belongs to pd
 * and allows every VIRTIO_IB_ACCESS_* bit of access (0 = local read). */
struct rres_mr *rres_mr_lookup_lkey(const struct rres_dev *rd, uint32_t lkey,
				    const struct rres_pd *pd, uint32_t access);
struct rres_mr *rres_mr_lookup_rkey(const struct rres_dev *rd, uint32_t rkey,
				    const struct rres_pd *pd, uint32_t access);
/* Host iovecs for [iova, iova+len) of mr (len 0 gives 0 iovecs). Returns the
 * number used, -EFAULT if the range is outside the MR (or, for a DMA MR,
 * outside shared memory), -E2BIG if more than max would be needed. */
int rres_mr_to_iov(const struct rres_dev *rd, const struct rres_mr *mr, uint64_t iova,
		   uint64_t len, struct iovec *iov, unsigned max);
/* GID table entry, or NULL if index is invalid or empty. */
const uint8_t *rres_gid_get(const struct rres_dev *rd, uint32_t index);
/* gid is one of the device's (a valid entry of its table; inline: every
 * received frame asks). */
static inline bool rres_gid_has(const struct rres_dev *rd, const uint8_t gid[16])
{
	for (unsigned i = 0; i < RRES_GID_TBL_LEN; i++)
		if (rd->gid[i].valid && !memcmp(rd->gid[i].raw, gid, 16))
			return true;
	return false;
}
/* A completion is being posted to cq: returns true if the driver must be
 * notified for it (armed NEXT_COMPLETION, or armed SOLICITED and the
 * completion is solicited or an error), and then disarms the CQ. */
bool rres_cq_notify_check(struct rres_cq *cq, bool solicited_or_error);

/* ---- virtqueue <-> resource mapping ------------------------------------ */

/* What virtqueue ring is in this device's layout; *idx as vrdma_vq_decode. */
enum vrdma_vq_kind rres_ring_decode(const struct rres_dev *rd, uint32_t ring, uint32_t *idx);
uint32_t rres_ring_of_cq(const struct rres_dev *rd, uint32_t cqn);
uint32_t rres_ring_of_sq(const struct rres_dev *rd, uint32_t qp_index);
uint32_t rres_ring_of_rq(const struct rres_dev *rd, uint32_t qp_index);
/* Total virtqueues of the device: the RFC's layout, plus the event queue
 * and S SRQ rings when max_rdma_srqs was configured (ROCE_EXT offered), the
 * extension's rings being processed only once ROCE_EXT is negotiated. */
uint32_t rres_ring_count(const struct rres_dev *rd);
/* The event virtqueue index (2N+M+2L+1) and the ring of SRQ s. */
uint32_t rres_ring_of_eventq(const struct rres_dev *rd);
uint32_t rres_ring_of_srq(const struct rres_dev *rd, uint32_t srqn);
/* The SRQ owning ring `ring`, or NULL. */
struct rres_srq *rres_ring_srq(const struct rres_dev *rd, uint32_t ring);
/* The CQ owning completion ring `ring`, or NULL (not a CQ ring / no CQ). */
struct rres_cq *rres_ring_cq(const struct rres_dev *rd, uint32_t ring);
/* The QP owning send or receive ring `ring` (*is_send tells which), or NULL. */
struct rres_qp *rres_ring_qp(const struct rres_dev *rd, uint32_t ring, bool *is_send);
/* Whether the device may process ring now: net and control rings always,
 * a completion ring once its CQ exists, send/receive rings once their QP
 * exists. */
bool rres_ring_usable(const struct rres_dev *rd, uint32_t ring);
/* (With ROCE_EXT negotiated, also: the event queue always, an SRQ ring once
 * its SRQ exists; a QP's receive ring is not usable when it has an SRQ.) */

/* ---- extensions (ROCE_EXT; docs/spec.md "Extensions beyond the RFC") --- */

/* ROCE_EXT negotiated (true) or not (feature negotiation, device reset):
 * commands 18..27, the extension words of the acks, the new access flags
 * and the event queue are accepted only when on. Turning it off destroys
 * nothing (a reset does that) but drops the pending events. */
void rres_dev_set_ext(struct rres_dev *rd, bool on);

/* Commands 18..27 as functions (host byte order; RRES_OK or the reason,
 * nothing changed on error). The control path checks rd->ext and the
 * capability before calling them. */
enum rres_err rres_srq_create(struct rres_dev *rd, uint32_t pdn, uint32_t max_wr,
			      uint32_t max_sge, struct rres_srq **srq);
enum rres_err rres_srq_modify(struct rres_dev *rd, uint32_t srqn, uint32_t attr_mask,
			      uint32_t srq_limit);
enum rres_err rres_srq_destroy(struct rres_dev *rd, uint32_t srqn);
struct rres_srq *rres_srq_lookup(const struct rres_dev *rd, uint32_t srqn);
enum rres_err rres_mr_alloc(struct rres_dev *rd, uint32_t pdn, uint32_t max_num_sg,
			    struct rres_mr **mr);
enum rres_err rres_mw_alloc(struct rres_dev *rd, uint32_t pdn, uint32_t mw_type,
			    struct rres_mr **mw);
enum rres_err rres_mw_dealloc(struct rres_dev *rd, uint32_t mwn);
enum rres_err rres_cq_resize(struct rres_dev *rd, uint32_t cqn, uint32_t cqe);
enum rres_err rres_qp_resize(struct rres_dev *rd, uint32_t qpn, const struct rres_qp_cap *cap);

/* Memory operations of the send queue, executed by the transport when the
 * requester reaches the WR (qp's PD; see docs/spec.md). Each returns 0 or
 * the completion status of the failure (the objects then unchanged). */
/* REG_MR: page_list_gpa holds the pages of [iova, iova+length). Returns 0
 * or VIRTIO_IB_WC_LOC_PROT_ERR. */
int rres_mr_fast_reg(struct rres_dev *rd, const struct rres_pd *pd, uint32_t key,
		     uint64_t iova, uint64_t length, uint64_t page_list_gpa, uint32_t access);
/* REG_MR of the virtio-rdma device: an ALLOC_MR MR of pd already mapped
 * (MAP_MR_SG, VALID) gets key (same device bits, new consumer byte) and
 * access. Returns 0 or VIRTIO_IB_WC_LOC_PROT_ERR. */
int rres_mr_rekey(struct rres_dev *rd, const struct rres_pd *pd, uint32_t mrn, uint32_t key,
		  uint32_t access);
/* LOCAL_INV / received SEND_WITH_INV of key (an ALLOC_MR MR or a type 2
 * window of pd). Returns 0, or VIRTIO_IB_WC_LOC_PROT_ERR (the caller of a
 * remote invalidation maps it to NAK Invalid Request). */
int rres_key_invalidate(struct rres_dev *rd, const struct rres_pd *pd, uint32_t key);
/* BIND_MW of the window named by mw_rkey (its new key) onto the MR of
 * mr_lkey (type 1 and 2 rules; the caller checked the QP type). Returns 0 or
 * VIRTIO_IB_WC_MW_BIND_ERR. */
int rres_mw_bind(struct rres_dev *rd, const struct rres_pd *pd, uint32_t mw_rkey,
		 uint32_t mr_lkey, uint64_t addr, uint64_t length, uint32_t access);
/* Lookups above work for every kind: rres_mr_lookup_lkey never returns a
 * window or a FREE MR; rres_mr_lookup_rkey returns a VALID MR or a bound
 * window whose rights include access; rres_mr_to_iov of a window checks
 * the window's bounds and reads through its MR. */

/* Asynchronous events. Raise type for an object (its ev must have its id
 * set); merged if already pending. Does nothing unless rd->ext. */
void rres_event_raise(struct rres_dev *rd, struct rres_ev_obj *o, uint8_t type);
/* The oldest pending event (object FIFO, then type order): fills *type
 * and *id and clears it. Returns false when none is pending. */
bool rres_event_pop(struct rres_dev *rd, uint8_t *type, uint32_t *id);
/* Drop every pending event of o (object destroyed). */
void rres_event_drop(struct rres_dev *rd, struct rres_ev_obj *o);
/* The port's link went up (PORT_ACTIVE) or down (PORT_ERR). */
void rres_dev_link_changed(struct rres_dev *rd, bool up);
/* Whether any event is pending. */
static inline bool rres_event_pending(const struct rres_dev *rd)
{
	return rd->ev_head != NULL;
}

/* ---- internals shared by the .c files ---------------------------------- */

int rres_table_init(struct rres_table *t, uint32_t first, uint32_t size);
void rres_table_fini(struct rres_table *t);
/* A free index (FIFO order), or -1 if none. The slot stays NULL until set. */
int64_t rres_table_alloc(struct rres_table *t);
void rres_table_free(struct rres_table *t, uint32_t idx);
/* Whether n more MR pages fit (the device's total when shared), and their
 * accounting. */
static inline bool rres_mr_pages_room(const struct rres_dev *rd, uint64_t n)
{
	const struct rres_dev *t = rd->pool ? rd->pool : rd;

	return n <= rd->max_mr_pages - t->mr_pages;
}
/* mr->pages[0..mr->npages) are set: note whether they are one host range. */
static inline void rres_mr_pages_set(struct rres_mr *mr)
{
	mr->contig = mr->npages ? mr->pages[0] : NULL;
	for (uint32_t i = 1; i < mr->npages && mr->contig; i++)
		if (mr->pages[i] != mr->pages[0] + (size_t)i * VRDMA_PAGE_SIZE)
			mr->contig = NULL;
}

static inline void rres_mr_pages_add(struct rres_dev *rd, int64_t n)
{
	rd->mr_pages += (uint64_t)n;
	if (rd->pool)
		rd->pool->mr_pages += (uint64_t)n;
}
/* Whether one more index can be allocated (from the pool if shared). */
static inline bool rres_table_room(const struct rres_table *t)
{
	return (t->pool ? t->pool->nfree : t->nfree) != 0;
}
static inline void *rres_table_get(const struct rres_table *t, uint32_t idx)
{
	return idx < t->size ? t->slot[idx] : NULL;
}

void rres_rng_seed(struct rres_rng *r, bool deterministic, uint64_t seed);
uint32_t rres_rng_u32(struct rres_rng *r);

#endif /* VRDMA_BACKEND_RRES_DEV_H */
