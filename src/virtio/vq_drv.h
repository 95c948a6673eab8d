/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split virtqueue, driver side: what a virtio driver does with its rings.
 * Used by libvrdma (the userspace driver) and by tests that play a driver.
 *
 * Addresses put in descriptors are "guest physical addresses" as the device
 * will translate them; libvrdma uses its own virtual addresses (identity).
 *
 * Not thread-safe; the owner serialises calls per queue.
 */
#ifndef VRDMA_VIRTIO_VQ_DRV_H
#define VRDMA_VIRTIO_VQ_DRV_H

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stdint.h>

struct vq_buf {
	uint64_t addr; /* GPA */
	uint32_t len;
};

struct vq_drv {
	uint16_t num;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	bool event_idx;

	/* free descriptors, chained through next, taken from the head and
	 * given back at the tail: returned in order, heads are reused in ring
	 * order and the ring words they need keep their values */
	uint16_t free_head, free_tail;
	uint16_t num_free;
	uint16_t avail_idx;      /* shadow of avail->idx (next slot to fill) */
	uint16_t last_kick_idx;  /* avail_idx at the last kick decision */
	uint16_t last_used_idx;  /* next used entry to consume */
	void **token;            /* per head: caller's token, NULL if free */
	uint16_t *chain_len;     /* per head: descriptors in that chain */
	uint64_t indirect_base;  /* optional: per head indirect tables (GPA) */
	struct vring_desc *indirect_tbl; /* host view of the same, or NULL */
	uint16_t indirect_max;   /* descriptors per indirect table */
	uint16_t *next;          /* private copy of desc[].next (free list and
				  * chains): never read back from shared memory */
	bool cb_enabled;         /* interrupts wanted (vq_drv_enable_cb) */
};

/* Bytes needed for desc + avail + used of num entries, with the standard
 * alignment (desc 16, avail 2, used 4; we align used to 4096 for tidiness). */
uint64_t vq_drv_ring_bytes(uint16_t num);

/*
 * Lay out rings inside mem (host pointer, zeroed by this call, at least
 * vq_drv_ring_bytes(num) long). Allocates the token arrays (malloc).
 * Returns 0 or -EINVAL / -ENOMEM.
 */
int vq_drv_init(struct vq_drv *vq, void *mem, uint16_t num, bool event_idx);
void vq_drv_fini(struct vq_drv *vq);

/* Start all ring indexes at idx instead of 0 (right after vq_drv_init, before
 * the device starts; the device side gets the same value as its
 * SET_VRING_BASE). Used to test 16-bit wrap-around. */
void vq_drv_set_base(struct vq_drv *vq, uint16_t idx);

/* Ring part addresses as host pointers (the caller converts them to UVA/GPA
 * for SET_VRING_ADDR). */
static inline void *vq_drv_desc(struct vq_drv *vq) { return vq->desc; }
static inline void *vq_drv_avail(struct vq_drv *vq) { return vq->avail; }
static inline void *vq_drv_used(struct vq_drv *vq) { return vq->used; }

/*
 * Optional indirect descriptors: tbl (host) / tbl_gpa is an array of
 * num * per_head descriptors. Once set, vq_drv_add_indirect() may be used.
 */
void vq_drv_set_indirect(struct vq_drv *vq, struct vring_desc *tbl,
			 uint64_t tbl_gpa, uint16_t per_head);

/*
 * Add a chain: out[] device-readable, then in[] device-writable. token must
 * not be NULL and comes back from vq_drv_get_used(). Not visible to the device
 * until vq_drv_kick_prepare(). Returns 0, -ENOSPC (not enough free
 * descriptors) or -EINVAL (no buffers).
 */
int vq_drv_add(struct vq_drv *vq, const struct vq_buf *out, unsigned out_n,
	       const struct vq_buf *in, unsigned in_n, void *token);
/* Same, through one indirect descriptor (uses one ring slot). Returns 0,
 * -ENOSPC (no free descriptor) or -EINVAL (no buffers, no indirect table set,
 * or more buffers than one indirect table holds). */
int vq_drv_add_indirect(struct vq_drv *vq, const struct vq_buf *out, unsigned out_n,
			const struct vq_buf *in, unsigned in_n, void *token);

/* Publish added chains (store-release of avail->idx). Returns true if the
 * device asked to be kicked (event-idx avail_event or VRING_USED_F_NO_NOTIFY). */
bool vq_drv_kick_prepare(struct vq_drv *vq);

/* Next completed chain: returns its token and sets *len (bytes the device
 * wrote), or NULL if none. Validates the device's id (a bad id returns NULL
 * and sets *len to UINT32_MAX once, so a buggy device cannot crash us). */
void *vq_drv_get_used(struct vq_drv *vq, uint32_t *len);

/* True if the device has published used entries we have not consumed. */
bool vq_drv_has_used(const struct vq_drv *vq);
/* How many: the device's word, at most the ring's size. */
uint16_t vq_drv_used_pending(const struct vq_drv *vq);

/* Ask for (true) or suppress (false) interrupts. Enabling returns false if
 * used entries raced in (the caller should poll again before sleeping). */
bool vq_drv_enable_cb(struct vq_drv *vq);
/* The same, but with event index the interrupt comes only once n (>= 1) more
 * entries are used (virtio's delayed callback: a transmit ring waits for a
 * batch of room, not for each buffer); false if that many already are. */
bool vq_drv_enable_cb_after(struct vq_drv *vq, uint16_t n);
void vq_drv_disable_cb(struct vq_drv *vq);

/* Entries published to the device and not yet given back. */
static inline uint16_t vq_drv_in_flight(const struct vq_drv *vq)
{
	return (uint16_t)(vq->last_kick_idx - vq->last_used_idx);
}

/* Free slots for vq_drv_add. */
static inline uint16_t vq_drv_num_free(const struct vq_drv *vq) { return vq->num_free; }

#endif /* VRDMA_VIRTIO_VQ_DRV_H */
