// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: attacks on the verbs extensions (VIRTIO_NET_F_ROCE_EXT, docs/
 * spec.md "Extensions beyond the RFC"), on top of the RDMA driver of rdma.c.
 * Each attack opens its own connection (the device needs max_rdma_qps >= 4
 * and its event and SRQ rings below index 256) and checks the device's
 * answers from the driver's side:
 *   ext_cmd_*   bad control commands 18..27 (lengths, handles, every field
 *               at its extremes), the commands changed by the extension,
 *               commands >= 28, and the extension without its feature (its
 *               commands, flags, opcodes, and garbage on the rings it would
 *               add, which the device must not look at): every
 *               one must get VIRTIO_NET_ERR, and the device must still pass
 *               verified RDMA traffic afterwards ("outcome alive");
 *   ext_wr_*    bad work requests (atomics misaligned / bad keys / bad
 *               result buffers, BIND_MW and REG_MR with bad keys, ranges,
 *               rights and page lists outside shared memory, LOCAL_INV and
 *               SEND_WITH_INV of keys that cannot be invalidated, reserved
 *               opcodes): each must complete with the status the spec gives,
 *               then the QPs are recycled and traffic is verified again;
 *   ext_srq_*, ext_evq_*, ext_cq_*  bad descriptors on an SRQ ring, the
 *               event ring or a completion ring with completions waiting
 *               (out-of-range heads and addresses, loops, avail jumps): the
 *               device must report the ring (error eventfd, NEEDS_RESET or
 *               an SRQ_ERR event), leave it alone, and work again after
 *               RESET_DEVICE; bad SRQ elements and short event buffers are
 *               refused element by element, without breaking anything.
 * A capability the device does not report is attacked through its refusal
 * path instead (commands ERR, work requests LOC_QP_OP_ERR).
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vrdma/virtio_net_roce_cm.h"
#include "evil.h"
#include "rdma.h"

/* ---- tallies ------------------------------------------------------------------ */

struct tally {
	unsigned checks, failed;
	char first[400];
};

static __attribute__((format(printf, 2, 3))) void t_fail(struct tally *t, const char *fmt, ...)
{
	va_list ap;
	char buf[400];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	evil_say("bad reaction: %s", buf);
	if (!t->failed++)
		snprintf(t->first, sizeof(t->first), "%s", buf);
}

/* A command whose ack must be want (VIRTIO_NET_OK / VIRTIO_NET_ERR). */
static int expect_cmd(struct evil_rdev *d, struct tally *t, int want, uint8_t cmd, const void *in,
		      size_t in_len, void *out, size_t out_len, const char *label)
{
	int rc = rdev_cmd(d, cmd, in, in_len, out, out_len);

	t->checks++;
	if (rc != want)
		t_fail(t, "command %u (%s, %zu bytes, ack room %zu): %s, expected %s", cmd, label,
		       in_len, out_len, rc < 0 ? strerror(-rc) : rc ? "ERR" : "OK",
		       want ? "ERR" : "OK");
	return rc;
}

/* A command (struct s) that must be refused; ack is the caller's buffer. */
#define BAD(d, t, cmd, s, label) \
	expect_cmd(d, t, VIRTIO_NET_ERR, cmd, &(s), sizeof(s), ack, sizeof(ack), label)

/* The end of an attack: the device passes verified traffic; "outcome
 * alive" if so. */
static int finish(struct evil_rdev *d, struct tally *t, const char *what)
{
	int rc = rdev_probe(d, 77);

	if (rc < 0)
		t_fail(t, "RDMA traffic after the attack: %s", strerror(-rc));
	evil_say("checks %u failed %u", t->checks, t->failed);
	evil_say("outcome %s", rc == 0 ? "alive" : "not-alive");
	rdev_close(d);
	return evil_verdict(t->failed == 0, "%s: %u of %u reactions wrong; first: %s", what,
			    t->failed, t->checks, t->first);
}

/* ---- commands ------------------------------------------------------------------ */

struct cmd_size {
	size_t in, out;
};

static const struct cmd_size ext_sizes[10] = {
	{ sizeof(struct virtio_rdma_cmd_create_srq), sizeof(struct virtio_rdma_ack_create_srq) },
	{ sizeof(struct virtio_rdma_cmd_modify_srq), 0 },
	{ sizeof(struct virtio_rdma_cmd_query_srq), sizeof(struct virtio_rdma_ack_query_srq) },
	{ sizeof(struct virtio_rdma_cmd_destroy_srq), 0 },
	{ sizeof(struct virtio_rdma_cmd_alloc_mr), sizeof(struct virtio_rdma_ack_alloc_mr) },
	{ sizeof(struct virtio_rdma_cmd_alloc_mw), sizeof(struct virtio_rdma_ack_alloc_mw) },
	{ sizeof(struct virtio_rdma_cmd_dealloc_mw), 0 },
	{ sizeof(struct virtio_rdma_cmd_resize_cq), sizeof(struct virtio_rdma_ack_resize_cq) },
	{ sizeof(struct virtio_rdma_cmd_resize_qp), sizeof(struct virtio_rdma_ack_resize_qp) },
	{ sizeof(struct virtio_rdma_cmd_query_pkey), sizeof(struct virtio_rdma_ack_query_pkey) },
};

/* A well-formed body for command c (what a correct driver could send, so
 * that only the length is wrong). */
static void good_body(struct evil_rdev *d, uint8_t c, uint8_t *b)
{
	uint32_t w[8] = { 0 };

	switch (c) {
	case VIRTIO_NET_CTRL_ROCE_CREATE_SRQ:
		w[0] = d->pdn; w[1] = 16; w[2] = 1;
		break;
	case VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ:
		w[0] = 0; w[1] = VIRTIO_IB_SRQ_LIMIT; w[3] = 1;
		break;
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MR:
		w[0] = d->pdn; w[1] = VIRTIO_IB_MR_TYPE_MEM_REG; w[2] = 4;
		break;
	case VIRTIO_NET_CTRL_ROCE_ALLOC_MW:
		w[0] = d->pdn; w[1] = VIRTIO_IB_MW_TYPE_1;
		break;
	case VIRTIO_NET_CTRL_ROCE_RESIZE_CQ:
		w[0] = d->cqn; w[1] = 256;
		break;
	case VIRTIO_NET_CTRL_ROCE_RESIZE_QP:
		w[0] = d->qpn[0]; w[2] = 32; w[3] = 32; w[4] = 2; w[5] = 2; w[6] = 64;
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < 8; i++)
		w[i] = htole32(w[i]);
	memcpy(b, w, sizeof(w));
}

/* Commands 18..27 with every wrong length and too little room for the ack. */
static int run_cmd_lengths(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	uint8_t body[1100], ack[64];

	(void)a;
	if (rdev_open(&d, o, 0) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	for (uint8_t c = 18; c <= 27; c++) {
		const struct cmd_size *s = &ext_sizes[c - 18];
		size_t lens[] = { 0, s->in - 1, s->in + 1, s->in + 4, s->in * 2, 1024 };

		for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			memset(body, 0, sizeof(body));
			good_body(&d, c, body);
			expect_cmd(&d, &t, VIRTIO_NET_ERR, c, body, lens[k], ack, s->out,
				   "wrong length");
		}
		memset(body, 0xff, sizeof(body));
		expect_cmd(&d, &t, VIRTIO_NET_ERR, c, body, 1024, ack, sizeof(ack),
			   "1024 bytes of 0xff");
		if (s->out) {
			memset(body, 0, sizeof(body));
			good_body(&d, c, body);
			expect_cmd(&d, &t, VIRTIO_NET_ERR, c, body, s->in, ack, s->out - 1,
				   "ack room one byte short");
			expect_cmd(&d, &t, VIRTIO_NET_ERR, c, body, s->in, NULL, 0, "no ack room");
		}
	}
	/* the commands exist: QUERY_PKEY 0 is 0xFFFF */
	{
		struct virtio_rdma_cmd_query_pkey q = { 0, 0 };
		struct virtio_rdma_ack_query_pkey p = { 0, 0 };

		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, &q, sizeof(q),
			       &p, sizeof(p), "QUERY_PKEY 0") == 0 && le16toh(p.pkey) != 0xffff)
			t_fail(&t, "QUERY_PKEY 0 gave 0x%04x", le16toh(p.pkey));
	}
	return finish(&d, &t, "commands 18..27 with bad lengths");
}

/* Commands >= 28 and other classes' unknown commands (64..75 are the
 * connection manager's: answered OK with a status, fuzz_netdev_cm). */
static int run_cmd_unknown(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	uint8_t body[64], ack[64];

	(void)a;
	if (rdev_open(&d, o, 0) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	for (unsigned c = 28; c <= 255; c++) {
		size_t len = (c % 3) * 16;

		if (c >= VIRTIO_NET_CTRL_ROCE_CM_FIRST &&
		    c < VIRTIO_NET_CTRL_ROCE_CM_FIRST + VIRTIO_NET_CTRL_ROCE_CM_NUM_CMDS)
			continue;

		for (unsigned i = 0; i < sizeof(body); i++)
			body[i] = (uint8_t)(c * 7 + i);
		expect_cmd(&d, &t, VIRTIO_NET_ERR, (uint8_t)c, body, len, ack, sizeof(ack),
			   "unknown command");
	}
	return finish(&d, &t, "commands 28..255");
}

/* Every field of commands 18..27 (and of the RFC commands the extension
 * changed) at its extremes. */
static int run_cmd_values(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	uint8_t ack[64];
	uint32_t max_srq_wr, max_srq_sge, max_fr, max_cqe;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_SRQ) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	max_srq_wr = le32toh(d.dev.max_srq_wr);
	max_srq_sge = le32toh(d.dev.max_srq_sge);
	max_fr = le32toh(d.dev.max_fast_reg_page_list_len);
	max_cqe = le32toh(d.dev.max_cqe);
	evil_say("device: caps 0x%llx atomic_cap %u max_mw %u srqs %u max_srq_wr %u "
		 "max_fast_reg_page_list_len %u", (unsigned long long)d.caps, d.dev.atomic_cap,
		 le32toh(d.dev.max_mw), d.srqs, max_srq_wr, max_fr);

	/* 18 CREATE_SRQ */
	{
		const uint32_t v[][3] = {
			{ 0, 16, 1 }, { 0xffffffff, 16, 1 }, { 0x10000, 16, 1 },
			{ 1, 0, 1 }, { 1, 0xffffffff, 1 }, { 1, max_srq_wr + 1, 1 },
			{ 1, 16, 0xffffffff }, { 1, 16, max_srq_sge + 1 },
			{ 0xffffffff, 0xffffffff, 0xffffffff },
		};
		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_create_srq c = {
				htole32(v[i][0] == 1 ? d.pdn : v[i][0]), htole32(v[i][1]),
				htole32(v[i][2]), 0 };
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_CREATE_SRQ, c, "CREATE_SRQ extreme");
		}
	}
	/* 19 MODIFY_SRQ, 20 QUERY_SRQ, 21 DESTROY_SRQ: handles */
	{
		const uint32_t srqns[] = { 0xffffffff, d.srqs, d.srqs + 1, 0x80000000,
					   d.srqs ? d.srqs - 1 : 12345 };

		for (unsigned i = 0; i < sizeof(srqns) / sizeof(srqns[0]); i++) {
			struct virtio_rdma_cmd_modify_srq m = { htole32(srqns[i]),
				htole32(VIRTIO_IB_SRQ_LIMIT), 0, htole32(1) };
			struct virtio_rdma_cmd_query_srq q = { htole32(srqns[i]) };
			struct virtio_rdma_cmd_destroy_srq x = { htole32(srqns[i]) };

			if (d.has_srq && srqns[i] == d.srqn)
				continue;
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ, m, "MODIFY_SRQ no such SRQ");
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, q, "QUERY_SRQ no such SRQ");
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, x, "DESTROY_SRQ no such SRQ");
		}
	}
	if (d.has_srq) {
		const uint32_t v[][3] = {   /* attr_mask, max_wr, srq_limit */
			{ 0, 0, 0 }, { 1u << 2, 0, 1 }, { 0xffffffff, 0xffffffff, 0xffffffff },
			{ VIRTIO_IB_SRQ_MAX_WR, 128, 0 },
			{ VIRTIO_IB_SRQ_MAX_WR | VIRTIO_IB_SRQ_LIMIT, 128, 1 },
			{ VIRTIO_IB_SRQ_LIMIT, 0, 65 }, { VIRTIO_IB_SRQ_LIMIT, 0, 0xffffffff },
			{ VIRTIO_IB_SRQ_LIMIT | (1u << 31), 0, 1 },
		};
		struct virtio_rdma_cmd_destroy_srq x = { htole32(d.srqn) };
		struct virtio_rdma_cmd_query_srq q = { htole32(d.srqn) };
		struct virtio_rdma_ack_query_srq qa;

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_modify_srq m = { htole32(d.srqn), htole32(v[i][0]),
				htole32(v[i][1]), htole32(v[i][2]) };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ, m, "MODIFY_SRQ extreme");
		}
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, x, "DESTROY_SRQ in use by a QP");
		memset(&qa, 0, sizeof(qa));
		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, &q, sizeof(q),
			       &qa, sizeof(qa), "QUERY_SRQ after the bad ones") == 0 &&
		    (le32toh(qa.max_wr) != 64 || le32toh(qa.srq_limit) != 0))
			t_fail(&t, "QUERY_SRQ after refused changes: max_wr %u srq_limit %u (64, 0)",
			       le32toh(qa.max_wr), le32toh(qa.srq_limit));
	}
	/* 22 ALLOC_MR */
	{
		const uint32_t v[][3] = {
			{ 0, 0, 4 }, { 0xffffffff, 0, 4 }, { 1, 1, 4 }, { 1, 0xffffffff, 4 },
			{ 1, 0, 0 }, { 1, 0, 0xffffffff }, { 1, 0, max_fr + 1 },
			{ 1, 0, 0x80000000 },
		};
		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_alloc_mr c = { htole32(v[i][0] == 1 ? d.pdn : v[i][0]),
				htole32(v[i][1]), htole32(v[i][2]), 0 };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_ALLOC_MR, c, "ALLOC_MR extreme");
		}
	}
	/* 23 ALLOC_MW, 24 DEALLOC_MW */
	{
		const uint32_t v[][2] = { { 0, 1 }, { 0xffffffff, 1 }, { 1, 0 }, { 1, 3 },
					  { 1, 0xffffffff }, { 1, 0x80000001 } };
		const uint32_t mwns[] = { 0, 0xffffffff, 65535, 65536, d.data_mrn };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_alloc_mw c = { htole32(v[i][0] == 1 ? d.pdn : v[i][0]),
							      htole32(v[i][1]) };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_ALLOC_MW, c, "ALLOC_MW extreme");
		}
		for (unsigned i = 0; i < sizeof(mwns) / sizeof(mwns[0]); i++) {
			struct virtio_rdma_cmd_dealloc_mw c = { htole32(mwns[i]) };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, c,
			    mwns[i] == d.data_mrn ? "DEALLOC_MW of an MR" : "DEALLOC_MW bad handle");
		}
	}
	if (d.mw) {
		struct virtio_rdma_cmd_alloc_mw c = { htole32(d.pdn), htole32(VIRTIO_IB_MW_TYPE_1) };
		struct virtio_rdma_ack_alloc_mw am;

		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_ALLOC_MW, &c, sizeof(c),
			       &am, sizeof(am), "ALLOC_MW type 1") == 0) {
			struct virtio_rdma_cmd_dereg_mr dr = { am.mwn };
			struct virtio_rdma_cmd_destroy_pd dp = { htole32(d.pdn) };
			struct virtio_rdma_cmd_dealloc_mw dm = { am.mwn };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DEREG_MR, dr, "DEREG_MR of a window");
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_PD, dp, "DESTROY_PD with a window");
			expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, &dm,
				   sizeof(dm), NULL, 0, "DEALLOC_MW");
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, dm, "DEALLOC_MW twice");
		}
	}
	/* 25 RESIZE_CQ */
	{
		const uint32_t v[][2] = { { 0xffffffff, 64 }, { d.cqs, 64 }, { 0x80000000, 64 },
					  { 0, 0 }, { 0, 0xffffffff }, { 0, max_cqe + 1 } };

		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_resize_cq c = {
				htole32(v[i][0] == 0 ? d.cqn : v[i][0]), htole32(v[i][1]) };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, c, "RESIZE_CQ extreme");
		}
	}
	/* 26 RESIZE_QP: the caps as created are 32 32 2 2 64 (B: 32 0 2 0 64) */
	{
		const uint32_t v[][6] = {   /* qpn (0: A), send_wr, recv_wr, ssge, rsge, inline */
			{ 0xffffffff, 32, 32, 2, 2, 64 }, { 0, 32, 32, 2, 2, 64 },
			{ 2, 32, 32, 3, 2, 64 }, { 2, 32, 32, 2, 1, 64 }, { 2, 32, 32, 2, 2, 65 },
			{ 2, 0xffffffff, 32, 2, 2, 64 }, { 2, 32, 0xffffffff, 2, 2, 64 },
			{ 2, 32, 32, 0xffffffff, 0xffffffff, 0xffffffff },
			{ 3, 32, 0xffffffff, 2, 2, 64 },
		};
		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_resize_qp c;
			uint32_t q = v[i][0] == 2 ? d.qpn[0] : v[i][0] == 3 ? d.qpn[0] ^ (1u << 14) :
				     v[i][0];

			memset(&c, 0, sizeof(c));
			c.qpn = htole32(q);
			c.cap.max_send_wr = htole32(v[i][1]);
			c.cap.max_recv_wr = htole32(v[i][2]);
			c.cap.max_send_sge = htole32(v[i][3]);
			c.cap.max_recv_sge = htole32(v[i][4]);
			c.cap.max_inline_data = htole32(v[i][5]);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_RESIZE_QP, c, "RESIZE_QP extreme");
		}
		if (d.has_srq && (d.flags & RDEV_F_SRQ)) {
			struct virtio_rdma_cmd_resize_qp c;

			memset(&c, 0, sizeof(c));
			c.qpn = htole32(d.qpn[1]);
			c.cap.max_send_wr = htole32(32);
			c.cap.max_recv_wr = htole32(8);
			c.cap.max_send_sge = htole32(2);
			c.cap.max_inline_data = htole32(64);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_RESIZE_QP, c, "RESIZE_QP recv_wr with an SRQ");
		}
	}
	/* 27 QUERY_PKEY */
	{
		const uint16_t idx[] = { 1, 2, 0x8000, 0xffff };

		for (unsigned i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
			struct virtio_rdma_cmd_query_pkey c = { htole16(idx[i]), 0 };

			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, c, "QUERY_PKEY index");
		}
	}
	/* CREATE_QP's ext_flags and srqn */
	{
		const uint32_t v[][3] = {   /* qp_type, ext_flags, srqn (1: ours) */
			{ VIRTIO_IB_QPT_RC, 2, 0 }, { VIRTIO_IB_QPT_RC, 0xfffffffe, 0 },
			{ VIRTIO_IB_QPT_RC, 0xffffffff, 1 },
			{ VIRTIO_IB_QPT_RC, VIRTIO_IB_QP_CREATE_SRQ, 0xffffffff },
			{ VIRTIO_IB_QPT_RC, VIRTIO_IB_QP_CREATE_SRQ, 0x10000 },
			{ VIRTIO_IB_QPT_GSI, VIRTIO_IB_QP_CREATE_SRQ, 1 },
		};
		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct virtio_rdma_cmd_create_qp_ext c;

			memset(&c, 0, sizeof(c));
			c.pdn = htole32(d.pdn);
			c.qp_type = (uint8_t)v[i][0];
			c.send_cqn = c.recv_cqn = htole32(d.cqn);
			c.cap.max_send_wr = c.cap.max_recv_wr = htole32(4);
			c.cap.max_send_sge = c.cap.max_recv_sge = htole32(1);
			c.ext_flags = htole32(v[i][1]);
			c.srqn = htole32(v[i][2] == 1 ? d.srqn : v[i][2]);
			if (!d.has_srq && v[i][2] == 1 && v[i][1] == VIRTIO_IB_QP_CREATE_SRQ)
				c.srqn = htole32(0);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_CREATE_QP, c, "CREATE_QP ext_flags / srqn");
		}
	}
	/* access flags: REG_USER_MR and MODIFY_QP */
	{
		const uint32_t acc[] = {
			VIRTIO_IB_ACCESS_REMOTE_ATOMIC, /* without LOCAL_WRITE */
			VIRTIO_IB_ACCESS_LOCAL_WRITE | (1u << 5),
			VIRTIO_IB_ACCESS_LOCAL_WRITE | (1u << 31), 0xffffffff,
		};
		for (unsigned i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
			uint8_t b[40];
			struct virtio_rdma_cmd_reg_user_mr *m = (void *)b;
			uint64_t pg = htole64(evil_gpa(d.scratch));
			struct virtio_rdma_cmd_modify_qp q;

			memset(b, 0, sizeof(b));
			m->pdn = htole32(d.pdn);
			m->access_flags = htole32(acc[i]);
			m->virt_addr = htole64(evil_gpa(d.scratch));
			m->length = htole64(4096);
			m->npages = htole32(1);
			memcpy(b + 32, &pg, 8);
			expect_cmd(&d, &t, VIRTIO_NET_ERR, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, b,
				   sizeof(b), ack, 12, "REG_USER_MR access flags");
			memset(&q, 0, sizeof(q));
			q.qpn = htole32(d.qpn[0]);
			q.attr_mask = htole32(VIRTIO_IB_QP_ACCESS_FLAGS);
			q.qp_access_flags = htole32(acc[i] == VIRTIO_IB_ACCESS_REMOTE_ATOMIC ?
						    (1u << 6) : acc[i]);
			expect_cmd(&d, &t, VIRTIO_NET_ERR, VIRTIO_NET_CTRL_ROCE_MODIFY_QP, &q,
				   sizeof(q), NULL, 0, "MODIFY_QP access flags");
		}
	}
	return finish(&d, &t, "extension command fields at their extremes");
}

/* The extension's commands, flags and opcodes on a device whose driver did
 * not negotiate VIRTIO_NET_F_ROCE_EXT: the RFC-only device exactly. */
static int run_cmd_no_feature(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	uint8_t body[64], ack[64];
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge sge;
	struct virtio_rdma_cq_req_ext wc;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_EXT | RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	for (uint8_t c = 18; c <= 27; c++) {
		memset(body, 0, sizeof(body));
		good_body(&d, c, body);
		expect_cmd(&d, &t, VIRTIO_NET_ERR, c, body, ext_sizes[c - 18].in, ack,
			   ext_sizes[c - 18].out, "extension command without ROCE_EXT");
	}
	{
		struct virtio_rdma_ack_query_device q;

		memset(&q, 0xee, sizeof(q));
		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0,
			       &q, sizeof(q), "QUERY_DEVICE") == 0) {
			for (unsigned i = 0; i < 14; i++)
				if (q.reserved[i]) {
					t_fail(&t, "QUERY_DEVICE reserved word %u is 0x%x without "
					       "ROCE_EXT", i, le32toh(q.reserved[i]));
					break;
				}
			if (le64toh(q.device_cap_flags) & ~(uint64_t)VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN)
				t_fail(&t, "device_cap_flags 0x%llx without ROCE_EXT",
				       (unsigned long long)le64toh(q.device_cap_flags));
		}
	}
	/* CREATE_QP's reserved words are ignored: a QP is created (when the
	 * device has a free QP index: 0 and 1 are not ours, A and B hold two) */
	if (d.qps > 4) {
		struct virtio_rdma_cmd_create_qp_ext c;
		struct virtio_rdma_ack_create_qp qa;

		memset(&c, 0, sizeof(c));
		c.pdn = htole32(d.pdn);
		c.qp_type = VIRTIO_IB_QPT_RC;
		c.send_cqn = c.recv_cqn = htole32(d.cqn);
		c.cap.max_send_wr = c.cap.max_recv_wr = htole32(4);
		c.cap.max_send_sge = c.cap.max_recv_sge = htole32(1);
		c.ext_flags = htole32(0xffffffff);
		c.srqn = htole32(0xffffffff);
		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c),
			       &qa, sizeof(qa), "CREATE_QP with reserved words set") == 0) {
			struct virtio_rdma_cmd_destroy_qp x = { qa.qpn };

			expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &x,
				   sizeof(x), NULL, 0, "DESTROY_QP");
		}
	}
	/* REMOTE_ATOMIC / MW_BIND on an MR */
	{
		const uint32_t acc[] = { VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC,
					 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND };

		for (unsigned i = 0; i < 2; i++) {
			uint8_t b[40];
			struct virtio_rdma_cmd_reg_user_mr *m = (void *)b;
			uint64_t pg = htole64(evil_gpa(d.scratch));

			memset(b, 0, sizeof(b));
			m->pdn = htole32(d.pdn);
			m->access_flags = htole32(acc[i]);
			m->virt_addr = htole64(evil_gpa(d.scratch));
			m->length = htole64(4096);
			m->npages = htole32(1);
			memcpy(b + 32, &pg, 8);
			expect_cmd(&d, &t, VIRTIO_NET_ERR, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, b,
				   sizeof(b), ack, 12, "REG_USER_MR extension flag without ROCE_EXT");
		}
	}
	/* every extension opcode fails locally */
	{
		const uint8_t ops[] = { 5, 6, 7, 8, 9, 10, 11, 0x20 };

		for (unsigned i = 0; i < sizeof(ops); i++) {
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = htole64(0x5100 + i);
			wr.opcode = ops[i];
			wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
			wr.atomic.remote_addr = htole64(evil_gpa(d.data + RDEV_ATOM_OFF));
			wr.atomic.rkey = htole32(d.data_rkey);
			wr.num_sge = htole32(ops[i] == 5 || ops[i] == 6 || ops[i] == 9 ? 1 : 0);
			sge.addr = htole64(evil_gpa(d.data));
			sge.length = htole32(8);
			sge.lkey = htole32(d.data_lkey);
			t.checks++;
			if (rdev_post_send(&d, 0, &wr, &sge, le32toh(wr.num_sge)) < 0 ||
			    rdev_wait_wc(&d, 0x5100 + i, &wc) < 0)
				t_fail(&t, "opcode %u without ROCE_EXT: no completion", ops[i]);
			else if (wc.status != VIRTIO_IB_WC_LOC_QP_OP_ERR)
				t_fail(&t, "opcode %u without ROCE_EXT: status %u, expected "
				       "LOC_QP_OP_ERR (2)", ops[i], wc.status);
			else if (wc.opcode >= 5 || (le32toh(wc.wc_flags) & VIRTIO_IB_WC_WITH_INV))
				t_fail(&t, "completion opcode %u / flags 0x%x without ROCE_EXT",
				       wc.opcode, le32toh(wc.wc_flags));
			if (rdev_connect(&d, 0) < 0 || rdev_connect(&d, 1) < 0) {
				t_fail(&t, "QPs cannot be brought back to RTS");
				break;
			}
		}
	}
	return finish(&d, &t, "the extension without VIRTIO_NET_F_ROCE_EXT");
}

/* ---- work requests --------------------------------------------------------------- */

/* Drain completions already there (none is waited for). */
static void drain_cq(struct evil_rdev *d)
{
	struct virtio_rdma_cq_req_ext wc;

	while (rdev_poll_cq(d, &wc, 0) == 0)
		;
}

/* Post wr on A; its completion must have one of the statuses in want
 * (0xff-terminated); then both QPs are brought back to RTS. */
static void expect_wr(struct evil_rdev *d, struct tally *t, struct virtio_rdma_sq_req_ext *wr,
		      const struct virtio_rdma_sge *sge, unsigned nsge, const uint8_t *want,
		      const char *label)
{
	static uint64_t id = 0x10000;
	struct virtio_rdma_cq_req_ext wc;
	bool match = false;
	int rc;

	wr->wr_id = htole64(++id);
	wr->send_flags |= VIRTIO_IB_SEND_SIGNALED;
	t->checks++;
	rc = rdev_post_send(d, 0, wr, sge, nsge);
	if (!rc)
		rc = rdev_wait_wc(d, id, &wc);
	if (rc < 0) {
		t_fail(t, "%s: no completion (%s)", label, strerror(-rc));
	} else {
		for (const uint8_t *w = want; *w != 0xff; w++)
			match |= wc.status == *w;
		if (!match)
			t_fail(t, "%s: status %u, expected %u%s", label, wc.status, want[0],
			       want[1] != 0xff ? " (or another)" : "");
	}
	if (want[0] != VIRTIO_IB_WC_SUCCESS || !match) {
		if (rdev_connect(d, 0) < 0 || rdev_connect(d, 1) < 0)
			t_fail(t, "%s: the QPs cannot be brought back to RTS", label);
		drain_cq(d);
	}
}

static const uint8_t S_OK[] = { VIRTIO_IB_WC_SUCCESS, 0xff };
static const uint8_t S_LOC_LEN[] = { VIRTIO_IB_WC_LOC_LEN_ERR, 0xff };
static const uint8_t S_LOC_QP_OP[] = { VIRTIO_IB_WC_LOC_QP_OP_ERR, 0xff };
static const uint8_t S_LOC_PROT[] = { VIRTIO_IB_WC_LOC_PROT_ERR, 0xff };
static const uint8_t S_REM_INV[] = { VIRTIO_IB_WC_REM_INV_REQ_ERR, 0xff };
static const uint8_t S_REM_ACC[] = { VIRTIO_IB_WC_REM_ACCESS_ERR, 0xff };
static const uint8_t S_BIND[] = { VIRTIO_IB_WC_MW_BIND_ERR, 0xff };
static const uint8_t S_LEN_OR_OP[] = { VIRTIO_IB_WC_LOC_LEN_ERR, VIRTIO_IB_WC_LOC_QP_OP_ERR,
				       0xff };

static void atomic_wr(struct evil_rdev *d, struct virtio_rdma_sq_req_ext *wr,
		      struct virtio_rdma_sge *sge, uint8_t op, uint64_t va, uint32_t rkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->opcode = op;
	wr->atomic.remote_addr = htole64(va);
	wr->atomic.rkey = htole32(rkey);
	wr->atomic.compare_add = htole64(1);
	wr->atomic.swap = htole64(2);
	wr->num_sge = htole32(1);
	sge->addr = htole64(evil_gpa(d->data + RDEV_SRC_OFF));
	sge->length = htole32(8);
	sge->lkey = htole32(d->data_lkey);
}

static int run_wr_atomic(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge sge[2];
	uint64_t base;
	const uint8_t *acc, *inv, *len, *prot, *qpop;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	base = evil_gpa(d.data + RDEV_ATOM_OFF);
	/* without atomics every atomic is an unsupported opcode */
	acc = d.atomics ? S_REM_ACC : S_LOC_QP_OP;
	inv = d.atomics ? S_REM_INV : S_LOC_QP_OP;
	len = d.atomics ? S_LOC_LEN : S_LOC_QP_OP;
	prot = d.atomics ? S_LOC_PROT : S_LOC_QP_OP;
	qpop = S_LOC_QP_OP;
	evil_say("atomic_cap %u", d.dev.atomic_cap);
	for (uint8_t op = VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP; op <= VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
	     op++) {
		const uint32_t keys[] = { 0, 0xffffffff, d.data_rkey ^ 0x100, d.data_rkey ^ 1,
					  d.data_lkey == d.data_rkey ? 0x12345678 : d.data_lkey };
		const uint64_t vas[] = { 0, 8, 0xfffffffffffffff8ull,
					 evil_gpa(d.data) + RDEV_DATA_SIZE,
					 evil_gpa(d.data) - 8, evil_gpa(d.ctrlbuf) };
		const uint64_t mis[] = { base + 1, base + 4, base + 7,
					 evil_gpa(d.data) + RDEV_DATA_SIZE - 4 };

		for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			atomic_wr(&d, &wr, sge, op, base, keys[i]);
			expect_wr(&d, &t, &wr, sge, 1, acc, "atomic with a bad rkey");
		}
		for (unsigned i = 0; i < sizeof(vas) / sizeof(vas[0]); i++) {
			atomic_wr(&d, &wr, sge, op, vas[i], d.data_rkey);
			expect_wr(&d, &t, &wr, sge, 1, acc, "atomic outside the MR");
		}
		for (unsigned i = 0; i < sizeof(mis) / sizeof(mis[0]); i++) {
			atomic_wr(&d, &wr, sge, op, mis[i], d.data_rkey);
			/* the last one also crosses the MR's end: either answer */
			if (i == 3 && d.atomics) {
				static const uint8_t either[] = { VIRTIO_IB_WC_REM_INV_REQ_ERR,
								  VIRTIO_IB_WC_REM_ACCESS_ERR, 0xff };
				expect_wr(&d, &t, &wr, sge, 1, either, "atomic misaligned at the end");
			} else {
				expect_wr(&d, &t, &wr, sge, 1, inv, "misaligned atomic");
			}
		}
		/* result buffer */
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		wr.num_sge = 0;
		expect_wr(&d, &t, &wr, sge, 0, len, "atomic without a result buffer");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		sge[0].length = htole32(4);
		expect_wr(&d, &t, &wr, sge, 1, len, "atomic result buffer of 4 bytes");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		sge[1] = sge[0];
		wr.num_sge = htole32(2);
		expect_wr(&d, &t, &wr, sge, 2, d.atomics ? S_LEN_OR_OP : qpop,
			  "atomic with two result SGEs");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		sge[0].lkey = htole32(0xdeadbe00);
		expect_wr(&d, &t, &wr, sge, 1, prot, "atomic result with a bad lkey");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		sge[0].addr = htole64(evil_gpa(d.data) + RDEV_DATA_SIZE - 4);
		expect_wr(&d, &t, &wr, sge, 1, prot, "atomic result crossing the MR's end");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		wr.send_flags = VIRTIO_IB_SEND_INLINE;
		wr.inline_len = htole16(8);
		expect_wr(&d, &t, &wr, sge, 0, qpop, "inline atomic");
		atomic_wr(&d, &wr, sge, op, base, d.data_rkey);
		wr.num_sge = htole32(0xffffffff);
		expect_wr(&d, &t, &wr, sge, 1, S_LEN_OR_OP, "atomic with num_sge 0xffffffff");
	}
	/* a correct one after all that (when offered): FAA 5 on 1000, CAS */
	if (d.atomics) {
		uint64_t v = htole64(1000), got;

		memcpy(d.data + RDEV_ATOM_OFF, &v, 8);
		atomic_wr(&d, &wr, sge, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, base, d.data_rkey);
		wr.atomic.compare_add = htole64(5);
		expect_wr(&d, &t, &wr, sge, 1, S_OK, "FETCH_AND_ADD");
		memcpy(&got, d.data + RDEV_SRC_OFF, 8);
		memcpy(&v, d.data + RDEV_ATOM_OFF, 8);
		if (le64toh(got) != 1000 || le64toh(v) != 1005)
			t_fail(&t, "FETCH_AND_ADD: fetched %llu (1000), now %llu (1005)",
			       (unsigned long long)le64toh(got), (unsigned long long)le64toh(v));
		atomic_wr(&d, &wr, sge, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, base, d.data_rkey);
		wr.atomic.compare_add = htole64(1005);
		wr.atomic.swap = htole64(0xfeedfacecafebeefull);
		expect_wr(&d, &t, &wr, sge, 1, S_OK, "CMP_AND_SWP");
		memcpy(&v, d.data + RDEV_ATOM_OFF, 8);
		if (le64toh(v) != 0xfeedfacecafebeefull)
			t_fail(&t, "CMP_AND_SWP did not swap: %llx", (unsigned long long)le64toh(v));
	}
	return finish(&d, &t, "atomic work requests with bad fields");
}

static void bind_wr(struct virtio_rdma_sq_req_ext *wr, uint64_t addr, uint64_t len,
		    uint32_t mr_lkey, uint32_t rkey, uint32_t access)
{
	memset(wr, 0, sizeof(*wr));
	wr->opcode = VIRTIO_IB_WR_BIND_MW;
	wr->bind_mw.addr = htole64(addr);
	wr->bind_mw.length = htole64(len);
	wr->bind_mw.mr_lkey = htole32(mr_lkey);
	wr->bind_mw.rkey = htole32(rkey);
	wr->bind_mw.access = htole32(access);
}

static int run_wr_bind(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge sge = { 0, 0, 0 };
	struct virtio_rdma_cmd_alloc_mw c;
	struct virtio_rdma_ack_alloc_mw am = { 0, 0 };
	const uint32_t rw = VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_WRITE;
	uint64_t base;
	uint32_t key;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	base = evil_gpa(d.data);
	if (!d.mw) {
		bind_wr(&wr, base, 4096, d.data_lkey, 0x100, rw);
		expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "BIND_MW without windows");
		return finish(&d, &t, "BIND_MW without the capability");
	}
	c.pdn = htole32(d.pdn);
	c.mw_type = htole32(VIRTIO_IB_MW_TYPE_1);
	if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_ALLOC_MW, &c, sizeof(c), &am,
		       sizeof(am), "ALLOC_MW type 1") != 0)
		return finish(&d, &t, "BIND_MW");
	key = (le32toh(am.rkey) & ~0xffu) | ((le32toh(am.rkey) + 1) & 0xff);
	{
		const uint32_t keys[] = { 0, 0xffffffff, d.data_rkey, d.data_lkey,
					  key ^ 0x100, key ^ 0x80000000 };

		for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			bind_wr(&wr, base, 4096, d.data_lkey, keys[i], rw);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND, "BIND_MW naming no window of ours");
		}
	}
	{
		const uint32_t lkeys[] = { 0, 0xffffffff, d.data_lkey ^ 0x100, key };

		for (unsigned i = 0; i < sizeof(lkeys) / sizeof(lkeys[0]); i++) {
			bind_wr(&wr, base, 4096, lkeys[i], key, rw);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND, "BIND_MW on no MR of ours");
		}
	}
	{
		const uint64_t r[][2] = {
			{ base + RDEV_DATA_SIZE - 4096, 8192 }, { base - 4096, 8192 },
			{ base + RDEV_DATA_SIZE, 1 }, { 0xfffffffffffff000ull, 0x2000 },
			{ base, 0xffffffffffffffffull }, { base + 4096, 0x8000000000000000ull },
			{ 0, 4096 }, { evil_gpa(d.ctrlbuf), 4096 },
		};
		for (unsigned i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
			bind_wr(&wr, r[i][0], r[i][1], d.data_lkey, key, rw);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND, "BIND_MW outside the MR");
		}
	}
	{
		const uint32_t acc[] = { VIRTIO_IB_ACCESS_LOCAL_WRITE, VIRTIO_IB_ACCESS_MW_BIND,
					 rw | (1u << 5), 0xffffffff,
					 d.atomics ? 1u << 30 : VIRTIO_IB_ACCESS_REMOTE_ATOMIC };

		for (unsigned i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
			bind_wr(&wr, base, 4096, d.data_lkey, key, acc[i]);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND,
				  "BIND_MW with rights a window cannot have");
		}
	}
	bind_wr(&wr, base, 4096, d.data_lkey, key, rw);
	wr.num_sge = htole32(1);
	sge.addr = htole64(base);
	sge.length = htole32(8);
	sge.lkey = htole32(d.data_lkey);
	expect_wr(&d, &t, &wr, &sge, 1, S_LOC_QP_OP, "BIND_MW with an SGE");
	bind_wr(&wr, base, 4096, d.data_lkey, key, rw);
	wr.send_flags = VIRTIO_IB_SEND_INLINE;
	wr.inline_len = htole16(8);
	expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "inline BIND_MW");
	/* a correct bind: the window works, its MR cannot be deregistered */
	bind_wr(&wr, base + 4096, 4096, d.data_lkey, key, rw);
	expect_wr(&d, &t, &wr, NULL, 0, S_OK, "BIND_MW type 1");
	{
		struct virtio_rdma_cmd_dereg_mr dr = { htole32(d.data_mrn) };
		struct virtio_rdma_sq_req_ext w;
		struct virtio_rdma_sge s;

		expect_cmd(&d, &t, VIRTIO_NET_ERR, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dr, sizeof(dr),
			   NULL, 0, "DEREG_MR with a window bound");
		/* a WRITE through the window just past its end */
		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_RDMA_WRITE;
		w.rdma.remote_addr = htole64(base + 8192 - 8);
		w.rdma.rkey = htole32(key);
		w.num_sge = htole32(1);
		s.addr = htole64(base + RDEV_SRC_OFF);
		s.length = htole32(16);
		s.lkey = htole32(d.data_lkey);
		expect_wr(&d, &t, &w, &s, 1, S_REM_ACC, "WRITE crossing the window's end");
		w.rdma.remote_addr = htole64(base + 4096);
		expect_wr(&d, &t, &w, &s, 1, S_OK, "WRITE inside the window");
		/* LOCAL_INV of a type 1 window is not allowed */
		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_LOCAL_INV;
		w.invalidate_rkey = htole32(key);
		expect_wr(&d, &t, &w, NULL, 0, d.memmgt ? S_LOC_PROT : S_LOC_QP_OP,
			  "LOCAL_INV of a type 1 window");
	}
	/* unbind (type 1, length 0), then DEALLOC_MW */
	bind_wr(&wr, 0, 0, 0, (key & ~0xffu) | ((key + 1) & 0xff), 0);
	expect_wr(&d, &t, &wr, NULL, 0, S_OK, "BIND_MW type 1 of length 0 (unbind)");
	{
		struct virtio_rdma_cmd_dealloc_mw dm = { am.mwn };

		expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, &dm, sizeof(dm),
			   NULL, 0, "DEALLOC_MW");
	}
	/* a type 2 window: bound twice without invalidation */
	if (d.mw2) {
		c.mw_type = htole32(VIRTIO_IB_MW_TYPE_2);
		if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_ALLOC_MW, &c, sizeof(c),
			       &am, sizeof(am), "ALLOC_MW type 2") == 0) {
			struct virtio_rdma_cmd_dealloc_mw dm = { am.mwn };

			key = (le32toh(am.rkey) & ~0xffu) | ((le32toh(am.rkey) + 1) & 0xff);
			bind_wr(&wr, base, 4096, d.data_lkey, key, rw);
			expect_wr(&d, &t, &wr, NULL, 0, S_OK, "BIND_MW type 2");
			bind_wr(&wr, base, 4096, d.data_lkey, (key & ~0xffu) | ((key + 1) & 0xff), rw);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND, "BIND_MW of a bound type 2 window");
			bind_wr(&wr, 0, 0, 0, (key & ~0xffu) | ((key + 2) & 0xff), 0);
			expect_wr(&d, &t, &wr, NULL, 0, S_BIND, "type 2 unbind by length 0");
			expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, &dm,
				   sizeof(dm), NULL, 0, "DEALLOC_MW of a bound type 2 window");
		}
	}
	return finish(&d, &t, "BIND_MW with bad keys, ranges and rights");
}

static void reg_wr(struct virtio_rdma_sq_req_ext *wr, uint64_t iova, uint64_t len, uint64_t pl,
		   uint32_t key, uint32_t access)
{
	memset(wr, 0, sizeof(*wr));
	wr->opcode = VIRTIO_IB_WR_REG_MR;
	wr->reg.iova = htole64(iova);
	wr->reg.length = htole64(len);
	wr->reg.page_list = htole64(pl);
	wr->reg.key = htole32(key);
	wr->reg.access = htole32(access);
}

static int run_wr_reg(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_cmd_alloc_mr c;
	struct virtio_rdma_ack_alloc_mr am = { 0, 0, 0 };
	const uint32_t acc = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ;
	uint64_t *pl, plg, iova = 0x7f0000001000ull;
	uint32_t key;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	pl = (uint64_t *)d.scratch;
	plg = evil_gpa(d.scratch);
	for (unsigned i = 0; i < 8; i++)
		pl[i] = htole64(evil_gpa(d.data) + 4096ull * (8 + i));
	if (!d.memmgt) {
		reg_wr(&wr, iova, 4096, plg, 0x100, acc);
		expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "REG_MR without the capability");
		memset(&wr, 0, sizeof(wr));
		wr.opcode = VIRTIO_IB_WR_LOCAL_INV;
		wr.invalidate_rkey = htole32(d.data_rkey);
		expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "LOCAL_INV without the capability");
		return finish(&d, &t, "REG_MR / LOCAL_INV without the capability");
	}
	c.pdn = htole32(d.pdn);
	c.mr_type = htole32(VIRTIO_IB_MR_TYPE_MEM_REG);
	c.max_num_sg = htole32(4);
	c.reserved = 0;
	if (expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_ALLOC_MR, &c, sizeof(c), &am,
		       sizeof(am), "ALLOC_MR of 4 pages") != 0)
		return finish(&d, &t, "REG_MR");
	key = (le32toh(am.lkey) & ~0xffu) | ((le32toh(am.lkey) + 1) & 0xff);
	/* page lists: where the array is */
	{
		const uint64_t pls[] = { 0, 0x1000, plg + 4, plg + 1,
					 evil_gpa(d.arena) + d.arena_size - 8,
					 0xfffffffffffffff8ull, evil_gpa(d.arena) - 4096 };

		for (unsigned i = 0; i < sizeof(pls) / sizeof(pls[0]); i++) {
			reg_wr(&wr, iova, 8192, pls[i], key, acc);
			expect_wr(&d, &t, &wr, NULL, 0, S_LOC_PROT, "REG_MR page list out of place");
		}
	}
	/* page lists: what is in it */
	{
		const uint64_t bad[] = { 0, 0x1000, evil_gpa(d.data) + 1, evil_gpa(d.data) + 2048,
					 evil_gpa(d.arena) + d.arena_size,
					 evil_gpa(d.arena) - 4096, 0xfffffffffffff000ull,
					 0x8000000000000000ull };

		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			uint64_t *p2 = pl + 16;

			p2[0] = htole64(evil_gpa(d.data));
			p2[1] = htole64(bad[i]);
			reg_wr(&wr, iova, 8192, plg + 16 * 8, key, acc);
			expect_wr(&d, &t, &wr, NULL, 0, S_LOC_PROT,
				  "REG_MR page outside shared memory");
		}
	}
	/* ranges, keys, rights */
	{
		const struct {
			uint64_t iova, len;
			uint32_t key, acc;
			const char *what;
		} v[] = {
			{ iova, 5 * 4096, key, acc, "more pages than max_num_sg" },
			{ iova + 2048, 4 * 4096, key, acc, "4 pages + an offset: 5 pages" },
			{ iova, 1ull << 40, key, acc, "length 2^40" },
			{ iova, 0xffffffffffffffffull, key, acc, "length 2^64 - 1" },
			{ 0xfffffffffffff000ull, 0x2000, key, acc, "iova + length wraps" },
			{ iova, 4096, d.data_lkey, acc, "the key of a REG_USER_MR MR" },
			{ iova, 4096, key ^ 0x100, acc, "a key naming another object" },
			{ iova, 4096, 0, acc, "key 0" },
			{ iova, 4096, 0xffffffff, acc, "key 0xffffffff" },
			{ iova, 4096, key, VIRTIO_IB_ACCESS_REMOTE_WRITE,
			  "REMOTE_WRITE without LOCAL_WRITE" },
			{ iova, 4096, key, VIRTIO_IB_ACCESS_REMOTE_ATOMIC,
			  "REMOTE_ATOMIC without LOCAL_WRITE" },
			{ iova, 4096, key, 1u << 5, "unknown access bit" },
			{ iova, 4096, key, 0xffffffff, "every access bit" },
		};
		for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			reg_wr(&wr, v[i].iova, v[i].len, plg, v[i].key, v[i].acc);
			expect_wr(&d, &t, &wr, NULL, 0, S_LOC_PROT, v[i].what);
		}
	}
	reg_wr(&wr, iova, 4096, plg, key, acc);
	wr.num_sge = htole32(1);
	{
		struct virtio_rdma_sge s = { htole64(evil_gpa(d.data)), htole32(8),
					     htole32(d.data_lkey) };

		expect_wr(&d, &t, &wr, &s, 1, S_LOC_QP_OP, "REG_MR with an SGE");
	}
	reg_wr(&wr, iova, 4096, plg, key, acc);
	wr.send_flags = VIRTIO_IB_SEND_INLINE;
	expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "inline REG_MR");
	/* a correct registration: the bytes land where the page list says */
	reg_wr(&wr, iova, 2 * 4096, plg, key, acc);
	expect_wr(&d, &t, &wr, NULL, 0, S_OK, "REG_MR of 2 pages");
	{
		struct virtio_rdma_sq_req_ext w;
		struct virtio_rdma_sge s;
		uint8_t *src = d.data + RDEV_SRC_OFF, *pg1 = d.data + 4096 * 9;

		for (unsigned i = 0; i < 64; i++)
			src[i] = (uint8_t)(0xa0 + i);
		memset(pg1, 0, 64);
		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_RDMA_WRITE;
		w.rdma.remote_addr = htole64(iova + 4096);
		w.rdma.rkey = htole32(key);
		w.num_sge = htole32(1);
		s.addr = htole64(evil_gpa(src));
		s.length = htole32(64);
		s.lkey = htole32(d.data_lkey);
		expect_wr(&d, &t, &w, &s, 1, S_OK, "WRITE through the fast-registered MR");
		if (memcmp(src, pg1, 64))
			t_fail(&t, "WRITE through the fast-registered MR: bytes not in its page 1");
		w.rdma.remote_addr = htole64(iova + 2 * 4096 - 8);
		expect_wr(&d, &t, &w, &s, 1, S_REM_ACC, "WRITE past the fast-registered MR");
		reg_wr(&wr, iova, 4096, plg, (key & ~0xffu) | ((key + 1) & 0xff), acc);
		expect_wr(&d, &t, &wr, NULL, 0, S_LOC_PROT, "REG_MR of a VALID MR");
		/* LOCAL_INV: keys that cannot be invalidated, then the right one */
		{
			const uint32_t bad[] = { d.data_rkey, d.data_lkey, 0, 0xffffffff, key ^ 1,
						 key ^ 0x100 };

			for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
				memset(&w, 0, sizeof(w));
				w.opcode = VIRTIO_IB_WR_LOCAL_INV;
				w.invalidate_rkey = htole32(bad[i]);
				expect_wr(&d, &t, &w, NULL, 0, S_LOC_PROT, "LOCAL_INV of a bad key");
			}
			memset(&w, 0, sizeof(w));
			w.opcode = VIRTIO_IB_WR_LOCAL_INV;
			w.invalidate_rkey = htole32(key);
			w.num_sge = htole32(1);
			expect_wr(&d, &t, &w, &s, 1, S_LOC_QP_OP, "LOCAL_INV with an SGE");
			w.num_sge = 0;
			expect_wr(&d, &t, &w, NULL, 0, S_OK, "LOCAL_INV");
		}
		memset(&w, 0, sizeof(w));
		w.opcode = VIRTIO_IB_WR_RDMA_WRITE;
		w.rdma.remote_addr = htole64(iova);
		w.rdma.rkey = htole32(key);
		w.num_sge = htole32(1);
		expect_wr(&d, &t, &w, &s, 1, S_REM_ACC, "WRITE after LOCAL_INV");
	}
	{
		struct virtio_rdma_cmd_dereg_mr dr = { am.mrn };

		expect_cmd(&d, &t, VIRTIO_NET_OK, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dr, sizeof(dr), NULL,
			   0, "DEREG_MR of the ALLOC_MR MR");
	}
	return finish(&d, &t, "REG_MR and LOCAL_INV with bad keys and page lists");
}

/* SEND_WITH_INV of keys the receiver cannot invalidate; reserved opcodes. */
static int run_wr_send_inv(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge s;
	static const uint8_t either[] = { VIRTIO_IB_WC_LOC_QP_OP_ERR, VIRTIO_IB_WC_REM_INV_REQ_ERR,
					  0xff };

	(void)a;
	if (rdev_open(&d, o, 0) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	{
		const uint32_t keys[] = { d.data_rkey, 0, 0xffffffff, d.data_rkey ^ 0x100 };

		for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			memset(&wr, 0, sizeof(wr));
			wr.opcode = VIRTIO_IB_WR_SEND_WITH_INV;
			wr.invalidate_rkey = htole32(keys[i]);
			wr.num_sge = htole32(1);
			s.addr = htole64(evil_gpa(d.data));
			s.length = htole32(64);
			s.lkey = htole32(d.data_lkey);
			expect_wr(&d, &t, &wr, &s, 1, d.memmgt ? S_REM_INV : either,
				  "SEND_WITH_INV of a key that cannot be invalidated");
			/* B's receives were flushed by its error: new ones */
			rdev_post_recvs(&d, &d.rq[1], 4);
		}
	}
	{
		const uint8_t ops[] = { 10, 11, 12, 0x1f, 0x21, 0x7f, 0x80, 0xff };

		for (unsigned i = 0; i < sizeof(ops); i++) {
			memset(&wr, 0, sizeof(wr));
			wr.opcode = ops[i];
			wr.rdma.remote_addr = htole64(evil_gpa(d.data));
			wr.rdma.rkey = htole32(d.data_rkey);
			expect_wr(&d, &t, &wr, NULL, 0, S_LOC_QP_OP, "reserved opcode");
		}
	}
	return finish(&d, &t, "SEND_WITH_INV of bad keys, reserved opcodes");
}

/* ---- SRQ and event rings ----------------------------------------------------------- */

enum bad_kind {
	B_HEAD_OOB, B_LOOP_SELF, B_LOOP_2, B_NEXT_OOB, B_ADDR_OUTSIDE, B_ADDR_STRADDLE,
	B_ADDR_WRAP, B_IND_OUTSIDE, B_IND_LOOP, B_AVAIL_JUMP,
};

static void desc_set(struct vring_desc *dd, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	dd->addr = htole64(addr);
	dd->len = htole32(len);
	dd->flags = htole16(flags);
	dd->next = htole16(next);
}

/* Publish one bad chain on r (buffers device-writable if w). */
static void post_bad(struct evil_rdev *d, struct evil_rring *r, enum bad_kind k, bool w,
		     uint64_t buf, uint32_t blen)
{
	struct vq_drv *vq = &r->vq;
	struct vring_desc *desc = vq->desc, *ind = (struct vring_desc *)d->ind;
	uint16_t num = vq->num, head = 0, fw = w ? VRING_DESC_F_WRITE : 0;
	uint32_t advance = 1;

	switch (k) {
	case B_HEAD_OOB:
		head = num;
		break;
	case B_LOOP_SELF:
		desc_set(&desc[0], buf, blen, fw | VRING_DESC_F_NEXT, 0);
		break;
	case B_LOOP_2:
		desc_set(&desc[0], buf, blen, fw | VRING_DESC_F_NEXT, 1);
		desc_set(&desc[1], buf, blen, fw | VRING_DESC_F_NEXT, 0);
		break;
	case B_NEXT_OOB:
		desc_set(&desc[0], buf, blen, fw | VRING_DESC_F_NEXT, (uint16_t)(num + 3));
		break;
	case B_ADDR_OUTSIDE:
		desc_set(&desc[0], 0x1000, blen, fw, 0);
		break;
	case B_ADDR_STRADDLE:
		desc_set(&desc[0], evil_gpa(d->arena) + d->arena_size - 8, blen < 64 ? 64 : blen,
			 fw, 0);
		break;
	case B_ADDR_WRAP:
		desc_set(&desc[0], 0xfffffffffffff000ull, 0x2000, fw, 0);
		break;
	case B_IND_OUTSIDE:
		desc_set(&desc[0], 0x1000, 32, VRING_DESC_F_INDIRECT, 0);
		break;
	case B_IND_LOOP:
		desc_set(&ind[0], buf, blen, fw | VRING_DESC_F_NEXT, 1);
		desc_set(&ind[1], buf, blen, fw | VRING_DESC_F_NEXT, 0);
		desc_set(&desc[0], evil_gpa(ind), 32, VRING_DESC_F_INDIRECT, 0);
		break;
	case B_AVAIL_JUMP:
		desc_set(&desc[0], buf, blen, fw, 0);
		advance = num + 1u;
		break;
	}
	vq->avail->ring[vq->avail_idx & (num - 1)] = htole16(head);
	vq->avail_idx = (uint16_t)(vq->avail_idx + advance);
	vq_drv_kick_prepare(vq);
	rdev_kick(r);
}

/* A SEND of 64 bytes from A to B (not waited for). */
static void send_a_to_b(struct evil_rdev *d, uint64_t id)
{
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge s;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = htole64(id);
	wr.opcode = VIRTIO_IB_WR_SEND;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.num_sge = htole32(1);
	s.addr = htole64(evil_gpa(d->data + RDEV_SRC_OFF));
	s.length = htole32(64);
	s.lkey = htole32(d->data_lkey);
	rdev_post_send(d, 0, &wr, &s, 1);
}

/* An RDMA WRITE from A to B with a bad rkey (not waited for): B gets an
 * access error, hence an asynchronous event. */
static void access_error(struct evil_rdev *d, uint64_t id)
{
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge s;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = htole64(id);
	wr.opcode = VIRTIO_IB_WR_RDMA_WRITE;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.rdma.remote_addr = htole64(evil_gpa(d->data + RDEV_DST_OFF));
	wr.rdma.rkey = htole32(d->data_rkey ^ 0x5500);
	wr.num_sge = htole32(1);
	s.addr = htole64(evil_gpa(d->data + RDEV_SRC_OFF));
	s.length = htole32(64);
	s.lkey = htole32(d->data_lkey);
	rdev_post_send(d, 0, &wr, &s, 1);
}

#define RING_SRQ 0
#define RING_EVQ 1
#define RING_CQ 2
static const char *const ring_kind_names[] = { "SRQ", "event", "completion" };

static const char *const bad_names[] = {
	"head_oob", "loop_self", "loop_2", "next_oob", "addr_outside", "addr_straddle",
	"addr_wrap", "indirect_outside", "indirect_loop", "avail_jump",
};

/* A bad chain on the SRQ ring or the event ring, then what makes the device
 * take it. */
static int run_ext_ring(const struct evil_opts *o, const struct evil_attack *a)
{
	int ring = a->arg / 100;
	enum bad_kind k = (enum bad_kind)(a->arg % 100);
	unsigned flags = ring == RING_SRQ ? RDEV_F_SRQ | RDEV_F_NO_RECV_POST :
			 ring == RING_EVQ ? RDEV_F_NO_EVQ_POST : RDEV_F_NO_CQ_POST;
	struct evil_rdev d;
	struct evil_rring *r;
	struct virtio_rdma_cq_req_ext wc;
	uint16_t used_before;
	bool err_fired, needs_reset, untouched, srq_err = false, reset_ok;
	uint8_t st = 0;
	int rc;

	if (rdev_open(&d, o, flags) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	if (ring == RING_SRQ && !d.has_srq) {
		evil_say("setup: the device reports no SRQ");
		rdev_close(&d);
		return EVIL_SETUP;
	}
	r = ring == RING_SRQ ? &d.srq : ring == RING_EVQ ? &d.eventq : &d.cq;
	if (ring != RING_CQ && (rc = rdev_probe(&d, 1)) < 0) {
		evil_say("setup: traffic before the attack: %s", strerror(-rc));
		rdev_close(&d);
		return EVIL_SETUP;
	}
	used_before = r->vq.used->idx;
	if (ring == RING_CQ) {
		/* completions wait in the CQ's backlog (no buffer), then the
		 * bad chain is the first buffer the device finds */
		struct virtio_rdma_cmd_query_qp q = { htole32(d.qpn[0]), 0 };
		struct virtio_rdma_ack_query_qp qa;

		access_error(&d, 0xa1);
		/* the error completion exists once A is in ERR */
		for (int i = 0; i < o->timeout_ms / 10; i++) {
			if (rdev_cmd(&d, VIRTIO_NET_CTRL_ROCE_QUERY_QP, &q, sizeof(q), &qa,
				     sizeof(qa)) != VIRTIO_NET_OK || qa.qp_state == VIRTIO_IB_QPS_ERR)
				break;
			usleep(10000);
		}
		post_bad(&d, r, k, true, evil_gpa(d.cqbufs), 64);
	} else {
		post_bad(&d, r, k, ring == RING_EVQ, evil_gpa(d.rqbufs),
			 ring == RING_SRQ ? 40 : 16);
		if (ring == RING_SRQ)
			send_a_to_b(&d, 0xa1);
		else
			access_error(&d, 0xa1);
		/* the requester's WR ends one way or another (RNR, access error) */
		(void)rdev_wait_wc(&d, 0xa1, &wc);
	}
	/* the device reports the ring: its error eventfd or NEEDS_RESET */
	err_fired = needs_reset = false;
	rc = 0;
	for (int waited = 0; waited < o->timeout_ms && !err_fired && !needs_reset && rc == 0;
	     waited += 50) {
		err_fired = rdev_wait_err(r, 50);
		rc = vhost_client_get_status(&d.vc, &st);
		needs_reset = rc == 0 && (st & VIRTIO_CONFIG_S_NEEDS_RESET);
	}
	if (err_fired && rc == 0 && !needs_reset) {
		rc = vhost_client_get_status(&d.vc, &st);
		needs_reset = rc == 0 && (st & VIRTIO_CONFIG_S_NEEDS_RESET);
	}
	if (ring == RING_SRQ) {
		struct virtio_rdma_event ev;
		uint32_t ulen;

		while (rdev_next_event(&d, &ev, &ulen, 0) >= 0) {
			evil_say("event type %u id %#x", le32toh(ev.type), le32toh(ev.id));
			if (le32toh(ev.type) == VIRTIO_IB_EVENT_SRQ_ERR && le32toh(ev.id) == d.srqn)
				srq_err = true;
		}
	}
	evil_say("err_eventfd %d", err_fired);
	evil_say("status 0x%02x needs_reset %d", st, needs_reset);
	if (ring == RING_SRQ)
		evil_say("srq_err_event %d", srq_err);
	rdev_kick(r);
	untouched = rc == 0 && vhost_client_get_status(&d.vc, &st) == 0 &&
		    r->vq.used->idx == used_before;
	evil_say("ring_untouched %d", untouched);
	evil_say("outcome %s", err_fired || needs_reset || srq_err ? "broken" : "not-broken");
	rc = rdev_reset_up(&d, flags & ~(RDEV_F_NO_RECV_POST | RDEV_F_NO_EVQ_POST |
					 RDEV_F_NO_CQ_POST));
	if (!rc)
		rc = rdev_probe(&d, 2);
	reset_ok = rc == 0;
	evil_say("reset_ok %d", reset_ok);
	rdev_close(&d);
	return evil_verdict((err_fired || needs_reset || srq_err) && untouched && reset_ok,
			    "%s ring after %s: err eventfd %d, NEEDS_RESET %d, SRQ_ERR %d, "
			    "untouched %d, works after reset %d",
			    ring_kind_names[ring], bad_names[k], err_fired, needs_reset,
			    srq_err, untouched, reset_ok);
}

/* Without VIRTIO_NET_F_ROCE_EXT the event and SRQ rings are not the
 * device's: garbage published there is never looked at. */
static int run_rings_no_feature(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	uint8_t st = 0;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_EXT | RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	/* the ring indexes the extension would use (1 SRQ assumed) */
	if (rdev_ring_setup(&d, &d.eventq, rdev_vq_eventq(&d)) < 0 ||
	    rdev_ring_setup(&d, &d.srq, rdev_vq_srq(&d, 0)) < 0) {
		evil_say("(ring setup of the extension's indexes refused: fine)");
	} else {
		post_bad(&d, &d.eventq, B_HEAD_OOB, true, evil_gpa(d.rqbufs), 16);
		post_bad(&d, &d.srq, B_LOOP_SELF, false, evil_gpa(d.rqbufs), 40);
		access_error(&d, 0xb1);   /* an error that would raise an event */
		{
			struct virtio_rdma_cq_req_ext wc;

			t.checks++;
			if (rdev_wait_wc(&d, 0xb1, &wc) < 0 || wc.status != VIRTIO_IB_WC_REM_ACCESS_ERR)
				t_fail(&t, "WRITE with a bad rkey: status %u", wc.status);
		}
		if (rdev_connect(&d, 0) < 0 || rdev_connect(&d, 1) < 0)
			t_fail(&t, "the QPs cannot be brought back to RTS");
		drain_cq(&d);
		t.checks++;
		if (d.eventq.vq.used->idx != 0 || d.srq.vq.used->idx != 0)
			t_fail(&t, "the device used the event ring (%u) or the SRQ ring (%u) without "
			       "ROCE_EXT", d.eventq.vq.used->idx, d.srq.vq.used->idx);
		t.checks++;
		if (rdev_wait_err(&d.eventq, 0) || rdev_wait_err(&d.srq, 0))
			t_fail(&t, "an error was signalled on a ring the device does not have");
	}
	t.checks++;
	if (vhost_client_get_status(&d.vc, &st) < 0 || (st & VIRTIO_CONFIG_S_NEEDS_RESET))
		t_fail(&t, "status 0x%02x after garbage on rings beyond the device", st);
	return finish(&d, &t, "extension rings without VIRTIO_NET_F_ROCE_EXT");
}

/* Bad SRQ elements (each refused by the receive it was taken for, the ring
 * stays usable), then a good one. */
static int run_srq_elements(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_cq_req_ext wc;
	uint8_t *e;
	unsigned n = 0;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_SRQ | RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	if (!d.has_srq) {
		evil_say("setup: the device reports no SRQ");
		rdev_close(&d);
		return EVIL_SETUP;
	}
	for (int v = 0; v < 7; v++) {
		struct virtio_rdma_rq_req q;
		struct virtio_rdma_sge s[3];
		struct vq_buf b;
		uint32_t len = sizeof(q) + sizeof(s[0]);
		const char *what = "";
		static const uint8_t want_qp_op[] = { VIRTIO_IB_WC_LOC_QP_OP_ERR, 0xff };
		static const uint8_t want_prot[] = { VIRTIO_IB_WC_LOC_PROT_ERR, 0xff };
		const uint8_t *want = want_prot;
		bool match = false;

		e = d.rqbufs + (size_t)(n++ % RDEV_RQ_SLOTS) * 64;
		memset(&q, 0, sizeof(q));
		q.wr_id = htole64(0x6600 + (uint64_t)v);
		q.num_sge = htole32(1);
		for (int i = 0; i < 3; i++) {
			s[i].addr = htole64(evil_gpa(d.data + RDEV_RECV_OFF));
			s[i].length = htole32(4096);
			s[i].lkey = htole32(d.data_lkey);
		}
		switch (v) {
		case 0:
			q.num_sge = htole32(3);
			len = sizeof(q) + 3 * sizeof(s[0]);
			want = want_qp_op;
			what = "num_sge above the SRQ's max_sge";
			break;
		case 1:
			len = 16;
			want = want_qp_op;
			what = "element of 16 bytes";
			break;
		case 2:
			q.num_sge = htole32(2);
			want = want_qp_op;
			what = "num_sge 2 with one SGE readable";
			break;
		case 3:
			s[0].lkey = htole32(0xdead0000);
			what = "SGE with a bad lkey";
			break;
		case 4:
			s[0].addr = htole64(evil_gpa(d.data) + RDEV_DATA_SIZE - 16);
			what = "SGE past its MR";
			break;
		case 5:
			q.num_sge = htole32(0xffffffff);
			want = want_qp_op;
			what = "num_sge 0xffffffff";
			break;
		case 6:
			s[0].addr = htole64(0xfffffffffffff000ull);
			what = "SGE at the top of the address space";
			break;
		}
		memcpy(e, &q, sizeof(q));
		memcpy(e + sizeof(q), s, sizeof(s) < 40 ? sizeof(s) : 40);
		b.addr = evil_gpa(e);
		b.len = len;
		vq_drv_add(&d.srq.vq, &b, 1, NULL, 0, e);
		vq_drv_kick_prepare(&d.srq.vq);
		rdev_kick(&d.srq);
		send_a_to_b(&d, 0x6700 + (uint64_t)v);
		t.checks++;
		if (rdev_wait_wc(&d, 0x6600 + (uint64_t)v, &wc) < 0) {
			t_fail(&t, "SRQ element with %s: no receive completion", what);
		} else {
			for (const uint8_t *w = want; *w != 0xff; w++)
				match |= wc.status == *w;
			if (!match)
				t_fail(&t, "SRQ element with %s: receive status %u, expected %u", what,
				       wc.status, want[0]);
			if (le32toh(wc.qp_num) != d.qpn[1])
				t_fail(&t, "SRQ element with %s: completion for QP %#x, not B %#x", what,
				       le32toh(wc.qp_num), d.qpn[1]);
		}
		if (rdev_connect(&d, 0) < 0 || rdev_connect(&d, 1) < 0) {
			t_fail(&t, "the QPs cannot be brought back to RTS");
			break;
		}
		drain_cq(&d);
	}
	/* the SRQ still serves a good element */
	{
		static const uint8_t ok[] = { VIRTIO_IB_WC_SUCCESS, 0xff };
		uint8_t *src = d.data + RDEV_SRC_OFF, *dst = d.data + RDEV_RECV_OFF;

		for (unsigned i = 0; i < 64; i++)
			src[i] = (uint8_t)(i * 3 + 1);
		memset(dst, 0, 64);
		{
			struct virtio_rdma_rq_req q;
			struct virtio_rdma_sge s;
			struct vq_buf b;

			e = d.rqbufs + (size_t)(n++ % RDEV_RQ_SLOTS) * 64;
			memset(&q, 0, sizeof(q));
			q.wr_id = htole64(0x66ff);
			q.num_sge = htole32(1);
			s.addr = htole64(evil_gpa(dst));
			s.length = htole32(4096);
			s.lkey = htole32(d.data_lkey);
			memcpy(e, &q, sizeof(q));
			memcpy(e + sizeof(q), &s, sizeof(s));
			b.addr = evil_gpa(e);
			b.len = sizeof(q) + sizeof(s);
			vq_drv_add(&d.srq.vq, &b, 1, NULL, 0, e);
			vq_drv_kick_prepare(&d.srq.vq);
			rdev_kick(&d.srq);
		}
		send_a_to_b(&d, 0x67ff);
		t.checks++;
		if (rdev_wait_wc(&d, 0x66ff, &wc) < 0 || wc.status != ok[0] ||
		    le32toh(wc.byte_len) != 64 || memcmp(src, dst, 64))
			t_fail(&t, "a good SRQ element after the bad ones: status %u byte_len %u",
			       wc.status, le32toh(wc.byte_len));
	}
	return finish(&d, &t, "bad SRQ elements");
}

/* Event buffers shorter than an event, then the event arrives in the first
 * good buffer; events raised without buffers wait, merged, never lost. */
static int run_evq_short(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	struct tally t = { 0 };
	struct virtio_rdma_event ev;
	struct virtio_rdma_cq_req_ext wc;
	uint32_t ulen;
	const uint32_t lens[] = { 1, 8, 15 };
	bool got = false;
	int i;

	(void)a;
	if (rdev_open(&d, o, RDEV_F_NO_EVQ_POST) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	/* three access errors with no event buffer at all: one pending event */
	for (int k = 0; k < 3; k++) {
		access_error(&d, 0xe0 + (uint64_t)k);
		t.checks++;
		if (rdev_wait_wc(&d, 0xe0 + (uint64_t)k, &wc) < 0 ||
		    wc.status != VIRTIO_IB_WC_REM_ACCESS_ERR)
			t_fail(&t, "WRITE with a bad rkey: status %u, expected REM_ACCESS_ERR",
			       wc.status);
		if (rdev_connect(&d, 0) < 0 || rdev_connect(&d, 1) < 0)
			t_fail(&t, "the QPs cannot be brought back to RTS");
		drain_cq(&d);
	}
	for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		rdev_ev_post(&d, k, lens[k]);
	for (unsigned k = 3; k < 8; k++)
		rdev_ev_post(&d, k, 16);
	vq_drv_kick_prepare(&d.eventq.vq);
	rdev_kick(&d.eventq);
	t.checks++;
	for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		i = rdev_next_event(&d, &ev, &ulen, o->timeout_ms);
		if (i < 0) {
			t_fail(&t, "short event buffer %u (%u bytes) not given back", k, lens[k]);
			break;
		}
		if (i != (int)k || ulen != 0)
			t_fail(&t, "event buffer %d (%u bytes) given back with used length %u "
			       "(expected buffer %u, length 0)", i, lens[i < 3 && i >= 0 ? i : 0],
			       ulen, k);
	}
	/* the pending event (merged: the same QP, the same type) */
	while ((i = rdev_next_event(&d, &ev, &ulen, o->timeout_ms / 4)) >= 0) {
		evil_say("event type %u id %#x len %u", le32toh(ev.type), le32toh(ev.id), ulen);
		if (ulen == 16 && le32toh(ev.type) == VIRTIO_IB_EVENT_QP_ACCESS_ERR &&
		    le32toh(ev.id) == d.qpn[1]) {
			if (got)
				t_fail(&t, "QP_ACCESS_ERR of QP B delivered twice (not merged)");
			got = true;
		}
	}
	if (!got)
		t_fail(&t, "the QP_ACCESS_ERR event raised without buffers was lost");
	return finish(&d, &t, "short event buffers, events without buffers");
}

/* ---- the table ------------------------------------------------------------------- */

#define XRING(r, k, name, what) \
	{ "ext_" #r "_" name, EVIL_SURVIVE, #r " ring: " what, run_ext_ring, (r##_N) * 100 + (k) }
#define srq_N RING_SRQ
#define evq_N RING_EVQ
#define cq_N RING_CQ

/* ---- two contexts of one device ----------------------------------------------- */

/* A second connection to the same device (another context) names the first
 * one's QP, CQ, MR and PD in commands (destroy, query, modify, a QP on its
 * CQs or in its PD, resize) and its lkey and rkey in work requests:
 * every command is refused, every request completes in error, and the
 * first context's traffic goes on. */
static int run_ctx_foreign(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev v, d;
	struct tally t = { 0 };
	struct virtio_rdma_sq_req_ext wr;
	struct virtio_rdma_sge sge;
	uint8_t ack[256];
	int rc;

	(void)a;
	if (rdev_open(&v, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&v);
		return EVIL_SETUP;
	}
	if (rdev_open(&d, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&d);
		rdev_close(&v);
		return EVIL_SETUP;
	}
	evil_say("victim qpn 0x%x cqn %u pdn %u mrn %u; attacker qpn 0x%x", v.qpn[0], v.cqn,
		 v.pdn, v.data_mrn, d.qpn[0]);
	{
		struct virtio_rdma_cmd_query_qp q = { .qpn = htole32(v.qpn[0]),
						      .attr_mask = htole32(1) };
		struct virtio_rdma_cmd_destroy_qp dq = { .qpn = htole32(v.qpn[0]) };
		struct virtio_rdma_cmd_dereg_mr dm = { .mrn = htole32(v.data_mrn) };
		struct virtio_rdma_cmd_destroy_cq dc = { .cqn = htole32(v.cqn) };
		struct virtio_rdma_cmd_destroy_pd dp = { .pdn = htole32(v.pdn) };
		struct virtio_rdma_cmd_get_dma_mr gm = { .pdn = htole32(v.pdn),
							 .access_flags = htole32(1) };
		struct virtio_rdma_cmd_modify_qp m;

		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_QUERY_QP, q, "QUERY_QP of the other context's QP");
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, dq, "DESTROY_QP of its QP");
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DEREG_MR, dm, "DEREG_MR of its MR");
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, dc, "DESTROY_CQ of its CQ");
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_DESTROY_PD, dp, "DESTROY_PD of its PD");
		BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, gm, "GET_DMA_MR in its PD");
		{
			/* its CQs: a QP of ours completing on them, resizing them */
			struct virtio_rdma_cmd_create_qp_ext c;
			struct virtio_rdma_cmd_resize_cq rc_ = { htole32(v.cqn), htole32(8) };

			memset(&c, 0, sizeof(c));
			c.pdn = htole32(d.pdn);
			c.qp_type = VIRTIO_IB_QPT_RC;
			c.send_cqn = htole32(v.cqn);
			c.recv_cqn = htole32(d.cqn);
			c.cap.max_send_wr = htole32(4);
			c.cap.max_recv_wr = htole32(4);
			c.cap.max_send_sge = htole32(1);
			c.cap.max_recv_sge = htole32(1);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_CREATE_QP, c, "CREATE_QP on its send CQ");
			c.send_cqn = htole32(d.cqn);
			c.recv_cqn = htole32(v.cqn);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_CREATE_QP, c, "CREATE_QP on its receive CQ");
			c.recv_cqn = htole32(d.cqn);
			c.pdn = htole32(v.pdn);
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_CREATE_QP, c, "CREATE_QP in its PD");
			BAD(&d, &t, VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, rc_, "RESIZE_CQ of its CQ");
		}
		memset(&m, 0, sizeof(m));
		m.qp_state = VIRTIO_IB_QPS_ERR;
		t.checks++;
		rc = rdev_modify(&d, v.qpn[0], VIRTIO_IB_QP_STATE, &m);
		if (rc != VIRTIO_NET_ERR)
			t_fail(&t, "MODIFY_QP of the other context's QP to ERR: %s",
			       rc < 0 ? strerror(-rc) : "OK");
	}
	/* its lkey for our SGE (its memory, not in our table either) */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = VIRTIO_IB_WR_RDMA_WRITE;
	wr.rdma.remote_addr = htole64(evil_gpa(d.data + RDEV_DST_OFF));
	wr.rdma.rkey = htole32(d.data_rkey);
	wr.num_sge = htole32(1);
	sge.addr = htole64(evil_gpa(v.data + RDEV_SRC_OFF));
	sge.length = htole32(64);
	sge.lkey = htole32(v.data_lkey);
	expect_wr(&d, &t, &wr, &sge, 1, S_LOC_PROT, "WRITE from the other context's lkey");
	/* its lkey on our own buffer */
	sge.addr = htole64(evil_gpa(d.data + RDEV_SRC_OFF));
	expect_wr(&d, &t, &wr, &sge, 1, S_LOC_PROT, "WRITE with the other context's lkey");
	/* its rkey as the target of our QP's WRITE (to our other QP) */
	sge.lkey = htole32(d.data_lkey);
	wr.rdma.remote_addr = htole64(evil_gpa(v.data + RDEV_DST_OFF));
	wr.rdma.rkey = htole32(v.data_rkey);
	expect_wr(&d, &t, &wr, &sge, 1, S_REM_ACC, "WRITE to the other context's rkey");
	/* the victim's traffic */
	t.checks++;
	rc = rdev_probe(&v, 91);
	if (rc < 0)
		t_fail(&t, "the other context's traffic after the attack: %s", strerror(-rc));
	rdev_close(&v);
	return finish(&d, &t, "another context's handles and keys");
}

const struct evil_attack evil_ext_attacks[] = {
	{ "ext_cmd_lengths", EVIL_ALIVE, "commands 18..27 with every wrong length and ack room",
	  run_cmd_lengths, 0 },
	{ "ext_cmd_values", EVIL_ALIVE,
	  "commands 18..27, CREATE_QP ext_flags, access flags: every field at its extremes",
	  run_cmd_values, 0 },
	{ "ext_cmd_unknown", EVIL_ALIVE, "commands 28..255", run_cmd_unknown, 0 },
	{ "ext_cmd_no_feature", EVIL_ALIVE,
	  "extension commands, flags and opcodes without VIRTIO_NET_F_ROCE_EXT",
	  run_cmd_no_feature, 0 },
	{ "ext_rings_no_feature", EVIL_ALIVE,
	  "garbage on the event and SRQ ring indexes without VIRTIO_NET_F_ROCE_EXT",
	  run_rings_no_feature, 0 },
	{ "ext_wr_atomic", EVIL_ALIVE,
	  "atomics: bad rkeys, outside the MR, misaligned, bad result buffers, inline",
	  run_wr_atomic, 0 },
	{ "ext_wr_bind_mw", EVIL_ALIVE,
	  "BIND_MW: bad window keys, bad MRs, ranges outside the MR, rights, SGEs",
	  run_wr_bind, 0 },
	{ "ext_wr_reg_mr", EVIL_ALIVE,
	  "REG_MR: page lists and pages outside shared memory, ranges, keys; LOCAL_INV keys",
	  run_wr_reg, 0 },
	{ "ext_wr_send_inv", EVIL_ALIVE,
	  "SEND_WITH_INV of keys that cannot be invalidated; reserved opcodes",
	  run_wr_send_inv, 0 },
	{ "ext_srq_elements", EVIL_ALIVE,
	  "SRQ elements: too many SGEs, short, bad lkey, outside the MR", run_srq_elements, 0 },
	{ "ext_ctx_foreign", EVIL_ALIVE,
	  "a second context names the first one's QP, CQs, MR, PD, lkey and rkey",
	  run_ctx_foreign, 0 },
	{ "ext_evq_short", EVIL_ALIVE,
	  "event buffers shorter than an event; events raised without buffers",
	  run_evq_short, 0 },
	XRING(srq, B_HEAD_OOB, "head_oob", "avail entry = ring size"),
	XRING(srq, B_LOOP_SELF, "loop_self", "descriptor chained to itself"),
	XRING(srq, B_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0"),
	XRING(srq, B_NEXT_OOB, "next_oob", "next = ring size + 3"),
	XRING(srq, B_ADDR_OUTSIDE, "addr_outside", "element outside shared memory"),
	XRING(srq, B_ADDR_STRADDLE, "addr_straddle", "element crossing the end of shared memory"),
	XRING(srq, B_ADDR_WRAP, "addr_wrap", "addr + len wraps 2^64"),
	XRING(srq, B_IND_OUTSIDE, "indirect_outside", "indirect table outside shared memory"),
	XRING(srq, B_IND_LOOP, "indirect_loop", "loop inside an indirect table"),
	XRING(srq, B_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead"),
	XRING(evq, B_HEAD_OOB, "head_oob", "avail entry = ring size"),
	XRING(evq, B_LOOP_SELF, "loop_self", "descriptor chained to itself"),
	XRING(evq, B_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0"),
	XRING(evq, B_NEXT_OOB, "next_oob", "next = ring size + 3"),
	XRING(evq, B_ADDR_OUTSIDE, "addr_outside", "buffer outside shared memory"),
	XRING(evq, B_ADDR_STRADDLE, "addr_straddle", "buffer crossing the end of shared memory"),
	XRING(evq, B_ADDR_WRAP, "addr_wrap", "addr + len wraps 2^64"),
	XRING(evq, B_IND_OUTSIDE, "indirect_outside", "indirect table outside shared memory"),
	XRING(evq, B_IND_LOOP, "indirect_loop", "loop inside an indirect table"),
	XRING(evq, B_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead"),
	XRING(cq, B_HEAD_OOB, "head_oob", "avail entry = ring size, completions waiting"),
	XRING(cq, B_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0, completions waiting"),
	XRING(cq, B_ADDR_OUTSIDE, "addr_outside", "buffer outside shared memory, completions waiting"),
	XRING(cq, B_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead, completions waiting"),
};
#undef XRING
#undef srq_N
#undef evq_N
#undef cq_N
const unsigned evil_ext_nattacks = sizeof(evil_ext_attacks) / sizeof(evil_ext_attacks[0]);
