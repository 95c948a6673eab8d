/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider seam of libibverbs.so.1: everything the verbs layer
 * (the src/verbs sources, the libibverbs ABI) asks of the device behind it.
 *
 * The verbs layer owns the application-visible objects (struct ibv_*),
 * argument checking, translation between libibverbs values and the virtio
 * values below, completion channels, event accounting and fork handling.
 * A provider owns the device: discovery, the vhost-user connection, control
 * commands, virtqueues and registered memory. The verbs layer sees a
 * provider only through this header, and a provider never includes
 * <infiniband/verbs.h>.
 *
 * Providers (one struct vibv_prov_ops each):
 *   vibv_prov_vrdma_ops  the real device through libvrdma (provider_vrdma.c)
 *   a fake device with no network (tests/fake/), only in the test build of
 *                         the library, which selects it through
 *                         vibv_prov_test_select()
 *
 * Conventions:
 * - libvrdma's types (include/vrdma/vrdma_rdma.h) wherever it has one: work
 *   requests, completions, device and QP attributes, QP capabilities and
 *   address vectors, so that the verbs layer converts once and the real
 *   provider passes them on. The rest are plain C structures mirroring the
 *   virtio_rdma_* command and ack structures of
 *   include/vrdma/virtio_net_roce.h. All in HOST byte order, with the RFC's
 *   field names. Enumerated values are the virtio ones (VIRTIO_IB_QPT_*,
 *   VIRTIO_IB_QPS_*, VIRTIO_IB_MTU_*, VIRTIO_IB_ACCESS_*, VIRTIO_IB_WR_*,
 *   VIRTIO_IB_SEND_*, VIRTIO_IB_WC_*, VIRTIO_IB_NOTIFY_*, VIRTIO_IB_QP_* attr
 *   mask bits); the verbs layer translates from and to libibverbs values.
 *   imm_data is the exception: network byte order, opaque, as on the wire.
 *   GIDs and MACs are raw bytes.
 * - Every operation returns 0 (or a count where said) or a negative errno.
 * - discover, open and close are required. Any other control operation may
 *   be NULL, which means -EOPNOTSUPP. The data-path operations
 *   (poll_cq, arm_cq, cq_consume_event, post_send, post_recv, post_srq_recv)
 *   are only called on objects the provider created, so a provider that can
 *   create a CQ / QP / SRQ must implement them.
 * - Threads: the verbs layer takes no lock around provider calls. Like any
 *   libibverbs provider, a provider must accept concurrent calls on
 *   different objects, and on the same QP / CQ / SRQ (applications may post
 *   from several threads).
 * - Fork: the verbs layer marks registered ranges MADV_DONTFORK (pd_mr.c);
 *   memory a provider shares with the device on its own (rings, arenas)
 *   should be marked the same way.
 * - Objects carry the `cookie` given at creation (the verbs object); it comes
 *   back in asynchronous events.
 * - Extensions: things the RFC has no command for (SRQ, multicast, atomics,
 *   async events, P_Key) are marked "vrdma extension"; a provider without
 *   them leaves the operation NULL or reports 0 in the capability field.
 *   The device side is docs/spec.md "Extensions beyond the RFC" (its table
 *   "Mapping for the verbs layer" says which verb uses which operation).
 *   A provider reports only what the device reported: capability bits in
 *   device_cap_flags (VIRTIO_IB_DEVICE_*), limits in the extension fields of
 *   vrdma_device_attr, `ext` when VIRTIO_NET_F_ROCE_EXT was
 *   negotiated. The verbs layer refuses what is not reported before calling
 *   the provider (EOPNOTSUPP), so the provider may trust that an operation
 *   it is asked for was advertised, but must still fail cleanly if not
 *   (the device answers VIRTIO_NET_ERR / LOC_QP_OP_ERR anyway).
 */
#ifndef VRDMA_VERBS_PROVIDER_H
#define VRDMA_VERBS_PROVIDER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vrdma/virtio_net_roce.h"
#include "vrdma/vrdma_rdma.h"

/* Opaque provider objects. */
struct vibv_prov_dev;
struct vibv_prov_cq;
struct vibv_prov_qp;
struct vibv_prov_srq;
struct vibv_prov_ops;
/* Memory windows have no provider object: a window is its mwn (a handle of
 * the device's MR table) and its current rkey. */

#define VRDMA_PROV_NAME_MAX 64  /* = IBV_SYSFS_NAME_MAX */
#define VRDMA_PROV_PATH_MAX 256 /* = IBV_SYSFS_PATH_MAX */
#define VRDMA_PROV_MAX_DEVICES 64

/* One device found by discover(). */
struct vibv_prov_dev_info {
	char name[VRDMA_PROV_NAME_MAX]; /* "vrdma0", unique per provider */
	char path[VRDMA_PROV_PATH_MAX]; /* where it is served (socket path) */
	uint8_t mac[6];                 /* for the node GUID; zero if unknown */
	uint64_t priv;                  /* the provider's own (e.g. an index) */
};

/*
 * Device attributes: libvrdma's struct vrdma_device_attr (QUERY_DEVICE plus
 * the configuration space, include/vrdma/vrdma_rdma.h), filled by
 * query_device together with the device's MAC (zero if unknown). The verbs
 * layer reports max_rdma_qps - 2 QPs (index 0 reserved, index 1 = GSI) and
 * IBV_DEVICE_PORT_ACTIVE_EVENT when `ext` is set; no multicast limits.
 */
/*
 * device_cap_flags bits and what the verbs layer makes of them (spec.md
 * "Mapping for the verbs layer"):
 *   VIRTIO_IB_DEVICE_SRQ                 ibv_create_srq & co, QPs with an SRQ
 *   VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS  IBV_DEVICE_MEM_MGT_EXTENSIONS;
 *                                        IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV
 *   VIRTIO_IB_DEVICE_MEM_WINDOW          IBV_DEVICE_MEM_WINDOW; ibv_alloc_mw
 *                                        type 1, ibv_bind_mw
 *   VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B  IBV_DEVICE_MEM_WINDOW_TYPE_2B; type 2
 *                                        windows, IBV_WR_BIND_MW
 *   VIRTIO_IB_DEVICE_RESIZE_CQ           ibv_resize_cq (resize_cq)
 *   VIRTIO_IB_DEVICE_RESIZE_MAX_WR       IBV_DEVICE_RESIZE_MAX_WR; ibv_modify_qp
 *                                        with IBV_QP_CAP (resize_qp)
 * atomic_cap != 0 enables IBV_WR_ATOMIC_* and IBV_ACCESS_REMOTE_ATOMIC.
 */

/*
 * QUERY_PORT ack (struct virtio_rdma_ack_query_port) plus the link facts of
 * the virtio-net configuration (status, mtu, speed). There is one port, 1.
 */
struct vibv_prov_port_attr {
	uint32_t gid_tbl_len;
	uint32_t max_msg_sz;
	bool link_up;      /* VIRTIO_NET_S_LINK_UP */
	uint16_t mtu;      /* netdev MTU (bytes of IP packet); 0 = 1500 */
	uint32_t speed;    /* Mbit/s; 0 or UINT32_MAX = unknown */
	uint32_t pkey_tbl_len; /* vrdma extension; 0 is reported as 1 */
	/* the virtio-rdma device's own port attributes (IB values), used
	 * instead of the derived ones when per_port is set */
	bool per_port;
	uint8_t state, phys_state, active_width, active_speed;
	uint32_t port_cap_flags, bad_pkey_cntr, qkey_viol_cntr;
};

/* GID types (the values of enum ibv_gid_type). */
#define VRDMA_PROV_GID_TYPE_ROCE_V1 1
#define VRDMA_PROV_GID_TYPE_ROCE_V2 2

/* One GID table entry (what ADD_GID told the device). */
struct vibv_prov_gid {
	uint8_t gid[16];
	uint32_t gid_type; /* VRDMA_PROV_GID_TYPE_* */
};

/* REG_USER_MR / GET_DMA_MR ack */
struct vibv_prov_mr {
	uint32_t mrn;
	uint32_t lkey;
	uint32_t rkey;
};

/* What create_cq reports. */
struct vibv_prov_cq_info {
	uint32_t cqn;
	uint32_t cqe;     /* actual capacity (>= requested) */
	int event_fd;     /* readable (POLLIN) while a completion event is
			   * pending on this CQ (after arm_cq and a matching
			   * completion). Owned by the provider; the verbs layer
			   * only watches it with epoll and calls
			   * cq_consume_event(). -1 if the CQ has no events. */
};

/* Completions are libvrdma's struct vrdma_wc (include/vrdma/vrdma_rdma.h):
 * status and opcode the virtio values (with the extension's), imm_data
 * (network order) with WITH_IMM, invalidated_rkey (host order) with
 * WITH_INV. */

/*
 * Work requests are libvrdma's (include/vrdma/vrdma_rdma.h): struct
 * vrdma_send_wr, vrdma_recv_wr and vrdma_sge (the layout of struct ibv_sge,
 * so the verbs layer passes an application's sg_list through). The verbs
 * layer converts an ibv_send_wr into one once, at post time, and a provider
 * takes it as it is; the fields a provider reads are those of the opcode:
 *   SEND, RDMA_*                      as the RFC (rdma view, imm_data; ud
 *                                     view on UD QPs)
 *   ATOMIC_CMP_AND_SWP (5),
 *   ATOMIC_FETCH_AND_ADD (6)          atomic view; num_sge 1 (the 8-byte
 *                                     result buffer; the device checks it)
 *   LOCAL_INV (7)                     invalidate_rkey; num_sge 0
 *   BIND_MW (8)                       bind_mw view; num_sge 0 (both for
 *                                     ibv_bind_mw of type 1 windows and
 *                                     IBV_WR_BIND_MW of type 2)
 *   SEND_WITH_INV (9)                 invalidate_rkey + the SGEs / inline
 *                                     data of a SEND
 * The verbs layer never posts REG_MR (10).
 */


/* struct virtio_rdma_cmd_create_qp, with provider objects for the CQs. */
struct vibv_prov_qp_init {
	uint32_t pdn;
	uint8_t qp_type; /* VIRTIO_IB_QPT_RC / UC / UD */
	bool sq_sig_all;
	struct vibv_prov_cq *send_cq;
	struct vibv_prov_cq *recv_cq;
	struct vibv_prov_srq *srq; /* vrdma extension (CREATE_QP ext_flags
				     * SRQ + srqn); NULL = own RQ. With an
				     * SRQ, cap.max_recv_wr / max_recv_sge
				     * are ignored and reported 0, and
				     * post_recv is never called */
	struct vrdma_qp_cap cap; /* requested */
};

/* What create_qp reports. */
struct vibv_prov_qp_info {
	uint32_t qpn;
	struct vrdma_qp_cap cap; /* actual (>= requested) */
};



/*
 * QP capabilities, address vectors and QP attributes are libvrdma's
 * (struct vrdma_qp_cap, vrdma_global_route, vrdma_ah_attr, vrdma_qp_attr:
 * MODIFY_QP / QUERY_QP in host order; which fields count is said by a
 * VIRTIO_IB_QP_* mask passed alongside). The verbs layer resolves an
 * address vector's dmac (see resolve_dmac).
 */

/*
 * vrdma extension: shared receive queues (commands 18-21). The verbs layer
 * never asks for VRDMA_PROV_SRQ_MAX_WR (SRQ resize is not offered: it fails
 * ibv_modify_srq with EINVAL itself); a provider answers it -EINVAL.
 */
struct vibv_prov_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* 0 = not armed */
	uint32_t srqn;      /* out of create_srq: the device's SRQ number (what
			     * asynchronous events name) */
};
#define VRDMA_PROV_SRQ_MAX_WR (1u << 0)
#define VRDMA_PROV_SRQ_LIMIT  (1u << 1)

/* vrdma extension: memory window types (ALLOC_MW mw_type). */
#define VRDMA_PROV_MW_TYPE_1 VIRTIO_IB_MW_TYPE_1
#define VRDMA_PROV_MW_TYPE_2 VIRTIO_IB_MW_TYPE_2

/* vrdma extension: asynchronous events, numbered as enum ibv_event_type
 * (the verbs layer checks this at compile time). */
enum vibv_prov_event_type {
	VRDMA_PROV_EVENT_CQ_ERR,
	VRDMA_PROV_EVENT_QP_FATAL,
	VRDMA_PROV_EVENT_QP_REQ_ERR,
	VRDMA_PROV_EVENT_QP_ACCESS_ERR,
	VRDMA_PROV_EVENT_COMM_EST,
	VRDMA_PROV_EVENT_SQ_DRAINED,
	VRDMA_PROV_EVENT_PATH_MIG,
	VRDMA_PROV_EVENT_PATH_MIG_ERR,
	VRDMA_PROV_EVENT_DEVICE_FATAL,
	VRDMA_PROV_EVENT_PORT_ACTIVE,
	VRDMA_PROV_EVENT_PORT_ERR,
	VRDMA_PROV_EVENT_LID_CHANGE,
	VRDMA_PROV_EVENT_PKEY_CHANGE,
	VRDMA_PROV_EVENT_SM_CHANGE,
	VRDMA_PROV_EVENT_SRQ_ERR,
	VRDMA_PROV_EVENT_SRQ_LIMIT_REACHED,
	VRDMA_PROV_EVENT_QP_LAST_WQE_REACHED,
	VRDMA_PROV_EVENT_CLIENT_REREGISTER,
	VRDMA_PROV_EVENT_GID_CHANGE,
	VRDMA_PROV_EVENT_WQ_FATAL,
};

/*
 * One event of the event virtqueue (struct virtio_rdma_event). The object
 * is named either by its cookie (what was given at creation) or, when the
 * provider leaves cookie NULL, by id: cqn (CQ_ERR), the 24-bit QPN (QP
 * events), srqn (SRQ events); the verbs layer then looks the object up
 * among the live objects of the context and drops the event if none
 * matches (the object was destroyed: spec.md "Delivery"). Port events (and
 * GID_CHANGE) carry port 1 and no object.
 */
struct vibv_prov_async_event {
	uint32_t type;  /* enum vibv_prov_event_type */
	void *cookie;   /* the CQ / QP / SRQ cookie, or NULL: see id */
	uint32_t id;    /* cqn / qpn / srqn when cookie is NULL */
	uint32_t port;  /* port events: 1 */
};

struct vibv_prov_ops {
	const char *name;

	/* --- devices --- */

	/* Fill up to max entries of devs. Returns how many devices exist
	 * (0 is fine) or -errno. Called by every ibv_get_device_list(). */
	int (*discover)(struct vibv_prov_dev_info *devs, int max);
	/* Connect to a discovered device. */
	int (*open)(const struct vibv_prov_dev_info *info,
		    struct vibv_prov_dev **dev);
	/* Disconnect; every object of dev was destroyed before. */
	void (*close)(struct vibv_prov_dev *dev);
	/* attr and mac (zero if unknown). */
	int (*query_device)(struct vibv_prov_dev *dev,
			    struct vrdma_device_attr *attr, uint8_t mac[6]);
	int (*query_port)(struct vibv_prov_dev *dev,
			  struct vibv_prov_port_attr *attr);
	/* -ENODATA for an empty entry below gid_tbl_len, -EINVAL beyond. */
	int (*query_gid)(struct vibv_prov_dev *dev, uint32_t index,
			 struct vibv_prov_gid *gid);
	/* Destination MAC of a unicast GID that is not link-local EUI-64 (the
	 * verbs layer derives those and multicast MACs itself). NULL or
	 * -EOPNOTSUPP leaves dmac zero: the device resolves. */
	int (*resolve_dmac)(struct vibv_prov_dev *dev, const uint8_t dgid[16],
			    uint32_t sgid_index, uint8_t dmac[6]);
	/* vrdma extension: an fd readable while an async event is pending, or
	 * -errno (the verbs layer then gives the application an fd that never
	 * fires). Owned by the provider; must not be O_NONBLOCK (applications
	 * may set that themselves). */
	int (*async_fd)(struct vibv_prov_dev *dev);
	/* Dequeue one event without blocking: 0, or -EAGAIN if none. */
	int (*get_async_event)(struct vibv_prov_dev *dev,
			       struct vibv_prov_async_event *ev);
	/* vrdma extension: QUERY_PKEY (27). index < max_pkeys; *pkey in host
	 * order (0xffff at index 0). NULL: the verbs layer answers 0xffff
	 * for index 0 itself. */
	int (*query_pkey)(struct vibv_prov_dev *dev, uint32_t index,
			  uint16_t *pkey);
	/* vrdma extension: a command of the device's connection manager
	 * (VIRTIO_NET_CTRL_ROCE_CM_*): 0 with out_len bytes of ack data, or
	 * -errno (the CM's status, or the command's failure). */
	int (*cm_cmd)(struct vibv_prov_dev *dev, uint8_t cmd, const void *in,
		      size_t in_len, void *out, size_t out_len);

	/* --- protection domains, memory regions --- */

	int (*create_pd)(struct vibv_prov_dev *dev, uint32_t *pdn);
	int (*destroy_pd)(struct vibv_prov_dev *dev, uint32_t pdn);
	/* Register [addr, addr + length) of this process, seen by the device at
	 * I/O address iova; access is VIRTIO_IB_ACCESS_*. The provider makes
	 * the range shared with the device (REG_USER_MR). */
	int (*reg_mr)(struct vibv_prov_dev *dev, uint32_t pdn, void *addr,
		      uint64_t length, uint64_t iova, uint32_t access,
		      struct vibv_prov_mr *mr);
	int (*dereg_mr)(struct vibv_prov_dev *dev, uint32_t mrn);
	/* vrdma extension: memory windows (ALLOC_MW 23, DEALLOC_MW 24).
	 * mw_type VRDMA_PROV_MW_TYPE_1 / _2; *mwn and *rkey: the handle and
	 * the initial (unbound) key. Binding is a send WR (BIND_MW). */
	int (*alloc_mw)(struct vibv_prov_dev *dev, uint32_t pdn,
			uint32_t mw_type, uint32_t *mwn, uint32_t *rkey);
	int (*dealloc_mw)(struct vibv_prov_dev *dev, uint32_t mwn);

	/* --- completion queues --- */

	int (*create_cq)(struct vibv_prov_dev *dev, uint32_t cqe, void *cookie,
			 struct vibv_prov_cq **cq,
			 struct vibv_prov_cq_info *info);
	int (*destroy_cq)(struct vibv_prov_cq *cq);
	/* Up to n completions into wc. Returns how many (0 = empty) or -errno. */
	int (*poll_cq)(struct vibv_prov_cq *cq, struct vrdma_wc *wc, int n);
	/* REQ_NOTIFY_CQ; flags VIRTIO_IB_NOTIFY_*. */
	int (*arm_cq)(struct vibv_prov_cq *cq, uint32_t flags);
	/* Clear the pending event of the CQ (non-blocking). Returns 1 if one
	 * was pending, 0 if not (another thread took it, or it had nothing
	 * left to poll and the CQ was armed again), or -errno. */
	int (*cq_consume_event)(struct vibv_prov_cq *cq);
	/* vrdma extension: RESIZE_CQ (25) plus the ring replacement of
	 * spec.md "Resizing CQs and QPs". cqe: requested in, actual (>=
	 * requested) out. Completions are neither lost nor reordered; a CQ
	 * holding more than the new size fails -EINVAL and keeps its size. */
	int (*resize_cq)(struct vibv_prov_cq *cq, uint32_t *cqe);

	/* --- queue pairs --- */

	int (*create_qp)(struct vibv_prov_dev *dev,
			 const struct vibv_prov_qp_init *init, void *cookie,
			 struct vibv_prov_qp **qp,
			 struct vibv_prov_qp_info *info);
	/* MODIFY_QP; mask is VIRTIO_IB_QP_*. */
	int (*modify_qp)(struct vibv_prov_qp *qp,
			 const struct vrdma_qp_attr *attr, uint32_t mask);
	/* QUERY_QP; fills at least the fields of mask. */
	int (*query_qp)(struct vibv_prov_qp *qp, uint32_t mask,
			struct vrdma_qp_attr *attr);
	int (*destroy_qp)(struct vibv_prov_qp *qp);
	/* vrdma extension: RESIZE_QP (26), what ibv_modify_qp with IBV_QP_CAP
	 * becomes (alone: the verbs layer issues it separately from, and
	 * before, any other attribute of the same call). cap: requested in
	 * (max_send_sge, max_recv_sge, max_inline_data unchanged from the QP's;
	 * max_recv_wr 0 with an SRQ), actual out. -EINVAL for what the device
	 * refuses, -EBUSY when growing needs a ring replacement while requests
	 * are outstanding. */
	int (*resize_qp)(struct vibv_prov_qp *qp, struct vrdma_qp_cap *cap);
	/* Post n WRs in order. Returns how many were posted (== n, or fewer
	 * when WR number <return> was refused) or -errno if the first was. */
	int (*post_send)(struct vibv_prov_qp *qp,
			 const struct vrdma_send_wr *wr, unsigned int n);
	int (*post_recv)(struct vibv_prov_qp *qp,
			 const struct vrdma_recv_wr *wr, unsigned int n);
	/* vrdma extension: multicast groups (GID as raw bytes). */
	int (*attach_mcast)(struct vibv_prov_qp *qp, const uint8_t gid[16]);
	int (*detach_mcast)(struct vibv_prov_qp *qp, const uint8_t gid[16]);

	/* --- shared receive queues (vrdma extension) --- */

	/* attr: requested in (max_wr, max_sge; srq_limit ignored: an SRQ is
	 * created unarmed), actual out (and srqn). */
	int (*create_srq)(struct vibv_prov_dev *dev, uint32_t pdn,
			  struct vibv_prov_srq_attr *attr, void *cookie,
			  struct vibv_prov_srq **srq);
	/* MODIFY_SRQ; mask VRDMA_PROV_SRQ_LIMIT (srq_limit 0 disarms, else
	 * arms; > max_wr: -EINVAL). */
	int (*modify_srq)(struct vibv_prov_srq *srq,
			  const struct vibv_prov_srq_attr *attr, uint32_t mask);
	/* QUERY_SRQ: max_wr, max_sge, srq_limit (0 once its event fired). */
	int (*query_srq)(struct vibv_prov_srq *srq,
			 struct vibv_prov_srq_attr *attr);
	/* -EBUSY while a QP uses it. Requests left on it are dropped without
	 * completion; its pending events are dropped. */
	int (*destroy_srq)(struct vibv_prov_srq *srq);
	/* Post n receive WRs to the SRQ's virtqueue (same return as
	 * post_recv). Completions come on the receive CQ of whichever QP took
	 * the request, with that QP's qp_num. */
	int (*post_srq_recv)(struct vibv_prov_srq *srq,
			     const struct vrdma_recv_wr *wr, unsigned int n);

	/* --- address handles --- */

	int (*create_ah)(struct vibv_prov_dev *dev, uint32_t pdn,
			 const struct vrdma_ah_attr *attr, uint32_t *ah);
	int (*destroy_ah)(struct vibv_prov_dev *dev, uint32_t pdn, uint32_t ah);
};

/* The real device (libvrdma). */
extern const struct vibv_prov_ops vibv_prov_vrdma_ops;
/* The provider the test build of the library uses instead of the real one
 * (tests/fake/: the fake device, when its environment asks for it), or NULL.
 * Defined only in the test build; the shipped library has no definition
 * and never calls it. */
const struct vibv_prov_ops *vibv_prov_test_select(void)
	__attribute__((weak, visibility("hidden")));

/* ------------------------------------------------------------------------ */
/* Helpers shared by providers and the verbs layer                           */
/* ------------------------------------------------------------------------ */

/* Modified EUI-64 of a MAC (RFC 4291 appendix A): the node GUID and the
 * interface identifier of the link-local GID. */
static inline void vibv_prov_eui64(const uint8_t mac[6], uint8_t eui[8])
{
	eui[0] = mac[0] ^ 0x02;
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
}

/* The link-local GID fe80::<EUI-64 of mac> (GID index 0 of a RoCE port). */
static inline void vibv_prov_gid_from_mac(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	vibv_prov_eui64(mac, gid + 8);
}

/* The IPv4-mapped GID ::ffff:a.b.c.d of an address in network byte order
 * (as 4 bytes). */
static inline void vibv_prov_gid_from_ipv4(const uint8_t addr[4], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

#endif /* VRDMA_VERBS_PROVIDER_H */
