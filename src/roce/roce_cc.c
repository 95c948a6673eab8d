/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control (RoCE v2 ECN, DCQCN-style).
 *
 * Notification point: a request or response that arrives with CE in its IP
 * header makes the device send a CNP (BTH opcode 0x81, BECN set, PSN 0, 16
 * reserved bytes) to the sending QP, at most once per cnp_interval_ns per
 * QP. CNPs go out Not-ECT with DSCP 48.
 *
 * Reaction point (per QP, state allocated at its first CNP): the DCQCN
 * rules of Zhu et al., SIGCOMM 2015, with the parameters of struct
 * roce_cc_params (docs/design.md "Congestion control"):
 *   on a CNP:   target = rate; rate *= 1 - alpha / 2; alpha = (1-g) alpha + g;
 *               increase counters reset;
 *   alpha timer (no CNP for alpha_ns): alpha = (1 - g) alpha;
 *   increase events (every rai_timer_ns, and every rai_bytes sent):
 *     fast recovery while both counters < F: rate = (target + rate) / 2;
 *     then additive (target += ai_bps) or, when both > F, hyper
 *     (target += hai_bps), each followed by rate = (target + rate) / 2.
 * Once the rate is back at line rate the QP is unpaced again. The pacer is
 * a token bucket of rate bits/s with a burst of cc_burst bytes: the
 * requester asks roce_cc_may_send() before each packet and stops its turn
 * (no PSN used) until the timer refills it.
 */
#include "roce/roce_tp.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define ALPHA_ONE 1024u  /* alpha fixed point */

struct roce_cc_rp {
	struct roce_tq *tq;
	uint64_t rate, target;        /* bits/s */
	uint32_t alpha;               /* / ALPHA_ONE */
	uint32_t t_events, b_events;  /* increase events since the last CNP */
	uint64_t bytes_since;         /* toward the next byte event */
	uint64_t last_cnp_ns, last_inc_ns, last_alpha_ns;
	int64_t tokens;               /* bytes */
	uint64_t tokens_ns;           /* when tokens was last refilled */
	struct loop_timer timer;      /* pacing wake-up and the periodic timers */
};

void roce_cc_params_default(struct roce_cc_params *c)
{
	c->enabled = true;
	c->cnp_interval_ns = 4000;            /* mlx5 min_time_between_cnps */
	c->line_rate_bps = 10000000000ull;    /* rate before the first CNP */
	c->min_rate_bps = 1000000ull;         /* rpg_min_rate: 1 Mbit/s */
	c->g_shift = 8;                       /* g = 1/256 */
	c->alpha_ns = 55000;                  /* alpha update period */
	c->rai_timer_ns = 300000;             /* rpg_time_reset: 300 us */
	c->rai_bytes = 32767;                 /* rpg_byte_reset */
	c->f = 5;                             /* rpg_threshold */
	c->ai_bps = 5000000ull;               /* rpg_ai_rate: 5 Mbit/s */
	c->hai_bps = 50000000ull;             /* rpg_hai_rate: 50 Mbit/s */
	c->burst = 16384;                     /* pacer burst, bytes */
	c->mark_qlen = ROCE_TP_RXQ_MAX / 4;   /* ECN threshold of the device queue */
}

static uint64_t cc_now(const struct roce_tp *tp)
{
	return tp->loop ? loop_now_ns() : 0;
}

/* ---- notification point ------------------------------------------------ */

void roce_cc_ce(struct roce_tq *tq, const struct roce_pkt_info *pi, const struct pkt *p)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	struct roce_hdr_fields f;
	struct roce_path path;
	uint64_t now = cc_now(tp);
	struct pkt *c;

	tp->stats.rx_ce++;
	if (!tp->cc.enabled)
		return;
	if (tq->cnp_sent_ns && now - tq->cnp_sent_ns < tp->cc.cnp_interval_ns)
		return;
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_CNP;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.becn = true;
	if (qp->type == VIRTIO_IB_QPT_RC || qp->type == VIRTIO_IB_QPT_UC) {
		path = tq->path;
		f.dqpn = qp->attr.dest_qp_num;
	} else {
		/* UD: back to the sender of this packet, by its source MAC. */
		memset(&path, 0, sizeof(path));
		memcpy(path.smac, tp->rd->mac, 6);
		memcpy(path.dmac, p->data + 6, 6);
		memcpy(path.sgid, pi->dgid, 16);
		memcpy(path.dgid, pi->sgid, 16);
		path.hop_limit = tp->ttl;
		path.udp_sport = roce_udp_sport_from_qpn(qp->qpn);
		if (tp->rd->vlan_id) {
			path.flags |= ROCE_PATH_F_VLAN;
			path.vlan_tci = tp->rd->vlan_id;
		}
		if (!pi->deth)
			return;
		f.dqpn = roce_deth_sqpn(pi->deth);
	}
	path.tclass = ROCE_CC_CNP_DSCP << 2; /* Not-ECT */
	f.ip_id = tp->ip_id++;
	c = pkt_alloc();
	if (!c) {
		tp->stats.tx_nobuf++;
		return;
	}
	if (roce_pkt_build_frame(c, &path, &f, NULL, 0)) {
		tp->stats.tx_build_err++;
		pkt_free(c);
		return;
	}
	tq->cnp_sent_ns = now ? now : 1;
	tp->stats.cnp_sent++;
	roce_tp_xmit(tp, c, &path);
}

/* ---- reaction point ------------------------------------------------------ */

static void rp_refill(struct roce_cc_rp *rp, uint64_t now)
{
	const struct roce_cc_params *c = &rp->tq->tp->cc;
	uint64_t dt = now - rp->tokens_ns;

	rp->tokens_ns = now;
	/* bytes = rate / 8 * dt / 1e9, without overflow for dt up to ~1 s */
	if (dt > 1000000000ull)
		dt = 1000000000ull;
	rp->tokens += (int64_t)(rp->rate / 8 / 1000 * dt / 1000000);
	if (rp->tokens > (int64_t)c->burst)
		rp->tokens = (int64_t)c->burst;
}

static void rp_increase(struct roce_cc_rp *rp)
{
	const struct roce_cc_params *c = &rp->tq->tp->cc;
	uint32_t lo = MIN(rp->t_events, rp->b_events);

	if (rp->t_events > c->f && rp->b_events > c->f)
		rp->target += c->hai_bps * (lo - c->f);
	else if (rp->t_events > c->f || rp->b_events > c->f)
		rp->target += c->ai_bps;
	if (rp->target > c->line_rate_bps)
		rp->target = c->line_rate_bps;
	rp->rate = (rp->rate + rp->target) / 2;
	if (rp->rate + (rp->rate >> 10) >= rp->target)
		rp->rate = rp->target; /* within 0.1 %: there */
	rp->tq->tp->stats.cc_increases++;
}

/* Back at line rate: the QP is no longer paced. */
static void rp_done(struct roce_tq *tq)
{
	struct roce_cc_rp *rp = tq->cc;

	if (tq->tp->loop)
		loop_timer_cancel(tq->tp->loop, &rp->timer);
	free(rp);
	tq->cc = NULL;
	tq->cc_wait = false;
	roce_tp_schedule(tq);
}

static void rp_arm(struct roce_cc_rp *rp, uint64_t now)
{
	const struct roce_cc_params *c = &rp->tq->tp->cc;
	uint64_t next = MIN(rp->last_inc_ns + c->rai_timer_ns, rp->last_alpha_ns + c->alpha_ns);

	if (rp->tokens < 0 && rp->rate) {
		uint64_t wait = (uint64_t)(-rp->tokens) * 8000000000ull / rp->rate + 1;

		next = MIN(next, now + wait);
	}
	if (rp->tq->tp->loop)
		loop_timer_arm(rp->tq->tp->loop, &rp->timer, next);
}

static void rp_timer(struct loop_timer *t, void *arg)
{
	struct roce_cc_rp *rp = arg;
	struct roce_tq *tq = rp->tq;
	const struct roce_cc_params *c = &tq->tp->cc;
	uint64_t now = loop_now_ns();

	(void)t;
	if (now >= rp->last_alpha_ns + c->alpha_ns) {
		rp->alpha -= rp->alpha >> c->g_shift;
		rp->last_alpha_ns = now;
	}
	if (now >= rp->last_inc_ns + c->rai_timer_ns) {
		rp->t_events++;
		rp->last_inc_ns = now;
		rp_increase(rp);
		if (rp->rate >= c->line_rate_bps) {
			rp_done(tq);
			return;
		}
	}
	rp_refill(rp, now);
	if (rp->tokens >= 0 && tq->cc_wait) {
		tq->cc_wait = false;
		roce_tp_schedule(tq);
	}
	rp_arm(rp, now);
}

void roce_cc_cnp(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	const struct roce_cc_params *c = &tp->cc;
	struct roce_cc_rp *rp = tq->cc;
	uint64_t now = cc_now(tp);

	if (!c->enabled)
		return;
	if (!rp) {
		rp = calloc(1, sizeof(*rp));
		if (!rp)
			return;
		rp->tq = tq;
		rp->rate = c->line_rate_bps;
		rp->alpha = ALPHA_ONE;
		rp->tokens = (int64_t)c->burst;
		rp->tokens_ns = now;
		loop_timer_init(&rp->timer, rp_timer, rp);
		tq->cc = rp;
	}
	rp_refill(rp, now);
	rp->target = rp->rate;
	rp->rate -= rp->rate * rp->alpha / (2 * ALPHA_ONE);
	if (rp->rate < c->min_rate_bps)
		rp->rate = c->min_rate_bps;
	rp->alpha = rp->alpha - (rp->alpha >> c->g_shift) + (ALPHA_ONE >> c->g_shift);
	rp->t_events = rp->b_events = 0;
	rp->bytes_since = 0;
	rp->last_cnp_ns = rp->last_inc_ns = rp->last_alpha_ns = now;
	tp->stats.cc_decreases++;
	rp_arm(rp, now);
}

bool roce_cc_may_send(struct roce_tq *tq)
{
	struct roce_cc_rp *rp = tq->cc;
	uint64_t now;

	if (!rp->tq->tp->loop || rp->tokens >= 0) {
		tq->cc_wait = false;
		return true;
	}
	now = loop_now_ns();
	rp_refill(rp, now);
	if (rp->tokens >= 0) {
		tq->cc_wait = false;
		return true;
	}
	tq->tp->stats.cc_paced++;
	tq->cc_wait = true;
	rp_arm(rp, now);
	return false;
}

void roce_cc_sent(struct roce_tq *tq, uint32_t bytes)
{
	struct roce_cc_rp *rp = tq->cc;
	const struct roce_cc_params *c = &tq->tp->cc;

	rp->tokens -= bytes;
	rp->bytes_since += bytes;
	if (rp->bytes_since >= c->rai_bytes) {
		rp->bytes_since = 0;
		rp->b_events++;
		rp_increase(rp);
		if (rp->rate >= c->line_rate_bps)
			rp_done(tq);
	}
}

uint64_t roce_cc_rate(const struct roce_tq *tq)
{
	return tq->cc ? tq->cc->rate : 0;
}

void roce_cc_qp_free(struct roce_tq *tq)
{
	if (!tq->cc)
		return;
	if (tq->tp->loop)
		loop_timer_cancel(tq->tp->loop, &tq->cc->timer);
	free(tq->cc);
	tq->cc = NULL;
	tq->cc_wait = false;
}
