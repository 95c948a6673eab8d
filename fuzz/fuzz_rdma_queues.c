/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for libvrdma's RDMA data path against a hostile device: what
 * the device writes into a CQ's and a QP's rings (used entries with any id
 * and length, any used->idx, any bytes in completion buffers) interleaved
 * with the application's polls and posts (work requests with random fields,
 * valid or not).
 *
 * No back-end: a CQ and a QP are built by hand on rings in plain memory
 * (their structures are libvrdma's own, src/libvrdma/rdma_priv.h), with no
 * eventfds. Checked after every step:
 *   - vrdma_cq_poll returns 0..n, every completion buffer is posted again
 *     (the ring's free descriptors stay ring size - buffers);
 *   - the send queue's free slots and the ring's free descriptors agree,
 *     the free slots are distinct and in range; a post returns -errno or
 *     0..n, never more WRs than the queue holds; the completion log never
 *     holds more than the queue's capacity (completions are mapped back to
 *     the QP through the CQ's QPN table, whatever their content);
 *   - ASan/UBSan: nothing outside the rings, buffers and slots is touched.
 *
 * Work requests include the extension's opcodes and views (atomics,
 * LOCAL_INV, SEND_WITH_INV, BIND_MW, REG_MR of a fast-registration MR whose
 * page list must stay inside its max_num_sg entries), on a device whose
 * extension capabilities the input chooses.
 *
 * The event virtqueue of the extension too: the device publishes used
 * entries with any id, length and event bytes, the application reads events
 * (vrdma_event_get) or a destroy drops an object's (events_forget). Checked:
 * every event buffer is posted again, an event names one of our objects or
 * none, unknown types are dropped.
 *
 * With extension flag 4 the device is the virtio-rdma model (its send
 * elements, completions and address handles kept by the library; a REG_MR
 * then fails cleanly: there is no control queue to send MAP_MR_SG on).
 *
 * Input: [0] CQ ring log2 (1..6), [1] SQ ring log2, [2] flags (1 event_idx,
 * 2 QP type UD, 4 QP in RTS), [3] extension (1 ROCE_EXT with every
 * capability, 2 atomics, 4 virtio-rdma model), then ops (1 byte +
 * arguments), see below.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "libvrdma/rdma_priv.h"

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

static uint32_t in32(struct input *in)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)in8(in) << (8 * i);
	return v;
}

static void *ring_alloc(uint16_t num, struct vq_drv *vq, bool event_idx)
{
	void *mem = aligned_alloc(4096, ALIGN_UP(vq_drv_ring_bytes(num), 4096ull));

	if (!mem)
		abort();
	if (vq_drv_init(vq, mem, num, event_idx) < 0)
		abort();
	return mem;
}

/* The device publishes k used entries on vq: ids / lengths from input,
 * then used->idx moves by the count (or a wild value). */
static void device_use(struct vq_drv *vq, struct input *in, uint8_t *data, size_t data_len,
		       size_t stride)
{
	uint16_t idx = vq->used->idx;
	unsigned k = in8(in) % 9, i;

	for (i = 0; i < k; i++) {
		struct vring_used_elem *e = &vq->used->ring[(uint16_t)(idx + i) & (vq->num - 1)];
		uint8_t mode = in8(in);

		e->id = mode & 1 ? in32(in) : mode % vq->num;
		e->len = mode & 2 ? in32(in) : (uint32_t)(mode * 7u);
		if (data && (mode & 4)) {
			/* scribble into the buffer of that id's slot */
			size_t off = (size_t)(e->id % (data_len / stride)) * stride;
			size_t want = in8(in), len = MIN(want, stride);

			for (size_t j = 0; j < len; j++)
				data[off + j] = in8(in);
		}
	}
	if (in8(in) == 0xff)
		idx = (uint16_t)(idx + (uint16_t)in32(in));
	else
		idx = (uint16_t)(idx + k);
	__atomic_store_n(&vq->used->idx, idx, __ATOMIC_RELEASE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct vrdma_dev *dev;
	struct vrdma_rdma *r;
	struct vrdma_wq_chunk chunk;
	struct vrdma_queue ev_q;
	struct virtio_rdma_event *ev_bufs;
	void *ev_ring;
	pthread_mutexattr_t ma;
	uint8_t xflags;
	struct vrdma_queue cq_q, sq_q;
	struct vrdma_cq cq;
	struct vrdma_qp qp;
	struct vrdma_wc wc[32];
	uint8_t scratch[1024];
	struct vrdma_sge sges[40];
	void *cq_ring, *sq_ring;
	uint16_t cq_num, sq_num;
	uint8_t flags;
	bool event_idx;

	vlog_level = -1;
	if (size < 4)
		return 0;
	cq_num = (uint16_t)(1u << (1 + in8(&in) % 6));
	sq_num = (uint16_t)(1u << (1 + in8(&in) % 6));
	flags = in8(&in);
	xflags = in8(&in);
	event_idx = flags & 1;

	dev = calloc(1, sizeof(*dev));
	r = calloc(1, sizeof(*r));
	if (!dev || !r)
		abort();
	atomic_init(&dev->dead, false);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&dev->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	/* the device's attributes and one fast-registration MR (mrn 1, PD 0,
	 * 4 pages) for REG_MR */
	r->dev = dev;
	dev->virtio_rdma = xflags & 4;
	r->model = dev->virtio_rdma ? &vrdma_model_virtio_rdma : &vrdma_model_net_roce;
	r->ext = xflags & 1;
	if (r->ext)
		r->attr.device_cap_flags = VIRTIO_IB_DEVICE_CAP_EXT_MASK;
	r->attr.atomic_cap = r->ext && (xflags & 2) ? VIRTIO_IB_ATOMIC_HCA : 0;
	r->mrs_cap = 3;
	r->mrs = calloc(r->mrs_cap, sizeof(*r->mrs));
	if (!r->mrs)
		abort();
	r->mrs[1].live = true;
	r->mrs[1].lkey = r->mrs[1].rkey = 0x1234500;
	r->mrs[1].max_num_sg = 4;
	r->mrs[1].pages = calloc(4, sizeof(le64));
	r->mrs[2].live = true; /* a user MR: not for REG_MR */
	if (!r->mrs[1].pages)
		abort();
	/* virtio-rdma: address handles 1 and 2 (the library's table) */
	r->ahs_cap = 4;
	r->ahs = calloc(r->ahs_cap, sizeof(*r->ahs));
	if (!r->ahs)
		abort();
	r->ahs[1].live = r->ahs[2].live = true;
	r->ahs[2].av.grh.flow_label = 0xfffff;
	r->ahs[2].av.sl = 15;
	dev->rdma = r;

	/* CQ: every buffer posted */
	memset(&cq_q, 0, sizeof(cq_q));
	cq_q.dev = dev;
	cq_q.num = cq_num;
	cq_q.kick_fd = cq_q.call_fd = cq_q.err_fd = -1;
	cq_ring = ring_alloc(cq_num, &cq_q.vq, event_idx);
	cq_q.vq_inited = true;
	memset(&cq, 0, sizeof(cq));
	cq.dev = dev;
	cq.model = r->model;
	cq.num = cq_num - (flags & 8 ? 1 : 0);
	cq.q = &cq_q;
	cq.bufs_bytes = (size_t)cq_num * VRDMA_CQE_SIZE;
	cq.bufs = calloc(cq_num, VRDMA_CQE_SIZE);
	pthread_spin_init(&cq.lock, PTHREAD_PROCESS_PRIVATE);
	if (!cq.bufs || vrdma_rdma_cq_fill(&cq))
		abort();

	/* QP: send queue only (the receive queue is the same code) */
	memset(&sq_q, 0, sizeof(sq_q));
	sq_q.dev = dev;
	sq_q.num = sq_num;
	sq_q.kick_fd = sq_q.call_fd = sq_q.err_fd = -1;
	sq_ring = ring_alloc(sq_num, &sq_q.vq, event_idx);
	sq_q.vq_inited = true;
	memset(&qp, 0, sizeof(qp));
	qp.dev = dev;
	qp.qpn = flags & 128 ? 0x4002 : in32(&in) & 0xffffff;
	qp.type = flags & 2 ? VIRTIO_IB_QPT_UD : VIRTIO_IB_QPT_RC;
	qp.cap.max_send_wr = sq_num - (flags & 16 ? sq_num / 2 : 0);
	qp.cap.max_send_sge = 1 + flags % 5;
	qp.cap.max_inline_data = 64 + (flags >> 5) * 64;
	qp.max_msg_sz = 1u << 31;
	qp.max_sge_rd = 2;
	atomic_init(&qp.state, flags & 4 ? VIRTIO_IB_QPS_RTS : VIRTIO_IB_QPS_INIT);
	qp.sq.q = &sq_q;
	qp.sq.nslots = qp.cap.max_send_wr;
	qp.sq.nalloc = qp.sq.nslots;
	qp.sq.ring = sq_num;
	qp.sq.model = r->model;
	qp.sq.slot_size = ALIGN_UP(r->model->sq_slot_size(qp.cap.max_send_sge,
							  qp.cap.max_inline_data),
				   (size_t)64);
	memset(&chunk, 0, sizeof(chunk));
	chunk.bytes = (size_t)qp.sq.nslots * qp.sq.slot_size;
	chunk.mem = calloc(qp.sq.nslots, qp.sq.slot_size);
	qp.sq.chunks = &chunk;
	qp.sq.free = calloc(sq_num, sizeof(*qp.sq.free));
	qp.sq.log_sig = calloc(sq_num, 1);
	if (!chunk.mem || !qp.sq.free || !qp.sq.log_sig)
		abort();
	atomic_init(&qp.sq.log_head, 0);
	atomic_init(&qp.sq.log_tail, 0);
	qp.send_cq = qp.recv_cq = &cq;
	qp.sq_sig_all = flags & 64;
	for (uint32_t i = 0; i < qp.sq.nslots; i++)
		qp.sq.free[i] = chunk.mem + (size_t)(qp.sq.nslots - 1 - i) * qp.sq.slot_size;
	qp.sq.free_head = 0;
	qp.sq.nfree = qp.sq.nslots;
	pthread_spin_init(&qp.sq.lock, PTHREAD_PROCESS_PRIVATE);
	if (vrdma_rdma_cq_attach(&cq, &qp))
		abort();

	/* the event queue: 64 buffers of 16 bytes; objects to resolve to */
	r->ncq_rings = 1;
	r->nqp_rings = VRDMA_MAX_QP_INDEXES;
	r->cqs = calloc(1, sizeof(*r->cqs));
	r->qps = calloc(r->nqp_rings, sizeof(*r->qps));
	r->srqs = calloc(1, sizeof(*r->srqs));
	if (!r->cqs || !r->qps || !r->srqs)
		abort();
	r->cqs[0] = &cq;
	r->qps[vrdma_qpn_index(qp.qpn)] = &qp;
	memset(&ev_q, 0, sizeof(ev_q));
	ev_q.dev = dev;
	ev_q.num = 64;
	ev_q.kick_fd = ev_q.call_fd = ev_q.err_fd = -1;
	ev_ring = ring_alloc(64, &ev_q.vq, event_idx);
	ev_q.vq_inited = true;
	ev_bufs = calloc(64, sizeof(*ev_bufs));
	if (!ev_bufs)
		abort();
	for (unsigned i = 0; i < 64; i++) {
		struct vq_buf vb = { (uint64_t)(uintptr_t)&ev_bufs[i], sizeof(*ev_bufs) };

		if (vq_drv_add(&ev_q.vq, NULL, 0, &vb, 1, &ev_bufs[i]))
			abort();
	}
	r->evq = &ev_q;
	r->ev_bufs = ev_bufs;
	r->ev_epfd = -1;
	memset(scratch, 0x5a, sizeof(scratch));

	while (in.n) {
		uint8_t op = in8(&in);

		switch (op % 7) {
		case 0: /* device completes into the CQ */
			device_use(&cq_q.vq, &in, (uint8_t *)cq.bufs, cq.bufs_bytes, VRDMA_CQE_SIZE);
			break;
		case 1: { /* application polls */
			int n = in8(&in) % 33, got = vrdma_cq_poll(&cq, wc, n);

			if (got < 0 || got > n)
				abort();
			break;
		}
		case 2: /* device returns send descriptors */
			device_use(&sq_q.vq, &in, chunk.mem, chunk.bytes, qp.sq.slot_size);
			break;
		case 3: { /* application posts */
			struct vrdma_send_wr w[6];
			unsigned n = in8(&in) % 7;
			int rc;

			for (unsigned i = 0; i < n; i++) {
				unsigned ns = in8(&in) % 41;

				uint8_t o = in8(&in);

				memset(&w[i], 0, sizeof(w[i]));
				w[i].wr_id = i;
				w[i].opcode = o >= 240 ? VIRTIO_IB_WR_REG_MR : o % 12;
				w[i].send_flags = in8(&in) & 0x1f;
				w[i].imm_data = in32(&in);
				w[i].rdma.remote_addr = in32(&in);
				w[i].rdma.rkey = in32(&in);
				switch (w[i].opcode) {
				case VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP:
				case VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD:
					w[i].atomic.swap = in32(&in);
					w[i].atomic.rkey = in32(&in);
					break;
				case VIRTIO_IB_WR_BIND_MW:
					w[i].bind_mw.length = in32(&in);
					w[i].bind_mw.access = in32(&in);
					break;
				case VIRTIO_IB_WR_REG_MR:
					w[i].reg.mrn = in8(&in) % 4;
					w[i].reg.key = 0x1234500 | in8(&in);
					if (in8(&in) & 1)
						w[i].reg.key ^= in32(&in);
					w[i].reg.iova = in32(&in);
					if (in8(&in) & 1)
						w[i].reg.iova = ~w[i].reg.iova;
					w[i].reg.length = in32(&in) % (6 * 4096);
					w[i].reg.addr = scratch + in8(&in) * 4;
					break;
				default:
					break;
				}
				w[i].num_sge = ns;
				w[i].sg_list = ns ? sges : NULL;
			}
			for (unsigned i = 0; i < 40; i++) {
				sges[i].addr = (uintptr_t)scratch + in8(&in);
				sges[i].length = in8(&in) % 200;
				sges[i].lkey = i;
			}
			rc = vrdma_post_send(&qp, w, n);
			/* (descriptors returned are reclaimed first) */
			if (rc > (int)n || (rc > 0 && (unsigned)rc > qp.sq.nslots))
				abort();
			break;
		}
		case 5: /* device writes events */
			device_use(&ev_q.vq, &in, (uint8_t *)ev_bufs, 64 * sizeof(*ev_bufs),
				   sizeof(*ev_bufs));
			break;
		case 6: { /* application reads events, or a destroy drops some */
			struct vrdma_async_event ev;
			uint8_t k = in8(&in);

			if (k & 0x80) {
				vrdma_rdma_events_forget(r, k & 1 ? (void *)&cq : (void *)&qp);
				break;
			}
			for (k = k % 8; k; k--) {
				int rc = vrdma_event_get(dev, &ev);

				if (rc != 0 && rc != 1 && rc != -EOPNOTSUPP)
					abort();
				if (rc != 1)
					break;
				if ((ev.cq && ev.cq != &cq) || (ev.qp && ev.qp != &qp) || ev.srq ||
				    ev.type >= VIRTIO_IB_EVENT_NUM)
					abort();
			}
			break;
		}
		default: /* the device rewrites a completion buffer wholesale */
			if (cq.num) {
				uint8_t *b = (uint8_t *)&cq.bufs[in8(&in) % cq.num];

				for (size_t j = 0; j < VRDMA_CQE_SIZE; j++)
					b[j] = in8(&in);
			}
			break;
		}
		/* invariants */
		if (cq_q.vq.num_free != cq_num - cq.num || ev_q.vq.num_free != 0)
			abort();
		if (atomic_load(&qp.sq.log_tail) - atomic_load(&qp.sq.log_head) > qp.sq.nslots)
			abort();
		if (qp.sq.nfree > qp.sq.nslots ||
		    sq_q.vq.num_free != sq_num - (qp.sq.nslots - qp.sq.nfree))
			abort();
		/* the free slots: a FIFO of nfree from free_head */
		for (uint32_t i = 0; i < qp.sq.nfree; i++) {
			uint8_t *si = qp.sq.free[(qp.sq.free_head + i) & (sq_num - 1)];
			size_t off = (size_t)(si - chunk.mem);

			if (si < chunk.mem || off >= chunk.bytes || off % qp.sq.slot_size)
				abort();
			for (uint32_t j = i + 1; j < qp.sq.nfree; j++)
				if (si == qp.sq.free[(qp.sq.free_head + j) & (sq_num - 1)])
					abort();
		}
	}

	vrdma_rdma_cq_detach(&cq, &qp);
	pthread_spin_destroy(&cq.lock);
	pthread_spin_destroy(&qp.sq.lock);
	free(cq.qtab);
	free(qp.sq.log_sig);
	free(r->mrs[1].pages);
	free(r->mrs);
	free(r->ahs);
	free(r->cqs);
	free(r->qps);
	free(r->srqs);
	free(r->evs);
	free(r);
	vq_drv_fini(&ev_q.vq);
	free(ev_ring);
	free(ev_bufs);
	pthread_mutex_destroy(&dev->lock);
	vq_drv_fini(&cq_q.vq);
	vq_drv_fini(&sq_q.vq);
	free(cq.bufs);
	free(chunk.mem);
	free(qp.sq.free);
	free(cq_ring);
	free(sq_ring);
	free(dev);
	return 0;
}
