/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring boundary of the virtio-rdma device: its send queue element (75 bytes,
 * IB opcode and flag numbering, the UD address vector inline) becomes the
 * transport's request form, its completion element (38 bytes, IB status
 * and completion opcode numbering, sl / port / pkey index) is written from
 * a completion. Everything behind the boundary is the same transport.
 */
#include "roce/roce_virtio_rdma.h"

#include <string.h>

#include "common/util.h"

/* transport status -> IB ib_wc_status */
static const uint8_t wc_status_ib[] = {
	[VIRTIO_IB_WC_SUCCESS] = VIRTIO_RDMA_DEV_WC_SUCCESS,
	[VIRTIO_IB_WC_LOC_LEN_ERR] = VIRTIO_RDMA_DEV_WC_LOC_LEN_ERR,
	[VIRTIO_IB_WC_LOC_QP_OP_ERR] = VIRTIO_RDMA_DEV_WC_LOC_QP_OP_ERR,
	[VIRTIO_IB_WC_LOC_PROT_ERR] = VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR,
	[VIRTIO_IB_WC_WR_FLUSH_ERR] = VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR,
	[VIRTIO_IB_WC_BAD_RESP_ERR] = VIRTIO_RDMA_DEV_WC_BAD_RESP_ERR,
	[VIRTIO_IB_WC_LOC_ACCESS_ERR] = VIRTIO_RDMA_DEV_WC_LOC_ACCESS_ERR,
	[VIRTIO_IB_WC_REM_INV_REQ_ERR] = VIRTIO_RDMA_DEV_WC_REM_INV_REQ_ERR,
	[VIRTIO_IB_WC_REM_ACCESS_ERR] = VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR,
	[VIRTIO_IB_WC_REM_OP_ERR] = VIRTIO_RDMA_DEV_WC_REM_OP_ERR,
	[VIRTIO_IB_WC_RETRY_EXC_ERR] = VIRTIO_RDMA_DEV_WC_RETRY_EXC_ERR,
	[VIRTIO_IB_WC_RNR_RETRY_EXC_ERR] = VIRTIO_RDMA_DEV_WC_RNR_RETRY_EXC_ERR,
	[VIRTIO_IB_WC_REM_ABORT_ERR] = VIRTIO_RDMA_DEV_WC_REM_ABORT_ERR,
	[VIRTIO_IB_WC_FATAL_ERR] = VIRTIO_RDMA_DEV_WC_FATAL_ERR,
	[VIRTIO_IB_WC_RESP_TIMEOUT_ERR] = VIRTIO_RDMA_DEV_WC_RESP_TIMEOUT_ERR,
	[VIRTIO_IB_WC_GENERAL_ERR] = VIRTIO_RDMA_DEV_WC_GENERAL_ERR,
	[VIRTIO_IB_WC_MW_BIND_ERR] = VIRTIO_RDMA_DEV_WC_MW_BIND_ERR,
};

/* transport completion opcode -> IB ib_wc_opcode */
static const uint8_t wc_opcode_ib[] = {
	[VIRTIO_IB_WC_SEND] = VIRTIO_RDMA_DEV_WC_OP_SEND,
	[VIRTIO_IB_WC_RDMA_WRITE] = VIRTIO_RDMA_DEV_WC_OP_RDMA_WRITE,
	[VIRTIO_IB_WC_RDMA_READ] = VIRTIO_RDMA_DEV_WC_OP_RDMA_READ,
	[VIRTIO_IB_WC_RECV] = VIRTIO_RDMA_DEV_WC_OP_RECV,
	[VIRTIO_IB_WC_RECV_RDMA_WITH_IMM] = VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM,
	[VIRTIO_IB_WC_COMP_SWAP] = VIRTIO_RDMA_DEV_WC_OP_COMP_SWAP,
	[VIRTIO_IB_WC_FETCH_ADD] = VIRTIO_RDMA_DEV_WC_OP_FETCH_ADD,
	[VIRTIO_IB_WC_BIND_MW] = VIRTIO_RDMA_DEV_WC_OP_BIND_MW,
	[VIRTIO_IB_WC_LOCAL_INV] = VIRTIO_RDMA_DEV_WC_OP_LOCAL_INV,
	[VIRTIO_IB_WC_REG_MR] = VIRTIO_RDMA_DEV_WC_OP_REG_MR,
};

void roce_virtio_rdma_cqe_encode(const struct roce_wc *wc, uint8_t status, uint8_t opcode,
			      uint32_t flags, struct virtio_rdma_dev_cq_req *c)
{
	memset(c, 0, sizeof(*c)); /* vendor_err, pkey_index, sl: 0 */
	c->wr_id = htole64(wc->wr_id);
	c->status = status < ARRAY_SIZE(wc_status_ib) ? wc_status_ib[status]
						       : VIRTIO_RDMA_DEV_WC_GENERAL_ERR;
	c->opcode = opcode < ARRAY_SIZE(wc_opcode_ib) ? wc_opcode_ib[opcode]
						       : VIRTIO_RDMA_DEV_WC_OP_SEND;
	c->byte_len = htole32(wc->byte_len);
	if (flags & (VIRTIO_IB_WC_WITH_IMM | VIRTIO_IB_WC_WITH_INV))
		memcpy(&c->ex, &wc->imm, 4);
	c->qp_num = htole32(wc->qp_num);
	c->src_qp = htole32(wc->src_qp);
	/* GRH, WITH_IMM, WITH_INVALIDATE have the IB bit numbers; the IPv4
	 * header flag does not exist here (IB's bit 3 means IP_CSUM_OK) */
	c->wc_flags = htole32(flags & (VIRTIO_IB_WC_GRH | VIRTIO_IB_WC_WITH_IMM |
				       VIRTIO_IB_WC_WITH_INV));
	c->port_num = 1;
}

/* Opcodes this device accepts on its send queue (IB numbering = the
 * transport's for these). */
static bool sq_opcode_known(uint32_t op)
{
	switch (op) {
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE:
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM:
	case VIRTIO_RDMA_DEV_WR_SEND:
	case VIRTIO_RDMA_DEV_WR_SEND_WITH_IMM:
	case VIRTIO_RDMA_DEV_WR_RDMA_READ:
	case VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD:
	case VIRTIO_RDMA_DEV_WR_LOCAL_INV:
	case VIRTIO_RDMA_DEV_WR_SEND_WITH_INV:
	case VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV:
	case VIRTIO_RDMA_DEV_WR_REG_MR:
		return true;
	default:
		return false;
	}
}

static int sq_decode_av(const struct rres_dev *rd, const struct rres_qp *qp,
			const struct virtio_rdma_dev_av *w, struct rres_av *av)
{
	struct virtio_rdma_ah_attr a;
	uint32_t x = le32toh(w->sl_tclass_flowlabel);

	if (le32toh(w->port) != 1)
		return VIRTIO_IB_WC_LOC_QP_OP_ERR;
	if (le32toh(w->pdn) != qp->pd->pdn)
		return VIRTIO_IB_WC_LOC_PROT_ERR;
	memset(&a, 0, sizeof(a));
	memcpy(a.grh.dgid, w->dgid, 16);
	a.grh.flow_label = htole32(x & 0xfffffu);
	a.grh.traffic_class = (uint8_t)(x >> 20);
	a.grh.sgid_index = w->gid_index;
	a.grh.hop_limit = w->hop_limit;
	memcpy(a.dmac, w->dmac, 6);
	if (rres_av_from_wire(rd, &a, false, av))
		return VIRTIO_IB_WC_LOC_QP_OP_ERR;
	return 0;
}

int roce_virtio_rdma_sq_decode(const struct rres_dev *rd, const struct rres_qp *qp,
			    const struct vq_elem *e, struct virtio_rdma_sq_req_ext *req,
			    struct roce_virtio_rdma_wr *x)
{
	const size_t hdr = sizeof(struct virtio_rdma_dev_sq_req);
	struct virtio_rdma_dev_sq_req v;
	uint32_t op, flags, n;

	memset(x, 0, sizeof(*x));
	memset(req, 0, sizeof(*req));
	if (e->out_len < hdr) {
		if (e->out_len >= offsetof(struct virtio_rdma_dev_sq_req, wr_id) + 8) {
			uint64_t id;

			vq_elem_read(e, offsetof(struct virtio_rdma_dev_sq_req, wr_id), &id, 8);
			x->wr_id = le64toh(id);
		}
		return -1;
	}
	vq_elem_read(e, 0, &v, hdr);
	x->wr_id = le64toh(v.wr_id);
	req->wr_id = v.wr_id;
	op = le32toh(v.opcode);
	flags = le32toh(v.send_flags) & ~VIRTIO_RDMA_DEV_SEND_IP_CSUM; /* a hint */
	req->opcode = (uint8_t)op;
	req->send_flags = (uint8_t)(flags & 0x0f);
	if (!sq_opcode_known(op) || (flags & ~0x0fu))
		return VIRTIO_IB_WC_LOC_QP_OP_ERR;
	memcpy(&req->imm_data, &v.ex, 4); /* imm_data or invalidate_rkey */
	if (op == VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV) {
		req->opcode = VIRTIO_IB_WR_RDMA_READ;
		x->read_inv = true;
	}
	switch (op) {
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE:
	case VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM:
	case VIRTIO_RDMA_DEV_WR_RDMA_READ:
	case VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV:
		req->rdma.remote_addr = v.wr.rdma.remote_addr;
		req->rdma.rkey = v.wr.rdma.rkey;
		break;
	case VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP:
	case VIRTIO_RDMA_DEV_WR_ATOMIC_FETCH_AND_ADD:
		req->atomic.remote_addr = v.wr.atomic.remote_addr;
		req->atomic.compare_add = v.wr.atomic.compare_add;
		req->atomic.swap = v.wr.atomic.swap;
		req->atomic.rkey = v.wr.atomic.rkey;
		break;
	case VIRTIO_RDMA_DEV_WR_REG_MR: {
		uint32_t access = le32toh(v.wr.reg.access);

		/* the pages come with the WR (pages set), or came with
		 * MAP_MR_SG (key and rights only) */
		if (access & ~(uint32_t)(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE |
					 VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
					 VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ |
					 VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC |
					 VIRTIO_RDMA_DEV_ACCESS_MW_BIND))
			return VIRTIO_IB_WC_LOC_QP_OP_ERR;
		req->reg.key = v.wr.reg.key;
		req->reg.access = htole32(access);
		if (v.wr.reg.pages) { /* the key names the MR */
			req->reg.iova = v.wr.reg.iova;
			req->reg.length = v.wr.reg.length;
			req->reg.page_list = v.wr.reg.pages;
			break;
		}
		x->rekey = true;
		x->mrn = le32toh(v.wr.reg.mrn);
		break;
	}
	default:
		break;
	}
	if (qp->type == VIRTIO_IB_QPT_UD || qp->type == VIRTIO_IB_QPT_GSI) {
		int st;

		req->ud.remote_qpn = v.wr.ud.remote_qpn;
		req->ud.remote_qkey = v.wr.ud.remote_qkey;
		st = sq_decode_av(rd, qp, &v.wr.ud.av, &x->av);
		if (st)
			return st;
		x->has_av = true;
	}
	n = le32toh(v.num_sge);
	if (flags & VIRTIO_RDMA_DEV_SEND_INLINE) {
		/* the data follows the fixed part; num_sge is its length */
		if (n > VIRTIO_RDMA_INLINE_DATA_SIZE) {
			req->inline_len = htole16(0xffff); /* LOC_LEN_ERR below */
			return 0;
		}
		if (e->out_len < hdr + n)
			return -1;
		vq_elem_read(e, hdr, req->inline_data, n);
		req->inline_len = htole16((uint16_t)n);
	} else {
		req->num_sge = htole32(n);
	}
	return 0;
}
