/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet frame buffers. One frame per struct pkt, in one contiguous buffer
 * with headroom so headers can be prepended. Allocation is from a per-thread
 * free list (the backend's data path runs on one thread per loop).
 */
#ifndef VRDMA_PORT_PKT_H
#define VRDMA_PORT_PKT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#define PKT_HEADROOM 128
/* Largest Ethernet frame we carry: 9000-byte MTU + Ethernet/VLAN headers. */
#define PKT_MAX_FRAME 9216
#define PKT_BUF_SIZE (PKT_HEADROOM + PKT_MAX_FRAME)

/* Most pieces of sender memory one frame's payload may reference. */
#define PKT_REF_IOV 8

/* A payload left in the sender's registered memory (PKT_F_PAYLOAD_REF; see
 * docs/design.md, "One copy between local devices"): the frame's bytes from
 * data + off for len bytes are the concatenation of iov[0..niov). A run
 * (PKT_F_RUN) keeps its longer list in its description (iov points there)
 * and, once filled (pkt_ref_fill), its payload in a buffer of its own. */
struct pkt_ref_owner;

struct pkt_ref {
	struct pkt *prev, *next; /* the thread's frames with a reference */
	uint32_t off, len;
	uint32_t niov;
	struct iovec *iov;       /* iov_in, or a run's list */
	struct iovec iov_in[PKT_REF_IOV];
	void *owned;             /* a filled run's payload (freed with the frame) */
	/* told when the reference ends (NULL: nobody): pkt_ref_set_owner */
	const struct pkt_ref_owner *owner;
	void *owner_ctx;
	uint32_t owner_tag;
};

struct pkt {
	struct pkt *next;   /* for pkt_queue */
	uint8_t *data;      /* start of the Ethernet header */
	uint32_t len;       /* frame length (no FCS) */
	uint16_t in_port;   /* switch port the frame came from */
	uint16_t flags;
	uint16_t npkts;     /* PKT_F_RUN: packets the frame stands for */
	uint16_t nlost;     /* PKT_F_RUN: ... of them lost on the way (never
			     * delivered: a fault injector's drops) */
	uint32_t run_len;   /* PKT_F_RUN: frame bytes of those delivered */
	struct pkt_ref ref; /* valid with PKT_F_PAYLOAD_REF */
	uint8_t buf[PKT_BUF_SIZE];
};

/* pkt->flags */
#define PKT_F_LOCAL_ICRC_SKIPPED 0x1 /* see docs/design.md: ICRC between local devices */
#define PKT_F_PAYLOAD_REF        0x2 /* payload not in buf yet: pkt->ref */
#define PKT_F_RUN                0x4 /* a run of npkts packets of one QP
				      * (docs/design.md "Runs between local
				      * devices"): data holds the first one's
				      * frame, the transport's description of
				      * the rest is in the last PKT_RUN_META
				      * bytes of buf */

/* Bytes at the end of buf a run's description may use (roce_run.c). */
#define PKT_RUN_META 2048

/* Packets / frame bytes a frame stands for (a run: all of them that are
 * still on their way). */
static inline uint32_t pkt_npkts(const struct pkt *p)
{
	return (p->flags & PKT_F_RUN) ? (uint32_t)p->npkts - p->nlost : 1;
}

static inline uint32_t pkt_wire_len(const struct pkt *p)
{
	return (p->flags & PKT_F_RUN) ? p->run_len : p->len;
}

/* Payload references (src/port/pkt_ref.c). A frame with one never leaves the
 * process: whatever shows a frame outside (capture, uplink, a driver's
 * network stack, the fault injector's corruption, a clone's other readers)
 * first calls pkt_ref_fill(). Frames with a reference are made and freed on
 * one thread (the transport's loop). */

/* Attach the payload [data + off, + len) as the pieces iov[0..n) (n <=
 * PKT_REF_IOV, their lengths summing to len). */
void pkt_ref_attach(struct pkt *p, uint32_t off, const struct iovec *iov, uint32_t n,
		    uint32_t len);
/* A run's payload (PKT_F_RUN): the n pieces iov (kept by the caller in the
 * frame's run description), len bytes in all. */
void pkt_ref_attach_run(struct pkt *p, struct iovec *iov, uint32_t n, uint32_t len);
/* Whoever must know when the memory a reference points into is no longer
 * read (a UC send completes only then: docs/design.md "One copy between
 * local devices"). hold: one more frame refers to (ctx, tag); release: one
 * frame no longer does (filled, freed, or given another reference). Both
 * run on the frame's thread; release may not allocate or free frames. */
struct pkt_ref_owner {
	void (*hold)(void *ctx, uint32_t tag);
	void (*release)(void *ctx, uint32_t tag);
};

/* p's reference (it has one) is (ctx, tag)'s until it ends: calls hold. */
void pkt_ref_set_owner(struct pkt *p, const struct pkt_ref_owner *o, void *ctx, uint32_t tag);
/* q, made from p's reference (a clone, part of a run), has p's owner too
 * (nothing if p has none or q has no reference). */
void pkt_ref_share_owner(struct pkt *q, const struct pkt *p);

/* Copy a referenced payload into the frame and drop the reference (no-op
 * without one). A run's payload, which no frame can hold, is copied into a
 * buffer of its own instead (NULL on allocation failure: the run is then
 * dropped by whoever looks at it, counted as a loss). */
void pkt_ref_fill(struct pkt *p);
/* Drop the reference of a frame being freed (pkt_free does this). */
void pkt_ref_drop(struct pkt *p);
/* pkt_ref_fill() every frame of this thread that has a reference: called
 * before memory they may point into goes away (a region's munmap). */
void pkt_ref_fill_all(void);

struct pkt_ref_stats {
	uint64_t attached; /* frames given a payload reference */
	uint64_t filled;   /* references copied into their frame (fall-backs) */
	uint64_t flushes;  /* pkt_ref_fill_all() calls that filled something */
	uint64_t live;     /* frames with a reference now */
};
/* This thread's counters. */
void pkt_ref_get_stats(struct pkt_ref_stats *st);

/* A new frame with data = buf + PKT_HEADROOM and len 0, or NULL (out of
 * memory, counted). */
struct pkt *pkt_alloc(void);
void pkt_free(struct pkt *p);
/* A copy of p (data and len), or NULL; never of a run (it is split into its
 * frames before anything copies it). */
struct pkt *pkt_clone(const struct pkt *p);
/* Frames currently allocated (for leak tests). */
uint64_t pkt_outstanding(void);

/* --- Additions (frames and ports helper) --- */

/* Frames kept on each thread's free list at most; frees beyond this go back
 * to malloc so memory returns after a burst (~9.3 KiB per frame). */
#define PKT_CACHE_MAX 256

struct pkt_stats {
	uint64_t allocs;       /* pkt_alloc/pkt_clone successes */
	uint64_t frees;        /* pkt_free calls (non-NULL) */
	uint64_t alloc_failed; /* out of memory */
	uint64_t cached;       /* frames on free lists now */
};

/* Fill *st with the sum over every thread. Takes a mutex: not for the data
 * path. */
void pkt_get_stats(struct pkt_stats *st);
/* Give the calling thread's cached frames back to malloc. */
void pkt_cache_trim(void);

/* FIFO of frames. */
struct pkt_queue {
	struct pkt *head, *tail;
	uint32_t len;
	uint32_t pkts;      /* packets (a run counts its npkts) */
};

static inline void pkt_queue_init(struct pkt_queue *q)
{
	q->head = q->tail = 0;
	q->len = 0;
	q->pkts = 0;
}

static inline void pkt_queue_push(struct pkt_queue *q, struct pkt *p)
{
	p->next = 0;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->len++;
	q->pkts += pkt_npkts(p);
}

static inline struct pkt *pkt_queue_pop(struct pkt_queue *q)
{
	struct pkt *p = q->head;

	if (p) {
		q->head = p->next;
		if (!q->head)
			q->tail = 0;
		q->len--;
		q->pkts -= pkt_npkts(p);
		p->next = 0;
	}
	return p;
}

/* Free every frame in q. */
void pkt_queue_purge(struct pkt_queue *q);

/* Set CE (congestion experienced) in the ECN field of an ECN-capable
 * (ECT(0) / ECT(1)) IPv4 or IPv6 frame, one optional 802.1Q tag; the IPv4
 * header checksum is updated (RFC 1624). Returns whether it was marked
 * (Not-ECT, CE already, non-IP and short frames are left alone). */
bool pkt_set_ce(struct pkt *pkt);

#endif /* VRDMA_PORT_PKT_H */
