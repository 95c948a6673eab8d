/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MAD codec (see cm_mad.h). Every read of the untrusted MAD goes through
 * the cm_wire.h accessors on a buffer whose length was checked first.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "cm/cm_mad.h"
#include "roce/roce_hdr.h"
#include "roce/roce_opcode.h"

static void path_decode(struct cm_path_info *p, const struct cm_req_path *w)
{
	p->local_lid = get_be16(w->local_lid);
	p->remote_lid = get_be16(w->remote_lid);
	memcpy(p->local_gid, w->local_gid, 16);
	memcpy(p->remote_gid, w->remote_gid, 16);
	p->flow_label = cm_req_path_flow_label(w);
	p->packet_rate = (uint8_t)cm_req_path_packet_rate(w);
	p->traffic_class = w->traffic_class;
	p->hop_limit = w->hop_limit;
	p->sl = (uint8_t)cm_req_path_sl(w);
	p->subnet_local = (uint8_t)cm_req_path_subnet_local(w);
	p->local_ack_timeout = (uint8_t)cm_req_path_local_ack_timeout(w);
}

static void path_encode(struct cm_req_path *w, const struct cm_path_info *p)
{
	put_be16(w->local_lid, p->local_lid);
	put_be16(w->remote_lid, p->remote_lid);
	memcpy(w->local_gid, p->local_gid, 16);
	memcpy(w->remote_gid, p->remote_gid, 16);
	cm_req_path_set_flow_label(w, p->flow_label);
	cm_req_path_set_packet_rate(w, p->packet_rate);
	w->traffic_class = p->traffic_class;
	w->hop_limit = p->hop_limit;
	cm_req_path_set_sl(w, p->sl);
	cm_req_path_set_subnet_local(w, p->subnet_local);
	cm_req_path_set_local_ack_timeout(w, p->local_ack_timeout);
}

/* Private data: decode copies the whole field; encode copies len bytes. */
#define PD_DECODE(info, wire)                                                   \
	do {                                                                    \
		memcpy((info)->private_data, (wire)->private_data,              \
		       sizeof((wire)->private_data));                           \
		(info)->private_data_len = sizeof((wire)->private_data);        \
	} while (0)
#define PD_ENCODE(wire, info)                                                   \
	do {                                                                    \
		if ((info)->private_data_len > sizeof((wire)->private_data))    \
			return -EINVAL;                                         \
		memcpy((wire)->private_data, (info)->private_data,              \
		       (info)->private_data_len);                               \
	} while (0)

static void req_decode(struct cm_req_info *r, const struct cm_req *w)
{
	r->local_comm_id = get_be32(w->local_comm_id);
	r->service_id = get_be64(w->service_id);
	r->local_ca_guid = get_be64(w->local_ca_guid);
	r->local_qkey = get_be32(w->local_qkey);
	r->local_qpn = cm_req_local_qpn(w);
	r->responder_resources = (uint8_t)cm_req_responder_resources(w);
	r->local_eecn = cm_req_local_eecn(w);
	r->initiator_depth = (uint8_t)cm_req_initiator_depth(w);
	r->remote_eecn = cm_req_remote_eecn(w);
	r->remote_cm_response_timeout = (uint8_t)cm_req_remote_cm_response_timeout(w);
	r->transport_service_type = (uint8_t)cm_req_transport_service_type(w);
	r->end_to_end_flow_control = (uint8_t)cm_req_end_to_end_flow_control(w);
	r->starting_psn = cm_req_starting_psn(w);
	r->local_cm_response_timeout = (uint8_t)cm_req_local_cm_response_timeout(w);
	r->retry_count = (uint8_t)cm_req_retry_count(w);
	r->pkey = get_be16(w->pkey);
	r->path_mtu = (uint8_t)cm_req_path_mtu(w);
	r->rdc_exists = (uint8_t)cm_req_rdc_exists(w);
	r->rnr_retry_count = (uint8_t)cm_req_rnr_retry_count(w);
	r->max_cm_retries = (uint8_t)cm_req_max_cm_retries(w);
	r->srq = (uint8_t)cm_req_srq(w);
	r->extended_transport_type = (uint8_t)cm_req_extended_transport_type(w);
	path_decode(&r->primary, &w->primary);
	path_decode(&r->alternate, &w->alternate);
	r->sap_supported = (uint8_t)cm_req_sap_supported(w);
	PD_DECODE(r, w);
}

static int req_encode(struct cm_req *w, const struct cm_req_info *r)
{
	put_be32(w->local_comm_id, r->local_comm_id);
	put_be64(w->service_id, r->service_id);
	put_be64(w->local_ca_guid, r->local_ca_guid);
	put_be32(w->local_qkey, r->local_qkey);
	cm_req_set_local_qpn(w, r->local_qpn);
	cm_req_set_responder_resources(w, r->responder_resources);
	cm_req_set_local_eecn(w, r->local_eecn);
	cm_req_set_initiator_depth(w, r->initiator_depth);
	cm_req_set_remote_eecn(w, r->remote_eecn);
	cm_req_set_remote_cm_response_timeout(w, r->remote_cm_response_timeout);
	cm_req_set_transport_service_type(w, r->transport_service_type);
	cm_req_set_end_to_end_flow_control(w, r->end_to_end_flow_control);
	cm_req_set_starting_psn(w, r->starting_psn);
	cm_req_set_local_cm_response_timeout(w, r->local_cm_response_timeout);
	cm_req_set_retry_count(w, r->retry_count);
	put_be16(w->pkey, r->pkey);
	cm_req_set_path_mtu(w, r->path_mtu);
	cm_req_set_rdc_exists(w, r->rdc_exists);
	cm_req_set_rnr_retry_count(w, r->rnr_retry_count);
	cm_req_set_max_cm_retries(w, r->max_cm_retries);
	cm_req_set_srq(w, r->srq);
	cm_req_set_extended_transport_type(w, r->extended_transport_type);
	path_encode(&w->primary, &r->primary);
	path_encode(&w->alternate, &r->alternate);
	cm_req_set_sap_supported(w, r->sap_supported);
	PD_ENCODE(w, r);
	return 0;
}

static void mra_decode(struct cm_mra_info *m, const struct cm_mra *w)
{
	m->local_comm_id = get_be32(w->local_comm_id);
	m->remote_comm_id = get_be32(w->remote_comm_id);
	m->message_mraed = (uint8_t)cm_mra_message_mraed(w);
	m->service_timeout = (uint8_t)cm_mra_service_timeout(w);
	PD_DECODE(m, w);
}

static int mra_encode(struct cm_mra *w, const struct cm_mra_info *m)
{
	put_be32(w->local_comm_id, m->local_comm_id);
	put_be32(w->remote_comm_id, m->remote_comm_id);
	cm_mra_set_message_mraed(w, m->message_mraed);
	cm_mra_set_service_timeout(w, m->service_timeout);
	PD_ENCODE(w, m);
	return 0;
}

static enum cm_mad_status rej_decode(struct cm_rej_info *r, const struct cm_rej *w)
{
	r->local_comm_id = get_be32(w->local_comm_id);
	r->remote_comm_id = get_be32(w->remote_comm_id);
	r->message_rejected = (uint8_t)cm_rej_message_rejected(w);
	r->reason = get_be16(w->reason);
	r->ari_len = (uint8_t)cm_rej_reject_info_length(w);
	if (r->ari_len > sizeof(w->ari))
		return CM_MAD_BAD_FIELD;
	memset(r->ari, 0, sizeof(r->ari));
	memcpy(r->ari, w->ari, r->ari_len);
	PD_DECODE(r, w);
	return CM_MAD_OK;
}

static int rej_encode(struct cm_rej *w, const struct cm_rej_info *r)
{
	if (r->ari_len > sizeof(w->ari))
		return -EINVAL;
	put_be32(w->local_comm_id, r->local_comm_id);
	put_be32(w->remote_comm_id, r->remote_comm_id);
	cm_rej_set_message_rejected(w, r->message_rejected);
	cm_rej_set_reject_info_length(w, r->ari_len);
	put_be16(w->reason, r->reason);
	memcpy(w->ari, r->ari, r->ari_len);
	PD_ENCODE(w, r);
	return 0;
}

static void rep_decode(struct cm_rep_info *r, const struct cm_rep *w)
{
	r->local_comm_id = get_be32(w->local_comm_id);
	r->remote_comm_id = get_be32(w->remote_comm_id);
	r->local_qkey = get_be32(w->local_qkey);
	r->local_qpn = cm_rep_local_qpn(w);
	r->local_eecn = cm_rep_local_eecn(w);
	r->starting_psn = cm_rep_starting_psn(w);
	r->responder_resources = w->responder_resources;
	r->initiator_depth = w->initiator_depth;
	r->target_ack_delay = (uint8_t)cm_rep_target_ack_delay(w);
	r->failover_accepted = (uint8_t)cm_rep_failover_accepted(w);
	r->end_to_end_flow_control = (uint8_t)cm_rep_end_to_end_flow_control(w);
	r->rnr_retry_count = (uint8_t)cm_rep_rnr_retry_count(w);
	r->srq = (uint8_t)cm_rep_srq(w);
	r->local_ca_guid = get_be64(w->local_ca_guid);
	PD_DECODE(r, w);
}

static int rep_encode(struct cm_rep *w, const struct cm_rep_info *r)
{
	put_be32(w->local_comm_id, r->local_comm_id);
	put_be32(w->remote_comm_id, r->remote_comm_id);
	put_be32(w->local_qkey, r->local_qkey);
	cm_rep_set_local_qpn(w, r->local_qpn);
	cm_rep_set_local_eecn(w, r->local_eecn);
	cm_rep_set_starting_psn(w, r->starting_psn);
	w->responder_resources = r->responder_resources;
	w->initiator_depth = r->initiator_depth;
	cm_rep_set_target_ack_delay(w, r->target_ack_delay);
	cm_rep_set_failover_accepted(w, r->failover_accepted);
	cm_rep_set_end_to_end_flow_control(w, r->end_to_end_flow_control);
	cm_rep_set_rnr_retry_count(w, r->rnr_retry_count);
	cm_rep_set_srq(w, r->srq);
	put_be64(w->local_ca_guid, r->local_ca_guid);
	PD_ENCODE(w, r);
	return 0;
}

/* RTU and DREP share a layout. */
static void rtu_decode(struct cm_rtu_info *r, const struct cm_rtu *w)
{
	r->local_comm_id = get_be32(w->local_comm_id);
	r->remote_comm_id = get_be32(w->remote_comm_id);
	PD_DECODE(r, w);
}

static int rtu_encode(struct cm_rtu *w, const struct cm_rtu_info *r)
{
	put_be32(w->local_comm_id, r->local_comm_id);
	put_be32(w->remote_comm_id, r->remote_comm_id);
	PD_ENCODE(w, r);
	return 0;
}

static void dreq_decode(struct cm_dreq_info *d, const struct cm_dreq *w)
{
	d->local_comm_id = get_be32(w->local_comm_id);
	d->remote_comm_id = get_be32(w->remote_comm_id);
	d->remote_qpn = cm_dreq_remote_qpn(w);
	PD_DECODE(d, w);
}

static int dreq_encode(struct cm_dreq *w, const struct cm_dreq_info *d)
{
	put_be32(w->local_comm_id, d->local_comm_id);
	put_be32(w->remote_comm_id, d->remote_comm_id);
	cm_dreq_set_remote_qpn(w, d->remote_qpn);
	PD_ENCODE(w, d);
	return 0;
}

static void sidr_req_decode(struct cm_sidr_req_info *s, const struct cm_sidr_req *w)
{
	s->request_id = get_be32(w->request_id);
	s->pkey = get_be16(w->pkey);
	s->service_id = get_be64(w->service_id);
	PD_DECODE(s, w);
}

static int sidr_req_encode(struct cm_sidr_req *w, const struct cm_sidr_req_info *s)
{
	put_be32(w->request_id, s->request_id);
	put_be16(w->pkey, s->pkey);
	put_be64(w->service_id, s->service_id);
	PD_ENCODE(w, s);
	return 0;
}

static enum cm_mad_status sidr_rep_decode(struct cm_sidr_rep_info *s, const struct cm_sidr_rep *w)
{
	s->request_id = get_be32(w->request_id);
	s->status = w->status;
	s->info_len = w->info_len;
	if (s->info_len > sizeof(w->info))
		return CM_MAD_BAD_FIELD;
	s->qpn = cm_sidr_rep_qpn(w);
	s->service_id = get_be64(w->service_id);
	s->qkey = get_be32(w->qkey);
	memset(s->info, 0, sizeof(s->info));
	memcpy(s->info, w->info, s->info_len);
	PD_DECODE(s, w);
	return CM_MAD_OK;
}

static int sidr_rep_encode(struct cm_sidr_rep *w, const struct cm_sidr_rep_info *s)
{
	if (s->info_len > sizeof(w->info))
		return -EINVAL;
	put_be32(w->request_id, s->request_id);
	w->status = s->status;
	w->info_len = s->info_len;
	cm_sidr_rep_set_qpn(w, s->qpn);
	put_be64(w->service_id, s->service_id);
	put_be32(w->qkey, s->qkey);
	memcpy(w->info, s->info, s->info_len);
	PD_ENCODE(w, s);
	return 0;
}

static void cpi_decode(struct cm_class_port_info_info *c, const struct cm_class_port_info *w)
{
	c->base_version = w->base_version;
	c->class_version = w->class_version;
	c->capability_mask = get_be16(w->capability_mask);
	c->resp_time_value = (uint8_t)cm_class_port_info_resp_time_value(w);
}

static int cpi_encode(struct cm_class_port_info *w, const struct cm_class_port_info_info *c)
{
	w->base_version = c->base_version;
	w->class_version = c->class_version;
	put_be16(w->capability_mask, c->capability_mask);
	cm_class_port_info_set_resp_time_value(w, c->resp_time_value);
	return 0;
}

/* Is attr a CM message carried by the Send method? */
static bool attr_is_send(uint16_t attr)
{
	return attr >= CM_ATTR_REQ && attr <= CM_ATTR_APR;
}

enum cm_mad_status cm_mad_parse(const void *buf, size_t len, struct cm_msg *msg)
{
	const struct cm_mad *mad = buf;
	const void *data;

	memset(msg, 0, sizeof(*msg));
	if (!buf || len != CM_MAD_SIZE)
		return CM_MAD_BAD_LENGTH;
	msg->method = mad->hdr.method;
	msg->status = get_be16(mad->hdr.status);
	msg->tid = get_be64(mad->hdr.tid);
	msg->attr_id = get_be16(mad->hdr.attr_id);
	msg->attr_mod = get_be32(mad->hdr.attr_mod);
	if (mad->hdr.base_version != CM_MAD_BASE_VERSION)
		return CM_MAD_BAD_BASE_VERSION;
	if (mad->hdr.mgmt_class != CM_MGMT_CLASS)
		return CM_MAD_BAD_CLASS;
	if (mad->hdr.class_version != CM_CLASS_VERSION)
		return CM_MAD_BAD_CLASS_VERSION;

	switch (msg->method) {
	case CM_METHOD_SEND:
		if (!attr_is_send(msg->attr_id))
			return CM_MAD_BAD_ATTR;
		break;
	case CM_METHOD_GET:
	case CM_METHOD_GET_RESP:
		if (msg->attr_id != CM_ATTR_CLASS_PORT_INFO)
			return CM_MAD_BAD_ATTR;
		break;
	default:
		return CM_MAD_BAD_METHOD;
	}

	data = mad->data;
	switch (msg->attr_id) {
	case CM_ATTR_CLASS_PORT_INFO:
		cpi_decode(&msg->cpi, data);
		return CM_MAD_OK;
	case CM_ATTR_REQ:
		req_decode(&msg->req, data);
		return CM_MAD_OK;
	case CM_ATTR_MRA:
		mra_decode(&msg->mra, data);
		return CM_MAD_OK;
	case CM_ATTR_REJ:
		return rej_decode(&msg->rej, data);
	case CM_ATTR_REP:
		rep_decode(&msg->rep, data);
		return CM_MAD_OK;
	case CM_ATTR_RTU:
		rtu_decode(&msg->rtu, data);
		return CM_MAD_OK;
	case CM_ATTR_DREQ:
		dreq_decode(&msg->dreq, data);
		return CM_MAD_OK;
	case CM_ATTR_DREP:
		rtu_decode(&msg->drep, data);
		return CM_MAD_OK;
	case CM_ATTR_SIDR_REQ:
		sidr_req_decode(&msg->sidr_req, data);
		return CM_MAD_OK;
	case CM_ATTR_SIDR_REP:
		return sidr_rep_decode(&msg->sidr_rep, data);
	default: /* LAP, APR */
		return CM_MAD_UNSUPPORTED_ATTR;
	}
}

int cm_mad_build(struct cm_mad *mad, const struct cm_msg *msg)
{
	void *data = mad->data;
	uint8_t method = msg->method;
	int rc;

	memset(mad, 0, sizeof(*mad));
	if (msg->attr_id != CM_ATTR_CLASS_PORT_INFO)
		method = CM_METHOD_SEND;
	else if (method != CM_METHOD_GET && method != CM_METHOD_GET_RESP)
		return -EINVAL;
	mad->hdr.base_version = CM_MAD_BASE_VERSION;
	mad->hdr.mgmt_class = CM_MGMT_CLASS;
	mad->hdr.class_version = CM_CLASS_VERSION;
	mad->hdr.method = method;
	put_be16(mad->hdr.status, msg->status);
	put_be64(mad->hdr.tid, msg->tid);
	put_be16(mad->hdr.attr_id, msg->attr_id);
	put_be32(mad->hdr.attr_mod, msg->attr_mod);

	switch (msg->attr_id) {
	case CM_ATTR_CLASS_PORT_INFO: rc = cpi_encode(data, &msg->cpi); break;
	case CM_ATTR_REQ:      rc = req_encode(data, &msg->req); break;
	case CM_ATTR_MRA:      rc = mra_encode(data, &msg->mra); break;
	case CM_ATTR_REJ:      rc = rej_encode(data, &msg->rej); break;
	case CM_ATTR_REP:      rc = rep_encode(data, &msg->rep); break;
	case CM_ATTR_RTU:      rc = rtu_encode(data, &msg->rtu); break;
	case CM_ATTR_DREQ:     rc = dreq_encode(data, &msg->dreq); break;
	case CM_ATTR_DREP:     rc = rtu_encode(data, &msg->drep); break;
	case CM_ATTR_SIDR_REQ: rc = sidr_req_encode(data, &msg->sidr_req); break;
	case CM_ATTR_SIDR_REP: rc = sidr_rep_encode(data, &msg->sidr_rep); break;
	default:               rc = -EINVAL; break;
	}
	if (rc)
		memset(mad, 0, sizeof(*mad));
	return rc;
}

const char *cm_mad_status_name(enum cm_mad_status st)
{
	static const char *const names[CM_MAD_STATUS_COUNT] = {
		[CM_MAD_OK] = "ok",
		[CM_MAD_BAD_LENGTH] = "bad length",
		[CM_MAD_BAD_BASE_VERSION] = "bad base version",
		[CM_MAD_BAD_CLASS] = "not the CM class",
		[CM_MAD_BAD_CLASS_VERSION] = "bad class version",
		[CM_MAD_BAD_METHOD] = "unsupported method",
		[CM_MAD_BAD_ATTR] = "unsupported method/attribute",
		[CM_MAD_UNSUPPORTED_ATTR] = "attribute not implemented",
		[CM_MAD_BAD_FIELD] = "invalid field",
	};

	return (unsigned)st < CM_MAD_STATUS_COUNT ? names[st] : "?";
}

const char *cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
	case CM_ATTR_CLASS_PORT_INFO: return "ClassPortInfo";
	case CM_ATTR_REQ: return "REQ";
	case CM_ATTR_MRA: return "MRA";
	case CM_ATTR_REJ: return "REJ";
	case CM_ATTR_REP: return "REP";
	case CM_ATTR_RTU: return "RTU";
	case CM_ATTR_DREQ: return "DREQ";
	case CM_ATTR_DREP: return "DREP";
	case CM_ATTR_SIDR_REQ: return "SIDR_REQ";
	case CM_ATTR_SIDR_REP: return "SIDR_REP";
	case CM_ATTR_LAP: return "LAP";
	case CM_ATTR_APR: return "APR";
	default: return "?";
	}
}

/* ------------------------------------------------------------------ */

int cm_gsi_parse(const void *ib, size_t len, struct cm_gsi_info *out)
{
	const struct roce_bth *bth = ib;
	const struct roce_deth *deth;

	if (!ib || len != CM_GSI_PKT_LEN)
		return -EINVAL;
	deth = (const void *)((const uint8_t *)ib + ROCE_BTH_LEN);
	if (roce_bth_opcode(bth) != ROCE_OP_UD_SEND_ONLY || roce_bth_tver(bth) != 0 ||
	    roce_bth_padcnt(bth) != 0 || roce_bth_dqpn(bth) != CM_GSI_QPN ||
	    roce_deth_qkey(deth) != CM_GSI_QKEY)
		return -EINVAL;
	out->pkey = roce_bth_pkey(bth);
	out->psn = roce_bth_psn(bth);
	out->src_qpn = roce_deth_sqpn(deth);
	out->mad = (const uint8_t *)ib + ROCE_BTH_LEN + ROCE_DETH_LEN;
	return 0;
}

size_t cm_gsi_build(void *buf, size_t len, uint16_t pkey, uint32_t dst_qpn, uint32_t psn,
		    const struct cm_mad *mad)
{
	struct roce_bth *bth = buf;
	struct roce_deth *deth;

	if (len < CM_GSI_PKT_LEN)
		return 0;
	memset(buf, 0, ROCE_BTH_LEN + ROCE_DETH_LEN);
	deth = (void *)((uint8_t *)buf + ROCE_BTH_LEN);
	roce_bth_set_opcode(bth, ROCE_OP_UD_SEND_ONLY);
	roce_bth_set_pkey(bth, pkey);
	roce_bth_set_dqpn(bth, dst_qpn);
	roce_bth_set_psn(bth, psn);
	roce_deth_set_qkey(deth, CM_GSI_QKEY);
	roce_deth_set_sqpn(deth, CM_GSI_QPN);
	memcpy((uint8_t *)buf + ROCE_BTH_LEN + ROCE_DETH_LEN, mad, CM_MAD_SIZE);
	return CM_GSI_PKT_LEN;
}

/* ------------------------------------------------------------------ */

uint16_t cm_service_id_port_space(uint64_t service_id)
{
	uint16_t ps = (uint16_t)(service_id >> 16);

	if (service_id >> 32)
		return 0;
	switch (ps) {
	case CM_PS_IPOIB:
	case CM_PS_IB:
	case CM_PS_TCP:
	case CM_PS_UDP:
		return ps;
	default:
		return 0;
	}
}

int cm_ip_hdr_build(struct cm_ip_hdr *h, const struct cm_ip_info *info)
{
	memset(h, 0, sizeof(*h));
	h->cma_version = CM_IP_HDR_VERSION;
	put_be16(h->src_port, info->src_port);
	if (info->family == AF_INET) {
		cm_ip_hdr_set_ip_version(h, 4);
		memcpy(h->src_addr + 12, info->src_addr, 4);
		memcpy(h->dst_addr + 12, info->dst_addr, 4);
	} else if (info->family == AF_INET6) {
		cm_ip_hdr_set_ip_version(h, 6);
		memcpy(h->src_addr, info->src_addr, 16);
		memcpy(h->dst_addr, info->dst_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

int cm_ip_hdr_parse(const void *private_data, size_t len, struct cm_ip_info *out)
{
	const struct cm_ip_hdr *h = private_data;

	memset(out, 0, sizeof(*out));
	if (!private_data || len < sizeof(*h))
		return -EINVAL;
	if (h->cma_version != CM_IP_HDR_VERSION)
		return -EPROTONOSUPPORT;
	out->src_port = get_be16(h->src_port);
	switch (cm_ip_hdr_ip_version(h)) {
	case 4:
		out->family = AF_INET;
		memcpy(out->src_addr, h->src_addr + 12, 4);
		memcpy(out->dst_addr, h->dst_addr + 12, 4);
		return 0;
	case 6:
		out->family = AF_INET6;
		memcpy(out->src_addr, h->src_addr, 16);
		memcpy(out->dst_addr, h->dst_addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	/* The larger of ack delay and lifetime + 1 (the doubling), one more
	 * when the other term is within a factor of two. */
	unsigned t = packet_life_time + 1u;

	if (t >= ca_ack_delay)
		t += ca_ack_delay + 1u >= t;
	else
		t = ca_ack_delay + (t + 1u >= ca_ack_delay);
	return (uint8_t)(t > 31 ? 31 : t);
}

void cm_gid_from_ipv4(uint8_t gid[16], const uint8_t ipv4[4])
{
	memset(gid, 0, 10);
	gid[10] = 0xFF;
	gid[11] = 0xFF;
	memcpy(gid + 12, ipv4, 4);
}

bool cm_gid_is_ipv4(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}
