// SPDX-License-Identifier: BSD-3-Clause
/*
 * The device's GSI QP (QPN 1) for vrdma's own librdmacm, which runs the
 * connection manager in the process (docs/spec.md, "rdma_cm in the
 * process"). Exported under the private version VRDMA_PRIVATE_1 only.
 */
#include <errno.h>
#include <string.h>

#include "verbs/verbs_priv.h"

struct ibv_qp *vrdma_ibv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);

/* Creates the GSI QP of pd's device (a UD QP with QPN 1 to verbs; its
 * receives carry the GRH area), or NULL with errno set (EBUSY-like ENOMEM
 * from the device if another context owns it). */
struct ibv_qp *vrdma_ibv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr a;
	struct vrdma_verbs_qp *qp;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	a = *attr;
	a.qp_type = VRDMA_VERBS_QPT_GSI;
	qp = vrdma_verbs_qp_create_any(pd, &a);
	if (!qp)
		return NULL;
	attr->cap = a.cap;
	return &qp->ibqp;
}
