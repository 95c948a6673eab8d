/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Least privilege of the daemon (privilege.c, seccomp.c); docs/spec.md
 * "Security model".
 */
#ifndef VRDMA_TOOLS_PRIVILEGE_H
#define VRDMA_TOOLS_PRIVILEGE_H

#include <stdbool.h>
#include <sys/types.h>

struct priv_opts {
	bool user;              /* --user given */
	uid_t uid;
	gid_t gid;
	bool socket_mode_set;
	mode_t socket_mode;     /* --socket-mode (octal) */
	bool socket_group_set;
	gid_t socket_gid;       /* --socket-group */
	bool no_seccomp;        /* --no-seccomp */
	int sched_policy;       /* --sched: -1 not given, else SCHED_OTHER/FIFO/RR */
	int sched_prio;
};

/* Command-line values; each returns 0 or -1 (bad value). */
int priv_parse_user(struct priv_opts *o, const char *spec);        /* USER[:GROUP] */
int priv_parse_socket_mode(struct priv_opts *o, const char *spec); /* octal, <= 0777 */
int priv_parse_socket_group(struct priv_opts *o, const char *spec);

/* Apply --sched (while still privileged: a real-time policy needs
 * CAP_SYS_NICE or RLIMIT_RTPRIO). 0 or -1 (message printed). */
int priv_sched_apply(const struct priv_opts *o);

/* Switch to --user (if given) for good. 0 or -1 (message printed). */
int priv_drop(const struct priv_opts *o);

/* Install the system-call filter (seccomp.c): only what the running daemon
 * does is allowed, anything else kills it. 0 or -1 (message printed). */
int sec_filter_install(bool afxdp);

#endif /* VRDMA_TOOLS_PRIVILEGE_H */
