/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon-side dispatch of the connection manager (src/backend/netdev_cm.c):
 * two device ports connected back to back through a fake network on a fake
 * clock; contexts 1 and 2 on port 0, context 3 on port 1. Commands are
 * given as the wire structures of include/vrdma/virtio_net_roce_cm.h.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>

#include "harness.h"
#include "cm/cm.h"
#include "backend/netdev_cm.h"
#include "vrdma/virtio_net_roce_cm.h"

#define QMAX 128

struct fport {
	struct netdev_cm *cm;
	uint8_t gid[16];
	unsigned notified[8];       /* by context id */
};

static struct fport fp[2];
static uint64_t now_us = 1000000;

struct fmad {
	struct cm_mad mad;
	int to;
	struct cm_addr src;
};

static struct fmad q[QMAX];
static int qlen;
static unsigned sent_attr[2][0x20];

static uint64_t f_now(void *ctx)
{
	(void)ctx;
	return now_us;
}

static int f_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct fport *p = ctx;
	int from = (int)(p - fp);
	struct cm_msg m;

	(void)dst;
	if (qlen >= QMAX)
		return -ENOBUFS;
	if (cm_mad_parse(mad, CM_MAD_SIZE, &m) == CM_MAD_OK && m.attr_id >= 0x10 &&
	    m.attr_id < 0x30)
		sent_attr[from][m.attr_id - 0x10]++;
	q[qlen].mad = *mad;
	q[qlen].to = 1 - from;
	memset(&q[qlen].src, 0, sizeof(q[qlen].src));
	memcpy(q[qlen].src.gid, p->gid, 16);
	q[qlen].src.qpn = 1;
	q[qlen].src.pkey = 0xFFFF;
	qlen++;
	return 0;
}

/* QPs: context n owns QPNs n*0x100 .. n*0x100+0xff. */
static bool f_qp_owned(void *ctx, uint64_t ctx_id, uint32_t qpn)
{
	(void)ctx;
	return qpn >> 8 == ctx_id;
}

static void f_notify(void *ctx, uint64_t ctx_id)
{
	struct fport *p = ctx;

	if (ctx_id < 8)
		p->notified[ctx_id]++;
}

static void deliver(void)
{
	for (int i = 0; i < qlen; i++) {
		struct fmad m = q[i];

		netdev_cm_recv(fp[m.to].cm, &m.mad, CM_MAD_SIZE, &m.src);
	}
	qlen = 0;
}

/* Delivers until the network is quiet (answers produce answers). */
static void settle(void)
{
	for (int n = 0; n < 16 && qlen; n++) {
		struct fmad copy[QMAX];
		int len = qlen;

		memcpy(copy, q, sizeof(copy[0]) * (size_t)len);
		qlen = 0;
		for (int i = 0; i < len; i++)
			netdev_cm_recv(fp[copy[i].to].cm, &copy[i].mad, CM_MAD_SIZE, &copy[i].src);
	}
}

static void setup(void)
{
	static const struct netdev_cm_ops ops = { f_now, f_send, f_qp_owned, f_notify };
	struct netdev_cm_config cfg;

	memset(fp, 0, sizeof(fp));
	memset(sent_attr, 0, sizeof(sent_attr));
	qlen = 0;
	for (int i = 0; i < 2; i++) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.port.ca_guid = 0x1000 + (uint64_t)i;
		cfg.port.comm_id_seed = 77u + (uint32_t)i;
		cfg.max_events = 8;
		fp[i].gid[10] = fp[i].gid[11] = 0xff;
		fp[i].gid[12] = 10;
		fp[i].gid[15] = (uint8_t)(i + 1);
		fp[i].cm = netdev_cm_new(&cfg, &ops, &fp[i]);
	}
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		netdev_cm_free(fp[i].cm);
}

static int cmd(int port, uint64_t ctx, uint8_t c, const void *in, size_t len, void *out,
	       size_t cap)
{
	size_t out_len = 0;
	int rc = netdev_cm_cmd(fp[port].cm, ctx, c, in, len, out, cap, &out_len);

	if (!rc && out && out_len != cap)
		return -999;
	return rc;
}

static int do_listen(int port, uint64_t ctx, uint16_t tcp_port, uint32_t *id)
{
	struct virtio_rdma_cmd_cm_listen c = { .service_id = htole64(0x01060000ull | tcp_port) };
	struct virtio_rdma_ack_cm_listen a;
	int rc = cmd(port, ctx, VIRTIO_NET_CTRL_ROCE_CM_LISTEN, &c, sizeof(c), &a, sizeof(a));

	if (!rc && id)
		*id = le32toh(a.listen_id);
	return rc;
}

static int do_connect(int port, uint64_t ctx, uint32_t qpn, uint16_t tcp_port, uint32_t *id)
{
	struct virtio_rdma_cmd_cm_connect c;
	struct virtio_rdma_ack_cm_conn a;
	int rc;

	memset(&c, 0, sizeof(c));
	memcpy(c.ip.dgid, fp[1 - port].gid, 16);
	memcpy(c.ip.src_addr, fp[port].gid + 12, 4);
	memcpy(c.ip.dst_addr, fp[1 - port].gid + 12, 4);
	c.ip.service_id = htole64(0x01060000ull | tcp_port);
	c.ip.src_port = htole16(40000);
	c.ip.family = 4;
	c.qpn = htole32(qpn);
	c.starting_psn = htole32(0x123);
	c.path_mtu = 3;
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.retry_count = 7;
	c.rnr_retry_count = 7;
	c.private_data_len = 3;
	memcpy(c.private_data, "abc", 3);
	rc = cmd(port, ctx, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a, sizeof(a));
	if (!rc && id)
		*id = le32toh(a.conn_id);
	return rc;
}

static int get_event(int port, uint64_t ctx, struct virtio_rdma_cm_event *ev)
{
	return cmd(port, ctx, VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT, NULL, 0, ev, sizeof(*ev));
}

static int do_handle(int port, uint64_t ctx, uint8_t c, uint32_t id)
{
	struct virtio_rdma_cmd_cm_handle h = { .id = htole32(id) };

	return cmd(port, ctx, c, &h, sizeof(h), NULL, 0);
}

static int do_accept(int port, uint64_t ctx, uint32_t id, uint32_t qpn)
{
	struct virtio_rdma_cmd_cm_accept c;

	memset(&c, 0, sizeof(c));
	c.conn_id = htole32(id);
	c.qpn = htole32(qpn);
	c.starting_psn = htole32(0x456);
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.rnr_retry_count = 7;
	return cmd(port, ctx, VIRTIO_NET_CTRL_ROCE_CM_ACCEPT, &c, sizeof(c), NULL, 0);
}

static int do_reject(int port, uint64_t ctx, uint32_t id)
{
	struct virtio_rdma_cmd_cm_reject c;

	memset(&c, 0, sizeof(c));
	c.conn_id = htole32(id);
	c.reason = htole16(28);
	return cmd(port, ctx, VIRTIO_NET_CTRL_ROCE_CM_REJECT, &c, sizeof(c), NULL, 0);
}

/* Context 3 (port 1) connects to context 1's listen on port 0; returns
 * the two connection handles, established. */
static void establish(uint32_t *active, uint32_t *passive)
{
	struct virtio_rdma_cm_event ev;

	CHECK_EQ(do_connect(1, 3, 0x301, 7000, active), 0);
	deliver();
	CHECK_EQ(get_event(0, 1, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REQ_RECEIVED);
	CHECK_EQ(le32toh(ev.remote_qpn), 0x301);
	CHECK(ev.private_data_len >= 36 + 3);
	CHECK_MEM(ev.private_data + 36, "abc", 3);
	*passive = le32toh(ev.conn_id);
	CHECK_EQ(do_accept(0, 1, *passive, 0x101), 0);
	deliver();
	CHECK_EQ(get_event(1, 3, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REP_RECEIVED);
	CHECK_EQ(le32toh(ev.conn_id), *active);
	CHECK_EQ(le32toh(ev.remote_qpn), 0x101);
	CHECK_EQ(le32toh(ev.starting_psn), 0x456);
	CHECK_EQ(do_handle(1, 3, VIRTIO_NET_CTRL_ROCE_CM_RTU, *active), 0);
	deliver();
	CHECK_EQ(get_event(0, 1, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_ESTABLISHED);
	CHECK_EQ(le32toh(ev.conn_id), *passive);
}

static void test_connect_accept_disconnect(void)
{
	struct virtio_rdma_cm_event ev;
	uint32_t l, a, p;

	setup();
	REQUIRE(fp[0].cm && fp[1].cm);
	CHECK_EQ(do_listen(0, 1, 7000, &l), 0);
	establish(&a, &p);
	CHECK(fp[0].notified[1] >= 1);
	CHECK(fp[1].notified[3] >= 1);
	CHECK_EQ(get_event(0, 1, &ev), -EAGAIN);
	/* the passive side disconnects; the active one hears it, DREP by the device */
	CHECK_EQ(do_handle(0, 1, VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT, p), 0);
	deliver();
	CHECK_EQ(get_event(1, 3, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_DREQ_RECEIVED);
	deliver();
	CHECK_EQ(get_event(0, 1, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_DREP_RECEIVED);
	CHECK_EQ(sent_attr[1][CM_ATTR_DREP - 0x10], 1);
	CHECK_EQ(do_handle(0, 1, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, p), 0);
	CHECK_EQ(do_handle(1, 3, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, a), 0);
	/* a released handle is gone */
	CHECK_EQ(do_handle(1, 3, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, a), -ENOENT);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->conns, 0);
	CHECK_EQ(do_handle(0, 1, VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN, l), 0);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->listens, 0);
	teardown();
}

/* The RTU is lost but the passive QP receives data (COMM_EST): the passive
 * side is established then, once, and its REP is no longer repeated. */
static void test_comm_est_establishes(void)
{
	struct virtio_rdma_cm_event ev;
	uint32_t l, a, p;

	setup();
	REQUIRE(fp[0].cm && fp[1].cm);
	CHECK_EQ(do_listen(0, 1, 7000, &l), 0);
	CHECK_EQ(do_connect(1, 3, 0x301, 7000, &a), 0);
	deliver();
	CHECK_EQ(get_event(0, 1, &ev), 0);
	p = le32toh(ev.conn_id);
	/* before the REP, the QP's data means nothing to the CM */
	CHECK_EQ(netdev_cm_comm_est(fp[0].cm, 1, 0x101), -ENOENT);
	CHECK_EQ(do_accept(0, 1, p, 0x101), 0);
	deliver();
	CHECK_EQ(get_event(1, 3, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REP_RECEIVED);
	/* the active side sends its RTU; it is lost */
	CHECK_EQ(do_handle(1, 3, VIRTIO_NET_CTRL_ROCE_CM_RTU, a), 0);
	qlen = 0;
	CHECK_EQ(get_event(0, 1, &ev), -EAGAIN);
	/* another context's QP, or another QP, establishes nothing */
	CHECK_EQ(netdev_cm_comm_est(fp[0].cm, 2, 0x101), -ENOENT);
	CHECK_EQ(netdev_cm_comm_est(fp[0].cm, 1, 0x102), -ENOENT);
	CHECK_EQ(get_event(0, 1, &ev), -EAGAIN);
	CHECK_EQ(netdev_cm_comm_est(fp[0].cm, 1, 0x101), 0);
	CHECK_EQ(get_event(0, 1, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_ESTABLISHED);
	CHECK_EQ(le32toh(ev.conn_id), p);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->comm_est, 1);
	/* once: a second COMM_EST finds nothing waiting */
	CHECK_EQ(netdev_cm_comm_est(fp[0].cm, 1, 0x101), -ENOENT);
	/* the REP timer stopped: no REP repeated, no timeout */
	for (int i = 0; i < 64; i++) {
		now_us += 1000000;
		netdev_cm_tick(fp[0].cm);
	}
	CHECK_EQ(sent_attr[0][CM_ATTR_REP - 0x10], 1);
	CHECK_EQ(get_event(0, 1, &ev), -EAGAIN);
	/* the connection works as one established by its RTU */
	CHECK_EQ(do_handle(0, 1, VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT, p), 0);
	deliver();
	CHECK_EQ(get_event(1, 3, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_DREQ_RECEIVED);
	deliver();
	CHECK_EQ(get_event(0, 1, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_DREP_RECEIVED);
	teardown();
}

/* A context never acts on another's listen, connection or QP. */
static void test_isolation(void)
{
	struct virtio_rdma_cm_event ev;
	uint32_t l, a, p;

	setup();
	CHECK_EQ(do_listen(0, 1, 7000, &l), 0);
	/* the same service from another context of the device: EADDRINUSE */
	CHECK_EQ(do_listen(0, 2, 7000, NULL), -EADDRINUSE);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->listens_in_use, 1);
	/* and from the same context too, like Linux */
	CHECK_EQ(do_listen(0, 1, 7000, NULL), -EADDRINUSE);
	/* another port: another service space */
	CHECK_EQ(do_listen(0, 2, 7001, NULL), 0);
	CHECK_EQ(do_handle(0, 2, VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN, l), -ENOENT);
	/* connect with a QP of another context */
	CHECK_EQ(do_connect(1, 3, 0x101, 7000, NULL), -ENOENT);
	CHECK_EQ(do_connect(1, 3, 0x301, 7000, &a), 0);
	deliver();
	/* context 2 sees no event of context 1's listen */
	CHECK_EQ(get_event(0, 2, &ev), -EAGAIN);
	CHECK_EQ(get_event(0, 1, &ev), 0);
	p = le32toh(ev.conn_id);
	/* context 2 cannot accept, reject, disconnect or release it */
	CHECK_EQ(do_accept(0, 2, p, 0x201), -ENOENT);
	CHECK_EQ(do_reject(0, 2, p), -ENOENT);
	CHECK_EQ(do_handle(0, 2, VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT, p), -ENOENT);
	CHECK_EQ(do_handle(0, 2, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, p), -ENOENT);
	/* context 1 cannot accept it with context 2's QP */
	CHECK_EQ(do_accept(0, 1, p, 0x201), -ENOENT);
	CHECK(netdev_cm_stats(fp[0].cm)->not_owner >= 5);
	CHECK_EQ(qlen, 0);
	/* the owner rejects: the active side hears REJ (consumer defined) */
	CHECK_EQ(do_reject(0, 1, p), 0);
	deliver();
	CHECK_EQ(get_event(1, 3, &ev), 0);
	CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REJ_RECEIVED);
	CHECK_EQ(le32toh(ev.status), 28);
	teardown();
}

/* A context that goes: DREQ for its connected connections, REJ for its
 * pending ones, its listens freed (the service is free again). */
static void test_context_gone(void)
{
	struct virtio_rdma_cm_event ev;
	uint32_t l, a, p, a2;

	setup();
	CHECK_EQ(do_listen(0, 1, 7000, &l), 0);
	establish(&a, &p);
	/* a second request, still pending at context 1 */
	CHECK_EQ(do_connect(1, 3, 0x302, 7000, &a2), 0);
	deliver();
	CHECK_EQ(netdev_cm_events(fp[0].cm, 1), 1);
	netdev_cm_ctx_gone(fp[0].cm, 1);
	CHECK_EQ(netdev_cm_events(fp[0].cm, 1), 0);
	CHECK_EQ(sent_attr[0][CM_ATTR_DREQ - 0x10], 1);
	CHECK_EQ(sent_attr[0][CM_ATTR_REJ - 0x10], 1);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->ctx_gone_conns, 2);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->ctx_gone_listens, 1);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->listens, 0);
	deliver();
	/* the peer: DISCONNECTED for one, REJECTED for the other */
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(get_event(1, 3, &ev), 0);
		if (le32toh(ev.conn_id) == a)
			CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_DREQ_RECEIVED);
		else
			CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REJ_RECEIVED);
	}
	settle();
	/* the DREQ is answered: no retries left behind on port 0 */
	CHECK_EQ(sent_attr[1][CM_ATTR_DREP - 0x10], 1);
	/* the service can be listened again, by another context */
	CHECK_EQ(do_listen(0, 2, 7000, NULL), 0);
	/* nothing of the gone context answers any more */
	CHECK_EQ(do_handle(0, 1, VIRTIO_NET_CTRL_ROCE_CM_RELEASE, p), -ENOENT);
	teardown();
}

/* A context that reads no events: its queue is bounded, requests beyond it
 * are rejected, never queued. */
static void test_event_queue_bounded(void)
{
	struct virtio_rdma_cm_event ev;
	int ok = 0;

	setup();
	CHECK_EQ(do_listen(0, 1, 7000, NULL), 0);
	for (int i = 0; i < 12; i++)
		if (!do_connect(1, 3, 0x300u + (uint32_t)i, 7000, NULL))
			ok++;
	CHECK_EQ(ok, 12);
	deliver();
	CHECK_EQ(netdev_cm_events(fp[0].cm, 1), 8);
	CHECK_EQ(netdev_cm_stats(fp[0].cm)->reqs_refused, 4);
	CHECK_EQ(fp[0].notified[1], 1);
	deliver();
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(get_event(1, 3, &ev), 0);
		CHECK_EQ(le32toh(ev.type), VIRTIO_IB_CM_REJ_RECEIVED);
	}
	CHECK_EQ(get_event(1, 3, &ev), -EAGAIN);
	teardown();
}

/* One context cannot take every handle of the port: its share is a
 * quarter (here 2 of 8 connections, 1 of 4 listens); another context still
 * gets its own. */
static void test_context_share(void)
{
	static const struct netdev_cm_ops ops = { f_now, f_send, f_qp_owned, f_notify };
	struct netdev_cm_config cfg;

	setup();
	netdev_cm_free(fp[1].cm);
	memset(&cfg, 0, sizeof(cfg));
	cfg.port.max_conns = 8;
	cfg.max_listens = 4;
	fp[1].cm = netdev_cm_new(&cfg, &ops, &fp[1]);
	REQUIRE(fp[1].cm);
	CHECK_EQ(do_connect(1, 3, 0x301, 7000, NULL), 0);
	CHECK_EQ(do_connect(1, 3, 0x302, 7000, NULL), 0);
	CHECK_EQ(do_connect(1, 3, 0x303, 7000, NULL), -ENOBUFS);
	CHECK_EQ(do_connect(1, 2, 0x201, 7000, NULL), 0);
	CHECK_EQ(do_listen(1, 3, 7000, NULL), 0);
	CHECK_EQ(do_listen(1, 3, 7001, NULL), -ENOBUFS);
	CHECK_EQ(do_listen(1, 2, 7001, NULL), 0);
	CHECK_EQ(netdev_cm_stats(fp[1].cm)->quota_refused, 2);
	teardown();
}

/* Command data is checked before anything happens. */
static void test_bad_commands(void)
{
	uint8_t buf[512];
	struct virtio_rdma_cmd_cm_connect c;
	struct virtio_rdma_ack_cm_conn a;
	size_t out_len = 7;

	setup();
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(netdev_cm_cmd(fp[0].cm, 1, VIRTIO_NET_CTRL_ROCE_CM_LISTEN, buf, 15, buf,
			       sizeof(buf), &out_len), -EINVAL);
	CHECK_EQ(out_len, 0);
	CHECK_EQ(netdev_cm_cmd(fp[0].cm, 1, VIRTIO_NET_CTRL_ROCE_CM_LISTEN, buf, 16, buf, 4,
			       &out_len), -EINVAL);
	CHECK_EQ(netdev_cm_cmd(fp[0].cm, 1, 63, buf, 0, buf, sizeof(buf), &out_len), -EOPNOTSUPP);
	CHECK_EQ(netdev_cm_cmd(fp[0].cm, 1, 76, buf, 0, buf, sizeof(buf), &out_len), -EOPNOTSUPP);
	/* a service ID that is not rdma_cm's */
	memset(&c, 0, sizeof(c));
	c.ip.family = 4;
	c.ip.service_id = htole64(0x12345678ull);
	c.qpn = htole32(0x101);
	c.path_mtu = 3;
	CHECK_EQ(cmd(0, 1, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a, sizeof(a)), -EINVAL);
	c.ip.service_id = htole64(0x01060000ull | 1);
	c.private_data_len = 57;
	CHECK_EQ(cmd(0, 1, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a, sizeof(a)), -EINVAL);
	c.private_data_len = 0;
	c.retry_count = 8;
	CHECK_EQ(cmd(0, 1, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a, sizeof(a)), -EINVAL);
	c.retry_count = 0;
	c.ip.family = 5;
	CHECK_EQ(cmd(0, 1, VIRTIO_NET_CTRL_ROCE_CM_CONNECT, &c, sizeof(c), &a, sizeof(a)), -EINVAL);
	CHECK_EQ(qlen, 0);
	CHECK(netdev_cm_stats(fp[0].cm)->bad_length >= 2);
	teardown();
}

int main(void)
{
	TEST_PROGRAM("test_netdev_cm");
	RUN(test_connect_accept_disconnect);
	RUN(test_comm_est_establishes);
	RUN(test_isolation);
	RUN(test_context_gone);
	RUN(test_event_queue_bounded);
	RUN(test_context_share);
	RUN(test_bad_commands);
	return TEST_DONE();
}
