/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (SOCK_STREAM) over our rdma_cm and verbs: one struct rsk per
 * socket, found by its index (the fd of its own CM event channel, so that
 * indexes never collide with the process's other fds). Every call takes
 * the socket's lock; a blocking call drops it while it waits in poll() on
 * the completion channel or the CM channel. Errors: -1 and errno.
 */
#ifndef VRDMA_RDMACM_RSOCKET_PRIV_H
#define VRDMA_RDMACM_RSOCKET_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmacm/rsocket_proto.h"

#define RSK_EXPORT __attribute__((visibility("default")))

/* State bits (a connected socket is CONNECTED | READABLE | WRITABLE until
 * a shutdown takes one away). */
enum {
	RSK_BOUND        = 1u << 0,
	RSK_LISTENING    = 1u << 1,
	RSK_OPENING      = 1u << 2,   /* rconnect under way */
	RSK_CONNECTED    = 1u << 3,
	RSK_READABLE     = 1u << 4,
	RSK_WRITABLE     = 1u << 5,
	RSK_CONNECT_ERR  = 1u << 6,
	RSK_DISCONNECTED = 1u << 7,
	RSK_ERROR        = 1u << 8,
};

/* A local buffer given to riomap. */
struct rsk_iomap {
	struct ibv_mr *mr;
	uint64_t offset;
	int slot;                   /* entry of the peer's iomap table, -1: none */
	bool sent;                  /* its entry went to the peer */
	struct rsk_iomap *next;
};

struct rsk {
	int fd;
	unsigned state;
	int err;                    /* errno of a failed connect or of the QP */
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool cq_armed;
	unsigned cq_events;         /* not yet acked */
	int fs_flags, fd_flags;
	uint32_t so_opts, tcp_opts;
	int keepalive;

	/* sizes (settable before the connection) */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size;
	uint32_t sq_inline;
	uint16_t iomap_size;        /* entries of our target iomap table */
	bool swap;                  /* the peer has the other byte order */

	/* send side */
	uint8_t *sbuf;              /* sbuf_size of data + control slots */
	struct ibv_mr *smr;
	uint32_t sbuf_pos, sbuf_avail;
	uint16_t sseq_no, sseq_comp;
	int sqe_avail;
	unsigned ctrl_seqno, ctrl_max_seqno;
	uint8_t *tbuf;              /* our target list: SGL then iomap table */
	struct ibv_mr *tmr;
	volatile struct rs_wire_sge *tsgl;
	volatile struct rs_wire_iomap *tiomap;
	int tsge;
	struct rs_wire_sge peer_sgl;    /* the peer's target SGL */
	int peer_sge;
	struct rs_wire_sge peer_iomap;  /* the peer's iomap table (length: entries) */
	bool *peer_iomap_used;

	/* receive side */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t rbuf_off, rbuf_avail, rbuf_free_off;
	uint16_t rseq_no, rseq_comp;
	struct { uint32_t op, len; } *rmsg;
	int rmsg_head, rmsg_tail;

	struct rsk_iomap *maps;
};

/* rsocket.c */
struct rsk *rsk_get(int fd);               /* locked socket or NULL (EBADF) */
void rsk_put(struct rsk *rs);
/* Progress of a connect or accept (locked): 0 connected, -1 with errno
 * (EINPROGRESS when nonblock and not done yet). */
int rsk_connect_step(struct rsk *rs, bool nonblock);
/* Reads and handles the events of the socket's CM channel (locked). */
void rsk_cm_drain(struct rsk *rs);

/* rsocket_data.c */
int rsk_ep_create(struct rsk *rs);         /* CQ, QP, buffers, receives */
void rsk_ep_destroy(struct rsk *rs);
void rsk_conn_format(struct rsk *rs, struct rs_wire_conn *c);
int rsk_conn_save(struct rsk *rs, const void *pd, size_t len);
/* Polls the CQ and sends credits as due (locked): 0 or -1 (QP error). */
int rsk_cq_poll(struct rsk *rs);
/* Waits for a completion or CM event with the lock dropped, at most
 * timeout_ms (-1: no bound): 0, or -1 with errno. */
int rsk_wait(struct rsk *rs, int timeout_ms);
/* Arms the CQ and consumes completion-channel events (locked). */
void rsk_cq_arm(struct rsk *rs);
void rsk_cq_events(struct rsk *rs);
bool rsk_can_send(struct rsk *rs);
bool rsk_has_rdata(struct rsk *rs);
bool rsk_sends_done(struct rsk *rs);
int rsk_post_ctrl(struct rsk *rs, uint32_t ctrl);
struct iovec;
ssize_t rsk_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt, bool nonblock);
ssize_t rsk_recvv(struct rsk *rs, const struct iovec *iov, int iovcnt, int flags, bool nonblock);
off_t rsk_iomap(struct rsk *rs, void *buf, size_t len, int prot, off_t offset);
int rsk_iounmap(struct rsk *rs, void *buf, size_t len);
ssize_t rsk_iowrite(struct rsk *rs, const void *buf, size_t count, off_t offset, bool nonblock);
void rsk_iomaps_free(struct rsk *rs);

#endif /* VRDMA_RDMACM_RSOCKET_PRIV_H */
