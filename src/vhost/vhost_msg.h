/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user message codec: framing over a UNIX stream socket (header,
 * payload, SCM_RIGHTS fds), per-request validation of the payload size and the
 * number of fds, and reply building. Shared by the back-end (vhost_server.c)
 * and usable by any front-end.
 *
 * Framing: a message is a 12-byte header followed by hdr.size payload bytes
 * (at most sizeof(payload), 4096). File descriptors travel as SCM_RIGHTS
 * ancillary data attached to the message's first byte; the receiver accepts
 * them with any part of the message, at most VHOST_USER_MAX_FDS in total.
 *
 * The receiver never blocks the caller's loop: struct vhost_msg_rx is a small
 * state machine that accumulates bytes from a non-blocking socket and reports
 * a message once it is complete.
 *
 * Every fd received is owned by the caller from the moment a function hands
 * it out; fds that belong to a message that turns out to be malformed are
 * closed by the codec.
 */
#ifndef VRDMA_VHOST_MSG_H
#define VRDMA_VHOST_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost/vhost_proto.h"

#define VHOST_MSG_HDR_SIZE sizeof(struct vhost_user_hdr)
#define VHOST_MSG_MAX_PAYLOAD sizeof(((struct vhost_user_msg *)0)->payload)

/* Receive state of one connection. */
struct vhost_msg_rx {
	struct vhost_user_msg msg;
	size_t have;                     /* bytes of header + payload received */
	int fds[VHOST_USER_MAX_FDS];
	int nfds;
};

/* Start empty (no fds held). */
void vhost_msg_rx_init(struct vhost_msg_rx *rx);

/*
 * Read what the non-blocking socket has, up to the end of the current message.
 * Returns 1 when rx->msg holds a whole message (with rx->fds[0 .. nfds)),
 * 0 when more bytes are needed (EAGAIN), or a negative errno; the connection
 * is then unusable: -ECONNRESET (peer closed, also mid-message), -EMSGSIZE
 * (payload larger than 4096 bytes, or more than VHOST_USER_MAX_FDS fds),
 * or the errno of recvmsg(). On error the fds received so far are closed.
 */
int vhost_msg_rx_read(struct vhost_msg_rx *rx, int sock);

/*
 * Move the complete message's fds to the caller (fds must have room for
 * VHOST_USER_MAX_FDS) and make rx ready for the next message. Returns the
 * number of fds moved.
 */
int vhost_msg_rx_take(struct vhost_msg_rx *rx, int *fds);

/* Close the fds held and start empty again. */
void vhost_msg_rx_reset(struct vhost_msg_rx *rx);

/*
 * Send header + hdr.size payload bytes, with nfds fds (<= VHOST_USER_MAX_FDS)
 * attached to the first byte. MSG_NOSIGNAL: a closed peer gives -EPIPE, never
 * SIGPIPE. When the socket is full the call waits up to timeout_ms (< 0:
 * forever; 0: not at all). Returns 0, -EINVAL (bad arguments), -EAGAIN (timed
 * out: if part of the message went out the stream is now corrupt) or the
 * errno of sendmsg(). The fds stay the caller's.
 */
int vhost_msg_send(int sock, const struct vhost_user_msg *msg, const int *fds,
		   int nfds, int timeout_ms);

/*
 * Receive one whole message from a socket (blocking or not), waiting up to
 * timeout_ms (< 0: forever) for it to be complete. Returns 0 with *nfds fds
 * stored in fds (room for VHOST_USER_MAX_FDS; the caller owns them; with fds
 * or nfds NULL any fds that came are closed), -ETIMEDOUT, or an error of
 * vhost_msg_rx_read().
 */
int vhost_msg_recv(int sock, struct vhost_user_msg *msg, int *fds, int *nfds,
		   int timeout_ms);

/*
 * Validate a front-end request as far as the message alone allows: version 1,
 * reply bit clear, a known request number, the payload size this request
 * needs (SET_MEM_TABLE: 8 + 32 * nregions with nregions <= 8; GET/SET_CONFIG:
 * 12 + size with offset + size <= 256; fixed sizes otherwise) and the number
 * of fds it carries (SET_MEM_TABLE: one per region; ADD_MEM_REG: one;
 * REM_MEM_REG: zero or one; SET_VRING_KICK/CALL/ERR: one unless the "no fd"
 * bit is set; none for the others).
 * Returns 0, -ENOSYS (unknown request number), -EPROTO (flags), -EMSGSIZE
 * (payload size), -EBADF (number of fds) or -EINVAL (a field the framing
 * depends on is out of range: nregions, config offset/size).
 */
int vhost_msg_check_request(const struct vhost_user_msg *msg, int nfds);

/*
 * Validate a back-end reply to request req: flags exactly version 1 + reply
 * bit, the same request number, payload size == size. Returns 0, -EPROTO or
 * -EMSGSIZE.
 */
int vhost_msg_check_reply(const struct vhost_user_msg *msg, uint32_t req,
			  uint32_t size);

/* True if the request has a reply of its own (GET_*), so NEED_REPLY adds no
 * ack. */
bool vhost_msg_has_reply(uint32_t req);

/* Name of a request for logs ("SET_VRING_KICK"), "UNKNOWN" if out of range. */
const char *vhost_msg_name(uint32_t req);

/* Fill a request header: version 1, no payload yet. */
void vhost_msg_init(struct vhost_user_msg *msg, uint32_t req, uint32_t size);

/* Turn a received request into its reply header with size payload bytes
 * (flags = version 1 + reply bit; request number kept). */
void vhost_msg_make_reply(struct vhost_user_msg *msg, uint32_t size);

/* Turn a received request into a u64 reply (REPLY_ACK: 0 = success). */
void vhost_msg_reply_u64(struct vhost_user_msg *msg, uint64_t val);

/* Bytes on the wire: header + payload. */
static inline size_t vhost_msg_len(const struct vhost_user_msg *msg)
{
	return VHOST_MSG_HDR_SIZE + msg->hdr.size;
}

static inline bool vhost_msg_need_reply(const struct vhost_user_msg *msg)
{
	return (msg->hdr.flags & VHOST_USER_NEED_REPLY_MASK) != 0;
}

/*
 * Decode the u64 payload of SET_VRING_KICK/CALL/ERR: ring index (standard
 * bits 0-7, or with the wide-index extension bits 0-7 and 32-55) and the
 * "no fd" bit. Returns 0, or -EINVAL if reserved bits are set.
 */
int vhost_msg_vring_fd_decode(uint64_t u, bool wide, uint32_t *idx, bool *nofd);

/* Close n fds (skipping negative entries) and set them to -1. */
void vhost_msg_close_fds(int *fds, int n);

#endif /* VRDMA_VHOST_MSG_H */
