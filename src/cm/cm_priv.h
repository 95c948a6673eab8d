/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by cm_port.c (tables, timers, receive demux),
 * cm_conn.c (connection state machine) and cm_sidr.c. */
#ifndef VRDMA_CM_CM_PRIV_H
#define VRDMA_CM_CM_PRIV_H

#include "cm/cm.h"

#define CM_NO_TIMER UINT64_MAX

struct cm_conn {
	struct cm_port *port;
	struct cm_conn *prev, *next;        /* every connection of the port */
	struct cm_conn *local_chain;        /* hash by local comm ID */
	struct cm_conn *remote_chain;       /* hash by remote comm ID + peer GID */
	struct cm_conn *qpn_chain;          /* hash by peer GID + remote QPN */
	struct cm_conn *reap_next;
	struct cm_listener *listener;       /* passive: whose backlog it counts in */
	bool in_remote, in_qpn, on_reap;
	bool passive, sidr, detached, pending;

	enum cm_state state;
	void *ctx;
	void *listen_ctx;
	uint32_t local_id;
	uint32_t remote_id;                 /* 0 until known */
	uint32_t local_qpn, remote_qpn;
	uint64_t tid;                       /* REQ/REP/RTU transaction */
	uint64_t dreq_tid;
	uint64_t service_id;
	struct cm_addr peer;

	/* The message retried until answered, and its timer. */
	struct cm_mad retry_mad;
	uint64_t deadline;                  /* CM_NO_TIMER when idle */
	uint64_t retry_us;                  /* one try */
	unsigned retries_left;
	/* The last answer, sent again when the peer repeats itself. */
	struct cm_mad reply_mad;
	bool reply_valid;

	uint8_t peer_resp_timeout;          /* exponent: how long the peer may take */
	uint8_t ack_timeout;                /* exponent: ~ round trip + ack delay */
	uint8_t max_retries;
};

struct cm_port {
	struct cm_port_config cfg;
	struct cm_port_ops ops;
	void *ctx;
	struct cm_port_stats stats;
	struct cm_conn *conns;              /* list head */
	struct cm_conn **local_hash, **remote_hash, **qpn_hash;
	uint32_t hash_mask;
	struct cm_listener *listeners;
	struct cm_conn *reap;
	unsigned depth;                     /* nesting of event callbacks */
	uint32_t next_id;
	uint32_t tid_seq;
};

struct cm_listener {
	struct cm_port *port;
	struct cm_listener *next;
	uint64_t service_id;
	void *ctx;
	uint32_t backlog;                   /* 0: no own limit */
	uint32_t pending;
};

/* cm_port.c */
uint64_t cm_now(struct cm_port *p);
struct cm_conn *cm_conn_alloc(struct cm_port *p, bool passive);
void cm_conn_set_state(struct cm_conn *c, enum cm_state st);
void cm_conn_set_remote(struct cm_conn *c, uint32_t remote_id, uint32_t remote_qpn);
struct cm_conn *cm_find_local(struct cm_port *p, uint32_t local_id);
struct cm_conn *cm_find_remote(struct cm_port *p, uint32_t remote_id, const uint8_t gid[16]);
struct cm_conn *cm_find_qpn(struct cm_port *p, uint32_t remote_qpn, const uint8_t gid[16]);
struct cm_listener *cm_find_listener(struct cm_port *p, uint64_t service_id);
bool cm_can_accept(struct cm_port *p, const struct cm_listener *l);
void cm_conn_unhash_qpn(struct cm_conn *c);
void cm_deliver(struct cm_conn *c, enum cm_event_type type, int status, const struct cm_msg *msg);
void cm_send_msg_raw(struct cm_port *p, const struct cm_mad *mad, const struct cm_addr *dst);
int cm_send_msg(struct cm_port *p, const struct cm_msg *msg, const struct cm_addr *dst,
		struct cm_mad *save);
void cm_start_retry(struct cm_conn *c, uint64_t try_us, unsigned retries);
void cm_stop_timer(struct cm_conn *c);
uint64_t cm_new_tid(struct cm_port *p, uint32_t low);
void cm_attr_count(uint64_t *by_attr, uint16_t attr);

/* cm_conn.c: received connection messages and their timeouts */
int cm_recv_req(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_mra(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_rej(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_rep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_rtu(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_dreq(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_drep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
void cm_conn_timeout(struct cm_conn *c);
void cm_conn_abandon(struct cm_conn *c);

/* cm_sidr.c */
int cm_recv_sidr_req(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
int cm_recv_sidr_rep(struct cm_port *p, const struct cm_msg *m, const struct cm_addr *src);
void cm_sidr_timeout(struct cm_conn *c);
void cm_sidr_abandon(struct cm_conn *c);

#endif /* VRDMA_CM_CM_PRIV_H */
