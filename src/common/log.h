/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging. One global level; messages go to stderr with a level tag and the
 * module prefix given by the caller. Errors caused by a peer (driver, network,
 * command line) are logged rate-limited by the caller through vlog_ratelimit().
 */
#ifndef VRDMA_COMMON_LOG_H
#define VRDMA_COMMON_LOG_H

#include <stdbool.h>

enum vlog_level {
	VLOG_ERR = 0,
	VLOG_WARN = 1,
	VLOG_INFO = 2,
	VLOG_DEBUG = 3,
};

extern int vlog_level;

void vlog(enum vlog_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Returns true if a message for this call site may be printed now: at most
 * 10 per second per call site (the state lives in *last_ns and *burst). */
bool vlog_ratelimit(unsigned long long *last_ns, unsigned *burst);

#define LOG_ERR(...)   do { if (vlog_level >= VLOG_ERR) vlog(VLOG_ERR, __VA_ARGS__); } while (0)
#define LOG_WARN(...)  do { if (vlog_level >= VLOG_WARN) vlog(VLOG_WARN, __VA_ARGS__); } while (0)
#define LOG_INFO(...)  do { if (vlog_level >= VLOG_INFO) vlog(VLOG_INFO, __VA_ARGS__); } while (0)
#define LOG_DEBUG(...) do { if (vlog_level >= VLOG_DEBUG) vlog(VLOG_DEBUG, __VA_ARGS__); } while (0)

/* Rate-limited warning for peer-caused errors: a flood of bad input cannot
 * flood the log (a limit per loop thread: no shared state). */
#define LOG_PEER(...)                                                          \
	do {                                                                   \
		static __thread unsigned long long vlog_rl_last_;              \
		static __thread unsigned vlog_rl_burst_;                       \
		if (vlog_level >= VLOG_WARN &&                                 \
		    vlog_ratelimit(&vlog_rl_last_, &vlog_rl_burst_))           \
			vlog(VLOG_WARN, __VA_ARGS__);                          \
	} while (0)

/* Rate limit owned by one object (a device): a tenant flooding the log
 * silences only the messages about itself, not those about others. */
struct vlog_rl {
	unsigned long long last_ns;
	unsigned burst;
	unsigned long long suppressed; /* messages not printed */
};

#define LOG_PEER_RL(rl, ...)                                                   \
	do {                                                                   \
		struct vlog_rl *vlog_rl_ = (rl);                               \
		if (vlog_level >= VLOG_WARN) {                                 \
			if (vlog_ratelimit(&vlog_rl_->last_ns, &vlog_rl_->burst)) \
				vlog(VLOG_WARN, __VA_ARGS__);                  \
			else                                                   \
				vlog_rl_->suppressed++;                        \
		}                                                              \
	} while (0)

#endif /* VRDMA_COMMON_LOG_H */
