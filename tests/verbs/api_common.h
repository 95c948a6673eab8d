/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the verbs API acceptance programs (api_cq.c, api_wr.c,
 * api_query.c): one process drives two devices (the first two of the
 * device list: vrdma-run --socket A --socket B) and connects a QP of one
 * to a QP of the other, so every check can compare what one side did with
 * what the other side saw without a TCP side channel.
 */
#ifndef VRDMA_TESTS_VERBS_API_COMMON_H
#define VRDMA_TESTS_VERBS_API_COMMON_H

#include "ext_common.h"

/* One side: device, PD, one CQ for sends and receives, one QP. */
struct api_end {
	struct ext_ctx c;
	struct ibv_cq_ex *cqx; /* the CQ if extended, else NULL */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* the QP's ibv_wr_* interface, if any */
	struct ibv_ah *ah;     /* UD: towards the peer */
	uint32_t psn;
};

/* A completion read through either kind of CQ. */
struct api_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm; /* imm_data (network order) or invalidated rkey */
	uint32_t qp_num, src_qp;
	unsigned int wc_flags;
	uint32_t slid;
	uint8_t sl, dlid_path_bits;
	uint64_t ts, wallclock;
};

static EXT_UNUSED int api_check_failures;

/* Report one check: "ok: what" or "FAIL: what" (the program goes on and
 * exits 1 at the end). */
#define API_CHECK(cond, ...)                                                    \
	do {                                                                    \
		if (cond) {                                                     \
			printf("%s: ok: ", ext_prog);                           \
		} else {                                                        \
			printf("%s: FAIL: ", ext_prog);                         \
			api_check_failures++;                                   \
		}                                                               \
		printf(__VA_ARGS__);                                            \
		putchar('\n');                                                  \
		fflush(stdout);                                                 \
	} while (0)

/* Open the device at index idx of the device list. */
static EXT_UNUSED void api_open(struct api_end *e, int idx, int gid_index)
{
	struct ibv_device **list;
	char name[64];
	int n;

	memset(e, 0, sizeof(*e));
	list = ibv_get_device_list(&n);
	if (!list || n <= idx)
		ext_die("need %d devices, found %d (run with two --socket)", idx + 1,
			list ? n : 0);
	snprintf(name, sizeof(name), "%s", ibv_get_device_name(list[idx]));
	ibv_free_device_list(list);
	ext_open(&e->c, name, gid_index);
	e->psn = (uint32_t)(lrand48() & 0xffffff);
}

static EXT_UNUSED void api_close(struct api_end *e)
{
	if (e->ah && ibv_destroy_ah(e->ah))
		ext_die("ibv_destroy_ah");
	if (e->qp && ibv_destroy_qp(e->qp))
		ext_die("ibv_destroy_qp: %s", strerror(errno));
	if (e->cq && ibv_destroy_cq(e->cq))
		ext_die("ibv_destroy_cq: %s", strerror(errno));
	ext_close(&e->c);
}

/* A QP of type t on e->cq: through ibv_create_qp_ex with send_ops when
 * send_ops is not 0, else ibv_create_qp. Left in RESET. */
static EXT_UNUSED void api_qp(struct api_end *e, enum ibv_qp_type t, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	ia.qp_type = t;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = e->c.pd;
	if (send_ops) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = send_ops;
	}
	e->qp = ibv_create_qp_ex(e->c.ctx, &ia);
	if (!e->qp)
		ext_die("ibv_create_qp_ex (type %d, send ops 0x%" PRIx64 "): %s", t, send_ops,
			strerror(errno));
	if (send_ops) {
		e->qpx = ibv_qp_to_qp_ex(e->qp);
		if (!e->qpx)
			ext_die("ibv_qp_to_qp_ex: NULL");
	}
}

/* Connect a's and b's QPs (RC / UC: to each other; UD: to RTS, with an AH
 * towards the peer). Access: everything remote. */
static EXT_UNUSED void api_connect(struct api_end *a, struct api_end *b)
{
	struct api_end *e[2] = { a, b };
	int i;

	for (i = 0; i < 2; i++) {
		struct api_end *me = e[i], *peer = e[1 - i];
		struct ibv_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_INIT;
		qa.port_num = 1;
		if (me->qp->qp_type == IBV_QPT_UD) {
			struct ibv_ah_attr ah;

			qa.qkey = 0x11111111;
			if (ibv_modify_qp(me->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_QKEY))
				ext_die("UD QP to INIT: %s", strerror(errno));
			memset(&qa, 0, sizeof(qa));
			qa.qp_state = IBV_QPS_RTR;
			if (ibv_modify_qp(me->qp, &qa, IBV_QP_STATE))
				ext_die("UD QP to RTR: %s", strerror(errno));
			qa.qp_state = IBV_QPS_RTS;
			qa.sq_psn = me->psn;
			if (ibv_modify_qp(me->qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN))
				ext_die("UD QP to RTS: %s", strerror(errno));
			memset(&ah, 0, sizeof(ah));
			ah.is_global = 1;
			ah.grh.dgid = peer->c.gid;
			ah.grh.sgid_index = (uint8_t)me->c.gid_index;
			ah.grh.hop_limit = 64;
			ah.port_num = 1;
			me->ah = ibv_create_ah(me->c.pd, &ah);
			if (!me->ah)
				ext_die("ibv_create_ah: %s", strerror(errno));
			continue;
		}
		qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ |
				     (me->qp->qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
		if (ibv_modify_qp(me->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
			ext_die("QP to INIT: %s", strerror(errno));
	}
	if (a->qp->qp_type == IBV_QPT_UD)
		return;
	for (i = 0; i < 2; i++) {
		struct api_end *me = e[i], *peer = e[1 - i];
		struct ext_dest rem = { .qpn = peer->qp->qp_num, .psn = peer->psn,
					.gid = peer->c.gid };

		ext_connect_qp(&me->c, me->qp, me->psn, &rem);
	}
}

/* The next completion of e's CQ (bounded wait), through the extended
 * accessors when the CQ is extended (each flag it was created with). */
static EXT_UNUSED struct api_wc api_poll(struct api_end *e, const char *what)
{
	uint64_t deadline = ext_now_ms() + EXT_TIMEOUT_MS;
	struct api_wc w;

	memset(&w, 0, sizeof(w));
	for (;;) {
		if (e->cqx) {
			struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
			int r = ibv_start_poll(e->cqx, &pa);

			if (r == 0) {
				w.wr_id = e->cqx->wr_id;
				w.status = e->cqx->status;
				w.opcode = ibv_wc_read_opcode(e->cqx);
				w.byte_len = ibv_wc_read_byte_len(e->cqx);
				w.wc_flags = ibv_wc_read_wc_flags(e->cqx);
				w.imm = (w.wc_flags & IBV_WC_WITH_INV) ?
						ibv_wc_read_invalidated_rkey(e->cqx) :
						ibv_wc_read_imm_data(e->cqx);
				w.qp_num = ibv_wc_read_qp_num(e->cqx);
				w.src_qp = ibv_wc_read_src_qp(e->cqx);
				w.slid = ibv_wc_read_slid(e->cqx);
				w.sl = ibv_wc_read_sl(e->cqx);
				w.dlid_path_bits = ibv_wc_read_dlid_path_bits(e->cqx);
				if (e->cqx->read_completion_ts)
					w.ts = ibv_wc_read_completion_ts(e->cqx);
				if (e->cqx->read_completion_wallclock_ns)
					w.wallclock = ibv_wc_read_completion_wallclock_ns(e->cqx);
				ibv_end_poll(e->cqx);
				return w;
			}
			if (r != ENOENT)
				ext_die("ibv_start_poll (%s): %s", what, strerror(r));
		} else {
			struct ibv_wc wc;
			int r = ibv_poll_cq(e->cq, 1, &wc);

			if (r < 0)
				ext_die("ibv_poll_cq (%s)", what);
			if (r == 1) {
				w.wr_id = wc.wr_id;
				w.status = wc.status;
				w.opcode = wc.opcode;
				w.byte_len = wc.byte_len;
				w.wc_flags = wc.wc_flags;
				w.imm = (wc.wc_flags & IBV_WC_WITH_INV) ? wc.invalidated_rkey :
									  wc.imm_data;
				w.qp_num = wc.qp_num;
				w.src_qp = wc.src_qp;
				return w;
			}
		}
		if (ext_now_ms() > deadline)
			ext_die("%s: no completion within %d ms", what, EXT_TIMEOUT_MS);
	}
}

/* Post one receive of [buf, buf + len) (lkey) with wr_id. */
static EXT_UNUSED void api_post_recv(struct api_end *e, void *buf, uint32_t len, uint32_t lkey,
				     uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		ext_die("ibv_post_recv: %s", strerror(errno));
}

/* Fill buf with a pattern derived from seed. */
static EXT_UNUSED void api_fill(void *buf, size_t len, unsigned int seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static EXT_UNUSED int api_exit(void)
{
	if (api_check_failures) {
		printf("%s: FAIL: %d check(s) failed\n", ext_prog, api_check_failures);
		return 1;
	}
	printf("%s: PASS\n", ext_prog);
	return 0;
}

#endif /* VRDMA_TESTS_VERBS_API_COMMON_H */
