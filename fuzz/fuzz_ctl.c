/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the control request parser (mgmt/ctl.h). Checks: it never crashes or
 * reads past the input; an accepted request has a known command, a valid
 * device name where one is needed, NUL-terminated fields, and an absolute
 * capture path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt/ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_req r;
	char err[256];
	char *copy;
	int rc;

	if (size > 4096)
		return 0;
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	rc = ctl_parse(copy, size, &r, err, sizeof(err));
	free(copy);
	if (rc < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	if (r.cmd > CTL_RELOAD || memchr(r.dev, 0, sizeof(r.dev)) == NULL ||
	    memchr(r.arg, 0, sizeof(r.arg)) == NULL)
		abort();
	if ((r.cmd == CTL_DEV_ADD || r.cmd == CTL_DEV_DEL || r.cmd == CTL_CAPTURE_START ||
	     r.cmd == CTL_CAPTURE_STOP) && !mconf_valid_name(r.dev))
		abort();
	if (r.cmd == CTL_CAPTURE_START && r.arg[0] != '/')
		abort();
	if (r.cmd == CTL_RES_SHOW && (r.res == 0 || (r.res & ~(unsigned)CTL_RES_ALL)))
		abort();
	return 0;
}
