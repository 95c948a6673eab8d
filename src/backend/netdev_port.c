/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device as a port: its socket, its switch port, the QPN space and limits
 * its contexts share, and receive steering. Every accepted connection becomes
 * a context (netdev.c) until cfg.max_contexts are open; a connection beyond
 * that is closed at once (counted, logged), never left waiting.
 *
 * Receive: a RoCE frame goes to the context owning its destination QPN (QPNs
 * are unique per device); ARP and neighbour discovery frames are offered to
 * every context's neighbour cache; everything else (Ethernet, RoCE frames for
 * no live QP, QP1 without a GSI owner) goes to the primary context: the
 * oldest one with its Ethernet receive queue started, else the oldest one.
 * With one context (a QEMU or DPDK front-end) that is exactly the old path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "backend/netdev_priv.h"
#include "backend/netdev_sec.h"
#include "backend/rres_dev.h"
#include "roce/roce_hdr.h"
#include "vhost/vhost_mem.h"
#include "roce/roce_tp.h"

/* Counters summed over contexts: those of the closed ones are kept, so the
 * device's counters never lose what a context counted. */
struct netdev_ctx_totals {
	struct netdev_stats nd;
	struct vhost_server_stats vs;
	struct rres_stats roce;
	struct roce_tp_stats tp;
};

static void counters_add(void *sum, const void *s, size_t size)
{
	uint64_t *d = sum;
	const uint64_t *a = s;

	for (size_t i = 0; i < size / sizeof(uint64_t); i++)
		d[i] += a[i];
}

static void netdev_port_totals_add(struct netdev_ctx_totals *t, const struct netdev *nd)
{
	_Static_assert(sizeof(struct netdev_stats) % 8 == 0, "counters only");
	_Static_assert(sizeof(struct vhost_server_stats) % 8 == 0, "counters only");
	_Static_assert(sizeof(struct rres_stats) % 8 == 0, "counters only");
	counters_add(&t->nd, &nd->stats, sizeof(t->nd));
	counters_add(&t->vs, vhost_server_stats(nd->vs), sizeof(t->vs));
	if (nd->roce)
		counters_add(&t->roce, &nd->roce->stats, sizeof(t->roce));
	if (nd->roce_tp)
		roce_tp_stats_add(&t->tp, &nd->roce_tp->stats);
}

static void netdev_port_totals_dump(const struct netdev_ctx_totals *t, FILE *f)
{
	const struct netdev_stats *s = &t->nd;
	const struct vhost_server_stats *vs = &t->vs;

	netdev_stats_print(s, vs, f);
	fprintf(f, "  roce commands ok %llu err %llu", (unsigned long long)t->roce.ok,
		(unsigned long long)t->roce.err);
	for (int i = 1; i < RRES_ERR_MAX; i++)
		if (t->roce.errs[i])
			fprintf(f, " %s %llu", rres_err_name(i), (unsigned long long)t->roce.errs[i]);
	fprintf(f, "\n");
	roce_tp_stats_dump(&t->tp, f);
}

/* Only a few header bytes are read; the context's transport validates the
 * frame in full. */
enum netdev_frame_kind netdev_port_classify(const uint8_t *d, uint32_t len, uint32_t *qpn)
{
	uint32_t l3 = ROCE_ETH_HLEN, l4;
	uint16_t type;

	if (len < ROCE_ETH_HLEN)
		return FRAME_OTHER;
	type = get_be16(d + 12);
	if (type == ROCE_ETH_P_8021Q) {
		if (len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			return FRAME_OTHER;
		type = get_be16(d + 16);
		l3 += ROCE_VLAN_HLEN;
	}
	if (type == 0x0806)
		return FRAME_NEIGH;
	if (type == ROCE_ETH_P_IPV4) {
		uint32_t ihl;

		if (len < l3 + ROCE_IPV4_HLEN)
			return FRAME_OTHER;
		ihl = (d[l3] & 0x0fu) * 4;
		if (ihl < ROCE_IPV4_HLEN || d[l3 + 9] != ROCE_IPPROTO_UDP)
			return FRAME_OTHER;
		l4 = l3 + ihl;
	} else if (type == ROCE_ETH_P_IPV6) {
		if (len < l3 + ROCE_IPV6_HLEN)
			return FRAME_OTHER;
		if (d[l3 + 6] == 58)
			return FRAME_NEIGH;
		if (d[l3 + 6] != ROCE_IPPROTO_UDP)
			return FRAME_OTHER;
		l4 = l3 + ROCE_IPV6_HLEN;
	} else {
		return FRAME_OTHER;
	}
	if (len < l4 + ROCE_UDP_HLEN + 8 || get_be16(d + l4 + 2) != ROCE_V2_UDP_DPORT)
		return FRAME_OTHER;
	/* BTH: destination QP in bytes 5..7 */
	*qpn = ((uint32_t)d[l4 + ROCE_UDP_HLEN + 5] << 16) |
	       ((uint32_t)d[l4 + ROCE_UDP_HLEN + 6] << 8) | d[l4 + ROCE_UDP_HLEN + 7];
	return FRAME_ROCE;
}

static struct netdev *netdev_port_primary(const struct netdev_port *dp)
{
	struct netdev *nd, *first = NULL;

	for (nd = dp->ctxs; nd; nd = nd->next) {
		if (nd->closing)
			continue;
		if (netdev_ctx_has_rx(nd))
			return nd;
		if (!first)
			first = nd;
	}
	return first;
}

/* The context with a QP of this number's index (the GSI QP for QPN 1). */
static struct netdev *netdev_port_qpn_owner(const struct netdev_port *dp, uint32_t qpn)
{
	const struct rres_table *pool, *t;
	uint32_t idx = vrdma_qpn_index(qpn);

	if (!dp->pool || qpn == VRDMA_QPN_MULTICAST)
		return NULL;
	pool = &dp->pool->qps;
	t = idx < pool->size ? pool->slot[idx] : NULL;
	return t ? t->owner : NULL;
}

static void netdev_port_xmit(struct port *port, struct pkt *p)
{
	struct netdev_port *dp = port->priv;
	struct netdev *primary = netdev_port_primary(dp), *nd;
	uint32_t qpn = 0;

	/* QP1 is the port's: the connection manager serves every context */
	if (dp->cm && netdev_port_classify(p->data, p->len, &qpn) == FRAME_ROCE &&
	    qpn == VRDMA_GSI_QPN && netdev_port_cm_input(dp, p))
		return;
	if (!primary) {
		dp->stats.rx_no_context++;
		port->stats.tx_dropped++;
		pkt_free(p);
		return;
	}
	if (dp->nctx > 1) {
		switch (netdev_port_classify(p->data, p->len, &qpn)) {
		case FRAME_ROCE:
			nd = netdev_port_qpn_owner(dp, qpn);
			if (nd && !nd->closing) {
				dp->stats.rx_steered++;
				netdev_ctx_input(nd, p);
				return;
			}
			if (qpn == VRDMA_QPN_MULTICAST) {
				/* multicast UD: a copy for every context */
				for (nd = dp->ctxs; nd; nd = nd->next) {
					struct pkt *c;

					if (nd == primary || nd->closing)
						continue;
					c = pkt_clone(p);
					if (c && !netdev_roce_input(nd, c))
						pkt_free(c);
				}
			}
			break;
		case FRAME_NEIGH:
			/* each context's neighbour cache takes a copy if it
			 * waits for this answer; the frame itself goes on */
			for (nd = dp->ctxs; nd; nd = nd->next)
				if (nd != primary && !nd->closing)
					netdev_roce_input(nd, p);
			break;
		default:
			break;
		}
	}
	netdev_ctx_input(primary, p);
}

static void netdev_port_destroy(struct port *port)
{
	(void)port;
}

/* Flow control (docs/design.md): the port refuses frames while any of its
 * contexts' RoCE receive queues is near full, so steering never drops; when
 * the switch has room again, every context resumes its held transmits. A
 * device without RoCE (a guest whose kernel runs RoCE, e.g. rxe) gets every
 * frame in its primary driver's queue: that one counts too. (With RoCE on,
 * RoCE frames never wait there, so a driver that leaves its receive ring
 * alone, as libvrdma does, must not stop them.) */
static bool netdev_port_busy(const struct port *port)
{
	const struct netdev_port *dp = port->priv;
	struct netdev *nd;

	for (nd = dp->ctxs; nd; nd = nd->next)
		if (!nd->closing && netdev_roce_rx_busy(nd))
			return true;
	if (!dp->cfg.roce && (nd = netdev_port_primary(dp)) && netdev_ctx_rx_busy(nd))
		return true;
	return false;
}

static void netdev_port_ready(struct port *port)
{
	struct netdev_port *dp = port->priv;
	struct netdev *nd;

	for (nd = dp->ctxs; nd; nd = nd->next)
		if (!nd->closing)
			netdev_roce_tx_ready(nd);
}

static const struct port_ops netdev_port_ops = {
	.xmit = netdev_port_xmit,
	.destroy = netdev_port_destroy,
	.busy = netdev_port_busy,
	.ready = netdev_port_ready,
};

/* ---- contexts ---- */

static void netdev_port_accept(void *arg, int fd)
{
	struct netdev_port *dp = arg;
	struct netdev *nd, **pp;

	/* A front-end that just closed its connection and opened another may
	 * be seen connecting before its hang-up is read: reap hung-up
	 * sessions before refusing. */
	if (dp->nctx >= dp->cfg.max_contexts)
		for (nd = dp->ctxs; nd; nd = nd->next)
			netdev_ctx_check_hangup(nd);
	if (dp->nctx >= dp->cfg.max_contexts) {
		/* Refused at once: the front-end sees the connection closed
		 * before any reply (docs/spec.md, "Contexts"). */
		dp->stats.contexts_refused++;
		LOG_PEER("%s: connection refused: all %u contexts in use (contexts=%u)",
			 dp->cfg.socket, dp->nctx, dp->cfg.max_contexts);
		close(fd);
		return;
	}
	nd = netdev_ctx_new(dp, fd);
	if (!nd) {
		LOG_ERR("%s: cannot open a context: %s", dp->cfg.socket, strerror(errno));
		return;
	}
	for (pp = &dp->ctxs; *pp; pp = &(*pp)->next)
		;
	*pp = nd;
	dp->nctx++;
	dp->stats.contexts_opened++;
}

void netdev_port_ctx_closed(struct netdev_port *dp, struct netdev *nd)
{
	struct netdev **pp;

	for (pp = &dp->ctxs; *pp; pp = &(*pp)->next) {
		if (*pp == nd) {
			*pp = nd->next;
			break;
		}
	}
	dp->stats.contexts_closed++;
	netdev_port_cm_ctx_gone(dp, nd);
	netdev_port_totals_add(dp->closed, nd);
	netdev_ctx_free(nd);
	/* senders held back by this context's full queue may go on */
	sw_port_ready(dp->sw, &dp->port);
}

static int netdev_port_pool_init(struct netdev_port *dp)
{
	struct rres_dev_cfg cfg;
	int rc;

	if (!dp->cfg.roce)
		return 0;
	/* The same limits as every context's device model: its tables are the
	 * index space the contexts allocate from. */
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.mac, dp->cfg.mac, 6);
	cfg.eth_mtu = dp->cfg.mtu;
	cfg.net_pairs = 1;
	cfg.max_rdma_qps = dp->cfg.max_qps;
	cfg.max_rdma_cqs = dp->cfg.max_cqs;
	if (dp->cfg.roce_ext) {
		cfg.ext_offered = true;
		cfg.max_rdma_srqs = dp->cfg.max_srqs;
	}
	dp->pool = calloc(1, sizeof(*dp->pool));
	if (!dp->pool)
		return -ENOMEM;
	rc = rres_dev_init(dp->pool, &cfg);
	if (rc < 0) {
		free(dp->pool);
		dp->pool = NULL;
	}
	return rc;
}

struct netdev_port *netdev_port_new(struct loop *loop, struct sw *sw,
				   const struct netdev_cfg *cfg)
{
	struct netdev_port *dp = calloc(1, sizeof(*dp));
	int rc;

	if (!dp) {
		errno = ENOMEM;
		return NULL;
	}
	dp->cfg = *cfg;
	if (!dp->cfg.max_contexts)
		dp->cfg.max_contexts = NETDEV_DEFAULT_CONTEXTS;
	dp->loop = loop;
	dp->sw = sw;
	dp->closed = calloc(1, sizeof(*dp->closed));
	if (!dp->closed) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = netdev_port_pool_init(dp);
	if (rc < 0)
		goto fail;
	rc = netdev_port_cm_init(dp);
	if (rc < 0)
		goto fail_pool;

	dp->port.ops = &netdev_port_ops;
	dp->port.hairpin = true; /* contexts of one device talk through it */
	dp->port.icrc_skip_ok = true; /* its RoCE engine is ours (switch.c) */
	dp->port.priv = dp;
	if (cfg->name[0])
		snprintf(dp->port.name, sizeof(dp->port.name), "%s", cfg->name);
	else
		snprintf(dp->port.name, sizeof(dp->port.name), "dev%u", cfg->index);
	rc = sw_attach(sw, &dp->port);
	if (rc < 0) {
		LOG_ERR("%s: cannot attach to the switch: %s", cfg->socket, strerror(-rc));
		goto fail_pool;
	}
	rc = netdev_sec_init(dp);
	if (rc < 0)
		goto fail_sw;
	/* A listening server: no session, every connection handed to us. Its
	 * ring count is irrelevant (it never has rings). */
	dp->listen_ops.max_rings = 1;
	dp->listen_ops.accept = netdev_port_accept;
	dp->listener = vhost_server_new(loop, cfg->socket, &dp->listen_ops, dp);
	if (!dp->listener) {
		rc = -errno;
		LOG_ERR("%s: cannot listen: %s", cfg->socket, strerror(errno));
		goto fail_sec;
	}
	return dp;

fail_sec:
	netdev_sec_fini(dp);
fail_sw:
	sw_detach(sw, &dp->port);
fail_pool:
	netdev_port_cm_fini(dp);
	if (dp->pool) {
		rres_dev_fini(dp->pool);
		free(dp->pool);
	}
fail:
	free(dp->closed);
	free(dp);
	errno = -rc;
	return NULL;
}

void netdev_port_free(struct netdev_port *dp)
{
	if (!dp)
		return;
	vhost_server_free(dp->listener);
	while (dp->ctxs) {
		struct netdev *nd = dp->ctxs;

		dp->ctxs = nd->next;
		netdev_ctx_free(nd);
	}
	netdev_sec_fini(dp);
	sw_detach(dp->sw, &dp->port);
	netdev_port_cm_fini(dp);
	if (dp->pool) {
		rres_dev_fini(dp->pool);
		free(dp->pool);
	}
	free(dp->closed);
	free(dp);
}

const struct netdev_cfg *netdev_port_cfg(const struct netdev_port *dp)
{
	return &dp->cfg;
}

void netdev_port_set_link(struct netdev_port *dp, bool up)
{
	dp->link_down = !up;
	for (struct netdev *nd = dp->ctxs; nd; nd = nd->next)
		if (!nd->closing)
			netdev_ctx_set_link(nd, up);
}

struct port *netdev_port_switch_port(struct netdev_port *dp)
{
	return &dp->port;
}

unsigned netdev_port_contexts(const struct netdev_port *dp)
{
	return dp->nctx;
}

void netdev_port_sum(const struct netdev_port *dp, struct netdev_stats *nd,
		     struct vhost_server_stats *vs, struct rres_stats *roce,
		     struct roce_tp_stats *tp)
{
	struct netdev_ctx_totals sum = *dp->closed;

	for (const struct netdev *c = dp->ctxs; c; c = c->next)
		netdev_port_totals_add(&sum, c);
	*nd = sum.nd;
	*vs = sum.vs;
	*roce = sum.roce;
	*tp = sum.tp;
}

void netdev_port_dump_stats(const struct netdev_port *dp, void *fp)
{
	FILE *f = fp;
	const struct netdev_port_stats *s = &dp->stats;

	fprintf(f, "device %s (%s)\n", dp->port.name, dp->cfg.socket);
	fprintf(f, "  contexts open %u max %u opened %" PRIu64 " closed %" PRIu64
		" refused %" PRIu64 "\n", dp->nctx, dp->cfg.max_contexts, s->contexts_opened,
		s->contexts_closed, s->contexts_refused);
	fprintf(f, "  rx_steered %" PRIu64 " rx_no_context %" PRIu64 "\n", s->rx_steered,
		s->rx_no_context);
	/* the device's counters: every context it ever had, then each open one */
	{
		struct netdev_ctx_totals sum = *dp->closed;

		for (const struct netdev *nd = dp->ctxs; nd; nd = nd->next)
			netdev_port_totals_add(&sum, nd);
		netdev_port_totals_dump(&sum, f);
	}
	netdev_sec_dump_port(dp, f);
	fprintf(f, "  device_sched sched_budget_out %" PRIu64 "\n", dp->send_sched.budget_out);
	netdev_port_cm_dump(dp, f);
	for (const struct netdev *nd = dp->ctxs; nd; nd = nd->next)
		netdev_ctx_dump_stats(nd, f);
}
