/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split virtqueue, device side (virtio 1.x section 2.7).
 *
 * Everything in the rings is written by the driver and may change under our
 * feet, so each field is read once into a local and only the local is
 * validated and used. Ordering:
 *  - avail->idx is loaded with acquire before the ring entries and
 *    descriptors it publishes are read;
 *  - used->idx is stored with release after the used entries are written;
 *  - a full fence separates our index store from the read of the other
 *    side's suppression field (used_event / flags) in vq_dev_should_notify(),
 *    and our avail_event / flags store from the re-read of avail->idx when we
 *    re-enable kicks.
 */
#include "virtio/vq_dev.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "vhost/vhost_mem.h"
#include "virtio/vq_ring.h"

/* Largest indirect table we accept (entries); the spec bounds it by 2^15. */
#define VQ_INDIRECT_MAX 32768u
/* An indirect table may straddle this many adjacent memory regions. */
#define VQ_INDIRECT_PIECES 4

/* One descriptor, copied out of driver memory and in CPU byte order. */
struct vq_desc_copy {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

/* A descriptor table: the ring's own, or an indirect one (maybe in pieces). */
struct vq_table {
	const uint8_t *base;           /* whole table contiguous, or NULL */
	struct iovec piece[VQ_INDIRECT_PIECES];
	unsigned npieces;
	uint32_t num;                  /* entries */
};

/* used_event lives after the avail ring, avail_event after the used ring. */
static inline uint16_t *vq_used_event(const struct vq_dev *vq)
{
	return (uint16_t *)&vq->avail->ring[vq->num];
}

static inline uint16_t *vq_avail_event(const struct vq_dev *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

uint64_t vq_desc_size(uint16_t num)
{
	return 16ull * num;
}

uint64_t vq_avail_size(uint16_t num)
{
	return 6ull + 2ull * num;
}

uint64_t vq_used_size(uint16_t num)
{
	return 6ull + 8ull * num;
}

void vq_dev_set_broken(struct vq_dev *vq, const char *why)
{
	if (vq->broken)
		return;
	vq->broken = true;
	vq->error = why;
	vq->stats.errors++;
	LOG_PEER("virtqueue (size %u) broken: %s", vq->num, why);
}

int vq_dev_init(struct vq_dev *vq, const struct vhost_mem *mem, uint16_t num,
		struct vring_desc *desc, struct vring_avail *avail,
		struct vring_used *used, uint16_t last_avail_idx, bool event_idx,
		bool indirect)
{
	memset(vq, 0, sizeof(*vq));
	if (!IS_POW2(num) || num > 32768 || !desc || !avail || !used || !mem)
		return -EINVAL;
	if (((uintptr_t)desc & 15) || ((uintptr_t)avail & 1) || ((uintptr_t)used & 3))
		return -EINVAL;

	vq->num = num;
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	vq->mem = mem;
	vq->last_avail_idx = last_avail_idx;
	vq->shadow_avail_idx = last_avail_idx;
	vq->used_idx = ld16(&used->idx);
	vq->used_published = vq->used_idx;
	/* Nothing published by us yet, so nothing is owed to the driver. */
	vq->signalled_used = vq->used_idx;
	vq->signalled_used_valid = true;
	vq->event_idx = event_idx;
	vq->indirect = indirect;
	vq_dev_set_notify(vq, true);
	return 0;
}

/*
 * Read avail->idx (acquire) and validate it against what we consumed.
 * Returns the number of unconsumed entries, or -1 (queue now broken).
 */
static int vq_dev_read_avail(struct vq_dev *vq)
{
	uint16_t idx = ld16_acquire(&vq->avail->idx);
	uint16_t n = (uint16_t)(idx - vq->last_avail_idx);

	if (unlikely(n > vq->num)) {
		vq_dev_set_broken(vq, "avail index more than the ring size ahead");
		return -1;
	}
	vq->shadow_avail_idx = idx;
	return n;
}

/*
 * Entries ready to pop, or -1 if broken. When the ring looks empty the event
 * index is brought up to date first: with kicks enabled it asks for a kick on
 * the very next entry and re-reads avail->idx behind a full fence, so an entry
 * published meanwhile is either seen here or kicked; while polling it is set
 * one behind our position, which keeps the driver from kicking.
 */
static int vq_dev_refresh(struct vq_dev *vq, bool use_shadow)
{
	uint16_t *ev;
	uint16_t want;
	int n;

	n = (uint16_t)(vq->shadow_avail_idx - vq->last_avail_idx);
	if (n && use_shadow)
		return n;
	n = vq_dev_read_avail(vq);
	if (n != 0 || !vq->event_idx)
		return n;

	ev = vq_avail_event(vq);
	want = vq->notify_enabled ? vq->last_avail_idx : (uint16_t)(vq->last_avail_idx - 1);
	if (ld16(ev) != want)
		st16(ev, want);
	if (!vq->notify_enabled)
		return 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_dev_read_avail(vq);
}

uint16_t vq_dev_avail(struct vq_dev *vq)
{
	int n;

	if (vq->broken)
		return 0;
	n = vq_dev_refresh(vq, false);
	return n < 0 ? 0 : (uint16_t)n;
}

/* Copy descriptor i of table t into d (decoded). The caller checked i < t->num. */
static void vq_table_read(const struct vq_table *t, uint32_t i, struct vq_desc_copy *d)
{
	struct vring_desc raw;
	size_t off = (size_t)i * sizeof(raw);

	if (likely(t->base != NULL)) {
		memcpy(&raw, t->base + off, sizeof(raw));
	} else {
		uint8_t *dst = (uint8_t *)&raw;
		size_t left = sizeof(raw);
		unsigned p;

		memset(&raw, 0, sizeof(raw));

		for (p = 0; p < t->npieces && left; p++) {
			size_t plen = t->piece[p].iov_len, c;

			if (off >= plen) {
				off -= plen;
				continue;
			}
			c = MIN(plen - off, left);
			memcpy(dst, (const uint8_t *)t->piece[p].iov_base + off, c);
			dst += c;
			left -= c;
			off = 0;
		}
	}
	/* Use the copy from here on, never driver memory again. */
	__asm__ __volatile__("" ::: "memory");
	d->addr = le64toh(raw.addr);
	d->len = le32toh(raw.len);
	d->flags = le16toh(raw.flags);
	d->next = le16toh(raw.next);
}

/* Validate an indirect descriptor and point t at its table. Returns 0 or -1. */
static int vq_dev_enter_indirect(struct vq_dev *vq, const struct vq_desc_copy *d,
				 struct vq_table *t)
{
	int n;

	if (!vq->indirect) {
		vq_dev_set_broken(vq, "indirect descriptor without VIRTIO_RING_F_INDIRECT_DESC");
		return -1;
	}
	if (d->flags & VRING_DESC_F_NEXT) {
		vq_dev_set_broken(vq, "indirect descriptor with NEXT");
		return -1;
	}
	if (d->len == 0 || d->len % sizeof(struct vring_desc) ||
	    d->len / sizeof(struct vring_desc) > VQ_INDIRECT_MAX) {
		vq_dev_set_broken(vq, "bad indirect table length");
		return -1;
	}
	t->num = d->len / sizeof(struct vring_desc);
	t->base = vhost_mem_gpa_to_host(vq->mem, d->addr, d->len);
	if (t->base)
		return 0;
	/* Not inside one region: maybe over adjacent ones. */
	n = vhost_mem_gpa_to_iov(vq->mem, d->addr, d->len, t->piece, VQ_INDIRECT_PIECES);
	if (n > 0) { /* more than one piece, else gpa_to_host had succeeded */
		t->npieces = (unsigned)n;
		return 0;
	}
	vq_dev_set_broken(vq, n == -E2BIG ? "indirect table over too many memory regions"
					  : "indirect table outside shared memory");
	return -1;
}

/* The region of the last buffer holds [gpa, gpa + len) (len > 0): its
 * host address, else NULL. */
static inline uint8_t *vq_dev_hint(const struct vq_dev *vq, uint64_t gpa, uint64_t len)
{
	const struct vhost_mem_region *r = vq->hint;

	if (!r || vq->hint_gen != vq->mem->generation || gpa - r->gpa >= r->size ||
	    len > r->size - (gpa - r->gpa))
		return NULL;
	return r->host + (gpa - r->gpa);
}

/* vhost_mem_gpa_to_iov for a descriptor's buffer, through the hint (the
 * region of gpa becomes the hint). */
static int vq_dev_xlate(struct vq_dev *vq, uint64_t gpa, uint32_t len, struct iovec *iov,
			unsigned max)
{
	uint8_t *host = NULL;

	if (len && max) {
		host = vq_dev_hint(vq, gpa, len);
		if (!host && (vq->hint = vhost_mem_find(vq->mem, gpa))) {
			vq->hint_gen = vq->mem->generation;
			host = vq_dev_hint(vq, gpa, len);
		}
	}
	if (!host) /* (over a region's end, outside memory, or empty) */
		return vhost_mem_gpa_to_iov(vq->mem, gpa, len, iov, max);
	iov[0].iov_base = host;
	iov[0].iov_len = len;
	return 1;
}

/*
 * Walk the chain starting at head (already checked < num) and translate it
 * into elem. Returns 0, or -1 with the queue broken.
 */
static int vq_dev_map_chain(struct vq_dev *vq, uint16_t head, struct vq_elem *elem)
{
	struct vq_table t = { .base = (const uint8_t *)vq->desc, .num = vq->num };
	uint64_t out_len = 0, in_len = 0;
	unsigned niov = 0, out_num = 0;
	bool in_indirect = false, seen_write = false;
	uint32_t idx = head, seen = 0;
	struct vq_desc_copy d;
	const char *why;
	int n;

	for (;;) {
		if (unlikely(++seen > t.num)) {
			why = "descriptor chain longer than its table (loop)";
			goto broken;
		}
		vq_table_read(&t, idx, &d);

		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (in_indirect) {
				why = "nested indirect descriptor";
				goto broken;
			}
			if (vq_dev_enter_indirect(vq, &d, &t) < 0)
				return -1;
			in_indirect = true;
			seen = 0;
			idx = 0;
			continue;
		}

		if (d.flags & VRING_DESC_F_WRITE) {
			seen_write = true;
			in_len += d.len;
			if (in_len > UINT32_MAX) {
				why = "device-writable length overflows 32 bits";
				goto broken;
			}
		} else {
			if (seen_write) {
				why = "device-readable descriptor after a device-writable one";
				goto broken;
			}
			out_len += d.len;
			if (out_len > UINT32_MAX) {
				why = "device-readable length overflows 32 bits";
				goto broken;
			}
		}

		n = vq_dev_xlate(vq, d.addr, d.len, &elem->iov[niov], VQ_MAX_IOV - niov);
		if (unlikely(n < 0)) {
			why = n == -E2BIG ? "descriptor chain needs too many iovecs"
					  : "buffer outside shared memory";
			goto broken;
		}
		niov += (unsigned)n;
		if (!seen_write)
			out_num += (unsigned)n;

		if (!(d.flags & VRING_DESC_F_NEXT))
			break;
		if (unlikely(d.next >= t.num)) {
			why = "descriptor next index out of range";
			goto broken;
		}
		idx = d.next;
	}

	elem->head = head;
	elem->out_num = (uint16_t)out_num;
	elem->in_num = (uint16_t)(niov - out_num);
	elem->out_len = (uint32_t)out_len;
	elem->in_len = (uint32_t)in_len;
	return 0;

broken:
	vq_dev_set_broken(vq, why);
	return -1;
}

int vq_dev_pop(struct vq_dev *vq, struct vq_elem *elem)
{
	uint16_t head;
	int n;

	if (unlikely(vq->broken))
		return -EIO;
	n = vq_dev_refresh(vq, true);
	if (n <= 0)
		return n < 0 ? -EIO : 0;

	head = ld16(&vq->avail->ring[vq->last_avail_idx & (vq->num - 1)]);
	if (unlikely(head >= vq->num)) {
		vq_dev_set_broken(vq, "avail ring head index out of range");
		return -EIO;
	}
	if (vq_dev_map_chain(vq, head, elem) < 0)
		return -EIO;
	vq->last_avail_idx++;
	vq->stats.popped++;
	return 1;
}

/* The head of avail entry last_avail_idx + ahead, or -1 (not published by
 * the last avail->idx read, out of range, or broken). */
static int vq_dev_peek_head(const struct vq_dev *vq, uint16_t ahead)
{
	uint16_t head;

	if (vq->broken || (uint16_t)(vq->shadow_avail_idx - vq->last_avail_idx) <= ahead)
		return -1;
	head = ld16(&vq->avail->ring[(uint16_t)(vq->last_avail_idx + ahead) & (vq->num - 1)]);
	return head < vq->num ? head : -1;
}

void vq_dev_prefetch_desc(const struct vq_dev *vq, uint16_t ahead)
{
	int head = vq_dev_peek_head(vq, ahead);

	if (head >= 0)
		__builtin_prefetch(&vq->desc[head], 0, 3);
}

const void *vq_dev_peek(const struct vq_dev *vq, uint16_t ahead, uint32_t *len)
{
	int head = vq_dev_peek_head(vq, ahead);
	struct vring_desc raw;

	if (head < 0)
		return NULL;
	memcpy(&raw, &vq->desc[head], sizeof(raw));
	__asm__ __volatile__("" ::: "memory");
	if (le16toh(raw.flags) & (VRING_DESC_F_INDIRECT | VRING_DESC_F_WRITE))
		return NULL;
	*len = le32toh(raw.len);
	if (*len) {
		uint8_t *host = vq_dev_hint(vq, le64toh(raw.addr), *len);

		if (host)
			return host;
	}
	return vhost_mem_gpa_to_host(vq->mem, le64toh(raw.addr), *len);
}

void vq_dev_unpop(struct vq_dev *vq)
{
	if (vq->broken)
		return;
	vq->last_avail_idx--;
	vq->stats.popped--;
}

void vq_dev_fill(struct vq_dev *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem *e;

	if (unlikely(vq->broken))
		return;
	if (unlikely((uint16_t)(vq->used_idx - vq->used_published) >= vq->num)) {
		/* Our own bug: more completions than the ring holds. */
		vq_dev_set_broken(vq, "more used entries filled than the ring holds");
		return;
	}
	e = &vq->used->ring[vq->used_idx & (vq->num - 1)];
	/* (an entry that already says this is left alone: a driver reusing
	 * its descriptors in ring order sees the same entries lap after lap,
	 * and an unwritten line stays valid in its core's cache) */
	if (ld32(&e->id) != head || ld32(&e->len) != len) {
		st32(&e->id, head);
		st32(&e->len, len);
	}
	vq->used_idx++;
	vq->stats.pushed++;
}

void vq_dev_flush(struct vq_dev *vq)
{
	uint16_t n;

	if (unlikely(vq->broken))
		return;
	n = (uint16_t)(vq->used_idx - vq->used_published);
	if (!n)
		return;
	st16_release(&vq->used->idx, vq->used_idx);
	/* Moved past signalled_used (2^16 entries without a notification):
	 * the old value no longer tells where the driver stands. */
	if ((uint16_t)(vq->used_idx - vq->signalled_used) < n)
		vq->signalled_used_valid = false;
	vq->used_published = vq->used_idx;
}

void vq_dev_push(struct vq_dev *vq, uint16_t head, uint32_t len)
{
	vq_dev_fill(vq, head, len);
	vq_dev_flush(vq);
}

bool vq_dev_should_notify(struct vq_dev *vq)
{
	uint16_t old, new_idx;
	bool valid, need;

	if (unlikely(vq->broken))
		return false;
	old = vq->signalled_used;
	new_idx = vq->used_published;
	valid = vq->signalled_used_valid;
	if (valid && old == new_idx)
		return false; /* nothing published since the last decision */
	vq->signalled_used = new_idx;
	vq->signalled_used_valid = true;

	/* Our used->idx store must be visible before we read their wish. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx)
		need = !valid || vq_need_event(ld16(vq_used_event(vq)), new_idx, old);
	else
		need = !(ld16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);

	if (need)
		vq->stats.notified++;
	else
		vq->stats.suppressed++;
	return need;
}

void vq_dev_set_notify(struct vq_dev *vq, bool enable)
{
	vq->notify_enabled = enable;
	if (vq->broken)
		return;
	if (vq->event_idx) {
		/* Enabled: kick on the next entry we have not consumed.
		 * Disabled: one behind us, outside any window the driver can
		 * publish before we move it again. */
		st16(vq_avail_event(vq), enable ? vq->last_avail_idx
					      : (uint16_t)(vq->last_avail_idx - 1));
	} else {
		st16(&vq->used->flags, enable ? 0 : VRING_USED_F_NO_NOTIFY);
	}
	if (enable)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

size_t vq_elem_read(const struct vq_elem *e, size_t off, void *dst, size_t len)
{
	uint8_t *d = dst;
	size_t done = 0;
	unsigned i;

	for (i = 0; i < e->out_num && done < len; i++) {
		size_t l = e->iov[i].iov_len, c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = MIN(l - off, len - done);
		memcpy(d + done, (const uint8_t *)e->iov[i].iov_base + off, c);
		done += c;
		off = 0;
	}
	return done;
}

size_t vq_elem_write(const struct vq_elem *e, size_t off, const void *src, size_t len)
{
	const uint8_t *s = src;
	size_t done = 0;
	unsigned i, end = (unsigned)e->out_num + e->in_num;

	for (i = e->out_num; i < end && done < len; i++) {
		size_t l = e->iov[i].iov_len, c;

		if (off >= l) {
			off -= l;
			continue;
		}
		c = MIN(l - off, len - done);
		memcpy((uint8_t *)e->iov[i].iov_base + off, s + done, c);
		done += c;
		off = 0;
	}
	return done;
}
