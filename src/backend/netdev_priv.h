/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private state of the virtio-net device, shared by netdev_port.c (the device
 * as a port: socket, switch port, QPN space, its contexts), netdev.c (one
 * context: Ethernet queues, control queue, vhost callbacks) and netdev_roce.c
 * (the RoCE extension of a context).
 */
#ifndef VRDMA_BACKEND_NETDEV_PRIV_H
#define VRDMA_BACKEND_NETDEV_PRIV_H

#include <stdio.h>

#include "common/log.h"
#include "backend/netdev.h"
#include "port/pkt.h"
#include "roce/roce_tp.h"
#include "common/loop.h"
#include "port/port.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"
#include "vrdma/virtio_net_roce.h"

#define NETDEV_RX_MAX_BUFS 16 /* receive buffers one frame may span (MRG_RXBUF) */

struct rres_dev;
struct roce_tp;

struct netdev_ctx_totals;
struct netdev_port_cm;

/* Counters of the port's QP1 (netdev_port_cm.c; the CM's own are in src/cm). */
struct netdev_port_cm_stats {
	uint64_t rx;                 /* QP1 frames taken by the CM */
	uint64_t rx_bad;             /* not a valid GSI packet (dropped) */
	uint64_t tx;
	uint64_t tx_no_route;        /* no MAC and no context to resolve it */
	uint64_t tx_errors;
};

/* Counters of the port itself (its contexts count their own traffic). */
struct netdev_port_stats {
	uint64_t contexts_opened;
	uint64_t contexts_closed;
	uint64_t contexts_refused;   /* connections refused: contexts=N reached */
	uint64_t rx_steered;         /* RoCE frames handed to the context of their QPN */
	uint64_t rx_no_context;      /* frames dropped: no context open */
};

/* The device: one socket, one switch port, one QPN space; any number of
 * contexts (vhost-user connections) up to cfg.max_contexts. */
struct netdev_port {
	struct netdev_cfg cfg;
	struct loop *loop;
	struct sw *sw;
	struct port port;             /* on the switch, shared by the contexts */
	struct vhost_server *listener; /* accepts connections, no session */
	struct vhost_dev_ops listen_ops;
	struct rres_dev *pool;        /* index space and limits of the contexts */
	struct netdev *ctxs;          /* open and closing contexts, oldest first */
	unsigned nctx;                /* open contexts (closing ones excluded) */
	uint64_t next_ctx_id;
	bool link_down;
	struct netdev_port_stats stats;
	struct netdev_ctx_totals *closed; /* counters of closed contexts, summed */
	struct psec psec;             /* port security (netdev_sec.c) */
	struct vhost_mem_budget *mem_budget; /* mem=, shared by the contexts */
	struct roce_budget state_budget;     /* state-mem=, shared by the contexts */
	struct roce_sched send_sched;        /* packets per loop pass, shared likewise */
	struct netdev_port_cm *cm;    /* QP1 and the connection manager */
};

/* One context: what one vhost-user connection (one ibv_open_device) has. */
struct netdev {
	struct netdev_cfg cfg;
	struct loop *loop;
	struct sw *sw;
	struct port *port;        /* the device's switch port */
	struct netdev_port *dp;   /* the device */
	struct netdev *next;      /* in dp->ctxs */
	uint64_t id;              /* per device, from 1 */
	bool closing;             /* session ended, freed from closing_timer */
	struct loop_timer closing_timer;
	struct vhost_server *vs;
	struct vhost_dev_ops ops;
	struct loop_poller *poller;

	uint64_t features;        /* acked by the driver */
	uint8_t status;           /* last SET_STATUS */
	uint32_t hdr_len;         /* virtio_net_hdr size in use */
	uint8_t mac[6];           /* current MAC (CTRL_MAC_ADDR_SET may change it) */
	bool promisc, allmulti;
	bool link_down;           /* netdev_set_link(false) */

	struct vhost_vring *rxr, *txr, *ctrlr;
	uint16_t tx_idle;         /* polls in a row that found txr empty */
	bool tx_parked;           /* txr idle: its kicks on, not polled (netdev.c) */
	bool ctrl_more;           /* the last control batch left commands */
	struct pkt_queue rxq;     /* frames waiting for receive buffers */
	bool rx_stalled;          /* head frame needs more buffers than posted */
	bool rx_busy;             /* senders refused for a full rxq (woken at
				   * NETDEV_RXQ_LOW, netdev.c) */
	uint16_t rx_stalled_avail; /* buffers available when it stalled */
	unsigned broken_reported; /* net rings (bit idx) reported broken */
	unsigned rdma_rings_started; /* RDMA rings currently started */
	struct vq_elem elem;      /* scratch element (tx, ctrl) */
	struct vq_elem rx_elems[NETDEV_RX_MAX_BUFS];

	struct rres_dev *roce;    /* RoCE extension state (netdev_roce.c) */
	struct roce_tp *roce_tp;  /* its transport engine (src/roce/roce_tp.h) */
	struct netdev_stats stats;
	struct vlog_rl log_rl;    /* this device's share of the log */
};

/* What the port reads of a frame from the switch to steer it: a RoCE v2
 * frame (with the destination QPN of its BTH in *qpn), an ARP or ICMPv6 frame
 * (for every context's neighbour cache), or anything else. */
enum netdev_frame_kind { FRAME_OTHER, FRAME_NEIGH, FRAME_ROCE };
enum netdev_frame_kind netdev_port_classify(const uint8_t *data, uint32_t len, uint32_t *qpn);

/* A context for an accepted connection (fd taken in every case); NULL on
 * error. netdev_ctx_free only from the loop, never inside its callbacks. */
struct netdev *netdev_ctx_new(struct netdev_port *dp, int fd);
void netdev_ctx_free(struct netdev *nd);
/* The port's callback: nd's session ended (called from a timer). */
void netdev_port_ctx_closed(struct netdev_port *dp, struct netdev *nd);
/* A frame from the switch for this context (RoCE engine, else Ethernet). */
void netdev_ctx_input(struct netdev *nd, struct pkt *p);
bool netdev_ctx_has_rx(const struct netdev *nd);
/* Switch flow control: the frames waiting for the driver's receive buffers
 * are near the bound (the port refuses what can wait: netdev_port.c). */
bool netdev_ctx_rx_busy(struct netdev *nd);
/* End the session now if its front-end hung up; true if it did. */
bool netdev_ctx_check_hangup(struct netdev *nd);
void netdev_ctx_set_link(struct netdev *nd, bool up);
void netdev_ctx_dump_stats(const struct netdev *nd, FILE *f);

/* The device's counters: those of its closed contexts plus the open ones. */
struct rres_stats;
struct roce_tp_stats;
void netdev_port_sum(const struct netdev_port *dp, struct netdev_stats *nd,
		     struct vhost_server_stats *vs, struct rres_stats *roce,
		     struct roce_tp_stats *tp);

/* The port's connection manager on QP1 (netdev_port_cm.c). */
int netdev_port_cm_init(struct netdev_port *dp);
void netdev_port_cm_fini(struct netdev_port *dp);
/* A RoCE frame for QPN 1: true if the CM took it (p is then freed). */
bool netdev_port_cm_input(struct netdev_port *dp, struct pkt *p);
/* A CM command (VIRTIO_NET_CTRL_ROCE_CM_*) of context nd. */
uint8_t netdev_port_cm_ctrl(struct netdev *nd, uint8_t cmd, const void *in, size_t in_len,
			    void *out, size_t out_cap, size_t *out_len);
/* nd is gone: its connections are torn down, its listens freed. */
void netdev_port_cm_ctx_gone(struct netdev_port *dp, struct netdev *nd);
/* QP qpn of nd received data before its RTU (netdev_cm_comm_est). */
void netdev_port_cm_comm_est(struct netdev *nd, uint32_t qpn);
void netdev_port_cm_dump(const struct netdev_port *dp, FILE *f);

/* The RoCE extension (netdev_roce.c). */
int netdev_roce_init(struct netdev *nd);
void netdev_roce_attach_mem(struct netdev *nd);
void netdev_roce_set_mac(struct netdev *nd, const uint8_t mac[6]);
void netdev_roce_fini(struct netdev *nd);
void netdev_roce_reset(struct netdev *nd);
/* Features were (re)negotiated or cleared: ROCE_EXT on or off. */
void netdev_roce_set_features(struct netdev *nd);
void netdev_roce_link_changed(struct netdev *nd, bool up);
/* Virtqueues of the device (net, control and RDMA rings). */
uint32_t netdev_roce_ring_count(const struct netdev *nd);
/* max_rdma_srqs of the configuration space. */
uint32_t netdev_roce_max_srqs(const struct netdev *nd);
uint8_t netdev_roce_ctrl(struct netdev *nd, uint8_t cmd, const void *in, size_t in_len,
			 void *out, size_t out_cap, size_t *out_len);
/* A frame from the switch: true if the RoCE engine took it. */
bool netdev_roce_input(struct netdev *nd, struct pkt *p);
/* Switch flow control of a context: its receive queue is near full; room
 * returned at the switch, resume held transmits. */
bool netdev_roce_rx_busy(const struct netdev *nd);
void netdev_roce_tx_ready(struct netdev *nd);
bool netdev_roce_poll(struct netdev *nd);
bool netdev_roce_arm(struct netdev *nd);
void netdev_roce_disarm(struct netdev *nd);
void netdev_roce_ring_started(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_ring_stopped(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_ring_kick(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_dump_stats(const struct netdev *nd, FILE *f);
/* The frame, control and vhost counter lines of a stats dump (a context's
 * or a port's totals). */
void netdev_stats_print(const struct netdev_stats *s, const struct vhost_server_stats *vs,
			FILE *f);

#endif /* VRDMA_BACKEND_NETDEV_PRIV_H */
