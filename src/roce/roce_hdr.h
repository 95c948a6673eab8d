/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE v2 wire headers: Ethernet (+ one 802.1Q tag), IPv4/IPv6, UDP, and the
 * InfiniBand transport headers carried in the UDP payload (IBTA Vol. 1
 * ch. 9.2-9.4: BTH, RETH, AETH, DETH, ImmDt, AtomicETH, AtomicAckETH, IETH;
 * Annex A17 for the RoCE v2 encapsulation).
 *
 * Every structure is a byte image of the wire: only uint8_t members, so
 * alignment is 1 and there is no padding (checked below). Fields are read and
 * written only through the accessors in this file, which convert from/to
 * network order; callers never dereference multi-byte fields themselves.
 */
#ifndef VRDMA_ROCE_ROCE_HDR_H
#define VRDMA_ROCE_ROCE_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/util.h"

/* UDP destination port of RoCE v2 (IANA). */
#define ROCE_V2_UDP_DPORT 4791
/* rxe-style UDP source ports: 0xC000 | 14-bit flow hash. */
#define ROCE_UDP_SPORT_BASE 0xC000
#define ROCE_UDP_SPORT_MASK 0x3FFF

#define ROCE_ETH_P_IPV4  0x0800
#define ROCE_ETH_P_IPV6  0x86DD
#define ROCE_ETH_P_8021Q 0x8100
#define ROCE_IPPROTO_UDP 17

/* Header lengths in bytes. */
#define ROCE_ETH_HLEN    14
#define ROCE_VLAN_HLEN   4
#define ROCE_IPV4_HLEN   20 /* without options */
#define ROCE_IPV6_HLEN   40
#define ROCE_UDP_HLEN    8
#define ROCE_BTH_LEN     12
#define ROCE_RETH_LEN    16
#define ROCE_AETH_LEN    4
#define ROCE_DETH_LEN    8
#define ROCE_IMMDT_LEN   4
#define ROCE_ATMETH_LEN  28
#define ROCE_ATMACK_LEN  8
#define ROCE_IETH_LEN    4
#define ROCE_CNP_RSVD_LEN 16 /* reserved bytes after the BTH of a CNP */
#define ROCE_ICRC_LEN    4

#define ROCE_GID_LEN 16
#define ROCE_MAC_LEN 6

#define ROCE_PSN_MASK   0x00FFFFFFu
#define ROCE_QPN_MASK   0x00FFFFFFu
#define ROCE_PKEY_DEFAULT 0xFFFF

/* ------------------------------------------------------------------ */
/* Ethernet II, optional 802.1Q tag.                                   */

struct roce_eth_hdr {
	uint8_t dmac[ROCE_MAC_LEN];
	uint8_t smac[ROCE_MAC_LEN];
	uint8_t ethertype[2];
};

/* Follows an Ethernet header whose ethertype is ROCE_ETH_P_8021Q. */
struct roce_vlan_hdr {
	uint8_t tci[2];         /* PCP 3 | DEI 1 | VID 12 */
	uint8_t ethertype[2];   /* the encapsulated type */
};

static inline uint16_t roce_eth_type(const struct roce_eth_hdr *h) { return get_be16(h->ethertype); }
static inline void roce_eth_set_type(struct roce_eth_hdr *h, uint16_t t) { put_be16(h->ethertype, t); }
static inline uint16_t roce_vlan_tci(const struct roce_vlan_hdr *h) { return get_be16(h->tci); }
static inline uint16_t roce_vlan_type(const struct roce_vlan_hdr *h) { return get_be16(h->ethertype); }

/* ------------------------------------------------------------------ */
/* IPv4 (RFC 791) and IPv6 (RFC 8200) fixed headers.                   */

struct roce_ipv4_hdr {
	uint8_t ver_ihl;        /* version 4 | IHL (32-bit words) */
	uint8_t tos;            /* DSCP 6 | ECN 2 */
	uint8_t tot_len[2];
	uint8_t id[2];
	uint8_t frag_off[2];    /* reserved | DF | MF | offset 13 */
	uint8_t ttl;
	uint8_t protocol;
	uint8_t csum[2];
	uint8_t saddr[4];
	uint8_t daddr[4];
};

/* ECN field (low 2 bits of the IPv4 TOS / IPv6 traffic class, RFC 3168). */
#define ROCE_ECN_MASK      0x03
#define ROCE_ECN_NOT_ECT   0x00
#define ROCE_ECN_ECT1      0x01
#define ROCE_ECN_ECT0      0x02
#define ROCE_ECN_CE        0x03

#define ROCE_IPV4_DF       0x4000
#define ROCE_IPV4_MF       0x2000
#define ROCE_IPV4_OFF_MASK 0x1FFF

static inline uint8_t roce_ipv4_version(const struct roce_ipv4_hdr *h) { return h->ver_ihl >> 4; }
/* Header length in bytes (IHL * 4). */
static inline uint32_t roce_ipv4_hlen(const struct roce_ipv4_hdr *h) { return (h->ver_ihl & 0x0Fu) * 4; }
static inline uint16_t roce_ipv4_tot_len(const struct roce_ipv4_hdr *h) { return get_be16(h->tot_len); }
static inline uint16_t roce_ipv4_id(const struct roce_ipv4_hdr *h) { return get_be16(h->id); }
static inline uint16_t roce_ipv4_frag_off(const struct roce_ipv4_hdr *h) { return get_be16(h->frag_off); }
static inline uint16_t roce_ipv4_csum(const struct roce_ipv4_hdr *h) { return get_be16(h->csum); }

struct roce_ipv6_hdr {
	uint8_t vtc_flow[4];    /* version 4 | traffic class 8 | flow label 20 */
	uint8_t payload_len[2];
	uint8_t next_hdr;
	uint8_t hop_limit;
	uint8_t saddr[16];
	uint8_t daddr[16];
};

static inline uint8_t roce_ipv6_version(const struct roce_ipv6_hdr *h) { return h->vtc_flow[0] >> 4; }
static inline uint8_t roce_ipv6_tclass(const struct roce_ipv6_hdr *h)
{
	return (uint8_t)((get_be32(h->vtc_flow) >> 20) & 0xFF);
}
static inline uint32_t roce_ipv6_flow_label(const struct roce_ipv6_hdr *h)
{
	return get_be32(h->vtc_flow) & 0xFFFFF;
}
static inline uint16_t roce_ipv6_payload_len(const struct roce_ipv6_hdr *h) { return get_be16(h->payload_len); }
static inline void roce_ipv6_set_vtc_flow(struct roce_ipv6_hdr *h, uint8_t tclass, uint32_t flow_label)
{
	put_be32(h->vtc_flow, (6u << 28) | ((uint32_t)tclass << 20) | (flow_label & 0xFFFFF));
}

/* ------------------------------------------------------------------ */
/* UDP (RFC 768).                                                      */

struct roce_udp_hdr {
	uint8_t sport[2];
	uint8_t dport[2];
	uint8_t len[2];
	uint8_t csum[2];
};

static inline uint16_t roce_udp_sport(const struct roce_udp_hdr *h) { return get_be16(h->sport); }
static inline uint16_t roce_udp_dport(const struct roce_udp_hdr *h) { return get_be16(h->dport); }
static inline uint16_t roce_udp_len(const struct roce_udp_hdr *h) { return get_be16(h->len); }
static inline uint16_t roce_udp_csum(const struct roce_udp_hdr *h) { return get_be16(h->csum); }

/* ------------------------------------------------------------------ */
/* Base Transport Header, IBTA 9.2.                                    */

struct roce_bth {
	uint8_t opcode;
	uint8_t flags;          /* SE | MigReq | PadCnt 2 | TVer 4 */
	uint8_t pkey[2];
	uint8_t fecn_becn;      /* FECN | BECN | reserved 6 */
	uint8_t dqpn[3];
	uint8_t ackreq;         /* AckReq | reserved 7 */
	uint8_t psn[3];
};

#define ROCE_BTH_SE          0x80
#define ROCE_BTH_MIGREQ      0x40
#define ROCE_BTH_PADCNT_MASK 0x30
#define ROCE_BTH_PADCNT_SHIFT 4
#define ROCE_BTH_TVER_MASK   0x0F
#define ROCE_BTH_FECN        0x80
#define ROCE_BTH_BECN        0x40
#define ROCE_BTH_ACKREQ      0x80
#define ROCE_BTH_TVER        0 /* the only transport header version */

static inline uint8_t roce_bth_opcode(const struct roce_bth *h) { return h->opcode; }
static inline bool roce_bth_se(const struct roce_bth *h) { return h->flags & ROCE_BTH_SE; }
static inline bool roce_bth_migreq(const struct roce_bth *h) { return h->flags & ROCE_BTH_MIGREQ; }
static inline uint8_t roce_bth_padcnt(const struct roce_bth *h)
{
	return (h->flags & ROCE_BTH_PADCNT_MASK) >> ROCE_BTH_PADCNT_SHIFT;
}
static inline uint8_t roce_bth_tver(const struct roce_bth *h) { return h->flags & ROCE_BTH_TVER_MASK; }
static inline uint16_t roce_bth_pkey(const struct roce_bth *h) { return get_be16(h->pkey); }
static inline bool roce_bth_fecn(const struct roce_bth *h) { return h->fecn_becn & ROCE_BTH_FECN; }
static inline bool roce_bth_becn(const struct roce_bth *h) { return h->fecn_becn & ROCE_BTH_BECN; }
static inline uint32_t roce_bth_dqpn(const struct roce_bth *h) { return get_be24(h->dqpn); }
static inline bool roce_bth_ackreq(const struct roce_bth *h) { return h->ackreq & ROCE_BTH_ACKREQ; }
static inline uint32_t roce_bth_psn(const struct roce_bth *h) { return get_be24(h->psn); }

static inline void roce_bth_set_opcode(struct roce_bth *h, uint8_t op) { h->opcode = op; }
static inline void roce_bth_set_se(struct roce_bth *h, bool on)
{
	h->flags = (uint8_t)((h->flags & ~ROCE_BTH_SE) | (on ? ROCE_BTH_SE : 0));
}
static inline void roce_bth_set_migreq(struct roce_bth *h, bool on)
{
	h->flags = (uint8_t)((h->flags & ~ROCE_BTH_MIGREQ) | (on ? ROCE_BTH_MIGREQ : 0));
}
static inline void roce_bth_set_padcnt(struct roce_bth *h, uint8_t pad)
{
	h->flags = (uint8_t)((h->flags & ~ROCE_BTH_PADCNT_MASK) |
			     ((pad << ROCE_BTH_PADCNT_SHIFT) & ROCE_BTH_PADCNT_MASK));
}
static inline void roce_bth_set_tver(struct roce_bth *h, uint8_t tver)
{
	h->flags = (uint8_t)((h->flags & ~ROCE_BTH_TVER_MASK) | (tver & ROCE_BTH_TVER_MASK));
}
static inline void roce_bth_set_pkey(struct roce_bth *h, uint16_t pkey) { put_be16(h->pkey, pkey); }
static inline void roce_bth_set_fecn(struct roce_bth *h, bool on)
{
	h->fecn_becn = (uint8_t)((h->fecn_becn & ~ROCE_BTH_FECN) | (on ? ROCE_BTH_FECN : 0));
}
static inline void roce_bth_set_becn(struct roce_bth *h, bool on)
{
	h->fecn_becn = (uint8_t)((h->fecn_becn & ~ROCE_BTH_BECN) | (on ? ROCE_BTH_BECN : 0));
}
static inline void roce_bth_set_dqpn(struct roce_bth *h, uint32_t qpn) { put_be24(h->dqpn, qpn & ROCE_QPN_MASK); }
static inline void roce_bth_set_ackreq(struct roce_bth *h, bool on)
{
	h->ackreq = (uint8_t)((h->ackreq & ~ROCE_BTH_ACKREQ) | (on ? ROCE_BTH_ACKREQ : 0));
}
static inline void roce_bth_set_psn(struct roce_bth *h, uint32_t psn) { put_be24(h->psn, psn & ROCE_PSN_MASK); }

/* ------------------------------------------------------------------ */
/* RDMA Extended Transport Header, IBTA 9.3.3: WRITE first/only, READ  */
/* request.                                                            */

struct roce_reth {
	uint8_t va[8];
	uint8_t rkey[4];
	uint8_t dma_len[4];
};

static inline uint64_t roce_reth_va(const struct roce_reth *h) { return get_be64(h->va); }
static inline uint32_t roce_reth_rkey(const struct roce_reth *h) { return get_be32(h->rkey); }
static inline uint32_t roce_reth_len(const struct roce_reth *h) { return get_be32(h->dma_len); }
static inline void roce_reth_set_va(struct roce_reth *h, uint64_t va) { put_be64(h->va, va); }
static inline void roce_reth_set_rkey(struct roce_reth *h, uint32_t rkey) { put_be32(h->rkey, rkey); }
static inline void roce_reth_set_len(struct roce_reth *h, uint32_t len) { put_be32(h->dma_len, len); }

/* ------------------------------------------------------------------ */
/* ACK Extended Transport Header, IBTA 9.3.5.                          */

struct roce_aeth {
	uint8_t syndrome;
	uint8_t msn[3];
};

/* Syndrome: bit 7 reserved, bits 6-5 type, bits 4-0 value. */
#define ROCE_AETH_TYPE_MASK     0x60
#define ROCE_AETH_VALUE_MASK    0x1F
#define ROCE_AETH_ACK           0x00 /* value = credit count */
#define ROCE_AETH_RNR_NAK       0x20 /* value = RNR timer code */
#define ROCE_AETH_NAK           0x60 /* value = NAK code */
#define ROCE_AETH_CREDIT_INVALID 0x1F /* ACK: no credit information */
#define ROCE_AETH_NAK_PSN_SEQ_ERR   0x60
#define ROCE_AETH_NAK_INVALID_REQ   0x61
#define ROCE_AETH_NAK_REM_ACCESS_ERR 0x62
#define ROCE_AETH_NAK_REM_OP_ERR    0x63

static inline uint8_t roce_aeth_syndrome(const struct roce_aeth *h) { return h->syndrome; }
static inline uint32_t roce_aeth_msn(const struct roce_aeth *h) { return get_be24(h->msn); }
static inline void roce_aeth_set_syndrome(struct roce_aeth *h, uint8_t s) { h->syndrome = s; }
static inline void roce_aeth_set_msn(struct roce_aeth *h, uint32_t msn) { put_be24(h->msn, msn & 0xFFFFFF); }

/* ------------------------------------------------------------------ */
/* Datagram Extended Transport Header, IBTA 9.3.2 (UD).                */

struct roce_deth {
	uint8_t qkey[4];
	uint8_t rsvd;
	uint8_t sqpn[3];
};

static inline uint32_t roce_deth_qkey(const struct roce_deth *h) { return get_be32(h->qkey); }
static inline uint32_t roce_deth_sqpn(const struct roce_deth *h) { return get_be24(h->sqpn); }
static inline void roce_deth_set_qkey(struct roce_deth *h, uint32_t qkey) { put_be32(h->qkey, qkey); }
static inline void roce_deth_set_sqpn(struct roce_deth *h, uint32_t qpn)
{
	h->rsvd = 0;
	put_be24(h->sqpn, qpn & ROCE_QPN_MASK);
}

/* ------------------------------------------------------------------ */
/* Immediate Data, IBTA 9.3.6. Opaque: kept in network order, exactly  */
/* as ibv_send_wr.imm_data / ibv_wc.imm_data carry it (__be32).         */

struct roce_immdt {
	uint8_t imm[4];
};

/* The 4 bytes as a uint32_t in memory (network) order, no byte swap. */
static inline uint32_t roce_immdt_raw(const struct roce_immdt *h)
{
	uint32_t v;
	memcpy(&v, h->imm, 4);
	return v;
}
static inline void roce_immdt_set_raw(struct roce_immdt *h, uint32_t be_imm) { memcpy(h->imm, &be_imm, 4); }

/* ------------------------------------------------------------------ */
/* Atomic Extended Transport Header, IBTA 9.3.4 (CmpSwap, FetchAdd).   */

struct roce_atmeth {
	uint8_t va[8];
	uint8_t rkey[4];
	uint8_t swap_add[8];
	uint8_t compare[8];
};

static inline uint64_t roce_atmeth_va(const struct roce_atmeth *h) { return get_be64(h->va); }
static inline uint32_t roce_atmeth_rkey(const struct roce_atmeth *h) { return get_be32(h->rkey); }
static inline uint64_t roce_atmeth_swap_add(const struct roce_atmeth *h) { return get_be64(h->swap_add); }
static inline uint64_t roce_atmeth_compare(const struct roce_atmeth *h) { return get_be64(h->compare); }
static inline void roce_atmeth_set_va(struct roce_atmeth *h, uint64_t va) { put_be64(h->va, va); }
static inline void roce_atmeth_set_rkey(struct roce_atmeth *h, uint32_t rkey) { put_be32(h->rkey, rkey); }
static inline void roce_atmeth_set_swap_add(struct roce_atmeth *h, uint64_t v) { put_be64(h->swap_add, v); }
static inline void roce_atmeth_set_compare(struct roce_atmeth *h, uint64_t v) { put_be64(h->compare, v); }

/* ------------------------------------------------------------------ */
/* Atomic ACK Extended Transport Header, IBTA 9.5.3.                   */

struct roce_atmack {
	uint8_t orig[8];
};

static inline uint64_t roce_atmack_orig(const struct roce_atmack *h) { return get_be64(h->orig); }
static inline void roce_atmack_set_orig(struct roce_atmack *h, uint64_t v) { put_be64(h->orig, v); }

/* ------------------------------------------------------------------ */
/* Invalidate Extended Transport Header, IBTA 9.3.7.                   */

struct roce_ieth {
	uint8_t rkey[4];
};

static inline uint32_t roce_ieth_rkey(const struct roce_ieth *h) { return get_be32(h->rkey); }
static inline void roce_ieth_set_rkey(struct roce_ieth *h, uint32_t rkey) { put_be32(h->rkey, rkey); }

/* ------------------------------------------------------------------ */
/* Layout checks: sizes and the offsets the spec gives.                */

#define ROCE_HDR_CHECK(type, len) \
	_Static_assert(sizeof(struct type) == (len), #type " size"); \
	_Static_assert(_Alignof(struct type) == 1, #type " alignment")

ROCE_HDR_CHECK(roce_eth_hdr, ROCE_ETH_HLEN);
ROCE_HDR_CHECK(roce_vlan_hdr, ROCE_VLAN_HLEN);
ROCE_HDR_CHECK(roce_ipv4_hdr, ROCE_IPV4_HLEN);
ROCE_HDR_CHECK(roce_ipv6_hdr, ROCE_IPV6_HLEN);
ROCE_HDR_CHECK(roce_udp_hdr, ROCE_UDP_HLEN);
ROCE_HDR_CHECK(roce_bth, ROCE_BTH_LEN);
ROCE_HDR_CHECK(roce_reth, ROCE_RETH_LEN);
ROCE_HDR_CHECK(roce_aeth, ROCE_AETH_LEN);
ROCE_HDR_CHECK(roce_deth, ROCE_DETH_LEN);
ROCE_HDR_CHECK(roce_immdt, ROCE_IMMDT_LEN);
ROCE_HDR_CHECK(roce_atmeth, ROCE_ATMETH_LEN);
ROCE_HDR_CHECK(roce_atmack, ROCE_ATMACK_LEN);
ROCE_HDR_CHECK(roce_ieth, ROCE_IETH_LEN);

_Static_assert(offsetof(struct roce_eth_hdr, ethertype) == 12, "eth type");
_Static_assert(offsetof(struct roce_ipv4_hdr, ttl) == 8, "ipv4 ttl");
_Static_assert(offsetof(struct roce_ipv4_hdr, csum) == 10, "ipv4 csum");
_Static_assert(offsetof(struct roce_ipv4_hdr, saddr) == 12, "ipv4 saddr");
_Static_assert(offsetof(struct roce_ipv6_hdr, hop_limit) == 7, "ipv6 hop limit");
_Static_assert(offsetof(struct roce_ipv6_hdr, saddr) == 8, "ipv6 saddr");
_Static_assert(offsetof(struct roce_ipv6_hdr, daddr) == 24, "ipv6 daddr");
_Static_assert(offsetof(struct roce_udp_hdr, csum) == 6, "udp csum");
_Static_assert(offsetof(struct roce_bth, pkey) == 2, "bth pkey");
_Static_assert(offsetof(struct roce_bth, fecn_becn) == 4, "bth fecn");
_Static_assert(offsetof(struct roce_bth, dqpn) == 5, "bth dqpn");
_Static_assert(offsetof(struct roce_bth, ackreq) == 8, "bth ackreq");
_Static_assert(offsetof(struct roce_bth, psn) == 9, "bth psn");
_Static_assert(offsetof(struct roce_reth, rkey) == 8, "reth rkey");
_Static_assert(offsetof(struct roce_reth, dma_len) == 12, "reth len");
_Static_assert(offsetof(struct roce_aeth, msn) == 1, "aeth msn");
_Static_assert(offsetof(struct roce_deth, sqpn) == 5, "deth sqpn");
_Static_assert(offsetof(struct roce_atmeth, rkey) == 8, "atmeth rkey");
_Static_assert(offsetof(struct roce_atmeth, swap_add) == 12, "atmeth swap");
_Static_assert(offsetof(struct roce_atmeth, compare) == 20, "atmeth compare");

#endif /* VRDMA_ROCE_ROCE_HDR_H */
