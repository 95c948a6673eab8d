/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices: the device list, opening and closing a device, the device / port
 * / GID / P_Key queries and asynchronous events.
 *
 * Devices come from one provider (verbs/provider.h): libvrdma's, or in the
 * test build of this library the one vibv_prov_test_select() gives (the
 * fake device of tests/fake/). A device is a RoCE v2 port over
 * Ethernet: one port, P_Key table {0xffff}, GID table from the provider
 * (index 0 the link-local GID of the MAC, index 1 the IPv4-mapped address
 * when one is configured), GID type RoCE v2. There is no sysfs and no
 * uverbs character device: ibdev_path names a sysfs directory that does not
 * exist (so sysfs reads fail cleanly), dev_path holds the provider's path
 * (the vhost-user socket) and cmd_fd is -1.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vrdma/virtio_net_roce_cm.h"
#include "verbs/verbs_priv.h"

/* Not in the installed headers (rdma-core's driver.h): the type reported by
 * ibv_query_gid_type(). */
enum vibv_gid_type_sysfs {
	VRDMA_GID_TYPE_SYSFS_IB_ROCE_V1,
	VRDMA_GID_TYPE_SYSFS_ROCE_V2,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum vibv_gid_type_sysfs *type);

/* The provider's events are numbered as libibverbs' (provider.h). */
_Static_assert(VRDMA_PROV_EVENT_CQ_ERR == (int)IBV_EVENT_CQ_ERR, "event");
_Static_assert(VRDMA_PROV_EVENT_DEVICE_FATAL == (int)IBV_EVENT_DEVICE_FATAL, "event");
_Static_assert(VRDMA_PROV_EVENT_SRQ_LIMIT_REACHED == (int)IBV_EVENT_SRQ_LIMIT_REACHED,
	       "event");
_Static_assert(VRDMA_PROV_EVENT_GID_CHANGE == (int)IBV_EVENT_GID_CHANGE, "event");
_Static_assert(VRDMA_PROV_EVENT_WQ_FATAL == (int)IBV_EVENT_WQ_FATAL, "event");
_Static_assert(VRDMA_PROV_GID_TYPE_ROCE_V1 == (int)IBV_GID_TYPE_ROCE_V1, "gid type");
_Static_assert(VRDMA_PROV_GID_TYPE_ROCE_V2 == (int)IBV_GID_TYPE_ROCE_V2, "gid type");

/* ------------------------------------------------------------------------ */
/* Device list                                                               */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t vrdma_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vibv_device *vibv_devs[VRDMA_PROV_MAX_DEVICES];
static int vibv_ndevs;

/* Returns the provider of this process. */
const struct vibv_prov_ops *vibv_provider(void)
{
	/* Only the test build defines the selector (weak reference). */
	const struct vibv_prov_ops *ops = vibv_prov_test_select ? vibv_prov_test_select() : NULL;

	return ops ? ops : &vibv_prov_vrdma_ops;
}

/* The known device for info, or a new one (NULL when the table is full or
 * out of memory). Called with vrdma_dev_lock held. */
static struct vibv_device *vibv_dev_get(const struct vibv_prov_ops *ops,
						const struct vibv_prov_dev_info *info)
{
	struct vibv_device *d;
	int i;

	for (i = 0; i < vibv_ndevs; i++) {
		d = vibv_devs[i];
		if (d->ops == ops && !strcmp(d->info.name, info->name) &&
		    !strcmp(d->info.path, info->path))
			return d;
	}
	if (vibv_ndevs == VRDMA_PROV_MAX_DEVICES)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ops = ops;
	d->info = *info;
	d->info.name[sizeof(d->info.name) - 1] = '\0';
	d->info.path[sizeof(d->info.path) - 1] = '\0';
	d->index = vibv_ndevs;
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", d->info.name);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "%s", d->info.name);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "%s", d->info.path);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
		 "/sys/class/infiniband/%.64s", d->info.name);
	vibv_devs[vibv_ndevs++] = d;
	return d;
}

/* Returns a NULL-terminated array of the devices present now (free it with
 * ibv_free_device_list), or NULL with errno set. */
struct ibv_device **ibv_get_device_list(int *num_devices)
{
	const struct vibv_prov_ops *ops = vibv_provider();
	struct vibv_prov_dev_info *infos;
	struct ibv_device **list;
	int n, i, k = 0;

	infos = calloc(VRDMA_PROV_MAX_DEVICES, sizeof(*infos));
	if (!infos) {
		errno = ENOMEM;
		return NULL;
	}
	n = ops->discover(infos, VRDMA_PROV_MAX_DEVICES);
	if (n < 0) {
		free(infos);
		vibv_errno(n);
		return NULL;
	}
	if (n > VRDMA_PROV_MAX_DEVICES)
		n = VRDMA_PROV_MAX_DEVICES;
	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list) {
		free(infos);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&vrdma_dev_lock);
	for (i = 0; i < n; i++) {
		struct vibv_device *d = vibv_dev_get(ops, &infos[i]);

		if (d)
			list[k++] = &d->ibdev;
	}
	pthread_mutex_unlock(&vrdma_dev_lock);
	free(infos);
	if (num_devices)
		*num_devices = k;
	return list;
}

/* Frees a list of ibv_get_device_list (the devices stay valid). */
void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

/* Returns the device's name ("vrdma0"). */
const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

static bool vibv_mac_zero(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return !memcmp(mac, zero, 6);
}

/* Node GUID (network byte order) of a MAC: its modified EUI-64. */
static __be64 vibv_guid_of_mac(const uint8_t mac[6])
{
	uint8_t eui[8];
	__be64 guid;

	if (vibv_mac_zero(mac))
		return 0;
	vibv_prov_eui64(mac, eui);
	memcpy(&guid, eui, sizeof(guid));
	return guid;
}

/* Returns the node GUID (network byte order), 0 if the MAC is unknown. */
__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct vibv_device *d =
		vibv_container_of(device, struct vibv_device, ibdev);

	return vibv_guid_of_mac(d->info.mac);
}

/* Returns the device's index (order of discovery, from 0). */
int ibv_get_device_index(struct ibv_device *device)
{
	struct vibv_device *d =
		vibv_container_of(device, struct vibv_device, ibdev);

	return d->index;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */
/* ------------------------------------------------------------------------ */

static int vibv_vctx_query_port(struct ibv_context *ibctx, uint8_t port,
				 struct ibv_port_attr *attr, size_t attr_len);
static int vibv_vctx_query_device_ex(struct ibv_context *ibctx,
				      const struct ibv_query_device_ex_input *input,
				      struct ibv_device_attr_ex *attr,
				      size_t attr_size);

/* Returns a context for the device, or NULL with errno set. */
struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct vibv_device *d;
	struct vibv_context *ctx;
	struct ibv_context *ibctx;
	uint8_t mac[6];
	int ret, fd;

	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	d = vibv_container_of(device, struct vibv_device, ibdev);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = d;
	ctx->ops = d->ops;
	ctx->own_async_fd = -1;
	ret = d->ops->open(&d->info, &ctx->prov);
	if (ret) {
		free(ctx);
		vibv_errno(ret);
		return NULL;
	}

	if (VRDMA_PROV_CALL(ctx->ops, query_device, ctx->prov, &ctx->caps, mac))
		memset(&ctx->caps, 0, sizeof(ctx->caps));
	pthread_mutex_init(&ctx->obj_lock, NULL);

	fd = VRDMA_PROV_CALL(ctx->ops, async_fd, ctx->prov);
	if (fd < 0) {
		fd = eventfd(0, EFD_CLOEXEC);
		if (fd < 0) {
			ret = errno;
			ctx->ops->close(ctx->prov);
			pthread_mutex_destroy(&ctx->obj_lock);
			free(ctx);
			errno = ret;
			return NULL;
		}
		ctx->own_async_fd = fd;
	}

	ibctx = &ctx->vctx.context;
	ibctx->device = device;
	ibctx->ops.poll_cq = vibv_poll_cq;
	ibctx->ops.req_notify_cq = vibv_req_notify_cq;
	ibctx->ops.post_send = vibv_post_send;
	ibctx->ops.post_recv = vibv_post_recv;
	ibctx->ops.post_srq_recv = vibv_post_srq_recv;
	/* Memory windows: verbs.h's ibv_alloc_mw fails EOPNOTSUPP when
	 * alloc_mw is NULL, so it is only set when the device has windows. */
	if (vibv_has_cap(ctx, VIRTIO_IB_DEVICE_MEM_WINDOW)) {
		ibctx->ops.alloc_mw = vibv_alloc_mw;
		ibctx->ops.bind_mw = vibv_bind_mw;
		ibctx->ops.dealloc_mw = vibv_dealloc_mw;
	}
	ibctx->cmd_fd = -1;
	ibctx->async_fd = fd;
	ibctx->num_comp_vectors = VRDMA_VERBS_COMP_VECTORS;
	pthread_mutex_init(&ibctx->mutex, NULL);

	/* Extended context: verbs.h's inline helpers use the operations set
	 * here and treat every NULL one as unsupported. */
	ibctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = vibv_vctx_query_port;
	ctx->vctx.query_device_ex = vibv_vctx_query_device_ex;
	ctx->vctx.create_srq_ex = vibv_create_srq_ex;
	ctx->vctx.create_cq_ex = vibv_create_cq_ex;
	ctx->vctx.query_rt_values = vibv_query_rt_values;
	ctx->vctx.create_qp_ex = vibv_create_qp_ex;
	ctx->vctx.alloc_td = vibv_alloc_td;
	ctx->vctx.dealloc_td = vibv_dealloc_td;
	ctx->vctx.alloc_parent_domain = vibv_alloc_parent_domain;
	ctx->vctx.advise_mr = vibv_advise_mr;
	return ibctx;
}

/* Closes a context (its objects must be destroyed). Returns 0. */
int ibv_close_device(struct ibv_context *ibctx)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);

	ctx->ops->close(ctx->prov);
	if (ctx->own_async_fd >= 0)
		close(ctx->own_async_fd);
	vibv_binds_forget(ctx, 0, false, NULL);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ibctx->mutex);
	free(ctx);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

static int vibv_clamp_int(uint64_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

/* Device attributes in libibverbs terms: 0 or a positive errno. */
static int vibv_fill_device_attr(struct vibv_context *ctx,
				  struct ibv_device_attr *attr)
{
	struct vrdma_device_attr pa;
	uint8_t pmac[6] = { 0 };
	const uint8_t *mac;
	uint32_t max_qp;
	int ret;

	memset(&pa, 0, sizeof(pa));
	ret = VRDMA_PROV_CALL(ctx->ops, query_device, ctx->prov, &pa, pmac);
	if (ret)
		return -ret;

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", VRDMA_VERBS_FW_VER);
	mac = vibv_mac_zero(pmac) ? ctx->dev->info.mac : pmac;
	attr->node_guid = vibv_guid_of_mac(mac);
	attr->sys_image_guid = attr->node_guid;
	attr->max_mr_size = pa.max_mr_size;
	attr->page_size_cap = pa.page_size_cap;
	attr->vendor_id = VRDMA_VERBS_VENDOR_ID;
	attr->vendor_part_id = VRDMA_VERBS_VENDOR_PART_ID;
	attr->hw_ver = pa.hw_ver;
	/* QP index 0 is reserved and index 1 is the GSI QP (spec.md). */
	max_qp = pa.max_rdma_qps > 2 ? pa.max_rdma_qps - 2 : 0;
	attr->max_qp = vibv_clamp_int(max_qp);
	attr->max_qp_wr = vibv_clamp_int(pa.max_qp_wr);
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN)
		attr->device_cap_flags |= IBV_DEVICE_RC_RNR_NAK_GEN;
	/* spec.md "Mapping for the verbs layer". SRQ resize is not offered
	 * (no IBV_DEVICE_SRQ_RESIZE); SRQ support shows in max_srq. */
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS)
		attr->device_cap_flags |= IBV_DEVICE_MEM_MGT_EXTENSIONS;
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW)
		attr->device_cap_flags |= IBV_DEVICE_MEM_WINDOW;
	if ((pa.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B) &&
	    (pa.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW))
		attr->device_cap_flags |= IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_RESIZE_MAX_WR)
		attr->device_cap_flags |= IBV_DEVICE_RESIZE_MAX_WR;
	if (pa.ext)
		attr->device_cap_flags |= IBV_DEVICE_PORT_ACTIVE_EVENT;
	attr->max_sge = vibv_clamp_int(pa.max_send_sge < pa.max_recv_sge ?
					pa.max_send_sge : pa.max_recv_sge);
	attr->max_sge_rd = vibv_clamp_int(pa.max_sge_rd);
	attr->max_cq = vibv_clamp_int(pa.max_rdma_cqs);
	attr->max_cqe = vibv_clamp_int(pa.max_cqe);
	attr->max_mr = vibv_clamp_int(pa.max_mr);
	attr->max_pd = vibv_clamp_int(pa.max_pd);
	attr->max_qp_rd_atom = vibv_clamp_int(pa.max_qp_rd_atom);
	attr->max_res_rd_atom = vibv_clamp_int((uint64_t)pa.max_qp_rd_atom * max_qp);
	attr->max_qp_init_rd_atom = vibv_clamp_int(pa.max_qp_init_rd_atom);
	switch (pa.atomic_cap) {
	case 1:
		attr->atomic_cap = IBV_ATOMIC_HCA;
		break;
	case 2:
		attr->atomic_cap = IBV_ATOMIC_GLOB;
		break;
	default:
		attr->atomic_cap = IBV_ATOMIC_NONE;
		break;
	}
	/* No multicast limits are reported (max_mcast_* stay 0). */
	attr->max_ah = vibv_clamp_int(pa.max_ah);
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_SRQ) {
		attr->max_srq = vibv_clamp_int(pa.max_srq);
		attr->max_srq_wr = vibv_clamp_int(pa.max_srq_wr);
		attr->max_srq_sge = vibv_clamp_int(pa.max_srq_sge);
	}
	if (pa.device_cap_flags & VIRTIO_IB_DEVICE_MEM_WINDOW)
		attr->max_mw = vibv_clamp_int(pa.max_mw);
	/* max_fast_reg_page_list_len has no field in struct ibv_device_attr
	 * (it serves libvrdma's ALLOC_MR / REG_MR, which libibverbs lacks). */
	attr->max_pkeys = pa.max_pkeys ? pa.max_pkeys : VRDMA_VERBS_MAX_PKEYS;
	attr->local_ca_ack_delay = pa.local_ca_ack_delay;
	attr->phys_port_cnt = 1;
	return 0;
}

/* Device attributes: 0 or a positive errno. */
int ibv_query_device(struct ibv_context *ibctx, struct ibv_device_attr *attr)
{
	int ret = vibv_fill_device_attr(vibv_ctx(ibctx), attr);

	if (ret)
		errno = ret;
	return ret;
}

static int vibv_vctx_query_device_ex(struct ibv_context *ibctx,
				      const struct ibv_query_device_ex_input *input,
				      struct ibv_device_attr_ex *attr,
				      size_t attr_size)
{
	struct ibv_device_attr_ex full;
	int ret;

	if ((input && input->comp_mask) || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	ret = vibv_fill_device_attr(vibv_ctx(ibctx), &full.orig_attr);
	if (ret)
		return ret;
	/* The device's whole story: no ODP, TSO, RSS, WQs, packet pacing,
	 * raw packet QPs, tag matching, CQ moderation, device memory or PCI
	 * atomics (all left 0); completion timestamps in nanoseconds
	 * (cq_ex.c). */
	full.device_cap_flags_ex = (uint64_t)(unsigned int)full.orig_attr.device_cap_flags;
	full.completion_timestamp_mask = VRDMA_VERBS_TIMESTAMP_MASK;
	full.hca_core_clock = VRDMA_VERBS_CORE_CLOCK_KHZ;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

/* The IB MTU for a netdev MTU: the largest IB MTU that fits once the RoCE v2
 * headers are taken off (IPv6 40, UDP 8, BTH 12, the largest extended header
 * 28, ICRC 4). */
enum ibv_mtu vibv_mtu_from_netdev(uint32_t mtu)
{
	const uint32_t overhead = 40 + 8 + 12 + 28 + 4;
	uint32_t room = mtu > overhead ? mtu - overhead : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* IB width and speed codes that come closest to speed Mbit/s. */
static void vibv_width_speed(uint32_t speed, uint8_t *width, uint8_t *code)
{
	static const struct {
		uint32_t mbps;
		uint8_t width; /* 1 = 1X, 2 = 4X, 8 = 12X */
		uint8_t speed; /* 1 SDR, 2 DDR, 4 QDR, 16 FDR, 32 EDR, 64 HDR, 128 NDR */
	} tab[] = {
		{ 2500, 1, 1 },    { 5000, 1, 2 },    { 10000, 1, 4 },
		{ 14000, 1, 16 },  { 25000, 1, 32 },  { 40000, 2, 4 },
		{ 50000, 1, 64 },  { 100000, 2, 32 }, { 200000, 2, 64 },
		{ 400000, 2, 128 },
	};
	size_t i;

	if (speed == 0 || speed == UINT32_MAX)
		speed = 10000;
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (speed <= tab[i].mbps) {
			*width = tab[i].width;
			*code = tab[i].speed;
			return;
		}
	}
	*width = 8;
	*code = 128;
}

/* Port attributes in libibverbs terms: 0 or a positive errno. */
int vibv_query_port(struct ibv_context *ibctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_prov_port_attr pa;
	int ret;

	if (port != VRDMA_VERBS_PORT)
		return EINVAL;
	memset(&pa, 0, sizeof(pa));
	ret = VRDMA_PROV_CALL(ctx->ops, query_port, ctx->prov, &pa);
	if (ret)
		return -ret;

	memset(attr, 0, sizeof(*attr));
	attr->state = pa.link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = vibv_mtu_from_netdev(pa.mtu ? pa.mtu : 1500);
	attr->gid_tbl_len = vibv_clamp_int(pa.gid_tbl_len);
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = pa.max_msg_sz;
	attr->pkey_tbl_len = pa.pkey_tbl_len ? (uint16_t)pa.pkey_tbl_len : 1;
	attr->max_vl_num = 1;
	vibv_width_speed(pa.speed, &attr->active_width, &attr->active_speed);
	attr->phys_state = pa.link_up ? 5 /* LinkUp */ : 3 /* Disabled */;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	if (pa.per_port) {
		/* the virtio-rdma device reports its port itself */
		attr->state = (enum ibv_port_state)pa.state;
		attr->phys_state = pa.phys_state;
		attr->active_width = pa.active_width;
		attr->active_speed = pa.active_speed;
		attr->port_cap_flags |= pa.port_cap_flags;
		attr->bad_pkey_cntr = pa.bad_pkey_cntr;
		attr->qkey_viol_cntr = pa.qkey_viol_cntr;
	}
	return 0;
}

static int vibv_vctx_query_port(struct ibv_context *ibctx, uint8_t port,
				 struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr full;
	int ret;

	ret = vibv_query_port(ibctx, port, &full);
	if (ret)
		return ret;
	memcpy(attr, &full, attr_len < sizeof(full) ? attr_len : sizeof(full));
	return 0;
}

#undef ibv_query_port
/* The exported query: the structure of applications built before
 * port_cap_flags2 existed, which ends at flags. Returns 0 or a positive
 * errno. */
int ibv_query_port(struct ibv_context *ibctx, uint8_t port,
		   struct _compat_ibv_port_attr *attr)
{
	int ret = vibv_vctx_query_port(ibctx, port, (struct ibv_port_attr *)attr,
					offsetof(struct ibv_port_attr,
						 port_cap_flags2));

	if (ret)
		errno = ret;
	return ret;
}

/* GID entry: 0, ENODATA (empty entry) or EINVAL. */
int vibv_query_gid_entry(struct ibv_context *ibctx, uint32_t port,
				uint32_t index, struct ibv_gid_entry *entry)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_prov_gid g;
	int ret;

	if (port != VRDMA_VERBS_PORT)
		return EINVAL;
	memset(&g, 0, sizeof(g));
	ret = VRDMA_PROV_CALL(ctx->ops, query_gid, ctx->prov, index, &g);
	if (ret)
		return -ret;
	memset(entry, 0, sizeof(*entry));
	memcpy(entry->gid.raw, g.gid, sizeof(entry->gid.raw));
	entry->gid_index = index;
	entry->port_num = port;
	entry->gid_type = g.gid_type == VRDMA_PROV_GID_TYPE_ROCE_V1 ?
				  IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 0; /* no kernel netdev */
	return 0;
}

/* GID by index: 0 (an empty entry reads as zeros) or -1. */
int ibv_query_gid(struct ibv_context *ibctx, uint8_t port, int index,
		  union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int ret;

	if (index < 0) {
		errno = EINVAL;
		return -1;
	}
	ret = vibv_query_gid_entry(ibctx, port, (uint32_t)index, &e);
	if (ret == ENODATA) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (ret) {
		errno = ret;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

/* GID entry of ibv_query_gid_ex(): 0, ENODATA, EINVAL or EOPNOTSUPP. */
int _ibv_query_gid_ex(struct ibv_context *ibctx, uint32_t port,
		      uint32_t index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int ret;

	if (flags)
		return EOPNOTSUPP;
	if (entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return EINVAL;
	ret = vibv_query_gid_entry(ibctx, port, index, &e);
	if (ret)
		return ret;
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

/* The non-empty GID entries of every port. Returns how many, or -EINVAL
 * when max_entries is too small. */
ssize_t _ibv_query_gid_table(struct ibv_context *ibctx,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	size_t n = 0;
	int ret, i;

	if (flags)
		return -EOPNOTSUPP;
	if (entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return -EINVAL;
	ret = vibv_query_port(ibctx, VRDMA_VERBS_PORT, &pattr);
	if (ret)
		return -ret;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		ret = vibv_query_gid_entry(ibctx, VRDMA_VERBS_PORT,
						  (uint32_t)i, &e);
		if (ret == ENODATA)
			continue;
		if (ret)
			return -ret;
		if (n == max_entries)
			return -EINVAL;
		memcpy((char *)entries + n * entry_size, &e,
		       entry_size < sizeof(e) ? entry_size : sizeof(e));
		n++;
	}
	return (ssize_t)n;
}

/* Type of a GID (ibv_devinfo): 0, or -1. An empty entry reads as RoCE v1
 * (the zero value) like the sysfs-based original. */
int ibv_query_gid_type(struct ibv_context *ibctx, uint8_t port,
		       unsigned int index, enum vibv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int ret;

	ret = vibv_query_gid_entry(ibctx, port, index, &e);
	if (ret == ENODATA) {
		*type = VRDMA_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (ret) {
		errno = ret;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? VRDMA_GID_TYPE_SYSFS_ROCE_V2 :
						     VRDMA_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* P_Key by index (network byte order): 0, or -1. The device's table
 * (QUERY_PKEY) is {0xffff}; without the extension the verbs layer answers
 * that itself. */
int ibv_query_pkey(struct ibv_context *ibctx, uint8_t port, int index,
		   __be16 *pkey)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	unsigned int len = ctx->caps.max_pkeys ? ctx->caps.max_pkeys :
						 VRDMA_VERBS_MAX_PKEYS;
	uint16_t v = VRDMA_VERBS_DEFAULT_PKEY;
	int ret;

	if (port != VRDMA_VERBS_PORT || index < 0 || (unsigned int)index >= len) {
		errno = EINVAL;
		return -1;
	}
	ret = VRDMA_PROV_CALL(ctx->ops, query_pkey, ctx->prov, (uint32_t)index, &v);
	if (ret == -EOPNOTSUPP && index == 0)
		v = VRDMA_VERBS_DEFAULT_PKEY;
	else if (ret) {
		vibv_errno(ret);
		return -1;
	}
	*pkey = htobe16(v);
	return 0;
}

/* Index of a P_Key (network byte order), or -1. */
int ibv_get_pkey_index(struct ibv_context *ibctx, uint8_t port, __be16 pkey)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	int len = ctx->caps.max_pkeys ? ctx->caps.max_pkeys : VRDMA_VERBS_MAX_PKEYS;
	__be16 p;
	int i;

	for (i = 0; i < len; i++) {
		if (ibv_query_pkey(ibctx, port, i, &p))
			return -1;
		if (p == pkey)
			return i;
	}
	errno = ENOENT;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Asynchronous events                                                       */
/* ------------------------------------------------------------------------ */

bool vibv_wait_restarts(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		/* faults of the thread itself never interrupt a wait */
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		    sig == SIGTRAP)
			continue;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN && !(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

static bool vibv_fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Adds an object to the context's registry. */
void vibv_obj_add(struct vibv_context *ctx, struct vibv_obj *obj,
			 uint8_t kind, uint32_t num)
{
	obj->kind = kind;
	obj->num = num;
	pthread_mutex_lock(&ctx->obj_lock);
	obj->next = ctx->objs;
	ctx->objs = obj;
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* Removes an object from the registry (no-op if it is not there). */
void vibv_obj_del(struct vibv_context *ctx, struct vibv_obj *obj)
{
	struct vibv_obj **pp;

	pthread_mutex_lock(&ctx->obj_lock);
	for (pp = &ctx->objs; *pp; pp = &(*pp)->next) {
		if (*pp == obj) {
			*pp = obj->next;
			break;
		}
	}
	obj->next = NULL;
	pthread_mutex_unlock(&ctx->obj_lock);
}

/* The live object of a kind and number; caller holds obj_lock. */
static struct vibv_obj *vibv_obj_find(struct vibv_context *ctx,
					      uint8_t kind, uint32_t num)
{
	struct vibv_obj *o;

	for (o = ctx->objs; o; o = o->next)
		if (o->kind == kind && o->num == num)
			return o;
	return NULL;
}

/* The object an event names: its cookie, or the registry entry for its id.
 * Caller holds obj_lock. NULL when the object is gone. */
static void *vibv_async_object(struct vibv_context *ctx,
				const struct vibv_prov_async_event *pev, uint8_t kind)
{
	struct vibv_obj *o;
	void *p;

	if (!pev->cookie)
		o = vibv_obj_find(ctx, kind, pev->id);
	else
		o = ctx->objs; /* check the cookie is still a live object */
	for (; o; o = pev->cookie ? o->next : NULL) {
		switch (kind) {
		case VRDMA_OBJ_CQ:
			p = vibv_container_of(o, struct vibv_cq, obj);
			break;
		case VRDMA_OBJ_QP:
			p = vibv_container_of(o, struct vibv_qp, obj);
			break;
		default:
			p = vibv_container_of(o, struct vibv_srq, obj);
			break;
		}
		if (!pev->cookie || (o->kind == kind && p == pev->cookie))
			return p;
	}
	return NULL;
}

/* Fills event from a provider event and counts it on its object. Returns
 * false for an event of an unknown type or of an object that is gone.
 * Caller holds ctx->obj_lock (so the object cannot be unlinked meanwhile). */
static bool vibv_async_translate(struct vibv_context *ctx,
				  const struct vibv_prov_async_event *pev,
				  struct ibv_async_event *event)
{
	memset(event, 0, sizeof(*event));
	event->event_type = (enum ibv_event_type)pev->type;
	switch (pev->type) {
	case VRDMA_PROV_EVENT_CQ_ERR: {
		struct vibv_cq *cq = vibv_async_object(ctx, pev, VRDMA_OBJ_CQ);

		if (!cq)
			return false;
		event->element.cq = &cq->ibcq;
		pthread_mutex_lock(&cq->ibcq.mutex);
		cq->async_events_delivered++;
		pthread_mutex_unlock(&cq->ibcq.mutex);
		return true;
	}
	case VRDMA_PROV_EVENT_QP_FATAL:
	case VRDMA_PROV_EVENT_QP_REQ_ERR:
	case VRDMA_PROV_EVENT_QP_ACCESS_ERR:
	case VRDMA_PROV_EVENT_COMM_EST:
	case VRDMA_PROV_EVENT_SQ_DRAINED:
	case VRDMA_PROV_EVENT_PATH_MIG:
	case VRDMA_PROV_EVENT_PATH_MIG_ERR:
	case VRDMA_PROV_EVENT_QP_LAST_WQE_REACHED: {
		struct vibv_qp *qp = vibv_async_object(ctx, pev, VRDMA_OBJ_QP);

		if (!qp)
			return false;
		event->element.qp = &qp->ibqp;
		pthread_mutex_lock(&qp->ibqp.mutex);
		qp->events_delivered++;
		pthread_mutex_unlock(&qp->ibqp.mutex);
		return true;
	}
	case VRDMA_PROV_EVENT_SRQ_ERR:
	case VRDMA_PROV_EVENT_SRQ_LIMIT_REACHED: {
		struct vibv_srq *srq = vibv_async_object(ctx, pev, VRDMA_OBJ_SRQ);

		if (!srq)
			return false;
		event->element.srq = &srq->ibsrq;
		pthread_mutex_lock(&srq->ibsrq.mutex);
		srq->events_delivered++;
		pthread_mutex_unlock(&srq->ibsrq.mutex);
		return true;
	}
	case VRDMA_PROV_EVENT_PORT_ACTIVE:
	case VRDMA_PROV_EVENT_PORT_ERR:
	case VRDMA_PROV_EVENT_LID_CHANGE:
	case VRDMA_PROV_EVENT_PKEY_CHANGE:
	case VRDMA_PROV_EVENT_SM_CHANGE:
	case VRDMA_PROV_EVENT_CLIENT_REREGISTER:
	case VRDMA_PROV_EVENT_GID_CHANGE:
		event->element.port_num = (int)(pev->port ? pev->port : 1);
		return true;
	case VRDMA_PROV_EVENT_DEVICE_FATAL:
		return true;
	default:
		return false;
	}
}

/* Waits for (or, with O_NONBLOCK set on async_fd, polls for) the next
 * asynchronous event. Returns 0, or -1 with errno (EAGAIN: none pending). */
int ibv_get_async_event(struct ibv_context *ibctx, struct ibv_async_event *event)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_prov_async_event pev;
	struct pollfd pfd;
	int ret;

	for (;;) {
		memset(&pev, 0, sizeof(pev));
		ret = -EAGAIN;
		pthread_mutex_lock(&ctx->obj_lock);
		if (ctx->held_len) {
			pev = ctx->held[ctx->held_head];
			ctx->held_head = (ctx->held_head + 1) % VRDMA_VERBS_HELD;
			ctx->held_len--;
			ret = 0;
		}
		pthread_mutex_unlock(&ctx->obj_lock);
		if (ret)
			ret = VRDMA_PROV_CALL(ctx->ops, get_async_event, ctx->prov, &pev);
		if (ret == 0 && pev.type == VIRTIO_IB_EVENT_CM_PENDING)
			continue; /* librdmacm's (it asks the CM itself) */
		if (ret == 0) {
			bool ok;

			pthread_mutex_lock(&ctx->obj_lock);
			ok = vibv_async_translate(ctx, &pev, event);
			pthread_mutex_unlock(&ctx->obj_lock);
			if (ok)
				return 0;
			continue; /* malformed, or its object is gone: dropped */
		}
		if (ret != -EAGAIN && ret != -EOPNOTSUPP) {
			vibv_errno(ret);
			return -1;
		}
		if (vibv_fd_nonblocking(ibctx->async_fd)) {
			errno = EAGAIN;
			return -1;
		}
		pfd.fd = ibctx->async_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, -1) < 0 && (errno != EINTR || !vibv_wait_restarts()))
			return -1;
	}
}

/* Acknowledges an event of ibv_get_async_event (destroying its object waits
 * for this). */
void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		break;
	}
	default:
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* sysfs helpers (there is no sysfs for these devices)                       */
/* ------------------------------------------------------------------------ */

/* Returns the sysfs mount point ($SYSFS_PATH or /sys). */
const char *ibv_get_sysfs_path(void)
{
	const char *p = getenv("SYSFS_PATH");

	return p && *p ? p : "/sys";
}

/* Reads dir/file into buf (NUL-terminated, one trailing newline removed).
 * Returns the number of bytes kept, or -1 with errno set. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char *path;
	ssize_t len;
	int fd, err;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	err = errno;
	close(fd);
	if (len < 0) {
		errno = err;
		return -1;
	}
	if ((size_t)len == size)
		len--;
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return (int)len;
}

/* ---- private: librdmacm and the device's connection manager ---- */

int vrdma_ibv_cm_cmd(struct ibv_context *ibctx, uint8_t cmd, const void *in, size_t in_len,
		     void *out, size_t out_len);
int vrdma_ibv_cm_pending(struct ibv_context *ibctx);

/* One CM command (VIRTIO_NET_CTRL_ROCE_CM_*): 0 or -errno. */
int vrdma_ibv_cm_cmd(struct ibv_context *ibctx, uint8_t cmd, const void *in, size_t in_len,
		     void *out, size_t out_len)
{
	struct vibv_context *ctx;

	if (!ibctx)
		return -EINVAL;
	ctx = vibv_ctx(ibctx);
	return VRDMA_PROV_CALL(ctx->ops, cm_cmd, ctx->prov, cmd, in, in_len, out, out_len);
}

/* Reads the context's async events without blocking (call it when
 * ibctx->async_fd polls readable): 1 if the device announced CM events,
 * else 0; the other events are kept for ibv_get_async_event. */
int vrdma_ibv_cm_pending(struct ibv_context *ibctx)
{
	struct vibv_context *ctx = vibv_ctx(ibctx);
	struct vibv_prov_async_event pev;
	int cm = 0;

	for (;;) {
		memset(&pev, 0, sizeof(pev));
		if (VRDMA_PROV_CALL(ctx->ops, get_async_event, ctx->prov, &pev))
			return cm;
		if (pev.type == VIRTIO_IB_EVENT_CM_PENDING) {
			cm = 1;
			continue;
		}
		pthread_mutex_lock(&ctx->obj_lock);
		if (ctx->held_len == VRDMA_VERBS_HELD) {
			ctx->held_head = (ctx->held_head + 1) % VRDMA_VERBS_HELD;
			ctx->held_len--;
		}
		ctx->held[(ctx->held_head + ctx->held_len) % VRDMA_VERBS_HELD] = pev;
		ctx->held_len++;
		pthread_mutex_unlock(&ctx->obj_lock);
	}
}
