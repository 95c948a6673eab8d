/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MAD codec: validates and decodes untrusted CM MADs (and the RoCE v2 GSI
 * packet around them) into plain structures, and encodes those structures
 * into MADs. No state, no I/O. Field meanings: IBTA Vol. 1 ch. 12.6 and 12.11;
 * layouts in cm_wire.h.
 */
#ifndef VRDMA_CM_CM_MAD_H
#define VRDMA_CM_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/cm_wire.h"

/* Why a MAD was refused by cm_mad_parse (0 = accepted). */
enum cm_mad_status {
	CM_MAD_OK = 0,
	CM_MAD_BAD_LENGTH,          /* not exactly CM_MAD_SIZE bytes */
	CM_MAD_BAD_BASE_VERSION,
	CM_MAD_BAD_CLASS,           /* management class is not CM */
	CM_MAD_BAD_CLASS_VERSION,
	CM_MAD_BAD_METHOD,          /* method the CM class does not define */
	CM_MAD_BAD_ATTR,            /* attribute unknown, or not valid with this method */
	CM_MAD_UNSUPPORTED_ATTR,    /* LAP/APR: known, not implemented */
	CM_MAD_BAD_FIELD,           /* a length field out of range */
	CM_MAD_STATUS_COUNT
};

/* Path of a REQ (12.6.5), decoded. */
struct cm_path_info {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;
	uint8_t packet_rate;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t subnet_local;
	uint8_t local_ack_timeout;
};

struct cm_req_info {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_response_timeout;
	uint8_t transport_service_type;   /* enum cm_transport */
	uint8_t end_to_end_flow_control;
	uint32_t starting_psn;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count;
	uint16_t pkey;
	uint8_t path_mtu;                 /* IB MTU code: 1=256 ... 5=4096 */
	uint8_t rdc_exists;
	uint8_t rnr_retry_count;
	uint8_t max_cm_retries;
	uint8_t srq;
	uint8_t extended_transport_type;
	struct cm_path_info primary;
	struct cm_path_info alternate;
	uint8_t sap_supported;
	uint8_t private_data_len;
	uint8_t private_data[92];
};

struct cm_mra_info {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;            /* enum cm_msg_response */
	uint8_t service_timeout;
	uint8_t private_data_len;
	uint8_t private_data[222];
};

struct cm_rej_info {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;         /* enum cm_msg_response */
	uint16_t reason;                  /* enum cm_rej_reason */
	uint8_t ari_len;
	uint8_t ari[72];
	uint8_t private_data_len;
	uint8_t private_data[148];
};

struct cm_rep_info {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t local_eecn;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	uint8_t end_to_end_flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint64_t local_ca_guid;
	uint8_t private_data_len;
	uint8_t private_data[196];
};

/* RTU and DREP carry only the comm IDs and private data. */
struct cm_rtu_info {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data_len;
	uint8_t private_data[224];
};

struct cm_dreq_info {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;
	uint8_t private_data_len;
	uint8_t private_data[220];
};

struct cm_sidr_req_info {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data_len;
	uint8_t private_data[216];
};

struct cm_sidr_rep_info {
	uint32_t request_id;
	uint8_t status;                   /* enum cm_sidr_status */
	uint8_t info_len;
	uint32_t qpn;
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[72];
	uint8_t private_data_len;
	uint8_t private_data[136];
};

struct cm_class_port_info_info {
	uint8_t base_version;
	uint8_t class_version;
	uint16_t capability_mask;
	uint8_t resp_time_value;
};

/* One CM MAD, decoded. Parsing sets private_data_len to the whole field
 * (the wire has no length); building sends private_data_len bytes and zeros. */
struct cm_msg {
	uint8_t method;
	uint16_t status;
	uint64_t tid;
	uint16_t attr_id;                 /* enum cm_attr_id: selects the union member */
	uint32_t attr_mod;
	union {
		struct cm_req_info req;
		struct cm_mra_info mra;
		struct cm_rej_info rej;
		struct cm_rep_info rep;
		struct cm_rtu_info rtu;
		struct cm_dreq_info dreq;
		struct cm_rtu_info drep;
		struct cm_sidr_req_info sidr_req;
		struct cm_sidr_rep_info sidr_rep;
		struct cm_class_port_info_info cpi;
	};
};

/*
 * Validates the untrusted MAD of len bytes at buf and decodes it into msg.
 * Returns CM_MAD_OK or why it was refused; msg's header fields (method,
 * status, tid, attr_id, attr_mod) are filled whenever len was right, so the
 * caller can answer a refused Get with the right status.
 */
enum cm_mad_status cm_mad_parse(const void *buf, size_t len, struct cm_msg *msg);

/* Encodes msg (as a Send, or Get/GetResp for ClassPortInfo) into mad.
 * Returns 0, or -EINVAL for an unknown attribute or an oversized length. */
int cm_mad_build(struct cm_mad *mad, const struct cm_msg *msg);

/* A short name for a status, an attribute ID, a REJ reason (for logs). */
const char *cm_mad_status_name(enum cm_mad_status st);
const char *cm_attr_name(uint16_t attr_id);

/* ------------------------------------------------------------------ */
/* GSI packets on RoCE v2: BTH (UD SEND_ONLY to QP1) + DETH + 256-byte MAD. */

#define CM_GSI_PKT_LEN (12 + 8 + CM_MAD_SIZE) /* BTH + DETH + MAD, without ICRC */

struct cm_gsi_info {
	uint16_t pkey;
	uint32_t src_qpn;                 /* from the DETH (1 for the peer's GSI) */
	uint32_t psn;
	const uint8_t *mad;               /* CM_MAD_SIZE bytes inside the packet */
};

/* Validates the untrusted InfiniBand part of a RoCE v2 packet (from the BTH
 * up to, without, the ICRC): UD SEND_ONLY to QP1 with the GSI Q_Key and a
 * 256-byte payload. Returns 0 or -EINVAL. */
int cm_gsi_parse(const void *ib, size_t len, struct cm_gsi_info *out);

/* Writes BTH + DETH + mad for a GSI send to dst_qpn (normally 1). Returns
 * CM_GSI_PKT_LEN, or 0 if len is too small. */
size_t cm_gsi_build(void *buf, size_t len, uint16_t pkey, uint32_t dst_qpn, uint32_t psn,
		    const struct cm_mad *mad);

/* ------------------------------------------------------------------ */
/* rdma_cm conventions: service IDs, the IP private-data header, times.  */

/* rdma_cm port spaces (enum rdma_ucm_port_space). */
enum cm_port_space {
	CM_PS_IPOIB = 0x0002,
	CM_PS_IB    = 0x013F,
	CM_PS_TCP   = 0x0106,
	CM_PS_UDP   = 0x0111,
};

/* rdma_cm's service ID for port space ps and IP port: ps << 16 | port. */
static inline uint64_t cm_service_id(enum cm_port_space ps, uint16_t port)
{
	return ((uint64_t)ps << 16) | port;
}

/* The port space of an rdma_cm service ID, or 0 if it is not one. */
uint16_t cm_service_id_port_space(uint64_t service_id);

static inline uint16_t cm_service_id_port(uint64_t service_id)
{
	return (uint16_t)service_id;
}

/* Decoded cm_ip_hdr: family AF_INET or AF_INET6, addresses as GIDs would
 * hold them are not used here: IPv4 addresses are 4 bytes at addr[0..3]. */
struct cm_ip_info {
	int family;
	uint16_t src_port;
	uint8_t src_addr[16];
	uint8_t dst_addr[16];
};

/* Writes the 36-byte header for family (AF_INET: 4-byte addresses, AF_INET6:
 * 16-byte ones). Returns 0 or -EAFNOSUPPORT. */
int cm_ip_hdr_build(struct cm_ip_hdr *h, const struct cm_ip_info *info);

/* Validates the untrusted header at the start of len bytes of private data.
 * Returns 0, -EINVAL (too short), -EPROTONOSUPPORT (cma_version not 0) or
 * -EAFNOSUPPORT (IP version not 4 or 6). */
int cm_ip_hdr_parse(const void *private_data, size_t len, struct cm_ip_info *out);

/* 4.096 us * 2^t in microseconds (t is a 5-bit IBTA time exponent). */
static inline uint64_t cm_time_us(unsigned t)
{
	return ((uint64_t)4096 << (t & 31)) / 1000;
}

/* Local ACK timeout exponent for 2 * packet lifetime + CA ACK delay
 * (IBTA 12.7.34), rounded as Linux's ib_cm rounds it so a REQ carries the
 * same value: max(ca_ack_delay, packet_life_time + 1), plus one when the
 * smaller term is within a factor of two; at most 31. */
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

/* IPv4-mapped GID (::ffff:a.b.c.d) of an IPv4 address in network order,
 * as RoCE v2 uses for IPv4 (Annex A17). */
void cm_gid_from_ipv4(uint8_t gid[16], const uint8_t ipv4[4]);
bool cm_gid_is_ipv4(const uint8_t gid[16]);

#endif /* VRDMA_CM_CM_MAD_H */
