/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake device (VRDMA_FAKE_DEVICE=N, N devices "vrdma0".."vrdma<N-1>",
 * 1 <= N <= 8; any other non-zero value means 1). It has no network and no
 * backend: it exists so the verbs layer and unmodified tools can be tested
 * without a daemon. What it does:
 *
 *   device   MAC 02:76:72:64:00:<i+1>, MTU 1500, 10 Gb/s, link up,
 *            1024 QPs / CQs, 4096 WRs, 8 SGEs; the extensions: 64 SRQs,
 *            windows of both types, MEM_MGT_EXTENSIONS, atomics (HCA),
 *            CQ and QP resize, P_Key query, async events
 *   GIDs     16 entries: 0 = fe80::<EUI-64 of MAC>, 1 = ::ffff:192.0.2.<i+1>
 *            (TEST-NET-1), both RoCE v2; the others empty
 *   PD, MR   numbers handed out; MRs are remembered (address, keys, access)
 *            for the loopback below
 *   CQ       a ring of completions with an eventfd for events
 *   QP       RC/UC/UD; modify stores the attributes, query returns them.
 *            A send WR posted in RTS completes at once in the send CQ (if
 *            signaled). Loopback: when dest_qp_num names a QP of the same
 *            fake device, a SEND (with immediate, with invalidate) takes the
 *            peer's next receive WR (its SRQ's, if it has one), copies the
 *            bytes and completes it on the peer's receive CQ (RECV, WITH_IMM
 *            / WITH_INV + invalidated_rkey); no receive WR: the send
 *            completes RNR_RETRY_EXC_ERR. Atomics execute on this process's
 *            memory at remote_addr if rkey names a registered MR with
 *            REMOTE_ATOMIC covering it (else REM_ACCESS_ERR), the original
 *            value going to the first SGE. Other sends: byte_len the sum of
 *            the SGEs. LOCAL_INV completes LOCAL_INV; BIND_MW binds the
 *            window its rkey names (bits 8..31) to an MR with MW_BIND
 *            (else MW_BIND_ERR).
 *   SRQ      receive WRs kept in order; SRQ_LIMIT_REACHED (named by srqn)
 *            when one is taken below an armed limit
 *   events   an eventfd and a queue: SRQ_LIMIT_REACHED (by id) and
 *            QP_LAST_WQE_REACHED (by cookie) when a QP with an SRQ is
 *            modified to ERR
 *   AH       numbers handed out
 * Multicast is absent. VRDMA_FAKE_NO_EXT=1 at open makes query_device report none of
 * the extensions (the RFC-only device), to test that the verbs layer then
 * refuses them.
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
#define FAKE_MAX_SRQS    64
#define FAKE_MAX_WR      4096
#define FAKE_MAX_SGE     8
#define FAKE_MAX_CQE     65536
#define FAKE_MAX_MW      1024
#define FAKE_MAX_INLINE  VIRTIO_RDMA_INLINE_DATA_SIZE
#define FAKE_MAX_EVENTS  64

/* A registered MR or an allocated window (one handle space, as on the
 * device). */
struct fake_mr {
	struct fake_mr *next;
	uint32_t handle;
	bool is_mw;
	uint8_t mw_type;
	uint64_t iova, length;     /* MR; window: bound range (length 0: not) */
	uint8_t *addr;             /* MR: where iova starts in this process */
	uint32_t lkey, rkey, access;
	struct fake_mr *bound_mr;  /* window */
};

/* A posted receive WR (the SGEs copied). */
struct fake_rwr {
	uint64_t wr_id;
	uint32_t num_sge;
	struct vrdma_sge sge[FAKE_MAX_SGE];
};

/* A FIFO of receive WRs (an RQ or an SRQ). */
struct fake_rq {
	struct fake_rwr *ring;
	uint32_t size, head, count;
};

struct vibv_prov_dev {
	int index;
	uint8_t mac[6];
	bool seed_only;       /* VRDMA_FAKE_NO_EXT when opened */
	pthread_mutex_t lock; /* numbers, lists, events, every RQ / SRQ */
	uint32_t next_pdn, next_mrn, next_cqn, next_qp_index, next_ah, next_srqn;
	struct fake_mr *mrs;
	struct vibv_prov_qp *qps;
	int event_fd;
	struct vibv_prov_async_event events[FAKE_MAX_EVENTS];
	uint32_t ev_head, ev_count;
};

struct vibv_prov_cq {
	struct vibv_prov_dev *dev;
	pthread_mutex_t lock;
	struct vrdma_wc *ring;
	uint32_t size, head, count;
	bool armed;
	int efd;
	int users; /* QPs, under dev->lock */
};

struct vibv_prov_srq {
	struct vibv_prov_dev *dev;
	void *cookie;
	uint32_t srqn, max_sge, limit;
	struct fake_rq rq; /* under dev->lock */
	int users;         /* QPs */
};

struct vibv_prov_qp {
	struct vibv_prov_dev *dev;
	struct vibv_prov_qp *next; /* dev->qps */
	void *cookie;
	struct vibv_prov_cq *send_cq, *recv_cq;
	struct vibv_prov_srq *srq;
	pthread_mutex_t lock;
	uint32_t qpn;
	uint8_t qp_type;
	bool sq_sig_all;
	struct fake_rq rq; /* under dev->lock */
	struct vrdma_qp_attr attr; /* qp_state and everything modified */
};

static int fake_count(void)
{
	const char *e = getenv("VRDMA_FAKE_DEVICE");
	long n = e ? strtol(e, NULL, 10) : 1;

	return n >= 1 && n <= FAKE_MAX_DEVICES ? (int)n : 1;
}

/* VRDMA_FAKE_NO_EXT=1: the device reports no extension (as a device without
 * VIRTIO_NET_F_ROCE_EXT would), whatever operations the fake has. */
static bool fake_seed_only(void)
{
	const char *e = getenv("VRDMA_FAKE_NO_EXT");

	return e && *e && strcmp(e, "0") != 0;
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

static int fake_discover(struct vibv_prov_dev_info *devs, int max)
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

static int fake_open(const struct vibv_prov_dev_info *info, struct vibv_prov_dev **out)
{
	struct vibv_prov_dev *dev;

	if (info->priv >= FAKE_MAX_DEVICES)
		return -ENODEV;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	/* Counting semaphore: readable while events are queued. */
	dev->event_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (dev->event_fd < 0) {
		free(dev);
		return -ENOMEM;
	}
	dev->index = (int)info->priv;
	dev->seed_only = fake_seed_only();
	fake_mac(dev->index, dev->mac);
	pthread_mutex_init(&dev->lock, NULL);
	dev->next_pdn = 1;
	dev->next_mrn = 1;
	dev->next_qp_index = 2; /* 0 reserved, 1 = GSI */
	dev->next_ah = 1;
	*out = dev;
	return 0;
}

static void fake_close(struct vibv_prov_dev *dev)
{
	while (dev->mrs) {
		struct fake_mr *m = dev->mrs;

		dev->mrs = m->next;
		free(m);
	}
	close(dev->event_fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

static int fake_query_device(struct vibv_prov_dev *dev, struct vrdma_device_attr *a,
			     uint8_t mac[6])
{
	memset(a, 0, sizeof(*a));
	a->device_cap_flags = VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN | VIRTIO_IB_DEVICE_SRQ |
			      VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS |
			      VIRTIO_IB_DEVICE_MEM_WINDOW |
			      VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B |
			      VIRTIO_IB_DEVICE_RESIZE_CQ | VIRTIO_IB_DEVICE_RESIZE_MAX_WR;
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
	memcpy(mac, dev->mac, 6);
	a->max_rdma_qps = FAKE_MAX_QPS;
	a->max_rdma_cqs = FAKE_MAX_CQS;
	a->max_qp = FAKE_MAX_QPS - 2;
	a->max_inline_data = FAKE_MAX_INLINE;
	if (dev->seed_only) {
		a->device_cap_flags = VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN;
		return 0;
	}
	a->ext = true;
	a->max_srq = FAKE_MAX_SRQS;
	a->max_srq_wr = FAKE_MAX_WR;
	a->max_srq_sge = FAKE_MAX_SGE;
	a->max_mw = FAKE_MAX_MW;
	a->max_fast_reg_page_list_len = 256;
	a->max_pkeys = 1;
	a->atomic_cap = VIRTIO_IB_ATOMIC_HCA;
	return 0;
}

static int fake_query_port(struct vibv_prov_dev *dev, struct vibv_prov_port_attr *a)
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

static int fake_query_gid(struct vibv_prov_dev *dev, uint32_t index,
			  struct vibv_prov_gid *gid)
{
	uint8_t addr[4] = { 192, 0, 2, 0 };

	if (index >= FAKE_GID_TBL_LEN)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	gid->gid_type = VRDMA_PROV_GID_TYPE_ROCE_V2;
	switch (index) {
	case 0:
		vibv_prov_gid_from_mac(dev->mac, gid->gid);
		return 0;
	case 1:
		addr[3] = (uint8_t)(dev->index + 1);
		vibv_prov_gid_from_ipv4(addr, gid->gid);
		return 0;
	default:
		return -ENODATA;
	}
}

static int fake_query_pkey(struct vibv_prov_dev *dev, uint32_t index, uint16_t *pkey)
{
	(void)dev;
	if (index != 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

/* Queues an event (dropped when the queue is full). Caller holds dev->lock. */
static void fake_event_locked(struct vibv_prov_dev *dev, uint32_t type, void *cookie,
			      uint32_t id)
{
	struct vibv_prov_async_event *ev;
	uint64_t one = 1;

	if (dev->ev_count == FAKE_MAX_EVENTS)
		return;
	ev = &dev->events[(dev->ev_head + dev->ev_count) % FAKE_MAX_EVENTS];
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->cookie = cookie;
	ev->id = id;
	dev->ev_count++;
	if (write(dev->event_fd, &one, sizeof(one)) != sizeof(one))
		dev->ev_count--;
}

static int fake_async_fd(struct vibv_prov_dev *dev)
{
	return dev->event_fd;
}

static int fake_get_async_event(struct vibv_prov_dev *dev, struct vibv_prov_async_event *ev)
{
	uint64_t v;

	pthread_mutex_lock(&dev->lock);
	if (!dev->ev_count) {
		pthread_mutex_unlock(&dev->lock);
		return -EAGAIN;
	}
	*ev = dev->events[dev->ev_head];
	dev->ev_head = (dev->ev_head + 1) % FAKE_MAX_EVENTS;
	dev->ev_count--;
	/* The counter is >= 1 (one per queued event): this never blocks. */
	if (read(dev->event_fd, &v, sizeof(v)) != sizeof(v)) {
		pthread_mutex_unlock(&dev->lock);
		return -EIO;
	}
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/* Drops the queued events of a destroyed object. Caller holds dev->lock. */
static void fake_events_forget_locked(struct vibv_prov_dev *dev, void *cookie,
				      uint32_t id_type_mask, uint32_t id)
{
	uint32_t i, kept = 0;
	struct vibv_prov_async_event keep[FAKE_MAX_EVENTS];
	uint64_t v;

	for (i = 0; i < dev->ev_count; i++) {
		struct vibv_prov_async_event *ev =
			&dev->events[(dev->ev_head + i) % FAKE_MAX_EVENTS];

		if ((cookie && ev->cookie == cookie) ||
		    (!ev->cookie && ((1u << ev->type) & id_type_mask) && ev->id == id))
			continue;
		keep[kept++] = *ev;
	}
	for (i = kept; i < dev->ev_count; i++)
		if (read(dev->event_fd, &v, sizeof(v)) != sizeof(v))
			break;
	memcpy(dev->events, keep, kept * sizeof(keep[0]));
	dev->ev_head = 0;
	dev->ev_count = kept;
}

/* A number from *next under the device lock. */
static uint32_t fake_next(struct vibv_prov_dev *dev, uint32_t *next)
{
	uint32_t v;

	pthread_mutex_lock(&dev->lock);
	v = (*next)++;
	pthread_mutex_unlock(&dev->lock);
	return v;
}

static int fake_create_pd(struct vibv_prov_dev *dev, uint32_t *pdn)
{
	*pdn = fake_next(dev, &dev->next_pdn);
	return 0;
}

static int fake_destroy_pd(struct vibv_prov_dev *dev, uint32_t pdn)
{
	(void)dev;
	(void)pdn;
	return 0;
}

static int fake_reg_mr(struct vibv_prov_dev *dev, uint32_t pdn, void *addr,
		       uint64_t length, uint64_t iova, uint32_t access,
		       struct vibv_prov_mr *mr)
{
	struct fake_mr *m;

	(void)pdn;
	if (access & ~VIRTIO_IB_ACCESS_EXT_MASK)
		return -EOPNOTSUPP;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&dev->lock);
	m->handle = dev->next_mrn++;
	m->addr = addr;
	m->length = length;
	m->iova = iova;
	m->access = access;
	m->lkey = m->handle << 8 | 0x11;
	m->rkey = m->handle << 8 | 0x22;
	m->next = dev->mrs;
	dev->mrs = m;
	pthread_mutex_unlock(&dev->lock);
	mr->mrn = m->handle;
	mr->lkey = m->lkey;
	mr->rkey = m->rkey;
	return 0;
}

/* Removes handle h of the given kind: 0 or -EINVAL. */
static int fake_mr_del(struct vibv_prov_dev *dev, uint32_t h, bool is_mw)
{
	struct fake_mr **pp, *m;

	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->mrs; (m = *pp); pp = &m->next) {
		if (m->handle == h && m->is_mw == is_mw) {
			*pp = m->next;
			pthread_mutex_unlock(&dev->lock);
			free(m);
			return 0;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return -EINVAL;
}

static int fake_dereg_mr(struct vibv_prov_dev *dev, uint32_t mrn)
{
	return fake_mr_del(dev, mrn, false);
}

static int fake_alloc_mw(struct vibv_prov_dev *dev, uint32_t pdn, uint32_t type,
			 uint32_t *mwn, uint32_t *rkey)
{
	struct fake_mr *m;

	(void)pdn;
	if (type != VRDMA_PROV_MW_TYPE_1 && type != VRDMA_PROV_MW_TYPE_2)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&dev->lock);
	m->handle = dev->next_mrn++;
	m->is_mw = true;
	m->mw_type = (uint8_t)type;
	m->rkey = m->handle << 8 | 0x40;
	m->next = dev->mrs;
	dev->mrs = m;
	pthread_mutex_unlock(&dev->lock);
	*mwn = m->handle;
	*rkey = m->rkey;
	return 0;
}

static int fake_dealloc_mw(struct vibv_prov_dev *dev, uint32_t mwn)
{
	return fake_mr_del(dev, mwn, true);
}

/* The MR or window whose key is key (lkey of an MR when local, else an
 * rkey). Caller holds dev->lock. */
static struct fake_mr *fake_key_find(struct vibv_prov_dev *dev, uint32_t key, bool local)
{
	struct fake_mr *m;

	for (m = dev->mrs; m; m = m->next)
		if ((local && !m->is_mw && m->lkey == key) || (!local && m->rkey == key))
			return m;
	return NULL;
}

/* The object named by bits 8..31 of key. Caller holds dev->lock. */
static struct fake_mr *fake_handle_find(struct vibv_prov_dev *dev, uint32_t key)
{
	struct fake_mr *m;

	for (m = dev->mrs; m; m = m->next)
		if (m->handle == key >> 8)
			return m;
	return NULL;
}

static int fake_create_cq(struct vibv_prov_dev *dev, uint32_t cqe, void *cookie,
			  struct vibv_prov_cq **out, struct vibv_prov_cq_info *info)
{
	struct vibv_prov_cq *cq;

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

static int fake_destroy_cq(struct vibv_prov_cq *cq)
{
	/* A CQ that QPs use is refused, as the device does. */
	pthread_mutex_lock(&cq->dev->lock);
	if (cq->users) {
		pthread_mutex_unlock(&cq->dev->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&cq->dev->lock);
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

static int fake_resize_cq(struct vibv_prov_cq *cq, uint32_t *cqe)
{
	struct vrdma_wc *ring;
	uint32_t i;

	if (!*cqe || *cqe > FAKE_MAX_CQE)
		return -EINVAL;
	ring = calloc(*cqe, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	pthread_mutex_lock(&cq->lock);
	if (cq->count > *cqe) {
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		return -EINVAL;
	}
	for (i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	free(cq->ring);
	cq->ring = ring;
	cq->size = *cqe;
	cq->head = 0;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/* Adds a completion (signalling an armed CQ). -ENOMEM when full. */
static int fake_cq_push(struct vibv_prov_cq *cq, const struct vrdma_wc *wc)
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

static int fake_poll_cq(struct vibv_prov_cq *cq, struct vrdma_wc *wc, int n)
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

static int fake_arm_cq(struct vibv_prov_cq *cq, uint32_t flags)
{
	if (!(flags & (VIRTIO_IB_NOTIFY_SOLICITED | VIRTIO_IB_NOTIFY_NEXT_COMPLETION)))
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

static int fake_cq_consume_event(struct vibv_prov_cq *cq)
{
	uint64_t v;

	if (read(cq->efd, &v, sizeof(v)) == sizeof(v))
		return 1;
	return errno == EAGAIN ? 0 : -errno;
}

/* --- receive queues (caller holds dev->lock) --- */

static int fake_rq_init(struct fake_rq *rq, uint32_t size)
{
	rq->ring = size ? calloc(size, sizeof(*rq->ring)) : NULL;
	if (size && !rq->ring)
		return -ENOMEM;
	rq->size = size;
	rq->head = 0;
	rq->count = 0;
	return 0;
}

/* Grows or shrinks a queue keeping its WRs: 0, -EINVAL, -ENOMEM. */
static int fake_rq_resize(struct fake_rq *rq, uint32_t size)
{
	struct fake_rwr *ring;
	uint32_t i;

	if (rq->count > size)
		return -EINVAL;
	ring = size ? calloc(size, sizeof(*ring)) : NULL;
	if (size && !ring)
		return -ENOMEM;
	for (i = 0; i < rq->count; i++)
		ring[i] = rq->ring[(rq->head + i) % rq->size];
	free(rq->ring);
	rq->ring = ring;
	rq->size = size;
	rq->head = 0;
	return 0;
}

static int fake_rq_post(struct fake_rq *rq, const struct vrdma_recv_wr *wr,
			unsigned int n, uint32_t max_sge)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct fake_rwr *r;

		if (wr[i].num_sge > max_sge)
			return i ? (int)i : -EINVAL;
		if (rq->count == rq->size)
			return i ? (int)i : -ENOMEM;
		r = &rq->ring[(rq->head + rq->count) % rq->size];
		r->wr_id = wr[i].wr_id;
		r->num_sge = wr[i].num_sge;
		memcpy(r->sge, wr[i].sg_list, wr[i].num_sge * sizeof(r->sge[0]));
		rq->count++;
	}
	return (int)n;
}

static bool fake_rq_take(struct fake_rq *rq, struct fake_rwr *out)
{
	if (!rq->count)
		return false;
	*out = rq->ring[rq->head];
	rq->head = (rq->head + 1) % rq->size;
	rq->count--;
	return true;
}

/* --- shared receive queues --- */

static int fake_create_srq(struct vibv_prov_dev *dev, uint32_t pdn,
			   struct vibv_prov_srq_attr *attr, void *cookie,
			   struct vibv_prov_srq **out)
{
	struct vibv_prov_srq *srq;

	(void)pdn;
	if (!attr->max_wr || attr->max_wr > FAKE_MAX_WR || attr->max_sge > FAKE_MAX_SGE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq || fake_rq_init(&srq->rq, attr->max_wr)) {
		free(srq);
		return -ENOMEM;
	}
	srq->dev = dev;
	srq->cookie = cookie;
	srq->max_sge = attr->max_sge;
	srq->srqn = fake_next(dev, &dev->next_srqn);
	attr->srqn = srq->srqn;
	attr->srq_limit = 0;
	*out = srq;
	return 0;
}

static int fake_modify_srq(struct vibv_prov_srq *srq, const struct vibv_prov_srq_attr *attr,
			   uint32_t mask)
{
	if (mask != VRDMA_PROV_SRQ_LIMIT || attr->srq_limit > srq->rq.size)
		return -EINVAL;
	pthread_mutex_lock(&srq->dev->lock);
	srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&srq->dev->lock);
	return 0;
}

static int fake_query_srq(struct vibv_prov_srq *srq, struct vibv_prov_srq_attr *attr)
{
	pthread_mutex_lock(&srq->dev->lock);
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	attr->srqn = srq->srqn;
	pthread_mutex_unlock(&srq->dev->lock);
	return 0;
}

static int fake_destroy_srq(struct vibv_prov_srq *srq)
{
	struct vibv_prov_dev *dev = srq->dev;

	pthread_mutex_lock(&dev->lock);
	if (srq->users) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	fake_events_forget_locked(dev, srq->cookie,
				  1u << VRDMA_PROV_EVENT_SRQ_ERR |
					  1u << VRDMA_PROV_EVENT_SRQ_LIMIT_REACHED,
				  srq->srqn);
	pthread_mutex_unlock(&dev->lock);
	free(srq->rq.ring);
	free(srq);
	return 0;
}

static int fake_post_srq_recv(struct vibv_prov_srq *srq, const struct vrdma_recv_wr *wr,
			      unsigned int n)
{
	int ret;

	pthread_mutex_lock(&srq->dev->lock);
	ret = fake_rq_post(&srq->rq, wr, n, srq->max_sge);
	pthread_mutex_unlock(&srq->dev->lock);
	return ret;
}

/* --- queue pairs --- */

static int fake_create_qp(struct vibv_prov_dev *dev, const struct vibv_prov_qp_init *in,
			  void *cookie, struct vibv_prov_qp **out,
			  struct vibv_prov_qp_info *info)
{
	struct vibv_prov_qp *qp;
	uint32_t index;

	if (in->qp_type != VIRTIO_IB_QPT_RC && in->qp_type != VIRTIO_IB_QPT_UC &&
	    in->qp_type != VIRTIO_IB_QPT_UD)
		return -EINVAL;
	if (in->cap.max_send_wr > FAKE_MAX_WR || in->cap.max_send_sge > FAKE_MAX_SGE ||
	    (!in->srq && (in->cap.max_recv_wr > FAKE_MAX_WR ||
			  in->cap.max_recv_sge > FAKE_MAX_SGE)) ||
	    in->cap.max_inline_data > FAKE_MAX_INLINE)
		return -EINVAL;
	index = fake_next(dev, &dev->next_qp_index);
	if (index >= FAKE_MAX_QPS)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->attr.cap = in->cap;
	if (in->srq) {
		qp->attr.cap.max_recv_wr = 0;
		qp->attr.cap.max_recv_sge = 0;
	}
	if (fake_rq_init(&qp->rq, qp->attr.cap.max_recv_wr)) {
		free(qp);
		return -ENOMEM;
	}
	qp->dev = dev;
	qp->cookie = cookie;
	qp->send_cq = in->send_cq;
	qp->recv_cq = in->recv_cq;
	qp->srq = in->srq;
	pthread_mutex_init(&qp->lock, NULL);
	qp->qpn = vrdma_qpn_make(index, 0);
	qp->qp_type = in->qp_type;
	qp->sq_sig_all = in->sq_sig_all;
	qp->attr.qp_state = VIRTIO_IB_QPS_RESET;
	if (qp->attr.cap.max_inline_data < 64)
		qp->attr.cap.max_inline_data = 64;
	pthread_mutex_lock(&dev->lock);
	if (qp->srq)
		qp->srq->users++;
	if (qp->send_cq)
		qp->send_cq->users++;
	if (qp->recv_cq)
		qp->recv_cq->users++;
	qp->next = dev->qps;
	dev->qps = qp;
	pthread_mutex_unlock(&dev->lock);
	info->qpn = qp->qpn;
	info->cap = qp->attr.cap;
	*out = qp;
	return 0;
}

static int fake_modify_qp(struct vibv_prov_qp *qp, const struct vrdma_qp_attr *a,
			  uint32_t mask)
{
	struct vrdma_qp_attr *s = &qp->attr;
	bool to_err = false;

	if (mask & ~VIRTIO_IB_QP_ATTR_MASK_ALL)
		return -EINVAL;
	pthread_mutex_lock(&qp->lock);
	if ((mask & VIRTIO_IB_QP_CUR_STATE) && a->cur_qp_state != s->qp_state) {
		pthread_mutex_unlock(&qp->lock);
		return -EINVAL;
	}
	if (mask & VIRTIO_IB_QP_STATE) {
		to_err = a->qp_state == VIRTIO_IB_QPS_ERR && s->qp_state != VIRTIO_IB_QPS_ERR;
		s->qp_state = a->qp_state;
	}
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
	if (to_err && qp->srq) {
		pthread_mutex_lock(&qp->dev->lock);
		fake_event_locked(qp->dev, VRDMA_PROV_EVENT_QP_LAST_WQE_REACHED, qp->cookie, 0);
		pthread_mutex_unlock(&qp->dev->lock);
	}
	return 0;
}

static int fake_query_qp(struct vibv_prov_qp *qp, uint32_t mask,
			 struct vrdma_qp_attr *a)
{
	(void)mask;
	pthread_mutex_lock(&qp->lock);
	*a = qp->attr;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static int fake_resize_qp(struct vibv_prov_qp *qp, struct vrdma_qp_cap *cap)
{
	struct vrdma_qp_cap *s = &qp->attr.cap;
	int ret;

	if (cap->max_send_sge != s->max_send_sge || cap->max_recv_sge != s->max_recv_sge ||
	    cap->max_inline_data != s->max_inline_data || !cap->max_send_wr ||
	    cap->max_send_wr > FAKE_MAX_WR || cap->max_recv_wr > FAKE_MAX_WR ||
	    (qp->srq && cap->max_recv_wr))
		return -EINVAL;
	pthread_mutex_lock(&qp->dev->lock);
	ret = qp->srq ? 0 : fake_rq_resize(&qp->rq, cap->max_recv_wr);
	pthread_mutex_unlock(&qp->dev->lock);
	if (ret)
		return ret;
	pthread_mutex_lock(&qp->lock);
	s->max_send_wr = cap->max_send_wr;
	s->max_recv_wr = cap->max_recv_wr;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static int fake_destroy_qp(struct vibv_prov_qp *qp)
{
	struct vibv_prov_dev *dev = qp->dev;
	struct vibv_prov_qp **pp;

	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->qps; *pp; pp = &(*pp)->next) {
		if (*pp == qp) {
			*pp = qp->next;
			break;
		}
	}
	if (qp->srq)
		qp->srq->users--;
	if (qp->send_cq)
		qp->send_cq->users--;
	if (qp->recv_cq)
		qp->recv_cq->users--;
	fake_events_forget_locked(dev, qp->cookie, 0, 0);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_destroy(&qp->lock);
	free(qp->rq.ring);
	free(qp);
	return 0;
}

/* The completion opcode of a send WR opcode, or -1 for one the fake
 * device does not execute (REG_MR, reserved numbers). */
static int fake_wc_opcode(uint8_t op)
{
	if (op > VIRTIO_IB_WR_SEND_WITH_INV)
		return -1;
	return virtio_ib_wc_opcode_of_wr(op);
}

/* Executes an atomic on this process's memory: a status. */
static uint8_t fake_atomic(struct vibv_prov_dev *dev, const struct vrdma_send_wr *wr)
{
	const struct fake_mr *m, *mr;
	uint64_t va = wr->atomic.remote_addr, orig;
	uint64_t *p;

	if (wr->num_sge != 1 || wr->sg_list[0].length < 8)
		return VIRTIO_IB_WC_LOC_LEN_ERR;
	pthread_mutex_lock(&dev->lock);
	m = fake_key_find(dev, wr->atomic.rkey, false);
	mr = m && m->is_mw ? m->bound_mr : m;
	if (!m || !mr || !(m->access & VIRTIO_IB_ACCESS_REMOTE_ATOMIC) || va < m->iova ||
	    va - m->iova + 8 > m->length || (m->is_mw && !m->length)) {
		pthread_mutex_unlock(&dev->lock);
		return VIRTIO_IB_WC_REM_ACCESS_ERR;
	}
	if (va & 7) {
		pthread_mutex_unlock(&dev->lock);
		return VIRTIO_IB_WC_REM_INV_REQ_ERR;
	}
	p = (uint64_t *)(void *)(mr->addr + (va - mr->iova));
	if (wr->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP) {
		orig = wr->atomic.compare_add;
		__atomic_compare_exchange_n(p, &orig, wr->atomic.swap, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, wr->atomic.compare_add, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&dev->lock);
	memcpy((void *)(uintptr_t)wr->sg_list[0].addr, &orig, sizeof(orig));
	return VIRTIO_IB_WC_SUCCESS;
}

/* Binds a window: a status. */
static uint8_t fake_bind(struct vibv_prov_dev *dev, const struct vrdma_send_wr *wr)
{
	struct fake_mr *w, *mr = NULL;
	uint8_t st = VIRTIO_IB_WC_MW_BIND_ERR;

	pthread_mutex_lock(&dev->lock);
	w = fake_handle_find(dev, wr->bind_mw.rkey);
	if (!w || !w->is_mw || (wr->bind_mw.access & ~VIRTIO_IB_MW_ACCESS_MASK))
		goto out;
	if (w->mw_type == VRDMA_PROV_MW_TYPE_2 && w->length)
		goto out;
	if (wr->bind_mw.length) {
		mr = fake_key_find(dev, wr->bind_mw.mr_lkey, true);
		if (!mr || !(mr->access & VIRTIO_IB_ACCESS_MW_BIND) ||
		    wr->bind_mw.addr < mr->iova ||
		    wr->bind_mw.addr - mr->iova + wr->bind_mw.length > mr->length)
			goto out;
	}
	w->rkey = wr->bind_mw.rkey;
	w->bound_mr = mr;
	w->iova = wr->bind_mw.addr;
	w->length = mr ? wr->bind_mw.length : 0;
	w->access = wr->bind_mw.access;
	st = VIRTIO_IB_WC_SUCCESS;
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

/* A QP of dev by number. Caller holds dev->lock. */
static struct vibv_prov_qp *fake_qp_find(struct vibv_prov_dev *dev, uint32_t qpn)
{
	struct vibv_prov_qp *q;

	for (q = dev->qps; q; q = q->next)
		if (q->qpn == qpn)
			return q;
	return NULL;
}

/* Loopback of a SEND to the peer QP: a status of the send. *delivered is
 * false when there is no peer on this device. */
static uint8_t fake_deliver(struct vibv_prov_qp *qp, const struct vrdma_send_wr *wr,
			    uint64_t len, bool *delivered)
{
	struct vibv_prov_dev *dev = qp->dev;
	struct vibv_prov_qp *peer;
	struct vibv_prov_cq *rcq;
	struct vrdma_wc wc;
	struct fake_rwr r;
	uint64_t room = 0, off = 0;
	uint32_t s, d = 0, doff = 0;
	bool took;

	*delivered = false;
	if (qp->qp_type == VIRTIO_IB_QPT_UD)
		return VIRTIO_IB_WC_SUCCESS;
	pthread_mutex_lock(&dev->lock);
	peer = fake_qp_find(dev, qp->attr.dest_qp_num);
	if (!peer) {
		pthread_mutex_unlock(&dev->lock);
		return VIRTIO_IB_WC_SUCCESS;
	}
	*delivered = true;
	if (peer->srq) {
		took = fake_rq_take(&peer->srq->rq, &r);
		if (took && peer->srq->limit && peer->srq->rq.count < peer->srq->limit) {
			peer->srq->limit = 0;
			/* Named by number: the verbs layer looks it up. */
			fake_event_locked(dev, VRDMA_PROV_EVENT_SRQ_LIMIT_REACHED, NULL,
					  peer->srq->srqn);
		}
	} else {
		took = fake_rq_take(&peer->rq, &r);
	}
	rcq = peer->recv_cq;
	memset(&wc, 0, sizeof(wc));
	wc.qp_num = peer->qpn;
	wc.opcode = VIRTIO_IB_WC_RECV;
	pthread_mutex_unlock(&dev->lock);
	if (!took)
		return VIRTIO_IB_WC_RNR_RETRY_EXC_ERR;

	for (s = 0; s < r.num_sge; s++)
		room += r.sge[s].length;
	wc.wr_id = r.wr_id;
	if (len > room) {
		wc.status = VIRTIO_IB_WC_LOC_LEN_ERR;
		fake_cq_push(rcq, &wc);
		return VIRTIO_IB_WC_REM_OP_ERR;
	}
	/* Copy the message, SGE by SGE on both sides. */
	for (s = 0; s < wr->num_sge; s++) {
		const uint8_t *src = (const uint8_t *)(uintptr_t)wr->sg_list[s].addr;
		uint32_t left = wr->sg_list[s].length;

		while (left) {
			uint32_t n;

			if (doff == r.sge[d].length) { /* also zero-length SGEs */
				d++;
				doff = 0;
				continue;
			}
			n = r.sge[d].length - doff;

			if (n > left)
				n = left;
			memcpy((uint8_t *)(uintptr_t)r.sge[d].addr + doff, src, n);
			src += n;
			left -= n;
			doff += n;
			off += n;
		}
	}
	wc.status = VIRTIO_IB_WC_SUCCESS;
	wc.byte_len = (uint32_t)off;
	if (wr->opcode == VIRTIO_IB_WR_SEND_WITH_IMM) {
		wc.wc_flags = VIRTIO_IB_WC_WITH_IMM;
		wc.imm_data = wr->imm_data;
	} else if (wr->opcode == VIRTIO_IB_WR_SEND_WITH_INV) {
		wc.wc_flags = VIRTIO_IB_WC_WITH_INV;
		wc.invalidated_rkey = wr->invalidate_rkey;
	}
	fake_cq_push(rcq, &wc);
	return VIRTIO_IB_WC_SUCCESS;
}

static int fake_post_send(struct vibv_prov_qp *qp, const struct vrdma_send_wr *wr,
			  unsigned int n)
{
	unsigned int i;
	uint8_t state;

	pthread_mutex_lock(&qp->lock);
	state = qp->attr.qp_state;
	pthread_mutex_unlock(&qp->lock);
	for (i = 0; i < n; i++) {
		struct vrdma_wc wc;
		uint64_t len = 0;
		uint32_t s;
		uint8_t st = VIRTIO_IB_WC_SUCCESS;
		bool delivered = false;
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
		switch (wr[i].opcode) {
		case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
		case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
			st = fake_atomic(qp->dev, &wr[i]);
			len = 8;
			break;
		case VIRTIO_IB_WR_BIND_MW:
			st = fake_bind(qp->dev, &wr[i]);
			len = 0;
			break;
		case VIRTIO_IB_WR_LOCAL_INV:
			len = 0;
			break;
		case VIRTIO_IB_WR_SEND:
		case VIRTIO_IB_WR_SEND_WITH_IMM:
		case VIRTIO_IB_WR_SEND_WITH_INV:
			st = fake_deliver(qp, &wr[i], len, &delivered);
			break;
		default:
			break;
		}
		if (st == VIRTIO_IB_WC_SUCCESS && !qp->sq_sig_all &&
		    !(wr[i].send_flags & VIRTIO_IB_SEND_SIGNALED))
			continue;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr[i].wr_id;
		wc.status = st;
		wc.opcode = (uint8_t)op;
		wc.byte_len = st == VIRTIO_IB_WC_SUCCESS ? (uint32_t)len : 0;
		wc.qp_num = qp->qpn;
		ret = fake_cq_push(qp->send_cq, &wc);
		if (ret)
			return i ? (int)i : ret;
	}
	return (int)n;
}

static int fake_post_recv(struct vibv_prov_qp *qp, const struct vrdma_recv_wr *wr,
			  unsigned int n)
{
	uint8_t state;
	int ret;

	pthread_mutex_lock(&qp->lock);
	state = qp->attr.qp_state;
	pthread_mutex_unlock(&qp->lock);
	if (state == VIRTIO_IB_QPS_RESET || qp->srq)
		return -EINVAL;
	pthread_mutex_lock(&qp->dev->lock);
	ret = fake_rq_post(&qp->rq, wr, n, qp->attr.cap.max_recv_sge);
	pthread_mutex_unlock(&qp->dev->lock);
	return ret;
}

static int fake_create_ah(struct vibv_prov_dev *dev, uint32_t pdn,
			  const struct vrdma_ah_attr *attr, uint32_t *ah)
{
	(void)pdn;
	if (attr->grh.sgid_index >= FAKE_GID_TBL_LEN)
		return -EINVAL;
	*ah = fake_next(dev, &dev->next_ah);
	return 0;
}

static int fake_destroy_ah(struct vibv_prov_dev *dev, uint32_t pdn, uint32_t ah)
{
	(void)dev;
	(void)pdn;
	(void)ah;
	return 0;
}

static const struct vibv_prov_ops fake_ops = {
	.name = "fake",
	.discover = fake_discover,
	.open = fake_open,
	.close = fake_close,
	.query_device = fake_query_device,
	.query_port = fake_query_port,
	.query_gid = fake_query_gid,
	.async_fd = fake_async_fd,
	.get_async_event = fake_get_async_event,
	.query_pkey = fake_query_pkey,
	.create_pd = fake_create_pd,
	.destroy_pd = fake_destroy_pd,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
	.alloc_mw = fake_alloc_mw,
	.dealloc_mw = fake_dealloc_mw,
	.create_cq = fake_create_cq,
	.destroy_cq = fake_destroy_cq,
	.poll_cq = fake_poll_cq,
	.arm_cq = fake_arm_cq,
	.cq_consume_event = fake_cq_consume_event,
	.resize_cq = fake_resize_cq,
	.create_qp = fake_create_qp,
	.modify_qp = fake_modify_qp,
	.query_qp = fake_query_qp,
	.destroy_qp = fake_destroy_qp,
	.resize_qp = fake_resize_qp,
	.post_send = fake_post_send,
	.post_recv = fake_post_recv,
	.create_srq = fake_create_srq,
	.modify_srq = fake_modify_srq,
	.query_srq = fake_query_srq,
	.destroy_srq = fake_destroy_srq,
	.post_srq_recv = fake_post_srq_recv,
	.create_ah = fake_create_ah,
	.destroy_ah = fake_destroy_ah,
};

/* The test build's provider: the fake device when VRDMA_FAKE_DEVICE is set
 * (to anything but "" and "0"), else the real one. */
const struct vibv_prov_ops *vibv_prov_test_select(void)
{
	const char *e = getenv("VRDMA_FAKE_DEVICE");

	return e && *e && strcmp(e, "0") != 0 ? &fake_ops : NULL;
}
