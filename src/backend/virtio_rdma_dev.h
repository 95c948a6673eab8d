/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The standalone virtio-rdma device (id 42, include/vrdma/virtio_rdma.h) as a
 * second device model over the RoCE core (rres_dev.h): its control commands
 * are decoded here into the core's object operations, its configuration
 * space is derived from the core's attributes. docs/spec.md "The virtio-rdma
 * device" has every decision.
 */
#ifndef VRDMA_BACKEND_VIRTIO_RDMA_DEV_H
#define VRDMA_BACKEND_VIRTIO_RDMA_DEV_H

#include <stdio.h>

#include "backend/netdev.h"
#include "backend/rres_dev.h"
#include "vrdma/virtio_rdma.h"

struct loop;
struct vhost_server;
struct virtio_rdma_dev;

/* Configure rd (fresh from rres_dev_init with net_pairs ignored) as a
 * virtio-rdma device: atomics, fast registration and the IB access flags
 * are on from the start (the model has no feature to negotiate them). */
void virtio_rdma_dev_setup(struct rres_dev *rd);

/* The configuration space of the device. */
void virtio_rdma_dev_config(const struct rres_dev *rd, struct virtio_rdma_dev_config *cfg);

/*
 * Execute control command cmd with its request data in[0..in_len)
 * (untrusted, any alignment). On success the response data is written to out
 * (at most out_cap bytes) and its length to *out_len; on failure *out_len is
 * 0, out untouched and nothing changed. Returns RRES_OK or the counted reason.
 */
enum rres_err virtio_rdma_dev_ctrl_exec(struct rres_dev *rd, uint8_t cmd, const void *in,
					size_t in_len, void *out, size_t out_cap,
					size_t *out_len);
/* Name of a command ("MAP_MR_SG"), or "?" */
const char *virtio_rdma_dev_cmd_name(uint8_t cmd);

/* ---- the device served over vhost-user (virtio_rdma_dev.c) ---- */

struct virtio_rdma_dev_stats {
	uint64_t ctrl_ok, ctrl_err;   /* control commands */
	uint64_t ctrl_malformed;      /* requests without command or response byte */
	uint64_t ring_errors;         /* rings broken by the driver */
	uint64_t resets;
};

/* Listen on cfg->socket (cfg: socket, mac, ip, mtu, qps = M, cqs = N,
 * index for the port name) and serve one driver at a time; the device is a
 * port of sw (NULL: no network, frames dropped). NULL on error. */
struct sw;
struct roce_tp;
struct virtio_rdma_dev *virtio_rdma_dev_new(struct loop *loop, struct sw *sw,
					    const struct netdev_cfg *cfg);
const char *virtio_rdma_dev_socket(const struct virtio_rdma_dev *d);
/* The configuration it was made from (name, socket, addresses, limits). */
const struct netdev_cfg *virtio_rdma_dev_cfg(const struct virtio_rdma_dev *d);
/* Its transport (statistics). */
struct roce_tp *virtio_rdma_dev_transport(struct virtio_rdma_dev *d);
/* Print its counters (device, objects, commands, transport) to f. */
void virtio_rdma_dev_dump_stats(const struct virtio_rdma_dev *d, FILE *f);
void virtio_rdma_dev_free(struct virtio_rdma_dev *d);
struct vhost_server *virtio_rdma_dev_server(struct virtio_rdma_dev *d);
const struct rres_dev *virtio_rdma_dev_roce(const struct virtio_rdma_dev *d);
const struct virtio_rdma_dev_stats *virtio_rdma_dev_stats(const struct virtio_rdma_dev *d);

#endif
