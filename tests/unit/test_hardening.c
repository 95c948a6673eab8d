/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardening of the edges that take input from outside the vhost-user
 * protocol itself:
 *  - kick/call/err fds must be eventfds also where /proc is not mounted
 *    (a private mount namespace hides it; root only, else skipped);
 *  - a tap frame larger than a frame buffer (tun reports its whole length
 *    even though it copied only what fit) is dropped and counted, not
 *    delivered truncated (private network namespace; root only);
 *  - the pcap capture file is never reached through a symbolic link, is
 *    created 0644 and truncated.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "port/pcap.h"
#include "port/pkt.h"
#include "port/port.h"
#include "vhost/vhost_msg.h"
#include "vhost/vhost_server.h"

#define ETYPE_TEST 0x88b5

/* ---- eventfd check without /proc ---- */

/* SET_VRING_CALL for ring 0 carrying fd. Returns what handle_msg returns. */
static int set_call(struct vhost_server *s, int fd)
{
	struct vhost_user_msg m;

	vhost_msg_init(&m, VHOST_USER_SET_VRING_CALL, 8);
	m.payload.u64 = 0;
	return vhost_server_handle_msg(s, &m, &fd, 1);
}

/* In the child: 0 all as expected, 2 /proc still visible, 1 otherwise. */
static int noproc_child(void)
{
	struct vhost_dev_ops ops;
	struct vhost_server *s;
	int sv[2], p[2], mfd, efd, ok = 1;

	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", "/proc", "tmpfs", 0, NULL) < 0)
		return 2;
	if (access("/proc/self/fd", F_OK) == 0)
		return 2;
	memset(&ops, 0, sizeof(ops));
	ops.max_rings = 3;
	ops.features = 1ull << 32;
	s = vhost_server_new(NULL, NULL, &ops, NULL);
	if (!s)
		return 1;
	efd = eventfd(0, EFD_CLOEXEC);
	mfd = memfd_create("hard", MFD_CLOEXEC);
	if (efd < 0 || mfd < 0 || pipe2(p, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 1;
	close(p[0]);
	close(sv[1]);
	/* Each refused one is a bad message: the session closes (and the
	 * next message starts another). */
	ok &= set_call(s, p[1]) < 0;
	ok &= set_call(s, mfd) < 0;
	ok &= set_call(s, sv[0]) < 0;
	ok &= set_call(s, efd) == 0;
	ok &= vhost_server_vring(s, 0) && vhost_server_vring(s, 0)->call_fd >= 0;
	ok &= vhost_server_stats(s)->bad_messages == 3;
	vhost_server_free(s);
	return ok ? 0 : 1;
}

static void eventfd_without_proc(void)
{
	pid_t pid;
	int st = 0;

	if (geteuid() != 0)
		SKIP("needs root for a private mount namespace");
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(noproc_child());
	REQUIRE(waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st));
	if (WEXITSTATUS(st) == 2)
		FAIL("could not give the child a private, empty /proc (unshare, mount)");
	CHECK_EQ(WEXITSTATUS(st), 0);
}

/* ---- tap: oversized frames ---- */

static const char *netns_why;

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

static int link_up(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strnlen(ifname, sizeof(ifr.ifr_name) - 1));
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (!r) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	if (!r) {
		ifr.ifr_mtu = 9500;
		r = ioctl(fd, SIOCSIFMTU, &ifr);
	}
	close(fd);
	return r;
}

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

static void tap_oversized_frame(void)
{
	static uint8_t f[9300];
	uint64_t base = pkt_outstanding();
	struct loop *l;
	struct sw *s;
	struct port *t;
	struct mock m;
	struct pkt *p;
	int fd;

	if (netns_why)
		NEED_ENV(netns_why);
	l = loop_new();
	s = sw_new(l);
	REQUIRE(l && s);
	memset(&m, 0, sizeof(m));
	m.port.ops = &mock_ops;
	m.port.priv = &m;
	strcpy(m.port.name, "mock");
	pkt_queue_init(&m.q);
	CHECK_EQ(sw_attach(s, &m.port), 0);
	t = tap_port_open(s, l, "vrdhard%d");
	REQUIRE(t);
	REQUIRE(link_up(t->name) == 0);
	fd = raw_open(t->name);
	REQUIRE(fd >= 0);

	memset(f, 0xff, 6);
	memset(f + 6, 0x02, 6);
	put_be16(f + 12, ETYPE_TEST);
	for (unsigned i = 14; i < sizeof(f); i++)
		f[i] = (uint8_t)i;
	/* Larger than a frame buffer: dropped, counted. */
	CHECK_EQ(send(fd, f, sizeof(f), 0), (ssize_t)sizeof(f));
	for (int k = 0; k < 200 && !t->stats.rx_errors; k++)
		loop_run_once(l, 50000000);
	CHECK_EQ(t->stats.rx_errors, 1);
	CHECK_EQ(m.q.len, 0);
	/* The largest that fits still comes through whole. */
	CHECK_EQ(send(fd, f, PKT_MAX_FRAME, 0), (ssize_t)PKT_MAX_FRAME);
	for (int k = 0; k < 200 && !m.q.len; k++)
		loop_run_once(l, 50000000);
	p = pkt_queue_pop(&m.q);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ(p->len, PKT_MAX_FRAME);
		CHECK(p->len == PKT_MAX_FRAME && !memcmp(p->data, f, PKT_MAX_FRAME));
		pkt_free(p);
	}
	CHECK_EQ(t->stats.rx_errors, 1);

	close(fd);
	port_destroy(t);
	port_destroy(&m.port);
	pkt_queue_purge(&m.q);
	sw_free(s);
	loop_free(l);
	CHECK_EQ(pkt_outstanding(), base);
}

/* ---- pcap: no symbolic links ---- */

static void pcap_no_symlink(void)
{
	char dir[] = "/tmp/vrdma-hard-XXXXXX", victim[64], link[64], cap[64];
	static const char precious[] = "precious data";
	struct pcapw *w;
	struct stat st;
	char buf[32];
	int fd;

	REQUIRE(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/link.pcap", dir);
	snprintf(cap, sizeof(cap), "%s/cap.pcap", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, precious, sizeof(precious)) == (ssize_t)sizeof(precious));
	close(fd);
	REQUIRE(symlink(victim, link) == 0);

	errno = 0;
	w = pcapw_open(link, NULL);
	CHECK(w == NULL);
	CHECK_EQ(errno, ELOOP);
	pcapw_close(w);
	fd = open(victim, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	CHECK_EQ(read(fd, buf, sizeof(buf)), (ssize_t)sizeof(precious));
	CHECK_MEM(buf, precious, sizeof(precious));
	close(fd);

	/* A new file: created 0644 (under umask 022), just the 24-byte
	 * header. */
	{
		mode_t old = umask(022);

		w = pcapw_open(cap, NULL);
		umask(old);
	}
	CHECK(w != NULL);
	CHECK_EQ(stat(cap, &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0644);
	CHECK_EQ(st.st_size, 24);
	pcapw_close(w);
	/* Existing file, longer than a header: truncated. */
	fd = open(cap, O_WRONLY | O_APPEND | O_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	close(fd);
	w = pcapw_open(cap, NULL);
	CHECK(w != NULL);
	CHECK_EQ(stat(cap, &st), 0);
	CHECK_EQ(st.st_size, 24);
	pcapw_close(w);

	unlink(cap);
	unlink(link);
	unlink(victim);
	rmdir(dir);
}

int main(void)
{
	TEST_PROGRAM("test_hardening");
	vlog_level = getenv("VRDMA_TEST_LOG") ? VLOG_DEBUG : -1;
	RUN(eventfd_without_proc);
	RUN(pcap_no_symlink);
	if (geteuid() != 0)
		netns_why = "needs root (CAP_NET_ADMIN) for a private netns and a tap";
	else if (unshare(CLONE_NEWNET) != 0)
		netns_why = "unshare(CLONE_NEWNET) failed";
	else if (access("/dev/net/tun", R_OK | W_OK) != 0)
		netns_why = "no /dev/net/tun";
	RUN(tap_oversized_frame);
	return TEST_DONE();
}
