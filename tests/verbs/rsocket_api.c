/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rsocket API on one device inside one process (built against Debian's
 * <rdma/rsocket.h> and librdmacm, run through vrdma-run on vrdma's):
 *  - refusals: SOCK_DGRAM (EOPNOTSUPP), AF_UNIX (EAFNOSUPPORT), an index
 *    that is no rsocket (EBADF), a connect to a port nobody listens on
 *    (ECONNREFUSED);
 *  - options: SO_REUSEADDR, SO_RCVBUF/SO_SNDBUF, TCP_NODELAY, RDMA_SQSIZE,
 *    RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE read back; F_GETFL/F_SETFL;
 *  - a connection between two rsockets of the process, both O_NONBLOCK:
 *    raccept EAGAIN before a request, rconnect EINPROGRESS, rpoll over the
 *    listener, the connecting socket and a pipe until the listener is
 *    readable and the client writable, SO_ERROR 0, names;
 *  - data: 300000 bytes each way with non-blocking rsend/rrecv and rpoll,
 *    compared byte for byte; MSG_PEEK; MSG_WAITALL (blocking);
 *  - rpoll/rselect: a readable pipe next to an idle rsocket, an rsocket
 *    readable after one byte, timeouts of 0;
 *  - riomap/riowrite: the server maps 8 KiB for writing, the client writes
 *    into it at offsets 0 and 5000 (data compared), EINVAL outside;
 *  - SHUT_WR: the peer reads EOF and can still send; rsend after SHUT_WR
 *    fails; the peer's rclose gives POLLHUP and EOF.
 *
 * usage: rsocket_api IPV4_ADDRESS_OF_THE_DEVICE PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "harness.h"

static struct sockaddr_in g_addr;
static int g_lfd = -1, g_cfd = -1, g_sfd = -1;

static void pattern(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 11));
}

static void refusals(void)
{
	errno = 0;
	CHECK_EQ(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	CHECK_EQ(errno, EAFNOSUPPORT);
	errno = 0;
	CHECK_EQ(rsend(0, "x", 1, 0), -1);
	CHECK_EQ(errno, EBADF);
}

/* While the listener of connect_nonblocking runs (the device's CM answers). */
static void refused(void)
{
	struct sockaddr_in a = g_addr;
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	REQUIRE(s >= 0);
	a.sin_port = htons((uint16_t)(ntohs(g_addr.sin_port) + 1));
	errno = 0;
	CHECK_EQ(rconnect(s, (struct sockaddr *)&a, sizeof(a)), -1);
	CHECK_EQ(errno, ECONNREFUSED);
	CHECK_EQ(rclose(s), 0);
}

static int get_int(int s, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return rgetsockopt(s, level, name, &v, &l) ? -1 : v;
}

static void options(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), one = 1, v;

	REQUIRE(s >= 0);
	CHECK_EQ(rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	CHECK_EQ(get_int(s, SOL_SOCKET, SO_REUSEADDR), 1);
	CHECK_EQ(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	CHECK_EQ(get_int(s, IPPROTO_TCP, TCP_NODELAY), 1);
	v = 40000;
	CHECK_EQ(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_SOCKET, SO_RCVBUF), 40000);
	CHECK_EQ(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_SOCKET, SO_SNDBUF), 40000);
	v = 100;
	CHECK_EQ(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_RDMA, RDMA_SQSIZE), 100);
	CHECK_EQ(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_RDMA, RDMA_RQSIZE), 100);
	v = 32;
	CHECK_EQ(rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_RDMA, RDMA_INLINE), 32);
	v = 4;
	CHECK_EQ(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)), 0);
	CHECK_EQ(get_int(s, SOL_RDMA, RDMA_IOMAPSIZE), 4);
	errno = 0;
	CHECK_EQ(rsetsockopt(s, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)), -1);
	CHECK_EQ(errno, ENOTSUP);
	CHECK_EQ(rfcntl(s, F_GETFL), 0);
	CHECK_EQ(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	CHECK_EQ(rfcntl(s, F_GETFL), O_NONBLOCK);
	CHECK_EQ(rclose(s), 0);
}

static void setup_opts(int s)
{
	int v = 4, small = 16384;

	rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v));
	/* small buffers: transfers wrap the rings and wait for credits */
	rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
}

static void connect_nonblocking(void)
{
	struct sockaddr_in peer, self;
	socklen_t l;
	int pfd[2], one = 1, err = -1;
	bool accepted = false, connected = false;

	REQUIRE(!pipe(pfd));
	g_lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	g_cfd = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(g_lfd >= 0 && g_cfd >= 0);
	setup_opts(g_lfd);
	setup_opts(g_cfd);
	CHECK_EQ(rsetsockopt(g_lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	REQUIRE(!rbind(g_lfd, (struct sockaddr *)&g_addr, sizeof(g_addr)));
	REQUIRE(!rlisten(g_lfd, 4));
	CHECK_EQ(rfcntl(g_lfd, F_SETFL, O_NONBLOCK), 0);
	CHECK_EQ(rfcntl(g_cfd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	CHECK_EQ(raccept(g_lfd, NULL, NULL), -1);
	CHECK_EQ(errno, EAGAIN);
	errno = 0;
	if (rconnect(g_cfd, (struct sockaddr *)&g_addr, sizeof(g_addr)))
		CHECK_EQ(errno, EINPROGRESS);
	for (int i = 0; i < 1000 && !(accepted && connected); i++) {
		struct pollfd p[3] = {
			{ .fd = pfd[0], .events = POLLIN },
			{ .fd = g_lfd, .events = POLLIN },
			{ .fd = g_cfd, .events = POLLOUT },
		};
		int n = rpoll(p, 3, 30000);

		REQUIRE(n > 0);
		CHECK_EQ(p[0].revents, 0);
		if (!accepted && (p[1].revents & POLLIN)) {
			l = sizeof(peer);
			g_sfd = raccept(g_lfd, (struct sockaddr *)&peer, &l);
			if (g_sfd >= 0)
				accepted = true;
			else
				CHECK_EQ(errno, EAGAIN);
		}
		if (p[2].revents & (POLLERR | POLLHUP))
			FAIL("the connecting socket reported an error");
		if (p[2].revents & POLLOUT)
			connected = true;
	}
	REQUIRE(accepted && connected);
	l = sizeof(err);
	CHECK_EQ(rgetsockopt(g_cfd, SOL_SOCKET, SO_ERROR, &err, &l), 0);
	CHECK_EQ(err, 0);
	l = sizeof(self);
	CHECK_EQ(rgetsockname(g_cfd, (struct sockaddr *)&self, &l), 0);
	CHECK_EQ(self.sin_addr.s_addr, g_addr.sin_addr.s_addr);
	CHECK_EQ(peer.sin_addr.s_addr, g_addr.sin_addr.s_addr);
	CHECK_EQ(peer.sin_port, self.sin_port);
	l = sizeof(peer);
	CHECK_EQ(rgetpeername(g_cfd, (struct sockaddr *)&peer, &l), 0);
	CHECK_EQ(peer.sin_port, g_addr.sin_port);
	CHECK_EQ(rfcntl(g_sfd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	close(pfd[0]);
	close(pfd[1]);
}

/* Moves n bytes from one socket to the other, both non-blocking. */
static void pump(int from, int to, size_t n, unsigned seed)
{
	uint8_t *src = malloc(n), *dst = malloc(n);
	size_t sent = 0, got = 0;

	REQUIRE(src && dst);
	pattern(src, n, seed);
	while (got < n) {
		struct pollfd p[2] = {
			{ .fd = from, .events = sent < n ? POLLOUT : 0 },
			{ .fd = to, .events = POLLIN },
		};
		ssize_t r;

		if (rpoll(p, 2, 30000) <= 0)
			break;
		if (sent < n) {
			r = rsend(from, src + sent, n - sent, 0);
			if (r > 0)
				sent += (size_t)r;
			else if (errno != EAGAIN)
				break;
		}
		r = rrecv(to, dst + got, n - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0 || errno != EAGAIN)
			break;
	}
	CHECK_EQ(got, n);
	CHECK_MEM(src, dst, n);
	free(src);
	free(dst);
}

static void data(void)
{
	char b[16];

	REQUIRE(g_sfd >= 0);
	pump(g_cfd, g_sfd, 300000, 1);
	pump(g_sfd, g_cfd, 300000, 2);
	/* MSG_PEEK then the same bytes; MSG_WAITALL on a blocking socket */
	CHECK_EQ(rsend(g_cfd, "abcdefgh", 8, 0), 8);
	CHECK_EQ(rfcntl(g_sfd, F_SETFL, 0), 0);
	CHECK_EQ(rrecv(g_sfd, b, 4, MSG_PEEK), 4);
	CHECK_MEM(b, "abcd", 4);
	CHECK_EQ(rrecv(g_sfd, b, 3, 0), 3);
	CHECK_MEM(b, "abc", 3);
	CHECK_EQ(rsend(g_cfd, "ijk", 3, 0), 3);
	CHECK_EQ(rrecv(g_sfd, b, 8, MSG_WAITALL), 8);
	CHECK_MEM(b, "defghijk", 8);
	CHECK_EQ(rfcntl(g_sfd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	CHECK_EQ(rrecv(g_sfd, b, 1, 0), -1);
	CHECK_EQ(errno, EAGAIN);
}

static void poll_select(void)
{
	int pfd[2];
	struct pollfd p[2];
	fd_set rd;
	struct timeval tv = { 0, 0 };
	char c;

	REQUIRE(g_sfd >= 0 && !pipe(pfd));
	CHECK_EQ(write(pfd[1], "p", 1), 1);
	p[0] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	p[1] = (struct pollfd){ .fd = g_sfd, .events = POLLIN };
	CHECK_EQ(rpoll(p, 2, 30000), 1);
	CHECK_EQ(p[0].revents, POLLIN);
	CHECK_EQ(p[1].revents, 0);
	CHECK_EQ(read(pfd[0], &c, 1), 1);
	CHECK_EQ(rpoll(p, 2, 0), 0);
	FD_ZERO(&rd);
	FD_SET(g_sfd, &rd);
	FD_SET(pfd[0], &rd);
	CHECK_EQ(rselect((g_sfd > pfd[0] ? g_sfd : pfd[0]) + 1, &rd, NULL, NULL, &tv), 0);
	CHECK_EQ(rsend(g_cfd, "q", 1, 0), 1);
	FD_ZERO(&rd);
	FD_SET(g_sfd, &rd);
	FD_SET(pfd[0], &rd);
	CHECK_EQ(rselect((g_sfd > pfd[0] ? g_sfd : pfd[0]) + 1, &rd, NULL, NULL, NULL), 1);
	CHECK(FD_ISSET(g_sfd, &rd));
	CHECK(!FD_ISSET(pfd[0], &rd));
	CHECK_EQ(rrecv(g_sfd, &c, 1, 0), 1);
	CHECK_EQ(c, 'q');
	close(pfd[0]);
	close(pfd[1]);
}

/* Blocking receive of n bytes through rpoll (the socket is non-blocking). */
static ssize_t recv_n(int s, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t r;

		if (rpoll(&p, 1, 30000) <= 0)
			return -1;
		r = rrecv(s, (uint8_t *)b + got, n - got, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			return r;
		if (r > 0)
			got += (size_t)r;
	}
	return (ssize_t)got;
}

static void iomap(void)
{
	size_t len = 8192;
	uint8_t *target = aligned_alloc(4096, len), *src = malloc(len), c;

	REQUIRE(g_sfd >= 0 && target && src);
	memset(target, 0, len);
	pattern(src, len, 3);
	CHECK_EQ(riomap(g_sfd, target, len, PROT_WRITE, 0, 0), 0);
	/* the map goes to the peer ahead of the next message */
	CHECK_EQ(rsend(g_sfd, "m", 1, 0), 1);
	CHECK_EQ(recv_n(g_cfd, &c, 1), 1);
	CHECK_EQ(rfcntl(g_cfd, F_SETFL, 0), 0);
	CHECK_EQ(riowrite(g_cfd, src, 3000, 0, 0), 3000);
	CHECK_EQ(riowrite(g_cfd, src + 5000, 3192, 5000, 0), 3192);
	errno = 0;
	CHECK_EQ(riowrite(g_cfd, src, 10, 9000, 0), (size_t)-1);
	CHECK_EQ(errno, EINVAL);
	/* RC order: the writes landed before this message */
	CHECK_EQ(rsend(g_cfd, "w", 1, 0), 1);
	CHECK_EQ(rfcntl(g_cfd, F_SETFL, O_NONBLOCK), 0);
	CHECK_EQ(recv_n(g_sfd, &c, 1), 1);
	CHECK_MEM(target, src, 3000);
	CHECK_MEM(target + 5000, src + 5000, 3192);
	for (size_t i = 3000; i < 5000; i++)
		if (target[i]) {
			CHECK(!"riowrite touched bytes outside its range");
			break;
		}
	CHECK_EQ(riounmap(g_sfd, target, len), 0);
	errno = 0;
	CHECK_EQ(riounmap(g_sfd, target, len), -1);
	CHECK_EQ(errno, EINVAL);
	free(target);
	free(src);
}

static void shutdown_close(void)
{
	char b[8];
	struct pollfd p = { .fd = g_sfd, .events = POLLIN };

	REQUIRE(g_sfd >= 0);
	CHECK_EQ(rsend(g_cfd, "end", 3, 0), 3);
	CHECK_EQ(rshutdown(g_cfd, SHUT_WR), 0);
	errno = 0;
	CHECK_EQ(rsend(g_cfd, "x", 1, 0), -1);
	CHECK(errno == EPIPE || errno == ECONNRESET);
	CHECK_EQ(recv_n(g_sfd, b, 3), 3);
	CHECK_MEM(b, "end", 3);
	CHECK_EQ(rpoll(&p, 1, 30000), 1);
	CHECK_EQ(rrecv(g_sfd, b, sizeof(b), 0), 0); /* EOF */
	/* the other direction still works */
	CHECK_EQ(rsend(g_sfd, "back", 4, 0), 4);
	CHECK_EQ(recv_n(g_cfd, b, 4), 4);
	CHECK_MEM(b, "back", 4);
	CHECK_EQ(rclose(g_sfd), 0);
	g_sfd = -1;
	p.fd = g_cfd;
	CHECK_EQ(rpoll(&p, 1, 30000), 1);
	CHECK(p.revents & (POLLHUP | POLLIN));
	CHECK_EQ(rrecv(g_cfd, b, sizeof(b), 0), 0);
	CHECK_EQ(rclose(g_cfd), 0);
	CHECK_EQ(rclose(g_lfd), 0);
	g_cfd = g_lfd = -1;
	errno = 0;
	CHECK_EQ(rclose(g_cfd), -1);
}

int main(int argc, char **argv)
{
	TEST_PROGRAM("rsocket_api");
	if (argc != 3) {
		fprintf(stderr, "usage: rsocket_api IPV4_ADDRESS PORT\n");
		return 2;
	}
	g_addr.sin_family = AF_INET;
	g_addr.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &g_addr.sin_addr) != 1) {
		fprintf(stderr, "rsocket_api: bad address %s\n", argv[1]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	RUN(refusals);
	RUN(options);
	RUN(connect_nonblocking);
	RUN(refused);
	RUN(data);
	RUN(poll_select);
	RUN(iomap);
	RUN(shutdown_close);
	if (!TEST_DONE())
		printf("rsocket_api: all passed\n");
	return TEST_DONE();
}
