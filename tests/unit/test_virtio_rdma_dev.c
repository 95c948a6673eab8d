/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device served over vhost-user (src/device/virtio_rdma_dev.c):
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
#include "device/virtio_rdma_dev.h"
#include "vhost/vhost_client.h"
#include "vhost/vhost_proto.h"
#include "virtio/vq_drv.h"

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
	e->d = virtio_rdma_dev_new(e->l, &e->cfg);
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
	struct roce_counts c;
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
	roce_dev_counts(virtio_rdma_dev_roce(e.d), &c);
	CHECK_EQ(c.pd, 1);
	CHECK_EQ(c.cq, 1);
	/* driver reset (status 0): every object gone */
	CHECK_EQ(vhost_client_set_status(&e.vc, 0), 0);
	CHECK_EQ(vhost_client_get_features(&e.vc, &v), 0); /* a round trip */
	roce_dev_counts(virtio_rdma_dev_roce(e.d), &c);
	CHECK_EQ(c.pd, 0);
	CHECK_EQ(c.cq, 0);
	CHECK_EQ(virtio_rdma_dev_stats(e.d)->resets, 1);
	env_down(&e);
}

/* Wait (bounded) for an eventfd to fire. */
static bool efd_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	return poll(&p, 1, 10000) == 1 && read(fd, &v, 8) == 8;
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
		struct roce_counts c;

		roce_dev_counts(virtio_rdma_dev_roce(e.d), &c);
		CHECK_EQ(c.pd, 1); /* the first session's PD went with it */
	}
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

int main(void)
{
	TEST_PROGRAM("test_virtio_rdma_dev");
	RUN(test_config_and_control_queue);
	RUN(test_malformed_and_reset);
	RUN(test_hostile_ring);
	RUN(test_hostile_requests);
	return TEST_DONE();
}
