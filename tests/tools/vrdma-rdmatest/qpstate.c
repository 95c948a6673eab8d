// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "qpstate": the QP state machine through vrdma_qp_modify /
 * vrdma_qp_query on device A, for RC, UC and UD. For every (from, to) pair
 * of states a driver can reach, the QP is driven to `from` along legal
 * transitions, then asked to go to `to` with the attributes that transition
 * requires (docs/spec.md "QP state machine"); it must succeed exactly when
 * the table allows it, and QUERY_QP must then show every attribute modify
 * set (a model of the QP is kept and compared after each step), or the
 * unchanged QP after a refusal. Missing required attributes and attributes
 * a transition does not allow are refused too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define S_RESET VIRTIO_IB_QPS_RESET
#define S_INIT  VIRTIO_IB_QPS_INIT
#define S_RTR   VIRTIO_IB_QPS_RTR
#define S_RTS   VIRTIO_IB_QPS_RTS
#define S_SQD   VIRTIO_IB_QPS_SQD
#define S_SQE   VIRTIO_IB_QPS_SQE
#define S_ERR   VIRTIO_IB_QPS_ERR

static const char *const state_name[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

/* The spec's table: legal transitions a driver may request. */
static bool legal(uint8_t from, uint8_t to)
{
	if (to == S_RESET || to == S_ERR)
		return true;
	switch (from) {
	case S_RESET:
		return to == S_INIT;
	case S_INIT:
		return to == S_INIT || to == S_RTR;
	case S_RTR:
		return to == S_RTS;
	case S_RTS:
		return to == S_RTS || to == S_SQD;
	case S_SQD:
		return to == S_RTS || to == S_SQD;
	default:
		return false;
	}
}

/* Required attributes of (type, from -> to); for an illegal pair those of
 * the usual way into `to`. */
static uint32_t required(uint8_t type, uint8_t from, uint8_t to)
{
	bool rc = type == VIRTIO_IB_QPT_RC, conn = rc || type == VIRTIO_IB_QPT_UC;

	switch (to) {
	case S_INIT:
		if (from != S_RESET && legal(from, to))
			return 0;
		return conn ? VIRTIO_IB_QP_ACCESS_FLAGS : VIRTIO_IB_QP_QKEY;
	case S_RTR:
		if (!conn)
			return 0;
		return VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
		       VIRTIO_IB_QP_RQ_PSN |
		       (rc ? VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER : 0);
	case S_RTS:
		if (from == S_RTS || from == S_SQD)
			return 0;
		return VIRTIO_IB_QP_SQ_PSN |
		       (rc ? VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
				     VIRTIO_IB_QP_MAX_QP_RD_ATOMIC : 0);
	default:
		return 0;
	}
}

/* Attribute values used everywhere (each field distinct). */
static void values(struct vrdma_qp_attr *a, uint8_t to, unsigned salt)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	a->path_mtu = VIRTIO_IB_MTU_1024;
	a->max_rd_atomic = (uint8_t)(4 + salt % 3);
	a->max_dest_rd_atomic = (uint8_t)(8 + salt % 5);
	a->min_rnr_timer = (uint8_t)(5 + salt % 7);
	a->timeout = (uint8_t)(17 + salt % 9);
	a->retry_cnt = 6;
	a->rnr_retry = (uint8_t)(salt % 8);
	a->qkey = 0x1234567u + salt;
	a->rq_psn = 0x10203u + salt;
	a->sq_psn = 0x30405u + salt;
	a->dest_qp_num = 0xabcu + salt;
	a->qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     (salt & 1 ? VIRTIO_IB_ACCESS_REMOTE_READ : 0);
	a->rate_limit = 0;
	a->ah_attr.grh.dgid[0] = 0xfe;
	a->ah_attr.grh.dgid[1] = 0x80;
	a->ah_attr.grh.dgid[14] = (uint8_t)salt;
	a->ah_attr.grh.dgid[15] = 5;
	a->ah_attr.grh.flow_label = 0x54321u + salt;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.grh.traffic_class = 0x20;
	a->ah_attr.dmac[0] = 0x02;
	a->ah_attr.dmac[5] = (uint8_t)(5 + salt);
}

struct model {
	struct vrdma_qp_attr a;
	bool av_set;
	uint8_t port_mtu;
	uint8_t type;
};

static void model_reset(struct model *m)
{
	struct vrdma_qp_cap cap = m->a.cap;

	memset(&m->a, 0, sizeof(m->a));
	m->a.cap = cap;
	m->av_set = false;
	if (m->type == VIRTIO_IB_QPT_UD)
		m->a.path_mtu = m->port_mtu;
}

static void model_apply(struct model *m, const struct vrdma_qp_attr *a, uint32_t mask)
{
	if (mask & VIRTIO_IB_QP_STATE) {
		if (a->qp_state == S_RESET) {
			model_reset(m);
			return;
		}
		m->a.qp_state = a->qp_state;
	}
	if (mask & VIRTIO_IB_QP_ACCESS_FLAGS)
		m->a.qp_access_flags = a->qp_access_flags;
	if (mask & VIRTIO_IB_QP_QKEY)
		m->a.qkey = a->qkey;
	if (mask & VIRTIO_IB_QP_AV) {
		m->a.ah_attr = a->ah_attr;
		m->av_set = true;
	}
	if (mask & VIRTIO_IB_QP_PATH_MTU)
		m->a.path_mtu = a->path_mtu;
	if (mask & VIRTIO_IB_QP_TIMEOUT)
		m->a.timeout = a->timeout;
	if (mask & VIRTIO_IB_QP_RETRY_CNT)
		m->a.retry_cnt = a->retry_cnt;
	if (mask & VIRTIO_IB_QP_RNR_RETRY)
		m->a.rnr_retry = a->rnr_retry;
	if (mask & VIRTIO_IB_QP_RQ_PSN)
		m->a.rq_psn = a->rq_psn;
	if (mask & VIRTIO_IB_QP_MAX_QP_RD_ATOMIC)
		m->a.max_rd_atomic = a->max_rd_atomic;
	if (mask & VIRTIO_IB_QP_MIN_RNR_TIMER)
		m->a.min_rnr_timer = a->min_rnr_timer;
	if (mask & VIRTIO_IB_QP_SQ_PSN)
		m->a.sq_psn = a->sq_psn;
	if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
		m->a.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & VIRTIO_IB_QP_DEST_QPN)
		m->a.dest_qp_num = a->dest_qp_num;
	if (mask & VIRTIO_IB_QP_RATE_LIMIT)
		m->a.rate_limit = a->rate_limit;
}

/* QUERY_QP equals the model. */
static void model_check(struct vrdma_qp *qp, const struct model *m, const char *where)
{
	struct vrdma_qp_attr q;
	const struct vrdma_qp_attr *e = &m->a;
	int rc = vrdma_qp_query(qp, VIRTIO_IB_QP_ATTR_MASK_ALL & ~VIRTIO_IB_QP_CAP, &q);

	RT_CHECK(rc == 0, "%s: query %d", where, rc);
	if (rc)
		return;
#define F(f) RT_CHECK(q.f == e->f, "%s: " #f " %lld, expected %lld", where, \
		      (long long)q.f, (long long)e->f)
	F(qp_state);
	F(path_mtu);
	F(max_rd_atomic);
	F(max_dest_rd_atomic);
	F(min_rnr_timer);
	F(timeout);
	F(retry_cnt);
	F(rnr_retry);
	F(qkey);
	F(rq_psn);
	F(sq_psn);
	F(dest_qp_num);
	F(qp_access_flags);
	F(rate_limit);
	F(cap.max_send_wr);
	F(cap.max_recv_wr);
	F(cap.max_send_sge);
	F(cap.max_recv_sge);
	F(cap.max_inline_data);
	if (m->av_set) {
		RT_CHECK(!memcmp(q.ah_attr.grh.dgid, e->ah_attr.grh.dgid, 16), "%s: dgid", where);
		F(ah_attr.grh.flow_label);
		F(ah_attr.grh.sgid_index);
		F(ah_attr.grh.hop_limit);
		F(ah_attr.grh.traffic_class);
		RT_CHECK(!memcmp(q.ah_attr.dmac, e->ah_attr.dmac, 6), "%s: dmac", where);
	}
#undef F
}

/* Modify with a mask; keeps the model; checks the outcome is `expect_ok`. */
static int step(struct vrdma_qp *qp, struct model *m, uint8_t to, uint32_t mask, unsigned salt,
		bool expect_ok, const char *where)
{
	struct vrdma_qp_attr a;
	int rc;

	values(&a, to, salt);
	rc = vrdma_qp_modify(qp, &a, mask);
	if (expect_ok)
		RT_CHECK(rc == 0, "%s: modify -> %s failed: %d", where, state_name[to], rc);
	else
		RT_CHECK(rc == -EINVAL, "%s: modify -> %s gave %d, expected -EINVAL", where,
			 state_name[to], rc);
	if (rc == 0)
		model_apply(m, &a, mask);
	return rc;
}

/* Drive qp (in RESET) to state s along legal transitions. */
static int drive(struct vrdma_qp *qp, struct model *m, uint8_t s, unsigned salt)
{
	static const uint8_t path[] = { S_INIT, S_RTR, S_RTS, S_SQD };
	uint8_t cur = S_RESET;
	unsigned i;

	if (s == S_RESET)
		return 0;
	if (s == S_ERR)
		return step(qp, m, S_ERR, VIRTIO_IB_QP_STATE, salt, true, "drive");
	for (i = 0; i < sizeof(path) && cur != s; i++) {
		if (step(qp, m, path[i], VIRTIO_IB_QP_STATE | required(m->type, cur, path[i]),
			 salt, true, "drive"))
			return -1;
		cur = path[i];
	}
	return 0;
}

static void machine(struct rt_ctx *c, uint8_t type)
{
	static const uint8_t states[] = { S_RESET, S_INIT, S_RTR, S_RTS, S_SQD, S_ERR };
	static const uint8_t targets[] = { S_RESET, S_INIT, S_RTR, S_RTS, S_SQD, S_SQE, S_ERR };
	struct vrdma_dev *d;
	struct vrdma_port_attr pa;
	struct vrdma_qp_init in;
	struct vrdma_qp *qp = NULL;
	struct vrdma_cq *cq = NULL;
	struct model m;
	uint32_t pdn = 0;
	unsigned salt = 1, fi, ti;
	char where[64];

	if (!c->dev[0])
		c->dev[0] = rt_open(c->sock[0]);
	d = c->dev[0];
	RT_REQUIRE(d && vrdma_query_port(d, &pa) == 0, "no device");
	RT_REQUIRE(vrdma_pd_alloc(d, &pdn) == 0 && vrdma_cq_create(d, 16, &cq) == 0, "pd/cq");
	memset(&in, 0, sizeof(in));
	in.pdn = pdn;
	in.qp_type = type;
	in.send_cq = in.recv_cq = cq;
	in.cap.max_send_wr = in.cap.max_recv_wr = 8;
	in.cap.max_send_sge = in.cap.max_recv_sge = 2;
	RT_REQUIRE(vrdma_qp_create(d, &in, &qp) == 0, "create");
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.port_mtu = pa.active_mtu;
	vrdma_qp_get_cap(qp, &m.a.cap);
	model_reset(&m);
	model_check(qp, &m, "fresh");

	for (fi = 0; fi < sizeof(states); fi++) {
		for (ti = 0; ti < sizeof(targets); ti++) {
			uint8_t from = states[fi], to = targets[ti];
			uint32_t mask = VIRTIO_IB_QP_STATE | required(type, from, to);

			snprintf(where, sizeof(where), "%s->%s", state_name[from], state_name[to]);
			salt++;
			/* back to RESET, then to `from` */
			step(qp, &m, S_RESET, VIRTIO_IB_QP_STATE, salt, true, "reset");
			if (drive(qp, &m, from, salt))
				goto out;
			model_check(qp, &m, where);
			step(qp, &m, to, mask, salt + 1000, legal(from, to), where);
			model_check(qp, &m, where);
		}
	}

	/* Attribute rules: a missing required one, one not allowed. */
	step(qp, &m, S_RESET, VIRTIO_IB_QP_STATE, salt, true, "reset");
	if (type == VIRTIO_IB_QPT_UD) {
		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE, salt, false, "UD INIT without QKEY");
		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY |
					     VIRTIO_IB_QP_ACCESS_FLAGS, salt, false,
		     "UD INIT with ACCESS_FLAGS");
		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY, salt, true, "UD INIT");
		step(qp, &m, S_RTR, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PATH_MTU, salt, false,
		     "UD RTR with PATH_MTU");
		step(qp, &m, S_RTR, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV, salt, false,
		     "UD RTR with AV");
		step(qp, &m, S_RTR, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY, salt, true, "UD RTR");
		step(qp, &m, S_RTS, VIRTIO_IB_QP_STATE, salt, false, "UD RTS without SQ_PSN");
		step(qp, &m, S_RTS, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN |
					    VIRTIO_IB_QP_RATE_LIMIT, salt, true, "UD RTS");
	} else {
		uint32_t rtr = required(type, S_INIT, S_RTR);

		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE, salt, false, "INIT without ACCESS_FLAGS");
		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS |
					     VIRTIO_IB_QP_QKEY, salt, false, "INIT with QKEY");
		step(qp, &m, S_INIT, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS, salt, true,
		     "INIT");
		for (uint32_t bit = 1; bit; bit <<= 1) {
			if (!(rtr & bit))
				continue;
			snprintf(where, sizeof(where), "RTR without mask bit %#x", bit);
			step(qp, &m, S_RTR, (VIRTIO_IB_QP_STATE | rtr) & ~bit, salt, false, where);
		}
		step(qp, &m, S_RTR, VIRTIO_IB_QP_STATE | rtr | VIRTIO_IB_QP_SQ_PSN, salt, false,
		     "RTR with SQ_PSN");
		step(qp, &m, S_RTR, VIRTIO_IB_QP_STATE | rtr | VIRTIO_IB_QP_ACCESS_FLAGS, salt, true,
		     "RTR");
		step(qp, &m, S_RTS, VIRTIO_IB_QP_STATE | required(type, S_RTR, S_RTS) |
					    VIRTIO_IB_QP_RATE_LIMIT | VIRTIO_IB_QP_CUR_STATE,
		     salt, false, "RTS with a wrong CUR_STATE");
	}
	model_check(qp, &m, "rules");
out:
	vrdma_qp_destroy(qp);
	vrdma_cq_destroy(cq);
	vrdma_pd_free(d, pdn);
}

static void t_qpstate_rc(struct rt_ctx *c)
{
	machine(c, VIRTIO_IB_QPT_RC);
}

static void t_qpstate_uc(struct rt_ctx *c)
{
	machine(c, VIRTIO_IB_QPT_UC);
}

static void t_qpstate_ud(struct rt_ctx *c)
{
	machine(c, VIRTIO_IB_QPT_UD);
}

void rt_qp_states(struct rt_ctx *c)
{
	RT_RUN(c, t_qpstate_rc);
	RT_RUN(c, t_qpstate_uc);
	RT_RUN(c, t_qpstate_ud);
}
