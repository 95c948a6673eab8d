/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Introspection of a running device for the control socket (vrdmactl(8)):
 * the device (a port), its contexts (one per vhost-user connection), their
 * resources (like "rdma resource show", each naming its context) and counter
 * sets (like "rdma statistic"), written through a struct kvw.
 */
#ifndef VRDMA_BACKEND_NETDEV_SHOW_H
#define VRDMA_BACKEND_NETDEV_SHOW_H

#include "mgmt/kv.h"

struct netdev_port;

/* The device: addresses, open contexts, resource totals (one object). */
void netdev_show_dev(const struct netdev_port *dp, struct kvw *k);
/* One object per context: id, state, MAC, its resource counts. */
void netdev_show_ctxs(const struct netdev_port *dp, struct kvw *k);
void netdev_show_qps(const struct netdev_port *dp, struct kvw *k);
void netdev_show_cqs(const struct netdev_port *dp, struct kvw *k);
void netdev_show_mrs(const struct netdev_port *dp, struct kvw *k);
void netdev_show_pds(const struct netdev_port *dp, struct kvw *k);
void netdev_show_srqs(const struct netdev_port *dp, struct kvw *k);
/* Device counters, summed over every context it had, and its switch port's
 * (one object). */
void netdev_show_stats(const struct netdev_port *dp, struct kvw *k);
/* Per-QP transport counters (one object per QP). */
void netdev_show_qp_stats(const struct netdev_port *dp, struct kvw *k);

#endif /* VRDMA_BACKEND_NETDEV_SHOW_H */
