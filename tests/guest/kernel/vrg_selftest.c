// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A kernel RDMA consumer for the guest test: on an ib_device (dev=, gid=),
 * two RC QPs connected to each other through the device's own GID (the
 * device loops the RoCE frames back), then
 *   SEND / RECV           data compared byte for byte
 *   REG_MR (fast reg.)    an MR of the receiver registered by work request
 *   RDMA WRITE, READ      through that MR's rkey, compared byte for byte
 *   notification          an armed CQ's handler runs for the next completion
 * Every step prints "vrg_selftest: ok STEP" or "vrg_selftest: FAIL STEP ...";
 * module init fails (insmod exits non-zero) when a step fails.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev_name_param = "vrdma0";
module_param_named(dev, dev_name_param, charp, 0444);
static int gid_index;
module_param_named(gid, gid_index, int, 0444);

#define BUF 4096
#define LEN 1500
/* Bound on one completion: generous for an emulated CPU, never a timing check. */
#define WAIT_MS 60000

struct vst {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b;
	struct ib_mr *mr;
	u8 *buf_a, *buf_b;
	u64 dma_a, dma_b;
	struct completion notified;
	int failed;
};

#define STEP(s, name, cond, fmt, ...) do {                                      \
	if (cond) {                                                              \
		pr_info("vrg_selftest: ok %s\n", name);                          \
	} else {                                                                 \
		pr_err("vrg_selftest: FAIL %s " fmt "\n", name, ##__VA_ARGS__);  \
		(s)->failed = 1;                                                 \
	}                                                                        \
} while (0)

static void vst_comp(struct ib_cq *cq, void *ctx)
{
	struct vst *s = ctx;

	complete(&s->notified);
}

/* Poll until one completion arrives (bounded). */
static int vst_poll(struct vst *s, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(WAIT_MS);
	int n;

	do {
		n = ib_poll_cq(s->cq, 1, wc);
		if (n)
			return n < 0 ? n : 0;
		usleep_range(100, 1000);
	} while (time_before(jiffies, end));
	return -ETIMEDOUT;
}

static int vst_connect(struct vst *s, struct ib_qp *qp, u32 remote, union ib_gid *gid)
{
	struct ib_qp_attr a = {};
	int rc;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	rc = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = remote;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, gid, 0, gid_index, 64, 0);
	rc = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			  IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

static void vst_fill(u8 *p, u8 seed)
{
	int i;

	for (i = 0; i < LEN; i++)
		p[i] = (u8)(seed + i * 7);
}

static void vst_send_recv(struct vst *s)
{
	struct ib_sge sa = { .addr = s->dma_a, .length = LEN, .lkey = s->pd->local_dma_lkey };
	struct ib_sge sb = { .addr = s->dma_b, .length = BUF, .lkey = s->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 2, .sg_list = &sb, .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 1, .sg_list = &sa, .num_sge = 1,
				  .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct ib_wc wc[2];
	int rc, i, got_send = 0, got_recv = 0;

	vst_fill(s->buf_a, 1);
	memset(s->buf_b, 0, BUF);
	ib_dma_sync_single_for_device(s->dev, s->dma_a, BUF, DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(s->dev, s->dma_b, BUF, DMA_BIDIRECTIONAL);
	rc = ib_post_recv(s->b, &rwr, NULL);
	STEP(s, "post_recv", !rc, "rc %d", rc);
	/* arm the CQ: the next completion runs the handler */
	reinit_completion(&s->notified);
	rc = ib_req_notify_cq(s->cq, IB_CQ_NEXT_COMP);
	STEP(s, "req_notify", rc >= 0, "rc %d", rc);
	rc = ib_post_send(s->a, &swr, NULL);
	STEP(s, "post_send", !rc, "rc %d", rc);
	for (i = 0; i < 2 && !s->failed; i++) {
		rc = vst_poll(s, &wc[i]);
		if (rc) {
			STEP(s, "send_completions", 0, "poll %d after %d", rc, i);
			break;
		}
		if (wc[i].wr_id == 1 && wc[i].status == IB_WC_SUCCESS && wc[i].opcode == IB_WC_SEND)
			got_send = 1;
		if (wc[i].wr_id == 2 && wc[i].status == IB_WC_SUCCESS && wc[i].opcode == IB_WC_RECV &&
		    wc[i].byte_len == LEN && wc[i].qp == s->b)
			got_recv = 1;
		if (wc[i].status != IB_WC_SUCCESS)
			pr_err("vrg_selftest: wc wr_id %llu status %d opcode %d\n", wc[i].wr_id,
			       wc[i].status, wc[i].opcode);
	}
	STEP(s, "send_completions", got_send && got_recv, "send %d recv %d", got_send, got_recv);
	ib_dma_sync_single_for_cpu(s->dev, s->dma_b, BUF, DMA_BIDIRECTIONAL);
	STEP(s, "send_data", !memcmp(s->buf_a, s->buf_b, LEN), "received bytes differ");
	STEP(s, "notify_handler",
	     wait_for_completion_timeout(&s->notified, msecs_to_jiffies(WAIT_MS)) > 0,
	     "the armed CQ's handler did not run");
}

/* REG_MR on b for buf_b, then WRITE from a into it and READ it back. */
static void vst_rdma(struct vst *s)
{
	struct scatterlist sg;
	struct ib_reg_wr reg = {};
	struct ib_rdma_wr w = {};
	struct ib_sge sge;
	struct ib_wc wc;
	int rc, n;

	s->mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 1);
	STEP(s, "alloc_mr", !IS_ERR(s->mr), "rc %ld", PTR_ERR(s->mr));
	if (IS_ERR(s->mr)) {
		s->mr = NULL;
		return;
	}
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = s->dma_b;
	sg_dma_len(&sg) = BUF;
	n = ib_map_mr_sg(s->mr, &sg, 1, NULL, PAGE_SIZE);
	STEP(s, "map_mr_sg", n == 1, "rc %d", n);
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.wr_id = 3;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = s->mr;
	reg.key = s->mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	rc = ib_post_send(s->b, &reg.wr, NULL);
	rc = rc ?: vst_poll(s, &wc);
	STEP(s, "reg_mr_wr", !rc && wc.status == IB_WC_SUCCESS && wc.wr_id == 3,
	     "rc %d status %d", rc, rc ? -1 : wc.status);
	if (s->failed)
		return;

	vst_fill(s->buf_a, 9);
	memset(s->buf_b, 0, BUF);
	ib_dma_sync_single_for_device(s->dev, s->dma_a, BUF, DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(s->dev, s->dma_b, BUF, DMA_BIDIRECTIONAL);
	sge.addr = s->dma_a;
	sge.length = LEN;
	sge.lkey = s->pd->local_dma_lkey;
	w.wr.opcode = IB_WR_RDMA_WRITE;
	w.wr.wr_id = 4;
	w.wr.send_flags = IB_SEND_SIGNALED;
	w.wr.sg_list = &sge;
	w.wr.num_sge = 1;
	w.remote_addr = s->mr->iova;
	w.rkey = s->mr->rkey;
	rc = ib_post_send(s->a, &w.wr, NULL);
	rc = rc ?: vst_poll(s, &wc);
	STEP(s, "rdma_write", !rc && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RDMA_WRITE,
	     "rc %d status %d", rc, rc ? -1 : wc.status);
	ib_dma_sync_single_for_cpu(s->dev, s->dma_b, BUF, DMA_BIDIRECTIONAL);
	STEP(s, "rdma_write_data", !memcmp(s->buf_a, s->buf_b, LEN), "written bytes differ");

	/* READ it back into a's buffer, cleared first */
	memset(s->buf_a, 0, BUF);
	ib_dma_sync_single_for_device(s->dev, s->dma_a, BUF, DMA_BIDIRECTIONAL);
	w.wr.opcode = IB_WR_RDMA_READ;
	w.wr.wr_id = 5;
	rc = ib_post_send(s->a, &w.wr, NULL);
	rc = rc ?: vst_poll(s, &wc);
	STEP(s, "rdma_read", !rc && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RDMA_READ,
	     "rc %d status %d", rc, rc ? -1 : wc.status);
	ib_dma_sync_single_for_cpu(s->dev, s->dma_a, BUF, DMA_BIDIRECTIONAL);
	STEP(s, "rdma_read_data", !memcmp(s->buf_a, s->buf_b, LEN), "read bytes differ");
}

static int vst_run(struct vst *s)
{
	struct ib_cq_init_attr cqa = { .cqe = 16 };
	struct ib_qp_init_attr qa = {};
	union ib_gid gid;
	int rc;

	rc = rdma_query_gid(s->dev, 1, gid_index, &gid);
	STEP(s, "query_gid", !rc, "index %d: rc %d", gid_index, rc);
	if (rc)
		return rc;
	pr_info("vrg_selftest: gid %d is %pI6\n", gid_index, gid.raw);
	s->pd = ib_alloc_pd(s->dev, 0);
	STEP(s, "alloc_pd", !IS_ERR(s->pd), "rc %ld", PTR_ERR(s->pd));
	if (IS_ERR(s->pd))
		return PTR_ERR(s->pd);
	s->cq = ib_create_cq(s->dev, vst_comp, NULL, s, &cqa);
	STEP(s, "create_cq", !IS_ERR(s->cq), "rc %ld", PTR_ERR(s->cq));
	if (IS_ERR(s->cq))
		return PTR_ERR(s->cq);
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	s->a = ib_create_qp(s->pd, &qa);
	s->b = IS_ERR(s->a) ? ERR_PTR(-EINVAL) : ib_create_qp(s->pd, &qa);
	STEP(s, "create_qp", !IS_ERR(s->a) && !IS_ERR(s->b), "rc %ld / %ld", PTR_ERR(s->a),
	     PTR_ERR(s->b));
	if (IS_ERR(s->a) || IS_ERR(s->b))
		return -EINVAL;
	pr_info("vrg_selftest: qpn %#x and %#x\n", s->a->qp_num, s->b->qp_num);
	rc = vst_connect(s, s->a, s->b->qp_num, &gid);
	rc = rc ?: vst_connect(s, s->b, s->a->qp_num, &gid);
	STEP(s, "modify_qp_rts", !rc, "rc %d", rc);
	if (rc)
		return rc;
	vst_send_recv(s);
	if (!s->failed)
		vst_rdma(s);
	return s->failed ? -EIO : 0;
}

static void vst_teardown(struct vst *s)
{
	if (s->mr)
		ib_dereg_mr(s->mr);
	if (!IS_ERR_OR_NULL(s->b))
		ib_destroy_qp(s->b);
	if (!IS_ERR_OR_NULL(s->a))
		ib_destroy_qp(s->a);
	if (!IS_ERR_OR_NULL(s->cq))
		ib_destroy_cq(s->cq);
	if (!IS_ERR_OR_NULL(s->pd))
		ib_dealloc_pd(s->pd);
}

static int __init vst_init(void)
{
	struct vst *s = kzalloc(sizeof(*s), GFP_KERNEL);
	int rc;

	if (!s)
		return -ENOMEM;
	init_completion(&s->notified);
	s->dev = ib_device_get_by_name(dev_name_param, RDMA_DRIVER_UNKNOWN);
	if (!s->dev) {
		pr_err("vrg_selftest: FAIL no device %s\n", dev_name_param);
		kfree(s);
		return -ENODEV;
	}
	s->buf_a = kzalloc(BUF, GFP_KERNEL);
	s->buf_b = kzalloc(BUF, GFP_KERNEL);
	if (!s->buf_a || !s->buf_b) {
		rc = -ENOMEM;
		goto out;
	}
	s->dma_a = ib_dma_map_single(s->dev, s->buf_a, BUF, DMA_BIDIRECTIONAL);
	s->dma_b = ib_dma_map_single(s->dev, s->buf_b, BUF, DMA_BIDIRECTIONAL);
	rc = vst_run(s);
	vst_teardown(s);
	ib_dma_unmap_single(s->dev, s->dma_a, BUF, DMA_BIDIRECTIONAL);
	ib_dma_unmap_single(s->dev, s->dma_b, BUF, DMA_BIDIRECTIONAL);
	pr_info("vrg_selftest: %s\n", rc ? "FAILED" : "PASSED");
out:
	kfree(s->buf_a);
	kfree(s->buf_b);
	ib_device_put(s->dev);
	kfree(s);
	return rc;
}

static void __exit vst_exit(void)
{
}

module_init(vst_init);
module_exit(vst_exit);
MODULE_DESCRIPTION("virtio-rdma guest driver self-test (kernel RDMA consumer)");
MODULE_LICENSE("Dual BSD/GPL");
