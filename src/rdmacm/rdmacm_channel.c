// SPDX-License-Identifier: BSD-3-Clause
/*
 * Event channels: a queue of rdma_cm_events and an eventfd in semaphore
 * mode (one count per queued event), so the channel's fd polls readable
 * while events wait and O_NONBLOCK on it makes rdma_get_cm_event return
 * EAGAIN, as with librdmacm's /dev/infiniband/rdma_cm.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmacm/rdmacm_priv.h"

RCM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rcm_channel *ch;

	pthread_mutex_lock(&rcm_lock);
	if (rcm_devs_init()) {
		pthread_mutex_unlock(&rcm_lock);
		return NULL;
	}
	pthread_mutex_unlock(&rcm_lock);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	return &ch->ch;
}

void rcm_channel_free(struct rcm_channel *ch)
{
	while (ch->head) {
		struct rcm_event *e = ch->head;

		ch->head = e->next;
		free(e);
	}
	ch->tail = NULL;
	if (ch->readers) {
		ch->destroyed = true;
		return;
	}
	close(ch->ch.fd);
	free(ch);
}

RCM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rcm_channel *ch = (struct rcm_channel *)channel;

	if (!ch)
		return;
	pthread_mutex_lock(&rcm_lock);
	rcm_channel_free(ch);
	pthread_mutex_unlock(&rcm_lock);
}

struct rcm_event *rcm_event_new(struct rcm_id *id, enum rdma_cm_event_type type, int status)
{
	struct rcm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	return e;
}

void rcm_event_post(struct rcm_channel *ch, struct rcm_event *e)
{
	uint64_t one = 1;

	if (!ch) {
		free(e);
		return;
	}
	/* private data points into the event itself */
	if (e->ev.param.conn.private_data_len)
		e->ev.param.conn.private_data = e->pd;
	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (write(ch->ch.fd, &one, sizeof(one)) < 0)
		return;
}

/* Removes the queued events of a destroyed id (their counts stay in the
 * eventfd: rdma_get_cm_event skips counts without an event and waits on). */
void rcm_channel_drop_id(struct rcm_channel *ch, struct rcm_id *id)
{
	struct rcm_event **pp, *tail = NULL;

	if (!ch)
		return;
	for (pp = &ch->head; *pp;) {
		struct rcm_event *e = *pp;

		if (e->ev.id == &id->id || e->ev.listen_id == &id->id) {
			*pp = e->next;
			free(e);
		} else {
			tail = e;
			pp = &e->next;
		}
	}
	ch->tail = tail;
}

/* A thread leaves rdma_get_cm_event (returning or cancelled in read()). */
static void channel_reader_done(void *arg)
{
	struct rcm_channel *ch = arg;

	pthread_mutex_lock(&rcm_lock);
	if (!--ch->readers && ch->destroyed) {
		close(ch->ch.fd);
		free(ch);
	}
	pthread_mutex_unlock(&rcm_lock);
}

RCM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_channel *ch = (struct rcm_channel *)channel;
	volatile int rc = 0; /* (set inside the cleanup region) */

	if (!ch || !event) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&rcm_lock);
	ch->readers++;
	pthread_mutex_unlock(&rcm_lock);
	pthread_cleanup_push(channel_reader_done, ch);
	for (;;) {
		struct rcm_event *e;
		uint64_t v;

		/* EINTR ends the wait as in librdmacm (the kernel restarts
		 * this read for a handler with SA_RESTART). */
		if (read(ch->ch.fd, &v, sizeof(v)) < 0) {
			rc = -1;
			break;
		}
		pthread_mutex_lock(&rcm_lock);
		e = ch->head;
		if (e) {
			ch->head = e->next;
			if (!ch->head)
				ch->tail = NULL;
			rcm_event_complete(e);
			/* a connect request counts against its listener, as in librdmacm */
			e->owner = (struct rcm_id *)(e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
					  e->ev.listen_id ? e->ev.listen_id : e->ev.id);
			e->owner->events_out++;
		}
		pthread_mutex_unlock(&rcm_lock);
		if (e) {
			*event = &e->ev;
			break;
		}
	}
	pthread_cleanup_pop(1);
	return rc;
}

RCM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	struct rcm_event *e = (struct rcm_event *)event;

	pthread_mutex_lock(&rcm_lock);
	if (e->owner) {
		e->owner->events_out--;
		pthread_cond_broadcast(&rcm_acked);
	}
	pthread_mutex_unlock(&rcm_lock);
	free(e);
	return 0;
}

/* Waits for the next event of a synchronous id; 0 if it is `want`, else
 * -1 with errno (ECONNREFUSED for a reject, ETIMEDOUT/EHOSTUNREACH ...). */
int rcm_sync_wait(struct rcm_id *id, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int ret = 0;

	if (rdma_get_cm_event(&id->ch->ch, &ev))
		return -1;
	if (ev->event != want) {
		ret = -1;
		errno = ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
			ev->status < 0 ? -ev->status : EIO;
	}
	rdma_ack_cm_event(ev);
	return ret;
}
