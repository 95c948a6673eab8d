// SPDX-License-Identifier: BSD-3-Clause
/*
 * ext_mw: acceptance program for memory windows and invalidation (issue 6),
 * standard verbs, two processes over RC.
 *
 *   ext_mw server -p PORT [-d DEVICE] [-g GID_INDEX]
 *   ext_mw client -p PORT [-d DEVICE] [-g GID_INDEX] [-c CASE] HOST
 *
 * The server owns the memory and the windows; the client is the remote
 * requester. Each case runs on a fresh pair of RC QPs (an access error
 * moves both to ERR). Cases (all by default, or only -c NAME):
 *   mw1_rw         type 1 window (ibv_alloc_mw, ibv_bind_mw) on an MR with
 *                  LOCAL_WRITE | MW_BIND: remote READ and WRITE inside the
 *                  window succeed (bytes compared on both sides, bytes next
 *                  to the window untouched); a WRITE outside the window but
 *                  inside the MR fails: requester REM_ACCESS_ERR and QP in
 *                  ERR, responder QP in ERR (ibv_query_qp) and async event
 *                  QP_ACCESS_ERR (ibv_get_async_event).
 *   mw2_ro         type 2 window bound with IBV_WR_BIND_MW, REMOTE_READ only:
 *                  READ succeeds, WRITE fails (same checks).
 *   mw2_below      type 2 window with READ and WRITE: a READ starting 8 bytes
 *                  before the window (inside the MR) fails (same checks).
 *   mw1_no_lw      type 1 bind granting REMOTE_WRITE on an MR without
 *                  LOCAL_WRITE: completion IBV_WC_MW_BIND_ERR.
 *   mw2_no_lw      the same with a type 2 window and IBV_WR_BIND_MW.
 *   local_inv      type 2 window: WRITE succeeds; IBV_WR_LOCAL_INV of its
 *                  rkey completes (IBV_WC_LOCAL_INV); the next WRITE fails
 *                  (same checks) and the memory keeps its bytes.
 *   send_inv       type 2 window: READ succeeds; the client's
 *                  IBV_WR_SEND_WITH_INV of its rkey arrives with
 *                  IBV_WC_WITH_INV and invalidated_rkey = the rkey, data
 *                  compared; the next READ fails (same checks).
 * Exit status 0 only when every case passed.
 */
#include "verbs/ext_common.h"

#include <getopt.h>

#define MEM_SIZE (64u << 10)
#define WIN_OFF 8192u
#define WIN_LEN 8192u

/* Messages of the protocol (client <-> server). */
enum {
	M_CASE = 10,     /* c->s: v0 = case index */
	M_WINDOW,        /* s->c: v0 addr, v1 len, v2 rkey, v3 pattern seed */
	M_WROTE,         /* c->s: v0 seed of the bytes written into the window */
	M_CHECKED,       /* s->c: v0 1 if the bytes were right */
	M_ACCESS_ERR,    /* c->s: the requester saw REM_ACCESS_ERR, QP in ERR */
	M_RESP_ERR,      /* s->c: v0 1 if the responder QP is in ERR with its event */
	M_INVALIDATED,   /* s->c: the window's rkey was invalidated locally */
	M_RECV_POSTED,   /* s->c: a receive is posted */
	M_SENT,          /* c->s: SEND_WITH_INV completed; v0 seed of its payload */
	M_RECVD,         /* s->c: v0 1 if the receive was right */
	M_BIND_RESULT,   /* s->c: v0 1 if the bind failed as expected */
	M_END,           /* c->s: no more cases */
};

enum case_id {
	C_MW1_RW, C_MW2_RO, C_MW2_BELOW, C_MW1_NO_LW, C_MW2_NO_LW, C_LOCAL_INV, C_SEND_INV, C_NUM
};
static const char *const case_names[C_NUM] = {
	"mw1_rw", "mw2_ro", "mw2_below", "mw1_no_lw", "mw2_no_lw", "local_inv", "send_inv",
};

static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8) + 1);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static long check(const uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat(seed, i))
			return (long)i;
	return -1;
}

struct side {
	struct ext_ctx c;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *mem;
	struct ibv_mr *mr;          /* server: LOCAL_WRITE | MW_BIND; client: LOCAL_WRITE */
	uint8_t *mem_nolw;
	struct ibv_mr *mr_nolw;     /* server: MW_BIND | REMOTE_READ, no LOCAL_WRITE */
	int fd;
};

/* A fresh connected QP pair for one case; the client sends first. */
static void new_qp(struct side *s, bool server)
{
	struct ext_dest loc, rem;

	if (s->qp && ibv_destroy_qp(s->qp))
		ext_die("ibv_destroy_qp: %s", strerror(errno));
	/* forget completions of the previous case (flushes) */
	for (;;) {
		struct ibv_wc wc;

		if (ibv_poll_cq(s->cq, 1, &wc) <= 0)
			break;
	}
	s->qp = ext_rc_qp(&s->c, s->cq, s->cq, 8, 8,
			  server ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE : 0);
	loc = ext_local_dest(&s->c, s->qp);
	if (server) {
		ext_recv_all(s->fd, &rem, sizeof(rem));
		ext_connect_qp(&s->c, s->qp, loc.psn, &rem);
		ext_send_all(s->fd, &loc, sizeof(loc));
	} else {
		ext_send_all(s->fd, &loc, sizeof(loc));
		ext_recv_all(s->fd, &rem, sizeof(rem));
		ext_connect_qp(&s->c, s->qp, loc.psn, &rem);
	}
}

/* ---- server ---------------------------------------------------------------- */

static struct ibv_mw *srv_alloc_mw(struct side *s, enum ibv_mw_type t)
{
	struct ibv_mw *mw = ibv_alloc_mw(s->c.pd, t);

	if (!mw)
		ext_die("ibv_alloc_mw(type %d): %s", t, strerror(errno));
	if (mw->type != t)
		ext_die("ibv_alloc_mw: window type %d, asked %d", mw->type, t);
	return mw;
}

/* Bind a type 1 window with ibv_bind_mw; returns the completion status. */
static enum ibv_wc_status srv_bind1(struct side *s, struct ibv_mw *mw, struct ibv_mr *mr,
				    uint64_t addr, uint64_t len, unsigned access)
{
	struct ibv_mw_bind b = {
		.wr_id = 0x1b,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len, .mw_access_flags = access },
	};
	uint32_t old = mw->rkey;
	struct ibv_wc wc;
	int rc = ibv_bind_mw(s->qp, mw, &b);

	if (rc)
		ext_die("ibv_bind_mw: %s", strerror(rc));
	ext_poll_n(s->cq, &wc, 1, "type 1 bind");
	if (wc.wr_id != 0x1b)
		ext_die("bind completion has wr_id 0x%" PRIx64, wc.wr_id);
	if (wc.status == IBV_WC_SUCCESS) {
		if (wc.opcode != IBV_WC_BIND_MW)
			ext_die("bind completion opcode %d, expected IBV_WC_BIND_MW", wc.opcode);
		if (mw->rkey == old)
			ext_die("ibv_bind_mw left the window's rkey at 0x%x", old);
	}
	return wc.status;
}

/* Bind a type 2 window with IBV_WR_BIND_MW and rkey ibv_inc_rkey(mw->rkey);
 * returns the completion status (mw->rkey updated on success). */
static enum ibv_wc_status srv_bind2(struct side *s, struct ibv_mw *mw, struct ibv_mr *mr,
				    uint64_t addr, uint64_t len, unsigned access)
{
	struct ibv_send_wr wr = {
		.wr_id = 0x2b,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;
	int rc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	rc = ibv_post_send(s->qp, &wr, &bad);
	if (rc)
		ext_die("ibv_post_send(IBV_WR_BIND_MW): %s", strerror(rc));
	ext_poll_n(s->cq, &wc, 1, "type 2 bind");
	if (wc.wr_id != 0x2b)
		ext_die("bind completion has wr_id 0x%" PRIx64, wc.wr_id);
	if (wc.status == IBV_WC_SUCCESS) {
		if (wc.opcode != IBV_WC_BIND_MW)
			ext_die("bind completion opcode %d, expected IBV_WC_BIND_MW", wc.opcode);
		mw->rkey = key;
	}
	return wc.status;
}

static void srv_dealloc(struct ibv_mw *mw)
{
	int rc = ibv_dealloc_mw(mw);

	if (rc)
		ext_die("ibv_dealloc_mw: %s", strerror(rc));
}

/* Publish the window [mem + WIN_OFF, + WIN_LEN) with rkey, filled with seed. */
static void srv_publish(struct side *s, uint32_t rkey, uint64_t seed)
{
	memset(s->mem, 0xa5, MEM_SIZE);
	fill(s->mem + WIN_OFF, WIN_LEN, seed);
	ext_send_msg(s->fd, M_WINDOW, (uint64_t)(uintptr_t)(s->mem + WIN_OFF), WIN_LEN, rkey, seed);
}

/* The bytes outside the window are still 0xa5. */
static bool srv_outside_intact(struct side *s)
{
	for (size_t i = 0; i < MEM_SIZE; i++) {
		if (i >= WIN_OFF && i < WIN_OFF + WIN_LEN)
			continue;
		if (s->mem[i] != 0xa5) {
			ext_say("byte %zu of the MR, outside the window, changed to 0x%02x", i,
				s->mem[i]);
			return false;
		}
	}
	return true;
}

/* After the client wrote seed into the window: compare, answer. */
static void srv_check_write(struct side *s)
{
	struct ext_msg m = ext_expect_msg(s->fd, M_WROTE);
	long bad = check(s->mem + WIN_OFF, WIN_LEN, m.v[0]);
	bool ok = bad < 0 && srv_outside_intact(s);

	if (bad >= 0)
		ext_say("window byte %ld is 0x%02x after the remote WRITE, expected 0x%02x", bad,
			s->mem[WIN_OFF + bad], pat(m.v[0], (size_t)bad));
	ext_send_msg(s->fd, M_CHECKED, ok, 0, 0, 0);
	if (!ok)
		ext_die("remote WRITE into the window: wrong bytes");
}

/* The client saw a remote access error: our QP is in ERR and we got the
 * QP_ACCESS_ERR event; the memory keeps seed in the window. */
static void srv_expect_access_err(struct side *s, uint64_t seed)
{
	enum ibv_qp_state st;
	long bad;

	ext_expect_msg(s->fd, M_ACCESS_ERR);
	ext_wait_async(s->c.ctx, s->qp, IBV_EVENT_QP_ACCESS_ERR);
	st = ext_qp_state(s->qp);
	bad = check(s->mem + WIN_OFF, WIN_LEN, seed);
	ext_send_msg(s->fd, M_RESP_ERR, st == IBV_QPS_ERR && bad < 0 && srv_outside_intact(s),
		     0, 0, 0);
	if (st != IBV_QPS_ERR)
		ext_die("responder QP %u is in state %d after the access error, expected ERR",
			s->qp->qp_num, st);
	if (bad >= 0)
		ext_die("the refused access changed window byte %ld", bad);
	ext_say("responder: QP %u in ERR, IBV_EVENT_QP_ACCESS_ERR received", s->qp->qp_num);
}

static void srv_case(struct side *s, int cs)
{
	const unsigned rw = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	uint64_t win = (uint64_t)(uintptr_t)(s->mem + WIN_OFF);
	struct ibv_mw *mw;
	enum ibv_wc_status st;
	uint64_t seed = 100 + (uint64_t)cs;

	switch (cs) {
	case C_MW1_RW:
		mw = srv_alloc_mw(s, IBV_MW_TYPE_1);
		st = srv_bind1(s, mw, s->mr, win, WIN_LEN, rw);
		if (st != IBV_WC_SUCCESS)
			ext_die("type 1 bind: %s", ibv_wc_status_str(st));
		srv_publish(s, mw->rkey, seed);
		srv_check_write(s);
		srv_expect_access_err(s, seed + 50);
		srv_dealloc(mw);
		break;
	case C_MW2_RO:
		mw = srv_alloc_mw(s, IBV_MW_TYPE_2);
		st = srv_bind2(s, mw, s->mr, win, WIN_LEN, IBV_ACCESS_REMOTE_READ);
		if (st != IBV_WC_SUCCESS)
			ext_die("type 2 bind: %s", ibv_wc_status_str(st));
		srv_publish(s, mw->rkey, seed);
		srv_expect_access_err(s, seed);
		srv_dealloc(mw);
		break;
	case C_MW2_BELOW:
		mw = srv_alloc_mw(s, IBV_MW_TYPE_2);
		st = srv_bind2(s, mw, s->mr, win, WIN_LEN, rw);
		if (st != IBV_WC_SUCCESS)
			ext_die("type 2 bind: %s", ibv_wc_status_str(st));
		srv_publish(s, mw->rkey, seed);
		srv_expect_access_err(s, seed);
		srv_dealloc(mw);
		break;
	case C_MW1_NO_LW:
	case C_MW2_NO_LW:
		mw = srv_alloc_mw(s, cs == C_MW1_NO_LW ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		st = cs == C_MW1_NO_LW ?
			srv_bind1(s, mw, s->mr_nolw, (uint64_t)(uintptr_t)s->mem_nolw, 4096, rw) :
			srv_bind2(s, mw, s->mr_nolw, (uint64_t)(uintptr_t)s->mem_nolw, 4096, rw);
		ext_send_msg(s->fd, M_BIND_RESULT, st == IBV_WC_MW_BIND_ERR, 0, 0, 0);
		if (st != IBV_WC_MW_BIND_ERR)
			ext_die("bind granting REMOTE_WRITE on an MR without LOCAL_WRITE: status %s "
				"(%d), expected IBV_WC_MW_BIND_ERR", ibv_wc_status_str(st), st);
		ext_say("bind on an MR without LOCAL_WRITE: IBV_WC_MW_BIND_ERR");
		srv_dealloc(mw);
		break;
	case C_LOCAL_INV: {
		struct ibv_send_wr wr = {
			.wr_id = 0x17,
			.opcode = IBV_WR_LOCAL_INV,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;
		int rc;

		mw = srv_alloc_mw(s, IBV_MW_TYPE_2);
		st = srv_bind2(s, mw, s->mr, win, WIN_LEN, rw);
		if (st != IBV_WC_SUCCESS)
			ext_die("type 2 bind: %s", ibv_wc_status_str(st));
		srv_publish(s, mw->rkey, seed);
		srv_check_write(s);   /* the client wrote seed + 50 */
		wr.invalidate_rkey = mw->rkey;
		rc = ibv_post_send(s->qp, &wr, &bad);
		if (rc)
			ext_die("ibv_post_send(IBV_WR_LOCAL_INV): %s", strerror(rc));
		ext_wait_wc(s->cq, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, "LOCAL_INV");
		ext_send_msg(s->fd, M_INVALIDATED, 0, 0, 0, 0);
		srv_expect_access_err(s, seed + 50);
		srv_dealloc(mw);
		break;
	}
	case C_SEND_INV: {
		struct ibv_sge sge = { (uint64_t)(uintptr_t)s->mem, 256, s->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 0x5e, .sg_list = &sge, .num_sge = 1 }, *rbad;
		struct ext_msg m;
		struct ibv_wc wc;
		bool ok;
		long b;
		int rc;

		mw = srv_alloc_mw(s, IBV_MW_TYPE_2);
		st = srv_bind2(s, mw, s->mr, win, WIN_LEN, rw);
		if (st != IBV_WC_SUCCESS)
			ext_die("type 2 bind: %s", ibv_wc_status_str(st));
		srv_publish(s, mw->rkey, seed);
		rc = ibv_post_recv(s->qp, &rwr, &rbad);
		if (rc)
			ext_die("ibv_post_recv: %s", strerror(rc));
		ext_send_msg(s->fd, M_RECV_POSTED, 0, 0, 0, 0);
		m = ext_expect_msg(s->fd, M_SENT);
		ext_poll_n(s->cq, &wc, 1, "receive of SEND_WITH_INV");
		b = check(s->mem, 64, m.v[0]);
		ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		     wc.wr_id == 0x5e && (wc.wc_flags & IBV_WC_WITH_INV) &&
		     wc.invalidated_rkey == mw->rkey && wc.byte_len == 64 && b < 0;
		ext_send_msg(s->fd, M_RECVD, ok, 0, 0, 0);
		if (!ok)
			ext_die("receive of SEND_WITH_INV: status %s opcode %d wr_id 0x%" PRIx64
				" wc_flags 0x%x invalidated_rkey 0x%x (window rkey 0x%x) byte_len %u, "
				"first wrong byte %ld", ibv_wc_status_str(wc.status), wc.opcode,
				wc.wr_id, wc.wc_flags, wc.invalidated_rkey, mw->rkey, wc.byte_len, b);
		ext_say("SEND_WITH_INV received: IBV_WC_WITH_INV, invalidated_rkey 0x%x",
			wc.invalidated_rkey);
		/* the bytes of the SEND landed at mem[0..64): outside the window,
		 * so restore them before the "outside intact" check */
		memset(s->mem, 0xa5, 64);
		srv_expect_access_err(s, seed);
		srv_dealloc(mw);
		break;
	}
	}
}

static int server(const char *dev, int gid, int port)
{
	struct side s = { 0 };
	int lfd, ncases = 0;

	ext_open(&s.c, dev, gid);
	if (!(s.c.dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) || s.c.dattr.max_mw <= 0)
		ext_die("the device reports no memory windows (cap 0x%x, max_mw %d)",
			s.c.dattr.device_cap_flags, s.c.dattr.max_mw);
	s.cq = ext_cq(&s.c, 32);
	s.mem = aligned_alloc(4096, MEM_SIZE);
	s.mem_nolw = aligned_alloc(4096, 4096);
	if (!s.mem || !s.mem_nolw)
		ext_die("out of memory");
	memset(s.mem, 0xa5, MEM_SIZE);
	memset(s.mem_nolw, 0x5a, 4096);
	s.mr = ext_reg(&s.c, s.mem, MEM_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	s.mr_nolw = ext_reg(&s.c, s.mem_nolw, 4096, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	lfd = ext_listen(port);
	s.fd = ext_accept(lfd);
	close(lfd);
	for (;;) {
		struct ext_msg m;

		ext_recv_all(s.fd, &m, sizeof(m));
		if (m.type == M_END)
			break;
		if (m.type != M_CASE || m.v[0] >= C_NUM)
			ext_die("protocol: unexpected message %u", m.type);
		ext_say("case %s", case_names[m.v[0]]);
		new_qp(&s, true);
		srv_case(&s, (int)m.v[0]);
		ncases++;
	}
	if (s.qp && ibv_destroy_qp(s.qp))
		ext_die("ibv_destroy_qp");
	if (ibv_dereg_mr(s.mr) || ibv_dereg_mr(s.mr_nolw) || ibv_destroy_cq(s.cq))
		ext_die("teardown");
	ext_close(&s.c);
	ext_say("PASS (%d cases)", ncases);
	return 0;
}

/* ---- client ----------------------------------------------------------------- */

/* One RDMA READ or WRITE of len bytes at remote addr with rkey, from / to
 * s->mem; returns the completion status. */
static enum ibv_wc_status cli_rw(struct side *s, enum ibv_wr_opcode op, uint64_t addr,
				 uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)s->mem, len, s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xc0 + (uint64_t)op,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	int rc;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(s->qp, &wr, &bad);
	if (rc)
		ext_die("ibv_post_send(%d): %s", op, strerror(rc));
	ext_poll_n(s->cq, &wc, 1, op == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE");
	if (wc.status == IBV_WC_SUCCESS &&
	    (int)wc.opcode != (op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE))
		ext_die("completion opcode %d for WR opcode %d", wc.opcode, op);
	return wc.status;
}

static void cli_read_ok(struct side *s, const struct ext_msg *w)
{
	enum ibv_wc_status st;
	long bad;

	memset(s->mem, 0, w->v[1]);
	st = cli_rw(s, IBV_WR_RDMA_READ, w->v[0], (uint32_t)w->v[2], (uint32_t)w->v[1]);
	if (st != IBV_WC_SUCCESS)
		ext_die("READ inside the window: %s (%d)", ibv_wc_status_str(st), st);
	bad = check(s->mem, w->v[1], w->v[3]);
	if (bad >= 0)
		ext_die("READ inside the window: byte %ld is 0x%02x, expected 0x%02x", bad,
			s->mem[bad], pat(w->v[3], (size_t)bad));
	ext_say("READ of %" PRIu64 " bytes inside the window: bytes match", w->v[1]);
}

static void cli_write_ok(struct side *s, const struct ext_msg *w, uint64_t seed)
{
	enum ibv_wc_status st;

	fill(s->mem, w->v[1], seed);
	st = cli_rw(s, IBV_WR_RDMA_WRITE, w->v[0], (uint32_t)w->v[2], (uint32_t)w->v[1]);
	if (st != IBV_WC_SUCCESS)
		ext_die("WRITE inside the window: %s (%d)", ibv_wc_status_str(st), st);
	ext_send_msg(s->fd, M_WROTE, seed, 0, 0, 0);
	if (!ext_expect_msg(s->fd, M_CHECKED).v[0])
		ext_die("WRITE inside the window: the server found wrong bytes");
	ext_say("WRITE of %" PRIu64 " bytes inside the window: the server found them", w->v[1]);
}

/* An access that must fail with REM_ACCESS_ERR on both sides. */
static void cli_access_fails(struct side *s, enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey,
			     uint32_t len, const char *what)
{
	enum ibv_wc_status st;
	enum ibv_qp_state qs;

	fill(s->mem, len, 999);
	st = cli_rw(s, op, addr, rkey, len);
	if (st != IBV_WC_REM_ACCESS_ERR)
		ext_die("%s: status %s (%d), expected IBV_WC_REM_ACCESS_ERR", what,
			ibv_wc_status_str(st), st);
	qs = ext_qp_state(s->qp);
	if (qs != IBV_QPS_ERR)
		ext_die("%s: requester QP in state %d after REM_ACCESS_ERR, expected ERR", what, qs);
	ext_send_msg(s->fd, M_ACCESS_ERR, 0, 0, 0, 0);
	if (!ext_expect_msg(s->fd, M_RESP_ERR).v[0])
		ext_die("%s: the responder did not see its QP in ERR / the memory changed", what);
	ext_say("%s: REM_ACCESS_ERR, both QPs in ERR, responder event QP_ACCESS_ERR", what);
}

static void cli_case(struct side *s, int cs)
{
	uint64_t seed = 100 + (uint64_t)cs;
	struct ext_msg w;

	switch (cs) {
	case C_MW1_RW:
		w = ext_expect_msg(s->fd, M_WINDOW);
		cli_read_ok(s, &w);
		cli_write_ok(s, &w, seed + 50);
		cli_access_fails(s, IBV_WR_RDMA_WRITE, w.v[0] + w.v[1], (uint32_t)w.v[2], 16,
				 "WRITE just past the window (inside the MR)");
		break;
	case C_MW2_RO:
		w = ext_expect_msg(s->fd, M_WINDOW);
		cli_read_ok(s, &w);
		cli_access_fails(s, IBV_WR_RDMA_WRITE, w.v[0], (uint32_t)w.v[2], 64,
				 "WRITE through a REMOTE_READ-only window");
		break;
	case C_MW2_BELOW:
		w = ext_expect_msg(s->fd, M_WINDOW);
		cli_read_ok(s, &w);
		cli_access_fails(s, IBV_WR_RDMA_READ, w.v[0] - 8, (uint32_t)w.v[2], 16,
				 "READ starting 8 bytes before the window (inside the MR)");
		break;
	case C_MW1_NO_LW:
	case C_MW2_NO_LW:
		if (!ext_expect_msg(s->fd, M_BIND_RESULT).v[0])
			ext_die("bind on an MR without LOCAL_WRITE did not fail with MW_BIND_ERR "
				"(see the server)");
		break;
	case C_LOCAL_INV:
		w = ext_expect_msg(s->fd, M_WINDOW);
		cli_write_ok(s, &w, seed + 50);
		ext_expect_msg(s->fd, M_INVALIDATED);
		cli_access_fails(s, IBV_WR_RDMA_WRITE, w.v[0], (uint32_t)w.v[2], 64,
				 "WRITE after LOCAL_INV of the window");
		break;
	case C_SEND_INV: {
		struct ibv_sge sge = { (uint64_t)(uintptr_t)s->mem, 64, s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 0x59,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_INV,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;
		int rc;

		w = ext_expect_msg(s->fd, M_WINDOW);
		cli_read_ok(s, &w);
		ext_expect_msg(s->fd, M_RECV_POSTED);
		fill(s->mem, 64, seed + 7);
		wr.invalidate_rkey = (uint32_t)w.v[2];
		rc = ibv_post_send(s->qp, &wr, &bad);
		if (rc)
			ext_die("ibv_post_send(IBV_WR_SEND_WITH_INV): %s", strerror(rc));
		ext_wait_wc(s->cq, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND_WITH_INV");
		ext_send_msg(s->fd, M_SENT, seed + 7, 0, 0, 0);
		if (!ext_expect_msg(s->fd, M_RECVD).v[0])
			ext_die("the server's receive of SEND_WITH_INV was wrong (see the server)");
		cli_access_fails(s, IBV_WR_RDMA_READ, w.v[0], (uint32_t)w.v[2], 64,
				 "READ after SEND_WITH_INV of the window");
		break;
	}
	}
}

static int client(const char *dev, int gid, int port, const char *host, const char *only)
{
	struct side s = { 0 };
	int n = 0;

	ext_open(&s.c, dev, gid);
	s.cq = ext_cq(&s.c, 32);
	s.mem = aligned_alloc(4096, MEM_SIZE);
	if (!s.mem)
		ext_die("out of memory");
	s.mr = ext_reg(&s.c, s.mem, MEM_SIZE, IBV_ACCESS_LOCAL_WRITE);
	s.fd = ext_connect(host, port);
	for (int cs = 0; cs < C_NUM; cs++) {
		if (only && strcmp(only, case_names[cs]))
			continue;
		ext_say("case %s", case_names[cs]);
		ext_send_msg(s.fd, M_CASE, (uint64_t)cs, 0, 0, 0);
		new_qp(&s, false);
		cli_case(&s, cs);
		ext_say("case %s: PASS", case_names[cs]);
		n++;
	}
	ext_send_msg(s.fd, M_END, 0, 0, 0, 0);
	if (!n)
		ext_die("no case named %s", only);
	if (s.qp && ibv_destroy_qp(s.qp))
		ext_die("ibv_destroy_qp");
	if (ibv_dereg_mr(s.mr) || ibv_destroy_cq(s.cq))
		ext_die("teardown");
	ext_close(&s.c);
	close(s.fd);
	ext_say("PASS (%d cases)", n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *only = NULL;
	int ch, gid = 1, port = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: ext_mw server|client -p PORT [-d DEV] [-g GID] [-c CASE] "
				"[HOST]\n");
		return 2;
	}
	ext_prog = argv[1][0] == 's' ? "ext_mw server" : "ext_mw client";
	srand48(getpid() ^ (long)ext_now_ms());
	optind = 2;
	while ((ch = getopt(argc, argv, "p:d:g:c:")) != -1) {
		switch (ch) {
		case 'p': port = atoi(optarg); break;
		case 'd': dev = optarg; break;
		case 'g': gid = atoi(optarg); break;
		case 'c': only = optarg; break;
		default: return 2;
		}
	}
	if (port <= 0)
		return 2;
	if (argv[1][0] == 's')
		return server(dev, gid, port);
	if (optind >= argc)
		return 2;
	return client(dev, gid, port, argv[optind], only);
}
