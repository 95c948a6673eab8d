/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibv_qp_ex work-request API (ibv_create_qp_ex with send_ops_flags,
 * ibv_wr_*) on two vrdma devices in one process (vrdma-run --socket A
 * --socket B -- api_wr [-g GID_INDEX]). Every operation's effect is
 * compared byte for byte with what it should have done:
 *
 *  - creation: TSO / unknown ops EOPNOTSUPP, RDMA ops on UD EOPNOTSUPP,
 *    ibv_qp_to_qp_ex of a plain QP NULL
 *  - ibv_wr_send / _send_imm / _rdma_write / _rdma_write_imm /
 *    _rdma_read with ibv_wr_set_sge, _set_sge_list, _set_inline_data (the
 *    bytes copied at the call: the buffer is overwritten before
 *    ibv_wr_complete), _set_inline_data_list
 *  - ibv_wr_atomic_fetch_add and _cmp_swp (hit and miss): fetched values
 *    and the remote word
 *  - several operations in one ibv_wr_start .. ibv_wr_complete batch;
 *    ibv_wr_abort posts nothing; a batch with an error (inline data too
 *    long, UD send without ibv_wr_set_ud_addr) fails EINVAL in
 *    ibv_wr_complete and posts nothing
 *  - ibv_wr_bind_mw (type 2 window): RDMA WRITE through the window;
 *    ibv_wr_send_inv: the receiver sees IBV_WC_WITH_INV and the key, and
 *    a WRITE through that key afterwards fails REM_ACCESS_ERR;
 *    ibv_wr_local_inv: same, on a fresh QP pair
 *  - UD: ibv_wr_send + ibv_wr_set_ud_addr
 */
#include "api_common.h"

#define BUF 8192

static const uint64_t rc_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			       IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			       IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
			       IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;

struct bufs {
	uint8_t *la, *res, *rb, *rem, *win;
	struct ibv_mr *mla, *mres, *mrb, *mrem, *mwin;
};

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 256, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *x = ibv_create_cq_ex(ctx, &a);

	if (!x)
		ext_die("ibv_create_cq_ex: %s", strerror(errno));
	return x;
}

/* Fresh CQs and RC QPs with every op, connected. */
static void rc_pair(struct api_end *a, struct api_end *b)
{
	struct api_end *e[2] = { a, b };
	int i;

	for (i = 0; i < 2; i++) {
		if (e[i]->qp && ibv_destroy_qp(e[i]->qp))
			ext_die("ibv_destroy_qp: %s", strerror(errno));
		if (e[i]->cq && ibv_destroy_cq(e[i]->cq))
			ext_die("ibv_destroy_cq: %s", strerror(errno));
		e[i]->cqx = cq_ex(e[i]->c.ctx);
		e[i]->cq = ibv_cq_ex_to_cq(e[i]->cqx);
		e[i]->psn = (uint32_t)(lrand48() & 0xffffff);
		api_qp(e[i], IBV_QPT_RC, rc_ops);
	}
	api_connect(a, b);
}

static void creation_checks(struct api_end *a)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp;
	struct ibv_cq *cq = ext_cq(&a->c, 16);

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = a->c.pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	errno = 0;
	qp = ibv_create_qp_ex(a->c.ctx, &ia);
	API_CHECK(!qp && errno == EOPNOTSUPP, "send op TSO refused with EOPNOTSUPP");
	ia.qp_type = IBV_QPT_UD;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	errno = 0;
	qp = ibv_create_qp_ex(a->c.ctx, &ia);
	API_CHECK(!qp && errno == EOPNOTSUPP, "RDMA_WRITE on a UD QP refused with EOPNOTSUPP");
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | (1u << 20);
	errno = 0;
	qp = ibv_create_qp_ex(a->c.ctx, &ia);
	API_CHECK(!qp && errno == EINVAL, "unknown comp_mask refused with EINVAL");
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.qp_type = IBV_QPT_RC;
	qp = ibv_create_qp_ex(a->c.ctx, &ia);
	API_CHECK(qp && ibv_qp_to_qp_ex(qp) == NULL,
		  "a QP without send_ops_flags has no ibv_qp_ex (NULL)");
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/* The requester's completion of wr_id; dies unless SUCCESS. */
static struct api_wc req_done(struct api_end *a, uint64_t wr_id, enum ibv_wc_opcode op,
			      const char *what)
{
	struct api_wc w = api_poll(a, what);

	if (w.status != IBV_WC_SUCCESS || w.wr_id != wr_id || w.opcode != op)
		ext_die("%s: completion status %s, wr_id 0x%" PRIx64 " (0x%" PRIx64 "), opcode %d (%d)",
			what, ibv_wc_status_str(w.status), w.wr_id, wr_id, w.opcode, op);
	return w;
}

static int complete(struct api_end *e)
{
	return ibv_wr_complete(e->qpx);
}

static void data_checks(struct api_end *a, struct api_end *b, struct bufs *m)
{
	struct ibv_qp_ex *x = a->qpx;
	struct api_wc w;
	uint8_t tmp[128];
	struct ibv_sge sl[3];
	struct ibv_data_buf db[3];
	uint64_t *word = (uint64_t *)(m->rem + 4096), *result = (uint64_t *)m->res;
	int r;

	/* send + set_sge */
	api_fill(m->la, 1500, 1);
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 1);
	ibv_wr_start(x);
	x->wr_id = 101;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 1500);
	r = complete(a);
	req_done(a, 101, IBV_WC_SEND, "wr_send");
	w = api_poll(b, "wr_send (responder)");
	API_CHECK(!r && w.status == IBV_WC_SUCCESS && w.byte_len == 1500 &&
			  !memcmp(m->la, m->rb, 1500),
		  "ibv_wr_send + ibv_wr_set_sge: 1500 bytes intact");

	/* send_imm + set_inline_data, buffer overwritten before complete */
	api_fill(tmp, 40, 2);
	memcpy(m->la, tmp, 40);
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 2);
	ibv_wr_start(x);
	x->wr_id = 102;
	ibv_wr_send_imm(x, htonl(0x0102));
	ibv_wr_set_inline_data(x, tmp, 40);
	memset(tmp, 0xee, sizeof(tmp));
	r = complete(a);
	req_done(a, 102, IBV_WC_SEND, "wr_send_imm");
	w = api_poll(b, "wr_send_imm (responder)");
	API_CHECK(!r && w.byte_len == 40 && (w.wc_flags & IBV_WC_WITH_IMM) &&
			  w.imm == htonl(0x0102) && !memcmp(m->la, m->rb, 40),
		  "ibv_wr_send_imm + ibv_wr_set_inline_data: imm and 40 bytes as they were at the call");

	/* send + set_inline_data_list */
	api_fill(m->la, 60, 3);
	db[0] = (struct ibv_data_buf){ .addr = m->la, .length = 10 };
	db[1] = (struct ibv_data_buf){ .addr = m->la + 10, .length = 20 };
	db[2] = (struct ibv_data_buf){ .addr = m->la + 30, .length = 30 };
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 3);
	ibv_wr_start(x);
	x->wr_id = 103;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 3, db);
	r = complete(a);
	req_done(a, 103, IBV_WC_SEND, "inline list");
	w = api_poll(b, "inline list (responder)");
	API_CHECK(!r && w.byte_len == 60 && !memcmp(m->la, m->rb, 60),
		  "ibv_wr_set_inline_data_list: 3 buffers, 60 bytes in order");

	/* send + set_sge_list */
	api_fill(m->la, 3000, 4);
	sl[0] = (struct ibv_sge){ .addr = (uintptr_t)m->la + 2000, .length = 1000, .lkey = m->mla->lkey };
	sl[1] = (struct ibv_sge){ .addr = (uintptr_t)m->la, .length = 1500, .lkey = m->mla->lkey };
	sl[2] = (struct ibv_sge){ .addr = (uintptr_t)m->la + 1500, .length = 500, .lkey = m->mla->lkey };
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 4);
	ibv_wr_start(x);
	x->wr_id = 104;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 3, sl);
	r = complete(a);
	req_done(a, 104, IBV_WC_SEND, "sge list");
	w = api_poll(b, "sge list (responder)");
	API_CHECK(!r && w.byte_len == 3000 && !memcmp(m->rb, m->la + 2000, 1000) &&
			  !memcmp(m->rb + 1000, m->la, 2000),
		  "ibv_wr_set_sge_list: 3 SGEs gathered in order");

	/* rdma_write + set_sge */
	api_fill(m->la, 4096, 5);
	ibv_wr_start(x);
	x->wr_id = 105;
	ibv_wr_rdma_write(x, m->mrem->rkey, (uintptr_t)m->rem + 8);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 4000);
	r = complete(a);
	req_done(a, 105, IBV_WC_RDMA_WRITE, "wr_rdma_write");
	API_CHECK(!r && !memcmp(m->rem + 8, m->la, 4000), "ibv_wr_rdma_write: 4000 bytes intact");

	/* rdma_write + set_inline_data */
	api_fill(m->la, 50, 6);
	ibv_wr_start(x);
	x->wr_id = 106;
	ibv_wr_rdma_write(x, m->mrem->rkey, (uintptr_t)m->rem + 5000);
	ibv_wr_set_inline_data(x, m->la, 50);
	r = complete(a);
	req_done(a, 106, IBV_WC_RDMA_WRITE, "wr_rdma_write inline");
	API_CHECK(!r && !memcmp(m->rem + 5000, m->la, 50), "ibv_wr_rdma_write inline: 50 bytes intact");

	/* rdma_write_imm */
	api_fill(m->la, 2222, 7);
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 7);
	ibv_wr_start(x);
	x->wr_id = 107;
	ibv_wr_rdma_write_imm(x, m->mrem->rkey, (uintptr_t)m->rem + 100, htonl(0x7777));
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 2222);
	r = complete(a);
	req_done(a, 107, IBV_WC_RDMA_WRITE, "wr_rdma_write_imm");
	w = api_poll(b, "wr_rdma_write_imm (responder)");
	API_CHECK(!r && w.opcode == IBV_WC_RECV_RDMA_WITH_IMM && w.imm == htonl(0x7777) &&
			  w.byte_len == 2222 && !memcmp(m->rem + 100, m->la, 2222),
		  "ibv_wr_rdma_write_imm: RECV_RDMA_WITH_IMM, imm, 2222 bytes intact");

	/* rdma_read */
	api_fill(m->rem + 6000, 1800, 8);
	memset(m->la, 0, BUF);
	ibv_wr_start(x);
	x->wr_id = 108;
	ibv_wr_rdma_read(x, m->mrem->rkey, (uintptr_t)m->rem + 6000);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la + 16, 1800);
	r = complete(a);
	w = req_done(a, 108, IBV_WC_RDMA_READ, "wr_rdma_read");
	API_CHECK(!r && w.byte_len == 1800 && !memcmp(m->la + 16, m->rem + 6000, 1800),
		  "ibv_wr_rdma_read: 1800 bytes intact");

	/* atomics */
	*word = 100;
	*result = 0;
	ibv_wr_start(x);
	x->wr_id = 109;
	ibv_wr_atomic_fetch_add(x, m->mrem->rkey, (uintptr_t)word, 5);
	ibv_wr_set_sge(x, m->mres->lkey, (uintptr_t)result, 8);
	r = complete(a);
	req_done(a, 109, IBV_WC_FETCH_ADD, "wr_atomic_fetch_add");
	API_CHECK(!r && *result == 100 && *word == 105,
		  "ibv_wr_atomic_fetch_add: fetched %" PRIu64 ", remote now %" PRIu64, *result, *word);
	ibv_wr_start(x);
	x->wr_id = 110;
	ibv_wr_atomic_cmp_swp(x, m->mrem->rkey, (uintptr_t)word, 105, 7);
	ibv_wr_set_sge(x, m->mres->lkey, (uintptr_t)result, 8);
	r = complete(a);
	req_done(a, 110, IBV_WC_COMP_SWAP, "wr_atomic_cmp_swp");
	API_CHECK(!r && *result == 105 && *word == 7,
		  "ibv_wr_atomic_cmp_swp hit: fetched %" PRIu64 ", remote now %" PRIu64, *result, *word);
	ibv_wr_start(x);
	x->wr_id = 111;
	ibv_wr_atomic_cmp_swp(x, m->mrem->rkey, (uintptr_t)word, 999, 1);
	ibv_wr_set_sge(x, m->mres->lkey, (uintptr_t)result, 8);
	r = complete(a);
	req_done(a, 111, IBV_WC_COMP_SWAP, "wr_atomic_cmp_swp miss");
	API_CHECK(!r && *result == 7 && *word == 7,
		  "ibv_wr_atomic_cmp_swp miss: fetched %" PRIu64 ", remote unchanged", *result);

	/* one batch: send (unsignaled), write, read */
	api_fill(m->la, 3 * 1024, 9);
	memset(m->la + 4096, 0, 1024);
	api_fill(m->rem + 7000, 1024, 10);
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 12);
	ibv_wr_start(x);
	x->wr_id = 121;
	x->wr_flags = 0;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 1024);
	x->wr_id = 122;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, m->mrem->rkey, (uintptr_t)m->rem);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la + 1024, 1024);
	x->wr_id = 123;
	ibv_wr_rdma_read(x, m->mrem->rkey, (uintptr_t)m->rem + 7000);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la + 4096, 1024);
	r = complete(a);
	req_done(a, 122, IBV_WC_RDMA_WRITE, "batch write");
	req_done(a, 123, IBV_WC_RDMA_READ, "batch read");
	w = api_poll(b, "batch send (responder)");
	API_CHECK(!r && w.byte_len == 1024 && !memcmp(m->rb, m->la, 1024) &&
			  !memcmp(m->rem, m->la + 1024, 1024) &&
			  !memcmp(m->la + 4096, m->rem + 7000, 1024),
		  "one batch of send + write + read: only the signaled ones complete, data intact");

	/* 40 sends in one batch (the builder's arrays grow), alternately
	 * with an SGE and with inline data */
	{
		int i, ok = 1;

		for (i = 0; i < 40; i++)
			api_post_recv(b, m->rb + i * 128, 128, m->mrb->lkey, 1000 + (uint64_t)i);
		api_fill(m->la, 40 * 100, 13);
		ibv_wr_start(x);
		for (i = 0; i < 40; i++) {
			x->wr_id = 2000 + (uint64_t)i;
			x->wr_flags = i == 39 ? IBV_SEND_SIGNALED : 0;
			ibv_wr_send(x);
			if (i % 2)
				ibv_wr_set_inline_data(x, m->la + i * 100, 20 + (size_t)i);
			else
				ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la + (uint64_t)i * 100,
					       20 + (uint32_t)i);
		}
		r = complete(a);
		req_done(a, 2039, IBV_WC_SEND, "40-send batch");
		for (i = 0; i < 40; i++) {
			w = api_poll(b, "40-send batch (responder)");
			if (w.status != IBV_WC_SUCCESS || w.wr_id != 1000 + (uint64_t)i ||
			    w.byte_len != 20 + (uint32_t)i ||
			    memcmp(m->rb + i * 128, m->la + i * 100, 20 + (size_t)i))
				ok = 0;
		}
		API_CHECK(!r && ok, "40 sends in one batch (SGEs and inline alternating) arrive in "
				    "order, each intact");
	}

	/* abort, and a batch with an error: neither posts anything */
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 13);
	api_fill(m->la, 256, 11);
	ibv_wr_start(x);
	x->wr_id = 131;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 256);
	ibv_wr_abort(x);
	ibv_wr_start(x);
	x->wr_id = 132;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la, 256);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, m->la, 1u << 20);
	r = complete(a);
	API_CHECK(r == EINVAL, "a batch with inline data beyond max_inline_data: ibv_wr_complete "
			       "EINVAL (%d)", r);
	api_fill(m->la + 512, 99, 12);
	ibv_wr_start(x);
	x->wr_id = 133;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m->mla->lkey, (uintptr_t)m->la + 512, 99);
	r = complete(a);
	req_done(a, 133, IBV_WC_SEND, "send after abort");
	w = api_poll(b, "send after abort (responder)");
	API_CHECK(!r && w.wr_id == 13 && w.byte_len == 99 && !memcmp(m->rb, m->la + 512, 99),
		  "ibv_wr_abort and the failed batch posted nothing: the next receive holds the "
		  "next send (%u bytes)", w.byte_len);
}

/* Type 2 window: bind, WRITE through it, SEND_WITH_INV; then LOCAL_INV on
 * a fresh pair. */
static void window_checks(struct api_end *a, struct api_end *b, struct bufs *m)
{
	struct ibv_mw *mw = ibv_alloc_mw(b->c.pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi;
	uint32_t key;
	struct api_wc w;
	int r;

	if (!mw)
		ext_die("ibv_alloc_mw type 2: %s", strerror(errno));
	memset(&bi, 0, sizeof(bi));
	bi.mr = m->mwin;
	bi.addr = (uintptr_t)m->win + 1024;
	bi.length = 2048;
	bi.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	key = ibv_inc_rkey(mw->rkey);
	ibv_wr_start(b->qpx);
	b->qpx->wr_id = 201;
	b->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(b->qpx, mw, key, &bi);
	r = complete(b);
	req_done(b, 201, IBV_WC_BIND_MW, "wr_bind_mw");
	api_fill(m->la, 2048, 20);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 202;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a->qpx, key, (uintptr_t)m->win + 1024);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 2048);
	r |= complete(a);
	req_done(a, 202, IBV_WC_RDMA_WRITE, "write through the window");
	API_CHECK(!r && !memcmp(m->win + 1024, m->la, 2048),
		  "ibv_wr_bind_mw: a WRITE through the type 2 window lands (2048 bytes)");

	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 203);
	api_fill(m->la, 64, 21);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 204;
	ibv_wr_send_inv(a->qpx, key);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 64);
	r = complete(a);
	req_done(a, 204, IBV_WC_SEND, "wr_send_inv");
	w = api_poll(b, "wr_send_inv (responder)");
	API_CHECK(!r && w.status == IBV_WC_SUCCESS && (w.wc_flags & IBV_WC_WITH_INV) &&
			  w.imm == key && w.byte_len == 64 && !memcmp(m->rb, m->la, 64),
		  "ibv_wr_send_inv: receiver sees IBV_WC_WITH_INV, invalidated rkey 0x%x (0x%x)",
		  w.imm, key);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 205;
	ibv_wr_rdma_write(a->qpx, key, (uintptr_t)m->win + 1024);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 16);
	complete(a);
	w = api_poll(a, "write through an invalidated window");
	API_CHECK(w.status == IBV_WC_REM_ACCESS_ERR,
		  "after SEND_WITH_INV a WRITE through the key fails: %s", ibv_wc_status_str(w.status));

	/* LOCAL_INV on a fresh pair (the error above broke this one). */
	rc_pair(a, b);
	key = ibv_inc_rkey(key);
	ibv_wr_start(b->qpx);
	b->qpx->wr_id = 211;
	b->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(b->qpx, mw, key, &bi);
	b->qpx->wr_id = 212;
	ibv_wr_local_inv(b->qpx, key);
	r = complete(b);
	req_done(b, 211, IBV_WC_BIND_MW, "rebind");
	req_done(b, 212, IBV_WC_LOCAL_INV, "wr_local_inv");
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 213;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(a->qpx, key, (uintptr_t)m->win + 1024);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 16);
	complete(a);
	w = api_poll(a, "write through a locally invalidated window");
	API_CHECK(!r && w.status == IBV_WC_REM_ACCESS_ERR,
		  "ibv_wr_local_inv: LOCAL_INV completion, then a WRITE through the key fails: %s",
		  ibv_wc_status_str(w.status));
	if (ibv_dealloc_mw(mw))
		ext_die("ibv_dealloc_mw");
}

static void ud_checks(struct api_end *a, struct api_end *b, struct bufs *m)
{
	struct api_end *e[2] = { a, b };
	struct api_wc w;
	int i, r;

	for (i = 0; i < 2; i++) {
		ibv_destroy_qp(e[i]->qp);
		e[i]->qp = NULL;
		e[i]->psn = 0;
		api_qp(e[i], IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	}
	api_connect(a, b);
	api_fill(m->la, 700, 30);
	api_post_recv(b, m->rb, BUF, m->mrb->lkey, 301);
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = 302;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(a->qpx);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 700);
	r = complete(a);
	API_CHECK(r == EINVAL, "UD send without ibv_wr_set_ud_addr: ibv_wr_complete EINVAL (%d)", r);
	ibv_wr_start(a->qpx);
	ibv_wr_send_imm(a->qpx, htonl(0x3030));
	ibv_wr_set_ud_addr(a->qpx, a->ah, b->qp->qp_num, 0x11111111);
	ibv_wr_set_sge(a->qpx, m->mla->lkey, (uintptr_t)m->la, 700);
	r = complete(a);
	req_done(a, 302, IBV_WC_SEND, "UD wr_send");
	w = api_poll(b, "UD wr_send (responder)");
	API_CHECK(!r && w.status == IBV_WC_SUCCESS && w.src_qp == a->qp->qp_num &&
			  w.imm == htonl(0x3030) && w.byte_len == 740 && !memcmp(m->rb + 40, m->la, 700),
		  "UD ibv_wr_send_imm + ibv_wr_set_ud_addr: 700 bytes intact, src_qp %u", w.src_qp);
}

int main(int argc, char **argv)
{
	struct api_end a, b;
	struct bufs m;
	int gid = 1, opt;

	ext_prog = "api_wr";
	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt == 'g')
			gid = atoi(optarg);
		else
			ext_die("usage: api_wr [-g GID_INDEX]");
	}
	srand48(getpid());
	api_open(&a, 0, gid);
	api_open(&b, 1, gid);
	creation_checks(&a);

	m.la = calloc(1, BUF);
	m.res = calloc(1, 64);
	m.rb = calloc(1, BUF);
	m.rem = aligned_alloc(4096, BUF);
	m.win = aligned_alloc(4096, 4096);
	memset(m.rem, 0, BUF);
	memset(m.win, 0, 4096);
	m.mla = ext_reg(&a.c, m.la, BUF, IBV_ACCESS_LOCAL_WRITE);
	m.mres = ext_reg(&a.c, m.res, 64, IBV_ACCESS_LOCAL_WRITE);
	m.mrb = ext_reg(&b.c, m.rb, BUF, IBV_ACCESS_LOCAL_WRITE);
	m.mrem = ext_reg(&b.c, m.rem, BUF,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC);
	m.mwin = ext_reg(&b.c, m.win, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);

	rc_pair(&a, &b);
	data_checks(&a, &b, &m);
	window_checks(&a, &b, &m);
	ud_checks(&a, &b, &m);

	ibv_dereg_mr(m.mla);
	ibv_dereg_mr(m.mres);
	ibv_dereg_mr(m.mrb);
	ibv_dereg_mr(m.mrem);
	ibv_dereg_mr(m.mwin);
	api_close(&a);
	api_close(&b);
	free(m.la);
	free(m.res);
	free(m.rb);
	free(m.rem);
	free(m.win);
	return api_exit();
}
