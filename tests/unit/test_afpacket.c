/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_PACKET uplinks over a veth pair: frames a switch sends out of one end
 * arrive, byte for byte, at a second switch behind the other end, including
 * jumbo frames, VLAN-tagged frames and bursts in order; a port never reads
 * its own transmissions back; oversized frames are counted as tx_dropped.
 *
 * Where the veth pair comes from:
 *  - VRDMA_AFP_IF_A / VRDMA_AFP_IF_B set: use those (tests/integration/
 *    uplink_afpacket.sh creates them in a namespace it owns and runs this
 *    program inside it);
 *  - otherwise, as root: the program moves itself into a new, private network
 *    namespace (unshare) and creates the pair there; the namespace and
 *    everything in it vanish when the program exits, however it exits;
 *  - otherwise every test that needs the pair is skipped.
 */
#include "harness.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"
#include "port/port.h"

#define ETYPE_TEST 0x88b5  /* IEEE local experimental */
#define ETYPE_PROBE 0x88b6

static const char *if_a, *if_b;
static const char *env_why;

/* ---- a mock port that keeps the frames of our test ethertypes ---- */

struct mock {
	struct port port;
	struct pkt_queue q;     /* ETYPE_TEST frames (tagged or not) */
	unsigned probes;
};

static uint16_t inner_etype(const struct pkt *p)
{
	uint16_t t = get_be16(p->data + 12);

	if ((t == 0x8100 || t == 0x88a8) && p->len >= 18)
		t = get_be16(p->data + 16);
	return t;
}

static void mock_xmit(struct port *port, struct pkt *pkt)
{
	struct mock *m = port->priv;
	uint16_t t = inner_etype(pkt);

	if (t == ETYPE_TEST) {
		pkt_queue_push(&m->q, pkt);
		return;
	}
	if (t == ETYPE_PROBE)
		m->probes++;
	pkt_free(pkt);
}

static const struct port_ops mock_ops = { .xmit = mock_xmit };

static void mock_init(struct mock *m, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->port.ops = &mock_ops;
	m->port.priv = m;
	snprintf(m->port.name, sizeof(m->port.name), "%s", name);
	pkt_queue_init(&m->q);
}

static struct pkt *mkframe(const uint8_t *dst, uint32_t len, uint16_t etype, unsigned tag)
{
	static const uint8_t src[6] = { 0x02, 0xaa, 0, 0, 0, 1 };
	struct pkt *p = pkt_alloc();

	if (!p)
		return NULL;
	memcpy(p->data, dst, 6);
	memcpy(p->data + 6, src, 6);
	put_be16(p->data + 12, etype);
	for (uint32_t i = 14; i < len; i++)
		p->data[i] = (uint8_t)(i * 11 + tag);
	if (len >= 18)
		memcpy(p->data + 14, &tag, 4);
	p->len = len;
	return p;
}

/* ---- the two sides ---- */

struct rig {
	struct loop *l;
	struct sw *s1, *s2;
	struct port *a, *b;
	struct mock m1, m2;
};

static void rig_close(struct rig *r)
{
	port_destroy(r->a);
	port_destroy(r->b);
	pkt_queue_purge(&r->m1.q);
	pkt_queue_purge(&r->m2.q);
	if (r->s1) {
		sw_detach(r->s1, &r->m1.port);
		sw_free(r->s1);
	}
	if (r->s2) {
		sw_detach(r->s2, &r->m2.port);
		sw_free(r->s2);
	}
	loop_free(r->l);
}

/* Run the loop until cond holds (an event), at most ~10 s. */
static bool run_until(struct loop *l, bool (*cond)(void *), void *arg)
{
	for (int i = 0; i < 200; i++) {
		if (cond(arg))
			return true;
		loop_run_once(l, 50000000);
	}
	return cond(arg);
}

static bool got_probe(void *arg)
{
	return ((struct rig *)arg)->m2.probes > 0;
}

/* s1: m1 + a; s2: m2 + b. Two switches, or the pair would form a loop. The
 * link is usable once a probe frame made it across. */
static bool rig_open(struct rig *r)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	memset(r, 0, sizeof(*r));
	r->l = loop_new();
	if (!r->l)
		return false;
	r->s1 = sw_new(r->l);
	r->s2 = sw_new(r->l);
	if (!r->s1 || !r->s2)
		return false;
	mock_init(&r->m1, "m1");
	mock_init(&r->m2, "m2");
	if (sw_attach(r->s1, &r->m1.port) || sw_attach(r->s2, &r->m2.port))
		return false;
	r->a = afpacket_port_open(r->s1, r->l, if_a);
	r->b = afpacket_port_open(r->s2, r->l, if_b);
	if (!r->a || !r->b)
		return false;
	for (int i = 0; i < 10; i++) {
		sw_input(r->s1, &r->m1.port, mkframe(bcast, 60, ETYPE_PROBE, 0));
		for (int k = 0; k < 20 && !got_probe(r); k++)
			loop_run_once(r->l, 50000000);
		if (got_probe(r))
			return true;
	}
	printf("#   no probe frame crossed %s -> %s\n", if_a, if_b);
	return false;
}

struct want {
	struct mock *m;
	unsigned n;
};

static bool has_n(void *arg)
{
	struct want *w = arg;

	return w->m->q.len >= w->n;
}

/* Send copies of refs[0..n) from m1 and check m2 gets exactly them. */
static int send_and_compare(struct rig *r, struct pkt **refs, unsigned n)
{
	struct want w = { &r->m2, n };
	int bad = 0;

	for (unsigned i = 0; i < n; i++)
		sw_input(r->s1, &r->m1.port, pkt_clone(refs[i]));
	if (!run_until(r->l, has_n, &w)) {
		printf("#   got %u of %u frames\n", r->m2.q.len, n);
		bad++;
	}
	for (unsigned i = 0; i < n; i++) {
		struct pkt *p = pkt_queue_pop(&r->m2.q);

		if (!p || p->len != refs[i]->len || memcmp(p->data, refs[i]->data, p->len)) {
			printf("#   frame %u differs (len %u, want %u)\n", i, p ? p->len : 0,
			       refs[i]->len);
			bad++;
		}
		pkt_free(p);
	}
	/* Our own transmissions never come back in through a. */
	for (int i = 0; i < 3; i++)
		loop_run_once(r->l, 0);
	if (r->m1.q.len) {
		printf("#   %u frames echoed back to the sender\n", r->m1.q.len);
		bad++;
	}
	return bad;
}

static void open_errors(void)
{
	struct loop *l = loop_new();
	struct sw *s = sw_new(l);

	REQUIRE(l && s);
	errno = 0;
	CHECK(afpacket_port_open(s, l, "vrdma-nonexist") == NULL);
	CHECK(errno == ENODEV || errno == EPERM);
	errno = 0;
	CHECK(afpacket_port_open(s, l, "a-name-longer-than-ifnamsiz") == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK(afpacket_port_open(s, NULL, "lo") == NULL);
	sw_free(s);
	loop_free(l);
}

static void frames_cross(void)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t ucast[6] = { 0x02, 0xbb, 0, 0, 0, 2 };
	uint64_t base = pkt_outstanding();
	struct pkt *refs[64];
	struct rig r;
	unsigned n = 0;

	if (!if_a)
		NEED_ENV(env_why);
	if (!rig_open(&r)) {
		rig_close(&r);
		REQUIRE(!"rig_open");
	}
	CHECK(r.a->uplink && !r.a->hairpin);
	CHECK(!strcmp(r.a->name, if_a));
	refs[n++] = mkframe(bcast, 60, ETYPE_TEST, 1);
	refs[n++] = mkframe(ucast, 1514, ETYPE_TEST, 2);
	refs[n++] = mkframe(ucast, 9014, ETYPE_TEST, 3); /* MTU 9000 */
	refs[n++] = mkframe(ucast, 14, ETYPE_TEST, 4);
	CHECK_EQ(send_and_compare(&r, refs, n), 0);
	for (unsigned i = 0; i < n; i++)
		pkt_free(refs[i]);

	/* A burst larger than one batch, in order. */
	for (n = 0; n < 64; n++)
		refs[n] = mkframe(ucast, 100 + n, ETYPE_TEST, 100 + n);
	CHECK_EQ(send_and_compare(&r, refs, n), 0);
	for (unsigned i = 0; i < n; i++)
		pkt_free(refs[i]);
	CHECK(r.b->stats.rx_frames >= 68);
	CHECK_EQ(r.a->stats.tx_dropped, 0);
	rig_close(&r);
	CHECK_EQ(pkt_outstanding(), base);
}

/* The kernel takes the VLAN tag out of received frames; the port puts it
 * back. */
static void vlan_tag_kept(void)
{
	static const uint8_t ucast[6] = { 0x02, 0xbb, 0, 0, 0, 3 };
	uint64_t base = pkt_outstanding();
	struct pkt *refs[3];
	struct rig r;

	if (!if_a)
		NEED_ENV(env_why);
	if (!rig_open(&r)) {
		rig_close(&r);
		REQUIRE(!"rig_open");
	}
	refs[0] = mkframe(ucast, 128, 0x8100, 7);
	put_be16(refs[0]->data + 14, 0x2123); /* PCP 1, VID 0x123 */
	put_be16(refs[0]->data + 16, ETYPE_TEST);
	refs[1] = mkframe(ucast, 1518, 0x8100, 8);
	put_be16(refs[1]->data + 14, 0x0005);
	put_be16(refs[1]->data + 16, ETYPE_TEST);
	refs[2] = mkframe(ucast, 64, ETYPE_TEST, 9);
	CHECK_EQ(send_and_compare(&r, refs, 3), 0);
	for (unsigned i = 0; i < 3; i++)
		pkt_free(refs[i]);
	rig_close(&r);
	CHECK_EQ(pkt_outstanding(), base);
}

/* A frame the kernel refuses (bigger than the MTU) is counted and does not
 * hold up the frames behind it. */
static void oversized_dropped(void)
{
	static const uint8_t ucast[6] = { 0x02, 0xbb, 0, 0, 0, 4 };
	uint64_t base = pkt_outstanding();
	struct pkt *big, *refs[1];
	struct rig r;

	if (!if_a)
		NEED_ENV(env_why);
	if (!rig_open(&r)) {
		rig_close(&r);
		REQUIRE(!"rig_open");
	}
	big = mkframe(ucast, PKT_MAX_FRAME, ETYPE_TEST, 1);
	sw_input(r.s1, &r.m1.port, big);
	refs[0] = mkframe(ucast, 200, ETYPE_TEST, 2);
	CHECK_EQ(send_and_compare(&r, refs, 1), 0);
	CHECK_EQ(r.a->stats.tx_dropped, 1);
	CHECK_EQ(r.m2.q.len, 0);
	pkt_free(refs[0]);
	rig_close(&r);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Frames someone else on the host transmits out of a (here: a raw socket of
 * the test) go to the wire, reach b, but never enter the switch behind a. */
static void others_outgoing_ignored(void)
{
	static const uint8_t ucast[6] = { 0x02, 0xbb, 0, 0, 0, 5 };
	uint64_t base = pkt_outstanding();
	struct sockaddr_ll sll;
	struct want w;
	struct pkt *ref;
	struct rig r;
	int fd;

	if (!if_a)
		NEED_ENV(env_why);
	if (!rig_open(&r)) {
		rig_close(&r);
		REQUIRE(!"rig_open");
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	REQUIRE(fd >= 0);
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = (int)if_nametoindex(if_a);
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, ucast, 6);
	ref = mkframe(ucast, 300, ETYPE_TEST, 77);
	CHECK_EQ(sendto(fd, ref->data, ref->len, 0, (struct sockaddr *)&sll, sizeof(sll)),
		 (ssize_t)ref->len);
	close(fd);
	/* b received it, so a has seen it go out by now (the kernel shows
	 * outgoing frames to packet sockets before the driver sends them). */
	w.m = &r.m2;
	w.n = 1;
	CHECK(run_until(r.l, has_n, &w));
	if (r.m2.q.head)
		CHECK_MEM(r.m2.q.head->data, ref->data, ref->len);
	for (int i = 0; i < 3; i++)
		loop_run_once(r.l, 0);
	CHECK_EQ(r.m1.q.len, 0);
	CHECK_EQ(r.a->stats.rx_frames, 0);
	pkt_free(ref);
	rig_close(&r);
	CHECK_EQ(pkt_outstanding(), base);
}

static int sh(const char *cmd)
{
	int st = system(cmd);

	return st == 0 ? 0 : -1;
}

/* Find or make the veth pair; sets if_a/if_b or env_why. */
static void env_setup(void)
{
	FILE *f;

	if_a = getenv("VRDMA_AFP_IF_A");
	if_b = getenv("VRDMA_AFP_IF_B");
	if (if_a && if_b && *if_a && *if_b)
		return;
	if_a = if_b = NULL;
	if (geteuid() != 0) {
		env_why = "needs root (CAP_NET_ADMIN, CAP_NET_RAW) for a private netns and veth";
		return;
	}
	if (unshare(CLONE_NEWNET) != 0) {
		env_why = "unshare(CLONE_NEWNET) failed";
		return;
	}
	/* Fewer unrelated frames (IPv6 DAD/RS) on the new links. */
	f = fopen("/proc/sys/net/ipv6/conf/default/disable_ipv6", "w");
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
	/* Receiver first: the sender's qdisc is then activated as it comes up. */
	if (sh("ip link add vrdafpa mtu 9000 type veth peer name vrdafpb mtu 9000 && "
	       "ip link set vrdafpb up && ip link set vrdafpa up")) {
		env_why = "cannot create a veth pair (ip link add ... type veth)";
		return;
	}
	if_a = "vrdafpa";
	if_b = "vrdafpb";
}

int main(void)
{
	TEST_PROGRAM("test_afpacket");
	env_setup();
	RUN(open_errors);
	RUN(frames_cross);
	RUN(vlan_tag_kept);
	RUN(oversized_dropped);
	RUN(others_outgoing_ignored);
	return TEST_DONE();
}
