// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma control queue (ring 2): one command in flight at a time, under the
 * device lock.
 *
 * Buffer layout in shared memory (one block, VRDMA_CTRL_BUF bytes, or a
 * temporary block for large commands):
 *   [0]        u8 class            \  device-readable, descriptor 1 (2 bytes)
 *   [1]        u8 command          /
 *   [2..)      command-specific-data  device-readable, descriptor 2 (in_len)
 *   [A]        u8 ack              \  device-writable, descriptor 3
 *   [A+1..)    ack-specific-data   /  (1 + out_len bytes)
 * with A = 2 + in_len rounded up to 8. The ack byte is preset to 0xff so a
 * device that completes without writing it is detected.
 * On a virtio-rdma device (id 42) the readable header is the command byte
 * alone (cls is not sent) and the ack is its response byte (0 OK, 1 ERR).
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/dev.h"

#define CTRL_ACK_UNSET 0xff
/* Largest command we build (in + out), a sanity bound. */
#define CTRL_MAX_BYTES (64u << 20)

int vrdma_ctrl_setup(struct vrdma_dev *dev)
{
	int rc;

	rc = vrdma_queue_setup(dev, vrdma_dev_ctrl_vq(dev), dev->ring_size, VRDMA_QF_CALL,
			       &dev->ctrl.q);
	if (rc < 0)
		return rc;
	dev->ctrl.buf = vrdma_shm_alloc(dev, VRDMA_CTRL_BUF, 64);
	if (!dev->ctrl.buf)
		return -errno;
	/* Interrupts only while a waiter sleeps. */
	vq_drv_disable_cb(&dev->ctrl.q->vq);
	return 0;
}

void vrdma_ctrl_destroy(struct vrdma_dev *dev)
{
	vrdma_queue_teardown(dev->ctrl.q);
	vrdma_shm_free(dev, dev->ctrl.buf, VRDMA_CTRL_BUF);
	memset(&dev->ctrl, 0, sizeof(dev->ctrl));
}

int vrdma_ctrl_cmd(struct vrdma_dev *dev, uint8_t cls, uint8_t cmd, const void *in,
		   size_t in_len, void *out, size_t out_len, uint8_t *ack)
{
	struct vrdma_ctrl *c = &dev->ctrl;
	struct vq_buf rd[2], wr[1];
	size_t ack_off, total;
	uint8_t *buf;
	unsigned nrd = 1;
	uint32_t len;
	void *tok;
	int rc;

	if ((in_len && !in) || (out_len && !out) || !ack)
		return -EINVAL;
	if (in_len > CTRL_MAX_BYTES || out_len > CTRL_MAX_BYTES)
		return -EINVAL;
	ack_off = ALIGN_UP(2 + in_len, (size_t)8);
	total = ack_off + 1 + out_len;

	vrdma_dev_lock(dev);
	if (!c->q) {
		rc = vrdma_dev_is_dead(dev) ? -ENOTCONN : -EOPNOTSUPP;
		goto out;
	}
	if (vrdma_dev_is_dead(dev)) {
		rc = -ENOTCONN;
		goto out;
	}
	if (c->broken) {
		rc = -EIO;
		goto out;
	}
	buf = c->buf;
	if (total > VRDMA_CTRL_BUF) {
		buf = vrdma_shm_alloc(dev, total, 64);
		if (!buf) {
			rc = -errno;
			goto out;
		}
	}
	buf[0] = cls;
	buf[1] = cmd;
	if (in_len)
		memcpy(buf + 2, in, in_len);
	buf[ack_off] = CTRL_ACK_UNSET;
	memset(buf + ack_off + 1, 0, out_len);

	rd[0].addr = (uint64_t)(uintptr_t)buf + (dev->virtio_rdma ? 1 : 0);
	rd[0].len = dev->virtio_rdma ? 1 : 2;
	if (in_len) {
		rd[1].addr = (uint64_t)(uintptr_t)(buf + 2);
		rd[1].len = (uint32_t)in_len;
		nrd = 2;
	}
	wr[0].addr = (uint64_t)(uintptr_t)(buf + ack_off);
	wr[0].len = (uint32_t)(1 + out_len);
	rc = vq_drv_add(&c->q->vq, rd, nrd, wr, 1, buf);
	if (rc < 0)
		goto free_buf;
	c->cmds++;
	vrdma_queue_kick(c->q);

	rc = vrdma_queue_wait(c->q, dev->timeout_ms);
	vq_drv_disable_cb(&c->q->vq);
	if (rc <= 0) {
		if (rc == 0) {
			LOG_ERR("vrdma: control command %u/%u: no answer in %d ms",
				cls, cmd, dev->timeout_ms);
			rc = -ETIMEDOUT;
		}
		/* The device may still own buf: never reuse it. */
		c->broken = true;
		c->errors++;
		goto out;
	}
	tok = vq_drv_get_used(&c->q->vq, &len);
	if (tok != buf) {
		/* Only one command is ever in flight: anything else is a
		 * device bug (bad id, or a token we did not post). */
		LOG_PEER("vrdma: control queue returned an unexpected entry");
		c->broken = true;
		c->errors++;
		rc = -EIO;
		goto out;
	}
	if (len > 1 + out_len) {
		LOG_PEER("vrdma: control command %u/%u: used length %u > %zu", cls, cmd,
			 len, 1 + out_len);
		len = (uint32_t)(1 + out_len);
	}
	if (len == 0 && buf[ack_off] == CTRL_ACK_UNSET) {
		c->errors++;
		rc = -EIO;
		goto free_buf;
	}
	*ack = buf[ack_off];
	if (out_len)
		memcpy(out, buf + ack_off + 1, out_len);
	if (*ack != VIRTIO_NET_OK)
		c->errors++;
	rc = 0;
free_buf:
	if (buf != c->buf)
		vrdma_shm_free(dev, buf, total);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

static int ctrl_simple(struct vrdma_dev *dev, unsigned feature, uint8_t cls, uint8_t cmd,
		       const void *in, size_t in_len)
{
	uint8_t ack;
	int rc;

	if (!((dev->features >> feature) & 1))
		return vrdma_dev_is_dead(dev) ? -ENOTCONN : -EOPNOTSUPP;
	rc = vrdma_ctrl_cmd(dev, cls, cmd, in, in_len, NULL, 0, &ack);
	if (rc < 0)
		return rc;
	return ack == VIRTIO_NET_OK ? 0 : -EIO;
}

int vrdma_ctrl_set_promisc(struct vrdma_dev *dev, bool on)
{
	uint8_t v = on ? 1 : 0;

	return ctrl_simple(dev, VIRTIO_NET_F_CTRL_RX, VIRTIO_NET_CTRL_RX,
			   VIRTIO_NET_CTRL_RX_PROMISC, &v, 1);
}

int vrdma_ctrl_set_mac(struct vrdma_dev *dev, const uint8_t mac[6])
{
	uint8_t m[6];
	int rc;

	memcpy(m, mac, 6);
	rc = ctrl_simple(dev, VIRTIO_NET_F_CTRL_MAC_ADDR, VIRTIO_NET_CTRL_MAC,
			 VIRTIO_NET_CTRL_MAC_ADDR_SET, m, 6);
	if (rc == 0) {
		vrdma_dev_lock(dev);
		memcpy(dev->mac, m, 6);
		vrdma_dev_unlock(dev);
	}
	return rc;
}
