/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vibv_prov_vrdma_ops: the real device, through libvrdma's RDMA API
 * (include/vrdma/vrdma_rdma.h). Every operation maps to one libvrdma call;
 * this file only translates structures (provider.h and vrdma_rdma.h carry
 * the same fields in the same units) and keeps the registry below.
 *
 * Discovery: one device per existing socket of VRDMA_SOCKET (or the default
 * socket; src/verbs/vrdma_socket.h), "vrdma<i>" for the i-th socket of the
 * list. Its MAC (for the node GUID of ibv_devices) comes from the device
 * this process has open on that socket, else from a short probe: connect,
 * read the MAC from the configuration space (GET_CONFIG), disconnect. A
 * back-end serves one front-end at a time, so the probe of a device another
 * process is using waits in the listen backlog: after PROBE_TIMEOUT_MS the
 * MAC is left zero (GUID unknown) and discovery goes on.
 *
 * GIDs: index 0 from the MAC, index 1 from the IPv4 address QUERY_PORT
 * reports (vrdma_gid_query), 2.. as added.
 *
 * Extensions (docs/spec.md "Extensions beyond the RFC"): SRQs, atomics,
 * asynchronous events map to libvrdma's extension calls, which fail with
 * EOPNOTSUPP on a device that did not report them. Objects carry the verbs
 * layer's cookie as their libvrdma context, so an async event gives it back.
 *
 * Not supported (left NULL, so EOPNOTSUPP): destination MAC resolution (the
 * device resolves), multicast.
 */
#include <linux/virtio_net.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vrdma/virtio_net_roce_cm.h"
#include "verbs/provider.h"
#include "verbs/vrdma_socket.h"
#include "vhost/vhost_client.h"
#include "vrdma/vrdma.h"
#include "vrdma/vrdma_rdma.h"

/* Wait for the probe's replies at most this long. */
#define PROBE_TIMEOUT_MS 250

struct vibv_prov_dev {
	struct vrdma_dev *dev;
	char path[VRDMA_PROV_PATH_MAX];
	struct vibv_prov_dev *next; /* open devices of this process */
};

struct vibv_prov_cq {
	struct vrdma_cq *cq;
};

struct vibv_prov_qp {
	struct vrdma_qp *qp;
};

struct vibv_prov_srq {
	struct vrdma_srq *srq;
};

static pthread_mutex_t prov_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vibv_prov_dev *prov_open_devs;

/* ---- devices ------------------------------------------------------------------- */

/* The MAC of the device at path if this process has it open. */
static bool prov_open_mac(const char *path, uint8_t mac[6])
{
	struct vibv_prov_dev *d;
	bool found = false;

	pthread_mutex_lock(&prov_lock);
	for (d = prov_open_devs; d && !found; d = d->next) {
		if (!strcmp(d->path, path)) {
			vrdma_dev_mac(d->dev, mac);
			found = true;
		}
	}
	pthread_mutex_unlock(&prov_lock);
	return found;
}

/* Read the MAC of the back-end at path from its configuration space. */
static void prov_probe_mac(const char *path, uint8_t mac[6])
{
	struct vhost_client vc;
	uint64_t features = 0, pf = 0;

	memset(mac, 0, 6);
	vhost_client_init_fd(&vc, -1);
	if (vhost_client_connect(&vc, path) < 0)
		goto out;
	vc.timeout_ms = PROBE_TIMEOUT_MS;
	if (vhost_client_get_features(&vc, &features) < 0 ||
	    !(features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) ||
	    !(features & (1ull << VIRTIO_NET_F_MAC)))
		goto out;
	if (vhost_client_get_protocol_features(&vc, &pf) < 0 ||
	    !(pf & (1ull << VHOST_USER_PROTOCOL_F_CONFIG)) ||
	    vhost_client_set_protocol_features(&vc, 1ull << VHOST_USER_PROTOCOL_F_CONFIG) < 0)
		goto out;
	if (vhost_client_get_config(&vc, 0, mac, 6) < 0)
		memset(mac, 0, 6);
out:
	vhost_client_close(&vc);
}

static int prov_discover(struct vibv_prov_dev_info *devs, int max)
{
	char paths[VRDMA_PROV_MAX_DEVICES][256];
	int n, i, k = 0;

	n = vrdma_socket_list(paths, VRDMA_PROV_MAX_DEVICES);
	for (i = 0; i < n && k < max; i++) {
		if (!vrdma_socket_exists(paths[i]))
			continue;
		memset(&devs[k], 0, sizeof(devs[k]));
		snprintf(devs[k].name, sizeof(devs[k].name), "vrdma%d", i);
		snprintf(devs[k].path, sizeof(devs[k].path), "%s", paths[i]);
		devs[k].priv = (uint64_t)i;
		if (!prov_open_mac(paths[i], devs[k].mac))
			prov_probe_mac(paths[i], devs[k].mac);
		k++;
	}
	return k;
}

static int prov_open(const struct vibv_prov_dev_info *info, struct vibv_prov_dev **out)
{
	struct vibv_prov_dev *d;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	snprintf(d->path, sizeof(d->path), "%s", info->path);
	d->dev = vrdma_dev_open(d->path, NULL);
	if (!d->dev) {
		int err = errno ? errno : ENODEV;

		free(d);
		return -err;
	}
	if (!vrdma_dev_max_rdma_qps(d->dev)) {
		/* A virtio-net device without RoCE is no RDMA device. */
		vrdma_dev_close(d->dev);
		free(d);
		return -ENODEV;
	}
	pthread_mutex_lock(&prov_lock);
	d->next = prov_open_devs;
	prov_open_devs = d;
	pthread_mutex_unlock(&prov_lock);
	*out = d;
	return 0;
}

static void prov_close(struct vibv_prov_dev *d)
{
	struct vibv_prov_dev **pp;

	pthread_mutex_lock(&prov_lock);
	for (pp = &prov_open_devs; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	pthread_mutex_unlock(&prov_lock);
	vrdma_dev_close(d->dev);
	free(d);
}

static int prov_query_device(struct vibv_prov_dev *d, struct vrdma_device_attr *attr,
			     uint8_t mac[6])
{
	int rc = vrdma_query_device(d->dev, attr);

	if (rc == 0)
		vrdma_dev_mac(d->dev, mac);
	return rc;
}

static int prov_query_port(struct vibv_prov_dev *d, struct vibv_prov_port_attr *p)
{
	struct vrdma_port_attr a;
	int rc = vrdma_query_port(d->dev, &a);

	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->gid_tbl_len = a.gid_tbl_len;
	p->max_msg_sz = a.max_msg_sz;
	p->link_up = a.link_up;
	p->mtu = a.mtu;
	p->speed = 0; /* unknown */
	p->pkey_tbl_len = a.pkey_tbl_len ? a.pkey_tbl_len : 1;
	if (a.per_port) {
		p->per_port = true;
		p->state = a.state;
		p->phys_state = a.phys_state;
		p->active_width = a.active_width;
		p->active_speed = a.active_speed > 0xff ? 0 : (uint8_t)a.active_speed;
		p->port_cap_flags = a.port_cap_flags;
		p->bad_pkey_cntr = a.bad_pkey_cntr;
		p->qkey_viol_cntr = a.qkey_viol_cntr;
	}
	return 0;
}

static int prov_async_fd(struct vibv_prov_dev *d)
{
	return vrdma_event_fd(d->dev);
}

static int prov_get_async_event(struct vibv_prov_dev *d, struct vibv_prov_async_event *ev)
{
	struct vrdma_async_event e;
	int rc = vrdma_event_get(d->dev, &e);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return -EAGAIN;
	memset(ev, 0, sizeof(*ev));
	/* enum virtio_ib_event_type has the values of ibv_event_type */
	ev->type = e.type;
	if (e.cq)
		ev->cookie = vrdma_cq_context(e.cq);
	else if (e.qp)
		ev->cookie = vrdma_qp_context(e.qp);
	else if (e.srq)
		ev->cookie = vrdma_srq_context(e.srq);
	else
		ev->port = e.id;
	ev->id = e.id;
	return 0;
}

static int prov_cm_cmd(struct vibv_prov_dev *d, uint8_t cmd, const void *in, size_t in_len,
		       void *out, size_t out_len)
{
	struct virtio_rdma_ack_cm_status st;
	uint8_t buf[8 + 512], ack;
	int rc;

	if (out_len > sizeof(buf) - sizeof(st))
		return -EINVAL;
	rc = vrdma_ctrl_cmd(d->dev, VIRTIO_NET_CTRL_ROCE, cmd, in, in_len, buf,
			    sizeof(st) + out_len, &ack);
	if (rc < 0)
		return rc;
	if (ack != VIRTIO_NET_OK)
		return -EOPNOTSUPP;
	memcpy(&st, buf, sizeof(st));
	if (le32toh(st.status))
		return -(int)(le32toh(st.status) & 0xFFFF);
	if (out_len)
		memcpy(out, buf + sizeof(st), out_len);
	return 0;
}

static int prov_query_pkey(struct vibv_prov_dev *d, uint32_t index, uint16_t *pkey)
{
	return vrdma_query_pkey(d->dev, index, pkey);
}

static int prov_query_gid(struct vibv_prov_dev *d, uint32_t index, struct vibv_prov_gid *g)
{
	int rc = vrdma_gid_query(d->dev, index, g->gid);

	if (rc)
		return rc;
	g->gid_type = VRDMA_PROV_GID_TYPE_ROCE_V2;
	return 0;
}

/* ---- PDs, MRs, AHs ------------------------------------------------------------- */

static int prov_create_pd(struct vibv_prov_dev *d, uint32_t *pdn)
{
	return vrdma_pd_alloc(d->dev, pdn);
}

static int prov_destroy_pd(struct vibv_prov_dev *d, uint32_t pdn)
{
	return vrdma_pd_free(d->dev, pdn);
}

static int prov_reg_mr(struct vibv_prov_dev *d, uint32_t pdn, void *addr, uint64_t length,
		       uint64_t iova, uint32_t access, struct vibv_prov_mr *mr)
{
	struct vrdma_mr_info info;
	int rc = vrdma_mr_reg(d->dev, pdn, addr, length, iova, access, &info);

	if (rc)
		return rc;
	mr->mrn = info.mrn;
	mr->lkey = info.lkey;
	mr->rkey = info.rkey;
	return 0;
}

static int prov_dereg_mr(struct vibv_prov_dev *d, uint32_t mrn)
{
	return vrdma_mr_dereg(d->dev, mrn);
}

static int prov_alloc_mw(struct vibv_prov_dev *d, uint32_t pdn, uint32_t mw_type,
			 uint32_t *mwn, uint32_t *rkey)
{
	struct vrdma_mw_info mw;
	int rc = vrdma_mw_alloc(d->dev, pdn, mw_type, &mw);

	if (rc)
		return rc;
	*mwn = mw.mwn;
	*rkey = mw.rkey;
	return 0;
}

static int prov_dealloc_mw(struct vibv_prov_dev *d, uint32_t mwn)
{
	return vrdma_mw_dealloc(d->dev, mwn);
}

static int prov_create_ah(struct vibv_prov_dev *d, uint32_t pdn,
			  const struct vrdma_ah_attr *attr, uint32_t *ah)
{
	return vrdma_ah_create(d->dev, pdn, attr, ah);
}

static int prov_destroy_ah(struct vibv_prov_dev *d, uint32_t pdn, uint32_t ah)
{
	return vrdma_ah_destroy(d->dev, pdn, ah);
}

/* ---- CQs ----------------------------------------------------------------------- */

static int prov_create_cq(struct vibv_prov_dev *d, uint32_t cqe, void *cookie,
			  struct vibv_prov_cq **out, struct vibv_prov_cq_info *info)
{
	struct vibv_prov_cq *p;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = vrdma_cq_create(d->dev, cqe, &p->cq);
	if (rc) {
		free(p);
		return rc;
	}
	vrdma_cq_set_context(p->cq, cookie);
	info->cqn = vrdma_cq_num(p->cq);
	info->cqe = vrdma_cq_size(p->cq);
	info->event_fd = vrdma_cq_event_fd(p->cq);
	*out = p;
	return 0;
}

static int prov_destroy_cq(struct vibv_prov_cq *p)
{
	int rc = vrdma_cq_destroy(p->cq);

	if (rc == 0)
		free(p);
	return rc;
}

static int prov_poll_cq(struct vibv_prov_cq *p, struct vrdma_wc *wc, int n)
{
	return vrdma_cq_poll(p->cq, wc, n);
}

static int prov_arm_cq(struct vibv_prov_cq *p, uint32_t flags)
{
	return vrdma_cq_arm(p->cq, flags);
}

static int prov_cq_consume_event(struct vibv_prov_cq *p)
{
	return vrdma_cq_consume_event(p->cq);
}

static int prov_resize_cq(struct vibv_prov_cq *p, uint32_t *cqe)
{
	int rc = vrdma_cq_resize(p->cq, *cqe);

	if (rc)
		return rc;
	*cqe = vrdma_cq_size(p->cq);
	return 0;
}

/* ---- QPs ----------------------------------------------------------------------- */

static int prov_create_qp(struct vibv_prov_dev *d, const struct vibv_prov_qp_init *init,
			  void *cookie, struct vibv_prov_qp **out,
			  struct vibv_prov_qp_info *info)
{
	struct vrdma_qp_init in;
	struct vibv_prov_qp *p;
	int rc;

	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	memset(&in, 0, sizeof(in));
	in.pdn = init->pdn;
	in.qp_type = init->qp_type;
	in.sq_sig_all = init->sq_sig_all;
	in.send_cq = init->send_cq->cq;
	in.recv_cq = init->recv_cq->cq;
	in.srq = init->srq ? init->srq->srq : NULL;
	in.cap = init->cap;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = vrdma_qp_create(d->dev, &in, &p->qp);
	if (rc) {
		free(p);
		return rc;
	}
	vrdma_qp_set_context(p->qp, cookie);
	vrdma_qp_get_cap(p->qp, &info->cap);
	info->qpn = vrdma_qp_num(p->qp);
	*out = p;
	return 0;
}

static int prov_modify_qp(struct vibv_prov_qp *p, const struct vrdma_qp_attr *a,
			  uint32_t mask)
{
	return vrdma_qp_modify(p->qp, a, mask);
}

static int prov_query_qp(struct vibv_prov_qp *p, uint32_t mask, struct vrdma_qp_attr *a)
{
	return vrdma_qp_query(p->qp, mask, a);
}

static int prov_resize_qp(struct vibv_prov_qp *p, struct vrdma_qp_cap *cap)
{
	struct vrdma_qp_cap now;
	int rc;

	vrdma_qp_get_cap(p->qp, &now);
	if (cap->max_send_sge != now.max_send_sge || cap->max_recv_sge != now.max_recv_sge ||
	    cap->max_inline_data != now.max_inline_data)
		return -EINVAL;
	rc = vrdma_qp_resize(p->qp, cap->max_send_wr, cap->max_recv_wr);
	if (rc)
		return rc;
	vrdma_qp_get_cap(p->qp, cap);
	return 0;
}

static int prov_destroy_qp(struct vibv_prov_qp *p)
{
	int rc = vrdma_qp_destroy(p->qp);

	if (rc == 0)
		free(p);
	return rc;
}

static int prov_post_send(struct vibv_prov_qp *p, const struct vrdma_send_wr *wr,
			  unsigned int n)
{
	return vrdma_post_send(p->qp, wr, n);
}

static int prov_post_recv(struct vibv_prov_qp *p, const struct vrdma_recv_wr *wr,
			  unsigned int n)
{
	return vrdma_post_recv(p->qp, wr, n);
}

/* ---- SRQs (extension) ----------------------------------------------------------- */

static int prov_create_srq(struct vibv_prov_dev *d, uint32_t pdn,
			   struct vibv_prov_srq_attr *attr, void *cookie,
			   struct vibv_prov_srq **out)
{
	struct vrdma_srq_attr a;
	struct vibv_prov_srq *p;
	int rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.max_wr = attr->max_wr;
	a.max_sge = attr->max_sge;
	rc = vrdma_srq_create(d->dev, pdn, &a, &p->srq);
	if (rc) {
		free(p);
		return rc;
	}
	vrdma_srq_set_context(p->srq, cookie);
	/* (created unarmed: srq_limit is ignored) */
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = 0;
	attr->srqn = vrdma_srq_num(p->srq);
	*out = p;
	return 0;
}

static int prov_modify_srq(struct vibv_prov_srq *p, const struct vibv_prov_srq_attr *attr,
			   uint32_t mask)
{
	struct vrdma_srq_attr a;
	uint32_t m = 0;

	if (mask & VRDMA_PROV_SRQ_MAX_WR)
		return -EINVAL; /* no SRQ resize */
	if (mask & VRDMA_PROV_SRQ_LIMIT)
		m |= VIRTIO_IB_SRQ_LIMIT;
	memset(&a, 0, sizeof(a));
	a.max_wr = attr->max_wr;
	a.max_sge = attr->max_sge;
	a.srq_limit = attr->srq_limit;
	return vrdma_srq_modify(p->srq, &a, m);
}

static int prov_query_srq(struct vibv_prov_srq *p, struct vibv_prov_srq_attr *attr)
{
	struct vrdma_srq_attr a;
	int rc = vrdma_srq_query(p->srq, &a);

	if (rc)
		return rc;
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}

static int prov_destroy_srq(struct vibv_prov_srq *p)
{
	int rc = vrdma_srq_destroy(p->srq);

	if (rc == 0)
		free(p);
	return rc;
}

static int prov_post_srq_recv(struct vibv_prov_srq *p, const struct vrdma_recv_wr *wr,
			      unsigned int n)
{
	return vrdma_post_srq_recv(p->srq, wr, n);
}

const struct vibv_prov_ops vibv_prov_vrdma_ops = {
	.name = "vrdma",
	.discover = prov_discover,
	.open = prov_open,
	.close = prov_close,
	.query_device = prov_query_device,
	.query_port = prov_query_port,
	.query_gid = prov_query_gid,
	.async_fd = prov_async_fd,
	.get_async_event = prov_get_async_event,
	.query_pkey = prov_query_pkey,
	.cm_cmd = prov_cm_cmd,
	.create_pd = prov_create_pd,
	.destroy_pd = prov_destroy_pd,
	.reg_mr = prov_reg_mr,
	.dereg_mr = prov_dereg_mr,
	.alloc_mw = prov_alloc_mw,
	.dealloc_mw = prov_dealloc_mw,
	.create_cq = prov_create_cq,
	.destroy_cq = prov_destroy_cq,
	.poll_cq = prov_poll_cq,
	.arm_cq = prov_arm_cq,
	.cq_consume_event = prov_cq_consume_event,
	.resize_cq = prov_resize_cq,
	.create_qp = prov_create_qp,
	.modify_qp = prov_modify_qp,
	.query_qp = prov_query_qp,
	.destroy_qp = prov_destroy_qp,
	.resize_qp = prov_resize_qp,
	.post_send = prov_post_send,
	.post_recv = prov_post_recv,
	.create_srq = prov_create_srq,
	.modify_srq = prov_modify_srq,
	.query_srq = prov_query_srq,
	.destroy_srq = prov_destroy_srq,
	.post_srq_recv = prov_post_srq_recv,
	.create_ah = prov_create_ah,
	.destroy_ah = prov_destroy_ah,
};
