/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split virtqueue, device side (virtio 1.x section 2.7).
 *
 * The rings live in driver memory, which is untrusted: every index read from
 * the avail ring, every descriptor (index, flags, next, address, length,
 * indirect table) is validated before use. On a violation the queue becomes
 * "broken": it stops touching the rings for good, vq_dev_pop() returns
 * -EIO, and the owner marks the device DEVICE_NEEDS_RESET. A broken queue never
 * crashes and never reads or writes outside the driver's shared memory.
 *
 * Notification suppression, both ways:
 *  - device -> driver (interrupts): VIRTIO_RING_F_EVENT_IDX used_event, or
 *    VRING_AVAIL_F_NO_INTERRUPT; see vq_dev_should_notify().
 *  - driver -> device (kicks): vq_dev_set_notify(false) sets
 *    VRING_USED_F_NO_NOTIFY (or stops moving avail_event) while the device
 *    polls, so a busy-polling device costs the driver no system call.
 */
#ifndef VRDMA_VIRTIO_VQ_DEV_H
#define VRDMA_VIRTIO_VQ_DEV_H

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct vhost_mem;
struct vhost_mem_region;

/*
 * The event-index test of virtio 1.x 2.7.7.2 / 2.7.10.2: true if event lies in
 * [old, new_idx) modulo 2^16, i.e. the other side asked to be notified when
 * the index moved past event, and this update (old -> new_idx) did that.
 */
static inline bool vq_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/* Most iovecs one element may have (device-readable + device-writable),
 * after splitting descriptors over memory regions. Longer chains are an
 * error of that element (the queue is broken: the driver violated the limit
 * we document in docs/spec.md). */
#define VQ_MAX_IOV 64

struct vq_elem {
	uint16_t head;         /* descriptor index to give back in vq_dev_push */
	uint16_t out_num;      /* device-readable iovecs: iov[0 .. out_num) */
	uint16_t in_num;       /* device-writable iovecs: iov[out_num .. out_num+in_num) */
	uint32_t out_len;      /* total bytes readable */
	uint32_t in_len;       /* total bytes writable */
	struct iovec iov[VQ_MAX_IOV];
};

struct vq_dev_stats {
	uint64_t popped;
	uint64_t pushed;
	uint64_t notified;     /* notifications that were needed */
	uint64_t suppressed;   /* notifications skipped thanks to suppression */
	uint64_t errors;       /* violations that broke the queue */
};

struct vq_dev {
	uint16_t num;               /* ring size, power of two, <= 32768 */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	const struct vhost_mem *mem;
	/* the region the last buffer was in, while mem->generation is
	 * hint_gen: most buffers of a ring lie in one (vq_dev_xlate) */
	const struct vhost_mem_region *hint;
	uint64_t hint_gen;

	uint16_t last_avail_idx;    /* next avail entry to consume */
	uint16_t used_idx;          /* shadow of used->idx (next slot to fill) */
	uint16_t shadow_avail_idx;  /* avail->idx as last read (validated) */
	uint16_t used_published;    /* used->idx as last flushed */
	uint16_t signalled_used;    /* used_idx at the last notification */
	bool signalled_used_valid;
	bool event_idx;             /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect;              /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	bool notify_enabled;        /* kicks wanted (see vq_dev_set_notify) */
	bool broken;
	const char *error;          /* first violation, for logs and counters */
	struct vq_dev_stats stats;
};

/*
 * Bind a queue to rings already translated to host pointers by the caller
 * (the caller checks that desc/avail/used of this size are inside shared
 * memory). last_avail_idx is the SET_VRING_BASE value; the used index is
 * taken from used->idx (0 on a fresh ring, the old value on reconnection).
 * Kicks start enabled. Returns 0 or -EINVAL (num not a power of two or
 * > 32768, NULL ring, ring not aligned as 2.7 requires: desc 16, avail 2,
 * used 4).
 */
int vq_dev_init(struct vq_dev *vq, const struct vhost_mem *mem, uint16_t num,
		struct vring_desc *desc, struct vring_avail *avail,
		struct vring_used *used, uint16_t last_avail_idx, bool event_idx,
		bool indirect);

/* Bytes each ring part occupies for num entries (with event-idx fields). */
uint64_t vq_desc_size(uint16_t num);
uint64_t vq_avail_size(uint16_t num);
uint64_t vq_used_size(uint16_t num);

/* Number of avail entries not yet popped (0 if broken). A return of 0 with
 * kicks enabled also re-arms the event index, so it is safe to sleep after it
 * (the same holds for vq_dev_pop() returning 0). */
uint16_t vq_dev_avail(struct vq_dev *vq);

/*
 * Take the next available chain and translate it into elem (addresses checked
 * against shared memory, chain length, loops, indirect tables, ordering:
 * device-writable descriptors must follow device-readable ones).
 * Returns 1 with elem filled, 0 if the ring is empty, -EIO if the queue is (or
 * just became) broken.
 */
int vq_dev_pop(struct vq_dev *vq, struct vq_elem *elem);

/*
 * Prefetch hints for a batch of pops; neither validates nor consumes
 * anything, and what they read may change before the entry is popped.
 * vq_dev_prefetch_desc starts loading the head descriptor of the avail entry
 * `ahead` places after the next one; vq_dev_peek returns the host address of
 * that descriptor's buffer (*len bytes, all in one memory region) when it is
 * a direct one, else NULL. Both look only at entries the last avail index
 * read published (never re-reading it) and return nothing beyond them.
 */
void vq_dev_prefetch_desc(const struct vq_dev *vq, uint16_t ahead);
const void *vq_dev_peek(const struct vq_dev *vq, uint16_t ahead, uint32_t *len);

/* Put back the last popped element (e.g. no resources to handle it now). */
void vq_dev_unpop(struct vq_dev *vq);

/* Write one used entry {head, len} without publishing it. */
void vq_dev_fill(struct vq_dev *vq, uint16_t head, uint32_t len);
/* Publish all filled entries (store-release of used->idx). */
void vq_dev_flush(struct vq_dev *vq);
/* fill + flush. */
void vq_dev_push(struct vq_dev *vq, uint16_t head, uint32_t len);

/* After a flush: true if the driver wants an interrupt (event-idx or flags).
 * Updates signalled_used. */
bool vq_dev_should_notify(struct vq_dev *vq);

/* Enable (true) or suppress (false) kicks from the driver. When enabling, the
 * caller must re-check vq_dev_avail() afterwards: an entry may have been added
 * before the driver saw the change. */
void vq_dev_set_notify(struct vq_dev *vq, bool enable);

/* Mark broken with a reason (also used by callers that find a malformed
 * request inside a well-formed chain and choose to stop the queue). */
void vq_dev_set_broken(struct vq_dev *vq, const char *why);

/* Copy helpers over an element's iovecs. They return bytes copied. */
size_t vq_elem_read(const struct vq_elem *e, size_t off, void *dst, size_t len);
size_t vq_elem_write(const struct vq_elem *e, size_t off, const void *src, size_t len);

#endif /* VRDMA_VIRTIO_VQ_DEV_H */
