/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The BTH opcode table (IBTA Vol. 1 9.2.1 table 38, 9.3 table 39 for the
 * extended headers each opcode carries; Annex A17.9.3 for the CNP).
 *
 * Each row names the opcode and its flags; the header offsets and the total
 * length are computed at compile time from the set of headers, in the fixed
 * wire order DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH.
 */
#include "roce/roce_opcode.h"

/* Bytes taken by header H if mask m carries it. */
#define HLEN_IF(m, H) (((m) & ROCE_OPF_##H) ? ROCE_##H##_LEN : 0)

#define OFF_DETH(m)    (ROCE_BTH_LEN)
#define OFF_RETH(m)    (OFF_DETH(m) + HLEN_IF(m, DETH))
#define OFF_ATMETH(m)  (OFF_RETH(m) + HLEN_IF(m, RETH))
#define OFF_AETH(m)    (OFF_ATMETH(m) + HLEN_IF(m, ATMETH))
#define OFF_ATMACK(m)  (OFF_AETH(m) + HLEN_IF(m, AETH))
#define OFF_IMMDT(m)   (OFF_ATMACK(m) + HLEN_IF(m, ATMACK))
#define OFF_IETH(m)    (OFF_IMMDT(m) + HLEN_IF(m, IMMDT))
#define OFF_PAYLOAD(m) (OFF_IETH(m) + HLEN_IF(m, IETH) + \
			(((m) & ROCE_OPF_CNP) ? ROCE_CNP_RSVD_LEN : 0))

#define OFF_IF(m, H) (((m) & ROCE_OPF_##H) ? OFF_##H(m) : 0)

#define ROW(code, nm, tr, m)                                                  \
	[code] = {                                                            \
		.name = nm,                                                   \
		.mask = (m),                                                  \
		.transport = ROCE_TRANSPORT_##tr,                             \
		.length = OFF_PAYLOAD(m),                                     \
		.offset = {                                                   \
			[ROCE_HDR_BTH] = 0,                                   \
			[ROCE_HDR_DETH] = OFF_IF(m, DETH),                    \
			[ROCE_HDR_RETH] = OFF_IF(m, RETH),                    \
			[ROCE_HDR_ATMETH] = OFF_IF(m, ATMETH),                \
			[ROCE_HDR_AETH] = OFF_IF(m, AETH),                    \
			[ROCE_HDR_ATMACK] = OFF_IF(m, ATMACK),                \
			[ROCE_HDR_IMMDT] = OFF_IF(m, IMMDT),                  \
			[ROCE_HDR_IETH] = OFF_IF(m, IETH),                    \
			[ROCE_HDR_PAYLOAD] = OFF_PAYLOAD(m),                  \
		},                                                            \
	}

/* One row per opcode: ROCE_OP_<tr>_<op>, named "<tr>_<op>". */
#define OP(tr, op, m) ROW(ROCE_OP_##tr##_##op, #tr "_" #op, tr, m)

/* Short names for the flags, only inside the table. */
#define REQ     ROCE_OPF_REQ
#define RESP    ROCE_OPF_RESP
#define ACK     ROCE_OPF_ACK
#define FIRST   ROCE_OPF_FIRST
#define MIDDLE  ROCE_OPF_MIDDLE
#define LAST    ROCE_OPF_LAST
#define ONLY    ROCE_OPF_ONLY
#define PAYLOAD ROCE_OPF_PAYLOAD
#define SEND    ROCE_OPF_SEND
#define WRITE   ROCE_OPF_WRITE
#define READ    ROCE_OPF_READ
#define ATOMIC  ROCE_OPF_ATOMIC
#define RWR     ROCE_OPF_RWR
#define COMP    ROCE_OPF_COMP
#define DETH    ROCE_OPF_DETH
#define RETH    ROCE_OPF_RETH
#define ATMETH  ROCE_OPF_ATMETH
#define AETH    ROCE_OPF_AETH
#define ATMACK  ROCE_OPF_ATMACK
#define IMMDT   ROCE_OPF_IMMDT
#define IETH    ROCE_OPF_IETH

const struct roce_opcode_info roce_opcode_table[256] = {
	OP(RC, SEND_FIRST,                     REQ | SEND | FIRST | PAYLOAD | RWR),
	OP(RC, SEND_MIDDLE,                    REQ | SEND | MIDDLE | PAYLOAD),
	OP(RC, SEND_LAST,                      REQ | SEND | LAST | PAYLOAD | COMP),
	OP(RC, SEND_LAST_WITH_IMMEDIATE,       REQ | SEND | LAST | PAYLOAD | COMP | IMMDT),
	OP(RC, SEND_ONLY,                      REQ | SEND | ONLY | PAYLOAD | RWR | COMP),
	OP(RC, SEND_ONLY_WITH_IMMEDIATE,       REQ | SEND | ONLY | PAYLOAD | RWR | COMP | IMMDT),
	OP(RC, RDMA_WRITE_FIRST,               REQ | WRITE | FIRST | PAYLOAD | RETH),
	OP(RC, RDMA_WRITE_MIDDLE,              REQ | WRITE | MIDDLE | PAYLOAD),
	OP(RC, RDMA_WRITE_LAST,                REQ | WRITE | LAST | PAYLOAD),
	OP(RC, RDMA_WRITE_LAST_WITH_IMMEDIATE, REQ | WRITE | LAST | PAYLOAD | RWR | COMP | IMMDT),
	OP(RC, RDMA_WRITE_ONLY,                REQ | WRITE | ONLY | PAYLOAD | RETH),
	OP(RC, RDMA_WRITE_ONLY_WITH_IMMEDIATE, REQ | WRITE | ONLY | PAYLOAD | RWR | COMP | RETH | IMMDT),
	OP(RC, RDMA_READ_REQUEST,              REQ | READ | ONLY | RETH),
	OP(RC, RDMA_READ_RESPONSE_FIRST,       RESP | READ | FIRST | PAYLOAD | AETH),
	OP(RC, RDMA_READ_RESPONSE_MIDDLE,      RESP | READ | MIDDLE | PAYLOAD),
	OP(RC, RDMA_READ_RESPONSE_LAST,        RESP | READ | LAST | PAYLOAD | AETH),
	OP(RC, RDMA_READ_RESPONSE_ONLY,        RESP | READ | ONLY | PAYLOAD | AETH),
	OP(RC, ACKNOWLEDGE,                    RESP | ACK | ONLY | AETH),
	OP(RC, ATOMIC_ACKNOWLEDGE,             RESP | ACK | ATOMIC | ONLY | AETH | ATMACK),
	OP(RC, COMPARE_SWAP,                   REQ | ATOMIC | ONLY | ATMETH),
	OP(RC, FETCH_ADD,                      REQ | ATOMIC | ONLY | ATMETH),
	OP(RC, SEND_LAST_WITH_INVALIDATE,      REQ | SEND | LAST | PAYLOAD | COMP | IETH),
	OP(RC, SEND_ONLY_WITH_INVALIDATE,      REQ | SEND | ONLY | PAYLOAD | RWR | COMP | IETH),

	OP(UC, SEND_FIRST,                     REQ | SEND | FIRST | PAYLOAD | RWR),
	OP(UC, SEND_MIDDLE,                    REQ | SEND | MIDDLE | PAYLOAD),
	OP(UC, SEND_LAST,                      REQ | SEND | LAST | PAYLOAD | COMP),
	OP(UC, SEND_LAST_WITH_IMMEDIATE,       REQ | SEND | LAST | PAYLOAD | COMP | IMMDT),
	OP(UC, SEND_ONLY,                      REQ | SEND | ONLY | PAYLOAD | RWR | COMP),
	OP(UC, SEND_ONLY_WITH_IMMEDIATE,       REQ | SEND | ONLY | PAYLOAD | RWR | COMP | IMMDT),
	OP(UC, RDMA_WRITE_FIRST,               REQ | WRITE | FIRST | PAYLOAD | RETH),
	OP(UC, RDMA_WRITE_MIDDLE,              REQ | WRITE | MIDDLE | PAYLOAD),
	OP(UC, RDMA_WRITE_LAST,                REQ | WRITE | LAST | PAYLOAD),
	OP(UC, RDMA_WRITE_LAST_WITH_IMMEDIATE, REQ | WRITE | LAST | PAYLOAD | RWR | COMP | IMMDT),
	OP(UC, RDMA_WRITE_ONLY,                REQ | WRITE | ONLY | PAYLOAD | RETH),
	OP(UC, RDMA_WRITE_ONLY_WITH_IMMEDIATE, REQ | WRITE | ONLY | PAYLOAD | RWR | COMP | RETH | IMMDT),

	OP(UD, SEND_ONLY,                      REQ | SEND | ONLY | PAYLOAD | RWR | COMP | DETH),
	OP(UD, SEND_ONLY_WITH_IMMEDIATE,       REQ | SEND | ONLY | PAYLOAD | RWR | COMP | DETH | IMMDT),

	ROW(ROCE_OP_CNP, "CNP", CNP, ROCE_OPF_CNP),
};

const char *roce_opcode_name(uint8_t op)
{
	const char *n = roce_opcode_table[op].name;

	return n ? n : "UNKNOWN";
}
