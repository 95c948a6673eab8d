/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injector: configuration parser, determinism for a seed, and the exact
 * effect of each fault at 100% (drop all, duplicate all, one byte changed,
 * pairs swapped, nothing lost after a flush, timer release).
 */
#include "harness.h"

#include <errno.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/fault.h"
#include "port/pkt.h"

/* Counts for "drop=10,dup=10,reorder=10,corrupt=10,seed=12345", 20000 frames
 * on 3 streams, as the independent model of fault.h in fault_model.py counts. */
#define GOLD_DROPPED 2092
#define GOLD_DUPLICATED 1785
#define GOLD_REORDERED 1721
#define GOLD_CORRUPTED 1850

/* ---- parser ---- */

static void parse_valid(void)
{
	struct fault_cfg c;

	CHECK_EQ(fault_cfg_parse(&c, "drop=5,dup=0.5,reorder=1,corrupt=0.000001,seed=42,port=dev0"), 0);
	CHECK_EQ(c.drop, 5000000);
	CHECK_EQ(c.dup, 500000);
	CHECK_EQ(c.reorder, 1000000);
	CHECK_EQ(c.corrupt, 1);
	CHECK_EQ(c.seed, 42);
	CHECK_EQ(c.hold_us, FAULT_HOLD_US_DEFAULT);
	CHECK(!strcmp(c.port, "dev0"));
	CHECK(fault_cfg_active(&c));

	CHECK_EQ(fault_cfg_parse(&c, "seed=0xFFFFFFFFFFFFFFFF,drop=100,hold=250"), 0);
	CHECK_EQ(c.drop, FAULT_PROB_ONE);
	CHECK(c.seed == UINT64_MAX);
	CHECK_EQ(c.hold_us, 250);
	CHECK_EQ(c.dup + c.reorder + c.corrupt, 0);
	CHECK_EQ(c.port[0], 0);

	CHECK_EQ(fault_cfg_parse(&c, "seed=18446744073709551615"), 0);
	CHECK(c.seed == UINT64_MAX);
	CHECK(!fault_cfg_active(&c));
	CHECK_EQ(fault_cfg_parse(&c, "corrupt=100.000000,port=tap-0.1:x"), 0);
	CHECK_EQ(c.corrupt, FAULT_PROB_ONE);
	CHECK(!strcmp(c.port, "tap-0.1:x"));
	CHECK_EQ(fault_cfg_parse(&c, "drop=0"), 0);
	CHECK_EQ(c.seed, 1);
	CHECK_EQ(fault_cfg_parse(&c, "port=0123456789012345678901234567890"), 0);
}

static void parse_invalid(void)
{
	static const char *const bad[] = {
		"", "drop", "drop=", "=5", "drop=101", "drop=100.000001", "drop=1000",
		"drop=5,drop=5", "foo=1", "drop=-1", "drop=+1", "drop=1.", "drop=.5",
		"drop=0.0000001", "drop=1e2", "drop=5 ", " drop=5", "drop=5,", ",drop=5",
		"drop=5,,dup=1", "Drop=5", "drop=0x5", "seed=18446744073709551616",
		"seed=0x", "seed=0x12345678901234567", "seed=-1", "seed=1a", "port=",
		"port=a b", "port=a=b", "port=0123456789012345678901234567890x",
		"hold=0", "hold=10000001", "hold=0x", "drop=5;dup=1", "drop==5",
		"dup=5,port=x,port=y",
	};
	struct fault_cfg c;
	int accepted = 0;

	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		if (fault_cfg_parse(&c, bad[i]) != -EINVAL) {
			printf("#   accepted \"%s\"\n", bad[i]);
			accepted++;
		}
	}
	CHECK_EQ(accepted, 0);
	CHECK_EQ(fault_cfg_parse(&c, NULL), -EINVAL);
}

static void format_roundtrip(void)
{
	static const char *const in[] = {
		"drop=5,dup=0.5,reorder=1,corrupt=0.000001,seed=42,port=dev0",
		"drop=33.3333,seed=0x10",
		"hold=7,reorder=100",
		"corrupt=0.10",
	};
	char buf[256];

	for (unsigned i = 0; i < ARRAY_SIZE(in); i++) {
		struct fault_cfg a, b;
		int n;

		REQUIRE(fault_cfg_parse(&a, in[i]) == 0);
		n = fault_cfg_format(&a, buf, sizeof(buf));
		CHECK(n > 0 && n < (int)sizeof(buf));
		CHECK_EQ(fault_cfg_parse(&b, buf), 0);
		CHECK_MEM(&a, &b, sizeof(a));
	}
	{
		struct fault_cfg a;

		fault_cfg_parse(&a, "drop=0.5,dup=12.25,seed=9,port=p1");
		fault_cfg_format(&a, buf, sizeof(buf));
		CHECK(!strcmp(buf, "drop=0.5,dup=12.25,reorder=0,corrupt=0,seed=9,hold=1000,port=p1"));
		a.drop = FAULT_PROB_ONE + 1;
		CHECK_EQ(fault_cfg_format(&a, buf, sizeof(buf)), -EINVAL);
	}
}

/* ---- the injector ---- */

/* Records every emitted frame. */
struct sink {
	struct pkt_queue q;
};

static void sink_emit(void *arg, struct pkt *p)
{
	struct sink *s = arg;

	pkt_queue_push(&s->q, p);
}

/* Frame number id of length len: id in bytes 14..17, rest a pattern. */
static struct pkt *mkframe(uint32_t id, uint32_t len)
{
	struct pkt *p = pkt_alloc();

	if (!p)
		return NULL;
	memset(p->data, 0xff, 6);
	memset(p->data + 6, 0x02, 6);
	p->data[12] = 0x88;
	p->data[13] = 0xb5;
	for (uint32_t i = 14; i < len; i++)
		p->data[i] = (uint8_t)(i * 13 + id);
	if (len >= 18)
		memcpy(p->data + 14, &id, 4);
	p->len = len;
	return p;
}

static uint32_t frame_id(const struct pkt *p)
{
	uint32_t id;

	memcpy(&id, p->data + 14, 4);
	return id;
}

static struct fault *mkfault(const char *cfgs, struct sink *sk, struct loop *l)
{
	struct fault_cfg c;

	pkt_queue_init(&sk->q);
	if (fault_cfg_parse(&c, cfgs))
		return NULL;
	return fault_new(l, &c, sink_emit, sk);
}

/* Run n frames of one stream through cfg; fill a digest of what came out. */
static void run_trace(const char *cfgs, unsigned n, uint64_t *digest, struct fault_stats *st)
{
	struct sink sk;
	struct fault *f = mkfault(cfgs, &sk, NULL);
	struct pkt *p;
	uint64_t h = 0xcbf29ce484222325ull;

	*digest = 0;
	if (!f)
		return;
	for (unsigned i = 0; i < n; i++)
		fault_input(f, (uint16_t)(i % 3), mkframe(i, 60 + i % 200));
	fault_flush(f);
	while ((p = pkt_queue_pop(&sk.q))) {
		for (uint32_t i = 0; i < p->len; i++)
			h = (h ^ p->data[i]) * 0x100000001b3ull;
		h = (h ^ p->len) * 0x100000001b3ull;
		pkt_free(p);
	}
	*digest = h;
	*st = *fault_get_stats(f);
	fault_free(f);
}

static void determinism(void)
{
	const char *cfg = "drop=10,dup=10,reorder=10,corrupt=10,seed=12345";
	struct fault_stats a, b, c;
	uint64_t da, db, dc;
	uint64_t base = pkt_outstanding();

	run_trace(cfg, 20000, &da, &a);
	run_trace(cfg, 20000, &db, &b);
	CHECK(da != 0);
	CHECK(da == db);
	CHECK_MEM(&a, &b, sizeof(a));
	CHECK_EQ(a.frames, 20000);
	/* Golden counts for this seed: the decision order and generator are
	 * part of the contract (a recorded seed replays the same faults). */
	printf("#   seed 12345: dropped %" PRIu64 " duplicated %" PRIu64
	       " reordered %" PRIu64 " corrupted %" PRIu64 "\n",
	       a.dropped, a.duplicated, a.reordered, a.corrupted);
	CHECK_EQ(a.dropped, GOLD_DROPPED);
	CHECK_EQ(a.duplicated, GOLD_DUPLICATED);
	CHECK_EQ(a.reordered, GOLD_REORDERED);
	CHECK_EQ(a.corrupted, GOLD_CORRUPTED);
	run_trace("drop=10,dup=10,reorder=10,corrupt=10,seed=12346", 20000, &dc, &c);
	CHECK(dc != da);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Each decision has its own draw: adding duplication does not change which
 * frames are corrupted. */
static void decisions_independent(void)
{
	struct sink s1, s2;
	struct fault *f1 = mkfault("corrupt=20,seed=99", &s1, NULL);
	struct fault *f2 = mkfault("corrupt=20,dup=50,seed=99", &s2, NULL);
	struct pkt *p, *q;
	int diff = 0;

	REQUIRE(f1 && f2);
	for (uint32_t i = 0; i < 2000; i++) {
		fault_input(f1, 0, mkframe(i, 100));
		fault_input(f2, 0, mkframe(i, 100));
	}
	CHECK_EQ(fault_get_stats(f1)->corrupted, fault_get_stats(f2)->corrupted);
	CHECK(fault_get_stats(f2)->duplicated > 0);
	while ((p = pkt_queue_pop(&s1.q))) {
		q = pkt_queue_pop(&s2.q);
		REQUIRE(q);
		if (q->len != p->len || memcmp(q->data, p->data, p->len))
			diff++;
		/* Skip the duplicate, identical to q. */
		if (s2.q.head && s2.q.head->len == q->len &&
		    !memcmp(s2.q.head->data, q->data, q->len))
			pkt_free(pkt_queue_pop(&s2.q));
		pkt_free(p);
		pkt_free(q);
	}
	CHECK_EQ(diff, 0);
	CHECK_EQ(s2.q.len, 0);
	pkt_queue_purge(&s2.q);
	fault_free(f1);
	fault_free(f2);
}

static void drop_all(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("drop=100,dup=100,corrupt=100,reorder=100", &sk, NULL);

	REQUIRE(f);
	for (uint32_t i = 0; i < 1000; i++)
		fault_input(f, 0, mkframe(i, 64));
	fault_flush(f);
	CHECK_EQ(sk.q.len, 0);
	CHECK_EQ(fault_get_stats(f)->dropped, 1000);
	CHECK_EQ(fault_get_stats(f)->corrupted + fault_get_stats(f)->duplicated +
		 fault_get_stats(f)->reordered, 0);
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
}

static uint16_t ip4_sum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* ecn=100: ECT frames (IPv4, IPv6, tagged or not) become CE with a valid
 * IPv4 header checksum; Not-ECT and non-IP frames are untouched. The
 * configuration round-trips; without ecn the draws are unchanged. */
static void ecn_marks(void)
{
	uint64_t base = pkt_outstanding();
	struct fault_cfg c;
	struct sink sk;
	struct fault *f = mkfault("ecn=100", &sk, NULL);
	struct pkt *p;
	char buf[256];
	uint64_t d1, d2;
	struct fault_stats s1, s2;

	REQUIRE(f);
	for (int k = 0; k < 5; k++) {
		p = mkframe(k, 80);
		if (k < 3) {
			uint32_t l3 = k == 2 ? 18 : 14;
			uint8_t *ip = p->data + l3;
			uint16_t sum;

			if (k == 2) {
				p->data[12] = 0x81, p->data[13] = 0x00;
				p->data[16] = 0x08, p->data[17] = 0x00;
			} else {
				p->data[12] = 0x08, p->data[13] = 0x00;
			}
			memset(ip, 0, 20);
			ip[0] = 0x45;
			ip[1] = k == 1 ? 0x00 : 0xa2; /* Not-ECT / DSCP 40 + ECT(0) */
			ip[8] = 64;
			ip[9] = 17;
			sum = (uint16_t)~ip4_sum(ip);
			ip[10] = (uint8_t)(sum >> 8);
			ip[11] = (uint8_t)sum;
		} else if (k == 3) {
			p->data[12] = 0x86, p->data[13] = 0xdd;
			p->data[14] = 0x60 | 0x0a;   /* traffic class 0xa2 */
			p->data[15] = 0x20;
		}
		fault_input(f, 0, p);
	}
	CHECK_EQ(sk.q.len, 5);
	CHECK_EQ(fault_get_stats(f)->ce_marked, 3);
	for (int k = 0; k < 5 && (p = pkt_queue_pop(&sk.q)); k++) {
		if (k == 0 || k == 2) {
			const uint8_t *ip = p->data + (k == 2 ? 18 : 14);

			CHECK_EQ(ip[1], 0xa3);
			CHECK_EQ(ip4_sum(ip), 0xffff);
		} else if (k == 1) {
			CHECK_EQ(p->data[15], 0x00);
		} else if (k == 3) {
			CHECK_EQ(p->data[15], 0x30);
		} else {
			CHECK_EQ(p->data[12], 0x88);
		}
		pkt_free(p);
	}
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
	REQUIRE(fault_cfg_parse(&c, "drop=1,ecn=0.5") == 0);
	REQUIRE(fault_cfg_format(&c, buf, sizeof(buf)) > 0);
	CHECK(strstr(buf, ",ecn=0.5") != NULL);
	CHECK(fault_cfg_parse(&c, "ecn=101") != 0);
	CHECK(fault_cfg_parse(&c, "ecn=1,ecn=2") != 0);
	/* ecn=0 draws nothing more: same trace as without the key */
	run_trace("drop=10,dup=10,seed=5", 500, &d1, &s1);
	run_trace("drop=10,dup=10,seed=5,ecn=0", 500, &d2, &s2);
	CHECK_EQ(d1, d2);
}

static void dup_all(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("dup=100", &sk, NULL);
	int bad = 0;

	REQUIRE(f);
	for (uint32_t i = 0; i < 500; i++)
		fault_input(f, 0, mkframe(i, 60 + i));
	CHECK_EQ(sk.q.len, 1000);
	CHECK_EQ(fault_get_stats(f)->duplicated, 500);
	for (uint32_t i = 0; i < 500; i++) {
		struct pkt *ref = mkframe(i, 60 + i);
		struct pkt *a = pkt_queue_pop(&sk.q), *b = pkt_queue_pop(&sk.q);

		if (!a || !b || a->len != ref->len || b->len != ref->len ||
		    memcmp(a->data, ref->data, ref->len) || memcmp(b->data, ref->data, ref->len))
			bad++;
		pkt_free(a);
		pkt_free(b);
		pkt_free(ref);
	}
	CHECK_EQ(bad, 0);
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
}

static void corrupt_one_byte(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("corrupt=100,seed=3", &sk, NULL);
	int bad = 0, hit_hdr = 0, hit_last = 0;
	struct pkt *p;

	REQUIRE(f);
	for (uint32_t i = 0; i < 3000; i++) {
		uint32_t len = 15 + i % 100;
		struct pkt *ref = mkframe(i, len);
		unsigned ndiff = 0, where = 0;

		fault_input(f, 0, mkframe(i, len));
		p = pkt_queue_pop(&sk.q);
		if (!p || p->len != len) {
			bad++;
		} else {
			for (uint32_t j = 0; j < len; j++)
				if (p->data[j] != ref->data[j]) {
					ndiff++;
					where = j;
				}
			if (ndiff != 1 || where < 14)
				bad++;
			hit_hdr += where == 14;
			hit_last += where == len - 1;
		}
		pkt_free(p);
		pkt_free(ref);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(fault_get_stats(f)->corrupted, 3000);
	/* Both ends of the range are reachable (deterministic for seed 3). */
	CHECK(hit_hdr > 0);
	CHECK(hit_last > 0);
	/* Nothing after the Ethernet header: nothing to corrupt. */
	fault_input(f, 0, mkframe(0, 14));
	p = pkt_queue_pop(&sk.q);
	REQUIRE(p);
	CHECK_EQ(p->len, 14);
	pkt_free(p);
	CHECK_EQ(fault_get_stats(f)->corrupted, 3000);
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
}

static void reorder_swaps(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("reorder=100", &sk, NULL);
	static const uint32_t want[] = { 1, 0, 3, 2, 5, 4, 6 };
	int bad = 0;

	REQUIRE(f);
	for (uint32_t i = 0; i < 7; i++)
		fault_input(f, 0, mkframe(i, 64));
	CHECK_EQ(sk.q.len, 6);
	CHECK_EQ(fault_held(f), 1);
	fault_flush(f);
	CHECK_EQ(fault_held(f), 0);
	CHECK_EQ(sk.q.len, 7);
	for (unsigned i = 0; i < ARRAY_SIZE(want); i++) {
		struct pkt *p = pkt_queue_pop(&sk.q);

		if (!p || frame_id(p) != want[i])
			bad++;
		pkt_free(p);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(fault_get_stats(f)->reordered, 4);
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Streams are independent: a frame of stream 1 does not release stream 0. */
static void reorder_streams(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("reorder=100", &sk, NULL);
	static const uint32_t want[] = { 2, 0, 3, 1 };
	int bad = 0;

	REQUIRE(f);
	fault_input(f, 0, mkframe(0, 64));
	fault_input(f, 1, mkframe(1, 64));
	CHECK_EQ(sk.q.len, 0);
	CHECK_EQ(fault_held(f), 2);
	fault_input(f, 0, mkframe(2, 64));
	fault_input(f, 1000, mkframe(9, 64)); /* a new stream: held */
	fault_discard_stream(f, 1000);
	fault_input(f, 1, mkframe(3, 64));
	for (unsigned i = 0; i < ARRAY_SIZE(want); i++) {
		struct pkt *p = pkt_queue_pop(&sk.q);

		if (!p || frame_id(p) != want[i])
			bad++;
		pkt_free(p);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(fault_held(f), 0);
	fault_free(f);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Reordering with mixed probabilities loses nothing once flushed, and a
 * frame freed with the injector is not leaked. */
static void reorder_no_loss(void)
{
	uint64_t base = pkt_outstanding();
	struct sink sk;
	struct fault *f = mkfault("reorder=30,dup=5,seed=5", &sk, NULL);
	static uint8_t seen[5000];
	unsigned missing = 0;
	struct pkt *p;

	REQUIRE(f);
	for (uint32_t i = 0; i < 5000; i++)
		fault_input(f, (uint16_t)(i % 4), mkframe(i, 64));
	fault_flush(f);
	CHECK_EQ(sk.q.len, 5000 + fault_get_stats(f)->duplicated);
	while ((p = pkt_queue_pop(&sk.q))) {
		uint32_t id = frame_id(p);

		if (id < 5000)
			seen[id] = 1;
		pkt_free(p);
	}
	for (unsigned i = 0; i < 5000; i++)
		missing += !seen[i];
	CHECK_EQ(missing, 0);
	fault_input(f, 0, mkframe(0, 64));
	fault_input(f, 1, mkframe(1, 64));
	fault_free(f); /* frees whatever is held */
	pkt_queue_purge(&sk.q);
	CHECK_EQ(pkt_outstanding(), base);
}

/* With a loop, a held frame comes out when the hold timer fires. */
static void reorder_timer(void)
{
	uint64_t base = pkt_outstanding();
	struct loop *l = loop_new();
	struct sink sk;
	struct fault *f;
	int i;

	REQUIRE(l);
	f = mkfault("reorder=100,hold=2000", &sk, l);
	REQUIRE(f);
	fault_input(f, 0, mkframe(42, 64));
	CHECK_EQ(sk.q.len, 0);
	CHECK_EQ(fault_held(f), 1);
	/* Wait for the event (the timer), bounded. */
	for (i = 0; i < 1000 && sk.q.len == 0; i++)
		loop_run_once(l, 100000000);
	CHECK_EQ(sk.q.len, 1);
	CHECK_EQ(fault_held(f), 0);
	if (sk.q.head)
		CHECK_EQ(frame_id(sk.q.head), 42);
	pkt_queue_purge(&sk.q);
	/* A frame released by the next one leaves no stale timer behind. */
	fault_input(f, 0, mkframe(1, 64));
	fault_input(f, 0, mkframe(2, 64));
	CHECK_EQ(sk.q.len, 2);
	fault_input(f, 0, mkframe(3, 64));
	fault_free(f);
	pkt_queue_purge(&sk.q);
	loop_free(l);
	CHECK_EQ(pkt_outstanding(), base);
}

static void bad_cfg(void)
{
	struct fault_cfg c;
	struct sink sk;

	fault_cfg_init(&c);
	c.hold_us = 0;
	errno = 0;
	CHECK(fault_new(NULL, &c, sink_emit, &sk) == NULL);
	CHECK_EQ(errno, EINVAL);
	fault_cfg_init(&c);
	CHECK(fault_new(NULL, &c, NULL, &sk) == NULL);
}

int main(void)
{
	TEST_PROGRAM("test_fault");
	RUN(parse_valid);
	RUN(parse_invalid);
	RUN(format_roundtrip);
	RUN(determinism);
	RUN(decisions_independent);
	RUN(drop_all);
	RUN(dup_all);
	RUN(ecn_marks);
	RUN(corrupt_one_byte);
	RUN(reorder_swaps);
	RUN(reorder_streams);
	RUN(reorder_no_loss);
	RUN(reorder_timer);
	RUN(bad_cfg);
	return TEST_DONE();
}
