/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM port object: connection tables, listeners, the receive demux of
 * untrusted MADs, timers and retransmission, counters (see cm.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_priv.h"

#define CM_DEFAULT_MAX_CONNS   4096
#define CM_DEFAULT_MAX_PENDING 256
#define CM_DEFAULT_RESP_TIME   18

uint64_t cm_now(struct cm_port *p)
{
	return p->ops.now_us(p->ctx);
}

/* ------------------------------------------------------------------ */
/* Hash tables: power-of-two buckets of intrusive chains.              */

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static uint32_t hash_gid(uint32_t seed, const uint8_t gid[16])
{
	uint32_t h = seed ^ 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	return hash32(h);
}

static struct cm_conn **local_slot(struct cm_port *p, uint32_t id)
{
	return &p->local_hash[hash32(id) & p->hash_mask];
}

static struct cm_conn **remote_slot(struct cm_port *p, uint32_t id, const uint8_t gid[16])
{
	return &p->remote_hash[hash_gid(id, gid) & p->hash_mask];
}

static struct cm_conn **qpn_slot(struct cm_port *p, uint32_t qpn, const uint8_t gid[16])
{
	return &p->qpn_hash[hash_gid(qpn ^ 0x5bd1e995u, gid) & p->hash_mask];
}

#define CHAIN_REMOVE(head, c, field)                                            \
	do {                                                                    \
		struct cm_conn **pp_ = (head);                                  \
		while (*pp_ && *pp_ != (c))                                     \
			pp_ = &(*pp_)->field;                                   \
		if (*pp_)                                                       \
			*pp_ = (c)->field;                                      \
		(c)->field = NULL;                                              \
	} while (0)

struct cm_conn *cm_find_local(struct cm_port *p, uint32_t local_id)
{
	for (struct cm_conn *c = *local_slot(p, local_id); c; c = c->local_chain)
		if (c->local_id == local_id)
			return c;
	return NULL;
}

struct cm_conn *cm_find_remote(struct cm_port *p, uint32_t remote_id, const uint8_t gid[16])
{
	for (struct cm_conn *c = *remote_slot(p, remote_id, gid); c; c = c->remote_chain)
		if (c->remote_id == remote_id && !memcmp(c->peer.gid, gid, 16))
			return c;
	return NULL;
}

struct cm_conn *cm_find_qpn(struct cm_port *p, uint32_t remote_qpn, const uint8_t gid[16])
{
	for (struct cm_conn *c = *qpn_slot(p, remote_qpn, gid); c; c = c->qpn_chain)
		if (c->remote_qpn == remote_qpn && !memcmp(c->peer.gid, gid, 16))
			return c;
	return NULL;
}

/* The remote QP is no longer connected here (timewait, idle). */
void cm_conn_unhash_qpn(struct cm_conn *c)
{
	if (c->in_qpn)
		CHAIN_REMOVE(qpn_slot(c->port, c->remote_qpn, c->peer.gid), c, qpn_chain);
	c->in_qpn = false;
}

static void unhash_remote(struct cm_conn *c)
{
	struct cm_port *p = c->port;

	if (c->in_remote)
		CHAIN_REMOVE(remote_slot(p, c->remote_id, c->peer.gid), c, remote_chain);
	c->in_remote = false;
	cm_conn_unhash_qpn(c);
}

void cm_conn_set_remote(struct cm_conn *c, uint32_t remote_id, uint32_t remote_qpn)
{
	struct cm_port *p = c->port;
	struct cm_conn **slot;

	unhash_remote(c);
	c->remote_id = remote_id;
	c->remote_qpn = remote_qpn;
	slot = remote_slot(p, remote_id, c->peer.gid);
	c->remote_chain = *slot;
	*slot = c;
	c->in_remote = true;
	if (!c->sidr) {
		slot = qpn_slot(p, remote_qpn, c->peer.gid);
		c->qpn_chain = *slot;
		*slot = c;
		c->in_qpn = true;
	}
}

/* ------------------------------------------------------------------ */
/* Connections.                                                         */

bool cm_can_accept(struct cm_port *p, const struct cm_listener *l)
{
	return p->stats.conns < p->cfg.max_conns && p->stats.pending < p->cfg.max_pending &&
	       (!l->backlog || l->pending < l->backlog);
}

struct cm_conn *cm_conn_alloc(struct cm_port *p, bool passive)
{
	struct cm_conn *c;
	struct cm_conn **slot;
	uint32_t id;

	if (p->stats.conns >= p->cfg.max_conns)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	/* Comm IDs: a counter scrambled by the seed, never 0, never in use. */
	do
		id = (p->next_id++ * 2654435761u) ^ p->cfg.comm_id_seed;
	while (id == 0 || cm_find_local(p, id));
	c->port = p;
	c->passive = passive;
	c->local_id = id;
	c->state = CM_IDLE;
	c->deadline = CM_NO_TIMER;
	slot = local_slot(p, id);
	c->local_chain = *slot;
	*slot = c;
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->stats.conns++;
	return c;
}

static void conn_free(struct cm_conn *c)
{
	struct cm_port *p = c->port;

	unhash_remote(c);
	CHAIN_REMOVE(local_slot(p, c->local_id), c, local_chain);
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->pending) {
		p->stats.pending--;
		if (c->listener)
			c->listener->pending--;
	}
	p->stats.conns--;
	free(c);
}

/* Frees the connections the user let go of that have reached IDLE, unless
 * an event callback is running (it may still hold them). */
static void cm_reap(struct cm_port *p)
{
	if (p->depth)
		return;
	while (p->reap) {
		struct cm_conn *c = p->reap;

		p->reap = c->reap_next;
		conn_free(c);
	}
}

static void schedule_reap(struct cm_conn *c)
{
	if (c->on_reap || !c->detached || c->state != CM_IDLE)
		return;
	c->on_reap = true;
	c->reap_next = c->port->reap;
	c->port->reap = c;
}

static bool state_is_pending(enum cm_state st)
{
	return st == CM_REQ_RCVD || st == CM_MRA_REQ_SENT || st == CM_REP_SENT ||
	       st == CM_MRA_REP_RCVD || st == CM_SIDR_REQ_RCVD;
}

void cm_conn_set_state(struct cm_conn *c, enum cm_state st)
{
	bool pending = c->passive && state_is_pending(st);

	if (pending != c->pending) {
		c->port->stats.pending += pending ? 1 : (uint64_t)-1;
		if (c->listener)
			c->listener->pending += pending ? 1 : (uint32_t)-1;
		c->pending = pending;
	}
	if (st == CM_TIMEWAIT)
		cm_conn_unhash_qpn(c);
	c->state = st;
	if (st == CM_IDLE) {
		cm_stop_timer(c);
		unhash_remote(c);
		c->reply_valid = false;
		schedule_reap(c);
	}
}

void cm_deliver(struct cm_conn *c, enum cm_event_type type, int status, const struct cm_msg *msg)
{
	struct cm_port *p = c->port;
	struct cm_event ev = {
		.type = type,
		.conn = c,
		.conn_ctx = c->ctx,
		.listen_ctx = c->listen_ctx,
		.status = status,
		.peer = &c->peer,
		.msg = msg,
	};

	if (c->detached || !p->ops.event)
		return;
	p->depth++;
	p->ops.event(p->ctx, &ev);
	p->depth--;
}

void cm_attr_count(uint64_t *by_attr, uint16_t attr)
{
	if (attr == CM_ATTR_CLASS_PORT_INFO)
		by_attr[0]++;
	else if (attr >= CM_ATTR_REQ && attr <= CM_ATTR_APR)
		by_attr[1 + attr - CM_ATTR_REQ]++;
}

/* Sends a built MAD; a failure is counted and treated as a loss. */
void cm_send_msg_raw(struct cm_port *p, const struct cm_mad *mad, const struct cm_addr *dst)
{
	p->stats.tx++;
	cm_attr_count(p->stats.tx_attr, get_be16(mad->hdr.attr_id));
	if (p->ops.send(p->ctx, mad, dst) < 0)
		p->stats.tx_errors++;
}

int cm_send_msg(struct cm_port *p, const struct cm_msg *msg, const struct cm_addr *dst,
		struct cm_mad *save)
{
	struct cm_mad local;
	struct cm_mad *mad = save ? save : &local;

	if (cm_mad_build(mad, msg) < 0)
		return -EINVAL;
	cm_send_msg_raw(p, mad, dst);
	return 0; /* a failed send is a lost MAD: the retries cover it */
}

uint64_t cm_new_tid(struct cm_port *p, uint32_t low)
{
	return ((uint64_t)++p->tid_seq << 32) | low;
}

void cm_start_retry(struct cm_conn *c, uint64_t try_us, unsigned retries)
{
	c->retry_us = try_us ? try_us : 1;
	c->retries_left = retries;
	c->deadline = cm_now(c->port) + c->retry_us;
}

void cm_stop_timer(struct cm_conn *c)
{
	c->deadline = CM_NO_TIMER;
	c->retries_left = 0;
}

/* ------------------------------------------------------------------ */
/* Port.                                                                */

struct cm_port *cm_port_create(const struct cm_port_config *cfg, const struct cm_port_ops *ops,
			       void *ctx)
{
	struct cm_port *p;
	uint32_t buckets = 64;

	if (!cfg || !ops || !ops->now_us || !ops->send) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cfg = *cfg;
	if (!p->cfg.max_conns)
		p->cfg.max_conns = CM_DEFAULT_MAX_CONNS;
	if (!p->cfg.max_pending)
		p->cfg.max_pending = CM_DEFAULT_MAX_PENDING;
	if (!p->cfg.resp_time_value)
		p->cfg.resp_time_value = CM_DEFAULT_RESP_TIME;
	p->ops = *ops;
	p->ctx = ctx;
	p->next_id = 1;
	while (buckets < p->cfg.max_conns && buckets < (1u << 20))
		buckets <<= 1;
	p->hash_mask = buckets - 1;
	p->local_hash = calloc(buckets, sizeof(*p->local_hash));
	p->remote_hash = calloc(buckets, sizeof(*p->remote_hash));
	p->qpn_hash = calloc(buckets, sizeof(*p->qpn_hash));
	if (!p->local_hash || !p->remote_hash || !p->qpn_hash) {
		cm_port_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void cm_port_destroy(struct cm_port *p)
{
	if (!p)
		return;
	while (p->conns) {
		struct cm_conn *c = p->conns;

		p->conns = c->next;
		free(c);
	}
	while (p->listeners) {
		struct cm_listener *l = p->listeners;

		p->listeners = l->next;
		free(l);
	}
	free(p->local_hash);
	free(p->remote_hash);
	free(p->qpn_hash);
	free(p);
}

const struct cm_port_stats *cm_port_stats(const struct cm_port *p)
{
	return &p->stats;
}

struct cm_listener *cm_find_listener(struct cm_port *p, uint64_t service_id)
{
	for (struct cm_listener *l = p->listeners; l; l = l->next)
		if (l->service_id == service_id)
			return l;
	return NULL;
}

int cm_listen(struct cm_port *p, uint64_t service_id, uint32_t backlog, void *ctx,
	      struct cm_listener **out)
{
	struct cm_listener *l;

	if (cm_find_listener(p, service_id))
		return -EADDRINUSE;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->port = p;
	l->service_id = service_id;
	l->backlog = backlog;
	l->ctx = ctx;
	l->next = p->listeners;
	p->listeners = l;
	*out = l;
	return 0;
}

void cm_listener_destroy(struct cm_listener *l)
{
	struct cm_listener **pp;

	if (!l)
		return;
	for (struct cm_conn *c = l->port->conns; c; c = c->next)
		if (c->listener == l)
			c->listener = NULL;
	for (pp = &l->port->listeners; *pp && *pp != l; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = l->next;
	free(l);
}

/* Answers a refused Get/Set request with a GetResp carrying the status
 * (IBTA 13.4.7); refused Sends and responses are only dropped. */
static void answer_refused(struct cm_port *p, const void *buf, enum cm_mad_status st,
			   const struct cm_msg *m, const struct cm_addr *src)
{
	const struct cm_mad *in = buf;
	struct cm_mad out;
	uint16_t status;

	if (st == CM_MAD_BAD_LENGTH || st == CM_MAD_BAD_BASE_VERSION || st == CM_MAD_BAD_CLASS)
		return;
	if (m->method != CM_METHOD_GET && m->method != CM_METHOD_SET)
		return;
	switch (st) {
	case CM_MAD_BAD_CLASS_VERSION: status = CM_MAD_STATUS_BAD_VERSION; break;
	case CM_MAD_BAD_METHOD: status = CM_MAD_STATUS_UNSUPPORTED_METHOD; break;
	case CM_MAD_BAD_ATTR:
	case CM_MAD_UNSUPPORTED_ATTR: status = CM_MAD_STATUS_UNSUPPORTED_ATTR; break;
	default: status = CM_MAD_STATUS_INVALID_FIELD; break;
	}
	memset(&out, 0, sizeof(out));
	out.hdr = in->hdr;
	out.hdr.method = CM_METHOD_GET_RESP;
	put_be16(out.hdr.status, status);
	p->stats.tx_resp_status++;
	cm_send_msg_raw(p, &out, src);
}

static int answer_class_port_info(struct cm_port *p, const struct cm_msg *m,
				  const struct cm_addr *src)
{
	struct cm_msg r;

	memset(&r, 0, sizeof(r));
	r.method = CM_METHOD_GET_RESP;
	r.tid = m->tid;
	r.attr_id = CM_ATTR_CLASS_PORT_INFO;
	r.attr_mod = m->attr_mod;
	r.cpi.base_version = CM_MAD_BASE_VERSION;
	r.cpi.class_version = CM_CLASS_VERSION;
	r.cpi.resp_time_value = p->cfg.resp_time_value;
	return cm_send_msg(p, &r, src, NULL);
}

int cm_port_recv(struct cm_port *p, const void *buf, size_t len, const struct cm_addr *src)
{
	struct cm_msg m;
	enum cm_mad_status st;
	int rc;

	if (!src)
		return -EINVAL;
	p->stats.rx++;
	st = cm_mad_parse(buf, len, &m);
	if (st != CM_MAD_OK) {
		p->stats.rx_refused[st]++;
		answer_refused(p, buf, st, &m, src);
		return -EBADMSG;
	}
	cm_attr_count(p->stats.rx_attr, m.attr_id);
	p->depth++;
	switch (m.attr_id) {
	case CM_ATTR_CLASS_PORT_INFO:
		if (m.method == CM_METHOD_GET) {
			rc = answer_class_port_info(p, &m, src);
		} else { /* a GetResp: we send no Get */
			p->stats.rx_unmatched++;
			rc = -ENOENT;
		}
		break;
	case CM_ATTR_REQ: rc = cm_recv_req(p, &m, src); break;
	case CM_ATTR_MRA: rc = cm_recv_mra(p, &m, src); break;
	case CM_ATTR_REJ: rc = cm_recv_rej(p, &m, src); break;
	case CM_ATTR_REP: rc = cm_recv_rep(p, &m, src); break;
	case CM_ATTR_RTU: rc = cm_recv_rtu(p, &m, src); break;
	case CM_ATTR_DREQ: rc = cm_recv_dreq(p, &m, src); break;
	case CM_ATTR_DREP: rc = cm_recv_drep(p, &m, src); break;
	case CM_ATTR_SIDR_REQ: rc = cm_recv_sidr_req(p, &m, src); break;
	case CM_ATTR_SIDR_REP: rc = cm_recv_sidr_rep(p, &m, src); break;
	default: rc = -EBADMSG; break; /* cm_mad_parse refuses the rest */
	}
	p->depth--;
	cm_reap(p);
	return rc;
}

uint64_t cm_port_next_timeout(const struct cm_port *p)
{
	uint64_t next = CM_NO_TIMER;

	for (const struct cm_conn *c = p->conns; c; c = c->next)
		if (c->deadline < next)
			next = c->deadline;
	return next;
}

void cm_port_tick(struct cm_port *p)
{
	uint64_t now = cm_now(p);
	struct cm_conn *c, *next;

	p->depth++;
	for (c = p->conns; c; c = next) {
		next = c->next;
		if (c->deadline > now)
			continue;
		if (c->retries_left && c->state != CM_TIMEWAIT) {
			c->retries_left--;
			c->deadline = now + c->retry_us;
			p->stats.retransmits++;
			cm_send_msg_raw(p, &c->retry_mad, &c->peer);
			continue;
		}
		c->deadline = CM_NO_TIMER;
		if (c->state != CM_TIMEWAIT)
			p->stats.timeouts++;
		if (c->sidr)
			cm_sidr_timeout(c);
		else
			cm_conn_timeout(c);
	}
	p->depth--;
	cm_reap(p);
}

/* ------------------------------------------------------------------ */

void cm_conn_set_context(struct cm_conn *c, void *ctx)
{
	c->ctx = ctx;
}

enum cm_state cm_conn_state(const struct cm_conn *c)
{
	return c->state;
}

uint32_t cm_conn_local_id(const struct cm_conn *c)
{
	return c->local_id;
}

uint32_t cm_conn_remote_id(const struct cm_conn *c)
{
	return c->remote_id;
}

uint32_t cm_conn_local_qpn(const struct cm_conn *c)
{
	return c->local_qpn;
}

void cm_conn_destroy(struct cm_conn *c)
{
	struct cm_port *p;

	if (!c || c->detached)
		return;
	p = c->port;
	c->detached = true;
	c->ctx = NULL;
	p->depth++;
	if (c->sidr)
		cm_sidr_abandon(c);
	else
		cm_conn_abandon(c);
	p->depth--;
	schedule_reap(c);
	cm_reap(p);
}

const char *cm_state_name(enum cm_state st)
{
	static const char *const names[CM_STATE_COUNT] = {
		"IDLE", "REQ_SENT", "MRA_REQ_RCVD", "REP_RCVD", "REQ_RCVD", "MRA_REQ_SENT",
		"REP_SENT", "MRA_REP_RCVD", "ESTABLISHED", "DREQ_SENT", "DREQ_RCVD",
		"TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD",
	};

	return (unsigned)st < CM_STATE_COUNT ? names[st] : "?";
}

const char *cm_event_name(enum cm_event_type type)
{
	static const char *const names[CM_EVENT_COUNT] = {
		"REQ_RECEIVED", "REP_RECEIVED", "ESTABLISHED", "REJ_RECEIVED", "MRA_RECEIVED",
		"REQ_ERROR", "REP_ERROR", "DREQ_RECEIVED", "DREP_RECEIVED", "TIMEWAIT_EXIT",
		"SIDR_REQ_RECEIVED", "SIDR_REP_RECEIVED",
	};

	return (unsigned)type < CM_EVENT_COUNT ? names[type] : "?";
}
