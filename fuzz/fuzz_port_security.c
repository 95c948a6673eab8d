/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the port-security check of transmitted frames (port/port_security.h):
 * any bytes as a frame a driver sends, against a device with IPv4, IPv6 and
 * an allow-list. Checks: no crash or sanitizer report, no read past the
 * frame, and a frame passes only with the device's MAC as source.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "port/port_security.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0x5e, 1 };
	static const uint8_t ip4[4] = { 10, 1, 0, 1 };
	static const uint8_t ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	struct psec_cfg c;
	struct psec ps;
	uint8_t *f;

	memset(&c, 0, sizeof(c));
	psec_cfg_allow(&c, "10.5.0.0/24");
	psec_cfg_allow(&c, "fd00::/8");
	psec_init(&ps, &c, mac, ip4, ip6);
	/* an exact-size copy so ASan sees any read past the end */
	f = malloc(size ? size : 1);
	if (!f)
		return 0;
	memcpy(f, data, size);
	if (psec_check_tx(&ps, f, size) == PSEC_OK && (size < 14 || memcmp(f + 6, mac, 6)))
		abort();
	free(f);
	return 0;
}
