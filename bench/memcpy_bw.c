// SPDX-License-Identifier: BSD-3-Clause
/*
 * memcpy bandwidth on one core, the physical reference for vrdma's data
 * path numbers (bench/run.sh, docs/performance.md "Verbs performance").
 *
 * Four cases, each reported in GB/s (10^9 bytes copied per second):
 *   4k_hot     the same 4 KiB copied again and again (source and
 *              destination stay in L1)
 *   1m_hot     the same 1 MiB copied again and again (stays in L2/L3)
 *   1m_cold    1 MiB copies walking sequentially through two pools much
 *              larger than the last-level cache (every copy misses)
 *   rand_4k    4 KiB copies between random 4 KiB-aligned pages of those
 *              two pools (misses, no prefetcher help across copies)
 *
 * Each case runs for SEC seconds split into short rounds of ROUND_MS; the
 * best round is reported: on a shared, busy machine a round short enough
 * to fit in one scheduler slice is sometimes undisturbed, a long one never. memcpy is called through a volatile pointer so the compiler
 * cannot inline, merge or drop the copies.
 *
 * usage: memcpy_bw [-t SEC] [-l ROUND_MS] [-p POOL_MIB] [-c CPU]
 * output: one line per case, "memcpy_<case>_GBps <value>", then a
 *         comment line with the parameters.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef void *(*memcpy_fn)(void *, const void *, size_t);
static memcpy_fn volatile bench_copy = memcpy;

static double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: cheap, good enough to defeat the prefetchers. */
static uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

enum bench_case { CASE_4K_HOT, CASE_1M_HOT, CASE_1M_COLD, CASE_RAND_4K };

struct bench_ctx {
	unsigned char *src, *dst;	/* pools, pool bytes each */
	size_t pool;
	size_t cold_off;		/* next offset for 1m_cold */
	uint64_t seed;
};

/* Runs one case for about @sec seconds; returns bytes copied per second. */
static double bench_round(struct bench_ctx *c, enum bench_case k, double sec)
{
	size_t len = (k == CASE_4K_HOT || k == CASE_RAND_4K) ? 4096 : 1 << 20;
	size_t pages = c->pool / 4096;
	uint64_t bytes = 0;
	double t0 = bench_now(), t1 = t0;
	/* Check the clock every batch copies, about 50-100 us of work. */
	unsigned batch = len == 4096 ? 64 : 4;

	do {
		for (unsigned i = 0; i < batch; i++) {
			switch (k) {
			case CASE_4K_HOT:
			case CASE_1M_HOT:
				bench_copy(c->dst, c->src, len);
				break;
			case CASE_1M_COLD:
				if (c->cold_off + len > c->pool)
					c->cold_off = 0;
				bench_copy(c->dst + c->cold_off,
					   c->src + c->cold_off, len);
				c->cold_off += len;
				break;
			case CASE_RAND_4K: {
				size_t s = bench_rand(&c->seed) % pages;
				size_t d = bench_rand(&c->seed) % pages;

				bench_copy(c->dst + d * 4096,
					   c->src + s * 4096, len);
				break;
			}
			}
			bytes += len;
		}
		t1 = bench_now();
	} while (t1 - t0 < sec);
	return (double)bytes / (t1 - t0);
}

static void bench_usage(void)
{
	fprintf(stderr,
		"usage: memcpy_bw [-t SEC] [-l ROUND_MS] [-p POOL_MIB] [-c CPU]\n"
		"  -t SEC       seconds per case (default 2)\n"
		"  -l ROUND_MS  length of one round, best kept (default 1)\n"
		"  -p POOL_MIB  size of each cold pool in MiB (default 512,\n"
		"               must be well above the last-level cache)\n"
		"  -c CPU       pin to this CPU (default: not pinned)\n");
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
		"memcpy_4k_hot_GBps", "memcpy_1m_hot_GBps",
		"memcpy_1m_cold_GBps", "memcpy_rand_4k_cold_GBps",
	};
	struct bench_ctx c = { .seed = 0x9E3779B97F4A7C15ULL };
	double sec = 2.0;
	long round_ms = 1, pool_mib = 512, cpu = -1;
	int opt;

	while ((opt = getopt(argc, argv, "t:l:p:c:h")) != -1) {
		char *end = NULL;

		errno = 0;
		switch (opt) {
		case 't':
			sec = strtod(optarg, &end);
			if (sec <= 0 || sec > 600)
				end = NULL;
			break;
		case 'l':
			round_ms = strtol(optarg, &end, 10);
			if (round_ms < 1 || round_ms > 10000)
				end = NULL;
			break;
		case 'p':
			pool_mib = strtol(optarg, &end, 10);
			if (pool_mib < 2 || pool_mib > 65536)
				end = NULL;
			break;
		case 'c':
			cpu = strtol(optarg, &end, 10);
			if (cpu < 0 || cpu >= CPU_SETSIZE)
				end = NULL;
			break;
		default:
			bench_usage();
			return opt == 'h' ? 0 : 2;
		}
		if (!end || *end || errno) {
			fprintf(stderr, "memcpy_bw: bad value for -%c: %s\n",
				opt, optarg);
			return 2;
		}
	}
	if (optind != argc) {
		bench_usage();
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			perror("memcpy_bw: sched_setaffinity (continuing)");
	}

	c.pool = (size_t)pool_mib << 20;
	c.src = mmap(NULL, c.pool, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	c.dst = mmap(NULL, c.pool, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c.src == MAP_FAILED || c.dst == MAP_FAILED) {
		perror("memcpy_bw: mmap");
		return 1;
	}
	/* Touch every page with distinct data (no shared zero page). */
	for (size_t i = 0; i < c.pool; i += 4096) {
		c.src[i] = (unsigned char)(i >> 12);
		c.dst[i] = (unsigned char)~(i >> 12);
	}

	for (int k = CASE_4K_HOT; k <= CASE_RAND_4K; k++) {
		double best = 0, round = (double)round_ms / 1e3;
		double end = bench_now() + sec;

		bench_round(&c, k, round); /* warm up */
		do {
			double bw = bench_round(&c, k, round);

			if (bw > best)
				best = bw;
		} while (bench_now() < end);
		printf("%s %.2f\n", names[k], best / 1e9);
		fflush(stdout);
	}
	printf("# memcpy_bw: %.1f s per case, best round of %ld ms, "
	       "pools 2 x %ld MiB, cpu %ld\n", sec, round_ms, pool_mib, cpu);
	/* Keep the destination observable so no copy is provably dead. */
	return c.dst[4096 * 3] == 0x5a && c.src[0] == 0x5a ? 3 : 0;
}
