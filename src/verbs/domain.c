/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains, parent domains and ibv_advise_mr (verbs_context
 * alloc_td / dealloc_td / alloc_parent_domain / advise_mr).
 *
 * A thread domain is only a token: this device has no per-thread doorbell
 * resources to hand out. A parent domain is an alias of its PD: a struct
 * ibv_pd with the PD's handle, so every verb taking a PD works with it
 * unchanged; its custom allocators are accepted and not called (the
 * provider allocates its rings itself), its pd_context is kept for the
 * application. ibv_dealloc_pd frees a parent domain without touching the
 * PD. Memory of a registered MR is always resident and shared with the
 * device, so prefetch advice has nothing to do and succeeds.
 */
#include <stdlib.h>

#include "verbs/verbs_priv.h"

struct vibv_pdom {
	struct ibv_pd ibpd;              /* what the application holds */
	struct vibv_pdom *next;   /* context's list, under obj_lock */
	struct ibv_pd *pd;
	struct ibv_td *td;
	void *pd_context;
};

/* verbs_context alloc_td: a thread domain, or NULL with errno set. */
struct ibv_td *vibv_alloc_td(struct ibv_context *ibctx, struct ibv_td_init_attr *attr)
{
	struct ibv_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->context = ibctx;
	return td;
}

/* verbs_context dealloc_td: 0, or EBUSY while a parent domain uses it. */
int vibv_dealloc_td(struct ibv_td *td)
{
	struct vibv_context *ctx = vibv_ctx(td->context);
	struct vibv_pdom *p;

	pthread_mutex_lock(&ctx->obj_lock);
	for (p = ctx->pdoms; p; p = p->next) {
		if (p->td == td) {
			pthread_mutex_unlock(&ctx->obj_lock);
			return EBUSY;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	free(td);
	return 0;
}

/* verbs_context alloc_parent_domain: an alias of attr->pd, or NULL with
 * errno set. */
struct ibv_pd *vibv_alloc_parent_domain(struct ibv_context *ibctx,
					       struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_pdom *p;

	if (!attr || !attr->pd || attr->pd->context != ibctx ||
	    (attr->td && attr->td->context != ibctx) || (attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->ibpd.context = ibctx;
	p->ibpd.handle = attr->pd->handle;
	p->pd = attr->pd;
	p->td = attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		p->pd_context = attr->pd_context;
	pthread_mutex_lock(&ctx->obj_lock);
	p->next = ctx->pdoms;
	ctx->pdoms = p;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &p->ibpd;
}

/* If pd is a parent domain: frees it, *ret = 0, returns true. */
bool vibv_parent_domain_free(struct ibv_pd *pd, int *ret)
{
	struct vibv_context *ctx = vibv_ctx(pd->context);
	struct vibv_pdom **pp, *p;

	pthread_mutex_lock(&ctx->obj_lock);
	for (pp = &ctx->pdoms; (p = *pp); pp = &p->next) {
		if (&p->ibpd == pd) {
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	if (!p)
		return false;
	free(p);
	*ret = 0;
	return true;
}

/* verbs_context advise_mr: prefetch advice on registered memory, which is
 * always resident: 0 (EINVAL for bad arguments, EOPNOTSUPP for unknown
 * advice). */
int vibv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			  uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	uint32_t i;

	if (!pd || !num_sges || !sg_list || (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH))
		return EINVAL;
	switch (advice) {
	case IBV_ADVISE_MR_ADVICE_PREFETCH:
	case IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE:
	case IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
		break;
	default:
		return EOPNOTSUPP;
	}
	for (i = 0; i < num_sges; i++)
		if (!sg_list[i].length)
			return EINVAL;
	return 0;
}
