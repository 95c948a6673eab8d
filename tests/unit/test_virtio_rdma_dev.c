/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device served over vhost-user (src/backend/virtio_rdma_dev.c):
 * a front-end built from vhost_client and vq_drv negotiates, reads the
 * configuration space, sets up the control queue (ring 0) in shared memory
 * and sends real commands through it: PD, CQ, MR from a page table in the
 * shared memory, QP up to RTS, errors with their response byte, malformed
 * requests, and a device reset that destroys every object. The daemon's loop
 * runs in its own thread; every wait is on an eventfd or a reply with a
 * generous bound.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <linux/virtio_config.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "common/loop.h"
#include "common/util.h"
#include "backend/netdev.h"
#include "backend/virtio_rdma_dev.h"
#include "port/port_security.h"
#include "vhost/vhost_client.h"
#include "vhost/vhost_proto.h"
#include "virtio/vq_drv.h"
#include "port/port.h"
#include "roce/roce_tp.h"

#define M_INIT_E2E (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_PKEY_INDEX |                   \
		    VIRTIO_RDMA_DEV_QP_PORT | VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS)
#define M_RTR_E2E (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_AV | VIRTIO_RDMA_DEV_QP_PATH_MTU |  \
		   VIRTIO_RDMA_DEV_QP_DEST_QPN | VIRTIO_RDMA_DEV_QP_RQ_PSN |                         \
		   VIRTIO_RDMA_DEV_QP_MAX_DEST_RD_ATOMIC | VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER)
#define M_RTS_E2E (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_TIMEOUT |                        \
		   VIRTIO_RDMA_DEV_QP_RETRY_CNT | VIRTIO_RDMA_DEV_QP_RNR_RETRY |                     \
		   VIRTIO_RDMA_DEV_QP_SQ_PSN | VIRTIO_RDMA_DEV_QP_MAX_QP_RD_ATOMIC)

#define MEM_SIZE (1u << 20)
#define MEM_GPA  0x40000000ull
#define RING_OFF 0x1000u
#define REQ_OFF  0x10000u
#define RSP_OFF  0x11000u
#define PT_OFF   0x12000u  /* page table */
#define DATA_OFF 0x20000u  /* pages registered as an MR */
#define QNUM     16

struct env {
	char dir[64];
	struct netdev_cfg cfg;
	struct loop *l;
	struct virtio_rdma_dev *d;
	pthread_t thr;
	atomic_bool stop;
	struct vhost_client vc;
	int memfd, kick, call;
	uint8_t *mem;
	struct vq_drv vq;
	bool vq_ok;
	int errfd;
};

static void *loop_thread(void *arg)
{
	struct env *e = arg;

	while (!atomic_load(&e->stop))
		loop_run_once(e->l, 20 * 1000 * 1000);
	return NULL;
}

static uint64_t uva(struct env *e, uint32_t off)
{
	return (uint64_t)(uintptr_t)e->mem + off;
}

static bool client_up(struct env *e);

static bool env_up(struct env *e)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01 };

	memset(e, 0, sizeof(*e));
	e->memfd = e->kick = e->call = e->errfd = -1;
	strcpy(e->dir, "/tmp/vrdma-v1-XXXXXX");
	if (!mkdtemp(e->dir))
		return false;
	snprintf(e->cfg.socket, sizeof(e->cfg.socket), "%s/sock", e->dir);
	memcpy(e->cfg.mac, mac, 6);
	e->cfg.has_ip4 = true;
	e->cfg.ip4.s_addr = htonl(0x0a000105);
	e->cfg.mtu = 1500;
	e->cfg.max_qps = 8;
	e->cfg.max_cqs = 4;
	e->l = loop_new();
	if (!e->l)
		return false;
	e->d = virtio_rdma_dev_new(e->l, NULL, &e->cfg);
	if (!e->d)
		return false;
	if (pthread_create(&e->thr, NULL, loop_thread, e))
		return false;
	return client_up(e);
}

/* A front-end session: negotiation, memory, ring 0 (control). */
static bool client_up(struct env *e)
{
	struct vhost_user_mem_region reg;
	struct vhost_user_vring_addr a;
	uint64_t f = 0, pf = 0;

	vhost_client_init_fd(&e->vc, -1);
	if (vhost_client_connect(&e->vc, e->cfg.socket))
		return false;
	e->vc.timeout_ms = 10000;
	if (vhost_client_get_features(&e->vc, &f) ||
	    f != ((1ull << VIRTIO_F_VERSION_1) | (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return false;
	if (vhost_client_get_protocol_features(&e->vc, &pf) ||
	    vhost_client_set_protocol_features(
		    &e->vc, pf & ((1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				  (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |
				  (1ull << VHOST_USER_PROTOCOL_F_STATUS))) ||
	    vhost_client_set_owner(&e->vc) ||
	    vhost_client_set_features(&e->vc, (1ull << VIRTIO_F_VERSION_1) |
						      (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return false;
	if (e->memfd < 0) {
		e->memfd = memfd_create("v1-test", MFD_CLOEXEC);
		if (e->memfd < 0 || ftruncate(e->memfd, MEM_SIZE) < 0)
			return false;
		e->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, 0);
		if (e->mem == MAP_FAILED)
			return false;
	}
	memset(e->mem, 0, MEM_SIZE);
	reg.guest_phys_addr = MEM_GPA;
	reg.memory_size = MEM_SIZE;
	reg.userspace_addr = uva(e, 0);
	reg.mmap_offset = 0;
	if (vhost_client_set_mem_table(&e->vc, &reg, &e->memfd, 1))
		return false;
	if (vq_drv_init(&e->vq, e->mem + RING_OFF, QNUM, false))
		return false;
	e->vq_ok = true;
	if (e->kick < 0) {
		e->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		e->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		e->errfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
	memset(&a, 0, sizeof(a));
	a.index = 0;
	a.desc_user_addr = (uint64_t)(uintptr_t)vq_drv_desc(&e->vq);
	a.avail_user_addr = (uint64_t)(uintptr_t)vq_drv_avail(&e->vq);
	a.used_user_addr = (uint64_t)(uintptr_t)vq_drv_used(&e->vq);
	return vhost_client_set_vring_num(&e->vc, 0, QNUM) == 0 &&
	       vhost_client_set_vring_base(&e->vc, 0, 0) == 0 &&
	       vhost_client_set_vring_addr(&e->vc, &a) == 0 &&
	       vhost_client_set_vring_call(&e->vc, 0, e->call) == 0 &&
	       vhost_client_set_vring_err(&e->vc, 0, e->errfd) == 0 &&
	       vhost_client_set_vring_kick(&e->vc, 0, e->kick) == 0 &&
	       vhost_client_set_vring_enable(&e->vc, 0, true) == 0;
}

static void env_down(struct env *e)
{
	vhost_client_close(&e->vc);
	if (e->l) {
		atomic_store(&e->stop, true);
		if (e->d)
			pthread_join(e->thr, NULL);
	}
	virtio_rdma_dev_free(e->d);
	if (e->l)
		loop_free(e->l);
	if (e->vq_ok)
		vq_drv_fini(&e->vq);
	if (e->mem && e->mem != MAP_FAILED)
		munmap(e->mem, MEM_SIZE);
	if (e->memfd >= 0)
		close(e->memfd);
	if (e->kick >= 0)
		close(e->kick);
	if (e->call >= 0)
		close(e->call);
	if (e->errfd >= 0)
		close(e->errfd);
	unlink(e->cfg.socket);
	rmdir(e->dir);
}

/* Send command cmd with data through the control queue; wait for its use.
 * Returns the response byte (or -1 on timeout); the response data is at
 * e->mem + RSP_OFF + 1, its length in *rlen. */
static int cmd(struct env *e, uint8_t c, const void *data, uint32_t len, uint32_t rsp_cap,
	       uint32_t *rlen)
{
	struct vq_buf out = { MEM_GPA + REQ_OFF, 1 + len }, in = { MEM_GPA + RSP_OFF, rsp_cap };
	struct pollfd p = { .fd = e->call, .events = POLLIN };
	uint32_t used = 0;
	uint64_t v;
	int tok = 1;

	e->mem[REQ_OFF] = c;
	if (len)
		memcpy(e->mem + REQ_OFF + 1, data, len);
	memset(e->mem + RSP_OFF, 0xee, 512);
	if (vq_drv_add(&e->vq, &out, 1, &in, rsp_cap ? 1 : 0, &tok))
		return -1;
	vq_drv_kick_prepare(&e->vq);
	v = 1;
	if (write(e->kick, &v, 8) != 8)
		return -1;
	for (int i = 0; i < 100 && !vq_drv_has_used(&e->vq); i++) {
		if (poll(&p, 1, 100) > 0 && read(e->call, &v, 8) < 0)
			return -1;
	}
	if (vq_drv_get_used(&e->vq, &used) != &tok)
		return -1;
	if (rlen)
		*rlen = used ? used - 1 : 0;
	return used ? e->mem[RSP_OFF] : -2;
}

static uint32_t rsp32(struct env *e, uint32_t off)
{
	return get_le32(e->mem + RSP_OFF + 1 + off);
}

static int cmd32(struct env *e, uint8_t c, uint32_t v, uint32_t *rlen)
{
	le32 w = htole32(v);

	return cmd(e, c, &w, 4, 64, rlen);
}

static void test_config_and_control_queue(void)
{
	struct virtio_rdma_dev_config c;
	struct virtio_rdma_dev_cmd_reg_user_mr r;
	struct virtio_rdma_dev_cmd_create_qp q;
	uint32_t rlen = 0, pd, cq, mr, qpn;
	struct env e;
	uint8_t port = 1;

	REQUIRE(env_up(&e));
	/* vhost-user reaches the first 256 bytes: the 128 meaningful ones and
	 * the start of the reserved tail (zero) */
	memset(&c, 0x77, sizeof(c));
	CHECK_EQ(vhost_client_get_config(&e.vc, 0, &c, 128), 0);
	CHECK_EQ(vhost_client_get_config(&e.vc, 128, (uint8_t *)&c + 128, 128), 0);
	CHECK_EQ(c.reserved[0], 0);
	CHECK_EQ(c.reserved[15], 0);
	CHECK_EQ(le32toh(c.phys_port_cnt), 1);
	CHECK_EQ(le32toh(c.max_qp), 8);
	CHECK_EQ(le32toh(c.max_cq), 4);
	CHECK_EQ(c.atomic_cap, VIRTIO_RDMA_DEV_ATOMIC_HCA);
	/* beyond the config space; writes refused */
	CHECK(vhost_client_get_config(&e.vc, 200, &c, 100) != 0);
	CHECK(vhost_client_set_config(&e.vc, 0, &c, 4) != 0);

	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1, 256, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(rlen, sizeof(struct virtio_rdma_dev_rsp_query_port));
	CHECK_EQ(e.mem[RSP_OFF + 1], VIRTIO_RDMA_DEV_PORT_ACTIVE);
	/* response room too small: ERR, only the response byte */
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1, 100, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_ERR);
	CHECK_EQ(rlen, 0);

	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(rlen, 4);
	pd = rsp32(&e, 0);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_CREATE_CQ, 32, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	cq = rsp32(&e, 0);
	CHECK(cq >= 1 && cq <= 4);

	/* REG_USER_MR with a page table in the shared memory */
	for (uint32_t k = 0; k < 2; k++) {
		uint64_t g = htole64(MEM_GPA + DATA_OFF + k * 4096);

		memcpy(e.mem + PT_OFF + 8 * k, &g, 8);
	}
	memset(&r, 0, sizeof(r));
	r.pdn = htole32(pd);
	r.access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE |
				 VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE);
	r.length = htole64(8192);
	r.virt_addr = htole64(0x7000000);
	r.pages = htole64(MEM_GPA + PT_OFF);
	r.npages = htole32(2);
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &r, sizeof(r), 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(rlen, 12);
	mr = rsp32(&e, 0);
	CHECK(rsp32(&e, 4) != 0 && rsp32(&e, 8) != 0);
	r.pages = htole64(0x1000); /* not driver memory */
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &r, sizeof(r), 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_ERR);
	CHECK_EQ(rlen, 0);

	memset(&q, 0, sizeof(q));
	q.pdn = htole32(pd);
	q.qp_type = VIRTIO_RDMA_DEV_QPT_RC;
	q.max_send_wr = htole32(8);
	q.max_send_sge = htole32(1);
	q.send_cqn = htole32(cq);
	q.max_recv_wr = htole32(8);
	q.max_recv_sge = htole32(1);
	q.recv_cqn = htole32(cq);
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_QP, &q, sizeof(q), 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_OK);
	qpn = rsp32(&e, 0);
	CHECK(virtio_rdma_dev_qp_pair(qpn) >= 2 && virtio_rdma_dev_qp_pair(qpn) <= 8);
	/* wrong length, unknown command */
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_QP, &q, sizeof(q) - 1, 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_ERR);
	CHECK_EQ(cmd(&e, 77, &q, 4, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_ERR);
	/* in use, then destroyed in order */
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd, &rlen), VIRTIO_RDMA_DEV_CTRL_ERR);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_DESTROY_QP, qpn, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_DEREG_MR, mr, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, cq, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	/* a request without the command byte */
	CHECK_EQ(cmd(&e, 0, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_ERR);
	env_down(&e);
}

/* Malformed chains are answered and counted; a reset destroys everything. */
static void test_malformed_and_reset(void)
{
	struct vq_buf out = { MEM_GPA + REQ_OFF, 1 };
	struct pollfd p = { .fd = 0, .events = POLLIN };
	uint32_t rlen = 0, used = 0;
	struct rres_counts c;
	struct env e;
	uint64_t v = 1;
	int tok = 2;

	REQUIRE(env_up(&e));
	p.fd = e.call;
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(cmd32(&e, VIRTIO_RDMA_DEV_CMD_CREATE_CQ, 8, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	/* no device-writable part: used with length 0 */
	e.mem[REQ_OFF] = VIRTIO_RDMA_DEV_CMD_CREATE_PD;
	REQUIRE(vq_drv_add(&e.vq, &out, 1, NULL, 0, &tok) == 0);
	vq_drv_kick_prepare(&e.vq);
	CHECK_EQ(write(e.kick, &v, 8), 8);
	for (int i = 0; i < 100 && !vq_drv_has_used(&e.vq); i++)
		if (poll(&p, 1, 100) > 0 && read(e.call, &v, 8) < 0)
			break;
	CHECK(vq_drv_get_used(&e.vq, &used) == &tok);
	CHECK_EQ(used, 0);
	/* the loop thread is idle after answering: the counters are stable */
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->ctrl_malformed, 1);
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->ctrl_ok, 2);
	rres_dev_counts(virtio_rdma_dev_roce(e.d), &c);
	CHECK_EQ(c.pd, 1);
	CHECK_EQ(c.cq, 1);
	/* driver reset (status 0): every object gone */
	CHECK_EQ(vhost_client_set_status(&e.vc, 0), 0);
	CHECK_EQ(vhost_client_get_features(&e.vc, &v), 0); /* a round trip */
	rres_dev_counts(virtio_rdma_dev_roce(e.d), &c);
	CHECK_EQ(c.pd, 0);
	CHECK_EQ(c.cq, 0);
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->resets, 1);
	env_down(&e);
}

/* Wait (bounded) for an eventfd to fire. */
static bool efd_wait_ms(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	return poll(&p, 1, ms) == 1 && read(fd, &v, 8) == 8;
}

static bool efd_wait(int fd)
{
	return efd_wait_ms(fd, 10000);
}

/* A hostile driver: a request outside shared memory breaks the ring (the
 * error eventfd fires, NEEDS_RESET is set, counted); the daemon survives and
 * the next session works. */
static void test_hostile_ring(void)
{
	struct vq_buf out = { 0x900000000ull, 8 }, in = { MEM_GPA + RSP_OFF, 64 };
	uint32_t rlen = 0;
	uint8_t st = 0;
	struct env e;
	uint64_t v = 1;
	int tok = 3;

	REQUIRE(env_up(&e));
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	REQUIRE(vq_drv_add(&e.vq, &out, 1, &in, 1, &tok) == 0);
	vq_drv_kick_prepare(&e.vq);
	CHECK_EQ(write(e.kick, &v, 8), 8);
	CHECK(efd_wait(e.errfd));
	CHECK_EQ(vhost_client_get_status(&e.vc, &st), 0);
	CHECK(st & VIRTIO_CONFIG_S_NEEDS_RESET);
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->ring_errors, 1);
	CHECK(!vq_drv_has_used(&e.vq));
	/* the session ends; a new driver gets a clean device */
	vhost_client_close(&e.vc);
	vq_drv_fini(&e.vq);
	e.vq_ok = false;
	REQUIRE(client_up(&e));
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	{
		struct rres_counts c;

		rres_dev_counts(virtio_rdma_dev_roce(e.d), &c);
		CHECK_EQ(c.pd, 1); /* the first session's PD went with it */
	}
	env_down(&e);
}

/* A control ring without kick eventfd: the device polls it. */
static void test_polled_ctrl(void)
{
	struct vq_buf out = { MEM_GPA + REQ_OFF, 1 }, in = { MEM_GPA + RSP_OFF, 64 };
	uint32_t used = 0;
	struct env e;
	int tok = 5;

	REQUIRE(env_up(&e));
	CHECK_EQ(vhost_client_set_vring_kick(&e.vc, 0, -1), 0);
	e.mem[REQ_OFF] = VIRTIO_RDMA_DEV_CMD_CREATE_PD;
	REQUIRE(vq_drv_add(&e.vq, &out, 1, &in, 1, &tok) == 0);
	vq_drv_kick_prepare(&e.vq); /* published, never kicked */
	for (int i = 0; i < 100 && !vq_drv_has_used(&e.vq); i++)
		(void)efd_wait_ms(e.call, 100);
	CHECK(vq_drv_get_used(&e.vq, &used) == &tok);
	CHECK_EQ(used, 5);
	CHECK_EQ(e.mem[RSP_OFF], VIRTIO_RDMA_DEV_CTRL_OK);
	env_down(&e);
}

/* Oversized and split requests, a page table larger than the device. */
static void test_hostile_requests(void)
{
	struct virtio_rdma_dev_cmd_reg_user_mr r;
	struct vq_buf out[3], in = { MEM_GPA + RSP_OFF, 64 };
	uint32_t rlen = 0, used = 0;
	uint8_t big[600];
	struct env e;
	uint64_t v = 1;
	int tok = 4;

	REQUIRE(env_up(&e));
	memset(big, 0, sizeof(big));
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_MODIFY_QP, big, sizeof(big), 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_ERR);
	CHECK_EQ(rlen, 0);
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->ctrl_malformed, 1);
	/* npages far above the device's budget: refused without reading it */
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, 64, &rlen), VIRTIO_RDMA_DEV_CTRL_OK);
	memset(&r, 0, sizeof(r));
	r.pdn = htole32(get_le32(e.mem + RSP_OFF + 1));
	r.length = htole64(4096);
	r.pages = htole64(MEM_GPA + PT_OFF);
	r.npages = htole32(0x7fffffff);
	CHECK_EQ(cmd(&e, VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &r, sizeof(r), 64, &rlen),
		 VIRTIO_RDMA_DEV_CTRL_ERR);
	/* a request split over three readable descriptors is one request */
	e.mem[REQ_OFF] = VIRTIO_RDMA_DEV_CMD_CREATE_CQ;
	e.mem[REQ_OFF + 100] = 8;
	memset(e.mem + REQ_OFF + 200, 0, 3);
	out[0] = (struct vq_buf){ MEM_GPA + REQ_OFF, 1 };
	out[1] = (struct vq_buf){ MEM_GPA + REQ_OFF + 100, 1 };
	out[2] = (struct vq_buf){ MEM_GPA + REQ_OFF + 200, 3 };
	REQUIRE(vq_drv_add(&e.vq, out, 3, &in, 1, &tok) == 0);
	vq_drv_kick_prepare(&e.vq);
	CHECK_EQ(write(e.kick, &v, 8), 8);
	for (int i = 0; i < 100 && !vq_drv_has_used(&e.vq); i++)
		(void)efd_wait(e.call);
	CHECK(vq_drv_get_used(&e.vq, &used) == &tok);
	CHECK_EQ(used, 5);
	CHECK_EQ(e.mem[RSP_OFF], VIRTIO_RDMA_DEV_CTRL_OK);
	CHECK_EQ(get_le32(e.mem + RSP_OFF + 1), 1); /* the first completion virtqueue */
	env_down(&e);
}

/* ---- two devices on one switch, driven end to end over vhost-user ---- */

#define FE_MEM   (4u << 20)
#define FE_RINGS 11            /* qps=4 cqs=2: 1 + 2 + 2 * 4 */
#define FE_RING(i) (0x1000u + (i) * 0x2000u)
#define FE_DATA  0x100000u     /* registered: 16 pages */
#define FE_PT    0x80000u      /* page table */
#define FE_CQBUF 0x90000u      /* completion buffers */
#define FE_WQE   0xa0000u      /* send / receive elements */

struct fe {
	struct vhost_client vc;
	int memfd;
	uint8_t *mem;
	struct vq_drv vq[FE_RINGS];
	bool vq_up[FE_RINGS];
	int kick[FE_RINGS], call[FE_RINGS];
	uint32_t pd, cq, qpn, lkey, rkey;
	uint32_t wqe_next;
};

static bool fe_ring(struct fe *f, unsigned idx)
{
	struct vhost_user_vring_addr a;

	if (vq_drv_init(&f->vq[idx], f->mem + FE_RING(idx), QNUM, false))
		return false;
	f->vq_up[idx] = true;
	f->kick[idx] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->call[idx] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	memset(&a, 0, sizeof(a));
	a.index = idx;
	a.desc_user_addr = (uint64_t)(uintptr_t)vq_drv_desc(&f->vq[idx]);
	a.avail_user_addr = (uint64_t)(uintptr_t)vq_drv_avail(&f->vq[idx]);
	a.used_user_addr = (uint64_t)(uintptr_t)vq_drv_used(&f->vq[idx]);
	return vhost_client_set_vring_num(&f->vc, idx, QNUM) == 0 &&
	       vhost_client_set_vring_base(&f->vc, idx, 0) == 0 &&
	       vhost_client_set_vring_addr(&f->vc, &a) == 0 &&
	       vhost_client_set_vring_call(&f->vc, idx, f->call[idx]) == 0 &&
	       vhost_client_set_vring_kick(&f->vc, idx, f->kick[idx]) == 0 &&
	       vhost_client_set_vring_enable(&f->vc, idx, true) == 0;
}

static bool fe_up(struct fe *f, const char *path)
{
	struct vhost_user_mem_region reg;
	uint64_t feat = 0, pf = 0;

	memset(f, 0, sizeof(*f));
	for (unsigned i = 0; i < FE_RINGS; i++)
		f->kick[i] = f->call[i] = -1;
	vhost_client_init_fd(&f->vc, -1);
	f->memfd = memfd_create("v1-fe", MFD_CLOEXEC);
	if (f->memfd < 0 || ftruncate(f->memfd, FE_MEM) < 0)
		return false;
	f->mem = mmap(NULL, FE_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	if (f->mem == MAP_FAILED || vhost_client_connect(&f->vc, path))
		return false;
	f->vc.timeout_ms = 10000;
	if (vhost_client_get_features(&f->vc, &feat) ||
	    vhost_client_get_protocol_features(&f->vc, &pf) ||
	    vhost_client_set_protocol_features(&f->vc,
					       pf & ((1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |
						     (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |
						     (1ull << VHOST_USER_PROTOCOL_F_STATUS))) ||
	    vhost_client_set_owner(&f->vc) ||
	    vhost_client_set_features(&f->vc, (1ull << VIRTIO_F_VERSION_1) |
						      (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return false;
	reg.guest_phys_addr = MEM_GPA;
	reg.memory_size = FE_MEM;
	reg.userspace_addr = (uint64_t)(uintptr_t)f->mem;
	reg.mmap_offset = 0;
	return vhost_client_set_mem_table(&f->vc, &reg, &f->memfd, 1) == 0 && fe_ring(f, 0);
}

static void fe_down(struct fe *f)
{
	vhost_client_close(&f->vc);
	for (unsigned i = 0; i < FE_RINGS; i++) {
		if (f->vq_up[i])
			vq_drv_fini(&f->vq[i]);
		if (f->kick[i] >= 0)
			close(f->kick[i]);
		if (f->call[i] >= 0)
			close(f->call[i]);
	}
	if (f->mem && f->mem != MAP_FAILED)
		munmap(f->mem, FE_MEM);
	if (f->memfd > 0)
		close(f->memfd);
}

static void fe_kick(struct fe *f, unsigned idx)
{
	uint64_t v = 1;

	vq_drv_kick_prepare(&f->vq[idx]);
	if (write(f->kick[idx], &v, 8) != 8)
		abort();
}

/* Wait (bounded) for a used entry on ring idx; returns its token. */
static void *fe_used(struct fe *f, unsigned idx, uint32_t *len)
{
	struct pollfd p = { .fd = f->call[idx], .events = POLLIN };
	uint64_t v;

	for (int i = 0; i < 200 && !vq_drv_has_used(&f->vq[idx]); i++)
		if (poll(&p, 1, 100) > 0 && read(f->call[idx], &v, 8) < 0)
			break;
	return vq_drv_get_used(&f->vq[idx], len);
}

/* A control command on ring 0: the response byte (-1 on timeout). */
static int fe_cmd(struct fe *f, uint8_t c, const void *data, uint32_t len)
{
	struct vq_buf out = { MEM_GPA + REQ_OFF, 1 + len }, in = { MEM_GPA + RSP_OFF, 256 };
	uint32_t used = 0;
	int tok = 1;

	f->mem[REQ_OFF] = c;
	if (len)
		memcpy(f->mem + REQ_OFF + 1, data, len);
	if (vq_drv_add(&f->vq[0], &out, 1, &in, 1, &tok))
		return -1;
	fe_kick(f, 0);
	if (fe_used(f, 0, &used) != &tok || !used)
		return -1;
	return f->mem[RSP_OFF];
}

static uint32_t fe_rsp32(struct fe *f, uint32_t off)
{
	return get_le32(f->mem + RSP_OFF + 1 + off);
}

/* PD, CQ 1 with its ring full of buffers, an MR over FE_DATA, an RC QP with
 * its two rings. */
static bool fe_objects(struct fe *f)
{
	struct virtio_rdma_dev_cmd_reg_user_mr r;
	struct virtio_rdma_dev_cmd_create_qp q;
	le32 w = htole32(16);
	uint32_t pair;

	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0) != 0)
		return false;
	f->pd = fe_rsp32(f, 0);
	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_CREATE_CQ, &w, 4) != 0)
		return false;
	f->cq = fe_rsp32(f, 0);
	if (!fe_ring(f, f->cq))
		return false;
	for (unsigned i = 0; i < QNUM; i++) {
		struct vq_buf in = { MEM_GPA + FE_CQBUF + i * 64, 64 };

		vq_drv_add(&f->vq[f->cq], NULL, 0, &in, 1, f->mem + FE_CQBUF + i * 64);
	}
	fe_kick(f, f->cq);
	for (uint32_t k = 0; k < 16; k++) {
		uint64_t g = htole64(MEM_GPA + FE_DATA + k * 4096);

		memcpy(f->mem + FE_PT + 8 * k, &g, 8);
	}
	memset(&r, 0, sizeof(r));
	r.pdn = htole32(f->pd);
	r.access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE |
				 VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
				 VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ);
	r.length = htole64(16 * 4096);
	r.virt_addr = htole64(MEM_GPA + FE_DATA);
	r.pages = htole64(MEM_GPA + FE_PT);
	r.npages = htole32(16);
	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &r, sizeof(r)) != 0)
		return false;
	f->lkey = fe_rsp32(f, 4);
	f->rkey = fe_rsp32(f, 8);
	memset(&q, 0, sizeof(q));
	q.pdn = htole32(f->pd);
	q.qp_type = VIRTIO_RDMA_DEV_QPT_RC;
	q.max_send_wr = q.max_recv_wr = htole32(8);
	q.max_send_sge = q.max_recv_sge = htole32(1);
	q.send_cqn = q.recv_cqn = htole32(f->cq);
	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_CREATE_QP, &q, sizeof(q)) != 0)
		return false;
	f->qpn = fe_rsp32(f, 0);
	pair = virtio_rdma_dev_qp_pair(f->qpn);
	return fe_ring(f, virtio_rdma_dev_vq_sq(2, pair)) && fe_ring(f, virtio_rdma_dev_vq_rq(2, pair));
}

/* INIT, RTR (to peer_ip / peer_qpn, MAC left to ARP), RTS. */
static bool fe_connect(struct fe *f, uint32_t peer_ip, uint32_t peer_qpn)
{
	struct virtio_rdma_dev_cmd_modify_qp c;
	struct virtio_rdma_dev_qp_attr *a = &c.attrs;

	memset(&c, 0, sizeof(c));
	c.qpn = htole32(f->qpn);
	c.attr_mask = htole32(M_INIT_E2E);
	a->qp_state = VIRTIO_IB_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE |
				     VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
				     VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ);
	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_MODIFY_QP, &c, sizeof(c)) != 0)
		return false;
	c.attr_mask = htole32(M_RTR_E2E);
	a->qp_state = VIRTIO_IB_QPS_RTR;
	a->path_mtu = VIRTIO_IB_MTU_1024;
	a->dest_qp_num = htole32(peer_qpn);
	a->rq_psn = htole32(0x10);
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 1;
	a->ah_attr.grh.dgid[10] = 0xff;
	a->ah_attr.grh.dgid[11] = 0xff;
	memcpy(&a->ah_attr.grh.dgid[12], &peer_ip, 4);
	a->ah_attr.grh.sgid_index = 1;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.port_num = 1;
	a->ah_attr.ah_flags = VIRTIO_RDMA_DEV_AH_GRH; /* dmac 0: resolved by the device */
	if (fe_cmd(f, VIRTIO_RDMA_DEV_CMD_MODIFY_QP, &c, sizeof(c)) != 0)
		return false;
	c.attr_mask = htole32(M_RTS_E2E);
	a->qp_state = VIRTIO_IB_QPS_RTS;
	a->sq_psn = htole32(0x10);
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 4;
	return fe_cmd(f, VIRTIO_RDMA_DEV_CMD_MODIFY_QP, &c, sizeof(c)) == 0;
}

static void *fe_wqe(struct fe *f)
{
	void *p = f->mem + FE_WQE + (f->wqe_next++ % 64) * 256;

	memset(p, 0, 256);
	return p;
}

static uint64_t fe_gpa(struct fe *f, const void *p)
{
	return MEM_GPA + (uint64_t)((const uint8_t *)p - f->mem);
}

static void fe_post_recv(struct fe *f, uint64_t id, uint32_t off, uint32_t len)
{
	uint32_t rq = virtio_rdma_dev_vq_rq(2, virtio_rdma_dev_qp_pair(f->qpn));
	uint8_t *b = fe_wqe(f);
	struct virtio_rdma_dev_rq_req r = { htole32(1), htole64(id) };
	struct virtio_rdma_dev_sge s = { htole64(MEM_GPA + FE_DATA + off), htole32(len),
					 htole32(f->lkey) };
	struct vq_buf out = { fe_gpa(f, b), sizeof(r) + sizeof(s) };

	memcpy(b, &r, sizeof(r));
	memcpy(b + sizeof(r), &s, sizeof(s));
	CHECK_EQ(vq_drv_add(&f->vq[rq], &out, 1, NULL, 0, b), 0);
	fe_kick(f, rq);
}

static void fe_post_send(struct fe *f, uint64_t id, uint32_t opcode, uint32_t off, uint32_t len,
			 uint64_t raddr, uint32_t rkey)
{
	uint32_t sq = virtio_rdma_dev_vq_sq(2, virtio_rdma_dev_qp_pair(f->qpn));
	uint8_t *b = fe_wqe(f);
	struct virtio_rdma_dev_sq_req w;
	struct virtio_rdma_dev_sge s = { htole64(MEM_GPA + FE_DATA + off), htole32(len),
					 htole32(f->lkey) };
	struct vq_buf out = { fe_gpa(f, b), sizeof(w) + sizeof(s) };

	memset(&w, 0, sizeof(w));
	w.num_sge = htole32(1);
	w.send_flags = htole32(VIRTIO_RDMA_DEV_SEND_SIGNALED);
	w.opcode = htole32(opcode);
	w.wr_id = htole64(id);
	w.wr.rdma.remote_addr = htole64(raddr);
	w.wr.rdma.rkey = htole32(rkey);
	memcpy(b, &w, sizeof(w));
	memcpy(b + sizeof(w), &s, sizeof(s));
	CHECK_EQ(vq_drv_add(&f->vq[sq], &out, 1, NULL, 0, b), 0);
	fe_kick(f, sq);
}

/* The next completion of f's CQ (its buffer is posted again). */
static bool fe_cqe(struct fe *f, struct virtio_rdma_dev_cq_req *c)
{
	uint32_t len = 0;
	uint8_t *b = fe_used(f, f->cq, &len);
	struct vq_buf in;

	if (!b || len != sizeof(*c))
		return false;
	memcpy(c, b, sizeof(*c));
	in = (struct vq_buf){ fe_gpa(f, b), 64 };
	vq_drv_add(&f->vq[f->cq], NULL, 0, &in, 1, b);
	fe_kick(f, f->cq);
	return true;
}

static bool two_devices_traffic(const char *a, uint32_t ip_a, const char *b, uint32_t ip_b,
				struct fe *fa, struct fe *fb);

static void test_two_devices_rc(void)
{
	static const uint8_t mac_b[6] = { 0x52, 0x54, 0x00, 0xaa, 0x00, 0x02 };
	struct netdev_cfg cb;
	struct virtio_rdma_dev *db = NULL;
	struct fe fa, fb;
	struct env e;
	struct sw *sw = NULL;
	bool up;

	/* the device of env_up has no switch: make two fresh ones here */
	memset(&e, 0, sizeof(e));
	e.memfd = e.kick = e.call = e.errfd = -1;
	strcpy(e.dir, "/tmp/vrdma-v1-XXXXXX");
	REQUIRE(mkdtemp(e.dir) != NULL);
	snprintf(e.cfg.socket, sizeof(e.cfg.socket), "%s/a", e.dir);
	e.cfg.mac[0] = 0x52;
	e.cfg.mac[5] = 0x01;
	e.cfg.has_ip4 = true;
	e.cfg.ip4.s_addr = htonl(0x0a000101);
	e.cfg.mtu = 1500;
	e.cfg.max_qps = 4;
	e.cfg.max_cqs = 2;
	cb = e.cfg;
	snprintf(cb.socket, sizeof(cb.socket), "%s/b", e.dir);
	memcpy(cb.mac, mac_b, 6);
	cb.ip4.s_addr = htonl(0x0a000102);
	cb.index = 1;
	e.l = loop_new();
	REQUIRE(e.l != NULL);
	sw = sw_new(e.l);
	e.d = virtio_rdma_dev_new(e.l, sw, &e.cfg);
	db = virtio_rdma_dev_new(e.l, sw, &cb);
	REQUIRE(sw && e.d && db);
	REQUIRE(pthread_create(&e.thr, NULL, loop_thread, &e) == 0);
	up = two_devices_traffic(e.cfg.socket, e.cfg.ip4.s_addr, cb.socket, cb.ip4.s_addr, &fa,
				 &fb);
	if (up) {
		/* the MACs came from the address registry of port security
		 * (local devices are pinned neighbours, never asked by ARP) */
		CHECK(roce_tp_get_stats(virtio_rdma_dev_transport(e.d))->tx_frames > 0);
		CHECK(roce_tp_get_stats(virtio_rdma_dev_transport(e.d))->neigh_pinned > 0);
		CHECK(roce_tp_get_stats(virtio_rdma_dev_transport(db))->neigh_pinned > 0);
	}
	fe_down(&fa);
	fe_down(&fb);
	atomic_store(&e.stop, true);
	pthread_join(e.thr, NULL);
	virtio_rdma_dev_free(db);
	virtio_rdma_dev_free(e.d);
	sw_free(sw);
	loop_free(e.l);
	rmdir(e.dir);
}

/* Two devices (sockets a and b, IPv4 addresses in network order): RC
 * connection, SEND a -> b and READ b <- a checked byte for byte. */
static bool two_devices_traffic(const char *a, uint32_t ip_a, const char *b, uint32_t ip_b,
				struct fe *fa_out, struct fe *fb_out)
{
	struct virtio_rdma_dev_cq_req c;
	struct fe *fa = fa_out, *fb = fb_out;
	bool up;

	up = fe_up(fa, a) && fe_up(fb, b) && fe_objects(fa) && fe_objects(fb) &&
	     fe_connect(fa, ip_b, fb->qpn) && fe_connect(fb, ip_a, fa->qpn);
	CHECK(up);
	if (up) {
		/* SEND a -> b, 3000 bytes (three packets) */
		for (uint32_t i = 0; i < 3000; i++)
			fa->mem[FE_DATA + i] = (uint8_t)(i * 7 + 3);
		fe_post_recv(fb, 100, 8192, 4096);
		fe_post_send(fa, 1, VIRTIO_RDMA_DEV_WR_SEND, 0, 3000, 0, 0);
		CHECK(fe_cqe(fa, &c));
		CHECK_EQ(le64toh(c.wr_id), 1);
		CHECK_EQ(c.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(c.opcode, VIRTIO_RDMA_DEV_WC_OP_SEND);
		CHECK(fe_cqe(fb, &c));
		CHECK_EQ(le64toh(c.wr_id), 100);
		CHECK_EQ(c.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(c.opcode, VIRTIO_RDMA_DEV_WC_OP_RECV);
		CHECK_EQ(le32toh(c.byte_len), 3000);
		CHECK_EQ(le32toh(c.qp_num), fb->qpn);
		CHECK_MEM(fb->mem + FE_DATA + 8192, fa->mem + FE_DATA, 3000);
		/* RDMA READ b <- a's buffer */
		fe_post_send(fb, 2, VIRTIO_RDMA_DEV_WR_RDMA_READ, 16384, 3000,
			     MEM_GPA + FE_DATA, fa->rkey);
		CHECK(fe_cqe(fb, &c));
		CHECK_EQ(le64toh(c.wr_id), 2);
		CHECK_EQ(c.status, VIRTIO_RDMA_DEV_WC_SUCCESS);
		CHECK_EQ(c.opcode, VIRTIO_RDMA_DEV_WC_OP_RDMA_READ);
		CHECK_MEM(fb->mem + FE_DATA + 16384, fa->mem + FE_DATA, 3000);
	}
	return up;
}

/* A hostile driver on the transport's rings: a send element outside
 * shared memory breaks the send ring (error eventfd, NEEDS_RESET, counted
 * once, nothing used); the control queue keeps working; a reset (status 0)
 * destroys every object. */
static void test_hostile_data_rings(void)
{
	struct netdev_cfg cfg;
	struct virtio_rdma_dev *d;
	struct loop *l = loop_new();
	struct env e;
	struct fe f;
	uint32_t sq;
	uint8_t st = 0;
	int tok = 9;

	memset(&e, 0, sizeof(e));
	strcpy(e.dir, "/tmp/vrdma-v1-XXXXXX");
	REQUIRE(l && mkdtemp(e.dir) != NULL);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.socket, sizeof(cfg.socket), "%s/h", e.dir);
	cfg.mac[0] = 0x52;
	cfg.mac[5] = 0x07;
	cfg.has_ip4 = true;
	cfg.ip4.s_addr = htonl(0x0a000107);
	cfg.mtu = 1500;
	cfg.max_qps = 4;
	cfg.max_cqs = 2;
	d = virtio_rdma_dev_new(l, NULL, &cfg);
	REQUIRE(d != NULL);
	e.l = l;
	e.d = d;
	REQUIRE(pthread_create(&e.thr, NULL, loop_thread, &e) == 0);
	/* the QP in RTS: the transport fetches its send ring */
	if (fe_up(&f, cfg.socket) && fe_objects(&f) && fe_connect(&f, htonl(0x0a000108), 0x44)) {
		struct vq_buf out = { 0x7000000000ull, 91 };
		int errfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		struct pollfd p = { .fd = errfd, .events = POLLIN };
		uint64_t v;

		sq = virtio_rdma_dev_vq_sq(2, virtio_rdma_dev_qp_pair(f.qpn));
		CHECK_EQ(vhost_client_set_vring_err(&f.vc, sq, errfd), 0);
		CHECK_EQ(vq_drv_add(&f.vq[sq], &out, 1, NULL, 0, &tok), 0);
		fe_kick(&f, sq);
		/* the error eventfd fires (possibly more than once): wait for
		 * NEEDS_RESET, bounded */
		for (int k = 0; k < 100; k++) {
			if (poll(&p, 1, 100) == 1 && read(errfd, &v, 8) != 8)
				break;
			if (vhost_client_get_status(&f.vc, &st) == 0 &&
			    (st & VIRTIO_CONFIG_S_NEEDS_RESET))
				break;
		}
		CHECK(st & VIRTIO_CONFIG_S_NEEDS_RESET);
		CHECK(!vq_drv_has_used(&f.vq[sq]));
		CHECK_EQ(virtio_rdma_dev_stats(d)->ring_errors, 1);
		/* the control queue still answers */
		CHECK_EQ(fe_cmd(&f, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0), 0);
		/* reset: all objects gone, the session goes on */
		CHECK_EQ(vhost_client_set_status(&f.vc, 0), 0);
		CHECK_EQ(vhost_client_get_status(&f.vc, &st), 0);
		{
			struct rres_counts c;

			rres_dev_counts(virtio_rdma_dev_roce(d), &c);
			CHECK_EQ(c.pd + c.cq + c.qp + c.mr, 0);
		}
		close(errfd);
	} else {
		CHECK(!"front-end setup");
	}
	fe_down(&f);
	atomic_store(&e.stop, true);
	pthread_join(e.thr, NULL);
	virtio_rdma_dev_free(d);
	loop_free(l);
	rmdir(e.dir);
}

/* With "--daemon SOCK_A IP_A SOCK_B IP_B": only the two-device traffic,
 * against the devices of a running vhost-user-rdma (model=virtio-rdma). */
static const char *ext_a, *ext_b, *ext_ip_a, *ext_ip_b;

static void test_daemon_devices(void)
{
	struct in_addr ia, ib;
	struct fe fa, fb;

	REQUIRE(inet_pton(AF_INET, ext_ip_a, &ia) == 1 && inet_pton(AF_INET, ext_ip_b, &ib) == 1);
	(void)two_devices_traffic(ext_a, ia.s_addr, ext_b, ib.s_addr, &fa, &fb);
	fe_down(&fa);
	fe_down(&fb);
}

/* The address registry records which loop serves each device's RoCE (what
 * "near" means for loss recovery, roce_neigh_near): a virtio-net device
 * with roce on and a virtio-rdma device name their loop; a roce=off port
 * (a guest's own RoCE behind it) names none. */
static void test_registry_home(void)
{
	static const char *const spec[2] = {
		"socket=%s/on,mac=52:54:00:bb:00:01,ip=10.9.0.1/24",
		"socket=%s/off,mac=52:54:00:bb:00:02,ip=10.9.0.2/24,roce=off",
	};
	uint8_t gid[16] = { [10] = 0xff, [11] = 0xff, 10, 9, 0, 0 }, mac[6];
	struct netdev_port *dp[2] = { NULL, NULL };
	char dir[] = "/tmp/vrdma-home-XXXXXX", s[256], err[256];
	struct netdev_cfg cfg, cr;
	struct virtio_rdma_dev *d;
	const void *home;
	struct loop *l;
	struct sw *sw;

	REQUIRE(mkdtemp(dir) != NULL);
	l = loop_new();
	REQUIRE(l != NULL);
	sw = sw_new(l);
	REQUIRE(sw != NULL);
	for (unsigned i = 0; i < 2; i++) {
		snprintf(s, sizeof(s), spec[i], dir);
		REQUIRE(netdev_parse_cfg(s, i, &cfg, err, sizeof(err)) == 0);
		dp[i] = netdev_port_new(l, sw, &cfg);
		REQUIRE(dp[i] != NULL);
	}
	memset(&cr, 0, sizeof(cr));
	snprintf(cr.socket, sizeof(cr.socket), "%s/rdma", dir);
	memcpy(cr.mac, (uint8_t[6]){ 0x52, 0x54, 0x00, 0xbb, 0x00, 0x03 }, 6);
	cr.has_ip4 = true;
	cr.ip4.s_addr = htonl(0x0a090003);
	cr.mtu = 1500;
	cr.max_qps = 4;
	cr.max_cqs = 2;
	cr.index = 2;
	d = virtio_rdma_dev_new(l, sw, &cr);
	REQUIRE(d != NULL);
	for (uint8_t i = 1; i <= 3; i++) {
		gid[15] = i;
		home = (const void *)&home; /* overwritten when found */
		CHECK(psec_pinned_mac(gid, mac, &home));
		CHECK_EQ(mac[5], i);
		if (i == 2)
			CHECK(home == NULL);
		else
			CHECK(home == (const void *)l);
	}
	virtio_rdma_dev_free(d);
	netdev_port_free(dp[1]);
	netdev_port_free(dp[0]);
	gid[15] = 1;
	CHECK(!psec_pinned_mac(gid, mac, NULL)); /* unregistered with its device */
	sw_free(sw);
	loop_free(l);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	TEST_PROGRAM("test_virtio_rdma_dev");
	if (argc == 6 && !strcmp(argv[1], "--daemon")) {
		ext_a = argv[2];
		ext_ip_a = argv[3];
		ext_b = argv[4];
		ext_ip_b = argv[5];
		RUN(test_daemon_devices);
		return TEST_DONE();
	}
	RUN(test_config_and_control_queue);
	RUN(test_malformed_and_reset);
	RUN(test_hostile_ring);
	RUN(test_hostile_requests);
	RUN(test_polled_ctrl);
	RUN(test_two_devices_rc);
	RUN(test_hostile_data_rings);
	RUN(test_registry_home);
	return TEST_DONE();
}
