/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the RoCE control path: the input is a sequence of records
 *   u8 op | u8 len | len bytes
 * executed in order on one fresh rres_dev whose driver memory is a real
 * vhost_mem with one memfd region (GPA 0x10000, 16 pages; page 15 holds a
 * page list of the 16 pages). The device offers the extension (ROCE_EXT,
 * 3 SRQs, 3 windows) and starts with it negotiated. op & 0x1f is the command
 * number (28..31 unknown); op & 0x40 shrinks the ack buffer to len / 4
 * bytes; op & 0x80 turns the record into a transport-side action (async QP
 * state change, CQ notification check, MR translation, device reset, REG_MR,
 * invalidation, BIND_MW, events, ROCE_EXT on/off, link and MAC changes)
 * chosen by the first byte.
 *
 * After every step the fuzzer checks the model's invariants and aborts on a
 * violation: a failed command changed nothing, reference counts equal the
 * objects that hold them, registered pages add up, windows never exceed
 * their MR, the event FIFO is consistent, region references are balanced at
 * the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/rres_dev.h"
#include "vhost/vhost_mem.h"

#define REGION_GPA   0x10000ull
#define REGION_PAGES 16

static struct vhost_mem mem;
static struct vhost_mem_region *region;

static void die(const char *why)
{
	(void)why;
	__builtin_trap();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = memfd_create("fuzz_roce", 0);

	(void)argc;
	(void)argv;
	vhost_mem_init(&mem);
	if (fd < 0 || ftruncate(fd, REGION_PAGES * 4096) < 0 ||
	    vhost_mem_add(&mem, REGION_GPA, REGION_PAGES * 4096, REGION_GPA, 0, fd) < 0)
		abort();
	region = vhost_mem_find(&mem, REGION_GPA);
	if (!region)
		abort();
	return 0;
}

/* Page 15 of the region: a page list naming pages 0..15 (restored before
 * each input; translations may overwrite it). */
static void write_page_list(void)
{
	for (uint64_t k = 0; k < REGION_PAGES; k++) {
		uint64_t g = htole64(REGION_GPA + k * 4096);

		memcpy(region->host + 15 * 4096 + 8 * k, &g, 8);
	}
}

/* Walk every table and check reference counts and page accounting. */
static void check_invariants(const struct rres_dev *rd)
{
	uint64_t pd_refs = 0, cq_refs = 0, pages = 0, holders = 0, srq_refs = 0;
	uint32_t i, n, nmw = 0, nev = 0;
	struct rres_counts c;

	for (i = 0, n = 0; i < rd->mrs.size; i++) {
		const struct rres_mr *mr = rd->mrs.slot[i];
		uint32_t bound = 0;

		if (!mr)
			continue;
		n++;
		if (mr->mrn != i || (mr->lkey >> RRES_KEY_BITS) != i || !mr->pd ||
		    rres_pd_lookup(rd, mr->pd->pdn) != mr->pd)
			die("mr");
		if (mr->rkey && (mr->rkey >> RRES_KEY_BITS) != i)
			die("rkey");
		pages += mr->type == RRES_MR_FAST ? mr->max_pages : mr->npages;
		if (mr->type == RRES_MR_FAST && mr->npages > mr->max_pages)
			die("fast pages");
		if (mr->state == RRES_MR_FREE && mr->nregions)
			die("free mr pinned");
		for (uint32_t r = 0; r < mr->nregions; r++)
			holders += mr->regions[r] == region;
		if (mr->type == RRES_MR_MW) {
			const struct rres_mr *b = mr->bound_mr;

			nmw++;
			if ((mr->state == RRES_MR_VALID) != (b != NULL) || mr->nbound)
				die("mw state");
			if (b && (rres_mr_lookup(rd, b->mrn) != b || b->type == RRES_MR_MW ||
				  b->type == RRES_MR_DMA || b->state != RRES_MR_VALID ||
				  b->pd != mr->pd))
				die("mw bound");
			/* a window never grants more than its MR */
			if (b && (mr->iova < b->iova || mr->length > b->length ||
				  mr->iova - b->iova > b->length - mr->length))
				die("mw range");
			if (b && (mr->access & (VIRTIO_IB_ACCESS_REMOTE_WRITE |
						VIRTIO_IB_ACCESS_REMOTE_ATOMIC)) &&
			    !(b->access & VIRTIO_IB_ACCESS_LOCAL_WRITE))
				die("mw rights");
			if (rres_mr_lookup_lkey(rd, mr->lkey, mr->pd, 0))
				die("mw local");
			continue;
		}
		for (uint32_t j = 0; j < rd->mrs.size; j++) {
			const struct rres_mr *w = rd->mrs.slot[j];

			bound += w && w->type == RRES_MR_MW && w->bound_mr == mr;
		}
		if (bound != mr->nbound)
			die("nbound");
		if (mr->state != RRES_MR_VALID &&
		    (rres_mr_lookup_lkey(rd, mr->lkey, mr->pd, 0) ||
		     rres_mr_lookup_rkey(rd, mr->rkey, mr->pd, 0)))
			die("free key usable");
	}
	if (n != rd->mrs.used || pages != rd->mr_pages || nmw != rd->nmw)
		die("mr count");
	rres_dev_counts(rd, &c);
	if (c.mw != nmw || c.mr != n - nmw || c.mr > rd->attr.max_mr || nmw > rd->attr.max_mw)
		die("mr counts");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->srqs.size; i++) {
		const struct rres_srq *srq = rd->srqs.slot[i];

		if (!srq)
			continue;
		n++;
		if (srq->srqn != i || srq->ev.id != i || rres_srq_lookup(rd, i) != srq ||
		    rres_ring_srq(rd, srq->vq) != srq || srq->srq_limit > srq->max_wr)
			die("srq");
		srq_refs += srq->refcnt;
	}
	if (n != rd->srqs.used)
		die("srq count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->ahs.size; i++)
		n += rd->ahs.slot[i] != NULL;
	if (n != rd->ahs.used)
		die("ah count");
	pd_refs += n;
	for (i = 0, n = 0; i < rd->qps.size; i++) {
		const struct rres_qp *qp = rd->qps.slot[i];

		if (!qp)
			continue;
		n++;
		if (qp->index != i || vrdma_qpn_index(qp->qpn) != i || i == 0 ||
		    qp->qpn == VRDMA_QPN_MULTICAST || rres_qp_lookup(rd, qp->qpn) != qp)
			die("qp");
		if ((qp->type == VIRTIO_IB_QPT_GSI) != (qp->qpn == VRDMA_GSI_QPN))
			die("gsi");
		if (qp->attr.qp_state > VIRTIO_IB_QPS_ERR)
			die("state");
		if (rres_cq_lookup(rd, qp->send_cq->cqn) != qp->send_cq ||
		    rres_cq_lookup(rd, qp->recv_cq->cqn) != qp->recv_cq)
			die("qp cq");
		if (qp->srq && (rres_srq_lookup(rd, qp->srq->srqn) != qp->srq ||
				qp->cap.max_recv_wr || qp->type == VIRTIO_IB_QPT_GSI))
			die("qp srq");
		if (qp->ev.id != qp->qpn)
			die("qp ev");
		srq_refs -= qp->srq != NULL;
	}
	if (srq_refs)
		die("srq refs");
	if (n != rd->qps.used)
		die("qp count");
	pd_refs += n;
	cq_refs = 2ull * n;
	for (i = 0; i < rd->pds.size; i++)
		if (rd->pds.slot[i])
			pd_refs -= ((const struct rres_pd *)rd->pds.slot[i])->refcnt;
	for (i = 0; i < rd->cqs.size; i++)
		if (rd->cqs.slot[i])
			cq_refs -= ((const struct rres_cq *)rd->cqs.slot[i])->refcnt;
	if (pd_refs || cq_refs)
		die("refcnt");
	/* the event FIFO: linked both ways, only objects with pending bits */
	for (const struct rres_ev_obj *o = rd->ev_head, *prev = NULL; o; prev = o, o = o->next) {
		if (!o->queued || !o->pending || o->prev != prev || ++nev > 100000)
			die("event fifo");
		if (!o->next && rd->ev_tail != o)
			die("event tail");
	}
	if (!rd->ev_head && rd->ev_tail)
		die("event tail");
	if (region->refcnt != 1 + holders)
		die("region refs");
}

static void transport_action(struct rres_dev *rd, const uint8_t *d, size_t len)
{
	uint32_t a = len > 4 ? (uint32_t)d[1] | (uint32_t)d[2] << 8 | (uint32_t)d[3] << 16 : 0;
	struct iovec iov[8];
	struct rres_qp *qp;
	struct rres_mr *mr;
	struct rres_cq *cq;
	struct rres_srq *srq;
	uint8_t t;
	uint32_t id;

	if (!len)
		return;
	switch (d[0] % 14) {
	case 0:
		qp = rres_qp_lookup(rd, a);
		if (qp)
			(void)rres_qp_async_state(rd, qp, len > 4 ? d[4] : VIRTIO_IB_QPS_ERR);
		break;
	case 1:
		cq = rres_cq_lookup(rd, a);
		if (cq)
			(void)rres_cq_notify_check(cq, len > 4 && (d[4] & 1));
		break;
	case 2:
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 12) {
			uint64_t iova, l;

			memcpy(&iova, d + 4, 8);
			l = len > 12 ? d[12] * 97u : 1;
			int n = rres_mr_to_iov(rd, mr, iova, l, iov, 8);

			if (n > 8)
				die("iov");
			for (int k = 0; k < n; k++) {
				uint8_t *p = iov[k].iov_base;

				/* Inside the region (ASan would also catch it). */
				if (p < region->host ||
				    p + iov[k].iov_len > region->host + region->size)
					die("iov range");
				memset(p, 0x5a, iov[k].iov_len);
			}
		}
		break;
	case 3:
		qp = rres_qp_lookup(rd, a);
		if (qp)
			rres_qp_sq_drained(qp);
		break;
	case 4:
		(void)rres_ring_usable(rd, a);
		(void)rres_ring_qp(rd, a, NULL);
		(void)rres_ring_cq(rd, a);
		break;
	case 5:
		rres_dev_reset(rd);
		break;
	case 6: /* REG_MR: MR a, key byte, iova, length, page list, PD, access */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 10)
			(void)rres_mr_fast_reg(rd, rres_pd_lookup(rd, d[8]),
					       (mr->lkey & ~0xffu) | d[4], (uint64_t)d[5] * 1000,
					       (uint64_t)d[6] * 512,
					       REGION_GPA + 15 * 4096 + (uint64_t)(d[7] & 0x7f) * 8 -
						       (d[7] & 0x80 ? 4096 : 0),
					       d[9] & 0x3f);
		break;
	case 7: /* LOCAL_INV / SEND_WITH_INV of the object a */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 6)
			(void)rres_key_invalidate(rd, d[5] ? rres_pd_lookup(rd, d[5]) : mr->pd,
						  d[4] == 0xff ? mr->rkey
							       : (mr->rkey & ~0xffu) | d[4]);
		break;
	case 8: /* BIND_MW: window a onto MR d[4] */
		mr = rres_mr_lookup(rd, a);
		if (mr && len >= 10) {
			struct rres_mr *base = rres_mr_lookup(rd, d[4]);
			uint32_t lkey = base ? base->lkey ^ (d[6] & 3) : d[6];
			uint64_t addr = (base ? base->iova : 0) + (uint64_t)(int8_t)d[7] * 64;

			(void)rres_mw_bind(rd, mr->pd, (mr->rkey & ~0xffu) | d[5], lkey, addr,
					   (uint64_t)d[8] * 64, d[9] & 0x1f);
		}
		break;
	case 9: /* raise an event */
		if (len >= 5) {
			struct rres_ev_obj *o = &rd->port_ev;

			if ((qp = rres_qp_lookup(rd, a)))
				o = &qp->ev;
			else if ((cq = rres_cq_lookup(rd, a)))
				o = &cq->ev;
			else if ((srq = rres_srq_lookup(rd, a & 0xff)))
				o = &srq->ev;
			rres_event_raise(rd, o, d[4]);
		}
		break;
	case 10: /* deliver up to a events */
		for (uint32_t k = 0; k < (a & 0xff) && rres_event_pop(rd, &t, &id); k++)
			if (t >= VIRTIO_IB_EVENT_NUM)
				die("event type");
		break;
	case 11:
		rres_dev_set_ext(rd, !rd->ext);
		break;
	case 12:
		rres_dev_link_changed(rd, a & 1);
		if (len >= 5)
			rres_dev_set_mac(rd, (const uint8_t[6]){ 0x52, 0, 0, 0, 0, d[4] });
		break;
	default: /* rings of the extension */
		(void)rres_ring_srq(rd, a);
		(void)rres_ring_usable(rd, rres_ring_of_eventq(rd) + (a & 7));
		(void)rres_ring_decode(rd, a, &id);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rres_dev_cfg cfg;
	struct rres_dev rd;
	uint8_t out[256];
	size_t pos = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.mac[0] = 0x52;
	cfg.has_ip4 = true;
	cfg.ip4 = 0x0100000a;
	cfg.max_rdma_qps = 12;
	cfg.max_rdma_cqs = 4;
	cfg.max_pd = 4;
	cfg.max_mr = 6;
	cfg.max_ah = 4;
	cfg.max_cqe = 64;
	cfg.max_qp_wr = 64;
	cfg.max_mr_pages = 24;
	cfg.ext_offered = true;
	cfg.max_rdma_srqs = 3;
	cfg.max_srq_wr = 64;
	cfg.max_mw = 3;
	cfg.max_fast_reg_page_list_len = 8;
	cfg.mem = &mem;
	cfg.deterministic = true;
	cfg.seed = 1;
	if (rres_dev_init(&rd, &cfg))
		abort();
	rres_dev_set_ext(&rd, true);
	write_page_list();

	while (pos + 2 <= size) {
		uint8_t op = data[pos], len = data[pos + 1];
		const uint8_t *in = data + pos + 2;
		struct rres_counts before, after;
		size_t out_len = 99, cap;
		int ret;

		if (pos + 2 + len > size)
			len = (uint8_t)(size - pos - 2);
		pos += 2 + (size_t)len;
		if (op & 0x80) {
			transport_action(&rd, in, len);
			check_invariants(&rd);
			continue;
		}
		cap = op & 0x40 ? len / 4u : sizeof(out);
		rres_dev_counts(&rd, &before);
		/* Copy so the command bytes have no redzone slack past len. */
		uint8_t *buf = len ? malloc(len) : NULL;

		if (len)
			memcpy(buf, in, len);
		ret = rres_ctrl_exec(&rd, op & 0x1f, buf, len, out, cap, &out_len);
		free(buf);
		rres_dev_counts(&rd, &after);
		if (ret != VIRTIO_NET_OK && ret != VIRTIO_NET_ERR)
			die("ret");
		if (ret == VIRTIO_NET_ERR && (out_len || memcmp(&before, &after, sizeof(before))))
			die("partial state");
		if (out_len > cap)
			die("out_len");
		check_invariants(&rd);
	}
	rres_dev_fini(&rd);
	if (region->refcnt != 1)
		die("leaked region reference");
	return 0;
}
