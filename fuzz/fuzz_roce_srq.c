/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the transport's extension rings against a hostile driver.
 * One device with ROCE_EXT, an SRQ shared by three QPs (RC, UC, UD) and the
 * event virtqueue; the input is a list of operations:
 *   - SRQ elements with any bytes, any length, split over up to three
 *     descriptors, some device-writable or outside shared memory (breaks the
 *     ring), posted with or without kicks;
 *   - QPs taking elements (roce_rq_get) and completing them (success or
 *     error), moving to ERR, RESET, or being destroyed and created again;
 *   - event buffers of any length (short ones included), events raised on
 *     any object, MODIFY_SRQ limits, CQ resizes, completion buffers, polls.
 * Checked after every step: an SRQ never counts more elements than its ring
 * holds; every element taken is given back at most once (the driver side of
 * the ring validates used ids); a QP of the SRQ never holds an element of
 * another ring; every event written has a known type, length 16 and
 * reserved 0; short buffers come back with length 0; ASan/UBSan clean.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "roce/roce_srq_evq.h"
#include "unit/roce_tp_fake.h"

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t in8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static const uint8_t types[3] = { VIRTIO_IB_QPT_RC, VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD };

struct fz {
	struct fk_env env;
	struct fk_dev *d;
	uint32_t pd, cq[2];
	struct rres_srq *srq;
	struct fk_ring *srq_ring, *evq;
	uint32_t qpn[3];
	struct fk_mr mr;
	uint64_t next_id;
};

static struct fk_dev *dev_new(struct fk_env *env)
{
	struct fk_dev_cfg c = {
		.qps = 8,
		.cqs = 4,
		.arena = 4u << 20,
		.no_loop = true,
		.small = true,
		.ext = true,
		.srqs = 2,
	};

	return fk_dev_new(env, &c);
}

static uint32_t qp_new(struct fz *f, int i)
{
	struct rres_qp_init in = {
		.pdn = f->pd, .qp_type = types[i], .send_cqn = f->cq[0], .recv_cqn = f->cq[i & 1],
		.cap = { 4, 0, 1, 0, 0 }, .ext_flags = VIRTIO_IB_QP_CREATE_SRQ,
		.srqn = f->srq->srqn,
	};
	struct rres_qp *qp;
	struct fk_path p;

	if (rres_qp_create(&f->d->rd, &in, &qp))
		abort();
	fk_path_default(&p);
	fk_connect(f->d, qp->qpn, f->d, qp->qpn, &p);
	return qp->qpn;
}

/* Post one SRQ element from the input. */
static void srq_element(struct fz *f, struct input *in)
{
	struct fk_ring *fr = f->srq_ring;
	uint8_t mode = in8(in), len = in8(in) % 96;
	uint8_t *b;
	struct vq_buf out[3], inb;
	unsigned nout = 0, k, off = 0;

	if (!vq_drv_num_free(&fr->drv))
		return;
	b = fk_ring_buf(fr);
	for (k = 0; k < len; k++)
		b[k] = in8(in);
	if (mode & 1) {
		/* a well-formed header with a valid SGE most of the time */
		struct virtio_rdma_rq_req req = { .wr_id = htole64(f->next_id++), .num_sge = 0 };
		struct virtio_rdma_sge s = { htole64((uintptr_t)f->mr.buf + (in8(in) & 63)),
					     htole32(in8(in)), htole32(f->mr.lkey) };

		req.num_sge = htole32(mode & 2 ? 1 : in8(in) % 4);
		memcpy(b, &req, sizeof(req));
		memcpy(b + sizeof(req), &s, sizeof(s));
		len = (uint8_t)MAX(len, (uint8_t)(sizeof(req) + sizeof(s)));
	}
	/* split into up to three readable pieces */
	for (k = 0; k < 3 && off < len; k++) {
		unsigned piece = k == 2 ? len - off : MIN(len - off, (unsigned)(in8(in) % 48) + 1);

		out[nout++] = (struct vq_buf){ (uintptr_t)b + off, piece };
		off += piece;
	}
	if (!nout)
		out[nout++] = (struct vq_buf){ (uintptr_t)b, 1 };
	if (mode & 0x40)
		out[0].addr = 0x100; /* outside shared memory: breaks the ring */
	inb = (struct vq_buf){ (uintptr_t)b + 128, 16 };
	if (vq_drv_add(&fr->drv, out, nout, &inb, mode & 0x20 ? 1 : 0, b))
		return;
	if (mode & 0x80)
		fk_ring_publish(f->d, fr);
	else
		vq_drv_kick_prepare(&fr->drv);
}

static void evq_buffers(struct fz *f, struct input *in)
{
	struct fk_ring *fr = f->evq;
	uint8_t n = in8(in) % 4;

	for (uint8_t k = 0; k < n && vq_drv_num_free(&fr->drv); k++) {
		uint8_t *b = fk_ring_buf(fr);
		uint8_t l = in8(in) % 40;
		struct vq_buf out = { (uintptr_t)b, 4 }, inb = { (uintptr_t)b + 8, l ? l : 1 };

		vq_drv_add(&fr->drv, &out, l & 1, &inb, 1, b);
	}
	fk_ring_publish(f->d, fr);
}

static void check_events(struct fz *f)
{
	uint32_t len;
	uint8_t *b;

	while ((b = vq_drv_get_used(&f->evq->drv, &len))) {
		struct virtio_rdma_event ev;

		if (len == 0)
			continue;
		if (len != 16)
			abort();
		memcpy(&ev, b + 8, sizeof(ev));
		if (le32toh(ev.type) >= VIRTIO_IB_EVENT_NUM || ev.reserved || ev.vendor_err)
			abort();
	}
}

static void check(struct fz *f)
{
	struct roce_tsrq *ts = f->srq->transport;
	uint32_t len;

	if (ts && roce_srq_count(ts) > f->srq_ring->r.num)
		abort();
	for (int i = 0; i < 3; i++) {
		struct rres_qp *qp = rres_qp_lookup(&f->d->rd, f->qpn[i]);
		struct roce_tq *tq = qp ? qp->transport : NULL;

		if (tq && tq->rwqe->valid && tq->rwqe->srq != f->srq)
			abort();
	}
	/* used SRQ entries are consumed (vq_drv checks each id) */
	while (vq_drv_get_used(&f->srq_ring->drv, &len))
		;
	check_events(f);
	pkt_queue_purge(&f->d->wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct fz f;
	unsigned steps = 0;

	vlog_level = -1;
	memset(&f, 0, sizeof(f));
	f.d = dev_new(&f.env);
	f.pd = fk_pd(f.d);
	f.cq[0] = fk_cq(f.d, 8, 8, true);
	f.cq[1] = fk_cq(f.d, 2, 4, in8(&in) & 1);
	if (rres_srq_create(&f.d->rd, f.pd, 16, 2, &f.srq))
		abort();
	f.srq_ring = fk_ring_setup(f.d, f.srq->vq, 16, 256, in8(&in) & 1);
	f.evq = fk_ring_setup(f.d, rres_ring_of_eventq(&f.d->rd), 8, 64, true);
	f.mr = fk_mr_reg(f.d, f.pd, 4096, FK_ACC_ALL);
	for (int i = 0; i < 3; i++)
		f.qpn[i] = qp_new(&f, i);

	while (in.n && steps++ < 256) {
		uint8_t op = in8(&in), i = (uint8_t)(in8(&in) % 3);
		struct rres_qp *qp = rres_qp_lookup(&f.d->rd, f.qpn[i]);
		struct roce_tq *tq = qp ? qp->transport : NULL;

		switch (op % 11) {
		case 0:
			srq_element(&f, &in);
			break;
		case 1:
			if (tq && qp->attr.qp_state >= VIRTIO_IB_QPS_RTR &&
			    qp->attr.qp_state != VIRTIO_IB_QPS_ERR)
				roce_rq_get(tq);
			break;
		case 2:
			if (tq && tq->rwqe->valid) {
				struct roce_wc wc;

				memset(&wc, 0, sizeof(wc));
				wc.opcode = VIRTIO_IB_WC_RECV;
				wc.status = in8(&in) & 1 ? VIRTIO_IB_WC_LOC_LEN_ERR : 0;
				roce_rq_complete(tq, &wc);
			}
			break;
		case 3:
			fk_modify(f.d, f.qpn[i], in8(&in) & 1 ? VIRTIO_IB_QPS_ERR :
				  VIRTIO_IB_QPS_RESET, 0, NULL);
			break;
		case 4:
			if (qp && rres_qp_destroy(&f.d->rd, f.qpn[i]) == RRES_OK)
				f.qpn[i] = qp_new(&f, i);
			break;
		case 5:
			evq_buffers(&f, &in);
			break;
		case 6: {
			uint8_t t = (uint8_t)(in8(&in) % VIRTIO_IB_EVENT_NUM);

			switch (in8(&in) % 4) {
			case 0:
				if (qp)
					rres_event_raise(&f.d->rd, &qp->ev, t);
				break;
			case 1:
				rres_event_raise(&f.d->rd, &f.srq->ev, t);
				break;
			case 2:
				rres_event_raise(&f.d->rd,
						 &rres_cq_lookup(&f.d->rd, f.cq[1])->ev, t);
				break;
			default:
				rres_event_raise(&f.d->rd, &f.d->rd.port_ev, t);
				break;
			}
			break;
		}
		case 7:
			rres_srq_modify(&f.d->rd, f.srq->srqn, VIRTIO_IB_SRQ_LIMIT, in8(&in) % 18);
			break;
		case 8:
			rres_cq_resize(&f.d->rd, f.cq[in8(&in) & 1], in8(&in) % 12);
			break;
		case 9:
			fk_cq_post(f.d, f.cq[in8(&in) & 1], in8(&in) % 4);
			for (int c = 0; c < 2; c++) {
				struct virtio_rdma_cq_req wc[8];

				fk_poll_cq(f.d, f.cq[c], wc, 8);
			}
			break;
		default:
			roce_tp_poll(f.d->tp);
			break;
		}
		check(&f);
	}
	fk_env_fini(&f.env);
	return 0;
}
