/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user back-end: a server on a temporary socket driven by a raw client
 * (vhost_msg codec) through a real loop, with a stub device recording the
 * callbacks. Negotiation, memfd memory, ring start/kick/call/stop, ring base,
 * enable semantics, memory-table changes under running rings, hundreds of
 * ADD/REM_MEM_REG, the wide-index extension, every validation path closing
 * the session, reconnection, and no fd leaks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../harness.h"
#include "common/test_sys.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "vhost/vhost_msg.h"
#include "vhost/vhost_server.h"

/* ---- stub device ---- */

struct stub {
	struct vhost_server *s;
	int started, stopped, kicks, resets, connected, disconnected, mem_changed;
	int set_status_calls;
	uint64_t features;
	bool refuse_features;
	uint8_t status;
	uint8_t config[256];
	struct vhost_vring *last_started, *last_stopped, *last_kicked;
	unsigned last_kick_idx;
	bool disconnect_on_kick;
	bool disconnect_on_start;
	bool pop_on_kick;      /* the device reads the ring on a kick */
	int pop_rc;            /* what that pop returned */
	struct vq_elem elem;   /* and the element (kept outstanding) */
	int running; /* started - stopped */
};

static int stub_set_features(void *ctx, uint64_t f)
{
	struct stub *st = ctx;

	if (st->refuse_features)
		return -ENOTSUP;
	st->features = f;
	return 0;
}

static int stub_get_config(void *ctx, uint32_t off, void *buf, uint32_t len)
{
	struct stub *st = ctx;

	if (off == 200)
		return -EINVAL; /* pretend this field cannot be read */
	memcpy(buf, st->config + off, len);
	return 0;
}

static int stub_set_config(void *ctx, uint32_t off, const void *buf, uint32_t len)
{
	struct stub *st = ctx;

	if (off < 8)
		return -EPERM; /* read-only */
	memcpy(st->config + off, buf, len);
	return 0;
}

static void stub_ring_started(void *ctx, struct vhost_vring *r)
{
	struct stub *st = ctx;

	st->started++;
	st->running++;
	st->last_started = r;
	if (st->disconnect_on_start)
		vhost_server_disconnect(st->s, "test: device gives up");
}

static void stub_ring_stopped(void *ctx, struct vhost_vring *r)
{
	struct stub *st = ctx;

	st->stopped++;
	st->running--;
	st->last_stopped = r;
}

static void stub_ring_kick(void *ctx, struct vhost_vring *r)
{
	struct stub *st = ctx;

	st->kicks++;
	st->last_kicked = r;
	st->last_kick_idx = r->idx;
	if (st->pop_on_kick)
		st->pop_rc = vq_dev_pop(&r->vq, &st->elem);
	if (st->disconnect_on_kick)
		vhost_server_disconnect(st->s, "test: bad ring");
}

static void stub_set_status(void *ctx, uint8_t status)
{
	struct stub *st = ctx;

	st->set_status_calls++;
	st->status = status;
}

static void stub_reset(void *ctx)
{
	struct stub *st = ctx;

	CHECK_EQ(st->running, 0); /* reset comes after every ring stopped */
	st->resets++;
}

static void stub_mem_changed(void *ctx)
{
	((struct stub *)ctx)->mem_changed++;
}

static void stub_connected(void *ctx)
{
	((struct stub *)ctx)->connected++;
}

static void stub_disconnected(void *ctx)
{
	((struct stub *)ctx)->disconnected++;
}

#define STUB_FEATURES ((1ull << 0) | (1ull << 5) | (1ull << 28) | (1ull << 29) | (1ull << 32))

static void stub_ops(struct vhost_dev_ops *ops, uint32_t max_rings)
{
	memset(ops, 0, sizeof(*ops));
	ops->features = STUB_FEATURES;
	ops->protocol_features = ~0ull;
	ops->max_rings = max_rings;
	ops->queue_num = 1;
	ops->set_features = stub_set_features;
	ops->get_config = stub_get_config;
	ops->set_config = stub_set_config;
	ops->ring_started = stub_ring_started;
	ops->ring_stopped = stub_ring_stopped;
	ops->ring_kick = stub_ring_kick;
	ops->set_status = stub_set_status;
	ops->reset = stub_reset;
	ops->mem_changed = stub_mem_changed;
	ops->connected = stub_connected;
	ops->disconnected = stub_disconnected;
}

/* ---- environment: loop, server on a temp socket, raw client ---- */

#define MEM_SIZE (1u << 20)
#define MEM_GPA 0x40000000ull
#define DESC_OFF 0x1000u
#define AVAIL_OFF 0x3000u
#define USED_OFF 0x4000u
#define BUF_OFF 0x10000u

struct env {
	char dir[64];
	char path[128];
	struct loop *l;
	struct vhost_server *s;
	struct stub st;
	struct vhost_dev_ops ops;
	int c;            /* client socket */
	int memfd;
	uint8_t *mem;     /* client's mapping of the shared memory */
	int kick, call, err;
	uint64_t pf;      /* protocol features the client negotiated */
	bool own_loop;
};

static int client_connect(const char *path)
{
	int fd = tc_unix_connect(path);

	return fd < 0 ? -1 : fd;
}

/* Run the loop until the server has handled n messages in total, or its
 * session state changes to want_connected (bounded number of iterations; each
 * iteration returns as soon as an event was handled). */
static void pump_msgs(struct env *e, uint64_t n)
{
	for (int i = 0; i < 1000 && vhost_server_stats(e->s)->messages < n &&
			vhost_server_connected(e->s); i++)
		loop_run_once(e->l, 2000000000ll);
}

static void pump_connected(struct env *e, bool want)
{
	for (int i = 0; i < 100 && vhost_server_connected(e->s) != want; i++)
		loop_run_once(e->l, 2000000000ll);
}

/* A server on its own loop (shared NULL) or on shared; the client's memory
 * is a memfd the server can seal (sealable) or not. */
static int env_init_on(struct env *e, uint32_t max_rings, struct loop *shared,
		       bool sealable)
{
	memset(e, 0, sizeof(*e));
	e->c = e->memfd = e->kick = e->call = e->err = -1;
	strcpy(e->dir, "/tmp/vrdma-vs-XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	snprintf(e->path, sizeof(e->path), "%s/sock", e->dir);
	e->own_loop = !shared;
	e->l = shared ? shared : loop_new();
	stub_ops(&e->ops, max_rings);
	e->s = vhost_server_new(e->l, e->path, &e->ops, &e->st);
	if (!e->l || !e->s)
		return -1;
	e->st.s = e->s;
	e->memfd = memfd_create("vs-test", MFD_CLOEXEC | (sealable ? MFD_ALLOW_SEALING : 0));
	if (e->memfd < 0 || ftruncate(e->memfd, MEM_SIZE) < 0)
		return -1;
	e->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, 0);
	if (e->mem == MAP_FAILED)
		return -1;
	e->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->c = client_connect(e->path);
	if (e->c < 0)
		return -1;
	pump_connected(e, true);
	return vhost_server_connected(e->s) ? 0 : -1;
}

static int env_init(struct env *e, uint32_t max_rings)
{
	return env_init_on(e, max_rings, NULL, false);
}

static void env_fini(struct env *e)
{
	if (e->c >= 0)
		close(e->c);
	vhost_server_free(e->s);
	if (e->own_loop)
		loop_free(e->l);
	if (e->mem && e->mem != MAP_FAILED)
		munmap(e->mem, MEM_SIZE);
	if (e->memfd >= 0)
		close(e->memfd);
	if (e->kick >= 0)
		close(e->kick);
	if (e->call >= 0)
		close(e->call);
	if (e->err >= 0)
		close(e->err);
	rmdir(e->dir);
}

/*
 * Send one request and let the server handle it. Returns 1 and fills *reply
 * if one came back, 0 if none, -ECONNRESET if the server closed the session.
 */
static int xfer(struct env *e, struct vhost_user_msg *m, const int *fds, int nfds,
		struct vhost_user_msg *reply)
{
	uint64_t before = vhost_server_stats(e->s)->messages;
	struct vhost_user_msg tmp;
	int rf[VHOST_USER_MAX_FDS], rn = 0, r;

	if (vhost_msg_send(e->c, m, fds, nfds, 1000) < 0)
		return -EPIPE;
	pump_msgs(e, before + 1);
	if (!reply)
		reply = &tmp;
	r = vhost_msg_recv(e->c, reply, rf, &rn, 0);
	vhost_msg_close_fds(rf, rn);
	if (r == -ETIMEDOUT)
		return vhost_server_connected(e->s) ? 0 : -ECONNRESET;
	if (r < 0)
		return -ECONNRESET;
	return 1;
}

static int req_u64(struct env *e, uint32_t req, uint64_t v, bool ack, uint64_t *out)
{
	struct vhost_user_msg m, r;
	int ret;

	vhost_msg_init(&m, req, 8);
	m.payload.u64 = v;
	if (ack)
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	ret = xfer(e, &m, NULL, 0, &r);
	if (ret == 1 && out)
		*out = r.payload.u64;
	if (ret == 1)
		CHECK_EQ(vhost_msg_check_reply(&r, req, 8), 0);
	return ret;
}

static int req_get(struct env *e, uint32_t req, uint64_t *out)
{
	struct vhost_user_msg m, r;
	int ret;

	vhost_msg_init(&m, req, 0);
	ret = xfer(e, &m, NULL, 0, &r);
	if (ret == 1) {
		CHECK_EQ(vhost_msg_check_reply(&r, req, 8), 0);
		*out = r.payload.u64;
	}
	return ret;
}

static int req_state(struct env *e, uint32_t req, uint32_t idx, uint32_t num,
		     struct vhost_user_msg *reply)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, req, 8);
	m.payload.state.index = idx;
	m.payload.state.num = num;
	return xfer(e, &m, NULL, 0, reply);
}

static int req_vring_fd(struct env *e, uint32_t req, uint32_t idx, int fd, bool wide)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, req, 8);
	m.payload.u64 = idx & 0xff;
	if (wide)
		m.payload.u64 |= (uint64_t)(idx >> 8) << 32;
	if (fd < 0)
		m.payload.u64 |= VHOST_USER_VRING_NOFD_MASK;
	return xfer(e, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, NULL);
}

static uint64_t uva(struct env *e, uint32_t off)
{
	return (uint64_t)(uintptr_t)e->mem + off;
}

static int req_addr(struct env *e, uint32_t idx, uint32_t base_off)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, VHOST_USER_SET_VRING_ADDR, 40);
	memset(&m.payload.addr, 0, sizeof(m.payload.addr));
	m.payload.addr.index = idx;
	m.payload.addr.desc_user_addr = uva(e, base_off + DESC_OFF);
	m.payload.addr.avail_user_addr = uva(e, base_off + AVAIL_OFF);
	m.payload.addr.used_user_addr = uva(e, base_off + USED_OFF);
	return xfer(e, &m, NULL, 0, NULL);
}

static int req_mem_table(struct env *e, bool ack)
{
	struct vhost_user_msg m, r;
	int ret;

	vhost_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 8 + 32);
	m.payload.memory.nregions = 1;
	m.payload.memory.padding = 0;
	m.payload.memory.regions[0].guest_phys_addr = MEM_GPA;
	m.payload.memory.regions[0].memory_size = MEM_SIZE;
	m.payload.memory.regions[0].userspace_addr = uva(e, 0);
	m.payload.memory.regions[0].mmap_offset = 0;
	if (ack)
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	ret = xfer(e, &m, &e->memfd, 1, &r);
	if (ack && ret == 1) {
		CHECK_EQ(vhost_msg_check_reply(&r, VHOST_USER_SET_MEM_TABLE, 8), 0);
		CHECK_EQ(r.payload.u64, 0);
	}
	return ret;
}

/* Features, protocol features (pf), owner, memory. */
static void negotiate(struct env *e, uint64_t pf, bool protocol_bit)
{
	uint64_t v = 0;

	CHECK_EQ(req_get(e, VHOST_USER_GET_FEATURES, &v), 1);
	CHECK_EQ(v, STUB_FEATURES | (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	CHECK_EQ(req_get(e, VHOST_USER_GET_PROTOCOL_FEATURES, &v), 1);
	CHECK(v & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	CHECK_EQ(req_u64(e, VHOST_USER_SET_PROTOCOL_FEATURES, pf & v, false, NULL), 0);
	e->pf = pf & v;
	{
		struct vhost_user_msg m;

		vhost_msg_init(&m, VHOST_USER_SET_OWNER, 0);
		CHECK_EQ(xfer(e, &m, NULL, 0, NULL), 0);
	}
	CHECK_EQ(req_u64(e, VHOST_USER_SET_FEATURES,
			 (1ull << 0) | (1ull << 32) |
				 (protocol_bit ? 1ull << VHOST_USER_F_PROTOCOL_FEATURES : 0),
			 false, NULL), 0);
	CHECK_EQ(e->st.features, (1ull << 0) | (1ull << 32));
	CHECK_EQ(vhost_server_features(e->s), (1ull << 0) | (1ull << 32));
	{
		bool ack = (e->pf >> VHOST_USER_PROTOCOL_F_REPLY_ACK) & 1;

		CHECK_EQ(req_mem_table(e, ack), ack ? 1 : 0);
	}
}

/* num, base, addr, call, kick for ring idx whose parts are at base_off. */
static void setup_ring(struct env *e, uint32_t idx, uint32_t num, uint32_t base_off,
		       int kick, int call)
{
	CHECK_EQ(req_state(e, VHOST_USER_SET_VRING_NUM, idx, num, NULL), 0);
	CHECK_EQ(req_state(e, VHOST_USER_SET_VRING_BASE, idx, 0, NULL), 0);
	CHECK_EQ(req_addr(e, idx, base_off), 0);
	CHECK_EQ(req_vring_fd(e, VHOST_USER_SET_VRING_CALL, idx, call, false), 0);
	CHECK_EQ(req_vring_fd(e, VHOST_USER_SET_VRING_KICK, idx, kick, false), 0);
}

#define PF_STD ((1ull << VHOST_USER_PROTOCOL_F_MQ) | (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
		(1ull << VHOST_USER_PROTOCOL_F_CONFIG) | (1ull << VHOST_USER_PROTOCOL_F_STATUS) | \
		(1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) | \
		(1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE) | \
		(1ull << VHOST_USER_PROTOCOL_F_NET_MTU))
#define PF_WIDE (1ull << VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX)

static uint64_t efd_read(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static void efd_kick(int fd)
{
	uint64_t one = 1;

	CHECK_EQ(write(fd, &one, sizeof(one)), 8);
}

/* Driver side, by hand: post descriptor 'head' as a one-buffer chain. */
static void post_buffer(struct env *e, uint32_t base_off, uint16_t num, uint16_t head,
			uint32_t len)
{
	struct vring_desc *d = (void *)(e->mem + base_off + DESC_OFF);
	struct vring_avail *a = (void *)(e->mem + base_off + AVAIL_OFF);
	uint16_t ai = a->idx;

	d[head].addr = MEM_GPA + BUF_OFF + head * 256u;
	d[head].len = len;
	d[head].flags = 0;
	d[head].next = 0;
	a->ring[ai % num] = head;
	__atomic_store_n(&a->idx, (uint16_t)(ai + 1), __ATOMIC_RELEASE);
}

/* ---- tests ---- */

/* Kicks that bring no work: after 64 in a row the kick fd is paused
 * (counted), so a spinning driver cannot keep the loop busy; when the pause
 * ends the fd is watched again and what was posted meanwhile is seen. */
static void test_idle_kicks_paused(void)
{
	const struct vhost_server_stats *ss;
	struct vhost_vring *ring;
	struct env e;
	int kicks;

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	ring = vhost_server_vring(e.s, 0);
	REQUIRE(ring && ring->started);
	ss = vhost_server_stats(e.s);
	for (int i = 0; i < 64; i++) {
		efd_kick(e.kick);
		loop_run_once(e.l, 2000000000ll);
	}
	CHECK_EQ(ss->kicks, 64);
	CHECK_EQ(ss->kicks_idle, 64);
	CHECK_EQ(ss->kicks_throttled, 1);
	CHECK_EQ(e.st.kicks, 63); /* the 64th is not handed on */
	/* Posted during the pause: found when it ends (a timer, waited for). */
	post_buffer(&e, 0, 256, 3, 64);
	efd_kick(e.kick);
	kicks = e.st.kicks;
	for (int i = 0; i < 1000 && e.st.kicks == kicks; i++)
		loop_run_once(e.l, 2000000000ll);
	CHECK(e.st.kicks > kicks);
	CHECK_EQ(vq_dev_avail(&ring->vq), 1);
	/* A kick with work resets the run: 63 idle ones pass again. */
	for (int i = 0; i < 8; i++)
		loop_run_once(e.l, 0);
	for (int i = 0; i < 63; i++) {
		efd_kick(e.kick);
		loop_run_once(e.l, 2000000000ll);
	}
	CHECK_EQ(ss->kicks_throttled, 1);
	CHECK(ring->started);
	env_fini(&e);
}

static void test_negotiate_and_ring(void)
{
	struct env e;
	struct vhost_user_msg m, r;
	struct vhost_vring *ring;
	struct vq_elem elem;
	uint64_t v = 0;
	int base = tc_count_fds(0);

	REQUIRE(env_init(&e, 3) == 0);
	CHECK_EQ(e.st.connected, 1);
	negotiate(&e, PF_STD, true);
	CHECK_EQ(vhost_server_protocol_features(e.s), PF_STD);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_QUEUE_NUM, &v), 1);
	CHECK_EQ(v, 1);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_MAX_MEM_SLOTS, &v), 1);
	CHECK_EQ(v, VHOST_MEM_MAX_REGIONS);
	CHECK_EQ(vhost_server_mem(e.s)->nregions, 1);

	/* NEED_REPLY on a request without its own reply: ack 0. */
	CHECK_EQ(req_u64(&e, VHOST_USER_NET_SET_MTU, 1500, true, &v), 1);
	CHECK_EQ(v, 0);
	/* NEED_REPLY on GET_*: just the normal reply. */
	vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(r.payload.u64, STUB_FEATURES | (1ull << 30));
	CHECK_EQ(vhost_msg_recv(e.c, &r, NULL, NULL, 0), -ETIMEDOUT);

	/* Ring 0: everything but enable. Protocol features negotiated, so
	 * the ring waits for SET_VRING_ENABLE. */
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	ring = vhost_server_vring(e.s, 0);
	REQUIRE(ring);
	CHECK(!ring->started);
	CHECK(!ring->enabled);
	CHECK_EQ(e.st.started, 0);
	CHECK(vhost_server_vring(e.s, 1) == NULL);
	CHECK(vhost_server_vring(e.s, 3) == NULL);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	CHECK_EQ(e.st.started, 1);
	CHECK(e.st.last_started == ring);
	CHECK(ring->started);
	CHECK_EQ(ring->num, 256);
	CHECK(ring->kick_fd >= 0);
	CHECK(ring->call_fd >= 0);
	CHECK(ring->vq.event_idx == false);
	/* The server's view is the same memory as the client's. */
	e.mem[DESC_OFF + 5] = 0x5a;
	CHECK_EQ(((uint8_t *)ring->vq.desc)[5], 0x5a);

	/* Kick: the eventfd is drained and the device called. */
	efd_kick(e.kick);
	efd_kick(e.kick);
	loop_run_once(e.l, 2000000000ll);
	CHECK_EQ(e.st.kicks, 1);
	CHECK(e.st.last_kicked == ring);
	CHECK_EQ(vhost_server_stats(e.s)->kicks, 1);
	CHECK_EQ(loop_run_once(e.l, 0), 0);
	CHECK_EQ(e.st.kicks, 1);

	/* A buffer goes through the device and the driver is interrupted. */
	post_buffer(&e, 0, 256, 7, 64);
	CHECK_EQ(vq_dev_pop(&ring->vq, &elem), 1);
	CHECK_EQ(elem.head, 7);
	CHECK_EQ(elem.out_len, 64);
	vq_dev_push(&ring->vq, elem.head, 0);
	vhost_vring_notify(ring);
	CHECK_EQ(efd_read(e.call), 1);
	CHECK_EQ(vhost_server_stats(e.s)->calls, 1);

	/* SET_VRING_CALL replaced while running: the new fd gets the calls. */
	{
		int call2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 0, call2, false), 0);
		CHECK(ring->started);
		vhost_vring_call(ring);
		CHECK_EQ(efd_read(call2), 1);
		CHECK_EQ(efd_read(e.call), 0);
		close(call2);
	}
	/* Kick fd replaced while running: the new one is watched. */
	{
		int kick2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

		CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_KICK, 0, kick2, false), 0);
		CHECK(ring->started);
		CHECK_EQ(e.st.stopped, 0);
		efd_kick(kick2);
		loop_run_once(e.l, 2000000000ll);
		CHECK_EQ(e.st.kicks, 2);
		close(kick2);
	}

	/* GET_VRING_BASE stops the ring and returns the next avail index. */
	CHECK_EQ(req_state(&e, VHOST_USER_GET_VRING_BASE, 0, 0, &r), 1);
	CHECK_EQ(vhost_msg_check_reply(&r, VHOST_USER_GET_VRING_BASE, 8), 0);
	CHECK_EQ(r.payload.state.index, 0);
	CHECK_EQ(r.payload.state.num, 1);
	CHECK_EQ(e.st.stopped, 1);
	CHECK(!ring->started);
	CHECK_EQ(ring->kick_fd, -1);
	CHECK(ring->call_fd >= 0);
	/* Stopped stays stopped until a new kick, then resumes at the base. */
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, 0, 256, NULL), 0);
	CHECK(!ring->started);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_KICK, 0, e.kick, false), 0);
	CHECK(ring->started);
	CHECK_EQ(ring->vq.last_avail_idx, 1);
	CHECK_EQ(vq_dev_pop(&ring->vq, &elem), 0);
	post_buffer(&e, 0, 256, 9, 32);
	CHECK_EQ(vq_dev_pop(&ring->vq, &elem), 1);
	CHECK_EQ(elem.head, 9);
	/* Explicit base for the next start. */
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_BASE, 0, 1, NULL), 0);
	CHECK(ring->started);
	CHECK_EQ(ring->vq.last_avail_idx, 1);

	/* Disable stops, enable restarts. */
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 0, NULL), 0);
	CHECK(!ring->started);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	CHECK(ring->started);

	/* Status: front-end bits plus device bits; error reporting. */
	CHECK_EQ(req_u64(&e, VHOST_USER_SET_STATUS, 0x0f, true, &v), 1);
	CHECK_EQ(v, 0);
	CHECK_EQ(e.st.status, 0x0f);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_STATUS, &v), 1);
	CHECK_EQ(v, 0x0f);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_ERR, 0, e.err, false), 0);
	vhost_vring_report_error(ring);
	CHECK_EQ(efd_read(e.err), 1);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_STATUS, &v), 1);
	CHECK_EQ(v, 0x4f);
	CHECK_EQ(vhost_server_status(e.s), 0x4f);
	CHECK_EQ(req_u64(&e, VHOST_USER_SET_STATUS, 0, false, NULL), 0);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_STATUS, &v), 1);
	CHECK_EQ(v, 0);

	/* Config space. */
	for (int i = 0; i < 256; i++)
		e.st.config[i] = (uint8_t)i;
	vhost_msg_init(&m, VHOST_USER_GET_CONFIG, 12 + 8);
	m.payload.config.offset = 4;
	m.payload.config.size = 8;
	m.payload.config.flags = 0;
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(vhost_msg_check_reply(&r, VHOST_USER_GET_CONFIG, 12 + 8), 0);
	CHECK_EQ(r.payload.config.offset, 4);
	CHECK_EQ(r.payload.config.size, 8);
	CHECK_MEM(r.payload.config.region, e.st.config + 4, 8);
	m.payload.config.offset = 200; /* the stub refuses: empty reply */
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(vhost_msg_check_reply(&r, VHOST_USER_GET_CONFIG, 0), 0);
	vhost_msg_init(&m, VHOST_USER_SET_CONFIG, 12 + 2);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	m.payload.config.offset = 16;
	m.payload.config.size = 2;
	m.payload.config.flags = 0;
	m.payload.config.region[0] = 0xaa;
	m.payload.config.region[1] = 0xbb;
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(r.payload.u64, 0);
	CHECK_EQ(e.st.config[16], 0xaa);
	CHECK_EQ(e.st.config[17], 0xbb);
	m.payload.config.offset = 2; /* read-only: NACK, session goes on */
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(r.payload.u64, 1);
	CHECK(vhost_server_connected(e.s));
	CHECK_EQ(vhost_server_stats(e.s)->refused, 2);

	/* Unsupported request with NEED_REPLY: NACK, session goes on. */
	vhost_msg_init(&m, VHOST_USER_SET_LOG_BASE, 16);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	CHECK_EQ(xfer(&e, &m, NULL, 0, &r), 1);
	CHECK_EQ(r.payload.u64, 1);
	CHECK(vhost_server_connected(e.s));

	/* RESET_DEVICE: rings stopped, device reset, rings forgotten. */
	vhost_msg_init(&m, VHOST_USER_RESET_DEVICE, 0);
	CHECK_EQ(xfer(&e, &m, NULL, 0, NULL), 0);
	CHECK_EQ(e.st.resets, 1);
	CHECK_EQ(e.st.running, 0);
	CHECK(vhost_server_vring(e.s, 0) == NULL);
	CHECK(vhost_server_connected(e.s));
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 0);

	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* Without VHOST_USER_F_PROTOCOL_FEATURES rings start enabled; NOFD kick and
 * call: the ring starts with kick_fd -1 and calls go nowhere. */
static void test_legacy_enable_and_nofd(void)
{
	struct env e;
	struct vhost_vring *ring;
	int base = tc_count_fds(0);

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, 0, false);
	setup_ring(&e, 1, 128, 0x20000, -1, -1);
	ring = vhost_server_vring(e.s, 1);
	REQUIRE(ring);
	CHECK(ring->enabled);
	CHECK(ring->started);
	CHECK_EQ(ring->kick_fd, -1);
	CHECK_EQ(ring->call_fd, -1);
	vhost_vring_call(ring);
	CHECK_EQ(vhost_server_stats(e.s)->calls, 0);

	/* The client goes away: ring stopped, reset, disconnected. */
	close(e.c);
	e.c = -1;
	pump_connected(&e, false);
	CHECK(!vhost_server_connected(e.s));
	CHECK_EQ(e.st.stopped, 1);
	CHECK_EQ(e.st.resets, 1);
	CHECK_EQ(e.st.disconnected, 1);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 0);
	CHECK(vhost_server_vring(e.s, 1) == NULL);
	CHECK_EQ(vhost_server_mem(e.s)->nregions, 0);
	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* A bad message closes the session cleanly; the next front-end is served. A
 * second front-end waits in the backlog meanwhile. */
static void test_bad_message_reconnect(void)
{
	struct env e;
	struct vhost_user_msg m, r;
	uint64_t v;
	int c2, base = tc_count_fds(0);

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	CHECK_EQ(e.st.running, 1);

	/* Waiting second client: not accepted while the first is connected. */
	c2 = client_connect(e.path);
	CHECK(c2 >= 0);
	loop_run_once(e.l, 0);
	CHECK_EQ(vhost_server_stats(e.s)->connections, 1);

	/* Ring size not a power of two, with NEED_REPLY: NACK then close. */
	vhost_msg_init(&m, VHOST_USER_SET_VRING_NUM, 8);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	m.payload.state.index = 0;
	m.payload.state.num = 100;
	CHECK_EQ(vhost_msg_send(e.c, &m, NULL, 0, 1000), 0);
	pump_connected(&e, false);
	CHECK_EQ(vhost_msg_recv(e.c, &r, NULL, NULL, 1000), 0);
	CHECK_EQ(vhost_msg_check_reply(&r, VHOST_USER_SET_VRING_NUM, 8), 0);
	CHECK_EQ(r.payload.u64, 1);
	CHECK_EQ(vhost_msg_recv(e.c, &r, NULL, NULL, 1000), -ECONNRESET);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 1);
	CHECK_EQ(e.st.running, 0);
	CHECK_EQ(e.st.resets, 1);
	CHECK_EQ(e.st.disconnected, 1);
	close(e.c);

	/* The waiting client is accepted now and gets a full session. */
	e.c = c2;
	pump_connected(&e, true);
	CHECK(vhost_server_connected(e.s));
	CHECK_EQ(e.st.connected, 2);
	CHECK_EQ(vhost_server_protocol_features(e.s), 0);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_FEATURES, &v), 1);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	CHECK_EQ(e.st.running, 1);

	/* Unknown request number without NEED_REPLY: closed. */
	vhost_msg_init(&m, 99, 0);
	CHECK_EQ(xfer(&e, &m, NULL, 0, NULL), -ECONNRESET);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 2);
	CHECK_EQ(e.st.running, 0);
	close(e.c);

	/* Oversized payload announced in the header: closed. */
	e.c = client_connect(e.path);
	pump_connected(&e, true);
	vhost_msg_init(&m, VHOST_USER_SET_FEATURES, 8);
	m.hdr.size = 100000;
	CHECK_EQ(write(e.c, &m, 12), 12);
	pump_connected(&e, false);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 3);
	close(e.c);

	/* A partial message does not block the loop; the rest completes it. */
	e.c = client_connect(e.path);
	pump_connected(&e, true);
	vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
	CHECK_EQ(write(e.c, &m, 5), 5);
	CHECK_EQ(loop_run_once(e.l, 0), 0);
	CHECK_EQ(loop_run_once(e.l, 0), 0);
	CHECK(vhost_server_connected(e.s));
	{
		uint64_t before = vhost_server_stats(e.s)->messages;

		CHECK_EQ(write(e.c, (uint8_t *)&m + 5, 7), 7);
		pump_msgs(&e, before + 1);
		CHECK_EQ(vhost_msg_recv(e.c, &r, NULL, NULL, 1000), 0);
		CHECK_EQ(r.payload.u64, STUB_FEATURES | (1ull << 30));
	}

	/* The front-end vanishes before reading a reply: no SIGPIPE. */
	REQUIRE(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(vhost_msg_send(e.c, &m, NULL, 0, 1000), 0);
	close(e.c);
	e.c = -1;
	pump_connected(&e, false);
	CHECK(!vhost_server_connected(e.s));

	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* SET_MEM_TABLE again and REM/ADD_MEM_REG while a ring runs: the ring moves
 * to the new mapping without a stop; removing its memory stops it. Hundreds
 * of regions come and go. */
static void test_mem_changes(void)
{
	struct env e;
	struct vhost_user_msg m;
	struct vhost_vring *ring;
	struct vq_elem elem;
	void *old_desc;
	int many, base = tc_count_fds(0);
	uint64_t v;

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 64, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	ring = vhost_server_vring(e.s, 0);
	REQUIRE(ring && ring->started);
	post_buffer(&e, 0, 64, 3, 16);
	CHECK_EQ(vq_dev_pop(&ring->vq, &elem), 1);

	/* Same table again: ring rebound, not stopped; the popped buffer stays
	 * mapped (graveyard). */
	old_desc = ring->vq.desc;
	CHECK_EQ(req_mem_table(&e, true), 1);
	CHECK(ring->started);
	CHECK_EQ(e.st.stopped, 0);
	CHECK(ring->vq.desc != old_desc);
	CHECK(!vhost_mem_region_dead(ring->held[0]));
	e.mem[BUF_OFF + 3 * 256] = 0x77;
	CHECK_EQ(((uint8_t *)elem.iov[0].iov_base)[0], 0x77);
	vq_dev_push(&ring->vq, elem.head, 0);
	CHECK_EQ(((struct vring_used *)(e.mem + USED_OFF))->idx, 1);
	CHECK(e.st.mem_changed >= 2);

	/* Hundreds of small regions from one memfd, added and removed twice. */
	{
		int fd = memfd_create("vs-many", MFD_CLOEXEC);
		uint64_t slots = 0;

		REQUIRE(fd >= 0 && ftruncate(fd, 512 * 4096) == 0);
		CHECK_EQ(req_get(&e, VHOST_USER_GET_MAX_MEM_SLOTS, &slots), 1);
		many = (int)slots - 1;
		for (int round = 0; round < 2; round++) {
			for (int i = 0; i < many; i++) {
				vhost_msg_init(&m, VHOST_USER_ADD_MEM_REG, 40);
				m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
				m.payload.mem_reg.padding = 0;
				m.payload.mem_reg.region.guest_phys_addr = 0x100000000ull + i * 0x2000ull;
				m.payload.mem_reg.region.memory_size = 4096;
				m.payload.mem_reg.region.userspace_addr = 0x500000000ull + i * 0x2000ull;
				m.payload.mem_reg.region.mmap_offset = (uint64_t)i * 4096;
				{
					struct vhost_user_msg r;

					if (xfer(&e, &m, &fd, 1, &r) != 1 || r.payload.u64 != 0) {
						CHECK(!"ADD_MEM_REG failed");
						break;
					}
				}
			}
			CHECK_EQ(vhost_server_mem(e.s)->nregions, (unsigned)many + 1);
			/* Table full: one more is refused and closes... only checked
			 * on the unbound server (test_validation). */
			for (int i = 0; i < many; i++) {
				struct vhost_user_msg r;

				vhost_msg_init(&m, VHOST_USER_REM_MEM_REG, 40);
				m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
				m.payload.mem_reg.region.guest_phys_addr = 0x100000000ull + i * 0x2000ull;
				m.payload.mem_reg.region.memory_size = 4096;
				m.payload.mem_reg.region.userspace_addr = 0x500000000ull + i * 0x2000ull;
				m.payload.mem_reg.region.mmap_offset = 0;
				/* Every other one with a stray fd (old QEMU does that). */
				if (xfer(&e, &m, (i & 1) ? &fd : NULL, i & 1, &r) != 1 ||
				    r.payload.u64 != 0) {
					CHECK(!"REM_MEM_REG failed");
					break;
				}
			}
			CHECK_EQ(vhost_server_mem(e.s)->nregions, 1);
		}
		close(fd);
	}
	CHECK(ring->started);
	CHECK_EQ(e.st.stopped, 0);

	/* Remove the ring's own region: the ring stops. */
	vhost_msg_init(&m, VHOST_USER_REM_MEM_REG, 40);
	m.payload.mem_reg.region.guest_phys_addr = MEM_GPA;
	m.payload.mem_reg.region.memory_size = MEM_SIZE;
	m.payload.mem_reg.region.userspace_addr = uva(&e, 0);
	m.payload.mem_reg.region.mmap_offset = 0;
	CHECK_EQ(xfer(&e, &m, NULL, 0, NULL), 0);
	CHECK(!ring->started);
	CHECK_EQ(e.st.stopped, 1);
	CHECK_EQ(vhost_server_mem(e.s)->nregions, 0);
	/* Memory back: the ring starts again by itself. */
	vhost_msg_init(&m, VHOST_USER_ADD_MEM_REG, 40);
	m.payload.mem_reg.region.guest_phys_addr = MEM_GPA;
	m.payload.mem_reg.region.memory_size = MEM_SIZE;
	m.payload.mem_reg.region.userspace_addr = uva(&e, 0);
	m.payload.mem_reg.region.mmap_offset = 0;
	CHECK_EQ(xfer(&e, &m, &e.memfd, 1, NULL), 0);
	CHECK(ring->started);
	CHECK_EQ(ring->vq.last_avail_idx, 1);
	CHECK_EQ(req_get(&e, VHOST_USER_GET_FEATURES, &v), 1);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 0);

	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* Rings above 255: with the wide index they get kick fds; without it they
 * start when their addresses are set and run polled. Lazy slot allocation up
 * to the maximum ring count. */
static void test_wide_index(void)
{
	struct env e;
	struct vhost_vring *ring;
	struct vhost_user_msg m;
	const uint32_t hi = VHOST_SERVER_MAX_RINGS - 1;
	int base = tc_count_fds(0);

	REQUIRE(env_init(&e, VHOST_SERVER_MAX_RINGS) == 0);
	negotiate(&e, PF_STD | PF_WIDE, true);
	CHECK(vhost_server_protocol_features(e.s) & PF_WIDE);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, hi, 16, NULL), 0);
	CHECK_EQ(req_addr(&e, hi, 0x80000), 0);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, hi, 1, NULL), 0);
	ring = vhost_server_vring(e.s, hi);
	REQUIRE(ring);
	CHECK(!ring->started); /* waits for its kick */
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, hi, e.call, true), 0);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_KICK, hi, e.kick, true), 0);
	CHECK(ring->started);
	CHECK(ring->kick_fd >= 0);
	CHECK(ring->call_fd >= 0);
	efd_kick(e.kick);
	loop_run_once(e.l, 2000000000ll);
	CHECK_EQ(e.st.kicks, 1);
	CHECK_EQ(e.st.last_kick_idx, hi);
	vhost_vring_call(ring);
	CHECK_EQ(efd_read(e.call), 1);
	/* Rings >= 256 take fds only once they have a size and addresses:
	 * refused (NACK when asked for an ack), nothing created. */
	vhost_msg_init(&m, VHOST_USER_SET_VRING_CALL, 8);
	m.payload.u64 = (300 & 0xff) | (1ull << 32);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	{
		struct vhost_user_msg r;

		CHECK_EQ(xfer(&e, &m, &e.call, 1, &r), 1);
		CHECK_EQ(r.payload.u64, 1);
	}
	CHECK_EQ(vhost_server_stats(e.s)->fds_refused, 1);
	CHECK(vhost_server_vring(e.s, 300) == NULL);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, 300, 16, NULL), 0);
	CHECK_EQ(req_addr(&e, 300, 0x80000), 0);
	/* 300 = 0x12c: low byte 0x2c, high part 1 in bits 32+. */
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 300, e.call, true), 0);
	CHECK(vhost_server_vring(e.s, 300) && vhost_server_vring(e.s, 300)->call_fd >= 0);
	CHECK(vhost_server_vring(e.s, 0x2c) == NULL);
	CHECK(vhost_server_vring(e.s, 5) == NULL);
	/* Index beyond the device: closed. */
	vhost_msg_init(&m, VHOST_USER_SET_VRING_CALL, 8);
	m.payload.u64 = VHOST_USER_VRING_NOFD_MASK | (0xffffull << 32);
	CHECK_EQ(xfer(&e, &m, NULL, 0, NULL), -ECONNRESET);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 1);
	close(e.c);

	/* Without the extension. */
	e.c = client_connect(e.path);
	pump_connected(&e, true);
	negotiate(&e, PF_STD, true);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, 700, 16, NULL), 0);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 700, 1, NULL), 0);
	CHECK_EQ(req_addr(&e, 700, 0x80000), 0);
	ring = vhost_server_vring(e.s, 700);
	REQUIRE(ring);
	CHECK(ring->started);
	CHECK_EQ(ring->kick_fd, -1);
	CHECK_EQ(ring->call_fd, -1);
	CHECK_EQ(e.st.last_started, ring);
	/* GET_VRING_BASE stops it; new addresses restart it. */
	CHECK_EQ(req_state(&e, VHOST_USER_GET_VRING_BASE, 700, 0, NULL), 1);
	CHECK(!ring->started);
	CHECK_EQ(req_addr(&e, 700, 0x80000), 0);
	CHECK(ring->started);
	/* Standard encoding of the ring index: low byte only. The wide bits
	 * are reserved: closed. */
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 700 & 0xff, e.call, false), 0);
	CHECK(vhost_server_vring(e.s, 700 & 0xff)->call_fd >= 0);
	CHECK_EQ(ring->call_fd, -1);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_KICK, 700, -1, true), -ECONNRESET);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 2);

	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* The device drops the session from inside its callbacks. */
static void test_device_disconnects(void)
{
	struct env e;
	int base = tc_count_fds(0);

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	e.st.disconnect_on_kick = true;
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	efd_kick(e.kick);
	pump_connected(&e, false);
	CHECK(!vhost_server_connected(e.s));
	CHECK_EQ(e.st.running, 0);
	CHECK_EQ(e.st.disconnected, 1);
	close(e.c);

	e.st.disconnect_on_kick = false;
	e.st.disconnect_on_start = true;
	e.c = client_connect(e.path);
	pump_connected(&e, true);
	negotiate(&e, PF_STD, true);
	setup_ring(&e, 0, 256, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), -ECONNRESET);
	CHECK(!vhost_server_connected(e.s));
	CHECK_EQ(e.st.running, 0);
	CHECK_EQ(e.st.disconnected, 2);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 0);
	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

static void test_socket_file(void)
{
	struct vhost_dev_ops ops;
	struct loop *l = loop_new();
	struct vhost_server *s1, *s2;
	char dir[64] = "/tmp/vrdma-vs-XXXXXX", path[128];
	struct stub st;
	int fd, base = tc_count_fds(0);

	REQUIRE(l && mkdtemp(dir));
	memset(&st, 0, sizeof(st));
	stub_ops(&ops, 3);
	snprintf(path, sizeof(path), "%s/sock", dir);

	s1 = vhost_server_new(l, path, &ops, &st);
	CHECK(s1 != NULL);
	CHECK(strcmp(vhost_server_path(s1), path) == 0);
	/* A live socket is not stolen. */
	s2 = vhost_server_new(l, path, &ops, &st);
	CHECK(s2 == NULL && errno == EADDRINUSE);
	vhost_server_free(s1);
	CHECK(access(path, F_OK) != 0);

	/* A stale socket file is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		strcpy(sa.sun_path, path);
		CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	close(fd);
	s1 = vhost_server_new(l, path, &ops, &st);
	CHECK(s1 != NULL);
	vhost_server_free(s1);

	/* A regular file is not. */
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	s1 = vhost_server_new(l, path, &ops, &st);
	CHECK(s1 == NULL && errno == EEXIST);
	unlink(path);

	/* Bad arguments. */
	ops.max_rings = 0;
	CHECK(vhost_server_new(l, path, &ops, &st) == NULL && errno == EINVAL);
	ops.max_rings = VHOST_SERVER_MAX_RINGS + 1;
	CHECK(vhost_server_new(l, path, &ops, &st) == NULL && errno == EINVAL);
	ops.max_rings = 3;
	CHECK(vhost_server_new(NULL, path, &ops, &st) == NULL && errno == EINVAL);
	{
		char longp[200];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[0] = '/';
		longp[sizeof(longp) - 1] = 0;
		CHECK(vhost_server_new(l, longp, &ops, &st) == NULL && errno == ENAMETOOLONG);
	}
	rmdir(dir);
	CHECK_EQ(tc_count_fds(0), base);
	loop_free(l);
}

/* ---- validation: every bad message through vhost_server_handle_msg ---- */

struct vcase {
	const char *name;
	void (*make)(struct vhost_user_msg *m, int *fds, int *nfds, int memfd);
};

static void mk_unknown(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, 1000, 0);
	*nfds = 0;
}

static void mk_bad_size(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_FEATURES, 4);
	*nfds = 0;
}

static void mk_extra_fd(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_FEATURES, 8);
	m->payload.u64 = 0;
	fds[0] = eventfd(0, EFD_CLOEXEC);
	*nfds = 1;
}

static void mk_state(struct vhost_user_msg *m, uint32_t req, uint32_t idx, uint32_t num)
{
	vhost_msg_init(m, req, 8);
	m->payload.state.index = idx;
	m->payload.state.num = num;
}

static void mk_idx_range(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_NUM, 3, 256);
	*nfds = 0;
}

static void mk_num_pow2(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_NUM, 0, 255);
	*nfds = 0;
}

static void mk_num_big(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_NUM, 0, 65536);
	*nfds = 0;
}

static void mk_num_zero(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_NUM, 0, 0);
	*nfds = 0;
}

static void mk_base_big(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_BASE, 0, 0x10000);
	*nfds = 0;
}

static void mk_get_base_range(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_GET_VRING_BASE, 7, 0);
	*nfds = 0;
}

static void mk_enable_2(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_state(m, VHOST_USER_SET_VRING_ENABLE, 0, 2);
	*nfds = 0;
}

static void mk_addr(struct vhost_user_msg *m, uint32_t flags, uint64_t desc)
{
	vhost_msg_init(m, VHOST_USER_SET_VRING_ADDR, 40);
	memset(&m->payload.addr, 0, sizeof(m->payload.addr));
	m->payload.addr.flags = flags;
	m->payload.addr.desc_user_addr = desc;
	m->payload.addr.avail_user_addr = 0x2000;
	m->payload.addr.used_user_addr = 0x3000;
}

static void mk_addr_misaligned(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_addr(m, 0, 0x1008);
	*nfds = 0;
}

static void mk_addr_log(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_addr(m, 1, 0x1000);
	*nfds = 0;
}

static void mk_addr_flags(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_addr(m, 4, 0x1000);
	*nfds = 0;
}

static void mk_addr_range(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_addr(m, 0, 0x1000);
	m->payload.addr.index = 100;
	*nfds = 0;
}

static void mk_region(struct vhost_user_msg *m, uint32_t req, uint64_t gpa, uint64_t size,
		      uint64_t off)
{
	vhost_msg_init(m, req, 40);
	m->payload.mem_reg.padding = 0;
	m->payload.mem_reg.region.guest_phys_addr = gpa;
	m->payload.mem_reg.region.memory_size = size;
	m->payload.mem_reg.region.userspace_addr = 0x7000000000ull + gpa;
	m->payload.mem_reg.region.mmap_offset = off;
}

static void mk_overlap(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	mk_region(m, VHOST_USER_ADD_MEM_REG, 0x1000, 0x1000, 0); /* table has 0..64K */
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_mmap_fail(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)memfd;
	mk_region(m, VHOST_USER_ADD_MEM_REG, 0x100000, 0x1000, 0);
	fds[0] = eventfd(0, EFD_CLOEXEC); /* cannot be mapped */
	*nfds = 1;
}

static void mk_short_file(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	mk_region(m, VHOST_USER_ADD_MEM_REG, 0x100000, 0x100000, 0); /* file is 64K */
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_region_wrap(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	mk_region(m, VHOST_USER_ADD_MEM_REG, 0xfffffffffffff000ull, 0x2000, 0);
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_region_zero(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	mk_region(m, VHOST_USER_ADD_MEM_REG, 0x100000, 0, 0);
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_rem_missing(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	mk_region(m, VHOST_USER_REM_MEM_REG, 0x200000, 0x1000, 0);
	*nfds = 0;
}

static void mk_table_overlap(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	vhost_msg_init(m, VHOST_USER_SET_MEM_TABLE, 8 + 2 * 32);
	m->payload.memory.nregions = 2;
	for (int i = 0; i < 2; i++) {
		m->payload.memory.regions[i].guest_phys_addr = 0x1000 * (uint64_t)i;
		m->payload.memory.regions[i].memory_size = 0x2000;
		m->payload.memory.regions[i].userspace_addr = 0x10000 * (uint64_t)i;
		m->payload.memory.regions[i].mmap_offset = 0;
		fds[i] = dup(memfd);
	}
	*nfds = 2;
}

static void mk_table_fds(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	mk_table_overlap(m, fds, nfds, memfd);
	close(fds[1]);
	*nfds = 1;
}

static void mk_kick_reserved(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_VRING_KICK, 8);
	m->payload.u64 = VHOST_USER_VRING_NOFD_MASK | (1ull << 32);
	*nfds = 0;
}

static void mk_kick_pipe(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	int p[2];

	(void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_VRING_KICK, 8);
	m->payload.u64 = 0;
	if (pipe2(p, O_CLOEXEC) == 0) {
		close(p[0]);
		fds[0] = p[1];
	}
	*nfds = 1;
}

static void mk_call_memfd(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	vhost_msg_init(m, VHOST_USER_SET_VRING_CALL, 8);
	m->payload.u64 = 1;
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_kick_nofd_with_fd(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_VRING_KICK, 8);
	m->payload.u64 = VHOST_USER_VRING_NOFD_MASK;
	fds[0] = eventfd(0, EFD_CLOEXEC);
	*nfds = 1;
}

static void mk_config_range(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_GET_CONFIG, 12 + 16);
	m->payload.config.offset = 250;
	m->payload.config.size = 16;
	*nfds = 0;
}

static void mk_config_flags(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_CONFIG, 12 + 4);
	m->payload.config.offset = 16;
	m->payload.config.size = 4;
	m->payload.config.flags = 7;
	*nfds = 0;
}

static void mk_status_big(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_STATUS, 8);
	m->payload.u64 = 0x100;
	*nfds = 0;
}

static void mk_pf_unknown(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_PROTOCOL_FEATURES, 8);
	m->payload.u64 = 1ull << VHOST_USER_PROTOCOL_F_LOG_SHMFD;
	*nfds = 0;
}

static void mk_features_unknown(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_SET_FEATURES, 8);
	m->payload.u64 = 1ull << 26; /* VHOST_F_LOG_ALL, not offered */
	*nfds = 0;
}

static void mk_log_base(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	vhost_msg_init(m, VHOST_USER_SET_LOG_BASE, 16);
	fds[0] = dup(memfd);
	*nfds = 1;
}

static void mk_reply_flag(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_GET_FEATURES, 0);
	m->hdr.flags |= VHOST_USER_REPLY_MASK;
	*nfds = 0;
}

static void mk_iotlb(struct vhost_user_msg *m, int *fds, int *nfds, int memfd)
{
	(void)fds; (void)memfd;
	vhost_msg_init(m, VHOST_USER_IOTLB_MSG, 24);
	m->hdr.flags |= VHOST_USER_NEED_REPLY_MASK; /* has its own reply: closed */
	*nfds = 0;
}

static const struct vcase vcases[] = {
	{ "unknown request", mk_unknown },
	{ "payload size", mk_bad_size },
	{ "unexpected fd", mk_extra_fd },
	{ "ring index", mk_idx_range },
	{ "num not pow2", mk_num_pow2 },
	{ "num > 32768", mk_num_big },
	{ "num 0", mk_num_zero },
	{ "base > 0xffff", mk_base_big },
	{ "GET_VRING_BASE index", mk_get_base_range },
	{ "enable 2", mk_enable_2 },
	{ "misaligned desc", mk_addr_misaligned },
	{ "VHOST_VRING_F_LOG", mk_addr_log },
	{ "unknown addr flags", mk_addr_flags },
	{ "addr ring index", mk_addr_range },
	{ "region overlap", mk_overlap },
	{ "mmap fails", mk_mmap_fail },
	{ "file shorter than region", mk_short_file },
	{ "region wraps", mk_region_wrap },
	{ "region size 0", mk_region_zero },
	{ "REM_MEM_REG missing", mk_rem_missing },
	{ "SET_MEM_TABLE overlap", mk_table_overlap },
	{ "SET_MEM_TABLE fd count", mk_table_fds },
	{ "kick reserved bits", mk_kick_reserved },
	{ "kick fd is a pipe", mk_kick_pipe },
	{ "call fd is a memfd", mk_call_memfd },
	{ "no-fd kick with fd", mk_kick_nofd_with_fd },
	{ "config range", mk_config_range },
	{ "config flags", mk_config_flags },
	{ "status > 0xff", mk_status_big },
	{ "protocol feature not offered", mk_pf_unknown },
	{ "feature not offered", mk_features_unknown },
	{ "SET_LOG_BASE without NEED_REPLY", mk_log_base },
	{ "reply flag in request", mk_reply_flag },
	{ "IOTLB_MSG", mk_iotlb },
};

static void test_validation(void)
{
	struct vhost_dev_ops ops;
	struct vhost_server *s;
	struct vhost_user_msg m;
	struct stub st;
	int memfd, base;
	uint64_t bad = 0;

	memfd = memfd_create("vs-val", MFD_CLOEXEC);
	REQUIRE(memfd >= 0 && ftruncate(memfd, 0x10000) == 0);
	base = tc_count_fds(0);
	memset(&st, 0, sizeof(st));
	stub_ops(&ops, 3);
	s = vhost_server_new(NULL, NULL, &ops, &st);
	REQUIRE(s);
	st.s = s;
	CHECK(!vhost_server_connected(s));
	CHECK(strcmp(vhost_server_path(s), "") == 0);
	CHECK_EQ(vhost_server_attach_fd(s, dup(memfd)), -EINVAL);

	for (size_t i = 0; i < ARRAY_SIZE(vcases); i++) {
		int fds[VHOST_USER_MAX_FDS], nfds = 0, ret;

		/* A fresh session with 64K of memory at gpa 0 and a ring 0
		 * with a size. */
		vhost_msg_init(&m, VHOST_USER_SET_PROTOCOL_FEATURES, 8);
		m.payload.u64 = PF_STD;
		CHECK_EQ(vhost_server_handle_msg(s, &m, NULL, 0), 0);
		vhost_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 8 + 32);
		m.payload.memory.nregions = 1;
		m.payload.memory.regions[0].guest_phys_addr = 0;
		m.payload.memory.regions[0].memory_size = 0x10000;
		m.payload.memory.regions[0].userspace_addr = 0x7000000000ull;
		m.payload.memory.regions[0].mmap_offset = 0;
		fds[0] = dup(memfd);
		CHECK_EQ(vhost_server_handle_msg(s, &m, fds, 1), 0);
		mk_state(&m, VHOST_USER_SET_VRING_NUM, 0, 64);
		CHECK_EQ(vhost_server_handle_msg(s, &m, NULL, 0), 0);
		CHECK(vhost_server_connected(s));

		memset(&m, 0, sizeof(m));
		for (int k = 0; k < VHOST_USER_MAX_FDS; k++)
			fds[k] = -1;
		vcases[i].make(&m, fds, &nfds, memfd);
		ret = vhost_server_handle_msg(s, &m, fds, nfds);
		if (ret >= 0)
			printf("#   case '%s' accepted (%d)\n", vcases[i].name, ret);
		CHECK(ret < 0);
		bad++;
		CHECK_EQ(vhost_server_stats(s)->bad_messages, bad);
		CHECK(!vhost_server_connected(s));
		CHECK(vhost_server_vring(s, 0) == NULL);
		CHECK_EQ(vhost_server_mem(s)->nregions, 0);
		CHECK_EQ(tc_count_fds(0), base);
	}
	CHECK_EQ(st.disconnected, (int)ARRAY_SIZE(vcases));

	/* Refusals that keep the session: NEED_REPLY on unsupported requests,
	 * a bad MTU, the device refusing features. */
	{
		int fd = dup(memfd), ret;

		vhost_msg_init(&m, VHOST_USER_SET_LOG_FD, 0);
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		ret = vhost_server_handle_msg(s, &m, &fd, 1);
		CHECK_EQ(ret, 1);
		CHECK_EQ(m.payload.u64, 1);
		CHECK_EQ(m.hdr.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
		vhost_msg_init(&m, VHOST_USER_NET_SET_MTU, 8);
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		m.payload.u64 = 10;
		CHECK_EQ(vhost_server_handle_msg(s, &m, NULL, 0), 1);
		CHECK_EQ(m.payload.u64, 1);
		st.refuse_features = true;
		vhost_msg_init(&m, VHOST_USER_SET_FEATURES, 8);
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		m.payload.u64 = 1;
		CHECK_EQ(vhost_server_handle_msg(s, &m, NULL, 0), 1);
		CHECK_EQ(m.payload.u64, 1);
		CHECK(vhost_server_connected(s));
		/* Without NEED_REPLY the front-end cannot learn: closed. */
		vhost_msg_init(&m, VHOST_USER_SET_FEATURES, 8);
		m.payload.u64 = 1;
		CHECK(vhost_server_handle_msg(s, &m, NULL, 0) < 0);
		CHECK(!vhost_server_connected(s));
		st.refuse_features = false;
		CHECK_EQ(vhost_server_stats(s)->refused, 3);
	}

	/* Memory table limit: GET_MAX_MEM_SLOTS regions fit, one more not. */
	{
		uint64_t slots;
		int ret = 0;

		vhost_msg_init(&m, VHOST_USER_GET_MAX_MEM_SLOTS, 0);
		CHECK_EQ(vhost_server_handle_msg(s, &m, NULL, 0), 1);
		slots = m.payload.u64;
		for (uint64_t i = 0; i <= slots && ret >= 0; i++) {
			int fd = dup(memfd);

			mk_region(&m, VHOST_USER_ADD_MEM_REG, 0x100000 * i, 0x1000, 0);
			ret = vhost_server_handle_msg(s, &m, &fd, 1);
			if (i < slots)
				CHECK_EQ(ret, 0);
		}
		CHECK(ret < 0);
		CHECK_EQ(tc_count_fds(0), base);
	}

	/* More fds than a message can carry, or fds without an array. */
	{
		int fds[VHOST_USER_MAX_FDS + 1];

		for (int k = 0; k <= VHOST_USER_MAX_FDS; k++)
			fds[k] = eventfd(0, EFD_CLOEXEC);
		vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
		CHECK(vhost_server_handle_msg(s, &m, fds, VHOST_USER_MAX_FDS + 1) < 0);
		vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
		CHECK(vhost_server_handle_msg(s, &m, NULL, 2) < 0);
		CHECK_EQ(tc_count_fds(0), base);
	}

	vhost_server_free(s);
	close(memfd);
}


/* ---- hardening ---- */

/* ADD_MEM_REG / REM_MEM_REG of [gpa, gpa + size) at client address uva_. */
static void mk_mem_reg(struct vhost_user_msg *m, uint32_t req, uint64_t gpa, uint64_t size,
		       uint64_t uva_, uint64_t off, bool ack)
{
	vhost_msg_init(m, req, 40);
	m->payload.mem_reg.padding = 0;
	m->payload.mem_reg.region.guest_phys_addr = gpa;
	m->payload.mem_reg.region.memory_size = size;
	m->payload.mem_reg.region.userspace_addr = uva_;
	m->payload.mem_reg.region.mmap_offset = off;
	if (ack)
		m->hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
}

/* REPLY_ACK value of a request with NEED_REPLY, -1 if none came. */
static int mem_reg_ack(struct env *e, uint32_t req, uint64_t gpa, uint64_t size,
		       uint64_t uva_, uint64_t off, int fd)
{
	struct vhost_user_msg m, r;

	mk_mem_reg(&m, req, gpa, size, uva_, off, true);
	if (xfer(e, &m, fd >= 0 ? &fd : NULL, fd >= 0, &r) != 1)
		return -1;
	return (int)r.payload.u64;
}

/*
 * C1: a front-end truncates memory it shared. A sealable memfd is sealed by
 * the server, so the shrink fails; an unsealable one faults under the device:
 * the access completes (reads zeros), that session is closed and counted, the
 * socket takes the next front-end, and a device on the same loop keeps
 * working throughout.
 */
static void test_truncated_memory(void)
{
	struct env a, b;
	struct vhost_vring *ra, *rb;
	unsigned guarded = vhost_mem_guarded_regions();
	int base = tc_count_fds(0), seals;

	REQUIRE(env_init(&a, 3) == 0);
	REQUIRE(env_init_on(&b, 3, a.l, true) == 0);
	negotiate(&a, PF_STD, true);
	negotiate(&b, PF_STD, true);

	/* b's memfd allows sealing: the server sealed it against shrinking. */
	seals = fcntl(b.memfd, F_GET_SEALS);
	CHECK(seals >= 0 && (seals & F_SEAL_SHRINK));
	CHECK(vhost_server_mem(b.s)->regions[0]->sealed);
	CHECK_EQ(vhost_server_mem(b.s)->regions[0]->guard, -1);
	errno = 0;
	CHECK_EQ(ftruncate(b.memfd, MEM_SIZE / 2), -1);
	CHECK_EQ(errno, EPERM);
	/* a's cannot be sealed (no MFD_ALLOW_SEALING): guarded instead. */
	CHECK(!vhost_server_mem(a.s)->regions[0]->sealed);
	CHECK(vhost_server_mem(a.s)->regions[0]->guard >= 0);
	CHECK_EQ(vhost_mem_guarded_regions(), guarded + 1);

	setup_ring(&a, 0, 64, 0, a.kick, a.call);
	CHECK_EQ(req_state(&a, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	setup_ring(&b, 0, 64, 0, b.kick, b.call);
	CHECK_EQ(req_state(&b, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	ra = vhost_server_vring(a.s, 0);
	rb = vhost_server_vring(b.s, 0);
	REQUIRE(ra && ra->started && rb && rb->started);
	a.st.pop_on_kick = b.st.pop_on_kick = true;
	a.st.pop_rc = b.st.pop_rc = -100;

	/* a's front-end takes the memory away under the running ring (and
	 * must not touch its own mapping any more). */
	REQUIRE(ftruncate(a.memfd, 0) == 0);
	efd_kick(a.kick);
	pump_connected(&a, false);
	CHECK_EQ(a.st.kicks, 1);
	CHECK_EQ(a.st.pop_rc, 0); /* zeros: an empty ring */
	CHECK(!vhost_server_connected(a.s));
	CHECK_EQ(vhost_server_stats(a.s)->mem_faults, 1);
	CHECK_EQ(a.st.disconnected, 1);
	CHECK_EQ(vhost_mem_guarded_regions(), guarded);

	/* b never noticed. */
	CHECK(vhost_server_connected(b.s));
	CHECK_EQ(vhost_server_stats(b.s)->mem_faults, 0);
	post_buffer(&b, 0, 64, 2, 16);
	efd_kick(b.kick);
	for (int i = 0; i < 100 && b.st.kicks == 0; i++)
		loop_run_once(b.l, 2000000000ll);
	CHECK_EQ(b.st.kicks, 1);
	CHECK_EQ(b.st.pop_rc, 1);
	CHECK_EQ(b.st.elem.head, 2);
	vq_dev_push(&rb->vq, b.st.elem.head, 0);
	CHECK_EQ(((struct vring_used *)(b.mem + USED_OFF))->idx, 1);

	/* a's socket serves the next front-end. */
	close(a.c);
	a.c = client_connect(a.path);
	pump_connected(&a, true);
	CHECK(vhost_server_connected(a.s));
	CHECK_EQ(vhost_server_stats(a.s)->mem_faults, 1);

	env_fini(&b);
	env_fini(&a);
	CHECK_EQ(tc_count_fds(0), base);
}

/* L1: kick/call/err fds count against the session budget. */
static void test_fd_budget(void)
{
	struct env e;
	struct vhost_user_msg m, r;
	struct vhost_vring *ring;
	int base = tc_count_fds(0);

	REQUIRE(env_init(&e, 3) == 0);
	vhost_server_set_max_fds(e.s, 4);
	negotiate(&e, PF_STD, true);
	/* ring 0: call + kick, ring 1: call + err: the whole budget. */
	setup_ring(&e, 0, 64, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 1, e.call, false), 0);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_ERR, 1, e.err, false), 0);
	/* Replacing an fd held does not need more. */
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 0, e.call, false), 0);
	CHECK_EQ(vhost_server_stats(e.s)->fds_refused, 0);

	/* A fifth call fd: refused, with a NACK since an ack was asked for. */
	vhost_msg_init(&m, VHOST_USER_SET_VRING_CALL, 8);
	m.payload.u64 = 2;
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	CHECK_EQ(xfer(&e, &m, &e.call, 1, &r), 1);
	CHECK_EQ(r.payload.u64, 1);
	CHECK_EQ(vhost_server_stats(e.s)->fds_refused, 1);
	CHECK(!vhost_server_vring(e.s, 2) || vhost_server_vring(e.s, 2)->call_fd == -1);

	/* A fifth kick fd: closed, the ring runs polled. */
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, 2, 64, NULL), 0);
	CHECK_EQ(req_addr(&e, 2, 0x20000), 0);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 2, 1, NULL), 0);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_KICK, 2, e.kick, false), 0);
	ring = vhost_server_vring(e.s, 2);
	REQUIRE(ring);
	CHECK(ring->started);
	CHECK_EQ(ring->kick_fd, -1);
	CHECK_EQ(vhost_server_stats(e.s)->fds_refused, 2);
	CHECK(vhost_server_connected(e.s));

	/* GET_VRING_BASE gives ring 0's kick fd back: room for one. */
	CHECK_EQ(req_state(&e, VHOST_USER_GET_VRING_BASE, 0, 0, NULL), 1);
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_CALL, 2, e.call, false), 0);
	CHECK(ring->call_fd >= 0);
	/* Without an ack, a refused call fd ends the session. */
	CHECK_EQ(req_vring_fd(&e, VHOST_USER_SET_VRING_ERR, 2, e.err, false), -ECONNRESET);
	CHECK_EQ(vhost_server_stats(e.s)->fds_refused, 3);

	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* L1: accept() out of fds does not spin; the socket is retried later. */
static void test_accept_out_of_fds(void)
{
	static int fill[512];
	struct rlimit old, low;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct env e;
	int nfill = 0, c2, base = tc_count_fds(0), rc;
	uint64_t errs;

	REQUIRE(env_init(&e, 3) == 0);
	close(e.c);
	e.c = -1;
	pump_connected(&e, false);
	c2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(c2 >= 0);
	REQUIRE(strlen(e.path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, e.path, strlen(e.path) + 1);

	/* Use up every fd below a lowered limit. */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = 256;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	while (nfill < (int)ARRAY_SIZE(fill)) {
		int fd = dup(0);

		if (fd < 0)
			break;
		fill[nfill++] = fd;
	}
	rc = connect(c2, (struct sockaddr *)&sa, sizeof(sa));
	errs = vhost_server_stats(e.s)->accept_errors;
	for (int i = 0; i < 20; i++)
		loop_run_once(e.l, 0);
	/* One failure, then the socket is not watched: no busy loop. */
	CHECK_EQ(vhost_server_stats(e.s)->accept_errors, errs + 1);
	CHECK(!vhost_server_connected(e.s));

	while (nfill)
		close(fill[--nfill]);
	REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
	CHECK_EQ(rc, 0);
	/* The retry timer watches the socket again: the front-end gets in. */
	pump_connected(&e, true);
	CHECK(vhost_server_connected(e.s));
	CHECK_EQ(vhost_server_stats(e.s)->accept_errors, errs + 1);
	e.c = c2;
	env_fini(&e);
	CHECK_EQ(tc_count_fds(0), base);
}

/* SET_VRING_ADDR for ring idx with its parts packed at client address at. */
static int req_addr_at(struct env *e, uint32_t idx, uint64_t at)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, VHOST_USER_SET_VRING_ADDR, 40);
	memset(&m.payload.addr, 0, sizeof(m.payload.addr));
	m.payload.addr.index = idx;
	m.payload.addr.desc_user_addr = at;
	m.payload.addr.avail_user_addr = at + 256;
	m.payload.addr.used_user_addr = at + 512;
	return xfer(e, &m, NULL, 0, NULL);
}

/*
 * L2: rings waiting for memory are retried only when memory that overlaps
 * them arrives; a wake-up handles fewer messages when they are expensive.
 */
#define WR_RINGS 300
#define WR_FIRST 256
#define WR_SIZE (512u << 10)
static void test_waiting_rings(void)
{
	struct env e;
	struct vhost_user_msg m;
	uint8_t *p2, *p3;
	uint64_t att, before;
	int fd2, fd3, base = tc_count_fds(0), started;

	REQUIRE(env_init(&e, WR_FIRST + WR_RINGS) == 0);
	negotiate(&e, PF_STD, true);
	fd2 = memfd_create("vs-wr2", MFD_CLOEXEC);
	fd3 = memfd_create("vs-wr3", MFD_CLOEXEC);
	REQUIRE(fd2 >= 0 && fd3 >= 0 && ftruncate(fd2, WR_SIZE) == 0 &&
		ftruncate(fd3, 64 * 4096) == 0);
	p2 = mmap(NULL, WR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	p3 = mmap(NULL, 64 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd3, 0);
	REQUIRE(p2 != MAP_FAILED && p3 != MAP_FAILED);

	/* Rings >= 256 without the wide index start on their addresses: all
	 * wait, their memory is not shared yet. */
	for (unsigned i = 0; i < WR_RINGS; i++) {
		CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_NUM, WR_FIRST + i, 16, NULL), 0);
		CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, WR_FIRST + i, 1, NULL), 0);
		CHECK_EQ(req_addr_at(&e, WR_FIRST + i, (uintptr_t)p2 + i * 1024ull), 0);
	}
	CHECK_EQ(e.st.started, 0);
	att = vhost_server_stats(e.s)->ring_start_attempts;
	CHECK_EQ(att, WR_RINGS);

	/* Unrelated memory: nobody is retried. */
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, 0x300000000ull, 4096,
			     (uintptr_t)p3, 0, fd3), 0);
	CHECK_EQ(vhost_server_stats(e.s)->ring_start_attempts, att);
	CHECK_EQ(e.st.started, 0);
	/* Their memory: each is tried once and starts. */
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, 0x200000000ull, WR_SIZE,
			     (uintptr_t)p2, 0, fd2), 0);
	CHECK_EQ(vhost_server_stats(e.s)->ring_start_attempts, att + WR_RINGS);
	CHECK_EQ(e.st.started, WR_RINGS);
	/* Removing unrelated memory touches none; removing theirs stops all,
	 * and giving it back restarts all. */
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, 0x300000000ull, 4096,
			     (uintptr_t)p3, 0, -1), 0);
	CHECK_EQ(e.st.stopped, 0);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, 0x200000000ull, WR_SIZE,
			     (uintptr_t)p2, 0, -1), 0);
	CHECK_EQ(e.st.stopped, WR_RINGS);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, 0x200000000ull, WR_SIZE,
			     (uintptr_t)p2, 0, fd2), 0);
	CHECK_EQ(e.st.started, 2 * WR_RINGS);
	CHECK_EQ(vhost_server_stats(e.s)->ring_start_attempts, att + 2 * WR_RINGS);
	started = e.st.running;
	CHECK_EQ(started, WR_RINGS);

	/* 80 cheap messages in the socket: one wake-up handles 64 of them. */
	for (int i = 0; i < 80; i++) {
		vhost_msg_init(&m, VHOST_USER_GET_QUEUE_NUM, 0);
		REQUIRE(vhost_msg_send(e.c, &m, NULL, 0, 1000) == 0);
	}
	before = vhost_server_stats(e.s)->messages;
	loop_run_once(e.l, 2000000000ll);
	CHECK_EQ(vhost_server_stats(e.s)->messages - before, 64);
	pump_msgs(&e, before + 80);
	for (int i = 0; i < 80; i++) {
		struct vhost_user_msg r;

		CHECK_EQ(vhost_msg_recv(e.c, &r, NULL, NULL, 1000), 0);
	}
	/* 40 that each map a region: fewer per wake-up. */
	for (int i = 0; i < 40; i++) {
		mk_mem_reg(&m, VHOST_USER_ADD_MEM_REG, 0x400000000ull + i * 0x10000ull, 4096,
			   0x600000000ull + i * 0x10000ull, (uint64_t)i * 4096, false);
		REQUIRE(vhost_msg_send(e.c, &m, &fd3, 1, 1000) == 0);
	}
	before = vhost_server_stats(e.s)->messages;
	loop_run_once(e.l, 2000000000ll);
	CHECK(vhost_server_stats(e.s)->messages - before < 40);
	CHECK(vhost_server_stats(e.s)->messages - before > 0);
	pump_msgs(&e, before + 40);
	CHECK_EQ(vhost_server_mem(e.s)->nregions, 2 + 40);
	CHECK_EQ(vhost_server_stats(e.s)->bad_messages, 0);
	CHECK(vhost_server_connected(e.s));

	env_fini(&e);
	munmap(p2, WR_SIZE);
	munmap(p3, 64 * 4096);
	close(fd2);
	close(fd3);
	CHECK_EQ(tc_count_fds(0), base);
}

/*
 * L3/L4: removed regions stay mapped while a popped element is outstanding
 * (graveyard), count against the live + dead budget (ADD_MEM_REG refused
 * beyond it), are released once nothing is outstanding, and a graveyard
 * that cannot hold more ends the session instead of unmapping early.
 */
static void test_graveyard(void)
{
	struct env e;
	struct vhost_mem *mem;
	struct vhost_vring *ring;
	int fd3, base = tc_count_fds(0);
	const uint64_t g = 0x300000000ull, u = 0x700000000ull, step = 0x10000;

	REQUIRE(env_init(&e, 3) == 0);
	negotiate(&e, PF_STD, true);
	mem = vhost_server_mem(e.s);
	fd3 = memfd_create("vs-grave", MFD_CLOEXEC);
	REQUIRE(fd3 >= 0 && ftruncate(fd3, 16 * 4096) == 0);
	setup_ring(&e, 0, 64, 0, e.kick, e.call);
	CHECK_EQ(req_state(&e, VHOST_USER_SET_VRING_ENABLE, 0, 1, NULL), 0);
	ring = vhost_server_vring(e.s, 0);
	REQUIRE(ring && ring->started);

	/* The device pops an element and keeps it. */
	e.st.pop_on_kick = true;
	post_buffer(&e, 0, 64, 3, 16);
	efd_kick(e.kick);
	for (int i = 0; i < 100 && e.st.kicks == 0; i++)
		loop_run_once(e.l, 2000000000ll);
	CHECK_EQ(e.st.pop_rc, 1);

	for (unsigned i = 1; i <= 3; i++)
		CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, g + i * step, 4096,
				     u + i * step, 0, fd3), 0);
	mem->max_regions = 4;
	mem->max_dead = 1;
	/* Removed while the element is out: kept mapped, counted dead. */
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, g + step, 4096, u + step, 0, -1), 0);
	CHECK_EQ(mem->nregions, 3);
	CHECK_EQ(vhost_mem_ndead(mem), 1);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, g + 2 * step, 4096, u + 2 * step,
			     0, -1), 0);
	CHECK_EQ(vhost_mem_ndead(mem), 2);
	/* 2 live + 2 dead = 4 + 1 - 1: one more fits, then refused (NACK). */
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, g + 4 * step, 4096, u + 4 * step,
			     0, fd3), 0);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, g + 5 * step, 4096, u + 5 * step,
			     0, fd3), 1);
	CHECK(vhost_server_connected(e.s));
	CHECK_EQ(mem->nregions, 3);

	/* The element completes: the next change lets the graveyard go. */
	vq_dev_push(&ring->vq, e.st.elem.head, 0);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, g + 3 * step, 4096, u + 3 * step,
			     0, -1), 0);
	CHECK_EQ(vhost_mem_ndead(mem), 0);
	CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, g + 5 * step, 4096, u + 5 * step,
			     0, fd3), 0);

	/* Overflow: another element out, many regions removed, a graveyard
	 * that may not grow: the session ends (nothing unmapped early). */
	e.st.kicks = 0;
	post_buffer(&e, 0, 64, 4, 16);
	efd_kick(e.kick);
	for (int i = 0; i < 100 && e.st.kicks == 0; i++)
		loop_run_once(e.l, 2000000000ll);
	CHECK_EQ(e.st.pop_rc, 1);
	mem->max_regions = 64;
	mem->max_dead = 64;
	for (unsigned i = 6; i <= 40; i++)
		CHECK_EQ(mem_reg_ack(&e, VHOST_USER_ADD_MEM_REG, g + i * step, 4096,
				     u + i * step, 0, fd3), 0);
	for (unsigned i = 6; i <= 21; i++)
		CHECK_EQ(mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, g + i * step, 4096,
				     u + i * step, 0, -1), 0);
	CHECK_EQ(vhost_mem_ndead(mem), 16);
	mem->max_regions = 8;
	mem->max_dead = 8;
	{
		int ack = 0;

		/* Each removal is held (none evicted) until one cannot be. */
		for (unsigned i = 22; i <= 40 && ack == 0; i++) {
			ack = mem_reg_ack(&e, VHOST_USER_REM_MEM_REG, g + i * step, 4096,
					  u + i * step, 0, -1);
			if (ack == 0)
				CHECK_EQ(vhost_mem_ndead(mem), i - 5);
		}
		CHECK_EQ(ack, 1);
	}
	pump_connected(&e, false);
	CHECK(!vhost_server_connected(e.s));
	CHECK_EQ(vhost_server_stats(e.s)->grave_overflows, 1);

	env_fini(&e);
	close(fd3);
	CHECK_EQ(tc_count_fds(0), base);
}

/* A listener with the accept hook hands every connection over at once and
 * has no session; a path-less server adopts one, and check_hangup ends that
 * session as soon as its front-end has closed. */
static int hook_fds[4];
static int hook_n;
static void hook_accept(void *ctx, int fd)
{
	(void)ctx;
	if (hook_n < (int)ARRAY_SIZE(hook_fds))
		hook_fds[hook_n++] = fd;
	else
		close(fd);
}

static void test_accept_hook(void)
{
	struct vhost_dev_ops lops, ops;
	struct vhost_server *s, *p;
	char dir[64] = "/tmp/vrdma-vs-XXXXXX", path[128];
	struct stub st;
	int c[3], base = tc_count_fds(0);
	struct loop *l = loop_new();

	REQUIRE(l && mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	memset(&lops, 0, sizeof(lops));
	lops.max_rings = 1;
	lops.accept = hook_accept;
	hook_n = 0;
	s = vhost_server_new(l, path, &lops, NULL);
	REQUIRE(s);
	for (int i = 0; i < 3; i++)
		c[i] = client_connect(path);
	for (int i = 0; i < 400 && hook_n < 3; i++)
		loop_run_once(l, 50000000);
	CHECK_EQ(hook_n, 3);
	CHECK(!vhost_server_connected(s));

	memset(&st, 0, sizeof(st));
	stub_ops(&ops, 3);
	p = vhost_server_new(l, NULL, &ops, &st);
	REQUIRE(p);
	vhost_server_set_name(p, "ctx#1");
	CHECK_EQ(vhost_server_attach_fd(p, hook_fds[0]), 0);
	CHECK(vhost_server_connected(p));
	CHECK(!vhost_server_check_hangup(p));
	close(c[0]);
	CHECK(vhost_server_check_hangup(p));
	CHECK(!vhost_server_connected(p));
	CHECK_EQ(st.disconnected, 1);
	vhost_server_free(p);
	for (int i = 1; i < 3; i++) {
		close(hook_fds[i]);
		close(c[i]);
	}
	vhost_server_free(s);
	loop_free(l);
	rmdir(dir);
	CHECK_EQ(tc_count_fds(0), base);
}

int main(void)
{
	TEST_PROGRAM("test_vhost_server");
	vlog_level = getenv("VRDMA_TEST_LOG") ? VLOG_DEBUG : VLOG_ERR;
	RUN(test_negotiate_and_ring);
	RUN(test_idle_kicks_paused);
	RUN(test_legacy_enable_and_nofd);
	RUN(test_bad_message_reconnect);
	RUN(test_mem_changes);
	RUN(test_wide_index);
	RUN(test_device_disconnects);
	RUN(test_socket_file);
	RUN(test_validation);
	RUN(test_truncated_memory);
	RUN(test_fd_budget);
	RUN(test_accept_out_of_fds);
	RUN(test_waiting_rings);
	RUN(test_graveyard);
	RUN(test_accept_hook);
	return TEST_DONE();
}
