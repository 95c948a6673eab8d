/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the fault-injection command-line parser (port/fault.h).
 *
 * Input: a configuration string, optionally followed by '\n' and bytes that
 * are cut into frames. Checks: the parser never crashes; an accepted string
 * formats to a canonical string that parses back to the same configuration;
 * an accepted configuration runs frames through an injector without leaking
 * or losing any (everything emitted or counted as dropped).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "port/fault.h"
#include "port/pkt.h"

struct count {
	uint64_t emitted;
};

static void emit(void *arg, struct pkt *p)
{
	((struct count *)arg)->emitted++;
	pkt_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fault_cfg a, b;
	const uint8_t *nl = memchr(data, '\n', size);
	size_t slen = nl ? (size_t)(nl - data) : size;
	char *s, buf[256];
	uint64_t base = pkt_outstanding();
	struct count c = { 0 };
	struct fault *f;
	int n;

	if (slen > 4096)
		return 0;
	s = malloc(slen + 1);
	if (!s)
		return 0;
	memcpy(s, data, slen);
	s[slen] = '\0';
	if (fault_cfg_parse(&a, s) != 0) {
		free(s);
		return 0;
	}
	free(s);

	n = fault_cfg_format(&a, buf, sizeof(buf));
	if (n <= 0 || n >= (int)sizeof(buf))
		abort();
	if (fault_cfg_parse(&b, buf) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
		abort();

	if (!nl)
		return 0;
	f = fault_new(NULL, &a, emit, &c);
	if (!f)
		abort();
	data = nl + 1;
	size -= slen + 1;
	while (size > 0) {
		uint32_t len = 14 + data[0] % 64;
		struct pkt *p = pkt_alloc();

		if (!p)
			break;
		memset(p->data, 0, len);
		memcpy(p->data, data, len < size ? len : size);
		p->len = len;
		fault_input(f, data[0] & 3, p);
		data += len < size ? len : size;
		size -= len < size ? len : size;
	}
	fault_flush(f);
	{
		const struct fault_stats *st = fault_get_stats(f);

		if (fault_held(f) != 0 ||
		    c.emitted != st->frames - st->dropped + st->duplicated)
			abort();
	}
	fault_free(f);
	if (pkt_outstanding() != base)
		abort();
	return 0;
}
