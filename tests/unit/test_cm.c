/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection manager: wire images, codec round trips, and two cm_ports
 * connected back to back through a fake network (drop/replay filters) on a
 * fake clock. With "--write-corpus DIR" it also writes the valid MADs it
 * builds into DIR (the seed corpus of fuzz/fuzz_cm_mad.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "harness.h"
#include "cm/cm.h"
#include "cm/cm_rdma_cm.h"

/* ------------------------------------------------------------------ */
/* Fake clock and network.                                              */

static uint64_t now_us = 1000000;
static const char *corpus_dir;

#define MAX_EVENTS 64
#define MAX_QUEUE  256

struct rec {
	enum cm_event_type type;
	int status;
	struct cm_conn *conn;
	void *conn_ctx;
	void *listen_ctx;
	uint16_t reason;
	uint32_t qpn;
	uint8_t sidr_status;
	uint8_t pd[64];
};

struct node {
	struct cm_port *port;
	struct cm_addr addr;
	struct rec ev[MAX_EVENTS];
	int nev;
	/* Policies applied from inside the event callback. */
	bool auto_rep, auto_rtu, auto_mra, auto_drep;
	uint16_t auto_rej;          /* reject REQs with this reason */
	struct cm_conn *last_conn;
};

static struct node nodes[2];

struct pkt {
	struct cm_mad mad;
	int to;
	struct cm_addr src;
};

static struct pkt queue[MAX_QUEUE];
static int qlen;
/* Drop filter: drop the next `drop_count` MADs of attribute drop_attr. */
static uint16_t drop_attr;
static int drop_count;
/* Last MAD of attribute save_attr that was sent, for replays. */
static uint16_t save_attr;
static struct pkt saved;
static int sent_by_attr[0x20];

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return now_us;
}

static void write_corpus(const struct cm_mad *mad)
{
	static int n;
	char path[512];
	FILE *f;

	if (!corpus_dir)
		return;
	snprintf(path, sizeof(path), "%s/%s_%03d", corpus_dir,
		 cm_attr_name(get_be16(mad->hdr.attr_id)), n++);
	f = fopen(path, "wb");
	if (f) {
		fwrite(mad, 1, sizeof(*mad), f);
		fclose(f);
	}
}

static int fake_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct node *from = ctx;
	uint16_t attr = get_be16(mad->hdr.attr_id);
	int to = -1;

	for (int i = 0; i < 2; i++)
		if (!memcmp(nodes[i].addr.gid, dst->gid, 16))
			to = i;
	if (attr < 0x20)
		sent_by_attr[attr]++;
	write_corpus(mad);
	if (save_attr && attr == save_attr) {
		saved.mad = *mad;
		saved.to = to;
		saved.src = from->addr;
	}
	if (drop_count && attr == drop_attr) {
		drop_count--;
		return 0;
	}
	if (to < 0 || qlen == MAX_QUEUE)
		return 0; /* nobody there: lost */
	queue[qlen].mad = *mad;
	queue[qlen].to = to;
	queue[qlen].src = from->addr;
	qlen++;
	return 0;
}

static void fake_event(void *ctx, const struct cm_event *ev)
{
	struct node *n = ctx;
	struct rec *r;

	if (n->nev == MAX_EVENTS)
		return;
	r = &n->ev[n->nev++];
	memset(r, 0, sizeof(*r));
	r->type = ev->type;
	r->status = ev->status;
	r->conn = ev->conn;
	r->listen_ctx = ev->listen_ctx;
	r->conn_ctx = ev->conn_ctx;
	n->last_conn = ev->conn;
	if (ev->msg) {
		switch (ev->msg->attr_id) {
		case CM_ATTR_REQ:
			memcpy(r->pd, ev->msg->req.private_data, sizeof(r->pd));
			r->qpn = ev->msg->req.local_qpn;
			break;
		case CM_ATTR_REP:
			memcpy(r->pd, ev->msg->rep.private_data, sizeof(r->pd));
			r->qpn = ev->msg->rep.local_qpn;
			break;
		case CM_ATTR_REJ:
			memcpy(r->pd, ev->msg->rej.private_data, sizeof(r->pd));
			r->reason = ev->msg->rej.reason;
			break;
		case CM_ATTR_DREQ:
			memcpy(r->pd, ev->msg->dreq.private_data, sizeof(r->pd));
			break;
		case CM_ATTR_SIDR_REQ:
			memcpy(r->pd, ev->msg->sidr_req.private_data, sizeof(r->pd));
			break;
		case CM_ATTR_SIDR_REP:
			r->sidr_status = ev->msg->sidr_rep.status;
			r->qpn = ev->msg->sidr_rep.qpn;
			memcpy(r->pd, ev->msg->sidr_rep.private_data, sizeof(r->pd));
			break;
		default:
			break;
		}
	}
	switch (ev->type) {
	case CM_EVENT_REQ_RECEIVED:
		if (n->auto_rej) {
			cm_send_rej(ev->conn, n->auto_rej, NULL, 0, "no thanks", 9);
		} else if (n->auto_mra) {
			cm_send_mra(ev->conn, 24, NULL, 0);
		} else if (n->auto_rep) {
			struct cm_rep_info rep = { .local_qpn = 0x000B0B, .starting_psn = 0x222222,
				.responder_resources = 1, .initiator_depth = 1, .target_ack_delay = 15,
				.rnr_retry_count = 7, .private_data_len = 5 };
			memcpy(rep.private_data, "world", 5);
			cm_send_rep(ev->conn, &rep);
		}
		break;
	case CM_EVENT_REP_RECEIVED:
		if (n->auto_rtu)
			cm_send_rtu(ev->conn, NULL, 0);
		break;
	case CM_EVENT_DREQ_RECEIVED:
		if (n->auto_drep)
			cm_send_drep(ev->conn, NULL, 0);
		break;
	default:
		break;
	}
}

static const struct cm_port_ops ops = {
	.now_us = fake_now,
	.send = fake_send,
	.event = fake_event,
};

/* Delivers queued MADs until the network is quiet. */
static void pump(void)
{
	int guard = 0;

	while (qlen && guard++ < 1000) {
		struct pkt p = queue[0];

		memmove(queue, queue + 1, (size_t)(qlen - 1) * sizeof(queue[0]));
		qlen--;
		cm_port_recv(nodes[p.to].port, &p.mad, sizeof(p.mad), &p.src);
	}
}

/* Runs the clock to the next timer of either port, fires it, pumps. */
static bool run_next_timer(void)
{
	uint64_t t0 = cm_port_next_timeout(nodes[0].port);
	uint64_t t1 = cm_port_next_timeout(nodes[1].port);
	uint64_t t = t0 < t1 ? t0 : t1;

	if (t == UINT64_MAX)
		return false;
	if (t > now_us)
		now_us = t;
	cm_port_tick(nodes[0].port);
	cm_port_tick(nodes[1].port);
	pump();
	return true;
}

static void setup_cfg(uint32_t max_pending)
{
	static const uint8_t ip[2][4] = { { 10, 0, 0, 1 }, { 10, 0, 0, 2 } };

	qlen = 0;
	drop_count = 0;
	save_attr = 0;
	memset(sent_by_attr, 0, sizeof(sent_by_attr));
	for (int i = 0; i < 2; i++) {
		struct cm_port_config cfg = {
			.ca_guid = 0x0200000000000000ull + (uint64_t)i + 1,
			.max_pending = max_pending,
			.comm_id_seed = 0x5a5a0000u + (uint32_t)i * 0x1111,
		};

		memset(&nodes[i], 0, sizeof(nodes[i]));
		cm_gid_from_ipv4(nodes[i].addr.gid, ip[i]);
		nodes[i].addr.qpn = 1;
		nodes[i].addr.pkey = 0xFFFF;
		nodes[i].port = cm_port_create(&cfg, &ops, &nodes[i]);
	}
}

static void setup(void)
{
	setup_cfg(0);
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		cm_port_destroy(nodes[i].port);
}

static int count_events(const struct node *n, enum cm_event_type t)
{
	int c = 0;

	for (int i = 0; i < n->nev; i++)
		c += n->ev[i].type == t;
	return c;
}

static const struct rec *find_event(const struct node *n, enum cm_event_type t)
{
	for (int i = 0; i < n->nev; i++)
		if (n->ev[i].type == t)
			return &n->ev[i];
	return NULL;
}

#define SERVICE_PORT 7471

/* A REQ as Linux's rdma_cm would send it over RoCE v2 for 10.0.0.1:40000
 * -> 10.0.0.2:7471 (see docs/spec.md). */
static void make_req(struct cm_req_info *req, uint32_t qpn, const char *pd)
{
	struct cm_ip_info ip = { .family = AF_INET, .src_port = 40000 };

	memset(req, 0, sizeof(*req));
	req->service_id = cm_service_id(CM_PS_TCP, SERVICE_PORT);
	req->local_qpn = qpn;
	req->responder_resources = 1;
	req->initiator_depth = 1;
	req->remote_cm_response_timeout = 20;
	req->local_cm_response_timeout = 20;
	req->transport_service_type = CM_TRANSPORT_RC;
	req->starting_psn = 0x111111;
	req->retry_count = 7;
	req->rnr_retry_count = 7;
	req->pkey = 0xFFFF;
	req->path_mtu = 3;
	req->max_cm_retries = 15;
	req->primary.local_lid = 0xFFFF;
	req->primary.remote_lid = 0xFFFF;
	memcpy(req->primary.local_gid, nodes[0].addr.gid, 16);
	memcpy(req->primary.remote_gid, nodes[1].addr.gid, 16);
	req->primary.flow_label = (40000u * 31 + SERVICE_PORT) & 0xFFFFF;
	req->primary.hop_limit = 64;
	req->primary.local_ack_timeout = 18;
	memcpy(ip.src_addr, nodes[0].addr.gid + 12, 4);
	memcpy(ip.dst_addr, nodes[1].addr.gid + 12, 4);
	cm_ip_hdr_build((struct cm_ip_hdr *)req->private_data, &ip);
	req->private_data_len = sizeof(struct cm_ip_hdr);
	if (pd) {
		memcpy(req->private_data + req->private_data_len, pd, strlen(pd));
		req->private_data_len += (uint8_t)strlen(pd);
	}
}

static struct cm_conn *connect_a(const char *pd, uint32_t qpn)
{
	struct cm_req_info req;
	struct cm_conn *c = NULL;

	make_req(&req, qpn, pd);
	if (cm_connect(nodes[0].port, &req, &nodes[1].addr, (void *)0xA, &c) < 0)
		return NULL;
	return c;
}

static struct cm_listener *listen_b(void)
{
	struct cm_listener *l = NULL;

	cm_listen(nodes[1].port, cm_service_id(CM_PS_TCP, SERVICE_PORT), 0, (void *)0xB, &l);
	return l;
}

/* What the nodes answer by themselves (setup_listening). */
enum { AUTO_REP = 1, AUTO_RTU = 2, AUTO_DREP = 4 };

/* A fresh pair with B listening: B answers REQs with a REP (AUTO_REP), A
 * REPs with an RTU (AUTO_RTU), both DREQs with a DREP (AUTO_DREP). */
static bool setup_listening(unsigned autos)
{
	setup();
	if (!listen_b())
		return false;
	nodes[1].auto_rep = autos & AUTO_REP;
	nodes[0].auto_rtu = autos & AUTO_RTU;
	nodes[0].auto_drep = nodes[1].auto_drep = autos & AUTO_DREP;
	return true;
}

/* A connects from qpn and every message is delivered; *b: B's side. */
static struct cm_conn *connect_pumped(uint32_t qpn, struct cm_conn **b)
{
	struct cm_conn *a = connect_a(NULL, qpn);

	if (a) {
		pump();
		*b = nodes[1].last_conn;
	}
	return a;
}

/* ------------------------------------------------------------------ */
/* Wire images and codec.                                               */

static void test_req_wire_image(void)
{
	struct cm_msg m;
	struct cm_mad mad;
	const uint8_t *b = (const uint8_t *)&mad;
	const uint8_t *d = b + 24;

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REQ;
	m.tid = 0x1122334455667788ull;
	m.req.local_comm_id = 0xA1B2C3D4;
	m.req.service_id = 0x0000000001061D2Full;
	m.req.local_ca_guid = 0x0123456789ABCDEFull;
	m.req.local_qkey = 0x11111111;
	m.req.local_qpn = 0x123456;
	m.req.responder_resources = 0x77;
	m.req.local_eecn = 0xABCDEF;
	m.req.initiator_depth = 0x66;
	m.req.remote_eecn = 0x010203;
	m.req.remote_cm_response_timeout = 20;   /* 10100 */
	m.req.transport_service_type = 1;        /* UC */
	m.req.end_to_end_flow_control = 1;
	m.req.starting_psn = 0xFEDCBA;
	m.req.local_cm_response_timeout = 17;    /* 10001 */
	m.req.retry_count = 5;
	m.req.pkey = 0xFFFF;
	m.req.path_mtu = 3;
	m.req.rdc_exists = 1;
	m.req.rnr_retry_count = 6;
	m.req.max_cm_retries = 15;
	m.req.srq = 1;
	m.req.extended_transport_type = 0;
	m.req.primary.local_lid = 0xFFFF;
	m.req.primary.remote_lid = 0xFFFE;
	m.req.primary.local_gid[15] = 0x01;
	m.req.primary.remote_gid[15] = 0x02;
	m.req.primary.flow_label = 0xABCDE;
	m.req.primary.packet_rate = 0x3F;
	m.req.primary.traffic_class = 0x88;
	m.req.primary.hop_limit = 64;
	m.req.primary.sl = 0xA;
	m.req.primary.subnet_local = 1;
	m.req.primary.local_ack_timeout = 18;    /* 10010 */
	m.req.sap_supported = 1;
	m.req.private_data_len = 2;
	m.req.private_data[0] = 0xCA;
	m.req.private_data[1] = 0xFE;
	REQUIRE(cm_mad_build(&mad, &m) == 0);

	/* MAD header: base 1, class 7, class version 2, Send, TID, attr 0x0010. */
	static const uint8_t hdr[24] = { 1, 7, 2, 3, 0, 0, 0, 0,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x00, 0x10, 0, 0, 0, 0, 0, 0 };
	CHECK_MEM(b, hdr, 24);
	static const uint8_t req_head[52] = {
		0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0, 0,                     /* comm ID, rsvd */
		0, 0, 0, 0, 0x01, 0x06, 0x1D, 0x2F,                     /* service ID */
		0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,         /* CA GUID */
		0, 0, 0, 0, 0x11, 0x11, 0x11, 0x11,                     /* rsvd, Q_Key */
		0x12, 0x34, 0x56, 0x77,                                 /* QPN | resp res */
		0xAB, 0xCD, 0xEF, 0x66,                                 /* EECN | init depth */
		0x01, 0x02, 0x03, (20 << 3) | (1 << 1) | 1,             /* rEECN | tmo | UC | FC */
		0xFE, 0xDC, 0xBA, (17 << 3) | 5,                        /* PSN | tmo | retry */
		0xFF, 0xFF, (3 << 4) | 0x08 | 6, (15 << 4) | 0x08 | 0,  /* pkey, mtu.., retries.. */
	};
	CHECK_MEM(d, req_head, sizeof(req_head));
	static const uint8_t path[44] = {
		0xFF, 0xFF, 0xFF, 0xFE,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
		0xAB, 0xCD, 0xE0, 0x3F,                                 /* FL 20 | rsvd | rate */
		0x88, 64, (0xA << 4) | 0x08, 18 << 3,
	};
	CHECK_MEM(d + 52, path, sizeof(path));
	CHECK_EQ(d[139], 0x04);                                         /* SAP supported */
	CHECK_EQ(d[140], 0xCA);
	CHECK_EQ(d[141], 0xFE);
	for (int i = 142; i < 232; i++)
		CHECK_EQ(d[i], 0);
}

static void test_small_messages_wire_image(void)
{
	struct cm_msg m;
	struct cm_mad mad;
	const uint8_t *d = mad.data;

	/* REJ: message REJected in the top 2 bits, ARI length in the top 7. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REJ;
	m.rej.local_comm_id = 1;
	m.rej.remote_comm_id = 2;
	m.rej.message_rejected = CM_MSG_RESPONSE_REP;
	m.rej.reason = CM_REJ_CONSUMER_DEFINED;
	m.rej.ari_len = 8;
	memset(m.rej.ari, 0xAA, 8);
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	static const uint8_t rej[14] = { 0, 0, 0, 1, 0, 0, 0, 2, 0x40, 8 << 1, 0, 28, 0xAA, 0xAA };
	CHECK_MEM(d, rej, sizeof(rej));
	CHECK_EQ(mad.hdr.method, CM_METHOD_SEND);
	CHECK_EQ(get_be16(mad.hdr.attr_id), 0x0012);

	/* MRA: message MRAed 2 bits, service timeout 5 bits. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_MRA;
	m.mra.message_mraed = CM_MSG_RESPONSE_OTHER;
	m.mra.service_timeout = 24;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(d[8], 0x80);
	CHECK_EQ(d[9], 24 << 3);

	/* REP: QPN/EECN/PSN in the top 24 bits, byte 26 and 27 bit fields. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REP;
	m.rep.local_qkey = 0x01020304;
	m.rep.local_qpn = 0xABCDEF;
	m.rep.local_eecn = 0x000001;
	m.rep.starting_psn = 0x123456;
	m.rep.responder_resources = 4;
	m.rep.initiator_depth = 5;
	m.rep.target_ack_delay = 15;
	m.rep.failover_accepted = 2;
	m.rep.end_to_end_flow_control = 1;
	m.rep.rnr_retry_count = 7;
	m.rep.srq = 1;
	m.rep.local_ca_guid = 0x1112131415161718ull;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	static const uint8_t rep[36] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4,
		0xAB, 0xCD, 0xEF, 0, 0, 0, 1, 0, 0x12, 0x34, 0x56, 0,
		4, 5, (15 << 3) | (2 << 1) | 1, (7 << 5) | (1 << 4),
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18 };
	CHECK_MEM(d, rep, sizeof(rep));

	/* DREQ: remote QPN in the top 24 bits of the word at 8. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_DREQ;
	m.dreq.remote_qpn = 0x000B0B;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(d[8], 0x00);
	CHECK_EQ(d[9], 0x0B);
	CHECK_EQ(d[10], 0x0B);
	CHECK_EQ(d[11], 0x00);

	/* SIDR_REP: status 4, QPN at 8, service ID at 12, Q_Key at 20. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_SIDR_REP;
	m.sidr_rep.request_id = 0x0A0B0C0D;
	m.sidr_rep.status = CM_SIDR_NO_QP;
	m.sidr_rep.qpn = 0x123456;
	m.sidr_rep.service_id = cm_service_id(CM_PS_UDP, 1);
	m.sidr_rep.qkey = 0x01234567;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	static const uint8_t sidr[24] = { 0x0A, 0x0B, 0x0C, 0x0D, 3, 0, 0, 0,
		0x12, 0x34, 0x56, 0, 0, 0, 0, 0, 0x01, 0x11, 0x00, 0x01, 0x01, 0x23, 0x45, 0x67 };
	CHECK_MEM(d, sidr, sizeof(sidr));
}

/* Fills every byte of an info struct's fields with a value that fits. */
static void fill_pd(uint8_t *pd, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		pd[i] = (uint8_t)(seed + i * 7);
}

static void roundtrip(const struct cm_msg *in, size_t member_size)
{
	struct cm_mad mad;
	struct cm_msg out;

	REQUIRE(cm_mad_build(&mad, in) == 0);
	write_corpus(&mad);
	CHECK_EQ(cm_mad_parse(&mad, sizeof(mad), &out), CM_MAD_OK);
	CHECK_EQ(out.attr_id, in->attr_id);
	CHECK_EQ(out.tid, in->tid);
	CHECK(memcmp(&out.req, &in->req, member_size) == 0);
}

/* Message f of m with full private data (pattern seed) through the codec. */
#define roundtrip_pd(m, f, seed)                                                     \
	do {                                                                          \
		fill_pd((m).f.private_data, sizeof((m).f.private_data), seed);        \
		(m).f.private_data_len = sizeof((m).f.private_data);                  \
		roundtrip(&(m), sizeof((m).f));                                       \
	} while (0)

static void test_roundtrip_every_message(void)
{
	struct cm_msg m;

	make_req(&m.req, 0x00ABCD, NULL);
	memset(&m, 0, offsetof(struct cm_msg, req));
	m.attr_id = CM_ATTR_REQ;
	m.tid = 42;
	m.req.local_comm_id = 0xDEADBEEF;
	m.req.local_eecn = 0xFFFFFF;
	m.req.remote_eecn = 0x800001;
	m.req.primary.packet_rate = 0x3F;
	m.req.primary.sl = 15;
	m.req.primary.subnet_local = 1;
	m.req.alternate = m.req.primary;
	m.req.alternate.flow_label = 0xFFFFF;
	m.req.sap_supported = 1;
	m.req.srq = 1;
	m.req.rdc_exists = 1;
	m.req.end_to_end_flow_control = 1;
	m.req.extended_transport_type = 7;
	roundtrip_pd(m, req, 1);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_MRA;
	m.mra.local_comm_id = 1;
	m.mra.remote_comm_id = 0xFFFFFFFF;
	m.mra.message_mraed = 2;
	m.mra.service_timeout = 31;
	roundtrip_pd(m, mra, 2);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REJ;
	m.rej.local_comm_id = 3;
	m.rej.remote_comm_id = 4;
	m.rej.message_rejected = 1;
	m.rej.reason = CM_REJ_INVALID_ALT_FLOW_LABEL;
	m.rej.ari_len = 72;
	fill_pd(m.rej.ari, 72, 9);
	roundtrip_pd(m, rej, 3);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REP;
	m.rep.local_comm_id = 5;
	m.rep.remote_comm_id = 6;
	m.rep.local_qkey = 0x80010000;
	m.rep.local_qpn = 0xFFFFFF;
	m.rep.local_eecn = 0x123456;
	m.rep.starting_psn = 0xABCDEF;
	m.rep.responder_resources = 255;
	m.rep.initiator_depth = 254;
	m.rep.target_ack_delay = 31;
	m.rep.failover_accepted = 3;
	m.rep.end_to_end_flow_control = 1;
	m.rep.rnr_retry_count = 7;
	m.rep.srq = 1;
	m.rep.local_ca_guid = 0xFEDCBA9876543210ull;
	roundtrip_pd(m, rep, 4);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_RTU;
	m.rtu.local_comm_id = 7;
	m.rtu.remote_comm_id = 8;
	roundtrip_pd(m, rtu, 5);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_DREQ;
	m.dreq.local_comm_id = 9;
	m.dreq.remote_comm_id = 10;
	m.dreq.remote_qpn = 0x00FFFE;
	roundtrip_pd(m, dreq, 6);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_DREP;
	m.drep.local_comm_id = 11;
	m.drep.remote_comm_id = 12;
	roundtrip_pd(m, drep, 7);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_SIDR_REQ;
	m.sidr_req.request_id = 13;
	m.sidr_req.pkey = 0x7FFF;
	m.sidr_req.service_id = cm_service_id(CM_PS_UDP, 4711);
	roundtrip_pd(m, sidr_req, 8);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_SIDR_REP;
	m.sidr_rep.request_id = 14;
	m.sidr_rep.status = CM_SIDR_REDIRECT;
	m.sidr_rep.info_len = 72;
	fill_pd(m.sidr_rep.info, 72, 10);
	m.sidr_rep.qpn = 0x000042;
	m.sidr_rep.service_id = cm_service_id(CM_PS_IB, 3);
	m.sidr_rep.qkey = 0x01234567;
	roundtrip_pd(m, sidr_rep, 9);

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_CLASS_PORT_INFO;
	m.method = CM_METHOD_GET_RESP;
	m.cpi.base_version = 1;
	m.cpi.class_version = 2;
	m.cpi.capability_mask = 0x1234;
	m.cpi.resp_time_value = 18;
	roundtrip(&m, sizeof(m.cpi));
	m.method = CM_METHOD_GET;
	memset(&m.cpi, 0, sizeof(m.cpi));
	roundtrip(&m, sizeof(m.cpi));

	/* Lengths the wire cannot carry are refused by the builder. */
	struct cm_mad mad;
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REQ;
	m.req.private_data_len = 93;
	CHECK_EQ(cm_mad_build(&mad, &m), -EINVAL);
	m.attr_id = CM_ATTR_LAP;
	CHECK_EQ(cm_mad_build(&mad, &m), -EINVAL);
}

static void test_rdma_cm_conventions(void)
{
	struct cm_ip_hdr h;
	struct cm_ip_info in = { .family = AF_INET, .src_port = 0x1234 }, out;
	const uint8_t *b = (const uint8_t *)&h;
	static const uint8_t src[4] = { 192, 168, 1, 2 }, dst[4] = { 192, 168, 1, 3 };

	/* Service IDs: port space << 16 | port (rdma_cm's cma_get_service_id). */
	CHECK_EQ(cm_service_id(CM_PS_TCP, 7471), 0x01061D2F);
	CHECK_EQ(cm_service_id(CM_PS_UDP, 1), 0x01110001);
	CHECK_EQ(cm_service_id(CM_PS_IPOIB, 2), 0x00020002);
	CHECK_EQ(cm_service_id(CM_PS_IB, 3), 0x013F0003);
	CHECK_EQ(cm_service_id_port_space(0x01061D2F), CM_PS_TCP);
	CHECK_EQ(cm_service_id_port(0x01061D2F), 7471);
	CHECK_EQ(cm_service_id_port_space(0x0100000001061D2Full), 0);
	CHECK_EQ(cm_service_id_port_space(0x02221D2F), 0);

	/* cma_hdr for IPv4: version 0, IP version nibble 4, addresses last. */
	memcpy(in.src_addr, src, 4);
	memcpy(in.dst_addr, dst, 4);
	REQUIRE(cm_ip_hdr_build(&h, &in) == 0);
	static const uint8_t image[36] = { 0x00, 0x40, 0x12, 0x34,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 1, 2,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 1, 3 };
	CHECK_MEM(b, image, 36);
	CHECK_EQ(cm_ip_hdr_parse(&h, sizeof(h), &out), 0);
	CHECK_EQ(out.family, AF_INET);
	CHECK_EQ(out.src_port, 0x1234);
	CHECK_MEM(out.src_addr, src, 4);
	CHECK_MEM(out.dst_addr, dst, 4);
	/* IPv6. */
	in.family = AF_INET6;
	for (int i = 0; i < 16; i++) {
		in.src_addr[i] = (uint8_t)i;
		in.dst_addr[i] = (uint8_t)(0xF0 + i);
	}
	REQUIRE(cm_ip_hdr_build(&h, &in) == 0);
	CHECK_EQ(b[1], 0x60);
	CHECK_EQ(cm_ip_hdr_parse(&h, sizeof(h), &out), 0);
	CHECK_EQ(out.family, AF_INET6);
	CHECK_MEM(out.dst_addr, in.dst_addr, 16);
	/* Refusals. */
	CHECK_EQ(cm_ip_hdr_parse(&h, 35, &out), -EINVAL);
	h.ip_version = 0x50;
	CHECK_EQ(cm_ip_hdr_parse(&h, sizeof(h), &out), -EAFNOSUPPORT);
	h.cma_version = 1;
	CHECK_EQ(cm_ip_hdr_parse(&h, sizeof(h), &out), -EPROTONOSUPPORT);
	in.family = AF_UNIX;
	CHECK_EQ(cm_ip_hdr_build(&h, &in), -EAFNOSUPPORT);

	/* Times: 4.096 us * 2^t. */
	CHECK_EQ(cm_time_us(0), 4);
	CHECK_EQ(cm_time_us(16), 268435);
	CHECK_EQ(cm_time_us(20), 4294967);
	CHECK_EQ(cm_time_us(31), 8796093022ull);
	CHECK_EQ(cm_ack_timeout(15, 16), 17);
	CHECK_EQ(cm_ack_timeout(16, 16), 18);
	CHECK_EQ(cm_ack_timeout(20, 16), 20);
	CHECK_EQ(cm_ack_timeout(18, 16), 19);
	CHECK_EQ(cm_ack_timeout(31, 31), 31);
	CHECK_EQ(cm_ack_timeout(0, 0), 2);

	/* Names for logs. */
	CHECK(!strcmp(cm_state_name(CM_MRA_REP_RCVD), "MRA_REP_RCVD"));
	CHECK(!strcmp(cm_state_name(CM_STATE_COUNT), "?"));
	CHECK(!strcmp(cm_event_name(CM_EVENT_SIDR_REP_RECEIVED), "SIDR_REP_RECEIVED"));
	CHECK(!strcmp(cm_mad_status_name(CM_MAD_BAD_FIELD), "invalid field"));
	CHECK(!strcmp(cm_attr_name(CM_ATTR_DREP), "DREP"));
	CHECK(!strcmp(cm_attr_name(0x1234), "?"));

	/* IPv4-mapped GIDs. */
	uint8_t gid[16];
	static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1 };
	static const uint8_t ip[4] = { 10, 0, 0, 1 };
	cm_gid_from_ipv4(gid, ip);
	CHECK_MEM(gid, mapped, 16);
	CHECK(cm_gid_is_ipv4(gid));
	gid[10] = 0;
	CHECK(!cm_gid_is_ipv4(gid));
}

/* The REQ rdma_connect() sends for 10.0.0.1:40000 -> 10.0.0.2:7471 over
 * RoCE v2 (rxe, MTU 1500): byte image of the fields docs/spec.md lists. */
static void test_rdma_cm_req_image(void)
{
	struct cm_rdma_cm_req_params p = {
		.ps = CM_PS_TCP, .ip = { .family = AF_INET, .src_port = 40000,
		.src_addr = { 10, 0, 0, 1 }, .dst_addr = { 10, 0, 0, 2 } }, .dst_port = 7471,
		.qpn = 0x11, .starting_psn = 0xABCDEF, .transport = CM_TRANSPORT_RC,
		.path_mtu = 3, .ca_ack_delay = 15, .responder_resources = 1,
		.initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7,
		.private_data = "user", .private_data_len = 4,
	};
	struct cm_msg m;
	struct cm_mad mad;
	const uint8_t *d = mad.data;

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REQ;
	REQUIRE(cm_req_init_rdma_cm(&m.req, &p) == 0);
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	static const uint8_t head[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x06, 0x1D, 0x2F };
	CHECK_MEM(d + 4, head, sizeof(head));
	static const uint8_t words[20] = {
		0x00, 0x00, 0x11, 0x01,          /* QPN | responder resources */
		0x00, 0x00, 0x00, 0x01,          /* EECN | initiator depth */
		0x00, 0x00, 0x00, 20 << 3,       /* remote CM response timeout 20, RC, no FC */
		0xAB, 0xCD, 0xEF, (20 << 3) | 7, /* PSN, local CM response timeout 20, retry 7 */
		0xFF, 0xFF, (3 << 4) | 7, 15 << 4, /* P_Key, MTU 1024, RNR 7, max CM retries 15 */
	};
	CHECK_MEM(d + 32, words, sizeof(words));
	static const uint8_t path[44] = {
		0xFF, 0xFF, 0xFF, 0xFF,          /* permissive LIDs: routed (hop limit 64) */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 2,
		0x30, 0x8E, 0xF0, 0x00,          /* flow label (40000*31+7471) & 0xFFFFF, rate 0 */
		0x00, 64, 0x00, 17 << 3,         /* TC 0, hop limit 64, SL 0 not local, ACK tmo 17 */
	};
	CHECK_MEM(d + 52, path, sizeof(path));
	static const uint8_t pd[40] = { 0x00, 0x40, 0x9C, 0x40,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2, 'u', 's', 'e', 'r' };
	CHECK_MEM(d + 140, pd, sizeof(pd));
	for (int i = 96; i < 140; i++)
		CHECK_EQ(d[i], 0);              /* no alternate path */

	p.private_data_len = CM_RDMA_CM_REQ_USER_PD_MAX + 1;
	CHECK_EQ(cm_req_init_rdma_cm(&m.req, &p), -EINVAL);
	p.private_data_len = 0;
	p.ip.family = AF_UNIX;
	CHECK_EQ(cm_req_init_rdma_cm(&m.req, &p), -EAFNOSUPPORT);
}

static void test_gsi_packet(void)
{
	uint8_t pkt[CM_GSI_PKT_LEN + 8];
	struct cm_mad mad;
	struct cm_gsi_info gi;
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_RTU;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(cm_gsi_build(pkt, 10, 0xFFFF, 1, 5, &mad), 0);
	REQUIRE(cm_gsi_build(pkt, sizeof(pkt), 0xFFFF, 1, 0x123456, &mad) == CM_GSI_PKT_LEN);
	static const uint8_t head[20] = { 0x64, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0x12, 0x34, 0x56,
		0x80, 0x01, 0x00, 0x00, 0, 0, 0, 1 };
	CHECK_MEM(pkt, head, sizeof(head));
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN, &gi), 0);
	CHECK_EQ(gi.src_qpn, 1);
	CHECK_EQ(gi.pkey, 0xFFFF);
	CHECK_EQ(gi.psn, 0x123456);
	CHECK(gi.mad == pkt + 20);
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN - 1, &gi), -EINVAL);
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN + 4, &gi), -EINVAL);
	pkt[13] ^= 1; /* Q_Key */
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN, &gi), -EINVAL);
	pkt[13] ^= 1;
	pkt[7] = 2; /* destination QP */
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN, &gi), -EINVAL);
	pkt[7] = 1;
	pkt[0] = 0x04; /* RC SEND_ONLY */
	CHECK_EQ(cm_gsi_parse(pkt, CM_GSI_PKT_LEN, &gi), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Two ports back to back.                                              */

static void test_connect_accept_disconnect(void)
{
	struct cm_conn *a, *b;
	const struct rec *r;
	struct cm_ip_info ip;

	REQUIRE(setup_listening(0));
	a = connect_a("hello", 0x000A0A);
	REQUIRE(a);
	CHECK_EQ(cm_conn_state(a), CM_REQ_SENT);
	pump();
	r = find_event(&nodes[1], CM_EVENT_REQ_RECEIVED);
	REQUIRE(r);
	b = r->conn;
	CHECK(r->listen_ctx == (void *)0xB);
	CHECK_EQ(r->qpn, 0x000A0A);
	CHECK_EQ(cm_ip_hdr_parse(r->pd, sizeof(r->pd), &ip), 0);
	CHECK_EQ(ip.family, AF_INET);
	CHECK_EQ(ip.src_port, 40000);
	CHECK_MEM(r->pd + 36, "hello", 5);
	CHECK_EQ(cm_conn_state(b), CM_REQ_RCVD);
	CHECK(r->conn_ctx == NULL);
	cm_conn_set_context(b, (void *)0xBB);
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 1);

	struct cm_rep_info rep = { .local_qpn = 0x000B0B, .starting_psn = 0x222222,
		.responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 7,
		.private_data_len = 5 };
	memcpy(rep.private_data, "world", 5);
	CHECK_EQ(cm_send_rep(b, &rep), 0);
	CHECK_EQ(cm_send_rep(b, &rep), -EINVAL); /* not twice */
	pump();
	r = find_event(&nodes[0], CM_EVENT_REP_RECEIVED);
	REQUIRE(r);
	CHECK(r->conn == a);
	CHECK_EQ(r->qpn, 0x000B0B);
	CHECK_MEM(r->pd, "world", 5);
	CHECK(r->conn_ctx == (void *)0xA);
	CHECK_EQ(cm_conn_remote_id(a), cm_conn_local_id(b));
	CHECK_EQ(cm_conn_remote_id(b), cm_conn_local_id(a));
	CHECK_EQ(cm_send_rtu(a, "rtu", 3), 0);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_ESTABLISHED);
	CHECK_EQ(cm_conn_state(b), CM_ESTABLISHED);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_ESTABLISHED), 1);
	CHECK(find_event(&nodes[1], CM_EVENT_ESTABLISHED)->conn_ctx == (void *)0xBB);
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 0);

	/* Disconnect from the active side, answer from the passive side. */
	CHECK_EQ(cm_send_dreq(a, "bye", 3), 0);
	pump();
	r = find_event(&nodes[1], CM_EVENT_DREQ_RECEIVED);
	REQUIRE(r);
	CHECK_MEM(r->pd, "bye", 3);
	CHECK_EQ(cm_send_drep(b, NULL, 0), 0);
	pump();
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_DREP_RECEIVED), 1);
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	CHECK_EQ(cm_conn_state(b), CM_TIMEWAIT);
	while (run_next_timer())
		;
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_TIMEWAIT_EXIT), 1);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_TIMEWAIT_EXIT), 1);
	CHECK_EQ(cm_conn_state(a), CM_IDLE);
	cm_conn_destroy(a);
	cm_conn_destroy(b);
	CHECK_EQ(cm_port_stats(nodes[0].port)->conns, 0);
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 0);
	CHECK_EQ(cm_port_stats(nodes[0].port)->retransmits, 0);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_unmatched, 0);
	teardown();
}

static void test_reject(void)
{
	struct cm_conn *a;
	const struct rec *r;

	REQUIRE(setup_listening(0));
	nodes[1].auto_rej = CM_REJ_CONSUMER_DEFINED;
	a = connect_a(NULL, 0x10);
	REQUIRE(a);
	pump();
	r = find_event(&nodes[0], CM_EVENT_REJ_RECEIVED);
	REQUIRE(r);
	CHECK(r->conn == a);
	CHECK_EQ(r->reason, CM_REJ_CONSUMER_DEFINED);
	CHECK_MEM(r->pd, "no thanks", 9);
	CHECK_EQ(cm_conn_state(a), CM_IDLE);
	CHECK_EQ(cm_port_next_timeout(nodes[0].port), UINT64_MAX);
	cm_conn_destroy(a);
	CHECK_EQ(cm_conn_state(nodes[1].last_conn), CM_IDLE);
	cm_conn_destroy(nodes[1].last_conn);

	/* Nobody listening on the service: REJ(invalid service ID). */
	nodes[1].auto_rej = 0;
	struct cm_req_info req;
	make_req(&req, 0x11, NULL);
	req.service_id = cm_service_id(CM_PS_TCP, 9);
	REQUIRE(cm_connect(nodes[0].port, &req, &nodes[1].addr, NULL, &a) == 0);
	pump();
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].type, CM_EVENT_REJ_RECEIVED);
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].reason, CM_REJ_INVALID_SERVICE_ID);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_no_listener, 1);
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 0);
	cm_conn_destroy(a);
	CHECK_EQ(cm_port_stats(nodes[0].port)->conns, 0);
	teardown();
}

static void test_mra_extends_wait(void)
{
	struct cm_conn *a, *b;
	uint64_t t_req, t_mra;

	REQUIRE(setup_listening(0));
	nodes[1].auto_mra = true;
	a = connect_a(NULL, 0x20);
	REQUIRE(a);
	t_req = cm_port_next_timeout(nodes[0].port);
	CHECK_EQ(t_req - now_us, cm_time_us(20) + cm_time_us(18));
	pump();
	CHECK_EQ(cm_conn_state(a), CM_MRA_REQ_RCVD);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_MRA_RECEIVED), 1);
	t_mra = cm_port_next_timeout(nodes[0].port);
	CHECK_EQ(t_mra - now_us, cm_time_us(24) + cm_time_us(18));
	/* Past the REQ timeout, nothing is resent. */
	now_us = t_req + 1;
	cm_port_tick(nodes[0].port);
	CHECK_EQ(cm_port_stats(nodes[0].port)->retransmits, 0);
	/* After the MRA's time the REQ is resent; the passive side answers
	 * with its MRA again, which restarts the wait without a new event. */
	now_us = t_mra;
	cm_port_tick(nodes[0].port);
	CHECK_EQ(cm_port_stats(nodes[0].port)->retransmits, 1);
	pump();
	CHECK_EQ(sent_by_attr[CM_ATTR_MRA], 2);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_MRA_RECEIVED), 1);
	CHECK_EQ(cm_port_next_timeout(nodes[0].port) - now_us, cm_time_us(24) + cm_time_us(18));
	b = nodes[1].last_conn;
	struct cm_rep_info rep = { .local_qpn = 0x21 };
	CHECK_EQ(cm_send_rep(b, &rep), 0);
	nodes[0].auto_rtu = true;
	pump();
	CHECK_EQ(cm_conn_state(a), CM_ESTABLISHED);
	CHECK_EQ(cm_conn_state(b), CM_ESTABLISHED);
	teardown();
}

static void test_lost_rep_and_rtu_are_retried(void)
{
	struct cm_conn *a, *b;

	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	drop_attr = CM_ATTR_REP;
	drop_count = 1;
	a = connect_a(NULL, 0x30);
	REQUIRE(a);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_REQ_SENT);
	b = nodes[1].last_conn;
	CHECK_EQ(cm_conn_state(b), CM_REP_SENT);
	/* The first timer to fire resends (REQ or REP): either recovers. */
	REQUIRE(run_next_timer());
	CHECK_EQ(cm_conn_state(a), CM_ESTABLISHED);
	CHECK_EQ(cm_conn_state(b), CM_ESTABLISHED);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 1);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_REP_RECEIVED), 1);
	teardown();

	/* Lost RTU: the passive side resends its REP, the active side
	 * (established) answers with its saved RTU. */
	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	drop_attr = CM_ATTR_RTU;
	drop_count = 1;
	a = connect_pumped(0x31, &b);
	REQUIRE(a);
	CHECK_EQ(cm_conn_state(a), CM_ESTABLISHED);
	CHECK_EQ(cm_conn_state(b), CM_REP_SENT);
	REQUIRE(run_next_timer());
	CHECK_EQ(cm_conn_state(b), CM_ESTABLISHED);
	CHECK_EQ(sent_by_attr[CM_ATTR_RTU], 2);
	CHECK_EQ(cm_port_stats(nodes[1].port)->retransmits, 1);
	CHECK_EQ(cm_port_stats(nodes[0].port)->rx_duplicates, 1);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_REP_RECEIVED), 1);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_ESTABLISHED), 1);
	teardown();

	/* Lost RTU, but data arrives on the QP: the passive side is told. */
	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	drop_attr = CM_ATTR_RTU;
	drop_count = 1;
	a = connect_pumped(0x32, &b);
	REQUIRE(a);
	CHECK_EQ(cm_conn_state(b), CM_REP_SENT);
	CHECK_EQ(cm_notify_established(b), 0);
	CHECK_EQ(cm_conn_state(b), CM_ESTABLISHED);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_ESTABLISHED), 1);
	CHECK_EQ(cm_port_next_timeout(nodes[1].port), UINT64_MAX);
	CHECK_EQ(cm_notify_established(b), 0);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_ESTABLISHED), 1);
	CHECK_EQ(cm_notify_established(a), 0); /* already up: nothing happens */
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_ESTABLISHED), 0);
	teardown();
}

static void test_duplicate_req(void)
{
	struct cm_conn *a, *b;

	REQUIRE(setup_listening(0));
	save_attr = CM_ATTR_REQ;
	a = connect_pumped(0x40, &b);
	REQUIRE(a);
	REQUIRE(b);
	/* REQ_RCVD: the user is deciding, a duplicate is dropped. */
	cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 1);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_duplicates, 1);
	CHECK_EQ(qlen, 0);
	/* MRA_REQ_SENT: the saved MRA answers. */
	CHECK_EQ(cm_send_mra(b, 20, NULL, 0), 0);
	pump();
	cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src);
	CHECK_EQ(sent_by_attr[CM_ATTR_MRA], 2);
	pump();
	/* REP_SENT: the saved REP answers. */
	struct cm_rep_info rep = { .local_qpn = 0x41 };
	CHECK_EQ(cm_send_rep(b, &rep), 0);
	pump();
	cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src);
	CHECK_EQ(sent_by_attr[CM_ATTR_REP], 2);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 1);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_duplicates, 3);
	pump();
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_REP_RECEIVED), 1);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_MRA_RECEIVED), 1);
	CHECK_EQ(cm_port_stats(nodes[0].port)->rx_duplicates, 2); /* MRA and REP */
	teardown();
}

static void test_timeouts_to_failure(void)
{
	struct cm_conn *a;
	struct cm_req_info req;
	const struct rec *r;
	int fired = 0;

	setup();
	make_req(&req, 0x50, NULL);
	req.max_cm_retries = 3;
	/* Nobody at this GID: every MAD is lost. */
	struct cm_addr nowhere = nodes[1].addr;
	nowhere.gid[15] = 99;
	REQUIRE(cm_connect(nodes[0].port, &req, &nowhere, NULL, &a) == 0);
	while (run_next_timer())
		fired++;
	CHECK_EQ(fired, 4);
	CHECK_EQ(cm_port_stats(nodes[0].port)->retransmits, 3);
	CHECK_EQ(cm_port_stats(nodes[0].port)->timeouts, 1);
	CHECK_EQ(sent_by_attr[CM_ATTR_REQ], 4);
	CHECK_EQ(sent_by_attr[CM_ATTR_REJ], 1); /* REJ(timeout) */
	r = find_event(&nodes[0], CM_EVENT_REQ_ERROR);
	REQUIRE(r);
	CHECK_EQ(r->status, -ETIMEDOUT);
	CHECK_EQ(cm_conn_state(a), CM_IDLE);
	cm_conn_destroy(a);
	CHECK_EQ(cm_port_stats(nodes[0].port)->conns, 0);
	teardown();

	/* Passive side: REP never answered. The active side gets the REJ(timeout). */
	REQUIRE(setup_listening(AUTO_REP));
	drop_attr = CM_ATTR_REP;
	drop_count = 100;
	make_req(&req, 0x51, NULL);
	req.max_cm_retries = 2;
	REQUIRE(cm_connect(nodes[0].port, &req, &nodes[1].addr, NULL, &a) == 0);
	pump();
	while (run_next_timer())
		;
	r = find_event(&nodes[1], CM_EVENT_REP_ERROR);
	REQUIRE(r);
	CHECK_EQ(r->status, -ETIMEDOUT);
	/* The active side ran out too; whichever gave up first, both ended. */
	CHECK(find_event(&nodes[0], CM_EVENT_REQ_ERROR) ||
	      find_event(&nodes[0], CM_EVENT_REJ_RECEIVED));
	teardown();

	/* DREQ unanswered: timewait anyway, DREP_RECEIVED(-ETIMEDOUT). */
	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	a = connect_a(NULL, 0x52);
	REQUIRE(a);
	pump();
	REQUIRE(cm_conn_state(a) == CM_ESTABLISHED);
	drop_attr = CM_ATTR_DREQ;
	drop_count = 100;
	CHECK_EQ(cm_send_dreq(a, NULL, 0), 0);
	while (run_next_timer())
		;
	r = find_event(&nodes[0], CM_EVENT_DREP_RECEIVED);
	REQUIRE(r);
	CHECK_EQ(r->status, -ETIMEDOUT);
	CHECK_EQ(sent_by_attr[CM_ATTR_DREQ], 16);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_TIMEWAIT_EXIT), 1);
	teardown();
}

static void test_stale_connection(void)
{
	struct cm_conn *a, *a2;
	const struct rec *r;

	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	nodes[1].auto_drep = true;
	save_attr = CM_ATTR_REQ;
	a = connect_a(NULL, 0x60);
	REQUIRE(a);
	pump();
	REQUIRE(cm_conn_state(a) == CM_ESTABLISHED);
	save_attr = 0;

	/* A new REQ from the same remote QP while connected: REJ(stale). */
	a2 = connect_a(NULL, 0x60);
	REQUIRE(a2);
	pump();
	r = &nodes[0].ev[nodes[0].nev - 1];
	CHECK(r->conn == a2);
	CHECK_EQ(r->type, CM_EVENT_REJ_RECEIVED);
	CHECK_EQ(r->reason, CM_REJ_STALE_CONN);
	CHECK_EQ(cm_conn_state(a2), CM_TIMEWAIT);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_stale, 1);

	/* The old REQ replayed while the connection is in timewait. */
	CHECK_EQ(cm_send_dreq(a, NULL, 0), 0);
	pump();
	CHECK_EQ(cm_conn_state(nodes[1].last_conn), CM_TIMEWAIT);
	int rej_before = sent_by_attr[CM_ATTR_REJ];
	cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src);
	CHECK_EQ(sent_by_attr[CM_ATTR_REJ], rej_before + 1);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_stale, 2);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 1);
	teardown();
}

static void test_sidr(void)
{
	struct cm_listener *l = NULL;
	struct cm_sidr_req_info req;
	struct cm_conn *a;
	const struct rec *r;

	setup();
	REQUIRE(cm_listen(nodes[1].port, cm_service_id(CM_PS_UDP, 4711), 0, (void *)0xC, &l) == 0);
	CHECK_EQ(cm_listen(nodes[1].port, cm_service_id(CM_PS_UDP, 4711), 0, NULL, &l),
		 -EADDRINUSE);
	memset(&req, 0, sizeof(req));
	req.pkey = 0xFFFF;
	req.service_id = cm_service_id(CM_PS_UDP, 4711);
	memcpy(req.private_data, "udp?", 4);
	req.private_data_len = 4;
	REQUIRE(cm_sidr_resolve(nodes[0].port, &req, &nodes[1].addr, 16, 3, (void *)0xD, &a) == 0);
	pump();
	r = find_event(&nodes[1], CM_EVENT_SIDR_REQ_RECEIVED);
	REQUIRE(r);
	CHECK(r->listen_ctx == (void *)0xC);
	CHECK_MEM(r->pd, "udp?", 4);
	struct cm_sidr_rep_info rep = { .status = CM_SIDR_SUCCESS, .qpn = 0x001234,
		.qkey = 0x01234567, .private_data_len = 3 };
	memcpy(rep.private_data, "ok!", 3);
	CHECK_EQ(cm_send_sidr_rep(r->conn, &rep), 0);
	pump();
	r = find_event(&nodes[0], CM_EVENT_SIDR_REP_RECEIVED);
	REQUIRE(r);
	CHECK(r->conn == a);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(r->sidr_status, CM_SIDR_SUCCESS);
	CHECK_EQ(r->qpn, 0x001234);
	CHECK_MEM(r->pd, "ok!", 3);
	cm_conn_destroy(a);
	CHECK_EQ(cm_port_stats(nodes[0].port)->conns, 0);
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 0);

	/* Unknown service: SIDR_REP(unsupported). */
	req.service_id = cm_service_id(CM_PS_UDP, 1);
	REQUIRE(cm_sidr_resolve(nodes[0].port, &req, &nodes[1].addr, 16, 3, NULL, &a) == 0);
	pump();
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].type, CM_EVENT_SIDR_REP_RECEIVED);
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].sidr_status, CM_SIDR_UNSUPPORTED);
	cm_conn_destroy(a);

	/* Nobody answers: retries, then -ETIMEDOUT. */
	drop_attr = CM_ATTR_SIDR_REQ;
	drop_count = 100;
	REQUIRE(cm_sidr_resolve(nodes[0].port, &req, &nodes[1].addr, 16, 2, NULL, &a) == 0);
	while (run_next_timer())
		;
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].type, CM_EVENT_SIDR_REP_RECEIVED);
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].status, -ETIMEDOUT);
	CHECK_EQ(cm_port_stats(nodes[0].port)->retransmits, 2);
	cm_conn_destroy(a);
	cm_listener_destroy(l);
	teardown();
}

static void test_destroy_tears_down(void)
{
	struct cm_conn *a, *b;

	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	nodes[1].auto_drep = true;
	a = connect_pumped(0x70, &b);
	REQUIRE(a);
	REQUIRE(cm_conn_state(a) == CM_ESTABLISHED);
	/* The process owning the active side dies. */
	int events_before = nodes[0].nev;
	cm_conn_destroy(a);
	pump();
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_DREQ_RECEIVED), 1);
	CHECK_EQ(cm_conn_state(b), CM_TIMEWAIT);
	while (run_next_timer())
		;
	CHECK_EQ(nodes[0].nev, events_before); /* no events after destroy */
	CHECK_EQ(cm_port_stats(nodes[0].port)->conns, 0);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_TIMEWAIT_EXIT), 1);

	/* Destroy of a passive connection before the answer: REJ. */
	nodes[1].auto_rep = false;
	a = connect_a(NULL, 0x71);
	REQUIRE(a);
	pump();
	cm_conn_destroy(nodes[1].last_conn);
	pump();
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].type, CM_EVENT_REJ_RECEIVED);
	CHECK_EQ(nodes[0].ev[nodes[0].nev - 1].reason, CM_REJ_CONSUMER_DEFINED);
	teardown();
}

static void test_req_flood_bounded(void)
{
	struct cm_conn *a;

	setup_cfg(4);
	REQUIRE(listen_b());
	for (uint32_t i = 0; i < 10; i++)
		REQUIRE(connect_a(NULL, 0x100 + i));
	pump();
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 4);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_flood_dropped, 6);
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 4);
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 4);
	/* Once one is answered, a retried REQ gets in. */
	cm_send_rej(nodes[1].ev[0].conn, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
	pump();
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 3);
	a = connect_a(NULL, 0x200);
	REQUIRE(a);
	pump();
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 5);
	teardown();
}

/* One service flooded to its backlog leaves the port's other services
 * reachable. */
static void test_listener_backlog_isolates_services(void)
{
	struct cm_listener *busy = NULL, *other = NULL;
	struct cm_req_info req;
	struct cm_conn *a;

	setup_cfg(8);
	REQUIRE(cm_listen(nodes[1].port, cm_service_id(CM_PS_TCP, SERVICE_PORT), 2, (void *)1,
			  &busy) == 0);
	REQUIRE(cm_listen(nodes[1].port, cm_service_id(CM_PS_TCP, 80), 2, (void *)2, &other) == 0);
	for (uint32_t i = 0; i < 5; i++)
		REQUIRE(connect_a(NULL, 0x300 + i));
	pump();
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 2);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_flood_dropped, 3);
	make_req(&req, 0x400, NULL);
	req.service_id = cm_service_id(CM_PS_TCP, 80);
	REQUIRE(cm_connect(nodes[0].port, &req, &nodes[1].addr, NULL, &a) == 0);
	pump();
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 3);
	CHECK(nodes[1].ev[2].listen_ctx == (void *)2);
	/* A listener going away leaves its pending requests valid. */
	cm_listener_destroy(busy);
	CHECK_EQ(cm_send_rej(nodes[1].ev[0].conn, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0), 0);
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 2);
	teardown();
}

/* After a disconnect, the same remote QP may connect again at once (its old
 * connection is in timewait, not connected). */
static void test_reconnect_from_same_qp(void)
{
	struct cm_conn *a;

	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	nodes[1].auto_drep = true;
	a = connect_a(NULL, 0x77);
	REQUIRE(a);
	pump();
	CHECK_EQ(cm_send_dreq(a, NULL, 0), 0);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	a = connect_a(NULL, 0x77);
	REQUIRE(a);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_ESTABLISHED);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_REQ_RECEIVED), 2);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_stale, 0);
	teardown();
}

/* Less common transitions: MRA of a REP, the active side rejecting a REP, a
 * passive side told by REJ(timeout) that the active side gave up, crossing
 * DREQs, repeated DREQs, destroy in every waiting state, bad transport. */
static void test_other_transitions(void)
{
	struct cm_conn *a, *b;
	struct cm_msg m;
	struct cm_mad mad;
	const struct rec *r;
	uint64_t before;

	/* The active side MRAs the REP (as Linux's rdma_cm does). */
	REQUIRE(setup_listening(AUTO_REP));
	a = connect_pumped(0x80, &b);
	REQUIRE(a);
	REQUIRE(cm_conn_state(a) == CM_REP_RCVD);
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_MRA;
	m.mra.local_comm_id = cm_conn_local_id(a);
	m.mra.remote_comm_id = cm_conn_local_id(b);
	m.mra.message_mraed = CM_MSG_RESPONSE_REP;
	m.mra.service_timeout = 24;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(cm_port_recv(nodes[1].port, &mad, sizeof(mad), &nodes[0].addr), 0);
	CHECK_EQ(cm_conn_state(b), CM_MRA_REP_RCVD);
	CHECK_EQ(cm_port_next_timeout(nodes[1].port) - now_us, cm_time_us(24) + cm_time_us(18));
	/* ... then rejects it: both sides end in timewait. */
	CHECK_EQ(cm_send_rej(a, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0), 0);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	CHECK_EQ(cm_conn_state(b), CM_TIMEWAIT);
	r = find_event(&nodes[1], CM_EVENT_REJ_RECEIVED);
	REQUIRE(r);
	CHECK_EQ(r->reason, CM_REJ_CONSUMER_DEFINED);
	teardown();

	/* Nobody answers the REQ on the passive side: the active side gives up
	 * with REJ(timeout), which reaches the passive side. */
	REQUIRE(setup_listening(0));
	struct cm_req_info req;
	make_req(&req, 0x81, NULL);
	req.max_cm_retries = 1;
	REQUIRE(cm_connect(nodes[0].port, &req, &nodes[1].addr, NULL, &a) == 0);
	pump();
	b = nodes[1].last_conn;
	REQUIRE(cm_conn_state(b) == CM_REQ_RCVD);
	while (run_next_timer() && cm_conn_state(b) == CM_REQ_RCVD)
		;
	CHECK(find_event(&nodes[0], CM_EVENT_REQ_ERROR) != NULL);
	r = find_event(&nodes[1], CM_EVENT_REJ_RECEIVED);
	REQUIRE(r);
	CHECK_EQ(r->reason, CM_REJ_TIMEOUT);
	CHECK_EQ(cm_port_stats(nodes[1].port)->pending, 0);
	teardown();

	/* Crossing DREQs, then a repeated DREQ in timewait gets a DREP. */
	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU | AUTO_DREP));
	save_attr = CM_ATTR_DREQ;
	a = connect_pumped(0x82, &b);
	REQUIRE(a);
	CHECK_EQ(cm_send_dreq(a, NULL, 0), 0);
	CHECK_EQ(cm_send_dreq(b, NULL, 0), 0);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	CHECK_EQ(cm_conn_state(b), CM_TIMEWAIT);
	CHECK_EQ(count_events(&nodes[0], CM_EVENT_DREQ_RECEIVED), 1);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_DREQ_RECEIVED), 1);
	before = (uint64_t)sent_by_attr[CM_ATTR_DREP];
	cm_port_recv(nodes[saved.to].port, &saved.mad, sizeof(saved.mad), &saved.src);
	CHECK_EQ(sent_by_attr[CM_ATTR_DREP], (int)before + 1);
	pump();
	teardown();

	/* DREQ received while the user has not answered the previous one. */
	REQUIRE(setup_listening(AUTO_REP | AUTO_RTU));
	save_attr = CM_ATTR_DREQ;
	a = connect_pumped(0x83, &b);
	REQUIRE(a);
	CHECK_EQ(cm_send_dreq(a, NULL, 0), 0);
	pump();
	CHECK_EQ(cm_conn_state(b), CM_DREQ_RCVD);
	CHECK_EQ(cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src),
		 -EALREADY);
	/* The user goes away instead of answering: DREP on its behalf. */
	cm_conn_destroy(b);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	teardown();

	/* Destroy while the REP is unanswered: REJ(REP), timewait, then freed. */
	REQUIRE(setup_listening(AUTO_REP));
	a = connect_pumped(0x84, &b);
	REQUIRE(a);
	REQUIRE(cm_conn_state(b) == CM_REP_SENT);
	cm_conn_destroy(b);
	pump();
	CHECK_EQ(cm_conn_state(a), CM_TIMEWAIT);
	CHECK_EQ(find_event(&nodes[0], CM_EVENT_REJ_RECEIVED)->reason, CM_REJ_CONSUMER_DEFINED);
	while (run_next_timer())
		;
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 0);
	/* Destroy while our REQ is unanswered: REJ(timeout) to the peer. */
	nodes[1].auto_rep = false;
	a = connect_pumped(0x85, &b);
	REQUIRE(a);
	cm_conn_destroy(a);
	pump();
	CHECK_EQ(cm_conn_state(b), CM_TIMEWAIT);
	CHECK_EQ(nodes[1].ev[nodes[1].nev - 1].reason, CM_REJ_TIMEOUT);
	teardown();

	/* RD and unknown extended transports are refused. */
	REQUIRE(setup_listening(0));
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REQ;
	make_req(&m.req, 0x86, NULL);
	m.req.local_comm_id = 1234;
	m.req.transport_service_type = CM_TRANSPORT_RD;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(cm_port_recv(nodes[1].port, &mad, sizeof(mad), &nodes[0].addr),
		 -EPROTONOSUPPORT);
	REQUIRE(qlen == 1);
	CHECK(cm_mad_parse(&queue[0].mad, sizeof(mad), &m) == CM_MAD_OK);
	CHECK_EQ(m.rej.reason, CM_REJ_INVALID_TRANSPORT_TYPE);
	CHECK_EQ(m.rej.remote_comm_id, 1234);
	CHECK_EQ(cm_port_stats(nodes[1].port)->rx_bad_req, 1);
	qlen = 0;
	make_req(&req, 0x87, NULL);
	req.transport_service_type = CM_TRANSPORT_RD;
	CHECK_EQ(cm_connect(nodes[0].port, &req, &nodes[1].addr, NULL, &a), -EINVAL);
	teardown();
}

/* SIDR: a repeated SIDR_REQ while the user decides is a duplicate; the
 * user going away answers SIDR_REP(reject). */
static void test_sidr_duplicate_and_abandon(void)
{
	struct cm_listener *l = NULL;
	struct cm_sidr_req_info req = { .service_id = cm_service_id(CM_PS_UDP, 5) };
	struct cm_conn *a;
	const struct rec *r;

	setup();
	REQUIRE(cm_listen(nodes[1].port, req.service_id, 0, NULL, &l) == 0);
	save_attr = CM_ATTR_SIDR_REQ;
	REQUIRE(cm_sidr_resolve(nodes[0].port, &req, &nodes[1].addr, 16, 3, NULL, &a) == 0);
	pump();
	r = find_event(&nodes[1], CM_EVENT_SIDR_REQ_RECEIVED);
	REQUIRE(r);
	CHECK_EQ(cm_port_recv(nodes[1].port, &saved.mad, sizeof(saved.mad), &saved.src),
		 -EALREADY);
	CHECK_EQ(count_events(&nodes[1], CM_EVENT_SIDR_REQ_RECEIVED), 1);
	cm_conn_destroy(r->conn);
	pump();
	r = find_event(&nodes[0], CM_EVENT_SIDR_REP_RECEIVED);
	REQUIRE(r);
	CHECK_EQ(r->sidr_status, CM_SIDR_REJECT);
	CHECK_EQ(cm_port_stats(nodes[1].port)->conns, 0);
	/* The same SIDR_REP again: the request is over. */
	CHECK_EQ(cm_port_recv(nodes[0].port, &queue[0].mad, sizeof(queue[0].mad),
			      &nodes[1].addr), -ENOENT); /* queue[0]: the last MAD delivered */
	CHECK_EQ(cm_port_stats(nodes[0].port)->rx_unmatched, 1);
	teardown();
}

static void test_bad_input_refused_and_counted(void)
{
	struct cm_mad mad, good;
	struct cm_msg m;
	const struct cm_port_stats *st;
	struct cm_port *b;
	struct cm_addr src;
	struct pkt p;

	setup();
	b = nodes[1].port;
	src = nodes[0].addr;
	st = cm_port_stats(b);
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_RTU;
	REQUIRE(cm_mad_build(&good, &m) == 0);

	CHECK_EQ(cm_port_recv(b, &good, 255, &src), -EBADMSG);
	CHECK_EQ(cm_port_recv(b, &good, 257, &src), -EBADMSG);
	CHECK_EQ(cm_port_recv(b, NULL, 0, &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_LENGTH], 3);

	mad = good;
	mad.hdr.base_version = 2;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_BASE_VERSION], 1);
	mad = good;
	mad.hdr.mgmt_class = 0x03; /* SA */
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_CLASS], 1);
	CHECK_EQ(qlen, 0);

	/* A Get with a class version we do not speak: GetResp(bad version). */
	mad = good;
	mad.hdr.class_version = 1;
	mad.hdr.method = CM_METHOD_GET;
	put_be16(mad.hdr.attr_id, CM_ATTR_CLASS_PORT_INFO);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_CLASS_VERSION], 1);
	REQUIRE(qlen == 1);
	p = queue[0];
	qlen = 0;
	CHECK_EQ(p.mad.hdr.method, CM_METHOD_GET_RESP);
	CHECK_EQ(get_be16(p.mad.hdr.status), CM_MAD_STATUS_BAD_VERSION);
	CHECK_EQ(p.to, 0);
	/* The same as a Send: dropped without an answer. */
	mad.hdr.method = CM_METHOD_SEND;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(qlen, 0);

	/* Set: unsupported method. */
	mad = good;
	mad.hdr.method = CM_METHOD_SET;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_METHOD], 1);
	REQUIRE(qlen == 1);
	CHECK_EQ(get_be16(queue[0].mad.hdr.status), CM_MAD_STATUS_UNSUPPORTED_METHOD);
	qlen = 0;
	/* Get of a CM message: unsupported method/attribute combination. */
	mad = good;
	mad.hdr.method = CM_METHOD_GET;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_ATTR], 1);
	REQUIRE(qlen == 1);
	CHECK_EQ(get_be16(queue[0].mad.hdr.status), CM_MAD_STATUS_UNSUPPORTED_ATTR);
	qlen = 0;
	/* Send of an unknown attribute, LAP and APR: dropped, counted. */
	mad = good;
	put_be16(mad.hdr.attr_id, 0x0030);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_ATTR], 2);
	put_be16(mad.hdr.attr_id, CM_ATTR_LAP);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	put_be16(mad.hdr.attr_id, CM_ATTR_APR);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_UNSUPPORTED_ATTR], 2);
	/* Responses (R bit) to nothing. */
	mad = good;
	mad.hdr.method = CM_METHOD_SEND | CM_METHOD_RESP;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_METHOD], 2);
	CHECK_EQ(qlen, 0);
	/* REJ with an ARI length over 72. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_REJ;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	mad.data[9] = 100 << 1;
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -EBADMSG);
	CHECK_EQ(st->rx_refused[CM_MAD_BAD_FIELD], 1);
	/* Well-formed messages for no connection. */
	CHECK_EQ(cm_port_recv(b, &good, sizeof(good), &src), -ENOENT);
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_DREQ;
	m.dreq.local_comm_id = 5;
	m.dreq.remote_comm_id = 6;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), -ENOENT);
	REQUIRE(qlen == 1); /* DREQ for nothing: DREP anyway */
	CHECK_EQ(get_be16(queue[0].mad.hdr.attr_id), CM_ATTR_DREP);
	CHECK_EQ(get_be32(queue[0].mad.data), 6);
	CHECK_EQ(get_be32(queue[0].mad.data + 4), 5);
	qlen = 0;
	CHECK_EQ(st->rx_unmatched, 2);

	/* Get(ClassPortInfo): answered. */
	memset(&m, 0, sizeof(m));
	m.attr_id = CM_ATTR_CLASS_PORT_INFO;
	m.method = CM_METHOD_GET;
	m.tid = 77;
	REQUIRE(cm_mad_build(&mad, &m) == 0);
	CHECK_EQ(cm_port_recv(b, &mad, sizeof(mad), &src), 0);
	REQUIRE(qlen == 1);
	CHECK_EQ(cm_mad_parse(&queue[0].mad, sizeof(mad), &m), CM_MAD_OK);
	CHECK_EQ(m.method, CM_METHOD_GET_RESP);
	CHECK_EQ(m.tid, 77);
	CHECK_EQ(m.cpi.base_version, 1);
	CHECK_EQ(m.cpi.class_version, 2);
	CHECK_EQ(m.cpi.resp_time_value, 18);
	qlen = 0;
	CHECK_EQ(st->rx_attr[0], 1);
	CHECK_EQ(st->tx_resp_status, 3);
	CHECK_EQ(cm_port_stats(b)->conns, 0);
	teardown();
}

int main(int argc, char **argv)
{
	TEST_PROGRAM("test_cm");
	if (argc == 3 && !strcmp(argv[1], "--write-corpus"))
		corpus_dir = argv[2];
	RUN(test_req_wire_image);
	RUN(test_small_messages_wire_image);
	RUN(test_roundtrip_every_message);
	RUN(test_rdma_cm_conventions);
	RUN(test_rdma_cm_req_image);
	RUN(test_gsi_packet);
	RUN(test_connect_accept_disconnect);
	RUN(test_reject);
	RUN(test_mra_extends_wait);
	RUN(test_lost_rep_and_rtu_are_retried);
	RUN(test_duplicate_req);
	RUN(test_timeouts_to_failure);
	RUN(test_stale_connection);
	RUN(test_sidr);
	RUN(test_destroy_tears_down);
	RUN(test_req_flood_bounded);
	RUN(test_listener_backlog_isolates_services);
	RUN(test_reconnect_from_same_qp);
	RUN(test_other_transitions);
	RUN(test_sidr_duplicate_and_abandon);
	RUN(test_bad_input_refused_and_counted);
	return TEST_DONE();
}
