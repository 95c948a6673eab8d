/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the L2 switch (port/port.h) with the fault injector on: frames of
 * arbitrary length, content and buffer position enter sw_input() from three
 * mock ports; mock ports keep what they receive and may send it back in
 * (like a device echoing), ports detach and re-attach, the fault
 * configuration changes, the MAC table ages. No loop: held frames leave by
 * the next frame of their stream or by a configuration change.
 *
 * Checks: no crash / sanitizer report; every frame a port receives is a
 * well-formed buffer (14 <= len <= PKT_MAX_FRAME, inside its pkt); a port
 * without hairpin never gets a frame back that it sent itself; the switch
 * counters never exceed what went in; and once the switch is freed and the
 * ports' queues are purged, pkt_outstanding() is back where it started
 * (nothing leaked, nothing freed twice).
 *
 * Input:
 *   [0..3]   drop, dup, reorder, corrupt probabilities (byte * 100 / 255 %,
 *            0 = off; byte 0xff on all four = no injector)
 *   [4..11]  seed
 *   [12]     bit 0-1: injector on every port (0) or on port (n - 1);
 *            bit 2: capture to /dev/null
 *   then records: [op][a][b][len lo][len hi] + data (len bytes, clipped to
 *   what is left):
 *     op % 8 = 0..3  frame from port a % 3 (data at headroom b, len as given,
 *                    even beyond the buffer: the switch must refuse it);
 *                    op bit 6: through sw_input_try (a port is busy at 8
 *                    queued frames, and calls sw_port_ready when it pops)
 *     op % 8 = 4     port a % 3 sends back the oldest frame it received
 *     op % 8 = 5     port a % 3 detaches (and re-attaches if b is odd)
 *     op % 8 = 6     new fault configuration from a, b and the data bytes
 *     op % 8 = 7     MAC table aging step
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "port/fault.h"
#include "port/pkt.h"
#include "port/port.h"

#define NPORTS 3
#define MOCK_QUEUE_MAX 64

struct mock {
	struct port port;
	struct pkt_queue q;
	bool attached;
	uint64_t received;
};

static uint64_t sent_in; /* frames handed to sw_input */

static void check_frame(const struct mock *m, const struct pkt *p)
{
	size_t off = (size_t)(p->data - p->buf);

	if (off > PKT_BUF_SIZE || p->len > PKT_BUF_SIZE - off || p->len > PKT_MAX_FRAME ||
	    p->len < 14)
		abort();
	/* Flooding skips the input port; unicast back to it needs hairpin. */
	if (!m->port.hairpin && p->in_port == m->port.id)
		abort();
}

static void mock_xmit(struct port *port, struct pkt *p)
{
	struct mock *m = port->priv;

	check_frame(m, p);
	m->received++;
	if (m->q.len >= MOCK_QUEUE_MAX)
		pkt_free(pkt_queue_pop(&m->q));
	pkt_queue_push(&m->q, p);
}

/* Flow control: a port is busy at MOCK_BUSY queued frames. */
#define MOCK_BUSY 8

static bool mock_busy(const struct port *port)
{
	const struct mock *m = port->priv;

	return m->q.len >= MOCK_BUSY;
}

static void mock_ready(struct port *port)
{
	(void)port;
}

static const struct port_ops mock_ops = { .xmit = mock_xmit, .busy = mock_busy,
					  .ready = mock_ready };

static uint32_t prob(uint8_t b)
{
	return (uint32_t)((uint64_t)b * FAULT_PROB_ONE / 255);
}

/* A configuration from 4 probability bytes and a seed. */
static void make_cfg(struct fault_cfg *c, const uint8_t p[4], uint64_t seed)
{
	fault_cfg_init(c);
	c->drop = prob(p[0]);
	c->dup = prob(p[1]);
	c->reorder = prob(p[2]);
	c->corrupt = prob(p[3]);
	c->seed = seed;
}

static void apply_cfg(struct sw *s, struct mock *m, const uint8_t p[4], uint64_t seed,
		      uint8_t where)
{
	struct fault_cfg c;
	const char *name = NULL;

	if (p[0] == 0xff && p[1] == 0xff && p[2] == 0xff && p[3] == 0xff) {
		sw_set_fault(s, NULL, NULL);
		return;
	}
	make_cfg(&c, p, seed);
	if (where % 4)
		name = m[(where % 4) - 1].port.name;
	if (sw_set_fault(s, &c, name) < 0)
		abort();
}

static void input_frame(struct sw *s, struct mock *m, uint8_t b, uint32_t len,
			const uint8_t *data, size_t avail, bool try)
{
	struct pkt *p = pkt_alloc();
	size_t off = b % (PKT_HEADROOM + 1), room;

	if (!p)
		return;
	p->data = p->buf + off;
	p->len = len;
	room = PKT_BUF_SIZE - off;
	/* Fill what fits in the buffer: input bytes, then a pattern. */
	for (size_t i = 0; i < room && i < len; i++)
		p->data[i] = i < avail ? data[i] : (uint8_t)(i * 31 + len);
	if (try) {
		/* Refused: the frame is still ours. */
		if (sw_input_try(s, &m->port, p) < 0)
			pkt_free(p);
		else
			sent_in++;
		return;
	}
	sent_in++;
	sw_input(s, &m->port, p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	vlog_level = -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t base = pkt_outstanding(), seed = 0, received = 0;
	struct mock m[NPORTS];
	const struct sw_stats *st;
	struct sw *s;

	if (size < 13)
		return 0;
	sent_in = 0;
	s = sw_new(NULL);
	if (!s)
		return 0;
	memset(m, 0, sizeof(m));
	for (int i = 0; i < NPORTS; i++) {
		m[i].port.ops = &mock_ops;
		m[i].port.priv = &m[i];
		m[i].port.hairpin = i == 0; /* port 0 behaves like a device */
		m[i].port.uplink = i == 2;
		snprintf(m[i].port.name, sizeof(m[i].port.name), "p%d", i);
		pkt_queue_init(&m[i].q);
		if (sw_attach(s, &m[i].port) < 0)
			abort();
		m[i].attached = true;
	}
	memcpy(&seed, data + 4, 8);
	apply_cfg(s, m, data, seed, data[12]);
	if ((data[12] & 4) && sw_set_pcap(s, "/dev/null") < 0)
		abort();
	data += 13;
	size -= 13;

	while (size >= 5) {
		uint8_t op = data[0], a = data[1], b = data[2];
		uint32_t len = (uint32_t)data[3] | (uint32_t)data[4] << 8;
		size_t take;
		struct mock *pm = &m[a % NPORTS];

		data += 5;
		size -= 5;
		take = len < size ? len : size;
		switch (op % 8) {
		case 0: case 1: case 2: case 3:
			/* Mostly plausible lengths, sometimes anything. */
			if (!(op & 0x80))
				len %= PKT_MAX_FRAME + 64;
			if (pm->attached)
				input_frame(s, pm, b, len, data, take, op & 0x40);
			break;
		case 4: {
			struct pkt *p = pkt_queue_pop(&pm->q);

			if (p && pm->attached) {
				sent_in++;
				sw_input(s, &pm->port, p);
			} else {
				pkt_free(p);
			}
			/* Room again: wake who this port refused. */
			if (pm->attached && pm->q.len < MOCK_BUSY / 2)
				sw_port_ready(s, &pm->port);
			break;
		}
		case 5:
			if (pm->attached) {
				sw_detach(s, &pm->port);
				pm->attached = false;
			}
			if (b & 1) {
				if (sw_attach(s, &pm->port) < 0)
					abort();
				pm->attached = true;
			}
			break;
		case 6: {
			uint8_t p4[4] = { a, b, take > 0 ? data[0] : 0, take > 1 ? data[1] : 0 };

			apply_cfg(s, m, p4, seed + op, take > 2 ? data[2] : 0);
			break;
		}
		default:
			sw_mac_age(s);
			break;
		}
		data += take;
		size -= take;
	}

	/* Counters: what left the switch cannot exceed what went in, plus
	 * duplicates and floods. */
	st = sw_get_stats(s);
	for (int i = 0; i < NPORTS; i++)
		received += m[i].received;
	if (st->forwarded + st->dropped_no_port + st->dropped_runt + st->dropped_hairpin +
	    st->dropped_spoofed + st->fault_dropped > sent_in + st->fault_duplicated)
		abort();
	if (received > (sent_in + st->fault_duplicated) * NPORTS)
		abort();

	/* Held frames are released to the ports, then everything goes. */
	sw_set_fault(s, NULL, NULL);
	for (int i = 0; i < NPORTS; i++)
		sw_set_fault(s, NULL, m[i].port.name);
	for (int i = 0; i < NPORTS; i++)
		if (m[i].attached)
			sw_detach(s, &m[i].port);
	sw_free(s);
	for (int i = 0; i < NPORTS; i++)
		pkt_queue_purge(&m[i].q);
	if (pkt_outstanding() != base)
		abort();
	return 0;
}
