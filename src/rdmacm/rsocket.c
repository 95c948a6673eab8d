// SPDX-License-Identifier: BSD-3-Clause
/*
 * The rsocket API (<rdma/rsocket.h>): SOCK_STREAM sockets over our rdma_cm
 * with rdma-core's wire protocol (rsocket_proto.h), so that rstream,
 * riostream and librspreload run unmodified and talk to Debian's rsockets.
 * This file: the socket table, connection setup and teardown, options.
 * SOCK_DGRAM is refused (EOPNOTSUPP). docs/spec.md, "rsockets".
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <infiniband/ib.h>

#include "rdmacm/rsocket_priv.h"

#define RSK_CM_TIMEOUT_MS 2000

static pthread_mutex_t rsk_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsk **rsk_table;
static int rsk_table_len;

/* Default sizes, as rdma-core's (its configuration files are not read). */
#define RSK_DEF_MEM    (1u << 17)
#define RSK_DEF_QP     384
#define RSK_DEF_INLINE 64

struct rsk *rsk_get(int fd)
{
	struct rsk *rs = NULL;

	pthread_mutex_lock(&rsk_table_lock);
	if (fd >= 0 && fd < rsk_table_len)
		rs = rsk_table[fd];
	if (rs)
		pthread_mutex_lock(&rs->lock);
	pthread_mutex_unlock(&rsk_table_lock);
	if (!rs)
		errno = EBADF;
	return rs;
}

void rsk_put(struct rsk *rs)
{
	pthread_mutex_unlock(&rs->lock);
}

static int table_insert(struct rsk *rs)
{
	pthread_mutex_lock(&rsk_table_lock);
	if (rs->fd >= rsk_table_len) {
		int n = rs->fd + 64;
		struct rsk **t = realloc(rsk_table, sizeof(*t) * (size_t)n);

		if (!t) {
			pthread_mutex_unlock(&rsk_table_lock);
			return errno = ENOMEM, -1;
		}
		memset(t + rsk_table_len, 0, sizeof(*t) * (size_t)(n - rsk_table_len));
		rsk_table = t;
		rsk_table_len = n;
	}
	rsk_table[rs->fd] = rs;
	pthread_mutex_unlock(&rsk_table_lock);
	return 0;
}

static void table_remove(struct rsk *rs)
{
	pthread_mutex_lock(&rsk_table_lock);
	if (rs->fd >= 0 && rs->fd < rsk_table_len && rsk_table[rs->fd] == rs)
		rsk_table[rs->fd] = NULL;
	pthread_mutex_unlock(&rsk_table_lock);
}

/* A socket with its own CM channel (non-blocking: waits go through poll). */
static struct rsk *rsk_alloc(const struct rsk *parent)
{
	struct rsk *rs = calloc(1, sizeof(*rs));
	int fl;

	if (!rs)
		return errno = ENOMEM, NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->fd = -1;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->iomap_size = parent->iomap_size;
		rs->fs_flags = parent->fs_flags;
		rs->fd_flags = parent->fd_flags;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
	} else {
		rs->sbuf_size = rs->rbuf_size = RSK_DEF_MEM;
		rs->sq_size = rs->rq_size = RSK_DEF_QP;
		rs->sq_inline = RSK_DEF_INLINE;
	}
	rs->ch = rdma_create_event_channel();
	if (!rs->ch) {
		free(rs);
		return NULL;
	}
	fl = fcntl(rs->ch->fd, F_GETFL);
	fcntl(rs->ch->fd, F_SETFL, fl | O_NONBLOCK);
	rs->fd = rs->ch->fd;
	return rs;
}

static void rsk_free(struct rsk *rs)
{
	rsk_ep_destroy(rs);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

static bool nonblocking(const struct rsk *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

RSK_EXPORT int rsocket(int domain, int type, int protocol)
{
	int stype = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rsk *rs;

	if (domain != AF_INET && domain != AF_INET6 && domain != AF_IB)
		return errno = EAFNOSUPPORT, -1;
	if (stype == SOCK_DGRAM)
		return errno = EOPNOTSUPP, -1; /* datagram rsockets: not provided */
	if (stype != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return errno = EPROTONOSUPPORT, -1;
	rs = rsk_alloc(NULL);
	if (!rs)
		return -1;
	rs->fs_flags = type & SOCK_NONBLOCK ? O_NONBLOCK : 0;
	rs->fd_flags = type & SOCK_CLOEXEC ? FD_CLOEXEC : 0;
	if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP) || table_insert(rs)) {
		int e = errno;

		rsk_free(rs);
		return errno = e, -1;
	}
	return rs->fd;
}

RSK_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return -1;
	(void)addrlen;
	ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
	if (!ret)
		rs->state |= RSK_BOUND;
	rsk_put(rs);
	return ret;
}

RSK_EXPORT int rlisten(int socket, int backlog)
{
	struct rsk *rs = rsk_get(socket);
	int ret = 0;

	if (!rs)
		return -1;
	if (!(rs->state & RSK_LISTENING)) {
		ret = rdma_listen(rs->id, backlog);
		if (!ret)
			rs->state = RSK_LISTENING;
	}
	rsk_put(rs);
	return ret;
}

/* Builds and accepts the socket of a CONNECT_REQUEST (the listener locked;
 * ev acked here): the new socket, or NULL (the request was rejected). */
static struct rsk *accept_request(struct rsk *ls, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct rs_wire_conn creq, cresp;
	struct rsk *rs = rsk_alloc(ls);
	struct rdma_cm_id *id = ev->id;
	size_t len = ev->param.conn.private_data_len;
	bool ok = len >= sizeof(creq) && ev->param.conn.private_data;

	if (ok)
		memcpy(&creq, ev->param.conn.private_data, sizeof(creq));
	param = ev->param.conn;
	rdma_ack_cm_event(ev);
	if (!rs || !ok) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		if (rs)
			rsk_free(rs);
		return NULL;
	}
	if (rdma_migrate_id(id, rs->ch))
		goto err;
	rs->id = id;
	id->context = rs;
	if (rsk_ep_create(rs) || rsk_conn_save(rs, &creq, sizeof(creq)))
		goto err;
	rsk_conn_format(rs, &cresp);
	param.private_data = &cresp;
	param.private_data_len = sizeof(cresp);
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		goto err;
	rs->state = RSK_CONNECTED | RSK_READABLE | RSK_WRITABLE;
	if (table_insert(rs))
		goto err;
	return rs;
err:
	rdma_reject(id, NULL, 0);
	if (!rs->id)
		rdma_destroy_id(id);
	rsk_free(rs);
	return NULL;
}

static void copy_addr(struct sockaddr *dst, socklen_t *dlen, const struct sockaddr *src)
{
	socklen_t n = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		      src->sa_family == AF_IB ? sizeof(struct sockaddr_ib) :
		      sizeof(struct sockaddr_in);

	if (!dst || !dlen)
		return;
	memcpy(dst, src, *dlen < n ? *dlen : n);
	*dlen = n;
}

RSK_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *ls = rsk_get(socket), *rs = NULL;
	struct rdma_cm_event *ev;
	int fd = -1;

	if (!ls)
		return -1;
	if (!(ls->state & RSK_LISTENING)) {
		rsk_put(ls);
		return errno = EINVAL, -1;
	}
	for (;;) {
		if (rdma_get_cm_event(ls->ch, &ev)) {
			struct pollfd p = { .fd = ls->ch->fd, .events = POLLIN };

			if (errno != EAGAIN || (ls->fs_flags & O_NONBLOCK))
				break;
			rsk_put(ls);
			poll(&p, 1, -1);
			pthread_mutex_lock(&ls->lock);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		rs = accept_request(ls, ev);
		if (rs) {
			fd = rs->fd;
			copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
			break;
		}
	}
	rsk_put(ls);
	return fd;
}

/* Handles one CM event of a connecting socket. */
static void connect_event(struct rsk *rs, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct rs_wire_conn c;
	int err = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(rs->id, RSK_CM_TIMEOUT_MS))
			err = errno;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rsk_ep_create(rs)) {
			err = errno;
			break;
		}
		rsk_conn_format(rs, &c);
		memset(&param, 0, sizeof(param));
		param.private_data = &c;
		param.private_data_len = sizeof(c);
		param.flow_control = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		param.responder_resources = 1;
		param.initiator_depth = 1;
		if (rdma_connect(rs->id, &param))
			err = errno;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rsk_conn_save(rs, ev->param.conn.private_data, ev->param.conn.private_data_len))
			err = errno;
		else
			rs->state = RSK_CONNECTED | RSK_READABLE | RSK_WRITABLE;
		break;
	case RDMA_CM_EVENT_REJECTED:
		err = ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		err = EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		err = ev->status < 0 ? -ev->status : ETIMEDOUT;
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
	if (err) {
		rs->state = RSK_CONNECT_ERR;
		rs->err = err;
	}
}

int rsk_connect_step(struct rsk *rs, bool nonblock)
{
	struct rdma_cm_event *ev;

	while (rs->state & RSK_OPENING) {
		if (rdma_get_cm_event(rs->ch, &ev)) {
			struct pollfd p = { .fd = rs->ch->fd, .events = POLLIN };

			if (errno != EAGAIN)
				return -1;
			if (nonblock)
				return errno = EINPROGRESS, -1;
			pthread_mutex_unlock(&rs->lock);
			poll(&p, 1, -1);
			pthread_mutex_lock(&rs->lock);
			continue;
		}
		connect_event(rs, ev);
	}
	if (rs->state & RSK_CONNECT_ERR)
		return errno = rs->err ? rs->err : ECONNREFUSED, -1;
	return rs->state & (RSK_CONNECTED | RSK_DISCONNECTED) ? 0 : (errno = ENOTCONN, -1);
}

void rsk_cm_drain(struct rsk *rs)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(rs->ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			if (rs->state & RSK_CONNECTED)
				rs->state = RSK_DISCONNECTED;
		}
		rdma_ack_cm_event(ev);
	}
}

RSK_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return -1;
	(void)addrlen;
	if (rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_LISTENING)) {
		rsk_put(rs);
		return errno = EISCONN, -1;
	}
	if (!(rs->state & RSK_OPENING)) {
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, RSK_CM_TIMEOUT_MS)) {
			rs->state = RSK_CONNECT_ERR;
			rs->err = errno;
			rsk_put(rs);
			return -1;
		}
		rs->state = RSK_OPENING;
	}
	ret = rsk_connect_step(rs, rs->fs_flags & O_NONBLOCK);
	rsk_put(rs);
	return ret;
}

/* A socket still connecting makes progress first (EAGAIN if it cannot). */
static int ready_for_io(struct rsk *rs, bool nonblock)
{
	if (!(rs->state & RSK_OPENING))
		return rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR) ? 0 :
		       (errno = ENOTCONN, -1);
	if (rsk_connect_step(rs, nonblock)) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		return -1;
	}
	return 0;
}

static void shutdown_locked(struct rsk *rs, int how)
{
	uint32_t ctrl;

	if (!(rs->state & RSK_CONNECTED))
		return;
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs->state &= ~(RSK_READABLE | RSK_WRITABLE);
	} else if (how == SHUT_WR) {
		rs->state &= ~RSK_WRITABLE;
		ctrl = rs->state & RSK_READABLE ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->state &= ~RSK_READABLE;
		if (rs->state & RSK_WRITABLE)
			return;
		ctrl = RS_CTRL_DISCONNECT;
	}
	/* a control slot, then every send completed */
	while ((rs->state & RSK_CONNECTED) && rs->ctrl_seqno == rs->ctrl_max_seqno) {
		rsk_cq_poll(rs);
		if ((rs->state & RSK_CONNECTED) && rs->ctrl_seqno == rs->ctrl_max_seqno)
			rsk_wait(rs, -1);
	}
	if (rs->state & RSK_CONNECTED)
		rsk_post_ctrl(rs, ctrl);
	while (!rsk_sends_done(rs)) {
		rsk_cq_poll(rs);
		if (!rsk_sends_done(rs))
			rsk_wait(rs, -1);
	}
}

RSK_EXPORT int rshutdown(int socket, int how)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		rsk_put(rs);
		return errno = EINVAL, -1;
	}
	shutdown_locked(rs, how);
	rsk_put(rs);
	return 0;
}

RSK_EXPORT int rclose(int socket)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return -1;
	table_remove(rs);
	shutdown_locked(rs, SHUT_RDWR);
	if (rs->id && rs->id->qp)
		rdma_disconnect(rs->id);
	rsk_put(rs);
	rsk_free(rs);
	return 0;
}

/* ---- data calls ---- */

static ssize_t sendv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t ret;

	if (!rs)
		return -1;
	ret = ready_for_io(rs, nonblocking(rs, flags));
	if (!ret)
		ret = rsk_sendv(rs, iov, iovcnt, nonblocking(rs, flags));
	rsk_put(rs);
	return ret;
}

static ssize_t recvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t ret;

	if (!rs)
		return -1;
	ret = ready_for_io(rs, nonblocking(rs, flags));
	if (!ret)
		ret = rsk_recvv(rs, iov, iovcnt, flags, nonblocking(rs, flags));
	rsk_put(rs);
	return ret;
}

RSK_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { (void *)buf, len };

	return sendv(socket, &v, 1, flags);
}

RSK_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)addrlen;
	if (dest_addr)
		return errno = EISCONN, -1;
	return rsend(socket, buf, len, flags);
}

RSK_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return errno = EOPNOTSUPP, -1;
	return sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

RSK_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

RSK_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return sendv(socket, iov, iovcnt, 0);
}

RSK_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { buf, len };

	return recvv(socket, &v, 1, flags);
}

RSK_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t ret = rrecv(socket, buf, len, flags);

	if (ret >= 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

RSK_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return errno = EOPNOTSUPP, -1;
	return recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

RSK_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

RSK_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return recvv(socket, iov, iovcnt, 0);
}

RSK_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsk *rs = rsk_get(socket);
	off_t ret;

	(void)flags;
	if (!rs)
		return -1;
	ret = rsk_iomap(rs, buf, len, prot, offset);
	rsk_put(rs);
	return ret;
}

RSK_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return -1;
	ret = rsk_iounmap(rs, buf, len);
	rsk_put(rs);
	return ret;
}

RSK_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t ret;

	if (!rs)
		return (size_t)-1;
	ret = ready_for_io(rs, nonblocking(rs, flags));
	if (!ret)
		ret = rsk_iowrite(rs, buf, count, offset, nonblocking(rs, flags));
	rsk_put(rs);
	return (size_t)ret;
}

/* ---- names and options ---- */

RSK_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return -1;
	copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
	rsk_put(rs);
	return 0;
}

RSK_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return -1;
	copy_addr(addr, addrlen, rdma_get_local_addr(rs->id));
	rsk_put(rs);
	return 0;
}

static uint32_t opt_u32(const void *v, socklen_t len)
{
	uint32_t x = 0;

	memcpy(&x, v, len < sizeof(x) ? len : sizeof(x));
	return x;
}

RSK_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			   socklen_t optlen)
{
	struct rsk *rs;
	uint32_t v;
	int ret = 0;

	if (!optval || !optlen)
		return errno = EINVAL, -1;
	rs = rsk_get(socket);
	if (!rs)
		return -1;
	v = opt_u32(optval, optlen);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			if (v)
				rs->so_opts |= 1u << optname;
			else
				rs->so_opts &= ~(1u << optname);
			break;
		case SO_LINGER:
			break;
		case SO_RCVBUF:
			if (!rs->rbuf)
				rs->rbuf_size = v < 4096 ? 8192 : v << 1;
			break;
		case SO_SNDBUF:
			if (!rs->sbuf)
				rs->sbuf_size = v < 2048 ? 4096 : v << 1;
			break;
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			if (v)
				rs->tcp_opts |= 1u << optname;
			else
				rs->tcp_opts &= ~(1u << optname);
			break;
		case TCP_KEEPIDLE:
			rs->keepalive = (int)v;
			break;
		case TCP_MAXSEG:
			break;
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			ret = -1, errno = ENOTSUP;
		break;
	case SOL_RDMA:
		if (rs->state & (RSK_OPENING | RSK_CONNECTED | RSK_DISCONNECTED)) {
			ret = -1;
			errno = EINVAL;
			break;
		}
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)(v > 0xfffe ? 0xfffe : v);
			break;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)(v > 0xfffe ? 0xfffe : v);
			break;
		case RDMA_INLINE:
			rs->sq_inline = v > 0xfffe ? 0xfffe : v;
			break;
		case RDMA_IOMAPSIZE:
			rs->iomap_size = (uint16_t)rs_scale_decode(rs_scale_encode(v > 32767 ?
										   32767 : v));
			break;
		case RDMA_ROUTE:
			break; /* the route comes from our rdma_cm */
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	default:
		ret = -1;
		errno = ENOTSUP;
	}
	rsk_put(rs);
	return ret;
}

RSK_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsk *rs;
	int v = 0, ret = 0;

	if (!optval || !optlen)
		return errno = EINVAL, -1;
	rs = rsk_get(socket);
	if (!rs)
		return -1;
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			v = !!(rs->so_opts & (1u << optname));
			break;
		case SO_RCVBUF:
			v = (int)(rs->rbuf_size >> 1);
			break;
		case SO_SNDBUF:
			v = (int)(rs->sbuf_size >> 1);
			break;
		case SO_ERROR:
			v = rs->err;
			rs->err = 0;
			break;
		case SO_TYPE:
			v = SOCK_STREAM;
			break;
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			v = !!(rs->tcp_opts & (1u << optname));
			break;
		case TCP_KEEPIDLE:
			v = rs->keepalive;
			break;
		case TCP_MAXSEG:
			v = 2048;
			break;
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			v = rs->sq_size;
			break;
		case RDMA_RQSIZE:
			v = rs->rq_size;
			break;
		case RDMA_INLINE:
			v = (int)rs->sq_inline;
			break;
		case RDMA_IOMAPSIZE:
			v = rs->iomap_size;
			break;
		default:
			ret = -1;
			errno = ENOTSUP;
		}
		break;
	default:
		ret = -1;
		errno = ENOTSUP;
	}
	if (!ret) {
		socklen_t n = *optlen < sizeof(v) ? *optlen : sizeof(v);

		memcpy(optval, &v, n);
		*optlen = n;
	}
	rsk_put(rs);
	return ret;
}

RSK_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsk *rs = rsk_get(socket);
	va_list ap;
	int ret = 0;

	if (!rs)
		return -1;
	va_start(ap, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fs_flags;
		break;
	case F_SETFL:
		rs->fs_flags = va_arg(ap, int);
		break;
	case F_GETFD:
		ret = rs->fd_flags;
		break;
	case F_SETFD:
		rs->fd_flags = va_arg(ap, int);
		break;
	default:
		ret = -1;
		errno = ENOTSUP;
	}
	va_end(ap);
	rsk_put(rs);
	return ret;
}
