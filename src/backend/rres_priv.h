/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the device model's .c files (rres_res.c, rres_srq_mw.c,
 * rres_event.c, rres_ctrl.c); not a contract for other modules.
 */
#ifndef VRDMA_BACKEND_RRES_PRIV_H
#define VRDMA_BACKEND_RRES_PRIV_H

#include "backend/rres_dev.h"

/* Undo the last rres_table_alloc() exactly (the FIFO order is restored). */
void rres_table_unalloc(struct rres_table *t, uint32_t idx);
/* Extension limits and capabilities from cfg (rres_dev_init, before the
 * tables are sized). */
void rres_dev_init_ext(struct rres_dev *rd, const struct rres_dev_cfg *cfg);
/* Free an MR or a window unconditionally (page references, PD reference,
 * bound-window counts). */
void rres_mr_free(struct rres_dev *rd, struct rres_mr *mr);
/* Free an SRQ unconditionally (hook called, events dropped). */
void rres_srq_free(struct rres_dev *rd, struct rres_srq *srq);
/* Whether one more MR (not a window) fits: table room and max_mr. */
bool rres_mr_room(const struct rres_dev *rd);
/* Whether access is a valid MR access set for this device now (REMOTE_ATOMIC
 * and MW_BIND only with the extension and its capability; REMOTE_WRITE and
 * REMOTE_ATOMIC need LOCAL_WRITE). */
bool rres_mr_access_ok(const struct rres_dev *rd, uint32_t access);
/* Number of 4 KiB pages [va, va+len) touches (len > 0, no wrap). */
uint64_t rres_span_pages(uint64_t va, uint64_t len);
struct vhost_mem_region;
/* Add r to the sorted set regs[0..*n) if absent (grows it past *cap). */
int rres_region_set_add(struct vhost_mem_region ***regs, uint32_t *n, uint32_t *cap,
			struct vhost_mem_region *r);

#endif /* VRDMA_BACKEND_RRES_PRIV_H */
