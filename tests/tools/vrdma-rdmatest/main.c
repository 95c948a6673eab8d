// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest: tests of libvrdma's RDMA API (include/vrdma/vrdma_rdma.h)
 * and of the device's RoCE control commands, against a running
 * vhost-user-rdma daemon.
 *
 *   vrdma-rdmatest [options] GROUP...
 *
 * Groups:
 *   ctrl     every API call's success and error paths on device A (driver-side
 *            checks must not send anything; device refusals map to errnos)
 *   raw      every RoCE command's success and error paths as raw control
 *            commands on device B (VIRTIO_NET_ERR, no partial state)
 *   qpstate  the QP state machine of RC, UC, UD through modify / query
 *   limits   create every resource up to its limit, then one more (driver
 *            side on A, device side on B); --qps/--cqs give the daemon's
 *   soak     --count cycles of PD + MR + CQ + QP + AH create / destroy; the
 *            daemon's (--pid) fd count must stay exact and its VmRSS within
 *            --rss-kb
 *   data     SEND/RECV, WRITE, READ, UD between A and B and loopback
 *   ext      the extensions (SRQ, atomics, fast registration, windows, CQ / QP
 *            resize, async events) between A and B
 *   extoff   A is a device without VIRTIO_NET_F_ROCE_EXT: extension calls
 *            fail with EOPNOTSUPP and send nothing
 *
 * Output: "ok PREFIX.NAME" / "not ok PREFIX.NAME" / "skip PREFIX.NAME: why"
 * lines (tests/run.sh counts them). Exit status 0 if every test passed, 1
 * otherwise, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

int rt_fails;
const char *rt_skip;

void rt_report(struct rt_ctx *c, const char *fn)
{
	const char *name = strncmp(fn, "t_", 2) ? fn : fn + 2;

	if (rt_fails) {
		c->failed_tests++;
		printf("not ok %s.%s\n", c->prefix, name);
	} else if (rt_skip) {
		printf("skip %s.%s: %s\n", c->prefix, name, rt_skip);
	} else {
		printf("ok %s.%s\n", c->prefix, name);
	}
	fflush(stdout);
}

bool rt_selected(const char *fn)
{
	const char *only = getenv("RT_ONLY");

	return !only || !*only || strstr(fn, only);
}

int rt_raw(struct vrdma_dev *dev, uint8_t cmd, const void *in, size_t in_len, void *out,
	   size_t out_len)
{
	uint8_t ack = 0xff;
	int rc;

	rc = vrdma_ctrl_cmd(dev, VIRTIO_NET_CTRL_ROCE, cmd, in, in_len, out, out_len, &ack);
	return rc < 0 ? rc : ack;
}

uint64_t rt_cmds(struct vrdma_dev *dev)
{
	struct vrdma_rdma_stats st;

	vrdma_rdma_get_stats(dev, &st);
	return st.cmds;
}

struct vrdma_dev *rt_open(const char *sock)
{
	struct vrdma_dev_opts o;
	struct vrdma_dev *d;

	memset(&o, 0, sizeof(o));
	o.timeout_ms = 20000;
	d = vrdma_dev_open(sock, &o);
	if (!d)
		printf("# open %s: %s\n", sock, strerror(errno));
	return d;
}

void rt_gid_linklocal(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 2;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

void rt_gid_ipv4(const uint8_t a[4], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, a, 4);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vrdma-rdmatest --socket A [--socket B] [options] GROUP...\n"
		"groups: ctrl raw qpstate limits soak data ext extoff\n"
		"options:\n"
		"  --socket PATH   device socket (first: A, second: B)\n"
		"  --ip ADDR       IPv4 address of device A (GID 1); --ip-b for B\n"
		"  --prefix NAME   test name prefix (default rdmatest)\n"
		"  --pid PID       the daemon (soak)\n"
		"  --count N       soak cycles / data messages (default 10000 / 1000)\n"
		"  --rss-kb N      soak: allowed VmRSS growth in KiB (default 2048)\n"
		"  --qps N --cqs N limits: the daemon's max_rdma_qps / max_rdma_cqs\n"
		"  --events        data: wait for completions with events\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "ip", required_argument, NULL, 'i' },
		{ "ip-b", required_argument, NULL, 'I' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "pid", required_argument, NULL, 'P' },
		{ "count", required_argument, NULL, 'n' },
		{ "rss-kb", required_argument, NULL, 'r' },
		{ "qps", required_argument, NULL, 'q' },
		{ "cqs", required_argument, NULL, 'c' },
		{ "events", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rt_ctx c;
	int nsock = 0, o, i;

	memset(&c, 0, sizeof(c));
	c.prefix = "rdmatest";
	c.rss_bound_kb = 2048;
	while ((o = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			if (nsock == 2) {
				usage(stderr);
				return 2;
			}
			c.sock[nsock++] = optarg;
			break;
		case 'i':
		case 'I':
			if (inet_pton(AF_INET, optarg, o == 'i' ? c.ip : c.ip_b) != 1) {
				usage(stderr);
				return 2;
			}
			if (o == 'i')
				c.has_ip = true;
			else
				c.has_ip_b = true;
			break;
		case 'p':
			c.prefix = optarg;
			break;
		case 'P':
			c.pid = atoi(optarg);
			break;
		case 'n':
			c.count = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			c.rss_bound_kb = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			c.exp_qps = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			c.exp_cqs = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'e':
			c.event_mode = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!nsock || optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = optind; i < argc; i++) {
		const char *g = argv[i];

		if (!strcmp(g, "ctrl"))
			rt_ctrl_api(&c);
		else if (!strcmp(g, "raw"))
			rt_ctrl_raw(&c);
		else if (!strcmp(g, "qpstate"))
			rt_qp_states(&c);
		else if (!strcmp(g, "limits"))
			rt_limits(&c);
		else if (!strcmp(g, "soak"))
			rt_soak(&c);
		else if (!strcmp(g, "data"))
			rt_data(&c);
		else if (!strcmp(g, "ext"))
			rt_ext(&c);
		else if (!strcmp(g, "extoff"))
			rt_extoff(&c);
		else {
			fprintf(stderr, "vrdma-rdmatest: unknown group %s\n", g);
			return 2;
		}
	}
	for (i = 0; i < 2; i++)
		vrdma_dev_close(c.dev[i]);
	return c.failed_tests ? 1 : 0;
}
