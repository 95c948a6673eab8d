/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded, reproducible fault injection for frames: drop, corrupt, duplicate
 * and reorder. The kernel's netem is not available everywhere, so loss and
 * disorder are injected here, inside the switch (see port.h: capture, then
 * faults, then forwarding).
 *
 * Configuration string (command line, untrusted):
 *
 *   drop=P,dup=P,reorder=P,corrupt=P,seed=N[,hold=US][,port=NAME][,ecn=P]
 *
 * Every key is optional and may appear once, in any order; at least one key
 * must be given. P is a probability in percent, 0 to 100, with up to six
 * decimals ("5", "0.5", "100", "0.000001"). N is a 64-bit seed, decimal or
 * 0x-hex (default 1). US is how long a frame held for reordering may wait, in
 * microseconds, 1 to 10000000 (default 1000). NAME restricts the faults to
 * frames entering from the switch port of that name (1 to 31 characters, no
 * ',', '=' or whitespace).
 *
 * Decisions. Frames handed to fault_input() are numbered in order. Each of
 * the four faults below has its own xoshiro256** generator (seeded one after
 * the other from N with splitmix64) and happens on the frames it picks: the
 * number of frames between two of its events is geometric with its
 * probability P, one draw per event (floor(ln U / ln(1 - P)), U uniform in
 * (0, 1]), so every frame gets each fault with probability P, independently,
 * and a run of frames without any event costs nothing to decide. In this
 * fixed order for one frame:
 *   1. drop     - the frame is freed;
 *   2. corrupt  - one byte at a position drawn uniformly from [14, len) (any
 *                 header or payload byte after the Ethernet header; one more
 *                 draw of corrupt's generator) is XORed with a value in
 *                 1..255, so it always changes; frames of exactly 14 bytes
 *                 are not corrupted;
 *   3. dup      - a copy of the (possibly corrupted) frame is emitted right
 *                 after it;
 *   4. reorder  - if no frame of the same stream is held, the frame is held
 *                 (its duplicate, if any, is emitted now) and released right
 *                 after the next frame of that stream is emitted, or when
 *                 the hold timer fires (hold=US after it was held), or by
 *                 fault_flush(). If a frame of that stream is already held
 *                 the reorder decision is ignored (not counted), so at most
 *                 one frame per stream is ever held.
 * Frames are numbered from 0 in the order they are decided; each fault's
 * first gap is drawn when the injector is made, in the order above, and the
 * next one right after each event (after corrupt's position draw); U is
 * ((x >> 11) + 1) / 2^53 for a 64-bit draw x. A dropped frame's other
 * events are spent with it. With ecn=P (P > 0) a fifth generator draws once
 * per frame, marked if the draw x has (x * 10^8) >> 64 < P in units of
 * 10^-6 percent: an IPv4 / IPv6 frame
 * whose ECN field is ECT(0) or ECT(1) gets CE (congestion experienced),
 * the IPv4 header checksum updated (the RoCE ICRC does not cover it). Other
 * frames are left alone (not counted).
 * The same seed, configuration and input sequence therefore produce the same
 * decisions and counts, and each fault's probability does not shift the
 * events of the others.
 *
 * A stream is whatever the caller says (the switch uses the input port id):
 * reordering swaps frames within one stream only.
 */
#ifndef VRDMA_PORT_FAULT_H
#define VRDMA_PORT_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pkt;
struct loop;

/* Probabilities are stored in units of 1e-6 percent: FAULT_PROB_ONE = 100%. */
#define FAULT_PROB_ONE 100000000u
#define FAULT_HOLD_US_DEFAULT 1000u
#define FAULT_HOLD_US_MAX 10000000u
#define FAULT_PORT_NAME_MAX 32 /* including the NUL, like port->name */

struct fault_cfg {
	uint32_t drop, dup, reorder, corrupt; /* 0 .. FAULT_PROB_ONE */
	uint32_t ecn;                         /* CE marks, 0 .. FAULT_PROB_ONE */
	uint64_t seed;
	uint32_t hold_us;                     /* reorder hold limit */
	char port[FAULT_PORT_NAME_MAX];       /* "" = every port */
};

/* Fill *cfg with the defaults: no faults, seed 1, hold 1000 us, all ports. */
void fault_cfg_init(struct fault_cfg *cfg);

/* Parse the configuration string s (NUL-terminated, untrusted) into *cfg.
 * Returns 0, or -EINVAL (then *cfg is unspecified) for an unknown or repeated
 * key, a value out of range or malformed, or an empty string. */
int fault_cfg_parse(struct fault_cfg *cfg, const char *s);

/* Write cfg in the syntax fault_cfg_parse() accepts (every key, canonical
 * form, so parse(format(c)) == c). Returns the length that the full string
 * needs (like snprintf), or -EINVAL for an invalid cfg. */
int fault_cfg_format(const struct fault_cfg *cfg, char *buf, size_t size);

/* True if cfg injects anything at all. */
bool fault_cfg_active(const struct fault_cfg *cfg);

/* Receives every frame the injector lets through (ownership passes). */
typedef void (*fault_emit_fn)(void *arg, struct pkt *pkt);

struct fault_stats {
	uint64_t frames;     /* frames decided: given to fault_input, passed
			      * in runs, dropped by fault_drop_next */
	uint64_t dropped, duplicated, reordered, corrupted;
	uint64_t ce_marked;  /* ECN-capable frames marked CE */
	uint64_t run_passed; /* of frames, packets of runs left alone unbuilt
			      * (fault_pass_run) */
};

struct fault;

/* A new injector that emits through emit(arg, pkt). loop may be NULL: then
 * held frames are released only by the next frame of their stream or by
 * fault_flush(). Returns NULL with errno set (ENOMEM, EINVAL). */
struct fault *fault_new(struct loop *loop, const struct fault_cfg *cfg,
			fault_emit_fn emit, void *arg);

/* Called on a frame just before the injector corrupts it, so its integrity
 * check covers the original bytes (the switch fills in an ICRC it left out
 * between local devices). Nonzero: the frame is dropped instead. */
typedef int (*fault_seal_fn)(struct pkt *pkt);
void fault_set_seal(struct fault *f, fault_seal_fn seal);

/* Free f, its timer and any held frames (held frames are freed, not
 * emitted: call fault_flush() first to deliver them). */
void fault_free(struct fault *f);

/* Pass one frame of the given stream through the injector. Takes ownership
 * of pkt; emits 0 to 3 frames synchronously (this frame and/or its duplicate,
 * then a previously held frame of the stream). pkt->len must be >= 14. */
void fault_input(struct fault *f, uint16_t stream, struct pkt *pkt);

/* n frames of one stream that are not built yet (a run of the transport,
 * docs/design.md "Runs between local devices"): returns how many of the
 * first ones get no fault (and have no held frame of the stream to release
 * behind them); those count as frames that passed. Decisions belong to the
 * injector's sequence of frames, not to a stream: the next fault_input() or
 * fault_drop_next() on this injector must be the next of these frames, so
 * that every decision is the one the n frames would have got. Returns 0
 * when it cannot tell (ECN marking on, a held frame). */
uint32_t fault_pass_run(struct fault *f, uint16_t stream, uint32_t n);
/* True if the next frame is to be dropped: it is counted as fault_input()
 * would count it, and need not be built. */
bool fault_drop_next(struct fault *f);

/* Emit every held frame now, in the order they were held. */
void fault_flush(struct fault *f);

/* Free the held frame of one stream, if any (its source went away). */
void fault_discard_stream(struct fault *f, uint16_t stream);

/* Frames currently held. */
unsigned fault_held(const struct fault *f);

/* The injector's counters. */
const struct fault_stats *fault_get_stats(const struct fault *f);

/* The configuration f was created with. */
const struct fault_cfg *fault_get_cfg(const struct fault *f);

#endif /* VRDMA_PORT_FAULT_H */
