/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_create_qp_ex (verbs_context create_qp_ex) and the work-request
 * builder of struct ibv_qp_ex (ibv_wr_start, ibv_wr_<op>, ibv_wr_set_*,
 * ibv_wr_complete / ibv_wr_abort).
 *
 * A batch is built in the QP's own memory: every ibv_wr_<op> appends one
 * device send WR (translated and checked exactly as ibv_post_send would),
 * the setters complete the last one (SGEs, inline bytes copied at once so
 * the caller may reuse its buffer, UD address). The first error of a
 * batch is remembered and returned by ibv_wr_complete, which then posts
 * nothing; otherwise it posts the whole batch with one provider call per
 * queue-full retry (like ibv_post_send: if the send queue fills up part
 * way, the WRs before that point are posted and ENOMEM is returned).
 * ibv_wr_start takes the QP's builder lock, ibv_wr_complete and
 * ibv_wr_abort release it.
 *
 * Not offered: TSO and ATOMIC_WRITE (no device support), XRC (no XRC QPs).
 */
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs_priv.h"

/* Per WR of a batch: where its SGEs are in the batch's SGE array and
 * whether they point into the batch's inline bytes. */
struct vibv_qpx_meta {
	uint32_t sge_off;
	bool inline_data;
	bool needs_ud_addr;
};

struct vibv_qpx_batch {
	pthread_mutex_t lock;         /* wr_start .. wr_complete / wr_abort */
	struct vrdma_send_wr *wrs;
	struct vibv_qpx_meta *meta;
	unsigned int n, wr_cap;
	struct vrdma_sge *sges;
	uint32_t nsge, sge_cap;
	uint8_t *inl;
	size_t inl_len, inl_cap;
	int err; /* first error of the batch (positive errno) */
};

#define VRDMA_QPX_WR_MIN 16

/* struct ibv_qp_ex starts with struct ibv_qp (one union in verbs_priv.h). */
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "qp_ex");

/* An address handle standing in until ibv_wr_set_ud_addr gives one. */
static struct ibv_ah vibv_qpx_no_ah;

static inline struct vibv_qp *vibv_qpx(struct ibv_qp_ex *ibqpx)
{
	return vibv_container_of(ibqpx, struct vibv_qp, ibqpx);
}

static void vibv_qpx_fail(struct vibv_qpx_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Grows an array to hold at least need elements: 0 or ENOMEM. */
static int vibv_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t c = *cap ? *cap : VRDMA_QPX_WR_MIN;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > UINT32_MAX / 2)
			return ENOMEM;
		c *= 2;
	}
	p = realloc(*arr, (size_t)c * elem);
	if (!p)
		return ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Operations                                                                */
/* ------------------------------------------------------------------------ */

/* Appends the WR of one ibv_wr_<op> (wr: opcode and operation fields). */
static void vibv_qpx_add(struct ibv_qp_ex *ibqpx, struct ibv_send_wr *wr)
{
	struct vibv_qp *qp = vibv_qpx(ibqpx);
	struct vibv_qpx_batch *b = qp->batch;
	struct vrdma_send_wr pw;
	uint32_t cap = b->wr_cap;
	int ret;

	if (b->err)
		return;
	wr->wr_id = ibqpx->wr_id;
	wr->send_flags = ibqpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	wr->num_sge = 0;
	wr->sg_list = NULL;
	if (qp->ibqp.qp_type == IBV_QPT_UD)
		wr->wr.ud.ah = &vibv_qpx_no_ah;
	memset(&pw, 0, sizeof(pw));
	ret = vibv_send_wr(vibv_ctx(qp->ibqp.context), qp->ibqp.qp_type, wr, &pw);
	if (!ret) {
		ret = vibv_grow((void **)&b->wrs, &cap, b->n + 1, sizeof(*b->wrs));
		if (!ret) {
			cap = b->wr_cap;
			ret = vibv_grow((void **)&b->meta, &cap, b->n + 1,
					 sizeof(*b->meta));
		}
		if (!ret)
			b->wr_cap = cap;
	}
	if (ret) {
		vibv_qpx_fail(b, ret);
		return;
	}
	b->wrs[b->n] = pw;
	b->meta[b->n].sge_off = 0;
	b->meta[b->n].inline_data = false;
	b->meta[b->n].needs_ud_addr = qp->ibqp.qp_type == IBV_QPT_UD &&
				      (pw.opcode == VIRTIO_IB_WR_SEND ||
				       pw.opcode == VIRTIO_IB_WR_SEND_WITH_IMM);
	b->n++;
}

static void vibv_qpx_send(struct ibv_qp_ex *ibqpx)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = imm_data };

	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_INV,
				  .invalidate_rkey = invalidate_rkey };

	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_rdma(struct ibv_qp_ex *ibqpx, enum ibv_wr_opcode op, uint32_t rkey,
			   uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr wr = { .opcode = op, .imm_data = imm_data };

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = remote_addr;
	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey, uint64_t remote_addr)
{
	vibv_qpx_rdma(ibqpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void vibv_qpx_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				     uint64_t remote_addr, __be32 imm_data)
{
	vibv_qpx_rdma(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void vibv_qpx_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey, uint64_t remote_addr)
{
	vibv_qpx_rdma(ibqpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void vibv_qpx_atomic(struct ibv_qp_ex *ibqpx, enum ibv_wr_opcode op, uint32_t rkey,
			     uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr wr = { .opcode = op };

	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				     uint64_t remote_addr, uint64_t compare, uint64_t swap)
{
	vibv_qpx_atomic(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void vibv_qpx_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				       uint64_t remote_addr, uint64_t add)
{
	vibv_qpx_atomic(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

/* Binds a type 2 window (type 1 windows are bound with ibv_bind_mw). */
static void vibv_qpx_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw, uint32_t rkey,
			      const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };

	if (!bind_info) {
		vibv_qpx_fail(vibv_qpx(ibqpx)->batch, EINVAL);
		return;
	}
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = *bind_info;
	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_local_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV,
				  .invalidate_rkey = invalidate_rkey };

	vibv_qpx_add(ibqpx, &wr);
}

static void vibv_qpx_send_tso(struct ibv_qp_ex *ibqpx, void *hdr, uint16_t hdr_sz,
			       uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	vibv_qpx_fail(vibv_qpx(ibqpx)->batch, EOPNOTSUPP);
}

static void vibv_qpx_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				   uint64_t remote_addr, const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	vibv_qpx_fail(vibv_qpx(ibqpx)->batch, EOPNOTSUPP);
}

/* ------------------------------------------------------------------------ */
/* Setters of the last WR                                                    */
/* ------------------------------------------------------------------------ */

/* The last WR of the batch, if it may take data (SGEs or inline bytes). */
static struct vrdma_send_wr *vibv_qpx_last_data(struct vibv_qp *qp)
{
	struct vibv_qpx_batch *b = qp->batch;
	struct vrdma_send_wr *pw;

	if (b->err)
		return NULL;
	if (!b->n) {
		vibv_qpx_fail(b, EINVAL);
		return NULL;
	}
	pw = &b->wrs[b->n - 1];
	if (pw->opcode == VIRTIO_IB_WR_LOCAL_INV || pw->opcode == VIRTIO_IB_WR_BIND_MW) {
		vibv_qpx_fail(b, EINVAL);
		return NULL;
	}
	return pw;
}

static void vibv_qpx_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
				   const struct ibv_sge *sg_list)
{
	struct vibv_qp *qp = vibv_qpx(ibqpx);
	struct vibv_qpx_batch *b = qp->batch;
	struct vrdma_send_wr *pw = vibv_qpx_last_data(qp);
	int ret;

	if (!pw)
		return;
	if (num_sge > qp->cap.max_send_sge || (num_sge && !sg_list)) {
		vibv_qpx_fail(b, EINVAL);
		return;
	}
	ret = vibv_grow((void **)&b->sges, &b->sge_cap, b->nsge + (uint32_t)num_sge,
			 sizeof(*b->sges));
	if (ret) {
		vibv_qpx_fail(b, ret);
		return;
	}
	if (num_sge)
		memcpy(b->sges + b->nsge, sg_list, num_sge * sizeof(*sg_list));
	b->meta[b->n - 1].sge_off = b->nsge;
	b->meta[b->n - 1].inline_data = false;
	pw->send_flags &= (uint8_t)~VIRTIO_IB_SEND_INLINE;
	pw->num_sge = (uint32_t)num_sge;
	b->nsge += (uint32_t)num_sge;
}

static void vibv_qpx_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey, uint64_t addr,
			      uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vibv_qpx_set_sge_list(ibqpx, 1, &sge);
}

static void vibv_qpx_set_inline_data_list(struct ibv_qp_ex *ibqpx, size_t num_buf,
					   const struct ibv_data_buf *buf_list)
{
	struct vibv_qp *qp = vibv_qpx(ibqpx);
	struct vibv_qpx_batch *b = qp->batch;
	struct vrdma_send_wr *pw = vibv_qpx_last_data(qp);
	size_t total = 0, i;
	uint32_t need;
	int ret;

	if (!pw)
		return;
	if (pw->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
	    pw->opcode == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD ||
	    pw->opcode == VIRTIO_IB_WR_RDMA_READ || (num_buf && !buf_list)) {
		vibv_qpx_fail(b, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->cap.max_inline_data) {
			vibv_qpx_fail(b, EINVAL);
			return;
		}
		total += buf_list[i].length;
	}
	if (total > qp->cap.max_inline_data) {
		vibv_qpx_fail(b, EINVAL);
		return;
	}
	if (b->inl_len + total > b->inl_cap) {
		size_t c = b->inl_cap ? b->inl_cap : 4096;
		uint8_t *p;

		while (c < b->inl_len + total)
			c *= 2;
		p = realloc(b->inl, c);
		if (!p) {
			vibv_qpx_fail(b, ENOMEM);
			return;
		}
		b->inl = p;
		b->inl_cap = c;
	}
	/* One SGE holding the concatenation; its address is an offset into
	 * the batch's bytes until ibv_wr_complete. */
	need = b->nsge + 1;
	ret = vibv_grow((void **)&b->sges, &b->sge_cap, need, sizeof(*b->sges));
	if (ret) {
		vibv_qpx_fail(b, ret);
		return;
	}
	b->sges[b->nsge].addr = b->inl_len;
	b->sges[b->nsge].length = (uint32_t)total;
	b->sges[b->nsge].lkey = 0;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length)
			memcpy(b->inl + b->inl_len, buf_list[i].addr, buf_list[i].length);
		b->inl_len += buf_list[i].length;
	}
	b->meta[b->n - 1].sge_off = b->nsge;
	b->meta[b->n - 1].inline_data = true;
	pw->send_flags |= VIRTIO_IB_SEND_INLINE;
	pw->num_sge = 1;
	b->nsge = need;
}

static void vibv_qpx_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vibv_qpx_set_inline_data_list(ibqpx, 1, &buf);
}

static void vibv_qpx_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
				  uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vibv_qp *qp = vibv_qpx(ibqpx);
	struct vibv_qpx_batch *b = qp->batch;
	struct vrdma_send_wr *pw;

	if (b->err)
		return;
	if (!b->n || qp->ibqp.qp_type != IBV_QPT_UD || !ah ||
	    ah->context != qp->ibqp.context || !b->meta[b->n - 1].needs_ud_addr) {
		vibv_qpx_fail(b, EINVAL);
		return;
	}
	pw = &b->wrs[b->n - 1];
	pw->ud.ah = ah->handle;
	pw->ud.remote_qpn = remote_qpn;
	pw->ud.remote_qkey = remote_qkey;
	b->meta[b->n - 1].needs_ud_addr = false;
}

static void vibv_qpx_set_xrc_srqn(struct ibv_qp_ex *ibqpx, uint32_t remote_srqn)
{
	(void)remote_srqn;
	vibv_qpx_fail(vibv_qpx(ibqpx)->batch, EOPNOTSUPP);
}

/* ------------------------------------------------------------------------ */
/* Start / complete / abort                                                  */
/* ------------------------------------------------------------------------ */

static void vibv_qpx_reset(struct vibv_qpx_batch *b)
{
	b->n = 0;
	b->nsge = 0;
	b->inl_len = 0;
	b->err = 0;
}

static void vibv_qpx_start(struct ibv_qp_ex *ibqpx)
{
	struct vibv_qpx_batch *b = vibv_qpx(ibqpx)->batch;

	pthread_mutex_lock(&b->lock);
	vibv_qpx_reset(b);
}

static int vibv_qpx_complete(struct ibv_qp_ex *ibqpx)
{
	struct vibv_qp *qp = vibv_qpx(ibqpx);
	struct vibv_qpx_batch *b = qp->batch;
	unsigned int i, off = 0;
	int ret = b->err;

	for (i = 0; !ret && i < b->n; i++) {
		struct vrdma_send_wr *pw = &b->wrs[i];

		if (b->meta[i].needs_ud_addr) {
			ret = EINVAL;
			break;
		}
		if (b->meta[i].inline_data)
			b->sges[b->meta[i].sge_off].addr +=
				(uint64_t)(uintptr_t)b->inl;
		pw->sg_list = pw->num_sge ? b->sges + b->meta[i].sge_off : NULL;
	}
	while (!ret && off < b->n) {
		int k = qp->ops->post_send(qp->prov, b->wrs + off, b->n - off);

		if (k <= 0)
			ret = k < 0 ? -k : ENOMEM;
		else
			off += (unsigned int)k;
	}
	vibv_qpx_reset(b);
	pthread_mutex_unlock(&b->lock);
	if (ret)
		errno = ret;
	return ret;
}

static void vibv_qpx_abort(struct ibv_qp_ex *ibqpx)
{
	struct vibv_qpx_batch *b = vibv_qpx(ibqpx)->batch;

	vibv_qpx_reset(b);
	pthread_mutex_unlock(&b->lock);
}

/* ------------------------------------------------------------------------ */
/* Creation                                                                  */
/* ------------------------------------------------------------------------ */

/* The send operations a QP of this type can use on this device. */
static uint64_t vibv_qpx_supported_ops(const struct vibv_context *ctx,
					enum ibv_qp_type type)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	bool mgt = vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);

	if (mgt)
		ops |= IBV_QP_EX_WITH_LOCAL_INV;
	if (type == IBV_QPT_UD)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	if (vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B) &&
	    vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW))
		ops |= IBV_QP_EX_WITH_BIND_MW;
	if (type == IBV_QPT_UC)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_READ;
	if (mgt)
		ops |= IBV_QP_EX_WITH_SEND_WITH_INV;
	if (ctx->caps.atomic_cap != VIRTIO_IB_ATOMIC_NONE)
		ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	return ops;
}

static void vibv_qpx_set_ops(struct ibv_qp_ex *x)
{
	x->comp_mask = 0;
	x->wr_id = 0;
	x->wr_flags = 0;
	x->wr_atomic_cmp_swp = vibv_qpx_atomic_cmp_swp;
	x->wr_atomic_fetch_add = vibv_qpx_atomic_fetch_add;
	x->wr_bind_mw = vibv_qpx_bind_mw;
	x->wr_local_inv = vibv_qpx_local_inv;
	x->wr_rdma_read = vibv_qpx_rdma_read;
	x->wr_rdma_write = vibv_qpx_rdma_write;
	x->wr_rdma_write_imm = vibv_qpx_rdma_write_imm;
	x->wr_send = vibv_qpx_send;
	x->wr_send_imm = vibv_qpx_send_imm;
	x->wr_send_inv = vibv_qpx_send_inv;
	x->wr_send_tso = vibv_qpx_send_tso;
	x->wr_set_ud_addr = vibv_qpx_set_ud_addr;
	x->wr_set_xrc_srqn = vibv_qpx_set_xrc_srqn;
	x->wr_set_inline_data = vibv_qpx_set_inline_data;
	x->wr_set_inline_data_list = vibv_qpx_set_inline_data_list;
	x->wr_set_sge = vibv_qpx_set_sge;
	x->wr_set_sge_list = vibv_qpx_set_sge_list;
	x->wr_start = vibv_qpx_start;
	x->wr_complete = vibv_qpx_complete;
	x->wr_abort = vibv_qpx_abort;
	x->wr_atomic_write = vibv_qpx_atomic_write;
}

/* verbs_context create_qp_ex: a QP of type RC, UC or UD, or NULL with errno
 * set (EINVAL for unknown masks or a missing PD, EOPNOTSUPP for XRC, RSS,
 * TSO, creation flags and send operations the device lacks). */
struct ibv_qp *vibv_create_qp_ex(struct ibv_context *ibctx,
					struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			       IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	const uint32_t unsupported = IBV_QP_INIT_ATTR_XRCD |
				     IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				     IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_qpx_batch *b = NULL;
	struct ibv_qp_init_attr basic;
	struct vibv_qp *qp;
	bool want_qpx;

	if (!attr || (attr->comp_mask & ~known)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & unsupported) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	want_qpx = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	if (want_qpx) {
		if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
		    attr->qp_type != IBV_QPT_UD) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (attr->send_ops_flags &
		    ~vibv_qpx_supported_ops(ctx, attr->qp_type)) {
			errno = EOPNOTSUPP;
			return NULL;
		}
		b = calloc(1, sizeof(*b));
		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
		pthread_mutex_init(&b->lock, NULL);
	}
	memset(&basic, 0, sizeof(basic));
	basic.qp_context = attr->qp_context;
	basic.send_cq = attr->send_cq;
	basic.recv_cq = attr->recv_cq;
	basic.srq = attr->srq;
	basic.cap = attr->cap;
	basic.qp_type = attr->qp_type;
	basic.sq_sig_all = attr->sq_sig_all;
	qp = vibv_qp_create(attr->pd, &basic);
	if (!qp) {
		if (b) {
			pthread_mutex_destroy(&b->lock);
			free(b);
		}
		return NULL;
	}
	attr->cap = basic.cap;
	if (want_qpx) {
		qp->has_qpx = true;
		qp->send_ops_flags = attr->send_ops_flags;
		qp->batch = b;
		vibv_qpx_set_ops(&qp->ibqpx);
	}
	return &qp->ibqp;
}

void vibv_qpx_free(struct vibv_qp *qp)
{
	struct vibv_qpx_batch *b = qp->batch;

	if (!b)
		return;
	free(b->wrs);
	free(b->meta);
	free(b->sges);
	free(b->inl);
	pthread_mutex_destroy(&b->lock);
	free(b);
	qp->batch = NULL;
}
