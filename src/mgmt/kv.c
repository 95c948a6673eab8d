/* SPDX-License-Identifier: BSD-3-Clause */
/* Key/value writer (see kv.h). */
#include "mgmt/kv.h"

#include <inttypes.h>
#include <string.h>

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void sep(struct kvw *k)
{
	if (!k->first[k->depth])
		fputc(',', k->f);
	k->first[k->depth] = false;
}

void kvw_begin(struct kvw *k, FILE *f, bool json)
{
	k->f = f;
	k->json = json;
	k->depth = 0;
	k->first[0] = true;
	k->kind = "";
	if (json) {
		fputc('{', f);
		k->depth = 1;
		k->first[1] = true;
	}
}

void kvw_end(struct kvw *k)
{
	if (k->json)
		fputs("}\n", k->f);
}

void kvw_list_begin(struct kvw *k, const char *kind)
{
	k->kind = kind;
	if (!k->json || k->depth >= KV_MAX_DEPTH)
		return;
	sep(k);
	json_string(k->f, kind);
	fputs(":[", k->f);
	k->first[++k->depth] = true;
}

void kvw_list_end(struct kvw *k)
{
	if (!k->json || k->depth <= 1)
		return;
	fputc(']', k->f);
	k->depth--;
}

void kvw_obj_begin(struct kvw *k)
{
	if (!k->json) {
		fputs(k->kind, k->f);
		k->first[0] = true;
		return;
	}
	if (k->depth >= KV_MAX_DEPTH)
		return;
	sep(k);
	fputc('{', k->f);
	k->first[++k->depth] = true;
}

void kvw_obj_end(struct kvw *k)
{
	if (!k->json) {
		fputc('\n', k->f);
		return;
	}
	fputc('}', k->f);
	k->depth--;
}

void kvw_str(struct kvw *k, const char *key, const char *val)
{
	if (!k->json) {
		/* "dev NAME ..." rather than "dev dev NAME ...". */
		if (k->first[0] && !strcmp(key, k->kind))
			fprintf(k->f, " %s", val);
		else
			fprintf(k->f, " %s %s", key, val);
		k->first[0] = false;
		return;
	}
	sep(k);
	json_string(k->f, key);
	fputc(':', k->f);
	json_string(k->f, val);
}

void kvw_u64(struct kvw *k, const char *key, uint64_t val)
{
	if (!k->json) {
		if (k->first[0] && !strcmp(key, k->kind))
			fprintf(k->f, " %" PRIu64, val);
		else
			fprintf(k->f, " %s %" PRIu64, key, val);
		k->first[0] = false;
		return;
	}
	sep(k);
	json_string(k->f, key);
	fprintf(k->f, ":%" PRIu64, val);
}

void kvw_bool(struct kvw *k, const char *key, bool val)
{
	if (!k->json) {
		fprintf(k->f, " %s %s", key, val ? "yes" : "no");
		k->first[0] = false;
		return;
	}
	sep(k);
	json_string(k->f, key);
	fputs(val ? ":true" : ":false", k->f);
}
