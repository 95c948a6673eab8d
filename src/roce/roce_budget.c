/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state-mem= budget of one device: the daemon-side memory its driver
 * makes the engine allocate (per-QP send slots and receive state, CQ
 * backlogs) is charged when the command that needs it runs, at its largest
 * size, so a command beyond the budget fails instead of an allocation later.
 * The budget is the device's: the transports of its contexts charge one
 * shared struct roce_budget.
 */
#include "roce/roce_tp.h"

#include <errno.h>

#include "common/log.h"
#include "common/util.h"

/* Send slots the engine keeps for a QP: the send-queue depth rounded up to a
 * power of two (at least 1; never more than a ring holds). */
uint32_t roce_budget_sq_slots(uint32_t max_send_wr)
{
	uint32_t p = 1;

	while (p < max_send_wr && p < (1u << 15))
		p <<= 1;
	return p;
}

uint64_t roce_budget_qp(const struct rres_qp_cap *cap, uint32_t srq_max_sge)
{
	uint32_t data = MAX(cap->max_send_sge * (uint32_t)sizeof(struct roce_sge),
			    cap->max_inline_data);
	uint64_t stride = ALIGN_UP((uint64_t)sizeof(struct roce_swqe) + data, 8u);
	uint32_t rsge = MAX(cap->max_recv_sge, srq_max_sge);

	return sizeof(struct roce_tq) + roce_budget_sq_slots(cap->max_send_wr) * stride +
	       sizeof(struct roce_rwqe) + (uint64_t)rsge * sizeof(struct roce_sge);
}

uint64_t roce_budget_cq(uint32_t cqe)
{
	return sizeof(struct roce_tcq) + (uint64_t)(cqe ? cqe : 1) * sizeof(struct roce_wc);
}

int roce_budget_charge(struct roce_tp *tp, uint64_t bytes)
{
	uint64_t max = tp->budget ? tp->budget->max : tp->state_mem_max;
	uint64_t used = tp->budget ? tp->budget->used : tp->state_mem;

	if (max && bytes > max - MIN(used, max)) {
		tp->stats.state_refused++;
		if (tp->log_rl)
			LOG_PEER_RL(tp->log_rl, "RoCE: state-mem budget of %llu bytes used up "
				    "(%llu in use, %llu more asked)", (unsigned long long)max,
				    (unsigned long long)used, (unsigned long long)bytes);
		else
			LOG_PEER("RoCE: state-mem budget of %llu bytes used up (%llu in use, "
				 "%llu more asked)", (unsigned long long)max,
				 (unsigned long long)used, (unsigned long long)bytes);
		return -ENOMEM;
	}
	tp->state_mem += bytes;
	if (tp->budget)
		tp->budget->used += bytes;
	return 0;
}

void roce_budget_uncharge(struct roce_tp *tp, uint64_t bytes)
{
	bytes = MIN(bytes, tp->state_mem);
	tp->state_mem -= bytes;
	if (tp->budget)
		tp->budget->used -= MIN(bytes, tp->budget->used);
}

void roce_tp_set_state_budget(struct roce_tp *tp, uint64_t max)
{
	tp->state_mem_max = max;
}

void roce_tp_share_state_budget(struct roce_tp *tp, struct roce_budget *b)
{
	tp->budget = b;
}
