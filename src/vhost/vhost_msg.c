/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user message codec: framing with SCM_RIGHTS, the per-request table of
 * payload and fd rules, replies. See vhost_msg.h.
 */
#include "vhost/vhost_msg.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

/* How the payload size of a request is checked. */
enum vhost_msg_payload {
	VMP_FIXED,   /* exactly info->size bytes */
	VMP_MEM,     /* struct vhost_user_memory with nregions regions */
	VMP_CONFIG,  /* struct vhost_user_config header + size bytes */
	VMP_ANY,     /* not checked (requests the back-end refuses anyway) */
};

/* How many fds a request carries. */
enum vhost_msg_fds {
	VMF_NONE,
	VMF_ONE,
	VMF_OPT,     /* zero or one */
	VMF_MEM,     /* one per region */
	VMF_VRING,   /* one unless the u64 payload has the "no fd" bit */
	VMF_ANY,
};

struct vhost_msg_info {
	const char *name;
	uint8_t payload;  /* enum vhost_msg_payload */
	uint8_t fds;      /* enum vhost_msg_fds */
	uint8_t reply;    /* has a reply of its own */
	uint16_t size;    /* VMP_FIXED size */
};

#define FIXED(n, sz, f) { n, VMP_FIXED, f, 0, sz }
#define FIXED_R(n, sz) { n, VMP_FIXED, VMF_NONE, 1, sz }
#define UNSUPP(n, r) { n, VMP_ANY, VMF_ANY, r, 0 }

/* One entry per request number (rxe-style table instead of scattered switches). */
static const struct vhost_msg_info vhost_msg_table[VHOST_USER_MAX_REQUEST] = {
	[VHOST_USER_NONE] = { NULL, VMP_ANY, VMF_ANY, 0, 0 },
	[VHOST_USER_GET_FEATURES] = FIXED_R("GET_FEATURES", 0),
	[VHOST_USER_SET_FEATURES] = FIXED("SET_FEATURES", 8, VMF_NONE),
	[VHOST_USER_SET_OWNER] = FIXED("SET_OWNER", 0, VMF_NONE),
	[VHOST_USER_RESET_OWNER] = FIXED("RESET_OWNER", 0, VMF_NONE),
	[VHOST_USER_SET_MEM_TABLE] = { "SET_MEM_TABLE", VMP_MEM, VMF_MEM, 0, 0 },
	[VHOST_USER_SET_LOG_BASE] = UNSUPP("SET_LOG_BASE", 0),
	[VHOST_USER_SET_LOG_FD] = UNSUPP("SET_LOG_FD", 0),
	[VHOST_USER_SET_VRING_NUM] = FIXED("SET_VRING_NUM", 8, VMF_NONE),
	[VHOST_USER_SET_VRING_ADDR] = FIXED("SET_VRING_ADDR", 40, VMF_NONE),
	[VHOST_USER_SET_VRING_BASE] = FIXED("SET_VRING_BASE", 8, VMF_NONE),
	[VHOST_USER_GET_VRING_BASE] = FIXED_R("GET_VRING_BASE", 8),
	[VHOST_USER_SET_VRING_KICK] = FIXED("SET_VRING_KICK", 8, VMF_VRING),
	[VHOST_USER_SET_VRING_CALL] = FIXED("SET_VRING_CALL", 8, VMF_VRING),
	[VHOST_USER_SET_VRING_ERR] = FIXED("SET_VRING_ERR", 8, VMF_VRING),
	[VHOST_USER_GET_PROTOCOL_FEATURES] = FIXED_R("GET_PROTOCOL_FEATURES", 0),
	[VHOST_USER_SET_PROTOCOL_FEATURES] = FIXED("SET_PROTOCOL_FEATURES", 8, VMF_NONE),
	[VHOST_USER_GET_QUEUE_NUM] = FIXED_R("GET_QUEUE_NUM", 0),
	[VHOST_USER_SET_VRING_ENABLE] = FIXED("SET_VRING_ENABLE", 8, VMF_NONE),
	[VHOST_USER_SEND_RARP] = UNSUPP("SEND_RARP", 0),
	[VHOST_USER_NET_SET_MTU] = FIXED("NET_SET_MTU", 8, VMF_NONE),
	[VHOST_USER_SET_BACKEND_REQ_FD] = UNSUPP("SET_BACKEND_REQ_FD", 0),
	[VHOST_USER_IOTLB_MSG] = UNSUPP("IOTLB_MSG", 1),
	[VHOST_USER_SET_VRING_ENDIAN] = UNSUPP("SET_VRING_ENDIAN", 0),
	[VHOST_USER_GET_CONFIG] = { "GET_CONFIG", VMP_CONFIG, VMF_NONE, 1, 0 },
	[VHOST_USER_SET_CONFIG] = { "SET_CONFIG", VMP_CONFIG, VMF_NONE, 0, 0 },
	[VHOST_USER_CREATE_CRYPTO_SESSION] = UNSUPP("CREATE_CRYPTO_SESSION", 1),
	[VHOST_USER_CLOSE_CRYPTO_SESSION] = UNSUPP("CLOSE_CRYPTO_SESSION", 0),
	[VHOST_USER_POSTCOPY_ADVISE] = UNSUPP("POSTCOPY_ADVISE", 1),
	[VHOST_USER_POSTCOPY_LISTEN] = UNSUPP("POSTCOPY_LISTEN", 0),
	[VHOST_USER_POSTCOPY_END] = UNSUPP("POSTCOPY_END", 1),
	[VHOST_USER_GET_INFLIGHT_FD] = UNSUPP("GET_INFLIGHT_FD", 1),
	[VHOST_USER_SET_INFLIGHT_FD] = UNSUPP("SET_INFLIGHT_FD", 0),
	[VHOST_USER_GPU_SET_SOCKET] = UNSUPP("GPU_SET_SOCKET", 0),
	[VHOST_USER_RESET_DEVICE] = FIXED("RESET_DEVICE", 0, VMF_NONE),
	[VHOST_USER_VRING_KICK] = UNSUPP("VRING_KICK", 0),
	[VHOST_USER_GET_MAX_MEM_SLOTS] = FIXED_R("GET_MAX_MEM_SLOTS", 0),
	[VHOST_USER_ADD_MEM_REG] = FIXED("ADD_MEM_REG", 40, VMF_ONE),
	[VHOST_USER_REM_MEM_REG] = FIXED("REM_MEM_REG", 40, VMF_OPT),
	[VHOST_USER_SET_STATUS] = FIXED("SET_STATUS", 8, VMF_NONE),
	[VHOST_USER_GET_STATUS] = FIXED_R("GET_STATUS", 0),
};

_Static_assert(sizeof(struct vhost_user_vring_addr) == 40, "table size");
_Static_assert(sizeof(struct vhost_user_single_mem_region) == 40, "table size");

static const struct vhost_msg_info *vhost_msg_info(uint32_t req)
{
	if (req == VHOST_USER_NONE || req >= VHOST_USER_MAX_REQUEST)
		return NULL;
	return &vhost_msg_table[req];
}

const char *vhost_msg_name(uint32_t req)
{
	const struct vhost_msg_info *info = vhost_msg_info(req);

	return info ? info->name : "UNKNOWN";
}

bool vhost_msg_has_reply(uint32_t req)
{
	const struct vhost_msg_info *info = vhost_msg_info(req);

	return info && info->reply;
}

void vhost_msg_close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* ---- receive ---- */

void vhost_msg_rx_init(struct vhost_msg_rx *rx)
{
	rx->have = 0;
	rx->nfds = 0;
	memset(&rx->msg.hdr, 0, sizeof(rx->msg.hdr));
	for (int i = 0; i < VHOST_USER_MAX_FDS; i++)
		rx->fds[i] = -1;
}

void vhost_msg_rx_reset(struct vhost_msg_rx *rx)
{
	vhost_msg_close_fds(rx->fds, rx->nfds);
	vhost_msg_rx_init(rx);
}

int vhost_msg_rx_take(struct vhost_msg_rx *rx, int *fds)
{
	int n = rx->nfds;

	for (int i = 0; i < n; i++) {
		fds[i] = rx->fds[i];
		rx->fds[i] = -1;
	}
	rx->nfds = 0;
	rx->have = 0;
	return n;
}

/*
 * Keep the SCM_RIGHTS fds of one recvmsg() in rx. Returns 0, or -EMSGSIZE if
 * the message carries more fds than fit (those beyond are closed; the kernel
 * already dropped any that did not fit in the control buffer).
 */
static int vhost_msg_rx_collect(struct vhost_msg_rx *rx, struct msghdr *mh)
{
	bool overflow = (mh->msg_flags & MSG_CTRUNC) != 0;
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		int fd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		if (c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				continue;
			if (rx->nfds < VHOST_USER_MAX_FDS) {
				rx->fds[rx->nfds++] = fd;
			} else {
				close(fd);
				overflow = true;
			}
		}
	}
	return overflow ? -EMSGSIZE : 0;
}

int vhost_msg_rx_read(struct vhost_msg_rx *rx, int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	int err;

	for (;;) {
		struct msghdr mh;
		struct iovec iov;
		size_t want;
		ssize_t n;

		if (rx->have < VHOST_MSG_HDR_SIZE) {
			want = VHOST_MSG_HDR_SIZE - rx->have;
		} else {
			size_t total;

			if (rx->msg.hdr.size > VHOST_MSG_MAX_PAYLOAD) {
				err = -EMSGSIZE;
				goto fail;
			}
			total = VHOST_MSG_HDR_SIZE + rx->msg.hdr.size;
			if (rx->have == total)
				return 1;
			want = total - rx->have;
		}

		iov.iov_base = (uint8_t *)&rx->msg + rx->have;
		iov.iov_len = want;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			err = -errno;
			goto fail;
		}
		err = vhost_msg_rx_collect(rx, &mh);
		if (err)
			goto fail;
		if (n == 0) {
			err = -ECONNRESET;
			goto fail;
		}
		rx->have += (size_t)n;
	}

fail:
	vhost_msg_rx_reset(rx);
	return err;
}

/* Wait for events on sock until the deadline. Returns > 0 ready, 0 timeout,
 * -errno. */
static int vhost_msg_wait(int sock, short events, int timeout_ms, uint64_t deadline)
{
	struct pollfd p = { .fd = sock, .events = events };
	int r;

	do {
		int left = timeout_ms < 0 ? -1 : ms_until(deadline, mono_ns());

		if (left == 0)
			return 0;
		r = poll(&p, 1, left);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int vhost_msg_recv(int sock, struct vhost_user_msg *msg, int *fds, int *nfds,
		   int timeout_ms)
{
	struct vhost_msg_rx rx;
	uint64_t deadline = ms_deadline(timeout_ms);
	int r;

	vhost_msg_rx_init(&rx);
	for (;;) {
		r = vhost_msg_rx_read(&rx, sock);
		if (r < 0)
			return r;
		if (r == 1)
			break;
		r = vhost_msg_wait(sock, POLLIN, timeout_ms, deadline);
		if (r <= 0) {
			vhost_msg_rx_reset(&rx);
			return r == 0 ? -ETIMEDOUT : r;
		}
	}
	memcpy(msg, &rx.msg, vhost_msg_len(&rx.msg));
	if (fds && nfds) {
		*nfds = vhost_msg_rx_take(&rx, fds);
	} else {
		vhost_msg_rx_reset(&rx);
		if (nfds)
			*nfds = 0;
	}
	return 0;
}

/* ---- send ---- */

int vhost_msg_send(int sock, const struct vhost_user_msg *msg, const int *fds,
		   int nfds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	uint64_t deadline = ms_deadline(timeout_ms);
	size_t len, off = 0;

	if (!msg || nfds < 0 || nfds > VHOST_USER_MAX_FDS || (nfds && !fds) ||
	    msg->hdr.size > VHOST_MSG_MAX_PAYLOAD)
		return -EINVAL;
	len = vhost_msg_len(msg);

	while (off < len) {
		struct msghdr mh;
		struct iovec iov;
		ssize_t n;

		iov.iov_base = (uint8_t *)msg + off;
		iov.iov_len = len - off;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (off == 0 && nfds > 0) {
			struct cmsghdr *c;

			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
		}
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			int r;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (timeout_ms == 0)
				return -EAGAIN;
			r = vhost_msg_wait(sock, POLLOUT, timeout_ms, deadline);
			if (r < 0)
				return r;
			if (r == 0)
				return -EAGAIN;
			continue;
		}
		off += (size_t)n;
	}
	return 0;
}

/* ---- validation and building ---- */

int vhost_msg_check_request(const struct vhost_user_msg *msg, int nfds)
{
	const struct vhost_msg_info *info = vhost_msg_info(msg->hdr.request);
	uint32_t size = msg->hdr.size;
	int want_fds = 0;

	if (!info)
		return -ENOSYS;
	if ((msg->hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    (msg->hdr.flags & VHOST_USER_REPLY_MASK))
		return -EPROTO;
	if (size > VHOST_MSG_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (nfds < 0 || nfds > VHOST_USER_MAX_FDS)
		return -EBADF;

	switch (info->payload) {
	case VMP_FIXED:
		if (size != info->size)
			return -EMSGSIZE;
		break;
	case VMP_MEM: {
		uint32_t n;

		if (size < offsetof(struct vhost_user_memory, regions))
			return -EMSGSIZE;
		n = msg->payload.memory.nregions;
		if (n > VHOST_USER_MEMORY_MAX_NREGIONS)
			return -EINVAL;
		if (size != offsetof(struct vhost_user_memory, regions) +
			    n * sizeof(struct vhost_user_mem_region))
			return -EMSGSIZE;
		want_fds = (int)n;
		break;
	}
	case VMP_CONFIG: {
		const struct vhost_user_config *c = &msg->payload.config;

		if (size < VHOST_USER_CONFIG_HDR_SIZE)
			return -EMSGSIZE;
		if (c->size > VHOST_USER_MAX_CONFIG_SIZE ||
		    c->offset > VHOST_USER_MAX_CONFIG_SIZE - c->size)
			return -EINVAL;
		if (size != VHOST_USER_CONFIG_HDR_SIZE + c->size)
			return -EMSGSIZE;
		break;
	}
	default:
		break;
	}

	switch (info->fds) {
	case VMF_NONE:
		return nfds == 0 ? 0 : -EBADF;
	case VMF_ONE:
		return nfds == 1 ? 0 : -EBADF;
	case VMF_OPT:
		return nfds <= 1 ? 0 : -EBADF;
	case VMF_MEM:
		return nfds == want_fds ? 0 : -EBADF;
	case VMF_VRING:
		want_fds = (msg->payload.u64 & VHOST_USER_VRING_NOFD_MASK) ? 0 : 1;
		return nfds == want_fds ? 0 : -EBADF;
	default:
		return 0;
	}
}

int vhost_msg_check_reply(const struct vhost_user_msg *msg, uint32_t req,
			  uint32_t size)
{
	if (msg->hdr.flags != (VHOST_USER_VERSION | VHOST_USER_REPLY_MASK) ||
	    msg->hdr.request != req)
		return -EPROTO;
	if (msg->hdr.size != size)
		return -EMSGSIZE;
	return 0;
}

void vhost_msg_init(struct vhost_user_msg *msg, uint32_t req, uint32_t size)
{
	msg->hdr.request = req;
	msg->hdr.flags = VHOST_USER_VERSION;
	msg->hdr.size = size;
}

void vhost_msg_make_reply(struct vhost_user_msg *msg, uint32_t size)
{
	msg->hdr.flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK;
	msg->hdr.size = size;
}

void vhost_msg_reply_u64(struct vhost_user_msg *msg, uint64_t val)
{
	msg->payload.u64 = val;
	vhost_msg_make_reply(msg, sizeof(uint64_t));
}

int vhost_msg_vring_fd_decode(uint64_t u, bool wide, uint32_t *idx, bool *nofd)
{
	uint64_t allowed = VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD_MASK;

	if (wide)
		allowed |= VHOST_USER_VRING_WIDE_IDX_MASK << VHOST_USER_VRING_WIDE_IDX_SHIFT;
	if (u & ~allowed)
		return -EINVAL;
	*idx = (uint32_t)(u & VHOST_USER_VRING_IDX_MASK);
	if (wide)
		*idx |= (uint32_t)((u >> VHOST_USER_VRING_WIDE_IDX_SHIFT) &
				   VHOST_USER_VRING_WIDE_IDX_MASK) << 8;
	*nofd = (u & VHOST_USER_VRING_NOFD_MASK) != 0;
	return 0;
}
