// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma queue pairs.
 *
 * A QP is CREATE_QP plus two virtqueues at vrdma_vq_sq / _rq(1, M, index)
 * (index = qpn & 0x3fff). Each work queue has a slot array in shared memory,
 * one slot per WR it can hold (the capacity told to the device):
 *   send slot:    struct virtio_rdma_sq_req (576 bytes: header + 512-byte
 *                 inline area) + max_send_sge * 16-byte SGEs
 *   receive slot: struct virtio_rdma_rq_req (24 bytes) + max_recv_sge SGEs
 * A WR is encoded into a free slot and posted as ONE device-readable
 * descriptor of exactly the bytes it uses (576 + 16 * num_sge, or 576 with
 * inline data; 24 + 16 * num_sge). The device returns a descriptor when its
 * WR has completed (signaled or not), so each post first reclaims returned
 * descriptors; the ring therefore bounds the WRs outstanding. A second bound,
 * the completion log (struct vrdma_wq), keeps a WR's place until its
 * completion is polled, as hardware queues do, so CQs sized for their
 * queues cannot overflow. A full queue is -ENOMEM. The device is notified once per post call, and only
 * when it asked (event index / NO_NOTIFY); the rings have a kick eventfd and
 * no call eventfd (completions arrive through CQs).
 *
 * Every WR is validated before it takes a slot, so a refused WR leaves the
 * queue as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"

#define SQ_REQ_SIZE sizeof(struct virtio_rdma_sq_req)
#define RQ_REQ_SIZE sizeof(struct virtio_rdma_rq_req)
#define SGE_SIZE    sizeof(struct virtio_rdma_sge)

#define SEND_FLAGS_KNOWN                                                        \
	(VIRTIO_IB_SEND_FENCE | VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_SOLICITED | \
	 VIRTIO_IB_SEND_INLINE)

/* ---- work queues ----------------------------------------------------------- */

static void wq_free_chunks(struct vrdma_dev *dev, struct vrdma_wq *wq)
{
	while (wq->chunks) {
		struct vrdma_wq_chunk *c = wq->chunks;

		wq->chunks = c->next;
		vrdma_shm_free(dev, c->mem, c->bytes);
		free(c);
	}
}

void vrdma_rdma_wq_release(struct vrdma_dev *dev, struct vrdma_wq *wq)
{
	vrdma_queue_teardown(wq->q);
	wq->q = NULL;
	wq_free_chunks(dev, wq);
	free(wq->free);
	wq->free = NULL;
	free(wq->log_sig);
	wq->log_sig = NULL;
	pthread_spin_destroy(&wq->lock);
}

/* Give slot back to the free FIFO (it has room: nalloc <= ring). */
static void wq_slot_put(struct vrdma_wq *wq, uint8_t *slot)
{
	wq->free[(wq->free_head + wq->nfree) & (wq->ring - 1)] = slot;
	wq->nfree++;
}

/* The oldest free slot (nfree > 0), taken by wq_slot_take once posted. */
static uint8_t *wq_slot_peek(const struct vrdma_wq *wq)
{
	return wq->free[wq->free_head];
}

static void wq_slot_take(struct vrdma_wq *wq)
{
	wq->free_head = (wq->free_head + 1) & (wq->ring - 1);
	wq->nfree--;
}

/* Add n slots (a new chunk) to the free FIFO (wq->free has room: the
 * caller keeps nalloc <= ring). Returns 0 or -ENOMEM. */
static int wq_add_slots(struct vrdma_dev *dev, struct vrdma_wq *wq, uint32_t n)
{
	struct vrdma_wq_chunk *c;
	uint32_t i;

	if (!n)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->bytes = (size_t)n * wq->slot_size;
	c->mem = vrdma_shm_alloc(dev, c->bytes, 64);
	if (!c->mem) {
		free(c);
		return -ENOMEM;
	}
	c->next = wq->chunks;
	wq->chunks = c;
	for (i = 0; i < n; i++)
		wq_slot_put(wq, c->mem + (size_t)i * wq->slot_size);
	wq->nalloc += n;
	return 0;
}

uint32_t vrdma_rdma_ring_size(const struct vrdma_rdma *r, uint32_t cap)
{
	uint32_t ring = vrdma_rdma_pow2(cap < 2 ? 2 : cap);

	/* Room to grow in place (RESIZE_QP), rings are cheap: ~26 bytes an
	 * entry; slots are only allocated for the capacity. */
	if (vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_RESIZE_MAX_WR))
		ring = ring >= 8192 ? 32768 : ring * 4;
	return ring;
}

int vrdma_rdma_wq_setup(struct vrdma_dev *dev, struct vrdma_wq *wq, unsigned idx,
			uint32_t nslots, uint32_t ring, size_t slot_size, bool send)
{
	int rc;

	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	wq->model = ((struct vrdma_rdma *)dev->rdma)->model;
	wq->nslots = nslots;
	wq->ring = ring;
	wq->free_head = wq->nfree = 0;
	wq->slot_size = ALIGN_UP(slot_size, (size_t)64);
	wq->free = malloc((size_t)ring * sizeof(*wq->free));
	atomic_init(&wq->log_head, 0);
	atomic_init(&wq->log_tail, 0);
	if (send)
		wq->log_sig = calloc(ring, 1);
	if (!wq->free || (send && !wq->log_sig)) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = wq_add_slots(dev, wq, nslots);
	if (rc)
		goto fail;
	rc = vrdma_queue_setup(dev, idx, (uint16_t)ring, 0, &wq->q);
	if (rc)
		goto fail;
	return 0;
fail:
	vrdma_rdma_wq_release(dev, wq);
	return rc;
}

/* Take back the slots of WRs the device returned (wq->lock held). */
static void wq_reclaim(struct vrdma_wq *wq)
{
	for (;;) {
		uint32_t len = 0;
		uint8_t *slot = vq_drv_get_used(&wq->q->vq, &len);

		if (!slot) {
			if (len == UINT32_MAX) {
				wq->bad++;
				continue;
			}
			return;
		}
		if (wq->nfree < wq->ring)
			wq_slot_put(wq, slot);
	}
}

/* Forget every WR of the log (RESET). */
static void wq_log_clear(struct vrdma_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	atomic_store(&wq->log_head, atomic_load(&wq->log_tail));
	pthread_spin_unlock(&wq->lock);
}

/* Whether the log has room for another WR (wq->lock held). */
static bool wq_log_room(struct vrdma_wq *wq)
{
	uint32_t tail = atomic_load_explicit(&wq->log_tail, memory_order_relaxed);

	return tail - atomic_load_explicit(&wq->log_head, memory_order_acquire) < wq->nslots;
}

void vrdma_rdma_qp_retire(struct vrdma_qp *qp, const struct vrdma_wc *wc)
{
	bool recv = wc->opcode == VIRTIO_IB_WC_RECV || wc->opcode == VIRTIO_IB_WC_RECV_RDMA_WITH_IMM;
	struct vrdma_wq *wq = recv ? &qp->rq : &qp->sq;
	uint32_t head = atomic_load_explicit(&wq->log_head, memory_order_relaxed), next, tail;

	if (recv && qp->srq)
		return; /* an SRQ has no log */

	do {
		tail = atomic_load_explicit(&wq->log_tail, memory_order_acquire);
		if (head == tail)
			return; /* nothing outstanding: a stale completion */
		next = head + 1;
		if (!recv && wc->status == VIRTIO_IB_WC_SUCCESS && !qp->sq_sig_all) {
			/* Unsignaled WRs before it completed without entries:
			 * this is the first signaled one. */
			next = head;
			while (next != tail && !wq->log_sig[next & (wq->ring - 1)])
				next++;
			if (next != tail)
				next++;
		}
	} while (!atomic_compare_exchange_weak_explicit(&wq->log_head, &head, next,
							memory_order_release,
							memory_order_relaxed));
}

/* ---- creation / destruction ---------------------------------------------- */

void vrdma_rdma_qp_free(struct vrdma_rdma *r, struct vrdma_qp *qp)
{
	struct vrdma_dev *dev = qp->dev;

	r->send_wrs += qp->sq.posted;
	r->recv_wrs += qp->rq.posted;
	r->sq_full += qp->sq.full;
	r->rq_full += qp->rq.full;
	r->qps[qp->index] = NULL;
	if (qp->type != VIRTIO_IB_QPT_GSI)
		r->nqps--;
	vrdma_rdma_cq_detach(qp->send_cq, qp);
	if (qp->recv_cq != qp->send_cq)
		vrdma_rdma_cq_detach(qp->recv_cq, qp);
	qp->send_cq->refs--;
	qp->recv_cq->refs--;
	r->pds[qp->pdn].refs--;
	if (qp->srq)
		qp->srq->refs--;
	vrdma_rdma_wq_release(dev, &qp->sq);
	vrdma_rdma_wq_release(dev, &qp->rq);
	free(qp);
}

static bool qp_type_ok(uint8_t t)
{
	return t == VIRTIO_IB_QPT_GSI || t == VIRTIO_IB_QPT_RC || t == VIRTIO_IB_QPT_UC ||
	       t == VIRTIO_IB_QPT_UD;
}

int vrdma_qp_create(struct vrdma_dev *dev, const struct vrdma_qp_init *init,
		    struct vrdma_qp **out)
{
	struct virtio_rdma_cmd_create_qp_ext c;
	struct virtio_rdma_ack_create_qp a;
	struct virtio_rdma_cmd_destroy_qp d;
	const struct vrdma_qp_cap *in;
	struct vrdma_srq *srq = init ? init->srq : NULL;
	struct vrdma_qp *qp = NULL;
	struct vrdma_qp_cap cap;
	struct vrdma_rdma *r;
	uint32_t qpn, index;
	int rc;

	if (!dev || !init || !out)
		return -EINVAL;
	in = &init->cap;
	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	rc = -EINVAL;
	if (!vrdma_rdma_pd_live(r, init->pdn) || !init->send_cq || !init->recv_cq ||
	    init->send_cq->dev != dev || init->recv_cq->dev != dev ||
	    r->cqs[init->send_cq->cqn] != init->send_cq ||
	    r->cqs[init->recv_cq->cqn] != init->recv_cq || !qp_type_ok(init->qp_type))
		goto out;
	if (srq) {
		if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_SRQ)) {
			rc = -EOPNOTSUPP;
			goto out;
		}
		if (srq->dev != dev || srq->srqn >= r->nsrq_rings || r->srqs[srq->srqn] != srq ||
		    init->qp_type == VIRTIO_IB_QPT_GSI)
			goto out;
	}
	if (in->max_send_wr > r->attr.max_qp_wr ||
	    (!srq && in->max_recv_wr > r->attr.max_qp_wr) ||
	    in->max_send_sge > r->attr.max_send_sge ||
	    (!srq && in->max_recv_sge > r->attr.max_recv_sge) ||
	    in->max_inline_data > VIRTIO_RDMA_INLINE_DATA_SIZE)
		goto out;
	rc = -ENOMEM;
	if (init->qp_type == VIRTIO_IB_QPT_GSI) {
		if (r->nqp_rings < 2 || r->qps[VRDMA_GSI_QPN])
			goto out;
	} else if (r->nqps >= r->attr.max_qp) {
		goto out;
	}

	/* Capacities: WRs rounded up to a power of two (the ring size). SGEs
	 * and inline data as asked: the device sizes its per-WR state from
	 * them. */
	cap = *in;
	if (cap.max_send_wr)
		cap.max_send_wr = MIN(vrdma_rdma_pow2(cap.max_send_wr), r->attr.max_qp_wr);
	if (cap.max_recv_wr)
		cap.max_recv_wr = MIN(vrdma_rdma_pow2(cap.max_recv_wr), r->attr.max_qp_wr);
	if (srq) {
		/* The device ignores them and reports 0. */
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(init->pdn);
	c.qp_type = init->qp_type;
	c.sq_sig_all = init->sq_sig_all ? 1 : 0;
	c.send_cqn = htole32(init->send_cq->cqn);
	c.recv_cqn = htole32(init->recv_cq->cqn);
	c.cap.max_send_wr = htole32(cap.max_send_wr);
	c.cap.max_recv_wr = htole32(cap.max_recv_wr);
	c.cap.max_send_sge = htole32(cap.max_send_sge);
	c.cap.max_recv_sge = htole32(cap.max_recv_sge);
	c.cap.max_inline_data = htole32(cap.max_inline_data);
	if (srq) {
		c.ext_flags = htole32(VIRTIO_IB_QP_CREATE_SRQ);
		c.srqn = htole32(srq->srqn);
	}
	memset(&a, 0, sizeof(a));
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	qpn = le32toh(a.qpn);
	index = vrdma_qpn_index(qpn);
	if (qpn > VRDMA_QPN_MASK || index == VRDMA_QP_INDEX_RESERVED || index >= r->nqp_rings ||
	    r->qps[index] ||
	    (init->qp_type == VIRTIO_IB_QPT_GSI) != (index == vrdma_qpn_index(VRDMA_GSI_QPN))) {
		LOG_PEER("vrdma: CREATE_QP returned bad qpn %#x", qpn);
		rc = -EIO;
		goto undo;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		rc = -ENOMEM;
		goto undo;
	}
	qp->dev = dev;
	qp->qpn = qpn;
	qp->index = index;
	qp->pdn = init->pdn;
	qp->type = init->qp_type;
	qp->sq_sig_all = init->sq_sig_all;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->cap = cap;
	qp->max_msg_sz = r->max_msg_sz;
	qp->max_sge_rd = r->attr.max_sge_rd;
	atomic_init(&qp->state, VIRTIO_IB_QPS_RESET);
	qp->srq = srq;
	rc = vrdma_rdma_wq_setup(dev, &qp->sq, r->model->vq_sq(r, index), cap.max_send_wr,
				 vrdma_rdma_ring_size(r, cap.max_send_wr),
				 r->model->sq_slot_size(cap.max_send_sge, cap.max_inline_data),
				 true);
	if (rc)
		goto undo;
	if (srq) {
		/* The QP's own receive virtqueue is never used: not set up. */
		pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
		rc = 0;
	} else {
		rc = vrdma_rdma_wq_setup(dev, &qp->rq, r->model->vq_rq(r, index),
					 cap.max_recv_wr, vrdma_rdma_ring_size(r, cap.max_recv_wr),
					 r->model->rq_slot_size(cap.max_recv_sge), false);
	}
	if (rc) {
		vrdma_rdma_wq_release(dev, &qp->sq);
		goto undo;
	}
	rc = vrdma_rdma_cq_attach(qp->send_cq, qp);
	if (!rc && qp->recv_cq != qp->send_cq) {
		rc = vrdma_rdma_cq_attach(qp->recv_cq, qp);
		if (rc)
			vrdma_rdma_cq_detach(qp->send_cq, qp);
	}
	if (rc) {
		vrdma_rdma_wq_release(dev, &qp->sq);
		vrdma_rdma_wq_release(dev, &qp->rq);
		goto undo;
	}
	r->qps[index] = qp;
	if (srq)
		srq->refs++;
	if (qp->type != VIRTIO_IB_QPT_GSI)
		r->nqps++;
	qp->send_cq->refs++;
	qp->recv_cq->refs++;
	r->pds[qp->pdn].refs++;
	*out = qp;
	goto out;
undo:
	free(qp);
	d.qpn = a.qpn;
	if (vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &d, sizeof(d), NULL, 0))
		LOG_WARN("vrdma: undoing CREATE_QP %#x failed", qpn);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* Events the device wrote for the QP precede the ack: read them and drop
 * the QP's (its QPN never comes back). The device flushed the WRs: reset
 * (tear down) both rings. */
static void qp_drop(struct vrdma_rdma *r, uint32_t qpn VRDMA_UNUSED, void *obj)
{
	vrdma_rdma_events_forget(r, obj);
	vrdma_rdma_qp_free(r, obj);
}

static const struct vrdma_rdma_kind qp_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DESTROY_QP,
	.drop = qp_drop,
};

int vrdma_qp_destroy(struct vrdma_qp *qp)
{
	return qp ? vrdma_rdma_destroy(qp->dev, &qp_kind, qp->qpn, qp) : -EINVAL;
}

uint32_t vrdma_qp_num(const struct vrdma_qp *qp)
{
	return qp->qpn;
}

void vrdma_qp_get_cap(const struct vrdma_qp *qp, struct vrdma_qp_cap *cap)
{
	*cap = qp->cap;
}

void vrdma_qp_set_context(struct vrdma_qp *qp, void *context)
{
	qp->context = context;
}

void *vrdma_qp_context(const struct vrdma_qp *qp)
{
	return qp->context;
}

/* ---- resize (extension) ------------------------------------------------------- */

/* Whether wq's WRs have all completed and been polled (wq->lock held). */
static bool wq_quiescent(struct vrdma_wq *wq)
{
	wq_reclaim(wq);
	return vq_drv_num_free(&wq->q->vq) == wq->q->num && vrdma_wq_log_used(wq) == 0;
}

/* Make wq hold n WRs (RESIZE_QP accepted it; device lock held). A larger
 * ring replaces the (quiescent) one. Returns 0 or -errno. */
static int wq_resize(struct vrdma_dev *dev, const struct vrdma_rdma *r, struct vrdma_wq *wq,
		     uint32_t n)
{
	int rc = 0;

	pthread_spin_lock(&wq->lock);
	if (n > wq->ring) {
		uint32_t ring = vrdma_rdma_ring_size(r, n);
		uint8_t **nf = malloc((size_t)ring * sizeof(*nf));
		uint8_t *ns = wq->log_sig ? calloc(ring, 1) : NULL;

		if (!nf || (wq->log_sig && !ns)) {
			free(nf);
			free(ns);
			rc = -ENOMEM;
			goto out;
		}
		rc = vrdma_queue_stop(wq->q);
		if (!rc)
			rc = vrdma_queue_restart(wq->q, (uint16_t)ring);
		if (rc) {
			free(nf);
			free(ns);
			goto out;
		}
		for (uint32_t i = 0; i < wq->nfree; i++)
			nf[i] = wq->free[(wq->free_head + i) & (wq->ring - 1)];
		free(wq->free);
		wq->free = nf;
		wq->free_head = 0;
		if (ns) {
			free(wq->log_sig);
			wq->log_sig = ns;
		}
		wq->ring = ring;
	}
	if (n > wq->nalloc)
		rc = wq_add_slots(dev, wq, n - wq->nalloc);
	if (!rc)
		wq->nslots = n;
out:
	pthread_spin_unlock(&wq->lock);
	return rc;
}

/* Whether wq may take n WRs: -EBUSY if a ring replacement is needed and
 * WRs are outstanding, or n is below what is outstanding. */
static int wq_resize_check(struct vrdma_wq *wq, uint32_t n)
{
	int rc = 0;

	pthread_spin_lock(&wq->lock);
	if (n < vrdma_wq_log_used(wq) || (n > wq->ring && !wq_quiescent(wq)))
		rc = -EBUSY;
	pthread_spin_unlock(&wq->lock);
	return rc;
}

static int qp_resize_cmd(struct vrdma_rdma *r, const struct vrdma_qp *qp, uint32_t s,
			 uint32_t rw)
{
	struct virtio_rdma_cmd_resize_qp c;
	struct virtio_rdma_ack_resize_qp a;

	memset(&c, 0, sizeof(c));
	c.qpn = htole32(qp->qpn);
	c.cap.max_send_wr = htole32(s);
	c.cap.max_recv_wr = htole32(rw);
	c.cap.max_send_sge = htole32(qp->cap.max_send_sge);
	c.cap.max_recv_sge = htole32(qp->cap.max_recv_sge);
	c.cap.max_inline_data = htole32(qp->cap.max_inline_data);
	return vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_RESIZE_QP, &c, sizeof(c), &a, sizeof(a));
}

int vrdma_qp_resize(struct vrdma_qp *qp, uint32_t max_send_wr, uint32_t max_recv_wr)
{
	struct vrdma_dev *dev;
	struct vrdma_rdma *r;
	uint32_t ns, nr;
	int rc;

	if (!qp)
		return -EINVAL;
	dev = qp->dev;
	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_RESIZE_MAX_WR)) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	rc = -EINVAL;
	if (max_send_wr > r->attr.max_qp_wr || max_recv_wr > r->attr.max_qp_wr ||
	    (qp->srq && max_recv_wr))
		goto out;
	ns = max_send_wr ? MIN(vrdma_rdma_pow2(max_send_wr), r->attr.max_qp_wr) : 0;
	nr = max_recv_wr ? MIN(vrdma_rdma_pow2(max_recv_wr), r->attr.max_qp_wr) : 0;
	rc = wq_resize_check(&qp->sq, ns);
	if (!rc && !qp->srq)
		rc = wq_resize_check(&qp->rq, nr);
	if (rc)
		goto out;
	rc = qp_resize_cmd(r, qp, ns, nr);
	if (rc)
		goto out;
	rc = wq_resize(dev, r, &qp->sq, ns);
	if (!rc && !qp->srq)
		rc = wq_resize(dev, r, &qp->rq, nr);
	if (rc) {
		/* Keep the device at what the queues can hold. */
		if (qp_resize_cmd(r, qp, qp->sq.nslots, qp->srq ? 0 : qp->rq.nslots))
			LOG_WARN("vrdma: QP %#x: undoing RESIZE_QP failed", qp->qpn);
		goto out;
	}
	qp->cap.max_send_wr = ns;
	qp->cap.max_recv_wr = nr;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* ---- modify / query ---------------------------------------------------------- */

/* Range checks of the attributes in mask. 0 or -EINVAL. */
static int qp_check_attr(const struct vrdma_rdma *r, const struct vrdma_qp_attr *a,
			 uint32_t mask)
{
	if (mask & ~(uint32_t)VIRTIO_IB_QP_ATTR_MASK_ALL || (mask & VIRTIO_IB_QP_CAP))
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_STATE) && a->qp_state > VIRTIO_IB_QPS_ERR)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_CUR_STATE) && a->cur_qp_state > VIRTIO_IB_QPS_ERR)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_PATH_MTU) &&
	    (a->path_mtu < VIRTIO_IB_MTU_256 || a->path_mtu > VIRTIO_IB_MTU_4096))
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_RQ_PSN) && a->rq_psn > VRDMA_QPN_MASK)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_SQ_PSN) && a->sq_psn > VRDMA_QPN_MASK)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_DEST_QPN) && a->dest_qp_num > VRDMA_QPN_MASK)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(uint32_t)(VIRTIO_IB_ACCESS_RFC_MASK |
					      VIRTIO_IB_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & VIRTIO_IB_ACCESS_REMOTE_ATOMIC) &&
	    (!r->ext || r->attr.atomic_cap == VIRTIO_IB_ATOMIC_NONE))
		return -EOPNOTSUPP;
	if ((mask & VIRTIO_IB_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > r->attr.max_qp_init_rd_atom)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > r->attr.max_qp_rd_atom)
		return -EINVAL;
	if ((mask & VIRTIO_IB_QP_AV) && vrdma_rdma_check_av(r, &a->ah_attr))
		return -EINVAL;
	return 0;
}

int vrdma_qp_modify(struct vrdma_qp *qp, const struct vrdma_qp_attr *a, uint32_t mask)
{
	struct virtio_rdma_cmd_modify_qp c;
	struct vrdma_rdma *r;
	int rc;

	if (!qp || !a)
		return -EINVAL;
	rc = vrdma_rdma_enter(qp->dev, &r);
	if (rc)
		return rc;
	rc = qp_check_attr(r, a, mask);
	if (rc)
		goto out;
	/* Only the attributes of the mask are sent; the rest is zero. */
	memset(&c, 0, sizeof(c));
	c.qpn = htole32(qp->qpn);
	c.attr_mask = htole32(mask);
	if (mask & VIRTIO_IB_QP_STATE)
		c.qp_state = a->qp_state;
	if (mask & VIRTIO_IB_QP_CUR_STATE)
		c.cur_qp_state = a->cur_qp_state;
	if (mask & VIRTIO_IB_QP_PATH_MTU)
		c.path_mtu = a->path_mtu;
	if (mask & VIRTIO_IB_QP_MAX_QP_RD_ATOMIC)
		c.max_rd_atomic = a->max_rd_atomic;
	if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
		c.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & VIRTIO_IB_QP_MIN_RNR_TIMER)
		c.min_rnr_timer = a->min_rnr_timer;
	if (mask & VIRTIO_IB_QP_TIMEOUT)
		c.timeout = a->timeout;
	if (mask & VIRTIO_IB_QP_RETRY_CNT)
		c.retry_cnt = a->retry_cnt;
	if (mask & VIRTIO_IB_QP_RNR_RETRY)
		c.rnr_retry = a->rnr_retry;
	if (mask & VIRTIO_IB_QP_QKEY)
		c.qkey = htole32(a->qkey);
	if (mask & VIRTIO_IB_QP_RQ_PSN)
		c.rq_psn = htole32(a->rq_psn);
	if (mask & VIRTIO_IB_QP_SQ_PSN)
		c.sq_psn = htole32(a->sq_psn);
	if (mask & VIRTIO_IB_QP_DEST_QPN)
		c.dest_qp_num = htole32(a->dest_qp_num);
	if (mask & VIRTIO_IB_QP_ACCESS_FLAGS)
		c.qp_access_flags = htole32(a->qp_access_flags);
	if (mask & VIRTIO_IB_QP_RATE_LIMIT)
		c.rate_limit = htole32(a->rate_limit);
	if (mask & VIRTIO_IB_QP_AV)
		vrdma_rdma_av_to_wire(&a->ah_attr, &c.ah_attr);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_MODIFY_QP, &c, sizeof(c), NULL, 0);
	if (rc == 0 && (mask & VIRTIO_IB_QP_STATE)) {
		atomic_store(&qp->state, a->qp_state);
		if (a->qp_state == VIRTIO_IB_QPS_RESET) {
			/* The device dropped the queued WRs without completions. */
			wq_log_clear(&qp->sq);
			wq_log_clear(&qp->rq);
		}
	}
out:
	vrdma_dev_unlock(qp->dev);
	return rc;
}

int vrdma_qp_query(struct vrdma_qp *qp, uint32_t mask, struct vrdma_qp_attr *a)
{
	struct virtio_rdma_cmd_query_qp c;
	struct virtio_rdma_ack_query_qp q;
	struct vrdma_rdma *r;
	int rc;

	if (!qp || !a)
		return -EINVAL;
	if (mask & ~(uint32_t)VIRTIO_IB_QP_ATTR_MASK_ALL)
		return -EINVAL;
	rc = vrdma_rdma_enter(qp->dev, &r);
	if (rc)
		return rc;
	c.qpn = htole32(qp->qpn);
	c.attr_mask = htole32(mask);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_QP, &c, sizeof(c), &q, sizeof(q));
	if (rc)
		goto out;
	memset(a, 0, sizeof(*a));
	a->qp_state = q.qp_state;
	a->cur_qp_state = q.qp_state;
	a->path_mtu = q.path_mtu;
	a->sq_draining = q.sq_draining;
	a->max_rd_atomic = q.max_rd_atomic;
	a->max_dest_rd_atomic = q.max_dest_rd_atomic;
	a->min_rnr_timer = q.min_rnr_timer;
	a->timeout = q.timeout;
	a->retry_cnt = q.retry_cnt;
	a->rnr_retry = q.rnr_retry;
	a->qkey = le32toh(q.qkey);
	a->rq_psn = le32toh(q.rq_psn);
	a->sq_psn = le32toh(q.sq_psn);
	a->dest_qp_num = le32toh(q.dest_qp_num);
	a->qp_access_flags = le32toh(q.qp_access_flags);
	a->rate_limit = le32toh(q.rate_limit);
	a->cap.max_send_wr = le32toh(q.cap.max_send_wr);
	a->cap.max_recv_wr = le32toh(q.cap.max_recv_wr);
	a->cap.max_send_sge = le32toh(q.cap.max_send_sge);
	a->cap.max_recv_sge = le32toh(q.cap.max_recv_sge);
	a->cap.max_inline_data = le32toh(q.cap.max_inline_data);
	vrdma_rdma_av_from_wire(&q.ah_attr, &a->ah_attr);
	if (q.qp_state <= VIRTIO_IB_QPS_ERR)
		atomic_store(&qp->state, q.qp_state);
out:
	vrdma_dev_unlock(qp->dev);
	return rc;
}

/* ---- data path ----------------------------------------------------------------- */

/* Whether a send WR opcode is allowed on a QP type (-EINVAL if not), and
 * its capability reported (-EOPNOTSUPP if not). */
static int send_opcode_ok(const struct vrdma_rdma *r, uint8_t type, uint8_t op)
{
	bool rc_ = type == VIRTIO_IB_QPT_RC, uc = type == VIRTIO_IB_QPT_UC;
	bool ud = type == VIRTIO_IB_QPT_UD;
	bool ok;
	uint64_t cap = 0;

	switch (op) {
	case VIRTIO_IB_WR_SEND:
	case VIRTIO_IB_WR_SEND_WITH_IMM:
		return 0;
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		return rc_ || uc ? 0 : -EINVAL;
	case VIRTIO_IB_WR_RDMA_READ:
		return rc_ ? 0 : -EINVAL;
	case VRDMA_WR_RDMA_READ_WITH_INV:
		/* a reserved opcode of the virtio-net RoCE device */
		return r->dev->virtio_rdma && rc_ ? 0 : -EINVAL;
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		if (!r->ext || r->attr.atomic_cap == VIRTIO_IB_ATOMIC_NONE)
			return -EOPNOTSUPP;
		return rc_ ? 0 : -EINVAL;
	case VIRTIO_IB_WR_LOCAL_INV:
	case VIRTIO_IB_WR_REG_MR:
		cap = VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS;
		ok = rc_ || uc || ud;
		break;
	case VIRTIO_IB_WR_SEND_WITH_INV:
		cap = VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS;
		ok = rc_;
		break;
	case VIRTIO_IB_WR_BIND_MW:
		cap = VIRTIO_IB_DEVICE_MEM_WINDOW;
		ok = rc_ || uc;
		break;
	default:
		return -EINVAL;
	}
	if (!vrdma_rdma_cap(r, cap))
		return -EOPNOTSUPP;
	return ok ? 0 : -EINVAL;
}

/* Whether op is a local operation of the extension (no SGE, no inline). */
static bool send_op_local(uint8_t op)
{
	return op == VIRTIO_IB_WR_LOCAL_INV || op == VIRTIO_IB_WR_BIND_MW ||
	       op == VIRTIO_IB_WR_REG_MR;
}

static bool send_op_atomic(uint8_t op)
{
	return op == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP || op == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * REG_MR: find the MR (device lock held by the caller) and write its page
 * list, the pages of [addr, addr + length) by their identity GPAs. *pages
 * gets the list. 0 or -EINVAL.
 */
static int send_reg_pages(const struct vrdma_qp *qp, const struct vrdma_send_wr *wr,
			  const le64 **pages)
{
	const struct vrdma_rdma *r = qp->dev->rdma;
	const struct vrdma_rdma_mr *m;
	uint64_t iova = wr->reg.iova, len = wr->reg.length, np, k, page0;
	uintptr_t va = (uintptr_t)wr->reg.addr;

	if (!wr->reg.mrn || wr->reg.mrn >= r->mrs_cap)
		return -EINVAL;
	m = &r->mrs[wr->reg.mrn];
	if (!m->live || !m->max_num_sg || !m->pages || m->pdn != qp->pdn)
		return -EINVAL;
	if ((wr->reg.key & ~VIRTIO_IB_KEY_CONSUMER_MASK) != (m->lkey & ~VIRTIO_IB_KEY_CONSUMER_MASK))
		return -EINVAL;
	if (len && (iova + len - 1 < iova || (uint64_t)va + len - 1 < (uint64_t)va ||
		    !va || ((iova ^ (uint64_t)va) & (VRDMA_PAGE_SIZE - 1))))
		return -EINVAL;
	np = len ? ((iova + len - 1) >> VRDMA_PAGE_SHIFT) - (iova >> VRDMA_PAGE_SHIFT) + 1 : 0;
	if (np > m->max_num_sg)
		return -EINVAL;
	page0 = (uint64_t)va & ~(uint64_t)(VRDMA_PAGE_SIZE - 1);
	for (k = 0; k < np; k++)
		m->pages[k] = htole64(page0 + (k << VRDMA_PAGE_SHIFT));
	*pages = m->pages;
	return 0;
}

/* Validate a send WR; *len gets the message length. 0 or -EINVAL /
 * -EOPNOTSUPP. */
static int send_check(const struct vrdma_qp *qp, const struct vrdma_send_wr *wr, uint64_t *len)
{
	const struct vrdma_rdma *r = qp->dev->rdma;
	uint64_t total = 0;
	bool read;
	uint32_t i;
	int rc;

	if ((wr->send_flags & ~SEND_FLAGS_KNOWN) || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	rc = send_opcode_ok(r, qp->type, wr->opcode);
	if (rc)
		return rc;
	if (send_op_local(wr->opcode) || send_op_atomic(wr->opcode)) {
		if (wr->send_flags & VIRTIO_IB_SEND_INLINE)
			return -EINVAL;
		if (send_op_local(wr->opcode) && wr->num_sge)
			return -EINVAL;
		if (send_op_atomic(wr->opcode) &&
		    (wr->num_sge != 1 || wr->sg_list[0].length < 8 || qp->cap.max_send_sge < 1))
			return -EINVAL;
		*len = send_op_atomic(wr->opcode) ? 8 : 0;
		return 0;
	}
	if ((qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) && !wr->ud.ah)
		return -EINVAL;
	/* virtio-rdma: the AV goes into the WR; its table never moves */
	if ((qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) &&
	    r->dev->virtio_rdma && (wr->ud.ah >= r->ahs_cap || !r->ahs[wr->ud.ah].live))
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	read = wr->opcode == VIRTIO_IB_WR_RDMA_READ || wr->opcode == VRDMA_WR_RDMA_READ_WITH_INV;
	if (wr->send_flags & VIRTIO_IB_SEND_INLINE) {
		if (read || total > qp->cap.max_inline_data)
			return -EINVAL;
	} else {
		if (wr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		if (read && wr->num_sge > qp->max_sge_rd)
			return -EINVAL;
	}
	if (total > qp->max_msg_sz)
		return -EINVAL;
	*len = total;
	return 0;
}

/* The request's last 16 bytes (num_sge or inline_len, then zeros), and its
 * SGEs, are written only where they change (store_if_changed): a slot is
 * reused in turn, and a WR like the one it held before leaves those lines
 * valid in the device's cache. */
static void sq_tail_set(struct virtio_rdma_sq_req_ext *q, uint32_t num_sge)
{
	struct {
		le32 num_sge;
		le32 reserved2[3];
	} t = { .num_sge = htole32(num_sge) };

	_Static_assert(sizeof(t) == SQ_REQ_SIZE - offsetof(struct virtio_rdma_sq_req_ext, num_sge),
		       "the tail of a request");
	store_if_changed(&q->num_sge, &t, sizeof(t));
}

/* Encode a validated send WR into slot; returns the element's length.
 * pages: REG_MR's page list. */
uint32_t vrdma_rdma_sq_encode(const struct vrdma_qp *qp, uint8_t *slot,
			      const struct vrdma_send_wr *wr, uint64_t len, const le64 *pages)
{
	struct virtio_rdma_sq_req_ext *q = (struct virtio_rdma_sq_req_ext *)(void *)slot;
	uint32_t i;

	q->wr_id = htole64(wr->wr_id);
	q->opcode = wr->opcode;
	q->send_flags = wr->send_flags;
	q->padding = 0;
	q->imm_data = wr->imm_data;
	memset(q->reserved, 0, sizeof(q->reserved));
	switch (wr->opcode) {
	case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
		q->atomic.remote_addr = htole64(wr->atomic.remote_addr);
		q->atomic.compare_add = htole64(wr->atomic.compare_add);
		q->atomic.swap = htole64(wr->atomic.swap);
		q->atomic.rkey = htole32(wr->atomic.rkey);
		break;
	case VIRTIO_IB_WR_LOCAL_INV:
		q->invalidate_rkey = htole32(wr->invalidate_rkey);
		sq_tail_set(q, 0);
		return (uint32_t)SQ_REQ_SIZE;
	case VIRTIO_IB_WR_BIND_MW:
		q->bind_mw.addr = htole64(wr->bind_mw.addr);
		q->bind_mw.length = htole64(wr->bind_mw.length);
		q->bind_mw.mr_lkey = htole32(wr->bind_mw.mr_lkey);
		q->bind_mw.rkey = htole32(wr->bind_mw.rkey);
		q->bind_mw.access = htole32(wr->bind_mw.access);
		sq_tail_set(q, 0);
		return (uint32_t)SQ_REQ_SIZE;
	case VIRTIO_IB_WR_REG_MR:
		q->reg.iova = htole64(wr->reg.iova);
		q->reg.length = htole64(wr->reg.length);
		q->reg.page_list = htole64((uint64_t)(uintptr_t)pages);
		q->reg.key = htole32(wr->reg.key);
		q->reg.access = htole32(wr->reg.access);
		sq_tail_set(q, 0);
		return (uint32_t)SQ_REQ_SIZE;
	case VIRTIO_IB_WR_SEND_WITH_INV:
		q->invalidate_rkey = htole32(wr->invalidate_rkey);
		break;
	default:
		if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) {
			q->ud.remote_qpn = htole32(wr->ud.remote_qpn);
			q->ud.remote_qkey = htole32(wr->ud.remote_qkey);
			q->ud.ah = htole32(wr->ud.ah);
		} else if (wr->opcode != VIRTIO_IB_WR_SEND &&
			   wr->opcode != VIRTIO_IB_WR_SEND_WITH_IMM) {
			q->rdma.remote_addr = htole64(wr->rdma.remote_addr);
			q->rdma.rkey = htole32(wr->rdma.rkey);
		}
		break;
	}
	if (wr->send_flags & VIRTIO_IB_SEND_INLINE) {
		uint8_t *dst = q->inline_data;

		for (i = 0; i < wr->num_sge; i++) {
			uint32_t l = wr->sg_list[i].length;

			if (l)
				memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr, l);
			dst += l;
		}
		/* le16 inline_len; the union's upper two bytes zero. */
		sq_tail_set(q, (uint32_t)len);
		return (uint32_t)SQ_REQ_SIZE;
	}
	sq_tail_set(q, wr->num_sge);
	for (i = 0; i < wr->num_sge; i++) {
		struct virtio_rdma_sge s = {
			.addr = htole64(wr->sg_list[i].addr),
			.length = htole32(wr->sg_list[i].length),
			.lkey = htole32(wr->sg_list[i].lkey),
		};

		store_if_changed(&q->sg_list[i], &s, sizeof(s));
	}
	return (uint32_t)(SQ_REQ_SIZE + (size_t)wr->num_sge * SGE_SIZE);
}

int vrdma_post_send(struct vrdma_qp *qp, const struct vrdma_send_wr *wr, unsigned n)
{
	struct vrdma_wq *wq;
	unsigned i;
	int rc = 0;
	bool reg;
	uint8_t st;

	if (!qp || (n && !wr))
		return -EINVAL;
	if (vrdma_dev_is_dead(qp->dev))
		return -ENOTCONN;
	st = atomic_load_explicit(&qp->state, memory_order_relaxed);
	if (st == VIRTIO_IB_QPS_RESET || st == VIRTIO_IB_QPS_INIT || st == VIRTIO_IB_QPS_RTR)
		return n ? -EINVAL : 0;
	wq = &qp->sq;
	/* REG_MR looks its MR up in the device's tables: lock order is the
	 * device lock, then the queue's. */
	for (i = 0; i < n; i++)
		if (wr[i].opcode == VIRTIO_IB_WR_REG_MR)
			break;
	reg = i < n;
	if (reg)
		vrdma_dev_lock(qp->dev);
	pthread_spin_lock(&wq->lock);
	wq_reclaim(wq);
	for (i = 0; i < n; i++) {
		const le64 *pages = NULL;
		struct vq_buf b;
		uint64_t len;
		uint8_t *slot;

		rc = send_check(qp, &wr[i], &len);
		if (rc)
			break;
		if (!wq->nfree || !wq_log_room(wq)) {
			wq->full++;
			rc = -ENOMEM;
			break;
		}
		if (wr[i].opcode == VIRTIO_IB_WR_REG_MR) {
			rc = send_reg_pages(qp, &wr[i], &pages);
			if (!rc && wq->model->reg_mr_map)
				rc = wq->model->reg_mr_map(qp, &wr[i], pages);
			if (rc)
				break;
		}
		slot = wq_slot_peek(wq);
		b.addr = (uint64_t)(uintptr_t)slot;
		b.len = wq->model->sq_encode(qp, slot, &wr[i], len, pages);
		rc = vq_drv_add(&wq->q->vq, &b, 1, NULL, 0, slot);
		if (rc) {
			rc = -ENOMEM;
			break;
		}
		wq_slot_take(wq);
		{
			uint32_t t = atomic_load_explicit(&wq->log_tail, memory_order_relaxed);

			wq->log_sig[t & (wq->ring - 1)] =
				qp->sq_sig_all || (wr[i].send_flags & VIRTIO_IB_SEND_SIGNALED);
			atomic_store_explicit(&wq->log_tail, t + 1, memory_order_release);
		}
	}
	wq->posted += i;
	if (i)
		vrdma_queue_kick(wq->q);
	pthread_spin_unlock(&wq->lock);
	if (reg)
		vrdma_dev_unlock(qp->dev);
	return i ? (int)i : rc;
}

uint32_t vrdma_rdma_rq_encode(uint8_t *slot, const struct vrdma_recv_wr *wr)
{
	struct virtio_rdma_rq_req *q = (struct virtio_rdma_rq_req *)(void *)slot;
	uint32_t s;

	q->wr_id = htole64(wr->wr_id);
	q->num_sge = htole32(wr->num_sge);
	memset(q->reserved, 0, sizeof(q->reserved));
	for (s = 0; s < wr->num_sge; s++) {
		q->sg_list[s].addr = htole64(wr->sg_list[s].addr);
		q->sg_list[s].length = htole32(wr->sg_list[s].length);
		q->sg_list[s].lkey = htole32(wr->sg_list[s].lkey);
	}
	return (uint32_t)(RQ_REQ_SIZE + (size_t)wr->num_sge * SGE_SIZE);
}

int vrdma_rdma_wq_post_recv(struct vrdma_wq *wq, uint32_t max_sge,
			    const struct vrdma_recv_wr *wr, unsigned n)
{
	unsigned i;
	int rc = 0;

	pthread_spin_lock(&wq->lock);
	wq_reclaim(wq);
	for (i = 0; i < n; i++) {
		struct vq_buf b;
		uint8_t *slot;

		if (wr[i].num_sge > max_sge || (wr[i].num_sge && !wr[i].sg_list)) {
			rc = -EINVAL;
			break;
		}
		if (!wq->nfree || (!wq->no_log && !wq_log_room(wq))) {
			wq->full++;
			rc = -ENOMEM;
			break;
		}
		slot = wq_slot_peek(wq);
		b.addr = (uint64_t)(uintptr_t)slot;
		b.len = wq->model->rq_encode(slot, &wr[i]);
		rc = vq_drv_add(&wq->q->vq, &b, 1, NULL, 0, slot);
		if (rc) {
			rc = -ENOMEM;
			break;
		}
		wq_slot_take(wq);
		if (!wq->no_log)
			atomic_fetch_add_explicit(&wq->log_tail, 1, memory_order_release);
	}
	wq->posted += i;
	if (i)
		vrdma_queue_kick(wq->q);
	pthread_spin_unlock(&wq->lock);
	return i ? (int)i : rc;
}

int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr, unsigned n)
{
	if (!qp || (n && !wr))
		return -EINVAL;
	if (vrdma_dev_is_dead(qp->dev))
		return -ENOTCONN;
	if (qp->srq ||
	    atomic_load_explicit(&qp->state, memory_order_relaxed) == VIRTIO_IB_QPS_RESET)
		return n ? -EINVAL : 0;
	return vrdma_rdma_wq_post_recv(&qp->rq, qp->cap.max_recv_sge, wr, n);
}
