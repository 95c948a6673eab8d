// SPDX-License-Identifier: BSD-3-Clause
/*
 * The data path of an rsocket: its QP, CQ and buffers, the connection's
 * private data, completions (data, credits, control messages) and the
 * sends and receives of rsend/rrecv/riowrite (docs/spec.md, "rsockets").
 *
 * Data goes by RDMA WRITE WITH IMMEDIATE into the half of the peer's
 * receive buffer named by our target SGL; the peer hands out the next half
 * (an RS_OP_SGL write into our target SGL) and credits (its receive count
 * + its queue depth) as its application reads.
 */
#include <byteswap.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "rdmacm/rsocket_priv.h"

#define RSK_WR_RECV      (1ull << 63)
#define RSK_QP_MIN       16
#define RSK_CTRL_SLOTS   4          /* control messages in flight */
#define RSK_CTRL_MSG     16         /* the largest: one rs_wire_sge */
#define RSK_SNDLOWAT     2048

static bool host_is_net(void) { return __BYTE_ORDER == __BIG_ENDIAN; }

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int post_recv(struct rsk *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RSK_WR_RECV }, *bad;
	int ret = ibv_post_recv(rs->id->qp, &wr, &bad);

	if (ret)
		errno = ret;
	return ret ? -1 : 0;
}

int rsk_ep_create(struct rsk *rs)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t max = 0xfffe, tlen;

	if (!rs->id->verbs)
		return errno = ENODEV, -1;
	if (!ibv_query_device(rs->id->verbs, &da)) {
		if ((uint32_t)da.max_qp_wr < max)
			max = (uint32_t)da.max_qp_wr;
		if ((uint32_t)da.max_cqe / 2 < max)
			max = (uint32_t)da.max_cqe / 2;
	}
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	if (rs->sq_size < RSK_QP_MIN)
		rs->sq_size = RSK_QP_MIN;
	if (rs->rq_size < RSK_QP_MIN)
		rs->rq_size = RSK_QP_MIN;

	rs->pd = ibv_alloc_pd(rs->id->verbs);
	rs->cc = rs->pd ? ibv_create_comp_channel(rs->id->verbs) : NULL;
	if (!rs->cc || set_nonblock(rs->cc->fd))
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size, rs, rs->cc, 0);
	if (!rs->cq)
		return -1;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, rs->pd, &qa)) {
		qa.cap.max_inline_data = 0;
		if (rdma_create_qp(rs->id, rs->pd, &qa))
			return -1;
	}
	rs->sq_inline = qa.cap.max_inline_data;

	rs->sbuf = malloc(rs->sbuf_size + RSK_CTRL_MSG * RSK_CTRL_SLOTS);
	tlen = sizeof(struct rs_wire_sge) * RS_WIRE_SGL_SIZE +
	       sizeof(struct rs_wire_iomap) * rs->iomap_size;
	rs->tbuf = calloc(1, tlen);
	rs->rbuf = malloc(rs->rbuf_size);
	rs->rmsg = calloc(rs->rq_size + 1u, sizeof(*rs->rmsg));
	if (!rs->sbuf || !rs->tbuf || !rs->rbuf || !rs->rmsg)
		return errno = ENOMEM, -1;
	rs->smr = ibv_reg_mr(rs->pd, rs->sbuf, rs->sbuf_size + RSK_CTRL_MSG * RSK_CTRL_SLOTS,
			     IBV_ACCESS_LOCAL_WRITE);
	rs->tmr = ibv_reg_mr(rs->pd, rs->tbuf, tlen,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->rmr = ibv_reg_mr(rs->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->tmr || !rs->rmr)
		return -1;
	rs->tsgl = (volatile struct rs_wire_sge *)rs->tbuf;
	rs->tiomap = rs->iomap_size ?
		(volatile struct rs_wire_iomap *)(rs->tbuf + sizeof(struct rs_wire_sge) *
						  RS_WIRE_SGL_SIZE) : NULL;

	rs->sbuf_pos = 0;
	rs->sbuf_avail = rs->sbuf_size;
	rs->ctrl_seqno = 0;
	rs->ctrl_max_seqno = RSK_CTRL_SLOTS;
	rs->sqe_avail = rs->sq_size - RSK_CTRL_SLOTS;
	rs->rbuf_off = 0;
	rs->rbuf_free_off = rs->rbuf_size / 2;
	rs->rbuf_avail = rs->rbuf_size / 2;
	rs->rseq_comp = rs->rq_size / 2;
	for (int i = 0; i < rs->rq_size; i++)
		if (post_recv(rs))
			return -1;
	ibv_req_notify_cq(rs->cq, 0);
	rs->cq_armed = true;
	return 0;
}

void rsk_ep_destroy(struct rsk *rs)
{
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	rsk_iomaps_free(rs);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->tmr)
		ibv_dereg_mr(rs->tmr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->cq) {
		rsk_cq_events(rs);
		ibv_ack_cq_events(rs->cq, rs->cq_events);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cc)
		ibv_destroy_comp_channel(rs->cc);
	if (rs->pd)
		ibv_dealloc_pd(rs->pd);
	free(rs->sbuf);
	free(rs->tbuf);
	free(rs->rbuf);
	free(rs->rmsg);
	free(rs->peer_iomap_used);
	rs->smr = rs->tmr = rs->rmr = NULL;
	rs->cq = NULL;
	rs->cc = NULL;
	rs->pd = NULL;
	rs->sbuf = rs->tbuf = rs->rbuf = NULL;
	rs->rmsg = NULL;
	rs->peer_iomap_used = NULL;
}

void rsk_conn_format(struct rsk *rs, struct rs_wire_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RS_WIRE_VERSION;
	c->flags = RS_CONN_FLAG_IOMAP | (host_is_net() ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = rs_scale_encode(rs->iomap_size);
	c->target_sgl.addr = htobe64((uintptr_t)rs->tbuf);
	c->target_sgl.key = htobe32(rs->tmr->rkey);
	c->target_sgl.length = htobe32(RS_WIRE_SGL_SIZE);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.key = htobe32(rs->rmr->rkey);
	c->data_buf.length = htobe32(rs->rbuf_size / 2);
}

int rsk_conn_save(struct rsk *rs, const void *pd, size_t len)
{
	struct rs_conn_info ci;
	int ret = rs_conn_parse(pd, len, &ci);

	if (ret)
		return errno = -ret, -1;
	rs->peer_sgl = ci.target_sgl;
	rs->peer_sge = 1 % rs->peer_sgl.length;
	rs->swap = ci.swap;
	rs->peer_iomap = ci.iomap;
	rs->tsgl[0].addr = ci.data_buf.addr;
	rs->tsgl[0].key = ci.data_buf.key;
	rs->tsgl[0].length = ci.data_buf.length;
	rs->tsge = 0;
	rs->sseq_no = 0;
	rs->sseq_comp = ci.credits;
	return 0;
}

/* ---- posting ---- */

static int post_write(struct rsk *rs, struct ibv_sge *sg, int nsge, uint32_t wr_data,
		      enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey, int flags)
{
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_data;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	wr.opcode = op;
	wr.send_flags = flags;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32(wr_data);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	ret = ibv_post_send(rs->id->qp, &wr, &bad);
	if (ret) {
		errno = ret;
		rs->state = RSK_ERROR;
		rs->err = ret;
		return -1;
	}
	return 0;
}

/* Copies len bytes of (iov, *iov_off) into the send ring: the SGEs. */
static int sbuf_fill(struct rsk *rs, const struct iovec **iov, size_t *iov_off, uint32_t len,
		     struct ibv_sge sg[2])
{
	int n = 0;
	uint32_t left = len;

	while (left) {
		uint32_t room = rs->sbuf_size - rs->sbuf_pos, chunk = left < room ? left : room;
		uint8_t *dst = rs->sbuf + rs->sbuf_pos;

		sg[n].addr = (uintptr_t)dst;
		sg[n].length = chunk;
		sg[n].lkey = rs->smr->lkey;
		n++;
		for (uint32_t done = 0; done < chunk;) {
			size_t take = (*iov)->iov_len - *iov_off;

			if (take > chunk - done)
				take = chunk - done;
			memcpy(dst + done, (const uint8_t *)(*iov)->iov_base + *iov_off, take);
			done += (uint32_t)take;
			*iov_off += take;
			if (*iov_off == (*iov)->iov_len) {
				(*iov)++;
				*iov_off = 0;
			}
		}
		rs->sbuf_pos = (rs->sbuf_pos + chunk) % rs->sbuf_size;
		left -= chunk;
	}
	rs->sbuf_avail -= len;
	return n;
}

int rsk_post_ctrl(struct rsk *rs, uint32_t ctrl)
{
	rs->ctrl_seqno++;
	return post_write(rs, NULL, 0, rs_imm(RS_OP_CTRL, ctrl), IBV_WR_RDMA_WRITE_WITH_IMM, 0,
			  0, 0);
}

static void send_credits(struct rsk *rs)
{
	uint32_t half = rs->rbuf_size / 2, imm;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + rs->rq_size / 2);
	imm = rs_imm(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	if (rs->rbuf_avail >= half) {
		struct rs_wire_sge *slot = (struct rs_wire_sge *)(rs->sbuf + rs->sbuf_size +
			RSK_CTRL_MSG * (rs->ctrl_seqno & (RSK_CTRL_SLOTS - 1)));
		struct ibv_sge sg;

		slot->addr = (uintptr_t)(rs->rbuf + rs->rbuf_free_off);
		slot->key = rs->rmr->rkey;
		slot->length = half;
		if (rs->swap) {
			slot->addr = bswap_64(slot->addr);
			slot->key = bswap_32(slot->key);
			slot->length = bswap_32(slot->length);
		}
		sg.addr = (uintptr_t)slot;
		sg.length = sizeof(*slot);
		sg.lkey = rs->smr->lkey;
		post_write(rs, &sg, 1, imm, IBV_WR_RDMA_WRITE_WITH_IMM,
			   rs->peer_sgl.addr + sizeof(*slot) * rs->peer_sge, rs->peer_sgl.key,
			   sizeof(*slot) <= rs->sq_inline ? IBV_SEND_INLINE : 0);
		rs->rbuf_avail -= half;
		rs->rbuf_free_off = (rs->rbuf_free_off + half) % rs->rbuf_size;
		rs->peer_sge = (int)((rs->peer_sge + 1) % rs->peer_sgl.length);
	} else {
		post_write(rs, NULL, 0, imm, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0);
	}
}

static void update_credits(struct rsk *rs)
{
	if (!(rs->state & RSK_CONNECTED) || rs->ctrl_seqno == rs->ctrl_max_seqno)
		return;
	if (rs->rbuf_avail >= rs->rbuf_size / 2 || (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		send_credits(rs);
}

/* ---- completions ---- */

static void fail(struct rsk *rs, int err)
{
	rs->state = RSK_ERROR;
	rs->err = err;
}

static void on_recv(struct rsk *rs, uint32_t imm)
{
	uint32_t data = rs_imm_data(imm);
	int next;

	switch (rs_imm_op(imm)) {
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)data;
		return;
	case RS_OP_IOMAP_SGL:
		/* the entry is in our table; it took a credit, give it back */
		rs->rseq_no++;
		return;
	case RS_OP_CTRL:
		if (data == RS_CTRL_DISCONNECT) {
			rs->state = RSK_DISCONNECTED;
		} else if (data == RS_CTRL_SHUTDOWN) {
			if (rs->state & RSK_WRITABLE)
				rs->state &= ~RSK_READABLE;
			else
				rs->state = RSK_DISCONNECTED;
		}
		return;
	case RS_OP_WRITE:
		return;
	default:
		break;
	}
	next = (rs->rmsg_tail + 1) % (rs->rq_size + 1);
	if (data > rs->rbuf_size / 2 || next == rs->rmsg_head) {
		fail(rs, EPROTO); /* more than the buffer or the credits we gave */
		return;
	}
	rs->rmsg[rs->rmsg_tail].op = rs_imm_op(imm);
	rs->rmsg[rs->rmsg_tail].len = data;
	rs->rmsg_tail = next;
}

static void on_send(struct rsk *rs, const struct ibv_wc *wc)
{
	uint32_t d = (uint32_t)wc->wr_id;

	switch (rs_imm_op(d)) {
	case RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rs_imm_data(d) == RS_CTRL_DISCONNECT)
			rs->state = RSK_DISCONNECTED;
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_avail += sizeof(struct rs_wire_iomap);
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_avail += rs_imm_data(d);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & RSK_CONNECTED))
		fail(rs, EIO);
}

int rsk_cq_poll(struct rsk *rs)
{
	struct ibv_wc wc[16];
	int n, reposts = 0, ret = 0;

	if (!rs->cq)
		return 0;
	update_credits(rs);
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RSK_WR_RECV)) {
				on_send(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (rs->state & RSK_CONNECTED)
					fail(rs, EIO);
				continue;
			}
			reposts++;
			if (wc[i].wc_flags & IBV_WC_WITH_IMM)
				on_recv(rs, be32toh(wc[i].imm_data));
		}
	}
	if (n < 0)
		fail(rs, EIO);
	if (rs->state & RSK_CONNECTED) {
		while (!ret && reposts--)
			ret = post_recv(rs);
		if (ret)
			fail(rs, errno);
	}
	update_credits(rs);
	return rs->state & RSK_ERROR ? -1 : 0;
}

void rsk_cq_arm(struct rsk *rs)
{
	if (rs->cq && !rs->cq_armed) {
		ibv_req_notify_cq(rs->cq, 0);
		rs->cq_armed = true;
	}
}

void rsk_cq_events(struct rsk *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cc)
		return;
	while (!ibv_get_cq_event(rs->cc, &cq, &ctx)) {
		rs->cq_events++;
		rs->cq_armed = false;
	}
	if (rs->cq_events >= 64u) {
		ibv_ack_cq_events(rs->cq, rs->cq_events);
		rs->cq_events = 0;
	}
}

int rsk_wait(struct rsk *rs, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = rs->cc ? rs->cc->fd : -1, .events = POLLIN },
		{ .fd = rs->ch->fd, .events = POLLIN },
	};
	int n;

	if (rs->cq && !rs->cq_armed) {
		rsk_cq_arm(rs); /* the caller polls once more before it waits */
		return 0;
	}
	pthread_mutex_unlock(&rs->lock);
	n = poll(p, 2, timeout_ms);
	pthread_mutex_lock(&rs->lock);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (p[0].revents)
		rsk_cq_events(rs);
	if (p[1].revents && (rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR)))
		rsk_cm_drain(rs);
	return 0;
}

bool rsk_can_send(struct rsk *rs)
{
	return rs->sqe_avail > 0 && rs->sbuf_avail >= RSK_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->tsgl[rs->tsge].length != 0;
}

bool rsk_has_rdata(struct rsk *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

bool rsk_sends_done(struct rsk *rs)
{
	return (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       !(rs->state & RSK_CONNECTED);
}

/* ---- rsend / rrecv ---- */

/* Waits until test(rs) holds (or the socket can no longer): 0, or -1
 * with errno (EAGAIN when nonblock). */
static int wait_for(struct rsk *rs, bool nonblock, bool (*test)(struct rsk *rs))
{
	for (;;) {
		if (rsk_cq_poll(rs) && !test(rs))
			return errno = rs->err ? rs->err : EIO, -1;
		if (test(rs))
			return 0;
		if (nonblock)
			return errno = EAGAIN, -1;
		if (rsk_wait(rs, -1))
			return -1;
	}
}

static bool can_send_or_closed(struct rsk *rs)
{
	return rsk_can_send(rs) || !(rs->state & RSK_WRITABLE);
}

static bool rdata_or_closed(struct rsk *rs)
{
	return rsk_has_rdata(rs) || !(rs->state & RSK_READABLE);
}

/* Sends the queued iomap entries (riomap with PROT_WRITE). */
static int send_iomaps(struct rsk *rs, bool nonblock)
{
	for (struct rsk_iomap *m = rs->maps; m; m = m->next) {
		struct rs_wire_iomap e;
		const struct iovec iov = { &e, sizeof(e) }, *v = &iov;
		struct ibv_sge sg[2];
		size_t off = 0;
		int n;

		if (m->slot < 0 || m->sent)
			continue;
		if (wait_for(rs, nonblock, can_send_or_closed))
			return -1;
		if (!(rs->state & RSK_WRITABLE))
			return errno = ECONNRESET, -1;
		e.offset = m->offset;
		e.sge.addr = (uintptr_t)m->mr->addr;
		e.sge.key = m->mr->rkey;
		e.sge.length = (uint32_t)m->mr->length;
		if (rs->swap) {
			e.offset = bswap_64(e.offset);
			e.sge.addr = bswap_64(e.sge.addr);
			e.sge.key = bswap_32(e.sge.key);
			e.sge.length = bswap_32(e.sge.length);
		}
		n = sbuf_fill(rs, &v, &off, sizeof(e), sg);
		rs->sseq_no++;
		rs->sqe_avail--;
		m->sent = true;
		if (post_write(rs, sg, n, rs_imm(RS_OP_IOMAP_SGL, (uint32_t)m->slot),
			       IBV_WR_RDMA_WRITE_WITH_IMM,
			       rs->peer_iomap.addr + sizeof(e) * (uint32_t)m->slot, rs->peer_iomap.key,
			       sizeof(e) <= rs->sq_inline ? IBV_SEND_INLINE : 0))
			return -1;
	}
	return 0;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t t = 0;

	for (int i = 0; i < iovcnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* Wait (unless nonblock) for room to send, then size the next chunk: it
 * grows from RSK_SNDLOWAT up to 64 KiB, bounded by the send buffer's room.
 * 0, or -1 with errno. */
static int next_chunk(struct rsk *rs, bool nonblock, size_t left, uint32_t *olen, uint32_t *xfer)
{
	if (!rsk_can_send(rs)) {
		if (wait_for(rs, nonblock, can_send_or_closed))
			return -1;
		if (!(rs->state & RSK_WRITABLE))
			return errno = ECONNRESET, -1;
	}
	*xfer = left < *olen ? (uint32_t)left : *olen;
	if (*olen < 65536 && *olen < left)
		*olen <<= 1;
	if (*xfer > rs->sbuf_avail)
		*xfer = rs->sbuf_avail;
	return 0;
}

/* rsend over an iovec (locked, connected). */
ssize_t rsk_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt, bool nonblock)
{
	size_t len = iov_total(iov, iovcnt), left = len, off = 0;
	uint32_t olen = RSK_SNDLOWAT;
	int ret = 0;

	while (iovcnt && !iov->iov_len) {
		iov++;
		iovcnt--;
	}
	if (!(rs->state & RSK_WRITABLE))
		return errno = rs->state & RSK_ERROR ? rs->err : EPIPE, -1;
	if (send_iomaps(rs, nonblock))
		return -1;
	while (left) {
		struct ibv_sge sg[2];
		uint32_t xfer, tlen, key;
		uint64_t addr;
		int n;

		ret = next_chunk(rs, nonblock, left, &olen, &xfer);
		if (ret)
			break;
		tlen = rs->tsgl[rs->tsge].length;
		if (xfer > tlen)
			xfer = tlen;
		n = sbuf_fill(rs, &iov, &off, xfer, sg);
		addr = rs->tsgl[rs->tsge].addr;
		key = rs->tsgl[rs->tsge].key;
		rs->tsgl[rs->tsge].addr = addr + xfer;
		rs->tsgl[rs->tsge].length = tlen - xfer;
		if (tlen == xfer)
			rs->tsge = (rs->tsge + 1) % RS_WIRE_SGL_SIZE;
		rs->sseq_no++;
		rs->sqe_avail--;
		left -= xfer;
		ret = post_write(rs, sg, n, rs_imm(RS_OP_DATA, xfer), IBV_WR_RDMA_WRITE_WITH_IMM,
				 addr, key, xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0);
		if (ret)
			break;
	}
	return ret && left == len ? -1 : (ssize_t)(len - left);
}

/* rrecv into an iovec (locked). */
ssize_t rsk_recvv(struct rsk *rs, const struct iovec *iov, int iovcnt, int flags, bool nonblock)
{
	size_t len = iov_total(iov, iovcnt), got = 0, ioff = 0;
	int head = rs->rmsg_head, ret = 0;
	uint32_t roff = rs->rbuf_off;
	bool peek = flags & MSG_PEEK;

	do {
		if (!rsk_has_rdata(rs)) {
			ret = wait_for(rs, nonblock, rdata_or_closed);
			if (ret)
				break;
			head = rs->rmsg_head;
			roff = rs->rbuf_off;
		}
		while (got < len && head != rs->rmsg_tail) {
			uint32_t avail = rs->rmsg[head].len, take;

			take = len - got < avail ? (uint32_t)(len - got) : avail;
			for (uint32_t done = 0; done < take;) {
				uint32_t chunk = take - done, room = rs->rbuf_size - roff;
				size_t ispace = iov->iov_len - ioff;

				if (chunk > room)
					chunk = room;
				if (chunk > ispace)
					chunk = (uint32_t)ispace;
				memcpy((uint8_t *)iov->iov_base + ioff, rs->rbuf + roff, chunk);
				done += chunk;
				roff = (roff + chunk) % rs->rbuf_size;
				ioff += chunk;
				if (ioff == iov->iov_len) {
					iov++;
					ioff = 0;
				}
			}
			got += take;
			if (peek) {
				if (take == avail)
					head = (head + 1) % (rs->rq_size + 1);
				continue;
			}
			rs->rbuf_avail += take;
			rs->rbuf_off = roff;
			if (take == avail) {
				rs->rseq_no++;
				head = rs->rmsg_head = (rs->rmsg_head + 1) % (rs->rq_size + 1);
			} else {
				rs->rmsg[head].len -= take;
			}
		}
	} while (!peek && got < len && (flags & MSG_WAITALL) && (rs->state & RSK_READABLE));
	if (got && !peek)
		update_credits(rs);
	return ret && !got ? -1 : (ssize_t)got;
}

/* ---- riomap / riowrite ---- */

void rsk_iomaps_free(struct rsk *rs)
{
	while (rs->maps) {
		struct rsk_iomap *m = rs->maps;

		rs->maps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
}

off_t rsk_iomap(struct rsk *rs, void *buf, size_t len, int prot, off_t offset)
{
	struct rsk_iomap *m;
	int access = IBV_ACCESS_LOCAL_WRITE, slot = -1;

	if (!rs->pd || (prot & ~PROT_WRITE))
		return errno = EINVAL, -1;
	if (prot & PROT_WRITE) {
		if (!rs->peer_iomap_used && rs->peer_iomap.length) {
			rs->peer_iomap_used = calloc(rs->peer_iomap.length, sizeof(bool));
			if (!rs->peer_iomap_used)
				return errno = ENOMEM, -1;
		}
		for (uint32_t i = 0; i < rs->peer_iomap.length; i++)
			if (!rs->peer_iomap_used[i]) {
				slot = (int)i;
				break;
			}
		if (slot < 0)
			return errno = ENOMEM, -1;
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return errno = ENOMEM, -1;
	m->mr = ibv_reg_mr(rs->pd, buf, len, access);
	if (!m->mr) {
		free(m);
		return -1;
	}
	m->offset = offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)offset;
	m->slot = slot;
	if (slot >= 0)
		rs->peer_iomap_used[slot] = true;
	m->next = rs->maps;
	rs->maps = m;
	return (off_t)m->offset;
}

int rsk_iounmap(struct rsk *rs, void *buf, size_t len)
{
	for (struct rsk_iomap **pp = &rs->maps; *pp; pp = &(*pp)->next) {
		struct rsk_iomap *m = *pp;

		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*pp = m->next;
		if (m->slot >= 0 && rs->peer_iomap_used)
			rs->peer_iomap_used[m->slot] = false;
		ibv_dereg_mr(m->mr);
		free(m);
		return 0;
	}
	return errno = EINVAL, -1;
}

/* The entry of our iomap table (written by the peer) holding offset. */
static bool find_iomap(struct rsk *rs, uint64_t offset, struct rs_wire_iomap *out)
{
	for (int i = 0; i < rs->iomap_size; i++) {
		struct rs_wire_iomap e;

		e.offset = rs->tiomap[i].offset;
		e.sge.addr = rs->tiomap[i].sge.addr;
		e.sge.key = rs->tiomap[i].sge.key;
		e.sge.length = rs->tiomap[i].sge.length;
		if (e.sge.length && offset >= e.offset && offset - e.offset < e.sge.length) {
			*out = e;
			return true;
		}
	}
	return false;
}

ssize_t rsk_iowrite(struct rsk *rs, const void *buf, size_t count, off_t offset, bool nonblock)
{
	size_t left = count, off = 0;
	const struct iovec iov = { (void *)buf, count }, *v = &iov;
	uint64_t pos = (uint64_t)offset;
	uint32_t olen = RSK_SNDLOWAT;
	int ret = 0;

	if (send_iomaps(rs, nonblock))
		return -1;
	while (left) {
		struct rs_wire_iomap e;
		struct ibv_sge sg[2];
		uint64_t room;
		uint32_t xfer;
		int n;

		if (!find_iomap(rs, pos, &e)) {
			if (left == count)
				ret = -1, errno = EINVAL;
			break;
		}
		ret = next_chunk(rs, nonblock, left, &olen, &xfer);
		if (ret)
			break;
		room = e.offset + e.sge.length - pos;
		if (xfer > room)
			xfer = (uint32_t)room;
		n = sbuf_fill(rs, &v, &off, xfer, sg);
		rs->sqe_avail--;
		ret = post_write(rs, sg, n, rs_imm(RS_OP_WRITE, xfer), IBV_WR_RDMA_WRITE,
				 e.sge.addr + (pos - e.offset), e.sge.key,
				 xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0);
		left -= xfer;
		pos += xfer;
		if (ret)
			break;
	}
	return ret && left == count ? -1 : (ssize_t)(count - left);
}
