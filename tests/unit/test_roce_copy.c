/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies into registered memory (roce_copy.c): streaming stores for cold
 * destinations. Checked: every length and alignment copies byte for byte
 * and touches nothing around the destination; a destination written again
 * and again stays plain; buffers visited round robin beyond the threshold
 * are streamed from their second visit; "off" and overlapping copies never
 * stream.
 */
#include "../harness.h"
#include "roce/roce_tp.h"

#define CHUNK (64u << 10)

static uint64_t streamed(void)
{
	struct roce_copy_stats st;

	roce_copy_get_stats(&st);
	return st.streamed;
}

static uint8_t *buf_new(size_t len, uint8_t fill)
{
	void *v;
	uint8_t *b;

	if (posix_memalign(&v, CHUNK, len))
		abort();
	b = v;
	memset(b, fill, len);
	return b;
}

static void fill_pattern(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 131 + seed + (i >> 8));
}

/* Write more than any threshold used here elsewhere, so every chunk not
 * written since is cold. */
static void age(void)
{
	uint8_t *a = buf_new(4 * CHUNK, 1), *b = buf_new(CHUNK, 2);

	for (int i = 0; i < 64; i++)
		roce_copy_to_mem(a + (size_t)(i % 4) * CHUNK, b, CHUNK);
	free(a);
	free(b);
}

/* Each length and alignment, each into a chunk not written for 15 copies. */
static void copy_bytes(void)
{
	static const size_t lens[] = { 1024, 1025, 1087, 4095, 4096, 4097, 65536, 65536 + 63,
				       131072 + 17 };
	static const size_t src_off[] = { 0, 1, 13, 64 };
	static const size_t dst_off[] = { 0, 1, 7, 63, 64 };
	const size_t slots = 16, slot = 4 * CHUNK;
	uint8_t *src = buf_new(slot, 0), *dst = buf_new(slots * slot, 0xaa);
	unsigned n = 0, bad = 0;
	uint64_t s0;

	roce_copy_set_cold(4096);
	age();
	s0 = streamed();
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t so = 0; so < sizeof(src_off) / sizeof(src_off[0]); so++)
			for (size_t d = 0; d < sizeof(dst_off) / sizeof(dst_off[0]); d++, n++) {
				uint8_t *base = dst + (n % slots) * slot, *to = base + dst_off[d];
				size_t len = lens[l];

				fill_pattern(src, slot, n);
				memset(base, 0xaa, slot);
				roce_copy_to_mem(to, src + src_off[so], len);
				bad += memcmp(to, src + src_off[so], len) != 0;
				for (uint8_t *p = base; p < to; p++)
					bad += *p != 0xaa;
				for (uint8_t *p = to + len; p < base + slot; p++)
					bad += *p != 0xaa;
			}
	CHECK_EQ(bad, 0);
	CHECK_EQ(streamed() - s0, n);
	free(src);
	free(dst);
}

/* One buffer written again and again: always in the cache, never streamed. */
static void hot_not_streamed(void)
{
	uint8_t *src = buf_new(CHUNK, 0), *dst = buf_new(CHUNK, 0);
	uint64_t s0;

	roce_copy_set_cold(1u << 20);
	age();
	roce_copy_to_mem(dst, src, CHUNK); /* its first visit may be cold */
	s0 = streamed();
	for (unsigned i = 0; i < 200; i++) {
		fill_pattern(src, CHUNK, i);
		roce_copy_to_mem(dst, src, CHUNK);
	}
	CHECK(!memcmp(dst, src, CHUNK));
	CHECK_EQ(streamed() - s0, 0);
	free(src);
	free(dst);
}

/* 64 buffers round robin (4 MiB between visits, threshold 1 MiB): every
 * visit after the first lap is streamed; with streaming off, none. */
static void round_robin(uint64_t cold, bool expect)
{
	const unsigned nbuf = 64, laps = 4;
	uint8_t *src = buf_new(CHUNK, 0), *dst = buf_new((size_t)nbuf * CHUNK, 0);
	unsigned bad = 0;
	uint64_t s0 = 0;

	roce_copy_set_cold(cold);
	for (unsigned lap = 0; lap < laps; lap++) {
		if (lap == 1)
			s0 = streamed();
		for (unsigned i = 0; i < nbuf; i++) {
			fill_pattern(src, CHUNK, lap * nbuf + i);
			roce_copy_to_mem(dst + (size_t)i * CHUNK, src, CHUNK);
			bad += memcmp(dst + (size_t)i * CHUNK, src, CHUNK) != 0;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(streamed() - s0, expect ? (laps - 1) * nbuf : 0);
	free(src);
	free(dst);
}

static void cold_round_robin(void)
{
	round_robin(1u << 20, true);
}

static void off_never_streams(void)
{
	round_robin(0, false);
}

/* A copy whose source and destination overlap moves like memmove, plainly. */
static void overlap_plain(void)
{
	const size_t len = 3 * CHUNK;
	uint8_t *b = buf_new(len + 8192, 0), *ref = buf_new(len + 8192, 0);
	uint64_t s0;

	roce_copy_set_cold(4096);
	age();
	fill_pattern(b, len + 8192, 7);
	memcpy(ref, b, len + 8192);
	s0 = streamed();
	roce_copy_to_mem(b + 100, b, len);
	memmove(ref + 100, ref, len);
	roce_copy_to_mem(b, b + 4000, len);
	memmove(ref, ref + 4000, len);
	CHECK(!memcmp(b, ref, len + 8192));
	CHECK_EQ(streamed() - s0, 0);
	free(b);
	free(ref);
}

/* Below ROCE_COPY_TRACK_MIN a copy is plain and not tracked. */
static void short_plain(void)
{
	uint8_t *src = buf_new(CHUNK, 0), *dst = buf_new(CHUNK, 0x55);
	uint64_t s0;

	roce_copy_set_cold(4096);
	age();
	fill_pattern(src, CHUNK, 3);
	s0 = streamed();
	roce_copy_to_mem(dst + 5, src, ROCE_COPY_TRACK_MIN - 1);
	CHECK(!memcmp(dst + 5, src, ROCE_COPY_TRACK_MIN - 1));
	CHECK_EQ(dst[4], 0x55);
	CHECK_EQ(dst[5 + ROCE_COPY_TRACK_MIN - 1], 0x55);
	CHECK_EQ(streamed() - s0, 0);
	free(src);
	free(dst);
}

static void llc_size(void)
{
	uint64_t b = roce_copy_llc_bytes();

	CHECK(b >= 64u << 10);
	CHECK(b <= 1ull << 40);
}

int main(void)
{
	TEST_PROGRAM("test_roce_copy");
#if defined(__x86_64__)
	RUN(copy_bytes);
	RUN(hot_not_streamed);
	RUN(cold_round_robin);
	RUN(overlap_plain);
	RUN(short_plain);
#endif
	RUN(off_never_streams);
	RUN(llc_size);
	return TEST_DONE();
}
