/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (RC requester side): ACKs, NAKs and READ responses retire send
 * WQEs in order; SEND/WRITE loss is repaired by go-back-N from the oldest
 * unacknowledged PSN (una), READ loss by asking for the missing range.
 *
 *  - ACK (coalesced, cumulative): every PSN up to it is acknowledged; an ACK
 *    beyond an outstanding READ means the READ requests sent before the
 *    acknowledged packet were answered (what is missing of them was lost).
 *  - NAK PSN sequence error at una: go back to una (counts as a retry).
 *  - RNR NAK at una: go back, wait the RNR timer of the NAK, retry at most
 *    rnr_retry times (7 = for ever) -> RNR_RETRY_EXC_ERR.
 *  - NAK invalid request / remote access / remote operational: the WQE
 *    completes with REM_INV_REQ_ERR / REM_ACCESS_ERR / REM_OP_ERR, the QP
 *    goes to ERR, the rest is flushed.
 *  - READ responses: data placed at (psn - first_psn) * PMTU, for every
 *    outstanding READ; those beyond a READ's received prefix are marked in
 *    rd_map. A READ missing a response that nothing outstanding will bring
 *    gets one request for its missing range (from rd_rcvd to the next one
 *    received, or its end; no rewind, no retry counted), at most one per
 *    READ outstanding and never from a lower start (docs/design.md "Loss
 *    recovery"). READs complete in order once all their responses are in.
 *  - ATOMIC ACKNOWLEDGE: the original value goes to the atomic's result
 *    buffer (little-endian, 8 bytes). Like a READ, an atomic completes only
 *    with its own response: an ACK covering it means the response was lost,
 *    so the atomic is sent again (the responder answers from its saved
 *    result, never executing it twice).
 *  - Retransmit timer: 4.096 us * 2^timeout without forward progress (or,
 *    for a READ, any response) goes back to una; after retry_cnt retries
 *    the WQE completes with RETRY_EXC_ERR and the QP goes to ERR. Progress
 *    resets both counters.
 */
#include "roce/roce_tp.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* RNR timer codes in units of 10 us (IBTA table 45); code 0 = 655.36 ms. */
static const uint32_t rnr_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768, 49152,
};

uint64_t roce_rnr_timer_ns(uint8_t code)
{
	return (uint64_t)rnr_10us[code & 31] * 10000ull;
}

uint64_t roce_ack_timeout_ns(uint8_t code)
{
	if (!code)
		return 0;
	return 4096ull << MIN(code, (uint8_t)31);
}

static uint64_t now_ns(const struct roce_tq *tq)
{
	return tq->tp->loop ? loop_now_ns() : 0;
}

static void comp_progress(struct roce_tq *tq)
{
	struct loop *l = tq->tp->loop;

	/* Once per loop pass is enough for the clock (READ responses make
	 * progress one by one: a clock read each was 5 % of the daemon's time
	 * in ib_read_bw). (No sample after a probe: that gap measured the
	 * loss, not the path.) */
	if (!l || loop_pass(l) != tq->progress_pass) {
		uint64_t now = now_ns(tq);

		if (!tq->probes && tq->progress_ns && now > tq->progress_ns)
			roce_recover_sample(tq, now - tq->progress_ns);
		tq->progress_ns = tq->advance_ns = now;
		tq->progress_pass = l ? loop_pass(l) : 0;
	}
	tq->probes = 0;
	tq->retry_left = tq->qp->attr.retry_cnt;
	tq->rnr_left = tq->qp->attr.rnr_retry;
	tq->rewind_marked = false;
	roce_recover_nak_answered(tq);
	/* The window moved: the requester may send more. */
	roce_tp_schedule(tq);
}

bool roce_comp_timer_restart(struct roce_tq *tq, uint64_t now)
{
	uint64_t bound = roce_ack_timeout_ns(tq->qp->attr.timeout) * ROCE_TP_ALIVE_TIMEOUTS *
			 ((uint64_t)tq->qp->attr.retry_cnt + 1);

	if (tq->advance_ns && now - tq->advance_ns > bound) {
		tq->tp->stats.alive_expired++;
		return false;
	}
	tq->progress_ns = now;
	return true;
}

/* A READ response that is no progress (a duplicate, or beyond a gap): the
 * responder is busy, not gone. Probes and the timer wait for its silence;
 * retries are not reset (docs/design.md "Loss recovery", queueing responders),
 * and only within roce_comp_timer_restart's bound. */
static void comp_rsp_alive(struct roce_tq *tq)
{
	struct loop *l = tq->tp->loop;

	if (!l || loop_pass(l) == tq->progress_pass)
		return;
	if (roce_comp_timer_restart(tq, loop_now_ns()))
		tq->progress_pass = loop_pass(l);
}

static void wqe_done(struct roce_tq *tq, struct roce_swqe *w, uint8_t status)
{
	if (roce_wr_is_rd_atomic(w->opcode) && w->state == ROCE_WQE_SENT && tq->rd_out)
		tq->rd_out--;
	w->state = ROCE_WQE_DONE;
	w->status = status;
	if (status != VIRTIO_IB_WC_SUCCESS)
		w->bad = true;
}

/* The first WQE from the head that is not done, or NULL. */
static struct roce_swqe *first_pending(struct roce_tq *tq)
{
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (w->state != ROCE_WQE_DONE)
			return w;
	}
	return NULL;
}

/* The oldest outstanding WQE fails with status: it completes after the ones
 * before it, then the QP goes to ERR. */
static void comp_fail_head(struct roce_tq *tq, uint8_t status)
{
	struct roce_swqe *w = first_pending(tq);

	if (w)
		wqe_done(tq, w, status);
	roce_comp_drain(tq);
}

/* A loss before una, once per una until progress: counted (count: a retry
 * of the transport retry counter), the window cut (cut). Returns whether it
 * is news (to act on). */
static bool comp_loss(struct roce_tq *tq, bool count, bool cut)
{
	/* Already going back to una: a second request for the same una is
	 * news only once enough was sent again (the responder repeats its
	 * NAK every ROCE_TP_RENAK_EVERY out-of-sequence packets). */
	if (tq->rewind_marked && tq->rewind_mark == tq->una &&
	    tq->sent_since_rewind < ROCE_TP_RENAK_EVERY)
		return false;
	tq->rewind_marked = true;
	tq->rewind_mark = tq->una;
	tq->rewind_span = (uint32_t)roce_psn_diff(tq->psn_hwm, tq->una);
	tq->sent_since_rewind = 0;
	if (count) {
		if (!tq->retry_left) {
			comp_fail_head(tq, VIRTIO_IB_WC_RETRY_EXC_ERR);
			return false;
		}
		tq->retry_left--;
	}
	if (cut)
		roce_recover_loss(tq);
	return true;
}

/* Go-back-N from una, once per una until progress. */
static void comp_rewind(struct roce_tq *tq, bool count)
{
	if (!comp_loss(tq, count, true))
		return;
	tq->rewind_pending = true;
	roce_tp_schedule(tq);
}

/* The responder misses una (fresh: a sequence NAK; else the answer to
 * packets sent again stopped short): send from una again, only a few
 * packets if the responder may have kept those after it (roce_recover.c),
 * else everything. */
static void comp_seq_loss(struct roce_tq *tq, bool fresh)
{
	if (!comp_loss(tq, true, false))
		return;
	if (fresh)
		tq->loss_cut = false;
	if (roce_recover_nak_resend(tq, fresh)) {
		/* A NAK at una again once those went out is news: they (or
		 * the last packet sent again with them) met the gap again. */
		tq->rewind_span = 0;
		return;
	}
	/* Going back sends again all that went out after una: the window
	 * paces that, cut once per loss. Sending only what was lost (or no
	 * more than a round of that would) is no burst and leaves it
	 * (roce_recover.c). */
	if (!tq->loss_cut &&
	    roce_psn_diff(tq->sq_psn, tq->una) > (int32_t)MAX(tq->nak_hold_len, 1u)) {
		tq->loss_cut = true;
		roce_recover_loss(tq);
	}
	tq->rewind_pending = true;
	roce_tp_schedule(tq);
}

/*
 * A second sequence NAK for the una already gone back to: the responder
 * NAKs once per gap, again when the stream sent again goes back to a PSN
 * it saw (the packet at una was lost again), and every ROCE_TP_RENAK_EVERY
 * out-of-sequence packets. The last can be a stale repeat caused by what
 * went out before the rewind, but only if more than that many did; if not,
 * and something was sent again since, the NAK is about the packets sent
 * again: go back at once instead of after ROCE_TP_RENAK_EVERY more.
 */
static bool comp_nak_is_news(const struct roce_tq *tq)
{
	return tq->rewind_marked && tq->rewind_mark == tq->una && tq->sent_since_rewind &&
	       !tq->rewind_pending && tq->rewind_span <= ROCE_TP_RENAK_EVERY;
}

static bool seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static void comp_read_done(struct roce_tq *tq, struct roce_swqe *w);
static bool comp_rereq_of(const struct roce_tq *tq, const struct roce_swqe *w);
static void comp_read_acked(struct roce_tq *tq, uint32_t i, uint32_t psn);

/* Every PSN up to psn is acknowledged (and up to acked_hi, what earlier ones
 * showed). READs complete here, in order, once all their responses are in.
 * explicit_ack: an ACK packet (not the implicit acknowledgement of a later
 * response), which reveals lost READ responses. */
static void comp_ack(struct roce_tq *tq, uint32_t psn, bool explicit_ack)
{
	uint32_t una0 = tq->una;
	bool adv = false;

	if (roce_psn_diff(tq->acked_hi, tq->una) < -1)
		tq->acked_hi = roce_psn_add(tq->una, ROCE_PSN_MASK);
	if (roce_psn_diff(psn, tq->acked_hi) > 0)
		tq->acked_hi = psn;
	psn = tq->acked_hi;
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);
		uint32_t last;

		if (w->state == ROCE_WQE_DONE) {
			if (w->bad)
				break;
			continue;
		}
		if (!w->started)
			break;
		if (w->opcode == VIRTIO_IB_WR_RDMA_READ) {
			uint32_t exp = roce_psn_add(w->first_psn, w->rd_rcvd);

			if (roce_psn_diff(exp, tq->una) > 0) {
				tq->una = exp;
				adv = true;
			}
			if (w->rd_rcvd >= w->npkts) {
				comp_read_done(tq, w);
				continue;
			}
			if (explicit_ack && roce_psn_diff(psn, w->first_psn) >= 0)
				comp_read_acked(tq, i, psn);
			break;
		}
		if (roce_wr_is_rd_atomic(w->opcode)) {
			if (w->rd_rcvd) {
				/* An atomic answered while an older READ had a
				 * gap (comp_atomic_resp): done, in order. */
				uint32_t next = roce_psn_add(w->first_psn, 1);

				wqe_done(tq, w, VIRTIO_IB_WC_SUCCESS);
				if (roce_psn_diff(next, tq->una) > 0) {
					tq->una = next;
					adv = true;
				}
				continue;
			}
			if (explicit_ack && roce_psn_diff(psn, w->first_psn) >= 0) {
				if (adv)
					comp_progress(tq);
				adv = false;
				una0 = tq->una;
				comp_rewind(tq, true);
			}
			break;
		}
		last = roce_swqe_last_psn(w);
		if (roce_psn_diff(psn, last) >= 0) {
			uint32_t next = roce_psn_add(last, 1);

			/* Entirely acknowledged (if it is being sent again
			 * after a rewind, the requester skips the rest). */
			wqe_done(tq, w, VIRTIO_IB_WC_SUCCESS);
			if (roce_psn_diff(next, tq->una) > 0) {
				tq->una = next;
				adv = true;
			}
			continue;
		}
		if (roce_psn_diff(psn, w->first_psn) >= 0) {
			uint32_t next = roce_psn_add(psn, 1);

			if (roce_psn_diff(next, tq->una) > 0) {
				tq->una = next;
				adv = true;
			}
		}
		break;
	}
	if (adv) {
		roce_recover_acked(tq, (uint32_t)roce_psn_diff(tq->una, una0));
		comp_progress(tq);
	}
}

static void comp_ack_pkt(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	uint8_t syn = roce_aeth_syndrome(pi->aeth);
	uint32_t psn = pi->psn, prev = roce_psn_add(pi->psn, ROCE_PSN_MASK);

	tq->nak_missed = false; /* (set by the comp_ack below) */
	switch (syn & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK: {
		bool probing = tq->probes > 0;

		tp->stats.acks_rcvd++;
		comp_ack(tq, psn, true);
		/* The answer to packets sent again after a sequence NAK stops
		 * short of what was sent before them: the rest is missing
		 * there (the responder kept nothing, or the gap goes on). */
		if (tq->nak_missed && tq->una != tq->sq_psn) {
			tq->rewind_marked = false;
			comp_seq_loss(tq, false);
			break;
		}
		/* The answer to a loss probe stops short of what was sent:
		 * the rest was lost, go back now (roce_recover.c). */
		if (probing && tq->una != tq->sq_psn && roce_psn_add(psn, 1) == tq->una)
			comp_rewind(tq, false);
		break;
	}
	case ROCE_AETH_RNR_NAK:
		tp->stats.rnr_naks_rcvd++;
		comp_ack(tq, prev, false);
		if (psn != tq->una || tq->rnr_wait) {
			tp->stats.rx_stale_resp++;
			break;
		}
		if (qp->attr.rnr_retry != 7) {
			if (!tq->rnr_left) {
				comp_fail_head(tq, VIRTIO_IB_WC_RNR_RETRY_EXC_ERR);
				break;
			}
			tq->rnr_left--;
		}
		roce_req_rewind(tq);
		if (tp->loop) {
			uint64_t wait = roce_rnr_timer_ns(syn & ROCE_AETH_VALUE_MASK);

			tq->rnr_wait = true;
			loop_timer_arm(tp->loop, &tq->rnr_timer, loop_now_ns() + wait);
		}
		break;
	case ROCE_AETH_NAK:
		tp->stats.naks_rcvd++;
		comp_ack(tq, prev, false);
		if (psn != tq->una) {
			tp->stats.rx_stale_resp++;
			break;
		}
		switch (syn) {
		case ROCE_AETH_NAK_PSN_SEQ_ERR:
			if (comp_nak_is_news(tq))
				tq->rewind_marked = false;
			/* (answering packets sent again short: the same loss) */
			comp_seq_loss(tq, !tq->nak_missed);
			break;
		case ROCE_AETH_NAK_INVALID_REQ:
			comp_fail_head(tq, VIRTIO_IB_WC_REM_INV_REQ_ERR);
			break;
		case ROCE_AETH_NAK_REM_ACCESS_ERR:
			comp_fail_head(tq, VIRTIO_IB_WC_REM_ACCESS_ERR);
			break;
		default:
			comp_fail_head(tq, VIRTIO_IB_WC_REM_OP_ERR);
			break;
		}
		break;
	default:
		tp->stats.rx_bad_resp++;
		break;
	}
}

/*
 * READ responses beyond a READ's received prefix are placed and marked in
 * rd_map, one bit per PSN in [una, una + ROCE_TP_RD_WINDOW), for every
 * started READ; each READ's rd_rcvd then moves over its marked responses.
 * The bitmap comes with the first such response and goes on reset.
 */
#define RD_MAP_BYTES (ROCE_TP_RD_WINDOW / 8)

static bool comp_rd_marked(const struct roce_tq *tq, uint32_t psn)
{
	uint32_t b = psn & (ROCE_TP_RD_WINDOW - 1);

	return tq->rd_map && ((tq->rd_map[b / 64] >> (b % 64)) & 1);
}

static void comp_rd_clear(struct roce_tq *tq, uint32_t psn)
{
	uint32_t b = psn & (ROCE_TP_RD_WINDOW - 1);

	tq->rd_map[b / 64] &= ~(1ull << (b % 64));
}

/* Mark psn (within the window). Returns false without memory. */
static bool comp_rd_mark(struct roce_tq *tq, uint32_t psn)
{
	uint32_t b = psn & (ROCE_TP_RD_WINDOW - 1);

	if (!tq->rd_map) {
		if (roce_budget_charge(tq->tp, RD_MAP_BYTES))
			return false;
		tq->rd_map = calloc(1, RD_MAP_BYTES);
		if (!tq->rd_map) {
			roce_budget_uncharge(tq->tp, RD_MAP_BYTES);
			return false;
		}
	}
	tq->rd_map[b / 64] |= 1ull << (b % 64);
	return true;
}

static void comp_rd_free(struct roce_tq *tq)
{
	if (!tq->rd_map)
		return;
	free(tq->rd_map);
	tq->rd_map = NULL;
	roce_budget_uncharge(tq->tp, RD_MAP_BYTES);
}

void roce_comp_read_range(const struct roce_tq *tq, const struct roce_swqe *w, uint32_t *lo,
			  uint32_t *hi)
{
	uint32_t k = MIN(w->rd_rcvd, w->npkts ? w->npkts - 1 : 0), end = w->npkts;
	int32_t room;

	*lo = k;
	/* Marks exist only inside the window. */
	room = ROCE_TP_RD_WINDOW - roce_psn_diff(w->first_psn, tq->una);
	if (tq->rd_map && room > 0 && (uint32_t)room < end)
		end = (uint32_t)room;
	*hi = w->npkts;
	for (k++; tq->rd_map && k < end; k++) {
		uint32_t b = roce_psn_add(w->first_psn, k) & (ROCE_TP_RD_WINDOW - 1);

		if (!(b % 64) && !tq->rd_map[b / 64] && k + 64 <= end) {
			k += 63;
			continue;
		}
		if ((tq->rd_map[b / 64] >> (b % 64)) & 1) {
			*hi = k;
			break;
		}
	}
}

/* Response k of READ w has the opcode and length of that packet: the
 * READ's last one is LAST or ONLY with what is left; any other is a full
 * MTU (an answer to a request for part of the READ may end anywhere). */
static bool comp_read_rsp_fits(const struct roce_tq *tq, const struct roce_swqe *w, uint32_t k,
			       const struct roce_pkt_info *pi)
{
	uint32_t off = k * tq->mtu, remain = w->length - MIN(off, w->length);
	bool last_op = pi->opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_LAST ||
		       pi->opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY;

	if (k + 1 == w->npkts)
		return last_op && pi->payload_len == remain;
	return pi->payload_len == tq->mtu;
}

/* The READ whose responses hold psn, or NULL (not a READ, done, or none). */
static struct roce_swqe *comp_read_find(struct roce_tq *tq, uint32_t psn, uint32_t *k)
{
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);
		int32_t d;

		if (!w->started)
			break;
		if (!w->npkts)
			continue; /* a local operation: no PSN */
		d = roce_psn_diff(psn, w->first_psn);
		if (d < 0)
			break;
		if ((uint32_t)d >= w->npkts)
			continue;
		if (w->opcode != VIRTIO_IB_WR_RDMA_READ || w->state == ROCE_WQE_DONE)
			return NULL;
		*k = (uint32_t)d;
		return w;
	}
	return NULL;
}

static void comp_read_done(struct roce_tq *tq, struct roce_swqe *w)
{
	if (comp_rereq_of(tq, w))
		tq->rd_rereq = false;
	wqe_done(tq, w, VIRTIO_IB_WC_SUCCESS);
}

/* Requests numbered below seq were answered: look at every READ. */
static void comp_read_answered(struct roce_tq *tq, uint32_t seq)
{
	if (seq_after(seq, tq->rd_done_seq)) {
		tq->rd_done_seq = seq;
		tq->rd_check = true;
	}
}

/* An ACK of psn came while the READ at slot i is incomplete: the peer took
 * every request up to psn, so the READ requests sent before it were
 * answered (a READ covered entirely: its own first request too). */
static void comp_read_acked(struct roce_tq *tq, uint32_t i, uint32_t psn)
{
	struct roce_swqe *x = NULL;

	for (; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (!w->started || roce_psn_diff(psn, w->first_psn) < 0)
			break;
		if (w->npkts)
			x = w;
	}
	if (!x)
		return;
	if (x->opcode == VIRTIO_IB_WR_RDMA_READ && roce_psn_diff(psn, roce_swqe_last_psn(x)) >= 0)
		comp_read_answered(tq, x->rd_seq_mark + 2);
	else
		comp_read_answered(tq, x->rd_seq_mark + 1);
}

/* Is READ w missing a response that no request still outstanding will
 * bring? Its latest request's answer came beyond rd_rcvd; or that request
 * was answered entirely (a later request was answered); or, with no
 * request outstanding for rd_rcvd, a response beyond came. */
static bool comp_read_lost(const struct roce_tq *tq, const struct roce_swqe *w)
{
	bool fill = w->rd_seq != w->rd_seq_mark + 1;

	if (w->state != ROCE_WQE_SENT || w->bad || w->rd_rcvd >= w->npkts)
		return false;
	/* (an answer to a request for a missing range vouches for the
	 * earlier ones, but from a responder that answers them in PSN order,
	 * vrdma's, only for those of READs up to its own) */
	if (seq_after(tq->rd_done_seq, w->rd_seq) ||
	    (fill && seq_after(tq->rd_fill_done_seq, w->rd_seq) &&
	     (!tq->rd_fill_psn_order || roce_psn_diff(w->first_psn, tq->rd_fill_done_psn) <= 0)))
		return true;
	if (w->rd_rcvd < w->rd_req_end)
		return w->rd_req_hi > w->rd_rcvd;
	/* Answered: what the request before it asked for again and did not
	 * come (vrdma's responder drops the rest of a duplicate's answer for
	 * a newer duplicate; rxe answered that one first) is lost too. */
	return w->rd_hi > w->rd_rcvd || w->rd_dup_end > w->rd_rcvd;
}

/* Ask for READ w's missing range if it is lost (one request per READ
 * outstanding: the next only once this one was answered or lost). */
static void comp_read_check(struct roce_tq *tq, struct roce_swqe *w)
{
	int st;

	if (!comp_read_lost(tq, w))
		return;
	if (w == first_pending(tq))
		roce_comp_read_rerequested(tq, w);
	st = roce_req_read_fill(tq, w);
	if (st > 0) {
		tq->tp->stats.rd_fills++;
	} else if (!st) {
		/* Not sent (no buffer): again on the requester's next turn,
		 * nothing else may come to ask again. */
		tq->rd_check = true;
		roce_tp_schedule(tq);
	}
}

void roce_comp_read_check_all(struct roce_tq *tq)
{
	tq->rd_check = false;
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (!w->started)
			break;
		if (w->opcode == VIRTIO_IB_WR_RDMA_READ)
			comp_read_check(tq, w);
	}
}

/* Is the re-request of READ w (roce_comp_read_rerequested) still tracked? */
static bool comp_rereq_of(const struct roce_tq *tq, const struct roce_swqe *w)
{
	int32_t d = roce_psn_diff(tq->rd_rereq_psn, w->first_psn);

	return tq->rd_rereq && d >= 0 && (uint32_t)d < w->npkts;
}

void roce_comp_read_rerequested(struct roce_tq *tq, const struct roce_swqe *w)
{
	uint32_t psn = roce_psn_add(w->first_psn, w->rd_rcvd);

	/* Asked again with nothing of it received: a responder that answers
	 * in arrival order would have sent some (vrdma's answers a duplicate
	 * before anything else): forget that, until seen again. */
	if (!w->rd_rcvd && !w->rd_hi)
		tq->rd_peer_queues = false;

	/* Asked again from the same PSN: the stream followed stays the same
	 * (the first replay may begin right after). */
	if (comp_rereq_of(tq, w) && tq->rd_rereq_psn == psn)
		return;
	tq->rd_rereq = true;
	tq->rd_rereq_psn = psn;
	tq->rd_rereq_hi = roce_psn_add(psn, ROCE_PSN_MASK);
	tq->rd_rereq_beyond = 0;
}

/* A response of (or beyond) READ w: follow the stream that answers its
 * re-request. A response at or after the re-requested PSN but not above the
 * highest since is the replay beginning: from then on that is the stream
 * followed. */
static void comp_read_follow(struct roce_tq *tq, const struct roce_swqe *w, uint32_t psn)
{
	if (!comp_rereq_of(tq, w)) {
		tq->rd_rereq = false;
		return;
	}
	if (roce_psn_diff(psn, tq->rd_rereq_hi) > 0) {
		tq->rd_rereq_beyond++;
		tq->rd_rereq_hi = psn;
	} else if (roce_psn_diff(psn, tq->rd_rereq_psn) >= 0) {
		/* The replay began, after that many others: a responder that
		 * answers requests in arrival order (vrdma's answers a duplicate
		 * at once). */
		if (tq->rd_rereq_beyond >= ROCE_TP_RD_QUEUED)
			tq->rd_peer_queues = true;
		tq->rd_rereq_beyond = 0;
		tq->rd_rereq_hi = psn;
	}
}

bool roce_comp_read_answering(const struct roce_tq *tq, const struct roce_swqe *w)
{
	return w->opcode == VIRTIO_IB_WR_RDMA_READ && comp_rereq_of(tq, w) &&
	       roce_psn_diff(tq->rd_rereq_hi, roce_swqe_last_psn(w)) < 0;
}

/* The longest recent silence between responses of one READ (a TCG guest
 * pauses for tens of ms while it sends): probes for a READ wait for twice
 * that (roce_recover.c probe_base). Silences with a probe in them are
 * left out (they measure the probe). */
static void comp_read_quiet(struct roce_tq *tq, const struct roce_swqe *w)
{
	struct loop *l = tq->tp->loop;
	uint64_t now, q;

	if (!l || loop_pass(l) == tq->rd_rsp_pass)
		return;
	now = loop_now_ns();
	if (tq->rd_rsp_ns && tq->rd_rsp_psn == w->first_psn && !tq->probes && now > tq->rd_rsp_ns) {
		q = MIN(now - tq->rd_rsp_ns, roce_ack_timeout_ns(tq->qp->attr.timeout) / 16);
		tq->rd_quiet_ns = MAX(q, tq->rd_quiet_ns - tq->rd_quiet_ns / 64);
	}
	tq->rd_rsp_ns = now;
	tq->rd_rsp_pass = loop_pass(l);
	tq->rd_rsp_psn = w->first_psn;
}

static void comp_read_resp(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	uint32_t psn = pi->psn, k = 0, una0;
	struct roce_swqe *w, *head;
	bool in_req, fill, beyond;
	int st;

	w = comp_read_find(tq, psn, &k);
	if (!w || w->bad) {
		/* Of a READ completed meanwhile, or not of a READ. */
		tp->stats.rx_stale_resp++;
		comp_rsp_alive(tq);
		return;
	}
	/* The peer took every request before w. */
	comp_ack(tq, roce_psn_add(w->first_psn, ROCE_PSN_MASK), false);
	if (w->state == ROCE_WQE_DONE) {
		tp->stats.rx_stale_resp++;
		return;
	}
	head = first_pending(tq);
	if (head && head->opcode == VIRTIO_IB_WR_RDMA_READ && head->started &&
	    roce_psn_diff(psn, head->first_psn) >= 0) {
		comp_read_quiet(tq, head);
		comp_read_follow(tq, head, psn);
	}
	/* Which request it answers, at the least: w's latest one if inside
	 * its range (w's earlier ones had passed that range), else its
	 * first. Requests before that one were answered (in arrival order;
	 * a peer that answers a duplicate at once answers those in order). */
	in_req = k >= w->rd_req_lo && k < w->rd_req_end;
	fill = w->rd_seq != w->rd_seq_mark + 1;
	if (in_req && fill) {
		if (seq_after(w->rd_seq, tq->rd_fill_done_seq)) {
			tq->rd_fill_done_seq = w->rd_seq;
			tq->rd_fill_done_psn = w->first_psn;
			tq->rd_check = true;
		} else if (w->rd_seq != tq->rd_fill_done_seq &&
			   roce_psn_diff(w->first_psn, tq->rd_fill_done_psn) > 0) {
			/* answered after a request sent later, for an older
			 * READ: the responder answers in PSN order */
			tq->rd_fill_psn_order = true;
		}
	} else {
		comp_read_answered(tq, w->rd_seq_mark + 1);
	}
	beyond = k > w->rd_rcvd &&
		 (uint32_t)roce_psn_diff(psn, tq->una) >= ROCE_TP_RD_WINDOW;
	if (k < w->rd_rcvd || (k > w->rd_rcvd && !beyond && comp_rd_marked(tq, psn))) {
		tp->stats.rx_stale_resp++; /* a duplicate */
		comp_rsp_alive(tq);
		return;
	}
	if (!comp_read_rsp_fits(tq, w, k, pi)) {
		tp->stats.rx_bad_resp++;
		return;
	}
	w->rd_hi = MAX(w->rd_hi, k + 1);
	if (in_req)
		w->rd_req_hi = MAX(w->rd_req_hi, k + 1);
	if (k > w->rd_rcvd) {
		/* Beyond a gap: placed and marked, if it fits the window. */
		if (beyond || !comp_rd_mark(tq, psn)) {
			tp->stats.rd_not_kept++;
			comp_rsp_alive(tq);
			comp_read_check(tq, w);
			return;
		}
		st = roce_mem_payload_to_sges(tq, roce_swqe_sge(w), w->num_sge, k * tq->mtu, pi);
		if (st) {
			comp_rd_clear(tq, psn);
			wqe_done(tq, w, (uint8_t)st);
			return;
		}
		tp->stats.rd_ahead++;
		comp_rsp_alive(tq);
		comp_read_check(tq, w);
		return;
	}
	st = roce_mem_payload_to_sges(tq, roce_swqe_sge(w), w->num_sge, k * tq->mtu, pi);
	if (st) {
		wqe_done(tq, w, (uint8_t)st);
		return;
	}
	/* The prefix grows over what was placed beyond. */
	w->rd_rcvd++;
	/* (marks lie in [una, una + window): beyond, a bit is another PSN's) */
	while (w->rd_rcvd < w->npkts) {
		uint32_t p = roce_psn_add(w->first_psn, w->rd_rcvd);

		if ((uint32_t)roce_psn_diff(p, tq->una) >= ROCE_TP_RD_WINDOW ||
		    !comp_rd_marked(tq, p))
			break;
		comp_rd_clear(tq, p);
		w->rd_rcvd++;
	}
	una0 = tq->una;
	/* Completes READs (in order) whose responses are all in, and moves
	 * una if w is the oldest. */
	comp_ack(tq, tq->acked_hi, false);
	if (tq->una == una0)
		comp_rsp_alive(tq);
	if (w->state != ROCE_WQE_DONE)
		comp_read_check(tq, w);
	else
		roce_tp_schedule(tq);
}

/* The started atomic whose request had PSN psn and whose answer has not
 * come yet, or NULL. */
static struct roce_swqe *comp_atomic_find(struct roce_tq *tq, uint32_t psn)
{
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (!w->started)
			break;
		if (w->state == ROCE_WQE_DONE)
			continue;
		if (w->first_psn == psn)
			return roce_wr_is_atomic(w->opcode) && !w->bad && !w->rd_rcvd ? w : NULL;
	}
	return NULL;
}

static void comp_atomic_resp(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	uint8_t syn = roce_aeth_syndrome(pi->aeth), res[8];
	struct roce_swqe *w;
	uint64_t orig;
	int st;

	if ((syn & ROCE_AETH_TYPE_MASK) != ROCE_AETH_ACK) {
		tp->stats.rx_bad_resp++;
		return;
	}
	comp_ack(tq, roce_psn_add(pi->psn, ROCE_PSN_MASK), false);
	w = comp_atomic_find(tq, pi->psn);
	/* (It may have been rewound meanwhile: the requester then skips it.) */
	if (!w) {
		tp->stats.rx_stale_resp++;
		return;
	}
	tp->stats.atomic_acks_rcvd++;
	orig = htole64(roce_atmack_orig(pi->atmack));
	memcpy(res, &orig, sizeof(res));
	st = roce_mem_to_sges(tq, &w->res_sge, 1, 0, res, sizeof(res));
	w->rd_rcvd = 1;
	if (w != first_pending(tq)) {
		/* Behind a READ with a gap (its ranges are asked for alone,
		 * no rewind sends this atomic again): kept; comp_ack
		 * completes it in order, and it still holds its place in
		 * max_rd_atomic (the responder's resources) until then. */
		if (st)
			wqe_done(tq, w, (uint8_t)st);
		comp_rsp_alive(tq);
		return;
	}
	tq->una = roce_psn_add(w->first_psn, 1);
	comp_progress(tq);
	wqe_done(tq, w, (uint8_t)st);
	/* the WQEs after it whose answers came first (kept above) */
	if (!st)
		comp_ack(tq, tq->acked_hi, false);
	roce_tp_schedule(tq);
}

void roce_comp_rx(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;

	if (st != VIRTIO_IB_QPS_RTS && st != VIRTIO_IB_QPS_SQD) {
		tp->stats.rx_qp_state++;
		return;
	}
	if (!tq->swqe || tq->sq_head == tq->sq_tail ||
	    roce_psn_diff(pi->psn, tq->psn_hwm) >= 0 ||
	    roce_psn_diff(pi->psn, roce_psn_add(tq->una, ROCE_PSN_MASK)) < -(int32_t)(1u << 22)) {
		/* Nothing outstanding, or a PSN never sent / far too old. */
		tp->stats.rx_stale_resp++;
		return;
	}
	if (pi->opcode == ROCE_OP_RC_ACKNOWLEDGE)
		comp_ack_pkt(tq, pi);
	else if (pi->mask & ROCE_OPF_READ)
		comp_read_resp(tq, pi);
	else if (pi->opcode == ROCE_OP_RC_ATOMIC_ACKNOWLEDGE)
		comp_atomic_resp(tq, pi);
	else
		tp->stats.rx_stale_resp++;
	if (tq->rd_check)
		roce_comp_read_check_all(tq);
	roce_comp_drain(tq);
}

void roce_comp_drain(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	bool any = false;

	if (!tq->swqe)
		return;
	while (tq->sq_head != tq->sq_tail) {
		struct roce_swqe *w = roce_sq_wqe(tq, tq->sq_head);
		uint8_t status;

		if (w->state != ROCE_WQE_DONE)
			break;
		status = w->status;
		roce_sq_complete_head(tq, status);
		any = true;
		if (status != VIRTIO_IB_WC_SUCCESS) {
			roce_tp_qp_error(tq, true);
			break;
		}
	}
	if (!any)
		return;
	if (tq->qp->type == VIRTIO_IB_QPT_RC && tq->una == tq->sq_psn && tp->loop &&
	    tq->sq_head == tq->sq_cur)
		loop_timer_cancel(tp->loop, &tq->rexmit_timer);
	roce_tp_schedule(tq);
}

void roce_comp_arm_timer(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	uint64_t to = roce_ack_timeout_ns(tq->qp->attr.timeout);

	if (!tp->loop || !to || loop_timer_armed(&tq->rexmit_timer))
		return;
	tq->timer_waits = false;
	if (!tq->progress_ns)
		tq->progress_ns = tq->advance_ns = loop_now_ns();
	loop_timer_arm(tp->loop, &tq->rexmit_timer, roce_recover_deadline(tq, to));
}

void roce_comp_rexmit_timer(struct loop_timer *t, void *arg)
{
	struct roce_tq *tq = arg;
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	uint64_t to = roce_ack_timeout_ns(qp->attr.timeout), now, due;
	uint8_t st = qp->attr.qp_state;

	/* Nothing unacknowledged on the wire (completions may still wait for
	 * CQ room, a rewound WQE for its turn): no timeout, the next send
	 * arms the timer again. */
	if ((st != VIRTIO_IB_QPS_RTS && st != VIRTIO_IB_QPS_SQD) || !to || !tq->swqe ||
	    tq->una == tq->sq_psn)
		return;
	now = loop_now_ns();
	if (tq->rnr_wait) {
		loop_timer_arm(tp->loop, t, now + to);
		return;
	}
	due = roce_recover_deadline(tq, to);
	if (now < due) {
		/* (while the QP makes progress: once per probe interval) */
		if (tq->timer_waits)
			tp->stats.timer_waits++; /* the progress came meanwhile */
		tq->timer_waits = false;
		loop_timer_arm(tp->loop, t, due);
		return;
	}
	/* Due: the pollers run once more first. Frames received but not
	 * looked at yet, or not yet received from a peer in this loop, may be
	 * the progress this timer waits for (a loop that was not scheduled for
	 * a while wakes up with its timers expired). */
	if (!tq->timer_waits || loop_pass(tp->loop) == tq->timer_pass) {
		if (!tq->timer_waits)
			tq->timer_pass = loop_pass(tp->loop);
		tq->timer_waits = true;
		loop_timer_arm(tp->loop, t, now + 1);
		return;
	}
	tq->timer_waits = false;
	/* Probes first (roce_recover.c: of packets sent again after a NAK,
	 * then of the QP), then the timeout. */
	if (roce_recover_hold_probe_due(tq, to)) {
		roce_recover_hold_probe(tq);
		loop_timer_arm(tp->loop, t, roce_recover_deadline(tq, to));
		roce_tp_commit(tp);
		return;
	}
	if (roce_recover_probe_due(tq, to)) {
		roce_recover_probe(tq);
		loop_timer_arm(tp->loop, t, roce_recover_deadline(tq, to));
		roce_tp_commit(tp);
		return;
	}
	tp->stats.timeouts++;
	roce_recover_loss(tq);
	tq->probes = 0;
	if (!tq->retry_left) {
		comp_fail_head(tq, VIRTIO_IB_WC_RETRY_EXC_ERR);
		roce_tp_commit(tp);
		return;
	}
	tq->retry_left--;
	tq->progress_ns = now;
	tq->rewind_marked = true;
	tq->rewind_mark = tq->una;
	tq->rewind_span = (uint32_t)roce_psn_diff(tq->psn_hwm, tq->una);
	tq->sent_since_rewind = 0;
	tq->rewind_pending = true;
	roce_tp_schedule(tq);
	loop_timer_arm(tp->loop, t, roce_recover_deadline(tq, to));
	roce_tp_commit(tp);
}

void roce_comp_rnr_timer(struct loop_timer *t, void *arg)
{
	struct roce_tq *tq = arg;

	(void)t;
	if (!tq->rnr_wait)
		return;
	tq->rnr_wait = false;
	tq->progress_ns = loop_now_ns();
	roce_tp_schedule(tq);
}

void roce_comp_reset(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;

	if (tp->loop) {
		loop_timer_cancel(tp->loop, &tq->rexmit_timer);
		loop_timer_cancel(tp->loop, &tq->rnr_timer);
	}
	tq->sq_psn = tq->una = tq->psn_hwm = qp->attr.sq_psn & ROCE_PSN_MASK;
	tq->rd_out = 0;
	tq->retry_left = qp->attr.retry_cnt;
	tq->rnr_left = qp->attr.rnr_retry;
	tq->rnr_wait = false;
	tq->stalled = false;
	tq->rewind_pending = false;
	tq->rewind_marked = false;
	tq->progress_ns = tq->advance_ns = 0;
	tq->timer_waits = false;
	comp_rd_free(tq);
	tq->rd_seq = tq->rd_done_seq = tq->rd_fill_done_seq = 0;
	tq->rd_fill_psn_order = false;
	tq->rd_check = false;
	tq->acked_hi = roce_psn_add(tq->una, ROCE_PSN_MASK);
	tq->rd_rereq = false;
	tq->rd_peer_queues = false;
	tq->rd_rsp_ns = 0;
	tq->rd_quiet_ns = 0;
	roce_recover_reset(tq);
}

void roce_comp_fini(struct roce_tq *tq)
{
	comp_rd_free(tq);
}

bool roce_comp_read_tail_missing(const struct roce_tq *tq)
{
	uint32_t lo, hi;

	for (uint32_t i = tq->sq_head; tq->swqe && i != tq->sq_tail; i++) {
		const struct roce_swqe *w = roce_sq_wqe(tq, i);

		if (w->state == ROCE_WQE_DONE)
			continue;
		if (!w->started || w->opcode != VIRTIO_IB_WR_RDMA_READ)
			return false;
		roce_comp_read_range(tq, w, &lo, &hi);
		return hi == w->npkts;
	}
	return false;
}
