/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma device state (private). See include/vrdma/vrdma.h for the public
 * API and its threading rules.
 *
 * Locking: dev->lock (recursive) serialises the whole control path: the
 * vhost-user socket, the control queue, the shm allocator, the queue table.
 * The process-wide registry of shared application ranges (mem_share.c) has
 * its own lock, always taken after dev->lock. The data path takes no lock.
 */
#ifndef VRDMA_LIBVRDMA_DEV_H
#define VRDMA_LIBVRDMA_DEV_H

#include <linux/virtio_net.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "libvrdma/queue.h"
#include "libvrdma/shm.h"
#include "vhost/vhost_client.h"
#include "vrdma/virtio_net_roce.h"
#include "vrdma/virtio_rdma.h"
#include "vrdma/vrdma.h"

/* RoCE extension fields of the config space (include/vrdma/virtio_net_roce.h):
 * le32 max_rdma_qps, le32 max_rdma_cqs right after supported_hash_types. */
#define VRDMA_CFG_MAX_RDMA_QPS_OFF offsetof(struct virtio_net_roce_config, max_rdma_qps)
#define VRDMA_CFG_MAX_RDMA_CQS_OFF offsetof(struct virtio_net_roce_config, max_rdma_cqs)
#define VRDMA_CFG_ROCE_SIZE sizeof(struct virtio_net_roce_config)
#define VRDMA_MAX_RDMA_QUEUES VIRTIO_NET_ROCE_MAX_QPS
/* With VIRTIO_NET_F_ROCE_EXT offered: the 40-byte layout, max_rdma_srqs. */
#define VRDMA_CFG_MAX_RDMA_SRQS_OFF offsetof(struct virtio_net_roce_ext_config, max_rdma_srqs)
#define VRDMA_CFG_ROCE_EXT_SIZE sizeof(struct virtio_net_roce_ext_config)
_Static_assert(offsetof(struct virtio_net_roce_config, max_rdma_qps) ==
		       offsetof(struct virtio_net_config, supported_hash_types) + 4,
	       "RoCE config fields follow supported_hash_types");
_Static_assert(VIRTIO_NET_ROCE_MAX_QPS == VIRTIO_NET_ROCE_MAX_CQS, "limits");

/* Ring indexes of the single queue pair and the control queue. */
#define VRDMA_NET_RXQ 0
#define VRDMA_NET_TXQ 1
#define VRDMA_NET_CTRLQ 2

/* virtio_net_hdr_v1 (VERSION_1: always 12 bytes, num_buffers included). */
#define VRDMA_NET_HDR_LEN 12
#define VRDMA_ETH_HLEN 14

struct vrdma_arena {
	struct vrdma_arena *next;
	uint8_t *base;
	size_t size;
	int fd;
	struct vrdma_free_ext {
		size_t off, len;
	} *free;                  /* sorted by off, coalesced */
	unsigned nfree, free_cap;
};

struct vrdma_net_rx {
	struct vrdma_queue *q;
	uint8_t *bufs;            /* num buffers of buf_size */
	size_t buf_size;          /* hdr + MTU + 14, rounded up */
	unsigned unpublished;     /* re-posted buffers not yet published */
	unsigned idle_polls;      /* empty polls since the last arm */
	bool armed;               /* interrupts enabled, eventfd drained */
	uint64_t frames, bytes, bad, truncated;
};

struct vrdma_net_tx {
	struct vrdma_queue *q;
	uint8_t *bufs;
	size_t buf_size;
	uint16_t *free_stack;     /* free buffer indexes */
	unsigned nfree;
	uint64_t frames, bytes, full;
};

struct vrdma_ctrl {
	struct vrdma_queue *q;
	uint8_t *buf;             /* VRDMA_CTRL_BUF bytes of shm */
	bool broken;              /* a command timed out: buffers still owned */
	uint64_t cmds, errors;
};
#define VRDMA_CTRL_BUF 4096

struct vrdma_dev {
	pthread_mutex_t lock;     /* recursive; control path */
	struct vhost_client vc;
	atomic_bool dead;         /* data-path view of "connection gone" */
	struct vrdma_dev_opts opts;
	int timeout_ms;

	uint64_t dev_features;    /* offered */
	uint64_t features;        /* negotiated (without PROTOCOL_FEATURES) */
	uint64_t protocol_features;
	uint8_t status;           /* last SET_STATUS value */
	uint8_t mac[6];
	uint16_t mtu;
	uint32_t max_rdma_qps, max_rdma_cqs;
	uint32_t max_rdma_srqs;   /* with VIRTIO_NET_F_ROCE_EXT (0..16384) */
	uint16_t ring_size;
	bool event_idx, indirect, wide_index;

	/* Device model: the standalone virtio-rdma device (virtio id 42:
	 * control queue 0, no Ethernet queues; docs/design.md "libvrdma
	 * device models") instead of virtio-net with RoCE. */
	bool virtio_rdma;
	struct virtio_rdma_dev_config rdma_cfg; /* its bytes 0..127 */

	/* memory the back-end knows */
	struct vrdma_mreg *mregs;
	unsigned nmregs, mregs_cap;
	unsigned max_mem_slots;
	struct vrdma_arena *arenas;
	size_t next_arena_size;
	uint64_t shm_bytes;

	/* rings by index (sparse) */
	struct vrdma_queue **queues;
	unsigned queues_cap;

	struct vrdma_net_rx rx;
	struct vrdma_net_tx tx;
	struct vrdma_ctrl ctrl;

	/* RDMA part (src/libvrdma, vrdma_rdma.h): its state, and a destructor
	 * vrdma_dev_close() calls with the lock held, after the device reset
	 * (dead is set: nothing may talk to the back-end) and before shares,
	 * queues and shared memory are freed. */
	void *rdma;
	void (*rdma_destroy)(struct vrdma_dev *dev);

	int epfd;                 /* vrdma_dev_event_fd */
	struct vrdma_mem_share *shares; /* this device's handles (mem_share.c) */
	bool registered;          /* in the process-wide device list */
	struct vrdma_dev *next_dev;
};

static inline void vrdma_dev_lock(struct vrdma_dev *dev) { pthread_mutex_lock(&dev->lock); }
static inline void vrdma_dev_unlock(struct vrdma_dev *dev) { pthread_mutex_unlock(&dev->lock); }

static inline bool vrdma_dev_is_dead(const struct vrdma_dev *dev)
{
	return atomic_load_explicit(&dev->dead, memory_order_relaxed);
}

/* vrdma_dev_open on an already connected stream socket (tests, fuzzing,
 * socket activation). Takes ownership of fd in every case. Returns the
 * device or NULL with errno set. */
struct vrdma_dev *vrdma_dev_open_fd(int fd, const struct vrdma_dev_opts *opts);

/* Mark the device dead (idempotent; any thread). */
void vrdma_dev_mark_dead(struct vrdma_dev *dev);

/* After a vhost-user call (lock held): propagate a dead connection to the
 * data-path flag and map the result: returns rc unchanged. */
int vrdma_dev_vc_result(struct vrdma_dev *dev, int rc);

/* Lock-free liveness probe of the socket (HUP/RDHUP/ERR only, never reads:
 * a reply in flight on the control path is not mistaken for death). Returns
 * 0 or -ENOTCONN. */
int vrdma_dev_probe(struct vrdma_dev *dev);

/* A wait's poll() timeout toward deadline: none (-1) when timeout_ms < 0,
 * and at most cap_ms (>= 0; -1: no cap) when it must look again by itself. */
static inline int vrdma_wait_ms(int timeout_ms, uint64_t deadline, uint64_t now, int cap_ms)
{
	int ms = timeout_ms < 0 ? -1 : ms_until(deadline, now);

	return cap_ms < 0 ? ms : ms < 0 ? cap_ms : MIN(ms, cap_ms);
}

/* poll() p[0..n) (n >= 1) for wait_ms; p[0] is set here to the back-end's
 * socket, the caller fills p[1..n). Returns poll's count (0 also for a signal),
 * -errno, or -ENOTCONN once the back-end hung up (the device is dead). */
int vrdma_dev_poll(struct vrdma_dev *dev, struct pollfd *p, nfds_t n, int wait_ms);

/* The control queue's ring: 0 on a virtio-rdma device, 2 on virtio-net. */
static inline unsigned vrdma_dev_ctrl_vq(const struct vrdma_dev *dev)
{
	return dev->virtio_rdma ? 0 : VRDMA_NET_CTRLQ;
}

/* Net part (net.c). */
int vrdma_net_setup(struct vrdma_dev *dev);
void vrdma_net_destroy(struct vrdma_dev *dev);
/* Control part (ctrl.c). */
int vrdma_ctrl_setup(struct vrdma_dev *dev);
void vrdma_ctrl_destroy(struct vrdma_dev *dev);

/* Shared application memory (mem_share.c): add a device to the process-wide
 * list (fork handling: the child closes its copy of the socket); remove it,
 * dropping every share handle it still has without telling the back-end
 * (close path, device lock held, device already reset). */
void vrdma_mem_dev_register(struct vrdma_dev *dev);
void vrdma_mem_dev_unregister(struct vrdma_dev *dev);

#endif /* VRDMA_LIBVRDMA_DEV_H */
