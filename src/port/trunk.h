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
 * bounded; beyond the bound it stops draining), so nothing is dropped
 * inside the process. Split horizon: a frame that came in on a trunk
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
 * ready. Beyond the ring, frames that plain sw_input sends (floods, frames
 * the fault injector releases) wait in the end's overflow queue: never
 * dropped. */
#define TRUNK_RING_SLOTS 1024u
#define TRUNK_RING_HIGH 768u
#define TRUNK_RING_LOW 256u
/* Frames one end takes from its ring per poll. */
#define TRUNK_RX_BATCH 256u
/* The far end holds frames for busy receivers on its side in a queue per
 * receiver (at most TRUNK_HOLD_DESTS receivers, TRUNK_HOLD_MAX packets), so
 * one busy tenant does not stop the frames to the others; beyond that it
 * stops taking from the ring, which then fills and makes the trunk busy. */
#define TRUNK_HOLD_DESTS 16u
#define TRUNK_HOLD_MAX 512u

struct trunk_stats {
	uint64_t tx_frames;   /* frames put on the ring */
	uint64_t tx_overflow; /* frames that waited in the overflow queue */
	uint64_t tx_busy;     /* busy() answers true */
	uint64_t tx_runs;     /* runs that crossed (payload filled) */
	uint64_t rx_frames;   /* frames taken from the ring into the switch */
	uint64_t rx_held;     /* frames held for a busy receiver, retried */
	uint64_t kicks;       /* eventfd writes to the far end */
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
