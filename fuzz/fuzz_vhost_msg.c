/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the vhost-user back-end: the input is a sequence of messages fed to
 * vhost_server_handle_msg() of a socket-less server on a real loop, so every
 * validation path, the ring life cycle, memory-table changes and kick
 * dispatch run on attacker-chosen messages.
 *
 * Input: records of
 *   u8  ctl     bits 0-3: number of fds (mod 10: 9 = more than allowed)
 *               bits 4-5: fd kind (0 memfd, 1 eventfd, 2 alternate, 3 pipe)
 *               bit 6:    compact header
 *   header      compact: u8 request, u8 flags (bit 0 NEED_REPLY, bit 1 reply
 *               bit, bit 7 raw version bits 2-3), u16 size
 *               raw:     12 bytes as on the wire
 *   payload     min(size, 4096, rest of input) bytes
 * Memfds are 1 MiB (sparse), eventfds start signalled so watched kick fds
 * fire at the next loop iteration.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "vhost/vhost_msg.h"
#include "vhost/vhost_server.h"

#define FUZZ_MEM_SIZE (1u << 20)
#define FUZZ_MAX_RINGS 300

struct fuzz_dev {
	struct vhost_server *s;
	uint8_t config[256];
	unsigned running;
};

static int fz_set_features(void *ctx, uint64_t f)
{
	(void)ctx;
	return (f & (1ull << 3)) ? -ENOTSUP : 0;
}

static int fz_get_config(void *ctx, uint32_t off, void *buf, uint32_t len)
{
	struct fuzz_dev *d = ctx;

	if (off + len > sizeof(d->config))
		abort(); /* the server promised offset + size <= 256 */
	memcpy(buf, d->config + off, len);
	return off == 128 ? -EINVAL : 0;
}

static int fz_set_config(void *ctx, uint32_t off, const void *buf, uint32_t len)
{
	struct fuzz_dev *d = ctx;

	if (off + len > sizeof(d->config))
		abort();
	if (off < 8)
		return -EPERM;
	memcpy(d->config + off, buf, len);
	return 0;
}

/* Touch the ring the way a device would: everything must be mapped. At
 * most two rings' worth per call, as a device's pass has a budget: rings
 * laid over each other make each used entry written a new avail entry. */
static void fz_use_ring(struct vhost_vring *r)
{
	struct vq_elem elem;

	if (!r->started)
		abort();
	(void)vq_dev_avail(&r->vq);
	for (uint32_t i = 0; i < 2u * r->vq.num && vq_dev_pop(&r->vq, &elem) == 1; i++)
		vq_dev_push(&r->vq, elem.head, 0);
	vhost_vring_notify(r);
}

static void fz_ring_started(void *ctx, struct vhost_vring *r)
{
	struct fuzz_dev *d = ctx;

	d->running++;
	fz_use_ring(r);
}

static void fz_ring_stopped(void *ctx, struct vhost_vring *r)
{
	struct fuzz_dev *d = ctx;

	if (!r->started || !d->running)
		abort();
	d->running--;
	fz_use_ring(r);
}

static void fz_ring_kick(void *ctx, struct vhost_vring *r)
{
	(void)ctx;
	fz_use_ring(r);
	if (r->idx == 2)
		vhost_vring_report_error(r);
}

static void fz_reset(void *ctx)
{
	struct fuzz_dev *d = ctx;

	if (d->running)
		abort(); /* reset must come after every ring stopped */
}

static int fz_make_fd(int kind, int i)
{
	int p[2], fd;

	if (kind == 2)
		kind = i & 1;
	switch (kind) {
	case 0:
		fd = memfd_create("fuzz", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, FUZZ_MEM_SIZE) < 0) {
			close(fd);
			fd = -1;
		}
		return fd;
	case 1:
		return eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	default:
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
			return -1;
		close(p[1]);
		return p[0];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct loop *loop;
	static struct vhost_user_msg msg;
	struct vhost_dev_ops ops;
	struct fuzz_dev dev;
	size_t pos = 0;

	if (!loop) {
		vlog_level = -1;
		loop = loop_new();
		if (!loop)
			abort();
	}
	memset(&dev, 0, sizeof(dev));
	memset(&ops, 0, sizeof(ops));
	ops.features = (1ull << 0) | (1ull << 3) | (1ull << 5) | (1ull << 28) |
		       (1ull << 29) | (1ull << 32);
	ops.protocol_features = ~0ull;
	ops.max_rings = FUZZ_MAX_RINGS;
	ops.queue_num = 4;
	ops.set_features = fz_set_features;
	ops.get_config = fz_get_config;
	ops.set_config = fz_set_config;
	ops.ring_started = fz_ring_started;
	ops.ring_stopped = fz_ring_stopped;
	ops.ring_kick = fz_ring_kick;
	ops.reset = fz_reset;
	dev.s = vhost_server_new(loop, NULL, &ops, &dev);
	if (!dev.s)
		abort();

	while (pos < size) {
		uint8_t ctl = data[pos++];
		int fds[VHOST_USER_MAX_FDS + 1], nfds = (ctl & 0xf) % 10;
		uint32_t len;

		memset(&msg.hdr, 0, sizeof(msg.hdr));
		if (ctl & 0x40) {
			uint8_t f;

			if (size - pos < 4)
				break;
			msg.hdr.request = data[pos];
			f = data[pos + 1];
			msg.hdr.flags = VHOST_USER_VERSION |
					((f & 1) ? VHOST_USER_NEED_REPLY_MASK : 0) |
					((f & 2) ? VHOST_USER_REPLY_MASK : 0) |
					((f & 0x80) ? (f & 0xc) : 0);
			msg.hdr.size = (uint32_t)data[pos + 2] | (uint32_t)data[pos + 3] << 8;
			pos += 4;
		} else {
			if (size - pos < sizeof(msg.hdr))
				break;
			memcpy(&msg.hdr, data + pos, sizeof(msg.hdr));
			pos += sizeof(msg.hdr);
		}
		len = msg.hdr.size;
		if (len > sizeof(msg.payload))
			len = sizeof(msg.payload);
		if (len > size - pos)
			len = (uint32_t)(size - pos);
		memset(&msg.payload, 0, sizeof(msg.payload));
		memcpy(&msg.payload, data + pos, len);
		pos += len;

		for (int i = 0; i < nfds; i++)
			fds[i] = fz_make_fd((ctl >> 4) & 3, i);
		(void)vhost_server_handle_msg(dev.s, &msg, fds, nfds);
		/* Watched kick fds (created signalled) fire now. */
		loop_run_once(loop, 0);
	}

	vhost_server_free(dev.s);
	if (dev.running)
		abort();
	/* Leave nothing behind for the next input. */
	loop_run_once(loop, 0);
	return 0;
}
