/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Minimal test harness. A test program is a list of RUN(fn) calls in main();
 * each fn uses CHECK* macros. The harness prints one line per test:
 *   ok <prog>.<test>
 *   not ok <prog>.<test>        (followed by the failed checks)
 *   skip <prog>.<test>: <why>
 * and exits non-zero if any test failed. tests/run.sh counts these lines.
 */
#ifndef VRDMA_TESTS_HARNESS_H
#define VRDMA_TESTS_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int th_failed_checks;
static int th_tests_failed;
static const char *th_skip_reason;
static const char *th_prog = "test";

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			th_failed_checks++;                                    \
			fprintf(stdout, "#   %s:%d: CHECK(%s) failed\n",       \
				__FILE__, __LINE__, #cond);                    \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long th_a_ = (long long)(a), th_b_ = (long long)(b);      \
		if (th_a_ != th_b_) {                                          \
			th_failed_checks++;                                    \
			fprintf(stdout, "#   %s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, th_a_, th_b_);     \
		}                                                              \
	} while (0)

#define CHECK_MEM(a, b, n)                                                     \
	do {                                                                   \
		if (memcmp((a), (b), (n)) != 0) {                              \
			th_failed_checks++;                                    \
			fprintf(stdout, "#   %s:%d: memcmp(%s, %s, %s) differs\n", \
				__FILE__, __LINE__, #a, #b, #n);               \
		}                                                              \
	} while (0)

/* Abort the current test (after a failed precondition). */
#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			th_failed_checks++;                                    \
			fprintf(stdout, "#   %s:%d: REQUIRE(%s) failed\n",     \
				__FILE__, __LINE__, #cond);                    \
			return;                                                \
		}                                                              \
	} while (0)

/* Mark the current test skipped (reason is printed). */
#define SKIP(why)                                                              \
	do {                                                                   \
		th_skip_reason = (why);                                        \
		return;                                                        \
	} while (0)

/* Fail the current test with a reason (a precondition it cannot do without). */
#define FAIL(why)                                                              \
	do {                                                                   \
		th_failed_checks++;                                            \
		fprintf(stdout, "#   %s:%d: %s\n", __FILE__, __LINE__, (why));   \
		return;                                                        \
	} while (0)

/* The environment lacks what the test needs: a skip without root (the test
 * needs privileges), a failure with the reason as root. */
#define NEED_ENV(why)                                                          \
	do {                                                                   \
		if (geteuid() != 0)                                            \
			SKIP(why);                                             \
		FAIL(why);                                                     \
	} while (0)

#define TEST_PROGRAM(name) (th_prog = (name))

#define RUN(fn)                                                                \
	do {                                                                   \
		th_failed_checks = 0;                                          \
		th_skip_reason = NULL;                                         \
		fn();                                                          \
		if (th_failed_checks) {                                        \
			th_tests_failed++;                                     \
			printf("not ok %s.%s\n", th_prog, #fn);                \
		} else if (th_skip_reason) {                                   \
			printf("skip %s.%s: %s\n", th_prog, #fn, th_skip_reason); \
		} else {                                                       \
			printf("ok %s.%s\n", th_prog, #fn);                    \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

#define TEST_DONE() (th_tests_failed ? 1 : 0)

#endif /* VRDMA_TESTS_HARNESS_H */
