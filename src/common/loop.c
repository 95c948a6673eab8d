/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event loop: epoll + timer min-heap + pollers with adaptive busy-polling.
 * See loop.h for the contract.
 */
#include "common/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define LOOP_MAX_EVENTS 64
/* While pollers find work, the fds are looked at on one pass in this many:
 * a pass then costs no syscall (docs/performance.md "Per-frame costs on the
 * local path"); fd events wait a few passes at most, never get lost. */
#define LOOP_FD_EVERY 8

struct loop_watch {
	int fd;
	loop_fd_cb cb;
	void *arg;
	bool dead;           /* deleted while a batch was being dispatched */
	struct loop_watch *next_dead;
};

struct loop_poller {
	const struct loop_poller_ops *ops;
	void *arg;
	bool dead;
	struct loop_poller *next;
};

struct loop {
	int epfd;
	/* fd -> watch, grown on demand */
	struct loop_watch **watch;
	int nwatch;
	struct loop_watch *dead_watches;   /* freed after the current batch */
	int dispatching;

	struct loop_poller *pollers;
	bool pollers_dirty;

	struct loop_timer **heap;
	int heap_len, heap_cap;

	unsigned poll_us;
	uint64_t pass;                     /* loop_pass() */
	uint64_t pass_ns;                  /* loop_pass_ns() */
	unsigned fd_skipped;               /* busy passes since the fds were looked at */
	bool have_pwait2;
	uint64_t last_work_ns;
	bool armed;
	bool stop;
};

uint64_t loop_now_ns(void)
{
	return mono_ns();
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->poll_us = 0;
	l->have_pwait2 = true;
	l->pass_ns = loop_now_ns();
	return l;
}

static void loop_reap(struct loop *l)
{
	struct loop_watch *w;
	struct loop_poller **pp;

	while ((w = l->dead_watches)) {
		l->dead_watches = w->next_dead;
		free(w);
	}
	if (l->pollers_dirty) {
		pp = &l->pollers;
		while (*pp) {
			struct loop_poller *p = *pp;

			if (p->dead) {
				*pp = p->next;
				free(p);
			} else {
				pp = &p->next;
			}
		}
		l->pollers_dirty = false;
	}
}

void loop_free(struct loop *l)
{
	struct loop_poller *p, *n;

	if (!l)
		return;
	for (int i = 0; i < l->nwatch; i++)
		free(l->watch[i]);
	free(l->watch);
	loop_reap(l);
	for (p = l->pollers; p; p = n) {
		n = p->next;
		free(p);
	}
	for (int i = 0; i < l->heap_len; i++)
		l->heap[i]->heap_idx = -1;
	free(l->heap);
	close(l->epfd);
	free(l);
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg)
{
	struct epoll_event ev = { .events = events };
	struct loop_watch *w;

	if (fd < 0 || !cb)
		return -EINVAL;
	if (fd >= l->nwatch) {
		int n = l->nwatch ? l->nwatch : 64;
		struct loop_watch **nw;

		while (n <= fd)
			n *= 2;
		nw = realloc(l->watch, (size_t)n * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		memset(nw + l->nwatch, 0, (size_t)(n - l->nwatch) * sizeof(*nw));
		l->watch = nw;
		l->nwatch = n;
	}
	if (l->watch[fd])
		return -EEXIST;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->cb = cb;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		free(w);
		return err;
	}
	l->watch[fd] = w;
	return 0;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0 || fd >= l->nwatch || !l->watch[fd])
		return -ENOENT;
	ev.data.ptr = l->watch[fd];
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int loop_del_fd(struct loop *l, int fd)
{
	struct loop_watch *w;

	if (fd < 0 || fd >= l->nwatch || !l->watch[fd])
		return -ENOENT;
	w = l->watch[fd];
	l->watch[fd] = NULL;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	/* Events for w may still sit in the batch being dispatched: free it
	 * after the batch. */
	w->dead = true;
	w->next_dead = l->dead_watches;
	l->dead_watches = w;
	if (!l->dispatching)
		loop_reap(l);
	return 0;
}

struct loop_poller *loop_add_poller(struct loop *l, const struct loop_poller_ops *ops, void *arg)
{
	struct loop_poller *p = calloc(1, sizeof(*p)), **pp;

	if (!p)
		return NULL;
	p->ops = ops;
	p->arg = arg;
	for (pp = &l->pollers; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	return p;
}

void loop_del_poller(struct loop *l, struct loop_poller *p)
{
	if (!p)
		return;
	p->dead = true;
	l->pollers_dirty = true;
	if (!l->dispatching)
		loop_reap(l);
}

/* ---- timers: binary min-heap on deadline ---- */

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg)
{
	t->deadline_ns = 0;
	t->cb = cb;
	t->arg = arg;
	t->heap_idx = -1;
}

static void heap_swap(struct loop *l, int a, int b)
{
	struct loop_timer *t = l->heap[a];

	l->heap[a] = l->heap[b];
	l->heap[b] = t;
	l->heap[a]->heap_idx = a;
	l->heap[b]->heap_idx = b;
}

static void heap_up(struct loop *l, int i)
{
	while (i > 0) {
		int parent = (i - 1) / 2;

		if (l->heap[parent]->deadline_ns <= l->heap[i]->deadline_ns)
			break;
		heap_swap(l, i, parent);
		i = parent;
	}
}

static void heap_down(struct loop *l, int i)
{
	for (;;) {
		int left = 2 * i + 1, right = left + 1, min = i;

		if (left < l->heap_len && l->heap[left]->deadline_ns < l->heap[min]->deadline_ns)
			min = left;
		if (right < l->heap_len && l->heap[right]->deadline_ns < l->heap[min]->deadline_ns)
			min = right;
		if (min == i)
			break;
		heap_swap(l, i, min);
		i = min;
	}
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	int i = t->heap_idx;

	if (i < 0)
		return;
	l->heap_len--;
	if (i != l->heap_len) {
		l->heap[i] = l->heap[l->heap_len];
		l->heap[i]->heap_idx = i;
		heap_down(l, i);
		heap_up(l, i);
	}
	t->heap_idx = -1;
}

void loop_timer_arm(struct loop *l, struct loop_timer *t, uint64_t deadline_ns)
{
	if (t->heap_idx >= 0) {
		t->deadline_ns = deadline_ns;
		heap_down(l, t->heap_idx);
		heap_up(l, t->heap_idx);
		return;
	}
	if (l->heap_len == l->heap_cap) {
		int n = l->heap_cap ? l->heap_cap * 2 : 64;
		struct loop_timer **nh = realloc(l->heap, (size_t)n * sizeof(*nh));

		if (!nh) {
			/* Cannot happen in practice; a lost timer would stall a QP,
			 * so fail loudly. */
			LOG_ERR("loop: out of memory arming a timer");
			abort();
		}
		l->heap = nh;
		l->heap_cap = n;
	}
	t->deadline_ns = deadline_ns;
	t->heap_idx = l->heap_len;
	l->heap[l->heap_len++] = t;
	heap_up(l, t->heap_idx);
}

static bool run_timers(struct loop *l, uint64_t now)
{
	bool any = false;
	int budget = l->heap_len; /* a timer re-armed for "now" waits a pass */

	while (budget-- > 0 && l->heap_len && l->heap[0]->deadline_ns <= now) {
		struct loop_timer *t = l->heap[0];

		loop_timer_cancel(l, t);
		t->cb(t, t->arg);
		any = true;
	}
	return any;
}

void loop_set_poll_us(struct loop *l, unsigned poll_us)
{
	l->poll_us = poll_us;
}

uint64_t loop_pass_ns(const struct loop *l)
{
	return l->pass_ns;
}

uint64_t loop_pass(const struct loop *l)
{
	return l->pass;
}

static bool run_pollers(struct loop *l)
{
	bool work = false;

	for (struct loop_poller *p = l->pollers; p; p = p->next)
		if (!p->dead && p->ops->poll(p->arg))
			work = true;
	return work;
}

/* Returns true if some poller reports pending work (do not sleep). */
static bool arm_pollers(struct loop *l)
{
	bool pending = false;

	for (struct loop_poller *p = l->pollers; p; p = p->next)
		if (!p->dead && p->ops->arm && p->ops->arm(p->arg))
			pending = true;
	l->armed = true;
	return pending;
}

static void disarm_pollers(struct loop *l)
{
	for (struct loop_poller *p = l->pollers; p; p = p->next)
		if (!p->dead && p->ops->disarm)
			p->ops->disarm(p->arg);
	l->armed = false;
}

int loop_run_once(struct loop *l, int64_t max_wait_ns)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	uint64_t now = l->pass_ns = loop_now_ns();
	int64_t wait_ns = max_wait_ns;
	int timeout_ms, n;
	bool work;

	l->pass++;
	l->dispatching++;
	work = run_pollers(l);
	work |= run_timers(l, now);
	l->dispatching--;
	loop_reap(l);

	if (work) {
		l->last_work_ns = now;
		if (++l->fd_skipped < LOOP_FD_EVERY)
			return 0;
	}
	l->fd_skipped = 0;

	if (work || (l->poll_us && now - l->last_work_ns < (uint64_t)l->poll_us * 1000)) {
		/* Busy-polling: look at fds without sleeping. */
		wait_ns = 0;
	} else if (arm_pollers(l)) {
		wait_ns = 0;
	}

	if (wait_ns != 0 && l->heap_len) {
		uint64_t dl = l->heap[0]->deadline_ns;
		int64_t until = dl > now ? (int64_t)(dl - now) : 0;

		if (wait_ns < 0 || until < wait_ns)
			wait_ns = until;
	}
	if (wait_ns < 0)
		timeout_ms = -1;
	else
		timeout_ms = (int)((wait_ns + 999999) / 1000000);

	/* Nanosecond timeouts where the kernel has epoll_pwait2 (Linux 5.11):
	 * transport timers (RNR waits, short retransmit timeouts, kick-less
	 * ring polling) are shorter than a millisecond. */
	if (l->have_pwait2 && wait_ns > 0) {
		struct timespec ts = { .tv_sec = wait_ns / 1000000000,
				       .tv_nsec = wait_ns % 1000000000 };

		n = epoll_pwait2(l->epfd, evs, LOOP_MAX_EVENTS, &ts, NULL);
		if (n < 0 && errno == ENOSYS) {
			l->have_pwait2 = false;
			n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, timeout_ms);
		}
	} else {
		n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, timeout_ms);
	}
	if (wait_ns != 0)
		l->pass_ns = loop_now_ns(); /* (for the fd callbacks below) */
	if (l->armed)
		disarm_pollers(l);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return -errno;
	}
	l->dispatching++;
	for (int i = 0; i < n; i++) {
		struct loop_watch *w = evs[i].data.ptr;

		if (w->dead)
			continue;
		w->cb(w->arg, evs[i].events);
	}
	if (n > 0 || wait_ns != 0) {
		/* (a pass that did not wait ran its timers above) */
		uint64_t t = l->pass_ns = loop_now_ns();

		if (n > 0)
			l->last_work_ns = t;
		run_timers(l, t);
	}
	l->dispatching--;
	loop_reap(l);
	return 0;
}

int loop_run(struct loop *l)
{
	int ret = 0;

	l->stop = false;
	l->last_work_ns = loop_now_ns();
	while (!l->stop) {
		ret = loop_run_once(l, -1);
		if (ret < 0)
			break;
	}
	return ret;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}

bool loop_stopped(const struct loop *l)
{
	return l->stop;
}
