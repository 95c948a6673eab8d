/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Glue between the virtio-net device and its RoCE extension: control class 6
 * goes to the resource model (rres_ctrl_exec), the RDMA virtqueues and RoCE
 * frames from the switch go to the transport engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "backend/netdev_priv.h"
#include "backend/netdev_sec.h"
#include "vrdma/virtio_net_roce_cm.h"
#include "backend/rres_dev.h"
#include "roce/roce_tp.h"
#include "vhost/vhost_server.h"

/* ---- what the transport engine needs from the device ---- */

static struct vhost_vring *nr_ring(void *ctx, uint32_t idx)
{
	struct netdev *nd = ctx;
	struct vhost_vring *r = nd->vs ? vhost_server_vring(nd->vs, idx) : NULL;

	return r && r->started ? r : NULL;
}

static void nr_xmit(void *ctx, struct pkt *p)
{
	struct netdev *nd = ctx;

	if (netdev_sec_tx_ok(nd, p))
		sw_input(nd->sw, nd->port, p);
	else
		pkt_free(p);
}

static int nr_xmit_try(void *ctx, struct pkt *p)
{
	struct netdev *nd = ctx;

	/* the engine's frames pass port security like the driver's (its GIDs
	 * were checked at ADD_GID; this also covers any other way in) */
	if (!netdev_sec_tx_ok(nd, p)) {
		pkt_free(p);
		return 0;
	}
	return sw_input_try(nd->sw, nd->port, p);
}

static void nr_rx_room(void *ctx)
{
	struct netdev *nd = ctx;

	sw_port_ready(nd->sw, nd->port);
}

static void nr_ring_error(void *ctx, struct vhost_vring *r)
{
	struct netdev *nd = ctx;

	if (r->dev_priv == (void *)1)
		return;
	r->dev_priv = (void *)1; /* reported */
	nd->stats.ring_errors++;
	LOG_PEER_RL(&nd->log_rl, "%s: ring %u broken by the driver (%s): device needs reset",
		 nd->cfg.socket, r->idx, r->vq.error ? r->vq.error : "?");
	vhost_vring_report_error(r);
}

static void nr_comm_est(void *ctx, uint32_t qpn)
{
	netdev_port_cm_comm_est(ctx, qpn);
}

static const struct roce_tp_ops netdev_roce_tp_ops = {
	.ring = nr_ring,
	.xmit = nr_xmit,
	.notify = roce_tp_notify_vring,
	.ring_error = nr_ring_error,
	.xmit_try = nr_xmit_try,
	.rx_room = nr_rx_room,
	.comm_est = nr_comm_est,
};

int netdev_roce_init(struct netdev *nd)
{
	struct rres_dev_cfg cfg;
	int rc;

	if (!nd->cfg.roce)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.mac, nd->cfg.mac, 6);
	cfg.has_ip4 = nd->cfg.has_ip4;
	cfg.ip4 = nd->cfg.ip4.s_addr;
	cfg.has_ip6 = nd->cfg.has_ip6;
	cfg.vlan_id = nd->cfg.vlan_id;
	memcpy(cfg.ip6, &nd->cfg.ip6, 16);
	cfg.eth_mtu = nd->cfg.mtu;
	cfg.net_pairs = 1;
	cfg.max_rdma_qps = nd->cfg.max_qps;
	cfg.max_rdma_cqs = nd->cfg.max_cqs;
	if (nd->cfg.roce_ext) {
		cfg.ext_offered = true;
		cfg.max_rdma_srqs = nd->cfg.max_srqs;
	}
	nd->roce = calloc(1, sizeof(*nd->roce));
	if (!nd->roce)
		return -ENOMEM;
	rc = rres_dev_init(nd->roce, &cfg);
	if (rc < 0) {
		free(nd->roce);
		nd->roce = NULL;
		return rc;
	}
	/* handles, QPNs and limits come from the device's shared space */
	if (nd->dp && nd->dp->pool)
		rres_dev_share_tables(nd->roce, nd->dp->pool, nd);
	nd->roce_tp = roce_tp_new(nd->roce, nd->loop, &netdev_roce_tp_ops, nd);
	if (!nd->roce_tp) {
		rres_dev_fini(nd->roce);
		free(nd->roce);
		nd->roce = NULL;
		return -ENOMEM;
	}
	roce_tp_set_ttl(nd->roce_tp, nd->cfg.ttl);
	if (nd->dp)
		roce_tp_share_send_budget(nd->roce_tp, &nd->dp->send_sched);
	return 0;
}

/* The driver memory table exists once the vhost server does. */
void netdev_roce_attach_mem(struct netdev *nd)
{
	if (nd->roce)
		rres_dev_set_mem(nd->roce, vhost_server_mem(nd->vs));
}

void netdev_roce_fini(struct netdev *nd)
{
	if (!nd->roce)
		return;
	rres_dev_fini(nd->roce);
	roce_tp_free(nd->roce_tp);
	nd->roce_tp = NULL;
	free(nd->roce);
	nd->roce = NULL;
}

void netdev_roce_reset(struct netdev *nd)
{
	if (!nd->roce)
		return;
	/* no event for what the reset itself changes */
	rres_dev_set_ext(nd->roce, false);
	rres_dev_reset(nd->roce);
	roce_tp_reset(nd->roce_tp);
	rres_dev_set_mac(nd->roce, nd->cfg.mac);
	netdev_roce_set_features(nd);
}

void netdev_roce_set_features(struct netdev *nd)
{
	if (nd->roce)
		rres_dev_set_ext(nd->roce, (nd->features & (1ull << VIRTIO_NET_F_ROCE)) &&
					   (nd->features & (1ull << VIRTIO_NET_F_ROCE_EXT)));
}

void netdev_roce_link_changed(struct netdev *nd, bool up)
{
	if (nd->roce)
		rres_dev_link_changed(nd->roce, up);
}

uint32_t netdev_roce_ring_count(const struct netdev *nd)
{
	return nd->roce ? rres_ring_count(nd->roce) : 3;
}

uint32_t netdev_roce_max_srqs(const struct netdev *nd)
{
	return nd->roce ? nd->roce->max_rdma_srqs : 0;
}

void netdev_roce_set_mac(struct netdev *nd, const uint8_t mac[6])
{
	if (nd->roce)
		rres_dev_set_mac(nd->roce, mac);
}

uint8_t netdev_roce_ctrl(struct netdev *nd, uint8_t cmd, const void *in, size_t in_len,
			 void *out, size_t out_cap, size_t *out_len)
{
	enum rres_err err;

	*out_len = 0;
	if (!nd->roce)
		return VIRTIO_NET_ERR;
	if (cmd >= VIRTIO_NET_CTRL_ROCE_CM_FIRST &&
	    cmd < VIRTIO_NET_CTRL_ROCE_CM_FIRST + VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS)
		return netdev_port_cm_ctrl(nd, cmd, in, in_len, out, out_cap, out_len);
	err = rres_ctrl_exec_err(nd->roce, cmd, in, in_len, out, out_cap, out_len);
	if (err != RRES_OK) {
		LOG_PEER_RL(&nd->log_rl, "%s: RoCE command %s failed: %s", nd->cfg.socket, rres_cmd_name(cmd),
			 rres_err_name(err));
		*out_len = 0;
		return VIRTIO_NET_ERR;
	}
	return VIRTIO_NET_OK;
}

bool netdev_roce_input(struct netdev *nd, struct pkt *p)
{
	return nd->roce_tp && roce_tp_input(nd->roce_tp, p);
}

/* Switch flow control of a context (the port's busy / ready, netdev_port.c). */
bool netdev_roce_rx_busy(const struct netdev *nd)
{
	return nd->roce_tp && roce_tp_rx_busy(nd->roce_tp);
}

void netdev_roce_tx_ready(struct netdev *nd)
{
	if (nd->roce_tp)
		roce_tp_tx_ready(nd->roce_tp);
}

bool netdev_roce_poll(struct netdev *nd)
{
	return nd->roce_tp && roce_tp_poll(nd->roce_tp);
}

bool netdev_roce_arm(struct netdev *nd)
{
	return nd->roce_tp && roce_tp_arm(nd->roce_tp);
}

void netdev_roce_disarm(struct netdev *nd)
{
	if (nd->roce_tp)
		roce_tp_disarm(nd->roce_tp);
}

void netdev_roce_ring_started(struct netdev *nd, struct vhost_vring *r)
{
	/* A restarted ring is a fresh ring: if the driver breaks it again,
	 * that is reported again. */
	r->dev_priv = NULL;
	if (nd->roce_tp)
		roce_tp_ring_started(nd->roce_tp, r);
}

void netdev_roce_ring_stopped(struct netdev *nd, struct vhost_vring *r)
{
	if (nd->roce_tp)
		roce_tp_ring_stopped(nd->roce_tp, r);
}

void netdev_roce_ring_kick(struct netdev *nd, struct vhost_vring *r)
{
	if (nd->roce_tp)
		roce_tp_ring_kick(nd->roce_tp, r);
}

void netdev_roce_dump_stats(const struct netdev *nd, FILE *f)
{
	const struct rres_stats *s;
	struct rres_counts c;

	if (!nd->roce)
		return;
	s = &nd->roce->stats;
	rres_dev_counts(nd->roce, &c);
	fprintf(f, "  roce objects pd %u mr %u cq %u qp %u ah %u srq %u mw %u\n", c.pd, c.mr,
		c.cq, c.qp, c.ah, c.srq, c.mw);
	if (nd->roce->ext)
		fprintf(f, "  roce events raised %llu merged %llu\n",
			(unsigned long long)nd->roce->events_raised,
			(unsigned long long)nd->roce->events_merged);
	fprintf(f, "  roce commands ok %llu err %llu", (unsigned long long)s->ok,
		(unsigned long long)s->err);
	for (int i = 1; i < RRES_ERR_MAX; i++)
		if (s->errs[i])
			fprintf(f, " %s %llu", rres_err_name(i), (unsigned long long)s->errs[i]);
	fprintf(f, "\n");
	if (nd->roce_tp)
		roce_tp_dump_stats(nd->roce_tp, f);
}
