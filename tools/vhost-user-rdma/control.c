/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket (vrdmactl(8), protocol in src/mgmt/ctl.h): one request
 * per connection, answered from the event loop. Untrusted input: bounded
 * request size, a deadline per connection, a bounded number of connections;
 * only root, the daemon's own user or (through the socket's group mode) the
 * configured group get in.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "backend/netdev.h"
#include "backend/netdev_show.h"
#include "backend/rres_dev.h"
#include "backend/virtio_rdma_dev.h"
#include "mgmt/ctl.h"
#include "mgmt/kv.h"
#include "port/port.h"
#include "port/trunk.h"
#include "vhost/vhost_server.h"
#include "daemon.h"

#define CTL_MAX_CONNS 16
#define CTL_DEADLINE_NS (10ull * 1000000000ull)

struct ctl_conn {
	struct ctl_server *srv;
	int fd;
	bool admin;               /* root or the daemon's user: may change things */
	char in[CTL_LINE_MAX + 2];
	size_t in_len;
	char *out;                /* answer, sent from out_off */
	size_t out_len, out_off;
	struct loop_timer deadline;
	struct ctl_conn *next;
};

struct ctl_server {
	struct daemon *d;
	int fd;
	char path[108];
	struct ctl_conn *conns;
	unsigned nconns;
	uint64_t requests, refused, bad_requests;
};

static void conn_close(struct ctl_conn *c)
{
	struct ctl_server *s = c->srv;

	for (struct ctl_conn **pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	s->nconns--;
	loop_timer_cancel(s->d->loop, &c->deadline);
	loop_del_fd(s->d->loop, c->fd);
	close(c->fd);
	free(c->out);
	free(c);
}

static void conn_timeout(struct loop_timer *t, void *arg)
{
	(void)t;
	conn_close(arg);
}

static bool dev_match(const struct ctl_req *r, struct netdev_port *nd)
{
	return !r->dev[0] || !strcmp(netdev_port_switch_port(nd)->name, r->dev);
}

static void show_list(struct daemon *d, const struct ctl_req *r, struct kvw *k, const char *kind,
		      void (*fn)(const struct netdev_port *, struct kvw *))
{
	kvw_list_begin(k, kind);
	for (unsigned i = 0; i < d->ndevs; i++)
		if (dev_match(r, d->devs[i]))
			fn(d->devs[i], k);
	kvw_list_end(k);
}

/* The virtio-rdma devices (model=virtio-rdma): one connection each, its
 * objects counted as for the other devices. */
static void show_rdevs(struct daemon *d, const struct ctl_req *r, struct kvw *k)
{
	char buf[64];

	for (unsigned i = 0; i < d->nrdevs; i++) {
		struct virtio_rdma_dev *v = d->rdevs[i];
		const struct netdev_cfg *c = virtio_rdma_dev_cfg(v);
		const struct rres_dev *rd = virtio_rdma_dev_roce(v);
		struct rres_counts n = { 0 };

		if (r->dev[0] && strcmp(r->dev, c->name))
			continue;
		rres_dev_counts(rd, &n);
		kvw_obj_begin(k);
		kvw_str(k, "dev", c->name);
		kvw_str(k, "model", "virtio-rdma");
		kvw_str(k, "socket", c->socket);
		snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", c->mac[0], c->mac[1],
			 c->mac[2], c->mac[3], c->mac[4], c->mac[5]);
		kvw_str(k, "mac", buf);
		if (c->has_ip4 && inet_ntop(AF_INET, &c->ip4, buf, sizeof(buf)))
			kvw_str(k, "ip", buf);
		kvw_u64(k, "contexts", vhost_server_connected(virtio_rdma_dev_server(v)) ? 1 : 0);
		kvw_u64(k, "max_contexts", 1);
		kvw_u64(k, "pd", n.pd);
		kvw_u64(k, "mr", n.mr);
		kvw_u64(k, "cq", n.cq);
		kvw_u64(k, "qp", n.qp);
		kvw_u64(k, "max_qp", rd->attr.max_qp);
		kvw_u64(k, "max_cq", rd->attr.max_cq);
		kvw_obj_end(k);
	}
}

static void show_switch(struct daemon *d, struct kvw *k)
{
	kvw_list_begin(k, "switch");
	for (unsigned i = 0; i < d->nthreads; i++) {
		const struct sw_stats *s = sw_get_stats(dthread_sw(d, i));

		kvw_obj_begin(k);
		if (d->nthreads > 1)
			kvw_u64(k, "thread", i);
		kvw_u64(k, "forwarded", s->forwarded);
		kvw_u64(k, "flooded", s->flooded);
		kvw_u64(k, "dropped_no_port", s->dropped_no_port);
		kvw_u64(k, "fault_dropped", s->fault_dropped);
		kvw_u64(k, "held_busy", s->held_busy);
		kvw_u64(k, "dropped_horizon", s->dropped_horizon);
		kvw_obj_end(k);
	}
	kvw_list_end(k);
	kvw_list_begin(k, "trunk");
	for (unsigned i = 0; d->trunks && i < d->nthreads * d->nthreads; i++) {
		const struct trunk_stats *t;

		if (!d->trunks[i])
			continue;
		t = trunk_get_stats(d->trunks[i]);
		kvw_obj_begin(k);
		kvw_str(k, "trunk", trunk_port(d->trunks[i])->name);
		kvw_u64(k, "tx_frames", t->tx_frames);
		kvw_u64(k, "tx_overflow", t->tx_overflow);
		kvw_u64(k, "tx_dropped", t->tx_dropped);
		kvw_u64(k, "tx_busy", t->tx_busy);
		kvw_u64(k, "tx_refused", t->tx_refused);
		kvw_u64(k, "rx_frames", t->rx_frames);
		kvw_u64(k, "rx_held", t->rx_held);
		kvw_u64(k, "rx_dropped", t->rx_dropped);
		kvw_u64(k, "rx_busy_set", t->rx_busy_set);
		kvw_obj_end(k);
	}
	kvw_list_end(k);
	kvw_list_begin(k, "uplink");
	for (unsigned i = 0; i < d->nuplinks; i++) {
		const struct port *p = d->uplinks[i];

		kvw_obj_begin(k);
		kvw_str(k, "uplink", p->name);
		kvw_u64(k, "rx_frames", p->stats.rx_frames);
		kvw_u64(k, "tx_frames", p->stats.tx_frames);
		kvw_u64(k, "tx_dropped", p->stats.tx_dropped);
		kvw_obj_end(k);
	}
	kvw_list_end(k);
	kvw_list_begin(k, "thread");
	for (unsigned i = 0; i < d->nthreads; i++) {
		struct dthread_stats ts;

		memset(&ts, 0, sizeof(ts));
		dthread_add_stats(d, i, &ts);
		kvw_obj_begin(k);
		kvw_u64(k, "thread", i);
		kvw_u64(k, "copies_streamed", ts.cs.streamed);
		kvw_u64(k, "copies_streamed_bytes", ts.cs.streamed_bytes);
		kvw_u64(k, "runs_split", ts.rs.runs_split);
		kvw_u64(k, "runs_split_failed", ts.rs.split_failed);
		kvw_u64(k, "payload_refs_live", ts.ps.live);
		kvw_obj_end(k);
	}
	kvw_list_end(k);
}

/* Run one request; the answer goes to f. Returns false on failure (the
 * answer then is "error: ..."). */
static bool execute(struct ctl_server *s, const struct ctl_req *r, bool admin, FILE *f)
{
	struct daemon *d = s->d;
	struct netdev_port *nd = NULL;
	struct kvw k;
	char err[512];
	int rc;

	/* Changes (and files written as the daemon) only for root or the
	 * daemon's own user; the socket group may look. */
	if (!admin && r->cmd != CTL_DEV_SHOW && r->cmd != CTL_RES_SHOW && r->cmd != CTL_STAT_SHOW) {
		fprintf(f, "error: permission denied (read-only access)\n");
		return false;
	}
	if (r->dev[0] && r->cmd != CTL_DEV_ADD) {
		nd = daemon_dev_find(d, r->dev);
		if (!nd && daemon_rdev_find(d, r->dev)) {
			/* a virtio-rdma device: listed and removed only */
			if (r->cmd != CTL_DEV_SHOW && r->cmd != CTL_DEV_DEL) {
				fprintf(f, "error: %s is a virtio-rdma device: dev show and dev "
					"del only\n", r->dev);
				return false;
			}
		} else if (!nd) {
			fprintf(f, "error: no device %s\n", r->dev);
			return false;
		}
	}
	switch (r->cmd) {
	case CTL_DEV_SHOW:
	case CTL_RES_SHOW:
	case CTL_STAT_SHOW:
		kvw_begin(&k, f, r->json);
		if (r->cmd == CTL_DEV_SHOW) {
			kvw_list_begin(&k, "dev");
			for (unsigned i = 0; i < d->ndevs; i++)
				if (dev_match(r, d->devs[i]))
					netdev_show_dev(d->devs[i], &k);
			show_rdevs(d, r, &k);
			kvw_list_end(&k);
			show_list(d, r, &k, "ctx", netdev_show_ctxs);
		} else if (r->cmd == CTL_RES_SHOW) {
			if (r->res & CTL_RES_PD)
				show_list(d, r, &k, "pd", netdev_show_pds);
			if (r->res & CTL_RES_CQ)
				show_list(d, r, &k, "cq", netdev_show_cqs);
			if (r->res & CTL_RES_MR)
				show_list(d, r, &k, "mr", netdev_show_mrs);
			if (r->res & CTL_RES_SRQ)
				show_list(d, r, &k, "srq", netdev_show_srqs);
			if (r->res & CTL_RES_QP)
				show_list(d, r, &k, "qp", netdev_show_qps);
		} else {
			show_list(d, r, &k, "dev", netdev_show_stats);
			show_list(d, r, &k, "qp", netdev_show_qp_stats);
			if (!r->dev[0])
				show_switch(d, &k);
		}
		kvw_end(&k);
		return true;
	case CTL_DEV_ADD: {
		char spec[2 * MCONF_SPEC_MAX];
		int w;

		if (strstr(r->arg, "socket=") == r->arg || strstr(r->arg, ",socket="))
			w = snprintf(spec, sizeof(spec), "%s", r->arg);
		else
			w = snprintf(spec, sizeof(spec), "socket=%s/%s.sock%s%s", d->socket_dir,
				     r->dev, r->arg[0] ? "," : "", r->arg);
		if (w < 0 || (size_t)w >= sizeof(spec)) {
			fprintf(f, "error: device options too long\n");
			return false;
		}
		rc = daemon_dev_add(d, r->dev, spec, false, err, sizeof(err));
		if (rc < 0) {
			fprintf(f, "error: %s\n", err);
			return false;
		}
		nd = daemon_dev_find(d, r->dev);
		fprintf(f, "device %s added: %s\n", r->dev,
			nd ? netdev_port_cfg(nd)->socket
			   : virtio_rdma_dev_socket(daemon_rdev_find(d, r->dev)));
		return true;
	}
	case CTL_DEV_DEL:
		daemon_dev_del(d, r->dev);
		fprintf(f, "device %s removed\n", r->dev);
		return true;
	case CTL_CAPTURE_START:
	case CTL_CAPTURE_STOP:
		rc = sw_set_port_pcap(netdev_port_switch_port(nd)->sw, netdev_port_switch_port(nd),
				      r->cmd == CTL_CAPTURE_START ? r->arg : NULL);
		if (rc < 0) {
			fprintf(f, "error: capture on %s: %s\n", r->dev, strerror(-rc));
			return false;
		}
		if (r->cmd == CTL_CAPTURE_START)
			fprintf(f, "capturing %s to %s\n", r->dev, r->arg);
		else
			fprintf(f, "capture on %s stopped\n", r->dev);
		return true;
	case CTL_RELOAD:
		if (daemon_reload(d, err, sizeof(err)) < 0) {
			fprintf(f, "error: %s\n", err);
			return false;
		}
		fprintf(f, "reloaded: %u device(s)\n", d->ndevs);
		return true;
	}
	fprintf(f, "error: unknown command\n");
	return false;
}

static void conn_answer(struct ctl_conn *c)
{
	struct ctl_server *s = c->srv;
	struct ctl_req r;
	char err[256];
	FILE *f = open_memstream(&c->out, &c->out_len);

	if (!f) {
		conn_close(c);
		return;
	}
	s->requests++;
	if (ctl_parse(c->in, c->in_len, &r, err, sizeof(err)) < 0) {
		s->bad_requests++;
		LOG_PEER("control: bad request: %s", err);
		fprintf(f, "error: %s\n", err);
	} else {
		/* the other loop threads are parked meanwhile (threads.c) */
		dthread_pause_all(s->d);
		execute(s, &r, c->admin, f);
		dthread_resume_all(s->d);
	}
	if (fclose(f) != 0) {
		conn_close(c);
		return;
	}
	shutdown(c->fd, SHUT_RD);
	loop_mod_fd(s->d->loop, c->fd, EPOLLOUT);
}

static void conn_io(void *arg, uint32_t events)
{
	struct ctl_conn *c = arg;
	ssize_t n;

	if (!c->out) {
		n = read(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0 && !c->in_len) {
			conn_close(c);
			return;
		}
		if (n > 0)
			c->in_len += (size_t)n;
		if (n > 0 && !memchr(c->in, '\n', c->in_len) && c->in_len < sizeof(c->in) - 1)
			return;
		/* A full line, EOF, or too long (the parser says so). */
		{
			char *nl = memchr(c->in, '\n', c->in_len);

			if (nl)
				c->in_len = (size_t)(nl - c->in);
		}
		conn_answer(c);
		return;
	}
	if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
		while (c->out_off < c->out_len) {
			n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
			if (n < 0 && errno == EAGAIN)
				return;
			if (n <= 0)
				break;
			c->out_off += (size_t)n;
		}
		conn_close(c);
	}
}

static bool peer_allowed(const struct ctl_server *s, int fd, bool *admin)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	*admin = cr.uid == 0 || cr.uid == geteuid();
	/* With a socket-group the socket file's group mode already decided. */
	return *admin || s->d->socket_gid != (gid_t)-1;
}

static void on_accept(void *arg, uint32_t events)
{
	struct ctl_server *s = arg;
	struct ctl_conn *c;
	bool admin = false;
	int fd;

	(void)events;
	while ((fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (s->nconns >= CTL_MAX_CONNS || !peer_allowed(s, fd, &admin)) {
			static const char msg[] = "error: refused\n";

			s->refused++;
			if (send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				LOG_DEBUG("control: %s", strerror(errno));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = s;
		c->fd = fd;
		c->admin = admin;
		loop_timer_init(&c->deadline, conn_timeout, c);
		if (loop_add_fd(s->d->loop, fd, EPOLLIN, conn_io, c) < 0) {
			close(fd);
			free(c);
			continue;
		}
		loop_timer_arm(s->d->loop, &c->deadline, loop_now_ns() + CTL_DEADLINE_NS);
		c->next = s->conns;
		s->conns = c;
		s->nconns++;
	}
}

struct ctl_server *ctl_server_new(struct daemon *d, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctl_server *s;
	struct stat st;
	mode_t old;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		LOG_ERR("control socket %s: path too long", path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->d = d;
	strcpy(s->path, path);
	strcpy(sa.sun_path, path);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		goto fail;
	/* A stale socket of a previous run is replaced; anything else is not. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	old = umask(0177);
	rc = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(s->fd, CTL_MAX_CONNS) < 0)
		goto fail;
	/* Default 0600; socket-mode/-group (the group needs rw to connect). */
	if (d->socket_gid != (gid_t)-1 && (chown(path, (uid_t)-1, d->socket_gid) < 0 ||
					    chmod(path, 0660) < 0))
		goto fail_unlink;
	if (loop_add_fd(d->loop, s->fd, EPOLLIN, on_accept, s) < 0)
		goto fail_unlink;
	LOG_INFO("control socket %s", path);
	return s;
fail_unlink:
	rc = errno;
	unlink(path);
	errno = rc;
fail:
	rc = errno;
	LOG_ERR("control socket %s: %s", path, strerror(rc));
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	errno = rc;
	return NULL;
}

void ctl_server_free(struct ctl_server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_close(s->conns);
	loop_del_fd(s->d->loop, s->fd);
	close(s->fd);
	unlink(s->path);
	free(s);
}
