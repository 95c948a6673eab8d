/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs and shared receive queues: creation, modify / query (the
 * libibverbs attribute mask translated to the device's VIRTIO_IB_QP_* mask)
 * and the data path ctx->ops.post_send / post_recv / post_srq_recv, which
 * translate work requests in batches of VRDMA_VERBS_POST_BATCH on the stack
 * and hand each batch to the provider in one call (one doorbell per batch).
 *
 * QP types RC, UC and UD (same numbers as the device's). PKEY_INDEX must be
 * 0 and PORT 1 (the device has one port and one P_Key); alternate paths,
 * path migration and EN_SQD_ASYNC_NOTIFY have no device attribute and are
 * refused with EOPNOTSUPP.
 */
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs_priv.h"

/* The application's SGE arrays go to the provider as they are. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct vrdma_sge), "sge");
_Static_assert(offsetof(struct ibv_sge, addr) == offsetof(struct vrdma_sge, addr),
	       "sge");
_Static_assert(offsetof(struct ibv_sge, length) ==
		       offsetof(struct vrdma_sge, length), "sge");
_Static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct vrdma_sge, lkey),
	       "sge");
/* Numbering shared by libibverbs and the device. */
_Static_assert(IBV_QPT_RC == VIRTIO_IB_QPT_RC && IBV_QPT_UC == VIRTIO_IB_QPT_UC &&
		       IBV_QPT_UD == VIRTIO_IB_QPT_UD, "qp type");
_Static_assert(IBV_QPS_RESET == (int)VIRTIO_IB_QPS_RESET &&
		       IBV_QPS_ERR == (int)VIRTIO_IB_QPS_ERR, "qp state");
_Static_assert(IBV_MTU_256 == (int)VIRTIO_IB_MTU_256 &&
		       IBV_MTU_4096 == (int)VIRTIO_IB_MTU_4096, "mtu");
_Static_assert(IBV_WR_RDMA_WRITE == (int)VIRTIO_IB_WR_RDMA_WRITE &&
		       IBV_WR_RDMA_READ == (int)VIRTIO_IB_WR_RDMA_READ &&
		       IBV_WR_ATOMIC_CMP_AND_SWP == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP &&
		       IBV_WR_ATOMIC_FETCH_AND_ADD == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD &&
		       IBV_WR_LOCAL_INV == VIRTIO_IB_WR_LOCAL_INV &&
		       IBV_WR_BIND_MW == VIRTIO_IB_WR_BIND_MW &&
		       IBV_WR_SEND_WITH_INV == VIRTIO_IB_WR_SEND_WITH_INV,
	       "wr opcode");
_Static_assert(IBV_SRQ_MAX_WR == VIRTIO_IB_SRQ_MAX_WR &&
		       IBV_SRQ_LIMIT == VIRTIO_IB_SRQ_LIMIT, "srq mask");
_Static_assert(IBV_SEND_FENCE == VIRTIO_IB_SEND_FENCE &&
		       IBV_SEND_SIGNALED == VIRTIO_IB_SEND_SIGNALED &&
		       IBV_SEND_SOLICITED == VIRTIO_IB_SEND_SOLICITED &&
		       IBV_SEND_INLINE == VIRTIO_IB_SEND_INLINE, "send flags");

#define VRDMA_QP_ACCESS_MASK                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* ------------------------------------------------------------------------ */
/* Creation                                                                  */
/* ------------------------------------------------------------------------ */

static void vibv_cap_to_prov(const struct ibv_qp_cap *in, struct vrdma_qp_cap *out)
{
	out->max_send_wr = in->max_send_wr;
	out->max_recv_wr = in->max_recv_wr;
	out->max_send_sge = in->max_send_sge;
	out->max_recv_sge = in->max_recv_sge;
	out->max_inline_data = in->max_inline_data;
}

static void vibv_cap_to_ibv(const struct vrdma_qp_cap *in, struct ibv_qp_cap *out)
{
	out->max_send_wr = in->max_send_wr;
	out->max_recv_wr = in->max_recv_wr;
	out->max_send_sge = in->max_send_sge;
	out->max_recv_sge = in->max_recv_sge;
	out->max_inline_data = in->max_inline_data;
}

/* A QP (attr->cap updated to the actual sizes), or NULL with errno set. */
struct vibv_qp *vibv_qp_create(struct ibv_pd *pd,
					     struct ibv_qp_init_attr *attr)
{
	struct vibv_context *ctx;
	struct vibv_prov_qp_init in;
	struct vibv_prov_qp_info info;
	struct vibv_qp *qp;
	int ret;

	if (!pd || !attr || !attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->context != pd->context ||
	    attr->recv_cq->context != pd->context ||
	    (attr->srq && attr->srq->context != pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ctx = vibv_ctx(pd->context);
	if (attr->srq && !vibv_has_cap(ctx, VIRTIO_IB_DEVICE_SRQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	memset(&in, 0, sizeof(in));
	in.pdn = pd->handle;
	in.qp_type = (uint8_t)attr->qp_type;
	in.sq_sig_all = attr->sq_sig_all != 0;
	in.send_cq = vrdma_cq(attr->send_cq)->prov;
	in.recv_cq = vrdma_cq(attr->recv_cq)->prov;
	in.srq = attr->srq ? vrdma_srq(attr->srq)->prov : NULL;
	vibv_cap_to_prov(&attr->cap, &in.cap);
	if (attr->srq) {
		/* The SRQ's limits apply; the device ignores these. */
		in.cap.max_recv_wr = 0;
		in.cap.max_recv_sge = 0;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ops = ctx->ops;
	memset(&info, 0, sizeof(info));
	ret = VRDMA_PROV_CALL(ctx->ops, create_qp, ctx->prov, &in, qp, &qp->prov,
			      &info);
	if (ret) {
		free(qp);
		vibv_errno(ret);
		return NULL;
	}
	qp->ibqp.context = pd->context;
	qp->ibqp.qp_context = attr->qp_context;
	qp->ibqp.pd = pd;
	qp->ibqp.send_cq = attr->send_cq;
	qp->ibqp.recv_cq = attr->recv_cq;
	qp->ibqp.srq = attr->srq;
	qp->ibqp.handle = info.qpn;
	qp->ibqp.qp_num = info.qpn;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	qp->sq_sig_all = attr->sq_sig_all != 0;
	qp->cap = info.cap;
	if (attr->srq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	}
	pthread_mutex_init(&qp->cap_lock, NULL);
	vibv_cap_to_ibv(&qp->cap, &attr->cap);
	vibv_obj_add(ctx, &qp->obj, VRDMA_OBJ_QP, info.qpn);
	return qp;
}

/* Returns a QP (attr->cap updated to the actual sizes), or NULL with errno
 * set. */
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct vibv_qp *qp = vibv_qp_create(pd, attr);

	return qp ? &qp->ibqp : NULL;
}

/* The ibv_wr_* interface of a QP created by ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; NULL for any other QP (as rdma-core). */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);

	if (!qp->has_qpx) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &qp->ibqpx;
}

/* Destroys a QP after its async events were acknowledged: 0 or a positive
 * errno. */
int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	struct vibv_context *ctx = vibv_ctx(ibqp->context);
	int ret;

	/* No more asynchronous events for it, then wait for the acks. */
	vibv_obj_del(ctx, &qp->obj);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->events_delivered)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);

	ret = qp->ops->destroy_qp(qp->prov);
	if (ret) {
		vibv_obj_add(ctx, &qp->obj, VRDMA_OBJ_QP, ibqp->qp_num);
		return vibv_errno(ret);
	}
	vibv_binds_forget(ctx, ibqp->qp_num, true, NULL);
	vibv_qpx_free(qp);
	pthread_mutex_destroy(&qp->cap_lock);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Modify / query                                                            */
/* ------------------------------------------------------------------------ */

/* The libibverbs masks that map one to one to a device mask bit. */
static const struct {
	int ibv;
	uint32_t dev;
} vibv_qp_mask_map[] = {
	{ IBV_QP_STATE, VIRTIO_IB_QP_STATE },
	{ IBV_QP_CUR_STATE, VIRTIO_IB_QP_CUR_STATE },
	{ IBV_QP_ACCESS_FLAGS, VIRTIO_IB_QP_ACCESS_FLAGS },
	{ IBV_QP_QKEY, VIRTIO_IB_QP_QKEY },
	{ IBV_QP_AV, VIRTIO_IB_QP_AV },
	{ IBV_QP_PATH_MTU, VIRTIO_IB_QP_PATH_MTU },
	{ IBV_QP_TIMEOUT, VIRTIO_IB_QP_TIMEOUT },
	{ IBV_QP_RETRY_CNT, VIRTIO_IB_QP_RETRY_CNT },
	{ IBV_QP_RNR_RETRY, VIRTIO_IB_QP_RNR_RETRY },
	{ IBV_QP_RQ_PSN, VIRTIO_IB_QP_RQ_PSN },
	{ IBV_QP_MAX_QP_RD_ATOMIC, VIRTIO_IB_QP_MAX_QP_RD_ATOMIC },
	{ IBV_QP_MIN_RNR_TIMER, VIRTIO_IB_QP_MIN_RNR_TIMER },
	{ IBV_QP_SQ_PSN, VIRTIO_IB_QP_SQ_PSN },
	{ IBV_QP_MAX_DEST_RD_ATOMIC, VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC },
	{ IBV_QP_CAP, VIRTIO_IB_QP_CAP },
	{ IBV_QP_DEST_QPN, VIRTIO_IB_QP_DEST_QPN },
	{ IBV_QP_RATE_LIMIT, VIRTIO_IB_QP_RATE_LIMIT },
};

#define VRDMA_QP_MASK_NODEV (IBV_QP_PKEY_INDEX | IBV_QP_PORT)
#define VRDMA_QP_MASK_UNSUPPORTED                                               \
	(IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE)

/* The device mask of a libibverbs mask: 0 or a positive errno. */
static int vibv_qp_mask(int mask, uint32_t *out)
{
	int known = VRDMA_QP_MASK_NODEV | VRDMA_QP_MASK_UNSUPPORTED;
	uint32_t dev = 0;
	size_t i;

	for (i = 0; i < sizeof(vibv_qp_mask_map) / sizeof(vibv_qp_mask_map[0]); i++) {
		known |= vibv_qp_mask_map[i].ibv;
		if (mask & vibv_qp_mask_map[i].ibv)
			dev |= vibv_qp_mask_map[i].dev;
	}
	if (mask & ~known)
		return EINVAL;
	*out = dev;
	return 0;
}

/* attr (fields of mask) as the device's: 0 or a positive errno. */
static int vibv_qp_attr_to_prov(struct vibv_context *ctx,
				 const struct ibv_qp_attr *attr, int mask,
				 struct vrdma_qp_attr *out)
{
	int ret;

	if (mask & VRDMA_QP_MASK_UNSUPPORTED)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_PORT) && attr->port_num != VRDMA_VERBS_PORT)
		return EINVAL;
	if ((mask & IBV_QP_STATE) && (unsigned int)attr->qp_state > IBV_QPS_ERR)
		return EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && (unsigned int)attr->cur_qp_state > IBV_QPS_ERR)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(unsigned int)VRDMA_QP_ACCESS_MASK))
		return EINVAL;

	memset(out, 0, sizeof(*out));
	out->qp_state = (uint8_t)attr->qp_state;
	out->cur_qp_state = (uint8_t)attr->cur_qp_state;
	out->path_mtu = (uint8_t)attr->path_mtu;
	out->max_rd_atomic = attr->max_rd_atomic;
	out->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	out->min_rnr_timer = attr->min_rnr_timer;
	out->timeout = attr->timeout;
	out->retry_cnt = attr->retry_cnt;
	out->rnr_retry = attr->rnr_retry;
	out->qkey = attr->qkey;
	out->rq_psn = attr->rq_psn & 0xffffff;
	out->sq_psn = attr->sq_psn & 0xffffff;
	out->dest_qp_num = attr->dest_qp_num & 0xffffff;
	out->qp_access_flags = attr->qp_access_flags & VRDMA_QP_ACCESS_MASK;
	out->rate_limit = attr->rate_limit;
	vibv_cap_to_prov(&attr->cap, &out->cap);
	if (mask & IBV_QP_AV) {
		ret = vibv_ah_attr(ctx, &attr->ah_attr, &out->ah_attr);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * IBV_QP_CAP: resizes the QP's work queues (RESIZE_QP; spec.md "Resizing
 * CQs and QPs"). Only max_send_wr and max_recv_wr can change; the SGE and
 * inline limits are those in force, whatever attr says (the device
 * requires them unchanged). 0 or a positive errno.
 */
static int vibv_qp_resize(struct vibv_qp *qp, const struct ibv_qp_cap *want)
{
	struct vibv_context *ctx = vibv_ctx(qp->ibqp.context);
	struct vrdma_qp_cap cap;
	int ret;

	if (!vibv_has_cap(ctx, VIRTIO_IB_DEVICE_RESIZE_MAX_WR))
		return EOPNOTSUPP;
	if (!want->max_send_wr || (!qp->ibqp.srq && !want->max_recv_wr) ||
	    (qp->ibqp.srq && want->max_recv_wr))
		return EINVAL;
	pthread_mutex_lock(&qp->cap_lock);
	cap = qp->cap;
	cap.max_send_wr = want->max_send_wr;
	cap.max_recv_wr = want->max_recv_wr;
	ret = VRDMA_PROV_CALL(qp->ops, resize_qp, qp->prov, &cap);
	if (!ret) {
		qp->cap.max_send_wr = cap.max_send_wr;
		qp->cap.max_recv_wr = cap.max_recv_wr;
	}
	pthread_mutex_unlock(&qp->cap_lock);
	return -ret;
}

/* Modifies a QP: 0 or a positive errno. With IBV_QP_CAP the queues are
 * resized first (the device has no CAP attribute in MODIFY_QP); if the
 * other attributes then fail, the new sizes stay. */
int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	struct vrdma_qp_attr pa;
	uint32_t dmask;
	int ret;

	ret = vibv_qp_mask(mask & ~IBV_QP_CAP, &dmask);
	if (!ret)
		ret = vibv_qp_attr_to_prov(vibv_ctx(ibqp->context), attr,
					    mask & ~IBV_QP_CAP, &pa);
	if (!ret && (mask & IBV_QP_CAP))
		ret = vibv_qp_resize(qp, &attr->cap);
	if (ret) {
		errno = ret;
		return ret;
	}
	if (mask == IBV_QP_CAP)
		return 0;
	ret = VRDMA_PROV_CALL(qp->ops, modify_qp, qp->prov, &pa, dmask);
	if (ret)
		return vibv_errno(ret);
	if (mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}

/* Queries a QP (every attribute is filled, not only those of mask): 0 or a
 * positive errno. */
int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	struct vrdma_qp_attr pa;
	uint32_t dmask;
	int ret;

	ret = vibv_qp_mask(mask, &dmask);
	if (ret) {
		errno = ret;
		return ret;
	}
	memset(&pa, 0, sizeof(pa));
	ret = VRDMA_PROV_CALL(qp->ops, query_qp, qp->prov, dmask, &pa);
	if (ret)
		return vibv_errno(ret);

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)pa.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)pa.qp_state;
	attr->path_mtu = (enum ibv_mtu)pa.path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = pa.qkey;
	attr->rq_psn = pa.rq_psn;
	attr->sq_psn = pa.sq_psn;
	attr->dest_qp_num = pa.dest_qp_num;
	attr->qp_access_flags = vibv_access_to_ibv(pa.qp_access_flags);
	vibv_cap_to_ibv(&pa.cap, &attr->cap);
	vibv_ah_attr_to_ibv(&pa.ah_attr, &attr->ah_attr);
	attr->pkey_index = 0;
	attr->sq_draining = pa.sq_draining;
	attr->max_rd_atomic = pa.max_rd_atomic;
	attr->max_dest_rd_atomic = pa.max_dest_rd_atomic;
	attr->min_rnr_timer = pa.min_rnr_timer;
	attr->port_num = VRDMA_VERBS_PORT;
	attr->timeout = pa.timeout;
	attr->retry_cnt = pa.retry_cnt;
	attr->rnr_retry = pa.rnr_retry;
	attr->rate_limit = pa.rate_limit;

	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
	}
	if (mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}

/* Whether data lands in order: 0 (no guarantee given). */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}

/* Enhanced connection establishment has no device support: EOPNOTSUPP. */
int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* Enhanced connection establishment has no device support: EOPNOTSUPP. */
int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* Joins a multicast group: 0 or a positive errno (EOPNOTSUPP without the
 * provider's multicast extension). */
int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	int ret;

	(void)lid;
	if (ibqp->qp_type != IBV_QPT_UD || gid->raw[0] != 0xff) {
		errno = EINVAL;
		return EINVAL;
	}
	ret = VRDMA_PROV_CALL(qp->ops, attach_mcast, qp->prov, gid->raw);
	return ret ? vibv_errno(ret) : 0;
}

/* Leaves a multicast group: 0 or a positive errno. */
int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	int ret;

	(void)lid;
	ret = VRDMA_PROV_CALL(qp->ops, detach_mcast, qp->prov, gid->raw);
	return ret ? vibv_errno(ret) : 0;
}

/* ------------------------------------------------------------------------ */
/* Data path                                                                 */
/* ------------------------------------------------------------------------ */

#define VRDMA_SEND_FLAGS                                                        \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* The window rights of libibverbs (IBV_ACCESS_REMOTE_*, same values as the
 * device's) as VIRTIO_IB_ACCESS_*: 0 or a positive errno. */
int vibv_mw_access(unsigned int ibv_access, uint32_t *out)
{
	if (ibv_access & ~(unsigned int)VIRTIO_IB_MW_ACCESS_MASK)
		return ibv_access & IBV_ACCESS_ZERO_BASED ? EOPNOTSUPP : EINVAL;
	*out = ibv_access;
	return 0;
}

/*
 * One send WR as the device's: 0 or a positive errno. The extension's
 * opcodes (atomics, LOCAL_INV, SEND_WITH_INV, BIND_MW) are checked here
 * against the QP type and what the device reported, so that a program
 * learns EINVAL / EOPNOTSUPP at post time; the device checks them again
 * (spec.md "New values at a glance").
 */
static inline int vrdma_send_wr(const struct vibv_context *ctx,
				enum ibv_qp_type type, const struct ibv_send_wr *wr,
				struct vrdma_send_wr *out)
{
	if (wr->num_sge < 0 || (wr->send_flags & ~VRDMA_SEND_FLAGS))
		return EINVAL;
	out->wr_id = wr->wr_id;
	out->send_flags = (uint8_t)wr->send_flags;
	out->imm_data = wr->imm_data;
	out->num_sge = (uint32_t)wr->num_sge;
	out->sg_list = (const struct vrdma_sge *)wr->sg_list;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		out->opcode = (uint8_t)wr->opcode;
		if (type != IBV_QPT_UD)
			return 0;
		if (!wr->wr.ud.ah)
			return EINVAL;
		out->ud.remote_qpn = wr->wr.ud.remote_qpn;
		out->ud.remote_qkey = wr->wr.ud.remote_qkey;
		out->ud.ah = wr->wr.ud.ah->handle;
		return 0;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		if (type == IBV_QPT_UD)
			return EINVAL;
		out->opcode = (uint8_t)wr->opcode;
		out->rdma.remote_addr = wr->wr.rdma.remote_addr;
		out->rdma.rkey = wr->wr.rdma.rkey;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (type != IBV_QPT_RC || (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		if (ctx->caps.atomic_cap == VIRTIO_IB_ATOMIC_NONE)
			return EOPNOTSUPP;
		out->opcode = (uint8_t)wr->opcode;
		out->atomic.remote_addr = wr->wr.atomic.remote_addr;
		out->atomic.compare_add = wr->wr.atomic.compare_add;
		out->atomic.swap = wr->wr.atomic.swap;
		out->atomic.rkey = wr->wr.atomic.rkey;
		return 0;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_SEND_WITH_INV:
		if ((wr->opcode == IBV_WR_SEND_WITH_INV && type != IBV_QPT_RC) ||
		    (wr->opcode == IBV_WR_LOCAL_INV &&
		     (wr->num_sge || (wr->send_flags & IBV_SEND_INLINE))))
			return EINVAL;
		if (!vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS))
			return EOPNOTSUPP;
		out->opcode = (uint8_t)wr->opcode;
		out->invalidate_rkey = wr->invalidate_rkey;
		return 0;
	case IBV_WR_BIND_MW: {
		/* Type 2 windows only (type 1: ibv_bind_mw). The application
		 * picks the new key (ibv_inc_rkey) and keeps track of it. */
		const struct ibv_mw *mw = wr->bind_mw.mw;
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
		uint32_t access;
		int ret;

		if (type == IBV_QPT_UD || !mw || mw->type != IBV_MW_TYPE_2 ||
		    wr->num_sge || (wr->send_flags & IBV_SEND_INLINE) || !bi->mr ||
		    bi->mr->pd != mw->pd)
			return EINVAL;
		if (!vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B))
			return EOPNOTSUPP;
		ret = vibv_mw_access(bi->mw_access_flags, &access);
		if (ret)
			return ret;
		out->opcode = VIRTIO_IB_WR_BIND_MW;
		out->num_sge = 0;
		out->bind_mw.addr = bi->addr;
		out->bind_mw.length = bi->length;
		out->bind_mw.mr_lkey = bi->mr->lkey;
		out->bind_mw.rkey = wr->bind_mw.rkey;
		out->bind_mw.access = access;
		return 0;
	}
	default:
		return EINVAL;
	}
}

int vibv_send_wr(const struct vibv_context *ctx, enum ibv_qp_type type,
			const struct ibv_send_wr *wr, struct vrdma_send_wr *out)
{
	return vrdma_send_wr(ctx, type, wr, out);
}

/* ctx->ops.post_send: 0, or a positive errno with *bad_wr at the first WR
 * not posted (the ones before it are posted). */
int vibv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	const struct vibv_context *ctx = vibv_ctx(ibqp->context);
	struct vrdma_send_wr pw[VRDMA_VERBS_POST_BATCH];
	struct ibv_send_wr *src[VRDMA_VERBS_POST_BATCH];

	while (wr) {
		unsigned int n = 0, off = 0;
		int xerr = 0;

		while (wr && n < VRDMA_VERBS_POST_BATCH) {
			xerr = vrdma_send_wr(ctx, ibqp->qp_type, wr, &pw[n]);
			if (xerr)
				break;
			src[n++] = wr;
			wr = wr->next;
		}
		/* A partial post is retried from the refused WR, which then
		 * either goes (the queue drained) or reports why not. */
		while (off < n) {
			int k = qp->ops->post_send(qp->prov, pw + off, n - off);

			if (k <= 0) {
				*bad_wr = src[off];
				return k < 0 ? -k : ENOMEM;
			}
			off += (unsigned int)k;
		}
		if (xerr) {
			*bad_wr = wr;
			return xerr;
		}
	}
	return 0;
}

/* Posts receive WRs to the receive queue of qp, or of srq when qp is NULL:
 * 0 or a positive errno with *bad_wr set. */
static inline int vibv_post_recv_common(const struct vibv_prov_ops *ops,
					 struct vibv_prov_qp *qp,
					 struct vibv_prov_srq *srq,
					 struct ibv_recv_wr *wr,
					 struct ibv_recv_wr **bad_wr)
{
	struct vrdma_recv_wr pw[VRDMA_VERBS_POST_BATCH];
	struct ibv_recv_wr *src[VRDMA_VERBS_POST_BATCH];

	while (wr) {
		unsigned int n = 0, off = 0;
		int xerr = 0;

		while (wr && n < VRDMA_VERBS_POST_BATCH) {
			if (wr->num_sge < 0) {
				xerr = EINVAL;
				break;
			}
			pw[n].wr_id = wr->wr_id;
			pw[n].num_sge = (uint32_t)wr->num_sge;
			pw[n].sg_list = (const struct vrdma_sge *)wr->sg_list;
			src[n++] = wr;
			wr = wr->next;
		}
		while (off < n) {
			int k = qp ? ops->post_recv(qp, pw + off, n - off) :
				     ops->post_srq_recv(srq, pw + off, n - off);

			if (k <= 0) {
				*bad_wr = src[off];
				return k < 0 ? -k : ENOMEM;
			}
			off += (unsigned int)k;
		}
		if (xerr) {
			*bad_wr = wr;
			return xerr;
		}
	}
	return 0;
}

/* ctx->ops.post_recv: 0, or a positive errno with *bad_wr set. */
int vibv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);

	if (ibqp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	return vibv_post_recv_common(qp->ops, qp->prov, NULL, wr, bad_wr);
}

/* ------------------------------------------------------------------------ */
/* Shared receive queues (a vrdma extension of the device)                   */
/* ------------------------------------------------------------------------ */

/* Returns an SRQ (attr->attr updated to the actual sizes; srq_limit 0: it
 * is created unarmed, arm it with ibv_modify_srq), or NULL with errno set
 * (EOPNOTSUPP when the device has no SRQs). */
struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct vibv_context *ctx;
	struct vibv_prov_srq_attr sa;
	struct vibv_srq *srq;
	int ret;

	if (!pd || !attr || !attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	ctx = vibv_ctx(pd->context);
	if (!vibv_has_cap(ctx, VIRTIO_IB_DEVICE_SRQ) || !ctx->ops->create_srq) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->attr.max_wr > ctx->caps.max_srq_wr ||
	    attr->attr.max_sge > ctx->caps.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->ops = ctx->ops;
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = attr->attr.max_wr;
	sa.max_sge = attr->attr.max_sge;
	ret = VRDMA_PROV_CALL(ctx->ops, create_srq, ctx->prov, pd->handle, &sa, srq,
			      &srq->prov);
	if (ret) {
		free(srq);
		vibv_errno(ret);
		return NULL;
	}
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = pd;
	srq->ibsrq.handle = sa.srqn;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	attr->attr.max_wr = sa.max_wr;
	attr->attr.max_sge = sa.max_sge;
	attr->attr.srq_limit = 0;
	vibv_obj_add(ctx, &srq->obj, VRDMA_OBJ_SRQ, sa.srqn);
	return &srq->ibsrq;
}

/* verbs_context create_srq_ex: what ibv_create_srq_ex does not hand to
 * ibv_create_srq itself. Basic SRQs only (a CQ given for them is ignored,
 * as libibverbs does); XRC and tag-matching SRQs: EOPNOTSUPP. */
struct ibv_srq *vibv_create_srq_ex(struct ibv_context *ibctx,
					  struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
			       IBV_SRQ_INIT_ATTR_TM;
	struct ibv_srq_init_attr basic;
	struct ibv_srq *srq;

	if (!attr || (attr->comp_mask & ~known)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_TM)) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	basic.srq_context = attr->srq_context;
	basic.attr = attr->attr;
	srq = ibv_create_srq(attr->pd, &basic);
	if (srq)
		attr->attr = basic.attr;
	return srq;
}

/* Sets an SRQ's limit (IBV_SRQ_LIMIT; 0 disarms): 0 or a positive errno.
 * Resizing (IBV_SRQ_MAX_WR) is not offered: EINVAL. */
int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct vibv_srq *srq = vrdma_srq(ibsrq);
	struct vibv_prov_srq_attr sa;
	uint32_t pmask = 0;
	int ret;

	if (!mask || (mask & ~IBV_SRQ_LIMIT)) {
		errno = EINVAL;
		return EINVAL;
	}
	pmask |= VRDMA_PROV_SRQ_LIMIT;
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = attr->max_wr;
	sa.max_sge = attr->max_sge;
	sa.srq_limit = attr->srq_limit;
	ret = VRDMA_PROV_CALL(srq->ops, modify_srq, srq->prov, &sa, pmask);
	return ret ? vibv_errno(ret) : 0;
}

/* SRQ sizes and limit: 0 or a positive errno. */
int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct vibv_srq *srq = vrdma_srq(ibsrq);
	struct vibv_prov_srq_attr sa;
	int ret;

	memset(&sa, 0, sizeof(sa));
	ret = VRDMA_PROV_CALL(srq->ops, query_srq, srq->prov, &sa);
	if (ret)
		return vibv_errno(ret);
	attr->max_wr = sa.max_wr;
	attr->max_sge = sa.max_sge;
	attr->srq_limit = sa.srq_limit;
	return 0;
}

/* Destroys an SRQ after its events were acknowledged: 0 or a positive
 * errno. */
int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vibv_srq *srq = vrdma_srq(ibsrq);
	struct vibv_context *ctx = vibv_ctx(ibsrq->context);
	int ret;

	/* No more asynchronous events for it, then wait for the acks. */
	vibv_obj_del(ctx, &srq->obj);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->events_delivered)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);

	ret = VRDMA_PROV_CALL(srq->ops, destroy_srq, srq->prov);
	if (ret) {
		vibv_obj_add(ctx, &srq->obj, VRDMA_OBJ_SRQ, srq->obj.num);
		return vibv_errno(ret);
	}
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(srq);
	return 0;
}

/* ctx->ops.post_srq_recv: 0, or a positive errno with *bad_wr set. */
int vibv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	struct vibv_srq *srq = vrdma_srq(ibsrq);

	return vibv_post_recv_common(srq->ops, NULL, srq->prov, wr, bad_wr);
}
