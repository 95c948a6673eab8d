/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE v2 frames: validate and decode a received Ethernet frame into a
 * struct roce_pkt_info (roce_pkt_parse), and build the headers of a frame to
 * send (roce_pkt_build + roce_pkt_finalize). Pure functions on buffers: no
 * I/O, no allocation.
 *
 * Frame layout (IBTA Annex A17.4): Ethernet [802.1Q] | IPv4 or IPv6 | UDP
 * (dst 4791) | BTH | extended headers | payload | pad (0-3) | ICRC.
 */
#ifndef VRDMA_ROCE_ROCE_PKT_H
#define VRDMA_ROCE_ROCE_PKT_H

#include <stdbool.h>
#include <stdint.h>

#include "port/pkt.h"
#include "roce/roce_hdr.h"
#include "roce/roce_opcode.h"

/* ------------------------------------------------------------------ */
/* Receive: parse and validate.                                        */

/*
 * Why a frame was rejected. roce_pkt_parse() returns the negated value, so a
 * caller counts drops with stats[-ret]++. These are not errno values.
 */
enum roce_rx_err {
	ROCE_RX_OK = 0,
	ROCE_RX_E_ETH_SHORT,    /* shorter than the Ethernet (+VLAN) header */
	ROCE_RX_E_ETHERTYPE,    /* not IPv4/IPv6 (after at most one 802.1Q tag) */
	ROCE_RX_E_IP_VERSION,   /* IP version does not match the Ethernet type */
	ROCE_RX_E_IP4_SHORT,    /* truncated IPv4 header */
	ROCE_RX_E_IP4_IHL,      /* IHL < 5 */
	ROCE_RX_E_IP4_LEN,      /* total length < header length or > frame */
	ROCE_RX_E_IP4_CSUM,     /* bad IPv4 header checksum */
	ROCE_RX_E_IP4_FRAG,     /* a fragment (MF set or offset != 0) */
	ROCE_RX_E_IP6_SHORT,    /* truncated IPv6 header */
	ROCE_RX_E_IP6_LEN,      /* payload length > frame */
	ROCE_RX_E_IP6_ADDR,     /* IPv4-mapped source or destination in IPv6 */
	ROCE_RX_E_IP_PROTO,     /* not UDP (IPv4 protocol / IPv6 next header) */
	ROCE_RX_E_UDP_SHORT,    /* IP payload shorter than a UDP header */
	ROCE_RX_E_UDP_PORT,     /* destination port is not 4791 */
	ROCE_RX_E_UDP_LEN,      /* UDP length != IP payload length */
	ROCE_RX_E_BTH_SHORT,    /* UDP payload shorter than BTH + ICRC */
	ROCE_RX_E_BTH_TVER,     /* transport header version != 0 */
	ROCE_RX_E_OPCODE,       /* opcode not supported */
	ROCE_RX_E_HDR_LEN,      /* extended headers of the opcode do not fit */
	ROCE_RX_E_PAD,          /* pad count larger than what follows the headers */
	ROCE_RX_E_PAYLOAD,      /* payload or pad on an opcode that carries none */
	ROCE_RX_E_UDP_CSUM,     /* bad non-zero UDP checksum (ROCE_RX_F_UDP_CSUM) */
	ROCE_RX_E_ICRC,         /* ICRC mismatch (ROCE_RX_F_ICRC) */
	ROCE_RX_E_NUM
};

/* roce_pkt_parse() flags */
#define ROCE_RX_F_ICRC     0x1 /* verify the ICRC */
#define ROCE_RX_F_UDP_CSUM 0x2 /* verify the UDP checksum when it is not 0 */
#define ROCE_RX_F_LOCAL    0x4 /* built by this process's transport and not
				* altered since (PKT_F_LOCAL_ICRC_SKIPPED): no
				* IPv4 header checksum to verify */

/*
 * A validated RoCE v2 frame. Header pointers point into the caller's frame
 * and are NULL for headers the packet does not carry; every pointer and
 * length has been checked against the frame length. Decoded fields are in
 * host order (GIDs and MACs as bytes, as on the wire).
 */
struct roce_pkt_info {
	/* headers */
	const struct roce_eth_hdr *eth;
	const struct roce_ipv4_hdr *ip4;    /* exactly one of ip4/ip6 */
	const struct roce_ipv6_hdr *ip6;
	const struct roce_udp_hdr *udp;
	const struct roce_bth *bth;
	const struct roce_deth *deth;
	const struct roce_reth *reth;
	const struct roce_atmeth *atmeth;
	const struct roce_aeth *aeth;
	const struct roce_atmack *atmack;
	const struct roce_immdt *immdt;
	const struct roce_ieth *ieth;
	const uint8_t *payload;             /* after the extended headers */
	uint32_t payload_len;               /* without pad and ICRC */
	const struct pkt_ref *payload_ref;  /* payload still in the sender's
					     * memory (roce_pkt_parse_pkt of a
					     * PKT_F_PAYLOAD_REF frame), or NULL */

	/* offsets from the start of the frame */
	uint32_t l3_off;                    /* IP header */
	uint32_t l4_off;                    /* UDP header */
	uint32_t bth_off;
	uint32_t icrc_off;
	uint32_t pkt_len;                   /* end of the ICRC; <= frame length
					     * (the rest is Ethernet padding) */

	/* BTH, decoded */
	uint8_t opcode;
	uint8_t transport;                  /* enum roce_transport */
	uint32_t mask;                      /* ROCE_OPF_* of the opcode */
	uint32_t dqpn;
	uint32_t psn;
	uint16_t pkey;
	uint8_t padcnt;
	bool se, migreq, ackreq, fecn, becn;
	uint32_t icrc;                      /* as received */

	/* L2 */
	uint8_t dmac[ROCE_MAC_LEN];
	uint8_t smac[ROCE_MAC_LEN];
	bool has_vlan;
	uint16_t vlan_tci;                  /* PCP | DEI | VID, 0 without VLAN */

	/* L3/L4 */
	uint8_t ip_ver;                     /* 4 or 6 */
	uint8_t tclass;                     /* IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;                  /* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;                /* IPv6 only, else 0 */
	uint8_t sgid[ROCE_GID_LEN];         /* IPv4: ::ffff:a.b.c.d */
	uint8_t dgid[ROCE_GID_LEN];
	uint16_t udp_sport;
};

/* Validate an untrusted frame of len bytes as RoCE v2 and decode it into
 * *info: Ethernet (one optional 802.1Q tag), IPv4 (version, IHL >= 5, total
 * length within the frame, header checksum unless ROCE_RX_F_LOCAL, not a
 * fragment, UDP) or IPv6 (next header UDP, payload length within the frame,
 * no IPv4-mapped address), UDP (port 4791, length = IP payload), BTH (TVer 0, supported
 * opcode, headers and pad fit, no payload on opcodes without one), then the
 * UDP checksum if ROCE_RX_F_UDP_CSUM and the ICRC if ROCE_RX_F_ICRC (these
 * two last, so they never hide another reason). Bytes after the IP datagram
 * (Ethernet padding) are ignored. Reads only frame[0..len). Returns 0, or
 * -ROCE_RX_E_* (the reason); *info is meaningless after an error. */
int roce_pkt_parse(const uint8_t *frame, uint32_t len, unsigned flags,
		   struct roce_pkt_info *info);

/* roce_pkt_parse() on a struct pkt. A frame marked PKT_F_LOCAL_ICRC_SKIPPED
 * (built locally without an ICRC; anything that alters it seals it first)
 * is not ICRC-checked, nor its IPv4 header checksum. Same returns. */
static inline int roce_pkt_parse_pkt(const struct pkt *p, unsigned flags,
				     struct roce_pkt_info *info)
{
	int rc;

	if (p->flags & PKT_F_LOCAL_ICRC_SKIPPED)
		flags = (flags & ~(unsigned)ROCE_RX_F_ICRC) | ROCE_RX_F_LOCAL;
	rc = roce_pkt_parse(p->data, p->len, flags, info);
	if (!rc)
		info->payload_ref = (p->flags & PKT_F_PAYLOAD_REF) ? &p->ref : NULL;
	return rc;
}

/* Short name of a reason ("ICRC", "UDP_PORT", ...); accepts the negative
 * return of roce_pkt_parse() too. Returns "?" for values out of range. */
const char *roce_rx_err_name(int reason);

/* ------------------------------------------------------------------ */
/* Transmit: build.                                                    */

/* roce_path.flags */
#define ROCE_PATH_F_VLAN     0x1 /* insert an 802.1Q tag with vlan_tci */
/* Compute the UDP checksum. Without it the checksum is 0 for IPv4 and
 * IPv6 alike, which is what Linux rxe sends (rxe_net.c prepare_udp_hdr()),
 * and rxe's IPv6 socket accepts 0; a plain kernel UDP/IPv6 receiver would
 * drop it (RFC 6936), so use this flag when such a receiver is on the path. */
#define ROCE_PATH_F_UDP_CSUM 0x2

/*
 * Where a packet goes: addresses and the per-flow IP/UDP fields (what an
 * address handle / QP path holds). IPv4 is used when both GIDs are
 * IPv4-mapped (::ffff:a.b.c.d), IPv6 when neither is.
 */
struct roce_path {
	uint8_t smac[ROCE_MAC_LEN];
	uint8_t dmac[ROCE_MAC_LEN];
	uint8_t sgid[ROCE_GID_LEN];
	uint8_t dgid[ROCE_GID_LEN];
	uint8_t tclass;         /* IPv4 TOS / IPv6 traffic class (DSCP | ECN) */
	uint8_t hop_limit;      /* IPv4 TTL / IPv6 hop limit; 0 means 64 */
	uint16_t udp_sport;     /* see roce_udp_sport_from_qpn() */
	uint32_t flow_label;    /* IPv6 only, 20 bits */
	uint16_t vlan_tci;      /* with ROCE_PATH_F_VLAN */
	uint8_t flags;          /* ROCE_PATH_F_* */
};

/*
 * Per-packet header values. Only the extended headers the opcode carries
 * (roce_opcode_table) are written; the others are ignored.
 */
struct roce_hdr_fields {
	/* BTH */
	uint8_t opcode;
	bool se, migreq, fecn, becn, ackreq;
	uint16_t pkey;
	uint32_t dqpn;
	uint32_t psn;
	/* extended headers */
	struct { uint64_t va; uint32_t rkey; uint32_t len; } reth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint32_t qkey; uint32_t sqpn; } deth;
	uint32_t imm;           /* ImmDt in network order (as ibv imm_data) */
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add; uint64_t compare; } atmeth;
	uint64_t atmack_orig;
	uint32_t ieth_rkey;
	/* IPv4 identification (DF is always set, so any value is fine) */
	uint16_t ip_id;
};

/* Bytes of Ethernet/IP/UDP/BTH/extended headers for this path and opcode
 * (where the payload starts), or 0 for an unsupported opcode. */
uint32_t roce_pkt_hdr_len(const struct roce_path *path, uint8_t opcode);

/* Whole frame length for payload_len bytes of payload (headers, payload,
 * pad, ICRC), or 0 for an unsupported opcode. */
uint32_t roce_pkt_frame_len(const struct roce_path *path, uint8_t opcode,
			    uint32_t payload_len);

/* Write all headers of a packet carrying payload_len bytes into p, from
 * p->data: Ethernet [+VLAN], IPv4 (DF, header checksum) or IPv6, UDP
 * (lengths; checksum 0 unless ROCE_PATH_F_UDP_CSUM), BTH (pad count) and the
 * opcode's extended headers. Sets p->len to the whole frame length and
 * *payload (if not NULL) to where the payload must be copied; then call
 * roce_pkt_finalize(). Returns 0, -EINVAL (unsupported opcode, payload on an
 * opcode without one, one GID IPv4-mapped and the other not) or -EMSGSIZE
 * (does not fit in p or in PKT_MAX_FRAME). */
int roce_pkt_build(struct pkt *p, const struct roce_path *path,
		   const struct roce_hdr_fields *f, uint32_t payload_len,
		   uint8_t **payload);

/* roce_pkt_finalize() flags */
#define ROCE_TX_F_SKIP_ICRC 0x1 /* leave the ICRC 0 and mark the frame
				 * PKT_F_LOCAL_ICRC_SKIPPED (local delivery) */

/* After the payload is in place: zero the pad, write the ICRC, and the UDP
 * checksum if the path asked for one. Returns 0, or -EINVAL if p does not
 * hold a frame laid out by roce_pkt_build(). */
int roce_pkt_finalize(struct pkt *p, unsigned flags);

/* Fill in the ICRC (and UDP checksum, if used) of a frame finalized with
 * ROCE_TX_F_SKIP_ICRC, e.g. before it leaves the host; clears the flag.
 * Does nothing to other frames. Returns 0 or -EINVAL. */
int roce_pkt_fill_icrc(struct pkt *p);

/* A run of the transport (PKT_F_RUN, src/roce/roce_run.c) as its n real
 * frames, byte for byte what the framed path builds (payload copied in, ICRC
 * left out and marked), appended to out; p is left to the caller. Returns
 * 0 or -ENOMEM / -EINVAL (out emptied, counted). */
int roce_run_split(struct pkt *p, struct pkt_queue *out);
/* Cut run p at packet at (< its npkts): out gets packet at as a real frame,
 * then the packets after it, as a run of their own when they can be one
 * (else as real frames); p keeps packets 0..at-1 (at > 0; at 0 the caller
 * frees it). Packets lost on the way (roce_run_lose) stay lost, and are
 * never built. Returns 0 or -ENOMEM / -EINVAL (p unchanged, out emptied). */
int roce_run_cut(struct pkt *p, uint32_t at, struct pkt_queue *out);
/* Packet k of run p is lost on the way (a fault injector's drop): it stays
 * in the description but is never built, placed or counted as delivered
 * (pkt_npkts, pkt_wire_len leave it out). */
void roce_run_lose(struct pkt *p, uint32_t k);

/* roce_pkt_build() + copy of payload + roce_pkt_finalize(p, 0). Same
 * returns. */
int roce_pkt_build_frame(struct pkt *p, const struct roce_path *path,
			 const struct roce_hdr_fields *f, const void *payload,
			 uint32_t payload_len);

/* ------------------------------------------------------------------ */
/* Helpers.                                                            */

/* UDP source port for a QP: 0xC000 | 14-bit hash of the QPN, so flows of
 * different QPs spread over ECMP paths. */
uint16_t roce_udp_sport_from_qpn(uint32_t qpn);

/* True if gid is IPv4-mapped (::ffff:a.b.c.d). */
bool roce_gid_is_ipv4(const uint8_t gid[ROCE_GID_LEN]);

/* gid = ::ffff:ip (ip: 4 bytes in network order). */
void roce_gid_from_ipv4(uint8_t gid[ROCE_GID_LEN], const uint8_t ip[4]);

/* ip = the IPv4 address of an IPv4-mapped gid. Returns 0, or -EINVAL if the
 * gid is not IPv4-mapped (ip untouched). */
int roce_gid_to_ipv4(const uint8_t gid[ROCE_GID_LEN], uint8_t ip[4]);

/* gid = fe80::/64 with the modified EUI-64 interface id of mac (RFC 4291
 * appendix A), the default link-local GID of a port. */
void roce_gid_from_mac(uint8_t gid[ROCE_GID_LEN], const uint8_t mac[ROCE_MAC_LEN]);

/* Internet checksum (RFC 1071) of an IPv4 header of len bytes with the
 * checksum field treated as 0: the value to store, host order. */
uint16_t roce_ipv4_hdr_csum(const void *hdr, uint32_t len);

/* UDP checksum of the datagram at l4 (udp_len bytes, checksum field treated
 * as 0) under the IPv4 or IPv6 header at l3 (version from l3[0]): the value
 * to store (never 0), host order. The caller has validated the lengths. */
uint16_t roce_udp_csum_calc(const uint8_t *l3, const uint8_t *l4, uint32_t udp_len);

#endif /* VRDMA_ROCE_ROCE_PKT_H */
