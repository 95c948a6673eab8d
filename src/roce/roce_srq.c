/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues (docs/spec.md "Shared receive queues"): the
 * transport side of an SRQ is its ring (2N+M+2L+2+srqn) and its error
 * state. Elements are taken by roce_rq_get() for whichever QP of the SRQ
 * needs one first (roce_rq.c); this file handles the life cycle, the ring
 * events, the element count of the limit and a broken ring (SRQ_ERR).
 *
 * The device never flushes an SRQ's ring: its requests belong to every QP
 * of the SRQ. DESTROY_SRQ drops them without completion (IBTA).
 */
#include "roce/roce_srq_evq.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_server.h"

uint16_t roce_srq_count(const struct roce_tsrq *ts)
{
	struct vhost_vring *r = ts->ring.r;

	if (!r || r->vq.broken || ts->broken)
		return 0;
	return vq_dev_avail(&r->vq);
}

void roce_srq_ring_set(struct roce_tp *tp, struct rres_srq *srq, struct vhost_vring *r)
{
	struct roce_tsrq *ts = srq->transport;

	if (!ts)
		return;
	if (ts->ring.r && ts->ring.r != r) {
		/* The driver took the ring back while the SRQ lives: the
		 * requests QPs hold from it are gone (no used entries, no
		 * completions) and those QPs cannot go on. */
		tp->ext->stats.srq_ring_stopped++;
		for (struct roce_tq *tq = tp->all; tq; tq = tq->all_next) {
			if (tq->qp->srq != srq || !tq->rwqe->valid || tq->rwqe->srq != srq)
				continue;
			tq->rwqe->valid = false;
			roce_tp_qp_fatal(tq);
		}
	}
	roce_tp_ring_ref_set(tp, &ts->ring, r);
	/* Kicks are of no use: elements are taken when messages arrive. */
	if (r && !r->vq.broken && !ts->ring.polled)
		vq_dev_set_notify(&r->vq, false);
}

void roce_srq_broken(struct roce_tsrq *ts)
{
	struct roce_tp *tp = ts->tp;
	struct rres_srq *srq = ts->srq;

	if (ts->broken)
		return;
	ts->broken = true;
	tp->ext->stats.srq_errors++;
	LOG_PEER("roce: the ring of SRQ %u is broken: its QPs go to the error state",
		 srq->srqn);
	roce_tp_ring_broken(tp, &ts->ring);
	roce_tp_event(tp, &srq->ev, VIRTIO_IB_EVENT_SRQ_ERR);
	for (struct roce_tq *tq = tp->all; tq; tq = tq->all_next)
		if (tq->qp->srq == srq)
			roce_tp_qp_fatal(tq);
}

int roce_srq_create_hook(struct rres_dev *rd, struct rres_srq *srq)
{
	struct roce_tp *tp = rd->hooks.arg;
	struct roce_tsrq *ts;
	struct vhost_vring *r;

	if (!tp || !tp->ext)
		return -ENOMEM;
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	ts->tp = tp;
	ts->srq = srq;
	ts->next = tp->ext->srqs;
	if (ts->next)
		ts->next->prev = ts;
	tp->ext->srqs = ts;
	srq->transport = ts;
	tp->ext->stats.srq_created++;
	r = tp->ops.ring(tp->ctx, srq->vq);
	if (r)
		roce_srq_ring_set(tp, srq, r);
	return 0;
}

void roce_srq_destroy_hook(struct rres_dev *rd, struct rres_srq *srq)
{
	struct roce_tp *tp = rd->hooks.arg;
	struct roce_tsrq *ts = srq->transport;

	if (!tp || !ts)
		return;
	/* No QP uses it (DESTROY_SRQ is refused before); what is left in the
	 * ring is dropped without completion. */
	for (struct roce_tq *tq = tp->all; tq; tq = tq->all_next)
		if (tq->rwqe && tq->rwqe->srq == srq) {
			tq->rwqe->valid = false;
			tq->rwqe->srq = NULL;
		}
	tp->ext->stats.srq_dropped += roce_srq_count(ts);
	roce_tp_commit(tp);
	roce_tp_ring_ref_set(tp, &ts->ring, NULL);
	if (ts->prev)
		ts->prev->next = ts->next;
	else
		tp->ext->srqs = ts->next;
	if (ts->next)
		ts->next->prev = ts->prev;
	srq->transport = NULL;
	free(ts);
	tp->ext->stats.srq_destroyed++;
}
