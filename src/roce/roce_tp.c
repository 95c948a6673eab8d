/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport engine, per device: creation, the control-path hooks (QP and CQ
 * life cycle, state changes), ring attach/detach, the run queue with a
 * per-QP packet budget, poll/arm/disarm for the loop, used-ring publication
 * and the counters. With ROCE_EXT also the extension's hooks (SRQs, resize,
 * events) and rings (event queue, SRQ rings): roce_srq_evq.h.
 */
#include "roce/roce_tp.h"
#include "roce/roce_srq_evq.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_server.h"

/* ---- rings -------------------------------------------------------------- */

void roce_tp_ring_dirty(struct roce_tp *tp, struct roce_ring_ref *ref, bool force)
{
	if (force)
		ref->force = true;
	if (ref->dirty)
		return;
	ref->dirty = true;
	ref->next_dirty = tp->dirty;
	tp->dirty = ref;
}

void roce_tp_notify_vring(void *ctx, struct vhost_vring *r, bool force)
{
	(void)ctx;
	if (force)
		vhost_vring_call(r);
	else
		vhost_vring_notify(r);
}

static void ring_ref_publish(struct roce_tp *tp, struct roce_ring_ref *ref)
{
	ref->next_dirty = NULL;
	ref->dirty = false;
	if (ref->r && !ref->r->vq.broken) {
		vq_dev_flush(&ref->r->vq);
		tp->ops.notify(tp->ctx, ref->r, ref->force);
	}
	ref->force = false;
}

void roce_tp_commit(struct roce_tp *tp)
{
	struct roce_ring_ref *ref, *cqs = NULL;

	/* Events raised so far go out with this commit, and their ring is
	 * published last: an event is never seen before the completions
	 * written with it. */
	roce_evq_deliver(tp);
	/* Work queue rings first, CQ rings after: a polled completion frees
	 * its WRs' places in the queue (docs/design.md, "Publish order"). */
	while ((ref = tp->dirty)) {
		tp->dirty = ref->next_dirty;
		if (ref->completions) {
			ref->next_dirty = cqs;
			cqs = ref;
			continue;
		}
		ring_ref_publish(tp, ref);
	}
	while ((ref = cqs)) {
		cqs = ref->next_dirty;
		ring_ref_publish(tp, ref);
	}
	roce_evq_publish(tp);
}

/* Remove ref from the dirty list (publishing what it has). */
static void ring_ref_undirty(struct roce_tp *tp, struct roce_ring_ref *ref)
{
	struct roce_ring_ref **pp;

	if (!ref->dirty)
		return;
	for (pp = &tp->dirty; *pp; pp = &(*pp)->next_dirty) {
		if (*pp == ref) {
			*pp = ref->next_dirty;
			break;
		}
	}
	ref->dirty = false;
	ref->next_dirty = NULL;
	if (ref->r && !ref->r->vq.broken) {
		vq_dev_flush(&ref->r->vq);
		tp->ops.notify(tp->ctx, ref->r, ref->force);
	}
	ref->force = false;
}

void roce_tp_ring_ref_set(struct roce_tp *tp, struct roce_ring_ref *ref, struct vhost_vring *r)
{
	if (ref->r && ref->r != r)
		ring_ref_undirty(tp, ref);
	if (ref->r != r)
		ref->err_reported = false;
	if (ref->polled)
		tp->npolled--;
	ref->r = r;
	ref->polled = r && r->kick_fd < 0;
	if (ref->polled)
		tp->npolled++;
}

void roce_tp_ring_broken(struct roce_tp *tp, struct roce_ring_ref *ref)
{
	struct rres_qp *qp;
	struct roce_tq *tq;

	/* Once per ring: it may be found broken by several checks. */
	if (ref->err_reported)
		return;
	ref->err_reported = true;
	tp->stats.ring_errors++;
	if (ref->r && tp->ops.ring_error)
		tp->ops.ring_error(tp->ctx, ref->r);
	/* One of a QP's own rings: the QP goes to ERR with QP_FATAL (the
	 * caller's roce_tp_qp_error then finds it there). */
	if (!ref->r)
		return;
	qp = rres_ring_qp(tp->rd, ref->r->idx, NULL);
	tq = qp ? qp->transport : NULL;
	if (tq && (ref == &tq->sq || ref == &tq->rq))
		roce_tp_qp_fatal(tq);
}

/* ---- scheduling ----------------------------------------------------------- */

static void rx_room_check(struct roce_tp *tp);

/* The watch list (tp->quiet): QPs whose send-ring kicks are off and that
 * are not on the run queue; a QP on the run queue finds its work when it
 * runs, so only these need looking at (quiet_scan). */
static void watch_add(struct roce_tp *tp, struct roce_tq *tq)
{
	if (tq->quiet_listed)
		return;
	tq->quiet_listed = true;
	tq->quiet_idle = 0;
	tq->quiet_prev = NULL;
	tq->quiet_next = tp->quiet;
	if (tp->quiet)
		tp->quiet->quiet_prev = tq;
	tp->quiet = tq;
}

static void watch_del(struct roce_tp *tp, struct roce_tq *tq)
{
	if (!tq->quiet_listed)
		return;
	if (tq->quiet_prev)
		tq->quiet_prev->quiet_next = tq->quiet_next;
	else
		tp->quiet = tq->quiet_next;
	if (tq->quiet_next)
		tq->quiet_next->quiet_prev = tq->quiet_prev;
	tq->quiet_prev = tq->quiet_next = NULL;
	tq->quiet_listed = false;
}

void roce_tp_schedule(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	if (tq->on_runq)
		return;
	watch_del(tp, tq);
	tq->on_runq = true;
	tq->run_next = NULL;
	tp->runq_len++;
	if (tp->runq_tail)
		tp->runq_tail->run_next = tq;
	else
		tp->runq_head = tq;
	tp->runq_tail = tq;
}

void roce_tp_sq_quiet(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	if (tq->quiet || !tq->sq.r || tq->sq.polled || tq->sq.r->vq.broken)
		return;
	vq_dev_set_notify(&tq->sq.r->vq, false);
	tq->quiet = true;
	if (!tq->on_runq)
		watch_add(tp, tq);
}

/* Kicks back on (tq off the watch list); returns true if the ring has
 * work already. */
static bool sq_unquiet(struct roce_tq *tq)
{
	struct vhost_vring *r = tq->sq.r;

	watch_del(tq->tp, tq);
	tq->quiet = false;
	if (!r || r->vq.broken)
		return false;
	vq_dev_set_notify(&r->vq, true);
	return vq_dev_avail(&r->vq) != 0;
}

static void quiet_remove(struct roce_tp *tp, struct roce_tq *tq)
{
	(void)tp;
	if (!tq->quiet)
		return;
	sq_unquiet(tq);
}

static struct roce_tq *runq_pop(struct roce_tp *tp)
{
	struct roce_tq *tq = tp->runq_head;

	if (!tq)
		return NULL;
	tp->runq_head = tq->run_next;
	if (!tp->runq_head)
		tp->runq_tail = NULL;
	tq->run_next = NULL;
	tq->on_runq = false;
	tp->runq_len--;
	if (tq->quiet)
		watch_add(tp, tq); /* (off again if the turn reschedules it) */
	return tq;
}

static void runq_remove(struct roce_tp *tp, struct roce_tq *tq)
{
	struct roce_tq **pp, *prev = NULL;

	if (!tq->on_runq)
		return;
	for (pp = &tp->runq_head; *pp; prev = *pp, pp = &(*pp)->run_next) {
		if (*pp == tq) {
			*pp = tq->run_next;
			if (tp->runq_tail == tq)
				tp->runq_tail = prev;
			tp->runq_len--;
			break;
		}
	}
	tq->on_runq = false;
	tq->run_next = NULL;
}

/* One turn of a QP: flushes, responder output, requester. Returns true if
 * it has more to do right away. */
static bool qp_run(struct roce_tq *tq, uint32_t budget)
{
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;
	bool more = false, m;
	uint32_t n = 0;

	switch (st) {
	case VIRTIO_IB_QPS_RESET:
		return false;
	case VIRTIO_IB_QPS_ERR:
		roce_sq_flush(tq);
		roce_rq_flush(tq);
		return false;
	case VIRTIO_IB_QPS_SQE:
		roce_sq_flush(tq);
		return false;
	default:
		break;
	}
	/* Its receiver is busy: wait for it, off the run queue. */
	if (qp->type == VIRTIO_IB_QPT_RC && roce_hold_park_path(tq, &tq->path))
		return false;
	if (st >= VIRTIO_IB_QPS_RTR && qp->type == VIRTIO_IB_QPT_RC) {
		/* (READ responses paced after a loss: roce_recover.c) */
		n = roce_resp_run(tq, MIN(budget, roce_recover_rsp_burst(tq)), &m);
		roce_recover_rsp_sent(tq, n);
		more |= m;
	}
	if (qp->attr.qp_state == VIRTIO_IB_QPS_RTS || qp->attr.qp_state == VIRTIO_IB_QPS_SQD) {
		if (n < budget) {
			roce_req_run(tq, budget - n, &m);
			more |= m;
		} else {
			more = true;
		}
	}
	st = qp->attr.qp_state;
	if (st == VIRTIO_IB_QPS_ERR || st == VIRTIO_IB_QPS_SQE)
		return true; /* flush at the next turn */
	if (qp->sq_draining && tq->sq_head == tq->sq_tail) {
		rres_qp_sq_drained(qp);
		if (tq->tp->rd->ext) {
			tq->tp->ext->stats.sq_drained_events++;
			roce_tp_event(tq->tp, &qp->ev, VIRTIO_IB_EVENT_SQ_DRAINED);
		}
	}
	return more;
}

/* Keep tq on the list of QPs with a kick-less ring iff it has one. */
static void poll_list_update(struct roce_tp *tp, struct roce_tq *tq)
{
	bool want = (tq->sq.r && tq->sq.polled) || (tq->rq.r && tq->rq.polled);

	if (want == tq->on_poll_list)
		return;
	if (want) {
		tq->poll_prev = NULL;
		tq->poll_next = tp->polled;
		if (tp->polled)
			tp->polled->poll_prev = tq;
		tp->polled = tq;
	} else {
		if (tp->poll_cursor == tq)
			tp->poll_cursor = tq->poll_next;
		if (tq->poll_prev)
			tq->poll_prev->poll_next = tq->poll_next;
		else
			tp->polled = tq->poll_next;
		if (tq->poll_next)
			tq->poll_next->poll_prev = tq->poll_prev;
		tq->poll_prev = tq->poll_next = NULL;
	}
	tq->on_poll_list = want;
}

/* Rings without a kick fd: look for work the driver posted, at most
 * ROCE_TP_POLL_SCAN QPs per poll (a round over all of them may take several
 * polls). A round that finds nothing doubles the time to the next one, from
 * ROCE_TP_POLL_NS up to ROCE_TP_POLL_MAX_NS; one that finds work makes the
 * next start at once. */
static void poll_rings(struct roce_tp *tp, uint64_t now)
{
	struct roce_tq *tq = tp->poll_cursor ? tp->poll_cursor : tp->polled;
	uint32_t n = 0;

	for (; tq && n < ROCE_TP_POLL_SCAN; tq = tq->poll_next, n++) {
		uint8_t st = tq->qp->attr.qp_state;

		if (tq->on_runq)
			continue;
		if (tq->sq.polled && tq->sq.r && st != VIRTIO_IB_QPS_RESET &&
		    st != VIRTIO_IB_QPS_INIT && st != VIRTIO_IB_QPS_RTR &&
		    tq->sq_tail - tq->sq_head < tq->sq_slots) {
			if (vq_dev_avail(&tq->sq.r->vq)) {
				roce_tp_schedule(tq);
				tp->poll_found = true;
			} else if (tq->sq.r->vq.broken) {
				/* A corrupt avail index: as a failed pop
				 * (reported once; the QP goes to ERR). */
				roce_tp_ring_broken(tp, &tq->sq);
			}
		} else if (tq->rq.polled && tq->rq.r && st == VIRTIO_IB_QPS_ERR) {
			if (vq_dev_avail(&tq->rq.r->vq)) {
				roce_tp_schedule(tq);
				tp->poll_found = true;
			} else if (tq->rq.r->vq.broken) {
				roce_tp_ring_broken(tp, &tq->rq);
			}
		}
	}
	tp->poll_cursor = tq;
	if (tq)
		return; /* the round goes on at the next poll */
	tp->stats.sched_poll_scans++;
	if (tp->poll_found) {
		tp->poll_ivl_ns = 0;
	} else {
		tp->stats.sched_poll_idle++;
		if (tp->poll_ivl_ns >= ROCE_TP_POLL_MAX_NS)
			tp->stats.sched_poll_ivl_max++;
		tp->poll_ivl_ns = tp->poll_ivl_ns ? MIN(tp->poll_ivl_ns * 2, ROCE_TP_POLL_MAX_NS)
						  : ROCE_TP_POLL_NS;
	}
	tp->poll_found = false;
	tp->poll_next_ns = now + tp->poll_ivl_ns;
}

/* Send rings whose kicks are off (roce_tp_sq_quiet): those with new work are
 * scheduled; one found idle ROCE_TP_QUIET_IDLE polls in a row gets its kicks
 * back and leaves the list, so a poll looks only at QPs that were busy a
 * moment ago, never at every QP. */
static void quiet_scan(struct roce_tp *tp)
{
	struct roce_tq *q, *next;

	for (q = tp->quiet; q; q = next) {
		bool can_fetch = q->sq.r && q->sq_tail - q->sq_head < q->sq_slots &&
				 !q->neigh_wait && !q->cc_wait && !q->hold_on;

		next = q->quiet_next;
		if (can_fetch && vq_dev_avail(&q->sq.r->vq)) {
			roce_tp_schedule(q); /* (leaves the list) */
		} else if (q->sq.r && q->sq.r->vq.broken) {
			roce_tp_ring_broken(tp, &q->sq); /* as a failed pop */
		} else if (++q->quiet_idle >= ROCE_TP_QUIET_IDLE) {
			/* Waiting QPs are woken by their event (ACK, timer,
			 * neighbour, pacer); the others by a kick from now on. */
			tp->stats.sched_quiet_rearms++;
			if (sq_unquiet(q)) {
				if (can_fetch)
					roce_tp_schedule(q);
			} else if (q->sq.r && q->sq.r->vq.broken) {
				roce_tp_ring_broken(tp, &q->sq); /* as a failed pop */
			}
		}
	}
}

static bool drain_backlogs(struct roce_tp *tp)
{
	struct roce_tcq *tc, *next, *keep = NULL;
	bool work = false;

	tc = tp->bl_list;
	tp->bl_list = NULL;
	for (; tc; tc = next) {
		next = tc->bl_next;
		tc->bl_next = NULL;
		work |= roce_cq_drain(tc);
		if (tc->bl_len) {
			tc->bl_next = keep;
			keep = tc;
		} else {
			tc->on_bl_list = false;
		}
	}
	/* Entries added while draining were pushed on tp->bl_list. */
	while (keep) {
		next = keep->bl_next;
		keep->bl_next = tp->bl_list;
		tp->bl_list = keep;
		keep = next;
	}
	return work;
}

bool roce_tp_poll(struct roce_tp *tp)
{
	uint32_t budget, allowed, n, turns;
	bool work = false, was_in = tp->in_event;
	uint64_t now;

	tp->in_event = true;
	if (roce_recv_run(tp, ROCE_TP_RX_BATCH))
		work = true;
	rx_room_check(tp);
	if ((tp->txq.len || tp->nhold) && tp->tx_ready) {
		roce_hold_flush(tp);
		work = true;
	}
	if (tp->polled) {
		/* (without a loop, as in the fuzzers, every poll looks) */
		now = tp->loop ? loop_now_ns() : 0;
		if (!tp->loop || tp->poll_cursor || now >= tp->poll_next_ns)
			poll_rings(tp, now);
	}
	if (tp->quiet)
		quiet_scan(tp);
	if (tp->bl_list && drain_backlogs(tp))
		work = true;
	/* Each QP queued now gets one turn of at most ROCE_TP_QP_BUDGET
	 * packets; those with more go to the back. The packets of the pass
	 * are the device's, shared by its contexts (roce_sched.c). */
	budget = allowed = tp->runq_len ? roce_sched_take(tp) : 0;
	turns = tp->runq_len;
	if (turns)
		tp->stats.sched_polls++;
	while (turns-- && budget && !tp->txq.len) {
		struct roce_tq *tq = runq_pop(tp);
		uint32_t b = MIN(budget, (uint32_t)ROCE_TP_QP_BUDGET);
		uint64_t before = tp->stats.tx_frames;

		if (!tq)
			break;
		if (qp_run(tq, b))
			roce_tp_schedule(tq);
		n = (uint32_t)(tp->stats.tx_frames - before);
		budget -= MIN(n, budget);
		tp->stats.sched_turns++;
		work = true;
	}
	roce_sched_spent(tp, allowed - budget);
	if (!budget && tp->runq_len) {
		tp->stats.sched_budget_out++;
		if (allowed < ROCE_TP_RUN_BUDGET && tp->sched)
			tp->sched->budget_out++;
		work = true; /* the next pass serves them: no sleep */
	}
	tp->in_event = was_in;
	if (roce_evq_busy(tp))
		work = true;
	roce_tp_commit(tp);
	return work;
}

static void poll_timer_cb(struct loop_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	/* Only wakes the loop: the next poll looks at kick-less rings. */
}

bool roce_tp_arm(struct roce_tp *tp)
{
	/* Held frames wait for their receiver's room, and so do the QPs
	 * parked for it (all of them while the fallback queue holds some). */
	bool pending = tp->rxq.len || ((tp->txq.len || tp->nhold) && tp->tx_ready) ||
		       (!tp->txq.len && tp->runq_head);
	bool need_timer = tp->polled != NULL;
	struct roce_tp_ext *x = tp->ext;
	struct roce_tcq *tc;
	struct roce_tq *q;

	/* (Quiet QPs on the run queue make the loop go on: they find their
	 * work when they run.) */
	while ((q = tp->quiet)) {
		/* Posted while kicks were off: nobody will kick for it. A QP
		 * waiting for a neighbour or its pacer is woken by that. */
		if (sq_unquiet(q)) {
			if (!q->neigh_wait && !q->cc_wait) {
				roce_tp_schedule(q);
				pending = true;
			}
		} else if (q->sq.r && q->sq.r->vq.broken) {
			/* A corrupt avail index: as a failed pop. */
			roce_tp_ring_broken(tp, &q->sq);
			pending = true;
		}
	}

	for (tc = tp->bl_list; tc; tc = tc->bl_next) {
		struct vhost_vring *r = tc->ring.r;

		if (!r || r->vq.broken)
			continue;
		if (tc->ring.polled) {
			need_timer = true;
			continue;
		}
		vq_dev_set_notify(&r->vq, true);
		if (vq_dev_avail(&r->vq))
			pending = true;
		else if (r->vq.broken)
			roce_tp_ring_broken(tp, &tc->ring);
	}
	/* Events waiting for buffers: a kick brings them (kicks stay on for
	 * the event ring), a ring without kick fd is polled. */
	if (x && x->evq.r && tp->rd->ext && rres_event_pending(tp->rd)) {
		if (roce_evq_busy(tp))
			pending = true;
		else if (x->evq.polled && !x->evq.r->vq.broken)
			need_timer = true; /* (a broken ring waits for a reset) */
	}
	if (need_timer && tp->loop && !pending)
		loop_timer_arm(tp->loop, &tp->poll_timer,
			       loop_now_ns() + MAX(tp->poll_ivl_ns, ROCE_TP_POLL_NS));
	return pending;
}

void roce_tp_disarm(struct roce_tp *tp)
{
	(void)tp;
}

/* ---- errors and paths ----------------------------------------------------- */

/* A QP of an SRQ entered ERR: the element it holds completes (flush), then
 * QP_LAST_WQE_REACHED (it takes no more from the SRQ). */
static void qp_srq_left(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	roce_rq_srq_release(tq);
	if (tp->rd->ext) {
		tp->ext->stats.last_wqe_events++;
		roce_tp_event(tp, &tq->qp->ev, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	}
}

/* The engine moves tq to ERR (or SQE); fatal: raise QP_FATAL once in ERR.
 * A QP of an SRQ then completes the element it holds and raises
 * QP_LAST_WQE_REACHED. */
static void qp_to_error(struct roce_tq *tq, bool sqe, bool fatal)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;

	if (st == VIRTIO_IB_QPS_RESET || st == VIRTIO_IB_QPS_ERR)
		return;
	if (sqe && qp->type != VIRTIO_IB_QPT_RC && st == VIRTIO_IB_QPS_RTS) {
		rres_qp_async_state(tp->rd, qp, VIRTIO_IB_QPS_SQE);
		LOG_DEBUG("roce: QP 0x%x to SQE", qp->qpn);
	} else {
		if (st == VIRTIO_IB_QPS_SQE && sqe)
			return;
		rres_qp_async_state(tp->rd, qp, VIRTIO_IB_QPS_ERR);
		tp->stats.qp_errors++;
		LOG_DEBUG("roce: QP 0x%x to ERR", qp->qpn);
		if (tp->loop) {
			loop_timer_cancel(tp->loop, &tq->rexmit_timer);
			loop_timer_cancel(tp->loop, &tq->rnr_timer);
		}
		/* Kicks on the receive ring now matter (flush). */
		if (tq->rq.r && !tq->rq.r->vq.broken && !tq->rq.polled)
			vq_dev_set_notify(&tq->rq.r->vq, true);
		if (fatal && tp->rd->ext) {
			tp->ext->stats.qp_fatal_events++;
			roce_tp_event(tp, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
		}
		if (qp->srq)
			qp_srq_left(tq);
	}
	tq->state = qp->attr.qp_state;
	roce_tp_schedule(tq);
}

void roce_tp_qp_error(struct roce_tq *tq, bool sqe)
{
	qp_to_error(tq, sqe, false);
}

void roce_tp_qp_fatal(struct roce_tq *tq)
{
	qp_to_error(tq, false, true);
}

void roce_tp_path_from_av(const struct roce_tp *tp, const struct rres_qp *qp,
			  const struct rres_av *av, struct roce_path *path)
{
	memset(path, 0, sizeof(*path));
	memcpy(path->smac, tp->rd->mac, 6);
	memcpy(path->dmac, av->dmac, 6);
	memcpy(path->sgid, av->sgid, 16);
	memcpy(path->dgid, av->dgid, 16);
	/* DSCP from the AV; ECN-capable transport ECT(0). */
	path->tclass = (uint8_t)((av->traffic_class & ~ROCE_ECN_MASK) | ROCE_ECN_ECT0);
	path->hop_limit = tp->ttl;
	path->flow_label = av->flow_label;
	path->udp_sport = roce_udp_sport_from_qpn(qp->qpn);
	if (tp->rd->vlan_id) {
		/* PCP: the service level if given, else the DSCP's class. */
		uint16_t pcp = av->sl ? (av->sl & 7) : (av->traffic_class >> 5);

		path->flags |= ROCE_PATH_F_VLAN;
		path->vlan_tci = (uint16_t)(pcp << 13 | tp->rd->vlan_id);
	}
}

/* ---- transmit flow control -------------------------------------------------- */

bool roce_tp_rx_busy(struct roce_tp *tp)
{
	if (tp->rxq.pkts < ROCE_TP_RXQ_HIGH)
		return false;
	tp->rx_busy = true;
	return true;
}

/* After receiving: below the low mark again, wake who we refused. */
static void rx_room_check(struct roce_tp *tp)
{
	if (tp->rx_busy && tp->rxq.pkts <= ROCE_TP_RXQ_LOW) {
		tp->rx_busy = false;
		if (tp->ops.rx_room)
			tp->ops.rx_room(tp->ctx);
	}
}

void roce_tp_xmit(struct roce_tp *tp, struct pkt *p, const struct roce_path *path)
{
	static const uint8_t zero[6];

	if (unlikely(!memcmp(path->dmac, zero, 6))) {
		roce_neigh_output(tp->neigh, p, path->sgid, path->dgid);
		return;
	}
	tp->stats.tx_frames += pkt_npkts(p);
	tp->stats.tx_bytes += pkt_wire_len(p);
	roce_tp_output(tp, p);
}

bool roce_tp_path_ready(struct roce_tq *tq, const struct roce_path *path)
{
	static const uint8_t zero[6];
	uint8_t mac[6];

	/* (A busy receiver: wait, parked, until it has room.) */
	if (likely(memcmp(path->dmac, zero, 6)))
		return !roce_hold_park(tq, path->dmac);
	if (roce_neigh_lookup(tq->tp->neigh, path->sgid, path->dgid, mac))
		return !roce_hold_park(tq, mac);
	if (!tq->neigh_wait) {
		tq->neigh_wait = true;
		tq->tp->stats.neigh_waits++;
	}
	return false;
}

void roce_tp_neigh_changed(struct roce_tp *tp)
{
	for (struct roce_tq *tq = tp->all; tq; tq = tq->all_next)
		if (tq->neigh_wait) {
			tq->neigh_wait = false;
			roce_tp_schedule(tq);
		}
}

void roce_tp_set_ttl(struct roce_tp *tp, uint8_t ttl)
{
	tp->ttl = ttl ? ttl : ROCE_TP_TTL_DEFAULT;
}

/* ---- hooks ------------------------------------------------------------------ */

static struct roce_tp *tp_of(struct rres_dev *rd)
{
	return rd->hooks.arg;
}

static void tq_attach_sq(struct roce_tq *tq, struct vhost_vring *r)
{
	struct roce_tp *tp = tq->tp;

	quiet_remove(tp, tq);
	roce_tp_ring_ref_set(tp, &tq->sq, r);
	if (roce_sq_attach(tq) < 0) {
		LOG_ERR("roce: no memory for the send queue of QP 0x%x", tq->qp->qpn);
		roce_tp_ring_ref_set(tp, &tq->sq, NULL);
		roce_tp_qp_error(tq, false);
		return;
	}
	poll_list_update(tp, tq);
	roce_tp_schedule(tq);
}

static void tq_attach_rq(struct roce_tq *tq, struct vhost_vring *r)
{
	roce_tp_ring_ref_set(tq->tp, &tq->rq, r);
	poll_list_update(tq->tp, tq);
	/* Receive-ring kicks matter only in ERR (flush). */
	if (!r->vq.broken && !tq->rq.polled)
		vq_dev_set_notify(&r->vq, tq->qp->attr.qp_state == VIRTIO_IB_QPS_ERR);
	roce_tp_schedule(tq);
}

static int hook_qp_create(struct rres_dev *rd, struct rres_qp *qp)
{
	struct roce_tp *tp = tp_of(rd);
	uint64_t budget = roce_budget_qp(&qp->cap, qp->srq ? qp->srq->max_sge : 0);
	struct roce_tq *tq;
	struct vhost_vring *r;

	if (roce_budget_charge(tp, budget))
		return -ENOMEM;
	tq = calloc(1, sizeof(*tq));
	if (!tq) {
		roce_budget_uncharge(tp, budget);
		return -ENOMEM;
	}
	tq->budget = budget;
	tq->tp = tp;
	tq->qp = qp;
	tq->state = VIRTIO_IB_QPS_RESET;
	loop_timer_init(&tq->rexmit_timer, roce_comp_rexmit_timer, tq);
	loop_timer_init(&tq->rnr_timer, roce_comp_rnr_timer, tq);
	if (roce_rq_init(tq) || roce_resp_init(tq)) {
		roce_rq_fini(tq);
		free(tq);
		roce_budget_uncharge(tp, budget);
		return -ENOMEM;
	}
	qp->transport = tq;
	tq->all_next = tp->all;
	if (tp->all)
		tp->all->all_prev = tq;
	tp->all = tq;
	r = tp->ops.ring(tp->ctx, qp->sq_vq);
	if (r)
		tq_attach_sq(tq, r);
	/* A QP with an SRQ never uses its own receive ring. */
	r = qp->srq ? NULL : tp->ops.ring(tp->ctx, qp->rq_vq);
	if (r)
		tq_attach_rq(tq, r);
	return 0;
}

static void hook_qp_modify(struct rres_dev *rd, struct rres_qp *qp, uint8_t old,
			   uint32_t mask)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = qp->transport;
	uint8_t st = qp->attr.qp_state;
	bool was_in = tp->in_event;

	if (!tq)
		return;
	tp->in_event = true;
	if (qp->type == VIRTIO_IB_QPT_RC || qp->type == VIRTIO_IB_QPT_UC) {
		tq->mtu = virtio_ib_mtu_bytes(qp->attr.path_mtu);
		if (qp->attr.av_valid)
			roce_tp_path_from_av(tp, qp, &qp->attr.av, &tq->path);
	} else {
		tq->mtu = virtio_ib_mtu_bytes(rd->attr.active_mtu);
	}
	if (mask & VIRTIO_IB_QP_RETRY_CNT)
		tq->retry_left = qp->attr.retry_cnt;
	if (mask & VIRTIO_IB_QP_RNR_RETRY)
		tq->rnr_left = qp->attr.rnr_retry;

	switch (st) {
	case VIRTIO_IB_QPS_RESET:
		roce_cc_qp_free(tq);
		tq->cnp_sent_ns = 0;
		roce_sq_drop(tq);
		roce_rq_drop(tq);
		roce_comp_reset(tq);
		roce_resp_reset(tq);
		break;
	case VIRTIO_IB_QPS_RTR:
		if (old != VIRTIO_IB_QPS_RTR)
			roce_resp_reset(tq);
		/* Resolve the peer's MAC now, as the kernel does at RTR, so
		 * the first send finds it (or waits for it). */
		if ((qp->type == VIRTIO_IB_QPT_RC || qp->type == VIRTIO_IB_QPT_UC) &&
		    qp->attr.av_valid)
			(void)roce_tp_path_ready(tq, &tq->path);
		tq->neigh_wait = false;
		break;
	case VIRTIO_IB_QPS_RTS:
		if (old == VIRTIO_IB_QPS_RTR)
			roce_comp_reset(tq);
		else if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
			(void)roce_resp_resize(tq);
		break;
	case VIRTIO_IB_QPS_SQD:
		/* The connection stays: only the resources change (a reset
		 * would forget the expected PSN, and duplicates of executed
		 * atomics would run again). On -ENOMEM the old ones stay. */
		if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
			(void)roce_resp_resize(tq);
		break;
	case VIRTIO_IB_QPS_ERR:
		if (tp->loop) {
			loop_timer_cancel(tp->loop, &tq->rexmit_timer);
			loop_timer_cancel(tp->loop, &tq->rnr_timer);
		}
		if (tq->rq.r && !tq->rq.r->vq.broken && !tq->rq.polled)
			vq_dev_set_notify(&tq->rq.r->vq, true);
		/* Flush now, so the completions are there when the command
		 * returns. */
		roce_sq_flush(tq);
		roce_rq_flush(tq);
		roce_keep_flush(tq);
		if (qp->srq && old != VIRTIO_IB_QPS_ERR)
			qp_srq_left(tq);
		break;
	default:
		break;
	}
	tq->state = st;
	roce_tp_schedule(tq);
	tp->in_event = was_in;
	roce_tp_commit(tp);
}

static void hook_qp_destroy(struct rres_dev *rd, struct rres_qp *qp)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = qp->transport;
	bool was_in = tp->in_event;

	pkt_ref_fill_all(); /* frames in flight keep their bytes (roce_sq_flush) */
	if (!tq)
		return;
	tp->in_event = true;
	roce_sq_flush(tq);
	roce_rq_flush(tq);
	tp->in_event = was_in;
	roce_tp_commit(tp);
	if (tp->loop) {
		loop_timer_cancel(tp->loop, &tq->rexmit_timer);
		loop_timer_cancel(tp->loop, &tq->rnr_timer);
	}
	runq_remove(tp, tq);
	roce_hold_forget(tq);
	quiet_remove(tp, tq);
	roce_tp_ring_ref_set(tp, &tq->sq, NULL);
	roce_tp_ring_ref_set(tp, &tq->rq, NULL);
	poll_list_update(tp, tq);
	if (tq->all_prev)
		tq->all_prev->all_next = tq->all_next;
	else
		tp->all = tq->all_next;
	if (tq->all_next)
		tq->all_next->all_prev = tq->all_prev;
	roce_cc_qp_free(tq);
	roce_comp_fini(tq);
	roce_sq_detach(tq);
	roce_rq_fini(tq);
	roce_resp_fini(tq);
	qp->transport = NULL;
	roce_budget_uncharge(tp, tq->budget);
	free(tq);
}

static int hook_cq_create(struct rres_dev *rd, struct rres_cq *cq)
{
	struct roce_tp *tp = tp_of(rd);
	struct vhost_vring *r;

	uint64_t budget = roce_budget_cq(cq->cqe);

	if (roce_budget_charge(tp, budget))
		return -ENOMEM;
	if (roce_cq_attach_hook(rd, cq)) {
		roce_budget_uncharge(tp, budget);
		return -ENOMEM;
	}
	((struct roce_tcq *)cq->transport)->budget = budget;
	r = tp->ops.ring(tp->ctx, cq->vq);
	if (r)
		roce_cq_ring_set(cq->transport, r);
	return 0;
}

static void hook_cq_destroy(struct rres_dev *rd, struct rres_cq *cq)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tcq *tc = cq->transport;

	if (!tc)
		return;
	roce_tp_commit(tp);
	roce_tp_ring_ref_set(tp, &tc->ring, NULL);
	roce_budget_uncharge(tp, tc->budget);
	roce_cq_detach_hook(rd, cq);
}

/* ---- extension hooks ---------------------------------------------------------- */

/* Requests posted on ring r and not given back yet (avail.idx - used.idx). */
static uint32_t ring_outstanding(struct vhost_vring *r)
{
	uint16_t avail;

	if (!r || !r->vq.avail)
		return 0;
	avail = le16toh(__atomic_load_n(&r->vq.avail->idx, __ATOMIC_ACQUIRE));
	return (uint16_t)(avail - r->vq.used_idx);
}

static uint32_t pow2_up(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

/* More WQE slots for a deeper send queue (the live ones keep their
 * free-running indexes). Returns 0 or -ENOMEM. */
static int sq_regrow(struct roce_tq *tq, uint32_t slots)
{
	uint8_t *n = calloc(slots, tq->sq_stride);

	if (!n)
		return -ENOMEM;
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++)
		memcpy(n + (size_t)(i & (slots - 1)) * tq->sq_stride, roce_sq_wqe(tq, i),
		       tq->sq_stride);
	free(tq->swqe);
	tq->swqe = n;
	tq->sq_slots = slots;
	tq->sq_mask = slots - 1;
	return 0;
}

static int hook_qp_resize(struct rres_dev *rd, struct rres_qp *qp, const struct rres_qp_cap *cap)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = qp->transport;
	struct roce_ext_stats *xs = &tp->ext->stats;

	if (!tq)
		return 0;
	if (cap->max_send_wr < ring_outstanding(tq->sq.r) ||
	    (!qp->srq && cap->max_recv_wr < ring_outstanding(tq->rq.r))) {
		xs->qp_resize_range++;
		return -ERANGE;
	}
	{
		uint64_t b = roce_budget_qp(cap, qp->srq ? qp->srq->max_sge : 0);

		if (b > tq->budget && roce_budget_charge(tp, b - tq->budget)) {
			xs->qp_resize_nomem++;
			return -ENOMEM;
		}
		if (b > tq->budget)
			tq->budget = b; /* kept at its largest: slots never shrink */
	}
	/* Slots were sized from the ring and the old depth: grow within the
	 * ring if the new depth needs more. */
	if (tq->swqe && tq->sq.r) {
		uint32_t want = MIN(pow2_up(cap->max_send_wr), (uint32_t)tq->sq.r->num);

		if (want > tq->sq_slots && sq_regrow(tq, want)) {
			xs->qp_resize_nomem++;
			return -ENOMEM;
		}
	}
	xs->qp_resizes++;
	roce_tp_schedule(tq);
	return 0;
}

static int hook_srq_create(struct rres_dev *rd, struct rres_srq *srq)
{
	return roce_srq_create_hook(rd, srq);
}

static void hook_srq_destroy(struct rres_dev *rd, struct rres_srq *srq)
{
	struct roce_tp *tp = tp_of(rd);

	roce_srq_destroy_hook(rd, srq);
	roce_tp_commit(tp);
}

static void hook_event_raised(struct rres_dev *rd)
{
	struct roce_tp *tp = tp_of(rd);

	/* Inside an entry point, its commit delivers; otherwise now (control
	 * path, timers). */
	if (tp && !tp->in_event)
		roce_tp_commit(tp);
}

/* A UD address handle: resolve its MAC now so the first send finds it
 * (the command returns at once; sends wait if it is still unknown). */
static void hook_ah_create(struct rres_dev *rd, const struct rres_ah *ah)
{
	static const uint8_t zero[6];
	struct roce_tp *tp = tp_of(rd);

	if (tp && !memcmp(ah->av.dmac, zero, 6))
		roce_neigh_resolve(tp->neigh, ah->av.sgid, ah->av.dgid);
}

/* ---- ring events ------------------------------------------------------------ */

/* Kind of ring (enum vrdma_vq_kind or enum vrdma_vq_kind_ext). */
static int ring_kind(const struct rres_dev *rd, uint32_t ring, uint32_t *idx)
{
	/* The device's layout: the extension's rings exist when offered. */
	return (int)rres_ring_decode(rd, ring, idx);
}

void roce_tp_ring_started(struct roce_tp *tp, struct vhost_vring *r)
{
	struct rres_dev *rd = tp->rd;
	struct rres_srq *srq;
	struct rres_qp *qp;
	struct rres_cq *cq;
	bool is_send, was_in = tp->in_event;
	uint32_t idx;

	tp->in_event = true;
	switch (ring_kind(rd, r->idx, &idx)) {
	case VRDMA_VQ_CQ:
		cq = rres_ring_cq(rd, r->idx);
		if (cq && cq->transport)
			roce_cq_ring_set(cq->transport, r);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = rres_ring_qp(rd, r->idx, &is_send);
		if (!qp || !qp->transport)
			break;
		if (is_send)
			tq_attach_sq(qp->transport, r);
		else if (!qp->srq)
			tq_attach_rq(qp->transport, r);
		break;
	case VRDMA_VQ_EVENTQ:
		roce_evq_ring_set(tp, r);
		break;
	case VRDMA_VQ_SRQ:
		srq = rres_srq_lookup(rd, idx);
		if (srq && srq->transport)
			roce_srq_ring_set(tp, srq, r);
		break;
	default:
		break;
	}
	tp->in_event = was_in;
	roce_tp_commit(tp);
}

void roce_tp_ring_stopped(struct roce_tp *tp, struct vhost_vring *r)
{
	struct rres_dev *rd = tp->rd;
	struct roce_tsrq *ts;
	struct rres_srq *srq;
	struct rres_qp *qp;
	struct rres_cq *cq;
	struct roce_tq *tq;
	bool is_send, held, was_in = tp->in_event;
	uint32_t idx;

	tp->in_event = true;
	switch (ring_kind(rd, r->idx, &idx)) {
	case VRDMA_VQ_CQ:
		cq = rres_ring_cq(rd, r->idx);
		if (cq && cq->transport && ((struct roce_tcq *)cq->transport)->ring.r == r)
			roce_cq_ring_set(cq->transport, NULL);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = rres_ring_qp(rd, r->idx, &is_send);
		if (!qp || !(tq = qp->transport))
			break;
		/* The driver took the ring back. If the device held nothing
		 * from it (a quiescent ring being replaced, e.g. to grow a
		 * queue: spec "Resizing CQs and QPs", ROCE_EXT only), the QP
		 * simply waits for the new ring. Otherwise what was popped from it is
		 * forgotten (no used entries, no completions) and the QP
		 * cannot go on. */
		if (is_send && tq->sq.r == r) {
			held = tq->sq_head != tq->sq_tail;
			quiet_remove(tp, tq);
			roce_tp_ring_ref_set(tp, &tq->sq, NULL);
			roce_sq_detach(tq);
		} else if (!is_send && tq->rq.r == r) {
			held = tq->rwqe->valid;
			roce_tp_ring_ref_set(tp, &tq->rq, NULL);
			tq->rwqe->valid = false;
		} else {
			break;
		}
		poll_list_update(tp, tq);
		if (held || !rd->ext)
			roce_tp_qp_error(tq, false);
		break;
	case VRDMA_VQ_EVENTQ:
		if (tp->ext->evq.r == r)
			roce_evq_ring_set(tp, NULL);
		break;
	case VRDMA_VQ_SRQ:
		srq = rres_srq_lookup(rd, idx);
		ts = srq ? srq->transport : NULL;
		if (ts && ts->ring.r == r)
			roce_srq_ring_set(tp, srq, NULL);
		break;
	default:
		break;
	}
	tp->in_event = was_in;
	roce_tp_commit(tp);
}

void roce_tp_ring_kick(struct roce_tp *tp, struct vhost_vring *r)
{
	struct rres_dev *rd = tp->rd;
	struct rres_qp *qp;
	struct rres_cq *cq;
	bool is_send, was_in = tp->in_event;
	uint32_t idx;

	tp->in_event = true;
	switch (ring_kind(rd, r->idx, &idx)) {
	case VRDMA_VQ_CQ:
		cq = rres_ring_cq(rd, r->idx);
		if (cq && cq->transport && ((struct roce_tcq *)cq->transport)->bl_len)
			roce_cq_drain(cq->transport);
		break;
	case VRDMA_VQ_EVENTQ:
		/* New buffers: the commit below delivers what is pending.
		 * Validate the avail index now even with nothing pending, so
		 * a corrupt ring is reported when the driver breaks it. */
		roce_evq_kicked(tp, r);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = rres_ring_qp(rd, r->idx, &is_send);
		if (!qp || !qp->transport)
			break;
		if (is_send || qp->attr.qp_state == VIRTIO_IB_QPS_ERR)
			roce_tp_schedule(qp->transport);
		break;
	default:
		break;
	}
	tp->in_event = was_in;
	roce_tp_commit(tp);
}

/* ---- life cycle --------------------------------------------------------------- */

struct roce_tp *roce_tp_new(struct rres_dev *rd, struct loop *loop,
			    const struct roce_tp_ops *ops, void *ctx)
{
	struct roce_tp *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return NULL;
	tp->rd = rd;
	tp->loop = loop;
	tp->ops = *ops;
	tp->ctx = ctx;
	pkt_queue_init(&tp->rxq);
	pkt_queue_init(&tp->txq);
	loop_timer_init(&tp->poll_timer, poll_timer_cb, tp);
	tp->neigh = roce_neigh_new(tp);
	tp->ext = calloc(1, sizeof(*tp->ext));
	if (!tp->neigh || !tp->ext) {
		roce_neigh_free(tp->neigh);
		free(tp->ext);
		free(tp);
		return NULL;
	}
	rd->hooks.qp_create = hook_qp_create;
	rd->hooks.qp_modify = hook_qp_modify;
	rd->hooks.qp_destroy = hook_qp_destroy;
	rd->hooks.cq_create = hook_cq_create;
	rd->hooks.cq_destroy = hook_cq_destroy;
	rd->hooks.cq_resize = roce_cq_resize_hook;
	rd->hooks.cq_overflowed = roce_cq_overflowed_hook;
	rd->hooks.qp_resize = hook_qp_resize;
	rd->hooks.srq_create = hook_srq_create;
	rd->hooks.srq_destroy = hook_srq_destroy;
	rd->hooks.event_raised = hook_event_raised;
	rd->hooks.ah_create = hook_ah_create;
	rd->hooks.arg = tp;
	tp->ttl = ROCE_TP_TTL_DEFAULT;
	tp->run_max = ROCE_RUN_MAX;
	tp->keep_max = ROCE_TP_KEEP_FRAMES;
	roce_cc_params_default(&tp->cc);
	/* Payloads sent by reference are copied out before a mapping goes. */
	vhost_mem_set_unmap_hook(pkt_ref_fill_all);
	return tp;
}

void roce_tp_reset(struct roce_tp *tp)
{
	pkt_queue_purge(&tp->rxq);
	roce_hold_purge(tp, true);
	rx_room_check(tp);
	roce_neigh_flush(tp->neigh);
	roce_tp_commit(tp);
}

void roce_tp_free(struct roce_tp *tp)
{
	if (!tp)
		return;
	if (tp->rd->hooks.arg == tp)
		memset(&tp->rd->hooks, 0, sizeof(tp->rd->hooks));
	if (tp->loop)
		loop_timer_cancel(tp->loop, &tp->poll_timer);
	pkt_queue_purge(&tp->rxq);
	roce_hold_purge(tp, false);
	roce_neigh_free(tp->neigh);
	/* SRQs still there were forgotten by the device (like QPs and CQs). */
	while (tp->ext->srqs) {
		struct roce_tsrq *ts = tp->ext->srqs;

		tp->ext->srqs = ts->next;
		free(ts);
	}
	free(tp->ext);
	roce_tp_share_send_budget(tp, NULL);
	free(tp);
}

/* ---- stats -------------------------------------------------------------------- */

const struct roce_tp_stats *roce_tp_get_stats(const struct roce_tp *tp)
{
	return &tp->stats;
}

const struct roce_ext_stats *roce_tp_ext_stats(const struct roce_tp *tp)
{
	return &tp->ext->stats;
}

static const char *const wc_status_names[16] = {
	"success", "loc_len_err", "loc_qp_op_err", "loc_prot_err", "wr_flush_err",
	"bad_resp_err", "loc_access_err", "rem_inv_req_err", "rem_access_err",
	"rem_op_err", "retry_exc_err", "rnr_retry_exc_err", "rem_abort_err",
	"fatal_err", "resp_timeout_err", "general_err",
};

/* Dumps counter s->name when it is not zero (expanded from the lists of
 * roce_stats.h: the field's name is the counter's name in the dump). */
#define DUMP_COUNTER(name)                                                     \
	if (s->name)                                                           \
		fprintf(f, " " #name " %" PRIu64, s->name);

static const char *const ev_names[VIRTIO_IB_EVENT_NUM] = {
	"cq_err", "qp_fatal", "qp_req_err", "qp_access_err", "comm_est", "sq_drained",
	"path_mig", "path_mig_err", "device_fatal", "port_active", "port_err",
	"lid_change", "pkey_change", "sm_change", "srq_err", "srq_limit_reached",
	"qp_last_wqe_reached", "client_reregister", "gid_change",
};

/* Extension counters (one line, only if any is non-zero). */
static void dump_ext(const struct roce_tp_ext *x, FILE *f)
{
	const struct roce_ext_stats *s = &x->stats;
	static const struct roce_ext_stats zero;

	if (!memcmp(s, &zero, sizeof(zero)))
		return;
	fprintf(f, "  roce ext");
	ROCE_EXT_STATS_EVQ(DUMP_COUNTER)
	for (int i = 0; i < VIRTIO_IB_EVENT_NUM; i++)
		if (s->ev_by_type[i])
			fprintf(f, " ev_%s %" PRIu64, ev_names[i], s->ev_by_type[i]);
	ROCE_EXT_STATS(DUMP_COUNTER)
	fprintf(f, "\n");
}

static void roce_tp_dump_work(const struct roce_tp *tp, FILE *f);

void roce_tp_stats_add(struct roce_tp_stats *sum, const struct roce_tp_stats *s)
{
	uint64_t *d = (uint64_t *)sum;
	const uint64_t *a = (const uint64_t *)s;

	_Static_assert(sizeof(*s) % sizeof(uint64_t) == 0, "counters only");
	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		d[i] += a[i];
}

void roce_tp_dump_stats(const struct roce_tp *tp, FILE *f)
{
	roce_tp_stats_dump(&tp->stats, f);
	dump_ext(tp->ext, f);
	roce_tp_dump_work(tp, f);
}

void roce_tp_stats_dump(const struct roce_tp_stats *s, FILE *f)
{
	fprintf(f, "  roce rx");
	ROCE_TP_STATS_RX_FRAMES(DUMP_COUNTER)
	for (int i = 1; i < ROCE_RX_E_NUM; i++)
		if (s->rx_parse[i])
			fprintf(f, " drop_%s %" PRIu64, roce_rx_err_name(i), s->rx_parse[i]);
	ROCE_TP_STATS_RX(DUMP_COUNTER)
	fprintf(f, "\n  roce tx");
	ROCE_TP_STATS_TX(DUMP_COUNTER)
	fprintf(f, "\n  roce wr");
	ROCE_TP_STATS_WR_POPPED(DUMP_COUNTER)
	for (int i = 0; i < 16; i++)
		if (s->wc[i])
			fprintf(f, " wc_%s %" PRIu64, wc_status_names[i], s->wc[i]);
	ROCE_TP_STATS_WR(DUMP_COUNTER)
	fprintf(f, "\n  roce ext wr");
	if (s->wc_ext[0])
		fprintf(f, " wc_mw_bind_err %" PRIu64, s->wc_ext[0]);
	if (s->wc_ext[1])
		fprintf(f, " wc_other %" PRIu64, s->wc_ext[1]);
	ROCE_TP_STATS_EXT_WR(DUMP_COUNTER)
	fprintf(f, "\n  roce sched");
	ROCE_TP_STATS_SCHED(DUMP_COUNTER)
	fprintf(f, "\n");
}

static void roce_tp_dump_work(const struct roce_tp *tp, FILE *f)
{
	/* QPs with work in progress (or waiting in their rings). */
	for (const struct roce_tq *tq = tp->all; tq; tq = tq->all_next) {
		const struct vhost_vring *sr = tq->sq.r, *rr = tq->rq.r;
		uint16_t sq_avail = sr ? (uint16_t)(__atomic_load_n(&sr->vq.avail->idx,
								     __ATOMIC_RELAXED) -
						    sr->vq.last_avail_idx) : 0;

		if (tq->sq_head == tq->sq_tail && !sq_avail && !tq->res_active &&
		    !tq->on_runq && !tq->rnr_wait)
			continue;
		fprintf(f, "  roce qp 0x%x state %u sq %u/%u/%u avail %u%s%s psn 0x%x una 0x%x "
			"rd_out %u%s%s%s%s rq %s epsn 0x%x res %u\n", tq->qp->qpn,
			tq->qp->attr.qp_state, tq->sq_head, tq->sq_cur, tq->sq_tail, sq_avail,
			sr ? (sr->vq.notify_enabled ? " kicks" : " quiet") : " no-ring",
			tq->sq.polled ? " polled" : "", tq->sq_psn, tq->una, tq->rd_out,
			tq->on_runq ? " runq" : "", tq->rnr_wait ? " rnr" : "",
			tq->stalled ? " stalled" : "", tq->quiet ? " q" : "",
			rr || tq->qp->srq ? (tq->rwqe->valid ? "held" : "ok") : "no-ring", tq->epsn,
			tq->res_active);
	}
	for (const struct roce_tsrq *ts = tp->ext->srqs; ts; ts = ts->next) {
		const struct vhost_vring *r = ts->ring.r;

		fprintf(f, "  roce srq %u refs %u limit %u %s avail %u%s\n", ts->srq->srqn,
			ts->srq->refcnt, ts->srq->srq_limit, r ? "ring" : "no-ring",
			r ? (uint16_t)(__atomic_load_n(&r->vq.avail->idx, __ATOMIC_RELAXED) -
				       r->vq.last_avail_idx) : 0,
			ts->broken ? " broken" : "");
	}
}
