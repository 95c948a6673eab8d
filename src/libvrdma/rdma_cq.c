// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma completion queues.
 *
 * A CQ is CREATE_CQ (cqe: the capacity, a power of two) plus its completion
 * virtqueue vrdma_vq_cq(1, cqn): num = min(cqe, 32768) entries, num
 * device-writable 48-byte buffers (struct virtio_rdma_cq_req) from shared
 * memory, all posted at creation; the device keeps completions that find no
 * buffer in its backlog of cqe entries. The device
 * writes one completion per buffer and returns it; vrdma_cq_poll consumes
 * used entries in order, decodes them (the buffer is untrusted: a short one
 * is counted and skipped) and posts each buffer again at once, so the device
 * always has num buffers minus what the application has not polled yet.
 *
 * Events: the ring has a call eventfd (when the back-end can name the ring:
 * index < 256 or the wide-index extension). Virtio interrupts stay
 * suppressed on the ring (the poller moves the suppression point along)
 * except while armed. Arming NEXT_COMPLETION is the spec's fast path, no
 * command: virtio's used_event (or NO_INTERRUPT) asks for an interrupt at
 * the next used entry; the arming ends when its event is consumed. Arming
 * SOLICITED sends REQ_NOTIFY_CQ: the device interrupts for the next
 * solicited or error completion and disarms (docs/spec.md "Completion
 * notification", "RDMA queues"). Without an eventfd the CQ has no events
 * and vrdma_cq_wait polls the ring every millisecond.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"

/* vrdma_cq_wait: busy-poll this long before arming and sleeping. */
#define CQ_WAIT_SPIN_NS 20000
/* vrdma_cq_poll: empty polls in a row before each further one yields. */
#define CQ_SPIN_POLLS 16
/* vrdma_cq_wait without an event fd: poll interval. */
#define CQ_WAIT_POLL_MS 1

static void cq_arm_fast(struct vrdma_cq *cq);

static int cq_post_buf(struct vrdma_cq *cq, struct virtio_rdma_cq_req *b)
{
	struct vq_buf vb = {
		.addr = (uint64_t)(uintptr_t)b,
		.len = (uint32_t)VRDMA_CQE_SIZE,
	};

	return vq_drv_add(&cq->q->vq, NULL, 0, &vb, 1, b);
}

/* ---- QPN table ---- */

static uint32_t qtab_slot(uint32_t qpn, uint32_t size)
{
	return (qpn * 2654435761u) & (size - 1);
}

/* The attached QP with this QPN, or NULL (CQ lock held). */
static struct vrdma_qp *qtab_find(const struct vrdma_cq *cq, uint32_t qpn)
{
	uint32_t i, n;

	if (!cq->qtab_size)
		return NULL;
	i = qtab_slot(qpn, cq->qtab_size);
	for (n = 0; n < cq->qtab_size; n++, i = (i + 1) & (cq->qtab_size - 1)) {
		struct vrdma_qp *qp = cq->qtab[i];

		if (!qp)
			return NULL;
		if (qp->qpn == qpn)
			return qp;
	}
	return NULL;
}

static void qtab_put(struct vrdma_qp **t, uint32_t size, struct vrdma_qp *qp)
{
	uint32_t i = qtab_slot(qp->qpn, size);

	while (t[i])
		i = (i + 1) & (size - 1);
	t[i] = qp;
}

int vrdma_rdma_cq_attach(struct vrdma_cq *cq, struct vrdma_qp *qp)
{
	struct vrdma_qp **nt = NULL, **old = NULL;
	uint32_t n = cq->refs, size = cq->qtab_size, i;

	/* cq->refs counts attached QPs (callers update it after this). At
	 * most half full. */
	if ((n + 1) * 2 > size) {
		size = size ? size * 2 : 8;
		while ((n + 1) * 2 > size)
			size *= 2;
		nt = calloc(size, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
	}
	pthread_spin_lock(&cq->lock);
	if (nt) {
		for (i = 0; i < cq->qtab_size; i++)
			if (cq->qtab[i])
				qtab_put(nt, size, cq->qtab[i]);
		old = cq->qtab;
		cq->qtab = nt;
		cq->qtab_size = size;
	}
	qtab_put(cq->qtab, cq->qtab_size, qp);
	pthread_spin_unlock(&cq->lock);
	free(old);
	return 0;
}

void vrdma_rdma_cq_detach(struct vrdma_cq *cq, struct vrdma_qp *qp)
{
	uint32_t m, i, j, k, n;

	pthread_spin_lock(&cq->lock);
	if (!cq->qtab_size)
		goto out;
	m = cq->qtab_size - 1;
	i = qtab_slot(qp->qpn, cq->qtab_size);
	for (n = 0; n <= m && cq->qtab[i] != qp; n++, i = (i + 1) & m)
		if (!cq->qtab[i])
			goto out;
	if (cq->qtab[i] != qp)
		goto out;
	/* Linear-probing deletion: pull later members of the cluster back. */
	cq->qtab[i] = NULL;
	for (j = (i + 1) & m; cq->qtab[j]; j = (j + 1) & m) {
		k = qtab_slot(cq->qtab[j]->qpn, cq->qtab_size);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			cq->qtab[i] = cq->qtab[j];
			cq->qtab[j] = NULL;
			i = j;
		}
	}
out:
	pthread_spin_unlock(&cq->lock);
}

int vrdma_rdma_cq_fill(struct vrdma_cq *cq)
{
	uint32_t i;
	int rc;

	for (i = 0; i < cq->num; i++) {
		rc = cq_post_buf(cq, &cq->bufs[i]);
		if (rc)
			return rc;
	}
	vrdma_queue_kick(cq->q);
	return 0;
}

/* Free the driver side of a CQ: ring, buffers, struct (device lock held). */
static void cq_release(struct vrdma_cq *cq)
{
	struct vrdma_dev *dev = cq->dev;
	bool had_call = cq->q && cq->q->call_fd >= 0;
	unsigned idx = cq->q ? cq->q->idx : 0;

	vrdma_queue_teardown(cq->q);
	/* The back-end keeps a stopped ring's call eventfd until it gets
	 * another: give it "no fd" so it closes its copy now (otherwise it
	 * holds one per CQ index ever used). */
	if (had_call && !vrdma_dev_is_dead(dev))
		vrdma_dev_vc_result(dev, vhost_client_set_vring_call(&dev->vc, idx, -1));
	vrdma_shm_free(cq->dev, cq->bufs, cq->bufs_bytes);
	pthread_spin_destroy(&cq->lock);
	free(cq->qtab);
	free(cq->stash);
	free(cq);
}

void vrdma_rdma_cq_free(struct vrdma_rdma *r, struct vrdma_cq *cq)
{
	r->wcs += cq->wcs;
	r->bad_wcs += cq->bad;
	r->dropped_wcs += cq->orphans;
	r->cqs[cq->cqn] = NULL;
	r->ncqs--;
	cq_release(cq);
}

int vrdma_cq_create(struct vrdma_dev *dev, uint32_t cqe, struct vrdma_cq **out)
{
	struct virtio_rdma_cmd_create_cq c;
	struct virtio_rdma_ack_create_cq a;
	struct virtio_rdma_cmd_destroy_cq d;
	struct vrdma_cq *cq = NULL;
	struct vrdma_rdma *r;
	uint32_t cap, num, cqn;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !out, &r);
	if (rc)
		return rc;
	if (!cqe || cqe > r->attr.max_cqe) {
		rc = -EINVAL;
		goto out;
	}
	if (r->ncqs >= r->ncq_rings) {
		rc = -ENOMEM;
		goto out;
	}
	memset(&a, 0, sizeof(a));
	cap = MIN(vrdma_rdma_pow2(cqe < 2 ? 2 : cqe), r->attr.max_cqe);
	num = MIN(cap, VRDMA_CQ_RING_MAX);
	c.cqe = htole32(cap);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	cqn = le32toh(a.cqn);
	if (cqn >= r->ncq_rings || r->cqs[cqn]) {
		LOG_PEER("vrdma: CREATE_CQ returned bad cqn %u", cqn);
		rc = -EIO;
		goto undo;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		rc = -ENOMEM;
		goto undo;
	}
	cq->dev = dev;
	cq->model = r->model;
	cq->cqn = cqn;
	cq->cqe = cap;
	cq->num = num;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->bufs_bytes = (size_t)num * VRDMA_CQE_SIZE;
	cq->bufs = vrdma_shm_alloc(dev, cq->bufs_bytes, 64);
	if (!cq->bufs) {
		rc = -errno;
		goto undo;
	}
	rc = vrdma_queue_setup(dev, r->model->vq_cq(r, cqn), (uint16_t)num,
			       VRDMA_QF_CALL, &cq->q);
	if (rc)
		goto undo;
	/* Interrupts only for the CQ's arming (see the top of the file). */
	vq_drv_disable_cb(&cq->q->vq);
	rc = vrdma_rdma_cq_fill(cq);
	if (rc)
		goto undo;
	r->cqs[cqn] = cq;
	r->ncqs++;
	*out = cq;
	cq = NULL;
	goto out;
undo:
	if (cq)
		cq_release(cq);
	d.cqn = a.cqn;
	if (vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, &d, sizeof(d), NULL, 0))
		LOG_WARN("vrdma: undoing CREATE_CQ %u failed", cqn);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

static int cq_check_destroy(struct vrdma_rdma *r VRDMA_UNUSED, uint32_t cqn VRDMA_UNUSED,
			    void *obj)
{
	return ((struct vrdma_cq *)obj)->refs ? -EBUSY : 0;
}

/* Events the device wrote for the CQ precede the ack: read them and drop
 * the CQ's (its cqn may be reused at once). The device stopped processing
 * the ring: reset it (teardown). */
static void cq_drop(struct vrdma_rdma *r, uint32_t cqn VRDMA_UNUSED, void *obj)
{
	vrdma_rdma_events_forget(r, obj);
	vrdma_rdma_cq_free(r, obj);
}

static const struct vrdma_rdma_kind cq_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DESTROY_CQ,
	.check = cq_check_destroy,
	.drop = cq_drop,
};

int vrdma_cq_destroy(struct vrdma_cq *cq)
{
	return cq ? vrdma_rdma_destroy(cq->dev, &cq_kind, cq->cqn, cq) : -EINVAL;
}

uint32_t vrdma_cq_num(const struct vrdma_cq *cq)
{
	return cq->cqn;
}

uint32_t vrdma_cq_size(const struct vrdma_cq *cq)
{
	return cq->cqe;
}

void vrdma_cq_set_context(struct vrdma_cq *cq, void *context)
{
	cq->context = context;
}

void *vrdma_cq_context(const struct vrdma_cq *cq)
{
	return cq->context;
}

/*
 * Replace cq's ring by one of num entries (device lock held, RESIZE_CQ
 * accepted): stop the old ring, keep its completions (they come before
 * every later one), then start the new ring with fresh buffers; the device
 * writes what waited meanwhile into it. The eventfds stay. 0 or -errno (the
 * CQ then keeps its old ring, stopped if the stop worked: -EIO).
 */
static int cq_replace_ring(struct vrdma_cq *cq, uint32_t num)
{
	struct virtio_rdma_cq_req *nb, *ob;
	struct vrdma_wc *stash;
	size_t nbytes = (size_t)num * VRDMA_CQE_SIZE, obytes;
	uint32_t cap, len;
	int rc;

	nb = vrdma_shm_alloc(cq->dev, nbytes, 64);
	if (!nb)
		return -ENOMEM;
	pthread_spin_lock(&cq->lock);
	/* Room for the stash and every used entry of the old ring. */
	cap = cq->stash_len + cq->num;
	stash = malloc((size_t)cap * sizeof(*stash));
	if (!stash) {
		rc = -ENOMEM;
		goto fail;
	}
	if (cq->stash_len)
		memcpy(stash, cq->stash + cq->stash_head, cq->stash_len * sizeof(*stash));
	rc = vrdma_queue_stop(cq->q);
	if (rc)
		goto fail;
	/* The old ring is final now: its used entries are completions. */
	for (len = cq->stash_len; len < cap;) {
		uint32_t l = 0;
		struct virtio_rdma_cq_req *b = vq_drv_get_used(&cq->q->vq, &l);

		if (!b) {
			if (l == UINT32_MAX) {
				cq->bad++;
				continue;
			}
			break;
		}
		if (l >= cq->model->cqe_size)
			cq->model->cq_decode(b, &stash[len++]);
		else
			cq->bad++;
	}
	rc = vrdma_queue_restart(cq->q, (uint16_t)num);
	if (rc) {
		/* Stopped with its completions taken: give them out anyway. */
		free(cq->stash);
		cq->stash = stash;
		cq->stash_head = 0;
		cq->stash_len = len;
		pthread_spin_unlock(&cq->lock);
		vrdma_shm_free(cq->dev, nb, nbytes);
		return rc;
	}
	free(cq->stash);
	cq->stash = stash;
	cq->stash_head = 0;
	cq->stash_len = len;
	ob = cq->bufs;
	obytes = cq->bufs_bytes;
	cq->bufs = nb;
	cq->bufs_bytes = nbytes;
	cq->num = num;
	vq_drv_disable_cb(&cq->q->vq);
	rc = vrdma_rdma_cq_fill(cq);
	if (cq->armed && cq->q->call_fd >= 0)
		cq_arm_fast(cq);
	pthread_spin_unlock(&cq->lock);
	vrdma_shm_free(cq->dev, ob, obytes);
	return rc;
fail:
	pthread_spin_unlock(&cq->lock);
	free(stash);
	vrdma_shm_free(cq->dev, nb, nbytes);
	return rc;
}

int vrdma_cq_resize(struct vrdma_cq *cq, uint32_t cqe)
{
	struct virtio_rdma_cmd_resize_cq c;
	struct virtio_rdma_ack_resize_cq a;
	struct vrdma_dev *dev;
	struct vrdma_rdma *r;
	uint32_t cap, num;
	int rc;

	if (!cq)
		return -EINVAL;
	dev = cq->dev;
	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_RESIZE_CQ)) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (!cqe || cqe > r->attr.max_cqe) {
		rc = -EINVAL;
		goto out;
	}
	cap = MIN(vrdma_rdma_pow2(cqe < 2 ? 2 : cqe), r->attr.max_cqe);
	if (cap <= cq->cqe)
		goto out; /* never shrinks: the capacity holds cqe already */
	/* 1. the device may hold that many while the ring is replaced */
	c.cqn = htole32(cq->cqn);
	c.cqe = htole32(cap);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	cq->cqe = cap;
	num = MIN(cap, VRDMA_CQ_RING_MAX);
	if (num <= cq->num)
		goto out; /* the ring is the largest already: the device keeps the rest */
	/* 2-4. stop, keep the leftovers, new ring */
	rc = cq_replace_ring(cq, num);
	if (rc)
		LOG_WARN("vrdma: CQ %u: replacing the ring failed: %s", cq->cqn, strerror(-rc));
out:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_cq_event_fd(const struct vrdma_cq *cq)
{
	return cq->q->call_fd;
}

/* Decode one completion buffer (untrusted bytes, copied once). */
void vrdma_rdma_cq_decode(const void *b, struct vrdma_wc *wc)
{
	struct virtio_rdma_cq_req e;

	memcpy(&e, b, sizeof(e));
	wc->wr_id = le64toh(e.wr_id);
	wc->status = e.status;
	wc->opcode = e.opcode;
	wc->vendor_err = le32toh(e.vendor_err);
	wc->byte_len = le32toh(e.byte_len);
	wc->imm_data = e.imm_data;
	wc->qp_num = le32toh(e.qp_num);
	wc->src_qp = le32toh(e.src_qp);
	wc->wc_flags = le32toh(e.wc_flags);
	/* Extension: the same slot holds the invalidated key (host order). */
	if (wc->wc_flags & VIRTIO_IB_WC_WITH_INV)
		wc->invalidated_rkey = le32toh(e.imm_data);
}

uint64_t vrdma_cq_spin_yielded(struct vrdma_cq_spin *s, uint64_t end_ns, uint64_t yield_ns,
			       uint32_t queued, bool spun_out)
{
	uint64_t w;

	if (spun_out) {
		uint32_t n = s->spun_out < 30 ? s->spun_out : 30;
		uint64_t calm = (uint64_t)VRDMA_CQ_CALM_NS << n;

		s->spun_out++;
		s->window_ns = 0;
		s->calm_until_ns = end_ns + (calm < VRDMA_CQ_CALM_MAX_NS ? calm : VRDMA_CQ_CALM_MAX_NS);
		return 0;
	}
	if (yield_ns < VRDMA_CQ_YIELD_LONG_NS || end_ns < s->calm_until_ns)
		return 0;
	if (queued >= VRDMA_CQ_YIELD_BATCH) {
		s->window_ns = 0;
		return 0;
	}
	w = s->window_ns * 2 > yield_ns ? s->window_ns * 2 : yield_ns;
	s->window_ns = w < VRDMA_CQ_SPIN_MAX_NS ? w : VRDMA_CQ_SPIN_MAX_NS;
	return end_ns + s->window_ns;
}

/* This CQ's work queued, counted up to VRDMA_CQ_YIELD_BATCH: completions
 * waiting, send WRs outstanding on its QPs (CQ lock held). */
static uint32_t cq_queued(const struct vrdma_cq *cq)
{
	uint32_t n = vq_drv_used_pending(&cq->q->vq), i;

	for (i = 0; i < cq->qtab_size && n < VRDMA_CQ_YIELD_BATCH; i++) {
		struct vrdma_qp *qp = cq->qtab[i];

		if (qp && qp->send_cq == cq)
			n += vrdma_wq_log_used(&qp->sq);
	}
	return n;
}

/* Yield the CPU unless inside a spin window and this wait's spin budget;
 * returns how long the yield lasted (0: none), sets *end to when it ended
 * and *spun_out if the budget ran out inside the window. */
static uint64_t cq_yield(struct vrdma_cq *cq, uint64_t *end, bool *spun_out)
{
	uint64_t t0 = mono_ns(), from;

	if (t0 < __atomic_load_n(&cq->spin_until_ns, __ATOMIC_RELAXED)) {
		from = __atomic_load_n(&cq->wait_from_ns, __ATOMIC_RELAXED);
		if (!from)
			__atomic_store_n(&cq->wait_from_ns, t0, __ATOMIC_RELAXED);
		if (!from || t0 - from < VRDMA_CQ_SPIN_WAIT_NS)
			return 0;
		*spun_out = true;
	}
	sched_yield();
	*end = mono_ns();
	return *end - t0;
}

int vrdma_cq_poll(struct vrdma_cq *cq, struct vrdma_wc *wc, int n)
{
	struct vq_drv *vq;
	int got = 0, reposted = 0;
	uint64_t yield_ns = 0, yield_end = 0;
	bool spun_out = false;

	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	/* The device is software on the same CPUs: an application spinning
	 * on an empty CQ must leave it some time, unless such yields were
	 * found to cost it time slices (vrdma_cq_spin_yielded). Before
	 * looking, so that "empty" describes the CQ when we return (a yield
	 * can last milliseconds on a busy host; libfabric's ofi_rxm reads its
	 * connection events on an empty CQ and closes a connection whose
	 * last message would then be found too late). */
	if (__atomic_load_n(&cq->empty_polls, __ATOMIC_RELAXED) > CQ_SPIN_POLLS)
		yield_ns = cq_yield(cq, &yield_end, &spun_out);
	pthread_spin_lock(&cq->lock);
	vq = &cq->q->vq;
	if (yield_ns >= VRDMA_CQ_YIELD_LONG_NS || spun_out) {
		uint32_t queued = yield_ns >= VRDMA_CQ_YIELD_LONG_NS ? cq_queued(cq) : 0;

		__atomic_store_n(&cq->spin_until_ns,
				 vrdma_cq_spin_yielded(&cq->spin, yield_end, yield_ns, queued, spun_out),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&cq->wait_from_ns, 0, __ATOMIC_RELAXED);
	}
	/* Completions of a replaced ring come first. */
	while (got < n && cq->stash_len) {
		struct vrdma_qp *qp;

		wc[got] = cq->stash[cq->stash_head++];
		cq->stash_len--;
		qp = qtab_find(cq, wc[got].qp_num);
		if (!qp) {
			cq->orphans++;
			continue;
		}
		vrdma_rdma_qp_retire(qp, &wc[got]);
		got++;
	}
	if (!cq->stash_len) {
		free(cq->stash);
		cq->stash = NULL;
		cq->stash_head = 0;
	}
	while (got < n) {
		uint32_t len = 0;
		struct virtio_rdma_cq_req *b = vq_drv_get_used(vq, &len);

		if (!b) {
			if (len == UINT32_MAX) {
				/* A used entry we never posted: skip it. */
				cq->bad++;
				continue;
			}
			break;
		}
		if (len >= cq->model->cqe_size) {
			struct vrdma_qp *qp;

			cq->model->cq_decode(b, &wc[got]);
			qp = qtab_find(cq, wc[got].qp_num);
			if (qp) {
				vrdma_rdma_qp_retire(qp, &wc[got]);
				got++;
			} else {
				/* A destroyed QP's (its flush): dropped, as a
				 * hardware CQ is cleaned on destroy. */
				cq->orphans++;
			}
		} else {
			LOG_PEER("vrdma: CQ %u: completion of %u bytes", cq->cqn, len);
			cq->bad++;
		}
		if (cq_post_buf(cq, b) == 0)
			reposted++;
	}
	if (reposted) {
		vrdma_queue_kick(cq->q);
		/* Keep virtio's interrupt point just behind what we consumed
		 * (unless armed: then it marks the next completion). */
		if (!cq->armed)
			vq_drv_disable_cb(vq);
	}
	cq->wcs += (uint64_t)got;
	if (got) {
		cq->empty_polls = 0;
		/* A wait that spun inside a window ended in time. */
		if (__atomic_load_n(&cq->wait_from_ns, __ATOMIC_RELAXED)) {
			__atomic_store_n(&cq->wait_from_ns, 0, __ATOMIC_RELAXED);
			cq->spin.spun_out = 0;
		}
	} else
		cq->empty_polls++;
	pthread_spin_unlock(&cq->lock);
	if (!got && vrdma_dev_is_dead(cq->dev))
		return -ENOTCONN;
	return got;
}

/*
 * Fast "next completion" arming (docs/spec.md "RDMA queues", completion
 * queue, fast path): ask virtio for an interrupt when the device publishes
 * the used entry after the ones it has published now, then look again: a
 * completion that slipped in meanwhile may have missed the request, so the
 * event is raised here. CQ lock held.
 */
static void cq_arm_fast(struct vrdma_cq *cq)
{
	struct vq_drv *vq = &cq->q->vq;
	uint16_t idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);

	cq->armed = true;
	vq->cb_enabled = false; /* the poller must not move the request */
	if (vq->event_idx)
		/* used_event sits after the avail ring (virtio 1.x 2.7.10) */
		__atomic_store_n(&vq->avail->ring[vq->num], idx, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&vq->avail->flags, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) != idx)
		eventfd_write(cq->q->call_fd, 1);
}

int vrdma_cq_arm(struct vrdma_cq *cq, uint32_t flags)
{
	struct virtio_rdma_cmd_req_notify c;
	struct vrdma_rdma *r;
	int rc;

	if (!cq)
		return -EINVAL;
	if (!flags || (flags & ~(uint32_t)(VIRTIO_IB_NOTIFY_SOLICITED |
					   VIRTIO_IB_NOTIFY_NEXT_COMPLETION)))
		return -EINVAL;
	if (cq->q->call_fd < 0)
		return -EOPNOTSUPP;
	if (flags & VIRTIO_IB_NOTIFY_NEXT_COMPLETION) {
		/* (both bits mean NEXT_COMPLETION) */
		pthread_spin_lock(&cq->lock);
		cq_arm_fast(cq);
		pthread_spin_unlock(&cq->lock);
		return 0;
	}
	/* SOLICITED needs the device's own arming. */
	rc = vrdma_rdma_enter(cq->dev, &r);
	if (rc)
		return rc;
	c.cqn = htole32(cq->cqn);
	c.flags = htole32(flags);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, &c, sizeof(c), NULL, 0);
	vrdma_dev_unlock(cq->dev);
	return rc;
}

int vrdma_cq_consume_event(struct vrdma_cq *cq)
{
	eventfd_t v;

	if (cq->q->call_fd < 0)
		return -EOPNOTSUPP;
	if (eventfd_read(cq->q->call_fd, &v) == 0) {
		int rc = 1;

		/* One-shot: the fast arming is used up too. An event that
		 * finds nothing to poll (its completions were polled after
		 * the arming, before the wait) is not handed out: the CQ is
		 * armed again and the wait goes on. Programs written against
		 * a NIC's timing take an empty CQ after an event for an error
		 * (rdma-core's ibv_rc_pingpong -t -e: "poll CQ failed"). */
		pthread_spin_lock(&cq->lock);
		if (cq->armed) {
			cq->armed = false;
			vq_drv_disable_cb(&cq->q->vq);
			if (!cq->stash_len && !vq_drv_has_used(&cq->q->vq)) {
				cq->events_empty++;
				cq_arm_fast(cq);
				rc = 0;
			}
		}
		pthread_spin_unlock(&cq->lock);
		return rc;
	}
	return errno == EAGAIN ? 0 : -errno;
}

static bool cq_has_used(struct vrdma_cq *cq)
{
	bool has;

	pthread_spin_lock(&cq->lock);
	has = cq->stash_len || vq_drv_has_used(&cq->q->vq);
	pthread_spin_unlock(&cq->lock);
	return has;
}

int vrdma_cq_wait(struct vrdma_cq *cq, int timeout_ms)
{
	struct vrdma_dev *dev;
	uint64_t start, deadline = 0;
	bool armed = false;

	if (!cq)
		return -EINVAL;
	dev = cq->dev;
	start = mono_ns();
	if (timeout_ms >= 0)
		deadline = start + (uint64_t)timeout_ms * 1000000ull;
	while (mono_ns() - start < CQ_WAIT_SPIN_NS) {
		if (cq_has_used(cq))
			return 1;
		if (vrdma_dev_is_dead(dev))
			return -ENOTCONN;
	}
	for (;;) {
		struct pollfd p[2];
		int np, wait_ms, rc;
		uint64_t now;

		if (vrdma_dev_is_dead(dev))
			return -ENOTCONN;
		if (cq->q->call_fd >= 0 && !armed) {
			rc = vrdma_cq_arm(cq, VIRTIO_IB_NOTIFY_NEXT_COMPLETION);
			if (rc)
				return rc;
			armed = true;
		}
		if (cq_has_used(cq))
			return 1;
		now = mono_ns();
		if (timeout_ms >= 0 && now >= deadline)
			return 0;
		np = 1; /* p[0]: the back-end's socket */
		if (cq->q->call_fd >= 0) {
			p[np].fd = cq->q->call_fd;
			p[np++].events = POLLIN;
		}
		wait_ms = vrdma_wait_ms(timeout_ms, deadline, now,
					cq->q->call_fd >= 0 ? -1 : CQ_WAIT_POLL_MS);
		rc = vrdma_dev_poll(dev, p, (nfds_t)np, wait_ms);
		if (rc < 0)
			return rc;
		if (rc > 0 && np > 1 && (p[1].revents & POLLIN)) {
			vrdma_cq_consume_event(cq);
			armed = false; /* one-shot: the device disarmed */
		}
	}
}
