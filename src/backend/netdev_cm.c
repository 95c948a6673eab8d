// SPDX-License-Identifier: BSD-3-Clause
/*
 * The connection manager of a device port: the port's cm_port, the handles
 * its contexts hold (listens, connections: each with its owning context),
 * the CM commands of a context and its queue of CM events. Why the CM lives
 * here and how a context uses it: docs/design.md "Connection manager";
 * layouts: docs/spec.md "Connection manager commands and events".
 */
#include "backend/netdev_cm.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cm/cm_rdma_cm.h"
#include "vrdma/virtio_net_roce_cm.h"

#define NCM_DEFAULT_LISTENS 256
#define NCM_DEFAULT_EVENTS  1024
#define NCM_DEFAULT_CONNS   4096
#define NCM_MAX_SLOTS       65535   /* handle = generation << 16 | slot */

struct ncm_listen {
	struct cm_listener *l;
	uint64_t owner;
	uint16_t gen;
	bool used;
};

struct ncm_conn {
	struct cm_conn *conn;
	uint64_t owner;
	uint32_t listen_id;
	uint16_t gen;
	bool used;
};

struct ncm_event {
	struct ncm_event *next;
	struct virtio_rdma_cm_event ev;
};

/* The CM event queue of one context (made on its first use). */
struct ncm_queue {
	struct ncm_queue *next;
	uint64_t ctx_id;
	struct ncm_event *head, *tail;
	uint32_t n;
};

struct netdev_cm {
	struct netdev_cm_config cfg;
	struct netdev_cm_ops ops;
	void *ctx;
	struct cm_port *port;
	struct ncm_listen *listens;
	struct ncm_conn *conns;
	uint32_t nlistens, nconns;      /* slots */
	struct ncm_queue *queues;
	struct netdev_cm_stats stats;
};

static uint32_t handle_of(uint32_t slot, uint16_t gen)
{
	return (uint32_t)gen << 16 | slot;
}

static uint16_t next_gen(uint16_t gen)
{
	return (uint16_t)(gen + 1) ? (uint16_t)(gen + 1) : 1;
}

/* ---- handles ---- */

/* A free handle for owner, within its share of the port's (a tenant
 * cannot take every handle of the device). */
static struct ncm_conn *conn_alloc(struct netdev_cm *cm, uint64_t owner)
{
	struct ncm_conn *c = NULL;
	uint32_t held = 0;

	for (uint32_t i = 0; i < cm->nconns; i++) {
		if (!cm->conns[i].used) {
			if (!c)
				c = &cm->conns[i];
		} else if (cm->conns[i].owner == owner) {
			held++;
		}
	}
	if (held >= cm->cfg.max_conns_per_ctx) {
		cm->stats.quota_refused++;
		return NULL;
	}
	if (c) {
		c->used = true;
		c->owner = owner;
		c->gen = next_gen(c->gen);
		c->conn = NULL;
		c->listen_id = 0;
		cm->stats.conns++;
	}
	return c;
}

static uint32_t conn_id(const struct netdev_cm *cm, const struct ncm_conn *c)
{
	return handle_of((uint32_t)(c - cm->conns), c->gen);
}

/* The slot stays reserved by its generation: a stale id never matches. */
static void conn_free(struct netdev_cm *cm, struct ncm_conn *c)
{
	c->used = false;
	c->conn = NULL;
	cm->stats.conns--;
}

static struct ncm_conn *conn_find(struct netdev_cm *cm, uint64_t owner, uint32_t id)
{
	uint32_t slot = id & 0xFFFF;
	struct ncm_conn *c;

	if (slot >= cm->nconns)
		return NULL;
	c = &cm->conns[slot];
	if (!c->used || c->gen != id >> 16 || c->owner != owner || !c->conn) {
		cm->stats.not_owner++;
		return NULL;
	}
	return c;
}

static struct ncm_listen *listen_find(struct netdev_cm *cm, uint64_t owner, uint32_t id)
{
	uint32_t slot = id & 0xFFFF;
	struct ncm_listen *l;

	if (slot >= cm->nlistens)
		return NULL;
	l = &cm->listens[slot];
	if (!l->used || l->gen != id >> 16 || l->owner != owner) {
		cm->stats.not_owner++;
		return NULL;
	}
	return l;
}

/* Lets go of a connection: the CM sends what its state needs. */
static void conn_release(struct netdev_cm *cm, struct ncm_conn *c)
{
	struct cm_conn *conn = c->conn;

	conn_free(cm, c);
	if (conn) {
		cm_conn_set_context(conn, NULL);
		cm_conn_destroy(conn);
	}
}

static void listen_release(struct netdev_cm *cm, struct ncm_listen *l)
{
	cm_listener_destroy(l->l);
	l->l = NULL;
	l->used = false;
	cm->stats.listens--;
}

/* ---- event queues ---- */

static struct ncm_queue *queue_get(struct netdev_cm *cm, uint64_t ctx_id, bool make)
{
	struct ncm_queue *q;

	for (q = cm->queues; q; q = q->next)
		if (q->ctx_id == ctx_id)
			return q;
	if (!make)
		return NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->ctx_id = ctx_id;
	q->next = cm->queues;
	cm->queues = q;
	return q;
}

static bool queue_room(struct netdev_cm *cm, uint64_t ctx_id)
{
	struct ncm_queue *q = queue_get(cm, ctx_id, true);

	return q && q->n < cm->cfg.max_events;
}

static bool queue_push(struct netdev_cm *cm, uint64_t ctx_id, const struct virtio_rdma_cm_event *ev)
{
	struct ncm_queue *q = queue_get(cm, ctx_id, true);
	struct ncm_event *e;

	if (!q || q->n >= cm->cfg.max_events || !(e = malloc(sizeof(*e)))) {
		cm->stats.events_dropped++;
		return false;
	}
	e->ev = *ev;
	e->next = NULL;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	cm->stats.events_queued++;
	if (q->n++ == 0 && cm->ops.notify)
		cm->ops.notify(cm->ctx, ctx_id);
	return true;
}

static void queue_drop(struct netdev_cm *cm, uint64_t ctx_id)
{
	struct ncm_queue **pp, *q;

	for (pp = &cm->queues; (q = *pp); pp = &q->next)
		if (q->ctx_id == ctx_id)
			break;
	if (!q)
		return;
	*pp = q->next;
	while (q->head) {
		struct ncm_event *e = q->head;

		q->head = e->next;
		free(e);
	}
	free(q);
}

/* ---- CM events to contexts ---- */

static void set_pd(struct virtio_rdma_cm_event *ev, const uint8_t *pd, size_t len)
{
	if (len > sizeof(ev->private_data))
		len = sizeof(ev->private_data);
	memcpy(ev->private_data, pd, len);
	ev->private_data_len = (uint8_t)len;
}

/* A REQ or SIDR_REQ for a listen: a new handle for the listen's owner, or
 * refused (REJ / SIDR_REP reject) when it has no room. */
static void on_request(struct netdev_cm *cm, const struct cm_event *cev,
		       struct virtio_rdma_cm_event *ev)
{
	struct ncm_listen *l = cev->listen_ctx;
	struct ncm_conn *c = NULL;
	bool sidr = cev->type == CM_EVENT_SIDR_REQ_RECEIVED;
	const struct cm_msg *m = cev->msg;

	if (l && l->used && m && queue_room(cm, l->owner))
		c = conn_alloc(cm, l->owner);
	if (!c) {
		cm->stats.reqs_refused++;
		if (sidr) {
			struct cm_sidr_rep_info rep = { .status = CM_SIDR_REJECT };

			cm_send_sidr_rep(cev->conn, &rep);
		} else {
			cm_send_rej(cev->conn, CM_REJ_NO_RESOURCES, NULL, 0, NULL, 0);
			cm_conn_destroy(cev->conn);
		}
		return;
	}
	c->conn = cev->conn;
	c->listen_id = handle_of((uint32_t)(l - cm->listens), l->gen);
	cm_conn_set_context(cev->conn, c);
	ev->conn_id = htole32(conn_id(cm, c));
	ev->listen_id = htole32(c->listen_id);
	if (sidr) {
		ev->service_id = htole64(m->sidr_req.service_id);
		set_pd(ev, m->sidr_req.private_data, m->sidr_req.private_data_len);
	} else {
		const struct cm_req_info *q = &m->req;

		ev->service_id = htole64(q->service_id);
		ev->remote_qpn = htole32(q->local_qpn);
		ev->starting_psn = htole32(q->starting_psn);
		ev->path_mtu = q->path_mtu;
		ev->responder_resources = q->responder_resources;
		ev->initiator_depth = q->initiator_depth;
		ev->flow_control = q->end_to_end_flow_control;
		ev->retry_count = q->retry_count;
		ev->rnr_retry_count = q->rnr_retry_count;
		ev->srq = q->srq;
		ev->transport = q->transport_service_type;
		set_pd(ev, q->private_data, q->private_data_len);
	}
	if (!queue_push(cm, l->owner, ev)) {
		cm->stats.reqs_refused++;
		conn_release(cm, c); /* REJ: the context never heard of it */
	}
}

static void ncm_event(void *ctx, const struct cm_event *cev)
{
	struct netdev_cm *cm = ctx;
	struct virtio_rdma_cm_event ev;
	const struct cm_msg *m = cev->msg;
	struct ncm_conn *c;
	uint64_t owner;

	memset(&ev, 0, sizeof(ev));
	ev.type = htole32((uint32_t)cev->type);
	ev.status = htole32((uint32_t)cev->status);
	if (cev->peer)
		memcpy(ev.peer_gid, cev->peer->gid, 16);
	if (cev->type == CM_EVENT_REQ_RECEIVED || cev->type == CM_EVENT_SIDR_REQ_RECEIVED) {
		on_request(cm, cev, &ev);
		return;
	}
	c = cev->conn_ctx;
	if (!c || !c->used)
		return;
	owner = c->owner;
	ev.conn_id = htole32(conn_id(cm, c));
	switch (cev->type) {
	case CM_EVENT_REP_RECEIVED:
		ev.remote_qpn = htole32(m->rep.local_qpn);
		ev.starting_psn = htole32(m->rep.starting_psn);
		ev.responder_resources = m->rep.responder_resources;
		ev.initiator_depth = m->rep.initiator_depth;
		ev.flow_control = m->rep.end_to_end_flow_control;
		ev.rnr_retry_count = m->rep.rnr_retry_count;
		ev.srq = m->rep.srq;
		set_pd(&ev, m->rep.private_data, m->rep.private_data_len);
		break;
	case CM_EVENT_REJ_RECEIVED:
		if (m) {
			ev.status = htole32(m->rej.reason);
			set_pd(&ev, m->rej.private_data, m->rej.private_data_len);
		}
		break;
	case CM_EVENT_DREQ_RECEIVED:
		/* answered at once, as the kernel's rdma_cm does */
		cm_send_drep(cev->conn, NULL, 0);
		break;
	case CM_EVENT_SIDR_REP_RECEIVED:
		/* the CM frees the request after this event */
		c->conn = NULL;
		conn_free(cm, c);
		if (m) {
			ev.status = htole32(m->sidr_rep.status);
			ev.service_id = htole64(m->sidr_rep.service_id);
			ev.remote_qpn = htole32(m->sidr_rep.qpn);
			ev.qkey = htole32(m->sidr_rep.qkey);
			set_pd(&ev, m->sidr_rep.private_data, m->sidr_rep.private_data_len);
		}
		break;
	default:
		break;
	}
	queue_push(cm, owner, &ev);
}

/* ---- commands ---- */

static void ip_params(const struct virtio_rdma_cm_ip *w, struct cm_ip_info *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->family = w->family == 6 ? AF_INET6 : AF_INET;
	ip->src_port = le16toh(w->src_port);
	memcpy(ip->src_addr, w->src_addr, w->family == 6 ? 16 : 4);
	memcpy(ip->dst_addr, w->dst_addr, w->family == 6 ? 16 : 4);
}

static int ip_check(const struct virtio_rdma_cm_ip *w)
{
	uint64_t sid = le64toh(w->service_id);

	if (w->family != 4 && w->family != 6)
		return -EINVAL;
	if (sid >> 32 || !cm_service_id_port_space(sid))
		return -EINVAL;
	return 0;
}

static void gsi_dst(struct cm_addr *dst, const uint8_t gid[16])
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->gid, gid, 16);
	dst->qpn = 1;
	dst->pkey = 0xFFFF;
}

static int cmd_listen(struct netdev_cm *cm, uint64_t ctx_id, const void *in, void *out,
		      size_t *out_len)
{
	struct virtio_rdma_cmd_cm_listen c;
	struct virtio_rdma_ack_cm_listen a;
	struct ncm_listen *l = NULL;
	uint32_t held = 0;
	int rc;


	memcpy(&c, in, sizeof(c));
	for (uint32_t i = 0; i < cm->nlistens; i++) {
		if (!cm->listens[i].used) {
			if (!l)
				l = &cm->listens[i];
		} else if (cm->listens[i].owner == ctx_id) {
			held++;
		}
	}
	if (held >= cm->cfg.max_listens_per_ctx) {
		cm->stats.quota_refused++;
		return -ENOBUFS;
	}
	if (!l)
		return -ENOBUFS;
	rc = cm_listen(cm->port, le64toh(c.service_id), le32toh(c.backlog), l, &l->l);
	if (rc) {
		if (rc == -EADDRINUSE)
			cm->stats.listens_in_use++;
		return rc;
	}
	l->used = true;
	l->owner = ctx_id;
	l->gen = next_gen(l->gen);
	cm->stats.listens++;
	memset(&a, 0, sizeof(a));
	a.listen_id = htole32(handle_of((uint32_t)(l - cm->listens), l->gen));
	memcpy(out, &a, sizeof(a));
	*out_len = sizeof(a);
	return 0;
}

static int cmd_connect(struct netdev_cm *cm, uint64_t ctx_id, const void *in, void *out,
		       size_t *out_len)
{
	struct virtio_rdma_cmd_cm_connect c;
	struct virtio_rdma_ack_cm_conn a;
	struct cm_rdma_cm_req_params p;
	struct cm_req_info req;
	struct cm_addr dst;
	struct ncm_conn *h;
	uint32_t qpn;
	int rc;

	memcpy(&c, in, sizeof(c));
	qpn = le32toh(c.qpn);
	if (ip_check(&c.ip) || c.transport > 1 || c.path_mtu < 1 || c.path_mtu > 5 ||
	    c.retry_count > 7 || c.rnr_retry_count > 7 || c.srq > 1 || c.flow_control > 1 ||
	    c.responder_resources > 16 || c.initiator_depth > 16 ||
	    c.private_data_len > sizeof(c.private_data) || qpn > 0xFFFFFF)
		return -EINVAL;
	if (!cm->ops.qp_owned || !cm->ops.qp_owned(cm->ctx, ctx_id, qpn)) {
		cm->stats.not_owner++;
		return -ENOENT;
	}
	memset(&p, 0, sizeof(p));
	p.ps = (enum cm_port_space)cm_service_id_port_space(le64toh(c.ip.service_id));
	ip_params(&c.ip, &p.ip);
	p.dst_port = cm_service_id_port(le64toh(c.ip.service_id));
	p.qpn = qpn;
	p.starting_psn = le32toh(c.starting_psn) & 0xFFFFFF;
	p.transport = c.transport ? CM_TRANSPORT_UC : CM_TRANSPORT_RC;
	p.path_mtu = c.path_mtu;
	p.tos = c.traffic_class;
	p.ca_ack_delay = 15;
	p.responder_resources = c.responder_resources;
	p.initiator_depth = c.initiator_depth;
	p.flow_control = c.flow_control;
	p.retry_count = c.retry_count;
	p.rnr_retry_count = c.rnr_retry_count;
	p.srq = c.srq;
	p.private_data = c.private_data;
	p.private_data_len = c.private_data_len;
	rc = cm_req_init_rdma_cm(&req, &p);
	if (rc)
		return rc;
	h = conn_alloc(cm, ctx_id);
	if (!h)
		return -ENOBUFS;
	gsi_dst(&dst, c.ip.dgid);
	rc = cm_connect(cm->port, &req, &dst, h, &h->conn);
	if (rc) {
		h->conn = NULL;
		conn_free(cm, h);
		return rc;
	}
	memset(&a, 0, sizeof(a));
	a.conn_id = htole32(conn_id(cm, h));
	a.local_comm_id = htole32(cm_conn_local_id(h->conn));
	memcpy(out, &a, sizeof(a));
	*out_len = sizeof(a);
	return 0;
}

static int cmd_sidr_resolve(struct netdev_cm *cm, uint64_t ctx_id, const void *in, void *out,
			    size_t *out_len)
{
	struct virtio_rdma_cmd_cm_sidr_resolve c;
	struct virtio_rdma_ack_cm_conn a;
	struct cm_sidr_req_info req;
	struct cm_ip_info ip;
	struct cm_ip_hdr hdr;
	struct cm_addr dst;
	struct ncm_conn *h;
	int rc;

	memcpy(&c, in, sizeof(c));
	if (ip_check(&c.ip) || c.private_data_len > sizeof(c.private_data))
		return -EINVAL;
	ip_params(&c.ip, &ip);
	memset(&req, 0, sizeof(req));
	if (cm_ip_hdr_build(&hdr, &ip))
		return -EINVAL;
	req.pkey = 0xFFFF;
	req.service_id = le64toh(c.ip.service_id);
	memcpy(req.private_data, &hdr, sizeof(hdr));
	memcpy(req.private_data + sizeof(hdr), c.private_data, c.private_data_len);
	req.private_data_len = (uint8_t)(sizeof(hdr) + c.private_data_len);
	h = conn_alloc(cm, ctx_id);
	if (!h)
		return -ENOBUFS;
	gsi_dst(&dst, c.ip.dgid);
	rc = cm_sidr_resolve(cm->port, &req, &dst, CM_RDMA_CM_RESPONSE_TIMEOUT - 2,
			     CM_RDMA_CM_MAX_CM_RETRIES, h, &h->conn);
	if (rc) {
		h->conn = NULL;
		conn_free(cm, h);
		return rc;
	}
	memset(&a, 0, sizeof(a));
	a.conn_id = htole32(conn_id(cm, h));
	a.local_comm_id = htole32(cm_conn_local_id(h->conn));
	memcpy(out, &a, sizeof(a));
	*out_len = sizeof(a);
	return 0;
}

static int cmd_accept(struct netdev_cm *cm, uint64_t ctx_id, const void *in)
{
	struct virtio_rdma_cmd_cm_accept c;
	struct cm_rep_info rep;
	struct ncm_conn *h;
	uint32_t qpn;

	memcpy(&c, in, sizeof(c));
	h = conn_find(cm, ctx_id, le32toh(c.conn_id));
	if (!h)
		return -ENOENT;
	qpn = le32toh(c.qpn);
	if (c.private_data_len > sizeof(c.private_data) || c.rnr_retry_count > 7 ||
	    c.srq > 1 || c.flow_control > 1 || qpn > 0xFFFFFF)
		return -EINVAL;
	if (!cm->ops.qp_owned || !cm->ops.qp_owned(cm->ctx, ctx_id, qpn)) {
		cm->stats.not_owner++;
		return -ENOENT;
	}
	memset(&rep, 0, sizeof(rep));
	rep.local_qpn = qpn;
	rep.starting_psn = le32toh(c.starting_psn) & 0xFFFFFF;
	rep.responder_resources = c.responder_resources;
	rep.initiator_depth = c.initiator_depth;
	rep.target_ack_delay = CM_RDMA_CM_TARGET_ACK_DELAY;
	rep.end_to_end_flow_control = c.flow_control;
	rep.rnr_retry_count = c.rnr_retry_count;
	rep.srq = c.srq;
	rep.private_data_len = c.private_data_len;
	memcpy(rep.private_data, c.private_data, c.private_data_len);
	return cm_send_rep(h->conn, &rep);
}

static int cmd_sidr_accept(struct netdev_cm *cm, uint64_t ctx_id, const void *in)
{
	struct virtio_rdma_cmd_cm_sidr_accept c;
	struct cm_sidr_rep_info rep;
	struct ncm_conn *h;
	uint32_t qpn;
	int rc;

	memcpy(&c, in, sizeof(c));
	h = conn_find(cm, ctx_id, le32toh(c.conn_id));
	if (!h)
		return -ENOENT;
	qpn = le32toh(c.qpn);
	if (c.private_data_len > sizeof(c.private_data) || c.status > CM_SIDR_UNSUPPORTED_VERSION)
		return -EINVAL;
	if (c.status == CM_SIDR_SUCCESS &&
	    (!cm->ops.qp_owned || !cm->ops.qp_owned(cm->ctx, ctx_id, qpn))) {
		cm->stats.not_owner++;
		return -ENOENT;
	}
	memset(&rep, 0, sizeof(rep));
	rep.status = c.status;
	rep.qpn = c.status == CM_SIDR_SUCCESS ? qpn : 0;
	rep.qkey = le32toh(c.qkey);
	rep.private_data_len = c.private_data_len;
	memcpy(rep.private_data, c.private_data, c.private_data_len);
	rc = cm_send_sidr_rep(h->conn, &rep);
	if (!rc) {
		h->conn = NULL; /* the reply ends the request */
		conn_free(cm, h);
	}
	return rc;
}

static int cmd_reject(struct netdev_cm *cm, uint64_t ctx_id, const void *in)
{
	struct virtio_rdma_cmd_cm_reject c;
	struct ncm_conn *h;

	memcpy(&c, in, sizeof(c));
	h = conn_find(cm, ctx_id, le32toh(c.conn_id));
	if (!h)
		return -ENOENT;
	if (c.private_data_len > sizeof(c.private_data) || !le16toh(c.reason))
		return -EINVAL;
	return cm_send_rej(h->conn, le16toh(c.reason), NULL, 0, c.private_data,
			   c.private_data_len);
}

static int cmd_disconnect(struct cm_conn *conn)
{
	switch (cm_conn_state(conn)) {
	case CM_ESTABLISHED:
		return cm_send_dreq(conn, NULL, 0);
	case CM_DREQ_RCVD:
		return cm_send_drep(conn, NULL, 0);
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		/* RTU lost: the connection is up as far as the peer knows */
		cm_notify_established(conn);
		return cm_send_dreq(conn, NULL, 0);
	case CM_DREQ_SENT:
	case CM_TIMEWAIT:
		return 0;
	default:
		return -EINVAL;
	}
}

static int cmd_handle(struct netdev_cm *cm, uint64_t ctx_id, uint8_t cmd, const void *in)
{
	struct virtio_rdma_cmd_cm_handle c;
	struct ncm_listen *l;
	struct ncm_conn *h;
	uint32_t id;

	memcpy(&c, in, sizeof(c));
	id = le32toh(c.id);
	if (cmd == VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN) {
		l = listen_find(cm, ctx_id, id);
		if (!l)
			return -ENOENT;
		listen_release(cm, l);
		return 0;
	}
	h = conn_find(cm, ctx_id, id);
	if (!h)
		return -ENOENT;
	switch (cmd) {
	case VIRTIO_NET_CTRL_ROCE_CM_RTU:
		return cm_send_rtu(h->conn, NULL, 0);
	case VIRTIO_NET_CTRL_ROCE_CM_ESTABLISHED:
		return cm_notify_established(h->conn);
	case VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT:
		return cmd_disconnect(h->conn);
	default: /* RELEASE */
		conn_release(cm, h);
		return 0;
	}
}

int netdev_cm_comm_est(struct netdev_cm *cm, uint64_t ctx_id, uint32_t qpn)
{
	for (uint32_t i = 0; i < cm->nconns; i++) {
		struct ncm_conn *h = &cm->conns[i];
		enum cm_state st;

		if (!h->used || !h->conn || h->owner != ctx_id ||
		    cm_conn_local_qpn(h->conn) != qpn)
			continue;
		st = cm_conn_state(h->conn);
		if (st != CM_REP_SENT && st != CM_MRA_REP_RCVD)
			continue;
		cm->stats.comm_est++;
		return cm_notify_established(h->conn);
	}
	return -ENOENT;
}

static int cmd_get_event(struct netdev_cm *cm, uint64_t ctx_id, void *out, size_t *out_len)
{
	struct ncm_queue *q = queue_get(cm, ctx_id, false);
	struct ncm_event *e;

	if (!q || !q->head)
		return -EAGAIN;
	e = q->head;
	q->head = e->next;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	memcpy(out, &e->ev, sizeof(e->ev));
	*out_len = sizeof(e->ev);
	free(e);
	cm->stats.events_read++;
	return 0;
}

/* Command data sizes, ack sizes (exact, as every command of the device). */
static const struct {
	uint16_t in, out;
} ncm_sizes[VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS] = {
	[0] = { sizeof(struct virtio_rdma_cmd_cm_listen), sizeof(struct virtio_rdma_ack_cm_listen) },
	[1] = { sizeof(struct virtio_rdma_cmd_cm_handle), 0 },
	[2] = { sizeof(struct virtio_rdma_cmd_cm_connect), sizeof(struct virtio_rdma_ack_cm_conn) },
	[3] = { sizeof(struct virtio_rdma_cmd_cm_accept), 0 },
	[4] = { sizeof(struct virtio_rdma_cmd_cm_reject), 0 },
	[5] = { sizeof(struct virtio_rdma_cmd_cm_handle), 0 },
	[6] = { sizeof(struct virtio_rdma_cmd_cm_handle), 0 },
	[7] = { sizeof(struct virtio_rdma_cmd_cm_handle), 0 },
	[8] = { sizeof(struct virtio_rdma_cmd_cm_handle), 0 },
	[9] = { sizeof(struct virtio_rdma_cmd_cm_sidr_resolve), sizeof(struct virtio_rdma_ack_cm_conn) },
	[10] = { sizeof(struct virtio_rdma_cmd_cm_sidr_accept), 0 },
	[11] = { 0, sizeof(struct virtio_rdma_cm_event) },
};

int netdev_cm_cmd(struct netdev_cm *cm, uint64_t ctx_id, uint8_t cmd, const void *in,
		  size_t in_len, void *out, size_t out_cap, size_t *out_len)
{
	unsigned i = (unsigned)cmd - VIRTIO_NET_CTRL_ROCE_CM_FIRST;
	int rc;

	*out_len = 0;
	if (cmd < VIRTIO_NET_CTRL_ROCE_CM_FIRST || i >= VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS)
		return -EOPNOTSUPP;
	cm->stats.cmds[i]++;
	if (in_len != ncm_sizes[i].in || out_cap < ncm_sizes[i].out || (in_len && !in)) {
		cm->stats.bad_length++;
		cm->stats.cmd_errors[i]++;
		return -EINVAL;
	}
	switch (cmd) {
	case VIRTIO_NET_CTRL_ROCE_CM_LISTEN:
		rc = cmd_listen(cm, ctx_id, in, out, out_len);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_CONNECT:
		rc = cmd_connect(cm, ctx_id, in, out, out_len);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_ACCEPT:
		rc = cmd_accept(cm, ctx_id, in);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_REJECT:
		rc = cmd_reject(cm, ctx_id, in);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_SIDR_RESOLVE:
		rc = cmd_sidr_resolve(cm, ctx_id, in, out, out_len);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_SIDR_ACCEPT:
		rc = cmd_sidr_accept(cm, ctx_id, in);
		break;
	case VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT:
		rc = cmd_get_event(cm, ctx_id, out, out_len);
		break;
	default:
		rc = cmd_handle(cm, ctx_id, cmd, in);
		break;
	}
	if (rc) {
		cm->stats.cmd_errors[i]++;
		*out_len = 0;
	}
	return rc;
}

uint32_t netdev_cm_events(const struct netdev_cm *cm, uint64_t ctx_id)
{
	for (const struct ncm_queue *q = cm->queues; q; q = q->next)
		if (q->ctx_id == ctx_id)
			return q->n;
	return 0;
}

void netdev_cm_ctx_gone(struct netdev_cm *cm, uint64_t ctx_id)
{
	bool any = false;

	/* events first: nothing is queued for the context while it goes */
	queue_drop(cm, ctx_id);
	for (uint32_t i = 0; i < cm->nconns; i++) {
		struct ncm_conn *c = &cm->conns[i];

		if (c->used && c->owner == ctx_id) {
			conn_release(cm, c);
			cm->stats.ctx_gone_conns++;
			any = true;
		}
	}
	for (uint32_t i = 0; i < cm->nlistens; i++) {
		struct ncm_listen *l = &cm->listens[i];

		if (l->used && l->owner == ctx_id) {
			listen_release(cm, l);
			cm->stats.ctx_gone_listens++;
			any = true;
		}
	}
	if (any)
		cm->stats.ctx_gone++;
}

/* ---- the port ---- */

static uint64_t ncm_now(void *ctx)
{
	struct netdev_cm *cm = ctx;

	return cm->ops.now_us(cm->ctx);
}

static int ncm_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct netdev_cm *cm = ctx;

	return cm->ops.send(cm->ctx, mad, dst);
}

struct netdev_cm *netdev_cm_new(const struct netdev_cm_config *cfg, const struct netdev_cm_ops *ops,
				void *ctx)
{
	static const struct cm_port_ops port_ops = { ncm_now, ncm_send, ncm_event };
	struct netdev_cm *cm;

	if (!cfg || !ops || !ops->now_us || !ops->send) {
		errno = EINVAL;
		return NULL;
	}
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	cm->cfg = *cfg;
	if (!cm->cfg.port.max_conns)
		cm->cfg.port.max_conns = NCM_DEFAULT_CONNS;
	if (!cm->cfg.max_listens)
		cm->cfg.max_listens = NCM_DEFAULT_LISTENS;
	if (!cm->cfg.max_events)
		cm->cfg.max_events = NCM_DEFAULT_EVENTS;
	if (!cm->cfg.max_conns_per_ctx)
		cm->cfg.max_conns_per_ctx = cm->cfg.port.max_conns / 4 ? cm->cfg.port.max_conns / 4 : 1;
	if (!cm->cfg.max_listens_per_ctx)
		cm->cfg.max_listens_per_ctx = cm->cfg.max_listens / 4 ? cm->cfg.max_listens / 4 : 1;
	if (cm->cfg.port.max_conns > NCM_MAX_SLOTS || cm->cfg.max_listens > NCM_MAX_SLOTS) {
		free(cm);
		errno = EINVAL;
		return NULL;
	}
	cm->ops = *ops;
	cm->ctx = ctx;
	cm->nconns = cm->cfg.port.max_conns;
	cm->nlistens = cm->cfg.max_listens;
	cm->conns = calloc(cm->nconns, sizeof(*cm->conns));
	cm->listens = calloc(cm->nlistens, sizeof(*cm->listens));
	cm->port = cm_port_create(&cm->cfg.port, &port_ops, cm);
	if (!cm->conns || !cm->listens || !cm->port) {
		netdev_cm_free(cm);
		return NULL;
	}
	return cm;
}

void netdev_cm_free(struct netdev_cm *cm)
{
	if (!cm)
		return;
	if (cm->port)
		cm_port_destroy(cm->port);
	while (cm->queues)
		queue_drop(cm, cm->queues->ctx_id);
	free(cm->conns);
	free(cm->listens);
	free(cm);
}

int netdev_cm_recv(struct netdev_cm *cm, const void *mad, size_t len, const struct cm_addr *src)
{
	return cm_port_recv(cm->port, mad, len, src);
}

void netdev_cm_tick(struct netdev_cm *cm)
{
	cm_port_tick(cm->port);
}

uint64_t netdev_cm_next_timeout(const struct netdev_cm *cm)
{
	return cm_port_next_timeout(cm->port);
}

const struct netdev_cm_stats *netdev_cm_stats(const struct netdev_cm *cm)
{
	return &cm->stats;
}

const struct cm_port_stats *netdev_cm_port_stats(const struct netdev_cm *cm)
{
	return cm_port_stats(cm->port);
}
