/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma-rdmatest internals: a tiny harness printing the lines tests/run.sh
 * counts ("ok P.NAME", "not ok P.NAME" + "#" details, "skip P.NAME: why"),
 * the run context, and the test groups.
 */
#ifndef VRDMA_RDMATEST_RT_H
#define VRDMA_RDMATEST_RT_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vrdma/vrdma.h"
#include "vrdma/vrdma_rdma.h"

struct rt_ctx {
	const char *prefix;       /* test name prefix */
	const char *sock[2];      /* device sockets (A: API tests, B: raw) */
	struct vrdma_dev *dev[2];
	int pid;                  /* the daemon (soak) */
	unsigned count;           /* soak cycles, data messages */
	uint32_t rss_bound_kb;    /* soak: allowed VmRSS growth */
	bool has_ip;              /* ip of device A (GID 1) */
	uint8_t ip[4];
	bool has_ip_b;
	uint8_t ip_b[4];
	uint32_t exp_qps, exp_cqs; /* limits: configured max_rdma_qps / cqs */
	bool event_mode;          /* data: wait with events instead of polling */
	int failed_tests;
};

/* Current test. */
extern int rt_fails;
extern const char *rt_skip;

#define RT_CHECK(cond, ...)                                                     \
	do {                                                                    \
		if (!(cond)) {                                                  \
			rt_fails++;                                             \
			printf("#   %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
			printf(__VA_ARGS__);                                    \
			printf("\n");                                           \
		}                                                               \
	} while (0)

#define RT_EQ(a, b)                                                             \
	do {                                                                    \
		long long rt_a_ = (long long)(a), rt_b_ = (long long)(b);       \
		if (rt_a_ != rt_b_) {                                           \
			rt_fails++;                                             \
			printf("#   %s:%d: %s == %s: %lld != %lld\n", __FILE__,     \
			       __LINE__, #a, #b, rt_a_, rt_b_);                 \
		}                                                               \
	} while (0)

/* Abort the current test function. */
#define RT_REQUIRE(cond, ...)                                                   \
	do {                                                                    \
		if (!(cond)) {                                                  \
			RT_CHECK(cond, __VA_ARGS__);                            \
			return;                                                 \
		}                                                               \
	} while (0)

#define RT_SKIP(why)                                                            \
	do {                                                                    \
		rt_skip = (why);                                                \
		return;                                                         \
	} while (0)

/* Run fn(c) as test NAME. */
#define RT_RUN(c, fn)                                                           \
	do {                                                                    \
		if (!rt_selected(#fn))                                          \
			break;                                                  \
		rt_fails = 0;                                                   \
		rt_skip = NULL;                                                 \
		fn(c);                                                          \
		rt_report((c), #fn);                                            \
	} while (0)

void rt_report(struct rt_ctx *c, const char *fn);
/* Whether test fn runs ($RT_ONLY: a substring of the names to run). */
bool rt_selected(const char *fn);

/* A raw RoCE command on dev: returns the ack (0 OK / 1 ERR) or -errno. */
int rt_raw(struct vrdma_dev *dev, uint8_t cmd, const void *in, size_t in_len, void *out,
	   size_t out_len);
/* Commands sent so far by the RDMA API of dev. */
uint64_t rt_cmds(struct vrdma_dev *dev);

/* Test groups (each runs its tests; returns nothing, counts in c). */
void rt_ctrl_api(struct rt_ctx *c);
void rt_ctrl_raw(struct rt_ctx *c);
void rt_qp_states(struct rt_ctx *c);
void rt_limits(struct rt_ctx *c);
void rt_soak(struct rt_ctx *c);
void rt_data(struct rt_ctx *c);
void rt_ext(struct rt_ctx *c);
void rt_extoff(struct rt_ctx *c);

/* Helpers shared by the groups. */
struct vrdma_dev *rt_open(const char *sock);
void rt_gid_linklocal(const uint8_t mac[6], uint8_t gid[16]);
void rt_gid_ipv4(const uint8_t a[4], uint8_t gid[16]);

#endif /* VRDMA_RDMATEST_RT_H */
