/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP state machine of MODIFY_QP (IBTA "QP state transitions", modelled
 * on the IBTA Modify QP attribute table): which transitions exist, which
 * attributes each requires or allows per QP type, and the range of every
 * attribute value. The RFC's attribute mask has no PKEY_INDEX, PORT,
 * ALT_PATH, PATH_MIG_STATE or EN_SQD_ASYNC_NOTIFY, so those columns of the
 * IBTA table are gone (P_Key index 0 and port 1 are implied); RATE_LIMIT is
 * allowed wherever a QP enters RTS. See docs/spec.md "QP state machine".
 */
#include "backend/rres_dev.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"

enum { T_RC, T_UC, T_UD, T_GSI, T_NUM };

#define M_CS   VIRTIO_IB_QP_CUR_STATE
#define M_ACC  VIRTIO_IB_QP_ACCESS_FLAGS
#define M_QKEY VIRTIO_IB_QP_QKEY
#define M_AV   VIRTIO_IB_QP_AV
#define M_MTU  VIRTIO_IB_QP_PATH_MTU
#define M_TO   VIRTIO_IB_QP_TIMEOUT
#define M_RTY  VIRTIO_IB_QP_RETRY_CNT
#define M_RNR  VIRTIO_IB_QP_RNR_RETRY
#define M_RQP  VIRTIO_IB_QP_RQ_PSN
#define M_MRA  VIRTIO_IB_QP_MAX_QP_RD_ATOMIC
#define M_MRT  VIRTIO_IB_QP_MIN_RNR_TIMER
#define M_SQP  VIRTIO_IB_QP_SQ_PSN
#define M_MDA  VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC
#define M_DQP  VIRTIO_IB_QP_DEST_QPN
#define M_RL   VIRTIO_IB_QP_RATE_LIMIT

/* Access flags MODIFY_QP accepts: the RFC's, plus REMOTE_ATOMIC with the
 * extension and an atomic capability. */
static uint32_t rres_qp_access_mask(const struct rres_dev *rd)
{
	uint32_t m = VIRTIO_IB_ACCESS_RFC_MASK;

	if (rd->ext && rd->attr.atomic_cap != VIRTIO_IB_ATOMIC_NONE)
		m |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	return m;
}

struct qp_trans {
	bool valid;
	uint32_t req[T_NUM];
	uint32_t opt[T_NUM];
};

/* Optional attributes when (re-)entering RTS from RTR, RTS or SQD. */
#define TO_RTS_OPT                                                             \
	{ [T_RC] = M_CS | M_ACC | M_MRT | M_RL, [T_UC] = M_CS | M_ACC | M_RL,   \
	  [T_UD] = M_CS | M_QKEY | M_RL, [T_GSI] = M_CS | M_QKEY }

#define S_RESET VIRTIO_IB_QPS_RESET
#define S_INIT  VIRTIO_IB_QPS_INIT
#define S_RTR   VIRTIO_IB_QPS_RTR
#define S_RTS   VIRTIO_IB_QPS_RTS
#define S_SQD   VIRTIO_IB_QPS_SQD
#define S_SQE   VIRTIO_IB_QPS_SQE
#define S_ERR   VIRTIO_IB_QPS_ERR
#define S_NUM   (VIRTIO_IB_QPS_ERR + 1)

static const struct qp_trans qp_table[S_NUM][S_NUM] = {
	[S_RESET] = {
		[S_RESET] = { .valid = true },
		[S_INIT] = {
			.valid = true,
			.req = { [T_RC] = M_ACC, [T_UC] = M_ACC, [T_UD] = M_QKEY,
				 [T_GSI] = M_QKEY },
		},
		[S_ERR] = { .valid = true },
	},
	[S_INIT] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
		[S_INIT] = {
			.valid = true,
			.opt = { [T_RC] = M_ACC, [T_UC] = M_ACC, [T_UD] = M_QKEY,
				 [T_GSI] = M_QKEY },
		},
		[S_RTR] = {
			.valid = true,
			.req = { [T_RC] = M_AV | M_MTU | M_DQP | M_RQP | M_MDA | M_MRT,
				 [T_UC] = M_AV | M_MTU | M_DQP | M_RQP },
			.opt = { [T_RC] = M_ACC, [T_UC] = M_ACC, [T_UD] = M_QKEY,
				 [T_GSI] = M_QKEY },
		},
	},
	[S_RTR] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
		[S_RTS] = {
			.valid = true,
			.req = { [T_RC] = M_TO | M_RTY | M_RNR | M_SQP | M_MRA,
				 [T_UC] = M_SQP, [T_UD] = M_SQP, [T_GSI] = M_SQP },
			.opt = TO_RTS_OPT,
		},
	},
	[S_RTS] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
		[S_RTS] = { .valid = true, .opt = TO_RTS_OPT },
		[S_SQD] = { .valid = true },
	},
	[S_SQD] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
		[S_RTS] = { .valid = true, .opt = TO_RTS_OPT },
		[S_SQD] = {
			.valid = true,
			.opt = { [T_RC] = M_AV | M_TO | M_RTY | M_RNR | M_MRA | M_MDA |
					  M_ACC | M_MRT,
				 [T_UC] = M_AV | M_ACC, [T_UD] = M_QKEY, [T_GSI] = M_QKEY },
		},
	},
	[S_SQE] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
		[S_RTS] = {
			.valid = true,
			.opt = { [T_UC] = M_CS | M_ACC, [T_UD] = M_CS | M_QKEY,
				 [T_GSI] = M_CS | M_QKEY },
		},
	},
	[S_ERR] = {
		[S_RESET] = { .valid = true },
		[S_ERR] = { .valid = true },
	},
};

static int type_col(uint8_t type)
{
	switch (type) {
	case VIRTIO_IB_QPT_RC: return T_RC;
	case VIRTIO_IB_QPT_UC: return T_UC;
	case VIRTIO_IB_QPT_UD: return T_UD;
	case VIRTIO_IB_QPT_GSI: return T_GSI;
	default: return -1;
	}
}

void rres_qp_transition(uint8_t type, uint8_t cur, uint8_t next, bool *valid,
			uint32_t *req, uint32_t *opt)
{
	int t = type_col(type);

	*valid = false;
	*req = *opt = 0;
	if (t < 0 || cur >= S_NUM || next >= S_NUM)
		return;
	*valid = qp_table[cur][next].valid;
	*req = qp_table[cur][next].req[t];
	*opt = qp_table[cur][next].opt[t];
}

bool rres_qp_modify_is_ok(uint8_t type, uint8_t cur, uint8_t next, uint32_t mask)
{
	uint32_t req, opt;
	bool valid;

	if (!(mask & VIRTIO_IB_QP_STATE) && next != cur)
		return false;
	if ((mask & M_CS) && cur != S_RTR && cur != S_RTS && cur != S_SQD && cur != S_SQE)
		return false;
	rres_qp_transition(type, cur, next, &valid, &req, &opt);
	if (!valid)
		return false;
	if ((mask & req) != req)
		return false;
	return !(mask & ~(req | opt | VIRTIO_IB_QP_STATE));
}

static bool gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g, pfx, sizeof(pfx));
}

enum rres_err rres_av_from_wire(const struct rres_dev *rd, const struct virtio_rdma_ah_attr *w,
				bool connected, struct rres_av *av)
{
	static const uint8_t zero[16];
	const uint8_t *sgid = rres_gid_get(rd, w->grh.sgid_index);
	uint32_t flow = le32toh(w->grh.flow_label);

	if (!sgid)
		return RRES_ERR_GID;
	if (flow > 0xfffff || w->sl > 15)
		return RRES_ERR_RANGE;
	if (!memcmp(w->grh.dgid, zero, 16))
		return RRES_ERR_RANGE;
	if (gid_is_v4mapped(sgid) != gid_is_v4mapped(w->grh.dgid))
		return RRES_ERR_RANGE;
	/* A connected QP's path is unicast (IPv6 ff00::/8, IPv4 224/4). */
	if (connected) {
		if (w->grh.dgid[0] == 0xff || (w->dmac[0] & 1))
			return RRES_ERR_RANGE;
		if (gid_is_v4mapped(w->grh.dgid) && (w->grh.dgid[12] & 0xf0) == 0xe0)
			return RRES_ERR_RANGE;
	}
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, w->grh.dgid, 16);
	av->flow_label = flow;
	av->sgid_index = w->grh.sgid_index;
	av->hop_limit = w->grh.hop_limit;
	av->traffic_class = w->grh.traffic_class;
	av->sl = w->sl;
	memcpy(av->dmac, w->dmac, 6);
	memcpy(av->sgid, sgid, 16);
	av->ipv4 = gid_is_v4mapped(sgid);
	return RRES_OK;
}

void rres_qp_attr_default(const struct rres_dev *rd, const struct rres_qp *qp,
			  struct rres_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = S_RESET;
	/* UD and GSI never set a path MTU: they use the port's. */
	if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI)
		a->path_mtu = rd->attr.active_mtu;
}

enum rres_err rres_qp_check_modify(const struct rres_dev *rd, const struct rres_qp *qp,
				   const struct rres_qp_modify *m, struct rres_av *av)
{
	uint32_t mask = m->attr_mask, req, opt;
	uint8_t cur = qp->attr.qp_state, next = cur;
	enum rres_err err;
	bool valid;

	if (mask & ~(uint32_t)VIRTIO_IB_QP_ATTR_MASK_ALL)
		return RRES_ERR_ATTR_MASK;
	if (mask & VIRTIO_IB_QP_STATE) {
		if (m->qp_state >= S_NUM)
			return RRES_ERR_RANGE;
		next = m->qp_state;
	}
	if ((mask & M_CS) && m->cur_qp_state != cur)
		return RRES_ERR_STATE;
	rres_qp_transition(qp->type, cur, next, &valid, &req, &opt);
	if (!valid)
		return RRES_ERR_STATE;
	if (!rres_qp_modify_is_ok(qp->type, cur, next, mask))
		return RRES_ERR_ATTR_MASK;

	if ((mask & M_ACC) && (m->qp_access_flags & ~rres_qp_access_mask(rd)))
		return RRES_ERR_FLAGS;
	/* Controlled Q_Keys (MSB set) are for the GSI QP only. */
	if ((mask & M_QKEY) && qp->type != VIRTIO_IB_QPT_GSI && (m->qkey & 0x80000000u))
		return RRES_ERR_RANGE;
	if (mask & M_AV) {
		err = rres_av_from_wire(rd, &m->ah_attr, true, av);
		if (err)
			return err;
	}
	if ((mask & M_MTU) && (m->path_mtu < VIRTIO_IB_MTU_256 ||
			       m->path_mtu > VIRTIO_IB_MTU_4096 ||
			       m->path_mtu > rd->attr.active_mtu))
		return RRES_ERR_RANGE;
	if ((mask & M_TO) && m->timeout > 31)
		return RRES_ERR_RANGE;
	if ((mask & M_RTY) && m->retry_cnt > 7)
		return RRES_ERR_RANGE;
	if ((mask & M_RNR) && m->rnr_retry > 7)
		return RRES_ERR_RANGE;
	if ((mask & M_MRT) && m->min_rnr_timer > 31)
		return RRES_ERR_RANGE;
	if ((mask & M_RQP) && m->rq_psn > 0xffffff)
		return RRES_ERR_RANGE;
	if ((mask & M_SQP) && m->sq_psn > 0xffffff)
		return RRES_ERR_RANGE;
	if ((mask & M_DQP) && m->dest_qp_num > VRDMA_QPN_MASK)
		return RRES_ERR_RANGE;
	if ((mask & M_MRA) && m->max_rd_atomic > rd->attr.max_qp_init_rd_atom)
		return RRES_ERR_RANGE;
	if ((mask & M_MDA) && m->max_dest_rd_atomic > rd->attr.max_qp_rd_atom)
		return RRES_ERR_RANGE;
	return RRES_OK;
}

enum rres_err rres_qp_modify(struct rres_dev *rd, uint32_t qpn, const struct rres_qp_modify *m)
{
	struct rres_qp *qp = rres_qp_lookup(rd, qpn);
	struct rres_qp_attr *a;
	uint32_t mask = m->attr_mask;
	struct rres_av av;
	enum rres_err err;
	uint8_t old;

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	err = rres_qp_check_modify(rd, qp, m, &av);
	if (err)
		return err;

	a = &qp->attr;
	old = a->qp_state;
	if ((mask & VIRTIO_IB_QP_STATE) && m->qp_state == S_RESET) {
		rres_qp_attr_default(rd, qp, a);
	} else {
		if (mask & M_ACC)
			a->qp_access_flags = m->qp_access_flags;
		if (mask & M_QKEY)
			a->qkey = m->qkey;
		if (mask & M_AV) {
			a->av = av;
			a->av_valid = true;
		}
		if (mask & M_MTU)
			a->path_mtu = m->path_mtu;
		if (mask & M_TO)
			a->timeout = m->timeout;
		if (mask & M_RTY)
			a->retry_cnt = m->retry_cnt;
		if (mask & M_RNR)
			a->rnr_retry = m->rnr_retry;
		if (mask & M_RQP)
			a->rq_psn = m->rq_psn;
		if (mask & M_SQP)
			a->sq_psn = m->sq_psn;
		if (mask & M_MRA)
			a->max_rd_atomic = m->max_rd_atomic;
		if (mask & M_MRT)
			a->min_rnr_timer = m->min_rnr_timer;
		if (mask & M_MDA)
			a->max_dest_rd_atomic = m->max_dest_rd_atomic;
		if (mask & M_DQP)
			a->dest_qp_num = m->dest_qp_num;
		if (mask & M_RL)
			a->rate_limit = m->rate_limit;
		if (mask & VIRTIO_IB_QP_STATE)
			a->qp_state = m->qp_state;
	}
	if (a->qp_state == S_SQD)
		qp->sq_draining = qp->sq_draining || old == S_RTS;
	else
		qp->sq_draining = false;
	if (rd->hooks.qp_modify)
		rd->hooks.qp_modify(rd, qp, old, mask);
	return RRES_OK;
}

int rres_qp_async_state(struct rres_dev *rd, struct rres_qp *qp, uint8_t state)
{
	(void)rd;
	if (state == S_SQE) {
		if (qp->type == VIRTIO_IB_QPT_RC || qp->attr.qp_state != S_RTS)
			return -EINVAL;
	} else if (state != S_ERR || qp->attr.qp_state == S_RESET) {
		return -EINVAL;
	}
	qp->attr.qp_state = state;
	qp->sq_draining = false;
	return 0;
}

void rres_qp_sq_drained(struct rres_qp *qp)
{
	qp->sq_draining = false;
}
