/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains, memory regions and fork.
 *
 * Registering memory: the provider makes the application's range shared
 * with the device (REG_USER_MR). With libvrdma that means the pages are
 * moved into a memfd mapped MAP_SHARED at the same address, so the
 * application sees no change.
 *
 * What fork means here: a child gets a private copy of the memory its
 * parent registered, as with kernels that copy pinned pages on fork. The
 * provider arranges it (src/libvrdma/mem_share.c converts the shared pages a
 * child inherits back into private ones before fork() returns in the
 * parent, and the shared-heap allocator gives the child a copy of its
 * heap), so ibv_reg_mr does not mark ranges MADV_DONTFORK: a child keeps
 * every page of its address space, including heap pages next to a small
 * registered block. A child cannot use the parent's verbs objects: they
 * belong to the parent's connection to the device. ibv_fork_init()
 * succeeds and ibv_is_fork_initialized() reports IBV_FORK_UNNEEDED.
 * ibv_dontfork_range / ibv_dofork_range still apply MADV_DONTFORK /
 * MADV_DOFORK for programs that call them.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs/verbs_priv.h"

/* The access bits of libibverbs and of the device have the same values. */
_Static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)VIRTIO_IB_ACCESS_LOCAL_WRITE, "access");
_Static_assert((int)IBV_ACCESS_REMOTE_WRITE == (int)VIRTIO_IB_ACCESS_REMOTE_WRITE, "access");
_Static_assert((int)IBV_ACCESS_REMOTE_READ == (int)VIRTIO_IB_ACCESS_REMOTE_READ, "access");
_Static_assert(IBV_ACCESS_REMOTE_ATOMIC == VIRTIO_IB_ACCESS_REMOTE_ATOMIC_RSVD, "access");
_Static_assert(IBV_ACCESS_MW_BIND == VIRTIO_IB_ACCESS_MW_BIND_RSVD, "access");

/* ------------------------------------------------------------------------ */
/* Access flags                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Access flags as VIRTIO_IB_ACCESS_*: local write, remote write / read and
 * the reserved atomic and MW-bind bits pass through (the provider decides
 * whether the device has them); the optional range (relaxed ordering) and
 * IBV_ACCESS_HUGETLB are hints and dropped; on-demand paging, zero-based MRs
 * and anything unknown are refused. Remote write or atomic without local
 * write is invalid. Returns 0 or a positive errno.
 */
int vibv_access(unsigned int ibv_access, uint32_t *out)
{
	const unsigned int pass = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				  IBV_ACCESS_MW_BIND;
	unsigned int a = ibv_access & ~(IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB);

	if (a & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED))
		return EOPNOTSUPP;
	if (a & ~pass)
		return EINVAL;
	if ((a & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(a & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	*out = a;
	return 0;
}

/* VIRTIO_IB_ACCESS_* as libibverbs access flags. */
unsigned int vibv_access_to_ibv(uint32_t access)
{
	return access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			 IBV_ACCESS_MW_BIND);
}

/* ------------------------------------------------------------------------ */
/* Protection domains                                                        */
/* ------------------------------------------------------------------------ */

/* Returns a new PD, or NULL with errno set. */
struct ibv_pd *ibv_alloc_pd(struct ibv_context *ibctx)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct ibv_pd *pd;
	uint32_t pdn = 0;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = VRDMA_PROV_CALL(ctx->ops, create_pd, ctx->prov, &pdn);
	if (ret) {
		free(pd);
		vibv_errno(ret);
		return NULL;
	}
	pd->context = ibctx;
	pd->handle = pdn;
	return pd;
}

/* Frees a PD or a parent domain: 0 or a positive errno (EBUSY while
 * objects use the PD). */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct vibv_context *ctx = vibv_ctx(pd->context);
	int ret;

	if (vibv_parent_domain_free(pd, &ret))
		return ret;
	ret = VRDMA_PROV_CALL(ctx->ops, destroy_pd, ctx->prov, pd->handle);
	if (ret)
		return vibv_errno(ret);
	free(pd);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Memory regions                                                            */
/* ------------------------------------------------------------------------ */

/* Returns a new MR for [addr, addr + length) seen at iova, or NULL with
 * errno set. */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct vibv_context *ctx;
	struct vibv_prov_mr pmr;
	struct ibv_mr *mr;
	uint32_t vaccess;
	int ret;

	if (!pd || !length || (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	ctx = vibv_ctx(pd->context);
	ret = vibv_access(access, &vaccess);
	if (ret) {
		errno = ret;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&pmr, 0, sizeof(pmr));
	ret = VRDMA_PROV_CALL(ctx->ops, reg_mr, ctx->prov, pd->handle, addr,
			      length, iova, vaccess, &pmr);
	if (ret) {
		free(mr);
		vibv_errno(ret);
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->handle = pmr.mrn;
	mr->lkey = pmr.lkey;
	mr->rkey = pmr.rkey;
	return mr;
}

#undef ibv_reg_mr
/* ibv_reg_mr with iova = addr. */
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

#undef ibv_reg_mr_iova
/* ibv_reg_mr at a chosen I/O virtual address. */
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* dma-buf MRs need a kernel importer: NULL, errno EOPNOTSUPP. */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Deregisters an MR: 0 or a positive errno. */
int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct vibv_context *ctx = vibv_ctx(mr->context);
	int ret;

	ret = VRDMA_PROV_CALL(ctx->ops, dereg_mr, ctx->prov, mr->handle);
	if (ret)
		return vibv_errno(ret);
	free(mr);
	return 0;
}

/* Re-registration has no device command: IBV_REREG_MR_ERR_INPUT (the old MR
 * stays valid), errno EOPNOTSUPP. */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	(void)mr;
	(void)flags;
	(void)pd;
	(void)addr;
	(void)length;
	(void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/* ------------------------------------------------------------------------ */
/* Fork                                                                      */
/* ------------------------------------------------------------------------ */

/* Page-aligned madvise over [base, base + size): 0 or a positive errno. */
static int vibv_madvise_range(void *base, size_t size, int advice)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start, end;

	if (!size)
		return 0;
	start = (uintptr_t)base & ~(page - 1);
	end = ((uintptr_t)base + size + page - 1) & ~(page - 1);
	if (end <= start)
		return EINVAL;
	if (madvise((void *)start, end - start, advice))
		return errno;
	return 0;
}

/* Nothing to prepare: children get private copies (see above). Returns 0. */
int ibv_fork_init(void)
{
	return 0;
}

/* Returns IBV_FORK_UNNEEDED: fork is safe without ibv_fork_init(). */
enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* Children do not inherit [base, base + size): 0 or a positive errno. */
int ibv_dontfork_range(void *base, size_t size)
{
	return vibv_madvise_range(base, size, MADV_DONTFORK);
}

/* Children inherit [base, base + size) again: 0 or a positive errno. */
int ibv_dofork_range(void *base, size_t size)
{
	return vibv_madvise_range(base, size, MADV_DOFORK);
}

/* ------------------------------------------------------------------------ */
/* Importing objects of another process (needs a shared kernel context)      */
/* ------------------------------------------------------------------------ */

/* Not supported: NULL, errno EOPNOTSUPP. */
struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Nothing to release (no PD can be imported). */
void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

/* Not supported: NULL, errno EOPNOTSUPP. */
struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Nothing to release (no MR can be imported). */
void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

/* Not supported: NULL, errno EOPNOTSUPP. */
struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Nothing to release (no device memory can be imported). */
void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

/* A context shared through a uverbs fd: not supported, NULL, EOPNOTSUPP. */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}
