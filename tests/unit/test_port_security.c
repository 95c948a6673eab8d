/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port security (port/port_security.h): allow-list parsing, allowed
 * addresses, the transmit check of every frame kind (MAC, ARP, IPv4, IPv6,
 * ND, VLAN) with its counter, and the registry of pinned addresses.
 */
#include "harness.h"

#include <errno.h>

#include <arpa/inet.h>

#include "port/port_security.h"

static const uint8_t MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x5e, 0x01 };
static const uint8_t OTHER[6] = { 0x02, 0x00, 0x00, 0x00, 0x5e, 0x02 };
static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void gid4(uint8_t g[16], const char *s)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	inet_pton(AF_INET, s, g + 12);
}

static void gid6(uint8_t g[16], const char *s)
{
	inet_pton(AF_INET6, s, g);
}

static void dev(struct psec *ps, const char *allow)
{
	struct psec_cfg c;
	struct in_addr ip4;
	struct in6_addr ip6;

	memset(&c, 0, sizeof(c));
	if (allow)
		CHECK_EQ(psec_cfg_allow(&c, allow), 0);
	inet_pton(AF_INET, "10.1.0.1", &ip4);
	inet_pton(AF_INET6, "2001:db8::1", &ip6);
	psec_init(ps, &c, MAC, &ip4, &ip6);
}

static void allow_list(void)
{
	struct psec_cfg c;
	uint8_t g[16];
	struct psec ps;

	memset(&c, 0, sizeof(c));
	CHECK_EQ(psec_cfg_allow(&c, "10.2.0.0/16"), 0);
	CHECK_EQ(psec_cfg_allow(&c, "fd00::/8"), 0);
	CHECK_EQ(psec_cfg_allow(&c, "192.168.1.7"), 0);
	CHECK_EQ(psec_cfg_allow(&c, "10.0.0.0/33"), -EINVAL);
	CHECK_EQ(psec_cfg_allow(&c, "10.0.0.0/"), -EINVAL);
	CHECK_EQ(psec_cfg_allow(&c, "10.0.0.0/-1"), -EINVAL);
	CHECK_EQ(psec_cfg_allow(&c, "nonsense"), -EINVAL);
	CHECK_EQ(psec_cfg_allow(&c, "::/129"), -EINVAL);
	CHECK_EQ(c.nallow, 3);
	psec_init(&ps, &c, MAC, NULL, NULL);
	gid4(g, "10.2.255.3");
	CHECK(psec_addr_ok(&ps, g));
	gid4(g, "10.3.0.1");
	CHECK(!psec_addr_ok(&ps, g));
	gid4(g, "192.168.1.7");
	CHECK(psec_addr_ok(&ps, g));
	gid4(g, "192.168.1.8");
	CHECK(!psec_addr_ok(&ps, g));
	gid6(g, "fd12::5");
	CHECK(psec_addr_ok(&ps, g));
	gid6(g, "fe80::56:52ff:fe00:1");
	CHECK(!psec_addr_ok(&ps, g));
	/* the link-local address of its own MAC */
	gid6(g, "fe80::0000:00ff:fe00:5e01");
	CHECK(psec_addr_ok(&ps, g));
	for (int i = 0; i < PSEC_ALLOW_MAX; i++)
		psec_cfg_allow(&c, "10.9.0.0/24");
	CHECK_EQ(psec_cfg_allow(&c, "10.9.0.0/24"), -ENOSPC);
}

static size_t eth(uint8_t *f, const uint8_t *src, uint16_t type)
{
	memcpy(f, BCAST, 6);
	memcpy(f + 6, src, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	return 14;
}

static void tx_checks(void)
{
	struct psec ps;
	uint8_t f[128];
	size_t l;

	dev(&ps, "10.5.0.0/24");
	memset(f, 0, sizeof(f));
	/* MAC */
	l = eth(f, MAC, 0x88b5);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_OK);
	eth(f, OTHER, 0x88b5);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_MAC);
	CHECK_EQ(psec_check_tx(&ps, f, 10), PSEC_BAD_MAC);
	/* ARP: sender MAC and address */
	l = eth(f, MAC, 0x0806);
	memcpy(f + l + 8, MAC, 6);
	inet_pton(AF_INET, "10.1.0.1", f + l + 14);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_OK);
	inet_pton(AF_INET, "10.5.0.9", f + l + 14);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_OK);
	memset(f + l + 14, 0, 4); /* probe */
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_OK);
	inet_pton(AF_INET, "10.1.0.2", f + l + 14);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_ARP);
	inet_pton(AF_INET, "10.1.0.1", f + l + 14);
	memcpy(f + l + 8, OTHER, 6);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_ARP);
	CHECK_EQ(psec_check_tx(&ps, f, 14 + 20), PSEC_BAD_ARP);
	/* IPv4 source, also behind one VLAN tag */
	memset(f, 0, sizeof(f));
	l = eth(f, MAC, 0x0800);
	inet_pton(AF_INET, "10.1.0.1", f + l + 12);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_OK);
	inet_pton(AF_INET, "10.1.0.3", f + l + 12);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_IP);
	memset(f, 0, sizeof(f));
	eth(f, MAC, 0x8100);
	f[16] = 0x08;
	inet_pton(AF_INET, "10.1.0.3", f + 18 + 12);
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_IP);
	f[16] = 0x81; /* stacked */
	CHECK_EQ(psec_check_tx(&ps, f, 60), PSEC_BAD_VLAN);
	/* IPv6 source and a neighbour advertisement */
	memset(f, 0, sizeof(f));
	l = eth(f, MAC, 0x86dd);
	f[l + 4] = 0;
	f[l + 5] = 32;
	f[l + 6] = 58;
	gid6(f + l + 8, "2001:db8::1");
	f[l + 40] = 136;
	gid6(f + l + 48, "2001:db8::1");
	f[l + 64] = 2;
	f[l + 65] = 1;
	memcpy(f + l + 66, MAC, 6);
	CHECK_EQ(psec_check_tx(&ps, f, l + 72), PSEC_OK);
	memcpy(f + l + 66, OTHER, 6);
	CHECK_EQ(psec_check_tx(&ps, f, l + 72), PSEC_BAD_ND);
	memcpy(f + l + 66, MAC, 6);
	gid6(f + l + 48, "2001:db8::2");
	CHECK_EQ(psec_check_tx(&ps, f, l + 72), PSEC_BAD_ND);
	gid6(f + l + 8, "2001:db8::2");
	CHECK_EQ(psec_check_tx(&ps, f, l + 72), PSEC_BAD_IP);
	CHECK_EQ(ps.stats.tx_spoofed_mac, 2);
	CHECK_EQ(ps.stats.tx_spoofed_arp, 3);
	CHECK_EQ(ps.stats.tx_spoofed_ip, 3);
	CHECK_EQ(ps.stats.tx_spoofed_nd, 2);
	CHECK_EQ(ps.stats.tx_bad_vlan, 1);
	/* port-security=off */
	ps.cfg.off = true;
	CHECK_EQ(psec_check_tx(&ps, f, l + 72), PSEC_OK);
}

static void registry(void)
{
	struct psec a, b;
	uint8_t g[16], mac[6];

	dev(&a, NULL);
	dev(&b, NULL);
	memcpy(b.mac, OTHER, 6);
	memcpy(b.cfg_mac, OTHER, 6);
	b.has_ip4 = b.has_ip6 = false;
	CHECK_EQ(psec_register(&a), 0);
	CHECK_EQ(psec_register(&b), 0);
	gid4(g, "10.1.0.1");
	CHECK(psec_pinned_mac(g, mac, NULL) && !memcmp(mac, MAC, 6));
	gid6(g, "fe80::0000:00ff:fe00:5e02");
	CHECK(psec_pinned_mac(g, mac, NULL) && !memcmp(mac, OTHER, 6));
	gid4(g, "10.1.0.9");
	CHECK(!psec_pinned_mac(g, mac, NULL));
	psec_unregister(&a);
	gid4(g, "10.1.0.1");
	CHECK(!psec_pinned_mac(g, mac, NULL));
	psec_unregister(&b);
	psec_unregister(&b);
}

/* A MAC belongs to one device of the process (whatever its thread or
 * switch): a second device with it is not registered, and a MAC change to
 * another device's current or configured MAC is refused. */
static void mac_one_owner(void)
{
	struct psec a, b, c;
	const uint8_t third[6] = { 0x02, 0, 0, 0, 0, 0x33 };

	dev(&a, NULL);
	dev(&b, NULL); /* the same configured MAC as a */
	CHECK_EQ(psec_register(&a), 0);
	CHECK_EQ(psec_register(&b), -EADDRINUSE);
	dev(&c, NULL);
	memcpy(c.mac, OTHER, 6);
	memcpy(c.cfg_mac, OTHER, 6);
	CHECK_EQ(psec_register(&c), 0);
	CHECK_EQ(psec_claim_mac(&c, MAC), -EADDRINUSE); /* a's */
	CHECK(!memcmp(c.mac, OTHER, 6));
	CHECK_EQ(psec_claim_mac(&c, third), 0);
	CHECK_EQ(psec_claim_mac(&a, OTHER), -EADDRINUSE); /* c's configured MAC */
	CHECK_EQ(psec_claim_mac(&c, OTHER), 0);          /* back to its own */
	psec_unregister(&a);
	CHECK_EQ(psec_claim_mac(&c, MAC), 0);            /* free now */
	psec_unregister(&c);
}

int main(void)
{
	TEST_PROGRAM("test_port_security");
	RUN(allow_list);
	RUN(tx_checks);
	RUN(mac_one_owner);
	RUN(registry);
	return TEST_DONE();
}
