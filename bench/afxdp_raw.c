// SPDX-License-Identifier: BSD-3-Clause
/*
 * afxdp_raw: the raw frame rate of one host interface pair (a veth pair),
 * without vrdma: the reference bench/uplink.sh compares the uplinks against.
 *
 *   afxdp_raw rx -i IF [-m MODE] [-n N] [-w IDLE_MS] [-T MAX_S] [-r READY]
 *   afxdp_raw tx -i IF [-m MODE] -n N -s SIZE
 *
 * MODE: generic (AF_XDP, libxdp's program in generic/SKB mode, copy mode),
 * native (AF_XDP, driver mode, copy mode; veth has it), packet (AF_PACKET:
 * sendmmsg / recvmmsg in batches of BATCH, like the AF_PACKET uplink).
 *
 * tx sends N frames of SIZE bytes (ethertype 0x88b5, broadcast destination)
 * as fast as the socket takes them: AF_XDP frames are written into the UMEM
 * once, then only descriptors move (no copy per frame in user space).
 * rx counts frames of that ethertype until N arrived, or IDLE_MS (default
 * 1000) passed without one after the first, or MAX_S (60) in all; it creates
 * READY once its socket is bound. Both print "key value" lines: tx_frames,
 * tx_seconds, tx_fps, tx_cpu_seconds (CPU time of the sending loop, user +
 * system, which includes the receive side's kernel work the transmit runs
 * in its soft interrupt); rx_frames, rx_seconds (first to last frame),
 * rx_fps, rx_cpu_seconds (from the first frame on).
 *
 * Build (bench/uplink.sh does it):
 *   gcc -std=gnu11 -O2 -D_GNU_SOURCE bench/afxdp_raw.c -lxdp -lbpf -o build/bench/afxdp_raw
 * Needs root (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#define NFRAMES 4096
#define CHUNK XSK_UMEM__DEFAULT_FRAME_SIZE
#define RING 4096
#define BATCH 64
#define ETHERTYPE_BENCH 0x88b5

enum mode { M_GENERIC, M_NATIVE, M_PACKET };

struct opts {
	bool tx;
	const char *ifname, *ready;
	enum mode mode;
	unsigned long n;
	unsigned size;
	int idle_ms, max_s;
};

struct xsk {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *sock;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	int fd;
};

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

static void die(const char *what, int err)
{
	fprintf(stderr, "afxdp_raw: %s: %s\n", what, strerror(err));
	exit(1);
}

static void frame_build(uint8_t *f, unsigned size, unsigned long seq)
{
	memset(f, 0xff, 6);
	memcpy(f + 6, "\x02\x00\x00\x00\xbe\x01", 6);
	f[12] = ETHERTYPE_BENCH >> 8;
	f[13] = ETHERTYPE_BENCH & 0xff;
	for (unsigned i = 14; i < size; i++)
		f[i] = (uint8_t)(i + seq);
}

static bool is_bench(const uint8_t *f, size_t len)
{
	return len >= 14 && f[12] == (ETHERTYPE_BENCH >> 8) && f[13] == (ETHERTYPE_BENCH & 0xff);
}

/* libxdp's and libbpf's notes (no bpffs, fallbacks) are not results. */
static int quiet_xdp(enum libxdp_print_level l, const char *f, va_list ap)
{
	(void)l; (void)f; (void)ap;
	return 0;
}

static int quiet_bpf(enum libbpf_print_level l, const char *f, va_list ap)
{
	(void)l; (void)f; (void)ap;
	return 0;
}

static void make_ready(const struct opts *o)
{
	if (o->ready) {
		FILE *f = fopen(o->ready, "w");

		if (f)
			fclose(f);
	}
}

/* ---- AF_XDP ---- */

static void xsk_open(struct xsk *x, const struct opts *o)
{
	struct xsk_umem_config ucfg = {
		.fill_size = RING, .comp_size = RING, .frame_size = CHUNK,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RING, .tx_size = RING,
		.xdp_flags = o->mode == M_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	int err;

	libxdp_set_print(quiet_xdp);
	libbpf_set_print(quiet_bpf);
	x->area = mmap(NULL, (size_t)NFRAMES * CHUNK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->area == MAP_FAILED)
		die("mmap", errno);
	/* EBUSY: the kernel still releases the interface's previous socket. */
	for (int busy = 0;; busy++) {
		err = xsk_umem__create(&x->umem, x->area, (uint64_t)NFRAMES * CHUNK, &x->fill,
				       &x->comp, &ucfg);
		if (err)
			die("xsk_umem__create", -err);
		err = xsk_socket__create(&x->sock, o->ifname, 0, x->umem, o->tx ? NULL : &x->rx,
					 o->tx ? &x->tx : NULL, &scfg);
		if (!err)
			break;
		xsk_umem__delete(x->umem);
		if (err != -EBUSY || busy == 200)
			die("xsk_socket__create", -err);
		usleep(10000);
	}
	x->fd = xsk_socket__fd(x->sock);
}

static void xsk_close(struct xsk *x)
{
	xsk_socket__delete(x->sock);
	xsk_umem__delete(x->umem);
	munmap(x->area, (size_t)NFRAMES * CHUNK);
}

static int xsk_tx(const struct opts *o)
{
	struct xsk x;
	uint64_t freeq[NFRAMES];
	unsigned nfree = 0;
	unsigned long queued = 0, done = 0;
	double t0, t1, c0, c1;

	xsk_open(&x, o);
	for (unsigned i = 0; i < NFRAMES; i++) {
		frame_build((uint8_t *)x.area + (size_t)i * CHUNK, o->size, i);
		freeq[nfree++] = (uint64_t)i * CHUNK;
	}
	make_ready(o);
	t0 = now_s();
	c0 = cpu_s();
	while (done < o->n) {
		uint32_t idx, n;

		n = xsk_ring_cons__peek(&x.comp, RING, &idx);
		for (uint32_t i = 0; i < n; i++)
			freeq[nfree++] = *xsk_ring_cons__comp_addr(&x.comp, idx + i);
		if (n)
			xsk_ring_cons__release(&x.comp, n);
		done += n;
		n = nfree < BATCH ? nfree : BATCH;
		if (n > o->n - queued)
			n = (uint32_t)(o->n - queued);
		if (n && xsk_ring_prod__reserve(&x.tx, n, &idx) == n) {
			for (uint32_t i = 0; i < n; i++) {
				struct xdp_desc *d = xsk_ring_prod__tx_desc(&x.tx, idx + i);

				d->addr = freeq[--nfree];
				d->len = o->size;
				d->options = 0;
			}
			xsk_ring_prod__submit(&x.tx, n);
			queued += n;
		}
		/* Copy mode transmits inside sendto(), a bounded batch per call. */
		if (xsk_ring_prod__needs_wakeup(&x.tx) &&
		    sendto(x.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EBUSY && errno != ENOBUFS && errno != EINTR)
			die("sendto", errno);
	}
	t1 = now_s();
	c1 = cpu_s();
	printf("tx_cpu_seconds %.3f\n", c1 - c0);
	printf("tx_frames %lu\ntx_seconds %.6f\ntx_fps %.0f\n", done, t1 - t0,
	       (double)done / (t1 - t0));
	xsk_close(&x);
	return 0;
}

static int xsk_rx(const struct opts *o)
{
	struct xsk x;
	unsigned long got = 0, other = 0;
	double first = 0, last = 0, c0 = 0, start;
	uint32_t idx;

	xsk_open(&x, o);
	if (xsk_ring_prod__reserve(&x.fill, NFRAMES, &idx) != NFRAMES)
		die("fill ring", ENOSPC);
	for (unsigned i = 0; i < NFRAMES; i++)
		*xsk_ring_prod__fill_addr(&x.fill, idx + i) = (uint64_t)i * CHUNK;
	xsk_ring_prod__submit(&x.fill, NFRAMES);
	make_ready(o);
	start = now_s();
	while (got < o->n) {
		uint32_t n = xsk_ring_cons__peek(&x.rx, BATCH, &idx), fidx;
		double t;

		if (!n) {
			struct pollfd p = { .fd = x.fd, .events = POLLIN };

			if (xsk_ring_prod__needs_wakeup(&x.fill))
				recvfrom(x.fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			poll(&p, 1, 50);
			t = now_s();
			if ((got && (t - last) * 1000 > o->idle_ms) || t - start > o->max_s)
				break;
			continue;
		}
		unsigned long before = got;

		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x.rx, idx + i);

			if (is_bench(xsk_umem__get_data(x.area, d->addr), d->len))
				got++;
			else
				other++;
		}
		while (xsk_ring_prod__reserve(&x.fill, n, &fidx) != n)
			;
		for (uint32_t i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&x.fill, fidx + i) =
				xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&x.rx, idx + i)->addr);
		xsk_ring_prod__submit(&x.fill, n);
		xsk_ring_cons__release(&x.rx, n);
		if (got == before)
			continue;
		last = now_s();
		if (!first) {
			first = last;
			c0 = cpu_s();
		}
	}
	printf("rx_cpu_seconds %.3f\n", first ? cpu_s() - c0 : 0.0);
	printf("rx_frames %lu\nrx_other %lu\nrx_seconds %.6f\nrx_fps %.0f\n", got, other,
	       last - first, last > first ? (double)got / (last - first) : 0.0);
	xsk_close(&x);
	return 0;
}

/* ---- AF_PACKET ---- */

static int pkt_open(const struct opts *o)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(o->tx ? 0 : ETH_P_ALL));
	int v = 4 << 20;

	if (fd < 0)
		die("socket", errno);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v));
	sll.sll_ifindex = (int)if_nametoindex(o->ifname);
	sll.sll_protocol = htons(o->tx ? 0 : ETH_P_ALL);
	if (!sll.sll_ifindex)
		die(o->ifname, ENODEV);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind", errno);
	return fd;
}

static int pkt_tx(const struct opts *o)
{
	static uint8_t f[BATCH][2048];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	unsigned long done = 0, refused = 0;
	int fd = pkt_open(o);
	double t0, t1, c0, c1;

	for (unsigned i = 0; i < BATCH; i++) {
		frame_build(f[i], o->size, i);
		iov[i] = (struct iovec){ .iov_base = f[i], .iov_len = o->size };
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	make_ready(o);
	t0 = now_s();
	c0 = cpu_s();
	while (done < o->n) {
		unsigned n = o->n - done < BATCH ? (unsigned)(o->n - done) : BATCH;
		int r = sendmmsg(fd, m, n, 0);

		if (r < 0) {
			if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
				die("sendmmsg", errno);
			refused++;
			continue;
		}
		done += (unsigned)r;
	}
	t1 = now_s();
	c1 = cpu_s();
	printf("tx_cpu_seconds %.3f\n", c1 - c0);
	printf("tx_frames %lu\ntx_refused %lu\ntx_seconds %.6f\ntx_fps %.0f\n", done, refused,
	       t1 - t0, (double)done / (t1 - t0));
	close(fd);
	return 0;
}

static int pkt_rx(const struct opts *o)
{
	static uint8_t f[BATCH][2048];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	unsigned long got = 0, other = 0;
	double first = 0, last = 0, c0 = 0, start;
	int fd = pkt_open(o);

	for (unsigned i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ .iov_base = f[i], .iov_len = sizeof(f[i]) };
		memset(&m[i], 0, sizeof(m[i]));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	make_ready(o);
	start = now_s();
	while (got < o->n) {
		int r = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
		double t;

		if (r <= 0) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			poll(&p, 1, 50);
			t = now_s();
			if ((got && (t - last) * 1000 > o->idle_ms) || t - start > o->max_s)
				break;
			continue;
		}
		unsigned long before = got;

		for (int i = 0; i < r; i++) {
			if (is_bench(f[i], m[i].msg_len))
				got++;
			else
				other++;
		}
		if (got == before)
			continue;
		last = now_s();
		if (!first) {
			first = last;
			c0 = cpu_s();
		}
	}
	printf("rx_cpu_seconds %.3f\n", first ? cpu_s() - c0 : 0.0);
	printf("rx_frames %lu\nrx_other %lu\nrx_seconds %.6f\nrx_fps %.0f\n", got, other,
	       last - first, last > first ? (double)got / (last - first) : 0.0);
	close(fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: afxdp_raw rx|tx -i IF [-m generic|native|packet] [-n N] [-s SIZE]\n"
			"       [-w IDLE_MS] [-T MAX_S] [-r READY_FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .mode = M_GENERIC, .n = 1000000, .size = 60, .idle_ms = 1000,
			  .max_s = 60 };
	int c;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "tx"))
		o.tx = true;
	else if (strcmp(argv[1], "rx"))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "i:m:n:s:w:T:r:")) != -1) {
		switch (c) {
		case 'i': o.ifname = optarg; break;
		case 'm':
			if (!strcmp(optarg, "generic"))
				o.mode = M_GENERIC;
			else if (!strcmp(optarg, "native"))
				o.mode = M_NATIVE;
			else if (!strcmp(optarg, "packet"))
				o.mode = M_PACKET;
			else
				usage();
			break;
		case 'n': o.n = strtoul(optarg, NULL, 0); break;
		case 's': o.size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': o.idle_ms = atoi(optarg); break;
		case 'T': o.max_s = atoi(optarg); break;
		case 'r': o.ready = optarg; break;
		default: usage();
		}
	}
	if (!o.ifname || o.size < 60 || o.size > 1514 || !o.n)
		usage();
	if (o.mode == M_PACKET)
		return o.tx ? pkt_tx(&o) : pkt_rx(&o);
	return o.tx ? xsk_tx(&o) : xsk_rx(&o);
}
