/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split virtqueue, driver side (virtio 1.x section 2.7).
 *
 * Free descriptors are chained through a private copy of their next fields,
 * so a device that scribbles over the descriptor table cannot corrupt our
 * free list; everything the device writes (used entries, avail_event, flags)
 * is read once and validated.
 */
#include "virtio/vq_drv.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "virtio/vq_dev.h" /* vq_need_event */
#include "virtio/vq_ring.h"

#define VQ_DRV_USED_ALIGN 4096u
#define VQ_DRV_INDIRECT_MAX 32768u

static inline uint16_t *vq_drv_used_event(const struct vq_drv *vq)
{
	return (uint16_t *)&vq->avail->ring[vq->num];
}

static inline uint16_t *vq_drv_avail_event(const struct vq_drv *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

static uint64_t vq_drv_used_off(uint16_t num)
{
	return ALIGN_UP(16ull * num + 6ull + 2ull * num, (uint64_t)VQ_DRV_USED_ALIGN);
}

uint64_t vq_drv_ring_bytes(uint16_t num)
{
	return vq_drv_used_off(num) + 6ull + 8ull * num;
}

int vq_drv_init(struct vq_drv *vq, void *mem, uint16_t num, bool event_idx)
{
	uint8_t *base = mem;
	unsigned i;

	memset(vq, 0, sizeof(*vq));
	if (!IS_POW2(num) || num > 32768 || !mem || ((uintptr_t)mem & 15))
		return -EINVAL;

	vq->token = calloc(num, sizeof(*vq->token));
	vq->chain_len = calloc(num, sizeof(*vq->chain_len));
	vq->next = malloc(num * sizeof(*vq->next));
	if (!vq->token || !vq->chain_len || !vq->next) {
		vq_drv_fini(vq);
		return -ENOMEM;
	}

	memset(base, 0, vq_drv_ring_bytes(num));
	vq->num = num;
	vq->desc = (struct vring_desc *)base;
	vq->avail = (struct vring_avail *)(base + 16ull * num);
	vq->used = (struct vring_used *)(base + vq_drv_used_off(num));
	vq->event_idx = event_idx;
	for (i = 0; i < num; i++)
		vq->next[i] = (uint16_t)(i + 1);
	vq->free_head = 0;
	vq->free_tail = (uint16_t)(num - 1);
	vq->num_free = num;
	vq->cb_enabled = true; /* zeroed rings: flags 0, used_event 0 */
	return 0;
}

void vq_drv_fini(struct vq_drv *vq)
{
	free(vq->token);
	free(vq->chain_len);
	free(vq->next);
	vq->token = NULL;
	vq->chain_len = NULL;
	vq->next = NULL;
	vq->num_free = 0;
}

void vq_drv_set_base(struct vq_drv *vq, uint16_t idx)
{
	vq->avail_idx = idx;
	vq->last_kick_idx = idx;
	vq->last_used_idx = idx;
	st16(&vq->avail->idx, idx);
	st16(&vq->used->idx, idx);
	if (vq->event_idx)
		st16(vq_drv_used_event(vq), vq->cb_enabled ? idx : (uint16_t)(idx - 1));
}

void vq_drv_set_indirect(struct vq_drv *vq, struct vring_desc *tbl,
			 uint64_t tbl_gpa, uint16_t per_head)
{
	vq->indirect_tbl = tbl;
	vq->indirect_base = tbl_gpa;
	vq->indirect_max = tbl ? per_head : 0;
}

/* Put head on the avail ring (not yet published). Ring words are written
 * only when they change (store_if_changed): with heads reused in ring order
 * the device's core keeps the avail and descriptor lines it read. */
static void vq_drv_expose(struct vq_drv *vq, uint16_t head, void *token, uint16_t n)
{
	uint16_t *e = &vq->avail->ring[vq->avail_idx & (vq->num - 1)];

	vq->token[head] = token;
	vq->chain_len[head] = n;
	store_if_changed(e, &(uint16_t){ htole16(head) }, sizeof(*e));
	vq->avail_idx++;
}

static void vq_desc_set(struct vring_desc *d, uint64_t addr, uint32_t len,
			uint16_t flags, uint16_t next)
{
	struct vring_desc v = {
		.addr = htole64(addr), .len = htole32(len),
		.flags = htole16(flags), .next = htole16(next),
	};

	store_if_changed(d, &v, sizeof(v));
}

int vq_drv_add(struct vq_drv *vq, const struct vq_buf *out, unsigned out_n,
	       const struct vq_buf *in, unsigned in_n, void *token)
{
	uint16_t head, idx;
	unsigned i, total;

	if (!token || (out_n == 0 && in_n == 0))
		return -EINVAL;
	if (out_n > vq->num_free || in_n > vq->num_free - out_n)
		return -ENOSPC;
	total = out_n + in_n;

	head = idx = vq->free_head;
	for (i = 0; i < total; i++) {
		const struct vq_buf *b = i < out_n ? &out[i] : &in[i - out_n];
		uint16_t flags = i < out_n ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 < total)
			flags |= VRING_DESC_F_NEXT;
		vq_desc_set(&vq->desc[idx], b->addr, b->len, flags, vq->next[idx]);
		idx = vq->next[idx];
	}
	vq->free_head = idx;
	vq->num_free -= (uint16_t)total;
	vq_drv_expose(vq, head, token, (uint16_t)total);
	return 0;
}

int vq_drv_add_indirect(struct vq_drv *vq, const struct vq_buf *out, unsigned out_n,
			const struct vq_buf *in, unsigned in_n, void *token)
{
	struct vring_desc *tbl;
	unsigned i, total;
	uint16_t head;

	if (!token || (out_n == 0 && in_n == 0) || !vq->indirect_tbl)
		return -EINVAL;
	if (out_n > vq->indirect_max || in_n > vq->indirect_max - out_n ||
	    out_n + in_n > VQ_DRV_INDIRECT_MAX)
		return -EINVAL;
	if (vq->num_free == 0)
		return -ENOSPC;
	total = out_n + in_n;

	head = vq->free_head;
	vq->free_head = vq->next[head];
	vq->num_free--;

	tbl = &vq->indirect_tbl[(size_t)head * vq->indirect_max];
	for (i = 0; i < total; i++) {
		const struct vq_buf *b = i < out_n ? &out[i] : &in[i - out_n];
		uint16_t flags = i < out_n ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 < total)
			flags |= VRING_DESC_F_NEXT;
		vq_desc_set(&tbl[i], b->addr, b->len, flags, (uint16_t)(i + 1));
	}
	vq_desc_set(&vq->desc[head],
		    vq->indirect_base + (uint64_t)head * vq->indirect_max * sizeof(*tbl),
		    (uint32_t)(total * sizeof(*tbl)), VRING_DESC_F_INDIRECT, 0);
	vq_drv_expose(vq, head, token, 1);
	return 0;
}

bool vq_drv_kick_prepare(struct vq_drv *vq)
{
	uint16_t old = vq->last_kick_idx, new_idx = vq->avail_idx;

	if (old == new_idx)
		return false;
	st16_release(&vq->avail->idx, new_idx);
	vq->last_kick_idx = new_idx;
	/* avail->idx must be visible before we read the device's wish. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx)
		return vq_need_event(ld16(vq_drv_avail_event(vq)), new_idx, old);
	return !(ld16(&vq->used->flags) & VRING_USED_F_NO_NOTIFY);
}

uint16_t vq_drv_used_pending(const struct vq_drv *vq)
{
	uint16_t n = (uint16_t)(ld16_acquire(&vq->used->idx) - vq->last_used_idx);

	return n <= vq->num ? n : vq->num;
}

bool vq_drv_has_used(const struct vq_drv *vq)
{
	return vq_drv_used_pending(vq) != 0;
}

void *vq_drv_get_used(struct vq_drv *vq, uint32_t *len)
{
	const struct vring_used_elem *e;
	uint32_t id, ulen;
	uint16_t last, n, i;
	void *token;

	if (!vq_drv_has_used(vq))
		return NULL;
	e = &vq->used->ring[vq->last_used_idx & (vq->num - 1)];
	id = ld32(&e->id);
	ulen = ld32(&e->len);
	vq->last_used_idx++;
	if (vq->cb_enabled && vq->event_idx) {
		/* Interrupt on the next entry; ordered before the next read of
		 * used->idx so that entry cannot slip by unsignalled. */
		st16(vq_drv_used_event(vq), vq->last_used_idx);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}

	if (id >= vq->num || !vq->token[id]) {
		/* Not a chain we handed out (or already returned). */
		*len = UINT32_MAX;
		return NULL;
	}

	/* Give the chain back to the free list, walking our private links. */
	n = vq->chain_len[id];
	last = (uint16_t)id;
	for (i = 1; i < n; i++)
		last = vq->next[last];
	if (vq->num_free)
		vq->next[vq->free_tail] = (uint16_t)id;
	else
		vq->free_head = (uint16_t)id;
	vq->free_tail = last;
	vq->num_free += n;

	token = vq->token[id];
	vq->token[id] = NULL;
	vq->chain_len[id] = 0;
	*len = ulen;
	return token;
}

bool vq_drv_enable_cb(struct vq_drv *vq)
{
	return vq_drv_enable_cb_after(vq, 1);
}

bool vq_drv_enable_cb_after(struct vq_drv *vq, uint16_t n)
{
	if (!n || !vq->event_idx)
		n = 1; /* the flag is only on or off: the next entry */
	vq->cb_enabled = true;
	if (vq->event_idx)
		/* the device interrupts once used->idx passes used_event */
		st16(vq_drv_used_event(vq), (uint16_t)(vq->last_used_idx + n - 1));
	else
		st16(&vq->avail->flags, 0);
	/* Our wish must be visible before we look at used->idx again. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return (uint16_t)(ld16_acquire(&vq->used->idx) - vq->last_used_idx) < n;
}

void vq_drv_disable_cb(struct vq_drv *vq)
{
	vq->cb_enabled = false;
	if (vq->event_idx)
		/* One behind what we consumed: outside the device's window. */
		st16(vq_drv_used_event(vq), (uint16_t)(vq->last_used_idx - 1));
	else
		st16(&vq->avail->flags, VRING_AVAIL_F_NO_INTERRUPT);
}
