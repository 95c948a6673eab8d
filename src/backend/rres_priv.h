/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the device model's .c files (rres_res.c, rres_srq_mw.c,
 * rres_event.c, rres_ctrl.c); not a contract for other modules.
 */
#ifndef VRDMA_BACKEND_RRES_PRIV_H
#define VRDMA_BACKEND_RRES_PRIV_H

#include "backend/rres_dev.h"

/* Undo the last roce_table_alloc() exactly (the FIFO order is restored). */
void roce_table_unalloc(struct roce_table *t, uint32_t idx);
/* Extension limits and capabilities from cfg (roce_dev_init, before the
 * tables are sized). */
void roce_dev_init_ext(struct roce_dev *rd, const struct roce_dev_cfg *cfg);
/* Free an MR or a window unconditionally (page references, PD reference,
 * bound-window counts). */
void roce_mr_free(struct roce_dev *rd, struct roce_mr *mr);
/* Free an SRQ unconditionally (hook called, events dropped). */
void roce_srq_free(struct roce_dev *rd, struct roce_srq *srq);
/* Whether one more MR (not a window) fits: table room and max_mr. */
bool roce_mr_room(const struct roce_dev *rd);
/* Whether access is a valid MR access set for this device now (REMOTE_ATOMIC
 * and MW_BIND only with the extension and its capability; REMOTE_WRITE and
 * REMOTE_ATOMIC need LOCAL_WRITE). */
bool roce_mr_access_ok(const struct roce_dev *rd, uint32_t access);
/* Number of 4 KiB pages [va, va+len) touches (len > 0, no wrap). */
uint64_t roce_span_pages(uint64_t va, uint64_t len);
struct vhost_mem_region;
/* Add r to the sorted set regs[0..*n) if absent (grows it past *cap). */
int roce_region_set_add(struct vhost_mem_region ***regs, uint32_t *n, uint32_t *cap,
			struct vhost_mem_region *r);

#endif /* VRDMA_BACKEND_RRES_PRIV_H */
