/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The built-in L2 switch (port.h).
 *
 * Life of a frame: sw_input() validates the buffer, captures it (pcap), drops
 * runts, counts it, hands it to the fault injector configured for its input
 * port (if any), and then sw_forward() learns the source MAC and sends the
 * frame to the learned port or floods it.
 *
 * MAC table: open addressing with linear probing and backward-shift deletion
 * (no tombstones), keyed hash with a per-switch random key so that untrusted
 * source MACs cannot be chosen to collide. At most SW_MAC_MAX entries: when
 * full, new MACs are not learned (frames to them are flooded, which is still
 * correct) and learn_full is counted. Entries are forgotten when their port
 * detaches and aged out after SW_MAC_AGE_SEC seconds without a frame from
 * them (a sweep timer, only when the switch has a loop).
 *
 * Counting: the switch counts rx_* of the input port and tx_frames/tx_bytes
 * of the output port when it hands a frame to xmit(); a port counts its own
 * tx_dropped when it cannot take a frame.
 *
 * xmit() runs in the middle of a flood: besides not re-entering sw_input(),
 * it must not attach or detach ports either. The switch, its pcap writer and
 * its fault injectors use the loop's timers and pollers: free the switch
 * before the loop.
 */
#include "port/port.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/fault.h"
#include "port/pcap.h"
#include "port/pkt.h"
#include "roce/roce_pkt.h"

#define ETH_ALEN 6
#define ETH_HDR_LEN 14

#define SW_MAC_SLOTS 8192u /* power of two */
#define SW_MAC_MASK (SW_MAC_SLOTS - 1)
#define SW_MAC_KEY_VALID (1ull << 48)

struct sw_mac {
	uint64_t key;  /* MAC in bits 0-47 | SW_MAC_KEY_VALID; 0 = empty */
	uint16_t port;
	uint8_t hit;   /* seen since the last aging sweep */
	uint8_t pinned; /* static entry (sw_mac_pin): never moves nor ages */
};

/* Per input port: the table slots of the last source and destination MACs
 * it used, valid while the table's generation is unchanged (any insert,
 * removal, move or pin bumps it), so a stream of frames between two known
 * MACs skips the hashing (docs/design.md, "switch"). */
struct sw_port_cache {
	uint64_t gen;
	uint64_t src_key, dst_key; /* 0: none */
	uint32_t src_slot, dst_slot;
};

/* A fault configuration restricted to one port name. */
struct sw_named_fault {
	struct sw_named_fault *next;
	char name[FAULT_PORT_NAME_MAX];
	struct fault *f;
};

struct sw {
	struct loop *loop;
	struct port *ports[SW_MAX_PORTS];  /* by id */
	struct port *list[SW_MAX_PORTS];   /* attached ports, dense */
	uint32_t nports;
	struct fault *port_fault[SW_MAX_PORTS]; /* effective injector per id */

	struct sw_mac *mac;
	uint32_t nmac;
	uint16_t learned[SW_MAX_PORTS]; /* learned (not pinned) entries per port id */
	uint64_t mac_gen; /* bumped by every change of a slot's key or port */
	struct sw_port_cache cache[SW_MAX_PORTS]; /* by input port id */
	uint64_t hash_k0, hash_k1;
	struct loop_timer age_timer;

	struct pcapw *pcap;
	struct pcapw *port_pcap[SW_MAX_PORTS]; /* per-port capture, both ways */
	struct fault *fault_all;
	struct sw_named_fault *named;

	/* Flow control: waiting[id]: port id was refused since it was last
	 * woken (it may wait for several ports at once: one per receiver it
	 * holds frames for); waited[id]: some port was refused by id. */
	bool waiting[SW_MAX_PORTS];
	bool waited[SW_MAX_PORTS];
	uint32_t wake_next;

	/* Counters of fault instances already freed (see sw_get_stats). */
	struct fault_stats fault_retired;
	/* Behind a pointer so sw_get_stats() can refresh it from a const sw. */
	struct sw_stats *stats;
};

/* ---- MAC table ---- */

static inline uint64_t mac_key(const uint8_t *mac)
{
	return ((uint64_t)mac[0] << 40 | (uint64_t)mac[1] << 32 | (uint64_t)mac[2] << 24 |
		(uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | (uint64_t)mac[5]) |
	       SW_MAC_KEY_VALID;
}

static inline uint32_t mac_hash(const struct sw *s, uint64_t key)
{
	unsigned __int128 m = (unsigned __int128)(key ^ s->hash_k0) * (s->hash_k1 | 1);

	return (uint32_t)((uint64_t)m ^ (uint64_t)(m >> 64)) & SW_MAC_MASK;
}

static struct sw_mac *mac_find(const struct sw *s, uint64_t key)
{
	uint32_t i = mac_hash(s, key);

	for (;;) {
		struct sw_mac *e = &s->mac[i];

		if (e->key == key)
			return e;
		if (!e->key)
			return NULL;
		i = (i + 1) & SW_MAC_MASK;
	}
}

/* Remove the entry in slot i, shifting later entries of the same probe run
 * back so lookups never need tombstones. */
static void mac_remove_slot(struct sw *s, uint32_t i)
{
	uint32_t j = i;

	s->mac_gen++;
	if (!s->mac[i].pinned && s->learned[s->mac[i].port])
		s->learned[s->mac[i].port]--;
	for (;;) {
		uint32_t home;

		j = (j + 1) & SW_MAC_MASK;
		if (!s->mac[j].key)
			break;
		home = mac_hash(s, s->mac[j].key);
		/* Move j into the hole at i unless its home lies cyclically
		 * in (i, j]. */
		if (((j - home) & SW_MAC_MASK) >= ((j - i) & SW_MAC_MASK)) {
			s->mac[i] = s->mac[j];
			i = j;
		}
	}
	memset(&s->mac[i], 0, sizeof(s->mac[i]));
	s->nmac--;
}

/* A port at its learned-MAC limit learns nothing more (counted). */
static bool sw_port_limit_hit(struct sw *s, struct port *in)
{
	unsigned limit = in->mac_limit ? in->mac_limit : SW_PORT_MAC_MAX;

	if (s->learned[in->id] < limit)
		return false;
	in->stats.learn_limited++;
	return true;
}

/* Remember slot i as port's source entry (the destination entry stays
 * remembered only if the table did not change since). */
static inline void sw_cache_src(struct sw *s, struct sw_port_cache *c, uint64_t key, uint32_t i)
{
	if (c->gen != s->mac_gen) {
		c->gen = s->mac_gen;
		c->dst_key = 0;
	}
	c->src_key = key;
	c->src_slot = i;
}

/* The entry of destination key for frames from port id, NULL if unknown. */
static inline const struct sw_mac *sw_dst_find(struct sw *s, uint16_t id, uint64_t key)
{
	struct sw_port_cache *c = &s->cache[id];
	const struct sw_mac *e;

	if (likely(c->gen == s->mac_gen && c->dst_key == key))
		return &s->mac[c->dst_slot];
	e = mac_find(s, key);
	if (e) {
		if (c->gen != s->mac_gen) {
			c->gen = s->mac_gen;
			c->src_key = 0;
		}
		c->dst_key = key;
		c->dst_slot = (uint32_t)(e - s->mac);
	}
	return e;
}

/* Learn mac on port. Returns false if mac is pinned to another port (the
 * frame claims an address it does not own and must be dropped). */
static bool mac_learn(struct sw *s, const uint8_t *mac, struct port *in)
{
	uint16_t port = in->id;
	struct sw_port_cache *c = &s->cache[port];
	uint64_t key;
	uint32_t i;

	/* Group addresses and 00:00:00:00:00:00 are never sources. */
	if (mac[0] & 1)
		return true;
	key = mac_key(mac);
	if (unlikely(key == SW_MAC_KEY_VALID))
		return true;
	/* Known on this port and the table unchanged: only mark it fresh. */
	if (likely(c->gen == s->mac_gen && c->src_key == key)) {
		s->mac[c->src_slot].hit = 1;
		return true;
	}
	i = mac_hash(s, key);
	for (;;) {
		struct sw_mac *e = &s->mac[i];

		if (e->key == key) {
			if (e->pinned) {
				if (unlikely(e->port != port)) {
					in->stats.rx_spoofed++;
					return false;
				}
				sw_cache_src(s, c, key, i);
				return true;
			}
			if (unlikely(e->port != port)) {
				/* the MAC moved, within the new port's limit */
				if (sw_port_limit_hit(s, in))
					return true;
				if (s->learned[e->port])
					s->learned[e->port]--;
				s->learned[port]++;
				e->port = port;
				s->mac_gen++;
			}
			e->hit = 1;
			sw_cache_src(s, c, key, i);
			return true;
		}
		if (!e->key)
			break;
		i = (i + 1) & SW_MAC_MASK;
	}
	if (unlikely(s->nmac >= SW_MAC_MAX)) {
		s->stats->learn_full++;
		return true;
	}
	if (sw_port_limit_hit(s, in))
		return true;
	s->mac[i].key = key;
	s->mac[i].port = port;
	s->mac[i].hit = 1;
	s->mac[i].pinned = 0;
	s->learned[port]++;
	s->nmac++;
	s->mac_gen++;
	sw_cache_src(s, c, key, i);
	return true;
}

int sw_mac_pin(struct sw *s, const uint8_t mac[6], struct port *p)
{
	uint64_t key = mac_key(mac);
	uint32_t i;

	if (!s || !p || p->sw != s || (mac[0] & 1) || key == SW_MAC_KEY_VALID)
		return -EINVAL;
	i = mac_hash(s, key);
	for (;;) {
		struct sw_mac *e = &s->mac[i];

		if (e->key == key) {
			if (e->pinned && e->port != p->id)
				return -EADDRINUSE;
			if (!e->pinned && s->learned[e->port])
				s->learned[e->port]--;
			e->port = p->id;
			e->pinned = 1;
			s->mac_gen++;
			e->hit = 1;
			return 0;
		}
		if (!e->key)
			break;
		i = (i + 1) & SW_MAC_MASK;
	}
	/* pinned entries may use the slots above SW_MAC_MAX, never the last */
	if (s->nmac >= SW_MAC_SLOTS - SW_MAX_PORTS / 2)
		return -ENOSPC;
	s->mac[i].key = key;
	s->mac[i].port = p->id;
	s->mac[i].hit = 1;
	s->mac[i].pinned = 1;
	s->nmac++;
	s->mac_gen++;
	return 0;
}

void sw_mac_unpin(struct sw *s, const uint8_t mac[6], struct port *p)
{
	struct sw_mac *e;

	if (!s || !p)
		return;
	e = mac_find(s, mac_key(mac));
	if (e && e->pinned && e->port == p->id)
		mac_remove_slot(s, (uint32_t)(e - s->mac));
}

bool sw_mac_pinned(const struct sw *s, const uint8_t mac[6])
{
	const struct sw_mac *e = mac_find(s, mac_key(mac));

	return e && e->pinned;
}

/* Remove the entries of port (if >= 0) and, when aging, those not seen since
 * the last sweep (clearing the mark of the others). The scan starts after an
 * empty slot (the table is never full), so a backward shift only ever moves
 * an entry from a slot not yet scanned into the one being scanned. */
static void mac_sweep(struct sw *s, int port, bool aging)
{
	uint32_t start = 0, c = 0;

	while (s->mac[start].key)
		start = (start + 1) & SW_MAC_MASK;
	while (c < SW_MAC_SLOTS) {
		uint32_t i = (start + c) & SW_MAC_MASK;
		struct sw_mac *e = &s->mac[i];

		if (e->key && ((port >= 0 && e->port == port) ||
			       (aging && !e->hit && !e->pinned))) {
			mac_remove_slot(s, i);
			continue; /* slot i may hold a shifted entry now */
		}
		if (aging)
			e->hit = 0;
		c++;
	}
}

void sw_mac_age(struct sw *s)
{
	mac_sweep(s, -1, true);
}

static void sw_age_cb(struct loop_timer *t, void *arg)
{
	struct sw *s = arg;

	(void)t;
	sw_mac_age(s);
	loop_timer_arm(s->loop, &s->age_timer,
		       loop_now_ns() + SW_MAC_AGE_SEC * 1000000000ull / 2);
}

int sw_mac_lookup(const struct sw *s, const uint8_t mac[6])
{
	const struct sw_mac *e = mac_find(s, mac_key(mac));

	return e ? e->port : -ENOENT;
}

unsigned sw_mac_count(const struct sw *s)
{
	return s->nmac;
}

/* ---- lifecycle ---- */

struct sw *sw_new(struct loop *loop)
{
	struct sw *s;
	uint64_t k[2];

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->stats = calloc(1, sizeof(*s->stats));
	s->mac = calloc(SW_MAC_SLOTS, sizeof(*s->mac));
	if (!s->stats || !s->mac) {
		free(s->stats);
		free(s->mac);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	if (getrandom(k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		k[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uintptr_t)s;
		k[1] = (uint64_t)ts.tv_sec * 0xbf58476d1ce4e5b9ull ^ (uintptr_t)&ts;
	}
	s->hash_k0 = k[0];
	s->hash_k1 = k[1];
	s->loop = loop;
	loop_timer_init(&s->age_timer, sw_age_cb, s);
	if (loop)
		loop_timer_arm(loop, &s->age_timer,
			       loop_now_ns() + SW_MAC_AGE_SEC * 1000000000ull / 2);
	return s;
}

static void fault_stats_add(struct fault_stats *t, const struct fault *f)
{
	const struct fault_stats *fs;

	if (!f)
		return;
	fs = fault_get_stats(f);
	t->frames += fs->frames;
	t->dropped += fs->dropped;
	t->duplicated += fs->duplicated;
	t->reordered += fs->reordered;
	t->corrupted += fs->corrupted;
	t->ce_marked += fs->ce_marked;
	t->run_passed += fs->run_passed;
}

static void sw_retire_fault(struct sw *s, struct fault *f)
{
	if (!f)
		return;
	fault_stats_add(&s->fault_retired, f);
	fault_free(f);
}

void sw_free(struct sw *s)
{
	struct sw_named_fault *n;

	if (!s)
		return;
	/* Ports still attached are left to their owners, unlinked. */
	for (uint32_t i = 0; i < s->nports; i++)
		s->list[i]->sw = NULL;
	if (s->loop && loop_timer_armed(&s->age_timer))
		loop_timer_cancel(s->loop, &s->age_timer);
	while ((n = s->named)) {
		s->named = n->next;
		fault_free(n->f);
		free(n);
	}
	fault_free(s->fault_all);
	pcapw_close(s->pcap);
	for (uint32_t i = 0; i < SW_MAX_PORTS; i++)
		pcapw_close(s->port_pcap[i]);
	free(s->mac);
	free(s->stats);
	free(s);
}

static struct fault *sw_fault_for_name(struct sw *s, const char *name)
{
	for (struct sw_named_fault *n = s->named; n; n = n->next)
		if (!strncmp(n->name, name, sizeof(n->name)))
			return n->f;
	return s->fault_all;
}

int sw_attach(struct sw *s, struct port *p)
{
	uint32_t id;

	if (!s || !p || !p->ops || !p->ops->xmit)
		return -EINVAL;
	if (p->sw == s && p->id < SW_MAX_PORTS && s->ports[p->id] == p)
		return -EBUSY;
	if (s->nports >= SW_MAX_PORTS)
		return -ENOSPC;
	for (id = 0; id < SW_MAX_PORTS; id++)
		if (!s->ports[id])
			break;
	p->name[sizeof(p->name) - 1] = '\0';
	p->id = (uint16_t)id;
	p->sw = s;
	s->ports[id] = p;
	s->list[s->nports++] = p;
	s->port_fault[id] = p->trunk ? NULL : sw_fault_for_name(s, p->name);
	return 0;
}

void sw_detach(struct sw *s, struct port *p)
{
	struct sw_named_fault *n;

	if (!s || !p || p->sw != s || p->id >= SW_MAX_PORTS || s->ports[p->id] != p)
		return;
	for (uint32_t i = 0; i < s->nports; i++) {
		if (s->list[i] == p) {
			s->list[i] = s->list[--s->nports];
			break;
		}
	}
	s->ports[p->id] = NULL;
	s->port_fault[p->id] = NULL;
	s->learned[p->id] = 0;
	s->waiting[p->id] = false;
	sw_port_ready(s, p); /* who waited for p retries (and meets no port) */
	pcapw_close(s->port_pcap[p->id]);
	s->port_pcap[p->id] = NULL;
	/* Frames of this port still held for reordering die with it. */
	if (s->fault_all)
		fault_discard_stream(s->fault_all, p->id);
	for (n = s->named; n; n = n->next)
		fault_discard_stream(n->f, p->id);
	mac_sweep(s, p->id, false);
	s->mac_gen++; /* forget what the id's cache holds */
	p->sw = NULL;
}

void port_destroy(struct port *p)
{
	if (!p)
		return;
	if (p->sw)
		sw_detach(p->sw, p);
	if (p->ops && p->ops->destroy)
		p->ops->destroy(p);
}

/* ---- data path ---- */

/* A frame our transport sent without its ICRC (PKT_F_LOCAL_ICRC_SKIPPED)
 * gets it before anything outside the process sees it: the capture, the
 * fault injector, any port but a local device's (port.icrc_skip_ok), such as
 * an uplink (docs/design.md, "ICRC between local devices").
 * Returns 0, or -EINVAL for a frame that is not laid out as ours. */
static inline int sw_seal(struct pkt *pkt)
{
	/* (roce_pkt_fill_icrc first fills in a payload left by reference.) */
	if (likely(!(pkt->flags & (PKT_F_LOCAL_ICRC_SKIPPED | PKT_F_PAYLOAD_REF))))
		return 0;
	return roce_pkt_fill_icrc(pkt);
}

static int sw_seal_fn(struct pkt *pkt)
{
	return sw_seal(pkt);
}

static inline void sw_xmit(struct port *out, struct pkt *pkt)
{
	if (unlikely(!out->icrc_skip_ok || out->sw->port_pcap[out->id]) &&
	    unlikely(sw_seal(pkt))) {
		out->stats.tx_dropped++;
		pkt_free(pkt);
		return;
	}
	if (unlikely(out->sw->port_pcap[out->id]))
		pcapw_write(out->sw->port_pcap[out->id], pkt->data, pkt->len);
	out->stats.tx_frames += pkt_npkts(pkt);
	out->stats.tx_bytes += pkt_wire_len(pkt);
	out->ops->xmit(out, pkt);
}

/* A run (PKT_F_RUN: several packets in one frame, docs/design.md "Runs
 * between local devices") where real frames must exist: its frames, in
 * order, go where it would have gone (a failed split is a loss, counted). */
enum sw_split_to {
	SPLIT_INPUT,   /* into sw_input from port (capture, fault injection) */
	SPLIT_FORWARD, /* into sw_forward (flooding) */
	SPLIT_XMIT,    /* out of port (not a local device's, or captured) */
};

static void sw_forward(struct sw *s, struct pkt *pkt);

static void sw_split(struct sw *s, enum sw_split_to to, struct port *port, struct pkt *pkt)
{
	struct pkt_queue q;
	struct pkt *f;

	pkt_queue_init(&q);
	if (unlikely(roce_run_split(pkt, &q))) {
		/* No memory for the frames: every packet of the run is lost
		 * (the sender recovers as from a loss); counted where it was. */
		if (to == SPLIT_XMIT)
			port->stats.tx_dropped += pkt_npkts(pkt);
		else
			port->stats.rx_errors += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	pkt_free(pkt);
	while ((f = pkt_queue_pop(&q))) {
		if (to == SPLIT_XMIT)
			sw_xmit(port, f);
		else if (to == SPLIT_FORWARD)
			sw_forward(s, f);
		else
			sw_input(s, port, f);
	}
}

/* Every port but the input port gets the frame; the last one gets the
 * original, the others a copy. */
static void sw_flood(struct sw *s, struct pkt *pkt, const struct port *in)
{
	struct port *last = NULL;

	for (uint32_t i = 0; i < s->nports; i++) {
		struct port *o = s->list[i];
		struct pkt *c;

		if (o == in || (in->trunk && o->trunk))
			continue;
		if (last) {
			c = pkt_clone(pkt);
			if (unlikely(!c))
				last->stats.tx_dropped++;
			else
				sw_xmit(last, c);
		}
		last = o;
	}
	if (!last) {
		s->stats->dropped_no_port++;
		pkt_free(pkt);
		return;
	}
	s->stats->flooded++;
	sw_xmit(last, pkt);
}

/* Forward one frame that passed capture and fault injection. Counters
 * count packets: a run counts the frames it stands for. */
static void sw_forward(struct sw *s, struct pkt *pkt)
{
	struct port *in = pkt->in_port < SW_MAX_PORTS ? s->ports[pkt->in_port] : NULL;
	const uint8_t *dst = pkt->data;
	const struct sw_mac *e;
	struct port *out;

	if (unlikely(!in)) {
		/* Its port went away while the frame was inside. */
		s->stats->dropped_no_port += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	if (unlikely(!mac_learn(s, pkt->data + ETH_ALEN, in))) {
		s->stats->dropped_spoofed += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	/* Broadcast, multicast and unknown unicast flood; a run is split
	 * first (frames are cloned for every port, a run cannot be). */
	e = (dst[0] & 1) ? NULL : sw_dst_find(s, in->id, mac_key(dst));
	if (!e) {
		if (unlikely(pkt->flags & PKT_F_RUN)) {
			sw_split(s, SPLIT_FORWARD, in, pkt); /* each frame floods */
			return;
		}
		sw_flood(s, pkt, in);
		return;
	}
	out = s->ports[e->port];
	if (unlikely(!out)) {
		s->stats->dropped_no_port += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	if (out == in && !in->hairpin) {
		s->stats->dropped_hairpin += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	if (unlikely(in->trunk && out->trunk)) {
		s->stats->dropped_horizon += pkt_npkts(pkt);
		pkt_free(pkt);
		return;
	}
	s->stats->forwarded += pkt_npkts(pkt);
	if (unlikely(pkt->flags & PKT_F_RUN) &&
	    (!out->icrc_skip_ok || out->sw->port_pcap[out->id])) {
		sw_split(s, SPLIT_XMIT, out, pkt); /* real frames beyond a local device */
		return;
	}
	sw_xmit(out, pkt);
}

static void sw_fault_emit(void *arg, struct pkt *pkt)
{
	sw_forward(arg, pkt);
}

/* A run meets the fault injector: packets it leaves alone stay in the run,
 * packets it drops become holes in it (never built, roce_run_lose), and at
 * a packet it does something else to the run is cut: the packets before go
 * on as a (shorter) run, that one as a real frame through the injector, and
 * the packets after it again as a run, with the same decisions as n frames
 * would get (fault_pass_run). */
static void sw_fault_run(struct sw *s, struct fault *f, struct port *p, struct pkt *pkt)
{
	uint32_t done = 0;

	while (pkt) {
		uint32_t n = pkt->npkts;
		struct pkt *fr, *rest = NULL;
		struct pkt_queue q;

		done += fault_pass_run(f, p->id, n - done);
		if (done < n && fault_drop_next(f)) {
			roce_run_lose(pkt, done++);
			continue;
		}
		if (done >= n) {
			if (pkt_npkts(pkt))
				sw_forward(s, pkt);
			else
				pkt_free(pkt); /* every packet lost */
			return;
		}
		pkt_queue_init(&q);
		if (unlikely(roce_run_cut(pkt, done, &q))) {
			p->stats.rx_errors += pkt_npkts(pkt);
			pkt_free(pkt);
			return;
		}
		if (done && pkt_npkts(pkt))
			sw_forward(s, pkt);
		else
			pkt_free(pkt);
		while ((fr = pkt_queue_pop(&q))) {
			if (fr->flags & PKT_F_RUN)
				rest = fr; /* the last one */
			else
				fault_input(f, p->id, fr);
		}
		pkt = rest;
		done = 0;
	}
}

void sw_input(struct sw *s, struct port *p, struct pkt *pkt)
{
	struct fault *f;
	size_t off;

	if (unlikely(!pkt))
		return;
	if (unlikely(!s || !p || p->sw != s)) {
		pkt_free(pkt);
		return;
	}
	/* A port bug must not become an out-of-bounds access. */
	off = (size_t)(pkt->data - pkt->buf);
	if (unlikely(off > PKT_BUF_SIZE || pkt->len > PKT_BUF_SIZE - off ||
		     pkt->len > PKT_MAX_FRAME)) {
		p->stats.rx_errors++;
		s->stats->dropped_runt++;
		pkt_free(pkt);
		return;
	}
	if (unlikely(p->trunk)) {
		/* captured and fault-injected on the switch it entered first */
		p->stats.rx_frames += pkt_npkts(pkt);
		p->stats.rx_bytes += pkt_wire_len(pkt);
		pkt->in_port = p->id;
		sw_forward(s, pkt);
		return;
	}
	if (unlikely(pkt->flags & PKT_F_RUN) && (s->pcap || s->port_pcap[p->id])) {
		/* a capture sees real frames */
		sw_split(s, SPLIT_INPUT, p, pkt);
		return;
	}
	/* (The fault injector seals only the frames it corrupts.) */
	if (unlikely(s->pcap || s->port_pcap[p->id]) && unlikely(sw_seal(pkt))) {
		p->stats.rx_errors++;
		s->stats->dropped_runt++;
		pkt_free(pkt);
		return;
	}
	if (s->pcap)
		pcapw_write(s->pcap, pkt->data, pkt->len);
	if (unlikely(s->port_pcap[p->id]))
		pcapw_write(s->port_pcap[p->id], pkt->data, pkt->len);
	if (unlikely(pkt->len < ETH_HDR_LEN)) {
		p->stats.rx_errors++;
		s->stats->dropped_runt++;
		pkt_free(pkt);
		return;
	}
	p->stats.rx_frames += pkt_npkts(pkt);
	p->stats.rx_bytes += pkt_wire_len(pkt);
	pkt->in_port = p->id;
	f = s->port_fault[p->id];
	if (f && unlikely(pkt->flags & PKT_F_RUN)) {
		sw_fault_run(s, f, p, pkt);
	} else if (f) {
		/* (A payload left by reference stays so: the injector seals a
		 * frame it corrupts, and what it holds or copies keeps the
		 * reference, filled before its memory goes: pkt_ref.c.) */
		fault_input(f, p->id, pkt);
	} else {
		sw_forward(s, pkt);
	}
}

/* ---- flow control between ports of this switch ---- */

/* The port a unicast frame would leave by, if it is known, else NULL. */
static struct port *sw_unicast_out(struct sw *s, const struct port *in, const struct pkt *pkt)
{
	const struct sw_mac *e;

	if (pkt->len < ETH_HDR_LEN || (pkt->data[0] & 1))
		return NULL;
	e = sw_dst_find(s, in->id, mac_key(pkt->data));
	return e ? s->ports[e->port] : NULL;
}

struct port *sw_unicast_port(struct sw *s, const struct port *p, const struct pkt *pkt)
{
	if (!s || !p || !pkt || p->sw != s)
		return NULL;
	return sw_unicast_out(s, p, pkt);
}

int sw_input_try(struct sw *s, struct port *p, struct pkt *pkt)
{
	struct port *out;

	if (likely(s && p && pkt && p->sw == s)) {
		out = sw_unicast_out(s, p, pkt);
		if (out && !out->uplink &&
		    ((out->ops->busy && out->ops->busy(out)) ||
		     (out->ops->busy_to && out->ops->busy_to(out, pkt))) &&
		    (out != p || p->hairpin)) {
			s->waiting[p->id] = true;
			s->waited[out->id] = true;
			s->stats->held_busy += pkt_npkts(pkt);
			return -EAGAIN;
		}
	}
	sw_input(s, p, pkt);
	return 0;
}

void sw_port_ready(struct sw *s, struct port *p)
{
	uint32_t n, start, i;

	if (!s || !p || p->id >= SW_MAX_PORTS || !s->waited[p->id])
		return;
	s->waited[p->id] = false;
	n = s->nports;
	start = n ? s->wake_next++ % n : 0;
	for (i = 0; i < n; i++) {
		struct port *w = s->list[(start + i) % n];

		/* A waiter of several ports is woken by the first of them
		 * to have room: it retries all it holds and is refused (and
		 * waits) again by those still busy. */
		if (!s->waiting[w->id])
			continue;
		s->waiting[w->id] = false;
		s->stats->woken++;
		if (w->ops->ready)
			w->ops->ready(w);
	}
}

/* ---- configuration ---- */

int sw_set_pcap(struct sw *s, const char *path)
{
	struct pcapw *w = NULL;

	if (path) {
		w = pcapw_open(path, s->loop);
		if (!w)
			return -errno;
	}
	pcapw_close(s->pcap);
	s->pcap = w;
	return 0;
}

int sw_set_port_pcap(struct sw *s, struct port *p, const char *path)
{
	struct pcapw *w = NULL;

	if (!s || !p || p->sw != s || p->id >= SW_MAX_PORTS || s->ports[p->id] != p)
		return -EINVAL;
	if (path) {
		w = pcapw_open(path, s->loop);
		if (!w)
			return -errno;
	}
	pcapw_close(s->port_pcap[p->id]);
	s->port_pcap[p->id] = w;
	return 0;
}

const struct pcapw_stats *sw_get_pcap_stats(const struct sw *s)
{
	return s->pcap ? pcapw_get_stats(s->pcap) : NULL;
}

/* Point every attached port at its effective injector. */
static void sw_refresh_port_faults(struct sw *s)
{
	for (uint32_t i = 0; i < s->nports; i++) {
		struct port *p = s->list[i];

		s->port_fault[p->id] = p->trunk ? NULL : sw_fault_for_name(s, p->name);
	}
}

/* Deliver what an injector still holds, then free it. */
static void sw_drop_fault(struct sw *s, struct fault *f)
{
	if (!f)
		return;
	fault_flush(f);
	sw_retire_fault(s, f);
}

int sw_set_fault(struct sw *s, const struct fault_cfg *cfg, const char *port_name)
{
	struct sw_named_fault **pp, *n = NULL;
	struct fault *f = NULL, *old;

	if (!s)
		return -EINVAL;
	if (!port_name && cfg && cfg->port[0])
		port_name = cfg->port;
	if (port_name && (!*port_name || strlen(port_name) >= FAULT_PORT_NAME_MAX))
		return -EINVAL;
	if (cfg && fault_cfg_active(cfg)) {
		f = fault_new(s->loop, cfg, sw_fault_emit, s);
		if (!f)
			return -errno;
		fault_set_seal(f, sw_seal_fn);
	}
	if (!port_name) {
		old = s->fault_all;
		s->fault_all = f;
	} else {
		for (pp = &s->named; *pp; pp = &(*pp)->next)
			if (!strcmp((*pp)->name, port_name))
				break;
		n = *pp;
		if (!n && f) {
			n = calloc(1, sizeof(*n));
			if (!n) {
				fault_free(f);
				return -ENOMEM;
			}
			strcpy(n->name, port_name);
			n->next = s->named;
			s->named = n;
			pp = &s->named;
		}
		old = n ? n->f : NULL;
		if (n && !f) {
			*pp = n->next;
			free(n);
		} else if (n) {
			n->f = f;
		}
	}
	sw_refresh_port_faults(s);
	sw_drop_fault(s, old);
	return 0;
}


const struct sw_stats *sw_get_stats(const struct sw *s)
{
	struct fault_stats t = s->fault_retired;

	fault_stats_add(&t, s->fault_all);
	for (const struct sw_named_fault *n = s->named; n; n = n->next)
		fault_stats_add(&t, n->f);
	s->stats->fault_dropped = t.dropped;
	s->stats->fault_duplicated = t.duplicated;
	s->stats->fault_reordered = t.reordered;
	s->stats->fault_corrupted = t.corrupted;
	s->stats->fault_ce_marked = t.ce_marked;
	s->stats->fault_run_passed = t.run_passed;
	return s->stats;
}
