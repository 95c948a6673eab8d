/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Isolation of the device's connection manager between processes: this
 * process (a context of the device, through vrdma's libibverbs and its
 * private vrdma_ibv_cm_cmd) names every listen and connection handle the
 * device could have given another process (slots 0..63, generations
 * 1..64) in RELEASE, DISCONNECT, REJECT, UNLISTEN, RTU and ESTABLISHED: each
 * must be refused with ENOENT, and GET_EVENT must find nothing (EAGAIN).
 * Prints "rdmacm_foreign: N commands refused" and exits 0, else names the
 * first command that was not refused and exits 1.
 *
 * usage: rdmacm_foreign (through vrdma-run, on the device under test)
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "vrdma/virtio_net_roce_cm.h"

typedef int (*cm_cmd_fn)(struct ibv_context *ctx, uint8_t cmd, const void *in, size_t in_len,
			 void *out, size_t out_len);

int main(void)
{
	static const uint8_t cmds[] = {
		VIRTIO_NET_CTRL_ROCE_CM_RELEASE, VIRTIO_NET_CTRL_ROCE_CM_DISCONNECT,
		VIRTIO_NET_CTRL_ROCE_CM_UNLISTEN, VIRTIO_NET_CTRL_ROCE_CM_RTU,
		VIRTIO_NET_CTRL_ROCE_CM_ESTABLISHED, VIRTIO_NET_CTRL_ROCE_CM_REJECT,
	};
	struct virtio_rdma_cm_event ev;
	struct ibv_device **list;
	struct ibv_context *ctx;
	cm_cmd_fn cm_cmd;
	unsigned n = 0;
	int num, rc;

	cm_cmd = (cm_cmd_fn)dlsym(RTLD_DEFAULT, "vrdma_ibv_cm_cmd");
	list = ibv_get_device_list(&num);
	if (!cm_cmd || !list || num < 1 || !(ctx = ibv_open_device(list[0]))) {
		fprintf(stderr, "rdmacm_foreign: no vrdma device (run through vrdma-run)\n");
		return 1;
	}
	for (uint32_t gen = 1; gen <= 64; gen++)
		for (uint32_t slot = 0; slot < 64; slot++)
			for (size_t c = 0; c < sizeof(cmds); c++) {
				uint32_t id = gen << 16 | slot;

				if (cmds[c] == VIRTIO_NET_CTRL_ROCE_CM_REJECT) {
					struct virtio_rdma_cmd_cm_reject r;

					memset(&r, 0, sizeof(r));
					r.conn_id = htole32(id);
					r.reason = htole16(28);
					rc = cm_cmd(ctx, cmds[c], &r, sizeof(r), NULL, 0);
				} else {
					struct virtio_rdma_cmd_cm_handle h;

					memset(&h, 0, sizeof(h));
					h.id = htole32(id);
					rc = cm_cmd(ctx, cmds[c], &h, sizeof(h), NULL, 0);
				}
				if (rc != -ENOENT) {
					fprintf(stderr, "rdmacm_foreign: command %u on handle %#x: %d, "
						"not -ENOENT\n", cmds[c], id, rc);
					return 1;
				}
				n++;
			}
	rc = cm_cmd(ctx, VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT, NULL, 0, &ev, sizeof(ev));
	if (rc != -EAGAIN) {
		fprintf(stderr, "rdmacm_foreign: GET_EVENT gave %d, not -EAGAIN\n", rc);
		return 1;
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("rdmacm_foreign: %u commands refused\n", n);
	return 0;
}
