/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: arbitrary bytes as a received Ethernet frame into the RoCE v2
 * parser, with and without the ICRC and UDP checksum checks. The frame is
 * copied into a buffer of exactly its size so ASan sees any read past it.
 * When a frame parses, every reported header and the payload are read, and
 * the packet is rebuilt from the decoded values and must parse back to the
 * same values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "port/pkt.h"
#include "roce/roce_icrc.h"
#include "roce/roce_pkt.h"

static volatile uint32_t sink;

static void touch(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint32_t i, s = 0;

	for (i = 0; i < len; i++)
		s += b[i];
	sink += s;
}

/* Rebuilds the packet described by in and checks it parses to the same. */
static void rebuild(const struct roce_pkt_info *in)
{
	static struct pkt *p;
	struct roce_path path;
	struct roce_hdr_fields f;
	struct roce_pkt_info out;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			abort();
	}
	p->data = p->buf + PKT_HEADROOM;
	p->flags = 0;

	memset(&path, 0, sizeof(path));
	memcpy(path.smac, in->smac, ROCE_MAC_LEN);
	memcpy(path.dmac, in->dmac, ROCE_MAC_LEN);
	memcpy(path.sgid, in->sgid, ROCE_GID_LEN);
	memcpy(path.dgid, in->dgid, ROCE_GID_LEN);
	path.tclass = in->tclass;
	path.hop_limit = in->hop_limit;
	path.flow_label = in->flow_label;
	path.udp_sport = in->udp_sport;
	path.vlan_tci = in->vlan_tci;
	path.flags = (uint8_t)((in->has_vlan ? ROCE_PATH_F_VLAN : 0) |
			       (roce_udp_csum(in->udp) ? ROCE_PATH_F_UDP_CSUM : 0));

	memset(&f, 0, sizeof(f));
	f.opcode = in->opcode;
	f.se = in->se;
	f.migreq = in->migreq;
	f.fecn = in->fecn;
	f.becn = in->becn;
	f.ackreq = in->ackreq;
	f.pkey = in->pkey;
	f.dqpn = in->dqpn;
	f.psn = in->psn;
	if (in->reth) {
		f.reth.va = roce_reth_va(in->reth);
		f.reth.rkey = roce_reth_rkey(in->reth);
		f.reth.len = roce_reth_len(in->reth);
	}
	if (in->aeth) {
		f.aeth.syndrome = roce_aeth_syndrome(in->aeth);
		f.aeth.msn = roce_aeth_msn(in->aeth);
	}
	if (in->deth) {
		f.deth.qkey = roce_deth_qkey(in->deth);
		f.deth.sqpn = roce_deth_sqpn(in->deth);
	}
	if (in->immdt)
		f.imm = roce_immdt_raw(in->immdt);
	if (in->atmeth) {
		f.atmeth.va = roce_atmeth_va(in->atmeth);
		f.atmeth.rkey = roce_atmeth_rkey(in->atmeth);
		f.atmeth.swap_add = roce_atmeth_swap_add(in->atmeth);
		f.atmeth.compare = roce_atmeth_compare(in->atmeth);
	}
	if (in->atmack)
		f.atmack_orig = roce_atmack_orig(in->atmack);
	if (in->ieth)
		f.ieth_rkey = roce_ieth_rkey(in->ieth);
	if (in->ip4)
		f.ip_id = roce_ipv4_id(in->ip4);

	if (roce_pkt_build_frame(p, &path, &f, in->payload, in->payload_len)) {
		/* Only a frame too big for a struct pkt may fail (mixed
		 * IPv4-mapped/IPv6 GIDs cannot come out of the parser). */
		if (roce_pkt_frame_len(&path, f.opcode, in->payload_len) <= PKT_MAX_FRAME)
			abort();
		return;
	}
	if (roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &out))
		abort();
	if (out.opcode != in->opcode || out.psn != in->psn || out.dqpn != in->dqpn ||
	    out.pkey != in->pkey || out.se != in->se || out.migreq != in->migreq ||
	    out.fecn != in->fecn || out.becn != in->becn || out.ackreq != in->ackreq ||
	    out.payload_len != in->payload_len || out.padcnt != in->padcnt ||
	    out.ip_ver != in->ip_ver || out.tclass != in->tclass ||
	    out.flow_label != in->flow_label || out.vlan_tci != in->vlan_tci ||
	    out.has_vlan != in->has_vlan || out.udp_sport != in->udp_sport ||
	    memcmp(out.sgid, in->sgid, ROCE_GID_LEN) || memcmp(out.dgid, in->dgid, ROCE_GID_LEN) ||
	    memcmp(out.smac, in->smac, ROCE_MAC_LEN) || memcmp(out.dmac, in->dmac, ROCE_MAC_LEN) ||
	    memcmp(out.payload, in->payload, in->payload_len))
		abort();
	/* Extended headers byte for byte, except the reserved ones the builder
	 * writes as 0 (DETH byte 4, the 16 bytes of a CNP). */
	if (in->deth) {
		if (roce_deth_qkey(out.deth) != roce_deth_qkey(in->deth) ||
		    roce_deth_sqpn(out.deth) != roce_deth_sqpn(in->deth) ||
		    memcmp((const uint8_t *)out.bth + 20, (const uint8_t *)in->bth + 20,
			   roce_opcode_get(in->opcode)->length - 20u))
			abort();
	} else if (!(in->mask & ROCE_OPF_CNP)) {
		if (memcmp((const uint8_t *)out.bth + ROCE_BTH_LEN,
			   (const uint8_t *)in->bth + ROCE_BTH_LEN,
			   roce_opcode_get(in->opcode)->length - ROCE_BTH_LEN))
			abort();
	}
}

static void check_info(const uint8_t *frame, uint32_t len, const struct roce_pkt_info *in)
{
	const struct roce_opcode_info *op = roce_opcode_get(in->opcode);

	if (!op->name || in->pkt_len > len || in->icrc_off + ROCE_ICRC_LEN != in->pkt_len ||
	    in->payload + in->payload_len + in->padcnt != frame + in->icrc_off)
		abort();
	touch(frame, in->pkt_len);
	touch(in->payload, in->payload_len);
	touch(in->bth, op->length);
	if (in->reth)
		sink += roce_reth_len(in->reth);
	if (in->aeth)
		sink += roce_aeth_msn(in->aeth);
	if (in->deth)
		sink += roce_deth_sqpn(in->deth);
	if (in->atmeth)
		sink += (uint32_t)roce_atmeth_compare(in->atmeth);
	if (in->atmack)
		sink += (uint32_t)roce_atmack_orig(in->atmack);
	if (in->immdt)
		sink += roce_immdt_raw(in->immdt);
	if (in->ieth)
		sink += roce_ieth_rkey(in->ieth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pkt_info info;
	uint8_t *frame;
	uint32_t len = size > 65600 ? 65600 : (uint32_t)size;
	int ret, ret_icrc;

	frame = malloc(len ? len : 1);
	if (!frame)
		return 0;
	memcpy(frame, data, len);

	ret = roce_pkt_parse(frame, len, 0, &info);
	if (ret > 0 || ret <= -ROCE_RX_E_NUM)
		abort();
	sink += (uint32_t)roce_rx_err_name(ret)[0];
	if (ret == 0) {
		check_info(frame, len, &info);
		rebuild(&info);
	}

	ret_icrc = roce_pkt_parse(frame, len, ROCE_RX_F_ICRC | ROCE_RX_F_UDP_CSUM, &info);
	/* The extra checks come last: they only turn a success into
	 * ICRC/UDP_CSUM, never change an earlier verdict. */
	if (ret != 0 && ret_icrc != ret)
		abort();
	if (ret == 0 && ret_icrc != 0 && ret_icrc != -ROCE_RX_E_ICRC &&
	    ret_icrc != -ROCE_RX_E_UDP_CSUM)
		abort();
	if (ret_icrc == 0) {
		check_info(frame, len, &info);
		if (roce_icrc_frame_verify(frame, len) != 0)
			abort();
	}

	/* The frame-level ICRC helpers on arbitrary input. */
	{
		uint32_t icrc;

		if (roce_icrc_frame_calc(frame, len, &icrc) == 0)
			sink += icrc;
		sink += (uint32_t)roce_icrc_frame_verify(frame, len);
	}

	free(frame);
	return 0;
}
