/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma generic virtqueue API (private), used by the net part (rx 0, tx 1,
 * control 2) and by the RDMA part (completion, send and receive queues at
 * any index).
 *
 * Setup (vrdma_queue_setup, control path, takes the device lock): ring memory
 * from the shm allocator, then SET_VRING_NUM, SET_VRING_BASE(0),
 * SET_VRING_ADDR (UVAs = our pointers), SET_VRING_CALL, [SET_VRING_ERR],
 * SET_VRING_KICK and SET_VRING_ENABLE(1) (the last only with protocol
 * features, where rings start disabled).
 *
 * Notifications and the 256-ring limit: the standard SET_VRING_KICK/CALL/ERR
 * payload has 8 bits of ring index. Rings >= 256 get eventfds only when the
 * back-end negotiated VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX; otherwise no
 * KICK/CALL/ERR message is sent for them at all (not even "no fd": it could
 * not name the ring) and the back-end starts them after NUM/ADDR/ENABLE
 * without fds (vhost_server.h): the device polls the ring for new buffers
 * and never interrupts; vrdma_queue_wait() then polls the used ring (sleeping in
 * short poll() calls on the socket, so a dead back-end is still noticed).
 * VRDMA_QF_NO_KICK asks for the same polled mode on any ring (saves an fd and
 * a system call per kick, e.g. for thousands of QPs).
 *
 * Data path (vrdma_queue_kick/wait and vq_drv_* on q->vq): NOT thread-safe
 * per queue and lock-free; the owner serialises.
 */
#ifndef VRDMA_LIBVRDMA_QUEUE_H
#define VRDMA_LIBVRDMA_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "virtio/vq_drv.h"

struct vrdma_dev;

#define VRDMA_QF_CALL     (1u << 0) /* want interrupts: a call eventfd */
#define VRDMA_QF_NO_KICK  (1u << 1) /* no kick eventfd: the device polls */
#define VRDMA_QF_INDIRECT (1u << 2) /* indirect tables (needs INDIRECT_DESC) */
#define VRDMA_QF_ERR      (1u << 3) /* an error eventfd (SET_VRING_ERR) */

struct vrdma_queue {
	struct vrdma_dev *dev;
	unsigned idx;           /* ring index */
	uint16_t num;           /* entries */
	unsigned flags;         /* VRDMA_QF_* as granted */
	struct vq_drv vq;
	bool vq_inited;
	void *ring;             /* desc+avail+used, from the shm allocator */
	size_t ring_bytes;
	void *indirect;         /* indirect tables or NULL */
	size_t indirect_bytes;
	int kick_fd;            /* eventfd, or -1: the device polls */
	int call_fd;            /* eventfd, or -1: no interrupts (we poll) */
	int err_fd;             /* eventfd, or -1 */
	uint64_t kicks;         /* eventfd writes */
	bool stopped;           /* vrdma_queue_stop: the device left it */
};

/* Descriptors per indirect table (VRDMA_QF_INDIRECT). */
#define VRDMA_QUEUE_INDIRECT_MAX 16

/*
 * Set up ring idx with num entries (power of two, 2..32768). flags are
 * VRDMA_QF_*; for idx >= 256 without the wide-index extension, CALL/ERR are
 * dropped and NO_KICK forced (q->flags says what was granted). Returns 0 and
 * *out, or -EEXIST (already set up), -EINVAL, -ENOMEM, -ENOSPC, -ENOTCONN,
 * -EIO (the back-end refused a message).
 */
int vrdma_queue_setup(struct vrdma_dev *dev, unsigned idx, uint16_t num,
		      unsigned flags, struct vrdma_queue **out);

/* Stop the ring (SET_VRING_ENABLE 0 + GET_VRING_BASE when connected), free
 * its memory and eventfds. In-flight buffers are abandoned (their tokens are
 * not returned). Returns 0, or the -errno of the vhost-user exchange (the
 * queue is freed in every case). NULL is ignored. */
int vrdma_queue_teardown(struct vrdma_queue *q);

/*
 * Stop the ring (SET_VRING_ENABLE 0 + GET_VRING_BASE): afterwards the device
 * no longer touches it, so its used entries are final and may be read
 * (vq_drv_get_used) before vrdma_queue_restart. Takes the device lock.
 * Returns 0 or -errno (-ENOTCONN).
 */
int vrdma_queue_stop(struct vrdma_queue *q);

/*
 * Replace the ring of a stopped queue by a fresh one of num entries (power
 * of two, 2..32768) and start it again (NUM, BASE 0, ADDR, the same call /
 * error / kick eventfds, ENABLE). Buffers of the old ring are abandoned:
 * read what you need first. On failure the queue stays stopped with its old
 * ring. Takes the device lock. Returns 0, -EINVAL, -ENOMEM, -ENOTCONN, -EIO.
 */
int vrdma_queue_restart(struct vrdma_queue *q, uint16_t num);

/* The queue at index idx, or NULL. Takes the device lock. */
struct vrdma_queue *vrdma_queue_get(struct vrdma_dev *dev, unsigned idx);

/* Publish added buffers and notify the device if it asked for it (and the
 * ring has a kick fd). Returns true if the device was notified. */
bool vrdma_queue_kick(struct vrdma_queue *q);

/*
 * Wait until the queue has used entries (returns 1), timeout_ms elapses
 * (returns 0; < 0 waits for ever) or the back-end dies (-ENOTCONN). Spins
 * briefly first, then enables interrupts and sleeps on the call eventfd (or,
 * without one, polls). Interrupts are left enabled when it returns 1 from
 * sleep; callers that busy-poll afterwards may vq_drv_disable_cb().
 */
int vrdma_queue_wait(struct vrdma_queue *q, int timeout_ms);

/* Read (reset) the call eventfd. */
void vrdma_queue_drain_call(struct vrdma_queue *q);

#endif /* VRDMA_LIBVRDMA_QUEUE_H */
