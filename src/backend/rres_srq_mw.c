/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extension objects of the RoCE device (docs/spec.md "Extensions beyond
 * the RFC"): shared receive queues, fast-registration MRs and memory
 * windows with their keys, resizing of CQs and QPs, and the memory
 * operations the transport executes from the send queue (REG_MR, LOCAL_INV
 * and received SEND_WITH_INV, BIND_MW).
 *
 * Keys of ALLOC_MR MRs and windows: bits 16..31 the MR-table index, bits
 * 8..15 random (never 0, never the previous value of that index), bits 0..7
 * the driver's (VIRTIO_IB_KEY_CONSUMER_MASK). Like everything in the device
 * model, each operation checks everything before it changes anything.
 */
#include "backend/rres_dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "backend/rres_priv.h"
#include "vhost/vhost_mem.h"

#define KEY_DEV_MASK (~(uint32_t)VIRTIO_IB_KEY_CONSUMER_MASK)

static uint32_t clamp_def(uint32_t v, uint32_t def, uint32_t max)
{
	if (!v)
		v = def;
	return v > max ? max : v;
}

void rres_dev_init_ext(struct rres_dev *rd, const struct rres_dev_cfg *cfg)
{
	struct rres_dev_attr *a = &rd->attr;
	uint64_t rfc_vqs, s = 0;

	rd->ext_offered = cfg->ext_offered || cfg->max_rdma_srqs;
	if (rd->ext_offered) {
		/* 2N+2+M+2L+S virtqueues, at most 65536 */
		rfc_vqs = 2 * (uint64_t)rd->net_pairs + 2 + rd->max_rdma_cqs +
			   2 * (uint64_t)rd->max_rdma_qps;
		s = MIN(cfg->max_rdma_srqs, VIRTIO_NET_ROCE_MAX_SRQS);
		if (rfc_vqs >= VIRTIO_NET_ROCE_MAX_VQS)
			s = 0;
		else
			s = MIN(s, VIRTIO_NET_ROCE_MAX_VQS - rfc_vqs);
	}
	rd->max_rdma_srqs = (uint32_t)s;
	a->max_srq = (uint32_t)s;
	a->max_srq_wr = clamp_def(cfg->max_srq_wr, a->max_qp_wr, a->max_qp_wr);
	a->max_srq_sge = clamp_def(cfg->max_srq_sge, a->max_recv_sge, a->max_recv_sge);
	a->max_mw = clamp_def(cfg->max_mw, RRES_DEF_MAX_MW, RRES_MAX_MR_INDEX);
	a->max_fast_reg_page_list_len = clamp_def(cfg->max_fast_reg_page_list_len,
						  RRES_DEF_MAX_FAST_REG_PAGES, 1u << 20);
	a->max_pkeys = 1;
	a->atomic_cap = VIRTIO_IB_ATOMIC_HCA;
	a->ext_cap_flags = VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS | VIRTIO_IB_DEVICE_MEM_WINDOW |
			   VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B | VIRTIO_IB_DEVICE_RESIZE_CQ |
			   VIRTIO_IB_DEVICE_RESIZE_MAX_WR;
	if (s)
		a->ext_cap_flags |= VIRTIO_IB_DEVICE_SRQ;
	rd->port_ev.id = 1;
}

void rres_dev_set_ext(struct rres_dev *rd, bool on)
{
	rd->ext = on;
	/* a driver without the extension never sees an event */
	while (!on && rd->ev_head)
		rres_event_drop(rd, rd->ev_head);
}

void rres_dev_link_changed(struct rres_dev *rd, bool up)
{
	rres_event_raise(rd, &rd->port_ev,
			 up ? VIRTIO_IB_EVENT_PORT_ACTIVE : VIRTIO_IB_EVENT_PORT_ERR);
}

bool rres_mr_room(const struct rres_dev *rd)
{
	return rres_table_room(&rd->mrs) && rd->mrs.used - rd->nmw < rd->attr.max_mr;
}

bool rres_mr_access_ok(const struct rres_dev *rd, uint32_t access)
{
	uint32_t ok = VIRTIO_IB_ACCESS_RFC_MASK;

	if (rd->ext && rd->attr.atomic_cap != VIRTIO_IB_ATOMIC_NONE)
		ok |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	if (rd->ext && (rd->attr.ext_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW))
		ok |= VIRTIO_IB_ACCESS_MW_BIND;
	if (access & ~ok)
		return false;
	if ((access & (VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & VIRTIO_IB_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

/* ---- SRQ ---------------------------------------------------------------- */

struct rres_srq *rres_srq_lookup(const struct rres_dev *rd, uint32_t srqn)
{
	return rres_table_get(&rd->srqs, srqn);
}

enum rres_err rres_srq_create(struct rres_dev *rd, uint32_t pdn, uint32_t max_wr,
			      uint32_t max_sge, struct rres_srq **out)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct rres_srq *srq;
	int64_t idx;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (!max_wr || max_wr > rd->attr.max_srq_wr || max_sge > rd->attr.max_srq_sge)
		return RRES_ERR_RANGE;
	if (!rres_table_room(&rd->srqs))
		return RRES_ERR_LIMIT;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return RRES_ERR_NOMEM;
	idx = rres_table_alloc(&rd->srqs);
	srq->srqn = (uint32_t)idx;
	srq->pd = pd;
	srq->max_wr = max_wr;
	srq->max_sge = max_sge;
	srq->vq = rres_ring_of_srq(rd, srq->srqn);
	srq->ev.id = srq->srqn;
	if (rd->hooks.srq_create && rd->hooks.srq_create(rd, srq)) {
		rres_table_unalloc(&rd->srqs, srq->srqn);
		free(srq);
		return RRES_ERR_NOMEM;
	}
	pd->refcnt++;
	rd->srqs.slot[idx] = srq;
	*out = srq;
	return RRES_OK;
}

enum rres_err rres_srq_modify(struct rres_dev *rd, uint32_t srqn, uint32_t attr_mask,
			      uint32_t srq_limit)
{
	struct rres_srq *srq = rres_srq_lookup(rd, srqn);

	if (!srq)
		return RRES_ERR_BAD_HANDLE;
	if (attr_mask != VIRTIO_IB_SRQ_LIMIT)
		return RRES_ERR_ATTR_MASK; /* 0, unknown bits, or a resize */
	if (srq_limit > srq->max_wr)
		return RRES_ERR_RANGE;
	srq->srq_limit = srq_limit;
	return RRES_OK;
}

void rres_srq_free(struct rres_dev *rd, struct rres_srq *srq)
{
	if (rd->hooks.srq_destroy)
		rd->hooks.srq_destroy(rd, srq);
	rres_event_drop(rd, &srq->ev);
	srq->pd->refcnt--;
	rres_table_free(&rd->srqs, srq->srqn);
	free(srq);
}

enum rres_err rres_srq_destroy(struct rres_dev *rd, uint32_t srqn)
{
	struct rres_srq *srq = rres_srq_lookup(rd, srqn);

	if (!srq)
		return RRES_ERR_BAD_HANDLE;
	if (srq->refcnt)
		return RRES_ERR_IN_USE;
	rres_srq_free(rd, srq);
	return RRES_OK;
}

/* ---- ALLOC_MR, ALLOC_MW ------------------------------------------------- */

/* Index and initial key (consumer byte 0) of a new ALLOC_MR MR or window,
 * then publish it (the caller checked the table has room). */
static void rres_mr_publish8(struct rres_dev *rd, struct rres_mr *mr, struct rres_pd *pd)
{
	uint32_t idx = (uint32_t)rres_table_alloc(&rd->mrs);
	uint32_t last_l = (rd->mr_lkey8[idx] >> 8) & 0xff;
	uint32_t last_r = (rd->mr_rkey8[idx] >> 8) & 0xff;
	uint32_t r;

	do {
		r = rres_rng_u32(&rd->rng) & 0xff;
	} while (!r || r == last_l || r == last_r);
	rd->mr_lkey8[idx] = rd->mr_rkey8[idx] = (uint16_t)(r << 8);
	mr->mrn = idx;
	mr->pd = pd;
	mr->lkey = mr->rkey = (idx << RRES_KEY_BITS) | (r << 8);
	mr->state = RRES_MR_FREE;
	mr->page_size = VRDMA_PAGE_SIZE;
	pd->refcnt++;
	rd->mrs.slot[idx] = mr;
}

enum rres_err rres_mr_alloc(struct rres_dev *rd, uint32_t pdn, uint32_t max_num_sg,
			    struct rres_mr **out)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct rres_mr *mr;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (!max_num_sg || max_num_sg > rd->attr.max_fast_reg_page_list_len)
		return RRES_ERR_RANGE;
	if (!rres_mr_room(rd) || !rres_mr_pages_room(rd, max_num_sg))
		return RRES_ERR_LIMIT;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return RRES_ERR_NOMEM;
	/* everything REG_MR needs is allocated now, never on the data path */
	mr->pages = calloc(max_num_sg, sizeof(*mr->pages));
	mr->regions = calloc(max_num_sg, sizeof(*mr->regions));
	if (!mr->pages || !mr->regions) {
		free(mr->pages);
		free(mr->regions);
		free(mr);
		return RRES_ERR_NOMEM;
	}
	mr->type = RRES_MR_FAST;
	mr->max_pages = max_num_sg;
	rres_mr_pages_add(rd, max_num_sg);
	rres_mr_publish8(rd, mr, pd);
	*out = mr;
	return RRES_OK;
}

enum rres_err rres_mw_alloc(struct rres_dev *rd, uint32_t pdn, uint32_t mw_type,
			    struct rres_mr **out)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct rres_mr *mw;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (mw_type != VIRTIO_IB_MW_TYPE_1 && mw_type != VIRTIO_IB_MW_TYPE_2)
		return RRES_ERR_RANGE;
	if (mw_type == VIRTIO_IB_MW_TYPE_2 &&
	    !(rd->attr.ext_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B))
		return RRES_ERR_RANGE;
	if (rd->nmw >= rd->attr.max_mw || !rres_table_room(&rd->mrs))
		return RRES_ERR_LIMIT;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return RRES_ERR_NOMEM;
	mw->type = RRES_MR_MW;
	mw->mw_type = (uint8_t)mw_type;
	rd->nmw++;
	rres_mr_publish8(rd, mw, pd);
	*out = mw;
	return RRES_OK;
}

enum rres_err rres_mw_dealloc(struct rres_dev *rd, uint32_t mwn)
{
	struct rres_mr *mw = rres_mr_lookup(rd, mwn);

	if (!mw || mw->type != RRES_MR_MW)
		return RRES_ERR_BAD_HANDLE;
	rres_mr_free(rd, mw); /* unbinds it first */
	return RRES_OK;
}

/* ---- resize ------------------------------------------------------------- */

enum rres_err rres_cq_resize(struct rres_dev *rd, uint32_t cqn, uint32_t cqe)
{
	struct rres_cq *cq = rres_cq_lookup(rd, cqn);
	int rc;

	if (!cq)
		return RRES_ERR_BAD_HANDLE;
	if (!cqe || cqe > rd->attr.max_cqe)
		return RRES_ERR_RANGE;
	if (rd->hooks.cq_overflowed && rd->hooks.cq_overflowed(rd, cq))
		return RRES_ERR_CQ_STATE;
	if (rd->hooks.cq_resize) {
		rc = rd->hooks.cq_resize(rd, cq, cqe);
		if (rc == -ERANGE)
			return RRES_ERR_RANGE;
		if (rc)
			return RRES_ERR_NOMEM;
	}
	cq->cqe = cqe;
	return RRES_OK;
}

enum rres_err rres_qp_resize(struct rres_dev *rd, uint32_t qpn, const struct rres_qp_cap *cap)
{
	struct rres_qp *qp = rres_qp_lookup(rd, qpn);
	struct rres_qp_cap nc;
	int rc;

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	if (cap->max_send_sge != qp->cap.max_send_sge ||
	    cap->max_recv_sge != qp->cap.max_recv_sge ||
	    cap->max_inline_data != qp->cap.max_inline_data ||
	    cap->max_send_wr > rd->attr.max_qp_wr || cap->max_recv_wr > rd->attr.max_qp_wr ||
	    (qp->srq && cap->max_recv_wr))
		return RRES_ERR_RANGE;
	nc = qp->cap;
	nc.max_send_wr = cap->max_send_wr;
	nc.max_recv_wr = cap->max_recv_wr;
	if (rd->hooks.qp_resize) {
		rc = rd->hooks.qp_resize(rd, qp, &nc);
		if (rc == -ERANGE)
			return RRES_ERR_RANGE;
		if (rc)
			return RRES_ERR_NOMEM;
	}
	qp->cap = nc;
	return RRES_OK;
}

/* ---- memory operations of the send queue -------------------------------- */

int rres_mr_fast_reg(struct rres_dev *rd, const struct rres_pd *pd, uint32_t key,
		     uint64_t iova, uint64_t length, uint64_t page_list_gpa, uint32_t access)
{
	struct rres_mr *mr = rres_table_get(&rd->mrs, key >> RRES_KEY_BITS);
	struct vhost_mem_region *last = NULL, *lr;
	const uint8_t *list = NULL;
	uint32_t i, npages, ncap;

	if (!mr || mr->type != RRES_MR_FAST || mr->pd != pd ||
	    (key & KEY_DEV_MASK) != (mr->lkey & KEY_DEV_MASK) || mr->state != RRES_MR_FREE)
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	if (length > rd->attr.max_mr_size || (length && iova > UINT64_MAX - (length - 1)))
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	if (!rres_mr_access_ok(rd, access))
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	npages = length ? (uint32_t)MIN(rres_span_pages(iova, length), (uint64_t)UINT32_MAX) : 0;
	if (npages > mr->max_pages)
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	if (npages) {
		/* the array: 8-byte aligned, inside one region */
		if (!rd->mem || (page_list_gpa & 7))
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		lr = vhost_mem_find(rd->mem, page_list_gpa);
		if (!lr || lr->size < 8ull * npages ||
		    page_list_gpa - lr->gpa > lr->size - 8ull * npages)
			return VIRTIO_IB_WC_LOC_PROT_ERR;
		list = lr->host + (page_list_gpa - lr->gpa);
	}
	/* every page: aligned, inside one region; no reference before all pass
	 * (regions[] has room for max_pages entries: no allocation here) */
	mr->nregions = 0;
	ncap = mr->max_pages;
	for (i = 0; i < npages; i++) {
		uint64_t gpa = get_le64(list + 8 * (size_t)i);
		struct vhost_mem_region *r = last;

		if (gpa & (VRDMA_PAGE_SIZE - 1))
			goto fail;
		if (!r || gpa < r->gpa || gpa - r->gpa > r->size - VRDMA_PAGE_SIZE) {
			r = vhost_mem_find(rd->mem, gpa);
			if (!r || r->size < VRDMA_PAGE_SIZE ||
			    gpa - r->gpa > r->size - VRDMA_PAGE_SIZE)
				goto fail;
			if (rres_region_set_add(&mr->regions, &mr->nregions, &ncap, r))
				goto fail;
			last = r;
		}
		mr->pages[i] = r->host + (gpa - r->gpa);
	}
	for (i = 0; i < mr->nregions; i++)
		vhost_mem_region_get(mr->regions[i]);
	mr->iova = iova;
	mr->length = length;
	mr->npages = npages;
	rres_mr_pages_set(mr);
	mr->access = access;
	mr->lkey = mr->rkey = key;
	mr->state = RRES_MR_VALID;
	return 0;
fail:
	mr->nregions = 0;
	return VIRTIO_IB_WC_LOC_PROT_ERR;
}

/* Drop the pages of a VALID ALLOC_MR MR (it becomes FREE). */
static void rres_mr_fast_unreg(struct rres_mr *mr)
{
	uint32_t i;

	for (i = 0; i < mr->nregions; i++)
		vhost_mem_region_put(mr->regions[i]);
	mr->nregions = 0;
	mr->npages = 0;
	mr->contig = NULL;
	mr->state = RRES_MR_FREE;
}

/* Unbind a window from its MR (it becomes FREE). */
static void rres_mw_unbind(struct rres_mr *mw)
{
	if (mw->bound_mr)
		mw->bound_mr->nbound--;
	mw->bound_mr = NULL;
	mw->iova = 0;
	mw->length = 0;
	mw->access = 0;
	mw->state = RRES_MR_FREE;
}

int rres_mr_rekey(struct rres_dev *rd, const struct rres_pd *pd, uint32_t mrn, uint32_t key,
		  uint32_t access)
{
	struct rres_mr *mr = rres_mr_lookup(rd, mrn);

	if (!mr || mr->type != RRES_MR_FAST || mr->pd != pd || mr->state != RRES_MR_VALID ||
	    mr->nbound || (key & KEY_DEV_MASK) != (mr->lkey & KEY_DEV_MASK) ||
	    !rres_mr_access_ok(rd, access))
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	mr->lkey = mr->rkey = key;
	mr->access = access;
	return 0;
}

int rres_key_invalidate(struct rres_dev *rd, const struct rres_pd *pd, uint32_t key)
{
	struct rres_mr *o = rres_table_get(&rd->mrs, key >> RRES_KEY_BITS);

	(void)rd;
	if (!o || o->pd != pd || o->rkey != key)
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	if (o->type == RRES_MR_FAST) {
		if (o->state == RRES_MR_VALID) {
			if (o->nbound)
				return VIRTIO_IB_WC_LOC_PROT_ERR;
			rres_mr_fast_unreg(o);
		}
		return 0;
	}
	if (o->type == RRES_MR_MW && o->mw_type == VIRTIO_IB_MW_TYPE_2) {
		if (o->state == RRES_MR_VALID)
			rres_mw_unbind(o);
		return 0;
	}
	return VIRTIO_IB_WC_LOC_PROT_ERR;
}

int rres_mw_bind(struct rres_dev *rd, const struct rres_pd *pd, uint32_t mw_rkey,
		 uint32_t mr_lkey, uint64_t addr, uint64_t length, uint32_t access)
{
	struct rres_mr *mw = rres_table_get(&rd->mrs, mw_rkey >> RRES_KEY_BITS);
	struct rres_mr *mr;
	uint64_t off;

	if (!mw || mw->type != RRES_MR_MW || mw->pd != pd ||
	    (mw_rkey & KEY_DEV_MASK) != (mw->rkey & KEY_DEV_MASK))
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if (mw->mw_type == VIRTIO_IB_MW_TYPE_2 && mw->state != RRES_MR_FREE)
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if (mw->mw_type == VIRTIO_IB_MW_TYPE_1 && !length) {
		rres_mw_unbind(mw);
		mw->lkey = mw->rkey = mw_rkey;
		return 0;
	}
	mr = rres_mr_lookup_lkey(rd, mr_lkey, pd, VIRTIO_IB_ACCESS_MW_BIND);
	if (!mr || mr->type == RRES_MR_DMA)
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if (addr < mr->iova || (length && addr > UINT64_MAX - (length - 1)))
		return VIRTIO_IB_WC_MW_BIND_ERR;
	off = addr - mr->iova;
	if (off > mr->length || length > mr->length - off)
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if (access & ~(uint32_t)VIRTIO_IB_MW_ACCESS_MASK)
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if ((access & (VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & VIRTIO_IB_ACCESS_LOCAL_WRITE))
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if ((access & VIRTIO_IB_ACCESS_REMOTE_ATOMIC) &&
	    (!rd->ext || rd->attr.atomic_cap == VIRTIO_IB_ATOMIC_NONE))
		return VIRTIO_IB_WC_MW_BIND_ERR;
	if (mw->bound_mr)
		mw->bound_mr->nbound--; /* a type 1 window moves */
	mw->bound_mr = mr;
	mr->nbound++;
	mw->iova = addr;
	mw->length = length;
	mw->access = access;
	mw->lkey = mw->rkey = mw_rkey;
	mw->state = RRES_MR_VALID;
	return 0;
}
