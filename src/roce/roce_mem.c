/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data movement between packets and registered memory. Every access looks
 * the key up again (an MR deregistered while a WR is outstanding is
 * detected, not used) and goes through rres_mr_to_iov(), which checks the
 * range against the MR and, for DMA MRs, against the driver's shared memory.
 * Remote keys may name a VALID user or fast-registered MR or a bound memory
 * window (its bounds and rights; bytes reached through its MR), so an
 * invalidation takes effect at the next packet, even mid-message.
 */
#include "roce/roce_tp.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"

#define MEM_IOV 16

/* The other side of a copy: a flat buffer (one piece) or the pieces of a
 * payload left in the sender's memory (struct pkt_ref), consumed in order. */
struct mem_cur {
	const struct iovec *iov;
	uint32_t n, i;
	size_t off; /* into iov[i] */
	struct iovec one;
};

static void cur_flat(struct mem_cur *c, uint8_t *buf, size_t len)
{
	c->one.iov_base = buf;
	c->one.iov_len = len;
	c->iov = &c->one;
	c->n = 1;
	c->i = 0;
	c->off = 0;
}

static void cur_iov(struct mem_cur *c, const struct iovec *iov, uint32_t n)
{
	c->iov = iov;
	c->n = n;
	c->i = 0;
	c->off = 0;
}

/* Copy len bytes between mem and the cursor (to_mem: cursor -> mem). The
 * caller checked that the cursor holds them. */
static void cur_copy(struct mem_cur *c, uint8_t *mem, size_t len, bool to_mem)
{
	while (len && c->i < c->n) {
		uint8_t *b = (uint8_t *)c->iov[c->i].iov_base + c->off;
		size_t k = MIN(len, c->iov[c->i].iov_len - c->off);

		/* a WRITE within one MR (a QP to itself) may overlap its own
		 * source once it is copied straight from there: both move */
		if (to_mem)
			roce_copy_to_mem(mem, b, k);
		else
			memmove(b, mem, k);
		mem += k;
		len -= k;
		c->off += k;
		if (c->off == c->iov[c->i].iov_len) {
			c->i++;
			c->off = 0;
		}
	}
}

/* Copy between the cursor and [iova, iova + len) of mr (to_mr: cursor ->
 * MR). False if a page of the range is not mapped. */
static bool mr_copy(const struct rres_dev *rd, const struct rres_mr *mr, uint64_t iova,
		   struct mem_cur *c, uint64_t len, bool to_mr)
{
	struct iovec iov[MEM_IOV];

	while (len) {
		uint64_t piece = MIN(len, 8ull * VRDMA_PAGE_SIZE - (iova & (VRDMA_PAGE_SIZE - 1)));
		int n;

		for (;;) {
			n = rres_mr_to_iov(rd, mr, iova, piece, iov, MEM_IOV);
			if (n != -E2BIG)
				break;
			if (piece <= 1)
				return false;
			piece /= 2;
		}
		if (n < 0)
			return false;
		for (int i = 0; i < n; i++)
			cur_copy(c, iov[i].iov_base, iov[i].iov_len, to_mr);
		iova += piece;
		len -= piece;
	}
	return true;
}

int roce_mem_check_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
			uint32_t access, uint64_t *total)
{
	return roce_mem_check_sges_pd(tq->tp->rd, tq->qp->pd, sge, n, access, total);
}

int roce_mem_check_sges_pd(const struct rres_dev *rd, const struct rres_pd *pd,
			   const struct roce_sge *sge, uint32_t n, uint32_t access,
			   uint64_t *total)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct rres_mr *mr;
		uint64_t a = sge[i].addr, l = sge[i].length;

		if (!l)
			continue;
		mr = rres_mr_lookup_lkey(rd, sge[i].lkey, pd, access);
		if (!mr)
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		if (mr->type != RRES_MR_DMA) {
			if (a < mr->iova || a - mr->iova > mr->length ||
			    l > mr->length - (a - mr->iova))
				return VIRTIO_IB_WC_LOC_PROT_ERR;
		} else if (a > UINT64_MAX - (l - 1)) {
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		}
		sum += l;
	}
	*total = sum;
	return 0;
}

/* Walk SGEs (keys of pd) from message offset off over len bytes; copy
 * each piece. */
static int sges_copy(struct roce_tq *tq, const struct rres_pd *pd, const struct roce_sge *sge,
		     uint32_t n, uint64_t off, struct mem_cur *c, uint32_t len, uint32_t access,
		     bool to_mem)
{
	const struct rres_dev *rd = tq->tp->rd;

	for (uint32_t i = 0; i < n && len; i++) {
		const struct rres_mr *mr;
		uint32_t chunk;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		chunk = (uint32_t)MIN((uint64_t)len, sge[i].length - off);
		mr = rres_mr_lookup_lkey(rd, sge[i].lkey, pd, access);
		if (!mr || !mr_copy(rd, mr, sge[i].addr + off, c, chunk, to_mem))
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		len -= chunk;
		off = 0;
	}
	return len ? VIRTIO_IB_WC_LOC_LEN_ERR : 0;
}

int roce_mem_from_swqe(struct roce_tq *tq, struct roce_swqe *w, uint32_t off,
		       uint8_t *dst, uint32_t len)
{
	struct mem_cur c;

	if (!len)
		return 0;
	if (w->inl) {
		if (off > w->length || len > w->length - off)
			return VIRTIO_IB_WC_LOC_LEN_ERR;
		memcpy(dst, w->data + off, len);
		return 0;
	}
	cur_flat(&c, dst, len);
	return sges_copy(tq, tq->qp->pd, roce_swqe_sge(w), w->num_sge, off, &c, len, 0, false);
}

int roce_mem_ref_swqe(struct roce_tq *tq, struct roce_swqe *w, uint32_t off, uint32_t len,
		      struct iovec *iov, uint32_t max, uint32_t *niov)
{
	const struct rres_dev *rd = tq->tp->rd;
	const struct roce_sge *sge = roce_swqe_sge(w);
	uint32_t k = 0;
	uint64_t o = off;

	*niov = 0;
	if (!len || w->inl)
		return 0;
	for (uint32_t i = 0; i < w->num_sge && len; i++) {
		const struct rres_mr *mr;
		uint32_t chunk;
		int n;

		if (o >= sge[i].length) {
			o -= sge[i].length;
			continue;
		}
		chunk = (uint32_t)MIN((uint64_t)len, sge[i].length - o);
		mr = rres_mr_lookup_lkey(rd, sge[i].lkey, tq->qp->pd, 0);
		if (!mr)
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		if (k == max)
			return 0; /* more pieces than a reference holds: copy */
		n = rres_mr_to_iov(rd, mr, sge[i].addr + o, chunk, iov + k, max - k);
		if (n == -E2BIG)
			return 0;
		if (n < 0)
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		k += (uint32_t)n;
		len -= chunk;
		o = 0;
	}
	if (len)
		return VIRTIO_IB_WC_LOC_LEN_ERR;
	*niov = k;
	return 0;
}

int roce_mem_ref_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va, uint32_t len,
		    struct iovec *iov, uint32_t max, uint32_t *niov)
{
	int n = rres_mr_to_iov(tp->rd, mr, va, len, iov, max);

	*niov = 0;
	if (n == -E2BIG)
		return 0;
	if (n < 0)
		return VIRTIO_IB_WC_REM_ACCESS_ERR;
	*niov = (uint32_t)n;
	return 0;
}

/* The payload of pi as a cursor: its bytes in the frame, or the sender's
 * memory it references. Returns false for a reference that does not cover
 * the payload (not ours: a bug). */
static bool cur_payload(struct mem_cur *c, const struct roce_pkt_info *pi)
{
	const struct pkt_ref *r = pi->payload_ref;

	if (!r) {
		cur_flat(c, (uint8_t *)pi->payload, pi->payload_len);
		return true;
	}
	if (r->len != pi->payload_len)
		return false;
	cur_iov(c, r->iov, r->niov);
	return true;
}

int roce_mem_payload_to_rwqe(struct roce_tq *tq, const struct roce_rwqe *rw, uint64_t off,
			     const struct roce_pkt_info *pi)
{
	struct mem_cur c;

	if (!pi->payload_len)
		return 0;
	if (!cur_payload(&c, pi))
		return VIRTIO_IB_WC_LOC_LEN_ERR;
	int rc = sges_copy(tq, rw->srq ? rw->srq->pd : tq->qp->pd, rw->sge, rw->num_sge, off, &c,
			   pi->payload_len, VIRTIO_IB_ACCESS_LOCAL_WRITE, true);

	if (!rc && pi->payload_ref)
		tq->tp->stats.rx_by_ref++; /* counted once placed (a failed bulk retries) */
	return rc;
}

int roce_mem_payload_to_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
			   const struct roce_pkt_info *pi)
{
	struct mem_cur c;

	if (!cur_payload(&c, pi))
		return VIRTIO_IB_WC_LOC_LEN_ERR;
	if (!mr_copy(tp->rd, mr, va, &c, pi->payload_len, true))
		return VIRTIO_IB_WC_REM_ACCESS_ERR;
	if (pi->payload_ref)
		tp->stats.rx_by_ref++; /* counted once placed (a failed bulk retries) */
	return 0;
}

int roce_mem_payload_to_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
			     uint64_t off, const struct roce_pkt_info *pi)
{
	struct mem_cur c;

	if (!pi->payload_len)
		return 0;
	if (!cur_payload(&c, pi))
		return VIRTIO_IB_WC_LOC_LEN_ERR;
	if (pi->payload_ref)
		tq->tp->stats.rx_by_ref++;
	return sges_copy(tq, tq->qp->pd, sge, n, off, &c, pi->payload_len,
			 VIRTIO_IB_ACCESS_LOCAL_WRITE, true);
}

int roce_mem_to_sges(struct roce_tq *tq, const struct roce_sge *sge, uint32_t n,
		     uint64_t off, const uint8_t *src, uint32_t len)
{
	struct mem_cur c;

	if (!len)
		return 0;
	cur_flat(&c, (uint8_t *)src, len);
	return sges_copy(tq, tq->qp->pd, sge, n, off, &c, len, VIRTIO_IB_ACCESS_LOCAL_WRITE, true);
}

int roce_mem_to_rwqe(struct roce_tq *tq, const struct roce_rwqe *rw, uint64_t off,
		     const uint8_t *src, uint32_t len)
{
	struct mem_cur c;

	if (!len)
		return 0;
	cur_flat(&c, (uint8_t *)src, len);
	return sges_copy(tq, rw->srq ? rw->srq->pd : tq->qp->pd, rw->sge, rw->num_sge, off, &c,
			 len, VIRTIO_IB_ACCESS_LOCAL_WRITE, true);
}

struct rres_mr *roce_mem_rkey(struct roce_tq *tq, uint32_t rkey, uint64_t va,
			      uint64_t len, uint32_t access)
{
	const struct rres_qp *qp = tq->qp;
	struct rres_mr *mr;
	uint64_t off;

	if ((qp->attr.qp_access_flags & access) != access)
		return NULL;
	mr = rres_mr_lookup_rkey(tq->tp->rd, rkey, qp->pd, access);
	if (!mr || mr->type == RRES_MR_DMA || va < mr->iova)
		return NULL;
	if (mr->type == RRES_MR_MW) {
		/* A window never grants more than its MR (the device checks
		 * this at bind; checked again at every access). */
		const struct rres_mr *base = mr->bound_mr;

		if (mr->state != RRES_MR_VALID || !base || base->state != RRES_MR_VALID ||
		    ((access & (VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
		     !(base->access & VIRTIO_IB_ACCESS_LOCAL_WRITE)))
			return NULL;
	} else if (mr->state != RRES_MR_VALID) {
		return NULL;
	}
	off = va - mr->iova;
	if (off > mr->length || len > mr->length - off)
		return NULL;
	return mr;
}

int roce_mem_to_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
		   const uint8_t *src, uint32_t len)
{
	struct mem_cur c;

	cur_flat(&c, (uint8_t *)src, len);
	return mr_copy(tp->rd, mr, va, &c, len, true) ? 0 : VIRTIO_IB_WC_REM_ACCESS_ERR;
}

int roce_mem_from_mr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va,
		     uint8_t *dst, uint32_t len)
{
	struct mem_cur c;

	cur_flat(&c, dst, len);
	return mr_copy(tp->rd, mr, va, &c, len, false) ? 0 : VIRTIO_IB_WC_REM_ACCESS_ERR;
}

uint64_t *roce_mem_atomic_ptr(struct roce_tp *tp, struct rres_mr *mr, uint64_t va)
{
	struct iovec iov[1];

	if (va & 7)
		return NULL;
	if (rres_mr_to_iov(tp->rd, mr, va, 8, iov, 1) != 1 || iov[0].iov_len != 8 ||
	    ((uintptr_t)iov[0].iov_base & 7))
		return NULL;
	return iov[0].iov_base;
}
