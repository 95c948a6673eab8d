/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send queue: WQE slots, fetching work requests from the send ring and
 * validating them, completing them in order (completion entry when
 * signaled or in error, used entry always), and flushing.
 *
 * A send-ring element is one WR: a device-readable struct virtio_rdma_sq_req
 * (576 bytes) followed by num_sge struct virtio_rdma_sge, in any number of
 * descriptors. It is copied and validated when popped; its descriptor is
 * given back (used, length 0) when the WR completes.
 *
 * With ROCE_EXT the extension's views of the request are parsed too
 * (struct virtio_rdma_sq_req_ext: atomic, bind_mw, reg, invalidate_rkey),
 * each opcode only on its QP types and with its capability; SGE keys are
 * then checked when the requester starts the WR, because an earlier REG_MR
 * of the same queue may create them.
 */
#include "roce/roce_tp.h"
#include "roce/roce_virtio_rdma.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_server.h"

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 15))
		p <<= 1;
	return p;
}

int roce_sq_attach(struct roce_tq *tq)
{
	const struct rres_qp_cap *cap = &tq->qp->cap;
	struct vhost_vring *r = tq->sq.r;
	uint32_t slots, data, stride;

	roce_sq_detach(tq);
	/* the depth the QP was created with (charged to state-mem=), never
	 * more than the ring holds: max_send_wr 0 gets one slot */
	slots = r && r->num ? r->num : 1;
	if (pow2_ceil(cap->max_send_wr) < slots)
		slots = pow2_ceil(cap->max_send_wr);
	data = MAX(cap->max_send_sge * (uint32_t)sizeof(struct roce_sge), cap->max_inline_data);
	stride = ALIGN_UP((uint32_t)sizeof(struct roce_swqe) + data, 8u);
	tq->swqe = calloc(slots, stride);
	if (!tq->swqe)
		return -ENOMEM;
	tq->sq_slots = slots;
	tq->sq_mask = slots - 1;
	tq->sq_stride = stride;
	tq->sq_head = tq->sq_cur = tq->sq_tail = 0;
	tq->rd_out = 0;
	tq->stalled = false;
	return 0;
}

void roce_sq_detach(struct roce_tq *tq)
{
	/* (a UC WR's frames name its slot: roce_req.c) */
	if (tq->swqe && tq->sq_head != tq->sq_tail)
		pkt_ref_fill_all();
	free(tq->swqe);
	tq->swqe = NULL;
	tq->sq_slots = 0;
	tq->sq_mask = 0;
	tq->sq_head = tq->sq_cur = tq->sq_tail = 0;
	tq->rd_out = 0;
	tq->stalled = false;
}

/* The completion opcode for tq: a driver without ROCE_EXT never sees one of
 * the extension's opcodes (its WRs with those opcodes are refused). */
static uint8_t sq_wc_opcode(const struct roce_tq *tq, uint8_t wr_opcode)
{
	if (!tq->tp->rd->ext && wr_opcode > VIRTIO_IB_WR_RDMA_READ)
		return VIRTIO_IB_WC_SEND;
	return virtio_ib_wc_opcode_of_wr(wr_opcode);
}

static void wqe_bad(struct roce_tq *tq, struct roce_swqe *w, uint8_t status)
{
	(void)tq;
	w->bad = true;
	w->status = status;
	w->state = ROCE_WQE_DONE;
}

/* Whether opcode is a valid send WR for a QP of type on device rd (the
 * extension's opcodes need ROCE_EXT and their capability; never GSI). */
static bool opcode_ok(const struct rres_dev *rd, uint8_t type, uint8_t opcode)
{
	bool rc = type == VIRTIO_IB_QPT_RC, uc = type == VIRTIO_IB_QPT_UC;
	bool ud = type == VIRTIO_IB_QPT_UD;
	uint64_t caps = rd->ext ? rd->attr.ext_cap_flags : 0;
	bool mgt = caps & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS;

	switch (opcode) {
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		return rd->ext && rd->attr.atomic_cap != VIRTIO_IB_ATOMIC_NONE && rc;
	case VIRTIO_IB_WR_LOCAL_INV:
	case VIRTIO_IB_WR_REG_MR:
		return mgt && (rc || uc || ud);
	case VIRTIO_IB_WR_SEND_WITH_INV:
		return mgt && rc;
	case VIRTIO_IB_WR_BIND_MW:
		return (caps & VIRTIO_IB_DEVICE_MEM_WINDOW) && (rc || uc);
	case VIRTIO_IB_WR_SEND:
	case VIRTIO_IB_WR_SEND_WITH_IMM:
		return true;
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		return type == VIRTIO_IB_QPT_RC || type == VIRTIO_IB_QPT_UC;
	case VIRTIO_IB_WR_RDMA_READ:
		return type == VIRTIO_IB_QPT_RC;
	default:
		return false;
	}
}

/* REG_MR, LOCAL_INV, BIND_MW: no SGEs, no inline data; the operation
 * itself runs when the requester reaches the WR. */
static void sq_parse_local(struct roce_tq *tq, const struct virtio_rdma_sq_req_ext *req,
			   struct roce_swqe *w)
{
	if ((w->flags & VIRTIO_IB_SEND_INLINE) || le32toh(req->num_sge)) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		return;
	}
	w->imm = 0;
	switch (w->opcode) {
	case VIRTIO_IB_WR_LOCAL_INV:
		w->inv_rkey = le32toh(req->invalidate_rkey);
		break;
	case VIRTIO_IB_WR_REG_MR:
		w->remote_addr = le64toh(req->reg.iova);
		w->ext_len = le64toh(req->reg.length);
		w->page_list = le64toh(req->reg.page_list);
		w->ext_key = le32toh(req->reg.key);
		w->ext_access = le32toh(req->reg.access);
		break;
	default: /* BIND_MW */
		w->remote_addr = le64toh(req->bind_mw.addr);
		w->ext_len = le64toh(req->bind_mw.length);
		w->ext_key = le32toh(req->bind_mw.mr_lkey);
		w->rkey = le32toh(req->bind_mw.rkey);
		w->ext_access = le32toh(req->bind_mw.access);
		break;
	}
}

/* CMP_AND_SWP, FETCH_AND_ADD: one SGE of at least 8 bytes for the result
 * (LOC_LEN_ERR), writable through its lkey (LOC_PROT_ERR, checked now or,
 * with ROCE_EXT, when the requester starts the WR). */
static void sq_parse_atomic(struct roce_tq *tq, const struct vq_elem *e,
			    const struct virtio_rdma_sq_req_ext *req, size_t sge_off,
			    struct roce_swqe *w)
{
	struct virtio_rdma_sge s;

	if (w->flags & VIRTIO_IB_SEND_INLINE) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		return;
	}
	w->imm = 0;
	w->remote_addr = le64toh(req->atomic.remote_addr);
	w->rkey = le32toh(req->atomic.rkey);
	w->cmp_add = le64toh(req->atomic.compare_add);
	w->swap = le64toh(req->atomic.swap);
	if (le32toh(req->num_sge) != 1) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
		return;
	}
	if (e->out_len < sge_off + sizeof(s)) {
		tq->tp->stats.wr_bad_chain++;
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		return;
	}
	vq_elem_read(e, sge_off, &s, sizeof(s));
	if (le32toh(s.length) < 8) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
		return;
	}
	w->res_sge.addr = le64toh(s.addr);
	w->res_sge.length = 8;
	w->res_sge.lkey = le32toh(s.lkey);
	w->length = 8;
	w->sge_unchecked = true;
}

/* The request of an element at least sizeof(*req) long, without its inline
 * data: the header and the num_sge word (inline data, when the WR has it, is
 * read by its length). Leaves inline_data unset. */
static void sq_read_req(const struct vq_elem *e, struct virtio_rdma_sq_req_ext *req)
{
	const size_t tail = offsetof(struct virtio_rdma_sq_req_ext, num_sge);
	const struct iovec *v = &e->iov[0];

	if (likely(e->out_num && v->iov_len >= sizeof(*req))) {
		/* one descriptor holds it all: fixed-size copies */
		memcpy(req, v->iov_base, offsetof(struct virtio_rdma_sq_req_ext, inline_data));
		memcpy((uint8_t *)req + tail, (const uint8_t *)v->iov_base + tail,
		       sizeof(*req) - tail);
		/* driver memory: only the copy is read from here on */
		__asm__ __volatile__("" ::: "memory");
		return;
	}
	vq_elem_read(e, 0, req, offsetof(struct virtio_rdma_sq_req_ext, inline_data));
	vq_elem_read(e, tail, (uint8_t *)req + tail, sizeof(*req) - tail);
}

/* Zero a WQE's fixed part with 16-byte stores: GCC inlines a memset of this
 * constant size as `rep stos`, whose start-up cost was a sixth of parsing a
 * small WR, and a loop of 8-byte stores cost the daemon 25 ns more per
 * 64-byte WRITE (docs/performance.md "Small messages"). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static void sq_wqe_clear(struct roce_swqe *w)
{
	typedef uint64_t __attribute__((vector_size(16), aligned(8), may_alias)) pair;
	typedef uint64_t __attribute__((may_alias)) word;
	uint8_t *b = (uint8_t *)w;
	size_t i;

	_Static_assert(sizeof(*w) % 8 == 0, "roce_swqe is a multiple of 8 bytes");
	for (i = 0; i + 16 <= sizeof(*w); i += 16)
		*(pair *)(void *)(b + i) = (pair){ 0, 0 };
	if (i < sizeof(*w))
		*(word *)(void *)(b + i) = 0;
}

void roce_sq_parse(struct roce_tq *tq, const struct vq_elem *e, struct roce_swqe *w)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	struct virtio_rdma_sq_req_ext req;
	size_t sge_off = sizeof(req); /* where the SGEs start in the element */
	struct roce_virtio_rdma_wr x = { 0 }; /* what only that device's element has */
	uint32_t nsge, i;
	uint64_t total = 0;
	int st;

	sq_wqe_clear(w);
	w->head = e->head;
	w->state = ROCE_WQE_POSTED;
	w->status = VIRTIO_IB_WC_SUCCESS;
	if (tp->rd->rdma_dev_layout) {
		/* the virtio-rdma device's element (roce_virtio_rdma.c) */
		st = roce_virtio_rdma_sq_decode(tp->rd, qp, e, &req, &x);
		w->wr_id = x.wr_id;
		w->opcode = req.opcode;
		w->flags = req.send_flags;
		if (st) {
			if (st < 0)
				tp->stats.wr_bad_chain++;
			wqe_bad(tq, w, st < 0 ? VIRTIO_IB_WC_LOC_QP_OP_ERR : (uint8_t)st);
			return;
		}
		sge_off = sizeof(struct virtio_rdma_dev_sq_req);
	} else if (e->out_len < sizeof(req)) {
		/* Not even a request: a driver bug; complete it as a local QP
		 * operation error (with its wr_id if that much is there). */
		if (e->out_len >= sizeof(w->wr_id)) {
			uint64_t id;

			vq_elem_read(e, 0, &id, sizeof(id));
			w->wr_id = le64toh(id);
		}
		tp->stats.wr_bad_chain++;
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		return;
	} else {
		sq_read_req(e, &req);
	}
	w->wr_id = le64toh(req.wr_id);
	w->opcode = req.opcode;
	w->flags = req.send_flags;
	memcpy(&w->imm, &req.imm_data, 4);
	if (!opcode_ok(tp->rd, qp->type, w->opcode)) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
		return;
	}
	if (roce_wr_is_local(w->opcode)) {
		sq_parse_local(tq, &req, w);
		w->rekey = x.rekey;
		w->rekey_mrn = x.mrn;
		return;
	}
	if (roce_wr_is_atomic(w->opcode)) {
		sq_parse_atomic(tq, e, &req, sge_off, w);
		return;
	}
	if (w->opcode == VIRTIO_IB_WR_SEND_WITH_INV) {
		w->inv_rkey = le32toh(req.invalidate_rkey);
		w->imm = 0;
	}
	if (x.read_inv) {
		w->read_inv = true;
		w->inv_rkey = le32toh(req.invalidate_rkey);
		w->imm = 0;
	}
	if (w->opcode == VIRTIO_IB_WR_RDMA_WRITE || w->opcode == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM ||
	    w->opcode == VIRTIO_IB_WR_RDMA_READ) {
		w->remote_addr = le64toh(req.rdma.remote_addr);
		w->rkey = le32toh(req.rdma.rkey);
	}

	if (w->flags & VIRTIO_IB_SEND_INLINE) {
		uint32_t len = le16toh(req.inline_len);

		if (w->opcode == VIRTIO_IB_WR_RDMA_READ) {
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
			return;
		}
		if (len > VIRTIO_RDMA_INLINE_DATA_SIZE || len > qp->cap.max_inline_data) {
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
			return;
		}
		if (tp->rd->rdma_dev_layout)
			memcpy(w->data, req.inline_data, len);
		else
			vq_elem_read(e, offsetof(struct virtio_rdma_sq_req_ext, inline_data),
				     w->data, len);
		w->inl = true;
		total = len;
	} else {
		struct roce_sge *sge = roce_swqe_sge(w);
		uint32_t access = w->opcode == VIRTIO_IB_WR_RDMA_READ ?
				  VIRTIO_IB_ACCESS_LOCAL_WRITE : 0;

		nsge = le32toh(req.num_sge);
		if (nsge > qp->cap.max_send_sge) {
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
			return;
		}
		if (e->out_len < sge_off + (uint64_t)nsge * sizeof(struct virtio_rdma_sge)) {
			tp->stats.wr_bad_chain++;
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
			return;
		}
		for (i = 0; i < nsge; i++) {
			struct virtio_rdma_sge s;

			vq_elem_read(e, sge_off + i * sizeof(s), &s, sizeof(s));
			sge[i].addr = le64toh(s.addr);
			sge[i].length = le32toh(s.length);
			sge[i].lkey = le32toh(s.lkey);
		}
		w->num_sge = nsge;
		if (tp->rd->ext) {
			/* Keys are checked when the requester starts the WR:
			 * an earlier REG_MR of this queue may create them. */
			for (i = 0; i < nsge; i++)
				total += sge[i].length;
			w->sge_unchecked = true;
			st = 0;
		} else {
			st = roce_mem_check_sges(tq, sge, nsge, access, &total);
		}
		if (st) {
			wqe_bad(tq, w, (uint8_t)st);
			return;
		}
	}
	if (total > tp->rd->attr.max_msg_sz) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
		return;
	}
	w->length = (uint32_t)total;

	if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) {
		if (x.has_av) { /* in the element itself (virtio-rdma device) */
			w->av = x.av;
		} else {
			struct rres_ah *ah = rres_table_get(&tp->rd->ahs, le32toh(req.ud.ah));

			if (!ah) {
				wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
				return;
			}
			if (ah->pd != qp->pd) {
				wqe_bad(tq, w, VIRTIO_IB_WC_LOC_PROT_ERR);
				return;
			}
			w->av = ah->av;
		}
		w->dqpn = le32toh(req.ud.remote_qpn);
		if (w->dqpn > VRDMA_QPN_MASK) {
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_QP_OP_ERR);
			return;
		}
		w->qkey = le32toh(req.ud.remote_qkey);
		/* A Q_Key with the high bit set means: use the QP's own. */
		if (w->qkey & 0x80000000u)
			w->qkey = qp->attr.qkey;
		if (w->length > virtio_ib_mtu_bytes(tp->rd->attr.active_mtu)) {
			wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
			return;
		}
	} else if (tq->mtu && roce_req_npkts(w, tq->mtu) > ROCE_TP_MAX_MSG_PKTS) {
		wqe_bad(tq, w, VIRTIO_IB_WC_LOC_LEN_ERR);
		return;
	}
}

/* How far ahead a fetch loads: requests SQ_AHEAD elements ahead, their
 * descriptors twice as far (both lines were just written by the driver's
 * core, so each load is a miss best overlapped with parsing). */
#define SQ_AHEAD 4

/* Prefetch the request of the element `ahead` pops away: its header, the
 * num_sge word and the first SGE. */
static void sq_prefetch_req(const struct vq_dev *vq, uint16_t ahead)
{
	const size_t tail = offsetof(struct virtio_rdma_sq_req, num_sge);
	const size_t sge = sizeof(struct virtio_rdma_sq_req);
	uint32_t len = 0;
	const uint8_t *p = vq_dev_peek(vq, ahead, &len);

	if (!p)
		return;
	__builtin_prefetch(p, 0, 3);
	if (len > tail)
		__builtin_prefetch(p + tail, 0, 3);
	if (len > sge)
		__builtin_prefetch(p + sge, 0, 3);
}

uint32_t roce_sq_fetch(struct roce_tq *tq, uint32_t max)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->sq.r;
	uint32_t n = 0;

	if (!r || !tq->swqe)
		return 0;
	if (r->vq.broken) {
		/* Found broken by an avail check (poll, arm) rather than a
		 * pop: the same outcome, reported once. */
		roce_tp_ring_broken(tp, &tq->sq);
		roce_tp_qp_error(tq, false);
		return 0;
	}
	while (n < max && tq->sq_tail - tq->sq_head < tq->sq_slots) {
		int rc = vq_dev_pop(&r->vq, &tp->elem);

		if (rc == 0)
			break;
		if (rc < 0) {
			roce_tp_ring_broken(tp, &tq->sq);
			roce_tp_qp_error(tq, false);
			break;
		}
		if (!tp->rd->rdma_dev_layout) {
			uint16_t a;

			if (n == 0) /* the batch's first: start its followers */
				for (a = 0; a < SQ_AHEAD - 1; a++) {
					vq_dev_prefetch_desc(&r->vq, a + SQ_AHEAD);
					sq_prefetch_req(&r->vq, a);
				}
			vq_dev_prefetch_desc(&r->vq, 2 * SQ_AHEAD - 1);
			sq_prefetch_req(&r->vq, SQ_AHEAD - 1);
		}
		roce_sq_parse(tq, &tp->elem, roce_sq_wqe(tq, tq->sq_tail));
		tq->sq_tail++;
		tp->stats.send_wrs++;
		n++;
	}
	if (n)
		roce_tp_sq_quiet(tq);
	return n;
}

static void sq_give_back(struct roce_tq *tq, uint16_t head)
{
	struct vhost_vring *r = tq->sq.r;

	if (!r || r->vq.broken)
		return;
	vq_dev_fill(&r->vq, head, 0);
	roce_tp_ring_dirty(tq->tp, &tq->sq, false);
}

void roce_sq_complete_head(struct roce_tq *tq, uint8_t status)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	struct roce_swqe *w = roce_sq_wqe(tq, tq->sq_head);

	if (roce_wr_is_rd_atomic(w->opcode) && w->state == ROCE_WQE_SENT && tq->rd_out)
		tq->rd_out--;
	/* RDMA_READ_WITH_INV: the key goes once the data is in */
	if (w->read_inv && status == VIRTIO_IB_WC_SUCCESS &&
	    rres_key_invalidate(tp->rd, qp->pd, w->inv_rkey))
		status = VIRTIO_IB_WC_LOC_PROT_ERR;
	if (status != VIRTIO_IB_WC_SUCCESS || (w->flags & VIRTIO_IB_SEND_SIGNALED) ||
	    qp->sq_sig_all) {
		struct roce_wc wc = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = sq_wc_opcode(tq, w->opcode),
			.byte_len = status == VIRTIO_IB_WC_SUCCESS ? w->length : 0,
			.qp_num = qp->qpn,
		};

		roce_cq_post(tp, qp->send_cq, &wc);
	}
	if (status < 16)
		tp->stats.wc[status]++;
	else
		tp->stats.wc_ext[status == 16 ? 0 : 1]++;
	sq_give_back(tq, w->head);
	tq->sq_head++;
	if ((int32_t)(tq->sq_cur - tq->sq_head) < 0) {
		/* Completed before the requester got past it (acknowledged
		 * while being sent again): its PSNs are used. */
		tq->sq_cur = tq->sq_head;
		tq->stalled = false;
		if (w->started) {
			uint32_t end = roce_psn_add(w->first_psn, w->npkts);

			if (roce_psn_diff(end, tq->sq_psn) > 0)
				tq->sq_psn = end;
		}
	}
}

/* Flush one element straight from the ring (never fetched). */
static void sq_flush_elem(struct roce_tq *tq, const struct vq_elem *e)
{
	struct roce_tp *tp = tq->tp;
	struct rres_qp *qp = tq->qp;
	struct roce_wc wc = {
		.status = VIRTIO_IB_WC_WR_FLUSH_ERR,
		.opcode = VIRTIO_IB_WC_SEND,
		.qp_num = qp->qpn,
	};
	uint16_t head = e->head;
	uint8_t hdr[20];

	if (tp->rd->rdma_dev_layout) {
		/* virtio-rdma element: le32 opcode at 8, le64 wr_id at 12 */
		if (e->out_len >= 20) {
			vq_elem_read(e, 0, hdr, 20);
			wc.wr_id = get_le64(hdr + 12);
			wc.opcode = sq_wc_opcode(tq, get_le32(hdr + 8) > 0xff ? 0xff : hdr[8]);
		}
	} else if (e->out_len >= 9) {
		vq_elem_read(e, 0, hdr, 9);
		vq_elem_read(e, 0, hdr, sizeof(hdr));
		wc.wr_id = get_le64(hdr);
		wc.opcode = sq_wc_opcode(tq, hdr[8]);
	} else if (e->out_len >= 8) {
		vq_elem_read(e, 0, hdr, 8);
		wc.wr_id = get_le64(hdr);
	}
	tp->stats.send_wrs++;
	tp->stats.wc[VIRTIO_IB_WC_WR_FLUSH_ERR]++;
	roce_cq_post(tp, qp->send_cq, &wc);
	sq_give_back(tq, head);
}

void roce_sq_flush(struct roce_tq *tq)
{
	struct roce_tp *tp = tq->tp;
	struct vhost_vring *r = tq->sq.r;

	/* Frames still in flight keep the bytes they had when the WRs end
	 * (their memory is the application's again). */
	if (tq->swqe && tq->sq_head != tq->sq_tail)
		pkt_ref_fill_all();
	if (tq->swqe) {
		while (tq->sq_head != tq->sq_tail) {
			struct roce_swqe *w = roce_sq_wqe(tq, tq->sq_head);

			/* A WQE that already finished (sent UD/UC, or the one
			 * whose error moved the QP) reports its own status. */
			roce_sq_complete_head(tq, w->state == ROCE_WQE_DONE ? w->status :
						  VIRTIO_IB_WC_WR_FLUSH_ERR);
		}
		tq->sq_cur = tq->sq_head;
		tq->rd_out = 0;
		tq->stalled = false;
	}
	if (!r || r->vq.broken)
		return;
	for (;;) {
		int rc = vq_dev_pop(&r->vq, &tp->elem);

		if (rc == 0)
			break;
		if (rc < 0) {
			roce_tp_ring_broken(tp, &tq->sq);
			break;
		}
		sq_flush_elem(tq, &tp->elem);
	}
}

void roce_sq_drop(struct roce_tq *tq)
{
	if (!tq->swqe)
		return;
	if (tq->sq_head != tq->sq_tail)
		pkt_ref_fill_all(); /* as roce_sq_flush */
	while (tq->sq_head != tq->sq_tail) {
		sq_give_back(tq, roce_sq_wqe(tq, tq->sq_head)->head);
		tq->sq_head++;
	}
	tq->sq_head = tq->sq_cur = tq->sq_tail = 0;
	tq->rd_out = 0;
	tq->stalled = false;
}
