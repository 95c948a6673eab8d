/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The private provider interface of libibverbs as released in rdma-core 44
 * (symbol version IBVERBS_PRIVATE_34, provider libraries named
 * lib<name>-rdmav34.so), declared here because its header
 * (infiniband/driver.h) is not installed by libibverbs-dev. Only what this
 * provider uses is declared, with the layouts of that release; a different
 * IBVERBS_PRIVATE version refuses to load the provider (the registration
 * symbol carries the number).
 */
#ifndef VRGP_ABI_H
#define VRGP_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

struct verbs_sysfs_dev;

enum { VRGP_MATCH_MODALIAS = 2 };

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct vrgp_list_node {
	struct vrgp_list_node *next, *prev;
};

struct verbs_device {
	struct ibv_device device; /* first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct vrgp_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

enum vrgp_mr_type { VRGP_MR_TYPE_MR };

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum vrgp_mr_type mr_type;
	int access;
};

/* The operations table: 76 entries in this order (sorted by name). Entries
 * this provider leaves NULL are typed loosely: libibverbs copies only the
 * non-NULL ones over its defaults. */
typedef void (*vrgp_unused_op)(void);
struct verbs_context_ops {
	vrgp_unused_op advise_mr, alloc_dm, alloc_mw, alloc_null_mr, alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	vrgp_unused_op alloc_td, async_event, attach_counters_point_flow, attach_mcast, bind_mw,
		close_xrcd;
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	vrgp_unused_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel, int comp_vector);
	vrgp_unused_op create_cq_ex, create_flow, create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	vrgp_unused_op create_qp_ex, create_rwq_ind_table, create_srq, create_srq_ex, create_wq,
		dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	vrgp_unused_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	vrgp_unused_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	vrgp_unused_op destroy_flow, destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	vrgp_unused_op destroy_rwq_ind_table, destroy_srq, destroy_wq, detach_mcast;
	void (*free_context)(struct ibv_context *context);
	vrgp_unused_op free_dm, get_srq_num, import_dm, import_mr, import_pd, modify_cq,
		modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	vrgp_unused_op modify_qp_rate_limit, modify_srq, modify_wq, open_qp, open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	vrgp_unused_op post_srq_ops, post_srq_recv;
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	vrgp_unused_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	vrgp_unused_op query_qp_data_in_order, query_rt_values, query_srq, read_counters,
		reg_dm_mr, reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
				 int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	vrgp_unused_op rereg_mr, resize_cq, set_ece, unimport_dm, unimport_mr, unimport_pd;
};
_Static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
	       "rdma-core 44 has 76 context operations");
_Static_assert(offsetof(struct verbs_context_ops, alloc_pd) == 5 * sizeof(void *), "alloc_pd");
_Static_assert(offsetof(struct verbs_context_ops, free_context) == 39 * sizeof(void *),
	       "free_context");
_Static_assert(offsetof(struct verbs_context_ops, poll_cq) == 53 * sizeof(void *), "poll_cq");
_Static_assert(offsetof(struct verbs_context_ops, reg_mr) == 68 * sizeof(void *), "reg_mr");

/* Command buffers of the uverbs write ABI: the header, then the kernel's
 * request (no driver data follows). */
#define VRGP_CMD(name, kabi)                                                      \
	struct name {                                                             \
		struct ib_uverbs_cmd_hdr hdr;                                     \
		struct kabi core;                                                 \
	}
VRGP_CMD(ibv_get_context, ib_uverbs_get_context);
VRGP_CMD(ibv_query_port, ib_uverbs_query_port);
VRGP_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
VRGP_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
VRGP_CMD(ibv_create_cq, ib_uverbs_create_cq);
VRGP_CMD(ibv_create_qp, ib_uverbs_create_qp);
VRGP_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
VRGP_CMD(ibv_query_qp, ib_uverbs_query_qp);

void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);

int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
			size_t cmd_size, struct ib_uverbs_get_context_resp *resp, size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp, size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
		       size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd, struct ibv_alloc_pd *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access,
		   struct verbs_mr *vmr, struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
		      int comp_vector, struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp, size_t resp_size);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
		     size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

#endif
