/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma RDMA API: the verbs objects of a virtio-net RoCE device (GID table,
 * protection domains, memory regions, completion queues, queue pairs, address
 * handles) over the device's control queue and its completion / send /
 * receive virtqueues. The drop-in libibverbs.so.1 (src/verbs) is built on it;
 * programs may also use it directly.
 *
 * Values are the device's (include/vrdma/virtio_net_roce.h): VIRTIO_IB_QPT_*,
 * VIRTIO_IB_QPS_*, VIRTIO_IB_MTU_*, VIRTIO_IB_ACCESS_*, VIRTIO_IB_WR_*,
 * VIRTIO_IB_SEND_*, VIRTIO_IB_WC_*, VIRTIO_IB_NOTIFY_*, and the VIRTIO_IB_QP_*
 * attribute mask. Structures are in host byte order, except imm_data (network
 * order, opaque). GIDs and MACs are raw bytes.
 *
 * Handles: PDs, MRs and AHs are the device's numbers (pdn, mrn, AH handle);
 * CQs and QPs are objects (they own virtqueues). The library keeps a shadow
 * of every object it created on the device, so it validates each call before
 * anything is sent (bad or foreign handles, another PD's objects, out-of-range
 * values, limits, objects still in use) and answers with a precise errno; a
 * command the device still refuses (VIRTIO_NET_ERR) maps to the errno listed
 * per function under "device ERR". Either way a failed call changes nothing,
 * on the device or in the library.
 *
 * Errors common to every call: -ENOTCONN (the back-end went away),
 * -EOPNOTSUPP (VIRTIO_NET_F_ROCE not negotiated), -ETIMEDOUT / -EIO (the
 * control queue failed; see vrdma_ctrl_cmd), -ENOMEM (out of memory in this
 * process). Functions returning int return 0 (or a count where said) or a
 * negative errno.
 *
 * Threads: the control path (everything but the data path below) is
 * serialised by the device lock and may be called from any thread. The data
 * path (vrdma_post_send, vrdma_post_recv, vrdma_post_srq_recv,
 * vrdma_cq_poll, vrdma_cq_arm, vrdma_cq_consume_event) takes a per-queue
 * spinlock: several threads may post to one QP or poll one CQ (a REG_MR
 * work request also takes the device lock). Destroying an object must not
 * race with its use. A resize (vrdma_cq_resize, vrdma_qp_resize) holds the
 * queue's spinlock while it replaces a ring: polls / posts of other threads
 * on it wait meanwhile.
 *
 * vrdma_dev_close() frees every CQ and QP still alive (their pointers become
 * invalid) and forgets the device's PDs, MRs and AHs; the reset it sends
 * destroys them on the device.
 *
 * Extensions (docs/spec.md "Extensions beyond the RFC"): when the device
 * offers VIRTIO_NET_F_ROCE_EXT, libvrdma negotiates it and reports the
 * capability bits and limits in vrdma_device_attr (ext true). The calls
 * marked "extension" then work as far as the device reported the capability;
 * on a device without ROCE_EXT (or without that capability) they fail with
 * -EOPNOTSUPP and send nothing. RFC calls behave exactly as without the
 * extension.
 */
#ifndef VRDMA_VRDMA_RDMA_H
#define VRDMA_VRDMA_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vrdma/virtio_net_roce.h"
#include "vrdma/vrdma.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vrdma_cq;
struct vrdma_qp;
struct vrdma_srq;

/* ---- device and port ------------------------------------------------------ */

/* QUERY_DEVICE (struct virtio_rdma_ack_query_device) plus the RoCE fields of
 * the configuration space. */
struct vrdma_device_attr {
	uint64_t device_cap_flags; /* VIRTIO_IB_DEVICE_* */
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
	/* configuration space */
	uint32_t max_rdma_qps;    /* QP indexes (L) */
	uint32_t max_rdma_cqs;    /* CQs (M) */
	/* derived */
	uint32_t max_qp;          /* QPs other than GSI: L - 2 (index 0 reserved,
				   * index 1 = GSI) */
	uint32_t max_inline_data; /* VIRTIO_RDMA_INLINE_DATA_SIZE */
	/* extension (all 0 / false without VIRTIO_NET_F_ROCE_EXT) */
	bool ext;                 /* VIRTIO_NET_F_ROCE_EXT negotiated */
	uint32_t max_srq;         /* max_rdma_srqs (config space); 0 without
				   * VIRTIO_IB_DEVICE_SRQ */
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_mw;
	uint32_t max_fast_reg_page_list_len;
	uint16_t max_pkeys;
	uint8_t atomic_cap;       /* enum virtio_ib_atomic_cap */
};

/*
 * The device's limits. The answer is fetched once (the first RDMA call on a
 * device does it) and cached. Returns 0; device ERR: -EIO.
 */
int vrdma_query_device(struct vrdma_dev *dev, struct vrdma_device_attr *attr);

/* QUERY_PORT (struct virtio_rdma_ack_query_port) plus the link. Port 1. */
struct vrdma_port_attr {
	uint32_t gid_tbl_len;
	uint32_t max_msg_sz;
	bool link_up;             /* VIRTIO_NET_S_LINK_UP (read now) */
	uint16_t mtu;             /* Ethernet MTU */
	uint8_t active_mtu;       /* enum virtio_ib_mtu: the largest whose
				   * payload + 84 header bytes fit mtu */
	uint16_t pkey_tbl_len;    /* extension: QUERY_PORT's pkey_tbl_len
				   * (1); 1 without the extension too (the
				   * only P_Key is 0xFFFF) */
	/* virtio-rdma device only (its QUERY_PORT; all 0 on the other):
	 * the IB port attributes of that name */
	bool per_port;            /* the fields below are valid */
	uint8_t state;            /* 4 ACTIVE, 1 DOWN */
	uint8_t max_mtu;          /* enum virtio_ib_mtu */
	uint8_t phys_state;       /* 5 LinkUp */
	uint8_t active_width;     /* IB width code (1 = 1X) */
	uint16_t active_speed;    /* IB speed code (32 = EDR) */
	uint32_t port_cap_flags;  /* IB port capability bits (CM_SUP) */
	uint32_t bad_pkey_cntr, qkey_viol_cntr;
};

/* Port attributes (QUERY_PORT is sent each time). Returns 0; device ERR:
 * -EIO. */
int vrdma_query_port(struct vrdma_dev *dev, struct vrdma_port_attr *attr);

/* Extension: QUERY_PKEY of entry index into *pkey (0xFFFF at index 0).
 * Returns 0, -EINVAL (index >= pkey_tbl_len), -EOPNOTSUPP (no ROCE_EXT);
 * device ERR: -EINVAL. */
int vrdma_query_pkey(struct vrdma_dev *dev, uint32_t index, uint16_t *pkey);

/*
 * GID table entry index (all RoCE v2 GIDs) into gid[16]. Index 0 is the
 * link-local GID fe80::<EUI-64 of the MAC>; index 1 the IPv4-mapped GID
 * ::ffff:a.b.c.d of the device's IPv4 address, as QUERY_PORT reported it
 * (gid1_ipv4; at the first RDMA call and at each vrdma_query_port); 2 ..
 * gid_tbl_len-1 are what vrdma_gid_add() set. No command is sent.
 * Returns 0, -ENODATA (empty entry: e.g. index 1 of a device without IPv4
 * address), -EINVAL (index >= gid_tbl_len).
 */
int vrdma_gid_query(struct vrdma_dev *dev, uint32_t index, uint8_t gid[16]);

/*
 * ADD_GID: set entry index (2..gid_tbl_len-1) to gid. Adding the GID an
 * entry already holds succeeds. Returns 0, -EINVAL (index >= gid_tbl_len, gid
 * all zeros), -EPERM (index 0 or 1: managed by the device), -EBUSY (the entry
 * holds another GID); device ERR: -EINVAL.
 */
int vrdma_gid_add(struct vrdma_dev *dev, uint32_t index, const uint8_t gid[16]);

/* DEL_GID: clear entry index. Returns 0, -EINVAL (index >= gid_tbl_len),
 * -EPERM (index 0 or 1), -ENODATA (empty entry); device ERR: -EINVAL. */
int vrdma_gid_del(struct vrdma_dev *dev, uint32_t index);

/* ---- protection domains ------------------------------------------------- */

/* CREATE_PD: *pdn gets the new PD. Returns 0, -ENOMEM (max_pd PDs exist);
 * device ERR: -ENOMEM. */
int vrdma_pd_alloc(struct vrdma_dev *dev, uint32_t *pdn);

/* DESTROY_PD. Returns 0, -EINVAL (no such PD), -EBUSY (MRs, QPs or AHs use
 * it); device ERR: -EBUSY. */
int vrdma_pd_free(struct vrdma_dev *dev, uint32_t pdn);

/* ---- memory regions ------------------------------------------------------- */

/* REG_USER_MR / GET_DMA_MR ack. */
struct vrdma_mr_info {
	uint32_t mrn;
	uint32_t lkey;
	uint32_t rkey;            /* 0 without remote access */
};

/*
 * Register [addr, addr + length) of this process (any memory: heap, stack,
 * globals, anonymous or file-private mmap), seen by the device at I/O
 * address iova (e.g. (uintptr_t)addr). access is VIRTIO_IB_ACCESS_*.
 * The pages are first made shared with the device (vrdma_mem_share: the
 * application keeps its pointers and contents), then REG_USER_MR gets the
 * page array (4096-byte pages, identity GPAs). When the last MR covering a
 * page is deregistered the page becomes private memory again.
 * Returns 0, -EINVAL (no such PD, length 0 or above max_mr_size, iova range
 * wraps, iova and addr at different offsets in a 4 KiB page, REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE, unknown access bit), -EOPNOTSUPP
 * (REMOTE_ATOMIC without atomic_cap, MW_BIND without VIRTIO_IB_DEVICE_
 * MEM_WINDOW: both need the extension), -ENOMEM (max_mr MRs exist), or the errors of
 * vrdma_mem_share (-EFAULT unmapped, -EACCES unreadable, -EOPNOTSUPP shared
 * mapping, -ENOSPC no memory slot); device ERR: -ENOMEM (the device's page
 * budget).
 */
int vrdma_mr_reg(struct vrdma_dev *dev, uint32_t pdn, void *addr, uint64_t length,
		 uint64_t iova, uint32_t access, struct vrdma_mr_info *mr);

/*
 * GET_DMA_MR: an MR whose addresses are this process's virtual addresses of
 * memory already shared with the device (libvrdma's own buffers, or ranges
 * shared with vrdma_mem_share / registered MRs); local access only.
 * Returns 0, -EINVAL (no such PD, any access bit but LOCAL_WRITE), -ENOMEM
 * (max_mr MRs exist); device ERR: -EINVAL.
 */
int vrdma_mr_get_dma(struct vrdma_dev *dev, uint32_t pdn, uint32_t access,
		     struct vrdma_mr_info *mr);

/* DEREG_MR (and unshare its pages, see vrdma_mr_reg); also frees the MRs of
 * vrdma_mr_alloc. Returns 0, -EINVAL (no such MR); device ERR: -EINVAL, or
 * -EBUSY for an MR windows are bound to (the MR is kept). */
int vrdma_mr_dereg(struct vrdma_dev *dev, uint32_t mrn);

/*
 * Extension: ALLOC_MR, an MR for fast registration with room for max_num_sg
 * pages, FREE (its key unusable) until a VIRTIO_IB_WR_REG_MR work request
 * maps it; lkey = rkey, and its low 8 bits (VIRTIO_IB_KEY_CONSUMER_MASK)
 * are the application's to change in each REG_MR (vrdma_inc_key). The
 * library keeps the MR's page list (max_num_sg * 8 bytes of shared memory)
 * for REG_MR. Freed by vrdma_mr_dereg. Returns 0, -EINVAL (no such PD,
 * max_num_sg 0 or above max_fast_reg_page_list_len), -ENOMEM (max_mr MRs),
 * -EOPNOTSUPP (no VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS); device ERR: -ENOMEM.
 */
int vrdma_mr_alloc(struct vrdma_dev *dev, uint32_t pdn, uint32_t max_num_sg,
		   struct vrdma_mr_info *mr);

/* A key with its low 8 bits (the consumer's) incremented: the usual new key
 * of a REG_MR or BIND_MW (ibv_inc_rkey). */
static inline uint32_t vrdma_inc_key(uint32_t key)
{
	return (key & ~VIRTIO_IB_KEY_CONSUMER_MASK) | ((key + 1) & VIRTIO_IB_KEY_CONSUMER_MASK);
}

/* ALLOC_MW ack. */
struct vrdma_mw_info {
	uint32_t mwn;             /* for vrdma_mw_dealloc */
	uint32_t rkey;            /* initial key (unbound) */
};

/*
 * Extension: ALLOC_MW, a memory window of type VIRTIO_IB_MW_TYPE_1 or _2
 * (2B) in PD pdn, unbound; bind it with a VIRTIO_IB_WR_BIND_MW work request.
 * Returns 0, -EINVAL (no such PD, unknown type), -ENOMEM (max_mw windows),
 * -EOPNOTSUPP (no VIRTIO_IB_DEVICE_MEM_WINDOW, or type 2 without
 * MEM_WINDOW_TYPE_2B); device ERR: -ENOMEM.
 */
int vrdma_mw_alloc(struct vrdma_dev *dev, uint32_t pdn, uint32_t type,
		   struct vrdma_mw_info *mw);

/* Extension: DEALLOC_MW (a bound window is unbound first). Returns 0,
 * -EINVAL (not a window of this library); device ERR: -EINVAL. */
int vrdma_mw_dealloc(struct vrdma_dev *dev, uint32_t mwn);

/* ---- completion queues ---------------------------------------------------- */

/* struct virtio_rdma_cq_req in host order. */
struct vrdma_wc {
	uint64_t wr_id;
	uint8_t status;           /* enum virtio_ib_wc_status */
	uint8_t opcode;           /* enum virtio_ib_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data;         /* network byte order (WITH_IMM) */
		uint32_t invalidated_rkey; /* host order (WITH_INV, extension) */
	};
	uint32_t qp_num;
	uint32_t src_qp;          /* UD */
	uint32_t wc_flags;        /* VIRTIO_IB_WC_GRH / _WITH_IMM / _WITH_INV */
};
/* Extension values: opcodes VIRTIO_IB_WC_COMP_SWAP, _FETCH_ADD, _BIND_MW,
 * _LOCAL_INV, _REG_MR; status VIRTIO_IB_WC_MW_BIND_ERR; VIRTIO_IB_WC_WITH_INV. */

/*
 * CREATE_CQ for at least cqe completions, then its completion virtqueue
 * (vrdma_vq_cq(1, cqn)) with one 48-byte buffer per entry: the capacity is
 * cqe rounded up to a power of two (vrdma_cq_size), which is also what the
 * device is told. Returns 0 and *cq, -EINVAL (cqe 0 or above max_cqe),
 * -ENOMEM (max_rdma_cqs CQs exist); device ERR: -ENOMEM.
 */
int vrdma_cq_create(struct vrdma_dev *dev, uint32_t cqe, struct vrdma_cq **cq);

/* DESTROY_CQ, then the virtqueue is torn down and *cq freed. Completions
 * not polled are lost. Returns 0, -EBUSY (QPs use it); device ERR: -EBUSY. */
int vrdma_cq_destroy(struct vrdma_cq *cq);

/*
 * Extension: make cq hold at least cqe completions (RESIZE_CQ). Growing
 * replaces the completion virtqueue by a larger one ("Resizing CQs and QPs":
 * the old ring is stopped, its completions are kept and polled first, then
 * the new ring starts; the event fd stays the same); completions may be
 * pending meanwhile. A size the CQ already has is kept (no command): a CQ
 * never shrinks. Must not race with vrdma_cq_destroy. Returns 0
 * (vrdma_cq_size: the new capacity), -EINVAL (cqe 0 or above max_cqe),
 * -EOPNOTSUPP (no VIRTIO_IB_DEVICE_RESIZE_CQ); device ERR: -EINVAL.
 */
int vrdma_cq_resize(struct vrdma_cq *cq, uint32_t cqe);

/* The CQ's number (cqn). */
uint32_t vrdma_cq_num(const struct vrdma_cq *cq);
/* An application pointer kept with the CQ (NULL at creation), e.g. for
 * asynchronous events. */
void vrdma_cq_set_context(struct vrdma_cq *cq, void *context);
void *vrdma_cq_context(const struct vrdma_cq *cq);
/* The CQ's capacity (entries). */
uint32_t vrdma_cq_size(const struct vrdma_cq *cq);

/*
 * Up to n completions into wc, oldest first; each buffer is given back to
 * the device at once. Non-blocking. Returns how many (0: none), or
 * -ENOTCONN (nothing left and the back-end is gone).
 */
int vrdma_cq_poll(struct vrdma_cq *cq, struct vrdma_wc *wc, int n);

/*
 * Request a completion event (one-shot): VIRTIO_IB_NOTIFY_NEXT_COMPLETION
 * (the next completion; with SOLICITED too it means the same) or
 * VIRTIO_IB_NOTIFY_SOLICITED alone (the next solicited receive or error
 * completion). The event makes vrdma_cq_event_fd() readable until
 * vrdma_cq_consume_event(). NEXT_COMPLETION costs no command: it asks
 * virtio for an interrupt at the next used entry (the spec's fast path);
 * SOLICITED sends REQ_NOTIFY_CQ. A completion that arrives while arming may
 * give an event at once (applications poll after arming anyway).
 * Returns 0, -EINVAL (flags 0 or unknown bits), -EOPNOTSUPP (the CQ has no
 * event fd, see below); device ERR (SOLICITED): -EIO.
 */
int vrdma_cq_arm(struct vrdma_cq *cq, uint32_t flags);

/*
 * An fd that polls readable (POLLIN) while a completion event is pending
 * (the CQ virtqueue's call eventfd); clear it with vrdma_cq_consume_event().
 * -1 when the CQ cannot have events: its virtqueue index is >= 256 and the
 * back-end lacks the wide-index extension, so the device cannot interrupt;
 * use vrdma_cq_wait() (which then polls) or poll the CQ.
 */
int vrdma_cq_event_fd(const struct vrdma_cq *cq);

/* Clear the pending event without blocking. Returns 1 if one was pending,
 * 0 if not, -EOPNOTSUPP without an event fd. An event of NEXT_COMPLETION
 * arming that finds the CQ empty (its completions were polled after the
 * arming) gives 0 too, and the CQ is armed again for the next one. */
int vrdma_cq_consume_event(struct vrdma_cq *cq);

/*
 * Block until the CQ has a completion to poll (returns 1), timeout_ms
 * passes (0; < 0 waits for ever) or the back-end dies (-ENOTCONN). Spins
 * briefly, then arms NEXT_COMPLETION and sleeps on the event fd; without
 * one it polls every millisecond. Consumes the event it waited for. One
 * waiter per CQ; do not mix with a completion channel on the same CQ.
 */
int vrdma_cq_wait(struct vrdma_cq *cq, int timeout_ms);

/* ---- queue pairs ---------------------------------------------------------- */

/* struct virtio_rdma_qp_cap */
struct vrdma_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* struct virtio_rdma_cmd_create_qp with CQ objects. */
struct vrdma_qp_init {
	uint32_t pdn;
	uint8_t qp_type;          /* VIRTIO_IB_QPT_RC / UC / UD / GSI */
	bool sq_sig_all;          /* every send WR completes in the CQ */
	struct vrdma_cq *send_cq;
	struct vrdma_cq *recv_cq;
	struct vrdma_qp_cap cap;
	/* extension: receive from this SRQ (NULL: the QP's own receive
	 * queue); cap.max_recv_wr / max_recv_sge are then ignored (0) */
	struct vrdma_srq *srq;
};

/*
 * CREATE_QP, then its send and receive virtqueues (vrdma_vq_sq / _rq(1, M,
 * qpn & 0x3fff)) of max_send_wr / max_recv_wr entries rounded up to a power
 * of two (at least 2; 4 times that, at most 32768, when the device reports
 * VIRTIO_IB_DEVICE_RESIZE_MAX_WR, so that vrdma_qp_resize can grow in
 * place); the rounded WR counts are the QP's WR capacities and what the
 * device is told (SGE and inline capacities are kept as asked). One
 * descriptor per work request. With init->srq (extension) the QP has no
 * receive virtqueue of its own: CREATE_QP names the SRQ (ext_flags, srqn).
 * Returns 0 and *qp (vrdma_qp_get_cap: the actual capacities), -EINVAL (no
 * such PD, a CQ of another device, qp_type SMI or unknown, a capacity above
 * the device's: max_qp_wr, max_send_sge, max_recv_sge, max_inline_data 512;
 * an SRQ of another device or on a GSI QP), -EOPNOTSUPP (an SRQ without
 * VIRTIO_IB_DEVICE_SRQ), -ENOMEM (every QP index is in use; for GSI: it
 * exists); device ERR: -ENOMEM.
 */
int vrdma_qp_create(struct vrdma_dev *dev, const struct vrdma_qp_init *init,
		    struct vrdma_qp **qp);

/* DESTROY_QP (the device flushes outstanding WRs with WR_FLUSH_ERR to the
 * CQs; the QP's asynchronous events are dropped), then the virtqueues are
 * torn down and *qp freed. Returns 0; device
 * ERR: -EIO (the QP is kept). */
int vrdma_qp_destroy(struct vrdma_qp *qp);

/*
 * Extension: RESIZE_QP to max_send_wr / max_recv_wr (rounded up to a power
 * of two; max_recv_wr must be 0 on a QP with an SRQ). Rings are created
 * with room to grow (4 times the capacity, at most 32768) when the device
 * reports VIRTIO_IB_DEVICE_RESIZE_MAX_WR; growing beyond a ring replaces it,
 * which is only possible while that queue is quiescent (every WR posted
 * there completed). Returns 0 (vrdma_qp_get_cap: the new capacities),
 * -EINVAL (above max_qp_wr, receive WRs with an SRQ), -EBUSY (growth needs a
 * ring replacement and WRs are outstanding, or fewer than the WRs
 * outstanding), -EOPNOTSUPP (no VIRTIO_IB_DEVICE_RESIZE_MAX_WR); device
 * ERR: -EINVAL.
 */
int vrdma_qp_resize(struct vrdma_qp *qp, uint32_t max_send_wr, uint32_t max_recv_wr);

/* The QPN. */
uint32_t vrdma_qp_num(const struct vrdma_qp *qp);
/* An application pointer kept with the QP (NULL at creation). */
void vrdma_qp_set_context(struct vrdma_qp *qp, void *context);
void *vrdma_qp_context(const struct vrdma_qp *qp);
/* The actual capacities. */
void vrdma_qp_get_cap(const struct vrdma_qp *qp, struct vrdma_qp_cap *cap);

/* struct virtio_rdma_global_route */
struct vrdma_global_route {
	uint8_t dgid[16];
	uint32_t flow_label;      /* 20 bits */
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

/* struct virtio_rdma_ah_attr: an address vector. dmac all zeros lets the
 * device resolve the destination MAC. */
struct vrdma_ah_attr {
	struct vrdma_global_route grh;
	uint8_t dmac[6];
	uint8_t sl;               /* service level 0..15 (802.1Q PCP with a VLAN) */
};

/* MODIFY_QP / QUERY_QP attributes; which count is said by a VIRTIO_IB_QP_*
 * mask. */
struct vrdma_qp_attr {
	uint8_t qp_state;         /* enum virtio_ib_qp_state */
	uint8_t cur_qp_state;     /* modify with VIRTIO_IB_QP_CUR_STATE */
	uint8_t path_mtu;         /* enum virtio_ib_mtu */
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t sq_draining;      /* query only */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags; /* VIRTIO_IB_ACCESS_* */
	uint32_t rate_limit;      /* kbps, 0 = unlimited */
	struct vrdma_qp_cap cap;  /* query only (CAP is never modifiable) */
	struct vrdma_ah_attr ah_attr;
};

/*
 * MODIFY_QP with the attributes of mask (VIRTIO_IB_QP_*). The state machine
 * and per-type attribute rules are the device's (docs/spec.md "QP state
 * machine"); the library checks the values it can: unknown mask bits, CAP,
 * qp_state / cur_qp_state > ERR, path_mtu 1..5, timeout <= 31, retry_cnt and
 * rnr_retry <= 7, min_rnr_timer <= 31, PSNs and dest_qp_num <= 0xFFFFFF,
 * access flags (REMOTE_ATOMIC only with the extension's atomic_cap, else
 * -EOPNOTSUPP), max_rd_atomic / max_dest_rd_atomic against the device, the
 * address vector (flow_label <= 0xFFFFF, sgid_index < gid_tbl_len).
 * Returns 0, -EINVAL; device ERR (illegal transition, missing or extra
 * attribute, GID index empty...): -EINVAL.
 */
int vrdma_qp_modify(struct vrdma_qp *qp, const struct vrdma_qp_attr *attr, uint32_t mask);

/* QUERY_QP: every attribute (mask only validated). Returns 0, -EINVAL
 * (unknown mask bit); device ERR: -EIO. */
int vrdma_qp_query(struct vrdma_qp *qp, uint32_t mask, struct vrdma_qp_attr *attr);

/* struct virtio_rdma_sge (also the layout of struct ibv_sge). */
struct vrdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/*
 * struct virtio_rdma_sq_req(_ext) in host order. Extension opcodes and their
 * fields (docs/spec.md "New values at a glance"):
 *   VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, _FETCH_AND_ADD (RC): atomic; one SGE of
 *     at least 8 bytes receives the original value
 *   VIRTIO_IB_WR_LOCAL_INV (RC/UC/UD): invalidate_rkey, no SGE
 *   VIRTIO_IB_WR_SEND_WITH_INV (RC): a SEND, plus invalidate_rkey
 *   VIRTIO_IB_WR_BIND_MW (RC/UC): bind_mw, no SGE
 *   VIRTIO_IB_WR_REG_MR (RC/UC/UD): reg, no SGE; [addr, addr + length) must
 *     be memory shared with the device (an MR or vrdma_mem_share covers
 *     it); the library writes its page list into the MR's own list, which
 *     the device reads when the WR executes: do not post another REG_MR of
 *     the same MR before this one completed.
 */
/* virtio-rdma device only (vrdma_dev_is_virtio_rdma; on the other it is a
 * reserved opcode: -EINVAL): an RDMA READ (rdma) on RC that invalidates the local key
 * invalidate_rkey (a vrdma_mr_alloc MR of the QP's PD) once its data is in
 * place; completes as VIRTIO_IB_WC_RDMA_READ (LOC_PROT_ERR when the key
 * could not be invalidated). */
#define VRDMA_WR_RDMA_READ_WITH_INV 11

struct vrdma_send_wr {
	uint64_t wr_id;
	uint8_t opcode;           /* enum virtio_ib_wr_opcode, VIRTIO_IB_WR_* */
	uint8_t send_flags;       /* VIRTIO_IB_SEND_* */
	union {
		uint32_t imm_data;        /* network byte order */
		uint32_t invalidate_rkey; /* host order: LOCAL_INV, SEND_WITH_INV */
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;
			uint32_t ah;      /* vrdma_ah_create handle */
		} ud;
		struct {
			uint64_t remote_addr; /* 8-byte aligned */
			uint64_t compare_add; /* CAS: compare; FAA: add */
			uint64_t swap;        /* CAS: swap */
			uint32_t rkey;
		} atomic;
		struct {
			uint64_t addr;        /* window start (MR iova space) */
			uint64_t length;      /* type 1: 0 unbinds */
			uint32_t mr_lkey;     /* the MR (MW_BIND access) */
			uint32_t rkey;        /* the window's new rkey */
			uint32_t access;      /* VIRTIO_IB_MW_ACCESS_MASK bits */
		} bind_mw;
		struct {
			uint32_t mrn;         /* a vrdma_mr_alloc MR */
			uint32_t key;         /* its new lkey = rkey */
			uint32_t access;      /* VIRTIO_IB_ACCESS_* */
			uint64_t iova;
			uint64_t length;
			const void *addr;     /* where byte iova lives (same
					       * offset in a 4 KiB page) */
		} reg;
	};
	uint32_t num_sge;
	const struct vrdma_sge *sg_list;
};

/*
 * Post n send WRs in order, one send-queue descriptor each, and notify the
 * device once (if it asked). With VIRTIO_IB_SEND_INLINE the bytes the SGEs
 * point at (any memory, lkey ignored) are copied into the request, at most
 * max_inline_data in all.
 * Capacity (max_send_wr), as on a hardware queue: a WR occupies the send
 * queue until the device gave its descriptor back (it does when the WR
 * completed; reclaimed here) AND its completion was polled from the CQ; an
 * unsignaled WR until a later completion of the send queue was polled. So a
 * CQ with room for the queues that use it never overflows (after an error,
 * until the QP is reset, a few completed unsignaled WRs may keep their place).
 * Returns how many WRs were posted (n, or fewer: WR number <return> was
 * refused), or, when the first was refused, -ENOMEM (send queue full),
 * -EINVAL (QP in RESET, INIT or RTR; opcode not allowed on the QP type or
 * reserved; unknown send flag; more SGEs than max_send_sge; inline data above
 * max_inline_data; message above max_msg_sz; UD without an AH; extension
 * opcodes: SGEs or INLINE where not allowed, an atomic without exactly one
 * SGE of >= 8 bytes, REG_MR of an unknown MR or more pages than it holds),
 * -EOPNOTSUPP (an extension opcode whose capability the device did not
 * report), -ENOTCONN.
 */
int vrdma_post_send(struct vrdma_qp *qp, const struct vrdma_send_wr *wr, unsigned n);

/* struct virtio_rdma_rq_req in host order. */
struct vrdma_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;
	const struct vrdma_sge *sg_list;
};

/* Post n receive WRs, as vrdma_post_send (a receive WR occupies the queue
 * until its completion was polled). Returns how many, or -ENOMEM (receive
 * queue full), -EINVAL (QP in RESET or with an SRQ, more SGEs than
 * max_recv_sge), -ENOTCONN. */
int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr, unsigned n);

/* ---- shared receive queues (extension) ----------------------------------- */

/* CREATE_SRQ / QUERY_SRQ / MODIFY_SRQ fields. */
struct vrdma_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;       /* 0: not armed */
};

/*
 * CREATE_SRQ in PD pdn for attr->max_wr receive WRs of attr->max_sge SGEs
 * (max_wr rounded up to a power of two; attr gets the actual values), then
 * its virtqueue (vrdma_vq_srq) with a fresh ring. Receive WRs posted to it
 * are taken by whichever attached QP needs one first and complete on that
 * QP's receive CQ. Returns 0 and *srq, -EINVAL (no such PD, max_wr 0 or
 * above max_srq_wr, max_sge above max_srq_sge), -ENOMEM (max_srq SRQs),
 * -EOPNOTSUPP (no VIRTIO_IB_DEVICE_SRQ); device ERR: -ENOMEM.
 */
int vrdma_srq_create(struct vrdma_dev *dev, uint32_t pdn, struct vrdma_srq_attr *attr,
		     struct vrdma_srq **srq);

/* MODIFY_SRQ with VIRTIO_IB_SRQ_LIMIT (arm: srq_limit > 0; disarm: 0).
 * Returns 0, -EINVAL (mask 0, VIRTIO_IB_SRQ_MAX_WR: no SRQ resize, unknown
 * bit, srq_limit above max_wr); device ERR: -EINVAL. */
int vrdma_srq_modify(struct vrdma_srq *srq, const struct vrdma_srq_attr *attr, uint32_t mask);

/* QUERY_SRQ (srq_limit 0 once its event fired). Returns 0; device ERR:
 * -EIO. */
int vrdma_srq_query(struct vrdma_srq *srq, struct vrdma_srq_attr *attr);

/* DESTROY_SRQ (requests left on it are dropped without completion), then
 * its ring is torn down and *srq freed. Returns 0, -EBUSY (QPs use it);
 * device ERR: -EBUSY. */
int vrdma_srq_destroy(struct vrdma_srq *srq);

/* The SRQ's number (srqn). */
uint32_t vrdma_srq_num(const struct vrdma_srq *srq);
void vrdma_srq_set_context(struct vrdma_srq *srq, void *context);
void *vrdma_srq_context(const struct vrdma_srq *srq);

/* Post n receive WRs to the SRQ, as vrdma_post_recv, except that a WR
 * occupies the SRQ only until the device took it and wrote its completion
 * (not until that was polled: size the QPs' receive CQs for what they may
 * take). Returns how many, or -ENOMEM (full), -EINVAL (more SGEs than
 * max_sge), -ENOTCONN. */
int vrdma_post_srq_recv(struct vrdma_srq *srq, const struct vrdma_recv_wr *wr, unsigned n);

/* ---- asynchronous events (extension) --------------------------------------- */

/* One event of the event virtqueue, resolved to this library's object. */
struct vrdma_async_event {
	uint32_t type;            /* enum virtio_ib_event_type */
	uint32_t id;              /* cqn, qpn, srqn, or port 1 */
	uint32_t vendor_err;      /* diagnostic only */
	struct vrdma_cq *cq;      /* CQ_ERR */
	struct vrdma_qp *qp;      /* QP events */
	struct vrdma_srq *srq;    /* SRQ events */
};

/*
 * An fd that polls readable (POLLIN, level-triggered: an epoll fd, never
 * read it) while an event may be waiting (spurious wake-ups happen); call
 * vrdma_event_get, which keeps it readable while events remain. Returns the fd, -EOPNOTSUPP (no
 * ROCE_EXT, or the event ring cannot interrupt: index >= 256 without the
 * wide-index extension; then poll vrdma_event_get), or another -errno.
 */
int vrdma_event_fd(struct vrdma_dev *dev);

/*
 * The next asynchronous event, oldest first, without blocking. Events of an
 * object are resolved when read from the ring; the events of a CQ, QP or
 * SRQ still queued here when it is destroyed are dropped (its destroy also
 * reads every event the device wrote before acknowledging it, as the spec
 * asks). Returns 1 (*ev filled), 0 (none), -EOPNOTSUPP (no ROCE_EXT),
 * -ENOTCONN.
 */
int vrdma_event_get(struct vrdma_dev *dev, struct vrdma_async_event *ev);

/* ---- address handles ------------------------------------------------------ */

/*
 * CREATE_AH in PD pdn: *ah gets the handle for vrdma_send_wr.ud.ah. Returns
 * 0, -EINVAL (no such PD, sgid_index >= gid_tbl_len or an entry known empty,
 * flow_label above 20 bits, dgid all zeros), -ENOMEM (max_ah AHs exist);
 * device ERR (source and destination of different families, GID 1 absent):
 * -EINVAL.
 */
int vrdma_ah_create(struct vrdma_dev *dev, uint32_t pdn, const struct vrdma_ah_attr *attr,
		    uint32_t *ah);

/* DESTROY_AH. Returns 0, -EINVAL (no such AH, or it belongs to another PD);
 * device ERR: -EINVAL. */
int vrdma_ah_destroy(struct vrdma_dev *dev, uint32_t pdn, uint32_t ah);

/* ---- statistics ----------------------------------------------------------- */

struct vrdma_rdma_stats {
	uint64_t cmds, cmd_errors;  /* RoCE control commands, refused by device */
	uint64_t pds, mrs, cqs, qps, ahs; /* live objects */
	uint64_t send_wrs, recv_wrs, wcs; /* posted / polled */
	uint64_t sq_full, rq_full;  /* posts refused for a full ring */
	uint64_t bad_wcs;           /* completion buffers the device mis-used */
	uint64_t srqs, mws;         /* live objects (extension) */
	uint64_t events, bad_events; /* async events read, malformed ones */
	uint64_t dropped_wcs;       /* completions of destroyed QPs, never returned */
};
/* Counters of the RDMA part (data-path ones summed over live queues).
 * Returns 0. */
int vrdma_rdma_get_stats(struct vrdma_dev *dev, struct vrdma_rdma_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_VRDMA_RDMA_H */
