/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma-evil: a small RDMA driver with the verbs extensions (rdma.c), the
 * base of the extension attacks (ext.c).
 */
#ifndef VRDMA_EVIL_RDMA_H
#define VRDMA_EVIL_RDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "evil.h"
#include "vrdma/virtio_net_roce.h"

#define RDEV_ARENA_SIZE (4u << 20)
#define RDEV_RING_NUM 128
#define RDEV_RING_SLOT (16u << 10)
#define RDEV_CTRL_IN_MAX 4096
#define RDEV_CTRL_OUT_MAX 1024
#define RDEV_CTRL_ACK_OFF 8192
#define RDEV_CQE_SLOT 64
#define RDEV_EV_SLOTS 64
#define RDEV_SQ_SLOTS 64       /* 32 per QP */
#define RDEV_SQE_SLOT 1024
#define RDEV_RQ_SLOTS 64
#define RDEV_DATA_SIZE (256u << 10)
#define RDEV_SRC_OFF 0          /* offsets in the data MR */
#define RDEV_DST_OFF (64u << 10)
#define RDEV_RECV_OFF (128u << 10)
#define RDEV_ATOM_OFF (192u << 10)

/* rdev_open / rdev_up flags */
#define RDEV_F_NO_EXT 0x1       /* negotiate VIRTIO_NET_F_ROCE only */
#define RDEV_F_SRQ 0x2          /* QP B receives from an SRQ (if the device has them) */
#define RDEV_F_NO_RECV_POST 0x4 /* no receive buffers for B */
#define RDEV_F_NO_EVQ_POST 0x8  /* no event buffers */
#define RDEV_F_NO_CQ_POST 0x10  /* no completion buffers */

struct evil_rring {
	unsigned idx;
	struct vq_drv vq;
	uint8_t *mem;
	int kick, call, err;
	bool up;
};

struct evil_rdev {
	const struct evil_opts *o;
	struct vhost_client vc;
	unsigned flags;
	uint64_t features;
	uint8_t mac[6];
	uint8_t gid0[16];
	uint32_t qps, cqs, srqs;
	uint8_t *arena;
	size_t arena_size, arena_next;
	int arena_fd;
	struct evil_rring ctrl, eventq, cq, srq, sq[2], rq[2];
	uint8_t *ctrlbuf, *ind, *cqbufs, *evbufs, *sqbufs, *rqbufs, *scratch, *data;
	unsigned sq_next[2];
	struct virtio_rdma_ack_query_device_ext dev;
	uint64_t caps;
	bool atomics, mw, mw2, memmgt, has_srq;
	uint32_t pdn, cqn, srqn, qpn[2];
	uint32_t data_mrn, data_lkey, data_rkey, mr_access, qp_access;
};

static inline uint32_t rdev_vq_eventq(const struct evil_rdev *d)
{
	return vrdma_vq_eventq(1, d->cqs, d->qps);
}

static inline uint32_t rdev_vq_srq(const struct evil_rdev *d, uint32_t s)
{
	return vrdma_vq_srq(1, d->cqs, d->qps, s);
}

/* Connect, negotiate, share the arena, bring everything up (rdev_up).
 * Returns 0 or -errno (message printed). */
int rdev_open(struct evil_rdev *d, const struct evil_opts *o, unsigned flags);
/* Rings and objects on a negotiated device. Returns 0 or -errno. */
int rdev_up(struct evil_rdev *d, unsigned flags);
/* RESET_DEVICE on the same connection, negotiate, rdev_up. Returns 0 or -errno. */
int rdev_reset_up(struct evil_rdev *d, unsigned flags);
void rdev_close(struct evil_rdev *d);

/* SET_VRING_* for ring r at virtqueue index idx (fresh ring memory), enabled.
 * Returns 0 or -errno. */
int rdev_ring_setup(struct evil_rdev *d, struct evil_rring *r, unsigned idx);
void rdev_kick(struct evil_rring *r);
/* 1 when r has a used entry / its error eventfd fired within timeout_ms, else 0. */
int rdev_wait_used(struct evil_rring *r, int timeout_ms);
int rdev_wait_err(struct evil_rring *r, int timeout_ms);

/* A control command with exactly in_len bytes of data and room for out_len
 * bytes of ack data. Returns the ack byte (VIRTIO_NET_OK / _ERR) or -errno. */
int rdev_cmd_raw(struct evil_rdev *d, uint8_t cls, uint8_t cmd, const void *in, size_t in_len,
		 void *out, size_t out_len);
int rdev_cmd(struct evil_rdev *d, uint8_t cmd, const void *in, size_t in_len, void *out,
	     size_t out_len);
/* MODIFY_QP of qpn with mask and the attributes of m. Returns the ack or -errno. */
int rdev_modify(struct evil_rdev *d, uint32_t qpn, uint32_t mask,
		const struct virtio_rdma_cmd_modify_qp *m);
/* QP which (0 = A, 1 = B) through RESET back to RTS, connected to the other.
 * Returns 0 or -EIO. */
int rdev_connect(struct evil_rdev *d, int which);

/* Post n receive requests (one 4 KiB SGE in the data MR) on r (B's
 * receive queue or the SRQ) and kick. */
void rdev_post_recvs(struct evil_rdev *d, struct evil_rring *r, unsigned n);
/* Post len raw bytes as one send element of QP which. Returns 0 or -errno. */
int rdev_post_send_raw(struct evil_rdev *d, int which, const void *req, size_t len);
/* Post wr followed by nsge SGEs. Returns 0 or -errno. */
int rdev_post_send(struct evil_rdev *d, int which, const struct virtio_rdma_sq_req_ext *wr,
		   const struct virtio_rdma_sge *sge, unsigned nsge);
/* Next completion (the buffer is given back). Returns 0, -ETIMEDOUT, -EIO. */
int rdev_poll_cq(struct evil_rdev *d, struct virtio_rdma_cq_req_ext *wc, int timeout_ms);
/* Completions until the one of wr_id. Returns 0 or -errno. */
int rdev_wait_wc(struct evil_rdev *d, uint64_t wr_id, struct virtio_rdma_cq_req_ext *wc);
/* Give event buffer i (len bytes) to the device (not published). */
void rdev_ev_post(struct evil_rdev *d, unsigned i, uint32_t len);
/* Next used entry of the event queue: *ev (zeros if shorter than 16), its
 * used length; returns the buffer index or -ETIMEDOUT. */
int rdev_next_event(struct evil_rdev *d, struct virtio_rdma_event *ev, uint32_t *used_len,
		    int timeout_ms);
/* RDMA WRITE of 8 KiB from A to B through the data MR, bytes compared.
 * Returns 0 or -errno (message printed). */
int rdev_probe(struct evil_rdev *d, uint32_t seed);

#endif /* VRDMA_EVIL_RDMA_H */
