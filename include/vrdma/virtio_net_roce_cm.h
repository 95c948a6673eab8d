/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager of the device (vrdma definitions, not in the seed):
 * control commands of class 6 with which a context uses the CM the device
 * runs on QP1 of its port, and the CM event record it reads back
 * (docs/spec.md "Connection manager commands and events").
 *
 * Little-endian, naturally aligned, reserved fields written as zero and
 * ignored, like every structure of virtio_net_roce.h. Handles (listen_id,
 * conn_id) are the device's, valid for the context that got them only: a
 * handle of another context is absent (ENOENT), exactly like a stale one.
 */
#ifndef VRDMA_VIRTIO_NET_ROCE_CM_H
#define VRDMA_VIRTIO_NET_ROCE_CM_H

#include <stddef.h>
#include <stdint.h>

#include "vrdma/virtio_net_roce.h"

/* Commands (class VIRTIO_NET_CTRL_ROCE), numbered apart from the verbs. */
#define VIRTIO_NET_CTRL_ROCE_CM_LISTEN        64 /* cm_listen -> ack_cm_listen */
#define VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN      65 /* cm_handle */
#define VIRTIO_NET_CTRL_ROCE_CM_CONNECT       66 /* cm_connect -> ack_cm_conn (REQ) */
#define VIRTIO_NET_CTRL_ROCE_CM_ACCEPT        67 /* cm_accept (REP) */
#define VIRTIO_NET_CTRL_ROCE_CM_REJECT        68 /* cm_reject (REJ) */
#define VIRTIO_NET_CTRL_ROCE_CM_RTU           69 /* cm_handle: active, after a REP */
#define VIRTIO_NET_CTRL_ROCE_CM_ESTABLISHED   70 /* cm_handle: passive, traffic before the RTU */
#define VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT    71 /* cm_handle: DREQ (or DREP when asked) */
#define VIRTIO_NET_CTRL_ROCE_CM_RELEASE       72 /* cm_handle: let go, what the state needs is sent */
#define VIRTIO_NET_CTRL_ROCE_CM_SIDR_RESOLVE  73 /* cm_sidr_resolve -> ack_cm_conn */
#define VIRTIO_NET_CTRL_ROCE_CM_SIDR_ACCEPT   74 /* cm_sidr_accept (SIDR_REP) */
#define VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT     75 /* no data -> cm_event */
#define VIRTIO_NET_CTRL_ROCE_CM_FIRST         VIRTIO_NET_CTRL_ROCE_CM_LISTEN
#define VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS      12

/* Asynchronous event (event virtqueue, id = port 1): CM events wait for
 * CM_GET_EVENT. Raised when the context's CM queue becomes non-empty. */
#define VIRTIO_IB_EVENT_CM_PENDING            31

/* Every CM command is answered VIRTIO_NET_OK with this first, then the
 * command's own ack data (zero when status is not 0): the outcome is the
 * CM's (EADDRINUSE, ENOENT, EAGAIN...), which a bare ERR could not say. */
struct virtio_rdma_ack_cm_status {
	le32 status;            /* 0 or a positive errno */
	le32 reserved;
};

struct virtio_rdma_cmd_cm_listen {
	le64 service_id;        /* rdma_cm: port space << 16 | port */
	le32 backlog;           /* pending requests at most (0: the port's bound) */
	le32 reserved;
};

struct virtio_rdma_ack_cm_listen {
	le32 listen_id;
	le32 reserved;
};

/* UNLISTEN, RTU, ESTABLISHED, DISCONNECT, RELEASE. */
struct virtio_rdma_cmd_cm_handle {
	le32 id;                /* listen_id for UNLISTEN, else conn_id */
	le32 reserved;
};

/* Addressing of CONNECT and SIDR_RESOLVE: the device writes rdma_cm's IP
 * header (36 bytes) itself from these, then the private data. */
struct virtio_rdma_cm_ip {
	uint8_t dgid[16];       /* the peer's GSI address (its IP as a GID) */
	uint8_t src_addr[16];   /* AF_INET: the first 4 bytes */
	uint8_t dst_addr[16];
	le64 service_id;        /* the peer's: port space << 16 | destination port */
	le16 src_port;
	uint8_t family;         /* 4 or 6 */
	uint8_t reserved;
	le32 reserved2;
};

struct virtio_rdma_cmd_cm_connect {
	struct virtio_rdma_cm_ip ip;
	le32 qpn;               /* the context's RC or UC QP */
	le32 starting_psn;      /* 24 bits */
	uint8_t transport;      /* 0 RC, 1 UC */
	uint8_t path_mtu;       /* IB MTU code 1..5 */
	uint8_t traffic_class;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;    /* 0..7 */
	uint8_t rnr_retry_count;/* 0..7 */
	uint8_t srq;
	uint8_t private_data_len; /* <= 56 */
	uint8_t reserved[6];
	uint8_t private_data[56];
};

struct virtio_rdma_ack_cm_conn {
	le32 conn_id;
	le32 local_comm_id;     /* as sent on the wire (for logs and captures) */
};

struct virtio_rdma_cmd_cm_accept {
	le32 conn_id;
	le32 qpn;               /* the context's QP */
	le32 starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t private_data_len; /* <= 196 */
	uint8_t reserved[2];
	uint8_t private_data[196];
};

struct virtio_rdma_cmd_cm_reject {
	le32 conn_id;
	le16 reason;            /* IBTA REJ reason, e.g. 28 consumer defined */
	uint8_t private_data_len; /* <= 148 */
	uint8_t reserved;
	uint8_t private_data[148];
};

struct virtio_rdma_cmd_cm_sidr_resolve {
	struct virtio_rdma_cm_ip ip;
	uint8_t private_data_len; /* <= 180 */
	uint8_t reserved[3];
	uint8_t private_data[180];
};

struct virtio_rdma_cmd_cm_sidr_accept {
	le32 conn_id;
	le32 qpn;               /* the context's UD QP (ignored unless status 0) */
	le32 qkey;
	uint8_t status;         /* IBTA SIDR status: 0 success, 2 reject */
	uint8_t private_data_len; /* <= 136 */
	uint8_t reserved[2];
	uint8_t private_data[136];
};

/* Event types: the values of the CM's own events. */
enum virtio_ib_cm_event_type {
	VIRTIO_IB_CM_REQ_RECEIVED = 0,      /* new conn_id, listen_id: a connect request */
	VIRTIO_IB_CM_REP_RECEIVED = 1,      /* answer RTU or REJECT */
	VIRTIO_IB_CM_ESTABLISHED = 2,       /* passive: RTU received */
	VIRTIO_IB_CM_REJ_RECEIVED = 3,      /* status = REJ reason */
	VIRTIO_IB_CM_MRA_RECEIVED = 4,
	VIRTIO_IB_CM_REQ_ERROR = 5,         /* status = -ETIMEDOUT */
	VIRTIO_IB_CM_REP_ERROR = 6,         /* status = -ETIMEDOUT */
	VIRTIO_IB_CM_DREQ_RECEIVED = 7,     /* the DREP was sent by the device */
	VIRTIO_IB_CM_DREP_RECEIVED = 8,     /* or status -ETIMEDOUT */
	VIRTIO_IB_CM_TIMEWAIT_EXIT = 9,
	VIRTIO_IB_CM_SIDR_REQ_RECEIVED = 10,/* new conn_id, listen_id */
	VIRTIO_IB_CM_SIDR_REP_RECEIVED = 11,/* the conn_id is gone after it */
	VIRTIO_IB_CM_EVENT_NUM = 12,
};

/* Ack of CM_GET_EVENT: the oldest CM event of the context. */
struct virtio_rdma_cm_event {
	le32 type;              /* enum virtio_ib_cm_event_type */
	le32 conn_id;
	le32 listen_id;         /* REQ / SIDR_REQ: the listen it came to */
	le32 status;            /* signed: 0, -errno, REJ reason, SIDR status */
	uint8_t peer_gid[16];   /* the peer's GSI source address */
	le64 service_id;        /* REQ / SIDR_REQ / SIDR_REP */
	le32 remote_qpn;        /* REQ, REP, SIDR_REP */
	le32 starting_psn;      /* REQ, REP */
	le32 qkey;              /* SIDR_REP */
	uint8_t path_mtu;       /* REQ */
	uint8_t responder_resources; /* REQ, REP: as the peer sent them */
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;    /* REQ */
	uint8_t rnr_retry_count;/* REQ, REP */
	uint8_t srq;
	uint8_t transport;      /* REQ */
	uint8_t private_data_len;
	uint8_t reserved[3];
	uint8_t private_data[224]; /* REQ and SIDR_REQ: rdma_cm's IP header first */
};

_Static_assert(sizeof(struct virtio_rdma_ack_cm_status) == 8, "ack_cm_status");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_listen) == 16, "cm_listen");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_listen, backlog) == 8, "cm_listen");
_Static_assert(sizeof(struct virtio_rdma_ack_cm_listen) == 8, "ack_cm_listen");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_handle) == 8, "cm_handle");
_Static_assert(sizeof(struct virtio_rdma_cm_ip) == 64, "cm_ip");
_Static_assert(offsetof(struct virtio_rdma_cm_ip, service_id) == 48, "cm_ip");
_Static_assert(offsetof(struct virtio_rdma_cm_ip, src_port) == 56, "cm_ip");
_Static_assert(offsetof(struct virtio_rdma_cm_ip, family) == 58, "cm_ip");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_connect) == 144, "cm_connect");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_connect, qpn) == 64, "cm_connect");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_connect, transport) == 72, "cm_connect");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_connect, private_data_len) == 81, "cm_connect");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_connect, private_data) == 88, "cm_connect");
_Static_assert(sizeof(struct virtio_rdma_ack_cm_conn) == 8, "ack_cm_conn");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_accept) == 216, "cm_accept");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_accept, responder_resources) == 12, "cm_accept");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_accept, private_data) == 20, "cm_accept");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_reject) == 156, "cm_reject");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_reject, private_data) == 8, "cm_reject");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_sidr_resolve) == 248, "cm_sidr_resolve");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_sidr_resolve, private_data) == 68, "cm_sidr_resolve");
_Static_assert(sizeof(struct virtio_rdma_cmd_cm_sidr_accept) == 152, "cm_sidr_accept");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_sidr_accept, status) == 12, "cm_sidr_accept");
_Static_assert(offsetof(struct virtio_rdma_cmd_cm_sidr_accept, private_data) == 16, "cm_sidr_accept");
_Static_assert(sizeof(struct virtio_rdma_cm_event) == 288, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, peer_gid) == 16, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, service_id) == 32, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, remote_qpn) == 40, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, path_mtu) == 52, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, private_data_len) == 60, "cm_event");
_Static_assert(offsetof(struct virtio_rdma_cm_event, private_data) == 64, "cm_event");

#endif /* VRDMA_VIRTIO_NET_ROCE_CM_H */
