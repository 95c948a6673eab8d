/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The InfiniBand Communication Manager of one port, as a library without I/O
 * (IBTA Vol. 1 ch. 12; the dialect of Linux's ib_cm/rdma_cm over RoCE v2).
 *
 * A cm_port owns the port's connections (keyed by local comm ID, by remote
 * comm ID + remote GID for duplicate detection, and by remote GID + QPN for
 * stale-connection detection) and its listeners (by service ID). The caller
 * feeds it received MADs (cm_port_recv), drives its timers (cm_port_tick at
 * or after cm_port_next_timeout, on the clock ops->now_us) and receives
 * outbound MADs (ops->send) and events (ops->event). Events may call back
 * into the API (answer a REQ from inside CM_EVENT_REQ_RECEIVED, destroy a
 * connection, ...). Single-threaded: one caller at a time.
 *
 * Errors are negative errno values.
 */
#ifndef VRDMA_CM_CM_H
#define VRDMA_CM_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_mad.h"

struct cm_port;
struct cm_conn;
struct cm_listener;

/* A peer's GSI address: its GID (the RoCE v2 IP address as a GID), its
 * GSI QP (1) and the P_Key of the packet. */
struct cm_addr {
	uint8_t gid[16];
	uint32_t qpn;
	uint16_t pkey;
};

/* Connection states (IBTA 12.9.6, figure 156; SIDR 12.11). */
enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,
	CM_MRA_REQ_RCVD,
	CM_REP_RCVD,
	CM_REQ_RCVD,
	CM_MRA_REQ_SENT,
	CM_REP_SENT,
	CM_MRA_REP_RCVD,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DREQ_RCVD,
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
	CM_STATE_COUNT
};

enum cm_event_type {
	CM_EVENT_REQ_RECEIVED,      /* passive: connect request (msg->req, listen_ctx) */
	CM_EVENT_REP_RECEIVED,      /* active: accepted; answer cm_send_rtu or cm_send_rej */
	CM_EVENT_ESTABLISHED,       /* passive: RTU received (or cm_notify_established) */
	CM_EVENT_REJ_RECEIVED,      /* rejected: msg->rej.reason */
	CM_EVENT_MRA_RECEIVED,      /* the peer needs more time (informational) */
	CM_EVENT_REQ_ERROR,         /* active: no answer to the REQ (status -ETIMEDOUT) */
	CM_EVENT_REP_ERROR,         /* passive: no answer to the REP (status -ETIMEDOUT) */
	CM_EVENT_DREQ_RECEIVED,     /* peer disconnects: answer cm_send_drep */
	CM_EVENT_DREP_RECEIVED,     /* our DREQ answered, or status -ETIMEDOUT */
	CM_EVENT_TIMEWAIT_EXIT,     /* the connection is over; its QP may be reused */
	CM_EVENT_SIDR_REQ_RECEIVED, /* passive: msg->sidr_req; answer cm_send_sidr_rep */
	CM_EVENT_SIDR_REP_RECEIVED, /* active: msg->sidr_rep, or status -ETIMEDOUT */
	CM_EVENT_COUNT
};

struct cm_event {
	enum cm_event_type type;
	struct cm_conn *conn;
	void *conn_ctx;             /* set by cm_connect/cm_sidr_resolve/cm_conn_set_context */
	void *listen_ctx;           /* the listener's, for *_REQ_RECEIVED */
	int status;                 /* 0 or -ETIMEDOUT */
	const struct cm_addr *peer;
	const struct cm_msg *msg;   /* the message received (NULL on timeouts) */
};

struct cm_port_ops {
	/* Monotonic clock in microseconds. */
	uint64_t (*now_us)(void *ctx);
	/* Sends one MAD to dst's GSI QP. A failure counts as a lost MAD. */
	int (*send)(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst);
	void (*event)(void *ctx, const struct cm_event *ev);
};

struct cm_port_config {
	uint64_t ca_guid;           /* ARI of a REJ(timeout); ours in REQ/REP if unset there */
	uint32_t max_conns;         /* every connection, timewait included (0: 4096) */
	uint32_t max_pending;       /* passive ones not yet established (0: 256) */
	uint32_t comm_id_seed;      /* scrambles local comm IDs (use a random value) */
	uint8_t resp_time_value;    /* ClassPortInfo RespTimeValue (0: 18) */
};

/* Per-port counters: every MAD refused or dropped is counted once. */
struct cm_port_stats {
	uint64_t rx;
	uint64_t rx_refused[CM_MAD_STATUS_COUNT]; /* by cm_mad_parse status */
	uint64_t rx_attr[13];       /* accepted, by attribute: 0 ClassPortInfo, 1+ REQ.. */
	uint64_t rx_unmatched;      /* valid message for no connection or a wrong state */
	uint64_t rx_duplicates;     /* REQ/REP/RTU/DREQ/SIDR_REQ seen again */
	uint64_t rx_stale;          /* REQ from a remote QP still connected: REJ(stale) */
	uint64_t rx_no_listener;    /* REQ/SIDR_REQ for a service nobody listens on */
	uint64_t rx_flood_dropped;  /* REQ/SIDR_REQ over max_pending or max_conns */
	uint64_t rx_bad_req;        /* REQ refused for its contents (transport type) */
	uint64_t tx;
	uint64_t tx_attr[13];
	uint64_t tx_errors;         /* ops->send failed */
	uint64_t tx_resp_status;    /* GetResp with an error status sent */
	uint64_t retransmits;
	uint64_t timeouts;          /* retries exhausted */
	uint64_t conns;             /* connections alive now */
	uint64_t pending;           /* passive connections not yet established now */
};

/* Creates a port. Returns NULL (errno set) on a bad config or no memory. */
struct cm_port *cm_port_create(const struct cm_port_config *cfg, const struct cm_port_ops *ops,
			       void *ctx);
/* Frees the port and every connection and listener, without sending. */
void cm_port_destroy(struct cm_port *port);

/* Handles one received, untrusted MAD of len bytes from src (the sender's
 * GID from the IP header, source QP from the DETH, P_Key from the BTH).
 * Returns 0 if it was used, or a negative errno if it was refused or dropped
 * (counted). */
int cm_port_recv(struct cm_port *port, const void *mad, size_t len, const struct cm_addr *src);
/* Fires every timer due at ops->now_us. */
void cm_port_tick(struct cm_port *port);
/* The absolute time (ops->now_us clock) of the next timer, UINT64_MAX if none. */
uint64_t cm_port_next_timeout(const struct cm_port *port);
const struct cm_port_stats *cm_port_stats(const struct cm_port *port);

/* Listens on service_id (exact match). At most `backlog` of its requests
 * are pending (not yet established) at once, 0 for only the port's bound;
 * more are dropped and counted, so one busy service cannot take the port's
 * whole max_pending. Returns 0 or -EADDRINUSE/-ENOMEM. */
int cm_listen(struct cm_port *port, uint64_t service_id, uint32_t backlog, void *ctx,
	      struct cm_listener **out);
void cm_listener_destroy(struct cm_listener *l);

/*
 * Active side: sends a REQ built from req to dst (req->local_comm_id is
 * assigned here; a zero local_ca_guid is replaced by the port's). The REQ is
 * retried every 4.096us * (2^remote_cm_response_timeout +
 * 2^primary.local_ack_timeout), max_cm_retries times. Returns 0 and the
 * connection in *out, or a negative errno.
 */
int cm_connect(struct cm_port *port, const struct cm_req_info *req, const struct cm_addr *dst,
	       void *ctx, struct cm_conn **out);
/* Active, after CM_EVENT_REP_RECEIVED: sends the RTU, enters ESTABLISHED. */
int cm_send_rtu(struct cm_conn *conn, const void *private_data, uint8_t len);

/* Passive, after CM_EVENT_REQ_RECEIVED: accepts (comm IDs are filled in;
 * a zero local_ca_guid is replaced by the port's). Retried until the RTU. */
int cm_send_rep(struct cm_conn *conn, const struct cm_rep_info *rep);
/* Passive: asks the active side to wait 4.096us * 2^service_timeout more
 * for the REP (the MRA is resent on duplicate REQs). */
int cm_send_mra(struct cm_conn *conn, uint8_t service_timeout, const void *private_data,
		uint8_t len);
/* Passive: the QP received a packet before the RTU (IBTA "communication
 * established"): the RTU was lost, the connection is up. Stops the REP
 * retries and reports CM_EVENT_ESTABLISHED (without a message). */
int cm_notify_established(struct cm_conn *conn);
/* Rejects the peer's REQ (passive) or REP (active). */
int cm_send_rej(struct cm_conn *conn, uint16_t reason, const void *ari, uint8_t ari_len,
		const void *private_data, uint8_t len);

/* Disconnects an established connection (DREQ, retried; then timewait). */
int cm_send_dreq(struct cm_conn *conn, const void *private_data, uint8_t len);
/* Answers CM_EVENT_DREQ_RECEIVED; enters timewait. */
int cm_send_drep(struct cm_conn *conn, const void *private_data, uint8_t len);

/* SIDR (UD service resolution), active side: retried every 4.096us *
 * 2^timeout, `retries` times. *out lives until CM_EVENT_SIDR_REP_RECEIVED. */
int cm_sidr_resolve(struct cm_port *port, const struct cm_sidr_req_info *req,
		    const struct cm_addr *dst, uint8_t timeout, uint8_t retries, void *ctx,
		    struct cm_conn **out);
/* SIDR passive side: answers CM_EVENT_SIDR_REQ_RECEIVED (request ID and
 * service ID are filled in). The reply ends the request: conn is freed. */
int cm_send_sidr_rep(struct cm_conn *conn, const struct cm_sidr_rep_info *rep);

/*
 * The user lets go of a connection: no more events for it. What the state
 * requires is sent (REJ before establishment, DREQ when established, DREP
 * when asked, a SIDR_REP(reject)); the port keeps the connection through its
 * retries and timewait and frees it at the end.
 */
void cm_conn_destroy(struct cm_conn *conn);
void cm_conn_set_context(struct cm_conn *conn, void *ctx);
enum cm_state cm_conn_state(const struct cm_conn *conn);
uint32_t cm_conn_local_id(const struct cm_conn *conn);
uint32_t cm_conn_remote_id(const struct cm_conn *conn);
/* The QPN this side gave in its REQ or REP (0 before). */
uint32_t cm_conn_local_qpn(const struct cm_conn *conn);
const char *cm_state_name(enum cm_state st);
const char *cm_event_name(enum cm_event_type type);

#endif /* VRDMA_CM_CM_H */
