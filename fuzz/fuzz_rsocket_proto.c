/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz the rsocket wire decoding (src/rdmacm/rsocket_proto.h): the input is
 * a peer's connection private data for rs_conn_parse, whose results must
 * stay in their bounds (SGL entries 1..64, iomap entries as the 8-bit scale
 * allows, the iomap table right after the SGL); then every 4 bytes as an
 * immediate, whose op and data must rebuild it, and every byte as a scaled
 * size, which must encode back to itself (sizes up to 128 and multiples of
 * 256 round-trip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rsocket_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_conn_info ci;

	if (!rs_conn_parse(data, size, &ci)) {
		if (ci.target_sgl.length < 1 || ci.target_sgl.length > RS_PEER_SGL_MAX)
			abort();
		if (ci.iomap.length > 0x7f00 || (ci.iomap.length > 128 && ci.iomap.length % 256))
			abort();
		if (ci.iomap.length && ci.iomap.addr != ci.target_sgl.addr +
		    sizeof(struct rs_wire_sge) * ci.target_sgl.length)
			abort();
	}
	for (size_t i = 0; i + 4 <= size; i += 4) {
		uint32_t imm;

		memcpy(&imm, data + i, 4);
		if (rs_imm(rs_imm_op(imm), rs_imm_data(imm)) != imm || rs_imm_data(imm) >> 29)
			abort();
	}
	for (size_t i = 0; i < size; i++) {
		unsigned v = rs_scale_decode(data[i]);

		if ((v <= 128 || v % 256 == 0) && rs_scale_decode(rs_scale_encode(v)) != v)
			abort();
	}
	return 0;
}
