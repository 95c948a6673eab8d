/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send budget of one device per loop pass, shared by the transports of
 * its contexts, so a tenant with many contexts gets one share of each pass
 * like a tenant with one (docs/design.md "Scheduling and fairness").
 */
#include "roce/roce_tp.h"

#include "common/loop.h"
#include "common/util.h"

void roce_tp_share_send_budget(struct roce_tp *tp, struct roce_sched *s)
{
	if (tp->sched)
		tp->sched->ntp--;
	tp->sched = s;
	if (s)
		s->ntp++;
}

/* Share of the k-th transport polled in this pass: the equal part, plus one
 * for the ones the rest of the division falls on (rotating by pass). */
static uint32_t sched_share(const struct roce_sched *s, uint32_t k)
{
	uint32_t n = s->ntp ? s->ntp : 1;

	if (k >= n)
		return 0;
	return ROCE_TP_RUN_BUDGET / n + ((k + n - s->rot) % n < ROCE_TP_RUN_BUDGET % n ? 1 : 0);
}

uint32_t roce_sched_take(struct roce_tp *tp)
{
	struct roce_sched *s = tp->sched;
	uint64_t pass;

	if (!s || !tp->loop)
		return ROCE_TP_RUN_BUDGET;
	pass = loop_pass(tp->loop);
	if (s->pass != pass) {
		uint32_t n = s->ntp ? s->ntp : 1;

		/* a new pass: refill, and move the extra packets on */
		s->rot = (s->rot + ROCE_TP_RUN_BUDGET % n) % n;
		s->pass = pass;
		s->left = ROCE_TP_RUN_BUDGET;
		s->reserved = ROCE_TP_RUN_BUDGET;
		s->polled = 0;
	}
	if (tp->sched_pass != pass) {
		uint32_t share = sched_share(s, s->polled++);

		tp->sched_pass = pass;
		s->reserved -= MIN(share, s->reserved);
	}
	return s->left > s->reserved ? s->left - s->reserved : 0;
}

void roce_sched_spent(struct roce_tp *tp, uint32_t n)
{
	struct roce_sched *s = tp->sched;

	if (s && tp->loop)
		s->left -= MIN(n, s->left);
}
