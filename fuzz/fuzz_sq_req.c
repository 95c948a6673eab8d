/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: send-queue requests. The input is a send-ring element (a
 * struct virtio_rdma_sq_req and its SGEs, any length, split over up to
 * four descriptors at fuzzed offsets) for an RC, UC, UD or GSI QP in RTS.
 *
 * 1. roce_sq_parse() on it directly: the result must be consistent (a
 *    valid WR has an opcode of the QP type, a length within the limits, SGEs
 *    within the QP's capacity; an invalid one a non-success status).
 * 2. The same bytes posted on the QP's real send ring (driver side) and the
 *    engine run: the WR must complete or be outstanding exactly once, its
 *    descriptor given back when it completes, every packet it produced must
 *    parse with a valid ICRC, and the ring must not break.
 * The memory region the SGEs can name is small and at a fixed I/O address
 * (0x10000, 16 KiB; its lkey is deterministic, found by the fuzzer through
 * comparisons), so valid WRs are reachable.
 * With bit 7 of the selector the device negotiated ROCE_EXT: the
 * extension's views of the request (atomic, bind_mw, reg, invalidate_rkey)
 * are parsed and executed; an ALLOC_MR MR and windows of both types exist
 * (deterministic keys) so REG_MR, LOCAL_INV and BIND_MW can succeed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "roce/roce_icrc.h"
#include "sq_cut.h"
#include "unit/roce_tp_fake.h"

static const uint8_t types[4] = { VIRTIO_IB_QPT_RC, VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD,
				  VIRTIO_IB_QPT_GSI };

static void connect_qp(struct fk_dev *d, uint32_t qpn, uint8_t type)
{
	static const uint8_t peer_ip[4] = { 10, 0, 0, 99 };
	struct rres_qp_modify m;

	memset(&m, 0, sizeof(m));
	m.qkey = type == VIRTIO_IB_QPT_GSI ? 0x80010000u : 0x1234;
	m.qp_access_flags = FK_ACC_ALL;
	m.sq_psn = 0xfffff0;
	if (type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI) {
		fk_modify(d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_QKEY, &m);
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTR, 0, &m);
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
		return;
	}
	fk_modify(d, qpn, VIRTIO_IB_QPS_INIT, VIRTIO_IB_QP_ACCESS_FLAGS, &m);
	roce_gid_from_ipv4(m.ah_attr.grh.dgid, peer_ip);
	m.ah_attr.grh.sgid_index = 1;
	m.ah_attr.dmac[0] = 0x52;
	m.ah_attr.dmac[5] = 0x99;
	m.path_mtu = VIRTIO_IB_MTU_256;
	m.dest_qp_num = 0x77;
	m.max_dest_rd_atomic = 1;
	m.timeout = 14;
	m.retry_cnt = 1;
	m.max_rd_atomic = 2;
	if (type == VIRTIO_IB_QPT_RC) {
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTR,
			  VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			  VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
			  VIRTIO_IB_QP_MIN_RNR_TIMER, &m);
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTS,
			  VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
			  VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC, &m);
	} else {
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTR,
			  VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			  VIRTIO_IB_QP_RQ_PSN, &m);
		fk_modify(d, qpn, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QP_SQ_PSN, &m);
	}
}

static bool opcode_valid(uint8_t type, uint8_t op, bool ext)
{
	bool rc = type == VIRTIO_IB_QPT_RC, uc = type == VIRTIO_IB_QPT_UC;

	if (op == VIRTIO_IB_WR_SEND || op == VIRTIO_IB_WR_SEND_WITH_IMM)
		return true;
	if (ext && (op == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
		    op == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD || op == VIRTIO_IB_WR_SEND_WITH_INV))
		return rc;
	if (ext && (op == VIRTIO_IB_WR_LOCAL_INV || op == VIRTIO_IB_WR_REG_MR))
		return type != VIRTIO_IB_QPT_GSI;
	if (ext && op == VIRTIO_IB_WR_BIND_MW)
		return rc || uc;
	if (op == VIRTIO_IB_WR_RDMA_WRITE || op == VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM)
		return type == VIRTIO_IB_QPT_RC || type == VIRTIO_IB_QPT_UC;
	return op == VIRTIO_IB_WR_RDMA_READ && type == VIRTIO_IB_QPT_RC;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fk_dev_cfg dc = { .arena = 4u << 20, .no_loop = true, .small = true, .qps = 8,
				 .cqs = 2, .max_send_sge = 8 };
	static struct roce_swqe *w;
	static struct vq_elem e;
	struct virtio_rdma_cq_req wc[8];
	struct fk_env env;
	struct fk_dev *d;
	struct fk_qp q;
	struct fk_mr mr;
	struct sq_cut cut;
	uint32_t pd, cq, sel, cuts[3], ncut, len, ah;
	uint8_t type, *chain;
	bool ext;
	struct rres_qp *qp;
	struct roce_tq *tq;
	uint64_t base;
	struct pkt *p;
	unsigned done;

	vlog_level = -1;
	if (size < 4)
		return 0;
	sel = data[0];
	type = types[sel & 3];
	ncut = (sel >> 2) & 3;
	ext = sel & 0x80;
	dc.ext = ext;
	for (unsigned i = 0; i < 3; i++)
		cuts[i] = data[1 + i] * 3u;
	data += 4;
	size -= 4;
	if (size > 576 + 16 * 64)
		size = 576 + 16 * 64;
	len = (uint32_t)size;
	if (!w)
		w = malloc(4096);

	base = pkt_outstanding();
	if (fk_env_init(&env, false))
		abort();
	d = fk_dev_new(&env, &dc);
	pd = fk_pd(d);
	cq = fk_cq(d, 64, 16, true);
	/* A fixed I/O address, so SGEs in the input can name it. */
	mr = fk_mr_reg_at(d, pd, 16384, FK_ACC_ALL | (ext ? VIRTIO_IB_ACCESS_REMOTE_ATOMIC |
						     VIRTIO_IB_ACCESS_MW_BIND : 0), 0x10000);
	fk_fill(mr.buf, 16384, 1);
	if (ext) {
		fk_mr_alloc(d, pd, 4);
		fk_mw_alloc(d, pd, VIRTIO_IB_MW_TYPE_1);
		fk_mw_alloc(d, pd, VIRTIO_IB_MW_TYPE_2);
	}
	{
		struct fk_qp_cfg qc = { .type = type, .pdn = pd, .scq = cq, .rcq = cq, .sq_num = 8,
					.rq_num = 8, .max_send_wr = 8, .max_recv_wr = 8,
					.max_send_sge = 4, .max_inline = ((sel >> 4) & 7) * 64 };

		q = fk_qp_new(d, &qc);
	}
	connect_qp(d, q.qpn, type);
	{
		struct fk_path pth;

		fk_path_default(&pth);
		/* an AH of the QP's PD to the device itself: handle 1 */
		ah = fk_ah(d, pd, d, &pth);
		(void)ah;
	}
	qp = rres_qp_lookup(&d->rd, q.qpn);
	tq = qp->transport;

	/* 1: parse straight from the bytes, split over iovecs */
	memset(&e, 0, sizeof(e));
	sq_cut(&cut, len, cuts, ncut);
	e.out_num = (uint16_t)sq_cut_iov(&cut, data, e.iov);
	e.out_len = len;
	e.head = 3;
	roce_sq_parse(tq, &e, w);
	if (w->state == ROCE_WQE_DONE) {
		if (!w->bad || w->status == VIRTIO_IB_WC_SUCCESS || w->status > 15)
			abort();
	} else {
		if (w->bad || w->head != 3 || !opcode_valid(type, w->opcode, ext) ||
		    w->length > d->rd.attr.max_msg_sz)
			abort();
		if (roce_wr_is_local(w->opcode) && (w->length || w->num_sge || w->inl))
			abort();
		if (roce_wr_is_atomic(w->opcode) &&
		    (w->length != 8 || w->inl || w->res_sge.length != 8))
			abort();
		if (w->sge_unchecked != (ext && !roce_wr_is_local(w->opcode) && !w->inl))
			abort();
		if (w->inl ? w->length > qp->cap.max_inline_data :
			     w->num_sge > qp->cap.max_send_sge)
			abort();
		if ((type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI) &&
		    w->length > virtio_ib_mtu_bytes(d->rd.attr.active_mtu))
			abort();
	}

	/* 2: the same element through the ring and the engine */
	chain = fk_alloc(d, len + 1, 64);
	memcpy(chain, data, len);
	{
		struct vq_buf out[SQ_CUT_MAX];

		/* (a descriptor is never empty: an empty request is one byte) */
		for (unsigned i = 0; i < cut.n; i++)
			out[i] = (struct vq_buf){ (uintptr_t)chain + cut.off[i], MAX(cut.len[i], 1u) };
		if (vq_drv_add(&q.sq->drv, out, cut.n, NULL, 0, chain))
			abort();
		fk_ring_publish(d, q.sq);
	}
	for (int i = 0; i < 8; i++)
		roce_tp_poll(d->tp);
	if (q.sq->r.vq.broken)
		abort();
	/* every frame it sent is a valid RoCE frame (a run: each of its frames,
	 * as the switch splits it before a frame leaves the process) */
	while ((p = pkt_queue_pop(&d->wire))) {
		struct roce_pkt_info pi;
		struct pkt_queue split;

		if (p->flags & PKT_F_RUN) {
			pkt_queue_init(&split);
			if (roce_run_split(p, &split) != 0)
				abort();
			pkt_free(p);
			while ((p = pkt_queue_pop(&split)))
				pkt_queue_push(&d->wire, p);
			continue;
		}
		/* the ICRC the switch writes when the frame leaves the process */
		if (roce_pkt_fill_icrc(p) != 0 ||
		    roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC, &pi) != 0)
			abort();
		pkt_free(p);
	}
	done = fk_ring_reap(q.sq);
	if (done > 1)
		abort();
	/* completed (used entry given back) or still outstanding (RC waits for
	 * an ACK), never both, never lost */
	if (done == 0 && tq->sq_tail - tq->sq_head != 1)
		abort();
	if (done == 1 && tq->sq_tail != tq->sq_head)
		abort();
	fk_poll_cq(d, cq, wc, 8);
	fk_env_fini(&env);
	if (pkt_outstanding() != base)
		abort();
	return 0;
}
