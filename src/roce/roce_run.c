/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runs between local devices (docs/design.md "Runs between local devices"):
 * one frame standing for n consecutive packets of one RC or UC QP: packets
 * of one message (a SEND or WRITE, or READ responses), or (RC) single-packet
 * SENDs and WRITEs of consecutive messages. The frame holds packet 0 as the framed path
 * builds it (headers, by-reference payload); the last PKT_RUN_META bytes of
 * its buffer describe the others (struct roce_run); the payload of all n is
 * one reference (pkt_ref_attach_run).
 *
 * Wherever a real frame must exist, roce_run_split() builds the n frames
 * byte for byte as the framed path would have. A device that receives a run
 * runs its responder / completer once per packet (roce_run_rx), so every
 * check, NAK, ACK and counter is what the n frames would have given.
 */
#include "roce/roce_tp.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/util.h"

_Static_assert(sizeof(struct roce_run) <= PKT_RUN_META, "run description fits its area");
_Static_assert((PKT_BUF_SIZE - PKT_RUN_META) % 8 == 0, "run description aligned");
_Static_assert(offsetof(struct pkt, buf) % 8 == 0, "frame buffer aligned");
_Static_assert(ROCE_RUN_MAX <= 64, "AckReq bits fit a uint64_t");

static __thread struct roce_run_stats run_stats __attribute__((tls_model("initial-exec")));

void roce_run_get_stats(struct roce_run_stats *st)
{
	*st = run_stats;
}

struct roce_run *roce_run_of(struct pkt *p)
{
	return (struct roce_run *)(void *)(p->buf + PKT_BUF_SIZE - PKT_RUN_META);
}

struct roce_run *roce_run_begin(struct pkt *p)
{
	/* packet 0's frame must end before the description */
	if ((size_t)(p->data - p->buf) + p->len > PKT_BUF_SIZE - PKT_RUN_META)
		return NULL;
	return roce_run_of(p);
}

/* Payload bytes of packet k of run r. */
static uint32_t run_plen(const struct roce_run *r, uint32_t k)
{
	return r->plen[k];
}

/* Payload bytes of packets from..to-1 of run r. */
static uint64_t run_bytes(const struct roce_run *r, uint32_t from, uint32_t to)
{
	uint64_t b = 0;

	for (uint32_t k = from; k < to; k++)
		b += r->plen[k];
	return b;
}

/* The header fields of packet k (packet 0's, with what changes from packet
 * to packet: opcode, PSN, AckReq, SE, IP identification, a RETH). */
static void run_fields(const struct roce_run *r, uint32_t k, struct roce_hdr_fields *f)
{
	*f = r->f;
	f->opcode = r->op[k];
	f->psn = roce_psn_add(r->f.psn, k);
	f->ackreq = (r->ackreq >> k) & 1;
	f->se = (r->se >> k) & 1;
	f->ip_id = (uint16_t)(r->f.ip_id + k);
	if (k && (roce_opcode_mask(r->op[k]) & ROCE_OPF_RETH)) {
		f->reth.va = roce_reth_va(&r->reth[k]);
		f->reth.rkey = roce_reth_rkey(&r->reth[k]);
		f->reth.len = roce_reth_len(&r->reth[k]);
	}
	if (k && (roce_opcode_mask(r->op[k]) & ROCE_OPF_IMMDT))
		f->imm = roce_immdt_raw(&r->imm[k]);
}

/* Frame bytes of packet k of run p (description r). */
static uint32_t run_frame_len(struct pkt *p, const struct roce_run *r, uint32_t k)
{
	return k ? roce_pkt_frame_len(&r->path, r->op[k], run_plen(r, k)) : p->len;
}

/* p->nlost and p->run_len from the description: the packets still on
 * their way and their frame bytes. */
static void run_recount(struct pkt *p)
{
	const struct roce_run *r = roce_run_of(p);
	uint32_t n = p->npkts, bytes = 0, len = 0, lost = 0;

	for (uint32_t k = 0; k < n; k++) {
		/* (the MIDDLE packets are all alike) */
		if (k <= 1 || r->op[k] != r->op[k - 1] || r->plen[k] != r->plen[k - 1])
			len = run_frame_len(p, r, k);
		if ((r->lost >> k) & 1)
			lost++;
		else
			bytes += len;
	}
	p->nlost = (uint16_t)lost;
	p->run_len = bytes;
}

void roce_run_set_mtu_plen(struct roce_run *r, uint32_t n, uint32_t mtu, uint32_t len)
{
	for (uint32_t k = 0; k + 1 < n; k++)
		r->plen[k] = (uint16_t)mtu;
	r->plen[n - 1] = (uint16_t)(len - (n - 1) * mtu);
}

void roce_run_seal(struct pkt *p, uint32_t n, uint32_t niov, uint32_t payload)
{
	struct roce_run *r = roce_run_of(p);

	r->lost = 0;
	p->npkts = (uint16_t)n;
	p->flags |= PKT_F_RUN;
	run_recount(p);
	pkt_ref_attach_run(p, r->iov, niov, payload);
}

void roce_run_lose(struct pkt *p, uint32_t k)
{
	struct roce_run *r = roce_run_of(p);

	if (!(p->flags & PKT_F_RUN) || k >= p->npkts || ((r->lost >> k) & 1))
		return;
	r->lost |= 1ull << k;
	p->nlost++;
	p->run_len -= run_frame_len(p, r, k);
	run_stats.holes++;
}

/* Copy len bytes at offset off of the pieces iov[0..n) to dst. Returns
 * false if they do not hold them. */
static bool iov_copy_at(const struct iovec *iov, uint32_t n, uint64_t off, uint8_t *dst,
			uint32_t len)
{
	for (uint32_t i = 0; i < n && len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = MIN((size_t)len, iov[i].iov_len - off);
		memcpy(dst, (const uint8_t *)iov[i].iov_base + off, k);
		dst += k;
		len -= (uint32_t)k;
		off = 0;
	}
	return len == 0;
}

static uint32_t iov_slice(const struct iovec *iov, uint32_t n, uint64_t off, uint32_t len,
			  struct iovec *out, uint32_t max);

/* Packets from..to-1 of run p as real frames appended to out. */
static int run_split_range(struct pkt *p, uint32_t from, uint32_t to, struct pkt_queue *out)
{
	const struct roce_run *r = roce_run_of(p);
	uint32_t n = p->npkts;
	struct roce_path path;
	uint32_t built = 0;
	uint64_t off;

	if (!(p->flags & PKT_F_RUN) || n > ROCE_RUN_MAX || from >= to || to > n)
		return -EINVAL;
	off = run_bytes(r, 0, from);
	path = r->path;
	memcpy(path.dmac, p->data, 6); /* as resolved when it was sent */
	for (uint32_t k = from; k < to; k++) {
		uint32_t plen = run_plen(r, k);
		struct roce_hdr_fields f;
		uint8_t *payload;
		struct pkt *q;

		if ((r->lost >> k) & 1) {
			off += plen; /* lost on the way: no frame */
			continue;
		}
		q = pkt_alloc();
		if (!q)
			goto fail;
		run_fields(r, k, &f);
		if (roce_pkt_build(q, &path, &f, plen, &payload) ||
		    !iov_copy_at(p->ref.iov, p->ref.niov, off, payload, plen)) {
			pkt_free(q);
			goto fail;
		}
		if (k == 0) /* a receiver may have set CE: the header as it is now */
			memcpy(q->data, p->data, (size_t)(payload - q->data));
		roce_pkt_finalize(q, ROCE_TX_F_SKIP_ICRC);
		q->in_port = p->in_port;
		off += plen;
		pkt_queue_push(out, q);
		built++;
	}
	run_stats.runs_split++;
	run_stats.frames_split += built;
	return 0;
fail:
	run_stats.split_failed++;
	pkt_queue_purge(out);
	return -ENOMEM;
}

int roce_run_split(struct pkt *p, struct pkt_queue *out)
{
	return run_split_range(p, 0, p->npkts, out);
}

/* Packets from..n-1 (at least 2) of run p as a run of their own, or NULL
 * (no frame, the pieces do not fit, or p's payload is a copy of its own,
 * which goes with p). */
static struct pkt *run_tail(struct pkt *p, uint32_t from)
{
	const struct roce_run *r = roce_run_of(p);
	uint32_t n = p->npkts, m = n - from, niov;
	uint64_t total;
	struct roce_hdr_fields f;
	struct roce_path path;
	struct roce_run *t;
	struct pkt *q;

	if (p->ref.owned || !(p->flags & PKT_F_PAYLOAD_REF) || m < 2)
		return NULL;
	q = pkt_alloc();
	if (!q)
		return NULL;
	path = r->path;
	memcpy(path.dmac, p->data, 6);
	run_fields(r, from, &f);
	if (roce_pkt_build(q, &path, &f, run_plen(r, from), NULL) || !(t = roce_run_begin(q)))
		goto fail;
	total = run_bytes(r, from, n);
	niov = iov_slice(p->ref.iov, p->ref.niov, run_bytes(r, 0, from), (uint32_t)total, t->iov,
			 ROCE_RUN_IOV);
	if (!niov)
		goto fail;
	t->path = path;
	t->f = f;
	t->se = r->se >> from;
	t->ackreq = r->ackreq >> from;
	memcpy(t->op, r->op + from, m);
	memcpy(t->plen, r->plen + from, m * sizeof(t->plen[0]));
	memcpy(t->reth, r->reth + from, m * sizeof(t->reth[0]));
	memcpy(t->imm, r->imm + from, m * sizeof(t->imm[0]));
	roce_run_seal(q, m, niov, (uint32_t)total);
	pkt_ref_share_owner(q, p);
	t->lost = r->lost >> from;
	run_recount(q);
	roce_pkt_finalize(q, ROCE_TX_F_SKIP_ICRC);
	q->in_port = p->in_port;
	return q;
fail:
	pkt_free(q);
	return NULL;
}

int roce_run_cut(struct pkt *p, uint32_t at, struct pkt_queue *out)
{
	struct roce_run *r = roce_run_of(p);
	uint32_t n = p->npkts;
	struct pkt *tail = NULL;
	int rc;

	if (!(p->flags & PKT_F_RUN) || at >= n)
		return -EINVAL;
	if (n - at > 2)
		tail = run_tail(p, at + 1);
	rc = run_split_range(p, at, tail ? at + 1 : n, out);
	if (rc) {
		pkt_free(tail);
		return rc;
	}
	if (tail) {
		pkt_queue_push(out, tail);
		run_stats.tails++;
	}
	if (!at)
		return 0;
	/* packets 0..at-1 stay */
	r->se &= (1ull << at) - 1;
	r->lost &= (1ull << at) - 1;
	p->npkts = (uint16_t)at;
	p->ref.len = (uint32_t)run_bytes(r, 0, at);
	run_recount(p);
	run_stats.runs_cut++;
	return 0;
}

/* The pieces of [off, off + len) of iov[0..n) into out (at most max).
 * Returns their number, or 0 if they do not fit or are not all there. */
static uint32_t iov_slice(const struct iovec *iov, uint32_t n, uint64_t off, uint32_t len,
			  struct iovec *out, uint32_t max)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n && len; i++) {
		size_t c;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		if (k == max)
			return 0;
		c = MIN((size_t)len, iov[i].iov_len - off);
		out[k].iov_base = (uint8_t *)iov[i].iov_base + off;
		out[k].iov_len = c;
		k++;
		len -= (uint32_t)c;
		off = 0;
	}
	return len ? 0 : k;
}

/* The first of op[j..lim) that is not v (lim if none), eight at a time. */
static uint32_t run_op_span(const uint8_t *op, uint32_t j, uint32_t lim, uint8_t v)
{
	const uint64_t pat = 0x0101010101010101ull * v;

	for (; j + 8 <= lim; j += 8) {
		uint64_t x;

		memcpy(&x, op + j, 8);
		x ^= pat;
		if (x)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return j + ((uint32_t)__builtin_ctzll(x) >> 3);
#else
			return j + ((uint32_t)__builtin_clzll(x) >> 3);
#endif
	}
	while (j < lim && op[j] == v)
		j++;
	return j;
}

/* Packets k..end-1 of run r that may be placed together: MIDDLE packets of
 * a request (and a WRITE LAST without immediate after them). Returns end
 * (k + 1 or less than 2 of them: none). */
static uint32_t run_group_end(const struct roce_run *r, uint32_t k, uint32_t n, bool *last)
{
	uint8_t mid = r->op[k];
	uint64_t lost = r->lost >> k;
	uint32_t lim = lost ? MIN(n, k + (uint32_t)__builtin_ctzll(lost)) : n, j = k;

	*last = false;
	/* (the MIDDLE packets of one message share their opcode) */
	if ((roce_opcode_mask(mid) & (ROCE_OPF_REQ | ROCE_OPF_MIDDLE)) ==
	    (ROCE_OPF_REQ | ROCE_OPF_MIDDLE))
		j = run_op_span(r->op, k, lim, mid);
	if (j < lim && j > k && (r->op[j] == ROCE_OP_RC_RDMA_WRITE_LAST ||
				 r->op[j] == ROCE_OP_UC_RDMA_WRITE_LAST)) {
		*last = true;
		j++;
	}
	return j - k >= 2 ? j : k + 1;
}

void roce_run_rx(struct roce_tq *tq, const struct roce_pkt_info *pi0, struct pkt *p,
		 uint32_t from, uint32_t to)
{
	struct roce_tp *tp = tq->tp;
	const struct roce_run *r = roce_run_of(p);
	uint32_t n = p->npkts;
	struct iovec slice[ROCE_RUN_IOV];
	struct roce_ieth ieth;
	struct roce_aeth aeth;
	struct pkt_ref ref;
	struct roce_pkt_info pi;
	uint64_t off = run_bytes(r, 0, from);
	/* the first piece that may hold byte off, and where it starts (a run
	 * of many messages has a piece or more per packet: no scan from the
	 * first piece for each) */
	uint32_t iv = 0;
	uint64_t iv_off = 0;

	put_be32(ieth.rkey, r->f.ieth_rkey);
	roce_aeth_set_syndrome(&aeth, r->f.aeth.syndrome);
	roce_aeth_set_msn(&aeth, r->f.aeth.msn);
	/* (placing reads a reference's iov, niov and len only, cur_payload
	 * in roce_mem.c: the rest of ref and gref stays unset) */
	ref.iov = slice;
	/* packet 0's fields; what differs for packet k is set for it below */
	pi = *pi0;
	for (uint32_t k = from; k < MIN(to, n); k++) {
		uint32_t plen = run_plen(r, k), end, d;
		uint64_t lost = r->lost >> k;
		bool last;

		if (lost & 1) {
			off += plen; /* lost on the way */
			continue;
		}
		d = lost ? (uint32_t)__builtin_ctzll(lost) : n - k; /* up to the next hole */
		/* (not when the payload is gone: those count as lost below) */
		if ((pi0->mask & ROCE_OPF_REQ) && p->ref.niov && tq->nak_sent &&
		    (d = roce_resp_rx_ahead(tq, roce_psn_add(r->f.psn, k), d, r->ackreq >> k))) {
			/* beyond a gap already NAKed: dropped together */
			off += run_bytes(r, k, k + d);
			k += d - 1;
			continue;
		}
		if (k) {
			pi.opcode = r->op[k];
			pi.mask = roce_opcode_mask(pi.opcode);
			pi.psn = roce_psn_add(r->f.psn, k);
			pi.ackreq = (r->ackreq >> k) & 1;
			pi.reth = (pi.mask & ROCE_OPF_RETH) ? &r->reth[k] : NULL;
			pi.aeth = (pi.mask & ROCE_OPF_AETH) ? &aeth : NULL;
		}
		pi.se = (r->se >> k) & 1;
		if (k)
			pi.immdt = (pi.mask & ROCE_OPF_IMMDT) ? &r->imm[k] : NULL;
		pi.ieth = (pi.mask & ROCE_OPF_IETH) ? &ieth : NULL;
		pi.payload = NULL;
		pi.payload_len = plen;
		while (iv < p->ref.niov && off - iv_off >= p->ref.iov[iv].iov_len)
			iv_off += p->ref.iov[iv++].iov_len;
		/* (a group is placed only in sequence: roce_resp_rx_bulk) */
		end = (pi.mask & ROCE_OPF_REQ) && pi.psn == tq->epsn ? run_group_end(r, k, n, &last) :
								       k + 1;
		if (end > k + 1) {
			/* whole MTUs (MIDDLE packets) up to the group's last */
			uint32_t total = (end - k - 1) * plen + run_plen(r, end - 1);
			/* the group's last packet that asks for an ACK (-1: none) */
			uint64_t ack = (r->ackreq >> k) & (end - k >= 64 ? ~0ull : (1ull << (end - k)) - 1);
			int32_t ack_k = ack ? 63 - __builtin_clzll(ack) : -1;
			struct iovec gslice[ROCE_RUN_IOV];
			struct pkt_ref gref;

			gref.iov = gslice;
			gref.len = total;
			gref.niov = iov_slice(p->ref.iov + iv, p->ref.niov - iv, off - iv_off, total,
					      gslice, ROCE_RUN_IOV);
			pi.payload_len = total;
			pi.payload_ref = &gref;
			if (gref.niov && roce_resp_rx_bulk(tq, &pi, end - k, last, ack_k)) {
				tp->stats.rx_run_bulk++;
				off += total;
				k = end - 1;
				continue;
			}
			pi.payload_len = plen; /* one by one */
			pi.payload_ref = NULL; /* (gref goes out of scope) */
		}
		ref.len = plen;
		ref.niov = plen ? iov_slice(p->ref.iov + iv, p->ref.niov - iv, off - iv_off, plen,
					    slice, ROCE_RUN_IOV) : 0;
		off += plen;
		if (plen && !ref.niov) {
			/* its payload is gone (a failed fill): lost */
			tp->stats.rx_run_lost++;
			continue;
		}
		pi.payload_ref = &ref;
		if (pi.mask & ROCE_OPF_REQ)
			roce_resp_rx(tq, &pi, p);
		else
			roce_comp_rx(tq, &pi);
	}
}
