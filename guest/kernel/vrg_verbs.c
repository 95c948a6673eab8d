// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * virtio_rdma verbs: PD, CQ, QP, MR and AH through the control queue; work
 * requests as elements of the QP's send / receive virtqueues; completions
 * from the CQ's virtqueue, whose slots the driver posts once and reposts
 * after each poll. User objects (udata) use the same kernel-owned queues: the
 * uverbs write commands route a user process's work requests and polls here.
 */
#include <linux/etherdevice.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/ib_verbs.h>

#include "vrg.h"

#define VRG_ACCESS_KNOWN (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			  IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND)

/* ---- PD ---- */

static int vrg_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	__le32 pdn;
	int rc;

	rc = vrg_ctrl(to_vdev(ibpd->device), VRG_CMD_CREATE_PD, NULL, 0, &pdn, sizeof(pdn));
	if (!rc)
		to_vpd(ibpd)->pdn = le32_to_cpu(pdn);
	return rc;
}

static int vrg_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	__le32 pdn = cpu_to_le32(to_vpd(ibpd)->pdn);

	return vrg_ctrl(to_vdev(ibpd->device), VRG_CMD_DESTROY_PD, &pdn, sizeof(pdn), NULL, 0);
}

/* ---- CQ ---- */

static int vrg_cq_post_slot(struct virtqueue *vq, struct vrg_cq_req *slot, gfp_t gfp)
{
	struct scatterlist sg;

	sg_init_one(&sg, slot, sizeof(*slot));
	return virtqueue_add_inbuf(vq, &sg, 1, slot, gfp);
}

/* The CQ virtqueue's slots: posted the first time the cqn is used; on reuse,
 * whatever an earlier CQ left in the ring is dropped and reposted. */
static int vrg_cq_ring_setup(struct vrg_dev *d, u32 cqn)
{
	struct vrg_cq_ring *ring = &d->cq_rings[cqn];
	struct virtqueue *vq = vrg_cq_vq(d, cqn);
	struct vrg_cq_req *e;
	unsigned int i, len;
	int rc;

	if (ring->slot) {
		while ((e = virtqueue_get_buf(vq, &len)))
			vrg_cq_post_slot(vq, e, GFP_KERNEL);
		virtqueue_kick(vq);
		return 0;
	}
	ring->num = virtqueue_get_vring_size(vq);
	ring->slot = kcalloc(ring->num, sizeof(*ring->slot), GFP_KERNEL);
	if (!ring->slot)
		return -ENOMEM;
	for (i = 0; i < ring->num; i++) {
		rc = vrg_cq_post_slot(vq, &ring->slot[i], GFP_KERNEL);
		if (rc)
			return rc; /* the posted ones stay: the ring is still usable */
	}
	virtqueue_kick(vq);
	return 0;
}

static void vrg_cq_fire(struct vrg_cq *cq);

/* A completion the consumer polled while the CQ was armed: its interrupt
 * finds nothing left on the ring (vring_interrupt only calls back for
 * unconsumed entries), so the event is raised from here. */
static void vrg_cq_fire_work(struct work_struct *work)
{
	struct vrg_cq *cq = container_of(work, struct vrg_cq, fire);
	struct vrg_dev *d = to_vdev(cq->ibcq.device);
	unsigned long flags;

	spin_lock_irqsave(&d->cq_lock, flags);
	if (d->cqs[cq->cqn] == cq)
		vrg_cq_fire(cq);
	spin_unlock_irqrestore(&d->cq_lock, flags);
}

static int vrg_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibcq->device);
	struct vrg_cq *cq = to_vcq(ibcq);
	__le32 cqe = cpu_to_le32(attr->cqe), cqn_le;
	unsigned long flags;
	u32 cqn;
	int rc;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > d->vring_num)
		return -EINVAL;
	rc = vrg_ctrl(d, VRG_CMD_CREATE_CQ, &cqe, sizeof(cqe), &cqn_le, sizeof(cqn_le));
	if (rc)
		return rc;
	cqn = le32_to_cpu(cqn_le);
	if (cqn < 1 || cqn > d->max_cq) {
		dev_err(&d->vdev->dev, "CREATE_CQ answered cqn %u\n", cqn);
		vrg_ctrl(d, VRG_CMD_DESTROY_CQ, &cqn_le, sizeof(cqn_le), NULL, 0);
		return -EPROTO;
	}
	rc = vrg_cq_ring_setup(d, cqn);
	if (rc) {
		vrg_ctrl(d, VRG_CMD_DESTROY_CQ, &cqn_le, sizeof(cqn_le), NULL, 0);
		return rc;
	}
	cq->cqn = cqn;
	cq->flags = 0;
	spin_lock_init(&cq->lock);
	INIT_WORK(&cq->fire, vrg_cq_fire_work);
	ibcq->cqe = attr->cqe;
	spin_lock_irqsave(&d->cq_lock, flags);
	d->cqs[cqn] = cq;
	spin_unlock_irqrestore(&d->cq_lock, flags);
	return 0;
}

static int vrg_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibcq->device);
	struct vrg_cq *cq = to_vcq(ibcq);
	__le32 cqn = cpu_to_le32(cq->cqn);
	unsigned long flags;

	spin_lock_irqsave(&d->cq_lock, flags);
	d->cqs[cq->cqn] = NULL;
	spin_unlock_irqrestore(&d->cq_lock, flags);
	cancel_work_sync(&cq->fire);
	return vrg_ctrl(d, VRG_CMD_DESTROY_CQ, &cqn, sizeof(cqn), NULL, 0);
}

/* The consumer's handler, once per arming. Runs under cq_lock, so that
 * destroy_cq (which takes it) waits for a running handler; the handler may
 * poll and re-arm (neither takes cq_lock). */
static void vrg_cq_fire(struct vrg_cq *cq)
{
	if (test_and_clear_bit(VRG_CQ_ARMED, &cq->flags) && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/* A completion virtqueue's interrupt: the device signals an armed CQ. */
void vrg_cq_vq_done(struct virtqueue *vq)
{
	struct vrg_dev *d = vq->vdev->priv;
	unsigned long flags;
	struct vrg_cq *cq;

	spin_lock_irqsave(&d->cq_lock, flags);
	cq = vq->index <= d->max_cq ? d->cqs[vq->index] : NULL;
	if (cq)
		vrg_cq_fire(cq);
	spin_unlock_irqrestore(&d->cq_lock, flags);
}

/* REQ_NOTIFY_CQ answered: a completion the device added since the arming
 * (polled or not) raised no interrupt if the device had not seen the
 * request yet; it is the event. */
void vrg_cq_check(struct vrg_dev *d, u32 cqn)
{
	unsigned long flags;
	struct vrg_cq *cq;
	bool added;

	spin_lock_irqsave(&d->cq_lock, flags);
	cq = d->cqs[cqn];
	if (cq && test_bit(VRG_CQ_ARMED, &cq->flags)) {
		spin_lock(&cq->lock);
		added = virtqueue_poll(vrg_cq_vq(d, cqn), cq->arm_mark);
		spin_unlock(&cq->lock);
		if (added)
			vrg_cq_fire(cq);
	}
	spin_unlock_irqrestore(&d->cq_lock, flags);
}

static bool vrg_wc_from_cqe(struct vrg_dev *d, const struct vrg_cq_req *e, struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(e->qp_num);
	struct vrg_qp *qp = xa_load(&d->qps, qpn);

	if (!qp)
		return false; /* its QP is gone (uverbs reads wc->qp) */
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(e->wr_id);
	wc->status = e->status;
	wc->opcode = e->opcode;
	wc->vendor_err = le32_to_cpu(e->vendor_err);
	wc->byte_len = le32_to_cpu(e->byte_len);
	wc->ex.imm_data = (__force __be32)e->ex;
	wc->qp = qp ? &qp->ibqp : NULL;
	wc->src_qp = le32_to_cpu(e->src_qp);
	wc->wc_flags = le32_to_cpu(e->wc_flags) & (IB_WC_GRH | IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE);
	wc->pkey_index = le16_to_cpu(e->pkey_index);
	wc->sl = e->sl;
	wc->port_num = 1;
	return true;
}

static int vrg_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct vrg_dev *d = to_vdev(ibcq->device);
	struct vrg_cq *cq = to_vcq(ibcq);
	struct virtqueue *vq = vrg_cq_vq(d, cq->cqn);
	struct vrg_cq_req *e;
	unsigned long flags;
	unsigned int len;
	int n = 0, reposted = 0, consumed = 0;
	unsigned int pos;

	spin_lock_irqsave(&cq->lock, flags);
	pos = virtqueue_enable_cb_prepare(vq); /* the next entry's index (split ring) */
	while (n < num && (e = virtqueue_get_buf(vq, &len))) {
		consumed++;
		if (len >= sizeof(*e) && vrg_wc_from_cqe(d, e, &wc[n]))
			n++;
		if (!vrg_cq_post_slot(vq, e, GFP_ATOMIC))
			reposted++;
	}
	if (reposted)
		virtqueue_kick(vq);
	/* the last entry consumed was added after the arming */
	if (consumed && test_bit(VRG_CQ_ARMED, &cq->flags) &&
	    (u16)(pos + consumed - 1 - cq->arm_used) < 0x8000)
		schedule_work(&cq->fire);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

static int vrg_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrg_dev *d = to_vdev(ibcq->device);
	struct vrg_cq *cq = to_vcq(ibcq);
	unsigned long irqf;
	int rc, missed = 0;

	spin_lock_irqsave(&cq->lock, irqf);
	cq->arm_mark = virtqueue_enable_cb_prepare(vrg_cq_vq(d, cq->cqn));
	cq->arm_used = virtio16_to_cpu(d->vdev,
				       READ_ONCE(virtqueue_get_vring(vrg_cq_vq(d, cq->cqn))->used->idx));
	/* completions not polled yet: the caller asked to know */
	if (flags & IB_CQ_REPORT_MISSED_EVENTS)
		missed = virtqueue_poll(vrg_cq_vq(d, cq->cqn), cq->arm_mark);
	set_bit(VRG_CQ_ARMED, &cq->flags);
	spin_unlock_irqrestore(&cq->lock, irqf);
	rc = vrg_ctrl_notify(d, cq->cqn,
			     (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ? 1 : 2);
	return rc ? rc : missed;
}

/* ---- QP ---- */

static int vrg_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	struct vrg_cmd_create_qp c = {};
	struct ib_qp_cap *cap = &init->cap;
	__le32 qpn_le;
	u32 qpn;
	int rc;

	if (init->srq || init->create_flags)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_GSI: c.qp_type = 1; break;
	case IB_QPT_RC: c.qp_type = 2; break;
	case IB_QPT_UC: c.qp_type = 3; break;
	case IB_QPT_UD: c.qp_type = 4; break;
	default: return -EOPNOTSUPP;
	}
	if (cap->max_send_wr > d->vring_num || cap->max_recv_wr > d->vring_num ||
	    cap->max_send_sge > le32_to_cpu(d->cfg.max_send_sge) ||
	    cap->max_recv_sge > le32_to_cpu(d->cfg.max_recv_sge) || cap->max_inline_data)
		return -EINVAL;
	c.pdn = cpu_to_le32(to_vpd(ibqp->pd)->pdn);
	c.sq_sig_type = init->sq_sig_type == IB_SIGNAL_ALL_WR ? 0 : 1;
	c.max_send_wr = cpu_to_le32(cap->max_send_wr);
	c.max_send_sge = cpu_to_le32(cap->max_send_sge);
	c.send_cqn = cpu_to_le32(to_vcq(init->send_cq)->cqn);
	c.max_recv_wr = cpu_to_le32(cap->max_recv_wr);
	c.max_recv_sge = cpu_to_le32(cap->max_recv_sge);
	c.recv_cqn = cpu_to_le32(to_vcq(init->recv_cq)->cqn);
	rc = vrg_ctrl(d, VRG_CMD_CREATE_QP, &c, sizeof(c), &qpn_le, sizeof(qpn_le));
	if (rc)
		return rc;
	qpn = le32_to_cpu(qpn_le);
	qp->qpn = qpn;
	qp->pair = qpn & VRG_QPN_PAIR_MASK;
	if (qp->pair < 1 || qp->pair > d->max_qp) {
		dev_err(&d->vdev->dev, "CREATE_QP answered qpn %#x\n", qpn);
		vrg_ctrl(d, VRG_CMD_DESTROY_QP, &qpn_le, sizeof(qpn_le), NULL, 0);
		return -EPROTO;
	}
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	qp->cap = *cap;
	qp->state = IB_QPS_RESET;
	ibqp->qp_num = qpn;
	rc = xa_err(xa_store(&d->qps, qpn, qp, GFP_KERNEL));
	if (rc)
		vrg_ctrl(d, VRG_CMD_DESTROY_QP, &qpn_le, sizeof(qpn_le), NULL, 0);
	return rc;
}

static int vrg_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	__le32 qpn = cpu_to_le32(qp->qpn);

	xa_erase(&d->qps, qp->qpn);
	return vrg_ctrl(d, VRG_CMD_DESTROY_QP, &qpn, sizeof(qpn), NULL, 0);
}

/* The destination MAC for the device: the core resolves a user AV through
 * the netdev, which (IFF_NOARP) answers with the device's own MAC; zero
 * tells the device to resolve it itself (ARP on its switch port). */
static void vrg_dmac(const struct vrg_dev *d, const u8 *dmac, u8 *out)
{
	if (ether_addr_equal(dmac, d->mac))
		eth_zero_addr(out);
	else
		memcpy(out, dmac, ETH_ALEN);
}

static void vrg_ah_to_wire(const struct vrg_dev *d, const struct rdma_ah_attr *ah,
			   struct vrg_ah_attr *w)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);

	memcpy(w->grh.dgid, grh->dgid.raw, 16);
	w->grh.flow_label = cpu_to_le32(grh->flow_label);
	w->grh.sgid_index = grh->sgid_index + VRG_GID_BASE;
	w->grh.hop_limit = grh->hop_limit;
	w->grh.traffic_class = grh->traffic_class;
	w->sl = rdma_ah_get_sl(ah);
	w->static_rate = rdma_ah_get_static_rate(ah);
	w->port_num = 1;
	w->ah_flags = 1; /* GRH: RoCE always has one */
	vrg_dmac(d, ah->roce.dmac, w->dmac);
}

#define VRG_QP_MASK_KNOWN (IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY | \
			   IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY | \
			   IB_QP_AV | IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | \
			   IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC | \
			   IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | \
			   IB_QP_CAP | IB_QP_DEST_QPN)

static int vrg_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			 struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	struct vrg_cmd_modify_qp *c;
	struct vrg_qp_attr *w;
	int rc;

	if (udata && (udata->inlen || udata->outlen))
		return -EOPNOTSUPP;
	if (mask & ~VRG_QP_MASK_KNOWN)
		return -EOPNOTSUPP;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	w = &c->attrs;
	c->qpn = cpu_to_le32(qp->qpn);
	c->attr_mask = cpu_to_le32(mask);
	w->qp_state = attr->qp_state;
	w->cur_qp_state = attr->cur_qp_state;
	w->path_mtu = attr->path_mtu;
	w->qkey = cpu_to_le32(attr->qkey);
	w->rq_psn = cpu_to_le32(attr->rq_psn);
	w->sq_psn = cpu_to_le32(attr->sq_psn);
	w->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	w->qp_access_flags = cpu_to_le32(attr->qp_access_flags);
	w->pkey_index = cpu_to_le16(attr->pkey_index);
	w->en_sqd_async_notify = attr->en_sqd_async_notify;
	w->max_rd_atomic = attr->max_rd_atomic;
	w->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	w->min_rnr_timer = attr->min_rnr_timer;
	w->port_num = attr->port_num;
	w->timeout = attr->timeout;
	w->retry_cnt = attr->retry_cnt;
	w->rnr_retry = attr->rnr_retry;
	w->rate_limit = cpu_to_le32(attr->rate_limit);
	w->cap.max_send_wr = cpu_to_le32(attr->cap.max_send_wr);
	w->cap.max_recv_wr = cpu_to_le32(attr->cap.max_recv_wr);
	w->cap.max_send_sge = cpu_to_le32(attr->cap.max_send_sge);
	w->cap.max_recv_sge = cpu_to_le32(attr->cap.max_recv_sge);
	w->cap.max_inline_data = cpu_to_le32(attr->cap.max_inline_data);
	if (mask & IB_QP_AV)
		vrg_ah_to_wire(d, &attr->ah_attr, &w->ah_attr);
	rc = vrg_ctrl(d, VRG_CMD_MODIFY_QP, c, sizeof(*c), NULL, 0);
	if (!rc && (mask & IB_QP_STATE))
		qp->state = attr->qp_state;
	kfree(c);
	return rc;
}

static int vrg_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			struct ib_qp_init_attr *init)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	struct vrg_cmd_query_qp c = { .qpn = cpu_to_le32(qp->qpn), .attr_mask = cpu_to_le32(mask) };
	struct vrg_qp_attr *w = kzalloc(sizeof(*w), GFP_KERNEL);
	int rc;

	if (!w)
		return -ENOMEM;
	rc = vrg_ctrl(d, VRG_CMD_QUERY_QP, &c, sizeof(c), w, sizeof(*w));
	if (!rc) {
		memset(attr, 0, sizeof(*attr));
		attr->qp_state = w->qp_state;
		attr->cur_qp_state = w->cur_qp_state;
		attr->path_mtu = w->path_mtu;
		attr->qkey = le32_to_cpu(w->qkey);
		attr->rq_psn = le32_to_cpu(w->rq_psn);
		attr->sq_psn = le32_to_cpu(w->sq_psn);
		attr->dest_qp_num = le32_to_cpu(w->dest_qp_num);
		attr->qp_access_flags = le32_to_cpu(w->qp_access_flags);
		attr->pkey_index = le16_to_cpu(w->pkey_index);
		attr->max_rd_atomic = w->max_rd_atomic;
		attr->max_dest_rd_atomic = w->max_dest_rd_atomic;
		attr->min_rnr_timer = w->min_rnr_timer;
		attr->port_num = w->port_num;
		attr->timeout = w->timeout;
		attr->retry_cnt = w->retry_cnt;
		attr->rnr_retry = w->rnr_retry;
		attr->cap = qp->cap;
		memset(init, 0, sizeof(*init));
		init->qp_type = ibqp->qp_type;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->cap = qp->cap;
	}
	kfree(w);
	return rc;
}

/* ---- work requests ---- */

/* Elements the device has consumed come back on the used ring. */
static void vrg_reclaim(struct virtqueue *vq)
{
	unsigned int len;
	void *buf;

	while ((buf = virtqueue_get_buf(vq, &len)))
		kfree(buf);
}

static int vrg_sq_elem(struct ib_qp *ibqp, const struct ib_send_wr *wr, struct vrg_sq_req *e)
{
	int i;

	e->num_sge = cpu_to_le32(wr->num_sge);
	e->send_flags = cpu_to_le32(wr->send_flags);
	e->opcode = cpu_to_le32(wr->opcode);
	e->wr_id = cpu_to_le64(wr->wr_id);
	e->ex = (__force __le32)wr->ex.imm_data; /* or invalidate_rkey: same place */
	if (wr->opcode == IB_WR_LOCAL_INV || wr->opcode == IB_WR_SEND_WITH_INV ||
	    wr->opcode == IB_WR_RDMA_READ_WITH_INV)
		e->ex = cpu_to_le32(wr->ex.invalidate_rkey);
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		e->wr.rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		e->wr.rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		e->wr.atomic.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		e->wr.atomic.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		e->wr.atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		e->wr.atomic.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		break;
	case IB_WR_REG_MR:
		e->wr.reg.mrn = cpu_to_le32(to_vmr(reg_wr(wr)->mr)->mrn);
		e->wr.reg.key = cpu_to_le32(reg_wr(wr)->key);
		e->wr.reg.access = cpu_to_le32(reg_wr(wr)->access);
		/* the device reads the page array map_mr_sg filled when it
		 * runs the WR: nothing to wait for here */
		e->wr.reg.iova = cpu_to_le64(reg_wr(wr)->mr->iova);
		e->wr.reg.length = cpu_to_le64(reg_wr(wr)->mr->length);
		e->wr.reg.pages = cpu_to_le64(virt_to_phys(to_vmr(reg_wr(wr)->mr)->pages));
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		break;
	default:
		return -EINVAL;
	}
	if (ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_GSI) {
		const struct ib_ud_wr *ud = ud_wr(wr);
		const struct rdma_ah_attr *ah = &to_vah(ud->ah)->attr;
		const struct ib_global_route *grh = rdma_ah_read_grh(ah);
		struct vrg_av *av = &e->wr.ud.av;

		e->wr.ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
		e->wr.ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
		av->port = cpu_to_le32(1);
		av->pdn = cpu_to_le32(to_vpd(ud->ah->pd)->pdn);
		av->sl_tclass_flowlabel = cpu_to_le32((u32)rdma_ah_get_sl(ah) << 28 |
						      (u32)grh->traffic_class << 20 |
						      (grh->flow_label & 0xfffff));
		memcpy(av->dgid, grh->dgid.raw, 16);
		av->gid_index = grh->sgid_index + VRG_GID_BASE;
		av->static_rate = rdma_ah_get_static_rate(ah);
		av->hop_limit = grh->hop_limit;
		vrg_dmac(to_vdev(ibqp->device), ah->roce.dmac, av->dmac);
	}
	for (i = 0; i < wr->num_sge; i++) {
		e->sg_list[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		e->sg_list[i].length = cpu_to_le32(wr->sg_list[i].length);
		e->sg_list[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	return 0;
}

static int vrg_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad_wr)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	struct virtqueue *vq = vrg_sq_vq(d, qp->pair);
	struct vrg_sq_req *e;
	struct scatterlist sg;
	unsigned long flags;
	int rc = 0, posted = 0;
	size_t len;

	spin_lock_irqsave(&qp->sq_lock, flags);
	vrg_reclaim(vq);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge ||
		    (wr->send_flags & IB_SEND_INLINE)) {
			rc = -EINVAL;
			break;
		}
		len = sizeof(*e) + wr->num_sge * sizeof(e->sg_list[0]);
		e = kzalloc(len, GFP_ATOMIC);
		if (!e) {
			rc = -ENOMEM;
			break;
		}
		rc = vrg_sq_elem(ibqp, wr, e);
		if (!rc) {
			sg_init_one(&sg, e, len);
			rc = virtqueue_add_outbuf(vq, &sg, 1, e, GFP_ATOMIC);
			if (rc == -ENOSPC)
				rc = -ENOMEM;
		}
		if (rc) {
			kfree(e);
			break;
		}
		posted++;
	}
	if (posted)
		virtqueue_kick(vq);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (rc)
		*bad_wr = wr;
	return rc;
}

static int vrg_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	struct vrg_dev *d = to_vdev(ibqp->device);
	struct vrg_qp *qp = to_vqp(ibqp);
	struct virtqueue *vq = vrg_rq_vq(d, qp->pair);
	struct vrg_rq_req *e;
	struct scatterlist sg;
	unsigned long flags;
	int rc = 0, posted = 0, i;
	size_t len;

	spin_lock_irqsave(&qp->rq_lock, flags);
	vrg_reclaim(vq);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_recv_sge) {
			rc = -EINVAL;
			break;
		}
		len = sizeof(*e) + wr->num_sge * sizeof(e->sg_list[0]);
		e = kzalloc(len, GFP_ATOMIC);
		if (!e) {
			rc = -ENOMEM;
			break;
		}
		e->num_sge = cpu_to_le32(wr->num_sge);
		e->wr_id = cpu_to_le64(wr->wr_id);
		for (i = 0; i < wr->num_sge; i++) {
			e->sg_list[i].addr = cpu_to_le64(wr->sg_list[i].addr);
			e->sg_list[i].length = cpu_to_le32(wr->sg_list[i].length);
			e->sg_list[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
		}
		sg_init_one(&sg, e, len);
		rc = virtqueue_add_outbuf(vq, &sg, 1, e, GFP_ATOMIC);
		if (rc) {
			kfree(e);
			rc = rc == -ENOSPC ? -ENOMEM : rc;
			break;
		}
		posted++;
	}
	if (posted)
		virtqueue_kick(vq);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (rc)
		*bad_wr = wr;
	return rc;
}

/* ---- AH: kept in the driver, its address vector goes into each UD WR ---- */

static int vrg_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init, struct ib_udata *udata)
{
	if (!(rdma_ah_get_ah_flags(init->ah_attr) & IB_AH_GRH))
		return -EINVAL;
	to_vah(ibah)->attr = *init->ah_attr;
	to_vah(ibah)->attr.grh.sgid_attr = NULL; /* only its index is used */
	return 0;
}

static int vrg_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* ---- MR ---- */

static struct ib_mr *vrg_mr_done(struct vrg_mr *mr, const struct vrg_rsp_mr *r)
{
	mr->mrn = le32_to_cpu(r->mrn);
	mr->ibmr.lkey = le32_to_cpu(r->lkey);
	mr->ibmr.rkey = le32_to_cpu(r->rkey);
	return &mr->ibmr;
}

static struct ib_mr *vrg_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct vrg_cmd_get_dma_mr c = {
		.pdn = cpu_to_le32(to_vpd(ibpd)->pdn),
		.access_flags = cpu_to_le32(access & VRG_ACCESS_KNOWN),
	};
	struct vrg_rsp_mr r;
	struct vrg_mr *mr;
	int rc;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	rc = vrg_ctrl(to_vdev(ibpd->device), VRG_CMD_GET_DMA_MR, &c, sizeof(c), &r, sizeof(r));
	if (rc) {
		kfree(mr);
		return ERR_PTR(rc);
	}
	return vrg_mr_done(mr, &r);
}

static struct ib_mr *vrg_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type, u32 max_num_sg)
{
	struct vrg_cmd_create_mr c = {
		.pdn = cpu_to_le32(to_vpd(ibpd)->pdn),
		/* the most a REG_MR work request may grant later */
		.access_flags = cpu_to_le32(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
					    IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC),
		.max_num_sg = cpu_to_le32(max_num_sg),
	};
	struct vrg_rsp_mr r;
	struct vrg_mr *mr;
	int rc;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > PAGE_SIZE / sizeof(u64))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kzalloc(PAGE_SIZE, GFP_KERNEL); /* one page: one region for the device */
	if (!mr->pages) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->max_pages = max_num_sg;
	rc = vrg_ctrl(to_vdev(ibpd->device), VRG_CMD_CREATE_MR, &c, sizeof(c), &r, sizeof(r));
	if (rc) {
		kfree(mr->pages);
		kfree(mr);
		return ERR_PTR(rc);
	}
	return vrg_mr_done(mr, &r);
}

static int vrg_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrg_mr *mr = to_vmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/* Called from atomic context (blk-mq submission): only fills the page
 * array; the REG_MR work request hands it to the device. */
static int vrg_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
			 unsigned int *sg_offset)
{
	struct vrg_mr *mr = to_vmr(ibmr);

	if (ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, nents, sg_offset, vrg_set_page);
}

static int vrg_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrg_mr *mr = to_vmr(ibmr);
	__le32 mrn = cpu_to_le32(mr->mrn);
	int rc = vrg_ctrl(to_vdev(ibmr->device), VRG_CMD_DEREG_MR, &mrn, sizeof(mrn), NULL, 0);

	if (rc)
		return rc;
	ib_umem_release(mr->umem);
	kfree(mr->pages);
	kfree(mr);
	return 0;
}

/* User memory: the pages pinned through ib_umem, sent to the device as
 * REG_USER_MR's page array (one 4096-byte page per entry, from virt's page
 * on). The array is kmalloc'ed (physically contiguous, one region of guest
 * memory) and freed after the answer: the device copies it. */
static struct ib_mr *vrg_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length, u64 virt,
				     int access, struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ibpd->device);
	struct vrg_cmd_reg_user_mr c = {};
	struct ib_block_iter biter;
	struct vrg_rsp_mr r;
	struct vrg_mr *mr;
	size_t npages, i = 0;
	__le64 *pages;
	int rc;

	BUILD_BUG_ON(PAGE_SIZE != 4096); /* the device's page size */
	access &= ~IB_ACCESS_OPTIONAL; /* hints the device does not need */
	if (access & ~VRG_ACCESS_KNOWN)
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || (start & ~PAGE_MASK) != (virt & ~PAGE_MASK))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		rc = PTR_ERR(mr->umem);
		kfree(mr);
		return ERR_PTR(rc);
	}
	mr->umem->iova = virt; /* the blocks are counted from virt's page */
	npages = ib_umem_num_dma_blocks(mr->umem, PAGE_SIZE);
	pages = npages > U32_MAX ? NULL :
		kmalloc_array(npages, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
	if (!pages) {
		rc = -ENOMEM;
		goto fail;
	}
	rdma_umem_for_each_dma_block(mr->umem, &biter, PAGE_SIZE)
		if (i < npages)
			pages[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
	c.pdn = cpu_to_le32(to_vpd(ibpd)->pdn);
	c.access_flags = cpu_to_le32(access);
	c.start = cpu_to_le64(start);
	c.length = cpu_to_le64(length);
	c.virt_addr = cpu_to_le64(virt);
	c.pages = cpu_to_le64(virt_to_phys(pages));
	c.npages = cpu_to_le32(i);
	rc = vrg_ctrl(d, VRG_CMD_REG_USER_MR, &c, sizeof(c), &r, sizeof(r));
	if (rc == -ETIMEDOUT) {
		/* the device may still read the array and map the pages: both
		 * stay (leaked) rather than reused under it */
		kfree(mr);
		return ERR_PTR(rc);
	}
	kfree(pages);
	if (rc)
		goto fail;
	mr->ibmr.iova = virt;
	mr->ibmr.length = length;
	return vrg_mr_done(mr, &r);
fail:
	ib_umem_release(mr->umem);
	kfree(mr);
	return ERR_PTR(rc);
}

/* ---- user context: nothing is mapped, the uverbs commands do the work ---- */

static int vrg_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	return 0;
}

static void vrg_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

const struct ib_device_ops vrg_verbs_ops = {
	.alloc_ucontext = vrg_alloc_ucontext,
	.dealloc_ucontext = vrg_dealloc_ucontext,
	.alloc_pd = vrg_alloc_pd,
	.dealloc_pd = vrg_dealloc_pd,
	.create_cq = vrg_create_cq,
	.destroy_cq = vrg_destroy_cq,
	.poll_cq = vrg_poll_cq,
	.req_notify_cq = vrg_req_notify_cq,
	.create_qp = vrg_create_qp,
	.modify_qp = vrg_modify_qp,
	.query_qp = vrg_query_qp,
	.destroy_qp = vrg_destroy_qp,
	.post_send = vrg_post_send,
	.post_recv = vrg_post_recv,
	.create_ah = vrg_create_ah,
	.create_user_ah = vrg_create_ah,
	.destroy_ah = vrg_destroy_ah,
	.get_dma_mr = vrg_get_dma_mr,
	.alloc_mr = vrg_alloc_mr,
	.map_mr_sg = vrg_map_mr_sg,
	.reg_user_mr = vrg_reg_user_mr,
	.dereg_mr = vrg_dereg_mr,
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrg_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrg_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrg_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrg_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ah, vrg_ah, ibah),
};
