/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How both send-queue fuzz targets (fuzz_sq_req.c, fuzz_virtio_rdma_sq.c)
 * cut a request into pieces: the input's first bytes choose up to three cut
 * points, and the same pieces are parsed from iovecs and then posted as a
 * descriptor chain. Included by exactly one fuzz target each.
 */
#ifndef VRDMA_FUZZ_SQ_CUT_H
#define VRDMA_FUZZ_SQ_CUT_H

#include <stdint.h>
#include <sys/uio.h>

#include "common/util.h"

#define SQ_CUT_MAX 4

struct sq_cut {
	uint32_t off[SQ_CUT_MAX], len[SQ_CUT_MAX];
	unsigned n;
};

/* len bytes cut after cuts[i] + 1 more bytes each (i < ncut <= 3): at least
 * one piece, the last one maybe empty only if len is 0. */
static inline void sq_cut(struct sq_cut *c, uint32_t len, const uint32_t cuts[3], unsigned ncut)
{
	uint32_t at = 0;

	c->n = 0;
	for (unsigned i = 0; i < ncut && i < SQ_CUT_MAX - 1 && at < len; i++) {
		uint32_t end = MIN(len, at + cuts[i] + 1);

		c->off[c->n] = at;
		c->len[c->n++] = end - at;
		at = end;
	}
	if (at < len || !c->n) {
		c->off[c->n] = at;
		c->len[c->n++] = len - at;
	}
}

/* The pieces of c over buf as iovecs; returns their number. */
static inline unsigned sq_cut_iov(const struct sq_cut *c, const uint8_t *buf, struct iovec *iov)
{
	for (unsigned i = 0; i < c->n; i++) {
		iov[i].iov_base = (void *)(buf + c->off[i]);
		iov[i].iov_len = c->len[i];
	}
	return c->n;
}

#endif
