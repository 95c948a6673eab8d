/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service ID Resolution for UD (IBTA 12.11): SIDR_REQ -> SIDR_REP. The active
 * side retries its SIDR_REQ; the passive side keeps a request only until the
 * user answers it (a repeated SIDR_REQ meanwhile is a duplicate).
 */
#include <errno.h>
#include <string.h>

#include "cm/cm_priv.h"

int cm_sidr_resolve(struct cm_port *p, const struct cm_sidr_req_info *req,
		    const struct cm_addr *dst, uint8_t timeout, uint8_t retries, void *ctx,
		    struct cm_conn **out)
{
	struct cm_conn *c;
	struct cm_msg m;

	if (!p || !req || !dst || !out)
		return -EINVAL;
	c = cm_conn_alloc(p, false);
	if (!c)
		return -ENOBUFS;
	c->sidr = true;
	c->ctx = ctx;
	c->peer = *dst;
	c->service_id = req->service_id;
	memset(&m, 0, sizeof(m));
	m.method = CM_METHOD_SEND;
	m.attr_id = CM_ATTR_SIDR_REQ;
	m.tid = c->tid = cm_new_tid(p, c->local_id);
	m.sidr_req = *req;
	m.sidr_req.request_id = c->local_id;
	if (cm_send_msg(p, &m, dst, &c->retry_mad) < 0) {
		cm_conn_destroy(c);
		return -EINVAL;
	}
	cm_conn_set_state(c, CM_SIDR_REQ_SENT);
	cm_start_retry(c, cm_time_us(timeout), retries);
	*out = c;
	return 0;
}

static int send_sidr_rep(struct cm_conn *c, const struct cm_sidr_rep_info *rep)
{
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.method = CM_METHOD_SEND;
	m.attr_id = CM_ATTR_SIDR_REP;
	m.tid = c->tid;
	m.sidr_rep = *rep;
	m.sidr_rep.request_id = c->remote_id;
	m.sidr_rep.service_id = c->service_id;
	return cm_send_msg(c->port, &m, &c->peer, NULL);
}

int cm_send_sidr_rep(struct cm_conn *c, const struct cm_sidr_rep_info *rep)
{
	int rc;

	if (!c || !rep || c->state != CM_SIDR_REQ_RCVD)
		return -EINVAL;
	rc = send_sidr_rep(c, rep);
	if (rc < 0)
		return rc;
	cm_conn_set_state(c, CM_IDLE);
	cm_conn_destroy(c); /* the reply ends the request */
	return 0;
}

int cm_recv_sidr_req(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_sidr_req_info *req = &m->sidr_req;
	struct cm_listener *l;
	struct cm_conn *c;

	c = cm_find_remote(p, req->request_id, src->gid);
	if (c && c->sidr) {
		p->stats.rx_duplicates++;
		return -EALREADY;
	}
	l = cm_find_listener(p, req->service_id);
	if (!l) {
		struct cm_msg r;

		p->stats.rx_no_listener++;
		memset(&r, 0, sizeof(r));
		r.method = CM_METHOD_SEND;
		r.attr_id = CM_ATTR_SIDR_REP;
		r.tid = m->tid;
		r.sidr_rep.request_id = req->request_id;
		r.sidr_rep.status = CM_SIDR_UNSUPPORTED;
		r.sidr_rep.service_id = req->service_id;
		cm_send_msg(p, &r, src, NULL);
		return -ECONNREFUSED;
	}
	if (!cm_can_accept(p, l) || !(c = cm_conn_alloc(p, true))) {
		p->stats.rx_flood_dropped++;
		return -ENOBUFS;
	}
	c->sidr = true;
	c->peer = *src;
	c->tid = m->tid;
	c->service_id = req->service_id;
	c->listen_ctx = l->ctx;
	c->listener = l;
	cm_conn_set_remote(c, req->request_id, 0);
	cm_conn_set_state(c, CM_SIDR_REQ_RCVD);
	cm_deliver(c, CM_EVENT_SIDR_REQ_RECEIVED, 0, m);
	return 0;
}

int cm_recv_sidr_rep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src)
{
	struct cm_conn *c = cm_find_local(p, m->sidr_rep.request_id);

	if (!c || !c->sidr || c->passive || c->state != CM_SIDR_REQ_SENT ||
	    memcmp(c->peer.gid, src->gid, 16)) {
		p->stats.rx_unmatched++;
		return -ENOENT;
	}
	cm_conn_set_state(c, CM_IDLE);
	cm_deliver(c, CM_EVENT_SIDR_REP_RECEIVED, 0, m);
	return 0;
}

void cm_sidr_timeout(struct cm_conn *c)
{
	if (c->state != CM_SIDR_REQ_SENT)
		return;
	cm_conn_set_state(c, CM_IDLE);
	cm_deliver(c, CM_EVENT_SIDR_REP_RECEIVED, -ETIMEDOUT, NULL);
}

void cm_sidr_abandon(struct cm_conn *c)
{
	struct cm_sidr_rep_info rep;

	if (c->state == CM_SIDR_REQ_RCVD) {
		memset(&rep, 0, sizeof(rep));
		rep.status = CM_SIDR_REJECT;
		send_sidr_rep(c, &rep);
	}
	cm_conn_set_state(c, CM_IDLE);
}
