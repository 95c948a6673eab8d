/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness both control-path fuzz targets share (fuzz_rres_ctrl.c for
 * the virtio-net RoCE device, fuzz_virtio_rdma_ctrl.c for the virtio-rdma
 * device): the input is a sequence of records
 *   u8 op | u8 len | len bytes
 * executed in order on one fresh device whose driver memory is a real
 * vhost_mem with one memfd region (GPA 0x10000, 16 pages; page 15 holds a
 * page list naming the 16 pages). op & 0x1f is the command number; op & 0x40
 * shrinks the response buffer to len / 4 bytes; op & 0x80 turns the record
 * into the target's device-side action.
 *
 * After every step: a failed command changed nothing (counts, registered
 * pages) and wrote no response, a response never exceeds its buffer, and the
 * target's invariants hold; at the end every region reference is returned.
 * Included by exactly one fuzz target each.
 */
#ifndef VRDMA_FUZZ_CTRL_HARNESS_H
#define VRDMA_FUZZ_CTRL_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/rres_dev.h"
#include "vhost/vhost_mem.h"

#define REGION_GPA   0x10000ull
#define REGION_PAGES 16

/* One device model under the harness. */
struct ctrl_fuzz_abi {
	/* its limits and options beyond the common ones */
	void (*config)(struct rres_dev_cfg *cfg);
	/* after rres_dev_init (and nothing else) */
	void (*setup)(struct rres_dev *rd);
	enum rres_err (*exec)(struct rres_dev *rd, uint8_t cmd, const void *in, size_t in_len,
			      void *out, size_t out_cap, size_t *out_len);
	/* a record with op & 0x80 */
	void (*action)(struct rres_dev *rd, const uint8_t *d, size_t len);
	void (*check)(const struct rres_dev *rd);
};

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
	int fd = memfd_create("fuzz_ctrl", 0);

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

/* Page 15 of the region: a page list naming pages 0..15 (restored before
 * each input; translations may overwrite it). */
static void write_page_list(void)
{
	for (uint64_t k = 0; k < REGION_PAGES; k++) {
		uint64_t g = htole64(REGION_GPA + k * 4096);

		memcpy(region->host + 15 * 4096 + 8 * k, &g, 8);
	}
}

/* What every MR (slot i) of both models holds to: its number, keys and PD,
 * its page count (added to *pages), no pinned pages while free; its
 * references to the region are added to *holders. */
static void check_mr(const struct rres_dev *rd, const struct rres_mr *mr, uint32_t i,
		     uint64_t *pages, uint64_t *holders)
{
	if (mr->mrn != i || (mr->lkey >> RRES_KEY_BITS) != i || !mr->pd ||
	    rres_pd_lookup(rd, mr->pd->pdn) != mr->pd)
		die("mr");
	if (mr->rkey && (mr->rkey >> RRES_KEY_BITS) != i)
		die("rkey");
	*pages += mr->type == RRES_MR_FAST ? mr->max_pages : mr->npages;
	if (mr->type == RRES_MR_FAST && mr->npages > mr->max_pages)
		die("fast pages");
	if (mr->state == RRES_MR_FREE && mr->nregions)
		die("free mr pinned");
	for (uint32_t r = 0; r < mr->nregions; r++)
		*holders += mr->regions[r] == region;
}

/* PD and CQ reference counts equal the references the target counted in its
 * tables (pd_refs, cq_refs); the region's equals 1 + the MRs' holders. */
static void check_refs(const struct rres_dev *rd, uint64_t pd_refs, uint64_t cq_refs,
		       uint64_t holders)
{
	uint32_t i;

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

/* The object number of an action record: d[1..3] when it has more. */
static uint32_t action_arg(const uint8_t *d, size_t len)
{
	return len > 4 ? (uint32_t)d[1] | (uint32_t)d[2] << 8 | (uint32_t)d[3] << 16 : 0;
}

/* QP a (if any) moved to state by the transport. */
static void act_qp_state(struct rres_dev *rd, uint32_t a, uint8_t state)
{
	struct rres_qp *qp = rres_qp_lookup(rd, a);

	if (qp)
		(void)rres_qp_async_state(rd, qp, state);
}

/* CQ a (if any) checked for a notification (solicited: d[4] & 1). */
static void act_cq_notify(struct rres_dev *rd, uint32_t a, const uint8_t *d, size_t len)
{
	struct rres_cq *cq = rres_cq_lookup(rd, a);

	if (cq)
		(void)rres_cq_notify_check(cq, len > 4 && (d[4] & 1));
}

/* An MR's page translation of up to d[12] * 97 bytes at iova d[4..12),
 * written over to show every piece lies inside the region. */
static void mr_translate(struct rres_dev *rd, struct rres_mr *mr, const uint8_t *d, size_t len)
{
	struct iovec iov[8];
	uint64_t iova;
	int n;

	if (!mr || len < 12)
		return;
	memcpy(&iova, d + 4, 8);
	n = rres_mr_to_iov(rd, mr, iova, len > 12 ? d[12] * 97u : 1, iov, 8);
	if (n > 8)
		die("iov");
	for (int k = 0; k < n; k++) {
		uint8_t *p = iov[k].iov_base;

		/* inside the region (ASan would also catch it) */
		if (p < region->host || p + iov[k].iov_len > region->host + region->size)
			die("iov range");
		memset(p, 0x5a, iov[k].iov_len);
	}
}

/* One command record: a copy of the request (no slack past len) into a
 * response buffer of cap bytes. */
static void ctrl_fuzz_cmd(const struct ctrl_fuzz_abi *abi, struct rres_dev *rd, uint8_t op,
			  const uint8_t *in, uint8_t len)
{
	struct rres_counts before, after;
	size_t out_len = 99, cap;
	uint64_t pages_before;
	enum rres_err err;
	uint8_t out[256];
	uint8_t *buf;

	cap = op & 0x40 ? len / 4u : sizeof(out);
	rres_dev_counts(rd, &before);
	pages_before = rd->mr_pages;
	buf = len ? malloc(len) : NULL;
	if (len)
		memcpy(buf, in, len);
	memset(out, 0xa5, sizeof(out));
	err = abi->exec(rd, op & 0x1f, buf, len, out, cap, &out_len);
	free(buf);
	rres_dev_counts(rd, &after);
	if ((unsigned)err >= RRES_ERR_MAX)
		die("err");
	if (err && (out_len || out[0] != 0xa5 || pages_before != rd->mr_pages ||
		    memcmp(&before, &after, sizeof(before))))
		die("partial state");
	if (out_len > cap)
		die("out_len");
}

static int ctrl_fuzz_run(const struct ctrl_fuzz_abi *abi, const uint8_t *data, size_t size)
{
	struct rres_dev_cfg cfg;
	struct rres_dev rd;
	size_t pos = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mac[0] = 0x52;
	cfg.has_ip4 = true;
	cfg.ip4 = 0x0100000a;
	cfg.max_cqe = 64;
	cfg.max_qp_wr = 64;
	cfg.max_mr_pages = 24;
	cfg.max_fast_reg_page_list_len = 8;
	cfg.mem = &mem;
	cfg.deterministic = true;
	cfg.seed = 1;
	abi->config(&cfg);
	if (rres_dev_init(&rd, &cfg))
		abort();
	abi->setup(&rd);
	write_page_list();

	while (pos + 2 <= size) {
		uint8_t op = data[pos], len = data[pos + 1];
		const uint8_t *in = data + pos + 2;

		if (pos + 2 + len > size)
			len = (uint8_t)(size - pos - 2);
		pos += 2 + (size_t)len;
		if (op & 0x80)
			abi->action(&rd, in, len);
		else
			ctrl_fuzz_cmd(abi, &rd, op, in, len);
		abi->check(&rd);
	}
	rres_dev_fini(&rd);
	if (region->refcnt != 1)
		die("leaked region reference");
	return 0;
}

/* A target's entry: its model's hooks (struct ctrl_fuzz_abi, in order). */
#define CTRL_FUZZ_TARGET(config_, setup_, exec_, action_, check_)                    \
	static const struct ctrl_fuzz_abi abi = {                                     \
		.config = config_, .setup = setup_, .exec = exec_,                    \
		.action = action_, .check = check_,                                   \
	};                                                                            \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                 \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                  \
	{                                                                             \
		return ctrl_fuzz_run(&abi, data, size);                               \
	}

#endif
