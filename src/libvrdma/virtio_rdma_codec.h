/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma: the virtio-rdma device model's encoders and decoders
 * (virtio_rdma.c), pure functions over the wire structures of
 * include/vrdma/virtio_rdma.h; declared here for the unit tests.
 */
#ifndef VRDMA_LIBVRDMA_VIRTIO_RDMA_CODEC_H
#define VRDMA_LIBVRDMA_VIRTIO_RDMA_CODEC_H

#include <stdint.h>

#include "vrdma/virtio_net_roce.h"
#include "vrdma/virtio_rdma.h"
#include "vrdma/vrdma_rdma.h"

struct vrdma_rdma;

/* VIRTIO_IB_QP_* mask -> the IB attribute mask of the device. */
uint32_t vrdma_vrd_attr_mask(uint32_t mask);
/* Completion status / opcode (IB numbering) -> VIRTIO_IB_WC_* (opcode
 * 0xff when unknown). */
uint8_t vrdma_vrd_wc_status(uint8_t ib);
uint8_t vrdma_vrd_wc_opcode(uint8_t ib);
/* Address vector of MODIFY_QP (GRH, port 1). */
void vrdma_vrd_ah_to_wire(const struct vrdma_ah_attr *a, struct virtio_rdma_dev_ah_attr *w);
/* Address vector of a UD work request. */
void vrdma_vrd_av_to_wire(const struct vrdma_ah_attr *a, uint32_t pdn,
			  struct virtio_rdma_dev_av *w);
/* QUERY_DEVICE answer from the configuration space. */
void vrdma_vrd_device_attr(const struct virtio_rdma_dev_config *c,
			   struct virtio_rdma_ack_query_device_ext *d);
/* MODIFY_QP of the virtio-net RoCE layout -> the device's. */
void vrdma_vrd_modify_qp(const struct virtio_rdma_cmd_modify_qp *m,
			 struct virtio_rdma_dev_cmd_modify_qp *c);
/* A validated send WR into slot (UD: r's address handle table); returns
 * the element's length. */
uint32_t vrdma_vrd_sq_encode(const struct vrdma_rdma *r, uint8_t qp_type, uint32_t qp_pdn,
			     uint8_t *slot, const struct vrdma_send_wr *wr, uint64_t len);
uint32_t vrdma_vrd_rq_encode(uint8_t *slot, const struct vrdma_recv_wr *wr);
void vrdma_vrd_cq_decode(const void *b, struct vrdma_wc *wc);

#endif
