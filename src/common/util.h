/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers shared by every part of vrdma: branch hints, container_of,
 * min/max, byte order and counters.
 */
#ifndef VRDMA_COMMON_UTIL_H
#define VRDMA_COMMON_UTIL_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define IS_POW2(x)     ((x) != 0 && (((x) & ((x) - 1)) == 0))

#define VRDMA_UNUSED __attribute__((unused))

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CLOCK_MONOTONIC time timeout_ms from now (now for timeout_ms <= 0). */
static inline uint64_t ms_deadline(int timeout_ms)
{
	return mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
}

/* Milliseconds from now_ns to deadline_ns, rounded up, 0 once past: a
 * poll() timeout. */
static inline int ms_until(uint64_t deadline_ns, uint64_t now_ns)
{
	if (now_ns >= deadline_ns)
		return 0;
	return (int)MIN((deadline_ns - now_ns + 999999) / 1000000, (uint64_t)INT32_MAX);
}

/* Unaligned big-endian (network order) loads and stores for packet headers. */
static inline uint16_t get_be16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return be16toh(v);
}

static inline uint32_t get_be24(const void *p)
{
	const uint8_t *b = p;
	return ((uint32_t)b[0] << 16) | ((uint32_t)b[1] << 8) | b[2];
}

static inline uint32_t get_be32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t get_be64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be64toh(v);
}

static inline void put_be16(void *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static inline void put_be24(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)(v >> 16);
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)v;
}

static inline void put_be32(void *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void put_be64(void *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

/* Bits set in x (no libgcc call where the CPU baseline lacks POPCNT). */
static inline uint32_t popcount64(uint64_t x)
{
#ifdef __POPCNT__
	return (uint32_t)__builtin_popcountll(x);
#else
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* Memory shared with another core (a ring, a request slot): write the n
 * bytes only if they differ from what is there, so an unchanged cache line
 * stays valid in the other core's cache. */
static inline void store_if_changed(void *dst, const void *src, size_t n)
{
	if (memcmp(dst, src, n))
		memcpy(dst, src, n);
}

/* Little-endian loads and stores for virtio structures (le16/le32/le64). */
static inline uint16_t get_le16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t get_le32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t get_le64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static inline void put_le16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

#endif /* VRDMA_COMMON_UTIL_H */
