/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring elements of the virtio-rdma device (id 42) at the transport's ring
 * boundary: its send queue element decoded into the transport's request
 * form, its completion element encoded from a completion. The receive
 * element differs only in its header (roce_rq.c). docs/spec.md "The
 * virtio-rdma device".
 */
#ifndef VRDMA_ROCE_VIRTIO_RDMA_H
#define VRDMA_ROCE_VIRTIO_RDMA_H

#include "roce/roce_tp.h"
#include "vrdma/virtio_rdma.h"

/* Decode a send element of qp into *req (the transport's own request form,
 * inline data copied in) and what that form cannot hold into *x (the UD
 * address vector, READ_WITH_INV, REG_MR's MR). x->wr_id gets the WR id as
 * soon as it is readable. Returns 0,
 * a VIRTIO_IB_WC_* status to complete the WR with, or -1 for a chain too
 * short to be a request (completed as LOC_QP_OP_ERR, counted).
 * RDMA_READ_WITH_INV becomes an RDMA READ with *read_inv set and the key
 * to invalidate in req->invalidate_rkey. */
struct roce_virtio_rdma_wr {
	uint64_t wr_id;
	bool has_av;              /* UD / GSI: av is the WR's address vector */
	struct rres_av av;
	bool read_inv;            /* RDMA_READ_WITH_INV */
	bool rekey;               /* REG_MR: MR mrn gets req->reg.key / access */
	uint32_t mrn;
};
int roce_virtio_rdma_sq_decode(const struct rres_dev *rd, const struct rres_qp *qp,
			    const struct vq_elem *e, struct virtio_rdma_sq_req_ext *req,
			    struct roce_virtio_rdma_wr *x);

/* Encode a completion (its flags already filtered) as a completion element. */
void roce_virtio_rdma_cqe_encode(const struct roce_wc *wc, uint8_t status, uint8_t opcode,
			      uint32_t flags, struct virtio_rdma_dev_cq_req *c);

#endif
