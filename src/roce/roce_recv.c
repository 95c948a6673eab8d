/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames from the switch. roce_tp_input() runs inside sw_input() (another
 * device's transmit, or our own through the hairpin): it only looks at a few
 * header bytes and queues what is ours (bounded; a full queue drops and
 * counts). The poller then parses each queued frame with its ICRC
 * (roce_pkt_parse, ROCE_RX_F_ICRC), checks it against the QP it names and
 * hands requests to the responder, responses to the completer. Every drop
 * is counted by reason.
 */
#include "roce/roce_tp.h"

#include <string.h>

#include "common/util.h"

#define ETH_P_ARP 0x0806
#define IPPROTO_ICMPV6_ 58

static void queue_marked(struct roce_tp *tp, struct pkt *p)
{
	if (tp->cc.mark_qlen && tp->rxq.pkts >= tp->cc.mark_qlen && pkt_set_ce(p))
		tp->stats.rx_ce_marked++;
	pkt_queue_push(&tp->rxq, p);
}

/* The frames of run p, each queued and marked as it would have come. */
static bool queue_split(struct roce_tp *tp, struct pkt *p)
{
	struct pkt_queue q;
	struct pkt *f;

	pkt_queue_init(&q);
	if (unlikely(roce_run_split(p, &q))) {
		tp->stats.rx_run_lost += pkt_npkts(p);
		pkt_free(p);
		return true;
	}
	pkt_free(p);
	while ((f = pkt_queue_pop(&q)))
		queue_marked(tp, f);
	return true;
}

/* Ethernet type (after one optional 802.1Q tag) and the L3 offset. */
static uint16_t frame_type(const struct pkt *p, uint32_t *l3)
{
	uint16_t type;

	if (p->len < ROCE_ETH_HLEN)
		return 0;
	type = get_be16(p->data + 12);
	*l3 = ROCE_ETH_HLEN;
	if (type == ROCE_ETH_P_8021Q) {
		if (p->len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			return 0;
		type = get_be16(p->data + 16);
		*l3 = ROCE_ETH_HLEN + ROCE_VLAN_HLEN;
	}
	return type;
}

/* Whether p is on the device's VLAN: tagged with its VLAN ID, or untagged
 * (or priority-tagged, VID 0) when it has none. */
static bool vlan_is_ours(const struct rres_dev *rd, const struct pkt *p, uint32_t l3)
{
	uint16_t vid = l3 > ROCE_ETH_HLEN ? get_be16(p->data + 14) & 0x0FFF : 0;

	return vid == rd->vlan_id;
}

static bool is_icmp6(const struct pkt *p, uint32_t l3)
{
	return p->len >= l3 + ROCE_IPV6_HLEN && p->data[l3 + 6] == IPPROTO_ICMPV6_;
}

static void queue_copy(struct roce_tp *tp, const struct pkt *p)
{
	struct pkt *c;

	if (tp->rxq.pkts >= ROCE_TP_RXQ_MAX) {
		tp->stats.rx_queue_full++;
		return;
	}
	c = pkt_clone(p);
	if (c)
		pkt_queue_push(&tp->rxq, c);
}

bool roce_tp_input(struct roce_tp *tp, struct pkt *p)
{
	const struct rres_dev *rd = tp->rd;
	const uint8_t *d = p->data, *ip;
	uint32_t l3 = 0, ihl;
	uint16_t type = frame_type(p, &l3);

	if (!type || !vlan_is_ours(rd, p, l3))
		return false;
	if (type == ETH_P_ARP || (type == ROCE_ETH_P_IPV6 && is_icmp6(p, l3))) {
		if (roce_neigh_wants(tp, p))
			queue_copy(tp, p);
		return false;
	}
	if (memcmp(d, rd->mac, 6))
		return false;
	if (type == ROCE_ETH_P_IPV4) {
		if (p->len < l3 + ROCE_IPV4_HLEN)
			return false;
		ip = d + l3;
		ihl = (ip[0] & 0x0Fu) * 4;
		if ((ip[0] >> 4) != 4 || ihl < ROCE_IPV4_HLEN ||
		    p->len < l3 + ihl + ROCE_UDP_HLEN || ip[9] != ROCE_IPPROTO_UDP ||
		    get_be16(ip + ihl + 2) != ROCE_V2_UDP_DPORT || !roce_neigh_ip4_ours(rd, ip + 16))
			return false;
	} else if (type == ROCE_ETH_P_IPV6) {
		if (p->len < l3 + ROCE_IPV6_HLEN + ROCE_UDP_HLEN)
			return false;
		ip = d + l3;
		if (ip[6] != ROCE_IPPROTO_UDP ||
		    get_be16(ip + ROCE_IPV6_HLEN + 2) != ROCE_V2_UDP_DPORT ||
		    !rres_gid_has(rd, ip + 24))
			return false;
	} else {
		return false;
	}
	if (tp->rxq.pkts >= ROCE_TP_RXQ_MAX) {
		tp->stats.rx_queue_full += pkt_npkts(p);
		pkt_free(p);
		return true;
	}
	/* The device's receive queue is the switch's egress queue towards
	 * it: above the threshold, ECN-capable frames get CE. Marks are per
	 * packet, so a run reaching the threshold comes apart into frames. */
	if (tp->cc.mark_qlen && (p->flags & PKT_F_RUN) &&
	    tp->rxq.pkts + p->npkts > tp->cc.mark_qlen)
		return queue_split(tp, p);
	queue_marked(tp, p);
	return true;
}

void roce_recv_one(struct roce_tp *tp, struct pkt *p)
{
	struct rres_dev *rd = tp->rd;
	struct roce_pkt_info pi;
	struct rres_qp *qp;
	struct roce_tq *tq;
	uint32_t l3 = 0;
	uint16_t type = frame_type(p, &l3);
	bool ok;
	int rc;

	if (type == ETH_P_ARP || (type == ROCE_ETH_P_IPV6 && is_icmp6(p, l3))) {
		roce_neigh_rx(tp->neigh, p);
		return;
	}
	rc = roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &pi);
	if (rc < 0) {
		tp->stats.rx_parse[-rc < ROCE_RX_E_NUM ? -rc : 0]++;
		goto out;
	}
	tp->stats.rx_frames += pkt_npkts(p);
	tp->stats.rx_bytes += pkt_wire_len(p);
	if (!rres_gid_has(rd, pi.dgid)) {
		tp->stats.rx_not_ours++;
		goto out;
	}
	if (pi.transport == ROCE_TRANSPORT_CNP) {
		tp->stats.rx_cnp++;
		qp = rres_qp_lookup(rd, pi.dqpn);
		if (qp && (tq = qp->transport))
			roce_cc_cnp(tq);
		goto out;
	}
	if ((pi.pkey & 0x7FFF) != 0x7FFF) {
		tp->stats.rx_pkey++;
		goto out;
	}
	qp = rres_qp_lookup(rd, pi.dqpn);
	if (!qp || !(tq = qp->transport)) {
		tp->stats.rx_no_qp++;
		goto out;
	}
	switch (pi.transport) {
	case ROCE_TRANSPORT_RC:
		ok = qp->type == VIRTIO_IB_QPT_RC;
		break;
	case ROCE_TRANSPORT_UC:
		ok = qp->type == VIRTIO_IB_QPT_UC;
		break;
	case ROCE_TRANSPORT_UD:
		ok = qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI;
		break;
	default:
		ok = false;
		break;
	}
	if (!ok) {
		tp->stats.rx_qp_type++;
		goto out;
	}
	if (pi.transport != ROCE_TRANSPORT_UD &&
	    (!qp->attr.av_valid || memcmp(pi.sgid, qp->attr.av.dgid, 16) ||
	     memcmp(pi.dgid, qp->attr.av.sgid, 16))) {
		/* A connected QP talks to its peer only. */
		tp->stats.rx_bad_src++;
		goto out;
	}
	if ((pi.tclass & ROCE_ECN_MASK) == ROCE_ECN_CE)
		roce_cc_ce(tq, &pi, p);
	if (p->flags & PKT_F_RUN) {
		if (pi.mask & ROCE_OPF_REQ)
			tp->stats.rx_runs++;
		else
			tp->stats.rx_resp_runs++;
		tp->stats.rx_run_pkts += pkt_npkts(p);
		roce_run_rx(tq, &pi, p, 0, p->npkts);
	}
	else if (pi.mask & ROCE_OPF_REQ)
		roce_resp_rx(tq, &pi, p);
	else
		roce_comp_rx(tq, &pi);
	if ((pi.mask & ROCE_OPF_REQ) && pi.transport == ROCE_TRANSPORT_RC) {
		/* beyond a gap: kept until it fills (roce_keep.c) */
		if (roce_keep_take(tq, p, &pi))
			return;
		if (tq->keep_n)
			roce_keep_drain(tq);
	}
out:
	pkt_free(p);
}

uint32_t roce_recv_run(struct roce_tp *tp, uint32_t max)
{
	uint32_t n = 0;
	struct pkt *p;

	while (n < max && (p = pkt_queue_pop(&tp->rxq))) {
		n += pkt_npkts(p);
		roce_recv_one(tp, p);
	}
	return n;
}
