/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP uplink: an XDP socket (libxdp) on queue 0 of one host interface,
 * attached to the switch. Same port behaviour as the AF_PACKET uplink.
 *
 * - libxdp loads its default redirect program on the interface (the kernel
 *   picks native mode when the driver has it, else generic "SKB" mode, so
 *   any interface works without driver support; generic mode explicitly if
 *   that is refused) and the socket binds in copy mode.
 * - One UMEM of AXP_NFRAMES chunks of AXP_CHUNK bytes: half are kept in the
 *   fill ring for receive, the rest are free for transmit. A received frame
 *   is copied into a pkt and its chunk goes straight back to the fill ring.
 * - Transmit: a frame is copied into a free chunk and put on the TX ring; the
 *   ring is kicked with sendto() once per loop iteration (a loop poller) and
 *   every 32 frames. Completed chunks come back from the completion ring. A
 *   frame larger than the interface MTU (+ Ethernet header, + 4 bytes for a
 *   VLAN tag), or with no chunk or ring slot left, is counted in tx_dropped.
 * - Receive frames larger than a chunk are dropped by the kernel; frames
 *   shorter than an Ethernet header or over the chunk are counted rx_errors.
 *
 * Limits: only queue 0 (use one queue, `ethtool -L IF combined 1`, on a
 * multi-queue NIC); no jumbo frames (a frame fits one chunk); a VLAN tag the
 * kernel moved into metadata (VLAN receive offload) is not put back, unlike
 * AF_PACKET (turn the offload off: `ethtool -K IF rxvlan off`); the XDP program
 * stays on the interface when the daemon cannot remove it at exit (no
 * CAP_NET_ADMIN left after --user) and the next start on that interface is
 * refused until `ip link set dev IF xdp off` removes it. Needs CAP_NET_ADMIN
 * and CAP_BPF (or root) to open.
 *
 * "IF,mode=generic" or "IF,mode=native" forces that attach mode (no
 * fallback): bench/uplink.sh compares the modes on one interface.
 */
#include "port/port.h"

#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdarg.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"

#define AXP_NFRAMES 4096
#define AXP_CHUNK XSK_UMEM__DEFAULT_FRAME_SIZE
#define AXP_RING 2048          /* each of fill, completion, rx, tx */
#define AXP_RX_BUDGET 64
#define AXP_VLAN_HLEN 4
#define AXP_BUSY_RETRIES 200    /* binds while a closed socket is released */
#define AXP_BUSY_WAIT_US 10000

struct axp_port {
	struct port port;
	struct loop *loop;
	struct loop_poller *poller;
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	int fd;
	int ifindex;
	unsigned mtu;
	bool watching;
	unsigned tx_pending;        /* descriptors put on the TX ring, not yet kicked */
	unsigned nfree;
	uint64_t free_addr[AXP_NFRAMES];
};

/* ---- chunks ---- */

static void axp_reap(struct axp_port *a)
{
	uint32_t idx, n = xsk_ring_cons__peek(&a->comp, AXP_RING, &idx);

	for (uint32_t i = 0; i < n; i++)
		a->free_addr[a->nfree++] = *xsk_ring_cons__comp_addr(&a->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&a->comp, n);
}

static unsigned axp_if_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned mtu = 1500;

	if (fd < 0)
		return mtu;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		mtu = (unsigned)ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* ---- transmit ---- */

/* Kick the kernel until it took every queued descriptor (copy mode sends a
 * bounded batch per call). */
static bool axp_kick(struct axp_port *a)
{
	unsigned nfree = a->nfree;

	for (int tries = 0; a->tx_pending && tries < 64; tries++) {
		if (sendto(a->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
		    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
			LOG_PEER("afxdp %s: send: %s", a->port.name, strerror(errno));
			break;
		}
		/* The kernel consumed what it could; completions say which. */
		axp_reap(a);
		if (xsk_prod_nb_free(&a->tx, AXP_RING) == AXP_RING)
			a->tx_pending = 0;
	}
	axp_reap(a);
	return a->nfree != nfree; /* progress: chunks came back */
}

static void axp_xmit(struct port *port, struct pkt *pkt)
{
	struct axp_port *a = container_of(port, struct axp_port, port);
	unsigned extra = ETH_HLEN;
	uint32_t idx;

	if (pkt->len >= ETH_HLEN && get_be16(pkt->data + 12) == ETH_P_8021Q)
		extra += AXP_VLAN_HLEN;
	/* The MTU may have been raised since we looked. */
	if (unlikely(pkt->len > a->mtu + extra))
		a->mtu = axp_if_mtu(a->port.name);
	if (unlikely(pkt->len > a->mtu + extra || pkt->len > AXP_CHUNK)) {
		a->port.stats.tx_dropped++;
		pkt_free(pkt);
		return;
	}
	if (!a->nfree)
		axp_reap(a);
	if (!a->nfree || xsk_ring_prod__reserve(&a->tx, 1, &idx) != 1) {
		axp_kick(a);
		if (!a->nfree || xsk_ring_prod__reserve(&a->tx, 1, &idx) != 1) {
			a->port.stats.tx_dropped++;
			pkt_free(pkt);
			return;
		}
	}
	{
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&a->tx, idx);

		d->addr = a->free_addr[--a->nfree];
		d->len = pkt->len;
		d->options = 0;
		memcpy(xsk_umem__get_data(a->area, d->addr), pkt->data, pkt->len);
	}
	xsk_ring_prod__submit(&a->tx, 1);
	pkt_free(pkt);
	if (++a->tx_pending >= 32)
		axp_kick(a);
}

static bool axp_poll(void *arg)
{
	struct axp_port *a = arg;

	return a->tx_pending && axp_kick(a);
}

static bool axp_arm(void *arg)
{
	struct axp_port *a = arg;

	if (a->tx_pending)
		axp_kick(a);
	return false;
}

static const struct loop_poller_ops axp_poller_ops = {
	.poll = axp_poll,
	.arm = axp_arm,
};

/* ---- receive ---- */

static void axp_rx_cb(void *arg, uint32_t events)
{
	struct axp_port *a = arg;
	uint32_t idx, fidx, n;

	if (unlikely(events & (EPOLLERR | EPOLLHUP))) {
		int err = 0;
		socklen_t len = sizeof(err);

		/* Reading SO_ERROR clears it (e.g. ENETDOWN: the interface
		 * went away), so the loop does not spin on it. */
		getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		a->port.stats.rx_errors++;
		LOG_PEER("afxdp %s: socket error: %s", a->port.name, strerror(err));
	}
	n = xsk_ring_cons__peek(&a->rx, AXP_RX_BUDGET, &idx);
	if (!n)
		return;
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&a->rx, idx + i);
		struct pkt *p;

		if (unlikely(d->len < ETH_HLEN || d->len > PKT_MAX_FRAME)) {
			a->port.stats.rx_errors++;
			continue;
		}
		p = pkt_alloc();
		if (unlikely(!p)) {
			LOG_PEER("afxdp %s: out of frame buffers", a->port.name);
			continue;
		}
		memcpy(p->data, xsk_umem__get_data(a->area, d->addr), d->len);
		p->len = d->len;
		if (a->port.sw)
			sw_input(a->port.sw, &a->port, p);
		else
			pkt_free(p);
	}
	/* The chunks go back to the fill ring (it has room: as many slots as
	 * chunks in flight on the receive side). */
	if (xsk_ring_prod__reserve(&a->fill, n, &fidx) == n) {
		for (uint32_t i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&a->fill, fidx + i) =
				xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&a->rx, idx + i)->addr);
		xsk_ring_prod__submit(&a->fill, n);
	} else {
		for (uint32_t i = 0; i < n; i++)
			a->free_addr[a->nfree++] =
				xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&a->rx, idx + i)->addr);
	}
	xsk_ring_cons__release(&a->rx, n);
	/* More than a budget waiting: epoll is level-triggered, we come back. */
}

/* ---- setup ---- */

/* libxdp and libbpf report through our log (debug level: their warnings
 * about optional features are not errors of ours; ours say what failed). */
static void axp_log(const char *fmt, va_list ap)
{
	char buf[256];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	LOG_DEBUG("afxdp: %s", buf);
}

static int axp_libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	axp_log(fmt, ap);
	return 0;
}

static int axp_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	axp_log(fmt, ap);
	return 0;
}

static void axp_close(struct axp_port *a)
{
	if (a->poller)
		loop_del_poller(a->loop, a->poller);
	if (a->watching)
		loop_del_fd(a->loop, a->fd);
	if (a->xsk)
		xsk_socket__delete(a->xsk);
	if (a->umem)
		xsk_umem__delete(a->umem);
	if (a->area)
		munmap(a->area, (size_t)AXP_NFRAMES * AXP_CHUNK);
	free(a);
}

static void axp_destroy(struct port *port)
{
	struct axp_port *a = container_of(port, struct axp_port, port);

	if (a->tx_pending)
		axp_kick(a);
	axp_close(a);
}

static const struct port_ops axp_ops = {
	.xmit = axp_xmit,
	.destroy = axp_destroy,
};

static const char *axp_hint(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return " (needs CAP_NET_ADMIN and CAP_BPF, or root; or use --uplink af_packet:IF)";
	case EOPNOTSUPP:
	case EINVAL:
	case EAFNOSUPPORT:
		return " (no AF_XDP/XDP support for this interface or kernel; use --uplink af_packet:IF)";
	case EBUSY:
	case EEXIST:
		return " (an XDP program or socket holds the interface: one left by an earlier run"
		       " goes with `ip link set dev IF xdp off`; or use --uplink af_packet:IF)";
	default:
		return " (use --uplink af_packet:IF instead)";
	}
}

struct port *afxdp_port_open(struct sw *s, struct loop *loop, const char *spec)
{
	struct xsk_umem_config ucfg = {
		.fill_size = AXP_RING,
		.comp_size = AXP_RING,
		.frame_size = AXP_CHUNK,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = AXP_RING,
		.tx_size = AXP_RING,
		.xdp_flags = 0,
		.bind_flags = XDP_COPY,
	};
	struct axp_port *a;
	char ifname[IFNAMSIZ];
	const char *comma, *mode = NULL;
	bool native, generic;
	uint32_t idx;
	int err;

	/* SPEC = IF[,mode=generic|native] */
	comma = spec ? strchr(spec, ',') : NULL;
	if (!s || !loop || !spec || !*spec || spec == comma ||
	    (size_t)(comma ? comma - spec : (ptrdiff_t)strlen(spec)) >= IFNAMSIZ) {
		LOG_ERR("afxdp: invalid interface name");
		errno = EINVAL;
		return NULL;
	}
	snprintf(ifname, sizeof(ifname), "%.*s", (int)(comma ? comma - spec : IFNAMSIZ), spec);
	if (comma) {
		if (strcmp(comma, ",mode=generic") && strcmp(comma, ",mode=native")) {
			LOG_ERR("afxdp %s: '%s': expected mode=generic or mode=native", ifname, comma + 1);
			errno = EINVAL;
			return NULL;
		}
		mode = comma + 6;
	}
	libxdp_set_print(axp_libxdp_print);
	libbpf_set_print(axp_libbpf_print);
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->loop = loop;
	a->fd = -1;
	a->ifindex = (int)if_nametoindex(ifname);
	if (!a->ifindex) {
		err = ENODEV;
		LOG_ERR("afxdp %s: no such interface", ifname);
		goto fail;
	}
	a->mtu = axp_if_mtu(ifname);
	a->area = mmap(NULL, (size_t)AXP_NFRAMES * AXP_CHUNK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->area == MAP_FAILED) {
		a->area = NULL;
		err = errno;
		LOG_ERR("afxdp %s: UMEM: %s", ifname, strerror(err));
		goto fail;
	}
	/* No mode flag first: the kernel attaches in native mode when the
	 * driver has it, else in generic (SKB) mode; should that be refused,
	 * generic mode explicitly. Each attempt gets a UMEM of its own. EBUSY
	 * is retried a while in either mode: the kernel releases a closed XDP
	 * socket of the interface (an earlier run's, or our failed attempt's)
	 * asynchronously, and a bind meanwhile is refused. */
	native = mode && !strcmp(mode, "native");
	generic = mode && !strcmp(mode, "generic");
	for (int busy = 0;;) {
		scfg.xdp_flags = native ? XDP_FLAGS_DRV_MODE : generic ? XDP_FLAGS_SKB_MODE : 0;
		err = -xsk_umem__create(&a->umem, a->area, (uint64_t)AXP_NFRAMES * AXP_CHUNK,
					&a->fill, &a->comp, &ucfg);
		if (err) {
			a->umem = NULL;
			LOG_ERR("afxdp %s: UMEM registration: %s%s", ifname, strerror(err),
				axp_hint(err));
			goto fail;
		}
		err = -xsk_socket__create(&a->xsk, ifname, 0, a->umem, &a->rx, &a->tx, &scfg);
		if (!err)
			break;
		a->xsk = NULL;
		xsk_umem__delete(a->umem);
		a->umem = NULL;
		LOG_DEBUG("afxdp %s: %s XDP: %s", ifname,
			  native ? "native" : generic ? "generic" : "default", strerror(err));
		if (err == EBUSY && busy++ < AXP_BUSY_RETRIES) {
			usleep(AXP_BUSY_WAIT_US);
			continue;
		}
		if (native || generic || err == EBUSY || err == EPERM || err == EACCES ||
		    err == ENODEV)
			break; /* retrying would not change it */
		generic = true;
	}
	if (err) {
		LOG_ERR("afxdp %s: XDP socket: %s%s", ifname, strerror(err), axp_hint(err));
		goto fail;
	}
	a->fd = xsk_socket__fd(a->xsk);
	/* Half of the chunks to the fill ring, the rest free for transmit. */
	if (xsk_ring_prod__reserve(&a->fill, AXP_NFRAMES / 2, &idx) != AXP_NFRAMES / 2) {
		err = ENOMEM;
		LOG_ERR("afxdp %s: fill ring too small", ifname);
		goto fail;
	}
	for (unsigned i = 0; i < AXP_NFRAMES / 2; i++)
		*xsk_ring_prod__fill_addr(&a->fill, idx + i) = (uint64_t)i * AXP_CHUNK;
	xsk_ring_prod__submit(&a->fill, AXP_NFRAMES / 2);
	for (unsigned i = AXP_NFRAMES / 2; i < AXP_NFRAMES; i++)
		a->free_addr[a->nfree++] = (uint64_t)i * AXP_CHUNK;

	a->port.ops = &axp_ops;
	a->port.uplink = true;
	a->port.hairpin = false;
	a->port.priv = a;
	snprintf(a->port.name, sizeof(a->port.name), "%s", ifname);
	a->poller = loop_add_poller(loop, &axp_poller_ops, a);
	if (!a->poller) {
		err = ENOMEM;
		goto fail;
	}
	err = -loop_add_fd(loop, a->fd, EPOLLIN, axp_rx_cb, a);
	if (err) {
		LOG_ERR("afxdp %s: loop_add_fd: %s", ifname, strerror(err));
		goto fail;
	}
	a->watching = true;
	err = -sw_attach(s, &a->port);
	if (err) {
		LOG_ERR("afxdp %s: cannot attach to the switch: %s", ifname, strerror(err));
		goto fail;
	}
	LOG_INFO("afxdp %s: attached as port %u (%s XDP, copy mode)", a->port.name, a->port.id,
		 scfg.xdp_flags == XDP_FLAGS_SKB_MODE ? "generic" : "native");
	return &a->port;

fail:
	axp_close(a);
	errno = err;
	return NULL;
}
