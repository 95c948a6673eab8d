/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One context of the virtio-net device (one vhost-user connection):
 * vhost-user callbacks, the Ethernet rx/tx queues, the control queue. RDMA
 * queues and control class 6 are handed to the context's RoCE device. The
 * switch port and the socket belong to the device (netdev_port.c).
 *
 * Data path, transmit: driver kicks (or we poll) -> netdev_process_tx pops a
 * chain, strips the virtio_net_hdr, copies the frame into a pkt and gives it
 * to the switch. Receive: the switch calls netdev_port_xmit, which queues the
 * frame; netdev_deliver_rx copies queued frames into the driver's receive
 * buffers (several with VIRTIO_NET_F_MRG_RXBUF).
 */
#include "backend/netdev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "backend/netdev_priv.h"
#include "roce/roce_pkt.h"
#include "backend/netdev_sec.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"

#define NETDEV_TX_BATCH 64
#define NETDEV_TX_PARK_POLLS 128 /* empty polls before an idle tx ring is parked */
#define NETDEV_RX_BATCH 64
#define NETDEV_RXQ_MAX 1024          /* frames waiting for rx buffers */
#define NETDEV_RXQ_HIGH 768          /* ... busy to senders of this process */
#define NETDEV_RXQ_LOW 256           /* ... until back down to this */
/* Largest control command: REG_USER_MR of max_mr_size (4 GiB) = 32 bytes +
 * 8 per 4 KiB page. Larger ones are refused without being read. */
#define NETDEV_CTRL_MAX_DATA ((8u << 20) + 64)
/* Largest ack data any command returns (QUERY_DEVICE is 128 bytes). */
#define NETDEV_CTRL_MAX_ACK 4096
#define NETDEV_CTRL_BATCH 16     /* commands per call: one driver cannot starve others */
/* Command data copied per call (past the first command): 16 commands of
 * 8 MiB would hold the loop for every other device. */
#define NETDEV_CTRL_PASS_BYTES (1u << 20)

static uint64_t netdev_offered_features(const struct netdev_cfg *cfg)
{
	uint64_t f = (1ull << VIRTIO_F_VERSION_1) |
		     (1ull << VIRTIO_NET_F_MAC) |
		     (1ull << VIRTIO_NET_F_MTU) |
		     (1ull << VIRTIO_NET_F_STATUS) |
		     (1ull << VIRTIO_NET_F_CTRL_VQ) |
		     (1ull << VIRTIO_NET_F_CTRL_RX) |
		     (1ull << VIRTIO_NET_F_CTRL_MAC_ADDR) |
		     (1ull << VIRTIO_NET_F_MRG_RXBUF) |
		     (1ull << VIRTIO_RING_F_EVENT_IDX) |
		     (1ull << VIRTIO_RING_F_INDIRECT_DESC);

	if (cfg->roce)
		f |= 1ull << VIRTIO_NET_F_ROCE;
	if (cfg->roce && cfg->roce_ext)
		f |= 1ull << VIRTIO_NET_F_ROCE_EXT;
	return f;
}

static inline bool has_feature(const struct netdev *nd, unsigned bit)
{
	return nd->features & (1ull << bit);
}

/* ---- configuration space ---- */

static void netdev_build_config(const struct netdev *nd, struct virtio_net_roce_ext_config *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->mac, nd->mac, 6);
	c->status = htole16(nd->link_down ? 0 : VIRTIO_NET_S_LINK_UP);
	c->max_virtqueue_pairs = htole16(1);
	c->mtu = htole16(nd->cfg.mtu);
	c->speed = htole32(100000);   /* Mbit/s: nominal */
	c->duplex = 1;                /* full */
	if (nd->cfg.roce) {
		c->max_rdma_qps = htole32(nd->cfg.max_qps);
		c->max_rdma_cqs = htole32(nd->cfg.max_cqs);
	}
	if (nd->cfg.roce && nd->cfg.roce_ext)
		c->max_rdma_srqs = htole32(netdev_roce_max_srqs(nd));
}

static int netdev_get_config(void *ctx, uint32_t offset, void *buf, uint32_t len)
{
	struct netdev *nd = ctx;
	struct virtio_net_roce_ext_config c;
	uint32_t size = offsetof(struct virtio_net_roce_ext_config, max_rdma_qps);

	/* 32 bytes with ROCE, 40 when ROCE_EXT is offered too */
	if (nd->cfg.roce)
		size = nd->cfg.roce_ext ? sizeof(c)
					: offsetof(struct virtio_net_roce_ext_config, max_rdma_srqs);

	if (offset > size || len > size - offset)
		return -EINVAL;
	netdev_build_config(nd, &c);
	memcpy(buf, (uint8_t *)&c + offset, len);
	return 0;
}

static int netdev_set_config(void *ctx, uint32_t offset, const void *buf, uint32_t len)
{
	struct netdev *nd = ctx;

	/* With VERSION_1 the config space is read-only for virtio-net; the MAC
	 * changes through VIRTIO_NET_CTRL_MAC_ADDR_SET. Legacy drivers write the
	 * MAC here: accept exactly that. */
	if (offset == 0 && len == 6 && !has_feature(nd, VIRTIO_F_VERSION_1))
		return netdev_sec_set_mac(nd, buf, false) ? -EPERM : 0;
	return -EPERM;
}

static int netdev_set_features(void *ctx, uint64_t features)
{
	struct netdev *nd = ctx;
	uint64_t offered = netdev_offered_features(&nd->cfg);

	/* The server strips VHOST_USER_F_PROTOCOL_FEATURES before calling us. */
	features &= ~(1ull << 30);
	if (features & ~offered) {
		LOG_PEER_RL(&nd->log_rl, "%s: driver acked features not offered: 0x%" PRIx64,
			 nd->cfg.socket, features & ~offered);
		return -EINVAL;
	}
	if ((features & (1ull << VIRTIO_NET_F_ROCE)) &&
	    !(features & (1ull << VIRTIO_NET_F_CTRL_VQ))) {
		LOG_PEER_RL(&nd->log_rl, "%s: VIRTIO_NET_F_ROCE requires VIRTIO_NET_F_CTRL_VQ", nd->cfg.socket);
		return -EINVAL;
	}
	if ((features & (1ull << VIRTIO_NET_F_ROCE_EXT)) &&
	    !(features & (1ull << VIRTIO_NET_F_ROCE))) {
		LOG_PEER_RL(&nd->log_rl, "%s: VIRTIO_NET_F_ROCE_EXT requires VIRTIO_NET_F_ROCE", nd->cfg.socket);
		return -EINVAL;
	}
	if (features != nd->features && (nd->rxr || nd->txr || nd->ctrlr || nd->rdma_rings_started)) {
		LOG_PEER_RL(&nd->log_rl, "%s: feature change while rings run refused", nd->cfg.socket);
		return -EBUSY;
	}
	nd->features = features;
	netdev_roce_set_features(nd);
	nd->hdr_len = (has_feature(nd, VIRTIO_F_VERSION_1) || has_feature(nd, VIRTIO_NET_F_MRG_RXBUF))
		      ? sizeof(struct virtio_net_hdr_v1) : sizeof(struct virtio_net_hdr);
	return 0;
}

/* ---- rings ---- */

static void netdev_rx_room(struct netdev *nd);

static void netdev_ring_broken(struct netdev *nd, struct vhost_vring *r)
{
	unsigned bit = 1u << (r->idx < 3 ? r->idx : 3);

	if (nd->broken_reported & bit)
		return;
	nd->broken_reported |= bit;
	nd->stats.ring_errors++;
	LOG_PEER_RL(&nd->log_rl, "%s: ring %u broken by the driver (%s): device needs reset",
		 nd->cfg.socket, r->idx, r->vq.error ? r->vq.error : "?");
	vhost_vring_report_error(r);
	if (r == nd->rxr)
		netdev_rx_room(nd);
}

/* Entries the driver published on r. Reading a corrupt avail index breaks
 * the ring wherever it happens (also when arming): report it here. */
static uint16_t netdev_ring_avail(struct netdev *nd, struct vhost_vring *r)
{
	uint16_t n = vq_dev_avail(&r->vq);

	if (r->vq.broken)
		netdev_ring_broken(nd, r);
	return n;
}

/* Transmit: driver -> switch. Returns true if anything was done. */
static bool netdev_process_tx(struct netdev *nd)
{
	struct vhost_vring *r = nd->txr;
	struct vq_elem *e = &nd->elem;
	unsigned n = 0;

	if (!r || r->vq.broken)
		return false;
	while (n < NETDEV_TX_BATCH) {
		int rc = vq_dev_pop(&r->vq, e);
		uint32_t len;
		struct pkt *p;

		if (rc == 0)
			break;
		if (rc < 0) {
			netdev_ring_broken(nd, r);
			break;
		}
		n++;
		if (e->out_len < nd->hdr_len + 14 || e->out_len - nd->hdr_len > PKT_MAX_FRAME) {
			nd->stats.tx_errors++;
			LOG_PEER_RL(&nd->log_rl, "%s: bad tx frame length %u", nd->cfg.socket, e->out_len);
			vq_dev_fill(&r->vq, e->head, 0);
			continue;
		}
		len = e->out_len - nd->hdr_len;
		if (has_feature(nd, VIRTIO_NET_F_MTU) && len > (uint32_t)nd->cfg.mtu + 18) {
			/* virtio: with F_MTU the driver must not send more
			 * than mtu (+ Ethernet header and one VLAN tag). */
			nd->stats.tx_errors++;
			LOG_PEER_RL(&nd->log_rl, "%s: tx frame of %u bytes above the MTU dropped", nd->cfg.socket, len);
			vq_dev_fill(&r->vq, e->head, 0);
			continue;
		}
		p = pkt_alloc();
		if (!p) {
			nd->stats.tx_errors++;
			vq_dev_fill(&r->vq, e->head, 0);
			continue;
		}
		vq_elem_read(e, nd->hdr_len, p->data, len);
		p->len = len;
		vq_dev_fill(&r->vq, e->head, 0);
		if (!netdev_sec_tx_ok(nd, p)) {
			/* port security: own MAC and addresses only */
			pkt_free(p);
			continue;
		}
		nd->stats.tx_frames++;
		nd->stats.tx_bytes += len;
		sw_input(nd->sw, nd->port, p);
	}
	if (n) {
		vq_dev_flush(&r->vq);
		vhost_vring_notify(r);
	}
	return n > 0;
}

/* Copy one frame into receive buffers. Returns 1 delivered, 0 no buffers
 * (frame stays queued), -1 dropped. */
static int netdev_rx_one(struct netdev *nd, struct vhost_vring *r, const struct pkt *p)
{
	struct virtio_net_hdr_v1 hdr;
	uint32_t total = nd->hdr_len + p->len, have = 0, off = 0;
	bool mrg = has_feature(nd, VIRTIO_NET_F_MRG_RXBUF);
	unsigned nb = 0;

	/* Take enough buffers first, so num_buffers is known before writing. */
	while (have < total) {
		struct vq_elem *e;
		int rc;

		if (nb == NETDEV_RX_MAX_BUFS)
			goto too_big;
		e = &nd->rx_elems[nb];
		rc = vq_dev_pop(&r->vq, e);
		if (rc <= 0) {
			while (nb--)
				vq_dev_unpop(&r->vq);
			if (rc < 0) {
				netdev_ring_broken(nd, r);
				return -1;
			}
			return 0;
		}
		nb++;
		if (e->in_len == 0 || (nb == 1 && e->in_len < nd->hdr_len)) {
			/* Unusable buffer (driver bug): consume what we took
			 * with length 0, in order, and drop the frame. */
			for (unsigned i = 0; i < nb; i++)
				vq_dev_fill(&r->vq, nd->rx_elems[i].head, 0);
			nd->stats.rx_bad_buffer++;
			return -1;
		}
		have += e->in_len;
		if (!mrg && have < total)
			goto too_big;
	}

	memset(&hdr, 0, sizeof(hdr));
	hdr.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	hdr.num_buffers = htole16((uint16_t)nb);
	for (unsigned i = 0; i < nb; i++) {
		struct vq_elem *e = &nd->rx_elems[i];
		uint32_t pos = 0, chunk;

		if (i == 0) {
			vq_elem_write(e, 0, &hdr, nd->hdr_len);
			pos = nd->hdr_len;
		}
		chunk = MIN(e->in_len - pos, p->len - off);
		vq_elem_write(e, pos, p->data + off, chunk);
		off += chunk;
		vq_dev_fill(&r->vq, e->head, pos + chunk);
	}
	return 1;

too_big:
	/* The frame does not fit the buffers the driver gives: hand them back
	 * (they suit smaller frames) and drop this one. */
	while (nb--)
		vq_dev_unpop(&r->vq);
	nd->stats.rx_dropped_too_big++;
	return -1;
}

/* Only while the driver's receive ring runs: frames wait for it then (a
 * stopped or broken ring's frames are dropped at once). */
static bool netdev_rx_draining(const struct netdev *nd)
{
	return nd->rxr && !nd->rxr->vq.broken;
}

bool netdev_ctx_rx_busy(struct netdev *nd)
{
	if (nd->rxq.len < NETDEV_RXQ_HIGH || !netdev_rx_draining(nd))
		return false;
	nd->rx_busy = true;
	return true;
}

/* The queue went down, or the ring stopped or broke: wake the senders we
 * refused. */
static void netdev_rx_room(struct netdev *nd)
{
	if (nd->rx_busy && (nd->rxq.len <= NETDEV_RXQ_LOW || !netdev_rx_draining(nd))) {
		nd->rx_busy = false;
		sw_port_ready(nd->sw, nd->port);
	}
}

static bool netdev_deliver_rx(struct netdev *nd)
{
	struct vhost_vring *r = nd->rxr;
	unsigned n = 0, done = 0;
	struct pkt *p;

	if (!r || r->vq.broken || !nd->rxq.len)
		return false;
	/* The head frame is waiting for more buffers than the driver gave:
	 * nothing to do until it adds some (its kick wakes us). */
	if (nd->rx_stalled && netdev_ring_avail(nd, r) == nd->rx_stalled_avail)
		return false;
	nd->rx_stalled = false;
	while (done < NETDEV_RX_BATCH && (p = nd->rxq.head)) {
		int rc = netdev_rx_one(nd, r, p);

		if (rc == 0) {
			nd->rx_stalled = true;
			nd->rx_stalled_avail = netdev_ring_avail(nd, r);
			break;
		}
		done++;
		pkt_queue_pop(&nd->rxq);
		if (rc > 0) {
			nd->stats.rx_frames++;
			nd->stats.rx_bytes += p->len;
			n++;
		}
		pkt_free(p);
	}
	if (done && !r->vq.broken) {
		vq_dev_flush(&r->vq);
		vhost_vring_notify(r);
	}
	netdev_rx_room(nd);
	return done > 0;
}

/* ---- control queue ---- */

static uint8_t netdev_ctrl_rx(struct netdev *nd, uint8_t cmd, const uint8_t *data, size_t len)
{
	if (!has_feature(nd, VIRTIO_NET_F_CTRL_RX) || len != 1)
		return VIRTIO_NET_ERR;
	switch (cmd) {
	case VIRTIO_NET_CTRL_RX_PROMISC:
		nd->promisc = data[0] != 0;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_RX_ALLMULTI:
		nd->allmulti = data[0] != 0;
		return VIRTIO_NET_OK;
	default:
		return VIRTIO_NET_ERR;
	}
}

static uint8_t netdev_ctrl_mac(struct netdev *nd, uint8_t cmd, const uint8_t *data, size_t len)
{
	switch (cmd) {
	case VIRTIO_NET_CTRL_MAC_ADDR_SET:
		if (!has_feature(nd, VIRTIO_NET_F_CTRL_MAC_ADDR) || len != 6)
			return VIRTIO_NET_ERR;
		if (data[0] & 1 || !(data[0] | data[1] | data[2] | data[3] | data[4] | data[5]))
			return VIRTIO_NET_ERR;
		return netdev_sec_set_mac(nd, data, false) ? VIRTIO_NET_ERR : VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MAC_TABLE_SET: {
		/* Two tables: le32 count + count MACs, unicast then multicast.
		 * We validate the layout; filtering uses allmulti semantics. */
		size_t off = 0;

		if (!has_feature(nd, VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		for (int t = 0; t < 2; t++) {
			uint32_t cnt;

			if (len - off < 4)
				return VIRTIO_NET_ERR;
			cnt = get_le32(data + off);
			off += 4;
			if (cnt > (len - off) / 6)
				return VIRTIO_NET_ERR;
			off += (size_t)cnt * 6;
		}
		return off == len ? VIRTIO_NET_OK : VIRTIO_NET_ERR;
	}
	default:
		return VIRTIO_NET_ERR;
	}
}

static bool netdev_process_ctrl(struct netdev *nd)
{
	struct vhost_vring *r = nd->ctrlr;
	struct vq_elem *e = &nd->elem;
	unsigned n = 0;
	size_t copied = 0;

	nd->ctrl_more = false;
	if (!r || r->vq.broken)
		return false;
	while (n < NETDEV_CTRL_BATCH && copied < NETDEV_CTRL_PASS_BYTES) {
		int rc = vq_dev_pop(&r->vq, e);
		uint8_t hdr[2], ack = VIRTIO_NET_ERR;
		uint8_t *data = NULL, *out = NULL;
		size_t data_len, out_cap, out_len = 0;

		if (rc == 0)
			break;
		if (rc < 0) {
			netdev_ring_broken(nd, r);
			break;
		}
		n++;
		if (e->out_len < 2 || e->in_len < 1) {
			nd->stats.ctrl_err++;
			LOG_PEER_RL(&nd->log_rl, "%s: malformed control request (%u readable, %u writable bytes)",
				 nd->cfg.socket, e->out_len, e->in_len);
			vq_dev_push(&r->vq, e->head, 0);
			continue;
		}
		vq_elem_read(e, 0, hdr, 2);
		data_len = e->out_len - 2;
		out_cap = MIN(e->in_len - 1, NETDEV_CTRL_MAX_ACK);
		if (data_len > NETDEV_CTRL_MAX_DATA) {
			LOG_PEER_RL(&nd->log_rl, "%s: control command of %zu bytes refused (max %u)",
				 nd->cfg.socket, data_len, NETDEV_CTRL_MAX_DATA);
			goto reply;
		}
		data = malloc(data_len ? data_len : 1);
		out = calloc(1, out_cap ? out_cap : 1);
		if (!data || !out)
			goto reply;
		vq_elem_read(e, 2, data, data_len);
		copied += data_len;
		switch (hdr[0]) {
		case VIRTIO_NET_CTRL_RX:
			ack = netdev_ctrl_rx(nd, hdr[1], data, data_len);
			break;
		case VIRTIO_NET_CTRL_MAC:
			ack = netdev_ctrl_mac(nd, hdr[1], data, data_len);
			break;
		case VIRTIO_NET_CTRL_ROCE:
			if (has_feature(nd, VIRTIO_NET_F_ROCE) &&
			    netdev_sec_ctrl_ok(nd, hdr[0], hdr[1], data, data_len))
				ack = netdev_roce_ctrl(nd, hdr[1], data, data_len, out, out_cap, &out_len);
			break;
		default:
			break;
		}
reply:
		if (ack == VIRTIO_NET_OK) {
			nd->stats.ctrl_ok++;
		} else {
			nd->stats.ctrl_err++;
			out_len = 0;
		}
		vq_elem_write(e, 0, &ack, 1);
		if (out_len)
			vq_elem_write(e, 1, out, out_len);
		vq_dev_push(&r->vq, e->head, (uint32_t)(1 + out_len));
		free(data);
		free(out);
	}
	/* stopped by a bound, not by an empty ring: polled again */
	nd->ctrl_more = n == NETDEV_CTRL_BATCH || copied >= NETDEV_CTRL_PASS_BYTES;
	if (n)
		vhost_vring_notify(r);
	return n > 0;
}

/* ---- receive side of the switch port ---- */

static bool netdev_accepts(const struct netdev *nd, const uint8_t *dmac)
{
	if (dmac[0] & 1)          /* broadcast / multicast */
		return true;
	/* Without VIRTIO_NET_F_CTRL_RX the driver cannot ask for promiscuous
	 * mode and we do not know its MAC: receive everything, as QEMU's own
	 * virtio-net does after reset. */
	if (nd->promisc || !has_feature(nd, VIRTIO_NET_F_CTRL_RX))
		return true;
	return memcmp(dmac, nd->mac, 6) == 0;
}

void netdev_ctx_input(struct netdev *nd, struct pkt *p)
{
	struct port *port = nd->port;

	if (netdev_roce_input(nd, p))
		return;
	if (unlikely(p->flags & PKT_F_RUN)) {
		/* to the driver's network stack: its real frames */
		struct pkt_queue q;
		struct pkt *f;

		pkt_queue_init(&q);
		if (roce_run_split(p, &q))
			port->stats.tx_dropped++;
		pkt_free(p);
		while ((f = pkt_queue_pop(&q)))
			netdev_ctx_input(nd, f);
		return;
	}
	if (!netdev_accepts(nd, p->data)) {
		nd->stats.rx_filtered++;
		pkt_free(p);
		return;
	}
	if (!nd->rxr || nd->rxq.len >= NETDEV_RXQ_MAX) {
		nd->stats.rx_dropped_no_buffer++;
		port->stats.tx_dropped++;
		pkt_free(p);
		return;
	}
	/* a RoCE frame our transport sent without ICRC leaves to the driver's
	 * network stack: it gets its ICRC now (docs/design.md) */
	if (unlikely(roce_pkt_fill_icrc(p))) {
		port->stats.tx_dropped++;
		pkt_free(p);
		return;
	}
	pkt_queue_push(&nd->rxq, p);
}

bool netdev_ctx_has_rx(const struct netdev *nd)
{
	return nd->rxr != NULL;
}

/* ---- poller ---- */

/* A kick on a parked transmit ring: polled again, its kicks off (the loop
 * is polling: kicks run after its pollers were disarmed). */
static void netdev_tx_unpark(struct netdev *nd)
{
	nd->tx_idle = 0;
	if (!nd->tx_parked)
		return;
	nd->tx_parked = false;
	nd->stats.tx_unparks++;
	if (nd->txr && !nd->txr->vq.broken)
		vq_dev_set_notify(&nd->txr->vq, false);
}

/* The transmit ring while the loop polls. One that stays empty (a program
 * that only uses RDMA) is parked: its kicks stay on and it is not polled
 * until one comes, so idle rings of many devices cost the loop nothing. */
static bool netdev_tx_poll(struct netdev *nd)
{
	struct vhost_vring *r = nd->txr;

	if (nd->tx_parked) {
		if (!r || r->kick_fd >= 0)
			return false;
		netdev_tx_unpark(nd); /* its kick fd was taken away */
	}
	if (netdev_process_tx(nd)) {
		nd->tx_idle = 0;
		return true;
	}
	if (!r || r->vq.broken || r->kick_fd < 0 || ++nd->tx_idle < NETDEV_TX_PARK_POLLS)
		return false;
	vq_dev_set_notify(&r->vq, true); /* (fenced, then looked at again) */
	if (netdev_process_tx(nd)) {
		vq_dev_set_notify(&r->vq, false);
		nd->tx_idle = 0;
		return true;
	}
	nd->tx_parked = true;
	nd->stats.tx_parks++;
	return false;
}

static bool netdev_poll(void *arg)
{
	struct netdev *nd = arg;
	bool work = false;

	work |= netdev_tx_poll(nd);
	/* the control ring's kicks are always on (netdev_ring_started): it is
	 * polled only without a kick fd or while a batch left commands */
	if (nd->ctrlr && (nd->ctrlr->kick_fd < 0 || nd->ctrl_more))
		work |= netdev_process_ctrl(nd);
	work |= netdev_deliver_rx(nd);
	work |= netdev_roce_poll(nd);
	return work;
}

static void netdev_set_notify(struct netdev *nd, bool enable)
{
	if (nd->txr && !nd->txr->vq.broken)
		vq_dev_set_notify(&nd->txr->vq, enable);
	if (nd->ctrlr && !nd->ctrlr->vq.broken)
		vq_dev_set_notify(&nd->ctrlr->vq, enable);
	if (nd->rxr && !nd->rxr->vq.broken)
		vq_dev_set_notify(&nd->rxr->vq, enable);
}

static bool netdev_arm(void *arg)
{
	struct netdev *nd = arg;
	bool pending = false;

	netdev_set_notify(nd, true);
	if (nd->txr && netdev_ring_avail(nd, nd->txr))
		pending = true;
	if (nd->ctrlr && netdev_ring_avail(nd, nd->ctrlr))
		pending = true;
	if (nd->rxr && nd->rxq.len) {
		uint16_t n = netdev_ring_avail(nd, nd->rxr);

		if (n && !(nd->rx_stalled && n == nd->rx_stalled_avail))
			pending = true;
	}
	if (netdev_roce_arm(nd))
		pending = true;
	return pending;
}

static void netdev_disarm(void *arg)
{
	struct netdev *nd = arg;

	/* Keep rx notifications: the driver kicks when it adds buffers, which
	 * only matters while frames wait. Suppress tx kicks while polling,
	 * but for a parked ring; control kicks stay on. */
	if (nd->txr && !nd->txr->vq.broken && !nd->tx_parked)
		vq_dev_set_notify(&nd->txr->vq, false);
	netdev_roce_disarm(nd);
}

static const struct loop_poller_ops netdev_poller_ops = {
	.poll = netdev_poll,
	.arm = netdev_arm,
	.disarm = netdev_disarm,
};

/* ---- vhost callbacks ---- */

static void netdev_ring_started(void *ctx, struct vhost_vring *r)
{
	struct netdev *nd = ctx;

	switch (r->idx) {
	case 0:
		nd->rxr = r;
		break;
	case 1:
		nd->txr = r;
		nd->tx_parked = false;
		nd->tx_idle = 0;
		break;
	case 2:
		if (has_feature(nd, VIRTIO_NET_F_CTRL_VQ)) {
			nd->ctrlr = r;
			/* commands are rare: kicked, never polled while busy */
			if (!r->vq.broken)
				vq_dev_set_notify(&r->vq, true);
		}
		break;
	default:
		nd->rdma_rings_started++;
		netdev_roce_ring_started(nd, r);
		break;
	}
	LOG_DEBUG("%s: ring %u started (num %u, kick fd %d)", nd->cfg.socket, r->idx,
		  r->num, r->kick_fd);
}

static void netdev_ring_stopped(void *ctx, struct vhost_vring *r)
{
	struct netdev *nd = ctx;

	if (nd->rxr == r) {
		nd->rxr = NULL;
		netdev_rx_room(nd);
	} else if (nd->txr == r) {
		nd->txr = NULL;
	} else if (nd->ctrlr == r) {
		nd->ctrlr = NULL;
	} else {
		if (nd->rdma_rings_started)
			nd->rdma_rings_started--;
		netdev_roce_ring_stopped(nd, r);
	}
}

static void netdev_ring_kick(void *ctx, struct vhost_vring *r)
{
	struct netdev *nd = ctx;

	if (r == nd->txr) {
		netdev_tx_unpark(nd);
		netdev_process_tx(nd);
	} else if (r == nd->ctrlr)
		netdev_process_ctrl(nd);
	else if (r == nd->rxr)
		netdev_deliver_rx(nd);
	else
		netdev_roce_ring_kick(nd, r);
}

static void netdev_reset_state(struct netdev *nd);

static void netdev_set_status(void *ctx, uint8_t status)
{
	struct netdev *nd = ctx;
	uint8_t old = nd->status;

	nd->status = status;
	/* Writing 0 is a virtio device reset (QEMU sends SET_STATUS 0 on a guest
	 * reset, without RESET_DEVICE): drop the driver-visible state. The rings
	 * are stopped by the front-end right after (GET_VRING_BASE). */
	if (status == 0 && old != 0)
		netdev_reset_state(nd);
}

static void netdev_reset_state(struct netdev *nd)
{
	pkt_queue_purge(&nd->rxq);
	netdev_port_cm_ctx_gone(nd->dp, nd);
	netdev_roce_reset(nd);
	netdev_sec_set_mac(nd, nd->cfg.mac, true);
	nd->promisc = nd->allmulti = false;
	nd->rx_stalled = false;
	nd->stats.resets++;
	netdev_rx_room(nd);
}

static void netdev_reset(void *ctx)
{
	struct netdev *nd = ctx;

	pkt_queue_purge(&nd->rxq);
	/* its QPs are gone: so are its connections (DREQ/REJ) and listens */
	netdev_port_cm_ctx_gone(nd->dp, nd);
	netdev_roce_reset(nd);
	netdev_sec_set_mac(nd, nd->cfg.mac, true);
	nd->promisc = nd->allmulti = false;
	nd->features = 0;
	netdev_roce_set_features(nd);
	nd->rx_stalled = false;
	nd->broken_reported = 0;
	nd->status = 0;
	nd->stats.resets++;
	netdev_rx_room(nd);
}

static void netdev_connected(void *ctx)
{
	(void)ctx; /* the vhost server logs connections */
}

static void netdev_closing_cb(struct loop_timer *t, void *arg)
{
	struct netdev *nd = arg;

	(void)t;
	netdev_port_ctx_closed(nd->dp, nd);
}

/* The session ended: the context goes away once the server is out of its
 * callbacks (next loop iteration). Its objects were destroyed by reset. */
static void netdev_disconnected(void *ctx)
{
	struct netdev *nd = ctx;

	if (nd->closing)
		return;
	nd->closing = true;
	nd->dp->nctx--; /* its slot is free at once */
	loop_timer_arm(nd->loop, &nd->closing_timer, loop_now_ns());
}

bool netdev_ctx_check_hangup(struct netdev *nd)
{
	return !nd->closing && vhost_server_check_hangup(nd->vs);
}

struct netdev *netdev_ctx_new(struct netdev_port *dp, int fd)
{
	const struct netdev_cfg *cfg = &dp->cfg;
	struct loop *loop = dp->loop;
	struct netdev *nd = calloc(1, sizeof(*nd));
	char name[160];
	int rc;

	if (!nd) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	nd->cfg = *cfg;
	nd->loop = loop;
	nd->sw = dp->sw;
	nd->dp = dp;
	nd->port = &dp->port;
	nd->id = ++dp->next_ctx_id;
	nd->link_down = dp->link_down;
	loop_timer_init(&nd->closing_timer, netdev_closing_cb, nd);
	memcpy(nd->mac, cfg->mac, 6);
	nd->hdr_len = sizeof(struct virtio_net_hdr_v1);
	pkt_queue_init(&nd->rxq);

	nd->ops.features = netdev_offered_features(cfg);
	nd->ops.protocol_features = ~0ull; /* everything the server implements */
	nd->ops.max_rings = 3 + (cfg->roce ? cfg->max_cqs + 2 * cfg->max_qps : 0);
	if (cfg->roce && cfg->roce_ext)
		nd->ops.max_rings += 1 + cfg->max_srqs; /* event queue, SRQ rings */
	nd->ops.queue_num = 1;
	nd->ops.set_features = netdev_set_features;
	nd->ops.get_config = netdev_get_config;
	nd->ops.set_config = netdev_set_config;
	nd->ops.ring_started = netdev_ring_started;
	nd->ops.ring_stopped = netdev_ring_stopped;
	nd->ops.ring_kick = netdev_ring_kick;
	nd->ops.set_status = netdev_set_status;
	nd->ops.reset = netdev_reset;
	nd->ops.connected = netdev_connected;
	nd->ops.disconnected = netdev_disconnected;

	rc = netdev_roce_init(nd);
	if (rc < 0)
		goto fail;
	/* exactly the device's layout (the RoCE model clamps what it got) */
	if (nd->roce)
		nd->ops.max_rings = netdev_roce_ring_count(nd);

	nd->poller = loop_add_poller(loop, &netdev_poller_ops, nd);
	if (!nd->poller) {
		rc = -ENOMEM;
		goto fail_roce;
	}
	nd->vs = vhost_server_new(loop, NULL, &nd->ops, nd);
	if (!nd->vs) {
		rc = -errno;
		goto fail_poller;
	}
	snprintf(name, sizeof(name), "%s#%llu", cfg->socket, (unsigned long long)nd->id);
	vhost_server_set_name(nd->vs, name);
	netdev_roce_attach_mem(nd);
	netdev_sec_attach_server(nd);
	rc = vhost_server_attach_fd(nd->vs, fd);
	fd = -1;
	if (rc < 0)
		goto fail_vs;
	return nd;

fail_vs:
	vhost_server_free(nd->vs);
fail_poller:
	loop_del_poller(loop, nd->poller);
fail_roce:
	netdev_roce_fini(nd);
fail:
	if (fd >= 0)
		close(fd);
	free(nd);
	errno = -rc;
	return NULL;
}

void netdev_ctx_free(struct netdev *nd)
{
	if (!nd)
		return;
	nd->closing = true; /* no second close from the disconnect below */
	loop_timer_cancel(nd->loop, &nd->closing_timer);
	vhost_server_free(nd->vs);
	loop_del_poller(nd->loop, nd->poller);
	pkt_queue_purge(&nd->rxq); /* (its waiters: netdev_port_ctx_closed) */
	netdev_roce_fini(nd);
	free(nd);
}

void netdev_ctx_set_link(struct netdev *nd, bool up)
{
	if (nd->link_down == !up)
		return;
	nd->link_down = !up;
	netdev_roce_link_changed(nd, up);
}

void netdev_stats_print(const struct netdev_stats *s, const struct vhost_server_stats *vs,
			FILE *f)
{
	fprintf(f, "  tx_frames %" PRIu64 " tx_bytes %" PRIu64 " tx_errors %" PRIu64
		" tx_spoofed %" PRIu64 "\n", s->tx_frames, s->tx_bytes, s->tx_errors, s->tx_spoofed);
	fprintf(f, "  rx_frames %" PRIu64 " rx_bytes %" PRIu64 " rx_dropped_no_buffer %" PRIu64
		" rx_dropped_too_big %" PRIu64 " rx_filtered %" PRIu64 "\n",
		s->rx_frames, s->rx_bytes, s->rx_dropped_no_buffer, s->rx_dropped_too_big,
		s->rx_filtered);
	fprintf(f, "  ctrl_ok %" PRIu64 " ctrl_err %" PRIu64 " ring_errors %" PRIu64
		" resets %" PRIu64 " tx_parks %" PRIu64 " tx_unparks %" PRIu64 "\n", s->ctrl_ok,
		s->ctrl_err, s->ring_errors, s->resets, s->tx_parks, s->tx_unparks);
	fprintf(f, "  vhost connections %" PRIu64 " messages %" PRIu64 " bad_messages %" PRIu64
		" kicks %" PRIu64 " calls %" PRIu64 "\n", vs->connections, vs->messages,
		vs->bad_messages, vs->kicks, vs->calls);
	fprintf(f, "  vhost kicks_idle %" PRIu64 " kicks_throttled %" PRIu64 "\n",
		vs->kicks_idle, vs->kicks_throttled);
	fprintf(f, "  vhost refused %" PRIu64 " mem_faults %" PRIu64 " fds_refused %" PRIu64
		" accept_errors %" PRIu64 " grave_overflows %" PRIu64 "\n", vs->refused,
		vs->mem_faults, vs->fds_refused, vs->accept_errors, vs->grave_overflows);
}

void netdev_ctx_dump_stats(const struct netdev *nd, FILE *f)
{
	const struct netdev_stats *s = &nd->stats;
	const struct vhost_server_stats *vs = vhost_server_stats(nd->vs);

	fprintf(f, "  context %llu%s\n", (unsigned long long)nd->id,
		nd->closing ? " (closing)" : "");
	netdev_stats_print(s, vs, f);
	netdev_sec_dump_stats(nd, f);
	netdev_roce_dump_stats(nd, f);
}
