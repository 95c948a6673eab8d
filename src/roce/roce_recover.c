/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC loss recovery of the requester beyond plain go-back-N (docs/design.md
 * "Loss recovery"):
 *  - a send window (cwnd) of at most ROCE_TP_WINDOW PSNs that halves on
 *    every loss that makes the requester go back (a sequence NAK answered
 *    with go-back-N beyond a round of selective resends, a timeout, a
 *    probe answered short), down to ROCE_TP_CWND_MIN, and grows back by
 *    half of what each ACK acknowledges, so a rewind never resends a whole
 *    window at once again (the missing packets sent again alone are no
 *    burst: no cut);
 *  - the READ responder's turn (responses sent per poll) halves on a
 *    duplicate READ, down to ROCE_TP_BURST_MIN, and grows back by half of
 *    each turn: go-back-N resends what was sent after the lost response,
 *    and in one process that is the rest of the responder's turn (the
 *    requester's turn is not cut: between local devices it is one frame,
 *    docs/design.md "Loss recovery");
 *  - probes before the transport timer: without progress for four
 *    smoothed round trips (within roce_recover_probe_min..ROCE_TP_PROBE_NS;
 *    then twice, four times that...), a READ at the head asks again
 *    for its missing range (from its first missing response), an atomic
 *    is requested again, and a
 *    SEND or WRITE has its last packet sent again with AckReq (the
 *    responder answers a duplicate with an ACK, a packet beyond a gap with
 *    a NAK), after ROCE_TP_PROBES probes the retransmit timer decides.
 * Nothing here changes the wire format: probes are ordinary retransmits.
 */
#include "roce/roce_tp.h"

#include "common/util.h"

void roce_recover_reset(struct roce_tq *tq)
{
	tq->cwnd = ROCE_TP_WINDOW;
	tq->loss_cut = false;
	tq->probes = 0;
	tq->srtt_ns = 0;
	tq->nak_hold = false;
	tq->nak_hold_len = 1;
	tq->peer_keeps = ROCE_PEER_KEEPS_UNKNOWN;
	tq->keep_misses = 0;
}

uint32_t roce_recover_window(const struct roce_tq *tq)
{
	return tq->cwnd ? tq->cwnd : ROCE_TP_WINDOW;
}

/* Probes only make sense well inside the transport timeout. */
static bool probes_on(uint64_t to)
{
	return to >= 4 * ROCE_TP_PROBE_NS;
}

static bool qp_probes_on(const struct roce_tq *tq)
{
	return tq->tp->loop && probes_on(roce_ack_timeout_ns(tq->qp->attr.timeout));
}

uint64_t roce_recover_probe_min(const struct roce_tq *tq)
{
	/* A near device (roce_neigh_near) answers within the loop's own
	 * passes: a silence of tens of microseconds there is a loss, not a
	 * network's delay (and the smoothed round trip, which counts the
	 * queue of a whole window, says nothing about one packet's answer). */
	return roce_neigh_near(tq->tp->neigh, tq->path.dgid) ? ROCE_TP_PROBE_MIN_LOCAL_NS :
							      ROCE_TP_PROBE_MIN_NS;
}

/* How long packets sent again after a NAK may go unanswered before they go
 * once more: a few round trips (the answer is the next thing expected, and
 * one of them or the answer may be lost too), at least
 * ROCE_TP_HOLD_PROBE_MIN_NS, at most a loss probe's shortest interval. */
static uint64_t hold_wait(const struct roce_tq *tq)
{
	uint64_t w = 4ull * tq->srtt_ns;

	return MIN(MAX(w, ROCE_TP_HOLD_PROBE_MIN_NS), roce_recover_probe_min(tq));
}

/* The oldest unfinished WQE is a READ or an atomic (a responder keeps no
 * such request: an answer stopping there says nothing of keeping). */
static bool head_is_rd_atomic(struct roce_tq *tq)
{
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		const struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (w->state != ROCE_WQE_DONE)
			return roce_wr_is_rd_atomic(w->opcode);
	}
	return false;
}

bool roce_recover_nak_resend(struct roce_tq *tq, bool fresh)
{
	int32_t out = roce_psn_diff(tq->sq_psn, tq->una);
	uint32_t n, sent = 0;

	if (fresh)
		tq->nak_hold_len = 1; /* a new loss: its first packet */
	/* Unless the peer's responder was seen to keep nothing (go-back-N:
	 * rxe); asked again after ROCE_TP_KEEP_RECHECK losses. */
	if (tq->peer_keeps == ROCE_PEER_KEEPS_NO) {
		if (!fresh || ++tq->keep_misses < ROCE_TP_KEEP_RECHECK)
			return false;
		tq->peer_keeps = ROCE_PEER_KEEPS_UNKNOWN;
		tq->keep_misses = 0;
	}
	/* Only worth it if more went out than would go again. */
	n = MAX(tq->nak_hold_len, 1u);
	if (out <= 0 || (uint32_t)out <= n)
		return false;
	while (sent < n && roce_req_resend_psn(tq, roce_psn_add(tq->una, sent), false))
		sent++;
	if (!sent)
		return false;
	tq->nak_hold = true;
	tq->nak_hold_first = n == 1;
	tq->nak_hold_probed = false;
	tq->nak_hold_end = roce_psn_add(tq->una, sent);
	tq->nak_hold_hwm = tq->sq_psn;
	tq->nak_hold_ns = tq->tp->loop ? loop_now_ns() : 0;
	tq->tp->stats.nak_holds++;
	if (qp_probes_on(tq)) {
		loop_timer_arm(tq->tp->loop, &tq->rexmit_timer,
			       roce_recover_deadline(tq, roce_ack_timeout_ns(tq->qp->attr.timeout)));
	} else {
		/* No timer to probe them: the last packet sent goes again
		 * too, so that if those are lost, the responder sees the
		 * stream go back past its gap and NAKs again at once (else
		 * it answers a duplicate with an ACK). */
		roce_req_resend_last(tq, tq->nak_hold_end);
	}
	return true;
}

void roce_recover_nak_answered(struct roce_tq *tq)
{
	int32_t beyond;

	if (!tq->nak_hold || roce_psn_diff(tq->una, tq->nak_hold_end) < 0)
		return;
	tq->nak_hold = false;
	/* The answer comes after everything sent before those packets
	 * reached the responder (a path keeps order): what it does not
	 * acknowledge of that is missing there. */
	if (roce_psn_diff(tq->una, tq->nak_hold_hwm) < 0)
		tq->nak_missed = true;
	beyond = roce_psn_diff(tq->una, tq->nak_hold_end);
	if (beyond > 0) {
		/* acknowledged beyond what went again: kept there */
		tq->peer_keeps = ROCE_PEER_KEEPS_YES;
		tq->tp->stats.hold_skips += (uint32_t)beyond;
		return;
	}
	/* Only what went again: the gap may go on (a burst lost), so the
	 * next round sends twice as many; or the responder keeps nothing
	 * (counted once per loss, and not at a READ or atomic). */
	tq->nak_hold_len = MIN(2 * MAX(tq->nak_hold_len, 1u), (uint32_t)ROCE_TP_QP_BUDGET);
	if (tq->peer_keeps == ROCE_PEER_KEEPS_UNKNOWN && tq->nak_hold_first &&
	    !head_is_rd_atomic(tq) && ++tq->keep_misses >= ROCE_TP_KEEP_MISSES) {
		tq->peer_keeps = ROCE_PEER_KEEPS_NO;
		tq->keep_misses = 0;
	}
}

void roce_recover_hold_probe(struct roce_tq *tq)
{
	uint32_t n = (uint32_t)MAX(roce_psn_diff(tq->nak_hold_end, tq->una), 0);

	/* Once per hold; the loss probes and the timer take over after. */
	tq->nak_hold_probed = true;
	tq->tp->stats.hold_probes++;
	for (uint32_t i = 0; i < n; i++)
		if (!roce_req_resend_psn(tq, roce_psn_add(tq->una, i), false))
			break;
}

/* The responder's side of the same pacing: a duplicate READ means the
 * requester lost a response, and every response sent after that one until
 * the duplicate arrived is sent again. */
uint32_t roce_recover_rsp_burst(const struct roce_tq *tq)
{
	return tq->rsp_burst ? tq->rsp_burst : ROCE_TP_QP_BUDGET;
}

void roce_recover_rsp_loss(struct roce_tq *tq)
{
	tq->rsp_burst = MAX(roce_recover_rsp_burst(tq) / 2, (uint32_t)ROCE_TP_BURST_MIN);
}

void roce_recover_rsp_sent(struct roce_tq *tq, uint32_t n)
{
	if (n)
		tq->rsp_burst = MIN(roce_recover_rsp_burst(tq) + n / 2 + 1,
				    (uint32_t)ROCE_TP_QP_BUDGET);
}

bool roce_recover_ackreq(const struct roce_tq *tq)
{
	uint32_t w = roce_recover_window(tq);

	/* Every packet of the last quarter of the window asks for an ACK:
	 * when the window fills, the loss of one of them must not stall the
	 * QP until a probe. */
	return roce_psn_diff(roce_psn_add(tq->sq_psn, 1), tq->una) >= (int32_t)(w - w / 4);
}

void roce_recover_loss(struct roce_tq *tq)
{
	tq->cwnd = MAX(roce_recover_window(tq) / 2, (uint32_t)ROCE_TP_CWND_MIN);
	tq->tp->stats.window_cuts++;
}

void roce_recover_acked(struct roce_tq *tq, uint32_t n)
{
	tq->cwnd = MIN(roce_recover_window(tq) + n / 2 + 1, (uint32_t)ROCE_TP_WINDOW);
}

void roce_recover_sample(struct roce_tq *tq, uint64_t gap_ns)
{
	/* Time from a send (or the previous progress) to the next progress:
	 * a round-trip estimate, smoothed 1/8 like TCP's. */
	if (gap_ns > ROCE_TP_PROBE_NS)
		gap_ns = ROCE_TP_PROBE_NS;
	tq->srtt_ns = tq->srtt_ns ? (uint32_t)((7ull * tq->srtt_ns + gap_ns) / 8) :
				    (uint32_t)gap_ns;
}

/* First probe interval: a few round trips, within [PROBE_MIN, PROBE]. */
static uint64_t probe_base(const struct roce_tq *tq)
{
	uint64_t b = tq->srtt_ns ? 4ull * tq->srtt_ns : ROCE_TP_PROBE_NS;

	b = MIN(MAX(b, roce_recover_probe_min(tq)), ROCE_TP_PROBE_NS);
	/* ... and, against a responder that answers in arrival order, twice
	 * the longest recent pause inside a READ's answer (roce_comp.c
	 * comp_read_quiet) when the probe would ask for the rest of the
	 * oldest READ: that costs a long replay (a range up to a response
	 * received costs a short one). */
	return tq->rd_peer_queues && roce_comp_read_tail_missing(tq) ?
	       MAX(b, 2 * tq->rd_quiet_ns) : b;
}

bool roce_recover_hold_probe_due(const struct roce_tq *tq, uint64_t to)
{
	return tq->nak_hold && !tq->nak_hold_probed && probes_on(to);
}

uint64_t roce_recover_deadline(const struct roce_tq *tq, uint64_t to)
{
	uint64_t d;

	if (roce_recover_hold_probe_due(tq, to))
		return tq->nak_hold_ns + hold_wait(tq);
	if (!probes_on(to))
		return tq->progress_ns + to;
	if (tq->probes < ROCE_TP_PROBES)
		return (tq->probes ? MAX(tq->probe_ns, tq->progress_ns) : tq->progress_ns) +
		       (probe_base(tq) << tq->probes);
	/* The timeout, but never right after the last probe (the timer may
	 * have fired late: a busy machine). */
	d = tq->probe_ns + (probe_base(tq) << (ROCE_TP_PROBES - 1));
	return MAX(d, tq->progress_ns + to);
}

bool roce_recover_probe_due(const struct roce_tq *tq, uint64_t to)
{
	return probes_on(to) && tq->probes < ROCE_TP_PROBES;
}

void roce_recover_probe(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	uint32_t last;

	tq->probes++;
	tq->probe_ns = tp->loop ? loop_now_ns() : 0;
	tp->stats.probes++;
	/* (No window cut: a probe is a question; an answer that shows a
	 * loss cuts the window when it comes, if it makes us go back.) */
	/* An answer to the probe (NAK at una) is news, not a repeat. */
	tq->rewind_marked = false;
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (w->state == ROCE_WQE_DONE)
			continue;
		if (!w->started)
			return;
		if (w->opcode == VIRTIO_IB_WR_RDMA_READ) {
			uint32_t lo, hi;

			/* Its responses stopped: ask again for its missing
			 * range only (a request for it, or its answer, was
			 * lost; the READs after it keep theirs: each is asked
			 * for when it is the oldest); to its end, not while a
			 * responder answering in arrival order may still be
			 * sending it (the last probe asks anyway). */
			roce_comp_read_range(tq, w, &lo, &hi);
			if (hi == w->npkts && tq->rd_peer_queues && tq->probes < ROCE_TP_PROBES &&
			    roce_comp_read_answering(tq, w))
				return;
			roce_comp_read_rerequested(tq, w);
			if (roce_req_read_fill(tq, w) > 0)
				tp->stats.rd_fills++;
			return;
		}
		if (roce_wr_is_rd_atomic(w->opcode)) {
			/* An atomic's answer stopped: ask again (the
			 * responder answers from its saved result). */
			tq->rewind_pending = true;
			roce_tp_schedule(tq);
			return;
		}
		break;
	}
	/* Tail-loss probe: the last packet sent, again, with AckReq; if that
	 * was a READ or atomic request (which carries no AckReq), the oldest
	 * unacknowledged one instead. */
	if (tq->una == tq->sq_psn)
		return;
	last = roce_psn_add(tq->sq_psn, ROCE_PSN_MASK);
	if (!roce_req_resend_psn(tq, last, false))
		roce_req_resend_psn(tq, tq->una, true);
}
