/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdmactl: look at and change a running vhost-user-rdma through its control
 * socket (protocol: src/mgmt/ctl.h). The words after the options form one
 * request; the answer is copied to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mgmt/conf.h"
#include "mgmt/ctl.h"

#define DEFAULT_CONTROL MCONF_SOCKET_DIR "/" MCONF_CONTROL_NAME

static void usage(FILE *f)
{
	fprintf(f,
"usage: vrdmactl [options] [COMMAND]\n"
"\n"
"Shows and changes a running vhost-user-rdma through its control socket.\n"
"\n"
"Commands:\n"
"  dev [show [NAME]]                   devices (default command)\n"
"  res [show] [qp|cq|mr|pd|srq] [dev NAME]\n"
"                                      resources, like rdma resource show\n"
"  stat [show] [dev NAME]              device, port and per-QP counters\n"
"  dev add NAME [KEY=VALUE,...]        add a device (keys of --device; the socket\n"
"                                      defaults to <socket-dir>/NAME.sock)\n"
"  dev del NAME                        remove a device\n"
"  capture start NAME FILE             capture NAME's frames to a pcap FILE\n"
"  capture stop NAME\n"
"  reload                              re-read the daemon's config file\n"
"\n"
"Options:\n"
"  -s, --socket PATH   control socket (default $VRDMA_CONTROL, else %s)\n"
"  -j, --json          JSON output\n"
"  -w, --watch SEC     repeat every SEC seconds (0.1..3600)\n"
"  -c, --count N       with --watch: stop after N answers (default: forever)\n"
"  -h, --help          this text\n"
"\n"
"Exit status: 0 success, 1 the daemon refused or failed the request, 2 usage\n"
"error, 3 no daemon at the socket.\n", DEFAULT_CONTROL);
}

/* Send req, copy the answer to stdout. Returns the exit status. */
static int ask(const char *path, const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[65536];
	bool first = true, error = false;
	size_t reqlen = strlen(req);
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vrdmactl: %s: %s (is vhost-user-rdma running with --control?)\n",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 3;
	}
	if (send(fd, req, reqlen, MSG_NOSIGNAL) != (ssize_t)reqlen) {
		fprintf(stderr, "vrdmactl: %s: %s\n", path, strerror(errno));
		close(fd);
		return 3;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (first && n >= 7 && !memcmp(buf, "error: ", 7))
			error = true;
		first = false;
		if (fwrite(buf, 1, (size_t)n, error ? stderr : stdout) != (size_t)n)
			break;
	}
	close(fd);
	fflush(stdout);
	return error ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = getenv("VRDMA_CONTROL");
	char req[CTL_LINE_MAX + 2];
	struct ctl_req parsed;
	char err[256];
	double watch = 0;
	long count = 0;
	bool json = false;
	size_t len = 0;
	int c, rc;

	if (!path || !*path)
		path = DEFAULT_CONTROL;
	while ((c = getopt_long(argc, argv, "+s:jw:c:h", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'w':
			watch = strtod(optarg, &end);
			if (*end || !(watch >= 0.1 && watch <= 3600)) {
				fprintf(stderr, "vrdmactl: --watch '%s': expected 0.1..3600 seconds\n", optarg);
				return 2;
			}
			break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				fprintf(stderr, "vrdmactl: --count '%s': expected a positive number\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr, "vrdmactl: socket path too long\n");
		return 2;
	}
	req[0] = '\0';
	if (json)
		len = (size_t)snprintf(req, sizeof(req), "json ");
	if (optind == argc)
		len += (size_t)snprintf(req + len, sizeof(req) - len, "dev show");
	for (int i = optind; i < argc; i++) {
		int w = snprintf(req + len, sizeof(req) - len, "%s%s", i > optind ? " " : "", argv[i]);

		if (w < 0 || (size_t)w >= sizeof(req) - len) {
			fprintf(stderr, "vrdmactl: request too long\n");
			return 2;
		}
		len += (size_t)w;
	}
	/* Check locally first: a typo gets the usage, not a daemon error. */
	if (ctl_parse(req, len, &parsed, err, sizeof(err)) < 0) {
		fprintf(stderr, "vrdmactl: %s\n", err);
		usage(stderr);
		return 2;
	}
	req[len++] = '\n';
	req[len] = '\0';
	if (watch == 0)
		return ask(path, req);
	for (long i = 0;; i++) {
		struct timespec ts = { .tv_sec = (time_t)watch,
				       .tv_nsec = (long)((watch - (double)(time_t)watch) * 1e9) };

		if (isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		else if (i)
			putchar('\n');
		rc = ask(path, req);
		if (rc >= 2 || (count && i + 1 >= count))
			return rc;
		nanosleep(&ts, NULL);
	}
}
