/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: frames from the network into a RoCE device with live QPs.
 *
 * Each input builds a fresh device (tests/unit/roce_tp_fake.h: memfd
 * memory, rings driven from the driver side, no loop so no timers) with an
 * RC, a UC, a UD and the GSI QP in RTS, receive WQEs posted, memory regions
 * with remote access, and RC/UC work requests outstanding (their packets
 * went nowhere), then feeds it a sequence of frames read from the input:
 *  - raw frames (any bytes; optionally with the ICRC and destination MAC
 *    fixed so they get past the cheap checks), or
 *  - frames built from fuzzed header fields for one of the QPs (opcode, PSN
 *    relative to what the QP expects, RETH, AETH, DETH, immediate, payload),
 *    so the responder and the completer see plausible traffic.
 * The engine runs after each frame. Checked: no crash or sanitizer report,
 * the engine's invariants after every step, no frame leaked.
 * Inputs of odd length run with ROCE_EXT negotiated: the QPs and one MR
 * allow remote atomics, a fast-registered MR and a bound type 2 window
 * exist (rkey selectors 2 and 3), an atomic and a SEND with invalidate are
 * outstanding on the RC QP, and built frames carry an AtomicETH (VA, R_Key
 * from the RETH fields, aligned unless the length is odd) and an IETH.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "roce/roce_icrc.h"
#include "unit/roce_tp_fake.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static uint32_t rd(struct in *in, unsigned bytes)
{
	uint32_t v = 0;

	while (bytes--) {
		v = (v << 8) | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

struct env {
	struct fk_env env;
	struct fk_dev *d;
	uint32_t pd, cq;
	struct fk_mr mr, mr_ro;
	bool ext;
	uint32_t fast_key, mw_key;
	struct fk_qp q[4];         /* RC, UC, UD, GSI */
	uint8_t peer_gid[16], peer_mac[6];
	uint32_t peer_qpn;
};

static const uint8_t types[4] = { VIRTIO_IB_QPT_RC, VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD,
				  VIRTIO_IB_QPT_GSI };

static void env_connect(struct env *e, uint32_t qpn, uint8_t type)
{
	struct rres_qp_modify m;

	memset(&m, 0, sizeof(m));
	m.qkey = type == VIRTIO_IB_QPT_GSI ? 0x80010000u : 0x1234;
	m.qp_access_flags = FK_ACC_ALL | (e->ext ? VIRTIO_IB_ACCESS_REMOTE_ATOMIC : 0);
	if (type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI) {
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_QKEY, &m);
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTR, 0, &m);
		m.sq_psn = 0x100;
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
		return;
	}
	fk_modify(e->d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_ACCESS_FLAGS, &m);
	memcpy(m.ah_attr.grh.dgid, e->peer_gid, 16);
	m.ah_attr.grh.sgid_index = 1;
	memcpy(m.ah_attr.dmac, e->peer_mac, 6);
	m.path_mtu = VIRTIO_IB_MTU_1024;
	m.dest_qp_num = e->peer_qpn;
	m.rq_psn = 0x200;
	m.max_dest_rd_atomic = 2;
	m.min_rnr_timer = 1;
	if (type == VIRTIO_IB_QPT_RC)
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTR,
			  VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			  VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
			  VIRTIO_IB_QP_MIN_RNR_TIMER, &m);
	else
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTR,
			  VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			  VIRTIO_IB_QP_RQ_PSN, &m);
	m.sq_psn = 0x100;
	m.timeout = 14;
	m.retry_cnt = 3;
	m.rnr_retry = 3;
	m.max_rd_atomic = 2;
	if (type == VIRTIO_IB_QPT_RC)
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTS,
			  VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
			  VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC, &m);
	else
		fk_modify(e->d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
}

static void env_setup(struct env *e, bool ext)
{
	struct fk_dev_cfg dc = { .arena = 4u << 20, .no_loop = true, .small = true, .qps = 8,
				 .cqs = 4, .ext = ext };
	static const uint8_t peer_ip[4] = { 10, 0, 0, 99 };

	memset(e, 0, sizeof(*e));
	e->ext = ext;
	if (fk_env_init(&e->env, false))
		abort();
	e->d = fk_dev_new(&e->env, &dc);
	e->pd = fk_pd(e->d);
	e->cq = fk_cq(e->d, 512, 64, true);
	e->mr = fk_mr_reg(e->d, e->pd, 65536, FK_ACC_ALL |
			  (ext ? VIRTIO_IB_ACCESS_REMOTE_ATOMIC | VIRTIO_IB_ACCESS_MW_BIND : 0));
	e->mr_ro = fk_mr_reg(e->d, e->pd, 8192, VIRTIO_IB_ACCESS_REMOTE_READ);
	if (ext) {
		const struct rres_pd *pd = rres_pd_lookup(&e->d->rd, e->pd);
		struct rres_mr *fm = fk_mr_alloc(e->d, e->pd, 2);
		struct rres_mr *mw = fk_mw_alloc(e->d, e->pd, VIRTIO_IB_MW_TYPE_2);
		uint8_t *buf = fk_alloc(e->d, 8192, 4096);

		e->fast_key = fk_key8(fm->lkey, 1);
		e->mw_key = fk_key8(mw->rkey, 1);
		if (rres_mr_fast_reg(&e->d->rd, pd, e->fast_key, (uintptr_t)e->mr.buf, 8192,
				     fk_page_list(e->d, buf, 8192), FK_ACC_ALL |
				     VIRTIO_IB_ACCESS_REMOTE_ATOMIC) ||
		    rres_mw_bind(&e->d->rd, pd, e->mw_key, e->mr.lkey, (uintptr_t)e->mr.buf + 4096,
				 16384, VIRTIO_IB_MW_ACCESS_MASK))
			abort();
	}
	roce_gid_from_ipv4(e->peer_gid, peer_ip);
	memcpy(e->peer_mac, (uint8_t[6]){ 0x52, 0x54, 0, 0, 0, 0x99 }, 6);
	e->peer_qpn = 0x77;
	for (int i = 0; i < 4; i++) {
		struct fk_qp_cfg qc = { .type = types[i], .pdn = e->pd, .scq = e->cq, .rcq = e->cq,
					.sq_num = 16, .rq_num = 16, .max_send_wr = 16,
					.max_recv_wr = 16, .max_inline = 64 };

		e->q[i] = fk_qp_new(e->d, &qc);
		env_connect(e, e->q[i].qpn, types[i]);
		for (int k = 0; k < 4; k++) {
			struct fk_sge s = { e->mr.buf + 8192 * (uint64_t)(k + 1), 4096 + 40,
					    e->mr.lkey };

			fk_post_recv(e->d, &e->q[i], k, &s, 1);
		}
	}
	/* Outstanding work for the completer: SEND, READ, WRITE (RC), WRITE
	 * with immediate (UC). */
	{
		struct fk_sge s = { e->mr.buf, 3000, e->mr.lkey };
		struct fk_wr wr = { .wr_id = 1, .opcode = VIRTIO_IB_WR_SEND, .sge = &s, .nsge = 1,
				    .flags = VIRTIO_IB_SEND_SIGNALED, .trunc = -1,
				    .remote_addr = 0x1000, .rkey = 0x4242 };

		fk_post_send(e->d, &e->q[0], &wr);
		wr.wr_id = 2;
		wr.opcode = VIRTIO_IB_WR_RDMA_READ;
		s.len = 5000;
		fk_post_send(e->d, &e->q[0], &wr);
		if (e->ext) {
			struct fk_sge r = { e->mr.buf + 60000, 8, e->mr.lkey };

			wr.wr_id = 5;
			wr.opcode = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
			wr.sge = &r;
			wr.compare_add = 3;
			fk_post_send(e->d, &e->q[0], &wr);
			wr.wr_id = 6;
			wr.opcode = VIRTIO_IB_WR_SEND_WITH_INV;
			wr.inv_rkey = 0x4343;
			fk_post_send(e->d, &e->q[0], &wr);
			wr.sge = &s;
		}
		wr.wr_id = 3;
		wr.opcode = VIRTIO_IB_WR_RDMA_WRITE;
		wr.flags |= VIRTIO_IB_SEND_FENCE;
		s.len = 100;
		fk_post_send(e->d, &e->q[0], &wr);
		wr.wr_id = 4;
		wr.opcode = VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
		wr.flags = 0;
		fk_post_send(e->d, &e->q[1], &wr);
	}
	roce_tp_poll(e->d->tp);
	pkt_queue_purge(&e->d->wire);
}

static void check_invariants(struct env *e)
{
	const struct roce_tp *tp = e->d->tp;
	uint32_t kept = 0;

	for (int i = 0; i < 4; i++) {
		struct rres_qp *qp = rres_qp_lookup(&e->d->rd, e->q[i].qpn);
		struct roce_tq *tq;

		if (!qp || !(tq = qp->transport))
			abort();
		if ((int32_t)(tq->sq_cur - tq->sq_head) < 0 ||
		    (int32_t)(tq->sq_tail - tq->sq_cur) < 0 ||
		    tq->sq_tail - tq->sq_head > tq->sq_slots)
			abort();
		if (tq->res_active > tq->nres || tq->rd_out > 255)
			abort();
		if (tq->rq.r && tq->rq.r->vq.broken)
			abort(); /* the device never breaks a ring the driver kept valid */
		if (tq->sq.r && tq->sq.r->vq.broken)
			abort();
		/* out-of-sequence frames kept (roce_keep.c): RC only, bounded,
		 * ascending from beyond epsn */
		if (tq->keep_n > ROCE_TP_KEEP_FRAMES ||
		    (tq->keep_n && qp->type != VIRTIO_IB_QPT_RC))
			abort();
		for (uint32_t k = 0; k + 1 < tq->keep_n; k++) {
			const struct roce_keep_ent *a =
				&tq->keep[(tq->keep_head + k) % ROCE_TP_KEEP_FRAMES];
			const struct roce_keep_ent *b =
				&tq->keep[(tq->keep_head + k + 1) % ROCE_TP_KEEP_FRAMES];

			if (roce_psn_diff(b->pi.psn, roce_psn_add(a->pi.psn, a->n - 1u)) <= 0)
				abort();
		}
		kept += tq->keep_n;
	}
	if (kept != tp->keep_frames || kept > ROCE_TP_KEEP_TP_MAX ||
	    tp->stats.rx_kept < tp->stats.rx_kept_used + tp->stats.rx_kept_freed)
		abort();
}

/* A frame from fuzzed header fields for one of the QPs. */
static struct pkt *build(struct env *e, struct in *in)
{
	struct roce_hdr_fields f;
	struct roce_path path;
	uint32_t qsel = rd(in, 1), flags, plen, rkey_sel;
	struct roce_tq *tq = NULL;
	struct rres_qp *qp;
	uint8_t *payload;
	int16_t delta;
	struct pkt *p;

	memset(&f, 0, sizeof(f));
	memset(&path, 0, sizeof(path));
	f.opcode = (uint8_t)rd(in, 1);
	if (qsel < 4) {
		f.dqpn = e->q[qsel].qpn;
		qp = rres_qp_lookup(&e->d->rd, f.dqpn);
		tq = qp ? qp->transport : NULL;
	} else {
		f.dqpn = ((qsel << 16) | rd(in, 2)) & ROCE_QPN_MASK;
	}
	delta = (int16_t)rd(in, 2);
	if (tq)
		f.psn = roce_psn_add((roce_opcode_mask(f.opcode) & ROCE_OPF_RESP) ? tq->una :
				     tq->epsn, (uint32_t)(int32_t)delta);
	else
		f.psn = (uint32_t)delta & ROCE_PSN_MASK;
	flags = rd(in, 1);
	f.se = flags & 1;
	f.ackreq = flags & 2;
	f.pkey = flags & 4 ? (uint16_t)rd(in, 2) : ROCE_PKEY_DEFAULT;
	f.reth.va = (uintptr_t)e->mr.buf + rd(in, 4) % 70000;
	f.reth.len = rd(in, 4);
	if (!(flags & 8))
		f.reth.len %= 20000;
	rkey_sel = rd(in, 1);
	f.reth.rkey = rkey_sel == 0 ? e->mr.rkey : rkey_sel == 1 ? e->mr_ro.rkey :
		      rkey_sel == 2 && e->ext ? e->fast_key : rkey_sel == 3 && e->ext ? e->mw_key :
		      rd(in, 4);
	f.aeth.syndrome = (uint8_t)rd(in, 1);
	f.aeth.msn = rd(in, 3);
	f.deth.qkey = flags & 16 ? rd(in, 4) : (qsel == 3 ? 0x80010000u : 0x1234);
	f.deth.sqpn = rd(in, 3);
	f.imm = rd(in, 4);
	/* AtomicETH and IETH from the same fields (no extra input bytes) */
	f.atmeth.va = f.reth.len & 1 ? f.reth.va : f.reth.va & ~7ull;
	f.atmeth.rkey = f.reth.rkey;
	f.atmeth.swap_add = (uint64_t)f.imm << 32 | f.reth.len;
	f.atmeth.compare = f.aeth.msn;
	f.atmack_orig = f.atmeth.swap_add;
	f.ieth_rkey = f.reth.rkey;
	plen = rd(in, 2) % 4200;
	memcpy(path.smac, e->peer_mac, 6);
	memcpy(path.dmac, e->d->mac, 6);
	memcpy(path.sgid, e->peer_gid, 16);
	memcpy(path.dgid, rres_gid_get(&e->d->rd, 1), 16);
	if (flags & 32)
		path.sgid[15] ^= 1; /* not the QP's peer */
	if (flags & 64) {
		path.flags |= ROCE_PATH_F_VLAN;
		path.vlan_tci = 5;
	}
	path.udp_sport = 0xc000;
	p = pkt_alloc();
	if (!p)
		return NULL;
	if (!(roce_opcode_mask(f.opcode) & ROCE_OPF_PAYLOAD))
		plen = 0;
	if (roce_pkt_build(p, &path, &f, plen, &payload)) {
		pkt_free(p);
		return NULL;
	}
	for (uint32_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)rd(in, 1);
	roce_pkt_finalize(p, 0);
	if (flags & 128) {
		uint32_t at = rd(in, 2) % p->len;

		p->data[at] ^= (uint8_t)(rd(in, 1) | 1);
	}
	return p;
}

static struct pkt *raw(struct env *e, struct in *in)
{
	uint32_t len = rd(in, 2) % (PKT_MAX_FRAME + 1), fix = rd(in, 1);
	struct pkt *p = pkt_alloc();

	if (!p)
		return NULL;
	for (uint32_t i = 0; i < len; i++)
		p->data[i] = (uint8_t)rd(in, 1);
	p->len = len;
	if ((fix & 1) && len >= 6)
		memcpy(p->data, e->d->mac, 6);
	if (fix & 2)
		roce_icrc_frame_set(p->data, len);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	struct in in = { data, size };
	uint64_t base;
	struct env e;
	unsigned frames = 0;

	if (!once) {
		vlog_level = -1;
		once = 1;
	}
	base = pkt_outstanding();
	env_setup(&e, size & 1);
	while (in.n && frames++ < 64) {
		uint32_t kind = rd(&in, 1);
		struct pkt *p = kind & 0x80 ? raw(&e, &in) : build(&e, &in);

		if (p && !roce_tp_input(e.d->tp, p))
			pkt_free(p);
		if (kind & 0x40) {
			/* the driver posts more receive buffers */
			struct fk_qp *q = &e.q[kind & 3];
			struct fk_sge s = { e.mr.buf + 40000, 3000, e.mr.lkey };

			fk_ring_reap(q->rq);
			fk_post_recv(e.d, q, 100 + frames, &s, 1);
		}
		roce_tp_poll(e.d->tp);
		pkt_queue_purge(&e.d->wire);
		check_invariants(&e);
		{
			struct virtio_rdma_cq_req wc[64];

			fk_poll_cq(e.d, e.cq, wc, 64);
		}
	}
	for (int i = 0; i < 4; i++)
		roce_tp_poll(e.d->tp);
	check_invariants(&e);
	fk_env_fini(&e.env);
	if (pkt_outstanding() != base)
		abort();
	return 0;
}
