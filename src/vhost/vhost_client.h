/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front-end (the driver's side of the socket), blocking.
 *
 * One struct vhost_client per connection. Every request is sent, and every
 * reply (explicit replies of GET_* requests, and REPLY_ACK acks when that
 * protocol feature is negotiated) is read and validated before the call
 * returns: request number, flags (version 1, reply bit), payload size, no
 * unexpected fds, the ring index echoed by GET_VRING_BASE, the offset/size
 * echoed by GET_CONFIG.
 *
 * Errors are negative errno values:
 *  -ENOTCONN  the connection is gone (the back-end closed it, a previous call
 *             failed in a way that desynchronised the stream, or
 *             vhost_client_close() was called). Sticky: every later call
 *             returns it too, without touching the socket.
 *  -EPROTO    the back-end sent a malformed or unexpected reply. The
 *             connection is shut down (later calls return -ENOTCONN).
 *  -ETIMEDOUT no reply within the client's timeout (the connection is shut
 *             down too: a late reply would desynchronise the stream).
 *  -EIO       REPLY_ACK came back non-zero (the back-end refused the
 *             request; the value is kept in last_ack). The connection stays.
 *  -EINVAL    bad argument (checked before anything is sent).
 *  -EOPNOTSUPP the request needs a protocol feature that is not negotiated.
 *
 * Not thread-safe: the owner serialises calls (libvrdma holds its device
 * control lock around them).
 */
#ifndef VRDMA_VHOST_CLIENT_H
#define VRDMA_VHOST_CLIENT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "vhost/vhost_proto.h"

/* Default time to wait for one reply. */
#define VHOST_CLIENT_TIMEOUT_MS 30000

struct vhost_client {
	int fd;                      /* socket (kept, shut down, when dead) */
	bool dead;                   /* connection unusable (sticky) */
	int timeout_ms;              /* per reply; < 0 = wait forever */
	uint64_t features;           /* GET_FEATURES answer (0 until asked) */
	uint64_t protocol_features;  /* negotiated (SET_PROTOCOL_FEATURES) */
	uint64_t last_ack;           /* last non-zero REPLY_ACK value */
	uint64_t requests;           /* messages sent */
};

/* u64 payload of SET_VRING_KICK/CALL/ERR for ring idx. Standard encoding: idx
 * in bits 0-7 (idx must be < 256). Wide encoding (protocol feature
 * VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX): bits 0-7 = idx & 0xff, bits 32-55 =
 * idx >> 8, so idx < 2^32. Bit 8 (VHOST_USER_VRING_NOFD_MASK) is "no fd".
 * Returns 0, or -EINVAL if idx does not fit the encoding. */
static inline int vhost_user_vring_fd_payload(unsigned idx, bool wide, bool nofd,
					      uint64_t *u)
{
	uint64_t v;

	if (!wide) {
		if (idx > VHOST_USER_VRING_IDX_MASK)
			return -EINVAL;
		v = idx;
	} else {
		v = (idx & VHOST_USER_VRING_IDX_MASK) |
		    (((uint64_t)idx >> 8) & VHOST_USER_VRING_WIDE_IDX_MASK)
			    << VHOST_USER_VRING_WIDE_IDX_SHIFT;
	}
	if (nofd)
		v |= VHOST_USER_VRING_NOFD_MASK;
	*u = v;
	return 0;
}

/* Inverse of the above (used by tests and fake back-ends): the ring index
 * carried by payload u. */
static inline unsigned vhost_user_vring_fd_payload_idx(uint64_t u, bool wide)
{
	unsigned idx = (unsigned)(u & VHOST_USER_VRING_IDX_MASK);

	if (wide)
		idx |= (unsigned)((u >> VHOST_USER_VRING_WIDE_IDX_SHIFT) &
				  VHOST_USER_VRING_WIDE_IDX_MASK) << 8;
	return idx;
}

/* Connect to the back-end's UNIX socket at path. Returns 0 or -errno
 * (-ENAMETOOLONG, connect's errno). */
int vhost_client_connect(struct vhost_client *c, const char *path);

/* Adopt an already connected stream socket (tests, socketpair). Takes
 * ownership of fd. Returns 0 or -EINVAL. */
int vhost_client_init_fd(struct vhost_client *c, int fd);

/* Close the socket (if open). Later calls return -ENOTCONN. */
void vhost_client_close(struct vhost_client *c);

/* The socket fd (to poll for HUP; a dead connection's socket is shut down
 * but stays open, so it polls readable until vhost_client_close()), or -1. */
static inline int vhost_client_fd(const struct vhost_client *c) { return c->fd; }
static inline bool vhost_client_alive(const struct vhost_client *c) { return !c->dead; }

/* Mark the connection dead (e.g. the owner saw POLLHUP on the socket). */
void vhost_client_set_dead(struct vhost_client *c);

/* Non-blocking check of the socket: returns 0 if it looks alive, -ENOTCONN
 * (and marks the client dead) on HUP/error/EOF or on unsolicited data (the
 * back-end never speaks first on this socket). */
int vhost_client_check_alive(struct vhost_client *c);

/* True if protocol feature bit is negotiated. */
static inline bool vhost_client_has_pf(const struct vhost_client *c, unsigned bit)
{
	return (c->protocol_features >> bit) & 1;
}

/* Each returns 0 or a negative errno as described at the top. */
int vhost_client_get_features(struct vhost_client *c, uint64_t *features);
int vhost_client_set_features(struct vhost_client *c, uint64_t features);
int vhost_client_get_protocol_features(struct vhost_client *c, uint64_t *pf);
/* Records pf as negotiated on success (REPLY_ACK applies from the next
 * request on). */
int vhost_client_set_protocol_features(struct vhost_client *c, uint64_t pf);
int vhost_client_set_owner(struct vhost_client *c);
int vhost_client_reset_owner(struct vhost_client *c);
int vhost_client_get_queue_num(struct vhost_client *c, uint64_t *num);
/* Needs CONFIGURE_MEM_SLOTS. */
int vhost_client_get_max_mem_slots(struct vhost_client *c, uint64_t *slots);

/* One region with its fd (not consumed: the caller keeps it). Needs
 * CONFIGURE_MEM_SLOTS. */
int vhost_client_add_mem_reg(struct vhost_client *c,
			     const struct vhost_user_mem_region *r, int fd);
int vhost_client_rem_mem_reg(struct vhost_client *c,
			     const struct vhost_user_mem_region *r);
/* The whole table at once (at most VHOST_USER_MEMORY_MAX_NREGIONS regions,
 * fds[i] for regions[i], not consumed). */
int vhost_client_set_mem_table(struct vhost_client *c,
			       const struct vhost_user_mem_region *regions,
			       const int *fds, unsigned n);

int vhost_client_set_vring_num(struct vhost_client *c, unsigned idx, unsigned num);
int vhost_client_set_vring_addr(struct vhost_client *c,
				const struct vhost_user_vring_addr *addr);
int vhost_client_set_vring_base(struct vhost_client *c, unsigned idx, unsigned base);
/* Stops the ring; *base is the back-end's next avail index. */
int vhost_client_get_vring_base(struct vhost_client *c, unsigned idx, uint32_t *base);
/* fd < 0 sends "no fd" (bit 8): the back-end polls (KICK), never interrupts
 * (CALL) or has no error fd (ERR). idx >= 256 needs the wide-index protocol
 * feature (else -EINVAL). fd is not consumed. */
int vhost_client_set_vring_kick(struct vhost_client *c, unsigned idx, int fd);
int vhost_client_set_vring_call(struct vhost_client *c, unsigned idx, int fd);
int vhost_client_set_vring_err(struct vhost_client *c, unsigned idx, int fd);
int vhost_client_set_vring_enable(struct vhost_client *c, unsigned idx, bool enable);

/* Needs CONFIG. len <= VHOST_USER_MAX_CONFIG_SIZE. */
int vhost_client_get_config(struct vhost_client *c, uint32_t offset, void *buf,
			    uint32_t len);
int vhost_client_set_config(struct vhost_client *c, uint32_t offset, const void *buf,
			    uint32_t len);
/* Need STATUS. */
int vhost_client_set_status(struct vhost_client *c, uint8_t status);
int vhost_client_get_status(struct vhost_client *c, uint8_t *status);
/* Needs RESET_DEVICE. */
int vhost_client_reset_device(struct vhost_client *c);

#endif /* VRDMA_VHOST_CLIENT_H */
