/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the vhost-user front-end's handling of what a back-end sends
 * (src/vhost/vhost_client.c reply validation, and libvrdma's negotiation,
 * config-space checks and queue setup in src/libvrdma/dev.c).
 *
 * Input: byte 0 selects the scenario, the rest is the back-end's whole byte
 * stream, written into a socketpair before the client runs (the back-end end
 * is then shut down for writing, so the client meets EOF instead of waiting).
 *   even: a fixed sequence of vhost_client calls, with protocol features
 *         taken from byte 1 (REPLY_ACK / CONFIG / STATUS / slots / wide);
 *   odd:  vrdma_dev_open on the socket (small rings and arenas).
 * Checks: no crash, no leak, no hang; what was negotiated is sane (RoCE
 * limits, VIRTIO_NET_F_ROCE_EXT only with ROCE and a valid max_rdma_srqs
 * from the 40-byte configuration); every call returns 0 or a negative
 * errno, and once the connection is declared dead every later call returns
 * -ENOTCONN without touching the socket.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "libvrdma/dev.h"
#include "vhost/vhost_client.h"

#define MAX_STREAM (48u << 10) /* fits the socket buffer with room to spare */

static void check_rc(const struct vhost_client *c, int rc, bool was_dead)
{
	if (rc > 0)
		abort();
	if (was_dead && rc != -ENOTCONN)
		abort();
	if (rc == -EPROTO && vhost_client_alive(c))
		abort(); /* a protocol error must kill the connection */
}

#define CALL(expr)                                                             \
	do {                                                                   \
		bool d_ = !vhost_client_alive(&c);                             \
		int r_ = (expr);                                               \
		check_rc(&c, r_, d_);                                          \
	} while (0)

static void run_client(int fd, uint8_t sel)
{
	struct vhost_client c;
	struct vhost_user_vring_addr a;
	struct vhost_user_mem_region r;
	uint8_t cfg[40];
	uint64_t v;
	uint32_t base;
	uint8_t st;
	int efd;

	vhost_client_init_fd(&c, fd);
	c.timeout_ms = 1000;
	CALL(vhost_client_get_features(&c, &v));
	c.features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	CALL(vhost_client_get_protocol_features(&c, &v));
	v = 0;
	if (sel & 0x02)
		v |= 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
	if (sel & 0x04)
		v |= 1ull << VHOST_USER_PROTOCOL_F_CONFIG;
	if (sel & 0x08)
		v |= 1ull << VHOST_USER_PROTOCOL_F_STATUS;
	if (sel & 0x10)
		v |= 1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS;
	if (sel & 0x20)
		v |= 1ull << VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX;
	if (sel & 0x40)
		v |= 1ull << VHOST_USER_PROTOCOL_F_MQ;
	CALL(vhost_client_set_protocol_features(&c, v));
	CALL(vhost_client_set_owner(&c));
	CALL(vhost_client_get_max_mem_slots(&c, &v));
	CALL(vhost_client_get_queue_num(&c, &v));
	CALL(vhost_client_get_config(&c, 0, cfg, sizeof(cfg)));
	CALL(vhost_client_get_config(&c, 6, cfg, 2));
	CALL(vhost_client_set_status(&c, 3));
	CALL(vhost_client_get_status(&c, &st));
	CALL(vhost_client_set_features(&c, 1ull << 32));
	efd = eventfd(0, EFD_CLOEXEC);
	memset(&r, 0, sizeof(r));
	r.guest_phys_addr = r.userspace_addr = 0x10000;
	r.memory_size = 0x1000;
	if (efd >= 0) {
		CALL(vhost_client_add_mem_reg(&c, &r, efd));
		CALL(vhost_client_set_mem_table(&c, &r, &efd, 1));
	}
	CALL(vhost_client_set_vring_num(&c, 0, 256));
	memset(&a, 0, sizeof(a));
	CALL(vhost_client_set_vring_addr(&c, &a));
	CALL(vhost_client_set_vring_base(&c, 0, 0));
	CALL(vhost_client_set_vring_call(&c, 300, efd));
	CALL(vhost_client_set_vring_kick(&c, 1, -1));
	CALL(vhost_client_set_vring_enable(&c, 1, true));
	CALL(vhost_client_get_vring_base(&c, 0, &base));
	CALL(vhost_client_get_vring_base(&c, 70000, &base));
	CALL(vhost_client_rem_mem_reg(&c, &r));
	CALL(vhost_client_reset_device(&c));
	CALL(vhost_client_get_features(&c, &v));
	if (efd >= 0)
		close(efd);
	vhost_client_close(&c);
}

static void run_dev(int fd)
{
	struct vrdma_dev_opts o = {
		.ring_size = 8,
		.timeout_ms = 1000,
		.arena_size = 64 << 10,
	};
	struct vrdma_dev *d = vrdma_dev_open_fd(fd, &o);

	if (d) {
		uint8_t buf[64] = { 0 }, ack;

		/* Whatever it negotiated must be sane. */
		if (vrdma_dev_mtu(d) < 68)
			abort();
		if (vrdma_dev_max_rdma_qps(d) > 16384 || vrdma_dev_max_rdma_cqs(d) > 16384)
			abort();
		/* The extension only with RoCE, within the virtqueue budget. */
		if ((vrdma_dev_features(d) >> VIRTIO_NET_F_ROCE_EXT) & 1) {
			if (!((vrdma_dev_features(d) >> VIRTIO_NET_F_ROCE) & 1))
				abort();
			if (vrdma_dev_max_rdma_srqs(d) > VIRTIO_NET_ROCE_MAX_SRQS ||
			    vrdma_vq_count_ext(1, vrdma_dev_max_rdma_cqs(d), vrdma_dev_max_rdma_qps(d),
					       vrdma_dev_max_rdma_srqs(d)) > VIRTIO_NET_ROCE_MAX_VQS)
				abort();
		} else if (vrdma_dev_max_rdma_srqs(d)) {
			abort();
		}
		vrdma_net_send(d, buf, sizeof(buf));
		vrdma_net_recv(d, buf, sizeof(buf));
		vrdma_ctrl_cmd(d, 0, 0, NULL, 0, NULL, 0, &ack);
		vrdma_dev_close(d);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	int sv[2];

	if (!init) {
		vlog_level = -1;
		init = true;
	}
	if (size < 2 || size - 2 > MAX_STREAM)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	/* The back-end's whole side of the conversation, then EOF. */
	if (write(sv[0], data + 2, size - 2) != (ssize_t)(size - 2)) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[0], SHUT_WR);
	if (data[0] & 1)
		run_dev(sv[1]);
	else
		run_client(sv[1], data[1]);
	close(sv[0]);
	return 0;
}
