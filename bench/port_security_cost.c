/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost of port security per frame: psec_check_tx (src/port/port_security.c)
 * on a 1 KiB IPv4 RoCE v2 frame of the device's own addresses, the check
 * every frame a device sends passes (its driver's and its RoCE engine's).
 *
 *   make
 *   cc -std=gnu11 -O2 -D_GNU_SOURCE -Isrc -Iinclude bench/port_security_cost.c \
 *       build/lib/libvrdma-core.a -lpthread -o build/bench/port_security_cost
 *   build/bench/port_security_cost [-n FRAMES]
 *
 * Output: "psec_check_tx_ns X" (wall clock per frame, one thread), then a
 * comment line with the parameters. Timing is reported, never asserted.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "port/port_security.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	unsigned long n = 20000000, refused = 0;
	struct psec_cfg cfg;
	struct in_addr ip;
	struct psec ps;
	uint8_t f[1024];
	uint64_t t0, t1;
	int c;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c != 'n' || !(n = strtoul(optarg, NULL, 0))) {
			fprintf(stderr, "usage: %s [-n FRAMES]\n", argv[0]);
			return 2;
		}
	}
	memset(&cfg, 0, sizeof(cfg));
	inet_pton(AF_INET, "10.0.0.1", &ip);
	psec_init(&ps, &cfg, mac, &ip, NULL);
	/* Ethernet, IPv4 (source 10.0.0.1), UDP to 4791: a RoCE v2 frame */
	memset(f, 0, sizeof(f));
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[23] = 17;
	memcpy(f + 26, &ip, 4);
	f[36] = 4791 >> 8;
	f[37] = 4791 & 0xff;
	t0 = now_ns();
	for (unsigned long i = 0; i < n; i++) {
		f[sizeof(f) - 1] = (uint8_t)i;
		refused += psec_check_tx(&ps, f, sizeof(f)) != PSEC_OK;
		__asm__ volatile("" ::: "memory");
	}
	t1 = now_ns();
	printf("psec_check_tx_ns %.1f\n", (double)(t1 - t0) / (double)n);
	printf("# %lu frames of %zu bytes, %lu refused\n", n, sizeof(f), refused);
	return refused ? 1 : 0;
}
