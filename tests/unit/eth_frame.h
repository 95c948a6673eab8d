/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test frames for the switch and the trunk (header only).
 */
#ifndef VRDMA_TESTS_ETH_FRAME_H
#define VRDMA_TESTS_ETH_FRAME_H

#include <stdint.h>
#include <string.h>

#include "port/pkt.h"

/* A len-byte frame dst <- src of EtherType 0x88b5 (local experimental); the
 * caller fills its payload from byte 14. NULL when no buffer is free. */
static inline struct pkt *eth_frame_new(const uint8_t *dst, const uint8_t *src, uint32_t len)
{
	struct pkt *p = pkt_alloc();

	if (!p)
		return NULL;
	memcpy(p->data, dst, 6);
	memcpy(p->data + 6, src, 6);
	p->data[12] = 0x88;
	p->data[13] = 0xb5;
	p->len = len;
	return p;
}

#endif /* VRDMA_TESTS_ETH_FRAME_H */
