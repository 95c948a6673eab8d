/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Extended CQs (ibv_create_cq_ex) on two vrdma devices in one process
 * (vrdma-run --socket A --socket B -- api_cq [-g GID_INDEX]):
 *
 *  - creation: wc_flags the device cannot honour (CVLAN, FLOW_TAG,
 *    TM_INFO) fail EOPNOTSUPP, an unknown comp_mask EINVAL, unknown
 *    creation flags EOPNOTSUPP; ibv_query_device_ex reports the timestamp
 *    clock (hca_core_clock, completion_timestamp_mask)
 *  - RC: SEND, SEND_WITH_IMM, RDMA_WRITE_WITH_IMM and RDMA_READ; every
 *    supported flag of each completion (opcode, byte_len, imm_data,
 *    qp_num, wc_flags, slid / sl / dlid_path_bits 0) checked against the
 *    work that produced it, payloads compared byte for byte
 *  - timestamps: between ibv_query_rt_values_ex before the post and after
 *    the poll, non-decreasing in poll order; wallclock between
 *    CLOCK_REALTIME readings
 *  - several completions read in one start_poll / next_poll / end_poll
 *    pass; start_poll on an empty CQ: ENOENT; the same CQ polled through
 *    ibv_cq_ex_to_cq + ibv_poll_cq
 *  - UD: src_qp is the sender's QP number, IBV_WC_GRH set, byte_len the
 *    payload plus the 40-byte GRH, sl the RoCE packet type (0xa IPv4, 0x9
 *    IPv6) matching the header in the GRH area; a single-threaded CQ
 *  - a CQ above the largest ring (65536 entries, what libfabric's ofi_rxm
 *    asks for): 49152 flushed receives of three QPs all come out, in
 *    order per QP, none lost (the device keeps what the ring cannot hold)
 *  - a destroyed QP's work requests leave nothing in its CQ: after
 *    ibv_destroy_qp the CQ returns none of its completions, and the next
 *    completion is that of a live QP
 */
#include "api_common.h"

#define BUF 8192

static uint64_t rt_now(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int r = ibv_query_rt_values_ex(ctx, &v);

	if (r)
		ext_die("ibv_query_rt_values_ex: %s", strerror(r));
	if (!(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		ext_die("ibv_query_rt_values_ex: raw clock not reported");
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const uint64_t all_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx, uint64_t wc_flags, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 256,
		.wc_flags = wc_flags,
		.comp_mask = flags ? IBV_CQ_INIT_ATTR_MASK_FLAGS : 0,
		.flags = flags,
	};

	return ibv_create_cq_ex(ctx, &a);
}

static void creation_checks(struct api_end *a)
{
	static const struct {
		uint64_t flag;
		const char *name;
	} bad[] = {
		{ IBV_WC_EX_WITH_CVLAN, "CVLAN" },
		{ IBV_WC_EX_WITH_FLOW_TAG, "FLOW_TAG" },
		{ IBV_WC_EX_WITH_TM_INFO, "TM_INFO" },
	};
	struct ibv_cq_init_attr_ex ia;
	struct ibv_device_attr_ex dx;
	struct ibv_cq_ex *x;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		x = cq_ex(a->c.ctx, IBV_WC_EX_WITH_BYTE_LEN | bad[i].flag, 0);
		API_CHECK(!x && errno == EOPNOTSUPP, "wc_flags %s refused with EOPNOTSUPP (errno %d)",
			  bad[i].name, errno);
		if (x)
			ibv_destroy_cq(ibv_cq_ex_to_cq(x));
	}
	memset(&ia, 0, sizeof(ia));
	ia.cqe = 16;
	ia.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ia.flags = 1u << 7;
	errno = 0;
	x = ibv_create_cq_ex(a->c.ctx, &ia);
	API_CHECK(!x && errno == EOPNOTSUPP, "unknown creation flag refused with EOPNOTSUPP");
	ia.comp_mask = 1u << 5;
	ia.flags = 0;
	errno = 0;
	x = ibv_create_cq_ex(a->c.ctx, &ia);
	API_CHECK(!x && errno == EINVAL, "unknown comp_mask refused with EINVAL");

	memset(&dx, 0, sizeof(dx));
	API_CHECK(!ibv_query_device_ex(a->c.ctx, NULL, &dx) && dx.hca_core_clock == 1000000 &&
			  dx.completion_timestamp_mask == UINT64_MAX,
		  "hca_core_clock %" PRIu64 " kHz (ns timestamps), mask 0x%" PRIx64,
		  dx.hca_core_clock, dx.completion_timestamp_mask);
}

/* RC: each operation's completions on both sides. */
static void rc_checks(struct api_end *a, struct api_end *b)
{
	uint8_t *sa = calloc(1, BUF), *rb = calloc(1, BUF), *rem = calloc(1, BUF);
	struct ibv_mr *mra, *mrb, *mrrem;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct api_wc ws, wr_;
	uint64_t t0, t1, rt0, rt1, last_ts = 0;
	int i;

	mra = ext_reg(&a->c, sa, BUF, IBV_ACCESS_LOCAL_WRITE);
	mrb = ext_reg(&b->c, rb, BUF, IBV_ACCESS_LOCAL_WRITE);
	mrrem = ext_reg(&b->c, rem, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ);

	/* 1. SEND: 1000 bytes */
	api_fill(sa, 1000, 1);
	api_post_recv(b, rb, BUF, mrb->lkey, 0xb001);
	t0 = rt_now(a->c.ctx);
	rt0 = realtime_ns();
	sge = (struct ibv_sge){ .addr = (uintptr_t)sa, .length = 1000, .lkey = mra->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xa001;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post SEND: %s", strerror(errno));
	ws = api_poll(a, "SEND (requester)");
	wr_ = api_poll(b, "SEND (responder)");
	t1 = rt_now(a->c.ctx);
	rt1 = realtime_ns();
	API_CHECK(ws.status == IBV_WC_SUCCESS && ws.opcode == IBV_WC_SEND && ws.wr_id == 0xa001 &&
			  ws.qp_num == a->qp->qp_num && !(ws.wc_flags & IBV_WC_WITH_IMM),
		  "SEND requester completion: status %d opcode %d wr_id 0x%" PRIx64 " qp_num %u",
		  ws.status, ws.opcode, ws.wr_id, ws.qp_num);
	API_CHECK(wr_.status == IBV_WC_SUCCESS && wr_.opcode == IBV_WC_RECV && wr_.wr_id == 0xb001 &&
			  wr_.byte_len == 1000 && wr_.qp_num == b->qp->qp_num &&
			  !(wr_.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)),
		  "SEND responder completion: opcode %d byte_len %u qp_num %u (QP %u) flags 0x%x",
		  wr_.opcode, wr_.byte_len, wr_.qp_num, b->qp->qp_num, wr_.wc_flags);
	API_CHECK(!memcmp(sa, rb, 1000), "SEND payload of 1000 bytes received intact");
	API_CHECK(ws.ts >= t0 && ws.ts <= t1 && wr_.ts >= t0 && wr_.ts <= t1 && ws.ts <= wr_.ts,
		  "timestamps %" PRIu64 ", %" PRIu64 " within [%" PRIu64 ", %" PRIu64 "] and in poll order",
		  ws.ts, wr_.ts, t0, t1);
	API_CHECK(ws.wallclock >= rt0 && wr_.wallclock <= rt1 && ws.wallclock <= wr_.wallclock,
		  "wallclock timestamps within the CLOCK_REALTIME readings around the work");
	API_CHECK(!wr_.slid && !wr_.sl && !wr_.dlid_path_bits,
		  "slid, sl and dlid_path_bits read 0 (RoCE)");
	last_ts = wr_.ts;

	/* 2. SEND_WITH_IMM */
	api_fill(sa, 333, 2);
	api_post_recv(b, rb, BUF, mrb->lkey, 0xb002);
	sge.length = 333;
	wr.wr_id = 0xa002;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0x12345678);
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post SEND_WITH_IMM: %s", strerror(errno));
	ws = api_poll(a, "SEND_WITH_IMM (requester)");
	wr_ = api_poll(b, "SEND_WITH_IMM (responder)");
	API_CHECK(ws.status == IBV_WC_SUCCESS && ws.opcode == IBV_WC_SEND && ws.wr_id == 0xa002,
		  "SEND_WITH_IMM requester completion");
	API_CHECK(wr_.status == IBV_WC_SUCCESS && wr_.opcode == IBV_WC_RECV && wr_.byte_len == 333 &&
			  (wr_.wc_flags & IBV_WC_WITH_IMM) && wr_.imm == htonl(0x12345678) &&
			  !memcmp(sa, rb, 333),
		  "SEND_WITH_IMM: IBV_WC_WITH_IMM, imm_data 0x%08x, 333 bytes intact", ntohl(wr_.imm));
	API_CHECK(ws.ts >= last_ts && wr_.ts >= ws.ts, "timestamps non-decreasing");
	last_ts = wr_.ts;

	/* 3. RDMA_WRITE_WITH_IMM into b's remote buffer */
	api_fill(sa, 4000, 3);
	api_post_recv(b, rb, BUF, mrb->lkey, 0xb003);
	sge.length = 4000;
	wr.wr_id = 0xa003;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(0xcafe0003);
	wr.wr.rdma.remote_addr = (uintptr_t)rem + 96;
	wr.wr.rdma.rkey = mrrem->rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post RDMA_WRITE_WITH_IMM: %s", strerror(errno));
	ws = api_poll(a, "WRITE_WITH_IMM (requester)");
	wr_ = api_poll(b, "WRITE_WITH_IMM (responder)");
	API_CHECK(ws.status == IBV_WC_SUCCESS && ws.opcode == IBV_WC_RDMA_WRITE,
		  "RDMA_WRITE_WITH_IMM requester completion: opcode %d", ws.opcode);
	API_CHECK(wr_.status == IBV_WC_SUCCESS && wr_.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			  wr_.byte_len == 4000 && (wr_.wc_flags & IBV_WC_WITH_IMM) &&
			  wr_.imm == htonl(0xcafe0003) && wr_.wr_id == 0xb003 &&
			  wr_.qp_num == b->qp->qp_num && !memcmp(sa, rem + 96, 4000),
		  "RDMA_WRITE_WITH_IMM responder: RECV_RDMA_WITH_IMM, byte_len %u, imm 0x%08x, "
		  "data intact", wr_.byte_len, ntohl(wr_.imm));
	API_CHECK(ws.ts >= last_ts && wr_.ts >= ws.ts, "timestamps non-decreasing");

	/* 4. RDMA_READ of 2500 bytes */
	api_fill(rem + 2048, 2500, 4);
	memset(sa, 0, BUF);
	sge.length = 2500;
	wr.wr_id = 0xa004;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)rem + 2048;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post RDMA_READ: %s", strerror(errno));
	ws = api_poll(a, "RDMA_READ");
	API_CHECK(ws.status == IBV_WC_SUCCESS && ws.opcode == IBV_WC_RDMA_READ &&
			  ws.byte_len == 2500 && !memcmp(sa, rem + 2048, 2500),
		  "RDMA_READ completion: opcode %d byte_len %u, data intact", ws.opcode, ws.byte_len);

	/* 5. Eight sends, their completions read in one start/next/end pass. */
	for (i = 0; i < 8; i++)
		api_post_recv(b, rb + i * 512, 512, mrb->lkey, 0xc000 + (uint64_t)i);
	for (i = 0; i < 8; i++) {
		api_fill(sa + i * 512, 100 + (size_t)i, 10u + (unsigned int)i);
		sge = (struct ibv_sge){ .addr = (uintptr_t)sa + (uint64_t)i * 512,
					.length = 100 + (uint32_t)i, .lkey = mra->lkey };
		wr.wr_id = 0xd000 + (uint64_t)i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = i == 7 ? IBV_SEND_SIGNALED : 0;
		if (ibv_post_send(a->qp, &wr, &bad))
			ext_die("post SEND %d: %s", i, strerror(errno));
	}
	ws = api_poll(a, "8th SEND");
	API_CHECK(ws.wr_id == 0xd007 && ws.status == IBV_WC_SUCCESS,
		  "only the signaled 8th SEND completes on the requester");
	{
		uint64_t deadline = ext_now_ms() + EXT_TIMEOUT_MS;
		struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
		int n = 0, r, ok = 1;
		uint64_t prev = 0;

		/* Wait until all eight are there: the first start_poll that
		 * finds one; then read the rest with next_poll. */
		while ((r = ibv_start_poll(b->cqx, &pa)) == ENOENT && ext_now_ms() < deadline)
			;
		while (r == 0) {
			uint64_t ts = ibv_wc_read_completion_ts(b->cqx);

			if (b->cqx->status != IBV_WC_SUCCESS || b->cqx->wr_id != 0xc000 + (uint64_t)n ||
			    ibv_wc_read_byte_len(b->cqx) != 100 + (uint32_t)n ||
			    memcmp(rb + n * 512, sa + n * 512, 100 + (size_t)n) || ts < prev)
				ok = 0;
			prev = ts;
			n++;
			r = ibv_next_poll(b->cqx);
			while (r == ENOENT && n < 8 && ext_now_ms() < deadline)
				r = ibv_next_poll(b->cqx);
		}
		if (r != ENOENT)
			ext_die("start/next_poll: %s", strerror(r));
		if (n)
			ibv_end_poll(b->cqx);
		API_CHECK(ok && n == 8,
			  "8 receives read in one start_poll/next_poll pass, in order, data intact (%d)",
			  n);
		r = ibv_start_poll(b->cqx, &pa);
		API_CHECK(r == ENOENT, "start_poll on an empty CQ: ENOENT (%d)", r);
		if (r == 0)
			ibv_end_poll(b->cqx);
	}

	/* 6. The same CQ through the classic ibv_poll_cq. */
	api_post_recv(b, rb, BUF, mrb->lkey, 0xb006);
	api_fill(sa, 77, 6);
	sge = (struct ibv_sge){ .addr = (uintptr_t)sa, .length = 77, .lkey = mra->lkey };
	wr.wr_id = 0xa006;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post SEND: %s", strerror(errno));
	ws = api_poll(a, "SEND 6");
	{
		struct ibv_wc wc;

		ext_poll_n(ibv_cq_ex_to_cq(b->cqx), &wc, 1, "ibv_poll_cq on an extended CQ");
		API_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 77 &&
				  wc.wr_id == 0xb006 && !memcmp(sa, rb, 77),
			  "ibv_poll_cq on an extended CQ sees the RECV (byte_len %u)", wc.byte_len);
	}

	ibv_dereg_mr(mra);
	ibv_dereg_mr(mrb);
	ibv_dereg_mr(mrrem);
	free(sa);
	free(rb);
	free(rem);
}

/* UD: src_qp and GRH. */
static void ud_checks(struct api_end *a, struct api_end *b)
{
	uint8_t *sa = calloc(1, 4096), *rb = calloc(1, 4096);
	struct ibv_mr *mra = ext_reg(&a->c, sa, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ext_reg(&b->c, rb, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)sa, .length = 500, .lkey = mra->lkey };
	struct ibv_send_wr wr, *bad;
	struct api_wc ws, wr_;

	api_fill(sa, 500, 7);
	api_post_recv(b, rb, 4096, mrb->lkey, 0xe001);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xf001;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0xabcd);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = a->ah;
	wr.wr.ud.remote_qpn = b->qp->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post UD SEND: %s", strerror(errno));
	ws = api_poll(a, "UD SEND (requester)");
	wr_ = api_poll(b, "UD SEND (responder)");
	API_CHECK(ws.status == IBV_WC_SUCCESS && ws.opcode == IBV_WC_SEND && ws.qp_num == a->qp->qp_num,
		  "UD requester completion");
	API_CHECK(wr_.status == IBV_WC_SUCCESS && wr_.opcode == IBV_WC_RECV &&
			  wr_.src_qp == a->qp->qp_num && wr_.qp_num == b->qp->qp_num &&
			  (wr_.wc_flags & IBV_WC_GRH) && (wr_.wc_flags & IBV_WC_WITH_IMM) &&
			  wr_.imm == htonl(0xabcd) && wr_.byte_len == 500 + 40 &&
			  !memcmp(rb + 40, sa, 500),
		  "UD RECV: src_qp %u (sender %u), GRH flag, imm, byte_len %u = 500 + 40, data intact",
		  wr_.src_qp, a->qp->qp_num, wr_.byte_len);
	{
		/* RoCE v2 packet type in sl (bit 3 UDP; 2 IPv4, 1 IPv6) and the
		 * header in the GRH area: IPv4 (20 zero bytes, then the header
		 * with B's address as destination) or IPv6 (dgid B's GID). */
		static const uint8_t zero[20];
		const union ibv_gid *g = &b->c.gid;
		int v4 = g->raw[10] == 0xff && g->raw[11] == 0xff && !memcmp(g->raw, zero, 10);
		int hdr_ok = v4 ? !memcmp(rb, zero, 20) && (rb[20] >> 4) == 4 &&
					  !memcmp(rb + 36, g->raw + 12, 4)
				: (rb[0] >> 4) == 6 && !memcmp(rb + 24, g->raw, 16);

		API_CHECK(wr_.sl == (v4 ? 0xa : 0x9) && hdr_ok,
			  "UD RECV: sl 0x%x = RoCE v2 over %s, GRH area holds that header with our "
			  "address as destination", wr_.sl, v4 ? "IPv4" : "IPv6");
	}
	ibv_dereg_mr(mra);
	ibv_dereg_mr(mrb);
	free(sa);
	free(rb);
}

/* A QP on cq moved to INIT (receives can be posted). */
static struct ibv_qp *init_qp(struct api_end *e, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	qp = ibv_create_qp(e->c.pd, &ia);
	if (!qp)
		ext_die("ibv_create_qp (%u receives): %s", depth, strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		ext_die("QP to INIT: %s", strerror(errno));
	return qp;
}

/* n receives without buffers on qp, wr_id base + i. */
static void post_recvs(struct ibv_qp *qp, uint32_t n, uint64_t base)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_recv_wr wr = { .wr_id = base + i }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			ext_die("ibv_post_recv %u of %u: %s", i, n, strerror(errno));
	}
}

/* A CQ larger than one ring: three QPs flush 3 x 16384 receives into a
 * 65536-entry CQ nobody polls meanwhile. */
static void large_cq_checks(struct api_end *a)
{
	enum { NQP = 3, DEPTH = 16384 };
	struct ibv_qp *qp[NQP];
	uint32_t next[NQP] = { 0 }, total = 0, bad = 0;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[64];
	uint64_t deadline = ext_now_ms() + EXT_TIMEOUT_MS;
	struct ibv_cq *cq;
	int i, n;

	API_CHECK(a->c.dattr.max_cqe >= 65536, "max_cqe %d >= 65536 (above one ring)",
		  a->c.dattr.max_cqe);
	cq = ibv_create_cq(a->c.ctx, 65536, NULL, NULL, 0);
	API_CHECK(cq && cq->cqe >= 65536, "ibv_create_cq(65536): %s, cqe %d",
		  cq ? "created" : strerror(errno), cq ? cq->cqe : 0);
	if (!cq)
		return;
	for (i = 0; i < NQP; i++) {
		qp[i] = init_qp(a, cq, DEPTH);
		post_recvs(qp[i], DEPTH, (uint64_t)i << 32);
	}
	for (i = 0; i < NQP; i++)
		if (ibv_modify_qp(qp[i], &qa, IBV_QP_STATE))
			ext_die("QP to ERR: %s", strerror(errno));
	while (total < NQP * DEPTH && ext_now_ms() < deadline) {
		n = ibv_poll_cq(cq, 64, wc);
		if (n < 0)
			ext_die("ibv_poll_cq: %d", n);
		for (i = 0; i < n; i++) {
			uint32_t q = (uint32_t)(wc[i].wr_id >> 32);

			if (q >= NQP || wc[i].qp_num != qp[q]->qp_num ||
			    (uint32_t)wc[i].wr_id != next[q] || wc[i].status != IBV_WC_WR_FLUSH_ERR)
				bad++;
			else
				next[q]++;
		}
		total += (uint32_t)n;
	}
	API_CHECK(total == NQP * DEPTH && !bad,
		  "65536-entry CQ: %u of %u flushed receives polled, %u out of order or wrong",
		  total, NQP * DEPTH, bad);
	for (i = 0; i < NQP; i++)
		if (ibv_destroy_qp(qp[i]))
			ext_die("ibv_destroy_qp: %s", strerror(errno));
	if (ibv_destroy_cq(cq))
		ext_die("ibv_destroy_cq: %s", strerror(errno));
}

/* A destroyed QP's receives are flushed by the device but never reach the
 * application: after ibv_destroy_qp its CQ holds none of them. */
static void destroyed_qp_checks(struct api_end *a, struct api_end *b)
{
	uint8_t *buf = calloc(1, BUF);
	struct ibv_mr *mra, *mrb;
	struct ibv_qp *gone;
	struct ibv_wc wc;
	struct api_wc w;
	int n;

	a->cq = ibv_create_cq(a->c.ctx, 256, NULL, NULL, 0);
	b->cq = ibv_create_cq(b->c.ctx, 256, NULL, NULL, 0);
	if (!buf || !a->cq || !b->cq)
		ext_die("ibv_create_cq: %s", strerror(errno));
	mra = ibv_reg_mr(a->c.pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(b->c.pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!mra || !mrb)
		ext_die("ibv_reg_mr: %s", strerror(errno));
	gone = init_qp(a, a->cq, 64);
	post_recvs(gone, 32, 0xdead0000);
	if (ibv_destroy_qp(gone))
		ext_die("ibv_destroy_qp: %s", strerror(errno));
	n = ibv_poll_cq(a->cq, 1, &wc);
	API_CHECK(n == 0, "after ibv_destroy_qp its CQ returns none of its 32 receives (poll: %d%s)",
		  n, n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR ? ", a flush" : "");

	/* A live QP on the same CQ: its completion is the next one. */
	api_qp(a, IBV_QPT_RC, 0);
	api_qp(b, IBV_QPT_RC, 0);
	api_connect(a, b);
	api_post_recv(a, buf, 64, mra->lkey, 7);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mrb->lkey };
		struct ibv_send_wr wr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *badw;

		if (ibv_post_send(b->qp, &wr, &badw))
			ext_die("ibv_post_send: %s", strerror(errno));
	}
	w = api_poll(a, "receive after a destroyed QP");
	API_CHECK(w.wr_id == 7 && w.status == IBV_WC_SUCCESS && w.qp_num == a->qp->qp_num,
		  "the next completion is the live QP's receive (wr_id 0x%" PRIx64 ", status %d)",
		  w.wr_id, w.status);
	w = api_poll(b, "send");
	API_CHECK(w.wr_id == 8 && w.status == IBV_WC_SUCCESS, "the send completed");
	ibv_destroy_qp(a->qp);
	ibv_destroy_qp(b->qp);
	a->qp = b->qp = NULL;
	ibv_dereg_mr(mra);
	ibv_dereg_mr(mrb);
	ibv_destroy_cq(a->cq);
	ibv_destroy_cq(b->cq);
	a->cq = b->cq = NULL;
	free(buf);
}

int main(int argc, char **argv)
{
	struct api_end a, b;
	int gid = 1, opt;

	ext_prog = "api_cq";
	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt == 'g')
			gid = atoi(optarg);
		else
			ext_die("usage: api_cq [-g GID_INDEX]");
	}
	srand48(getpid());
	api_open(&a, 0, gid);
	api_open(&b, 1, gid);
	creation_checks(&a);
	large_cq_checks(&a);
	destroyed_qp_checks(&a, &b);

	a.cqx = cq_ex(a.c.ctx, all_flags, 0);
	b.cqx = cq_ex(b.c.ctx, all_flags, 0);
	if (!a.cqx || !b.cqx)
		ext_die("ibv_create_cq_ex with every supported flag: %s", strerror(errno));
	a.cq = ibv_cq_ex_to_cq(a.cqx);
	b.cq = ibv_cq_ex_to_cq(b.cqx);
	api_qp(&a, IBV_QPT_RC, 0);
	api_qp(&b, IBV_QPT_RC, 0);
	api_connect(&a, &b);
	rc_checks(&a, &b);
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	a.qp = b.qp = NULL;
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);

	/* UD with single-threaded CQs and only some flags. */
	a.cqx = cq_ex(a.c.ctx, IBV_WC_EX_WITH_QP_NUM, IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	b.cqx = cq_ex(b.c.ctx,
		      IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
			      IBV_WC_EX_WITH_SRC_QP,
		      IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	if (!a.cqx || !b.cqx)
		ext_die("ibv_create_cq_ex single-threaded: %s", strerror(errno));
	a.cq = ibv_cq_ex_to_cq(a.cqx);
	b.cq = ibv_cq_ex_to_cq(b.cqx);
	api_qp(&a, IBV_QPT_UD, 0);
	api_qp(&b, IBV_QPT_UD, 0);
	api_connect(&a, &b);
	ud_checks(&a, &b);
	api_close(&a);
	api_close(&b);
	return api_exit();
}
