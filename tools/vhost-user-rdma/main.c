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

static void dump_stats(struct daemon *d)
{
	const struct sw_stats *s = sw_get_stats(d->sw);
	struct roce_run_stats rs;
	struct pkt_ref_stats ps;

	for (unsigned i = 0; i < d->ndevs; i++)
		netdev_port_dump_stats(d->devs[i], stderr);
	for (unsigned i = 0; i < d->nrdevs; i++)
		virtio_rdma_dev_dump_stats(d->rdevs[i], stderr);
	fprintf(stderr, "switch forwarded %llu flooded %llu dropped_no_port %llu dropped_runt %llu\n",
		(unsigned long long)s->forwarded, (unsigned long long)s->flooded,
		(unsigned long long)s->dropped_no_port, (unsigned long long)s->dropped_runt);
	fprintf(stderr, "faults dropped %llu duplicated %llu reordered %llu corrupted %llu ce_marked %llu"
		" run_passed %llu\n",
		(unsigned long long)s->fault_dropped, (unsigned long long)s->fault_duplicated,
		(unsigned long long)s->fault_reordered, (unsigned long long)s->fault_corrupted,
		(unsigned long long)s->fault_ce_marked, (unsigned long long)s->fault_run_passed);
	roce_run_get_stats(&rs);
	pkt_ref_get_stats(&ps);
	fprintf(stderr, "runs split %llu frames_split %llu split_failed %llu cut %llu tails %llu "
		"holes %llu\n",
		(unsigned long long)rs.runs_split, (unsigned long long)rs.frames_split,
		(unsigned long long)rs.split_failed, (unsigned long long)rs.runs_cut,
		(unsigned long long)rs.tails, (unsigned long long)rs.holes);
	fprintf(stderr, "payload_refs attached %llu filled %llu flushes %llu live %llu\n",
		(unsigned long long)ps.attached, (unsigned long long)ps.filled,
		(unsigned long long)ps.flushes, (unsigned long long)ps.live);
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
			dump_stats(d);
		} else if (si.ssi_signo == SIGHUP) {
			char err[512];

			/* systemctl reload: re-read the config file. */
			if (daemon_reload(d, err, sizeof(err)) < 0)
				LOG_ERR("reload: %s", err);
		} else {
			LOG_INFO("signal %u: shutting down", si.ssi_signo);
			loop_stop(d->loop);
		}
	}
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
	struct options o = { .priv.sched_policy = -1 };
	struct daemon d = { .sigfd = -1, .socket_mode = -1, .socket_gid = (gid_t)-1,
			    .cli_socket_mode = -1, .cli_socket_gid = (gid_t)-1 };
	struct mconf *conf = NULL;
	sigset_t mask;
	bool wrote_pidfile = false, afxdp = false;
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
	if (o.pcap) {
		int err = sw_set_pcap(d.sw, o.pcap);

		if (err < 0) {
			fprintf(stderr, "vhost-user-rdma: --pcap %s: %s\n", o.pcap, strerror(-err));
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
		if (sw_set_fault(d.sw, &fc, fc.port[0] ? fc.port : NULL) < 0) {
			fprintf(stderr, "vhost-user-rdma: --fault '%s': cannot apply\n", o.fault);
			goto out;
		}
	}
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
		const char *u = o.uplinks[i];
		struct port *p;

		if (!strncmp(u, "tap:", 4))
			p = tap_port_open(d.sw, d.loop, u + 4);
		else if (!strncmp(u, "af_xdp:", 7)) {
			p = afxdp_port_open(d.sw, d.loop, u + 7);
			afxdp = true; /* its release needs more of the filter */
		} else
			p = afpacket_port_open(d.sw, d.loop, u + 10);
		if (!p) {
			fprintf(stderr, "vhost-user-rdma: --uplink %s: %s\n", u, strerror(errno));
			goto out;
		}
		d.uplinks[d.nuplinks++] = p;
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
	if (priv_sched_apply(&o.priv) < 0 || priv_drop(&o.priv) < 0 || (!o.priv.no_seccomp && sec_filter_install(afxdp) < 0))
		goto out;
	LOG_INFO("serving %u device(s), %u uplink(s), poll %u us", d.ndevs + d.nrdevs, d.nuplinks,
		 o.poll_us);
	rc = loop_run(d.loop) < 0 ? 1 : 0;
	/* Teardown is O(configured objects) and waits on no peer; should it
	 * ever hang, SIGALRM ends the process (status 142) instead of a
	 * service manager's SIGKILL much later. */
	alarm(SHUTDOWN_SECONDS);
	if (o.stats_on_exit)
		dump_stats(&d);
out:
	for (unsigned i = 0; i < d.nuplinks; i++)
		port_destroy(d.uplinks[i]);
	ctl_server_free(d.ctl);
	daemon_dev_del_all(&d);
	free(conf);
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
