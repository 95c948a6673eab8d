// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-tcpxfer: a plain TCP file transfer (socket, bind, listen, accept,
 * connect, poll, read, write, shutdown) for running under librspreload:
 *   vrdma-tcpxfer recv ADDR PORT OUT   accept one connection, write what
 *                                      it sends to OUT until EOF
 *   vrdma-tcpxfer send ADDR PORT IN    connect, send IN, shut down, wait
 *                                      for the peer's EOF
 * Every wait goes through poll(), so that rpoll serves it. It uses accept()
 * because Debian's librspreload has no accept4 (python, perl and nc call
 * accept4).
 */
/* librspreload wraps read and poll, not glibc's fortified __read_chk and
 * __poll_chk, which a build with _FORTIFY_SOURCE may call instead. */
#undef _FORTIFY_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "vrdma-tcpxfer: %s: %s\n", what, strerror(errno));
	return 1;
}

static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int n;

	do
		n = poll(&p, 1, -1);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -1 : 0;
}

static int do_recv(int s, int out, long *total)
{
	char buf[65536];

	for (;;) {
		ssize_t n;

		if (wait_fd(s, POLLIN))
			return die("poll");
		n = read(s, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return die("read");
		if (!n)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0)
				return die("write file");
			off += w;
		}
		*total += n;
	}
}

static int do_send(int s, int in, long *total)
{
	char buf[100000]; /* not a power of two: transfers of odd sizes */

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0)
			return die("read file");
		if (!n)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w;

			if (wait_fd(s, POLLOUT))
				return die("poll");
			w = write(s, buf + off, (size_t)(n - off));
			if (w < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (w < 0)
				return die("write");
			off += w;
		}
		*total += n;
	}
	if (shutdown(s, SHUT_WR))
		return die("shutdown");
	/* the receiver closes once it has everything */
	for (;;) {
		char c;
		ssize_t n;

		if (wait_fd(s, POLLIN))
			return die("poll");
		n = read(s, &c, 1);
		if (n <= 0)
			return 0;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	long total = 0;
	int s, fd, ret, one = 1;

	if (argc != 5 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) {
		fprintf(stderr, "usage: vrdma-tcpxfer recv|send ADDR PORT FILE\n");
		return 2;
	}
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "vrdma-tcpxfer: bad address %s\n", argv[2]);
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return die("socket");
	if (!strcmp(argv[1], "recv")) {
		int c;

		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
			return die("bind/listen");
		printf("listening\n");
		fflush(stdout);
		if (wait_fd(s, POLLIN))
			return die("poll");
		c = accept(s, NULL, NULL);
		if (c < 0)
			return die("accept");
		fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return die(argv[4]);
		ret = do_recv(c, fd, &total);
		close(fd);
		close(c);
	} else {
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			return die("connect");
		fd = open(argv[4], O_RDONLY);
		if (fd < 0)
			return die(argv[4]);
		ret = do_send(s, fd, &total);
		close(fd);
	}
	close(s);
	if (!ret)
		printf("vrdma-tcpxfer: %s %ld bytes\n", argv[1], total);
	return ret;
}
