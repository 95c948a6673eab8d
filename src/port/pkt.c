/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame buffers: a per-thread free list in front of malloc.
 *
 * Each thread that allocates or frees frames gets a cache (a singly linked
 * free list plus counters). The data path of a loop runs on one thread, so
 * pkt_alloc()/pkt_free() touch only thread-local memory and no locks or atomic
 * read-modify-write instructions. A frame may be freed on another thread than
 * the one that allocated it: it simply joins the freeing thread's list.
 *
 * Buffers are ~9.3 KiB, so the free list is capped (PKT_CACHE_MAX): after a
 * burst, frames beyond the cap go back to malloc.
 *
 * Counters are per cache, written only by the owning thread with relaxed
 * atomic stores; pkt_outstanding()/pkt_get_stats() sum every cache (the
 * registry is walked under a mutex, which the data path never takes). When a
 * thread exits its cached frames are released and its counters folded into a
 * global total.
 */
#include "port/pkt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

struct pkt_cache {
	struct pkt *free_head;
	uint32_t nfree;
	/* Written by the owner only (relaxed store), read by anyone. */
	_Atomic uint64_t allocs, frees, failed, cached;
	struct pkt_cache *reg_next;
};

static pthread_once_t pkt_once = PTHREAD_ONCE_INIT;
static pthread_key_t pkt_key;
static pthread_mutex_t pkt_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pkt_cache *pkt_reg_head;
/* Counters of exited threads (under pkt_reg_lock). */
static uint64_t pkt_retired_allocs, pkt_retired_frees, pkt_retired_failed;

/* initial-exec: the objects are built with -fPIC, and the default dynamic
 * TLS model would make every pkt_alloc()/pkt_free() call __tls_get_addr. */
static __thread struct pkt_cache *pkt_tls __attribute__((tls_model("initial-exec")));

static inline void cnt_inc(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t cnt_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void pkt_cache_release(struct pkt_cache *c)
{
	struct pkt *p;

	while ((p = c->free_head)) {
		c->free_head = p->next;
		free(p);
	}
	c->nfree = 0;
	atomic_store_explicit(&c->cached, 0, memory_order_relaxed);
}

/* Thread exit: free the cached frames, fold counters, unregister. */
static void pkt_cache_destroy(void *arg)
{
	struct pkt_cache *c = arg, **pp;

	pkt_cache_release(c);
	pthread_mutex_lock(&pkt_reg_lock);
	for (pp = &pkt_reg_head; *pp; pp = &(*pp)->reg_next) {
		if (*pp == c) {
			*pp = c->reg_next;
			break;
		}
	}
	pkt_retired_allocs += cnt_get(&c->allocs);
	pkt_retired_frees += cnt_get(&c->frees);
	pkt_retired_failed += cnt_get(&c->failed);
	pthread_mutex_unlock(&pkt_reg_lock);
	if (pkt_tls == c)
		pkt_tls = NULL;
	free(c);
}

static void pkt_key_init(void)
{
	if (pthread_key_create(&pkt_key, pkt_cache_destroy) != 0)
		LOG_ERR("pkt: pthread_key_create failed; per-thread caches leak at thread exit");
}

static struct pkt_cache *pkt_cache_slow(void)
{
	struct pkt_cache *c;

	pthread_once(&pkt_once, pkt_key_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_lock(&pkt_reg_lock);
	c->reg_next = pkt_reg_head;
	pkt_reg_head = c;
	pthread_mutex_unlock(&pkt_reg_lock);
	pthread_setspecific(pkt_key, c);
	pkt_tls = c;
	return c;
}

static inline struct pkt_cache *pkt_cache_get(void)
{
	struct pkt_cache *c = pkt_tls;

	if (likely(c))
		return c;
	return pkt_cache_slow();
}

static inline void pkt_reset(struct pkt *p)
{
	p->next = NULL;
	p->data = p->buf + PKT_HEADROOM;
	p->len = 0;
	p->in_port = 0;
	p->flags = 0;
	p->npkts = 1;
	p->nlost = 0;
	p->run_len = 0;
}

struct pkt *pkt_alloc(void)
{
	struct pkt_cache *c = pkt_cache_get();
	struct pkt *p;

	if (unlikely(!c))
		return NULL;
	p = c->free_head;
	if (likely(p)) {
		c->free_head = p->next;
		c->nfree--;
		atomic_store_explicit(&c->cached, c->nfree, memory_order_relaxed);
	} else {
		p = malloc(sizeof(*p));
		if (unlikely(!p)) {
			cnt_inc(&c->failed, 1);
			return NULL;
		}
	}
	cnt_inc(&c->allocs, 1);
	pkt_reset(p);
	return p;
}

void pkt_free(struct pkt *p)
{
	struct pkt_cache *c;

	if (!p)
		return;
	if (unlikely(p->flags & (PKT_F_PAYLOAD_REF | PKT_F_RUN)))
		pkt_ref_drop(p);
	c = pkt_cache_get();
	if (unlikely(!c)) {
		free(p);
		return;
	}
	cnt_inc(&c->frees, 1);
	if (c->nfree >= PKT_CACHE_MAX) {
		free(p);
		return;
	}
	p->next = c->free_head;
	c->free_head = p;
	c->nfree++;
	atomic_store_explicit(&c->cached, c->nfree, memory_order_relaxed);
}

struct pkt *pkt_clone(const struct pkt *p)
{
	struct pkt *q;
	size_t off;

	if (unlikely(p->flags & PKT_F_RUN))
		return NULL; /* split first (docs/design.md "Runs between local devices") */
	q = pkt_alloc();
	if (unlikely(!q))
		return NULL;
	/* Keep the same headroom so the copy can be prepended to like the
	 * original; fall back to the default if p->data looks wrong. */
	off = (size_t)(p->data - p->buf);
	if (off > PKT_BUF_SIZE || p->len > PKT_BUF_SIZE - off)
		off = PKT_HEADROOM;
	if (p->len > PKT_BUF_SIZE - off) {
		pkt_free(q);
		return NULL;
	}
	q->data = q->buf + off;
	q->len = p->len;
	q->in_port = p->in_port;
	q->flags = p->flags & (uint16_t)~PKT_F_PAYLOAD_REF;
	memcpy(q->data, p->data, p->len);
	if (unlikely(p->flags & PKT_F_PAYLOAD_REF)) {
		pkt_ref_attach(q, p->ref.off, p->ref.iov, p->ref.niov, p->ref.len);
		pkt_ref_share_owner(q, p);
	}
	return q;
}

void pkt_queue_purge(struct pkt_queue *q)
{
	struct pkt *p;

	while ((p = pkt_queue_pop(q)))
		pkt_free(p);
}

void pkt_get_stats(struct pkt_stats *st)
{
	struct pkt_cache *c;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&pkt_reg_lock);
	st->allocs = pkt_retired_allocs;
	st->frees = pkt_retired_frees;
	st->alloc_failed = pkt_retired_failed;
	for (c = pkt_reg_head; c; c = c->reg_next) {
		st->allocs += cnt_get(&c->allocs);
		st->frees += cnt_get(&c->frees);
		st->alloc_failed += cnt_get(&c->failed);
		st->cached += cnt_get(&c->cached);
	}
	pthread_mutex_unlock(&pkt_reg_lock);
}

uint64_t pkt_outstanding(void)
{
	struct pkt_stats st;

	pkt_get_stats(&st);
	return st.allocs - st.frees;
}

void pkt_cache_trim(void)
{
	struct pkt_cache *c = pkt_tls;

	if (c)
		pkt_cache_release(c);
}

bool pkt_set_ce(struct pkt *pkt)
{
	uint8_t *d = pkt->data;
	uint32_t l3 = 14;
	uint16_t type;

	if (pkt->len < 14)
		return false;
	type = (uint16_t)(d[12] << 8 | d[13]);
	if (type == 0x8100 && pkt->len >= 18) {
		type = (uint16_t)(d[16] << 8 | d[17]);
		l3 = 18;
	}
	if (type == 0x0800 && pkt->len >= l3 + 20 && (d[l3] >> 4) == 4) {
		uint8_t *ip = d + l3;
		uint32_t sum;

		if (!(ip[1] & 3) || (ip[1] & 3) == 3)
			return false;
		/* RFC 1624 incremental update of the header checksum. */
		sum = (uint16_t)~(ip[10] << 8 | ip[11]);
		sum += (uint16_t)~(ip[0] << 8 | ip[1]);
		ip[1] |= 3;
		sum += (uint32_t)(ip[0] << 8 | ip[1]);
		while (sum >> 16)
			sum = (sum & 0xFFFF) + (sum >> 16);
		sum = (uint16_t)~sum;
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
		return true;
	}
	if (type == 0x86DD && pkt->len >= l3 + 40 && (d[l3] >> 4) == 6) {
		/* traffic class: low nibble of byte 0, high nibble of byte 1 */
		uint8_t ecn = (d[l3 + 1] >> 4) & 3;

		if (!ecn || ecn == 3)
			return false;
		d[l3 + 1] |= 0x30;
		return true;
	}
	return false;
}
