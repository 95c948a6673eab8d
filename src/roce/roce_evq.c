/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event virtqueue (docs/spec.md "Asynchronous events"): the device
 * model keeps pending events in its objects (one bit per type, a FIFO of
 * objects); this file writes them, oldest first, one struct
 * virtio_rdma_event per device-writable buffer of the event ring. Without a
 * buffer they simply stay pending (nothing is lost, nothing allocated).
 *
 * The event ring is published after every other ring of the same commit, so
 * an event never becomes visible before the completions written with it
 * (QP_LAST_WQE_REACHED after the flushed receive request).
 */
#include "roce/roce_srq_evq.h"

#include <string.h>

#include "common/util.h"
#include "vhost/vhost_server.h"

void roce_tp_event(struct roce_tp *tp, struct rres_ev_obj *o, uint8_t type)
{
	if (!tp->rd->ext || !tp->ext)
		return;
	tp->ext->stats.ev_raised++;
	rres_event_raise(tp->rd, o, type);
}

/* A broken event ring is reported once (error eventfd, counted), however
 * the breakage was found: a pop, or the avail index read by roce_evq_busy()
 * while the device waits for buffers. Returns true if r is broken. */
static bool evq_broken(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_tp_ext *x = tp->ext;

	if (!r->vq.broken)
		return false;
	if (!x->evq.err_reported) {
		x->stats.ev_ring_errors++;
		roce_tp_ring_broken(tp, &x->evq);
	}
	return true;
}

bool roce_evq_deliver(struct roce_tp *tp)
{
	struct roce_tp_ext *x = tp->ext;
	struct rres_dev *rd = tp->rd;
	struct vhost_vring *r;
	struct vq_elem *e;
	bool any = false;

	if (!x || !rd->ext || !rres_event_pending(rd))
		return false;
	r = x->evq.r;
	if (!r || evq_broken(tp, r))
		return false;
	e = &x->elem;
	while (rres_event_pending(rd)) {
		struct virtio_rdma_event ev;
		uint8_t type;
		uint32_t id;
		int rc = vq_dev_pop(&r->vq, e);

		if (rc == 0) {
			/* Kicks stay enabled on this ring: the driver's next
			 * buffer brings us back. */
			x->stats.ev_waits++;
			break;
		}
		if (rc < 0) {
			evq_broken(tp, r);
			break;
		}
		if (e->in_len < sizeof(ev)) {
			x->stats.ev_short_bufs++;
			vq_dev_fill(&r->vq, e->head, 0);
			x->evq_dirty = true;
			continue;
		}
		if (!rres_event_pop(rd, &type, &id)) {
			/* Cannot happen (checked above); give it back. */
			vq_dev_unpop(&r->vq);
			break;
		}
		memset(&ev, 0, sizeof(ev));
		ev.type = htole32(type);
		ev.id = htole32(id);
		vq_elem_write(e, 0, &ev, sizeof(ev));
		vq_dev_fill(&r->vq, e->head, sizeof(ev));
		x->evq_dirty = true;
		x->stats.ev_written++;
		if (type < VIRTIO_IB_EVENT_NUM)
			x->stats.ev_by_type[type]++;
		any = true;
	}
	return any;
}

void roce_evq_publish(struct roce_tp *tp)
{
	struct roce_tp_ext *x = tp->ext;
	struct vhost_vring *r;

	if (!x || !x->evq_dirty)
		return;
	x->evq_dirty = false;
	r = x->evq.r;
	if (!r || r->vq.broken)
		return;
	vq_dev_flush(&r->vq);
	tp->ops.notify(tp->ctx, r, false);
}

void roce_evq_ring_set(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_tp_ext *x = tp->ext;

	if (!x)
		return;
	if (x->evq.r != r)
		roce_evq_publish(tp);
	x->evq_dirty = false;
	roce_tp_ring_ref_set(tp, &x->evq, r);
	if (r && !r->vq.broken && !x->evq.polled)
		vq_dev_set_notify(&r->vq, true);
}

bool roce_evq_busy(struct roce_tp *tp)
{
	struct roce_tp_ext *x = tp->ext;
	struct vhost_vring *r;

	if (!x || !tp->rd->ext || !rres_event_pending(tp->rd))
		return false;
	r = x->evq.r;
	if (!r || evq_broken(tp, r))
		return false;
	if (vq_dev_avail(&r->vq))
		return true;
	/* A corrupt avail index breaks the ring here: report it now. */
	evq_broken(tp, r);
	return false;
}

void roce_evq_kicked(struct roce_tp *tp, struct vhost_vring *r)
{
	struct roce_tp_ext *x = tp->ext;

	if (!x || x->evq.r != r || r->vq.broken)
		return;
	(void)vq_dev_avail(&r->vq);
	evq_broken(tp, r);
}
