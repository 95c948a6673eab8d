// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vrdmag: the rdma-core provider for the guest kernel driver virtio_rdma
 * (guest/kernel). Every verb is a uverbs command of the kernel: control
 * verbs and the data path alike (post send / receive, poll and arm are
 * system calls the kernel routes to the driver, whose queues are
 * kernel-owned virtqueues). Nothing is mapped into the process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vrgp_abi.h"

/* The virtio device the driver binds: virtio id 42, any vendor. */
#define VRGP_MODALIAS "virtio:d0000002Av*"
/* uverbs_abi_ver of the kernel driver */
#define VRGP_ABI_VERSION 1

struct vrgp_context {
	struct verbs_context vctx;
};

struct vrgp_qp {
	struct ibv_qp qp;
};

static int vrgp_query_device(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int rc;

	rc = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp, &resp_size);
	if (rc)
		return rc;
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver), "%u.%u.%u",
		 (unsigned int)(fw >> 32) & 0xffff, (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

static int vrgp_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *vrgp_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (!pd)
		return NULL;
	rc = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (rc) {
		free(pd);
		errno = rc;
		return NULL;
	}
	return pd;
}

static int vrgp_dealloc_pd(struct ibv_pd *pd)
{
	int rc = ibv_cmd_dealloc_pd(pd);

	if (!rc)
		free(pd);
	return rc;
}

static struct ibv_mr *vrgp_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
				  int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *mr = calloc(1, sizeof(*mr));
	int rc;

	if (!mr)
		return NULL;
	rc = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, mr, &cmd, sizeof(cmd), &resp,
			    sizeof(resp));
	if (rc) {
		free(mr);
		errno = rc;
		return NULL;
	}
	return &mr->ibv_mr;
}

static int vrgp_dereg_mr(struct verbs_mr *mr)
{
	int rc = ibv_cmd_dereg_mr(mr);

	if (!rc)
		free(mr);
	return rc;
}

static struct ibv_cq *vrgp_create_cq(struct ibv_context *ctx, int cqe,
				     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ib_uverbs_create_cq_resp resp;
	struct ibv_create_cq cmd;
	struct ibv_cq *cq = calloc(1, sizeof(*cq));
	int rc;

	if (!cq)
		return NULL;
	rc = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, cq, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (rc) {
		free(cq);
		errno = rc;
		return NULL;
	}
	return cq;
}

static int vrgp_destroy_cq(struct ibv_cq *cq)
{
	int rc = ibv_cmd_destroy_cq(cq);

	if (!rc)
		free(cq);
	return rc;
}

static struct ibv_qp *vrgp_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd;
	struct vrgp_qp *qp = calloc(1, sizeof(*qp));
	int rc;

	if (!qp)
		return NULL;
	rc = ibv_cmd_create_qp(pd, &qp->qp, attr, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (rc) {
		free(qp);
		errno = rc;
		return NULL;
	}
	return &qp->qp;
}

static int vrgp_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			 struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

static int vrgp_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(qp, attr, mask, &cmd, sizeof(cmd));
}

static int vrgp_destroy_qp(struct ibv_qp *qp)
{
	int rc = ibv_cmd_destroy_qp(qp);

	if (!rc)
		free(qp);
	return rc;
}

static struct ibv_ah *vrgp_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah = calloc(1, sizeof(*ah));
	int rc;

	if (!ah)
		return NULL;
	rc = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (rc) {
		free(ah);
		errno = rc;
		return NULL;
	}
	return ah;
}

static int vrgp_destroy_ah(struct ibv_ah *ah)
{
	int rc = ibv_cmd_destroy_ah(ah);

	if (!rc)
		free(ah);
	return rc;
}

static void vrgp_free_context(struct ibv_context *ibctx)
{
	/* ibv_context is verbs_context's last member */
	struct vrgp_context *ctx = (struct vrgp_context *)((char *)ibctx -
		offsetof(struct vrgp_context, vctx.context));

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops vrgp_ops = {
	.alloc_pd = vrgp_alloc_pd,
	.create_ah = vrgp_create_ah,
	.create_cq = vrgp_create_cq,
	.create_qp = vrgp_create_qp,
	.dealloc_pd = vrgp_dealloc_pd,
	.dereg_mr = vrgp_dereg_mr,
	.destroy_ah = vrgp_destroy_ah,
	.destroy_cq = vrgp_destroy_cq,
	.destroy_qp = vrgp_destroy_qp,
	.free_context = vrgp_free_context,
	.modify_qp = vrgp_modify_qp,
	.poll_cq = ibv_cmd_poll_cq,
	.post_recv = ibv_cmd_post_recv,
	.post_send = ibv_cmd_post_send,
	.query_device_ex = vrgp_query_device,
	.query_port = vrgp_query_port,
	.query_qp = vrgp_query_qp,
	.reg_mr = vrgp_reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
};

static struct verbs_context *vrgp_alloc_context(struct ibv_device *dev, int cmd_fd,
						void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct ibv_get_context cmd;
	struct vrgp_context *ctx;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(dev, cmd_fd, sizeof(*ctx),
					    &((struct vrgp_context *)NULL)->vctx,
					    0 /* RDMA_DRIVER_UNKNOWN */);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp, sizeof(resp))) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		return NULL;
	}
	verbs_set_ops(&ctx->vctx, &vrgp_ops);
	return &ctx->vctx;
}

static struct verbs_device *vrgp_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	(void)sysfs_dev;
	return calloc(1, sizeof(struct verbs_device));
}

static void vrgp_uninit_device(struct verbs_device *dev)
{
	free(dev);
}

static const struct verbs_match_ent vrgp_match_table[] = {
	{ .u.modalias = VRGP_MODALIAS, .kind = VRGP_MATCH_MODALIAS },
	{}
};

static const struct verbs_device_ops vrgp_device_ops = {
	.name = "vrdmag",
	.match_min_abi_version = VRGP_ABI_VERSION,
	.match_max_abi_version = VRGP_ABI_VERSION,
	.match_table = vrgp_match_table,
	.alloc_device = vrgp_alloc_device,
	.uninit_device = vrgp_uninit_device,
	.alloc_context = vrgp_alloc_context,
};

static void __attribute__((constructor)) vrgp_register(void)
{
	verbs_register_driver_34(&vrgp_device_ops);
}
