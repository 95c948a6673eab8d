// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma memory regions.
 *
 * vrdma_mr_reg: the application's pages are made shared with the device in
 * place (vrdma_mem_share: same addresses, same contents), then REG_USER_MR
 * lists them as 4096-byte pages by their identity GPA (= our virtual
 * address). Each MR holds its own share handle; shares are reference
 * counted per page range by mem_share.c, so overlapping MRs cost nothing
 * extra and a page turns private again when the last MR using it goes.
 *
 * The MR's I/O address space is [iova, iova + length): byte iova + k is
 * addr + k, which the page array expresses only if iova and addr sit at the
 * same offset in a 4 KiB page (docs/spec.md "Memory registration").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"

/* Pages one REG_USER_MR may carry (the device takes 32 MiB of command
 * data; leave room for the header). */
#define MR_MAX_PAGES ((32u << 20) / 8 - 8)

/* Access bits a user MR accepts (the extension's when reported). 0 or
 * -errno. */
static int mr_check_access(const struct vrdma_rdma *r, uint32_t access)
{
	if (access & ~(uint32_t)VIRTIO_IB_ACCESS_EXT_MASK)
		return -EINVAL;
	if ((access & VIRTIO_IB_ACCESS_REMOTE_ATOMIC) &&
	    (!r->ext || r->attr.atomic_cap == VIRTIO_IB_ATOMIC_NONE))
		return -EOPNOTSUPP;
	if ((access & VIRTIO_IB_ACCESS_MW_BIND) && !vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_WINDOW))
		return -EOPNOTSUPP;
	if ((access & (VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & VIRTIO_IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* Every MR ack starts with mrn, lkey, rkey (mr_record's ack[3]). */
_Static_assert(offsetof(struct virtio_rdma_ack_reg_user_mr, rkey) == 8 &&
		       offsetof(struct virtio_rdma_ack_get_dma_mr, rkey) == 8 &&
		       offsetof(struct virtio_rdma_ack_alloc_mr, rkey) == 8,
	       "MR acks: mrn, lkey, rkey");

/* Record an MR the device answered with (ack fields little-endian); an
 * unusable mrn is undone on the device. Returns 0 or -EIO / -ENOMEM. */
static int mr_record(struct vrdma_rdma *r, uint32_t pdn, bool dma, const le32 ack[3],
		     struct vrdma_mem_share *sh, struct vrdma_mr_info *info)
{
	struct virtio_rdma_cmd_dereg_mr d;
	uint32_t mrn = le32toh(ack[0]);
	int rc;

	d.mrn = ack[0];
	rc = vrdma_rdma_handle_take(r, VRDMA_RDMA_TABLE(r, mrs), mrn, r->attr.max_mr,
				    "MR registration", "mrn",
				    VIRTIO_NET_CTRL_ROCE_DEREG_MR, &d, sizeof(d));
	if (rc)
		return rc;
	r->mrs[mrn].live = true;
	r->mrs[mrn].dma = dma;
	r->mrs[mrn].pdn = pdn;
	r->mrs[mrn].lkey = le32toh(ack[1]);
	r->mrs[mrn].rkey = le32toh(ack[2]);
	r->mrs[mrn].sh = sh;
	r->nmrs++;
	r->pds[pdn].refs++;
	info->mrn = mrn;
	info->lkey = r->mrs[mrn].lkey;
	info->rkey = r->mrs[mrn].rkey;
	return 0;
}

int vrdma_mr_reg(struct vrdma_dev *dev, uint32_t pdn, void *addr, uint64_t length,
		 uint64_t iova, uint32_t access, struct vrdma_mr_info *mr)
{
	struct virtio_rdma_cmd_reg_user_mr *c = NULL;
	struct virtio_rdma_ack_reg_user_mr a;
	struct vrdma_mem_share *sh = NULL;
	uintptr_t va = (uintptr_t)addr;
	struct vrdma_rdma *r;
	uint64_t npages, page0, i;
	size_t clen;
	le32 ack[3];
	int rc;

	if (!dev || !mr || !addr || !length)
		return -EINVAL;
	if (access & ~(uint32_t)VIRTIO_IB_ACCESS_EXT_MASK)
		return -EINVAL;
	if (iova + length - 1 < iova || (uint64_t)va + length - 1 < (uint64_t)va ||
	    ((iova ^ (uint64_t)va) & (VRDMA_PAGE_SIZE - 1)))
		return -EINVAL;
	npages = ((iova + length - 1) >> VRDMA_PAGE_SHIFT) - (iova >> VRDMA_PAGE_SHIFT) + 1;
	if (npages > MR_MAX_PAGES)
		return -EINVAL;

	rc = vrdma_rdma_enter(dev, &r);
	if (rc)
		return rc;
	rc = mr_check_access(r, access);
	if (rc == 0)
		rc = length > r->attr.max_mr_size ? -EINVAL
						  : vrdma_rdma_pd_admit(r, pdn, r->nmrs, r->attr.max_mr);
	if (rc)
		goto out;
	clen = sizeof(*c) + (size_t)npages * 8;
	c = malloc(clen);
	if (!c) {
		rc = -ENOMEM;
		goto out;
	}
	rc = vrdma_mem_share(dev, addr, (size_t)length, &sh);
	if (rc)
		goto out;
	memset(c, 0, sizeof(*c));
	c->pdn = htole32(pdn);
	c->access_flags = htole32(access);
	c->virt_addr = htole64(iova);
	c->length = htole64(length);
	c->npages = htole32((uint32_t)npages);
	page0 = (uint64_t)va & ~(uint64_t)(VRDMA_PAGE_SIZE - 1);
	for (i = 0; i < npages; i++) {
		le64 p = htole64(page0 + (i << VRDMA_PAGE_SHIFT));

		memcpy(&c->pages[i], &p, sizeof(p));
	}
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_REG_USER_MR, c, clen, &a, sizeof(a));
	if (rc)
		goto out;
	memcpy(ack, &a, sizeof(ack));
	rc = mr_record(r, pdn, false, ack, sh, mr);
	if (rc == 0)
		sh = NULL; /* the MR owns it */
out:
	if (sh)
		vrdma_mem_unshare(sh);
	vrdma_dev_unlock(dev);
	free(c);
	return rc;
}

int vrdma_mr_get_dma(struct vrdma_dev *dev, uint32_t pdn, uint32_t access,
		     struct vrdma_mr_info *mr)
{
	struct virtio_rdma_cmd_get_dma_mr c;
	struct virtio_rdma_ack_get_dma_mr a;
	struct vrdma_rdma *r;
	le32 ack[3];
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !mr || (access & ~(uint32_t)VIRTIO_IB_ACCESS_LOCAL_WRITE),
				      &r);
	if (rc)
		return rc;
	rc = vrdma_rdma_pd_admit(r, pdn, r->nmrs, r->attr.max_mr);
	if (rc)
		goto out;
	c.pdn = htole32(pdn);
	c.access_flags = htole32(access);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	memcpy(ack, &a, sizeof(ack));
	rc = mr_record(r, pdn, true, ack, NULL, mr);
out:
	vrdma_dev_unlock(dev);
	return rc;
}

static int mr_check_dereg(struct vrdma_rdma *r, uint32_t mrn, void *obj VRDMA_UNUSED)
{
	return !mrn || mrn >= r->mrs_cap || !r->mrs[mrn].live || r->mrs[mrn].mw ? -EINVAL : 0;
}

static void mr_drop(struct vrdma_rdma *r, uint32_t mrn, void *obj VRDMA_UNUSED)
{
	struct vrdma_rdma_mr *m = &r->mrs[mrn];

	if (m->pages)
		vrdma_shm_free(r->dev, m->pages, (size_t)m->max_num_sg * 8);
	if (m->sh) {
		int urc = vrdma_mem_unshare(m->sh);

		if (urc)
			LOG_WARN("vrdma: unsharing the pages of MR %u: %s", mrn, strerror(-urc));
	}
	r->pds[m->pdn].refs--;
	memset(m, 0, sizeof(*m));
	r->nmrs--;
}

static const struct vrdma_rdma_kind mr_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DEREG_MR,
	.check = mr_check_dereg,
	.drop = mr_drop,
};

int vrdma_mr_dereg(struct vrdma_dev *dev, uint32_t mrn)
{
	return vrdma_rdma_destroy(dev, &mr_kind, mrn, NULL);
}

/* ---- extension: fast-registration MRs, memory windows ------------------------ */

int vrdma_mr_alloc(struct vrdma_dev *dev, uint32_t pdn, uint32_t max_num_sg,
		   struct vrdma_mr_info *mr)
{
	struct virtio_rdma_cmd_alloc_mr c;
	struct virtio_rdma_ack_alloc_mr a;
	struct vrdma_rdma *r;
	le64 *pages = NULL;
	le32 ack[3];
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !mr, &r);
	if (rc)
		return rc;
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	rc = !max_num_sg || max_num_sg > r->attr.max_fast_reg_page_list_len
		     ? -EINVAL
		     : vrdma_rdma_pd_admit(r, pdn, r->nmrs, r->attr.max_mr);
	if (rc)
		goto out;
	/* The page list REG_MR points at: shared memory, allocated now. */
	pages = vrdma_shm_alloc(dev, (size_t)max_num_sg * 8, 64);
	if (!pages) {
		rc = -ENOMEM;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.mr_type = htole32(VIRTIO_IB_MR_TYPE_MEM_REG);
	c.max_num_sg = htole32(max_num_sg);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_ALLOC_MR, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	memcpy(ack, &a, sizeof(ack));
	rc = mr_record(r, pdn, false, ack, NULL, mr);
	if (rc == 0) {
		r->mrs[mr->mrn].pages = pages;
		r->mrs[mr->mrn].max_num_sg = max_num_sg;
		pages = NULL;
	}
out:
	if (pages)
		vrdma_shm_free(dev, pages, (size_t)max_num_sg * 8);
	vrdma_dev_unlock(dev);
	return rc;
}

int vrdma_mw_alloc(struct vrdma_dev *dev, uint32_t pdn, uint32_t type, struct vrdma_mw_info *mw)
{
	struct virtio_rdma_cmd_alloc_mw c;
	struct virtio_rdma_ack_alloc_mw a;
	struct virtio_rdma_cmd_dealloc_mw d;
	struct vrdma_rdma *r;
	uint32_t mwn;
	int rc;

	rc = vrdma_rdma_enter_checked(dev, !mw, &r);
	if (rc)
		return rc;
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_WINDOW) ||
	    (type == VIRTIO_IB_MW_TYPE_2 && !vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B))) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (!vrdma_rdma_pd_live(r, pdn) ||
	    (type != VIRTIO_IB_MW_TYPE_1 && type != VIRTIO_IB_MW_TYPE_2)) {
		rc = -EINVAL;
		goto out;
	}
	if (r->nmws >= r->attr.max_mw || r->nmrs + r->nmws >= r->attr.max_mr) {
		rc = -ENOMEM;
		goto out;
	}
	c.pdn = htole32(pdn);
	c.mw_type = htole32(type);
	rc = vrdma_rdma_cmd(r, VIRTIO_NET_CTRL_ROCE_ALLOC_MW, &c, sizeof(c), &a, sizeof(a));
	if (rc)
		goto out;
	mwn = le32toh(a.mwn);
	d.mwn = a.mwn;
	rc = vrdma_rdma_handle_take(r, VRDMA_RDMA_TABLE(r, mrs), mwn, 0xffff, "ALLOC_MW", "mwn",
				    VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, &d, sizeof(d));
	if (rc)
		goto out;
	memset(&r->mrs[mwn], 0, sizeof(r->mrs[mwn]));
	r->mrs[mwn].live = true;
	r->mrs[mwn].mw = true;
	r->mrs[mwn].mw_type = (uint8_t)type;
	r->mrs[mwn].pdn = pdn;
	r->mrs[mwn].rkey = le32toh(a.rkey);
	r->nmws++;
	r->pds[pdn].refs++;
	mw->mwn = mwn;
	mw->rkey = r->mrs[mwn].rkey;
out:
	vrdma_dev_unlock(dev);
	return rc;
}

static int mw_check_dealloc(struct vrdma_rdma *r, uint32_t mwn, void *obj VRDMA_UNUSED)
{
	if (!vrdma_rdma_cap(r, VIRTIO_IB_DEVICE_MEM_WINDOW))
		return -EOPNOTSUPP;
	return !mwn || mwn >= r->mrs_cap || !r->mrs[mwn].live || !r->mrs[mwn].mw ? -EINVAL : 0;
}

static void mw_drop(struct vrdma_rdma *r, uint32_t mwn, void *obj VRDMA_UNUSED)
{
	r->pds[r->mrs[mwn].pdn].refs--;
	memset(&r->mrs[mwn], 0, sizeof(r->mrs[mwn]));
	r->nmws--;
}

static const struct vrdma_rdma_kind mw_kind = {
	.destroy_cmd = VIRTIO_NET_CTRL_ROCE_DEALLOC_MW,
	.check = mw_check_dealloc,
	.drop = mw_drop,
};

int vrdma_mw_dealloc(struct vrdma_dev *dev, uint32_t mwn)
{
	return vrdma_rdma_destroy(dev, &mw_kind, mwn, NULL);
}
