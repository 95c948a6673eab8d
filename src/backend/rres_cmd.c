/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runner of both device models' command tables (rres_cmd.h): the checks
 * every command gets before its handler, and the counting after it.
 */
#include "backend/rres_cmd.h"

#include "common/log.h"

const char *rres_cmd_row_name(const struct rres_cmd_abi *abi, uint8_t cmd)
{
	return cmd < abi->n_rows && abi->rows[cmd].name ? abi->rows[cmd].name : "?";
}

/* Whether an extension row's command exists on rd now: ROCE_EXT negotiated
 * and its capability reported; else it is unknown like any other number. */
static bool row_enabled(const struct rres_dev *rd, const struct rres_cmd_row *row)
{
	if (!row->ext)
		return true;
	return rd->ext && (!row->cap || (rd->attr.ext_cap_flags & row->cap));
}

static enum rres_err row_exec(const struct rres_cmd_abi *abi, uint64_t *counts,
			      struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
			      void *out, size_t out_cap, size_t *out_len)
{
	uint8_t rsp[RRES_CMD_OUT_MAX];
	const struct rres_cmd_row *row;
	enum rres_err err;

	if (cmd >= abi->n_rows || !abi->rows[cmd].fn)
		return RRES_ERR_UNKNOWN_CMD;
	row = &abi->rows[cmd];
	counts[cmd]++;
	if (!row_enabled(rd, row))
		return RRES_ERR_UNKNOWN_CMD;
	if ((!in && in_len) || (row->in != RRES_CMD_VARLEN && in_len != row->in))
		return RRES_ERR_BAD_LEN;
	if (out_cap < row->out || (row->out && !out))
		return RRES_ERR_OUT_SPACE;
	/* handlers write into a local buffer: out is only touched on success */
	memset(rsp, 0, sizeof(rsp));
	err = row->fn(rd, in, in_len, rsp);
	if (err)
		return err;
	if (row->out)
		memcpy(out, rsp, row->out);
	*out_len = row->out;
	return RRES_OK;
}

enum rres_err rres_cmd_exec(const struct rres_cmd_abi *abi, uint64_t *counts,
			    struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
			    void *out, size_t out_cap, size_t *out_len)
{
	enum rres_err err;

	*out_len = 0;
	err = row_exec(abi, counts, rd, cmd, in, in_len, out, out_cap, out_len);
	if (err) {
		rd->stats.err++;
		rd->stats.errs[err]++;
		LOG_DEBUG("%s: %s failed: %s", abi->log_name, rres_cmd_row_name(abi, cmd),
			  rres_err_name(err));
	} else {
		rd->stats.ok++;
	}
	return err;
}

void rres_cmd_put_mr_keys(void *out, const struct rres_mr *mr)
{
	put_le32((uint8_t *)out, mr->mrn);
	put_le32((uint8_t *)out + 4, mr->lkey);
	put_le32((uint8_t *)out + 8, mr->rkey);
}
