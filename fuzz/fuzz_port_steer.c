/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the device port's receive steering header reader
 * (netdev_port_classify, src/backend/netdev_port.c): any frame from the switch
 * (the network is untrusted) is classified without reading past its end.
 * The input is the frame, copied into a buffer of exactly its length so that
 * ASan sees any overread. Checks: the kind is one of the three, and a RoCE
 * frame is long enough to hold the BTH bytes the QPN came from.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/netdev_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frame;
	uint32_t qpn = 0xffffffffu;
	enum netdev_frame_kind k;

	if (size > 65536)
		return 0;
	frame = malloc(size ? size : 1);
	if (!frame)
		return 0;
	memcpy(frame, data, size);
	k = netdev_port_classify(frame, (uint32_t)size, &qpn);
	if (k != FRAME_OTHER && k != FRAME_NEIGH && k != FRAME_ROCE)
		abort();
	/* Ethernet 14 + IPv4 20 + UDP 8 + BTH 8 at least */
	if (k == FRAME_ROCE && (size < 50 || qpn > 0xffffffu))
		abort();
	free(frame);
	return 0;
}
