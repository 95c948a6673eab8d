/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The L2 switch with mock ports that record what they receive: learning,
 * unicast, flooding, hairpin, MAC moves, detach, runts, table bounds, fault
 * hook and frame accounting (no leaks).
 */
#include "harness.h"

#include <errno.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/fault.h"
#include "port/pkt.h"
#include "port/port.h"
#include "unit/eth_frame.h"

struct mock {
	struct port port;
	struct pkt_queue q;
	int destroyed;
};

static void mock_xmit(struct port *p, struct pkt *pkt)
{
	struct mock *m = p->priv;

	pkt_queue_push(&m->q, pkt);
}

static void mock_destroy(struct port *p)
{
	struct mock *m = p->priv;

	pkt_queue_purge(&m->q);
	m->destroyed++;
}

static const struct port_ops mock_ops = { .xmit = mock_xmit, .destroy = mock_destroy };

static void mock_init(struct mock *m, const char *name, bool hairpin)
{
	memset(m, 0, sizeof(*m));
	m->port.ops = &mock_ops;
	m->port.hairpin = hairpin;
	m->port.priv = m;
	snprintf(m->port.name, sizeof(m->port.name), "%s", name);
	pkt_queue_init(&m->q);
}

/* m set up and attached to s. */
static void mock_attach(struct sw *s, struct mock *m, const char *name, bool hairpin)
{
	mock_init(m, name, hairpin);
	CHECK_EQ(sw_attach(s, &m->port), 0);
}

static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MCAST[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };

static void mac_of(uint8_t mac[6], unsigned n)
{
	mac[0] = 0x02; /* locally administered unicast */
	mac[1] = 0x00;
	mac[2] = (uint8_t)(n >> 24);
	mac[3] = (uint8_t)(n >> 16);
	mac[4] = (uint8_t)(n >> 8);
	mac[5] = (uint8_t)n;
}

/* A frame dst <- src with a payload that depends on tag. */
static struct pkt *frame(const uint8_t *dst, const uint8_t *src, uint32_t len, unsigned tag)
{
	struct pkt *p = eth_frame_new(dst, src, len);

	if (!p)
		return NULL;
	for (uint32_t i = 14; i < len; i++)
		p->data[i] = (uint8_t)(i * 7 + tag);
	return p;
}

/* Send a copy of ref through port in; ref stays with the caller. */
static void send_copy(struct sw *s, struct mock *in, const struct pkt *ref)
{
	struct pkt *p = pkt_clone(ref);

	sw_input(s, &in->port, p);
}

/* Pop one frame of m and compare it with ref byte for byte. */
static int got_same(struct mock *m, const struct pkt *ref)
{
	struct pkt *p = pkt_queue_pop(&m->q);
	int ok;

	if (!p)
		return 0;
	ok = p->len == ref->len && !memcmp(p->data, ref->data, ref->len);
	pkt_free(p);
	return ok;
}

static void learn_and_unicast(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b, c;
	uint8_t ma[6], mb[6];
	struct pkt *f1, *f2;

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mock_attach(s, &c, "c", false);
	CHECK(a.port.id != b.port.id && b.port.id != c.port.id);
	mac_of(ma, 1);
	mac_of(mb, 2);

	/* Unknown destination: flooded to b and c, not back to a. */
	f1 = frame(mb, ma, 100, 1);
	send_copy(s, &a, f1);
	CHECK_EQ(a.q.len, 0);
	CHECK_EQ(b.q.len, 1);
	CHECK_EQ(c.q.len, 1);
	CHECK(got_same(&b, f1));
	CHECK(got_same(&c, f1));
	CHECK_EQ(sw_mac_lookup(s, ma), a.port.id);
	CHECK_EQ(sw_mac_lookup(s, mb), -ENOENT);

	/* The reply goes to a only; b's MAC is learned. */
	f2 = frame(ma, mb, 1514, 2);
	send_copy(s, &b, f2);
	CHECK_EQ(a.q.len, 1);
	CHECK_EQ(c.q.len, 0);
	CHECK(got_same(&a, f2));
	CHECK_EQ(sw_mac_lookup(s, mb), b.port.id);

	/* Now a -> b is unicast. */
	send_copy(s, &a, f1);
	CHECK_EQ(b.q.len, 1);
	CHECK_EQ(c.q.len, 0);
	CHECK(got_same(&b, f1));

	CHECK_EQ(sw_get_stats(s)->flooded, 1);
	CHECK_EQ(sw_get_stats(s)->forwarded, 2);
	CHECK_EQ(a.port.stats.rx_frames, 2);
	CHECK_EQ(a.port.stats.rx_bytes, 200);
	CHECK_EQ(a.port.stats.tx_frames, 1);
	CHECK_EQ(a.port.stats.tx_bytes, 1514);
	CHECK_EQ(b.port.stats.tx_frames, 2);
	CHECK_EQ(c.port.stats.tx_frames, 1);

	pkt_free(f1);
	pkt_free(f2);
	port_destroy(&a.port);
	port_destroy(&b.port);
	port_destroy(&c.port);
	CHECK_EQ(a.destroyed + b.destroyed + c.destroyed, 3);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void flood_broadcast_multicast(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock m[4];
	uint8_t src[6];
	struct pkt *fb, *fm;

	REQUIRE(s);
	for (int i = 0; i < 4; i++) {
		char n[8];

		snprintf(n, sizeof(n), "p%d", i);
		mock_init(&m[i], n, i == 0); /* port 0 is a device (hairpin) */
		CHECK_EQ(sw_attach(s, &m[i].port), 0);
	}
	mac_of(src, 10);
	fb = frame(BCAST, src, 64, 3);
	fm = frame(MCAST, src, 64, 4);

	/* A broadcast never comes back to its sender, even with hairpin. */
	send_copy(s, &m[0], fb);
	CHECK_EQ(m[0].q.len, 0);
	for (int i = 1; i < 4; i++)
		CHECK(got_same(&m[i], fb));
	send_copy(s, &m[2], fm);
	CHECK_EQ(m[2].q.len, 0);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			CHECK(got_same(&m[i], fm));
	/* Multicast sources are never learned. */
	fm->data[6] |= 1;
	send_copy(s, &m[3], fm);
	CHECK_EQ(sw_mac_count(s), 1);
	for (int i = 0; i < 3; i++)
		CHECK(got_same(&m[i], fm));
	CHECK_EQ(sw_get_stats(s)->flooded, 3);

	pkt_free(fb);
	pkt_free(fm);
	for (int i = 0; i < 4; i++)
		port_destroy(&m[i].port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void hairpin(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock dev, up, other;
	uint8_t md[6], mu[6], mx[6];
	struct pkt *f;

	REQUIRE(s);
	mock_attach(s, &dev, "dev0", true);
	mock_attach(s, &up, "uplink", false);
	mock_attach(s, &other, "other", false);
	mac_of(md, 20);
	mac_of(mu, 21);
	mac_of(mx, 22);

	/* A device talking to itself gets its frame back (loopback), even
	 * for its very first frame: the source is learned before lookup. */
	f = frame(md, md, 256, 5);
	send_copy(s, &dev, f);
	CHECK_EQ(dev.q.len, 1);
	CHECK(got_same(&dev, f));
	CHECK_EQ(up.q.len + other.q.len, 0);
	pkt_free(f);

	/* A non-hairpin port never gets its own frames back. */
	f = frame(mu, mu, 60, 6);
	send_copy(s, &up, f);
	CHECK_EQ(up.q.len + dev.q.len + other.q.len, 0);
	CHECK_EQ(sw_get_stats(s)->dropped_hairpin, 1);
	pkt_free(f);

	/* Destination learned on the input port (two hosts behind the
	 * uplink): dropped, not reflected. */
	f = frame(mx, mx, 60, 7);
	send_copy(s, &up, f);
	pkt_free(f);
	f = frame(mx, mu, 60, 8);
	send_copy(s, &up, f);
	CHECK_EQ(up.q.len + dev.q.len + other.q.len, 0);
	CHECK_EQ(sw_get_stats(s)->dropped_hairpin, 3);
	pkt_free(f);

	/* Unknown unicast from the device: flood excludes the device. */
	mac_of(mx, 99);
	f = frame(mx, md, 60, 9);
	send_copy(s, &dev, f);
	CHECK_EQ(dev.q.len, 0);
	CHECK(got_same(&up, f));
	CHECK(got_same(&other, f));
	pkt_free(f);

	port_destroy(&dev.port);
	port_destroy(&up.port);
	port_destroy(&other.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void mac_move_and_detach(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b, c;
	uint8_t mx[6], mc[6];
	struct pkt *f;

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mock_attach(s, &c, "c", false);
	mac_of(mx, 30);
	mac_of(mc, 31);

	f = frame(BCAST, mx, 60, 1);
	send_copy(s, &a, f);
	pkt_free(f);
	CHECK_EQ(sw_mac_lookup(s, mx), a.port.id);
	pkt_queue_purge(&b.q);
	pkt_queue_purge(&c.q);

	/* The MAC shows up behind b: it moves. */
	f = frame(BCAST, mx, 60, 2);
	send_copy(s, &b, f);
	pkt_free(f);
	CHECK_EQ(sw_mac_lookup(s, mx), b.port.id);
	CHECK_EQ(sw_mac_count(s), 1);
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&c.q);
	f = frame(mx, mc, 70, 3);
	send_copy(s, &c, f);
	CHECK_EQ(a.q.len, 0);
	CHECK(got_same(&b, f));
	pkt_free(f);

	/* Detach b: its MACs are forgotten, frames to them flood again. */
	sw_detach(s, &b.port);
	CHECK(b.port.sw == NULL);
	CHECK_EQ(sw_mac_lookup(s, mx), -ENOENT);
	CHECK_EQ(sw_mac_lookup(s, mc), c.port.id);
	f = frame(mx, mc, 70, 4);
	send_copy(s, &c, f);
	CHECK(got_same(&a, f));
	CHECK_EQ(b.q.len, 0);
	pkt_free(f);
	/* A detached port cannot inject. */
	f = frame(BCAST, mx, 60, 5);
	sw_input(s, &b.port, f);
	CHECK_EQ(a.q.len + c.q.len, 0);
	/* Its id is reused by the next port attached. */
	{
		uint16_t old = b.port.id;
		struct mock d;

		mock_init(&d, "d", false);
		CHECK_EQ(sw_attach(s, &d.port), 0);
		CHECK_EQ(d.port.id, old);
		CHECK_EQ(sw_attach(s, &d.port), -EBUSY);
		port_destroy(&d.port);
	}

	port_destroy(&a.port);
	port_destroy(&b.port);
	port_destroy(&c.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void runts_dropped(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	uint8_t ma[6];
	struct pkt *f;

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mac_of(ma, 40);
	for (uint32_t len = 0; len < 14; len++) {
		f = frame(BCAST, ma, 14, len);
		f->len = len;
		sw_input(s, &a.port, f);
	}
	CHECK_EQ(b.q.len, 0);
	CHECK_EQ(sw_get_stats(s)->dropped_runt, 14);
	CHECK_EQ(a.port.stats.rx_errors, 14);
	CHECK_EQ(a.port.stats.rx_frames, 0);
	CHECK_EQ(sw_mac_count(s), 0);
	/* A bogus length is refused too, not read past the buffer. */
	f = frame(BCAST, ma, 14, 0);
	f->len = PKT_MAX_FRAME + 1;
	sw_input(s, &a.port, f);
	CHECK_EQ(a.port.stats.rx_errors, 15);
	/* 14 bytes is a valid (empty) frame. */
	f = frame(BCAST, ma, 14, 0);
	sw_input(s, &a.port, f);
	CHECK_EQ(b.q.len, 1);
	CHECK_EQ(a.port.stats.rx_frames, 1);

	port_destroy(&a.port);
	port_destroy(&b.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void alone_no_port(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a;
	uint8_t ma[6];

	REQUIRE(s);
	mock_attach(s, &a, "a", true);
	mac_of(ma, 50);
	sw_input(s, &a.port, frame(BCAST, ma, 60, 0));
	CHECK_EQ(a.q.len, 0);
	CHECK_EQ(sw_get_stats(s)->dropped_no_port, 1);
	port_destroy(&a.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Many MACs on two ports: the table is bounded, and removing one port's
 * entries (backward-shift deletion) keeps every other entry reachable. */
static void table_bounds_and_delete(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	uint8_t m[6];
	const unsigned n = SW_MAC_MAX + 10;
	unsigned bad = 0;

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	a.port.mac_limit = b.port.mac_limit = SW_MAC_MAX; /* the table's bound, not the port's */
	for (unsigned i = 0; i < n; i++) {
		mac_of(m, 1000 + i);
		sw_input(s, i & 1 ? &b.port : &a.port, frame(BCAST, m, 60, 0));
		pkt_queue_purge(&a.q);
		pkt_queue_purge(&b.q);
	}
	CHECK_EQ(sw_mac_count(s), SW_MAC_MAX);
	CHECK_EQ(sw_get_stats(s)->learn_full, 10);
	for (unsigned i = 0; i < SW_MAC_MAX; i++) {
		mac_of(m, 1000 + i);
		if (sw_mac_lookup(s, m) != (i & 1 ? b.port.id : a.port.id))
			bad++;
	}
	CHECK_EQ(bad, 0);
	sw_detach(s, &a.port);
	CHECK_EQ(sw_mac_count(s), SW_MAC_MAX / 2);
	for (unsigned i = 0; i < SW_MAC_MAX; i++) {
		mac_of(m, 1000 + i);
		if (sw_mac_lookup(s, m) != (i & 1 ? b.port.id : -ENOENT))
			bad++;
	}
	CHECK_EQ(bad, 0);
	port_destroy(&a.port);
	port_destroy(&b.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void port_limit(void)
{
	struct sw *s = sw_new(NULL);
	struct mock *m = calloc(SW_MAX_PORTS + 1, sizeof(*m));
	int fails = 0;

	REQUIRE(s && m);
	for (int i = 0; i <= SW_MAX_PORTS; i++)
		mock_init(&m[i], "m", false);
	for (int i = 0; i < SW_MAX_PORTS; i++)
		if (sw_attach(s, &m[i].port) != 0 || m[i].port.id != i)
			fails++;
	CHECK_EQ(fails, 0);
	CHECK_EQ(sw_attach(s, &m[SW_MAX_PORTS].port), -ENOSPC);
	sw_detach(s, &m[500].port);
	CHECK_EQ(sw_attach(s, &m[SW_MAX_PORTS].port), 0);
	CHECK_EQ(m[SW_MAX_PORTS].port.id, 500);
	for (int i = 0; i <= SW_MAX_PORTS; i++)
		port_destroy(&m[i].port);
	sw_free(s);
	free(m);
}

/* The fault injector sits between capture and forwarding, per port name or
 * for every port. */
/* Port security: a pinned MAC never moves (frames claiming it elsewhere are
 * dropped and counted, unicast to it reaches only its port), survives aging,
 * and a port at its learned-MAC limit learns no more. */
static void pinned_mac_and_learn_limit(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b, up;
	uint8_t ma[6], mx[6], m[6];

	REQUIRE(s);
	mock_attach(s, &a, "a", true);
	mock_attach(s, &b, "b", true);
	mock_attach(s, &up, "up", false);
	mac_of(ma, 50);
	mac_of(mx, 51);
	CHECK_EQ(sw_mac_pin(s, ma, &a.port), 0);
	CHECK_EQ(sw_mac_pin(s, ma, &a.port), 0);
	CHECK_EQ(sw_mac_pin(s, ma, &b.port), -EADDRINUSE);
	CHECK(sw_mac_pinned(s, ma));
	/* b and the uplink send with a's MAC: dropped, counted, not moved */
	sw_input(s, &b.port, frame(BCAST, ma, 60, 1));
	sw_input(s, &up.port, frame(mx, ma, 60, 2));
	CHECK_EQ(b.port.stats.rx_spoofed, 1);
	CHECK_EQ(up.port.stats.rx_spoofed, 1);
	CHECK_EQ(sw_get_stats(s)->dropped_spoofed, 2);
	CHECK_EQ(sw_mac_lookup(s, ma), a.port.id);
	CHECK_EQ(a.q.len + b.q.len + up.q.len, 0);
	/* unicast to a from b reaches a only */
	sw_input(s, &b.port, frame(ma, mx, 60, 3));
	CHECK_EQ(a.q.len, 1);
	CHECK_EQ(up.q.len, 0);
	pkt_queue_purge(&a.q);
	sw_mac_age(s);
	sw_mac_age(s);
	CHECK_EQ(sw_mac_lookup(s, ma), a.port.id);
	CHECK_EQ(sw_mac_lookup(s, mx), -ENOENT); /* learned, aged out */
	/* the uplink floods source MACs: it keeps at most its limit */
	up.port.mac_limit = 100;
	for (unsigned i = 0; i < 300; i++) {
		mac_of(m, 5000 + i);
		sw_input(s, &up.port, frame(BCAST, m, 60, 4));
	}
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&b.q);
	CHECK_EQ(sw_mac_count(s), 101);
	CHECK_EQ(up.port.stats.learn_limited, 200);
	/* unpinning by another port does nothing; by the owner frees the MAC */
	sw_mac_unpin(s, ma, &b.port);
	CHECK(sw_mac_pinned(s, ma));
	sw_mac_unpin(s, ma, &a.port);
	CHECK(!sw_mac_pinned(s, ma));
	CHECK_EQ(sw_mac_lookup(s, ma), -ENOENT);
	sw_detach(s, &up.port);
	CHECK_EQ(sw_mac_count(s), 0);
	port_destroy(&a.port);
	port_destroy(&b.port);
	port_destroy(&up.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* The per-port cache of the last source and destination entries follows
 * every change of the table: a stream keeps its entries fresh through aging,
 * a moved destination is followed, a pin makes the cached source a spoof,
 * a removed destination floods again. */
static void cached_lookups_follow_table_changes(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b, c;
	uint8_t ma[6], mb[6];

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mock_attach(s, &c, "c", false);
	mac_of(ma, 70);
	mac_of(mb, 71);
	sw_input(s, &b.port, frame(BCAST, mb, 60, 1));
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&c.q);
	for (unsigned i = 0; i < 3; i++) {
		sw_input(s, &a.port, frame(mb, ma, 60, 2));
		CHECK_EQ(b.q.len, i + 1);
	}
	CHECK_EQ(a.q.len + c.q.len, 0);
	/* a stream from a keeps ma fresh (b sends nothing: mb ages out) */
	sw_mac_age(s);
	sw_input(s, &a.port, frame(mb, ma, 60, 3));
	sw_mac_age(s);
	CHECK_EQ(sw_mac_lookup(s, ma), a.port.id);
	CHECK_EQ(sw_mac_lookup(s, mb), -ENOENT);
	pkt_queue_purge(&b.q);
	/* unknown again: flooded */
	sw_input(s, &a.port, frame(mb, ma, 60, 4));
	CHECK_EQ(b.q.len, 1);
	CHECK_EQ(c.q.len, 1);
	pkt_queue_purge(&b.q);
	pkt_queue_purge(&c.q);
	/* mb learned on b, then moves to c: a's frames follow it */
	sw_input(s, &b.port, frame(ma, mb, 60, 5));
	sw_input(s, &a.port, frame(mb, ma, 60, 6));
	CHECK_EQ(b.q.len, 1);
	sw_input(s, &c.port, frame(ma, mb, 60, 7));
	CHECK_EQ(a.q.len, 2);
	sw_input(s, &a.port, frame(mb, ma, 60, 8));
	CHECK_EQ(b.q.len, 1);
	CHECK_EQ(c.q.len, 1);
	/* ma pinned to c: a's next frame with it is a spoof */
	CHECK_EQ(sw_mac_pin(s, ma, &c.port), 0);
	sw_input(s, &a.port, frame(mb, ma, 60, 9));
	CHECK_EQ(a.port.stats.rx_spoofed, 1);
	CHECK_EQ(c.q.len, 1);
	CHECK_EQ(sw_mac_lookup(s, ma), c.port.id);
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&b.q);
	pkt_queue_purge(&c.q);
	port_destroy(&a.port);
	port_destroy(&b.port);
	port_destroy(&c.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void fault_hook(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	struct fault_cfg cfg;
	uint8_t ma[6], mb[6];

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mac_of(ma, 60);
	mac_of(mb, 61);

	CHECK_EQ(fault_cfg_parse(&cfg, "drop=100,port=a"), 0);
	CHECK_EQ(sw_set_fault(s, &cfg, NULL), 0);
	for (int i = 0; i < 5; i++) {
		sw_input(s, &a.port, frame(mb, ma, 60, i));
		sw_input(s, &b.port, frame(ma, mb, 60, i));
	}
	CHECK_EQ(b.q.len, 0);
	CHECK_EQ(a.q.len, 5);
	CHECK_EQ(sw_get_stats(s)->fault_dropped, 5);
	/* Dropped before learning: a's MAC is unknown. */
	CHECK_EQ(sw_mac_lookup(s, ma), -ENOENT);
	pkt_queue_purge(&a.q);

	/* Every port: dup=100 doubles what both send. */
	CHECK_EQ(fault_cfg_parse(&cfg, "dup=100,seed=7"), 0);
	CHECK_EQ(sw_set_fault(s, &cfg, NULL), 0);
	CHECK_EQ(sw_set_fault(s, NULL, "a"), 0); /* a's own config goes */
	sw_input(s, &a.port, frame(mb, ma, 60, 1));
	sw_input(s, &b.port, frame(ma, mb, 60, 1));
	CHECK_EQ(a.q.len, 2);
	CHECK_EQ(b.q.len, 2);
	CHECK_EQ(sw_get_stats(s)->fault_duplicated, 2);
	CHECK_EQ(sw_get_stats(s)->fault_dropped, 5); /* kept after removal */
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&b.q);

	/* Reorder, then removing the config delivers the held frame. */
	CHECK_EQ(fault_cfg_parse(&cfg, "reorder=100"), 0);
	CHECK_EQ(sw_set_fault(s, &cfg, "b"), 0);
	sw_input(s, &b.port, frame(ma, mb, 60, 1));
	CHECK_EQ(a.q.len, 0);
	CHECK_EQ(sw_set_fault(s, NULL, "b"), 0);
	CHECK_EQ(a.q.len, 1); /* the held frame, straight to forwarding */
	CHECK_EQ(sw_get_stats(s)->fault_reordered, 1);
	pkt_queue_purge(&a.q);
	CHECK_EQ(sw_set_fault(s, NULL, NULL), 0);
	sw_input(s, &b.port, frame(ma, mb, 60, 1));
	CHECK_EQ(a.q.len, 1);
	pkt_queue_purge(&a.q);

	/* A held frame of a port that detaches is freed, not forwarded. */
	CHECK_EQ(sw_set_fault(s, &cfg, NULL), 0);
	sw_input(s, &b.port, frame(ma, mb, 60, 1));
	sw_detach(s, &b.port);
	CHECK_EQ(a.q.len, 0);
	CHECK_EQ(pkt_outstanding(), base);

	/* Bad names are refused. */
	CHECK_EQ(sw_set_fault(s, &cfg, ""), -EINVAL);
	port_destroy(&a.port);
	port_destroy(&b.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

static void aging(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	uint8_t ma[6], mb[6];

	REQUIRE(s);
	mock_attach(s, &a, "a", false);
	mock_attach(s, &b, "b", false);
	mac_of(ma, 70);
	mac_of(mb, 71);
	sw_input(s, &a.port, frame(BCAST, ma, 60, 0));
	sw_input(s, &b.port, frame(BCAST, mb, 60, 0));
	CHECK_EQ(sw_mac_count(s), 2);
	sw_mac_age(s);
	CHECK_EQ(sw_mac_count(s), 2); /* seen in the last period */
	sw_input(s, &b.port, frame(BCAST, mb, 60, 0));
	sw_mac_age(s);
	CHECK_EQ(sw_mac_lookup(s, ma), -ENOENT); /* silent for a period */
	CHECK_EQ(sw_mac_lookup(s, mb), b.port.id);
	sw_mac_age(s);
	CHECK_EQ(sw_mac_count(s), 0);
	port_destroy(&a.port);
	port_destroy(&b.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* A switch with a loop arms its aging timer and frees it. */
static void with_loop(void)
{
	struct loop *l = loop_new();
	struct sw *s;

	REQUIRE(l);
	s = sw_new(l);
	REQUIRE(s);
	sw_free(s);
	loop_free(l);
}

static void pkt_cache_cap(void)
{
	struct pkt *p[PKT_CACHE_MAX + 50];
	struct pkt_stats st;
	uint64_t base = pkt_outstanding();

	pkt_cache_trim();
	for (unsigned i = 0; i < ARRAY_SIZE(p); i++)
		p[i] = pkt_alloc();
	CHECK_EQ(pkt_outstanding(), base + ARRAY_SIZE(p));
	for (unsigned i = 0; i < ARRAY_SIZE(p); i++) {
		REQUIRE(p[i]);
		CHECK(p[i]->data == p[i]->buf + PKT_HEADROOM);
		CHECK_EQ(p[i]->len, 0);
		pkt_free(p[i]);
	}
	pkt_get_stats(&st);
	CHECK_EQ(st.cached, PKT_CACHE_MAX);
	CHECK_EQ(pkt_outstanding(), base);
	pkt_cache_trim();
	pkt_get_stats(&st);
	CHECK_EQ(st.cached, 0);
}

/* Flow control: a busy receiver makes sw_input_try refuse unicast frames to
 * it (they stay with the sender, nothing is dropped); once it has room
 * (sw_port_ready) every refused sender is woken exactly once; floods and
 * frames to idle ports pass; detaching a busy port wakes its waiters. */
struct fc_mock {
	struct mock m;
	unsigned limit;     /* busy at this many queued frames (0: never) */
	unsigned woken;
};

static bool fc_busy(const struct port *p)
{
	const struct fc_mock *f = p->priv;

	return f->limit && f->m.q.len >= f->limit;
}

static void fc_ready(struct port *p)
{
	struct fc_mock *f = p->priv;

	f->woken++;
}

static const struct port_ops fc_ops = { .xmit = mock_xmit, .busy = fc_busy, .ready = fc_ready };

static void fc_init(struct fc_mock *f, const char *name, unsigned limit)
{
	mock_init(&f->m, name, false);
	f->m.port.ops = &fc_ops;
	f->m.port.priv = f;
	f->limit = limit;
	f->woken = 0;
}

static void flow_control(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct fc_mock a, b, r;
	uint8_t ma[6], mb[6], mr[6];
	struct pkt *p;
	unsigned i, refused = 0;

	REQUIRE(s);
	fc_init(&a, "a", 0);
	fc_init(&b, "b", 0);
	fc_init(&r, "r", 4);
	REQUIRE(sw_attach(s, &a.m.port) == 0 && sw_attach(s, &b.m.port) == 0 &&
		sw_attach(s, &r.m.port) == 0);
	mac_of(ma, 1);
	mac_of(mb, 2);
	mac_of(mr, 3);
	/* r announces itself (flooded to a and b) */
	sw_input(s, &r.m.port, frame(BCAST, mr, 60, 0));
	pkt_queue_purge(&a.m.q);
	pkt_queue_purge(&b.m.q);

	/* a and b send to r until refused; r holds exactly its limit. */
	for (i = 0; i < 6; i++) {
		struct fc_mock *from = i & 1 ? &b : &a;

		p = frame(mr, i & 1 ? mb : ma, 64, i);
		REQUIRE(p);
		if (sw_input_try(s, &from->m.port, p) == -EAGAIN) {
			refused++;
			pkt_free(p); /* still ours */
		}
	}
	CHECK_EQ(r.m.q.len, 4u);
	CHECK_EQ(refused, 2u);
	CHECK_EQ(sw_get_stats(s)->held_busy, 2u);
	CHECK_EQ(a.woken + b.woken, 0u);

	/* Broadcast and frames to an idle port still pass. */
	CHECK_EQ(sw_input_try(s, &a.m.port, frame(BCAST, ma, 60, 9)), 0);
	CHECK_EQ(r.m.q.len, 5u);
	CHECK_EQ(b.m.q.len, 1u);
	CHECK_EQ(sw_input_try(s, &b.m.port, frame(ma, mb, 60, 10)), 0);
	CHECK_EQ(a.m.q.len, 1u);

	/* r drains: both senders woken once, and only once. */
	pkt_queue_purge(&r.m.q);
	sw_port_ready(s, &r.m.port);
	CHECK_EQ(a.woken, 1u);
	CHECK_EQ(b.woken, 1u);
	sw_port_ready(s, &r.m.port);
	CHECK_EQ(a.woken + b.woken, 2u);
	CHECK_EQ(sw_get_stats(s)->woken, 2u);
	CHECK_EQ(sw_input_try(s, &a.m.port, frame(mr, ma, 60, 11)), 0);
	CHECK_EQ(r.m.q.len, 1u);

	/* A waiter is woken when the busy port goes away. */
	for (i = 0; i < 4; i++)
		sw_input(s, &b.m.port, frame(mr, mb, 60, 12 + i));
	p = frame(mr, ma, 60, 20);
	REQUIRE(p);
	CHECK_EQ(sw_input_try(s, &a.m.port, p), -EAGAIN);
	sw_detach(s, &r.m.port);
	CHECK_EQ(a.woken, 2u);
	CHECK_EQ(sw_input_try(s, &a.m.port, p), 0); /* no such port now: dropped */

	sw_detach(s, &a.m.port);
	sw_detach(s, &b.m.port);
	sw_free(s);
	pkt_queue_purge(&a.m.q);
	pkt_queue_purge(&b.m.q);
	pkt_queue_purge(&r.m.q);
	CHECK_EQ(pkt_outstanding(), base);
}

/* A sender refused by two busy ports waits for both at once: the first of
 * them to have room wakes it (it then retries what it holds for each, and
 * the one still busy refuses and keeps it waiting until it has room too). */
static void flow_control_two_receivers(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct fc_mock a, r1, r2;
	uint8_t ma[6], m1[6], m2[6];
	struct pkt *p1, *p2;

	REQUIRE(s);
	fc_init(&a, "a", 0);
	fc_init(&r1, "r1", 1);
	fc_init(&r2, "r2", 1);
	REQUIRE(sw_attach(s, &a.m.port) == 0 && sw_attach(s, &r1.m.port) == 0 &&
		sw_attach(s, &r2.m.port) == 0);
	mac_of(ma, 1);
	mac_of(m1, 2);
	mac_of(m2, 3);
	sw_input(s, &r1.m.port, frame(BCAST, m1, 60, 0));
	sw_input(s, &r2.m.port, frame(BCAST, m2, 60, 0));
	pkt_queue_purge(&a.m.q);
	pkt_queue_purge(&r1.m.q);
	pkt_queue_purge(&r2.m.q);
	CHECK_EQ(sw_input_try(s, &a.m.port, frame(m1, ma, 60, 1)), 0);
	CHECK_EQ(sw_input_try(s, &a.m.port, frame(m2, ma, 60, 2)), 0);

	/* Both receivers busy: a is refused by each and keeps both frames. */
	p1 = frame(m1, ma, 60, 3);
	p2 = frame(m2, ma, 60, 4);
	REQUIRE(p1 && p2);
	CHECK_EQ(sw_input_try(s, &a.m.port, p1), -EAGAIN);
	CHECK_EQ(sw_input_try(s, &a.m.port, p2), -EAGAIN);

	/* r1 (the first to refuse) drains first: a is woken; r2 still
	 * refuses, r1 takes its frame. */
	pkt_queue_purge(&r1.m.q);
	sw_port_ready(s, &r1.m.port);
	CHECK_EQ(a.woken, 1u);
	CHECK_EQ(sw_input_try(s, &a.m.port, p2), -EAGAIN);
	CHECK_EQ(sw_input_try(s, &a.m.port, p1), 0);
	CHECK_EQ(r1.m.q.len, 1u);

	/* Then r2: a is woken again and r2 takes its frame. */
	pkt_queue_purge(&r2.m.q);
	sw_port_ready(s, &r2.m.port);
	CHECK_EQ(a.woken, 2u);
	CHECK_EQ(sw_input_try(s, &a.m.port, p2), 0);
	CHECK_EQ(r2.m.q.len, 1u);
	CHECK_EQ(sw_get_stats(s)->held_busy, 3u);

	sw_detach(s, &a.m.port);
	sw_detach(s, &r1.m.port);
	sw_detach(s, &r2.m.port);
	sw_free(s);
	pkt_queue_purge(&a.m.q);
	pkt_queue_purge(&r1.m.q);
	pkt_queue_purge(&r2.m.q);
	CHECK_EQ(pkt_outstanding(), base);
}

int main(void)
{
	TEST_PROGRAM("test_switch");
	RUN(learn_and_unicast);
	RUN(flood_broadcast_multicast);
	RUN(hairpin);
	RUN(mac_move_and_detach);
	RUN(runts_dropped);
	RUN(alone_no_port);
	RUN(table_bounds_and_delete);
	RUN(port_limit);
	RUN(pinned_mac_and_learn_limit);
	RUN(cached_lookups_follow_table_changes);
	RUN(fault_hook);
	RUN(aging);
	RUN(with_loop);
	RUN(pkt_cache_cap);
	RUN(flow_control);
	RUN(flow_control_two_receivers);
	return TEST_DONE();
}
