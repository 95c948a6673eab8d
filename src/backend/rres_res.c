/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCE device resources: index tables with FIFO free lists, the key CSPRNG,
 * and the objects behind the control commands (PD, CQ, MR, QP create and
 * destroy, AH, GID table), plus lookups and the virtqueue <-> resource map.
 *
 * Every operation validates everything first and only then changes state,
 * so an error leaves nothing behind. Objects are malloc'ed (control path
 * only); lookups from the data path are an array index.
 */
#include "backend/rres_dev.h"
#include "vrdma/virtio_rdma.h"
#include "backend/rres_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_mem.h"

/* ---- index tables ------------------------------------------------------- */

int rres_table_init(struct rres_table *t, uint32_t first, uint32_t size)
{
	uint32_t i;

	memset(t, 0, sizeof(*t));
	t->size = size;
	t->cap = size > first ? size - first : 0;
	t->slot = calloc(size ? size : 1, sizeof(*t->slot));
	t->fifo = malloc((t->cap ? t->cap : 1) * sizeof(*t->fifo));
	if (!t->slot || !t->fifo) {
		rres_table_fini(t);
		return -ENOMEM;
	}
	for (i = 0; i < t->cap; i++)
		t->fifo[i] = first + i;
	t->nfree = t->cap;
	return 0;
}

void rres_table_fini(struct rres_table *t)
{
	free(t->slot);
	free(t->fifo);
	memset(t, 0, sizeof(*t));
}

int64_t rres_table_alloc(struct rres_table *t)
{
	uint32_t idx;

	if (t->pool) {
		int64_t i = rres_table_alloc(t->pool);

		if (i < 0)
			return -1;
		t->pool->slot[i] = t;
		t->used++;
		return i;
	}
	if (!t->nfree)
		return -1;
	idx = t->fifo[t->head];
	t->head = (t->head + 1) % t->cap;
	t->nfree--;
	t->used++;
	return idx;
}

void rres_table_free(struct rres_table *t, uint32_t idx)
{
	if (t->pool) {
		rres_table_free(t->pool, idx);
		t->used--;
		t->slot[idx] = NULL;
		return;
	}
	t->fifo[(t->head + t->nfree) % t->cap] = idx;
	t->nfree++;
	t->used--;
	t->slot[idx] = NULL;
}

void rres_table_unalloc(struct rres_table *t, uint32_t idx)
{
	if (t->pool) {
		rres_table_unalloc(t->pool, idx);
		t->used--;
		t->slot[idx] = NULL;
		return;
	}
	t->head = (t->head + t->cap - 1) % t->cap;
	t->fifo[t->head] = idx;
	t->nfree++;
	t->used--;
	t->slot[idx] = NULL;
}

/* ---- CSPRNG: ChaCha20 keystream (RFC 8439 block function) ------------- */

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define CHACHA_QR(a, b, c, d)                                                  \
	do {                                                                   \
		a += b; d ^= a; d = ROTL32(d, 16);                             \
		c += d; b ^= c; b = ROTL32(b, 12);                             \
		a += b; d ^= a; d = ROTL32(d, 8);                              \
		c += d; b ^= c; b = ROTL32(b, 7);                              \
	} while (0)

static void chacha20_block(const uint32_t key[8], uint64_t counter, uint32_t out[16])
{
	uint32_t in[16], x[16];
	int i;

	in[0] = 0x61707865; /* "expand 32-byte k" */
	in[1] = 0x3320646e;
	in[2] = 0x79622d32;
	in[3] = 0x6b206574;
	for (i = 0; i < 8; i++)
		in[4 + i] = key[i];
	in[12] = (uint32_t)counter;
	in[13] = (uint32_t)(counter >> 32);
	in[14] = 0;
	in[15] = 0;
	memcpy(x, in, sizeof(x));
	for (i = 0; i < 10; i++) {
		CHACHA_QR(x[0], x[4], x[8], x[12]);
		CHACHA_QR(x[1], x[5], x[9], x[13]);
		CHACHA_QR(x[2], x[6], x[10], x[14]);
		CHACHA_QR(x[3], x[7], x[11], x[15]);
		CHACHA_QR(x[0], x[5], x[10], x[15]);
		CHACHA_QR(x[1], x[6], x[11], x[12]);
		CHACHA_QR(x[2], x[7], x[8], x[13]);
		CHACHA_QR(x[3], x[4], x[9], x[14]);
	}
	for (i = 0; i < 16; i++)
		out[i] = x[i] + in[i];
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fill buf from the kernel's CSPRNG. Returns 0 or -1. */
static int os_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	int fd;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!len)
		return 0;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	close(fd);
	return 0;
}

void rres_rng_seed(struct rres_rng *r, bool deterministic, uint64_t seed)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->pos = 16;
	if (!deterministic && os_random(r->key, sizeof(r->key)) == 0)
		return;
	if (!deterministic)
		LOG_ERR("roce: no OS randomness, keys are predictable");
	for (i = 0; i < 8; i += 2) {
		uint64_t v = splitmix64(&seed);

		r->key[i] = (uint32_t)v;
		r->key[i + 1] = (uint32_t)(v >> 32);
	}
}

uint32_t rres_rng_u32(struct rres_rng *r)
{
	if (r->pos >= 16) {
		chacha20_block(r->key, r->counter++, r->buf);
		r->pos = 0;
	}
	return r->buf[r->pos++];
}

/* RRES_KEY_BITS random key bits, never 0 and different from last (so a
 * reused index never gets the key it had just before). */
static uint16_t rres_new_key(struct rres_dev *rd, uint16_t last)
{
	uint16_t k;

	do {
		k = (uint16_t)(rres_rng_u32(&rd->rng) & RRES_KEY_MASK);
	} while (k == last || k == 0);
	return k;
}

/* ---- device ------------------------------------------------------------- */

uint8_t rres_mtu_from_eth(uint32_t eth_mtu)
{
	uint8_t m;

	for (m = VIRTIO_IB_MTU_4096; m >= VIRTIO_IB_MTU_256; m--)
		if (virtio_ib_mtu_bytes(m) + RRES_HDR_OVERHEAD <= eth_mtu)
			return m;
	return 0;
}

static uint32_t clamp_def(uint32_t v, uint32_t def, uint32_t max)
{
	if (!v)
		v = def;
	return v > max ? max : v;
}

/* GID 2: the configured IPv6 address (at creation and reset only: later
 * the entry belongs to the driver's ADD_GID / DEL_GID). */
static void rres_gid_ip6_default(struct rres_dev *rd)
{
	if (!rd->has_ip6)
		return;
	memcpy(rd->gid[RRES_GID_IPV6].raw, rd->ip6, 16);
	rd->gid[RRES_GID_IPV6].valid = true;
	rd->gid_gen++;
}

static void rres_gid_defaults(struct rres_dev *rd)
{
	uint8_t *g = rd->gid[RRES_GID_LINKLOCAL].raw;

	rd->gid_gen++;
	memset(g, 0, 16);
	g[0] = 0xfe;
	g[1] = 0x80;
	g[8] = rd->mac[0] ^ 0x02;
	g[9] = rd->mac[1];
	g[10] = rd->mac[2];
	g[11] = 0xff;
	g[12] = 0xfe;
	g[13] = rd->mac[3];
	g[14] = rd->mac[4];
	g[15] = rd->mac[5];
	rd->gid[RRES_GID_LINKLOCAL].valid = true;

	g = rd->gid[RRES_GID_IPV4].raw;
	memset(g, 0, 16);
	rd->gid[RRES_GID_IPV4].valid = rd->has_ip4;
	if (rd->has_ip4) {
		g[10] = 0xff;
		g[11] = 0xff;
		memcpy(g + 12, &rd->ip4, 4);
	}
}

int rres_dev_init(struct rres_dev *rd, const struct rres_dev_cfg *cfg)
{
	struct rres_dev_attr *a = &rd->attr;
	uint32_t qps = cfg->max_rdma_qps, cqs = cfg->max_rdma_cqs;
	uint32_t mr_slots;

	memset(rd, 0, sizeof(*rd));
	if (qps < 1 || qps > VIRTIO_NET_ROCE_MAX_QPS || cqs < 1 || cqs > VIRTIO_NET_ROCE_MAX_CQS)
		return -EINVAL;
	rd->net_pairs = cfg->net_pairs ? cfg->net_pairs : 1;
	rd->max_rdma_qps = qps;
	rd->max_rdma_cqs = cqs;
	rd->mem = cfg->mem;
	memcpy(rd->mac, cfg->mac, 6);
	rd->has_ip4 = cfg->has_ip4;
	rd->ip4 = cfg->ip4;
	rd->has_ip6 = cfg->has_ip6;
	memcpy(rd->ip6, cfg->ip6, 16);
	rd->vlan_id = cfg->vlan_id;

	a->device_cap_flags = VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN;
	a->max_mr_size = cfg->max_mr_size ? cfg->max_mr_size : RRES_DEF_MAX_MR_SIZE;
	a->page_size_cap = VRDMA_PAGE_SIZE;
	a->hw_ver = 1;
	a->max_qp_wr = clamp_def(cfg->max_qp_wr, RRES_DEF_MAX_QP_WR, 32768);
	a->max_send_sge = clamp_def(cfg->max_send_sge, RRES_DEF_MAX_SGE, 1024);
	a->max_recv_sge = clamp_def(cfg->max_recv_sge, RRES_DEF_MAX_SGE, 1024);
	a->max_sge_rd = clamp_def(cfg->max_sge_rd, a->max_send_sge, a->max_send_sge);
	a->max_cqe = clamp_def(cfg->max_cqe, RRES_DEF_MAX_CQE, RRES_DEF_MAX_CQE);
	a->max_mr = clamp_def(cfg->max_mr, RRES_DEF_MAX_MR, RRES_MAX_MR_INDEX);
	a->max_pd = clamp_def(cfg->max_pd, RRES_DEF_MAX_PD, 1u << 24);
	a->max_ah = clamp_def(cfg->max_ah, RRES_DEF_MAX_AH, 1u << 24);
	a->max_qp_rd_atom = clamp_def(cfg->max_qp_rd_atom, RRES_DEF_MAX_QP_RD_ATOM, 255);
	a->max_qp_init_rd_atom = clamp_def(cfg->max_qp_init_rd_atom, RRES_DEF_MAX_QP_RD_ATOM, 255);
	a->local_ca_ack_delay = 15;
	a->max_qp = qps - 1;
	a->max_cq = cqs;
	a->max_inline_data = VIRTIO_RDMA_INLINE_DATA_SIZE;
	a->gid_tbl_len = RRES_GID_TBL_LEN;
	a->max_msg_sz = RRES_DEF_MAX_MSG_SZ;
	a->active_mtu = rres_mtu_from_eth(cfg->eth_mtu ? cfg->eth_mtu : 1500);
	rd->max_mr_pages = cfg->max_mr_pages ? cfg->max_mr_pages : RRES_DEF_MAX_MR_PAGES;
	rres_dev_init_ext(rd, cfg);
	/* MRs and windows share the table (one key space); each kind has its
	 * own limit. */
	mr_slots = a->max_mr;
	if (rd->ext_offered)
		mr_slots = (uint32_t)MIN((uint64_t)a->max_mr + a->max_mw, RRES_MAX_MR_INDEX);

	if (rres_table_init(&rd->pds, 1, a->max_pd + 1) ||
	    rres_table_init(&rd->mrs, 1, mr_slots + 1) ||
	    rres_table_init(&rd->srqs, 0, rd->max_rdma_srqs) ||
	    rres_table_init(&rd->ahs, 1, a->max_ah + 1) ||
	    rres_table_init(&rd->cqs, 0, cqs) ||
	    rres_table_init(&rd->qps, 2, qps)) /* 0 reserved, 1 = GSI */
		goto nomem;
	rd->qp_gen = calloc(qps, sizeof(*rd->qp_gen));
	rd->mr_lkey8 = calloc(mr_slots + 1, sizeof(*rd->mr_lkey8));
	rd->mr_rkey8 = calloc(mr_slots + 1, sizeof(*rd->mr_rkey8));
	if (!rd->qp_gen || !rd->mr_lkey8 || !rd->mr_rkey8)
		goto nomem;
	rres_rng_seed(&rd->rng, cfg->deterministic, cfg->seed);
	rres_gid_defaults(rd);
	rres_gid_ip6_default(rd);
	return 0;
nomem:
	rres_dev_fini(rd);
	return -ENOMEM;
}

/* Free a QP unconditionally (hooks called, references dropped). */
static void rres_qp_free(struct rres_dev *rd, struct rres_qp *qp)
{
	uint32_t idx = qp->index;

	if (rd->hooks.qp_destroy)
		rd->hooks.qp_destroy(rd, qp);
	rres_event_drop(rd, &qp->ev);
	if (qp->srq)
		qp->srq->refcnt--;
	qp->pd->refcnt--;
	qp->send_cq->refcnt--;
	qp->recv_cq->refcnt--;
	if (idx == vrdma_qpn_index(VRDMA_GSI_QPN)) {
		rd->qps.slot[idx] = NULL;
		rd->qps.used--;
		if (rd->qps.pool)
			rd->qps.pool->slot[idx] = NULL;
	} else {
		uint32_t gen = (vrdma_qpn_gen(qp->qpn) + 1) & VRDMA_QPN_GEN_MASK;

		if (vrdma_qpn_make(idx, gen) == VRDMA_QPN_MULTICAST)
			gen = 0;
		rd->qp_gen[idx] = (uint16_t)gen;
		rres_table_free(&rd->qps, idx);
	}
	free(qp);
}

static void rres_ah_free(struct rres_dev *rd, struct rres_ah *ah)
{
	ah->pd->refcnt--;
	rres_table_free(&rd->ahs, ah->handle);
	free(ah);
}

void rres_mr_free(struct rres_dev *rd, struct rres_mr *mr)
{
	uint32_t i;

	if (mr->type == RRES_MR_MW) {
		if (mr->bound_mr)
			mr->bound_mr->nbound--;
		rd->nmw--;
	}
	for (i = 0; i < mr->nregions; i++)
		vhost_mem_region_put(mr->regions[i]);
	rres_mr_pages_add(rd, -(int64_t)(mr->type == RRES_MR_FAST ? mr->max_pages : mr->npages));
	mr->pd->refcnt--;
	rres_table_free(&rd->mrs, mr->mrn);
	free(mr->regions);
	free(mr->pages);
	free(mr);
}

static void rres_cq_free(struct rres_dev *rd, struct rres_cq *cq)
{
	if (rd->hooks.cq_destroy)
		rd->hooks.cq_destroy(rd, cq);
	rres_event_drop(rd, &cq->ev);
	rres_table_free(&rd->cqs, cq->cqn);
	free(cq);
}

/* Destroy every object of the table with free_fn. */
#define RRES_TABLE_DRAIN(rd, t, type, free_fn)                                 \
	do {                                                                   \
		uint32_t i_;                                                   \
		for (i_ = 0; (t)->slot && i_ < (t)->size; i_++)                \
			if ((t)->slot[i_])                                     \
				free_fn((rd), (type *)(t)->slot[i_]);          \
	} while (0)

void rres_dev_reset(struct rres_dev *rd)
{
	uint32_t i;

	RRES_TABLE_DRAIN(rd, &rd->qps, struct rres_qp, rres_qp_free);
	RRES_TABLE_DRAIN(rd, &rd->ahs, struct rres_ah, rres_ah_free);
	/* windows before the MRs they are bound to */
	for (i = 0; rd->mrs.slot && i < rd->mrs.size; i++) {
		struct rres_mr *mr = rd->mrs.slot[i];

		if (mr && mr->type == RRES_MR_MW)
			rres_mr_free(rd, mr);
	}
	RRES_TABLE_DRAIN(rd, &rd->mrs, struct rres_mr, rres_mr_free);
	RRES_TABLE_DRAIN(rd, &rd->srqs, struct rres_srq, rres_srq_free);
	RRES_TABLE_DRAIN(rd, &rd->cqs, struct rres_cq, rres_cq_free);
	rres_event_drop(rd, &rd->port_ev);
	rd->ev_head = rd->ev_tail = NULL;
	for (i = 0; rd->pds.slot && i < rd->pds.size; i++)
		if (rd->pds.slot[i]) {
			free(rd->pds.slot[i]);
			rres_table_free(&rd->pds, i);
		}
	for (i = 0; i < RRES_GID_TBL_LEN; i++)
		rd->gid[i].valid = false;
	rd->gid_gen++;
	rres_gid_defaults(rd);
	rres_gid_ip6_default(rd);
}

void rres_dev_share_tables(struct rres_dev *rd, struct rres_dev *pool, void *owner)
{
	struct rres_table *t[] = { &rd->pds, &rd->mrs, &rd->cqs, &rd->qps, &rd->ahs, &rd->srqs };
	struct rres_table *p[] = { &pool->pds, &pool->mrs, &pool->cqs, &pool->qps, &pool->ahs,
				   &pool->srqs };

	for (unsigned i = 0; i < ARRAY_SIZE(t); i++) {
		t[i]->pool = p[i];
		t[i]->owner = owner;
	}
	/* An index's QP generation and last keys belong to the device: a QPN
	 * or key a closed context used is not handed out again at once. */
	free(rd->qp_gen);
	free(rd->mr_lkey8);
	free(rd->mr_rkey8);
	rd->qp_gen = pool->qp_gen;
	rd->mr_lkey8 = pool->mr_lkey8;
	rd->mr_rkey8 = pool->mr_rkey8;
	rd->pool = pool;
}

void rres_dev_fini(struct rres_dev *rd)
{
	rres_dev_reset(rd);
	rres_table_fini(&rd->pds);
	rres_table_fini(&rd->mrs);
	rres_table_fini(&rd->ahs);
	rres_table_fini(&rd->cqs);
	rres_table_fini(&rd->qps);
	rres_table_fini(&rd->srqs);
	if (!rd->pool) {
		free(rd->qp_gen);
		free(rd->mr_lkey8);
		free(rd->mr_rkey8);
	}
	rd->qp_gen = NULL;
	rd->mr_lkey8 = rd->mr_rkey8 = NULL;
	memset(&rd->rng, 0, sizeof(rd->rng));
}

void rres_dev_set_mem(struct rres_dev *rd, const struct vhost_mem *mem)
{
	rd->mem = mem;
}

/* Recompute the device-managed GIDs; GID_CHANGE if one of them changed. */
static void rres_gid_update(struct rres_dev *rd)
{
	uint8_t old[2][16];
	bool valid[2];
	int i;

	for (i = 0; i < 2; i++) {
		memcpy(old[i], rd->gid[i].raw, 16);
		valid[i] = rd->gid[i].valid;
	}
	rres_gid_defaults(rd);
	for (i = 0; i < 2; i++)
		if (valid[i] != rd->gid[i].valid || memcmp(old[i], rd->gid[i].raw, 16)) {
			rres_event_raise(rd, &rd->port_ev, VIRTIO_IB_EVENT_GID_CHANGE);
			break;
		}
}

void rres_dev_set_mac(struct rres_dev *rd, const uint8_t mac[6])
{
	memcpy(rd->mac, mac, 6);
	rres_gid_update(rd);
}

void rres_dev_set_ip4(struct rres_dev *rd, bool has_ip4, uint32_t ip4)
{
	rd->has_ip4 = has_ip4;
	rd->ip4 = has_ip4 ? ip4 : 0;
	rres_gid_update(rd);
}

void rres_dev_set_eth_mtu(struct rres_dev *rd, uint16_t eth_mtu)
{
	rd->attr.active_mtu = rres_mtu_from_eth(eth_mtu);
}

void rres_dev_counts(const struct rres_dev *rd, struct rres_counts *c)
{
	uint32_t i;

	c->pd = rd->pds.used;
	c->mr = rd->mrs.used - rd->nmw;
	c->srq = rd->srqs.used;
	c->mw = rd->nmw;
	c->cq = rd->cqs.used;
	c->qp = rd->qps.used;
	c->ah = rd->ahs.used;
	c->gid_drv = 0;
	for (i = RRES_GID_FIRST_DRV; i < RRES_GID_TBL_LEN; i++)
		c->gid_drv += rd->gid[i].valid;
}

/* ---- lookups ------------------------------------------------------------ */

struct rres_pd *rres_pd_lookup(const struct rres_dev *rd, uint32_t pdn)
{
	return rres_table_get(&rd->pds, pdn);
}

struct rres_cq *rres_cq_lookup(const struct rres_dev *rd, uint32_t cqn)
{
	return rres_table_get(&rd->cqs, cqn);
}

struct rres_qp *rres_qp_lookup(const struct rres_dev *rd, uint32_t qpn)
{
	struct rres_qp *qp;

	if (qpn > VRDMA_QPN_MASK)
		return NULL;
	qp = rres_table_get(&rd->qps, vrdma_qpn_index(qpn));
	return qp && qp->qpn == qpn ? qp : NULL;
}

struct rres_ah *rres_ah_lookup(const struct rres_dev *rd, uint32_t handle,
			       const struct rres_pd *pd)
{
	struct rres_ah *ah = rres_table_get(&rd->ahs, handle);

	return ah && ah->pd == pd ? ah : NULL;
}

struct rres_mr *rres_mr_lookup(const struct rres_dev *rd, uint32_t mrn)
{
	return rres_table_get(&rd->mrs, mrn);
}

struct rres_mr *rres_mr_lookup_lkey(const struct rres_dev *rd, uint32_t lkey,
				    const struct rres_pd *pd, uint32_t access)
{
	struct rres_mr *mr = rres_table_get(&rd->mrs, lkey >> RRES_KEY_BITS);

	if (!mr || mr->lkey != lkey || mr->pd != pd || (access & ~mr->access) ||
	    mr->type == RRES_MR_MW || mr->state != RRES_MR_VALID)
		return NULL;
	return mr;
}

struct rres_mr *rres_mr_lookup_rkey(const struct rres_dev *rd, uint32_t rkey,
				    const struct rres_pd *pd, uint32_t access)
{
	struct rres_mr *mr = rres_table_get(&rd->mrs, rkey >> RRES_KEY_BITS);

	if (!mr || !mr->rkey || mr->rkey != rkey || mr->pd != pd || (access & ~mr->access) ||
	    mr->state != RRES_MR_VALID)
		return NULL;
	if (mr->type == RRES_MR_MW && !mr->bound_mr)
		return NULL;
	return mr;
}

int rres_mr_to_iov(const struct rres_dev *rd, const struct rres_mr *mr, uint64_t iova,
		   uint64_t len, struct iovec *iov, unsigned max)
{
	uint64_t off, pos;
	unsigned n = 0;

	if (!len)
		return 0;
	if (mr->state != RRES_MR_VALID)
		return -EFAULT;
	if (mr->type == RRES_MR_MW) {
		/* a window: its own bounds, then the bytes of its MR */
		if (!mr->bound_mr || iova < mr->iova || iova - mr->iova > mr->length ||
		    len > mr->length - (iova - mr->iova))
			return -EFAULT;
		return rres_mr_to_iov(rd, mr->bound_mr, iova, len, iov, max);
	}
	if (mr->type == RRES_MR_DMA) {
		if (!rd->mem)
			return -EFAULT;
		return vhost_mem_gpa_to_iov(rd->mem, iova, len, iov, max);
	}
	if (iova < mr->iova)
		return -EFAULT;
	off = iova - mr->iova;
	if (off > mr->length || len > mr->length - off)
		return -EFAULT;
	pos = (mr->iova & (VRDMA_PAGE_SIZE - 1)) + off;
	if (mr->contig) {
		if (!max)
			return -E2BIG;
		iov[0].iov_base = mr->contig + pos;
		iov[0].iov_len = len;
		return 1;
	}
	while (len) {
		uint64_t in_page = pos & (VRDMA_PAGE_SIZE - 1);
		uint64_t chunk = MIN(VRDMA_PAGE_SIZE - in_page, len);
		uint8_t *p = mr->pages[pos >> VRDMA_PAGE_SHIFT] + in_page;

		if (n && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == p) {
			iov[n - 1].iov_len += chunk;
		} else {
			if (n == max)
				return -E2BIG;
			iov[n].iov_base = p;
			iov[n].iov_len = chunk;
			n++;
		}
		pos += chunk;
		len -= chunk;
	}
	return (int)n;
}

const uint8_t *rres_gid_get(const struct rres_dev *rd, uint32_t index)
{
	if (index >= RRES_GID_TBL_LEN || !rd->gid[index].valid)
		return NULL;
	return rd->gid[index].raw;
}

bool rres_cq_notify_check(struct rres_cq *cq, bool solicited_or_error)
{
	if ((cq->armed & RRES_CQ_ARM_NEXT) ||
	    ((cq->armed & RRES_CQ_ARM_SOLICITED) && solicited_or_error)) {
		cq->armed = 0;
		return true;
	}
	return false;
}

/* ---- rings -------------------------------------------------------------- */

enum vrdma_vq_kind rres_ring_decode(const struct rres_dev *rd, uint32_t ring, uint32_t *idx)
{
	if (rd->rdma_dev_layout) /* pair i is QP index i */
		return virtio_rdma_dev_vq_decode(rd->max_rdma_cqs, rd->max_rdma_qps - 1, ring, idx);
	if (rd->ext_offered)
		return (enum vrdma_vq_kind)vrdma_vq_decode_ext(rd->net_pairs, rd->max_rdma_cqs,
							       rd->max_rdma_qps,
							       rd->max_rdma_srqs, ring, idx);
	return vrdma_vq_decode(rd->net_pairs, rd->max_rdma_cqs, rd->max_rdma_qps, ring, idx);
}

uint32_t rres_ring_of_cq(const struct rres_dev *rd, uint32_t cqn)
{
	if (rd->rdma_dev_layout)
		return virtio_rdma_dev_vq_cq(cqn + 1);
	return vrdma_vq_cq(rd->net_pairs, cqn);
}

uint32_t rres_ring_of_sq(const struct rres_dev *rd, uint32_t qp_index)
{
	if (rd->rdma_dev_layout)
		return virtio_rdma_dev_vq_sq(rd->max_rdma_cqs, qp_index);
	return vrdma_vq_sq(rd->net_pairs, rd->max_rdma_cqs, qp_index);
}

uint32_t rres_ring_of_rq(const struct rres_dev *rd, uint32_t qp_index)
{
	if (rd->rdma_dev_layout)
		return virtio_rdma_dev_vq_rq(rd->max_rdma_cqs, qp_index);
	return vrdma_vq_rq(rd->net_pairs, rd->max_rdma_cqs, qp_index);
}

uint32_t rres_ring_count(const struct rres_dev *rd)
{
	if (rd->rdma_dev_layout)
		return virtio_rdma_dev_vq_count(rd->max_rdma_cqs, rd->max_rdma_qps - 1);
	if (rd->ext_offered)
		return vrdma_vq_count_ext(rd->net_pairs, rd->max_rdma_cqs, rd->max_rdma_qps,
					  rd->max_rdma_srqs);
	return vrdma_vq_count(rd->net_pairs, rd->max_rdma_cqs, rd->max_rdma_qps);
}

uint32_t rres_ring_of_eventq(const struct rres_dev *rd)
{
	return vrdma_vq_eventq(rd->net_pairs, rd->max_rdma_cqs, rd->max_rdma_qps);
}

uint32_t rres_ring_of_srq(const struct rres_dev *rd, uint32_t srqn)
{
	return vrdma_vq_srq(rd->net_pairs, rd->max_rdma_cqs, rd->max_rdma_qps, srqn);
}

struct rres_srq *rres_ring_srq(const struct rres_dev *rd, uint32_t ring)
{
	uint32_t idx;

	if ((int)rres_ring_decode(rd, ring, &idx) != VRDMA_VQ_SRQ)
		return NULL;
	return rres_table_get(&rd->srqs, idx);
}

struct rres_cq *rres_ring_cq(const struct rres_dev *rd, uint32_t ring)
{
	uint32_t idx;

	if (rres_ring_decode(rd, ring, &idx) != VRDMA_VQ_CQ)
		return NULL;
	return rres_table_get(&rd->cqs, idx);
}

struct rres_qp *rres_ring_qp(const struct rres_dev *rd, uint32_t ring, bool *is_send)
{
	enum vrdma_vq_kind k;
	uint32_t idx;

	k = rres_ring_decode(rd, ring, &idx);
	if (k != VRDMA_VQ_SQ && k != VRDMA_VQ_RQ)
		return NULL;
	if (is_send)
		*is_send = k == VRDMA_VQ_SQ;
	return rres_table_get(&rd->qps, idx);
}

bool rres_ring_usable(const struct rres_dev *rd, uint32_t ring)
{
	struct rres_qp *qp;
	bool is_send;

	switch ((int)rres_ring_decode(rd, ring, &(uint32_t){ 0 })) {
	case VRDMA_VQ_NET_RX:
	case VRDMA_VQ_NET_TX:
	case VRDMA_VQ_CTRL:
		return true;
	case VRDMA_VQ_CQ:
		return rres_ring_cq(rd, ring) != NULL;
	case VRDMA_VQ_SQ:
	case VRDMA_VQ_RQ:
		qp = rres_ring_qp(rd, ring, &is_send);
		/* a QP with an SRQ never uses its own receive ring */
		return qp && (is_send || !qp->srq);
	case VRDMA_VQ_EVENTQ:
		return rd->ext;
	case VRDMA_VQ_SRQ:
		return rd->ext && rres_ring_srq(rd, ring) != NULL;
	default:
		return false;
	}
}

/* ---- PD ----------------------------------------------------------------- */

enum rres_err rres_pd_create(struct rres_dev *rd, uint32_t *pdn)
{
	struct rres_pd *pd;
	int64_t idx;

	if (!rres_table_room(&rd->pds))
		return RRES_ERR_LIMIT;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return RRES_ERR_NOMEM;
	idx = rres_table_alloc(&rd->pds);
	pd->pdn = (uint32_t)idx;
	rd->pds.slot[idx] = pd;
	*pdn = pd->pdn;
	return RRES_OK;
}

enum rres_err rres_pd_destroy(struct rres_dev *rd, uint32_t pdn)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (pd->refcnt)
		return RRES_ERR_IN_USE;
	rres_table_free(&rd->pds, pdn);
	free(pd);
	return RRES_OK;
}

/* ---- CQ ----------------------------------------------------------------- */

enum rres_err rres_cq_create(struct rres_dev *rd, uint32_t cqe, uint32_t *cqn)
{
	struct rres_cq *cq;
	int64_t idx;

	if (cqe < 1 || cqe > rd->attr.max_cqe)
		return RRES_ERR_RANGE;
	if (!rres_table_room(&rd->cqs))
		return RRES_ERR_LIMIT;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return RRES_ERR_NOMEM;
	idx = rres_table_alloc(&rd->cqs);
	cq->cqn = (uint32_t)idx;
	cq->cqe = cqe;
	cq->vq = rres_ring_of_cq(rd, cq->cqn);
	cq->ev.id = cq->cqn;
	if (rd->hooks.cq_create && rd->hooks.cq_create(rd, cq)) {
		rres_table_unalloc(&rd->cqs, cq->cqn);
		free(cq);
		return RRES_ERR_NOMEM;
	}
	rd->cqs.slot[idx] = cq;
	*cqn = cq->cqn;
	return RRES_OK;
}

enum rres_err rres_cq_destroy(struct rres_dev *rd, uint32_t cqn)
{
	struct rres_cq *cq = rres_cq_lookup(rd, cqn);

	if (!cq)
		return RRES_ERR_BAD_HANDLE;
	if (cq->refcnt)
		return RRES_ERR_IN_USE;
	rres_cq_free(rd, cq);
	return RRES_OK;
}

enum rres_err rres_cq_req_notify(struct rres_dev *rd, uint32_t cqn, uint32_t flags)
{
	struct rres_cq *cq = rres_cq_lookup(rd, cqn);

	if (!cq)
		return RRES_ERR_BAD_HANDLE;
	if (!flags || (flags & ~(uint32_t)(RRES_CQ_ARM_SOLICITED | RRES_CQ_ARM_NEXT)))
		return RRES_ERR_FLAGS;
	cq->armed |= (uint8_t)flags;
	return RRES_OK;
}

/* ---- MR ----------------------------------------------------------------- */

/* Allocate the MR's index and keys and publish it (cannot fail: the caller
 * checked rd->mrs.nfree). */
static void rres_mr_publish(struct rres_dev *rd, struct rres_mr *mr, struct rres_pd *pd)
{
	uint32_t idx = (uint32_t)rres_table_alloc(&rd->mrs);
	uint16_t k;

	mr->mrn = idx;
	mr->pd = pd;
	k = rres_new_key(rd, rd->mr_lkey8[idx]);
	rd->mr_lkey8[idx] = k;
	mr->lkey = (idx << RRES_KEY_BITS) | k;
	mr->rkey = 0;
	if (mr->type == RRES_MR_USER &&
	    (mr->access & (VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			   VIRTIO_IB_ACCESS_REMOTE_ATOMIC))) {
		k = rres_new_key(rd, rd->mr_rkey8[idx]);
		rd->mr_rkey8[idx] = k;
		mr->rkey = (idx << RRES_KEY_BITS) | k;
	}
	pd->refcnt++;
	rd->mrs.slot[idx] = mr;
}

enum rres_err rres_mr_get_dma(struct rres_dev *rd, uint32_t pdn, uint32_t access,
			      struct rres_mr **out)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct rres_mr *mr;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (access & ~(uint32_t)VIRTIO_IB_ACCESS_LOCAL_WRITE)
		return RRES_ERR_FLAGS;
	if (!rres_mr_room(rd))
		return RRES_ERR_LIMIT;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return RRES_ERR_NOMEM;
	mr->type = RRES_MR_DMA;
	mr->access = access;
	mr->iova = 0;
	mr->length = UINT64_MAX;
	mr->page_size = VRDMA_PAGE_SIZE;
	rres_mr_publish(rd, mr, pd);
	*out = mr;
	return RRES_OK;
}

/* Number of 4 KiB pages [va, va+len) touches (len > 0, no wrap). */
uint64_t rres_span_pages(uint64_t va, uint64_t len)
{
	return ((va + len - 1) >> VRDMA_PAGE_SHIFT) - (va >> VRDMA_PAGE_SHIFT) + 1;
}

/* Add r to the sorted set regs[0..*n) if absent. */
int rres_region_set_add(struct vhost_mem_region ***regs, uint32_t *n, uint32_t *cap,
			  struct vhost_mem_region *r)
{
	uint32_t lo = 0, hi = *n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)(*regs)[mid] == (uintptr_t)r)
			return 0;
		if ((uintptr_t)(*regs)[mid] < (uintptr_t)r)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 4;
		void *p = realloc(*regs, ncap * sizeof(**regs));

		if (!p)
			return -ENOMEM;
		*regs = p;
		*cap = ncap;
	}
	memmove(*regs + lo + 1, *regs + lo, (*n - lo) * sizeof(**regs));
	(*regs)[lo] = r;
	(*n)++;
	return 0;
}

enum rres_err rres_mr_reg_user(struct rres_dev *rd, uint32_t pdn, uint32_t access,
			       uint64_t va, uint64_t length, uint32_t npages,
			       const void *pages_le, struct rres_mr **out)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct vhost_mem_region *last = NULL;
	uint32_t i, ncap = 0;
	struct rres_mr *mr;
	enum rres_err err;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	if (!rres_mr_access_ok(rd, access))
		return RRES_ERR_FLAGS;
	if (length > rd->attr.max_mr_size || (length && va > UINT64_MAX - (length - 1)))
		return RRES_ERR_RANGE;
	if (npages != (length ? rres_span_pages(va, length) : 0))
		return RRES_ERR_NPAGES;
	if (!rres_mr_room(rd) || !rres_mr_pages_room(rd, npages))
		return RRES_ERR_LIMIT;
	if (npages && !rd->mem)
		return RRES_ERR_PAGE;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return RRES_ERR_NOMEM;
	mr->type = RRES_MR_USER;
	mr->access = access;
	mr->iova = va;
	mr->length = length;
	mr->page_size = VRDMA_PAGE_SIZE;
	mr->npages = npages;
	if (npages) {
		mr->pages = malloc((size_t)npages * sizeof(*mr->pages));
		if (!mr->pages) {
			err = RRES_ERR_NOMEM;
			goto fail;
		}
	}
	/* Translate every page once; no reference is taken before all pass. */
	for (i = 0; i < npages; i++) {
		uint64_t gpa = get_le64((const uint8_t *)pages_le + 8 * (size_t)i);
		struct vhost_mem_region *r = last;

		if (gpa & (VRDMA_PAGE_SIZE - 1)) {
			err = RRES_ERR_PAGE;
			goto fail;
		}
		if (!r || gpa < r->gpa || gpa - r->gpa > r->size - VRDMA_PAGE_SIZE) {
			r = vhost_mem_find(rd->mem, gpa);
			if (!r || r->size < VRDMA_PAGE_SIZE ||
			    gpa - r->gpa > r->size - VRDMA_PAGE_SIZE) {
				err = RRES_ERR_PAGE;
				goto fail;
			}
			if (rres_region_set_add(&mr->regions, &mr->nregions, &ncap, r)) {
				err = RRES_ERR_NOMEM;
				goto fail;
			}
			last = r;
		}
		mr->pages[i] = r->host + (gpa - r->gpa);
	}
	rres_mr_pages_set(mr);
	for (i = 0; i < mr->nregions; i++)
		vhost_mem_region_get(mr->regions[i]);
	rres_mr_pages_add(rd, npages);
	rres_mr_publish(rd, mr, pd);
	*out = mr;
	return RRES_OK;
fail:
	free(mr->regions);
	free(mr->pages);
	free(mr);
	return err;
}

enum rres_err rres_mr_dereg(struct rres_dev *rd, uint32_t mrn)
{
	struct rres_mr *mr = rres_mr_lookup(rd, mrn);

	if (!mr || mr->type == RRES_MR_MW)
		return RRES_ERR_BAD_HANDLE;
	if (mr->nbound)
		return RRES_ERR_IN_USE;
	rres_mr_free(rd, mr);
	return RRES_OK;
}

/* ---- QP ----------------------------------------------------------------- */

enum rres_err rres_qp_create(struct rres_dev *rd, const struct rres_qp_init *in,
			     struct rres_qp **out)
{
	const struct rres_dev_attr *a = &rd->attr;
	const uint32_t gsi = vrdma_qpn_index(VRDMA_GSI_QPN);
	struct rres_srq *srq = NULL;
	struct rres_cq *scq, *rcq;
	struct rres_qp_cap cap = in->cap;
	struct rres_pd *pd;
	struct rres_qp *qp;
	uint32_t idx, gen;

	if (in->qp_type != VIRTIO_IB_QPT_RC && in->qp_type != VIRTIO_IB_QPT_UC &&
	    in->qp_type != VIRTIO_IB_QPT_UD && in->qp_type != VIRTIO_IB_QPT_GSI)
		return RRES_ERR_QP_TYPE;
	if ((in->ext_flags & ~(uint32_t)VIRTIO_IB_QP_CREATE_EXT_MASK) ||
	    ((in->ext_flags & VIRTIO_IB_QP_CREATE_SRQ) &&
	     !(rd->attr.ext_cap_flags & VIRTIO_IB_DEVICE_SRQ)))
		return RRES_ERR_FLAGS;
	if (in->sq_sig_all > 1)
		return RRES_ERR_RANGE;
	pd = rres_pd_lookup(rd, in->pdn);
	scq = rres_cq_lookup(rd, in->send_cqn);
	rcq = rres_cq_lookup(rd, in->recv_cqn);
	if (in->ext_flags & VIRTIO_IB_QP_CREATE_SRQ) {
		srq = rres_srq_lookup(rd, in->srqn);
		if (!srq)
			return RRES_ERR_BAD_HANDLE;
		if (in->qp_type == VIRTIO_IB_QPT_GSI)
			return RRES_ERR_QP_TYPE;
		/* the SRQ's limits apply; the QP's receive caps are unused */
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	if (!pd || !scq || !rcq)
		return RRES_ERR_BAD_HANDLE;
	if (cap.max_send_wr > a->max_qp_wr || cap.max_recv_wr > a->max_qp_wr ||
	    cap.max_send_sge > a->max_send_sge || cap.max_recv_sge > a->max_recv_sge ||
	    cap.max_inline_data > a->max_inline_data)
		return RRES_ERR_RANGE;
	if (in->qp_type == VIRTIO_IB_QPT_GSI) {
		/* one GSI QP per device: the first context that asks */
		if (gsi >= rd->qps.size || rd->qps.slot[gsi] ||
		    (rd->qps.pool && rd->qps.pool->slot[gsi]))
			return RRES_ERR_LIMIT;
	} else if (!rres_table_room(&rd->qps)) {
		return RRES_ERR_LIMIT;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return RRES_ERR_NOMEM;
	if (in->qp_type == VIRTIO_IB_QPT_GSI) {
		idx = gsi;
		gen = 0;
	} else {
		idx = (uint32_t)rres_table_alloc(&rd->qps);
		gen = rd->qp_gen[idx];
	}
	qp->qpn = vrdma_qpn_make(idx, gen);
	qp->index = idx;
	qp->type = in->qp_type;
	qp->sq_sig_all = in->sq_sig_all;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->cap = cap;
	qp->sq_vq = rres_ring_of_sq(rd, idx);
	qp->rq_vq = rres_ring_of_rq(rd, idx);
	qp->ext_flags = in->ext_flags;
	qp->srq = srq;
	qp->ev.id = qp->qpn;
	rres_qp_attr_default(rd, qp, &qp->attr);
	if (rd->hooks.qp_create && rd->hooks.qp_create(rd, qp)) {
		if (idx != gsi)
			rres_table_unalloc(&rd->qps, idx);
		free(qp);
		return RRES_ERR_NOMEM;
	}
	if (idx == gsi) {
		rd->qps.used++;
		if (rd->qps.pool)
			rd->qps.pool->slot[gsi] = &rd->qps;
	}
	rd->qps.slot[idx] = qp;
	pd->refcnt++;
	scq->refcnt++;
	rcq->refcnt++;
	if (srq)
		srq->refcnt++;
	*out = qp;
	return RRES_OK;
}

enum rres_err rres_qp_destroy(struct rres_dev *rd, uint32_t qpn)
{
	struct rres_qp *qp = rres_qp_lookup(rd, qpn);

	if (!qp)
		return RRES_ERR_BAD_HANDLE;
	rres_qp_free(rd, qp);
	return RRES_OK;
}

/* ---- AH ----------------------------------------------------------------- */

enum rres_err rres_ah_create(struct rres_dev *rd, uint32_t pdn,
			     const struct virtio_rdma_ah_attr *attr, uint32_t *handle)
{
	struct rres_pd *pd = rres_pd_lookup(rd, pdn);
	struct rres_av av;
	struct rres_ah *ah;
	enum rres_err err;
	int64_t idx;

	if (!pd)
		return RRES_ERR_BAD_HANDLE;
	err = rres_av_from_wire(rd, attr, false, &av);
	if (err)
		return err;
	if (!rres_table_room(&rd->ahs))
		return RRES_ERR_LIMIT;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return RRES_ERR_NOMEM;
	idx = rres_table_alloc(&rd->ahs);
	ah->handle = (uint32_t)idx;
	ah->pd = pd;
	ah->av = av;
	pd->refcnt++;
	rd->ahs.slot[idx] = ah;
	*handle = ah->handle;
	if (rd->hooks.ah_create)
		rd->hooks.ah_create(rd, ah);
	return RRES_OK;
}

enum rres_err rres_ah_destroy(struct rres_dev *rd, uint32_t pdn, uint32_t handle)
{
	struct rres_ah *ah = rres_table_get(&rd->ahs, handle);

	if (!ah)
		return RRES_ERR_BAD_HANDLE;
	if (ah->pd->pdn != pdn)
		return RRES_ERR_WRONG_PD;
	rres_ah_free(rd, ah);
	return RRES_OK;
}

/* ---- GID table ---------------------------------------------------------- */

enum rres_err rres_gid_add(struct rres_dev *rd, uint32_t index, const uint8_t gid[16])
{
	static const uint8_t zero[16];

	if (index < RRES_GID_FIRST_DRV || index >= RRES_GID_TBL_LEN)
		return RRES_ERR_GID;
	if (!memcmp(gid, zero, 16))
		return RRES_ERR_RANGE;
	if (rd->gid[index].valid) {
		/* Adding the same GID again is a no-op; replacing is not. */
		return memcmp(rd->gid[index].raw, gid, 16) ? RRES_ERR_IN_USE : RRES_OK;
	}
	memcpy(rd->gid[index].raw, gid, 16);
	rd->gid[index].valid = true;
	rd->gid_gen++;
	return RRES_OK;
}

enum rres_err rres_gid_del(struct rres_dev *rd, uint32_t index)
{
	if (index < RRES_GID_FIRST_DRV || index >= RRES_GID_TBL_LEN || !rd->gid[index].valid)
		return RRES_ERR_GID;
	memset(rd->gid[index].raw, 0, 16);
	rd->gid[index].valid = false;
	rd->gid_gen++;
	return RRES_OK;
}
