/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BTH opcodes (IBTA Vol. 1 9.2.1, table 38) and the one table, indexed by
 * opcode, that says for each what it is (name, transport, request/response,
 * first/middle/last), which extended headers follow the BTH, where each one
 * starts and how long the transport headers are in total. Building and
 * parsing packets read this table instead of switching on opcodes.
 *
 * Extended headers always appear in the wire order
 *   BTH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, payload
 * (only the ones an opcode carries), so offsets are derived from the set.
 */
#ifndef VRDMA_ROCE_ROCE_OPCODE_H
#define VRDMA_ROCE_ROCE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "roce/roce_hdr.h"

enum roce_opcode {
	/* RC: 0x00-0x1F */
	ROCE_OP_RC_SEND_FIRST                      = 0x00,
	ROCE_OP_RC_SEND_MIDDLE                     = 0x01,
	ROCE_OP_RC_SEND_LAST                       = 0x02,
	ROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE        = 0x03,
	ROCE_OP_RC_SEND_ONLY                       = 0x04,
	ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE        = 0x05,
	ROCE_OP_RC_RDMA_WRITE_FIRST                = 0x06,
	ROCE_OP_RC_RDMA_WRITE_MIDDLE               = 0x07,
	ROCE_OP_RC_RDMA_WRITE_LAST                 = 0x08,
	ROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE  = 0x09,
	ROCE_OP_RC_RDMA_WRITE_ONLY                 = 0x0A,
	ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE  = 0x0B,
	ROCE_OP_RC_RDMA_READ_REQUEST               = 0x0C,
	ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST        = 0x0D,
	ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE       = 0x0E,
	ROCE_OP_RC_RDMA_READ_RESPONSE_LAST         = 0x0F,
	ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY         = 0x10,
	ROCE_OP_RC_ACKNOWLEDGE                     = 0x11,
	ROCE_OP_RC_ATOMIC_ACKNOWLEDGE              = 0x12,
	ROCE_OP_RC_COMPARE_SWAP                    = 0x13,
	ROCE_OP_RC_FETCH_ADD                       = 0x14,
	ROCE_OP_RC_SEND_LAST_WITH_INVALIDATE       = 0x16,
	ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE       = 0x17,

	/* UC: 0x20-0x3F */
	ROCE_OP_UC_SEND_FIRST                      = 0x20,
	ROCE_OP_UC_SEND_MIDDLE                     = 0x21,
	ROCE_OP_UC_SEND_LAST                       = 0x22,
	ROCE_OP_UC_SEND_LAST_WITH_IMMEDIATE        = 0x23,
	ROCE_OP_UC_SEND_ONLY                       = 0x24,
	ROCE_OP_UC_SEND_ONLY_WITH_IMMEDIATE        = 0x25,
	ROCE_OP_UC_RDMA_WRITE_FIRST                = 0x26,
	ROCE_OP_UC_RDMA_WRITE_MIDDLE               = 0x27,
	ROCE_OP_UC_RDMA_WRITE_LAST                 = 0x28,
	ROCE_OP_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE  = 0x29,
	ROCE_OP_UC_RDMA_WRITE_ONLY                 = 0x2A,
	ROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE  = 0x2B,

	/* UD: 0x60-0x7F */
	ROCE_OP_UD_SEND_ONLY                       = 0x64,
	ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE        = 0x65,

	/* RoCE v2 congestion notification packet (Annex A17.9.3). */
	ROCE_OP_CNP                                = 0x81,
};

/* Headers after the BTH, in wire order; also the bit index of each in the
 * opcode mask. ROCE_HDR_PAYLOAD's offset is the total header length. */
enum roce_hdr_type {
	ROCE_HDR_BTH,
	ROCE_HDR_DETH,
	ROCE_HDR_RETH,
	ROCE_HDR_ATMETH,
	ROCE_HDR_AETH,
	ROCE_HDR_ATMACK,
	ROCE_HDR_IMMDT,
	ROCE_HDR_IETH,
	ROCE_HDR_PAYLOAD,
	ROCE_HDR_NUM
};

/* roce_opcode_info.mask bits. */
#define ROCE_OPF_DETH     (1u << ROCE_HDR_DETH)
#define ROCE_OPF_RETH     (1u << ROCE_HDR_RETH)
#define ROCE_OPF_ATMETH   (1u << ROCE_HDR_ATMETH)
#define ROCE_OPF_AETH     (1u << ROCE_HDR_AETH)
#define ROCE_OPF_ATMACK   (1u << ROCE_HDR_ATMACK)
#define ROCE_OPF_IMMDT    (1u << ROCE_HDR_IMMDT)
#define ROCE_OPF_IETH     (1u << ROCE_HDR_IETH)
#define ROCE_OPF_PAYLOAD  (1u << ROCE_HDR_PAYLOAD) /* may carry payload */
#define ROCE_OPF_REQ      (1u << 12) /* requester -> responder */
#define ROCE_OPF_RESP     (1u << 13) /* responder -> requester (READ data, ACKs) */
#define ROCE_OPF_ACK      (1u << 14) /* ACKNOWLEDGE or ATOMIC ACKNOWLEDGE */
#define ROCE_OPF_FIRST    (1u << 15) /* starts a message */
#define ROCE_OPF_MIDDLE   (1u << 16)
#define ROCE_OPF_LAST     (1u << 17) /* ends a message */
#define ROCE_OPF_ONLY     (ROCE_OPF_FIRST | ROCE_OPF_LAST)
#define ROCE_OPF_SEND     (1u << 18)
#define ROCE_OPF_WRITE    (1u << 19)
#define ROCE_OPF_READ     (1u << 20) /* READ request or response */
#define ROCE_OPF_ATOMIC   (1u << 21) /* atomic request or atomic ACK */
#define ROCE_OPF_RWR      (1u << 22) /* consumes a receive WQE at the responder */
#define ROCE_OPF_COMP     (1u << 23) /* completes a receive WQE at the responder */
#define ROCE_OPF_CNP      (1u << 24) /* congestion notification */

enum roce_transport {
	ROCE_TRANSPORT_NONE = 0, /* unknown opcode */
	ROCE_TRANSPORT_RC,
	ROCE_TRANSPORT_UC,
	ROCE_TRANSPORT_UD,
	ROCE_TRANSPORT_CNP,
};

struct roce_opcode_info {
	const char *name;       /* NULL: opcode not supported */
	uint32_t mask;          /* ROCE_OPF_* */
	uint8_t transport;      /* enum roce_transport */
	uint8_t length;         /* BTH + extended headers, bytes */
	/* Offset of each header from the start of the BTH; valid only when the
	 * header's ROCE_OPF_ bit is set (0 otherwise). offset[PAYLOAD] = length. */
	uint8_t offset[ROCE_HDR_NUM];
};

extern const struct roce_opcode_info roce_opcode_table[256];

/* The table entry for a BTH opcode (always valid, maybe unsupported). */
static inline const struct roce_opcode_info *roce_opcode_get(uint8_t op)
{
	return &roce_opcode_table[op];
}

/* True if op is an opcode vrdma understands. */
static inline bool roce_opcode_known(uint8_t op)
{
	return roce_opcode_table[op].name != NULL;
}

/* The mask of op (0 for unsupported opcodes). */
static inline uint32_t roce_opcode_mask(uint8_t op)
{
	return roce_opcode_table[op].mask;
}

/* The spec name of op ("RC_SEND_FIRST", ...) or "UNKNOWN". */
const char *roce_opcode_name(uint8_t op);

#endif /* VRDMA_ROCE_ROCE_OPCODE_H */
