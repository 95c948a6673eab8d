/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager of a device port (docs/design.md "Connection
 * manager"): one cm_port (src/cm) on QP1 of the port, shared by the port's
 * contexts through the CM control commands (include/vrdma/virtio_net_roce_cm.h).
 * This file owns the dispatch: which context owns which listen and
 * connection, each context's queue of CM events, and the teardown of a
 * context that disappears. No I/O: MADs go out through ops->send, received
 * ones come in through netdev_cm_recv, like src/cm itself.
 *
 * Errors are negative errno values. A handle or QP of another context is
 * -ENOENT, like one that does not exist.
 */
#ifndef VRDMA_BACKEND_NETDEV_CM_H
#define VRDMA_BACKEND_NETDEV_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/cm.h"

struct netdev_cm;

struct netdev_cm_ops {
	uint64_t (*now_us)(void *ctx);
	/* Sends one MAD from QP1 to dst (a failure counts as a loss). */
	int (*send)(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst);
	/* True if context ctx_id may name QP qpn in a REQ/REP/SIDR_REP (its
	 * own QP; never another context's). */
	bool (*qp_owned)(void *ctx, uint64_t ctx_id, uint32_t qpn);
	/* Context ctx_id's CM event queue became non-empty. */
	void (*notify)(void *ctx, uint64_t ctx_id);
};

struct netdev_cm_config {
	struct cm_port_config port;  /* max_conns also bounds the handles */
	uint32_t max_listens;        /* per port (0: 256) */
	uint32_t max_events;         /* queued per context (0: 1024) */
	uint32_t max_conns_per_ctx;  /* handles one context may hold (0: a quarter) */
	uint32_t max_listens_per_ctx; /* (0: a quarter of max_listens) */
};

/* Dispatch counters (the CM's own: cm_port_stats). */
struct netdev_cm_stats {
	uint64_t cmds[16];           /* by command - VIRTIO_NET_CTRL_ROCE_CM_FIRST */
	uint64_t cmd_errors[16];
	uint64_t bad_length;         /* command data of the wrong size */
	uint64_t not_owner;          /* a handle or QP absent from the context */
	uint64_t listens_in_use;     /* EADDRINUSE */
	uint64_t quota_refused;      /* a context's share of handles or listens used up */
	uint64_t events_queued;
	uint64_t events_read;
	uint64_t events_dropped;     /* a context's queue was full */
	uint64_t reqs_refused;       /* REQ/SIDR_REQ refused: queue full, no handle */
	uint64_t ctx_gone;           /* contexts torn down */
	uint64_t ctx_gone_conns;     /* their connections let go (REJ/DREQ/DREP sent) */
	uint64_t ctx_gone_listens;
	uint64_t comm_est;           /* passive connections established by data before the RTU */
	uint64_t listens;            /* alive now */
	uint64_t conns;              /* handles alive now */
};

struct netdev_cm *netdev_cm_new(const struct netdev_cm_config *cfg, const struct netdev_cm_ops *ops,
				void *ctx);
/* Frees everything without sending (the port goes away). */
void netdev_cm_free(struct netdev_cm *cm);

/* A received MAD (QP1 of the port): see cm_port_recv. */
int netdev_cm_recv(struct netdev_cm *cm, const void *mad, size_t len, const struct cm_addr *src);
void netdev_cm_tick(struct netdev_cm *cm);
uint64_t netdev_cm_next_timeout(const struct netdev_cm *cm);

/* One CM command (cmd = VIRTIO_NET_CTRL_ROCE_CM_*) of context ctx_id with
 * its untrusted data; the ack data goes to out (*out_len bytes). Returns 0
 * or -EINVAL (length, field), -ENOENT (not the context's), -EADDRINUSE,
 * -ENOBUFS/-ENOMEM (limits), -EAGAIN (GET_EVENT: none), -EOPNOTSUPP. */
int netdev_cm_cmd(struct netdev_cm *cm, uint64_t ctx_id, uint8_t cmd, const void *in,
		  size_t in_len, void *out, size_t out_cap, size_t *out_len);
/* QP qpn of the context received data before the RTU (COMM_EST): its
 * passive connection waiting for the RTU is established now, as if the
 * RTU had come (IBTA 12.9.7.2). 0, or -ENOENT if no connection waits. */
int netdev_cm_comm_est(struct netdev_cm *cm, uint64_t ctx_id, uint32_t qpn);
/* Events waiting for the context. */
uint32_t netdev_cm_events(const struct netdev_cm *cm, uint64_t ctx_id);
/* The context is gone: its connections are let go (REJ before
 * establishment, DREQ when connected, DREP when asked), its listens freed,
 * its events dropped. */
void netdev_cm_ctx_gone(struct netdev_cm *cm, uint64_t ctx_id);

const struct netdev_cm_stats *netdev_cm_stats(const struct netdev_cm *cm);
const struct cm_port_stats *netdev_cm_port_stats(const struct netdev_cm *cm);

#endif /* VRDMA_BACKEND_NETDEV_CM_H */
