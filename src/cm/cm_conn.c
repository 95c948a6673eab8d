/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection state machine of the CM (IBTA 12.9.6): active side
 * REQ -> (MRA) -> REP -> RTU, passive side REQ -> MRA/REP/REJ -> RTU,
 * disconnection DREQ -> DREP, timewait. Received messages are matched to a
 * connection by comm IDs and the sender's GID; anything that does not match
 * the state is counted and dropped, except where IBTA asks for an answer
 * (duplicate REQ: saved MRA or REP; REQ in timewait or from a connected
 * QP: REJ(stale); DREQ for nothing: DREP; duplicate REP after RTU: RTU).
 */
#include <errno.h>
#include <string.h>

#include "cm/cm_priv.h"

static uint64_t conn_try_us(const struct cm_conn *c)
{
	return cm_time_us(c->peer_resp_timeout) + cm_time_us(c->ack_timeout);
}

static bool from_peer(const struct cm_conn *c, const struct cm_addr *src)
{
	return !memcmp(c->peer.gid, src->gid, 16);
}

/* Timewait (12.9.6.4): long enough for the peer's packets to drain. */
static void enter_timewait(struct cm_conn *c)
{
	cm_conn_set_state(c, CM_TIMEWAIT);
	c->retries_left = 0;
	c->deadline = cm_now(c->port) + cm_time_us(c->ack_timeout);
}

static void msg_init(struct cm_msg *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->method = CM_METHOD_SEND;
	m->attr_id = attr;
	m->tid = tid;
}

static int send_rej_to(struct cm_port *p, const struct cm_addr *dst, uint64_t tid,
		       uint32_t local_id, uint32_t remote_id, uint8_t msg_rejected, uint16_t reason,
		       const void *ari, uint8_t ari_len, const void *pd, uint8_t pd_len)
{
	struct cm_msg m;

	msg_init(&m, CM_ATTR_REJ, tid);
	if (ari_len > sizeof(m.rej.ari) || pd_len > sizeof(m.rej.private_data))
		return -EINVAL;
	m.rej.local_comm_id = local_id;
	m.rej.remote_comm_id = remote_id;
	m.rej.message_rejected = msg_rejected;
	m.rej.reason = reason;
	m.rej.ari_len = ari_len;
	if (ari_len)
		memcpy(m.rej.ari, ari, ari_len);
	m.rej.private_data_len = pd_len;
	if (pd_len)
		memcpy(m.rej.private_data, pd, pd_len);
	return cm_send_msg(p, &m, dst, NULL);
}

/* REJ(timeout) carries our CA GUID as ARI (12.6.7.2), as Linux does. */
static void send_rej_timeout(struct cm_conn *c, uint8_t msg_rejected)
{
	uint8_t guid[8];

	put_be64(guid, c->port->cfg.ca_guid);
	send_rej_to(c->port, &c->peer, c->tid, c->local_id, c->remote_id, msg_rejected,
		    CM_REJ_TIMEOUT, guid, sizeof(guid), NULL, 0);
}

static int send_drep_to(struct cm_port *p, const struct cm_addr *dst, uint64_t tid,
			uint32_t local_id, uint32_t remote_id, const void *pd, uint8_t pd_len,
			struct cm_mad *save)
{
	struct cm_msg m;

	msg_init(&m, CM_ATTR_DREP, tid);
	if (pd_len > sizeof(m.drep.private_data))
		return -EINVAL;
	m.drep.local_comm_id = local_id;
	m.drep.remote_comm_id = remote_id;
	m.drep.private_data_len = pd_len;
	if (pd_len)
		memcpy(m.drep.private_data, pd, pd_len);
	return cm_send_msg(p, &m, dst, save);
}

/* ------------------------------------------------------------------ */
/* Received messages.                                                   */

static bool transport_supported(const struct cm_req_info *req)
{
	return req->transport_service_type == CM_TRANSPORT_RC ||
	       req->transport_service_type == CM_TRANSPORT_UC ||
	       (req->transport_service_type == CM_TRANSPORT_EXTENDED &&
		req->extended_transport_type == 1);
}

int cm_recv_req(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_req_info *req = &m->req;
	struct cm_listener *l;
	struct cm_conn *c;

	c = cm_find_remote(p, req->local_comm_id, src->gid);
	if (c && !c->sidr) {
		p->stats.rx_duplicates++;
		switch (c->state) {
		case CM_MRA_REQ_SENT:
			if (c->reply_valid)
				cm_send_msg_raw(p, &c->reply_mad, &c->peer);
			break;
		case CM_REP_SENT:
		case CM_MRA_REP_RCVD:
			cm_send_msg_raw(p, &c->retry_mad, &c->peer);
			break;
		case CM_TIMEWAIT:
			p->stats.rx_stale++;
			send_rej_to(p, src, m->tid, c->local_id, req->local_comm_id,
				    CM_MSG_RESPONSE_REQ, CM_REJ_STALE_CONN, NULL, 0, NULL, 0);
			break;
		default: /* REQ_RCVD: the user is deciding; ESTABLISHED: late copy */
			break;
		}
		return -EALREADY;
	}
	c = cm_find_qpn(p, req->local_qpn, src->gid); /* connected QPs only */
	if (c && !c->sidr) {
		/* The remote QP is still part of a connection here (12.9.8.3.1). */
		p->stats.rx_stale++;
		send_rej_to(p, src, m->tid, 0, req->local_comm_id, CM_MSG_RESPONSE_REQ,
			    CM_REJ_STALE_CONN, NULL, 0, NULL, 0);
		return -ESTALE;
	}
	if (!transport_supported(req)) {
		p->stats.rx_bad_req++;
		send_rej_to(p, src, m->tid, 0, req->local_comm_id, CM_MSG_RESPONSE_REQ,
			    CM_REJ_INVALID_TRANSPORT_TYPE, NULL, 0, NULL, 0);
		return -EPROTONOSUPPORT;
	}
	l = cm_find_listener(p, req->service_id);
	if (!l) {
		p->stats.rx_no_listener++;
		send_rej_to(p, src, m->tid, 0, req->local_comm_id, CM_MSG_RESPONSE_REQ,
			    CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL, 0);
		return -ECONNREFUSED;
	}
	/* A flood is dropped silently: a real peer retries its REQ. */
	if (!cm_can_accept(p, l) || !(c = cm_conn_alloc(p, true))) {
		p->stats.rx_flood_dropped++;
		return -ENOBUFS;
	}
	c->peer = *src;
	c->tid = m->tid;
	c->service_id = req->service_id;
	c->listen_ctx = l->ctx;
	c->listener = l;
	c->peer_resp_timeout = req->local_cm_response_timeout;
	c->ack_timeout = req->primary.local_ack_timeout;
	c->max_retries = req->max_cm_retries;
	cm_conn_set_remote(c, req->local_comm_id, req->local_qpn);
	cm_conn_set_state(c, CM_REQ_RCVD);
	cm_deliver(c, CM_EVENT_REQ_RECEIVED, 0, m);
	return 0;
}

int cm_recv_mra(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_mra_info *mra = &m->mra;
	struct cm_conn *c = cm_find_local(p, mra->remote_comm_id);

	bool repeated;

	if (!c || c->sidr || !from_peer(c, src))
		goto unmatched;
	if (mra->message_mraed == CM_MSG_RESPONSE_REQ &&
	    (c->state == CM_REQ_SENT || c->state == CM_MRA_REQ_RCVD)) {
		repeated = c->state == CM_MRA_REQ_RCVD;
		cm_conn_set_state(c, CM_MRA_REQ_RCVD);
	} else if (mra->message_mraed == CM_MSG_RESPONSE_REP && c->remote_id == mra->local_comm_id &&
		   (c->state == CM_REP_SENT || c->state == CM_MRA_REP_RCVD)) {
		repeated = c->state == CM_MRA_REP_RCVD;
		cm_conn_set_state(c, CM_MRA_REP_RCVD);
	} else {
		goto unmatched;
	}
	/* Wait the service time more (again, for a repeated MRA); the retries
	 * left still apply after. */
	c->deadline = cm_now(p) + cm_time_us(mra->service_timeout) + cm_time_us(c->ack_timeout);
	if (repeated) {
		p->stats.rx_duplicates++;
		return -EALREADY;
	}
	cm_deliver(c, CM_EVENT_MRA_RECEIVED, 0, m);
	return 0;
unmatched:
	p->stats.rx_unmatched++;
	return -ENOENT;
}

int cm_recv_rej(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_rej_info *rej = &m->rej;
	struct cm_conn *c;

	/* The sender may not know our comm ID yet (REJ(timeout) of a REQ). */
	if (rej->reason == CM_REJ_TIMEOUT || rej->remote_comm_id == 0) {
		c = cm_find_remote(p, rej->local_comm_id, src->gid);
	} else {
		c = cm_find_local(p, rej->remote_comm_id);
		if (c && rej->message_rejected != CM_MSG_RESPONSE_REQ &&
		    c->remote_id != rej->local_comm_id)
			c = NULL;
	}
	if (!c || c->sidr || !from_peer(c, src)) {
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		if (rej->reason == CM_REJ_STALE_CONN)
			enter_timewait(c);
		else
			cm_conn_set_state(c, CM_IDLE);
		break;
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
		enter_timewait(c);
		break;
	default:
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	cm_deliver(c, CM_EVENT_REJ_RECEIVED, 0, m);
	return 0;
}

int cm_recv_rep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_rep_info *rep = &m->rep;
	struct cm_conn *c = cm_find_local(p, rep->remote_comm_id);

	if (!c || c->passive || c->sidr || !from_peer(c, src)) {
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		cm_stop_timer(c);
		cm_conn_set_remote(c, rep->local_comm_id, rep->local_qpn);
		cm_conn_set_state(c, CM_REP_RCVD);
		cm_deliver(c, CM_EVENT_REP_RECEIVED, 0, m);
		return 0;
	case CM_ESTABLISHED:
		/* Our RTU was lost: send it again (12.9.6.2). */
		if (c->reply_valid && c->remote_id == rep->local_comm_id)
			cm_send_msg_raw(p, &c->reply_mad, &c->peer);
		/* fall through */
	case CM_REP_RCVD:
		p->stats.rx_duplicates++;
		return -EALREADY;
	default:
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
}

int cm_recv_rtu(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	struct cm_conn *c = cm_find_local(p, m->rtu.remote_comm_id);

	if (!c || !c->passive || c->sidr || !from_peer(c, src) ||
	    c->remote_id != m->rtu.local_comm_id) {
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	if (c->state != CM_REP_SENT && c->state != CM_MRA_REP_RCVD) {
		p->stats.rx_duplicates++;
		return -EALREADY;
	}
	cm_stop_timer(c);
	cm_conn_set_state(c, CM_ESTABLISHED);
	cm_deliver(c, CM_EVENT_ESTABLISHED, 0, m);
	return 0;
}

int cm_recv_dreq(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_dreq_info *dreq = &m->dreq;
	struct cm_conn *c = cm_find_local(p, dreq->remote_comm_id);

	if (!c || c->sidr || !from_peer(c, src) || c->remote_id != dreq->local_comm_id) {
		/* Nothing to disconnect: say so, the peer may have lost our DREP. */
		p->stats.rx_unmatched++;
		send_drep_to(p, src, m->tid, dreq->remote_comm_id, dreq->local_comm_id, NULL, 0,
			     NULL);
		return -ENOENT;
	}
	switch (c->state) {
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
	case CM_ESTABLISHED:
	case CM_DREQ_SENT:
		cm_stop_timer(c);
		c->dreq_tid = m->tid;
		cm_conn_set_state(c, CM_DREQ_RCVD);
		cm_deliver(c, CM_EVENT_DREQ_RECEIVED, 0, m);
		return 0;
	case CM_TIMEWAIT:
		send_drep_to(p, src, m->tid, c->local_id, c->remote_id, NULL, 0, NULL);
		/* fall through */
	case CM_DREQ_RCVD:
		p->stats.rx_duplicates++;
		return -EALREADY;
	default:
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
}

int cm_recv_drep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	struct cm_conn *c = cm_find_local(p, m->drep.remote_comm_id);

	if (!c || c->sidr || !from_peer(c, src) || c->remote_id != m->drep.local_comm_id) {
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	if (c->state != CM_DREQ_SENT) {
		p->stats.rx_duplicates++;
		return -EALREADY;
	}
	enter_timewait(c);
	cm_deliver(c, CM_EVENT_DREP_RECEIVED, 0, m);
	return 0;
}

int cm_notify_established(struct cm_conn *c)
{
	if (!c || c->sidr)
		return -EINVAL;
	if (c->state == CM_ESTABLISHED)
		return 0;
	if (c->state != CM_REP_SENT && c->state != CM_MRA_REP_RCVD)
		return -EINVAL;
	cm_stop_timer(c);
	cm_conn_set_state(c, CM_ESTABLISHED);
	cm_deliver(c, CM_EVENT_ESTABLISHED, 0, NULL);
	return 0;
}

/* Retries exhausted, or timewait over. */
void cm_conn_timeout(struct cm_conn *c)
{
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		send_rej_timeout(c, CM_MSG_RESPONSE_REQ);
		cm_conn_set_state(c, CM_IDLE);
		cm_deliver(c, CM_EVENT_REQ_ERROR, -ETIMEDOUT, NULL);
		break;
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		send_rej_timeout(c, CM_MSG_RESPONSE_REP);
		cm_conn_set_state(c, CM_IDLE);
		cm_deliver(c, CM_EVENT_REP_ERROR, -ETIMEDOUT, NULL);
		break;
	case CM_DREQ_SENT:
		enter_timewait(c);
		cm_deliver(c, CM_EVENT_DREP_RECEIVED, -ETIMEDOUT, NULL);
		break;
	case CM_TIMEWAIT:
		cm_conn_set_state(c, CM_IDLE);
		cm_deliver(c, CM_EVENT_TIMEWAIT_EXIT, 0, NULL);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* User requests.                                                       */

int cm_connect(struct cm_port *p, const struct cm_req_info *req, const struct cm_addr *dst,
	       void *ctx, struct cm_conn **out)
{
	struct cm_conn *c;
	struct cm_msg m;

	if (!p || !req || !dst || !out || !transport_supported(req))
		return -EINVAL;
	c = cm_conn_alloc(p, false);
	if (!c)
		return -ENOBUFS;
	msg_init(&m, CM_ATTR_REQ, cm_new_tid(p, c->local_id));
	m.req = *req;
	m.req.local_comm_id = c->local_id;
	if (!m.req.local_ca_guid)
		m.req.local_ca_guid = p->cfg.ca_guid;
	c->ctx = ctx;
	c->peer = *dst;
	c->tid = m.tid;
	c->service_id = req->service_id;
	c->local_qpn = req->local_qpn;
	c->peer_resp_timeout = req->remote_cm_response_timeout;
	c->ack_timeout = req->primary.local_ack_timeout;
	c->max_retries = req->max_cm_retries;
	if (cm_send_msg(p, &m, dst, &c->retry_mad) < 0) {
		cm_conn_destroy(c); /* still IDLE: freed at once */
		return -EINVAL;
	}
	cm_conn_set_state(c, CM_REQ_SENT);
	cm_start_retry(c, conn_try_us(c), c->max_retries);
	*out = c;
	return 0;
}

int cm_send_rtu(struct cm_conn *c, const void *pd, uint8_t len)
{
	struct cm_msg m;

	if (!c || c->state != CM_REP_RCVD || len > sizeof(m.rtu.private_data))
		return -EINVAL;
	msg_init(&m, CM_ATTR_RTU, c->tid);
	m.rtu.local_comm_id = c->local_id;
	m.rtu.remote_comm_id = c->remote_id;
	m.rtu.private_data_len = len;
	if (len)
		memcpy(m.rtu.private_data, pd, len);
	cm_send_msg(c->port, &m, &c->peer, &c->reply_mad);
	c->reply_valid = true;
	cm_conn_set_state(c, CM_ESTABLISHED);
	return 0;
}

int cm_send_rep(struct cm_conn *c, const struct cm_rep_info *rep)
{
	struct cm_msg m;

	if (!c || !rep || (c->state != CM_REQ_RCVD && c->state != CM_MRA_REQ_SENT))
		return -EINVAL;
	msg_init(&m, CM_ATTR_REP, c->tid);
	m.rep = *rep;
	m.rep.local_comm_id = c->local_id;
	m.rep.remote_comm_id = c->remote_id;
	if (!m.rep.local_ca_guid)
		m.rep.local_ca_guid = c->port->cfg.ca_guid;
	if (cm_send_msg(c->port, &m, &c->peer, &c->retry_mad) < 0)
		return -EINVAL;
	c->local_qpn = rep->local_qpn;
	c->reply_valid = false;
	cm_conn_set_state(c, CM_REP_SENT);
	cm_start_retry(c, conn_try_us(c), c->max_retries);
	return 0;
}

int cm_send_mra(struct cm_conn *c, uint8_t service_timeout, const void *pd, uint8_t len)
{
	struct cm_msg m;

	if (!c || (c->state != CM_REQ_RCVD && c->state != CM_MRA_REQ_SENT) ||
	    len > sizeof(m.mra.private_data))
		return -EINVAL;
	msg_init(&m, CM_ATTR_MRA, c->tid);
	m.mra.local_comm_id = c->local_id;
	m.mra.remote_comm_id = c->remote_id;
	m.mra.message_mraed = CM_MSG_RESPONSE_REQ;
	m.mra.service_timeout = service_timeout & 31;
	m.mra.private_data_len = len;
	if (len)
		memcpy(m.mra.private_data, pd, len);
	cm_send_msg(c->port, &m, &c->peer, &c->reply_mad);
	c->reply_valid = true;
	cm_conn_set_state(c, CM_MRA_REQ_SENT);
	return 0;
}

int cm_send_rej(struct cm_conn *c, uint16_t reason, const void *ari, uint8_t ari_len,
		const void *pd, uint8_t len)
{
	uint8_t msg;
	int rc;

	if (!c)
		return -EINVAL;
	switch (c->state) {
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		msg = CM_MSG_RESPONSE_REQ;
		break;
	case CM_REP_RCVD:
		msg = CM_MSG_RESPONSE_REP;
		break;
	default:
		return -EINVAL;
	}
	rc = send_rej_to(c->port, &c->peer, c->tid, c->local_id, c->remote_id, msg, reason,
			 ari, ari_len, pd, len);
	if (rc < 0)
		return rc;
	if (msg == CM_MSG_RESPONSE_REQ)
		cm_conn_set_state(c, CM_IDLE);
	else
		enter_timewait(c);
	return 0;
}

int cm_send_dreq(struct cm_conn *c, const void *pd, uint8_t len)
{
	struct cm_msg m;

	if (!c || c->state != CM_ESTABLISHED || len > sizeof(m.dreq.private_data))
		return -EINVAL;
	c->dreq_tid = cm_new_tid(c->port, c->local_id);
	msg_init(&m, CM_ATTR_DREQ, c->dreq_tid);
	m.dreq.local_comm_id = c->local_id;
	m.dreq.remote_comm_id = c->remote_id;
	m.dreq.remote_qpn = c->remote_qpn;
	m.dreq.private_data_len = len;
	if (len)
		memcpy(m.dreq.private_data, pd, len);
	cm_send_msg(c->port, &m, &c->peer, &c->retry_mad);
	c->reply_valid = false;
	cm_conn_set_state(c, CM_DREQ_SENT);
	cm_start_retry(c, conn_try_us(c), c->max_retries);
	return 0;
}

int cm_send_drep(struct cm_conn *c, const void *pd, uint8_t len)
{
	int rc;

	if (!c || c->state != CM_DREQ_RCVD)
		return -EINVAL;
	rc = send_drep_to(c->port, &c->peer, c->dreq_tid, c->local_id, c->remote_id, pd, len,
			  NULL);
	if (rc < 0)
		return rc;
	enter_timewait(c);
	return 0;
}

/* The user let go: finish the protocol on its behalf (no events follow). */
void cm_conn_abandon(struct cm_conn *c)
{
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		send_rej_timeout(c, CM_MSG_RESPONSE_REQ);
		cm_conn_set_state(c, CM_IDLE);
		break;
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
	case CM_REP_RCVD:
		cm_send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		break;
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		send_rej_to(c->port, &c->peer, c->tid, c->local_id, c->remote_id,
			    CM_MSG_RESPONSE_REP, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		enter_timewait(c);
		break;
	case CM_ESTABLISHED:
		cm_send_dreq(c, NULL, 0);
		break;
	case CM_DREQ_RCVD:
		cm_send_drep(c, NULL, 0);
		break;
	default: /* DREQ_SENT and TIMEWAIT run to their end; IDLE is done */
		break;
	}
}
