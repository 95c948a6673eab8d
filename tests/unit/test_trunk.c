/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trunks between the switches of loop threads (src/port/trunk.c): frames in
 * order and none lost, a full ring makes the trunk busy for its switch's
 * flow control and ready again once the far end drained it, a busy
 * receiver on the far side does not hold up the frames to another, split
 * horizon in a full mesh of three switches, RoCE frames with payload
 * references and runs arriving byte for byte (an RC WRITE and SEND between
 * two transports on two switches), and the same traffic with the far loop
 * on its own thread (what ThreadSanitizer checks).
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>

#include "port/trunk.h"
#include "unit/eth_frame.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 60000

struct mock {
	struct port port;
	struct pkt_queue q;
	unsigned limit;     /* busy at this many queued frames (0: never) */
	unsigned woken;
};

static void mock_xmit(struct port *p, struct pkt *pkt)
{
	struct mock *m = p->priv;

	pkt_queue_push(&m->q, pkt);
}

static bool mock_busy(const struct port *p)
{
	const struct mock *m = p->priv;

	return m->limit && m->q.len >= m->limit;
}

static void mock_ready(struct port *p)
{
	struct mock *m = p->priv;

	m->woken++;
}

static const struct port_ops mock_ops = { .xmit = mock_xmit, .busy = mock_busy,
					  .ready = mock_ready };

static void mock_init(struct mock *m, const char *name, unsigned limit)
{
	memset(m, 0, sizeof(*m));
	m->port.ops = &mock_ops;
	m->port.hairpin = true;
	m->port.icrc_skip_ok = true;
	m->port.priv = m;
	m->limit = limit;
	snprintf(m->port.name, sizeof(m->port.name), "%s", name);
	pkt_queue_init(&m->q);
}

static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void mac_of(uint8_t mac[6], unsigned n)
{
	memset(mac, 0, 6);
	mac[0] = 0x02;
	mac[5] = (uint8_t)n;
}

/* A frame dst <- src carrying sequence number seq. */
static struct pkt *frame(const uint8_t *dst, const uint8_t *src, uint32_t seq)
{
	struct pkt *p = eth_frame_new(dst, src, 64);

	if (!p)
		return NULL;
	memcpy(p->data + 14, &seq, 4);
	for (uint32_t i = 18; i < 64; i++)
		p->data[i] = (uint8_t)(i + seq);
	return p;
}

static uint32_t seq_of(const struct pkt *p)
{
	uint32_t s;

	memcpy(&s, p->data + 14, 4);
	return s;
}

static void run_both(struct loop *a, struct loop *b, unsigned n)
{
	while (n--) {
		loop_run_once(a, 0);
		loop_run_once(b, 0);
	}
}

struct two {
	struct loop *l[2];
	struct sw *s[2];
	struct trunk *t[2];
	struct mock a, b;
	uint8_t ma[6], mb[6];
};

static int two_init(struct two *w, unsigned limit_b)
{
	for (int i = 0; i < 2; i++) {
		w->l[i] = loop_new();
		w->s[i] = w->l[i] ? sw_new(w->l[i]) : NULL;
		if (!w->s[i])
			return -1;
	}
	if (trunk_new(w->s[0], w->l[0], 0, w->s[1], w->l[1], 1, &w->t[0], &w->t[1]))
		return -1;
	mock_init(&w->a, "a", 0);
	mock_init(&w->b, "b", limit_b);
	if (sw_attach(w->s[0], &w->a.port) || sw_attach(w->s[1], &w->b.port))
		return -1;
	mac_of(w->ma, 1);
	mac_of(w->mb, 2);
	/* b announces itself: s1 floods it into the trunk, s0 learns it */
	sw_input(w->s[1], &w->b.port, frame(BCAST, w->mb, 0));
	run_both(w->l[0], w->l[1], 4);
	return 0;
}

static void two_fini(struct two *w)
{
	sw_detach(w->s[0], &w->a.port);
	sw_detach(w->s[1], &w->b.port);
	trunk_free(w->t[0], w->t[1]);
	pkt_queue_purge(&w->a.q);
	pkt_queue_purge(&w->b.q);
	for (int i = 0; i < 2; i++) {
		sw_free(w->s[i]);
		loop_run_once(w->l[i], 0);
		loop_free(w->l[i]);
	}
}

/* w with a second receiver c on the far switch, its MAC mc learnt by the
 * near one, every queue empty. */
static int two_init_with_c(struct two *w, struct mock *c, uint8_t mc[6])
{
	if (two_init(w, 64))
		return -1;
	mock_init(c, "c", 0);
	if (sw_attach(w->s[1], &c->port))
		return -1;
	mac_of(mc, 3);
	sw_input(w->s[1], &c->port, frame(BCAST, mc, 0));
	run_both(w->l[0], w->l[1], 4);
	pkt_queue_purge(&w->a.q);
	pkt_queue_purge(&w->b.q);
	return 0;
}

/* Frees the frames of q, counting them in *got; false if one breaks the
 * sequence 1, 2, ... */
static bool drain_in_order(struct pkt_queue *q, uint32_t *got)
{
	bool order = true;
	struct pkt *p;

	while ((p = pkt_queue_pop(q))) {
		if (seq_of(p) != ++*got)
			order = false;
		pkt_free(p);
	}
	return order;
}

/* Unicast through the trunk keeps its order; nothing is lost when a sender
 * that ignores flow control (plain sw_input) sends bursts the overflow
 * queue holds. */
static void order_no_loss(void)
{
	uint64_t base = pkt_outstanding();
	struct two w;
	struct pkt *p;
	uint32_t n = 0, want = 5000;
	bool order = true;

	REQUIRE(two_init(&w, 0) == 0);
	CHECK_EQ(w.a.q.len, 1u); /* b's broadcast reached a, once */
	pkt_queue_purge(&w.a.q);
	for (uint32_t i = 1; i <= want; i++) {
		sw_input(w.s[0], &w.a.port, frame(w.mb, w.ma, i));
		if (i % (TRUNK_RING_SLOTS + TRUNK_OVER_MAX / 2) == 0) /* a burst */
			for (unsigned k = 0; k < 200 && trunk_tx_pending(w.t[0]); k++)
				run_both(w.l[0], w.l[1], 1);
	}
	CHECK(trunk_get_stats(w.t[0])->tx_overflow > 0);
	for (unsigned k = 0; k < 200 && w.b.q.len < want; k++)
		run_both(w.l[0], w.l[1], 1);
	CHECK_EQ(trunk_get_stats(w.t[0])->tx_dropped, 0u);
	while ((p = pkt_queue_pop(&w.b.q))) {
		if (seq_of(p) != ++n)
			order = false;
		CHECK_EQ(p->len, 64u);
		CHECK_EQ(p->data[40], (uint8_t)(40 + n));
		pkt_free(p);
	}
	CHECK(order);
	CHECK_EQ(n, want);
	CHECK_EQ(trunk_tx_pending(w.t[0]), 0u);
	CHECK_EQ(trunk_get_stats(w.t[1])->rx_frames, want);
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* A busy receiver behind the trunk: the far end stops draining, the ring
 * fills, the near trunk is busy and refuses (sw_input_try), and the sender
 * is woken once the receiver drained; every frame arrives once, in order. */
static void busy_ready(void)
{
	uint64_t base = pkt_outstanding();
	struct two w;
	struct pkt_queue held;
	struct pkt *p;
	uint32_t sent = 0, got = 0, want = 4000, refused = 0;
	bool order = true;

	REQUIRE(two_init(&w, 64) == 0);
	pkt_queue_purge(&w.a.q);
	pkt_queue_init(&held);
	for (unsigned iter = 0; got < want && iter < 100000; iter++) {
		/* a sends until refused, keeping the refused frame first */
		while (sent < want || held.head) {
			p = held.head ? pkt_queue_pop(&held) : frame(w.mb, w.ma, ++sent);
			REQUIRE(p);
			if (sw_input_try(w.s[0], &w.a.port, p) == -EAGAIN) {
				pkt_queue_push(&held, p);
				refused++;
				break;
			}
		}
		run_both(w.l[0], w.l[1], 2);
		/* b drains what it holds and says it has room */
		if (!drain_in_order(&w.b.q, &got))
			order = false;
		sw_port_ready(w.s[1], &w.b.port);
		run_both(w.l[0], w.l[1], 2);
	}
	CHECK(order);
	CHECK_EQ(got, want);
	CHECK(refused > 0);
	CHECK(w.a.woken > 0);
	CHECK(trunk_get_stats(w.t[0])->tx_busy > 0);
	CHECK(trunk_get_stats(w.t[1])->rx_held > 0);
	CHECK_EQ(trunk_get_stats(w.t[0])->tx_overflow, 0u); /* flow control held it all */
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Two receivers behind the trunk, one busy and not draining: frames to the
 * other keep arriving (held per receiver on the far side, no head-of-line
 * blocking between tenants); once the busy one drains, its frames arrive,
 * in order, none lost. */
static void busy_receiver_does_not_block_others(void)
{
	uint64_t base = pkt_outstanding();
	struct two w;
	struct mock c;
	uint8_t mc[6];
	uint32_t want = 500, gb = 0, gc = 0;
	bool order = true;

	REQUIRE(two_init_with_c(&w, &c, mc) == 0);
	for (uint32_t i = 1; i <= want; i++) {
		CHECK_EQ(sw_input_try(w.s[0], &w.a.port, frame(w.mb, w.ma, i)), 0);
		CHECK_EQ(sw_input_try(w.s[0], &w.a.port, frame(mc, w.ma, i)), 0);
		run_both(w.l[0], w.l[1], 1);
	}
	run_both(w.l[0], w.l[1], 8);
	/* c got everything while b sat at its limit */
	CHECK_EQ(c.q.len, want);
	CHECK_EQ(w.b.q.len, 64u);
	if (!drain_in_order(&c.q, &gc))
		order = false;
	CHECK(trunk_get_stats(w.t[1])->rx_held > 0);
	/* b drains: its held frames follow, in order */
	for (unsigned k = 0; k < 1000 && gb < want; k++) {
		if (!drain_in_order(&w.b.q, &gb))
			order = false;
		sw_port_ready(w.s[1], &w.b.port);
		run_both(w.l[0], w.l[1], 2);
	}
	CHECK(order);
	CHECK_EQ(gc, want);
	CHECK_EQ(gb, want);
	sw_detach(w.s[1], &c.port);
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* More than TRUNK_HOLD_MAX frames for a busy receiver: the far end
 * publishes its MAC busy and the near end refuses frames for it at the
 * sender (sw_input_try), while frames to another receiver behind the same
 * trunk are all accepted and delivered; once the busy one drains, its
 * sender is woken and every frame arrives once, in order, none dropped. */
static void busy_receiver_refused_at_sender(void)
{
	uint64_t base = pkt_outstanding();
	struct two w;
	struct mock c;
	struct pkt_queue held;
	uint8_t mc[6];
	uint32_t want = 3 * TRUNK_HOLD_MAX, gb = 0, gc = 0, refused = 0;
	bool order = true;
	struct pkt *p;

	REQUIRE(two_init_with_c(&w, &c, mc) == 0);
	pkt_queue_init(&held);
	for (uint32_t i = 1; i <= want; i++) {
		/* frames to b: refused ones wait in order at the sender */
		p = frame(w.mb, w.ma, i);
		REQUIRE(p);
		if (held.head || sw_input_try(w.s[0], &w.a.port, p) == -EAGAIN) {
			pkt_queue_push(&held, p);
			refused++;
		}
		CHECK_EQ(sw_input_try(w.s[0], &w.a.port, frame(mc, w.ma, i)), 0);
		run_both(w.l[0], w.l[1], 1);
	}
	run_both(w.l[0], w.l[1], 8);
	CHECK_EQ(c.q.len, want);
	CHECK(refused > 0);
	CHECK(trunk_get_stats(w.t[0])->tx_refused > 0);
	CHECK(trunk_get_stats(w.t[1])->rx_busy_set > 0);
	if (!drain_in_order(&c.q, &gc))
		order = false;
	/* b drains; a is woken and resends what was refused */
	for (unsigned k = 0; k < 10000 && gb < want; k++) {
		if (!drain_in_order(&w.b.q, &gb))
			order = false;
		sw_port_ready(w.s[1], &w.b.port);
		run_both(w.l[0], w.l[1], 2);
		while (held.head) {
			p = pkt_queue_pop(&held);
			if (sw_input_try(w.s[0], &w.a.port, p) == -EAGAIN) {
				p->next = held.head; /* back in front */
				held.head = p;
				if (!held.tail)
					held.tail = p;
				held.len++;
				held.pkts++;
				break;
			}
		}
	}
	CHECK(order);
	CHECK_EQ(gc, want);
	CHECK_EQ(gb, want);
	CHECK(w.a.woken > 0);
	CHECK_EQ(trunk_get_stats(w.t[1])->rx_dropped, 0u);
	CHECK_EQ(trunk_get_stats(w.t[0])->tx_dropped, 0u);
	sw_detach(w.s[1], &c.port);
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Frames without flow control (plain sw_input floods) while the far end
 * does not run: the overflow queue stops at TRUNK_OVER_MAX and the rest is
 * dropped and counted; the far side then gets exactly what was kept. */
static void overflow_bounded(void)
{
	uint64_t base = pkt_outstanding();
	struct two w;
	uint32_t want = 3 * TRUNK_RING_SLOTS + TRUNK_OVER_MAX, kept;

	REQUIRE(two_init(&w, 0) == 0);
	pkt_queue_purge(&w.a.q);
	pkt_queue_purge(&w.b.q);
	for (uint32_t i = 1; i <= want; i++)
		sw_input(w.s[0], &w.a.port, frame(BCAST, w.ma, i));
	kept = trunk_tx_pending(w.t[0]);
	CHECK_EQ(kept, TRUNK_RING_SLOTS + TRUNK_OVER_MAX);
	CHECK_EQ(trunk_get_stats(w.t[0])->tx_dropped, (uint64_t)(want - kept));
	CHECK_EQ(trunk_port(w.t[0])->stats.tx_dropped, (uint64_t)(want - kept));
	for (unsigned k = 0; k < 200 && w.b.q.len < kept; k++)
		run_both(w.l[0], w.l[1], 1);
	CHECK_EQ(w.b.q.len, kept);
	pkt_queue_purge(&w.b.q);
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Three switches in a full mesh: a broadcast reaches every other switch
 * once (no loop), and a unicast from one trunk is never sent into another. */
static void split_horizon(void)
{
	uint64_t base = pkt_outstanding();
	struct loop *l[3];
	struct sw *s[3];
	struct trunk *t[3][3] = { { 0 } };
	struct mock m[3];
	uint8_t mac[3][6];

	for (int i = 0; i < 3; i++) {
		l[i] = loop_new();
		REQUIRE(l[i]);
		s[i] = sw_new(l[i]);
		REQUIRE(s[i]);
		mock_init(&m[i], i == 0 ? "m0" : i == 1 ? "m1" : "m2", 0);
		REQUIRE(sw_attach(s[i], &m[i].port) == 0);
		mac_of(mac[i], 10 + (unsigned)i);
	}
	for (unsigned i = 0; i < 3; i++)
		for (unsigned j = i + 1; j < 3; j++)
			REQUIRE(trunk_new(s[i], l[i], i, s[j], l[j], j, &t[i][j], &t[j][i]) == 0);
	sw_input(s[0], &m[0].port, frame(BCAST, mac[0], 7));
	for (int k = 0; k < 20; k++)
		for (int i = 0; i < 3; i++)
			loop_run_once(l[i], 0);
	CHECK_EQ(m[0].q.len, 0u);
	CHECK_EQ(m[1].q.len, 1u);
	CHECK_EQ(m[2].q.len, 1u);
	CHECK_EQ(sw_get_stats(s[1])->flooded, 1u);
	CHECK_EQ(sw_get_stats(s[2])->flooded, 1u);
	/* s1 learned m0 on trunk 1-0; a frame for m0 entering s1 from
	 * trunk 1-2 (as a wrong mesh would send it) is dropped, not sent on */
	{
		struct pkt *p = frame(mac[0], mac[2], 8);

		REQUIRE(p);
		sw_input(s[1], trunk_port(t[1][2]), p);
		CHECK_EQ(sw_get_stats(s[1])->dropped_horizon, 1u);
		CHECK_EQ(trunk_tx_pending(t[1][0]), 0u);
	}
	for (unsigned i = 0; i < 3; i++)
		for (unsigned j = i + 1; j < 3; j++)
			trunk_free(t[i][j], t[j][i]);
	for (int i = 0; i < 3; i++) {
		sw_detach(s[i], &m[i].port);
		pkt_queue_purge(&m[i].q);
		sw_free(s[i]);
		loop_run_once(l[i], 0);
		loop_free(l[i]);
	}
	CHECK_EQ(pkt_outstanding(), base);
}

/* A frame whose payload is a reference into the sender's memory crosses
 * with its bytes: the far side gets the payload as it was when sent, even
 * if the memory changes (or goes away) afterwards, and no reference. */
static void ref_frame_owns_bytes(void)
{
	uint64_t base = pkt_outstanding();
	struct pkt_ref_stats r0, r1;
	uint8_t payload[1000], want[1000];
	struct iovec iov[2];
	struct two w;
	struct pkt *p;

	REQUIRE(two_init(&w, 0) == 0);
	pkt_queue_purge(&w.a.q);
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 5);
	memcpy(want, payload, sizeof(want));
	p = frame(w.mb, w.ma, 1);
	REQUIRE(p);
	p->len = 64 + sizeof(payload);
	iov[0] = (struct iovec){ payload, 300 };
	iov[1] = (struct iovec){ payload + 300, sizeof(payload) - 300 };
	pkt_ref_attach(p, 64, iov, 2, sizeof(payload));
	pkt_ref_get_stats(&r0);
	sw_input(w.s[0], &w.a.port, p);
	pkt_ref_get_stats(&r1);
	CHECK_EQ(r1.live, r0.live - 1);
	memset(payload, 0xee, sizeof(payload)); /* the sender's memory changes */
	run_both(w.l[0], w.l[1], 4);
	p = pkt_queue_pop(&w.b.q);
	REQUIRE(p);
	CHECK(!(p->flags & PKT_F_PAYLOAD_REF));
	CHECK_EQ(p->len, 64 + sizeof(want));
	CHECK_EQ(seq_of(p), 1u);
	CHECK_MEM(p->data + 64, want, sizeof(want));
	pkt_free(p);
	two_fini(&w);
	CHECK_EQ(pkt_outstanding(), base);
}

/* ---- RoCE across a trunk: references and runs arrive byte for byte ---- */

#define XBUF (2u << 20)

struct xpair {
	struct fk_env e[2];
	struct trunk *t[2];
	union {
		struct fk_rc_pair rc;
		struct { FK_RC_PAIR_MEMBERS };
	};
};

static void xpair_init(struct xpair *p)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 16u << 20, .max_send_sge = 8,
				 .max_recv_sge = 8 };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .max_send_sge = 4, .max_recv_sge = 4,
				.max_inline = 256, .sq_num = 64, .rq_num = 64,
				.max_send_wr = 64, .max_recv_wr = 64 };
	struct fk_path path;

	memset(p, 0, sizeof(*p));
	fk_path_default(&path);
	if (fk_env_init(&p->e[0], true) || fk_env_init(&p->e[1], true))
		abort();
	p->a = fk_dev_new(&p->e[0], &dc);
	p->e[1].ndev = 1; /* a second device number: its own MAC and IP */
	p->b = fk_dev_new(&p->e[1], &dc);
	p->e[1].dev[0] = p->b;
	p->e[1].dev[1] = NULL;
	p->e[1].ndev = 1;
	if (trunk_new(p->e[0].sw, p->e[0].loop, 0, p->e[1].sw, p->e[1].loop, 1, &p->t[0],
		      &p->t[1]))
		abort();
	fk_rc_pair_init(&p->rc, &qc, &path, 256, 128, XBUF);
}

static void xpair_fini(struct xpair *p)
{
	trunk_free(p->t[0], p->t[1]);
	fk_env_fini(&p->e[0]);
	fk_env_fini(&p->e[1]);
}

static unsigned x_wait_cq(struct xpair *p, struct fk_dev *d, uint32_t cqn,
			  struct virtio_rdma_cq_req *wc)
{
	uint64_t end = loop_now_ns() + (uint64_t)WAIT_MS * 1000000ull;

	while (loop_now_ns() < end) {
		if (fk_poll_cq(d, cqn, wc, 1) == 1)
			return 1;
		loop_run_once(p->e[0].loop, 0);
		loop_run_once(p->e[1].loop, 0);
	}
	return 0;
}

/* Small WRITEs and SENDs posted together cross as runs of messages (each
 * packet with its own RETH and payload): completions in order, data byte
 * for byte. */
static void messages_across(struct xpair *p)
{
	static struct fk_sge ls[16], rs[16];
	struct virtio_rdma_cq_req wc;
	uint64_t msgs0 = roce_tp_get_stats(p->a->tp)->tx_run_msgs;

	for (uint32_t i = 0; i < 16; i++) {
		bool send = i % 2;
		uint32_t len = 1 + i * 61;
		struct fk_wr wr = { .wr_id = 300 + i, .trunc = -1, .flags = VIRTIO_IB_SEND_SIGNALED,
				    .opcode = send ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE };
		uint8_t *src = p->ma.buf + i * 1024, *dst = p->mb.buf + i * 1024 + 5;

		fk_fill(src, len, 90 + i);
		memset(dst, 0x5a, len + 8);
		fk_sges_split(&ls[i], 1, src, len, p->ma.lkey);
		wr.sge = &ls[i];
		wr.nsge = 1;
		if (send) {
			rs[i] = (struct fk_sge){ dst, len, p->mb.lkey };
			REQUIRE(fk_post_recv(p->b, &p->qb, 400 + i, &rs[i], 1) == 0);
		} else {
			wr.remote_addr = (uintptr_t)dst;
			wr.rkey = p->mb.rkey;
		}
		REQUIRE(fk_post_send(p->a, &p->qa, &wr) == 0);
	}
	for (uint32_t i = 0; i < 16; i++) {
		CHECK_EQ(x_wait_cq(p, p->a, p->cqa, &wc), 1);
		CHECK_EQ(wc.wr_id, 300 + i);
		CHECK_EQ(wc.status, VIRTIO_IB_WC_SUCCESS);
	}
	for (uint32_t i = 1; i < 16; i += 2) {
		CHECK_EQ(x_wait_cq(p, p->b, p->cqb, &wc), 1);
		CHECK_EQ(wc.wr_id, 400 + i);
		CHECK_EQ(wc.byte_len, 1 + i * 61);
	}
	for (uint32_t i = 0; i < 16; i++) {
		CHECK(memcmp(p->ma.buf + i * 1024, p->mb.buf + i * 1024 + 5, 1 + i * 61) == 0);
		CHECK_EQ(p->mb.buf[i * 1024 + 5 + 1 + i * 61], 0x5a);
	}
	CHECK(roce_tp_get_stats(p->a->tp)->tx_run_msgs > msgs0);
	fk_ring_reap(p->qa.sq);
	fk_ring_reap(p->qb.rq);
}

static void roce_across(void)
{
	static const uint32_t sizes[] = { 1, 1023, 1025, 4097, 65536, 1u << 20 };
	static const uint8_t ops[] = { VIRTIO_IB_WR_RDMA_WRITE, VIRTIO_IB_WR_SEND };
	uint64_t base = pkt_outstanding();
	struct xpair p;
	uint32_t seed = 1;

	xpair_init(&p);
	for (unsigned o = 0; o < 2; o++) {
		for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++, seed++) {
			uint32_t len = sizes[i];
			bool send = ops[o] == VIRTIO_IB_WR_SEND;
			uint8_t *src = p.ma.buf + 1, *dst = p.mb.buf + 3;
			struct fk_sge ls[3], rs[1];
			struct fk_wr wr = { .wr_id = 100 + seed, .opcode = ops[o], .trunc = -1,
					    .flags = VIRTIO_IB_SEND_SIGNALED };
			struct virtio_rdma_cq_req wc;

			fk_fill(src, len, seed);
			memset(dst, 0x5a, (size_t)len + 64);
			fk_sges_split(ls, len >= 3 ? 3 : 1, src, len, p.ma.lkey);
			wr.sge = ls;
			wr.nsge = len >= 3 ? 3 : 1;
			if (send) {
				rs[0] = (struct fk_sge){ dst, len, p.mb.lkey };
				REQUIRE(fk_post_recv(p.b, &p.qb, 200 + seed, rs, 1) == 0);
			} else {
				wr.remote_addr = (uintptr_t)dst;
				wr.rkey = p.mb.rkey;
			}
			REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
			CHECK_EQ(x_wait_cq(&p, p.a, p.cqa, &wc), 1);
			CHECK_EQ(wc.wr_id, 100 + seed);
			CHECK_EQ(wc.status, VIRTIO_IB_WC_SUCCESS);
			if (send) {
				CHECK_EQ(x_wait_cq(&p, p.b, p.cqb, &wc), 1);
				CHECK_EQ(wc.status, VIRTIO_IB_WC_SUCCESS);
				CHECK_EQ(wc.byte_len, len);
			}
			CHECK(memcmp(src, dst, len) == 0);
			CHECK_EQ(dst[len], 0x5a);
			fk_ring_reap(p.qa.sq);
			fk_ring_reap(p.qb.rq);
		}
	}
	/* the transport made references and runs; the trunk filled them
	 * and the runs arrived as runs; the receiver dropped nothing */
	CHECK(roce_tp_get_stats(p.a->tp)->tx_by_ref > 0);
	CHECK(roce_tp_get_stats(p.a->tp)->tx_runs > 0);
	CHECK(trunk_get_stats(p.t[0])->tx_runs > 0);
	CHECK(roce_tp_get_stats(p.b->tp)->rx_runs > 0);
	CHECK_EQ(roce_tp_get_stats(p.b->tp)->rx_queue_full, 0u);
	CHECK_EQ(roce_tp_get_stats(p.a->tp)->rx_queue_full, 0u);
	messages_across(&p);
	xpair_fini(&p);
	CHECK_EQ(pkt_outstanding(), base);
}

/* ---- the far end on its own thread ---- */

struct far {
	struct two *w;
	atomic_bool done;
	uint32_t got, want;
	bool order;
};

/* The far end: its loop, and b drained as it fills (b's queue is the far
 * thread's). */
static void *far_main(void *arg)
{
	struct far *f = arg;
	uint64_t end = loop_now_ns() + (uint64_t)WAIT_MS * 2000000ull;
	struct pkt *p;

	while (f->got < f->want && loop_now_ns() < end) {
		loop_run_once(f->w->l[1], 1000000);
		if (f->w->b.q.len) {
			while ((p = pkt_queue_pop(&f->w->b.q))) {
				if (seq_of(p) != ++f->got)
					f->order = false;
				pkt_free(p);
			}
			sw_port_ready(f->w->s[1], &f->w->b.port);
		}
	}
	atomic_store(&f->done, true);
	return NULL;
}

static void threaded(void)
{
	struct two w;
	struct far f = { .w = &w, .want = 200000, .order = true };
	struct pkt_queue held;
	pthread_t th;
	uint32_t sent = 0;
	uint64_t end;

	REQUIRE(two_init(&w, 64) == 0);
	pkt_queue_purge(&w.a.q);
	pkt_queue_init(&held);
	atomic_init(&f.done, false);
	REQUIRE(pthread_create(&th, NULL, far_main, &f) == 0);
	end = loop_now_ns() + (uint64_t)WAIT_MS * 2000000ull;
	while ((sent < f.want || held.head) && loop_now_ns() < end) {
		struct pkt *p = held.head ? pkt_queue_pop(&held) : frame(w.mb, w.ma, ++sent);

		if (!p)
			break;
		if (sw_input_try(w.s[0], &w.a.port, p) == -EAGAIN) {
			unsigned woken = w.a.woken;

			pkt_queue_push(&held, p);
			/* the trunk's eventfd wakes this loop when there is room */
			while (w.a.woken == woken && loop_now_ns() < end)
				loop_run_once(w.l[0], 1000000);
		}
	}
	while (!atomic_load(&f.done))
		loop_run_once(w.l[0], 1000000);
	pthread_join(th, NULL);
	CHECK(f.order);
	CHECK_EQ(sent, f.want);
	CHECK_EQ(f.got, f.want);
	CHECK_EQ(trunk_tx_pending(w.t[0]), 0u);
	CHECK_EQ(trunk_get_stats(w.t[0])->tx_overflow, 0u);
	pkt_queue_purge(&held);
	two_fini(&w);
}

int main(void)
{
	TEST_PROGRAM("test_trunk");
	RUN(order_no_loss);
	RUN(busy_ready);
	RUN(busy_receiver_does_not_block_others);
	RUN(busy_receiver_refused_at_sender);
	RUN(overflow_bounded);
	RUN(split_horizon);
	RUN(ref_frame_owns_bytes);
	RUN(roce_across);
	RUN(threaded);
	return TEST_DONE();
}
