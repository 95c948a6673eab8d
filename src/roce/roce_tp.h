/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RoCE v2 transport engine: the data path of one virtio-net RoCE device.
 *
 * Work requests posted on send/receive virtqueues become RoCE v2 packets that
 * leave through the device's switch port; packets arriving for the device run
 * the responder (requests) or the completer (responses); completions are
 * written to completion virtqueues. UD, UC and RC (SEND, SEND_WITH_IMM,
 * RDMA WRITE[_WITH_IMM], RDMA READ), with loss recovery for RC; with
 * ROCE_EXT also atomics, SEND_WITH_INV, and the local operations REG_MR,
 * LOCAL_INV and BIND_MW (docs/spec.md "Extensions beyond the RFC").
 *
 * Files (split by role like Linux rxe, code written from the IBTA rules):
 *   roce_tp.c     per-device context, control-path hooks, rings, scheduling
 *                 (run queue, per-QP budget), poll/arm/disarm, timers, stats
 *   roce_sq.c     send queue: WQE slots, fetch + validate sq_req, flush
 *   roce_rq.c     receive queue: fetch + validate rq_req, flush
 *   roce_req.c    requester: WQE -> packets (segmentation, PSNs, window)
 *   roce_comp.c   completer: ACK/NAK/READ responses, retransmit + RNR timers
 *   roce_resp.c   responder: requests -> memory/receive WQEs, ACK/NAK, READ
 *                 responses from the responder resources
 *   roce_recv.c   frames from the switch: classify, queue, parse, demux
 *   roce_cq.c     completion writer (backlog, overflow, notification)
 *   roce_mem.c    copies between packets and SGE lists / remote-key ranges
 *   roce_cc.c     congestion control: CNPs for CE-marked packets, the
 *                 DCQCN reaction point and its pacer
 *   roce_neigh.c  destination MAC resolution (ARP, IPv6 ND) and answering
 *                 ARP / NS for the device's own addresses
 *   roce_run.c    runs: one frame for several packets of a message, or for
 *                 consecutive small messages, between local devices, split
 *                 into real frames where one must exist
 *
 * Everything runs on the device's loop thread: no locks. Nothing is
 * allocated per packet (frames come from pkt_alloc's free list; WQE slots
 * are allocated when a send ring starts, sized from the ring).
 *
 * The engine does not know vhost-user: it reaches rings, the wire and
 * interrupts through struct roce_tp_ops, so tests drive it with fake rings.
 * Contract with drivers: docs/spec.md "RDMA queues"; design: docs/design.md
 * "RDMA data path".
 */
#ifndef VRDMA_ROCE_ROCE_TP_H
#define VRDMA_ROCE_ROCE_TP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/loop.h"
#include "backend/rres_dev.h"
#include "port/pkt.h"
#include "roce/roce_pkt.h"
#include "roce/roce_stats.h"
#include "virtio/vq_dev.h"

struct vhost_vring;
struct roce_tp;

/* ------------------------------------------------------------------------ */
/* Public interface (glue: src/backend/netdev_roce.c, tests, fuzzers)         */
/* ------------------------------------------------------------------------ */

/* What the engine needs from its environment. */
struct roce_tp_ops {
	/* The ring with this index if it is started, else NULL. */
	struct vhost_vring *(*ring)(void *ctx, uint32_t idx);
	/* Send a frame into the network (takes ownership). Must not call back
	 * into the engine synchronously (the switch queues on device ports). */
	void (*xmit)(void *ctx, struct pkt *p);
	/* Used entries of r were published: interrupt the driver, always
	 * (force, e.g. CQ armed) or if it asked (event index / flags). */
	void (*notify)(void *ctx, struct vhost_vring *r, bool force);
	/* The driver broke ring r (bad descriptors): report it (optional). */
	void (*ring_error)(void *ctx, struct vhost_vring *r);
	/* Flow control inside the process (optional, port.h sw_input_try):
	 * xmit_try may refuse a frame with -EAGAIN (the engine keeps it and
	 * holds its transmit until roce_tp_tx_ready); rx_room tells the switch
	 * that our receive queue, busy before, has room again. */
	int (*xmit_try)(void *ctx, struct pkt *p);
	void (*rx_room)(void *ctx);
	/* An RC/UC QP in RTR received its first request packet (optional):
	 * the connection manager treats it as the RTU (IB_EVENT_COMM_EST). */
	void (*comm_est)(void *ctx, uint32_t qpn);
};

/* The notify op of a transport whose rings are a vhost-user device's:
 * call the driver always (force) or if it asked. */
void roce_tp_notify_vring(void *ctx, struct vhost_vring *r, bool force);

/* Tunables (compile-time). */
#define ROCE_TP_RXQ_MAX        2048   /* frames queued in the device */
#define ROCE_TP_RXQ_HIGH       1536   /* busy to senders of this process */
#define ROCE_TP_RXQ_LOW        512    /* ... until it is back down to this */
#define ROCE_TP_TXQ_MAX        8192   /* frames held for a busy receiver */
#define ROCE_TP_HOLD_DESTS     16     /* busy receivers held for separately */
#define ROCE_TP_RX_BATCH       1024   /* frames handled per poll */
#define ROCE_TP_QP_BUDGET      32     /* packets per QP per turn */
#define ROCE_TP_RUN_BUDGET     256    /* packets per poll, all QPs (at most
				       * what a receiver takes per poll) */
#define ROCE_TP_WINDOW         256    /* RC: unacknowledged PSNs in flight */
#define ROCE_TP_ACKREQ_EVERY   32     /* RC: AckReq at least every N packets */
#define ROCE_TP_CWND_MIN       128    /* RC: smallest send window after losses */
#define ROCE_TP_BURST_MIN      8      /* RC: smallest READ responder turn after losses */
#define ROCE_TP_PROBE_NS       2000000ull /* RC: first loss probe, at most */
#define ROCE_TP_PROBE_MIN_NS   250000ull  /* ... and at least (4 x smoothed RTT) */
#define ROCE_TP_PROBE_MIN_LOCAL_NS 25000ull /* ... toward a near device
					   * (roce_recover_probe_min) */
#define ROCE_TP_PROBES         3      /* RC: probes (2, 4, 8 ms) before the timer */
#define ROCE_TP_ALIVE_TIMEOUTS 8      /* RC: READ responses without progress hold
					* the timer back for at most this many x
					* (retry_cnt + 1) timeouts */
#define ROCE_TP_RENAK_EVERY    64     /* RC: repeat a sequence NAK every N
				       * out-of-sequence packets */
#define ROCE_TP_RD_WINDOW      16384  /* RC: READ responses beyond a gap kept
				       * (placed), PSNs from una (a power of
				       * two dividing 2^24) */
#define ROCE_TP_RD_QUEUED      256    /* RC: responses before the answer to a
				       * READ re-request that show a queueing
				       * responder (rxe) */
#define ROCE_TP_KEEP_FRAMES    64     /* RC responder: out-of-sequence SEND /
				       * WRITE frames kept per QP (roce_keep.c) */
#define ROCE_TP_KEEP_WINDOW    1024   /* ... ending within this many PSNs of epsn */
#define ROCE_TP_KEEP_TP_MAX    1024   /* ... frames kept by one transport in all */
#define ROCE_TP_HOLD_PROBE_MIN_NS 50000ull /* RC: packets sent again after a NAK
				       * go once more if unanswered this long
				       * (at least; 4 x smoothed RTT) */
#define ROCE_TP_KEEP_RECHECK   64     /* RC requester: losses gone back for
				       * before asking again whether the peer
				       * keeps */
#define ROCE_TP_KEEP_MISSES    2      /* RC requester: answers to a held resend
				       * that show a responder keeping nothing,
				       * before it stops holding */
#define ROCE_TP_MAX_MSG_PKTS   (1u << 22) /* packets per message (PSN space) */
#define ROCE_TP_POLL_NS        200000ull  /* wake-up to poll kick-less rings, */
#define ROCE_TP_POLL_MAX_NS    4000000ull /* ... doubled while they are idle */
#define ROCE_TP_POLL_SCAN      64     /* kick-less QPs looked at per poll */
#define ROCE_TP_QUIET_IDLE     4      /* polls a quiet send ring may stay idle
				       * before its kicks are turned back on */
#define ROCE_TP_NEIGH_SIZE     64     /* neighbour cache entries */
#define ROCE_TP_NEIGH_QLEN     64     /* non-requester frames waiting for
				       * one resolution (the requester waits
				       * before building frames) */
#define ROCE_TP_NEIGH_TRIES    3      /* ARP/NS requests before giving up */
#define ROCE_TP_NEIGH_RETRY_NS 200000000ull  /* between requests */
#define ROCE_TP_NEIGH_TTL_NS   60000000000ull /* a resolved entry lives */
#define ROCE_TP_NEIGH_BACKOFF_NS     1000000000ull  /* after a failed round, */
#define ROCE_TP_NEIGH_BACKOFF_MAX_NS 30000000000ull /* doubling up to this */
#define ROCE_TP_TTL_DEFAULT    64     /* IPv4 TTL / IPv6 hop limit (the
				       * route's, as the kernel uses) */

/* Congestion control parameters (roce_cc.c; defaults by
 * roce_cc_params_default, as common RoCE NICs ship; docs/design.md). */
struct roce_cc_params {
	bool enabled;
	uint64_t cnp_interval_ns;  /* at most one CNP per QP per interval */
	uint64_t line_rate_bps;    /* rate before the first CNP */
	uint64_t min_rate_bps;
	unsigned g_shift;          /* alpha gain g = 2^-g_shift */
	uint64_t alpha_ns;         /* alpha decay period without CNP */
	uint64_t rai_timer_ns;     /* rate increase timer */
	uint64_t rai_bytes;        /* rate increase byte counter */
	uint32_t f;                /* fast recovery steps */
	uint64_t ai_bps, hai_bps;  /* additive / hyper increase */
	uint32_t burst;            /* pacer bucket, bytes */
	uint32_t mark_qlen;        /* receive queue: CE-mark ECT frames queued
				    * behind this many (0: never) */
};
#define ROCE_CC_CNP_DSCP 48        /* CNPs are sent with this DSCP, Not-ECT */

/* The transport's counters (roce_stats.h has the lists and their meaning). */
struct roce_tp_stats {
	ROCE_TP_STATS_RX_FRAMES(ROCE_STATS_FIELD)
	uint64_t rx_parse[ROCE_RX_E_NUM];      /* dropped by roce_pkt_parse reason */
	ROCE_TP_STATS_RX(ROCE_STATS_FIELD)
	ROCE_TP_STATS_TX(ROCE_STATS_FIELD)
	ROCE_TP_STATS_WR_POPPED(ROCE_STATS_FIELD)
	uint64_t wc[16];                       /* completions by status */
	ROCE_TP_STATS_WR(ROCE_STATS_FIELD)
	uint64_t wc_ext[2];                    /* completions by status 16, 17+ */
	ROCE_TP_STATS_EXT_WR(ROCE_STATS_FIELD)
	ROCE_TP_STATS_SCHED(ROCE_STATS_FIELD)
};

/* A transport for rd, sending through ops. loop may be NULL (no timers: no
 * retransmission, no RNR waits; fuzzing). Installs rd->hooks. Returns NULL
 * on allocation failure. */
struct roce_tp *roce_tp_new(struct rres_dev *rd, struct loop *loop,
			    const struct roce_tp_ops *ops, void *ctx);
/* Free the transport (QPs and CQs must already be destroyed, e.g. by
 * rres_dev_fini, or they are forgotten). Clears rd->hooks. */
void roce_tp_free(struct roce_tp *tp);
/* Device reset: rings are stopped and objects destroyed by the caller;
 * drops queued frames and the neighbour cache. */
void roce_tp_reset(struct roce_tp *tp);

/* A frame arrives from the switch (called inside sw_input: only queues).
 * Returns true if the engine took it (RoCE v2 for one of our GIDs and our
 * MAC); ARP / NS / NA frames for us are copied (queued) but returns false,
 * so they also reach the virtio-net receive queue. */
bool roce_tp_input(struct roce_tp *tp, struct pkt *p);
/* Flow control (see roce_tp_ops.xmit_try): true while the receive queue is
 * past its high mark; the transmit held for a busy receiver may resume. */
bool roce_tp_rx_busy(struct roce_tp *tp);
void roce_tp_tx_ready(struct roce_tp *tp);

/* Poller: process queued frames, scheduled QPs, kick-less rings, CQ
 * backlogs. Returns true if anything was done. */
bool roce_tp_poll(struct roce_tp *tp);
/* Before sleeping: re-enable notifications; returns true if work is
 * pending. */
bool roce_tp_arm(struct roce_tp *tp);
/* After waking (notifications may be suppressed again). */
void roce_tp_disarm(struct roce_tp *tp);

/* Ring events from the vhost server (any ring index of the device). */
void roce_tp_ring_started(struct roce_tp *tp, struct vhost_vring *r);
void roce_tp_ring_stopped(struct roce_tp *tp, struct vhost_vring *r);
void roce_tp_ring_kick(struct roce_tp *tp, struct vhost_vring *r);

/* IPv4 TTL / IPv6 hop limit of the frames (1..255; default
 * ROCE_TP_TTL_DEFAULT). The address vector's hop_limit is not used, as in
 * the kernel (it takes the route's). */
void roce_tp_set_ttl(struct roce_tp *tp, uint8_t ttl);

const struct roce_tp_stats *roce_tp_get_stats(const struct roce_tp *tp);
/* Print the non-zero counters. */
void roce_tp_dump_stats(const struct roce_tp *tp, FILE *f);
/* The counter lines alone (totals of closed contexts), and their sum. */
void roce_tp_stats_dump(const struct roce_tp_stats *s, FILE *f);
void roce_tp_stats_add(struct roce_tp_stats *sum, const struct roce_tp_stats *s);

/* ------------------------------------------------------------------------ */
/* Internals shared by src/roce/roce_*.c                                     */
/* ------------------------------------------------------------------------ */

/* PSN arithmetic (24 bits, modular): sign of a - b. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t roce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & ROCE_PSN_MASK;
}

/* An SGE in host order. */
struct roce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum roce_wqe_state {
	ROCE_WQE_POSTED = 0, /* not (entirely) sent */
	ROCE_WQE_SENT,       /* RC: every packet / the READ request sent */
	ROCE_WQE_DONE,       /* may complete with status */
};

/* A send work request copied from the send ring. Slots have a fixed stride:
 * this header, then num_sge struct roce_sge or the inline bytes. */
struct roce_swqe {
	uint64_t wr_id;
	uint16_t head;            /* descriptor to give back */
	uint8_t opcode;           /* enum virtio_ib_wr_opcode */
	uint8_t flags;            /* VIRTIO_IB_SEND_* */
	uint8_t state;            /* enum roce_wqe_state */
	uint8_t status;           /* completion status once DONE */
	bool inl;                 /* data is inline */
	bool bad;                 /* failed (status says why): stops the SQ */
	bool started;             /* first_psn/npkts assigned (sent once) */
	uint32_t imm;             /* network order */
	uint32_t length;          /* message bytes */
	uint32_t num_sge;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t dqpn, qkey;      /* UD */
	struct rres_av av;        /* UD: the AH's address vector at post time */
	uint32_t first_psn;       /* PSN of packet 0 (READ: of the request) */
	uint32_t npkts;           /* packets (READ: response packets) */
	uint32_t next;            /* next packet index to send */
	uint32_t rd_rcvd;         /* READ: response packets received (its
				   * contiguous prefix); atomic: 1 once its
				   * ATOMIC ACKNOWLEDGE arrived */
	/* READ recovery (roce_comp.c): response indexes */
	uint32_t rd_hi;           /* 1 + the highest response received */
	uint32_t rd_req_lo, rd_req_end; /* range its latest request asked for */
	uint32_t rd_req_hi;       /* 1 + the highest response in it since */
	uint32_t rd_dup_end;      /* furthest end of its earlier requests that
				   * asked again (a responder may drop the
				   * rest of such an answer for a newer one) */
	uint32_t rd_seq;          /* tq->rd_seq of its latest request */
	uint32_t rd_seq_mark;     /* any WQE: tq->rd_seq when it started */
	uint32_t refs;            /* UC: frames still referencing its payload
				   * (it completes when the last one ends) */
	/* ---- extensions (docs/spec.md "Extensions beyond the RFC") ---- */
	bool sge_unchecked;       /* SGE keys checked when the requester starts
				   * the WR (an earlier REG_MR may create them) */
	uint32_t inv_rkey;        /* LOCAL_INV, SEND_WITH_INV: the key */
	bool read_inv;            /* RDMA_READ_WITH_INV (virtio-rdma device):
				   * invalidate inv_rkey once the data is in */
	bool rekey;               /* REG_MR of the virtio-rdma device: MR
				   * rekey_mrn gets ext_key / ext_access */
	uint32_t rekey_mrn;
	uint64_t cmp_add, swap;   /* atomics (host values) */
	struct roce_sge res_sge;  /* atomics: the result buffer (8 bytes) */
	uint64_t ext_len;         /* REG_MR, BIND_MW: length (remote_addr is the
				   * iova / window start) */
	uint64_t page_list;       /* REG_MR: GPA of the page array */
	uint32_t ext_key;         /* REG_MR: the new key; BIND_MW: the MR lkey
				   * (rkey: the window's new key) */
	uint32_t ext_access;      /* REG_MR, BIND_MW: access flags */
	uint8_t data[] __attribute__((aligned(8))); /* SGEs or inline data */
};

static inline struct roce_sge *roce_swqe_sge(struct roce_swqe *w)
{
	return (struct roce_sge *)(void *)w->data;
}

static inline uint32_t roce_swqe_last_psn(const struct roce_swqe *w)
{
	return roce_psn_add(w->first_psn, w->npkts - 1);
}

/* The receive WQE being filled (RC/UC SEND in several packets). */
struct roce_rwqe {
	uint64_t wr_id;
	uint16_t head;
	bool valid;               /* popped and not yet given back */
	uint8_t status;           /* validation: SUCCESS or the error */
	uint32_t num_sge;
	uint64_t length;          /* sum of SGE lengths */
	struct rres_srq *srq;     /* taken from this SRQ's ring (NULL: the QP's
				   * own receive ring) */
	struct roce_sge sge[];    /* max(max_recv_sge, the SRQ's max_sge) */
};

/* A work completion before it is written (host order). */
struct roce_wc {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;             /* network order; with VIRTIO_IB_WC_WITH_INV the
				   * invalidated rkey, little-endian (the
				   * imm_data slot is copied verbatim) */
	uint32_t qp_num;
	uint32_t src_qp;
	uint8_t status;
	uint8_t opcode;
	uint8_t wc_flags;
	bool solicited;           /* for SOLICITED arming */
};

/* A ring with used entries to publish at the end of the current event. */
struct roce_ring_ref {
	struct vhost_vring *r;
	bool dirty;
	bool force;               /* interrupt regardless of suppression */
	bool polled;              /* no kick fd */
	bool err_reported;        /* roce_tp_ring_broken() ran for this ring */
	bool completions;         /* a CQ ring: published after the work queue rings */
	struct roce_ring_ref *next_dirty;
};

/* Per-CQ state (rres_cq->transport). */
struct roce_tcq {
	struct roce_tp *tp;
	struct rres_cq *cq;
	struct roce_ring_ref ring;
	struct roce_wc *backlog;  /* cqe entries */
	uint32_t bl_head, bl_len, bl_cap;
	bool overflowed;
	bool on_bl_list;
	struct roce_tcq *bl_next;
	uint64_t budget;          /* bytes charged to state-mem (roce_budget.c) */
};

/* Responder resources: one per outstanding RDMA READ (room for atomics:
 * type ATOMIC keeps the original value to answer a duplicate). */
enum roce_res_type {
	ROCE_RES_NONE = 0,
	ROCE_RES_READ,
	ROCE_RES_ATOMIC,          /* one atomic: {first_psn, atomic_orig} */
};

/* Responses of one request to send: the first's PSN and address, how many,
 * the next one. */
struct roce_rsp_seg {
	uint32_t psn;
	uint32_t len;
	uint64_t va;
	uint32_t npkts;
	uint32_t next;
};

struct roce_rsp_res {
	uint8_t type;
	bool active;              /* responses left to send (stream or dup) */
	bool stream_on, dup_on;
	uint32_t first_psn, last_psn; /* of the whole original READ */
	uint32_t rkey;
	uint64_t va;              /* original request */
	uint32_t len;
	struct roce_rsp_seg stream; /* the original answer (what is left of it) */
	struct roce_rsp_seg dup;  /* a duplicate's answer: sent before the rest */
	uint64_t atomic_orig;     /* ATOMIC: value returned */
};

enum roce_rsp_msg {
	ROCE_RSP_NONE = 0,
	ROCE_RSP_SEND,            /* multi-packet SEND in progress */
	ROCE_RSP_WRITE,           /* multi-packet WRITE in progress */
};

/* Per-QP transport state (rres_qp->transport). */
struct roce_tq {
	struct roce_tp *tp;
	struct rres_qp *qp;
	struct roce_ring_ref sq, rq;

	/* scheduling */
	bool on_runq;
	struct roce_tq *run_next;
	struct roce_hold *hold_on;  /* parked until this receiver has room */
	struct roce_tq *hold_next;
	bool quiet;               /* send-ring kicks suppressed (busy) */
	bool quiet_listed;        /* ... and not on the run queue: watched */
	uint8_t quiet_idle;       /* polls found idle while watched */
	struct roce_tq *quiet_prev, *quiet_next;
	bool on_poll_list;        /* has a ring without a kick fd */
	struct roce_tq *poll_prev, *poll_next;
	struct roce_tq *all_prev, *all_next;
	uint8_t state;            /* the QP state the engine last acted on */
	bool neigh_wait;          /* requester waits for a neighbour entry */
	struct roce_cc_rp *cc;    /* reaction point (after a CNP), else NULL */
	bool cc_wait;             /* requester waits for its pacer's timer */
	uint64_t cnp_sent_ns;     /* notification point: last CNP sent */

	/* send queue: slots [sq_head, sq_tail) are live, free-running
	 * counters; slot i is at (i & sq_mask) * sq_stride */
	uint8_t *swqe;
	uint32_t sq_slots, sq_mask, sq_stride;
	uint32_t sq_head;         /* oldest not completed */
	uint32_t sq_cur;          /* being sent */
	uint32_t sq_tail;         /* next free */

	/* requester */
	struct roce_path path;    /* RC/UC: from the QP's AV */
	uint32_t mtu;             /* bytes */
	uint32_t sq_psn;          /* next PSN to send */
	uint32_t una;             /* oldest unacknowledged PSN (RC) */
	uint32_t psn_hwm;         /* highest PSN sent + 1 (retransmit count) */
	uint32_t rd_out;          /* READ requests outstanding */
	uint8_t retry_left, rnr_left;
	bool rnr_wait;            /* waiting for the RNR timer */
	bool stalled;             /* a bad WQE is at sq_cur: send nothing */
	bool rewind_pending;      /* go back to una at the next turn */
	uint32_t rewind_mark;     /* una of the last rewind (no repeats) */
	bool rewind_marked;
	uint32_t sent_since_rewind; /* packets sent since the last rewind */
	uint32_t rewind_span;     /* PSNs past una sent when it was decided */
	/* READ responses placed beyond their READ's received prefix: bit
	 * psn % ROCE_TP_RD_WINDOW, for PSNs in [una, una + RD_WINDOW);
	 * allocated on the first one (charged), freed on reset */
	uint64_t *rd_map;
	uint32_t rd_seq;          /* READ requests sent (fills, resends too) */
	uint32_t rd_done_seq;     /* requests with a lower number were answered */
	uint32_t rd_fill_done_seq; /* ... of those asking for a missing range, */
	uint32_t rd_fill_done_psn; /* ... of READs up to this first PSN */
	bool rd_fill_psn_order;   /* such answers came out of sending order
				   * (in PSN order: vrdma's responder) */
	bool rd_check;            /* either moved: look at every READ */
	uint32_t acked_hi;        /* highest PSN known received by the peer */
	/* whether the oldest READ's re-request is still being answered */
	bool rd_rereq;            /* that READ was asked for again ... */
	uint32_t rd_rereq_psn;    /* ... from this PSN */
	uint32_t rd_rereq_hi;     /* highest response since (or since its replay began) */
	uint32_t rd_rereq_beyond; /* responses beyond before its replay began */
	bool rd_peer_queues;      /* a replay began only after ROCE_TP_RD_QUEUED
				   * more: the responder answers in arrival order */
	uint32_t rd_rsp_psn;      /* first_psn of the READ last answered */
	uint64_t rd_rsp_ns;       /* ... when (loop clock) */
	uint64_t rd_rsp_pass;     /* ... in which loop pass */
	uint64_t rd_quiet_ns;     /* longest recent silence inside a READ's answer */
	uint64_t progress_ns;     /* last forward progress (timer) */
	uint64_t advance_ns;      /* last real progress: bounds how long READ
				   * responses without it hold the timer back */
	uint64_t progress_pass;   /* loop pass of progress_ns */
	uint64_t timer_pass;      /* loop pass a due probe/timeout waits out */
	bool timer_waits;         /* ... for frames received, not looked at */
	uint32_t cwnd;            /* send window, PSNs (roce_recover.c) */
	bool loss_cut;            /* ... cut for the latest sequence NAK's loss */
	uint32_t rsp_burst;       /* READ responses per turn, paced likewise */
	uint8_t probes;           /* loss probes since the last progress */
	uint64_t probe_ns;        /* when the last one went (loop clock) */
	uint32_t srtt_ns;         /* smoothed send-to-progress time */
	/* After a sequence NAK: send the missing packet again alone, not
	 * everything after it (the responder may have kept that: roce_keep.c) */
	bool nak_hold;
	bool nak_hold_first;      /* ... the first round for that loss */
	bool nak_hold_probed;     /* ... sent once more, unanswered */
	bool nak_missed;          /* ... answered short of nak_hold_hwm */
	uint32_t nak_hold_end;    /* ... PSN after them */
	uint32_t nak_hold_hwm;    /* ... sq_psn then */
	uint64_t nak_hold_ns;     /* ... when (loop clock) */
	uint32_t nak_hold_len;    /* packets sent again for a NAK (1, doubling
				   * while answers show nothing kept beyond) */
	uint8_t peer_keeps;       /* enum roce_peer_keeps */
	uint8_t keep_misses;      /* losses answered short (UNKNOWN), or gone
				   * back for (NO) */
	struct loop_timer rexmit_timer;
	struct loop_timer rnr_timer;

	/* receive queue */
	struct roce_rwqe *rwqe;   /* current receive WQE */
	uint32_t rq_max_sge;

	/* responder */
	uint32_t epsn;            /* expected PSN */
	uint32_t msn;
	uint8_t rsp_msg;          /* enum roce_rsp_msg */
	uint32_t rsp_off;         /* bytes of the current message so far */
	uint64_t wr_va;           /* WRITE in progress */
	uint32_t wr_rkey, wr_len;
	bool nak_sent;            /* sequence/RNR NAK sent, wait for epsn */
	bool nak_rnr;             /* ... and it was an RNR NAK */
	uint32_t ooo_since_nak;   /* out-of-sequence packets since the NAK */
	uint32_t ooo_hi;          /* highest out-of-sequence PSN since it */
	uint32_t rsp_psn_hwm;     /* highest READ response PSN sent + 1 */
	uint64_t nak_ns;          /* when it was sent (loop clock) */
	bool uc_drop;             /* UC: drop until the next FIRST/ONLY */
	bool ack_pending;
	uint8_t ack_syndrome;
	uint32_t ack_psn;
	struct roce_rsp_res *res;
	uint32_t nres, res_next;  /* ring of responder resources */
	/* out-of-sequence SEND / WRITE frames kept until the gap before them
	 * fills (roce_keep.c): ring of ROCE_TP_KEEP_FRAMES, ascending PSNs,
	 * allocated on first use */
	struct roce_keep_ent *keep;
	uint32_t keep_head, keep_n;
	uint32_t res_active;
	bool comm_est;            /* COMM_EST raised since entering RTR */
	uint64_t budget;          /* bytes charged to state-mem (roce_budget.c) */
};

struct roce_neigh;
struct roce_cc_rp;
/* Event queue and SRQ state of the extensions: src/roce/roce_srq_evq.h. */
struct roce_tp_ext;

/* Frames held for one busy receiver (by destination MAC), in order, and the
 * QPs parked until it takes them (roce_hold.c). */
struct roce_hold {
	uint8_t dmac[6];
	bool used;
	struct pkt_queue q;
	struct roce_tq *park_head, *park_tail;
};

/* Per-device transport state. */
struct roce_tp {
	struct rres_dev *rd;
	struct loop *loop;
	struct roce_tp_ops ops;
	void *ctx;

	struct pkt_queue rxq;     /* RoCE frames from the switch */
	struct pkt_queue txq;     /* frames held when hold[] is full: no QP runs */
	struct roce_hold hold[ROCE_TP_HOLD_DESTS]; /* per busy receiver (roce_hold.c) */
	uint32_t nhold;           /* entries of hold[] in use */
	uint32_t hold_rr;         /* first entry flushed next (rotates) */
	bool tx_ready;            /* a receiver that refused us has room */
	bool rx_busy;             /* we refused a sender (rx_room owed) */
	struct roce_tq *runq_head, *runq_tail;
	uint32_t runq_len;
	struct roce_tq *all;      /* every QP */
	struct roce_tq *quiet;    /* QPs whose send-ring kicks are off, not on
				   * the run queue (watched by each poll) */
	struct roce_tq *polled;   /* QPs with a ring without a kick fd */
	struct roce_tq *poll_cursor; /* next of them to look at (NULL: head) */
	uint64_t poll_ivl_ns;     /* between scans of kick-less rings (0: every poll) */
	uint64_t poll_next_ns;    /* next scan */
	bool poll_found;          /* the current round of scans found work */
	struct roce_tcq *bl_list; /* CQs with a backlog */
	struct roce_ring_ref *dirty;
	uint32_t npolled;         /* rings without a kick fd */
	struct loop_timer poll_timer;
	uint16_t ip_id;
	uint8_t ttl;              /* IPv4 TTL / IPv6 hop limit of every frame */
	uint32_t run_max;         /* packets per run (roce_run.c; 1: none) */
	uint32_t keep_max;        /* frames a QP may keep (roce_keep.c; 0: none) */
	uint32_t keep_frames;     /* ... kept now, all QPs */
	struct roce_cc_params cc;
	bool in_event;            /* an entry point is running */
	struct roce_neigh *neigh;
	struct roce_tp_ext *ext;  /* roce_srq_evq.h (event queue, SRQ rings) */
	struct vq_elem elem;      /* scratch: send / receive rings */
	struct vq_elem cq_elem;   /* scratch: completion rings */
	struct roce_tp_stats stats;
	uint64_t state_mem, state_mem_max; /* roce_budget.c (0: no budget) */
	struct roce_budget *budget; /* the device's, shared by its contexts, or NULL */
	struct roce_sched *sched;   /* the device's send budget per pass, or NULL */
	uint64_t sched_pass;        /* last loop pass this transport took a share in */
	struct vlog_rl *log_rl;     /* the device's log rate limit, or NULL */
};

/* ---- roce_budget.c: the device's state-mem= budget ---- */
/* A budget shared by the transports of one device's contexts: with it,
 * state_mem_max is not used (state_mem still counts this transport's part). */
struct roce_budget {
	uint64_t max, used;
};
uint32_t roce_budget_sq_slots(uint32_t max_send_wr);
/* Largest transport state of a QP with cap (srq_max_sge: its SRQ's, or 0). */
uint64_t roce_budget_qp(const struct rres_qp_cap *cap, uint32_t srq_max_sge);
uint64_t roce_budget_cq(uint32_t cqe);
/* 0, or -ENOMEM (counted state_refused, logged) beyond the budget. */
int roce_budget_charge(struct roce_tp *tp, uint64_t bytes);
void roce_budget_uncharge(struct roce_tp *tp, uint64_t bytes);
void roce_tp_set_state_budget(struct roce_tp *tp, uint64_t max);
/* Charge the device's budget b (owned by the caller, outliving tp). */
void roce_tp_share_state_budget(struct roce_tp *tp, struct roce_budget *b);

/* ---- roce_sched.c: the device's send budget per loop pass ---- */
/* The transports of one device's contexts share ROCE_TP_RUN_BUDGET packets
 * per loop pass: each gets an equal share (the rest of the division going to
 * different ones each pass) plus what those polled before it left over. */
struct roce_sched {
	uint64_t pass;         /* loop pass the budget below belongs to */
	uint32_t left;         /* packets the device may still send in it */
	uint32_t reserved;     /* of them, the shares of transports not yet polled */
	uint32_t polled;       /* transports polled in this pass */
	uint32_t ntp;          /* transports sharing the budget */
	uint32_t rot;          /* first one to get one packet above the equal share */
	uint64_t budget_out;   /* polls cut short by the device's budget, QPs left */
};
/* Share s (owned by the caller, outliving tp) from now on; tp needs a loop. */
void roce_tp_share_send_budget(struct roce_tp *tp, struct roce_sched *s);
/* Packets tp may send in this pass (at most ROCE_TP_RUN_BUDGET) ... */
uint32_t roce_sched_take(struct roce_tp *tp);
/* ... and what it sent of them. */
void roce_sched_spent(struct roce_tp *tp, uint32_t n);

/* ---- roce_tp.c ---- */
/* Put tq on the run queue (no-op if already there). */
void roce_tp_schedule(struct roce_tq *tq);
/* The send ring of tq had work: suppress its kicks until the loop is about
 * to sleep (the poller looks at it meanwhile). */
void roce_tp_sq_quiet(struct roce_tq *tq);
/* Note that ref's ring has filled used entries; force = interrupt. */
void roce_tp_ring_dirty(struct roce_tp *tp, struct roce_ring_ref *ref, bool force);
/* Point ref at ring r (NULL: none), publishing what the old ring has. */
void roce_tp_ring_ref_set(struct roce_tp *tp, struct roce_ring_ref *ref, struct vhost_vring *r);
/* Publish every dirty ring and notify the driver. */
void roce_tp_commit(struct roce_tp *tp);
/* The engine moves qp to ERR (or SQE for UC/UD/GSI with sqe) and flushes;
 * a no-op if it is already there. */
void roce_tp_qp_error(struct roce_tq *tq, bool sqe);
/* Send a frame of tq (dmac resolved if the path has none); takes p. */
void roce_tp_xmit(struct roce_tp *tp, struct pkt *p, const struct roce_path *path);
/* A finished frame to the port (counted by the caller): sent, or held in order
 * while a receiver of this process is busy (roce_tp_ops.xmit_try). */
void roce_tp_output(struct roce_tp *tp, struct pkt *p);
/* Requester: whether path's destination MAC is known (or not needed); if
 * not, resolution is under way and tq is scheduled again when it changes. */
bool roce_tp_path_ready(struct roce_tq *tq, const struct roce_path *path);
/* A neighbour entry changed (resolved, failed, evicted): wake the QPs
 * waiting for one. */
void roce_tp_neigh_changed(struct roce_tp *tp);
/* A ring broke: count, report, and move the owner QP to ERR. */
void roce_tp_ring_broken(struct roce_tp *tp, struct roce_ring_ref *ref);
/* Fill a path from an address vector for qp (smac, sport...). */
void roce_tp_path_from_av(const struct roce_tp *tp, const struct rres_qp *qp,
			  const struct rres_av *av, struct roce_path *path);

/* ---- roce_sq.c ---- */
/* Allocate WQE slots for the started send ring (sized from it). Returns 0
 * or -ENOMEM. */
int roce_sq_attach(struct roce_tq *tq);
/* Drop the slots (no completions). */
void roce_sq_detach(struct roce_tq *tq);
static inline struct roce_swqe *roce_sq_wqe(const struct roce_tq *tq, uint32_t i)
{
	return (struct roce_swqe *)(void *)(tq->swqe + (size_t)(i & tq->sq_mask) * tq->sq_stride);
}
/* Pop and validate up to max WRs into free slots. Returns the number
 * fetched. */
uint32_t roce_sq_fetch(struct roce_tq *tq, uint32_t max);
/* Parse one send-ring element into w (validation failures set w->bad and
 * w->status; never fails otherwise). Exposed for the fuzzer. */
void roce_sq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_swqe *w);
/* Complete the WQE at sq_head with status (signaled or error -> CQ) and
 * give its descriptor back. */
void roce_sq_complete_head(struct roce_tq *tq, uint8_t status);
/* Flush: every live WQE and every WR still in the send ring completes
 * with WR_FLUSH_ERR. */
void roce_sq_flush(struct roce_tq *tq);
/* Give every live WQE's descriptor back without completion (RESET). */
void roce_sq_drop(struct roce_tq *tq);
/* Whether a send WR opcode is an atomic (CMP_AND_SWP, FETCH_AND_ADD). */
static inline bool roce_wr_is_atomic(uint8_t wr_opcode)
{
	return wr_opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
	       wr_opcode == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
}
/* Whether it counts against max_rd_atomic (RDMA READ or atomic). */
static inline bool roce_wr_is_rd_atomic(uint8_t wr_opcode)
{
	return wr_opcode == VIRTIO_IB_WR_RDMA_READ || roce_wr_is_atomic(wr_opcode);
}
/* Whether it is a local operation (REG_MR, LOCAL_INV, BIND_MW). */
static inline bool roce_wr_is_local(uint8_t wr_opcode)
{
	return wr_opcode == VIRTIO_IB_WR_REG_MR || wr_opcode == VIRTIO_IB_WR_LOCAL_INV ||
	       wr_opcode == VIRTIO_IB_WR_BIND_MW;
}

/* ---- roce_rq.c ---- */
int roce_rq_init(struct roce_tq *tq);
void roce_rq_fini(struct roce_tq *tq);
/* What roce_rq_get found. */
enum roce_rq_got {
	ROCE_RQ_EMPTY,  /* the receive ring (or the SRQ) has no element */
	ROCE_RQ_READY,  /* tq->rwqe is valid */
	ROCE_RQ_BROKEN, /* the ring broke (reported, the QP moved to ERR) */
};
/* Make tq->rwqe valid (pop + validate). */
enum roce_rq_got roce_rq_get(struct roce_tq *tq);
/* Complete tq->rwqe (to the receive CQ) and give it back. */
void roce_rq_complete(struct roce_tq *tq, struct roce_wc *wc);
/* Flush the current WQE and the ring with WR_FLUSH_ERR. */
void roce_rq_flush(struct roce_tq *tq);
/* Give the current WQE back without completion (RESET). */
void roce_rq_drop(struct roce_tq *tq);
/* Parse a receive-ring element into w (max_sge entries available). */
void roce_rq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_rwqe *w);

/* ---- roce_req.c ---- */
/* Requester turn: fetch and send up to budget packets. Returns packets
 * sent; *more is set if it stopped because of the budget. */
uint32_t roce_req_run(struct roce_tq *tq, uint32_t budget, bool *more);
/* Go back to tq->una (RC go-back-N). */
void roce_req_rewind(struct roce_tq *tq);
/* Send the packet of PSN psn again (already sent once) with AckReq; a READ
 * or atomic request only if rd_atomic_ok. Returns true if it was sent. */
bool roce_req_resend_psn(struct roce_tq *tq, uint32_t psn, bool rd_atomic_ok);
/* Send again the last SEND/WRITE packet sent at or after PSN from (else
 * the last READ or atomic request sent after it), with AckReq. */
void roce_req_resend_last(struct roce_tq *tq, uint32_t from);
/* Send one READ request for started READ w: its missing range from
 * w->rd_rcvd (roce_comp_read_range). Returns 1 if it was sent, 0 if no
 * buffer was free (try again later), -1 if it cannot be. */
int roce_req_read_fill(struct roce_tq *tq, struct roce_swqe *w);
/* Look at every READ for a missing range to ask for (tq->rd_check). */
void roce_comp_read_check_all(struct roce_tq *tq);

/* Loss recovery (roce_recover.c). */
/* Transmit holding per busy receiver (roce_hold.c, docs/design.md "Flow
 * control inside one daemon"). flush: retry what is held after
 * roce_tp_tx_ready; true when QPs may run (the fallback queue is empty).
 * park: true if frames to dmac (park_path: to the path's MAC, resolved if
 * it has none) are held; tq then waits off the run queue until they are
 * gone. forget: tq goes away. purge: drop everything held (unpark: and
 * let the parked QPs run). */
bool roce_hold_flush(struct roce_tp *tp);
bool roce_hold_park(struct roce_tq *tq, const uint8_t *dmac);
bool roce_hold_park_path(struct roce_tq *tq, const struct roce_path *path);
void roce_hold_forget(struct roce_tq *tq);
void roce_hold_purge(struct roce_tp *tp, bool unpark);

void roce_recover_reset(struct roce_tq *tq);
uint32_t roce_recover_window(const struct roce_tq *tq);
uint32_t roce_recover_rsp_burst(const struct roce_tq *tq);
void roce_recover_rsp_loss(struct roce_tq *tq);
void roce_recover_rsp_sent(struct roce_tq *tq, uint32_t n);
bool roce_recover_ackreq(const struct roce_tq *tq);
/* The shortest probe interval toward tq's peer (also the longest wait for
 * packets sent again after a NAK, and twice the responder's re-NAK wait). */
uint64_t roce_recover_probe_min(const struct roce_tq *tq);
/* The responder misses una (fresh: a sequence NAK; else the answer to the
 * last such resend stopped short): send nak_hold_len packets from una
 * again, no rewind (nak_hold until answered). False: go back instead (the
 * peer keeps nothing, or that would be everything outstanding). */
bool roce_recover_nak_resend(struct roce_tq *tq, bool fresh);
/* una moved: how far past those packets shows whether the peer's responder
 * keeps out-of-sequence packets (nak_missed: not past them). */
void roce_recover_nak_answered(struct roce_tq *tq);
/* Those packets unanswered for a few round trips: sent once more. */
bool roce_recover_hold_probe_due(const struct roce_tq *tq, uint64_t to);
void roce_recover_hold_probe(struct roce_tq *tq);
void roce_recover_loss(struct roce_tq *tq);
void roce_recover_sample(struct roce_tq *tq, uint64_t gap_ns);
void roce_recover_acked(struct roce_tq *tq, uint32_t n);
/* When the retransmit timer (probes, then the timeout) is due next. */
uint64_t roce_recover_deadline(const struct roce_tq *tq, uint64_t to);
/* The due timer probes (true) rather than times out. */
bool roce_recover_probe_due(const struct roce_tq *tq, uint64_t to);
void roce_recover_probe(struct roce_tq *tq);
/* Number of response packets (READ) or packets of w for mtu, an IB MTU
 * (virtio_ib_mtu_bytes: a power of two) or 0 (one packet). */
uint32_t roce_req_npkts(const struct roce_swqe *w, uint32_t mtu);

/* ---- roce_comp.c ---- */
/* A response packet (RC ACK, NAK, READ response) for tq. */
void roce_comp_rx(struct roce_tq *tq, const struct roce_pkt_info *pi);
/* Complete every WQE at the head that is DONE (in order). */
void roce_comp_drain(struct roce_tq *tq);
/* Start/refresh the retransmit timer after sending. */
/* The transport timer counts from now (the peer answers, or the QP starts
 * sending again), unless ROCE_TP_ALIVE_TIMEOUTS x (retry_cnt + 1) timeouts
 * have passed since the last real progress (advance_ns): then it keeps
 * running, so a peer that only repeats, skips or re-NAKs ends the head in
 * RETRY_EXC_ERR like a silent one. Returns whether it restarted. */
bool roce_comp_timer_restart(struct roce_tq *tq, uint64_t now);
/* The oldest READ w was asked for again and the responder is still
 * answering (docs/design.md "Loss recovery"): a probe does not ask again. */
bool roce_comp_read_answering(const struct roce_tq *tq, const struct roce_swqe *w);
/* A READ was asked for again from una (roce_req_rewind). */
void roce_comp_read_rerequested(struct roce_tq *tq, const struct roce_swqe *w);
/* The response range [*lo, *hi) a request for READ w asks for now: from its
 * first missing response to the next one received, or to its end. */
void roce_comp_read_range(const struct roce_tq *tq, const struct roce_swqe *w, uint32_t *lo,
			  uint32_t *hi);
/* Whether the oldest WQE is a READ whose missing range runs to its end. */
bool roce_comp_read_tail_missing(const struct roce_tq *tq);
/* Free the completer's memory (QP destroy). */
void roce_comp_fini(struct roce_tq *tq);
void roce_comp_arm_timer(struct roce_tq *tq);
/* Timer callbacks. */
void roce_comp_rexmit_timer(struct loop_timer *t, void *arg);
void roce_comp_rnr_timer(struct loop_timer *t, void *arg);
/* Nanoseconds of an RNR timer code (IBTA table). */
uint64_t roce_rnr_timer_ns(uint8_t code);
/* Nanoseconds of a local ACK timeout code (0 = infinite -> 0). */
uint64_t roce_ack_timeout_ns(uint8_t code);
/* Reset requester state (RTS entry, RESET). */
void roce_comp_reset(struct roce_tq *tq);

/* ---- roce_keep.c ---- */
/* What the requester knows of its peer's responder. */
enum roce_peer_keeps {
	ROCE_PEER_KEEPS_UNKNOWN,
	ROCE_PEER_KEEPS_YES,      /* acknowledged beyond a held resend */
	ROCE_PEER_KEEPS_NO,       /* ROCE_TP_KEEP_MISSES held resends showed none */
};

struct roce_keep_ent {
	struct pkt *p;
	struct roce_pkt_info pi;  /* its packet 0 as parsed on arrival (no
				   * second parse: nothing alters a kept frame
				   * but a fill, which payload_ref follows) */
	uint16_t n;               /* packets it stands for (holes included) */
	uint16_t cnt;             /* ... of them kept (rx_kept) */
};

/* After the responder handled request frame p (pi: its packet 0) of RC QP
 * tq: keep it if packets of it lie beyond a sequence gap. True: the frame
 * is tq's now (the caller must not free it). */
bool roce_keep_take(struct roce_tq *tq, struct pkt *p, const struct roce_pkt_info *pi);
/* Execute the kept frames that epsn reached, in order. */
void roce_keep_drain(struct roce_tq *tq);
/* Free every kept frame (reset, ERR, destroy). */
void roce_keep_flush(struct roce_tq *tq);
/* Frames a QP may keep (0: the responder drops out-of-sequence packets, as
 * IBTA's go-back-N). */
void roce_tp_set_keep(struct roce_tp *tp, uint32_t frames);

/* ---- roce_resp.c ---- */
/* A request packet for tq. */
void roce_resp_rx(struct roce_tq *tq, const struct roce_pkt_info *pi, const struct pkt *p);
/* Responder turn: READ responses and the pending ACK. Returns packets. */
uint32_t roce_resp_run(struct roce_tq *tq, uint32_t budget, bool *more);
/* n in-order MIDDLE packets of one SEND / WRITE (last: the final one is a
 * WRITE LAST without immediate), pi their first with the payload of all:
 * placed with one copy (roce_run.c). ack_k: the last of them with AckReq, or
 * -1. Returns n, or 0 when they must go one by one. */
uint32_t roce_resp_rx_bulk(struct roce_tq *tq, const struct roce_pkt_info *pi, uint32_t n,
			   bool last, int32_t ack_k);
/* n packets from psn of a run, beyond epsn after a sequence NAK: counted
 * and dropped together up to one that would NAK again (ackreq: bit j,
 * packet j asks for an ACK). Returns those done (0: one by one). */
uint32_t roce_resp_rx_ahead(struct roce_tq *tq, uint32_t psn, uint32_t n, uint64_t ackreq);
/* Send the coalesced ACK if due (no READ responses before it). */
void roce_resp_flush_ack(struct roce_tq *tq);
int roce_resp_init(struct roce_tq *tq);
void roce_resp_fini(struct roce_tq *tq);
/* Reset responder state (RTR entry, RESET). */
void roce_resp_reset(struct roce_tq *tq);
/* max_dest_rd_atomic changed on a connected QP (SQD -> SQD): resize the
 * responder resources keeping the newest ones (saved READ / atomic results)
 * and every other piece of responder state (expected PSN, MSN). Returns 0
 * or -ENOMEM (old resources kept). */
int roce_resp_resize(struct roce_tq *tq);
/* Whether the responder has packets to send. */
bool roce_resp_busy(const struct roce_tq *tq);

/* ---- roce_recv.c ---- */
/* Handle up to max queued frames. Returns the number handled. */
uint32_t roce_recv_run(struct roce_tp *tp, uint32_t max);
/* Handle one frame (takes p). */
void roce_recv_one(struct roce_tp *tp, struct pkt *p);

/* ---- roce_cq.c ---- */
int roce_cq_attach_hook(struct rres_dev *rd, struct rres_cq *cq);
void roce_cq_detach_hook(struct rres_dev *rd, struct rres_cq *cq);
/* Post a completion to cq (written now, or backlogged). */
void roce_cq_post(struct roce_tp *tp, struct rres_cq *cq, const struct roce_wc *wc);
/* Write backlogged completions into newly posted buffers. Returns true if
 * any was written. */
bool roce_cq_drain(struct roce_tcq *tc);
/* The ring of cq started / stopped. */
void roce_cq_ring_set(struct roce_tcq *tc, struct vhost_vring *r);

/* One copy between local devices: the host pieces of [off, off + len) of
 * w's SGEs (keys checked as for a copy) into iov[0..*niov), at most max.
 * *niov = 0 (and 0 returned) when a reference cannot be made (inline data,
 * more pieces than max): copy instead. Returns 0 or a WC status. */
int roce_mem_ref_swqe(struct roce_tq *tq, struct roce_swqe *w, uint32_t off, uint32_t len,
		      struct iovec *iov, uint32_t max, uint32_t *niov);
/* Place the payload of a received packet (in the frame, or referenced in
 * the sender's memory: pi->payload_ref) into a receive WQE at off (returns
 * or into a remote-key range checked by roce_mem_rkey. Returns 0 or a WC
 * status (REM_ACCESS_ERR: a page of the range is not mapped). */
int roce_mem_payload_to_rwqe(struct roce_tq *tq, const struct roce_rwqe *rw, uint64_t off,
			     const struct roce_pkt_info *pi);
int roce_mem_payload_to_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
			   const struct roce_pkt_info *pi);
/* The same into local SGEs (a READ response; returns 0 or a WC status). */
int roce_mem_payload_to_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
			     uint64_t off, const struct roce_pkt_info *pi);
/* The host pieces of [va, va + len) of a remote-key range checked by
 * roce_mem_rkey (a READ response by reference). *niov = 0: more than max,
 * copy instead. Returns 0 or a WC status (REM_ACCESS_ERR). */
int roce_mem_ref_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va, uint32_t len,
		    struct iovec *iov, uint32_t max, uint32_t *niov);

/* ---- roce_mem.c ---- */
/* Copy len bytes at message offset off of a send WQE (SGEs or inline)
 * into dst. Returns 0 or a WC status (LOC_PROT_ERR). */
int roce_mem_from_swqe(struct roce_tq *tq, struct roce_swqe *w, uint32_t off,
		       uint8_t *dst, uint32_t len);
/* Copy len bytes from src to the SGE list sge[0..n) at offset off (local
 * keys, LOCAL_WRITE). Returns 0 or a WC status. */
int roce_mem_to_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
		     uint64_t off, const uint8_t *src, uint32_t len);
/* The same into a receive WQE: keys of its SRQ's PD when it came from an
 * SRQ (IBTA), else of the QP's PD. */
int roce_mem_to_rwqe(struct roce_tq *tq, const struct roce_rwqe *rw, uint64_t off,
		     const uint8_t *src, uint32_t len);
/* Check an SGE list: keys of the QP's PD with access, in bounds. Returns
 * 0 or a WC status (LOC_PROT_ERR / LOC_LEN_ERR). *total gets the sum. */
int roce_mem_check_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
			uint32_t access, uint64_t *total);
/* The same with the keys of pd (an SRQ's elements use the SRQ's PD). */
int roce_mem_check_sges_pd(const struct rres_dev *rd, const struct rres_pd *pd,
			   const struct roce_sge *sge, uint32_t n, uint32_t access,
			   uint64_t *total);
/* The MR of a remote key if the QP allows access, the key matches, and
 * [va, va+len) is inside it; NULL otherwise. len 0 is always allowed
 * (returns a non-NULL dummy only if needed: callers skip len 0). */
struct rres_mr *roce_mem_rkey(struct roce_tq *tq, uint32_t rkey, uint64_t va,
			      uint64_t len, uint32_t access);
/* Copy to / from a remote-key range (already checked by roce_mem_rkey).
 * Returns 0 or a WC status (REM_ACCESS_ERR: a page is not mapped). */
int roce_mem_to_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
		   const uint8_t *src, uint32_t len);
int roce_mem_from_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
		     uint8_t *dst, uint32_t len);
/* The host address of the 8 aligned bytes at va of a remote-key range
 * (already checked by roce_mem_rkey), or NULL if they are not mapped as
 * one aligned host word. */
uint64_t *roce_mem_atomic_ptr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va);

/* ---- roce_cc.c ---- */
void roce_cc_params_default(struct roce_cc_params *c);
/* Packet pi (frame p) for tq arrived CE-marked: send a CNP if due. */
void roce_cc_ce(struct roce_tq *tq, const struct roce_pkt_info *pi, const struct pkt *p);
/* A CNP for tq arrived: lower its rate. */
void roce_cc_cnp(struct roce_tq *tq);
/* With tq->cc: whether the pacer lets the next packet go (else tq is
 * scheduled again when it may). */
bool roce_cc_may_send(struct roce_tq *tq);
/* With tq->cc: bytes went out (may end pacing: tq->cc becomes NULL). */
void roce_cc_sent(struct roce_tq *tq, uint32_t bytes);
/* Current paced rate in bits/s, 0 when not paced. */
uint64_t roce_cc_rate(const struct roce_tq *tq);
void roce_cc_qp_free(struct roce_tq *tq);

/* ---- roce_neigh.c ---- */
struct roce_neigh *roce_neigh_new(struct roce_tp *tp);
void roce_neigh_free(struct roce_neigh *n);
void roce_neigh_flush(struct roce_neigh *n);
/* Start resolving dgid (no-op if known or under way). */
void roce_neigh_resolve(struct roce_neigh *n, const uint8_t sgid[16], const uint8_t dgid[16]);
/* Whether dgid's MAC is usable (then in mac); if not, resolution is under
 * way (or in backoff after a failure) and a change calls
 * roce_tp_neigh_changed(). */
bool roce_neigh_lookup(struct roce_neigh *n, const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t mac[6]);
/* Send p to gid (IPv4-mapped or IPv6) once its MAC is known: now if
 * cached, else queued while resolving. Takes p. */
void roce_neigh_output(struct roce_neigh *n, struct pkt *p, const uint8_t sgid[16],
		       const uint8_t dgid[16]);
/* ARP / ICMPv6 ND frame for us (a private copy, from the rx queue). */
void roce_neigh_rx(struct roce_neigh *n, struct pkt *p);
/* Whether frame p (len >= 14) is ARP / NS / NA the neighbour code wants. */
bool roce_neigh_wants(const struct roce_tp *tp, const struct pkt *p);
/* dgid is a device of this daemon (this one, or a pinned local device):
 * frames to it stay in the process, a run stays one frame. */
bool roce_neigh_local(struct roce_neigh *n, const uint8_t dgid[16]);
/* dgid is this device's or that of a RoCE device served by this loop: its
 * answers come within the loop's own passes. */
bool roce_neigh_near(struct roce_neigh *n, const uint8_t dgid[16]);
/* IPv4 address ip is one of the device's (its mapped GID is in the table;
 * inline: every received IPv4 frame asks). */
static inline bool roce_neigh_ip4_ours(const struct rres_dev *rd, const uint8_t ip[4])
{
	uint8_t gid[16];

	roce_gid_from_ipv4(gid, ip);
	return rres_gid_has(rd, gid);
}

/* ---- roce_run.c: runs between local devices ---- */
/* (docs/design.md "Runs between local devices") */
#define ROCE_RUN_MAX 32  /* packets one run stands for (a QP's turn at most) */
#define ROCE_RUN_IOV 64  /* pieces of its payload */

/* What a run frame says about its packets besides packet 0's frame: in the
 * last PKT_RUN_META bytes of its buffer (roce_run_of). A run is packets of
 * one message, or single-packet SENDs and WRITEs of consecutive messages of
 * one QP (each with its own RETH and immediate data). */
struct roce_run {
	struct roce_path path;      /* as packet 0 was built (dmac: its frame's) */
	struct roce_hdr_fields f;   /* packet 0's fields */
	uint64_t ackreq;            /* bit k: packet k asks for an ACK */
	uint64_t lost;              /* bit k: packet k was lost on the way */
	uint64_t se;                /* bit k: packet k has SE */
	uint16_t plen[ROCE_RUN_MAX]; /* payload bytes of each packet */
	uint8_t op[ROCE_RUN_MAX];   /* opcode of each packet */
	struct roce_reth reth[ROCE_RUN_MAX]; /* packet k > 0 with a RETH: its RETH */
	struct roce_immdt imm[ROCE_RUN_MAX]; /* packet k > 0 with ImmDt: its ImmDt */
	struct iovec iov[ROCE_RUN_IOV]; /* the payload of all packets */
};

struct roce_run_stats {
	uint64_t runs_split;        /* runs made into real frames */
	uint64_t frames_split;      /* ... the frames */
	uint64_t split_failed;      /* out of frames: the run was dropped */
	uint64_t runs_cut;          /* runs shortened (roce_run_cut) */
	uint64_t tails;             /* ... and runs made of what followed the cut */
	uint64_t holes;             /* packets of runs lost on the way (roce_run_lose) */
};

struct roce_run *roce_run_of(struct pkt *p);
/* The description of a run whose packet 0 is p (built), or NULL if its
 * frame leaves no room for it. */
struct roce_run *roce_run_begin(struct pkt *p);
/* p stands for n packets now (description filled: op, plen and, where a
 * packet k > 0 has a RETH or ImmDt, reth or imm [0..n); f, path, ackreq,
 * se, iov[0..niov) holding payload bytes). */
void roce_run_seal(struct pkt *p, uint32_t n, uint32_t niov, uint32_t payload);
/* plen[0..n) of run r for len bytes of one message cut at mtu (every packet
 * an MTU but the last). */
void roce_run_set_mtu_plen(struct roce_run *r, uint32_t n, uint32_t mtu, uint32_t len);
/* A received run for tq: the responder or completer once per packet, for
 * packets [from, to) (all: 0, npkts; a kept run executed up to its next
 * hole: roce_keep.c). */
void roce_run_rx(struct roce_tq *tq, const struct roce_pkt_info *pi0, struct pkt *p,
		 uint32_t from, uint32_t to);
/* This thread's split counters. */
void roce_run_get_stats(struct roce_run_stats *st);

/* roce_copy.c: copies into registered memory, streaming stores where the
 * destination is cold. Shorter copies are plain and not tracked. */
#define ROCE_COPY_TRACK_MIN 1024
#define ROCE_COPY_COLD_DEFAULT (8ull << 20) /* a quarter of a 32 MiB cache */
struct roce_copy_stats {
	uint64_t streamed;          /* copies made with streaming stores */
	uint64_t streamed_bytes;    /* ... their bytes */
};

/* A copy of ROCE_COPY_TRACK_MIN bytes or more (source and destination may
 * overlap): tracked, streamed where cold. */
void roce_copy_tracked(void *dst, const void *src, size_t len);
/* Copy len bytes into registered memory (they may overlap, as memmove). */
static inline void roce_copy_to_mem(void *dst, const void *src, size_t len)
{
	if (len < ROCE_COPY_TRACK_MIN)
		memmove(dst, src, len);
	else
		roce_copy_tracked(dst, src, len);
}
/* A destination this thread wrote more than bytes ago is cold (0: none is;
 * ROCE_COPY_COLD_DEFAULT until set); before loop threads start. */
void roce_copy_set_cold(uint64_t bytes);
/* Size of the last-level cache (sysfs; 32 MiB if unknown). */
uint64_t roce_copy_llc_bytes(void);
/* This thread's counters. */
void roce_copy_get_stats(struct roce_copy_stats *st);

#endif /* VRDMA_ROCE_ROCE_TP_H */
