/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma-run: runs an unmodified verbs program on vrdma devices.
 *
 * It puts the directory of vrdma's libibverbs.so.1 (../lib/vrdma, else
 * ../lib next to this executable) first in LD_LIBRARY_PATH, sets VRDMA_SOCKET
 * to the device socket(s) and execs the command. See usage() for the socket
 * rules (shared with the library: src/verbs/vrdma_socket.h). Unless disabled,
 * it also appends libvrdma-shmalloc.so of that directory to LD_PRELOAD (the
 * shared-heap allocator: zero-copy memory registration, src/shmalloc/shmalloc.h)
 * and libvrdma-devfiles.so of that directory (the /dev and sysfs files of the
 * devices that libraries such as UCX look for, src/devfiles/devfiles.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/vrdma_socket.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vrdma-run [OPTIONS] [--] COMMAND [ARGS...]\n"
		"\n"
		"Runs COMMAND (an unmodified RDMA verbs program such as ibv_rc_pingpong\n"
		"or ib_send_bw) on vrdma devices: vrdma's libibverbs.so.1 and\n"
		"librdmacm.so.1 (found in ../lib/vrdma or ../lib next to this program)\n"
		"come first through LD_LIBRARY_PATH and VRDMA_SOCKET names the\n"
		"vhost-user socket(s) of the device(s).\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH  a device socket; repeat for more devices (device i\n"
		"                     is vrdma<i>, in the order given; no ':' in PATH)\n"
		"  -n, --no-shmalloc  do not preload the shared-heap allocator (see below)\n"
		"  -v, --verbose      print the environment set before running COMMAND\n"
		"  -h, --help         this text\n"
		"\n"
		"Socket when no --socket is given:\n"
		"  1. $VRDMA_SOCKET if set (a ':'-separated list of sockets), else\n"
		"  2. the first existing socket, in sorted order, matching\n"
		"     $VRDMA_SOCKET_DIR/*.sock (VRDMA_SOCKET_DIR defaults to %s), else\n"
		"  3. %s\n"
		"\n"
		"Zero-copy registration: by default libvrdma-shmalloc.so (same directory) is\n"
		"appended to LD_PRELOAD. It serves malloc / calloc / realloc /\n"
		"memalign / posix_memalign / aligned_alloc / valloc / pvalloc requests\n"
		"and anonymous private read-write mmaps of at least VRDMA_SHMALLOC_MIN\n"
		"bytes (default 64k) from one shared memfd heap (reserved range\n"
		"VRDMA_SHMALLOC_HEAP, default 64g), so ibv_reg_mr on them shares the\n"
		"pages with the device without copying them. Smaller requests go to\n"
		"glibc. Other memory (stack, globals, small blocks) is still registered\n"
		"by copying it into shared memory in place. fork() gives the child a\n"
		"private copy of the heap's data (copied at fork time).\n"
		"--no-shmalloc or VRDMA_SHMALLOC=0 in the environment turns it off\n"
		"(every registration then uses the copy path); sanitizer builds of\n"
		"vrdma-run never preload it.\n"
		"\n"
		"Device files: libvrdma-devfiles.so (same directory) is appended to\n"
		"LD_PRELOAD as "
		"well. For the devices of VRDMA_SOCKET only, it makes\n"
		"/dev/infiniband/vrdma<i> look like a uverbs character device to stat\n"
		"and access, and serves /sys/class/infiniband/vrdma<i>/ports/1/gid_attrs/\n"
		"types/<n> (\"RoCE v2\"), which libraries such as UCX check before they\n"
		"use a device. VRDMA_DEVFILES=0 in the environment turns it off.\n"
		"\n"
		"Exit status: that of COMMAND; 127 if COMMAND is not found, 126 if it\n"
		"cannot be run, 2 on a usage error.\n",
		VRDMA_SOCKET_DIR, VRDMA_SOCKET_FALLBACK);
}

/* The directory holding our libibverbs.so.1 into buf: <dir of exe>/../lib/vrdma
 * (installed: a private directory that never shadows the system's
 * libraries), else <dir of exe>/../lib (the build tree). Returns 0 or -errno. */
static int lib_dir(char *buf, size_t size)
{
	static const char *const rel[] = { "../lib/vrdma", "../lib" };
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;
	char *slash;
	int rc = -ENOENT;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		if (!realpath(path, buf) || strlen(buf) >= size)
			continue;
		snprintf(path, sizeof(path), "%s/libibverbs.so.1", buf);
		if (access(path, R_OK) == 0)
			return 0;
		rc = -errno;
	}
	return rc;
}

/* LD_PRELOAD with libdir/name appended (after what is there: a sanitizer
 * runtime must stay first) into *out (malloc'ed). Returns 0, -ENOENT if
 * the library is missing, -ENOMEM. */
static int lib_preload(const char *libdir, const char *name, char **out)
{
	const char *old = getenv("LD_PRELOAD");
	char path[PATH_MAX + 32];
	int n;

	snprintf(path, sizeof(path), "%s/%s", libdir, name);
	if (access(path, R_OK))
		return -ENOENT;
	if (old && strstr(old, path)) /* already there (nested vrdma-run) */
		n = asprintf(out, "%s", old);
	else if (old && *old)
		n = asprintf(out, "%s:%s", old, path);
	else
		n = asprintf(out, "%s", path);
	return n < 0 ? -ENOMEM : 0;
}

/* Appends s to the ':'-separated list in *list (grown with realloc).
 * Returns 0 or -ENOMEM. */
static int list_add(char **list, const char *s)
{
	size_t old = *list ? strlen(*list) : 0;
	char *p = realloc(*list, old + strlen(s) + 2);

	if (!p)
		return -ENOMEM;
	if (old)
		p[old++] = ':';
	strcpy(p + old, s);
	*list = p;
	return 0;
}

/* Whether some socket of the ':'-separated list exists. */
static int any_socket_exists(const char *list)
{
	char *copy = strdup(list), *save = NULL, *p;
	int found = 0;

	for (p = copy ? strtok_r(copy, ":", &save) : NULL; p && !found;
	     p = strtok_r(NULL, ":", &save))
		found = vrdma_socket_exists(p);
	free(copy);
	return found;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "no-shmalloc", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char libdir[PATH_MAX], sock[256];
	char *sockets = NULL, *ldpath, *preload = NULL;
	const char *old;
	int c, ret, verbose = 0, shmalloc = 1;

	/* '+': stop at the first non-option, which is COMMAND. */
	while ((c = getopt_long(argc, argv, "+s:nvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!*optarg || strchr(optarg, ':') || strlen(optarg) >= sizeof(sock)) {
				fprintf(stderr, "vrdma-run: bad socket path '%s'\n", optarg);
				return 2;
			}
			if (list_add(&sockets, optarg)) {
				fprintf(stderr, "vrdma-run: out of memory\n");
				return 2;
			}
			break;
		case 'n':
			shmalloc = 0;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "vrdma-run: no command given\n");
		usage(stderr);
		return 2;
	}

	ret = lib_dir(libdir, sizeof(libdir));
	if (ret) {
		fprintf(stderr, "vrdma-run: no libibverbs.so.1 in ../lib/vrdma or ../lib next to this "
				"program: %s\n", strerror(-ret));
		return 126;
	}
	old = getenv("LD_LIBRARY_PATH");
	if (old && *old)
		ret = asprintf(&ldpath, "%s:%s", libdir, old);
	else
		ret = asprintf(&ldpath, "%s", libdir);
	if (ret < 0 || setenv("LD_LIBRARY_PATH", ldpath, 1)) {
		fprintf(stderr, "vrdma-run: cannot set LD_LIBRARY_PATH\n");
		return 126;
	}

	old = getenv("VRDMA_SHMALLOC");
	if (old && !strcmp(old, "0"))
		shmalloc = 0;
#ifdef VRDMA_SANITIZE
	/* The sanitizer build of the library needs the sanitizer runtime
	 * loaded first, which would break every program not built with it;
	 * and under that runtime the allocator would stay inert anyway. */
	shmalloc = 0;
#endif
	if (shmalloc) {
		ret = lib_preload(libdir, "libvrdma-shmalloc.so", &preload);
		if (ret == -ENOENT) {
			shmalloc = 0; /* not built: registrations use the copy path */
		} else if (ret < 0 || setenv("LD_PRELOAD", preload, 1)) {
			fprintf(stderr, "vrdma-run: cannot set LD_PRELOAD\n");
			return 126;
		}
	}
	/* The device files (src/devfiles): when built, unless VRDMA_DEVFILES=0. */
	old = getenv("VRDMA_DEVFILES");
	if (!old || strcmp(old, "0")) {
		char *more = NULL;

		ret = lib_preload(libdir, "libvrdma-devfiles.so", &more);
		if (ret == 0 && setenv("LD_PRELOAD", more, 1))
			ret = -ENOMEM;
		if (ret == -ENOMEM) {
			fprintf(stderr, "vrdma-run: cannot set LD_PRELOAD\n");
			free(more);
			return 126;
		}
		if (ret == 0) {
			free(preload);
			preload = more;
		}
	}
	if (!shmalloc && setenv("VRDMA_SHMALLOC", "0", 1)) {
		fprintf(stderr, "vrdma-run: cannot set the environment\n");
		return 126;
	}

	if (!sockets) {
		old = getenv(VRDMA_SOCKET_ENV);
		if (old && *old) {
			sockets = strdup(old);
		} else if (vrdma_socket_default(sock, sizeof(sock)) == 0) {
			sockets = strdup(sock);
		}
		if (!sockets) {
			fprintf(stderr, "vrdma-run: no socket path\n");
			return 126;
		}
	}
	if (setenv(VRDMA_SOCKET_ENV, sockets, 1)) {
		fprintf(stderr, "vrdma-run: cannot set the environment\n");
		return 126;
	}
	if (!any_socket_exists(sockets))
		fprintf(stderr, "vrdma-run: warning: no socket at %s (is vhost-user-rdma "
				"running?)\n", sockets);
	if (verbose) {
		fprintf(stderr, "vrdma-run: LD_LIBRARY_PATH=%s\n", ldpath);
		fprintf(stderr, "vrdma-run: VRDMA_SOCKET=%s\n", sockets);
		if (preload)
			fprintf(stderr, "vrdma-run: LD_PRELOAD=%s\n", preload);
		else
			fprintf(stderr, "vrdma-run: VRDMA_SHMALLOC=0\n");
	}
	free(preload);
	free(ldpath);
	free(sockets);

	execvp(argv[optind], argv + optind);
	ret = errno;
	fprintf(stderr, "vrdma-run: %s: %s\n", argv[optind], strerror(ret));
	return ret == ENOENT ? 127 : 126;
}
