// SPDX-License-Identifier: BSD-3-Clause
/*
 * QP1 of a device port and its connection manager (netdev_cm.c): CM MADs
 * received on the port (RoCE v2 UD SEND_ONLY to QPN 1, Q_Key 0x80010000)
 * go to the port's CM instead of a context; the MADs it sends are built
 * here and given to the switch; its timers run on the loop; the CM commands
 * of a context arrive from its control queue and its events are announced
 * with VIRTIO_IB_EVENT_CM_PENDING on its event queue. docs/design.md
 * "Connection manager".
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "backend/netdev_cm.h"
#include "backend/netdev_priv.h"
#include "backend/rres_dev.h"
#include "port/port.h"
#include "roce/roce_hdr.h"
#include "roce/roce_opcode.h"
#include "roce/roce_pkt.h"
#include "roce/roce_tp.h"
#include "vrdma/virtio_net_roce_cm.h"

#define NPCM_GSI_QKEY 0x80010000u
#define NPCM_MACS     64            /* peers' MACs learned from their CM MADs */
#define NPCM_TXQ_MAX  1024          /* MADs waiting to be sent */

/* A MAD the CM sent, put on the wire from the loop: delivery through the
 * switch is synchronous, so sending from inside the CM would let an answer
 * (a context of this device, or another device's CM) re-enter it. */
struct npcm_tx {
	struct npcm_tx *next;
	struct cm_mad mad;
	struct cm_addr dst;
};

struct netdev_port_cm {
	struct netdev_port *dp;
	struct netdev_cm *cm;
	struct loop_timer timer;
	uint64_t timer_at;              /* us, UINT64_MAX when not armed */
	struct {
		uint8_t gid[16];
		uint8_t mac[6];
	} macs[NPCM_MACS];
	unsigned nmacs, mac_next;
	uint32_t psn;
	uint16_t ip_id;
	struct npcm_tx *txq, *txq_tail;
	unsigned txq_len;
	struct loop_timer tx_timer;
	struct netdev_port_cm_stats stats;
};

static uint64_t npcm_now(void *ctx)
{
	(void)ctx;
	return loop_now_ns() / 1000u;
}

static void npcm_rearm(struct netdev_port_cm *pc)
{
	uint64_t next = netdev_cm_next_timeout(pc->cm);

	if (next == pc->timer_at)
		return;
	pc->timer_at = next;
	if (next == UINT64_MAX)
		loop_timer_cancel(pc->dp->loop, &pc->timer);
	else
		loop_timer_arm(pc->dp->loop, &pc->timer, next * 1000u);
}

static void npcm_timer(struct loop_timer *t, void *arg)
{
	struct netdev_port_cm *pc = arg;

	(void)t;
	pc->timer_at = UINT64_MAX;
	netdev_cm_tick(pc->cm);
	npcm_rearm(pc);
}

static void mac_learn(struct netdev_port_cm *pc, const uint8_t gid[16], const uint8_t mac[6])
{
	unsigned i;

	for (i = 0; i < pc->nmacs; i++)
		if (!memcmp(pc->macs[i].gid, gid, 16)) {
			memcpy(pc->macs[i].mac, mac, 6);
			return;
		}
	if (pc->nmacs < NPCM_MACS) {
		i = pc->nmacs++;
	} else {
		i = pc->mac_next;
		pc->mac_next = (pc->mac_next + 1) % NPCM_MACS;
	}
	memcpy(pc->macs[i].gid, gid, 16);
	memcpy(pc->macs[i].mac, mac, 6);
}

static bool mac_find(const struct netdev_port_cm *pc, const uint8_t gid[16], uint8_t mac[6])
{
	for (unsigned i = 0; i < pc->nmacs; i++)
		if (!memcmp(pc->macs[i].gid, gid, 16)) {
			memcpy(mac, pc->macs[i].mac, 6);
			return true;
		}
	return false;
}

/* The device's own GID of dgid's family (the source of our MADs). */
static void our_gid(const struct netdev_port *dp, const uint8_t dgid[16], uint8_t sgid[16])
{
	if (roce_gid_is_ipv4(dgid)) {
		roce_gid_from_ipv4(sgid, (const uint8_t *)&dp->cfg.ip4);
		return;
	}
	if (dp->cfg.has_ip6 && !(dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80))
		memcpy(sgid, &dp->cfg.ip6, 16);
	else
		roce_gid_from_mac(sgid, dp->cfg.mac);
}

static bool gid_is_ours(const struct netdev_port *dp, const uint8_t gid[16])
{
	uint8_t g[16];

	if (dp->cfg.has_ip4) {
		roce_gid_from_ipv4(g, (const uint8_t *)&dp->cfg.ip4);
		if (!memcmp(g, gid, 16))
			return true;
	}
	roce_gid_from_mac(g, dp->cfg.mac);
	if (!memcmp(g, gid, 16))
		return true;
	return dp->cfg.has_ip6 && !memcmp(&dp->cfg.ip6, gid, 16);
}

/* A context whose neighbour cache can resolve for the port. */
static struct netdev *npcm_resolver(const struct netdev_port *dp)
{
	for (struct netdev *nd = dp->ctxs; nd; nd = nd->next)
		if (!nd->closing && nd->roce_tp)
			return nd;
	return NULL;
}

static void npcm_xmit(struct netdev_port_cm *pc, const struct cm_mad *mad,
		      const struct cm_addr *dst)
{
	struct netdev_port *dp = pc->dp;
	struct roce_hdr_fields f;
	struct roce_path path;
	struct netdev *nd;
	struct pkt *p;

	memset(&path, 0, sizeof(path));
	memcpy(path.smac, dp->cfg.mac, 6);
	memcpy(path.dgid, dst->gid, 16);
	our_gid(dp, dst->gid, path.sgid);
	path.hop_limit = dp->cfg.ttl;
	path.tclass = ROCE_ECN_ECT0; /* as every transport packet (roce_tp.c) */
	path.udp_sport = roce_udp_sport_from_qpn(1);
	if (dp->cfg.vlan_id) {
		path.flags |= ROCE_PATH_F_VLAN;
		path.vlan_tci = dp->cfg.vlan_id;
	}
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_UD_SEND_ONLY;
	f.pkey = dst->pkey ? dst->pkey : 0xFFFF;
	f.dqpn = dst->qpn;
	f.psn = pc->psn++ & 0xFFFFFF;
	f.deth.qkey = NPCM_GSI_QKEY;
	f.deth.sqpn = 1;
	f.ip_id = pc->ip_id++;
	p = pkt_alloc();
	if (!p) {
		pc->stats.tx_errors++;
		return;
	}
	if (roce_pkt_build_frame(p, &path, &f, mad, CM_MAD_SIZE)) {
		pc->stats.tx_errors++;
		pkt_free(p);
		return;
	}
	pc->stats.tx++;
	if (gid_is_ours(dp, dst->gid)) {
		/* another context of this device: through the hairpin */
		memcpy(p->data, dp->cfg.mac, 6);
	} else if (!psec_pinned_mac(dst->gid, p->data, NULL) && !mac_find(pc, dst->gid, p->data)) {
		nd = npcm_resolver(dp);
		if (!nd) {
			pc->stats.tx_no_route++;
			pkt_free(p);
			return;
		}
		/* sent once resolved (queued meanwhile) by a context's cache */
		roce_neigh_output(nd->roce_tp->neigh, p, path.sgid, path.dgid);
		return;
	}
	sw_input(dp->sw, &dp->port, p);
}

static void npcm_tx_flush(struct loop_timer *t, void *arg)
{
	struct netdev_port_cm *pc = arg;
	unsigned n = pc->txq_len;

	(void)t;
	/* what these frames make the CM send waits for the next turn */
	while (n-- && pc->txq) {
		struct npcm_tx *m = pc->txq;

		pc->txq = m->next;
		if (!pc->txq)
			pc->txq_tail = NULL;
		pc->txq_len--;
		npcm_xmit(pc, &m->mad, &m->dst);
		free(m);
	}
	if (pc->txq)
		loop_timer_arm(pc->dp->loop, &pc->tx_timer, loop_now_ns());
}

static int npcm_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct netdev_port_cm *pc = ctx;
	struct npcm_tx *m;

	if (pc->txq_len >= NPCM_TXQ_MAX || !(m = malloc(sizeof(*m)))) {
		pc->stats.tx_errors++;
		return -ENOBUFS;
	}
	m->mad = *mad;
	m->dst = *dst;
	m->next = NULL;
	if (pc->txq_tail)
		pc->txq_tail->next = m;
	else
		pc->txq = m;
	pc->txq_tail = m;
	if (pc->txq_len++ == 0)
		loop_timer_arm(pc->dp->loop, &pc->tx_timer, loop_now_ns());
	return 0;
}

static void npcm_notify(void *ctx, uint64_t ctx_id)
{
	struct netdev_port_cm *pc = ctx;

	for (struct netdev *nd = pc->dp->ctxs; nd; nd = nd->next)
		if (nd->id == ctx_id && !nd->closing && nd->roce)
			rres_event_raise(nd->roce, &nd->roce->port_ev, VIRTIO_IB_EVENT_CM_PENDING);
}

/* A context may name its own QPs, and numbers no context holds (a program
 * that creates its QP outside rdma_cm gives its number): never another
 * context's QP, nor QP0/QP1. */
static bool npcm_qp_owned(void *ctx, uint64_t ctx_id, uint32_t qpn)
{
	struct netdev_port_cm *pc = ctx;

	if (qpn <= VRDMA_GSI_QPN)
		return false;
	for (struct netdev *nd = pc->dp->ctxs; nd; nd = nd->next)
		if (nd->id != ctx_id && nd->roce && rres_qp_lookup(nd->roce, qpn))
			return false;
	return true;
}

int netdev_port_cm_init(struct netdev_port *dp)
{
	static const struct netdev_cm_ops ops = { npcm_now, npcm_send, npcm_qp_owned, npcm_notify };
	struct netdev_cm_config cfg;
	struct netdev_port_cm *pc;

	if (!dp->cfg.roce)
		return 0;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->dp = dp;
	pc->timer_at = UINT64_MAX;
	loop_timer_init(&pc->timer, npcm_timer, pc);
	loop_timer_init(&pc->tx_timer, npcm_tx_flush, pc);
	memset(&cfg, 0, sizeof(cfg));
	/* the CA GUID of the device's node GUID: its MAC as EUI-64 */
	cfg.port.ca_guid = (uint64_t)dp->cfg.mac[0] << 56 | (uint64_t)dp->cfg.mac[1] << 48 |
			   (uint64_t)dp->cfg.mac[2] << 40 | 0xFFFEull << 24 |
			   (uint64_t)dp->cfg.mac[3] << 16 | (uint64_t)dp->cfg.mac[4] << 8 |
			   dp->cfg.mac[5];
	cfg.port.ca_guid ^= 2ull << 56;
	if (getrandom(&cfg.port.comm_id_seed, sizeof(cfg.port.comm_id_seed), 0) < 0)
		cfg.port.comm_id_seed = (uint32_t)loop_now_ns();
	pc->psn = cfg.port.comm_id_seed;
	pc->cm = netdev_cm_new(&cfg, &ops, pc);
	if (!pc->cm) {
		free(pc);
		return -ENOMEM;
	}
	dp->cm = pc;
	return 0;
}

void netdev_port_cm_fini(struct netdev_port *dp)
{
	struct netdev_port_cm *pc = dp->cm;

	if (!pc)
		return;
	loop_timer_cancel(dp->loop, &pc->timer);
	loop_timer_cancel(dp->loop, &pc->tx_timer);
	while (pc->txq) {
		struct npcm_tx *m = pc->txq;

		pc->txq = m->next;
		free(m);
	}
	netdev_cm_free(pc->cm);
	free(pc);
	dp->cm = NULL;
}

bool netdev_port_cm_input(struct netdev_port *dp, struct pkt *p)
{
	struct netdev_port_cm *pc = dp->cm;
	struct roce_pkt_info pi;
	struct cm_addr src;

	if (!pc)
		return false;
	pc->stats.rx++;
	if (roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &pi) || pi.dqpn != 1 || !pi.deth ||
	    pi.opcode != ROCE_OP_UD_SEND_ONLY || pi.payload_len < CM_MAD_SIZE ||
	    roce_deth_qkey(pi.deth) != NPCM_GSI_QKEY) {
		pc->stats.rx_bad++;
		pkt_free(p);
		return true;
	}
	memset(&src, 0, sizeof(src));
	memcpy(src.gid, pi.sgid, 16);
	src.qpn = roce_deth_sqpn(pi.deth);
	src.pkey = pi.pkey;
	if (!gid_is_ours(dp, pi.sgid))
		mac_learn(pc, pi.sgid, pi.smac);
	netdev_cm_recv(pc->cm, pi.payload, CM_MAD_SIZE, &src);
	pkt_free(p);
	npcm_rearm(pc);
	return true;
}

uint8_t netdev_port_cm_ctrl(struct netdev *nd, uint8_t cmd, const void *in, size_t in_len,
			    void *out, size_t out_cap, size_t *out_len)
{
	struct netdev_port_cm *pc = nd->dp->cm;
	struct virtio_rdma_ack_cm_status st;
	size_t n = 0;
	int rc;

	*out_len = 0;
	if (out_cap < sizeof(st))
		return VIRTIO_NET_ERR;
	if (!pc || nd->closing)
		rc = -EOPNOTSUPP;
	else
		rc = netdev_cm_cmd(pc->cm, nd->id, cmd, in, in_len, (uint8_t *)out + sizeof(st),
				   out_cap - sizeof(st), &n);
	memset(&st, 0, sizeof(st));
	st.status = htole32((uint32_t)-rc);
	memcpy(out, &st, sizeof(st));
	*out_len = sizeof(st) + n;
	if (pc)
		npcm_rearm(pc);
	if (rc && rc != -EAGAIN)
		LOG_PEER_RL(&nd->log_rl, "%s: CM command %u: %s", nd->cfg.socket, cmd, strerror(-rc));
	return VIRTIO_NET_OK;
}

void netdev_port_cm_comm_est(struct netdev *nd, uint32_t qpn)
{
	struct netdev_port_cm *pc = nd->dp->cm;

	if (pc && !nd->closing && netdev_cm_comm_est(pc->cm, nd->id, qpn) == 0)
		npcm_rearm(pc);
}

void netdev_port_cm_ctx_gone(struct netdev_port *dp, struct netdev *nd)
{
	struct netdev_port_cm *pc = dp->cm;

	if (!pc)
		return;
	netdev_cm_ctx_gone(pc->cm, nd->id);
	npcm_rearm(pc);
}

void netdev_port_cm_dump(const struct netdev_port *dp, FILE *f)
{
	const struct netdev_port_cm *pc = dp->cm;
	const struct netdev_cm_stats *s;
	const struct cm_port_stats *c;

	if (!pc)
		return;
	s = netdev_cm_stats(pc->cm);
	c = netdev_cm_port_stats(pc->cm);
	fprintf(f, "  cm rx %" PRIu64 " rx_bad %" PRIu64 " tx %" PRIu64 " tx_no_route %" PRIu64
		" tx_errors %" PRIu64 " listens %" PRIu64 " conns %" PRIu64 "\n",
		pc->stats.rx, pc->stats.rx_bad, pc->stats.tx, pc->stats.tx_no_route,
		pc->stats.tx_errors, s->listens, s->conns);
	fprintf(f, "  cm sent req %" PRIu64 " rep %" PRIu64 " rtu %" PRIu64 " rej %" PRIu64
		" dreq %" PRIu64 " drep %" PRIu64 " retransmits %" PRIu64 " timeouts %" PRIu64 "\n",
		c->tx_attr[1], c->tx_attr[4], c->tx_attr[5], c->tx_attr[3], c->tx_attr[6],
		c->tx_attr[7], c->retransmits, c->timeouts);
	fprintf(f, "  cm recv req %" PRIu64 " rep %" PRIu64 " rtu %" PRIu64 " rej %" PRIu64
		" dreq %" PRIu64 " drep %" PRIu64 " unmatched %" PRIu64 " refused %" PRIu64 "\n",
		c->rx_attr[1], c->rx_attr[4], c->rx_attr[5], c->rx_attr[3], c->rx_attr[6],
		c->rx_attr[7], c->rx_unmatched, s->reqs_refused);
	fprintf(f, "  cm contexts_gone %" PRIu64 " conns_released %" PRIu64 " listens_released %"
		PRIu64 " not_owner %" PRIu64 " listens_in_use %" PRIu64 " quota_refused %" PRIu64
		" events %" PRIu64 " events_dropped %" PRIu64 " comm_est %" PRIu64 "\n", s->ctx_gone,
		s->ctx_gone_conns, s->ctx_gone_listens, s->not_owner, s->listens_in_use,
		s->quota_refused, s->events_queued, s->events_dropped, s->comm_est);
}
