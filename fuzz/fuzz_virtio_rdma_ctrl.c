/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the control path of the virtio-rdma device model
 * (src/backend/virtio_rdma_ctrl.c over the RoCE core): the input is a sequence
 * of records
 *   u8 op | u8 len | len bytes
 * executed in order on one fresh device whose driver memory is a real
 * vhost_mem with one memfd region (GPA 0x10000, 16 pages; page 15 holds a
 * page list naming the 16 pages, the target of REG_USER_MR / MAP_MR_SG
 * page tables). op & 0x1f is the command number (0 and 19..31 unknown);
 * op & 0x40 shrinks the response buffer to len / 4 bytes; op & 0x80 turns the
 * record into a device-side action (reset, async QP error, CQ notification
 * check, MR translation).
 *
 * After every step: a failed command changed nothing and returned no
 * response, a response never exceeds its buffer, reference counts equal the
 * objects that hold them, registered pages add up, and at the end every
 * region reference is returned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/virtio_rdma_dev.h"
#include "vhost/vhost_mem.h"

#define REGION_GPA   0x10000ull
#define REGION_PAGES 16

static struct vhost_mem mem;
static struct vhost_mem_region *region;

static void die(const char *why)
{
	(void)why;
	__builtin_trap();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = memfd_create("fuzz_virtio_rdma", 0);

	(void)argc;
	(void)argv;
	vhost_mem_init(&mem);
	if (fd < 0 || ftruncate(fd, REGION_PAGES * 4096) < 0 ||
	    vhost_mem_add(&mem, REGION_GPA, REGION_PAGES * 4096, REGION_GPA, 0, fd) < 0)
		abort();
	region = vhost_mem_find(&mem, REGION_GPA);
	if (!region)
		abort();
	return 0;
}

static void write_page_list(void)
{
	for (uint64_t k = 0; k < REGION_PAGES; k++) {
		uint64_t g = htole64(REGION_GPA + k * 4096);

		memcpy(region->host + 15 * 4096 + 8 * k, &g, 8);
	}
}

static void check_invariants(const struct rres_dev *rd)
{
	uint64_t pd_refs = 0, cq_refs = 0, pages = 0, holders = 0;
	uint32_t i, n;

	for (i = 0, n = 0; i < rd->mrs.size; i++) {
		const struct rres_mr *mr = rd->mrs.slot[i];

		if (!mr)
			continue;
		n++;
		if (mr->mrn != i || !mr->pd || rres_pd_lookup(rd, mr->pd->pdn) != mr->pd)
			die("mr");
		pages += mr->type == RRES_MR_FAST ? mr->max_pages : mr->npages;
		if (mr->type == RRES_MR_FAST && mr->npages > mr->max_pages)
			die("fast pages");
		if (mr->state == RRES_MR_FREE && mr->nregions)
			die("free mr pinned");
		if (mr->type == RRES_MR_DMA && (mr->access & ~(uint32_t)VIRTIO_IB_ACCESS_LOCAL_WRITE))
			die("remote dma mr");
		for (uint32_t r = 0; r < mr->nregions; r++)
			holders += mr->regions[r] == region;
	}
	if (n != rd->mrs.used || pages != rd->mr_pages || pages > rd->max_mr_pages)
		die("mr count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->qps.size; i++) {
		const struct rres_qp *qp = rd->qps.slot[i];

		if (!qp)
			continue;
		n++;
		if (qp->index != i || virtio_rdma_dev_qp_pair(qp->qpn) != i || i == 0 ||
		    rres_qp_lookup(rd, qp->qpn) != qp)
			die("qp");
		if (qp->attr.qp_state > VIRTIO_IB_QPS_ERR || qp->srq)
			die("qp state");
		if (qp->sq_vq != virtio_rdma_dev_vq_sq(rd->max_rdma_cqs, i) ||
		    qp->rq_vq != virtio_rdma_dev_vq_rq(rd->max_rdma_cqs, i) ||
		    rres_ring_qp(rd, qp->sq_vq, NULL) != qp)
			die("qp rings");
	}
	if (n != rd->qps.used)
		die("qp count");
	pd_refs += n;
	cq_refs = 2ull * n;
	if (rd->ahs.used || rd->srqs.used)
		die("objects the model cannot create");
	for (i = 0; i < rd->pds.size; i++)
		if (rd->pds.slot[i])
			pd_refs -= ((const struct rres_pd *)rd->pds.slot[i])->refcnt;
	for (i = 0; i < rd->cqs.size; i++)
		if (rd->cqs.slot[i])
			cq_refs -= ((const struct rres_cq *)rd->cqs.slot[i])->refcnt;
	if (pd_refs || cq_refs)
		die("refcnt");
	if (region->refcnt != 1 + holders)
		die("region refs");
}

static void device_action(struct rres_dev *rd, const uint8_t *d, size_t len)
{
	uint32_t a = len > 4 ? (uint32_t)d[1] | (uint32_t)d[2] << 8 | (uint32_t)d[3] << 16 : 0;
	struct iovec iov[8];
	struct rres_qp *qp;
	struct rres_cq *cq;
	struct rres_mr *mr;

	if (!len)
		return;
	switch (d[0] % 4) {
	case 0:
		rres_dev_reset(rd);
		virtio_rdma_dev_setup(rd);
		break;
	case 1:
		qp = rres_qp_lookup(rd, a);
		if (qp)
			(void)rres_qp_async_state(rd, qp, VIRTIO_IB_QPS_ERR);
		break;
	case 2:
		cq = rres_cq_lookup(rd, a);
		if (cq)
			(void)rres_cq_notify_check(cq, len > 4 && (d[4] & 1));
		break;
	default:
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 12) {
			uint64_t iova;
			int n;

			memcpy(&iova, d + 4, 8);
			n = rres_mr_to_iov(rd, mr, iova, len > 12 ? d[12] * 97u : 1, iov, 8);
			if (n > 8)
				die("iov");
			for (int k = 0; k < n; k++) {
				uint8_t *p = iov[k].iov_base;

				if (p < region->host || p + iov[k].iov_len > region->host + region->size)
					die("iov range");
				memset(p, 0x5a, iov[k].iov_len);
			}
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rres_dev_cfg cfg;
	struct rres_dev rd;
	uint8_t out[256];
	size_t pos = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mac[0] = 0x52;
	cfg.has_ip4 = true;
	cfg.ip4 = 0x0100000a;
	cfg.max_rdma_qps = 6;
	cfg.max_rdma_cqs = 3;
	cfg.max_pd = 3;
	cfg.max_mr = 5;
	cfg.max_cqe = 64;
	cfg.max_qp_wr = 64;
	cfg.max_mr_pages = 24;
	cfg.max_fast_reg_page_list_len = 8;
	cfg.mem = &mem;
	cfg.deterministic = true;
	cfg.seed = 1;
	if (rres_dev_init(&rd, &cfg))
		abort();
	virtio_rdma_dev_setup(&rd);
	write_page_list();

	while (pos + 2 <= size) {
		uint8_t op = data[pos], len = data[pos + 1];
		const uint8_t *in = data + pos + 2;
		struct rres_counts before, after;
		uint64_t pages_before;
		size_t out_len = 99, cap;
		enum rres_err err;
		uint8_t *buf;

		if (pos + 2 + len > size)
			len = (uint8_t)(size - pos - 2);
		pos += 2 + (size_t)len;
		if (op & 0x80) {
			device_action(&rd, in, len);
			check_invariants(&rd);
			continue;
		}
		cap = op & 0x40 ? len / 4u : sizeof(out);
		rres_dev_counts(&rd, &before);
		pages_before = rd.mr_pages;
		/* a copy, so the request has no slack past len */
		buf = len ? malloc(len) : NULL;
		if (len)
			memcpy(buf, in, len);
		memset(out, 0xa5, sizeof(out));
		err = virtio_rdma_dev_ctrl_exec(&rd, op & 0x1f, buf, len, out, cap, &out_len);
		free(buf);
		rres_dev_counts(&rd, &after);
		if ((unsigned)err >= RRES_ERR_MAX)
			die("err");
		if (err && (out_len || out[0] != 0xa5 || pages_before != rd.mr_pages ||
			    memcmp(&before, &after, sizeof(before))))
			die("partial state");
		if (out_len > cap)
			die("out_len");
		check_invariants(&rd);
	}
	rres_dev_fini(&rd);
	if (region->refcnt != 1)
		die("leaked region reference");
	return 0;
}
