/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What Linux's rdma_cm (drivers/infiniband/core/cma.c over ib_cm) puts in
 * the CM messages it sends over RoCE v2, so that ours look the same and
 * theirs are understood. Facts and sources: docs/spec.md, "Connection
 * manager (rdma_cm) wire format".
 */
#ifndef VRDMA_CM_CM_RDMA_CM_H
#define VRDMA_CM_CM_RDMA_CM_H

#include "cm/cm_mad.h"

#define CM_RDMA_CM_RESPONSE_TIMEOUT 20   /* CM response timeouts, both sides */
#define CM_RDMA_CM_MAX_CM_RETRIES   15
#define CM_RDMA_CM_MRA_TIMEOUT      24   /* service timeout of its MRAs */
#define CM_RDMA_CM_PACKET_LIFETIME  16   /* RoCE path record (18 in older kernels) */
#define CM_RDMA_CM_TARGET_ACK_DELAY 20   /* in its REPs */
#define CM_RDMA_CM_HOP_LIMIT        64   /* the IP route's, usually 64 */
#define CM_RDMA_CM_UDP_QKEY         0x01234567u /* Q_Key of UDP/IB port-space UD QPs */
/* User private data that fits after the 36-byte cma_hdr. */
#define CM_RDMA_CM_REQ_USER_PD_MAX      (92 - 36)
#define CM_RDMA_CM_SIDR_REQ_USER_PD_MAX (216 - 36)

/* A REQ as rdma_connect() makes it on a RoCE v2 port. */
struct cm_rdma_cm_req_params {
	enum cm_port_space ps;
	struct cm_ip_info ip;        /* family, source and destination address, source port */
	uint16_t dst_port;
	uint32_t qpn;
	uint32_t starting_psn;
	enum cm_transport transport; /* RC or UC */
	uint8_t path_mtu;            /* IB MTU code of the netdev MTU (1500 -> 3, 1024) */
	uint8_t tos;                 /* rdma_set_option(TOS), 0 by default */
	uint8_t hop_limit;           /* 0: CM_RDMA_CM_HOP_LIMIT */
	uint8_t ca_ack_delay;        /* local device's ACK delay (rxe: 15) */
	uint8_t packet_rate;         /* 0: port current rate */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	const void *private_data;    /* the user's, after the cma_hdr */
	uint8_t private_data_len;
};

/* Fills req as Linux's rdma_cm would. Returns 0, -EINVAL (private data too
 * long, transport not RC/UC) or -EAFNOSUPPORT. */
int cm_req_init_rdma_cm(struct cm_req_info *req, const struct cm_rdma_cm_req_params *p);

/* The GID rdma_cm derives from an IP address (IPv4-mapped for AF_INET). */
int cm_gid_from_ip(uint8_t gid[16], int family, const uint8_t *addr);

#endif /* VRDMA_CM_CM_RDMA_CM_H */
