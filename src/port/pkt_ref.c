/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Payloads by reference (struct pkt_ref): a frame between two devices of
 * this process may carry, instead of its payload bytes, where they are in
 * the sender's registered memory; the receiver copies them straight into
 * its own (docs/design.md, "One copy between local devices").
 *
 * Every frame with a reference is on a per-thread list, so that
 * pkt_ref_fill_all() can copy the bytes into the frames before the memory
 * they point into is unmapped (vhost_mem calls it before a region's munmap).
 */
#include "port/pkt.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

static __thread struct pkt *ref_head __attribute__((tls_model("initial-exec")));
static __thread struct pkt_ref_stats ref_stats __attribute__((tls_model("initial-exec")));

static void ref_unlink(struct pkt *p)
{
	struct pkt_ref *r = &p->ref;
	const struct pkt_ref_owner *o = r->owner;

	if (r->prev)
		r->prev->ref.next = r->next;
	else if (ref_head == p)
		ref_head = r->next;
	if (r->next)
		r->next->ref.prev = r->prev;
	r->prev = r->next = NULL;
	p->flags &= (uint16_t)~PKT_F_PAYLOAD_REF;
	ref_stats.live--;
	if (o) {
		r->owner = NULL;
		o->release(r->owner_ctx, r->owner_tag);
	}
}

static void ref_link(struct pkt *p)
{
	struct pkt_ref *r = &p->ref;

	r->prev = NULL;
	r->next = ref_head;
	if (ref_head)
		ref_head->ref.prev = p;
	ref_head = p;
	p->flags |= PKT_F_PAYLOAD_REF;
	r->owner = NULL;
	ref_stats.attached++;
	ref_stats.live++;
}

void pkt_ref_attach(struct pkt *p, uint32_t off, const struct iovec *iov, uint32_t n,
		    uint32_t len)
{
	struct pkt_ref *r = &p->ref;

	if (p->flags & PKT_F_PAYLOAD_REF)
		ref_unlink(p);
	r->off = off;
	r->len = len;
	r->niov = MIN(n, (uint32_t)PKT_REF_IOV);
	memcpy(r->iov_in, iov, r->niov * sizeof(*iov));
	r->iov = r->iov_in;
	r->owned = NULL;
	ref_link(p);
}

void pkt_ref_attach_run(struct pkt *p, struct iovec *iov, uint32_t n, uint32_t len)
{
	struct pkt_ref *r = &p->ref;

	if (p->flags & PKT_F_PAYLOAD_REF)
		ref_unlink(p);
	r->off = 0;
	r->len = len;
	r->niov = n;
	r->iov = iov;
	r->owned = NULL;
	ref_link(p);
}

void pkt_ref_set_owner(struct pkt *p, const struct pkt_ref_owner *o, void *ctx, uint32_t tag)
{
	struct pkt_ref *r = &p->ref;

	if (!(p->flags & PKT_F_PAYLOAD_REF) || r->owner)
		return;
	r->owner = o;
	r->owner_ctx = ctx;
	r->owner_tag = tag;
	o->hold(ctx, tag);
}

void pkt_ref_share_owner(struct pkt *q, const struct pkt *p)
{
	if ((p->flags & PKT_F_PAYLOAD_REF) && p->ref.owner)
		pkt_ref_set_owner(q, p->ref.owner, p->ref.owner_ctx, p->ref.owner_tag);
}

/* A run's payload into a buffer of its own: the run stays a run (its
 * receiver places from there), nothing points into the sender's memory. */
static void ref_fill_run(struct pkt *p)
{
	struct pkt_ref *r = &p->ref;
	uint8_t *b = r->len ? malloc(r->len) : NULL, *dst = b;
	uint32_t left = r->len;

	for (uint32_t i = 0; b && i < r->niov && left; i++) {
		size_t n = MIN((size_t)left, r->iov[i].iov_len);

		memcpy(dst, r->iov[i].iov_base, n);
		dst += n;
		left -= (uint32_t)n;
	}
	ref_unlink(p);
	r->owned = b;
	r->iov_in[0].iov_base = b;
	r->iov_in[0].iov_len = b ? r->len : 0;
	r->iov = r->iov_in;
	r->niov = b ? 1 : 0;
	if (!b)
		LOG_ERR("pkt_ref: out of memory for a run's payload, run dropped");
	ref_stats.filled++;
}

void pkt_ref_fill(struct pkt *p)
{
	struct pkt_ref *r = &p->ref;
	uint8_t *dst;
	uint32_t left;

	if (!(p->flags & PKT_F_PAYLOAD_REF))
		return;
	if (p->flags & PKT_F_RUN) {
		ref_fill_run(p);
		return;
	}
	dst = p->data + r->off;
	left = r->len;
	/* The frame was built with room for len bytes at off; never write
	 * past its buffer even if the reference is inconsistent. */
	if ((size_t)(dst - p->buf) > PKT_BUF_SIZE || left > PKT_BUF_SIZE - (size_t)(dst - p->buf)) {
		LOG_ERR("pkt_ref: reference outside its frame, payload left unfilled");
		left = 0;
	}
	for (uint32_t i = 0; i < r->niov && left; i++) {
		size_t n = MIN((size_t)left, r->iov[i].iov_len);

		memcpy(dst, r->iov[i].iov_base, n);
		dst += n;
		left -= (uint32_t)n;
	}
	ref_unlink(p);
	ref_stats.filled++;
}

void pkt_ref_drop(struct pkt *p)
{
	if (p->flags & PKT_F_PAYLOAD_REF)
		ref_unlink(p);
	if (p->flags & PKT_F_RUN) {
		free(p->ref.owned);
		p->ref.owned = NULL;
		p->ref.niov = 0;
	}
}

void pkt_ref_fill_all(void)
{
	if (!ref_head)
		return;
	ref_stats.flushes++;
	while (ref_head)
		pkt_ref_fill(ref_head);
}

void pkt_ref_get_stats(struct pkt_ref_stats *st)
{
	*st = ref_stats;
}
