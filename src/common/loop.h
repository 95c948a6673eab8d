/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event loop: epoll for file descriptors, a timer heap, and pollers for
 * adaptive busy-polling.
 *
 * One loop runs on one thread and everything attached to it runs on that
 * thread, so the objects it drives need no locks.
 *
 * Busy-polling: every iteration calls each poller's poll(). While some poller
 * reports work, the loop keeps spinning with a zero epoll timeout. Once no
 * poller has had work for poll_us microseconds, the loop calls each poller's
 * arm() (which re-enables notifications, e.g. clears VRING_USED_F_NO_NOTIFY,
 * and re-checks for work that raced in) and then sleeps in epoll_wait until an
 * fd or timer fires; after waking it calls disarm() so pollers may suppress
 * notifications again. With poll_us == 0 the loop never spins: it arms,
 * sleeps, and processes what woke it (pure interrupt mode).
 */
#ifndef VRDMA_COMMON_LOOP_H
#define VRDMA_COMMON_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;

/* Called when fd becomes ready; events is the EPOLL* mask. */
typedef void (*loop_fd_cb)(void *arg, uint32_t events);

struct loop_poller_ops {
	/* Do pending work; return true if anything was done. */
	bool (*poll)(void *arg);
	/* About to sleep: enable notifications. Return true if work is already
	 * pending (then the loop does not sleep). May be NULL. */
	bool (*arm)(void *arg);
	/* Woke up: notifications may be suppressed again. May be NULL. */
	void (*disarm)(void *arg);
};

struct loop_timer;
typedef void (*loop_timer_cb)(struct loop_timer *t, void *arg);

/* Embed in the owner; initialise with loop_timer_init(). */
struct loop_timer {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	loop_timer_cb cb;
	void *arg;
	int heap_idx; /* -1 when not armed */
};

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Monotonic time in nanoseconds. */
uint64_t loop_now_ns(void);

/* Watch fd for events (EPOLLIN etc.). Returns 0 or -errno. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
/* Stop watching fd (does not close it). Safe to call from inside a callback,
 * including for the fd being dispatched and for fds later in the same batch. */
int loop_del_fd(struct loop *l, int fd);

/* Pollers are called in registration order. Returns a handle or NULL. */
struct loop_poller *loop_add_poller(struct loop *l, const struct loop_poller_ops *ops, void *arg);
/* Safe to call from inside a poller or callback. */
void loop_del_poller(struct loop *l, struct loop_poller *p);

void loop_timer_init(struct loop_timer *t, loop_timer_cb cb, void *arg);
/* (Re)arm t to fire once at deadline_ns. */
void loop_timer_arm(struct loop *l, struct loop_timer *t, uint64_t deadline_ns);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t) { return t->heap_idx >= 0; }

/* Number of the current iteration (each loop_run_once counts one): lets
 * pollers share a budget per pass. */
uint64_t loop_pass(const struct loop *l);
/* loop_now_ns() as read at the start of the current pass (or after its
 * wait, for fd callbacks): for time rules coarser than a pass, without a
 * clock read each. */
uint64_t loop_pass_ns(const struct loop *l);

/* Busy-poll budget in microseconds (0 = pure interrupt mode). */
void loop_set_poll_us(struct loop *l, unsigned poll_us);

/* Run one iteration: poll, maybe sleep up to max_wait_ns (-1 = until an event),
 * dispatch fds and expired timers. Returns 0 or -errno. */
int loop_run_once(struct loop *l, int64_t max_wait_ns);
/* Run until loop_stop(). Returns 0 or -errno. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
bool loop_stopped(const struct loop *l);

#endif /* VRDMA_COMMON_LOOP_H */
