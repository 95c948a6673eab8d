/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: turns send WQEs into packets.
 *
 * Segmentation: a message of L bytes goes out as max(1, ceil(L / PMTU))
 * packets of PMTU bytes, the last one shorter (SEND/WRITE FIRST, MIDDLE...,
 * LAST or ONLY; RETH on the first, ImmDt on the last). An RDMA READ is one
 * request packet that consumes as many PSNs as there will be response
 * packets. UD sends one packet of at most the port MTU.
 *
 * PSNs are assigned in WQE order from sq_psn, so they are a pure function of
 * the WQE sequence and the MTU: go-back-N (roce_req_rewind) just moves the
 * send position back to the WQE holding the oldest unacknowledged PSN and
 * regenerates the packets from the WR's memory (nothing is buffered).
 *
 * Atomics (RC, ROCE_EXT) are one request packet (COMPARE & SWAP or FETCH &
 * ADD with an AtomicETH, one PSN) answered by an ATOMIC ACKNOWLEDGE; they
 * count with READs. Local operations (REG_MR, LOCAL_INV, BIND_MW) consume no
 * PSN: they run when the requester reaches them in send-queue order (after
 * every earlier WR was sent), once, and are never repeated by a rewind.
 * SEND_WITH_INV ends with SEND LAST / ONLY with Invalidate (IETH).
 *
 * RC flow control: at most ROCE_TP_WINDOW PSNs unacknowledged; at most
 * max_rd_atomic READs and atomics outstanding; a FENCE WR waits for them;
 * AckReq on the last packet of a message, of a turn (the QP's share of a
 * poll) and every ROCE_TP_ACKREQ_EVERY packets (the responder coalesces its
 * ACKs per receive batch).
 */
#include "roce/roce_tp.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"

uint32_t roce_req_npkts(const struct roce_swqe *w, uint32_t mtu)
{
	if (!mtu || w->length <= mtu)
		return 1;
	return (uint32_t)(((uint64_t)w->length + mtu - 1) >> __builtin_ctz(mtu));
}

static bool wr_has_imm(uint8_t opcode)
{
	return opcode == VIRTIO_IB_WR_SEND_WITH_IMM || opcode == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
}

static uint8_t req_opcode(uint8_t type, const struct roce_swqe *w, uint32_t k)
{
	bool only = w->npkts == 1, first = k == 0, last = k + 1 == w->npkts;
	bool imm = wr_has_imm(w->opcode);
	uint8_t op;

	if (type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI)
		return imm ? ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE : ROCE_OP_UD_SEND_ONLY;
	switch (w->opcode) {
	case VIRTIO_IB_WR_SEND_WITH_INV:
		if (only)
			return ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE;
		if (last)
			return ROCE_OP_RC_SEND_LAST_WITH_INVALIDATE;
		return first ? ROCE_OP_RC_SEND_FIRST : ROCE_OP_RC_SEND_MIDDLE;
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
		return ROCE_OP_RC_COMPARE_SWAP;
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		return ROCE_OP_RC_FETCH_ADD;
	case VIRTIO_IB_WR_SEND:
	case VIRTIO_IB_WR_SEND_WITH_IMM:
		if (only)
			op = imm ? ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE : ROCE_OP_RC_SEND_ONLY;
		else if (first)
			op = ROCE_OP_RC_SEND_FIRST;
		else if (last)
			op = imm ? ROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE : ROCE_OP_RC_SEND_LAST;
		else
			op = ROCE_OP_RC_SEND_MIDDLE;
		break;
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		if (only)
			op = imm ? ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
				   ROCE_OP_RC_RDMA_WRITE_ONLY;
		else if (first)
			op = ROCE_OP_RC_RDMA_WRITE_FIRST;
		else if (last)
			op = imm ? ROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
				   ROCE_OP_RC_RDMA_WRITE_LAST;
		else
			op = ROCE_OP_RC_RDMA_WRITE_MIDDLE;
		break;
	default:
		op = ROCE_OP_RC_RDMA_READ_REQUEST;
		break;
	}
	if (type == VIRTIO_IB_QPT_UC)
		op = (uint8_t)(op + ROCE_OP_UC_SEND_FIRST);
	return op;
}

/* A UC WR whose payload went by reference (tag: its index in the send
 * queue) counts the frames still referring to it; it completes when the
 * last one ends (received, filled in, or dropped), not when it is sent. */
static struct roce_swqe *req_uc_wqe(struct roce_tq *tq, uint32_t idx)
{
	/* Not in the queue any more (it completed with an error while its
	 * frames were out): nothing to count. Indexes run free, so a slot's
	 * next WR has another. A queue that lets WRs go without completing
	 * them fills in every reference first (roce_sq_flush, roce_sq_drop,
	 * roce_sq_detach). */
	if (!tq->swqe || idx - tq->sq_head >= tq->sq_tail - tq->sq_head)
		return NULL;
	return roce_sq_wqe(tq, idx);
}

static void req_uc_hold(void *ctx, uint32_t idx)
{
	struct roce_swqe *w = req_uc_wqe(ctx, idx);

	if (w)
		w->refs++;
}

static void req_uc_release(void *ctx, uint32_t idx)
{
	struct roce_tq *tq = ctx;
	struct roce_swqe *w = req_uc_wqe(tq, idx);

	if (!w || !w->refs || --w->refs)
		return;
	if (w->state == ROCE_WQE_SENT) {
		w->state = ROCE_WQE_DONE;
		roce_tp_schedule(tq); /* (its turn drains the completions) */
	}
}

static const struct pkt_ref_owner req_uc_owner = { req_uc_hold, req_uc_release };

/* Whether w's packets may leave their payload in its memory: a SEND or
 * WRITE of RC, or of UC longer than one packet, not inline, on a path
 * without UDP checksums (one is computed over the payload). A one-packet
 * UC message is copied: it then completes when sent, which costs less than
 * the copy saved (docs/performance.md "UC between local devices"). UD
 * frames may go to the daemon's own services: copied. */
static bool req_by_ref(const struct roce_tq *tq, const struct roce_swqe *w,
		       const struct roce_path *path)
{
	return (tq->qp->type == VIRTIO_IB_QPT_RC ||
		(tq->qp->type == VIRTIO_IB_QPT_UC && w->length > tq->mtu)) &&
	       !w->inl && !(path->flags & ROCE_PATH_F_UDP_CSUM);
}

/* p's payload reference belongs to w, the send queue's current WR: a UC
 * WR completes when it ends (RC's completes on its ACK, which comes after
 * the responder placed it). */
static void req_ref_owned(struct roce_tq *tq, struct pkt *p)
{
	if (tq->qp->type == VIRTIO_IB_QPT_UC)
		pkt_ref_set_owner(p, &req_uc_owner, tq, tq->sq_cur);
}

/* The payload of a packet: left in the WR's memory when req_by_ref (a
 * reference the responder of a local device copies from, or the switch
 * fills in when the frame is seen outside: docs/design.md, "One copy
 * between local devices"), else copied now. */
static int req_payload(struct roce_tq *tq, struct roce_swqe *w, uint32_t off, struct pkt *p,
		       uint8_t *payload, uint32_t plen, const struct roce_path *path)
{
	struct iovec iov[PKT_REF_IOV];
	uint32_t n = 0;
	int st;

	if (plen && req_by_ref(tq, w, path)) {
		st = roce_mem_ref_swqe(tq, w, off, plen, iov, PKT_REF_IOV, &n);
		if (st)
			return st;
		if (n) {
			pkt_ref_attach(p, (uint32_t)(payload - p->data), iov, n, plen);
			req_ref_owned(tq, p);
			tq->tp->stats.tx_by_ref++;
			return 0;
		}
	}
	return roce_mem_from_swqe(tq, w, off, payload, plen);
}

/* Whether packet k of w (PSN psn, the last of the turn: turn_end) asks for
 * an ACK: the last of a message or turn, every ROCE_TP_ACKREQ_EVERY, and
 * near the end of the window (roce_recover_ackreq, as when sq_psn is psn). */
static inline bool req_ackreq(const struct roce_tq *tq, const struct roce_swqe *w, uint32_t k,
		       uint32_t psn, bool turn_end, uint32_t win)
{
	if (roce_wr_is_atomic(w->opcode))
		return true;
	if (tq->qp->type != VIRTIO_IB_QPT_RC || w->opcode == VIRTIO_IB_WR_RDMA_READ)
		return false;
	return k + 1 >= w->npkts || turn_end || k % ROCE_TP_ACKREQ_EVERY == ROCE_TP_ACKREQ_EVERY - 1 ||
	       roce_psn_diff(roce_psn_add(psn, 1), tq->una) >= (int32_t)(win - win / 4);
}

/* Whether w's packet asks for a solicited event: its last (last), of a
 * solicited SEND or WRITE with immediate data. */
static bool req_se(const struct roce_swqe *w, bool last)
{
	return last && (w->flags & VIRTIO_IB_SEND_SOLICITED) &&
	       w->opcode != VIRTIO_IB_WR_RDMA_WRITE && !roce_wr_is_rd_atomic(w->opcode);
}

/* The payload of packets k..k+n-1 (n > 1) of w as one reference: a run
 * (roce_run.c). Returns 1 if p is a run now, 0 if not (the pieces do not fit
 * one, or a key fails): then packet k goes alone. */
static int req_run(struct roce_tq *tq, struct roce_swqe *w, uint32_t k, uint32_t n,
		   uint32_t turn_left, struct pkt *p, const struct roce_hdr_fields *f,
		   const struct roce_path *path)
{
	struct roce_run *r = roce_run_begin(p);
	uint32_t off = k * tq->mtu, len = MIN(n * tq->mtu, w->length - off), niov = 0;
	uint32_t win = roce_recover_window(tq);
	int st;

	if (!r)
		return 0;
	/* A key fault goes back to one packet at a time, to fail where the
	 * framed path fails. */
	st = roce_mem_ref_swqe(tq, w, off, len, r->iov, ROCE_RUN_IOV, &niov);
	if (st || !niov)
		return 0;
	r->path = *path;
	r->f = *f;
	r->ackreq = 0;
	roce_run_set_mtu_plen(r, n, tq->mtu, len);
	for (uint32_t j = 0; j < n; j++) {
		/* (the MIDDLE packets of a message share their opcode) */
		bool middle = k + j > 0 && k + j + 1 < w->npkts;

		r->op[j] = middle && j > 1 ? r->op[j - 1] : req_opcode(tq->qp->type, w, k + j);
		if (req_ackreq(tq, w, k + j, roce_psn_add(f->psn, j), j + 1 >= turn_left, win))
			r->ackreq |= 1ull << j;
	}
	r->se = (uint64_t)req_se(w, k + n >= w->npkts) << (n - 1);
	if (k + n >= w->npkts && wr_has_imm(w->opcode)) /* (ImmDt: the message's last) */
		roce_immdt_set_raw(&r->imm[n - 1], w->imm);
	roce_run_seal(p, n, niov, len);
	req_ref_owned(tq, p);
	return 1;
}

/* Single-packet SENDs and WRITEs of consecutive messages, gathered into one
 * run while roce_req_run goes through the send queue (docs/design.md "Runs
 * between local devices"): packet 0's frame is built, the others are in
 * its description; req_batch_flush sends it before anything else of the QP
 * goes out. */
struct req_batch {
	struct pkt *p;          /* packet 0's frame; NULL: none open */
	uint32_t n;             /* packets */
	uint32_t niov;          /* pieces of their payload (the run's iov) */
	uint32_t bytes;         /* payload bytes */
	uint32_t payload_off;   /* packet 0's payload in its frame */
};

/* Whether packet k of w may be in a batch: the only packet of an RC SEND or
 * WRITE whose payload may be referenced (as req_run_len_max), and, after
 * packet 0 (first: false), not a SEND with invalidate (packet 0's IETH
 * stands in the run's fields). */
static bool req_batchable(const struct roce_tq *tq, const struct roce_swqe *w, uint32_t k,
			  bool first)
{
	switch (w->opcode) {
	case VIRTIO_IB_WR_SEND:
	case VIRTIO_IB_WR_SEND_WITH_IMM:
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		break;
	case VIRTIO_IB_WR_SEND_WITH_INV:
		if (first)
			break;
		return false;
	default:
		return false;
	}
	return k == 0 && w->npkts == 1 && w->length && !w->inl && !tq->cc &&
	       tq->qp->type == VIRTIO_IB_QPT_RC && !(tq->path.flags & ROCE_PATH_F_UDP_CSUM) &&
	       tq->tp->run_max >= 2;
}

/* What the requester counts for packets psn..psn+n-1 of w sent. */
static void req_sent_count(struct roce_tq *tq, const struct roce_swqe *w, uint32_t psn,
			   uint32_t n)
{
	uint32_t end = w->opcode == VIRTIO_IB_WR_RDMA_READ ?
		       roce_psn_add(w->first_psn, w->npkts) : roce_psn_add(psn, n);
	int32_t below = roce_psn_diff(tq->psn_hwm, psn);

	if (below > 0)
		tq->tp->stats.retransmits += MIN((uint32_t)below, n);
	else if (roce_wr_is_atomic(w->opcode))
		tq->tp->stats.atomics_sent++;
	tq->sent_since_rewind += n;
	if (roce_psn_diff(end, tq->psn_hwm) > 0)
		tq->psn_hwm = end;
}

/* The only packet of w (PSN psn) went into the batch: counted as sent. */
static void req_batched(struct roce_tq *tq, const struct roce_swqe *w, uint32_t psn)
{
	tq->tp->ip_id++;
	tq->tp->stats.tx_by_ref++;
	req_sent_count(tq, w, psn, 1);
}

/* Open a batch with packet 0 of w, built in p (fields f, payload at
 * payload): false if its payload cannot be referenced from the run's
 * description (then it goes alone). */
static bool req_batch_open(struct roce_tq *tq, struct req_batch *b, struct roce_swqe *w,
			   struct pkt *p, const struct roce_hdr_fields *f, uint8_t *payload)
{
	struct roce_run *r = roce_run_begin(p);
	uint32_t niov = 0;

	/* (at most PKT_REF_IOV pieces: a batch that stays one packet is
	 * an ordinary frame, whose reference holds that many) */
	if (!r || roce_mem_ref_swqe(tq, w, 0, w->length, r->iov, PKT_REF_IOV, &niov) || !niov)
		return false;
	r->path = tq->path;
	r->f = *f;
	r->op[0] = f->opcode;
	r->plen[0] = (uint16_t)w->length;
	r->ackreq = f->ackreq;
	r->se = f->se;
	b->p = p;
	b->n = 1;
	b->niov = niov;
	b->bytes = w->length;
	b->payload_off = (uint32_t)(payload - p->data);
	req_batched(tq, w, f->psn);
	return true;
}

/* Packet 0 of w (PSN psn) into the open batch: false if it does not fit
 * (the batch is full, its payload pieces do not fit or a key fails: it
 * goes alone, and fails there as the framed path does). */
static bool req_batch_add(struct roce_tq *tq, struct req_batch *b, struct roce_swqe *w,
			  uint32_t psn, uint32_t turn_left)
{
	struct roce_run *r = roce_run_of(b->p);
	uint32_t k = b->n, niov = 0;

	if (k >= MIN(tq->tp->run_max, (uint32_t)ROCE_RUN_MAX) ||
	    psn != roce_psn_add(r->f.psn, k) || b->niov >= ROCE_RUN_IOV ||
	    roce_mem_ref_swqe(tq, w, 0, w->length, r->iov + b->niov, ROCE_RUN_IOV - b->niov,
			      &niov) || !niov)
		return false;
	r->op[k] = req_opcode(VIRTIO_IB_QPT_RC, w, 0);
	r->plen[k] = (uint16_t)w->length;
	if (roce_opcode_mask(r->op[k]) & ROCE_OPF_RETH) {
		roce_reth_set_va(&r->reth[k], w->remote_addr);
		roce_reth_set_rkey(&r->reth[k], w->rkey);
		roce_reth_set_len(&r->reth[k], w->length);
	}
	if (roce_opcode_mask(r->op[k]) & ROCE_OPF_IMMDT)
		roce_immdt_set_raw(&r->imm[k], w->imm);
	if (req_ackreq(tq, w, 0, psn, turn_left <= 1, roce_recover_window(tq)))
		r->ackreq |= 1ull << k;
	if (req_se(w, true))
		r->se |= 1ull << k;
	b->n++;
	b->niov += niov;
	b->bytes += w->length;
	req_batched(tq, w, psn);
	return true;
}

/* Send the open batch, if any: one frame, or a run of several messages. */
static void req_batch_flush(struct roce_tq *tq, struct req_batch *b)
{
	struct roce_tp *tp = tq->tp;
	struct pkt *p = b->p;
	struct roce_run *r;

	if (!p)
		return;
	b->p = NULL;
	r = roce_run_of(p);
	if (b->n == 1) {
		pkt_ref_attach(p, b->payload_off, r->iov, b->niov, r->plen[0]);
	} else {
		roce_run_seal(p, b->n, b->niov, b->bytes);
		tp->stats.tx_runs++;
		tp->stats.tx_run_pkts += b->n;
		tp->stats.tx_run_msgs += b->n;
	}
	roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC);
	roce_tp_xmit(tp, p, &tq->path);
}

/* Build and send packet k of w, or (n > 1) a run of packets k..k+n-1 when
 * their payload can be one reference. turn_left: packets left in the turn
 * (the last one asks for an ACK). With b, a single-packet SEND or WRITE may
 * go into the open batch instead, sent by req_batch_flush (before it, any
 * other packet flushes the batch). Returns the packets sent or batched (0
 * for -ENOBUFS: try later), or minus a WC status (the WR fails). */
static int req_send_pkt(struct roce_tq *tq, struct roce_swqe *w, uint32_t k, uint32_t n,
			uint32_t turn_left, struct req_batch *b)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	bool ud = qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI;
	bool last = k + 1 >= w->npkts;
	struct roce_hdr_fields f;
	struct roce_path udpath;
	const struct roce_path *path;
	uint32_t off = 0, plen = 0, rd_end = 0;
	uint8_t *payload;
	bool batch = b && n == 1 && req_batchable(tq, w, k, !b->p);
	struct pkt *p;
	int st;

	if (b && b->p) {
		if (batch && req_batch_add(tq, b, w, roce_psn_add(w->first_psn, k), turn_left))
			return 1;
		req_batch_flush(tq, b);
		batch = n == 1 && req_batchable(tq, w, k, true);
	}
	memset(&f, 0, sizeof(f));
	f.opcode = req_opcode(qp->type, w, k);
	f.pkey = ROCE_PKEY_DEFAULT;
	f.psn = roce_psn_add(w->first_psn, k);
	f.imm = w->imm;
	if (ud) {
		f.dqpn = w->dqpn;
		f.deth.qkey = w->qkey;
		f.deth.sqpn = qp->qpn;
		roce_tp_path_from_av(tp, qp, &w->av, &udpath);
		path = &udpath;
		plen = w->length;
	} else {
		f.dqpn = qp->attr.dest_qp_num;
		memcpy(tq->path.smac, tp->rd->mac, 6);
		path = &tq->path;
		off = k * tq->mtu;
		if (roce_wr_is_atomic(w->opcode)) {
			f.atmeth.va = w->remote_addr;
			f.atmeth.rkey = w->rkey;
			if (w->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP) {
				f.atmeth.swap_add = w->swap;
				f.atmeth.compare = w->cmp_add;
			} else {
				f.atmeth.swap_add = w->cmp_add;
			}
			off = 0;
		} else if (w->opcode == VIRTIO_IB_WR_RDMA_READ) {
			uint32_t lo, hi;

			/* Whatever k: the range still missing (a sub-range
			 * of the READ once some responses came). */
			roce_comp_read_range(tq, w, &lo, &hi);
			k = lo;
			off = lo * tq->mtu;
			f.psn = roce_psn_add(w->first_psn, lo);
			f.reth.va = w->remote_addr + off;
			f.reth.rkey = w->rkey;
			f.reth.len = (uint32_t)MIN((uint64_t)hi * tq->mtu, (uint64_t)w->length) -
				     MIN(off, w->length);
			rd_end = hi;
		} else {
			plen = MIN(tq->mtu, w->length - MIN(off, w->length));
			if (k == 0) {
				f.reth.va = w->remote_addr;
				f.reth.rkey = w->rkey;
				f.reth.len = w->length;
			}
			if (w->opcode == VIRTIO_IB_WR_SEND_WITH_INV)
				f.ieth_rkey = w->inv_rkey;
		}
	}
	f.se = req_se(w, last);
	f.ackreq = req_ackreq(tq, w, k, f.psn, turn_left <= 1, roce_recover_window(tq));
	f.ip_id = tp->ip_id;

	p = pkt_alloc();
	if (!p) {
		tp->stats.tx_nobuf++;
		return 0;
	}
	if (roce_pkt_build(p, path, &f, plen, &payload)) {
		tp->stats.tx_build_err++;
		pkt_free(p);
		return -VIRTIO_IB_WC_LOC_QP_OP_ERR;
	}
	if (batch && req_batch_open(tq, b, w, p, &f, payload))
		return 1;
	st = 0;
	if (n > 1)
		st = req_run(tq, w, k, n, turn_left, p, &f, path);
	if (st == 1) {
		tp->stats.tx_runs++;
		tp->stats.tx_run_pkts += n;
		tp->stats.tx_by_ref += n;
		st = 0;
	} else {
		n = 1;
		if (!st && !roce_wr_is_atomic(w->opcode))
			st = req_payload(tq, w, off, p, payload, plen, path);
	}
	if (st) {
		pkt_free(p);
		return -st;
	}
	tp->ip_id = (uint16_t)(tp->ip_id + n);
	/* ICRC only if the frame leaves the process (docs/design.md) */
	roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC);
	if (w->opcode == VIRTIO_IB_WR_RDMA_READ && qp->type == VIRTIO_IB_QPT_RC) {
		/* A READ's first request is numbered when it goes out, not
		 * when the READ started (it may wait for max_rd_atomic while
		 * requests for older READs' missing ranges go out). */
		if (w->rd_seq == w->rd_seq_mark && !w->rd_req_end)
			w->rd_seq_mark = w->rd_seq = tq->rd_seq;
		/* roce_comp.c follows each READ's latest request; an earlier
		 * one that asked again may lose the rest of its answer to it
		 * (the first request's answer goes on) */
		if (w->rd_seq != w->rd_seq_mark + 1)
			w->rd_dup_end = MAX(w->rd_dup_end, w->rd_req_end);
		w->rd_req_lo = k;
		w->rd_req_hi = k;
		w->rd_req_end = rd_end;
		w->rd_seq = ++tq->rd_seq;
	}
	if (qp->type == VIRTIO_IB_QPT_RC)
		req_sent_count(tq, w, f.psn, n);
	if (tq->cc)
		roce_cc_sent(tq, p->len);
	roce_tp_xmit(tp, p, path);
	return (int)n;
}

/* Packets from w->next that may go as one run (1: send it alone): an RC
 * SEND or WRITE whose payload may be referenced, within the turn and the
 * message, without a pacer. */
static uint32_t req_run_len_max(const struct roce_tq *tq, const struct roce_swqe *w,
				uint32_t turn_left)
{
	/* (npkts is set when a WR starts: req_window_wait asks before) */
	uint32_t np = w->started ? w->npkts : roce_req_npkts(w, tq->mtu);

	if (!req_by_ref(tq, w, &tq->path) || tq->cc || roce_wr_is_rd_atomic(w->opcode) ||
	    w->next + 1 >= np)
		return 1;
	return MIN(np - w->next, MIN(turn_left, MIN(tq->tp->run_max, (uint32_t)ROCE_RUN_MAX)));
}

/* ... and within the window now. */
static uint32_t req_run_len(const struct roce_tq *tq, const struct roce_swqe *w,
			    uint32_t turn_left)
{
	uint32_t n = req_run_len_max(tq, w, turn_left), win;
	int32_t used;

	if (n <= 1)
		return 1;
	win = roce_recover_window(tq);
	used = roce_psn_diff(tq->sq_psn, tq->una);
	if (used < 0 || (uint32_t)used >= win)
		return 1;
	return MAX(1u, MIN(n, win - (uint32_t)used));
}

/* Whether w must wait for the send window: it is full, or w's next
 * packets could go as one run to a local device and it has room for fewer
 * than a whole run while packets are in flight (their ACK opens it; if it
 * is lost, the retransmit timer and its probes go on: only while that
 * timer is armed). After a window cut, ACKs free a few PSNs at a time;
 * sending what fits each time would make many short runs, each costing a
 * frame. (A run to the network is split into its frames anyway: there,
 * waiting would only leave the window partly unused.) */
static bool req_window_wait(const struct roce_tq *tq, const struct roce_swqe *w,
			    uint32_t turn_left)
{
	int32_t used = roce_psn_diff(tq->sq_psn, tq->una);
	uint32_t win = roce_recover_window(tq), full;

	if (used >= (int32_t)win)
		return true;
	if (used <= 0 || !loop_timer_armed(&tq->rexmit_timer))
		return false;
	full = req_run_len_max(tq, w, turn_left);
	return full > 1 && (uint32_t)used + full > win &&
	       roce_neigh_local(tq->tp->neigh, tq->path.dgid);
}

/* Whether the destination MAC of w's packets is known (see
 * roce_tp_path_ready). */
static bool req_path_ready(struct roce_tq *tq, const struct roce_swqe *w)
{
	struct rres_qp *qp = tq->qp;
	struct roce_path udpath;

	if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) {
		roce_tp_path_from_av(tq->tp, qp, &w->av, &udpath);
		return roce_tp_path_ready(tq, &udpath);
	}
	return roce_tp_path_ready(tq, &tq->path);
}

/* Run local operation w (REG_MR, LOCAL_INV, BIND_MW) on the device's
 * objects. Returns 0 or its completion status. */
static int req_local_op(struct roce_tq *tq, struct roce_swqe *w)
{
	struct roce_tp *tp = tq->tp;
	struct rres_dev *rd = tp->rd;
	const struct rres_pd *pd = tq->qp->pd;
	int st;

	switch (w->opcode) {
	case VIRTIO_IB_WR_REG_MR:
		if (w->rekey) /* virtio-rdma device: pages set by MAP_MR_SG */
			st = rres_mr_rekey(rd, pd, w->rekey_mrn, w->ext_key, w->ext_access);
		else
			st = rres_mr_fast_reg(rd, pd, w->ext_key, w->remote_addr, w->ext_len,
					      w->page_list, w->ext_access);
		break;
	case VIRTIO_IB_WR_LOCAL_INV:
		st = rres_key_invalidate(rd, pd, w->inv_rkey);
		break;
	default:
		st = rres_mw_bind(rd, pd, w->rkey, w->ext_key, w->remote_addr, w->ext_len,
				  w->ext_access);
		break;
	}
	tp->stats.local_ops++;
	if (st)
		tp->stats.local_op_errors++;
	return st;
}

/* Check the keys of w's SGEs (or of its atomic result buffer) when the
 * requester starts it. Returns 0 or a WC status. */
static int req_check_sges(struct roce_tq *tq, struct roce_swqe *w)
{
	uint64_t total;

	w->sge_unchecked = false;
	if (roce_wr_is_atomic(w->opcode))
		return roce_mem_check_sges(tq, &w->res_sge, 1, VIRTIO_IB_ACCESS_LOCAL_WRITE,
					   &total);
	if (w->inl)
		return 0;
	return roce_mem_check_sges(tq, roce_swqe_sge(w), w->num_sge,
				   w->opcode == VIRTIO_IB_WR_RDMA_READ ?
				   VIRTIO_IB_ACCESS_LOCAL_WRITE : 0, &total);
}

/* una is past sq_psn inside w, which is being sent again: the responder
 * kept what followed a lost packet (roce_keep.c) and acknowledged it. Go on
 * from una instead of sending those packets again. */
static void req_skip_acked(struct roce_tq *tq, struct roce_swqe *w)
{
	int32_t k = roce_psn_diff(tq->una, w->first_psn);

	if (roce_wr_is_rd_atomic(w->opcode) || k <= (int32_t)w->next || (uint32_t)k >= w->npkts)
		return;
	w->next = (uint32_t)k;
	tq->sq_psn = tq->una;
}

uint32_t roce_req_run(struct roce_tq *tq, uint32_t budget, bool *more)
{
	struct rres_qp *qp = tq->qp;
	bool rc = qp->type == VIRTIO_IB_QPT_RC;
	bool ud = qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI;
	struct req_batch b = { .p = NULL };
	uint32_t sent = 0, ops = 0;

	*more = false;
	if (!tq->swqe)
		return 0;
	if (tq->rewind_pending)
		roce_req_rewind(tq);
	if (tq->rd_check)
		roce_comp_read_check_all(tq); /* a READ range request not sent yet */
	while (sent + ops < budget) {
		uint8_t st = qp->attr.qp_state;
		struct roce_swqe *w;
		uint32_t left;
		int r;

		if (tq->sq_cur == tq->sq_tail &&
		    (st != VIRTIO_IB_QPS_RTS || !roce_sq_fetch(tq, budget - sent)))
			break;
		if (tq->rnr_wait || tq->stalled)
			break;
		w = roce_sq_wqe(tq, tq->sq_cur);
		if (w->state == ROCE_WQE_DONE) {
			uint32_t end;

			if (w->bad) {
				/* Nothing after a failed WR may go out: it
				 * completes in order, then the QP errors. */
				tq->stalled = true;
				break;
			}
			/* Acknowledged while being sent again (an ACK from
			 * before a rewind): skip it. */
			end = roce_psn_add(w->first_psn, w->npkts);
			if (roce_psn_diff(end, tq->sq_psn) > 0)
				tq->sq_psn = end;
			tq->sq_cur++;
			continue;
		}
		if (rc && w->started && roce_psn_diff(tq->una, tq->sq_psn) > 0)
			req_skip_acked(tq, w);
		if (rc && w->opcode == VIRTIO_IB_WR_RDMA_READ) {
			/* A READ is one request: it may go while its responses
			 * fit the completer's window of kept responses. */
			if (tq->sq_psn != tq->una &&
			    roce_psn_diff(roce_psn_add(tq->sq_psn, roce_req_npkts(w, tq->mtu)),
					  tq->una) > ROCE_TP_RD_WINDOW)
				break;
		} else if (rc && req_window_wait(tq, w, budget - sent - ops)) {
			break;
		}
		/* No frame without the peer's MAC: wait, no PSN consumed. */
		if (!roce_wr_is_local(w->opcode) && !req_path_ready(tq, w))
			break;
		/* Congestion control: the pacer may hold the next packet. */
		if (tq->cc && !roce_cc_may_send(tq))
			break;
		if (w->next == 0) {
			if (st == VIRTIO_IB_QPS_SQD && !w->started)
				break; /* draining: finish started WRs only */
			if ((w->flags & VIRTIO_IB_SEND_FENCE) && tq->rd_out)
				break;
			if (roce_wr_is_local(w->opcode)) {
				/* Runs once, now, after what is before it went
				 * out; consumes no PSN. */
				req_batch_flush(tq, &b);
				w->first_psn = tq->sq_psn;
				w->npkts = 0;
				w->started = true;
				w->state = ROCE_WQE_DONE;
				w->status = (uint8_t)req_local_op(tq, w);
				ops++;
				if (w->status) {
					w->bad = true;
					tq->stalled = true;
					break;
				}
				tq->sq_cur++;
				continue;
			}
			if (w->sge_unchecked && !w->started) {
				int cs = req_check_sges(tq, w);

				if (cs) {
					w->status = (uint8_t)cs;
					w->state = ROCE_WQE_DONE;
					w->bad = true;
					tq->stalled = true;
					break;
				}
			}
			if (!w->started) {
				/* (kept when sent again: what arrived stays) */
				w->rd_rcvd = 0;
				w->rd_hi = 0;
				w->rd_req_lo = w->rd_req_hi = w->rd_req_end = 0;
				w->rd_dup_end = 0;
				w->rd_seq_mark = w->rd_seq = tq->rd_seq;
			}
			w->first_psn = tq->sq_psn;
			w->npkts = ud ? 1 : roce_req_npkts(w, tq->mtu);
			w->started = true;
		}
		/* Nothing was unacknowledged: the retransmit timeout counts
		 * from now, not from the last ACK (a QP may wait long for its
		 * turn in the middle of a message). */
		if (rc && tq->una == tq->sq_psn) {
			uint64_t now = tq->tp->loop ? loop_now_ns() : 0;

			/* Nothing ever sent beyond (not a resend after a
			 * rewind): a fresh start. */
			if (tq->psn_hwm == tq->sq_psn)
				tq->advance_ns = now;
			if (!now)
				tq->progress_ns = 0;
			else
				roce_comp_timer_restart(tq, now);
		}
		if (roce_wr_is_rd_atomic(w->opcode) &&
		    tq->rd_out >= MAX(1u, (uint32_t)qp->attr.max_rd_atomic))
			break;
		if (roce_wr_is_rd_atomic(w->opcode) && w->rd_rcvd >= w->npkts) {
			/* Sent again after a rewind, its answer all in (an
			 * older READ's is not): nothing to ask; it still
			 * counts. */
			tq->sq_psn = roce_psn_add(w->first_psn, w->npkts);
			w->next = w->npkts;
			w->state = ROCE_WQE_SENT;
			tq->rd_out++;
			tq->sq_cur++;
			continue;
		}
		/* The last packet of a turn asks for an ACK: the QP may not
		 * send again for a while, and its packets must not wait for the
		 * retransmit timer to be acknowledged. */
		left = budget - sent - ops;
		r = req_send_pkt(tq, w, w->next,
				 rc ? req_run_len(tq, w, left) :
				 ud ? 1 : req_run_len_max(tq, w, left), left, &b);
		if (r == 0) {
			*more = true;
			break;
		}
		if (r < 0) {
			w->status = (uint8_t)-r;
			w->state = ROCE_WQE_DONE;
			w->bad = true;
			tq->stalled = true;
			break;
		}
		sent += (uint32_t)r;
		if (roce_wr_is_rd_atomic(w->opcode)) {
			tq->sq_psn = roce_psn_add(w->first_psn, w->npkts);
			w->next = w->npkts;
			w->state = ROCE_WQE_SENT;
			tq->rd_out++;
			tq->sq_cur++;
		} else {
			tq->sq_psn = roce_psn_add(tq->sq_psn, (uint32_t)r);
			w->next += (uint32_t)r;
			if (w->next == w->npkts) {
				/* (UC: done when no frame refers to it) */
				w->state = rc || w->refs ? ROCE_WQE_SENT : ROCE_WQE_DONE;
				tq->sq_cur++;
			}
		}
	}
	req_batch_flush(tq, &b);
	if (sent + ops >= budget)
		*more = true;
	if (rc && sent)
		roce_comp_arm_timer(tq);
	roce_comp_drain(tq);
	return sent;
}

bool roce_req_resend_psn(struct roce_tq *tq, uint32_t psn, bool rd_atomic_ok)
{
	if (tq->qp->type != VIRTIO_IB_QPT_RC || !tq->swqe)
		return false;
	for (uint32_t i = tq->sq_head; i != tq->sq_tail; i++) {
		struct roce_swqe *w = roce_sq_wqe(tq, i);
		int32_t k;

		if (!w->started)
			break;
		k = roce_psn_diff(psn, w->first_psn);
		if (k < 0 || (uint32_t)k >= MAX(w->npkts, 1u))
			continue;
		if (roce_wr_is_rd_atomic(w->opcode)) {
			if (!rd_atomic_ok || w->rd_rcvd >= w->npkts)
				return false;
			k = 0; /* one request packet for all its PSNs */
		} else if ((uint32_t)k >= w->next && w->state != ROCE_WQE_SENT &&
			   w->state != ROCE_WQE_DONE) {
			return false; /* not sent yet */
		}
		if (w->state == ROCE_WQE_DONE && w->bad)
			return false;
		return req_send_pkt(tq, w, (uint32_t)k, 1, 1, NULL) > 0;
	}
	return false;
}

void roce_req_resend_last(struct roce_tq *tq, uint32_t from)
{
	uint32_t rd_psn = 0;
	bool rd = false;

	for (uint32_t i = tq->sq_cur + 1; i-- != tq->sq_head;) {
		struct roce_swqe *w;
		uint32_t sent, last;

		if (i == tq->sq_tail)
			continue;
		w = roce_sq_wqe(tq, i);
		sent = w->state == ROCE_WQE_SENT || w->state == ROCE_WQE_DONE ? w->npkts :
		       MIN(w->next, w->npkts);
		if (!w->started || !sent || w->bad)
			continue;
		last = roce_psn_add(w->first_psn, sent - 1);
		if (roce_psn_diff(last, from) < 0)
			break;
		if (!roce_wr_is_rd_atomic(w->opcode)) {
			(void)roce_req_resend_psn(tq, last, false);
			return;
		}
		if (!rd) {
			rd = true;
			rd_psn = w->first_psn;
		}
	}
	/* only READ or atomic requests after from: the last of them */
	if (rd)
		(void)roce_req_resend_psn(tq, rd_psn, true);
}

int roce_req_read_fill(struct roce_tq *tq, struct roce_swqe *w)
{
	int r;

	if (!w->started || w->rd_rcvd >= w->npkts || w->bad)
		return -1;
	r = req_send_pkt(tq, w, w->rd_rcvd, 1, 1, NULL);
	return r > 0 ? 1 : r == 0 ? 0 : -1;
}

void roce_req_rewind(struct roce_tq *tq)
{
	struct roce_swqe *w;
	uint32_t i, end;
	int32_t k;

	tq->rewind_pending = false;
	tq->nak_hold = false; /* everything goes again */
	if (tq->qp->type != VIRTIO_IB_QPT_RC || !tq->swqe || tq->una == tq->sq_psn)
		return;
	end = tq->sq_cur;
	if (end != tq->sq_tail && roce_sq_wqe(tq, end)->next > 0)
		end++;
	for (i = tq->sq_head; i != end; i++) {
		w = roce_sq_wqe(tq, i);
		if (w->state == ROCE_WQE_DONE)
			continue;
		if (roce_wr_is_rd_atomic(w->opcode) && w->state == ROCE_WQE_SENT && tq->rd_out)
			tq->rd_out--;
		w->state = ROCE_WQE_POSTED;
		w->next = 0;
	}
	for (i = tq->sq_head; i != end; i++)
		if (roce_sq_wqe(tq, i)->state != ROCE_WQE_DONE)
			break;
	if (i == end)
		return;
	w = roce_sq_wqe(tq, i);
	if (w->opcode == VIRTIO_IB_WR_RDMA_READ) {
		k = (int32_t)w->rd_rcvd;
		roce_comp_read_rerequested(tq, w);
	} else {
		k = roce_psn_diff(tq->una, w->first_psn);
		if (k < 0 || (uint32_t)k >= w->npkts)
			k = 0;
	}
	w->next = (uint32_t)k;
	tq->sq_cur = i;
	tq->sq_psn = roce_psn_add(w->first_psn, (uint32_t)k);
	tq->una = tq->sq_psn;
	tq->stalled = false;
	tq->tp->stats.rewinds++;
	roce_tp_schedule(tq);
}
