/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_PACKET uplink: a raw packet socket bound to one host interface (a NIC, a
 * veth end, a bridge port...) attached to the switch.
 *
 * - Receive: every frame the interface receives (ETH_P_ALL, promiscuous via
 *   PACKET_ADD_MEMBERSHIP), in batches with recvmmsg(). The kernel never
 *   loops a packet socket's own transmissions back to it, and frames that
 *   anything else on the host (its IP stack, tcpdump -w, another packet
 *   socket) transmits out of the interface are ignored too:
 *   PACKET_IGNORE_OUTGOING (Linux >= 4.20), and in any case frames with
 *   sll_pkttype == PACKET_OUTGOING are skipped. So, as with macvlan, the
 *   host's own stack on that interface cannot reach the devices through this
 *   uplink (its frames go to the wire, not to us); give the host a veth or a
 *   tap port for that.
 * - VLAN tags: the kernel moves a received 802.1Q/802.1ad tag out of the frame
 *   into metadata; PACKET_AUXDATA hands it back and it is re-inserted after
 *   the MAC addresses (in the headroom, no copy of the payload), so the switch
 *   sees the frame as it was on the wire.
 * - Transmit: frames from the switch are queued and sent with sendmmsg() in
 *   batches of up to AFP_BATCH, when the queue is full and otherwise once per
 *   loop iteration (a loop poller), always before the loop sleeps. A frame the
 *   kernel refuses (full socket buffer, too big for the MTU, link down) is
 *   counted in tx_dropped.
 *
 * Limits (documented, not handled):
 * - Offloads: frames are exchanged as the kernel hands them. With GRO on the
 *   interface, or with TSO/GSO on a veth whose peer is a local TCP/UDP sender,
 *   the kernel may deliver merged frames larger than the MTU; those larger
 *   than PKT_MAX_FRAME are dropped (rx_errors). Locally generated frames may
 *   also carry a not-yet-computed checksum (TP_STATUS_CSUMNOTREADY). RoCE v2
 *   frames (UDP checksum 0, below the MTU) are not affected; for other
 *   traffic turn the offloads off: `ethtool -K IF gro off gso off tso off tx off`.
 * - One socket, no fanout; TPACKET_V3 rings would save a copy and syscalls.
 * - Needs CAP_NET_RAW.
 */
#include "port/port.h"

#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"

#define AFP_BATCH 32
#define AFP_RX_BUDGET 4    /* recvmmsg batches per wakeup */
#define AFP_SOCKBUF (4 << 20)
#define AFP_VLAN_HLEN 4

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

union afp_cmsg {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
};

struct afp_port {
	struct port port;
	struct loop *loop;
	struct loop_poller *poller;
	int fd;
	int ifindex;
	bool watching;

	struct pkt *rx_pkt[AFP_BATCH];
	struct mmsghdr rx_msg[AFP_BATCH];
	struct iovec rx_iov[AFP_BATCH];
	struct sockaddr_ll rx_addr[AFP_BATCH];
	union afp_cmsg rx_cmsg[AFP_BATCH];

	struct pkt *tx_pkt[AFP_BATCH];
	unsigned ntx;
	struct mmsghdr tx_msg[AFP_BATCH];
	struct iovec tx_iov[AFP_BATCH];
};

/* ---- transmit ---- */

/* Send every queued frame. Returns the number the kernel took. */
static unsigned afp_tx_flush(struct afp_port *a)
{
	unsigned done = 0, sent = 0;

	while (done < a->ntx) {
		unsigned n = a->ntx - done;
		int r;

		for (unsigned i = 0; i < n; i++) {
			struct pkt *p = a->tx_pkt[done + i];

			a->tx_iov[i].iov_base = p->data;
			a->tx_iov[i].iov_len = p->len;
			memset(&a->tx_msg[i], 0, sizeof(a->tx_msg[i]));
			a->tx_msg[i].msg_hdr.msg_iov = &a->tx_iov[i];
			a->tx_msg[i].msg_hdr.msg_iovlen = 1;
		}
		r = sendmmsg(a->fd, a->tx_msg, n, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* errno means something only when r < 0. */
			int err = r < 0 ? errno : EAGAIN;

			/* The first frame was refused: drop it, go on with
			 * the rest (they may fit, e.g. after EMSGSIZE). */
			a->port.stats.tx_dropped++;
			if (err != EAGAIN && err != ENOBUFS)
				LOG_PEER("afpacket %s: send: %s", a->port.name, strerror(err));
			pkt_free(a->tx_pkt[done]);
			done++;
			continue;
		}
		for (int i = 0; i < r; i++)
			pkt_free(a->tx_pkt[done + (unsigned)i]);
		done += (unsigned)r;
		sent += (unsigned)r;
	}
	a->ntx = 0;
	return sent;
}

static void afp_xmit(struct port *port, struct pkt *pkt)
{
	struct afp_port *a = container_of(port, struct afp_port, port);

	a->tx_pkt[a->ntx++] = pkt;
	if (a->ntx == AFP_BATCH)
		afp_tx_flush(a);
}

static bool afp_poll(void *arg)
{
	struct afp_port *a = arg;

	return a->ntx && afp_tx_flush(a) > 0;
}

static bool afp_arm(void *arg)
{
	struct afp_port *a = arg;

	if (a->ntx)
		afp_tx_flush(a);
	return false;
}

static const struct loop_poller_ops afp_poller_ops = {
	.poll = afp_poll,
	.arm = afp_arm,
};

/* ---- receive ---- */

/* Put back the VLAN tag the kernel took out of the frame. Returns false if
 * the frame would become too big. */
static bool afp_insert_vlan(struct pkt *p, const struct tpacket_auxdata *aux)
{
	uint16_t tpid = (aux->tp_status & TP_STATUS_VLAN_TPID_VALID) && aux->tp_vlan_tpid ?
			aux->tp_vlan_tpid : ETH_P_8021Q;

	if (p->len < 2 * ETH_ALEN || p->len + AFP_VLAN_HLEN > PKT_MAX_FRAME ||
	    p->data - p->buf < AFP_VLAN_HLEN)
		return false;
	memmove(p->data - AFP_VLAN_HLEN, p->data, 2 * ETH_ALEN);
	p->data -= AFP_VLAN_HLEN;
	p->len += AFP_VLAN_HLEN;
	put_be16(p->data + 2 * ETH_ALEN, tpid);
	put_be16(p->data + 2 * ETH_ALEN + 2, aux->tp_vlan_tci);
	return true;
}

/* Check one received message and fix it up. Returns false to drop it. */
static bool afp_rx_one(struct afp_port *a, unsigned i)
{
	struct msghdr *mh = &a->rx_msg[i].msg_hdr;
	struct pkt *p = a->rx_pkt[i];
	struct cmsghdr *c;

	if (a->rx_addr[i].sll_pkttype == PACKET_OUTGOING)
		return false;
	if ((mh->msg_flags & MSG_TRUNC) || a->rx_msg[i].msg_len > PKT_MAX_FRAME) {
		a->port.stats.rx_errors++;
		LOG_PEER("afpacket %s: dropping a %u-byte frame (offloads on?)",
			 a->port.name, a->rx_msg[i].msg_len);
		return false;
	}
	p->len = a->rx_msg[i].msg_len;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		struct tpacket_auxdata aux;

		if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA ||
		    c->cmsg_len < CMSG_LEN(sizeof(aux)))
			continue;
		memcpy(&aux, CMSG_DATA(c), sizeof(aux));
		if ((aux.tp_status & TP_STATUS_VLAN_VALID) && !afp_insert_vlan(p, &aux)) {
			a->port.stats.rx_errors++;
			return false;
		}
	}
	return true;
}

/* Make sure slots 0..n-1 hold empty frames. Returns how many do. */
static unsigned afp_rx_refill(struct afp_port *a)
{
	unsigned i;

	for (i = 0; i < AFP_BATCH; i++) {
		struct pkt *p = a->rx_pkt[i];

		if (!p) {
			p = pkt_alloc();
			if (!p)
				break;
			a->rx_pkt[i] = p;
		}
		p->data = p->buf + PKT_HEADROOM;
		p->len = 0;
		a->rx_iov[i].iov_base = p->data;
		a->rx_iov[i].iov_len = PKT_MAX_FRAME;
		memset(&a->rx_msg[i], 0, sizeof(a->rx_msg[i]));
		a->rx_msg[i].msg_hdr.msg_name = &a->rx_addr[i];
		a->rx_msg[i].msg_hdr.msg_namelen = sizeof(a->rx_addr[i]);
		a->rx_msg[i].msg_hdr.msg_iov = &a->rx_iov[i];
		a->rx_msg[i].msg_hdr.msg_iovlen = 1;
		a->rx_msg[i].msg_hdr.msg_control = &a->rx_cmsg[i];
		a->rx_msg[i].msg_hdr.msg_controllen = sizeof(a->rx_cmsg[i]);
	}
	return i;
}

static void afp_rx_cb(void *arg, uint32_t events)
{
	struct afp_port *a = arg;

	for (int round = 0; round < AFP_RX_BUDGET; round++) {
		unsigned n = afp_rx_refill(a);
		int r;

		if (unlikely(!n)) {
			LOG_PEER("afpacket %s: out of frame buffers", a->port.name);
			return;
		}
		r = recvmmsg(a->fd, a->rx_msg, n, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (r <= 0) {
			int err = r < 0 ? errno : EAGAIN; /* 0: nothing, errno stale */

			if (err == EAGAIN || err == EINTR)
				return;
			a->port.stats.rx_errors++;
			LOG_PEER("afpacket %s: recv: %s", a->port.name, strerror(err));
			if (events & (EPOLLERR | EPOLLHUP)) {
				int err = 0;
				socklen_t len = sizeof(err);

				/* Reading SO_ERROR clears a pending error
				 * (e.g. ENETDOWN) so we do not spin on it. */
				getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			}
			return;
		}
		for (int i = 0; i < r; i++) {
			struct pkt *p;

			if (!afp_rx_one(a, (unsigned)i))
				continue; /* the buffer stays in its slot */
			p = a->rx_pkt[i];
			a->rx_pkt[i] = NULL;
			if (a->port.sw)
				sw_input(a->port.sw, &a->port, p);
			else
				pkt_free(p);
		}
		if ((unsigned)r < n)
			return;
	}
}

/* ---- setup ---- */

static void afp_close(struct afp_port *a)
{
	if (a->poller)
		loop_del_poller(a->loop, a->poller);
	if (a->watching)
		loop_del_fd(a->loop, a->fd);
	if (a->fd >= 0)
		close(a->fd);
	for (unsigned i = 0; i < AFP_BATCH; i++)
		pkt_free(a->rx_pkt[i]);
	free(a);
}

static void afp_destroy(struct port *port)
{
	struct afp_port *a = container_of(port, struct afp_port, port);

	/* Frames already queued still go out. */
	if (a->ntx)
		afp_tx_flush(a);
	afp_close(a);
}

static const struct port_ops afp_ops = {
	.xmit = afp_xmit,
	.destroy = afp_destroy,
};

static void afp_set_bufs(int fd)
{
	int v = AFP_SOCKBUF;

	/* FORCE needs CAP_NET_ADMIN; otherwise the sysctl maximum applies. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

struct port *afpacket_port_open(struct sw *s, struct loop *loop, const char *ifname)
{
	struct afp_port *a;
	struct sockaddr_ll sll;
	struct packet_mreq mr;
	int err, one = 1;

	if (!s || !loop || !ifname || !*ifname || strlen(ifname) >= IFNAMSIZ) {
		LOG_ERR("afpacket: invalid interface name");
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->loop = loop;
	a->ifindex = (int)if_nametoindex(ifname);
	if (!a->ifindex) {
		err = errno ? errno : ENODEV;
		LOG_ERR("afpacket %s: no such interface", ifname);
		a->fd = -1;
		goto fail;
	}
	/* Protocol 0: receive nothing until bind() below names the interface,
	 * so no frame of another interface slips in. */
	a->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		err = errno;
		LOG_ERR("afpacket %s: socket: %s%s", ifname, strerror(err),
			err == EPERM ? " (needs CAP_NET_RAW)" : "");
		goto fail;
	}
	if (setsockopt(a->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0)
		LOG_DEBUG("afpacket %s: no PACKET_IGNORE_OUTGOING, filtering by type", ifname);
	if (setsockopt(a->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0) {
		err = errno;
		LOG_ERR("afpacket %s: PACKET_AUXDATA: %s", ifname, strerror(err));
		goto fail;
	}
	afp_set_bufs(a->fd);
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = a->ifindex;
	if (bind(a->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		err = errno;
		LOG_ERR("afpacket %s: bind: %s", ifname, strerror(err));
		goto fail;
	}
	memset(&mr, 0, sizeof(mr));
	mr.mr_ifindex = a->ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(a->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		err = errno;
		LOG_ERR("afpacket %s: promiscuous mode: %s", ifname, strerror(err));
		goto fail;
	}
	a->port.ops = &afp_ops;
	a->port.uplink = true;
	a->port.hairpin = false;
	a->port.priv = a;
	snprintf(a->port.name, sizeof(a->port.name), "%s", ifname);
	a->poller = loop_add_poller(loop, &afp_poller_ops, a);
	if (!a->poller) {
		err = ENOMEM;
		goto fail;
	}
	err = -loop_add_fd(loop, a->fd, EPOLLIN, afp_rx_cb, a);
	if (err) {
		LOG_ERR("afpacket %s: loop_add_fd: %s", ifname, strerror(err));
		goto fail;
	}
	a->watching = true;
	err = -sw_attach(s, &a->port);
	if (err) {
		LOG_ERR("afpacket %s: cannot attach to the switch: %s", ifname, strerror(err));
		goto fail;
	}
	LOG_INFO("afpacket %s: attached as port %u", a->port.name, a->port.id);
	return &a->port;

fail:
	afp_close(a);
	errno = err;
	return NULL;
}
