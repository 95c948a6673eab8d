/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices of the daemon: creation and removal at run time (hot-plug, through
 * the same netdev_port_new/netdev_port_free as at start-up), the config file and its
 * reload (SIGHUP), socket ownership and mode.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "backend/netdev.h"
#include "backend/virtio_rdma_dev.h"
#include "daemon.h"

/* Device creation and removal run on the device's thread (threads.c). */
struct dev_call {
	struct daemon *d;
	unsigned thread;
	const struct netdev_cfg *cfg;
	struct netdev_port *nd;
	struct virtio_rdma_dev *rd;
	int err;
};

static void dev_new_cb(void *arg)
{
	struct dev_call *c = arg;
	struct loop *l = dthread_loop(c->d, c->thread);
	struct sw *s = dthread_sw(c->d, c->thread);

	if (c->cfg->model == NETDEV_MODEL_VIRTIO_RDMA)
		c->rd = virtio_rdma_dev_new(l, s, c->cfg);
	else
		c->nd = netdev_port_new(l, s, c->cfg);
	c->err = errno;
}

static void dev_free_cb(void *arg)
{
	struct dev_call *c = arg;

	if (c->nd)
		netdev_port_free(c->nd);
	if (c->rd)
		virtio_rdma_dev_free(c->rd);
}

static void dev_free_on(struct daemon *d, unsigned thread, struct netdev_port *nd,
			struct virtio_rdma_dev *rd)
{
	struct dev_call c = { .d = d, .nd = nd, .rd = rd };

	dthread_run(d, thread, dev_free_cb, &c);
}

int daemon_socket_perms(const struct daemon *d, const char *path)
{
	if (d->socket_gid != (gid_t)-1 && chown(path, (uid_t)-1, d->socket_gid) < 0)
		return -errno;
	if (d->socket_mode >= 0 && chmod(path, (mode_t)d->socket_mode) < 0)
		return -errno;
	return 0;
}

int daemon_set_socket_perms(struct daemon *d, int mode, const char *group, char *err,
			    size_t errlen)
{
	d->socket_mode = d->cli_socket_mode >= 0 ? d->cli_socket_mode : mode;
	d->socket_gid = d->cli_socket_gid;
	if (d->cli_socket_gid != (gid_t)-1)
		return 0;
	if (group && *group) {
		struct group *g = getgrnam(group);
		char *end;
		unsigned long v;

		if (g) {
			d->socket_gid = g->gr_gid;
		} else {
			errno = 0;
			v = strtoul(group, &end, 10);
			if (errno || *end || v >= (gid_t)-1) {
				snprintf(err, errlen, "socket-group '%s': no such group", group);
				return -ENOENT;
			}
			d->socket_gid = (gid_t)v;
		}
	}
	return 0;
}

struct netdev_port *daemon_dev_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->ndevs; i++)
		if (!strcmp(netdev_port_switch_port(d->devs[i])->name, name))
			return d->devs[i];
	return NULL;
}

struct virtio_rdma_dev *daemon_rdev_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->nrdevs; i++)
		if (!strcmp(virtio_rdma_dev_cfg(d->rdevs[i])->name, name))
			return d->rdevs[i];
	return NULL;
}

/* A model=virtio-rdma device: from --device or hot-plugged (vrdmactl dev
 * add); not from the config file (its reload compares virtio-net devices
 * only). */
static int daemon_rdev_add(struct daemon *d, const struct netdev_cfg *cfg, bool from_conf,
			   unsigned thread, char *err, size_t errlen)
{
	struct dev_call c = { .d = d, .thread = thread, .cfg = cfg };
	int rc;

	if (from_conf) {
		snprintf(err, errlen, "device %s: model=virtio-rdma is served from --device or "
			 "vrdmactl dev add, not from the config file", cfg->name);
		return -EOPNOTSUPP;
	}
	if (d->nrdevs == MAX_DEVICES) {
		snprintf(err, errlen, "at most %d devices", MAX_DEVICES);
		return -ENOSPC;
	}
	dthread_run(d, thread, dev_new_cb, &c);
	d->rdevs[d->nrdevs] = c.rd;
	d->rdev_thread[d->nrdevs] = thread;
	if (!d->rdevs[d->nrdevs]) {
		rc = -c.err;
		snprintf(err, errlen, "device %s (%s): %s", cfg->name, cfg->socket, strerror(c.err));
		return rc ? rc : -EIO;
	}
	rc = daemon_socket_perms(d, cfg->socket);
	if (rc < 0) {
		snprintf(err, errlen, "socket %s: cannot set owner or mode: %s", cfg->socket,
			 strerror(-rc));
		dev_free_on(d, thread, NULL, d->rdevs[d->nrdevs]);
		return rc;
	}
	d->nrdevs++;
	d->next_index++;
	LOG_INFO("device %s added (%s, virtio-rdma)", cfg->name, cfg->socket);
	return 0;
}

int daemon_dev_add(struct daemon *d, const char *name, const char *spec, bool from_conf,
		   char *err, size_t errlen)
{
	struct netdev_cfg cfg;
	struct dev_call c = { .d = d, .cfg = &cfg };
	char msg[256];
	int rc, thread;

	if (d->ndevs == MAX_DEVICES) {
		snprintf(err, errlen, "at most %d devices", MAX_DEVICES);
		return -ENOSPC;
	}
	if (netdev_parse_cfg(spec, d->next_index, &cfg, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "'%s': %s", spec, msg);
		return -EINVAL;
	}
	thread = cfg.thread;
	if (thread >= (int)d->nthreads) {
		snprintf(err, errlen, "'%s': thread=%d, but there are %u threads (--threads)", spec,
			 thread, d->nthreads);
		return -EINVAL;
	}
	/* round robin in the order devices come, unless pinned */
	c.thread = thread >= 0 ? (unsigned)thread : d->rr_next % d->nthreads;
	if (name)
		snprintf(cfg.name, sizeof(cfg.name), "%s", name);
	else
		snprintf(cfg.name, sizeof(cfg.name), "dev%u", cfg.index);
	if (daemon_dev_find(d, cfg.name) || daemon_rdev_find(d, cfg.name)) {
		snprintf(err, errlen, "device %s exists", cfg.name);
		return -EEXIST;
	}
	for (unsigned j = 0; j < d->ndevs; j++) {
		if (!strcmp(netdev_port_cfg(d->devs[j])->socket, cfg.socket)) {
			snprintf(err, errlen, "socket %s given twice", cfg.socket);
			return -EEXIST;
		}
	}
	for (unsigned j = 0; j < d->nrdevs; j++) {
		if (!strcmp(virtio_rdma_dev_socket(d->rdevs[j]), cfg.socket)) {
			snprintf(err, errlen, "socket %s given twice", cfg.socket);
			return -EEXIST;
		}
	}
	if (cfg.model == NETDEV_MODEL_VIRTIO_RDMA) {
		rc = daemon_rdev_add(d, &cfg, from_conf, c.thread, err, errlen);
		if (!rc && thread < 0)
			d->rr_next++;
		return rc;
	}
	d->dev_spec[d->ndevs] = strdup(spec);
	if (!d->dev_spec[d->ndevs]) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	dthread_run(d, c.thread, dev_new_cb, &c);
	d->devs[d->ndevs] = c.nd;
	d->dev_thread[d->ndevs] = c.thread;
	if (!d->devs[d->ndevs]) {
		rc = -c.err;
		snprintf(err, errlen, "device %s (%s): %s", cfg.name, cfg.socket, strerror(c.err));
		free(d->dev_spec[d->ndevs]);
		d->dev_spec[d->ndevs] = NULL;
		return rc ? rc : -EIO;
	}
	rc = daemon_socket_perms(d, cfg.socket);
	if (rc < 0) {
		snprintf(err, errlen, "socket %s: cannot set owner or mode: %s", cfg.socket,
			 strerror(-rc));
		dev_free_on(d, c.thread, d->devs[d->ndevs], NULL);
		free(d->dev_spec[d->ndevs]);
		d->dev_spec[d->ndevs] = NULL;
		return rc;
	}
	d->dev_from_conf[d->ndevs] = from_conf;
	d->ndevs++;
	d->next_index++;
	if (thread < 0)
		d->rr_next++;
	if (d->nthreads > 1)
		LOG_INFO("device %s added (%s, thread %u)", cfg.name, cfg.socket, c.thread);
	else
		LOG_INFO("device %s added (%s)", cfg.name, cfg.socket);
	return 0;
}

static void dev_remove_at(struct daemon *d, unsigned i)
{
	LOG_INFO("device %s removed", netdev_port_switch_port(d->devs[i])->name);
	dev_free_on(d, d->dev_thread[i], d->devs[i], NULL);
	free(d->dev_spec[i]);
	d->ndevs--;
	/* Keep the order (listings, stats dumps). */
	for (unsigned j = i; j < d->ndevs; j++) {
		d->devs[j] = d->devs[j + 1];
		d->dev_thread[j] = d->dev_thread[j + 1];
		d->dev_spec[j] = d->dev_spec[j + 1];
		d->dev_from_conf[j] = d->dev_from_conf[j + 1];
	}
	d->devs[d->ndevs] = NULL;
	d->dev_spec[d->ndevs] = NULL;
}

int daemon_dev_del(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->ndevs; i++) {
		if (!strcmp(netdev_port_switch_port(d->devs[i])->name, name)) {
			dev_remove_at(d, i);
			return 0;
		}
	}
	for (unsigned i = 0; i < d->nrdevs; i++) {
		if (!strcmp(virtio_rdma_dev_cfg(d->rdevs[i])->name, name)) {
			LOG_INFO("device %s removed", name);
			dev_free_on(d, d->rdev_thread[i], NULL, d->rdevs[i]);
			d->nrdevs--;
			for (unsigned j = i; j < d->nrdevs; j++) {
				d->rdevs[j] = d->rdevs[j + 1];
				d->rdev_thread[j] = d->rdev_thread[j + 1];
			}
			d->rdevs[d->nrdevs] = NULL;
			return 0;
		}
	}
	return -ENOENT;
}

void daemon_dev_del_all(struct daemon *d)
{
	while (d->ndevs)
		dev_remove_at(d, d->ndevs - 1);
	while (d->nrdevs) {
		d->nrdevs--;
		dev_free_on(d, d->rdev_thread[d->nrdevs], NULL, d->rdevs[d->nrdevs]);
	}
}

int daemon_conf_load(struct daemon *d, struct mconf *c, char *err, size_t errlen)
{
	int rc = mconf_load(d->config, c, err, errlen);

	if (rc < 0)
		return rc;
	return daemon_set_socket_perms(d, c->socket_mode, c->socket_group, err, errlen);
}

int daemon_conf_apply_devices(struct daemon *d, const struct mconf *c, char *err, size_t errlen)
{
	int rc = 0;

	/* Gone or changed: remove first (a changed one may keep its socket). */
	for (unsigned i = d->ndevs; i-- > 0;) {
		const char *name = netdev_port_switch_port(d->devs[i])->name;
		bool keep = false;

		if (!d->dev_from_conf[i])
			continue;
		for (unsigned j = 0; j < c->ndevices; j++)
			if (!strcmp(c->dev[j].name, name) && !strcmp(c->dev[j].spec, d->dev_spec[i]))
				keep = true;
		if (!keep)
			dev_remove_at(d, i);
	}
	for (unsigned j = 0; j < c->ndevices; j++) {
		char msg[300];

		if (daemon_dev_find(d, c->dev[j].name))
			continue;
		if (daemon_dev_add(d, c->dev[j].name, c->dev[j].spec, true, msg, sizeof(msg)) < 0) {
			/* Keep going: one bad device must not take the others down. */
			if (!rc)
				snprintf(err, errlen, "%s: device %s (line %u): %s", d->config,
					 c->dev[j].name, c->dev[j].line, msg);
			rc = -EINVAL;
		}
	}
	return rc;
}

int daemon_reload(struct daemon *d, char *err, size_t errlen)
{
	struct mconf *c;
	int rc;

	if (!d->config) {
		snprintf(err, errlen, "no --config file to reload");
		return -ENOENT;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* A file that does not parse changes nothing. */
	rc = daemon_conf_load(d, c, err, errlen);
	if (rc == 0)
		rc = daemon_conf_apply_devices(d, c, err, errlen);
	free(c);
	if (rc == 0)
		LOG_INFO("%s reloaded: %u device(s)", d->config, d->ndevs);
	return rc;
}
