/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user protocol: message numbers, flags, payload layouts (QEMU's
 * docs/interop/vhost-user.rst is the reference for the standard part).
 * Shared by the back-end (vhost_server.c) and the front-end (vhost_client.c).
 */
#ifndef VRDMA_VHOST_PROTO_H
#define VRDMA_VHOST_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Front-end -> back-end requests. */
enum vhost_user_request {
	VHOST_USER_NONE = 0,
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_SEND_RARP = 19,
	VHOST_USER_NET_SET_MTU = 20,
	VHOST_USER_SET_BACKEND_REQ_FD = 21,
	VHOST_USER_IOTLB_MSG = 22,
	VHOST_USER_SET_VRING_ENDIAN = 23,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_CREATE_CRYPTO_SESSION = 26,
	VHOST_USER_CLOSE_CRYPTO_SESSION = 27,
	VHOST_USER_POSTCOPY_ADVISE = 28,
	VHOST_USER_POSTCOPY_LISTEN = 29,
	VHOST_USER_POSTCOPY_END = 30,
	VHOST_USER_GET_INFLIGHT_FD = 31,
	VHOST_USER_SET_INFLIGHT_FD = 32,
	VHOST_USER_GPU_SET_SOCKET = 33,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_VRING_KICK = 35,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_ADD_MEM_REG = 37,
	VHOST_USER_REM_MEM_REG = 38,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
	VHOST_USER_MAX_REQUEST
};

/* Virtio feature bit that enables the protocol-feature messages. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol feature bits. */
#define VHOST_USER_PROTOCOL_F_MQ 0
#define VHOST_USER_PROTOCOL_F_LOG_SHMFD 1
#define VHOST_USER_PROTOCOL_F_RARP 2
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_NET_MTU 4
#define VHOST_USER_PROTOCOL_F_BACKEND_REQ 5
#define VHOST_USER_PROTOCOL_F_CROSS_ENDIAN 6
#define VHOST_USER_PROTOCOL_F_CRYPTO_SESSION 7
#define VHOST_USER_PROTOCOL_F_PAGEFAULT 8
#define VHOST_USER_PROTOCOL_F_CONFIG 9
#define VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD 10
#define VHOST_USER_PROTOCOL_F_HOST_NOTIFIER 11
#define VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD 12
#define VHOST_USER_PROTOCOL_F_RESET_DEVICE 13
#define VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS 14
#define VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15
#define VHOST_USER_PROTOCOL_F_STATUS 16
/*
 * vrdma extension (docs/spec.md, "Ring index widening"): KICK/CALL/ERR carry
 * the ring index in bits 0-7 and 32-55 of their u64 payload. A bit far above
 * the standard ones so it never collides with a future standard feature.
 */
#define VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX 48

/* Header flags. */
#define VHOST_USER_VERSION 0x1
#define VHOST_USER_VERSION_MASK 0x3
#define VHOST_USER_REPLY_MASK (0x1 << 2)
#define VHOST_USER_NEED_REPLY_MASK (0x1 << 3)

/* u64 payload of SET_VRING_KICK/CALL/ERR. */
#define VHOST_USER_VRING_IDX_MASK 0xffull
#define VHOST_USER_VRING_NOFD_MASK (0x1ull << 8)
#define VHOST_USER_VRING_WIDE_IDX_SHIFT 32
#define VHOST_USER_VRING_WIDE_IDX_MASK 0xffffffull

/* Most fds one message may carry (SET_MEM_TABLE). */
#define VHOST_USER_MAX_FDS 8
/* Regions in SET_MEM_TABLE. */
#define VHOST_USER_MEMORY_MAX_NREGIONS 8
/* Largest config space GET/SET_CONFIG may touch. */
#define VHOST_USER_MAX_CONFIG_SIZE 256

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes following the header */
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_hdr) == 12, "vhost-user header");

struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_vring_state) == 8, "vring state");

struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_vring_addr) == 40, "vring addr");

struct vhost_user_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_mem_region) == 32, "mem region");

struct vhost_user_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region regions[VHOST_USER_MEMORY_MAX_NREGIONS];
} __attribute__((packed));
_Static_assert(offsetof(struct vhost_user_memory, regions) == 8, "mem table");

/* ADD_MEM_REG / REM_MEM_REG payload. */
struct vhost_user_single_mem_region {
	uint64_t padding;
	struct vhost_user_mem_region region;
} __attribute__((packed));
_Static_assert(sizeof(struct vhost_user_single_mem_region) == 40, "single region");

struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
} __attribute__((packed));
_Static_assert(offsetof(struct vhost_user_config, region) == 12, "config");
#define VHOST_USER_CONFIG_HDR_SIZE 12

/* A whole message as it travels (header + largest payload). */
struct vhost_user_msg {
	struct vhost_user_hdr hdr;
	union {
		uint64_t u64;
		struct vhost_user_vring_state state;
		struct vhost_user_vring_addr addr;
		struct vhost_user_memory memory;
		struct vhost_user_single_mem_region mem_reg;
		struct vhost_user_config config;
		uint8_t raw[4096];
	} payload;
} __attribute__((packed));

#endif /* VRDMA_VHOST_PROTO_H */
