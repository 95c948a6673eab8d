/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RC requester's READ recovery against a responder that queues requests
 * like Linux rxe: requests are served strictly in arrival order, a READ is
 * answered to its end before the next request is looked at, and a duplicate
 * READ (a request for part of a READ: its missing range) is answered, with
 * its own FIRST..LAST responses from its PSN, once everything before it was
 * answered. Like rxe, a duplicate is looked up in a ring of max_dest_rd_atomic
 * resources (none: dropped) and must lie within the READ and start at or
 * after the previous duplicate's start for that READ (else dropped for
 * ever: counted, and every test asserts none). The responses of each
 * replay may lose their first few packets (the head drops of a queue that
 * cannot drain the burst: fq_codel in a slow guest).
 *
 * The emulated responder is the test itself: it takes the requester's
 * frames from its wire queue (no switch) and feeds the responses it builds
 * to roce_tp_input(). Asserts: every READ completes successfully with its
 * data intact (a requester that counts each of those gaps as a retry ends in
 * RETRY_EXC_ERR), the requester sent nothing but READ requests, and the
 * lossy replays all happened. The losses are fixed, not timed.
 */
#include <limits.h>

#include "../harness.h"
#include "common/log.h"
#include "roce/roce_opcode.h"
#include "roce/roce_pkt.h"
#include "unit/roce_tp_fake.h"

#define WAIT_MS 180000
#define RQ_MAX 4096
#define RBASE 0x7f0000000000ull
#define RKEY 0x1234

struct rq_req {
	uint32_t psn, len;
	uint64_t va;
	bool atomic;               /* a FETCH & ADD (answered with QR_ORIG) */
};

#define QR_ORIG 0x1122334455667788ull

/* A READ's responder resource (rxe: struct resp_res). */
struct rq_res {
	bool used;
	uint32_t first_psn, npkts;
	uint64_t va_org, va_end;   /* a duplicate must lie in [va_org, va_end) */
};

/* Options a test sets before read_queued_ends (kept across its reset). */
struct qr_opts {
	unsigned drop_every;       /* original streams: every Nth response lost */
	uint32_t drop_off;         /* this response of the original streams lost
				    * (PSN offset from the first; 0: 40) */
	uint64_t drop_dups;        /* bit i: duplicate request i (0-based) lost */
	uint32_t sq_psn;           /* first PSN (0: the default) */
	uint8_t max_rd;            /* max_rd_atomic = the resource ring (0: 16) */
	unsigned atomic_at;        /* WR i (1-based) is a FETCH & ADD (0: none) */
};
static struct qr_opts o;

struct qresp {
	struct fk_dev *a, *b;
	uint32_t qpn;              /* requester's QP */
	uint32_t mtu;
	uint8_t *mem;              /* the responder's memory at RBASE */
	uint64_t mem_len;
	struct roce_path path;     /* responder -> requester */
	struct rq_req q[RQ_MAX];   /* requests not served yet (FIFO) */
	unsigned q_head, q_tail;
	struct rq_res res[64];     /* ring of max_rd resources */
	unsigned res_next, res_n;
	unsigned dups, dups_lost;  /* duplicate requests seen, lost on the way */
	unsigned dup_refused;      /* dropped: no resource, or below/out of range */
	uint32_t epsn, msn;
	/* the READ (or atomic) being answered */
	bool busy, replay, atomic;
	uint32_t cur_psn, first_psn, npkts, sent;
	uint64_t va;
	uint32_t resid;
	/* losses */
	uint32_t drop_psn;         /* one response of the original stream */
	unsigned head_drop;        /* first responses lost per replay ... */
	unsigned lossy_replays;    /* ... for this many replays */
	unsigned replays, dropped, bad_frames, answered;
	bool peer_queues;          /* the requester saw it answer in arrival order */
	__typeof__(((struct roce_tp *)0)->stats) stats; /* the requester's, at the end */
};

static void qr_send(struct qresp *r, uint8_t opcode, uint32_t psn, const void *data,
		    uint32_t len)
{
	struct roce_hdr_fields f;
	struct pkt *p = pkt_alloc();

	REQUIRE(p);
	memset(&f, 0, sizeof(f));
	f.opcode = opcode;
	f.pkey = 0xffff;
	f.dqpn = r->qpn;
	f.psn = psn;
	f.aeth.syndrome = ROCE_AETH_ACK | 0x1f;
	f.aeth.msn = r->msn;
	REQUIRE(roce_pkt_build_frame(p, &r->path, &f, data, len) == 0);
	if (!roce_tp_input(r->a->tp, p))
		pkt_free(p);
}

/* The requester's frames: READ requests join the queue. */
static void qr_take(struct qresp *r)
{
	struct pkt *p;

	while ((p = pkt_queue_pop(&r->a->wire))) {
		struct roce_pkt_info pi;

		if (roce_pkt_parse_pkt(p, 0, &pi) == 0 &&
		    (pi.opcode == ROCE_OP_RC_RDMA_READ_REQUEST ||
		     pi.opcode == ROCE_OP_RC_FETCH_ADD) && r->q_tail - r->q_head < RQ_MAX) {
			struct rq_req *q = &r->q[r->q_tail % RQ_MAX];

			/* A duplicate lost on the way (o.drop_dups). */
			if (roce_psn_diff(pi.psn, r->epsn) < 0 && r->dups++ < 64 &&
			    (o.drop_dups >> (r->dups - 1)) & 1) {
				r->dups_lost++;
				pkt_free(p);
				continue;
			}
			r->q_tail++;
			q->psn = pi.psn;
			q->atomic = pi.opcode == ROCE_OP_RC_FETCH_ADD;
			q->va = q->atomic ? 0 : roce_reth_va(pi.reth);
			q->len = q->atomic ? 0 : roce_reth_len(pi.reth);
		} else {
			r->bad_frames++;
		}
		pkt_free(p);
	}
}

/* The next request, once the current READ is answered to its end. */
static void qr_next(struct qresp *r)
{
	while (!r->busy && r->q_head != r->q_tail) {
		struct rq_req *q = &r->q[r->q_head++ % RQ_MAX];
		int32_t d = roce_psn_diff(q->psn, r->epsn);
		uint32_t npkts = (q->len + r->mtu - 1) / r->mtu;

		if (q->atomic) {
			/* answered in arrival order; a duplicate from the
			 * saved result (always QR_ORIG here) */
			if (d > 0) {
				r->bad_frames++;
				continue;
			}
			if (!d) {
				r->epsn = roce_psn_add(r->epsn, 1);
				r->msn = (r->msn + 1) & 0xFFFFFF;
			}
			r->busy = r->atomic = true;
			r->cur_psn = q->psn;
			continue;
		}
		if (d > 0 || q->va < RBASE || q->va - RBASE + q->len > r->mem_len) {
			r->bad_frames++;
			continue;
		}
		if (!npkts)
			npkts = 1;
		r->replay = d < 0;
		if (!r->replay) {
			struct rq_res *res = &r->res[r->res_next++ % r->res_n];

			*res = (struct rq_res){ true, q->psn, npkts, q->va, q->va + q->len };
			r->epsn = roce_psn_add(r->epsn, npkts);
			r->msn = (r->msn + 1) & 0xFFFFFF;
		} else {
			struct rq_res *res = NULL;

			for (unsigned i = 0; i < r->res_n; i++) {
				int32_t k = roce_psn_diff(q->psn, r->res[i].first_psn);

				if (r->res[i].used && k >= 0 && (uint32_t)k < r->res[i].npkts)
					res = &r->res[i];
			}
			if (!res || q->va < res->va_org || q->va + q->len > res->va_end) {
				r->dup_refused++;
				continue;
			}
			/* (our requester's PSN and address agree) */
			if ((uint64_t)roce_psn_diff(q->psn, res->first_psn) * r->mtu !=
			    q->va - RBASE) {
				r->bad_frames++;
				continue;
			}
			res->va_org = q->va;
			r->replays++;
		}
		r->busy = true;
		r->cur_psn = r->first_psn = q->psn;
		r->npkts = npkts;
		r->sent = 0;
		r->va = q->va;
		r->resid = q->len;
	}
}

/* Answer up to n responses of the current READ. */
static unsigned qr_answer(struct qresp *r, unsigned n)
{
	unsigned k = 0;

	if (r->busy && r->atomic) {
		struct roce_hdr_fields f;
		struct pkt *p = pkt_alloc();

		if (!p)
			abort();
		memset(&f, 0, sizeof(f));
		f.opcode = ROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
		f.pkey = 0xffff;
		f.dqpn = r->qpn;
		f.psn = r->cur_psn;
		f.aeth.syndrome = ROCE_AETH_ACK | 0x1f;
		f.aeth.msn = r->msn;
		f.atmack_orig = QR_ORIG;
		if (roce_pkt_build_frame(p, &r->path, &f, NULL, 0))
			abort();
		if (!roce_tp_input(r->a->tp, p))
			pkt_free(p);
		r->busy = r->atomic = false;
		return 1;
	}
	while (k < n && r->busy) {
		uint32_t len = MIN(r->resid, r->mtu);
		bool first = r->sent == 0, last = r->resid <= r->mtu, lost;
		uint8_t op = first && last ? ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
			     first ? ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
			     last ? ROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
				    ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;

		lost = r->replay ? r->replays <= r->lossy_replays && r->sent < r->head_drop :
				   r->cur_psn == r->drop_psn ||
				   (o.drop_every && r->sent % o.drop_every == o.drop_every - 1);
		r->answered++;
		if (lost)
			r->dropped++;
		else
			qr_send(r, op, r->cur_psn, r->mem + (r->va - RBASE), len);
		r->sent++;
		r->va += len;
		r->resid -= len;
		r->cur_psn = roce_psn_add(r->cur_psn, 1);
		if (!r->resid)
			r->busy = false;
		k++;
	}
	return k;
}

/* n READs of len bytes, depth outstanding; the responder queues as above.
 * timeout: the path's (0: the default, 67 ms; NO_TIMER: no transport timer,
 * so no probes either); want: the status every READ must end with
 * (SUCCESS: its data is checked too). */
static struct qresp r;
#define NO_TIMER 0xff

static void read_queued_ends(uint32_t len, unsigned n, unsigned depth, unsigned head_drop,
			     unsigned lossy_replays, uint8_t timeout, uint8_t want)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { .arena = 80u << 20, .ext = true };
	struct fk_qp qa;
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .sq_num = 64, .rq_num = 16,
				.max_send_wr = 64, .max_recv_wr = 16 };
	struct fk_path path;
	struct fk_mr dst, res;
	struct fk_sge s;
	struct fk_wr wr;
	uint32_t cq;
	unsigned posted = 0, done = 0, errors = 0;
	uint64_t end;

	memset(&r, 0, sizeof(r));
	REQUIRE(fk_env_init(&env, false) == 0);
	r.a = fk_dev_new(&env, &dc);
	r.b = fk_dev_new(&env, &dc);
	qc.pdn = fk_pd(r.a);
	qc.scq = qc.rcq = cq = fk_cq(r.a, 256, 64, true);
	qa = fk_qp_new(r.a, &qc);
	dst = fk_mr_reg(r.a, qc.pdn, MAX((uint64_t)len * n, 64u), FK_ACC_ALL);
	res = fk_mr_reg(r.a, qc.pdn, 8, FK_ACC_ALL);
	fk_path_default(&path);    /* MTU 1024, timeout 67 ms, retry_cnt 7 */
	if (timeout)
		path.timeout = timeout == NO_TIMER ? 0 : timeout;
	if (o.sq_psn)
		path.sq_psn = path.rq_psn = o.sq_psn;
	if (o.max_rd)
		path.max_rd = path.max_dest_rd = o.max_rd;
	r.res_n = path.max_dest_rd;
	REQUIRE(fk_connect(r.a, qa.qpn, r.b, 0x77, &path) == 0);

	r.qpn = qa.qpn;
	r.mtu = 1024;
	r.epsn = path.sq_psn;
	r.mem_len = len;
	r.mem = malloc(len ? len : 1);
	REQUIRE(r.mem);
	fk_fill(r.mem, len, 7);
	memset(dst.buf, 0, (size_t)len * n);
	r.drop_psn = roce_psn_add(path.sq_psn, o.drop_off ? o.drop_off : 40);
	r.head_drop = head_drop;
	r.lossy_replays = lossy_replays;
	memcpy(r.path.smac, r.b->mac, 6);
	memcpy(r.path.dmac, r.a->mac, 6);
	memcpy(r.path.sgid, rres_gid_get(&r.b->rd, 1), 16);
	memcpy(r.path.dgid, rres_gid_get(&r.a->rd, 1), 16);
	r.path.udp_sport = roce_udp_sport_from_qpn(0x77);

	end = loop_now_ns() + (uint64_t)WAIT_MS * 1000000ull;
	while (done < n && !errors && loop_now_ns() < end) {
		struct virtio_rdma_cq_req wc[16];
		unsigned got, sent;

		while (posted < n && posted - done < depth) {
			s = (struct fk_sge){ dst.buf + (size_t)posted * len, len, dst.lkey };
			wr = (struct fk_wr){ .opcode = VIRTIO_IB_WR_RDMA_READ, .wr_id = posted,
					     .flags = VIRTIO_IB_SEND_SIGNALED, .remote_addr = RBASE,
					     .rkey = RKEY, .sge = &s, .nsge = 1, .trunc = -1 };
			if (posted + 1 == o.atomic_at) {
				s = (struct fk_sge){ res.buf, 8, res.lkey };
				wr.opcode = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
				wr.compare_add = 1;
			}
			if (fk_post_send(r.a, &qa, &wr))
				break;
			posted++;
		}
		qr_take(&r);
		qr_next(&r);
		sent = qr_answer(&r, 8);
		loop_run_once(env.loop, sent ? 0 : 1000000);
		got = fk_poll_cq(r.a, cq, wc, 16);
		for (unsigned k = 0; k < got; k++) {
			if (wc[k].status != want || wc[k].wr_id != done) {
				printf("#   READ %u: status %u wr_id %" PRIu64 "\n", done,
				       wc[k].status, (uint64_t)wc[k].wr_id);
				errors++;
			}
			done++;
		}
		fk_ring_reap(qa.sq);
	}
	printf("#   %u READs of %u KiB: %u replays, %u responses sent, %u lost, probes %" PRIu64
	       " timeouts %" PRIu64 " rewinds %" PRIu64 " placed ahead %" PRIu64 " fills %" PRIu64
	       " not kept %" PRIu64 ", requests lost %u\n", done, len >> 10, r.replays,
	       r.answered, r.dropped, r.a->tp->stats.probes, r.a->tp->stats.timeouts,
	       r.a->tp->stats.rewinds, r.a->tp->stats.rd_ahead, r.a->tp->stats.rd_fills,
	       r.a->tp->stats.rd_not_kept, r.dups_lost);
	CHECK_EQ(errors, 0);
	CHECK_EQ(done, n);
	CHECK_EQ(r.bad_frames, 0);
	CHECK_EQ(r.dup_refused, 0);
	if (want == VIRTIO_IB_WC_SUCCESS) {
		CHECK(r.replays > lossy_replays);
		for (unsigned i = 0; i < n; i++)
			if (i + 1 != o.atomic_at)
				CHECK(memcmp(dst.buf + (size_t)i * len, r.mem, len) == 0);
		if (o.atomic_at) {
			uint64_t v;

			memcpy(&v, res.buf, 8);
			CHECK_EQ(le64toh(v), QR_ORIG);
		}
	}
	{
		struct roce_tq *tq = rres_qp_lookup(&r.a->rd, qa.qpn)->transport;
		uint64_t mem = r.a->tp->state_mem;
		bool kept = tq->rd_map != NULL;

		r.peer_queues = tq->rd_peer_queues;
		/* Reset frees the bitmap of kept responses and its charge. */
		CHECK(fk_modify(r.a, qa.qpn, VIRTIO_IB_QPS_RESET, 0, NULL) == 0);
		CHECK(!tq->rd_map);
		CHECK(r.a->tp->state_mem + (kept ? ROCE_TP_RD_WINDOW / 8 : 0) <= mem);
	}
	r.stats = r.a->tp->stats;
	free(r.mem);
	fk_env_fini(&env);
}

static void read_queued(uint32_t len, unsigned n, unsigned depth, unsigned head_drop,
			unsigned lossy_replays)
{
	read_queued_ends(len, n, depth, head_drop, lossy_replays, 0, VIRTIO_IB_WC_SUCCESS);
}

/* Each replay loses its first responses ten times in a row: more gaps
 * without progress than retry_cnt (7), all while the responder keeps
 * answering. */
static void test_read_replays_lose_head(void)
{
	read_queued(256u << 10, 1, 1, 3, 10);
}

/* The same with four READs outstanding, as ib_read_bw posts them: the
 * later READs' responses come while the first one has a gap, and their
 * requests are sent again (go-back-N) behind its re-requests. */
static void test_read_queue_behind_gap(void)
{
	read_queued(256u << 10, 4, 4, 3, 10);
}

/* Every replay loses its head, for ever: the responder keeps answering but
 * the READ never progresses. Its answers hold the timers back only for a
 * bounded time; then the retries run out (RETRY_EXC_ERR), as with a silent
 * peer. (Timeout 1 ms: the bound is 8 x (retry_cnt + 1) timeouts.) */
static void test_read_no_progress_ends(void)
{
	read_queued_ends(64u << 10, 1, 1, 3, UINT_MAX, 8, VIRTIO_IB_WC_RETRY_EXC_ERR);
}

/* A 2 MiB READ whose first answer loses every 100th response (and #40: 21
 * gaps, as 1 % loss does), answers to requests for a missing range losing
 * nothing: the responses after each gap are placed, and each gap is asked
 * for alone (one request outstanding per READ, so 21 small replays where
 * go-back-N replayed the rest of the READ from each gap). No transport
 * timer: every ask comes from the responses, none from a probe that a busy
 * machine could fire, so the counts are exact. */
static void test_read_gaps_one_replay(void)
{
	uint32_t len = 2u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100 };
	read_queued_ends(len, 1, 1, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(r.replays, 21u);
	CHECK_EQ(r.answered, npkts + 21);
	CHECK_EQ(r.stats.rd_fills, 21u);
	CHECK_EQ(r.stats.rewinds, 0u);
	o = (struct qr_opts){ 0 };
}

/* The same, and the first two answers to a request for a missing range
 * lose their first three responses (all of a one-response answer), four
 * READs outstanding, no timer: later answers show those lost, and every
 * response lost is asked for once (responses sent: what the READs need
 * plus one per loss). */
static void test_read_gaps_replays_lose_head(void)
{
	uint32_t len = 2u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100 };
	read_queued_ends(len, 4, 4, 3, 2, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(r.answered, 4 * npkts + r.dropped);
	CHECK_EQ(r.stats.rd_fills, r.dropped);
	CHECK(r.answered * 10 <= 11 * 4 * npkts);
	o = (struct qr_opts){ 0 };
}

/* Sixteen READs of 256 KiB, four outstanding, every 100th response of the
 * original answers lost, and no transport timer: every loss must be
 * recovered from what arrives, since nothing fires later. */
static void test_read_gaps_no_timer(void)
{
	o = (struct qr_opts){ .drop_every = 100 };
	read_queued_ends(256u << 10, 16, 4, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	o = (struct qr_opts){ 0 };
}

/* Sixteen 2 MiB READs, eight outstanding, every 100th response lost, no
 * timer: each READ asks for its own gaps, responses of later READs that
 * come while an older one has a gap are kept, and nothing is asked twice:
 * all complete byte-exact with at most 1.1 times the responses they need. */
static void test_read_many_gaps(void)
{
	uint32_t len = 2u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100 };
	read_queued_ends(len, 16, 8, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	CHECK(r.answered * 10 <= 11 * 16 * npkts);
	CHECK_EQ(r.answered - 16 * npkts, r.dropped);
	CHECK_EQ(r.stats.rd_fills, r.dropped);
	CHECK_EQ(r.stats.rd_not_kept, 0u);
	o = (struct qr_opts){ 0 };
}

/* The same with max_rd_atomic 1 and the PSNs wrapping (2^24) in the middle
 * of the third READ. */
static void test_read_gaps_psn_wrap(void)
{
	uint32_t len = 2u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100, .max_rd = 1,
			      .sq_psn = ROCE_PSN_MASK + 1 - 2 * npkts - 500 };
	read_queued_ends(len, 6, 4, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(r.answered - 6 * npkts, r.dropped);
	o = (struct qr_opts){ 0 };
}

/* Requests for a missing range lost on the way (the first, the third and
 * the fourth), and answers to them lost (the first two lose their first
 * three responses), 2 MiB READs four outstanding: recovered (by later
 * answers or, with nothing asked after them, as here once the four READs
 * outstanding all wait, a probe: the timer is on), never asking for a
 * READ below an earlier request of it (the responder would drop that for
 * ever: dup_refused). */
static void test_read_fills_lost(void)
{
	uint32_t len = 2u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100, .drop_dups = 0xd };
	read_queued_ends(len, 8, 4, 3, 2, 0, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(r.dups_lost, 3u);
	CHECK(r.answered * 10 <= 11 * 8 * npkts);
	o = (struct qr_opts){ 0 };
}

/* The last response of the last READ lost: nothing arrives after it, the
 * probe (transport timer on) asks for just that one. */
static void test_read_tail_lost(void)
{
	uint32_t len = 256u << 10, npkts = len / 1024;

	o = (struct qr_opts){ .drop_off = 4 * npkts - 1 };
	read_queued_ends(len, 4, 4, 0, 0, 0, VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(r.dropped, 1u);
	CHECK(r.answered <= 4 * npkts + 4);
	o = (struct qr_opts){ 0 };
}

/* Zero-length READs (one response each), the third one's lost, no timer:
 * the next READ's response shows it, and it is asked for again. */
static void test_read_zero_length(void)
{
	o = (struct qr_opts){ .drop_off = 2 };
	read_queued_ends(0, 8, 4, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	o = (struct qr_opts){ 0 };
}

/* One 32 MiB READ (32768 responses, twice the window of kept responses),
 * every 100th lost, no timer: responses beyond una + ROCE_TP_RD_WINDOW are
 * not kept (counted) and asked for again with the rest; the READ completes
 * byte-exact. */
/* A FETCH & ADD between two READs, the first READ losing a response, no
 * transport timer and no ACKs from the responder: the atomic's answer
 * comes while the READ has a gap and must be kept (its request is not
 * sent again: the gap is asked for alone), then everything completes in
 * order with the atomic's result. */
static void test_read_gap_atomic_after(void)
{
	o.atomic_at = 2;
	read_queued_ends(256u << 10, 3, 3, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	o.atomic_at = 0;
}

static void test_read_beyond_window(void)
{
	uint32_t len = 32u << 20, npkts = len / 1024;

	o = (struct qr_opts){ .drop_every = 100 };
	read_queued_ends(len, 1, 1, 0, 0, NO_TIMER, VIRTIO_IB_WC_SUCCESS);
	CHECK(r.stats.rd_not_kept > 0);
	CHECK(r.answered < 2 * npkts);
	o = (struct qr_opts){ 0 };
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	TEST_PROGRAM("test_roce_read_queued");
	vlog_level = VLOG_ERR;
	RUN(test_read_replays_lose_head);
	RUN(test_read_queue_behind_gap);
	RUN(test_read_no_progress_ends);
	RUN(test_read_gaps_one_replay);
	RUN(test_read_gaps_replays_lose_head);
	RUN(test_read_gaps_no_timer);
	RUN(test_read_many_gaps);
	RUN(test_read_gaps_psn_wrap);
	RUN(test_read_fills_lost);
	RUN(test_read_tail_lost);
	RUN(test_read_zero_length);
	RUN(test_read_gap_atomic_after);
	RUN(test_read_beyond_window);
	return TEST_DONE();
}
