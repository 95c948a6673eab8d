// SPDX-License-Identifier: BSD-3-Clause
/*
 * vhost-user front-end: blocking request/reply over a UNIX stream socket.
 * See vhost_client.h for the error model.
 */
#include "vhost/vhost_client.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_msg.h"

static int vc_errno(void)
{
	return errno ? -errno : -EIO;
}

_Static_assert(sizeof(((struct vhost_user_msg *)0)->payload) >= sizeof(struct vhost_user_config),
	       "payload");

/*
 * The fd stays open (shut down) until vhost_client_close(): a shut-down socket
 * polls readable (EOF) for ever, so an epoll set that contains it keeps
 * waking its owner up, who then learns -ENOTCONN from the next call.
 */
void vhost_client_set_dead(struct vhost_client *c)
{
	if (!c->dead && c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	c->dead = true;
}

int vhost_client_init_fd(struct vhost_client *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->dead = true;
	c->timeout_ms = VHOST_CLIENT_TIMEOUT_MS;
	if (fd < 0)
		return -EINVAL;
	c->fd = fd;
	c->dead = false;
	return 0;
}

int vhost_client_connect(struct vhost_client *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	vhost_client_init_fd(c, -1);
	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vc_errno();
	do {
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		rc = vc_errno();
		close(fd);
		return rc;
	}
	return vhost_client_init_fd(c, fd);
}

void vhost_client_close(struct vhost_client *c)
{
	vhost_client_set_dead(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int vhost_client_check_alive(struct vhost_client *c)
{
	struct pollfd p;
	int n;

	if (c->dead)
		return -ENOTCONN;
	p.fd = c->fd;
	p.events = POLLIN | POLLRDHUP;
	p.revents = 0;
	n = poll(&p, 1, 0);
	if (n < 0)
		return errno == EINTR ? 0 : vc_errno();
	if (n == 0)
		return 0;
	/* Anything readable outside a request is EOF, an error or garbage. */
	LOG_DEBUG("vhost-client: back-end connection lost (revents 0x%x)", p.revents);
	vhost_client_set_dead(c);
	return -ENOTCONN;
}

/* ---- wire codec (vhost_msg.c) ------------------------------------------- */

static int vc_send(struct vhost_client *c, const struct vhost_user_msg *msg,
		   const int *fds, int nfds)
{
	int rc;

	if (c->dead)
		return -ENOTCONN;
	rc = vhost_msg_send(c->fd, msg, fds, nfds, c->timeout_ms);
	if (rc < 0) {
		LOG_DEBUG("vhost-client: sending %s failed: %s",
			  vhost_msg_name(msg->hdr.request), strerror(-rc));
		if (rc == -EINVAL)
			return rc; /* nothing was sent */
		vhost_client_set_dead(c);
		return rc == -EAGAIN ? -ETIMEDOUT : -ENOTCONN;
	}
	c->requests++;
	return 0;
}

/*
 * Read one reply to request and validate it: flags exactly version 1 + reply
 * bit, the same request number, payload size == expect (or 0 when
 * allow_empty), no fds. Returns the payload size or -errno; every failure
 * leaves the connection dead (the stream cannot be trusted any more).
 */
static int vc_recv_reply(struct vhost_client *c, uint32_t request,
			 struct vhost_user_msg *reply, uint32_t expect, bool allow_empty)
{
	int fds[VHOST_USER_MAX_FDS];
	int nfds = 0, rc;

	if (c->dead)
		return -ENOTCONN;
	rc = vhost_msg_recv(c->fd, reply, fds, &nfds, c->timeout_ms);
	if (rc < 0) {
		if (rc == -ETIMEDOUT)
			LOG_WARN("vhost-client: no reply to %s within %d ms",
				 vhost_msg_name(request), c->timeout_ms);
		vhost_client_set_dead(c);
		return rc == -ETIMEDOUT ? rc : rc == -EMSGSIZE ? -EPROTO : -ENOTCONN;
	}
	if (nfds) {
		vhost_msg_close_fds(fds, nfds);
		rc = -EPROTO;
	} else {
		rc = vhost_msg_check_reply(reply, request, expect);
		if (rc && allow_empty && vhost_msg_check_reply(reply, request, 0) == 0)
			rc = 0;
	}
	if (rc) {
		LOG_PEER("vhost-client: bad reply to %s: request %u flags %#x size %u fds %d",
			 vhost_msg_name(request), reply->hdr.request, reply->hdr.flags,
			 reply->hdr.size, nfds);
		vhost_client_set_dead(c);
		return -EPROTO;
	}
	return (int)reply->hdr.size;
}

/* Send a request that has no reply of its own; with REPLY_ACK, ask for and
 * check the ack. */
static int vc_request(struct vhost_client *c, uint32_t request, const void *payload,
		      uint32_t size, const int *fds, int nfds)
{
	bool ack = vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_REPLY_ACK);
	struct vhost_user_msg msg;
	int rc;

	if (size > sizeof(msg.payload))
		return -EINVAL;
	vhost_msg_init(&msg, request, size);
	if (size)
		memcpy(&msg.payload, payload, size);
	if (ack)
		msg.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	rc = vc_send(c, &msg, fds, nfds);
	if (rc < 0 || !ack)
		return rc;
	rc = vc_recv_reply(c, request, &msg, sizeof(uint64_t), false);
	if (rc < 0)
		return rc;
	if (msg.payload.u64) {
		c->last_ack = msg.payload.u64;
		LOG_DEBUG("vhost-client: %s refused (ack %llu)", vhost_msg_name(request),
			  (unsigned long long)msg.payload.u64);
		return -EIO;
	}
	return 0;
}

/* Send a request with a reply of its own of exactly reply_size bytes (or
 * empty when allow_empty); the reply payload goes to reply. Returns its size
 * or -errno. */
static int vc_call(struct vhost_client *c, uint32_t request, const void *payload,
		   uint32_t size, void *reply, uint32_t reply_size, bool allow_empty)
{
	struct vhost_user_msg msg;
	int rc;

	if (size > sizeof(msg.payload) || reply_size > sizeof(msg.payload))
		return -EINVAL;
	vhost_msg_init(&msg, request, size);
	if (size)
		memcpy(&msg.payload, payload, size);
	rc = vc_send(c, &msg, NULL, 0);
	if (rc < 0)
		return rc;
	rc = vc_recv_reply(c, request, &msg, reply_size, allow_empty);
	if (rc > 0)
		memcpy(reply, &msg.payload, (size_t)rc);
	return rc;
}

static int vc_get_u64(struct vhost_client *c, uint32_t request, uint64_t *v)
{
	uint64_t r = 0;
	int rc = vc_call(c, request, NULL, 0, &r, sizeof(r), false);

	if (rc < 0)
		return rc;
	*v = r;
	return 0;
}

static int vc_set_u64(struct vhost_client *c, uint32_t request, uint64_t v)
{
	return vc_request(c, request, &v, sizeof(v), NULL, 0);
}

/* ---- requests ------------------------------------------------------------ */

int vhost_client_get_features(struct vhost_client *c, uint64_t *features)
{
	int rc = vc_get_u64(c, VHOST_USER_GET_FEATURES, features);

	if (rc == 0)
		c->features = *features;
	return rc;
}

int vhost_client_set_features(struct vhost_client *c, uint64_t features)
{
	return vc_set_u64(c, VHOST_USER_SET_FEATURES, features);
}

int vhost_client_get_protocol_features(struct vhost_client *c, uint64_t *pf)
{
	if (c->dead)
		return -ENOTCONN;
	if (!(c->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return -EOPNOTSUPP;
	return vc_get_u64(c, VHOST_USER_GET_PROTOCOL_FEATURES, pf);
}

int vhost_client_set_protocol_features(struct vhost_client *c, uint64_t pf)
{
	int rc;

	if (c->dead)
		return -ENOTCONN;
	if (!(c->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return -EOPNOTSUPP;
	/* No ack requested for this one: REPLY_ACK is being negotiated now. */
	c->protocol_features = 0;
	rc = vc_set_u64(c, VHOST_USER_SET_PROTOCOL_FEATURES, pf);
	if (rc == 0)
		c->protocol_features = pf;
	return rc;
}

int vhost_client_set_owner(struct vhost_client *c)
{
	return vc_request(c, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
}

int vhost_client_reset_owner(struct vhost_client *c)
{
	return vc_request(c, VHOST_USER_RESET_OWNER, NULL, 0, NULL, 0);
}

int vhost_client_get_queue_num(struct vhost_client *c, uint64_t *num)
{
	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_MQ))
		return -EOPNOTSUPP;
	return vc_get_u64(c, VHOST_USER_GET_QUEUE_NUM, num);
}

int vhost_client_get_max_mem_slots(struct vhost_client *c, uint64_t *slots)
{
	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return -EOPNOTSUPP;
	return vc_get_u64(c, VHOST_USER_GET_MAX_MEM_SLOTS, slots);
}

static bool vc_region_ok(const struct vhost_user_mem_region *r)
{
	return r->memory_size != 0 &&
	       r->guest_phys_addr + r->memory_size > r->guest_phys_addr &&
	       r->userspace_addr + r->memory_size > r->userspace_addr &&
	       r->mmap_offset + r->memory_size > r->mmap_offset;
}

int vhost_client_add_mem_reg(struct vhost_client *c,
			     const struct vhost_user_mem_region *r, int fd)
{
	struct vhost_user_single_mem_region m;

	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return -EOPNOTSUPP;
	if (fd < 0 || !vc_region_ok(r))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.region = *r;
	return vc_request(c, VHOST_USER_ADD_MEM_REG, &m, sizeof(m), &fd, 1);
}

int vhost_client_rem_mem_reg(struct vhost_client *c,
			     const struct vhost_user_mem_region *r)
{
	struct vhost_user_single_mem_region m;

	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return -EOPNOTSUPP;
	if (!vc_region_ok(r))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.region = *r;
	return vc_request(c, VHOST_USER_REM_MEM_REG, &m, sizeof(m), NULL, 0);
}

int vhost_client_set_mem_table(struct vhost_client *c,
			       const struct vhost_user_mem_region *regions,
			       const int *fds, unsigned n)
{
	struct vhost_user_memory m;

	if (c->dead)
		return -ENOTCONN;
	if (n > VHOST_USER_MEMORY_MAX_NREGIONS || (n && (!regions || !fds)))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.nregions = n;
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] < 0 || !vc_region_ok(&regions[i]))
			return -EINVAL;
		m.regions[i] = regions[i];
	}
	return vc_request(c, VHOST_USER_SET_MEM_TABLE, &m,
			  (uint32_t)(offsetof(struct vhost_user_memory, regions) +
				     n * sizeof(m.regions[0])),
			  fds, n);
}

int vhost_client_set_vring_num(struct vhost_client *c, unsigned idx, unsigned num)
{
	struct vhost_user_vring_state s = { .index = idx, .num = num };

	return vc_request(c, VHOST_USER_SET_VRING_NUM, &s, sizeof(s), NULL, 0);
}

int vhost_client_set_vring_addr(struct vhost_client *c,
				const struct vhost_user_vring_addr *addr)
{
	return vc_request(c, VHOST_USER_SET_VRING_ADDR, addr, sizeof(*addr), NULL, 0);
}

int vhost_client_set_vring_base(struct vhost_client *c, unsigned idx, unsigned base)
{
	struct vhost_user_vring_state s = { .index = idx, .num = base };

	return vc_request(c, VHOST_USER_SET_VRING_BASE, &s, sizeof(s), NULL, 0);
}

int vhost_client_get_vring_base(struct vhost_client *c, unsigned idx, uint32_t *base)
{
	struct vhost_user_vring_state s = { .index = idx, .num = 0 };
	struct vhost_user_vring_state r = { 0 };
	int rc;

	rc = vc_call(c, VHOST_USER_GET_VRING_BASE, &s, sizeof(s), &r, sizeof(r), false);
	if (rc < 0)
		return rc;
	if (r.index != idx || r.num > 0xffff) {
		LOG_PEER("vhost-client: GET_VRING_BASE(%u) answered index %u num %u",
			 idx, r.index, r.num);
		vhost_client_set_dead(c);
		return -EPROTO;
	}
	*base = r.num;
	return 0;
}

static int vc_vring_fd(struct vhost_client *c, uint32_t request, unsigned idx, int fd)
{
	bool wide = vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX);
	uint64_t u;
	int rc;

	if (c->dead)
		return -ENOTCONN;
	rc = vhost_user_vring_fd_payload(idx, wide, fd < 0, &u);
	if (rc < 0)
		return rc;
	return vc_request(c, request, &u, sizeof(u), fd < 0 ? NULL : &fd, fd < 0 ? 0 : 1);
}

int vhost_client_set_vring_kick(struct vhost_client *c, unsigned idx, int fd)
{
	return vc_vring_fd(c, VHOST_USER_SET_VRING_KICK, idx, fd);
}

int vhost_client_set_vring_call(struct vhost_client *c, unsigned idx, int fd)
{
	return vc_vring_fd(c, VHOST_USER_SET_VRING_CALL, idx, fd);
}

int vhost_client_set_vring_err(struct vhost_client *c, unsigned idx, int fd)
{
	return vc_vring_fd(c, VHOST_USER_SET_VRING_ERR, idx, fd);
}

int vhost_client_set_vring_enable(struct vhost_client *c, unsigned idx, bool enable)
{
	struct vhost_user_vring_state s = { .index = idx, .num = enable ? 1 : 0 };

	return vc_request(c, VHOST_USER_SET_VRING_ENABLE, &s, sizeof(s), NULL, 0);
}

int vhost_client_get_config(struct vhost_client *c, uint32_t offset, void *buf,
			    uint32_t len)
{
	struct vhost_user_config req, rep;
	int rc;

	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_CONFIG))
		return -EOPNOTSUPP;
	if (len == 0 || len > VHOST_USER_MAX_CONFIG_SIZE ||
	    offset > VHOST_USER_MAX_CONFIG_SIZE - len)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.offset = offset;
	req.size = len;
	rc = vc_call(c, VHOST_USER_GET_CONFIG, &req, VHOST_USER_CONFIG_HDR_SIZE + len,
		     &rep, VHOST_USER_CONFIG_HDR_SIZE + len, true);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return -EIO; /* the back-end refused (empty reply) */
	if (rep.offset != offset || rep.size != len) {
		LOG_PEER("vhost-client: GET_CONFIG answered offset %u size %u, asked %u/%u",
			 rep.offset, rep.size, offset, len);
		vhost_client_set_dead(c);
		return -EPROTO;
	}
	memcpy(buf, rep.region, len);
	return 0;
}

int vhost_client_set_config(struct vhost_client *c, uint32_t offset, const void *buf,
			    uint32_t len)
{
	struct vhost_user_config req;

	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_CONFIG))
		return -EOPNOTSUPP;
	if (len == 0 || len > VHOST_USER_MAX_CONFIG_SIZE ||
	    offset > VHOST_USER_MAX_CONFIG_SIZE - len)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.offset = offset;
	req.size = len;
	memcpy(req.region, buf, len);
	return vc_request(c, VHOST_USER_SET_CONFIG, &req, VHOST_USER_CONFIG_HDR_SIZE + len,
			  NULL, 0);
}

int vhost_client_set_status(struct vhost_client *c, uint8_t status)
{
	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_STATUS))
		return -EOPNOTSUPP;
	return vc_set_u64(c, VHOST_USER_SET_STATUS, status);
}

int vhost_client_get_status(struct vhost_client *c, uint8_t *status)
{
	uint64_t v;
	int rc;

	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_STATUS))
		return -EOPNOTSUPP;
	rc = vc_get_u64(c, VHOST_USER_GET_STATUS, &v);
	if (rc < 0)
		return rc;
	if (v > 0xff) {
		LOG_PEER("vhost-client: GET_STATUS answered 0x%llx", (unsigned long long)v);
		vhost_client_set_dead(c);
		return -EPROTO;
	}
	*status = (uint8_t)v;
	return 0;
}

int vhost_client_reset_device(struct vhost_client *c)
{
	if (c->dead)
		return -ENOTCONN;
	if (!vhost_client_has_pf(c, VHOST_USER_PROTOCOL_F_RESET_DEVICE))
		return -EOPNOTSUPP;
	return vc_request(c, VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0);
}
