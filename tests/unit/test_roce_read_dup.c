/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RC responder's answer to duplicate READ requests. The requester is
 * the test: it hands request frames to the responder device and reads the
 * responses from its wire queue (no switch), one by one, with the
 * responder's engine driven by hand (roce_resp_run with an exact budget), so
 * what was sent before a duplicate arrived is exact.
 *
 * Asserts: a duplicate for any part of a READ (from a PSN of it, up to its
 * end or less) is answered with its own FIRST..LAST (or ONLY) responses from
 * its PSN, with the right bytes, before anything still to be sent; the
 * original answer then goes on after it without what it covered; a younger
 * READ's answer does not stop; malformed duplicates are dropped and counted.
 */
#include "../harness.h"
#include "common/log.h"
#include "roce/roce_opcode.h"
#include "roce/roce_pkt.h"
#include "unit/roce_tp_fake.h"

#define MTU 1024u
#define NPK 16u                    /* packets per READ */
#define RLEN (NPK * MTU)

struct dp {
	struct fk_env env;
	struct fk_dev *a, *b;          /* a: the requester's address only */
	struct fk_qp qb;
	struct fk_mr src;              /* b's memory the READs read */
	struct roce_tq *tq;            /* b's QP */
	struct roce_path path;         /* a -> b */
	uint32_t psn;                  /* first request PSN */
};

static void dp_init(struct dp *d)
{
	struct fk_dev_cfg dc = { .arena = 16u << 20 };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .sq_num = 16, .rq_num = 16,
				.max_send_wr = 16, .max_recv_wr = 16 };
	struct fk_path path;

	memset(d, 0, sizeof(*d));
	REQUIRE(fk_env_init(&d->env, false) == 0);
	d->a = fk_dev_new(&d->env, &dc);
	d->b = fk_dev_new(&d->env, &dc);
	qc.pdn = fk_pd(d->b);
	qc.scq = qc.rcq = fk_cq(d->b, 64, 16, true);
	d->qb = fk_qp_new(d->b, &qc);
	d->src = fk_mr_reg(d->b, qc.pdn, 4 * RLEN, FK_ACC_ALL);
	fk_fill(d->src.buf, 4 * RLEN, 3);
	fk_path_default(&path);        /* MTU 1024 */
	REQUIRE(fk_connect(d->b, d->qb.qpn, d->a, 0x77, &path) == 0);
	d->tq = rres_qp_lookup(&d->b->rd, d->qb.qpn)->transport;
	d->b->tp->run_max = 1;         /* one frame per response */
	d->psn = path.rq_psn;
	memcpy(d->path.smac, d->a->mac, 6);
	memcpy(d->path.dmac, d->b->mac, 6);
	memcpy(d->path.sgid, rres_gid_get(&d->a->rd, 1), 16);
	memcpy(d->path.dgid, rres_gid_get(&d->b->rd, 1), 16);
	d->path.udp_sport = roce_udp_sport_from_qpn(0x77);
}

static void dp_fini(struct dp *d)
{
	fk_env_fini(&d->env);
}

/* A READ request for [va, va + len) of b's memory at psn. */
static void dp_read(struct dp *d, uint32_t psn, uint64_t va, uint32_t len)
{
	struct roce_hdr_fields f;
	struct pkt *p = pkt_alloc();

	REQUIRE(p);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_READ_REQUEST;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = d->qb.qpn;
	f.psn = psn;
	f.reth.va = va;
	f.reth.rkey = d->src.rkey;
	f.reth.len = len;
	REQUIRE(roce_pkt_build_frame(p, &d->path, &f, NULL, 0) == 0);
	roce_recv_one(d->b->tp, p);
}

/* Up to n responses sent now. */
static void dp_send(struct dp *d, uint32_t n)
{
	bool more;

	(void)roce_resp_run(d->tq, n, &more);
}

/* The next response on the wire is opcode op at PSN d->psn + k carrying
 * READ byte offset off of b's memory (MTU bytes, or what is left of len). */
static void dp_expect(struct dp *d, uint8_t op, uint32_t k, uint64_t off, uint32_t len)
{
	struct pkt *p = pkt_queue_pop(&d->b->wire);
	struct roce_pkt_info pi;
	uint32_t plen = MIN(MTU, len);

	CHECK(p != NULL);
	if (!p)
		return;
	pkt_ref_fill(p);               /* the payload may still be a reference */
	REQUIRE(roce_pkt_parse_pkt(p, 0, &pi) == 0);
	CHECK_EQ(pi.opcode, op);
	CHECK_EQ(pi.psn, roce_psn_add(d->psn, k));
	CHECK_EQ(pi.payload_len, plen);
	if (pi.payload_len == plen)
		CHECK(memcmp(pi.payload, d->src.buf + off, plen) == 0);
	pkt_free(p);
}

static void dp_expect_none(struct dp *d)
{
	CHECK_EQ(d->b->wire.pkts, 0);
}

#define OP(x) ROCE_OP_RC_RDMA_READ_RESPONSE_##x
#define VA(d) ((uint64_t)(uintptr_t)(d)->src.buf)

/* Responses 0..7 went out; a duplicate for responses 2..3 is answered
 * first (FIRST, LAST of its own), then responses 8..15 of the original. */
static void test_dup_part_first(void)
{
	struct dp d;

	dp_init(&d);
	dp_read(&d, d.psn, VA(&d), RLEN);
	dp_send(&d, 8);
	for (uint32_t k = 0; k < 8; k++)
		dp_expect(&d, k ? OP(MIDDLE) : OP(FIRST), k, k * MTU, MTU);
	dp_read(&d, roce_psn_add(d.psn, 2), VA(&d) + 2 * MTU, 2 * MTU);
	dp_send(&d, 100);
	dp_expect(&d, OP(FIRST), 2, 2 * MTU, MTU);
	dp_expect(&d, OP(LAST), 3, 3 * MTU, MTU);
	for (uint32_t k = 8; k < NPK; k++)
		dp_expect(&d, k + 1 < NPK ? OP(MIDDLE) : OP(LAST), k, k * MTU, MTU);
	dp_expect_none(&d);
	CHECK_EQ(d.b->tp->stats.dup_reads, 1);
	CHECK_EQ(d.tq->res_active, 0);
	dp_fini(&d);
}

/* A one-packet duplicate (ONLY), and one reaching past the original's send
 * position: the original goes on after what the duplicate covered. */
static void test_dup_covers_ahead(void)
{
	struct dp d;

	dp_init(&d);
	dp_read(&d, d.psn, VA(&d), RLEN - 100);   /* last response 924 bytes */
	dp_send(&d, 6);
	for (uint32_t k = 0; k < 6; k++)
		dp_expect(&d, k ? OP(MIDDLE) : OP(FIRST), k, k * MTU, MTU);
	dp_read(&d, roce_psn_add(d.psn, 1), VA(&d) + MTU, MTU);
	dp_read(&d, roce_psn_add(d.psn, 4), VA(&d) + 4 * MTU, 6 * MTU);
	dp_send(&d, 100);
	/* the second duplicate replaced the first one's answer */
	for (uint32_t k = 4; k < 10; k++)
		dp_expect(&d, k == 4 ? OP(FIRST) : k == 9 ? OP(LAST) : OP(MIDDLE), k, k * MTU,
			  MTU);
	for (uint32_t k = 10; k < NPK; k++)
		dp_expect(&d, k + 1 < NPK ? OP(MIDDLE) : OP(LAST), k, k * MTU,
			  RLEN - 100 - k * MTU);
	dp_expect_none(&d);
	/* a tail duplicate to the end ends the original's answer */
	dp_read(&d, roce_psn_add(d.psn, 15), VA(&d) + 15 * MTU, MTU - 100);
	dp_send(&d, 100);
	dp_expect(&d, OP(ONLY), 15, 15 * MTU, MTU - 100);
	dp_expect_none(&d);
	CHECK_EQ(d.b->tp->stats.dup_reads, 3);
	dp_fini(&d);
}

/* Two READs; the first was answered, the second half-way: a duplicate of
 * the first is answered at once and the second goes on (not stopped). */
static void test_dup_younger_goes_on(void)
{
	struct dp d;
	uint32_t p2;

	dp_init(&d);
	p2 = roce_psn_add(d.psn, NPK);
	dp_read(&d, d.psn, VA(&d), RLEN);
	dp_read(&d, p2, VA(&d) + RLEN, RLEN);
	dp_send(&d, NPK + 5);
	for (uint32_t k = 0; k < NPK + 5; k++) {
		uint32_t j = k % NPK;

		dp_expect(&d, j == 0 ? OP(FIRST) : j + 1 == NPK ? OP(LAST) : OP(MIDDLE), k,
			  k * MTU, MTU);
	}
	dp_read(&d, roce_psn_add(d.psn, 7), VA(&d) + 7 * MTU, 3 * MTU);
	dp_send(&d, 100);
	dp_expect(&d, OP(FIRST), 7, 7 * MTU, MTU);
	dp_expect(&d, OP(MIDDLE), 8, 8 * MTU, MTU);
	dp_expect(&d, OP(LAST), 9, 9 * MTU, MTU);
	for (uint32_t k = NPK + 5; k < 2 * NPK; k++)
		dp_expect(&d, k + 1 < 2 * NPK ? OP(MIDDLE) : OP(LAST), k, k * MTU, MTU);
	dp_expect_none(&d);
	CHECK_EQ(d.tq->res_active, 0);
	dp_fini(&d);
}

/* Duplicates that are no part of the READ at their PSN: longer than what is
 * left, another address, another key, empty in the middle, ending inside a
 * response before the end. Dropped, counted, nothing sent, the QP stays
 * up. */
static void test_dup_malformed(void)
{
	struct roce_hdr_fields f;
	struct dp d;
	struct pkt *p;
	uint64_t bad0;

	dp_init(&d);
	dp_read(&d, d.psn, VA(&d), RLEN);
	dp_send(&d, 100);
	for (uint32_t k = 0; k < NPK; k++)
		dp_expect(&d, k == 0 ? OP(FIRST) : k + 1 == NPK ? OP(LAST) : OP(MIDDLE), k,
			  k * MTU, MTU);
	bad0 = d.b->tp->stats.rx_bad_resp;
	dp_read(&d, roce_psn_add(d.psn, 3), VA(&d) + 3 * MTU, RLEN - 3 * MTU + 1);
	dp_read(&d, roce_psn_add(d.psn, 3), VA(&d) + 2 * MTU, MTU);
	dp_read(&d, roce_psn_add(d.psn, 3), VA(&d) + 3 * MTU, 0);
	dp_read(&d, roce_psn_add(d.psn, 3), VA(&d) + 3 * MTU, MTU + 100); /* not whole */
	/* another R_Key */
	p = pkt_alloc();
	REQUIRE(p);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_READ_REQUEST;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = d.qb.qpn;
	f.psn = roce_psn_add(d.psn, 3);
	f.reth.va = VA(&d) + 3 * MTU;
	f.reth.rkey = d.src.rkey ^ 0x100;
	f.reth.len = MTU;
	REQUIRE(roce_pkt_build_frame(p, &d.path, &f, NULL, 0) == 0);
	roce_recv_one(d.b->tp, p);
	dp_send(&d, 100);
	dp_expect_none(&d);
	CHECK_EQ(d.b->tp->stats.rx_bad_resp - bad0, 5);
	CHECK_EQ(d.b->tp->stats.dup_reads, 0);
	CHECK_EQ(d.tq->qp->attr.qp_state, VIRTIO_IB_QPS_RTS);
	dp_fini(&d);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	TEST_PROGRAM("test_roce_read_dup");
	vlog_level = VLOG_ERR;
	RUN(test_dup_part_first);
	RUN(test_dup_covers_ahead);
	RUN(test_dup_younger_goes_on);
	RUN(test_dup_malformed);
	return TEST_DONE();
}
