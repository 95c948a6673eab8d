/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fake driver for the RoCE transport engine, in-process: each device is a
 * struct rres_dev + its struct roce_tp, with the driver's memory in a memfd
 * arena registered in a struct vhost_mem (identity addresses, like
 * libvrdma) and rings driven from the driver side with src/virtio/vq_drv.h.
 * Devices are ports of a real switch (src/port) on a real loop, so frames
 * go through capture and the fault injector like in the daemon.
 *
 * Used by tests/unit/test_roce_*.c and fuzz/fuzz_*.c (header only).
 */
#ifndef VRDMA_TESTS_ROCE_TP_FAKE_H
#define VRDMA_TESTS_ROCE_TP_FAKE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/util.h"
#include "backend/rres_dev.h"
#include "port/fault.h"
#include "port/pkt.h"
#include "port/port.h"
#include "port/port_security.h"
#include "roce/roce_tp.h"
#include "vhost/vhost_mem.h"
#include "vhost/vhost_server.h"
#include "virtio/vq_dev.h"
#include "virtio/vq_drv.h"

#define FK_MAX_DEV 4

struct fk_ring {
	struct vhost_vring r;      /* device side */
	struct vq_drv drv;         /* driver side */
	uint8_t *mem;              /* ring memory (driver address) */
	uint8_t *bufs;             /* request / completion buffers */
	uint32_t stride;
	uint32_t next_buf;
	bool kickable;
	uint64_t calls, forced;    /* interrupts the device raised */
	uint64_t kicks;            /* kicks the driver sent */
	uint64_t used;             /* used entries consumed by the driver */
};

struct fk_env;

struct fk_dev {
	struct fk_env *env;
	unsigned id;
	struct rres_dev rd;
	struct roce_tp *tp;
	struct vhost_mem mem;
	int memfd;
	uint8_t *arena;
	uint64_t arena_size, brk;
	struct fk_ring **rings;
	uint32_t nrings;
	struct port port;
	bool attached;
	struct loop_poller *poller;
	uint8_t mac[6];
	uint32_t ip4;              /* network order */
	struct pkt_queue wire;     /* frames sent when there is no switch */
	uint64_t ring_errors;
	uint64_t comm_est_calls;   /* roce_tp_ops.comm_est, last for comm_est_qpn */
	uint32_t comm_est_qpn;
};

struct fk_env {
	struct loop *loop;
	struct sw *sw;
	struct fk_dev *dev[FK_MAX_DEV];
	unsigned ndev;
};

/* ---- ops ------------------------------------------------------------------- */

static struct vhost_vring *fk_op_ring(void *ctx, uint32_t idx)
{
	struct fk_dev *d = ctx;

	if (idx >= d->nrings || !d->rings[idx] || !d->rings[idx]->r.started)
		return NULL;
	return &d->rings[idx]->r;
}

static void fk_op_xmit(void *ctx, struct pkt *p)
{
	struct fk_dev *d = ctx;

	if (d->env && d->env->sw && d->attached)
		sw_input(d->env->sw, &d->port, p);
	else
		pkt_queue_push(&d->wire, p);
}

/* Flow control as in the daemon (netdev_roce.c): the switch may refuse a
 * frame for a busy device; the engine holds it until that device has room. */
static int fk_op_xmit_try(void *ctx, struct pkt *p)
{
	struct fk_dev *d = ctx;

	if (d->env && d->env->sw && d->attached)
		return sw_input_try(d->env->sw, &d->port, p);
	pkt_queue_push(&d->wire, p);
	return 0;
}

static void fk_op_rx_room(void *ctx)
{
	struct fk_dev *d = ctx;

	if (d->env && d->env->sw && d->attached)
		sw_port_ready(d->env->sw, &d->port);
}

/* Called with each ring the engine publishes (tests of publish order). */
static void (*fk_publish_hook)(struct vhost_vring *r, void *arg);
static void *fk_publish_arg;

static void fk_op_notify(void *ctx, struct vhost_vring *r, bool force)
{
	struct fk_ring *fr = container_of(r, struct fk_ring, r);

	(void)ctx;
	if (fk_publish_hook)
		fk_publish_hook(r, fk_publish_arg);
	if (force) {
		fr->calls++;
		fr->forced++;
	} else if (vq_dev_should_notify(&r->vq)) {
		fr->calls++;
	}
}

static void fk_op_ring_error(void *ctx, struct vhost_vring *r)
{
	struct fk_dev *d = ctx;

	(void)r;
	d->ring_errors++;
}

static void fk_op_comm_est(void *ctx, uint32_t qpn)
{
	struct fk_dev *d = ctx;

	d->comm_est_calls++;
	d->comm_est_qpn = qpn;
}

static const struct roce_tp_ops fk_ops = {
	.ring = fk_op_ring,
	.xmit = fk_op_xmit,
	.notify = fk_op_notify,
	.ring_error = fk_op_ring_error,
	.xmit_try = fk_op_xmit_try,
	.rx_room = fk_op_rx_room,
	.comm_est = fk_op_comm_est,
};

static void fk_port_xmit(struct port *port, struct pkt *p)
{
	struct fk_dev *d = port->priv;

	if (!roce_tp_input(d->tp, p))
		pkt_free(p);
}

static void fk_port_destroy(struct port *port)
{
	(void)port;
}

static bool fk_port_busy(const struct port *port)
{
	const struct fk_dev *d = port->priv;

	return roce_tp_rx_busy(d->tp);
}

static void fk_port_ready(struct port *port)
{
	struct fk_dev *d = port->priv;

	roce_tp_tx_ready(d->tp);
}

static const struct port_ops fk_port_ops = {
	.xmit = fk_port_xmit,
	.destroy = fk_port_destroy,
	.busy = fk_port_busy,
	.ready = fk_port_ready,
};

static bool fk_poll(void *arg)
{
	return roce_tp_poll(((struct fk_dev *)arg)->tp);
}

static bool fk_arm(void *arg)
{
	return roce_tp_arm(((struct fk_dev *)arg)->tp);
}

static void fk_disarm(void *arg)
{
	roce_tp_disarm(((struct fk_dev *)arg)->tp);
}

static const struct loop_poller_ops fk_poller_ops = {
	.poll = fk_poll,
	.arm = fk_arm,
	.disarm = fk_disarm,
};

/* ---- memory -------------------------------------------------------------------- */

/* size bytes of driver memory aligned to align (zeroed). */
static inline void *fk_alloc(struct fk_dev *d, uint64_t size, uint64_t align)
{
	uint64_t at = ALIGN_UP(d->brk, align);

	if (at + size > d->arena_size) {
		fprintf(stderr, "fk_alloc: arena exhausted\n");
		abort();
	}
	d->brk = at + size;
	memset(d->arena + at, 0, size);
	return d->arena + at;
}

/* ---- environment ------------------------------------------------------------------ */

static inline int fk_env_init(struct fk_env *env, bool with_switch)
{
	memset(env, 0, sizeof(*env));
	env->loop = loop_new();
	if (!env->loop)
		return -ENOMEM;
	if (with_switch) {
		env->sw = sw_new(env->loop);
		if (!env->sw)
			return -ENOMEM;
	}
	return 0;
}

struct fk_dev_cfg {
	uint32_t qps, cqs;
	uint16_t eth_mtu;
	uint64_t arena;
	bool no_loop;
	bool small;               /* small object tables (fuzzing: fast setup) */
	uint32_t max_send_sge, max_recv_sge;
	bool ext;                 /* offer and negotiate ROCE_EXT */
	bool ext_offered;         /* offer ROCE_EXT (extended ring layout) only */
	uint32_t srqs;            /* max_rdma_srqs when ROCE_EXT is offered */
};

static inline struct fk_dev *fk_dev_new(struct fk_env *env, const struct fk_dev_cfg *c)
{
	struct fk_dev *d = calloc(1, sizeof(*d));
	struct rres_dev_cfg cfg;
	int fd;

	if (!d)
		abort();
	d->env = env;
	d->id = env->ndev;
	d->arena_size = c->arena ? c->arena : (64u << 20);
	fd = memfd_create("fk-arena", 0);
	if (fd < 0 || ftruncate(fd, (off_t)d->arena_size))
		abort();
	d->arena = mmap(NULL, d->arena_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (d->arena == MAP_FAILED)
		abort();
	d->memfd = fd;
	d->brk = 4096;
	vhost_mem_init(&d->mem);
	if (vhost_mem_add(&d->mem, (uintptr_t)d->arena, d->arena_size, (uintptr_t)d->arena, 0,
			  dup(fd)))
		abort();
	d->mac[0] = 0x52;
	d->mac[1] = 0x54;
	d->mac[5] = (uint8_t)(0x10 + d->id);
	d->ip4 = htobe32(0x0a000001u + d->id); /* 10.0.0.1 + id */
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.mac, d->mac, 6);
	cfg.has_ip4 = true;
	cfg.ip4 = d->ip4;
	cfg.eth_mtu = c->eth_mtu ? c->eth_mtu : 1500;
	cfg.max_rdma_qps = c->qps ? c->qps : 16;
	cfg.max_rdma_cqs = c->cqs ? c->cqs : 8;
	if (c->small) {
		cfg.max_pd = 8;
		cfg.max_mr = 32;
		cfg.max_ah = 8;
	}
	cfg.max_send_sge = c->max_send_sge;
	cfg.max_recv_sge = c->max_recv_sge;
	cfg.mem = &d->mem;
	cfg.deterministic = true;
	cfg.seed = 42 + d->id;
	cfg.ext_offered = c->ext || c->ext_offered;
	cfg.max_rdma_srqs = cfg.ext_offered ? c->srqs : 0;
	if (rres_dev_init(&d->rd, &cfg))
		abort();
	if (c->ext)
		rres_dev_set_ext(&d->rd, true);
	d->tp = roce_tp_new(&d->rd, c->no_loop ? NULL : env->loop, &fk_ops, d);
	if (!d->tp)
		abort();
	d->nrings = rres_ring_count(&d->rd);
	d->rings = calloc(d->nrings, sizeof(*d->rings));
	pkt_queue_init(&d->wire);
	if (env->sw) {
		d->port.ops = &fk_port_ops;
		d->port.hairpin = true;
		d->port.icrc_skip_ok = true;
		d->port.priv = d;
		snprintf(d->port.name, sizeof(d->port.name), "dev%u", d->id);
		if (sw_attach(env->sw, &d->port))
			abort();
		d->attached = true;
	}
	if (!c->no_loop)
		d->poller = loop_add_poller(env->loop, &fk_poller_ops, d);
	env->dev[env->ndev++] = d;
	return d;
}

static inline void fk_ring_free(struct fk_dev *d, uint32_t idx)
{
	struct fk_ring *fr = d->rings[idx];

	if (!fr)
		return;
	if (fr->r.started) {
		roce_tp_ring_stopped(d->tp, &fr->r);
		fr->r.started = false;
	}
	vq_drv_fini(&fr->drv);
	free(fr);
	d->rings[idx] = NULL;
}

static inline void fk_dev_free(struct fk_dev *d)
{
	if (d->attached)
		sw_detach(d->env->sw, &d->port);
	d->attached = false;
	for (uint32_t i = 0; i < d->nrings; i++)
		if (d->rings[i] && d->rings[i]->r.started) {
			roce_tp_ring_stopped(d->tp, &d->rings[i]->r);
			d->rings[i]->r.started = false;
		}
	rres_dev_fini(&d->rd);
	roce_tp_free(d->tp);
	for (uint32_t i = 0; i < d->nrings; i++)
		fk_ring_free(d, i);
	free(d->rings);
	if (d->poller)
		loop_del_poller(d->env->loop, d->poller);
	pkt_queue_purge(&d->wire);
	vhost_mem_clear(&d->mem);
	munmap(d->arena, d->arena_size);
	close(d->memfd);
	free(d);
}

static inline void fk_env_fini(struct fk_env *env)
{
	for (unsigned i = 0; i < env->ndev; i++)
		fk_dev_free(env->dev[i]);
	if (env->sw)
		sw_free(env->sw);
	if (env->loop) {
		/* run once so deferred poller removals are reaped */
		loop_run_once(env->loop, 0);
		loop_free(env->loop);
	}
	memset(env, 0, sizeof(*env));
}

/* Run the loop until done(arg) or timeout_ms of wall clock (a safety net:
 * a test that needs it has failed). Returns true if done. */
static inline bool fk_run_until(struct fk_env *env, bool (*done)(void *), void *arg,
				unsigned timeout_ms)
{
	uint64_t end = loop_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (!done(arg)) {
		if (loop_now_ns() > end)
			return false;
		loop_run_once(env->loop, 1000000);
	}
	return true;
}

/* Run the loop for n iterations (lets in-flight work settle). */
static inline void fk_spin(struct fk_env *env, unsigned n)
{
	while (n--)
		loop_run_once(env->loop, 0);
}

/* ---- rings ---------------------------------------------------------------------- */

/* Set up and start ring idx with num entries; stride bytes of buffer per
 * entry; kickable: the device gets kicks (else it polls). */
static inline struct fk_ring *fk_ring_setup(struct fk_dev *d, uint32_t idx, uint16_t num,
					    uint32_t stride, bool kickable)
{
	struct fk_ring *fr = calloc(1, sizeof(*fr));
	uint8_t *mem;

	if (!fr || idx >= d->nrings || d->rings[idx])
		abort();
	mem = fk_alloc(d, vq_drv_ring_bytes(num), 4096);
	if (vq_drv_init(&fr->drv, mem, num, true))
		abort();
	fr->mem = mem;
	fr->stride = stride;
	if (stride)
		fr->bufs = fk_alloc(d, (uint64_t)stride * num, 64);
	fr->kickable = kickable;
	fr->r.idx = idx;
	fr->r.num = num;
	fr->r.kick_fd = kickable ? 1000 : -1; /* any value >= 0: has a kick fd */
	fr->r.call_fd = -1;
	fr->r.err_fd = -1;
	fr->r.enabled = true;
	if (vq_dev_init(&fr->r.vq, &d->mem, num,
			vhost_mem_gpa_to_host(&d->mem, (uintptr_t)vq_drv_desc(&fr->drv),
					      vq_desc_size(num)),
			vhost_mem_gpa_to_host(&d->mem, (uintptr_t)vq_drv_avail(&fr->drv),
					      vq_avail_size(num)),
			vhost_mem_gpa_to_host(&d->mem, (uintptr_t)vq_drv_used(&fr->drv),
					      vq_used_size(num)),
			0, true, false))
		abort();
	fr->r.started = true;
	d->rings[idx] = fr;
	roce_tp_ring_started(d->tp, &fr->r);
	return fr;
}

/* Publish what was added; kick the device if it asks (and can be kicked). */
static inline void fk_ring_publish(struct fk_dev *d, struct fk_ring *fr)
{
	if (vq_drv_kick_prepare(&fr->drv) && fr->kickable) {
		fr->kicks++;
		roce_tp_ring_kick(d->tp, &fr->r);
	}
}

static inline uint8_t *fk_ring_buf(struct fk_ring *fr)
{
	uint8_t *b = fr->bufs + (uint64_t)fr->stride * (fr->next_buf % fr->r.num);

	fr->next_buf++;
	return b;
}

/* Consume used entries of a send/receive ring. Returns how many. */
static inline unsigned fk_ring_reap(struct fk_ring *fr)
{
	unsigned n = 0;
	uint32_t len;

	while (fr && vq_drv_get_used(&fr->drv, &len)) {
		n++;
		fr->used++;
	}
	return n;
}

/* ---- objects ---------------------------------------------------------------------- */

static inline uint32_t fk_pd(struct fk_dev *d)
{
	uint32_t pdn;

	if (rres_pd_create(&d->rd, &pdn))
		abort();
	return pdn;
}

/* A CQ with cqe entries and a completion ring of num buffers (all posted
 * unless post is false). */
static inline uint32_t fk_cq(struct fk_dev *d, uint32_t cqe, uint16_t num, bool post)
{
	struct fk_ring *fr;
	uint32_t cqn;

	if (rres_cq_create(&d->rd, cqe, &cqn))
		abort();
	fr = fk_ring_setup(d, rres_ring_of_cq(&d->rd, cqn), num,
			   sizeof(struct virtio_rdma_cq_req), true);
	for (unsigned i = 0; post && i < num; i++) {
		uint8_t *b = fk_ring_buf(fr);
		struct vq_buf in = { (uintptr_t)b, sizeof(struct virtio_rdma_cq_req) };

		vq_drv_add(&fr->drv, NULL, 0, &in, 1, b);
	}
	fk_ring_publish(d, fr);
	return cqn;
}

static inline struct fk_ring *fk_cq_ring(struct fk_dev *d, uint32_t cqn)
{
	return d->rings[rres_ring_of_cq(&d->rd, cqn)];
}

/* Post n more buffers on a CQ ring (they are reused by fk_poll_cq). */
static inline void fk_cq_post(struct fk_dev *d, uint32_t cqn, unsigned n)
{
	struct fk_ring *fr = fk_cq_ring(d, cqn);

	for (unsigned i = 0; i < n; i++) {
		uint8_t *b = fk_ring_buf(fr);
		struct vq_buf in = { (uintptr_t)b, sizeof(struct virtio_rdma_cq_req) };

		if (vq_drv_add(&fr->drv, NULL, 0, &in, 1, b))
			break;
	}
	fk_ring_publish(d, fr);
}

/* Take up to max completions (host order copies); buffers are posted
 * again unless repost is false. */
static inline unsigned fk_poll_cq2(struct fk_dev *d, uint32_t cqn, struct virtio_rdma_cq_req *out,
				   unsigned max, bool repost)
{
	struct fk_ring *fr = fk_cq_ring(d, cqn);
	unsigned n = 0;
	uint32_t len;
	void *tok;

	while (n < max && (tok = vq_drv_get_used(&fr->drv, &len))) {
		struct virtio_rdma_cq_req c;

		fr->used++;
		if (len != sizeof(c))
			abort();
		memcpy(&c, tok, sizeof(c));
		c.wr_id = le64toh(c.wr_id);
		c.byte_len = le32toh(c.byte_len);
		c.qp_num = le32toh(c.qp_num);
		c.src_qp = le32toh(c.src_qp);
		c.wc_flags = le32toh(c.wc_flags);
		out[n++] = c;
		if (repost) {
			struct vq_buf in = { (uintptr_t)tok, sizeof(c) };

			vq_drv_add(&fr->drv, NULL, 0, &in, 1, tok);
		}
	}
	if (repost && n)
		fk_ring_publish(d, fr);
	return n;
}

static inline unsigned fk_poll_cq(struct fk_dev *d, uint32_t cqn, struct virtio_rdma_cq_req *out,
				  unsigned max)
{
	return fk_poll_cq2(d, cqn, out, max, true);
}

/* Registered memory: len bytes (page aligned start + off) with access. */
struct fk_mr {
	uint8_t *buf;
	uint64_t len;
	uint32_t mrn, lkey, rkey;
};

/* The same at I/O virtual address iova (0: the buffer's own address). */
static inline struct fk_mr fk_mr_reg_at(struct fk_dev *d, uint32_t pdn, uint64_t len,
					uint32_t access, uint64_t iova);

static inline struct fk_mr fk_mr_reg(struct fk_dev *d, uint32_t pdn, uint64_t len, uint32_t access)
{
	return fk_mr_reg_at(d, pdn, len, access, 0);
}

static inline struct fk_mr fk_mr_reg_at(struct fk_dev *d, uint32_t pdn, uint64_t len,
					uint32_t access, uint64_t iova)
{
	struct fk_mr m = { 0 };
	uint64_t npages = len ? (len + 4095) / 4096 : 0;
	uint64_t *pages = malloc((npages ? npages : 1) * 8);
	struct rres_mr *mr;

	m.buf = fk_alloc(d, npages ? npages * 4096 : 4096, 4096);
	m.len = len;
	for (uint64_t i = 0; i < npages; i++)
		pages[i] = htole64((uintptr_t)m.buf + i * 4096);
	if (rres_mr_reg_user(&d->rd, pdn, access, iova ? iova : (uintptr_t)m.buf, len,
			     (uint32_t)npages, pages, &mr))
		abort();
	free(pages);
	m.mrn = mr->mrn;
	m.lkey = mr->lkey;
	m.rkey = mr->rkey;
	return m;
}

#define FK_ACC_ALL (VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE | \
		    VIRTIO_IB_ACCESS_REMOTE_READ)

struct fk_qp_cfg {
	uint8_t type;
	uint32_t pdn, scq, rcq;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	uint16_t sq_num, rq_num;
	bool sig_all;
	bool sq_polled, rq_polled; /* rings without kick */
	bool no_rings;
};

struct fk_qp {
	uint32_t qpn;
	struct fk_ring *sq, *rq;
	uint32_t max_send_sge, max_recv_sge;
};

static inline uint32_t fk_sq_stride(uint32_t nsge)
{
	return (uint32_t)ALIGN_UP(sizeof(struct virtio_rdma_sq_req) + nsge * 16u, 64u);
}

static inline struct fk_qp fk_qp_new(struct fk_dev *d, const struct fk_qp_cfg *c)
{
	struct rres_qp_init in = {
		.pdn = c->pdn, .qp_type = c->type, .sq_sig_all = c->sig_all,
		.send_cqn = c->scq, .recv_cqn = c->rcq,
		.cap = { c->max_send_wr ? c->max_send_wr : 64,
			 c->max_recv_wr ? c->max_recv_wr : 64,
			 c->max_send_sge ? c->max_send_sge : 4,
			 c->max_recv_sge ? c->max_recv_sge : 4,
			 c->max_inline },
	};
	struct fk_qp q = { 0 };
	struct rres_qp *qp;

	if (rres_qp_create(&d->rd, &in, &qp))
		abort();
	q.qpn = qp->qpn;
	q.max_send_sge = in.cap.max_send_sge;
	q.max_recv_sge = in.cap.max_recv_sge;
	if (!c->no_rings) {
		q.sq = fk_ring_setup(d, qp->sq_vq, c->sq_num ? c->sq_num : 64,
				     fk_sq_stride(in.cap.max_send_sge), !c->sq_polled);
		q.rq = fk_ring_setup(d, qp->rq_vq, c->rq_num ? c->rq_num : 64,
				     (uint32_t)ALIGN_UP(24 + in.cap.max_recv_sge * 16u, 64u),
				     !c->rq_polled);
	}
	return q;
}

/* The fk_qp of an existing QP (rings looked up). */
static inline struct fk_qp fk_qp_get(struct fk_dev *d, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);
	struct fk_qp q = { 0 };

	if (!qp)
		abort();
	q.qpn = qpn;
	q.sq = d->rings[qp->sq_vq];
	q.rq = d->rings[qp->rq_vq];
	q.max_send_sge = qp->cap.max_send_sge;
	q.max_recv_sge = qp->cap.max_recv_sge;
	return q;
}

struct fk_path {
	uint8_t mtu;               /* enum virtio_ib_mtu */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd, max_dest_rd;
	uint32_t sq_psn, rq_psn;
	uint32_t access;
	uint32_t qkey;
	bool ipv6;                 /* use the link-local GIDs (index 0) */
	bool zero_dmac;            /* let the device resolve the MAC */
	uint8_t tclass;            /* traffic class of the address vector */
};

static inline void fk_path_default(struct fk_path *p)
{
	memset(p, 0, sizeof(*p));
	p->mtu = VIRTIO_IB_MTU_1024;
	p->timeout = 14;  /* 67 ms: a loaded machine may stall us for ms */
	p->retry_cnt = 7;
	p->rnr_retry = 7;
	p->min_rnr_timer = 1;
	p->max_rd = 16;
	p->max_dest_rd = 16;
	p->sq_psn = 0x100;
	p->rq_psn = 0x100;
	p->access = FK_ACC_ALL;
	p->qkey = 0x11111111;
}

/* Register d's MAC and IPv4 address in the port-security registry, as the
 * daemon does for each of its devices: frames to d then count as local
 * (roce_neigh_local), and from its own loop's devices as near
 * (roce_neigh_near). psec_unregister(ps) before ps goes. */
static inline void fk_dev_pin(const struct fk_dev *d, struct psec *ps)
{
	static const struct psec_cfg pc;

	psec_init(ps, &pc, d->rd.mac, rres_gid_get(&d->rd, 1) + 12, NULL);
	ps->home = d->tp->loop;
	if (psec_register(ps))
		abort();
}

static inline void fk_ah_attr(const struct fk_dev *peer, const struct fk_path *p,
			      struct virtio_rdma_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, rres_gid_get(&peer->rd, p->ipv6 ? 0 : 1), 16);
	a->grh.sgid_index = p->ipv6 ? 0 : 1;
	a->grh.hop_limit = 1;      /* as ibv_*_pingpong: the device uses its own */
	a->grh.traffic_class = p->tclass;
	if (!p->zero_dmac)
		memcpy(a->dmac, peer->mac, 6);
}

static inline int fk_modify(struct fk_dev *d, uint32_t qpn, uint8_t state, uint32_t mask,
			    const struct rres_qp_modify *m0)
{
	struct rres_qp_modify m;

	if (m0)
		m = *m0;
	else
		memset(&m, 0, sizeof(m));
	m.attr_mask = mask | VIRTIO_IB_QP_STATE;
	m.qp_state = state;
	return rres_qp_modify(&d->rd, qpn, &m);
}

/* RESET -> INIT -> RTR -> RTS, connected to (peer, peer_qpn) for RC/UC. */
static inline int fk_connect(struct fk_dev *d, uint32_t qpn, struct fk_dev *peer,
			     uint32_t peer_qpn, const struct fk_path *p)
{
	struct rres_qp *qp = rres_qp_lookup(&d->rd, qpn);
	struct rres_qp_modify m;
	int rc;

	memset(&m, 0, sizeof(m));
	if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) {
		m.qkey = p->qkey;
		rc = fk_modify(d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_QKEY, &m);
		rc = rc ? rc : fk_modify(d, qpn, VIRTIO_IB_QPS_RTR, 0, &m);
		m.sq_psn = p->sq_psn;
		return rc ? rc : fk_modify(d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
	}
	m.qp_access_flags = p->access;
	rc = fk_modify(d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_ACCESS_FLAGS, &m);
	if (rc)
		return rc;
	fk_ah_attr(peer, p, &m.ah_attr);
	m.path_mtu = p->mtu;
	m.dest_qp_num = peer_qpn;
	m.rq_psn = p->rq_psn;
	m.max_dest_rd_atomic = p->max_dest_rd;
	m.min_rnr_timer = p->min_rnr_timer;
	if (qp->type == VIRTIO_IB_QPT_RC)
		rc = fk_modify(d, qpn, VIRTIO_IB_QPS_RTR,
			       VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			       VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
			       VIRTIO_IB_QP_MIN_RNR_TIMER, &m);
	else
		rc = fk_modify(d, qpn, VIRTIO_IB_QPS_RTR,
			       VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			       VIRTIO_IB_QP_RQ_PSN, &m);
	if (rc)
		return rc;
	m.sq_psn = p->sq_psn;
	m.timeout = p->timeout;
	m.retry_cnt = p->retry_cnt;
	m.rnr_retry = p->rnr_retry;
	m.max_rd_atomic = p->max_rd;
	if (qp->type == VIRTIO_IB_QPT_RC)
		return fk_modify(d, qpn, VIRTIO_IB_QPS_RTS,
				 VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT |
				 VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_SQ_PSN |
				 VIRTIO_IB_QP_MAX_QP_RD_ATOMIC, &m);
	return fk_modify(d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
}

static inline uint32_t fk_ah(struct fk_dev *d, uint32_t pdn, const struct fk_dev *peer,
			     const struct fk_path *p)
{
	struct virtio_rdma_ah_attr a;
	uint32_t h;

	fk_ah_attr(peer, p, &a);
	if (rres_ah_create(&d->rd, pdn, &a, &h))
		abort();
	return h;
}

/* ---- work requests ------------------------------------------------------------------ */

struct fk_sge {
	const void *addr;
	uint32_t len, lkey;
};

/* Cut [buf, + len) into n SGEs of uneven sizes (the last takes the rest). */
static inline void fk_sges_split(struct fk_sge *sge, unsigned n, const uint8_t *buf,
				 uint32_t len, uint32_t lkey)
{
	uint32_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t chunk = i + 1 == n ? len - off : (len - off) / (n - i) + 5;

		chunk = chunk < len - off ? chunk : len - off;
		sge[i] = (struct fk_sge){ buf + off, chunk, lkey };
		off += chunk;
	}
}

struct fk_wr {
	uint64_t wr_id;
	uint8_t opcode, flags;
	uint32_t imm;              /* as on the wire (network order) */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t remote_qpn, remote_qkey, ah;
	const struct fk_sge *sge;
	uint32_t nsge;
	const void *inl;
	uint16_t inline_len;
	int32_t trunc;             /* >= 0: readable length of the chain */
	bool split;                /* header and SGEs in separate descriptors */
	uint32_t cut[2];           /* else 0 < cut[0] < cut[1] < length: the
				    * request in three descriptors cut there */
	/* extension opcodes (struct virtio_rdma_sq_req_ext views) */
	uint64_t compare_add, swap;  /* atomics (remote_addr, rkey as above) */
	uint32_t inv_rkey;           /* LOCAL_INV, SEND_WITH_INV */
	struct {
		uint64_t addr, length;
		uint32_t mr_lkey, rkey, access;
	} mw;                        /* BIND_MW */
	struct {
		uint64_t iova, length, page_list;
		uint32_t key, access;
	} reg;                       /* REG_MR */
};

/* Post a send WR. Returns 0 or -ENOSPC (ring full). */
static inline int fk_post_send(struct fk_dev *d, struct fk_qp *q, const struct fk_wr *wr)
{
	struct fk_ring *fr = q->sq;
	struct virtio_rdma_sq_req_ext req;
	uint8_t *b;
	uint32_t len;
	struct vq_buf out[3];
	unsigned nout = 1;
	int rc;

	if (!vq_drv_num_free(&fr->drv))
		return -ENOSPC;
	b = fk_ring_buf(fr);
	memset(&req, 0, sizeof(req));
	req.wr_id = htole64(wr->wr_id);
	req.opcode = wr->opcode;
	req.send_flags = wr->flags;
	req.imm_data = wr->imm;
	if (wr->opcode == VIRTIO_IB_WR_RDMA_WRITE ||
	    wr->opcode == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == VIRTIO_IB_WR_RDMA_READ) {
		req.rdma.remote_addr = htole64(wr->remote_addr);
		req.rdma.rkey = htole32(wr->rkey);
	} else if (wr->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD) {
		req.atomic.remote_addr = htole64(wr->remote_addr);
		req.atomic.rkey = htole32(wr->rkey);
		req.atomic.compare_add = htole64(wr->compare_add);
		req.atomic.swap = htole64(wr->swap);
	} else if (wr->opcode == VIRTIO_IB_WR_LOCAL_INV ||
		   wr->opcode == VIRTIO_IB_WR_SEND_WITH_INV) {
		req.invalidate_rkey = htole32(wr->inv_rkey);
	} else if (wr->opcode == VIRTIO_IB_WR_BIND_MW) {
		req.bind_mw.addr = htole64(wr->mw.addr);
		req.bind_mw.length = htole64(wr->mw.length);
		req.bind_mw.mr_lkey = htole32(wr->mw.mr_lkey);
		req.bind_mw.rkey = htole32(wr->mw.rkey);
		req.bind_mw.access = htole32(wr->mw.access);
	} else if (wr->opcode == VIRTIO_IB_WR_REG_MR) {
		req.reg.iova = htole64(wr->reg.iova);
		req.reg.length = htole64(wr->reg.length);
		req.reg.page_list = htole64(wr->reg.page_list);
		req.reg.key = htole32(wr->reg.key);
		req.reg.access = htole32(wr->reg.access);
	} else {
		req.ud.remote_qpn = htole32(wr->remote_qpn);
		req.ud.remote_qkey = htole32(wr->remote_qkey);
		req.ud.ah = htole32(wr->ah);
	}
	if (wr->flags & VIRTIO_IB_SEND_INLINE) {
		if (wr->inl)
			memcpy(req.inline_data, wr->inl, MIN(wr->inline_len, (uint16_t)512));
		req.inline_len = htole16(wr->inline_len);
	} else {
		req.num_sge = htole32(wr->nsge);
	}
	memcpy(b, &req, sizeof(req));
	for (uint32_t i = 0; i < wr->nsge && !(wr->flags & VIRTIO_IB_SEND_INLINE); i++) {
		struct virtio_rdma_sge s = {
			htole64((uintptr_t)wr->sge[i].addr), htole32(wr->sge[i].len),
			htole32(wr->sge[i].lkey),
		};

		memcpy(b + sizeof(req) + i * 16, &s, 16);
	}
	len = sizeof(req) + ((wr->flags & VIRTIO_IB_SEND_INLINE) ? 0 : wr->nsge * 16);
	if (wr->trunc >= 0 && (uint32_t)wr->trunc < len)
		len = (uint32_t)wr->trunc;
	if (wr->cut[0] && wr->cut[1] > wr->cut[0] && wr->cut[1] < len) {
		out[0] = (struct vq_buf){ (uintptr_t)b, wr->cut[0] };
		out[1] = (struct vq_buf){ (uintptr_t)b + wr->cut[0], wr->cut[1] - wr->cut[0] };
		out[2] = (struct vq_buf){ (uintptr_t)b + wr->cut[1], len - wr->cut[1] };
		nout = 3;
	} else if (wr->split && len > sizeof(req)) {
		out[0] = (struct vq_buf){ (uintptr_t)b, sizeof(req) };
		out[1] = (struct vq_buf){ (uintptr_t)b + sizeof(req), len - (uint32_t)sizeof(req) };
		nout = 2;
	} else {
		out[0] = (struct vq_buf){ (uintptr_t)b, len ? len : 1 };
	}
	rc = vq_drv_add(&fr->drv, out, nout, NULL, 0, b);
	if (rc)
		return rc;
	fk_ring_publish(d, fr);
	return 0;
}

/* Post a receive WR. Returns 0 or -ENOSPC. */
static inline int fk_post_recv(struct fk_dev *d, struct fk_qp *q, uint64_t wr_id,
			       const struct fk_sge *sge, uint32_t nsge)
{
	struct fk_ring *fr = q->rq;
	struct virtio_rdma_rq_req req;
	struct vq_buf out;
	uint8_t *b;
	int rc;

	if (!vq_drv_num_free(&fr->drv))
		return -ENOSPC;
	b = fk_ring_buf(fr);
	memset(&req, 0, sizeof(req));
	req.wr_id = htole64(wr_id);
	req.num_sge = htole32(nsge);
	memcpy(b, &req, sizeof(req));
	for (uint32_t i = 0; i < nsge; i++) {
		struct virtio_rdma_sge s = {
			htole64((uintptr_t)sge[i].addr), htole32(sge[i].len), htole32(sge[i].lkey),
		};

		memcpy(b + sizeof(req) + i * 16, &s, 16);
	}
	out = (struct vq_buf){ (uintptr_t)b, (uint32_t)(sizeof(req) + nsge * 16) };
	rc = vq_drv_add(&fr->drv, &out, 1, NULL, 0, b);
	if (rc)
		return rc;
	fk_ring_publish(d, fr);
	return 0;
}

/* Deterministic pattern bytes. */
static inline void fk_fill(void *buf, uint64_t len, uint32_t seed)
{
	uint8_t *b = buf;
	uint32_t x = seed * 2654435761u + 12345;

	for (uint64_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* ---- extensions ------------------------------------------------------------------ */

/* An ALLOC_MR MR (state FREE) with room for max_num_sg pages. */
static inline struct rres_mr *fk_mr_alloc(struct fk_dev *d, uint32_t pdn, uint32_t max_num_sg)
{
	struct rres_mr *mr;

	if (rres_mr_alloc(&d->rd, pdn, max_num_sg, &mr))
		abort();
	return mr;
}

/* A memory window of type 1 or 2 (unbound). */
static inline struct rres_mr *fk_mw_alloc(struct fk_dev *d, uint32_t pdn, uint32_t type)
{
	struct rres_mr *mw;

	if (rres_mw_alloc(&d->rd, pdn, type, &mw))
		abort();
	return mw;
}

/* The le64 page array of [buf, buf + len) (page-aligned buf) in driver
 * memory, for REG_MR. Returns its address. */
static inline uint64_t fk_page_list(struct fk_dev *d, const void *buf, uint64_t len)
{
	uint64_t n = len ? (len + 4095) / 4096 : 1;
	uint64_t *pl = fk_alloc(d, n * 8, 8);

	for (uint64_t i = 0; i < n; i++)
		pl[i] = htole64((uintptr_t)buf + i * 4096);
	return (uintptr_t)pl;
}

/* A key with the consumer byte of key replaced by b. */
static inline uint32_t fk_key8(uint32_t key, uint8_t b)
{
	return (key & ~(uint32_t)VIRTIO_IB_KEY_CONSUMER_MASK) | b;
}

/* Wait (running the loop) for n completions on cqn into wc[]. Returns how
 * many arrived within ms. */
struct fk_cq_wait {
	struct fk_dev *d;
	uint32_t cqn;
	struct virtio_rdma_cq_req *wc;
	unsigned want, got;
};

static inline bool fk_cq_wait_done(void *arg)
{
	struct fk_cq_wait *w = arg;

	w->got += fk_poll_cq(w->d, w->cqn, w->wc + w->got, w->want - w->got);
	return w->got >= w->want;
}

static inline unsigned fk_wait_cq(struct fk_env *env, struct fk_dev *d, uint32_t cqn,
				  struct virtio_rdma_cq_req *wc, unsigned n, unsigned ms)
{
	struct fk_cq_wait w = { d, cqn, wc, n, 0 };

	fk_run_until(env, fk_cq_wait_done, &w, ms);
	return w.got;
}

/* Members of a connected QP pair: devices a and b (the same for loopback),
 * their PDs, CQs, QPs and one MR each. A test's pair struct includes them
 * next to a `struct fk_rc_pair rc` in an anonymous union. */
#define FK_RC_PAIR_MEMBERS \
	struct fk_dev *a, *b; \
	uint32_t pda, pdb, cqa, cqb; \
	struct fk_qp qa, qb; \
	struct fk_mr ma, mb;

struct fk_rc_pair {
	FK_RC_PAIR_MEMBERS
};

/* On devices r->a and r->b (set by the caller): PD, CQ (cqe entries, cq_num
 * posted), a QP of config qc each, connected both ways over path, and an MR of
 * mr_len bytes each (none if 0). With a == b the two QPs share the PD. */
static inline void fk_rc_pair_init(struct fk_rc_pair *r, const struct fk_qp_cfg *qc,
				   const struct fk_path *path, uint32_t cqe, uint16_t cq_num,
				   uint64_t mr_len)
{
	struct fk_qp_cfg c = *qc;

	if (!r->a || !r->b)
		abort();
	r->pda = fk_pd(r->a);
	r->pdb = r->a == r->b ? r->pda : fk_pd(r->b);
	r->cqa = fk_cq(r->a, cqe, cq_num, true);
	r->cqb = fk_cq(r->b, cqe, cq_num, true);
	c.pdn = r->pda;
	c.scq = c.rcq = r->cqa;
	r->qa = fk_qp_new(r->a, &c);
	c.pdn = r->pdb;
	c.scq = c.rcq = r->cqb;
	r->qb = fk_qp_new(r->b, &c);
	if (fk_connect(r->a, r->qa.qpn, r->b, r->qb.qpn, path) ||
	    fk_connect(r->b, r->qb.qpn, r->a, r->qa.qpn, path))
		abort();
	if (!mr_len)
		return;
	r->ma = fk_mr_reg(r->a, r->pda, mr_len, FK_ACC_ALL);
	r->mb = fk_mr_reg(r->b, r->pdb, mr_len, FK_ACC_ALL);
}

/* wr's source: len bytes at src, inline or split over nsge entries of sge
 * (MR lkey); sge must outlive the post. */
static inline void fk_wr_source(struct fk_wr *wr, struct fk_sge *sge, const uint8_t *src,
				uint32_t len, uint32_t nsge, bool inl, uint32_t lkey)
{
	if (inl) {
		wr->flags |= VIRTIO_IB_SEND_INLINE;
		wr->inl = src;
		wr->inline_len = (uint16_t)len;
	} else {
		fk_sges_split(sge, nsge, src, len, lkey);
		wr->sge = sge;
		wr->nsge = nsge;
	}
}

/* a posts a signaled RDMA READ of len bytes at src in b's MR into dst in a's
 * MR, split over nsge SGEs (at most 4). */
static inline int fk_rc_pair_post_read(struct fk_rc_pair *r, uint64_t wr_id, uint8_t *dst,
				       const uint8_t *src, uint32_t len, uint32_t nsge)
{
	struct fk_sge ls[4];
	struct fk_wr wr = { .wr_id = wr_id, .opcode = VIRTIO_IB_WR_RDMA_READ, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .remote_addr = (uintptr_t)src,
			    .rkey = r->mb.rkey, .sge = ls, .nsge = nsge };

	if (nsge > 4)
		return -EINVAL;
	fk_sges_split(ls, nsge, dst, len, r->ma.lkey);
	return fk_post_send(r->a, &r->qa, &wr);
}

#endif /* VRDMA_TESTS_ROCE_TP_FAKE_H */
