/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP uplink: a /dev/net/tun queue in IFF_TAP | IFF_NO_PI mode attached to the
 * switch. Frames the kernel sends to the tap interface enter the switch;
 * frames the switch sends to this port are written to the kernel.
 *
 * ifname may name an existing persistent tap (created with `ip tuntap add
 * mode tap NAME`, owned by us; it must not have been created with vnet_hdr or
 * multi_queue) or a new name, in which case the kernel creates a tap that
 * lives as long as this port. A pattern such as "vrdma%d" lets the kernel pick
 * the number; port->name is the final name. Bringing the interface up and
 * giving it addresses, MTU and routes is the administrator's job (`ip link set
 * NAME up`): until then the kernel neither sends to it nor accepts writes
 * (those are counted as tx_dropped).
 *
 * The fd is non-blocking and level-triggered: each wakeup reads at most
 * TAP_RX_BUDGET frames, so one busy tap cannot starve the loop. A frame
 * larger than PKT_MAX_FRAME (interface MTU above 9202) is dropped and counted
 * in rx_errors. There is one
 * syscall per frame in each direction (tun has no batch interface).
 */
#include "port/port.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"

#define TAP_RX_BUDGET 64

struct tap_port {
	struct port port;
	struct loop *loop;
	int fd;
	bool watching;
	struct pkt *spare;   /* a frame buffer kept across wakeups */
	uint8_t overflow[8]; /* catches the bytes of a frame that does not fit */
};

static void tap_stop_watching(struct tap_port *t)
{
	if (t->watching) {
		loop_del_fd(t->loop, t->fd);
		t->watching = false;
	}
}

static void tap_rx_cb(void *arg, uint32_t events)
{
	struct tap_port *t = arg;

	for (int i = 0; i < TAP_RX_BUDGET; i++) {
		struct pkt *p = t->spare;
		ssize_t n;

		if (!p) {
			p = pkt_alloc();
			if (unlikely(!p)) {
				/* Leave the frames queued in the kernel (it drops
				 * when its queue is full); retry on the next
				 * wakeup. */
				LOG_PEER("tap %s: out of frame buffers", t->port.name);
				return;
			}
		}
		t->spare = NULL;
		/* One byte more than a frame buffer: tun silently cuts a frame
		 * to the room given (and some kernels report the cut length,
		 * others the whole one), so only a read that spills over
		 * shows the frame did not fit. */
		{
			struct iovec iov[2] = {
				{ .iov_base = p->data, .iov_len = PKT_MAX_FRAME },
				{ .iov_base = t->overflow, .iov_len = sizeof(t->overflow) },
			};

			n = readv(t->fd, iov, 2);
		}
		if (n < 0) {
			int err = errno;

			t->spare = p;
			if (err == EAGAIN || err == EINTR)
				return;
			t->port.stats.rx_errors++;
			LOG_PEER("tap %s: read: %s", t->port.name, strerror(err));
			if (err == EBADFD || err == EIO || (events & (EPOLLERR | EPOLLHUP))) {
				/* The interface went away: stop listening
				 * instead of spinning on a dead fd. */
				LOG_ERR("tap %s: stopped receiving", t->port.name);
				tap_stop_watching(t);
			}
			return;
		}
		if (unlikely((size_t)n > PKT_MAX_FRAME)) {
			/* Truncated: dropped. */
			t->spare = p;
			t->port.stats.rx_errors++;
			LOG_PEER("tap %s: dropping a %zd-byte frame (more than %u)",
				 t->port.name, n, (unsigned)PKT_MAX_FRAME);
			continue;
		}
		p->len = (uint32_t)n;
		if (t->port.sw)
			sw_input(t->port.sw, &t->port, p);
		else
			pkt_free(p);
	}
}

static void tap_xmit(struct port *port, struct pkt *pkt)
{
	struct tap_port *t = container_of(port, struct tap_port, port);
	ssize_t n;

	do {
		n = write(t->fd, pkt->data, pkt->len);
	} while (n < 0 && errno == EINTR);
	if (unlikely(n != (ssize_t)pkt->len)) {
		port->stats.tx_dropped++;
		if (n < 0 && errno != EAGAIN)
			LOG_PEER("tap %s: write: %s", port->name, strerror(errno));
	}
	pkt_free(pkt);
}

static void tap_destroy(struct port *port)
{
	struct tap_port *t = container_of(port, struct tap_port, port);

	tap_stop_watching(t);
	if (t->fd >= 0)
		close(t->fd);
	pkt_free(t->spare);
	free(t);
}

static const struct port_ops tap_ops = {
	.xmit = tap_xmit,
	.destroy = tap_destroy,
};

struct port *tap_port_open(struct sw *s, struct loop *loop, const char *ifname)
{
	struct tap_port *t;
	struct ifreq ifr;
	int err;

	if (!s || !loop || !ifname || !*ifname || strlen(ifname) >= IFNAMSIZ) {
		LOG_ERR("tap: invalid interface name");
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->loop = loop;
	t->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0) {
		err = errno;
		LOG_ERR("tap %s: open /dev/net/tun: %s", ifname, strerror(err));
		goto fail;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0) {
		err = errno;
		LOG_ERR("tap %s: TUNSETIFF: %s%s", ifname, strerror(err),
			err == EINVAL ? " (an existing device with other flags?)" :
			err == EPERM ? " (needs CAP_NET_ADMIN or ownership)" : "");
		goto fail;
	}
	ifr.ifr_name[IFNAMSIZ - 1] = '\0';
	t->port.ops = &tap_ops;
	t->port.uplink = true;
	t->port.hairpin = false;
	t->port.priv = t;
	snprintf(t->port.name, sizeof(t->port.name), "%s", ifr.ifr_name);
	err = -loop_add_fd(loop, t->fd, EPOLLIN, tap_rx_cb, t);
	if (err) {
		LOG_ERR("tap %s: loop_add_fd: %s", ifname, strerror(err));
		goto fail;
	}
	t->watching = true;
	err = -sw_attach(s, &t->port);
	if (err) {
		LOG_ERR("tap %s: cannot attach to the switch: %s", ifname, strerror(err));
		goto fail;
	}
	LOG_INFO("tap %s: attached as port %u", t->port.name, t->port.id);
	return &t->port;

fail:
	tap_stop_watching(t);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
	errno = err;
	return NULL;
}
