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
 * path (vrdma_post_send, vrdma_post_recv, vrdma_cq_poll, vrdma_cq_arm,
 * vrdma_cq_consume_event) takes a per-queue spinlock: several threads may
 * post to one QP or poll one CQ. Destroying an object must not race with its
 * use.
 *
 * vrdma_dev_close() frees every CQ and QP still alive (their pointers become
 * invalid) and forgets the device's PDs, MRs and AHs; the reset it sends
 * destroys them on the device.
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
};

/* Port attributes (QUERY_PORT is sent each time). Returns 0; device ERR:
 * -EIO. */
int vrdma_query_port(struct vrdma_dev *dev, struct vrdma_port_attr *attr);

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
 * wraps, iova and addr at different offsets in a 4 KiB page, REMOTE_WRITE
 * without LOCAL_WRITE, unknown access bit), -EOPNOTSUPP (REMOTE_ATOMIC or
 * MW_BIND: reserved bits), -ENOMEM (max_mr MRs exist), or the errors of
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

/* DEREG_MR (and unshare its pages, see vrdma_mr_reg). Returns 0, -EINVAL
 * (no such MR); device ERR: -EINVAL (the MR is kept). */
int vrdma_mr_dereg(struct vrdma_dev *dev, uint32_t mrn);

/* ---- completion queues ---------------------------------------------------- */

/* struct virtio_rdma_cq_req in host order. */
struct vrdma_wc {
	uint64_t wr_id;
	uint8_t status;           /* enum virtio_ib_wc_status */
	uint8_t opcode;           /* enum virtio_ib_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;        /* network byte order */
	uint32_t qp_num;
	uint32_t src_qp;          /* UD */
	uint32_t wc_flags;        /* VIRTIO_IB_WC_GRH / VIRTIO_IB_WC_WITH_IMM */
};

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

/* The CQ's number (cqn). */
uint32_t vrdma_cq_num(const struct vrdma_cq *cq);
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
 * 0 if not, -EOPNOTSUPP without an event fd. */
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
};

/*
 * CREATE_QP, then its send and receive virtqueues (vrdma_vq_sq / _rq(1, M,
 * qpn & 0x3fff)) of max_send_wr / max_recv_wr entries rounded up to a power
 * of two (at least 2); those rounded sizes are the QP's WR capacities and
 * what the device is told (SGE and inline capacities are kept as asked).
 * One descriptor per work request, so a ring bounds the WRs outstanding on
 * it. Returns 0 and *qp (vrdma_qp_get_cap: the actual
 * capacities), -EINVAL (no such PD, a CQ of another device, qp_type SMI or
 * unknown, a capacity above the device's: max_qp_wr, max_send_sge,
 * max_recv_sge, max_inline_data 512), -ENOMEM (every QP index is in use;
 * for GSI: it exists); device ERR: -ENOMEM.
 */
int vrdma_qp_create(struct vrdma_dev *dev, const struct vrdma_qp_init *init,
		    struct vrdma_qp **qp);

/* DESTROY_QP (the device flushes outstanding WRs with WR_FLUSH_ERR to the
 * CQs), then the virtqueues are torn down and *qp freed. Returns 0; device
 * ERR: -EIO (the QP is kept). */
int vrdma_qp_destroy(struct vrdma_qp *qp);

/* The QPN. */
uint32_t vrdma_qp_num(const struct vrdma_qp *qp);
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
 * access flags, max_rd_atomic / max_dest_rd_atomic against the device, the
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

/* struct virtio_rdma_sq_req in host order. */
struct vrdma_send_wr {
	uint64_t wr_id;
	uint8_t opcode;           /* enum virtio_ib_wr_opcode */
	uint8_t send_flags;       /* VIRTIO_IB_SEND_* */
	uint32_t imm_data;        /* network byte order */
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
 * max_inline_data; message above max_msg_sz; UD without an AH), -ENOTCONN.
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
 * queue full), -EINVAL (QP in RESET, more SGEs than max_recv_sge),
 * -ENOTCONN. */
int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr, unsigned n);

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
};
/* Counters of the RDMA part (data-path ones summed over live queues).
 * Returns 0. */
int vrdma_rdma_get_stats(struct vrdma_dev *dev, struct vrdma_rdma_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_VRDMA_RDMA_H */
