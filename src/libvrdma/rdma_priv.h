/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma RDMA part (private): the per-device shadow of every RDMA object
 * the library created on the device, and the CQ / QP objects with their
 * virtqueues. Public API: include/vrdma/vrdma_rdma.h.
 *
 * Files:
 *   rdma_dev.c  per-device state, command helper, QUERY_DEVICE/PORT, GIDs,
 *               PDs, AHs, statistics, teardown on close
 *   rdma_mr.c   memory regions (vrdma_mem_share + REG_USER_MR, DMA MR)
 *   rdma_cq.c   completion queues: CREATE_CQ + completion virtqueue, poll,
 *               arm, events
 *   rdma_qp.c   queue pairs: CREATE_QP + send/receive virtqueues, modify,
 *               query, post send / receive, resize; the work queues shared
 *               with SRQs
 *   rdma_srq_event.c  extension objects: SRQs, fast-registration MRs, memory
 *               windows, P_Key query, the event virtqueue and async events
 *   virtio_rdma.c  the virtio-rdma device model (virtio id 42): its
 *               commands, virtqueue layout and queue elements behind the
 *               same objects (struct vrdma_model below)
 *
 * Locking: the shadow tables and every command are under the device lock
 * (dev->lock, recursive: vrdma_ctrl_cmd takes it again). A CQ's virtqueue is
 * under cq->lock, a QP's send and receive virtqueues under their own
 * wq->lock (spinlocks: held for a few hundred ns, never across a system
 * call other than an eventfd write). Lock order: device lock, then a queue
 * lock.
 */
#ifndef VRDMA_LIBVRDMA_RDMA_PRIV_H
#define VRDMA_LIBVRDMA_RDMA_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "libvrdma/dev.h"
#include "vrdma/vrdma_rdma.h"

/* Net queue pairs (N of the virtqueue layout): libvrdma never uses MQ. */
#define VRDMA_RDMA_NET_PAIRS 1
/* Largest GID table we shadow (the device reports 16). */
#define VRDMA_RDMA_MAX_GIDS 256
/* Completion buffer size (struct virtio_rdma_cq_req). */
#define VRDMA_CQE_SIZE sizeof(struct virtio_rdma_cq_req)
/* A CQ's ring is at most the largest split virtqueue; a larger CQ leaves
 * the rest to the device's backlog (docs/spec.md "Resource model"). */
#define VRDMA_CQ_RING_MAX 32768u
/* The largest capacity this library asks for (a power of two). */
#define VRDMA_CQ_MAX (1u << 20)

struct vrdma_rdma_pd {
	bool live;
	uint32_t refs;            /* MRs, QPs and AHs using it */
};

struct vrdma_rdma_mr {
	bool live;
	bool dma;                 /* GET_DMA_MR */
	bool mw;                  /* a memory window (ALLOC_MW), not an MR */
	uint8_t mw_type;
	uint32_t pdn;
	uint32_t lkey, rkey;
	struct vrdma_mem_share *sh; /* the shared pages (user MRs) */
	/* ALLOC_MR: the page list REG_MR points the device at (shm) */
	le64 *pages;
	uint32_t max_num_sg;      /* 0: not a fast-registration MR */
};

struct vrdma_rdma_ah {
	bool live;
	uint32_t pdn;
	struct vrdma_ah_attr av;  /* virtio-rdma: kept here, sent in each UD WR */
};

struct vrdma_rdma_gid {
	bool valid;
	uint8_t raw[16];
};

struct vrdma_rdma;
struct vrdma_qp;

/*
 * A device model: what differs between the virtio-net RoCE device and the
 * virtio-rdma device (docs/design.md "libvrdma device models"). The objects,
 * checks and queue bookkeeping above are shared; a model encodes commands
 * (given as the virtio-net RoCE command and structures, host semantics),
 * places rings and encodes / decodes queue elements.
 */
struct vrdma_model {
	const char *name;
	/* Like vrdma_rdma_cmd: 0, 1 (refused), -errno; -EOPNOTSUPP for a
	 * command the model lacks (nothing sent). */
	int (*cmd)(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len, void *out,
		   size_t out_len);
	/* After the device and port attributes are known (or NULL). */
	int (*init)(struct vrdma_rdma *r);
	unsigned (*vq_cq)(const struct vrdma_rdma *r, uint32_t cqn);
	unsigned (*vq_sq)(const struct vrdma_rdma *r, uint32_t index);
	unsigned (*vq_rq)(const struct vrdma_rdma *r, uint32_t index);
	size_t (*sq_slot_size)(uint32_t max_send_sge, uint32_t max_inline_data);
	size_t (*rq_slot_size)(uint32_t max_recv_sge);
	/* REG_MR: make the page list known to the device before the WR is
	 * queued (or NULL). Device lock held. 0 or -EINVAL. */
	int (*reg_mr_map)(struct vrdma_qp *qp, const struct vrdma_send_wr *wr, const le64 *pages);
	/* A validated send WR into slot; returns the element's length. */
	uint32_t (*sq_encode)(const struct vrdma_qp *qp, uint8_t *slot,
			      const struct vrdma_send_wr *wr, uint64_t len, const le64 *pages);
	uint32_t (*rq_encode)(uint8_t *slot, const struct vrdma_recv_wr *wr);
	uint32_t cqe_size;        /* bytes of one completion element */
	void (*cq_decode)(const void *b, struct vrdma_wc *wc);
};

extern const struct vrdma_model vrdma_model_net_roce;
extern const struct vrdma_model vrdma_model_virtio_rdma;

/* The RDMA state of one device (dev->rdma), created by the first RDMA call. */
struct vrdma_rdma {
	struct vrdma_dev *dev;
	const struct vrdma_model *model;
	struct vrdma_device_attr attr;
	uint32_t gid_tbl_len;
	uint32_t max_msg_sz;
	uint32_t ncq_rings;       /* M */
	uint32_t nqp_rings;       /* L */

	/* shadow tables, indexed by the device's handle */
	struct vrdma_rdma_pd *pds;
	uint32_t pds_cap, npds;
	struct vrdma_rdma_mr *mrs;
	uint32_t mrs_cap, nmrs;
	struct vrdma_rdma_ah *ahs;
	uint32_t ahs_cap, nahs;
	struct vrdma_cq **cqs;    /* M entries, by cqn */
	uint32_t ncqs;
	struct vrdma_qp **qps;    /* L entries, by QP index */
	uint32_t nqps;            /* not counting GSI */
	struct vrdma_rdma_gid *gids; /* gid_tbl_len entries; 0 and 1 unused */
	bool ipv4_known;
	uint8_t ipv4[4];
	uint8_t ipv6_at_open[16];   /* QUERY_PORT gid2_ipv6 (GID 2 preset) */

	/* virtio-rdma: QUERY_PORT's per-port attributes (last answer) */
	struct vrdma_port_attr vrd_port;

	/* extension (VIRTIO_NET_F_ROCE_EXT) */
	bool ext;
	uint32_t nsrq_rings;      /* S */
	struct vrdma_srq **srqs;  /* S entries, by srqn */
	uint32_t nsrqs, nmws;
	uint16_t pkey_tbl_len;
	struct vrdma_queue *evq;  /* event virtqueue, or NULL */
	struct virtio_rdma_event *ev_bufs; /* evq->num buffers (shm) */
	size_t ev_bufs_bytes;
	int ev_epfd;              /* vrdma_event_fd, or -1 */
	struct vrdma_async_event *evs; /* read, not yet handed out (FIFO) */
	uint32_t evs_head, evs_len, evs_cap;
	uint64_t events, bad_events;

	/* counters (dead queues' data-path counters are folded in) */
	uint64_t cmds, cmd_errors;
	uint64_t send_wrs, recv_wrs, wcs, sq_full, rq_full, bad_wcs;
	uint64_t dropped_wcs;     /* of destroyed CQs: completions of gone QPs */
};

/* Whether the device reported capability bit cap (VIRTIO_IB_DEVICE_*). */
static inline bool vrdma_rdma_cap(const struct vrdma_rdma *r, uint64_t cap)
{
	return r->ext && (r->attr.device_cap_flags & cap);
}

/*
 * Yields of an empty CQ's poll (docs/performance.md "Spinning programs on a
 * busy machine"). A yield of VRDMA_CQ_YIELD_LONG_NS or more gave another
 * program a time slice. If the CQ then had fewer than VRDMA_CQ_YIELD_BATCH
 * of its work queued (completions waiting plus send WRs outstanding on its
 * QPs), it waits for single messages and each such yield costs it a slice:
 * it spins without yielding, as long as that yield lasted and doubling
 * while such yields repeat, up to VRDMA_CQ_SPIN_MAX_NS. With more queued
 * the yield was the device's time for that queue: yields go on.
 * Inside a window one wait spins at most VRDMA_CQ_SPIN_WAIT_NS. A wait that
 * spins that long likely waits for a peer or the daemon on this very CPU:
 * the window closes and none opens for VRDMA_CQ_CALM_NS, doubling for each
 * such wait in a row, up to VRDMA_CQ_CALM_MAX_NS.
 */
#define VRDMA_CQ_YIELD_LONG_NS 200000u
#define VRDMA_CQ_YIELD_BATCH 4u
#define VRDMA_CQ_SPIN_MAX_NS 20000000u
#define VRDMA_CQ_SPIN_WAIT_NS 100000u
#define VRDMA_CQ_CALM_NS 1000000u
#define VRDMA_CQ_CALM_MAX_NS 1000000000u

/* The yield policy's state (under the CQ lock). */
struct vrdma_cq_spin {
	uint64_t window_ns;     /* the last window */
	uint64_t calm_until_ns; /* no window opens before */
	uint32_t spun_out;      /* waits in a row that spun out their budget */
};

/* After a yield of VRDMA_CQ_YIELD_LONG_NS or more, or one that ended a
 * wait's spin inside a window (spun_out): it ended at end_ns, lasted
 * yield_ns and found queued units of work. Returns when the window now
 * open ends (0: none). */
uint64_t vrdma_cq_spin_yielded(struct vrdma_cq_spin *s, uint64_t end_ns, uint64_t yield_ns,
			       uint32_t queued, bool spun_out);

struct vrdma_cq {
	struct vrdma_dev *dev;
	const struct vrdma_model *model;
	uint32_t cqn;
	uint32_t cqe;             /* capacity (the device's cqe), a power of two */
	uint32_t num;             /* ring entries = buffers: min(cqe, VRDMA_CQ_RING_MAX) */
	struct vrdma_queue *q;
	struct virtio_rdma_cq_req *bufs; /* num buffers (shm) */
	size_t bufs_bytes;
	uint32_t refs;            /* QPs using it (device lock) */
	pthread_spinlock_t lock;  /* the virtqueue and qtab */
	uint32_t empty_polls;     /* in a row */
	uint64_t spin_until_ns;   /* no yields before (vrdma_cq_poll) */
	uint64_t wait_from_ns;    /* this wait's first spin in a window; 0: none */
	struct vrdma_cq_spin spin;
	bool armed;               /* fast NEXT_COMPLETION arming pending */
	/* QPs using this CQ by QPN (open addressing, linear probing;
	 * changed under the device lock and this lock, read under this
	 * lock): completions retire the WRs of their work queue. */
	struct vrdma_qp **qtab;
	uint32_t qtab_size;       /* power of two, or 0 */
	uint64_t wcs, bad;
	uint64_t orphans;         /* completions of QPs no longer attached: dropped */
	uint64_t events_empty;    /* events with nothing to poll: not handed out */
	void *context;
	/* completions read from a replaced ring (vrdma_cq_resize), polled
	 * before the new ring's (cq->lock) */
	struct vrdma_wc *stash;
	uint32_t stash_head, stash_len;
};

/*
 * A send or receive work queue.
 *
 * Two bounds on posting, both of nslots WRs:
 *  - descriptors: a WR's descriptor (and slot) is in use until the device
 *    gives it back, which it does when the WR completed (reclaimed at the
 *    next post);
 *  - completions ("the log"): as on a hardware queue, a WR occupies its
 *    queue until its completion has been polled; an unsignaled send WR
 *    until a later completion of the send queue is polled. So the WRs of a
 *    queue never have more completions waiting in a CQ than the queue's
 *    capacity, and a CQ sized for its queues never overflows.
 * log_tail counts WRs posted (written under lock), log_head WRs retired by
 * polled completions (written under the CQ's lock); log_sig[i % nslots] says
 * whether send WR i asked for a completion.
 */
struct vrdma_wq_chunk {
	struct vrdma_wq_chunk *next;
	uint8_t *mem;             /* slots (shm) */
	size_t bytes;
};

/* (Slots come in chunks so that a resize grows the queue without moving the
 * slots of WRs in flight; the log is indexed modulo the ring size, which
 * never changes in place and is >= nslots.) */
struct vrdma_wq {
	struct vrdma_queue *q;
	const struct vrdma_model *model;
	struct vrdma_wq_chunk *chunks;
	size_t slot_size;
	uint32_t nslots;          /* = the capacity told to the device */
	uint32_t nalloc;          /* slots allocated (>= nslots) */
	/* free slots, ring-size entries, a FIFO of nfree from free_head: a send
	 * or receive queue's slots come back in posting order (an SRQ's need
	 * not), so each is reused in turn and the ring words pointing at it
	 * keep their values (vq_drv) */
	uint8_t **free;
	uint32_t free_head, nfree;
	uint32_t ring;            /* ring entries (power of two) */
	_Atomic uint32_t log_head, log_tail;
	uint8_t *log_sig;         /* send queue only; ring entries */
	bool no_log;              /* SRQ: bounded by descriptors only (a
				   * completion polled after its QP was
				   * destroyed could not be retired) */
	pthread_spinlock_t lock;
	uint64_t posted, full, bad;
};

/* WRs posted on wq and not yet retired. */
static inline uint32_t vrdma_wq_log_used(struct vrdma_wq *wq)
{
	return atomic_load(&wq->log_tail) - atomic_load(&wq->log_head);
}

/* A shared receive queue (extension). */
struct vrdma_srq {
	struct vrdma_dev *dev;
	uint32_t srqn;
	uint32_t pdn;
	uint32_t max_wr, max_sge;
	uint32_t refs;            /* QPs using it (device lock) */
	void *context;
	struct vrdma_wq wq;
};

struct vrdma_qp {
	struct vrdma_dev *dev;
	uint32_t qpn;
	uint32_t index;           /* vrdma_qpn_index(qpn) */
	uint32_t pdn;
	uint8_t type;
	bool sq_sig_all;
	struct vrdma_cq *send_cq, *recv_cq;
	struct vrdma_qp_cap cap;
	uint32_t max_msg_sz;
	uint32_t max_sge_rd;
	_Atomic uint8_t state;    /* last state set by modify / seen by query */
	struct vrdma_srq *srq;    /* extension: receives from it (rq unused) */
	void *context;
	struct vrdma_wq sq, rq;
};

/* The RDMA state of dev, created on first use (QUERY_DEVICE and QUERY_PORT
 * are sent then). Device lock held. Returns 0 and *out, -EOPNOTSUPP (no
 * RoCE), -ENOTCONN, -ENOMEM, or the command's error. */
int vrdma_rdma_get(struct vrdma_dev *dev, struct vrdma_rdma **out);

/* The preamble of every RDMA call: lock dev and get its state (as
 * vrdma_rdma_get). 0 with the device lock held, or the error with it
 * released (-EINVAL for a NULL dev). */
int vrdma_rdma_enter(struct vrdma_dev *dev, struct vrdma_rdma **r);
/* The same after the caller's argument checks: bad (any check failed) is
 * -EINVAL with nothing locked. */
int vrdma_rdma_enter_checked(struct vrdma_dev *dev, bool bad, struct vrdma_rdma **r);

/*
 * Send RoCE command cmd (device lock held). Returns 0 (VIRTIO_NET_OK, out
 * filled) or a negative errno: of the control queue, or for VIRTIO_NET_ERR
 * (refused, nothing changed) the command's errno (rdma_cmd_refused).
 */
int vrdma_rdma_cmd(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len,
		   void *out, size_t out_len);

/* Send command cls/cmd as it is (device lock held), counted: 0, 1 if the
 * device refused it (a model's cmd returns this; vrdma_rdma_cmd maps it), or a
 * negative errno of the control queue. */
int vrdma_rdma_cmd_raw(struct vrdma_rdma *r, uint8_t cls, uint8_t cmd, const void *in,
		       size_t in_len, void *out, size_t out_len);

/* Grow a shadow table (array of elem-byte entries, zero-filled) to hold
 * index idx. Returns 0 or -ENOMEM. */
int vrdma_rdma_table_reserve(void **tab, uint32_t *cap, size_t elem, uint32_t idx);

/*
 * The handle n a create command answered with, in shadow table *tab (its
 * entries start with `bool live`): 0 with slot n reserved and free, or
 * -EIO (n is 0, above max or in use: logged as "<cmd> returned bad
 * <field> n") / -ENOMEM, after the create was undone on the device with
 * command undo (undo_len bytes of undo_cmd). Device lock held.
 */
int vrdma_rdma_handle_take(struct vrdma_rdma *r, void **tab, uint32_t *cap, size_t elem,
			   uint32_t n, uint32_t max, const char *cmd, const char *field,
			   uint8_t undo, const void *undo_cmd, size_t undo_len);

/* The shadow table t of r as vrdma_rdma_handle_take() takes it. */
#define VRDMA_RDMA_TABLE(r, t) (void **)&(r)->t, &(r)->t##_cap, sizeof(*(r)->t)

/* One kind of object a destroy call removes by its handle. */
struct vrdma_rdma_kind {
	uint8_t destroy_cmd;      /* its command: one le32, the handle */
	/* 0 if it may go now, else the errno the call returns (or NULL) */
	int (*check)(struct vrdma_rdma *r, uint32_t handle, void *obj);
	/* forget it, once the device did */
	void (*drop)(struct vrdma_rdma *r, uint32_t handle, void *obj);
};

/*
 * The body of every destroy call: lock dev, check, send the kind's command
 * with handle, drop on success (obj: the caller's object, or NULL). 0, the
 * check's errno, or the command's (nothing changed then).
 */
int vrdma_rdma_destroy(struct vrdma_dev *dev, const struct vrdma_rdma_kind *k,
		       uint32_t handle, void *obj);

/* The admission of an object in PD pdn: -EINVAL if the PD is not live,
 * -ENOMEM if count objects reach max, else 0. */
int vrdma_rdma_pd_admit(const struct vrdma_rdma *r, uint32_t pdn, uint32_t count,
			uint32_t max);

/* Whether pdn is a live PD of r. */
static inline bool vrdma_rdma_pd_live(const struct vrdma_rdma *r, uint32_t pdn)
{
	return pdn && pdn < r->pds_cap && r->pds[pdn].live;
}

/* Address vector checks shared by CREATE_AH and MODIFY_QP (AV). Returns 0
 * or -EINVAL. */
int vrdma_rdma_check_av(const struct vrdma_rdma *r, const struct vrdma_ah_attr *a);
/* struct vrdma_ah_attr to its wire form. */
void vrdma_rdma_av_to_wire(const struct vrdma_ah_attr *a, struct virtio_rdma_ah_attr *w);
void vrdma_rdma_av_from_wire(const struct virtio_rdma_ah_attr *w, struct vrdma_ah_attr *a);

/* Smallest power of two >= v (v <= 32768), at least 1. */
static inline uint32_t vrdma_rdma_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Attach / detach qp to the QPN table of cq (device lock held). Returns 0
 * or -ENOMEM. */
int vrdma_rdma_cq_attach(struct vrdma_cq *cq, struct vrdma_qp *qp);
void vrdma_rdma_cq_detach(struct vrdma_cq *cq, struct vrdma_qp *qp);
/* A polled completion of qp (CQ lock held): retire its WR. */
void vrdma_rdma_qp_retire(struct vrdma_qp *qp, const struct vrdma_wc *wc);

/* Post every completion buffer of cq (ring set up, interrupts as wanted)
 * and notify the device. Returns 0 or -ENOSPC. */
int vrdma_rdma_cq_fill(struct vrdma_cq *cq);

/* Teardown on close (rdma_dev.c calls the two below): free CQs / QPs
 * without talking to the dead back-end. */
void vrdma_rdma_cq_free(struct vrdma_rdma *r, struct vrdma_cq *cq);
void vrdma_rdma_qp_free(struct vrdma_rdma *r, struct vrdma_qp *qp);

/* The virtio-net RoCE model's elements (rdma_qp.c, rdma_cq.c). */
uint32_t vrdma_rdma_sq_encode(const struct vrdma_qp *qp, uint8_t *slot,
			      const struct vrdma_send_wr *wr, uint64_t len, const le64 *pages);
uint32_t vrdma_rdma_rq_encode(uint8_t *slot, const struct vrdma_recv_wr *wr);
void vrdma_rdma_cq_decode(const void *b, struct vrdma_wc *wc);

/* Work queues (rdma_qp.c), shared by QP send / receive queues and SRQs. */
int vrdma_rdma_wq_setup(struct vrdma_dev *dev, struct vrdma_wq *wq, unsigned idx,
			uint32_t nslots, uint32_t ring, size_t slot_size, bool send);
void vrdma_rdma_wq_release(struct vrdma_dev *dev, struct vrdma_wq *wq);
/* Post receive WRs of at most max_sge SGEs to wq (vrdma_post_recv). */
int vrdma_rdma_wq_post_recv(struct vrdma_wq *wq, uint32_t max_sge,
			    const struct vrdma_recv_wr *wr, unsigned n);
/* Ring entries for a queue of cap WRs (headroom when resizable). */
uint32_t vrdma_rdma_ring_size(const struct vrdma_rdma *r, uint32_t cap);

/* Extension state (rdma_srq_event.c): set up when the RDMA state is created
 * (the event queue before any object), freed on close; SRQ teardown on
 * close; the events of an object being destroyed: read the event ring up to
 * its used index, then drop what is queued for the object (device lock). */
int vrdma_rdma_ext_init(struct vrdma_rdma *r);
void vrdma_rdma_ext_fini(struct vrdma_rdma *r);
void vrdma_rdma_srq_free(struct vrdma_rdma *r, struct vrdma_srq *srq);
void vrdma_rdma_events_forget(struct vrdma_rdma *r, const void *obj);

#endif /* VRDMA_LIBVRDMA_RDMA_PRIV_H */
