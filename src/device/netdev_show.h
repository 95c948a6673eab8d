/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Introspection of a running device for the control socket (vrdmactl(8)):
 * one object per device, resource (like "rdma resource show") or counter
 * set (like "rdma statistic"), written through a struct kvw.
 */
#ifndef VRDMA_DEVICE_NETDEV_SHOW_H
#define VRDMA_DEVICE_NETDEV_SHOW_H

#include "mgmt/kv.h"

struct netdev;

void netdev_show_dev(const struct netdev *nd, struct kvw *k);
void netdev_show_qps(const struct netdev *nd, struct kvw *k);
void netdev_show_cqs(const struct netdev *nd, struct kvw *k);
void netdev_show_mrs(const struct netdev *nd, struct kvw *k);
void netdev_show_pds(const struct netdev *nd, struct kvw *k);
void netdev_show_srqs(const struct netdev *nd, struct kvw *k);
/* Device and port counters (one object). */
void netdev_show_stats(const struct netdev *nd, struct kvw *k);
/* Per-QP transport counters (one object per QP). */
void netdev_show_qp_stats(const struct netdev *nd, struct kvw *k);

#endif /* VRDMA_DEVICE_NETDEV_SHOW_H */
