/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control-command layer both device models share (virtio-net RoCE in
 * rres_ctrl.c, virtio-rdma in virtio_rdma_ctrl.c): each ABI is a table with
 * one row per command (name, request and response length, extension gate,
 * handler), run by rres_cmd_exec(), which checks the lengths and the
 * response space, runs the handler into a zeroed local buffer, copies it out
 * only on success and counts the outcome. The helpers below encode and decode
 * the fields both ABIs carry under the same names.
 */
#ifndef VRDMA_BACKEND_RRES_CMD_H
#define VRDMA_BACKEND_RRES_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/rres_dev.h"
#include "common/util.h"

/* Request length of a row whose handler checks it itself. */
#define RRES_CMD_VARLEN ((size_t)-1)
/* The largest response of any row (each table asserts it per row). */
#define RRES_CMD_OUT_MAX 256

/* A handler: rd, the request (in_len bytes; the row's length unless
 * RRES_CMD_VARLEN), the zeroed response buffer. Changes nothing on error. */
#define RRES_CMD_FN(fn)                                                               \
	enum rres_err fn(struct rres_dev *rd VRDMA_UNUSED, const void *in VRDMA_UNUSED, \
			 size_t in_len VRDMA_UNUSED, void *out VRDMA_UNUSED)
typedef RRES_CMD_FN(rres_cmd_fn);

struct rres_cmd_row {
	const char *name;
	size_t in;        /* request length, or RRES_CMD_VARLEN */
	size_t out;       /* response length */
	bool ext;         /* only with ROCE_EXT negotiated, */
	uint64_t cap;     /* and (if not 0) this capability reported */
	rres_cmd_fn *fn;  /* NULL: no such command */
};

struct rres_cmd_abi {
	const char *log_name;           /* prefix of the debug log line */
	const struct rres_cmd_row *rows; /* indexed by command number */
	size_t n_rows;
};

/* Name of a command of abi, or "?" */
const char *rres_cmd_row_name(const struct rres_cmd_abi *abi, uint8_t cmd);

/*
 * Execute command cmd of abi with in[0..in_len) (untrusted, any alignment);
 * on success the response goes to out (out_cap bytes) and its length to
 * *out_len, else *out_len = 0 and out is untouched. A known command is
 * counted in counts[cmd] (n_rows entries), every outcome in rd->stats.
 */
enum rres_err rres_cmd_exec(const struct rres_cmd_abi *abi, uint64_t *counts,
			    struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
			    void *out, size_t out_cap, size_t *out_len);

/* mrn, lkey, rkey: the first three le32 of every MR response of both ABIs. */
void rres_cmd_put_mr_keys(void *out, const struct rres_mr *mr);

/* ---- fields both ABIs carry under the same names (any wire struct) ---- */

/* A QP's capabilities into a wire cap struct c. */
#define RRES_CMD_PUT_QP_CAP(c, qp)                                         \
	do {                                                               \
		put_le32(&(c)->max_send_wr, (qp)->cap.max_send_wr);         \
		put_le32(&(c)->max_recv_wr, (qp)->cap.max_recv_wr);         \
		put_le32(&(c)->max_send_sge, (qp)->cap.max_send_sge);       \
		put_le32(&(c)->max_recv_sge, (qp)->cap.max_recv_sge);       \
		put_le32(&(c)->max_inline_data, (qp)->cap.max_inline_data); \
	} while (0)

/* A QUERY_QP response a: the attributes both ABIs report. */
#define RRES_CMD_PUT_QP_ATTR(a, qp)                                         \
	do {                                                                \
		const struct rres_qp_attr *at_ = &(qp)->attr;               \
		(a)->qp_state = at_->qp_state;                              \
		(a)->path_mtu = at_->path_mtu;                              \
		(a)->sq_draining = (qp)->sq_draining;                       \
		(a)->max_rd_atomic = at_->max_rd_atomic;                    \
		(a)->max_dest_rd_atomic = at_->max_dest_rd_atomic;          \
		(a)->min_rnr_timer = at_->min_rnr_timer;                    \
		(a)->timeout = at_->timeout;                                \
		(a)->retry_cnt = at_->retry_cnt;                            \
		(a)->rnr_retry = at_->rnr_retry;                            \
		put_le32(&(a)->qkey, at_->qkey);                            \
		put_le32(&(a)->rq_psn, at_->rq_psn);                        \
		put_le32(&(a)->sq_psn, at_->sq_psn);                        \
		put_le32(&(a)->dest_qp_num, at_->dest_qp_num);              \
		put_le32(&(a)->qp_access_flags, at_->qp_access_flags);      \
		put_le32(&(a)->rate_limit, at_->rate_limit);                \
		RRES_CMD_PUT_QP_CAP(&(a)->cap, qp);                          \
	} while (0)

/* An address vector's GRH and dmac into a wire ah_attr w. */
#define RRES_CMD_PUT_AV(w, av)                                       \
	do {                                                         \
		memcpy((w)->grh.dgid, (av)->dgid, 16);               \
		put_le32(&(w)->grh.flow_label, (av)->flow_label);    \
		(w)->grh.sgid_index = (av)->sgid_index;              \
		(w)->grh.hop_limit = (av)->hop_limit;                \
		(w)->grh.traffic_class = (av)->traffic_class;        \
		memcpy((w)->dmac, (av)->dmac, 6);                    \
	} while (0)

/* The MODIFY_QP attributes both ABIs carry as they are (w: wire attributes,
 * m: struct rres_qp_modify); mask, access flags and AV are the ABI's. */
#define RRES_CMD_GET_QP_MODIFY(m, w)                            \
	do {                                                    \
		(m)->qp_state = (w)->qp_state;                  \
		(m)->cur_qp_state = (w)->cur_qp_state;          \
		(m)->path_mtu = (w)->path_mtu;                  \
		(m)->max_rd_atomic = (w)->max_rd_atomic;        \
		(m)->max_dest_rd_atomic = (w)->max_dest_rd_atomic; \
		(m)->min_rnr_timer = (w)->min_rnr_timer;        \
		(m)->timeout = (w)->timeout;                    \
		(m)->retry_cnt = (w)->retry_cnt;                \
		(m)->rnr_retry = (w)->rnr_retry;                \
		(m)->qkey = le32toh((w)->qkey);                 \
		(m)->rq_psn = le32toh((w)->rq_psn);             \
		(m)->sq_psn = le32toh((w)->sq_psn);             \
		(m)->dest_qp_num = le32toh((w)->dest_qp_num);   \
		(m)->rate_limit = le32toh((w)->rate_limit);     \
	} while (0)

#endif
