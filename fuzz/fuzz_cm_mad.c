/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the CM: the input's first CM_MAD_SIZE bytes (or fewer) go through
 * cm_mad_parse and cm_gsi_parse, with the invariant that re-encoding a parsed
 * MAD parses back to the same message. Then the whole input drives two
 * cm_ports connected back to back, as records
 *   u8 op | payload
 * op & 7: 0 deliver a MAD (u8 len-ish, then bytes; short ones are padded from
 *           a valid MAD the other port sent last) to port (op >> 3) & 1,
 *           from one of three GIDs ((op >> 4) & 3),
 *         1 advance the clock (u8 * 50 ms) and tick both ports,
 *         2 connect port 0 to port 1,  3 answer the last REQ (u8: REP, MRA, REJ),
 *         4 RTU/DREQ/DREP on the last connection of a port,
 *         5 destroy it,  6 SIDR resolve,  7 replay the last MAD with one byte set.
 * Aborts if the port's counts go out of their bounds; ASan checks the rest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"

#define MAX_PENDING 8
#define MAX_CONNS   32

struct fnode {
	struct cm_port *port;
	struct cm_addr addr;
	struct cm_conn *last;       /* last connection handle the user holds */
	struct cm_mad last_sent;
	int queued;
	struct cm_mad q[16];
	struct cm_addr q_src[16];
};

static struct fnode fn[2];
static uint64_t now_us;

static uint64_t f_now(void *ctx)
{
	(void)ctx;
	return now_us;
}

static int f_send(void *ctx, const struct cm_mad *mad, const struct cm_addr *dst)
{
	struct fnode *from = ctx;
	struct fnode *to = &fn[from == &fn[0] ? 1 : 0];

	from->last_sent = *mad;
	if (memcmp(dst->gid, to->addr.gid, 16) || to->queued == 16)
		return 0;
	to->q[to->queued] = *mad;
	to->q_src[to->queued] = from->addr;
	to->queued++;
	return 0;
}

static void f_event(void *ctx, const struct cm_event *ev)
{
	struct fnode *n = ctx;

	if (!ev->msg && ev->status == 0 && ev->type != CM_EVENT_TIMEWAIT_EXIT &&
	    ev->type != CM_EVENT_ESTABLISHED)
		__builtin_trap(); /* only timeouts and timewait come without a message */
	if (ev->type == CM_EVENT_SIDR_REQ_RECEIVED) {
		struct cm_sidr_rep_info rep = { .status = CM_SIDR_SUCCESS, .qpn = 9 };

		cm_send_sidr_rep(ev->conn, &rep); /* frees it */
		return;
	}
	if (ev->type == CM_EVENT_REQ_RECEIVED || ev->type == CM_EVENT_REP_RECEIVED) {
		if (n->last && n->last != ev->conn)
			cm_conn_destroy(n->last);
		n->last = ev->conn;
	}
}

static const struct cm_port_ops f_ops = { .now_us = f_now, .send = f_send, .event = f_event };

static void check(const struct fnode *n)
{
	const struct cm_port_stats *st = cm_port_stats(n->port);

	if (st->conns > MAX_CONNS || st->pending > MAX_PENDING || st->pending > st->conns)
		__builtin_trap();
}

static void pump(void)
{
	for (int round = 0; round < 64; round++) {
		int moved = 0;

		for (int i = 0; i < 2; i++) {
			while (fn[i].queued) {
				struct cm_mad mad = fn[i].q[0];
				struct cm_addr src = fn[i].q_src[0];

				fn[i].queued--;
				memmove(fn[i].q, fn[i].q + 1, (size_t)fn[i].queued * sizeof(fn[i].q[0]));
				memmove(fn[i].q_src, fn[i].q_src + 1,
					(size_t)fn[i].queued * sizeof(fn[i].q_src[0]));
				cm_port_recv(fn[i].port, &mad, sizeof(mad), &src);
				moved = 1;
			}
		}
		if (!moved)
			return;
	}
	fn[0].queued = fn[1].queued = 0; /* a ping-pong that never ends */
}

static void codec_invariants(const uint8_t *data, size_t size)
{
	struct cm_msg m1, m2;
	struct cm_mad mad;
	struct cm_gsi_info gi;
	struct cm_ip_info ip;
	size_t n = size < CM_MAD_SIZE ? size : CM_MAD_SIZE;

	cm_gsi_parse(data, size, &gi);
	cm_ip_hdr_parse(data, size, &ip);
	if (cm_mad_parse(data, n, &m1) != CM_MAD_OK)
		return;
	if (cm_mad_build(&mad, &m1) != 0)
		__builtin_trap();
	if (cm_mad_parse(&mad, sizeof(mad), &m2) != CM_MAD_OK || memcmp(&m1, &m2, sizeof(m1)))
		__builtin_trap();
}

static void do_connect(void)
{
	struct cm_req_info req;
	struct cm_conn *c;

	memset(&req, 0, sizeof(req));
	req.service_id = cm_service_id(CM_PS_TCP, 1);
	req.local_qpn = (uint32_t)(now_us & 0xFFFF) + 2;
	req.remote_cm_response_timeout = 10;
	req.max_cm_retries = 2;
	req.primary.local_ack_timeout = 10;
	if (cm_connect(fn[0].port, &req, &fn[1].addr, NULL, &c) == 0) {
		if (fn[0].last)
			cm_conn_destroy(fn[0].last);
		fn[0].last = c;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pd[256]; /* private data for requests: the input's head */
	struct cm_listener *l;
	size_t i = 0;

	memset(pd, 0, sizeof(pd));
	memcpy(pd, data, size < sizeof(pd) ? size : sizeof(pd));
	codec_invariants(data, size);

	now_us = 1000;
	memset(fn, 0, sizeof(fn));
	for (int k = 0; k < 2; k++) {
		struct cm_port_config cfg = { .ca_guid = 0x100u + (unsigned)k, .max_conns = MAX_CONNS,
					      .max_pending = MAX_PENDING, .comm_id_seed = 7 };

		fn[k].addr.gid[15] = (uint8_t)(k + 1);
		fn[k].addr.qpn = 1;
		fn[k].port = cm_port_create(&cfg, &f_ops, &fn[k]);
		if (!fn[k].port)
			abort();
	}
	cm_listen(fn[1].port, cm_service_id(CM_PS_TCP, 1), 3, NULL, &l);
	cm_listen(fn[1].port, cm_service_id(CM_PS_UDP, 1), 0, NULL, &l);
	cm_listen(fn[0].port, cm_service_id(CM_PS_TCP, 1), 0, NULL, &l);

	while (i < size) {
		uint8_t op = data[i++];
		int port = (op >> 3) & 1;
		struct fnode *n = &fn[port];
		uint8_t arg = i < size ? data[i] : 0;

		switch (op & 7) {
		case 0: {
			struct cm_mad mad = fn[!port].last_sent;
			struct cm_addr src = fn[!port].addr;
			size_t len = (size_t)arg + 1, take;

			if (i < size)
				i++;
			take = size - i < len ? size - i : len;
			if (take > CM_MAD_SIZE)
				take = CM_MAD_SIZE;
			memcpy(&mad, data + i, take);
			i += take;
			if ((op >> 4) & 1)
				src.gid[0] ^= 0x80;
			cm_port_recv(n->port, &mad, (op >> 5) & 1 ? take : sizeof(mad), &src);
			break;
		}
		case 1:
			i++;
			now_us += (uint64_t)arg * 50000;
			cm_port_tick(fn[0].port);
			cm_port_tick(fn[1].port);
			break;
		case 2:
			do_connect();
			break;
		case 3:
			i++;
			if (!n->last)
				break;
			if (arg % 3 == 0) {
				struct cm_rep_info rep = { .local_qpn = 5 };

				cm_send_rep(n->last, &rep);
			} else if (arg % 3 == 1) {
				cm_send_mra(n->last, arg, NULL, 0);
			} else {
				cm_send_rej(n->last, arg, pd, arg % 80, pd, arg % 150);
			}
			break;
		case 4:
			if (!n->last)
				break;
			cm_notify_established(n->last);
			cm_send_rtu(n->last, pd, (uint8_t)(size % 225));
			cm_send_dreq(n->last, NULL, 0);
			cm_send_drep(n->last, NULL, 0);
			break;
		case 5:
			cm_conn_destroy(n->last);
			n->last = NULL;
			break;
		case 6: {
			struct cm_sidr_req_info req = { .service_id = cm_service_id(CM_PS_UDP, 1) };
			struct cm_conn *c;

			if (cm_sidr_resolve(fn[0].port, &req, &fn[1].addr, 10, 1, NULL, &c) == 0) {
				if (fn[0].last)
					cm_conn_destroy(fn[0].last);
				fn[0].last = c;
			}
			break;
		}
		case 7: {
			struct cm_mad mad = fn[!port].last_sent;

			if (i + 1 < size) {
				((uint8_t *)&mad)[data[i] % CM_MAD_SIZE] = data[i + 1];
				i += 2;
			}
			cm_port_recv(n->port, &mad, sizeof(mad), &fn[!port].addr);
			break;
		}
		}
		pump();
		check(&fn[0]);
		check(&fn[1]);
	}
	for (int k = 0; k < 2; k++)
		cm_port_destroy(fn[k].port);
	return 0;
}
