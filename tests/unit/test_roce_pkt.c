/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the RoCE v2 packet layer: header layouts, the opcode table, ICRC
 * (the verified vector of docs/wire-format), build/parse round trips of every
 * opcode, every parse error reason, IPv6, VLAN, UDP checksums.
 *
 * Test mode for tests/integration/scapy_icrc.sh:
 *   test_roce_pkt --emit-pcap FILE   write sample frames as a pcap and exit
 *   test_roce_pkt --emit-raw DIR     write them one file per frame (fuzz seeds)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "port/pkt.h"
#include "roce/roce_hdr.h"
#include "roce/roce_icrc.h"
#include "roce/roce_opcode.h"
#include "roce/roce_pkt.h"

/* ------------------------------------------------------------------ */
/* Utilities                                                           */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd64(void)
{
	/* xorshift64*: reproducible, seeded above */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 32); }

static struct pkt *tpkt_new(void)
{
	struct pkt *p = calloc(1, sizeof(*p));

	if (p)
		p->data = p->buf + PKT_HEADROOM;
	return p;
}

static int hex2bin(const char *hex, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (hex[0] && hex[1] && n < max) {
		unsigned v;

		if (sscanf(hex, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return (int)n;
}

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static void path_v4(struct roce_path *path)
{
	static const uint8_t ip_a[4] = { 10, 0, 0, 1 }, ip_b[4] = { 10, 0, 0, 2 };

	memset(path, 0, sizeof(*path));
	memcpy(path->smac, mac_a, 6);
	memcpy(path->dmac, mac_b, 6);
	roce_gid_from_ipv4(path->sgid, ip_a);
	roce_gid_from_ipv4(path->dgid, ip_b);
	path->tclass = 0x02;
	path->hop_limit = 0x40;
	path->udp_sport = 0xC000;
}

static void path_v6(struct roce_path *path)
{
	static const uint8_t g_a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
					 0, 0, 0, 0, 0, 0, 0, 0x01 };
	static const uint8_t g_b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
					 0, 0, 0, 0, 0, 0, 0, 0x02 };

	memset(path, 0, sizeof(*path));
	memcpy(path->smac, mac_a, 6);
	memcpy(path->dmac, mac_b, 6);
	memcpy(path->sgid, g_a, 16);
	memcpy(path->dgid, g_b, 16);
	path->tclass = 0x8A;
	path->hop_limit = 0x20;
	path->flow_label = 0xABCDE;
	path->udp_sport = roce_udp_sport_from_qpn(0x11);
}

static void fields_random(struct roce_hdr_fields *f, uint8_t opcode)
{
	memset(f, 0, sizeof(*f));
	f->opcode = opcode;
	f->se = rnd32() & 1;
	f->migreq = rnd32() & 1;
	f->fecn = rnd32() & 1;
	f->becn = rnd32() & 1;
	f->ackreq = rnd32() & 1;
	f->pkey = (uint16_t)rnd32();
	f->dqpn = rnd32() & ROCE_QPN_MASK;
	f->psn = rnd32() & ROCE_PSN_MASK;
	f->reth.va = rnd64();
	f->reth.rkey = rnd32();
	f->reth.len = rnd32();
	f->aeth.syndrome = (uint8_t)(rnd32() & 0x7F);
	f->aeth.msn = rnd32() & 0xFFFFFF;
	f->deth.qkey = rnd32();
	f->deth.sqpn = rnd32() & ROCE_QPN_MASK;
	f->imm = rnd32();
	f->atmeth.va = rnd64();
	f->atmeth.rkey = rnd32();
	f->atmeth.swap_add = rnd64();
	f->atmeth.compare = rnd64();
	f->atmack_orig = rnd64();
	f->ieth_rkey = rnd32();
	f->ip_id = (uint16_t)rnd32();
}

/* Refresh the IPv4 header checksum of a crafted frame. */
static void fix_ip4_csum(uint8_t *frame, uint32_t l3)
{
	uint32_t ihl = (frame[l3] & 0x0Fu) * 4;

	if (ihl < 20)
		ihl = 20;
	put_be16(frame + l3 + 10, roce_ipv4_hdr_csum(frame + l3, ihl));
}

/* ------------------------------------------------------------------ */
/* Header layout and opcode table                                      */

static void test_hdr_accessors(void)
{
	struct roce_bth bth;
	struct roce_aeth aeth;
	struct roce_deth deth;
	struct roce_reth reth;
	struct roce_atmeth atm;
	struct roce_immdt imm;
	static const uint8_t want_bth[12] = { 0x0A, 0xB0, 0x12, 0x34, 0xC0, 0xAB,
					      0xCD, 0xEF, 0x80, 0x12, 0x34, 0x56 };

	memset(&bth, 0, sizeof(bth));
	roce_bth_set_opcode(&bth, 0x0A);
	roce_bth_set_se(&bth, true);
	roce_bth_set_padcnt(&bth, 3);
	roce_bth_set_pkey(&bth, 0x1234);
	roce_bth_set_fecn(&bth, true);
	roce_bth_set_becn(&bth, true);
	roce_bth_set_dqpn(&bth, 0xFFABCDEF);  /* upper bits dropped */
	roce_bth_set_ackreq(&bth, true);
	roce_bth_set_psn(&bth, 0x123456);
	CHECK_MEM(&bth, want_bth, 12);
	CHECK_EQ(roce_bth_opcode(&bth), 0x0A);
	CHECK(roce_bth_se(&bth) && !roce_bth_migreq(&bth));
	CHECK_EQ(roce_bth_padcnt(&bth), 3);
	CHECK_EQ(roce_bth_tver(&bth), 0);
	CHECK_EQ(roce_bth_pkey(&bth), 0x1234);
	CHECK(roce_bth_fecn(&bth) && roce_bth_becn(&bth) && roce_bth_ackreq(&bth));
	CHECK_EQ(roce_bth_dqpn(&bth), 0xABCDEF);
	CHECK_EQ(roce_bth_psn(&bth), 0x123456);
	roce_bth_set_se(&bth, false);
	roce_bth_set_migreq(&bth, true);
	roce_bth_set_padcnt(&bth, 1);
	roce_bth_set_tver(&bth, 2);
	CHECK_EQ(bth.flags, 0x40 | 0x10 | 0x02);
	roce_bth_set_fecn(&bth, false);
	CHECK_EQ(bth.fecn_becn, 0x40);
	roce_bth_set_ackreq(&bth, false);
	CHECK_EQ(bth.ackreq, 0);

	roce_aeth_set_syndrome(&aeth, ROCE_AETH_NAK_REM_ACCESS_ERR);
	roce_aeth_set_msn(&aeth, 0x010203);
	CHECK_EQ(aeth.syndrome, 0x62);
	CHECK_EQ(aeth.msn[0], 1);
	CHECK_EQ(aeth.msn[2], 3);
	CHECK_EQ(roce_aeth_msn(&aeth), 0x010203);

	memset(&deth, 0xEE, sizeof(deth));
	roce_deth_set_qkey(&deth, 0x80010000);
	roce_deth_set_sqpn(&deth, 0x000001);
	CHECK_EQ(deth.rsvd, 0);
	CHECK_EQ(deth.qkey[0], 0x80);
	CHECK_EQ(roce_deth_qkey(&deth), 0x80010000);
	CHECK_EQ(roce_deth_sqpn(&deth), 1);

	roce_reth_set_va(&reth, 0x0102030405060708ull);
	roce_reth_set_rkey(&reth, 0xA1B2C3D4);
	roce_reth_set_len(&reth, 4096);
	CHECK_EQ(reth.va[0], 1);
	CHECK_EQ(reth.va[7], 8);
	CHECK_EQ(reth.rkey[0], 0xA1);
	CHECK_EQ(reth.dma_len[2], 0x10);
	CHECK(roce_reth_va(&reth) == 0x0102030405060708ull);

	roce_atmeth_set_compare(&atm, 0x1122334455667788ull);
	roce_atmeth_set_swap_add(&atm, 42);
	CHECK_EQ(atm.compare[0], 0x11);
	CHECK_EQ(atm.swap_add[7], 42);
	CHECK(roce_atmeth_compare(&atm) == 0x1122334455667788ull);

	/* ImmDt is opaque: bytes kept in memory order. */
	roce_immdt_set_raw(&imm, htobe32(0xDEADBEEF));
	CHECK_EQ(imm.imm[0], 0xDE);
	CHECK_EQ(roce_immdt_raw(&imm), htobe32(0xDEADBEEF));
}

static void test_opcode_table(void)
{
	const struct roce_opcode_info *o;
	unsigned known = 0, i;

	for (i = 0; i < 256; i++) {
		o = roce_opcode_get((uint8_t)i);
		if (!o->name) {
			CHECK_EQ(o->mask, 0);
			CHECK(!roce_opcode_known((uint8_t)i));
			CHECK(strcmp(roce_opcode_name((uint8_t)i), "UNKNOWN") == 0);
			continue;
		}
		known++;
		/* transport matches the opcode range and the name */
		if (i < 0x20) {
			CHECK_EQ(o->transport, ROCE_TRANSPORT_RC);
			CHECK(strncmp(o->name, "RC_", 3) == 0);
		} else if (i < 0x40) {
			CHECK_EQ(o->transport, ROCE_TRANSPORT_UC);
			CHECK(strncmp(o->name, "UC_", 3) == 0);
			/* UC = RC + 0x20, same shape */
			CHECK_EQ(o->mask, roce_opcode_mask((uint8_t)(i - 0x20)));
			CHECK(strcmp(o->name + 3, roce_opcode_name((uint8_t)(i - 0x20)) + 3) == 0);
		} else if (i >= 0x60 && i < 0x80) {
			CHECK_EQ(o->transport, ROCE_TRANSPORT_UD);
			CHECK(o->mask & ROCE_OPF_DETH);
		} else {
			CHECK_EQ(i, ROCE_OP_CNP);
		}
		/* a request or a response, not both (CNP neither) */
		if (i != ROCE_OP_CNP)
			CHECK(!!(o->mask & ROCE_OPF_REQ) != !!(o->mask & ROCE_OPF_RESP));
		if (o->mask & ROCE_OPF_ACK)
			CHECK(o->mask & ROCE_OPF_RESP);
		/* MIDDLE excludes FIRST/LAST */
		if (o->mask & ROCE_OPF_MIDDLE)
			CHECK(!(o->mask & ROCE_OPF_ONLY));
		/* header offsets: contiguous, in wire order */
		{
			static const uint8_t len[ROCE_HDR_NUM] = {
				[ROCE_HDR_BTH] = ROCE_BTH_LEN, [ROCE_HDR_DETH] = ROCE_DETH_LEN,
				[ROCE_HDR_RETH] = ROCE_RETH_LEN, [ROCE_HDR_ATMETH] = ROCE_ATMETH_LEN,
				[ROCE_HDR_AETH] = ROCE_AETH_LEN, [ROCE_HDR_ATMACK] = ROCE_ATMACK_LEN,
				[ROCE_HDR_IMMDT] = ROCE_IMMDT_LEN, [ROCE_HDR_IETH] = ROCE_IETH_LEN,
			};
			unsigned at = ROCE_BTH_LEN, t;

			for (t = ROCE_HDR_DETH; t < ROCE_HDR_PAYLOAD; t++) {
				if (!(o->mask & (1u << t))) {
					CHECK_EQ(o->offset[t], 0);
					continue;
				}
				CHECK_EQ(o->offset[t], at);
				at += len[t];
			}
			if (i == ROCE_OP_CNP)
				at += ROCE_CNP_RSVD_LEN;
			CHECK_EQ(o->length, at);
			CHECK_EQ(o->offset[ROCE_HDR_PAYLOAD], at);
		}
	}
	/* 23 RC + 12 UC + 2 UD + CNP */
	CHECK_EQ(known, 38);

	/* spot checks against wire-format.md */
	o = roce_opcode_get(ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
	CHECK_EQ(o->offset[ROCE_HDR_RETH], 12);
	CHECK_EQ(o->offset[ROCE_HDR_IMMDT], 28);
	CHECK_EQ(o->length, 32);
	CHECK(strcmp(o->name, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE") == 0);
	o = roce_opcode_get(ROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	CHECK_EQ(o->offset[ROCE_HDR_AETH], 12);
	CHECK_EQ(o->offset[ROCE_HDR_ATMACK], 16);
	CHECK_EQ(o->length, 24);
	o = roce_opcode_get(ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
	CHECK_EQ(o->offset[ROCE_HDR_DETH], 12);
	CHECK_EQ(o->offset[ROCE_HDR_IMMDT], 20);
	CHECK_EQ(o->length, 24);
	CHECK_EQ(roce_opcode_get(ROCE_OP_RC_COMPARE_SWAP)->length, 40);
	CHECK_EQ(roce_opcode_get(ROCE_OP_RC_RDMA_READ_REQUEST)->length, 28);
	CHECK_EQ(roce_opcode_get(ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE)->offset[ROCE_HDR_IETH], 12);
	CHECK_EQ(roce_opcode_get(ROCE_OP_RC_SEND_MIDDLE)->length, 12);
	CHECK_EQ(roce_opcode_get(ROCE_OP_CNP)->length, 28);
	CHECK(roce_opcode_mask(ROCE_OP_CNP) & ROCE_OPF_CNP);
	CHECK(!(roce_opcode_mask(ROCE_OP_RC_RDMA_READ_REQUEST) & ROCE_OPF_PAYLOAD));
	CHECK(!(roce_opcode_mask(ROCE_OP_RC_ACKNOWLEDGE) & ROCE_OPF_PAYLOAD));
	CHECK((roce_opcode_mask(ROCE_OP_RC_SEND_ONLY) & ROCE_OPF_ONLY) == ROCE_OPF_ONLY);
	CHECK(!roce_opcode_known(0x15));
	CHECK(!roce_opcode_known(0x40)); /* RD is not supported */
	CHECK(!roce_opcode_known(0x60));
}

/* ------------------------------------------------------------------ */
/* ICRC test vector (docs: wire-format.md)                             */

static const char *const vector_hex =
	"02000000000202000000000108004502003012344000401114850a0000010a000002"
	"c00012b7001c00000400ffff0000001180000123deadbeef431f1254";

static void build_vector(struct pkt *p)
{
	static const uint8_t payload[4] = { 0xDE, 0xAD, 0xBE, 0xEF };
	struct roce_path path;
	struct roce_hdr_fields f;

	path_v4(&path);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_SEND_ONLY;
	f.pkey = 0xFFFF;
	f.dqpn = 0x11;
	f.psn = 0x123;
	f.ackreq = true;
	f.ip_id = 0x1234;
	p->len = 0;
	if (roce_pkt_build_frame(p, &path, &f, payload, sizeof(payload)))
		p->len = 0;
}

static void test_icrc_vector(void)
{
	uint8_t want[64];
	struct pkt *p = tpkt_new();
	struct roce_pkt_info info;
	enum roce_crc_impl impls[2] = { ROCE_CRC_ISAL, ROCE_CRC_ZLIB };
	enum roce_crc_impl saved = roce_crc_get_impl();
	uint32_t icrc;
	int n, i;

	REQUIRE(p);
	n = hex2bin(vector_hex, want, sizeof(want));
	REQUIRE(n == 62);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(roce_crc_set_impl(impls[i]), 0);
		build_vector(p);
		CHECK_EQ(p->len, 62);
		CHECK_MEM(p->data, want, 62);
		CHECK_EQ(roce_icrc_frame_verify(want, 62), 0);
		CHECK_EQ(roce_icrc_frame_calc(want, 62, &icrc), 0);
		CHECK_EQ(icrc, 0x54121F43u);
	}
	CHECK_EQ(roce_crc_set_impl((enum roce_crc_impl)7), -EINVAL);
	roce_crc_set_impl(saved);

	/* the frame as the default tools see it */
	CHECK_EQ(roce_pkt_parse(want, 62, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info), 0);
	CHECK_EQ(info.opcode, ROCE_OP_RC_SEND_ONLY);
	CHECK_EQ(info.transport, ROCE_TRANSPORT_RC);
	CHECK_EQ(info.dqpn, 0x11);
	CHECK_EQ(info.psn, 0x123);
	CHECK(info.ackreq && !info.se && !info.fecn && !info.becn && !info.migreq);
	CHECK_EQ(info.pkey, 0xFFFF);
	CHECK_EQ(info.padcnt, 0);
	CHECK_EQ(info.payload_len, 4);
	REQUIRE(info.payload == want + 54);
	CHECK_EQ(get_be32(info.payload), 0xDEADBEEF);
	CHECK_EQ(info.ip_ver, 4);
	CHECK(info.ip4 && !info.ip6);
	CHECK_EQ(info.tclass, 0x02);
	CHECK_EQ(info.hop_limit, 0x40);
	CHECK_EQ(info.udp_sport, 0xC000);
	CHECK_MEM(info.smac, mac_a, 6);
	CHECK_MEM(info.dmac, mac_b, 6);
	CHECK(!info.has_vlan);
	CHECK(roce_gid_is_ipv4(info.sgid));
	CHECK_EQ(info.sgid[15], 1);
	CHECK_EQ(info.dgid[15], 2);
	CHECK_EQ(info.l3_off, 14);
	CHECK_EQ(info.l4_off, 34);
	CHECK_EQ(info.bth_off, 42);
	CHECK_EQ(info.icrc_off, 58);
	CHECK_EQ(info.pkt_len, 62);
	CHECK_EQ(info.icrc, 0x54121F43u);
	CHECK(!info.reth && !info.aeth && !info.deth && !info.immdt &&
	      !info.atmeth && !info.atmack && !info.ieth);
	CHECK((uint8_t *)info.bth == want + 42);

	/* any single bit flipped in the ICRC-covered part is caught */
	for (i = 14 + 20 + 8 + 12; i < 62; i++) {
		want[i] ^= 0x10;
		CHECK_EQ(roce_pkt_parse(want, 62, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_ICRC);
		want[i] ^= 0x10;
	}
	/* the variant fields are not covered: TTL, TOS (after fixing the IP
	 * checksum), FECN/BECN */
	want[14 + 8] = 3;
	want[14 + 1] = 0xB8;
	fix_ip4_csum(want, 14);
	want[42 + 4] = 0xC0;
	CHECK_EQ(roce_pkt_parse(want, 62, ROCE_RX_F_ICRC, &info), 0);
	CHECK(info.fecn && info.becn);
	CHECK_EQ(info.hop_limit, 3);
	free(p);
}

static void test_crc_impls_agree(void)
{
	enum roce_crc_impl saved = roce_crc_get_impl();
	static uint8_t buf[5000];
	uint32_t a, b, c;
	size_t i, len;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd32();
	for (len = 0; len <= sizeof(buf); len += 1 + len / 3) {
		roce_crc_set_impl(ROCE_CRC_ISAL);
		a = roce_crc32(0, buf, len);
		c = roce_crc32(roce_crc32(0, buf, len / 2), buf + len / 2, len - len / 2);
		roce_crc_set_impl(ROCE_CRC_ZLIB);
		b = roce_crc32(0, buf, len);
		CHECK_EQ(a, b);
		CHECK_EQ(a, c);
	}
	/* the standard check value of CRC-32 */
	CHECK_EQ(roce_crc32(0, "123456789", 9), 0xCBF43926u);
	roce_crc_set_impl(ROCE_CRC_ISAL);
	CHECK_EQ(roce_crc32(0, "123456789", 9), 0xCBF43926u);
	roce_crc_set_impl(saved);
}

/* ------------------------------------------------------------------ */
/* Round trips                                                         */

/* Checks that info describes the frame built from path/f/payload. */
static void check_roundtrip(const struct pkt *p, const struct roce_pkt_info *in,
			    const struct roce_path *path,
			    const struct roce_hdr_fields *f,
			    const uint8_t *payload, uint32_t plen)
{
	const struct roce_opcode_info *op = roce_opcode_get(f->opcode);
	bool v4 = roce_gid_is_ipv4(path->sgid);
	uint32_t pad = (4 - (plen & 3)) & 3, i;

	CHECK_EQ(p->len, roce_pkt_frame_len(path, f->opcode, plen));
	CHECK_EQ(in->pkt_len, p->len);
	CHECK_EQ(in->opcode, f->opcode);
	CHECK_EQ(in->mask, op->mask);
	CHECK_EQ(in->transport, op->transport);
	CHECK_EQ(in->se, f->se);
	CHECK_EQ(in->migreq, f->migreq);
	CHECK_EQ(in->fecn, f->fecn);
	CHECK_EQ(in->becn, f->becn);
	CHECK_EQ(in->ackreq, f->ackreq);
	CHECK_EQ(in->pkey, f->pkey);
	CHECK_EQ(in->dqpn, f->dqpn);
	CHECK_EQ(in->psn, f->psn);
	CHECK_EQ(in->padcnt, pad);
	CHECK_EQ(in->payload_len, plen);
	CHECK(in->payload == p->data + roce_pkt_hdr_len(path, f->opcode));
	CHECK(plen == 0 || memcmp(in->payload, payload, plen) == 0);
	for (i = 0; i < pad; i++)
		CHECK_EQ(in->payload[plen + i], 0);
	CHECK_EQ(in->icrc_off, p->len - 4);
	CHECK_MEM(in->smac, path->smac, 6);
	CHECK_MEM(in->dmac, path->dmac, 6);
	CHECK_MEM(in->sgid, path->sgid, 16);
	CHECK_MEM(in->dgid, path->dgid, 16);
	CHECK_EQ(in->ip_ver, v4 ? 4 : 6);
	CHECK_EQ(in->tclass, path->tclass);
	CHECK_EQ(in->hop_limit, path->hop_limit ? path->hop_limit : 64);
	CHECK_EQ(in->flow_label, v4 ? 0 : path->flow_label);
	CHECK_EQ(in->udp_sport, path->udp_sport);
	CHECK_EQ(in->has_vlan, !!(path->flags & ROCE_PATH_F_VLAN));
	CHECK_EQ(in->vlan_tci, (path->flags & ROCE_PATH_F_VLAN) ? path->vlan_tci : 0);
	CHECK_EQ(roce_udp_csum(in->udp) != 0, !!(path->flags & ROCE_PATH_F_UDP_CSUM));
	if (v4) {
		REQUIRE(in->ip4);
		CHECK_EQ(roce_ipv4_frag_off(in->ip4), ROCE_IPV4_DF);
		CHECK_EQ(roce_ipv4_id(in->ip4), f->ip_id);
	}

	CHECK_EQ(!!in->reth, !!(op->mask & ROCE_OPF_RETH));
	if (in->reth) {
		CHECK(roce_reth_va(in->reth) == f->reth.va);
		CHECK_EQ(roce_reth_rkey(in->reth), f->reth.rkey);
		CHECK_EQ(roce_reth_len(in->reth), f->reth.len);
	}
	CHECK_EQ(!!in->aeth, !!(op->mask & ROCE_OPF_AETH));
	if (in->aeth) {
		CHECK_EQ(roce_aeth_syndrome(in->aeth), f->aeth.syndrome);
		CHECK_EQ(roce_aeth_msn(in->aeth), f->aeth.msn);
	}
	CHECK_EQ(!!in->deth, !!(op->mask & ROCE_OPF_DETH));
	if (in->deth) {
		CHECK_EQ(roce_deth_qkey(in->deth), f->deth.qkey);
		CHECK_EQ(roce_deth_sqpn(in->deth), f->deth.sqpn);
	}
	CHECK_EQ(!!in->immdt, !!(op->mask & ROCE_OPF_IMMDT));
	if (in->immdt)
		CHECK_EQ(roce_immdt_raw(in->immdt), f->imm);
	CHECK_EQ(!!in->atmeth, !!(op->mask & ROCE_OPF_ATMETH));
	if (in->atmeth) {
		CHECK(roce_atmeth_va(in->atmeth) == f->atmeth.va);
		CHECK_EQ(roce_atmeth_rkey(in->atmeth), f->atmeth.rkey);
		CHECK(roce_atmeth_swap_add(in->atmeth) == f->atmeth.swap_add);
		CHECK(roce_atmeth_compare(in->atmeth) == f->atmeth.compare);
	}
	CHECK_EQ(!!in->atmack, !!(op->mask & ROCE_OPF_ATMACK));
	if (in->atmack)
		CHECK(roce_atmack_orig(in->atmack) == f->atmack_orig);
	CHECK_EQ(!!in->ieth, !!(op->mask & ROCE_OPF_IETH));
	if (in->ieth)
		CHECK_EQ(roce_ieth_rkey(in->ieth), f->ieth_rkey);
	if (op->mask & ROCE_OPF_CNP) {
		static const uint8_t zero[ROCE_CNP_RSVD_LEN];

		CHECK_MEM((const uint8_t *)in->bth + ROCE_BTH_LEN, zero, ROCE_CNP_RSVD_LEN);
	}
}

static void roundtrip_variant(struct pkt *p, uint8_t *payload, bool v6,
			      uint8_t flags, unsigned *frames)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 255,
					  256, 1023, 1024, 2047, 4093, 4094, 4095, 4096 };
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info info;
	unsigned op, s;
	int ret;

	if (v6)
		path_v6(&path);
	else
		path_v4(&path);
	path.flags = flags;
	path.vlan_tci = 0xA123;
	for (op = 0; op < 256; op++) {
		bool has_payload = roce_opcode_mask((uint8_t)op) & ROCE_OPF_PAYLOAD;

		if (!roce_opcode_known((uint8_t)op))
			continue;
		for (s = 0; s < ARRAY_SIZE(sizes) + 4; s++) {
			uint32_t plen = s < ARRAY_SIZE(sizes) ? sizes[s] : rnd32() % 4097;
			uint32_t i;

			if (!has_payload && plen)
				break;
			fields_random(&f, (uint8_t)op);
			if (s & 1)
				path.hop_limit = 0; /* default TTL */
			else
				path.hop_limit = v6 ? 0x20 : 0x40;
			for (i = 0; i < plen; i++)
				payload[i] = (uint8_t)rnd32();
			ret = roce_pkt_build_frame(p, &path, &f, payload, plen);
			CHECK_EQ(ret, 0);
			if (ret)
				return;
			memset(&info, 0xA5, sizeof(info));
			ret = roce_pkt_parse(p->data, p->len,
					     ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info);
			CHECK_EQ(ret, 0);
			if (ret) {
				printf("#   opcode 0x%02x plen %u v6 %d flags %u: %s\n",
				       op, plen, v6, flags, roce_rx_err_name(ret));
				return;
			}
			check_roundtrip(p, &info, &path, &f, payload, plen);
			CHECK_EQ(roce_icrc_frame_verify(p->data, p->len), 0);
			(*frames)++;
		}
	}
}

static void test_roundtrip_all_opcodes(void)
{
	struct pkt *p = tpkt_new();
	uint8_t *payload = malloc(4096);
	unsigned frames = 0, v, fl;

	REQUIRE(p && payload);
	for (v = 0; v < 2; v++)
		for (fl = 0; fl < 4; fl++)
			roundtrip_variant(p, payload, v, (uint8_t)fl, &frames);
	/* 38 opcodes, 8 variants; payload opcodes get 25 sizes each */
	CHECK(frames > 8 * 30 * 25);
	free(payload);
	free(p);
}

/* The payload pointer from roce_pkt_build() is where the data goes, and
 * finalize pads and checksums what was written there. */
static void test_build_then_finalize(void)
{
	struct pkt *p = tpkt_new(), *q = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info info;
	uint8_t *dst = NULL, data[37];
	unsigned i;

	REQUIRE(p && q);
	path_v6(&path);
	fields_random(&f, ROCE_OP_RC_RDMA_WRITE_FIRST);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	CHECK_EQ(roce_pkt_build(p, &path, &f, sizeof(data), &dst), 0);
	REQUIRE(dst);
	CHECK(dst == p->data + 14 + 40 + 8 + 12 + 16);
	memcpy(dst, data, sizeof(data));
	memset(dst + sizeof(data), 0x77, 3 + 4);   /* garbage in pad and ICRC */
	CHECK_EQ(roce_pkt_finalize(p, 0), 0);
	CHECK_EQ(roce_pkt_build_frame(q, &path, &f, data, sizeof(data)), 0);
	CHECK_EQ(p->len, q->len);
	CHECK_MEM(p->data, q->data, q->len);
	CHECK_EQ(roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(info.payload_len, sizeof(data));

	/* ICRC skipped for local delivery, filled in later */
	CHECK_EQ(roce_pkt_build(p, &path, &f, sizeof(data), &dst), 0);
	memcpy(dst, data, sizeof(data));
	CHECK_EQ(roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC), 0);
	CHECK(p->flags & PKT_F_LOCAL_ICRC_SKIPPED);
	CHECK_EQ(get_le32(p->data + p->len - 4), 0);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_ICRC);
	CHECK_EQ(roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(roce_pkt_fill_icrc(p), 0);
	CHECK(!(p->flags & PKT_F_LOCAL_ICRC_SKIPPED));
	CHECK_MEM(p->data, q->data, q->len);
	CHECK_EQ(roce_pkt_fill_icrc(p), 0); /* no-op now */
	CHECK_MEM(p->data, q->data, q->len);

	/* same with a UDP checksum, which covers the ICRC */
	path.flags |= ROCE_PATH_F_UDP_CSUM;
	CHECK_EQ(roce_pkt_build_frame(q, &path, &f, data, sizeof(data)), 0);
	CHECK_EQ(roce_pkt_build(p, &path, &f, sizeof(data), &dst), 0);
	memcpy(dst, data, sizeof(data));
	CHECK_EQ(roce_pkt_finalize(p, ROCE_TX_F_SKIP_ICRC), 0);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_UDP_CSUM, &info), 0);
	CHECK_EQ(roce_pkt_fill_icrc(p), 0);
	CHECK_MEM(p->data, q->data, q->len);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_UDP_CSUM | ROCE_RX_F_ICRC, &info), 0);

	/* finalize refuses frames it did not lay out */
	p->len -= 1;
	CHECK_EQ(roce_pkt_finalize(p, 0), -EINVAL);
	p->len = 10;
	CHECK_EQ(roce_pkt_finalize(p, 0), -EINVAL);
	free(p);
	free(q);
}

static void test_build_errors(void)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	uint8_t *dst;
	uint32_t max;

	REQUIRE(p);
	path_v4(&path);
	fields_random(&f, 0x15);
	CHECK_EQ(roce_pkt_build(p, &path, &f, 0, &dst), -EINVAL);
	CHECK_EQ(roce_pkt_hdr_len(&path, 0x15), 0);
	CHECK_EQ(roce_pkt_frame_len(&path, 0x15, 4), 0);
	f.opcode = ROCE_OP_RC_ACKNOWLEDGE;
	CHECK_EQ(roce_pkt_build(p, &path, &f, 4, &dst), -EINVAL);
	CHECK_EQ(roce_pkt_build(p, &path, &f, 0, &dst), 0);
	CHECK_EQ(p->len, 14 + 20 + 8 + 12 + 4 + 4);
	/* one GID IPv4-mapped, the other not */
	path.dgid[0] = 0xFE;
	CHECK_EQ(roce_pkt_build(p, &path, &f, 0, &dst), -EINVAL);
	path_v4(&path);
	/* largest payload that fits PKT_MAX_FRAME (with pad), and one more */
	f.opcode = ROCE_OP_RC_SEND_MIDDLE;
	max = (PKT_MAX_FRAME - (14 + 20 + 8 + 12 + 4)) & ~3u;
	CHECK_EQ(roce_pkt_build(p, &path, &f, max, &dst), 0);
	CHECK_EQ(p->len, max + 14 + 20 + 8 + 12 + 4);
	CHECK_EQ(roce_pkt_build(p, &path, &f, max + 1, &dst), -EMSGSIZE);
	CHECK_EQ(roce_pkt_build(p, &path, &f, 0xFFFFFFFFu, &dst), -EMSGSIZE);
	/* data moved towards the end of the buffer: less room */
	p->data = p->buf + PKT_BUF_SIZE - 100;
	CHECK_EQ(roce_pkt_build(p, &path, &f, 40, &dst), 0);
	CHECK_EQ(roce_pkt_build(p, &path, &f, 60, &dst), -EMSGSIZE);
	free(p);
}

/* ------------------------------------------------------------------ */
/* IPv6, VLAN, Ethernet padding, IPv4 options                          */

static void test_ipv6(void)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info info;
	uint8_t data[13];

	REQUIRE(p);
	memset(data, 0x3C, sizeof(data));
	path_v6(&path);
	fields_random(&f, ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
	CHECK_EQ(roce_pkt_build_frame(p, &path, &f, data, sizeof(data)), 0);
	CHECK_EQ(p->len, 14 + 40 + 8 + 12 + 8 + 4 + 16 + 4);
	CHECK_EQ(get_be16(p->data + 12), 0x86DD);
	/* version 6, traffic class 0x8A, flow label 0xABCDE */
	CHECK_EQ(get_be32(p->data + 14), 0x68AABCDEu);
	CHECK_EQ(get_be16(p->data + 18), 8 + 12 + 8 + 4 + 16 + 4);
	CHECK_EQ(p->data[20], 17);
	CHECK_EQ(p->data[21], 0x20);
	/* like Linux rxe: UDP checksum 0 unless asked for */
	CHECK_EQ(get_be16(p->data + 54 + 6), 0);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info), 0);
	CHECK(info.ip6 && !info.ip4);
	CHECK_EQ(info.ip_ver, 6);
	CHECK_EQ(info.tclass, 0x8A);
	CHECK_EQ(info.flow_label, 0xABCDE);
	CHECK_EQ(info.hop_limit, 0x20);
	CHECK(!roce_gid_is_ipv4(info.sgid));
	CHECK_EQ(info.l4_off, 54);
	CHECK_EQ(info.payload_len, 13);
	CHECK_EQ(info.padcnt, 3);
	CHECK_EQ(roce_deth_sqpn(info.deth), f.deth.sqpn);

	/* a correct UDP checksum when asked for: verify it by the RFC 1071
	 * property (sum over pseudo header + datagram is 0xFFFF) */
	path.flags |= ROCE_PATH_F_UDP_CSUM;
	CHECK_EQ(roce_pkt_build_frame(p, &path, &f, data, sizeof(data)), 0);
	{
		uint8_t *l4 = p->data + 54;
		uint32_t ulen = get_be16(l4 + 4), sum = 0, i;

		CHECK(get_be16(l4 + 6) != 0);
		for (i = 0; i < 32; i += 2)
			sum += get_be16(p->data + 22 + i);
		sum += 17 + ulen;
		for (i = 0; i + 1 < ulen; i += 2)
			sum += get_be16(l4 + i);
		if (ulen & 1)
			sum += (uint32_t)l4[ulen - 1] << 8;
		while (sum >> 16)
			sum = (sum & 0xFFFF) + (sum >> 16);
		CHECK_EQ(sum, 0xFFFF);
	}
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info), 0);
	/* wrong checksum: only caught when asked; the ICRC does not cover it */
	p->data[54 + 6] ^= 0x01;
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info),
		 -ROCE_RX_E_UDP_CSUM);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC, &info), 0);
	free(p);
}

static void test_vlan(void)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info info;
	static const uint8_t data[5] = { 1, 2, 3, 4, 5 };

	REQUIRE(p);
	path_v4(&path);
	path.flags = ROCE_PATH_F_VLAN;
	path.vlan_tci = (5 << 13) | 100; /* PCP 5, VID 100 */
	fields_random(&f, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
	CHECK_EQ(roce_pkt_build_frame(p, &path, &f, data, sizeof(data)), 0);
	CHECK_EQ(p->len, 18 + 20 + 8 + 12 + 4 + 8 + 4);
	CHECK_EQ(get_be16(p->data + 12), 0x8100);
	CHECK_EQ(get_be16(p->data + 14), 0xA064);
	CHECK_EQ(get_be16(p->data + 16), 0x0800);
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC, &info), 0);
	CHECK(info.has_vlan);
	CHECK_EQ(info.vlan_tci, 0xA064);
	CHECK_EQ(info.l3_off, 18);
	CHECK_EQ(info.bth_off, 46);
	CHECK_EQ(info.payload_len, 5);
	CHECK_MEM(info.payload, data, 5);
	/* the ICRC does not cover L2: the same packet untagged has the same ICRC */
	{
		uint32_t tagged = get_le32(p->data + p->len - 4);

		path.flags = 0;
		CHECK_EQ(roce_pkt_build_frame(p, &path, &f, data, sizeof(data)), 0);
		CHECK_EQ(get_le32(p->data + p->len - 4), tagged);
	}
	free(p);
}

static void test_eth_padding_and_ip_options(void)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info info;
	uint8_t frame[128];
	uint32_t len;

	REQUIRE(p);
	path_v4(&path);
	fields_random(&f, ROCE_OP_RC_SEND_ONLY);
	CHECK_EQ(roce_pkt_build_frame(p, &path, &f, NULL, 0), 0);
	CHECK_EQ(p->len, 58);
	/* padded to the Ethernet minimum by a NIC: trailing bytes ignored */
	memcpy(frame, p->data, 58);
	frame[58] = 0xAA;
	frame[59] = 0xBB;
	CHECK_EQ(roce_pkt_parse(frame, 60, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(info.pkt_len, 58);
	CHECK_EQ(info.payload_len, 0);
	CHECK_EQ(roce_icrc_frame_verify(frame, 60), 0);

	/* IPv4 with 4 bytes of options (NOP NOP NOP EOL): covered by the ICRC
	 * as sent */
	CHECK_EQ(roce_pkt_build_frame(p, &path, &f, "abcdefgh", 8), 0);
	len = p->len;
	memcpy(frame, p->data, 34);
	frame[34] = 1;
	frame[35] = 1;
	frame[36] = 1;
	frame[37] = 0;
	memcpy(frame + 38, p->data + 34, len - 34);
	len += 4;
	frame[14] = 0x46;
	put_be16(frame + 16, (uint16_t)(len - 14));
	fix_ip4_csum(frame, 14);
	CHECK_EQ(roce_pkt_parse(frame, len, 0, &info), 0);
	CHECK_EQ(roce_pkt_parse(frame, len, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_ICRC);
	CHECK_EQ(roce_icrc_frame_set(frame, len), 0);
	CHECK_EQ(roce_pkt_parse(frame, len, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(info.l4_off, 38);
	CHECK_EQ(info.payload_len, 8);
	CHECK_MEM(info.payload, "abcdefgh", 8);
	free(p);
}

/* ------------------------------------------------------------------ */
/* Every parse error reason                                            */

struct craft {
	uint8_t f[256];
	uint32_t len;
};

static void craft_base(struct craft *c, bool v6, bool vlan, uint8_t opcode,
		       uint32_t plen, uint8_t path_flags)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	uint8_t data[64];

	c->len = 0;
	if (!p)
		return;
	memset(data, 0x5A, sizeof(data));
	if (v6)
		path_v6(&path);
	else
		path_v4(&path);
	path.flags = (uint8_t)((vlan ? ROCE_PATH_F_VLAN : 0) | path_flags);
	path.vlan_tci = 7;
	fields_random(&f, opcode);
	f.pkey = 0xFFFF;
	if (roce_pkt_build_frame(p, &path, &f, data, plen) == 0 && p->len <= sizeof(c->f)) {
		memcpy(c->f, p->data, p->len);
		c->len = p->len;
	}
	free(p);
}

static unsigned seen_reason[ROCE_RX_E_NUM];

/* Parses c (with ICRC and UDP checksum checks) and expects reason. */
static int expect_reason(const struct craft *c, uint32_t len, int reason, int line)
{
	struct roce_pkt_info info;
	int ret = roce_pkt_parse(c->f, len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info);

	if (ret != -reason) {
		printf("#   line %d: expected %s, got %s\n", line,
		       roce_rx_err_name(reason), roce_rx_err_name(ret));
		return 0;
	}
	seen_reason[reason]++;
	return 1;
}

#define EXPECT(c, len, reason) CHECK(expect_reason((c), (len), (reason), __LINE__))

/* Fix up a crafted frame so only the intended defect remains. */
static void refresh(struct craft *c, uint32_t l3, bool v4)
{
	if (v4)
		fix_ip4_csum(c->f, l3);
	roce_icrc_frame_set(c->f, c->len); /* may fail for broken frames */
}

/* A frame with a bad IPv4 header checksum (c) is refused, unless this
 * process's transport built it and nothing altered it since (marked
 * PKT_F_LOCAL_ICRC_SKIPPED: what alters a frame seals it first). */
static void parse_local(const struct craft *c)
{
	struct roce_pkt_info info;
	struct pkt *p = pkt_alloc();

	REQUIRE(p);
	memcpy(p->data, c->f, c->len);
	p->len = c->len;
	CHECK_EQ(roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_IP4_CSUM);
	p->flags |= PKT_F_LOCAL_ICRC_SKIPPED;
	CHECK_EQ(roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(roce_pkt_parse(c->f, c->len, ROCE_RX_F_LOCAL, &info), 0);
	pkt_free(p);
}

static void test_parse_errors(void)
{
	struct craft c, base4, base6, basev, empty4, csum4;
	unsigned r;

	memset(seen_reason, 0, sizeof(seen_reason));
	craft_base(&base4, false, false, ROCE_OP_RC_SEND_ONLY, 8, 0);
	craft_base(&base6, true, false, ROCE_OP_RC_SEND_ONLY, 8, 0);
	craft_base(&basev, false, true, ROCE_OP_RC_SEND_ONLY, 8, 0);
	craft_base(&empty4, false, false, ROCE_OP_RC_SEND_ONLY, 0, 0);
	craft_base(&csum4, false, false, ROCE_OP_RC_SEND_ONLY, 8, ROCE_PATH_F_UDP_CSUM);
	REQUIRE(base4.len == 66 && base6.len == 86 && basev.len == 70 &&
		empty4.len == 58 && csum4.len == 66);
	EXPECT(&base4, base4.len, ROCE_RX_OK);
	EXPECT(&base6, base6.len, ROCE_RX_OK);
	EXPECT(&basev, basev.len, ROCE_RX_OK);
	EXPECT(&empty4, empty4.len, ROCE_RX_OK);
	EXPECT(&csum4, csum4.len, ROCE_RX_OK);

	/* Ethernet */
	EXPECT(&base4, 0, ROCE_RX_E_ETH_SHORT);
	EXPECT(&base4, 13, ROCE_RX_E_ETH_SHORT);
	EXPECT(&basev, 17, ROCE_RX_E_ETH_SHORT);
	c = base4;
	put_be16(c.f + 12, 0x0806);
	EXPECT(&c, c.len, ROCE_RX_E_ETHERTYPE);
	c = base4;
	put_be16(c.f + 12, 0x88A8);
	EXPECT(&c, c.len, ROCE_RX_E_ETHERTYPE);
	c = basev;
	put_be16(c.f + 16, 0x8100); /* a second tag */
	EXPECT(&c, c.len, ROCE_RX_E_ETHERTYPE);
	c = base4;
	put_be16(c.f + 12, 0x86DD); /* IPv4 header behind an IPv6 type */
	EXPECT(&c, c.len, ROCE_RX_E_IP_VERSION);

	/* IPv4 */
	c = base4;
	c.f[14] = 0x65;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP_VERSION);
	EXPECT(&base4, 14 + 19, ROCE_RX_E_IP4_SHORT);
	EXPECT(&basev, 18 + 19, ROCE_RX_E_IP4_SHORT);
	c = base4;
	c.f[14] = 0x44;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_IHL);
	c = base4;
	put_be16(c.f + 16, (uint16_t)(c.len - 14 + 1));
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_LEN);
	EXPECT(&base4, base4.len - 1, ROCE_RX_E_IP4_LEN); /* truncated frame */
	c = base4;
	put_be16(c.f + 16, 19);
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_LEN);
	c = base4;
	c.f[14] = 0x4F;                     /* IHL 60 > total length */
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_LEN);
	c = base4;
	c.f[24] ^= 0x40;
	EXPECT(&c, c.len, ROCE_RX_E_IP4_CSUM);
	parse_local(&c);
	c = base4;
	put_be16(c.f + 20, ROCE_IPV4_DF | ROCE_IPV4_MF);
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_FRAG);
	c = base4;
	put_be16(c.f + 20, 0x0001);
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP4_FRAG);
	c = base4;
	c.f[23] = 6;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_IP_PROTO);

	/* IPv6 */
	c = base6;
	c.f[14] = 0x40 | (c.f[14] & 0x0F);
	EXPECT(&c, c.len, ROCE_RX_E_IP_VERSION);
	EXPECT(&base6, 14 + 39, ROCE_RX_E_IP6_SHORT);
	c = base6;
	put_be16(c.f + 18, (uint16_t)(c.len - 54 + 1));
	EXPECT(&c, c.len, ROCE_RX_E_IP6_LEN);
	EXPECT(&base6, base6.len - 1, ROCE_RX_E_IP6_LEN);
	c = base6;
	put_be16(c.f + 18, 0xFFFF);
	EXPECT(&c, c.len, ROCE_RX_E_IP6_LEN);
	c = base6;
	c.f[20] = 0;                        /* hop-by-hop options header */
	EXPECT(&c, c.len, ROCE_RX_E_IP_PROTO);
	c = base6;                          /* source ::ffff:10.0.0.1 */
	memcpy(c.f + 22, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x01", 16);
	refresh(&c, 14, false);
	EXPECT(&c, c.len, ROCE_RX_E_IP6_ADDR);
	c = base6;                          /* destination ::ffff:0.0.0.0 */
	memcpy(c.f + 38, "\0\0\0\0\0\0\0\0\0\0\xff\xff\0\0\0\0", 16);
	refresh(&c, 14, false);
	EXPECT(&c, c.len, ROCE_RX_E_IP6_ADDR);

	/* UDP */
	c = base4;
	put_be16(c.f + 16, 20 + 7);
	c.len = 14 + 27;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_SHORT);
	c = base6;
	put_be16(c.f + 18, 0);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_SHORT);
	c = base4;
	put_be16(c.f + 36, 4792);
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_PORT);
	c = base6;
	put_be16(c.f + 56, 4790);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_PORT);
	c = base4;
	put_be16(c.f + 38, (uint16_t)(get_be16(c.f + 38) + 4));
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_LEN);
	c = base4;
	put_be16(c.f + 38, 4);
	EXPECT(&c, c.len, ROCE_RX_E_UDP_LEN);
	c = base6;
	put_be16(c.f + 58, (uint16_t)(get_be16(c.f + 58) - 4));
	EXPECT(&c, c.len, ROCE_RX_E_UDP_LEN);
	c = csum4;
	c.f[40] ^= 0xFF;
	EXPECT(&c, c.len, ROCE_RX_E_UDP_CSUM);
	c = csum4;
	c.f[60] ^= 0x01;                    /* payload byte: UDP csum and ICRC */
	refresh(&c, 14, true);              /* fix the ICRC only */
	EXPECT(&c, c.len, ROCE_RX_E_UDP_CSUM);

	/* BTH */
	c = empty4;                         /* UDP payload = BTH only */
	put_be16(c.f + 16, (uint16_t)(get_be16(c.f + 16) - 4));
	put_be16(c.f + 38, (uint16_t)(get_be16(c.f + 38) - 4));
	c.len -= 4;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_BTH_SHORT);
	c = base4;
	c.f[43] |= 0x01;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_BTH_TVER);
	c = base6;
	c.f[62 + 1] |= 0x0F;
	refresh(&c, 14, false);
	EXPECT(&c, c.len, ROCE_RX_E_BTH_TVER);
	for (r = 0; r < 256; r++) {
		if (roce_opcode_known((uint8_t)r))
			continue;
		c = base4;
		c.f[42] = (uint8_t)r;
		refresh(&c, 14, true);
		EXPECT(&c, c.len, ROCE_RX_E_OPCODE);
	}
	c = base4;                          /* 8 bytes after BTH < AtomicETH */
	c.f[42] = ROCE_OP_RC_COMPARE_SWAP;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_HDR_LEN);
	c = empty4;
	c.f[42] = ROCE_OP_RC_RDMA_WRITE_FIRST;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_HDR_LEN);
	c = empty4;
	c.f[43] |= 0x30;                    /* pad 3, nothing after the BTH */
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_PAD);
	c = base4;                          /* ACK + 4 stray bytes */
	c.f[42] = ROCE_OP_RC_ACKNOWLEDGE;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_PAYLOAD);
	c = base4;                          /* CNP with 8 of its 16 bytes */
	c.f[42] = ROCE_OP_CNP;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_HDR_LEN);
	c = base4;                          /* READ request + 8 - 16 bytes */
	c.f[42] = ROCE_OP_RC_RDMA_READ_REQUEST;
	refresh(&c, 14, true);
	EXPECT(&c, c.len, ROCE_RX_E_HDR_LEN);

	/* ICRC */
	c = base4;
	c.f[55] ^= 0x80;
	EXPECT(&c, c.len, ROCE_RX_E_ICRC);
	c = base6;
	c.f[c.len - 1] ^= 0x01;
	EXPECT(&c, c.len, ROCE_RX_E_ICRC);
	{
		struct roce_pkt_info info;

		CHECK_EQ(roce_pkt_parse(c.f, c.len, 0, &info), 0);
	}

	for (r = 1; r < ROCE_RX_E_NUM; r++) {
		if (!seen_reason[r])
			printf("#   reason %s never triggered\n", roce_rx_err_name((int)r));
		CHECK(seen_reason[r] > 0);
	}
	CHECK(strcmp(roce_rx_err_name(-ROCE_RX_E_ICRC), "ICRC") == 0);
	CHECK(strcmp(roce_rx_err_name(ROCE_RX_E_NUM), "?") == 0);
}

/* ------------------------------------------------------------------ */
/* Fuzzer findings (each also a seed in fuzz/corpus/roce_rx/)          */

static void test_fuzz_findings(void)
{
	/* IPv6 RC SEND_LAST, 15 payload bytes with PadCnt 0: payload + pad is
	 * not a multiple of 4 (fuzz/corpus/roce_rx/v6_send_last_pad_len). */
	static const char v6_pad_len[] =
		"02000000000202000000000186dd68aabcde0027112020010db8000000000000"
		"00000000000020010db8000000000000000000000002df9412b7002700020200"
		"000000010800636a71787f868d949ba2a9b0b1bec5ccd3dae1e8efc52a66";
	uint8_t f[256];
	struct roce_pkt_info info;
	struct craft c;
	int n = hex2bin(v6_pad_len, f, sizeof(f));
	uint32_t trim;

	REQUIRE(n == 94);
	CHECK_EQ(roce_pkt_parse(f, (uint32_t)n, 0, &info), -ROCE_RX_E_PAD);
	CHECK_EQ(roce_pkt_parse(f, (uint32_t)n, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_PAD);

	/* Trimming 1..4 bytes off an 8-byte payload: only a multiple of 4 left
	 * behind the headers parses. */
	craft_base(&c, false, false, ROCE_OP_RC_SEND_ONLY, 8, 0);
	REQUIRE(c.len == 66);
	for (trim = 1; trim <= 4; trim++) {
		struct craft d = c;

		put_be16(d.f + 16, (uint16_t)(get_be16(d.f + 16) - trim));
		put_be16(d.f + 38, (uint16_t)(get_be16(d.f + 38) - trim));
		d.len -= trim;
		refresh(&d, 14, true);
		CHECK_EQ(roce_pkt_parse(d.f, d.len, ROCE_RX_F_ICRC, &info),
			 trim == 4 ? 0 : -ROCE_RX_E_PAD);
	}
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static void test_helpers(void)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	static const uint8_t ll[16] = { 0xFE, 0x80, 0, 0, 0, 0, 0, 0,
					0x50, 0x54, 0x00, 0xFF, 0xFE, 0x12, 0x34, 0x56 };
	static const uint8_t ip[4] = { 192, 168, 1, 2 };
	static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF,
					    192, 168, 1, 2 };
	uint8_t gid[16], out[4] = { 0 };
	unsigned seen[4] = { 0 };
	uint32_t q;

	roce_gid_from_mac(gid, mac);
	CHECK_MEM(gid, ll, 16);
	CHECK(!roce_gid_is_ipv4(gid));
	CHECK_EQ(roce_gid_to_ipv4(gid, out), -EINVAL);
	CHECK_EQ(out[0], 0);

	roce_gid_from_ipv4(gid, ip);
	CHECK_MEM(gid, mapped, 16);
	CHECK(roce_gid_is_ipv4(gid));
	CHECK_EQ(roce_gid_to_ipv4(gid, out), 0);
	CHECK_MEM(out, ip, 4);

	for (q = 0; q < 4096; q++) {
		uint16_t s = roce_udp_sport_from_qpn(q);

		CHECK((s & 0xC000) == 0xC000);
		seen[(s >> 12) & 3]++;
	}
	/* spread: every quarter of the range is used */
	CHECK(seen[0] > 512 && seen[1] > 512 && seen[2] > 512 && seen[3] > 512);
	CHECK(roce_udp_sport_from_qpn(1) != roce_udp_sport_from_qpn(2));
	CHECK_EQ(roce_udp_sport_from_qpn(0x11), roce_udp_sport_from_qpn(0x11));

	/* RFC 1071 example header (from many textbooks): 0xB861 */
	{
		static const uint8_t h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
					       0x40, 0x11, 0x00, 0x00, 0xC0, 0xA8, 0x00, 0x01,
					       0xC0, 0xA8, 0x00, 0xC7 };

		CHECK_EQ(roce_ipv4_hdr_csum(h, 20), 0xB861);
	}
}

/* ------------------------------------------------------------------ */
/* Test mode: sample frames for scapy and fuzz seeds                   */

struct sample {
	const char *name;
	bool v6, vlan, udp_csum, ip_opts;
	uint8_t opcode;
	uint32_t plen;
};

static const struct sample samples[] = {
	{ "v4_send_only", false, false, false, false, ROCE_OP_RC_SEND_ONLY, 4 },
	{ "v4_send_first_pad", false, false, false, false, ROCE_OP_RC_SEND_FIRST, 1021 },
	{ "v4_write_only_imm", false, false, false, false, ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 33 },
	{ "v4_read_req", false, false, false, false, ROCE_OP_RC_RDMA_READ_REQUEST, 0 },
	{ "v4_read_resp_first", false, false, false, false, ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, 1024 },
	{ "v4_ack", false, false, false, false, ROCE_OP_RC_ACKNOWLEDGE, 0 },
	{ "v4_atomic_ack", false, false, false, false, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 0 },
	{ "v4_cmp_swap", false, false, false, false, ROCE_OP_RC_COMPARE_SWAP, 0 },
	{ "v4_fetch_add_vlan", false, true, false, false, ROCE_OP_RC_FETCH_ADD, 0 },
	{ "v4_send_inv", false, false, false, false, ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, 7 },
	{ "v4_uc_write_first", false, false, false, false, ROCE_OP_UC_RDMA_WRITE_FIRST, 256 },
	{ "v4_ud_send_imm", false, false, false, false, ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, 62 },
	{ "v4_cnp", false, false, false, false, ROCE_OP_CNP, 0 },
	{ "v4_udp_csum", false, false, true, false, ROCE_OP_RC_SEND_LAST, 9 },
	{ "v4_ip_options", false, false, false, true, ROCE_OP_RC_SEND_MIDDLE, 16 },
	{ "v6_send_only", true, false, false, false, ROCE_OP_RC_SEND_ONLY, 4 },
	{ "v6_write_first", true, false, false, false, ROCE_OP_RC_RDMA_WRITE_FIRST, 4095 },
	{ "v6_read_resp_last", true, false, false, false, ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, 2 },
	{ "v6_ack", true, false, false, false, ROCE_OP_RC_ACKNOWLEDGE, 0 },
	{ "v6_atomic_ack_vlan", true, true, false, false, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 0 },
	{ "v6_ud_send", true, false, false, false, ROCE_OP_UD_SEND_ONLY, 100 },
	{ "v6_cnp", true, false, false, false, ROCE_OP_CNP, 0 },
	{ "v6_udp_csum", true, false, true, false, ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, 77 },
	{ "v6_udp_csum_uc", true, false, true, false, ROCE_OP_UC_SEND_LAST_WITH_IMMEDIATE, 1 },
};

/* Builds sample s into buf (room for PKT_MAX_FRAME) with the header values
 * in *f; returns the length or 0. */
static uint32_t sample_build(const struct sample *s, uint8_t *buf,
			     struct roce_hdr_fields *f_out)
{
	struct pkt *p = tpkt_new();
	struct roce_path path;
	struct roce_hdr_fields f;
	uint8_t *data = malloc(s->plen + 1);
	uint32_t len = 0, i;

	if (!p || !data)
		goto out;
	for (i = 0; i < s->plen; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	if (s->v6)
		path_v6(&path);
	else
		path_v4(&path);
	path.flags = (uint8_t)((s->vlan ? ROCE_PATH_F_VLAN : 0) |
			       (s->udp_csum ? ROCE_PATH_F_UDP_CSUM : 0));
	path.vlan_tci = 42;
	fields_random(&f, s->opcode);
	*f_out = f;
	if (roce_pkt_build_frame(p, &path, &f, data, s->plen))
		goto out;
	len = p->len;
	if (s->ip_opts && !s->v6 && !s->vlan) {
		/* 4 bytes of options: NOP NOP NOP EOL */
		memcpy(buf, p->data, 34);
		memcpy(buf + 34, "\x01\x01\x01\x00", 4);
		memcpy(buf + 38, p->data + 34, len - 34);
		len += 4;
		buf[14] = 0x46;
		put_be16(buf + 16, (uint16_t)(len - 14));
		fix_ip4_csum(buf, 14);
		roce_icrc_frame_set(buf, len);
	} else {
		memcpy(buf, p->data, len);
	}
out:
	free(data);
	free(p);
	return len;
}

/* Writes the samples to the pcap file path, and one line per frame to
 * path.txt: name opcode(hex) opcode-name dqpn psn payload-length. */
static int emit_pcap(const char *path)
{
	uint8_t *buf = malloc(PKT_MAX_FRAME + 64);
	char txt[512];
	FILE *fp = fopen(path, "wb"), *tf;
	struct roce_hdr_fields f;
	/* pcap global header: magic, version 2.4, zone, sigfigs, snaplen,
	 * Ethernet; native byte order (readers detect it from the magic) */
	uint32_t gh[6] = { 0xA1B2C3D4u, 2u | (4u << 16), 0, 0, 65535, 1 };
	size_t i;
	int ret = 1;

	snprintf(txt, sizeof(txt), "%s.txt", path);
	tf = fopen(txt, "w");
	if (!fp || !buf || !tf)
		goto out;
	if (fwrite(gh, sizeof(gh), 1, fp) != 1)
		goto out;
	for (i = 0; i < ARRAY_SIZE(samples); i++) {
		uint32_t len = sample_build(&samples[i], buf, &f);
		uint32_t rh[4] = { (uint32_t)i, 0, len, len };

		if (!len) {
			fprintf(stderr, "cannot build sample %s\n", samples[i].name);
			goto out;
		}
		if (fwrite(rh, sizeof(rh), 1, fp) != 1 || fwrite(buf, len, 1, fp) != 1)
			goto out;
		fprintf(tf, "%s 0x%02x %s %u %u %u\n", samples[i].name, f.opcode,
			roce_opcode_name(f.opcode), f.dqpn, f.psn, samples[i].plen);
	}
	ret = 0;
out:
	if (fp && fclose(fp))
		ret = 1;
	if (tf && fclose(tf))
		ret = 1;
	free(buf);
	return ret;
}

static int emit_raw(const char *dir)
{
	uint8_t *buf = malloc(PKT_MAX_FRAME + 64);
	char name[512];
	size_t i;

	if (!buf)
		return 1;
	for (i = 0; i < ARRAY_SIZE(samples); i++) {
		struct roce_hdr_fields f;
		uint32_t len = sample_build(&samples[i], buf, &f);
		FILE *fp;

		snprintf(name, sizeof(name), "%s/%s", dir, samples[i].name);
		fp = fopen(name, "wb");
		if (!len || !fp || fwrite(buf, len, 1, fp) != 1) {
			if (fp)
				fclose(fp);
			free(buf);
			return 1;
		}
		fclose(fp);
	}
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--emit-pcap") == 0)
		return emit_pcap(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--emit-raw") == 0)
		return emit_raw(argv[2]);

	TEST_PROGRAM("test_roce_pkt");
	RUN(test_hdr_accessors);
	RUN(test_opcode_table);
	RUN(test_icrc_vector);
	RUN(test_crc_impls_agree);
	RUN(test_roundtrip_all_opcodes);
	RUN(test_build_then_finalize);
	RUN(test_build_errors);
	RUN(test_ipv6);
	RUN(test_vlan);
	RUN(test_eth_padding_and_ip_options);
	RUN(test_parse_errors);
	RUN(test_fuzz_findings);
	RUN(test_helpers);
	return TEST_DONE();
}
