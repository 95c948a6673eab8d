// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma extension objects (docs/spec.md "Extensions beyond the RFC"):
 * the event virtqueue and asynchronous events, shared receive queues and the
 * P_Key query. Fast-registration MRs and memory windows are in rdma_mr.c,
 * the new work requests in rdma_qp.c, CQ resize in rdma_cq.c.
 *
 * Event queue (vrdma_vq_eventq(1, M, L)): EVQ_NUM device-writable 16-byte
 * buffers, all posted when the RDMA state is created, before any object
 * exists. Interrupts stay enabled on it: the device signals its call eventfd
 * for every event (there is no arming), which an epoll fd wraps for the
 * application (vrdma_event_fd). Events are read from the ring under the
 * device lock ("harvest"), resolved to this library's CQ / QP / SRQ at that
 * moment, and queued in a FIFO that vrdma_event_get empties. A destroy reads
 * the ring up to its used index once the device acknowledged it, then drops
 * the queued events of the object, so an event never names a freed object
 * nor a successor that reused its cqn / srqn.
 *
 * Every event is untrusted: an unknown type is counted (bad_events) and
 * dropped, an id naming no live object is dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"
#include "vrdma/virtio_net_roce_cm.h"

#define EVQ_NUM 64
#define EVQ_BUF_SIZE sizeof(struct virtio_rdma_event)
/* Events queued in the library at most (beyond, the oldest are kept). */
#define EVS_MAX 65536u
#define RQ_REQ_SIZE sizeof(struct virtio_rdma_rq_req)
#define SGE_SIZE    sizeof(struct virtio_rdma_sge)

/* ---- event queue ------------------------------------------------------------ */

static int evq_post(struct vrdma_rdma *r, struct virtio_rdma_event *b)
{
	struct vq_buf vb = {
		.addr = (uint64_t)(uintptr_t)b,
		.len = (uint32_t)EVQ_BUF_SIZE,
	};

	return vq_drv_add(&r->evq->vq, NULL, 0, &vb, 1, b);
}

int vrdma_rdma_ext_init(struct vrdma_rdma *r)
{
	struct vrdma_dev *dev = r->dev;
	uint32_t i;
	int rc;

	if (!r->ext)
		return 0;
	r->ev_bufs_bytes = EVQ_NUM * EVQ_BUF_SIZE;
	r->ev_bufs = vrdma_shm_alloc(dev, r->ev_bufs_bytes, 64);
	if (!r->ev_bufs)
		return -ENOMEM;
	rc = vrdma_queue_setup(dev, vrdma_vq_eventq(VRDMA_RDMA_NET_PAIRS, r->ncq_rings,
						    r->nqp_rings),
			       EVQ_NUM, VRDMA_QF_CALL, &r->evq);
	if (rc)
		return rc;
	for (i = 0; i < EVQ_NUM; i++) {
		rc = evq_post(r, &r->ev_bufs[i]);
		if (rc)
			return rc;
	}
	if (r->evq->call_fd >= 0)
		vq_drv_enable_cb(&r->evq->vq);
	vrdma_queue_kick(r->evq);
	return 0;
}

void vrdma_rdma_ext_fini(struct vrdma_rdma *r)
{
	if (r->evq)
		vrdma_queue_teardown(r->evq);
	r->evq = NULL;
	if (r->ev_bufs)
		vrdma_shm_free(r->dev, r->ev_bufs, r->ev_bufs_bytes);
	r->ev_bufs = NULL;
	if (r->ev_epfd >= 0)
		close(r->ev_epfd);
	r->ev_epfd = -1;
	free(r->evs);
	r->evs = NULL;
	r->evs_len = r->evs_cap = r->evs_head = 0;
}

/* Resolve a raw event to our objects. Returns false to drop it. */
static bool ev_resolve(struct vrdma_rdma *r, const struct virtio_rdma_event *raw,
		       struct vrdma_async_event *ev)
{
	struct virtio_rdma_event e;
	uint32_t idx;

	memcpy(&e, raw, sizeof(e)); /* untrusted: read once */
	memset(ev, 0, sizeof(*ev));
	ev->type = le32toh(e.type);
	ev->id = le32toh(e.id);
	ev->vendor_err = le32toh(e.vendor_err);
	switch (ev->type) {
	case VIRTIO_IB_EVENT_CQ_ERR:
		if (ev->id >= r->ncq_rings || !r->cqs[ev->id])
			return false;
		ev->cq = r->cqs[ev->id];
		return true;
	case VIRTIO_IB_EVENT_QP_FATAL:
	case VIRTIO_IB_EVENT_QP_REQ_ERR:
	case VIRTIO_IB_EVENT_QP_ACCESS_ERR:
	case VIRTIO_IB_EVENT_COMM_EST:
	case VIRTIO_IB_EVENT_SQ_DRAINED:
	case VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED:
		idx = vrdma_qpn_index(ev->id);
		if (ev->id > VRDMA_QPN_MASK || idx >= r->nqp_rings || !r->qps[idx] ||
		    r->qps[idx]->qpn != ev->id)
			return false;
		ev->qp = r->qps[idx];
		if (ev->type == VIRTIO_IB_EVENT_QP_FATAL || ev->type == VIRTIO_IB_EVENT_QP_REQ_ERR ||
		    ev->type == VIRTIO_IB_EVENT_QP_ACCESS_ERR)
			atomic_store(&ev->qp->state, VIRTIO_IB_QPS_ERR);
		return true;
	case VIRTIO_IB_EVENT_SRQ_ERR:
	case VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED:
		if (ev->id >= r->nsrq_rings || !r->srqs[ev->id])
			return false;
		ev->srq = r->srqs[ev->id];
		return true;
	case VIRTIO_IB_EVENT_PORT_ACTIVE:
	case VIRTIO_IB_EVENT_PORT_ERR:
	case VIRTIO_IB_EVENT_GID_CHANGE:
	case VIRTIO_IB_EVENT_CM_PENDING:
		return ev->id == 1;
	default:
		r->bad_events++;
		LOG_PEER("vrdma: event of unknown type %u", ev->type);
		return false;
	}
}

static void evs_push(struct vrdma_rdma *r, const struct vrdma_async_event *ev)
{
	if (r->evs_len == r->evs_cap) {
		uint32_t cap = r->evs_cap ? r->evs_cap * 2 : 16, i;
		struct vrdma_async_event *n;

		if (r->evs_cap >= EVS_MAX) {
			r->bad_events++;
			return;
		}
		n = malloc((size_t)cap * sizeof(*n));
		if (!n) {
			r->bad_events++;
			return;
		}
		for (i = 0; i < r->evs_len; i++)
			n[i] = r->evs[(r->evs_head + i) % r->evs_cap];
		free(r->evs);
		r->evs = n;
		r->evs_cap = cap;
		r->evs_head = 0;
	}
	r->evs[(r->evs_head + r->evs_len) % r->evs_cap] = *ev;
	r->evs_len++;
}

/* Read every used entry of the event ring (device lock held). */
static void ev_harvest(struct vrdma_rdma *r)
{
	struct vq_drv *vq;
	bool again;

	if (!r->evq || vrdma_dev_is_dead(r->dev))
		return;
	vq = &r->evq->vq;
	do {
		unsigned reposted = 0;

		for (;;) {
			uint32_t len = 0;
			struct virtio_rdma_event *b = vq_drv_get_used(vq, &len);
			struct vrdma_async_event ev;

			if (!b) {
				if (len == UINT32_MAX) {
					r->bad_events++;
					continue;
				}
				break;
			}
			if (len >= EVQ_BUF_SIZE) {
				r->events++;
				if (ev_resolve(r, b, &ev))
					evs_push(r, &ev);
			} else {
				r->bad_events++;
			}
			if (evq_post(r, b) == 0)
				reposted++;
		}
		if (reposted)
			vrdma_queue_kick(r->evq);
		/* Interrupts for the next event; one may have slipped in. */
		again = r->evq->call_fd >= 0 && !vq_drv_enable_cb(vq);
	} while (again);
}

void vrdma_rdma_events_forget(struct vrdma_rdma *r, const void *obj)
{
	uint32_t i, k = 0;

	if (!r->ext)
		return;
	ev_harvest(r);
	for (i = 0; i < r->evs_len; i++) {
		struct vrdma_async_event *e = &r->evs[(r->evs_head + i) % r->evs_cap];

		if ((const void *)e->cq == obj || (const void *)e->qp == obj ||
		    (const void *)e->srq == obj)
			continue;
		r->evs[(r->evs_head + k) % r->evs_cap] = *e;
		k++;
	}
	r->evs_len = k;
}

int vrdma_event_fd(struct vrdma_dev *dev)
{
	struct epoll_event ev;
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	if (!r->ext || !r->evq || r->evq->call_fd < 0) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (r->ev_epfd < 0) {
		int fd = epoll_create1(EPOLL_CLOEXEC);

		if (fd < 0) {
			rc = -errno;
			goto out;
		}
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		if (epoll_ctl(fd, EPOLL_CTL_ADD, r->evq->call_fd, &ev) < 0) {
			rc = -errno;
			close(fd);
			goto out;
		}
		r->ev_epfd = fd;
	}
	rc = r->ev_epfd;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_event_get(struct vrdma_dev *dev, struct vrdma_async_event *ev)
{
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !ev, &r);
	if (rc)
		return rc;
	if (!r->ext || !r->evq) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (!r->evs_len) {
		/* Clear the fd first: an event written after the harvest
		 * signals it again. */
		vrdma_queue_drain_call(r->evq);
		ev_harvest(r);
	}
	rc = 0;
	if (r->evs_len) {
		*ev = r->evs[r->evs_head];
		r->evs_head = (r->evs_head + 1) % r->evs_cap;
		r->evs_len--;
		rc = 1;
		/* Level-triggered: the fd stays readable while events wait
		 * here (the ring's eventfd was drained to read them). */
		if (r->evs_len && r->evq->call_fd >= 0)
			(void)eventfd_write(r->evq->call_fd, 1);
	}
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* ---- P_Key ------------------------------------------------------------------- */

int vrdma_query_pkey(struct vrdma_dev *dev, uint32_t index, uint16_t *pkey)
{
	struct virtio_rdma_cmd_query_pkey c;
	struct virtio_rdma_ack_query_pkey a;
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !pkey, &r);
	if (rc)
		return rc;
	if (!r->ext) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (index >= (r->pkey_tbl_len ? r->pkey_tbl_len : 1u) || index > 0xffff) {
		rc = -EINVAL;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.index = htole16((uint16_t)index);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	*pkey = le16toh(a.pkey);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* ---- shared receive queues ------------------------------------------------------ */

void vrdma_rdma_srq_free(struct vrdma_rdma *r, struct vrdma_srq *srq)
{
	r->recv_wrs += srq->wq.posted;
	r->rq_full += srq->wq.full;
	r->srqs[srq->srqn] = NULL;
	r->nsrqs--;
	r->pds[srq->pdn].refs--;
	/* Teardown resets the ring: a reused srqn starts from a fresh one. */
	vrdma_rdma_wq_release(srq->dev, &srq->wq);
	free(srq);
}

int vrdma_srq_create(struct vrdma_dev *dev, uint32_t pdn, struct vrdma_srq_attr *attr,
		     struct vrdma_srq **out)
{
	struct virtio_rdma_cmd_create_srq c;
	struct virtio_rdma_ack_create_srq a;
	struct virtio_rdma_cmd_destroy_srq d;
	struct vrdma_srq *srq = NULL;
	struct vrdma_rdma *r;
	uint32_t num, srqn;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !attr || !out, &r);
	if (rc)
		return rc;
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_SRQ)) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	rc = !attr->max_wr || attr->max_wr > r->attr.max_srq_wr ||
		     attr->max_sge > r->attr.max_srq_sge
		     ? -EINVAL
		     : vrdma_rdma_pd_admit(r, pdn, r->nsrqs, r->nsrq_rings);
	if (rc)
		goto out;
	num = MIN(vrdma_rdma_pow2(attr->max_wr < 2 ? 2 : attr->max_wr), r->attr.max_srq_wr);
	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.max_wr = htole32(num);
	c.max_sge = htole32(attr->max_sge);
	memset(&a, 0, sizeof(a));
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_CREATE_SRQ, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	srqn = le32toh(a.srqn);
	if (srqn >= r->nsrq_rings || r->srqs[srqn]) {
		LOG_PEER("vrdma: CREATE_SRQ returned bad srqn %u", srqn);
		rc = -EIO;
		goto undo;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		rc = -ENOMEM;
		goto undo;
	}
	srq->dev = dev;
	srq->srqn = srqn;
	srq->pdn = pdn;
	srq->max_wr = num;
	srq->max_sge = attr->max_sge;
	/* Elements come back out of order: slots are recycled by their
	 * descriptor's token, never by position. */
	rc = vrdma_rdma_wq_setup(dev, &srq->wq,
				 vrdma_vq_srq(VRDMA_RDMA_NET_PAIRS, r->ncq_rings, r->nqp_rings,
					      srqn),
				 num, vrdma_rdma_pow2(num < 2 ? 2 : num),
				 RQ_REQ_SIZE + (size_t)attr->max_sge * SGE_SIZE, false);
	if (rc) {
		free(srq);
		srq = NULL;
		goto undo;
	}
	srq->wq.no_log = true;
	r->srqs[srqn] = srq;
	r->nsrqs++;
	r->pds[pdn].refs++;
	attr->max_wr = num;
	attr->srq_limit = 0;
	*out = srq;
	goto out;
undo:
	d.srqn = a.srqn;
	if (vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, &d, sizeof(d), NULL, 0))
		LOG_WARN("vrdma: undoing CREATE_SRQ %u failed", srqn);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_srq_modify(struct vrdma_srq *srq, const struct vrdma_srq_attr *attr, uint32_t mask)
{
	struct virtio_rdma_cmd_modify_srq c;
	struct vrdma_rdma *r;
	int rc;

	if (!srq || !attr)
		return -EINVAL;
	if (mask != VIRTIO_IB_SRQ_LIMIT || attr->srq_limit > srq->max_wr)
		return -EINVAL;
	rc = vrdma_rdma_enter(srq->dev, &r);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.srqn = htole32(srq->srqn);
	c.attr_mask = htole32(mask);
	c.srq_limit = htole32(attr->srq_limit);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ, &c, sizeof(c), NULL, 0);
	vrdma_dev_unlock(srq->dev);
	return rc;
}

int vrdma_srq_query(struct vrdma_srq *srq, struct vrdma_srq_attr *attr)
{
	struct virtio_rdma_cmd_query_srq c;
	struct virtio_rdma_ack_query_srq a;
	struct vrdma_rdma *r;
	int rc;

	if (!srq || !attr)
		return -EINVAL;
	rc = vrdma_rdma_enter(srq->dev, &r);
	if (rc)
		return rc;
	c.srqn = htole32(srq->srqn);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	attr->max_wr = le32toh(a.max_wr);
	attr->max_sge = le32toh(a.max_sge);
	attr->srq_limit = le32toh(a.srq_limit);
out:
	vrdma_dev_unlock(srq->dev);
	return rc;
}

static int srq_check_destroy(struct vrdma_rdma *r VRDMA_UNUSED, uint32_t srqn VRDMA_UNUSED,
			     void *obj)
{
	return ((struct vrdma_srq *)obj)->refs ? -EBUSY : 0;
}

static void srq_drop(struct vrdma_rdma *r, uint32_t srqn VRDMA_UNUSED, void *obj)
{
	vrdma_rdma_events_forget(r, obj);
	vrdma_rdma_srq_free(r, obj);
}

static const struct vrdma_rdma_kind srq_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ,
	.check = srq_check_destroy,
	.drop = srq_drop,
};

int vrdma_srq_destroy(struct vrdma_srq *srq)
{
	return srq ? vrdma_rdma_destroy(srq->dev, &srq_kind, srq->srqn, srq) : -EINVAL;
}

uint32_t vrdma_srq_num(const struct vrdma_srq *srq)
{
	return srq->srqn;
}

void vrdma_srq_set_context(struct vrdma_srq *srq, void *context)
{
	srq->context = context;
}

void *vrdma_srq_context(const struct vrdma_srq *srq)
{
	return srq->context;
}

int vrdma_post_srq_recv(struct vrdma_srq *srq, const struct vrdma_recv_wr *wr, unsigned n)
{
	if (!srq || (n && !wr))
		return -EINVAL;
	if (vrdma_dev_is_dead(srq->dev))
		return -ENOTCONN;
	return vrdma_rdma_wq_post_recv(&srq->wq, srq->max_sge, wr, n);
}
