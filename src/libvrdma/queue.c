// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma generic virtqueue setup, teardown, kick and wait. See queue.h.
 */
#include "libvrdma/queue.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/dev.h"

/* Largest ring index we accept (the RoCE layout needs 3 + 16384 + 2*16384). */
#define VRDMA_QUEUE_MAX_IDX (1u << 20)
/* Busy-wait before sleeping in vrdma_queue_wait (ns). */
#define VRDMA_SPIN_NS 20000
/* Poll interval for rings without a call fd (ms). */
#define VRDMA_POLL_MS 1

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

struct vrdma_queue *vrdma_queue_get(struct vrdma_dev *dev, unsigned idx)
{
	struct vrdma_queue *q = NULL;

	vrdma_dev_lock(dev);
	if (idx < dev->queues_cap)
		q = dev->queues[idx];
	vrdma_dev_unlock(dev);
	return q;
}

static int queue_table_reserve(struct vrdma_dev *dev, unsigned idx)
{
	struct vrdma_queue **t;
	unsigned cap;

	if (idx < dev->queues_cap)
		return 0;
	cap = dev->queues_cap ? dev->queues_cap : 8;
	while (cap <= idx)
		cap *= 2;
	t = realloc(dev->queues, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + dev->queues_cap, 0, (cap - dev->queues_cap) * sizeof(*t));
	dev->queues = t;
	dev->queues_cap = cap;
	return 0;
}

static void queue_free(struct vrdma_queue *q)
{
	struct vrdma_dev *dev = q->dev;

	if (q->vq_inited)
		vq_drv_fini(&q->vq);
	vrdma_shm_free(dev, q->ring, q->ring_bytes);
	vrdma_shm_free(dev, q->indirect, q->indirect_bytes);
	if (q->kick_fd >= 0)
		close(q->kick_fd);
	if (q->call_fd >= 0)
		close(q->call_fd);
	if (q->err_fd >= 0)
		close(q->err_fd);
	free(q);
}

static int queue_vhost_setup(struct vrdma_dev *dev, struct vrdma_queue *q)
{
	struct vhost_client *vc = &dev->vc;
	struct vhost_user_vring_addr a = {
		.index = q->idx,
		.flags = 0,
		.desc_user_addr = (uint64_t)(uintptr_t)vq_drv_desc(&q->vq),
		.used_user_addr = (uint64_t)(uintptr_t)vq_drv_used(&q->vq),
		.avail_user_addr = (uint64_t)(uintptr_t)vq_drv_avail(&q->vq),
		.log_guest_addr = 0,
	};

	/* Can KICK/CALL/ERR name this ring? If not, they are not sent at all:
	 * the back-end starts such a ring without fds and polls it. */
	bool named = q->idx <= VHOST_USER_VRING_IDX_MASK || dev->wide_index;
	int rc;

	rc = vhost_client_set_vring_num(vc, q->idx, q->num);
	if (!rc)
		rc = vhost_client_set_vring_base(vc, q->idx, 0);
	if (!rc)
		rc = vhost_client_set_vring_addr(vc, &a);
	if (!rc && named)
		rc = vhost_client_set_vring_call(vc, q->idx, q->call_fd);
	if (!rc && named && q->err_fd >= 0)
		rc = vhost_client_set_vring_err(vc, q->idx, q->err_fd);
	if (!rc && named)
		rc = vhost_client_set_vring_kick(vc, q->idx, q->kick_fd);
	if (!rc && (vc->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		rc = vhost_client_set_vring_enable(vc, q->idx, true);
	return vrdma_dev_vc_result(dev, rc);
}

int vrdma_queue_setup(struct vrdma_dev *dev, unsigned idx, uint16_t num,
		      unsigned flags, struct vrdma_queue **out)
{
	struct vrdma_queue *q;
	bool fds_ok;
	int rc;

	if (num < 2 || !IS_POW2(num) || num > 32768 || idx >= VRDMA_QUEUE_MAX_IDX)
		return -EINVAL;
	if ((flags & VRDMA_QF_INDIRECT) && !dev->indirect)
		return -EINVAL;

	vrdma_dev_lock(dev);
	if (vrdma_dev_is_dead(dev)) {
		rc = -ENOTCONN;
		goto unlock;
	}
	rc = queue_table_reserve(dev, idx);
	if (rc < 0)
		goto unlock;
	if (dev->queues[idx]) {
		rc = -EEXIST;
		goto unlock;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		rc = -ENOMEM;
		goto unlock;
	}
	q->dev = dev;
	q->idx = idx;
	q->num = num;
	q->kick_fd = q->call_fd = q->err_fd = -1;

	/* Rings the standard encoding cannot name get no fds. */
	fds_ok = idx <= VHOST_USER_VRING_IDX_MASK || dev->wide_index;
	if (!fds_ok)
		flags = (flags & ~(VRDMA_QF_CALL | VRDMA_QF_ERR)) | VRDMA_QF_NO_KICK;
	q->flags = flags;

	rc = -ENOMEM;
	q->ring_bytes = vq_drv_ring_bytes(num);
	q->ring = vrdma_shm_alloc(dev, q->ring_bytes, 4096);
	if (!q->ring) {
		rc = -errno;
		goto fail;
	}
	rc = vq_drv_init(&q->vq, q->ring, num, dev->event_idx);
	if (rc < 0)
		goto fail;
	q->vq_inited = true;
	if (flags & VRDMA_QF_INDIRECT) {
		q->indirect_bytes = (size_t)num * VRDMA_QUEUE_INDIRECT_MAX *
				    sizeof(struct vring_desc);
		q->indirect = vrdma_shm_alloc(dev, q->indirect_bytes, 16);
		if (!q->indirect) {
			rc = -errno;
			goto fail;
		}
		vq_drv_set_indirect(&q->vq, q->indirect, (uint64_t)(uintptr_t)q->indirect,
				    VRDMA_QUEUE_INDIRECT_MAX);
	}
	if (!(flags & VRDMA_QF_NO_KICK)) {
		q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->kick_fd < 0) {
			rc = -errno;
			goto fail;
		}
	}
	if (flags & VRDMA_QF_CALL) {
		q->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->call_fd < 0) {
			rc = -errno;
			goto fail;
		}
	}
	if (flags & VRDMA_QF_ERR) {
		q->err_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->err_fd < 0) {
			rc = -errno;
			goto fail;
		}
	}
	/* Without a call fd nobody wants interrupts. */
	if (q->call_fd < 0)
		vq_drv_disable_cb(&q->vq);

	rc = queue_vhost_setup(dev, q);
	if (rc < 0)
		goto fail;
	dev->queues[idx] = q;
	*out = q;
	vrdma_dev_unlock(dev);
	return 0;
fail:
	queue_free(q);
unlock:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_queue_teardown(struct vrdma_queue *q)
{
	struct vrdma_dev *dev;
	uint32_t base;
	int rc = 0;

	if (!q)
		return 0;
	dev = q->dev;
	vrdma_dev_lock(dev);
	if (!vrdma_dev_is_dead(dev) && !q->stopped) {
		if (dev->vc.features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
			rc = vhost_client_set_vring_enable(&dev->vc, q->idx, false);
		if (rc == 0 || rc == -EIO)
			rc = vhost_client_get_vring_base(&dev->vc, q->idx, &base);
		rc = vrdma_dev_vc_result(dev, rc);
	}
	if (q->idx < dev->queues_cap && dev->queues[q->idx] == q)
		dev->queues[q->idx] = NULL;
	queue_free(q);
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_queue_stop(struct vrdma_queue *q)
{
	struct vrdma_dev *dev = q->dev;
	uint32_t base;
	int rc = 0;

	vrdma_dev_lock(dev);
	if (vrdma_dev_is_dead(dev)) {
		rc = -ENOTCONN;
	} else if (!q->stopped) {
		if (dev->vc.features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
			rc = vhost_client_set_vring_enable(&dev->vc, q->idx, false);
		if (rc == 0 || rc == -EIO)
			rc = vhost_client_get_vring_base(&dev->vc, q->idx, &base);
		rc = vrdma_dev_vc_result(dev, rc);
		if (rc == 0)
			q->stopped = true;
	}
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_queue_restart(struct vrdma_queue *q, uint16_t num)
{
	struct vrdma_dev *dev = q->dev;
	struct vq_drv nvq, ovq;
	size_t obytes;
	void *oring;
	int rc;

	if (num < 2 || !IS_POW2(num) || num > 32768 || (q->flags & VRDMA_QF_INDIRECT))
		return -EINVAL;
	vrdma_dev_lock(dev);
	if (vrdma_dev_is_dead(dev)) {
		rc = -ENOTCONN;
		goto out;
	}
	if (!q->stopped) {
		rc = -EINVAL;
		goto out;
	}
	obytes = q->ring_bytes;
	oring = q->ring;
	q->ring_bytes = vq_drv_ring_bytes(num);
	q->ring = vrdma_shm_alloc(dev, q->ring_bytes, 4096);
	if (!q->ring) {
		rc = -errno;
		goto undo_mem;
	}
	rc = vq_drv_init(&nvq, q->ring, num, dev->event_idx);
	if (rc < 0) {
		vrdma_shm_free(dev, q->ring, q->ring_bytes);
		goto undo_mem;
	}
	if (q->call_fd < 0)
		vq_drv_disable_cb(&nvq);
	ovq = q->vq;
	q->vq = nvq;
	q->num = num;
	rc = queue_vhost_setup(dev, q);
	if (rc < 0) {
		/* Back to the old (stopped) ring. */
		vq_drv_fini(&q->vq);
		vrdma_shm_free(dev, q->ring, q->ring_bytes);
		q->vq = ovq;
		q->num = ovq.num;
		goto undo_mem;
	}
	q->stopped = false;
	vq_drv_fini(&ovq);
	vrdma_shm_free(dev, oring, obytes);
	goto out;
undo_mem:
	q->ring = oring;
	q->ring_bytes = obytes;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

bool vrdma_queue_kick(struct vrdma_queue *q)
{
	if (!vq_drv_kick_prepare(&q->vq) || q->kick_fd < 0)
		return false;
	if (eventfd_write(q->kick_fd, 1) == 0)
		q->kicks++;
	return true;
}

void vrdma_queue_drain_call(struct vrdma_queue *q)
{
	eventfd_t v;

	if (q->call_fd >= 0)
		(void)eventfd_read(q->call_fd, &v);
}

int vrdma_queue_wait(struct vrdma_queue *q, int timeout_ms)
{
	struct vrdma_dev *dev = q->dev;
	uint64_t start = mono_ns(), deadline = 0;

	if (timeout_ms >= 0)
		deadline = start + (uint64_t)timeout_ms * 1000000ull;
	/* Spin: the device is often a busy-polling thread. */
	while (mono_ns() - start < VRDMA_SPIN_NS) {
		if (vq_drv_has_used(&q->vq))
			return 1;
		if (vrdma_dev_is_dead(dev))
			return -ENOTCONN;
		cpu_relax();
	}
	for (;;) {
		struct pollfd p[2];
		int n, wait_ms, pr;
		uint64_t now;

		if (vrdma_dev_is_dead(dev))
			return -ENOTCONN;
		if (q->call_fd >= 0) {
			vrdma_queue_drain_call(q);
			if (!vq_drv_enable_cb(&q->vq))
				return 1; /* raced in */
		}
		if (vq_drv_has_used(&q->vq))
			return 1;
		now = mono_ns();
		if (timeout_ms >= 0 && now >= deadline)
			return 0;
		n = 1; /* p[0]: the back-end's socket */
		if (q->call_fd >= 0) {
			p[n].fd = q->call_fd;
			p[n++].events = POLLIN;
		}
		wait_ms = vrdma_wait_ms(timeout_ms, deadline, now,
					q->call_fd >= 0 ? -1 : VRDMA_POLL_MS);
		pr = vrdma_dev_poll(dev, p, (nfds_t)n, wait_ms);
		if (pr < 0)
			return pr;
	}
}
