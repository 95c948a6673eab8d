/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loss recovery in one process, without a daemon or a scheduler: two devices
 * of the real transport engine on one switch (the fake driver rings of
 * tests/unit/roce_tp_fake.h stand in for virtqueues), one RC QP, COUNT RDMA
 * WRITEs (or READs) of LEN bytes, DEPTH outstanding, run once lossless and
 * once through the fault injector (SPEC, default drop=1,seed=1). (send:
 * SENDs, into receives reposted as they complete.) Prints the
 * CPU time of each, their ratio (lossless / lossy: the bandwidth ratio a
 * daemon bound by its CPU would see) and the counters that explain it:
 * frames (runs and single frames), ACKs, NAKs, retransmits.
 *
 *   build/bench/bench_loss [write|read|send [LEN [COUNT [DEPTH [SPEC]]]]]
 *   (BENCH_LOSS_ONLY=lossless or lossy: only that run, e.g. under perf)
 */
#include "unit/roce_tp_fake.h"
#include "common/log.h"

#include <inttypes.h>
#include <time.h>

struct result {
	double cpu;
	uint64_t drops, tx_frames, tx_runs, tx_pkts, retransmits, rewinds, acks, naks,
		resp_frames, seq_err, probes, timeouts;
	bool ok;
};

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum op { OP_WRITE, OP_READ, OP_SEND };

static void run(enum op op, uint32_t len, unsigned count, unsigned depth, const char *spec,
		struct result *r)
{
	bool read = op == OP_READ;
	struct fk_env env;
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 256u << 20 };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .max_send_sge = 1, .max_recv_sge = 1,
				.sq_num = 256, .rq_num = 16, .max_send_wr = 256,
				.max_recv_wr = 16 };
	struct fk_path path;
	struct fk_dev *a, *b;
	struct psec psa, psb;
	struct fk_qp qa, qb;
	struct fk_mr ma, mb;
	struct fault_cfg cfg;
	unsigned posted = 0, done = 0, recvs = 0;
	uint32_t cqa, cqb;
	double t0;

	memset(r, 0, sizeof(*r));
	if (op == OP_SEND)
		qc.rq_num = qc.max_recv_wr = 256;
	if (fk_env_init(&env, true))
		abort();
	fk_path_default(&path);
	a = fk_dev_new(&env, &dc);
	b = fk_dev_new(&env, &dc);
	if (!a || !b)
		abort();
	/* (both local devices, as in the daemon) */
	fk_dev_pin(a, &psa);
	fk_dev_pin(b, &psb);
	qc.pdn = fk_pd(a);
	qc.scq = qc.rcq = cqa = fk_cq(a, 1024, 256, true);
	qa = fk_qp_new(a, &qc);
	ma = fk_mr_reg(a, qc.pdn, len, FK_ACC_ALL);
	qc.pdn = fk_pd(b);
	qc.scq = qc.rcq = cqb = fk_cq(b, 1024, 256, true);
	qb = fk_qp_new(b, &qc);
	mb = fk_mr_reg(b, qc.pdn, len, FK_ACC_ALL);
	if (fk_connect(a, qa.qpn, b, qb.qpn, &path) || fk_connect(b, qb.qpn, a, qa.qpn, &path))
		abort();
	if (spec && (fault_cfg_parse(&cfg, spec) || sw_set_fault(env.sw, &cfg, NULL))) {
		fprintf(stderr, "bench_loss: bad fault spec %s\n", spec);
		exit(2);
	}
	t0 = cpu_s();
	while (done < count) {
		struct virtio_rdma_cq_req wc[64];
		unsigned n = fk_poll_cq(a, cqa, wc, 64);

		for (unsigned k = 0; k < n; k++) {
			if (wc[k].status != VIRTIO_IB_WC_SUCCESS) {
				fprintf(stderr, "bench_loss: WR failed with status %u\n",
					wc[k].status);
				goto out;
			}
			done++;
		}
		if (n)
			fk_ring_reap(qa.sq);
		/* (the receiver: its completions taken, its receives posted again) */
		n = op == OP_SEND ? fk_poll_cq(b, cqb, wc, 64) : 0;
		if (n)
			fk_ring_reap(qb.rq);
		recvs -= n;
		while (op == OP_SEND && recvs < 255) {
			struct fk_sge rs = { mb.buf, len, mb.lkey };

			if (fk_post_recv(b, &qb, recvs, &rs, 1))
				break;
			recvs++;
		}
		while (posted < count && posted - done < depth) {
			struct fk_sge sg = { ma.buf, len, ma.lkey };
			struct fk_wr wr = {
				.wr_id = posted, .flags = VIRTIO_IB_SEND_SIGNALED, .sge = &sg,
				.nsge = 1, .remote_addr = (uintptr_t)mb.buf, .rkey = mb.rkey,
				.trunc = -1,
				.opcode = op == OP_READ ? VIRTIO_IB_WR_RDMA_READ :
					  op == OP_SEND ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE,
			};

			if (fk_post_send(a, &qa, &wr))
				break;
			posted++;
		}
		loop_run_once(env.loop, 1000000);
	}
	r->ok = true;
out:
	r->cpu = cpu_s() - t0;
	{
		const struct roce_tp_stats *sa = roce_tp_get_stats(a->tp);
		const struct roce_tp_stats *sb = roce_tp_get_stats(b->tp);
		const struct roce_tp_stats *req = sa, *rsp = sb;

		r->drops = sw_get_stats(env.sw)->fault_dropped;
		r->tx_frames = req->tx_frames + rsp->tx_frames;
		r->tx_runs = req->tx_runs + rsp->tx_runs;
		r->tx_pkts = read ? rsp->read_resp_sent : req->tx_frames;
		r->retransmits = read ? rsp->read_resp_sent - (uint64_t)count *
						 ((len + 1023) / 1024) :
					req->retransmits;
		r->rewinds = req->rewinds;
		r->acks = rsp->acks_sent;
		r->naks = rsp->naks_sent;
		r->seq_err = rsp->rx_seq_err;
		r->probes = req->probes;
		r->timeouts = req->timeouts;
	}
	psec_unregister(&psa);
	psec_unregister(&psb);
	fk_env_fini(&env);
}

static void show(const char *name, const struct result *r, unsigned count)
{
	printf("%-9s cpu %7.3f s  drops %7" PRIu64 "  runs %8" PRIu64 "  frames %9" PRIu64
	       "  acks %7" PRIu64 "  naks %6" PRIu64 "  resent %8" PRIu64 "  rewinds %6" PRIu64
	       "  seq_err %8" PRIu64 "  probes %4" PRIu64 "  timeouts %" PRIu64 "%s\n",
	       name, r->cpu, r->drops, r->tx_runs, r->tx_frames, r->acks, r->naks,
	       r->retransmits, r->rewinds, r->seq_err, r->probes, r->timeouts,
	       r->ok ? "" : "  FAILED");
	(void)count;
}

int main(int argc, char **argv)
{
	bool read = argc > 1 && !strcmp(argv[1], "read");
	enum op op = read ? OP_READ : argc > 1 && !strcmp(argv[1], "send") ? OP_SEND : OP_WRITE;
	uint32_t len = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : (read ? 2u << 20 : 65536);
	unsigned count = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : (read ? 300 : 20000);
	unsigned depth = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : (read ? 16 : 64);
	const char *spec = argc > 5 ? argv[5] : "drop=1,seed=1";
	struct result l, f;

	vlog_level = VLOG_ERR;
	if (!len || !count || !depth || depth > 256) {
		fprintf(stderr, "usage: bench_loss [write|read|send [LEN [COUNT [DEPTH [SPEC]]]]]\n");
		return 2;
	}
	/* BENCH_LOSS_ONLY=lossless|lossy: one of them (for a profile) */
	const char *only = getenv("BENCH_LOSS_ONLY");

	memset(&l, 0, sizeof(l));
	memset(&f, 0, sizeof(f));
	if (!only || strcmp(only, "lossy"))
		run(op, len, count, depth, NULL, &l);
	if (!only || strcmp(only, "lossless"))
		run(op, len, count, depth, spec, &f);
	printf("# %s %u x %u bytes, %u outstanding, faults %s\n",
	       op == OP_READ ? "READ" : op == OP_SEND ? "SEND" : "WRITE", count,
	       len, depth, spec);
	show("lossless", &l, count);
	show("lossy", &f, count);
	if (l.ok && f.ok && f.cpu > 0)
		printf("ratio %.3fx (CPU lossless / lossy), %.2f us of CPU per drop, "
		       "%.1f frames more per drop\n",
		       l.cpu / f.cpu, f.drops ? (f.cpu - l.cpu) * 1e6 / (double)f.drops : 0.0,
		       f.drops ? ((double)(f.tx_runs + f.acks + f.naks) -
				  (double)(l.tx_runs + l.acks + l.naks)) / (double)f.drops : 0.0);
	return l.ok && f.ok ? 0 : 1;
}
