/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion channels and completion queues.
 *
 * A completion channel is an epoll instance: its fd is what the
 * application polls (readable while some CQ of the channel has an event)
 * and each CQ created on the channel adds the provider's event fd of that
 * CQ to it (struct vibv_prov_cq_info.event_fd), with the CQ as the epoll
 * cookie. ibv_get_cq_event() waits in epoll_wait (or, when the application
 * made the channel fd O_NONBLOCK, only looks), then asks the provider to
 * consume the CQ's pending event. No thread, no extra copy of events: the
 * provider's fd is signalled by whatever notifies the CQ (the vhost-user
 * call eventfd of the CQ's virtqueue, or the provider's own eventfd). Events
 * of one CQ coalesce until consumed, which matches the verbs rule of one
 * event per ibv_req_notify_cq().
 *
 * Event accounting: every event handed out is counted on the CQ;
 * ibv_destroy_cq() waits until the application acknowledged as many with
 * ibv_ack_cq_events() (and ibv_ack_async_event() for CQ errors), as the
 * verbs API requires.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs/verbs_priv.h"

/* ------------------------------------------------------------------------ */
/* Completion channels                                                       */
/* ------------------------------------------------------------------------ */

/* Returns a new completion channel, or NULL with errno set. */
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ibctx)
{
	struct ibv_comp_channel *ch;
	int fd;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	ch->context = ibctx;
	ch->fd = fd;
	ch->refcnt = 0;
	return ch;
}

/* Destroys a channel: 0, or EBUSY while CQs use it. */
int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct ibv_context *ibctx = ch->context;

	pthread_mutex_lock(&ibctx->mutex);
	if (ch->refcnt) {
		pthread_mutex_unlock(&ibctx->mutex);
		errno = EBUSY;
		return EBUSY;
	}
	close(ch->fd);
	free(ch);
	pthread_mutex_unlock(&ibctx->mutex);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Completion queues                                                         */
/* ------------------------------------------------------------------------ */

/* A CQ of at least cqe entries, or NULL with errno set. */
struct vibv_cq *vibv_cq_create(struct ibv_context *ibctx, int cqe,
					     void *cq_context,
					     struct ibv_comp_channel *channel,
					     int comp_vector)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_prov_cq_info info;
	struct vibv_cq *cq;
	int ret;

	if (cqe <= 0 || comp_vector < 0 || comp_vector >= ibctx->num_comp_vectors ||
	    (channel && channel->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ops = ctx->ops;
	memset(&info, 0, sizeof(info));
	info.event_fd = -1;
	ret = VRDMA_PROV_CALL(ctx->ops, create_cq, ctx->prov, (uint32_t)cqe, cq,
			      &cq->prov, &info);
	if (ret) {
		free(cq);
		vibv_errno(ret);
		return NULL;
	}
	cq->event_fd = info.event_fd;

	cq->ibcq.context = ibctx;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.handle = info.cqn;
	cq->ibcq.cqe = info.cqe > (uint32_t)cqe ? (int)info.cqe : cqe;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);

	if (channel) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };

		ret = 0;
		if (cq->event_fd < 0)
			ret = EOPNOTSUPP;
		else if (epoll_ctl(channel->fd, EPOLL_CTL_ADD, cq->event_fd, &ev))
			ret = errno;
		if (ret) {
			cq->ops->destroy_cq(cq->prov);
			pthread_cond_destroy(&cq->ibcq.cond);
			pthread_mutex_destroy(&cq->ibcq.mutex);
			free(cq);
			errno = ret;
			return NULL;
		}
		pthread_mutex_lock(&ibctx->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&ibctx->mutex);
	}
	pthread_mutex_init(&cq->poll_lock, NULL);
	vibv_obj_add(ctx, &cq->obj, VRDMA_OBJ_CQ, info.cqn);
	return cq;
}

/* Returns a CQ of at least cqe entries, or NULL with errno set. */
struct ibv_cq *ibv_create_cq(struct ibv_context *ibctx, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct vibv_cq *cq = vibv_cq_create(ibctx, cqe, cq_context,
							  channel, comp_vector);

	return cq ? &cq->ibcq : NULL;
}

/*
 * Resizes a CQ to at least cqe entries (RESIZE_CQ; the provider replaces
 * the completion ring when it grows, losing and reordering nothing):
 * 0 with ibcq->cqe updated, or a positive errno (EINVAL when the CQ holds
 * more completions than the new size). A device without CQ resize keeps
 * the size: 0 if cqe already fits, else EOPNOTSUPP.
 */
int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vibv_cq *cq = vrdma_cq(ibcq);
	uint32_t n;
	int ret;

	if (cqe <= 0) {
		errno = EINVAL;
		return EINVAL;
	}
	if (!cq->ops->resize_cq ||
	    !vibv_has_cap(vibv_ctx(ibcq->context), VIRTIO_IB_DEVICE_RESIZE_CQ)) {
		if (cqe <= ibcq->cqe)
			return 0;
		errno = EOPNOTSUPP;
		return EOPNOTSUPP;
	}
	n = (uint32_t)cqe;
	ret = cq->ops->resize_cq(cq->prov, &n);
	if (ret)
		return vibv_errno(ret);
	ibcq->cqe = n > (uint32_t)cqe && n <= INT32_MAX ? (int)n : cqe;
	return 0;
}

/* Destroys a CQ, then waits until the events it handed out were
 * acknowledged: 0 or a positive errno. A CQ that QPs still use is refused
 * (EBUSY) at once without waiting, as rdma-core does (the kernel's destroy
 * comes before its wait), so teardown that tries the CQ first never hangs. */
int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct vibv_cq *cq = vrdma_cq(ibcq);
	struct ibv_comp_channel *channel = ibcq->channel;
	int ret;

	/* No more asynchronous events for it (an event counted before this
	 * is visible in the wait below). */
	vibv_obj_del(vibv_ctx(ibcq->context), &cq->obj);
	if (channel && cq->event_fd >= 0)
		epoll_ctl(channel->fd, EPOLL_CTL_DEL, cq->event_fd, NULL);
	ret = cq->ops->destroy_cq(cq->prov);
	if (ret) {
		if (channel && cq->event_fd >= 0) {
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };

			epoll_ctl(channel->fd, EPOLL_CTL_ADD, cq->event_fd, &ev);
		}
		vibv_obj_add(vibv_ctx(ibcq->context), &cq->obj, VRDMA_OBJ_CQ,
				    cq->obj.num);
		return vibv_errno(ret);
	}
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_events_delivered ||
	       ibcq->async_events_completed != cq->async_events_delivered)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	if (channel) {
		pthread_mutex_lock(&channel->context->mutex);
		channel->refcnt--;
		pthread_mutex_unlock(&channel->context->mutex);
	}
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_mutex_destroy(&cq->poll_lock);
	free(cq);
	return 0;
}

/* Waits for (or, on an O_NONBLOCK channel fd, polls for) the next CQ event
 * of the channel. Returns 0 with *cq and *cq_context set, or -1 with errno
 * (EAGAIN: none pending). */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **out_cq,
		     void **cq_context)
{
	for (;;) {
		struct epoll_event ev;
		struct vibv_cq *cq;
		int fl, n, ret;

		fl = fcntl(channel->fd, F_GETFL);
		n = epoll_wait(channel->fd, &ev, 1,
			       fl >= 0 && (fl & O_NONBLOCK) ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR && vibv_wait_restarts())
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		cq = ev.data.ptr;
		ret = cq->ops->cq_consume_event(cq->prov);
		if (ret < 0) {
			vibv_errno(ret);
			return -1;
		}
		if (ret == 0)
			continue; /* another thread took it */
		pthread_mutex_lock(&cq->ibcq.mutex);
		cq->comp_events_delivered++;
		pthread_mutex_unlock(&cq->ibcq.mutex);
		*out_cq = &cq->ibcq;
		*cq_context = cq->ibcq.cq_context;
		return 0;
	}
}

/* Acknowledges nevents events of ibv_get_cq_event on cq. */
void ibv_ack_cq_events(struct ibv_cq *ibcq, unsigned int nevents)
{
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->comp_events_completed += nevents;
	pthread_cond_signal(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}

/* ------------------------------------------------------------------------ */
/* Data path: ctx->ops.poll_cq / req_notify_cq                               */
/* ------------------------------------------------------------------------ */

/* Completion status of the device (RFC numbering, then the extension's
 * MW_BIND_ERR) to libibverbs. */
static const uint8_t vibv_wc_status[17] = {
	[VIRTIO_IB_WC_SUCCESS] = IBV_WC_SUCCESS,
	[VIRTIO_IB_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
	[VIRTIO_IB_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
	[VIRTIO_IB_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
	[VIRTIO_IB_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
	[VIRTIO_IB_WC_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
	[VIRTIO_IB_WC_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
	[VIRTIO_IB_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
	[VIRTIO_IB_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
	[VIRTIO_IB_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
	[VIRTIO_IB_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
	[VIRTIO_IB_WC_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
	[VIRTIO_IB_WC_REM_ABORT_ERR] = IBV_WC_REM_ABORT_ERR,
	[VIRTIO_IB_WC_FATAL_ERR] = IBV_WC_FATAL_ERR,
	[VIRTIO_IB_WC_RESP_TIMEOUT_ERR] = IBV_WC_RESP_TIMEOUT_ERR,
	[VIRTIO_IB_WC_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	[VIRTIO_IB_WC_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
};

/* Completion opcodes of the device (the RFC's 0-4, the extension's 5-8;
 * REG_MR (9) completes only WRs libibverbs cannot post). */
static const uint8_t vibv_wc_opcode[9] = {
	[VIRTIO_IB_WC_SEND] = IBV_WC_SEND,
	[VIRTIO_IB_WC_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
	[VIRTIO_IB_WC_RDMA_READ] = IBV_WC_RDMA_READ,
	[VIRTIO_IB_WC_RECV] = IBV_WC_RECV,
	[VIRTIO_IB_WC_RECV_RDMA_WITH_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
	[VIRTIO_IB_WC_COMP_SWAP] = IBV_WC_COMP_SWAP,
	[VIRTIO_IB_WC_FETCH_ADD] = IBV_WC_FETCH_ADD,
	[VIRTIO_IB_WC_BIND_MW] = IBV_WC_BIND_MW,
	[VIRTIO_IB_WC_LOCAL_INV] = IBV_WC_LOCAL_INV,
};

/* RoCE packet type of a UD receive in wc.sl. */
#define VRDMA_WC_SL_ROCE_V2 0x8
#define VRDMA_WC_SL_IPV6    0x1
#define VRDMA_WC_SL_IPV4    0x2

_Static_assert(VIRTIO_IB_WC_GRH == IBV_WC_GRH, "wc flags");
_Static_assert(VIRTIO_IB_WC_WITH_IMM == IBV_WC_WITH_IMM, "wc flags");

/* One device completion as a struct ibv_wc. A status or opcode outside the
 * tables (a device bug) reads as a general error; an error completion keeps
 * the opcode the device gave when it is known (libibverbs leaves it
 * undefined). */
static inline void vibv_wc_convert(const struct vrdma_wc *p, struct ibv_wc *wc)
{
	wc->wr_id = p->wr_id;
	if (p->status < sizeof(vibv_wc_status) && p->opcode < sizeof(vibv_wc_opcode)) {
		wc->status = (enum ibv_wc_status)vibv_wc_status[p->status];
		wc->opcode = (enum ibv_wc_opcode)vibv_wc_opcode[p->opcode];
	} else {
		wc->status = p->status < sizeof(vibv_wc_status) &&
					     p->status != VIRTIO_IB_WC_SUCCESS ?
				     (enum ibv_wc_status)vibv_wc_status[p->status] :
				     IBV_WC_GENERAL_ERR;
		wc->opcode = IBV_WC_SEND;
	}
	wc->vendor_err = p->vendor_err;
	wc->byte_len = p->byte_len;
	wc->qp_num = p->qp_num;
	wc->src_qp = p->src_qp;
	wc->wc_flags = p->wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM);
	/* imm_data and invalidated_rkey share one union in struct ibv_wc. */
	if (p->wc_flags & VIRTIO_IB_WC_WITH_INV) {
		wc->invalidated_rkey = p->invalidated_rkey;
		wc->wc_flags = (wc->wc_flags & ~(unsigned int)IBV_WC_WITH_IMM) |
			       IBV_WC_WITH_INV;
	} else {
		wc->imm_data = p->imm_data;
	}
	wc->pkey_index = 0;
	wc->slid = 0;
	/* A UD receive on RoCE: the packet type in sl, as RoCE HCAs report it
	 * (bit 3: UDP, i.e. RoCE v2; bits 0..2: 1 IPv6, 2 IPv4); UCX's UD
	 * transport reads the destination GID of the GRH area by it. */
	wc->sl = (p->wc_flags & VIRTIO_IB_WC_GRH) ?
			 (uint8_t)(VRDMA_WC_SL_ROCE_V2 | ((p->wc_flags & VIRTIO_IB_WC_GRH_IPV4) ?
							  VRDMA_WC_SL_IPV4 : VRDMA_WC_SL_IPV6)) :
			 0;
	wc->dlid_path_bits = 0;
}

/* Out-of-line copy for the extended CQs. */
void vibv_wc_to_ibv(const struct vrdma_wc *p, struct ibv_wc *wc)
{
	vibv_wc_convert(p, wc);
}

/* Forgets pending binds: all (by_qp false, mw NULL), those of QP qp_num
 * (by_qp), or those of window mw. */
void vibv_binds_forget(struct vibv_context *ctx, uint32_t qp_num,
			      bool by_qp, struct ibv_mw *mw)
{
	struct vibv_bind **pp, *b;

	if (!__atomic_load_n(&ctx->nbinds, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ctx->obj_lock);
	pp = &ctx->binds;
	while ((b = *pp)) {
		if ((by_qp && b->qp_num != qp_num) || (mw && b->mw != mw)) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		free(b);
		__atomic_fetch_sub(&ctx->nbinds, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* Completions of ibv_bind_mw binds: a successful BIND_MW completion sets
 * the window's rkey to the one posted; an error completion of the bind
 * (MW_BIND_ERR, a flush) leaves the window's rkey as it was. */
void vibv_binds_complete(struct vibv_context *ctx,
				const struct ibv_wc *wc, int n)
{
	int i;

	pthread_mutex_lock(&ctx->obj_lock);
	for (i = 0; i < n && ctx->binds; i++) {
		struct vibv_bind **pp, *b;

		if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode != IBV_WC_BIND_MW)
			continue;
		for (pp = &ctx->binds; (b = *pp); pp = &b->next) {
			if (b->qp_num != wc[i].qp_num || b->wr_id != wc[i].wr_id)
				continue;
			if (wc[i].status == IBV_WC_SUCCESS)
				b->mw->rkey = b->rkey;
			*pp = b->next;
			free(b);
			__atomic_fetch_sub(&ctx->nbinds, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* ctx->ops.poll_cq: up to n completions. Returns how many, or -1 (errno). */
int vibv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct vibv_cq *cq = vrdma_cq(ibcq);
	struct vrdma_wc pwc[VRDMA_VERBS_POST_BATCH];
	int done = 0;

	while (done < n) {
		int want = n - done, got, i;

		if (want > VRDMA_VERBS_POST_BATCH)
			want = VRDMA_VERBS_POST_BATCH;
		got = cq->ops->poll_cq(cq->prov, pwc, want);
		if (got < 0) {
			if (done)
				break;
			vibv_errno(got);
			return -1;
		}
		for (i = 0; i < got; i++)
			vibv_wc_convert(&pwc[i], &wc[done + i]);
		if (got > 0 &&
		    __atomic_load_n(&vibv_ctx(ibcq->context)->nbinds, __ATOMIC_ACQUIRE))
			vibv_binds_complete(vibv_ctx(ibcq->context), wc + done, got);
		done += got;
		if (got < want)
			break;
	}
	return done;
}

/* ctx->ops.req_notify_cq: 0 or a positive errno. */
int vibv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vibv_cq *cq = vrdma_cq(ibcq);
	int ret;

	ret = cq->ops->arm_cq(cq->prov, solicited_only ?
						VIRTIO_IB_NOTIFY_SOLICITED :
						VIRTIO_IB_NOTIFY_NEXT_COMPLETION);
	return ret ? -ret : 0;
}
