/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RC responder keeps out-of-sequence SEND and WRITE frames
 * (docs/design.md "Loss recovery"). A packet beyond a gap is answered and
 * counted as before (the sequence NAK, rx_seq_err), but its frame waits here
 * instead of being dropped. When the gap fills, the frame goes through the
 * responder again as if it arrived just then: every check runs again, in PSN
 * order, so data is placed in order, and the next ACK covers it. A requester
 * that answers the NAK with the missing packet alone (roce_recover.c) sends
 * nothing else again. A go-back-N requester (rxe) sends everything again,
 * and the responder answers those packets as duplicates.
 */
#include "roce/roce_tp.h"

#include <stdlib.h>

#include "common/util.h"

#define KEEP_RING_BYTES (ROCE_TP_KEEP_FRAMES * sizeof(struct roce_keep_ent))

static struct roce_keep_ent *keep_at(const struct roce_tq *tq, uint32_t i)
{
	return &tq->keep[(tq->keep_head + i) % ROCE_TP_KEEP_FRAMES];
}

/* Packets the frame stands for (a run: holes included). */
static uint32_t frame_n(const struct pkt *p)
{
	return (p->flags & PKT_F_RUN) ? p->npkts : 1;
}

/* Bit k: packet k of the frame arrived (not a hole of a run). */
static uint64_t frame_arrived(struct pkt *p)
{
	uint32_t n = frame_n(p);

	if (!(p->flags & PKT_F_RUN))
		return 1;
	return ~roce_run_of(p)->lost & (n >= 64 ? ~0ull : (1ull << n) - 1);
}

/* Packets of a frame that arrived (arrived: frame_arrived), from packet k on. */
static uint32_t arrived_from(uint64_t arrived, uint32_t k)
{
	return k >= 64 ? 0 : popcount64(arrived >> k);
}

/* Whether packet k arrived. */
static bool arrived_has(uint64_t arrived, uint32_t k)
{
	return k < 64 && ((arrived >> k) & 1);
}

/* The QP still executes requests. */
static bool keep_live(const struct roce_tq *tq)
{
	uint8_t st = tq->qp->attr.qp_state;

	return tq->qp->type == VIRTIO_IB_QPT_RC && st >= VIRTIO_IB_QPS_RTR &&
	       st != VIRTIO_IB_QPS_ERR;
}

/*
 * Keep p (pi: its packet 0) if the packets of it that the responder has
 * not executed lie beyond a sequence gap: at the tail (a new frame), or at
 * the head (one executed again up to a hole). Returns the packets kept.
 */
static uint32_t keep_put(struct roce_tq *tq, struct pkt *p, const struct roce_pkt_info *pi,
			 bool head)
{
	struct roce_tp *tp = tq->tp;
	uint32_t psn = pi->psn;
	int32_t at = roce_psn_diff(tq->epsn, psn); /* epsn's packet in p */
	uint32_t n = frame_n(p), first, cnt;
	struct roce_keep_ent *e;
	uint64_t arrived;

	/* (a frame executed again up to a hole: the gap is the hole, which
	 * no NAK announced) */
	if (!tp->keep_max || !keep_live(tq) || (!tq->nak_sent && !head) || tq->nak_rnr)
		return 0;
	if ((p->flags & PKT_F_RUN) && !p->ref.niov)
		return 0; /* its payload is gone (a failed fill): lost */
	arrived = frame_arrived(p);
	if (at >= (int32_t)n || (at >= 0 && arrived_has(arrived, (uint32_t)at)))
		return 0; /* nothing beyond epsn, or no gap before it */
	first = at < 0 ? 0 : (uint32_t)at + 1;
	cnt = arrived_from(arrived, first);
	if (!cnt)
		return 0;
	if (!head && tq->keep_n) {
		const struct roce_keep_ent *t = keep_at(tq, tq->keep_n - 1);

		/* ascending and apart (what was sent again is not kept twice) */
		if (roce_psn_diff(psn, roce_psn_add(t->pi.psn, t->n - 1)) <= 0)
			return 0;
	}
	if (roce_psn_diff(roce_psn_add(psn, n - 1), tq->epsn) >= ROCE_TP_KEEP_WINDOW ||
	    tq->keep_n >= MIN(tp->keep_max, (uint32_t)ROCE_TP_KEEP_FRAMES) ||
	    tp->keep_frames >= ROCE_TP_KEEP_TP_MAX) {
		tp->stats.rx_keep_full++;
		return 0;
	}
	if (!tq->keep) {
		/* (state memory of the device, like the READ gap map) */
		if (roce_budget_charge(tp, KEEP_RING_BYTES)) {
			tp->stats.rx_keep_full++;
			return 0;
		}
		tq->keep = calloc(ROCE_TP_KEEP_FRAMES, sizeof(*tq->keep));
		if (!tq->keep) {
			roce_budget_uncharge(tp, KEEP_RING_BYTES);
			tp->stats.rx_keep_full++;
			return 0;
		}
	}
	if (head) {
		tq->keep_head = (tq->keep_head + ROCE_TP_KEEP_FRAMES - 1) % ROCE_TP_KEEP_FRAMES;
		e = keep_at(tq, 0);
	} else {
		e = keep_at(tq, tq->keep_n);
	}
	tq->keep_n++;
	tp->keep_frames++;
	e->p = p;
	e->pi = *pi;
	e->n = (uint16_t)n;
	e->cnt = (uint16_t)cnt;
	return cnt;
}

bool roce_keep_take(struct roce_tq *tq, struct pkt *p, const struct roce_pkt_info *pi)
{
	uint32_t cnt;

	/* (most frames come in sequence: nothing to look at) */
	if (!tq->nak_sent || !(pi->mask & (ROCE_OPF_SEND | ROCE_OPF_WRITE)))
		return false;
	cnt = keep_put(tq, p, pi, false);
	tq->tp->stats.rx_kept += cnt;
	return cnt > 0;
}

/* Drop the head entry from the ring (its frame is the caller's now). */
static void keep_pop(struct roce_tq *tq)
{
	tq->keep_head = (tq->keep_head + 1) % ROCE_TP_KEEP_FRAMES;
	tq->keep_n--;
	tq->tp->keep_frames--;
}

void roce_keep_drain(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	while (tq->keep_n) {
		const struct roce_keep_ent *h = keep_at(tq, 0);
		int32_t at = roce_psn_diff(tq->epsn, h->pi.psn);
		uint32_t from = (uint32_t)at, cnt, again, passed, e0;
		struct roce_keep_ent e;
		uint64_t arrived;

		if (at < 0)
			return; /* a gap before it: it waits */
		if (!keep_live(tq)) {
			roce_keep_flush(tq);
			return;
		}
		/* what of it is still to execute: its packets below epsn came
		 * again and were executed then */
		arrived = frame_arrived(h->p);
		cnt = from < h->n ? arrived_from(arrived, from) : 0;
		/* A gap before it (its packet at epsn lost): it waits. (No
		 * NAK from here: the ACK of what executed shows the gap to a
		 * requester that sent only the missing packets again, and a
		 * go-back-N one sends the gap again anyway; a NAK per packet
		 * it sends again would make it go back each time.) */
		if (cnt && !arrived_has(arrived, from))
			return;
		/* a copy: executing it may take the slot back (keep_put below)
		 * or free the ring (an error flushes it) */
		e = *h;
		keep_pop(tq);
		tp->stats.rx_kept_freed += e.cnt - cnt;
		if (!cnt) {
			pkt_free(e.p);
			continue;
		}
		/* (a fill while it waited moved its payload into the frame, or
		 * for a run into a copy the frame owns) */
		e.pi.payload_ref = (e.p->flags & PKT_F_PAYLOAD_REF) ? &e.p->ref : NULL;
		e0 = tq->epsn;
		if (e.p->flags & PKT_F_RUN) {
			/* up to its next hole: what follows it is beyond a
			 * gap again and waits (no NAK, as above) */
			uint64_t holes = ~arrived >> from;
			uint32_t to = holes ? from + (uint32_t)__builtin_ctzll(holes) : 64;

			roce_run_rx(tq, &e.pi, e.p, from, to);
		} else {
			roce_resp_rx(tq, &e.pi, e.p);
		}
		/* executed: those epsn passed; up to a hole in it, the rest
		 * waits again, first in line; the others were refused (RNR,
		 * an error) and go */
		passed = MIN((uint32_t)MAX(roce_psn_diff(tq->epsn, e0), 0), cnt);
		again = MIN(keep_put(tq, e.p, &e.pi, true), cnt - passed);
		tp->stats.rx_kept_used += passed;
		tp->stats.rx_kept_freed += cnt - passed - again;
		if (!again)
			pkt_free(e.p);
	}
}

void roce_keep_flush(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;

	while (tq->keep_n) {
		const struct roce_keep_ent *h = keep_at(tq, 0);

		tp->stats.rx_kept_freed += h->cnt;
		pkt_free(h->p);
		keep_pop(tq);
	}
	if (tq->keep) {
		free(tq->keep);
		tq->keep = NULL;
		roce_budget_uncharge(tp, KEEP_RING_BYTES);
	}
	tq->keep_head = 0;
}

void roce_tp_set_keep(struct roce_tp *tp, uint32_t frames)
{
	tp->keep_max = MIN(frames, (uint32_t)ROCE_TP_KEEP_FRAMES);
}
