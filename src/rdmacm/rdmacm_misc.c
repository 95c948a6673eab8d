// SPDX-License-Identifier: BSD-3-Clause
/*
 * The rest of librdmacm's API: endpoints and rdma_getaddrinfo, synchronous
 * requests, options, devices, event names; multicast and ECE are refused
 * with ENOSYS/EOPNOTSUPP (docs/spec.md, "rdma_cm over the device's connection
 * manager").
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rdmacm_priv.h"

static int fail(int err)
{
	errno = err;
	return -1;
}

RCM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rcm_id *l = (struct rcm_id *)listen;
	struct rdma_cm_event *ev;
	struct rcm_id *c;

	if (!l || !id || !l->sync)
		return fail(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev);
	}
	c = (struct rcm_id *)ev->id;
	if (l->qp_attr) {
		struct ibv_qp_init_attr a = *l->qp_attr;

		if (rdma_create_qp(&c->id, l->ep_pd, &a)) {
			int err = errno;

			rdma_reject(&c->id, NULL, 0);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(&c->id);
			return fail(err);
		}
	}
	c->id.event = ev;
	*id = &c->id;
	return 0;
}

RCM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			      struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct rcm_id *r;

	if (!id || !res)
		return fail(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	r = (struct rcm_id *)cm;
	if (res->ai_qp_type)
		cm->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	r->sidr = cm->qp_type == IBV_QPT_UD;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			r->qp_attr = malloc(sizeof(*qp_init_attr));
			if (!r->qp_attr)
				goto fail;
			*r->qp_attr = *qp_init_attr;
			r->ep_pd = pd;
		}
		*id = cm;
		return 0;
	}
	if (rdma_resolve_addr(cm, res->ai_src_len ? res->ai_src_addr : NULL, res->ai_dst_addr,
			      2000) ||
	    rdma_resolve_route(cm, 2000))
		goto fail;
	if (qp_init_attr && rdma_create_qp(cm, pd, qp_init_attr))
		goto fail;
	*id = cm;
	return 0;
fail:
	{
		int err = errno;

		rdma_destroy_id(cm);
		errno = err;
	}
	return -1;
}

RCM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void *dup_addr(const struct sockaddr *sa, socklen_t len)
{
	void *p = len ? malloc(len) : NULL;

	if (p)
		memcpy(p, sa, len);
	return p;
}

/* No node nor service: the hints' own addresses (as librdmacm does; libfabric
 * resolves a peer's address this way). */
static int addrinfo_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;

	if (!hints || (!(hints->ai_src_addr && hints->ai_src_len) &&
		       !(hints->ai_dst_addr && hints->ai_dst_len)))
		return fail(EINVAL);
	r = calloc(1, sizeof(*r));
	if (!r)
		return fail(ENOMEM);
	r->ai_flags = hints->ai_flags;
	r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints->ai_port_space ? hints->ai_port_space :
			   r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (hints->ai_src_addr && hints->ai_src_len) {
		r->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len);
		r->ai_src_len = hints->ai_src_len;
		r->ai_family = hints->ai_src_addr->sa_family;
	}
	if (hints->ai_dst_addr && hints->ai_dst_len) {
		r->ai_dst_addr = dup_addr(hints->ai_dst_addr, hints->ai_dst_len);
		r->ai_dst_len = hints->ai_dst_len;
		r->ai_family = hints->ai_dst_addr->sa_family;
	}
	if ((r->ai_src_len && !r->ai_src_addr) || (r->ai_dst_len && !r->ai_dst_addr)) {
		rdma_freeaddrinfo(r);
		return fail(ENOMEM);
	}
	*res = r;
	return 0;
}

RCM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo ah, *ai;
	struct rdma_addrinfo *r;
	int ret;

	if (!res)
		return fail(EINVAL);
	if (!node && !service)
		return addrinfo_from_hints(hints, res);
	memset(&ah, 0, sizeof(ah));
	if (hints) {
		ah.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ah.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ah.ai_flags |= AI_NUMERICHOST;
	}
	if (ah.ai_family != AF_INET && ah.ai_family != AF_INET6)
		ah.ai_family = AF_UNSPEC;
	ah.ai_socktype = SOCK_STREAM;
	ret = getaddrinfo(node, service, &ah, &ai);
	if (ret) {
		errno = ret == EAI_SYSTEM ? errno : ENOENT;
		return ret;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return fail(ENOMEM);
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space :
			   r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_addr = malloc(ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
		if (r->ai_src_addr)
			memcpy(r->ai_src_addr, ai->ai_addr, ai->ai_addrlen);
	} else {
		r->ai_dst_addr = malloc(ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		if (r->ai_dst_addr)
			memcpy(r->ai_dst_addr, ai->ai_addr, ai->ai_addrlen);
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = malloc(hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
			if (r->ai_src_addr)
				memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
		}
	}
	freeaddrinfo(ai);
	if (!r->ai_src_addr && !r->ai_dst_addr) {
		free(r);
		return fail(ENOMEM);
	}
	*res = r;
	return 0;
}

RCM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

RCM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rcm_id *r = (struct rcm_id *)id;
	struct rcm_channel *old;

	if (!id)
		return fail(EINVAL);
	pthread_mutex_lock(&rcm_lock);
	old = r->ch;
	rcm_channel_drop_id(old, r);
	if (channel) {
		r->ch = (struct rcm_channel *)channel;
		r->sync = false;
	}
	id->channel = &r->ch->ch;
	pthread_mutex_unlock(&rcm_lock);
	if (channel && old->private_ch)
		rdma_destroy_event_channel(&old->ch);
	return channel ? 0 : fail(ENOSYS);
}

RCM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			       size_t optlen)
{
	struct rcm_id *r = (struct rcm_id *)id;

	if (!id || !optval)
		return fail(EINVAL);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == sizeof(uint8_t)) {
		r->tos = *(uint8_t *)optval;
		r->tos_set = true;
		return 0;
	}
	if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_REUSEADDR ||
					optname == RDMA_OPTION_ID_AFONLY))
		return 0;
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
	    optlen == sizeof(uint8_t)) {
		r->ack_timeout = *(uint8_t *)optval;
		return 0;
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return 0;
	return fail(ENOSYS);
}

RCM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
	       ((const struct sockaddr_in *)sa)->sin_port;
}

RCM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port :
	       ((const struct sockaddr_in *)sa)->sin_port;
}

RCM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **v;
	int n;

	pthread_mutex_lock(&rcm_lock);
	if (rcm_devs_init()) {
		pthread_mutex_unlock(&rcm_lock);
		return NULL;
	}
	n = rcm_ndevs();
	v = calloc((size_t)n + 1, sizeof(*v));
	for (int i = 0; v && i < n; i++)
		v[i] = rcm_dev_get(i)->verbs;
	pthread_mutex_unlock(&rcm_lock);
	if (v && num_devices)
		*num_devices = n;
	return v;
}

RCM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

RCM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

/* The QP saw traffic before the RTU: the connection is established. */
RCM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct rcm_id *r = (struct rcm_id *)id;
	int ret = 0;

	if (!id)
		return fail(EINVAL);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	pthread_mutex_lock(&rcm_lock);
	ret = rcm_id_establish(r);
	pthread_mutex_unlock(&rcm_lock);
	return ret ? fail(-ret) : 0;
}

RCM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	return rdma_notify(id, IBV_EVENT_COMM_EST);
}

RCM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_pd *pd;

	if (!id || !attr || !id->verbs)
		return fail(EINVAL);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : id->pd;
	if (!pd) {
		id->pd = ibv_alloc_pd(id->verbs);
		pd = id->pd;
		if (!pd)
			return -1;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	id->srq = ibv_create_srq(pd, &a);
	if (!id->srq)
		return -1;
	attr->attr = a.attr;
	return 0;
}

RCM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!attr)
		return fail(EINVAL);
	memset(&ax, 0, sizeof(ax));
	ax.srq_context = attr->srq_context;
	ax.attr = attr->attr;
	ax.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0;
	ax.pd = pd;
	ret = rdma_create_srq_ex(id, &ax);
	if (!ret)
		attr->attr = ax.attr;
	return ret;
}

RCM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id && id->srq) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
	}
}

/* Multicast needs a multicast group manager (no SA on RoCE: IGMP/MLD
 * through the netdev); not provided. */
RCM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id; (void)addr; (void)context;
	return fail(ENOSYS);
}

RCM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc,
				      void *context)
{
	(void)id; (void)mc; (void)context;
	return fail(ENOSYS);
}

RCM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id; (void)addr;
	return fail(EADDRNOTAVAIL);
}

RCM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	if (ece)
		memset(ece, 0, sizeof(*ece));
	return 0;
}

RCM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	return fail(EOPNOTSUPP);
}

RCM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
