/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the RoCE control path (src/backend/rres_ctrl.c) through the shared
 * harness (ctrl_harness.h: records, memory, common checks). The device
 * offers the extension (ROCE_EXT, 3 SRQs, 3 windows) and starts with it
 * negotiated; commands 28..31 are unknown. A transport-side action (async QP
 * state change, CQ notification check, MR translation, device reset, REG_MR,
 * invalidation, BIND_MW, events, ROCE_EXT on/off, link and MAC changes) is
 * chosen by the record's first byte.
 *
 * After every step the model's invariants hold: reference counts equal the
 * objects that hold them, registered pages add up, windows never exceed
 * their MR, the event FIFO is consistent.
 */
#include "ctrl_harness.h"
#include "vrdma/virtio_net_roce_cm.h"

/* Walk every table and check reference counts and page accounting. */
static void check_invariants(const struct rres_dev *rd)
{
	uint64_t pd_refs = 0, cq_refs = 0, pages = 0, holders = 0, srq_refs = 0;
	uint32_t i, n, nmw = 0, nev = 0;
	struct rres_counts c;

	for (i = 0, n = 0; i < rd->mrs.size; i++) {
		const struct rres_mr *mr = rd->mrs.slot[i];
		uint32_t bound = 0;

		if (!mr)
			continue;
		n++;
		check_mr(rd, mr, i, &pages, &holders);
		if (mr->type == RRES_MR_MW) {
			const struct rres_mr *b = mr->bound_mr;

			nmw++;
			if ((mr->state == RRES_MR_VALID) != (b != NULL) || mr->nbound)
				die("mw state");
			if (b && (rres_mr_lookup(rd, b->mrn) != b || b->type == RRES_MR_MW ||
				  b->type == RRES_MR_DMA || b->state != RRES_MR_VALID ||
				  b->pd != mr->pd))
				die("mw bound");
			/* a window never grants more than its MR */
			if (b && (mr->iova < b->iova || mr->length > b->length ||
				  mr->iova - b->iova > b->length - mr->length))
				die("mw range");
			if (b && (mr->access & (VIRTIO_IB_ACCESS_REMOTE_WRITE |
						VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
			    !(b->access & VIRTIO_IB_ACCESS_LOCAL_WRITE))
				die("mw rights");
			if (rres_mr_lookup_lkey(rd, mr->lkey, mr->pd, 0))
				die("mw local");
			continue;
		}
		for (uint32_t j = 0; j < rd->mrs.size; j++) {
			const struct rres_mr *w = rd->mrs.slot[j];

			bound += w && w->type == RRES_MR_MW && w->bound_mr == mr;
		}
		if (bound != mr->nbound)
			die("nbound");
		if (mr->state != RRES_MR_VALID &&
		    (rres_mr_lookup_lkey(rd, mr->lkey, mr->pd, 0) ||
		     rres_mr_lookup_rkey(rd, mr->rkey, mr->pd, 0)))
			die("free key usable");
	}
	if (n != rd->mrs.used || pages != rd->mr_pages || nmw != rd->nmw)
		die("mr count");
	rres_dev_counts(rd, &c);
	if (c.mw != nmw || c.mr != n - nmw || c.mr > rd->attr.max_mr || nmw > rd->attr.max_mw)
		die("mr counts");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->srqs.size; i++) {
		const struct rres_srq *srq = rd->srqs.slot[i];

		if (!srq)
			continue;
		n++;
		if (srq->srqn != i || srq->ev.id != i || rres_srq_lookup(rd, i) != srq ||
		    rres_ring_srq(rd, srq->vq) != srq || srq->srq_limit > srq->max_wr)
			die("srq");
		srq_refs += srq->refcnt;
	}
	if (n != rd->srqs.used)
		die("srq count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->ahs.size; i++)
		n += rd->ahs.slot[i] != NULL;
	if (n != rd->ahs.used)
		die("ah count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->qps.size; i++) {
		const struct rres_qp *qp = rd->qps.slot[i];

		if (!qp)
			continue;
		n++;
		if (qp->index != i || vrdma_qpn_index(qp->qpn) != i || i == 0 ||
		    qp->qpn == VRDMA_QPN_MULTICAST || rres_qp_lookup(rd, qp->qpn) != qp)
			die("qp");
		if ((qp->type == VIRTIO_IB_QPT_GSI) != (qp->qpn == VRDMA_GSI_QPN))
			die("gsi");
		if (qp->attr.qp_state > VIRTIO_IB_QPS_ERR)
			die("state");
		if (rres_cq_lookup(rd, qp->send_cq->cqn) != qp->send_cq ||
		    rres_cq_lookup(rd, qp->recv_cq->cqn) != qp->recv_cq)
			die("qp cq");
		if (qp->srq && (rres_srq_lookup(rd, qp->srq->srqn) != qp->srq ||
				qp->cap.max_recv_wr || qp->type == VIRTIO_IB_QPT_GSI))
			die("qp srq");
		if (qp->ev.id != qp->qpn)
			die("qp ev");
		srq_refs -= qp->srq != NULL;
	}
	if (srq_refs)
		die("srq refs");
	if (n != rd->qps.used)
		die("qp count");
	pd_refs += n;
	cq_refs = 2ull * n;
	/* the event FIFO: linked both ways, only objects with pending bits */
	for (const struct rres_ev_obj *o = rd->ev_head, *prev = NULL; o; prev = o, o = o->next) {
		if (!o->queued || !o->pending || o->prev != prev || ++nev > 100000)
			die("event fifo");
		if (!o->next && rd->ev_tail != o)
			die("event tail");
	}
	if (!rd->ev_head && rd->ev_tail)
		die("event tail");
	check_refs(rd, pd_refs, cq_refs, holders);
}

static void transport_action(struct rres_dev *rd, const uint8_t *d, size_t len)
{
	uint32_t a = action_arg(d, len);
	struct rres_qp *qp;
	struct rres_mr *mr;
	struct rres_cq *cq;
	struct rres_srq *srq;
	uint8_t t;
	uint32_t id;

	if (!len)
		return;
	switch (d[0] % 14) {
	case 0:
		act_qp_state(rd, a, len > 4 ? d[4] : VIRTIO_IB_QPS_ERR);
		break;
	case 1:
		act_cq_notify(rd, a, d, len);
		break;
	case 2:
		mr_translate(rd, rres_mr_lookup(rd, a), d, len);
		break;
	case 3:
		qp = rres_qp_lookup(rd, a);
		if (qp)
			rres_qp_sq_drained(qp);
		break;
	case 4:
		(void)rres_ring_usable(rd, a);
		(void)rres_ring_qp(rd, a, NULL);
		(void)rres_ring_cq(rd, a);
		break;
	case 5:
		rres_dev_reset(rd);
		break;
	case 6: /* REG_MR: MR a, key byte, iova, length, page list, PD, access */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 10)
			(void)rres_mr_fast_reg(rd, rres_pd_lookup(rd, d[8]),
					       (mr->lkey & ~0xffu) | d[4], (uint64_t)d[5] * 1000,
					       (uint64_t)d[6] * 512,
					       REGION_GPA + 15 * 4096 + (uint64_t)(d[7] & 0x7f) * 8 -
						       (d[7] & 0x80 ? 4096 : 0),
					       d[9] & 0x3f);
		break;
	case 7: /* LOCAL_INV / SEND_WITH_INV of the object a */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 6)
			(void)rres_key_invalidate(rd, d[5] ? rres_pd_lookup(rd, d[5]) : mr->pd,
						  d[4] == 0xff ? mr->rkey
							       : (mr->rkey & ~0xffu) | d[4]);
		break;
	case 8: /* BIND_MW: window a onto MR d[4] */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 10) {
			struct rres_mr *base = rres_mr_lookup(rd, d[4]);
			uint32_t lkey = base ? base->lkey ^ (d[6] & 3) : d[6];
			uint64_t addr = (base ? base->iova : 0) + (uint64_t)(int8_t)d[7] * 64;

			(void)rres_mw_bind(rd, mr->pd, (mr->rkey & ~0xffu) | d[5], lkey, addr,
					   (uint64_t)d[8] * 64, d[9] & 0x1f);
		}
		break;
	case 9: /* raise an event */
		if (len >= 5) {
			struct rres_ev_obj *o = &rd->port_ev;

			if ((qp = rres_qp_lookup(rd, a)))
				o = &qp->ev;
			else if ((cq = rres_cq_lookup(rd, a)))
				o = &cq->ev;
			else if ((srq = rres_srq_lookup(rd, a & 0xff)))
				o = &srq->ev;
			rres_event_raise(rd, o, d[4]);
		}
		break;
	case 10: /* deliver up to a events */
		for (uint32_t k = 0; k < (a & 0xff) && rres_event_pop(rd, &t, &id); k++)
			if (t >= VIRTIO_IB_EVENT_NUM && t != VIRTIO_IB_EVENT_CM_PENDING)
				die("event type");
		break;
	case 11:
		rres_dev_set_ext(rd, !rd->ext);
		break;
	case 12:
		rres_dev_link_changed(rd, a & 1);
		if (len >= 5)
			rres_dev_set_mac(rd, (const uint8_t[6]){ 0x52, 0, 0, 0, 0, d[4] });
		break;
	default: /* rings of the extension */
		(void)rres_ring_srq(rd, a);
		(void)rres_ring_usable(rd, rres_ring_of_eventq(rd) + (a & 7));
		(void)rres_ring_decode(rd, a, &id);
		break;
	}
}

static void device_config(struct rres_dev_cfg *cfg)
{
	cfg->max_rdma_qps = 12;
	cfg->max_rdma_cqs = 4;
	cfg->max_pd = 4;
	cfg->max_mr = 6;
	cfg->max_ah = 4;
	cfg->ext_offered = true;
	cfg->max_rdma_srqs = 3;
	cfg->max_srq_wr = 64;
	cfg->max_mw = 3;
}

/* The extension offered and negotiated from the start. */
static void device_setup(struct rres_dev *rd)
{
	rres_dev_set_ext(rd, true);
}

/* Through the int entry (VIRTIO_NET_OK/ERR) as the control queue calls it;
 * the reason is the one counted. */
static enum rres_err device_exec(struct rres_dev *rd, uint8_t cmd, const void *in,
				 size_t in_len, void *out, size_t out_cap, size_t *out_len)
{
	uint64_t errs[RRES_ERR_MAX];
	enum rres_err e;
	int ret;

	memcpy(errs, rd->stats.errs, sizeof(errs));
	ret = rres_ctrl_exec(rd, cmd, in, in_len, out, out_cap, out_len);
	if (ret == VIRTIO_NET_OK)
		return memcmp(errs, rd->stats.errs, sizeof(errs)) ? RRES_ERR_MAX : RRES_OK;
	for (e = RRES_ERR_UNKNOWN_CMD; e < RRES_ERR_MAX; e++)
		if (rd->stats.errs[e] != errs[e])
			return ret == VIRTIO_NET_ERR ? e : RRES_ERR_MAX;
	return RRES_ERR_MAX; /* not a known return or not counted: dies */
}

CTRL_FUZZ_TARGET(device_config, device_setup, device_exec, transport_action,
		 check_invariants)
