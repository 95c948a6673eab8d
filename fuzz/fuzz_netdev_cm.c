/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the CM commands of a device port (src/backend/netdev_cm.c): their
 * untrusted data, in any order, from three contexts of port 0 and one of
 * port 1, the two ports' MADs crossing a fake network. The input is records
 *   u8 op | payload
 * op & 7: 0..3 a command: u8 cmd (0..15 above VIRTIO_NET_CTRL_ROCE_CM_FIRST,
 *           some out of range), u8 len, len bytes (a handle in the data is
 *           often replaced by one the context was given, so commands reach
 *           the state machine), from context (op >> 3) & 3 (3: port 1),
 *         4 deliver the queued MADs,  5 advance the clock (u8 * 20 ms) and
 *         tick both ports,  6 a context goes,  7 read an event.
 * Aborts if a bound is broken (handles, events per context); ASan checks
 * the rest.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/netdev_cm.h"
#include "vrdma/virtio_net_roce_cm.h"

#define QMAX 64
#define MAX_EVENTS 8
#define MAX_CONNS 16
#define MAX_LISTENS 4

struct fport {
	struct netdev_cm *cm;
	uint8_t gid[16];
};

static struct fport fp[2];
static uint64_t now_us;
static struct {
	struct cm_mad mad;
	int to;
	struct cm_addr src;
} q[QMAX];
static int qlen;
static uint32_t handles[4][4];  /* handles each context was given */

static uint64_t f_now(void *ctx)
{
	(void)ctx;
	return now_us;
}

static int f_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct fport *p = ctx;

	(void)dst;
	if (qlen >= QMAX)
		return -1;
	q[qlen].mad = *mad;
	q[qlen].to = p == &fp[0];
	memset(&q[qlen].src, 0, sizeof(q[qlen].src));
	memcpy(q[qlen].src.gid, p->gid, 16);
	q[qlen].src.qpn = 1;
	q[qlen].src.pkey = 0xFFFF;
	qlen++;
	return 0;
}

static bool f_qp_owned(void *ctx, uint64_t ctx_id, uint32_t qpn)
{
	(void)ctx;
	return qpn >> 8 == ctx_id;
}

static void f_notify(void *ctx, uint64_t ctx_id)
{
	(void)ctx;
	if (ctx_id > 3)
		abort();
}

static void deliver(void)
{
	int n = qlen;

	for (int i = 0; i < n && i < QMAX; i++) {
		struct cm_mad m = q[i].mad;
		struct cm_addr src = q[i].src;

		netdev_cm_recv(fp[q[i].to].cm, &m, CM_MAD_SIZE, &src);
	}
	memmove(q, q + n, sizeof(q[0]) * (size_t)(qlen - n));
	qlen -= n;
}

static void check(void)
{
	for (int i = 0; i < 2; i++) {
		const struct netdev_cm_stats *s = netdev_cm_stats(fp[i].cm);

		if (s->conns > MAX_CONNS || s->listens > MAX_LISTENS)
			abort();
		for (uint64_t c = 0; c < 4; c++)
			if (netdev_cm_events(fp[i].cm, c) > MAX_EVENTS)
				abort();
	}
}

static void remember(int ctx, const uint8_t *ack, size_t len)
{
	uint32_t h;

	if (len < 4)
		return;
	memcpy(&h, ack, 4);
	memmove(&handles[ctx][1], &handles[ctx][0], 3 * sizeof(uint32_t));
	handles[ctx][0] = h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct netdev_cm_ops ops = { f_now, f_send, f_qp_owned, f_notify };
	struct netdev_cm_config cfg;
	size_t i = 0;

	memset(fp, 0, sizeof(fp));
	memset(handles, 0, sizeof(handles));
	qlen = 0;
	now_us = 1000000;
	for (int k = 0; k < 2; k++) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.port.max_conns = MAX_CONNS;
		cfg.port.max_pending = 4;
		cfg.port.comm_id_seed = 5u + (uint32_t)k;
		cfg.max_listens = MAX_LISTENS;
		cfg.max_events = MAX_EVENTS;
		fp[k].gid[10] = fp[k].gid[11] = 0xff;
		fp[k].gid[15] = (uint8_t)(k + 1);
		fp[k].cm = netdev_cm_new(&cfg, &ops, &fp[k]);
		if (!fp[k].cm)
			abort();
	}
	while (i < size) {
		uint8_t op = data[i++];
		int who = (op >> 3) & 3;
		int port = who == 3;
		uint64_t ctx = port ? 3 : (uint64_t)who + 1;
		uint8_t out[512], in[512];
		size_t out_len;

		switch (op & 7) {
		case 0: case 1: case 2: case 3: {
			uint8_t cmd, len;

			if (i + 2 > size)
				goto out;
			cmd = (uint8_t)(VIRTIO_NET_CTRL_ROCE_CM_FIRST - 1 + (data[i] & 15));
			len = data[i + 1];
			i += 2;
			if (len > size - i)
				len = (uint8_t)(size - i);
			memset(in, 0, sizeof(in));
			memcpy(in, data + i, len);
			i += len;
			/* op 1..3: the exact size of the command, with a handle
			 * the context was given (a recent one) */
			out_len = 0;
			if (op & 3) {
				static const uint8_t sizes[VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS] = {
					16, 8, 144, 216, 156, 8, 8, 8, 8, 248, 152, 0 };
				unsigned c = (unsigned)cmd - VIRTIO_NET_CTRL_ROCE_CM_FIRST;

				if (c < VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS) {
					len = sizes[c];
					if (c != 0 && c != 2 && c != 9 && len)
						memcpy(in, &handles[who][(op & 3) - 1], 4);
				}
			}
			netdev_cm_cmd(fp[port].cm, ctx, cmd, in, len, out, sizeof(out), &out_len);
			if (out_len > sizeof(out))
				abort();
			remember(who, out, out_len);
			break;
		}
		case 4:
			deliver();
			break;
		case 5:
			if (i >= size)
				goto out;
			now_us += (uint64_t)data[i++] * 20000;
			netdev_cm_tick(fp[0].cm);
			netdev_cm_tick(fp[1].cm);
			break;
		case 6:
			netdev_cm_ctx_gone(fp[port].cm, ctx);
			break;
		default:
			out_len = 0;
			netdev_cm_cmd(fp[port].cm, ctx, VIRTIO_NET_CTRL_ROCE_CM_GET_EVENT, NULL, 0, out,
				      sizeof(out), &out_len);
			if (out_len == sizeof(struct virtio_rdma_cm_event)) {
				struct virtio_rdma_cm_event ev;

				memcpy(&ev, out, sizeof(ev));
				if (le32toh(ev.type) == VIRTIO_IB_CM_REQ_RECEIVED ||
				    le32toh(ev.type) == VIRTIO_IB_CM_SIDR_REQ_RECEIVED)
					remember(who, out + 4, 4);
			}
			break;
		}
		check();
	}
out:
	for (int k = 0; k < 2; k++)
		netdev_cm_free(fp[k].cm);
	return 0;
}
