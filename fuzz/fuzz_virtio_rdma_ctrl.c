/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the control path of the virtio-rdma device model
 * (src/backend/virtio_rdma_ctrl.c over the RoCE core) through the shared
 * harness (ctrl_harness.h: records, memory, common checks). Commands 0 and
 * 19..31 are unknown; the region's page list is the target of REG_USER_MR /
 * MAP_MR_SG page tables. A device-side action is a reset, an async QP error,
 * a CQ notification check or an MR translation. After every step reference
 * counts equal the objects that hold them and registered pages add up.
 */
#include "backend/virtio_rdma_dev.h"
#include "ctrl_harness.h"

static void check_invariants(const struct rres_dev *rd)
{
	uint64_t pd_refs = 0, cq_refs = 0, pages = 0, holders = 0;
	uint32_t i, n;

	for (i = 0, n = 0; i < rd->mrs.size; i++) {
		const struct rres_mr *mr = rd->mrs.slot[i];

		if (!mr)
			continue;
		n++;
		check_mr(rd, mr, i, &pages, &holders);
		if (mr->type == RRES_MR_DMA && (mr->access & ~(uint32_t)VIRTIO_IB_ACCESS_LOCAL_WRITE))
			die("remote dma mr");
	}
	if (n != rd->mrs.used || pages != rd->mr_pages || pages > rd->max_mr_pages)
		die("mr count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->qps.size; i++) {
		const struct rres_qp *qp = rd->qps.slot[i];

		if (!qp)
			continue;
		n++;
		if (qp->index != i || virtio_rdma_dev_qp_pair(qp->qpn) != i || i == 0 ||
		    rres_qp_lookup(rd, qp->qpn) != qp)
			die("qp");
		if (qp->attr.qp_state > VIRTIO_IB_QPS_ERR || qp->srq)
			die("qp state");
		if (qp->sq_vq != virtio_rdma_dev_vq_sq(rd->max_rdma_cqs, i) ||
		    qp->rq_vq != virtio_rdma_dev_vq_rq(rd->max_rdma_cqs, i) ||
		    rres_ring_qp(rd, qp->sq_vq, NULL) != qp)
			die("qp rings");
	}
	if (n != rd->qps.used)
		die("qp count");
	pd_refs += n;
	cq_refs = 2ull * n;
	if (rd->ahs.used || rd->srqs.used)
		die("objects the model cannot create");
	check_refs(rd, pd_refs, cq_refs, holders);
}

static void device_action(struct rres_dev *rd, const uint8_t *d, size_t len)
{
	uint32_t a = action_arg(d, len);

	if (!len)
		return;
	switch (d[0] % 4) {
	case 0:
		rres_dev_reset(rd);
		virtio_rdma_dev_setup(rd);
		break;
	case 1:
		act_qp_state(rd, a, VIRTIO_IB_QPS_ERR);
		break;
	case 2:
		act_cq_notify(rd, a, d, len);
		break;
	default:
		mr_translate(rd, rres_mr_lookup(rd, a), d, len);
		break;
	}
}

static void device_config(struct rres_dev_cfg *cfg)
{
	cfg->max_rdma_qps = 6;
	cfg->max_rdma_cqs = 3;
	cfg->max_pd = 3;
	cfg->max_mr = 5;
}

CTRL_FUZZ_TARGET(device_config, virtio_rdma_dev_setup, virtio_rdma_dev_ctrl_exec,
		 device_action, check_invariants)
