/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma_prov_vrdma_ops before the libvrdma binding exists: devices are
 * discovered (one per socket of VRDMA_SOCKET, or the default socket; see
 * vrdma_socket.h), but opening one fails with ENODEV and every other
 * operation is absent (EOPNOTSUPP). The binding to libvrdma replaces this
 * file with one that defines the same vrdma_prov_vrdma_ops.
 */
#include <stdio.h>
#include <string.h>

#include "verbs/provider.h"
#include "verbs/vrdma_socket.h"

/* One device per existing socket: "vrdma<i>" for the i-th socket of the
 * list. Returns how many were stored. */
static int vrdma_stub_discover(struct vrdma_prov_dev_info *devs, int max)
{
	char paths[VRDMA_PROV_MAX_DEVICES][256];
	int n, i, k = 0;

	n = vrdma_socket_list(paths, VRDMA_PROV_MAX_DEVICES);
	for (i = 0; i < n && k < max; i++) {
		if (!vrdma_socket_exists(paths[i]))
			continue;
		memset(&devs[k], 0, sizeof(devs[k]));
		snprintf(devs[k].name, sizeof(devs[k].name), "vrdma%d", i);
		snprintf(devs[k].path, sizeof(devs[k].path), "%s", paths[i]);
		devs[k].priv = (uint64_t)i;
		k++;
	}
	return k;
}

/* Not bound to libvrdma yet: -ENODEV. */
static int vrdma_stub_open(const struct vrdma_prov_dev_info *info,
			   struct vrdma_prov_dev **dev)
{
	(void)info;
	*dev = NULL;
	return -ENODEV;
}

static void vrdma_stub_close(struct vrdma_prov_dev *dev)
{
	(void)dev;
}

const struct vrdma_prov_ops vrdma_prov_vrdma_ops = {
	.name = "vrdma",
	.discover = vrdma_stub_discover,
	.open = vrdma_stub_open,
	.close = vrdma_stub_close,
};
