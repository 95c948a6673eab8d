/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user-rdma: the vrdma device back-end daemon.
 *
 * Parses the command line, builds the switch, the devices and the uplinks on
 * one event loop, runs it until SIGINT/SIGTERM, then tears everything down.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "backend/netdev.h"
#include "backend/virtio_rdma_dev.h"
#include "port/fault.h"
#include "roce/roce_tp.h"
#include "port/port.h"
#include "port/trunk.h"
#include "daemon.h"
#include "privilege.h"
#include "vhost/vhost_server.h"

#define SHUTDOWN_SECONDS 30

struct options {
	char *devices[MAX_DEVICES];
	unsigned ndevices;
	char *uplinks[MAX_UPLINKS];
	unsigned nuplinks;
	unsigned poll_us;
	const char *pcap;
	const char *fault;
	const char *pidfile;
	bool stats_on_exit;
	struct priv_opts priv;
	const char *config;       /* --config FILE */
	const char *control;      /* --control PATH */
	unsigned threads;         /* --threads N (0: online CPUs) */
	int streaming;            /* --streaming-stores: 1 auto, 0 off, -1 not given */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: vhost-user-rdma --device socket=PATH[,OPTS] [--device ...] [options]\n"
"\n"
"A software RDMA (RoCE v2) device served as virtio-net devices over vhost-user.\n"
"Each --device is one virtio-net device with the RoCE extension, listening on\n"
"its own UNIX socket. All devices of one process share a built-in L2 switch.\n"
"\n"
"Device options (comma separated after socket=PATH):\n"
"  mac=MAC            MAC address (default 02:56:52:00:00:<n>)\n"
"  ip=ADDR[/PREFIX]   IPv4 address (RoCE v2 GID index 1)\n"
"  ip6=ADDR[/PREFIX]  IPv6 address (RoCE v2 GID index 2)\n"
"  ttl=N              IPv4 TTL / IPv6 hop limit of RoCE frames, 1..255 (default 64)\n"
"  thread=K           loop thread of the device, below --threads (default:\n"
"                     round robin)\n"
"  vlan=ID            802.1Q VLAN of the RoCE traffic (and its ARP / ND), 1..4094\n"
"  port-security=on|off  own MAC and addresses only (default on)\n"
"  mac-change=on|off  the driver may change its MAC (default off)\n"
"  allow-ip=ADDR[/PREFIX]  another allowed source prefix (repeatable)\n"
"  mem=SIZE           guest memory the driver may map (default 64G)\n"
"  state-mem=SIZE     daemon memory for its RDMA queue state (default 1G)\n"
"  mtu=N              Ethernet MTU, 576..9198 (default 1500)\n"
"  qps=N              max_rdma_qps, 2..16384 (default 1024)\n"
"  cqs=N              max_rdma_cqs, 1..16384 (default 1024)\n"
"  roce=on|off        offer VIRTIO_NET_F_ROCE (default on)\n"
"  ext=on|off         offer VIRTIO_NET_F_ROCE_EXT with ROCE: SRQs, atomics, memory\n"
"                     windows, fast registration, resize, async events (default on)\n"
"  srqs=N             max_rdma_srqs with ext, 0..16384 (default 1024); the\n"
"                     4 + cqs + 2 * qps + srqs virtqueues must fit the ring limit\n"
"                     (defaults shrink to fit; ext is dropped if even the event\n"
"                     queue does not fit)\n"
"  contexts=N         connections (contexts) served at once, 1..1024 (default\n"
"                     64); qps, cqs, srqs, MRs and PDs are shared device totals\n"
"  model=virtio-rdma  serve the standalone virtio-rdma device (id 42) instead\n"
"                     (socket, mac, ip, mtu, qps = max_qp, cqs = max_cq apply)\n"
"\n"
"Options:\n"
"  --device SPEC          add a device (repeatable; at least one\n"
"                         unless --config or --control is given)\n"
"  --uplink tap:NAME      attach a TAP interface to the switch (repeatable)\n"
"  --uplink af_packet:IF  attach a host interface through AF_PACKET (repeatable)\n"
"  --uplink af_xdp:IF[,mode=generic|native]\n"
"                         attach a host interface through AF_XDP (repeatable)\n"
"  --threads N|auto       loop threads, each with its own switch, devices\n"
"                         round robin (thread=K in --device or --uplink pins\n"
"                         one); auto = online CPUs (default 1)\n"
"  --streaming-stores auto|off\n"
"                         auto (default): payload into memory the loop has\n"
"                         not written within its last quarter of a last-level\n"
"                         cache of writes goes around the cache (streaming\n"
"                         stores); off: always through it\n"
"  --poll-us N            busy-poll for N microseconds after the last work\n"
"                         before sleeping (default 0: pure interrupt mode)\n"
"  --sched POLICY         scheduling policy of the daemon: other (default),\n"
"                         fifo[:PRIO] or rr[:PRIO] (real time, PRIO 1..99,\n"
"                         default 10): wakes ahead of busy-polling programs\n"
"  --pcap FILE            capture every frame entering the switch\n"
"  --fault SPEC           inject faults: drop=P,dup=P,reorder=P,corrupt=P,seed=N\n"
"                         [,hold=US][,port=NAME]\n"
"                         (P in percent)\n"
"  --pidfile FILE         write the process id once all sockets listen\n"
"  --stats                print counters on exit (SIGUSR1 prints them any time)\n"
"  --user USER[:GROUP]    run as USER once sockets and uplinks are open\n"
"  --socket-mode MODE     mode of the device sockets (octal, e.g. 0660)\n"
"  --socket-group GROUP   group of the device sockets\n"
"  --no-seccomp           no system-call filter (debugging)\n"
"  --config FILE          read devices and options from FILE (vrdma.conf(5));\n"
"                         SIGHUP re-reads it (devices added, removed, changed)\n"
"  --control PATH         serve vrdmactl(8) on the UNIX socket PATH (default\n"
"                         with --config: the config's 'control', else\n"
"                         <socket-dir>/control; 'none' for no control socket)\n"
"  -v, --verbose          more logging (repeat for debug)\n"
"  -q, --quiet            errors only\n"
"  -h, --help             this text\n");
}

/* --threads auto */
static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)MIN(n, (long)DAEMON_MAX_THREADS) : 1;
}

/* --user, --socket-mode, --socket-group, --no-seccomp (privilege.h). */
static int parse_priv_arg(struct options *o, int c, const char *arg)
{
	switch (c) {
	case 'U':
		if (priv_parse_user(&o->priv, arg) == 0)
			return 0;
		fprintf(stderr, "vhost-user-rdma: --user '%s': expected USER[:GROUP] of this system\n", arg);
		return -1;
	case 'M':
		if (priv_parse_socket_mode(&o->priv, arg) == 0)
			return 0;
		fprintf(stderr, "vhost-user-rdma: --socket-mode '%s': expected an octal mode <= 0777\n", arg);
		return -1;
	case 'G':
		if (priv_parse_socket_group(&o->priv, arg) == 0)
			return 0;
		fprintf(stderr, "vhost-user-rdma: --socket-group '%s': no such group\n", arg);
		return -1;
	default:
		o->priv.no_seccomp = true;
		return 0;
	}
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "uplink", required_argument, NULL, 'u' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "sched", required_argument, NULL, 'R' },
		{ "pcap", required_argument, NULL, 'c' },
		{ "fault", required_argument, NULL, 'f' },
		{ "pidfile", required_argument, NULL, 'P' },
		{ "stats", no_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "user", required_argument, NULL, 'U' },
		{ "socket-mode", required_argument, NULL, 'M' },
		{ "socket-group", required_argument, NULL, 'G' },
		{ "no-seccomp", no_argument, NULL, 'S' },
		{ "config", required_argument, NULL, 'C' },
		{ "control", required_argument, NULL, 'K' },
		{ "threads", required_argument, NULL, 'T' },
		{ "streaming-stores", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'd':
			if (o->ndevices == MAX_DEVICES) {
				fprintf(stderr, "vhost-user-rdma: at most %d devices\n", MAX_DEVICES);
				return -1;
			}
			o->devices[o->ndevices++] = optarg;
			break;
		case 'u':
			if (o->nuplinks == MAX_UPLINKS) {
				fprintf(stderr, "vhost-user-rdma: at most %d uplinks\n", MAX_UPLINKS);
				return -1;
			}
			if (strncmp(optarg, "tap:", 4) && strncmp(optarg, "af_packet:", 10) &&
			    strncmp(optarg, "af_xdp:", 7)) {
				fprintf(stderr, "vhost-user-rdma: --uplink '%s': expected tap:NAME, af_packet:IFACE or af_xdp:IFACE\n",
					optarg);
				return -1;
			}
			o->uplinks[o->nuplinks++] = optarg;
			break;
		case 'p':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v > 1000000) {
				fprintf(stderr, "vhost-user-rdma: --poll-us '%s': expected 0..1000000\n", optarg);
				return -1;
			}
			o->poll_us = (unsigned)v;
			break;
		case 'R':
			if (mconf_parse_sched(optarg, &o->priv.sched_policy, &o->priv.sched_prio) < 0) {
				fprintf(stderr, "vhost-user-rdma: --sched '%s': expected other, fifo[:1..99] or rr[:1..99]\n",
					optarg);
				return -1;
			}
			break;
		case 'c':
			o->pcap = optarg;
			break;
		case 'f':
			o->fault = optarg;
			break;
		case 'P':
			o->pidfile = optarg;
			break;
		case 's':
			o->stats_on_exit = true;
			break;
		case 'v':
			if (vlog_level < VLOG_DEBUG)
				vlog_level++;
			break;
		case 'q':
			vlog_level = VLOG_ERR;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'U':
		case 'M':
		case 'G':
		case 'S':
			if (parse_priv_arg(o, c, optarg) < 0)
				return -1;
			break;
		case 'C':
			o->config = optarg;
			break;
		case 'K':
			o->control = optarg;
			break;
		case 'T':
			if (!strcmp(optarg, "auto")) {
				o->threads = online_cpus();
				break;
			}
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v < 1 || v > DAEMON_MAX_THREADS) {
				fprintf(stderr, "vhost-user-rdma: --threads '%s': expected 1..%d or auto\n",
					optarg, DAEMON_MAX_THREADS);
				return -1;
			}
			o->threads = (unsigned)v;
			break;
		case 'N':
			o->streaming = mconf_parse_streaming(optarg);
			if (o->streaming < 0) {
				fprintf(stderr, "vhost-user-rdma: --streaming-stores '%s': expected auto or off\n",
					optarg);
				return -1;
			}
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vhost-user-rdma: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->ndevices && !o->config && !o->control) {
		fprintf(stderr, "vhost-user-rdma: at least one --device socket=PATH (or --config, "
			"--control) is required\n");
		usage(stderr);
		return -1;
	}
	return 0;
}

/* (Other threads are parked: see on_signal.) */
static void dump_stats(struct daemon *d)
{
	const struct sw_stats *s = sw_get_stats(d->sw);
	struct dthread_stats ts;
	struct roce_run_stats rs;
	struct pkt_ref_stats ps;

	for (unsigned i = 0; i < d->ndevs; i++)
		netdev_port_dump_stats(d->devs[i], stderr);
	for (unsigned i = 0; i < d->nrdevs; i++)
		virtio_rdma_dev_dump_stats(d->rdevs[i], stderr);
	fprintf(stderr, "switch forwarded %llu flooded %llu dropped_no_port %llu dropped_runt %llu"
		" dropped_horizon %llu\n",
		(unsigned long long)s->forwarded, (unsigned long long)s->flooded,
		(unsigned long long)s->dropped_no_port, (unsigned long long)s->dropped_runt,
		(unsigned long long)s->dropped_horizon);
	for (unsigned i = 1; i < d->nthreads; i++) {
		const struct sw_stats *t = sw_get_stats(dthread_sw(d, i));

		fprintf(stderr, "switch thread %u forwarded %llu flooded %llu dropped_no_port %llu "
			"dropped_runt %llu held_busy %llu fault_dropped %llu dropped_horizon %llu\n", i,
			(unsigned long long)t->forwarded, (unsigned long long)t->flooded,
			(unsigned long long)t->dropped_no_port, (unsigned long long)t->dropped_runt,
			(unsigned long long)t->held_busy, (unsigned long long)t->fault_dropped,
			(unsigned long long)t->dropped_horizon);
	}
	for (unsigned i = 0; i < d->nthreads * d->nthreads; i++) {
		const struct trunk_stats *t;

		if (!d->trunks || !d->trunks[i])
			continue;
		t = trunk_get_stats(d->trunks[i]);
		fprintf(stderr, "trunk %s tx %llu tx_overflow %llu tx_dropped %llu tx_busy %llu "
			"tx_refused %llu rx %llu rx_held %llu rx_dropped %llu rx_busy_set %llu\n",
			trunk_port(d->trunks[i])->name, (unsigned long long)t->tx_frames,
			(unsigned long long)t->tx_overflow, (unsigned long long)t->tx_dropped,
			(unsigned long long)t->tx_busy, (unsigned long long)t->tx_refused,
			(unsigned long long)t->rx_frames, (unsigned long long)t->rx_held,
			(unsigned long long)t->rx_dropped, (unsigned long long)t->rx_busy_set);
	}
	fprintf(stderr, "faults dropped %llu duplicated %llu reordered %llu corrupted %llu ce_marked %llu"
		" run_passed %llu\n",
		(unsigned long long)s->fault_dropped, (unsigned long long)s->fault_duplicated,
		(unsigned long long)s->fault_reordered, (unsigned long long)s->fault_corrupted,
		(unsigned long long)s->fault_ce_marked, (unsigned long long)s->fault_run_passed);
	for (unsigned i = 1; i < d->nthreads; i++) {
		const struct sw_stats *t = sw_get_stats(dthread_sw(d, i));

		fprintf(stderr, "faults thread %u dropped %llu duplicated %llu reordered %llu "
			"corrupted %llu ce_marked %llu run_passed %llu\n", i,
			(unsigned long long)t->fault_dropped, (unsigned long long)t->fault_duplicated,
			(unsigned long long)t->fault_reordered, (unsigned long long)t->fault_corrupted,
			(unsigned long long)t->fault_ce_marked, (unsigned long long)t->fault_run_passed);
	}
	memset(&ts, 0, sizeof(ts));
	for (unsigned i = 0; i < d->nthreads; i++)
		dthread_add_stats(d, i, &ts);
	rs = ts.rs;
	ps = ts.ps;
	fprintf(stderr, "runs split %llu frames_split %llu split_failed %llu cut %llu tails %llu "
		"holes %llu\n",
		(unsigned long long)rs.runs_split, (unsigned long long)rs.frames_split,
		(unsigned long long)rs.split_failed, (unsigned long long)rs.runs_cut,
		(unsigned long long)rs.tails, (unsigned long long)rs.holes);
	fprintf(stderr, "payload_refs attached %llu filled %llu flushes %llu live %llu\n",
		(unsigned long long)ps.attached, (unsigned long long)ps.filled,
		(unsigned long long)ps.flushes, (unsigned long long)ps.live);
	fprintf(stderr, "copies streamed %llu bytes %llu\n", (unsigned long long)ts.cs.streamed,
		(unsigned long long)ts.cs.streamed_bytes);
	for (unsigned i = 0; i < d->nuplinks; i++) {
		const struct port *p = d->uplinks[i];

		fprintf(stderr, "uplink %s rx %llu tx %llu tx_dropped %llu rx_errors %llu\n", p->name,
			(unsigned long long)p->stats.rx_frames, (unsigned long long)p->stats.tx_frames,
			(unsigned long long)p->stats.tx_dropped, (unsigned long long)p->stats.rx_errors);
	}
}

static void on_signal(void *arg, uint32_t events)
{
	struct daemon *d = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			dthread_pause_all(d);
			dump_stats(d);
			dthread_resume_all(d);
		} else if (si.ssi_signo == SIGHUP) {
			char err[512];

			/* systemctl reload: re-read the config file. */
			dthread_pause_all(d);
			if (daemon_reload(d, err, sizeof(err)) < 0)
				LOG_ERR("reload: %s", err);
			dthread_resume_all(d);
		} else {
			LOG_INFO("signal %u: shutting down", si.ssi_signo);
			loop_stop(d->loop);
		}
	}
}

/* Uplinks open and close on their thread. */
struct uplink_call {
	struct daemon *d;
	unsigned thread;
	char spec[128];
	struct port *p;
	int err;
};

static void uplink_open_cb(void *arg)
{
	struct uplink_call *c = arg;
	struct sw *s = dthread_sw(c->d, c->thread);
	struct loop *l = dthread_loop(c->d, c->thread);
	const char *u = c->spec;

	if (!strncmp(u, "tap:", 4))
		c->p = tap_port_open(s, l, u + 4);
	else if (!strncmp(u, "af_xdp:", 7))
		c->p = afxdp_port_open(s, l, u + 7);
	else
		c->p = afpacket_port_open(s, l, u + 10);
	c->err = errno;
}

static void uplink_destroy_cb(void *arg)
{
	port_destroy(arg);
}

/* --sched applies to each loop thread (a policy is per thread). */
struct sched_call {
	const struct priv_opts *o;
	int rc;
};

static void sched_apply_cb(void *arg)
{
	struct sched_call *c = arg;

	c->rc = priv_sched_apply(c->o);
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* Every ring may carry a kick and a call eventfd: 16384 QPs need many. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Ring eventfds of all sessions together leave room for the sockets,
	 * connections, uplinks and the loop's own fds. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur > 2048)
		vhost_fd_budget_set((unsigned)MIN(rl.rlim_cur - 1024, (rlim_t)UINT32_MAX));
}

int main(int argc, char **argv)
{
	struct options o = { .priv.sched_policy = -1, .streaming = -1 };
	struct daemon d = { .sigfd = -1, .socket_mode = -1, .socket_gid = (gid_t)-1,
			    .cli_socket_mode = -1, .cli_socket_gid = (gid_t)-1 };
	struct mconf *conf = NULL;
	sigset_t mask;
	bool wrote_pidfile = false, afxdp = false, held = false;
	int rc = 1;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (o.priv.socket_mode_set)
		d.socket_mode = d.cli_socket_mode = (int)o.priv.socket_mode;
	if (o.priv.socket_group_set)
		d.socket_gid = d.cli_socket_gid = o.priv.socket_gid;
	/* ---- service: the config file fills in what the command line did not ---- */
	snprintf(d.socket_dir, sizeof(d.socket_dir), "%s", MCONF_SOCKET_DIR);
	if (o.config) {
		char err[512];

		d.config = o.config;
		conf = malloc(sizeof(*conf));
		if (!conf || daemon_conf_load(&d, conf, err, sizeof(err)) < 0) {
			fprintf(stderr, "vhost-user-rdma: --config %s\n", conf ? err : strerror(ENOMEM));
			free(conf);
			return 2;
		}
		snprintf(d.socket_dir, sizeof(d.socket_dir), "%s", conf->socket_dir);
		if (!o.poll_us && conf->poll_us >= 0)
			o.poll_us = (unsigned)conf->poll_us;
		if (!o.threads && conf->threads > 0)
			o.threads = (unsigned)conf->threads;
		else if (!o.threads && conf->threads < 0)
			o.threads = online_cpus();
		if (o.streaming < 0)
			o.streaming = conf->streaming;
		if (o.priv.sched_policy < 0 && conf->sched_policy >= 0) {
			o.priv.sched_policy = conf->sched_policy;
			o.priv.sched_prio = conf->sched_prio;
		}
		if (!o.pcap && conf->pcap[0])
			o.pcap = conf->pcap;
		if (!o.fault && conf->fault[0])
			o.fault = conf->fault;
		for (unsigned i = 0; i < conf->nuplinks && o.nuplinks < MAX_UPLINKS; i++)
			o.uplinks[o.nuplinks++] = conf->uplinks[i];
		if (!o.control)
			o.control = conf->control[0] ? conf->control : NULL;
		if (!o.control) {
			static char path[MCONF_PATH_MAX + 16];

			snprintf(path, sizeof(path), "%s/%s", conf->socket_dir, MCONF_CONTROL_NAME);
			o.control = path;
		}
		/* The socket directory (systemd's RuntimeDirectory makes it too). */
		if (mkdir(conf->socket_dir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "vhost-user-rdma: socket-dir %s: %s\n", conf->socket_dir,
				strerror(errno));
			free(conf);
			return 1;
		}
	}
	if (o.control && !strcmp(o.control, "none"))
		o.control = NULL;

	raise_fd_limit();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	d.loop = loop_new();
	if (!d.loop) {
		LOG_ERR("cannot create the event loop: %s", strerror(errno));
		return 1;
	}
	loop_set_poll_us(d.loop, o.poll_us);
	d.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d.sigfd < 0 || loop_add_fd(d.loop, d.sigfd, EPOLLIN, on_signal, &d) < 0) {
		LOG_ERR("cannot watch signals: %s", strerror(errno));
		goto out;
	}
	d.sw = sw_new(d.loop);
	if (!d.sw) {
		LOG_ERR("cannot create the switch: %s", strerror(errno));
		goto out;
	}
	roce_copy_set_cold(o.streaming ? roce_copy_llc_bytes() / 4 : 0);
	if (dthreads_new(&d, o.threads ? o.threads : 1) < 0) {
		LOG_ERR("cannot create the loop threads: %s", strerror(errno));
		goto out;
	}
	for (unsigned i = 1; i < d.nthreads; i++)
		loop_set_poll_us(dthread_loop(&d, i), o.poll_us);
	/* one capture file per thread: FILE, FILE.1, FILE.2 ... */
	for (unsigned i = 0; o.pcap && i < d.nthreads; i++) {
		char path[4096];
		int err;

		snprintf(path, sizeof(path), i ? "%s.%u" : "%s", o.pcap, i);
		err = sw_set_pcap(dthread_sw(&d, i), path);
		if (err < 0) {
			fprintf(stderr, "vhost-user-rdma: --pcap %s: %s\n", path, strerror(-err));
			goto out;
		}
	}
	if (o.fault) {
		struct fault_cfg fc;

		if (fault_cfg_parse(&fc, o.fault) < 0) {
			fprintf(stderr, "vhost-user-rdma: --fault '%s': expected "
				"drop=P,dup=P,reorder=P,corrupt=P,seed=N[,hold=US][,port=NAME] "
				"with P in percent (0..100)\n", o.fault);
			goto out;
		}
		/* every thread's switch; thread K's injector draws from seed + K
		 * (thread 0: exactly the seed, as with one thread) */
		for (unsigned i = 0; i < d.nthreads; i++) {
			struct fault_cfg ft = fc;

			ft.seed = fc.seed + i;
			if (sw_set_fault(dthread_sw(&d, i), &ft, ft.port[0] ? ft.port : NULL) < 0) {
				fprintf(stderr, "vhost-user-rdma: --fault '%s': cannot apply\n", o.fault);
				goto out;
			}
		}
	}
	if (dthreads_start(&d) < 0)
		goto out;
	/* Threads 1.. stay parked (calls queued to them still run) until
	 * privileges are dropped and the filter is installed: no guest is
	 * served before. */
	dthread_pause_all(&d);
	held = true;
	for (unsigned i = 0; i < o.ndevices; i++) {
		char err[512];

		if (daemon_dev_add(&d, NULL, o.devices[i], false, err, sizeof(err)) < 0) {
			fprintf(stderr, "vhost-user-rdma: --device %s\n", err);
			goto out;
		}
	}
	/* ---- service: devices of the config file, the control socket ---- */
	if (conf) {
		char err[512];

		if (daemon_conf_apply_devices(&d, conf, err, sizeof(err)) < 0) {
			fprintf(stderr, "vhost-user-rdma: %s\n", err);
			goto out;
		}
	}
	if (o.control) {
		d.ctl = ctl_server_new(&d, o.control);
		if (!d.ctl) {
			fprintf(stderr, "vhost-user-rdma: --control %s: %s\n", o.control, strerror(errno));
			goto out;
		}
	}
	for (unsigned i = 0; i < o.nuplinks; i++) {
		struct uplink_call c = { .d = &d };
		char *th;

		snprintf(c.spec, sizeof(c.spec), "%s", o.uplinks[i]);
		/* ",thread=K" at the end: the uplink's thread (default 0) */
		th = strstr(c.spec, ",thread=");
		if (th) {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(th + 8, &end, 10);
			if (errno || *end || !th[8] || v >= d.nthreads) {
				fprintf(stderr, "vhost-user-rdma: --uplink %s: thread=K with K below "
					"--threads (%u)\n", o.uplinks[i], d.nthreads);
				goto out;
			}
			*th = '\0';
			c.thread = (unsigned)v;
		}
		if (!strncmp(c.spec, "af_xdp:", 7))
			afxdp = true; /* its release needs more of the filter */
		dthread_run(&d, c.thread, uplink_open_cb, &c);
		if (!c.p) {
			fprintf(stderr, "vhost-user-rdma: --uplink %s: %s\n", o.uplinks[i],
				strerror(c.err));
			goto out;
		}
		d.uplink_thread[d.nuplinks] = c.thread;
		d.uplinks[d.nuplinks++] = c.p;
	}
	if (o.pidfile) {
		FILE *f = fopen(o.pidfile, "we");
		bool ok = f && fprintf(f, "%d\n", (int)getpid()) > 0;

		if (f && fclose(f) != 0)
			ok = false;
		if (!ok) {
			fprintf(stderr, "vhost-user-rdma: --pidfile %s: %s\n", o.pidfile, strerror(errno));
			goto out;
		}
		wrote_pidfile = true;
	}
	/* Everything that needs privilege is open: drop it for good. */
	for (unsigned i = 0; i < d.nthreads; i++) {
		struct sched_call c = { .o = &o.priv };

		dthread_run(&d, i, sched_apply_cb, &c);
		if (c.rc < 0)
			goto out;
	}
	/* (the filter covers every thread: installed with TSYNC) */
	if (priv_drop(&o.priv) < 0 || (!o.priv.no_seccomp && sec_filter_install(afxdp) < 0))
		goto out;
	dthread_resume_all(&d);
	held = false;
	if (d.nthreads > 1)
		LOG_INFO("serving %u device(s), %u uplink(s), poll %u us, %u threads",
			 d.ndevs + d.nrdevs, d.nuplinks, o.poll_us, d.nthreads);
	else
		LOG_INFO("serving %u device(s), %u uplink(s), poll %u us", d.ndevs + d.nrdevs,
			 d.nuplinks, o.poll_us);
	rc = loop_run(d.loop) < 0 || dthreads_failed(&d) ? 1 : 0;
	/* Teardown is O(configured objects) and waits on no peer; should it
	 * ever hang, SIGALRM ends the process (status 142) instead of a
	 * service manager's SIGKILL much later. */
	alarm(SHUTDOWN_SECONDS);
	if (o.stats_on_exit) {
		dthread_pause_all(&d);
		dump_stats(&d);
		dthread_resume_all(&d);
	}
out:
	for (unsigned i = 0; i < d.nuplinks; i++)
		dthread_run(&d, d.uplink_thread[i], uplink_destroy_cb, d.uplinks[i]);
	ctl_server_free(d.ctl);
	if (d.threads)
		daemon_dev_del_all(&d);
	free(conf);
	if (held)
		dthread_resume_all(&d); /* (their devices are gone) */
	dthreads_stop(&d);
	dthreads_free(&d);
	if (d.sw)
		sw_free(d.sw);
	if (d.sigfd >= 0) {
		loop_del_fd(d.loop, d.sigfd);
		close(d.sigfd);
	}
	loop_free(d.loop);
	if (wrote_pidfile)
		unlink(o.pidfile);
	return rc;
}
