/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device (id 42) served over one vhost-user connection: its
 * features (VERSION_1 only), its configuration space, and its control queue
 * (ring 0), decoded by virtio_rdma_ctrl.c into the RoCE core. Completion,
 * send and receive rings exist in the layout but are not processed yet
 * (docs/spec.md "The virtio-rdma device", "Not yet done").
 */
#include "device/virtio_rdma_dev.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"

/* Largest request (MODIFY_QP) and response (QUERY_PORT) are far below. */
#define CTRL_MAX_REQ 512
#define CTRL_MAX_RSP 512

struct virtio_rdma_dev {
	struct netdev_cfg cfg;
	struct vhost_server *vs;
	struct roce_dev rd;
	struct vhost_vring *ctrlr;
	struct vq_elem elem;
	uint64_t features;
	struct virtio_rdma_dev_stats stats;
};

static uint32_t dev_max_qps(const struct netdev_cfg *cfg)
{
	return MIN(MAX(cfg->max_qps, 1u), (uint32_t)VIRTIO_NET_ROCE_MAX_QPS - 1);
}

static uint32_t dev_max_cqs(const struct netdev_cfg *cfg)
{
	return MIN(MAX(cfg->max_cqs, 1u), (uint32_t)VIRTIO_RDMA_DEV_MAX_CQS);
}

static int dev_set_features(void *ctx, uint64_t features)
{
	struct virtio_rdma_dev *d = ctx;

	d->features = features;
	return 0;
}

static int dev_get_config(void *ctx, uint32_t offset, void *buf, uint32_t len)
{
	struct virtio_rdma_dev *d = ctx;
	struct virtio_rdma_dev_config c;

	if (offset > sizeof(c) || len > sizeof(c) - offset)
		return -EINVAL;
	virtio_rdma_dev_config(&d->rd, &c);
	memcpy(buf, (uint8_t *)&c + offset, len);
	return 0;
}

static int dev_set_config(void *ctx, uint32_t offset, const void *buf, uint32_t len)
{
	(void)ctx;
	(void)offset;
	(void)buf;
	(void)len;
	return -EPERM; /* "The driver MUST NOT write to config." */
}

/* One control request: u8 command + data, then u8 response + data. */
static void dev_ctrl_one(struct virtio_rdma_dev *d, struct vhost_vring *r)
{
	struct vq_elem *e = &d->elem;
	uint8_t req[CTRL_MAX_REQ], rsp[1 + CTRL_MAX_RSP];
	size_t in_len, out_len = 0;
	enum roce_err err;

	if (e->out_len < 1 || e->in_len < 1 || e->out_len > sizeof(req)) {
		d->stats.ctrl_malformed++;
		LOG_PEER("%s: malformed control request (%u readable, %u writable bytes)",
			 d->cfg.socket, e->out_len, e->in_len);
		if (e->in_len >= 1) {
			rsp[0] = VIRTIO_RDMA_DEV_CTRL_ERR;
			vq_elem_write(e, 0, rsp, 1);
			vq_dev_push(&r->vq, e->head, 1);
		} else {
			vq_dev_push(&r->vq, e->head, 0);
		}
		return;
	}
	vq_elem_read(e, 0, req, e->out_len);
	in_len = e->out_len - 1;
	err = virtio_rdma_dev_ctrl_exec(&d->rd, req[0], in_len ? req + 1 : NULL, in_len, rsp + 1,
					MIN((size_t)e->in_len - 1, (size_t)CTRL_MAX_RSP), &out_len);
	rsp[0] = err ? VIRTIO_RDMA_DEV_CTRL_ERR : VIRTIO_RDMA_DEV_CTRL_OK;
	if (err)
		d->stats.ctrl_err++;
	else
		d->stats.ctrl_ok++;
	vq_elem_write(e, 0, rsp, 1 + out_len);
	vq_dev_push(&r->vq, e->head, (uint32_t)(1 + out_len));
}

static void dev_process_ctrl(struct virtio_rdma_dev *d)
{
	struct vhost_vring *r = d->ctrlr;
	unsigned n = 0;

	if (!r || r->vq.broken)
		return;
	/* at most one ring's worth per kick: bounded work per event */
	while (n < r->num) {
		int rc = vq_dev_pop(&r->vq, &d->elem);

		if (rc == 0)
			break;
		if (rc < 0) {
			d->stats.ring_errors++;
			vhost_vring_report_error(r);
			break;
		}
		n++;
		dev_ctrl_one(d, r);
	}
	if (n)
		vhost_vring_notify(r);
}

static void dev_ring_started(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (r->idx == 0)
		d->ctrlr = r;
}

static void dev_ring_stopped(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (d->ctrlr == r)
		d->ctrlr = NULL;
}

static void dev_ring_kick(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (r == d->ctrlr)
		dev_process_ctrl(d);
}

static void dev_reset(void *ctx)
{
	struct virtio_rdma_dev *d = ctx;

	/* no event for what the reset itself changes */
	roce_dev_set_ext(&d->rd, false);
	roce_dev_reset(&d->rd);
	virtio_rdma_dev_setup(&d->rd);
	d->features = 0;
	d->stats.resets++;
}

static void dev_set_status(void *ctx, uint8_t status)
{
	struct virtio_rdma_dev *d = ctx;

	if (status == 0)
		dev_reset(d);
}

static void dev_mem_changed(void *ctx)
{
	struct virtio_rdma_dev *d = ctx;

	roce_dev_set_mem(&d->rd, vhost_server_mem(d->vs));
}

struct virtio_rdma_dev *virtio_rdma_dev_new(struct loop *loop, const struct netdev_cfg *cfg)
{
	struct virtio_rdma_dev *d = calloc(1, sizeof(*d));
	struct vhost_dev_ops ops;
	struct roce_dev_cfg rc;

	if (!d)
		return NULL;
	d->cfg = *cfg;
	memset(&rc, 0, sizeof(rc));
	memcpy(rc.mac, cfg->mac, 6);
	rc.has_ip4 = cfg->has_ip4;
	rc.ip4 = cfg->ip4.s_addr;
	rc.eth_mtu = cfg->mtu;
	rc.max_rdma_qps = dev_max_qps(cfg) + 1; /* pair 0 is not a QP */
	rc.max_rdma_cqs = dev_max_cqs(cfg);
	if (roce_dev_init(&d->rd, &rc)) {
		free(d);
		return NULL;
	}
	virtio_rdma_dev_setup(&d->rd);
	memset(&ops, 0, sizeof(ops));
	ops.features = (1ull << VIRTIO_F_VERSION_1);
	ops.protocol_features = ~0ull;
	ops.max_rings = roce_ring_count(&d->rd); /* 1 + N + 2M */
	ops.queue_num = 1;
	ops.set_features = dev_set_features;
	ops.get_config = dev_get_config;
	ops.set_config = dev_set_config;
	ops.ring_started = dev_ring_started;
	ops.ring_stopped = dev_ring_stopped;
	ops.ring_kick = dev_ring_kick;
	ops.set_status = dev_set_status;
	ops.reset = dev_reset;
	ops.mem_changed = dev_mem_changed;
	d->vs = vhost_server_new(loop, cfg->socket, &ops, d);
	if (!d->vs) {
		roce_dev_fini(&d->rd);
		free(d);
		return NULL;
	}
	roce_dev_set_mem(&d->rd, vhost_server_mem(d->vs));
	return d;
}

void virtio_rdma_dev_free(struct virtio_rdma_dev *d)
{
	if (!d)
		return;
	vhost_server_free(d->vs);
	roce_dev_fini(&d->rd);
	free(d);
}

struct vhost_server *virtio_rdma_dev_server(struct virtio_rdma_dev *d)
{
	return d->vs;
}

const struct roce_dev *virtio_rdma_dev_roce(const struct virtio_rdma_dev *d)
{
	return &d->rd;
}

const struct virtio_rdma_dev_stats *virtio_rdma_dev_stats(const struct virtio_rdma_dev *d)
{
	return &d->stats;
}
