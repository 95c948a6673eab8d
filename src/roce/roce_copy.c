/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies into registered memory. A destination this thread has not written
 * for longer than the threshold (a quarter of the last-level cache) is cold:
 * streaming stores write it without reading its lines first and leave the
 * cache to the working set (docs/design.md "Cold destinations: streaming
 * stores"). Everything else is a plain memmove.
 */
#include "roce/roce_tp.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define COPY_CHUNK_SHIFT 16 /* destinations are judged per 64 KiB */
#define COPY_SLOTS 4096     /* chunks remembered, direct-mapped */
#define COPY_UNIT_SHIFT 12  /* the clock counts 4 KiB written */
#define COPY_LLC_DEFAULT (32ull << 20)

/* Per slot: when the current visit to its chunk began (clock units, shifted
 * left by one) and whether that visit is cold (bit 0). */
struct copy_heat {
	uint64_t written; /* bytes of tracked copies */
	uint32_t slot[COPY_SLOTS];
};

#if defined(__x86_64__)
static __thread struct copy_heat heat __attribute__((tls_model("initial-exec")));
#endif
static __thread struct roce_copy_stats copy_stats __attribute__((tls_model("initial-exec")));

/* Clock units beyond which a chunk is cold (0: never); set before loop
 * threads start. Writes to a chunk within COPY_VISIT of a visit's start
 * follow the visit's first decision. */
static uint32_t copy_cold_units = ROCE_COPY_COLD_DEFAULT >> COPY_UNIT_SHIFT;
#define COPY_VISIT (copy_cold_units / 16)

void roce_copy_set_cold(uint64_t bytes)
{
	uint64_t u = bytes >> COPY_UNIT_SHIFT;

	if (bytes && !u)
		u = 1;
	if (u > UINT32_MAX / 4)
		u = UINT32_MAX / 4;
	copy_cold_units = (uint32_t)u;
}

uint64_t roce_copy_llc_bytes(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "re");
	unsigned long long v = 0;
	char unit = 0;
	int n;

	if (!f)
		return COPY_LLC_DEFAULT;
	n = fscanf(f, "%llu%c", &v, &unit);
	fclose(f);
	if (n < 1 || !v || v > (1ull << 40))
		return COPY_LLC_DEFAULT;
	if (n == 2 && unit == 'K')
		v <<= 10;
	else if (n == 2 && unit == 'M')
		v <<= 20;
	return v;
}

void roce_copy_get_stats(struct roce_copy_stats *st)
{
	*st = copy_stats;
}

#if defined(__x86_64__)
/* Is a write of len bytes at dst cold? Marks the visit. */
static bool copy_cold(const void *dst, size_t len)
{
	uint32_t *s = &heat.slot[((uintptr_t)dst >> COPY_CHUNK_SHIFT) & (COPY_SLOTS - 1)];
	uint32_t now = (uint32_t)(heat.written >> COPY_UNIT_SHIFT) & (UINT32_MAX >> 1);
	uint32_t since = (now - (*s >> 1)) & (UINT32_MAX >> 1);
	bool cold;

	heat.written += len;
	if (since < COPY_VISIT)
		return *s & 1;
	/* another chunk may share the slot and have begun its visit up to one
	 * visit after this one's last write */
	cold = since > copy_cold_units + COPY_VISIT;
	*s = now << 1 | cold;
	return cold;
}

/* Streaming stores for whole lines; the last line and the tail are stored
 * plainly after a fence, so no streamed byte becomes visible after the
 * copy's last byte (a reader polling it sees as much as with memmove). */
static void copy_stream(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = (64 - ((uintptr_t)dst & 63)) & 63;
	size_t lines = (len - head) / 64 - 1; /* len >= 2 lines: the last kept */

	memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	for (size_t i = 0; i < lines; i++, dst += 64, src += 64, len -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));

		_mm_stream_si128((__m128i *)(void *)dst, a);
		_mm_stream_si128((__m128i *)(void *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(void *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(void *)(dst + 48), d);
	}
	_mm_sfence();
	memcpy(dst, src, len);
}
#endif

void roce_copy_tracked(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	/* overlap: a WRITE within one MR (a QP to itself) */
	if (len >= ROCE_COPY_TRACK_MIN && copy_cold_units && (d + len <= s || s + len <= d) &&
	    copy_cold(dst, len)) {
		copy_stream(dst, src, len);
		copy_stats.streamed++;
		copy_stats.streamed_bytes += len;
		return;
	}
#endif
	memmove(dst, src, len);
}
