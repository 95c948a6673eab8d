/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TAP uplink, in a private network namespace (root only, else skipped):
 * frames the kernel sends to the tap reach the switch byte for byte, frames
 * the switch sends come out of the kernel interface, writes to a down
 * interface are counted as drops, a persistent tap can be attached to, and a
 * device with other flags is refused.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"
#include "port/port.h"

#define ETYPE_TEST 0x88b5

static const char *env_why;

struct mock {
	struct port port;
	struct pkt_queue q;
};

static void mock_xmit(struct port *port, struct pkt *pkt)
{
	struct mock *m = port->priv;

	if (pkt->len >= 14 && get_be16(pkt->data + 12) == ETYPE_TEST)
		pkt_queue_push(&m->q, pkt);
	else
		pkt_free(pkt);
}

static const struct port_ops mock_ops = { .xmit = mock_xmit };

static void mock_init(struct mock *m)
{
	memset(m, 0, sizeof(*m));
	m->port.ops = &mock_ops;
	m->port.priv = m;
	strcpy(m->port.name, "mock");
	pkt_queue_init(&m->q);
}

static void fill(uint8_t *b, uint32_t len, const uint8_t *dst, unsigned tag)
{
	static const uint8_t src[6] = { 0x02, 0xcc, 0, 0, 0, 1 };

	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	put_be16(b + 12, ETYPE_TEST);
	for (uint32_t i = 14; i < len; i++)
		b[i] = (uint8_t)(i * 5 + tag);
}

static int set_up(const char *ifname, bool up)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strnlen(ifname, sizeof(ifr.ifr_name) - 1));
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!r) {
		if (up)
			ifr.ifr_flags |= IFF_UP;
		else
			ifr.ifr_flags &= ~IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return r;
}

/* A raw socket on the kernel side of the tap. */
static int raw_open(const char *ifname)
{
	struct sockaddr_ll sll;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (fd < 0)
		return -1;
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Next incoming ETYPE_TEST frame on fd, waiting up to ~5 s. */
static ssize_t raw_recv(int fd, uint8_t *buf, size_t size)
{
	for (int i = 0; i < 100; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		n = recvfrom(fd, buf, size, 0, (struct sockaddr *)&from, &fl);
		if (n >= 14 && from.sll_pkttype != PACKET_OUTGOING &&
		    get_be16(buf + 12) == ETYPE_TEST)
			return n;
	}
	return -1;
}

static void both_directions(void)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t ucast[6] = { 0x02, 0xdd, 0, 0, 0, 9 };
	static uint8_t ref[PKT_MAX_FRAME], buf[PKT_MAX_FRAME];
	static const uint32_t lens[] = { 60, 1514, 9014, 14 };
	uint64_t base = pkt_outstanding();
	struct loop *l;
	struct sw *s;
	struct port *t;
	struct mock m;
	int fd;

	if (env_why)
		NEED_ENV(env_why);
	l = loop_new();
	s = sw_new(l);
	REQUIRE(l && s);
	mock_init(&m);
	CHECK_EQ(sw_attach(s, &m.port), 0);
	t = tap_port_open(s, l, "vrdtap%d");
	REQUIRE(t);
	CHECK(!strcmp(t->name, "vrdtap0"));
	CHECK(t->uplink && !t->hairpin);

	/* Down: the kernel refuses writes, counted. */
	fill(ref, 60, bcast, 0);
	{
		struct pkt *p = pkt_alloc();

		memcpy(p->data, ref, 60);
		p->len = 60;
		sw_input(s, &m.port, p);
	}
	CHECK_EQ(t->stats.tx_dropped, 1);
	CHECK_EQ(t->stats.tx_frames, 1);

	REQUIRE(set_up(t->name, true) == 0);
	{
		char cmd[96];

		snprintf(cmd, sizeof(cmd), "ip link set %s mtu 9000", t->name);
		CHECK_EQ(system(cmd), 0);
	}
	fd = raw_open(t->name);
	REQUIRE(fd >= 0);

	for (unsigned i = 0; i < ARRAY_SIZE(lens); i++) {
		struct pkt *p;
		ssize_t n;

		/* kernel -> tap -> switch -> mock */
		fill(ref, lens[i], i & 1 ? ucast : bcast, i);
		CHECK_EQ(send(fd, ref, lens[i], 0), (ssize_t)lens[i]);
		for (int k = 0; k < 200 && !m.q.len; k++)
			loop_run_once(l, 50000000);
		p = pkt_queue_pop(&m.q);
		CHECK(p != NULL);
		if (p) {
			CHECK_EQ(p->len, lens[i]);
			CHECK(p->len == lens[i] && !memcmp(p->data, ref, lens[i]));
			pkt_free(p);
		}
		/* mock -> switch -> tap -> kernel */
		fill(ref, lens[i], i & 1 ? ucast : bcast, 100 + i);
		ref[6] = 0x06; /* another source than the kernel side */
		p = pkt_alloc();
		REQUIRE(p);
		memcpy(p->data, ref, lens[i]);
		p->len = lens[i];
		sw_input(s, &m.port, p);
		n = raw_recv(fd, buf, sizeof(buf));
		CHECK_EQ(n, (ssize_t)lens[i]);
		if (n == (ssize_t)lens[i])
			CHECK_MEM(buf, ref, lens[i]);
	}
	CHECK_EQ(t->stats.tx_dropped, 1);
	CHECK(t->stats.rx_frames >= ARRAY_SIZE(lens));
	close(fd);
	port_destroy(t);
	port_destroy(&m.port);
	pkt_queue_purge(&m.q);
	sw_free(s);
	loop_free(l);
	CHECK_EQ(pkt_outstanding(), base);
	CHECK_EQ(if_nametoindex("vrdtap0"), 0); /* not persistent: gone */
}

/* Create (persist=1) or delete (persist=0) a persistent device. */
static int persist(const char *name, short flags, int on)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = flags;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	r = ioctl(fd, TUNSETIFF, &ifr);
	if (!r)
		r = ioctl(fd, TUNSETPERSIST, on);
	close(fd);
	return r;
}

static void persistent_tap(void)
{
	struct loop *l;
	struct sw *s;
	struct port *t;

	if (env_why)
		NEED_ENV(env_why);
	l = loop_new();
	s = sw_new(l);
	REQUIRE(l && s);
	REQUIRE(persist("vrdptap", IFF_TAP | IFF_NO_PI, 1) == 0);
	t = tap_port_open(s, l, "vrdptap");
	CHECK(t != NULL);
	port_destroy(t);
	CHECK(if_nametoindex("vrdptap") != 0); /* still there */
	CHECK_EQ(persist("vrdptap", IFF_TAP | IFF_NO_PI, 0), 0);
	CHECK_EQ(if_nametoindex("vrdptap"), 0);

	/* A tun (layer 3) device of that name: refused. */
	REQUIRE(persist("vrdptun", IFF_TUN | IFF_NO_PI, 1) == 0);
	errno = 0;
	CHECK(tap_port_open(s, l, "vrdptun") == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(persist("vrdptun", IFF_TUN | IFF_NO_PI, 0), 0);
	sw_free(s);
	loop_free(l);
}

static void bad_names(void)
{
	struct loop *l = loop_new();
	struct sw *s = sw_new(l);

	REQUIRE(l && s);
	errno = 0;
	CHECK(tap_port_open(s, l, "") == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(tap_port_open(s, l, "0123456789abcdefXYZ") == NULL);
	CHECK(tap_port_open(s, NULL, "x") == NULL);
	sw_free(s);
	loop_free(l);
}

int main(void)
{
	TEST_PROGRAM("test_tap");
	if (geteuid() != 0)
		env_why = "needs root (CAP_NET_ADMIN) for a private netns and a tap";
	else if (unshare(CLONE_NEWNET) != 0)
		env_why = "unshare(CLONE_NEWNET) failed";
	else if (access("/dev/net/tun", R_OK | W_OK) != 0)
		env_why = "no /dev/net/tun";
	if (!env_why) {
		FILE *f = fopen("/proc/sys/net/ipv6/conf/default/disable_ipv6", "w");

		if (f) {
			fputs("1\n", f);
			fclose(f);
		}
	}
	RUN(bad_names);
	RUN(both_directions);
	RUN(persistent_tap);
	return TEST_DONE();
}
