/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (a vrdma extension of the device; spec.md "Memory windows
 * (ALLOC_MW, BIND_MW)"): ctx->ops.alloc_mw / dealloc_mw / bind_mw, which
 * verbs.h's inline ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw call. They
 * are set in the context only when the device reports
 * VIRTIO_IB_DEVICE_MEM_WINDOW (without them ibv_alloc_mw fails EOPNOTSUPP).
 *
 * struct ibv_mw needs nothing more: handle is the device's mwn, rkey the
 * window's current key, type IBV_MW_TYPE_1 or _2 (the device's numbers).
 *
 * ibv_bind_mw (type 1) posts a BIND_MW send WR whose new key is
 * ibv_inc_rkey(mw->rkey) (the device owns bits 8..31, the driver bits
 * 0..7). mw->rkey takes the new key when the bind completes (spec.md):
 * a signaled bind is remembered (struct vibv_bind) and poll_cq
 * updates the window when it returns the bind's successful completion; an
 * error completion (MW_BIND_ERR, a flush) leaves the key as it was. An
 * unsignaled bind has no completion to wait for unless it fails, so its key
 * is taken at once, as rdma-core's providers do for every bind (if it then
 * fails the application sees the error completion and the window is
 * unusable anyway).
 */
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs_priv.h"

_Static_assert(IBV_MW_TYPE_1 == VRDMA_PROV_MW_TYPE_1 && IBV_MW_TYPE_2 == VRDMA_PROV_MW_TYPE_2,
	       "mw type");
_Static_assert((int)IBV_ACCESS_REMOTE_WRITE == (int)VIRTIO_IB_ACCESS_REMOTE_WRITE &&
		       (int)IBV_ACCESS_REMOTE_READ == (int)VIRTIO_IB_ACCESS_REMOTE_READ &&
		       IBV_ACCESS_REMOTE_ATOMIC == VIRTIO_IB_ACCESS_REMOTE_ATOMIC,
	       "window access");

/* ctx->ops.alloc_mw: a window of type 1 or 2 (type 2 needs
 * MEM_WINDOW_TYPE_2B), unbound; NULL with errno set. */
struct ibv_mw *vibv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct vibv_context *ctx = vibv_ctx(pd->context);
	uint32_t mwn = 0, rkey = 0;
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	if (!vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW) ||
	    (type == IBV_MW_TYPE_2 &&
	     !vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = VRDMA_PROV_CALL(ctx->ops, alloc_mw, ctx->prov, pd->handle, (uint32_t)type,
			      &mwn, &rkey);
	if (ret) {
		free(mw);
		vibv_errno(ret);
		return NULL;
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = rkey;
	mw->handle = mwn;
	mw->type = type;
	return mw;
}

/* ctx->ops.dealloc_mw: unbinds (the device does) and frees a window: 0 or
 * a positive errno. */
int vibv_dealloc_mw(struct ibv_mw *mw)
{
	struct vibv_context *ctx = vibv_ctx(mw->context);
	int ret;

	ret = VRDMA_PROV_CALL(ctx->ops, dealloc_mw, ctx->prov, mw->handle);
	if (ret)
		return vibv_errno(ret);
	vibv_binds_forget(ctx, 0, false, mw);
	free(mw);
	return 0;
}

/* ctx->ops.bind_mw (type 1; verbs.h checked the type, the MR's PD and that
 * a missing MR comes with addr and length 0): 0 or a positive errno. A
 * bind of length 0 unbinds. */
int vibv_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct vibv_qp *qp = vrdma_qp(ibqp);
	struct vibv_context *ctx = vibv_ctx(ibqp->context);
	const struct ibv_mw_bind_info *bi = &mw_bind->bind_info;
	struct vrdma_send_wr pw;
	struct vibv_bind *b = NULL;
	bool signaled;
	uint32_t access;
	int ret;

	if (ibqp->context != mw->context || mw->type != IBV_MW_TYPE_1 ||
	    (ibqp->qp_type != IBV_QPT_RC && ibqp->qp_type != IBV_QPT_UC) ||
	    (mw_bind->send_flags & ~(unsigned int)(IBV_SEND_SIGNALED | IBV_SEND_FENCE)) ||
	    (bi->length && !bi->mr))
		return EINVAL;
	ret = vibv_mw_access(bi->mw_access_flags, &access);
	if (ret)
		return ret;

	memset(&pw, 0, sizeof(pw));
	pw.wr_id = mw_bind->wr_id;
	pw.opcode = VIRTIO_IB_WR_BIND_MW;
	pw.send_flags = (uint8_t)mw_bind->send_flags;
	pw.bind_mw.addr = bi->addr;
	pw.bind_mw.length = bi->length;
	pw.bind_mw.mr_lkey = bi->mr ? bi->mr->lkey : 0;
	pw.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	pw.bind_mw.access = access;

	signaled = qp->sq_sig_all || (mw_bind->send_flags & IBV_SEND_SIGNALED);
	if (signaled) {
		/* Remembered before posting: another thread may poll the
		 * completion before post_send returns. */
		b = calloc(1, sizeof(*b));
		if (!b)
			return ENOMEM;
		b->qp_num = ibqp->qp_num;
		b->wr_id = mw_bind->wr_id;
		b->mw = mw;
		b->rkey = pw.bind_mw.rkey;
		pthread_mutex_lock(&ctx->obj_lock);
		{
			struct vibv_bind **pp = &ctx->binds;

			while (*pp)
				pp = &(*pp)->next;
			*pp = b;
		}
		__atomic_fetch_add(&ctx->nbinds, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ctx->obj_lock);
	}
	ret = qp->ops->post_send(qp->prov, &pw, 1);
	if (ret != 1) {
		if (b) {
			struct vibv_bind **pp;

			pthread_mutex_lock(&ctx->obj_lock);
			for (pp = &ctx->binds; *pp; pp = &(*pp)->next) {
				if (*pp == b) {
					*pp = b->next;
					free(b);
					__atomic_fetch_sub(&ctx->nbinds, 1, __ATOMIC_RELEASE);
					break;
				}
			}
			pthread_mutex_unlock(&ctx->obj_lock);
		}
		return ret < 0 ? -ret : ENOMEM;
	}
	if (!signaled)
		mw->rkey = pw.bind_mw.rkey;
	return 0;
}
