/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport engine, per device: creation, the control-path hooks (QP and CQ
 * life cycle, state changes), ring attach/detach, the run queue with a
 * per-QP packet budget, poll/arm/disarm for the loop, used-ring publication
 * and the counters.
 */
#include "roce/roce_tp.h"

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

void roce_tp_commit(struct roce_tp *tp)
{
	struct roce_ring_ref *ref;

	while ((ref = tp->dirty)) {
		tp->dirty = ref->next_dirty;
		ref->next_dirty = NULL;
		ref->dirty = false;
		if (ref->r && !ref->r->vq.broken) {
			vq_dev_flush(&ref->r->vq);
			tp->ops.notify(tp->ctx, ref->r, ref->force);
		}
		ref->force = false;
	}
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
	if (ref->polled)
		tp->npolled--;
	ref->r = r;
	ref->polled = r && r->kick_fd < 0;
	if (ref->polled)
		tp->npolled++;
}

void roce_tp_ring_broken(struct roce_tp *tp, struct roce_ring_ref *ref)
{
	tp->stats.ring_errors++;
	if (ref->r && tp->ops.ring_error)
		tp->ops.ring_error(tp->ctx, ref->r);
}

/* ---- scheduling ----------------------------------------------------------- */

void roce_tp_schedule(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	if (tq->on_runq)
		return;
	tq->on_runq = true;
	tq->run_next = NULL;
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
	tq->quiet_next = tp->quiet;
	tp->quiet = tq;
}

/* Kicks back on; returns true if the ring has work already. */
static bool sq_unquiet(struct roce_tq *tq)
{
	struct vhost_vring *r = tq->sq.r;

	tq->quiet = false;
	tq->quiet_next = NULL;
	if (!r || r->vq.broken)
		return false;
	vq_dev_set_notify(&r->vq, true);
	return vq_dev_avail(&r->vq) != 0;
}

static void quiet_remove(struct roce_tp *tp, struct roce_tq *tq)
{
	struct roce_tq **pp;

	if (!tq->quiet)
		return;
	for (pp = &tp->quiet; *pp; pp = &(*pp)->quiet_next) {
		if (*pp == tq) {
			*pp = tq->quiet_next;
			break;
		}
	}
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
	struct roce_qp *qp = tq->qp;
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
	if (st >= VIRTIO_IB_QPS_RTR && qp->type == VIRTIO_IB_QPT_RC) {
		n = roce_resp_run(tq, budget, &m);
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
	if (qp->sq_draining && tq->sq_head == tq->sq_tail)
		roce_qp_sq_drained(qp);
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

/* Rings without a kick fd: look for work the driver posted. */
static void poll_rings(struct roce_tp *tp)
{
	struct roce_tq *tq;

	for (tq = tp->polled; tq; tq = tq->poll_next) {
		uint8_t st = tq->qp->attr.qp_state;

		if (tq->on_runq)
			continue;
		if (tq->sq.polled && tq->sq.r && st != VIRTIO_IB_QPS_RESET &&
		    st != VIRTIO_IB_QPS_INIT && st != VIRTIO_IB_QPS_RTR &&
		    tq->sq_tail - tq->sq_head < tq->sq_slots && vq_dev_avail(&tq->sq.r->vq))
			roce_tp_schedule(tq);
		else if (tq->rq.polled && tq->rq.r && st == VIRTIO_IB_QPS_ERR &&
			 vq_dev_avail(&tq->rq.r->vq))
			roce_tp_schedule(tq);
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
	uint32_t budget = ROCE_TP_RUN_BUDGET, n, turns;
	bool work = false;

	if (roce_recv_run(tp, ROCE_TP_RX_BATCH))
		work = true;
	if (tp->polled)
		poll_rings(tp);
	for (struct roce_tq *q = tp->quiet; q; q = q->quiet_next)
		if (!q->on_runq && q->sq.r && q->sq_tail - q->sq_head < q->sq_slots &&
		    vq_dev_avail(&q->sq.r->vq))
			roce_tp_schedule(q);
	if (tp->bl_list && drain_backlogs(tp))
		work = true;
	/* Each QP queued now gets one turn of at most ROCE_TP_QP_BUDGET
	 * packets; those with more go to the back. */
	turns = 0;
	for (struct roce_tq *t = tp->runq_head; t; t = t->run_next)
		turns++;
	while (turns-- && budget) {
		struct roce_tq *tq = runq_pop(tp);
		uint32_t b = MIN(budget, (uint32_t)ROCE_TP_QP_BUDGET);
		uint64_t before = tp->stats.tx_frames;

		if (!tq)
			break;
		if (qp_run(tq, b))
			roce_tp_schedule(tq);
		n = (uint32_t)(tp->stats.tx_frames - before);
		budget -= MIN(n, budget);
		work = true;
	}
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
	bool pending = tp->rxq.len || tp->runq_head;
	bool need_timer = tp->polled != NULL;
	struct roce_tcq *tc;
	struct roce_tq *q;

	while ((q = tp->quiet)) {
		tp->quiet = q->quiet_next;
		/* Posted while kicks were off: nobody will kick for it. */
		if (sq_unquiet(q)) {
			roce_tp_schedule(q);
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
	}
	if (need_timer && tp->loop && !pending)
		loop_timer_arm(tp->loop, &tp->poll_timer, loop_now_ns() + ROCE_TP_POLL_NS);
	return pending;
}

void roce_tp_disarm(struct roce_tp *tp)
{
	(void)tp;
}

/* ---- errors and paths ----------------------------------------------------- */

void roce_tp_qp_error(struct roce_tq *tq, bool sqe)
{
	struct roce_tp *tp = tq->tp;
	struct roce_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;

	if (st == VIRTIO_IB_QPS_RESET || st == VIRTIO_IB_QPS_ERR)
		return;
	if (sqe && qp->type != VIRTIO_IB_QPT_RC && st == VIRTIO_IB_QPS_RTS) {
		roce_qp_async_state(tp->rd, qp, VIRTIO_IB_QPS_SQE);
		LOG_DEBUG("roce: QP 0x%x to SQE", qp->qpn);
	} else {
		if (st == VIRTIO_IB_QPS_SQE && sqe)
			return;
		roce_qp_async_state(tp->rd, qp, VIRTIO_IB_QPS_ERR);
		tp->stats.qp_errors++;
		LOG_DEBUG("roce: QP 0x%x to ERR", qp->qpn);
		if (tp->loop) {
			loop_timer_cancel(tp->loop, &tq->rexmit_timer);
			loop_timer_cancel(tp->loop, &tq->rnr_timer);
		}
		/* Kicks on the receive ring now matter (flush). */
		if (tq->rq.r && !tq->rq.r->vq.broken && !tq->rq.polled)
			vq_dev_set_notify(&tq->rq.r->vq, true);
	}
	tq->state = qp->attr.qp_state;
	roce_tp_schedule(tq);
}

void roce_tp_path_from_av(const struct roce_tp *tp, const struct roce_qp *qp,
			  const struct roce_av *av, struct roce_path *path)
{
	memset(path, 0, sizeof(*path));
	memcpy(path->smac, tp->rd->mac, 6);
	memcpy(path->dmac, av->dmac, 6);
	memcpy(path->sgid, av->sgid, 16);
	memcpy(path->dgid, av->dgid, 16);
	path->tclass = av->traffic_class;
	path->hop_limit = av->hop_limit;
	path->flow_label = av->flow_label;
	path->udp_sport = roce_udp_sport_from_qpn(qp->qpn);
}

void roce_tp_xmit(struct roce_tp *tp, struct pkt *p, const struct roce_path *path)
{
	static const uint8_t zero[6];

	if (unlikely(!memcmp(path->dmac, zero, 6))) {
		roce_neigh_output(tp->neigh, p, path->sgid, path->dgid);
		return;
	}
	tp->stats.tx_frames++;
	tp->stats.tx_bytes += p->len;
	tp->ops.xmit(tp->ctx, p);
}

/* ---- hooks ------------------------------------------------------------------ */

static struct roce_tp *tp_of(struct roce_dev *rd)
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

static int hook_qp_create(struct roce_dev *rd, struct roce_qp *qp)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = calloc(1, sizeof(*tq));
	struct vhost_vring *r;

	if (!tq)
		return -ENOMEM;
	tq->tp = tp;
	tq->qp = qp;
	tq->state = VIRTIO_IB_QPS_RESET;
	loop_timer_init(&tq->rexmit_timer, roce_comp_rexmit_timer, tq);
	loop_timer_init(&tq->rnr_timer, roce_comp_rnr_timer, tq);
	if (roce_rq_init(tq) || roce_resp_init(tq)) {
		roce_rq_fini(tq);
		free(tq);
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
	r = tp->ops.ring(tp->ctx, qp->rq_vq);
	if (r)
		tq_attach_rq(tq, r);
	return 0;
}

static void hook_qp_modify(struct roce_dev *rd, struct roce_qp *qp, uint8_t old,
			   uint32_t mask)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = qp->transport;
	uint8_t st = qp->attr.qp_state;

	if (!tq)
		return;
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
		roce_sq_drop(tq);
		roce_rq_drop(tq);
		roce_comp_reset(tq);
		roce_resp_reset(tq);
		break;
	case VIRTIO_IB_QPS_RTR:
		if (old != VIRTIO_IB_QPS_RTR)
			roce_resp_reset(tq);
		break;
	case VIRTIO_IB_QPS_RTS:
		if (old == VIRTIO_IB_QPS_RTR)
			roce_comp_reset(tq);
		else if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
			roce_resp_reset(tq);
		break;
	case VIRTIO_IB_QPS_SQD:
		if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
			roce_resp_reset(tq);
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
		break;
	default:
		break;
	}
	tq->state = st;
	roce_tp_schedule(tq);
	roce_tp_commit(tp);
}

static void hook_qp_destroy(struct roce_dev *rd, struct roce_qp *qp)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tq *tq = qp->transport;

	if (!tq)
		return;
	roce_sq_flush(tq);
	roce_rq_flush(tq);
	roce_tp_commit(tp);
	if (tp->loop) {
		loop_timer_cancel(tp->loop, &tq->rexmit_timer);
		loop_timer_cancel(tp->loop, &tq->rnr_timer);
	}
	runq_remove(tp, tq);
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
	roce_sq_detach(tq);
	roce_rq_fini(tq);
	roce_resp_fini(tq);
	qp->transport = NULL;
	free(tq);
}

static int hook_cq_create(struct roce_dev *rd, struct roce_cq *cq)
{
	struct roce_tp *tp = tp_of(rd);
	struct vhost_vring *r;

	if (roce_cq_attach_hook(rd, cq))
		return -ENOMEM;
	r = tp->ops.ring(tp->ctx, cq->vq);
	if (r)
		roce_cq_ring_set(cq->transport, r);
	return 0;
}

static void hook_cq_destroy(struct roce_dev *rd, struct roce_cq *cq)
{
	struct roce_tp *tp = tp_of(rd);
	struct roce_tcq *tc = cq->transport;

	if (!tc)
		return;
	roce_tp_commit(tp);
	roce_tp_ring_ref_set(tp, &tc->ring, NULL);
	roce_cq_detach_hook(rd, cq);
}

/* ---- ring events ------------------------------------------------------------ */

void roce_tp_ring_started(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_dev *rd = tp->rd;
	struct roce_qp *qp;
	struct roce_cq *cq;
	bool is_send;

	switch (roce_ring_decode(rd, r->idx, &(uint32_t){ 0 })) {
	case VRDMA_VQ_CQ:
		cq = roce_ring_cq(rd, r->idx);
		if (cq && cq->transport)
			roce_cq_ring_set(cq->transport, r);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = roce_ring_qp(rd, r->idx, &is_send);
		if (!qp || !qp->transport)
			break;
		if (is_send)
			tq_attach_sq(qp->transport, r);
		else
			tq_attach_rq(qp->transport, r);
		break;
	default:
		break;
	}
	roce_tp_commit(tp);
}

void roce_tp_ring_stopped(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_dev *rd = tp->rd;
	struct roce_qp *qp;
	struct roce_cq *cq;
	struct roce_tq *tq;
	bool is_send;

	switch (roce_ring_decode(rd, r->idx, &(uint32_t){ 0 })) {
	case VRDMA_VQ_CQ:
		cq = roce_ring_cq(rd, r->idx);
		if (cq && cq->transport && ((struct roce_tcq *)cq->transport)->ring.r == r)
			roce_cq_ring_set(cq->transport, NULL);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = roce_ring_qp(rd, r->idx, &is_send);
		if (!qp || !(tq = qp->transport))
			break;
		/* The driver took the ring back: what was popped from it is
		 * forgotten (no used entries, no completions). */
		if (is_send && tq->sq.r == r) {
			quiet_remove(tp, tq);
			roce_tp_ring_ref_set(tp, &tq->sq, NULL);
			roce_sq_detach(tq);
		} else if (!is_send && tq->rq.r == r) {
			roce_tp_ring_ref_set(tp, &tq->rq, NULL);
			tq->rwqe->valid = false;
		} else {
			break;
		}
		poll_list_update(tp, tq);
		/* Its work requests are gone: the QP cannot go on. */
		roce_tp_qp_error(tq, false);
		break;
	default:
		break;
	}
	roce_tp_commit(tp);
}

void roce_tp_ring_kick(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_dev *rd = tp->rd;
	struct roce_qp *qp;
	struct roce_cq *cq;
	bool is_send;

	switch (roce_ring_decode(rd, r->idx, &(uint32_t){ 0 })) {
	case VRDMA_VQ_CQ:
		cq = roce_ring_cq(rd, r->idx);
		if (cq && cq->transport && ((struct roce_tcq *)cq->transport)->bl_len)
			roce_cq_drain(cq->transport);
		break;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = roce_ring_qp(rd, r->idx, &is_send);
		if (!qp || !qp->transport)
			break;
		if (is_send || qp->attr.qp_state == VIRTIO_IB_QPS_ERR)
			roce_tp_schedule(qp->transport);
		break;
	default:
		break;
	}
	roce_tp_commit(tp);
}

/* ---- life cycle --------------------------------------------------------------- */

struct roce_tp *roce_tp_new(struct roce_dev *rd, struct loop *loop,
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
	loop_timer_init(&tp->poll_timer, poll_timer_cb, tp);
	tp->neigh = roce_neigh_new(tp);
	if (!tp->neigh) {
		free(tp);
		return NULL;
	}
	rd->hooks.qp_create = hook_qp_create;
	rd->hooks.qp_modify = hook_qp_modify;
	rd->hooks.qp_destroy = hook_qp_destroy;
	rd->hooks.cq_create = hook_cq_create;
	rd->hooks.cq_destroy = hook_cq_destroy;
	rd->hooks.arg = tp;
	return tp;
}

void roce_tp_reset(struct roce_tp *tp)
{
	pkt_queue_purge(&tp->rxq);
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
	roce_neigh_free(tp->neigh);
	free(tp);
}

/* ---- stats -------------------------------------------------------------------- */

const struct roce_tp_stats *roce_tp_get_stats(const struct roce_tp *tp)
{
	return &tp->stats;
}

static const char *const wc_status_names[16] = {
	"success", "loc_len_err", "loc_qp_op_err", "loc_prot_err", "wr_flush_err",
	"bad_resp_err", "loc_access_err", "rem_inv_req_err", "rem_access_err",
	"rem_op_err", "retry_exc_err", "rnr_retry_exc_err", "rem_abort_err",
	"fatal_err", "resp_timeout_err", "general_err",
};

#define DUMP(f, s, field)                                                      \
	do {                                                                   \
		if ((s)->field)                                                \
			fprintf(f, " " #field " %" PRIu64, (s)->field);        \
	} while (0)

void roce_tp_dump_stats(const struct roce_tp *tp, FILE *f)
{
	const struct roce_tp_stats *s = &tp->stats;

	fprintf(f, "  roce rx");
	DUMP(f, s, rx_frames);
	DUMP(f, s, rx_bytes);
	DUMP(f, s, rx_queue_full);
	for (int i = 1; i < ROCE_RX_E_NUM; i++)
		if (s->rx_parse[i])
			fprintf(f, " drop_%s %" PRIu64, roce_rx_err_name(i), s->rx_parse[i]);
	DUMP(f, s, rx_not_ours);
	DUMP(f, s, rx_no_qp);
	DUMP(f, s, rx_qp_type);
	DUMP(f, s, rx_qp_state);
	DUMP(f, s, rx_pkey);
	DUMP(f, s, rx_bad_src);
	DUMP(f, s, rx_qkey);
	DUMP(f, s, rx_cnp);
	DUMP(f, s, rx_dup);
	DUMP(f, s, rx_seq_err);
	DUMP(f, s, rx_opcode_seq);
	DUMP(f, s, rx_len_err);
	DUMP(f, s, rx_mtu);
	DUMP(f, s, rx_no_rwqe);
	DUMP(f, s, rx_uc_dropped);
	DUMP(f, s, rx_stale_resp);
	DUMP(f, s, rx_bad_resp);
	DUMP(f, s, rx_arp);
	DUMP(f, s, rx_nd);
	fprintf(f, "\n  roce tx");
	DUMP(f, s, tx_frames);
	DUMP(f, s, tx_bytes);
	DUMP(f, s, tx_nobuf);
	DUMP(f, s, tx_build_err);
	DUMP(f, s, acks_sent);
	DUMP(f, s, naks_sent);
	DUMP(f, s, rnr_naks_sent);
	DUMP(f, s, read_resp_sent);
	DUMP(f, s, acks_rcvd);
	DUMP(f, s, naks_rcvd);
	DUMP(f, s, rnr_naks_rcvd);
	DUMP(f, s, rewinds);
	DUMP(f, s, retransmits);
	DUMP(f, s, timeouts);
	DUMP(f, s, dup_reads);
	fprintf(f, "\n  roce wr");
	DUMP(f, s, send_wrs);
	DUMP(f, s, recv_wrs);
	for (int i = 0; i < 16; i++)
		if (s->wc[i])
			fprintf(f, " wc_%s %" PRIu64, wc_status_names[i], s->wc[i]);
	DUMP(f, s, wr_bad_chain);
	DUMP(f, s, cqe_written);
	DUMP(f, s, cqe_backlogged);
	DUMP(f, s, cq_bad_buffers);
	DUMP(f, s, cq_overflows);
	DUMP(f, s, cqe_dropped);
	DUMP(f, s, ring_errors);
	DUMP(f, s, qp_errors);
	DUMP(f, s, neigh_requests);
	DUMP(f, s, neigh_replies);
	DUMP(f, s, neigh_resolved);
	DUMP(f, s, neigh_queued);
	DUMP(f, s, neigh_dropped);
	fprintf(f, "\n");
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
			rr ? (tq->rwqe->valid ? "held" : "ok") : "no-ring", tq->epsn, tq->res_active);
	}
}
