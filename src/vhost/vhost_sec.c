/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks of the vhost-user server on what a front-end hands over: who
 * connected (SO_PEERCRED, logged so an operator can tell tenants apart) and
 * whether a kick fd can be drained (no semaphore-mode eventfd).
 */
#include "vhost/vhost_server.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

void vhost_peer_log(const char *name, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr)) {
		LOG_INFO("%s: front-end connected (credentials unknown)", name);
		return;
	}
	LOG_INFO("%s: front-end connected: pid %d uid %u gid %u", name, (int)cr.pid,
		 (unsigned)cr.uid, (unsigned)cr.gid);
}

int vhost_kick_fd_check(int fd)
{
	uint64_t v = 2;

	/* A semaphore-mode eventfd gives 1 per read and stays readable: its
	 * level-triggered watch would fire forever. Add 2 and read: a normal
	 * eventfd returns everything (>= 2), a semaphore one returns 1. */
	if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -EINVAL; /* counter at its maximum: unusable as well */
	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -EINVAL;
	if (v == 1)
		return -EINVAL;
	/* kicks that were pending stay pending (one is enough) */
	if (v > 2) {
		v = 1;
		if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			return -EINVAL;
	}
	return 0;
}

static unsigned vs_fd_budget, vs_fd_held; /* atomics: devices may run on several loops */

void vhost_fd_budget_set(unsigned max)
{
	__atomic_store_n(&vs_fd_budget, max, __ATOMIC_RELAXED);
}

bool vhost_fd_budget_used_up(void)
{
	unsigned max = __atomic_load_n(&vs_fd_budget, __ATOMIC_RELAXED);

	return max && __atomic_load_n(&vs_fd_held, __ATOMIC_RELAXED) >= max;
}

void vhost_fd_budget_take(void)
{
	__atomic_add_fetch(&vs_fd_held, 1, __ATOMIC_RELAXED);
}

void vhost_fd_budget_put(void)
{
	__atomic_sub_fetch(&vs_fd_held, 1, __ATOMIC_RELAXED);
}

unsigned vhost_fd_budget_held(void)
{
	return __atomic_load_n(&vs_fd_held, __ATOMIC_RELAXED);
}
