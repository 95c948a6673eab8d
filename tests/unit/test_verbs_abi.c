/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma's libibverbs.so.1 against the installed <infiniband/verbs.h>:
 * - the structure layouts unmodified binaries rely on (sizes and offsets of
 *   rdma-core 44 on x86-64, as Debian 12 ships it);
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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
	F(ibv_modify_srq);
	F(ibv_query_srq);
	F(ibv_destroy_srq);
	F(ibv_resize_cq);
	F(ibv_ack_async_event);
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
static char lib_error[PATH_MAX + 512];

/* Loads lib/libibverbs.so.1 next to this program, the test build of the
 * library with the fake device (once). Returns false (and sets lib_error,
 * with dlerror()'s text) when it cannot be loaded. */
static bool load_lib(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (lib)
		return true;
	if (lib_error[0])
		return false;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(lib_error, sizeof(lib_error), "readlink /proc/self/exe failed");
		return false;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/lib/libibverbs.so.1", exe);
	/* Not closed: the library keeps its device table until exit. */
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *err = dlerror();

		snprintf(lib_error, sizeof(lib_error), "dlopen: %s",
			 err ? err : path);
		return false;
	}
	return true;
}

#define LOAD(name, ver) (*(void **)&V.name = dlvsym(lib, #name, ver))

static void test_symbols(void)
{
	if (!load_lib()) {
		th_failed_checks++;
		fprintf(stdout, "#   %s\n", lib_error);
		return;
	}
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
	CHECK(LOAD(ibv_modify_srq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_query_srq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_destroy_srq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_resize_cq, "IBVERBS_1.1"));
	CHECK(LOAD(ibv_ack_async_event, "IBVERBS_1.1"));
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
	CHECK(dlsym(lib, "vibv_provider") == NULL);
	CHECK(dlsym(lib, "vrdma_prov_fake_ops") == NULL);
	CHECK(dlvsym(lib, "ibv_get_device_list", "IBVERBS_1.5") == NULL);
}

/* Fails the current test, with the reason, when the library or one of its
 * symbols is missing: a library that does not load is a failure, not a skip. */
#define REQUIRE_LIB()                                                          \
	do {                                                                   \
		if (!lib_ready()) {                                            \
			th_failed_checks++;                                    \
			fprintf(stdout, "#   %s:%d: library not usable: %s\n", \
				__FILE__, __LINE__,                            \
				lib_error[0] ? lib_error :                     \
				"a symbol is missing (see test_symbols)");     \
			return;                                                \
		}                                                              \
	} while (0)

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

	REQUIRE_LIB();
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

	REQUIRE_LIB();
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
	/* Extended CQs, QPs and the rest (tests/verbs/api_*.c use them). */
	CHECK(vctx->create_cq_ex && vctx->create_qp_ex && vctx->query_rt_values &&
	      vctx->alloc_td && vctx->dealloc_td && vctx->alloc_parent_domain &&
	      vctx->advise_mr);
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
	CHECK_EQ(da.atomic_cap, IBV_ATOMIC_HCA);
	CHECK(da.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	/* The extensions the fake reports (spec.md "Mapping for the verbs
	 * layer"). */
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CHECK(da.device_cap_flags & IBV_DEVICE_RESIZE_MAX_WR);
	CHECK(da.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT);
	CHECK(!(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE));
	CHECK_EQ(da.max_srq, 64);
	CHECK_EQ(da.max_srq_wr, 4096);
	CHECK_EQ(da.max_srq_sge, 8);
	CHECK_EQ(da.max_mw, 1024);
	CHECK(ctx->ops.alloc_mw && ctx->ops.bind_mw && ctx->ops.dealloc_mw);
	CHECK(vctx->create_srq_ex != NULL);
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

	REQUIRE_LIB();
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
	CHECK_EQ(V.ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
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

	REQUIRE_LIB();
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

	/* A CQ that a QP uses is refused at once (EBUSY), even with an event
	 * not acknowledged yet (rdma-core: the kernel refuses before the
	 * library waits); the channel it is on stays busy too. */
	CHECK_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	wr[0].wr_id = 44;
	wr[0].next = NULL;
	CHECK_EQ(ibv_post_send(qp, &wr[0], &bad), 0);
	CHECK_EQ(V.ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == cq);
	CHECK_EQ(V.ibv_destroy_cq(cq), EBUSY);
	CHECK_EQ(V.ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 44);
	V.ibv_ack_cq_events(cq, 1);

	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_destroy_comp_channel(ch), 0);

	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

/* ------------------------------------------------------------------------ */
/* Extensions (issue 6) through the fake device's loopback                   */
/* ------------------------------------------------------------------------ */

/* A QP of type t on cq (and srq, may be NULL). */
static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq,
			      enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = srq ? 0 : 4;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = srq ? 0 : 2;
	return V.ibv_create_qp(pd, &ia);
}

/* Moves qp to RTS with REMOTE_ATOMIC too (the loopback does not look). */
static int qp_up(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a;
	int ret = qp_to_rts(qp, dest_qpn);

	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	return V.ibv_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS);
}

/* Polls exactly one completion. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct ibv_wc extra;

	return ibv_poll_cq(cq, 1, wc) == 1 && ibv_poll_cq(cq, 1, &extra) == 0;
}

/* The RFC-only device (VRDMA_FAKE_NO_EXT): every extension refused up front. */
/* A signal while ibv_get_cq_event waits: rdma-core's read() of the event fd
 * ends with EINTR for a handler without SA_RESTART (qperf's SIGALRM ends
 * its test that way) and is restarted by the kernel for one with it. */
static atomic_int sig_seen;
static atomic_bool waiter_done;
static pid_t waiter_tid;

static void on_sig(int sig)
{
	(void)sig;
	atomic_fetch_add(&sig_seen, 1);
}

static void set_handler(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Whether thread tid sleeps (state S in /proc): it waits in the kernel. */
static bool thread_sleeps(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

struct restart_arg {
	pthread_t waiter;
	struct ibv_qp *qp;
	struct ibv_send_wr *wr;
};

/* Signals the waiter until it returns; a waiter that goes on waiting
 * through 100000 signals is released by a completion (the check fails
 * then, instead of the test hanging). */
static void *interrupter(void *arg)
{
	struct restart_arg *a = arg;
	struct ibv_send_wr *bad;
	int sent = 0;

	while (!atomic_load(&waiter_done)) {
		if (++sent == 100000)
			ibv_post_send(a->qp, a->wr, &bad);
		pthread_kill(a->waiter, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

/* Until the waiter sleeps in the kernel; false if its wait ended first. */
static bool waiter_asleep(void)
{
	while (!thread_sleeps(waiter_tid))
		if (atomic_load(&waiter_done))
			return false;
		else
			sched_yield();
	return true;
}

/* Signals the sleeping waiter once, waits until it sleeps again (the wait
 * went on), then makes the completion it waits for. A wait that ended
 * early (a failure the checks report) leaves nothing to do. */
static void *restart_then_complete(void *arg)
{
	struct restart_arg *a = arg;
	struct ibv_send_wr *bad;

	if (!waiter_asleep())
		return NULL;
	pthread_kill(a->waiter, SIGUSR1);
	while (atomic_load(&sig_seen) == 0)
		sched_yield();
	if (waiter_asleep())
		ibv_post_send(a->qp, a->wr, &bad);
	return NULL;
}

static void test_cq_event_signals(void)
{
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *ev_cq = NULL;
	struct ibv_qp *qp;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct sigaction old;
	struct restart_arg ra;
	pthread_t self = pthread_self(), t;
	void *ev_ctx;
	char buf[16];
	int rc;

	REQUIRE_LIB();
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	ch = V.ibv_create_comp_channel(ctx);
	REQUIRE(pd && ch);
	cq = V.ibv_create_cq(ctx, 8, NULL, ch, 0);
	REQUIRE(cq);
	qp = make_qp(pd, cq, NULL, IBV_QPT_RC);
	REQUIRE(qp);
	REQUIRE(qp_to_rts(qp, 0x77) == 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	sigaction(SIGUSR1, NULL, &old);
	waiter_tid = (pid_t)syscall(SYS_gettid);

	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(buf);
	sge.lkey = 1;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ra.waiter = self;
	ra.qp = qp;
	ra.wr = &wr;

	/* without SA_RESTART: the wait ends with EINTR, nothing consumed */
	set_handler(0);
	atomic_store(&waiter_done, false);
	REQUIRE(pthread_create(&t, NULL, interrupter, &ra) == 0);
	errno = 0;
	rc = V.ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	atomic_store(&waiter_done, true);
	pthread_join(t, NULL);
	CHECK_EQ(rc, -1);
	CHECK_EQ(errno, EINTR);
	if (rc == 0) { /* the fallback completion ended the wait */
		V.ibv_ack_cq_events(cq, 1);
		ibv_poll_cq(cq, 1, &wc);
		CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	}

	/* with SA_RESTART: the wait goes on until the event comes */
	set_handler(SA_RESTART);
	atomic_store(&sig_seen, 0);
	atomic_store(&waiter_done, false);
	REQUIRE(pthread_create(&t, NULL, restart_then_complete, &ra) == 0);
	rc = V.ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	atomic_store(&waiter_done, true);
	pthread_join(t, NULL);
	CHECK_EQ(rc, 0);
	CHECK(ev_cq == cq);
	CHECK_EQ(atomic_load(&sig_seen), 1);
	if (rc == 0)
		V.ibv_ack_cq_events(cq, 1);
	CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 1);
	CHECK_EQ(wc.wr_id, 7);
	sigaction(SIGUSR1, &old, NULL);

	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_ext_absent(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint64_t res = 0;

	REQUIRE_LIB();
	setenv("VRDMA_FAKE_NO_EXT", "1", 1);
	ctx = open_fake(0);
	unsetenv("VRDMA_FAKE_NO_EXT");
	REQUIRE(ctx);
	CHECK_EQ(V.ibv_query_device(ctx, &da), 0);
	CHECK_EQ(da.atomic_cap, IBV_ATOMIC_NONE);
	CHECK_EQ(da.max_srq, 0);
	CHECK_EQ(da.max_mw, 0);
	CHECK(!(da.device_cap_flags &
		(IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
		 IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_RESIZE_MAX_WR |
		 IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SRQ_RESIZE)));
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	errno = 0;
	CHECK(V.ibv_create_srq(pd, &sa) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(ibv_alloc_mw(pd, IBV_MW_TYPE_1) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	cq = V.ibv_create_cq(ctx, 8, NULL, NULL, 0);
	REQUIRE(cq);
	CHECK_EQ(V.ibv_resize_cq(cq, 4), 0); /* fits already */
	CHECK_EQ(V.ibv_resize_cq(cq, 64), EOPNOTSUPP);
	qp = make_qp(pd, cq, NULL, IBV_QPT_RC);
	REQUIRE(qp);
	CHECK_EQ(qp_to_rts(qp, qp->qp_num), 0);
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = 32;
	qa.cap.max_recv_wr = 4;
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_CAP), EOPNOTSUPP);
	sge.addr = (uintptr_t)&res;
	sge.length = 8;
	sge.lkey = 1;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)&res;
	wr.wr.atomic.rkey = 1;
	bad = NULL;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EOPNOTSUPP);
	CHECK(bad == &wr);
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.num_sge = 0;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EOPNOTSUPP);
	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_srq(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq, *srq2;
	struct ibv_srq_init_attr sa;
	struct ibv_srq_init_attr_ex sx;
	struct ibv_srq_attr attr;
	struct ibv_qp *a, *b, *c, *d;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_recv_wr rwr[4], *rbad;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge rsge[4], ssge;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	char rbuf[4][32], sbuf[32] = "hello, shared queue";
	int i;

	REQUIRE_LIB();
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	cq = V.ibv_create_cq(ctx, 32, NULL, NULL, 0);
	REQUIRE(cq);

	memset(&sa, 0, sizeof(sa));
	sa.srq_context = (void *)0x5151;
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 2;
	sa.attr.srq_limit = 5; /* ignored: created unarmed */
	srq = V.ibv_create_srq(pd, &sa);
	REQUIRE(srq);
	CHECK(srq->context == ctx && srq->pd == pd && srq->srq_context == (void *)0x5151);
	CHECK_EQ(sa.attr.max_wr, 8);
	CHECK_EQ(sa.attr.max_sge, 2);
	CHECK_EQ(sa.attr.srq_limit, 0);
	sa.attr.max_wr = 5000; /* above max_srq_wr */
	errno = 0;
	CHECK(V.ibv_create_srq(pd, &sa) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* ibv_create_srq_ex: basic SRQs (through the context's op when
	 * the mask has more than PD and TYPE); XRC refused. */
	memset(&sx, 0, sizeof(sx));
	sx.attr.max_wr = 2;
	sx.attr.max_sge = 1;
	sx.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	sx.srq_type = IBV_SRQT_BASIC;
	sx.pd = pd;
	sx.cq = cq;
	srq2 = verbs_get_ctx(ctx)->create_srq_ex(ctx, &sx);
	REQUIRE(srq2);
	CHECK_EQ(sx.attr.max_wr, 2);
	CHECK_EQ(V.ibv_destroy_srq(srq2), 0);
	sx.srq_type = IBV_SRQT_XRC;
	errno = 0;
	CHECK(verbs_get_ctx(ctx)->create_srq_ex(ctx, &sx) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* Limits: no resize, the limit arms. */
	memset(&attr, 0, sizeof(attr));
	attr.max_wr = 16;
	CHECK_EQ(V.ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EINVAL);
	CHECK_EQ(V.ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), EINVAL);
	attr.srq_limit = 3;
	CHECK_EQ(V.ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	memset(&attr, 0, sizeof(attr));
	CHECK_EQ(V.ibv_query_srq(srq, &attr), 0);
	CHECK_EQ(attr.max_wr, 8);
	CHECK_EQ(attr.max_sge, 2);
	CHECK_EQ(attr.srq_limit, 3);

	/* Receivers b and c share the SRQ; a sends to b, d to c. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 99; /* ignored with an SRQ */
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 99;
	b = V.ibv_create_qp(pd, &ia);
	REQUIRE(b);
	CHECK(b->srq == srq);
	CHECK_EQ(ia.cap.max_recv_wr, 0);
	CHECK_EQ(ia.cap.max_recv_sge, 0);
	c = make_qp(pd, cq, srq, IBV_QPT_UC);
	a = make_qp(pd, cq, NULL, IBV_QPT_RC);
	d = make_qp(pd, cq, NULL, IBV_QPT_UC);
	REQUIRE(a && c && d);
	CHECK_EQ(qp_up(a, b->qp_num), 0);
	CHECK_EQ(qp_up(b, a->qp_num), 0);
	CHECK_EQ(qp_to_rts(c, d->qp_num), 0);
	CHECK_EQ(qp_to_rts(d, c->qp_num), 0);
	CHECK_EQ(V.ibv_destroy_srq(srq), EBUSY);

	mr = (V.ibv_reg_mr)(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	memset(rbuf, 0, sizeof(rbuf));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < 4; i++) {
		rsge[i].addr = (uintptr_t)rbuf[i];
		rsge[i].length = sizeof(rbuf[i]);
		rsge[i].lkey = mr->lkey;
		rwr[i].wr_id = 500 + (uint64_t)i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < 3 ? &rwr[i + 1] : NULL;
	}
	/* The inline verb goes through ctx->ops.post_srq_recv. */
	rbad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &rwr[0], &rbad), 0);
	rwr[0].next = NULL;
	CHECK_EQ(ibv_post_recv(b, &rwr[0], &rbad), EINVAL); /* has an SRQ */
	CHECK(rbad == &rwr[0]);

	ssge.addr = (uintptr_t)sbuf;
	ssge.length = 20;
	ssge.lkey = mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &ssge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(ibv_post_send(a, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 500);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.qp_num, b->qp_num);
	CHECK_EQ(wc.byte_len, 20);
	CHECK_EQ(wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV), 0);
	CHECK_MEM(rbuf[0], sbuf, 20);

	/* The next request goes to c (the other QP), with immediate data;
	 * the SRQ then holds 2 < 3: SRQ_LIMIT_REACHED, found by number. */
	CHECK(!readable(ctx->async_fd));
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0xfeedbeef);
	CHECK_EQ(ibv_post_send(d, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 501);
	CHECK_EQ(wc.qp_num, c->qp_num);
	CHECK_EQ(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	CHECK_EQ(wc.imm_data, htonl(0xfeedbeef));
	CHECK(readable(ctx->async_fd));
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(V.ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == srq);
	V.ibv_ack_async_event(&ev);
	CHECK(!readable(ctx->async_fd));
	memset(&attr, 0xff, sizeof(attr));
	CHECK_EQ(V.ibv_query_srq(srq, &attr), 0);
	CHECK_EQ(attr.srq_limit, 0); /* disarmed by the event */

	/* SEND with invalidate: the receiver's completion carries the key. */
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x00abcd12;
	CHECK_EQ(ibv_post_send(d, &wr, &bad), EINVAL); /* UC: RC only */
	CHECK_EQ(ibv_post_send(a, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 502);
	CHECK_EQ(wc.qp_num, b->qp_num);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
	CHECK_EQ(wc.invalidated_rkey, 0x00abcd12);

	/* A QP with an SRQ moved to ERR: QP_LAST_WQE_REACHED on it. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK_EQ(V.ibv_modify_qp(c, &qa, IBV_QP_STATE), 0);
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(V.ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	CHECK(ev.element.qp == c);
	V.ibv_ack_async_event(&ev);

	/* An event whose QP is destroyed before it is read is never handed
	 * out (the device drops it; the verbs layer would drop it too). */
	CHECK_EQ(V.ibv_modify_qp(b, &qa, IBV_QP_STATE), 0);
	CHECK(readable(ctx->async_fd));
	CHECK_EQ(V.ibv_destroy_qp(b), 0);
	CHECK_EQ(fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK),
		 0);
	errno = 0;
	CHECK_EQ(V.ibv_get_async_event(ctx, &ev), -1);
	CHECK_EQ(errno, EAGAIN);

	CHECK_EQ(V.ibv_destroy_qp(a), 0);
	CHECK_EQ(V.ibv_destroy_qp(c), 0);
	CHECK_EQ(V.ibv_destroy_qp(d), 0);
	CHECK_EQ(V.ibv_destroy_srq(srq), 0);
	CHECK_EQ(V.ibv_dereg_mr(mr), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_atomic_inv(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *uc;
	struct ibv_mr *tmr, *rmr;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t *target, result = 0;
	static uint64_t area[4] __attribute__((aligned(64)));

	REQUIRE_LIB();
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	cq = V.ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(cq);
	qp = make_qp(pd, cq, NULL, IBV_QPT_RC);
	uc = make_qp(pd, cq, NULL, IBV_QPT_UC);
	REQUIRE(qp && uc);
	CHECK_EQ(qp_up(qp, qp->qp_num), 0); /* loopback to itself */
	CHECK_EQ(qp_to_rts(uc, uc->qp_num), 0);

	target = &area[1];
	*target = 5;
	tmr = (V.ibv_reg_mr)(pd, area, sizeof(area),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	rmr = (V.ibv_reg_mr)(pd, &result, sizeof(result), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(tmr && rmr);

	sge.addr = (uintptr_t)&result;
	sge.length = 8;
	sge.lkey = rmr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = tmr->rkey;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 9;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(result, 5);
	CHECK_EQ(*target, 9);

	/* Compare fails: nothing swapped, the original comes back. */
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 77;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(result, 9);
	CHECK_EQ(*target, 9);

	wr.wr_id = 8;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 3;
	wr.wr.atomic.swap = 0xdead; /* ignored */
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 8);
	CHECK_EQ(wc.opcode, IBV_WC_FETCH_ADD);
	CHECK_EQ(result, 9);
	CHECK_EQ(*target, 12);

	/* A wrong rkey: remote access error. */
	wr.wr.atomic.rkey = tmr->rkey ^ 0x100;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(*target, 12);
	wr.wr.atomic.rkey = tmr->rkey;

	/* Atomics are RC only and never inline. */
	bad = NULL;
	CHECK_EQ(ibv_post_send(uc, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	wr.send_flags |= IBV_SEND_INLINE;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	wr.send_flags = IBV_SEND_SIGNALED;

	/* LOCAL_INV: no SGEs; any QP type but the key is not checked here. */
	wr.wr_id = 9;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x1234;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL); /* num_sge 1 */
	wr.num_sge = 0;
	CHECK_EQ(ibv_post_send(uc, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_LOCAL_INV);

	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_qp(uc), 0);
	CHECK_EQ(V.ibv_dereg_mr(tmr), 0);
	CHECK_EQ(V.ibv_dereg_mr(rmr), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_mw(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *plain, *rmr;
	struct ibv_mw *mw, *mw2;
	struct ibv_mw_bind bind;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t rkey0, rkey1;
	uint64_t result = 0;
	static uint64_t area[8] __attribute__((aligned(64)));

	REQUIRE_LIB();
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	cq = V.ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(cq);
	qp = make_qp(pd, cq, NULL, IBV_QPT_RC);
	REQUIRE(qp);
	CHECK_EQ(qp_up(qp, qp->qp_num), 0);
	mr = (V.ibv_reg_mr)(pd, area, sizeof(area), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	plain = (V.ibv_reg_mr)(pd, &area[4], 8, IBV_ACCESS_LOCAL_WRITE);
	rmr = (V.ibv_reg_mr)(pd, &result, sizeof(result), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr && plain && rmr);

	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	CHECK(mw->pd == pd && mw->context == ctx && mw->type == IBV_MW_TYPE_1);
	rkey0 = mw->rkey;

	/* Signaled bind: the key changes when the completion is polled. */
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = 71;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = mr;
	bind.bind_info.addr = (uintptr_t)area;
	bind.bind_info.length = sizeof(area);
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_bind_mw(qp, mw, &bind), 0);
	CHECK_EQ(mw->rkey, rkey0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 71);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_BIND_MW);
	rkey1 = ibv_inc_rkey(rkey0);
	CHECK_EQ(mw->rkey, rkey1);
	CHECK(rkey1 != rkey0 && (rkey1 & ~0xffu) == (rkey0 & ~0xffu));

	/* An atomic through the window. */
	area[2] = 40;
	sge.addr = (uintptr_t)&result;
	sge.length = 8;
	sge.lkey = rmr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 72;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)&area[2];
	wr.wr.atomic.rkey = mw->rkey;
	wr.wr.atomic.compare_add = 2;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(result, 40);
	CHECK_EQ(area[2], 42);

	/* A bind to an MR without MW_BIND fails: the key stays. */
	bind.wr_id = 73;
	bind.bind_info.mr = plain;
	bind.bind_info.addr = (uintptr_t)&area[4];
	bind.bind_info.length = 8;
	CHECK_EQ(ibv_bind_mw(qp, mw, &bind), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 73);
	CHECK_EQ(wc.status, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(mw->rkey, rkey1);

	/* Window rights beyond remote read/write/atomic: EINVAL. */
	bind.bind_info.mr = mr;
	bind.bind_info.mw_access_flags = IBV_ACCESS_LOCAL_WRITE;
	CHECK_EQ(ibv_bind_mw(qp, mw, &bind), EINVAL);
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;

	/* Unsignaled: no completion, the key is taken at once. */
	bind.send_flags = 0;
	CHECK_EQ(ibv_bind_mw(qp, mw, &bind), 0);
	CHECK_EQ(mw->rkey, ibv_inc_rkey(rkey1));
	CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);

	/* Type 2: IBV_WR_BIND_MW with the application's key. */
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	REQUIRE(mw2);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 74;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)area;
	wr.bind_mw.bind_info.length = 16;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	REQUIRE(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 74);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_BIND_MW);
	/* IBV_WR_BIND_MW is for type 2, ibv_bind_mw for type 1. */
	wr.bind_mw.mw = mw;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	CHECK_EQ(ibv_bind_mw(qp, mw2, &bind), EINVAL);

	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(ibv_dealloc_mw(mw2), 0);
	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_dereg_mr(mr), 0);
	CHECK_EQ(V.ibv_dereg_mr(plain), 0);
	CHECK_EQ(V.ibv_dereg_mr(rmr), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
	CHECK_EQ(V.ibv_dealloc_pd(pd), 0);
	CHECK_EQ(V.ibv_close_device(ctx), 0);
}

static void test_resize(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[8];
	int i;

	REQUIRE_LIB();
	ctx = open_fake(0);
	REQUIRE(ctx);
	pd = V.ibv_alloc_pd(ctx);
	REQUIRE(pd);
	cq = V.ibv_create_cq(ctx, 4, NULL, NULL, 0);
	REQUIRE(cq);
	qp = make_qp(pd, cq, NULL, IBV_QPT_UC);
	REQUIRE(qp);
	CHECK_EQ(qp_to_rts(qp, 0x77), 0);

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < 3; i++) {
		wr.wr_id = 60 + (uint64_t)i;
		CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	}
	/* Three completions held: 2 is too small, 16 keeps them in order. */
	CHECK_EQ(V.ibv_resize_cq(cq, 2), EINVAL);
	CHECK_EQ(V.ibv_resize_cq(cq, 0), EINVAL);
	CHECK_EQ(V.ibv_resize_cq(cq, 16), 0);
	CHECK(cq->cqe >= 16);
	for (i = 3; i < 8; i++) {
		wr.wr_id = 60 + (uint64_t)i;
		CHECK_EQ(ibv_post_send(qp, &wr, &bad), 0);
	}
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 8);
	for (i = 0; i < 8; i++)
		CHECK_EQ(wc[i].wr_id, 60 + (uint64_t)i);

	/* IBV_QP_CAP resizes the work queues; SGE/inline sizes stay. */
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = 128;
	qa.cap.max_recv_wr = 32;
	qa.cap.max_send_sge = 7; /* ignored */
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_CAP), 0);
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(V.ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia), 0);
	CHECK_EQ(qa.cap.max_send_wr, 128);
	CHECK_EQ(qa.cap.max_recv_wr, 32);
	CHECK_EQ(qa.cap.max_send_sge, 2);
	qa.cap.max_send_wr = 0;
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_CAP), EINVAL);
	qa.cap.max_send_wr = 100000;
	CHECK_EQ(V.ibv_modify_qp(qp, &qa, IBV_QP_CAP), EINVAL);

	CHECK_EQ(V.ibv_destroy_qp(qp), 0);
	CHECK_EQ(V.ibv_destroy_cq(cq), 0);
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

	REQUIRE_LIB();
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

	REQUIRE_LIB();
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
	REQUIRE_LIB();
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
	RUN(test_cq_event_signals);
	RUN(test_ext_absent);
	RUN(test_srq);
	RUN(test_atomic_inv);
	RUN(test_mw);
	RUN(test_resize);
	RUN(test_ah);
	RUN(test_async_and_private);
	RUN(test_strings);
	RUN(test_socket_rules);
	return TEST_DONE();
}
