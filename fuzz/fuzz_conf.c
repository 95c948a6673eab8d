/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the vrdma.conf parser (mgmt/conf.h). Checks: it never crashes or
 * reads past the input; a refused file names a line within the input; an
 * accepted one yields devices whose --device strings parse again, with
 * distinct names and sockets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/netdev.h"
#include "mgmt/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mconf c;
	char err[512], msg[256];
	struct netdev_cfg cfg;
	char *copy;

	if (size > 65536)
		return 0;
	/* An exact-size heap copy: any read past the end is reported. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (mconf_parse(copy, size, &c, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
		free(copy);
		return 0;
	}
	free(copy);
	if (c.ndevices > MCONF_MAX_DEVICES || c.nuplinks > MCONF_MAX_UPLINKS)
		abort();
	for (unsigned i = 0; i < c.ndevices; i++) {
		if (!mconf_valid_name(c.dev[i].name) || c.dev[i].socket[0] == '\0')
			abort();
		if (netdev_parse_cfg(c.dev[i].spec, i, &cfg, msg, sizeof(msg)) < 0)
			abort();
		if (strcmp(cfg.socket, c.dev[i].socket))
			abort();
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(c.dev[i].name, c.dev[j].name) ||
			    !strcmp(c.dev[i].socket, c.dev[j].socket))
				abort();
	}
	return 0;
}
