// SPDX-License-Identifier: BSD-3-Clause
/*
 * uplink_frames: push raw Ethernet frames through a vrdma device's virtio-net
 * queues (libvrdma) as fast as they go, or count the ones that arrive: the
 * vrdma side of bench/uplink.sh, whose reference is bench/afxdp_raw.c.
 *
 *   uplink_frames tx --socket PATH --dst MAC -n N -s SIZE
 *   uplink_frames rx --socket PATH [-n N] [-w IDLE_MS] [-T MAX_S] [-r READY]
 *
 * tx queues N frames of SIZE bytes (ethertype 0x88b5) in bursts of BURST
 * (vrdma_net_send_burst: one notification per burst), waiting only when the
 * transmit ring is full; no flow control, so what the path cannot carry is
 * dropped somewhere and shows as rx_frames < tx_frames. rx counts frames of
 * that ethertype until N arrived, IDLE_MS (1000) passed without one after the
 * first, or MAX_S (60) in all; READY is created once the device is up. Output
 * as bench/afxdp_raw.c: tx_frames, tx_seconds, tx_fps, tx_cpu_seconds;
 * rx_frames, rx_seconds (first to last frame), rx_fps, rx_cpu_seconds.
 *
 * Build (bench/uplink.sh does it):
 *   gcc -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude bench/uplink_frames.c \
 *       -Lbuild/lib -lvrdma -Wl,-rpath,build/lib -o build/bench/uplink_frames
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "vrdma/vrdma.h"

#define BURST 32
#define ETHERTYPE_BENCH 0x88b5

/* CPU time this process used so far (user + system), in seconds. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

static int do_tx(struct vrdma_dev *d, const uint8_t dst[6], unsigned long n, unsigned size)
{
	static uint8_t f[BURST][2048];
	const void *fp[BURST];
	size_t len[BURST];
	uint8_t mac[6];
	unsigned long sent = 0, full = 0;
	double t0, t1, c0, c1;

	vrdma_dev_mac(d, mac);
	for (unsigned i = 0; i < BURST; i++) {
		memcpy(f[i], dst, 6);
		memcpy(f[i] + 6, mac, 6);
		f[i][12] = ETHERTYPE_BENCH >> 8;
		f[i][13] = ETHERTYPE_BENCH & 0xff;
		for (unsigned k = 14; k < size; k++)
			f[i][k] = (uint8_t)(k + i);
		fp[i] = f[i];
		len[i] = size;
	}
	t0 = now_s();
	c0 = cpu_s();
	while (sent < n) {
		unsigned want = n - sent < BURST ? (unsigned)(n - sent) : BURST;
		int r = vrdma_net_send_burst(d, fp, len, want);

		if (r == -EAGAIN || (r >= 0 && (unsigned)r < want)) {
			full++;
			if (vrdma_net_wait(d, VRDMA_WAIT_TX, 10000) <= 0) {
				fprintf(stderr, "uplink_frames: transmit ring stuck\n");
				return 1;
			}
		} else if (r < 0) {
			fprintf(stderr, "uplink_frames: send: %s\n", strerror(-r));
			return 1;
		}
		if (r > 0)
			sent += (unsigned)r;
	}
	vrdma_net_flush(d, 10000);
	t1 = now_s();
	c1 = cpu_s();
	printf("tx_cpu_seconds %.3f\n", c1 - c0);
	printf("tx_frames %lu\ntx_ring_full %lu\ntx_seconds %.6f\ntx_fps %.0f\n", sent, full,
	       t1 - t0, (double)sent / (t1 - t0));
	return 0;
}

static int do_rx(struct vrdma_dev *d, unsigned long n, int idle_ms, int max_s)
{
	static uint8_t f[65600];
	unsigned long got = 0, other = 0;
	double first = 0, last = 0, c0 = 0, start = now_s();

	while (got < n) {
		ssize_t r = vrdma_net_recv(d, f, sizeof(f));

		if (r == -EAGAIN) {
			double t;

			if (vrdma_net_wait(d, VRDMA_WAIT_RX, 50) < 0)
				break;
			t = now_s();
			if ((got && (t - last) * 1000 > idle_ms) || t - start > max_s)
				break;
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "uplink_frames: receive: %s\n", strerror((int)-r));
			return 1;
		}
		if (r < 14 || f[12] != (ETHERTYPE_BENCH >> 8) || f[13] != (ETHERTYPE_BENCH & 0xff)) {
			other++;
			continue;
		}
		got++;
		last = now_s();
		if (!first) {
			first = last;
			c0 = cpu_s();
		}
	}
	printf("rx_cpu_seconds %.3f\n", first ? cpu_s() - c0 : 0.0);
	printf("rx_frames %lu\nrx_other %lu\nrx_seconds %.6f\nrx_fps %.0f\n", got, other,
	       last - first, last > first ? (double)got / (last - first) : 0.0);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: uplink_frames tx|rx --socket PATH [--dst MAC] [-n N] [-s SIZE]\n"
			"       [-w IDLE_MS] [-T MAX_S] [-r READY_FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "dst", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *ready = NULL;
	unsigned long n = 1000000;
	unsigned size = 60;
	int idle_ms = 1000, max_s = 60, c, rc;
	bool tx, have_dst = false;
	uint8_t dst[6];
	struct vrdma_dev *d;

	if (argc < 2 || (strcmp(argv[1], "tx") && strcmp(argv[1], "rx")))
		usage();
	tx = !strcmp(argv[1], "tx");
	optind = 2;
	while ((c = getopt_long(argc, argv, "n:s:w:T:r:", lo, NULL)) != -1) {
		switch (c) {
		case 'S': sock = optarg; break;
		case 'd':
			if (parse_mac(optarg, dst) < 0)
				usage();
			have_dst = true;
			break;
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 's': size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': idle_ms = atoi(optarg); break;
		case 'T': max_s = atoi(optarg); break;
		case 'r': ready = optarg; break;
		default: usage();
		}
	}
	if (!sock || (tx && !have_dst) || size < 60 || size > 1514 || !n)
		usage();
	d = vrdma_dev_open(sock, NULL);
	if (!d) {
		fprintf(stderr, "uplink_frames: %s: %s\n", sock, strerror(errno));
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (f)
			fclose(f);
	}
	rc = tx ? do_tx(d, dst, n, size) : do_rx(d, n, idle_ms, max_s);
	vrdma_dev_close(d);
	return rc;
}
