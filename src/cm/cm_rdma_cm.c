/* SPDX-License-Identifier: BSD-3-Clause */
/* REQ contents of Linux's rdma_cm over RoCE v2 (see cm_rdma_cm.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "cm/cm_rdma_cm.h"

int cm_gid_from_ip(uint8_t gid[16], int family, const uint8_t *addr)
{
	if (family == AF_INET)
		cm_gid_from_ipv4(gid, addr);
	else if (family == AF_INET6)
		memcpy(gid, addr, 16);
	else
		return -EAFNOSUPPORT;
	return 0;
}

int cm_req_init_rdma_cm(struct cm_req_info *req, const struct cm_rdma_cm_req_params *p)
{
	struct cm_path_info *path = &req->primary;
	uint8_t hop_limit = p->hop_limit ? p->hop_limit : CM_RDMA_CM_HOP_LIMIT;
	int rc;

	memset(req, 0, sizeof(*req));
	if (p->private_data_len > CM_RDMA_CM_REQ_USER_PD_MAX ||
	    (p->transport != CM_TRANSPORT_RC && p->transport != CM_TRANSPORT_UC))
		return -EINVAL;
	rc = cm_ip_hdr_build((struct cm_ip_hdr *)req->private_data, &p->ip);
	if (rc < 0)
		return rc;
	if (cm_gid_from_ip(path->local_gid, p->ip.family, p->ip.src_addr) < 0 ||
	    cm_gid_from_ip(path->remote_gid, p->ip.family, p->ip.dst_addr) < 0)
		return -EAFNOSUPPORT;
	memcpy(req->private_data + sizeof(struct cm_ip_hdr), p->private_data,
	       p->private_data_len);
	req->private_data_len = (uint8_t)(sizeof(struct cm_ip_hdr) + p->private_data_len);

	req->service_id = cm_service_id(p->ps, p->dst_port);
	req->local_qpn = p->qpn;
	req->starting_psn = p->starting_psn & 0xFFFFFF;
	req->transport_service_type = (uint8_t)p->transport;
	req->responder_resources = p->responder_resources;
	req->initiator_depth = p->initiator_depth;
	req->end_to_end_flow_control = p->flow_control;
	req->retry_count = p->retry_count;
	req->rnr_retry_count = p->rnr_retry_count;
	req->srq = p->srq;
	req->remote_cm_response_timeout = CM_RDMA_CM_RESPONSE_TIMEOUT;
	req->local_cm_response_timeout = CM_RDMA_CM_RESPONSE_TIMEOUT;
	req->max_cm_retries = CM_RDMA_CM_MAX_CM_RETRIES;
	req->pkey = 0xFFFF;
	req->path_mtu = p->path_mtu;

	/* Routed path (hop limit > 1): permissive LIDs, not subnet-local. */
	path->local_lid = hop_limit > 1 ? 0xFFFF : 0;
	path->remote_lid = hop_limit > 1 ? 0xFFFF : 0;
	path->subnet_local = hop_limit <= 1;
	path->hop_limit = hop_limit;
	path->traffic_class = p->tos;
	path->sl = 0; /* no VLAN priority mapping on a plain netdev */
	path->packet_rate = p->packet_rate;
	/* RoCE v2 flow label: a hash of the ports (IPv6 flowinfo aside). */
	path->flow_label = ((uint32_t)p->ip.src_port * 31 + p->dst_port) & 0xFFFFF;
	path->local_ack_timeout = cm_ack_timeout(p->ca_ack_delay, CM_RDMA_CM_PACKET_LIFETIME);
	return 0;
}
