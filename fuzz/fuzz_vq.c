/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the split virtqueue, device side (and the driver side's
 * handling of a bad device).
 *
 * Guest memory: one memfd mapped as three regions,
 *   A  gpa 0x10000..0x18000  rings, then data
 *   B  gpa 0x18000..0x20000  adjacent to A; the indirect area starts 0x100
 *                            before B, so tables can straddle the edge
 *   C  gpa 0x40000..0x41000  alone, after a gap
 * The input fills the descriptor table, the avail ring and the indirect
 * area; descriptor addresses are folded into windows around those regions
 * (unless the input asks for raw values) so that edges are hit often. Then
 * vq_dev_pop() runs until the ring is empty or the queue is broken (with
 * vq_dev_peek/vq_dev_prefetch_desc hints before each pop, whose buffers
 * must be readable), and every element is checked to lie inside the
 * regions.
 *
 * Input layout:
 *   [0]     ring size: 1 << (b % 9)
 *   [1]     flags: 1 event_idx, 2 indirect, 4 raw addresses, 8 poll mode,
 *                  16 unpop once, 32 driver phase
 *   [2..3]  last_avail_idx (SET_VRING_BASE)
 *   [4..5]  avail->idx
 *   [6..7]  used->idx, and used_event
 *   then    num * 16 bytes of descriptors, num * 2 bytes of avail ring,
 *           up to 16 KiB of indirect area.
 *   Driver phase (flags & 32): a driver adds chains (flags 1 event_idx,
 *   2 some indirect, 8 callbacks off, 16 toggle callbacks), then what follows
 *   the header overwrites the used ring it reads.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_mem.h"
#include "virtio/vq_dev.h"
#include "virtio/vq_drv.h"

#define GPA_A    0x10000ull
#define GPA_B    0x18000ull
#define GPA_C    0x40000ull
#define SIZE_AB  0x8000ull
#define SIZE_C   0x1000ull
#define FILE_LEN 0x11000ull
#define IND_GPA  (GPA_B - 0x100) /* straddles the A/B edge */
#define IND_LEN  0x4000u

static struct vhost_mem mem;
static uint8_t *view; /* our own mapping of the whole file: file offset -> byte */
static struct vq_elem elem;

static int setup(void)
{
	int fd = memfd_create("fuzz_vq", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)FILE_LEN) < 0)
		return -1;
	view = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (view == MAP_FAILED)
		return -1;
	vhost_mem_init(&mem);
	if (vhost_mem_add(&mem, GPA_A, SIZE_AB, GPA_A, 0, dup(fd)) ||
	    vhost_mem_add(&mem, GPA_B, SIZE_AB, GPA_B, SIZE_AB, dup(fd)) ||
	    vhost_mem_add(&mem, GPA_C, SIZE_C, GPA_C, 2 * SIZE_AB, dup(fd)))
		return -1;
	close(fd);
	vlog_level = VLOG_ERR;
	return 0;
}

/* Our view of a GPA inside A, B or C (file is A | B | C). */
static uint8_t *view_of(uint64_t gpa)
{
	if (gpa >= GPA_A && gpa < GPA_B + SIZE_AB)
		return view + (gpa - GPA_A);
	return view + 2 * SIZE_AB + (gpa - GPA_C);
}

static uint64_t fold_addr(uint64_t a)
{
	switch (a >> 62) {
	case 0: /* around A and B */
		return GPA_A - 0x100 + (a & 0xffffff) % (2 * SIZE_AB + 0x200);
	case 1: /* around C */
		return GPA_C - 0x100 + (a & 0xffffff) % (SIZE_C + 0x200);
	case 2: /* the indirect area */
		return IND_GPA + (a & 0xffffff) % IND_LEN;
	default:
		return a;
	}
}

/* Copy n descriptors from the input, folding addresses and lengths. */
static void put_descs(uint8_t *dst, const uint8_t *src, size_t n, bool raw)
{
	size_t i;

	memcpy(dst, src, n * 16);
	if (raw)
		return;
	for (i = 0; i < n; i++) {
		struct vring_desc d;

		memcpy(&d, dst + i * 16, 16);
		d.addr = htole64(fold_addr(le64toh(d.addr)));
		if (!(le32toh(d.len) & 0x80000000u))
			d.len = htole32(le32toh(d.len) & 0x1ffff);
		memcpy(dst + i * 16, &d, 16);
	}
}

static bool inside_regions(const void *p, size_t len)
{
	unsigned i;

	for (i = 0; i < mem.nregions; i++) {
		const struct vhost_mem_region *r = mem.regions[i];
		uintptr_t s = (uintptr_t)r->host, a = (uintptr_t)p;

		if (a >= s && a - s < r->size && len <= r->size - (a - s))
			return true;
	}
	return false;
}

/* Every iovec inside shared memory, counts and totals consistent. */
static void check_elem(const struct vq_dev *vq, const struct vq_elem *e)
{
	uint64_t out = 0, in = 0;
	unsigned i;

	if ((unsigned)e->out_num + e->in_num > VQ_MAX_IOV || e->head >= vq->num)
		abort();
	for (i = 0; i < (unsigned)e->out_num + e->in_num; i++) {
		if (!inside_regions(e->iov[i].iov_base, e->iov[i].iov_len))
			abort();
		if (i < e->out_num)
			out += e->iov[i].iov_len;
		else
			in += e->iov[i].iov_len;
	}
	if (out != e->out_len || in != e->in_len)
		abort();
}

static void device_phase(uint16_t num, uint8_t flags, uint16_t base,
			 const uint8_t *p, size_t left)
{
	uint64_t used_off = ALIGN_UP(16ull * num + 6 + 2ull * num, 4096ull);
	struct vring_desc *desc = vhost_mem_gpa_to_host(&mem, GPA_A, 16ull * num);
	struct vring_avail *avail = vhost_mem_gpa_to_host(&mem, GPA_A + 16ull * num,
							  vq_avail_size(num));
	struct vring_used *used = vhost_mem_gpa_to_host(&mem, GPA_A + used_off,
							vq_used_size(num));
	uint8_t *ring = view;
	struct vq_dev vq;
	uint8_t buf[64];
	size_t n;
	unsigned i;
	int rc;

	/* Descriptors, avail ring, indirect area. */
	n = MIN(left / 16, (size_t)num);
	put_descs(ring, p, n, flags & 4);
	p += n * 16;
	left -= n * 16;
	n = MIN(left, 2ull * num);
	memcpy(ring + 16ull * num + 4, p, n);
	p += n;
	left -= n;
	n = MIN(left / 16, (size_t)IND_LEN / 16);
	put_descs(view_of(IND_GPA), p, n, flags & 4);

	if (vq_dev_init(&vq, &mem, num, desc, avail, used, base, flags & 1, flags & 2))
		abort();
	if (flags & 8)
		vq_dev_set_notify(&vq, false);

	for (i = 0; i < 2u * num + 4; i++) {
		/* prefetch hints: whatever they return lies in shared memory */
		for (uint16_t a = 0; a < 3; a++) {
			uint32_t plen = 0;
			const volatile uint8_t *h = vq_dev_peek(&vq, (uint16_t)(a * (i + 1)), &plen);

			vq_dev_prefetch_desc(&vq, (uint16_t)(a + i));
			if (h) {
				if (!inside_regions((const void *)h, plen ? plen : 1))
					abort();
				(void)(h[0] + h[plen ? plen - 1 : 0]);
			}
		}
		rc = vq_dev_pop(&vq, &elem);
		if (rc <= 0)
			break;
		check_elem(&vq, &elem);
		if ((flags & 16) && i == 0) {
			vq_dev_unpop(&vq);
			continue;
		}
		vq_elem_read(&elem, i % 7, buf, sizeof(buf));
		memset(buf, (int)i, sizeof(buf));
		vq_elem_write(&elem, i % 5, buf, MIN(sizeof(buf), (size_t)elem.in_len));
		vq_dev_fill(&vq, elem.head, elem.in_len);
		if (i % 3 == 2) {
			vq_dev_flush(&vq);
			vq_dev_should_notify(&vq);
		}
	}
	vq_dev_flush(&vq);
	vq_dev_should_notify(&vq);
	vq_dev_set_notify(&vq, true);
	vq_dev_avail(&vq);
	if (vq.broken && vq_dev_pop(&vq, &elem) != -EIO)
		abort();
}

/* A driver with a few chains out, facing a used ring written by the input. */
static void driver_phase(uint16_t num, uint8_t flags, uint16_t base, const uint8_t *p,
			 size_t left)
{
	struct vq_drv drv;
	struct vq_buf b[3] = { { GPA_A, 8 }, { GPA_A + 8, 8 }, { GPA_A + 16, 8 } };
	static int toks[256];
	uint32_t len;
	unsigned i, got = 0;
	size_t n;

	if (vq_drv_init(&drv, view, num, flags & 1))
		abort();
	vq_drv_set_base(&drv, base);
	vq_drv_set_indirect(&drv, (struct vring_desc *)view_of(GPA_B), GPA_B, 4);
	for (i = 0; i < num; i++) {
		int rc = (flags & 2) && (i & 1) ?
			vq_drv_add_indirect(&drv, b, 1 + i % 2, b + 2, i % 3 == 0, &toks[i]) :
			vq_drv_add(&drv, b, 1 + i % 2, b + 2, i % 3 == 0, &toks[i]);

		if (rc)
			break;
	}
	if (flags & 8)
		vq_drv_disable_cb(&drv);
	vq_drv_kick_prepare(&drv);
	/* The bad device: used ring (flags, idx, ids, lens, avail_event). */
	n = MIN(left, 4 + 8ull * num + 2);
	memcpy(drv.used, p, n);
	for (i = 0; i < 2u * num + 2; i++) {
		if (vq_drv_get_used(&drv, &len))
			got++;
		else if (!vq_drv_has_used(&drv))
			break;
		if ((flags & 16) && (i & 3) == 0 && !vq_drv_enable_cb(&drv))
			vq_drv_disable_cb(&drv);
	}
	vq_drv_kick_prepare(&drv);
	if (drv.num_free > num)
		abort();
	/* The free list is intact: everything free can be added again. */
	n = drv.num_free;
	for (i = 0; i < n; i++)
		if (vq_drv_add(&drv, b, 1, NULL, 0, &toks[0]))
			abort();
	vq_drv_fini(&drv);
	(void)got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint16_t num, base, aidx, uidx;
	uint8_t flags;

	if (!ready) {
		if (setup())
			abort();
		ready = true;
	}
	if (size < 8)
		return 0;
	num = (uint16_t)(1u << (data[0] % 9));
	flags = data[1];
	base = get_le16(data + 2);
	aidx = get_le16(data + 4);
	uidx = get_le16(data + 6);
	data += 8;
	size -= 8;

	memset(view, 0, FILE_LEN);
	if (flags & 32) {
		driver_phase(num, flags, base, data, size);
		return 0;
	}
	{
		uint64_t used_off = ALIGN_UP(16ull * num + 6 + 2ull * num, 4096ull);
		uint16_t v;

		v = htole16(aidx);
		memcpy(view + 16ull * num + 2, &v, 2);
		v = htole16(uidx);
		memcpy(view + used_off + 2, &v, 2);
		memcpy(view + 16ull * num + 4 + 2ull * num, &v, 2); /* used_event */
	}
	device_phase(num, flags, base, data, size);
	return 0;
}
