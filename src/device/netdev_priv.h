/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private state of the virtio-net device, shared by netdev.c (Ethernet queues,
 * control queue, vhost callbacks) and netdev_roce.c (the RoCE extension).
 */
#ifndef VRDMA_DEVICE_NETDEV_PRIV_H
#define VRDMA_DEVICE_NETDEV_PRIV_H

#include <stdio.h>

#include "common/log.h"
#include "device/netdev.h"
#include "port/pkt.h"
#include "port/port.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"
#include "vrdma/virtio_net_roce.h"

#define NETDEV_RX_MAX_BUFS 16 /* receive buffers one frame may span (MRG_RXBUF) */

struct roce_dev;
struct roce_tp;

struct netdev {
	struct netdev_cfg cfg;
	struct loop *loop;
	struct sw *sw;
	struct port port;
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
	struct pkt_queue rxq;     /* frames waiting for receive buffers */
	bool rx_stalled;          /* head frame needs more buffers than posted */
	uint16_t rx_stalled_avail; /* buffers available when it stalled */
	unsigned broken_reported; /* net rings (bit idx) reported broken */
	unsigned rdma_rings_started; /* RDMA rings currently started */
	struct vq_elem elem;      /* scratch element (tx, ctrl) */
	struct vq_elem rx_elems[NETDEV_RX_MAX_BUFS];

	struct roce_dev *roce;    /* RoCE extension state (netdev_roce.c) */
	struct roce_tp *roce_tp;  /* its transport engine (src/roce/roce_tp.h) */
	struct netdev_stats stats;
	struct psec psec;         /* port security (netdev_sec.c) */
	struct vlog_rl log_rl;    /* this device's share of the log */
};

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
bool netdev_roce_poll(struct netdev *nd);
bool netdev_roce_arm(struct netdev *nd);
void netdev_roce_disarm(struct netdev *nd);
void netdev_roce_ring_started(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_ring_stopped(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_ring_kick(struct netdev *nd, struct vhost_vring *r);
void netdev_roce_dump_stats(const struct netdev *nd, FILE *f);

#endif /* VRDMA_DEVICE_NETDEV_PRIV_H */
