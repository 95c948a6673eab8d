/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the split virtqueue, both sides (src/virtio/vq_dev.c and
 * vq_drv.c), talking through a memfd registered in a vhost_mem with identity
 * mapping: GPA == UVA == the test's (driver's) address of the memfd. The device
 * side reaches the same pages through its own mapping made by vhost_mem, so
 * the two views are distinct mappings as between two processes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../harness.h"
#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_mem.h"
#include "virtio/vq_dev.h"
#include "virtio/vq_drv.h"

#define FX_SIZE   (1u << 20)
#define IND_OFF   (32u << 10)  /* indirect tables */
#define DATA_OFF  (128u << 10) /* buffers */
#define PER_HEAD  8u

struct fx {
	int fd;
	uint8_t *h;           /* driver view; GPA == (uintptr_t)address */
	int fd2;              /* optional second region right after the first */
	uint8_t *h2;
	struct vhost_mem mem;
	struct vq_drv drv;
	struct vq_dev dev;
	uint16_t num;
};

static uint64_t gpa_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static uint64_t fx_gpa(const struct fx *f, size_t off)
{
	return gpa_of(f->h + off);
}

/* Set up both sides: ring of num entries, indexes starting at base. */
static int fx_init(struct fx *f, uint16_t num, bool event_idx, bool indirect, uint16_t base)
{
	void *desc, *avail, *used;

	memset(f, 0, sizeof(*f));
	f->fd2 = -1;
	f->num = num;
	vhost_mem_init(&f->mem);
	f->fd = memfd_create("test_virtq", MFD_CLOEXEC);
	if (f->fd < 0 || ftruncate(f->fd, FX_SIZE) < 0)
		return -1;
	f->h = mmap(NULL, FX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->h == MAP_FAILED)
		return -1;
	if (vhost_mem_add(&f->mem, gpa_of(f->h), FX_SIZE, gpa_of(f->h), 0, dup(f->fd)))
		return -1;
	if (vq_drv_init(&f->drv, f->h, num, event_idx))
		return -1;
	vq_drv_set_base(&f->drv, base);
	if (indirect)
		vq_drv_set_indirect(&f->drv, (struct vring_desc *)(f->h + IND_OFF),
				    fx_gpa(f, IND_OFF), PER_HEAD);

	/* What the back-end does on SET_VRING_ADDR: translate UVAs. */
	desc = vhost_mem_uva_to_host(&f->mem, gpa_of(vq_drv_desc(&f->drv)), vq_desc_size(num));
	avail = vhost_mem_uva_to_host(&f->mem, gpa_of(vq_drv_avail(&f->drv)), vq_avail_size(num));
	used = vhost_mem_uva_to_host(&f->mem, gpa_of(vq_drv_used(&f->drv)), vq_used_size(num));
	if (!desc || !avail || !used || desc == (void *)f->h)
		return -1;
	return vq_dev_init(&f->dev, &f->mem, num, desc, avail, used, base, event_idx, indirect);
}

/* A second region (another memfd) whose GPAs follow the first one's. */
static int fx_add_second(struct fx *f)
{
	f->fd2 = memfd_create("test_virtq2", MFD_CLOEXEC);
	if (f->fd2 < 0 || ftruncate(f->fd2, FX_SIZE) < 0)
		return -1;
	f->h2 = mmap(NULL, FX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd2, 0);
	if (f->h2 == MAP_FAILED)
		return -1;
	return vhost_mem_add(&f->mem, fx_gpa(f, FX_SIZE), FX_SIZE, 0x10000000, 0, dup(f->fd2));
}

static void fx_fini(struct fx *f)
{
	vq_drv_fini(&f->drv);
	vhost_mem_clear(&f->mem);
	if (f->h && f->h != MAP_FAILED)
		munmap(f->h, FX_SIZE);
	if (f->h2 && f->h2 != MAP_FAILED)
		munmap(f->h2, FX_SIZE);
	if (f->fd >= 0)
		close(f->fd);
	if (f->fd2 >= 0)
		close(f->fd2);
}

/* Write bytes at a GPA of either region, through the driver's view. */
static void gpa_write(struct fx *f, uint64_t gpa, const void *src, size_t len)
{
	const uint8_t *s = src;

	while (len--) {
		uint64_t off = gpa - fx_gpa(f, 0);

		if (off < FX_SIZE)
			f->h[off] = *s;
		else
			f->h2[off - FX_SIZE] = *s;
		gpa++;
		s++;
	}
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Raw descriptor / avail writes: play a driver (or a malicious one). */
static void raw_desc(struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

static void raw_post(struct fx *f, uint16_t head)
{
	f->drv.avail->ring[f->drv.avail_idx & (f->num - 1)] = htole16(head);
	f->drv.avail_idx++;
	__atomic_store_n(&f->drv.avail->idx, htole16(f->drv.avail_idx), __ATOMIC_RELEASE);
}

/* ---- basic exchange ------------------------------------------------------ */

static void roundtrip(bool event_idx, bool indirect)
{
	struct fx f;
	struct vq_elem e;
	uint8_t out[100], resp[150], got[100];
	struct vq_buf ob, ib;
	uint32_t len = 0;
	int tok = 1;

	REQUIRE(fx_init(&f, 16, event_idx, indirect, 0) == 0);
	ob.addr = fx_gpa(&f, DATA_OFF);
	ob.len = sizeof(out);
	ib.addr = fx_gpa(&f, DATA_OFF + 4096);
	ib.len = 200;
	pattern(out, sizeof(out), 1);
	memcpy(f.h + DATA_OFF, out, sizeof(out));

	if (indirect)
		CHECK_EQ(vq_drv_add_indirect(&f.drv, &ob, 1, &ib, 1, &tok), 0);
	else
		CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, &ib, 1, &tok), 0);
	CHECK_EQ(vq_drv_num_free(&f.drv), indirect ? 15 : 14);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 0); /* not published yet */
	CHECK(vq_drv_kick_prepare(&f.drv));
	CHECK_EQ(vq_dev_avail(&f.dev), 1);

	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 1);
	CHECK_EQ(e.in_num, 1);
	CHECK_EQ(e.out_len, 100);
	CHECK_EQ(e.in_len, 200);
	CHECK(e.iov[0].iov_base != (void *)(f.h + DATA_OFF)); /* device's own mapping */
	CHECK_EQ(vq_elem_read(&e, 0, got, sizeof(got)), 100);
	CHECK_MEM(got, out, sizeof(out));
	CHECK_EQ(vq_elem_read(&e, 90, got, sizeof(got)), 10);
	CHECK_MEM(got, out + 90, 10);
	pattern(resp, sizeof(resp), 2);
	CHECK_EQ(vq_elem_write(&e, 0, resp, sizeof(resp)), 150);
	CHECK_EQ(vq_elem_write(&e, 190, resp, sizeof(resp)), 10);
	vq_dev_push(&f.dev, e.head, 150);
	CHECK(vq_dev_should_notify(&f.dev));
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 0);

	CHECK(vq_drv_has_used(&f.drv));
	CHECK(vq_drv_get_used(&f.drv, &len) == &tok);
	CHECK_EQ(len, 150);
	CHECK_MEM(f.h + DATA_OFF + 4096, resp, 150);
	CHECK_MEM(f.h + DATA_OFF + 4096 + 190, resp, 10);
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	CHECK_EQ(vq_drv_num_free(&f.drv), 16);
	CHECK_EQ(f.dev.stats.popped, 1);
	CHECK_EQ(f.dev.stats.pushed, 1);
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

static void test_roundtrip(void)
{
	roundtrip(false, false);
	roundtrip(true, false);
	roundtrip(false, true);
	roundtrip(true, true);
}

/* ---- 16-bit index wrap-around -------------------------------------------- */

static void wrap(bool event_idx)
{
	enum { SLOT = 512 };
	static int toks[8];
	struct fx f;
	unsigned i, k, total = 0, bad = 0;

	REQUIRE(fx_init(&f, 8, event_idx, true, 65530) == 0);
	CHECK_EQ(f.dev.used_idx, 65530);
	for (i = 0; i < 40; i++) {
		unsigned batch = 1 + i % 4;
		struct vq_elem e;

		for (k = 0; k < batch; k++) {
			unsigned t = (total + k) % 8;
			struct vq_buf ob = { fx_gpa(&f, DATA_OFF + t * SLOT), 16 };
			struct vq_buf ib = { fx_gpa(&f, DATA_OFF + t * SLOT + 256), 16 };

			memset(f.h + DATA_OFF + t * SLOT, (int)(total + k), 16);
			toks[t] = (int)(total + k);
			if ((k & 1) ? vq_drv_add_indirect(&f.drv, &ob, 1, &ib, 1, &toks[t])
				    : vq_drv_add(&f.drv, &ob, 1, &ib, 1, &toks[t]))
				bad++;
		}
		vq_drv_kick_prepare(&f.drv);
		for (k = 0; k < batch; k++) {
			uint8_t b = 0;

			if (vq_dev_pop(&f.dev, &e) != 1) {
				bad++;
				continue;
			}
			vq_elem_read(&e, 0, &b, 1);
			if (b != (uint8_t)(total + k))
				bad++;
			vq_elem_write(&e, 0, &b, 1);
			vq_dev_fill(&f.dev, e.head, 1);
		}
		if (vq_dev_pop(&f.dev, &e) != 0)
			bad++;
		vq_dev_flush(&f.dev);
		vq_dev_should_notify(&f.dev);
		for (k = 0; k < batch; k++) {
			uint32_t len = 0;
			int *t = vq_drv_get_used(&f.drv, &len);

			if (!t || *t != (int)(total + k) || len != 1)
				bad++;
		}
		total += batch;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(total, 100);
	CHECK_EQ(f.dev.last_avail_idx, (uint16_t)(65530 + total));
	CHECK_EQ(f.dev.used_idx, (uint16_t)(65530 + total));
	CHECK_EQ(le16toh(f.drv.used->idx), (uint16_t)(65530 + total));
	CHECK_EQ(vq_drv_num_free(&f.drv), 8);
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

/* One exchange of n buffers (slot t for the t-th buffer ever posted, mod
 * the ring): posted, popped with heads in ring order, returned, reaped.
 * Returns the mismatches. */
static unsigned stable_exchange(struct fx *f, int *toks, unsigned num, unsigned slot,
				unsigned *total, unsigned n)
{
	struct vq_elem e[8];
	unsigned bad = 0;

	for (unsigned k = 0; k < n; k++) {
		unsigned t = (*total + k) % num;
		struct vq_buf ob = { fx_gpa(f, DATA_OFF + t * slot), 16 };

		toks[t] = (int)(*total + k);
		bad += vq_drv_add(&f->drv, &ob, 1, NULL, 0, &toks[t]) != 0;
	}
	vq_drv_kick_prepare(&f->drv);
	for (unsigned k = 0; k < n; k++) {
		if (vq_dev_pop(&f->dev, &e[k]) != 1)
			bad++;
		else if (e[k].head != (*total + k) % num)
			bad++; /* heads in ring order */
	}
	for (unsigned k = 0; k < n; k++)
		vq_dev_fill(&f->dev, e[k].head, 0);
	vq_dev_flush(&f->dev);
	for (unsigned k = 0; k < n; k++) {
		uint32_t len = 0;
		int *t = vq_drv_get_used(&f->drv, &len);

		if (!t || *t != (int)(*total + k))
			bad++;
	}
	*total += n;
	return bad;
}

/* Buffers returned in order come back as the next heads in ring order
 * (the free list is FIFO), and a ring word that keeps its value is not
 * written again: after the first lap, with the same buffers posted in the
 * same order, the descriptor table is read-only and the exchange goes on
 * (a write would fault), in batches of 1 to 8 and out of order once. */
static void test_stable_ring_words(void)
{
	enum { NUM = 256, SLOT = 64 };
	static int toks[NUM];
	struct fx f;
	unsigned total = 0, bad = 0;

	REQUIRE(fx_init(&f, NUM, true, false, 0) == 0);
	REQUIRE(((uintptr_t)f.drv.desc & 4095) == 0 && NUM * 16 == 4096);
	/* the first lap writes every descriptor once, in batches of 1 to 8 */
	while (total < NUM)
		bad += stable_exchange(&f, toks, NUM, SLOT, &total, MIN(1 + total % 8, NUM - total));
	REQUIRE(mprotect(f.drv.desc, 4096, PROT_READ) == 0);
	for (unsigned round = 0; total <= 2 * NUM; round++)
		bad += stable_exchange(&f, toks, NUM, SLOT, &total, 1 + round % 8);
	CHECK_EQ(bad, 0);
	CHECK(total > 2 * NUM);
	REQUIRE(mprotect(f.drv.desc, 4096, PROT_READ | PROT_WRITE) == 0);

	/* out of order: the heads come back in another order, and the next
	 * adds take them in that order (writing their descriptors again) */
	{
		struct vq_elem a, b;
		uint32_t len;
		int x = 1, y = 2;
		struct vq_buf ob = { fx_gpa(&f, DATA_OFF), 16 };

		REQUIRE(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &x) == 0);
		REQUIRE(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &y) == 0);
		vq_drv_kick_prepare(&f.drv);
		REQUIRE(vq_dev_pop(&f.dev, &a) == 1);
		REQUIRE(vq_dev_pop(&f.dev, &b) == 1);
		vq_dev_push(&f.dev, b.head, 0);
		vq_dev_push(&f.dev, a.head, 0);
		CHECK(vq_drv_get_used(&f.drv, &len) == &y);
		CHECK(vq_drv_get_used(&f.drv, &len) == &x);
		CHECK_EQ(vq_drv_num_free(&f.drv), NUM);
	}
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

static void test_wraparound(void)
{
	wrap(false);
	wrap(true);
}

/* ---- event index arithmetic ---------------------------------------------- */

static void test_need_event(void)
{
	static const struct {
		uint16_t event, new_idx, old;
		bool want;
	} cases[] = {
		{ 0, 1, 0, true },          /* first entry after event */
		{ 1, 1, 0, false },         /* event not reached */
		{ 0, 0, 0, false },         /* nothing new */
		{ 5, 10, 3, true },         /* event inside the batch */
		{ 9, 10, 3, true },         /* last entry of the batch */
		{ 10, 10, 3, false },       /* just after the batch */
		{ 2, 10, 3, false },        /* before the batch: already passed */
		{ 65535, 0, 65535, true },  /* wrap: event at 65535 */
		{ 65535, 1, 65534, true },
		{ 0, 1, 65535, true },      /* wrap: event at 0 */
		{ 0, 2, 65534, true },
		{ 1, 1, 65535, false },
		{ 65534, 2, 65535, false }, /* event just before old */
		{ 65533, 65533, 65532, false },
		{ 32768, 0, 32768, true },  /* batch of 32768 entries */
		{ 32767, 0, 32768, false },
		{ 65533, 65534, 65535, true }, /* old == new + 1: window of 65535 */
		{ 65534, 65534, 65535, false },
	};
	unsigned i, bad = 0;
	uint32_t s = 7;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		bool got = vq_need_event(cases[i].event, cases[i].new_idx, cases[i].old);

		if (got != cases[i].want) {
			printf("#   case %u: event %u new %u old %u -> %d\n", i,
			       cases[i].event, cases[i].new_idx, cases[i].old, got);
			bad++;
		}
	}
	/* Same answers as the definition "event in [old, new) mod 2^16". */
	for (i = 0; i < 200000; i++) {
		uint16_t ev, nw, od, span;
		bool in;

		s = s * 1103515245u + 12345u;
		ev = (uint16_t)(s >> 8);
		s = s * 1103515245u + 12345u;
		od = (uint16_t)(s >> 8);
		s = s * 1103515245u + 12345u;
		span = (uint16_t)((s >> 8) & ((i & 1) ? 0x7 : 0xffff));
		nw = (uint16_t)(od + span);
		if (i % 3 == 0)
			ev = (uint16_t)(od + ((s >> 4) & 0xf) - 4);
		in = (uint16_t)(ev - od) < span;
		if (vq_need_event(ev, nw, od) != in ||
		    vq_need_event(ev, nw, od) != !!vring_need_event(ev, nw, od))
			bad++;
	}
	CHECK_EQ(bad, 0);
}

/* ---- batching ------------------------------------------------------------ */

static void batch_flush(bool event_idx)
{
	struct fx f;
	struct vq_elem e[3];
	int toks[3];
	unsigned i;
	uint32_t len;

	REQUIRE(fx_init(&f, 8, event_idx, false, 100) == 0);
	for (i = 0; i < 3; i++) {
		struct vq_buf ib = { fx_gpa(&f, DATA_OFF + i * 64), 64 };

		CHECK_EQ(vq_drv_add(&f.drv, NULL, 0, &ib, 1, &toks[i]), 0);
	}
	CHECK(vq_drv_kick_prepare(&f.drv));
	for (i = 0; i < 3; i++)
		REQUIRE(vq_dev_pop(&f.dev, &e[i]) == 1);
	/* Complete out of order, fill without flush: nothing visible. */
	vq_dev_fill(&f.dev, e[2].head, 3);
	vq_dev_fill(&f.dev, e[0].head, 1);
	CHECK(!vq_drv_has_used(&f.drv));
	CHECK_EQ(le16toh(f.drv.used->idx), 100);
	CHECK(!vq_dev_should_notify(&f.dev)); /* nothing published */
	vq_dev_fill(&f.dev, e[1].head, 2);
	vq_dev_flush(&f.dev);
	CHECK_EQ(le16toh(f.drv.used->idx), 103);
	CHECK(vq_dev_should_notify(&f.dev));
	CHECK(!vq_dev_should_notify(&f.dev)); /* asked once per publication */
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[2] && len == 3);
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[0] && len == 1);
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[1] && len == 2);
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	vq_dev_flush(&f.dev); /* empty flush: no change */
	CHECK_EQ(le16toh(f.drv.used->idx), 103);
	CHECK(!vq_dev_should_notify(&f.dev));
	fx_fini(&f);
}

static void test_batch_flush(void)
{
	batch_flush(false);
	batch_flush(true);
}

/* ---- notification suppression -------------------------------------------- */

/* n device-writable buffers of 64 bytes (tokens toks[i]) published by the
 * driver and taken by the device into e[]. False if any step failed. */
static bool fx_in_flight(struct fx *f, struct vq_elem *e, int *toks, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct vq_buf ib = { fx_gpa(f, DATA_OFF + i * 64), 64 };

		if (vq_drv_add(&f->drv, NULL, 0, &ib, 1, &toks[i]) != 0)
			return false;
	}
	vq_drv_kick_prepare(&f->drv);
	for (unsigned i = 0; i < n; i++)
		if (vq_dev_pop(&f->dev, &e[i]) != 1)
			return false;
	return true;
}

/* Device -> driver interrupts. */
static void notify_dev_to_drv(bool event_idx)
{
	struct fx f;
	struct vq_elem e[6];
	int toks[6];
	uint32_t len;

	REQUIRE(fx_init(&f, 8, event_idx, false, 65534) == 0);
	REQUIRE(fx_in_flight(&f, e, toks, 6));

	vq_dev_push(&f.dev, e[0].head, 0);
	CHECK(vq_dev_should_notify(&f.dev));
	vq_dev_push(&f.dev, e[1].head, 0);
	/* event idx: the driver has not consumed the first one, so it
	 * has not asked again; flags: interrupts stay on. */
	CHECK_EQ(vq_dev_should_notify(&f.dev), !event_idx);
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[0]);
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[1]);
	vq_dev_push(&f.dev, e[2].head, 0);
	CHECK(vq_dev_should_notify(&f.dev));
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[2]);

	/* Driver polls: callbacks off => never an interrupt, also for the
	 * entry it would have asked for had it kept them on. */
	vq_drv_disable_cb(&f.drv);
	vq_dev_push(&f.dev, e[3].head, 0);
	CHECK(!vq_dev_should_notify(&f.dev));
	vq_dev_push(&f.dev, e[4].head, 0);
	CHECK(!vq_dev_should_notify(&f.dev));
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[3]);
	vq_dev_push(&f.dev, e[5].head, 0);
	CHECK(!vq_dev_should_notify(&f.dev));

	/* Re-enabling with entries pending reports the race. */
	CHECK(!vq_drv_enable_cb(&f.drv));
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[4]);
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[5]);
	CHECK(vq_drv_enable_cb(&f.drv));

	/* And interrupts come back. */
	{
		struct vq_buf ib = { fx_gpa(&f, DATA_OFF), 64 };

		CHECK_EQ(vq_drv_add(&f.drv, NULL, 0, &ib, 1, &toks[0]), 0);
		vq_drv_kick_prepare(&f.drv);
		REQUIRE(vq_dev_pop(&f.dev, &e[0]) == 1);
		vq_dev_push(&f.dev, e[0].head, 0);
		CHECK(vq_dev_should_notify(&f.dev));
		CHECK(vq_drv_get_used(&f.drv, &len) == &toks[0]);
	}
	CHECK_EQ(f.dev.stats.notified, event_idx ? 3 : 4);
	CHECK_EQ(f.dev.stats.suppressed, event_idx ? 4 : 3);
	fx_fini(&f);
}

/* A delayed interrupt (vq_drv_enable_cb_after): with event index, none
 * until the n-th entry is used; without, interrupts are simply on. */
static void notify_after_n(bool event_idx)
{
	struct fx f;
	struct vq_elem e[8];
	int toks[8];
	uint32_t len;
	unsigned i;

	REQUIRE(fx_init(&f, 8, event_idx, false, 65534) == 0);
	REQUIRE(fx_in_flight(&f, e, toks, 8));
	CHECK_EQ(vq_drv_in_flight(&f.drv), 8);
	vq_drv_disable_cb(&f.drv);

	CHECK(vq_drv_enable_cb_after(&f.drv, 6));
	for (i = 0; i < 5; i++) {
		vq_dev_push(&f.dev, e[i].head, 0);
		CHECK_EQ(vq_dev_should_notify(&f.dev), !event_idx);
	}
	vq_dev_push(&f.dev, e[5].head, 0);
	CHECK(vq_dev_should_notify(&f.dev));
	for (i = 0; i < 6; i++)
		CHECK(vq_drv_get_used(&f.drv, &len) == &toks[i]);
	CHECK_EQ(vq_drv_in_flight(&f.drv), 2);

	/* Enough used already: reported as a race (look again), whatever n. */
	vq_drv_disable_cb(&f.drv);
	vq_dev_push(&f.dev, e[6].head, 0);
	CHECK(!vq_drv_enable_cb_after(&f.drv, 1));
	CHECK_EQ(vq_drv_enable_cb_after(&f.drv, 2), event_idx);
	CHECK(!vq_drv_enable_cb_after(&f.drv, 0)); /* 0 counts as 1 */
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[6]);
	CHECK(vq_drv_enable_cb_after(&f.drv, 1));
	vq_dev_push(&f.dev, e[7].head, 0);
	CHECK(vq_dev_should_notify(&f.dev));
	CHECK(vq_drv_get_used(&f.drv, &len) == &toks[7]);
	CHECK_EQ(vq_drv_in_flight(&f.drv), 0);
	fx_fini(&f);
}

static void test_notify_after_n(void)
{
	notify_after_n(false);
	notify_after_n(true);
}

/* Driver -> device kicks. */
static void notify_drv_to_dev(bool event_idx)
{
	struct fx f;
	struct vq_elem e;
	int tok = 0;
	unsigned i;
	uint32_t len;
	struct vq_buf ob;

	REQUIRE(fx_init(&f, 8, event_idx, false, 65533) == 0);
	ob.addr = fx_gpa(&f, DATA_OFF);
	ob.len = 8;

	CHECK(!vq_drv_kick_prepare(&f.drv)); /* nothing added: no kick */
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	CHECK(vq_drv_kick_prepare(&f.drv));
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	/* event idx: the device has not caught up, no need to kick again. */
	CHECK_EQ(vq_drv_kick_prepare(&f.drv), !event_idx);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 1);
	vq_dev_push(&f.dev, e.head, 0);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 1);
	vq_dev_push(&f.dev, e.head, 0);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 0); /* empty: re-armed */
	CHECK(vq_drv_get_used(&f.drv, &len) == &tok);
	CHECK(vq_drv_get_used(&f.drv, &len) == &tok);
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	CHECK(vq_drv_kick_prepare(&f.drv));

	/* Device polls: never a kick, however many adds. */
	vq_dev_set_notify(&f.dev, false);
	for (i = 0; i < 20; i++) {
		CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
		CHECK(!vq_drv_kick_prepare(&f.drv));
		while (vq_dev_pop(&f.dev, &e) == 1)
			vq_dev_push(&f.dev, e.head, 0);
		while (vq_drv_get_used(&f.drv, &len))
			;
	}
	/* Back to interrupt mode: the caller re-checks, then sleeps. */
	vq_dev_set_notify(&f.dev, true);
	CHECK_EQ(vq_dev_avail(&f.dev), 0);
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	CHECK(vq_drv_kick_prepare(&f.drv));
	CHECK_EQ(vq_dev_avail(&f.dev), 1);

	/* Polling entered with the ring drained: still no kick. */
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 1);
	vq_dev_push(&f.dev, e.head, 0);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 0);
	while (vq_drv_get_used(&f.drv, &len))
		;
	vq_dev_set_notify(&f.dev, false);
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	CHECK(!vq_drv_kick_prepare(&f.drv));
	vq_dev_set_notify(&f.dev, true);
	CHECK_EQ(vq_dev_avail(&f.dev), 1);

	/* Enabling with work pending: the re-check sees it (and no kick was
	 * needed for it). */
	vq_dev_set_notify(&f.dev, false);
	CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
	CHECK(!vq_drv_kick_prepare(&f.drv));
	vq_dev_set_notify(&f.dev, true);
	CHECK_EQ(vq_dev_avail(&f.dev), 2);
	CHECK_EQ(f.dev.last_avail_idx + 2, le16toh(f.drv.avail->idx));
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

/*
 * The device publishes 2^16 + 4 entries without asking whether to notify
 * (e.g. a caller that only notifies at the end of a long burst), while the
 * driver consumes all but the last few and then waits for used index 65534.
 * Modulo 2^16 the burst looks like 4 entries that do not reach 65534; the
 * device must still notify.
 */
static void test_notify_after_2_16(void)
{
	struct fx f;
	struct vq_elem e;
	struct vq_buf ob;
	unsigned i, bad = 0;
	uint32_t len;
	int tok;

	REQUIRE(fx_init(&f, 8, true, false, 0) == 0);
	ob.addr = fx_gpa(&f, DATA_OFF);
	ob.len = 8;
	for (i = 0; i < 65534; i++) {
		if (vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok) || (vq_drv_kick_prepare(&f.drv), 0) ||
		    vq_dev_pop(&f.dev, &e) != 1)
			bad++;
		vq_dev_push(&f.dev, e.head, 0);
		if (vq_drv_get_used(&f.drv, &len) != &tok)
			bad++;
	}
	CHECK_EQ(bad, 0);
	CHECK(vq_drv_enable_cb(&f.drv)); /* waits for entry 65534 */
	for (i = 0; i < 6; i++) {
		CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
		vq_drv_kick_prepare(&f.drv);
		REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
		vq_dev_push(&f.dev, e.head, 0);
	}
	CHECK_EQ(f.dev.used_idx, 4);
	CHECK(vq_dev_should_notify(&f.dev));
	fx_fini(&f);
}

static void test_notify_suppression(void)
{
	notify_dev_to_drv(false);
	notify_dev_to_drv(true);
	notify_drv_to_dev(false);
	notify_drv_to_dev(true);
}

/* ---- indirect and region boundaries -------------------------------------- */

static void test_indirect(void)
{
	struct fx f;
	struct vq_elem e;
	struct vq_buf ob[3], ib[2];
	uint8_t want[300], got[300];
	uint32_t len;
	unsigned i;
	int tok;

	REQUIRE(fx_init(&f, 4, true, true, 0) == 0);
	for (i = 0; i < 3; i++) {
		ob[i].addr = fx_gpa(&f, DATA_OFF + i * 1000);
		ob[i].len = 100;
		pattern(f.h + DATA_OFF + i * 1000, 100, i);
		pattern(want + i * 100, 100, i);
	}
	ib[0].addr = fx_gpa(&f, DATA_OFF + 8192);
	ib[0].len = 10;
	ib[1].addr = fx_gpa(&f, DATA_OFF + 9000);
	ib[1].len = 20;
	CHECK_EQ(vq_drv_add_indirect(&f.drv, ob, 3, ib, 2, &tok), 0);
	CHECK(vq_drv_kick_prepare(&f.drv));
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 3);
	CHECK_EQ(e.in_num, 2);
	CHECK_EQ(e.out_len, 300);
	CHECK_EQ(e.in_len, 30);
	CHECK_EQ(vq_elem_read(&e, 0, got, sizeof(got)), 300);
	CHECK_MEM(got, want, 300);
	CHECK_EQ(vq_elem_write(&e, 5, want, 25), 25);
	vq_dev_push(&f.dev, e.head, 30);
	CHECK(vq_drv_get_used(&f.drv, &len) == &tok && len == 30);
	CHECK_MEM(f.h + DATA_OFF + 8192 + 5, want, 5);
	CHECK_MEM(f.h + DATA_OFF + 9000, want + 5, 20);

	/* Limits of the driver side. */
	{
		struct vq_buf many[PER_HEAD + 1];

		memset(many, 0, sizeof(many));
		CHECK_EQ(vq_drv_add_indirect(&f.drv, many, PER_HEAD + 1, NULL, 0, &tok), -EINVAL);
		CHECK_EQ(vq_drv_add_indirect(&f.drv, many, PER_HEAD, ib, 1, &tok), -EINVAL);
		CHECK_EQ(vq_drv_add_indirect(&f.drv, NULL, 0, NULL, 0, &tok), -EINVAL);
	}

	/* Direct descriptors, then an indirect one at the end of the chain. */
	{
		struct vring_desc *t = (struct vring_desc *)(f.h + IND_OFF + 4096);

		raw_desc(&f.drv.desc[2], fx_gpa(&f, DATA_OFF), 100, VRING_DESC_F_NEXT, 3);
		raw_desc(&f.drv.desc[3], gpa_of(t), 32, VRING_DESC_F_INDIRECT, 0);
		raw_desc(&t[0], fx_gpa(&f, DATA_OFF + 1000), 100, VRING_DESC_F_NEXT, 1);
		raw_desc(&t[1], fx_gpa(&f, DATA_OFF + 8192), 10, VRING_DESC_F_WRITE, 0);
		raw_post(&f, 2);
		REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
		CHECK_EQ(e.head, 2);
		CHECK_EQ(e.out_num, 2);
		CHECK_EQ(e.in_num, 1);
		CHECK_EQ(vq_elem_read(&e, 0, got, 200), 200);
		CHECK_MEM(got, want, 200);
	}
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

/* ---- prefetch hints -------------------------------------------------------- */

/* vq_dev_peek: the first buffer of a published direct chain, NULL for what
 * the last avail->idx read did not publish, for indirect and device-writable
 * first descriptors, a head out of range and a buffer outside memory; it
 * consumes nothing and never breaks the queue. */
static void test_peek(void)
{
	struct fx f;
	struct vq_elem e;
	struct vq_buf ob[2] = { { 0, 100 }, { 0, 8 } }, ib = { 0, 16 };
	uint32_t len = 0;
	int tok[4];

	REQUIRE(fx_init(&f, 8, true, true, 65534) == 0);
	ob[0].addr = fx_gpa(&f, DATA_OFF);
	ob[1].addr = fx_gpa(&f, DATA_OFF + 4096);
	ib.addr = fx_gpa(&f, DATA_OFF + 8192);
	CHECK(vq_dev_peek(&f.dev, 0, &len) == NULL); /* nothing read yet */
	CHECK_EQ(vq_drv_add(&f.drv, ob, 2, &ib, 1, &tok[0]), 0);
	CHECK_EQ(vq_drv_add_indirect(&f.drv, ob, 1, NULL, 0, &tok[1]), 0);
	CHECK_EQ(vq_drv_add(&f.drv, NULL, 0, &ib, 1, &tok[2]), 0);
	CHECK_EQ(vq_drv_add(&f.drv, &ob[1], 1, NULL, 0, &tok[3]), 0);
	vq_drv_kick_prepare(&f.drv);
	/* Published but not read: still nothing (the index is not re-read). */
	CHECK(vq_dev_peek(&f.dev, 0, &len) == NULL);
	CHECK_EQ(vq_dev_avail(&f.dev), 4);
	CHECK(vq_dev_peek(&f.dev, 0, &len) == f.dev.mem->regions[0]->host + DATA_OFF);
	CHECK_EQ(len, 100);
	CHECK(vq_dev_peek(&f.dev, 1, &len) == NULL);  /* indirect */
	CHECK(vq_dev_peek(&f.dev, 2, &len) == NULL);  /* device-writable */
	CHECK(vq_dev_peek(&f.dev, 3, &len) == f.dev.mem->regions[0]->host + DATA_OFF + 4096);
	CHECK_EQ(len, 8);
	CHECK(vq_dev_peek(&f.dev, 4, &len) == NULL);  /* not published */
	CHECK(vq_dev_peek(&f.dev, 60000, &len) == NULL);
	vq_dev_prefetch_desc(&f.dev, 0);
	vq_dev_prefetch_desc(&f.dev, 4);
	CHECK_EQ(f.dev.last_avail_idx, 65534);
	CHECK_EQ(f.dev.stats.popped, 0);
	/* Peeking consumed nothing: the pops see the same chains. */
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_len, 108);
	CHECK(vq_dev_peek(&f.dev, 2, &len) == f.dev.mem->regions[0]->host + DATA_OFF + 4096);
	CHECK(vq_dev_peek(&f.dev, 3, &len) == NULL);
	/* A head out of range or a buffer outside memory: no hint, no damage
	 * (the pop then reports the violation). */
	{
		uint16_t at = (uint16_t)(f.dev.last_avail_idx + 2) & 7;
		uint16_t head = le16toh(f.drv.avail->ring[at]);

		f.drv.avail->ring[at] = htole16(200);
		CHECK(vq_dev_peek(&f.dev, 2, &len) == NULL);
		vq_dev_prefetch_desc(&f.dev, 2);
		f.drv.avail->ring[at] = htole16(head);
		raw_desc(&f.drv.desc[head], 0x10, 8, 0, 0);
		CHECK(vq_dev_peek(&f.dev, 2, &len) == NULL);
		CHECK(!f.dev.broken);
	}
	fx_fini(&f);
}

static void test_region_boundaries(void)
{
	struct fx f;
	struct vq_elem e;
	uint8_t want[64], got[64];
	struct vring_desc tbl[4];
	uint64_t b = 0, tgpa;

	REQUIRE(fx_init(&f, 8, false, true, 0) == 0);
	REQUIRE(fx_add_second(&f) == 0);
	b = fx_gpa(&f, FX_SIZE); /* first GPA of the second region */
	pattern(want, sizeof(want), 9);
	gpa_write(&f, b - 10, want, 30);

	/* A direct buffer over the boundary: two iovecs, bytes in order. */
	raw_desc(&f.drv.desc[0], b - 10, 30, VRING_DESC_F_NEXT, 1);
	raw_desc(&f.drv.desc[1], b - 3, 6, VRING_DESC_F_WRITE, 0);
	raw_post(&f, 0);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 2);
	CHECK_EQ(e.in_num, 2);
	CHECK_EQ(e.iov[0].iov_len, 10);
	CHECK_EQ(e.iov[1].iov_len, 20);
	CHECK_EQ(vq_elem_read(&e, 0, got, 64), 30);
	CHECK_MEM(got, want, 30);
	CHECK_EQ(vq_elem_write(&e, 0, "ABCDEF", 6), 6);
	CHECK_MEM(f.h + FX_SIZE - 3, "ABC", 3);
	CHECK_MEM(f.h2, "DEF", 3);
	vq_dev_push(&f.dev, e.head, 6);

	/* An indirect table over the boundary, not 16-byte aligned: its
	 * third descriptor is split 8 / 8 between the regions. */
	tgpa = b - 40;
	raw_desc(&tbl[0], b - 10, 10, VRING_DESC_F_NEXT, 1);
	raw_desc(&tbl[1], b, 10, VRING_DESC_F_NEXT, 2);
	raw_desc(&tbl[2], b + 10, 10, VRING_DESC_F_NEXT, 3);
	raw_desc(&tbl[3], b + 100, 4, VRING_DESC_F_WRITE, 0);
	gpa_write(&f, tgpa, tbl, sizeof(tbl));
	raw_desc(&f.drv.desc[2], tgpa, sizeof(tbl), VRING_DESC_F_INDIRECT, 0);
	raw_post(&f, 2);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 3);
	CHECK_EQ(e.in_num, 1);
	CHECK_EQ(e.out_len, 30);
	CHECK_EQ(vq_elem_read(&e, 0, got, 64), 30);
	/* tbl[0..2] read b-10..b+20 minus what the table itself overwrote. */
	{
		uint8_t cur[30];

		memcpy(cur, f.h + FX_SIZE - 10, 10);
		memcpy(cur + 10, f.h2, 20);
		CHECK_MEM(got, cur, 30);
	}
	CHECK(!f.dev.broken);

	/* A buffer running past the second region's end is refused. */
	raw_desc(&f.drv.desc[4], b + FX_SIZE - 4, 8, 0, 0);
	raw_post(&f, 4);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), -EIO);
	CHECK(f.dev.broken);
	fx_fini(&f);
}

/* Pops translate through the region of the last buffer (vq_dev_xlate): a
 * buffer elsewhere, one running past that region, and one in a region
 * replaced at the same GPAs (other memory) still read the right bytes. */
static void test_region_hint(void)
{
	struct fx f;
	struct vq_elem e;
	uint8_t got[64];
	uint64_t b;
	int fd3;
	uint8_t *h3;
	struct vhost_mem_region *old;

	REQUIRE(fx_init(&f, 8, false, false, 0) == 0);
	REQUIRE(fx_add_second(&f) == 0);
	b = fx_gpa(&f, FX_SIZE);
	memcpy(f.h2 + 100, "second", 6);
	memcpy(f.h + DATA_OFF, "first!", 6);
	memcpy(f.h + FX_SIZE - 3, "abc", 3);
	memcpy(f.h2, "def", 3);

	raw_desc(&f.drv.desc[0], b + 100, 6, 0, 0);
	raw_post(&f, 0);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(vq_elem_read(&e, 0, got, 6), 6);
	CHECK_MEM(got, "second", 6);
	vq_dev_push(&f.dev, e.head, 0);

	raw_desc(&f.drv.desc[1], fx_gpa(&f, DATA_OFF), 6, 0, 0);
	raw_post(&f, 1);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(vq_elem_read(&e, 0, got, 6), 6);
	CHECK_MEM(got, "first!", 6);
	vq_dev_push(&f.dev, e.head, 0);

	/* from the hinted (first) region into the second: two pieces */
	raw_desc(&f.drv.desc[2], b - 3, 6, 0, 0);
	raw_post(&f, 2);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 2);
	CHECK_EQ(vq_elem_read(&e, 0, got, 6), 6);
	CHECK_MEM(got, "abcdef", 6);
	vq_dev_push(&f.dev, e.head, 0);

	/* the second region replaced by other memory at the same GPAs; the old
	 * one held (still mapped, its bytes "second"), as a ring or MR would */
	raw_desc(&f.drv.desc[3], b + 100, 6, 0, 0);
	raw_post(&f, 3);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1); /* hint: the second region */
	vq_dev_push(&f.dev, e.head, 0);
	old = vhost_mem_find(&f.mem, b);
	REQUIRE(old);
	vhost_mem_region_get(old);
	fd3 = memfd_create("test_virtq3", MFD_CLOEXEC);
	REQUIRE(fd3 >= 0 && ftruncate(fd3, FX_SIZE) == 0);
	h3 = mmap(NULL, FX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd3, 0);
	REQUIRE(h3 != MAP_FAILED);
	memcpy(h3 + 100, "third!", 6);
	REQUIRE(vhost_mem_remove(&f.mem, b, FX_SIZE, 0x10000000) == 0);
	REQUIRE(vhost_mem_add(&f.mem, b, FX_SIZE, 0x20000000, 0, dup(fd3)) == 0);
	REQUIRE(vhost_mem_find(&f.mem, b) != old);
	raw_desc(&f.drv.desc[4], b + 100, 6, 0, 0);
	raw_desc(&f.drv.desc[5], b + 100, 6, 0, 0);
	raw_post(&f, 4);
	raw_post(&f, 5);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(vq_elem_read(&e, 0, got, 6), 6);
	CHECK_MEM(got, "third!", 6);
	vq_dev_push(&f.dev, e.head, 0);
	/* peek through the hint: the new region too */
	{
		uint32_t plen = 0;
		const uint8_t *pk = vq_dev_peek(&f.dev, 0, &plen);

		REQUIRE(pk);
		CHECK_EQ(plen, 6);
		CHECK_MEM(pk, "third!", 6);
	}
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	vq_dev_push(&f.dev, e.head, 0);
	CHECK(!f.dev.broken);
	vhost_mem_region_put(old);
	fx_fini(&f);
	munmap(h3, FX_SIZE);
	close(fd3);
}

/* A chain exactly as long as the ring is fine; zero-length buffers give no
 * iovec. */
static void test_long_chain(void)
{
	struct fx f;
	struct vq_elem e;
	unsigned i;

	REQUIRE(fx_init(&f, 8, false, false, 0) == 0);
	for (i = 0; i < 8; i++)
		raw_desc(&f.drv.desc[(i * 3) & 7], fx_gpa(&f, DATA_OFF + i * 16),
			 i == 7 ? 0 : 16, (i < 7 ? VRING_DESC_F_NEXT : 0) |
			 (i >= 4 ? VRING_DESC_F_WRITE : 0), ((i + 1) * 3) & 7);
	raw_post(&f, 0);
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(e.out_num, 4);
	CHECK_EQ(e.in_num, 3);
	CHECK_EQ(e.out_len, 64);
	CHECK_EQ(e.in_len, 48);
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

/* ---- violations ---------------------------------------------------------- */

struct violation {
	const char *name;
	bool indirect;                 /* negotiate VIRTIO_RING_F_INDIRECT_DESC */
	void (*setup)(struct fx *f);   /* write the bad rings */
	const char *why;               /* part of the reason we expect */
};

static struct vring_desc *ind_tbl(struct fx *f)
{
	return (struct vring_desc *)(f->h + IND_OFF);
}

static void v_avail_ahead(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8, 0, 0);
	f->drv.avail_idx = (uint16_t)(f->drv.avail_idx + f->num);
	raw_post(f, 0); /* num + 1 ahead */
}

static void v_avail_backwards(struct fx *f)
{
	f->drv.avail_idx--;
	__atomic_store_n(&f->drv.avail->idx, htole16(f->drv.avail_idx), __ATOMIC_RELEASE);
}

static void v_head_range(struct fx *f)
{
	raw_post(f, f->num);
}

static void v_next_range(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, f->num);
	raw_post(f, 0);
}

static void v_loop(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 0);
	raw_post(f, 0);
}

static void v_self_loop(struct fx *f)
{
	raw_desc(&f->drv.desc[3], fx_gpa(f, DATA_OFF), 0, VRING_DESC_F_NEXT, 3);
	raw_post(f, 3);
}

static void v_indirect_loop(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 1);
	raw_desc(&ind_tbl(f)[1], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 32, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_indirect_next_range(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 2);
	raw_desc(&ind_tbl(f)[2], fx_gpa(f, DATA_OFF), 8, 0, 0); /* outside its len */
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 32, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_indirect(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 16, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_indirect_len(struct fx *f, uint32_t len)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), len, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_indirect_len24(struct fx *f) { v_indirect_len(f, 24); }
static void v_indirect_len0(struct fx *f) { v_indirect_len(f, 0); }
static void v_indirect_huge(struct fx *f) { v_indirect_len(f, 32769 * 16); }

static void v_indirect_nested(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, IND_OFF + 1024), 16, VRING_DESC_F_INDIRECT, 0);
	raw_desc(&ind_tbl(f)[64], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 16, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_indirect_with_next(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 16,
		 VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_post(f, 0);
}

static void v_indirect_outside(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, FX_SIZE - 16), 32, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_read_after_write(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_post(f, 0);
}

static void v_read_after_write_indirect(struct fx *f)
{
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 1);
	raw_desc(&ind_tbl(f)[1], fx_gpa(f, DATA_OFF), 8,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	raw_desc(&ind_tbl(f)[2], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), 48, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_write_then_indirect_read(struct fx *f)
{
	/* Writable direct descriptor, then an indirect table starting with a
	 * readable one. */
	raw_desc(&ind_tbl(f)[0], fx_gpa(f, DATA_OFF), 8, 0, 0);
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], fx_gpa(f, IND_OFF), 16, VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

static void v_buf_outside(struct fx *f)
{
	raw_desc(&f->drv.desc[0], 0x1000, 8, 0, 0);
	raw_post(f, 0);
}

static void v_buf_past_end(struct fx *f)
{
	raw_desc(&f->drv.desc[0], fx_gpa(f, DATA_OFF), 8, VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], fx_gpa(f, FX_SIZE - 10), 11, VRING_DESC_F_WRITE, 0);
	raw_post(f, 0);
}

static void v_buf_wraps(struct fx *f)
{
	raw_desc(&f->drv.desc[0], UINT64_MAX - 3, 8, 0, 0);
	raw_post(f, 0);
}

static void v_too_many_iov(struct fx *f)
{
	unsigned i;

	for (i = 0; i < VQ_MAX_IOV + 1; i++)
		raw_desc(&ind_tbl(f)[i], fx_gpa(f, DATA_OFF + i * 4), 4,
			 i < VQ_MAX_IOV ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	raw_desc(&f->drv.desc[0], fx_gpa(f, IND_OFF), (VQ_MAX_IOV + 1) * 16,
		 VRING_DESC_F_INDIRECT, 0);
	raw_post(f, 0);
}

/* A sparse 5 GiB region (never touched: only address space), so that
 * lengths can add up past 4 GiB with every buffer inside shared memory. */
#define BIG_GPA 0x100000000000ull
#define BIG_SIZE (5ull << 30)

static void add_big_region(struct fx *f)
{
	int fd = memfd_create("test_virtq_big", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)BIG_SIZE) < 0 ||
	    vhost_mem_add(&f->mem, BIG_GPA, BIG_SIZE, BIG_GPA, 0, fd) != 0)
		printf("#   cannot add the big region\n");
}

static void v_out_len_overflow(struct fx *f)
{
	add_big_region(f);
	raw_desc(&f->drv.desc[0], BIG_GPA, 0xc0000000u, VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], BIG_GPA, 0x40000000u, 0, 0); /* exactly 2^32 */
	raw_post(f, 0);
}

static void v_in_len_overflow(struct fx *f)
{
	add_big_region(f);
	raw_desc(&f->drv.desc[0], BIG_GPA, 0xffffffffu,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	raw_desc(&f->drv.desc[1], BIG_GPA, 1, VRING_DESC_F_WRITE, 0);
	raw_post(f, 0);
}

static const struct violation violations[] = {
	{ "avail idx more than num ahead", false, v_avail_ahead, "ahead" },
	{ "avail idx moved backwards", false, v_avail_backwards, "ahead" },
	{ "head >= num", false, v_head_range, "head index" },
	{ "next >= num", false, v_next_range, "next index" },
	{ "loop", false, v_loop, "loop" },
	{ "self loop", false, v_self_loop, "loop" },
	{ "loop in indirect table", true, v_indirect_loop, "loop" },
	{ "next beyond indirect table", true, v_indirect_next_range, "next index" },
	{ "indirect not negotiated", false, v_indirect, "without VIRTIO_RING_F_INDIRECT" },
	{ "indirect len 24", true, v_indirect_len24, "table length" },
	{ "indirect len 0", true, v_indirect_len0, "table length" },
	{ "indirect 32769 entries", true, v_indirect_huge, "table length" },
	{ "nested indirect", true, v_indirect_nested, "nested" },
	{ "indirect with next", true, v_indirect_with_next, "with NEXT" },
	{ "indirect table outside memory", true, v_indirect_outside, "table outside" },
	{ "readable after writable", false, v_read_after_write, "after a device-writable" },
	{ "readable after writable (indirect)", true, v_read_after_write_indirect, "after a device-writable" },
	{ "readable indirect after writable", true, v_write_then_indirect_read, "after a device-writable" },
	{ "buffer outside memory", false, v_buf_outside, "buffer outside" },
	{ "buffer past region end", false, v_buf_past_end, "buffer outside" },
	{ "buffer address wraps", false, v_buf_wraps, "buffer outside" },
	{ "too many iovecs", true, v_too_many_iov, "too many iovecs" },
	{ "readable length overflow", false, v_out_len_overflow, "readable length" },
	{ "writable length overflow", false, v_in_len_overflow, "writable length" },
};

static void test_violations(void)
{
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(violations); i++) {
		const struct violation *v = &violations[i];
		struct vhost_mem_region *r;
		struct vq_elem e;
		struct fx f;
		uint16_t used_before;
		int rc, tok = 0;
		struct vq_buf ob;

		REQUIRE(fx_init(&f, 8, i & 1, v->indirect, (uint16_t)(65535 - i)) == 0);
		/* One good element first: it must come out fine. */
		ob.addr = fx_gpa(&f, DATA_OFF);
		ob.len = 8;
		CHECK_EQ(vq_drv_add(&f.drv, &ob, 1, NULL, 0, &tok), 0);
		vq_drv_kick_prepare(&f.drv);
		CHECK_EQ(vq_dev_pop(&f.dev, &e), 1);
		vq_dev_push(&f.dev, e.head, 0);
		vq_dev_should_notify(&f.dev);

		v->setup(&f);
		rc = vq_dev_pop(&f.dev, &e);
		if (rc != -EIO || !f.dev.broken || !f.dev.error || f.dev.stats.errors != 1 ||
		    !strstr(f.dev.error, v->why)) {
			printf("#   violation '%s' not detected as such (rc %d, %s)\n", v->name,
			       rc, f.dev.error ? f.dev.error : "not broken");
			th_failed_checks++;
		}
		/* Sticky, and no further ring access: make the device's view of
		 * all driver memory inaccessible and go through every entry
		 * point. A touch would kill the test with SIGSEGV. */
		used_before = le16toh(f.drv.used->idx);
		raw_desc(&f.drv.desc[5], fx_gpa(&f, DATA_OFF), 8, 0, 0);
		raw_post(&f, 5);
		r = vhost_mem_find(&f.mem, fx_gpa(&f, 0));
		REQUIRE(r != NULL);
		REQUIRE(mprotect(r->map_base, r->map_len, PROT_NONE) == 0);
		CHECK_EQ(vq_dev_pop(&f.dev, &e), -EIO);
		CHECK_EQ(vq_dev_avail(&f.dev), 0);
		vq_dev_unpop(&f.dev);
		vq_dev_fill(&f.dev, 0, 1);
		vq_dev_flush(&f.dev);
		vq_dev_push(&f.dev, 0, 1);
		CHECK(!vq_dev_should_notify(&f.dev));
		vq_dev_set_notify(&f.dev, true);
		vq_dev_set_notify(&f.dev, false);
		vq_dev_set_broken(&f.dev, "again");
		CHECK_EQ(vq_dev_pop(&f.dev, &e), -EIO);
		REQUIRE(mprotect(r->map_base, r->map_len, PROT_READ | PROT_WRITE) == 0);
		CHECK_EQ(le16toh(f.drv.used->idx), used_before);
		CHECK_EQ(f.dev.stats.errors, 1);
		CHECK(strcmp(f.dev.error, "again") != 0);
		fx_fini(&f);
	}
}

/* ---- a bad device, seen by the driver ------------------------------------ */

static void test_bad_used_ids(void)
{
	struct fx f;
	struct vq_buf b[3];
	int t1, t2, tok;
	uint32_t len;
	unsigned i, n;
	uint16_t u, h1, h2;
	struct vring_used_elem *ue;

	REQUIRE(fx_init(&f, 8, true, false, 65534) == 0);
	for (i = 0; i < 3; i++) {
		b[i].addr = fx_gpa(&f, DATA_OFF + i * 64);
		b[i].len = 64;
	}
	CHECK_EQ(vq_drv_add(&f.drv, b, 2, b + 2, 1, &t1), 0); /* head 0: descs 0,1,2 */
	CHECK_EQ(vq_drv_add(&f.drv, b, 1, NULL, 0, &t2), 0);  /* head 3 */
	vq_drv_kick_prepare(&f.drv);
	h1 = le16toh(f.drv.avail->ring[65534 & 7]);
	h2 = le16toh(f.drv.avail->ring[65535 & 7]);
	CHECK_EQ(vq_drv_num_free(&f.drv), 4);

	/* The device writes: an id out of range, a good one, the same again,
	 * an id that is a free descriptor, a non-head descriptor of a live
	 * chain, then the other good one. */
	u = le16toh(f.drv.used->idx);
	ue = f.drv.used->ring;
	ue[(u + 0) & 7].id = htole32(1000);
	ue[(u + 1) & 7].id = htole32(h2);
	ue[(u + 1) & 7].len = htole32(7);
	ue[(u + 2) & 7].id = htole32(h2);
	ue[(u + 3) & 7].id = htole32(6);
	ue[(u + 4) & 7].id = htole32((uint32_t)(h1 + 1));
	ue[(u + 5) & 7].id = htole32(h1);
	ue[(u + 5) & 7].len = htole32(9);
	/* And scribbles over the descriptor table. */
	for (i = 0; i < 8; i++)
		f.drv.desc[i].next = htole16(0xffff);
	__atomic_store_n(&f.drv.used->idx, htole16((uint16_t)(u + 6)), __ATOMIC_RELEASE);
	CHECK_EQ(vq_drv_used_pending(&f.drv), 6);

	len = 0;
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	CHECK_EQ(len, UINT32_MAX);
	CHECK(vq_drv_get_used(&f.drv, &len) == &t2);
	CHECK_EQ(len, 7);
	len = 0;
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	CHECK_EQ(len, UINT32_MAX);
	len = 0;
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	CHECK_EQ(len, UINT32_MAX);
	len = 0;
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL);
	CHECK_EQ(len, UINT32_MAX);
	CHECK(vq_drv_get_used(&f.drv, &len) == &t1);
	CHECK_EQ(len, 9);
	len = 5;
	CHECK(vq_drv_get_used(&f.drv, &len) == NULL); /* empty */
	CHECK_EQ(len, 5);
	CHECK_EQ(vq_drv_num_free(&f.drv), 8);
	CHECK_EQ(vq_drv_used_pending(&f.drv), 0);
	/* An index far ahead counts as a full ring, no more. */
	__atomic_store_n(&f.drv.used->idx, htole16((uint16_t)(u + 6 + 1000)), __ATOMIC_RELEASE);
	CHECK_EQ(vq_drv_used_pending(&f.drv), 8);
	__atomic_store_n(&f.drv.used->idx, htole16((uint16_t)(u + 6)), __ATOMIC_RELEASE);

	/* The free list survived the scribbling: all 8 usable, each once. */
	for (n = 0; vq_drv_add(&f.drv, b, 1, NULL, 0, &tok) == 0; n++)
		;
	CHECK_EQ(n, 8);
	{
		bool seen[8] = { false };
		bool dup = false;

		for (i = 0; i < 8; i++) {
			uint16_t h = le16toh(f.drv.avail->ring[(uint16_t)(65536 + i) & 7]);

			if (h >= 8 || seen[h])
				dup = true;
			else
				seen[h] = true;
		}
		CHECK(!dup);
	}
	fx_fini(&f);
}

/* ---- API edges ----------------------------------------------------------- */

static void test_api_edges(void)
{
	static uint8_t ring[65536] __attribute__((aligned(4096)));
	struct vq_drv d;
	struct fx f;
	struct vq_elem e;
	struct vq_buf b;
	int tok;
	struct vq_dev v;

	CHECK_EQ(vq_drv_ring_bytes(8), 4096 + 6 + 64);
	CHECK_EQ(vq_drv_ring_bytes(256), 8192 + 6 + 2048);
	CHECK_EQ(vq_desc_size(256), 4096);
	CHECK_EQ(vq_avail_size(256), 518);
	CHECK_EQ(vq_used_size(256), 2054);
	CHECK_EQ(vq_drv_init(&d, ring, 0, false), -EINVAL);
	CHECK_EQ(vq_drv_init(&d, ring, 12, false), -EINVAL);
	CHECK_EQ(vq_drv_init(&d, ring + 8, 8, false), -EINVAL);
	CHECK_EQ(vq_drv_init(&d, ring, 1, false), 0);
	vq_drv_fini(&d);

	REQUIRE(fx_init(&f, 4, false, false, 0) == 0);
	CHECK_EQ(vq_dev_init(&v, &f.mem, 6, f.dev.desc, f.dev.avail, f.dev.used, 0, 0, 0),
		 -EINVAL);
	CHECK_EQ(vq_dev_init(&v, &f.mem, 0, f.dev.desc, f.dev.avail, f.dev.used, 0, 0, 0),
		 -EINVAL);
	CHECK_EQ(vq_dev_init(&v, &f.mem, 4, NULL, f.dev.avail, f.dev.used, 0, 0, 0), -EINVAL);
	CHECK_EQ(vq_dev_init(&v, &f.mem, 4, (void *)((uint8_t *)f.dev.desc + 8),
			     f.dev.avail, f.dev.used, 0, 0, 0), -EINVAL);
	CHECK_EQ(vq_dev_init(&v, &f.mem, 4, f.dev.desc, f.dev.avail,
			     (void *)((uint8_t *)f.dev.used + 2), 0, 0, 0), -EINVAL);

	b.addr = fx_gpa(&f, DATA_OFF);
	b.len = 4;
	CHECK_EQ(vq_drv_add(&f.drv, &b, 1, NULL, 0, NULL), -EINVAL);
	CHECK_EQ(vq_drv_add(&f.drv, NULL, 0, NULL, 0, &tok), -EINVAL);
	CHECK_EQ(vq_drv_add_indirect(&f.drv, &b, 1, NULL, 0, &tok), -EINVAL); /* no table */
	{
		struct vq_buf five[5] = { b, b, b, b, b };

		CHECK_EQ(vq_drv_add(&f.drv, five, 5, NULL, 0, &tok), -ENOSPC);
		CHECK_EQ(vq_drv_add(&f.drv, five, 3, five, 2, &tok), -ENOSPC);
		CHECK_EQ(vq_drv_add(&f.drv, five, 2, five, 2, &tok), 0);
		CHECK_EQ(vq_drv_add(&f.drv, five, 1, NULL, 0, &tok), -ENOSPC);
	}
	CHECK_EQ(vq_drv_num_free(&f.drv), 0);
	vq_drv_kick_prepare(&f.drv);

	/* unpop gives the same element back. */
	REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
	CHECK_EQ(vq_dev_avail(&f.dev), 0);
	vq_dev_unpop(&f.dev);
	CHECK_EQ(vq_dev_avail(&f.dev), 1);
	{
		uint16_t head = e.head;

		REQUIRE(vq_dev_pop(&f.dev, &e) == 1);
		CHECK_EQ(e.head, head);
		CHECK_EQ(e.out_num, 2);
		CHECK_EQ(e.in_num, 2);
	}
	CHECK_EQ(f.dev.stats.popped, 1);
	fx_fini(&f);
}

/* ---- randomised exchange ------------------------------------------------- */

static uint32_t rng = 0x9e3779b9;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

struct req {
	bool busy;
	unsigned out_n, in_n;
	struct vq_buf out[4], in[4];
	uint32_t out_len, in_len;
	unsigned seed;
};

static void stress(bool event_idx)
{
	enum { NREQ = 48, SLOT = 8192, ROUNDS = 3000 };
	static struct req reqs[NREQ];
	static struct vq_elem pend[64];
	static uint8_t buf[SLOT], exp[SLOT];
	unsigned npend = 0, round, i, bad = 0, done = 0, kicks = 0;
	struct fx f;

	REQUIRE(fx_init(&f, 32, event_idx, true, (uint16_t)rnd()) == 0);
	memset(reqs, 0, sizeof(reqs));
	for (round = 0; round < ROUNDS; round++) {
		unsigned op = rnd() % 4;

		if (op == 0 || op == 1) { /* driver adds a few */
			unsigned k = 1 + rnd() % 4;

			while (k--) {
				struct req *q = &reqs[rnd() % NREQ];
				unsigned j, off = 0;
				int rc;

				if (q->busy)
					continue;
				q->out_n = rnd() % 4;
				q->in_n = (q->out_n ? 0 : 1) + rnd() % 3;
				q->seed = rnd();
				q->out_len = q->in_len = 0;
				for (j = 0; j < q->out_n; j++) {
					uint32_t l = 1 + rnd() % 700;

					q->out[j].addr = fx_gpa(&f, DATA_OFF +
						(size_t)(q - reqs) * SLOT + off);
					q->out[j].len = l;
					pattern(f.h + DATA_OFF + (q - reqs) * SLOT + off, l,
						q->seed + j);
					off += l;
					q->out_len += l;
				}
				for (j = 0; j < q->in_n; j++) {
					uint32_t l = 1 + rnd() % 700;

					q->in[j].addr = fx_gpa(&f, DATA_OFF +
						(size_t)(q - reqs) * SLOT + off);
					q->in[j].len = l;
					memset(f.h + DATA_OFF + (q - reqs) * SLOT + off, 0, l);
					off += l;
					q->in_len += l;
				}
				rc = (rnd() & 1) ?
					vq_drv_add_indirect(&f.drv, q->out, q->out_n, q->in,
							    q->in_n, q) :
					vq_drv_add(&f.drv, q->out, q->out_n, q->in, q->in_n, q);
				if (rc == 0)
					q->busy = true;
				else if (rc != -ENOSPC)
					bad++;
			}
			if (vq_drv_kick_prepare(&f.drv))
				kicks++;
		} else if (op == 2) { /* device pops and completes some */
			unsigned k = rnd() % 6;

			while (k-- && npend < 64) {
				struct vq_elem *e = &pend[npend];
				int rc = vq_dev_pop(&f.dev, e);

				if (rc < 0)
					bad++;
				if (rc != 1)
					break;
				npend++;
			}
			/* Complete a random subset, in random order. */
			k = npend ? rnd() % (npend + 1) : 0;
			while (k--) {
				unsigned j = rnd() % npend;
				struct vq_elem *e = &pend[j];
				size_t n = vq_elem_read(e, 0, buf, sizeof(buf));
				uint32_t w;

				if (n != e->out_len)
					bad++;
				/* Response: the request's bytes reversed, then a
				 * fill byte, as much as fits. */
				w = e->in_len;
				for (i = 0; i < w && i < sizeof(exp); i++)
					exp[i] = i < n ? buf[n - 1 - i] : (uint8_t)(e->head + 1);
				if (vq_elem_write(e, 0, exp, w) != w)
					bad++;
				vq_dev_fill(&f.dev, e->head, w);
				pend[j] = pend[--npend];
			}
			if (rnd() & 1) {
				vq_dev_flush(&f.dev);
				vq_dev_should_notify(&f.dev);
			}
		} else { /* driver reaps */
			struct req *q;
			uint32_t len = 0;

			vq_dev_flush(&f.dev);
			while ((q = vq_drv_get_used(&f.drv, &len))) {
				unsigned j, off = 0;
				uint8_t *in;

				if (!q->busy || len != q->in_len) {
					bad++;
					continue;
				}
				/* Rebuild the expected response. */
				off = 0;
				for (j = 0; j < q->out_n; j++) {
					pattern(buf + off, q->out[j].len, q->seed + j);
					off += q->out[j].len;
				}
				for (i = 0; i < len; i++)
					exp[i] = i < off ? buf[off - 1 - i] : 0;
				in = f.h + DATA_OFF + (q - reqs) * SLOT + q->out_len;
				for (i = 0; i < len; i++)
					if (i < off && in[i] != exp[i])
						break;
				if (i != len)
					bad++;
				q->busy = false;
				done++;
			}
			if (len == UINT32_MAX)
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK(done > 500);
	CHECK(kicks > 0);
	CHECK(!f.dev.broken);
	fx_fini(&f);
}

static void test_stress(void)
{
	stress(false);
	stress(true);
}

/* ---- the re-arm race, made deterministic ----------------------------------
 *
 * When the device finds the ring empty with kicks on, it stores avail_event
 * and must then look at avail->idx once more: a driver that published just
 * before that store saw the old avail_event and did not kick. To land the
 * driver exactly there, the device's view of the used-ring page is made
 * read-only: the avail_event store faults, and the SIGSEGV handler plays the
 * driver (add + kick_prepare), then lets the store go through.
 */
static struct fx *race_fx;
static void *race_page;
static int race_kicked = -1;

static void race_segv(int sig, siginfo_t *si, void *uc)
{
	static int tok;
	struct vq_buf ob;

	(void)uc;
	if ((uintptr_t)si->si_addr - (uintptr_t)race_page >= 4096) {
		signal(sig, SIG_DFL); /* a real crash: let it happen */
		return;
	}
	ob.addr = fx_gpa(race_fx, DATA_OFF);
	ob.len = 8;
	if (vq_drv_add(&race_fx->drv, &ob, 1, NULL, 0, &tok) == 0)
		race_kicked = vq_drv_kick_prepare(&race_fx->drv);
	mprotect(race_page, 4096, PROT_READ | PROT_WRITE);
}

static void test_rearm_race(void)
{
	struct sigaction sa, old;
	struct vq_elem e;
	struct fx f;
	int rc;

	REQUIRE(fx_init(&f, 8, true, false, 3) == 0);
	CHECK_EQ(vq_dev_pop(&f.dev, &e), 0);
	/* Polling, then kicks wanted again but avail_event not yet moved. */
	vq_dev_set_notify(&f.dev, false);
	f.dev.notify_enabled = true;

	race_fx = &f;
	race_page = (void *)((uintptr_t)&f.dev.used->ring[f.num] & ~(uintptr_t)4095);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = race_segv;
	sa.sa_flags = SA_SIGINFO;
	REQUIRE(sigaction(SIGSEGV, &sa, &old) == 0);
	REQUIRE(mprotect(race_page, 4096, PROT_READ) == 0);
	rc = vq_dev_pop(&f.dev, &e);
	mprotect(race_page, 4096, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old, NULL);

	CHECK_EQ(race_kicked, 0); /* the driver saw the stale avail_event */
	CHECK_EQ(rc, 1);          /* so the device must have found it itself */
	{
		uint16_t ev;

		memcpy(&ev, &f.drv.used->ring[f.num], 2);
		CHECK_EQ(le16toh(ev), 3); /* avail_event re-armed at our position */
	}
	fx_fini(&f);
}

/* ---- two threads, real concurrency ---------------------------------------
 *
 * The driver and the device run on their own threads. A side that sleeps
 * does so on an eventfd (kick or call) only after the re-arm-and-re-check
 * dance, so a missing re-check or a wrong suppression value shows up as a
 * lost wake-up: a thread waiting for ever. A side that spins never sleeps
 * and suppresses the other side's notifications. The waits are bounded
 * (THR_STUCK_MS) only so that such a bug fails the test instead of hanging it.
 */
#define THR_STUCK_MS 30000
#define THR_SLOTS    64
#define THR_TOTAL    100000u

struct thr {
	struct fx *f;
	int kick_fd, call_fd;
	bool spin_dev, spin_drv;
	int stop;              /* set by a side that gave up */
	unsigned errors;       /* device thread's */
	unsigned dev_sleeps;
	uint64_t seed;
};

static bool thr_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, THR_STUCK_MS) != 1)
		return false;
	return read(fd, &v, sizeof(v)) == sizeof(v);
}

static void thr_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static uint64_t thr_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool thr_stopped(struct thr *t)
{
	return __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) != 0;
}

static void *thr_device(void *arg)
{
	struct thr *t = arg;
	struct vq_dev *vq = &t->f->dev;
	unsigned done = 0, since_flush = 0;
	uint64_t rs = t->seed;
	struct vq_elem e;

	if (t->spin_dev)
		vq_dev_set_notify(vq, false);
	while (done < THR_TOTAL && !thr_stopped(t)) {
		bool polling = t->spin_dev || (thr_rnd(&rs) & 3) == 0;
		int rc;

		if (polling && !t->spin_dev)
			vq_dev_set_notify(vq, false);
		for (;;) {
			uint64_t seq = 0, resp;

			rc = vq_dev_pop(vq, &e);
			if (rc != 1)
				break;
			if (vq_elem_read(&e, 0, &seq, 8) != 8 || seq != done)
				t->errors++;
			resp = seq ^ 0x5a5a5a5a5a5a5a5aull;
			if (vq_elem_write(&e, 0, &resp, 8) != 8)
				t->errors++;
			vq_dev_fill(vq, e.head, 8);
			done++;
			if (++since_flush >= 1 + thr_rnd(&rs) % 16) {
				vq_dev_flush(vq);
				since_flush = 0;
				if (vq_dev_should_notify(vq))
					thr_signal(t->call_fd);
			}
		}
		if (rc < 0) {
			t->errors++;
			break;
		}
		vq_dev_flush(vq);
		since_flush = 0;
		if (vq_dev_should_notify(vq))
			thr_signal(t->call_fd);
		if (done == THR_TOTAL || t->spin_dev)
			continue;
		if (polling) {
			vq_dev_set_notify(vq, true);
			if (vq_dev_avail(vq))
				continue;
		}
		t->dev_sleeps++;
		if (!thr_wait(t->kick_fd)) {
			t->errors += 1000; /* lost kick */
			break;
		}
	}
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE); /* after our last flush */
	return NULL;
}

static void threads(bool event_idx, bool spin_drv, bool spin_dev)
{
	static uint64_t slot_tok[THR_SLOTS];
	struct fx f;
	struct thr t;
	pthread_t th;
	unsigned added = 0, reaped = 0, bad = 0, drv_sleeps = 0;
	uint64_t rs = 0x1234567;

	REQUIRE(fx_init(&f, 64, event_idx, true, 65000) == 0);
	memset(&t, 0, sizeof(t));
	t.f = &f;
	t.seed = 99;
	t.spin_dev = spin_dev;
	t.spin_drv = spin_drv;
	t.kick_fd = eventfd(0, EFD_CLOEXEC);
	t.call_fd = eventfd(0, EFD_CLOEXEC);
	REQUIRE(t.kick_fd >= 0 && t.call_fd >= 0);
	if (spin_drv)
		vq_drv_disable_cb(&f.drv);
	REQUIRE(pthread_create(&th, NULL, thr_device, &t) == 0);

	while (reaped < THR_TOTAL) {
		bool progress = false;
		uint64_t *tok;
		uint32_t len = 0;

		/* Add what fits (requests complete in order, so slot seq % 64
		 * is free again by the time seq comes round). A sleeping
		 * driver sometimes adds one at a time (ping-pong). */
		while (added < THR_TOTAL && vq_drv_num_free(&f.drv) > 0 &&
		       added - reaped < THR_SLOTS) {
			unsigned s = added % THR_SLOTS;
			struct vq_buf ob = { fx_gpa(&f, DATA_OFF + s * 64), 8 };
			struct vq_buf ib = { fx_gpa(&f, DATA_OFF + s * 64 + 32), 8 };
			uint64_t seq = added;
			int rc;

			memcpy(f.h + DATA_OFF + s * 64, &seq, 8);
			slot_tok[s] = seq;
			rc = (thr_rnd(&rs) & 1) ?
				vq_drv_add_indirect(&f.drv, &ob, 1, &ib, 1, &slot_tok[s]) :
				vq_drv_add(&f.drv, &ob, 1, &ib, 1, &slot_tok[s]);
			if (rc == -ENOSPC)
				break;
			if (rc)
				bad++;
			added++;
			progress = true;
			if ((thr_rnd(&rs) & 7) == 0) {
				if (vq_drv_kick_prepare(&f.drv))
					thr_signal(t.kick_fd);
				if (!spin_drv && (added & 1024))
					break;
			}
		}
		if (vq_drv_kick_prepare(&f.drv))
			thr_signal(t.kick_fd);

		while ((tok = vq_drv_get_used(&f.drv, &len))) {
			unsigned s = (unsigned)(tok - slot_tok);
			uint64_t resp;

			memcpy(&resp, f.h + DATA_OFF + s * 64 + 32, 8);
			if (len != 8 || *tok != reaped ||
			    resp != (reaped ^ 0x5a5a5a5a5a5a5a5aull))
				bad++;
			reaped++;
			progress = true;
		}
		if (len == UINT32_MAX)
			bad++;
		if (progress || reaped == THR_TOTAL)
			continue;
		if (thr_stopped(&t) && !vq_drv_has_used(&f.drv))
			break; /* the device finished (or gave up) and all is reaped */
		if (spin_drv)
			continue;
		/* Nothing to do: sleep until the device calls. */
		if (!vq_drv_enable_cb(&f.drv))
			continue;
		drv_sleeps++;
		if (!thr_wait(t.call_fd)) {
			bad += 1000; /* lost interrupt */
			break;
		}
		if (thr_rnd(&rs) & 1)
			vq_drv_disable_cb(&f.drv);
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	thr_signal(t.kick_fd);
	pthread_join(th, NULL);
	if (bad || t.errors || reaped != THR_TOTAL)
		printf("#   event_idx %d spin_drv %d spin_dev %d: reaped %u, "
		       "sleeps drv %u dev %u\n", event_idx, spin_drv, spin_dev, reaped,
		       drv_sleeps, t.dev_sleeps);
	CHECK_EQ(bad, 0);
	CHECK_EQ(t.errors, 0);
	CHECK_EQ(reaped, THR_TOTAL);
	CHECK(!f.dev.broken);
	close(t.kick_fd);
	close(t.call_fd);
	fx_fini(&f);
}

static void test_threads(void)
{
	unsigned ev;

	for (ev = 0; ev < 2; ev++) {
		threads(ev, false, false);
		threads(ev, true, false);
		threads(ev, false, true);
	}
}

int main(void)
{
	TEST_PROGRAM("test_virtq");
	vlog_level = VLOG_ERR; /* violations are expected here */
	RUN(test_roundtrip);
	RUN(test_wraparound);
	RUN(test_need_event);
	RUN(test_batch_flush);
	RUN(test_notify_suppression);
	RUN(test_notify_after_2_16);
	RUN(test_notify_after_n);
	RUN(test_rearm_race);
	RUN(test_threads);
	RUN(test_indirect);
	RUN(test_peek);
	RUN(test_region_boundaries);
	RUN(test_region_hint);
	RUN(test_stable_ring_words);
	RUN(test_long_chain);
	RUN(test_violations);
	RUN(test_bad_used_ids);
	RUN(test_api_edges);
	RUN(test_stress);
	return TEST_DONE();
}
