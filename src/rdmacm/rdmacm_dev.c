// SPDX-License-Identifier: BSD-3-Clause
/*
 * The devices of the process as librdmacm sees them, and the connection
 * manager of each: the device's GSI QP (QP1, Q_Key 0x80010000) carries the
 * CM MADs of src/cm; a thread per device receives them and fires the CM's
 * timers.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cm/cm_rdma_cm.h"
#include "rdmacm/rdmacm_priv.h"

struct ibv_qp *vrdma_ibv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);

#define RCM_RECV_SLOTS 64
#define RCM_SEND_SLOTS 64
#define RCM_RECV_SIZE  (40 + CM_MAD_SIZE)
#define RCM_WR_SEND    (1ull << 32)

pthread_mutex_t rcm_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t rcm_acked = PTHREAD_COND_INITIALIZER;

static struct rcm_dev rcm_devs[RCM_MAX_DEVS];
static int rcm_ndev = -1;

int rcm_ndevs(void)
{
	return rcm_ndev < 0 ? 0 : rcm_ndev;
}

struct rcm_dev *rcm_dev_get(int i)
{
	return i >= 0 && i < rcm_ndevs() ? &rcm_devs[i] : NULL;
}

/* Opens every verbs device once (librdmacm does the same). */
int rcm_devs_init(void)
{
	struct ibv_device **list;
	int n = 0;

	if (rcm_ndev >= 0)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	rcm_ndev = 0;
	for (int i = 0; i < n && rcm_ndev < RCM_MAX_DEVS; i++) {
		struct rcm_dev *d = &rcm_devs[rcm_ndev];
		struct ibv_port_attr pa;

		d->verbs = ibv_open_device(list[i]);
		if (!d->verbs)
			continue;
		d->guid = ibv_get_device_guid(list[i]);
		d->active_mtu = IBV_MTU_1024;
		if (!ibv_query_port(d->verbs, 1, &pa)) {
			d->active_mtu = pa.active_mtu;
			for (int g = 0; g < pa.gid_tbl_len && g < 8; g++)
				if (ibv_query_gid(d->verbs, 1, g, &d->gid[g]))
					break;
				else
					d->ngid = g + 1;
		}
		d->wake_fd = -1;
		rcm_ndev++;
	}
	ibv_free_device_list(list);
	if (!rcm_ndev) {
		errno = ENODEV;
		return -1;
	}
	return 0;
}

struct rcm_dev *rcm_dev_by_verbs(struct ibv_context *verbs)
{
	for (int i = 0; i < rcm_ndevs(); i++)
		if (rcm_devs[i].verbs == verbs)
			return &rcm_devs[i];
	return NULL;
}

int rcm_dev_gid_index(struct rcm_dev *d, const uint8_t gid[16])
{
	for (int g = 0; g < d->ngid; g++)
		if (!rcm_gid_unused(&d->gid[g]) && !memcmp(d->gid[g].raw, gid, 16))
			return g;
	return -1;
}

static bool addr_gid(const struct sockaddr *sa, uint8_t gid[16], bool *any)
{
	*any = false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		/* a loopback address binds like a wildcard (no device): what
		 * libfabric's verbs provider expects when it probes "localhost" */
		*any = s->sin_addr.s_addr == htonl(INADDR_ANY) ||
		       (ntohl(s->sin_addr.s_addr) >> 24) == 127;
		cm_gid_from_ipv4(gid, (const uint8_t *)&s->sin_addr);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		*any = IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr) || IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
		memcpy(gid, &s->sin6_addr, 16);
		return true;
	}
	return false;
}

struct rcm_dev *rcm_dev_by_addr(const struct sockaddr *sa, bool *any)
{
	uint8_t gid[16];

	if (!addr_gid(sa, gid, any))
		return NULL;
	if (*any)
		return rcm_dev_get(0);
	for (int i = 0; i < rcm_ndevs(); i++)
		if (rcm_dev_gid_index(&rcm_devs[i], gid) >= 0)
			return &rcm_devs[i];
	return NULL;
}

static uint64_t rcm_now_us(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static struct ibv_ah *rcm_ah(struct rcm_dev *d, const uint8_t gid[16])
{
	struct ibv_ah_attr a;
	unsigned slot = 0;
	int sgid = -1;

	for (unsigned i = 0; i < 32; i++) {
		if (d->ah[i] && !memcmp(d->ah_gid[i].raw, gid, 16))
			return d->ah[i];
		if (!d->ah[i] && !slot)
			slot = i + 1;
	}
	if (!slot) {
		ibv_destroy_ah(d->ah[0]);
		d->ah[0] = NULL;
		slot = 1;
	}
	/* the GID of our own family: v4-mapped for IPv4 peers */
	for (int g = 0; g < d->ngid && sgid < 0; g++)
		if (!rcm_gid_unused(&d->gid[g]) &&
		    cm_gid_is_ipv4(d->gid[g].raw) == cm_gid_is_ipv4(gid))
			sgid = g;
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	memcpy(a.grh.dgid.raw, gid, 16);
	a.grh.sgid_index = sgid < 0 ? 0 : (uint8_t)sgid;
	a.grh.hop_limit = CM_RDMA_CM_HOP_LIMIT;
	a.port_num = 1;
	d->ah[slot - 1] = ibv_create_ah(d->pd, &a);
	memcpy(d->ah_gid[slot - 1].raw, gid, 16);
	return d->ah[slot - 1];
}

static int rcm_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct rcm_dev *d = ctx;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t slot = d->send_next++ % RCM_SEND_SLOTS;
	uint8_t *p = d->buf + RCM_RECV_SLOTS * RCM_RECV_SIZE + slot * CM_MAD_SIZE;
	struct ibv_ah *ah = rcm_ah(d, dst->gid);

	if (!ah)
		return -EHOSTUNREACH;
	memcpy(p, mad, CM_MAD_SIZE);
	sge.addr = (uintptr_t)p;
	sge.length = CM_MAD_SIZE;
	sge.lkey = d->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RCM_WR_SEND | slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dst->qpn;
	wr.wr.ud.remote_qkey = RCM_GSI_QKEY;
	return ibv_post_send(d->gsi, &wr, &bad) ? -EIO : 0;
}

static int rcm_post_recv(struct rcm_dev *d, uint32_t slot)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)(d->buf + slot * RCM_RECV_SIZE);
	sge.length = RCM_RECV_SIZE;
	sge.lkey = d->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(d->gsi, &wr, &bad);
}

/* One received GSI datagram: the GRH area gives the sender's GID. */
static void rcm_recv(struct rcm_dev *d, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id;
	const uint8_t *p = d->buf + slot * RCM_RECV_SIZE;
	struct cm_addr src;

	if (wc->status == IBV_WC_SUCCESS && wc->byte_len > 40 && wc->byte_len <= RCM_RECV_SIZE) {
		memset(&src, 0, sizeof(src));
		if ((p[20] >> 4) == 4) /* IPv4 header in the last 20 bytes */
			cm_gid_from_ipv4(src.gid, p + 20 + 12);
		else
			memcpy(src.gid, p + 8, 16);
		src.qpn = wc->src_qp;
		src.pkey = 0xFFFF;
		cm_port_recv(d->port, p + 40, wc->byte_len - 40, &src);
	}
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		rcm_post_recv(d, slot);
}

static void *rcm_thread(void *arg)
{
	struct rcm_dev *d = arg;

	for (;;) {
		struct pollfd pfd[2] = { { d->cc->fd, POLLIN, 0 }, { d->wake_fd, POLLIN, 0 } };
		struct ibv_wc wc[16];
		uint64_t next, now;
		int tmo = 1000, n;

		pthread_mutex_lock(&rcm_lock);
		if (d->stop) {
			pthread_mutex_unlock(&rcm_lock);
			return NULL;
		}
		while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0)
			for (int i = 0; i < n; i++)
				if (!(wc[i].wr_id & RCM_WR_SEND))
					rcm_recv(d, &wc[i]);
		ibv_req_notify_cq(d->cq, 0);
		while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0)
			for (int i = 0; i < n; i++)
				if (!(wc[i].wr_id & RCM_WR_SEND))
					rcm_recv(d, &wc[i]);
		now = rcm_now_us(NULL);
		if (cm_port_next_timeout(d->port) <= now)
			cm_port_tick(d->port);
		next = cm_port_next_timeout(d->port);
		if (next != UINT64_MAX)
			tmo = next <= now ? 0 : (int)((next - now + 999) / 1000 > 1000 ? 1000 : (next - now + 999) / 1000);
		pthread_mutex_unlock(&rcm_lock);

		if (poll(pfd, 2, tmo) > 0) {
			if (pfd[0].revents & POLLIN) {
				struct ibv_cq *cq;
				void *cctx;

				if (!ibv_get_cq_event(d->cc, &cq, &cctx))
					ibv_ack_cq_events(cq, 1);
			}
			if (pfd[1].revents & POLLIN) {
				uint64_t v;

				if (read(d->wake_fd, &v, sizeof(v)) < 0)
					continue;
			}
		}
	}
}

void rcm_dev_wake(struct rcm_dev *d)
{
	uint64_t one = 1;

	if (d->wake_fd >= 0 && write(d->wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* Creates the device's GSI QP, cm_port and thread. The GSI QP is the
 * device's only one: another process holding it gives EADDRINUSE. */
int rcm_dev_cm_start(struct rcm_dev *d)
{
	static const struct cm_port_ops ops = { rcm_now_us, rcm_send, rcm_cm_event };
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct cm_port_config cfg;
	size_t len = RCM_RECV_SLOTS * RCM_RECV_SIZE + RCM_SEND_SLOTS * CM_MAD_SIZE;

	if (d->cm_up)
		return 0;
	if (d->cm_err)
		return -d->cm_err;
	if (!d->pd)
		d->pd = ibv_alloc_pd(d->verbs);
	d->cc = ibv_create_comp_channel(d->verbs);
	if (!d->pd || !d->cc)
		goto fail;
	d->cq = ibv_create_cq(d->verbs, RCM_RECV_SLOTS + RCM_SEND_SLOTS, NULL, d->cc, 0);
	d->buf = calloc(1, len);
	if (!d->cq || !d->buf)
		goto fail;
	d->mr = ibv_reg_mr(d->pd, d->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = d->cq;
	qa.recv_cq = d->cq;
	qa.cap.max_send_wr = RCM_SEND_SLOTS;
	qa.cap.max_recv_wr = RCM_RECV_SLOTS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	d->gsi = vrdma_ibv_create_gsi_qp(d->pd, &qa);
	if (!d->gsi) {
		errno = EADDRINUSE;
		goto fail;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.qkey = RCM_GSI_QKEY;
	a.port_num = 1;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PKEY_INDEX | IBV_QP_PORT))
		goto fail;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE))
		goto fail;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail;
	for (uint32_t i = 0; i < RCM_RECV_SLOTS; i++)
		if (rcm_post_recv(d, i))
			goto fail;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ca_guid = d->guid;
	if (getrandom(&cfg.comm_id_seed, sizeof(cfg.comm_id_seed), 0) < 0)
		cfg.comm_id_seed = (uint32_t)getpid();
	d->port = cm_port_create(&cfg, &ops, d);
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!d->port || d->wake_fd < 0)
		goto fail;
	if (ibv_req_notify_cq(d->cq, 0))
		goto fail;
	if (pthread_create(&d->thread, NULL, rcm_thread, d))
		goto fail;
	/* named, so that tools (and tests) see a process serving the CM */
	pthread_setname_np(d->thread, "vrdma-cm");
	d->cm_up = true;
	return 0;
fail:
	d->cm_err = errno ? errno : EIO;
	return -d->cm_err;
}
