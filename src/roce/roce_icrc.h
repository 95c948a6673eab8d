/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE v2 invariant CRC (IBTA Annex A17.3.3): a standard CRC-32 over
 *   8 bytes of 0xFF (stands in for the IB LRH),
 *   the IP header with the fields routers may change set to all ones
 *     (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
 *      hop limit),
 *   the UDP header with the checksum set to 0xFFFF,
 *   the BTH with byte 4 (FECN, BECN, reserved) set to 0xFF,
 *   everything after the BTH up to the ICRC (extended headers, payload, pad),
 * stored little-endian in the last 4 bytes of the UDP payload.
 * IPv4 options, if present, are covered as sent.
 *
 * The CRC-32 itself comes from ISA-L (crc32_gzip_refl) or zlib (crc32); the
 * default is the faster one on the reference machine (docs/performance.md).
 */
#ifndef VRDMA_ROCE_ROCE_ICRC_H
#define VRDMA_ROCE_ROCE_ICRC_H

#include <stddef.h>
#include <stdint.h>

enum roce_crc_impl {
	ROCE_CRC_ISAL,
	ROCE_CRC_ZLIB,
};

/* Select the CRC-32 implementation for this process (not thread-safe: call
 * before the data path starts). Returns 0, or -EINVAL for an unknown one. */
int roce_crc_set_impl(enum roce_crc_impl impl);

/* The CRC-32 implementation in use. */
enum roce_crc_impl roce_crc_get_impl(void);

/* Standard CRC-32 (reflected 0xEDB88320, zlib-compatible) of buf, continuing
 * from crc (pass 0 to start). Returns the new CRC. */
uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len);

/* ICRC of the RoCE v2 packet whose IP header starts at l3 and which is len
 * bytes long from there up to, not including, the ICRC (IP header + UDP
 * header + BTH + the rest). The IP version is read from l3[0].
 * Returns 0 and *icrc, or -EINVAL if the version is not 4 or 6, or the IP,
 * UDP and BTH headers do not fit in len. Reads only l3[0..len). */
int roce_icrc_calc(const uint8_t *l3, uint32_t len, uint32_t *icrc);

/* Where the RoCE packet of an Ethernet frame starts (l3_off) and where its
 * ICRC is (icrc_off), from the Ethernet type (one 802.1Q tag allowed) and the
 * IP length fields; bytes after the IP datagram (Ethernet padding) are
 * ignored. Returns 0, or -EINVAL if the frame is not IPv4/IPv6 or its
 * lengths do not fit in len. Does not check UDP port or BTH contents. */
int roce_icrc_locate(const uint8_t *frame, uint32_t len, uint32_t *l3_off,
		     uint32_t *icrc_off);

/* ICRC of an Ethernet frame (see roce_icrc_locate). Returns 0 and *icrc,
 * or -EINVAL. */
int roce_icrc_frame_calc(const uint8_t *frame, uint32_t len, uint32_t *icrc);

/* Compute the ICRC of an Ethernet frame and store it in its ICRC field.
 * Returns 0 or -EINVAL. */
int roce_icrc_frame_set(uint8_t *frame, uint32_t len);

/* Check the ICRC of an Ethernet frame. Returns 0 if it matches, -EBADMSG if
 * it does not, -EINVAL if the frame cannot be located. */
int roce_icrc_frame_verify(const uint8_t *frame, uint32_t len);

#endif /* VRDMA_ROCE_ROCE_ICRC_H */
