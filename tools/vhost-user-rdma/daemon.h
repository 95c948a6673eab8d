/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's state shared by main.c (start-up, signals), devices.c
 * (devices, the config file, hot-plug) and control.c (the control socket).
 */
#ifndef VHOST_USER_RDMA_DAEMON_H
#define VHOST_USER_RDMA_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "mgmt/conf.h"
#include "port/pkt.h"
#include "roce/roce_tp.h"

#define MAX_DEVICES 256
#define MAX_UPLINKS 16
#define DAEMON_MAX_THREADS 64

struct loop;
struct sw;
struct netdev_port;
struct virtio_rdma_dev;
struct port;
struct ctl_server;
struct dthread;
struct trunk;

struct daemon {
	struct loop *loop;
	struct sw *sw;
	struct netdev_port *devs[MAX_DEVICES];
	unsigned ndevs;
	/* model=virtio-rdma devices: served, not hot-pluggable or listed */
	struct virtio_rdma_dev *rdevs[MAX_DEVICES];
	unsigned nrdevs;
	struct port *uplinks[MAX_UPLINKS];
	unsigned nuplinks;
	int sigfd;

	/* ---- service: config file, hot-plug, control socket ---- */
	bool dev_from_conf[MAX_DEVICES]; /* created from a [device] section */
	char *dev_spec[MAX_DEVICES];     /* the --device string it was made from */
	unsigned next_index;             /* for default names and MACs */
	const char *config;              /* --config FILE or NULL */
	char socket_dir[MCONF_PATH_MAX]; /* for "vrdmactl dev add NAME" */
	int socket_mode;                 /* -1: as created */
	gid_t socket_gid;                /* (gid_t)-1: as created */
	int cli_socket_mode;             /* --socket-mode (over the config's), or -1 */
	gid_t cli_socket_gid;            /* --socket-group, or (gid_t)-1 */
	struct ctl_server *ctl;

	/* ---- loop threads (threads.c): thread 0 is loop/sw above ---- */
	unsigned nthreads;
	struct dthread *threads;
	struct trunk **trunks;            /* [i * nthreads + j]: i's end to j */
	unsigned dev_thread[MAX_DEVICES]; /* owner of devs[i] */
	unsigned rdev_thread[MAX_DEVICES];
	unsigned uplink_thread[MAX_UPLINKS];
	unsigned rr_next;                 /* round robin of devices */
};

/* Create a device from a --device string; name NULL = dev<index>.
 * Returns 0 or -errno with a message in err. */
int daemon_dev_add(struct daemon *d, const char *name, const char *spec, bool from_conf,
		   char *err, size_t errlen);
/* Tear down device name (its tenant is disconnected). Returns 0 or -ENOENT. */
int daemon_dev_del(struct daemon *d, const char *name);
struct netdev_port *daemon_dev_find(struct daemon *d, const char *name);
/* A model=virtio-rdma device by name, or NULL. */
struct virtio_rdma_dev *daemon_rdev_find(struct daemon *d, const char *name);
/* Remove every device and free the bookkeeping. */
void daemon_dev_del_all(struct daemon *d);

/* Read d->config. At start-up (*c filled) the caller applies the globals;
 * on reload the device sections are applied: devices gone or changed are
 * removed, new or changed ones created, the others left alone. Returns 0 or
 * -errno with a message in err. */
int daemon_conf_load(struct daemon *d, struct mconf *c, char *err, size_t errlen);
int daemon_conf_apply_devices(struct daemon *d, const struct mconf *c, char *err, size_t errlen);
int daemon_reload(struct daemon *d, char *err, size_t errlen);
/* socket-mode / socket-group of the config: set d->socket_mode/gid. */
int daemon_set_socket_perms(struct daemon *d, int mode, const char *group, char *err,
			    size_t errlen);
/* Apply d->socket_mode/gid to a socket file. Returns 0 or -errno. */
int daemon_socket_perms(const struct daemon *d, const char *path);

/* Loop threads (threads.c). dthreads_new makes the loops, switches and
 * trunks of threads 1..n-1 (thread 0 is d->loop / d->sw), dthreads_start
 * runs them; dthreads_stop stops and joins them, dthreads_free frees what
 * dthreads_new made. Only thread 0 calls these and the two below. */
int dthreads_new(struct daemon *d, unsigned n);
int dthreads_start(struct daemon *d);
void dthreads_stop(struct daemon *d);
void dthreads_free(struct daemon *d);
struct loop *dthread_loop(struct daemon *d, unsigned idx);
struct sw *dthread_sw(struct daemon *d, unsigned idx);
/* Run fn(arg) on thread idx and wait for it (directly when idx is not
 * running or is the caller). */
void dthread_run(struct daemon *d, unsigned idx, void (*fn)(void *), void *arg);
/* Park every other thread between loop passes (they still run calls
 * queued to them) while thread 0 reads or changes their state. */
void dthread_pause_all(struct daemon *d);
void dthread_resume_all(struct daemon *d);
/* A loop thread's run, payload reference and copy counters. */
struct dthread_stats {
	struct roce_run_stats rs;
	struct pkt_ref_stats ps;
	struct roce_copy_stats cs;
};
/* Thread idx's counters (read on that thread), added to *ts. */
void dthread_add_stats(struct daemon *d, unsigned idx, struct dthread_stats *ts);
/* A loop thread's loop failed (thread 0's loop was stopped for it). */
bool dthreads_failed(struct daemon *d);

/* Control socket (control.c). */
struct ctl_server *ctl_server_new(struct daemon *d, const char *path);
void ctl_server_free(struct ctl_server *c);

#endif /* VHOST_USER_RDMA_DAEMON_H */
