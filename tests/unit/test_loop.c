/* SPDX-License-Identifier: BSD-3-Clause */
/* Event loop: fd dispatch, deletion during dispatch, timers, pollers. */
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/loop.h"
#include "harness.h"

struct fdctx {
	struct loop *l;
	int fd;
	int hits;
	int other_fd;   /* deleted from inside the callback */
};

static void fd_cb(void *arg, uint32_t events)
{
	struct fdctx *c = arg;
	uint64_t v;

	(void)events;
	c->hits++;
	if (read(c->fd, &v, sizeof(v)) != sizeof(v))
		c->hits += 1000;
	if (c->other_fd >= 0) {
		loop_del_fd(c->l, c->other_fd);
		c->other_fd = -1;
	}
}

static void test_fd_dispatch(void)
{
	struct loop *l = loop_new();
	struct fdctx a = { .l = l, .other_fd = -1 };
	uint64_t one = 1;

	REQUIRE(l);
	a.fd = eventfd(0, EFD_NONBLOCK);
	CHECK_EQ(loop_add_fd(l, a.fd, EPOLLIN, fd_cb, &a), 0);
	CHECK_EQ(loop_add_fd(l, a.fd, EPOLLIN, fd_cb, &a), -EEXIST);
	CHECK_EQ(write(a.fd, &one, 8), 8);
	CHECK_EQ(loop_run_once(l, 0), 0);
	CHECK_EQ(a.hits, 1);
	/* nothing pending: a zero wait returns without dispatch */
	CHECK_EQ(loop_run_once(l, 0), 0);
	CHECK_EQ(a.hits, 1);
	CHECK_EQ(loop_del_fd(l, a.fd), 0);
	CHECK_EQ(loop_del_fd(l, a.fd), -ENOENT);
	close(a.fd);
	loop_free(l);
}

static void test_delete_during_dispatch(void)
{
	struct loop *l = loop_new();
	struct fdctx a = { .l = l }, b = { .l = l, .other_fd = -1 };
	uint64_t one = 1;

	REQUIRE(l);
	a.fd = eventfd(0, EFD_NONBLOCK);
	b.fd = eventfd(0, EFD_NONBLOCK);
	a.other_fd = b.fd;
	b.other_fd = a.fd;
	CHECK_EQ(loop_add_fd(l, a.fd, EPOLLIN, fd_cb, &a), 0);
	CHECK_EQ(loop_add_fd(l, b.fd, EPOLLIN, fd_cb, &b), 0);
	CHECK_EQ(write(a.fd, &one, 8), 8);
	CHECK_EQ(write(b.fd, &one, 8), 8);
	CHECK_EQ(loop_run_once(l, 0), 0);
	/* whichever ran first deleted the other: exactly one callback */
	CHECK_EQ(a.hits + b.hits, 1);
	loop_del_fd(l, a.fd);
	loop_del_fd(l, b.fd);
	close(a.fd);
	close(b.fd);
	loop_free(l);
}

static int order[8], norder;

static void timer_cb(struct loop_timer *t, void *arg)
{
	(void)t;
	order[norder++] = (int)(intptr_t)arg;
}

static void test_timers(void)
{
	struct loop *l = loop_new();
	struct loop_timer t[4];
	uint64_t now = loop_now_ns();

	REQUIRE(l);
	norder = 0;
	for (int i = 0; i < 4; i++)
		loop_timer_init(&t[i], timer_cb, (void *)(intptr_t)i);
	loop_timer_arm(l, &t[0], now + 3000000);
	loop_timer_arm(l, &t[1], now + 1000000);
	loop_timer_arm(l, &t[2], now + 2000000);
	loop_timer_arm(l, &t[3], now + 500000);
	loop_timer_cancel(l, &t[3]);
	CHECK(!loop_timer_armed(&t[3]));
	/* re-arm moves a timer */
	loop_timer_arm(l, &t[0], now + 100000);
	while (norder < 3)
		CHECK_EQ(loop_run_once(l, -1), 0);
	CHECK_EQ(order[0], 0);
	CHECK_EQ(order[1], 1);
	CHECK_EQ(order[2], 2);
	CHECK_EQ(norder, 3);
	loop_free(l);
}

struct pctx {
	int polls, arms, disarms, budget;
};

static bool p_poll(void *arg)
{
	struct pctx *p = arg;

	p->polls++;
	if (p->budget > 0) {
		p->budget--;
		return true;
	}
	return false;
}

static bool p_arm(void *arg)
{
	struct pctx *p = arg;

	p->arms++;
	return false;
}

static void p_disarm(void *arg)
{
	struct pctx *p = arg;

	p->disarms++;
}

static const struct loop_poller_ops pops = { p_poll, p_arm, p_disarm };

static void test_pollers(void)
{
	struct loop *l = loop_new();
	struct pctx p = { .budget = 3 };
	struct loop_poller *h;

	REQUIRE(l);
	h = loop_add_poller(l, &pops, &p);
	REQUIRE(h);
	/* interrupt mode: while there is work the loop does not arm */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(loop_run_once(l, 0), 0);
	CHECK_EQ(p.polls, 3);
	CHECK_EQ(p.arms, 0);
	/* no more work: arms before waiting, disarms after */
	CHECK_EQ(loop_run_once(l, 0), 0);
	CHECK_EQ(p.arms, 1);
	CHECK_EQ(p.disarms, 1);
	loop_del_poller(l, h);
	CHECK_EQ(loop_run_once(l, 0), 0);
	CHECK_EQ(p.polls, 4);
	loop_free(l);
}

int main(void)
{
	TEST_PROGRAM("test_loop");
	RUN(test_fd_dispatch);
	RUN(test_delete_during_dispatch);
	RUN(test_timers);
	RUN(test_pollers);
	return TEST_DONE();
}
