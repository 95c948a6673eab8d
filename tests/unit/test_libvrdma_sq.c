/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma's send request encoder (vrdma_rdma_sq_encode, the virtio-net
 * RoCE device model): every field where the wire layout puts it, and a
 * request like the one its slot held before rewrites only the header's
 * line. The slot straddles two pages so that its num_sge line and its SGE
 * can be made read-only (a store there would fault).
 */
#include <endian.h>
#include <stddef.h>
#include <sys/mman.h>

#include "harness.h"
#include "libvrdma/rdma_priv.h"
#include "vrdma/virtio_net_roce.h"
#include "vrdma/vrdma_rdma.h"

#define PAGE 4096u

struct fx {
	uint8_t *map;  /* two pages */
	uint8_t *slot; /* bytes 0..511 on the first, 512.. on the second */
	struct vrdma_qp qp;
	struct vrdma_sge sge;
	struct vrdma_send_wr wr;
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(f->map != MAP_FAILED);
	f->slot = f->map + PAGE - 512;
	f->qp.type = VIRTIO_IB_QPT_RC;
	f->sge = (struct vrdma_sge){ .addr = 0x7f0000001000ull, .length = 64, .lkey = 0x1234 };
	f->wr.wr_id = 1;
	f->wr.opcode = VIRTIO_IB_WR_RDMA_WRITE;
	f->wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	f->wr.rdma.remote_addr = 0x5000;
	f->wr.rdma.rkey = 0x77;
	f->wr.num_sge = 1;
	f->wr.sg_list = &f->sge;
}

static void tail_protect(struct fx *f, bool ro)
{
	REQUIRE(mprotect(f->map + PAGE, PAGE, ro ? PROT_READ : PROT_READ | PROT_WRITE) == 0);
}

static const struct virtio_rdma_sq_req_ext *req(const struct fx *f)
{
	return (const struct virtio_rdma_sq_req_ext *)(const void *)f->slot;
}

static void check_sge(const struct fx *f, const struct vrdma_sge *s)
{
	const struct virtio_rdma_sge *w = &req(f)->sg_list[0];

	CHECK_EQ(le64toh(w->addr), s->addr);
	CHECK_EQ(le32toh(w->length), s->length);
	CHECK_EQ(le32toh(w->lkey), s->lkey);
}

static void test_layout_and_stable_lines(void)
{
	struct fx f;
	uint32_t len;

	fx_init(&f);
	_Static_assert(offsetof(struct virtio_rdma_sq_req_ext, num_sge) == 560, "num_sge");
	_Static_assert(offsetof(struct virtio_rdma_sq_req_ext, sg_list) == 576, "sg_list");
	memset(f.slot, 0xee, 640); /* a slot's earlier bytes */
	len = vrdma_rdma_sq_encode(&f.qp, f.slot, &f.wr, 64, NULL);
	CHECK_EQ(len, 576 + 16);
	CHECK_EQ(le64toh(req(&f)->wr_id), 1);
	CHECK_EQ(req(&f)->opcode, VIRTIO_IB_WR_RDMA_WRITE);
	CHECK_EQ(le64toh(req(&f)->rdma.remote_addr), 0x5000);
	CHECK_EQ(le32toh(req(&f)->rdma.rkey), 0x77);
	CHECK_EQ(le32toh(req(&f)->num_sge), 1);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(req(&f)->reserved2[i], 0);
	check_sge(&f, &f.sge);

	/* the same shape again: only the header's line is written */
	tail_protect(&f, true);
	for (uint64_t id = 2; id < 6; id++) {
		f.wr.wr_id = id;
		f.wr.rdma.remote_addr = 0x5000 + id * 64;
		f.wr.opcode = id & 1 ? VIRTIO_IB_WR_SEND : VIRTIO_IB_WR_RDMA_WRITE;
		CHECK_EQ(vrdma_rdma_sq_encode(&f.qp, f.slot, &f.wr, 64, NULL), 576 + 16);
		CHECK_EQ(le64toh(req(&f)->wr_id), id);
		CHECK_EQ(req(&f)->opcode, f.wr.opcode);
	}
	tail_protect(&f, false);

	/* another SGE, then inline data, then a local operation: each writes
	 * the lines that change */
	f.sge.addr += 4096;
	f.sge.lkey = 0x99;
	vrdma_rdma_sq_encode(&f.qp, f.slot, &f.wr, 64, NULL);
	check_sge(&f, &f.sge);
	{
		static const char data[] = "inline bytes";
		struct vrdma_sge in = { .addr = (uintptr_t)data, .length = sizeof(data) };

		f.wr.send_flags = VIRTIO_IB_SEND_INLINE;
		f.wr.sg_list = &in;
		CHECK_EQ(vrdma_rdma_sq_encode(&f.qp, f.slot, &f.wr, sizeof(data), NULL), 576);
		CHECK_EQ(le16toh(req(&f)->inline_len), sizeof(data));
		CHECK_EQ(le32toh(req(&f)->num_sge), sizeof(data));
		CHECK_MEM(req(&f)->inline_data, data, sizeof(data));
	}
	f.wr.opcode = VIRTIO_IB_WR_LOCAL_INV;
	f.wr.invalidate_rkey = 0x4242;
	CHECK_EQ(vrdma_rdma_sq_encode(&f.qp, f.slot, &f.wr, 0, NULL), 576);
	CHECK_EQ(le32toh(req(&f)->num_sge), 0);
	CHECK_EQ(le32toh(req(&f)->invalidate_rkey), 0x4242);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(req(&f)->reserved2[i], 0);
	munmap(f.map, 2 * PAGE);
}

int main(void)
{
	TEST_PROGRAM("test_libvrdma_sq");
	RUN(test_layout_and_stable_lines);
	return TEST_DONE();
}
