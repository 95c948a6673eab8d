/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBVERBS_PRIVATE_34: the interface between rdma-core's libibverbs and its
 * vendor providers (libmlx5, libefa, ...). Debian's perftest links libmlx5
 * and libefa directly, so their imports must resolve (binaries are linked
 * BIND_NOW) and their constructors run: verbs_register_driver_34() accepts
 * and ignores the driver. Nothing else here can be reached for a vrdma
 * device (vendor direct verbs check the device's vendor first, and these
 * contexts never come from a vendor provider), so every other entry point
 * fails cleanly: the ibv_cmd_* commands return EOPNOTSUPP (their positive
 * errno convention) with errno set, constructors of contexts return NULL.
 *
 * The ibv_cmd_* functions are defined without parameters: on x86-64 (and
 * every ABI libibverbs runs on) a caller's extra arguments are harmless,
 * and nothing here reads them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "verbs/verbs_priv.h"

/* rdma-core's driver.h is not installed: the prototypes of what is defined
 * here, with opaque pointers for its private structures. */
struct verbs_device_ops;
struct verbs_context_ops;
struct ibv_command_buffer;

void verbs_register_driver_34(const struct verbs_device_ops *ops);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size, struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     struct ibv_command_buffer *link);
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...);

/* Whether destroying objects of a disassociated device may succeed (read by
 * providers; no device is ever disassociated here). */
bool verbs_allow_disassociate_destroy;

/* A provider's constructor registering itself: accepted and ignored (vrdma
 * devices are not driven by vendor providers). */
void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

/* Provider operations for a provider's context: ignored (no such context is
 * ever created here). */
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
	(void)vctx;
	(void)ops;
}

/* A provider allocating its context: NULL, errno EOPNOTSUPP. */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size, struct verbs_context *context_offset,
				    uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Counterpart of _verbs_init_and_alloc_context: nothing to undo. */
void verbs_uninit_context(struct verbs_context *context)
{
	(void)context;
}

/* Opening a device through a vendor provider (mlx5dv_open_device): NULL,
 * errno EOPNOTSUPP. */
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)device;
	(void)private_data;
	errno = EOPNOTSUPP;
	return NULL;
}

/* Initialises the generic part of a provider's CQ. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
}

/* A provider's debug log: printed on stderr when VERBS_LOG_LEVEL is at
 * least level (1 error ... 4 debug). */
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	const char *env = getenv("VERBS_LOG_LEVEL");
	va_list ap;

	(void)ctx;
	if (!env || strtoul(env, NULL, 0) < level)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* Attribute count of an ioctl command buffer: num_attrs (no chaining). */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     struct ibv_command_buffer *link)
{
	(void)link;
	return num_attrs;
}

/* There is no uverbs ioctl: EOPNOTSUPP. */
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	(void)context;
	(void)cmd;
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* There is no sysfs for these devices: -1, errno ENOENT. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...)
{
	(void)sysfs_dev;
	(void)fnfmt;
	if (buf && size)
		buf[0] = '\0';
	errno = ENOENT;
	return -1;
}

/* The uverbs commands of providers: EOPNOTSUPP, errno set. */
#define VRDMA_CMD_STUB(name)                                                   \
	int name(void);                                                        \
	int name(void)                                                         \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return EOPNOTSUPP;                                             \
	}

VRDMA_CMD_STUB(ibv_cmd_advise_mr)
VRDMA_CMD_STUB(ibv_cmd_alloc_dm)
VRDMA_CMD_STUB(ibv_cmd_alloc_mw)
VRDMA_CMD_STUB(ibv_cmd_alloc_pd)
VRDMA_CMD_STUB(ibv_cmd_attach_mcast)
VRDMA_CMD_STUB(ibv_cmd_close_xrcd)
VRDMA_CMD_STUB(ibv_cmd_create_ah)
VRDMA_CMD_STUB(ibv_cmd_create_counters)
VRDMA_CMD_STUB(ibv_cmd_create_cq)
VRDMA_CMD_STUB(ibv_cmd_create_cq_ex)
VRDMA_CMD_STUB(ibv_cmd_create_flow)
VRDMA_CMD_STUB(ibv_cmd_create_flow_action_esp)
VRDMA_CMD_STUB(ibv_cmd_create_qp)
VRDMA_CMD_STUB(ibv_cmd_create_qp_ex)
VRDMA_CMD_STUB(ibv_cmd_create_qp_ex2)
VRDMA_CMD_STUB(ibv_cmd_create_rwq_ind_table)
VRDMA_CMD_STUB(ibv_cmd_create_srq)
VRDMA_CMD_STUB(ibv_cmd_create_srq_ex)
VRDMA_CMD_STUB(ibv_cmd_create_wq)
VRDMA_CMD_STUB(ibv_cmd_dealloc_mw)
VRDMA_CMD_STUB(ibv_cmd_dealloc_pd)
VRDMA_CMD_STUB(ibv_cmd_dereg_mr)
VRDMA_CMD_STUB(ibv_cmd_destroy_ah)
VRDMA_CMD_STUB(ibv_cmd_destroy_counters)
VRDMA_CMD_STUB(ibv_cmd_destroy_cq)
VRDMA_CMD_STUB(ibv_cmd_destroy_flow)
VRDMA_CMD_STUB(ibv_cmd_destroy_flow_action)
VRDMA_CMD_STUB(ibv_cmd_destroy_qp)
VRDMA_CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
VRDMA_CMD_STUB(ibv_cmd_destroy_srq)
VRDMA_CMD_STUB(ibv_cmd_destroy_wq)
VRDMA_CMD_STUB(ibv_cmd_detach_mcast)
VRDMA_CMD_STUB(ibv_cmd_free_dm)
VRDMA_CMD_STUB(ibv_cmd_get_context)
VRDMA_CMD_STUB(ibv_cmd_modify_cq)
VRDMA_CMD_STUB(ibv_cmd_modify_flow_action_esp)
VRDMA_CMD_STUB(ibv_cmd_modify_qp)
VRDMA_CMD_STUB(ibv_cmd_modify_qp_ex)
VRDMA_CMD_STUB(ibv_cmd_modify_srq)
VRDMA_CMD_STUB(ibv_cmd_modify_wq)
VRDMA_CMD_STUB(ibv_cmd_open_qp)
VRDMA_CMD_STUB(ibv_cmd_open_xrcd)
VRDMA_CMD_STUB(ibv_cmd_poll_cq)
VRDMA_CMD_STUB(ibv_cmd_post_recv)
VRDMA_CMD_STUB(ibv_cmd_post_send)
VRDMA_CMD_STUB(ibv_cmd_post_srq_recv)
VRDMA_CMD_STUB(ibv_cmd_query_context)
VRDMA_CMD_STUB(ibv_cmd_query_device_any)
VRDMA_CMD_STUB(ibv_cmd_query_mr)
VRDMA_CMD_STUB(ibv_cmd_query_port)
VRDMA_CMD_STUB(ibv_cmd_query_qp)
VRDMA_CMD_STUB(ibv_cmd_query_srq)
VRDMA_CMD_STUB(ibv_cmd_read_counters)
VRDMA_CMD_STUB(ibv_cmd_reg_dm_mr)
VRDMA_CMD_STUB(ibv_cmd_reg_dmabuf_mr)
VRDMA_CMD_STUB(ibv_cmd_reg_mr)
VRDMA_CMD_STUB(ibv_cmd_req_notify_cq)
VRDMA_CMD_STUB(ibv_cmd_rereg_mr)
VRDMA_CMD_STUB(ibv_cmd_resize_cq)
