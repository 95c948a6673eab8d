/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma-evil: a vhost-user front-end that misbehaves on purpose, to check
 * that the vhost-user-rdma back-end survives it (tests/integration/
 * malicious_driver.sh).
 *
 * Each attack opens its own connection, does one bad thing, and checks the
 * back-end's reaction from the driver's side:
 *   closed  a malformed message: the back-end must close the connection
 *           (a REPLY_ACK NACK before that is allowed);
 *   alive   a request the back-end must refuse or ignore while keeping the
 *           session (checked with a probe request answered afterwards);
 *   eof     we hang up in the middle of a message: nothing to observe here,
 *           the caller checks the daemon's fds, mappings and counters;
 *   broken  after a correct handshake, a bad ring: the back-end must signal
 *           the ring's error eventfd, report VIRTIO_CONFIG_S_NEEDS_RESET in
 *           GET_STATUS, stop touching the ring, and work again after
 *           RESET_DEVICE and a fresh ring setup on the same connection.
 * Lines printed (stdout), for scripts:
 *   attack NAME: what
 *   outcome closed|alive|eof|broken|timeout|...
 *   status 0xSS needs_reset 0|1          (broken attacks)
 *   reset_ok 0|1                          (broken attacks)
 *   verdict ok | verdict fail: why
 */
#ifndef VRDMA_EVIL_H
#define VRDMA_EVIL_H

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost/vhost_client.h"
#include "vhost/vhost_proto.h"
#include "virtio/vq_drv.h"

#ifndef VIRTIO_CONFIG_S_NEEDS_RESET
#define VIRTIO_CONFIG_S_NEEDS_RESET 0x40
#endif

struct evil_opts {
	const char *socket;
	int timeout_ms;   /* bound on every wait for the back-end */
	uint32_t rings;   /* rings the device has (0: ask the device) */
	bool verbose;
	/* --model virtio-rdma: the standalone virtio-rdma device (id 42): only
	 * its control queue (ring 0) is set up and attacked (the ctrl.* ring
	 * attacks), checked with its own commands. */
	bool rdma_dev;
	/* another device of the daemon, for the tenant_* attacks */
	bool has_victim_mac, has_victim_ip;
	uint8_t victim_mac[6];
	uint8_t victim_ip[4];
	/* a RoCE device whose RDMA traffic the tenant_rc_* attacks target */
	const char *victim_socket;
};

enum evil_expect {
	EVIL_CLOSED,
	EVIL_ALIVE,
	EVIL_EOF,
	EVIL_BROKEN,
	EVIL_SURVIVE,  /* only the back-end's survival is judged by the caller */
};

struct evil_attack;
/* Runs one attack. Returns 0 when the back-end reacted as expected, 1 when it
 * did not, 3 when the attack could not be set up. */
typedef int (*evil_run_fn)(const struct evil_opts *o, const struct evil_attack *a);

struct evil_attack {
	const char *name;
	enum evil_expect expect;
	const char *what;
	evil_run_fn run;
	int arg;
};

/* Verdict codes. */
#define EVIL_OK 0
#define EVIL_FAIL 1
#define EVIL_SETUP 3

/* Print "verdict ok" / "verdict fail: ..." and return EVIL_OK / EVIL_FAIL. */
int evil_verdict(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print a line (stdout, flushed). */
void evil_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log "setup: what: error" if rc < 0; returns rc. */
int evil_say_rc(const char *what, int rc);
/* The first negotiation: protocol features (CONFIGURE_MEM_SLOTS required
 * with mem_slots), SET_OWNER. 0 or the reported -errno. */
int evil_protocol_setup(struct vhost_client *vc, bool mem_slots);
/* Status ACKNOWLEDGE | DRIVER, SET_FEATURES, FEATURES_OK read back. 0 or
 * the reported -errno. */
int evil_features_ok(struct vhost_client *vc, uint64_t features);
/* ADD_MEM_REG of an identity-mapped arena (GPA == UVA). 0 or the reported
 * -errno. */
int evil_add_arena(struct vhost_client *vc, uint8_t *arena, size_t size, int fd);
/* A ring's driver state and eventfds released (fds left -1). */
void evil_ring_fds_close(struct vq_drv *vq, int *kick, int *call, int *err);
/* Read (reset) an eventfd if fd >= 0. */
void evil_drain(int fd);
/* Print a diagnostic to stderr when verbose. */
void evil_dbg(const struct evil_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- raw messages (msg.c) ---- */

/* Connect to the back-end socket. Returns the fd or -errno. */
int evil_connect(const char *path);
/* Send len bytes as one sendmsg with nfds fds attached. Returns 0 or -errno
 * (-EPIPE / -ECONNRESET: the back-end already hung up). */
int evil_send_raw(int fd, const void *buf, size_t len, const int *fds, int nfds);
/* Send a header (request, flags, size) followed by len payload bytes (len
 * may differ from size, to lie about the size). Returns as above. */
int evil_send_msg(int fd, uint32_t req, uint32_t flags, uint32_t size, const void *payload,
		  size_t len, const int *fds, int nfds);

enum evil_outcome {
	EVIL_OUT_CLOSED,   /* the back-end closed the connection */
	EVIL_OUT_ALIVE,    /* the probe was answered */
	EVIL_OUT_TIMEOUT,  /* neither within the timeout */
	EVIL_OUT_GARBAGE,  /* an unexpected message */
};

/*
 * After a message that may be bad: send a GET_FEATURES probe (if probe) and
 * read until its answer (alive) or the end of the connection (closed).
 * Replies to the bad message itself are reported through *nack (the u64 of
 * the last REPLY_ACK-style reply seen, or UINT64_MAX if none) and
 * *replies (their number).
 */
enum evil_outcome evil_outcome(int fd, bool probe, int timeout_ms, uint64_t *nack,
			       unsigned *replies);
const char *evil_outcome_name(enum evil_outcome o);

/* Number of rings of the device behind o->socket (asked over a short,
 * well-behaved connection when o->rings is 0). Returns it or 0. */
uint32_t evil_device_rings(const struct evil_opts *o);

/* ---- a well-behaved driver to misbehave with (dev.c) ---- */

#define EVIL_RING_NUM 128
#define EVIL_NRINGS 3          /* rx 0, tx 1, ctrl 2 */
#define EVIL_RXQ 0
#define EVIL_TXQ 1
#define EVIL_CTRLQ 2
#define EVIL_NET_HDR 12        /* virtio_net_hdr_v1 */
#define EVIL_BUF 2048          /* one frame buffer */

/* evil_dev_open() flags */
#define EVIL_F_NO_INDIRECT 0x1 /* do not negotiate VIRTIO_RING_F_INDIRECT_DESC */
#define EVIL_F_NO_RX_POST 0x2  /* leave the receive ring empty */
#define EVIL_F_SEALABLE 0x4    /* arena memfd created with MFD_ALLOW_SEALING */
#define EVIL_F_NO_MAC 0x8      /* do not ack VIRTIO_NET_F_MAC (like QEMU, DPDK) */

struct evil_ring {
	unsigned idx;
	struct vq_drv vq;
	uint8_t *mem;          /* ring memory inside the arena */
	int kick, call, err;   /* eventfds */
};

struct evil_dev {
	const struct evil_opts *o;
	struct vhost_client vc;
	unsigned flags;
	uint64_t features;     /* acked virtio features (without bit 30) */
	uint8_t mac[6];
	uint8_t *arena;        /* shared memfd, identity mapped (GPA == UVA) */
	size_t arena_size;
	int arena_fd;
	struct evil_ring r[EVIL_NRINGS];
	uint8_t *ind;          /* indirect tables area */
	uint8_t *rxbuf, *txbuf, *ctrlbuf;
	unsigned tx_next;
	uint16_t rx_tokens[EVIL_RING_NUM];
};

/* Connect, negotiate, share memory, set up rx/tx/ctrl and set DRIVER_OK.
 * Returns 0 or -errno (message printed). */
int evil_dev_open(struct evil_dev *d, const struct evil_opts *o, unsigned flags);
/* After RESET_DEVICE: negotiate again and set the rings up again (same
 * memory). Returns 0 or -errno. */
int evil_dev_restart(struct evil_dev *d);
void evil_dev_close(struct evil_dev *d);

/* The virtio-rdma device (o->rdma_dev): a command on its control queue
 * (u8 command + data, u8 response). Returns the response byte or -errno. */
int evil_rdma_cmd(struct evil_dev *d, uint8_t cmd, const void *data, size_t len);
/* The same, copying rsp_len bytes of response data to rsp on success. */
int evil_rdma_cmd_rsp(struct evil_dev *d, uint8_t cmd, const void *data, size_t len, void *rsp,
		      size_t rsp_len);

/* GPA (== our address) of a pointer into the arena. */
static inline uint64_t evil_gpa(const void *p) { return (uint64_t)(uintptr_t)p; }

/* (Re)start ring idx on vq over mem with num entries: NUM, BASE 0, ADDR,
 * CALL, ERR, KICK, ENABLE. Returns 0 or -errno (logged). */
int evil_vring_start(struct vhost_client *vc, unsigned idx, struct vq_drv *vq, uint8_t *mem,
		     unsigned num, int kick, int call, int err);

/* Kick ring idx (eventfd write). */
void evil_kick(struct evil_dev *d, unsigned idx);
/* Queue one Ethernet frame on the transmit ring and kick. Returns 0 or -errno. */
int evil_tx(struct evil_dev *d, const void *frame, size_t len);
/* Wait for a received frame (up to timeout_ms). Returns its length (without
 * the virtio header, copied to buf) or -ETIMEDOUT / -EIO. */
int evil_rx(struct evil_dev *d, void *buf, size_t cap, int timeout_ms);
/* Send a frame to ourselves and check it comes back byte for byte.
 * Returns 0 or -errno. */
int evil_loopback(struct evil_dev *d, uint32_t seq);
/* One control command (class, cmd, data). Returns the ack (0 ok) or -errno. */
int evil_ctrl(struct evil_dev *d, uint8_t cls, uint8_t cmd, const void *data, size_t len);
/* GET_STATUS. Returns 0 or -errno. */
int evil_status(struct evil_dev *d, uint8_t *st);
/* Wait up to timeout_ms for a used entry on vq (call: its call eventfd,
 * drained). Returns 1, or 0 on timeout. */
int evil_vq_wait_used(struct vq_drv *vq, int call, int timeout_ms);
/* The same for ring idx of d. */
int evil_wait_used(struct evil_dev *d, unsigned idx, int timeout_ms);
/* Wait up to timeout_ms for the error eventfd of ring idx. Returns 1 if it
 * fired, 0 if not. */
int evil_wait_err(struct evil_dev *d, unsigned idx, int timeout_ms);

/* ---- attack tables ---- */

extern const struct evil_attack evil_msg_attacks[];
extern const unsigned evil_msg_nattacks;
extern const struct evil_attack evil_ring_attacks[];
extern const unsigned evil_ring_nattacks;
/* attacks on the verbs extensions (ext.c, over the RDMA driver of rdma.c) */
extern const struct evil_attack evil_ext_attacks[];
extern const unsigned evil_ext_nattacks;
/* one tenant against another device of the daemon (tenant.c) */
extern const struct evil_attack evil_tenant_attacks[];
extern const unsigned evil_tenant_nattacks;
/* tenants against RDMA traffic and the budgets of a device (tenant_rdma.c) */
extern const struct evil_attack evil_tenant_rdma_attacks[];
extern const unsigned evil_tenant_rdma_nattacks;

#endif /* VRDMA_EVIL_H */
