/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trunks: the link between the switches of two loop threads of one process
 * (docs/design.md, "Processes and threads"). A trunk is a pair of ports, one
 * attached to each switch; what one end's switch hands its port comes out of
 * the other end's port into the other switch. Each direction is a bounded
 * single-producer / single-consumer ring of frame pointers; the consumer's
 * loop is woken through an eventfd only when it asked to be (it found the
 * ring empty before sleeping).
 *
 * Frames crossing own their bytes: payload references are filled in (a
 * run's payload into a buffer of its own: it stays one frame); the ICRC
 * stays left out, the receiving engine is in this process. Flow control is the switch's busy / ready: a trunk whose
 * ring is past its high mark is busy, and its switch's senders wait until
 * the far end has drained it to its low mark (sw_port_ready, signalled across
 * through the eventfd); the far end itself enters frames with sw_input_try
 * and holds those a busy receiver on its side refuses (per receiver,
 * bounded: past the bound that destination is refused at the sending end,
 * busy_to), so nothing sent with flow control is dropped inside the
 * process. Split horizon: a frame that came in on a trunk
 * never leaves on another one (the switch checks port.trunk).
 */
#ifndef VRDMA_PORT_TRUNK_H
#define VRDMA_PORT_TRUNK_H

#include <stdint.h>

struct sw;
struct loop;
struct port;
struct trunk;

/* Frame pointers per direction (a power of two) and the marks of busy /
 * ready. Beyond the ring, frames that plain sw_input sends (floods, unknown
 * unicast, uplink input, frames the fault injector releases: no flow
 * control) wait in the end's overflow queue, at most TRUNK_OVER_MAX; beyond
 * that they are dropped and counted (tx_dropped), as a full device receive
 * queue does. Frames sw_input_try let through never reach the overflow
 * queue (the trunk is busy while it holds any). */
#define TRUNK_RING_SLOTS 1024u
#define TRUNK_RING_HIGH 768u
#define TRUNK_RING_LOW 256u
#define TRUNK_OVER_MAX TRUNK_RING_SLOTS
/* Frames one end takes from its ring per poll. */
#define TRUNK_RX_BATCH 256u
/* The far end holds frames for busy receivers on its side in a queue per
 * receiver (at most TRUNK_HOLD_DESTS receivers). Once a receiver's queue
 * reaches TRUNK_HOLD_MAX packets, the far end publishes the frame's
 * destination MAC as busy (at most TRUNK_BUSY_DESTS MACs): the sending
 * end's sw_input_try then refuses frames for it (busy_to), the ring keeps
 * draining for the other receivers. Once the queue is down to half, the MAC
 * is cleared and the sending end's senders are woken (sw_port_ready). Frames
 * already on the way are still held, up to TRUNK_HOLD_LIMIT per receiver;
 * beyond that (only plain sw_input frames get there) they are dropped and
 * counted (rx_dropped). With every hold queue or busy entry taken the far
 * end stops draining the ring (the whole trunk turns busy). */
#define TRUNK_HOLD_DESTS 16u
#define TRUNK_HOLD_MAX 512u
#define TRUNK_HOLD_LIMIT (TRUNK_HOLD_MAX + 2 * TRUNK_RING_SLOTS)
#define TRUNK_BUSY_DESTS 32u

struct trunk_stats {
	uint64_t tx_frames;   /* frames put on the ring */
	uint64_t tx_overflow; /* frames that waited in the overflow queue */
	uint64_t tx_busy;     /* busy() answers true */
	uint64_t tx_runs;     /* runs that crossed (payload filled) */
	uint64_t rx_frames;   /* frames taken from the ring into the switch */
	uint64_t rx_held;     /* frames held for a busy receiver, retried */
	uint64_t kicks;       /* eventfd writes to the far end */
	uint64_t tx_dropped;  /* plain frames dropped: overflow queue full */
	uint64_t tx_refused;  /* busy_to() answers true: far receiver busy */
	uint64_t rx_dropped;  /* frames dropped: receiver's hold queue full */
	uint64_t rx_busy_set; /* destination MACs published busy */
};

/* A trunk between switch a (on loop la, thread number ia) and switch b (on
 * loop lb, ib); the ports are named "trunkIA-IB" / "trunkIB-IA" and
 * attached. Call before either loop runs. Returns 0 or -errno; *ea and *eb
 * are the ends. */
int trunk_new(struct sw *a, struct loop *la, unsigned ia, struct sw *b, struct loop *lb,
	      unsigned ib, struct trunk **ea, struct trunk **eb);
/* Detach and free both ends: the loops must no longer run (frames still in
 * the rings are freed). */
void trunk_free(struct trunk *ea, struct trunk *eb);
struct port *trunk_port(struct trunk *t);
const struct trunk_stats *trunk_get_stats(const struct trunk *t);
/* Frames queued on this end's way out (ring + overflow), for tests. */
uint32_t trunk_tx_pending(const struct trunk *t);

#endif /* VRDMA_PORT_TRUNK_H */
