/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device (id 42) served over one vhost-user connection: its
 * features (VERSION_1 only), its configuration space, its control queue
 * (ring 0, decoded by virtio_rdma_ctrl.c into the RoCE core), and its
 * completion / send / receive rings, processed by the RoCE transport
 * (src/roce, elements translated at the ring boundary by roce_virtio_rdma.c).
 * The device is a port of the switch; having no Ethernet queues, its
 * transport answers ARP / neighbour solicitations for its addresses.
 */
#include "backend/virtio_rdma_dev.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "backend/netdev_sec.h"
#include "port/pkt.h"
#include "port/port.h"
#include "roce/roce_tp.h"
#include "vhost/vhost_mem.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"

/* Largest request (MODIFY_QP) and response (QUERY_PORT) are far below. */
#define CTRL_MAX_REQ 512
#define CTRL_MAX_RSP 512

struct virtio_rdma_dev {
	struct netdev_cfg cfg;
	struct vhost_server *vs;
	struct rres_dev rd;
	struct roce_tp *tp;
	struct sw *sw;
	struct port port;
	bool attached;
	struct loop *loop;
	struct loop_poller *poller;
	struct vhost_vring *ctrlr;
	struct vq_elem elem;
	uint64_t features;
	struct virtio_rdma_dev_stats stats;
	/* the tenant's limits, as on the virtio-net device (netdev_sec.h) */
	struct psec psec;
	bool psec_on;                 /* MAC pinned, addresses registered */
	struct vhost_mem_budget *mem_budget;
	struct roce_budget state_budget;
	struct vlog_rl log_rl;
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
	enum rres_err err;

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
	if (req[0] == VIRTIO_RDMA_DEV_CMD_ADD_GID &&
	    in_len == sizeof(struct virtio_rdma_dev_cmd_add_gid) &&
	    !netdev_sec_addr_ok(&d->psec, req + 1, &d->log_rl, d->cfg.socket))
		err = RRES_ERR_GID; /* another device's address (port security) */
	else
		err = virtio_rdma_dev_ctrl_exec(&d->rd, req[0], in_len ? req + 1 : NULL, in_len,
						rsp + 1, MIN((size_t)e->in_len - 1,
							     (size_t)CTRL_MAX_RSP), &out_len);
	rsp[0] = err ? VIRTIO_RDMA_DEV_CTRL_ERR : VIRTIO_RDMA_DEV_CTRL_OK;
	if (err)
		d->stats.ctrl_err++;
	else
		d->stats.ctrl_ok++;
	vq_elem_write(e, 0, rsp, 1 + out_len);
	vq_dev_push(&r->vq, e->head, (uint32_t)(1 + out_len));
}

static void dev_ctrl_broken(struct virtio_rdma_dev *d, struct vhost_vring *r)
{
	d->stats.ring_errors++;
	vhost_vring_report_error(r);
}

static bool dev_process_ctrl(struct virtio_rdma_dev *d)
{
	struct vhost_vring *r = d->ctrlr;
	unsigned n = 0;

	if (!r || r->vq.broken)
		return false;
	/* at most one ring's worth per kick: bounded work per event */
	while (n < r->num) {
		int rc = vq_dev_pop(&r->vq, &d->elem);

		if (rc == 0)
			break;
		if (rc < 0) {
			dev_ctrl_broken(d, r);
			break;
		}
		n++;
		dev_ctrl_one(d, r);
	}
	if (n)
		vhost_vring_notify(r);
	return n > 0;
}

static void dev_ring_started(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (r->idx == 0) {
		d->ctrlr = r;
		return;
	}
	r->dev_priv = NULL; /* a restarted ring is reported again if broken */
	roce_tp_ring_started(d->tp, r);
}

static void dev_ring_stopped(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (d->ctrlr == r)
		d->ctrlr = NULL;
	else
		roce_tp_ring_stopped(d->tp, r);
}

static void dev_ring_kick(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (r == d->ctrlr)
		dev_process_ctrl(d);
	else
		roce_tp_ring_kick(d->tp, r);
}

static void dev_reset(void *ctx)
{
	struct virtio_rdma_dev *d = ctx;

	/* no event for what the reset itself changes */
	rres_dev_set_ext(&d->rd, false);
	rres_dev_reset(&d->rd);
	roce_tp_reset(d->tp);
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

	rres_dev_set_mem(&d->rd, vhost_server_mem(d->vs));
}

/* ---- what the transport needs from the device ---- */

static struct vhost_vring *tp_ring(void *ctx, uint32_t idx)
{
	struct virtio_rdma_dev *d = ctx;
	struct vhost_vring *r = d->vs ? vhost_server_vring(d->vs, idx) : NULL;

	return r && r->started ? r : NULL;
}

static void tp_xmit(void *ctx, struct pkt *p)
{
	struct virtio_rdma_dev *d = ctx;
	enum psec_verdict v;

	if (!d->attached) {
		pkt_free(p);
		return;
	}
	/* Every frame of the device, RoCE and ARP / ND answers alike, carries
	 * its own MAC and addresses (its GIDs were checked at ADD_GID). */
	v = psec_check_tx(&d->psec, p->data, p->len);
	if (v != PSEC_OK) {
		LOG_PEER_RL(&d->log_rl, "%s: frame dropped by port security: %s", d->cfg.socket,
			    psec_verdict_name(v));
		pkt_free(p);
		return;
	}
	sw_input(d->sw, &d->port, p);
}

static void tp_ring_error(void *ctx, struct vhost_vring *r)
{
	struct virtio_rdma_dev *d = ctx;

	if (r->dev_priv == (void *)1)
		return;
	r->dev_priv = (void *)1; /* reported */
	d->stats.ring_errors++;
	LOG_PEER("%s: ring %u broken by the driver (%s): device needs reset", d->cfg.socket,
		 r->idx, r->vq.error ? r->vq.error : "?");
	vhost_vring_report_error(r);
}

static const struct roce_tp_ops dev_tp_ops = {
	.ring = tp_ring,
	.xmit = tp_xmit,
	.notify = roce_tp_notify_vring,
	.ring_error = tp_ring_error,
};

/* A frame from the switch: RoCE for us to the transport; ARP / ND for us
 * were copied by it (it answers them); everything else is not ours. */
static void dev_port_xmit(struct port *port, struct pkt *p)
{
	struct virtio_rdma_dev *d = port->priv;

	if (!roce_tp_input(d->tp, p))
		pkt_free(p);
}

static void dev_port_destroy(struct port *port)
{
	(void)port; /* owned by the device */
}

static const struct port_ops dev_port_ops = {
	.xmit = dev_port_xmit,
	.destroy = dev_port_destroy,
};

static bool dev_poll(void *arg)
{
	struct virtio_rdma_dev *d = arg;
	bool work = roce_tp_poll(d->tp);

	/* a control ring without kick eventfd is polled */
	if (d->ctrlr && d->ctrlr->kick_fd < 0)
		work |= dev_process_ctrl(d);
	return work;
}

static bool dev_arm(void *arg)
{
	struct virtio_rdma_dev *d = arg;
	bool pending = roce_tp_arm(d->tp);

	if (d->ctrlr && d->ctrlr->kick_fd < 0 && !d->ctrlr->vq.broken) {
		if (vq_dev_avail(&d->ctrlr->vq))
			pending = true;
		else if (d->ctrlr->vq.broken) /* a corrupt avail index */
			dev_ctrl_broken(d, d->ctrlr);
	}
	return pending;
}

static void dev_disarm(void *arg)
{
	struct virtio_rdma_dev *d = arg;

	roce_tp_disarm(d->tp);
}

static const struct loop_poller_ops dev_poller_ops = {
	.poll = dev_poll,
	.arm = dev_arm,
	.disarm = dev_disarm,
};

struct virtio_rdma_dev *virtio_rdma_dev_new(struct loop *loop, struct sw *sw,
					    const struct netdev_cfg *cfg)
{
	struct virtio_rdma_dev *d = calloc(1, sizeof(*d));
	struct vhost_dev_ops ops;
	struct rres_dev_cfg rc;

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
	if (rres_dev_init(&d->rd, &rc)) {
		free(d);
		return NULL;
	}
	virtio_rdma_dev_setup(&d->rd);
	d->loop = loop;
	d->sw = sw;
	d->tp = roce_tp_new(&d->rd, loop, &dev_tp_ops, d);
	if (!d->tp)
		goto fail;
	if (sw) {
		d->port.ops = &dev_port_ops;
		d->port.hairpin = true;
		d->port.priv = d;
		snprintf(d->port.name, sizeof(d->port.name), "rdma%u", cfg->index);
		if (sw_attach(sw, &d->port))
			goto fail;
		d->attached = true;
		if (netdev_sec_port_init(&d->psec, sw, &d->port, cfg, loop))
			goto fail;
		d->psec_on = true;
	} else {
		psec_init(&d->psec, &cfg->psec, cfg->mac, cfg->has_ip4 ? &cfg->ip4 : NULL,
			  cfg->has_ip6 ? &cfg->ip6 : NULL);
	}
	/* budgets of the device (one connection at a time, the same options) */
	d->mem_budget = vhost_mem_budget_new(cfg->mem_max);
	if (!d->mem_budget)
		goto fail;
	d->state_budget.max = cfg->state_mem_max;
	roce_tp_set_state_budget(d->tp, cfg->state_mem_max);
	roce_tp_share_state_budget(d->tp, &d->state_budget);
	d->tp->log_rl = &d->log_rl;
	d->poller = loop_add_poller(loop, &dev_poller_ops, d);
	if (!d->poller)
		goto fail;
	memset(&ops, 0, sizeof(ops));
	ops.features = (1ull << VIRTIO_F_VERSION_1);
	ops.protocol_features = ~0ull;
	ops.max_rings = rres_ring_count(&d->rd); /* 1 + N + 2M */
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
	if (!d->vs)
		goto fail;
	vhost_server_mem(d->vs)->max_mapped = cfg->mem_max;
	vhost_server_mem(d->vs)->budget = d->mem_budget;
	rres_dev_set_mem(&d->rd, vhost_server_mem(d->vs));
	return d;
fail:
	virtio_rdma_dev_free(d);
	return NULL;
}

void virtio_rdma_dev_free(struct virtio_rdma_dev *d)
{
	if (!d)
		return;
	/* the server stops the rings and resets first (callbacks use tp) */
	vhost_server_free(d->vs);
	if (d->poller)
		loop_del_poller(d->loop, d->poller);
	if (d->psec_on)
		netdev_sec_port_fini(&d->psec);
	if (d->attached)
		sw_detach(d->sw, &d->port);
	rres_dev_fini(&d->rd);
	roce_tp_free(d->tp);
	vhost_mem_budget_put(d->mem_budget);
	free(d);
}

const char *virtio_rdma_dev_socket(const struct virtio_rdma_dev *d)
{
	return d->cfg.socket;
}

const struct netdev_cfg *virtio_rdma_dev_cfg(const struct virtio_rdma_dev *d)
{
	return &d->cfg;
}

struct roce_tp *virtio_rdma_dev_transport(struct virtio_rdma_dev *d)
{
	return d->tp;
}

void virtio_rdma_dev_dump_stats(const struct virtio_rdma_dev *d, FILE *f)
{
	const struct rres_stats *s = &d->rd.stats;
	struct rres_counts c;

	rres_dev_counts(&d->rd, &c);
	fprintf(f, "virtio-rdma %s: ctrl ok %llu err %llu malformed %llu ring_errors %llu "
		   "resets %llu features %#llx\n", d->cfg.socket, (unsigned long long)d->stats.ctrl_ok,
		(unsigned long long)d->stats.ctrl_err, (unsigned long long)d->stats.ctrl_malformed,
		(unsigned long long)d->stats.ring_errors, (unsigned long long)d->stats.resets,
		(unsigned long long)d->features);
	fprintf(f, "  roce objects pd %u mr %u cq %u qp %u\n", c.pd, c.mr, c.cq, c.qp);
	netdev_sec_dump(&d->psec, &d->port, d->mem_budget, &d->state_budget, f);
	fprintf(f, "  logs_suppressed %llu\n", d->log_rl.suppressed);
	fprintf(f, "  roce commands ok %llu err %llu", (unsigned long long)s->ok,
		(unsigned long long)s->err);
	for (int i = 1; i < RRES_ERR_MAX; i++)
		if (s->errs[i])
			fprintf(f, " %s %llu", rres_err_name(i), (unsigned long long)s->errs[i]);
	fprintf(f, "\n");
	if (d->stats.ctrl_ok + d->stats.ctrl_err)
		roce_tp_dump_stats(d->tp, f);
}

struct vhost_server *virtio_rdma_dev_server(struct virtio_rdma_dev *d)
{
	return d->vs;
}

const struct rres_dev *virtio_rdma_dev_roce(const struct virtio_rdma_dev *d)
{
	return &d->rd;
}

const struct virtio_rdma_dev_stats *virtio_rdma_dev_stats(const struct virtio_rdma_dev *d)
{
	return &d->stats;
}
