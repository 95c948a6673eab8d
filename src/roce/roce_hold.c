/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit holding per busy receiver (docs/design.md "Flow control inside
 * one daemon"): a frame the switch refuses (its receiver is busy) is kept,
 * in order, in a queue for its destination MAC, with every later frame to
 * that destination; QPs whose next frames go there are parked off the run
 * queue until the queue is gone, while QPs to other receivers keep running.
 * With more busy receivers than hold[] has entries, the rest wait in one
 * fallback queue (tp->txq) and, while it is not empty, no QP runs.
 */
#include "roce/roce_tp.h"

#include <string.h>

#include "common/util.h"

static struct roce_hold *hold_find(struct roce_tp *tp, const uint8_t *dmac)
{
	for (uint32_t i = 0; i < ROCE_TP_HOLD_DESTS; i++) {
		struct roce_hold *h = &tp->hold[i];

		if (h->used && !memcmp(h->dmac, dmac, 6))
			return h;
	}
	return NULL;
}

/* A queue for dmac, or NULL when every entry is in use (or the fallback
 * queue holds frames: those to dmac must keep their order). */
static struct roce_hold *hold_new(struct roce_tp *tp, const uint8_t *dmac)
{
	if (tp->txq.len || tp->nhold >= ROCE_TP_HOLD_DESTS)
		return NULL;
	for (uint32_t i = 0; i < ROCE_TP_HOLD_DESTS; i++) {
		struct roce_hold *h = &tp->hold[i];

		if (h->used)
			continue;
		memcpy(h->dmac, dmac, 6);
		h->used = true;
		pkt_queue_init(&h->q);
		h->park_head = h->park_tail = NULL;
		tp->nhold++;
		return h;
	}
	return NULL;
}

/* The receiver took everything held for it: its QPs run again, in the
 * order they were parked. */
static void hold_release(struct roce_tp *tp, struct roce_hold *h)
{
	struct roce_tq *tq;

	h->used = false;
	tp->nhold--;
	while ((tq = h->park_head)) {
		h->park_head = tq->hold_next;
		tq->hold_next = NULL;
		tq->hold_on = NULL;
		roce_tp_schedule(tq);
	}
	h->park_tail = NULL;
}

static void hold_push(struct roce_tp *tp, struct pkt_queue *q, struct pkt *p)
{
	if (unlikely(q->pkts >= ROCE_TP_TXQ_MAX)) {
		tp->stats.tx_queue_full += pkt_npkts(p);
		pkt_free(p);
		return;
	}
	pkt_queue_push(q, p);
}

/* A frame refused by a busy receiver goes back to the head of q. */
static void hold_unpop(struct pkt_queue *q, struct pkt *p)
{
	p->next = q->head;
	q->head = p;
	if (!q->tail)
		q->tail = p;
	q->len++;
	q->pkts += pkt_npkts(p);
}

/* Try to send p; refused: hold it for its receiver. */
static void hold_try(struct roce_tp *tp, struct pkt *p)
{
	struct roce_hold *h;

	if (tp->ops.xmit_try(tp->ctx, p) >= 0)
		return;
	tp->stats.tx_held += pkt_npkts(p);
	h = hold_new(tp, p->data);
	hold_push(tp, h ? &h->q : &tp->txq, p);
}

/* Send, or hold behind frames already held for the same receiver (order is
 * kept per sender and receiver). */
void roce_tp_output(struct roce_tp *tp, struct pkt *p)
{
	struct roce_hold *h = tp->nhold ? hold_find(tp, p->data) : NULL;

	if (h) {
		hold_push(tp, &h->q, p);
		return;
	}
	if (tp->txq.len) {
		hold_push(tp, &tp->txq, p);
		return;
	}
	if (!tp->ops.xmit_try) {
		tp->ops.xmit(tp->ctx, p);
		return;
	}
	hold_try(tp, p);
}

/* Send q's frames in order until one is refused. True when q is empty. */
static bool hold_send(struct roce_tp *tp, struct pkt_queue *q)
{
	struct pkt *p;

	while ((p = pkt_queue_pop(q))) {
		if (tp->ops.xmit_try(tp->ctx, p) < 0) {
			tp->stats.tx_held += pkt_npkts(p);
			hold_unpop(q, p);
			return false;
		}
	}
	return true;
}

bool roce_hold_flush(struct roce_tp *tp)
{
	struct pkt_queue rest;
	struct pkt *p;
	uint32_t start;

	if ((!tp->nhold && !tp->txq.len) || !tp->tx_ready)
		return !tp->txq.len;
	tp->tx_ready = false;
	/* Start with a different receiver each time (none is always first
	 * to fill the switch's room). */
	start = tp->hold_rr++ % ROCE_TP_HOLD_DESTS;
	for (uint32_t i = 0; i < ROCE_TP_HOLD_DESTS && tp->nhold; i++) {
		struct roce_hold *h = &tp->hold[(start + i) % ROCE_TP_HOLD_DESTS];

		if (h->used && hold_send(tp, &h->q))
			hold_release(tp, h);
	}
	/* The fallback queue, in order: what is refused again gets a queue
	 * of its own if one is free now. */
	rest = tp->txq;
	pkt_queue_init(&tp->txq);
	while ((p = pkt_queue_pop(&rest))) {
		struct roce_hold *h = tp->nhold ? hold_find(tp, p->data) : NULL;

		if (h)
			hold_push(tp, &h->q, p);
		else if (tp->txq.len)
			hold_push(tp, &tp->txq, p);
		else
			hold_try(tp, p);
	}
	return !tp->txq.len;
}

void roce_tp_tx_ready(struct roce_tp *tp)
{
	tp->tx_ready = true;
}

bool roce_hold_park(struct roce_tq *tq, const uint8_t *dmac)
{
	struct roce_tp *tp = tq->tp;
	struct roce_hold *h;

	if (likely(!tp->nhold))
		return false;
	h = hold_find(tp, dmac);
	if (!h)
		return false;
	if (!tq->hold_on) {
		tq->hold_on = h;
		tq->hold_next = NULL;
		if (h->park_tail)
			h->park_tail->hold_next = tq;
		else
			h->park_head = tq;
		h->park_tail = tq;
		tp->stats.tx_parked++;
	}
	return true;
}

bool roce_hold_park_path(struct roce_tq *tq, const struct roce_path *path)
{
	static const uint8_t zero[6];
	uint8_t mac[6];

	if (likely(!tq->tp->nhold))
		return false;
	/* A path without a MAC is resolved per frame (roce_neigh.c). */
	if (memcmp(path->dmac, zero, 6))
		return roce_hold_park(tq, path->dmac);
	return roce_neigh_lookup(tq->tp->neigh, path->sgid, path->dgid, mac) &&
	       roce_hold_park(tq, mac);
}

void roce_hold_forget(struct roce_tq *tq)
{
	struct roce_hold *h = tq->hold_on;
	struct roce_tq **pp, *prev = NULL;

	if (!h)
		return;
	for (pp = &h->park_head; *pp; prev = *pp, pp = &(*pp)->hold_next) {
		if (*pp == tq) {
			*pp = tq->hold_next;
			if (h->park_tail == tq)
				h->park_tail = prev;
			break;
		}
	}
	tq->hold_on = NULL;
	tq->hold_next = NULL;
}

void roce_hold_purge(struct roce_tp *tp, bool unpark)
{
	for (uint32_t i = 0; i < ROCE_TP_HOLD_DESTS; i++) {
		struct roce_hold *h = &tp->hold[i];

		if (!h->used)
			continue;
		pkt_queue_purge(&h->q);
		if (unpark) {
			hold_release(tp, h);
		} else {
			/* (the transport goes away: its QPs may be gone) */
			h->used = false;
			h->park_head = h->park_tail = NULL;
			tp->nhold--;
		}
	}
	pkt_queue_purge(&tp->txq);
}
