/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Destination MAC resolution. A path whose destination MAC is all zeros
 * (address vector without dmac) is resolved here: ARP for IPv4-mapped
 * GIDs, IPv6 neighbour solicitation for the others. Resolution starts when
 * a QP enters RTR or an AH is created (roce_neigh_resolve); the requester
 * asks roce_neigh_lookup before it assigns PSNs and waits (no frame built)
 * until the entry is usable. Other frames (responder ACKs, READ responses)
 * wait in the entry (at most ROCE_TP_NEIGH_QLEN, then dropped and counted).
 *
 * States: INCOMPLETE (requests ROCE_TP_NEIGH_RETRY_NS apart, at most
 * ROCE_TP_NEIGH_TRIES), VALID (for ROCE_TP_NEIGH_TTL_NS), PROBE (expired
 * but still used while it is asked again), FAILED (no answer: asked again
 * after a backoff doubling from ROCE_TP_NEIGH_BACKOFF_NS up to
 * ROCE_TP_NEIGH_BACKOFF_MAX_NS while something still wants it). Waiting
 * QPs are woken on every change. The cache is small and looked up linearly.
 *
 * The device is the IP endpoint of its own RoCE traffic: it answers ARP
 * requests for its IPv4 address (and any IPv4-mapped GID) and neighbour
 * solicitations for its IPv6 GIDs, so two devices on the switch find each
 * other without a host stack. The frames also continue to the virtio-net
 * receive queue (a guest stack that answers too sends the same MAC).
 *
 * Learning rules (no poisoning, like Linux with arp_accept=0): addresses of
 * the process's own devices are pinned (port_security.h, never resolved nor
 * learned); a pending entry is completed only by an ARP reply or a neighbour
 * advertisement; a live entry is only refreshed by frames that repeat its
 * MAC, never moved by an unsolicited ARP/NA (counted neigh_ignored).
 */
#include "roce/roce_tp.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "port/port_security.h"

#define ETH_P_ARP     0x0806
#define ARP_LEN       28
#define ND_NS         135
#define ND_NA         136
#define ICMP6_PROTO   58
#define ND_MSG_LEN    32 /* NS/NA with one link-layer address option */
#define FRAME_MIN     60

enum { NE_FREE = 0, NE_INCOMPLETE, NE_VALID, NE_PROBE, NE_FAILED };

struct roce_neigh_ent {
	uint8_t ip[16];           /* GID form */
	uint8_t sgid[16];         /* our address for requests */
	uint8_t mac[6];
	uint8_t state;
	uint8_t tries;            /* requests of the current round */
	uint8_t fails;            /* rounds without an answer (backoff) */
	bool wanted;              /* looked up while not usable */
	uint64_t deadline;        /* VALID: expiry; INCOMPLETE / PROBE: next
				   * request; FAILED: end of the backoff */
	uint64_t used;
	struct pkt_queue q;
};

/* Answers of psec_pinned_mac per destination, valid while the registry's
 * generation is unchanged: the per-frame path takes no lock and scans no
 * registry (docs/performance.md "Per-frame costs on the local path"). */
#define NEIGH_PIN_CACHE 8

struct roce_neigh_pin {
	uint8_t gid[16];
	uint8_t mac[6];
	bool pinned;
	const void *home;         /* the pinned device's loop (psec.home) */
	uint64_t gen;             /* psec_generation() of the answer; 0 empty */
};

struct roce_neigh {
	struct roce_tp *tp;
	struct roce_neigh_pin pin[NEIGH_PIN_CACHE]; /* near tp: read per frame */
	/* The last destination GID asked about and whether it is ours, valid
	 * while the device's GID table generation is gid_gen (gid_valid). */
	uint64_t gid_gen;
	uint8_t gid[16];
	bool gid_valid, gid_ours;
	/* The last roce_neigh_near answer, for near_dgid from near_loop,
	 * valid while both generations are unchanged (loss recovery asks it
	 * several times per drop). near_psec_gen 0: none yet. */
	uint64_t near_psec_gen, near_gid_gen;
	const void *near_loop;
	uint8_t near_dgid[16];
	bool near;
	struct loop_timer timer;
	struct roce_neigh_ent e[ROCE_TP_NEIGH_SIZE];
};

static uint64_t neigh_now(const struct roce_neigh *n)
{
	return n->tp->loop ? loop_now_ns() : 0;
}

static void neigh_xmit(struct roce_tp *tp, struct pkt *p)
{
	tp->stats.tx_frames += pkt_npkts(p);
	tp->stats.tx_bytes += pkt_wire_len(p);
	roce_tp_output(tp, p);
}

/* rres_gid_has for a destination, remembering the last answer: a stream
 * to one remote GID would scan the whole table twice per frame. */
static bool neigh_dst_ours(struct roce_neigh *n, const uint8_t gid[16])
{
	const struct rres_dev *rd = n->tp->rd;

	if (likely(n->gid_valid && n->gid_gen == rd->gid_gen && !memcmp(n->gid, gid, 16)))
		return n->gid_ours;
	n->gid_ours = rres_gid_has(rd, gid);
	memcpy(n->gid, gid, 16);
	n->gid_gen = rd->gid_gen;
	n->gid_valid = true;
	return n->gid_ours;
}

/* psec_pinned_mac through the per-destination cache. */
static const struct roce_neigh_pin *neigh_pin(struct roce_neigh *n, const uint8_t gid[16])
{
	uint64_t gen = psec_generation();
	struct roce_neigh_pin *c = &n->pin[(gid[15] ^ gid[14]) % NEIGH_PIN_CACHE];

	if (c->gen != gen || memcmp(c->gid, gid, 16)) {
		/* the generation is read first: a change racing with this
		 * look-up leaves the entry stale for the next one */
		c->home = NULL;
		c->pinned = psec_pinned_mac(gid, c->mac, &c->home);
		memcpy(c->gid, gid, 16);
		c->gen = gen;
	}
	return c;
}

static bool neigh_pinned(struct roce_neigh *n, const uint8_t gid[16], uint8_t mac[6])
{
	const struct roce_neigh_pin *c = neigh_pin(n, gid);

	if (c->pinned)
		memcpy(mac, c->mac, 6);
	return c->pinned;
}

static struct roce_neigh_ent *neigh_find(struct roce_neigh *n, const uint8_t *ip)
{
	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++)
		if (n->e[i].state != NE_FREE && !memcmp(n->e[i].ip, ip, 16))
			return &n->e[i];
	return NULL;
}

static void ent_purge(struct roce_neigh *n, struct roce_neigh_ent *e)
{
	n->tp->stats.neigh_dropped += e->q.len;
	pkt_queue_purge(&e->q);
}

/* Eviction order: failed entries first, then resolved, then pending. */
static int victim_rank(const struct roce_neigh_ent *e)
{
	return e->state == NE_FAILED ? 2 : e->state == NE_INCOMPLETE ? 0 : 1;
}

/* A free entry, or the least recently used one of the highest rank. */
static struct roce_neigh_ent *neigh_victim(struct roce_neigh *n)
{
	struct roce_neigh_ent *best = NULL;

	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++) {
		struct roce_neigh_ent *e = &n->e[i];

		if (e->state == NE_FREE)
			return e;
		if (!best || victim_rank(e) > victim_rank(best) ||
		    (victim_rank(e) == victim_rank(best) && e->used < best->used))
			best = e;
	}
	ent_purge(n, best);
	best->state = NE_FREE;
	roce_tp_neigh_changed(n->tp); /* its waiters look it up again */
	return best;
}

/* ---- frames ------------------------------------------------------------------- */

static uint32_t csum_add(uint32_t sum, const uint8_t *b, uint32_t len)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += get_be16(b + i);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

/* ICMPv6 checksum (RFC 4443) of msg (checksum field as it is). */
static uint16_t icmp6_csum(const uint8_t *src, const uint8_t *dst, const uint8_t *msg,
			   uint32_t len)
{
	uint32_t sum = 0;

	sum = csum_add(sum, src, 16);
	sum = csum_add(sum, dst, 16);
	sum += len >> 16;
	sum += len & 0xFFFF;
	sum += ICMP6_PROTO;
	sum = csum_add(sum, msg, len);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static struct pkt *frame_new(uint32_t len)
{
	struct pkt *p = pkt_alloc();

	if (!p)
		return NULL;
	p->len = MAX(len, (uint32_t)FRAME_MIN);
	memset(p->data, 0, p->len);
	return p;
}

static uint32_t l2_len(const struct roce_tp *tp)
{
	return ROCE_ETH_HLEN + (tp->rd->vlan_id ? ROCE_VLAN_HLEN : 0);
}

/* Ethernet header (802.1Q-tagged with the device's VLAN, PCP 0); returns
 * the L3 offset. */
static uint32_t eth_hdr(const struct roce_tp *tp, uint8_t *f, const uint8_t *dmac, uint16_t type)
{
	memcpy(f, dmac, 6);
	memcpy(f + 6, tp->rd->mac, 6);
	if (!tp->rd->vlan_id) {
		put_be16(f + 12, type);
		return ROCE_ETH_HLEN;
	}
	put_be16(f + 12, ROCE_ETH_P_8021Q);
	put_be16(f + 14, tp->rd->vlan_id);
	put_be16(f + 16, type);
	return ROCE_ETH_HLEN + ROCE_VLAN_HLEN;
}

static void send_arp(struct roce_tp *tp, const uint8_t *dmac, uint16_t oper,
		     const uint8_t *spa, const uint8_t *tha, const uint8_t *tpa)
{
	struct pkt *p = frame_new(l2_len(tp) + ARP_LEN);
	uint8_t *a;

	if (!p) {
		tp->stats.tx_nobuf++;
		return;
	}
	a = p->data + eth_hdr(tp, p->data, dmac, ETH_P_ARP);
	put_be16(a, 1);
	put_be16(a + 2, ROCE_ETH_P_IPV4);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, oper);
	memcpy(a + 8, tp->rd->mac, 6);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	if (oper == 1)
		tp->stats.neigh_requests++;
	else
		tp->stats.neigh_replies++;
	neigh_xmit(tp, p);
}

/* An NS (type 135) or NA (136) with one link-layer address option (ours). */
static void send_nd(struct roce_tp *tp, const uint8_t *dmac, const uint8_t *src,
		    const uint8_t *dst, uint8_t type, uint8_t flags, const uint8_t *target)
{
	struct pkt *p = frame_new(l2_len(tp) + ROCE_IPV6_HLEN + ND_MSG_LEN);
	uint8_t *ip, *m;

	if (!p) {
		tp->stats.tx_nobuf++;
		return;
	}
	ip = p->data + eth_hdr(tp, p->data, dmac, ROCE_ETH_P_IPV6);
	put_be32(ip, 6u << 28);
	put_be16(ip + 4, ND_MSG_LEN);
	ip[6] = ICMP6_PROTO;
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	m = ip + ROCE_IPV6_HLEN;
	m[0] = type;
	m[4] = flags;
	memcpy(m + 8, target, 16);
	m[24] = type == ND_NS ? 1 : 2; /* source / target link-layer address */
	m[25] = 1;
	memcpy(m + 26, tp->rd->mac, 6);
	put_be16(m + 2, icmp6_csum(src, dst, m, ND_MSG_LEN));
	if (type == ND_NS)
		tp->stats.neigh_requests++;
	else
		tp->stats.neigh_replies++;
	neigh_xmit(tp, p);
}

static void send_request(struct roce_neigh *n, struct roce_neigh_ent *e)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];

	if (roce_gid_is_ipv4(e->ip)) {
		send_arp(n->tp, bcast, 1, e->sgid + 12, zero, e->ip + 12);
	} else {
		uint8_t dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
		uint8_t dmac[6] = { 0x33, 0x33, 0xff, e->ip[13], e->ip[14], e->ip[15] };

		memcpy(dst + 13, e->ip + 13, 3);
		send_nd(n->tp, dmac, e->sgid, dst, ND_NS, 0, e->ip);
	}
}

/* ---- cache --------------------------------------------------------------------- */

static bool ent_timed(const struct roce_neigh_ent *e)
{
	return e->state == NE_INCOMPLETE || e->state == NE_PROBE || e->state == NE_FAILED;
}

static void neigh_arm(struct roce_neigh *n)
{
	uint64_t next = UINT64_MAX;

	if (!n->tp->loop)
		return;
	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++)
		if (ent_timed(&n->e[i]) && n->e[i].deadline < next)
			next = n->e[i].deadline;
	if (next != UINT64_MAX)
		loop_timer_arm(n->tp->loop, &n->timer, next);
	else
		loop_timer_cancel(n->tp->loop, &n->timer);
}

/* Start a round of requests for e (INCOMPLETE, or PROBE keeping its MAC). */
static void ent_ask(struct roce_neigh *n, struct roce_neigh_ent *e, uint8_t state, uint64_t now)
{
	e->state = state;
	e->tries = 1;
	e->wanted = false;
	send_request(n, e);
	e->deadline = now + ROCE_TP_NEIGH_RETRY_NS;
}

static uint64_t ent_backoff(const struct roce_neigh_ent *e)
{
	uint64_t b = ROCE_TP_NEIGH_BACKOFF_NS;

	for (unsigned i = 1; i < e->fails && b < ROCE_TP_NEIGH_BACKOFF_MAX_NS; i++)
		b *= 2;
	return MIN(b, ROCE_TP_NEIGH_BACKOFF_MAX_NS);
}

static void neigh_timer(struct loop_timer *t, void *arg)
{
	struct roce_neigh *n = arg;
	uint64_t now = loop_now_ns();
	bool changed = false;

	(void)t;
	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++) {
		struct roce_neigh_ent *e = &n->e[i];

		if (!ent_timed(e) || e->deadline > now)
			continue;
		if (e->state == NE_FAILED) {
			/* Backoff over: ask again if anything still wants it. */
			if (e->wanted) {
				ent_ask(n, e, NE_INCOMPLETE, now);
			} else {
				e->state = NE_FREE;
				e->fails = 0;
			}
			continue;
		}
		if (e->tries >= ROCE_TP_NEIGH_TRIES) {
			ent_purge(n, e);
			n->tp->stats.neigh_failed++;
			if (e->fails < UINT8_MAX)
				e->fails++;
			e->state = NE_FAILED;
			e->wanted = false;
			e->deadline = now + ent_backoff(e);
			changed = true;
			continue;
		}
		send_request(n, e);
		e->tries++;
		e->deadline = now + ROCE_TP_NEIGH_RETRY_NS;
	}
	neigh_arm(n);
	if (changed)
		roce_tp_neigh_changed(n->tp);
}

/* The entry for dgid, created (and asked for) if absent. NULL never. */
static struct roce_neigh_ent *neigh_get(struct roce_neigh *n, const uint8_t sgid[16],
					const uint8_t dgid[16], uint64_t now)
{
	struct roce_neigh_ent *e = neigh_find(n, dgid);

	if (!e) {
		e = neigh_victim(n);
		memcpy(e->ip, dgid, 16);
		memcpy(e->sgid, sgid, 16);
		pkt_queue_init(&e->q);
		e->fails = 0;
		e->used = now;
		ent_ask(n, e, NE_INCOMPLETE, now);
		neigh_arm(n);
		return e;
	}
	memcpy(e->sgid, sgid, 16);
	e->used = now;
	if (e->state == NE_VALID && n->tp->loop && now >= e->deadline) {
		/* Expired: keep using the MAC while asking again. */
		n->tp->stats.neigh_refreshes++;
		ent_ask(n, e, NE_PROBE, now);
		neigh_arm(n);
	}
	return e;
}

static bool ent_usable(const struct roce_neigh_ent *e)
{
	return e->state == NE_VALID || e->state == NE_PROBE;
}

bool roce_neigh_local(struct roce_neigh *n, const uint8_t dgid[16])
{
	return neigh_dst_ours(n, dgid) || neigh_pin(n, dgid)->pinned;
}

bool roce_neigh_near(struct roce_neigh *n, const uint8_t dgid[16])
{
	uint64_t gen = psec_generation(), gid_gen = n->tp->rd->gid_gen;
	const struct roce_neigh_pin *c;

	/* (the registry's generation starts at 1: the first call looks) */
	if (likely(n->near_psec_gen == gen && n->near_gid_gen == gid_gen &&
		   n->near_loop == (const void *)n->tp->loop && !memcmp(n->near_dgid, dgid, 16)))
		return n->near;
	if (neigh_dst_ours(n, dgid)) {
		n->near = true;
	} else {
		c = neigh_pin(n, dgid);
		n->near = c->pinned && c->home && c->home == (const void *)n->tp->loop;
	}
	memcpy(n->near_dgid, dgid, 16);
	n->near_loop = n->tp->loop;
	n->near_gid_gen = gid_gen;
	n->near_psec_gen = gen;
	return n->near;
}

void roce_neigh_resolve(struct roce_neigh *n, const uint8_t sgid[16], const uint8_t dgid[16])
{
	(void)neigh_get(n, sgid, dgid, neigh_now(n));
}

bool roce_neigh_lookup(struct roce_neigh *n, const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t mac[6])
{
	struct roce_neigh_ent *e;

	if (neigh_dst_ours(n, dgid)) {
		/* another context of this device: the switch hairpins it */
		memcpy(mac, n->tp->rd->mac, 6);
		return true;
	}
	if (neigh_pinned(n, dgid, mac)) {
		n->tp->stats.neigh_pinned++;
		return true;
	}
	e = neigh_get(n, sgid, dgid, neigh_now(n));
	if (ent_usable(e)) {
		memcpy(mac, e->mac, 6);
		return true;
	}
	e->wanted = true;
	return false;
}

void roce_neigh_output(struct roce_neigh *n, struct pkt *p, const uint8_t sgid[16],
		       const uint8_t dgid[16])
{
	struct roce_tp *tp = n->tp;
	struct roce_neigh_ent *e;

	/* One of our own addresses (a QP of this device, maybe of another of
	 * its contexts): no resolution, the switch hairpins the frame back. */
	if (neigh_dst_ours(n, dgid)) {
		memcpy(p->data, tp->rd->mac, 6);
		neigh_xmit(tp, p);
		return;
	}
	if (neigh_pinned(n, dgid, p->data)) {
		/* a local device's pinned address: never resolved on the wire */
		tp->stats.neigh_pinned++;
		neigh_xmit(tp, p);
		return;
	}
	e = neigh_get(n, sgid, dgid, neigh_now(n));
	if (ent_usable(e)) {
		memcpy(p->data, e->mac, 6);
		neigh_xmit(tp, p);
		return;
	}
	e->wanted = true;
	if (e->state == NE_FAILED || e->q.len >= ROCE_TP_NEIGH_QLEN) {
		tp->stats.neigh_dropped++;
		pkt_free(p);
	} else {
		pkt_queue_push(&e->q, p);
		tp->stats.neigh_queued++;
	}
}

/* ip is at mac: complete a pending entry (a reply, or the peer's own request
 * while we ask) or refresh a known one with the same MAC. Answers for
 * addresses we never asked about, and any attempt to move a live or pinned
 * entry, are ignored. */
static void neigh_learn(struct roce_neigh *n, const uint8_t *ip, const uint8_t *mac, bool reply)
{
	struct roce_neigh_ent *e = neigh_find(n, ip);
	uint8_t pinned[6];
	uint64_t now = neigh_now(n);
	struct pkt *p;
	bool wake, live, moved;

	if (!e || (mac[0] & 1) || !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return;
	live = e->state == NE_VALID && (!n->tp->loop || now < e->deadline);
	moved = ent_usable(e) && memcmp(e->mac, mac, 6);
	if (neigh_pinned(n, ip, pinned) || (moved && (live || !reply))) {
		/* pinned, or moving a live entry (or a probed one without an
		 * answer): not learned */
		n->tp->stats.neigh_ignored++;
		return;
	}
	wake = !ent_usable(e);
	if (e->state == NE_INCOMPLETE || e->state == NE_FAILED)
		n->tp->stats.neigh_resolved++;
	memcpy(e->mac, mac, 6);
	e->state = NE_VALID;
	e->fails = 0;
	e->wanted = false;
	e->deadline = now + ROCE_TP_NEIGH_TTL_NS;
	while ((p = pkt_queue_pop(&e->q))) {
		memcpy(p->data, mac, 6);
		neigh_xmit(n->tp, p);
	}
	neigh_arm(n);
	if (wake)
		roce_tp_neigh_changed(n->tp);
}

static void rx_arp(struct roce_neigh *n, const uint8_t *a)
{
	struct roce_tp *tp = n->tp;
	uint8_t gid[16];

	if (get_be16(a) != 1 || get_be16(a + 2) != ROCE_ETH_P_IPV4 || a[4] != 6 || a[5] != 4)
		return;
	tp->stats.rx_arp++;
	roce_gid_from_ipv4(gid, a + 14);
	neigh_learn(n, gid, a + 8, get_be16(a + 6) == 2);
	if (get_be16(a + 6) == 1 && roce_neigh_ip4_ours(tp->rd, a + 24))
		send_arp(tp, a + 8, 2, a + 24, a + 8, a + 14);
}

static void rx_nd(struct roce_neigh *n, const struct pkt *p, uint32_t l3)
{
	static const uint8_t unspec[16];
	struct roce_tp *tp = n->tp;
	const uint8_t *ip = p->data + l3, *m = ip + ROCE_IPV6_HLEN, *lla = NULL;
	uint32_t len = get_be16(ip + 4), off;

	if (p->len < l3 + ROCE_IPV6_HLEN + len || len < 24 || ip[7] != 255 ||
	    (m[0] != ND_NS && m[0] != ND_NA) || m[1] != 0 ||
	    icmp6_csum(ip + 8, ip + 24, m, len) != 0)
		return;
	tp->stats.rx_nd++;
	/* Options: type, length in 8-byte units. */
	for (off = 24; off + 8 <= len; ) {
		uint32_t olen = m[off + 1] * 8u;

		if (!olen || off + olen > len)
			break;
		if ((m[0] == ND_NS && m[off] == 1) || (m[0] == ND_NA && m[off] == 2))
			lla = m + off + 2;
		off += olen;
	}
	if (m[0] == ND_NS) {
		const uint8_t *src = ip + 8, *target = m + 8;
		const uint8_t *dmac = lla ? lla : p->data + 6;

		if (lla && memcmp(src, unspec, 16))
			neigh_learn(n, src, lla, false);
		if (!rres_gid_has(tp->rd, target) || roce_gid_is_ipv4(target))
			return;
		if (!memcmp(src, unspec, 16)) {
			/* Duplicate address detection: answer all nodes. */
			static const uint8_t all[16] = { 0xff, 0x02, [15] = 0x01 };
			static const uint8_t all_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };

			send_nd(tp, all_mac, target, all, ND_NA, 0x20, target);
		} else {
			send_nd(tp, dmac, target, src, ND_NA, 0x60, target);
		}
	} else {
		neigh_learn(n, m + 8, lla ? lla : p->data + 6, true);
	}
}

void roce_neigh_rx(struct roce_neigh *n, struct pkt *p)
{
	uint32_t l3 = ROCE_ETH_HLEN;
	uint16_t type;

	if (p->len < ROCE_ETH_HLEN)
		goto out;
	type = get_be16(p->data + 12);
	if (type == ROCE_ETH_P_8021Q) {
		if (p->len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			goto out;
		type = get_be16(p->data + 16);
		l3 += ROCE_VLAN_HLEN;
	}
	if (type == ETH_P_ARP && p->len >= l3 + ARP_LEN)
		rx_arp(n, p->data + l3);
	else if (type == ROCE_ETH_P_IPV6 && p->len >= l3 + ROCE_IPV6_HLEN &&
		 p->data[l3 + 6] == ICMP6_PROTO)
		rx_nd(n, p, l3);
out:
	pkt_free(p);
}

bool roce_neigh_wants(const struct roce_tp *tp, const struct pkt *p)
{
	const uint8_t *d = p->data;
	uint32_t l3 = ROCE_ETH_HLEN;
	uint16_t type;

	if (p->len < ROCE_ETH_HLEN)
		return false;
	type = get_be16(d + 12);
	if (type == ROCE_ETH_P_8021Q) {
		if (p->len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			return false;
		type = get_be16(d + 16);
		l3 += ROCE_VLAN_HLEN;
	}
	if (type == ETH_P_ARP)
		/* requests for our address and replies to us both carry it
		 * as the target protocol address */
		return p->len >= l3 + ARP_LEN && roce_neigh_ip4_ours(tp->rd, d + l3 + 24);
	if (type != ROCE_ETH_P_IPV6 || p->len < l3 + ROCE_IPV6_HLEN + 24 ||
	    d[l3 + 6] != ICMP6_PROTO)
		return false;
	if (d[l3 + ROCE_IPV6_HLEN] == ND_NS)
		return rres_gid_has(tp->rd, d + l3 + ROCE_IPV6_HLEN + 8);
	if (d[l3 + ROCE_IPV6_HLEN] == ND_NA)
		return !memcmp(d, tp->rd->mac, 6);
	return false;
}

/* ---- life cycle ---------------------------------------------------------------- */

struct roce_neigh *roce_neigh_new(struct roce_tp *tp)
{
	struct roce_neigh *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->tp = tp;
	loop_timer_init(&n->timer, neigh_timer, n);
	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++)
		pkt_queue_init(&n->e[i].q);
	return n;
}

void roce_neigh_flush(struct roce_neigh *n)
{
	for (unsigned i = 0; i < ROCE_TP_NEIGH_SIZE; i++) {
		pkt_queue_purge(&n->e[i].q);
		n->e[i].state = NE_FREE;
		n->e[i].fails = 0;
	}
	if (n->tp->loop)
		loop_timer_cancel(n->tp->loop, &n->timer);
}

void roce_neigh_free(struct roce_neigh *n)
{
	if (!n)
		return;
	roce_neigh_flush(n);
	free(n);
}
