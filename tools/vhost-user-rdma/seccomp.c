/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's system-call filter (libseccomp), installed once every socket
 * and uplink is open and privileges are dropped: the allow-list is what the
 * running daemon does (event loop, vhost-user messages with fds, guest memory
 * mappings, eventfds, timers, uplink and capture I/O, logging, shutdown),
 * and what the service does at run time: the config file re-read on SIGHUP,
 * device sockets created and removed by hot-plug, the control socket, pcap
 * files started by "vrdmactl capture". Anything else kills the process: a
 * compromised daemon cannot exec, trace, change its identity or open network
 * sockets (new sockets are AF_UNIX only). --no-seccomp leaves it off.
 */
#include "privilege.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static const char *const sec_allowed[] = {
	/* event loop, timers, signals */
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "epoll_create1",
	"timerfd_create", "timerfd_settime", "timerfd_gettime", "eventfd2",
	"clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "signalfd4",
	"restart_syscall", "getpid", "gettid", "tgkill", "sched_yield",
	/* I/O on what is open: vhost-user sockets, eventfds, uplinks, capture */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek",
	"recvmsg", "sendmsg", "recvfrom", "sendto", "recvmmsg", "sendmmsg",
	"accept4", "getsockopt", "setsockopt", "getsockname", "shutdown",
	"close", "fcntl", "ioctl", "poll", "ppoll", "fsync", "fdatasync",
	"fstat", "newfstatat", "statx", "fstatfs", "stat", "lstat",
	"readlink", "readlinkat", /* is a passed fd an eventfd (/proc/self/fd) */
	"unlink", "unlinkat", /* sockets and the pid file at shutdown */
	/* memory: guest regions, packet buffers, the SIGBUS guard */
	"mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
	"futex", "getrandom", "set_robust_list", "rseq",
	"exit", "exit_group",
	"alarm", "setitimer", /* the bound on shutdown time */
	/* service at run time: config reload (and group lookup), hot-plugged
	 * device sockets (stale-socket probe, bind, listen, owner and mode),
	 * capture files started by the control socket */
	"open", "openat", "connect", "bind", "listen", "umask",
	"chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat", "lchown",
	"mkdir", "mkdirat", "ftruncate",
	/* identity checks (peer credentials are a socket option) */
	"getuid", "geteuid", "getgid", "getegid",
#ifdef VRDMA_SANITIZE
	/* ASan/UBSan/LSan reports and the leak check at exit */
	"clone", "clone3", "ptrace", "wait4", "waitid", "prctl", "getdents", "getdents64",
	"sched_getaffinity", "getrlimit", "prlimit64", "setrlimit", "kill", "getppid",
	"mincore", "uname", "access", "faccessat", "dup", "dup2", "dup3",
	"pipe", "pipe2", "execve", "process_vm_readv", "tkill",
#endif
};

/* An AF_XDP uplink's release at exit (libxdp): it updates and queries the
 * BPF objects it holds (bpf), looks for bpffs (statfs), takes its lock
 * (flock) and, when still privileged, detaches the program over netlink. */
static int sec_allow_afxdp(scmp_filter_ctx ctx)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bpf), 0);

	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(statfs), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(flock), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_NETLINK));
	return rc;
}

int sec_filter_install(bool afxdp)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int rc;

	if (!ctx) {
		fprintf(stderr, "vhost-user-rdma: seccomp: cannot create the filter\n");
		return -1;
	}
	for (size_t i = 0; i < sizeof(sec_allowed) / sizeof(sec_allowed[0]); i++) {
		int nr = seccomp_syscall_resolve_name(sec_allowed[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not a system call of this architecture */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (rc < 0) {
			fprintf(stderr, "vhost-user-rdma: seccomp: %s: %s\n", sec_allowed[i],
				strerror(-rc));
			seccomp_release(ctx);
			return -1;
		}
	}
	/* socket(2): AF_UNIX only (hot-plugged device sockets, the group
	 * lookup's name service); uplinks were opened before the filter */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
			      SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (rc < 0) {
		fprintf(stderr, "vhost-user-rdma: seccomp: socket: %s\n", strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	if (afxdp && (rc = sec_allow_afxdp(ctx)) < 0) {
		fprintf(stderr, "vhost-user-rdma: seccomp: AF_XDP release: %s\n", strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	/* every thread of the process (the loop threads run already) */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc < 0) {
		fprintf(stderr, "vhost-user-rdma: seccomp: thread sync: %s\n", strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		fprintf(stderr, "vhost-user-rdma: seccomp: cannot load the filter: %s\n",
			strerror(-rc));
		return -1;
	}
	return 0;
}
