// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: malformed vhost-user messages. Each attack builds one message
 * (size, request number, flags, fds and payload chosen to break one rule of
 * the protocol or of the back-end's validation), sends it on a fresh
 * connection and checks the back-end's answer: the connection closed, or the
 * session kept (a probe request still answered), or (eof attacks) we hang up
 * mid-message and only check that the socket accepts the next front-end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/test_sys.h"
#include "evil.h"
#include "vhost/vhost_msg.h"

#define VIRTIO_F_VERSION_1_BIT 32
#define VIRTIO_NET_F_ROCE_BIT 55
#define VIRTIO_NET_F_ROCE_EXT_BIT 4
#define EVIL_MAX_SEND_FDS 16

/* ---- raw socket helpers ---- */

int evil_connect(const char *path)
{
	return tc_unix_connect(path);
}

int evil_send_raw(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * EVIL_MAX_SEND_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t off = 0;

	if (nfds < 0 || nfds > EVIL_MAX_SEND_FDS)
		return -EINVAL;
	memset(&ctl, 0, sizeof(ctl));
	if (nfds > 0) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	while (off < len) {
		ssize_t n;

		iov.iov_base = (uint8_t *)buf + off;
		iov.iov_len = len - off;
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
		/* fds travel with the first byte only */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

int evil_send_msg(int fd, uint32_t req, uint32_t flags, uint32_t size, const void *payload,
		  size_t len, const int *fds, int nfds)
{
	uint8_t buf[sizeof(struct vhost_user_hdr) + 8192];
	struct vhost_user_hdr h = { .request = req, .flags = flags, .size = size };

	if (len > sizeof(buf) - sizeof(h))
		return -EINVAL;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	return evil_send_raw(fd, buf, sizeof(h) + len, fds, nfds);
}

const char *evil_outcome_name(enum evil_outcome o)
{
	switch (o) {
	case EVIL_OUT_CLOSED: return "closed";
	case EVIL_OUT_ALIVE: return "alive";
	case EVIL_OUT_TIMEOUT: return "timeout";
	default: return "garbage";
	}
}

enum evil_outcome evil_outcome(int fd, bool probe, int timeout_ms, uint64_t *nack,
			       unsigned *replies)
{
	*nack = UINT64_MAX;
	*replies = 0;
	if (probe) {
		/* A send error means the back-end is gone already; the reads
		 * below tell (there may still be a NACK to read first). */
		(void)evil_send_msg(fd, VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0, NULL, 0,
				    NULL, 0);
	}
	for (;;) {
		struct vhost_user_msg m;
		int fds[VHOST_USER_MAX_FDS], nfds = 0;
		int rc = vhost_msg_recv(fd, &m, fds, &nfds, timeout_ms);

		if (rc == -ETIMEDOUT)
			return EVIL_OUT_TIMEOUT;
		if (rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN)
			return EVIL_OUT_CLOSED;
		if (rc < 0)
			return EVIL_OUT_GARBAGE;
		vhost_msg_close_fds(fds, nfds);
		if (!(m.hdr.flags & VHOST_USER_REPLY_MASK) || nfds)
			return EVIL_OUT_GARBAGE;
		if (probe && m.hdr.request == VHOST_USER_GET_FEATURES && m.hdr.size == 8)
			return EVIL_OUT_ALIVE;
		(*replies)++;
		evil_say("reply %s size %u%s", vhost_msg_name(m.hdr.request), m.hdr.size,
			 m.hdr.size == 8 ? "" : " (not a u64)");
		if (m.hdr.size == 8)
			*nack = m.payload.u64;
	}
}

/* ---- negotiation helpers on a raw connection ---- */

/* Send a request and read its reply (same request number, reply bit). Returns
 * the reply payload size or -errno. */
static int raw_call(int fd, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
		    const int *fds, int nfds, struct vhost_user_msg *reply, int timeout_ms)
{
	int rfds[VHOST_USER_MAX_FDS], rn = 0;
	int rc = evil_send_msg(fd, req, flags, size, payload, size, fds, nfds);

	if (rc < 0)
		return rc;
	rc = vhost_msg_recv(fd, reply, rfds, &rn, timeout_ms);
	if (rc < 0)
		return rc;
	vhost_msg_close_fds(rfds, rn);
	if (reply->hdr.request != req || !(reply->hdr.flags & VHOST_USER_REPLY_MASK))
		return -EPROTO;
	return (int)reply->hdr.size;
}

static int raw_get_u64(int fd, uint32_t req, uint64_t *v, int timeout_ms)
{
	struct vhost_user_msg m;
	int rc = raw_call(fd, req, VHOST_USER_VERSION, NULL, 0, NULL, 0, &m, timeout_ms);

	if (rc < 0)
		return rc;
	if (rc != 8)
		return -EPROTO;
	*v = m.payload.u64;
	return 0;
}

/* A request without reply, with REPLY_ACK asked: returns the ack or -errno. */
static int raw_acked(int fd, uint32_t req, const void *payload, uint32_t size,
		     const int *fds, int nfds, int timeout_ms)
{
	struct vhost_user_msg m;
	int rc = raw_call(fd, req, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, payload,
			  size, fds, nfds, &m, timeout_ms);

	if (rc < 0)
		return rc;
	if (rc != 8)
		return -EPROTO;
	return m.payload.u64 ? 1 : 0;
}

struct raw_session {
	uint64_t features;   /* offered */
	uint64_t pf;         /* negotiated protocol features */
};

/* GET_FEATURES, SET_FEATURES(VERSION_1 + protocol features), and every
 * protocol feature offered (REPLY_ACK included: requests only get acks when
 * they ask with NEED_REPLY). Returns 0 or -errno. */
static int raw_negotiate(int fd, struct raw_session *s, int timeout_ms)
{
	uint64_t f, pf = 0, want;
	int rc;

	rc = raw_get_u64(fd, VHOST_USER_GET_FEATURES, &f, timeout_ms);
	if (rc < 0)
		return rc;
	s->features = f;
	want = f & ((1ull << VIRTIO_F_VERSION_1_BIT) | (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	if (f & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) {
		rc = raw_get_u64(fd, VHOST_USER_GET_PROTOCOL_FEATURES, &pf, timeout_ms);
		if (rc < 0)
			return rc;
		rc = evil_send_msg(fd, VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_VERSION, 8,
				   &pf, 8, NULL, 0);
		if (rc < 0)
			return rc;
	}
	s->pf = pf;
	if (!(pf & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK)))
		return -ENOTSUP;
	rc = raw_acked(fd, VHOST_USER_SET_FEATURES, &want, 8, NULL, 0, timeout_ms);
	return rc < 0 ? rc : rc ? -EIO : 0;
}

uint32_t evil_device_rings(const struct evil_opts *o)
{
	struct raw_session s;
	struct vhost_user_msg m;
	struct vhost_user_config c;
	uint32_t rings = 0;
	bool ext;
	int fd, rc;

	if (o->rings)
		return o->rings;
	fd = evil_connect(o->socket);
	if (fd < 0)
		return 0;
	if (raw_negotiate(fd, &s, o->timeout_ms) < 0)
		goto out;
	if (!(s.features & (1ull << VIRTIO_NET_F_ROCE_BIT))) {
		rings = 3;
		goto out;
	}
	/* max_rdma_qps, max_rdma_cqs (and max_rdma_srqs when the device offers
	 * VIRTIO_NET_F_ROCE_EXT: its rings exist whatever a driver negotiates) */
	ext = !!(s.features & (1ull << VIRTIO_NET_F_ROCE_EXT_BIT));
	memset(&c, 0, sizeof(c));
	c.offset = 24;
	c.size = ext ? 12 : 8;
	rc = raw_call(fd, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, &c,
		      VHOST_USER_CONFIG_HDR_SIZE + c.size, NULL, 0, &m, o->timeout_ms);
	if (rc == (int)(VHOST_USER_CONFIG_HDR_SIZE + c.size)) {
		uint32_t qps, cqs, srqs = 0;

		memcpy(&qps, m.payload.config.region, 4);
		memcpy(&cqs, m.payload.config.region + 4, 4);
		if (ext)
			memcpy(&srqs, m.payload.config.region + 8, 4);
		/* netdev.h: rx, tx, ctrl, then the CQs, then SQ/RQ pairs; with
		 * the extension the event queue and the SRQ rings. */
		rings = 3 + cqs + 2 * qps + (ext ? 1 + srqs : 0);
	}
out:
	close(fd);
	return rings;
}

/* ---- message attacks ---- */

struct raw_msg {
	uint32_t req, flags, size;
	uint8_t payload[8192];
	size_t len;              /* payload bytes actually sent */
	int fds[EVIL_MAX_SEND_FDS];
	int nfds;
	bool no_probe;           /* framing broken on purpose: a probe would be eaten */
	bool hangup;             /* close right after sending (eof attacks) */
	bool no_negotiate;       /* send on a fresh connection, before anything */
	bool negotiated;         /* the builder negotiated already */
	bool expect_nack;        /* REPLY_ACK was asked: a non-zero ack must come */
};

typedef int (*raw_build_fn)(const struct evil_opts *o, int fd, int arg, struct raw_msg *m);

static int memfd_of(size_t size)
{
	int fd = memfd_create("vrdma-evil", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void put_u64(struct raw_msg *m, uint32_t req, uint64_t v)
{
	m->req = req;
	m->size = 8;
	m->len = 8;
	memcpy(m->payload, &v, 8);
}

static void put_state(struct raw_msg *m, uint32_t req, uint32_t idx, uint32_t num)
{
	struct vhost_user_vring_state st = { .index = idx, .num = num };

	m->req = req;
	m->size = sizeof(st);
	m->len = sizeof(st);
	memcpy(m->payload, &st, sizeof(st));
}

static void put_regions(struct raw_msg *m, uint32_t nregions, const struct vhost_user_mem_region *r,
			unsigned n)
{
	struct vhost_user_memory mt;

	memset(&mt, 0, sizeof(mt));
	mt.nregions = nregions;
	for (unsigned i = 0; i < n && i < VHOST_USER_MEMORY_MAX_NREGIONS; i++)
		mt.regions[i] = r[i];
	m->req = VHOST_USER_SET_MEM_TABLE;
	m->size = 8 + 32 * n;
	m->len = m->size;
	memcpy(m->payload, &mt, m->size);
}

static void put_single_region(struct raw_msg *m, uint32_t req,
			      const struct vhost_user_mem_region *r)
{
	struct vhost_user_single_mem_region s;

	memset(&s, 0, sizeof(s));
	s.region = *r;
	m->req = req;
	m->size = sizeof(s);
	m->len = sizeof(s);
	memcpy(m->payload, &s, sizeof(s));
}

static int add_fd(struct raw_msg *m, int fd)
{
	if (fd < 0)
		return fd;
	if (m->nfds == EVIL_MAX_SEND_FDS) {
		close(fd);
		return -E2BIG;
	}
	m->fds[m->nfds++] = fd;
	return 0;
}

/* arg: 0 SET_VRING_NUM with 4 bytes, 1 GET_FEATURES with 8 bytes,
 * 2 SET_MEM_TABLE size disagreeing with nregions. */
static int b_size(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	if (arg == 0) {
		put_state(m, VHOST_USER_SET_VRING_NUM, 0, 64);
		m->size = m->len = 4;
	} else if (arg == 1) {
		put_u64(m, VHOST_USER_GET_FEATURES, 0);
	} else {
		struct vhost_user_mem_region r = { 0x100000, 65536, 0x100000, 0 };

		put_regions(m, 2, &r, 1); /* says 2, carries 1 */
		return add_fd(m, memfd_of(65536));
	}
	return 0;
}

/* Header only, announcing far more payload than a message may have. */
static int b_size_huge(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	m->req = arg ? VHOST_USER_SET_MEM_TABLE : VHOST_USER_SET_CONFIG;
	m->size = arg ? 0xffffffffu : 65536;
	m->len = 0;
	m->no_probe = true;
	return 0;
}

/* arg is the request number; NEED_REPLY asked for the large one. */
static int b_unknown(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	m->req = (uint32_t)arg;
	if ((uint32_t)arg > 1000) {
		m->flags |= VHOST_USER_NEED_REPLY_MASK;
		m->expect_nack = true;
	}
	m->size = m->len = 8;
	return 0;
}

/* arg: 0 version 2, 1 reply bit set, 2 version 0. */
static int b_flags(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	put_u64(m, VHOST_USER_SET_OWNER, 0);
	m->size = m->len = 0;
	m->flags = arg == 0 ? 2 : arg == 1 ? (VHOST_USER_VERSION | VHOST_USER_REPLY_MASK) : 0;
	return 0;
}

/* arg: 0 SET_MEM_TABLE with 12 fds, 1 GET_FEATURES with an fd, 2 SET_VRING_CALL
 * without fd or no-fd bit, 3 SET_MEM_TABLE with 2 regions and 1 fd,
 * 4 SET_VRING_KICK with 2 fds. */
static int b_fds(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	struct vhost_user_mem_region r[2] = {
		{ 0x100000, 65536, 0x100000, 0 },
		{ 0x200000, 65536, 0x200000, 0 },
	};
	int rc = 0;

	(void)o;
	(void)fd;
	switch (arg) {
	case 0:
		put_regions(m, 1, r, 1);
		for (int i = 0; i < 12 && !rc; i++)
			rc = add_fd(m, memfd_of(65536));
		break;
	case 1:
		m->req = VHOST_USER_GET_FEATURES;
		m->size = m->len = 0;
		rc = add_fd(m, eventfd(0, EFD_CLOEXEC));
		break;
	case 2:
		put_u64(m, VHOST_USER_SET_VRING_CALL, 0);
		break;
	case 3:
		put_regions(m, 2, r, 2);
		rc = add_fd(m, memfd_of(65536));
		break;
	default:
		put_u64(m, VHOST_USER_SET_VRING_KICK, 0);
		rc = add_fd(m, eventfd(0, EFD_CLOEXEC));
		if (!rc)
			rc = add_fd(m, eventfd(0, EFD_CLOEXEC));
		break;
	}
	return rc;
}

/* Bad memory tables. arg selects the defect. */
enum {
	MEM_OVERLAP, MEM_ADD_OVERLAP, MEM_HUGE, MEM_WRAP, MEM_OFFSET, MEM_PIPE, MEM_EVENTFD,
	MEM_ZERO, MEM_NREGIONS, MEM_REM_UNKNOWN, MEM_UVA_WRAP,
};

static int b_mem(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	struct vhost_user_mem_region r[2] = {
		{ 0x100000, 65536, 0x7f0000100000, 0 },
		{ 0x10f000, 65536, 0x7f0000200000, 0 }, /* overlaps r[0] in GPA */
	};
	int p[2], rc = 0;

	switch (arg) {
	case MEM_OVERLAP:
		put_regions(m, 2, r, 2);
		rc = add_fd(m, memfd_of(65536));
		if (!rc)
			rc = add_fd(m, memfd_of(65536));
		break;
	case MEM_ADD_OVERLAP: {
		/* A correct region first (must be acked), then one overlapping it. */
		struct vhost_user_single_mem_region s = { 0, r[0] };
		struct raw_session sess;
		int mfd;

		rc = raw_negotiate(fd, &sess, o->timeout_ms);
		if (rc < 0)
			return rc;
		m->negotiated = true;
		mfd = memfd_of(65536);
		if (mfd < 0)
			return mfd;
		rc = raw_acked(fd, VHOST_USER_ADD_MEM_REG, &s, sizeof(s), &mfd, 1, o->timeout_ms);
		close(mfd);
		if (rc != 0) {
			evil_say("setup: the first, correct ADD_MEM_REG was refused (%d)", rc);
			return rc < 0 ? rc : -EIO;
		}
		put_single_region(m, VHOST_USER_ADD_MEM_REG, &r[1]);
		rc = add_fd(m, memfd_of(65536));
		break;
	}
	case MEM_HUGE:
		r[0].memory_size = 1ull << 62;
		put_regions(m, 1, r, 1);
		rc = add_fd(m, memfd_of(65536));
		break;
	case MEM_WRAP:
		r[0].guest_phys_addr = 0xfffffffffffff000ull;
		r[0].memory_size = 0x2000;
		put_regions(m, 1, r, 1);
		rc = add_fd(m, memfd_of(65536));
		break;
	case MEM_UVA_WRAP:
		r[0].userspace_addr = 0xffffffffffff0000ull;
		r[0].memory_size = 0x20000;
		put_regions(m, 1, r, 1);
		rc = add_fd(m, memfd_of(0x20000));
		break;
	case MEM_OFFSET:
		r[0].mmap_offset = 1ull << 40;
		put_regions(m, 1, r, 1);
		rc = add_fd(m, memfd_of(65536));
		break;
	case MEM_PIPE:
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		close(p[1]);
		put_regions(m, 1, r, 1);
		rc = add_fd(m, p[0]);
		break;
	case MEM_EVENTFD:
		put_single_region(m, VHOST_USER_ADD_MEM_REG, &r[0]);
		rc = add_fd(m, eventfd(0, EFD_CLOEXEC));
		break;
	case MEM_ZERO:
		r[0].memory_size = 0;
		put_single_region(m, VHOST_USER_ADD_MEM_REG, &r[0]);
		rc = add_fd(m, memfd_of(65536));
		break;
	case MEM_NREGIONS: {
		/* nregions 9 (> 8), with a payload and fds for 8. */
		struct vhost_user_memory mt;

		memset(&mt, 0, sizeof(mt));
		mt.nregions = 9;
		for (unsigned i = 0; i < 8; i++) {
			mt.regions[i] = r[0];
			mt.regions[i].guest_phys_addr = 0x100000ull * (i + 1);
			rc = rc ? rc : add_fd(m, memfd_of(65536));
		}
		m->req = VHOST_USER_SET_MEM_TABLE;
		m->size = m->len = sizeof(mt);
		memcpy(m->payload, &mt, sizeof(mt));
		break;
	}
	default: /* MEM_REM_UNKNOWN */
		put_single_region(m, VHOST_USER_REM_MEM_REG, &r[0]);
		break;
	}
	return rc;
}

/* Ring indexes beyond the device. arg: 0 NUM idx=rings, 1 ADDR idx=~0,
 * 2 GET_VRING_BASE idx=rings, 3 KICK (wide encoding) idx=rings,
 * 4 ENABLE idx=0x7fffffff, 5 NUM for the last ring (accepted), 6 CALL in the
 * standard encoding with reserved bits 9-31 set. */
static int b_ring_index(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	uint32_t rings = evil_device_rings(o);
	uint64_t u = 0;

	(void)fd;
	if (!rings) {
		evil_say("setup: cannot learn the device's number of rings");
		return -EIO;
	}
	evil_say("device rings %u", rings);
	switch (arg) {
	case 0:
		put_state(m, VHOST_USER_SET_VRING_NUM, rings, 64);
		break;
	case 1: {
		struct vhost_user_vring_addr a = { .index = 0xffffffffu };

		m->req = VHOST_USER_SET_VRING_ADDR;
		m->size = m->len = sizeof(a);
		memcpy(m->payload, &a, sizeof(a));
		break;
	}
	case 2:
		put_state(m, VHOST_USER_GET_VRING_BASE, rings, 0);
		break;
	case 3:
		if (vhost_user_vring_fd_payload(rings, true, false, &u) < 0)
			return -EINVAL;
		put_u64(m, VHOST_USER_SET_VRING_KICK, u);
		return add_fd(m, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	case 4:
		put_state(m, VHOST_USER_SET_VRING_ENABLE, 0x7fffffffu, 1);
		break;
	case 5:
		put_state(m, VHOST_USER_SET_VRING_NUM, rings - 1, 64);
		m->flags |= VHOST_USER_NEED_REPLY_MASK;
		break;
	default:
		put_u64(m, VHOST_USER_SET_VRING_CALL, 0x12345600ull | 1);
		return add_fd(m, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	}
	return 0;
}

/* SET_VRING_NUM with the value arg (ring 0). */
static int b_vring_num(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	put_state(m, VHOST_USER_SET_VRING_NUM, 1, (uint32_t)arg);
	if (arg == 32768)
		m->flags |= VHOST_USER_NEED_REPLY_MASK;
	return 0;
}

/* arg: 0 misaligned desc, 1 dirty-log flag, 2 unknown flag bits,
 * 3 SET_VRING_BASE 0x10000, 4 KICK with a pipe instead of an eventfd,
 * 5 CALL with a memfd. */
static int b_vring_misc(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	struct vhost_user_vring_addr a = {
		.index = 1,
		.desc_user_addr = 0x100008,
		.avail_user_addr = 0x101000,
		.used_user_addr = 0x102000,
	};
	int p[2];

	(void)o;
	(void)fd;
	switch (arg) {
	case 0:
	case 1:
	case 2:
		if (arg >= 1) {
			a.desc_user_addr = 0x100000;
			a.flags = arg == 1 ? 1 : 0x80;
		}
		m->req = VHOST_USER_SET_VRING_ADDR;
		m->size = m->len = sizeof(a);
		memcpy(m->payload, &a, sizeof(a));
		return 0;
	case 3:
		put_state(m, VHOST_USER_SET_VRING_BASE, 1, 0x10000);
		return 0;
	case 4:
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		close(p[0]);
		put_u64(m, VHOST_USER_SET_VRING_KICK, 1);
		return add_fd(m, p[1]);
	default:
		put_u64(m, VHOST_USER_SET_VRING_CALL, 1);
		return add_fd(m, memfd_of(4096));
	}
}

/* GET/SET_CONFIG. arg: 0 offset+size beyond 256, 1 header size disagreeing
 * with the size field, 2 inside 256 but beyond the device's config space
 * (empty reply, session kept), 3 SET_CONFIG of the read-only MAC (refused,
 * session kept), 4 size field 0xffffffff. */
static int b_config(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	struct vhost_user_config c;

	(void)o;
	(void)fd;
	memset(&c, 0, sizeof(c));
	m->req = VHOST_USER_GET_CONFIG;
	switch (arg) {
	case 0:
		c.offset = 250;
		c.size = 16;
		break;
	case 1:
		c.offset = 0;
		c.size = 16;
		memcpy(m->payload, &c, VHOST_USER_CONFIG_HDR_SIZE + 8);
		m->size = m->len = VHOST_USER_CONFIG_HDR_SIZE + 8;
		return 0;
	case 2:
		c.offset = 0;
		c.size = 200;
		break;
	case 3:
		m->req = VHOST_USER_SET_CONFIG;
		c.offset = 0;
		c.size = 6;
		memcpy(c.region, "\x02\xee\xee\xee\xee\xee", 6);
		m->flags |= VHOST_USER_NEED_REPLY_MASK;
		m->expect_nack = true;
		break;
	default:
		c.offset = 0;
		c.size = 0xffffffffu;
		memcpy(m->payload, &c, VHOST_USER_CONFIG_HDR_SIZE + 16);
		m->size = m->len = VHOST_USER_CONFIG_HDR_SIZE + 16;
		return 0;
	}
	m->size = m->len = VHOST_USER_CONFIG_HDR_SIZE + c.size;
	memcpy(m->payload, &c, m->len);
	return 0;
}

/* arg: 0 SET_FEATURES not offered, 1 SET_PROTOCOL_FEATURES not offered,
 * 2 SET_STATUS 0x100, 3 SET_LOG_BASE (unimplemented, no ack asked),
 * 4 SET_VRING_ENABLE 2. */
static int b_negotiation(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	(void)o;
	(void)fd;
	switch (arg) {
	case 0:
		put_u64(m, VHOST_USER_SET_FEATURES, 1ull << 63);
		break;
	case 1:
		put_u64(m, VHOST_USER_SET_PROTOCOL_FEATURES, 1ull << 62);
		break;
	case 2:
		put_u64(m, VHOST_USER_SET_STATUS, 0x100);
		break;
	case 3:
		put_u64(m, VHOST_USER_SET_LOG_BASE, 0);
		break;
	default:
		put_state(m, VHOST_USER_SET_VRING_ENABLE, 1, 2);
		break;
	}
	return 0;
}

/* We hang up mid-message. arg: 0 six header bytes, 1 SET_VRING_ADDR with 10 of
 * its 40 payload bytes, 2 SET_MEM_TABLE with 2 memfds attached and half its
 * payload, 3 ADD_MEM_REG complete but the socket closed before its ack is read
 * (the back-end's reply hits a closed socket). */
static int b_trunc(const struct evil_opts *o, int fd, int arg, struct raw_msg *m)
{
	struct vhost_user_mem_region r[2] = {
		{ 0x100000, 65536, 0x100000, 0 },
		{ 0x200000, 65536, 0x200000, 0 },
	};
	int rc = 0;

	(void)o;
	(void)fd;
	m->hangup = true;
	m->no_probe = true;
	switch (arg) {
	case 0:
		put_u64(m, VHOST_USER_SET_FEATURES, 0);
		m->len = 0;
		m->size = 8;
		m->no_negotiate = true;
		break;
	case 1:
		m->req = VHOST_USER_SET_VRING_ADDR;
		m->size = sizeof(struct vhost_user_vring_addr);
		m->len = 10;
		break;
	case 2:
		put_regions(m, 2, r, 2);
		m->len = m->size / 2;
		rc = add_fd(m, memfd_of(65536));
		if (!rc)
			rc = add_fd(m, memfd_of(65536));
		break;
	default:
		put_single_region(m, VHOST_USER_ADD_MEM_REG, &r[0]);
		m->flags |= VHOST_USER_NEED_REPLY_MASK;
		rc = add_fd(m, memfd_of(65536));
		break;
	}
	return rc;
}

static int raw_header_only(int fd, const struct raw_msg *m)
{
	/* Six bytes of a header: the back-end must wait, then see EOF. */
	struct vhost_user_hdr h = { .request = m->req, .flags = m->flags, .size = m->size };

	return evil_send_raw(fd, &h, 6, m->fds, m->nfds);
}

/* Connect and ask GET_FEATURES: the socket accepts the next front-end once
 * the previous session is gone. Returns 0 or -errno. */
static int reconnect_probe(const struct evil_opts *o)
{
	uint64_t f;
	int fd = evil_connect(o->socket), rc;

	if (fd < 0)
		return fd;
	rc = raw_get_u64(fd, VHOST_USER_GET_FEATURES, &f, o->timeout_ms);
	close(fd);
	return rc;
}

static int run_raw(const struct evil_opts *o, const struct evil_attack *a, raw_build_fn build)
{
	struct raw_msg *m = calloc(1, sizeof(*m));
	struct raw_session s;
	enum evil_outcome out;
	unsigned replies;
	uint64_t nack;
	int fd, rc, ret;

	if (!m)
		return EVIL_SETUP;
	m->flags = VHOST_USER_VERSION;
	fd = evil_connect(o->socket);
	if (fd < 0) {
		evil_say("setup: connect %s: %s", o->socket, strerror(-fd));
		free(m);
		return EVIL_SETUP;
	}
	rc = build(o, fd, a->arg, m);
	if (!rc && !m->no_negotiate && !m->negotiated) {
		/* Most attacks come after a normal start (features and protocol
		 * features negotiated), where the back-end checks the most. */
		rc = raw_negotiate(fd, &s, o->timeout_ms);
		if (rc < 0)
			evil_say("setup: negotiation failed: %s", strerror(-rc));
	}
	if (rc < 0) {
		vhost_msg_close_fds(m->fds, m->nfds);
		close(fd);
		free(m);
		return EVIL_SETUP;
	}
	evil_dbg(o, "sending request %u flags %#x size %u (%zu payload bytes, %d fds)%s",
		  m->req, m->flags, m->size, m->len, m->nfds, m->hangup ? ", then hanging up" : "");
	if (m->hangup && m->len == 0 && m->size)
		rc = raw_header_only(fd, m);
	else
		rc = evil_send_msg(fd, m->req, m->flags, m->size, m->payload, m->len, m->fds,
				   m->nfds);
	vhost_msg_close_fds(m->fds, m->nfds);
	if (rc < 0 && rc != -EPIPE && rc != -ECONNRESET) {
		evil_say("setup: send failed: %s", strerror(-rc));
		close(fd);
		free(m);
		return EVIL_SETUP;
	}
	if (m->hangup) {
		close(fd);
		evil_say("outcome eof");
		rc = reconnect_probe(o);
		evil_say("reconnect %s", rc ? "failed" : "ok");
		free(m);
		return evil_verdict(rc == 0, "the socket does not accept a new front-end (%s)",
				    strerror(-rc));
	}
	out = evil_outcome(fd, !m->no_probe, o->timeout_ms, &nack, &replies);
	close(fd);
	evil_say("outcome %s", evil_outcome_name(out));
	if (nack != UINT64_MAX)
		evil_say("ack %llu", (unsigned long long)nack);
	rc = reconnect_probe(o);
	evil_say("reconnect %s", rc ? "failed" : "ok");
	if (a->expect == EVIL_CLOSED)
		ret = evil_verdict(out == EVIL_OUT_CLOSED && (!m->expect_nack || (nack && nack != UINT64_MAX)) &&
				   rc == 0,
				   "expected the back-end to close the connection%s and accept the next one "
				   "(outcome %s, ack %lld, reconnect %d)",
				   m->expect_nack ? " after a NACK" : "", evil_outcome_name(out),
				   nack == UINT64_MAX ? -1ll : (long long)nack, rc);
	else
		ret = evil_verdict(out == EVIL_OUT_ALIVE && (!m->expect_nack || (nack && nack != UINT64_MAX)) &&
				   rc == 0,
				   "expected the back-end to refuse%s and keep the session (outcome %s, ack %lld)",
				   m->expect_nack ? " with a NACK" : "", evil_outcome_name(out),
				   nack == UINT64_MAX ? -1ll : (long long)nack);
	free(m);
	return ret;
}

/*
 * Many front-ends at once on a device that serves one: 64 connections (those
 * beyond the listen backlog are refused by the kernel), half of them sending
 * a garbage header, all closed at once. The back-end must work through the
 * queue and accept a normal front-end afterwards.
 */
static int r_connect_flood(const struct evil_opts *o, const struct evil_attack *a)
{
	static const uint8_t junk[12] = { 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds[64], n = 0, rc;

	(void)a;
	if (strlen(o->socket) >= sizeof(sa.sun_path))
		return EVIL_SETUP;
	strcpy(sa.sun_path, o->socket);
	for (int i = 0; i < 64; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fd);
			continue;
		}
		if (i & 1)
			(void)send(fd, junk, sizeof(junk), MSG_NOSIGNAL | MSG_DONTWAIT);
		fds[n++] = fd;
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	evil_say("connections %d of 64", n);
	evil_say("outcome eof");
	rc = reconnect_probe(o);
	evil_say("reconnect %s", rc ? "failed" : "ok");
	return evil_verdict(rc == 0, "no front-end accepted after the flood (%s)", strerror(-rc));
}

#define RAW_ATTACK(fn)                                                               \
	static int r_##fn(const struct evil_opts *o, const struct evil_attack *a)    \
	{                                                                            \
		return run_raw(o, a, fn);                                            \
	}
RAW_ATTACK(b_size)
RAW_ATTACK(b_size_huge)
RAW_ATTACK(b_unknown)
RAW_ATTACK(b_flags)
RAW_ATTACK(b_fds)
RAW_ATTACK(b_mem)
RAW_ATTACK(b_ring_index)
RAW_ATTACK(b_vring_num)
RAW_ATTACK(b_vring_misc)
RAW_ATTACK(b_config)
RAW_ATTACK(b_negotiation)
RAW_ATTACK(b_trunc)

const struct evil_attack evil_msg_attacks[] = {
	{ "size_short", EVIL_CLOSED, "SET_VRING_NUM with a 4-byte payload", r_b_size, 0 },
	{ "size_long", EVIL_CLOSED, "GET_FEATURES with an 8-byte payload", r_b_size, 1 },
	{ "size_mem_table", EVIL_CLOSED, "SET_MEM_TABLE saying 2 regions, carrying 1", r_b_size, 2 },
	{ "size_huge", EVIL_CLOSED, "header announcing a 65536-byte payload", r_b_size_huge, 0 },
	{ "size_4g", EVIL_CLOSED, "header announcing a 0xffffffff-byte payload", r_b_size_huge, 1 },
	{ "unknown_request", EVIL_CLOSED, "request 41, one past the last known", r_b_unknown, 41 },
	{ "unknown_request_ack", EVIL_CLOSED, "request 0x5eadbeef asking for REPLY_ACK",
	  r_b_unknown, 0x5eadbeef },
	{ "request_none", EVIL_CLOSED, "request 0 (VHOST_USER_NONE)", r_b_unknown, 0 },
	{ "unimplemented_request", EVIL_CLOSED, "SET_LOG_BASE (not implemented, no ack asked)",
	  r_b_negotiation, 3 },
	{ "flags_version2", EVIL_CLOSED, "header version 2", r_b_flags, 0 },
	{ "flags_reply_bit", EVIL_CLOSED, "request with the reply bit set", r_b_flags, 1 },
	{ "flags_version0", EVIL_CLOSED, "header version 0", r_b_flags, 2 },
	{ "too_many_fds", EVIL_CLOSED, "SET_MEM_TABLE carrying 12 fds (at most 8)", r_b_fds, 0 },
	{ "fd_unexpected", EVIL_CLOSED, "GET_FEATURES carrying an fd", r_b_fds, 1 },
	{ "fd_missing", EVIL_CLOSED, "SET_VRING_CALL with no fd and no no-fd bit", r_b_fds, 2 },
	{ "fd_too_few", EVIL_CLOSED, "SET_MEM_TABLE with 2 regions and 1 fd", r_b_fds, 3 },
	{ "fd_two_kicks", EVIL_CLOSED, "SET_VRING_KICK carrying 2 fds", r_b_fds, 4 },
	{ "mem_overlap", EVIL_CLOSED, "SET_MEM_TABLE with two overlapping regions", r_b_mem, MEM_OVERLAP },
	{ "mem_add_overlap", EVIL_CLOSED, "ADD_MEM_REG overlapping a region added before",
	  r_b_mem, MEM_ADD_OVERLAP },
	{ "mem_huge", EVIL_CLOSED, "a 2^62-byte region over a 64 KiB memfd", r_b_mem, MEM_HUGE },
	{ "mem_gpa_wrap", EVIL_CLOSED, "a region whose GPA + size wraps 2^64", r_b_mem, MEM_WRAP },
	{ "mem_uva_wrap", EVIL_CLOSED, "a region whose UVA + size wraps 2^64", r_b_mem, MEM_UVA_WRAP },
	{ "mem_offset", EVIL_CLOSED, "mmap_offset 1 TiB into a 64 KiB memfd", r_b_mem, MEM_OFFSET },
	{ "mem_bad_fd_pipe", EVIL_CLOSED, "a region backed by a pipe", r_b_mem, MEM_PIPE },
	{ "mem_bad_fd_eventfd", EVIL_CLOSED, "ADD_MEM_REG backed by an eventfd", r_b_mem, MEM_EVENTFD },
	{ "mem_size_zero", EVIL_CLOSED, "ADD_MEM_REG of 0 bytes", r_b_mem, MEM_ZERO },
	{ "mem_nregions", EVIL_CLOSED, "SET_MEM_TABLE announcing 9 regions", r_b_mem, MEM_NREGIONS },
	{ "mem_rem_unknown", EVIL_CLOSED, "REM_MEM_REG of a region never added", r_b_mem,
	  MEM_REM_UNKNOWN },
	{ "ring_index_num", EVIL_CLOSED, "SET_VRING_NUM for ring index = number of rings",
	  r_b_ring_index, 0 },
	{ "ring_index_addr", EVIL_CLOSED, "SET_VRING_ADDR for ring 0xffffffff", r_b_ring_index, 1 },
	{ "ring_index_get_base", EVIL_CLOSED, "GET_VRING_BASE for ring index = number of rings",
	  r_b_ring_index, 2 },
	{ "ring_index_kick", EVIL_CLOSED, "SET_VRING_KICK (wide index) for ring = number of rings",
	  r_b_ring_index, 3 },
	{ "ring_index_enable", EVIL_CLOSED, "SET_VRING_ENABLE for ring 0x7fffffff", r_b_ring_index, 4 },
	{ "ring_index_reserved_bits", EVIL_CLOSED, "SET_VRING_CALL payload with reserved bits",
	  r_b_ring_index, 6 },
	{ "ring_index_last", EVIL_ALIVE, "SET_VRING_NUM for the last ring (accepted)",
	  r_b_ring_index, 5 },
	{ "vring_num_3", EVIL_CLOSED, "SET_VRING_NUM 3 (not a power of two)", r_b_vring_num, 3 },
	{ "vring_num_0", EVIL_CLOSED, "SET_VRING_NUM 0", r_b_vring_num, 0 },
	{ "vring_num_65536", EVIL_CLOSED, "SET_VRING_NUM 65536 (> 32768)", r_b_vring_num, 65536 },
	{ "vring_num_32768", EVIL_ALIVE, "SET_VRING_NUM 32768 (largest, accepted)", r_b_vring_num, 32768 },
	{ "vring_addr_misaligned", EVIL_CLOSED, "SET_VRING_ADDR with a misaligned descriptor table",
	  r_b_vring_misc, 0 },
	{ "vring_addr_log", EVIL_CLOSED, "SET_VRING_ADDR asking for dirty logging", r_b_vring_misc, 1 },
	{ "vring_addr_flags", EVIL_CLOSED, "SET_VRING_ADDR with unknown flags", r_b_vring_misc, 2 },
	{ "vring_base_big", EVIL_CLOSED, "SET_VRING_BASE 0x10000", r_b_vring_misc, 3 },
	{ "kick_not_eventfd", EVIL_CLOSED, "SET_VRING_KICK with a pipe", r_b_vring_misc, 4 },
	{ "call_not_eventfd", EVIL_CLOSED, "SET_VRING_CALL with a memfd", r_b_vring_misc, 5 },
	{ "vring_enable_2", EVIL_CLOSED, "SET_VRING_ENABLE 2", r_b_negotiation, 4 },
	{ "config_out_of_range", EVIL_CLOSED, "GET_CONFIG offset 250 size 16 (beyond 256)",
	  r_b_config, 0 },
	{ "config_size_lie", EVIL_CLOSED, "GET_CONFIG whose size field disagrees with the header",
	  r_b_config, 1 },
	{ "config_size_4g", EVIL_CLOSED, "GET_CONFIG size field 0xffffffff", r_b_config, 4 },
	{ "config_beyond_device", EVIL_ALIVE,
	  "GET_CONFIG of 200 bytes (inside 256, beyond the device's space)", r_b_config, 2 },
	{ "config_set_readonly", EVIL_ALIVE, "SET_CONFIG of the read-only MAC", r_b_config, 3 },
	{ "features_not_offered", EVIL_CLOSED, "SET_FEATURES with a bit not offered",
	  r_b_negotiation, 0 },
	{ "protocol_features_not_offered", EVIL_CLOSED,
	  "SET_PROTOCOL_FEATURES with a bit not offered", r_b_negotiation, 1 },
	{ "status_too_big", EVIL_CLOSED, "SET_STATUS 0x100", r_b_negotiation, 2 },
	{ "truncated_header", EVIL_EOF, "6 header bytes, then hang up", r_b_trunc, 0 },
	{ "truncated_payload", EVIL_EOF, "SET_VRING_ADDR with 10 of 40 payload bytes, then hang up",
	  r_b_trunc, 1 },
	{ "truncated_with_fds", EVIL_EOF, "half a SET_MEM_TABLE carrying 2 memfds, then hang up",
	  r_b_trunc, 2 },
	{ "hangup_before_ack", EVIL_EOF, "ADD_MEM_REG asking for an ack, then hang up",
	  r_b_trunc, 3 },
	{ "connect_flood", EVIL_EOF, "64 connections at once, half with garbage, all closed",
	  r_connect_flood, 0 },
};
const unsigned evil_msg_nattacks = sizeof(evil_msg_attacks) / sizeof(evil_msg_attacks[0]);
