/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE v2 frame parsing (untrusted input from the network) and building.
 * See roce_pkt.h. The opcode table (roce_opcode.c) says which extended
 * headers follow the BTH and where; nothing here switches on opcodes.
 */
#include <errno.h>

#include "common/util.h"
#include "roce/roce_icrc.h"
#include "roce/roce_pkt.h"

/* ------------------------------------------------------------------ */
/* Internet checksum (RFC 1071).                                       */

/* Adds the big-endian 16-bit words of p[0..len) to sum (a trailing odd
 * byte is padded with 0). Summing 32-bit words is equivalent because
 * 2^16 == 1 modulo 0xFFFF. p must start at an even offset of the checksummed
 * data. */
static uint64_t csum_add(uint64_t sum, const uint8_t *p, uint32_t len)
{
	while (len >= 4) {
		sum += get_be32(p);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		sum += get_be16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

uint16_t roce_ipv4_hdr_csum(const void *hdr, uint32_t len)
{
	const uint8_t *h = hdr;
	uint64_t sum;

	if (len < ROCE_IPV4_HLEN)
		return 0;
	sum = csum_add(0, h, 10);
	sum = csum_add(sum, h + 12, len - 12);
	return (uint16_t)~csum_fold(sum);
}

uint16_t roce_udp_csum_calc(const uint8_t *l3, const uint8_t *l4, uint32_t udp_len)
{
	uint64_t sum;
	uint16_t c;

	if ((l3[0] >> 4) == 6) {
		const struct roce_ipv6_hdr *ip6 = (const void *)l3;

		sum = csum_add(0, ip6->saddr, 32);
	} else {
		const struct roce_ipv4_hdr *ip4 = (const void *)l3;

		sum = csum_add(0, ip4->saddr, 8);
	}
	sum += ROCE_IPPROTO_UDP;
	sum += udp_len;                 /* IPv6: 32-bit length, high half 0 */
	sum = csum_add(sum, l4, 6);     /* ports, length; checksum skipped */
	if (udp_len > ROCE_UDP_HLEN)
		sum = csum_add(sum, l4 + ROCE_UDP_HLEN, udp_len - ROCE_UDP_HLEN);
	c = (uint16_t)~csum_fold(sum);
	return c ? c : 0xFFFF;
}

/* ------------------------------------------------------------------ */
/* Helpers.                                                            */

static const uint8_t roce_v4mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF
};

uint16_t roce_udp_sport_from_qpn(uint32_t qpn)
{
	/* Fibonacci hashing: the top 14 bits of qpn * 2^32/phi. */
	uint32_t h = (qpn & ROCE_QPN_MASK) * 0x61C88647u;

	return (uint16_t)(ROCE_UDP_SPORT_BASE | ((h >> 18) & ROCE_UDP_SPORT_MASK));
}

bool roce_gid_is_ipv4(const uint8_t gid[ROCE_GID_LEN])
{
	return memcmp(gid, roce_v4mapped_prefix, sizeof(roce_v4mapped_prefix)) == 0;
}

void roce_gid_from_ipv4(uint8_t gid[ROCE_GID_LEN], const uint8_t ip[4])
{
	memcpy(gid, roce_v4mapped_prefix, sizeof(roce_v4mapped_prefix));
	memcpy(gid + 12, ip, 4);
}

int roce_gid_to_ipv4(const uint8_t gid[ROCE_GID_LEN], uint8_t ip[4])
{
	if (!roce_gid_is_ipv4(gid))
		return -EINVAL;
	memcpy(ip, gid + 12, 4);
	return 0;
}

void roce_gid_from_mac(uint8_t gid[ROCE_GID_LEN], const uint8_t mac[ROCE_MAC_LEN])
{
	memset(gid, 0, ROCE_GID_LEN);
	gid[0] = 0xFE;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;         /* flip the universal/local bit */
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xFF;
	gid[12] = 0xFE;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

/* ------------------------------------------------------------------ */
/* Receive.                                                            */

static const char *const roce_rx_err_names[ROCE_RX_E_NUM] = {
	[ROCE_RX_OK] = "OK",
	[ROCE_RX_E_ETH_SHORT] = "ETH_SHORT",
	[ROCE_RX_E_ETHERTYPE] = "ETHERTYPE",
	[ROCE_RX_E_IP_VERSION] = "IP_VERSION",
	[ROCE_RX_E_IP4_SHORT] = "IP4_SHORT",
	[ROCE_RX_E_IP4_IHL] = "IP4_IHL",
	[ROCE_RX_E_IP4_LEN] = "IP4_LEN",
	[ROCE_RX_E_IP4_CSUM] = "IP4_CSUM",
	[ROCE_RX_E_IP4_FRAG] = "IP4_FRAG",
	[ROCE_RX_E_IP6_SHORT] = "IP6_SHORT",
	[ROCE_RX_E_IP6_LEN] = "IP6_LEN",
	[ROCE_RX_E_IP6_ADDR] = "IP6_ADDR",
	[ROCE_RX_E_IP_PROTO] = "IP_PROTO",
	[ROCE_RX_E_UDP_SHORT] = "UDP_SHORT",
	[ROCE_RX_E_UDP_PORT] = "UDP_PORT",
	[ROCE_RX_E_UDP_LEN] = "UDP_LEN",
	[ROCE_RX_E_UDP_CSUM] = "UDP_CSUM",
	[ROCE_RX_E_BTH_SHORT] = "BTH_SHORT",
	[ROCE_RX_E_BTH_TVER] = "BTH_TVER",
	[ROCE_RX_E_OPCODE] = "OPCODE",
	[ROCE_RX_E_HDR_LEN] = "HDR_LEN",
	[ROCE_RX_E_PAD] = "PAD",
	[ROCE_RX_E_PAYLOAD] = "PAYLOAD",
	[ROCE_RX_E_ICRC] = "ICRC",
};

const char *roce_rx_err_name(int reason)
{
	if (reason < 0)
		reason = -reason;
	if (reason >= ROCE_RX_E_NUM || !roce_rx_err_names[reason])
		return "?";
	return roce_rx_err_names[reason];
}

/* The header of type t if the opcode carries it, else NULL. */
static inline const void *ext_hdr(const struct roce_opcode_info *op,
				  const uint8_t *bth, enum roce_hdr_type t)
{
	return (op->mask & (1u << t)) ? bth + op->offset[t] : NULL;
}

/* Validates the IPv4 header at frame[off..len); sets *l4_len. */
static int parse_ipv4(const uint8_t *frame, uint32_t len, uint32_t off, unsigned flags,
		      struct roce_pkt_info *info, uint32_t *l4_len)
{
	const struct roce_ipv4_hdr *ip = (const void *)(frame + off);
	uint32_t ihl, tot;

	if (unlikely(len - off < ROCE_IPV4_HLEN))
		return -ROCE_RX_E_IP4_SHORT;
	if (unlikely(roce_ipv4_version(ip) != 4))
		return -ROCE_RX_E_IP_VERSION;
	ihl = roce_ipv4_hlen(ip);
	if (unlikely(ihl < ROCE_IPV4_HLEN))
		return -ROCE_RX_E_IP4_IHL;
	tot = roce_ipv4_tot_len(ip);
	if (unlikely(tot < ihl || tot > len - off))
		return -ROCE_RX_E_IP4_LEN;
	/* ihl <= tot <= len - off: the whole header is in the frame. */
	if (!(flags & ROCE_RX_F_LOCAL) &&
	    unlikely(csum_fold(csum_add(0, frame + off, ihl)) != 0xFFFF))
		return -ROCE_RX_E_IP4_CSUM;
	if (unlikely(roce_ipv4_frag_off(ip) & (ROCE_IPV4_MF | ROCE_IPV4_OFF_MASK)))
		return -ROCE_RX_E_IP4_FRAG;
	if (unlikely(ip->protocol != ROCE_IPPROTO_UDP))
		return -ROCE_RX_E_IP_PROTO;

	info->ip4 = ip;
	info->ip6 = NULL;
	info->ip_ver = 4;
	info->tclass = ip->tos;
	info->hop_limit = ip->ttl;
	info->flow_label = 0;
	roce_gid_from_ipv4(info->sgid, ip->saddr);
	roce_gid_from_ipv4(info->dgid, ip->daddr);
	info->l4_off = off + ihl;
	*l4_len = tot - ihl;
	return 0;
}

/* Validates the IPv6 header at frame[off..len); sets *l4_len. */
static int parse_ipv6(const uint8_t *frame, uint32_t len, uint32_t off,
		      struct roce_pkt_info *info, uint32_t *l4_len)
{
	const struct roce_ipv6_hdr *ip = (const void *)(frame + off);
	uint32_t plen;

	if (unlikely(len - off < ROCE_IPV6_HLEN))
		return -ROCE_RX_E_IP6_SHORT;
	if (unlikely(roce_ipv6_version(ip) != 6))
		return -ROCE_RX_E_IP_VERSION;
	plen = roce_ipv6_payload_len(ip);
	if (unlikely(plen > len - off - ROCE_IPV6_HLEN))
		return -ROCE_RX_E_IP6_LEN;
	/* No extension headers: RoCE v2 puts UDP right after the IPv6 header. */
	if (unlikely(ip->next_hdr != ROCE_IPPROTO_UDP))
		return -ROCE_RX_E_IP_PROTO;
	/* IPv4-mapped addresses never appear in IPv6 headers (RFC 4291
	 * 2.5.5.2); here they would alias an IPv4 peer's GID. */
	if (unlikely(roce_gid_is_ipv4(ip->saddr) || roce_gid_is_ipv4(ip->daddr)))
		return -ROCE_RX_E_IP6_ADDR;

	info->ip4 = NULL;
	info->ip6 = ip;
	info->ip_ver = 6;
	info->tclass = roce_ipv6_tclass(ip);
	info->hop_limit = ip->hop_limit;
	info->flow_label = roce_ipv6_flow_label(ip);
	memcpy(info->sgid, ip->saddr, ROCE_GID_LEN);
	memcpy(info->dgid, ip->daddr, ROCE_GID_LEN);
	info->l4_off = off + ROCE_IPV6_HLEN;
	*l4_len = plen;
	return 0;
}

int roce_pkt_parse(const uint8_t *frame, uint32_t len, unsigned flags,
		   struct roce_pkt_info *info)
{
	const struct roce_opcode_info *op;
	const struct roce_udp_hdr *udp;
	const struct roce_bth *bth;
	const uint8_t *b;
	uint32_t off = ROCE_ETH_HLEN, l4_len, udp_len, rest, avail, pad;
	uint16_t type;
	int ret;

	/* Ethernet, optional 802.1Q tag */
	if (unlikely(len < ROCE_ETH_HLEN))
		return -ROCE_RX_E_ETH_SHORT;
	info->eth = (const void *)frame;
	memcpy(info->dmac, info->eth->dmac, ROCE_MAC_LEN);
	memcpy(info->smac, info->eth->smac, ROCE_MAC_LEN);
	type = roce_eth_type(info->eth);
	info->has_vlan = false;
	info->vlan_tci = 0;
	if (type == ROCE_ETH_P_8021Q) {
		const struct roce_vlan_hdr *vh;

		if (unlikely(len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN))
			return -ROCE_RX_E_ETH_SHORT;
		vh = (const void *)(frame + ROCE_ETH_HLEN);
		info->has_vlan = true;
		info->vlan_tci = roce_vlan_tci(vh);
		type = roce_vlan_type(vh);
		off += ROCE_VLAN_HLEN;
	}
	info->l3_off = off;

	/* IP */
	if (type == ROCE_ETH_P_IPV4)
		ret = parse_ipv4(frame, len, off, flags, info, &l4_len);
	else if (type == ROCE_ETH_P_IPV6)
		ret = parse_ipv6(frame, len, off, info, &l4_len);
	else
		ret = -ROCE_RX_E_ETHERTYPE;
	if (unlikely(ret))
		return ret;

	/* UDP: l4_off + l4_len <= len was established by the IP checks. */
	if (unlikely(l4_len < ROCE_UDP_HLEN))
		return -ROCE_RX_E_UDP_SHORT;
	udp = (const void *)(frame + info->l4_off);
	if (unlikely(roce_udp_dport(udp) != ROCE_V2_UDP_DPORT))
		return -ROCE_RX_E_UDP_PORT;
	udp_len = roce_udp_len(udp);
	if (unlikely(udp_len != l4_len))
		return -ROCE_RX_E_UDP_LEN;
	info->udp = udp;
	info->udp_sport = roce_udp_sport(udp);

	/* BTH and the opcode's extended headers */
	rest = udp_len - ROCE_UDP_HLEN;
	if (unlikely(rest < ROCE_BTH_LEN + ROCE_ICRC_LEN))
		return -ROCE_RX_E_BTH_SHORT;
	info->bth_off = info->l4_off + ROCE_UDP_HLEN;
	b = frame + info->bth_off;
	bth = (const void *)b;
	if (unlikely(roce_bth_tver(bth) != ROCE_BTH_TVER))
		return -ROCE_RX_E_BTH_TVER;
	op = roce_opcode_get(roce_bth_opcode(bth));
	if (unlikely(!op->name))
		return -ROCE_RX_E_OPCODE;
	if (unlikely(rest < op->length + (uint32_t)ROCE_ICRC_LEN))
		return -ROCE_RX_E_HDR_LEN;
	avail = rest - op->length - ROCE_ICRC_LEN;
	pad = roce_bth_padcnt(bth);
	/* IBTA 9.2: PadCnt pads the payload to a multiple of 4 bytes, so
	 * payload + pad is itself a multiple of 4. */
	if (unlikely(pad > avail || (avail & 3)))
		return -ROCE_RX_E_PAD;
	if (unlikely(!(op->mask & ROCE_OPF_PAYLOAD) && avail))
		return -ROCE_RX_E_PAYLOAD;

	info->bth = bth;
	info->opcode = roce_bth_opcode(bth);
	info->transport = op->transport;
	info->mask = op->mask;
	info->dqpn = roce_bth_dqpn(bth);
	info->psn = roce_bth_psn(bth);
	info->pkey = roce_bth_pkey(bth);
	info->padcnt = (uint8_t)pad;
	info->se = roce_bth_se(bth);
	info->migreq = roce_bth_migreq(bth);
	info->ackreq = roce_bth_ackreq(bth);
	info->fecn = roce_bth_fecn(bth);
	info->becn = roce_bth_becn(bth);
	info->deth = ext_hdr(op, b, ROCE_HDR_DETH);
	info->reth = ext_hdr(op, b, ROCE_HDR_RETH);
	info->atmeth = ext_hdr(op, b, ROCE_HDR_ATMETH);
	info->aeth = ext_hdr(op, b, ROCE_HDR_AETH);
	info->atmack = ext_hdr(op, b, ROCE_HDR_ATMACK);
	info->immdt = ext_hdr(op, b, ROCE_HDR_IMMDT);
	info->ieth = ext_hdr(op, b, ROCE_HDR_IETH);
	info->payload = b + op->length;
	info->payload_ref = NULL;
	info->payload_len = avail - pad;
	info->icrc_off = info->bth_off + rest - ROCE_ICRC_LEN;
	info->pkt_len = info->bth_off + rest;
	info->icrc = get_le32(frame + info->icrc_off);

	/* The checks that read the whole packet come last, so they only ever
	 * turn an otherwise valid frame into UDP_CSUM or ICRC. */
	if ((flags & ROCE_RX_F_UDP_CSUM) && roce_udp_csum(udp) != 0 &&
	    roce_udp_csum_calc(frame + off, (const uint8_t *)udp, udp_len) != roce_udp_csum(udp))
		return -ROCE_RX_E_UDP_CSUM;
	if (flags & ROCE_RX_F_ICRC) {
		uint32_t icrc;

		if (unlikely(roce_icrc_calc(frame + off, info->icrc_off - off, &icrc) ||
			     icrc != info->icrc))
			return -ROCE_RX_E_ICRC;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Transmit.                                                           */

static uint32_t path_l2_len(const struct roce_path *path)
{
	return ROCE_ETH_HLEN + ((path->flags & ROCE_PATH_F_VLAN) ? ROCE_VLAN_HLEN : 0);
}

static bool path_is_ipv4(const struct roce_path *path)
{
	return roce_gid_is_ipv4(path->sgid) && roce_gid_is_ipv4(path->dgid);
}

uint32_t roce_pkt_hdr_len(const struct roce_path *path, uint8_t opcode)
{
	const struct roce_opcode_info *op = roce_opcode_get(opcode);

	if (!op->name)
		return 0;
	return path_l2_len(path) + (path_is_ipv4(path) ? ROCE_IPV4_HLEN : ROCE_IPV6_HLEN) +
	       ROCE_UDP_HLEN + op->length;
}

uint32_t roce_pkt_frame_len(const struct roce_path *path, uint8_t opcode,
			    uint32_t payload_len)
{
	uint32_t h = roce_pkt_hdr_len(path, opcode);

	if (!h)
		return 0;
	return h + ALIGN_UP(payload_len, 4u) + ROCE_ICRC_LEN;
}

/* Writes the opcode's extended headers after the BTH at b. */
static void build_ext_hdrs(const struct roce_opcode_info *op, uint8_t *b,
			   const struct roce_hdr_fields *f)
{
	uint32_t m = op->mask;

	if (m & ROCE_OPF_DETH) {
		struct roce_deth *h = (void *)(b + op->offset[ROCE_HDR_DETH]);

		roce_deth_set_qkey(h, f->deth.qkey);
		roce_deth_set_sqpn(h, f->deth.sqpn);
	}
	if (m & ROCE_OPF_RETH) {
		struct roce_reth *h = (void *)(b + op->offset[ROCE_HDR_RETH]);

		roce_reth_set_va(h, f->reth.va);
		roce_reth_set_rkey(h, f->reth.rkey);
		roce_reth_set_len(h, f->reth.len);
	}
	if (m & ROCE_OPF_ATMETH) {
		struct roce_atmeth *h = (void *)(b + op->offset[ROCE_HDR_ATMETH]);

		roce_atmeth_set_va(h, f->atmeth.va);
		roce_atmeth_set_rkey(h, f->atmeth.rkey);
		roce_atmeth_set_swap_add(h, f->atmeth.swap_add);
		roce_atmeth_set_compare(h, f->atmeth.compare);
	}
	if (m & ROCE_OPF_AETH) {
		struct roce_aeth *h = (void *)(b + op->offset[ROCE_HDR_AETH]);

		roce_aeth_set_syndrome(h, f->aeth.syndrome);
		roce_aeth_set_msn(h, f->aeth.msn);
	}
	if (m & ROCE_OPF_ATMACK) {
		struct roce_atmack *h = (void *)(b + op->offset[ROCE_HDR_ATMACK]);

		roce_atmack_set_orig(h, f->atmack_orig);
	}
	if (m & ROCE_OPF_IMMDT) {
		struct roce_immdt *h = (void *)(b + op->offset[ROCE_HDR_IMMDT]);

		roce_immdt_set_raw(h, f->imm);
	}
	if (m & ROCE_OPF_IETH) {
		struct roce_ieth *h = (void *)(b + op->offset[ROCE_HDR_IETH]);

		roce_ieth_set_rkey(h, f->ieth_rkey);
	}
	if (m & ROCE_OPF_CNP)
		memset(b + ROCE_BTH_LEN, 0, ROCE_CNP_RSVD_LEN);
}

/* Room for a frame at p->data, or 0 if p->data is outside p->buf. */
static uint32_t pkt_room(const struct pkt *p)
{
	uintptr_t start = (uintptr_t)p->buf, d = (uintptr_t)p->data;

	if (d < start || d > start + PKT_BUF_SIZE)
		return 0;
	return MIN((uint32_t)(start + PKT_BUF_SIZE - d), (uint32_t)PKT_MAX_FRAME);
}

int roce_pkt_build(struct pkt *p, const struct roce_path *path,
		   const struct roce_hdr_fields *f, uint32_t payload_len,
		   uint8_t **payload)
{
	const struct roce_opcode_info *op = roce_opcode_get(f->opcode);
	struct roce_eth_hdr *eth;
	struct roce_udp_hdr *udp;
	struct roce_bth *bth;
	uint8_t *buf = p->data, *l3;
	uint32_t l2, l3_len, pad, udp_len, total;
	bool v4;

	if (!op->name || (payload_len && !(op->mask & ROCE_OPF_PAYLOAD)))
		return -EINVAL;
	v4 = roce_gid_is_ipv4(path->sgid);
	if (v4 != roce_gid_is_ipv4(path->dgid))
		return -EINVAL;
	if (payload_len > PKT_MAX_FRAME)
		return -EMSGSIZE;
	l2 = path_l2_len(path);
	l3_len = v4 ? ROCE_IPV4_HLEN : ROCE_IPV6_HLEN;
	pad = (4 - (payload_len & 3)) & 3;
	udp_len = ROCE_UDP_HLEN + op->length + payload_len + pad + ROCE_ICRC_LEN;
	total = l2 + l3_len + udp_len;
	if (total > pkt_room(p))
		return -EMSGSIZE;

	/* Ethernet */
	eth = (void *)buf;
	memcpy(eth->dmac, path->dmac, ROCE_MAC_LEN);
	memcpy(eth->smac, path->smac, ROCE_MAC_LEN);
	if (path->flags & ROCE_PATH_F_VLAN) {
		roce_eth_set_type(eth, ROCE_ETH_P_8021Q);
		put_be16(buf + ROCE_ETH_HLEN, path->vlan_tci);
		put_be16(buf + ROCE_ETH_HLEN + 2, v4 ? ROCE_ETH_P_IPV4 : ROCE_ETH_P_IPV6);
	} else {
		roce_eth_set_type(eth, v4 ? ROCE_ETH_P_IPV4 : ROCE_ETH_P_IPV6);
	}

	/* IP */
	l3 = buf + l2;
	if (v4) {
		struct roce_ipv4_hdr *ip = (void *)l3;

		ip->ver_ihl = 0x45;
		ip->tos = path->tclass;
		put_be16(ip->tot_len, (uint16_t)(ROCE_IPV4_HLEN + udp_len));
		put_be16(ip->id, f->ip_id);
		put_be16(ip->frag_off, ROCE_IPV4_DF);
		ip->ttl = path->hop_limit ? path->hop_limit : 64;
		ip->protocol = ROCE_IPPROTO_UDP;
		memcpy(ip->saddr, path->sgid + 12, 4);
		memcpy(ip->daddr, path->dgid + 12, 4);
		put_be16(ip->csum, roce_ipv4_hdr_csum(ip, ROCE_IPV4_HLEN));
	} else {
		struct roce_ipv6_hdr *ip = (void *)l3;

		roce_ipv6_set_vtc_flow(ip, path->tclass, path->flow_label);
		put_be16(ip->payload_len, (uint16_t)udp_len);
		ip->next_hdr = ROCE_IPPROTO_UDP;
		ip->hop_limit = path->hop_limit ? path->hop_limit : 64;
		memcpy(ip->saddr, path->sgid, ROCE_GID_LEN);
		memcpy(ip->daddr, path->dgid, ROCE_GID_LEN);
	}

	/* UDP. A non-zero checksum field tells roce_pkt_finalize() to compute
	 * the checksum once the payload is there. */
	udp = (void *)(l3 + l3_len);
	put_be16(udp->sport, path->udp_sport);
	put_be16(udp->dport, ROCE_V2_UDP_DPORT);
	put_be16(udp->len, (uint16_t)udp_len);
	put_be16(udp->csum, (path->flags & ROCE_PATH_F_UDP_CSUM) ? 0xFFFF : 0);

	/* BTH */
	bth = (void *)((uint8_t *)udp + ROCE_UDP_HLEN);
	bth->opcode = f->opcode;
	bth->flags = (uint8_t)((f->se ? ROCE_BTH_SE : 0) | (f->migreq ? ROCE_BTH_MIGREQ : 0) |
			       (pad << ROCE_BTH_PADCNT_SHIFT) | ROCE_BTH_TVER);
	roce_bth_set_pkey(bth, f->pkey);
	bth->fecn_becn = (uint8_t)((f->fecn ? ROCE_BTH_FECN : 0) | (f->becn ? ROCE_BTH_BECN : 0));
	roce_bth_set_dqpn(bth, f->dqpn);
	bth->ackreq = f->ackreq ? ROCE_BTH_ACKREQ : 0;
	roce_bth_set_psn(bth, f->psn);
	build_ext_hdrs(op, (uint8_t *)bth, f);

	p->len = total;
	if (payload)
		*payload = (uint8_t *)bth + op->length;
	return 0;
}

/* Finds the parts of a frame laid out by roce_pkt_build(): IP header,
 * UDP header and ICRC offsets. Returns 0 or -EINVAL. */
static int tx_locate(const uint8_t *buf, uint32_t len, uint32_t *l3,
		     uint32_t *l4, uint32_t *icrc_off)
{
	uint32_t iphl;
	int ret;

	ret = roce_icrc_locate(buf, len, l3, icrc_off);
	if (ret || *icrc_off + ROCE_ICRC_LEN != len)
		return -EINVAL;
	iphl = (buf[*l3] >> 4) == 6 ? ROCE_IPV6_HLEN : (buf[*l3] & 0x0Fu) * 4;
	*l4 = *l3 + iphl;
	/* roce_icrc_locate() checked the datagram holds IP + UDP + BTH + ICRC. */
	if (get_be16(buf + *l4 + 4) != len - *l4)
		return -EINVAL;
	return 0;
}

static void tx_udp_csum(uint8_t *buf, uint32_t len, uint32_t l3, uint32_t l4)
{
	uint8_t *csum = buf + l4 + 6;

	if (csum[0] | csum[1])
		put_be16(csum, roce_udp_csum_calc(buf + l3, buf + l4, len - l4));
}

int roce_pkt_finalize(struct pkt *p, unsigned flags)
{
	uint8_t *buf = p->data;
	uint32_t l3, l4, at, pad, icrc = 0;

	if (tx_locate(buf, p->len, &l3, &l4, &at))
		return -EINVAL;
	pad = roce_bth_padcnt((const struct roce_bth *)(buf + l4 + ROCE_UDP_HLEN));
	if (at - (l4 + ROCE_UDP_HLEN + ROCE_BTH_LEN) < pad)
		return -EINVAL;
	memset(buf + at - pad, 0, pad);
	if (flags & ROCE_TX_F_SKIP_ICRC) {
		p->flags |= PKT_F_LOCAL_ICRC_SKIPPED;
	} else {
		if (roce_icrc_calc(buf + l3, at - l3, &icrc))
			return -EINVAL;
		p->flags &= (uint16_t)~PKT_F_LOCAL_ICRC_SKIPPED;
	}
	icrc = htole32(icrc);
	memcpy(buf + at, &icrc, ROCE_ICRC_LEN);
	tx_udp_csum(buf, p->len, l3, l4);
	return 0;
}

int roce_pkt_fill_icrc(struct pkt *p)
{
	uint8_t *buf = p->data;
	uint32_t l3, l4, at, icrc;

	/* A run is split before it is seen (roce_run_split): never here. */
	if (p->flags & PKT_F_RUN)
		return -EINVAL;
	/* A frame seen outside the process gets its payload first. */
	pkt_ref_fill(p);
	if (!(p->flags & PKT_F_LOCAL_ICRC_SKIPPED))
		return 0;
	if (tx_locate(buf, p->len, &l3, &l4, &at) ||
	    roce_icrc_calc(buf + l3, at - l3, &icrc))
		return -EINVAL;
	icrc = htole32(icrc);
	memcpy(buf + at, &icrc, ROCE_ICRC_LEN);
	tx_udp_csum(buf, p->len, l3, l4);
	p->flags &= (uint16_t)~PKT_F_LOCAL_ICRC_SKIPPED;
	return 0;
}

int roce_pkt_build_frame(struct pkt *p, const struct roce_path *path,
			 const struct roce_hdr_fields *f, const void *payload,
			 uint32_t payload_len)
{
	uint8_t *dst;
	int ret;

	ret = roce_pkt_build(p, path, f, payload_len, &dst);
	if (ret)
		return ret;
	if (payload_len)
		memcpy(dst, payload, payload_len);
	return roce_pkt_finalize(p, 0);
}
