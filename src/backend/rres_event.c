/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events of the extension (docs/spec.md "Asynchronous events"):
 * one pending bit per event type in each object, and a FIFO of the objects
 * with pending bits. Nothing is allocated and nothing is lost: an event whose
 * bit is already pending merges with it. Delivery (the event virtqueue) is
 * the transport's: it pops events when the driver gave buffers.
 */
#include "backend/rres_dev.h"
#include "backend/rres_priv.h"
#include "vrdma/virtio_net_roce_cm.h"

void rres_event_raise(struct rres_dev *rd, struct rres_ev_obj *o, uint8_t type)
{
	uint32_t bit;

	if (!rd->ext || (type >= VIRTIO_IB_EVENT_NUM && type != VIRTIO_IB_EVENT_CM_PENDING))
		return;
	bit = 1u << type;
	rd->events_raised++;
	if (o->pending & bit) {
		rd->events_merged++;
		return;
	}
	o->pending |= bit;
	if (!o->queued) {
		o->queued = true;
		o->next = NULL;
		o->prev = rd->ev_tail;
		if (rd->ev_tail)
			rd->ev_tail->next = o;
		else
			rd->ev_head = o;
		rd->ev_tail = o;
	}
	if (rd->hooks.event_raised)
		rd->hooks.event_raised(rd);
}

/* Unlink o (queued) from the FIFO. */
static void ev_unlink(struct rres_dev *rd, struct rres_ev_obj *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		rd->ev_head = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		rd->ev_tail = o->prev;
	o->next = o->prev = NULL;
	o->queued = false;
}

bool rres_event_pop(struct rres_dev *rd, uint8_t *type, uint32_t *id)
{
	struct rres_ev_obj *o = rd->ev_head;
	uint8_t t;

	/* an object whose bits were all cleared is never left queued */
	if (!o)
		return false;
	t = (uint8_t)__builtin_ctz(o->pending);
	o->pending &= ~(1u << t);
	*type = t;
	*id = o->id;
	if (!o->pending)
		ev_unlink(rd, o);
	return true;
}

void rres_event_drop(struct rres_dev *rd, struct rres_ev_obj *o)
{
	o->pending = 0;
	if (o->queued)
		ev_unlink(rd, o);
}
