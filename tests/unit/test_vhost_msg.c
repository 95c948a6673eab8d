/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user message codec: framing round trips over a socketpair with fds,
 * partial reads, every framing and validation error path, reply building and
 * the KICK/CALL/ERR index encodings.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../harness.h"
#include "common/test_sys.h"
#include "common/util.h"
#include "vhost/vhost_msg.h"

static int sockpair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
}

/* Two fds refer to the same eventfd: a value written to one is read back
 * from the other. */
static bool same_eventfd(int a, int b)
{
	uint64_t v = 7, r = 0;

	if (write(a, &v, sizeof(v)) != sizeof(v))
		return false;
	if (read(b, &r, sizeof(r)) != sizeof(r))
		return false;
	return r == 7;
}

static void test_round_trip_fds(void)
{
	struct vhost_user_msg m, r;
	int sv[2], efd[3], rfds[VHOST_USER_MAX_FDS], nr = -1;
	int base = tc_count_fds(0);

	REQUIRE(sockpair(sv) == 0);
	for (int i = 0; i < 3; i++)
		efd[i] = eventfd(0, EFD_CLOEXEC);
	memset(&m, 0, sizeof(m));
	vhost_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 8 + 3 * 32);
	m.payload.memory.nregions = 3;
	for (int i = 0; i < 3; i++) {
		m.payload.memory.regions[i].guest_phys_addr = 0x1000ull * (i + 1);
		m.payload.memory.regions[i].memory_size = 0x1000;
		m.payload.memory.regions[i].userspace_addr = 0x7f0000000000ull + i;
		m.payload.memory.regions[i].mmap_offset = (uint64_t)i << 12;
	}
	CHECK_EQ(vhost_msg_send(sv[0], &m, efd, 3, 1000), 0);
	memset(&r, 0xa5, sizeof(r));
	CHECK_EQ(vhost_msg_recv(sv[1], &r, rfds, &nr, 1000), 0);
	CHECK_EQ(nr, 3);
	CHECK_MEM(&r, &m, vhost_msg_len(&m));
	CHECK_EQ(vhost_msg_check_request(&r, nr), 0);
	for (int i = 0; i < 3 && nr == 3; i++) {
		CHECK(rfds[i] != efd[i]);
		CHECK(same_eventfd(efd[i], rfds[i]));
		CHECK(fcntl(rfds[i], F_GETFD) & FD_CLOEXEC);
	}
	if (nr > 0)
		vhost_msg_close_fds(rfds, nr);

	/* A message without payload and without fds, then a reply. */
	vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
	CHECK_EQ(vhost_msg_send(sv[1], &m, NULL, 0, 1000), 0);
	CHECK_EQ(vhost_msg_recv(sv[0], &r, rfds, &nr, 1000), 0);
	CHECK_EQ(nr, 0);
	CHECK_EQ(r.hdr.request, VHOST_USER_GET_FEATURES);
	CHECK_EQ(r.hdr.size, 0);
	vhost_msg_reply_u64(&r, 0x1234);
	CHECK_EQ(vhost_msg_send(sv[0], &r, NULL, 0, 1000), 0);
	CHECK_EQ(vhost_msg_recv(sv[1], &m, rfds, &nr, 1000), 0);
	CHECK_EQ(vhost_msg_check_reply(&m, VHOST_USER_GET_FEATURES, 8), 0);
	CHECK_EQ(m.payload.u64, 0x1234);

	for (int i = 0; i < 3; i++)
		close(efd[i]);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(tc_count_fds(0), base);
}

/* Bytes trickle in one at a time: the reader reports "need more" until the
 * message is whole, never blocks, and the fds come with the first byte. */
static void test_partial_reads(void)
{
	struct vhost_user_msg m;
	struct vhost_msg_rx rx;
	int sv[2], efd, fds[VHOST_USER_MAX_FDS];
	const uint8_t *p = (const uint8_t *)&m;
	size_t len;
	int base = tc_count_fds(0), r = 0;

	REQUIRE(sockpair(sv) == 0);
	efd = eventfd(0, EFD_CLOEXEC);
	vhost_msg_init(&m, VHOST_USER_SET_VRING_CALL, 8);
	m.payload.u64 = 3;
	len = vhost_msg_len(&m);
	vhost_msg_rx_init(&rx);

	/* First byte with the fd (a raw sendmsg of one byte). */
	{
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = (void *)p, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		memset(ctl, 0, sizeof(ctl));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &efd, sizeof(int));
		CHECK_EQ(sendmsg(sv[0], &mh, 0), 1);
	}
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 0);
	CHECK_EQ(rx.nfds, 1);
	for (size_t i = 1; i < len; i++) {
		CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 0);
		CHECK_EQ(write(sv[0], p + i, 1), 1);
		r = vhost_msg_rx_read(&rx, sv[1]);
		if (i + 1 < len)
			CHECK_EQ(r, 0);
	}
	CHECK_EQ(r, 1);
	CHECK_MEM(&rx.msg, &m, len);
	CHECK_EQ(vhost_msg_rx_take(&rx, fds), 1);
	CHECK(same_eventfd(efd, fds[0]));
	close(fds[0]);

	/* Two messages back to back are split correctly. */
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 0, 1000), 0);
	m.payload.u64 = 5;
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 0, 1000), 0);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 1);
	CHECK_EQ(rx.msg.payload.u64, 3);
	CHECK_EQ(vhost_msg_rx_take(&rx, fds), 0);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 1);
	CHECK_EQ(rx.msg.payload.u64, 5);
	vhost_msg_rx_take(&rx, fds);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 0);

	/* fds sent with the payload part instead of the header are accepted. */
	{
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = (uint8_t *)&m + 12, .iov_len = 8 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		CHECK_EQ(write(sv[0], &m, 12), 12);
		CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 0);
		memset(ctl, 0, sizeof(ctl));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &efd, sizeof(int));
		CHECK_EQ(sendmsg(sv[0], &mh, 0), 8);
		CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), 1);
		CHECK_EQ(rx.nfds, 1);
		vhost_msg_rx_reset(&rx);
	}

	close(efd);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(tc_count_fds(0), base);
}

static void test_framing_errors(void)
{
	struct vhost_user_msg m, r;
	struct vhost_msg_rx rx;
	int sv[2], fds[VHOST_USER_MAX_FDS], nfds, efd[VHOST_USER_MAX_FDS + 1];
	int base = tc_count_fds(0);

	/* Payload larger than 4096: refused before reading it. */
	REQUIRE(sockpair(sv) == 0);
	vhost_msg_init(&m, VHOST_USER_SET_FEATURES, 5000);
	CHECK_EQ(write(sv[0], &m, 12), 12);
	vhost_msg_rx_init(&rx);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* More fds than a message may carry: refused, none leaked. */
	REQUIRE(sockpair(sv) == 0);
	for (int i = 0; i <= VHOST_USER_MAX_FDS; i++)
		efd[i] = eventfd(0, EFD_CLOEXEC);
	{
		char ctl[CMSG_SPACE(sizeof(int) * (VHOST_USER_MAX_FDS + 1))];
		struct iovec iov = { .iov_base = &m, .iov_len = 20 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		vhost_msg_init(&m, VHOST_USER_SET_FEATURES, 8);
		memset(ctl, 0, sizeof(ctl));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (VHOST_USER_MAX_FDS + 1));
		memcpy(CMSG_DATA(c), efd, sizeof(int) * (VHOST_USER_MAX_FDS + 1));
		CHECK_EQ(sendmsg(sv[0], &mh, 0), 20);
	}
	vhost_msg_rx_init(&rx);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), -EMSGSIZE);
	CHECK_EQ(rx.nfds, 0);
	for (int i = 0; i <= VHOST_USER_MAX_FDS; i++)
		close(efd[i]);
	/* Invalid arguments to send. */
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 1, 0), -EINVAL);
	CHECK_EQ(vhost_msg_send(sv[0], &m, efd, VHOST_USER_MAX_FDS + 1, 0), -EINVAL);
	m.hdr.size = 5000;
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 0, 0), -EINVAL);
	close(sv[0]);
	close(sv[1]);

	/* Peer closes mid-message: -ECONNRESET, the fd that came is closed. */
	REQUIRE(sockpair(sv) == 0);
	efd[0] = eventfd(0, EFD_CLOEXEC);
	vhost_msg_init(&m, VHOST_USER_SET_VRING_KICK, 8);
	m.payload.u64 = 0;
	vhost_msg_rx_init(&rx);
	/* The first 15 of 20 bytes, with the fd, then EOF. */
	{
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { .iov_base = &m, .iov_len = 15 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		memset(ctl, 0, sizeof(ctl));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), efd, sizeof(int));
		CHECK_EQ(sendmsg(sv[0], &mh, 0), 15);
	}
	close(sv[0]);
	CHECK_EQ(vhost_msg_rx_read(&rx, sv[1]), -ECONNRESET);
	CHECK_EQ(rx.nfds, 0);
	close(efd[0]);
	close(sv[1]);

	/* Nothing arrives: timeout, no blocking forever. */
	REQUIRE(sockpair(sv) == 0);
	CHECK_EQ(vhost_msg_recv(sv[1], &r, fds, &nfds, 0), -ETIMEDOUT);
	CHECK_EQ(write(sv[0], &m, 5), 5);
	CHECK_EQ(vhost_msg_recv(sv[1], &r, fds, &nfds, 1), -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);

	CHECK_EQ(tc_count_fds(0), base);
}

/* A closed peer gives -EPIPE, not SIGPIPE (the default action would kill
 * this test); a full socket gives -EAGAIN with timeout 0. */
static void test_send_errors(void)
{
	struct vhost_user_msg m;
	int sv[2], n = 0, err;

	REQUIRE(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	REQUIRE(sockpair(sv) == 0);
	close(sv[1]);
	vhost_msg_init(&m, VHOST_USER_GET_FEATURES, 0);
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 0, 0), -EPIPE);
	close(sv[0]);

	REQUIRE(sockpair(sv) == 0);
	vhost_msg_init(&m, VHOST_USER_SET_CONFIG, 4000);
	do {
		err = vhost_msg_send(sv[0], &m, NULL, 0, 0);
	} while (err == 0 && ++n < 100000);
	CHECK_EQ(err, -EAGAIN);
	CHECK(n > 0);
	/* With a timeout and nobody reading it still gives up. */
	CHECK_EQ(vhost_msg_send(sv[0], &m, NULL, 0, 1), -EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* One valid message of each request number the codec knows. */
static void make_valid(struct vhost_user_msg *m, uint32_t req, int *nfds)
{
	memset(m, 0, sizeof(*m));
	*nfds = 0;
	switch (req) {
	case VHOST_USER_GET_FEATURES:
	case VHOST_USER_SET_OWNER:
	case VHOST_USER_RESET_OWNER:
	case VHOST_USER_GET_PROTOCOL_FEATURES:
	case VHOST_USER_GET_QUEUE_NUM:
	case VHOST_USER_RESET_DEVICE:
	case VHOST_USER_GET_MAX_MEM_SLOTS:
	case VHOST_USER_GET_STATUS:
		vhost_msg_init(m, req, 0);
		break;
	case VHOST_USER_SET_FEATURES:
	case VHOST_USER_SET_PROTOCOL_FEATURES:
	case VHOST_USER_NET_SET_MTU:
	case VHOST_USER_SET_STATUS:
	case VHOST_USER_SET_VRING_NUM:
	case VHOST_USER_SET_VRING_BASE:
	case VHOST_USER_GET_VRING_BASE:
	case VHOST_USER_SET_VRING_ENABLE:
		vhost_msg_init(m, req, 8);
		break;
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		vhost_msg_init(m, req, 8);
		*nfds = 1;
		break;
	case VHOST_USER_SET_VRING_ADDR:
		vhost_msg_init(m, req, 40);
		break;
	case VHOST_USER_SET_MEM_TABLE:
		vhost_msg_init(m, req, 8 + 2 * 32);
		m->payload.memory.nregions = 2;
		*nfds = 2;
		break;
	case VHOST_USER_ADD_MEM_REG:
		vhost_msg_init(m, req, 40);
		*nfds = 1;
		break;
	case VHOST_USER_REM_MEM_REG:
		vhost_msg_init(m, req, 40);
		break;
	case VHOST_USER_GET_CONFIG:
	case VHOST_USER_SET_CONFIG:
		vhost_msg_init(m, req, 12 + 16);
		m->payload.config.offset = 240;
		m->payload.config.size = 16;
		break;
	default:
		vhost_msg_init(m, req, 0);
		break;
	}
}

static void test_check_request(void)
{
	struct vhost_user_msg m;
	int nfds;

	for (uint32_t req = 1; req < VHOST_USER_MAX_REQUEST; req++) {
		make_valid(&m, req, &nfds);
		CHECK_EQ(vhost_msg_check_request(&m, nfds), 0);
		CHECK(strcmp(vhost_msg_name(req), "UNKNOWN") != 0);
		/* need_reply is fine, reply bit / other versions are not. */
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), 0);
		m.hdr.flags |= VHOST_USER_REPLY_MASK;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), -EPROTO);
		m.hdr.flags = 0;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), -EPROTO);
		m.hdr.flags = 2;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), -EPROTO);
		m.hdr.flags = VHOST_USER_VERSION;
		m.hdr.size = 4097;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), -EMSGSIZE);
		make_valid(&m, req, &nfds);
		CHECK_EQ(vhost_msg_check_request(&m, VHOST_USER_MAX_FDS + 1), -EBADF);
		CHECK_EQ(vhost_msg_check_request(&m, -1), -EBADF);
	}

	/* Unknown request numbers. */
	vhost_msg_init(&m, VHOST_USER_NONE, 0);
	CHECK_EQ(vhost_msg_check_request(&m, 0), -ENOSYS);
	vhost_msg_init(&m, VHOST_USER_MAX_REQUEST, 0);
	CHECK_EQ(vhost_msg_check_request(&m, 0), -ENOSYS);
	vhost_msg_init(&m, 0xffffffffu, 0);
	CHECK_EQ(vhost_msg_check_request(&m, 0), -ENOSYS);
	CHECK(strcmp(vhost_msg_name(1000), "UNKNOWN") == 0);

	/* Fixed sizes: one byte more or less. */
	static const uint32_t fixed[] = {
		VHOST_USER_GET_FEATURES, VHOST_USER_SET_FEATURES, VHOST_USER_SET_VRING_NUM,
		VHOST_USER_SET_VRING_ADDR, VHOST_USER_GET_VRING_BASE,
		VHOST_USER_SET_VRING_KICK, VHOST_USER_ADD_MEM_REG, VHOST_USER_REM_MEM_REG,
		VHOST_USER_SET_STATUS, VHOST_USER_GET_STATUS,
	};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		make_valid(&m, fixed[i], &nfds);
		m.hdr.size++;
		CHECK_EQ(vhost_msg_check_request(&m, nfds), -EMSGSIZE);
		if (m.hdr.size >= 2) {
			m.hdr.size -= 2;
			CHECK_EQ(vhost_msg_check_request(&m, nfds), -EMSGSIZE);
		}
	}

	/* fd counts. */
	make_valid(&m, VHOST_USER_SET_FEATURES, &nfds);
	CHECK_EQ(vhost_msg_check_request(&m, 1), -EBADF);
	make_valid(&m, VHOST_USER_ADD_MEM_REG, &nfds);
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EBADF);
	CHECK_EQ(vhost_msg_check_request(&m, 2), -EBADF);
	make_valid(&m, VHOST_USER_REM_MEM_REG, &nfds);
	CHECK_EQ(vhost_msg_check_request(&m, 1), 0);
	CHECK_EQ(vhost_msg_check_request(&m, 2), -EBADF);
	make_valid(&m, VHOST_USER_SET_VRING_CALL, &nfds);
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EBADF);
	m.payload.u64 = VHOST_USER_VRING_NOFD_MASK;
	CHECK_EQ(vhost_msg_check_request(&m, 0), 0);
	CHECK_EQ(vhost_msg_check_request(&m, 1), -EBADF);

	/* SET_MEM_TABLE: nregions vs size vs fds. */
	make_valid(&m, VHOST_USER_SET_MEM_TABLE, &nfds);
	CHECK_EQ(vhost_msg_check_request(&m, 1), -EBADF);
	CHECK_EQ(vhost_msg_check_request(&m, 3), -EBADF);
	m.payload.memory.nregions = 3;
	CHECK_EQ(vhost_msg_check_request(&m, 3), -EMSGSIZE);
	m.payload.memory.nregions = 9;
	m.hdr.size = 8 + 9 * 32;
	CHECK_EQ(vhost_msg_check_request(&m, 8), -EINVAL);
	m.payload.memory.nregions = 0;
	m.hdr.size = 8;
	CHECK_EQ(vhost_msg_check_request(&m, 0), 0);
	m.hdr.size = 4;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EMSGSIZE);
	m.payload.memory.nregions = 8;
	m.hdr.size = 8 + 8 * 32;
	CHECK_EQ(vhost_msg_check_request(&m, 8), 0);

	/* GET/SET_CONFIG: offset + size within 256, size matches. */
	make_valid(&m, VHOST_USER_GET_CONFIG, &nfds);
	m.payload.config.offset = 241;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EINVAL);
	m.payload.config.offset = 0xffffffffu;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EINVAL);
	m.payload.config.offset = 0;
	m.payload.config.size = 257;
	m.hdr.size = 12 + 257;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EINVAL);
	m.payload.config.size = 256;
	m.hdr.size = 12 + 256;
	CHECK_EQ(vhost_msg_check_request(&m, 0), 0);
	m.hdr.size = 12 + 255;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EMSGSIZE);
	m.hdr.size = 8;
	CHECK_EQ(vhost_msg_check_request(&m, 0), -EMSGSIZE);
}

static void test_replies(void)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, VHOST_USER_GET_VRING_BASE, 8);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	CHECK(vhost_msg_need_reply(&m));
	m.payload.state.index = 3;
	m.payload.state.num = 77;
	vhost_msg_make_reply(&m, 8);
	CHECK_EQ(m.hdr.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
	CHECK_EQ(m.hdr.request, VHOST_USER_GET_VRING_BASE);
	CHECK_EQ(vhost_msg_check_reply(&m, VHOST_USER_GET_VRING_BASE, 8), 0);
	CHECK_EQ(vhost_msg_check_reply(&m, VHOST_USER_GET_VRING_BASE, 0), -EMSGSIZE);
	CHECK_EQ(vhost_msg_check_reply(&m, VHOST_USER_GET_FEATURES, 8), -EPROTO);
	m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	CHECK_EQ(vhost_msg_check_reply(&m, VHOST_USER_GET_VRING_BASE, 8), -EPROTO);

	vhost_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 8);
	vhost_msg_reply_u64(&m, 1);
	CHECK_EQ(m.hdr.size, 8);
	CHECK_EQ(m.payload.u64, 1);
	CHECK_EQ(vhost_msg_len(&m), 20);

	CHECK(vhost_msg_has_reply(VHOST_USER_GET_FEATURES));
	CHECK(vhost_msg_has_reply(VHOST_USER_GET_VRING_BASE));
	CHECK(vhost_msg_has_reply(VHOST_USER_GET_CONFIG));
	CHECK(vhost_msg_has_reply(VHOST_USER_GET_STATUS));
	CHECK(vhost_msg_has_reply(VHOST_USER_GET_MAX_MEM_SLOTS));
	CHECK(!vhost_msg_has_reply(VHOST_USER_SET_MEM_TABLE));
	CHECK(!vhost_msg_has_reply(VHOST_USER_SET_VRING_KICK));
	CHECK(!vhost_msg_has_reply(0));
	CHECK(!vhost_msg_has_reply(5000));
}

static void test_vring_fd_decode(void)
{
	uint32_t idx;
	bool nofd;

	CHECK_EQ(vhost_msg_vring_fd_decode(0x17, false, &idx, &nofd), 0);
	CHECK_EQ(idx, 0x17);
	CHECK(!nofd);
	CHECK_EQ(vhost_msg_vring_fd_decode(0x1ff, false, &idx, &nofd), 0);
	CHECK_EQ(idx, 0xff);
	CHECK(nofd);
	/* Bits 32+ are reserved without the wide index. */
	CHECK_EQ(vhost_msg_vring_fd_decode(1ull << 32, false, &idx, &nofd), -EINVAL);
	CHECK_EQ(vhost_msg_vring_fd_decode(1ull << 9, false, &idx, &nofd), -EINVAL);
	/* Wide: idx = low byte | bits 32-55 << 8. */
	CHECK_EQ(vhost_msg_vring_fd_decode((49154ull >> 8) << 32 | (49154 & 0xff) | 0x100,
					   true, &idx, &nofd), 0);
	CHECK_EQ(idx, 49154);
	CHECK(nofd);
	CHECK_EQ(vhost_msg_vring_fd_decode(0xffffffull << 32 | 0xff, true, &idx, &nofd), 0);
	CHECK_EQ(idx, 0xffffffffu);
	CHECK_EQ(vhost_msg_vring_fd_decode(1ull << 56, true, &idx, &nofd), -EINVAL);
	CHECK_EQ(vhost_msg_vring_fd_decode(1ull << 20, true, &idx, &nofd), -EINVAL);
}

int main(void)
{
	TEST_PROGRAM("test_vhost_msg");
	RUN(test_round_trip_fds);
	RUN(test_partial_reads);
	RUN(test_framing_errors);
	RUN(test_send_errors);
	RUN(test_check_request);
	RUN(test_replies);
	RUN(test_vring_fd_decode);
	return TEST_DONE();
}
