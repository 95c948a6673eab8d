/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loop threads of the daemon (--threads N, docs/design.md "Processes and
 * threads"). Thread 0 is the main thread (signals, the control socket, the
 * config file); threads 1..N-1 each run their own loop and switch. The
 * switches are joined by trunks (port/trunk.h), one per pair of threads.
 *
 * Nothing a thread owns is touched by another while it runs. Thread 0
 * reaches the others in two ways, both through a small queue per thread
 * (a mutex, a condition variable, an eventfd in the thread's loop):
 *  - dthread_run: run a function on that thread and wait for it (device
 *    creation and removal, uplinks, per-thread counters);
 *  - dthread_pause_all / dthread_resume_all: every other thread parks
 *    between two loop passes (still running calls queued to it) while
 *    thread 0 reads or changes state of any thread (control commands,
 *    SIGUSR1 dumps, SIGHUP reloads).
 * Only thread 0 calls either, so no two threads ever wait for each other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "port/port.h"
#include "port/trunk.h"
#include "daemon.h"

struct dcall {
	void (*fn)(void *);
	void *arg;
	bool done;
	struct dcall *next;
};

struct dthread {
	unsigned idx;
	struct loop *loop;
	struct sw *sw;
	pthread_t tid;
	bool started;
	int efd;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* calls queued, calls done, park changes */
	struct dcall *head, **tail;
	bool park_req;           /* thread 0 wants it parked */
	bool parked;
	bool exited;             /* its loop ended: calls run on the caller */
	atomic_bool failed;      /* thread 0: another thread's loop failed */
};

/* Run the queued calls; with the lock held (dropped around each call). */
static void dthread_drain(struct dthread *t)
{
	struct dcall *c;

	while ((c = t->head)) {
		t->head = c->next;
		if (!t->head)
			t->tail = &t->head;
		pthread_mutex_unlock(&t->lock);
		c->fn(c->arg);
		pthread_mutex_lock(&t->lock);
		c->done = true;
		pthread_cond_broadcast(&t->cond);
	}
}

static void dthread_efd_cb(void *arg, uint32_t events)
{
	struct dthread *t = arg;
	uint64_t v;

	(void)events;
	if (read(t->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_WARN("thread %u: eventfd: %m", t->idx);
	pthread_mutex_lock(&t->lock);
	dthread_drain(t);
	if (t->park_req) {
		t->parked = true;
		pthread_cond_broadcast(&t->cond);
		while (t->park_req) {
			dthread_drain(t);
			if (t->park_req)
				pthread_cond_wait(&t->cond, &t->lock);
		}
		t->parked = false;
		pthread_cond_broadcast(&t->cond);
	}
	pthread_mutex_unlock(&t->lock);
}

static void dthread_kick(struct dthread *t)
{
	uint64_t one = 1;

	if (write(t->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_WARN("thread %u: eventfd: %m", t->idx);
}

static void *dthread_main(void *arg)
{
	struct dthread *t = arg;
	char name[16];

	snprintf(name, sizeof(name), "vrdma-loop%u", t->idx);
	pthread_setname_np(pthread_self(), name);
	if (loop_run(t->loop) < 0) {
		struct dthread *t0 = t - t->idx; /* (the array's first) */

		/* its devices would be dead: the daemon stops, with an error */
		LOG_ERR("thread %u: loop failed, stopping", t->idx);
		atomic_store(&t0->failed, true);
		dthread_kick(t0);
	}
	/* Nothing here runs any more: what is queued, and what comes, runs
	 * on the caller (stopping never waits for a dead loop). */
	pthread_mutex_lock(&t->lock);
	dthread_drain(t);
	t->exited = true;
	t->parked = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void dthread_run(struct daemon *d, unsigned idx, void (*fn)(void *), void *arg)
{
	struct dthread *t = &d->threads[idx];
	struct dcall c = { .fn = fn, .arg = arg };

	if (!t->started || pthread_equal(pthread_self(), t->tid)) {
		fn(arg);
		return;
	}
	pthread_mutex_lock(&t->lock);
	if (t->exited) {
		pthread_mutex_unlock(&t->lock);
		fn(arg);
		return;
	}
	*t->tail = &c;
	t->tail = &c.next;
	pthread_cond_broadcast(&t->cond); /* a parked thread runs it at once */
	pthread_mutex_unlock(&t->lock);
	dthread_kick(t);
	pthread_mutex_lock(&t->lock);
	while (!c.done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

void dthread_pause_all(struct daemon *d)
{
	for (unsigned i = 1; i < d->nthreads; i++) {
		struct dthread *t = &d->threads[i];

		if (!t->started)
			continue;
		pthread_mutex_lock(&t->lock);
		t->park_req = true;
		pthread_mutex_unlock(&t->lock);
		dthread_kick(t);
	}
	for (unsigned i = 1; i < d->nthreads; i++) {
		struct dthread *t = &d->threads[i];

		if (!t->started)
			continue;
		pthread_mutex_lock(&t->lock);
		while (!t->parked)
			pthread_cond_wait(&t->cond, &t->lock);
		pthread_mutex_unlock(&t->lock);
	}
}

void dthread_resume_all(struct daemon *d)
{
	for (unsigned i = 1; i < d->nthreads; i++) {
		struct dthread *t = &d->threads[i];

		if (!t->started)
			continue;
		pthread_mutex_lock(&t->lock);
		t->park_req = false;
		if (t->exited)
			t->parked = true; /* stays "parked": it never runs again */
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
	}
}

/* Thread 0's eventfd: another thread's loop failed, stop ours. */
static void dthread0_efd_cb(void *arg, uint32_t events)
{
	struct dthread *t = arg;
	uint64_t v;

	(void)events;
	if (read(t->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_WARN("thread 0: eventfd: %m");
	if (atomic_load(&t->failed))
		loop_stop(t->loop);
}

bool dthreads_failed(struct daemon *d)
{
	return d->threads && atomic_load(&d->threads[0].failed);
}

struct loop *dthread_loop(struct daemon *d, unsigned idx)
{
	return d->threads[idx].loop;
}

struct sw *dthread_sw(struct daemon *d, unsigned idx)
{
	return d->threads[idx].sw;
}

int dthreads_new(struct daemon *d, unsigned n)
{
	d->threads = calloc(n, sizeof(*d->threads));
	d->trunks = calloc((size_t)n * n, sizeof(*d->trunks));
	if (!d->threads || !d->trunks)
		return -ENOMEM;
	d->nthreads = n;
	for (unsigned i = 0; i < n; i++) {
		struct dthread *t = &d->threads[i];

		t->idx = i;
		t->efd = -1;
		t->tail = &t->head;
		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
	}
	for (unsigned i = 0; i < n; i++) {
		struct dthread *t = &d->threads[i];

		if (i == 0) {
			t->loop = d->loop;
			t->sw = d->sw;
			atomic_init(&t->failed, false);
			if (n > 1) {
				t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
				if (t->efd < 0 ||
				    loop_add_fd(t->loop, t->efd, EPOLLIN, dthread0_efd_cb, t) < 0)
					return -errno;
			}
			continue;
		}
		t->loop = loop_new();
		t->sw = t->loop ? sw_new(t->loop) : NULL;
		if (!t->sw)
			return -ENOMEM;
		t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->efd < 0 || loop_add_fd(t->loop, t->efd, EPOLLIN, dthread_efd_cb, t) < 0)
			return -errno;
	}
	/* a full mesh of trunks */
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = i + 1; j < n; j++) {
			int rc = trunk_new(d->threads[i].sw, d->threads[i].loop, i,
					   d->threads[j].sw, d->threads[j].loop, j,
					   &d->trunks[i * n + j], &d->trunks[j * n + i]);

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int dthreads_start(struct daemon *d)
{
	for (unsigned i = 1; i < d->nthreads; i++) {
		struct dthread *t = &d->threads[i];
		int rc = pthread_create(&t->tid, NULL, dthread_main, t);

		if (rc) {
			LOG_ERR("cannot start loop thread %u: %s", i, strerror(rc));
			return -rc;
		}
		t->started = true;
	}
	return 0;
}

static void dthread_stop_cb(void *arg)
{
	loop_stop(arg);
}

void dthreads_stop(struct daemon *d)
{
	for (unsigned i = 1; i < d->nthreads; i++) {
		struct dthread *t = &d->threads[i];

		if (!t->started)
			continue;
		dthread_run(d, i, dthread_stop_cb, t->loop);
		pthread_join(t->tid, NULL);
		t->started = false;
	}
}

void dthreads_free(struct daemon *d)
{
	unsigned n = d->nthreads;

	if (d->trunks) {
		for (unsigned i = 0; i < n; i++)
			for (unsigned j = i + 1; j < n; j++)
				trunk_free(d->trunks[i * n + j], d->trunks[j * n + i]);
		free(d->trunks);
		d->trunks = NULL;
	}
	if (!d->threads)
		return;
	for (unsigned i = 0; i < n; i++) {
		struct dthread *t = &d->threads[i];

		if (i == 0 && t->efd >= 0) {
			loop_del_fd(t->loop, t->efd);
			close(t->efd);
		}
		if (i > 0) {
			if (t->efd >= 0) {
				loop_del_fd(t->loop, t->efd);
				close(t->efd);
			}
			sw_free(t->sw);
			if (t->loop) {
				loop_run_once(t->loop, 0); /* reap deferred removals */
				loop_free(t->loop);
			}
		}
		pthread_mutex_destroy(&t->lock);
		pthread_cond_destroy(&t->cond);
	}
	free(d->threads);
	d->threads = NULL;
	d->nthreads = 0;
}

static void dthread_stats_cb(void *arg)
{
	struct dthread_stats *t = arg;
	struct roce_run_stats rs;
	struct pkt_ref_stats ps;
	struct roce_copy_stats cs;

	roce_run_get_stats(&rs);
	pkt_ref_get_stats(&ps);
	roce_copy_get_stats(&cs);
	t->rs.runs_split += rs.runs_split;
	t->rs.frames_split += rs.frames_split;
	t->rs.split_failed += rs.split_failed;
	t->rs.runs_cut += rs.runs_cut;
	t->rs.tails += rs.tails;
	t->rs.holes += rs.holes;
	t->ps.attached += ps.attached;
	t->ps.filled += ps.filled;
	t->ps.flushes += ps.flushes;
	t->ps.live += ps.live;
	t->cs.streamed += cs.streamed;
	t->cs.streamed_bytes += cs.streamed_bytes;
}

void dthread_add_stats(struct daemon *d, unsigned idx, struct dthread_stats *ts)
{
	dthread_run(d, idx, dthread_stats_cb, ts);
}
