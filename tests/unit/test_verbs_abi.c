/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma's libibverbs.so.1 against the installed <infiniband/verbs.h>:
 * - the structure layouts unmodified binaries rely on (sizes and offsets of
 *   rdma-core 44 on x86-64, docs: /work/shared/notes/verbs-abi.md);
 * - the library itself, loaded with dlopen from ../lib next to this program
 *   (functions looked up with their symbol versions) and driven through the
 *   fake device (VRDMA_FAKE_DEVICE): device list, queries, PD / MR, CQ and
 *   completion channel events, QP state and post / poll translation, AHs,
 *   strings, private entry points;
 * - the socket rules of src/verbs/vrdma_socket.h (shared with vrdma-run).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "verbs/vrdma_socket.h"

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static void test_layout(void)
{
	CHECK_EQ(sizeof(struct ibv_context), 328);
	CHECK_EQ(offsetof(struct ibv_context, device), 0);
	CHECK_EQ(offsetof(struct ibv_context, ops), 8);
	CHECK_EQ(offsetof(struct ibv_context, ops.poll_cq), 96);
	CHECK_EQ(offsetof(struct ibv_context, ops.req_notify_cq), 104);
	CHECK_EQ(offsetof(struct ibv_context, ops.post_srq_recv), 168);
	CHECK_EQ(offsetof(struct ibv_context, ops.post_send), 208);
	CHECK_EQ(offsetof(struct ibv_context, ops.post_recv), 216);
	CHECK_EQ(offsetof(struct ibv_context, cmd_fd), 264);
	CHECK_EQ(offsetof(struct ibv_context, async_fd), 268);
	CHECK_EQ(offsetof(struct ibv_context, num_comp_vectors), 272);
	CHECK_EQ(offsetof(struct ibv_context, abi_compat), 320);
	CHECK_EQ(sizeof(struct ibv_context_ops), 256);
	CHECK_EQ(sizeof(struct verbs_context), 648);
	CHECK_EQ(offsetof(struct verbs_context, context), 320);
	CHECK_EQ(offsetof(struct verbs_context, sz), 312);
	CHECK_EQ(sizeof(struct ibv_qp), 160);
	CHECK_EQ(offsetof(struct ibv_qp, qp_num), 52);
	CHECK_EQ(offsetof(struct ibv_qp, state), 56);
	CHECK_EQ(sizeof(struct ibv_cq), 128);
	CHECK_EQ(sizeof(struct ibv_mr), 48);
	CHECK_EQ(offsetof(struct ibv_mr, lkey), 36);
	CHECK_EQ(offsetof(struct ibv_mr, rkey), 40);
	CHECK_EQ(sizeof(struct ibv_wc), 48);
	CHECK_EQ(sizeof(struct ibv_qp_ex), 352);
	CHECK_EQ(sizeof(struct ibv_sge), 16);
	CHECK_EQ(sizeof(struct ibv_port_attr), 52);
	CHECK_EQ(offsetof(struct ibv_port_attr, port_cap_flags2), 48);
	CHECK_EQ(sizeof(struct ibv_device), 664);
	CHECK_EQ(sizeof(struct ibv_gid_entry), 32);
}

/* ------------------------------------------------------------------------ */
/* The library                                                               */
/* ------------------------------------------------------------------------ */

/* Private entry points (not in the installed headers). */
typedef int (*query_gid_type_fn)(struct ibv_context *, uint8_t, unsigned int, int *);
typedef void (*register_driver_fn)(const void *);
typedef int (*cmd_fn)(void);
typedef void *(*init_alloc_ctx_fn)(struct ibv_device *, int, size_t, void *, uint32_t);
typedef int (*resolve_l2_fn)(struct ibv_context *, struct ibv_ah_attr *, uint8_t *,
			     uint16_t *);

#define F(name) __typeof__(name) *name
static struct {
	F(ibv_get_device_list);
	F(ibv_free_device_list);
	F(ibv_get_device_name);
	F(ibv_get_device_guid);
	F(ibv_get_device_index);
	F(ibv_open_device);
	F(ibv_close_device);
	F(ibv_query_device);
	F(ibv_query_port);
	F(ibv_query_gid);
	F(_ibv_query_gid_ex);
	F(_ibv_query_gid_table);
	F(ibv_query_pkey);
	F(ibv_get_pkey_index);
	F(ibv_alloc_pd);
	F(ibv_dealloc_pd);
	F(ibv_reg_mr);
	F(ibv_reg_mr_iova2);
	F(ibv_dereg_mr);
	F(ibv_create_comp_channel);
	F(ibv_destroy_comp_channel);
	F(ibv_create_cq);
	F(ibv_destroy_cq);
	F(ibv_get_cq_event);
	F(ibv_ack_cq_events);
	F(ibv_create_qp);
	F(ibv_modify_qp);
	F(ibv_query_qp);
	F(ibv_destroy_qp);
	F(ibv_qp_to_qp_ex);
	F(ibv_create_srq);
	F(ibv_create_ah);
	F(ibv_destroy_ah);
	F(ibv_init_ah_from_wc);
	F(ibv_get_async_event);
	F(ibv_wc_status_str);
	F(ibv_port_state_str);
	F(ibv_node_type_str);
	F(ibv_event_type_str);
	F(ibv_rate_to_mbps);
	F(mult_to_ibv_rate);
	F(ibv_rate_to_mult);
	F(ibv_fork_init);
	F(ibv_is_fork_initialized);
	query_gid_type_fn ibv_query_gid_type;
	register_driver_fn verbs_register_driver_34;
	cmd_fn ibv_cmd_create_qp;
	init_alloc_ctx_fn _verbs_init_and_alloc_context;
	resolve_l2_fn ibv_resolve_eth_l2_from_gid;
} V;
#undef F

static void *lib;
static const char *lib_skip;

/* Loads ../lib/libibverbs.so.1 (once). Returns false (and sets lib_skip)
 * when it is not there. */
static bool load_lib(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (lib)
		return true;
	if (lib_skip)
		return false;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		lib_skip = "no /proc/self/exe";
		return false;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../lib/libibverbs.so.1", exe);
	/* Not closed: the library keeps its device table until exit. */
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		lib_skip = "build/lib/libibverbs.so.1 not built";
		return false;
	}
	return true;
}

#define LOAD(name, ver) (*(void **)&V.name = dlvsym(lib, #name, ver))

static void test_symbols(void)
{
	if (!load_lib())
		SKIP(lib_skip);
	CHECK(LOAD(ibv_get_device_list, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_free_device_list, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_device_name, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_device_guid, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_device_index, "IBVERBS_1.9"));
	CHECK(LOAD(ibv_open_device, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_close_device, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_query_device, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_query_port, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_query_gid, "IBVERBS_1.1"));
	CHECK(LOAD(_ibv_query_gid_ex, "IBVERBS_1.11"));
	CHECK(LOAD(_ibv_query_gid_table, "IBVERBS_1.11"));
	CHECK(LOAD(ibv_query_pkey, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_pkey_index, "IBVERBS_1.5"));
	CHECK(LOAD(ibv_alloc_pd, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_dealloc_pd, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_reg_mr, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_reg_mr_iova2, "IBVERBS_1.8"));
	CHECK(LOAD(ibv_dereg_mr, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_create_comp_channel, "IBVERBS_1.0"));
	CHECK(LOAD(ibv_destroy_comp_channel, "IBVERBS_1.0"));
	CHECK(LOAD(ibv_create_cq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_destroy_cq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_cq_event, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_ack_cq_events, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_create_qp, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_modify_qp, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_query_qp, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_destroy_qp, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_qp_to_qp_ex, "IBVERBS_1.6"));
	CHECK(LOAD(ibv_create_srq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_create_ah, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_destroy_ah, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_init_ah_from_wc, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_get_async_event, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_wc_status_str, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_port_state_str, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_node_type_str, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_event_type_str, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_rate_to_mbps, "IBVERBS_1.1"));
	CHECK(LOAD(mult_to_ibv_rate, "IBVERBS_1.0"));
	CHECK(LOAD(ibv_rate_to_mult, "IBVERBS_1.0"));
	CHECK(LOAD(ibv_fork_init, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_is_fork_initialized, "IBVERBS_1.13"));
	CHECK(LOAD(ibv_query_gid_type, "IBVERBS_PRIVATE_34"));
	CHECK(LOAD(verbs_register_driver_34, "IBVERBS_PRIVATE_34"));
	CHECK(LOAD(ibv_cmd_create_qp, "IBVERBS_PRIVATE_34"));
	CHECK(LOAD(_verbs_init_and_alloc_context, "IBVERBS_PRIVATE_34"));
	CHECK(LOAD(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1"));
	/* Internal names stay hidden; a wrong version does not resolve. */
	CHECK(dlsym(lib, "vrdma_verbs_provider") == NULL);
	CHECK(dlsym(lib, "vrdma_prov_fake_ops") == NULL);
	CHECK(dlvsym(lib, "ibv_get_device_list", "IBVERBS_1.5") == NULL);
}

/* Whether every entry point was found (the tests below need them). */
static bool lib_ready(void)
{
	void **p = (void **)&V;
	size_t i;

	if (!lib)
		return false;
	for (i = 0; i < sizeof(V) / sizeof(void *); i++)
		if (!p[i])
			return false;
	return true;
}

/* Opens fake device vrdma<index> of VRDMA_FAKE_DEVICE=2. */
static struct ibv_context *open_fake(int index)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = -1;

	setenv("VRDMA_FAKE_DEVICE", "2", 1);
	list = V.ibv_get_device_list(&n);
	if (list && index < n)
		ctx = V.ibv_open_device(list[index]);
	V.ibv_free_device_list(list);
	return ctx;
}

static void test_device_list(void)
{
	struct ibv_device **list;
	uint64_t guid = 0x007672fffe640002ull;
	int n = -1;

	if (!lib_ready())
		SKIP("library not loaded");
	setenv("VRDMA_FAKE_DEVICE", "2", 1);
	list = V.ibv_get_device_list(&n);
	REQUIRE(list);
	CHECK_EQ(n, 2);
	CHECK(list[2] == NULL);
	CHECK(!strcmp(V.ibv_get_device_name(list[0]), "vrdma0"));
	CHECK(!strcmp(V.ibv_get_device_name(list[1]), "vrdma1"));
	CHECK_EQ(V.ibv_get_device_guid(list[1]), htobe64(guid));
	CHECK_EQ(V.ibv_get_device_index(list[0]), 0);
	CHECK_EQ(V.ibv_get_device_index(list[1]), 1);
	CHECK_EQ(list[0]->node_type, IBV_NODE_CA);
	CHECK_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
	V.ibv_free_device_list(list);

	/* A second discovery gives the same device objects. */
	list = V.ibv_get_device_list(NULL);
	REQUIRE(list);
	{
		struct ibv_device *d0 = list[0];

		V.ibv_free_device_list(list);
		list = V.ibv_get_device_list(NULL);
		REQUIRE(list);
		CHECK(list[0] == d0);
	}
	V.ibv_free_device_list(list);
}

static void test_query(void)
{
	static const uint8_t gid0[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					  0x00, 0x76, 0x72, 0xff, 0xfe, 0x64, 0x00, 0x01 };
	static const uint8_t gid1[16] = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 1 };
	struct ibv_context *ctx;
	struct verbs_context *vctx;
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dax;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge[4];
	union ibv_gid gid;
	unsigned char raw[64];
	__be16 pkey;
	int type;

	if (!lib_ready())
		SKIP("library not loaded");
	ctx = open_fake(0);
	REQUIRE(ctx);

	/* The context is extended and its inline operations are set. */
	CHECK(ctx->abi_compat == (void *)UINTPTR_MAX);
	vctx = verbs_get_ctx(ctx);
	REQUIRE(vctx);
	CHECK_EQ(vctx->sz, sizeof(struct verbs_context));
	CHECK(ctx->ops.poll_cq && ctx->ops.req_notify_cq && ctx->ops.post_send &&
	      ctx->ops.post_recv && ctx->ops.post_srq_recv);
	CHECK(vctx->query_port && vctx->query_device_ex);
	CHECK(vctx->create_cq_ex == NULL && vctx->create_qp_ex == NULL);
	CHECK_EQ(ctx->num_comp_vectors, 1);
	CHECK(ctx->async_fd >= 0);

	CHECK_EQ(V.ibv_query_device(ctx, &da), 0);
	CHECK_EQ(da.vendor_id, 0x1af4);
	CHECK_EQ(da.vendor_part_id, 0x1041);
	CHECK_EQ(da.node_guid, htobe64(0x007672fffe640001ull));
	CHECK_EQ(da.sys_image_guid, da.node_guid);
	CHECK_EQ(da.phys_port_cnt, 1);
	CHECK_EQ(da.max_qp, 1022);
	CHECK_EQ(da.max_cq, 1024);
	CHECK_EQ(da.max_pkeys, 1);
	CHECK_EQ(da.atomic_cap, IBV_ATOMIC_NONE);
	CHECK(da.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	CHECK(!strcmp(da.fw_ver, "vrdma-0.1"));

	memset(&dax, 0xaa, sizeof(dax));
	CHECK_EQ(vctx->query_device_ex(ctx, NULL, &dax, sizeof(dax)), 0);
	CHECK_MEM(&dax.orig_attr, &da, sizeof(da));
	CHECK_EQ(dax.phys_port_cnt_ex, 1);
	CHECK_EQ(dax.odp_caps.general_caps, 0);

	CHECK_EQ(vctx->query_port(ctx, 1, &pa, sizeof(pa)), 0);
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.max_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.active_mtu, IBV_MTU_1024); /* netdev MTU 1500 */
	CHECK_EQ(pa.gid_tbl_len, 16);
	CHECK_EQ(pa.pkey_tbl_len, 1);
	CHECK_EQ(pa.phys_state, 5);
	CHECK(pa.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
	CHECK(vctx->query_port(ctx, 2, &pa, sizeof(pa)) != 0);

	/* The exported query writes the old, 48-byte structure only. */
	memset(raw, 0xaa, sizeof(raw));
	CHECK_EQ((V.ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)raw), 0);
	CHECK_EQ(raw[48], 0xaa);
	CHECK_EQ(((struct ibv_port_attr *)raw)->state, IBV_PORT_ACTIVE);

	CHECK_EQ(V.ibv_query_gid(ctx, 1, 0, &gid), 0);
	CHECK_MEM(gid.raw, gid0, 16);
	CHECK_EQ(V.ibv_query_gid(ctx, 1, 1, &gid), 0);
	CHECK_MEM(gid.raw, gid1, 16);
	memset(&gid, 0xaa, sizeof(gid));
	CHECK_EQ(V.ibv_query_gid(ctx, 1, 5, &gid), 0); /* empty: zeros */
	CHECK_EQ(gid.global.subnet_prefix | gid.global.interface_id, 0);
	CHECK_EQ(V.ibv_query_gid(ctx, 1, 16, &gid), -1);
	CHECK_EQ(V.ibv_query_gid(ctx, 2, 0, &gid), -1);

	CHECK_EQ(V._ibv_query_gid_ex(ctx, 1, 1, &ge[0], 0, sizeof(ge[0])), 0);
	CHECK_EQ(ge[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	CHECK_EQ(ge[0].gid_index, 1);
	CHECK_EQ(ge[0].port_num, 1);
	CHECK_EQ(V._ibv_query_gid_ex(ctx, 1, 3, &ge[0], 0, sizeof(ge[0])), ENODATA);
	CHECK_EQ(V._ibv_query_gid_ex(ctx, 1, 99, &ge[0], 0, sizeof(ge[0])), EINVAL);
	CHECK_EQ(V._ibv_query_gid_table(ctx, ge, 4, 0, sizeof(ge[0])), 2);
	CHECK_MEM(ge[1].gid.raw, gid1, 16);
	CHECK_EQ(V._ibv_query_gid_table(ctx, ge, 1, 0, sizeof(ge[0])), -EINVAL);

	CHECK_EQ(V.ibv_query_gid_type(ctx, 1, 0, &type), 0);
	CHECK_EQ(type, 1); /* IBV_GID_TYPE_SYSFS_ROCE_V2 */
	CHECK_EQ(V.ibv_query_gid_type(ctx, 1, 7, &type), 0);
	CHECK_EQ(type, 0); /* empty */

	CHECK_EQ(V.ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	CHECK_EQ(pkey, htobe16(0xffff));
	CHECK_EQ(V.ibv_query_pkey(ctx, 1, 1, &pkey), -1);
	CHECK_EQ(V.ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	CHECK(V.ibv_get_pkey_index(ctx, 1, htobe16(0x8001)) < 0);

	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_pd_mr(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char *buf;

	if (!lib_ready())
		SKIP("library not loaded");
	ctx = open_fake(1);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	CHECK(pd->context == ctx);
	buf = aligned_alloc(4096, 8192);
	REQUIRE(buf);
	mr = (V.ibv_reg_mr)(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr);
	CHECK(mr->addr == buf);
	CHECK_EQ(mr->length, 8192);
	CHECK(mr->pd == pd && mr->context == ctx);
	CHECK(mr->lkey != 0 && mr->rkey != 0);
	CHECK_EQ(V.ibv_dereg_mr(mr), 0);

	/* Relaxed ordering is an optional hint: accepted. */
	mr = V.ibv_reg_mr_iova2(pd, buf, 4096, 0x1000,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(mr != NULL);
	if (mr)
		CHECK_EQ(V.ibv_dereg_mr(mr), 0);
	errno = 0;
	CHECK((V.ibv_reg_mr)(pd, buf, 4096, IBV_ACCESS_ON_DEMAND) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK((V.ibv_reg_mr)(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK((V.ibv_reg_mr)(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);

	CHECK_EQ(V.ibv_fork_init(), 0);
	CHECK_EQ(V.ibv_is_fork_initialized(), IBV_FORK_ENABLED);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
	free(buf);
}

/* Whether fd is readable now (no waiting). */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Moves an RC/UC QP to RTS with a link-local peer; 0 or an errno. */
static int qp_to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ret = V.ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid.raw[0] = 0xfe;
	a.ah_attr.grh.dgid.raw[1] = 0x80;
	a.ah_attr.grh.dgid.raw[8] = 0x50;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 0xfe;
	a.ah_attr.grh.dgid.raw[15] = 0x09;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	ret = V.ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x654321;
	a.max_rd_atomic = 1;
	return V.ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					       IBV_QP_MAX_QP_RD_ATOMIC);
}

static void test_cq_qp(void)
{
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_send_wr wr[40], *bad;
	struct ibv_recv_wr rwr[5], *rbad;
	struct ibv_sge sge[2];
	struct ibv_wc wc[64];
	void *ev_ctx;
	char buf[64];
	int i, n, got;

	if (!lib_ready())
		SKIP("library not loaded");
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	ch = V.ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	CHECK(ch->fd >= 0 && ch->context == ctx);
	CHECK(!readable(ch->fd));
	cq = V.ibv_create_cq(ctx, 64, (void *)0x1234, ch, 0);
	REQUIRE(cq);
	CHECK(cq->cqe >= 64 && cq->channel == ch && cq->cq_context == (void *)0x1234);
	CHECK(V.ibv_create_cq(ctx, 64, NULL, ch, 1) == NULL); /* one vector */
	CHECK_EQ(V.ibv_destroy_comp_channel(ch), EBUSY);

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 1;
	qp = V.ibv_create_qp(pd, &ia);
	REQUIRE(qp);
	CHECK(qp->qp_num != 0 && qp->state == IBV_QPS_RESET);
	CHECK(qp->pd == pd && qp->send_cq == cq && qp->context == ctx);
	CHECK(ia.cap.max_send_wr >= 64 && ia.cap.max_recv_wr >= 4);
	CHECK(V.ibv_qp_to_qp_ex(qp) == NULL);

	/* A bad port is refused before the device sees it. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 2;
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_ALT_PATH), EOPNOTSUPP);
	CHECK_EQ(qp->state, IBV_QPS_RESET);

	CHECK_EQ(qp_to_rts(qp, 0x77), 0);
	CHECK_EQ(qp->state, IBV_QPS_RTS);
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(V.ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_CAP, &qia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qa.path_mtu, IBV_MTU_1024);
	CHECK_EQ(qa.dest_qp_num, 0x77);
	CHECK_EQ(qa.rq_psn, 0x123456);
	CHECK_EQ(qa.sq_psn, 0x654321);
	CHECK_EQ(qa.timeout, 14);
	CHECK_EQ(qa.min_rnr_timer, 12);
	CHECK_EQ(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK_EQ(qa.ah_attr.is_global, 1);
	CHECK_EQ(qa.ah_attr.grh.dgid.raw[15], 0x09);
	CHECK_EQ(qa.port_num, 1);
	CHECK_EQ(qia.qp_type, IBV_QPT_RC);
	CHECK(qia.send_cq == cq);

	/* Signalled send: one completion, one event on the channel. */
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	sge[0].addr = (uintptr_t)buf;
	sge[0].length = 10;
	sge[0].lkey = 1;
	sge[1].addr = (uintptr_t)buf + 10;
	sge[1].length = 20;
	sge[1].lkey = 1;
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 42;
	wr[0].sg_list = sge;
	wr[0].num_sge = 2;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	CHECK_EQ(ibv_post_send(qp, &wr[0], &bad), 0);
	CHECK(readable(ch->fd));
	ev_cq = NULL;
	ev_ctx = NULL;
	CHECK_EQ(V.ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == cq && ev_ctx == (void *)0x1234);
	V.ibv_ack_cq_events(cq, 1);
	CHECK(!readable(ch->fd));
	n = ibv_poll_cq(cq, 8, wc);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 42);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].byte_len, 30);
	CHECK_EQ(wc[0].qp_num, qp->qp_num);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 0);

	/* Not armed: no event; non-blocking channel says EAGAIN. */
	wr[0].wr_id = 43;
	CHECK_EQ(ibv_post_send(qp, &wr[0], &bad), 0);
	CHECK(!readable(ch->fd));
	CHECK_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	CHECK_EQ(V.ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 1);

	/* A chain longer than one batch, unsignalled ones in it, and a bad
	 * opcode at 30: the 30 before it are posted, bad_wr points at it. */
	for (i = 0; i < 40; i++) {
		wr[i].wr_id = 100 + (uint64_t)i;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].opcode = i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
		wr[i].wr.rdma.remote_addr = 0x1000;
		wr[i].wr.rdma.rkey = 5;
		wr[i].send_flags = i == 7 ? 0 : IBV_SEND_SIGNALED;
		wr[i].next = i < 39 ? &wr[i + 1] : NULL;
	}
	wr[30].opcode = IBV_WR_BIND_MW;
	bad = NULL;
	CHECK_EQ(ibv_post_send(qp, &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[30]);
	got = 0;
	while ((n = ibv_poll_cq(cq, 7, wc + got)) > 0)
		got += n;
	CHECK_EQ(got, 29);
	for (i = 0, n = 0; i < got; i++, n++) {
		if (n == 7)
			n++; /* the unsignalled one */
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)n);
		CHECK_EQ(wc[i].opcode, n % 2 ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
		CHECK_EQ(wc[i].byte_len, 10);
	}

	/* Receive queue of 4: the fifth WR is refused. */
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 5; i++) {
		rwr[i].wr_id = (uint64_t)i;
		rwr[i].sg_list = sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 4 ? &rwr[i + 1] : NULL;
	}
	rbad = NULL;
	CHECK_EQ(ibv_post_recv(qp, &rwr[0], &rbad), ENOMEM);
	CHECK(rbad == &rwr[4]);

	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_destroy_comp_channel(ch), 0);

	/* No SRQ on this device. */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };

		errno = 0;
		CHECK(V.ibv_create_srq(pd, &sa) == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
	}
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

/* The 40-byte GRH area of a RoCE v2 over IPv4 receive. */
static void grh_ipv4(struct ibv_grh *grh, const uint8_t src[4], const uint8_t dst[4])
{
	uint8_t *h = (uint8_t *)grh + 20;
	uint32_t sum = 0;
	int i;

	memset(grh, 0, sizeof(*grh));
	h[0] = 0x45;
	h[3] = 60; /* total length, any */
	h[8] = 64; /* TTL */
	h[9] = 17; /* UDP */
	memcpy(h + 12, src, 4);
	memcpy(h + 16, dst, 4);
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	h[10] = (uint8_t)(~sum >> 8);
	h[11] = (uint8_t)~sum;
}

static void test_ah(void)
{
	static const uint8_t peer4[4] = { 192, 0, 2, 9 }, me4[4] = { 192, 0, 2, 1 };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa;
	struct ibv_grh grh;
	struct ibv_wc wc;
	uint8_t mac[6];
	uint16_t vid = 0;

	if (!lib_ready())
		SKIP("library not loaded");
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);

	memset(&aa, 0, sizeof(aa));
	aa.port_num = 1;
	errno = 0;
	CHECK(V.ibv_create_ah(pd, &aa) == NULL); /* RoCE needs a GRH */
	CHECK_EQ(errno, EINVAL);
	aa.is_global = 1;
	aa.grh.dgid.raw[0] = 0xfe;
	aa.grh.dgid.raw[1] = 0x80;
	aa.grh.dgid.raw[8] = 0x02 ^ 0x52;
	aa.grh.dgid.raw[9] = 0x54;
	aa.grh.dgid.raw[10] = 0x00;
	aa.grh.dgid.raw[11] = 0xff;
	aa.grh.dgid.raw[12] = 0xfe;
	aa.grh.dgid.raw[13] = 0x12;
	aa.grh.dgid.raw[14] = 0x34;
	aa.grh.dgid.raw[15] = 0x56;
	ah = V.ibv_create_ah(pd, &aa);
	REQUIRE(ah);
	CHECK(ah->pd == pd && ah->context == ctx);
	CHECK_EQ(V.ibv_destroy_ah(ah), 0);

	/* MAC of a link-local EUI-64 GID and of a multicast GID. */
	CHECK_EQ(V.ibv_resolve_eth_l2_from_gid(ctx, &aa, mac, &vid), 0);
	CHECK_MEM(mac, ((const uint8_t[]){ 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 }), 6);
	CHECK_EQ(vid, 0xffff);
	memset(aa.grh.dgid.raw, 0, 16);
	aa.grh.dgid.raw[0] = 0xff;
	aa.grh.dgid.raw[1] = 0x02;
	aa.grh.dgid.raw[15] = 0x01;
	CHECK_EQ(V.ibv_resolve_eth_l2_from_gid(ctx, &aa, mac, NULL), 0);
	CHECK_MEM(mac, ((const uint8_t[]){ 0x33, 0x33, 0, 0, 0, 1 }), 6);

	/* AH answering a RoCE v2 / IPv4 message to our GID 1. */
	memset(&wc, 0, sizeof(wc));
	wc.wc_flags = IBV_WC_GRH;
	grh_ipv4(&grh, peer4, me4);
	CHECK_EQ(V.ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &aa), 0);
	CHECK_EQ(aa.is_global, 1);
	CHECK_EQ(aa.grh.sgid_index, 1);
	CHECK_EQ(aa.grh.hop_limit, 64);
	CHECK_MEM(aa.grh.dgid.raw,
		  ((const uint8_t[]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 9 }),
		  16);

	/* ... and RoCE v2 / IPv6 to our link-local GID 0. */
	memset(&grh, 0, sizeof(grh));
	grh.version_tclass_flow = htobe32(6u << 28 | 0x12u << 20 | 0xabcde);
	grh.next_hdr = 17;
	grh.hop_limit = 9;
	grh.sgid.raw[0] = 0xfe;
	grh.sgid.raw[1] = 0x80;
	grh.sgid.raw[15] = 0x77;
	CHECK_EQ(V.ibv_query_gid(ctx, 1, 0, &grh.dgid), 0);
	CHECK_EQ(V.ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &aa), 0);
	CHECK_EQ(aa.grh.sgid_index, 0);
	CHECK_EQ(aa.grh.flow_label, 0xabcde);
	CHECK_EQ(aa.grh.traffic_class, 0x12);
	CHECK_EQ(aa.grh.hop_limit, 9);
	CHECK_EQ(aa.grh.dgid.raw[15], 0x77);

	/* A destination that is not ours. */
	grh.dgid.raw[15] ^= 1;
	errno = 0;
	CHECK_EQ(V.ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &aa), -1);
	CHECK_EQ(errno, ENOENT);

	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_async_and_private(void)
{
	struct ibv_context *ctx;
	struct ibv_async_event ev;

	if (!lib_ready())
		SKIP("library not loaded");
	ctx = open_fake(0);
	REQUIRE(ctx);
	CHECK(!readable(ctx->async_fd));
	CHECK_EQ(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK),
		 0);
	errno = 0;
	CHECK_EQ(V.ibv_get_async_event(ctx, &ev), -1);
	CHECK_EQ(errno, EAGAIN);

	/* Vendor provider entry points: accepted or cleanly refused. */
	V.verbs_register_driver_34(NULL);
	CHECK_EQ(V.ibv_cmd_create_qp(), EOPNOTSUPP);
	errno = 0;
	CHECK(V._verbs_init_and_alloc_context(ctx->device, -1, 1024, NULL, 0) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_strings(void)
{
	if (!lib_ready())
		SKIP("library not loaded");
	CHECK(!strcmp(V.ibv_wc_status_str(IBV_WC_SUCCESS), "success"));
	CHECK(!strcmp(V.ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR),
		      "Work Request Flushed Error"));
	CHECK(!strcmp(V.ibv_wc_status_str((enum ibv_wc_status)1000), "unknown"));
	CHECK(!strcmp(V.ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE"));
	CHECK(!strcmp(V.ibv_port_state_str((enum ibv_port_state)77), "unknown"));
	CHECK(strlen(V.ibv_node_type_str(IBV_NODE_CA)) > 0);
	CHECK(strlen(V.ibv_event_type_str(IBV_EVENT_PORT_ACTIVE)) > 0);
	CHECK_EQ(V.ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	CHECK_EQ(V.ibv_rate_to_mbps(IBV_RATE_MAX), -1);
	CHECK_EQ(V.mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	CHECK_EQ(V.mult_to_ibv_rate(3), IBV_RATE_MAX);
	CHECK_EQ(V.ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
	CHECK_EQ(V.ibv_rate_to_mult(IBV_RATE_14_GBPS), -1);
}

/* ------------------------------------------------------------------------ */
/* Socket rules (vrdma_socket.h)                                             */
/* ------------------------------------------------------------------------ */

/* Binds a unix socket at path; returns its fd or -1. */
static int make_socket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void test_socket_rules(void)
{
	char dir[] = "/tmp/vrdma-test-sock.XXXXXX";
	char p1[300], p2[300], p3[300], buf[256];
	char paths[4][256];
	int fd1, fd2;

	REQUIRE(mkdtemp(dir));
	snprintf(p1, sizeof(p1), "%s/b.sock", dir);
	snprintf(p2, sizeof(p2), "%s/a.sock", dir);
	snprintf(p3, sizeof(p3), "%s/0.sock", dir);
	fd1 = make_socket(p1);
	fd2 = make_socket(p2);
	REQUIRE(fd1 >= 0 && fd2 >= 0);
	/* A regular file named *.sock is not a socket. */
	close(open(p3, O_CREAT | O_WRONLY, 0600));

	unsetenv("VRDMA_SOCKET");
	setenv("VRDMA_SOCKET_DIR", dir, 1);
	CHECK_EQ(vrdma_socket_default(buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, p2)); /* sorted: a.sock first */
	CHECK_EQ(vrdma_socket_list(paths, 4), 1);
	CHECK(!strcmp(paths[0], p2));

	unlink(p2);
	CHECK_EQ(vrdma_socket_default(buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, p1));
	unlink(p1);
	CHECK_EQ(vrdma_socket_default(buf, sizeof(buf)), 0);
	CHECK(!strcmp(buf, "/tmp/vrdma0.sock"));

	setenv("VRDMA_SOCKET", "/x/one.sock::/y/two.sock:", 1);
	CHECK_EQ(vrdma_socket_list(paths, 4), 2);
	CHECK(!strcmp(paths[0], "/x/one.sock"));
	CHECK(!strcmp(paths[1], "/y/two.sock"));
	CHECK_EQ(vrdma_socket_list(paths, 1), 1);
	CHECK(!vrdma_socket_exists("/x/one.sock"));

	unsetenv("VRDMA_SOCKET");
	unsetenv("VRDMA_SOCKET_DIR");
	close(fd1);
	close(fd2);
	unlink(p3);
	rmdir(dir);
}

int main(void)
{
	TEST_PROGRAM("test_verbs_abi");
	RUN(test_layout);
	RUN(test_symbols);
	RUN(test_device_list);
	RUN(test_query);
	RUN(test_pd_mr);
	RUN(test_cq_qp);
	RUN(test_ah);
	RUN(test_async_and_private);
	RUN(test_strings);
	RUN(test_socket_rules);
	return TEST_DONE();
}
