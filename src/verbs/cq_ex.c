/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Extended CQs (ibv_create_cq_ex, reached through verbs_context
 * create_cq_ex): the same device CQ as ibv_create_cq, read one completion
 * at a time with start_poll / next_poll / end_poll and the ibv_wc_read_*
 * accessors of struct ibv_cq_ex.
 *
 * Supported wc_flags: the standard ones (byte_len, imm / invalidated rkey,
 * qp_num, src_qp, sl: the RoCE packet type of a UD receive, slid and
 * dlid_path_bits: 0 on RoCE) and the
 * two completion timestamps. A timestamp is the time the completion was
 * taken off the device's CQ ring by this library (the device writes no
 * time into a completion): CLOCK_MONOTONIC in nanoseconds for
 * COMPLETION_TIMESTAMP (hca_core_clock 1000000 kHz, mask all 64 bits,
 * ibv_query_rt_values_ex reads the same clock), CLOCK_REALTIME in
 * nanoseconds for COMPLETION_TIMESTAMP_WALLCLOCK. CVLAN, FLOW_TAG and
 * TM_INFO have no meaning for this device: EOPNOTSUPP, as rdma-core's
 * providers answer flags they lack.
 *
 * Locking: start_poll takes the CQ's poll lock and end_poll (or a
 * start_poll that finds nothing) releases it, unless the CQ was created
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs/verbs_priv.h"

#define VRDMA_CQ_EX_WC_FLAGS                                                    \
	((uint64_t)IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |     \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define VRDMA_CQ_EX_ATTR_FLAGS                                                  \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

/* struct ibv_cq_ex starts with the fields of struct ibv_cq (verbs_priv.h
 * keeps both views of a CQ in one union). */
#define VRDMA_CQ_SAME(f)                                                        \
	_Static_assert(offsetof(struct ibv_cq, f) == offsetof(struct ibv_cq_ex, f), #f)
VRDMA_CQ_SAME(context);
VRDMA_CQ_SAME(channel);
VRDMA_CQ_SAME(cq_context);
VRDMA_CQ_SAME(handle);
VRDMA_CQ_SAME(cqe);
VRDMA_CQ_SAME(mutex);
VRDMA_CQ_SAME(cond);
VRDMA_CQ_SAME(comp_events_completed);
VRDMA_CQ_SAME(async_events_completed);
_Static_assert(offsetof(struct ibv_cq_ex, comp_mask) >= sizeof(struct ibv_cq), "cq_ex");

static inline struct vibv_cq *vibv_cq_ex(struct ibv_cq_ex *ibcq)
{
	return vibv_container_of(ibcq, struct vibv_cq, ibcq_ex);
}

static uint64_t vibv_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads the next completion into cq->cur: 0, ENOENT (empty) or an errno. */
static int vibv_cq_ex_read(struct vibv_cq *cq)
{
	struct vibv_context *ctx = vibv_ctx(cq->ibcq.context);
	struct ibv_wc wc;
	int got;

	got = cq->ops->poll_cq(cq->prov, &cq->cur, 1);
	if (got < 0)
		return -got;
	if (got == 0)
		return ENOENT;
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cq->cur_ts_ns = vibv_clock_ns(CLOCK_MONOTONIC);
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cq->cur_wallclock_ns = vibv_clock_ns(CLOCK_REALTIME);
	vibv_wc_to_ibv(&cq->cur, &wc);
	if (__atomic_load_n(&ctx->nbinds, __ATOMIC_ACQUIRE))
		vibv_binds_complete(ctx, &wc, 1);
	cq->ibcq_ex.status = wc.status;
	cq->ibcq_ex.wr_id = wc.wr_id;
	return 0;
}

static int vibv_cq_ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct vibv_cq *cq = vibv_cq_ex(ibcq);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;
	if (!cq->single_threaded)
		pthread_mutex_lock(&cq->poll_lock);
	ret = vibv_cq_ex_read(cq);
	if (ret && !cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
	return ret;
}

static int vibv_cq_ex_next_poll(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex_read(vibv_cq_ex(ibcq));
}

static void vibv_cq_ex_end_poll(struct ibv_cq_ex *ibcq)
{
	struct vibv_cq *cq = vibv_cq_ex(ibcq);

	if (!cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
}

/* The current completion in libibverbs terms (opcode, flags, data). */
static struct ibv_wc vibv_cq_ex_wc(struct ibv_cq_ex *ibcq)
{
	struct ibv_wc wc;

	vibv_wc_to_ibv(&vibv_cq_ex(ibcq)->cur, &wc);
	return wc;
}

static enum ibv_wc_opcode vibv_cq_ex_read_opcode(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex_wc(ibcq).opcode;
}

static uint32_t vibv_cq_ex_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur.vendor_err;
}

static uint32_t vibv_cq_ex_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur.byte_len;
}

/* The immediate data, or with IBV_WC_WITH_INV the invalidated rkey (what
 * ibv_wc_read_invalidated_rkey reads through the same operation). */
static __be32 vibv_cq_ex_read_imm_data(struct ibv_cq_ex *ibcq)
{
	struct ibv_wc wc = vibv_cq_ex_wc(ibcq);

	return wc.wc_flags & IBV_WC_WITH_INV ? (__be32)wc.invalidated_rkey : wc.imm_data;
}

static uint32_t vibv_cq_ex_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur.qp_num;
}

static uint32_t vibv_cq_ex_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur.src_qp;
}

static unsigned int vibv_cq_ex_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex_wc(ibcq).wc_flags;
}

/* The RoCE packet type of a UD receive (see vibv_wc_convert in cq.c). */
static uint8_t vibv_cq_ex_read_sl(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex_wc(ibcq).sl;
}

/* RoCE has no LIDs or path bits. */
static uint32_t vibv_cq_ex_read_slid(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

static uint8_t vibv_cq_ex_read_u8_zero(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

static uint64_t vibv_cq_ex_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur_ts_ns;
}

static uint64_t vibv_cq_ex_read_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	return vibv_cq_ex(ibcq)->cur_wallclock_ns;
}

/* verbs_context create_cq_ex: an extended CQ, or NULL with errno set
 * (EINVAL for unknown masks and flags, EOPNOTSUPP for wc_flags this device
 * cannot honour). A parent domain given for the CQ is accepted and only
 * checked to belong to the context. */
struct ibv_cq_ex *vibv_create_cq_ex(struct ibv_context *ibctx,
					   struct ibv_cq_init_attr_ex *attr)
{
	const uint32_t known = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
	struct vibv_cq *cq;
	struct ibv_cq_ex *x;
	uint32_t flags = 0;

	if (!attr || (attr->comp_mask & ~known) || !attr->cqe ||
	    attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		flags = attr->flags;
		if (flags & ~(uint32_t)VRDMA_CQ_EX_ATTR_FLAGS) {
			errno = EOPNOTSUPP;
			return NULL;
		}
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->wc_flags & ~VRDMA_CQ_EX_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_vector > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = vibv_cq_create(ibctx, (int)attr->cqe, attr->cq_context,
				   attr->channel, (int)attr->comp_vector);
	if (!cq)
		return NULL;
	cq->extended = true;
	cq->single_threaded = (flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED) != 0;
	cq->wc_flags = attr->wc_flags;

	x = &cq->ibcq_ex;
	x->comp_mask = 0;
	x->start_poll = vibv_cq_ex_start_poll;
	x->next_poll = vibv_cq_ex_next_poll;
	x->end_poll = vibv_cq_ex_end_poll;
	x->read_opcode = vibv_cq_ex_read_opcode;
	x->read_vendor_err = vibv_cq_ex_read_vendor_err;
	x->read_byte_len = vibv_cq_ex_read_byte_len;
	x->read_imm_data = vibv_cq_ex_read_imm_data;
	x->read_qp_num = vibv_cq_ex_read_qp_num;
	x->read_src_qp = vibv_cq_ex_read_src_qp;
	x->read_wc_flags = vibv_cq_ex_read_wc_flags;
	x->read_slid = vibv_cq_ex_read_slid;
	x->read_sl = vibv_cq_ex_read_sl;
	x->read_dlid_path_bits = vibv_cq_ex_read_u8_zero;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = vibv_cq_ex_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		x->read_completion_wallclock_ns = vibv_cq_ex_read_wallclock_ns;
	return x;
}

/* verbs_context query_rt_values: the clock of completion timestamps
 * (CLOCK_MONOTONIC nanoseconds, all in raw_clock.tv_nsec as rdma-core's
 * providers report a cycle count, tv_sec 0). comp_mask out: what was
 * filled (unknown bits are cleared, as rdma-core's providers do). 0 or a
 * positive errno. */
int vibv_query_rt_values(struct ibv_context *ibctx, struct ibv_values_ex *values)
{
	uint32_t filled = 0;

	(void)ibctx;
	if (!values)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)vibv_clock_ns(CLOCK_MONOTONIC);
		filled |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = filled;
	return 0;
}
