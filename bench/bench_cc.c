/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control benchmark: two senders into one receiver through a
 * rate-limited port, with and without congestion control, same run.
 *
 * Three devices of the real transport engine on one switch (the in-process
 * fake driver rings of tests/unit/roce_tp_fake.h stand in for virtqueues).
 * The switch port towards the receiver is a shaper: a FIFO drained at
 * RATE bit/s, tail drop above QLIM frames, CE marked on ECT frames queued
 * above MARK frames (the ECN threshold of a switch queue). Each sender's RC
 * QP writes TOTAL bytes in 64 KiB RDMA WRITEs, WINDOW WRs outstanding.
 * Printed per mode: tail drops, retransmitted packets, go-back-N rewinds,
 * CNPs, time; then the ratios CC / no CC.
 *
 *   build/bench/bench_cc [RATE_MBIT [TOTAL_MIB [QLIM [MARK]]]]
 */
#include "unit/roce_tp_fake.h"
#include "common/log.h"

#include <inttypes.h>
#include <time.h>

#define MSG (64u * 1024)
#define WINDOW 8

struct shaper {
	struct port *port;            /* the receiver's switch port */
	const struct port_ops *orig;
	struct port_ops ops;
	struct pkt_queue q;
	struct loop *loop;
	struct loop_timer timer;
	uint64_t rate_bps, next_ns;
	uint32_t qlim, mark;
	uint64_t drops, marks, sent;
};

static struct shaper g_sh;

static void sh_drain(struct loop_timer *t, void *arg)
{
	struct shaper *s = arg;
	uint64_t now = loop_now_ns();
	struct pkt *p;

	(void)t;
	while (s->q.len && s->next_ns <= now) {
		p = pkt_queue_pop(&s->q);
		s->next_ns = MAX(s->next_ns, now - 1000000) +
			     (uint64_t)p->len * 8 * 1000000000ull / s->rate_bps;
		s->sent++;
		s->orig->xmit(s->port, p);
	}
	if (s->q.len)
		loop_timer_arm(s->loop, &s->timer, s->next_ns);
}

static void sh_xmit(struct port *port, struct pkt *p)
{
	struct shaper *s = &g_sh;

	(void)port;
	if (s->q.len >= s->qlim) {
		s->drops++;
		pkt_free(p);
		return;
	}
	if (s->q.len >= s->mark && pkt_set_ce(p))
		s->marks++;
	pkt_queue_push(&s->q, p);
	if (s->q.len == 1)
		sh_drain(NULL, s);
}

struct sender {
	struct fk_dev *d;
	uint32_t pd, cq;
	struct fk_qp q;
	struct fk_mr mr;
	uint64_t posted, done;
};

struct result {
	uint64_t drops, marks, retransmits, rewinds, cnps, cc_paced, seq_err;
	double secs;
	bool ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(bool cc, uint64_t rate_bps, uint64_t total, uint32_t qlim, uint32_t mark,
		struct result *r)
{
	struct fk_env env;
	struct fk_dev_cfg dc = { .eth_mtu = 1500, .arena = 64u << 20 };
	struct fk_qp_cfg qc = { .type = VIRTIO_IB_QPT_RC, .max_send_sge = 1, .max_recv_sge = 1,
				.sq_num = 64, .rq_num = 16, .max_send_wr = 64, .max_recv_wr = 16 };
	struct fk_path path;
	struct sender s[2];
	struct fk_dev *b;
	uint32_t pdb, cqb;
	struct fk_mr rb;
	struct fk_qp qb[2];
	double t0;

	memset(r, 0, sizeof(*r));
	memset(&g_sh, 0, sizeof(g_sh));
	if (fk_env_init(&env, true))
		abort();
	fk_path_default(&path);
	path.timeout = 12;
	s[0].d = fk_dev_new(&env, &dc);
	s[1].d = fk_dev_new(&env, &dc);
	b = fk_dev_new(&env, &dc);
	pdb = fk_pd(b);
	cqb = fk_cq(b, 256, 64, true);
	rb = fk_mr_reg(b, pdb, 2 * MSG, FK_ACC_ALL);
	for (int i = 0; i < 2; i++) {
		s[i].pd = fk_pd(s[i].d);
		s[i].cq = fk_cq(s[i].d, 256, 64, true);
		s[i].mr = fk_mr_reg(s[i].d, s[i].pd, MSG, FK_ACC_ALL);
		s[i].posted = s[i].done = 0;
		qc.pdn = s[i].pd;
		qc.scq = qc.rcq = s[i].cq;
		s[i].q = fk_qp_new(s[i].d, &qc);
		qc.pdn = pdb;
		qc.scq = qc.rcq = cqb;
		qb[i] = fk_qp_new(b, &qc);
		if (fk_connect(s[i].d, s[i].q.qpn, b, qb[i].qpn, &path) ||
		    fk_connect(b, qb[i].qpn, s[i].d, s[i].q.qpn, &path))
			abort();
	}
	for (unsigned i = 0; i < env.ndev; i++)
		env.dev[i]->tp->cc.enabled = cc;
	/* the receiver's port becomes the rate-limited one */
	g_sh.port = &b->port;
	g_sh.orig = b->port.ops;
	g_sh.ops = *b->port.ops;
	g_sh.ops.xmit = sh_xmit;
	b->port.ops = &g_sh.ops;
	g_sh.loop = env.loop;
	g_sh.rate_bps = rate_bps;
	g_sh.qlim = qlim;
	g_sh.mark = mark;
	pkt_queue_init(&g_sh.q);
	loop_timer_init(&g_sh.timer, sh_drain, &g_sh);

	t0 = now_s();
	while (s[0].done < total / MSG || s[1].done < total / MSG) {
		struct virtio_rdma_cq_req wc[16];

		for (int i = 0; i < 2; i++) {
			unsigned n = fk_poll_cq(s[i].d, s[i].cq, wc, 16);

			for (unsigned k = 0; k < n; k++) {
				if (wc[k].status != VIRTIO_IB_WC_SUCCESS) {
					fprintf(stderr, "bench_cc: WR failed with status %u\n",
						wc[k].status);
					goto out;
				}
				s[i].done++;
			}
			if (n)
				fk_ring_reap(s[i].q.sq);
			while (s[i].posted < total / MSG && s[i].posted - s[i].done < WINDOW) {
				struct fk_sge sg = { s[i].mr.buf, MSG, s[i].mr.lkey };
				struct fk_wr wr = {
					.wr_id = s[i].posted, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
					.flags = VIRTIO_IB_SEND_SIGNALED, .sge = &sg, .nsge = 1,
					.remote_addr = (uintptr_t)rb.buf + (uint64_t)i * MSG,
					.rkey = rb.rkey, .trunc = -1,
				};

				if (fk_post_send(s[i].d, &s[i].q, &wr))
					break;
				s[i].posted++;
			}
		}
		loop_run_once(env.loop, 1000000);
		if (now_s() - t0 > 300) {
			fprintf(stderr, "bench_cc: no completion after 300 s\n");
			goto out;
		}
	}
	r->ok = true;
out:
	r->secs = now_s() - t0;
	r->drops = g_sh.drops;
	r->marks = g_sh.marks;
	for (int i = 0; i < 2; i++) {
		const struct roce_tp_stats *st = roce_tp_get_stats(s[i].d->tp);

		r->retransmits += st->retransmits;
		r->rewinds += st->rewinds;
		r->cc_paced += st->cc_paced;
	}
	r->cnps = roce_tp_get_stats(b->tp)->cnp_sent;
	r->seq_err = roce_tp_get_stats(b->tp)->rx_seq_err;
	loop_timer_cancel(env.loop, &g_sh.timer);
	pkt_queue_purge(&g_sh.q);
	b->port.ops = g_sh.orig;
	fk_env_fini(&env);
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : (a ? 1e9 : 1.0);
}

int main(int argc, char **argv)
{
	uint64_t rate = (argc > 1 ? strtoull(argv[1], NULL, 0) : 500) * 1000000ull;
	uint64_t total = (argc > 2 ? strtoull(argv[2], NULL, 0) : 16) << 20;
	uint32_t qlim = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 128;
	uint32_t mark = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 16;
	struct result r[2];

	vlog_level = VLOG_ERR;
	printf("# 2 senders -> 1 receiver, port %" PRIu64 " Mbit/s, queue %u frames, "
	       "CE above %u, %" PRIu64 " MiB per sender in %u KiB WRITEs\n",
	       rate / 1000000, qlim, mark, total >> 20, MSG / 1024);
	printf("| mode | ok | tail drops | CE marks | retransmitted pkts | rewinds | "
	       "CNPs | paced turns | seq NAK cause | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n");
	for (int cc = 0; cc < 2; cc++) {
		run(cc, rate, total, qlim, mark, &r[cc]);
		printf("| %s | %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
		       " | %" PRIu64 " | %" PRIu64 " | %.2f |\n",
		       cc ? "DCQCN" : "no CC", r[cc].ok ? "yes" : "NO", r[cc].drops, r[cc].marks,
		       r[cc].retransmits, r[cc].rewinds, r[cc].cnps, r[cc].cc_paced,
		       r[cc].seq_err, r[cc].secs);
	}
	printf("\nratios CC / no CC: tail drops %.3f, retransmitted packets %.3f, "
	       "rewinds %.3f, time %.3f\n",
	       ratio(r[1].drops, r[0].drops), ratio(r[1].retransmits, r[0].retransmits),
	       ratio(r[1].rewinds, r[0].rewinds), r[0].secs > 0 ? r[1].secs / r[0].secs : 0);
	return r[0].ok && r[1].ok ? 0 : 1;
}
