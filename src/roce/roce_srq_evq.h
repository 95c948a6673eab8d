/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport state of the extensions (docs/spec.md "Extensions beyond the
 * RFC"): the event virtqueue, shared receive queues, CQ / QP resize.
 * Private to src/roce (and the tests); hangs off roce_tp->ext (per device)
 * and rres_srq->transport (per SRQ).
 *
 * Files: roce_evq.c (event queue delivery), roce_srq.c (SRQ hooks, rings,
 * limit, errors); the receive path itself is in roce_rq.c.
 */
#ifndef VRDMA_ROCE_ROCE_SRQ_EVQ_H
#define VRDMA_ROCE_ROCE_SRQ_EVQ_H

#include <stdbool.h>
#include <stdint.h>

#include "roce/roce_tp.h"

/* Counters of the extensions (roce_stats.h has the lists). */
struct roce_ext_stats {
	ROCE_EXT_STATS_EVQ(ROCE_STATS_FIELD)
	uint64_t ev_by_type[VIRTIO_IB_EVENT_NUM];
	ROCE_EXT_STATS(ROCE_STATS_FIELD)
};

/* Per-SRQ transport state (rres_srq->transport). */
struct roce_tsrq {
	struct roce_tp *tp;
	struct rres_srq *srq;
	struct roce_ring_ref ring;
	bool broken;              /* SRQ_ERR raised: no longer processed */
	struct roce_tsrq *prev, *next;
};

/* Per-device extension state (roce_tp->ext). */
struct roce_tp_ext {
	struct roce_ring_ref evq;         /* the event virtqueue (not on the dirty list) */
	bool evq_dirty;
	struct vq_elem elem;              /* scratch: event ring */
	struct roce_tsrq *srqs;           /* every SRQ */
	struct roce_ext_stats stats;
};

/* ---- roce_evq.c ---- */
/* Write pending events into the event ring's buffers (nothing without
 * ROCE_EXT or without a started ring). Returns true if any was written. */
bool roce_evq_deliver(struct roce_tp *tp);
/* Publish the event ring (after every other ring) and notify. */
void roce_evq_publish(struct roce_tp *tp);
/* The event ring started / stopped / was kicked. */
void roce_evq_ring_set(struct roce_tp *tp, struct vhost_vring *r);
/* Whether deliverable work is waiting (events and buffers); a ring found
 * broken meanwhile is reported. */
bool roce_evq_busy(struct roce_tp *tp);
/* The event ring was kicked: validate its avail index now (a corrupt ring
 * is reported when the driver breaks it, even with nothing pending). */
void roce_evq_kicked(struct roce_tp *tp, struct vhost_vring *r);
/* Raise an event of the engine (counted; no-op without ROCE_EXT). */
void roce_tp_event(struct roce_tp *tp, struct rres_ev_obj *o, uint8_t type);

/* ---- roce_srq.c ---- */
/* hooks.srq_create: the SRQ's transport state (and its ring if started).
 * Returns 0 or -ENOMEM. */
int roce_srq_create_hook(struct rres_dev *rd, struct rres_srq *srq);
/* hooks.srq_destroy: stop using its ring; what is left there is dropped
 * without completion (counted). */
void roce_srq_destroy_hook(struct rres_dev *rd, struct rres_srq *srq);
/* Ring srqn's virtqueue started (r) or stopped (NULL). */
void roce_srq_ring_set(struct roce_tp *tp, struct rres_srq *srq, struct vhost_vring *r);
/* The SRQ's ring broke: SRQ_ERR, each of its QPs to ERR with QP_FATAL and
 * QP_LAST_WQE_REACHED. */
void roce_srq_broken(struct roce_tsrq *ts);
/* Element count of the SRQ (avail.idx - next index to take). */
uint16_t roce_srq_count(const struct roce_tsrq *ts);

/* ---- roce_rq.c (SRQ side) ---- */
/* A QP with an SRQ leaves the receive side (ERR, RESET, destroy): complete
 * the WQE it holds with WR_FLUSH_ERR; the SRQ's ring is not touched. */
void roce_rq_srq_release(struct roce_tq *tq);

/* ---- roce_tp.c ---- */
/* The engine moves tq's QP to ERR for a reason no completion reports
 * (QP_FATAL raised once the state is in place), then as roce_tp_qp_error. */
void roce_tp_qp_fatal(struct roce_tq *tq);
/* Extension counters (tests). */
const struct roce_ext_stats *roce_tp_ext_stats(const struct roce_tp *tp);

/* ---- roce_cq.c ---- */
/* hooks.cq_resize: the backlog's capacity becomes cqe, order kept. Returns
 * 0, -ERANGE (more than cqe completions waiting) or -ENOMEM (old kept). */
int roce_cq_resize_hook(struct rres_dev *rd, struct rres_cq *cq, uint32_t cqe);
/* hooks.cq_overflowed: whether cq has overflowed. */
bool roce_cq_overflowed_hook(struct rres_dev *rd, struct rres_cq *cq);

#endif /* VRDMA_ROCE_ROCE_SRQ_EVQ_H */
