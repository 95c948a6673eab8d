// SPDX-License-Identifier: BSD-3-Clause
/*
 * Placement copies into buffers in rotation (docs/performance.md "Cold
 * destinations"): N source and N destination buffers of 64 KiB, copied
 * round robin, so each destination is written again after N - 1 others,
 * as with N QPs each writing its own buffer. Three ways, each its best of
 * 20 rounds of 50 ms, in GB/s:
 *   plain     memmove
 *   streamed  roce_copy_to_mem with every destination cold (streaming
 *             stores)
 *   auto      roce_copy_to_mem with the daemon's threshold (a quarter of
 *             the last-level cache)
 * The rotation sizes show where streaming stores start to pay on this
 * machine; the threshold should sit at or above that point.
 *
 * usage: bench/build_engine.sh copy_cold && build/bench/copy_cold [N...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce/roce_tp.h"

#define BUF (64u << 10)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void copy_plain(void *d, const void *s, size_t n)
{
	memmove(d, s, n);
}

static uint64_t streamed(void)
{
	struct roce_copy_stats st;

	roce_copy_get_stats(&st);
	return st.streamed;
}

static double best(unsigned n, uint8_t **src, uint8_t **dst,
		   void (*copy)(void *, const void *, size_t), uint64_t *copies)
{
	double top = 0;

	for (int r = 0; r < 20; r++) {
		double t0 = now(), t;
		uint64_t bytes = 0;

		do {
			for (unsigned i = 0; i < n; i++)
				copy(dst[i], src[i], BUF);
			bytes += (uint64_t)n * BUF;
			*copies += n;
			t = now();
		} while (t - t0 < 0.05);
		if (bytes / (t - t0) / 1e9 > top)
			top = bytes / (t - t0) / 1e9;
	}
	return top;
}

int main(int argc, char **argv)
{
	static const unsigned dflt[] = { 1, 16, 64, 96, 128, 192, 256, 512, 1024 };
	uint64_t cold = roce_copy_llc_bytes() / 4;
	unsigned ns[64], cnt = 0, max = 0;
	uint8_t **src, **dst;

	for (int i = 1; i < argc && cnt < 64; i++)
		ns[cnt++] = (unsigned)strtoul(argv[i], NULL, 10);
	if (!cnt)
		for (; cnt < sizeof(dflt) / sizeof(dflt[0]); cnt++)
			ns[cnt] = dflt[cnt];
	for (unsigned i = 0; i < cnt; i++)
		max = ns[i] > max ? ns[i] : max;
	src = calloc(max, sizeof(*src));
	dst = calloc(max, sizeof(*dst));
	if (!src || !dst)
		return 1;
	for (unsigned i = 0; i < max; i++) {
		void *s, *d;

		if (posix_memalign(&s, BUF, BUF) || posix_memalign(&d, BUF, BUF))
			return 1;
		memset(s, (int)i, BUF);
		memset(d, 0, BUF);
		src[i] = s;
		dst[i] = d;
	}
	printf("# 64 KiB buffers in rotation; threshold of auto: %llu MiB\n",
	       (unsigned long long)(cold >> 20));
	printf("%6s %10s %8s %9s %6s %10s\n", "N", "dest_MiB", "plain", "streamed", "auto",
	       "auto_strm%");
	for (unsigned k = 0; k < cnt; k++) {
		unsigned n = ns[k] ? ns[k] : 1;
		uint64_t c = 0, s0;
		double p, s, a;

		if (n > max)
			n = max;
		p = best(n, src, dst, copy_plain, &c);
		roce_copy_set_cold(4096);
		s = best(n, src, dst, roce_copy_to_mem, &c);
		roce_copy_set_cold(cold);
		c = 0;
		s0 = streamed();
		a = best(n, src, dst, roce_copy_to_mem, &c);
		printf("%6u %10.1f %8.2f %9.2f %6.2f %10.1f\n", n, n * (BUF / 1048576.0), p, s, a,
		       100.0 * (double)(streamed() - s0) / (double)c);
	}
	return 0;
}
