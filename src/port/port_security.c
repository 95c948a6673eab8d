/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port security of device ports (port_security.h): the checks on frames a
 * driver sends and on the GIDs it adds, and the registry of local devices'
 * addresses used to pin neighbour entries.
 */
#include "port/port_security.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88a8
#define ARP_LEN 28
#define IP6_HLEN 40
#define ICMP6_PROTO 58
#define ND_NS 135
#define ND_NA 136

static pthread_mutex_t psec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct psec *psec_list;
static _Atomic uint64_t psec_gen = 1; /* bumped (under psec_lock) on every change */

static inline uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void gid_from_ip4(uint8_t gid[16], const uint8_t ip[4])
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

static bool net_contains(const struct psec_net *n, const uint8_t gid[16])
{
	unsigned full = n->prefix / 8, rest = n->prefix % 8;

	if (memcmp(n->addr, gid, full))
		return false;
	if (rest && ((n->addr[full] ^ gid[full]) & (uint8_t)(0xff00 >> rest)))
		return false;
	return true;
}

int psec_cfg_allow(struct psec_cfg *cfg, const char *cidr)
{
	char buf[64], *slash;
	struct psec_net n;
	unsigned long prefix;
	uint8_t ip4[4];
	bool v4;

	if (strlen(cidr) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, cidr);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(&n, 0, sizeof(n));
	if (inet_pton(AF_INET, buf, ip4) == 1) {
		v4 = true;
		gid_from_ip4(n.addr, ip4);
	} else if (inet_pton(AF_INET6, buf, n.addr) == 1) {
		v4 = false;
	} else {
		return -EINVAL;
	}
	prefix = v4 ? 32 : 128;
	if (slash) {
		char *end;

		if (!slash[1] || slash[1] == '-' || slash[1] == '+')
			return -EINVAL;
		errno = 0;
		prefix = strtoul(slash + 1, &end, 10);
		if (errno || *end || prefix > (v4 ? 32u : 128u))
			return -EINVAL;
	}
	n.prefix = (uint8_t)(v4 ? 96 + prefix : prefix);
	/* clear the host bits so the entry reads as the network */
	for (unsigned b = n.prefix; b < 128; b++)
		n.addr[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
	if (cfg->nallow >= PSEC_ALLOW_MAX)
		return -ENOSPC;
	cfg->allow[cfg->nallow++] = n;
	return 0;
}

void psec_init(struct psec *ps, const struct psec_cfg *cfg, const uint8_t mac[6],
	       const void *ip4, const void *ip6)
{
	memset(ps, 0, sizeof(*ps));
	ps->cfg = *cfg;
	memcpy(ps->mac, mac, 6);
	memcpy(ps->cfg_mac, mac, 6);
	if (ip4) {
		ps->has_ip4 = true;
		gid_from_ip4(ps->ip4, ip4);
	}
	if (ip6) {
		ps->has_ip6 = true;
		memcpy(ps->ip6, ip6, 16);
	}
}

/* Another registered device has mac (current or configured); psec_lock held. */
static bool psec_mac_taken(const struct psec *self, const uint8_t mac[6])
{
	for (const struct psec *o = psec_list; o; o = o->next)
		if (o != self && (!memcmp(o->mac, mac, 6) || !memcmp(o->cfg_mac, mac, 6)))
			return true;
	return false;
}

int psec_register(struct psec *ps)
{
	pthread_mutex_lock(&psec_lock);
	if (psec_mac_taken(ps, ps->mac) || psec_mac_taken(ps, ps->cfg_mac)) {
		pthread_mutex_unlock(&psec_lock);
		return -EADDRINUSE;
	}
	ps->next = psec_list;
	psec_list = ps;
	atomic_fetch_add_explicit(&psec_gen, 1, memory_order_release);
	pthread_mutex_unlock(&psec_lock);
	return 0;
}

void psec_unregister(struct psec *ps)
{
	pthread_mutex_lock(&psec_lock);
	for (struct psec **pp = &psec_list; *pp; pp = &(*pp)->next) {
		if (*pp == ps) {
			*pp = ps->next;
			break;
		}
	}
	ps->next = NULL;
	atomic_fetch_add_explicit(&psec_gen, 1, memory_order_release);
	pthread_mutex_unlock(&psec_lock);
}

int psec_claim_mac(struct psec *ps, const uint8_t mac[6])
{
	pthread_mutex_lock(&psec_lock);
	if (psec_mac_taken(ps, mac)) {
		pthread_mutex_unlock(&psec_lock);
		return -EADDRINUSE;
	}
	memcpy(ps->mac, mac, 6);
	atomic_fetch_add_explicit(&psec_gen, 1, memory_order_release);
	pthread_mutex_unlock(&psec_lock);
	return 0;
}

void psec_set_mac(struct psec *ps, const uint8_t mac[6])
{
	pthread_mutex_lock(&psec_lock);
	memcpy(ps->mac, mac, 6);
	atomic_fetch_add_explicit(&psec_gen, 1, memory_order_release);
	pthread_mutex_unlock(&psec_lock);
}

uint64_t psec_generation(void)
{
	return atomic_load_explicit(&psec_gen, memory_order_acquire);
}

/* Whether gid is the link-local GID of mac (fe80::/64 with the modified
 * EUI-64 of mac), compared in place: this runs for every frame sent. */
static bool gid_is_link_local_of(const uint8_t gid[16], const uint8_t mac[6])
{
	static const uint8_t prefix[8] = { 0xfe, 0x80 };

	return !memcmp(gid, prefix, 8) && gid[8] == (mac[0] ^ 0x02) && gid[9] == mac[1] &&
	       gid[10] == mac[2] && gid[11] == 0xff && gid[12] == 0xfe && gid[13] == mac[3] &&
	       gid[14] == mac[4] && gid[15] == mac[5];
}

/* The device's own addresses (configured and link-local). */
static bool addr_own(const struct psec *ps, const uint8_t gid[16])
{
	if (ps->has_ip4 && !memcmp(ps->ip4, gid, 16))
		return true;
	if (ps->has_ip6 && !memcmp(ps->ip6, gid, 16))
		return true;
	return gid_is_link_local_of(gid, ps->mac);
}

bool psec_addr_ok(const struct psec *ps, const uint8_t gid[16])
{
	if (ps->cfg.off || addr_own(ps, gid))
		return true;
	for (unsigned i = 0; i < ps->cfg.nallow; i++)
		if (net_contains(&ps->cfg.allow[i], gid))
			return true;
	return false;
}

bool psec_pinned_mac(const uint8_t gid[16], uint8_t mac[6], const void **home)
{
	bool found = false;

	pthread_mutex_lock(&psec_lock);
	for (const struct psec *ps = psec_list; ps; ps = ps->next) {
		if (addr_own(ps, gid)) {
			memcpy(mac, ps->mac, 6);
			if (home)
				*home = ps->home;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&psec_lock);
	return found;
}

static bool ip4_ok(const struct psec *ps, const uint8_t ip[4])
{
	static const uint8_t any[4];
	uint8_t gid[16];

	if (!memcmp(ip, any, 4)) /* DHCP, ARP probes */
		return true;
	gid_from_ip4(gid, ip);
	return psec_addr_ok(ps, gid);
}

static bool ip6_ok(const struct psec *ps, const uint8_t ip[16])
{
	static const uint8_t any[16];

	return !memcmp(ip, any, 16) /* duplicate address detection */ || psec_addr_ok(ps, ip);
}

/* NS/NA: the target of an advertisement and any link-layer address option
 * must be ours. Other ICMPv6 messages pass (the IP source was checked). */
static enum psec_verdict check_nd(const struct psec *ps, const uint8_t *ip6, size_t len)
{
	const uint8_t *m = ip6 + IP6_HLEN;
	size_t plen = be16_at(ip6 + 4), off;

	if (ip6[6] != ICMP6_PROTO || len < IP6_HLEN + 1)
		return PSEC_OK;
	if (m[0] != ND_NS && m[0] != ND_NA)
		return PSEC_OK;
	if (plen > len - IP6_HLEN || plen < 24)
		return PSEC_BAD_ND;
	if (m[0] == ND_NA && !ip6_ok(ps, m + 8))
		return PSEC_BAD_ND;
	for (off = 24; off + 8 <= plen;) {
		size_t olen = m[off + 1] * 8u;

		if (!olen || off + olen > plen)
			return PSEC_BAD_ND;
		if ((m[off] == 1 || m[off] == 2) && memcmp(m + off + 2, ps->mac, 6))
			return PSEC_BAD_ND;
		off += olen;
	}
	return PSEC_OK;
}

static enum psec_verdict check_frame(const struct psec *ps, const uint8_t *f, size_t len)
{
	size_t l3 = ETH_HLEN;
	uint16_t type;

	if (len < ETH_HLEN || memcmp(f + 6, ps->mac, 6))
		return PSEC_BAD_MAC;
	type = be16_at(f + 12);
	if (type == ETH_P_8021Q) {
		if (len < ETH_HLEN + 4)
			return PSEC_BAD_VLAN;
		type = be16_at(f + 16);
		l3 += 4;
	}
	if (type == ETH_P_8021Q || type == ETH_P_8021AD)
		return PSEC_BAD_VLAN;
	f += l3;
	len -= l3;
	switch (type) {
	case ETH_P_ARP:
		if (len < ARP_LEN)
			return PSEC_BAD_ARP;
		if (memcmp(f + 8, ps->mac, 6) || !ip4_ok(ps, f + 14))
			return PSEC_BAD_ARP;
		return PSEC_OK;
	case ETH_P_IP:
		if (len < 20 || !ip4_ok(ps, f + 12))
			return PSEC_BAD_IP;
		return PSEC_OK;
	case ETH_P_IPV6:
		if (len < IP6_HLEN || !ip6_ok(ps, f + 8))
			return PSEC_BAD_IP;
		return check_nd(ps, f, len);
	default:
		return PSEC_OK; /* other protocols carry no address of ours */
	}
}

enum psec_verdict psec_check_tx(struct psec *ps, const uint8_t *frame, size_t len)
{
	enum psec_verdict v;

	if (ps->cfg.off)
		return PSEC_OK;
	v = check_frame(ps, frame, len);
	switch (v) {
	case PSEC_OK:
		break;
	case PSEC_BAD_MAC:
		ps->stats.tx_spoofed_mac++;
		break;
	case PSEC_BAD_ARP:
		ps->stats.tx_spoofed_arp++;
		break;
	case PSEC_BAD_IP:
		ps->stats.tx_spoofed_ip++;
		break;
	case PSEC_BAD_ND:
		ps->stats.tx_spoofed_nd++;
		break;
	case PSEC_BAD_VLAN:
		ps->stats.tx_bad_vlan++;
		break;
	}
	return v;
}

const char *psec_verdict_name(enum psec_verdict v)
{
	switch (v) {
	case PSEC_OK:
		return "ok";
	case PSEC_BAD_MAC:
		return "foreign source MAC";
	case PSEC_BAD_ARP:
		return "ARP sender not the device's";
	case PSEC_BAD_IP:
		return "IP source address not allowed";
	case PSEC_BAD_ND:
		return "neighbour advertisement for an address not the device's";
	case PSEC_BAD_VLAN:
		return "stacked VLAN tags";
	}
	return "?";
}
