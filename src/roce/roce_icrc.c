/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE v2 ICRC (IBTA Annex A17.3.3), see roce_icrc.h for the recipe.
 *
 * The variant fields are masked in a small copy of the IP, UDP and BTH
 * headers (at most 8 + 60 + 8 + 12 bytes); the CRC then continues over the
 * rest of the packet in place, so nothing is copied per payload byte.
 */
#include <errno.h>
#include <isa-l/crc.h>
#include <zlib.h>

#include "common/util.h"
#include "roce/roce_hdr.h"
#include "roce/roce_icrc.h"

/* ISA-L is the faster one on the reference machine (docs/performance.md). */
static enum roce_crc_impl roce_crc_impl = ROCE_CRC_ISAL;

int roce_crc_set_impl(enum roce_crc_impl impl)
{
	if (impl != ROCE_CRC_ISAL && impl != ROCE_CRC_ZLIB)
		return -EINVAL;
	roce_crc_impl = impl;
	return 0;
}

enum roce_crc_impl roce_crc_get_impl(void)
{
	return roce_crc_impl;
}

uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (len == 0)
		return crc;
	if (roce_crc_impl == ROCE_CRC_ISAL)
		return crc32_gzip_refl(crc, buf, len);
	return (uint32_t)crc32_z(crc, buf, len);
}

#define ICRC_LRH_LEN 8
#define ICRC_MAX_IP_HLEN 60

int roce_icrc_calc(const uint8_t *l3, uint32_t len, uint32_t *icrc)
{
	uint8_t hdr[ICRC_LRH_LEN + ICRC_MAX_IP_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN];
	uint8_t *ip = hdr + ICRC_LRH_LEN;
	uint32_t iphl, hlen;
	uint32_t crc;
	bool v6;

	if (len < 1)
		return -EINVAL;
	switch (l3[0] >> 4) {
	case 4:
		v6 = false;
		iphl = (l3[0] & 0x0Fu) * 4;
		if (iphl < ROCE_IPV4_HLEN)
			return -EINVAL;
		break;
	case 6:
		v6 = true;
		iphl = ROCE_IPV6_HLEN;
		break;
	default:
		return -EINVAL;
	}
	hlen = iphl + ROCE_UDP_HLEN + ROCE_BTH_LEN;
	if (len < hlen)
		return -EINVAL;

	memset(hdr, 0xFF, ICRC_LRH_LEN);
	memcpy(ip, l3, hlen);
	if (v6) {
		struct roce_ipv6_hdr *h6 = (struct roce_ipv6_hdr *)ip;

		h6->vtc_flow[0] |= 0x0F;        /* traffic class, high nibble */
		h6->vtc_flow[1] = 0xFF;         /* traffic class low, flow label */
		h6->vtc_flow[2] = 0xFF;
		h6->vtc_flow[3] = 0xFF;
		h6->hop_limit = 0xFF;
	} else {
		struct roce_ipv4_hdr *h4 = (struct roce_ipv4_hdr *)ip;

		h4->tos = 0xFF;
		h4->ttl = 0xFF;
		h4->csum[0] = 0xFF;
		h4->csum[1] = 0xFF;
	}
	{
		struct roce_udp_hdr *udp = (struct roce_udp_hdr *)(ip + iphl);
		struct roce_bth *bth = (struct roce_bth *)(ip + iphl + ROCE_UDP_HLEN);

		udp->csum[0] = 0xFF;
		udp->csum[1] = 0xFF;
		bth->fecn_becn = 0xFF;
	}

	crc = roce_crc32(0, hdr, ICRC_LRH_LEN + hlen);
	crc = roce_crc32(crc, l3 + hlen, len - hlen);
	*icrc = crc;
	return 0;
}

int roce_icrc_locate(const uint8_t *frame, uint32_t len, uint32_t *l3_off,
		     uint32_t *icrc_off)
{
	uint32_t off = ROCE_ETH_HLEN, dgram, min;
	uint16_t type;

	if (len < ROCE_ETH_HLEN)
		return -EINVAL;
	type = get_be16(frame + 12);
	if (type == ROCE_ETH_P_8021Q) {
		if (len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			return -EINVAL;
		type = get_be16(frame + ROCE_ETH_HLEN + 2);
		off += ROCE_VLAN_HLEN;
	}
	if (type == ROCE_ETH_P_IPV4) {
		if (len - off < ROCE_IPV4_HLEN || (frame[off] >> 4) != 4)
			return -EINVAL;
		dgram = get_be16(frame + off + 2);
		min = (frame[off] & 0x0Fu) * 4;
		if (min < ROCE_IPV4_HLEN)
			return -EINVAL;
	} else if (type == ROCE_ETH_P_IPV6) {
		if (len - off < ROCE_IPV6_HLEN || (frame[off] >> 4) != 6)
			return -EINVAL;
		dgram = ROCE_IPV6_HLEN + (uint32_t)get_be16(frame + off + 4);
		min = ROCE_IPV6_HLEN;
	} else {
		return -EINVAL;
	}
	min += ROCE_UDP_HLEN + ROCE_BTH_LEN + ROCE_ICRC_LEN;
	if (dgram < min || dgram > len - off)
		return -EINVAL;
	*l3_off = off;
	*icrc_off = off + dgram - ROCE_ICRC_LEN;
	return 0;
}

int roce_icrc_frame_calc(const uint8_t *frame, uint32_t len, uint32_t *icrc)
{
	uint32_t l3, at;
	int ret;

	ret = roce_icrc_locate(frame, len, &l3, &at);
	if (ret)
		return ret;
	return roce_icrc_calc(frame + l3, at - l3, icrc);
}

int roce_icrc_frame_set(uint8_t *frame, uint32_t len)
{
	uint32_t l3, at, icrc;
	int ret;

	ret = roce_icrc_locate(frame, len, &l3, &at);
	if (ret)
		return ret;
	ret = roce_icrc_calc(frame + l3, at - l3, &icrc);
	if (ret)
		return ret;
	icrc = htole32(icrc);
	memcpy(frame + at, &icrc, ROCE_ICRC_LEN);
	return 0;
}

int roce_icrc_frame_verify(const uint8_t *frame, uint32_t len)
{
	uint32_t l3, at, icrc;
	int ret;

	ret = roce_icrc_locate(frame, len, &l3, &at);
	if (ret)
		return ret;
	ret = roce_icrc_calc(frame + l3, at - l3, &icrc);
	if (ret)
		return ret;
	return get_le32(frame + at) == icrc ? 0 : -EBADMSG;
}
