// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: a vhost-user front-end that misbehaves on purpose (see evil.h).
 *
 *   vrdma-evil list                      every attack: NAME EXPECT
 *   vrdma-evil --socket PATH NAME...     run attacks (each on a new connection)
 *
 * Exit status: 0 every attack got the expected reaction, 1 some did not,
 * 2 usage error, 3 an attack could not be set up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evil.h"

static const char *const expect_names[] = { "closed", "alive", "eof", "broken", "survive" };

void evil_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void evil_dbg(const struct evil_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int evil_verdict(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		evil_say("verdict ok");
		return EVIL_OK;
	}
	printf("verdict fail: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return EVIL_FAIL;
}

static const struct evil_attack *find_attack(const char *name)
{
	for (unsigned i = 0; i < evil_msg_nattacks; i++)
		if (!strcmp(evil_msg_attacks[i].name, name))
			return &evil_msg_attacks[i];
	for (unsigned i = 0; i < evil_ring_nattacks; i++)
		if (!strcmp(evil_ring_attacks[i].name, name))
			return &evil_ring_attacks[i];
	for (unsigned i = 0; i < evil_ext_nattacks; i++)
		if (!strcmp(evil_ext_attacks[i].name, name))
			return &evil_ext_attacks[i];
	for (unsigned i = 0; i < evil_tenant_nattacks; i++)
		if (!strcmp(evil_tenant_attacks[i].name, name))
			return &evil_tenant_attacks[i];
	for (unsigned i = 0; i < evil_tenant_rdma_nattacks; i++)
		if (!strcmp(evil_tenant_rdma_attacks[i].name, name))
			return &evil_tenant_rdma_attacks[i];
	return NULL;
}

static void list(void)
{
	for (unsigned i = 0; i < evil_msg_nattacks; i++)
		printf("%s %s\n", evil_msg_attacks[i].name,
		       expect_names[evil_msg_attacks[i].expect]);
	for (unsigned i = 0; i < evil_ring_nattacks; i++)
		printf("%s %s\n", evil_ring_attacks[i].name,
		       expect_names[evil_ring_attacks[i].expect]);
	for (unsigned i = 0; i < evil_ext_nattacks; i++)
		printf("%s %s\n", evil_ext_attacks[i].name,
		       expect_names[evil_ext_attacks[i].expect]);
	for (unsigned i = 0; i < evil_tenant_nattacks; i++)
		printf("%s %s\n", evil_tenant_attacks[i].name,
		       expect_names[evil_tenant_attacks[i].expect]);
	for (unsigned i = 0; i < evil_tenant_rdma_nattacks; i++)
		printf("%s %s\n", evil_tenant_rdma_attacks[i].name,
		       expect_names[evil_tenant_rdma_attacks[i].expect]);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vrdma-evil list\n"
		"       vrdma-evil --socket PATH [options] ATTACK...\n"
		"\n"
		"A vhost-user front-end that misbehaves on purpose, one attack per\n"
		"connection, and checks how the back-end reacts (see 'list').\n"
		"\n"
		"options:\n"
		"  --socket PATH      the device's vhost-user socket\n"
		"  --timeout-ms N     bound on every wait for the back-end (default 10000)\n"
		"  --rings N          rings the device has (default: from its config space)\n"
		"  --model virtio-rdma  the standalone virtio-rdma device: the ctrl.* ring\n"
		"                     attacks hit its control queue (ring 0)\n"
		"  --victim-mac MAC   another device's MAC (tenant_* attacks)\n"
		"  --victim-ip IP     another device's IPv4 address (tenant_* attacks)\n"
		"  --victim-socket PATH  a RoCE device whose RDMA traffic tenant_rc_* attack\n"
		"  -v, --verbose      diagnostics on stderr\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "rings", required_argument, NULL, 'r' },
		{ "model", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "victim-mac", required_argument, NULL, 'm' },
		{ "victim-ip", required_argument, NULL, 'i' },
		{ "victim-socket", required_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct evil_opts o = { .timeout_ms = 10000 };
	int c, worst = 0;

	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 's':
			o.socket = optarg;
			break;
		case 't':
		case 'r':
			errno = 0;
			v = strtoul(optarg, &end, 0);
			if (errno || !*optarg || *end || v == 0 || v > 0x7fffffff) {
				fprintf(stderr, "vrdma-evil: bad number '%s'\n", optarg);
				return 2;
			}
			if (c == 't')
				o.timeout_ms = (int)v;
			else
				o.rings = (uint32_t)v;
			break;
		case 'M':
			if (strcmp(optarg, "virtio-rdma") && strcmp(optarg, "virtio-net")) {
				fprintf(stderr, "vrdma-evil: model '%s': virtio-net or virtio-rdma\n",
					optarg);
				return 2;
			}
			o.rdma_dev = !strcmp(optarg, "virtio-rdma");
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'm': {
			unsigned b[6];
			char tail;

			if (sscanf(optarg, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
				   &b[4], &b[5], &tail) != 6) {
				fprintf(stderr, "vrdma-evil: bad MAC '%s'\n", optarg);
				return 2;
			}
			for (int k = 0; k < 6; k++)
				o.victim_mac[k] = (uint8_t)b[k];
			o.has_victim_mac = true;
			break;
		}
		case 'i':
			if (inet_pton(AF_INET, optarg, o.victim_ip) != 1) {
				fprintf(stderr, "vrdma-evil: bad IPv4 address '%s'\n", optarg);
				return 2;
			}
			o.has_victim_ip = true;
			break;
		case 'V':
			o.victim_socket = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		list();
		return 0;
	}
	if (!o.socket || optind == argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (!find_attack(argv[i])) {
			fprintf(stderr, "vrdma-evil: unknown attack '%s' (see 'vrdma-evil list')\n",
				argv[i]);
			return 2;
		}
	signal(SIGPIPE, SIG_IGN);
	/* Attacks on ring indexes need the device's ring count, learned on a
	 * connection of its own before any attack connects (the back-end
	 * serves one front-end at a time). */
	for (int i = optind; i < argc && !o.rings; i++)
		if (!strncmp(argv[i], "ring_index", 10))
			o.rings = evil_device_rings(&o);
	for (int i = optind; i < argc; i++) {
		const struct evil_attack *a = find_attack(argv[i]);
		int rc;

		evil_say("attack %s: %s", a->name, a->what);
		rc = a->run(&o, a);
		if (rc == EVIL_SETUP)
			evil_say("verdict setup-failed");
		if (rc > worst)
			worst = rc;
	}
	return worst;
}
