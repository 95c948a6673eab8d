/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder: request packets (SEND, RDMA WRITE, RDMA READ) for a QP.
 *
 * RC, by PSN against the expected PSN (epsn):
 *  - psn == epsn: check the opcode sequence, then execute: a SEND fills the
 *    receive WQE popped at its first packet (none: RNR NAK with the QP's
 *    min_rnr_timer); a WRITE checks the R_Key, access and bounds of its RETH
 *    then copies each packet; a WRITE with immediate needs a receive WQE at
 *    its last packet; a READ takes a responder resource (ring of
 *    max_dest_rd_atomic, room for atomics) and is answered from it by
 *    roce_resp_run, paced by the QP budget.
 *  - psn > epsn: one NAK (PSN sequence error) until epsn arrives, again
 *    when the stream goes back (what was sent again lost too), and every
 *    ROCE_TP_RENAK_EVERY packets (docs/design.md "Loss recovery").
 *  - psn < epsn: duplicate. SEND/WRITE are acknowledged again; a READ
 *    (any part of the original, from a PSN of it) is answered from its
 *    saved resource before anything still to be sent, which goes on after
 *    it, skipping what the duplicate covered; nothing else stops.
 *  - ACKs are coalesced: a packet with AckReq (or a duplicate) sets the
 *    pending ACK; it goes out after the current receive batch, behind any
 *    READ responses still being sent (responses leave in PSN order).
 *  - Errors (class C): bad R_Key / access / bounds -> NAK remote access
 *    error; bad length or opcode sequence, unsupported opcode -> NAK invalid
 *    request (a receive WQE in progress completes with LOC_LEN_ERR or
 *    REM_INV_REQ_ERR); a bad receive WQE or a local memory fault -> NAK
 *    remote operational error. Then the QP goes to ERR.
 *  - Atomics (ROCE_EXT): checked in the order of docs/spec.md "Atomics"
 *    (QP and key rights over [VA, VA + 8), alignment, a free responder
 *    resource), executed with the host's atomic instructions on the driver's
 *    memory, and answered (ATOMIC ACKNOWLEDGE) from a resource of the same
 *    ring as READs, which keeps {PSN, original value}: a duplicate is
 *    answered from it and never executed again; if the resource was
 *    recycled the duplicate is dropped.
 *  - SEND with Invalidate (ROCE_EXT + MEM_MGT_EXTENSIONS): after the last
 *    packet is placed, the IETH's key is invalidated; the receive completes
 *    with WITH_INV and the key, or (the key cannot be invalidated) with
 *    REM_INV_REQ_ERR after a NAK Invalid Request.
 *  - Errors not reported by a receive completion raise QP_REQ_ERR (NAK
 *    Invalid Request) or QP_ACCESS_ERR (NAK Remote Access Error); the first
 *    request packet of an RC/UC QP in RTR raises COMM_EST (ROCE_EXT only).
 * UC: no ACKs. A PSN gap drops the message in progress; the receiver
 *  resynchronises on the next FIRST/ONLY; an older PSN (duplicate or late)
 *  is dropped. Length or R_Key errors drop the message silently; a missing
 *  receive WQE drops it (no RNR); a bad receive WQE or a fault while placing
 *  into it completes it with that status and moves the QP to ERR.
 * SEND and RDMA WRITE take one check chain for RC and UC (resp_exec: opcode
 *  sequence, receive WQE, length, R_Key, placement, completion); the first
 *  failing check names a state (enum resp_state) and resp_fail turns it into
 *  the RC NAK or the UC drop.
 * UD: Q_Key must match; payload at most the port MTU; the first 40 bytes of
 *  the receive buffer get the GRH (IPv6 header, or 20 zero bytes and the
 *  IPv4 header); no receive WQE or a too small one drops the datagram.
 */
#include "roce/roce_tp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define GRH_LEN 40

/* Atomic targets are little-endian 64-bit integers (docs/spec.md "Atomics"):
 * the host's own atomic instructions implement them only on such a host. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "atomics need a little-endian host");

int roce_resp_init(struct roce_tq *tq)
{
	tq->res = NULL;
	tq->nres = 0;
	return 0;
}

void roce_resp_fini(struct roce_tq *tq)
{
	roce_keep_flush(tq);
	free(tq->res);
	tq->res = NULL;
	tq->nres = 0;
}

void roce_resp_reset(struct roce_tq *tq)
{
	struct rres_qp *qp = tq->qp;
	uint32_t n = 0;

	roce_keep_flush(tq);
	tq->epsn = qp->attr.rq_psn & ROCE_PSN_MASK;
	tq->msn = 0;
	tq->rsp_msg = ROCE_RSP_NONE;
	tq->rsp_off = 0;
	tq->nak_sent = false;
	tq->nak_rnr = false;
	tq->ooo_since_nak = 0;
	tq->rsp_psn_hwm = tq->epsn;
	tq->uc_drop = false;
	tq->ack_pending = false;
	tq->comm_est = false;
	if (qp->type == VIRTIO_IB_QPT_RC)
		n = MAX(1u, (uint32_t)qp->attr.max_dest_rd_atomic);
	if (n != tq->nres) {
		free(tq->res);
		tq->res = n ? calloc(n, sizeof(*tq->res)) : NULL;
		tq->nres = tq->res ? n : 0;
	} else if (n) {
		memset(tq->res, 0, n * sizeof(*tq->res));
	}
	tq->res_next = 0;
	tq->res_active = 0;
}

int roce_resp_resize(struct roce_tq *tq)
{
	struct rres_qp *qp = tq->qp;
	struct roce_rsp_res *n;
	uint32_t want, keep, i;

	if (qp->type != VIRTIO_IB_QPT_RC)
		return 0;
	want = MAX(1u, (uint32_t)qp->attr.max_dest_rd_atomic);
	if (want == tq->nres)
		return 0;
	n = calloc(want, sizeof(*n));
	if (!n)
		return -ENOMEM;
	/* The newest min(old, new) resources, oldest first: slot
	 * res_next % nres is the oldest of the old ring. */
	keep = MIN(want, tq->nres);
	tq->res_active = 0;
	for (i = 0; i < keep; i++) {
		n[i] = tq->res[(tq->res_next + tq->nres - keep + i) % tq->nres];
		tq->res_active += n[i].active;
	}
	free(tq->res);
	tq->res = n;
	tq->nres = want;
	tq->res_next = keep % want;
	return 0;
}

bool roce_resp_busy(const struct roce_tq *tq)
{
	return tq->res_active || tq->ack_pending;
}

/* ---- output --------------------------------------------------------------- */

/* An ACK or ATOMIC ACKNOWLEDGE frame (no payload), its ICRC left to the
 * switch for frames that leave the process (docs/design.md). */
static int resp_build_bare(struct pkt *p, const struct roce_path *path,
			   const struct roce_hdr_fields *f)
{
	if (roce_pkt_build(p, path, f, 0, NULL))
		return -EINVAL;
	return roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC);
}

static void resp_send_ack(struct roce_tq *tq, uint8_t syndrome, uint32_t psn)
{
	struct roce_tp *tp = tq->tp;
	struct roce_hdr_fields f;
	struct pkt *p;

	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_ACKNOWLEDGE;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = tq->qp->attr.dest_qp_num;
	f.psn = psn & ROCE_PSN_MASK;
	f.aeth.syndrome = syndrome;
	f.aeth.msn = tq->msn;
	f.ip_id = tp->ip_id++;
	p = pkt_alloc();
	if (!p) {
		tp->stats.tx_nobuf++;
		return;
	}
	memcpy(tq->path.smac, tp->rd->mac, 6);
	if (resp_build_bare(p, &tq->path, &f)) {
		tp->stats.tx_build_err++;
		pkt_free(p);
		return;
	}
	switch (syndrome & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK:
		tp->stats.acks_sent++;
		break;
	case ROCE_AETH_RNR_NAK:
		tp->stats.rnr_naks_sent++;
		break;
	default:
		tp->stats.naks_sent++;
		break;
	}
	roce_tp_xmit(tp, p, &tq->path);
}

/* Queue the (coalesced) acknowledgement: the latest wins, except that an
 * ACK does not replace a NAK for a later or equal PSN. */
static void resp_set_ack(struct roce_tq *tq, uint8_t syndrome, uint32_t psn)
{
	if (tq->ack_pending && (tq->ack_syndrome & ROCE_AETH_TYPE_MASK) != ROCE_AETH_ACK &&
	    (syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK &&
	    roce_psn_diff(psn, tq->ack_psn) < 0)
		return;
	tq->ack_pending = true;
	tq->ack_syndrome = syndrome;
	tq->ack_psn = psn & ROCE_PSN_MASK;
	roce_tp_schedule(tq);
}

void roce_resp_flush_ack(struct roce_tq *tq)
{
	if (!tq->ack_pending || tq->res_active)
		return;
	tq->ack_pending = false;
	/* An ACK covers everything received in order so far. */
	if ((tq->ack_syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK)
		tq->ack_psn = roce_psn_add(tq->epsn, ROCE_PSN_MASK);
	resp_send_ack(tq, tq->ack_syndrome, tq->ack_psn);
}

/* Completes the receive WQE in progress with an error status. */
static void resp_recv_error(struct roce_tq *tq, uint8_t status)
{
	struct roce_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.status = status;
	wc.opcode = VIRTIO_IB_WC_RECV;
	roce_rq_complete(tq, &wc);
}

/* Class C error: complete the receive WQE in progress with rwqe_status
 * (if not 0), NAK, QP to ERR. */
static void resp_error(struct roce_tq *tq, uint8_t nak, uint32_t psn, uint8_t rwqe_status)
{
	struct rres_qp *qp = tq->qp;
	bool reported = rwqe_status && tq->rwqe->valid;

	if (reported)
		resp_recv_error(tq, rwqe_status);
	tq->ack_pending = false;
	resp_send_ack(tq, nak, psn);
	tq->rsp_msg = ROCE_RSP_NONE;
	roce_tp_qp_error(tq, false);
	/* After the state change it reports; nothing without ROCE_EXT. */
	if (!reported && nak == ROCE_AETH_NAK_INVALID_REQ)
		rres_event_raise(tq->tp->rd, &qp->ev, VIRTIO_IB_EVENT_QP_REQ_ERR);
	else if (!reported && nak == ROCE_AETH_NAK_REM_ACCESS_ERR)
		rres_event_raise(tq->tp->rd, &qp->ev, VIRTIO_IB_EVENT_QP_ACCESS_ERR);
}

/* Whether the responder takes SEND with Invalidate. */
static bool resp_inv_ok(const struct rres_dev *rd)
{
	return rd->ext && (rd->attr.ext_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);
}

/* ---- opcode sequence ----------------------------------------------------- */

static bool resp_seq_ok(uint8_t msg, uint32_t m)
{
	switch (msg) {
	case ROCE_RSP_SEND:
		return (m & ROCE_OPF_SEND) && !(m & ROCE_OPF_FIRST);
	case ROCE_RSP_WRITE:
		return (m & ROCE_OPF_WRITE) && !(m & ROCE_OPF_FIRST);
	default:
		return m & ROCE_OPF_FIRST;
	}
}

static uint8_t rnr_syndrome(const struct rres_qp *qp)
{
	return ROCE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & ROCE_AETH_VALUE_MASK);
}

static uint32_t npkts_of(uint32_t len, uint32_t mtu)
{
	return len && mtu ? (uint32_t)(((uint64_t)len + mtu - 1) / mtu) : 1;
}

/* ---- SEND and RDMA WRITE: one check chain for RC and UC --------------------- */

/*
 * Where the checks of a SEND or RDMA WRITE packet ended. resp_send and
 * resp_write run the chain (opcode, receive WQE, length, R_Key, placement,
 * completion) and return the first failing state; resp_fail turns it into
 * the transport's answer: a NAK and the QP to ERR on RC, a dropped message
 * on UC.
 */
enum resp_state {
	RESP_ST_DONE,        /* placed; completed if it was the message's last */
	RESP_ST_RING_BROKEN, /* the receive ring broke: the QP is in ERR already */
	RESP_ST_OPCODE_SEQ,  /* opcode out of sequence for the message in progress */
	RESP_ST_NO_INV,      /* SEND with Invalidate without the feature */
	RESP_ST_NO_RWQE,     /* no receive WQE posted */
	RESP_ST_RWQE_BAD,    /* the receive WQE is invalid (its status) */
	RESP_ST_LEN,         /* payload length against the MTU, message or WQE */
	RESP_ST_RKEY,        /* R_Key, access rights or bounds of the target */
	RESP_ST_MEM,         /* memory fault while placing the payload */
	RESP_ST_INV,         /* the IETH's key could not be invalidated */
};

/* Completes the receive WQE in progress successfully: opcode, length and
 * the packet's immediate data or (IETH) the invalidated key inv_key. */
static void resp_recv_done(struct roce_tq *tq, const struct roce_pkt_info *pi,
			   uint8_t opcode, uint32_t byte_len, uint32_t inv_key)
{
	struct roce_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	if (pi->mask & ROCE_OPF_IMMDT) {
		wc.imm = roce_immdt_raw(pi->immdt);
		wc.wc_flags = VIRTIO_IB_WC_WITH_IMM;
	}
	if (pi->mask & ROCE_OPF_IETH) {
		wc.imm = htole32(inv_key);
		wc.wc_flags = VIRTIO_IB_WC_WITH_INV;
	}
	wc.solicited = pi->se;
	roce_rq_complete(tq, &wc);
}

/* The one receive-WQE fetch: tq->rwqe valid and usable, or why not. */
static enum resp_state resp_get_rwqe(struct roce_tq *tq, uint8_t *status)
{
	switch (roce_rq_get(tq)) {
	case ROCE_RQ_BROKEN:
		return RESP_ST_RING_BROKEN;
	case ROCE_RQ_EMPTY:
		return RESP_ST_NO_RWQE;
	case ROCE_RQ_READY:
		break;
	}
	if (tq->rwqe->status) {
		*status = tq->rwqe->status;
		return RESP_ST_RWQE_BAD;
	}
	return RESP_ST_DONE;
}

/* The one length check: the packet against the path MTU (only a message's
 * last packet may be shorter), then the message so far against limit (exact:
 * its last packet must end there). The status a receive WQE in progress
 * completes with: pkt_status, msg_status. */
static enum resp_state resp_check_len(struct roce_tq *tq, const struct roce_pkt_info *pi,
				      uint64_t limit, bool exact, uint8_t pkt_status,
				      uint8_t msg_status, uint8_t *status)
{
	uint32_t plen = pi->payload_len;
	bool last = pi->mask & ROCE_OPF_LAST;

	if (plen > tq->mtu || (!last && plen != tq->mtu)) {
		*status = pkt_status;
		return RESP_ST_LEN;
	}
	if ((uint64_t)tq->rsp_off + plen > limit || (exact && last && tq->rsp_off + plen != limit)) {
		*status = msg_status;
		return RESP_ST_LEN;
	}
	return RESP_ST_DONE;
}

/* A SEND packet: receive WQE at the first packet, length, placement, and at
 * the last packet the invalidation (IETH) and the completion. */
static enum resp_state resp_send(struct roce_tq *tq, const struct roce_pkt_info *pi,
				 uint8_t *status)
{
	struct roce_rwqe *rw = tq->rwqe;
	uint32_t m = pi->mask, plen = pi->payload_len, key = 0;
	enum resp_state st;
	int rc;

	if ((m & ROCE_OPF_IETH) && !resp_inv_ok(tq->tp->rd))
		return RESP_ST_NO_INV;
	if (m & ROCE_OPF_FIRST) {
		st = resp_get_rwqe(tq, status);
		if (st != RESP_ST_DONE)
			return st;
		tq->rsp_off = 0;
	}
	st = resp_check_len(tq, pi, rw->length, false, VIRTIO_IB_WC_REM_INV_REQ_ERR,
			    VIRTIO_IB_WC_LOC_LEN_ERR, status);
	if (st != RESP_ST_DONE)
		return st;
	rc = roce_mem_payload_to_rwqe(tq, rw, tq->rsp_off, pi);
	if (rc) {
		*status = (uint8_t)rc;
		return RESP_ST_MEM;
	}
	tq->rsp_off += plen;
	if (!(m & ROCE_OPF_LAST))
		return RESP_ST_DONE;
	if (m & ROCE_OPF_IETH) {
		key = roce_ieth_rkey(pi->ieth);
		if (rres_key_invalidate(tq->tp->rd, tq->qp->pd, key)) {
			*status = VIRTIO_IB_WC_REM_INV_REQ_ERR;
			return RESP_ST_INV;
		}
		tq->tp->stats.remote_inv_ok++;
	}
	resp_recv_done(tq, pi, VIRTIO_IB_WC_RECV, tq->rsp_off, key);
	return RESP_ST_DONE;
}

/* An RDMA WRITE packet: the RETH's R_Key over the whole message at the first
 * packet, length, a receive WQE for the immediate data at the last, the
 * R_Key again for this packet's range, placement, completion. */
static enum resp_state resp_write(struct roce_tq *tq, const struct roce_pkt_info *pi,
				  uint8_t *status)
{
	struct roce_tp *tp = tq->tp;
	uint32_t m = pi->mask, plen = pi->payload_len;
	bool imm_last = (m & ROCE_OPF_LAST) && (m & ROCE_OPF_IMMDT);
	enum resp_state st;
	struct rres_mr *mr = NULL;

	if (m & ROCE_OPF_FIRST) {
		uint64_t va = roce_reth_va(pi->reth);
		uint32_t rkey = roce_reth_rkey(pi->reth), len = roce_reth_len(pi->reth);

		if (len > tp->rd->attr.max_msg_sz)
			return RESP_ST_LEN;
		if (len && !(mr = roce_mem_rkey(tq, rkey, va, len, VIRTIO_IB_ACCESS_REMOTE_WRITE)))
			return RESP_ST_RKEY;
		tq->wr_va = va;
		tq->wr_rkey = rkey;
		tq->wr_len = len;
		tq->rsp_off = 0;
	}
	st = resp_check_len(tq, pi, tq->wr_len, true, 0, 0, status);
	if (st != RESP_ST_DONE)
		return st;
	if (imm_last) {
		st = resp_get_rwqe(tq, status);
		if (st != RESP_ST_DONE)
			return st;
	}
	if (plen) {
		/* (the first packet's range lies in the message's, checked above) */
		if (!mr)
			mr = roce_mem_rkey(tq, tq->wr_rkey, tq->wr_va + tq->rsp_off, plen,
					   VIRTIO_IB_ACCESS_REMOTE_WRITE);
		if (!mr)
			return RESP_ST_RKEY;
		if (roce_mem_payload_to_mr(tp, mr, tq->wr_va + tq->rsp_off, pi))
			return RESP_ST_MEM;
	}
	tq->rsp_off += plen;
	if (imm_last)
		resp_recv_done(tq, pi, VIRTIO_IB_WC_RECV_RDMA_WITH_IMM, tq->wr_len, 0);
	return RESP_ST_DONE;
}

/* The transport's answer to a failed check (the one place where RC NAKs and
 * UC drops): RC NAKs (RNR NAK for a missing receive WQE, else a class C NAK
 * with the QP to ERR and the receive WQE in progress completed with status);
 * UC drops the message (a bad receive WQE or a fault while placing into it
 * still completes it with status and moves the QP to ERR). */
static void resp_fail(struct roce_tq *tq, const struct roce_pkt_info *pi, enum resp_state st,
		      uint8_t status)
{
	struct roce_tp *tp = tq->tp;
	bool rc = tq->qp->type == VIRTIO_IB_QPT_RC;
	uint32_t psn = pi->psn;

	switch (st) {
	case RESP_ST_DONE:
		return;
	case RESP_ST_RING_BROKEN:
		break;
	case RESP_ST_OPCODE_SEQ:
		if (rc) {
			tp->stats.rx_opcode_seq++;
			resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn,
				   tq->rsp_msg == ROCE_RSP_SEND ? VIRTIO_IB_WC_REM_INV_REQ_ERR : 0);
			return;
		}
		tp->stats.rx_uc_dropped++;
		break;
	case RESP_ST_NO_INV:
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, 0);
			return;
		}
		tp->stats.rx_uc_dropped++;
		break;
	case RESP_ST_NO_RWQE:
		if (rc) {
			tq->nak_sent = true;
			tq->nak_rnr = true;
			resp_set_ack(tq, rnr_syndrome(tq->qp), psn);
			return;
		}
		tp->stats.rx_no_rwqe++;
		break;
	case RESP_ST_RWQE_BAD:
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_REM_OP_ERR, psn, status);
			return;
		}
		resp_recv_error(tq, status);
		tq->rsp_msg = ROCE_RSP_NONE;
		roce_tp_qp_error(tq, false);
		return;
	case RESP_ST_LEN:
		tp->stats.rx_len_err++;
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, status);
			return;
		}
		break;
	case RESP_ST_RKEY:
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_REM_ACCESS_ERR, psn, 0);
			return;
		}
		tp->stats.rx_uc_dropped++;
		break;
	case RESP_ST_MEM:
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_REM_OP_ERR, psn, status);
			return;
		}
		if (status) {
			resp_recv_error(tq, status);
			tq->rsp_msg = ROCE_RSP_NONE;
			roce_tp_qp_error(tq, false);
			return;
		}
		tp->stats.rx_uc_dropped++;
		break;
	case RESP_ST_INV:
		tp->stats.remote_inv_failed++;
		if (rc) {
			resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, status);
			return;
		}
		break;
	}
	tq->rsp_msg = ROCE_RSP_NONE;
}

/* A SEND or RDMA WRITE packet at the expected PSN, for RC and UC: the check
 * chain, then the message goes on, ends (MSN), and on RC is acknowledged
 * when the packet asks for it. */
static void resp_exec(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	uint32_t m = pi->mask;
	uint8_t status = 0;
	enum resp_state st;

	if (!resp_seq_ok(tq->rsp_msg, m))
		st = RESP_ST_OPCODE_SEQ;
	else if (m & ROCE_OPF_SEND)
		st = resp_send(tq, pi, &status);
	else
		st = resp_write(tq, pi, &status);
	if (st != RESP_ST_DONE) {
		resp_fail(tq, pi, st, status);
		return;
	}
	tq->epsn = roce_psn_add(pi->psn, 1);
	if (m & ROCE_OPF_LAST) {
		tq->msn = (tq->msn + 1) & 0xFFFFFF;
		tq->rsp_msg = ROCE_RSP_NONE;
	} else {
		tq->rsp_msg = (m & ROCE_OPF_SEND) ? ROCE_RSP_SEND : ROCE_RSP_WRITE;
	}
	if (tq->qp->type == VIRTIO_IB_QPT_RC && pi->ackreq)
		resp_set_ack(tq, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, pi->psn);
}

/* n in-order packets of a run (roce_run.c) placed with one copy per
 * contiguous piece: what resp_rc / resp_exec do for each, checked for them
 * together where that is the same (lengths add up, one R_Key range holds
 * every packet's). Any other case, or a failing check, returns 0 having
 * changed nothing but bytes the per-packet path places again. */
uint32_t roce_resp_rx_bulk(struct roce_tq *tq, const struct roce_pkt_info *pi, uint32_t n,
			   bool last, int32_t ack_k)
{
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;
	uint32_t m = pi->mask, total = pi->payload_len, plast;
	struct rres_mr *mr;

	if ((qp->type != VIRTIO_IB_QPT_RC && qp->type != VIRTIO_IB_QPT_UC) ||
	    st < VIRTIO_IB_QPS_RTR || st == VIRTIO_IB_QPS_ERR ||
	    !tq->comm_est || pi->psn != tq->epsn || !resp_seq_ok(tq->rsp_msg, m) || !n ||
	    (uint64_t)total <= (uint64_t)(n - 1) * tq->mtu)
		return 0;
	plast = total - (n - 1) * tq->mtu;
	if (plast > tq->mtu || (!last && plast != tq->mtu))
		return 0;
	if (m & ROCE_OPF_SEND) {
		if (last || (uint64_t)tq->rsp_off + total > tq->rwqe->length ||
		    roce_mem_payload_to_rwqe(tq, tq->rwqe, tq->rsp_off, pi))
			return 0;
	} else {
		if ((last && (m & ROCE_OPF_IMMDT)) || (uint64_t)tq->rsp_off + total > tq->wr_len ||
		    (last && tq->rsp_off + total != tq->wr_len))
			return 0;
		mr = roce_mem_rkey(tq, tq->wr_rkey, tq->wr_va + tq->rsp_off, total,
				   VIRTIO_IB_ACCESS_REMOTE_WRITE);
		if (!mr || roce_mem_payload_to_mr(tq->tp, mr, tq->wr_va + tq->rsp_off, pi))
			return 0;
	}
	if (pi->payload_ref)
		tq->tp->stats.rx_by_ref += n - 1; /* one counted per packet */
	tq->nak_sent = false;
	tq->rsp_off += total;
	tq->epsn = roce_psn_add(pi->psn, n);
	if (last) {
		tq->msn = (tq->msn + 1) & 0xFFFFFF;
		tq->rsp_msg = ROCE_RSP_NONE;
	} else {
		tq->rsp_msg = (m & ROCE_OPF_SEND) ? ROCE_RSP_SEND : ROCE_RSP_WRITE;
	}
	if (ack_k >= 0 && qp->type == VIRTIO_IB_QPT_RC)
		resp_set_ack(tq, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
			     roce_psn_add(pi->psn, (uint32_t)ack_k));
	return n;
}

/* Packets psn.. of a run beyond epsn while a sequence NAK is out (the tail
 * of a run after a lost packet): what resp_rc does for each, for as many
 * as it can at once: counted, no NAK again. Stops before a packet that
 * would send the NAK again (resp_renak_due; its time rule is decided with
 * the clock at the first packet). ackreq: bit j, packet j asks for an ACK.
 * Returns the packets done (0: go one by one). */
uint32_t roce_resp_rx_ahead(struct roce_tq *tq, uint32_t psn, uint32_t n, uint64_t ackreq)
{
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;
	uint32_t k;

	if (qp->type != VIRTIO_IB_QPT_RC || st < VIRTIO_IB_QPS_RTR || st == VIRTIO_IB_QPS_ERR ||
	    !tq->comm_est || !tq->nak_sent || tq->nak_rnr || !n ||
	    roce_psn_diff(psn, tq->epsn) <= 0 || roce_psn_diff(psn, tq->ooo_hi) <= 0 ||
	    tq->ooo_since_nak + 1 >= ROCE_TP_RENAK_EVERY)
		return 0;
	k = MIN(n, (uint32_t)(ROCE_TP_RENAK_EVERY - 1 - tq->ooo_since_nak));
	if (k < 64 && (ackreq & ((1ull << k) - 1)) && tq->tp->loop &&
	    loop_pass_ns(tq->tp->loop) - tq->nak_ns >= roce_recover_probe_min(tq) / 2)
		k = (uint32_t)__builtin_ctzll(ackreq); /* that one may NAK again */
	/* all of them beyond epsn (not duplicates across a PSN wrap) */
	if (!k || roce_psn_diff(roce_psn_add(psn, k - 1), tq->epsn) <= 0)
		return 0;
	tq->tp->stats.rx_seq_err += k;
	tq->ooo_since_nak += k;
	tq->ooo_hi = roce_psn_add(psn, k - 1);
	return k;
}

/* ---- RC --------------------------------------------------------------------- */

/* r's active flag (and the QP's count) from its two answers. */
static void resp_res_update(struct roce_tq *tq, struct roce_rsp_res *r)
{
	bool on = r->stream_on || r->dup_on;

	if (on == r->active)
		return;
	r->active = on;
	if (on)
		tq->res_active++;
	else
		tq->res_active--;
}

static void resp_res_stop(struct roce_tq *tq, struct roce_rsp_res *r)
{
	r->stream_on = r->dup_on = false;
	resp_res_update(tq, r);
}

/* A new request's resource: its answer is one segment from psn. */
static void resp_res_start(struct roce_tq *tq, struct roce_rsp_res *r, uint8_t type, uint32_t psn,
			   uint32_t rkey, uint64_t va, uint32_t len, uint32_t n)
{
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->first_psn = psn;
	r->last_psn = roce_psn_add(psn, n - 1);
	r->rkey = rkey;
	r->va = va;
	r->len = len;
	r->stream = (struct roce_rsp_seg){ .psn = psn, .len = len, .va = va, .npkts = n };
	r->stream_on = true;
	resp_res_update(tq, r);
	tq->epsn = roce_psn_add(psn, n);
	tq->msn = (tq->msn + 1) & 0xFFFFFF;
	roce_tp_schedule(tq);
}

/*
 * The responder resource for a new READ or atomic (the slot of the oldest
 * request), or NULL if none is free. A slot still answering a duplicate
 * only is stale: a requester that keeps max_rd_atomic <= max_dest_rd_atomic
 * only sends a new request once it holds the responses of the request
 * max_dest_rd_atomic before it, so that answer is cancelled. A slot still
 * sending its original responses means the requester exceeded
 * max_dest_rd_atomic (NULL: NAK Invalid Request).
 */
static struct roce_rsp_res *resp_res_take(struct roce_tq *tq)
{
	struct roce_rsp_res *r;

	if (!tq->nres)
		return NULL;
	r = &tq->res[tq->res_next % tq->nres];
	if (r->active && !r->stream_on) {
		r->dup_on = false;
		resp_res_update(tq, r);
		tq->tp->stats.stale_replays++;
	}
	return r->active ? NULL : r;
}

static void resp_rc_read(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	uint64_t va = roce_reth_va(pi->reth);
	uint32_t rkey = roce_reth_rkey(pi->reth), len = roce_reth_len(pi->reth);
	uint32_t psn = pi->psn, n;
	struct roce_rsp_res *r;

	if (len > tp->rd->attr.max_msg_sz) {
		tp->stats.rx_len_err++;
		resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, 0);
		return;
	}
	if (len && !roce_mem_rkey(tq, rkey, va, len, VIRTIO_IB_ACCESS_REMOTE_READ)) {
		resp_error(tq, ROCE_AETH_NAK_REM_ACCESS_ERR, psn, 0);
		return;
	}
	r = resp_res_take(tq);
	if (!r) {
		/* More READs outstanding than max_dest_rd_atomic. */
		resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, 0);
		return;
	}
	tq->res_next = (tq->res_next + 1) % tq->nres;
	n = npkts_of(len, tq->mtu);
	resp_res_start(tq, r, ROCE_RES_READ, psn, rkey, va, len, n);
}

static void resp_rc_atomic(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	const struct rres_dev *rd = tp->rd;
	uint64_t va = roce_atmeth_va(pi->atmeth), orig;
	uint32_t rkey = roce_atmeth_rkey(pi->atmeth), psn = pi->psn;
	struct roce_rsp_res *r;
	struct rres_mr *mr;
	uint64_t *p;

	if (!rd->ext || rd->attr.atomic_cap == VIRTIO_IB_ATOMIC_NONE) {
		/* No atomics: what an HCA without them answers. */
		resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, 0);
		return;
	}
	mr = roce_mem_rkey(tq, rkey, va, 8, VIRTIO_IB_ACCESS_REMOTE_ATOMIC);
	if (!mr) {
		tp->stats.atomic_errors++;
		resp_error(tq, ROCE_AETH_NAK_REM_ACCESS_ERR, psn, 0);
		return;
	}
	r = (va & 7) ? NULL : resp_res_take(tq);
	if (!r) {
		/* Misaligned, or more READs and atomics outstanding than
		 * max_dest_rd_atomic. */
		tp->stats.atomic_errors++;
		resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, psn, 0);
		return;
	}
	p = roce_mem_atomic_ptr(tp, mr, va);
	if (!p) {
		tp->stats.atomic_errors++;
		resp_error(tq, ROCE_AETH_NAK_REM_OP_ERR, psn, 0);
		return;
	}
	if (pi->opcode == ROCE_OP_RC_COMPARE_SWAP) {
		orig = roce_atmeth_compare(pi->atmeth);
		/* On failure orig gets the current value; on success it is
		 * the compare value, which was the current value. */
		__atomic_compare_exchange_n(p, &orig, roce_atmeth_swap_add(pi->atmeth), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, roce_atmeth_swap_add(pi->atmeth), __ATOMIC_SEQ_CST);
	}
	tp->stats.atomics_executed++;
	tq->res_next = (tq->res_next + 1) % tq->nres;
	resp_res_start(tq, r, ROCE_RES_ATOMIC, psn, rkey, va, 8, 1);
	r->atomic_orig = orig;
}

/* A duplicate atomic: answered from its saved result, never executed. */
static void resp_rc_dup_atomic(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	struct roce_rsp_res *r = NULL;

	for (uint32_t i = 0; i < tq->nres; i++) {
		struct roce_rsp_res *x = &tq->res[i];

		if (x->type == ROCE_RES_ATOMIC && x->first_psn == pi->psn) {
			r = x;
			break;
		}
	}
	if (!r || r->rkey != roce_atmeth_rkey(pi->atmeth) ||
	    r->va != roce_atmeth_va(pi->atmeth)) {
		/* Recycled (or not the request it answered): no answer; the
		 * requester ends in RETRY_EXC_ERR, never in a second run. */
		tp->stats.atomic_dups_dropped++;
		return;
	}
	tp->stats.atomic_dups_answered++;
	r->dup = r->stream;
	r->dup.next = 0;
	r->dup_on = true;
	resp_res_update(tq, r);
	roce_tp_schedule(tq);
}

static void resp_rc_dup(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	uint32_t psn = pi->psn;

	tp->stats.rx_dup++;
	if (pi->mask & ROCE_OPF_ATOMIC) {
		resp_rc_dup_atomic(tq, pi);
		return;
	}
	if (pi->mask & ROCE_OPF_READ) {
		struct roce_rsp_res *r = NULL;
		uint64_t va = roce_reth_va(pi->reth);
		uint32_t len = roce_reth_len(pi->reth), k, off, n;

		for (uint32_t i = 0; i < tq->nres; i++) {
			struct roce_rsp_res *x = &tq->res[i];

			if (x->type == ROCE_RES_READ && roce_psn_diff(psn, x->first_psn) >= 0 &&
			    roce_psn_diff(psn, x->last_psn) <= 0) {
				r = x;
				break;
			}
		}
		if (!r)
			return; /* too old: its resource was reused */
		k = (uint32_t)roce_psn_diff(psn, r->first_psn);
		off = (uint32_t)MIN((uint64_t)k * tq->mtu, (uint64_t)r->len);
		/* Any part of the original from that PSN on (as rxe takes), in
		 * whole responses unless it runs to the end. */
		if (roce_reth_rkey(pi->reth) != r->rkey || va != r->va + off ||
		    len > r->len - off || (!len && off != r->len) ||
		    (len < r->len - off && len % tq->mtu)) {
			tp->stats.rx_bad_resp++;
			return;
		}
		n = npkts_of(len, tq->mtu);
		r->dup = (struct roce_rsp_seg){ .psn = psn, .len = len, .va = va, .npkts = n };
		r->dup_on = true;
		/* The original answer goes on after it, without what it covers
		 * (a duplicate beyond what it sent yet skips nothing). A second
		 * duplicate before the first was answered replaces it. */
		if (r->stream_on && k <= r->stream.next && k + n > r->stream.next) {
			r->stream.next = k + n;
			r->stream_on = r->stream.next < r->stream.npkts;
		}
		resp_res_update(tq, r);
		tp->stats.dup_reads++;
		/* A loss only if a response from psn on went out already (the
		 * requester also asks again for READs that were not answered
		 * yet). */
		if (roce_psn_diff(psn, tq->rsp_psn_hwm) < 0)
			roce_recover_rsp_loss(tq);
		roce_tp_schedule(tq);
		return;
	}
	/* Already executed: acknowledge again (everything before epsn). */
	resp_set_ack(tq, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
		     roce_psn_add(tq->epsn, ROCE_PSN_MASK));
}

/* The sequence NAK again: at once when the stream goes back (a loss of what
 * was sent again), and, in case it was lost, every ROCE_TP_RENAK_EVERY
 * out-of-sequence packets or for one asking for an ACK (a loss probe) once
 * half a probe interval has passed since it. */
static bool resp_renak_due(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	/* The stream went back to a PSN seen since the NAK: the requester
	 * sent again from epsn and that packet was lost again. */
	if (roce_psn_diff(pi->psn, tq->ooo_hi) <= 0)
		return true;
	tq->ooo_hi = pi->psn;
	if (++tq->ooo_since_nak >= ROCE_TP_RENAK_EVERY)
		return true;
	return pi->ackreq && tq->tp->loop &&
	       loop_pass_ns(tq->tp->loop) - tq->nak_ns >= roce_recover_probe_min(tq) / 2;
}

/* The sequence NAK for a gap at epsn (packet psn beyond it). */
static void resp_seq_gap(struct roce_tq *tq, uint32_t psn)
{
	tq->nak_sent = true;
	tq->nak_rnr = false;
	tq->ooo_since_nak = 0;
	tq->ooo_hi = psn;
	tq->nak_ns = tq->tp->loop ? loop_pass_ns(tq->tp->loop) : 0;
	resp_set_ack(tq, ROCE_AETH_NAK_PSN_SEQ_ERR, tq->epsn);
}

static void resp_rc(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	int32_t d = roce_psn_diff(pi->psn, tq->epsn);
	uint32_t m = pi->mask;

	if (d > 0) {
		/* One NAK per gap; repeated every ROCE_TP_RENAK_EVERY packets
		 * that keep arriving out of sequence, in case it was lost. */
		tp->stats.rx_seq_err++;
		if (!tq->nak_sent || (!tq->nak_rnr && resp_renak_due(tq, pi)))
			resp_seq_gap(tq, pi->psn);
		return;
	}
	if (d < 0) {
		resp_rc_dup(tq, pi);
		return;
	}
	if (!resp_seq_ok(tq->rsp_msg, m)) {
		resp_fail(tq, pi, RESP_ST_OPCODE_SEQ, 0);
		return;
	}
	tq->nak_sent = false;
	if (m & (ROCE_OPF_SEND | ROCE_OPF_WRITE))
		resp_exec(tq, pi);
	else if (m & ROCE_OPF_READ)
		resp_rc_read(tq, pi);
	else if (m & ROCE_OPF_ATOMIC)
		resp_rc_atomic(tq, pi);
	else
		resp_error(tq, ROCE_AETH_NAK_INVALID_REQ, pi->psn, 0);
}

/* The ATOMIC ACKNOWLEDGE of resource r. Returns 0, -ENOBUFS or -EIO. */
static int resp_send_atomic(struct roce_tq *tq, struct roce_rsp_res *r)
{
	struct roce_tp *tp = tq->tp;
	struct roce_hdr_fields f;
	struct pkt *p;

	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = tq->qp->attr.dest_qp_num;
	f.psn = r->stream.psn;
	f.aeth.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	f.aeth.msn = tq->msn;
	f.atmack_orig = r->atomic_orig;
	f.ip_id = tp->ip_id++;
	p = pkt_alloc();
	if (!p) {
		tp->stats.tx_nobuf++;
		return -ENOBUFS;
	}
	memcpy(tq->path.smac, tp->rd->mac, 6);
	resp_res_stop(tq, r);
	if (resp_build_bare(p, &tq->path, &f)) {
		tp->stats.tx_build_err++;
		pkt_free(p);
		resp_error(tq, ROCE_AETH_NAK_REM_OP_ERR, f.psn, 0);
		return -EIO;
	}
	tp->stats.acks_sent++;
	roce_tp_xmit(tp, p, &tq->path);
	return 0;
}

/* The payload of a READ response: a reference to the MR's pages (the
 * requester's completer copies from them; docs/design.md, "One copy between
 * local devices"), or a copy when the path has a UDP checksum or the range
 * has too many pieces. Returns 0 or a WC status. */
static int resp_read_payload(struct roce_tq *tq, struct rres_mr *mr, uint64_t va, struct pkt *p,
			     uint8_t *payload, uint32_t plen)
{
	struct iovec iov[PKT_REF_IOV];
	uint32_t n = 0;

	if (!(tq->path.flags & ROCE_PATH_F_UDP_CSUM)) {
		int st = roce_mem_ref_mr(tq->tp, mr, va, plen, iov, PKT_REF_IOV, &n);

		if (st)
			return st;
		if (n) {
			pkt_ref_attach(p, (uint32_t)(payload - p->data), iov, n, plen);
			tq->tp->stats.tx_by_ref++;
			return 0;
		}
	}
	return roce_mem_from_mr(tq->tp, mr, va, payload, plen);
}

/* The opcode of READ response k of n. */
static uint8_t resp_read_opcode(uint32_t k, uint32_t n)
{
	if (n == 1)
		return ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY;
	if (k == 0)
		return ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST;
	if (k + 1 == n)
		return ROCE_OP_RC_RDMA_READ_RESPONSE_LAST;
	return ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/* Responses k..k+nrun-1 (nrun > 1) of segment sg as one run (roce_run.c)
 * whose packet 0 is p: 1 if it is one now, 0 if the pieces do not fit one
 * (send response k alone). */
static int resp_read_run(struct roce_tq *tq, const struct roce_rsp_seg *sg, struct rres_mr *mr,
			 uint32_t k, uint32_t nrun, struct pkt *p, const struct roce_hdr_fields *f)
{
	struct roce_run *run = roce_run_begin(p);
	uint32_t off = k * tq->mtu, len = MIN(nrun * tq->mtu, sg->len - off), niov = 0;

	if (!run || roce_mem_ref_mr(tq->tp, mr, sg->va + off, len, run->iov, ROCE_RUN_IOV,
				    &niov) || !niov)
		return 0;
	run->path = tq->path;
	run->f = *f;
	run->ackreq = 0;
	run->se = 0;
	for (uint32_t j = 0; j < nrun; j++)
		run->op[j] = resp_read_opcode(k + j, sg->npkts);
	roce_run_set_mtu_plen(run, nrun, tq->mtu, len);
	roce_run_seal(p, nrun, niov, len);
	return 1;
}

/* READ responses of segment sg (the stream or the dup) of resource r from
 * sg->next: one packet, or a run of up to nrun. Returns the packets sent,
 * -ENOBUFS or -EIO (the QP failed). */
static int resp_send_read(struct roce_tq *tq, struct roce_rsp_res *r, struct roce_rsp_seg *sg,
			  uint32_t nrun)
{
	struct roce_tp *tp = tq->tp;
	uint32_t k = sg->next, n = sg->npkts, off = k * tq->mtu, plen;
	struct roce_hdr_fields f;
	struct rres_mr *mr = NULL;
	uint8_t *payload;
	struct pkt *p;

	plen = MIN(tq->mtu, sg->len - MIN(off, sg->len));
	nrun = MIN(nrun, n - k);
	memset(&f, 0, sizeof(f));
	f.opcode = resp_read_opcode(k, n);
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = tq->qp->attr.dest_qp_num;
	f.psn = roce_psn_add(sg->psn, k);
	f.aeth.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	f.aeth.msn = tq->msn;
	f.ip_id = tp->ip_id;
	p = pkt_alloc();
	if (!p) {
		tp->stats.tx_nobuf++;
		return -ENOBUFS;
	}
	memcpy(tq->path.smac, tp->rd->mac, 6);
	if (roce_pkt_build(p, &tq->path, &f, plen, &payload)) {
		tp->stats.tx_build_err++;
		pkt_free(p);
		resp_res_stop(tq, r);
		resp_error(tq, ROCE_AETH_NAK_REM_OP_ERR, f.psn, 0);
		return -EIO;
	}
	if (nrun > 1) {
		/* the whole run's range, checked as each packet's would be */
		uint32_t len = MIN(nrun * tq->mtu, sg->len - off);

		mr = roce_mem_rkey(tq, r->rkey, sg->va + off, len, VIRTIO_IB_ACCESS_REMOTE_READ);
		if (!mr || (tq->path.flags & ROCE_PATH_F_UDP_CSUM) ||
		    !resp_read_run(tq, sg, mr, k, nrun, p, &f))
			nrun = 1;
	}
	if (nrun > 1) {
		tp->stats.tx_runs++;
		tp->stats.tx_run_pkts += nrun;
		tp->stats.tx_by_ref += nrun;
	} else if (plen) {
		mr = roce_mem_rkey(tq, r->rkey, sg->va + off, plen, VIRTIO_IB_ACCESS_REMOTE_READ);
		if (!mr || resp_read_payload(tq, mr, sg->va + off, p, payload, plen)) {
			/* The MR went away while answering. */
			pkt_free(p);
			resp_res_stop(tq, r);
			resp_error(tq, mr ? ROCE_AETH_NAK_REM_OP_ERR : ROCE_AETH_NAK_REM_ACCESS_ERR,
				   f.psn, 0);
			return -EIO;
		}
	}
	tp->ip_id = (uint16_t)(tp->ip_id + nrun);
	roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC);
	tp->stats.read_resp_sent += nrun;
	if (roce_psn_diff(roce_psn_add(f.psn, nrun - 1), tq->rsp_psn_hwm) >= 0)
		tq->rsp_psn_hwm = roce_psn_add(f.psn, nrun);
	roce_tp_xmit(tp, p, &tq->path);
	sg->next += nrun;
	if (sg->next == n) {
		if (sg == &r->dup)
			r->dup_on = false;
		else
			r->stream_on = false;
		resp_res_update(tq, r);
	}
	return (int)nrun;
}

uint32_t roce_resp_run(struct roce_tq *tq, uint32_t budget, bool *more)
{
	uint32_t sent = 0;

	*more = false;
	while (tq->res_active && sent < budget) {
		struct roce_rsp_res *best = NULL;
		struct roce_rsp_seg *bseg = NULL;
		int rc;

		/* Responses leave in PSN order: the lowest next one first. */
		for (uint32_t i = 0; i < tq->nres; i++) {
			struct roce_rsp_res *x = &tq->res[i];
			struct roce_rsp_seg *sg[2] = { x->dup_on ? &x->dup : NULL,
						       x->stream_on ? &x->stream : NULL };

			for (int j = 0; j < 2; j++)
				if (sg[j] && (!bseg || roce_psn_diff(roce_psn_add(sg[j]->psn, sg[j]->next),
								     roce_psn_add(bseg->psn, bseg->next)) < 0)) {
					best = x;
					bseg = sg[j];
				}
		}
		if (!best) {
			tq->res_active = 0;
			break;
		}
		rc = best->type == ROCE_RES_ATOMIC ? resp_send_atomic(tq, best) :
			resp_send_read(tq, best, bseg, MIN(budget - sent, tq->tp->run_max));
		if (rc == -ENOBUFS) {
			*more = true;
			break;
		}
		if (rc < 0)
			return sent;
		sent += rc ? (uint32_t)rc : 1;
	}
	if (tq->res_active && sent >= budget)
		*more = true;
	roce_resp_flush_ack(tq);
	return sent;
}

/* ---- UC --------------------------------------------------------------------- */

static void resp_uc(struct roce_tq *tq, const struct roce_pkt_info *pi)
{
	struct roce_tp *tp = tq->tp;
	uint32_t psn = pi->psn;

	if (roce_psn_diff(psn, tq->epsn) < 0) {
		/* Duplicate (or late): already gone past it. */
		tp->stats.rx_dup++;
		return;
	}
	if (psn != tq->epsn) {
		/* Packets were lost: the message in progress is dropped; a
		 * new one may start here. */
		tp->stats.rx_seq_err++;
		if (tq->rsp_msg != ROCE_RSP_NONE)
			tp->stats.rx_uc_dropped++;
		tq->rsp_msg = ROCE_RSP_NONE;
	}
	tq->epsn = roce_psn_add(psn, 1);
	resp_exec(tq, pi);
}

/* ---- UD --------------------------------------------------------------------- */

static void resp_ud(struct roce_tq *tq, const struct roce_pkt_info *pi, const struct pkt *p)
{
	struct roce_tp *tp = tq->tp;
	struct roce_rwqe *rw = tq->rwqe;
	uint32_t plen = pi->payload_len;
	uint8_t grh[GRH_LEN], status = 0;
	struct roce_wc wc;
	int rc;

	if (roce_deth_qkey(pi->deth) != tq->qp->attr.qkey) {
		tp->stats.rx_qkey++;
		return;
	}
	if (plen > virtio_ib_mtu_bytes(tp->rd->attr.active_mtu)) {
		tp->stats.rx_mtu++;
		return;
	}
	switch (resp_get_rwqe(tq, &status)) {
	case RESP_ST_DONE:
		break;
	case RESP_ST_NO_RWQE:
		tp->stats.rx_no_rwqe++;
		return;
	case RESP_ST_RWQE_BAD:
		resp_recv_error(tq, status);
		roce_tp_qp_error(tq, false);
		return;
	default: /* the ring broke: the QP is in ERR already */
		return;
	}
	if (GRH_LEN + (uint64_t)plen > rw->length) {
		/* Too long for the buffer: dropped, the WQE waits for the
		 * next datagram. */
		tp->stats.rx_len_err++;
		return;
	}
	memset(grh, 0, sizeof(grh));
	if (pi->ip6)
		memcpy(grh, p->data + pi->l3_off, GRH_LEN);
	else
		memcpy(grh + 20, p->data + pi->l3_off, 20);
	rc = roce_mem_to_rwqe(tq, rw, 0, grh, GRH_LEN);
	if (!rc)
		rc = roce_mem_to_rwqe(tq, rw, GRH_LEN, pi->payload, plen);
	if (rc) {
		resp_recv_error(tq, (uint8_t)rc);
		roce_tp_qp_error(tq, false);
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.opcode = VIRTIO_IB_WC_RECV;
	wc.byte_len = GRH_LEN + plen;
	wc.src_qp = roce_deth_sqpn(pi->deth);
	wc.wc_flags = VIRTIO_IB_WC_GRH;
	if (!pi->ip6)
		wc.wc_flags |= VIRTIO_IB_WC_GRH_IPV4;
	if (pi->mask & ROCE_OPF_IMMDT) {
		wc.imm = roce_immdt_raw(pi->immdt);
		wc.wc_flags |= VIRTIO_IB_WC_WITH_IMM;
	}
	wc.solicited = pi->se;
	roce_rq_complete(tq, &wc);
}

void roce_resp_rx(struct roce_tq *tq, const struct roce_pkt_info *pi, const struct pkt *p)
{
	struct rres_qp *qp = tq->qp;
	uint8_t st = qp->attr.qp_state;

	if (st < VIRTIO_IB_QPS_RTR || st == VIRTIO_IB_QPS_ERR) {
		tq->tp->stats.rx_qp_state++;
		return;
	}
	if (!tq->comm_est && (qp->type == VIRTIO_IB_QPT_RC || qp->type == VIRTIO_IB_QPT_UC)) {
		/* The first request packet since entering RTR (roce_resp_reset
		 * clears it): the event in RTR only (IBTA); the connection
		 * manager also in RTS, where rdma_cm's passive QP already is
		 * when its REP goes out. */
		tq->comm_est = true;
		if (st == VIRTIO_IB_QPS_RTR && tq->tp->rd->ext) {
			tq->tp->stats.comm_est++;
			rres_event_raise(tq->tp->rd, &qp->ev, VIRTIO_IB_EVENT_COMM_EST);
		}
		if (tq->tp->ops.comm_est)
			tq->tp->ops.comm_est(tq->tp->ctx, qp->qpn);
	}
	switch (qp->type) {
	case VIRTIO_IB_QPT_RC:
		resp_rc(tq, pi);
		break;
	case VIRTIO_IB_QPT_UC:
		resp_uc(tq, pi);
		break;
	default:
		resp_ud(tq, pi, p);
		break;
	}
}
