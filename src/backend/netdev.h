/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A virtio-net device with the RoCE extension, served over one vhost-user
 * socket and attached to the switch as one port. The device is a port (MAC,
 * addresses, QPN space, switch port, counters); each vhost-user connection to
 * its socket is a context with its own rings, memory table and RDMA objects,
 * up to cfg.max_contexts at once (docs/design.md, "Contexts of a device").
 *
 * Queues (N = 1 queue pair): 0 receiveq, 1 transmitq, 2 controlq, then the
 * RDMA queues of the RoCE extension (completion queues, then send/receive
 * pairs), handed to the RoCE device (src/backend/rres_dev.h).
 */
#ifndef VRDMA_BACKEND_NETDEV_H
#define VRDMA_BACKEND_NETDEV_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "port/port.h"
#include "port/port_security.h"

struct loop;
struct sw;
struct netdev_port;

struct netdev_cfg {
	char socket[108];       /* vhost-user socket path */
	uint8_t mac[6];
	bool has_ip4;
	struct in_addr ip4;
	uint8_t ip4_prefix;
	bool has_ip6;
	struct in6_addr ip6;
	uint8_t ip6_prefix;
	uint16_t mtu;            /* Ethernet MTU (IP packet size) */
	uint8_t ttl;             /* RoCE IPv4 TTL / IPv6 hop limit (0: 64) */
	uint16_t vlan_id;        /* RoCE frames 802.1Q-tagged (0: untagged) */
	int thread;              /* thread=K: the daemon's loop thread (-1: round robin) */
	uint32_t max_qps;        /* config max_rdma_qps */
	uint32_t max_cqs;        /* config max_rdma_cqs */
	bool roce;               /* offer VIRTIO_NET_F_ROCE */
	bool roce_ext;           /* offer VIRTIO_NET_F_ROCE_EXT (with roce) */
	uint32_t max_srqs;       /* config max_rdma_srqs (with roce_ext) */
	unsigned index;          /* position on the command line (names, MAC) */
	/* Security and budgets (netdev_sec.c, docs/spec.md "Security model"). */
	struct psec_cfg psec;    /* port-security=, mac-change=, allow-ip= */
	uint64_t mem_max;        /* mem=: guest memory the driver may map */
	uint64_t state_mem_max;  /* state-mem=: daemon memory for its queues */
	uint32_t max_contexts;   /* connections served at once (contexts=N) */
	char name[32];           /* port name; "" = dev<index> */
	uint8_t model;           /* NETDEV_MODEL_* (model=...) */
};

/* Device models: the virtio-net device with the RoCE extension (default),
 * or the standalone virtio-rdma device, id 42 (src/backend/virtio_rdma_dev.h:
 * socket, mac, ip, mtu, qps = its max_qp, cqs = its max_cq). */
#define NETDEV_MODEL_NET         0
#define NETDEV_MODEL_VIRTIO_RDMA 1

/* Defaults for cfg fields not given on the command line. */
/* thread=K at most (the daemon checks K against its --threads) */
#define NETDEV_THREAD_MAX 63
#define NETDEV_DEFAULT_MTU 1500
#define NETDEV_DEFAULT_QPS 1024
#define NETDEV_DEFAULT_CQS 1024
#define NETDEV_MAX_QPS 16384
#define NETDEV_MAX_CQS 16384
#define NETDEV_DEFAULT_SRQS 1024
#define NETDEV_MAX_SRQS 16384
#define NETDEV_DEFAULT_CONTEXTS 64
#define NETDEV_MAX_CONTEXTS 1024
/* virtqueues of a device: 2 + 1 + cqs + 2 * qps (+ 1 + srqs with ext) */
#define NETDEV_MAX_VQS 65536

/* Parse "socket=PATH[,mac=MAC][,ip=ADDR/PREFIX][,ip6=ADDR/PREFIX][,ttl=N][,vlan=ID][,mtu=N]
 * [,qps=N][,cqs=N][,roce=on|off][,ext=on|off][,srqs=N][,contexts=N][,port-security=on|off]
 * [,mac-change=on|off][,allow-ip=CIDR]...[,mem=SIZE][,state-mem=SIZE]" into cfg (defaults filled in; the MAC
 * defaults to 52:54:00 + 3 bytes derived from index). Returns 0 or -EINVAL
 * with a message in err (errlen bytes). */
int netdev_parse_cfg(const char *spec, unsigned index, struct netdev_cfg *cfg,
		     char *err, size_t errlen);

/* Create the device: listen on cfg->socket and attach to sw.
 * Returns NULL with errno set (message logged). */
struct netdev_port *netdev_port_new(struct loop *loop, struct sw *sw,
				   const struct netdev_cfg *cfg);
/* Close every context, detach, unlink the socket. */
void netdev_port_free(struct netdev_port *dp);

const struct netdev_cfg *netdev_port_cfg(const struct netdev_port *dp);
/* Set the link status (config status VIRTIO_NET_S_LINK_UP, up at start) of
 * every context; with ROCE_EXT negotiated a change raises PORT_ACTIVE /
 * PORT_ERR. */
void netdev_port_set_link(struct netdev_port *dp, bool up);
struct port *netdev_port_switch_port(struct netdev_port *dp);
/* Open contexts. */
unsigned netdev_port_contexts(const struct netdev_port *dp);

struct netdev_stats {
	uint64_t tx_frames, tx_bytes, tx_errors;     /* from the driver */
	uint64_t tx_spoofed;                         /* refused by port security, dropped */
	uint64_t rx_frames, rx_bytes;                /* to the driver */
	uint64_t rx_dropped_no_buffer;               /* no rx buffer / queue full */
	uint64_t rx_dropped_too_big;                 /* frame larger than buffers */
	uint64_t rx_bad_buffer;                      /* unusable receive buffers */
	uint64_t rx_filtered;                        /* not for our MAC */
	uint64_t ctrl_ok, ctrl_err;                  /* control commands */
	uint64_t ring_errors;                        /* rings broken by the driver */
	uint64_t resets;
	uint64_t tx_parks, tx_unparks;               /* idle tx ring parked, woken by a kick */
};
/* Print counters (port, then each context: device, vhost, rings, RoCE) to f. */
void netdev_port_dump_stats(const struct netdev_port *dp, void *f);

#endif /* VRDMA_BACKEND_NETDEV_H */
