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
		if (mr->mrn != i || !mr->pd || rres_pd_lookup(rd, mr->pd->pdn) != mr->pd)
			die("mr");
		pages += mr->type == RRES_MR_FAST ? mr->max_pages : mr->npages;
		if (mr->type == RRES_MR_FAST && mr->npages > mr->max_pages)
			die("fast pages");
		if (mr->state == RRES_MR_FREE && mr->nregions)
			die("free mr pinned");
		if (mr->type == RRES_MR_DMA && (mr->access & ~(uint32_t)VIRTIO_IB_ACCESS_LOCAL_WRITE))
			die("remote dma mr");
		for (uint32_t r = 0; r < mr->nregions; r++)
			holders += mr->regions[r] == region;
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
	uint32_t a = len > 4 ? (uint32_t)d[1] | (uint32_t)d[2] << 8 | (uint32_t)d[3] << 16 : 0;
	struct rres_qp *qp;
	struct rres_cq *cq;

	if (!len)
		return;
	switch (d[0] % 4) {
	case 0:
		rres_dev_reset(rd);
		virtio_rdma_dev_setup(rd);
		break;
	case 1:
		qp = rres_qp_lookup(rd, a);
		if (qp)
			(void)rres_qp_async_state(rd, qp, VIRTIO_IB_QPS_ERR);
		break;
	case 2:
		cq = rres_cq_lookup(rd, a);
		if (cq)
			(void)rres_cq_notify_check(cq, len > 4 && (d[4] & 1));
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

static const struct ctrl_fuzz_abi abi = {
	.config = device_config,
	.setup = virtio_rdma_dev_setup,
	.exec = virtio_rdma_dev_ctrl_exec,
	.action = device_action,
	.check = check_invariants,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return ctrl_fuzz_run(&abi, data, size);
}
