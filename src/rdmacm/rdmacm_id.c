// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdma_cm_id: addresses, listen, connect/accept/reject/disconnect, the QP
 * of an id (moved through INIT/RTR/RTS here, as librdmacm does with the
 * kernel's attributes), and the translation of CM events into rdma_cm
 * events.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "cm/cm_rdma_cm.h"
#include "rdmacm/rdmacm_priv.h"
#include "vrdma/virtio_net_roce_cm.h"

static struct rcm_id *rcm_ids;
static uint16_t rcm_next_port;

static struct rcm_id *rcm_id(struct rdma_cm_id *id)
{
	return (struct rcm_id *)id;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

static void sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* The IP address of a GID as a sockaddr (v4-mapped GIDs as AF_INET). */
static void gid_to_sa(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (cm_gid_is_ipv4(gid)) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, gid + 12, 4);
		s->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, gid, 16);
		s->sin6_port = htons(port);
	}
}

static void sa_gid(const struct sockaddr *sa, uint8_t gid[16])
{
	if (sa->sa_family == AF_INET)
		cm_gid_from_ipv4(gid, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	else
		memcpy(gid, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static enum cm_port_space rcm_ps(enum rdma_port_space ps)
{
	switch (ps) {
	case RDMA_PS_UDP: return CM_PS_UDP;
	case RDMA_PS_IPOIB: return CM_PS_IPOIB;
	case RDMA_PS_IB: return CM_PS_IB;
	default: return CM_PS_TCP;
	}
}

static bool port_in_use(enum rdma_port_space ps, uint16_t port, const struct rcm_id *self)
{
	for (struct rcm_id *i = rcm_ids; i; i = i->next)
		if (i != self && i->bound && i->id.ps == ps && i->sport == port && !i->passive)
			return true;
	return false;
}

/* Ports given to port 0 binds: Linux's default ephemeral range. */
#define RCM_PORT_FIRST 32768
#define RCM_PORT_END 61000 /* one past the last */

static uint16_t alloc_port(enum rdma_port_space ps)
{
	uint32_t r;

	if (!rcm_next_port) {
		if (getrandom(&r, sizeof(r), 0) < 0)
			r = (uint32_t)getpid();
		rcm_next_port = (uint16_t)(RCM_PORT_FIRST + r % (RCM_PORT_END - RCM_PORT_FIRST));
	}
	for (int n = 0; n < RCM_PORT_END - RCM_PORT_FIRST; n++) {
		uint16_t p = rcm_next_port++;

		if (rcm_next_port >= RCM_PORT_END)
			rcm_next_port = RCM_PORT_FIRST;
		if (!port_in_use(ps, p, NULL))
			return p;
	}
	return 0;
}

static struct rcm_id *id_new(struct rcm_channel *ch, void *context, enum rdma_port_space ps,
			     enum ibv_qp_type qp_type)
{
	struct rcm_id *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (!ch) {
		struct rdma_event_channel *c = rdma_create_event_channel();

		if (!c) {
			free(r);
			return NULL;
		}
		ch = (struct rcm_channel *)c;
		ch->private_ch = true;
		r->sync = true;
	}
	r->ch = ch;
	r->id.channel = &ch->ch;
	r->id.context = context;
	r->id.ps = ps;
	r->id.qp_type = qp_type;
	r->sidr = qp_type == IBV_QPT_UD;
	r->resp_res = 1;
	r->init_depth = 1;
	r->retry_count = 7;
	r->rnr_retry = 7;
	r->ack_timeout = 14;
	if (getrandom(&r->psn, sizeof(r->psn), 0) < 0)
		r->psn = (uint32_t)rand();
	r->psn &= 0xFFFFFF;
	pthread_mutex_lock(&rcm_lock);
	r->next = rcm_ids;
	rcm_ids = r;
	pthread_mutex_unlock(&rcm_lock);
	return r;
}

RCM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	struct rcm_id *r;

	if (!id)
		return fail(EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
		return fail(EINVAL);
	pthread_mutex_lock(&rcm_lock);
	if (rcm_devs_init()) {
		pthread_mutex_unlock(&rcm_lock);
		return -1;
	}
	pthread_mutex_unlock(&rcm_lock);
	r = id_new((struct rcm_channel *)channel, context, ps,
		   ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC);
	if (!r)
		return -1;
	*id = &r->id;
	return 0;
}

static void id_set_dev(struct rcm_id *r, struct rcm_dev *d)
{
	r->dev = d;
	r->id.verbs = d ? d->verbs : NULL;
	r->id.port_num = 1;
}

RCM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct rcm_id *r = rcm_id(id);
	struct rcm_dev *d;
	uint16_t port;
	bool any;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return fail(EAFNOSUPPORT);
	pthread_mutex_lock(&rcm_lock);
	d = rcm_dev_by_addr(addr, &any);
	if (!d) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EADDRNOTAVAIL);
	}
	port = sa_port(addr);
	if (!port)
		port = alloc_port(id->ps);
	else if (port_in_use(id->ps, port, r)) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EADDRINUSE);
	}
	memcpy(&id->route.addr.src_storage, addr, sa_len(addr));
	sa_set_port(&id->route.addr.src_addr, port);
	r->sport = port;
	r->bound = true;
	/* a wildcard bind picks no device yet (librdmacm leaves verbs NULL) */
	if (!any) {
		id_set_dev(r, d);
		sa_gid(addr, id->route.addr.addr.ibaddr.sgid.raw);
	}
	pthread_mutex_unlock(&rcm_lock);
	return 0;
}

RCM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct rcm_id *r = rcm_id(id);
	struct rcm_event *e;
	int fam;

	(void)timeout_ms;
	if (!dst_addr || (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6))
		return fail(EAFNOSUPPORT);
	fam = dst_addr->sa_family;
	if (src_addr && src_addr->sa_family && !r->bound && rdma_bind_addr(id, src_addr))
		return -1;
	pthread_mutex_lock(&rcm_lock);
	if (!r->dev) {
		/* the first device with a GID of the destination's family (for
		 * IPv6 a global one if any, else the link-local one) */
		struct rcm_dev *d = NULL;
		int gi = -1;

		for (int pass = 0; pass < 2 && !d; pass++)
			for (int i = 0; i < rcm_ndevs() && !d; i++) {
				struct rcm_dev *c = rcm_dev_get(i);

				for (int g = 0; g < c->ngid && !d; g++)
					if (!rcm_gid_unused(&c->gid[g]) &&
					    cm_gid_is_ipv4(c->gid[g].raw) == (fam == AF_INET) &&
					    (fam == AF_INET || pass || c->gid[g].raw[0] != 0xfe)) {
						d = c;
						gi = g;
					}
			}
		if (!d) {
			pthread_mutex_unlock(&rcm_lock);
			return fail(EADDRNOTAVAIL);
		}
		id_set_dev(r, d);
		if (!r->bound)
			r->sport = alloc_port(id->ps);
		gid_to_sa(d->gid[gi].raw, r->sport, &id->route.addr.src_storage);
		memcpy(id->route.addr.addr.ibaddr.sgid.raw, d->gid[gi].raw, 16);
		r->bound = true;
	}
	if (!r->bound) {
		r->sport = alloc_port(id->ps);
		r->bound = true;
		sa_set_port(&id->route.addr.src_addr, r->sport);
	}
	if (id->route.addr.src_addr.sa_family != fam) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EAFNOSUPPORT);
	}
	memcpy(&id->route.addr.dst_storage, dst_addr, sa_len(dst_addr));
	sa_gid(dst_addr, id->route.addr.addr.ibaddr.dgid.raw);
	id->route.addr.addr.ibaddr.pkey = 0xFFFF;
	e = rcm_event_new(r, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (e)
		rcm_event_post(r->ch, e);
	pthread_mutex_unlock(&rcm_lock);
	if (!e)
		return fail(ENOMEM);
	return r->sync ? rcm_sync_wait(r, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

/* The path record librdmacm reports for a RoCE route. */
static void fill_path(struct rcm_id *r)
{
	struct ibv_sa_path_rec *p = &r->path;

	memset(p, 0, sizeof(*p));
	memcpy(p->sgid.raw, r->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(p->dgid.raw, r->id.route.addr.addr.ibaddr.dgid.raw, 16);
	p->pkey = htons(0xFFFF);
	p->hop_limit = CM_RDMA_CM_HOP_LIMIT;
	p->traffic_class = r->tos;
	p->reversible = htonl(1);
	p->numb_path = 1;
	p->mtu_selector = 2;
	p->mtu = r->dev ? r->dev->active_mtu : IBV_MTU_1024;
	p->rate_selector = 2;
	p->packet_life_time_selector = 2;
	p->packet_life_time = CM_RDMA_CM_PACKET_LIFETIME;
	r->mtu = (uint8_t)p->mtu;
	r->id.route.path_rec = p;
	r->id.route.num_paths = 1;
}

RCM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct rcm_id *r = rcm_id(id);
	struct rcm_event *e;

	(void)timeout_ms;
	pthread_mutex_lock(&rcm_lock);
	if (!r->dev || !id->route.addr.dst_addr.sa_family) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EINVAL);
	}
	fill_path(r);
	e = rcm_event_new(r, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (e)
		rcm_event_post(r->ch, e);
	pthread_mutex_unlock(&rcm_lock);
	if (!e)
		return fail(ENOMEM);
	return r->sync ? rcm_sync_wait(r, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

RCM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct rcm_id *r = rcm_id(id);
	struct virtio_rdma_cmd_cm_listen c;
	struct virtio_rdma_ack_cm_listen a;
	int err = 0, n = 0;

	pthread_mutex_lock(&rcm_lock);
	if (!r->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		pthread_mutex_unlock(&rcm_lock);
		if (rdma_bind_addr(id, (struct sockaddr *)&any))
			return -1;
		pthread_mutex_lock(&rcm_lock);
	}
	memset(&c, 0, sizeof(c));
	c.service_id = htole64(cm_service_id(rcm_ps(id->ps), r->sport));
	c.backlog = htole32(backlog > 0 ? (uint32_t)backlog : 0);
	for (int i = 0; i < rcm_ndevs(); i++) {
		struct rcm_dev *d = rcm_dev_get(i);
		int ret;

		if ((r->dev && r->dev != d) || r->listen_on[i])
			continue;
		/* the device's CM: EADDRINUSE if any process of the device
		 * listens on this service */
		ret = rcm_cm_cmd(d, VIRTIO_NET_CTRL_ROCE_CM_LISTEN, &c, sizeof(c), &a, sizeof(a));
		if (!ret) {
			r->listen_on[i] = true;
			r->listen_id[i] = le32toh(a.listen_id);
			ret = rcm_dev_cm_start(d);
		}
		if (ret)
			err = -ret;
		else
			n++;
	}
	if (n)
		r->listening = true;
	pthread_mutex_unlock(&rcm_lock);
	return n ? 0 : fail(err ? err : ENODEV);
}

/* The INIT attributes of a QP of TYPE (also rdma_init_qp_attr's). */
static int init_attr(enum ibv_qp_type type, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	if (type == IBV_QPT_UD) {
		a->qkey = RCM_UDP_QKEY;
		return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	}
	/* What the kernel CM gives a connection with responder resources
	 * (librdmacm applies it before RTR): remote READ and atomics too. */
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

/* The RTR attributes from what the CM exchanged (also rdma_init_qp_attr's). */
static int rtr_attr(struct rcm_id *r, struct ibv_qp_attr *a)
{
	int gi;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = (enum ibv_mtu)(r->mtu ? r->mtu : IBV_MTU_1024);
	if (r->dev && a->path_mtu > r->dev->active_mtu)
		a->path_mtu = r->dev->active_mtu;
	a->dest_qp_num = r->remote_qpn;
	a->rq_psn = r->psn; /* Linux: the PSN a side announces is the one it receives */
	a->max_dest_rd_atomic = r->resp_res ? r->resp_res : 1;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	memcpy(a->ah_attr.grh.dgid.raw, r->id.route.addr.addr.ibaddr.dgid.raw, 16);
	gi = rcm_dev_gid_index(r->dev, r->id.route.addr.addr.ibaddr.sgid.raw);
	a->ah_attr.grh.sgid_index = gi < 0 ? 0 : (uint8_t)gi;
	a->ah_attr.grh.hop_limit = CM_RDMA_CM_HOP_LIMIT;
	a->ah_attr.grh.traffic_class = r->tos;
	a->ah_attr.port_num = 1;
	return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

/* The RTS attributes (also rdma_init_qp_attr's). */
static int rts_attr(struct rcm_id *r, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = r->remote_psn;
	a->timeout = r->ack_timeout;
	a->retry_cnt = r->retry_count > 7 ? 7 : r->retry_count;
	a->rnr_retry = r->rnr_retry > 7 ? 7 : r->rnr_retry;
	a->max_rd_atomic = r->init_depth ? r->init_depth : 1;
	return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

/* Moves the id's QP to RTR and RTS with what the CM exchanged. */
static int qp_rtr_rts(struct rcm_id *r)
{
	struct ibv_qp_attr a;
	struct ibv_qp *qp = r->id.qp;
	int mask;

	if (!qp)
		return 0;
	mask = rtr_attr(r, &a);
	if (ibv_modify_qp(qp, &a, mask))
		return -1;
	mask = rts_attr(r, &a);
	return ibv_modify_qp(qp, &a, mask);
}

static void qp_to_err(struct rcm_id *r)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (r->id.qp)
		ibv_modify_qp(r->id.qp, &a, IBV_QP_STATE);
}

static uint8_t clamp8(uint8_t v, uint8_t max)
{
	return v > max ? max : v;
}

/* The addressing part of CONNECT and SIDR_RESOLVE. */
static void cm_ip_of(struct rcm_id *r, struct virtio_rdma_cm_ip *w)
{
	struct rdma_addr *a = &r->id.route.addr;

	memset(w, 0, sizeof(*w));
	memcpy(w->dgid, a->addr.ibaddr.dgid.raw, 16);
	w->service_id = htole64(cm_service_id(rcm_ps(r->id.ps), sa_port(&a->dst_addr)));
	w->src_port = htole16(r->sport);
	if (a->src_addr.sa_family == AF_INET) {
		w->family = 4;
		memcpy(w->src_addr, &a->src_sin.sin_addr, 4);
		memcpy(w->dst_addr, &a->dst_sin.sin_addr, 4);
	} else {
		w->family = 6;
		memcpy(w->src_addr, &a->src_sin6.sin6_addr, 16);
		memcpy(w->dst_addr, &a->dst_sin6.sin6_addr, 16);
	}
}

RCM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct rcm_id *r = rcm_id(id);
	struct virtio_rdma_ack_cm_conn a;
	int ret;

	pthread_mutex_lock(&rcm_lock);
	if (!r->dev || !id->route.num_paths || r->has_conn) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EINVAL);
	}
	ret = rcm_dev_cm_start(r->dev);
	if (ret) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(-ret);
	}
	if (r->sidr) {
		struct virtio_rdma_cmd_cm_sidr_resolve c;

		memset(&c, 0, sizeof(c));
		cm_ip_of(r, &c.ip);
		if (conn_param && conn_param->private_data && conn_param->private_data_len) {
			c.private_data_len = clamp8(conn_param->private_data_len,
						    CM_RDMA_CM_SIDR_REQ_USER_PD_MAX);
			memcpy(c.private_data, conn_param->private_data, c.private_data_len);
		}
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_SIDR_RESOLVE, &c, sizeof(c), &a,
				 sizeof(a));
	} else {
		struct virtio_rdma_cmd_cm_connect c;

		memset(&c, 0, sizeof(c));
		cm_ip_of(r, &c.ip);
		c.qpn = htole32(id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0);
		c.starting_psn = htole32(r->psn);
		c.transport = id->qp_type == IBV_QPT_UC ? 1 : 0;
		c.path_mtu = r->mtu ? r->mtu : IBV_MTU_1024;
		c.traffic_class = r->tos;
		if (conn_param) {
			c.responder_resources = conn_param->responder_resources;
			c.initiator_depth = conn_param->initiator_depth;
			c.flow_control = conn_param->flow_control ? 1 : 0;
			c.retry_count = clamp8(conn_param->retry_count, 7);
			c.rnr_retry_count = clamp8(conn_param->rnr_retry_count, 7);
			c.srq = id->srq || conn_param->srq ? 1 : 0;
			if (conn_param->private_data && conn_param->private_data_len) {
				c.private_data_len = clamp8(conn_param->private_data_len,
							    CM_RDMA_CM_REQ_USER_PD_MAX);
				memcpy(c.private_data, conn_param->private_data,
				       c.private_data_len);
			}
		} else {
			c.retry_count = 7;
			c.rnr_retry_count = 7;
		}
		c.responder_resources = clamp8(c.responder_resources, 16);
		c.initiator_depth = clamp8(c.initiator_depth, 16);
		r->init_depth = c.initiator_depth;
		r->resp_res = c.responder_resources;
		r->retry_count = c.retry_count;
		r->rnr_retry = c.rnr_retry_count;
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a,
				 sizeof(a));
	}
	if (!ret) {
		r->has_conn = true;
		r->conn_id = le32toh(a.conn_id);
	}
	pthread_mutex_unlock(&rcm_lock);
	if (ret)
		return fail(-ret);
	return r->sync ? rcm_sync_wait(r, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

RCM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct rcm_id *r = rcm_id(id);
	int ret;

	if (!r->has_conn) {
		if (r->listening)
			return 0; /* librdmacm accepts on a listener for no one */
		return fail(EINVAL);
	}
	pthread_mutex_lock(&rcm_lock);
	if (r->sidr) {
		struct virtio_rdma_cmd_cm_sidr_accept c;

		memset(&c, 0, sizeof(c));
		c.conn_id = htole32(r->conn_id);
		c.status = CM_SIDR_SUCCESS;
		c.qpn = htole32(id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0);
		c.qkey = htole32(RCM_UDP_QKEY);
		if (conn_param && conn_param->private_data && conn_param->private_data_len) {
			c.private_data_len = clamp8(conn_param->private_data_len, 136);
			memcpy(c.private_data, conn_param->private_data, c.private_data_len);
		}
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_SIDR_ACCEPT, &c, sizeof(c),
				 NULL, 0);
		if (!ret)
			r->has_conn = false; /* the reply ends the request */
	} else {
		struct virtio_rdma_cmd_cm_accept c;

		if (conn_param) {
			r->init_depth = clamp8(conn_param->initiator_depth, r->init_depth);
			r->rnr_retry = clamp8(conn_param->rnr_retry_count, 7);
		}
		if (qp_rtr_rts(r)) {
			ret = -errno;
			goto out;
		}
		memset(&c, 0, sizeof(c));
		c.conn_id = htole32(r->conn_id);
		c.qpn = htole32(id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0);
		c.starting_psn = htole32(r->psn);
		c.responder_resources = r->resp_res;
		c.initiator_depth = r->init_depth;
		c.flow_control = conn_param && conn_param->flow_control ? 1 : 0;
		c.rnr_retry_count = r->rnr_retry;
		c.srq = id->srq || (conn_param && conn_param->srq) ? 1 : 0;
		if (conn_param && conn_param->private_data && conn_param->private_data_len) {
			c.private_data_len = clamp8(conn_param->private_data_len, 196);
			memcpy(c.private_data, conn_param->private_data, c.private_data_len);
		}
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_ACCEPT, &c, sizeof(c), NULL, 0);
	}
out:
	pthread_mutex_unlock(&rcm_lock);
	if (ret)
		return fail(-ret);
	return r->sync && !r->sidr ? rcm_sync_wait(r, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

RCM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	struct rcm_id *r = rcm_id(id);
	int ret;

	if (!r->has_conn)
		return fail(EINVAL);
	pthread_mutex_lock(&rcm_lock);
	if (r->sidr) {
		struct virtio_rdma_cmd_cm_sidr_accept c;

		memset(&c, 0, sizeof(c));
		c.conn_id = htole32(r->conn_id);
		c.status = CM_SIDR_REJECT;
		c.private_data_len = clamp8(private_data_len, 136);
		if (private_data)
			memcpy(c.private_data, private_data, c.private_data_len);
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_SIDR_ACCEPT, &c, sizeof(c),
				 NULL, 0);
		if (!ret)
			r->has_conn = false;
	} else {
		struct virtio_rdma_cmd_cm_reject c;

		memset(&c, 0, sizeof(c));
		c.conn_id = htole32(r->conn_id);
		c.reason = htole16(CM_REJ_CONSUMER_DEFINED);
		c.private_data_len = clamp8(private_data_len, 148);
		if (private_data)
			memcpy(c.private_data, private_data, c.private_data_len);
		ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_REJECT, &c, sizeof(c), NULL, 0);
	}
	pthread_mutex_unlock(&rcm_lock);
	return ret ? fail(-ret) : 0;
}

RCM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct rcm_id *r = rcm_id(id);
	struct virtio_rdma_cmd_cm_handle h;
	int ret;

	pthread_mutex_lock(&rcm_lock);
	qp_to_err(r);
	if (!r->has_conn) {
		pthread_mutex_unlock(&rcm_lock);
		return fail(EINVAL);
	}
	/* DREQ when established (also after a lost RTU), nothing when the
	 * disconnection is under way, EINVAL before establishment */
	memset(&h, 0, sizeof(h));
	h.id = htole32(r->conn_id);
	ret = rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT, &h, sizeof(h), NULL, 0);
	pthread_mutex_unlock(&rcm_lock);
	return ret ? fail(-ret) : 0;
}

/* Lets go of the id's CM state and unlinks it (locked). */
static void id_release(struct rcm_id *r)
{
	struct rcm_id **pp;

	if (r->has_conn) {
		/* the device's CM sends REJ, DREQ or DREP as the state needs */
		rcm_cm_release(r->dev, r->conn_id);
		r->has_conn = false;
	}
	for (int i = 0; i < RCM_MAX_DEVS; i++)
		if (r->listen_on[i]) {
			struct virtio_rdma_cmd_cm_handle h = { .id = htole32(r->listen_id[i]) };

			rcm_cm_cmd(rcm_dev_get(i), VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN, &h, sizeof(h),
				   NULL, 0);
			r->listen_on[i] = false;
		}
	for (struct rcm_id *i = rcm_ids; i; i = i->next)
		if (i->listen_parent == r)
			i->listen_parent = NULL;
	for (pp = &rcm_ids; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
}

RCM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rcm_id *r = rcm_id(id);

	if (!id)
		return fail(EINVAL);
	pthread_mutex_lock(&rcm_lock);
	/* requests not yet read from a listener's channel are rejected */
	for (;;) {
		struct rcm_event *e = r->ch->head;
		struct rcm_id *c;

		while (e && (e->ev.listen_id != id || e->ev.id == id))
			e = e->next;
		if (!e)
			break;
		c = rcm_id(e->ev.id);
		id_release(c);
		rcm_channel_drop_id(r->ch, c);
		if (c->ch->private_ch)
			rcm_channel_free(c->ch);
		free(c);
	}
	id_release(r);
	rcm_channel_drop_id(r->ch, r);
	pthread_mutex_unlock(&rcm_lock);
	if (id->event)
		rdma_ack_cm_event(id->event);
	/* as librdmacm: an event another thread still holds keeps the id */
	pthread_mutex_lock(&rcm_lock);
	while (r->events_out)
		pthread_cond_wait(&rcm_acked, &rcm_lock);
	pthread_mutex_unlock(&rcm_lock);
	if (r->ch->private_ch)
		rdma_destroy_event_channel(&r->ch->ch);
	free(r->qp_attr);
	free(r);
	return 0;
}

/* ---- the QP of an id ---- */

RCM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct rcm_id *r = rcm_id(id);
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	int mask;

	if (!id || !attr || !id->verbs)
		return fail(EINVAL);
	pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
	if (!pd) {
		pthread_mutex_lock(&rcm_lock);
		if (!r->dev->pd)
			r->dev->pd = ibv_alloc_pd(id->verbs);
		pd = r->dev->pd;
		pthread_mutex_unlock(&rcm_lock);
		if (!pd)
			return -1;
	}
	if (pd->context != id->verbs)
		return fail(EINVAL);
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = attr->qp_context;
	qa.send_cq = attr->send_cq;
	qa.recv_cq = attr->recv_cq;
	qa.srq = attr->srq ? attr->srq : id->srq;
	qa.cap = attr->cap;
	/* rdma_create_ep callers may leave it 0: the id's type then */
	qa.qp_type = attr->qp_type ? attr->qp_type : id->qp_type;
	qa.sq_sig_all = attr->sq_sig_all;
	if (!qa.send_cq || !qa.recv_cq) {
		/* librdmacm creates the CQs the user did not give */
		if (!qa.send_cq) {
			id->send_cq_channel = ibv_create_comp_channel(id->verbs);
			id->send_cq = ibv_create_cq(id->verbs, (int)(qa.cap.max_send_wr ? qa.cap.max_send_wr : 1),
						    id, id->send_cq_channel, 0);
			qa.send_cq = id->send_cq;
		}
		if (!qa.recv_cq) {
			id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
			id->recv_cq = ibv_create_cq(id->verbs, (int)(qa.cap.max_recv_wr ? qa.cap.max_recv_wr : 1),
						    id, id->recv_cq_channel, 0);
			qa.recv_cq = id->recv_cq;
		}
		if (!qa.send_cq || !qa.recv_cq)
			return -1;
	}
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		return -1;
	attr->cap = qa.cap;
	mask = init_attr(qa.qp_type, &a);
	if (ibv_modify_qp(qp, &a, mask))
		goto fail;
	if (qa.qp_type == IBV_QPT_UD) {
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			goto fail;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
			goto fail;
	}
	pthread_mutex_lock(&rcm_lock);
	id->qp = qp;
	id->pd = pd;
	pthread_mutex_unlock(&rcm_lock);
	return 0;
fail:
	ibv_destroy_qp(qp);
	return -1;
}

RCM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int ret;

	if (!qp_init_attr)
		return fail(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	ret = rdma_create_qp_ex(id, &ax);
	if (!ret)
		qp_init_attr->cap = ax.cap;
	return ret;
}

RCM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	if (!id)
		return;
	/* under the lock: rdma_get_cm_event in another thread may move it */
	pthread_mutex_lock(&rcm_lock);
	qp = id->qp;
	id->qp = NULL;
	if (qp)
		ibv_destroy_qp(qp);
	pthread_mutex_unlock(&rcm_lock);
	if (!qp)
		return;
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
	}
}

/* As librdmacm: the caller names the state it moves to in qp_attr->qp_state
 * and gets the attributes and mask for that transition. */
RCM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				 int *qp_attr_mask)
{
	struct rcm_id *r = rcm_id(id);
	enum ibv_qp_type type = id->qp_type;

	if (!qp_attr || !qp_attr_mask)
		return fail(EINVAL);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		*qp_attr_mask = init_attr(type, qp_attr);
		return 0;
	case IBV_QPS_RTR:
		if (type == IBV_QPT_UD) {
			memset(qp_attr, 0, sizeof(*qp_attr));
			qp_attr->qp_state = IBV_QPS_RTR;
			*qp_attr_mask = IBV_QP_STATE;
		} else {
			*qp_attr_mask = rtr_attr(r, qp_attr);
		}
		return 0;
	case IBV_QPS_RTS:
		if (type == IBV_QPT_UD) {
			memset(qp_attr, 0, sizeof(*qp_attr));
			qp_attr->qp_state = IBV_QPS_RTS;
			*qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		} else {
			*qp_attr_mask = rts_attr(r, qp_attr);
		}
		return 0;
	default:
		return fail(EINVAL);
	}
}

/* ---- CM events ---- */

static void copy_pd(struct rcm_event *e, const uint8_t *pd, size_t len)
{
	if (len > sizeof(e->pd))
		len = sizeof(e->pd);
	memcpy(e->pd, pd, len);
	e->ev.param.conn.private_data_len = (uint8_t)len;
}

/* A passive id for a REQ or SIDR_REQ on listener l. */
static struct rcm_id *child_new(struct rcm_id *l, struct rcm_dev *d, const struct cm_ip_info *ip,
				const uint8_t peer_gid[16], uint16_t port)
{
	struct rcm_id *c = calloc(1, sizeof(*c));
	uint8_t gid[16];

	if (!c)
		return NULL;
	if (l->sync) {
		struct rcm_channel *ch = calloc(1, sizeof(*ch));

		if (ch)
			ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
		if (!ch || ch->ch.fd < 0) {
			free(ch);
			free(c);
			return NULL;
		}
		ch->private_ch = true;
		c->ch = ch;
		c->sync = true;
	} else {
		c->ch = l->ch;
	}
	c->id.channel = &c->ch->ch;
	c->id.context = l->id.context;
	c->id.ps = l->id.ps;
	c->id.qp_type = l->id.qp_type;
	c->sidr = l->sidr;
	c->listen_parent = l;
	c->passive = true;
	id_set_dev(c, d);
	c->sport = port;
	c->bound = true;
	c->retry_count = 7;
	c->rnr_retry = 7;
	c->ack_timeout = 14;
	if (getrandom(&c->psn, sizeof(c->psn), 0) < 0)
		c->psn = (uint32_t)rand();
	c->psn &= 0xFFFFFF;
	if (ip && ip->family == AF_INET6) {
		memcpy(gid, ip->dst_addr, 16);
		gid_to_sa(gid, port, &c->id.route.addr.src_storage);
		memcpy(c->id.route.addr.addr.ibaddr.sgid.raw, gid, 16);
		memcpy(gid, ip->src_addr, 16);
		gid_to_sa(gid, ip->src_port, &c->id.route.addr.dst_storage);
	} else if (ip) {
		cm_gid_from_ipv4(gid, ip->dst_addr);
		gid_to_sa(gid, port, &c->id.route.addr.src_storage);
		memcpy(c->id.route.addr.addr.ibaddr.sgid.raw, gid, 16);
		cm_gid_from_ipv4(gid, ip->src_addr);
		gid_to_sa(gid, ip->src_port, &c->id.route.addr.dst_storage);
	} else {
		gid_to_sa(peer_gid, 0, &c->id.route.addr.dst_storage);
	}
	memcpy(c->id.route.addr.addr.ibaddr.dgid.raw, peer_gid, 16);
	c->id.route.addr.addr.ibaddr.pkey = 0xFFFF;
	if (rcm_dev_gid_index(d, c->id.route.addr.addr.ibaddr.sgid.raw) < 0) {
		/* the REQ's header named another address: ours of that family */
		for (int g = 0; g < d->ngid; g++)
			if (!rcm_gid_unused(&d->gid[g]) &&
			    cm_gid_is_ipv4(d->gid[g].raw) == cm_gid_is_ipv4(peer_gid)) {
				memcpy(c->id.route.addr.addr.ibaddr.sgid.raw, d->gid[g].raw, 16);
				break;
			}
	}
	fill_path(c);
	c->next = rcm_ids;
	rcm_ids = c;
	return c;
}

static struct rcm_id *find_conn(struct rcm_dev *d, uint32_t conn_id)
{
	for (struct rcm_id *i = rcm_ids; i; i = i->next)
		if (i->dev == d && i->has_conn && i->conn_id == conn_id)
			return i;
	return NULL;
}

static struct rcm_id *find_listener(struct rcm_dev *d, uint32_t listen_id)
{
	int di = (int)(d - rcm_dev_get(0));

	for (struct rcm_id *i = rcm_ids; i; i = i->next)
		if (i->listen_on[di] && i->listen_id[di] == listen_id)
			return i;
	return NULL;
}

static void on_req(struct rcm_dev *d, const struct virtio_rdma_cm_event *ev, bool sidr)
{
	struct rcm_id *l = find_listener(d, le32toh(ev->listen_id)), *c;
	uint32_t conn_id = le32toh(ev->conn_id);
	struct cm_ip_info ip;
	struct rcm_event *e;
	uint16_t port = cm_service_id_port(le64toh(ev->service_id));

	if (!l || cm_ip_hdr_parse(ev->private_data, ev->private_data_len, &ip))
		goto refuse;
	c = child_new(l, d, &ip, ev->peer_gid, port);
	e = c ? rcm_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e)
		goto refuse;
	c->has_conn = true;
	c->conn_id = conn_id;
	e->ev.listen_id = &l->id;
	copy_pd(e, ev->private_data + 36, ev->private_data_len - 36u);
	if (sidr) {
		e->ev.param.ud.qkey = RCM_UDP_QKEY;
	} else {
		c->remote_qpn = le32toh(ev->remote_qpn);
		c->remote_psn = le32toh(ev->starting_psn);
		c->mtu = ev->path_mtu < c->mtu ? ev->path_mtu : c->mtu;
		/* the peer's initiator depth is what we must answer to */
		c->resp_res = ev->initiator_depth;
		c->init_depth = ev->responder_resources;
		c->rnr_retry = ev->rnr_retry_count;
		c->retry_count = ev->retry_count;
		e->ev.param.conn.responder_resources = ev->initiator_depth;
		e->ev.param.conn.initiator_depth = ev->responder_resources;
		e->ev.param.conn.flow_control = ev->flow_control;
		e->ev.param.conn.retry_count = ev->retry_count;
		e->ev.param.conn.rnr_retry_count = ev->rnr_retry_count;
		e->ev.param.conn.srq = ev->srq;
		e->ev.param.conn.qp_num = le32toh(ev->remote_qpn);
	}
	/* on the listener's channel (rdma_get_request reads it there) */
	rcm_event_post(l->ch, e);
	return;
refuse:
	/* REJ (or SIDR_REP reject) from the device's CM */
	rcm_cm_release(d, conn_id);
}

static void post(struct rcm_id *r, enum rdma_cm_event_type type, int status,
		 const uint8_t *pd, size_t len)
{
	struct rcm_event *e = rcm_event_new(r, type, status);

	if (!e)
		return;
	if (pd && len)
		copy_pd(e, pd, len);
	rcm_event_post(r->ch, e);
}

void rcm_cm_event(struct rcm_dev *d, const struct virtio_rdma_cm_event *ev)
{
	uint32_t type = le32toh(ev->type);
	int status = (int)le32toh(ev->status);
	uint8_t pd_len = ev->private_data_len <= sizeof(ev->private_data) ?
			 ev->private_data_len : (uint8_t)sizeof(ev->private_data);
	struct rcm_id *r;

	switch (type) {
	case VIRTIO_IB_CM_REQ_RECEIVED:
		on_req(d, ev, false);
		return;
	case VIRTIO_IB_CM_SIDR_REQ_RECEIVED:
		on_req(d, ev, true);
		return;
	default:
		break;
	}
	r = find_conn(d, le32toh(ev->conn_id));
	if (!r)
		return;
	switch (type) {
	case VIRTIO_IB_CM_REP_RECEIVED: {
		struct rcm_event *e;

		r->remote_qpn = le32toh(ev->remote_qpn);
		r->remote_psn = le32toh(ev->starting_psn);
		if (ev->initiator_depth < r->resp_res)
			r->resp_res = ev->initiator_depth;
		if (ev->responder_resources < r->init_depth)
			r->init_depth = ev->responder_resources;
		/* the QP moves and the RTU goes in rdma_get_cm_event */
		e = rcm_event_new(r, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return;
		copy_pd(e, ev->private_data, pd_len);
		e->action = RCM_ACT_REP;
		r->rep_pending = true;
		rcm_event_post(r->ch, e);
		return;
	}
	case VIRTIO_IB_CM_ESTABLISHED:
		r->connected = true;
		post(r, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		return;
	case VIRTIO_IB_CM_REJ_RECEIVED:
		r->rep_pending = false;
		post(r, RDMA_CM_EVENT_REJECTED, status, ev->private_data, pd_len);
		return;
	case VIRTIO_IB_CM_REQ_ERROR:
	case VIRTIO_IB_CM_REP_ERROR:
		post(r, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		return;
	case VIRTIO_IB_CM_DREQ_RECEIVED: /* the device answered the DREP */
	case VIRTIO_IB_CM_DREP_RECEIVED:
		if (!r->disc_reported) {
			/* the QP is left alone (the user may have destroyed it
			 * already with ibv_destroy_qp); rdma_disconnect moves it */
			r->disc_reported = true;
			post(r, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		}
		return;
	case VIRTIO_IB_CM_TIMEWAIT_EXIT:
		post(r, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
		return;
	case VIRTIO_IB_CM_SIDR_REP_RECEIVED: {
		struct rcm_event *e;
		int gi;

		r->has_conn = false; /* the device's CM freed the request */
		if (status < 0) {
			post(r, RDMA_CM_EVENT_UNREACHABLE, status, NULL, 0);
			return;
		}
		if (status != CM_SIDR_SUCCESS) {
			post(r, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED, ev->private_data, pd_len);
			return;
		}
		e = rcm_event_new(r, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return;
		copy_pd(e, ev->private_data, pd_len);
		e->ev.param.ud.qp_num = le32toh(ev->remote_qpn);
		e->ev.param.ud.qkey = le32toh(ev->qkey);
		e->ev.param.ud.ah_attr.is_global = 1;
		memcpy(e->ev.param.ud.ah_attr.grh.dgid.raw, r->id.route.addr.addr.ibaddr.dgid.raw, 16);
		gi = rcm_dev_gid_index(r->dev, r->id.route.addr.addr.ibaddr.sgid.raw);
		e->ev.param.ud.ah_attr.grh.sgid_index = gi < 0 ? 0 : (uint8_t)gi;
		e->ev.param.ud.ah_attr.grh.hop_limit = CM_RDMA_CM_HOP_LIMIT;
		e->ev.param.ud.ah_attr.port_num = 1;
		rcm_event_post(r->ch, e);
		return;
	}
	default:
		return;
	}
}

static int conn_cmd(struct rcm_id *r, uint8_t cmd)
{
	struct virtio_rdma_cmd_cm_handle h;

	memset(&h, 0, sizeof(h));
	h.id = htole32(r->conn_id);
	return rcm_cm_cmd(r->dev, cmd, &h, sizeof(h), NULL, 0);
}

int rcm_id_establish(struct rcm_id *r)
{
	int rc;

	if (!r->has_conn)
		return 0;
	if (!r->rep_pending)
		return conn_cmd(r, VIRTIO_NET_CTRL_ROCE_CM_ESTABLISHED);
	/* the active side after CONNECT_RESPONSE */
	rc = conn_cmd(r, VIRTIO_NET_CTRL_ROCE_CM_RTU);
	if (!rc) {
		r->rep_pending = false;
		r->connected = true;
	}
	return rc;
}

/* Runs in rdma_get_cm_event (user thread, locked): the QP work of an event. */
void rcm_event_complete(struct rcm_event *e)
{
	struct rcm_id *r = rcm_id(e->ev.id);

	switch (e->action) {
	case RCM_ACT_REP:
		if (!r->has_conn || !r->rep_pending) {
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = -ECONNABORTED;
		} else if (!r->id.qp) {
			/* no QP: the user moves it and rdma_establish sends the
			 * RTU, as in librdmacm (rep_pending stays until then) */
			e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
			break;
		} else if (qp_rtr_rts(r)) {
			struct virtio_rdma_cmd_cm_reject c;

			memset(&c, 0, sizeof(c));
			c.conn_id = htole32(r->conn_id);
			c.reason = htole16(CM_REJ_CONSUMER_DEFINED);
			rcm_cm_cmd(r->dev, VIRTIO_NET_CTRL_ROCE_CM_REJECT, &c, sizeof(c), NULL, 0);
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = -EIO;
		} else {
			conn_cmd(r, VIRTIO_NET_CTRL_ROCE_CM_RTU);
			r->connected = true;
		}
		r->rep_pending = false;
		break;
	default:
		break;
	}
	e->action = RCM_ACT_NONE;
}
