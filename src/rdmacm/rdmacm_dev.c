// SPDX-License-Identifier: BSD-3-Clause
/*
 * The devices of the process as librdmacm sees them, and the library's
 * thread that reads the CM events of each device's connection manager (run
 * by the daemon on the device's QP1, used through CM control commands).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm/cm_rdma_cm.h"
#include "rdmacm/rdmacm_priv.h"
#include "vrdma/virtio_net_roce_cm.h"

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

int vrdma_ibv_cm_cmd(struct ibv_context *ibctx, uint8_t cmd, const void *in, size_t in_len,
		     void *out, size_t out_len);
int vrdma_ibv_cm_pending(struct ibv_context *ibctx);

int rcm_cm_cmd(struct rcm_dev *d, uint8_t cmd, const void *in, size_t in_len, void *out,
	       size_t out_len)
{
	return vrdma_ibv_cm_cmd(d->verbs, cmd, in, in_len, out, out_len);
}

void rcm_cm_release(struct rcm_dev *d, uint32_t conn_id)
{
	struct virtio_rdma_cmd_cm_handle h = { .id = htole32(conn_id) };

	rcm_cm_cmd(d, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, &h, sizeof(h), NULL, 0);
}

/* Reads the device's CM events (all of them: the device announces the
 * next one only once its queue was empty). Locked. */
static void rcm_dev_drain(struct rcm_dev *d)
{
	struct virtio_rdma_cm_event ev;

	while (!rcm_cm_cmd(d, VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT, NULL, 0, &ev, sizeof(ev)))
		rcm_cm_event(d, &ev);
}

static bool rcm_thread_up;
static pthread_t rcm_thread;
static int rcm_wake_fd = -1;        /* a device was added to the thread's set */

/* The library's thread: waits on the async fd of every device whose CM it
 * uses and turns the CM events the device announces into rdma_cm events. */
static _Noreturn void *rcm_thread_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd[RCM_MAX_DEVS + 1];
		int idx[RCM_MAX_DEVS], n = 0;
		uint64_t v;

		pthread_mutex_lock(&rcm_lock);
		for (int i = 0; i < rcm_ndevs(); i++)
			if (rcm_devs[i].cm_up) {
				pfd[n].fd = rcm_devs[i].verbs->async_fd;
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				idx[n++] = i;
			}
		pthread_mutex_unlock(&rcm_lock);
		pfd[n].fd = rcm_wake_fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		if (poll(pfd, (nfds_t)n + 1, -1) <= 0)
			continue;
		if ((pfd[n].revents & POLLIN) && read(rcm_wake_fd, &v, sizeof(v)) < 0)
			continue;
		pthread_mutex_lock(&rcm_lock);
		for (int k = 0; k < n; k++)
			if ((pfd[k].revents & POLLIN) &&
			    vrdma_ibv_cm_pending(rcm_devs[idx[k]].verbs))
				rcm_dev_drain(&rcm_devs[idx[k]]);
		pthread_mutex_unlock(&rcm_lock);
	}
}

/* The device's CM is used from now on: the thread watches it. Locked. */
int rcm_dev_cm_start(struct rcm_dev *d)
{
	if (d->cm_up)
		return 0;
	if (d->verbs->async_fd < 0)
		return -EOPNOTSUPP;
	if (!rcm_thread_up) {
		if (rcm_wake_fd < 0)
			rcm_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rcm_wake_fd < 0)
			return -errno;
		if (pthread_create(&rcm_thread, NULL, rcm_thread_main, NULL))
			return -EAGAIN;
		/* named, so that tools (and tests) see a process using the CM */
		pthread_setname_np(rcm_thread, "vrdma-cm");
		pthread_detach(rcm_thread);
		rcm_thread_up = true;
	}
	d->cm_up = true;
	if (write(rcm_wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		return -errno;
	/* events queued before the thread watched the device */
	rcm_dev_drain(d);
	return 0;
}
