/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One copy between local devices (docs/design.md, "One copy between local
 * devices"): RC WRITE and SEND packets between two devices of one switch
 * carry a reference to the requester's memory and the responder copies the
 * payload from there (counted: tx_by_ref, rx_by_ref); data byte for byte,
 * completions as before; READ responses the same way the other way round.
 * UC too, each WR completing once no frame refers to it; inline data is
 * copied. With a
 * capture the payload is filled in first (the frame path) and the captured
 * bytes are the message's; the fault injector fills in only what it
 * corrupts; a mapping that goes away first fills in the frames that point
 * into it.
 */
#include "../harness.h"
#include "roce/roce_icrc.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 60000

struct pair {
	struct fk_env env;
	union {
		struct fk_rc_pair rc;
		struct { FK_RC_PAIR_MEMBERS };
	};
};

#define BUF_SIZE ((2u << 20) + 8192)

static void pair_init_at(struct pair *p, uint8_t type, bool loopback)
{
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 16u << 20, .max_send_sge = 8,
				 .max_recv_sge = 8 };
	struct fk_qp_cfg qc = { .type = type, .max_send_sge = 4, .max_recv_sge = 4,
				.max_inline = 256, .sq_num = 64, .rq_num = 64,
				.max_send_wr = 64, .max_recv_wr = 64 };
	struct fk_path path;

	memset(p, 0, sizeof(*p));
	fk_path_default(&path);
	if (fk_env_init(&p->env, true))
		abort();
	p->a = fk_dev_new(&p->env, &dc);
	p->b = loopback ? p->a : fk_dev_new(&p->env, &dc);
	fk_rc_pair_init(&p->rc, &qc, &path, 256, 128, BUF_SIZE);
}

static void pair_init(struct pair *p, uint8_t type)
{
	pair_init_at(p, type, false);
}

/* Packets of a len-byte message at RoCE MTU 1024 (fk_path_default). */
static uint64_t npkts(uint32_t len)
{
	return (len + 1023) / 1024;
}

/* One op from a to b (len bytes in nsge SGEs, or inline), both completions
 * and the data checked. Returns false on a failed check. */
static bool do_op(struct pair *p, uint8_t op, uint32_t len, unsigned nsge, bool inl,
		  uint32_t seed)
{
	bool send = op == VIRTIO_IB_WR_SEND || op == VIRTIO_IB_WR_SEND_WITH_IMM;
	bool imm = op == VIRTIO_IB_WR_SEND_WITH_IMM || op == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
	uint8_t *src = p->ma.buf + 1 + seed % 61, *dst = p->mb.buf + 3;
	struct virtio_rdma_cq_req wc[2];
	struct fk_sge ls[4], rs[1];
	struct fk_wr wr = { .wr_id = 500 + seed, .opcode = op, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .imm = htobe32(seed) };
	int fails = th_failed_checks;

	fk_fill(src, len, seed);
	memset(dst, 0x5a, (size_t)len + 64);
	fk_wr_source(&wr, ls, src, len, nsge, inl, p->ma.lkey);
	if (!send) {
		wr.remote_addr = (uintptr_t)dst;
		wr.rkey = p->mb.rkey;
	}
	if (send || imm) {
		rs[0] = (struct fk_sge){ dst, send ? len : 0, p->mb.lkey };
		if (fk_post_recv(p->b, &p->qb, 900 + seed, rs, send ? 1 : 0))
			return false;
	}
	if (fk_post_send(p->a, &p->qa, &wr))
		return false;
	CHECK_EQ(fk_wait_cq(&p->env, p->a, p->cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].wr_id, 500 + seed);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	if (send || imm) {
		CHECK_EQ(fk_wait_cq(&p->env, p->b, p->cqb, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].wr_id, 900 + seed);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK_EQ(wc[0].byte_len, len);
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
static const uint32_t sizes[] = { 1, 63, 1023, 1024, 1025, 4097, 65536 + 5, (1u << 20) + 3 };

/* Every RC SEND/WRITE payload goes by reference and is placed from the
 * requester's memory: no frame gets a payload filled in. */
static void test_rc_by_reference(void)
{
	struct pkt_ref_stats r0, r1;
	uint64_t want = 0, base = pkt_outstanding();
	struct pair p;
	uint32_t seed = 0;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	pkt_ref_get_stats(&r0);
	for (unsigned o = 0; o < ARRAY_SIZE(ops); o++)
		for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
			CHECK(do_op(&p, ops[o], sizes[i], 1 + i % 4, false, seed++));
			want += npkts(sizes[i]);
		}
	/* a zero-length WRITE carries nothing to reference */
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 0, 1, false, seed++));
	pkt_ref_get_stats(&r1);
	/* (a loss probe on a slow run sends a packet again, by reference too) */
	CHECK_EQ(p.a->tp->stats.tx_by_ref, want + p.a->tp->stats.retransmits);
	CHECK_EQ(p.b->tp->stats.rx_by_ref, want);
	/* (a run is one frame with one reference for its packets) */
	CHECK_EQ(r1.attached - r0.attached, p.a->tp->stats.tx_by_ref -
		 p.a->tp->stats.tx_run_pkts + p.a->tp->stats.tx_runs);
	CHECK_EQ(r1.filled - r0.filled, 0);
	CHECK_EQ(r1.live, 0);
	fk_env_fini(&p.env);
	CHECK_EQ(pkt_outstanding(), base);
}

/* With every destination judged cold (roce_copy.c), placements go with
 * streaming stores and every payload still arrives byte for byte. */
static void test_streamed_placement(void)
{
	struct roce_copy_stats c0, c1;
	struct pair p;
	uint32_t seed = 0;

	roce_copy_set_cold(4096);
	pair_init(&p, VIRTIO_IB_QPT_RC);
	roce_copy_get_stats(&c0);
	for (unsigned o = 0; o < ARRAY_SIZE(ops); o++)
		for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++)
			CHECK(do_op(&p, ops[o], sizes[i], 1 + i % 4, false, seed++));
	roce_copy_get_stats(&c1);
	CHECK(c1.streamed > c0.streamed);
	fk_env_fini(&p.env);
	roce_copy_set_cold(ROCE_COPY_COLD_DEFAULT);
}

/* READ responses carry a reference to the responder's MR and the
 * completer places them from there. */
static void test_read_by_reference(void)
{
	struct virtio_rdma_cq_req wc[1];
	uint64_t want = 0;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t len = sizes[i], nsge = 1 + i % 4;
		uint8_t *src = p.mb.buf + 5 + i, *dst = p.ma.buf + 1;

		fk_fill(src, len, 40 + i);
		memset(dst, 0x5a, (size_t)len + 64);
		REQUIRE(fk_rc_pair_post_read(&p.rc, 70 + i, dst, src, len, nsge) == 0);
		CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
		CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		CHECK(memcmp(src, dst, len) == 0);
		CHECK_EQ(dst[len], 0x5a);
		fk_ring_reap(p.qa.sq);
		want += npkts(len);
	}
	/* (a READ asked again answers again, by reference too) */
	CHECK_EQ(p.b->tp->stats.tx_by_ref, p.b->tp->stats.read_resp_sent);
	CHECK(p.b->tp->stats.tx_by_ref >= want);
	CHECK_EQ(p.a->tp->stats.rx_by_ref, want);
	fk_env_fini(&p.env);
}

/* A QP pair on one device writing within one MR onto its own source: the
 * one copy overlaps (memmove, no undefined memcpy); bytes outside the
 * target stay, the WR completes. Which bytes land where inside an
 * overlapping target is not defined by RDMA and not checked. */
static void test_overlapping_write(void)
{
	struct virtio_rdma_cq_req wc[1];
	uint8_t *buf, before[64], after[64];
	struct fk_sge ls[1];
	struct pair p;
	struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED };

	pair_init_at(&p, VIRTIO_IB_QPT_RC, true);
	buf = p.mb.buf;
	fk_fill(buf, 8192, 11);
	memcpy(before, buf + 36, 64);
	memcpy(after, buf + 100 + 5000, 64);
	ls[0] = (struct fk_sge){ buf + 60, 5000, p.mb.lkey };
	wr.sge = ls;
	wr.nsge = 1;
	wr.remote_addr = (uintptr_t)(buf + 100);
	wr.rkey = p.mb.rkey;
	REQUIRE(fk_post_send(p.a, &p.qa, &wr) == 0);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(p.a->tp->stats.rx_by_ref > 0);
	CHECK(memcmp(before, buf + 36, 64) == 0);
	CHECK(memcmp(after, buf + 100 + 5000, 64) == 0);
	fk_env_fini(&p.env);
}

/* No frame of this thread holds a payload reference. */
static bool refs_gone(void *arg)
{
	struct pkt_ref_stats r;

	(void)arg;
	pkt_ref_get_stats(&r);
	return r.live == 0;
}

/* A UC pair: b sends nothing back (no ACKs), so the switch learns b's
 * MAC from one WRITE of b's; else a's frames flood, and flooding splits
 * runs into frames that carry their bytes. */
static void uc_pair_init(struct pair *p)
{
	struct virtio_rdma_cq_req wc[1];
	struct fk_sge ls[1];
	struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED, .sge = ls, .nsge = 1 };

	pair_init(p, VIRTIO_IB_QPT_UC);
	/* (a one-packet UC WRITE completes when sent: its byte may land
	 * later, away from what the tests use) */
	ls[0] = (struct fk_sge){ p->mb.buf + (1u << 21) + 4096, 1, p->mb.lkey };
	wr.remote_addr = (uintptr_t)p->ma.buf + (1u << 21) + 4096;
	wr.rkey = p->ma.rkey;
	REQUIRE(fk_post_send(p->b, &p->qb, &wr) == 0);
	REQUIRE(fk_wait_cq(&p->env, p->b, p->cqb, wc, 1, WAIT_MS) == 1);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 1);
	fk_ring_reap(p->qb.sq);
}

/* UC SEND/WRITE payloads of more than one packet go by reference too,
 * whole messages as runs, and are placed from the requester's memory; each
 * WR completes once no frame refers to it. A one-packet message is copied
 * (it completes when sent). */
static void test_uc_by_reference(void)
{
	struct pkt_ref_stats r0, r1;
	uint64_t want = 0, base = pkt_outstanding();
	struct pair p;
	uint32_t seed = 100;

	uc_pair_init(&p);
	pkt_ref_get_stats(&r0);
	for (unsigned o = 0; o < ARRAY_SIZE(ops); o++)
		for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
			CHECK(do_op(&p, ops[o], sizes[i], 1 + i % 4, false, seed++));
			if (sizes[i] > 1024)
				want += npkts(sizes[i]);
		}
	pkt_ref_get_stats(&r1);
	CHECK_EQ(p.a->tp->stats.tx_by_ref, want);
	CHECK_EQ(p.b->tp->stats.rx_by_ref, want);
	CHECK(p.a->tp->stats.tx_runs > 0);
	CHECK(p.b->tp->stats.rx_run_bulk > 0);
	CHECK_EQ(r1.filled - r0.filled, 0);
	CHECK_EQ(r1.live, 0);
	fk_env_fini(&p.env);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Post a signaled UC WRITE of len bytes (seed) from a to b and let only a
 * run: its frames wait in b's receive queue, referring to a's memory. */
static void uc_write_held(struct pair *p, uint32_t len, uint32_t seed)
{
	struct fk_sge ls[2];
	struct fk_wr wr = { .wr_id = seed, .opcode = VIRTIO_IB_WR_RDMA_WRITE, .trunc = -1,
			    .flags = VIRTIO_IB_SEND_SIGNALED };

	fk_fill(p->ma.buf, len, seed);
	memset(p->mb.buf, 0x5a, (size_t)len + 64);
	fk_wr_source(&wr, ls, p->ma.buf, len, 2, false, p->ma.lkey);
	wr.remote_addr = (uintptr_t)p->mb.buf;
	wr.rkey = p->mb.rkey;
	REQUIRE(fk_post_send(p->a, &p->qa, &wr) == 0);
	for (unsigned i = 0; i < 64; i++)
		roce_tp_poll(p->a->tp);
}

/* A UC WR does not complete while its frames still refer to its memory
 * (the application could change the bytes under them): it does once the
 * responder placed them, byte for byte. */
static void test_uc_completes_when_placed(void)
{
	struct virtio_rdma_cq_req wc[1];
	struct pkt_ref_stats r;
	uint8_t want[70000];
	struct pair p;

	uc_pair_init(&p);
	uc_write_held(&p, sizeof(want), 41);
	fk_fill(want, sizeof(want), 41);
	pkt_ref_get_stats(&r);
	CHECK(r.live > 0);
	CHECK(p.a->tp->stats.tx_by_ref >= npkts(sizeof(want)));
	CHECK_EQ(p.b->tp->stats.rx_by_ref, 0);
	CHECK_EQ(fk_poll_cq(p.a, p.cqa, wc, 1), 0);
	CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
	CHECK_EQ(wc[0].wr_id, 41);
	CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
	CHECK(memcmp(p.mb.buf, want, sizeof(want)) == 0);
	CHECK_EQ(p.mb.buf[sizeof(want)], 0x5a);
	pkt_ref_get_stats(&r);
	CHECK_EQ(r.live, 0);
	fk_env_fini(&p.env);
}

/* b received every packet of the 30000-byte WRITE uc_write_held sent as
 * runs (a run is placed in the pass that receives it). */
static bool held_run_received(void *arg)
{
	struct pair *p = arg;

	return p->b->tp->stats.rx_run_pkts >= npkts(30000);
}

/* A UC QP that errors, is reset or destroyed while its frames are out
 * first fills them in: they are received with the bytes they had, nothing
 * refers to the WQE slots any more (ASan would see it), and a WR sent in
 * full completes successfully on ERR. */
static void test_uc_queue_ends_with_frames_out(void)
{
	static const uint8_t ends[] = { VIRTIO_IB_QPS_ERR, VIRTIO_IB_QPS_RESET, 0 };
	uint8_t want[30000];

	fk_fill(want, sizeof(want), 7);
	for (unsigned e = 0; e < ARRAY_SIZE(ends); e++) {
		struct virtio_rdma_cq_req wc[1];
		struct pkt_ref_stats r0, r1;
		struct pair p;

		uc_pair_init(&p);
		uc_write_held(&p, sizeof(want), 7);
		pkt_ref_get_stats(&r0);
		REQUIRE(r0.live > 0);
		if (ends[e])
			CHECK_EQ(fk_modify(p.a, p.qa.qpn, ends[e], 0, NULL), 0);
		else
			CHECK_EQ(rres_qp_destroy(&p.a->rd, p.qa.qpn), RRES_OK);
		pkt_ref_get_stats(&r1);
		CHECK_EQ(r1.live, 0);
		CHECK_EQ(r1.filled - r0.filled, r0.live);
		/* b still places what a sent, from the frames' own bytes (a's
		 * are gone) */
		memset(p.ma.buf, 0, sizeof(want));
		CHECK(fk_run_until(&p.env, held_run_received, &p, WAIT_MS));
		CHECK(memcmp(p.mb.buf, want, sizeof(want)) == 0);
		if (ends[e] == VIRTIO_IB_QPS_ERR) {
			CHECK_EQ(fk_wait_cq(&p.env, p.a, p.cqa, wc, 1, WAIT_MS), 1);
			CHECK_EQ(wc[0].wr_id, 7);
			CHECK_EQ(wc[0].status, VIRTIO_IB_WC_SUCCESS);
		}
		fk_env_fini(&p.env);
	}
}

/* Inline data lives in a WQE slot that is reused: copied into the frame. */
static void test_inline_copied(void)
{
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	CHECK(do_op(&p, VIRTIO_IB_WR_SEND, 200, 1, true, 3));
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 256, 1, true, 4));
	CHECK_EQ(p.a->tp->stats.tx_by_ref, 0);
	CHECK_EQ(p.b->tp->stats.rx_by_ref, 0);
	fk_env_fini(&p.env);
	pair_init(&p, VIRTIO_IB_QPT_UC);
	CHECK(do_op(&p, VIRTIO_IB_WR_SEND, 200, 1, true, 5));
	CHECK_EQ(p.a->tp->stats.tx_by_ref, 0);
	fk_env_fini(&p.env);
}

/* The payloads of the RC WRITE request frames in a capture, in order,
 * appended to out (at most max bytes). Returns the bytes found, or -1 for a
 * frame with a bad ICRC. */
static long pcap_write_payloads(const char *path, uint8_t *out, size_t max)
{
	static uint8_t frame[16384];
	uint8_t gh[24], rh[16];
	size_t got = 0;
	FILE *f = fopen(path, "rb");

	if (!f || fread(gh, 1, 24, f) != 24) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t incl, hl, pad, n;
		uint8_t opc;

		memcpy(&incl, rh + 8, 4);
		if (incl > sizeof(frame) || fread(frame, 1, incl, f) != incl)
			break;
		/* IPv4, UDP 4791 */
		if (incl < 42 + 12 + 4 || frame[12] != 0x08 || frame[13] != 0 || frame[23] != 17 ||
		    frame[36] != 0x12 || frame[37] != 0xb7)
			continue;
		opc = frame[42];
		if (opc < ROCE_OP_RC_RDMA_WRITE_FIRST || opc > ROCE_OP_RC_RDMA_WRITE_ONLY)
			continue;
		if (roce_icrc_frame_verify(frame, incl)) {
			fclose(f);
			return -1;
		}
		hl = 42 + 12 + ((opc == ROCE_OP_RC_RDMA_WRITE_FIRST ||
				 opc == ROCE_OP_RC_RDMA_WRITE_ONLY) ? 16 : 0);
		pad = (frame[43] >> 4) & 3;
		n = incl - hl - pad - 4;
		if (got + n > max)
			break;
		memcpy(out + got, frame + hl, n);
		got += n;
	}
	fclose(f);
	return (long)got;
}

/* A capture sees the frames with their payload (filled in before it, so
 * nothing is placed by reference) and the data still arrives. */
static void test_pcap_falls_back(void)
{
	char path[] = "/tmp/vrdma_onecopy_XXXXXX";
	static uint8_t seen[8192], want[5000];
	struct pkt_ref_stats r0, r1;
	struct roce_run_stats s0, s1;
	int fd = mkstemp(path);
	struct pair p;
	long n;

	REQUIRE(fd >= 0);
	close(fd);
	pair_init(&p, VIRTIO_IB_QPT_RC);
	REQUIRE(sw_set_pcap(p.env.sw, path) == 0);
	pkt_ref_get_stats(&r0);
	roce_run_get_stats(&s0);
	CHECK(do_op(&p, VIRTIO_IB_WR_RDMA_WRITE, 5000, 3, false, 7));
	CHECK(do_op(&p, VIRTIO_IB_WR_SEND, 3000, 2, false, 8));
	pkt_ref_get_stats(&r1);
	roce_run_get_stats(&s1);
	REQUIRE(sw_set_pcap(p.env.sw, NULL) == 0);
	CHECK_EQ(p.a->tp->stats.tx_by_ref,
		 npkts(5000) + npkts(3000) + p.a->tp->stats.retransmits);
	/* packets of runs are split into real frames (their payload copied
	 * in), the others filled in */
	CHECK_EQ(s1.frames_split - s0.frames_split, p.a->tp->stats.tx_run_pkts);
	CHECK_EQ(r1.filled - r0.filled, p.a->tp->stats.tx_by_ref - p.a->tp->stats.tx_run_pkts);
	CHECK_EQ(p.b->tp->stats.rx_by_ref, 0);
	/* the captured WRITE carries exactly the message (seed 7 at its offset) */
	n = pcap_write_payloads(path, seen, sizeof(seen));
	fk_fill(want, sizeof(want), 7);
	CHECK(n >= 5000);
	if (n >= 5000)
		CHECK(memcmp(seen, want, 5000) == 0);
	fk_env_fini(&p.env);
	unlink(path);
}

/* n WRITEs and SENDs in turn (len0 + i * step bytes, seed seed0 + i), each
 * checked, through a fault injector of config spec; then without it until
 * no frame holds a reference (the frames it still held go and are
 * received). *st: the switch's counters from before it was removed. */
static void faulted_ops(struct pair *p, const char *spec, unsigned n, uint32_t len0,
			uint32_t step, uint32_t seed0, struct sw_stats *st)
{
	struct fault_cfg cfg;

	REQUIRE(fault_cfg_parse(&cfg, spec) == 0);
	REQUIRE(sw_set_fault(p->env.sw, &cfg, NULL) == 0);
	for (unsigned i = 0; i < n; i++)
		CHECK(do_op(p, i & 1 ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE,
			    len0 + i * step, 1 + i % 4, false, seed0 + i));
	*st = *sw_get_stats(p->env.sw);
	REQUIRE(sw_set_fault(p->env.sw, NULL, NULL) == 0);
	CHECK(fk_run_until(&p->env, refs_gone, NULL, WAIT_MS));
}

/* A fault injector leaves payloads by reference: it fills in (seals) only
 * the frames it corrupts, duplicates and holds carry the reference, and RC
 * recovers its faults as on the frame path, data byte for byte. */
static void test_fault_keeps_refs(void)
{
	struct pkt_ref_stats r0, r1;
	struct sw_stats st;
	struct pair p;

	pair_init(&p, VIRTIO_IB_QPT_RC);
	pkt_ref_get_stats(&r0);
	faulted_ops(&p, "drop=2,dup=2,reorder=2,corrupt=1,seed=5", 6, 40000, 7, 20, &st);
	pkt_ref_get_stats(&r1);
	CHECK(p.a->tp->stats.tx_by_ref > 0);
	CHECK(st.fault_dropped > 0 && st.fault_duplicated > 0 && st.fault_reordered > 0 &&
	      st.fault_corrupted > 0);
	/* (only what was corrupted was filled in) */
	CHECK(r1.filled - r0.filled <= st.fault_corrupted);
	/* packets that went through the injector as frames of their own
	 * (not in a run) were placed from the sender's memory too */
	CHECK(p.b->tp->stats.rx_by_ref > p.b->tp->stats.rx_run_pkts);
	CHECK_EQ(r1.live, 0);
	fk_env_fini(&p.env);
}

/* A frame that references memory of a mapping that goes away (its device's
 * regions unmapped) gets the bytes first. */
static void test_unmap_fills(void)
{
	struct pkt_ref_stats r0, r1;
	struct pkt *f = pkt_alloc();
	struct iovec iov[2];
	uint8_t want[3000];
	struct pair p;

	REQUIRE(f);
	pair_init(&p, VIRTIO_IB_QPT_RC);
	fk_fill(p.ma.buf, 8192, 99);
	memcpy(want, p.ma.buf + 100, 1000);
	memcpy(want + 1000, p.ma.buf + 5000, 2000);
	iov[0] = (struct iovec){ p.ma.buf + 100, 1000 };
	iov[1] = (struct iovec){ p.ma.buf + 5000, 2000 };
	memset(f->data, 0, 3100);
	f->len = 3100;
	pkt_ref_get_stats(&r0);
	pkt_ref_attach(f, 50, iov, 2, 3000);
	CHECK(f->flags & PKT_F_PAYLOAD_REF);
	fk_env_fini(&p.env); /* unmaps the arenas */
	pkt_ref_get_stats(&r1);
	CHECK(!(f->flags & PKT_F_PAYLOAD_REF));
	CHECK_EQ(r1.filled - r0.filled, 1);
	CHECK_EQ(r1.live, 0);
	CHECK(memcmp(f->data + 50, want, 3000) == 0);
	CHECK_EQ(f->data[49], 0);
	CHECK_EQ(f->data[3050], 0);
	pkt_free(f);
}

/* A clone carries the reference too; freeing either drops only its own. */
static void test_clone_and_free(void)
{
	static uint8_t mem[4096];
	struct pkt_ref_stats r0, r1;
	struct iovec iov = { mem, 1500 };
	struct pkt *f = pkt_alloc(), *c;

	REQUIRE(f);
	fk_fill(mem, sizeof(mem), 3);
	f->len = 1600;
	memset(f->data, 0, f->len);
	pkt_ref_get_stats(&r0);
	pkt_ref_attach(f, 60, &iov, 1, 1500);
	c = pkt_clone(f);
	REQUIRE(c);
	CHECK(c->flags & PKT_F_PAYLOAD_REF);
	pkt_ref_get_stats(&r1);
	CHECK_EQ(r1.live - r0.live, 2);
	pkt_free(f);
	pkt_ref_fill(c);
	CHECK(memcmp(c->data + 60, mem, 1500) == 0);
	pkt_free(c);
	pkt_ref_get_stats(&r1);
	CHECK_EQ(r1.live, r0.live);
}

struct owner_count {
	unsigned holds, releases;
	uint8_t seen; /* the frame's first payload byte at the last release */
	struct pkt *watch;
};

static void owner_hold(void *ctx, uint32_t tag)
{
	struct owner_count *o = ctx;

	CHECK_EQ(tag, 77);
	o->holds++;
}

static void owner_release(void *ctx, uint32_t tag)
{
	struct owner_count *o = ctx;

	CHECK_EQ(tag, 77);
	o->releases++;
	if (o->watch)
		o->seen = o->watch->data[60];
}

/* An owner is held once per frame that refers to its memory (the frame,
 * its clone) and released when each reference ends: freed, or filled
 * (after the bytes are in the frame); a frame given another reference
 * releases the first. */
static void test_ref_owner(void)
{
	static const struct pkt_ref_owner ops_count = { owner_hold, owner_release };
	static uint8_t mem[2048];
	struct owner_count o = { 0 };
	struct iovec iov = { mem, 1500 };
	struct pkt *f = pkt_alloc(), *c;

	REQUIRE(f);
	memset(mem, 0xab, sizeof(mem));
	f->len = 1600;
	memset(f->data, 0, f->len);
	pkt_ref_set_owner(f, &ops_count, &o, 77); /* no reference: nothing */
	CHECK_EQ(o.holds, 0);
	pkt_ref_attach(f, 60, &iov, 1, 1500);
	pkt_ref_set_owner(f, &ops_count, &o, 77);
	CHECK_EQ(o.holds, 1);
	c = pkt_clone(f);
	REQUIRE(c);
	CHECK_EQ(o.holds, 2);
	pkt_free(f);
	CHECK_EQ(o.releases, 1);
	o.watch = c;
	pkt_ref_fill(c);
	CHECK_EQ(o.releases, 2);
	CHECK_EQ(o.seen, 0xab);
	pkt_ref_attach(c, 60, &iov, 1, 1500);
	pkt_ref_set_owner(c, &ops_count, &o, 77);
	o.watch = NULL;
	pkt_ref_attach(c, 60, &iov, 1, 1000);
	CHECK_EQ(o.releases, 3);
	pkt_free(c);
	CHECK_EQ(o.holds, 3);
	CHECK_EQ(o.releases, 3);
}

/* UC through a fault injector that duplicates frames: each copy holds
 * the WR, which completes once all are gone; data byte for byte (UC
 * ignores the duplicates). */
static void test_uc_fault_dup(void)
{
	struct sw_stats st;
	struct pkt_ref_stats r;
	struct pair p;

	uc_pair_init(&p);
	faulted_ops(&p, "dup=5,seed=9", 8, 20000, 5, 60, &st);
	pkt_ref_get_stats(&r);
	CHECK(st.fault_duplicated > 0);
	CHECK(p.b->tp->stats.rx_dup > 0);
	CHECK_EQ(r.live, 0);
	fk_env_fini(&p.env);
}

int main(void)
{
	TEST_PROGRAM("test_roce_onecopy");
	RUN(test_rc_by_reference);
	RUN(test_read_by_reference);
	RUN(test_streamed_placement);
	RUN(test_overlapping_write);
	RUN(test_uc_by_reference);
	RUN(test_uc_completes_when_placed);
	RUN(test_uc_queue_ends_with_frames_out);
	RUN(test_inline_copied);
	RUN(test_pcap_falls_back);
	RUN(test_fault_keeps_refs);
	RUN(test_unmap_fills);
	RUN(test_clone_and_free);
	RUN(test_ref_owner);
	RUN(test_uc_fault_dup);
	return TEST_DONE();
}
