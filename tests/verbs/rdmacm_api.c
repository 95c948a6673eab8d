/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rdma_cm API on one device inside one process (built against Debian's
 * <rdma/rdma_cma.h> and librdmacm, run through vrdma-run on vrdma's):
 *  - devices: rdma_get_devices lists the device; rdma_event_str names;
 *  - addresses: bind to the device's IPv4 address (verbs set, port kept),
 *    EADDRINUSE for the same port twice, EADDRNOTAVAIL for an address no
 *    device has, port 0 picks a port, a loopback address binds without a
 *    device; rdma_getaddrinfo without node and service returns the hints'
 *    addresses (EINVAL without any);
 *  - the channel fd: O_NONBLOCK gives EAGAIN with nothing queued, poll sees
 *    an event once one is queued;
 *  - a connection from a client id to a listener of the same process on the
 *    same device (both ends on one CM): CONNECT_REQUEST with the client's
 *    private data and addresses, ESTABLISHED on both ends with the REP's
 *    private data, a SEND of 4 KiB compared byte for byte, rdma_disconnect
 *    on one end gives DISCONNECTED on both;
 *  - data before the RTU: a client whose id has no QP gets
 *    CONNECT_RESPONSE and sends no RTU until rdma_establish (as in
 *    librdmacm); it moves its own QP and sends first: the server gets
 *    ESTABLISHED from that data alone (the device's CM treats the QP's
 *    first packet as the RTU), then the data; rdma_establish afterwards
 *    succeeds and adds no event;
 *  - a reject: REJECTED with status 28 (consumer) and the private data;
 *  - multicast joins fail with ENOSYS.
 *
 * usage: rdmacm_api IPV4_ADDRESS_OF_THE_DEVICE
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "harness.h"

static const char *g_ip;
static struct rdma_event_channel *g_ch;
static uint16_t g_port = 23000;

static struct sockaddr_in addr_of(const char *ip, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* The next event, which must be of type want (NULL otherwise). */
static struct rdma_cm_event *expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { g_ch->fd, POLLIN, 0 };

	if (poll(&p, 1, 30000) != 1 || rdma_get_cm_event(g_ch, &ev)) {
		printf("#   no event (wanted %s)\n", rdma_event_str(want));
		return NULL;
	}
	if (ev->event != want) {
		printf("#   got %s status %d, wanted %s\n", rdma_event_str(ev->event), ev->status,
		       rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void devices(void)
{
	struct ibv_context **l;
	int n = 0;

	l = rdma_get_devices(&n);
	REQUIRE(l);
	CHECK(n >= 1);
	CHECK(l[0] != NULL);
	CHECK(l[n] == NULL);
	rdma_free_devices(l);
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED"));
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT"));
}

static void addresses(void)
{
	struct rdma_cm_id *a, *b;
	struct sockaddr_in s = addr_of(g_ip, ++g_port), none = addr_of("192.0.2.77", 1);

	REQUIRE(!rdma_create_id(g_ch, &a, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_create_id(g_ch, &b, NULL, RDMA_PS_TCP));
	CHECK_EQ(rdma_bind_addr(a, (struct sockaddr *)&s), 0);
	CHECK(a->verbs != NULL);
	CHECK_EQ(ntohs(rdma_get_src_port(a)), g_port);
	errno = 0;
	CHECK_EQ(rdma_bind_addr(b, (struct sockaddr *)&s), -1);
	CHECK_EQ(errno, EADDRINUSE);
	errno = 0;
	CHECK_EQ(rdma_bind_addr(b, (struct sockaddr *)&none), -1);
	CHECK_EQ(errno, EADDRNOTAVAIL);
	s.sin_port = 0;
	CHECK_EQ(rdma_bind_addr(b, (struct sockaddr *)&s), 0);
	CHECK(rdma_get_src_port(b) != 0);
	CHECK(rdma_get_src_port(b) != rdma_get_src_port(a));
	errno = 0;
	CHECK_EQ(rdma_join_multicast(a, (struct sockaddr *)&s, NULL), -1);
	CHECK_EQ(errno, ENOSYS);
	rdma_destroy_id(a);
	rdma_destroy_id(b);

	/* loopback binds like a wildcard: no device (libfabric probes it) */
	struct sockaddr_in lo = addr_of("127.0.0.1", 0);
	REQUIRE(!rdma_create_id(g_ch, &a, NULL, RDMA_PS_TCP));
	CHECK_EQ(rdma_bind_addr(a, (struct sockaddr *)&lo), 0);
	CHECK(a->verbs == NULL);
	rdma_destroy_id(a);

	/* no node, no service: the hints' own addresses */
	struct rdma_addrinfo h, *res = NULL;
	memset(&h, 0, sizeof(h));
	s.sin_port = htons(4791);
	h.ai_dst_addr = (struct sockaddr *)&s;
	h.ai_dst_len = sizeof(s);
	CHECK_EQ(rdma_getaddrinfo(NULL, NULL, &h, &res), 0);
	if (res) {
		CHECK_EQ(res->ai_family, AF_INET);
		CHECK_EQ(res->ai_dst_len, (socklen_t)sizeof(s));
		CHECK(res->ai_dst_addr && !memcmp(res->ai_dst_addr, &s, sizeof(s)));
		CHECK(res->ai_src_addr == NULL);
		rdma_freeaddrinfo(res);
	}
	memset(&h, 0, sizeof(h));
	errno = 0;
	CHECK_EQ(rdma_getaddrinfo(NULL, NULL, &h, &res), -1);
	CHECK_EQ(errno, EINVAL);
}

static void channel_fd(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in d = addr_of(g_ip, 9);
	struct pollfd p;

	REQUIRE(ch);
	REQUIRE(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
	errno = 0;
	CHECK_EQ(rdma_get_cm_event(ch, &ev), -1);
	CHECK_EQ(errno, EAGAIN);
	REQUIRE(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000), 0);
	p.fd = ch->fd;
	p.events = POLLIN;
	CHECK_EQ(poll(&p, 1, 30000), 1);
	CHECK_EQ(rdma_get_cm_event(ch, &ev), 0);
	CHECK_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(ev->id == id);
	CHECK(id->verbs != NULL);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

struct end {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[4096];
};

static int end_qp(struct end *e)
{
	struct ibv_qp_init_attr qa;

	e->pd = ibv_alloc_pd(e->id->verbs);
	e->cq = e->pd ? ibv_create_cq(e->id->verbs, 8, NULL, NULL, 0) : NULL;
	e->mr = e->cq ? ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!e->mr)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	return rdma_create_qp(e->id, e->pd, &qa);
}

static void end_free(struct end *e)
{
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (long i = 0; i < 300000000L; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
	}
	return 0;
}

/* Client and server ids of this process on one device. */
static void connect_loopback(void)
{
	struct end srv = { 0 }, cli = { 0 };
	struct rdma_cm_id *listen;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct sockaddr_in s = addr_of(g_ip, ++g_port);
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr swr, *sbad;
	struct ibv_wc wc;
	const char req_pd[] = "hello from the client", rep_pd[] = "welcome";

	REQUIRE(!rdma_create_id(g_ch, &listen, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_bind_addr(listen, (struct sockaddr *)&s));
	REQUIRE(!rdma_listen(listen, 4));
	REQUIRE(!rdma_create_id(g_ch, &cli.id, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&s, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ADDR_RESOLVED)));
	rdma_ack_cm_event(ev);
	REQUIRE(!rdma_resolve_route(cli.id, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ROUTE_RESOLVED)));
	rdma_ack_cm_event(ev);
	CHECK_EQ(cli.id->route.num_paths, 1);
	REQUIRE(!end_qp(&cli));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = req_pd;
	cp.private_data_len = sizeof(req_pd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	REQUIRE(!rdma_connect(cli.id, &cp));

	REQUIRE((ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST)));
	CHECK(ev->listen_id == listen);
	CHECK(ev->param.conn.private_data_len >= sizeof(req_pd));
	if (ev->param.conn.private_data)
		CHECK_MEM(ev->param.conn.private_data, req_pd, sizeof(req_pd));
	srv.id = ev->id;
	CHECK(srv.id->verbs == cli.id->verbs);
	CHECK_EQ(rdma_get_dst_port(srv.id), rdma_get_src_port(cli.id));
	CHECK_EQ(ntohs(rdma_get_src_port(srv.id)), g_port);
	rdma_ack_cm_event(ev);
	REQUIRE(!end_qp(&srv));
	sge.addr = (uintptr_t)srv.buf;
	sge.length = sizeof(srv.buf);
	sge.lkey = srv.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	REQUIRE(!ibv_post_recv(srv.id->qp, &rwr, &rbad));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = rep_pd;
	cp.private_data_len = sizeof(rep_pd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	REQUIRE(!rdma_accept(srv.id, &cp));

	/* both ESTABLISHED events, in either order */
	for (int i = 0; i < 2; i++) {
		REQUIRE((ev = expect(RDMA_CM_EVENT_ESTABLISHED)));
		if (ev->id == cli.id) {
			CHECK(ev->param.conn.private_data_len >= sizeof(rep_pd));
			if (ev->param.conn.private_data)
				CHECK_MEM(ev->param.conn.private_data, rep_pd, sizeof(rep_pd));
		} else {
			CHECK(ev->id == srv.id);
		}
		rdma_ack_cm_event(ev);
	}

	for (size_t i = 0; i < sizeof(cli.buf); i++)
		cli.buf[i] = (uint8_t)(i * 7 + 3);
	sge.addr = (uintptr_t)cli.buf;
	sge.length = sizeof(cli.buf);
	sge.lkey = cli.mr->lkey;
	memset(&swr, 0, sizeof(swr));
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	REQUIRE(!ibv_post_send(cli.id->qp, &swr, &sbad));
	REQUIRE(poll_one(cli.cq, &wc) == 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	REQUIRE(poll_one(srv.cq, &wc) == 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, sizeof(cli.buf));
	CHECK_MEM(srv.buf, cli.buf, sizeof(cli.buf));

	/* rdma_init_qp_attr: the attributes of the transition the caller names,
	 * as the connection set them (one side's RQ PSN is the other's SQ PSN) */
	struct ibv_qp_attr qa, sa;
	struct ibv_qp_init_attr qi;
	int mask;

	qa.qp_state = IBV_QPS_INIT;
	CHECK_EQ(rdma_init_qp_attr(cli.id, &qa, &mask), 0);
	CHECK(mask & IBV_QP_ACCESS_FLAGS);
	/* as the kernel CM's for a connection with responder resources */
	CHECK_EQ(qa.qp_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_ATOMIC),
		 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(!ibv_query_qp(srv.id->qp, &sa, IBV_QP_ACCESS_FLAGS, &qi));
	CHECK(sa.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC);
	qa.qp_state = IBV_QPS_RTR;
	CHECK_EQ(rdma_init_qp_attr(cli.id, &qa, &mask), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTR);
	CHECK(mask & IBV_QP_DEST_QPN);
	CHECK(mask & IBV_QP_RQ_PSN);
	CHECK_EQ(qa.dest_qp_num, srv.id->qp->qp_num);
	REQUIRE(!ibv_query_qp(srv.id->qp, &sa, IBV_QP_SQ_PSN, &qi));
	CHECK_EQ(qa.rq_psn, sa.sq_psn);
	qa.qp_state = IBV_QPS_RTS;
	CHECK_EQ(rdma_init_qp_attr(cli.id, &qa, &mask), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK(mask & IBV_QP_SQ_PSN);
	REQUIRE(!ibv_query_qp(srv.id->qp, &sa, IBV_QP_RQ_PSN, &qi));
	CHECK_EQ(qa.sq_psn, sa.rq_psn);
	qa.qp_state = IBV_QPS_SQD;
	CHECK_EQ(rdma_init_qp_attr(cli.id, &qa, &mask), -1);
	CHECK_EQ(errno, EINVAL);

	CHECK_EQ(rdma_disconnect(cli.id), 0);
	for (int i = 0; i < 2; i++) {
		REQUIRE((ev = expect(RDMA_CM_EVENT_DISCONNECTED)));
		CHECK(ev->id == cli.id || ev->id == srv.id);
		rdma_ack_cm_event(ev);
	}
	end_free(&srv);
	end_free(&cli);
	rdma_destroy_id(listen);
	/* timewait exits of the destroyed ids are not reported */
}

/* The client's QP is its own (not the id's): the RTU waits for
 * rdma_establish, and the client's first SEND establishes the server. */
static void data_before_rtu(void)
{
	struct end srv = { 0 }, cli = { 0 };
	struct rdma_cm_id *listen;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct sockaddr_in s = addr_of(g_ip, ++g_port);
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr swr, *sbad;
	struct ibv_wc wc;
	struct pollfd p;
	int mask;

	REQUIRE(!rdma_create_id(g_ch, &listen, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_bind_addr(listen, (struct sockaddr *)&s));
	REQUIRE(!rdma_listen(listen, 4));
	REQUIRE(!rdma_create_id(g_ch, &cli.id, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&s, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ADDR_RESOLVED)));
	rdma_ack_cm_event(ev);
	REQUIRE(!rdma_resolve_route(cli.id, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ROUTE_RESOLVED)));
	rdma_ack_cm_event(ev);
	cli.pd = ibv_alloc_pd(cli.id->verbs);
	REQUIRE(cli.pd);
	cli.cq = ibv_create_cq(cli.id->verbs, 8, NULL, NULL, 0);
	cli.mr = cli.cq ? ibv_reg_mr(cli.pd, cli.buf, sizeof(cli.buf), 0) : NULL;
	REQUIRE(cli.mr);
	memset(&qi, 0, sizeof(qi));
	qi.send_cq = cli.cq;
	qi.recv_cq = cli.cq;
	qi.qp_type = IBV_QPT_RC;
	qi.cap.max_send_wr = 4;
	qi.cap.max_recv_wr = 4;
	qi.cap.max_send_sge = 1;
	qi.cap.max_recv_sge = 1;
	qp = ibv_create_qp(cli.pd, &qi);
	REQUIRE(qp);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cp.qp_num = qp->qp_num;
	REQUIRE(!rdma_connect(cli.id, &cp));

	REQUIRE((ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST)));
	srv.id = ev->id;
	rdma_ack_cm_event(ev);
	REQUIRE(!end_qp(&srv));
	sge.addr = (uintptr_t)srv.buf;
	sge.length = sizeof(srv.buf);
	sge.lkey = srv.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	REQUIRE(!ibv_post_recv(srv.id->qp, &rwr, &rbad));
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	REQUIRE(!rdma_accept(srv.id, &cp));
	REQUIRE((ev = expect(RDMA_CM_EVENT_CONNECT_RESPONSE)));
	CHECK(ev->id == cli.id);
	rdma_ack_cm_event(ev);
	/* no RTU yet: the server has nothing */
	p.fd = g_ch->fd;
	p.events = POLLIN;
	p.revents = 0;
	CHECK_EQ(poll(&p, 1, 0), 0);

	/* the client moves its QP and sends */
	for (int st = IBV_QPS_INIT; st <= IBV_QPS_RTS; st++) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = (enum ibv_qp_state)st;
		REQUIRE(!rdma_init_qp_attr(cli.id, &qa, &mask));
		REQUIRE(!ibv_modify_qp(qp, &qa, mask));
	}
	for (size_t i = 0; i < sizeof(cli.buf); i++)
		cli.buf[i] = (uint8_t)(i * 5 + 1);
	sge.addr = (uintptr_t)cli.buf;
	sge.length = sizeof(cli.buf);
	sge.lkey = cli.mr->lkey;
	memset(&swr, 0, sizeof(swr));
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	REQUIRE(!ibv_post_send(qp, &swr, &sbad));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ESTABLISHED)));
	CHECK(ev->id == srv.id);
	rdma_ack_cm_event(ev);
	REQUIRE(poll_one(cli.cq, &wc) == 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	REQUIRE(poll_one(srv.cq, &wc) == 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_MEM(srv.buf, cli.buf, sizeof(cli.buf));

	/* the RTU now: no further event on either side */
	CHECK_EQ(rdma_establish(cli.id), 0);
	CHECK_EQ(poll(&p, 1, 0), 0);
	CHECK_EQ(rdma_disconnect(cli.id), 0);
	for (int i = 0; i < 2; i++) {
		REQUIRE((ev = expect(RDMA_CM_EVENT_DISCONNECTED)));
		CHECK(ev->id == cli.id || ev->id == srv.id);
		rdma_ack_cm_event(ev);
	}
	ibv_destroy_qp(qp);
	end_free(&srv);
	end_free(&cli);
	rdma_destroy_id(listen);
}

static void reject(void)
{
	struct rdma_cm_id *listen, *cli, *child;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct sockaddr_in s = addr_of(g_ip, ++g_port);
	const char why[] = "no thanks";

	REQUIRE(!rdma_create_id(g_ch, &listen, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_bind_addr(listen, (struct sockaddr *)&s));
	REQUIRE(!rdma_listen(listen, 4));
	REQUIRE(!rdma_create_id(g_ch, &cli, NULL, RDMA_PS_TCP));
	REQUIRE(!rdma_resolve_addr(cli, NULL, (struct sockaddr *)&s, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ADDR_RESOLVED)));
	rdma_ack_cm_event(ev);
	REQUIRE(!rdma_resolve_route(cli, 2000));
	REQUIRE((ev = expect(RDMA_CM_EVENT_ROUTE_RESOLVED)));
	rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x1234; /* no QP: the REQ carries this one */
	REQUIRE(!rdma_connect(cli, &cp));
	REQUIRE((ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST)));
	CHECK_EQ(ev->param.conn.qp_num, 0x1234);
	child = ev->id;
	rdma_ack_cm_event(ev);
	CHECK_EQ(rdma_reject(child, why, sizeof(why)), 0);
	REQUIRE((ev = expect(RDMA_CM_EVENT_REJECTED)));
	CHECK(ev->id == cli);
	CHECK_EQ(ev->status, 28);
	CHECK(ev->param.conn.private_data_len >= sizeof(why));
	if (ev->param.conn.private_data)
		CHECK_MEM(ev->param.conn.private_data, why, sizeof(why));
	rdma_ack_cm_event(ev);
	rdma_destroy_id(child);
	rdma_destroy_id(cli);
	rdma_destroy_id(listen);
}

int main(int argc, char **argv)
{
	TEST_PROGRAM("rdmacm_api");
	if (argc != 2) {
		fprintf(stderr, "usage: rdmacm_api IPV4_ADDRESS_OF_THE_DEVICE\n");
		return 2;
	}
	g_ip = argv[1];
	g_port = (uint16_t)(23000 + getpid() % 20000);
	g_ch = rdma_create_event_channel();
	if (!g_ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	RUN(devices);
	RUN(addresses);
	RUN(channel_fd);
	RUN(connect_loopback);
	RUN(data_before_rtu);
	RUN(reject);
	rdma_destroy_event_channel(g_ch);
	return TEST_DONE();
}
