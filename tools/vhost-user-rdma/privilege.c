/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Least privilege of the daemon: ownership and mode of its sockets
 * (--socket-mode, --socket-group) and the switch to an unprivileged user
 * (--user) once every socket and uplink is open. After setuid() away from
 * root the kernel clears every capability; no_new_privs keeps it so.
 */
#include "privilege.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int lookup_group(const char *name, gid_t *gid)
{
	struct group *gr = getgrnam(name);
	char *end;
	unsigned long v;

	if (gr) {
		*gid = gr->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (*name && !*end && !errno && v < (unsigned long)(gid_t)-1) {
		*gid = (gid_t)v;
		return 0;
	}
	return -1;
}

int priv_parse_user(struct priv_opts *o, const char *spec)
{
	char buf[256], *colon;
	struct passwd *pw;

	if (strlen(spec) >= sizeof(buf) || !*spec)
		return -1;
	strcpy(buf, spec);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	pw = getpwnam(buf);
	if (!pw)
		return -1;
	o->uid = pw->pw_uid;
	o->gid = pw->pw_gid;
	if (colon && lookup_group(colon + 1, &o->gid) < 0)
		return -1;
	o->user = true;
	return 0;
}

int priv_parse_socket_mode(struct priv_opts *o, const char *spec)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(spec, &end, 8);
	if (!*spec || *end || errno || v > 0777)
		return -1;
	o->socket_mode = (mode_t)v;
	o->socket_mode_set = true;
	return 0;
}

int priv_parse_socket_group(struct priv_opts *o, const char *spec)
{
	if (lookup_group(spec, &o->socket_gid) < 0)
		return -1;
	o->socket_group_set = true;
	return 0;
}

int priv_sched_apply(const struct priv_opts *o)
{
	struct sched_param sp = { .sched_priority = o->sched_prio };

	if (o->sched_policy < 0)
		return 0;
	/* Reset on fork: nothing the daemon might start inherits the policy. */
	if (sched_setscheduler(0, o->sched_policy | SCHED_RESET_ON_FORK, &sp) < 0) {
		fprintf(stderr, "vhost-user-rdma: --sched: cannot set the %s policy (priority %d): %s%s\n",
			o->sched_policy == SCHED_FIFO ? "fifo" : o->sched_policy == SCHED_RR ? "rr" : "other",
			o->sched_prio, strerror(errno),
			errno == EPERM ? " (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least the priority)" : "");
		return -1;
	}
	return 0;
}

int priv_drop(const struct priv_opts *o)
{
	if (!o->user)
		return 0;
	if (setgroups(1, &o->gid) < 0 || setgid(o->gid) < 0 || setuid(o->uid) < 0) {
		fprintf(stderr, "vhost-user-rdma: --user: cannot switch to uid %u gid %u: %s\n",
			(unsigned)o->uid, (unsigned)o->gid, strerror(errno));
		return -1;
	}
	/* Never again: no way back to root, no capability left. */
	if (o->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		fprintf(stderr, "vhost-user-rdma: --user: root could be regained\n");
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		fprintf(stderr, "vhost-user-rdma: no_new_privs: %s\n", strerror(errno));
		return -1;
	}
#ifdef VRDMA_SANITIZE
	/* The leak check at exit traces the process from a child: allowed
	 * only while it is dumpable (sanitizer builds are for tests). */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
#else
	/* setuid cleared the dumpable flag; keep it cleared (guest memory is
	 * mapped here: no core dumps readable by the new user). */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
	return 0;
}
