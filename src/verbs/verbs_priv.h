/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals of vrdma's libibverbs.so.1 (src/verbs): the objects behind the
 * application's struct ibv_* pointers, and helpers shared by the files of
 * the verbs layer. Nothing here is exported (the version script hides every
 * symbol it does not list, and these are also hidden at compile time so
 * internal calls bind directly).
 *
 * Files by role:
 *   device.c     device list, open/close, query device/port/GID/P_Key,
 *                async events, sysfs helpers
 *   pd_mr.c      protection domains, memory regions, fork
 *   cq.c         completion channels, CQs, poll / arm / CQ events
 *   cq_ex.c      extended CQs (ibv_create_cq_ex, start/next/end poll),
 *                completion timestamps, ibv_query_rt_values_ex
 *   qp.c         QPs, SRQs, post send/recv, multicast, ECE
 *   qp_ex.c      ibv_create_qp_ex and the ibv_wr_* work-request builder
 *   domain.c     thread domains, parent domains, ibv_advise_mr
 *   mw.c         memory windows (alloc, dealloc, ibv_bind_mw)
 *   ah.c         address handles, AH from a work completion, L2 resolution
 *   strings.c    *_str() and rate conversions
 *   marshall.c   ibv_copy_*_from_kern / _to_kern (librdmacm's)
 *   private.c    IBVERBS_PRIVATE_34 and import entry points (stubs)
 *   provider_vrdma.c  the provider (see provider.h; tests/fake/ the fake one)
 *
 * Device identity (what ibv_devinfo shows):
 *   vendor_id 0x1af4 (the virtio PCI vendor, Red Hat), vendor_part_id 0x1041
 *   (the virtio-net PCI device id): neither Mellanox nor Amazon, so perftest
 *   drives the device with the classic ibv_post_send API and plain CQs.
 *   node GUID = sys_image GUID = modified EUI-64 of the device MAC.
 */
#ifndef VRDMA_VERBS_PRIV_H
#define VRDMA_VERBS_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "verbs/provider.h"

#define VRDMA_HIDDEN __attribute__((visibility("hidden")))

#define VRDMA_VERBS_VENDOR_ID      0x1af4
#define VRDMA_VERBS_VENDOR_PART_ID 0x1041
#define VRDMA_VERBS_FW_VER         "vrdma-0.1"
#define VRDMA_VERBS_PORT           1
#define VRDMA_VERBS_COMP_VECTORS   1
#define VRDMA_VERBS_MAX_PKEYS      1
#define VRDMA_VERBS_DEFAULT_PKEY   0xffff
/* Below this many WRs a post is translated on the stack in one batch. */
#define VRDMA_VERBS_POST_BATCH     16

#define vibv_container_of(ptr, type, member)                                  \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* A device found by ibv_get_device_list(); lives until the process exits
 * (applications may keep struct ibv_device pointers after freeing the list
 * while a context is open). */
struct vibv_device {
	struct ibv_device ibdev;
	const struct vibv_prov_ops *ops;
	struct vibv_prov_dev_info info;
	int index;       /* order of discovery, for ibv_get_device_index */
	bool present;    /* seen by the last discovery */
};

/*
 * Live CQs, QPs and SRQs of a context, so that an asynchronous event naming
 * an object by number (cqn / qpn / srqn, struct vibv_prov_async_event.id)
 * finds its object. Linked into the context's list under obj_lock from
 * creation until destruction starts; an event found through the list is
 * counted on its object while obj_lock is held, so the destroying thread
 * sees the count once it has unlinked the object.
 */
enum vibv_obj_kind { VRDMA_OBJ_CQ, VRDMA_OBJ_QP, VRDMA_OBJ_SRQ };

struct vibv_obj {
	struct vibv_obj *next;
	uint8_t kind;     /* enum vibv_obj_kind */
	uint32_t num;     /* cqn / qpn / srqn */
};

/* A type 1 window bind posted with ibv_bind_mw and not completed yet:
 * poll_cq sets mw->rkey = rkey when its successful completion (qp_num,
 * wr_id) is polled and forgets it on an error completion. */
struct vibv_pdom;

struct vibv_bind {
	struct vibv_bind *next;
	uint32_t qp_num;
	uint64_t wr_id;
	struct ibv_mw *mw;
	uint32_t rkey;
};

/* An open device: what struct ibv_context * points into. */
#define VRDMA_VERBS_HELD 64

struct vibv_context {
	struct vibv_device *dev;
	const struct vibv_prov_ops *ops;
	struct vibv_prov_dev *prov;
	int own_async_fd; /* our never-firing eventfd when the provider has none */
	/* The device's capabilities, read once at open (zero if the query
	 * failed): what the extension checks look at. */
	struct vrdma_device_attr caps;
	pthread_mutex_t obj_lock;        /* objs and binds */
	struct vibv_obj *objs;
	struct vibv_bind *binds;  /* oldest first */
	unsigned int nbinds;             /* atomic; poll_cq's fast-path test */
	struct vibv_pdom *pdoms;  /* parent domains (domain.c), obj_lock */
	/* Async events read by librdmacm's thread while it waited for the
	 * device's CM (vrdma_ibv_cm_pending), kept for ibv_get_async_event;
	 * obj_lock. Beyond VRDMA_VERBS_HELD the oldest are dropped. */
	struct vibv_prov_async_event held[VRDMA_VERBS_HELD];
	unsigned int held_head, held_len;
	struct verbs_context vctx; /* ibv_context last, as verbs_context wants */
};

struct vibv_cq {
	union {
		struct ibv_cq ibcq;
		struct ibv_cq_ex ibcq_ex; /* starts with struct ibv_cq's fields */
	};
	struct vibv_obj obj;
	const struct vibv_prov_ops *ops;
	struct vibv_prov_cq *prov;
	int event_fd;                     /* provider's, watched by the channel */
	uint32_t comp_events_delivered;   /* under ibcq.mutex */
	uint32_t async_events_delivered;  /* under ibcq.mutex */
	/* Extended CQs (cq_ex.c): the IBV_WC_EX_WITH_* flags asked for, the
	 * completion start_poll / next_poll stands on and when it was read. */
	bool extended;
	bool single_threaded;
	uint64_t wc_flags;
	pthread_mutex_t poll_lock; /* start_poll .. end_poll */
	struct vrdma_wc cur;
	uint64_t cur_ts_ns;        /* CLOCK_MONOTONIC */
	uint64_t cur_wallclock_ns; /* CLOCK_REALTIME */
};

struct vibv_qpx_batch;

struct vibv_qp {
	union {
		struct ibv_qp ibqp;
		struct ibv_qp_ex ibqpx; /* starts with struct ibv_qp */
	};
	struct vibv_obj obj;
	const struct vibv_prov_ops *ops;
	struct vibv_prov_qp *prov;
	bool sq_sig_all;
	struct vrdma_qp_cap cap; /* in force (create, resize) */
	pthread_mutex_t cap_lock;     /* cap, for ibv_modify_qp(IBV_QP_CAP) */
	uint32_t events_delivered; /* under ibqp.mutex */
	/* QPs of ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
	 * (qp_ex.c): the ibv_wr_* batch being built. */
	bool has_qpx;
	uint64_t send_ops_flags;
	struct vibv_qpx_batch *batch;
};

struct vibv_srq {
	struct ibv_srq ibsrq;
	struct vibv_obj obj;
	const struct vibv_prov_ops *ops;
	struct vibv_prov_srq *prov;
	uint32_t events_delivered; /* under ibsrq.mutex */
};

/* PDs, MRs and AHs need nothing beyond the libibverbs structure: handle is
 * the device's pdn / mrn / AH number. */

static inline struct vibv_context *vibv_ctx(struct ibv_context *ibctx)
{
	return vibv_container_of(ibctx, struct vibv_context, vctx.context);
}

static inline struct vibv_cq *vrdma_cq(struct ibv_cq *ibcq)
{
	return vibv_container_of(ibcq, struct vibv_cq, ibcq);
}

static inline struct vibv_qp *vrdma_qp(struct ibv_qp *ibqp)
{
	return vibv_container_of(ibqp, struct vibv_qp, ibqp);
}

static inline struct vibv_srq *vrdma_srq(struct ibv_srq *ibsrq)
{
	return vibv_container_of(ibsrq, struct vibv_srq, ibsrq);
}

/* The one mapping of an error below (a provider's / libvrdma's negative
 * errno) to the verbs layer's: sets errno = -neg (neg < 0) and returns the
 * positive errno, for verbs that return one; verbs that return NULL or -1
 * call it for errno alone. */
static inline int vibv_errno(int neg)
{
	errno = -neg;
	return -neg;
}

/* Calls an optional provider control operation: -EOPNOTSUPP when absent. */
#define VRDMA_PROV_CALL(ops, op, ...)                                          \
	((ops)->op ? (ops)->op(__VA_ARGS__) : -EOPNOTSUPP)

/* Exported, but declared in rdma-core's private driver.h, not installed. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid);

/* --- device.c --- */

/* After a blocking wait failed with EINTR: true if rdma-core's read() of
 * its event fd would have been restarted, i.e. every caught signal has
 * SA_RESTART (epoll_wait and poll never restart). The blocking event calls
 * then wait again; otherwise they return -1 with errno EINTR, so a handler
 * installed without SA_RESTART (qperf's SIGALRM) ends the wait as it would
 * with rdma-core. Which signal arrived is not known, so any one handler
 * without SA_RESTART counts. */
VRDMA_HIDDEN bool vibv_wait_restarts(void);

/* The provider of this process: libvrdma's, or in the test build the one
 * vibv_prov_test_select() names. */
VRDMA_HIDDEN const struct vibv_prov_ops *vibv_provider(void);

/* Port attributes in libibverbs terms; 0 or a positive errno. */
VRDMA_HIDDEN int vibv_query_port(struct ibv_context *ibctx, uint8_t port,
					struct ibv_port_attr *attr);

/* GID entry in libibverbs terms: 0, ENODATA for an empty entry, EINVAL. */
VRDMA_HIDDEN int vibv_query_gid_entry(struct ibv_context *ibctx,
					     uint32_t port, uint32_t index,
					     struct ibv_gid_entry *entry);

/* The IB MTU enum for a netdev MTU of mtu bytes (RoCE v2 headers taken off). */
VRDMA_HIDDEN enum ibv_mtu vibv_mtu_from_netdev(uint32_t mtu);

/* Object registry (see struct vibv_obj). */
VRDMA_HIDDEN void vibv_obj_add(struct vibv_context *ctx,
				      struct vibv_obj *obj, uint8_t kind,
				      uint32_t num);
VRDMA_HIDDEN void vibv_obj_del(struct vibv_context *ctx,
				      struct vibv_obj *obj);

/* Whether the device reported a VIRTIO_IB_DEVICE_* capability bit. */
static inline bool vibv_has_cap(const struct vibv_context *ctx,
				       uint64_t bit)
{
	return (ctx->caps.device_cap_flags & bit) != 0;
}

/* --- pd_mr.c --- */

/* Access flags of libibverbs (reg_mr, QP access) as VIRTIO_IB_ACCESS_*:
 * 0 or a positive errno. */
VRDMA_HIDDEN int vibv_access(unsigned int ibv_access, uint32_t *out);
/* VIRTIO_IB_ACCESS_* back to libibverbs flags. */
VRDMA_HIDDEN unsigned int vibv_access_to_ibv(uint32_t access);

/* --- cq.c --- */

VRDMA_HIDDEN int vibv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
/* A new CQ (the part ibv_create_cq and ibv_create_cq_ex share), or NULL
 * with errno set. */
VRDMA_HIDDEN struct vibv_cq *vibv_cq_create(struct ibv_context *ibctx,
							  int cqe, void *cq_context,
							  struct ibv_comp_channel *channel,
							  int comp_vector);
/* One device completion as a struct ibv_wc. */
VRDMA_HIDDEN void vibv_wc_to_ibv(const struct vrdma_wc *p, struct ibv_wc *wc);
/* Window binds completed by the n completions of wc (see vibv_bind). */
VRDMA_HIDDEN void vibv_binds_complete(struct vibv_context *ctx,
					     const struct ibv_wc *wc, int n);

/* --- cq_ex.c --- */

VRDMA_HIDDEN struct ibv_cq_ex *vibv_create_cq_ex(struct ibv_context *ibctx,
							struct ibv_cq_init_attr_ex *attr);
VRDMA_HIDDEN int vibv_query_rt_values(struct ibv_context *ibctx,
					     struct ibv_values_ex *values);
/* The device clock of completion timestamps: kHz, and the valid bits. */
#define VRDMA_VERBS_CORE_CLOCK_KHZ 1000000ull /* nanoseconds */
#define VRDMA_VERBS_TIMESTAMP_MASK UINT64_MAX
VRDMA_HIDDEN int vibv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
/* Pending ibv_bind_mw binds: forget those of a QP (destroyed) or of a
 * window (deallocated); either pointer may be NULL. */
VRDMA_HIDDEN void vibv_binds_forget(struct vibv_context *ctx,
					   uint32_t qp_num, bool by_qp,
					   struct ibv_mw *mw);

/* --- qp.c --- */

VRDMA_HIDDEN int vibv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				       struct ibv_send_wr **bad_wr);
VRDMA_HIDDEN int vibv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
				       struct ibv_recv_wr **bad_wr);
VRDMA_HIDDEN int vibv_post_srq_recv(struct ibv_srq *ibsrq,
					   struct ibv_recv_wr *wr,
					   struct ibv_recv_wr **bad_wr);
/* Window rights (IBV_ACCESS_REMOTE_*) as VIRTIO_IB_ACCESS_*: 0 or a
 * positive errno. */
VRDMA_HIDDEN int vibv_mw_access(unsigned int ibv_access, uint32_t *out);
VRDMA_HIDDEN struct ibv_srq *vibv_create_srq_ex(struct ibv_context *ibctx,
						       struct ibv_srq_init_attr_ex *attr);
/* One send WR as the device's (the checks of ibv_post_send): 0 or a
 * positive errno. */
VRDMA_HIDDEN int vibv_send_wr(const struct vibv_context *ctx,
				     enum ibv_qp_type type, const struct ibv_send_wr *wr,
				     struct vrdma_send_wr *out);
/* A QP of ibv_create_qp / ibv_create_qp_ex (init->comp_mask PD only used
 * plus the basic fields), or NULL with errno set. */
VRDMA_HIDDEN struct vibv_qp *vibv_qp_create(struct ibv_pd *pd,
							  struct ibv_qp_init_attr *attr);

/* --- qp_ex.c --- */

VRDMA_HIDDEN struct ibv_qp *vibv_create_qp_ex(struct ibv_context *ibctx,
						     struct ibv_qp_init_attr_ex *attr);
/* Frees what the ibv_wr_* builder of a QP holds. */
VRDMA_HIDDEN void vibv_qpx_free(struct vibv_qp *qp);

/* --- domain.c --- */

VRDMA_HIDDEN struct ibv_td *vibv_alloc_td(struct ibv_context *ibctx,
						 struct ibv_td_init_attr *attr);
VRDMA_HIDDEN int vibv_dealloc_td(struct ibv_td *td);
VRDMA_HIDDEN struct ibv_pd *vibv_alloc_parent_domain(
	struct ibv_context *ibctx, struct ibv_parent_domain_init_attr *attr);
/* Whether pd is a parent domain; if so, frees it (ibv_dealloc_pd). */
VRDMA_HIDDEN bool vibv_parent_domain_free(struct ibv_pd *pd, int *ret);
VRDMA_HIDDEN int vibv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
				       uint32_t flags, struct ibv_sge *sg_list,
				       uint32_t num_sges);

/* --- mw.c --- */

VRDMA_HIDDEN struct ibv_mw *vibv_alloc_mw(struct ibv_pd *pd,
						 enum ibv_mw_type type);
VRDMA_HIDDEN int vibv_dealloc_mw(struct ibv_mw *mw);
VRDMA_HIDDEN int vibv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
				     struct ibv_mw_bind *mw_bind);

/* --- ah.c --- */

/* An ibv_ah_attr as the device's address vector (GRH mandatory on RoCE,
 * port 1, destination MAC resolved). 0 or a positive errno. */
VRDMA_HIDDEN int vibv_ah_attr(struct vibv_context *ctx,
				     const struct ibv_ah_attr *in,
				     struct vrdma_ah_attr *out);
/* The device's address vector back in libibverbs terms. */
VRDMA_HIDDEN void vibv_ah_attr_to_ibv(const struct vrdma_ah_attr *in,
					     struct ibv_ah_attr *out);

#endif /* VRDMA_VERBS_PRIV_H */
