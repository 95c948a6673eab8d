/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Words of a split virtqueue that both sides read and write (descriptor
 * fields, ring indexes and entries, event indexes): little-endian, loaded and
 * stored whole, with the ordering each call names. Shared by the device side
 * (vq_dev.c) and the driver side (vq_drv.c).
 */
#ifndef VRDMA_VIRTIO_VQ_RING_H
#define VRDMA_VIRTIO_VQ_RING_H

#include <endian.h>
#include <stdint.h>

static inline uint16_t ld16(const void *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

static inline uint16_t ld16_acquire(const void *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE));
}

static inline uint32_t ld32(const void *p)
{
	return le32toh(__atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED));
}

static inline void st16(void *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELAXED);
}

static inline void st16_release(void *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELEASE);
}

static inline void st32(void *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, htole32(v), __ATOMIC_RELAXED);
}

#endif /* VRDMA_VIRTIO_VQ_RING_H */
