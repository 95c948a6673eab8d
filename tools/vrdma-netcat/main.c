// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-netcat: move Ethernet frames through a vhost-user-rdma device with
 * libvrdma, and check every byte.
 *
 *   vrdma-netcat --socket PATH [options] info|send|recv|loopback
 *
 * Frames are generated deterministically from (seed, sequence number), so a
 * receiver regenerates the exact frame it expects and compares it byte for
 * byte, headers included. Frame i has length size(i): min for i = 0, max for
 * i = 1, then spread over [min, max] (--sweep: min + i mod (max - min + 1)). Layout: dst MAC, src MAC, ethertype
 * 0x88b5 (IEEE local experimental), "VRNC", le32 seed, le32 seq, le16 len,
 * then pattern bytes.
 *
 * Flow control (send/recv): the sender keeps at most --window frames ahead
 * of the receiver's acknowledgements (ethertype 0x88b6 frames carrying the
 * next expected sequence number), so the receiver's ring never overflows and
 * no frame may be lost: a missing, extra, reordered or corrupted frame fails
 * the run. Frames of other ethertypes are ignored.
 *
 * Exit status: 0 all frames verified, 1 failure, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vrdma/vrdma.h"

#define ETHERTYPE_DATA 0x88b5
#define ETHERTYPE_ACK 0x88b6
#define HDR_LEN 14
#define DATA_HDR (HDR_LEN + 4 + 4 + 4 + 2)
#define MAX_FRAME 65600
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct opts {
	const char *socket;
	const char *mode;
	const char *ready;
	unsigned count;
	unsigned min, max;
	unsigned window;
	uint32_t seed;
	int timeout_ms;
	bool have_dst, quiet, sweep;
	uint8_t dst[6];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }

static unsigned frame_size(const struct opts *o, uint32_t seq)
{
	unsigned span = o->max - o->min + 1;

	if (o->sweep)
		return o->min + seq % span;
	if (seq == 0)
		return o->min;
	if (seq == 1)
		return o->max;
	return o->min + (unsigned)(((uint64_t)seq * 2654435761u) % span);
}

/* Build frame seq; returns its length. */
static unsigned frame_build(const struct opts *o, uint8_t *f, const uint8_t dst[6],
			    const uint8_t src[6], uint32_t seq)
{
	unsigned len = frame_size(o, seq);
	uint64_t x = ((uint64_t)o->seed << 32 | seq) * 0x9e3779b97f4a7c15ull + 1;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = ETHERTYPE_DATA >> 8;
	f[13] = ETHERTYPE_DATA & 0xff;
	memcpy(f + 14, "VRNC", 4);
	put32(f + 18, o->seed);
	put32(f + 22, seq);
	put16(f + 26, (uint16_t)len);
	for (unsigned i = DATA_HDR; i < len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(f + i, &x, MIN(8u, len - i));
	}
	return len;
}

static bool is_type(const uint8_t *f, ssize_t n, uint16_t type)
{
	return n >= HDR_LEN && f[12] == type >> 8 && f[13] == (type & 0xff);
}

/* Send with back-pressure. Returns 0 or -errno. */
static int send_frame(struct vrdma_dev *d, const uint8_t *f, size_t len, int timeout_ms)
{
	int rc;

	while ((rc = vrdma_net_send(d, f, len)) == -EAGAIN) {
		rc = vrdma_net_wait(d, VRDMA_WAIT_TX, timeout_ms);
		if (rc == 0)
			return -ETIMEDOUT;
		if (rc < 0)
			return rc;
	}
	return rc;
}

/* Receive one frame, waiting up to timeout_ms. Returns its length or -errno. */
static ssize_t recv_frame(struct vrdma_dev *d, uint8_t *buf, size_t cap, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		ssize_t n = vrdma_net_recv(d, buf, cap);
		uint64_t now;
		int rc;

		if (n != -EAGAIN)
			return n;
		now = now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		rc = vrdma_net_wait(d, VRDMA_WAIT_RX, (int)(deadline - now));
		if (rc < 0)
			return rc;
	}
}

static void send_ack(struct vrdma_dev *d, const uint8_t dst[6], const uint8_t src[6],
		     uint32_t next, int timeout_ms)
{
	uint8_t a[60] = { 0 };

	memcpy(a, dst, 6);
	memcpy(a + 6, src, 6);
	a[12] = ETHERTYPE_ACK >> 8;
	a[13] = ETHERTYPE_ACK & 0xff;
	memcpy(a + 14, "VRNA", 4);
	put32(a + 18, next);
	send_frame(d, a, sizeof(a), timeout_ms);
}

static int do_send(struct vrdma_dev *d, const struct opts *o, const uint8_t mac[6])
{
	static uint8_t f[MAX_FRAME], r[MAX_FRAME];
	uint32_t next = 0, acked = 0;
	uint64_t last_progress = now_ms();

	if (!o->have_dst) {
		fprintf(stderr, "vrdma-netcat: send needs --dst MAC\n");
		return 2;
	}
	while (acked < o->count) {
		/* Fill the window. */
		while (next < o->count && next - acked < o->window) {
			unsigned len = frame_build(o, f, o->dst, mac, next);
			int rc = send_frame(d, f, len, o->timeout_ms);

			if (rc < 0) {
				fprintf(stderr, "vrdma-netcat: send frame %u: %s\n", next,
					strerror(-rc));
				return 1;
			}
			next++;
		}
		/* Wait for an acknowledgement. */
		{
			ssize_t n = recv_frame(d, r, sizeof(r), 100);

			if (n == -ETIMEDOUT) {
				if (now_ms() - last_progress > (uint64_t)o->timeout_ms) {
					fprintf(stderr, "vrdma-netcat: no ack after frame %u "
						"(acked %u)\n", next, acked);
					return 1;
				}
				continue;
			}
			if (n < 0) {
				fprintf(stderr, "vrdma-netcat: receive: %s\n", strerror((int)-n));
				return 1;
			}
			if (!is_type(r, n, ETHERTYPE_ACK) || n < 22 || memcmp(r + 14, "VRNA", 4))
				continue;
			if (get32(r + 18) > acked && get32(r + 18) <= next) {
				acked = get32(r + 18);
				last_progress = now_ms();
			}
		}
	}
	if (!o->quiet)
		printf("sent %u frames, all acknowledged\n", o->count);
	return 0;
}

static int do_recv(struct vrdma_dev *d, const struct opts *o, const uint8_t mac[6])
{
	static uint8_t f[MAX_FRAME], want[MAX_FRAME];
	uint32_t seq = 0, since_ack = 0;
	uint64_t bytes = 0;
	uint8_t peer[6];

	while (seq < o->count) {
		ssize_t n = recv_frame(d, f, sizeof(f), o->timeout_ms);
		unsigned len;

		if (n < 0) {
			fprintf(stderr, "vrdma-netcat: waiting for frame %u: %s\n", seq,
				strerror((int)-n));
			return 1;
		}
		if (!is_type(f, n, ETHERTYPE_DATA))
			continue;
		if (n < DATA_HDR || memcmp(f + 14, "VRNC", 4) || get32(f + 18) != o->seed) {
			fprintf(stderr, "vrdma-netcat: frame %u: foreign or corrupt header\n", seq);
			return 1;
		}
		if (get32(f + 22) != seq) {
			fprintf(stderr, "vrdma-netcat: expected frame %u, got %u\n", seq,
				get32(f + 22));
			return 1;
		}
		memcpy(peer, f + 6, 6);
		len = frame_build(o, want, mac, peer, seq);
		if ((size_t)n != len || memcmp(f, want, len)) {
			size_t i = 0;

			while (i < len && i < (size_t)n && f[i] == want[i])
				i++;
			fprintf(stderr, "vrdma-netcat: frame %u (%u bytes, got %zd) differs at byte %zu\n",
				seq, len, n, i);
			return 1;
		}
		bytes += len;
		seq++;
		if (++since_ack >= o->window / 2 || seq == o->count) {
			send_ack(d, peer, mac, seq, o->timeout_ms);
			since_ack = 0;
		}
	}
	if (!o->quiet)
		printf("received %u frames (%llu bytes), all verified\n", o->count,
		       (unsigned long long)bytes);
	return 0;
}

static int do_loopback(struct vrdma_dev *d, const struct opts *o, const uint8_t mac[6])
{
	static uint8_t f[MAX_FRAME], r[MAX_FRAME];
	uint32_t seq;

	for (seq = 0; seq < o->count; seq++) {
		unsigned len = frame_build(o, f, mac, mac, seq);
		ssize_t n;
		int rc = send_frame(d, f, len, o->timeout_ms);

		if (rc < 0) {
			fprintf(stderr, "vrdma-netcat: send frame %u: %s\n", seq, strerror(-rc));
			return 1;
		}
		do {
			n = recv_frame(d, r, sizeof(r), o->timeout_ms);
		} while (n >= 0 && !is_type(r, n, ETHERTYPE_DATA));
		if (n < 0) {
			fprintf(stderr, "vrdma-netcat: frame %u did not come back: %s\n", seq,
				strerror((int)-n));
			return 1;
		}
		if ((size_t)n != len || memcmp(r, f, len)) {
			fprintf(stderr, "vrdma-netcat: frame %u came back different (%zd bytes, sent %u)\n",
				seq, n, len);
			return 1;
		}
	}
	if (!o->quiet)
		printf("looped back %u frames, all verified\n", o->count);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vrdma-netcat --socket PATH [options] info|send|recv|loopback\n"
		"\n"
		"  info       print the device's MAC, MTU, features and RoCE limits\n"
		"  send       send --count frames to --dst, flow-controlled by the receiver's acks\n"
		"  recv       receive --count frames, verify each byte, acknowledge\n"
		"  loopback   send --count frames to our own MAC and verify what comes back\n"
		"\n"
		"options:\n"
		"  --socket PATH      the device's vhost-user socket (required)\n"
		"  --count N          frames (default 1000)\n"
		"  --min N, --max N   frame sizes in bytes (default 60 .. MTU+14)\n"
		"  --dst MAC          destination (send)\n"
		"  --seed N           pattern seed, the same on both sides (default 1)\n"
		"  --window N         frames in flight before an ack is needed (default 64)\n"
		"  --ready FILE       create FILE once the device is up (recv: before the first frame)\n"
		"  --timeout-ms N     give up after N ms without progress (default 10000)\n"
		"  --ring N           virtqueue size (default 256)\n"
		"  --sweep            sizes min, min+1, ..., max, min, ... instead of spread\n"
		"  -q, --quiet        no summary line\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "min", required_argument, NULL, 'm' },
		{ "max", required_argument, NULL, 'M' },
		{ "dst", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "window", required_argument, NULL, 'w' },
		{ "ready", required_argument, NULL, 'r' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "ring", required_argument, NULL, 'R' },
		{ "sweep", no_argument, NULL, 'W' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .count = 1000, .window = 64, .seed = 1, .timeout_ms = 10000 };
	struct vrdma_dev_opts dopts = { 0 };
	struct vrdma_dev *d;
	uint8_t mac[6];
	unsigned maxf;
	int c, rc;

	while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
		char *end = NULL;
		unsigned long v = 0;

		if (optarg && c != 's' && c != 'd' && c != 'r') {
			errno = 0;
			v = strtoul(optarg, &end, 0);
			if (errno || !*optarg || *end || v > 0x7fffffff) {
				fprintf(stderr, "vrdma-netcat: bad number '%s'\n", optarg);
				return 2;
			}
		}
		switch (c) {
		case 's': o.socket = optarg; break;
		case 'c': o.count = (unsigned)v; break;
		case 'm': o.min = (unsigned)v; break;
		case 'M': o.max = (unsigned)v; break;
		case 'S': o.seed = (uint32_t)v; break;
		case 'w': o.window = (unsigned)v; break;
		case 'r': o.ready = optarg; break;
		case 't': o.timeout_ms = (int)v; break;
		case 'R': dopts.ring_size = (uint32_t)v; break;
		case 'q': o.quiet = true; break;
		case 'W': o.sweep = true; break;
		case 'd':
			if (parse_mac(optarg, o.dst) < 0) {
				fprintf(stderr, "vrdma-netcat: bad MAC '%s'\n", optarg);
				return 2;
			}
			o.have_dst = true;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !o.socket) {
		usage(stderr);
		return 2;
	}
	o.mode = argv[optind];
	if (strcmp(o.mode, "info") && strcmp(o.mode, "send") && strcmp(o.mode, "recv") &&
	    strcmp(o.mode, "loopback")) {
		usage(stderr);
		return 2;
	}
	if (o.window < 2)
		o.window = 2;

	d = vrdma_dev_open(o.socket, &dopts);
	if (!d) {
		fprintf(stderr, "vrdma-netcat: %s: %s\n", o.socket, strerror(errno));
		return 1;
	}
	vrdma_dev_mac(d, mac);
	maxf = vrdma_dev_mtu(d) + 14u;
	if (!o.min)
		o.min = 60;
	if (!o.max)
		o.max = maxf;
	if (o.min < DATA_HDR || o.max > maxf || o.min > o.max) {
		fprintf(stderr, "vrdma-netcat: sizes must be %d..%u (min <= max)\n", DATA_HDR, maxf);
		vrdma_dev_close(d);
		return 2;
	}
	if (o.window > 128) /* keep well below the receive ring */
		o.window = 128;
	if (o.ready) {
		FILE *f = fopen(o.ready, "w");

		if (f)
			fclose(f);
	}

	if (!strcmp(o.mode, "info")) {
		printf("mac %02x:%02x:%02x:%02x:%02x:%02x\nmtu %u\nfeatures 0x%llx\n"
		       "protocol_features 0x%llx\nmax_rdma_qps %u\nmax_rdma_cqs %u\nlink %s\n",
		       mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], vrdma_dev_mtu(d),
		       (unsigned long long)vrdma_dev_features(d),
		       (unsigned long long)vrdma_dev_protocol_features(d),
		       vrdma_dev_max_rdma_qps(d), vrdma_dev_max_rdma_cqs(d),
		       vrdma_dev_link_up(d) == 1 ? "up" : "down");
		printf("model %s\n", vrdma_dev_is_virtio_rdma(d) ? "virtio-rdma" : "virtio-net");
		rc = 0;
	} else if (!strcmp(o.mode, "send")) {
		rc = do_send(d, &o, mac);
	} else if (!strcmp(o.mode, "recv")) {
		rc = do_recv(d, &o, mac);
	} else {
		rc = do_loopback(d, &o, mac);
	}
	/* Let the last frames (the final ack) leave before the reset. */
	vrdma_net_flush(d, o.timeout_ms);
	vrdma_dev_close(d);
	return rc;
}
