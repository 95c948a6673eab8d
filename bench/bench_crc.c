/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC-32 for the RoCE ICRC: zlib crc32_z() against ISA-L crc32_gzip_refl(),
 * raw and through roce_icrc_calc() (which adds the masked header copy), at
 * frame sizes 64..4096 bytes. Prints a markdown table: ns per call and GB/s,
 * the best of many short runs (argument: runs per cell, default 40). Build and run with bench/run_crc.sh.
 */
#include <isa-l/crc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "roce/roce_icrc.h"

static volatile uint32_t sink;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

enum what { RAW_ZLIB, RAW_ISAL, ICRC_ZLIB, ICRC_ISAL, NWHAT };

static const char *const what_name[NWHAT] = {
	"zlib crc32_z", "ISA-L crc32_gzip_refl", "roce_icrc_calc (zlib)",
	"roce_icrc_calc (ISA-L)",
};

/* ns per call of one configuration: best of `runs` runs of `iters` calls. */
static double measure(enum what w, const uint8_t *buf, uint32_t len, long iters, int runs)
{
	double best = 1e30;
	int r;

	if (w == ICRC_ZLIB)
		roce_crc_set_impl(ROCE_CRC_ZLIB);
	if (w == ICRC_ISAL)
		roce_crc_set_impl(ROCE_CRC_ISAL);
	for (r = 0; r < runs; r++) {
		uint32_t acc = 0, icrc;
		double t0 = now_ns(), t;
		long i;

		for (i = 0; i < iters; i++) {
			switch (w) {
			case RAW_ZLIB:
				acc += (uint32_t)crc32_z(0, buf, len);
				break;
			case RAW_ISAL:
				acc += crc32_gzip_refl(0, buf, len);
				break;
			default:
				roce_icrc_calc(buf, len - 4, &icrc);
				acc += icrc;
				break;
			}
		}
		t = (now_ns() - t0) / (double)iters;
		sink += acc;
		if (t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 128, 256, 512, 1024, 1500, 2048, 4096 };
	uint8_t *buf = aligned_alloc(64, 4096);
	int runs = argc > 1 ? atoi(argv[1]) : 40;
	unsigned s, w;

	if (!buf || runs < 1)
		return 1;
	/* An IPv4/UDP/BTH-shaped buffer: roce_icrc_calc() needs version 4,
	 * IHL 5 in byte 0; the rest is arbitrary. */
	for (s = 0; s < 4096; s++)
		buf[s] = (uint8_t)(s * 131 + 7);
	buf[0] = 0x45;

	/* The two libraries must agree before we time them. */
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		if ((uint32_t)crc32_z(0, buf, sizes[s]) != crc32_gzip_refl(0, buf, sizes[s])) {
			fprintf(stderr, "CRC mismatch at %u bytes\n", sizes[s]);
			return 1;
		}

	printf("| bytes |");
	for (w = 0; w < NWHAT; w++)
		printf(" %s ns | GB/s |", what_name[w]);
	printf("\n|---:|");
	for (w = 0; w < NWHAT; w++)
		printf("---:|---:|");
	printf("\n");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t len = sizes[s];
		/* about 4 MB of data per run: short runs, many of them, keep
		 * the best (robust against other load on the machine) */
		long iters = (long)(4u * 1024 * 1024 / len);

		printf("| %u |", len);
		for (w = 0; w < NWHAT; w++) {
			double ns = measure((enum what)w, buf, len, iters, runs);

			printf(" %.1f | %.2f |", ns, (double)len / ns);
		}
		printf("\n");
		fflush(stdout);
	}
	free(buf);
	return 0;
}
