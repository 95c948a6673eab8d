// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma RDMA part: per-device state, the RoCE command helper, device and
 * port queries, the GID table, protection domains, address handles,
 * statistics and the teardown vrdma_dev_close() runs.
 *
 * Every call validates against the shadow tables first (precise errnos, no
 * round trip for a request the device would refuse), then sends the command;
 * a handle the device answers with is checked too (range, not already live),
 * and a bad one is undone and reported as -EIO: the device is untrusted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"

/* ---- state ---------------------------------------------------------------- */

int vrdma_rdma_table_reserve(void **tab, uint32_t *cap, size_t elem, uint32_t idx)
{
	uint32_t ncap;
	void *t;

	if (idx < *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap <= idx)
		ncap *= 2;
	t = realloc(*tab, (size_t)ncap * elem);
	if (!t)
		return -ENOMEM;
	memset((char *)t + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
	*tab = t;
	*cap = ncap;
	return 0;
}

/* The tables vrdma_rdma_handle_take() fills start their entries with live. */
_Static_assert(offsetof(struct vrdma_rdma_pd, live) == 0, "pd live");
_Static_assert(offsetof(struct vrdma_rdma_mr, live) == 0, "mr live");
_Static_assert(offsetof(struct vrdma_rdma_ah, live) == 0, "ah live");

int vrdma_rdma_handle_take(struct vrdma_rdma *r, void **tab, uint32_t *cap, size_t elem,
			   uint32_t n, uint32_t max, const char *cmd, const char *field,
			   uint8_t undo, const void *undo_cmd, size_t undo_len)
{
	int rc = n && n <= max ? 0 : -EIO;

	if (!rc)
		rc = vrdma_rdma_table_reserve(tab, cap, elem, n);
	if (!rc && *(const bool *)(const void *)((const char *)*tab + (size_t)n * elem))
		rc = -EIO;
	if (rc) {
		if (rc == -EIO)
			LOG_PEER("vrdma: %s returned bad %s %u", cmd, field, n);
		vrdma_rdma_cmd(r, undo, undo_cmd, undo_len, NULL, 0);
	}
	return rc;
}

/*
 * The one mapping of a refused RoCE command (VIRTIO_NET_ERR, which says no
 * more) to an errno, by what refusing that command means: no room for a new
 * object (ENOMEM), an object still in use (EBUSY), a query or notification
 * the device cannot answer (EIO), else bad arguments (EINVAL).
 */
static int rdma_cmd_refused(struct vrdma_rdma *r, uint8_t cmd)
{
	switch (cmd) {
	case VIRTIO_NET_CTRL_ROCE_CREATE_CQ:
	case VIRTIO_NET_CTRL_ROCE_CREATE_PD:
	case VIRTIO_NET_CTRL_ROCE_REG_USER_MR:
	case VIRTIO_NET_CTRL_ROCE_CREATE_QP:
	case VIRTIO_NET_CTRL_ROCE_CREATE_SRQ:
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MR:
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MW:
		return -ENOMEM;
	case VIRTIO_NET_CTRL_ROCE_DESTROY_CQ:
	case VIRTIO_NET_CTRL_ROCE_DESTROY_PD:
	case VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ:
		return -EBUSY;
	case VIRTIO_NET_CTRL_ROCE_DEREG_MR:
		/* With windows, a refusal is most likely one bound to the MR. */
		return vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_WINDOW) ? -EBUSY : -EINVAL;
	case VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE:
	case VIRTIO_NET_CTRL_ROCE_QUERY_PORT:
	case VIRTIO_NET_CTRL_ROCE_QUERY_QP:
	case VIRTIO_NET_CTRL_ROCE_QUERY_SRQ:
	case VIRTIO_NET_CTRL_ROCE_DESTROY_QP:
	case VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ:
		return -EIO;
	default:
		return -EINVAL;
	}
}

/* One command of class CLS: 0, 1 if the device refused it (VIRTIO_NET_ERR),
 * or a negative errno if it could not be sent. */
int vrdma_rdma_cmd_raw(struct vrdma_rdma *r, uint8_t cls, uint8_t cmd, const void *in,
		       size_t in_len, void *out, size_t out_len)
{
	uint8_t ack = VIRTIO_NET_ERR;
	int rc;

	rc = vrdma_ctrl_cmd(r->dev, cls, cmd, in, in_len, out, out_len, &ack);
	if (rc < 0)
		return rc;
	r->cmds++;
	if (ack != VIRTIO_NET_OK) {
		r->cmd_errors++;
		return 1;
	}
	return 0;
}

/* A RoCE command (numbered as the virtio-net RoCE device numbers them) through
 * the device's model: 0 or a negative errno (a refusal mapped once, above). */
int vrdma_rdma_cmd(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len,
		   void *out, size_t out_len)
{
	int rc = r->model->cmd(r, cmd, in, in_len, out, out_len);

	return rc > 0 ? rdma_cmd_refused(r, cmd) : rc;
}

/* ---- the virtio-net RoCE model ------------------------------------------------ */

static int net_roce_cmd(struct vrdma_rdma *r, uint8_t cmd, const void *in, size_t in_len,
			void *out, size_t out_len)
{
	return vrdma_rdma_cmd_raw(r, VIRTIO_NET_CTRL_ROCE, cmd, in, in_len, out, out_len);
}

static unsigned net_roce_vq_cq(const struct vrdma_rdma *r, uint32_t cqn)
{
	(void)r;
	return vrdma_vq_cq(VRDMA_RDMA_NET_PAIRS, cqn);
}

static unsigned net_roce_vq_sq(const struct vrdma_rdma *r, uint32_t index)
{
	return vrdma_vq_sq(VRDMA_RDMA_NET_PAIRS, r->ncq_rings, index);
}

static unsigned net_roce_vq_rq(const struct vrdma_rdma *r, uint32_t index)
{
	return vrdma_vq_rq(VRDMA_RDMA_NET_PAIRS, r->ncq_rings, index);
}

static size_t net_roce_sq_slot_size(uint32_t max_send_sge, uint32_t max_inline_data)
{
	(void)max_inline_data; /* the fixed part has the inline area */
	return sizeof(struct virtio_rdma_sq_req) +
	       (size_t)max_send_sge * sizeof(struct virtio_rdma_sge);
}

static size_t net_roce_rq_slot_size(uint32_t max_recv_sge)
{
	return sizeof(struct virtio_rdma_rq_req) +
	       (size_t)max_recv_sge * sizeof(struct virtio_rdma_sge);
}

const struct vrdma_model vrdma_model_net_roce = {
	.name = "virtio-net",
	.cmd = net_roce_cmd,
	.vq_cq = net_roce_vq_cq,
	.vq_sq = net_roce_vq_sq,
	.vq_rq = net_roce_vq_rq,
	.sq_slot_size = net_roce_sq_slot_size,
	.rq_slot_size = net_roce_rq_slot_size,
	.sq_encode = vrdma_rdma_sq_encode,
	.rq_encode = vrdma_rdma_rq_encode,
	.cqe_size = VRDMA_CQE_SIZE,
	.cq_decode = vrdma_rdma_cq_decode,
};

static void rdma_state_free(struct vrdma_rdma *r)
{
	vrdma_rdma_ext_fini(r);
	free(r->srqs);
	free(r->pds);
	free(r->mrs);
	free(r->ahs);
	free(r->cqs);
	free(r->qps);
	free(r->gids);
	free(r);
}

/* vrdma_dev_close(): device lock held, the back-end already reset (every
 * object is gone there) and dead set. Frees QPs, then CQs (their rings and
 * buffers), drops the MRs' share handles, then the state. */
static void rdma_dev_destroy(struct vrdma_dev *dev)
{
	struct vrdma_rdma *r = dev->rdma;
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < r->nqp_rings; i++)
		if (r->qps[i])
			vrdma_rdma_qp_free(r, r->qps[i]);
	for (i = 0; i < r->nsrq_rings; i++)
		if (r->srqs[i])
			vrdma_rdma_srq_free(r, r->srqs[i]);
	for (i = 0; i < r->ncq_rings; i++)
		if (r->cqs[i])
			vrdma_rdma_cq_free(r, r->cqs[i]);
	for (i = 0; i < r->mrs_cap; i++) {
		if (r->mrs[i].live && r->mrs[i].sh)
			vrdma_mem_unshare(r->mrs[i].sh);
		if (r->mrs[i].live && r->mrs[i].pages)
			vrdma_shm_free(dev, r->mrs[i].pages, (size_t)r->mrs[i].max_num_sg * 8);
	}
	dev->rdma = NULL;
	dev->rdma_destroy = NULL;
	rdma_state_free(r);
}

/* GID 1 from a QUERY_PORT ack: its gid1_ipv4 bytes (zeros: no IPv4 GID;
 * an RFC-only device leaves them zero too). */
static void rdma_port_ipv4(struct vrdma_rdma *r, const uint8_t gid1_ipv4[4])
{
	static const uint8_t zero[4];

	r->ipv4_known = memcmp(gid1_ipv4, zero, 4) != 0;
	memcpy(r->ipv4, gid1_ipv4, 4);
}

/* GID 2 at open: the device's configured IPv6 address from the QUERY_PORT
 * ack (zeros: none; an RFC-only device leaves them zero). */
static void rdma_port_ipv6(struct vrdma_rdma *r, const uint8_t gid2_ipv6[16])
{
	static const uint8_t zero[16];

	if (!memcmp(gid2_ipv6, zero, 16) || r->gid_tbl_len <= 2)
		return;
	r->gids[2].valid = true;
	memcpy(r->gids[2].raw, gid2_ipv6, 16);
}

/* Send QUERY_DEVICE and QUERY_PORT and check the answers. */
static int rdma_fetch_attrs(struct vrdma_rdma *r)
{
	struct virtio_rdma_ack_query_device_ext d;
	struct virtio_rdma_ack_query_port_ext p;
	struct vrdma_device_attr *a = &r->attr;
	int rc;

	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, &d, sizeof(d));
	if (rc)
		return rc;
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, &p, sizeof(p));
	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->device_cap_flags = le64toh(d.device_cap_flags);
	a->max_mr_size = le64toh(d.max_mr_size);
	a->page_size_cap = le64toh(d.page_size_cap);
	a->hw_ver = le32toh(d.hw_ver);
	a->max_qp_wr = le32toh(d.max_qp_wr);
	a->max_send_sge = le32toh(d.max_send_sge);
	a->max_recv_sge = le32toh(d.max_recv_sge);
	a->max_sge_rd = le32toh(d.max_sge_rd);
	a->max_cqe = le32toh(d.max_cqe);
	a->max_mr = le32toh(d.max_mr);
	a->max_pd = le32toh(d.max_pd);
	a->max_qp_rd_atom = le32toh(d.max_qp_rd_atom);
	a->max_qp_init_rd_atom = le32toh(d.max_qp_init_rd_atom);
	a->max_ah = le32toh(d.max_ah);
	a->local_ca_ack_delay = d.local_ca_ack_delay;
	a->max_rdma_qps = r->nqp_rings;
	a->max_rdma_cqs = r->ncq_rings;
	a->max_qp = r->nqp_rings > 2 ? r->nqp_rings - 2 : 0;
	a->max_inline_data = VIRTIO_RDMA_INLINE_DATA_SIZE;
	/* Sizes the driver relies on (virtqueues are at most 32768; a CQ
	 * beyond its ring lives in the device's backlog). */
	if (a->max_qp_wr > 32768)
		a->max_qp_wr = 32768;
	if (a->max_cqe > VRDMA_CQ_MAX)
		a->max_cqe = VRDMA_CQ_MAX;
	if (r->ext) {
		/* Only capabilities this library knows; an SRQ capability
		 * without SRQ virtqueues is none. */
		a->ext = true;
		a->device_cap_flags &= VIRTIO_IB_DEVICE_CAP_EXT_MASK;
		if (!r->nsrq_rings)
			a->device_cap_flags &= ~VIRTIO_IB_DEVICE_SRQ;
		if (a->device_cap_flags & VIRTIO_IB_DEVICE_SRQ) {
			a->max_srq = r->nsrq_rings;
			a->max_srq_wr = MIN(le32toh(d.max_srq_wr), 32768u);
			a->max_srq_sge = le32toh(d.max_srq_sge);
		}
		if (a->device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW)
			a->max_mw = le32toh(d.max_mw);
		if (a->device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)
			a->max_fast_reg_page_list_len = le32toh(d.max_fast_reg_page_list_len);
		a->max_pkeys = le16toh(d.max_pkeys);
		a->atomic_cap = d.atomic_cap == VIRTIO_IB_ATOMIC_HCA ||
					d.atomic_cap == VIRTIO_IB_ATOMIC_GLOB ?
				d.atomic_cap : VIRTIO_IB_ATOMIC_NONE;
		r->pkey_tbl_len = le16toh(p.pkey_tbl_len);
	} else {
		/* An RFC-only device: only the RFC's bits mean anything. */
		a->device_cap_flags &= VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN;
	}
	r->gid_tbl_len = le32toh(p.gid_tbl_len);
	r->max_msg_sz = le32toh(p.max_msg_sz);
	rdma_port_ipv4(r, p.gid1_ipv4);
	memcpy(r->ipv6_at_open, p.gid2_ipv6, 16);
	if (r->gid_tbl_len > VRDMA_RDMA_MAX_GIDS) {
		LOG_PEER("vrdma: device GID table of %u entries, using %u", r->gid_tbl_len,
			 VRDMA_RDMA_MAX_GIDS);
		r->gid_tbl_len = VRDMA_RDMA_MAX_GIDS;
	}
	return 0;
}

int vrdma_rdma_get(struct vrdma_dev *dev, struct vrdma_rdma **out)
{
	struct vrdma_rdma *r = dev->rdma;
	uint32_t qps, cqs;
	int rc;

	if (vrdma_dev_is_dead(dev))
		return -ENOTCONN;
	if (r) {
		*out = r;
		return 0;
	}
	qps = vrdma_dev_max_rdma_qps(dev);
	cqs = vrdma_dev_max_rdma_cqs(dev);
	if (!qps || !cqs || !dev->ctrl.q)
		return -EOPNOTSUPP;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dev = dev;
	r->model = dev->virtio_rdma ? &vrdma_model_virtio_rdma : &vrdma_model_net_roce;
	r->ev_epfd = -1;
	r->nqp_rings = qps;
	r->ncq_rings = cqs;
	/* The virtio-rdma device has the extension's objects it reports
	 * (atomics, fast registration, P_Keys) without negotiation, and no
	 * event queue. */
	r->ext = dev->virtio_rdma || ((vrdma_dev_features(dev) >> VIRTIO_NET_F_ROCE_EXT) & 1);
	r->nsrq_rings = vrdma_dev_max_rdma_srqs(dev);
	r->cqs = calloc(cqs, sizeof(*r->cqs));
	r->qps = calloc(qps, sizeof(*r->qps));
	r->srqs = calloc(r->nsrq_rings ? r->nsrq_rings : 1, sizeof(*r->srqs));
	if (!r->cqs || !r->qps || !r->srqs) {
		rdma_state_free(r);
		return -ENOMEM;
	}
	/* The extension's event queue gets its buffers before any object
	 * exists (docs/spec.md "Discovery", step 3). */
	rc = dev->virtio_rdma ? 0 : vrdma_rdma_ext_init(r);
	if (rc == 0)
		rc = rdma_fetch_attrs(r);
	if (rc == 0) {
		r->gids = calloc(r->gid_tbl_len ? r->gid_tbl_len : 1, sizeof(*r->gids));
		if (!r->gids)
			rc = -ENOMEM;
		else
			rdma_port_ipv6(r, r->ipv6_at_open);
	}
	if (rc == 0 && r->model->init)
		rc = r->model->init(r);
	if (rc) {
		rdma_state_free(r);
		return rc;
	}
	dev->rdma = r;
	dev->rdma_destroy = rdma_dev_destroy;
	*out = r;
	return 0;
}

int vrdma_rdma_enter(struct vrdma_dev *dev, struct vrdma_rdma **r)
{
	int rc;

	if (!dev)
		return -EINVAL;
	vrdma_dev_lock(dev);
	rc = vrdma_rdma_get(dev, r);
	if (rc)
		vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_rdma_destroy(struct vrdma_dev *dev, const struct vrdma_rdma_kind *k,
		       uint32_t handle, void *obj)
{
	le32 h = htole32(handle);
	struct vrdma_rdma *r;
	int rc;

	_Static_assert(sizeof(struct virtio_rdma_cmd_destroy_pd) == sizeof(le32) &&
			       sizeof(struct virtio_rdma_cmd_destroy_cq) == sizeof(le32) &&
			       sizeof(struct virtio_rdma_cmd_destroy_qp) == sizeof(le32) &&
			       sizeof(struct virtio_rdma_cmd_destroy_srq) == sizeof(le32) &&
			       sizeof(struct virtio_rdma_cmd_dereg_mr) == sizeof(le32) &&
			       sizeof(struct virtio_rdma_cmd_dealloc_mw) == sizeof(le32),
		       "destroy commands carry one le32 handle");
	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	rc = k->check ? k->check(r, handle, obj) : 0;
	if (rc == 0)
		rc = vrdma_rdma_cmd(r, k->destroy_cmd, &h, sizeof(h), NULL, 0);
	if (rc == 0)
		k->drop(r, handle, obj);
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_rdma_pd_admit(const struct vrdma_rdma *r, uint32_t pdn, uint32_t count,
			uint32_t max)
{
	if (!vrdma_rdma_pd_live(r, pdn))
		return -EINVAL;
	return count >= max ? -ENOMEM : 0;
}

int vrdma_rdma_enter_checked(struct vrdma_dev *dev, bool bad, struct vrdma_rdma **r)
{
	return bad ? -EINVAL : vrdma_rdma_enter(dev, r);
}

/* ---- device and port -------------------------------------------------------- */

int vrdma_query_device(struct vrdma_dev *dev, struct vrdma_device_attr *attr)
{
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !attr, &r);
	if (rc)
		return rc;
	*attr = r->attr;
	vrdma_dev_unlock(dev);
	return 0;
}

int vrdma_query_port(struct vrdma_dev *dev, struct vrdma_port_attr *attr)
{
	struct vrdma_rdma *r;
	uint32_t mtu;
	uint8_t m;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !attr, &r);
	if (rc)
		return rc;
	{
		struct virtio_rdma_ack_query_port p;

		/* Fresh: the link and GID 1 may change. */
		rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, &p, sizeof(p));
		if (rc) {
			vrdma_dev_unlock(dev);
			return rc;
		}
		rdma_port_ipv4(r, p.gid1_ipv4);
	}
	memset(attr, 0, sizeof(*attr));
	if (dev->virtio_rdma) {
		*attr = r->vrd_port;
		attr->per_port = true;
	}
	attr->gid_tbl_len = r->gid_tbl_len;
	attr->max_msg_sz = r->max_msg_sz;
	attr->pkey_tbl_len = r->ext && r->pkey_tbl_len ? r->pkey_tbl_len : 1;
	attr->mtu = vrdma_dev_mtu(dev);
	rc = vrdma_dev_link_up(dev);
	vrdma_dev_unlock(dev);
	if (rc < 0)
		return rc;
	attr->link_up = rc == 1;
	/* The device's rule (docs/spec.md "Resource model"): payload + 84
	 * header bytes within the Ethernet MTU. */
	mtu = attr->mtu;
	attr->active_mtu = 0;
	for (m = VIRTIO_IB_MTU_4096; m >= VIRTIO_IB_MTU_256; m--) {
		if (virtio_ib_mtu_bytes(m) + 84 <= mtu) {
			attr->active_mtu = m;
			break;
		}
	}
	return 0;
}

/* ---- GID table ----------------------------------------------------------- */

static void gid_linklocal(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

static void gid_ipv4(const uint8_t a[4], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, a, 4);
}

static bool gid_zero(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	return !memcmp(gid, zero, 16);
}

int vrdma_gid_query(struct vrdma_dev *dev, uint32_t index, uint8_t gid[16])
{
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !gid, &r);
	if (rc)
		return rc;
	rc = 0;
	if (index >= r->gid_tbl_len) {
		rc = -EINVAL;
	} else if (index == 0) {
		uint8_t mac[6];

		vrdma_dev_mac(dev, mac);
		gid_linklocal(mac, gid);
	} else if (index == 1) {
		if (r->ipv4_known)
			gid_ipv4(r->ipv4, gid);
		else
			rc = -ENODATA;
	} else if (r->gids[index].valid) {
		memcpy(gid, r->gids[index].raw, 16);
	} else {
		rc = -ENODATA;
	}
	vrdma_dev_unlock(dev);
	return rc;
}

/* Whether index is an entry the driver may set: -EINVAL outside the
 * table, -EPERM for the device's own (0 and 1), else 0. */
static int gid_driver_index(const struct vrdma_rdma *r, uint32_t index)
{
	if (index >= r->gid_tbl_len)
		return -EINVAL;
	return index < 2 ? -EPERM : 0;
}

int vrdma_gid_add(struct vrdma_dev *dev, uint32_t index, const uint8_t gid[16])
{
	struct virtio_rdma_cmd_add_gid c;
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !gid, &r);
	if (rc)
		return rc;
	rc = gid_zero(gid) ? -EINVAL : gid_driver_index(r, index);
	if (rc)
		goto out;
	if (r->gids[index].valid) {
		rc = memcmp(r->gids[index].raw, gid, 16) ? -EBUSY : 0;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.index = htole16((uint16_t)index);
	memcpy(c.gid, gid, 16);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_ADD_GID, &c, sizeof(c), NULL, 0);
	if (rc == 0) {
		r->gids[index].valid = true;
		memcpy(r->gids[index].raw, gid, 16);
	}
out:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_gid_del(struct vrdma_dev *dev, uint32_t index)
{
	struct virtio_rdma_cmd_del_gid c;
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	rc = gid_driver_index(r, index);
	if (rc)
		goto out;
	if (!r->gids[index].valid) {
		rc = -ENODATA;
		goto out;
	}
	c.index = htole16((uint16_t)index);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_DEL_GID, &c, sizeof(c), NULL, 0);
	if (rc == 0)
		memset(&r->gids[index], 0, sizeof(r->gids[index]));
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* ---- protection domains ------------------------------------------------- */

int vrdma_pd_alloc(struct vrdma_dev *dev, uint32_t *pdn)
{
	struct virtio_rdma_ack_create_pd a;
	struct virtio_rdma_cmd_destroy_pd d;
	struct vrdma_rdma *r;
	uint32_t n;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !pdn, &r);
	if (rc)
		return rc;
	if (r->npds >= r->attr.max_pd) {
		rc = -ENOMEM;
		goto out;
	}
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, &a, sizeof(a));
	if (rc)
		goto out;
	n = le32toh(a.pdn);
	d.pdn = a.pdn;
	rc = vrdma_rdma_handle_take(r, VRDMA_RDMA_TABLE(r, pds), n, r->attr.max_pd, "CREATE_PD", "pdn",
				    VIRTIO_NET_CTRL_ROCE_DESTROY_PD, &d, sizeof(d));
	if (rc)
		goto out;
	r->pds[n].live = true;
	r->pds[n].refs = 0;
	r->npds++;
	*pdn = n;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

static int pd_check_free(struct vrdma_rdma *r, uint32_t pdn, void *obj VRDMA_UNUSED)
{
	if (!vrdma_rdma_pd_live(r, pdn))
		return -EINVAL;
	return r->pds[pdn].refs ? -EBUSY : 0;
}

static void pd_drop(struct vrdma_rdma *r, uint32_t pdn, void *obj VRDMA_UNUSED)
{
	r->pds[pdn].live = false;
	r->npds--;
}

static const struct vrdma_rdma_kind pd_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DESTROY_PD,
	.check = pd_check_free,
	.drop = pd_drop,
};

int vrdma_pd_free(struct vrdma_dev *dev, uint32_t pdn)
{
	return vrdma_rdma_destroy(dev, &pd_kind, pdn, NULL);
}

/* ---- address vectors and handles ---------------------------------------- */

int vrdma_rdma_check_av(const struct vrdma_rdma *r, const struct vrdma_ah_attr *a)
{
	uint32_t i = a->grh.sgid_index;

	if (a->grh.flow_label > 0xfffff || gid_zero(a->grh.dgid) || i >= r->gid_tbl_len)
		return -EINVAL;
	/* Entries 2.. are known exactly; 0 always exists; 1 is the device's. */
	if (i >= 2 && !r->gids[i].valid)
		return -EINVAL;
	return 0;
}

void vrdma_rdma_av_to_wire(const struct vrdma_ah_attr *a, struct virtio_rdma_ah_attr *w)
{
	memset(w, 0, sizeof(*w));
	memcpy(w->grh.dgid, a->grh.dgid, 16);
	w->grh.flow_label = htole32(a->grh.flow_label);
	w->grh.sgid_index = a->grh.sgid_index;
	w->grh.hop_limit = a->grh.hop_limit;
	w->grh.traffic_class = a->grh.traffic_class;
	memcpy(w->dmac, a->dmac, 6);
	w->sl = a->sl;
}

void vrdma_rdma_av_from_wire(const struct virtio_rdma_ah_attr *w, struct vrdma_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, w->grh.dgid, 16);
	a->grh.flow_label = le32toh(w->grh.flow_label);
	a->grh.sgid_index = w->grh.sgid_index;
	a->grh.hop_limit = w->grh.hop_limit;
	a->grh.traffic_class = w->grh.traffic_class;
	memcpy(a->dmac, w->dmac, 6);
	a->sl = w->sl;
}

int vrdma_ah_create(struct vrdma_dev *dev, uint32_t pdn, const struct vrdma_ah_attr *attr,
		    uint32_t *ah)
{
	struct virtio_rdma_cmd_create_ah c;
	struct virtio_rdma_ack_create_ah a;
	struct virtio_rdma_cmd_destroy_ah d;
	struct vrdma_rdma *r;
	uint32_t h;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !attr || !ah, &r);
	if (rc)
		return rc;
	rc = vrdma_rdma_check_av(r, attr);
	if (rc == 0)
		rc = vrdma_rdma_pd_admit(r, pdn, r->nahs, r->attr.max_ah);
	if (rc)
		goto out;
	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	vrdma_rdma_av_to_wire(attr, &c.ah_attr);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	h = le32toh(a.ah);
	d.pdn = htole32(pdn);
	d.ah = a.ah;
	rc = vrdma_rdma_handle_take(r, VRDMA_RDMA_TABLE(r, ahs), h, r->attr.max_ah, "CREATE_AH", "handle",
				    VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &d, sizeof(d));
	if (rc)
		goto out;
	r->ahs[h].live = true;
	r->ahs[h].pdn = pdn;
	r->nahs++;
	r->pds[pdn].refs++;
	*ah = h;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_ah_destroy(struct vrdma_dev *dev, uint32_t pdn, uint32_t ah)
{
	struct virtio_rdma_cmd_destroy_ah d;
	struct vrdma_rdma *r;
	int rc;

	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	if (!ah || ah >= r->ahs_cap || !r->ahs[ah].live || r->ahs[ah].pdn != pdn) {
		rc = -EINVAL;
		goto out;
	}
	d.pdn = htole32(pdn);
	d.ah = htole32(ah);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &d, sizeof(d), NULL, 0);
	if (rc == 0) {
		r->ahs[ah].live = false;
		r->nahs--;
		r->pds[pdn].refs--;
	}
out:
	vrdma_dev_unlock(dev);
	return rc;
}

/* ---- statistics --------------------------------------------------------------- */

int vrdma_rdma_get_stats(struct vrdma_dev *dev, struct vrdma_rdma_stats *st)
{
	struct vrdma_rdma *r;
	uint32_t i;
	int rc;

	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (!dev)
		return -EINVAL;
	vrdma_dev_lock(dev);
	r = dev->rdma;
	if (r) {
		st->cmds = r->cmds;
		st->cmd_errors = r->cmd_errors;
		st->pds = r->npds;
		st->mrs = r->nmrs;
		st->ahs = r->nahs;
		st->send_wrs = r->send_wrs;
		st->recv_wrs = r->recv_wrs;
		st->wcs = r->wcs;
		st->sq_full = r->sq_full;
		st->rq_full = r->rq_full;
		st->bad_wcs = r->bad_wcs;
		st->srqs = r->nsrqs;
		st->mws = r->nmws;
		st->events = r->events;
		st->bad_events = r->bad_events;
		st->dropped_wcs = r->dropped_wcs;
		for (i = 0; i < r->ncq_rings; i++) {
			struct vrdma_cq *cq = r->cqs[i];

			if (!cq)
				continue;
			st->cqs++;
			st->wcs += cq->wcs;
			st->bad_wcs += cq->bad;
			st->dropped_wcs += cq->orphans;
		}
		for (i = 0; i < r->nqp_rings; i++) {
			struct vrdma_qp *qp = r->qps[i];

			if (!qp)
				continue;
			st->qps++;
			st->send_wrs += qp->sq.posted;
			st->recv_wrs += qp->rq.posted;
			st->sq_full += qp->sq.full;
			st->rq_full += qp->rq.full;
		}
		for (i = 0; i < r->nsrq_rings; i++) {
			struct vrdma_srq *srq = r->srqs[i];

			if (!srq)
				continue;
			st->recv_wrs += srq->wq.posted;
			st->rq_full += srq->wq.full;
		}
	}
	rc = 0;
	vrdma_dev_unlock(dev);
	return rc;
}
