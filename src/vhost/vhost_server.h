/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user back-end: one listening UNIX socket per device, one front-end
 * connection at a time. The server speaks the protocol (messages, memory
 * table, vring setup, notifications); the device implementation only sees the
 * callbacks below and the started rings (struct vhost_vring with a ready
 * struct vq_dev).
 *
 * Every message is validated (size, fd count, ring index, region overlap,
 * mmap result). A bad message closes that one connection: the device gets
 * ring_stopped for each started ring, then reset and disconnected; the socket
 * keeps listening and accepts the next front-end. Other devices are untouched.
 *
 * Ring index widening (our extension, docs/spec.md): with protocol feature
 * VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX negotiated, SET_VRING_KICK/CALL/ERR
 * carry the ring index in bits 0-7 and 32-55 of the payload (index =
 * (u & 0xff) | ((u >> 32) & 0xffffff) << 8); bit 8 is still "no fd". Without
 * it, rings >= 256 cannot get fds and are started without one: the device
 * polls them (kick_fd == -1); for those, SET_VRING_ADDR stands in for the
 * kick that starts the ring (also after GET_VRING_BASE stopped it). With it,
 * every ring waits for its SET_VRING_KICK (fd or "no fd") like rings < 256.
 *
 * Limits a front-end cannot exceed (one loop thread serves every device):
 *  - fds: the kick, call and error eventfds of a session count against
 *    max_fds (VHOST_SERVER_MAX_CONN_FDS, vhost_server_set_max_fds()). Rings
 *    >= 256 take fds only once SET_VRING_NUM and SET_VRING_ADDR were given
 *    (rings < 256 take them at any time: QEMU and DPDK send CALL first).
 *    Beyond the budget a kick fd is closed and the ring is polled instead;
 *    a call or error fd is refused (NACK with REPLY_ACK, else the session
 *    is closed). Every refusal is counted in stats.fds_refused;
 *  - work per wake-up of the connection: VHOST_SERVER_MSG_BUDGET units, a
 *    message costing more the more rings it scans or starts and regions it
 *    maps; memory changes retry only the rings waiting for that memory;
 *  - mappings: see vhost_mem.h (live + dead region budget); ADD_MEM_REG
 *    beyond it is refused like the fd above;
 *  - accept() out of fds: the listening socket is retried from a timer.
 * A front-end that truncates shared memory under the device (SIGBUS, see
 * vhost_mem.h) is disconnected (stats.mem_faults).
 *
 * Runs on the loop thread; not thread-safe.
 */
#ifndef VRDMA_VHOST_SERVER_H
#define VRDMA_VHOST_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost/vhost_mem.h"
#include "virtio/vq_dev.h"

struct loop;
struct vhost_server;
struct vhost_user_msg;

/* Most rings one device may have: virtio numbers virtqueues with 16 bits
 * (the RoCE layout with its extension, 2N+2+M+2L+S, is kept within this).
 * Ring slots are created on first use, so the limit costs nothing. */
#define VHOST_SERVER_MAX_RINGS 65536u
/* Default most kick/call/err fds one session holds (about 2000 rings with a
 * kick and a call fd each). */
#define VHOST_SERVER_MAX_CONN_FDS 4096

struct vhost_vring {
	unsigned idx;
	uint16_t num;           /* SET_VRING_NUM (0 = not set) */
	uint16_t base;          /* SET_VRING_BASE */
	uint32_t addr_flags;    /* SET_VRING_ADDR flags */
	uint64_t desc_uva, avail_uva, used_uva;
	bool addr_set;
	int kick_fd;            /* -1: none (polled) */
	int call_fd;            /* -1: none (driver polls used ring) */
	int err_fd;             /* -1: none */
	bool kick_set;          /* SET_VRING_KICK received (fd or no-fd) */
	bool enabled;           /* SET_VRING_ENABLE (1 if protocol features not negotiated) */
	bool started;           /* device owns vq */
	struct vq_dev vq;
	struct vhost_mem_region *held[3]; /* regions of desc/avail/used while started */
	struct vhost_server *srv;
	void *dev_priv;         /* for the device */
};

struct vhost_dev_ops {
	/* Offered virtio feature bits (the server adds VHOST_USER_F_PROTOCOL_FEATURES). */
	uint64_t features;
	/* Offered protocol features (the server keeps only those it implements). */
	uint64_t protocol_features;
	/* Number of vrings the device has (ring indexes 0 .. max_rings-1). */
	uint32_t max_rings;
	/* Answer to GET_QUEUE_NUM (for virtio-net: max queue pairs). */
	uint64_t queue_num;

	/* Features acked by the front-end (SET_FEATURES). Return 0 or -errno to
	 * refuse (e.g. a required feature missing). */
	int (*set_features)(void *ctx, uint64_t features);
	/* GET_CONFIG / SET_CONFIG on the device config space. Return 0 or -errno. */
	int (*get_config)(void *ctx, uint32_t offset, void *buf, uint32_t len);
	int (*set_config)(void *ctx, uint32_t offset, const void *buf, uint32_t len);
	/* A ring became usable: num, addresses, kick, enabled; r->vq is ready. */
	void (*ring_started)(void *ctx, struct vhost_vring *r);
	/* A ring is being stopped (GET_VRING_BASE, disable, reset, disconnect).
	 * After return the server may unmap its memory. */
	void (*ring_stopped)(void *ctx, struct vhost_vring *r);
	/* The ring's kick eventfd fired (already drained). */
	void (*ring_kick)(void *ctx, struct vhost_vring *r);
	/* SET_STATUS from the front-end. */
	void (*set_status)(void *ctx, uint8_t status);
	/* Drop all device state (RESET_DEVICE, RESET_OWNER, disconnect); called
	 * after every ring was stopped. */
	void (*reset)(void *ctx);
	/* Memory table changed (region added / removed); optional. */
	void (*mem_changed)(void *ctx);
	void (*connected)(void *ctx);
	void (*disconnected)(void *ctx);
	/* Optional: every accepted connection is handed over (fd owned by the
	 * callee, closed on error) and the server keeps listening; it then has
	 * no session of its own. A device with several contexts serves each
	 * connection with a path-less server (vhost_server_attach_fd). */
	void (*accept)(void *ctx, int fd);
};

struct vhost_server_stats {
	uint64_t connections;
	uint64_t messages;
	uint64_t bad_messages;     /* validation failures (connection closed) */
	uint64_t kicks;
	uint64_t kicks_idle;       /* kicks with no new avail entry */
	uint64_t kicks_throttled;  /* kick fds left unwatched a while (idle kicks) */
	uint64_t calls;
	uint64_t refused;          /* requests refused, connection kept (NACK, or
				    * GET_CONFIG answered with an empty payload) */
	/* Additive */
	uint64_t mem_faults;       /* sessions closed: shared memory truncated */
	uint64_t fds_refused;      /* kick/call/err fds refused (budget, ring) */
	uint64_t accept_errors;    /* accept() failures (then retried later) */
	uint64_t grave_overflows;  /* sessions closed: removed regions in use
				    * could not be kept mapped */
	uint64_t ring_start_attempts; /* ring translations tried */
};

/* Create the socket at path (an existing stale socket file is replaced; a
 * live one or a non-socket file is not: EADDRINUSE / EEXIST) and start
 * listening. ops->max_rings must be 1 .. VHOST_SERVER_MAX_RINGS.
 * Additive: path may be NULL for a server without a socket, fed by
 * vhost_server_attach_fd() or vhost_server_handle_msg(); loop may then be NULL
 * too (kick fds are not watched). Returns NULL with errno set. */
struct vhost_server *vhost_server_new(struct loop *loop, const char *path,
				      const struct vhost_dev_ops *ops, void *ctx);
/* Close the connection (if any), stop every ring, unlink the socket. */
void vhost_server_free(struct vhost_server *s);

struct vhost_mem *vhost_server_mem(struct vhost_server *s);
/* Additive: the session fd budget (see above); applies to fds given from
 * now on. */
void vhost_server_set_max_fds(struct vhost_server *s, unsigned max_fds);
uint64_t vhost_server_features(const struct vhost_server *s);       /* acked */
uint64_t vhost_server_protocol_features(const struct vhost_server *s);
bool vhost_server_connected(const struct vhost_server *s);
const struct vhost_server_stats *vhost_server_stats(const struct vhost_server *s);
const char *vhost_server_path(const struct vhost_server *s);
/* If the front-end has hung up, end the session now (before its EOF is read
 * in turn) and return true. */
bool vhost_server_check_hangup(struct vhost_server *s);
/* Name in log messages of a server without a socket (copied). */
void vhost_server_set_name(struct vhost_server *s, const char *name);

/* The ring with this index, or NULL if it was never configured. */
struct vhost_vring *vhost_server_vring(struct vhost_server *s, unsigned idx);

/* After vq_dev_flush(): interrupt the driver if it asked for it. */
void vhost_vring_notify(struct vhost_vring *r);
/* Interrupt unconditionally (e.g. completion queue armed by REQ_NOTIFY_CQ). */
void vhost_vring_call(struct vhost_vring *r);

/* Device-side status bits (VIRTIO_CONFIG_S_NEEDS_RESET): OR-ed into what
 * GET_STATUS returns; a broken ring's err_fd is signalled. */
void vhost_server_set_status_bits(struct vhost_server *s, uint8_t bits);
uint8_t vhost_server_status(const struct vhost_server *s);
/* Report a broken ring: signals its err_fd and sets NEEDS_RESET. */
void vhost_vring_report_error(struct vhost_vring *r);

/* Drop the current connection (device misbehaviour handling, tests). Called
 * from a device callback while a message is being handled, it takes effect
 * when that message is done. */
void vhost_server_disconnect(struct vhost_server *s, const char *why);

/*
 * Additive (tests, fuzzing, --fd style start-up): adopt an already connected
 * stream socket as the front-end connection. Takes ownership of fd. Returns
 * 0, -EBUSY (a front-end is connected), -EINVAL (no loop) or a loop error (fd
 * closed in every error case).
 */
int vhost_server_attach_fd(struct vhost_server *s, int fd);

/*
 * Additive (tests, fuzzing): process one already received message as if it
 * came from the current front-end (a session starts if none is active). Takes
 * ownership of fds[0 .. nfds) in every case (used or closed). A reply, if
 * the request has one, is written into msg and not sent anywhere.
 * Returns 1 (reply in msg), 0 (no reply), or a negative errno: the message
 * was bad, it was counted in bad_messages and the session was closed
 * (rings stopped, device reset and disconnected).
 */
int vhost_server_handle_msg(struct vhost_server *s, struct vhost_user_msg *msg,
			    int *fds, int nfds);

/* Log the credentials of the peer of a connected socket (vhost_sec.c). */
void vhost_peer_log(const char *name, int fd);
/* A kick fd (non-blocking eventfd) that is drained by one read: 0, or
 * -EINVAL for a semaphore-mode eventfd (vhost_sec.c). */
int vhost_kick_fd_check(int fd);
/* Process-wide budget of ring eventfds held by every session (0: none):
 * beyond it a kick fd is replaced by polling and a call/err fd refused,
 * as for the per-connection limit. */
void vhost_fd_budget_set(unsigned max);
bool vhost_fd_budget_used_up(void);
void vhost_fd_budget_take(void);
void vhost_fd_budget_put(void);
unsigned vhost_fd_budget_held(void);

#endif /* VRDMA_VHOST_SERVER_H */
