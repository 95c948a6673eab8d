/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Key/value writer for the control answers: the same calls produce text
 * ("KIND key value key value ..." per object, like rdma(8)) or one JSON
 * object {"KIND": [{...}, ...], ...}.
 */
#ifndef VRDMA_MGMT_KV_H
#define VRDMA_MGMT_KV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define KV_MAX_DEPTH 4

struct kvw {
	FILE *f;
	bool json;
	int depth;
	bool first[KV_MAX_DEPTH + 1];
	const char *kind;            /* text: the current list's kind */
};

void kvw_begin(struct kvw *k, FILE *f, bool json);
void kvw_end(struct kvw *k);
/* A list of objects of one kind ("dev", "qp", ...). */
void kvw_list_begin(struct kvw *k, const char *kind);
void kvw_list_end(struct kvw *k);
void kvw_obj_begin(struct kvw *k);
void kvw_obj_end(struct kvw *k);
void kvw_str(struct kvw *k, const char *key, const char *val);
void kvw_u64(struct kvw *k, const char *key, uint64_t val);
void kvw_bool(struct kvw *k, const char *key, bool val);

#endif /* VRDMA_MGMT_KV_H */
