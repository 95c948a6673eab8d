/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port security of a device port (a managed switch port): the operator fixes
 * the device's MAC and addresses; every frame the driver sends must carry
 * them (source MAC, ARP sender, IP source, ND target), and the driver can
 * only add RoCE GIDs inside them. Addresses are kept in GID form (IPv4 as
 * ::ffff:a.b.c.d). docs/spec.md "Security model" describes the rules.
 *
 * A registry of every device's addresses in the process lets the neighbour
 * cache pin its entries for local devices (no ARP/ND to trust).
 */
#ifndef VRDMA_PORT_PORT_SECURITY_H
#define VRDMA_PORT_PORT_SECURITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PSEC_ALLOW_MAX 16 /* allow-ip= prefixes per device */

struct psec_net {
	uint8_t addr[16];  /* GID form, bits past the prefix zero */
	uint8_t prefix;    /* 0..128 (an IPv4 /n is 96 + n) */
};

struct psec_cfg {
	bool off;          /* port-security=off: no checks (trusted driver) */
	bool mac_change;   /* mac-change=on: the driver may change its MAC */
	uint8_t nallow;
	struct psec_net allow[PSEC_ALLOW_MAX];
};

struct psec_stats {
	uint64_t tx_spoofed_mac;   /* source MAC not the device's */
	uint64_t tx_spoofed_arp;   /* ARP sender MAC/IP not the device's */
	uint64_t tx_spoofed_ip;    /* IPv4/IPv6 source address not allowed */
	uint64_t tx_spoofed_nd;    /* NA target / ND link-layer option not ours */
	uint64_t tx_bad_vlan;      /* stacked VLAN tags (cannot be checked) */
	uint64_t gid_refused;      /* ADD_GID outside the allowed addresses */
	uint64_t mac_refused;      /* MAC change refused (config write, MAC_ADDR_SET) */
};

enum psec_verdict {
	PSEC_OK = 0,
	PSEC_BAD_MAC,
	PSEC_BAD_ARP,
	PSEC_BAD_IP,
	PSEC_BAD_ND,
	PSEC_BAD_VLAN,
};

/* The security state of one device port. */
struct psec {
	struct psec *next;        /* registry */
	struct psec_cfg cfg;
	uint8_t mac[6];           /* current MAC */
	uint8_t cfg_mac[6];       /* configured MAC: stays reserved for it */
	bool has_ip4, has_ip6;
	uint8_t ip4[16], ip6[16]; /* GID form */
	const void *home;         /* the loop whose RoCE engine serves the
				   * device (NULL: none, roce=off); set
				   * before psec_register */
	struct psec_stats stats;
};

/* Parse "ADDR[/PREFIX]" (IPv4 or IPv6) into an allow-list entry of cfg.
 * Returns 0 or -EINVAL (-ENOSPC when the list is full). */
int psec_cfg_allow(struct psec_cfg *cfg, const char *cidr);

/* Initialise ps (not registered yet); ip4/ip6 NULL when absent (ip4 in
 * network order, 4 bytes; ip6 16 bytes). */
void psec_init(struct psec *ps, const struct psec_cfg *cfg, const uint8_t mac[6],
	       const void *ip4, const void *ip6);
/* Make ps known to the neighbour caches of the process (pinned entries).
 * A MAC belongs to one device of the process (every thread): returns 0, or
 * -EADDRINUSE (not registered) when another registered device has ps's MAC
 * as its current or configured MAC. */
int psec_register(struct psec *ps);
void psec_unregister(struct psec *ps);

/* Check one frame the driver sends (Ethernet header first). Counts and
 * returns the reason of a refusal. */
enum psec_verdict psec_check_tx(struct psec *ps, const uint8_t *frame, size_t len);
/* Whether the device may use gid as a source address (its own, the
 * link-local GID of its MAC, or inside allow-ip=). */
bool psec_addr_ok(const struct psec *ps, const uint8_t gid[16]);
const char *psec_verdict_name(enum psec_verdict v);

/* The MAC of a local device owning gid (its configured addresses or its
 * link-local GID): true and mac filled (and *home, if home is not NULL),
 * else false. */
bool psec_pinned_mac(const uint8_t gid[16], uint8_t mac[6], const void **home);
/* Change a registered device's MAC (its link-local GID moves with it). */
void psec_set_mac(struct psec *ps, const uint8_t mac[6]);
/* psec_set_mac, unless another registered device has mac as its current or
 * configured MAC: then -EADDRINUSE and nothing changes. */
int psec_claim_mac(struct psec *ps, const uint8_t mac[6]);
/* The registry's generation: changes whenever an answer of psec_pinned_mac
 * may change, so callers can cache answers read under an equal generation. */
uint64_t psec_generation(void);

#endif /* VRDMA_PORT_PORT_SECURITY_H */
