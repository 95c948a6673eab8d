/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runs between local devices (docs/design.md "Runs between local devices"):
 * an RC SEND/WRITE message between two devices of one switch goes as frames
 * that each stand for up to a turn of its packets; READ responses too.
 * Checked: data byte for byte and exact counters for every size from 1 byte
 * to 1 MiB + 3; a run split for a capture is byte for byte the framed path's
 * frames; the fault injector on runs; a rewind into the middle of a run; an
 * RNR, a length error inside a run and an access error at its start answer
 * at the right PSN with nothing placed beyond it; UC and inline are framed.
 *
 * The pairs here have no retransmit timer (timeout 0) where exact counts
 * are checked: nothing is sent again unless a test loses a frame itself.
 */
#include "../harness.h"
#include "roce/roce_icrc.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 60000
#define BUF_SIZE ((2u << 20) + 8192)
#define MTU 1024u

struct pair {
	struct fk_env env;
	union {
		struct fk_rc_pair rc;
		struct { FK_RC_PAIR_MEMBERS };
	};
};

static void pair_init_t(struct pair *p, uint8_t type, uint8_t timeout)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 16u << 20, .max_send_sge = 8,
				 .max_recv_sge = 8 };
	struct fk_qp_cfg qc = { .type = type, .max_send_sge = 4, .max_recv_sge = 4,
				.max_inline = 256, .sq_num = 64, .rq_num = 64,
				.max_send_wr = 64, .max_recv_wr = 64 };
	struct fk_path path;

	memset(p, 0, sizeof(*p));
	fk_path_default(&path);
	path.timeout = timeout;
	if (fk_env_init(&p->env, true))
		abort();
	p->a = fk_dev_new(&p->env, &dc);
	p->b = fk_dev_new(&p->env, &dc);
	fk_rc_pair_init(&p->rc, &qc, &path, 256, 128, BUF_SIZE);
}

/* No retransmit timer: exact counts. */
static void pair_init(struct pair *p, uint8_t type)
{
	pair_init_t(p, type, 0);
}

/* An RC pair with a retransmit timer and the fault injector (spec) on its
 * switch. */
static void pair_init_fault(struct pair *p, const char *spec)
{
	struct fault_cfg cfg;

	pair_init_t(p, VIRTIO_IB_QPT_RC, 14);
	REQUIRE(fault_cfg_parse(&cfg, spec) == 0);
	REQUIRE(sw_set_fault(p->env.sw, &cfg, NULL) == 0);
}

/* The first PSN of the first WR a sent. */
static uint32_t first_psn(struct pair *p)
{
	struct roce_tq *tq = rres_qp_lookup(&p->a->rd, p->qa.qpn)->transport;

	return roce_sq_wqe(tq, tq->sq_head)->first_psn;
}

static uint32_t npkts(uint32_t len)
{
	return len ? (len + MTU - 1) / MTU : 1;
}

/* Post one op from a to b: len bytes of src (seed) in nsge SGEs to dst,
 * and for a SEND / WRITE_WITH_IMM a receive of rlen bytes at dst (no
 * receive: rlen < 0). */
static bool post_op(struct pair *p, uint8_t op, uint32_t len, unsigned nsge, bool inl,
		    uint32_t seed, int64_t rlen)
{
	bool send = op == VIRTIO_IB_WR_SEND || op == VIRTIO_IB_WR_SEND_WITH_IMM;
	uint8_t *src = p->ma.buf + 1 + seed % 61, *dst = p->mb.buf + 3;
	static struct fk_sge ls[4], rs[1];
	struct fk_wr wr = { .wr_id = 500 + seed, .opcode = op, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .imm = htobe32(seed) };

	fk_fill(src, len, seed);
	memset(dst, 0x5a, (size_t)len + 64);
	fk_wr_source(&wr, ls, src, len, nsge, inl, p->ma.lkey);
	if (!send) {
		wr.remote_addr = (uintptr_t)dst;
		wr.rkey = p->mb.rkey;
	}
	if (rlen >= 0) {
		rs[0] = (struct fk_sge){ dst, (uint32_t)rlen, p->mb.lkey };
		if (fk_post_recv(p->b, &p->qb, 900 + seed, rs, rlen ? 1 : 0))
			return false;
	}
	return fk_post_send(p->a, &p->qa, &wr) == 0;
}

/* One op, both completions and the data checked. */
static bool do_op(struct pair *p, uint8_t op, uint32_t len, unsigned nsge, bool inl,
		  uint32_t seed)
{
	bool send = op == VIRTIO_IB_WR_SEND || op == VIRTIO_IB_WR_SEND_WITH_IMM;
	bool imm = op == VIRTIO_IB_WR_SEND_WITH_IMM || op == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
	uint8_t *src = p->ma.buf + 1 + seed % 61, *dst = p->mb.buf + 3;
	struct virtio_rdma_cq_req wc[2];
	int fails = th_failed_checks;

	if (!post_op(p, op, len, nsge, inl, seed, send ? (int64_t)len : imm ? 0 : -1))
		return false;
	CHECK_EQ(fk_wait_cq(&p->env, p->a, p->cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].wr_id, 500 + seed);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	if (send || imm) {
		CHECK_EQ(fk_wait_cq(&p->env, p->b, p->cqb, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].wr_id, 900 + seed);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].byte_len, len);
		if (imm)
			CHECK_EQ(wc[0].imm_data, htobe32(seed));
	}
	CHECK(memcmp(src, dst, len) == 0);
	CHECK_EQ(dst[len], 0x5a);
	fk_ring_reap(p->qa.sq);
	fk_ring_reap(p->qb.rq);
	return th_failed_checks == fails;
}

static const uint8_t ops[] = {
	VIRTIO_IB_WR_SEND, VIRTIO_IB_WR_SEND_WITH_IMM, VIRTIO_IB_WR_RDMA_WRITE,
	VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM,
};
static const uint32_t sizes[] = { 1, 63, 1023, 1024, 1025, 2048, 4097, 32768, 32769, 33793,
				  65536 + 5, (1u << 20) + 3 };

/* Every message of more than one packet goes as runs of at most a turn
 * (ROCE_TP_QP_BUDGET packets) each, a single packet left at the end of a
 * message alone; the responder gets them as runs; data byte for byte. */
static void test_run_sizes(void)
{
	struct pkt_ref_stats r0, r1;
	uint64_t base = pkt_outstanding();
	struct pair p;
	uint32_t seed = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	pkt_ref_get_stats(&r0);
	for (unsigned o = 0; o < ARRAY_SIZE(ops); o++)
		for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
			struct roce_tp_stats a0 = p.a->tp->stats, b0 = p.b->tp->stats;
			const struct roce_tp_stats *a = &p.a->tp->stats, *b = &p.b->tp->stats;
			uint32_t n = npkts(sizes[i]), full = n / ROCE_TP_QP_BUDGET,
				 rest = n % ROCE_TP_QP_BUDGET;
			uint64_t runs = full + (rest > 1), run_pkts = n - (rest == 1);

			if (n == 1)
				runs = run_pkts = 0;
			int f0 = th_failed_checks;

			CHECK(do_op(&p, ops[o], sizes[i], 1 + i % 4, false, seed++));
			CHECK_EQ(a->tx_frames - a0.tx_frames, n);
			CHECK_EQ(a->tx_runs - a0.tx_runs, runs);
			CHECK_EQ(a->tx_run_pkts - a0.tx_run_pkts, run_pkts);
			CHECK_EQ(a->tx_by_ref - a0.tx_by_ref, n);
			CHECK_EQ(b->rx_runs - b0.rx_runs, runs);
			CHECK_EQ(b->rx_run_pkts - b0.rx_run_pkts, run_pkts);
			CHECK_EQ(b->rx_frames - b0.rx_frames, n);
			CHECK_EQ(b->rx_by_ref - b0.rx_by_ref, n);
			CHECK_EQ(b->rx_seq_err - b0.rx_seq_err, 0);
			CHECK_EQ(a->retransmits, 0);
			/* the MIDDLE packets of a run placed with one copy */
			if (n >= 4)
				CHECK(b->rx_run_bulk > b0.rx_run_bulk);
			else
				CHECK_EQ(b->rx_run_bulk, b0.rx_run_bulk);
			if (th_failed_checks != f0)
				printf("#   (op %u, %u bytes)\n", ops[o], sizes[i]);
		}
	pkt_ref_get_stats(&r1);
	CHECK_EQ(r1.filled - r0.filled, 0);
	CHECK_EQ(r1.live, 0);
	CHECK_EQ(p.a->tp->stats.rx_run_lost + p.b->tp->stats.rx_run_lost, 0);
	fk_env_fini(&p.env);
	CHECK_EQ(pkt_outstanding(), base);
}

/* READ responses to a local requester go as runs too; the completer places
 * them. */
static void test_read_runs(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct roce_tp_stats a0 = p.a->tp->stats, b0 = p.b->tp->stats;
		uint32_t len = sizes[i], nsge = 1 + i % 4, n = npkts(len);
		int f0 = th_failed_checks;
		uint8_t *src = p.mb.buf + 5 + i, *dst = p.ma.buf + 1;

		fk_fill(src, len, 40 + i);
		memset(dst, 0x5a, (size_t)len + 64);
		REQUIRE(fk_rc_pair_post_read(&p.rc, 70 + i, dst, src, len, nsge) == 0);
		CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK(memcmp(src, dst, len) == 0);
		CHECK_EQ(dst[len], 0x5a);
		fk_ring_reap(p.qa.sq);
		CHECK_EQ(p.b->tp->stats.read_resp_sent - b0.read_resp_sent, n);
		CHECK_EQ(p.b->tp->stats.tx_by_ref - b0.tx_by_ref, n);
		CHECK_EQ(p.a->tp->stats.rx_by_ref - a0.rx_by_ref, n);
		CHECK_EQ(p.a->tp->stats.rx_run_pkts - a0.rx_run_pkts,
			 p.b->tp->stats.tx_run_pkts - b0.tx_run_pkts);
		CHECK_EQ(p.a->tp->stats.rx_resp_runs - a0.rx_resp_runs,
			 p.b->tp->stats.tx_runs - b0.tx_runs);
		if (n > 1)
			CHECK(p.b->tp->stats.tx_runs > b0.tx_runs);
		else
			CHECK_EQ(p.b->tp->stats.tx_runs, b0.tx_runs);
		if (th_failed_checks != f0)
			printf("#   (READ of %u bytes)\n", len);
	}
	fk_env_fini(&p.env);
}

/* ---- captures ---------------------------------------------------------------- */

#define CAP_MAX 2048

struct capture {
	uint32_t n;
	uint32_t len[CAP_MAX];
	uint8_t *frame[CAP_MAX];
};

/* The RC request frames (SEND / WRITE) of a capture, in order; -1 for a
 * frame with a bad ICRC. */
static int capture_read(const char *path, struct capture *c)
{
	static uint8_t frame[16384];
	uint8_t gh[24], rh[16];
	FILE *f = fopen(path, "rb");

	c->n = 0;
	if (!f || fread(gh, 1, 24, f) != 24) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t incl;

		memcpy(&incl, rh + 8, 4);
		if (incl > sizeof(frame) || fread(frame, 1, incl, f) != incl)
			break;
		if (incl < 42 + 12 + 4 || frame[12] != 0x08 || frame[13] != 0 || frame[23] != 17 ||
		    frame[36] != 0x12 || frame[37] != 0xb7 || frame[42] > ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
			continue;
		if (roce_icrc_frame_verify(frame, incl) || c->n == CAP_MAX) {
			fclose(f);
			return -1;
		}
		c->frame[c->n] = malloc(incl);
		if (!c->frame[c->n])
			abort();
		memcpy(c->frame[c->n], frame, incl);
		c->len[c->n++] = incl;
	}
	fclose(f);
	return 0;
}

static void capture_free(struct capture *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		free(c->frame[i]);
	c->n = 0;
}

static bool burst_post(struct pair *p, uint32_t seed);
static void burst_check(struct pair *p, uint32_t seed);

/* The same messages on a fresh pair with a capture, one at a time or (burst)
 * posted together; runs on or off. */
static int capture_ops(struct capture *c, bool runs, bool burst, uint64_t *va_base,
		       uint64_t *split, uint64_t *tx_bytes)
{
	char path[] = "/tmp/vrdma_run_XXXXXX";
	struct roce_run_stats s0, s1;
	int fd = mkstemp(path), rc;
	struct pair p;
	uint32_t seed = 0;

	if (fd < 0)
		return -1;
	close(fd);
	pair_init(&p, VIRTIO_IB_QPT_RC);
	if (!runs)
		p.a->tp->run_max = 1;
	*va_base = (uintptr_t)p.mb.buf;
	roce_run_get_stats(&s0);
	if (sw_set_pcap(p.env.sw, path))
		abort();
	if (burst) {
		CHECK(burst_post(&p, 7));
		burst_check(&p, 7);
		CHECK_EQ(p.a->tp->stats.tx_run_msgs > 0, runs);
	} else {
		for (unsigned o = 0; o < ARRAY_SIZE(ops); o++)
			for (unsigned i = 0; i < 10; i++)
				CHECK(do_op(&p, ops[o], sizes[i], 1 + i % 4, false, seed++));
	}
	sw_set_pcap(p.env.sw, NULL);
	roce_run_get_stats(&s1);
	*split = s1.frames_split - s0.frames_split;
	*tx_bytes = p.a->tp->stats.tx_bytes;
	CHECK_EQ(p.b->tp->stats.rx_bytes, *tx_bytes);
	CHECK_EQ(p.a->tp->stats.retransmits, 0);
	CHECK_EQ(p.b->tp->stats.rx_runs, 0); /* all split before the capture */
	CHECK_EQ(*split, p.a->tp->stats.tx_run_pkts);
	fk_env_fini(&p.env);
	rc = capture_read(path, c);
	unlink(path);
	return rc;
}

/* Captures framed and split hold the same frames byte for byte (the RETH's
 * VA taken relative to the target buffer, base_f and base_s, which is
 * elsewhere in each pair; every ICRC verified). */
static void capture_same(struct capture *framed, uint64_t base_f, struct capture *split,
			 uint64_t base_s)
{
	CHECK_EQ(framed->n, split->n);
	for (uint32_t i = 0; i < MIN(framed->n, split->n); i++) {
		uint8_t *f = framed->frame[i], *s = split->frame[i];
		uint32_t len = framed->len[i];
		uint8_t op = f[42];

		if (len != split->len[i]) {
			printf("#   frame %u (opcode %u): %u bytes, split %u\n", i, op, len,
			       split->len[i]);
			CHECK_EQ(len, split->len[i]);
			break;
		}
		if (op == ROCE_OP_RC_RDMA_WRITE_FIRST || op == ROCE_OP_RC_RDMA_WRITE_ONLY ||
		    op == ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE) {
			uint64_t vf = get_be64(f + 54), vs = get_be64(s + 54);

			CHECK_EQ(vf - base_f, vs - base_s);
			memset(f + 54, 0, 8);
			memset(s + 54, 0, 8);
			memset(f + len - 4, 0, 4); /* ICRC (over the VA), verified */
			memset(s + len - 4, 0, 4);
		}
		if (memcmp(f, s, len)) {
			CHECK(memcmp(f, s, len) == 0);
			printf("#   frame %u (opcode %u) differs\n", i, op);
			break;
		}
	}
	capture_free(framed);
	capture_free(split);
}

/* A capture of runs holds the frames the framed path sends. */
static void test_split_equals_framed(void)
{
	static struct capture framed, split;
	uint64_t base_f, base_s, nsplit_f, nsplit_s, bytes_f, bytes_s;

	REQUIRE(capture_ops(&framed, false, false, &base_f, &nsplit_f, &bytes_f) == 0);
	REQUIRE(capture_ops(&split, true, false, &base_s, &nsplit_s, &bytes_s) == 0);
	CHECK_EQ(bytes_f, bytes_s); /* a run counts the bytes of its frames */
	CHECK_EQ(nsplit_f, 0);
	CHECK(nsplit_s > 0);
	capture_same(&framed, base_f, &split, base_s);
}

/* ---- runs of single-packet messages ---- */

#define BURST 48
#define BURST_STRIDE 4096u

/* Message i of a burst: WRITEs and SENDs in twos, every seventh a WRITE
 * and every eleventh a SEND with immediate data (each its own), 1 byte to
 * an MTU, every fifth solicited; message 20 is three packets (it ends a
 * run). */
static void burst_msg(uint32_t i, uint8_t *op, uint32_t *len, uint8_t *flags)
{
	*op = i % 7 == 0 ? VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM :
	      i % 11 == 0 ? VIRTIO_IB_WR_SEND_WITH_IMM :
	      (i / 2) % 2 ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE;
	*len = i == 20 ? 3 * MTU : 1 + (i * 211) % MTU;
	*flags = VIRTIO_IB_SEND_SIGNALED;
	if (i % 5 == 0)
		*flags |= VIRTIO_IB_SEND_SOLICITED;
}

static bool burst_recv(uint8_t op)
{
	return op != VIRTIO_IB_WR_RDMA_WRITE;
}

/* Post the BURST messages of round seed from a to b at once (the receives
 * first): the requester finds them together in its send queue. */
static bool burst_post(struct pair *p, uint32_t seed)
{
	static struct fk_sge ls[BURST][4], rs[BURST];

	for (uint32_t i = 0; i < BURST; i++) {
		uint8_t *src = p->ma.buf + i * BURST_STRIDE + i % 7;
		uint8_t *dst = p->mb.buf + i * BURST_STRIDE + 3;
		struct fk_wr wr = { .wr_id = 500 + i, .trunc = -1, .imm = htobe32(seed + i) };
		uint32_t len;

		burst_msg(i, &wr.opcode, &len, &wr.flags);
		fk_fill(src, len, seed + i);
		memset(dst, 0x5a, (size_t)len + 64);
		fk_wr_source(&wr, ls[i], src, len, 1 + i % 3, false, p->ma.lkey);
		if (wr.opcode == VIRTIO_IB_WR_RDMA_WRITE ||
		    wr.opcode == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM) {
			wr.remote_addr = (uintptr_t)dst;
			wr.rkey = p->mb.rkey;
		}
		if (burst_recv(wr.opcode)) {
			bool imm_write = wr.opcode == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;

			rs[i] = (struct fk_sge){ dst, len, p->mb.lkey };
			if (fk_post_recv(p->b, &p->qb, 900 + i, &rs[i], imm_write ? 0 : 1))
				return false;
		}
		if (fk_post_send(p->a, &p->qa, &wr))
			return false;
	}
	return true;
}

/* Every completion of round seed in order, and the data byte for byte. */
static void burst_check(struct pair *p, uint32_t seed)
{
	static struct virtio_rdma_cq_req wc[BURST];
	uint32_t nrecv = 0, r = 0;

	for (uint32_t i = 0; i < BURST; i++) {
		uint8_t op, flags;
		uint32_t len;

		burst_msg(i, &op, &len, &flags);
		nrecv += burst_recv(op);
	}
	CHECK_EQ(fk_wait_cq(&p->env, p->a, p->cqa, wc, BURST, WAIT_MS), BURST);
	for (uint32_t i = 0; i < BURST; i++) {
		CHECK_EQ(wc[i].wr_id, 500 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	}
	CHECK_EQ(fk_wait_cq(&p->env, p->b, p->cqb, wc, nrecv, WAIT_MS), nrecv);
	for (uint32_t i = 0; i < BURST; i++) {
		const uint8_t *src = p->ma.buf + i * BURST_STRIDE + i % 7;
		const uint8_t *dst = p->mb.buf + i * BURST_STRIDE + 3;
		uint8_t op, flags;
		uint32_t len;

		burst_msg(i, &op, &len, &flags);
		if (burst_recv(op) && r < nrecv) {
			CHECK_EQ(wc[r].wr_id, 900 + i);
			CHECK_EQ(wc[r].status, VIRTIO_IB_WC_SUCCESS);
			if (op != VIRTIO_IB_WR_SEND)
				CHECK_EQ(wc[r].imm_data, htobe32(seed + i));
			if (op != VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM)
				CHECK_EQ(wc[r].byte_len, len);
			r++;
		}
		CHECK(memcmp(src, dst, len) == 0);
		CHECK_EQ(dst[len], 0x5a);
	}
	fk_ring_reap(p->qa.sq);
	fk_ring_reap(p->qb.rq);
}

/* Single-packet SENDs and WRITEs posted together go as runs of several
 * messages; the responder takes them as runs: completions in order, data
 * byte for byte. */
static void test_message_runs(void)
{
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	for (uint32_t round = 0; round < 3; round++) {
		REQUIRE(burst_post(&p, round * 1000));
		burst_check(&p, round * 1000);
	}
	CHECK(p.a->tp->stats.tx_run_msgs > BURST);
	CHECK(p.b->tp->stats.rx_runs > 0);
	CHECK_EQ(p.a->tp->stats.retransmits, 0);
	CHECK_EQ(p.b->tp->stats.rx_bytes, p.a->tp->stats.tx_bytes);
	fk_env_fini(&p.env);
}

/* A capture of runs of several messages holds the frames the framed path
 * sends for them (each packet's own RETH, SE and AckReq). */
static void test_message_runs_split(void)
{
	static struct capture framed, split;
	uint64_t base_f, base_s, nsplit_f, nsplit_s, bytes_f, bytes_s;

	REQUIRE(capture_ops(&framed, false, true, &base_f, &nsplit_f, &bytes_f) == 0);
	REQUIRE(capture_ops(&split, true, true, &base_s, &nsplit_s, &bytes_s) == 0);
	CHECK_EQ(bytes_f, bytes_s);
	CHECK_EQ(nsplit_f, 0);
	CHECK(nsplit_s > 0);
	capture_same(&framed, base_f, &split, base_s);
}

/* Faults on runs of several messages (a dropped packet a hole, a faulted
 * one cuts the run, what follows a hole kept): RC recovers them all,
 * completions in order and data intact. */
static void test_message_runs_fault(void)
{
	struct roce_run_stats s0, s1;
	struct pair p;

	pair_init_fault(&p, "drop=3,dup=2,reorder=2,corrupt=1,seed=5");
	roce_run_get_stats(&s0);
	for (uint32_t round = 0; round < 6; round++) {
		REQUIRE(burst_post(&p, round * 100));
		burst_check(&p, round * 100);
	}
	roce_run_get_stats(&s1);
	CHECK(p.a->tp->stats.tx_run_msgs > 0);
	CHECK(p.a->tp->stats.retransmits > 0);
	CHECK(s1.holes - s0.holes > 0);
	CHECK(s1.runs_cut - s0.runs_cut > 0);
	CHECK(p.b->tp->stats.rx_kept > 0);
	fk_env_fini(&p.env);
}

static bool rnr_sent(void *arg)
{
	return ((struct pair *)arg)->b->tp->stats.rnr_naks_sent > 0;
}

/* Eight 100-byte SENDs posted together, receives for the first three only:
 * the run's fourth packet is answered RNR and nothing from it on is
 * placed; once the receives are there every SEND completes, in order. */
static void test_message_runs_rnr(void)
{
	static struct fk_sge ls[8], rs[8];
	struct virtio_rdma_cq_req wc[8];
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	memset(p.mb.buf, 0x5a, 8 * 256);
	for (uint32_t i = 0; i < 8; i++) {
		struct fk_wr wr = { .wr_id = 10 + i, .opcode = VIRTIO_IB_WR_SEND, .trunc = -1,
				    .flags = VIRTIO_IB_SEND_SIGNALED };

		fk_fill(p.ma.buf + i * 256, 100, 40 + i);
		rs[i] = (struct fk_sge){ p.mb.buf + i * 256, 100, p.mb.lkey };
		if (i < 3)
			REQUIRE(fk_post_recv(p.b, &p.qb, 70 + i, &rs[i], 1) == 0);
		fk_wr_source(&wr, &ls[i], p.ma.buf + i * 256, 100, 1, false, p.ma.lkey);
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 3, WAIT_MS), 3);
	CHECK(fk_run_until(&p.env, rnr_sent, &p, WAIT_MS));
	CHECK(p.a->tp->stats.tx_run_msgs >= 8);
	for (uint32_t k = 3 * 256; k < 8 * 256; k++)
		if (p.mb.buf[k] != 0x5a) {
			CHECK_EQ(p.mb.buf[k], 0x5a);
			break;
		}
	for (uint32_t i = 3; i < 8; i++)
		REQUIRE(fk_post_recv(p.b, &p.qb, 70 + i, &rs[i], 1) == 0);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc + 3, 5, WAIT_MS), 5);
	for (uint32_t i = 0; i < 8; i++) {
		CHECK_EQ(wc[i].wr_id, 10 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
	}
	CHECK_EQ(fk_wait_cq(&p.env, p.b, p.cqb, wc, 8, WAIT_MS), 8);
	for (uint32_t i = 0; i < 8; i++) {
		CHECK_EQ(wc[i].wr_id, 70 + i);
		CHECK_EQ(wc[i].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, 100);
		CHECK(memcmp(p.ma.buf + i * 256, p.mb.buf + i * 256, 100) == 0);
	}
	fk_env_fini(&p.env);
}

/* Eight 100-byte WRITEs posted together, the fifth with a bad R_Key: the
 * first four are placed and complete, the fifth completes with a remote
 * access error, the rest are flushed; nothing from the fifth on placed. */
static void test_message_runs_access_error(void)
{
	static struct fk_sge ls[8];
	struct virtio_rdma_cq_req wc[8];
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	memset(p.mb.buf, 0x5a, 8 * 256);
	for (uint32_t i = 0; i < 8; i++) {
		struct fk_wr wr = { .wr_id = 10 + i, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
				    .trunc = -1, .flags = VIRTIO_IB_SEND_SIGNALED };

		fk_fill(p.ma.buf + i * 256, 100, 60 + i);
		fk_wr_source(&wr, &ls[i], p.ma.buf + i * 256, 100, 1, false, p.ma.lkey);
		wr.remote_addr = (uintptr_t)(p.mb.buf + i * 256);
		wr.rkey = i == 4 ? p.mb.rkey ^ 0x100 : p.mb.rkey;
		REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	}
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 8, WAIT_MS), 8);
	for (uint32_t i = 0; i < 8; i++) {
		CHECK_EQ(wc[i].wr_id, 10 + i);
		CHECK_EQ(wc[i].status, i < 4 ? VIRTIO_IB_WC_SUCCESS :
				       i == 4 ? VIRTIO_IB_WC_REM_ACCESS_ERR :
						VIRTIO_IB_WC_WR_FLUSH_ERR);
	}
	CHECK(p.a->tp->stats.tx_run_msgs >= 8);
	CHECK(memcmp(p.ma.buf, p.mb.buf, 100) == 0);
	CHECK(memcmp(p.ma.buf + 3 * 256, p.mb.buf + 3 * 256, 100) == 0);
	for (uint32_t k = 4 * 256; k < 8 * 256; k++)
		if (p.mb.buf[k] != 0x5a) {
			CHECK_EQ(p.mb.buf[k], 0x5a);
			break;
		}
	fk_env_fini(&p.env);
}

/* The fault injector on runs: a packet it drops is a hole in the run, at
 * one it does anything else to the run is cut (the packets before go on as
 * a shorter run, that one as a real frame through it, the rest as a run
 * again); RC recovers every fault: data intact. */
static void test_fault_on_runs(void)
{
	struct roce_run_stats s0, s1;
	struct pair p;

	pair_init_fault(&p, "drop=2,dup=2,reorder=2,corrupt=1,seed=9");
	roce_run_get_stats(&s0);
	for (unsigned i = 0; i < 8; i++)
		CHECK(do_op(&p, ops[i % 4], i == 7 ? (1u << 20) + 3 : 40000 + i * 977, 1 + i % 4,
			    false, 20 + i));
	roce_run_get_stats(&s1);
	CHECK(p.a->tp->stats.tx_runs > 0);
	CHECK(s1.frames_split - s0.frames_split > 0);
	CHECK(s1.runs_cut - s0.runs_cut > 0);
	CHECK(s1.tails - s0.tails > 0); /* after a faulted packet, a run again */
	CHECK(s1.holes - s0.holes > 0);  /* dropped packets: holes in runs */
	CHECK(p.b->tp->stats.rx_runs > 0);
	CHECK(p.a->tp->stats.retransmits > 0);
	fk_env_fini(&p.env);
}

/* Records what an injector emits: a frame's first data byte (its number)
 * and a checksum of its bytes. */
struct emitted {
	uint32_t n;
	uint32_t id[4096], sum[4096];
};

static void emitted_add(void *arg, struct pkt *p)
{
	struct emitted *e = arg;
	uint32_t s = 0;

	for (uint32_t i = 0; i < p->len; i++)
		s = s * 31 + p->data[i];
	if (e->n < 4096) {
		e->id[e->n] = p->data[14] | (uint32_t)p->data[15] << 8;
		e->sum[e->n++] = s;
	}
	pkt_free(p);
}

static struct pkt *numbered(uint32_t id)
{
	struct pkt *p = pkt_alloc();

	if (!p)
		abort();
	p->len = 120;
	memset(p->data, 0x11, p->len);
	p->data[14] = (uint8_t)id;
	p->data[15] = (uint8_t)(id >> 8);
	return p;
}

/* fault_pass_run then fault_input for the rest decides exactly as
 * fault_input for every frame: same drops, copies, holds, corruptions, same
 * frames out in the same order, over many seeds. */
static void test_fault_pass_run_same(void)
{
	static struct emitted ea, eb;
	char spec[96];

	for (unsigned seed = 1; seed <= 200; seed++) {
		struct fault_cfg cfg;
		struct fault *fa, *fb;
		uint32_t id = 0;

		snprintf(spec, sizeof(spec), "drop=3,dup=3,reorder=3,corrupt=3,seed=%u", seed);
		REQUIRE(fault_cfg_parse(&cfg, spec) == 0);
		memset(&ea, 0, sizeof(ea));
		memset(&eb, 0, sizeof(eb));
		fa = fault_new(NULL, &cfg, emitted_add, &ea);
		fb = fault_new(NULL, &cfg, emitted_add, &eb);
		REQUIRE(fa && fb);
		for (unsigned r = 0; r < 40; r++) {
			uint32_t n = 1 + (r * 7 + seed) % 32, keep;

			for (uint32_t k = 0; k < n; k++)
				fault_input(fa, 3, numbered(id + k));
			/* as the switch does: the passed part goes on, a packet
			 * to drop is never built, the next one meets the injector
			 * as a frame, the rest is a run again */
			for (uint32_t k = 0; k < n;) {
				keep = fault_pass_run(fb, 3, n - k);
				for (uint32_t j = 0; j < keep; j++)
					emitted_add(&eb, numbered(id + k + j));
				k += keep;
				if (k == n)
					break;
				if (!fault_drop_next(fb))
					fault_input(fb, 3, numbered(id + k));
				k++;
			}
			id += n;
		}
		fault_flush(fa);
		fault_flush(fb);
		CHECK_EQ(ea.n, eb.n);
		CHECK(memcmp(ea.id, eb.id, sizeof(ea.id)) == 0);
		CHECK(memcmp(ea.sum, eb.sum, sizeof(ea.sum)) == 0);
		CHECK_EQ(fault_get_stats(fa)->frames, fault_get_stats(fb)->frames);
		CHECK_EQ(fault_get_stats(fa)->dropped, fault_get_stats(fb)->dropped);
		CHECK_EQ(fault_get_stats(fa)->duplicated, fault_get_stats(fb)->duplicated);
		CHECK_EQ(fault_get_stats(fa)->reordered, fault_get_stats(fb)->reordered);
		CHECK_EQ(fault_get_stats(fa)->corrupted, fault_get_stats(fb)->corrupted);
		if (seed == 1)
			CHECK(fault_get_stats(fb)->run_passed > 0);
		fault_free(fa);
		fault_free(fb);
	}
}

/* ---- frames held back by the test ------------------------------------------- */

/* Both devices' MACs known to the switch (else a frame to an unknown one
 * floods, which splits runs): a 1-byte WRITE each way. */
static void prime(struct pair *p)
{
	struct virtio_rdma_cq_req wc[1];
	struct fk_sge s1 = { p->ma.buf + (1u << 21), 1, p->ma.lkey };
	struct fk_sge s2 = { p->mb.buf + (1u << 21), 1, p->mb.lkey };
	struct fk_wr w1 = { .wr_id = 1, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &s1, .nsge = 1,
			    .remote_addr = (uintptr_t)p->mb.buf + (1u << 21) + 8,
			    .rkey = p->mb.rkey };
	struct fk_wr w2 = w1;
	struct fk_qp qb = p->qb;

	w2.sge = &s2;
	w2.remote_addr = (uintptr_t)p->ma.buf + (1u << 21) + 8;
	w2.rkey = p->ma.rkey;
	if (fk_post_send(p->a, &p->qa, &w1) || fk_post_send(p->b, &qb, &w2) ||
	    fk_wait_cq(&p->env, p->a, p->cqa, wc, 1, WAIT_MS) != 1 ||
	    fk_wait_cq(&p->env, p->b, p->cqb, wc, 1, WAIT_MS) != 1)
		abort();
	fk_ring_reap(p->qa.sq);
	fk_ring_reap(p->qb.sq);
	p->qb = qb;
}

/* Frames dev sends stay on its wire queue (not on the switch) ... */
static void hold(struct fk_dev *d)
{
	d->attached = false;
}

/* ... until given to the switch again, the one at index drop (if any)
 * left out. */
static void release(struct pair *p, struct fk_dev *d, struct pkt_queue *q)
{
	struct pkt *f;

	d->attached = true;
	(void)p;
	while ((f = pkt_queue_pop(q)))
		sw_input(p->env.sw, &d->port, f);
}

/* b's responder drops out-of-sequence packets (IBTA go-back-N, as Linux
 * rxe) and a's requester knows it: a rewind sends everything again. */
static void go_back_n(struct pair *p)
{
	roce_tp_set_keep(p->b->tp, 0);
	((struct roce_tq *)rres_qp_lookup(&p->a->rd, p->qa.qpn)->transport)->peer_keeps =
		ROCE_PEER_KEEPS_NO;
}

static bool wire_has(void *arg)
{
	return ((struct fk_dev *)arg)->wire.len > 0;
}

/* A frame lost inside a run: the responder NAKs its PSN and the requester
 * goes back into the middle of the run it sent, starting a run there. */
/* Packet 5 of a 16-packet WRITE run lost (its frames split, one left
 * out). keep: b keeps packets 6..15 (roce_keep.c) and a sends packet 5
 * alone again; else (go-back-N) a goes back and sends 5..15 as one run. */
static void rewind_mid_run(bool keep)
{
	struct roce_tq *ta;
	uint64_t ref0;
	struct virtio_rdma_cq_req wc[1];
	struct pkt_queue q, out;
	struct pair p;
	struct pkt *r, *f;
	uint32_t i = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	if (!keep)
		go_back_n(&p);
	prime(&p);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	ref0 = p.b->tp->stats.rx_by_ref;
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 2, false, 3, -1));
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r = pkt_queue_pop(&p.a->wire);
	REQUIRE(r);
	CHECK(r->flags & PKT_F_RUN);
	CHECK_EQ(r->npkts, 16);
	pkt_queue_init(&q);
	pkt_queue_init(&out);
	REQUIRE(roce_run_split(r, &q) == 0);
	pkt_free(r);
	CHECK_EQ(q.len, 16);
	while ((f = pkt_queue_pop(&q))) {
		if (i++ == 5)
			pkt_free(f); /* PSN first + 5 lost */
		else
			pkt_queue_push(&out, f);
	}
	release(&p, p.a, &out);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 3, p.mb.buf + 3, 16 * MTU) == 0);
	CHECK_EQ(p.mb.buf[3 + 16 * MTU], 0x5a);
	CHECK_EQ(p.a->tp->stats.naks_rcvd, 1);
	if (keep) {
		/* sent again: packet 5 alone, framed, and (no timer here) the
		 * last packet sent, which b answers as a duplicate; 6..15
		 * executed from b's keep, acknowledged with 5 */
		CHECK_EQ(p.a->tp->stats.rewinds, 0);
		CHECK_EQ(p.a->tp->stats.nak_holds, 1);
		CHECK_EQ(p.a->tp->stats.hold_skips, 10);
		CHECK_EQ(p.a->tp->stats.tx_runs, 1);
		CHECK_EQ(p.a->tp->stats.tx_run_pkts, 16);
		CHECK_EQ(p.a->tp->stats.retransmits, 2);
		/* (nothing went again in a burst: the window stays) */
		CHECK_EQ(p.a->tp->stats.window_cuts, 0);
		CHECK_EQ(roce_recover_window(ta), ROCE_TP_WINDOW);
		CHECK_EQ(p.b->tp->stats.rx_dup, 1);
		CHECK_EQ(p.b->tp->stats.rx_kept, 10);
		CHECK_EQ(p.b->tp->stats.rx_kept_used, 10);
		CHECK_EQ(p.b->tp->stats.rx_kept_freed, 0);
		CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 1); /* (the dup is not placed) */
		CHECK_EQ(p.b->tp->keep_frames, 0);
	} else {
		/* sent again: packets 5..15 as one run (MIDDLE ... LAST) */
		CHECK_EQ(p.a->tp->stats.rewinds, 1);
		CHECK_EQ(p.a->tp->stats.tx_runs, 2);
		CHECK_EQ(p.a->tp->stats.tx_run_pkts, 16 + 11);
		CHECK_EQ(p.a->tp->stats.retransmits, 11);
		CHECK_EQ(p.a->tp->stats.window_cuts, 1);
		CHECK(roce_recover_window(ta) < ROCE_TP_WINDOW);
		CHECK_EQ(p.b->tp->stats.rx_runs, 1);
		CHECK_EQ(p.b->tp->stats.rx_run_pkts, 11);
		CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 11); /* the split ones copied */
		CHECK_EQ(p.b->tp->stats.rx_kept, 0);
	}
	fk_env_fini(&p.env);
}

static void test_rewind_mid_run(void)
{
	rewind_mid_run(false);
	rewind_mid_run(true);
}

static bool wire_has4(void *arg)
{
	return ((struct fk_dev *)arg)->wire.len >= 4;
}

/* Packet 5 of a 100-packet WRITE lost in its first run (a hole,
 * roce_run_lose): the rest of that run and the next runs are beyond the
 * gap. Whether they come as runs (dropped together, roce_resp_rx_ahead) or
 * as frames (one by one, the lost one not built), the responder counts and
 * NAKs them the same: 94 out of sequence, the NAKs (at the gap and at the
 * 64th after it, coalesced into one frame in one receive batch); the WRITE
 * then completes. test_rx_ahead_same checks the NAK schedule itself. */
static void run_tail_after_gap(bool frames, bool gone, uint64_t *seq_err, uint64_t *naks,
			       uint64_t *lost)
{
	struct virtio_rdma_cq_req wc[1];
	struct pkt_queue q, out;
	struct pkt *r, *f;
	struct pair p;
	uint32_t i = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	go_back_n(&p); /* (the responder's drops are what this compares) */
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 100 * MTU, 3, false, 4, -1));
	REQUIRE(fk_run_until(&p.env, wire_has4, p.a, WAIT_MS));
	CHECK_EQ(p.a->wire.len, 4);
	pkt_queue_init(&q);
	pkt_queue_init(&out);
	while ((r = pkt_queue_pop(&p.a->wire))) {
		REQUIRE(r->flags & PKT_F_RUN);
		if (i++ == 0) {
			uint32_t wire = pkt_wire_len(r);

			CHECK_EQ(r->npkts, 32);
			CHECK_EQ(pkt_npkts(r), 32);
			roce_run_lose(r, 5);
			roce_run_lose(r, 5); /* once */
			CHECK_EQ(r->npkts, 32);
			CHECK_EQ(pkt_npkts(r), 31);
			/* packets 1..31 are MIDDLEs of one size */
			CHECK_EQ(pkt_wire_len(r), wire - (wire - r->len) / 31);
		} else if (gone && i == 2) {
			r->ref.niov = 0; /* a failed fill: its payload is gone */
		}
		pkt_queue_push(&q, r);
	}
	while ((r = pkt_queue_pop(&q))) {
		if (frames) {
			struct pkt_queue fq;

			pkt_queue_init(&fq);
			REQUIRE(roce_run_split(r, &fq) == 0);
			pkt_free(r);
			while ((f = pkt_queue_pop(&fq)))
				pkt_queue_push(&out, f);
		} else {
			pkt_queue_push(&out, r);
		}
	}
	release(&p, p.a, &out);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 4, p.mb.buf + 3, 100 * MTU) == 0);
	CHECK_EQ(p.mb.buf[3 + 100 * MTU], 0x5a);
	CHECK_EQ(p.a->tp->stats.rewinds, p.a->tp->stats.naks_rcvd);
	*seq_err = p.b->tp->stats.rx_seq_err;
	*naks = p.b->tp->stats.naks_sent;
	*lost = p.b->tp->stats.rx_run_lost;
	fk_env_fini(&p.env);
}

/* Holes (roce_run_lose): a run whose packets 0, 7 and 31 were lost splits
 * into the other 29 frames, byte for byte what it split into before, and
 * counts their packets and bytes only; delivered, RC recovers the three
 * and the data arrives intact. */
static void test_run_holes(void)
{
	static const uint32_t lost[] = { 0, 7, 31 };
	struct virtio_rdma_cq_req wc[1];
	struct pkt_queue all, live, out;
	struct pkt *r, *r2, *f, *g;
	struct pair p;
	uint32_t k = 0, bytes = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 40 * MTU, 2, false, 6, -1));
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r = pkt_queue_pop(&p.a->wire);
	REQUIRE(r && (r->flags & PKT_F_RUN) && r->npkts == 32);
	pkt_queue_init(&all);
	pkt_queue_init(&live);
	pkt_queue_init(&out);
	REQUIRE(roce_run_split(r, &all) == 0);
	for (unsigned i = 0; i < 3; i++)
		roce_run_lose(r, lost[i]);
	roce_run_lose(r, 32); /* not a packet of it: nothing */
	CHECK_EQ(r->npkts, 32);
	CHECK_EQ(pkt_npkts(r), 29);
	REQUIRE(roce_run_split(r, &live) == 0);
	CHECK_EQ(live.len, 29);
	while ((f = pkt_queue_pop(&all))) {
		if (k == 0 || k == 7 || k == 31) {
			pkt_free(f);
			k++;
			continue;
		}
		g = pkt_queue_pop(&live);
		REQUIRE(g);
		CHECK_EQ(g->len, f->len);
		CHECK(g->len == f->len && memcmp(g->data, f->data, f->len) == 0);
		bytes += g->len;
		pkt_free(f);
		pkt_free(g);
		k++;
	}
	CHECK_EQ(pkt_wire_len(r), bytes);
	pkt_queue_push(&out, r);
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r2 = pkt_queue_pop(&p.a->wire); /* packets 32..39 */
	REQUIRE(r2);
	pkt_queue_push(&out, r2);
	release(&p, p.a, &out);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 6, p.mb.buf + 3, 40 * MTU) == 0);
	CHECK_EQ(p.mb.buf[3 + 40 * MTU], 0x5a);
	/* each lost one sent again alone (with the last packet sent: no
	 * timer), the rest executed from b's keep */
	CHECK_EQ(p.a->tp->stats.retransmits, 3 * 2);
	CHECK_EQ(p.a->tp->stats.rewinds, 0);
	CHECK_EQ(p.b->tp->stats.rx_kept_used, p.b->tp->stats.rx_kept);
	fk_env_fini(&p.env);
}

/* The responder state roce_resp_rx_ahead must leave as the packets one by
 * one would. */
struct ahead_state {
	uint32_t epsn, ooo_hi, ooo_since_nak, ack_psn;
	bool nak_sent, ack_pending;
	uint8_t ack_syndrome;
	uint64_t seq_err, dup;
};

static void ahead_get(const struct roce_tq *tq, struct ahead_state *s)
{
	memset(s, 0, sizeof(*s));
	s->epsn = tq->epsn;
	s->ooo_hi = tq->ooo_hi;
	s->ooo_since_nak = tq->ooo_since_nak;
	s->ack_psn = tq->ack_psn;
	s->nak_sent = tq->nak_sent;
	s->ack_pending = tq->ack_pending;
	s->ack_syndrome = tq->ack_syndrome;
	s->seq_err = tq->tp->stats.rx_seq_err;
	s->dup = tq->tp->stats.rx_dup;
}

/* n WRITE MIDDLE packets from psn, as roce_run_rx gives them (shortcut) or
 * one by one. */
static void ahead_deliver(struct roce_tq *tq, uint32_t psn, uint32_t n, uint64_t ackreq,
			  bool shortcut)
{
	for (uint32_t k = 0; k < n; k++) {
		struct roce_pkt_info pi;
		uint32_t d;

		if (shortcut &&
		    (d = roce_resp_rx_ahead(tq, roce_psn_add(psn, k), n - k, ackreq >> k))) {
			k += d - 1;
			continue;
		}
		memset(&pi, 0, sizeof(pi));
		pi.opcode = ROCE_OP_RC_RDMA_WRITE_MIDDLE;
		pi.mask = roce_opcode_mask(pi.opcode);
		pi.transport = ROCE_TRANSPORT_RC;
		pi.psn = roce_psn_add(psn, k);
		pi.ackreq = (ackreq >> k) & 1;
		pi.payload_len = MTU;
		roce_resp_rx(tq, &pi, NULL);
	}
}

static uint64_t ahead_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* roce_resp_rx_ahead then one by one against one by one only, from random
 * responder states after a sequence NAK (ePSN near the 2^24 wrap or
 * anywhere, a gap of 1 to 300, 0 to 63 packets since the NAK, the highest
 * out-of-sequence PSN at or past the run's or before it, an RNR NAK out,
 * AckReq bits, the NAK long ago (the time rule due) or no clock (never
 * due)): the same counters, NAK schedule and pending ACK. With the clock,
 * one AckReq packet and no NAK again before it (the packet count): a NAK
 * sent again restarts the time rule's half probe interval, which a second
 * AckReq packet would measure in real time. */
static void test_rx_ahead_same(void)
{
	struct ahead_state a, b;
	struct roce_tq *tq;
	struct loop *loop;
	struct pair p;
	uint64_t x = 88172645463325252ull;
	unsigned bad = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	tq = rres_qp_lookup(&p.b->rd, p.qb.qpn)->transport;
	REQUIRE(tq && tq->comm_est);
	loop = tq->tp->loop;
	for (unsigned t = 0; t < 20000; t++) {
		uint32_t e = t % 3 ? (uint32_t)(ahead_rand(&x) & ROCE_PSN_MASK) :
				     ROCE_PSN_MASK - (uint32_t)(ahead_rand(&x) % 40);
		uint32_t psn = roce_psn_add(e, 1 + (uint32_t)(ahead_rand(&x) % 300));
		uint32_t n = 1 + (uint32_t)(ahead_rand(&x) % 32);
		uint32_t s0 = (uint32_t)(ahead_rand(&x) % 64);
		uint32_t hi = ahead_rand(&x) % 5 ? roce_psn_add(psn, ROCE_PSN_MASK -
								 (uint32_t)(ahead_rand(&x) % 3)) :
						   roce_psn_add(psn, (uint32_t)(ahead_rand(&x) % 4));
		bool rnr = ahead_rand(&x) % 16 == 0, timed = t & 1;
		uint64_t ackreq = 0;

		for (uint32_t j = 0; j < n; j++)
			if (ahead_rand(&x) % 6 == 0)
				ackreq |= 1ull << j;
		if (timed) {
			ackreq &= ackreq ? -ackreq : 0; /* the lowest only */
			s0 %= 64 - n;                   /* s0 + n < 64 */
		}
		if (ahead_rand(&x) % 3 == 0)
			ackreq |= ~0ull << n; /* bits beyond the run (after a cut) */
		for (int m = 0; m < 2; m++) {
			struct ahead_state *st = m ? &b : &a, s0st;

			tq->epsn = e;
			tq->nak_sent = true;
			tq->nak_rnr = rnr;
			tq->ooo_since_nak = s0;
			tq->ooo_hi = hi;
			tq->nak_ns = 0;
			tq->ack_pending = false;
			tq->tp->loop = timed ? loop : NULL;
			ahead_get(tq, &s0st);
			ahead_deliver(tq, psn, n, ackreq, m == 0);
			tq->tp->loop = loop;
			ahead_get(tq, st);
			st->seq_err -= s0st.seq_err;
			st->dup -= s0st.dup;
		}
		if (memcmp(&a, &b, sizeof(a)) && bad++ < 5)
			printf("#   trial %u: epsn %#x psn %#x n %u since %u hi %#x ackreq %#llx "
			       "differs: seq_err %llu / %llu, since %u / %u, ack %d %#x / %d %#x\n",
			       t, e, psn, n, s0, hi, (unsigned long long)ackreq,
			       (unsigned long long)a.seq_err, (unsigned long long)b.seq_err,
			       a.ooo_since_nak, b.ooo_since_nak, a.ack_pending, a.ack_psn,
			       b.ack_pending, b.ack_psn);
	}
	tq->ack_pending = false;
	tq->nak_sent = false;
	CHECK_EQ(bad, 0);
	fk_env_fini(&p.env);
}

static void test_run_tail_after_gap(void)
{
	uint64_t se_run, se_frames, nak_run, nak_frames, lost;

	run_tail_after_gap(false, false, &se_run, &nak_run, &lost);
	run_tail_after_gap(true, false, &se_frames, &nak_frames, &lost);
	CHECK_EQ(se_run, 94);
	CHECK_EQ(se_frames, 94);
	CHECK_EQ(nak_run, nak_frames);
	CHECK(nak_run >= 1);
	/* a run beyond the gap whose payload is gone counts as lost, as one by
	 * one, not as out of sequence */
	run_tail_after_gap(false, true, &se_run, &nak_run, &lost);
	CHECK_EQ(se_run, 62);
	CHECK_EQ(lost, 32);
}

/* ---- out-of-sequence packets kept by the responder (roce_keep.c) ---- */

/* a's first frame (a run of n packets) split into frames, packets of the
 * mask lose left out, the others given to the switch as a's; a stays off
 * the switch, so what it sends next waits on a's wire. */
static void keep_deliver_mask(struct pair *p, uint32_t n, uint64_t lose)
{
	struct pkt_queue q;
	struct pkt *r, *f;
	uint32_t i = 0;

	REQUIRE(fk_run_until(&p->env, wire_has, p->a, WAIT_MS));
	r = pkt_queue_pop(&p->a->wire);
	REQUIRE(r && (r->flags & PKT_F_RUN) && r->npkts == n);
	pkt_queue_init(&q);
	REQUIRE(roce_run_split(r, &q) == 0);
	pkt_free(r);
	while ((f = pkt_queue_pop(&q))) {
		if ((lose >> i++) & 1)
			pkt_free(f);
		else
			sw_input(p->env.sw, &p->a->port, f);
	}
}

static void keep_deliver(struct pair *p, uint32_t n, uint32_t lose)
{
	keep_deliver_mask(p, n, 1ull << lose);
}

/* An n-packet WRITE from a to b, the packets of the mask lose lost on the
 * way (nothing else): it completes, the data intact. */
static void write_lossy(struct pair *p, uint32_t n, uint32_t seed, uint64_t lose)
{
	struct virtio_rdma_cq_req wc[1];

	hold(p->a);
	REQUIRE(post_op(p, VIRTIO_IB_WR_RDMA_WRITE, n * MTU, 1, false, seed, -1));
	keep_deliver_mask(p, n, lose);
	p->a->attached = true;
	CHECK_EQ(fk_wait_cq(&p->env, p->a, p->cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p->ma.buf + 1 + seed % 61, p->mb.buf + 3, n * MTU) == 0);
	CHECK_EQ(p->mb.buf[3 + n * MTU], 0x5a);
	fk_ring_reap(p->qa.sq);
}

static bool a_sent(void *arg)
{
	return ((struct pair *)arg)->a->wire.len > 0;
}

/* Kept frames go when the QP leaves the states that execute requests
 * (ERR, RESET) or goes away: freed and counted, none left behind (ASan
 * checks the last). */
static void test_keep_flushed(void)
{
	static const uint8_t to[] = { VIRTIO_IB_QPS_ERR, VIRTIO_IB_QPS_RESET, 0 };

	for (unsigned t = 0; t < 3; t++) {
		uint64_t out0;
		struct pair p;

		pair_init(&p, VIRTIO_IB_QPT_RC);
		prime(&p);
		out0 = pkt_outstanding();
		hold(p.a);
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 7, -1));
		keep_deliver(&p, 16, 5);
		/* a sends packet 5 again (on its wire, not delivered) */
		REQUIRE(fk_run_until(&p.env, a_sent, &p, WAIT_MS));
		CHECK_EQ(p.b->tp->stats.rx_kept, 10);
		CHECK_EQ(p.b->tp->keep_frames, 10);
		CHECK_EQ(p.b->tp->stats.rx_seq_err, 10);
		CHECK_EQ(p.b->tp->stats.naks_sent, 1);
		p.a->attached = true; /* (detached, its port would outlive it) */
		if (!to[t]) {
			fk_env_fini(&p.env); /* destroyed with them */
			continue;
		}
		CHECK_EQ(fk_modify(p.b, p.qb.qpn, to[t], 0, NULL), 0);
		CHECK_EQ(p.b->tp->keep_frames, 0);
		CHECK_EQ(p.b->tp->stats.rx_kept_freed, 10);
		CHECK_EQ(p.b->tp->stats.rx_kept_used, 0);
		/* nothing of the WRITE placed beyond packet 4 */
		CHECK_EQ(p.mb.buf[3 + 5 * MTU], 0x5a);
		while (p.a->wire.len)
			pkt_free(pkt_queue_pop(&p.a->wire));
		CHECK_EQ(pkt_outstanding(), out0);
		fk_env_fini(&p.env);
	}
}

/* A go-back-N requester (Linux rxe; here a told its peer keeps nothing)
 * sends everything after the lost packet again: b executes packets 5..15 of
 * the SEND from what came again, frees the kept ones unused, and completes
 * the receive exactly once with the data. */
static void test_keep_go_back_n_requester(void)
{
	struct virtio_rdma_cq_req wc[2];
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	((struct roce_tq *)rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport)->peer_keeps =
		ROCE_PEER_KEEPS_NO;
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_SEND, 16 * MTU, 2, false, 8, 16 * MTU));
	keep_deliver(&p, 16, 5);
	p.a->attached = true;
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(fk_wait_cq(&p.env, p.b, p.cqb, wc, 2, 0), 1);
	CHECK_EQ(wc[0].wr_id, 908);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].byte_len, 16 * MTU);
	CHECK(memcmp(p.ma.buf + 1 + 8, p.mb.buf + 3, 16 * MTU) == 0);
	CHECK_EQ(p.mb.buf[3 + 16 * MTU], 0x5a);
	CHECK_EQ(p.a->tp->stats.rewinds, 1);
	CHECK_EQ(p.a->tp->stats.retransmits, 11);
	CHECK_EQ(p.a->tp->stats.nak_holds, 0);
	CHECK_EQ(p.b->tp->stats.rx_kept, 10);
	CHECK_EQ(p.b->tp->stats.rx_kept_used, 0);
	CHECK_EQ(p.b->tp->stats.rx_kept_freed, 10);
	CHECK_EQ(p.b->tp->keep_frames, 0);
	fk_env_fini(&p.env);
}

/* Against a responder that keeps nothing (IBTA go-back-N, as rxe), three
 * WRITEs each losing packet 5 of 16, the WRITEs intact:
 *  - the first loss: a sends 5 alone (with the last packet sent: no timer
 *    here), b answers with a NAK for 6; then 6..7, 8..11 (twice as many
 *    each round: it could be a burst), then goes back for 12..15:
 *    2 + 3 + 5 + 4 packets again; one short answer counted;
 *  - the second: 5 alone again, the second short answer: a has learnt
 *    that b keeps nothing and goes back for 6..15 (2 + 10);
 *  - the third goes back at once (11). */
static void test_keep_learns_go_back_n(void)
{
	struct roce_tq *ta;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	roce_tp_set_keep(p.b->tp, 0);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	prime(&p);
	for (unsigned m = 0; m < 3; m++) {
		uint64_t rx0 = p.a->tp->stats.retransmits;

		write_lossy(&p, 16, 9 + m, 1ull << 5);
		static const uint64_t again[] = { 2 + 3 + 5 + 4, 2 + 10, 11 }, holds[] = { 3, 4, 4 };

		CHECK_EQ(p.a->tp->stats.retransmits - rx0, again[m]);
		CHECK_EQ(p.a->tp->stats.nak_holds, holds[m]);
		CHECK_EQ(p.a->tp->stats.rewinds, m + 1);
		/* once per loss that went back beyond a round of resends:
		 * not the first (its last go-back resent 4 after 8) */
		CHECK_EQ(p.a->tp->stats.window_cuts, m);
		CHECK_EQ(ta->peer_keeps, m ? ROCE_PEER_KEEPS_NO : ROCE_PEER_KEEPS_UNKNOWN);
	}
	CHECK_EQ(p.b->tp->stats.rx_kept, 0);
	fk_env_fini(&p.env);
}

/* More out-of-sequence frames than a QP keeps (ROCE_TP_KEEP_FRAMES): the
 * first 64 after the gap are kept, the rest dropped (rx_keep_full); the
 * answer to the packet sent again stops at the first one dropped, which a
 * sends again with the rest after it (no timer here: nothing may hang).
 * The last packet, sent again with the first (no timer), is kept too. */
static void test_keep_full(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct pkt_queue q;
	struct pkt *r, *f;
	struct pair p;
	uint32_t i = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 100 * MTU, 3, false, 11, -1));
	REQUIRE(fk_run_until(&p.env, wire_has4, p.a, WAIT_MS));
	pkt_queue_init(&q);
	while ((r = pkt_queue_pop(&p.a->wire))) {
		REQUIRE(roce_run_split(r, &q) == 0);
		pkt_free(r);
	}
	CHECK_EQ(q.len, 100);
	while ((f = pkt_queue_pop(&q))) {
		if (i++ == 5)
			pkt_free(f);
		else
			sw_input(p.env.sw, &p.a->port, f);
	}
	p.a->attached = true;
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 11, p.mb.buf + 3, 100 * MTU) == 0);
	CHECK_EQ(p.mb.buf[3 + 100 * MTU], 0x5a);
	CHECK_EQ(p.b->tp->stats.rx_kept, ROCE_TP_KEEP_FRAMES + 1);
	CHECK_EQ(p.b->tp->stats.rx_keep_full, 94 - ROCE_TP_KEEP_FRAMES);
	CHECK_EQ(p.b->tp->stats.rx_kept_used + p.b->tp->stats.rx_kept_freed,
		 ROCE_TP_KEEP_FRAMES + 1);
	CHECK(p.a->tp->stats.hold_skips >= ROCE_TP_KEEP_FRAMES);
	CHECK_EQ(p.b->tp->keep_frames, 0);
	fk_env_fini(&p.env);
}

/* A burst lost (packets 5..8 of 16): a sends 5, then 6 and 7 (the answer
 * stopped at 6), then 8, and b executes 9..15 from its keep; a goes on
 * treating b as keeping (one short answer per loss counts, not each round
 * of the same loss). */
static void test_keep_burst(void)
{
	struct roce_tq *ta;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	prime(&p);
	write_lossy(&p, 16, 12, 0xfull << 5);
	CHECK_EQ(p.a->tp->stats.rewinds, 0);
	CHECK(ta->peer_keeps != ROCE_PEER_KEEPS_NO);
	CHECK_EQ(p.b->tp->stats.rx_kept, 7);
	CHECK_EQ(p.b->tp->stats.rx_kept_used, 7);
	fk_env_fini(&p.env);
}

/* A go-back-N requester sending a lost burst again one packet at a time (a
 * slow link: b answers each before the next comes) gets one sequence NAK
 * from b, not one more for each packet it sends again. */
static void test_keep_paced_go_back_n(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct pair p;
	int got = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	((struct roce_tq *)rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport)->peer_keeps =
		ROCE_PEER_KEEPS_NO;
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 13, -1));
	keep_deliver_mask(&p, 16, 0xfull << 5);
	p.a->tp->run_max = 1; /* one frame per packet */
	while (!got) {
		struct pkt *f;

		REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
		f = pkt_queue_pop(&p.a->wire);
		sw_input(p.env.sw, &p.a->port, f);
		fk_spin(&p.env, 20);
		got = fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, 0);
	}
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 13, p.mb.buf + 3, 16 * MTU) == 0);
	CHECK_EQ(p.b->tp->stats.naks_sent, 1);
	CHECK_EQ(p.a->tp->stats.rewinds, 1);
	CHECK_EQ(p.a->tp->stats.retransmits, 11);
	p.a->attached = true;
	fk_env_fini(&p.env);
}

/* Packet 5 lost, then the first packet a sends again lost too: without a
 * retransmit timer (timeout 0) the last packet sent, sent again with it,
 * makes b NAK again; with one, a probe of those packets (hold_probes) does
 * it. Nothing hangs. */
static void test_keep_resend_lost(void)
{
	for (unsigned timer = 0; timer < 2; timer++) {
		struct virtio_rdma_cq_req wc[1];
		struct pair p;
		struct pkt *f;

		pair_init_t(&p, VIRTIO_IB_QPT_RC, timer ? 14 : 0);
		prime(&p);
		hold(p.a);
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 14, -1));
		keep_deliver(&p, 16, 5);
		REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
		pkt_free(pkt_queue_pop(&p.a->wire)); /* packet 5 again: lost */
		p.a->attached = true;
		while ((f = pkt_queue_pop(&p.a->wire)))
			sw_input(p.env.sw, &p.a->port, f);
		CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK(memcmp(p.ma.buf + 1 + 14, p.mb.buf + 3, 16 * MTU) == 0);
		if (timer)
			CHECK(p.a->tp->stats.hold_probes + p.a->tp->stats.probes >= 1);
		CHECK_EQ(p.b->tp->keep_frames, 0);
		fk_env_fini(&p.env);
	}
}

/* PSN of frame f (packet 0 of a run). */
static uint32_t frame_psn(struct pkt *f)
{
	struct roce_pkt_info pi = { .psn = 0 };

	CHECK_EQ(roce_pkt_parse_pkt(f, 0, &pi), 0);
	return pi.psn;
}

/* After a window cut, a run waits until the window has room for a whole
 * run while packets are in flight: a send window of 40 PSNs sends 32, then
 * nothing new (not the 8 that fit) until their ACK, then 32 again. Within
 * one WRITE of 64 packets, or (two) at the start of a second WRITE. */
static void run_waits_for_window(bool two)
{
	struct virtio_rdma_cq_req wc[2];
	struct roce_tq *ta;
	struct pkt *r, *f;
	struct psec ps;
	struct pair p;
	uint32_t psn0;

	pair_init_t(&p, VIRTIO_IB_QPT_RC, 14); /* (without a timer nothing waits) */
	fk_dev_pin(p.b, &ps); /* (b is local: only then runs wait) */
	prime(&p);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	ta->cwnd = 40;
	hold(p.a);
	if (two) {
		/* (the same source and destination: the second one's data
		 * is what must arrive) */
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 32 * MTU, 1, false, 15, -1));
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 32 * MTU, 1, false, 15 + 61, -1));
	} else {
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 64 * MTU, 1, false, 15, -1));
	}
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r = pkt_queue_pop(&p.a->wire);
	REQUIRE(r && (r->flags & PKT_F_RUN));
	CHECK_EQ(r->npkts, 32);
	psn0 = frame_psn(r);
	fk_spin(&p.env, 20);
	/* (a loss probe may send one of the 32 again: nothing beyond them) */
	while ((f = pkt_queue_pop(&p.a->wire))) {
		CHECK(roce_psn_diff(frame_psn(f), psn0) < 32);
		pkt_free(f);
	}
	sw_input(p.env.sw, &p.a->port, r);
	for (;;) {
		REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
		f = pkt_queue_pop(&p.a->wire);
		if (roce_psn_diff(frame_psn(f), psn0) >= 32)
			break;
		sw_input(p.env.sw, &p.a->port, f);
	}
	CHECK_EQ(frame_psn(f), roce_psn_add(psn0, 32));
	CHECK((f->flags & PKT_F_RUN) && f->npkts == 32);
	p.a->attached = true;
	sw_input(p.env.sw, &p.a->port, f);
	while ((f = pkt_queue_pop(&p.a->wire)))
		sw_input(p.env.sw, &p.a->port, f);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, two ? 2 : 1, WAIT_MS), two ? 2 : 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	if (two)
		CHECK_EQ(wc[1].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 15, p.mb.buf + 3, (two ? 32 : 64) * MTU) == 0);
	psec_unregister(&ps);
	fk_env_fini(&p.env);
}

/* The same to a peer that is not a local device (its runs would be split
 * into frames on the way): the 8 PSNs that fit go at once. */
static void run_to_network_does_not_wait(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct roce_tq *ta;
	struct pkt *r, *f;
	struct pair p;
	uint32_t psn0;

	pair_init_t(&p, VIRTIO_IB_QPT_RC, 14);
	prime(&p);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	ta->cwnd = 40;
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 64 * MTU, 1, false, 16, -1));
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r = pkt_queue_pop(&p.a->wire);
	REQUIRE(r && (r->flags & PKT_F_RUN) && r->npkts == 32);
	psn0 = frame_psn(r);
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	f = pkt_queue_pop(&p.a->wire);
	CHECK_EQ(frame_psn(f), roce_psn_add(psn0, 32));
	CHECK((f->flags & PKT_F_RUN) && f->npkts == 8);
	p.a->attached = true;
	sw_input(p.env.sw, &p.a->port, r);
	sw_input(p.env.sw, &p.a->port, f);
	while ((f = pkt_queue_pop(&p.a->wire)))
		sw_input(p.env.sw, &p.a->port, f);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 1 + 16, p.mb.buf + 3, 64 * MTU) == 0);
	fk_env_fini(&p.env);
}

/* Toward a RoCE device of the same loop, silence means a loss far sooner
 * than over a network: the probe floor, and with it the wait before
 * packets sent again after a NAK go once more, is
 * ROCE_TP_PROBE_MIN_LOCAL_NS. Not toward a device of another loop, or one
 * whose RoCE runs elsewhere (roce=off: a guest's rxe). */
static void test_probe_min_local(void)
{
	uint64_t to = roce_ack_timeout_ns(14);
	struct roce_tq *ta, *tb;
	struct psec ps;
	struct pair p;

	pair_init_t(&p, VIRTIO_IB_QPT_RC, 14);
	prime(&p);
	ta = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	tb = rres_qp_lookup(&p.b->rd, p.qb.qpn)->transport;
	CHECK_EQ(roce_recover_probe_min(ta), ROCE_TP_PROBE_MIN_NS);
	/* Sent again after a NAK, unanswered: once more after 4 round trips
	 * (4 ms here), at most the floor. */
	ta->srtt_ns = 1000000;
	ta->nak_hold = true;
	ta->nak_hold_probed = false;
	ta->nak_hold_ns = 5000000;
	CHECK_EQ(roce_recover_deadline(ta, to), 5000000 + ROCE_TP_PROBE_MIN_NS);
	fk_dev_pin(p.b, &ps); /* b is a device of a's daemon */
	CHECK_EQ(roce_recover_probe_min(ta), ROCE_TP_PROBE_MIN_LOCAL_NS);
	CHECK_EQ(roce_recover_deadline(ta, to), 5000000 + ROCE_TP_PROBE_MIN_LOCAL_NS);
	/* A loss probe: 4 round trips (4 us here) after progress, at least
	 * the floor. */
	ta->nak_hold = false;
	ta->probes = 0;
	ta->srtt_ns = 1000;
	ta->progress_ns = 7000000;
	CHECK_EQ(roce_recover_deadline(ta, to), 7000000 + ROCE_TP_PROBE_MIN_LOCAL_NS);
	psec_unregister(&ps);
	ps.home = &ps; /* another loop's */
	REQUIRE(psec_register(&ps) == 0);
	CHECK(roce_neigh_local(ta->tp->neigh, ta->path.dgid));
	CHECK_EQ(roce_recover_deadline(ta, to), 7000000 + ROCE_TP_PROBE_MIN_NS);
	psec_unregister(&ps);
	ps.home = NULL; /* no RoCE engine of ours */
	REQUIRE(psec_register(&ps) == 0);
	CHECK_EQ(roce_recover_probe_min(ta), ROCE_TP_PROBE_MIN_NS);
	psec_unregister(&ps);
	CHECK_EQ(roce_recover_deadline(ta, to), 7000000 + ROCE_TP_PROBE_MIN_NS);
	CHECK_EQ(roce_recover_probe_min(tb), ROCE_TP_PROBE_MIN_NS); /* a is not pinned */
	CHECK(roce_neigh_near(ta->tp->neigh, rres_gid_get(&p.a->rd, 1))); /* its own */
	fk_env_fini(&p.env);
}

static void test_run_waits_for_window(void)
{
	run_waits_for_window(false);
	run_waits_for_window(true);
	run_to_network_does_not_wait();
}

/* a's first n packets, as frames, packet lose left out, given to the
 * switch as a's (a stays off it). */
static void keep_deliver_frames(struct pair *p, uint32_t n, uint32_t lose)
{
	struct pkt_queue q;
	struct pkt *r, *f;
	uint32_t i = 0;

	pkt_queue_init(&q);
	while (q.len < n) {
		REQUIRE(fk_run_until(&p->env, wire_has, p->a, WAIT_MS));
		r = pkt_queue_pop(&p->a->wire);
		if (r->flags & PKT_F_RUN) {
			REQUIRE(roce_run_split(r, &q) == 0);
			pkt_free(r);
		} else {
			pkt_queue_push(&q, r);
		}
	}
	while ((f = pkt_queue_pop(&q))) {
		if (i++ == lose)
			pkt_free(f);
		else
			sw_input(p->env.sw, &p->a->port, f);
	}
}

/* Packet 5 of 100 lost and the packet sent again for it lost too, far more
 * than ROCE_TP_RENAK_EVERY packets outstanding: the NAK that follows (the
 * last packet sent again with it when there is no timer, the probe of it
 * with one) is news and recovers, with any transport timeout; a WRITE and
 * then a READ the same way (the last packet sent is the READ request). */
static void test_keep_resend_lost_long(void)
{
	static const uint8_t tos[] = { 0, 10, 14 };

	for (unsigned t = 0; t < 4; t++) {
		struct virtio_rdma_cq_req wc[2];
		bool read = t == 3;
		struct pair p;
		struct pkt *f;

		pair_init_t(&p, VIRTIO_IB_QPT_RC, read ? 0 : tos[t]);
		prime(&p);
		hold(p.a);
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, (read ? 16 : 100) * MTU, 1, false,
				21, -1));
		if (read)
			REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_READ, 64, 1, false, 22, -1));
		keep_deliver_frames(&p, read ? 17 : 100, 5);
		REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
		pkt_free(pkt_queue_pop(&p.a->wire)); /* packet 5 again: lost */
		p.a->attached = true;
		while ((f = pkt_queue_pop(&p.a->wire)))
			sw_input(p.env.sw, &p.a->port, f);
		CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, read ? 2 : 1, WAIT_MS), read ? 2 : 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(p.b->tp->keep_frames, 0);
		fk_env_fini(&p.env);
	}
}

/* A kept run with holes (5; 5 and 10) executed again goes up to its next
 * hole and waits there without a NAK: a go-back-N requester sending the
 * packets again one by one gets one NAK in all and goes back once. */
static void test_keep_drain_holes(void)
{
	for (unsigned holes = 1; holes <= 2; holes++) {
		struct virtio_rdma_cq_req wc[1];
		struct pair p;
		struct pkt *r;
		int got = 0;

		pair_init(&p, VIRTIO_IB_QPT_RC);
		((struct roce_tq *)rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport)->peer_keeps =
			ROCE_PEER_KEEPS_NO;
		prime(&p);
		hold(p.a);
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 23, -1));
		REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
		r = pkt_queue_pop(&p.a->wire);
		REQUIRE(r && (r->flags & PKT_F_RUN) && r->npkts == 16);
		roce_run_lose(r, 5);
		if (holes == 2)
			roce_run_lose(r, 10);
		sw_input(p.env.sw, &p.a->port, r);
		p.a->tp->run_max = 1;
		while (!got) {
			REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
			sw_input(p.env.sw, &p.a->port, pkt_queue_pop(&p.a->wire));
			fk_spin(&p.env, 20);
			got = fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, 0);
		}
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK(memcmp(p.ma.buf + 1 + 23, p.mb.buf + 3, 16 * MTU) == 0);
		CHECK_EQ(p.b->tp->stats.naks_sent, 1);
		CHECK_EQ(p.a->tp->stats.rewinds, 1);
		CHECK_EQ(p.a->tp->stats.retransmits, 11);
		CHECK_EQ(p.b->tp->stats.rx_seq_err, 15 - 5 - (holes - 1));
		CHECK_EQ(p.b->tp->stats.rx_kept, p.b->tp->stats.rx_kept_used +
						     p.b->tp->stats.rx_kept_freed);
		p.a->attached = true;
		fk_env_fini(&p.env);
	}
}

static bool a_has_16(void *arg)
{
	return ((struct pair *)arg)->a->wire.len >= 16;
}

/* Frames kept by reference whose payload is filled in while they wait
 * (the sender's memory about to go): executed from their own bytes once
 * the gap fills, not from the memory they referenced (overwritten here).
 * As single frames (each its own reference) and as a run (one reference,
 * filled into a copy the frame owns). */
static void test_keep_filled_while_kept(void)
{
	for (unsigned run = 0; run < 2; run++) {
		struct virtio_rdma_cq_req wc[1];
		struct pkt_ref_stats st0, st1;
		uint8_t want[16 * MTU];
		uint8_t *src;
		struct pair p;
		struct pkt *f;
		uint32_t i = 0;

		pair_init(&p, VIRTIO_IB_QPT_RC);
		prime(&p);
		if (!run)
			p.a->tp->run_max = 1; /* one frame per packet */
		hold(p.a);
		REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 29, -1));
		src = p.ma.buf + 1 + 29 % 61;
		memcpy(want, src, sizeof(want));
		if (run) {
			REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
			f = pkt_queue_pop(&p.a->wire);
			REQUIRE(f && (f->flags & PKT_F_RUN) && f->npkts == 16);
			roce_run_lose(f, 5);
			sw_input(p.env.sw, &p.a->port, f);
		} else {
			REQUIRE(fk_run_until(&p.env, a_has_16, &p, WAIT_MS));
			while ((f = pkt_queue_pop(&p.a->wire))) {
				CHECK(f->flags & PKT_F_PAYLOAD_REF);
				if (i++ == 5)
					pkt_free(f);
				else
					sw_input(p.env.sw, &p.a->port, f);
			}
		}
		/* b keeps 6..15; a sends 5 again (held on its wire) */
		REQUIRE(fk_run_until(&p.env, a_sent, &p, WAIT_MS));
		CHECK_EQ(p.b->tp->keep_frames, run ? 1 : 10);
		pkt_ref_get_stats(&st0);
		pkt_ref_fill_all();
		pkt_ref_get_stats(&st1);
		CHECK(st1.filled - st0.filled >= (run ? 1 : 10));
		memset(src, 0xc3, sizeof(want));
		p.a->attached = true;
		while ((f = pkt_queue_pop(&p.a->wire)))
			sw_input(p.env.sw, &p.a->port, f);
		CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK(memcmp(want, p.mb.buf + 3, sizeof(want)) == 0);
		CHECK_EQ(p.b->tp->stats.rx_kept_used, 10);
		CHECK_EQ(p.b->tp->keep_frames, 0);
		fk_env_fini(&p.env);
	}
}

/* A QP's ring of kept frames is state memory of its device: charged when
 * the QP first keeps a frame, given back when the QP resets. Without room
 * nothing is kept (rx_keep_full) and the requester goes back: the WRITE
 * still completes, its data intact. */
static void test_keep_ring_charged(void)
{
	for (unsigned room = 0; room < 2; room++) {
		struct roce_tq *tb;
		struct pair p;
		uint64_t m0;

		pair_init(&p, VIRTIO_IB_QPT_RC);
		prime(&p);
		tb = rres_qp_lookup(&p.b->rd, p.qb.qpn)->transport;
		m0 = p.b->tp->state_mem;
		if (!room)
			roce_tp_set_state_budget(p.b->tp, m0); /* nothing more */
		write_lossy(&p, 16, 31, 1ull << 5);
		if (room) {
			CHECK_EQ(p.b->tp->stats.rx_kept, 10);
			CHECK_EQ(p.b->tp->stats.rx_keep_full, 0);
			CHECK(tb->keep != NULL);
			CHECK_EQ(p.b->tp->state_mem - m0,
				 ROCE_TP_KEEP_FRAMES * sizeof(struct roce_keep_ent));
			CHECK_EQ(fk_modify(p.b, p.qb.qpn, VIRTIO_IB_QPS_RESET, 0, NULL), 0);
			CHECK(tb->keep == NULL);
		} else {
			CHECK_EQ(p.b->tp->stats.rx_kept, 0);
			CHECK(p.b->tp->stats.rx_keep_full > 0);
			CHECK(p.b->tp->stats.state_refused > 0);
		}
		CHECK_EQ(p.b->tp->state_mem, m0);
		fk_env_fini(&p.env);
	}
}

/* The next frame b sends, parsed (b's frames held, the others given on). */
static bool next_from(struct pair *p, struct fk_dev *b, struct roce_pkt_info *pi,
		      struct pkt **held)
{
	struct pkt *f;

	if (!fk_run_until(&p->env, wire_has, b, WAIT_MS))
		return false;
	f = pkt_queue_pop(&b->wire);
	if (roce_pkt_parse_pkt(f, 0, pi)) {
		pkt_free(f);
		return false;
	}
	*held = f;
	return true;
}

/* A SEND run without a receive WQE: RNR NAK at its first PSN, nothing
 * placed; once a receive is posted it goes through. */
static void test_rnr_in_run(void)
{
	uint64_t ref0;
	struct virtio_rdma_cq_req wc[1];
	struct roce_pkt_info pi;
	struct pkt_queue q;
	struct pkt *nak;
	struct pair p;
	struct fk_sge rs[1];
	uint8_t *dst;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	ref0 = p.b->tp->stats.rx_by_ref;
	dst = p.mb.buf + 3;
	hold(p.b);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_SEND, 8 * MTU, 1, false, 4, -1));
	REQUIRE(next_from(&p, p.b, &pi, &nak));
	CHECK_EQ(pi.opcode, ROCE_OP_RC_ACKNOWLEDGE);
	CHECK_EQ(roce_aeth_syndrome(pi.aeth) & ROCE_AETH_TYPE_MASK, ROCE_AETH_RNR_NAK);
	CHECK_EQ(pi.psn, first_psn(&p));
	CHECK_EQ(p.b->tp->stats.rx_run_pkts, 8);
	CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 0);
	CHECK_EQ(dst[0], 0x5a);
	CHECK_EQ(dst[8 * MTU - 1], 0x5a);
	pkt_queue_init(&q);
	pkt_queue_push(&q, nak);
	rs[0] = (struct fk_sge){ dst, 8 * MTU, p.mb.lkey };
	REQUIRE(fk_post_recv(p.b, &p.qb, 77, rs, 1) == 0);
	release(&p, p.b, &q);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(fk_wait_cq(&p.env, p.b, p.cqb, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].byte_len, 8 * MTU);
	CHECK(memcmp(p.ma.buf + 1 + 4, dst, 8 * MTU) == 0);
	CHECK(p.b->tp->stats.rnr_naks_sent >= 1);
	fk_env_fini(&p.env);
}

/* A SEND run into a receive WQE of 5000 bytes: packet 4 (bytes 4096..5119)
 * does not fit: NAK Invalid Request at first + 4; packets 0..3 placed,
 * nothing of packet 4 or later. */
static void test_len_error_in_run(void)
{
	uint64_t ref0;
	struct virtio_rdma_cq_req wc[1];
	struct roce_pkt_info pi;
	struct pkt_queue q;
	struct pkt *nak;
	struct pair p;
	uint8_t *dst;
	uint32_t first;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	ref0 = p.b->tp->stats.rx_by_ref;
	dst = p.mb.buf + 3;
	hold(p.b);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_SEND, 8 * MTU, 1, false, 5, 5000));
	REQUIRE(next_from(&p, p.b, &pi, &nak));
	first = first_psn(&p);
	CHECK_EQ(pi.opcode, ROCE_OP_RC_ACKNOWLEDGE);
	CHECK_EQ(roce_aeth_syndrome(pi.aeth), ROCE_AETH_NAK_INVALID_REQ);
	CHECK_EQ(pi.psn, roce_psn_add(first, 4));
	CHECK_EQ(p.b->tp->stats.rx_len_err, 1);
	CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 4);
	CHECK(memcmp(p.ma.buf + 1 + 5, dst, 4 * MTU) == 0);
	for (uint32_t k = 4 * MTU; k < 8 * MTU + 64; k++)
		if (dst[k] != 0x5a) {
			CHECK_EQ(dst[k], 0x5a);
			break;
		}
	CHECK_EQ(fk_wait_cq(&p.env, p.b, p.cqb, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_LOC_LEN_ERR);
	pkt_queue_init(&q);
	pkt_queue_push(&q, nak);
	release(&p, p.b, &q);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_REM_INV_REQ_ERR);
	fk_env_fini(&p.env);
}

/* A WRITE run with a bad R_Key: NAK Remote Access Error at its first PSN,
 * nothing placed. */
static void test_access_error_run(void)
{
	uint64_t ref0;
	struct virtio_rdma_cq_req wc[1];
	struct roce_pkt_info pi;
	struct pkt_queue q;
	struct pkt *nak;
	struct pair p;
	struct fk_sge ls[1];
	struct fk_wr wr = { .wr_id = 9, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED };

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	ref0 = p.b->tp->stats.rx_by_ref;
	memset(p.mb.buf, 0x5a, 16 * MTU);
	fk_fill(p.ma.buf, 8 * MTU, 6);
	ls[0] = (struct fk_sge){ p.ma.buf, 8 * MTU, p.ma.lkey };
	wr.sge = ls;
	wr.nsge = 1;
	wr.remote_addr = (uintptr_t)p.mb.buf;
	wr.rkey = p.mb.rkey ^ 0x100;
	hold(p.b);
	REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	REQUIRE(next_from(&p, p.b, &pi, &nak));
	CHECK_EQ(pi.opcode, ROCE_OP_RC_ACKNOWLEDGE);
	CHECK_EQ(roce_aeth_syndrome(pi.aeth), ROCE_AETH_NAK_REM_ACCESS_ERR);
	CHECK_EQ(pi.psn, first_psn(&p));
	CHECK_EQ(p.a->tp->stats.tx_runs, 1);
	CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 0);
	for (uint32_t k = 0; k < 16 * MTU; k++)
		if (p.mb.buf[k] != 0x5a) {
			CHECK_EQ(p.mb.buf[k], 0x5a);
			break;
		}
	pkt_queue_init(&q);
	pkt_queue_push(&q, nak);
	release(&p, p.b, &q);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_REM_ACCESS_ERR);
	fk_env_fini(&p.env);
}

/* The switch counts packets (a run counts the frames it stands for), and a
 * receive queue past its ECN threshold marks a run's packets as it would
 * mark its frames: with a threshold of 1, all but the first of a 16-packet
 * WRITE get CE. */
static void test_run_counts_and_marks(void)
{
	const struct roce_tp_stats *a, *b;
	uint64_t fw0, ta0, tb0, runs0, m0, ce0;
	const struct sw_stats *ss;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	a = &p.a->tp->stats;
	b = &p.b->tp->stats;
	fw0 = sw_get_stats(p.env.sw)->forwarded;
	ta0 = a->tx_frames;
	tb0 = b->tx_frames;
	runs0 = a->tx_runs;
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 7));
	CHECK_EQ(a->tx_runs - runs0, 1);
	ss = sw_get_stats(p.env.sw);
	CHECK_EQ(ss->forwarded - fw0, (a->tx_frames - ta0) + (b->tx_frames - tb0));

	p.b->tp->cc.mark_qlen = 1;
	m0 = b->rx_ce_marked;
	ce0 = b->rx_ce;
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 8));
	CHECK_EQ(b->rx_ce_marked - m0, 15);
	CHECK_EQ(b->rx_ce - ce0, 15);
	fk_env_fini(&p.env);
}

/* A run to a broadcast MAC is split before it floods: every other port gets
 * each of its frames (a run cannot be cloned for several ports), none is
 * dropped. (The receivers' RoCE engines do not take RC frames to a
 * broadcast MAC, so the WRITE itself stays outstanding.) */
struct flood_wait {
	struct fk_dev *c;
	uint64_t until;
};

static bool flood_seen(void *arg)
{
	const struct flood_wait *w = arg;

	return w->c->port.stats.tx_frames >= w->until;
}

static void test_run_flooded(void)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 1u << 20 };
	uint64_t flooded0, b0, runs0;
	struct flood_wait w;
	struct roce_tq *tq;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	w.c = fk_dev_new(&p.env, &dc);
	REQUIRE(w.c != NULL);
	prime(&p);
	tq = rres_qp_lookup(&p.a->rd, p.qa.qpn)->transport;
	memset(tq->path.dmac, 0xff, 6);
	flooded0 = sw_get_stats(p.env.sw)->flooded;
	b0 = p.b->port.stats.tx_frames;
	w.until = w.c->port.stats.tx_frames + 16;
	runs0 = p.a->tp->stats.tx_runs;
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 16 * MTU, 1, false, 9, -1));
	CHECK(fk_run_until(&p.env, flood_seen, &w, WAIT_MS));
	CHECK_EQ(p.a->tp->stats.tx_runs - runs0, 1);
	CHECK_EQ(sw_get_stats(p.env.sw)->flooded - flooded0, 16);
	CHECK_EQ(p.b->port.stats.tx_frames - b0, 16);
	CHECK_EQ(w.c->port.stats.tx_frames, w.until);
	CHECK_EQ(p.b->port.stats.tx_dropped + w.c->port.stats.tx_dropped, 0);
	fk_env_fini(&p.env);
}

/* UC messages go as runs too (by reference; each WR completes once its
 * run was placed), placed in bulk; inline data lives in the WQE: frames. */
static void test_uc_runs_and_inline_framed(void)
{
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_UC);
	prime(&p); /* (b's MAC known: no flooding, which splits runs) */
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 5000, 2, false, 1));
	CHECK(do_op(&p, VIRTIO_IB_WR_SEND, 3000, 1, false, 2));
	CHECK_EQ(p.a->tp->stats.tx_runs, 2);
	CHECK_EQ(p.b->tp->stats.rx_runs, 2);
	/* (the WRITE's MIDDLE packets and LAST; the SEND's one MIDDLE is
	 * no group) */
	CHECK_EQ(p.b->tp->stats.rx_run_bulk, 1);
	CHECK_EQ(p.a->tp->stats.tx_frames, 1 + 5 + 3);
	fk_env_fini(&p.env);

	pair_init(&p, VIRTIO_IB_QPT_RC);
	CHECK(do_op(&p, VIRTIO_IB_WR_SEND, 200, 1, true, 3));
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 256, 1, true, 4));
	CHECK_EQ(p.a->tp->stats.tx_runs, 0);
	CHECK_EQ(p.a->tp->stats.tx_by_ref, 0);
	fk_env_fini(&p.env);
}

/* A packet lost inside a UC run: the responder drops that message (UC has
 * no retransmission), the requester's WR still completes successfully once
 * the run is gone, and the next message arrives whole. */
static void test_uc_run_hole(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct pkt_queue q;
	struct pair p;
	struct pkt *r;

	pair_init(&p, VIRTIO_IB_QPT_UC);
	prime(&p);
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 10 * MTU, 2, false, 5, -1));
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	pkt_queue_init(&q);
	r = pkt_queue_pop(&p.a->wire);
	REQUIRE(r && (r->flags & PKT_F_RUN) && r->npkts == 10);
	roce_run_lose(r, 4);
	pkt_queue_push(&q, r);
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 1), 0); /* (the run refers to it) */
	release(&p, p.a, &q);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].wr_id, 505);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(p.b->tp->stats.rx_seq_err, 1);
	/* (the message, then each of its 5 packets after the hole) */
	CHECK_EQ(p.b->tp->stats.rx_uc_dropped, 1 + 5);
	CHECK_EQ(p.mb.buf[3 + 5 * MTU], 0x5a);
	CHECK_EQ(p.mb.buf[3 + 10 * MTU - 1], 0x5a);
	fk_ring_reap(p.qa.sq);
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 10 * MTU + 9, 3, false, 6));
	fk_env_fini(&p.env);
}

/* A run whose memory goes away while it waits gets its payload in a buffer
 * of its own and is still placed; a run is never cloned. */
static void test_run_fill_and_clone(void)
{
	uint64_t ref0;
	struct virtio_rdma_cq_req wc[1];
	struct pkt_ref_stats r0, r1;
	struct pkt *r;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	prime(&p);
	ref0 = p.b->tp->stats.rx_by_ref;
	hold(p.a);
	REQUIRE(post_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 10 * MTU + 7, 3, false, 8, -1));
	REQUIRE(fk_run_until(&p.env, wire_has, p.a, WAIT_MS));
	r = p.a->wire.head;
	REQUIRE(r && (r->flags & PKT_F_RUN));
	CHECK(pkt_clone(r) == NULL);
	pkt_ref_get_stats(&r0);
	pkt_ref_fill_all();
	pkt_ref_get_stats(&r1);
	CHECK_EQ(r1.filled - r0.filled, 1);
	CHECK_EQ(r1.live, 0);
	CHECK(r->ref.owned != NULL);
	/* the source changes after the fill: the old bytes arrive */
	memset(p.ma.buf + 1 + 8, 0xee, 10 * MTU + 7);
	fk_fill(p.ma.buf + 200000, 10 * MTU + 7, 8);
	{
		struct pkt_queue q = p.a->wire;

		pkt_queue_init(&p.a->wire);
		release(&p, p.a, &q);
	}
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.ma.buf + 200000, p.mb.buf + 3, 10 * MTU + 7) == 0);
	CHECK_EQ(p.b->tp->stats.rx_runs, 1);
	CHECK_EQ(p.b->tp->stats.rx_by_ref - ref0, 11);
	fk_env_fini(&p.env);
}

int main(void)
{
	TEST_PROGRAM("test_roce_run");
	RUN(test_run_sizes);
	RUN(test_read_runs);
	RUN(test_split_equals_framed);
	RUN(test_fault_on_runs);
	RUN(test_message_runs);
	RUN(test_message_runs_split);
	RUN(test_message_runs_fault);
	RUN(test_message_runs_rnr);
	RUN(test_message_runs_access_error);
	RUN(test_fault_pass_run_same);
	RUN(test_rewind_mid_run);
	RUN(test_run_tail_after_gap);
	RUN(test_run_holes);
	RUN(test_keep_flushed);
	RUN(test_keep_go_back_n_requester);
	RUN(test_keep_learns_go_back_n);
	RUN(test_keep_full);
	RUN(test_keep_burst);
	RUN(test_keep_paced_go_back_n);
	RUN(test_keep_resend_lost);
	RUN(test_run_waits_for_window);
	RUN(test_probe_min_local);
	RUN(test_keep_resend_lost_long);
	RUN(test_keep_drain_holes);
	RUN(test_keep_filled_while_kept);
	RUN(test_keep_ring_charged);
	RUN(test_rx_ahead_same);
	RUN(test_rnr_in_run);
	RUN(test_len_error_in_run);
	RUN(test_access_error_run);
	RUN(test_run_counts_and_marks);
	RUN(test_run_flooded);
	RUN(test_uc_runs_and_inline_framed);
	RUN(test_uc_run_hole);
	RUN(test_run_fill_and_clone);
	return TEST_DONE();
}
