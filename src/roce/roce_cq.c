/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion writer. A completion goes into the next buffer the driver
 * posted on the CQ's completion virtqueue (one struct virtio_rdma_cq_req per
 * buffer, used length 48), in completion order. Without a free buffer it is
 * kept in the CQ's backlog (at most cqe entries, preallocated) and written
 * as soon as buffers arrive; a completion beyond that overflows the CQ (see
 * docs/spec.md "RDMA queues": counted, logged, the CQ's QPs go to ERR).
 *
 * Notification: rres_cq_notify_check() decides for each entry written
 * whether the CQ's arming (REQ_NOTIFY_CQ) asks for an interrupt; the ring is
 * then interrupted unconditionally (force), otherwise the virtio
 * suppression rules (event index / NO_INTERRUPT) decide.
 *
 * Extensions (ROCE_EXT only): completions with the new opcodes, status
 * MW_BIND_ERR and the WITH_INV flag (struct virtio_rdma_cq_req_ext); an
 * overflow raises CQ_ERR and QP_FATAL for each QP of the CQ; RESIZE_CQ
 * changes the backlog's capacity (cqe) keeping its order.
 */
#include "roce/roce_tp.h"
#include "roce/roce_srq_evq.h"
#include "roce/roce_virtio_rdma.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_server.h"

int roce_cq_attach_hook(struct rres_dev *rd, struct rres_cq *cq)
{
	struct roce_tcq *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return -ENOMEM;
	tc->tp = rd->hooks.arg;
	tc->cq = cq;
	tc->bl_cap = cq->cqe ? cq->cqe : 1;
	tc->backlog = calloc(tc->bl_cap, sizeof(*tc->backlog));
	if (!tc->backlog) {
		free(tc);
		return -ENOMEM;
	}
	tc->ring.completions = true;
	cq->transport = tc;
	return 0;
}

void roce_cq_detach_hook(struct rres_dev *rd, struct rres_cq *cq)
{
	struct roce_tcq *tc = cq->transport;
	struct roce_tp *tp = rd->hooks.arg;
	struct roce_tcq **pp;

	if (!tc)
		return;
	if (tc->on_bl_list) {
		for (pp = &tp->bl_list; *pp; pp = &(*pp)->bl_next) {
			if (*pp == tc) {
				*pp = tc->bl_next;
				break;
			}
		}
	}
	roce_tp_ring_ref_set(tp, &tc->ring, NULL);
	free(tc->backlog);
	free(tc);
	cq->transport = NULL;
}

void roce_cq_ring_set(struct roce_tcq *tc, struct vhost_vring *r)
{
	roce_tp_ring_ref_set(tc->tp, &tc->ring, r);
	if (r && !r->vq.broken && !tc->ring.polled)
		/* Buffers the driver adds matter only with a backlog. */
		vq_dev_set_notify(&r->vq, tc->bl_len > 0);
	if (r && tc->bl_len)
		roce_cq_drain(tc);
}

/* Write one completion into the next buffer. Returns false if none. */
static bool cq_write(struct roce_tcq *tc, const struct roce_wc *wc)
{
	struct roce_tp *tp = tc->tp;
	struct vhost_vring *r = tc->ring.r;
	struct vq_elem *e = &tp->cq_elem;
	struct virtio_rdma_cq_req_ext c;
	uint8_t status = wc->status, opcode = wc->opcode;
	uint32_t flags = wc->wc_flags;
	/* the virtio-rdma device's element: 38 bytes, IB numbering */
	bool rdma_dev = tp->rd->rdma_dev_layout;
	size_t size = rdma_dev ? sizeof(struct virtio_rdma_dev_cq_req) : sizeof(c);

	if (!r)
		return false;
	if (r->vq.broken) {
		/* Possibly found by an avail check, not a pop: reported
		 * here too (once per ring). */
		roce_tp_ring_broken(tp, &tc->ring);
		return false;
	}
	for (;;) {
		int rc = vq_dev_pop(&r->vq, e);

		if (rc == 0)
			return false;
		if (rc < 0) {
			roce_tp_ring_broken(tp, &tc->ring);
			return false;
		}
		if (e->in_len >= size)
			break;
		/* Too small for a completion: a driver bug. Give it back
		 * unused and take the next one. */
		tp->stats.cq_bad_buffers++;
		vq_dev_fill(&r->vq, e->head, 0);
		roce_tp_ring_dirty(tp, &tc->ring, false);
	}
	memset(&c, 0, sizeof(c));
	/* The header type of a UD datagram is an extension flag. */
	if (!tp->rd->ext)
		flags &= ~(uint32_t)VIRTIO_IB_WC_GRH_IPV4;
	if (status > VIRTIO_IB_WC_GENERAL_ERR || opcode > VIRTIO_IB_WC_RECV_RDMA_WITH_IMM ||
	    (flags & VIRTIO_IB_WC_WITH_INV)) {
		if (tp->rd->ext) {
			tp->ext->stats.wc_ext++;
		} else {
			/* Never for an RFC-only driver (the engine does not
			 * produce them then): a bug, counted. */
			tp->ext->stats.wc_ext_blocked++;
			if (status > VIRTIO_IB_WC_GENERAL_ERR)
				status = VIRTIO_IB_WC_GENERAL_ERR;
			if (opcode > VIRTIO_IB_WC_RECV_RDMA_WITH_IMM)
				opcode = VIRTIO_IB_WC_SEND;
			flags &= ~(uint32_t)VIRTIO_IB_WC_WITH_INV;
		}
	}
	if (rdma_dev) {
		struct virtio_rdma_dev_cq_req d;

		roce_virtio_rdma_cqe_encode(wc, status, opcode, flags, &d);
		vq_elem_write(e, 0, &d, sizeof(d));
		vq_dev_fill(&r->vq, e->head, sizeof(d));
		goto written;
	}
	c.wr_id = htole64(wc->wr_id);
	c.status = status;
	c.opcode = opcode;
	c.byte_len = htole32(wc->byte_len);
	/* imm: the immediate (network order) or, with WITH_INV, the
	 * invalidated rkey already little-endian: copied verbatim. */
	if (flags & (VIRTIO_IB_WC_WITH_IMM | VIRTIO_IB_WC_WITH_INV))
		c.imm_data = wc->imm;
	c.qp_num = htole32(wc->qp_num);
	c.src_qp = htole32(wc->src_qp);
	c.wc_flags = htole32(flags);
	vq_elem_write(e, 0, &c, sizeof(c));
	vq_dev_fill(&r->vq, e->head, sizeof(c));
written:
	roce_tp_ring_dirty(tp, &tc->ring,
			   rres_cq_notify_check(tc->cq, wc->solicited ||
						wc->status != VIRTIO_IB_WC_SUCCESS));
	tp->stats.cqe_written++;
	return true;
}

static void cq_overflow(struct roce_tcq *tc)
{
	struct roce_tp *tp = tc->tp;
	struct roce_tq *tq;

	tc->overflowed = true;
	tp->stats.cq_overflows++;
	LOG_PEER("roce: CQ %u overflowed (%u completions waiting for buffers): "
		 "its QPs go to the error state", tc->cq->cqn, tc->bl_len);
	if (tp->rd->ext) {
		tp->ext->stats.cq_err_events++;
		roce_tp_event(tp, &tc->cq->ev, VIRTIO_IB_EVENT_CQ_ERR);
	}
	for (tq = tp->all; tq; tq = tq->all_next)
		if (tq->qp->send_cq == tc->cq || tq->qp->recv_cq == tc->cq)
			roce_tp_qp_fatal(tq);
}

int roce_cq_resize_hook(struct rres_dev *rd, struct rres_cq *cq, uint32_t cqe)
{
	struct roce_tcq *tc = cq->transport;
	struct roce_tp *tp = rd->hooks.arg;
	struct roce_wc *bl;
	uint32_t cap = cqe ? cqe : 1;
	uint64_t budget;

	if (!tc)
		return 0;
	if (tc->bl_len > cqe) {
		tp->ext->stats.cq_resize_range++;
		return -ERANGE;
	}
	budget = roce_budget_cq(cqe);
	if (budget > tc->budget && roce_budget_charge(tp, budget - tc->budget)) {
		tp->ext->stats.cq_resize_nomem++;
		return -ENOMEM;
	}
	if (cap != tc->bl_cap) {
		bl = calloc(cap, sizeof(*bl));
		if (!bl) {
			if (budget > tc->budget)
				roce_budget_uncharge(tp, budget - tc->budget);
			tp->ext->stats.cq_resize_nomem++;
			return -ENOMEM;
		}
		/* Oldest first at index 0. */
		for (uint32_t i = 0; i < tc->bl_len; i++)
			bl[i] = tc->backlog[(tc->bl_head + i) % tc->bl_cap];
		free(tc->backlog);
		tc->backlog = bl;
		tc->bl_cap = cap;
		tc->bl_head = 0;
	}
	if (budget < tc->budget)
		roce_budget_uncharge(tp, tc->budget - budget);
	tc->budget = budget;
	tp->ext->stats.cq_resizes++;
	return 0;
}

bool roce_cq_overflowed_hook(struct rres_dev *rd, struct rres_cq *cq)
{
	const struct roce_tcq *tc = cq->transport;

	(void)rd;
	return tc && tc->overflowed;
}

void roce_cq_post(struct roce_tp *tp, struct rres_cq *cq, const struct roce_wc *wc)
{
	struct roce_tcq *tc = cq->transport;

	if (!tc)
		return;
	if (tc->overflowed) {
		tp->stats.cqe_dropped++;
		return;
	}
	if (!tc->bl_len && cq_write(tc, wc))
		return;
	if (tc->bl_len == tc->bl_cap) {
		tp->stats.cqe_dropped++;
		cq_overflow(tc);
		return;
	}
	tc->backlog[(tc->bl_head + tc->bl_len) % tc->bl_cap] = *wc;
	tc->bl_len++;
	tp->stats.cqe_backlogged++;
	if (!tc->on_bl_list) {
		tc->on_bl_list = true;
		tc->bl_next = tp->bl_list;
		tp->bl_list = tc;
		if (tc->ring.r && !tc->ring.r->vq.broken && !tc->ring.polled)
			vq_dev_set_notify(&tc->ring.r->vq, true);
	}
}

bool roce_cq_drain(struct roce_tcq *tc)
{
	bool any = false;

	while (tc->bl_len && cq_write(tc, &tc->backlog[tc->bl_head])) {
		tc->bl_head = (tc->bl_head + 1) % tc->bl_cap;
		tc->bl_len--;
		any = true;
	}
	if (!tc->bl_len) {
		tc->bl_head = 0;
		if (tc->ring.r && !tc->ring.r->vq.broken && !tc->ring.polled)
			vq_dev_set_notify(&tc->ring.r->vq, false);
	}
	return any;
}
