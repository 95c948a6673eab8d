/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: send-queue elements of the virtio-rdma device (the 75-byte
 * struct virtio_rdma_dev_sq_req with its SGEs or inline data, any length,
 * split over up to four descriptors at fuzzed offsets) for an RC, UC, UD or
 * GSI QP in RTS of a virtio-rdma device (src/roce/roce_virtio_rdma.c at the
 * transport's ring boundary).
 *
 * 1. roce_sq_parse() on it directly: a valid WR has an opcode this device
 *    allows on the QP type, a length within the limits, SGEs within the QP's
 *    capacity; an invalid one a failure status.
 * 2. The same bytes posted on the QP's real send ring and the engine run:
 *    the WR completes (a 38-byte completion, IB numbering) or stays
 *    outstanding exactly once, every frame it produced parses with a valid
 *    ICRC (or is the ARP / ND request of an address vector without MAC),
 *    the ring does not break.
 * The MR the SGEs can name is at a fixed I/O address (0x10000, 16 KiB); the
 * selector byte picks the QP type, the cuts and max_inline_data.
 * A REG_MR element that carries its page list (wr.reg.pages not 0) is made
 * reachable: a key with device bits 0 names the device's fast-registration
 * MR (4 pages), an odd pages value points (pages >> 1) & 63 bytes into a
 * page array of 4 arena pages, an even one anywhere in the arena.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "backend/virtio_rdma_dev.h"
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
	m.qp_access_flags = FK_ACC_ALL | VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
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

/* The opcodes this device executes, per QP type. */
static bool opcode_valid(uint8_t type, uint8_t op)
{
	bool rc = type == VIRTIO_IB_QPT_RC, uc = type == VIRTIO_IB_QPT_UC;

	switch (op) {
	case VIRTIO_RDMA_DEV_WR_SEND:
	case VIRTIO_RDMA_DEV_WR_SEND_WITH_IMM:
		return true;
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE:
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM:
		return rc || uc;
	case VIRTIO_RDMA_DEV_WR_RDMA_READ:
	case VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD:
	case VIRTIO_RDMA_DEV_WR_SEND_WITH_INV:
		return rc;
	case VIRTIO_RDMA_DEV_WR_LOCAL_INV:
	case VIRTIO_RDMA_DEV_WR_REG_MR:
		return type != VIRTIO_IB_QPT_GSI;
	default:
		return false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fk_dev_cfg dc = { .arena = 4u << 20, .no_loop = true, .small = true, .qps = 8,
				 .cqs = 2, .max_send_sge = 8 };
	static struct roce_swqe *w;
	static struct vq_elem e;
	static uint8_t in[75 + 16 * 64];
	struct rres_mr *fmr;
	uint64_t *plist;
	struct fk_env env;
	struct fk_dev *d;
	struct fk_qp q;
	struct sq_cut cut;
	uint32_t pd, cq, sel, cuts[3], ncut, len;
	uint8_t type, *chain;
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
	for (unsigned i = 0; i < 3; i++)
		cuts[i] = data[1 + i] * 3u;
	data += 4;
	size -= 4;
	if (size > 75 + 16 * 64)
		size = 75 + 16 * 64;
	len = (uint32_t)size;
	if (!w)
		w = malloc(4096);

	base = pkt_outstanding();
	if (fk_env_init(&env, false))
		abort();
	d = fk_dev_new(&env, &dc);
	virtio_rdma_dev_setup(&d->rd);
	pd = fk_pd(d);
	cq = fk_cq(d, 64, 16, true);
	{
		struct fk_mr mr = fk_mr_reg_at(d, pd, 16384,
					       FK_ACC_ALL | VIRTIO_IB_ACCESS_REMOTE_ATOMIC, 0x10000);

		fk_fill(mr.buf, 16384, 1);
	}
	{
		struct fk_qp_cfg qc = { .type = type, .pdn = pd, .scq = cq, .rcq = cq, .sq_num = 8,
					.rq_num = 8, .max_send_wr = 8, .max_recv_wr = 8,
					.max_send_sge = 4, .max_inline = ((sel >> 4) & 7) * 64 };

		q = fk_qp_new(d, &qc);
	}
	fmr = fk_mr_alloc(d, pd, 4);
	plist = fk_alloc(d, 4 * 8, 8);
	{
		uint8_t *pg = fk_alloc(d, 4 * 4096, 4096);

		for (unsigned i = 0; i < 4; i++)
			plist[i] = htole64((uintptr_t)pg + 4096u * i);
	}
	memcpy(in, data, len);
	data = in;
	if (len >= 75 && get_le32(in + 8) == VIRTIO_RDMA_DEV_WR_REG_MR && get_le64(in + 52)) {
		uint64_t v = get_le64(in + 52);
		uint32_t key = get_le32(in + 28);

		if (!(key & ~0xffu))
			put_le32(in + 28, (fmr->lkey & ~0xffu) | key);
		put_le64(in + 52, v & 1 ? (uintptr_t)plist + ((v >> 1) & 63) :
				  (uintptr_t)d->arena + v % d->arena_size);
	}
	connect_qp(d, q.qpn, type);
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
		if (!w->bad || w->status == VIRTIO_IB_WC_SUCCESS || w->status > 16)
			abort();
	} else {
		if (w->bad || w->head != 3 || !opcode_valid(type, w->opcode) ||
		    w->length > d->rd.attr.max_msg_sz)
			abort();
		if (roce_wr_is_atomic(w->opcode) &&
		    (w->length != 8 || w->inl || w->res_sge.length != 8))
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
	/* every frame it sent is a valid RoCE frame, or the ARP request /
	 * neighbour solicitation of an address vector without MAC */
	while ((p = pkt_queue_pop(&d->wire))) {
		struct roce_pkt_info pi;
		bool arp = p->len >= 14 && p->data[12] == 0x08 && p->data[13] == 0x06;
		bool nd = p->len >= 21 && p->data[12] == 0x86 && p->data[13] == 0xdd &&
			  p->data[20] == 58;

		if (!arp && !nd && roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &pi) != 0)
			abort();
		pkt_free(p);
	}
	done = fk_ring_reap(q.sq);
	if (done > 1)
		abort();
	if (done == 0 && tq->sq_tail - tq->sq_head != 1)
		abort();
	if (done == 1 && tq->sq_tail != tq->sq_head)
		abort();
	/* completions: the device's 38-byte element, IB numbering */
	{
		struct fk_ring *fr = fk_cq_ring(d, cq);
		uint32_t clen;
		uint8_t *tok;

		while ((tok = vq_drv_get_used(&fr->drv, &clen))) {
			struct virtio_rdma_dev_cq_req c;

			if (clen != sizeof(c))
				abort();
			memcpy(&c, tok, sizeof(c));
			if (c.status > VIRTIO_RDMA_DEV_WC_GENERAL_ERR || c.port_num != 1 ||
			    le32toh(c.qp_num) != q.qpn)
				abort();
		}
	}
	fk_env_fini(&env);
	if (pkt_outstanding() != base)
		abort();
	return 0;
}
