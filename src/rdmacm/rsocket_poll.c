// SPDX-License-Identifier: BSD-3-Clause
/*
 * rpoll and rselect over rsockets and ordinary fds. An rsocket is ready
 * from its own state (data queued, credits to send, a request waiting);
 * when nothing is, its CQ is armed and poll() waits on what can change
 * that: the completion channel fd and the CM channel fd of each rsocket,
 * and the ordinary fds themselves.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "rdmacm/rsocket_priv.h"

/* The events of rs now (locked); wait_fd and cm_fd: what to wait on. */
static short rsk_revents(struct rsk *rs, short events, bool arm, int *wait_fd, int *cm_fd)
{
	short rev = 0;

	*wait_fd = -1;
	*cm_fd = rs->ch->fd;
	if (rs->state & RSK_OPENING) {
		if (rsk_connect_step(rs, true) && errno == EINPROGRESS)
			return 0;
	}
	if (rs->state & RSK_LISTENING) {
		struct pollfd p = { .fd = rs->ch->fd, .events = POLLIN };

		*cm_fd = -1;
		*wait_fd = rs->ch->fd;
		return poll(&p, 1, 0) > 0 ? (short)(events & POLLIN) : 0;
	}
	if (rs->state & RSK_CONNECT_ERR)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	if (!(rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR)))
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		rsk_cq_poll(rs);
		rev = 0;
		if ((events & POLLIN) && (rsk_has_rdata(rs) || !(rs->state & RSK_READABLE)))
			rev |= POLLIN;
		if ((events & POLLOUT) && (rs->state & RSK_WRITABLE) && rsk_can_send(rs))
			rev |= POLLOUT;
		/* a hang-up once the data that came before it is read */
		if (!(rs->state & RSK_CONNECTED) && !rsk_has_rdata(rs))
			rev |= rs->state & RSK_DISCONNECTED ? POLLHUP : POLLERR;
		if (rev || !arm || !rs->cq || rs->cq_armed)
			break;
		rsk_cq_arm(rs); /* then look once more: a completion may have come */
	}
	*wait_fd = rs->cc ? rs->cc->fd : -1;
	return rev;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

RSK_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *p = calloc(nfds * 2 + 1, sizeof(*p));
	bool *is_rs = calloc(nfds + 1, sizeof(*is_rs));
	long end = timeout > 0 ? now_ms() + timeout : 0;
	int ret = -1;

	if (!p || !is_rs) {
		errno = ENOMEM;
		goto out;
	}
	for (bool arm = false;; arm = true) {
		int ready = 0, n, wait_ms;

		for (nfds_t i = 0; i < nfds; i++) {
			struct rsk *rs = fds[i].fd >= 0 ? rsk_get(fds[i].fd) : NULL;

			p[2 * i + 1].fd = -1;
			fds[i].revents = 0;
			is_rs[i] = rs != NULL;
			if (!rs) {
				p[2 * i].fd = fds[i].fd;
				p[2 * i].events = fds[i].events;
				continue;
			}
			fds[i].revents = rsk_revents(rs, fds[i].events, arm, &p[2 * i].fd,
						     &p[2 * i + 1].fd);
			p[2 * i].events = p[2 * i + 1].events = POLLIN;
			rsk_put(rs);
			if (fds[i].revents)
				ready++;
		}
		wait_ms = ready || !arm ? 0 : timeout < 0 ? -1 : timeout == 0 ? 0 :
			  (int)(end - now_ms() > 0 ? end - now_ms() : 0);
		n = poll(p, nfds * 2, wait_ms);
		if (n < 0)
			goto out;
		for (nfds_t i = 0; i < nfds; i++) {
			if (!is_rs[i]) {
				fds[i].revents = p[2 * i].revents;
				if (fds[i].revents)
					ready++;
				continue;
			}
			if (!p[2 * i].revents && !p[2 * i + 1].revents)
				continue;
			struct rsk *rs = rsk_get(fds[i].fd);

			if (!rs)
				continue;
			if (p[2 * i].revents && !(rs->state & RSK_LISTENING))
				rsk_cq_events(rs);
			if (p[2 * i + 1].revents &&
			    (rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR)))
				rsk_cm_drain(rs);
			rsk_put(rs);
		}
		if (ready) {
			ret = ready;
			break;
		}
		if (arm && n == 0 && wait_ms == 0 && (timeout == 0 ||
						      (timeout > 0 && now_ms() >= end))) {
			ret = 0;
			break;
		}
	}
out:
	free(p);
	free(is_rs);
	return ret;
}

RSK_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		       struct timeval *timeout)
{
	struct pollfd *p;
	int n = 0, ret, tmo;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return errno = EINVAL, -1;
	p = calloc((size_t)nfds + 1, sizeof(*p));
	if (!p)
		return errno = ENOMEM, -1;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI;
		if (ev) {
			p[n].fd = fd;
			p[n].events = ev;
			n++;
		}
	}
	tmo = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
	ret = rpoll(p, (nfds_t)n, tmo);
	if (ret >= 0) {
		ret = 0;
		if (readfds)
			FD_ZERO(readfds);
		if (writefds)
			FD_ZERO(writefds);
		if (exceptfds)
			FD_ZERO(exceptfds);
		for (int i = 0; i < n; i++) {
			short r = p[i].revents;

			if (readfds && (r & (POLLIN | POLLHUP | POLLERR)) && (p[i].events & POLLIN)) {
				FD_SET(p[i].fd, readfds);
				ret++;
			}
			if (writefds && (r & (POLLOUT | POLLERR)) && (p[i].events & POLLOUT)) {
				FD_SET(p[i].fd, writefds);
				ret++;
			}
			if (exceptfds && (r & POLLPRI) && (p[i].events & POLLPRI)) {
				FD_SET(p[i].fd, exceptfds);
				ret++;
			}
		}
	}
	free(p);
	return ret;
}
