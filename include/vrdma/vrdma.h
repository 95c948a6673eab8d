/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma: userspace virtio-net (+ RoCE) driver for the vrdma back-end.
 *
 * A struct vrdma_dev is one virtio-net device served by the vhost-user-rdma
 * daemon over a vhost-user UNIX socket. libvrdma plays the role a guest
 * kernel's virtio-net driver plays for a VM: it negotiates features, shares
 * its memory with the back-end (memfd regions), lays out virtqueues, and then
 * moves Ethernet frames and control commands through them.
 *
 * Errors are negative errno values (functions returning pointers return NULL
 * and set errno). Once the back-end goes away (socket closed, protocol error)
 * every call returns -ENOTCONN (never crashes, never blocks for ever);
 * the event fd becomes readable so a sleeping application notices.
 *
 * Threads: the control path (vrdma_dev_open/close, vrdma_ctrl_*,
 * vrdma_mem_share/unshare) is thread-safe: it is serialised by one per-device
 * lock. The data path is per queue and NOT thread-safe: one thread at a time
 * may use the receive side (vrdma_net_recv, vrdma_net_wait with
 * VRDMA_WAIT_RX), one thread at a time the transmit side (vrdma_net_send,
 * vrdma_net_wait with VRDMA_WAIT_TX); the two sides may run in two threads.
 * vrdma_dev_close must not race with anything else on the device.
 *
 * fork(): a device is unusable in the child (its socket is closed there; do
 * not call anything on it, not even close). Memory shared with
 * vrdma_mem_share() becomes private again in the child (a copy taken in the
 * child right after fork), so the child keeps ordinary copy-on-write
 * semantics as if nothing had been registered.
 */
#ifndef VRDMA_VRDMA_H
#define VRDMA_VRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vrdma_dev;

/* Options for vrdma_dev_open(). A zero-filled struct (or NULL) means
 * defaults. */
struct vrdma_dev_opts {
	/* Entries per net/control virtqueue: power of two, 2..32768; 0 = 256. */
	uint32_t ring_size;
	/* Wait for one control command or vhost-user reply, in ms;
	 * 0 = 30000; < 0 = wait for ever (only a dead back-end ends it). */
	int32_t timeout_ms;
	/* Virtio feature bits NOT to negotiate even if offered (testing,
	 * e.g. 1ull << VIRTIO_RING_F_EVENT_IDX). */
	uint64_t features_off;
	/* vhost-user protocol feature bits NOT to negotiate. */
	uint64_t protocol_features_off;
	/* Size of the first shared-memory arena in bytes; 0 = 4 MiB. */
	uint64_t arena_size;
};

/*
 * Connect to the back-end at socket_path, negotiate (VERSION_1, MAC, MTU,
 * STATUS, CTRL_VQ, CTRL_RX, CTRL_MAC_ADDR, EVENT_IDX, INDIRECT_DESC, ROCE and
 * ROCE_EXT if offered), read the config space (40 bytes with ROCE_EXT), set up receive queue 0, transmit queue 1
 * and the control queue 2, fill the receive queue and set DRIVER_OK.
 * Returns the device, or NULL with errno set (ECONNREFUSED/ENOENT: no
 * back-end; ENOTSUP: VERSION_1 not offered; EPROTO: bad reply; ENOTCONN:
 * back-end went away; ...).
 */
struct vrdma_dev *vrdma_dev_open(const char *socket_path, const struct vrdma_dev_opts *opts);

/* Reset the device (if still connected), close the socket, free everything.
 * Memory still shared through vrdma_mem_share() with this device is
 * unshared (its handles become invalid). NULL is ignored. */
void vrdma_dev_close(struct vrdma_dev *dev);

/*
 * A file descriptor that polls readable (level-triggered) when the receive
 * queue may have frames or the back-end died. It is an epoll fd; add it to
 * your own poll/epoll/select set, never read it. Spurious wake-ups happen:
 * call vrdma_net_recv() until -EAGAIN, then sleep again. Returns the fd.
 */
int vrdma_dev_event_fd(const struct vrdma_dev *dev);

/* Copies the current MAC address to mac[6]. */
void vrdma_dev_mac(const struct vrdma_dev *dev, uint8_t mac[6]);
/* MTU in bytes (the largest frame is MTU + 14; frames carry no FCS). */
uint16_t vrdma_dev_mtu(const struct vrdma_dev *dev);
/* Negotiated virtio feature bits. */
uint64_t vrdma_dev_features(const struct vrdma_dev *dev);
/* Negotiated vhost-user protocol feature bits. */
uint64_t vrdma_dev_protocol_features(const struct vrdma_dev *dev);
/* True unless the back-end connection is known to be gone. */
bool vrdma_dev_alive(const struct vrdma_dev *dev);
/* Link state from the config space (true when VIRTIO_NET_F_STATUS is not
 * negotiated). Reads the config space: returns 1 up, 0 down, or -errno. */
int vrdma_dev_link_up(struct vrdma_dev *dev);
/* RoCE limits from the config space (0 when VIRTIO_NET_F_ROCE is not
 * negotiated). On a virtio-rdma device: max_qp + 1 QP indexes (0 is
 * reserved, 1..max_qp are its virtqueue pairs) and max_cq. */
uint32_t vrdma_dev_max_rdma_qps(const struct vrdma_dev *dev);
uint32_t vrdma_dev_max_rdma_cqs(const struct vrdma_dev *dev);
/* max_rdma_srqs from the config space (0 when VIRTIO_NET_F_ROCE_EXT is not
 * negotiated). */
uint32_t vrdma_dev_max_rdma_srqs(const struct vrdma_dev *dev);
/* Whether the device is the standalone virtio-rdma device (virtio id 42,
 * docs/spec.md "The virtio-rdma device") rather than a virtio-net device:
 * it has no Ethernet queues (the vrdma_net_* calls fail: they have no
 * queue) and the RDMA API drives it through its own commands and queue
 * elements. */
bool vrdma_dev_is_virtio_rdma(const struct vrdma_dev *dev);

struct vrdma_dev_stats {
	uint64_t tx_frames, tx_bytes, tx_kicks, tx_full;
	uint64_t rx_frames, rx_bytes, rx_kicks, rx_bad, rx_truncated;
	uint64_t ctrl_cmds, ctrl_errors;
	uint64_t mem_regions;   /* regions currently announced to the back-end */
	uint64_t shm_bytes;     /* bytes of shared-memory arenas */
};
/* Snapshot of the counters (the data-path ones may be slightly stale when
 * read from another thread). */
void vrdma_dev_get_stats(const struct vrdma_dev *dev, struct vrdma_dev_stats *st);

/* ---- Ethernet frames ------------------------------------------------------ */

/*
 * Queue one Ethernet frame (destination MAC first, no FCS, 14 <= len <=
 * MTU + 14) for transmission: it is copied into a transmit buffer behind a
 * zeroed 12-byte virtio_net_hdr_v1, so frame may be reused at once.
 * Returns 0, -EAGAIN (transmit ring full: retry, or vrdma_net_wait() with
 * VRDMA_WAIT_TX), -EINVAL / -EMSGSIZE (bad length), -ENOTCONN.
 */
int vrdma_net_send(struct vrdma_dev *dev, const void *frame, size_t len);

/*
 * Queue up to n frames (frames[i] of lens[i] bytes, each as for
 * vrdma_net_send) and notify the device once. Returns how many were queued
 * (0..n; fewer when the ring fills), or -errno if none was: -EAGAIN, -EINVAL
 * / -EMSGSIZE (frame 0 has a bad length; a later bad frame ends the burst
 * before it), -ENOTCONN.
 */
int vrdma_net_send_burst(struct vrdma_dev *dev, const void *const *frames,
			 const size_t *lens, unsigned n);

/*
 * Non-blocking: copy the next received frame into buf (at most cap bytes)
 * and return its full length; a return value > cap means the frame was
 * truncated (like MSG_TRUNC). Returns -EAGAIN if no frame is waiting,
 * -ENOTCONN, or -EIO if the device broke the receive ring.
 */
ssize_t vrdma_net_recv(struct vrdma_dev *dev, void *buf, size_t cap);

#define VRDMA_WAIT_RX 0x1 /* a frame can be received */
#define VRDMA_WAIT_TX 0x2 /* vrdma_net_send() has room */

/*
 * Block until one of the conditions in events holds, timeout_ms passes (< 0:
 * no timeout) or the back-end dies. Returns the mask of conditions that hold
 * (> 0), 0 on timeout, -ENOTCONN, -EINVAL, -EIO (transmit ring full of
 * buffers the device gave back under bad ids), or another -errno of poll().
 */
int vrdma_net_wait(struct vrdma_dev *dev, unsigned events, int timeout_ms);

/*
 * Block until the device has consumed every frame queued with
 * vrdma_net_send() (e.g. before vrdma_dev_close(), which resets the device
 * and may otherwise overtake frames still in the ring). Transmit side.
 * Returns 0, -ETIMEDOUT (timeout_ms passed; < 0 waits for ever), -ENOTCONN,
 * -EIO (the device gave buffers back under ids it was never given: those
 * frames may be lost), or another -errno of poll().
 */
int vrdma_net_flush(struct vrdma_dev *dev, int timeout_ms);

/* ---- control queue --------------------------------------------------------- */

/*
 * Execute one control-queue command (virtio-net "struct virtio_net_ctrl",
 * with the RoCE extension's ack-specific-data). Buffers as the device sees
 * them, in one chain:
 *   device-readable:  descriptor 1: { u8 class; u8 command; }      (2 bytes)
 *                     descriptor 2: command-specific-data         (in_len
 *                                   bytes; omitted when in_len == 0)
 *   device-writable:  descriptor 3: { u8 ack; u8 ack-specific-data[out_len]; }
 *                                   (1 + out_len bytes, ack at offset 0)
 * The device should treat each side as one byte stream (it must not assume
 * this descriptor split). Bytes of out the device did not write are zero.
 * Sets *ack (VIRTIO_NET_OK = 0, VIRTIO_NET_ERR = 1, or whatever the device
 * wrote) and returns 0; or returns -EOPNOTSUPP (no control queue), -ENOTCONN,
 * -ETIMEDOUT (no answer within the timeout: the control queue is then
 * unusable, later calls return -EIO), -EIO, -ENOMEM, -EINVAL.
 * Thread-safe (commands are serialised).
 */
int vrdma_ctrl_cmd(struct vrdma_dev *dev, uint8_t cls, uint8_t cmd, const void *in,
		   size_t in_len, void *out, size_t out_len, uint8_t *ack);

/* VIRTIO_NET_CTRL_RX / PROMISC. Returns 0, -EIO if the device answered
 * VIRTIO_NET_ERR, -EOPNOTSUPP without VIRTIO_NET_F_CTRL_RX, or as above. */
int vrdma_ctrl_set_promisc(struct vrdma_dev *dev, bool on);
/* VIRTIO_NET_CTRL_MAC / MAC_ADDR_SET; on success vrdma_dev_mac() returns the
 * new address. Returns 0, -EIO if refused, -EOPNOTSUPP without
 * VIRTIO_NET_F_CTRL_MAC_ADDR, or as above. */
int vrdma_ctrl_set_mac(struct vrdma_dev *dev, const uint8_t mac[6]);

/* ---- sharing application memory with the device ----------------------------- */

struct vrdma_mem_share;

/*
 * Make [addr, addr + len) of this process's memory (heap, stack, mmap,
 * globals: any private mapping) reachable by the device, transparently: the
 * pages are copied into a memfd that is mapped MAP_SHARED|MAP_FIXED over the
 * same virtual range (same contents, same protection), and the new region is
 * announced to the back-end (ADD_MEM_REG). Addresses the device is given
 * stay the application's own pointers.
 *  - Granularity is the page: the whole pages covering the range are shared
 *    (neighbouring data on those pages too, harmlessly).
 *  - Ranges may overlap or repeat: pages already shared are reused (reference
 *    counted), only the missing pages are converted.
 *  - While the conversion runs, other threads must not write the range
 *    (a write that lands between the copy and the remap is lost).
 *  - Not supported (returns -EOPNOTSUPP): MAP_SHARED mappings other than
 *    this device's own arenas; (-EFAULT) unmapped pages; (-EACCES) pages
 *    without read permission.
 * On success *out is a handle for vrdma_mem_unshare(). Returns 0 or -errno
 * (also -ENOSPC: the back-end's memory slots are exhausted).
 */
int vrdma_mem_share(struct vrdma_dev *dev, void *addr, size_t len,
		    struct vrdma_mem_share **out);

/* Drop a handle. Pages no handle references any more are removed from the
 * device (REM_MEM_REG) and turned back into private memory with the same
 * contents. Returns 0 or -errno (the handle is freed in every case). */
int vrdma_mem_unshare(struct vrdma_mem_share *sh);

#ifdef __cplusplus
}
#endif

#endif /* VRDMA_VRDMA_H */
