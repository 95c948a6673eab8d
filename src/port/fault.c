/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injector: see fault.h for the configuration syntax and the exact
 * decision order.
 */
#include "port/fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/pkt.h"

#define ETH_HLEN_MIN 14
#define FAULT_MAX_STREAMS 65536u

/* ---- configuration ---- */

void fault_cfg_init(struct fault_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->hold_us = FAULT_HOLD_US_DEFAULT;
}

bool fault_cfg_active(const struct fault_cfg *cfg)
{
	return cfg->drop || cfg->dup || cfg->reorder || cfg->corrupt || cfg->ecn;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "D[DD][.F[FFFFF]]" percent -> units of 1e-6 percent, at most 100%. */
static int parse_prob(const char *v, size_t n, uint32_t *out)
{
	uint64_t ip = 0, fp = 0;
	size_t i = 0, nd = 0, nf = 0;

	while (i < n && is_digit(v[i])) {
		if (++nd > 3)
			return -EINVAL;
		ip = ip * 10 + (uint64_t)(v[i] - '0');
		i++;
	}
	if (nd == 0)
		return -EINVAL;
	if (i < n) {
		if (v[i] != '.')
			return -EINVAL;
		i++;
		while (i < n && is_digit(v[i])) {
			if (++nf > 6)
				return -EINVAL;
			fp = fp * 10 + (uint64_t)(v[i] - '0');
			i++;
		}
		if (nf == 0 || i != n)
			return -EINVAL;
	}
	while (nf < 6) {
		fp *= 10;
		nf++;
	}
	ip = ip * 1000000u + fp;
	if (ip > FAULT_PROB_ONE)
		return -EINVAL;
	*out = (uint32_t)ip;
	return 0;
}

/* Decimal (1..20 digits) or 0x-hex (1..16 digits) unsigned 64-bit number. */
static int parse_u64(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (n > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
		if (n - 2 > 16)
			return -EINVAL;
		for (i = 2; i < n; i++) {
			int h = hexval(v[i]);

			if (h < 0)
				return -EINVAL;
			x = (x << 4) | (uint64_t)h;
		}
	} else {
		if (n == 0)
			return -EINVAL;
		for (i = 0; i < n; i++) {
			uint64_t d;

			if (!is_digit(v[i]))
				return -EINVAL;
			d = (uint64_t)(v[i] - '0');
			if (x > (UINT64_MAX - d) / 10)
				return -EINVAL;
			x = x * 10 + d;
		}
	}
	*out = x;
	return 0;
}

static bool port_name_char_ok(char c)
{
	return c > ' ' && c <= '~' && c != ',' && c != '=';
}

int fault_cfg_parse(struct fault_cfg *cfg, const char *s)
{
	enum { K_DROP, K_DUP, K_REORDER, K_CORRUPT, K_SEED, K_HOLD, K_PORT, K_ECN, K_NUM };
	static const char *const keys[K_NUM] = {
		"drop", "dup", "reorder", "corrupt", "seed", "hold", "port", "ecn",
	};
	unsigned seen = 0;
	const char *p = s;

	if (!cfg || !s || !*s)
		return -EINVAL;
	fault_cfg_init(cfg);
	for (;;) {
		const char *end = strchr(p, ',');
		const char *eq, *val;
		size_t tlen, klen, vlen;
		unsigned k;
		uint64_t u;

		tlen = end ? (size_t)(end - p) : strlen(p);
		eq = memchr(p, '=', tlen);
		if (!eq)
			return -EINVAL;
		klen = (size_t)(eq - p);
		val = eq + 1;
		vlen = tlen - klen - 1;
		for (k = 0; k < K_NUM; k++)
			if (strlen(keys[k]) == klen && !memcmp(p, keys[k], klen))
				break;
		if (k == K_NUM || (seen & (1u << k)) || vlen == 0)
			return -EINVAL;
		seen |= 1u << k;
		switch (k) {
		case K_DROP:
			if (parse_prob(val, vlen, &cfg->drop))
				return -EINVAL;
			break;
		case K_DUP:
			if (parse_prob(val, vlen, &cfg->dup))
				return -EINVAL;
			break;
		case K_REORDER:
			if (parse_prob(val, vlen, &cfg->reorder))
				return -EINVAL;
			break;
		case K_CORRUPT:
			if (parse_prob(val, vlen, &cfg->corrupt))
				return -EINVAL;
			break;
		case K_ECN:
			if (parse_prob(val, vlen, &cfg->ecn))
				return -EINVAL;
			break;
		case K_SEED:
			if (parse_u64(val, vlen, &cfg->seed))
				return -EINVAL;
			break;
		case K_HOLD:
			if (parse_u64(val, vlen, &u) || u == 0 || u > FAULT_HOLD_US_MAX)
				return -EINVAL;
			cfg->hold_us = (uint32_t)u;
			break;
		case K_PORT:
			if (vlen >= FAULT_PORT_NAME_MAX)
				return -EINVAL;
			for (size_t i = 0; i < vlen; i++)
				if (!port_name_char_ok(val[i]))
					return -EINVAL;
			memcpy(cfg->port, val, vlen);
			cfg->port[vlen] = '\0';
			break;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

static bool fault_cfg_valid(const struct fault_cfg *cfg)
{
	size_t n;

	if (cfg->drop > FAULT_PROB_ONE || cfg->dup > FAULT_PROB_ONE ||
	    cfg->reorder > FAULT_PROB_ONE || cfg->corrupt > FAULT_PROB_ONE ||
	    cfg->ecn > FAULT_PROB_ONE)
		return false;
	if (cfg->hold_us == 0 || cfg->hold_us > FAULT_HOLD_US_MAX)
		return false;
	n = strnlen(cfg->port, FAULT_PORT_NAME_MAX);
	if (n == FAULT_PORT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!port_name_char_ok(cfg->port[i]))
			return false;
	return true;
}

/* Canonical percent: integer part, then the fraction without trailing 0s. */
static void format_prob(char *out, size_t size, uint32_t v)
{
	uint32_t ip = v / 1000000u, fp = v % 1000000u;
	int digits = 6;

	if (!fp) {
		snprintf(out, size, "%u", ip);
		return;
	}
	while (fp % 10 == 0) {
		fp /= 10;
		digits--;
	}
	snprintf(out, size, "%u.%0*u", ip, digits, fp);
}

int fault_cfg_format(const struct fault_cfg *cfg, char *buf, size_t size)
{
	char d[16], u[16], r[16], c[16], e[16];
	int n;

	if (!fault_cfg_valid(cfg))
		return -EINVAL;
	format_prob(d, sizeof(d), cfg->drop);
	format_prob(u, sizeof(u), cfg->dup);
	format_prob(r, sizeof(r), cfg->reorder);
	format_prob(c, sizeof(c), cfg->corrupt);
	format_prob(e, sizeof(e), cfg->ecn);
	n = snprintf(buf, size, "drop=%s,dup=%s,reorder=%s,corrupt=%s,seed=%llu,hold=%u%s%s%s%s",
		     d, u, r, c, (unsigned long long)cfg->seed, cfg->hold_us,
		     cfg->port[0] ? ",port=" : "", cfg->port, cfg->ecn ? ",ecn=" : "",
		     cfg->ecn ? e : "");
	return n < 0 ? -EINVAL : n;
}

/* ---- the injector ---- */

struct fault_hold {
	struct pkt *pkt;        /* NULL = nothing held */
	uint64_t deadline_ns;
};

/* The decisions, each with its own generator; ECN is drawn per frame. */
enum { FAULT_DROP, FAULT_CORRUPT, FAULT_DUP, FAULT_REORDER, FAULT_NKIND_EVENT, FAULT_NKIND };
#define FAULT_NEVER UINT64_MAX

struct fault {
	struct fault_cfg cfg;
	struct loop *loop;
	fault_emit_fn emit;
	fault_seal_fn seal;
	void *arg;
	uint64_t rng[FAULT_NKIND][4]; /* xoshiro256** state per decision */
	uint64_t next[FAULT_NKIND_EVENT]; /* frame index of each kind's next event */
	uint64_t next_min;      /* the smallest of next[] */
	uint64_t idx;           /* frames decided so far */
	uint32_t prob[FAULT_NKIND_EVENT]; /* each kind's probability (cfg) */
	double ln_miss[FAULT_NKIND_EVENT]; /* ... fault_ln_miss of it */
	struct fault_hold *hold; /* indexed by stream, nhold entries */
	uint32_t nhold;
	uint16_t *order;        /* streams with a held frame, oldest first */
	uint32_t norder;
	struct loop_timer timer;
	struct fault_stats stats;
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro_next(uint64_t s[4])
{
	uint64_t r = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return r;
}

/* True with probability prob / FAULT_PROB_ONE, from one random draw. */
static inline bool decide(uint64_t r, uint32_t prob)
{
	return (uint64_t)(((unsigned __int128)r * FAULT_PROB_ONE) >> 64) < prob;
}

/* ln(1 - p) of probability prob / FAULT_PROB_ONE (fault_gap's divisor). */
static double fault_ln_miss(uint32_t prob)
{
	return log1p(-(double)prob / FAULT_PROB_ONE);
}

/* Frames that pass before the next event of probability prob / FAULT_PROB_ONE
 * per frame (ln_miss: fault_ln_miss(prob)): geometric, from one draw
 * (floor(ln U / ln(1 - p)), U in (0, 1]). */
static uint64_t fault_gap(uint64_t s[4], uint32_t prob, double ln_miss)
{
	double u, g;

	if (!prob)
		return FAULT_NEVER;
	if (prob >= FAULT_PROB_ONE)
		return 0;
	u = (double)((xoshiro_next(s) >> 11) + 1) * 0x1p-53;
	g = floor(log(u) / ln_miss);
	return g < 0x1p53 ? (uint64_t)g : FAULT_NEVER;
}

static void fault_next_min(struct fault *f)
{
	f->next_min = FAULT_NEVER;
	for (int k = 0; k < FAULT_NKIND_EVENT; k++)
		f->next_min = MIN(f->next_min, f->next[k]);
}

/* The decisions for frame f->idx (a bit per kind that happens), and the
 * next event of each of those kinds. */
static unsigned fault_decide(struct fault *f, uint64_t *where)
{
	uint64_t i = f->idx++;
	unsigned ev = 0;

	if (likely(i < f->next_min))
		return 0;
	for (int k = 0; k < FAULT_NKIND_EVENT; k++) {
		uint64_t gap;

		if (f->next[k] != i)
			continue;
		ev |= 1u << k;
		if (k == FAULT_CORRUPT)
			*where = xoshiro_next(f->rng[k]);
		gap = fault_gap(f->rng[k], f->prob[k], f->ln_miss[k]);
		f->next[k] = gap < FAULT_NEVER - i - 1 ? i + 1 + gap : FAULT_NEVER;
	}
	fault_next_min(f);
	return ev;
}

static void fault_timer_cb(struct loop_timer *t, void *arg);

struct fault *fault_new(struct loop *loop, const struct fault_cfg *cfg,
			fault_emit_fn emit, void *arg)
{
	struct fault *f;
	uint64_t x;

	if (!cfg || !emit || !fault_cfg_valid(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->cfg = *cfg;
	f->loop = loop;
	f->emit = emit;
	f->arg = arg;
	x = cfg->seed;
	for (int k = 0; k < FAULT_NKIND; k++)
		for (int i = 0; i < 4; i++)
			f->rng[k][i] = splitmix64(&x);
	f->prob[FAULT_DROP] = cfg->drop;
	f->prob[FAULT_CORRUPT] = cfg->corrupt;
	f->prob[FAULT_DUP] = cfg->dup;
	f->prob[FAULT_REORDER] = cfg->reorder;
	for (int k = 0; k < FAULT_NKIND_EVENT; k++) {
		f->ln_miss[k] = fault_ln_miss(f->prob[k]);
		f->next[k] = fault_gap(f->rng[k], f->prob[k], f->ln_miss[k]);
	}
	fault_next_min(f);
	loop_timer_init(&f->timer, fault_timer_cb, f);
	return f;
}

void fault_set_seal(struct fault *f, fault_seal_fn seal)
{
	if (f)
		f->seal = seal;
}

void fault_free(struct fault *f)
{
	if (!f)
		return;
	if (f->loop && loop_timer_armed(&f->timer))
		loop_timer_cancel(f->loop, &f->timer);
	for (uint32_t i = 0; i < f->norder; i++) {
		struct fault_hold *h = &f->hold[f->order[i]];

		pkt_free(h->pkt);
		h->pkt = NULL;
	}
	free(f->hold);
	free(f->order);
	free(f);
}

/* Make room for stream in the hold arrays. Returns false if out of memory. */
static bool fault_hold_grow(struct fault *f, uint16_t stream)
{
	uint32_t want = (uint32_t)stream + 1, n;
	struct fault_hold *h;
	uint16_t *o;

	if (want <= f->nhold)
		return true;
	n = f->nhold ? f->nhold : 16;
	while (n < want)
		n *= 2;
	if (n > FAULT_MAX_STREAMS)
		n = FAULT_MAX_STREAMS;
	h = realloc(f->hold, n * sizeof(*h));
	if (!h)
		return false;
	memset(h + f->nhold, 0, (n - f->nhold) * sizeof(*h));
	f->hold = h;
	o = realloc(f->order, n * sizeof(*o));
	if (!o)
		return false; /* f->hold stays larger than nhold: harmless */
	f->order = o;
	f->nhold = n;
	return true;
}

static void fault_order_remove(struct fault *f, uint16_t stream)
{
	for (uint32_t i = 0; i < f->norder; i++) {
		if (f->order[i] == stream) {
			memmove(&f->order[i], &f->order[i + 1],
				(f->norder - i - 1) * sizeof(f->order[0]));
			f->norder--;
			return;
		}
	}
}

/* Detach the held frame of stream (NULL if none). */
static struct pkt *fault_unhold(struct fault *f, uint16_t stream)
{
	struct pkt *p;

	if (stream >= f->nhold || !f->hold[stream].pkt)
		return NULL;
	p = f->hold[stream].pkt;
	f->hold[stream].pkt = NULL;
	fault_order_remove(f, stream);
	return p;
}

static void fault_timer_rearm(struct fault *f)
{
	if (!f->loop)
		return;
	if (!f->norder) {
		if (loop_timer_armed(&f->timer))
			loop_timer_cancel(f->loop, &f->timer);
		return;
	}
	loop_timer_arm(f->loop, &f->timer, f->hold[f->order[0]].deadline_ns);
}

static void fault_timer_cb(struct loop_timer *t, void *arg)
{
	struct fault *f = arg;
	uint64_t now = loop_now_ns();

	(void)t;
	/* Deadlines grow with the hold order: release from the front. */
	while (f->norder && f->hold[f->order[0]].deadline_ns <= now) {
		struct pkt *p = fault_unhold(f, f->order[0]);

		f->emit(f->arg, p);
	}
	fault_timer_rearm(f);
}

static bool fault_hold_pkt(struct fault *f, uint16_t stream, struct pkt *pkt)
{
	struct fault_hold *h;

	if (!fault_hold_grow(f, stream))
		return false;
	h = &f->hold[stream];
	h->pkt = pkt;
	h->deadline_ns = f->loop ? loop_now_ns() + (uint64_t)f->cfg.hold_us * 1000u : 0;
	f->order[f->norder++] = stream;
	if (f->loop && f->norder == 1)
		loop_timer_arm(f->loop, &f->timer, h->deadline_ns);
	return true;
}

uint32_t fault_pass_run(struct fault *f, uint16_t stream, uint32_t n)
{
	uint64_t m;

	if (f->cfg.ecn || (stream < f->nhold && f->hold[stream].pkt))
		return 0;
	m = MIN((uint64_t)n, f->next_min - f->idx);
	f->idx += m;
	f->stats.frames += m;
	f->stats.run_passed += m;
	return (uint32_t)m;
}

bool fault_drop_next(struct fault *f)
{
	uint64_t where = 0;

	if (f->next[FAULT_DROP] != f->idx || f->cfg.ecn)
		return false;
	fault_decide(f, &where);
	f->stats.frames++;
	f->stats.dropped++;
	return true;
}

static __attribute__((noinline)) void fault_input_event(struct fault *f, uint16_t stream,
							 struct pkt *pkt)
{
	struct pkt *dup = NULL, *held;
	uint64_t r_where = 0;
	unsigned ev = fault_decide(f, &r_where);

	f->stats.frames++;
	if (f->cfg.ecn && decide(xoshiro_next(f->rng[FAULT_NKIND_EVENT]), f->cfg.ecn) &&
	    pkt_set_ce(pkt))
		f->stats.ce_marked++;

	if (ev & (1u << FAULT_DROP)) {
		f->stats.dropped++;
		pkt_free(pkt);
		return;
	}
	if ((ev & (1u << FAULT_CORRUPT)) && pkt->len > ETH_HLEN_MIN) {
		uint32_t span = pkt->len - ETH_HLEN_MIN;
		uint32_t pos = ETH_HLEN_MIN +
			(uint32_t)(((r_where & 0xffffffffull) * span) >> 32);
		uint8_t x = (uint8_t)(1 + (r_where >> 32) % 255);

		if (f->seal && f->seal(pkt)) {
			f->stats.dropped++;
			pkt_free(pkt);
			return;
		}
		pkt->data[pos] ^= x;
		f->stats.corrupted++;
	}
	if (ev & (1u << FAULT_DUP)) {
		dup = pkt_clone(pkt);
		if (dup)
			f->stats.duplicated++;
	}
	held = fault_unhold(f, stream);
	if (!held && (ev & (1u << FAULT_REORDER)) && fault_hold_pkt(f, stream, pkt)) {
		f->stats.reordered++;
		pkt = NULL;
	}
	if (pkt)
		f->emit(f->arg, pkt);
	if (dup)
		f->emit(f->arg, dup);
	if (held)
		f->emit(f->arg, held);
}

void fault_input(struct fault *f, uint16_t stream, struct pkt *pkt)
{
	/* Most frames: no event due, nothing held, no ECN to draw. */
	if (likely(f->idx < f->next_min && !f->norder && !f->cfg.ecn)) {
		f->idx++;
		f->stats.frames++;
		f->emit(f->arg, pkt);
		return;
	}
	fault_input_event(f, stream, pkt);
}

void fault_flush(struct fault *f)
{
	while (f->norder) {
		struct pkt *p = fault_unhold(f, f->order[0]);

		f->emit(f->arg, p);
	}
	fault_timer_rearm(f);
}

void fault_discard_stream(struct fault *f, uint16_t stream)
{
	pkt_free(fault_unhold(f, stream));
	fault_timer_rearm(f);
}

unsigned fault_held(const struct fault *f)
{
	return f->norder;
}

const struct fault_stats *fault_get_stats(const struct fault *f)
{
	return &f->stats;
}

const struct fault_cfg *fault_get_cfg(const struct fault *f)
{
	return &f->cfg;
}
