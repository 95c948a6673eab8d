/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * virtio_rdma: the guest kernel driver of the virtio-rdma device (id 42).
 * vrg_main.c: virtio probe, the control queue, the netdev, device and port
 * queries; vrg_verbs.c: PD, CQ, QP, MR, AH and the data path.
 */
#ifndef VRG_H
#define VRG_H

#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "vrg_abi.h"

/* Device GID entries 0 and 1 belong to the device: the kernel's entry k is
 * the device's entry k + VRG_GID_BASE. */
#define VRG_GID_BASE 2

/* A completion virtqueue's receive slots (one per ring entry, posted once
 * and reposted after each poll). */
struct vrg_cq_ring {
	struct vrg_cq_req *slot;
	unsigned int num;
};

struct vrg_dev {
	struct ib_device ib;
	struct virtio_device *vdev;
	struct net_device *netdev;
	struct vrg_config cfg;
	u32 max_cq, max_qp, vring_num;
	unsigned int nvqs;
	struct virtqueue **vqs;

	spinlock_t ctrl_lock;         /* the control virtqueue */
	struct vrg_cq_ring *cq_rings; /* by cqn (1..max_cq) */
	struct vrg_cq **cqs;          /* by cqn, under cq_lock */
	spinlock_t cq_lock;           /* also held while a CQ's handler runs */
	unsigned long *notify_done;   /* cqns whose REQ_NOTIFY_CQ was answered */
	struct xarray qps;            /* by qpn */
	u8 mac[ETH_ALEN];
};

struct vrg_ucontext {
	struct ib_ucontext ibuc;
};

struct vrg_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct vrg_cq {
	struct ib_cq ibcq;
	u32 cqn;
	spinlock_t lock;              /* its virtqueue */
	unsigned long flags;          /* VRG_CQ_ARMED */
	unsigned int arm_mark;        /* the ring's used position when armed */
	u16 arm_used;                 /* the device's used index when armed */
	struct work_struct fire;      /* the event of a completion polled while armed */
};

struct vrg_qp {
	struct ib_qp ibqp;
	u32 qpn, pair;
	spinlock_t sq_lock, rq_lock;  /* the pair's virtqueues */
	struct ib_qp_cap cap;
	enum ib_qp_state state;
};

struct vrg_mr {
	struct ib_mr ibmr;
	u32 mrn;
	u64 *pages;                   /* page array the REG_MR WR points to */
	struct ib_umem *umem;         /* a user MR's pinned pages */
	u32 npages, max_pages;
};

#define VRG_CQ_ARMED 0

struct vrg_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
};

static inline struct vrg_dev *to_vdev(struct ib_device *ib)
{
	return container_of(ib, struct vrg_dev, ib);
}
#define to_vpd(p) container_of(p, struct vrg_pd, ibpd)
#define to_vcq(p) container_of(p, struct vrg_cq, ibcq)
#define to_vqp(p) container_of(p, struct vrg_qp, ibqp)
#define to_vmr(p) container_of(p, struct vrg_mr, ibmr)
#define to_vah(p) container_of(p, struct vrg_ah, ibah)

/* Virtqueue layout: 0 control, cqn, then pair i's SQ and RQ. */
static inline struct virtqueue *vrg_cq_vq(struct vrg_dev *d, u32 cqn)
{
	return d->vqs[cqn];
}
static inline struct virtqueue *vrg_sq_vq(struct vrg_dev *d, u32 pair)
{
	return d->vqs[d->max_cq + 2 * pair - 1];
}
static inline struct virtqueue *vrg_rq_vq(struct vrg_dev *d, u32 pair)
{
	return d->vqs[d->max_cq + 2 * pair];
}

/* One control command; a negative errno, -EIO when the device refused it. */
int vrg_ctrl(struct vrg_dev *d, u8 cmd, const void *in, size_t in_len, void *out, size_t out_len);
/* REQ_NOTIFY_CQ without waiting for the answer (any context); when the
 * answer comes, vrg_cq_check() runs for the CQ. */
int vrg_ctrl_notify(struct vrg_dev *d, u32 cqn, u32 flags);

void vrg_cq_vq_done(struct virtqueue *vq);
void vrg_cq_check(struct vrg_dev *d, u32 cqn);
extern const struct ib_device_ops vrg_verbs_ops;

#endif
