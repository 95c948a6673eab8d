/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive queue: a receive-ring element is one WR, a device-readable
 * struct virtio_rdma_rq_req (24 bytes) followed by num_sge SGEs. The
 * responder pops one when a message needs it (the first packet of a SEND,
 * the last of a WRITE with immediate, a UD datagram), fills it, completes it
 * to the receive CQ and gives the descriptor back (used, length 0).
 *
 * A QP created with an SRQ never uses its own receive ring: it takes the
 * next element of the SRQ's ring (same format, validated against the SRQ's
 * max_sge and PD), completes it on its own receive CQ with its own qp_num,
 * and gives it back on the SRQ's ring (out of order across QPs). The SRQ's
 * ring is never flushed: when such a QP leaves the receive side only the
 * element it holds completes (WR_FLUSH_ERR).
 */
#include "roce/roce_srq_evq.h"
#include "vrdma/virtio_rdma.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "vhost/vhost_server.h"

int roce_rq_init(struct roce_tq *tq)
{
	uint32_t n = tq->qp->cap.max_recv_sge;

	tq->rq_max_sge = n;
	/* Room for the SRQ's elements too. */
	if (tq->qp->srq && tq->qp->srq->max_sge > n)
		n = tq->qp->srq->max_sge;
	tq->rwqe = calloc(1, sizeof(*tq->rwqe) + (size_t)n * sizeof(struct roce_sge));
	return tq->rwqe ? 0 : -ENOMEM;
}

void roce_rq_fini(struct roce_tq *tq)
{
	free(tq->rwqe);
	tq->rwqe = NULL;
}

/* Parse an element with at most max_sge SGEs; srq: checked against its PD
 * (NULL: the QP's). */
static void rq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_rwqe *w,
		     uint32_t max_sge, const struct rres_srq *srq)
{
	struct virtio_rdma_rq_req req;
	/* the virtio-rdma device's element has a 12-byte header (num_sge, wr_id) */
	bool rdma_dev = tq->tp->rd->rdma_dev_layout;
	size_t hdr = rdma_dev ? sizeof(struct virtio_rdma_dev_rq_req) : sizeof(req);
	uint64_t total = 0;
	uint32_t n, i;
	int st;

	w->head = e->head;
	w->wr_id = 0;
	w->num_sge = 0;
	w->length = 0;
	w->status = VIRTIO_IB_WC_SUCCESS;
	if (e->out_len < hdr) {
		if (e->out_len >= (rdma_dev ? 12u : 8u)) {
			uint64_t id;

			vq_elem_read(e, rdma_dev ? 4 : 0, &id, 8);
			w->wr_id = le64toh(id);
		}
		tq->tp->stats.wr_bad_chain++;
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	if (rdma_dev) {
		struct virtio_rdma_dev_rq_req v;

		vq_elem_read(e, 0, &v, sizeof(v));
		req.wr_id = v.wr_id;
		req.num_sge = v.num_sge;
	} else {
		vq_elem_read(e, 0, &req, sizeof(req));
	}
	w->wr_id = le64toh(req.wr_id);
	n = le32toh(req.num_sge);
	if (n > max_sge) {
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	if (e->out_len < hdr + (uint64_t)n * sizeof(struct virtio_rdma_sge)) {
		tq->tp->stats.wr_bad_chain++;
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	for (i = 0; i < n; i++) {
		struct virtio_rdma_sge s;

		vq_elem_read(e, hdr + i * sizeof(s), &s, sizeof(s));
		w->sge[i].addr = le64toh(s.addr);
		w->sge[i].length = le32toh(s.length);
		w->sge[i].lkey = le32toh(s.lkey);
	}
	w->num_sge = n;
	if (srq)
		st = roce_mem_check_sges_pd(tq->tp->rd, srq->pd, w->sge, n,
					    VIRTIO_IB_ACCESS_LOCAL_WRITE, &total);
	else
		st = roce_mem_check_sges(tq, w->sge, n, VIRTIO_IB_ACCESS_LOCAL_WRITE, &total);
	if (st) {
		w->status = (uint8_t)st;
		return;
	}
	w->length = total;
}

void roce_rq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_rwqe *w)
{
	w->srq = NULL;
	rq_parse(tq, e, w, tq->rq_max_sge, NULL);
}

/* Take the next element of the QP's SRQ (empty, broken: as roce_rq_get). */
static enum roce_rq_got rq_get_srq(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct rres_srq *srq = tq->qp->srq;
	struct roce_tsrq *ts = srq->transport;
	struct roce_ext_stats *xs = &tp->ext->stats;
	struct roce_rwqe *w = tq->rwqe;
	struct vhost_vring *r;
	int rc;

	if (!ts || ts->broken || !(r = ts->ring.r)) {
		xs->srq_empty++;
		return ROCE_RQ_EMPTY;
	}
	rc = r->vq.broken ? -EIO : vq_dev_pop(&r->vq, &tp->elem);
	if (rc == 0) {
		xs->srq_empty++;
		return ROCE_RQ_EMPTY;
	}
	if (rc < 0) {
		roce_srq_broken(ts);
		return ROCE_RQ_BROKEN;
	}
	rq_parse(tq, &tp->elem, w, srq->max_sge, srq);
	w->srq = srq;
	w->valid = true;
	tp->stats.recv_wrs++;
	xs->srq_recv_wrs++;
	/* The limit: armed, and fewer elements left than it. Counting reads
	 * the avail index again: a corrupt one breaks the ring there, which
	 * is then handled like a failed pop (the element just taken is
	 * flushed with the QPs of the SRQ). */
	if (srq->srq_limit && roce_srq_count(ts) < srq->srq_limit && !r->vq.broken) {
		srq->srq_limit = 0;
		xs->srq_limit_events++;
		roce_tp_event(tp, &srq->ev, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	}
	if (r->vq.broken) {
		roce_srq_broken(ts);
		roce_rq_srq_release(tq); /* (done already unless tq was in ERR) */
		return ROCE_RQ_BROKEN;
	}
	return ROCE_RQ_READY;
}

/* Start loading the next receive element (its first two lines) and the
 * descriptor of the one after: a stream of SENDs takes one per message, and
 * the driver's core just wrote them. */
static void rq_prefetch_next(const struct vq_dev *vq)
{
	uint32_t len = 0;
	const uint8_t *p = vq_dev_peek(vq, 0, &len);

	vq_dev_prefetch_desc(vq, 1);
	if (!p || !len)
		return;
	__builtin_prefetch(p, 0, 3);
	if (len > 64)
		__builtin_prefetch(p + MIN(len, 128u) - 1, 0, 3);
}

enum roce_rq_got roce_rq_get(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->rq.r;
	int rc;

	if (tq->rwqe->valid)
		return ROCE_RQ_READY;
	if (tq->qp->srq)
		return rq_get_srq(tq);
	if (!r)
		return ROCE_RQ_EMPTY;
	rc = r->vq.broken ? -EIO : vq_dev_pop(&r->vq, &tp->elem);
	if (rc == 0)
		return ROCE_RQ_EMPTY;
	if (rc < 0) {
		roce_tp_ring_broken(tp, &tq->rq);
		roce_tp_qp_error(tq, false);
		return ROCE_RQ_BROKEN;
	}
	rq_prefetch_next(&r->vq);
	roce_rq_parse(tq, &tp->elem, tq->rwqe);
	tq->rwqe->valid = true;
	tp->stats.recv_wrs++;
	return ROCE_RQ_READY;
}

/* Used entry for an element of the QP's receive ring, or of srq's. */
static void rq_give_back(struct roce_tq *tq, uint16_t head, struct rres_srq *srq)
{
	struct roce_ring_ref *ref = &tq->rq;
	struct vhost_vring *r;

	if (srq) {
		struct roce_tsrq *ts = srq->transport;

		if (!ts)
			return;
		ref = &ts->ring;
	}
	r = ref->r;
	if (!r || r->vq.broken)
		return;
	vq_dev_fill(&r->vq, head, 0);
	roce_tp_ring_dirty(tq->tp, ref, false);
}

void roce_rq_complete(struct roce_tq *tq, struct roce_wc *wc)
{
	struct roce_tp *tp = tq->tp;
	struct roce_rwqe *w = tq->rwqe;
	struct rres_srq *srq = w->srq;
	uint16_t head = w->head;

	/* Released before posting: an overflow of the CQ moves the QP to
	 * ERR, which must not find this element still held. */
	w->valid = false;
	wc->wr_id = w->wr_id;
	wc->qp_num = tq->qp->qpn;
	tp->stats.wc[wc->status & 15]++;
	roce_cq_post(tp, tq->qp->recv_cq, wc);
	rq_give_back(tq, head, srq);
}

void roce_rq_srq_release(struct roce_tq *tq)
{
	struct roce_wc wc;

	if (!tq->rwqe || !tq->rwqe->valid)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.status = VIRTIO_IB_WC_WR_FLUSH_ERR;
	wc.opcode = VIRTIO_IB_WC_RECV;
	tq->tp->ext->stats.srq_flushed += tq->rwqe->srq != NULL;
	roce_rq_complete(tq, &wc);
}

void roce_rq_flush(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->rq.r;
	struct roce_wc wc;

	roce_rq_srq_release(tq);
	/* An SRQ's ring is never flushed (other QPs use it). */
	if (tq->qp->srq || !r || r->vq.broken)
		return;
	for (;;) {
		int rc = vq_dev_pop(&r->vq, &tp->elem);
		uint16_t head;

		if (rc == 0)
			break;
		if (rc < 0) {
			roce_tp_ring_broken(tp, &tq->rq);
			break;
		}
		head = tp->elem.head;
		memset(&wc, 0, sizeof(wc));
		if (tp->rd->rdma_dev_layout && tp->elem.out_len >= 12) {
			uint64_t id; /* virtio-rdma element: wr_id at 4 */

			vq_elem_read(&tp->elem, 4, &id, 8);
			wc.wr_id = le64toh(id);
		} else if (!tp->rd->rdma_dev_layout && tp->elem.out_len >= 8) {
			uint64_t id;

			vq_elem_read(&tp->elem, 0, &id, 8);
			wc.wr_id = le64toh(id);
		}
		wc.status = VIRTIO_IB_WC_WR_FLUSH_ERR;
		wc.opcode = VIRTIO_IB_WC_RECV;
		wc.qp_num = tq->qp->qpn;
		tp->stats.recv_wrs++;
		tp->stats.wc[VIRTIO_IB_WC_WR_FLUSH_ERR]++;
		roce_cq_post(tp, tq->qp->recv_cq, &wc);
		rq_give_back(tq, head, NULL);
	}
}

void roce_rq_drop(struct roce_tq *tq)
{
	if (!tq->rwqe->valid)
		return;
	if (tq->rwqe->srq) {
		/* An SRQ element cannot go back to the SRQ: it completes. */
		roce_rq_srq_release(tq);
		return;
	}
	tq->rwqe->valid = false;
	rq_give_back(tq, tq->rwqe->head, NULL);
}
