/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive queue: a receive-ring element is one WR, a device-readable
 * struct virtio_rdma_rq_req (24 bytes) followed by num_sge SGEs. The
 * responder pops one when a message needs it (the first packet of a SEND,
 * the last of a WRITE with immediate, a UD datagram), fills it, completes it
 * to the receive CQ and gives the descriptor back (used, length 0).
 */
#include "roce/roce_tp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "vhost/vhost_server.h"

int roce_rq_init(struct roce_tq *tq)
{
	tq->rq_max_sge = tq->qp->cap.max_recv_sge;
	tq->rwqe = calloc(1, sizeof(*tq->rwqe) + tq->rq_max_sge * sizeof(struct roce_sge));
	return tq->rwqe ? 0 : -ENOMEM;
}

void roce_rq_fini(struct roce_tq *tq)
{
	free(tq->rwqe);
	tq->rwqe = NULL;
}

void roce_rq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_rwqe *w)
{
	struct virtio_rdma_rq_req req;
	uint64_t total = 0;
	uint32_t n, i;
	int st;

	w->head = e->head;
	w->wr_id = 0;
	w->num_sge = 0;
	w->length = 0;
	w->status = VIRTIO_IB_WC_SUCCESS;
	if (e->out_len < sizeof(req)) {
		if (e->out_len >= 8) {
			uint64_t id;

			vq_elem_read(e, 0, &id, 8);
			w->wr_id = le64toh(id);
		}
		tq->tp->stats.wr_bad_chain++;
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	vq_elem_read(e, 0, &req, sizeof(req));
	w->wr_id = le64toh(req.wr_id);
	n = le32toh(req.num_sge);
	if (n > tq->rq_max_sge) {
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	if (e->out_len < sizeof(req) + (uint64_t)n * sizeof(struct virtio_rdma_sge)) {
		tq->tp->stats.wr_bad_chain++;
		w->status = VIRTIO_IB_WC_LOC_QP_OP_ERR;
		return;
	}
	for (i = 0; i < n; i++) {
		struct virtio_rdma_sge s;

		vq_elem_read(e, sizeof(req) + i * sizeof(s), &s, sizeof(s));
		w->sge[i].addr = le64toh(s.addr);
		w->sge[i].length = le32toh(s.length);
		w->sge[i].lkey = le32toh(s.lkey);
	}
	w->num_sge = n;
	st = roce_mem_check_sges(tq, w->sge, n, VIRTIO_IB_ACCESS_LOCAL_WRITE, &total);
	if (st) {
		w->status = (uint8_t)st;
		return;
	}
	w->length = total;
}

int roce_rq_get(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->rq.r;
	int rc;

	if (tq->rwqe->valid)
		return 1;
	if (!r || r->vq.broken)
		return 0;
	rc = vq_dev_pop(&r->vq, &tp->elem);
	if (rc == 0)
		return 0;
	if (rc < 0) {
		roce_tp_ring_broken(tp, &tq->rq);
		roce_tp_qp_error(tq, false);
		return -EIO;
	}
	roce_rq_parse(tq, &tp->elem, tq->rwqe);
	tq->rwqe->valid = true;
	tp->stats.recv_wrs++;
	return 1;
}

static void rq_give_back(struct roce_tq *tq, uint16_t head)
{
	struct vhost_vring *r = tq->rq.r;

	if (!r || r->vq.broken)
		return;
	vq_dev_fill(&r->vq, head, 0);
	roce_tp_ring_dirty(tq->tp, &tq->rq, false);
}

void roce_rq_complete(struct roce_tq *tq, struct roce_wc *wc)
{
	struct roce_tp *tp = tq->tp;
	struct roce_rwqe *w = tq->rwqe;

	wc->wr_id = w->wr_id;
	wc->qp_num = tq->qp->qpn;
	tp->stats.wc[wc->status & 15]++;
	roce_cq_post(tp, tq->qp->recv_cq, wc);
	rq_give_back(tq, w->head);
	w->valid = false;
}

void roce_rq_flush(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->rq.r;
	struct roce_wc wc;

	if (tq->rwqe->valid) {
		memset(&wc, 0, sizeof(wc));
		wc.status = VIRTIO_IB_WC_WR_FLUSH_ERR;
		wc.opcode = VIRTIO_IB_WC_RECV;
		roce_rq_complete(tq, &wc);
	}
	if (!r || r->vq.broken)
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
		if (tp->elem.out_len >= 8) {
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
		rq_give_back(tq, head);
	}
}

void roce_rq_drop(struct roce_tq *tq)
{
	if (!tq->rwqe->valid)
		return;
	rq_give_back(tq, tq->rwqe->head);
	tq->rwqe->valid = false;
}
