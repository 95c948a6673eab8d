// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma Ethernet frames: receive queue 0, transmit queue 1.
 *
 * Receive buffers: ring-size buffers of (12-byte virtio_net_hdr_v1 + MTU +
 * 14) bytes each, one device-writable descriptor per buffer; the used length
 * (untrusted) is checked against the buffer before any byte is copied.
 * MRG_RXBUF is not negotiated: every frame fits one buffer.
 *
 * Transmit buffers: ring-size buffers of the same size, one device-readable
 * descriptor each: zeroed header, then the frame. Used transmit buffers are
 * reclaimed by polling (the device is asked for transmit interrupts only
 * while vrdma_net_wait(VRDMA_WAIT_TX) or vrdma_net_flush sleeps, and then
 * for a batch: 3/4 of the buffers in flight, or all of them).
 *
 * Interrupt arming on receive: while frames flow, interrupts stay off (no
 * eventfd traffic); the first empty poll drains the call eventfd, checks the
 * socket for a hang-up (one epoll_wait(0) on the event fd tells both) and
 * re-enables interrupts, re-checking the ring for a frame that raced in.
 * Further empty polls return -EAGAIN without a system call (one in 64 re-checks
 * the socket).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/dev.h"

/* Publish re-posted receive buffers in batches of this many. */
#define RX_PUBLISH_BATCH 16
/* Empty polls between socket checks while armed. */
#define RX_IDLE_CHECK 64

static size_t net_buf_size(const struct vrdma_dev *dev)
{
	return ALIGN_UP((size_t)VRDMA_NET_HDR_LEN + dev->mtu + VRDMA_ETH_HLEN, (size_t)64);
}

static int rx_post(struct vrdma_net_rx *rx, unsigned i)
{
	uint8_t *buf = rx->bufs + (size_t)i * rx->buf_size;
	struct vq_buf b = {
		.addr = (uint64_t)(uintptr_t)buf,
		.len = (uint32_t)rx->buf_size,
	};

	return vq_drv_add(&rx->q->vq, NULL, 0, &b, 1, buf);
}

int vrdma_net_setup(struct vrdma_dev *dev)
{
	struct vrdma_net_rx *rx = &dev->rx;
	struct vrdma_net_tx *tx = &dev->tx;
	uint16_t num = dev->ring_size;
	int rc;

	rx->buf_size = tx->buf_size = net_buf_size(dev);
	rc = vrdma_queue_setup(dev, VRDMA_NET_RXQ, num, VRDMA_QF_CALL, &rx->q);
	if (rc < 0)
		return rc;
	rc = vrdma_queue_setup(dev, VRDMA_NET_TXQ, num, VRDMA_QF_CALL, &tx->q);
	if (rc < 0)
		return rc;
	rx->bufs = vrdma_shm_alloc(dev, rx->buf_size * num, 4096);
	tx->bufs = vrdma_shm_alloc(dev, tx->buf_size * num, 4096);
	tx->free_stack = malloc(num * sizeof(*tx->free_stack));
	if (!rx->bufs || !tx->bufs || !tx->free_stack)
		return rx->bufs && tx->bufs ? -ENOMEM : -errno;
	for (unsigned i = 0; i < num; i++)
		tx->free_stack[i] = (uint16_t)(num - 1 - i);
	tx->nfree = num;
	/* Transmit completions are reclaimed by polling. */
	vq_drv_disable_cb(&tx->q->vq);

	for (unsigned i = 0; i < num; i++) {
		rc = rx_post(rx, i);
		if (rc < 0)
			return rc;
	}
	vrdma_queue_kick(rx->q);
	rx->armed = false;
	return 0;
}

void vrdma_net_destroy(struct vrdma_dev *dev)
{
	size_t n = dev->ring_size;

	vrdma_queue_teardown(dev->rx.q);
	vrdma_queue_teardown(dev->tx.q);
	vrdma_shm_free(dev, dev->rx.bufs, dev->rx.buf_size * n);
	vrdma_shm_free(dev, dev->tx.bufs, dev->tx.buf_size * n);
	free(dev->tx.free_stack);
	memset(&dev->rx, 0, sizeof(dev->rx));
	memset(&dev->tx, 0, sizeof(dev->tx));
}

/* ---- transmit -------------------------------------------------------------- */

static void tx_reclaim(struct vrdma_net_tx *tx)
{
	uint32_t len;
	void *tok;

	for (;;) {
		len = 0;
		tok = vq_drv_get_used(&tx->q->vq, &len);
		if (!tok) {
			if (len != UINT32_MAX)
				break;
			/* A bad id from the device: skip it (counted). */
			LOG_PEER("vrdma: device returned a bad transmit descriptor id");
			continue;
		}
		size_t i = (size_t)((uint8_t *)tok - tx->bufs) / tx->buf_size;

		tx->free_stack[tx->nfree++] = (uint16_t)i;
	}
}

/* Before sleeping on the transmit ring: drain its call eventfd and ask to
 * be woken once n more buffers are used (with event index; without it, at
 * the next one). False: they already are. */
static bool tx_arm(struct vrdma_net_tx *tx, uint16_t n)
{
	vrdma_queue_drain_call(tx->q);
	return vq_drv_enable_cb_after(&tx->q->vq, n);
}

/* Buffers the device holds (1..ring size), or -EIO when none of those
 * missing will come back: the device gave them back under bad ids. */
static int tx_in_flight(const struct vrdma_net_tx *tx)
{
	uint16_t n = vq_drv_in_flight(&tx->q->vq);

	return n && n <= tx->q->vq.num ? n : -EIO;
}

/* Check one frame's length: 0, -EINVAL or -EMSGSIZE. */
static int tx_check(const struct vrdma_dev *dev, const void *frame, size_t len)
{
	if (unlikely(len < VRDMA_ETH_HLEN || !frame))
		return -EINVAL;
	if (unlikely(len > (size_t)dev->mtu + VRDMA_ETH_HLEN))
		return -EMSGSIZE;
	return 0;
}

/* Room for one more frame? Reclaims when needed. Returns 0, -EAGAIN or
 * -ENOTCONN. */
static int tx_room(struct vrdma_dev *dev)
{
	struct vrdma_net_tx *tx = &dev->tx;
	int rc;

	if (likely(tx->nfree && vq_drv_num_free(&tx->q->vq)))
		return 0;
	tx_reclaim(tx);
	if (tx->nfree && vq_drv_num_free(&tx->q->vq))
		return 0;
	tx->full++;
	/* A full ring is where a dead back-end shows up. */
	rc = vrdma_dev_probe(dev);
	return rc < 0 ? rc : -EAGAIN;
}

/* Copy one frame into a transmit buffer and add it (not yet published). */
static int tx_add(struct vrdma_net_tx *tx, const void *frame, size_t len)
{
	struct vq_buf b;
	uint8_t *buf;
	uint16_t i;
	int rc;

	i = tx->free_stack[--tx->nfree];
	buf = tx->bufs + (size_t)i * tx->buf_size;
	memset(buf, 0, VRDMA_NET_HDR_LEN);
	memcpy(buf + VRDMA_NET_HDR_LEN, frame, len);
	b.addr = (uint64_t)(uintptr_t)buf;
	b.len = (uint32_t)(VRDMA_NET_HDR_LEN + len);
	rc = vq_drv_add(&tx->q->vq, &b, 1, NULL, 0, buf);
	if (unlikely(rc < 0)) {
		tx->free_stack[tx->nfree++] = i;
		return rc == -ENOSPC ? -EAGAIN : rc;
	}
	tx->frames++;
	tx->bytes += len;
	return 0;
}

int vrdma_net_send(struct vrdma_dev *dev, const void *frame, size_t len)
{
	struct vrdma_net_tx *tx = &dev->tx;
	int rc;

	if (unlikely(vrdma_dev_is_dead(dev) || !tx->q))
		return -ENOTCONN;
	rc = tx_check(dev, frame, len);
	if (!rc)
		rc = tx_room(dev);
	if (!rc)
		rc = tx_add(tx, frame, len);
	if (likely(!rc))
		vrdma_queue_kick(tx->q);
	return rc;
}

int vrdma_net_send_burst(struct vrdma_dev *dev, const void *const *frames,
			 const size_t *lens, unsigned n)
{
	struct vrdma_net_tx *tx = &dev->tx;
	unsigned i;
	int rc = 0;

	if (unlikely(vrdma_dev_is_dead(dev) || !tx->q))
		return -ENOTCONN;
	if (unlikely(n && (!frames || !lens)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		rc = tx_check(dev, frames[i], lens[i]);
		if (!rc)
			rc = tx_room(dev);
		if (!rc)
			rc = tx_add(tx, frames[i], lens[i]);
		if (rc)
			break;
	}
	if (i)
		vrdma_queue_kick(tx->q);
	return i ? (int)i : rc;
}

/* ---- receive --------------------------------------------------------------- */

static void rx_publish(struct vrdma_net_rx *rx)
{
	if (rx->unpublished) {
		rx->unpublished = 0;
		vrdma_queue_kick(rx->q);
	}
}

/*
 * Nothing to receive: publish re-posted buffers, learn whether the back-end
 * hung up and whether the call eventfd fired (one epoll_wait), drain it, and
 * enable interrupts. Returns 1 if a frame raced in, 0 if armed, -ENOTCONN.
 */
static int rx_arm(struct vrdma_dev *dev)
{
	struct vrdma_net_rx *rx = &dev->rx;
	struct epoll_event ev[2];
	int n;

	rx_publish(rx);
	n = epoll_wait(dev->epfd, ev, 2, 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == 0) {
			vrdma_dev_mark_dead(dev);
			return -ENOTCONN;
		}
		vrdma_queue_drain_call(rx->q);
	}
	rx->idle_polls = 0;
	rx->armed = true;
	if (!vq_drv_enable_cb(&rx->q->vq))
		return 1;
	return vq_drv_has_used(&rx->q->vq) ? 1 : 0;
}

ssize_t vrdma_net_recv(struct vrdma_dev *dev, void *buf, size_t cap)
{
	struct vrdma_net_rx *rx = &dev->rx;
	uint32_t len;
	uint8_t *b;
	size_t flen;
	int rc;

	if (unlikely(vrdma_dev_is_dead(dev)))
		return -ENOTCONN;
	if (unlikely(!rx->q))
		return -ENOTCONN;
	for (;;) {
		len = 0;
		b = vq_drv_get_used(&rx->q->vq, &len);
		if (unlikely(b == NULL)) {
			if (unlikely(len == UINT32_MAX)) {
				LOG_PEER("vrdma: device returned a bad receive descriptor id");
				rx->bad++;
				return -EIO;
			}
			if (rx->armed && ++rx->idle_polls < RX_IDLE_CHECK)
				return -EAGAIN;
			rc = rx_arm(dev);
			if (rc < 0)
				return rc;
			if (rc == 0)
				return -EAGAIN;
			continue;
		}
		if (rx->armed) {
			vq_drv_disable_cb(&rx->q->vq);
			rx->armed = false;
		}
		/* len is device-written: validate before copying. */
		flen = 0;
		if (unlikely(len <= VRDMA_NET_HDR_LEN || len > rx->buf_size)) {
			LOG_PEER("vrdma: bad receive length %u (buffer %zu)", len, rx->buf_size);
			rx->bad++;
		} else {
			flen = len - VRDMA_NET_HDR_LEN;
			memcpy(buf, b + VRDMA_NET_HDR_LEN, MIN(flen, cap));
			if (flen > cap)
				rx->truncated++;
			rx->frames++;
			rx->bytes += flen;
		}
		/* Give the buffer back. */
		rc = rx_post(rx, (unsigned)((size_t)(b - rx->bufs) / rx->buf_size));
		if (unlikely(rc < 0))
			LOG_ERR("vrdma: re-posting a receive buffer failed: %d", rc);
		else if (++rx->unpublished >= RX_PUBLISH_BATCH)
			rx_publish(rx);
		if (likely(flen))
			return (ssize_t)flen;
	}
}

/*
 * One look at the rings, then (nothing ready, time left) one sleep. Returns
 * what vrdma_net_wait returns, or 0 with *again set (slept, or the ring
 * changed while arming: look again). Transmit interrupts are on only for
 * the sleep (*tx_armed); the caller turns them off, so reclaiming runs
 * without them and an RX-only waiter never touches them (another thread
 * may be sleeping on them).
 */
static int net_wait_pass(struct vrdma_dev *dev, unsigned events, int timeout_ms,
			 uint64_t deadline, bool *tx_armed, bool *again)
{
	struct vrdma_net_rx *rx = &dev->rx;
	struct vrdma_net_tx *tx = &dev->tx;
	struct pollfd p[3];
	unsigned ready = 0;
	int n, pr, rc, wait_ms = -1, tx_held = 0; /* tx_held: ring full */

	*again = false;
	if (vrdma_dev_is_dead(dev) || !rx->q || !tx->q)
		return -ENOTCONN;
	if (events & VRDMA_WAIT_RX) {
		if (vq_drv_has_used(&rx->q->vq)) {
			ready |= VRDMA_WAIT_RX;
		} else {
			rc = rx_arm(dev);
			if (rc < 0)
				return rc;
			if (rc == 1)
				ready |= VRDMA_WAIT_RX;
		}
	}
	if (events & VRDMA_WAIT_TX) {
		tx_reclaim(tx);
		if (tx->nfree && vq_drv_num_free(&tx->q->vq))
			ready |= VRDMA_WAIT_TX;
		else if (!ready && (tx_held = tx_in_flight(tx)) < 0)
			return tx_held;
	}
	if (ready)
		return (int)ready;
	if (timeout_ms == 0)
		return 0;
	if (timeout_ms > 0) {
		uint64_t now = mono_ns();

		if (now >= deadline)
			return 0;
		wait_ms = ms_until(deadline, now);
	}
	if (tx_held) {
		/* room worth waking for: 3/4 of it (virtio's delayed
		 * callback), so a sender wakes per batch, not per buffer */
		*tx_armed = true;
		if (!tx_arm(tx, (uint16_t)(tx_held - tx_held / 4))) {
			*again = true; /* room came meanwhile: reclaim again */
			return 0;
		}
	}

	n = 1; /* p[0]: the back-end's socket */
	if (events & VRDMA_WAIT_RX) {
		p[n].fd = rx->q->call_fd;
		p[n++].events = POLLIN;
	}
	if (events & VRDMA_WAIT_TX) {
		p[n].fd = tx->q->call_fd;
		p[n++].events = POLLIN;
	}
	pr = vrdma_dev_poll(dev, p, (nfds_t)n, wait_ms);
	if (pr < 0)
		return pr;
	/* Something fired or the time is up: look again. */
	*again = true;
	return 0;
}

int vrdma_net_wait(struct vrdma_dev *dev, unsigned events, int timeout_ms)
{
	uint64_t deadline = 0;
	bool again;
	int rc;

	if (!events || (events & ~(VRDMA_WAIT_RX | VRDMA_WAIT_TX)))
		return -EINVAL;
	deadline = ms_deadline(timeout_ms);
	do {
		bool tx_armed = false;

		rc = net_wait_pass(dev, events, timeout_ms, deadline, &tx_armed, &again);
		if (tx_armed)
			vq_drv_disable_cb(&dev->tx.q->vq);
	} while (again);
	return rc;
}

int vrdma_net_flush(struct vrdma_dev *dev, int timeout_ms)
{
	struct vrdma_net_tx *tx = &dev->tx;
	uint64_t deadline = ms_deadline(timeout_ms);

	for (;;) {
		struct pollfd p[2];
		int wait_ms = -1, pr = 0, n;

		if (vrdma_dev_is_dead(dev) || !tx->q)
			return -ENOTCONN;
		tx_reclaim(tx);
		if (tx->nfree == dev->ring_size)
			return 0;
		n = tx_in_flight(tx);
		if (n < 0)
			return n;
		if (timeout_ms == 0)
			return -ETIMEDOUT;
		if (timeout_ms > 0) {
			uint64_t now = mono_ns();

			if (now >= deadline)
				return -ETIMEDOUT;
			wait_ms = ms_until(deadline, now);
		}
		/* Woken once everything in flight is done. */
		if (tx_arm(tx, (uint16_t)n)) {
			p[1].fd = tx->q->call_fd;
			p[1].events = POLLIN;
			pr = vrdma_dev_poll(dev, p, 2, wait_ms);
		}
		vq_drv_disable_cb(&tx->q->vq);
		if (pr < 0)
			return pr;
	}
}
