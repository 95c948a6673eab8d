// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: a small, correct RDMA driver (VIRTIO_NET_F_ROCE and
 * VIRTIO_NET_F_ROCE_EXT) over vhost_client and vq_drv, for the attacks on the
 * verbs extensions (ext.c). Everything lives in one identity-mapped memfd
 * arena (GPA == our address):
 *   control queue, the event queue, one CQ (both QPs' send and receive CQ),
 *   two RC QPs A and B connected to each other through the device's own
 *   port (devices hairpin), QP B receiving from an SRQ when asked, one PD,
 *   and a 256 KiB data MR with every right the device offers.
 * rdev_up() can be repeated after RESET_DEVICE on the same connection.
 */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "evil.h"
#include "rdma.h"

#define BIT64(n) (1ull << (n))

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- arena ------------------------------------------------------------------ */

/* Bump allocation of len bytes (aligned to 64) from the arena. */
static uint8_t *arena_get(struct evil_rdev *d, size_t len, size_t align)
{
	size_t off = (d->arena_next + align - 1) & ~(align - 1);

	if (off + len > d->arena_size)
		return NULL;
	d->arena_next = off + len;
	return d->arena + off;
}

/* ---- rings -------------------------------------------------------------------- */

void rdev_kick(struct evil_rring *r)
{
	if (r->kick >= 0)
		(void)eventfd_write(r->kick, 1);
}

static int rring_alloc(struct evil_rdev *d, struct evil_rring *r)
{
	r->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->kick < 0 || r->call < 0 || r->err < 0)
		return evil_say_rc("eventfd", -errno);
	r->mem = arena_get(d, RDEV_RING_SLOT, 4096);
	return r->mem ? 0 : evil_say_rc("arena", -ENOMEM);
}

static void rring_free(struct evil_rring *r)
{
	evil_ring_fds_close(&r->vq, &r->kick, &r->call, &r->err);
	r->up = false;
}

int rdev_ring_setup(struct evil_rdev *d, struct evil_rring *r, unsigned idx)
{
	int rc;

	r->idx = idx;
	rc = evil_vring_start(&d->vc, idx, &r->vq, r->mem, RDEV_RING_NUM, r->kick, r->call,
			      r->err);
	if (!rc)
		r->up = true;
	return rc;
}

/* Wait up to timeout_ms for a used entry on r. Returns 1 or 0. */
int rdev_wait_used(struct evil_rring *r, int timeout_ms)
{
	return evil_vq_wait_used(&r->vq, r->call, timeout_ms);
}

/* Wait up to timeout_ms for the error eventfd of r. Returns 1 or 0. */
int rdev_wait_err(struct evil_rring *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->err, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n > 0 && (p.revents & POLLIN);
}

/* ---- control queue ------------------------------------------------------------- */

int rdev_cmd_raw(struct evil_rdev *d, uint8_t cls, uint8_t cmd, const void *in, size_t in_len,
		 void *out, size_t out_len)
{
	struct vq_drv *vq = &d->ctrl.vq;
	struct vq_buf o[2], i;
	uint8_t *b = d->ctrlbuf;
	unsigned no = 1;
	uint32_t ulen;
	void *tok;
	int rc;

	if (in_len > RDEV_CTRL_IN_MAX || out_len > RDEV_CTRL_OUT_MAX)
		return -EINVAL;
	while (vq_drv_get_used(vq, &ulen))
		;
	b[0] = cls;
	b[1] = cmd;
	if (in_len)
		memcpy(b + 64, in, in_len);
	memset(b + RDEV_CTRL_ACK_OFF, 0xee, 1 + out_len);
	o[0].addr = evil_gpa(b);
	o[0].len = 2;
	if (in_len) {
		o[1].addr = evil_gpa(b + 64);
		o[1].len = (uint32_t)in_len;
		no = 2;
	}
	i.addr = evil_gpa(b + RDEV_CTRL_ACK_OFF);
	i.len = (uint32_t)(1 + out_len);
	rc = vq_drv_add(vq, o, no, &i, 1, b);
	if (rc < 0)
		return rc;
	vq_drv_kick_prepare(vq);
	rdev_kick(&d->ctrl);
	if (!rdev_wait_used(&d->ctrl, d->o->timeout_ms))
		return -ETIMEDOUT;
	tok = vq_drv_get_used(vq, &ulen);
	if (tok != b || ulen < 1)
		return -EIO;
	if (out && out_len)
		memcpy(out, b + RDEV_CTRL_ACK_OFF + 1, out_len);
	return b[RDEV_CTRL_ACK_OFF];
}

int rdev_cmd(struct evil_rdev *d, uint8_t cmd, const void *in, size_t in_len, void *out,
	     size_t out_len)
{
	return rdev_cmd_raw(d, VIRTIO_NET_CTRL_ROCE, cmd, in, in_len, out, out_len);
}

/* A command that must succeed; returns 0 or -EIO (message printed). */
static int cmd_ok(struct evil_rdev *d, uint8_t cmd, const void *in, size_t in_len, void *out,
		  size_t out_len, const char *what)
{
	int rc = rdev_cmd(d, cmd, in, in_len, out, out_len);

	if (rc != VIRTIO_NET_OK) {
		evil_say("setup: %s (command %u): %s", what, cmd,
			 rc < 0 ? strerror(-rc) : "VIRTIO_NET_ERR");
		return -EIO;
	}
	return 0;
}

/* ---- negotiation ------------------------------------------------------------------ */

static int rdev_negotiate(struct evil_rdev *d, bool first, bool ext)
{
	struct vhost_client *vc = &d->vc;
	struct virtio_net_roce_ext_config cfg;
	uint64_t f, want;
	int rc;

	rc = vhost_client_get_features(vc, &f);
	if (rc < 0)
		return evil_say_rc("GET_FEATURES", rc);
	if (first) {
		rc = evil_protocol_setup(vc, false);
		if (rc < 0)
			return rc;
	}
	want = BIT64(VIRTIO_F_VERSION_1) | BIT64(VIRTIO_NET_F_MAC) | BIT64(VIRTIO_NET_F_CTRL_VQ) |
	       BIT64(VIRTIO_NET_F_ROCE);
	if (ext)
		want |= BIT64(VIRTIO_NET_F_ROCE_EXT);
	if ((f & want) != want) {
		evil_say("setup: the device does not offer%s%s",
			 f & BIT64(VIRTIO_NET_F_ROCE) ? "" : " VIRTIO_NET_F_ROCE",
			 ext && !(f & BIT64(VIRTIO_NET_F_ROCE_EXT)) ? " VIRTIO_NET_F_ROCE_EXT" : "");
		return -ENOTSUP;
	}
	d->features = want;
	rc = evil_features_ok(vc, want);
	if (rc < 0)
		return rc;
	memset(&cfg, 0, sizeof(cfg));
	rc = vhost_client_get_config(vc, 0, &cfg, ext ? sizeof(cfg) : 32);
	if (rc < 0)
		return evil_say_rc("GET_CONFIG", rc);
	memcpy(d->mac, cfg.mac, 6);
	d->qps = le32toh(cfg.max_rdma_qps);
	d->cqs = le32toh(cfg.max_rdma_cqs);
	d->srqs = ext ? le32toh(cfg.max_rdma_srqs) : 0;
	if (d->qps < 4 || d->cqs < 1 || d->qps > 16384 || d->cqs > 16384) {
		evil_say("setup: the device has max_rdma_qps %u, max_rdma_cqs %u (need >= 4, >= 1)",
			 d->qps, d->cqs);
		return -ENOTSUP;
	}
	if (rdev_vq_eventq(d) + 1 + (d->srqs ? 1 : 0) > 255) {
		evil_say("setup: the event / SRQ rings are beyond index 255 (qps %u cqs %u)",
			 d->qps, d->cqs);
		return -ENOTSUP;
	}
	return 0;
}

/* ---- objects ------------------------------------------------------------------------- */

static void cq_post(struct evil_rdev *d, unsigned i)
{
	struct vq_buf b = { evil_gpa(d->cqbufs + (size_t)i * RDEV_CQE_SLOT), RDEV_CQE_SLOT };

	vq_drv_add(&d->cq.vq, NULL, 0, &b, 1, d->cqbufs + (size_t)i * RDEV_CQE_SLOT);
}

void rdev_ev_post(struct evil_rdev *d, unsigned i, uint32_t len)
{
	struct vq_buf b = { evil_gpa(d->evbufs + (size_t)i * 64), len };

	vq_drv_add(&d->eventq.vq, NULL, 0, &b, 1, d->evbufs + (size_t)i * 64);
}

static int create_qp(struct evil_rdev *d, int which, bool srq)
{
	struct virtio_rdma_cmd_create_qp_ext c;
	struct virtio_rdma_ack_create_qp a;
	unsigned i;
	int rc;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(d->pdn);
	c.qp_type = VIRTIO_IB_QPT_RC;
	c.send_cqn = htole32(d->cqn);
	c.recv_cqn = htole32(d->cqn);
	c.cap.max_send_wr = htole32(32);
	c.cap.max_recv_wr = htole32(srq ? 0 : 32);
	c.cap.max_send_sge = htole32(2);
	c.cap.max_recv_sge = htole32(srq ? 0 : 2);
	c.cap.max_inline_data = htole32(64);
	if (srq) {
		c.ext_flags = htole32(VIRTIO_IB_QP_CREATE_SRQ);
		c.srqn = htole32(d->srqn);
	}
	rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c), &a, sizeof(a), "CREATE_QP");
	if (rc)
		return rc;
	d->qpn[which] = le32toh(a.qpn);
	i = vrdma_qpn_index(d->qpn[which]);
	if (i >= d->qps)
		return evil_say_rc("CREATE_QP returned a bad qpn", -EPROTO);
	rc = rdev_ring_setup(d, &d->sq[which], vrdma_vq_sq(1, d->cqs, i));
	if (!rc)
		rc = rdev_ring_setup(d, &d->rq[which], vrdma_vq_rq(1, d->cqs, i));
	d->sq_next[which] = 0;
	return rc;
}

int rdev_modify(struct evil_rdev *d, uint32_t qpn, uint32_t mask,
		const struct virtio_rdma_cmd_modify_qp *m)
{
	struct virtio_rdma_cmd_modify_qp c = *m;

	c.qpn = htole32(qpn);
	c.attr_mask = htole32(mask);
	return rdev_cmd(d, VIRTIO_NET_CTRL_ROCE_MODIFY_QP, &c, sizeof(c), NULL, 0);
}

/* RESET -> INIT -> RTR -> RTS towards the other QP (from any state: RESET
 * first). Returns 0 or -EIO. */
int rdev_connect(struct evil_rdev *d, int which)
{
	struct virtio_rdma_cmd_modify_qp m;
	uint32_t qpn = d->qpn[which], other = d->qpn[!which];
	int rc;

	memset(&m, 0, sizeof(m));
	m.qp_state = VIRTIO_IB_QPS_RESET;
	rc = rdev_modify(d, qpn, VIRTIO_IB_QP_STATE, &m);
	if (rc == 0) {
		m.qp_state = VIRTIO_IB_QPS_INIT;
		m.qp_access_flags = htole32(d->qp_access);
		rc = rdev_modify(d, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS, &m);
	}
	if (rc == 0) {
		memset(&m, 0, sizeof(m));
		m.qp_state = VIRTIO_IB_QPS_RTR;
		m.path_mtu = VIRTIO_IB_MTU_1024;
		m.dest_qp_num = htole32(other);
		m.rq_psn = htole32(0x1000 + (uint32_t)!which * 0x100);
		m.max_dest_rd_atomic = 4;
		m.min_rnr_timer = 1;
		memcpy(m.ah_attr.grh.dgid, d->gid0, 16);
		m.ah_attr.grh.sgid_index = 0;
		m.ah_attr.grh.hop_limit = 64;
		memcpy(m.ah_attr.dmac, d->mac, 6);
		rc = rdev_modify(d, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV |
				 VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
				 VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
				 VIRTIO_IB_QP_MIN_RNR_TIMER, &m);
	}
	if (rc == 0) {
		memset(&m, 0, sizeof(m));
		m.qp_state = VIRTIO_IB_QPS_RTS;
		m.timeout = 12;
		m.retry_cnt = 3;
		m.rnr_retry = 2;
		m.sq_psn = htole32(0x1000 + (uint32_t)which * 0x100);
		m.max_rd_atomic = 4;
		rc = rdev_modify(d, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_TIMEOUT |
				 VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
				 VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC, &m);
	}
	if (rc != 0) {
		evil_say("setup: MODIFY_QP of QP %#x to RTS: %s", qpn,
			 rc < 0 ? strerror(-rc) : "VIRTIO_NET_ERR");
		return -EIO;
	}
	return 0;
}

void rdev_post_recvs(struct evil_rdev *d, struct evil_rring *r, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		uint8_t *e = d->rqbufs + (size_t)(k % RDEV_RQ_SLOTS) * 64;
		struct virtio_rdma_rq_req q;
		struct virtio_rdma_sge s;
		struct vq_buf b = { evil_gpa(e), sizeof(q) + sizeof(s) };

		memset(&q, 0, sizeof(q));
		q.wr_id = htole64(0x7000 + k);
		q.num_sge = htole32(1);
		s.addr = htole64(evil_gpa(d->data + RDEV_RECV_OFF));
		s.length = htole32(4096);
		s.lkey = htole32(d->data_lkey);
		memcpy(e, &q, sizeof(q));
		memcpy(e + sizeof(q), &s, sizeof(s));
		if (vq_drv_add(&r->vq, &b, 1, NULL, 0, e) < 0)
			break;
	}
	vq_drv_kick_prepare(&r->vq);
	rdev_kick(r);
}

int rdev_up(struct evil_rdev *d, unsigned flags)
{
	struct virtio_rdma_ack_create_pd pd;
	struct virtio_rdma_cmd_create_cq cc = { htole32(256) };
	struct virtio_rdma_ack_create_cq ca;
	struct virtio_rdma_ack_reg_user_mr mra;
	struct virtio_rdma_cmd_reg_user_mr *mr;
	bool ext = !(flags & RDEV_F_NO_EXT);
	uint8_t mrbuf[32 + 8 * (RDEV_DATA_SIZE / 4096)];
	int rc;

	d->flags = flags;
	rc = rdev_ring_setup(d, &d->ctrl, vrdma_vq_ctrl(1));
	if (!rc && ext)
		rc = rdev_ring_setup(d, &d->eventq, rdev_vq_eventq(d));
	if (!rc)
		rc = evil_say_rc("DRIVER_OK", vhost_client_set_status(&d->vc,
				VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK));
	if (rc)
		return rc;
	if (ext && !(flags & RDEV_F_NO_EVQ_POST)) {
		for (unsigned i = 0; i < RDEV_EV_SLOTS; i++)
			rdev_ev_post(d, i, 16);
		vq_drv_kick_prepare(&d->eventq.vq);
		rdev_kick(&d->eventq);
	}
	memset(&d->dev, 0, sizeof(d->dev));
	rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, &d->dev, sizeof(d->dev),
		    "QUERY_DEVICE");
	if (rc)
		return rc;
	d->caps = ext ? le64toh(d->dev.device_cap_flags) : 0;
	d->atomics = ext && d->dev.atomic_cap != VIRTIO_IB_ATOMIC_NONE;
	d->mw = ext && (d->caps & VIRTIO_IB_DEVICE_MEM_WINDOW) && le32toh(d->dev.max_mw) > 0;
	d->mw2 = d->mw && (d->caps & VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B);
	d->memmgt = ext && (d->caps & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);
	d->has_srq = ext && (d->caps & VIRTIO_IB_DEVICE_SRQ) && d->srqs > 0;
	rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, &pd, sizeof(pd), "CREATE_PD");
	if (rc)
		return rc;
	d->pdn = le32toh(pd.pdn);
	rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, &cc, sizeof(cc), &ca, sizeof(ca),
		    "CREATE_CQ");
	if (rc)
		return rc;
	d->cqn = le32toh(ca.cqn);
	if (d->cqn >= d->cqs)
		return evil_say_rc("CREATE_CQ returned a bad cqn", -EPROTO);
	rc = rdev_ring_setup(d, &d->cq, vrdma_vq_cq(1, d->cqn));
	if (rc)
		return rc;
	if (!(flags & RDEV_F_NO_CQ_POST)) {
		for (unsigned i = 0; i < RDEV_RING_NUM; i++)
			cq_post(d, i);
		vq_drv_kick_prepare(&d->cq.vq);
		rdev_kick(&d->cq);
	}

	/* the data MR: every right the device offers */
	d->mr_access = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
		       VIRTIO_IB_ACCESS_REMOTE_READ;
	if (d->atomics)
		d->mr_access |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	if (d->mw)
		d->mr_access |= VIRTIO_IB_ACCESS_MW_BIND;
	mr = (struct virtio_rdma_cmd_reg_user_mr *)mrbuf;
	memset(mrbuf, 0, sizeof(mrbuf));
	mr->pdn = htole32(d->pdn);
	mr->access_flags = htole32(d->mr_access);
	mr->virt_addr = htole64(evil_gpa(d->data));
	mr->length = htole64(RDEV_DATA_SIZE);
	mr->npages = htole32(RDEV_DATA_SIZE / 4096);
	for (unsigned i = 0; i < RDEV_DATA_SIZE / 4096; i++) {
		uint64_t p = htole64(evil_gpa(d->data) + 4096ull * i);

		memcpy(mrbuf + 32 + 8 * i, &p, 8);
	}
	rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, mrbuf, sizeof(mrbuf), &mra, sizeof(mra),
		    "REG_USER_MR");
	if (rc)
		return rc;
	d->data_mrn = le32toh(mra.mrn);
	d->data_lkey = le32toh(mra.lkey);
	d->data_rkey = le32toh(mra.rkey);

	if ((flags & RDEV_F_SRQ) && d->has_srq) {
		struct virtio_rdma_cmd_create_srq cs = { htole32(d->pdn), htole32(64), htole32(2), 0 };
		struct virtio_rdma_ack_create_srq as;

		rc = cmd_ok(d, VIRTIO_NET_CTRL_ROCE_CREATE_SRQ, &cs, sizeof(cs), &as, sizeof(as),
			    "CREATE_SRQ");
		if (rc)
			return rc;
		d->srqn = le32toh(as.srqn);
		if (d->srqn >= d->srqs)
			return evil_say_rc("CREATE_SRQ returned a bad srqn", -EPROTO);
		rc = rdev_ring_setup(d, &d->srq, rdev_vq_srq(d, d->srqn));
		if (rc)
			return rc;
	}
	d->qp_access = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
		       VIRTIO_IB_ACCESS_REMOTE_READ;
	if (d->atomics)
		d->qp_access |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	rc = create_qp(d, 0, false);
	if (!rc)
		rc = create_qp(d, 1, (flags & RDEV_F_SRQ) && d->has_srq);
	if (!rc)
		rc = rdev_connect(d, 0);
	if (!rc)
		rc = rdev_connect(d, 1);
	if (rc)
		return rc;
	if (!(flags & RDEV_F_NO_RECV_POST)) {
		if ((flags & RDEV_F_SRQ) && d->has_srq)
			rdev_post_recvs(d, &d->srq, 16);
		else
			rdev_post_recvs(d, &d->rq[1], 16);
	}
	return 0;
}

int rdev_open(struct evil_rdev *d, const struct evil_opts *o, unsigned flags)
{
	struct evil_rring *all[] = { &d->ctrl, &d->eventq, &d->cq, &d->srq, &d->sq[0], &d->rq[0],
				     &d->sq[1], &d->rq[1] };
	int rc;

	memset(d, 0, sizeof(*d));
	d->o = o;
	d->arena_fd = -1;
	vhost_client_init_fd(&d->vc, -1);
	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		all[i]->kick = all[i]->call = all[i]->err = -1;
	d->arena_size = RDEV_ARENA_SIZE;
	d->arena_fd = memfd_create("vrdma-evil-rdma", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (d->arena_fd < 0 || ftruncate(d->arena_fd, (off_t)d->arena_size) < 0)
		return evil_say_rc("memfd", -errno);
	d->arena = mmap(NULL, d->arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, d->arena_fd, 0);
	if (d->arena == MAP_FAILED) {
		d->arena = NULL;
		return evil_say_rc("mmap", -errno);
	}
	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		rc = rring_alloc(d, all[i]);
		if (rc)
			return rc;
	}
	d->ctrlbuf = arena_get(d, 16384, 4096);
	d->ind = arena_get(d, 8192, 4096);
	d->cqbufs = arena_get(d, (size_t)RDEV_RING_NUM * RDEV_CQE_SLOT, 4096);
	d->evbufs = arena_get(d, (size_t)RDEV_EV_SLOTS * 64, 4096);
	d->sqbufs = arena_get(d, (size_t)RDEV_SQ_SLOTS * RDEV_SQE_SLOT, 4096);
	d->rqbufs = arena_get(d, (size_t)RDEV_RQ_SLOTS * 64, 4096);
	d->scratch = arena_get(d, 65536, 4096);
	d->data = arena_get(d, RDEV_DATA_SIZE, 4096);
	if (!d->ctrlbuf || !d->ind || !d->cqbufs || !d->evbufs || !d->sqbufs || !d->rqbufs ||
	    !d->scratch || !d->data)
		return evil_say_rc("arena", -ENOMEM);

	rc = vhost_client_connect(&d->vc, o->socket);
	if (rc < 0)
		return evil_say_rc("connect", rc);
	d->vc.timeout_ms = o->timeout_ms;
	rc = rdev_negotiate(d, true, !(flags & RDEV_F_NO_EXT));
	if (rc)
		return rc;
	rc = evil_add_arena(&d->vc, d->arena, d->arena_size, d->arena_fd);
	if (rc < 0)
		return rc;
	/* GID 0: fe80::/64 with the EUI-64 of the MAC */
	memset(d->gid0, 0, 16);
	d->gid0[0] = 0xfe;
	d->gid0[1] = 0x80;
	d->gid0[8] = d->mac[0] ^ 2;
	d->gid0[9] = d->mac[1];
	d->gid0[10] = d->mac[2];
	d->gid0[11] = 0xff;
	d->gid0[12] = 0xfe;
	d->gid0[13] = d->mac[3];
	d->gid0[14] = d->mac[4];
	d->gid0[15] = d->mac[5];
	return rdev_up(d, flags);
}

int rdev_reset_up(struct evil_rdev *d, unsigned flags)
{
	uint8_t st = 0xff;
	int rc;

	rc = vhost_client_reset_device(&d->vc);
	if (!rc)
		rc = vhost_client_get_status(&d->vc, &st);
	if (rc < 0 || st != 0) {
		evil_say("after RESET_DEVICE: status 0x%02x (%s)", st, rc < 0 ? strerror(-rc) : "ok");
		return rc < 0 ? rc : -EIO;
	}
	rc = rdev_negotiate(d, false, !(flags & RDEV_F_NO_EXT));
	return rc ? rc : rdev_up(d, flags);
}

void rdev_close(struct evil_rdev *d)
{
	struct evil_rring *all[] = { &d->ctrl, &d->eventq, &d->cq, &d->srq, &d->sq[0], &d->rq[0],
				     &d->sq[1], &d->rq[1] };

	vhost_client_close(&d->vc);
	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		rring_free(all[i]);
	if (d->arena)
		munmap(d->arena, d->arena_size);
	if (d->arena_fd >= 0)
		close(d->arena_fd);
	d->arena = NULL;
	d->arena_fd = -1;
}

/* ---- data path ---------------------------------------------------------------------- */

int rdev_post_send_raw(struct evil_rdev *d, int which, const void *req, size_t len)
{
	struct evil_rring *r = &d->sq[which];
	uint8_t *e;
	struct vq_buf b;
	uint32_t ulen;
	int rc;

	if (len > RDEV_SQE_SLOT)
		return -EINVAL;
	while (vq_drv_get_used(&r->vq, &ulen))
		;
	e = d->sqbufs + ((size_t)which * (RDEV_SQ_SLOTS / 2) +
			 d->sq_next[which]++ % (RDEV_SQ_SLOTS / 2)) * RDEV_SQE_SLOT;
	memcpy(e, req, len);
	b.addr = evil_gpa(e);
	b.len = (uint32_t)len;
	rc = vq_drv_add(&r->vq, &b, 1, NULL, 0, e);
	if (rc < 0)
		return rc;
	vq_drv_kick_prepare(&r->vq);
	rdev_kick(r);
	return 0;
}

int rdev_post_send(struct evil_rdev *d, int which, const struct virtio_rdma_sq_req_ext *wr,
		   const struct virtio_rdma_sge *sge, unsigned nsge)
{
	uint8_t buf[sizeof(*wr) + 4 * sizeof(*sge)];

	if (nsge > 4)
		return -EINVAL;
	memcpy(buf, wr, sizeof(*wr));
	if (nsge)
		memcpy(buf + sizeof(*wr), sge, nsge * sizeof(*sge));
	return rdev_post_send_raw(d, which, buf, sizeof(*wr) + nsge * sizeof(*sge));
}

int rdev_poll_cq(struct evil_rdev *d, struct virtio_rdma_cq_req_ext *wc, int timeout_ms)
{
	uint32_t len;
	uint8_t *b;

	for (;;) {
		b = vq_drv_get_used(&d->cq.vq, &len);
		if (b)
			break;
		if (!rdev_wait_used(&d->cq, timeout_ms))
			return -ETIMEDOUT;
	}
	memset(wc, 0, sizeof(*wc));
	if (len >= sizeof(*wc))
		memcpy(wc, b, sizeof(*wc));
	cq_post(d, (unsigned)((b - d->cqbufs) / RDEV_CQE_SLOT));
	vq_drv_kick_prepare(&d->cq.vq);
	rdev_kick(&d->cq);
	return len >= sizeof(*wc) ? 0 : -EIO;
}

int rdev_wait_wc(struct evil_rdev *d, uint64_t wr_id, struct virtio_rdma_cq_req_ext *wc)
{
	uint64_t deadline = now_ms() + (uint64_t)d->o->timeout_ms;

	for (;;) {
		uint64_t now = now_ms();
		int rc;

		if (now >= deadline)
			return -ETIMEDOUT;
		rc = rdev_poll_cq(d, wc, (int)(deadline - now));
		if (rc < 0)
			return rc;
		if (le64toh(wc->wr_id) == wr_id)
			return 0;
	}
}

int rdev_next_event(struct evil_rdev *d, struct virtio_rdma_event *ev, uint32_t *used_len,
		    int timeout_ms)
{
	uint32_t len;
	uint8_t *b;

	for (;;) {
		b = vq_drv_get_used(&d->eventq.vq, &len);
		if (b)
			break;
		if (!rdev_wait_used(&d->eventq, timeout_ms))
			return -ETIMEDOUT;
	}
	*used_len = len;
	memset(ev, 0, sizeof(*ev));
	if (len >= sizeof(*ev) && len <= 64)
		memcpy(ev, b, sizeof(*ev));
	return (int)((b - d->evbufs) / 64);
}

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 29 + i * 13 + (i >> 9) + 3);
}

int rdev_probe(struct evil_rdev *d, uint32_t seed)
{
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge sge;
	struct virtio_rdma_cq_req_ext wc;
	uint8_t *src = d->data + RDEV_SRC_OFF, *dst = d->data + RDEV_DST_OFF;
	int rc;

	for (size_t i = 0; i < 8192; i++) {
		src[i] = pat(seed, i);
		dst[i] = 0;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = htole64(0x9000 + seed);
	wr.opcode = VIRTIO_IB_WR_RDMA_WRITE;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.rdma.remote_addr = htole64(evil_gpa(dst));
	wr.rdma.rkey = htole32(d->data_rkey);
	wr.num_sge = htole32(1);
	sge.addr = htole64(evil_gpa(src));
	sge.length = htole32(8192);
	sge.lkey = htole32(d->data_lkey);
	rc = rdev_post_send(d, 0, &wr, &sge, 1);
	if (rc < 0)
		return rc;
	rc = rdev_wait_wc(d, 0x9000 + seed, &wc);
	if (rc < 0) {
		evil_say("probe: no completion of the RDMA WRITE: %s", strerror(-rc));
		return rc;
	}
	if (wc.status != VIRTIO_IB_WC_SUCCESS) {
		evil_say("probe: RDMA WRITE completed with status %u", wc.status);
		return -EIO;
	}
	if (memcmp(src, dst, 8192)) {
		evil_say("probe: RDMA WRITE: bytes differ");
		return -EBADMSG;
	}
	return 0;
}
