/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/util.h"

int vlog_level = VLOG_WARN;

static const char *const level_tag[] = { "error", "warn", "info", "debug" };

void vlog(enum vlog_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vrdma %s: %s\n", level_tag[level], buf);
}

bool vlog_ratelimit(unsigned long long *last_ns, unsigned *burst)
{
	unsigned long long now = mono_ns();
	if (now - *last_ns > 1000000000ull) {
		*last_ns = now;
		*burst = 0;
	}
	return (*burst)++ < 10;
}
