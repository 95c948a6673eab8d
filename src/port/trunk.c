/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trunks between the switches of two loop threads (trunk.h).
 *
 * Each direction is a ring written by one thread (the end whose switch
 * sends) and read by the other. head and tail are C11 atomics: the producer
 * publishes a slot with a store of tail, the consumer frees it with a store
 * of head. Wake-ups use a flag per direction and side; each side stores
 * (the index, or the flag) and then loads (the flag, or the index), all
 * sequentially consistent, so one of the two always sees the other and a
 * wake-up is never lost; while both sides are busy no eventfd is written.
 */
#include "port/trunk.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"
#include "port/port.h"

_Static_assert((TRUNK_RING_SLOTS & (TRUNK_RING_SLOTS - 1)) == 0, "ring size is a power of two");
_Static_assert(TRUNK_RING_LOW < TRUNK_RING_HIGH && TRUNK_RING_HIGH < TRUNK_RING_SLOTS,
	       "trunk marks");

struct trunk_ring {
	_Alignas(64) _Atomic uint32_t tail;  /* producer: next slot to fill */
	_Alignas(64) _Atomic uint32_t head;  /* consumer: next slot to take */
	/* The consumer found the ring empty and may sleep: the producer
	 * writes the consumer's eventfd after its next push. */
	_Alignas(64) atomic_bool rx_sleep;
	/* The producer is (or told its switch it is) busy: the consumer
	 * writes the producer's eventfd once the ring is at its low mark. */
	atomic_bool tx_wait;
	/* Destinations the consumer's side holds too much for (MAC keys, 0 =
	 * free; written by the consumer only), how many (a hint that lets the
	 * producer skip the scan), and "some were cleared": the producer wakes
	 * its waiting senders. */
	_Alignas(64) _Atomic uint64_t busy_mac[TRUNK_BUSY_DESTS];
	_Atomic uint32_t nbusy;
	atomic_bool dst_ready;
	_Alignas(64) struct pkt *slot[TRUNK_RING_SLOTS];
};

struct trunk {
	struct port port;
	struct sw *sw;
	struct loop *loop;
	struct trunk *peer;
	struct trunk_ring *tx; /* we fill it */
	struct trunk_ring *rx; /* the peer fills it */
	int efd;               /* wakes this end's loop */
	struct loop_poller *poller;
	struct pkt_queue over; /* our frames beyond the ring, in order */
	/* From rx, for busy receivers here: one queue per receiver, so the
	 * others' frames go on (no head-of-line blocking between tenants). */
	struct trunk_hold {
		struct port *to;
		struct pkt_queue q;
	} hold[TRUNK_HOLD_DESTS];
	uint32_t nhold, held;  /* queues in use, packets in them */
	uint32_t retry_next;   /* the queue retried first next time */
	struct port *busy_owner[TRUNK_BUSY_DESTS]; /* receiver of rx->busy_mac[i] */
	struct pkt *stuck;     /* could not be held: the ring waits for ready() */
	bool retry;            /* ready() came: retry the queues and stuck */
	bool busy_said;        /* busy() said yes: senders here may wait on us */
	struct trunk_stats stats;
};

/* (Sequentially consistent, as are the index stores: with the flags that
 * is the store-then-load pattern on both sides that makes a lost wake-up
 * impossible; acquire / release alone allow the store after the load.) */
static inline uint32_t ring_used(struct trunk_ring *r)
{
	return atomic_load(&r->tail) - atomic_load(&r->head);
}

/* Producer side: put p on the ring if there is room. */
static bool ring_push(struct trunk_ring *r, struct pkt *p)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);

	if (t - h >= TRUNK_RING_SLOTS)
		return false;
	r->slot[t & (TRUNK_RING_SLOTS - 1)] = p;
	atomic_store(&r->tail, t + 1);
	return true;
}

/* Consumer side: the oldest frame, or NULL. */
static struct pkt *ring_pop(struct trunk_ring *r)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	struct pkt *p;

	if (h == t)
		return NULL;
	p = r->slot[h & (TRUNK_RING_SLOTS - 1)];
	atomic_store(&r->head, h + 1);
	return p;
}

static void trunk_kick(struct trunk *t)
{
	uint64_t one = 1;

	if (write(t->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_WARN("trunk %s: eventfd: %m", t->port.name);
}

/* After a push on t->tx: wake the peer if it sleeps on an empty ring. */
static inline void trunk_wake_consumer(struct trunk *t)
{
	if (atomic_load(&t->tx->rx_sleep) && atomic_exchange(&t->tx->rx_sleep, false)) {
		t->stats.kicks++;
		trunk_kick(t->peer);
	}
}

/* Move overflow frames onto the ring while there is room. */
static bool trunk_flush_over(struct trunk *t)
{
	bool moved = false;

	while (t->over.head) {
		if (!ring_push(t->tx, t->over.head))
			break;
		pkt_queue_pop(&t->over);
		t->stats.tx_frames++;
		moved = true;
	}
	if (moved)
		trunk_wake_consumer(t);
	return moved;
}

static bool trunk_tx_busy(struct trunk *t)
{
	return t->over.head || ring_used(t->tx) >= TRUNK_RING_HIGH;
}

/* Ask the peer to wake us once our ring is at its low mark; if it already
 * is, wake ourselves (the peer may have looked before the flag was set). */
static void trunk_want_room(struct trunk *t)
{
	atomic_store(&t->tx->tx_wait, true);
	if (ring_used(t->tx) <= TRUNK_RING_LOW && atomic_exchange(&t->tx->tx_wait, false))
		trunk_kick(t);
}

/* One frame that owns its bytes onto the ring (or the overflow queue; when
 * that is full, dropped: only frames without flow control get there). */
static void trunk_put(struct trunk *t, struct pkt *p)
{
	if (!t->over.head && ring_push(t->tx, p)) {
		t->stats.tx_frames++;
		trunk_wake_consumer(t);
		return;
	}
	if (t->over.len >= TRUNK_OVER_MAX) {
		t->stats.tx_dropped += pkt_npkts(p);
		t->port.stats.tx_dropped += pkt_npkts(p);
		pkt_free(p);
		trunk_want_room(t);
		return;
	}
	pkt_queue_push(&t->over, p);
	t->stats.tx_overflow++;
	trunk_want_room(t);
}

static void trunk_xmit(struct port *port, struct pkt *p)
{
	struct trunk *t = port->priv;

	/* The far thread cannot read our drivers' memory safely (a region may
	 * be unmapped here while the frame waits there): the payload comes
	 * along. A run keeps being one frame, its payload copied into a buffer
	 * of its own (pkt_ref_fill), freed with the frame on the far side. */
	if (unlikely(p->flags & PKT_F_RUN))
		t->stats.tx_runs++;
	pkt_ref_fill(p);
	trunk_put(t, p);
}

static bool trunk_busy(const struct port *port)
{
	struct trunk *t = port->priv;

	if (!trunk_tx_busy(t))
		return false;
	t->stats.tx_busy++;
	t->busy_said = true;
	trunk_want_room(t);
	return true;
}

static inline uint64_t trunk_mac_key(const uint8_t *mac)
{
	uint64_t k = 1ull << 48; /* never 0 (a free entry) */

	for (int i = 0; i < 6; i++)
		k |= (uint64_t)mac[i] << (8 * i);
	return k;
}

/* The far receiver of pkt's destination is busy: refuse it here (the
 * switch makes the sender wait for our sw_port_ready). */
static bool trunk_busy_to(const struct port *port, const struct pkt *p)
{
	struct trunk *t = port->priv;
	uint64_t k;

	if (!atomic_load_explicit(&t->tx->nbusy, memory_order_relaxed) || p->len < 6)
		return false;
	k = trunk_mac_key(p->data);
	for (uint32_t i = 0; i < TRUNK_BUSY_DESTS; i++)
		if (atomic_load(&t->tx->busy_mac[i]) == k) {
			t->stats.tx_refused += pkt_npkts(p);
			return true;
		}
	return false;
}

/* Receiver side: publish p's destination as busy (held for to). Returns
 * false when no entry is left. */
static bool trunk_dst_set(struct trunk *t, struct port *to, const struct pkt *p)
{
	uint64_t k = trunk_mac_key(p->data);
	int free_i = -1;

	for (uint32_t i = 0; i < TRUNK_BUSY_DESTS; i++) {
		uint64_t v = atomic_load_explicit(&t->rx->busy_mac[i], memory_order_relaxed);

		if (v == k)
			return true;
		if (!v && free_i < 0)
			free_i = (int)i;
	}
	if (free_i < 0)
		return false;
	t->busy_owner[free_i] = to;
	atomic_store(&t->rx->busy_mac[free_i], k);
	atomic_fetch_add(&t->rx->nbusy, 1);
	t->stats.rx_busy_set++;
	return true;
}

/* Receiver side: to has room again: clear its destinations and wake the
 * sending end (its poller calls sw_port_ready for the senders we refused). */
static void trunk_dst_clear(struct trunk *t, const struct port *to)
{
	bool cleared = false;

	for (uint32_t i = 0; i < TRUNK_BUSY_DESTS; i++) {
		if (t->busy_owner[i] != to)
			continue;
		t->busy_owner[i] = NULL;
		atomic_store(&t->rx->busy_mac[i], 0);
		atomic_fetch_sub(&t->rx->nbusy, 1);
		cleared = true;
	}
	if (cleared) {
		atomic_store(&t->rx->dst_ready, true);
		t->stats.kicks++;
		trunk_kick(t->peer);
	}
}

/* A receiver on this side that refused a frame of ours has room. */
static void trunk_ready(struct port *port)
{
	struct trunk *t = port->priv;

	/* The poller retries; our loop may have passed our arm() already
	 * (ready() can come from a later poller's), so wake it. */
	if (!t->retry) {
		t->retry = true;
		trunk_kick(t);
	}
}

static struct trunk_hold *trunk_hold_of(struct trunk *t, const struct port *to)
{
	for (uint32_t i = 0; i < t->nhold; i++)
		if (t->hold[i].to == to)
			return &t->hold[i];
	return NULL;
}

/* One frame from the ring into our switch, or into its receiver's queue
 * when that one is busy (or already has frames waiting: order); a queue at
 * TRUNK_HOLD_MAX publishes the destination busy, one at TRUNK_HOLD_LIMIT
 * drops. Returns false when it could be neither (no queue or busy entry
 * left): the caller keeps it and stops. */
static bool trunk_rx_one(struct trunk *t, struct pkt *p)
{
	struct port *to = sw_unicast_port(t->sw, &t->port, p);
	struct trunk_hold *h = to ? trunk_hold_of(t, to) : NULL;

	if (!h && sw_input_try(t->sw, &t->port, p) == 0) {
		t->stats.rx_frames++;
		return true;
	}
	if (!h) {
		if (!to || t->nhold == TRUNK_HOLD_DESTS)
			return false;
		h = &t->hold[t->nhold++];
		h->to = to;
		pkt_queue_init(&h->q);
	}
	if (h->q.pkts >= TRUNK_HOLD_MAX && !trunk_dst_set(t, to, p))
		return false;
	if (h->q.pkts >= TRUNK_HOLD_LIMIT) {
		t->stats.rx_dropped += pkt_npkts(p);
		pkt_free(p);
		return true;
	}
	pkt_queue_push(&h->q, p);
	t->held += pkt_npkts(p);
	t->stats.rx_held++;
	return true;
}

/* ready() came: each queue into the switch until refused (starting with a
 * different one each time), emptied queues freed, then the stuck frame. */
static bool trunk_retry(struct trunk *t)
{
	uint32_t n = t->nhold, start = n ? t->retry_next++ % n : 0;
	bool did = false;

	t->retry = false;
	for (uint32_t k = 0; k < n; k++) {
		struct trunk_hold *h = &t->hold[(start + k) % n];

		while (h->q.head) {
			/* (off the queue first: the switch reuses p->next) */
			struct pkt *p = pkt_queue_pop(&h->q);

			if (sw_input_try(t->sw, &t->port, p) == -EAGAIN) {
				p->next = h->q.head; /* back in front */
				h->q.head = p;
				if (!h->q.tail)
					h->q.tail = p;
				h->q.len++;
				h->q.pkts += pkt_npkts(p);
				break;
			}
			t->held -= pkt_npkts(p);
			t->stats.rx_frames++;
			did = true;
		}
		if (h->q.pkts <= TRUNK_HOLD_MAX / 2)
			trunk_dst_clear(t, h->to);
	}
	for (uint32_t i = 0; i < t->nhold;) {
		if (t->hold[i].q.head) {
			i++;
			continue;
		}
		t->hold[i] = t->hold[--t->nhold];
	}
	if (t->stuck) {
		struct pkt *p = t->stuck;

		t->stuck = NULL;
		if (!trunk_rx_one(t, p))
			t->stuck = p;
		else
			did = true;
	}
	return did;
}

/* Frames from the peer into our switch (or held per receiver). */
static bool trunk_rx_run(struct trunk *t)
{
	uint32_t n = 0;
	bool did = false;
	struct pkt *p;

	if (t->retry)
		did = trunk_retry(t);
	if (t->stuck)
		return did;
	while (n < TRUNK_RX_BATCH && (p = ring_pop(t->rx))) {
		n++;
		p->next = NULL;
		if (!trunk_rx_one(t, p)) {
			t->stuck = p;
			break;
		}
	}
	/* Room for the peer again: tell it, if it waits. */
	if (n && atomic_load(&t->rx->tx_wait) && ring_used(t->rx) <= TRUNK_RING_LOW &&
	    atomic_exchange(&t->rx->tx_wait, false)) {
		t->stats.kicks++;
		trunk_kick(t->peer);
	}
	return did || n;
}

/* Our way out has room: overflow onto the ring, senders woken. */
static bool trunk_tx_run(struct trunk *t)
{
	bool did = false;

	if (atomic_load(&t->tx->dst_ready) && atomic_exchange(&t->tx->dst_ready, false)) {
		sw_port_ready(t->sw, &t->port);
		did = true;
	}
	if (t->over.head) {
		did = trunk_flush_over(t);
		if (t->over.head)
			trunk_want_room(t);
	}
	if (t->busy_said && !trunk_tx_busy(t)) {
		t->busy_said = false;
		sw_port_ready(t->sw, &t->port);
		did = true;
	} else if (t->busy_said) {
		trunk_want_room(t);
	}
	return did;
}

static bool trunk_poll(void *arg)
{
	struct trunk *t = arg;
	bool did = trunk_rx_run(t);

	return trunk_tx_run(t) || did;
}

/* About to sleep: ask for a kick, then look once more (the producer may
 * have pushed before seeing the flag). */
static bool trunk_arm(void *arg)
{
	struct trunk *t = arg;

	if (t->retry || atomic_load(&t->tx->dst_ready))
		return true;
	if (t->busy_said && !trunk_tx_busy(t))
		return true;
	if (t->stuck)
		return false; /* a ready() from our switch wakes us */
	atomic_store(&t->rx->rx_sleep, true);
	if (ring_used(t->rx) && atomic_exchange(&t->rx->rx_sleep, false))
		return true;
	return false;
}

static const struct loop_poller_ops trunk_poller_ops = {
	.poll = trunk_poll,
	.arm = trunk_arm,
};

static void trunk_efd_cb(void *arg, uint32_t events)
{
	struct trunk *t = arg;
	uint64_t v;

	(void)events;
	if (read(t->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_WARN("trunk %s: eventfd: %m", t->port.name);
	/* the poller does the work on this pass */
}

static const struct port_ops trunk_port_ops = {
	.xmit = trunk_xmit,
	.busy = trunk_busy,
	.ready = trunk_ready,
	.busy_to = trunk_busy_to,
};

static void trunk_end_free(struct trunk *t)
{
	struct pkt *p;

	if (!t)
		return;
	if (t->port.sw)
		sw_detach(t->port.sw, &t->port);
	if (t->poller)
		loop_del_poller(t->loop, t->poller);
	if (t->efd >= 0) {
		loop_del_fd(t->loop, t->efd);
		close(t->efd);
	}
	pkt_queue_purge(&t->over);
	for (uint32_t i = 0; i < t->nhold; i++)
		pkt_queue_purge(&t->hold[i].q);
	pkt_free(t->stuck);
	if (t->rx) {
		while ((p = ring_pop(t->rx)))
			pkt_free(p);
		free(t->rx);
	}
	free(t);
}

static struct trunk *trunk_end_new(struct sw *s, struct loop *l, unsigned self, unsigned other)
{
	struct trunk *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->efd = -1;
	t->sw = s;
	t->loop = l;
	pkt_queue_init(&t->over);
	t->rx = aligned_alloc(64, sizeof(*t->rx));
	if (!t->rx)
		goto fail;
	atomic_init(&t->rx->tail, 0);
	atomic_init(&t->rx->head, 0);
	atomic_init(&t->rx->rx_sleep, false);
	atomic_init(&t->rx->tx_wait, false);
	for (uint32_t i = 0; i < TRUNK_BUSY_DESTS; i++)
		atomic_init(&t->rx->busy_mac[i], 0);
	atomic_init(&t->rx->nbusy, 0);
	atomic_init(&t->rx->dst_ready, false);
	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->efd < 0)
		goto fail;
	if (loop_add_fd(l, t->efd, EPOLLIN, trunk_efd_cb, t) < 0) {
		close(t->efd);
		t->efd = -1;
		goto fail;
	}
	t->poller = loop_add_poller(l, &trunk_poller_ops, t);
	if (!t->poller)
		goto fail;
	t->port.ops = &trunk_port_ops;
	t->port.priv = t;
	t->port.trunk = true;
	t->port.icrc_skip_ok = true;
	snprintf(t->port.name, sizeof(t->port.name), "trunk%u-%u", self, other);
	return t;
fail:
	trunk_end_free(t);
	return NULL;
}

int trunk_new(struct sw *a, struct loop *la, unsigned ia, struct sw *b, struct loop *lb,
	      unsigned ib, struct trunk **ea, struct trunk **eb)
{
	struct trunk *x = trunk_end_new(a, la, ia, ib);
	struct trunk *y = x ? trunk_end_new(b, lb, ib, ia) : NULL;
	int rc;

	if (!y) {
		rc = -(errno ? errno : ENOMEM);
		trunk_end_free(x);
		return rc;
	}
	x->peer = y;
	y->peer = x;
	x->tx = y->rx;
	y->tx = x->rx;
	rc = sw_attach(a, &x->port);
	if (!rc)
		rc = sw_attach(b, &y->port);
	if (rc) {
		trunk_end_free(x);
		trunk_end_free(y);
		return rc;
	}
	*ea = x;
	*eb = y;
	return 0;
}

void trunk_free(struct trunk *ea, struct trunk *eb)
{
	trunk_end_free(ea);
	trunk_end_free(eb);
}

struct port *trunk_port(struct trunk *t)
{
	return &t->port;
}

const struct trunk_stats *trunk_get_stats(const struct trunk *t)
{
	return &t->stats;
}

uint32_t trunk_tx_pending(const struct trunk *t)
{
	return ring_used(t->tx) + t->over.len;
}
