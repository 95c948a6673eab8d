/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake device (VRDMA_FAKE_DEVICE=N, N devices "vrdma0".."vrdma<N-1>",
 * 1 <= N <= 8; any other non-zero value means 1). It has no network and no
 * backend: it exists so the verbs layer and unmodified tools can be tested
 * without a daemon. What it does:
 *
 *   device   MAC 02:76:72:64:00:<i+1>, MTU 1500, 10 Gb/s, link up,
 *            1024 QPs / CQs, 4096 WRs, 8 SGEs, no SRQ, no atomics
 *   GIDs     16 entries: 0 = fe80::<EUI-64 of MAC>, 1 = ::ffff:192.0.2.<i+1>
 *            (TEST-NET-1), both RoCE v2; the others empty
 *   PD, MR   numbers handed out; MRs share nothing (there is no device)
 *   CQ       a ring of completions with an eventfd for events
 *   QP       RC/UC/UD; modify stores the attributes, query returns them;
 *            a send WR posted in RTS completes at once with success in the
 *            send CQ (if signaled), byte_len the sum of its SGEs; receive
 *            WRs are accepted up to max_recv_wr and never complete
 *   AH       numbers handed out
 * Everything else (SRQ, multicast, async events) is absent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs/provider.h"

#define FAKE_MAX_DEVICES 8
#define FAKE_GID_TBL_LEN 16
#define FAKE_MAX_QPS     1024
#define FAKE_MAX_CQS     1024
#define FAKE_MAX_WR      4096
#define FAKE_MAX_SGE     8
#define FAKE_MAX_CQE     65536
#define FAKE_MAX_INLINE  VIRTIO_RDMA_INLINE_DATA_SIZE

struct vrdma_prov_dev {
	int index;
	uint8_t mac[6];
	pthread_mutex_t lock;
	uint32_t next_pdn, next_mrn, next_cqn, next_qp_index, next_ah;
};

struct vrdma_prov_cq {
	struct vrdma_prov_dev *dev;
	pthread_mutex_t lock;
	struct vrdma_prov_wc *ring;
	uint32_t size, head, count;
	bool armed;
	int efd;
};

struct vrdma_prov_qp {
	struct vrdma_prov_dev *dev;
	struct vrdma_prov_cq *send_cq;
	pthread_mutex_t lock;
	uint32_t qpn;
	uint8_t qp_type;
	bool sq_sig_all;
	uint32_t recv_posted;
	struct vrdma_prov_qp_attr attr; /* qp_state and everything modified */
};

static int fake_count(void)
{
	const char *e = getenv("VRDMA_FAKE_DEVICE");
	long n = e ? strtol(e, NULL, 10) : 1;

	return n >= 1 && n <= FAKE_MAX_DEVICES ? (int)n : 1;
}

static void fake_mac(int index, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0x76; /* 'v' */
	mac[2] = 0x72; /* 'r' */
	mac[3] = 0x64; /* 'd' */
	mac[4] = 0x00;
	mac[5] = (uint8_t)(index + 1);
}

static int fake_discover(struct vrdma_prov_dev_info *devs, int max)
{
	int n = fake_count(), i;

	for (i = 0; i < n && i < max; i++) {
		memset(&devs[i], 0, sizeof(devs[i]));
		snprintf(devs[i].name, sizeof(devs[i].name), "vrdma%d", i);
		snprintf(devs[i].path, sizeof(devs[i].path), "fake:%d", i);
		fake_mac(i, devs[i].mac);
		devs[i].priv = (uint64_t)i;
	}
	return i;
}

static int fake_open(const struct vrdma_prov_dev_info *info, struct vrdma_prov_dev **out)
{
	struct vrdma_prov_dev *dev;

	if (info->priv >= FAKE_MAX_DEVICES)
		return -ENODEV;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->index = (int)info->priv;
	fake_mac(dev->index, dev->mac);
	pthread_mutex_init(&dev->lock, NULL);
	dev->next_pdn = 1;
	dev->next_mrn = 1;
	dev->next_qp_index = 2; /* 0 reserved, 1 = GSI */
	dev->next_ah = 1;
	*out = dev;
	return 0;
}

static void fake_close(struct vrdma_prov_dev *dev)
{
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static int fake_query_device(struct vrdma_prov_dev *dev, struct vrdma_prov_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->device_cap_flags = VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN;
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = VRDMA_PAGE_SIZE;
	a->hw_ver = 1;
	a->max_qp_wr = FAKE_MAX_WR;
	a->max_send_sge = FAKE_MAX_SGE;
	a->max_recv_sge = FAKE_MAX_SGE;
	a->max_sge_rd = FAKE_MAX_SGE;
	a->max_cqe = FAKE_MAX_CQE;
	a->max_mr = 65536;
	a->max_pd = 65536;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_ah = 65536;
	a->local_ca_ack_delay = 15;
	memcpy(a->mac, dev->mac, 6);
	a->max_rdma_qps = FAKE_MAX_QPS;
	a->max_rdma_cqs = FAKE_MAX_CQS;
	return 0;
}

static int fake_query_port(struct vrdma_prov_dev *dev, struct vrdma_prov_port_attr *a)
{
	(void)dev;
	memset(a, 0, sizeof(*a));
	a->gid_tbl_len = FAKE_GID_TBL_LEN;
	a->max_msg_sz = 1u << 31;
	a->link_up = true;
	a->mtu = 1500;
	a->speed = 10000;
	a->pkey_tbl_len = 1;
	return 0;
}

static int fake_query_gid(struct vrdma_prov_dev *dev, uint32_t index,
			  struct vrdma_prov_gid *gid)
{
	uint8_t addr[4] = { 192, 0, 2, 0 };

	if (index >= FAKE_GID_TBL_LEN)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	gid->gid_type = VRDMA_PROV_GID_TYPE_ROCE_V2;
	switch (index) {
	case 0:
		vrdma_prov_gid_from_mac(dev->mac, gid->gid);
		return 0;
	case 1:
		addr[3] = (uint8_t)(dev->index + 1);
		vrdma_prov_gid_from_ipv4(addr, gid->gid);
		return 0;
	default:
		return -ENODATA;
	}
}

/* A number from *next under the device lock. */
static uint32_t fake_next(struct vrdma_prov_dev *dev, uint32_t *next)
{
	uint32_t v;

	pthread_mutex_lock(&dev->lock);
	v = (*next)++;
	pthread_mutex_unlock(&dev->lock);
	return v;
}

static int fake_create_pd(struct vrdma_prov_dev *dev, uint32_t *pdn)
{
	*pdn = fake_next(dev, &dev->next_pdn);
	return 0;
}

static int fake_destroy_pd(struct vrdma_prov_dev *dev, uint32_t pdn)
{
	(void)dev;
	(void)pdn;
	return 0;
}

static int fake_reg_mr(struct vrdma_prov_dev *dev, uint32_t pdn, void *addr,
		       uint64_t length, uint64_t iova, uint32_t access,
		       struct vrdma_prov_mr *mr)
{
	(void)pdn;
	(void)addr;
	(void)length;
	(void)iova;
	if (access & ~VIRTIO_IB_ACCESS_SEED_MASK)
		return -EOPNOTSUPP;
	mr->mrn = fake_next(dev, &dev->next_mrn);
	mr->lkey = mr->mrn << 8 | 0x11;
	mr->rkey = mr->mrn << 8 | 0x22;
	return 0;
}

static int fake_dereg_mr(struct vrdma_prov_dev *dev, uint32_t mrn)
{
	(void)dev;
	(void)mrn;
	return 0;
}

static int fake_create_cq(struct vrdma_prov_dev *dev, uint32_t cqe, void *cookie,
			  struct vrdma_prov_cq **out, struct vrdma_prov_cq_info *info)
{
	struct vrdma_prov_cq *cq;

	(void)cookie;
	if (!cqe || cqe > FAKE_MAX_CQE)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ring = calloc(cqe, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!cq->ring || cq->efd < 0) {
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq->ring);
		free(cq);
		return -ENOMEM;
	}
	cq->dev = dev;
	cq->size = cqe;
	pthread_mutex_init(&cq->lock, NULL);
	info->cqn = fake_next(dev, &dev->next_cqn);
	info->cqe = cqe;
	info->event_fd = cq->efd;
	*out = cq;
	return 0;
}

static int fake_destroy_cq(struct vrdma_prov_cq *cq)
{
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

/* Adds a completion (signalling an armed CQ). -ENOMEM when full. */
static int fake_cq_push(struct vrdma_prov_cq *cq, const struct vrdma_prov_wc *wc)
{
	uint64_t one = 1;
	bool signal = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->size) {
		pthread_mutex_unlock(&cq->lock);
		return -ENOMEM;
	}
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
	if (cq->armed) {
		cq->armed = false;
		signal = true;
	}
	pthread_mutex_unlock(&cq->lock);
	if (signal && write(cq->efd, &one, sizeof(one)) != sizeof(one))
		return -EIO;
	return 0;
}

static int fake_poll_cq(struct vrdma_prov_cq *cq, struct vrdma_prov_wc *wc, int n)
{
	int k = 0;

	pthread_mutex_lock(&cq->lock);
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
	return k;
}

static int fake_arm_cq(struct vrdma_prov_cq *cq, uint32_t flags)
{
	if (!(flags & (VIRTIO_IB_NOTIFY_SOLICITED | VIRTIO_IB_NOTIFY_NEXT_COMPLETION)))
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

static int fake_cq_consume_event(struct vrdma_prov_cq *cq)
{
	uint64_t v;

	if (read(cq->efd, &v, sizeof(v)) == sizeof(v))
		return 1;
	return errno == EAGAIN ? 0 : -errno;
}

static int fake_create_qp(struct vrdma_prov_dev *dev, const struct vrdma_prov_qp_init *in,
			  void *cookie, struct vrdma_prov_qp **out,
			  struct vrdma_prov_qp_info *info)
{
	struct vrdma_prov_qp *qp;
	uint32_t index;

	(void)cookie;
	if (in->qp_type != VIRTIO_IB_QPT_RC && in->qp_type != VIRTIO_IB_QPT_UC &&
	    in->qp_type != VIRTIO_IB_QPT_UD)
		return -EINVAL;
	if (in->srq)
		return -EOPNOTSUPP;
	if (in->cap.max_send_wr > FAKE_MAX_WR || in->cap.max_recv_wr > FAKE_MAX_WR ||
	    in->cap.max_send_sge > FAKE_MAX_SGE || in->cap.max_recv_sge > FAKE_MAX_SGE ||
	    in->cap.max_inline_data > FAKE_MAX_INLINE)
		return -EINVAL;
	index = fake_next(dev, &dev->next_qp_index);
	if (index >= FAKE_MAX_QPS)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->dev = dev;
	qp->send_cq = in->send_cq;
	pthread_mutex_init(&qp->lock, NULL);
	qp->qpn = vrdma_qpn_make(index, 0);
	qp->qp_type = in->qp_type;
	qp->sq_sig_all = in->sq_sig_all;
	qp->attr.qp_state = VIRTIO_IB_QPS_RESET;
	qp->attr.cap = in->cap;
	if (qp->attr.cap.max_inline_data < 64)
		qp->attr.cap.max_inline_data = 64;
	info->qpn = qp->qpn;
	info->cap = qp->attr.cap;
	*out = qp;
	return 0;
}

static int fake_modify_qp(struct vrdma_prov_qp *qp, const struct vrdma_prov_qp_attr *a,
			  uint32_t mask)
{
	struct vrdma_prov_qp_attr *s = &qp->attr;

	if (mask & ~VIRTIO_IB_QP_ATTR_MASK_ALL)
		return -EINVAL;
	pthread_mutex_lock(&qp->lock);
	if ((mask & VIRTIO_IB_QP_CUR_STATE) && a->cur_qp_state != s->qp_state) {
		pthread_mutex_unlock(&qp->lock);
		return -EINVAL;
	}
	if (mask & VIRTIO_IB_QP_STATE)
		s->qp_state = a->qp_state;
	if (mask & VIRTIO_IB_QP_ACCESS_FLAGS)
		s->qp_access_flags = a->qp_access_flags;
	if (mask & VIRTIO_IB_QP_QKEY)
		s->qkey = a->qkey;
	if (mask & VIRTIO_IB_QP_AV)
		s->ah_attr = a->ah_attr;
	if (mask & VIRTIO_IB_QP_PATH_MTU)
		s->path_mtu = a->path_mtu;
	if (mask & VIRTIO_IB_QP_TIMEOUT)
		s->timeout = a->timeout;
	if (mask & VIRTIO_IB_QP_RETRY_CNT)
		s->retry_cnt = a->retry_cnt;
	if (mask & VIRTIO_IB_QP_RNR_RETRY)
		s->rnr_retry = a->rnr_retry;
	if (mask & VIRTIO_IB_QP_RQ_PSN)
		s->rq_psn = a->rq_psn;
	if (mask & VIRTIO_IB_QP_MAX_QP_RD_ATOMIC)
		s->max_rd_atomic = a->max_rd_atomic;
	if (mask & VIRTIO_IB_QP_MIN_RNR_TIMER)
		s->min_rnr_timer = a->min_rnr_timer;
	if (mask & VIRTIO_IB_QP_SQ_PSN)
		s->sq_psn = a->sq_psn;
	if (mask & VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC)
		s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & VIRTIO_IB_QP_DEST_QPN)
		s->dest_qp_num = a->dest_qp_num;
	if (mask & VIRTIO_IB_QP_RATE_LIMIT)
		s->rate_limit = a->rate_limit;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static int fake_query_qp(struct vrdma_prov_qp *qp, uint32_t mask,
			 struct vrdma_prov_qp_attr *a)
{
	(void)mask;
	pthread_mutex_lock(&qp->lock);
	*a = qp->attr;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static int fake_destroy_qp(struct vrdma_prov_qp *qp)
{
	pthread_mutex_destroy(&qp->lock);
	free(qp);
	return 0;
}

/* The completion opcode of a send WR opcode, or -1. */
static int fake_wc_opcode(uint8_t op)
{
	switch (op) {
	case VIRTIO_IB_WR_SEND:
	case VIRTIO_IB_WR_SEND_WITH_IMM:
		return VIRTIO_IB_WC_SEND;
	case VIRTIO_IB_WR_RDMA_WRITE:
	case VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM:
		return VIRTIO_IB_WC_RDMA_WRITE;
	case VIRTIO_IB_WR_RDMA_READ:
		return VIRTIO_IB_WC_RDMA_READ;
	default:
		return -1;
	}
}

static int fake_post_send(struct vrdma_prov_qp *qp, const struct vrdma_prov_send_wr *wr,
			  unsigned int n)
{
	unsigned int i;
	uint8_t state;

	pthread_mutex_lock(&qp->lock);
	state = qp->attr.qp_state;
	pthread_mutex_unlock(&qp->lock);
	for (i = 0; i < n; i++) {
		struct vrdma_prov_wc wc;
		uint64_t len = 0;
		uint32_t s;
		int op = fake_wc_opcode(wr[i].opcode), ret;

		if (state != VIRTIO_IB_QPS_RTS || op < 0)
			return i ? (int)i : -EINVAL;
		if (wr[i].num_sge > qp->attr.cap.max_send_sge &&
		    !(wr[i].send_flags & VIRTIO_IB_SEND_INLINE))
			return i ? (int)i : -EINVAL;
		for (s = 0; s < wr[i].num_sge; s++)
			len += wr[i].sg_list[s].length;
		if ((wr[i].send_flags & VIRTIO_IB_SEND_INLINE) &&
		    len > qp->attr.cap.max_inline_data)
			return i ? (int)i : -EINVAL;
		if (!qp->sq_sig_all && !(wr[i].send_flags & VIRTIO_IB_SEND_SIGNALED))
			continue;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr[i].wr_id;
		wc.status = VIRTIO_IB_WC_SUCCESS;
		wc.opcode = (uint8_t)op;
		wc.byte_len = (uint32_t)len;
		wc.qp_num = qp->qpn;
		ret = fake_cq_push(qp->send_cq, &wc);
		if (ret)
			return i ? (int)i : ret;
	}
	return (int)n;
}

static int fake_post_recv(struct vrdma_prov_qp *qp, const struct vrdma_prov_recv_wr *wr,
			  unsigned int n)
{
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&qp->lock);
	for (i = 0; i < n; i++) {
		if (qp->attr.qp_state == VIRTIO_IB_QPS_RESET ||
		    wr[i].num_sge > qp->attr.cap.max_recv_sge) {
			ret = -EINVAL;
			break;
		}
		if (qp->recv_posted >= qp->attr.cap.max_recv_wr) {
			ret = -ENOMEM;
			break;
		}
		qp->recv_posted++;
	}
	pthread_mutex_unlock(&qp->lock);
	return i ? (int)i : ret;
}

static int fake_create_ah(struct vrdma_prov_dev *dev, uint32_t pdn,
			  const struct vrdma_prov_ah_attr *attr, uint32_t *ah)
{
	(void)pdn;
	if (attr->grh.sgid_index >= FAKE_GID_TBL_LEN)
		return -EINVAL;
	*ah = fake_next(dev, &dev->next_ah);
	return 0;
}

static int fake_destroy_ah(struct vrdma_prov_dev *dev, uint32_t pdn, uint32_t ah)
{
	(void)dev;
	(void)pdn;
	(void)ah;
	return 0;
}

const struct vrdma_prov_ops vrdma_prov_fake_ops = {
	.name = "fake",
	.discover = fake_discover,
	.open = fake_open,
	.close = fake_close,
	.query_device = fake_query_device,
	.query_port = fake_query_port,
	.query_gid = fake_query_gid,
	.create_pd = fake_create_pd,
	.destroy_pd = fake_destroy_pd,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
	.create_cq = fake_create_cq,
	.destroy_cq = fake_destroy_cq,
	.poll_cq = fake_poll_cq,
	.arm_cq = fake_arm_cq,
	.cq_consume_event = fake_cq_consume_event,
	.create_qp = fake_create_qp,
	.modify_qp = fake_modify_qp,
	.query_qp = fake_query_qp,
	.destroy_qp = fake_destroy_qp,
	.post_send = fake_post_send,
	.post_recv = fake_post_recv,
	.create_ah = fake_create_ah,
	.destroy_ah = fake_destroy_ah,
};
