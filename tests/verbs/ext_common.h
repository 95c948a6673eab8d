/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the extension acceptance programs (ext_atomic.c,
 * ext_mw.c): plain libibverbs, connection data exchanged over TCP.
 *
 * Every program opens one device (the first one, or -d NAME), uses port 1
 * and the GID index given by -g (default 1: the IPv4-mapped RoCE v2 GID of
 * a vrdma device), and connects RC QPs INIT -> RTR -> RTS with the peer's
 * {qpn, psn, gid}. Every wait is bounded (EXT_TIMEOUT_MS) so that a lost
 * completion ends in a failure message instead of a hang; the bound is a
 * guard, not a timing assumption.
 */
#ifndef VRDMA_TESTS_VERBS_EXT_COMMON_H
#define VRDMA_TESTS_VERBS_EXT_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXT_TIMEOUT_MS 120000
#define EXT_UNUSED __attribute__((unused))

static const char *ext_prog = "ext";

/* Print "PROG: FAIL: ..." and exit 1. */
static EXT_UNUSED __attribute__((noreturn, format(printf, 1, 2))) void
ext_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", ext_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Print "PROG: msg" on stdout (flushed). */
static EXT_UNUSED __attribute__((format(printf, 1, 2))) void ext_say(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ext_prog);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static EXT_UNUSED uint64_t ext_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- TCP ------------------------------------------------------------------ */

/* A listening socket on 0.0.0.0:port. Returns the fd (dies on error). */
static EXT_UNUSED int ext_listen(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		ext_die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0)
		ext_die("bind/listen on port %d: %s", port, strerror(errno));
	return fd;
}

/* Accept one connection (bounded wait). Returns its fd. */
static EXT_UNUSED int ext_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int one = 1, fd;

	if (poll(&p, 1, EXT_TIMEOUT_MS) != 1)
		ext_die("no client connected within %d ms", EXT_TIMEOUT_MS);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		ext_die("accept: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Connect to host:port. Returns the fd. */
static EXT_UNUSED int ext_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res, *r;
	char ps[16];
	int one = 1, fd = -1, rc;

	snprintf(ps, sizeof(ps), "%d", port);
	rc = getaddrinfo(host, ps, &hints, &res);
	if (rc)
		ext_die("getaddrinfo %s: %s", host, gai_strerror(rc));
	for (r = res; r; r = r->ai_next) {
		fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, r->ai_addr, r->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		ext_die("cannot connect to %s:%d", host, port);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static EXT_UNUSED void ext_send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ext_die("send to peer: %s", n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

/* Receive exactly len bytes (bounded wait per chunk). */
static EXT_UNUSED void ext_recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, EXT_TIMEOUT_MS) != 1)
			ext_die("peer sent nothing within %d ms", EXT_TIMEOUT_MS);
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ext_die("receive from peer: %s", n < 0 ? strerror(errno) : "peer closed");
		p += n;
		len -= (size_t)n;
	}
}

/* A step message of the test protocols: a type and four values. */
struct ext_msg {
	uint32_t type;
	uint32_t pad;
	uint64_t v[4];
};

static EXT_UNUSED void ext_send_msg(int fd, uint32_t type, uint64_t a, uint64_t b, uint64_t c,
				    uint64_t d)
{
	struct ext_msg m = { .type = type, .v = { a, b, c, d } };

	ext_send_all(fd, &m, sizeof(m));
}

/* Receive a message and check its type. */
static EXT_UNUSED struct ext_msg ext_expect_msg(int fd, uint32_t type)
{
	struct ext_msg m;

	ext_recv_all(fd, &m, sizeof(m));
	if (m.type != type)
		ext_die("protocol: expected message %u from the peer, got %u", type, m.type);
	return m;
}

/* ---- verbs ---------------------------------------------------------------- */

struct ext_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid;
	int gid_index;
	uint8_t port;
};

/* The connection data of one QP. */
struct ext_dest {
	uint32_t qpn, psn;
	union ibv_gid gid;
	uint64_t addr;       /* a buffer of the sender, when it has one */
	uint32_t rkey, len;
	uint32_t id;         /* per-program use */
	uint32_t pad;
};

/* Open device dev_name (NULL: the first), a PD, port 1 and its GID. */
static EXT_UNUSED void ext_open(struct ext_ctx *c, const char *dev_name, int gid_index)
{
	struct ibv_device **list;
	int n, i;

	memset(c, 0, sizeof(*c));
	c->port = 1;
	c->gid_index = gid_index;
	list = ibv_get_device_list(&n);
	if (!list || n <= 0)
		ext_die("no RDMA device");
	for (i = 0; i < n; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	if (i == n)
		ext_die("no device named %s", dev_name);
	c->ctx = ibv_open_device(list[i]);
	if (!c->ctx)
		ext_die("ibv_open_device %s: %s", ibv_get_device_name(list[i]), strerror(errno));
	ibv_free_device_list(list);
	if (ibv_query_device(c->ctx, &c->dattr))
		ext_die("ibv_query_device");
	if (ibv_query_port(c->ctx, c->port, &c->pattr))
		ext_die("ibv_query_port");
	if (ibv_query_gid(c->ctx, c->port, gid_index, &c->gid))
		ext_die("ibv_query_gid %d", gid_index);
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		ext_die("ibv_alloc_pd: %s", strerror(errno));
}

static EXT_UNUSED void ext_close(struct ext_ctx *c)
{
	if (ibv_dealloc_pd(c->pd))
		ext_die("ibv_dealloc_pd");
	if (ibv_close_device(c->ctx))
		ext_die("ibv_close_device");
}

static EXT_UNUSED struct ibv_mr *ext_reg(struct ext_ctx *c, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, len, access);

	if (!mr)
		ext_die("ibv_reg_mr(%zu bytes, access 0x%x): %s", len, access, strerror(errno));
	return mr;
}

static EXT_UNUSED struct ibv_cq *ext_cq(struct ext_ctx *c, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(c->ctx, cqe, NULL, NULL, 0);

	if (!cq)
		ext_die("ibv_create_cq(%d): %s", cqe, strerror(errno));
	return cq;
}

/* An RC QP in INIT with the given remote access flags. */
static EXT_UNUSED struct ibv_qp *ext_rc_qp(struct ext_ctx *c, struct ibv_cq *scq,
					   struct ibv_cq *rcq, int max_send_wr, int max_recv_wr,
					   int access)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = (uint32_t)max_send_wr, .max_recv_wr = (uint32_t)max_recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = c->port,
		.qp_access_flags = access,
	};
	struct ibv_qp *qp = ibv_create_qp(c->pd, &ia);

	if (!qp)
		ext_die("ibv_create_qp: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		ext_die("modify QP to INIT (access 0x%x): %s", access, strerror(errno));
	return qp;
}

/* Our half of the connection data for qp. */
static EXT_UNUSED struct ext_dest ext_local_dest(struct ext_ctx *c, struct ibv_qp *qp)
{
	struct ext_dest d;

	memset(&d, 0, sizeof(d));
	d.qpn = qp->qp_num;
	d.psn = (uint32_t)(lrand48() & 0xffffff);
	d.gid = c->gid;
	return d;
}

/* The outstanding RDMA READ / atomic depth both ends use. */
static EXT_UNUSED int ext_rd_atom(struct ext_ctx *c)
{
	int n = 16;

	if (c->dattr.max_qp_rd_atom > 0 && c->dattr.max_qp_rd_atom < n)
		n = c->dattr.max_qp_rd_atom;
	if (c->dattr.max_qp_init_rd_atom > 0 && c->dattr.max_qp_init_rd_atom < n)
		n = c->dattr.max_qp_init_rd_atom;
	return n;
}

/* INIT -> RTR -> RTS towards rem, our PSN my_psn. */
static EXT_UNUSED void ext_connect_qp(struct ext_ctx *c, struct ibv_qp *qp, uint32_t my_psn,
				      const struct ext_dest *rem)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->pattr.active_mtu;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = (uint8_t)ext_rd_atom(c);
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = rem->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = c->port;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		ext_die("modify QP %u to RTR: %s", qp->qp_num, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = (uint8_t)ext_rd_atom(c);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		ext_die("modify QP %u to RTS: %s", qp->qp_num, strerror(errno));
}

/* Poll cq until n completions are in wc (bounded wait). */
static EXT_UNUSED void ext_poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
{
	uint64_t deadline = ext_now_ms() + EXT_TIMEOUT_MS;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			ext_die("ibv_poll_cq (%s): %d", what, r);
		got += r;
		if (!r && ext_now_ms() > deadline)
			ext_die("%s: %d of %d completions within %d ms", what, got, n,
				EXT_TIMEOUT_MS);
	}
}

/* One completion; dies unless it has status st (and opcode op if op >= 0). */
static EXT_UNUSED struct ibv_wc ext_wait_wc(struct ibv_cq *cq, enum ibv_wc_status st, int op,
					    const char *what)
{
	struct ibv_wc wc;

	ext_poll_n(cq, &wc, 1, what);
	if (wc.status != st)
		ext_die("%s: completion status %s (%d), expected %s", what,
			ibv_wc_status_str(wc.status), wc.status, ibv_wc_status_str(st));
	if (op >= 0 && st == IBV_WC_SUCCESS && (int)wc.opcode != op)
		ext_die("%s: completion opcode %d, expected %d", what, wc.opcode, op);
	return wc;
}

static EXT_UNUSED enum ibv_qp_state ext_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		ext_die("ibv_query_qp %u: %s", qp->qp_num, strerror(errno));
	return a.qp_state;
}

/* Wait (bounded) for async event type ev on qp; other events are printed
 * and acknowledged. */
static EXT_UNUSED void ext_wait_async(struct ibv_context *ctx, struct ibv_qp *qp,
				      enum ibv_event_type ev)
{
	uint64_t deadline = ext_now_ms() + EXT_TIMEOUT_MS;
	int fl = fcntl(ctx->async_fd, F_GETFL);

	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		ext_die("async_fd %d: %s", ctx->async_fd, strerror(errno));
	for (;;) {
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
		struct ibv_async_event e;
		uint64_t now = ext_now_ms();
		bool match;

		if (now >= deadline)
			ext_die("no async event %s for QP %u within %d ms", ibv_event_type_str(ev),
				qp->qp_num, EXT_TIMEOUT_MS);
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			ext_die("poll async_fd: %s", strerror(errno));
		if (ibv_get_async_event(ctx, &e)) {
			if (errno == EAGAIN || errno == EINTR || errno == 0)
				continue;
			ext_die("ibv_get_async_event: %s", strerror(errno));
		}
		match = e.event_type == ev && e.element.qp == qp;
		if (!match)
			ext_say("(async event %s ignored while waiting for %s)",
				ibv_event_type_str(e.event_type), ibv_event_type_str(ev));
		ibv_ack_async_event(&e);
		if (match)
			return;
	}
}

#endif /* VRDMA_TESTS_VERBS_EXT_COMMON_H */
