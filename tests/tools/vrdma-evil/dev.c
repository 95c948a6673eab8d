// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: a small, correct virtio-net driver over vhost_client and
 * vq_drv (rx 0, tx 1, ctrl 2 in one identity-mapped memfd arena), so that the
 * ring attacks start from a device that works, and can prove it works again
 * after a reset.
 */
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "evil.h"

#define EVIL_ARENA_SIZE (1u << 20)
#define EVIL_RING_SLOT (16u << 10)   /* ring i at arena + i * 16 KiB */
#define EVIL_IND_OFF (64u << 10)      /* indirect tables: 64 KiB */
#define EVIL_RX_OFF (256u << 10)      /* 128 receive buffers */
#define EVIL_TX_OFF (512u << 10)      /* 128 transmit buffers */
#define EVIL_CTRL_OFF (768u << 10)    /* control command buffer */
#define EVIL_RX_POSTED 64
#define EVIL_TX_SLOTS 64
#define EVIL_ETHERTYPE 0x88b7

#define BIT64(n) (1ull << (n))

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void evil_drain(int fd)
{
	eventfd_t v;

	if (fd >= 0)
		(void)eventfd_read(fd, &v);
}

void evil_kick(struct evil_dev *d, unsigned idx)
{
	if (d->r[idx].kick >= 0)
		(void)eventfd_write(d->r[idx].kick, 1);
}

int evil_say_rc(const char *what, int rc)
{
	if (rc < 0)
		evil_say("setup: %s: %s", what, strerror(-rc));
	return rc;
}

int evil_protocol_setup(struct vhost_client *vc, bool mem_slots)
{
	uint64_t pf;
	int rc;

	rc = vhost_client_get_protocol_features(vc, &pf);
	if (!rc)
		rc = vhost_client_set_protocol_features(
			vc, pf & (BIT64(VHOST_USER_PROTOCOL_F_MQ) |
				  BIT64(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				  BIT64(VHOST_USER_PROTOCOL_F_CONFIG) |
				  BIT64(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |
				  BIT64(VHOST_USER_PROTOCOL_F_STATUS) |
				  BIT64(VHOST_USER_PROTOCOL_F_RESET_DEVICE)));
	if (rc < 0)
		return evil_say_rc("protocol features", rc);
	if (!vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_REPLY_ACK) ||
	    !vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_STATUS) ||
	    (mem_slots && !vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)) ||
	    !vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_RESET_DEVICE) ||
	    !vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_CONFIG))
		return evil_say_rc("protocol features missing", -ENOTSUP);
	rc = vhost_client_set_owner(vc);
	if (rc < 0)
		return evil_say_rc("SET_OWNER", rc);
	return 0;
}

void evil_ring_fds_close(struct vq_drv *vq, int *kick, int *call, int *err)
{
	vq_drv_fini(vq);
	if (*kick >= 0)
		close(*kick);
	if (*call >= 0)
		close(*call);
	if (*err >= 0)
		close(*err);
	*kick = *call = *err = -1;
}

int evil_add_arena(struct vhost_client *vc, uint8_t *arena, size_t size, int fd)
{
	struct vhost_user_mem_region reg;
	int rc;

	memset(&reg, 0, sizeof(reg));
	reg.guest_phys_addr = evil_gpa(arena);
	reg.userspace_addr = evil_gpa(arena);
	reg.memory_size = size;
	rc = vhost_client_add_mem_reg(vc, &reg, fd);
	return rc < 0 ? evil_say_rc("ADD_MEM_REG", rc) : 0;
}

int evil_features_ok(struct vhost_client *vc, uint64_t features)
{
	uint8_t st;
	int rc;

	rc = vhost_client_set_status(vc, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	if (!rc)
		rc = vhost_client_set_features(vc, features | BIT64(VHOST_USER_F_PROTOCOL_FEATURES));
	if (!rc)
		rc = vhost_client_set_status(vc, VIRTIO_CONFIG_S_ACKNOWLEDGE |
					     VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK);
	if (!rc)
		rc = vhost_client_get_status(vc, &st);
	if (rc < 0)
		return evil_say_rc("status / SET_FEATURES", rc);
	if (!(st & VIRTIO_CONFIG_S_FEATURES_OK))
		return evil_say_rc("FEATURES_OK refused", -ENOTSUP);
	return 0;
}

/* Features, status FEATURES_OK. */
static int dev_negotiate(struct evil_dev *d, bool first)
{
	struct vhost_client *vc = &d->vc;
	uint64_t f, want;
	int rc;

	rc = vhost_client_get_features(vc, &f);
	if (rc < 0)
		return evil_say_rc("GET_FEATURES", rc);
	if (!(f & BIT64(VIRTIO_F_VERSION_1)) || !(f & BIT64(VHOST_USER_F_PROTOCOL_FEATURES)))
		return evil_say_rc("features", -ENOTSUP);
	if (first) {
		rc = evil_protocol_setup(vc, true);
		if (rc < 0)
			return rc;
		rc = vhost_client_get_config(vc, 0, d->mac, 6);
		if (rc < 0)
			return evil_say_rc("GET_CONFIG", rc);
	}
	want = BIT64(VIRTIO_F_VERSION_1) | BIT64(VIRTIO_NET_F_MAC) | BIT64(VIRTIO_NET_F_CTRL_VQ) |
	       BIT64(VIRTIO_NET_F_CTRL_RX);
	if (d->o->rdma_dev) /* no device feature bits */
		want = BIT64(VIRTIO_F_VERSION_1);
	if (!(d->flags & EVIL_F_NO_INDIRECT))
		want |= BIT64(VIRTIO_RING_F_INDIRECT_DESC);
	if (d->flags & EVIL_F_NO_MAC)
		want &= ~BIT64(VIRTIO_NET_F_MAC);
	d->features = f & want;
	return evil_features_ok(vc, d->features);
}

int evil_vring_start(struct vhost_client *vc, unsigned idx, struct vq_drv *vq, uint8_t *mem,
		     unsigned num, int kick, int call, int err)
{
	struct vhost_user_vring_addr a;
	int rc;

	vq_drv_fini(vq);
	rc = vq_drv_init(vq, mem, num, false);
	if (rc < 0)
		return evil_say_rc("vq_drv_init", rc);
	evil_drain(kick);
	evil_drain(call);
	evil_drain(err);
	memset(&a, 0, sizeof(a));
	a.index = idx;
	a.desc_user_addr = evil_gpa(vq_drv_desc(vq));
	a.avail_user_addr = evil_gpa(vq_drv_avail(vq));
	a.used_user_addr = evil_gpa(vq_drv_used(vq));
	rc = vhost_client_set_vring_num(vc, idx, num);
	if (!rc)
		rc = vhost_client_set_vring_base(vc, idx, 0);
	if (!rc)
		rc = vhost_client_set_vring_addr(vc, &a);
	if (!rc)
		rc = vhost_client_set_vring_call(vc, idx, call);
	if (!rc)
		rc = vhost_client_set_vring_err(vc, idx, err);
	if (!rc)
		rc = vhost_client_set_vring_kick(vc, idx, kick);
	if (!rc)
		rc = vhost_client_set_vring_enable(vc, idx, true);
	return evil_say_rc("ring setup", rc);
}

static int ring_setup(struct evil_dev *d, unsigned idx)
{
	struct evil_ring *r = &d->r[idx];

	/* the virtio-rdma device: our control ring is its ring 0 */
	return evil_vring_start(&d->vc, d->o->rdma_dev ? 0 : idx, &r->vq, r->mem, EVIL_RING_NUM,
				r->kick, r->call, r->err);
}

static void rx_post(struct evil_dev *d, unsigned i)
{
	struct vq_buf b = { evil_gpa(d->rxbuf + (size_t)i * EVIL_BUF), EVIL_BUF };

	vq_drv_add(&d->r[EVIL_RXQ].vq, NULL, 0, &b, 1, &d->rx_tokens[i]);
}

/* Rings, DRIVER_OK, receive buffers (after negotiation and memory). */
static int dev_rings_up(struct evil_dev *d)
{
	int rc = 0;

	for (unsigned i = 0; !rc && i < EVIL_NRINGS; i++)
		if (!d->o->rdma_dev || i == EVIL_CTRLQ)
			rc = ring_setup(d, i);
	if (!rc)
		rc = evil_say_rc("DRIVER_OK", vhost_client_set_status(&d->vc,
				VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK));
	if (rc)
		return rc;
	d->tx_next = 0;
	if (!(d->flags & EVIL_F_NO_RX_POST) && !d->o->rdma_dev) {
		for (unsigned i = 0; i < EVIL_RX_POSTED; i++)
			rx_post(d, i);
		vq_drv_kick_prepare(&d->r[EVIL_RXQ].vq);
		evil_kick(d, EVIL_RXQ);
	}
	return 0;
}

int evil_dev_open(struct evil_dev *d, const struct evil_opts *o, unsigned flags)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->o = o;
	d->flags = flags;
	d->arena_fd = -1;
	vhost_client_init_fd(&d->vc, -1);
	for (unsigned i = 0; i < EVIL_NRINGS; i++)
		d->r[i].kick = d->r[i].call = d->r[i].err = -1;
	for (unsigned i = 0; i < EVIL_NRINGS; i++) {
		struct evil_ring *r = &d->r[i];

		r->idx = i;
		r->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r->err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->kick < 0 || r->call < 0 || r->err < 0)
			return evil_say_rc("eventfd", -errno);
	}
	for (unsigned i = 0; i < EVIL_RING_NUM; i++)
		d->rx_tokens[i] = (uint16_t)i;

	d->arena_size = EVIL_ARENA_SIZE;
	d->arena_fd = memfd_create("vrdma-evil", MFD_CLOEXEC |
				   (flags & EVIL_F_SEALABLE ? MFD_ALLOW_SEALING : 0));
	if (d->arena_fd < 0 || ftruncate(d->arena_fd, (off_t)d->arena_size) < 0)
		return evil_say_rc("memfd", -errno);
	d->arena = mmap(NULL, d->arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, d->arena_fd, 0);
	if (d->arena == MAP_FAILED) {
		d->arena = NULL;
		return evil_say_rc("mmap", -errno);
	}
	for (unsigned i = 0; i < EVIL_NRINGS; i++)
		d->r[i].mem = d->arena + (size_t)i * EVIL_RING_SLOT;
	d->ind = d->arena + EVIL_IND_OFF;
	d->rxbuf = d->arena + EVIL_RX_OFF;
	d->txbuf = d->arena + EVIL_TX_OFF;
	d->ctrlbuf = d->arena + EVIL_CTRL_OFF;

	rc = vhost_client_connect(&d->vc, o->socket);
	if (rc < 0)
		return evil_say_rc("connect", rc);
	d->vc.timeout_ms = o->timeout_ms;
	rc = dev_negotiate(d, true);
	if (rc < 0)
		return rc;
	rc = evil_add_arena(&d->vc, d->arena, d->arena_size, d->arena_fd);
	if (rc < 0)
		return rc;
	return dev_rings_up(d);
}

int evil_dev_restart(struct evil_dev *d)
{
	/* RESET_DEVICE keeps the memory table: only features and rings again. */
	int rc;

	d->flags &= ~EVIL_F_NO_RX_POST;
	rc = dev_negotiate(d, false);
	return rc ? rc : dev_rings_up(d);
}

void evil_dev_close(struct evil_dev *d)
{
	vhost_client_close(&d->vc);
	for (unsigned i = 0; i < EVIL_NRINGS; i++) {
		struct evil_ring *r = &d->r[i];

		evil_ring_fds_close(&r->vq, &r->kick, &r->call, &r->err);
	}
	if (d->arena)
		munmap(d->arena, d->arena_size);
	if (d->arena_fd >= 0)
		close(d->arena_fd);
	d->arena = NULL;
	d->arena_fd = -1;
}

int evil_tx(struct evil_dev *d, const void *frame, size_t len)
{
	struct vq_drv *vq = &d->r[EVIL_TXQ].vq;
	uint32_t ulen;
	uint8_t *buf;
	struct vq_buf b;
	int rc;

	if (len > EVIL_BUF - EVIL_NET_HDR)
		return -EMSGSIZE;
	while (vq_drv_get_used(vq, &ulen))
		;
	buf = d->txbuf + (size_t)(d->tx_next++ % EVIL_TX_SLOTS) * EVIL_BUF;
	memset(buf, 0, EVIL_NET_HDR);
	memcpy(buf + EVIL_NET_HDR, frame, len);
	b.addr = evil_gpa(buf);
	b.len = (uint32_t)(EVIL_NET_HDR + len);
	rc = vq_drv_add(vq, &b, 1, NULL, 0, buf);
	if (rc < 0)
		return rc;
	vq_drv_kick_prepare(vq);
	evil_kick(d, EVIL_TXQ);
	return 0;
}

int evil_vq_wait_used(struct vq_drv *vq, int call, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = call, .events = POLLIN };
		uint64_t now;

		evil_drain(call);
		if (vq_drv_has_used(vq))
			return 1;
		now = now_ms();
		if (now >= deadline)
			return 0;
		(void)poll(&p, 1, (int)(deadline - now) < 50 ? (int)(deadline - now) : 50);
	}
}

int evil_wait_used(struct evil_dev *d, unsigned idx, int timeout_ms)
{
	return evil_vq_wait_used(&d->r[idx].vq, d->r[idx].call, timeout_ms);
}

int evil_rx(struct evil_dev *d, void *buf, size_t cap, int timeout_ms)
{
	struct vq_drv *vq = &d->r[EVIL_RXQ].vq;
	uint16_t *tok;
	uint32_t len;
	size_t n;
	unsigned i;

	if (!evil_wait_used(d, EVIL_RXQ, timeout_ms))
		return -ETIMEDOUT;
	tok = vq_drv_get_used(vq, &len);
	if (!tok)
		return -EIO;
	i = *tok;
	if (len < EVIL_NET_HDR || len > EVIL_BUF)
		return -EIO;
	n = len - EVIL_NET_HDR;
	memcpy(buf, d->rxbuf + (size_t)i * EVIL_BUF + EVIL_NET_HDR, n < cap ? n : cap);
	rx_post(d, i);
	vq_drv_kick_prepare(vq);
	evil_kick(d, EVIL_RXQ);
	return (int)n;
}

/* A 64-byte frame to ourselves, numbered seq. */
static void loop_frame(const struct evil_dev *d, uint32_t seq, uint8_t f[64])
{
	memcpy(f, d->mac, 6);
	memcpy(f + 6, d->mac, 6);
	f[12] = EVIL_ETHERTYPE >> 8;
	f[13] = EVIL_ETHERTYPE & 0xff;
	memcpy(f + 14, "EVIL", 4);
	memcpy(f + 18, &seq, 4);
	for (unsigned i = 22; i < 64; i++)
		f[i] = (uint8_t)(seq * 7 + i);
}

int evil_loopback(struct evil_dev *d, uint32_t seq)
{
	uint8_t f[64], r[EVIL_BUF];
	uint64_t deadline = now_ms() + (uint64_t)d->o->timeout_ms;
	int rc;

	loop_frame(d, seq, f);
	rc = evil_tx(d, f, sizeof(f));
	if (rc < 0)
		return rc;
	for (;;) {
		uint64_t now = now_ms();
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = evil_rx(d, r, sizeof(r), (int)(deadline - now));
		if (n < 0)
			return n;
		if (n >= 14 && r[12] == f[12] && r[13] == f[13])
			return (n == (int)sizeof(f) && !memcmp(r, f, sizeof(f))) ? 0 : -EBADMSG;
		/* something else (a flooded frame): not ours */
	}
}

int evil_ctrl(struct evil_dev *d, uint8_t cls, uint8_t cmd, const void *data, size_t len)
{
	struct vq_drv *vq = &d->r[EVIL_CTRLQ].vq;
	struct vq_buf out[2], in;
	uint8_t *b = d->ctrlbuf;
	unsigned nout = 1;
	uint32_t ulen;
	int rc;

	if (len > 1024)
		return -EINVAL;
	b[0] = cls;
	b[1] = cmd;
	memcpy(b + 16, data, len);
	b[2048] = 0xff;
	out[0].addr = evil_gpa(b);
	out[0].len = 2;
	if (len) {
		out[1].addr = evil_gpa(b + 16);
		out[1].len = (uint32_t)len;
		nout = 2;
	}
	in.addr = evil_gpa(b + 2048);
	in.len = 1;
	rc = vq_drv_add(vq, out, nout, &in, 1, b);
	if (rc < 0)
		return rc;
	vq_drv_kick_prepare(vq);
	evil_kick(d, EVIL_CTRLQ);
	if (!evil_wait_used(d, EVIL_CTRLQ, d->o->timeout_ms))
		return -ETIMEDOUT;
	if (vq_drv_get_used(vq, &ulen) != b || ulen < 1)
		return -EIO;
	return b[2048];
}

int evil_rdma_cmd_rsp(struct evil_dev *d, uint8_t cmd, const void *data, size_t len, void *rsp,
		      size_t rsp_len)
{
	struct vq_drv *vq = &d->r[EVIL_CTRLQ].vq;
	struct vq_buf out, in;
	uint8_t *b = d->ctrlbuf;
	uint32_t ulen;
	int rc;

	if (len > 1024 || rsp_len > 255)
		return -EINVAL;
	b[0] = cmd;
	if (len)
		memcpy(b + 1, data, len);
	b[2048] = 0xff;
	out.addr = evil_gpa(b);
	out.len = (uint32_t)(1 + len);
	in.addr = evil_gpa(b + 2048);
	in.len = 256;
	rc = vq_drv_add(vq, &out, 1, &in, 1, b);
	if (rc < 0)
		return rc;
	vq_drv_kick_prepare(vq);
	evil_kick(d, EVIL_CTRLQ);
	if (!evil_wait_used(d, EVIL_CTRLQ, d->o->timeout_ms))
		return -ETIMEDOUT;
	if (vq_drv_get_used(vq, &ulen) != b || ulen < 1)
		return -EIO;
	if (rsp_len && b[2048] == 0) {
		if (ulen < 1 + rsp_len)
			return -EIO;
		memcpy(rsp, b + 2049, rsp_len);
	}
	return b[2048];
}

int evil_rdma_cmd(struct evil_dev *d, uint8_t cmd, const void *data, size_t len)
{
	return evil_rdma_cmd_rsp(d, cmd, data, len, NULL, 0);
}

int evil_status(struct evil_dev *d, uint8_t *st)
{
	return vhost_client_get_status(&d->vc, st);
}

int evil_wait_err(struct evil_dev *d, unsigned idx, int timeout_ms)
{
	struct pollfd p = { .fd = d->r[idx].err, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n > 0 && (p.revents & POLLIN);
}
