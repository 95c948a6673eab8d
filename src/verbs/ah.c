/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address handles and address vectors: libibverbs' ibv_ah_attr as the
 * device's (GID, flow label, hop limit, traffic class, destination MAC),
 * address handles, the AH that answers a received UD message, and
 * destination MAC resolution.
 *
 * Destination MACs: multicast GIDs map to their multicast MACs
 * (33:33:xx:xx:xx:xx, or 01:00:5e:... for IPv4), link-local GIDs made of a
 * MAC's EUI-64 give that MAC back; anything else (an IPv4-mapped or global
 * GID) is asked of the provider, which knows the device's neighbours. A
 * provider that cannot tell leaves the MAC zero for the device to resolve.
 */
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs_priv.h"

/* ------------------------------------------------------------------------ */
/* Destination MAC                                                           */
/* ------------------------------------------------------------------------ */

static bool vibv_gid_v4mapped(const uint8_t g[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g, prefix, sizeof(prefix));
}

/* ff0e::ffff:a.b.c.d, the GID of an IPv4 multicast group. */
static bool vibv_gid_v4mcast(const uint8_t g[16])
{
	static const uint8_t prefix[12] = { 0xff, 0x0e, [10] = 0xff, [11] = 0xff };

	return !memcmp(g, prefix, sizeof(prefix));
}

/*
 * The destination MAC of dgid: derived for multicast and EUI-64 link-local
 * GIDs, else asked of the provider (zero when it cannot tell). Returns 0 or
 * a positive errno.
 */
static int vibv_resolve_dmac(struct vibv_context *ctx, const uint8_t dgid[16],
			      uint32_t sgid_index, uint8_t dmac[6])
{
	int ret;

	memset(dmac, 0, 6);
	if (vibv_gid_v4mcast(dgid) ||
	    (vibv_gid_v4mapped(dgid) && (dgid[12] & 0xf0) == 0xe0)) {
		dmac[0] = 0x01;
		dmac[1] = 0x00;
		dmac[2] = 0x5e;
		dmac[3] = dgid[13] & 0x7f;
		dmac[4] = dgid[14];
		dmac[5] = dgid[15];
		return 0;
	}
	if (dgid[0] == 0xff) {
		dmac[0] = 0x33;
		dmac[1] = 0x33;
		memcpy(dmac + 2, dgid + 12, 4);
		return 0;
	}
	if (dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80 && dgid[11] == 0xff &&
	    dgid[12] == 0xfe) {
		dmac[0] = dgid[8] ^ 0x02;
		dmac[1] = dgid[9];
		dmac[2] = dgid[10];
		dmac[3] = dgid[13];
		dmac[4] = dgid[14];
		dmac[5] = dgid[15];
		return 0;
	}
	ret = VRDMA_PROV_CALL(ctx->ops, resolve_dmac, ctx->prov, dgid, sgid_index, dmac);
	if (ret == -EOPNOTSUPP) {
		memset(dmac, 0, 6);
		return 0;
	}
	return ret ? -ret : 0;
}

/* ------------------------------------------------------------------------ */
/* Address vectors                                                           */
/* ------------------------------------------------------------------------ */

/* An ibv_ah_attr as the device's address vector: 0 or a positive errno. */
int vibv_ah_attr(struct vibv_context *ctx, const struct ibv_ah_attr *in,
			struct vrdma_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	/* RoCE has no LIDs: the GRH is the address. */
	if (!in->is_global)
		return EINVAL;
	if (in->port_num != 0 && in->port_num != VRDMA_VERBS_PORT)
		return EINVAL;
	memcpy(out->grh.dgid, in->grh.dgid.raw, sizeof(out->grh.dgid));
	out->grh.flow_label = in->grh.flow_label & 0xfffff;
	out->grh.sgid_index = in->grh.sgid_index;
	out->grh.hop_limit = in->grh.hop_limit;
	out->grh.traffic_class = in->grh.traffic_class;
	out->sl = in->sl & 15;
	return vibv_resolve_dmac(ctx, out->grh.dgid, out->grh.sgid_index, out->dmac);
}

/* The device's address vector as an ibv_ah_attr. */
void vibv_ah_attr_to_ibv(const struct vrdma_ah_attr *in,
				struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->grh.dgid, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->grh.flow_label;
	out->grh.sgid_index = in->grh.sgid_index;
	out->grh.hop_limit = in->grh.hop_limit;
	out->grh.traffic_class = in->grh.traffic_class;
	out->sl = in->sl;
	out->is_global = 1;
	out->port_num = VRDMA_VERBS_PORT;
}

/* ------------------------------------------------------------------------ */
/* Address handles                                                           */
/* ------------------------------------------------------------------------ */

/* Returns an AH, or NULL with errno set. */
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct vibv_context *ctx;
	struct vrdma_ah_attr pa;
	struct ibv_ah *ah;
	uint32_t num = 0;
	int ret;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ctx = vibv_ctx(pd->context);
	ret = vibv_ah_attr(ctx, attr, &pa);
	if (ret) {
		errno = ret;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ret = VRDMA_PROV_CALL(ctx->ops, create_ah, ctx->prov, pd->handle, &pa, &num);
	if (ret) {
		free(ah);
		vibv_errno(ret);
		return NULL;
	}
	ah->context = pd->context;
	ah->pd = pd;
	ah->handle = num;
	return ah;
}

/* Destroys an AH: 0 or a positive errno. */
int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct vibv_context *ctx = vibv_ctx(ah->context);
	int ret;

	ret = VRDMA_PROV_CALL(ctx->ops, destroy_ah, ctx->prov, ah->pd->handle,
			      ah->handle);
	if (ret)
		return vibv_errno(ret);
	free(ah);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* AH from a received message                                                */
/* ------------------------------------------------------------------------ */

/* Index of our GID gid of type type, or -1 with errno set. */
static int vibv_find_gid(struct ibv_context *ibctx, uint8_t port,
			  const uint8_t gid[16], uint32_t type)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	int ret, i;

	ret = vibv_query_port(ibctx, port, &pattr);
	if (ret) {
		errno = ret;
		return -1;
	}
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		if (vibv_query_gid_entry(ibctx, port, (uint32_t)i, &e))
			continue;
		if (e.gid_type == type && !memcmp(e.gid.raw, gid, 16))
			return i;
	}
	errno = ENOENT;
	return -1;
}

/* One's complement sum check of a 20-byte IPv4 header. */
static bool vibv_ipv4_csum_ok(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/*
 * Which network header the 40-byte GRH area of a UD receive holds: 6 (the
 * IPv6 header), 4 (RoCE v2 over IPv4: 20 unused bytes, then the IPv4
 * header) or -1. A valid IPv4 header wins over an IPv6 version nibble.
 */
static int vibv_grh_version(const struct ibv_grh *grh)
{
	const uint8_t *raw = (const uint8_t *)grh;
	const uint8_t *ip4 = raw + 20;
	bool v4 = (ip4[0] >> 4) == 4 && (ip4[0] & 0x0f) == 5 && vibv_ipv4_csum_ok(ip4);

	if (v4)
		return 4;
	if ((raw[0] >> 4) == 6)
		return 6;
	return -1;
}

/* Fills ah_attr to answer the sender of wc (grh is the first 40 bytes of
 * the receive buffer). Returns 0, or -1 with errno set. */
int ibv_init_ah_from_wc(struct ibv_context *ibctx, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	uint8_t sgid[16];
	uint32_t type, vtf;
	int idx;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;

	switch (vibv_grh_version(grh)) {
	case 4: {
		const struct iphdr *ip4 = (const struct iphdr *)(raw + 20);
		uint8_t daddr[4], saddr[4];

		memcpy(daddr, &ip4->daddr, 4);
		memcpy(saddr, &ip4->saddr, 4);
		if ((daddr[0] & 0xf0) == 0xe0) { /* multicast: not in our table */
			errno = EINVAL;
			return -1;
		}
		vibv_prov_gid_from_ipv4(daddr, sgid);
		vibv_prov_gid_from_ipv4(saddr, ah_attr->grh.dgid.raw);
		type = IBV_GID_TYPE_ROCE_V2;
		ah_attr->grh.hop_limit = ip4->ttl;
		ah_attr->grh.traffic_class = ip4->tos;
		break;
	}
	case 6:
		if (grh->dgid.raw[0] == 0xff) {
			errno = EINVAL;
			return -1;
		}
		if (grh->next_hdr == IPPROTO_UDP) {
			type = IBV_GID_TYPE_ROCE_V2;
		} else if (grh->next_hdr == 0x1b) { /* IB BTH: RoCE v1 */
			type = IBV_GID_TYPE_ROCE_V1;
		} else {
			errno = EPROTONOSUPPORT;
			return -1;
		}
		memcpy(sgid, grh->dgid.raw, 16);
		ah_attr->grh.dgid = grh->sgid;
		vtf = be32toh(grh->version_tclass_flow);
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.hop_limit = grh->hop_limit;
		break;
	default:
		errno = EPROTONOSUPPORT;
		return -1;
	}
	idx = vibv_find_gid(ibctx, port_num, sgid, type);
	if (idx < 0)
		return -1;
	ah_attr->grh.sgid_index = (uint8_t)idx;
	return 0;
}

/* An AH to answer the sender of wc, or NULL with errno set. */
struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* Destination MAC of attr's GID (VLAN id 0xffff: none). Returns 0 or a
 * negative errno (-EHOSTUNREACH when no one can tell the MAC). */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *ibctx, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	static const uint8_t zero[6];
	int ret;

	if (!attr->is_global) {
		errno = EINVAL;
		return -EINVAL;
	}
	ret = vibv_resolve_dmac(vibv_ctx(ibctx), attr->grh.dgid.raw,
				 attr->grh.sgid_index, eth_mac);
	if (!ret && !memcmp(eth_mac, zero, 6))
		ret = EHOSTUNREACH;
	if (ret) {
		errno = ret;
		return -ret;
	}
	if (vid)
		*vid = 0xffff;
	return 0;
}
