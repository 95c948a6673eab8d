/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rsocket wire protocol of rdma-core's librdmacm (SOCK_STREAM), so that
 * our rsockets and Debian's talk to each other (docs/spec.md, "rsockets"):
 * the connection's private data, the 32-bit immediate of every RDMA WRITE
 * WITH IMMEDIATE (op in bits 31..29, a length, credit count or index below)
 * and the descriptors one side RDMA-writes into the other's target list.
 */
#ifndef VRDMA_RDMACM_RSOCKET_PROTO_H
#define VRDMA_RDMACM_RSOCKET_PROTO_H

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RS_WIRE_VERSION      1
#define RS_CONN_FLAG_NET     (1u << 0)  /* the sender's host order is big endian */
#define RS_CONN_FLAG_IOMAP   (1u << 1)  /* an iomap table follows the target SGL */
#define RS_WIRE_SGL_SIZE     2          /* entries of a target SGL */

/* Immediate data: op << 29 | data (29 bits). */
enum rs_wire_op {
	RS_OP_DATA      = 0,  /* data: bytes written into the receive buffer */
	RS_OP_WRITE     = 2,  /* riowrite: never on the wire (plain RDMA WRITE) */
	RS_OP_SGL       = 4,  /* credits (sequence limit), maybe a new target SGE */
	RS_OP_IOMAP_SGL = 6,  /* an iomap entry was written: its index */
	RS_OP_CTRL      = 7,  /* enum rs_wire_ctrl */
};

enum rs_wire_ctrl {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE  = 1,
	RS_CTRL_SHUTDOWN   = 2,
};

static inline uint32_t rs_imm(unsigned op, uint32_t data)
{
	return (uint32_t)op << 29 | (data & 0x1fffffffu);
}
static inline unsigned rs_imm_op(uint32_t imm) { return imm >> 29; }
static inline uint32_t rs_imm_data(uint32_t imm) { return imm & 0x1fffffffu; }

/* A buffer of the peer: in the writer's host order, swapped by a peer of
 * the other order (flag NET) before it writes. */
struct rs_wire_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* An entry of the iomap table (riomap with PROT_WRITE). */
struct rs_wire_iomap {
	uint64_t offset;
	struct rs_wire_sge sge;
};

/* Private data of the REQ and REP (every multi-byte field big endian). */
struct rs_wire_conn {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;           /* the sender's receive queue depth */
	uint8_t reserved[3];
	uint8_t target_iomap_size;  /* rs_scale_encode() */
	struct rs_wire_sge target_sgl;  /* length: entries (RS_WIRE_SGL_SIZE) */
	struct rs_wire_sge data_buf;    /* the first half of the receive buffer */
};

static_assert(sizeof(struct rs_wire_sge) == 16, "rs_wire_sge size");
static_assert(offsetof(struct rs_wire_sge, key) == 8, "rs_wire_sge key");
static_assert(offsetof(struct rs_wire_sge, length) == 12, "rs_wire_sge length");
static_assert(sizeof(struct rs_wire_iomap) == 24, "rs_wire_iomap size");
static_assert(offsetof(struct rs_wire_iomap, sge) == 8, "rs_wire_iomap sge");
static_assert(sizeof(struct rs_wire_conn) == 40, "rs_wire_conn size");
static_assert(offsetof(struct rs_wire_conn, credits) == 2, "rs_wire_conn credits");
static_assert(offsetof(struct rs_wire_conn, target_iomap_size) == 7, "rs_wire_conn iomap");
static_assert(offsetof(struct rs_wire_conn, target_sgl) == 8, "rs_wire_conn target_sgl");
static_assert(offsetof(struct rs_wire_conn, data_buf) == 24, "rs_wire_conn data_buf");

/* The 8-bit size encoding: up to 128 as is, above it 0x80 | size / 256. */
static inline uint8_t rs_scale_encode(unsigned v)
{
	return v <= 128 ? (uint8_t)v : (uint8_t)(0x80 | ((v >> 8) & 0x7f));
}
static inline unsigned rs_scale_decode(uint8_t s)
{
	return s <= 128 ? s : (unsigned)(s & 0x7f) << 8;
}

/* What a peer's private data tells (host order). */
struct rs_conn_info {
	struct rs_wire_sge target_sgl;  /* length: entries, 1..RS_PEER_SGL_MAX */
	struct rs_wire_sge iomap;       /* its iomap table; length: entries (0: none) */
	struct rs_wire_sge data_buf;
	uint16_t credits;
	bool swap;                      /* its SGL and iomap entries are in the other order */
};

#define RS_PEER_SGL_MAX 64

/* Parses a peer's private data (untrusted: the network): 0, or -errno. */
static inline int rs_conn_parse(const void *pd, size_t len, struct rs_conn_info *out)
{
	struct rs_wire_conn c;
	bool host_net = __BYTE_ORDER == __BIG_ENDIAN;

	if (!pd || len < sizeof(c))
		return -EPROTO;
	memcpy(&c, pd, sizeof(c));
	if (c.version != RS_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	memset(out, 0, sizeof(*out));
	out->target_sgl.addr = be64toh(c.target_sgl.addr);
	out->target_sgl.key = be32toh(c.target_sgl.key);
	out->target_sgl.length = be32toh(c.target_sgl.length);
	if (out->target_sgl.length < 1 || out->target_sgl.length > RS_PEER_SGL_MAX)
		return -EPROTO;
	if (c.flags & RS_CONN_FLAG_IOMAP) {
		out->iomap.addr = out->target_sgl.addr +
				  sizeof(struct rs_wire_sge) * out->target_sgl.length;
		out->iomap.key = out->target_sgl.key;
		out->iomap.length = rs_scale_decode(c.target_iomap_size);
	}
	out->data_buf.addr = be64toh(c.data_buf.addr);
	out->data_buf.key = be32toh(c.data_buf.key);
	out->data_buf.length = be32toh(c.data_buf.length);
	out->credits = be16toh(c.credits);
	out->swap = !(c.flags & RS_CONN_FLAG_NET) != !host_net;
	return 0;
}

#endif /* VRDMA_RDMACM_RSOCKET_PROTO_H */
