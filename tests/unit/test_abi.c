/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-net RoCE wire ABI (include/vrdma/virtio_net_roce.h): sizes and
 * offsets checked at run time too (the header checks them at compile time),
 * byte images of a few structures, and the vrdma QPN / virtqueue helpers.
 */
#include <endian.h>
#include <stddef.h>

#include "harness.h"
#include "vrdma/virtio_net_roce.h"

#define SZ(type, n) CHECK_EQ(sizeof(struct type), (n))
#define OFF(type, field, n) CHECK_EQ(offsetof(struct type, field), (n))

static void test_constants(void)
{
	CHECK_EQ(VIRTIO_NET_F_ROCE, 55);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE, 6);
	CHECK_EQ(VIRTIO_NET_OK, 0);
	CHECK_EQ(VIRTIO_NET_ERR, 1);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, 0);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, 1);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_CREATE_CQ, 2);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, 3);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_CREATE_PD, 4);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, 5);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, 6);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_REG_USER_MR, 7);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DEREG_MR, 8);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_CREATE_QP, 9);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_MODIFY_QP, 10);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_QUERY_QP, 11);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, 12);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_CREATE_AH, 13);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, 14);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_ADD_GID, 15);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DEL_GID, 16);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, 17);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_NUM_CMDS, 18);

	CHECK_EQ(VIRTIO_IB_QPT_SMI, 0);
	CHECK_EQ(VIRTIO_IB_QPT_GSI, 1);
	CHECK_EQ(VIRTIO_IB_QPT_RC, 2);
	CHECK_EQ(VIRTIO_IB_QPT_UC, 3);
	CHECK_EQ(VIRTIO_IB_QPT_UD, 4);
	CHECK_EQ(VIRTIO_IB_QPS_RESET, 0);
	CHECK_EQ(VIRTIO_IB_QPS_SQE, 5);
	CHECK_EQ(VIRTIO_IB_QPS_ERR, 6);
	CHECK_EQ(VIRTIO_IB_MTU_256, 1);
	CHECK_EQ(VIRTIO_IB_MTU_4096, 5);
	CHECK_EQ(virtio_ib_mtu_bytes(VIRTIO_IB_MTU_256), 256);
	CHECK_EQ(virtio_ib_mtu_bytes(VIRTIO_IB_MTU_1024), 1024);
	CHECK_EQ(virtio_ib_mtu_bytes(VIRTIO_IB_MTU_4096), 4096);
	CHECK_EQ(virtio_ib_mtu_bytes(0), 0);
	CHECK_EQ(virtio_ib_mtu_bytes(6), 0);
	CHECK_EQ(VIRTIO_IB_QP_STATE, 1);
	CHECK_EQ(VIRTIO_IB_QP_RATE_LIMIT, 1 << 16);
	CHECK_EQ(VIRTIO_IB_QP_ATTR_MASK_ALL, 0x1ffff);
	CHECK_EQ(VIRTIO_IB_WR_RDMA_WRITE, 0);
	CHECK_EQ(VIRTIO_IB_WR_RDMA_READ, 4);
	CHECK_EQ(VIRTIO_IB_WC_RECV, 3);
	CHECK_EQ(VIRTIO_IB_WC_RECV_RDMA_WITH_IMM, 4);
	CHECK_EQ(VIRTIO_IB_WC_WR_FLUSH_ERR, 4);
	CHECK_EQ(VIRTIO_IB_WC_GENERAL_ERR, 15);
	CHECK_EQ(VIRTIO_IB_SEND_INLINE, 8);
	CHECK_EQ(VIRTIO_IB_NOTIFY_SOLICITED, 1);
	CHECK_EQ(VIRTIO_IB_NOTIFY_NEXT_COMPLETION, 2);
	CHECK_EQ(VIRTIO_IB_WC_GRH, 1);
	CHECK_EQ(VIRTIO_IB_WC_WITH_IMM, 2);
	CHECK_EQ(VIRTIO_IB_ACCESS_RFC_MASK, 7);
	CHECK_EQ(VRDMA_PAGE_SIZE, 4096);
}

static void test_sizes(void)
{
	SZ(virtio_net_roce_config, 32);
	SZ(virtio_net_roce_ctrl_hdr, 2);
	SZ(virtio_rdma_ack_query_device, 128);
	SZ(virtio_rdma_ack_query_port, 32);
	SZ(virtio_rdma_cmd_create_cq, 4);
	SZ(virtio_rdma_ack_create_cq, 4);
	SZ(virtio_rdma_cmd_destroy_cq, 4);
	SZ(virtio_rdma_ack_create_pd, 4);
	SZ(virtio_rdma_cmd_destroy_pd, 4);
	SZ(virtio_rdma_cmd_get_dma_mr, 8);
	SZ(virtio_rdma_ack_get_dma_mr, 12);
	SZ(virtio_rdma_cmd_reg_user_mr, 32);
	SZ(virtio_rdma_ack_reg_user_mr, 12);
	SZ(virtio_rdma_cmd_dereg_mr, 4);
	SZ(virtio_rdma_qp_cap, 24);
	SZ(virtio_rdma_cmd_create_qp, 56);
	SZ(virtio_rdma_ack_create_qp, 4);
	SZ(virtio_rdma_global_route, 24);
	SZ(virtio_rdma_ah_attr, 40);
	SZ(virtio_rdma_cmd_modify_qp, 128);
	SZ(virtio_rdma_cmd_query_qp, 8);
	SZ(virtio_rdma_ack_query_qp, 120);
	SZ(virtio_rdma_cmd_destroy_qp, 4);
	SZ(virtio_rdma_cmd_create_ah, 48);
	SZ(virtio_rdma_ack_create_ah, 4);
	SZ(virtio_rdma_cmd_destroy_ah, 8);
	SZ(virtio_rdma_cmd_add_gid, 24);
	SZ(virtio_rdma_cmd_del_gid, 2);
	SZ(virtio_rdma_cmd_req_notify, 8);
	SZ(virtio_rdma_sge, 16);
	SZ(virtio_rdma_sq_req, 576);
	SZ(virtio_rdma_rq_req, 24);
	SZ(virtio_rdma_cq_req, 48);
}

static void test_offsets(void)
{
	OFF(virtio_net_roce_config, mac, 0);
	OFF(virtio_net_roce_config, status, 6);
	OFF(virtio_net_roce_config, max_virtqueue_pairs, 8);
	OFF(virtio_net_roce_config, mtu, 10);
	OFF(virtio_net_roce_config, speed, 12);
	OFF(virtio_net_roce_config, duplex, 16);
	OFF(virtio_net_roce_config, rss_max_key_size, 17);
	OFF(virtio_net_roce_config, rss_max_indirection_table_length, 18);
	OFF(virtio_net_roce_config, supported_hash_types, 20);
	OFF(virtio_net_roce_config, max_rdma_qps, 24);
	OFF(virtio_net_roce_config, max_rdma_cqs, 28);

	OFF(virtio_rdma_ack_query_device, device_cap_flags, 0);
	OFF(virtio_rdma_ack_query_device, max_mr_size, 8);
	OFF(virtio_rdma_ack_query_device, page_size_cap, 16);
	OFF(virtio_rdma_ack_query_device, hw_ver, 24);
	OFF(virtio_rdma_ack_query_device, max_qp_wr, 28);
	OFF(virtio_rdma_ack_query_device, max_send_sge, 32);
	OFF(virtio_rdma_ack_query_device, max_recv_sge, 36);
	OFF(virtio_rdma_ack_query_device, max_sge_rd, 40);
	OFF(virtio_rdma_ack_query_device, max_cqe, 44);
	OFF(virtio_rdma_ack_query_device, max_mr, 48);
	OFF(virtio_rdma_ack_query_device, max_pd, 52);
	OFF(virtio_rdma_ack_query_device, max_qp_rd_atom, 56);
	OFF(virtio_rdma_ack_query_device, max_qp_init_rd_atom, 60);
	OFF(virtio_rdma_ack_query_device, max_ah, 64);
	OFF(virtio_rdma_ack_query_device, local_ca_ack_delay, 68);
	OFF(virtio_rdma_ack_query_device, reserved, 72);
	OFF(virtio_rdma_ack_query_port, max_msg_sz, 4);
	OFF(virtio_rdma_ack_query_port, gid1_ipv4, 12);
	OFF(virtio_rdma_ack_query_port, gid2_ipv6, 16);

	OFF(virtio_rdma_cmd_get_dma_mr, access_flags, 4);
	OFF(virtio_rdma_ack_get_dma_mr, rkey, 8);
	OFF(virtio_rdma_cmd_reg_user_mr, access_flags, 4);
	OFF(virtio_rdma_cmd_reg_user_mr, virt_addr, 8);
	OFF(virtio_rdma_cmd_reg_user_mr, length, 16);
	OFF(virtio_rdma_cmd_reg_user_mr, npages, 24);
	OFF(virtio_rdma_cmd_reg_user_mr, pages, 32);

	OFF(virtio_rdma_qp_cap, max_inline_data, 16);
	OFF(virtio_rdma_cmd_create_qp, qp_type, 4);
	OFF(virtio_rdma_cmd_create_qp, sq_sig_all, 5);
	OFF(virtio_rdma_cmd_create_qp, send_cqn, 8);
	OFF(virtio_rdma_cmd_create_qp, recv_cqn, 12);
	OFF(virtio_rdma_cmd_create_qp, cap, 16);
	OFF(virtio_rdma_cmd_create_qp, reserved, 40);

	OFF(virtio_rdma_global_route, flow_label, 16);
	OFF(virtio_rdma_global_route, sgid_index, 20);
	OFF(virtio_rdma_global_route, hop_limit, 21);
	OFF(virtio_rdma_global_route, traffic_class, 22);
	OFF(virtio_rdma_ah_attr, dmac, 24);
	OFF(virtio_rdma_ah_attr, sl, 30);
	OFF(virtio_rdma_ah_attr, flags, 31);
	OFF(virtio_rdma_ah_attr, vlan_id, 32);
	OFF(virtio_rdma_ah_attr, reserved, 34);

	OFF(virtio_rdma_cmd_modify_qp, attr_mask, 4);
	OFF(virtio_rdma_cmd_modify_qp, qp_state, 8);
	OFF(virtio_rdma_cmd_modify_qp, cur_qp_state, 9);
	OFF(virtio_rdma_cmd_modify_qp, path_mtu, 10);
	OFF(virtio_rdma_cmd_modify_qp, max_rd_atomic, 11);
	OFF(virtio_rdma_cmd_modify_qp, max_dest_rd_atomic, 12);
	OFF(virtio_rdma_cmd_modify_qp, min_rnr_timer, 13);
	OFF(virtio_rdma_cmd_modify_qp, timeout, 14);
	OFF(virtio_rdma_cmd_modify_qp, retry_cnt, 15);
	OFF(virtio_rdma_cmd_modify_qp, rnr_retry, 16);
	OFF(virtio_rdma_cmd_modify_qp, qkey, 24);
	OFF(virtio_rdma_cmd_modify_qp, rq_psn, 28);
	OFF(virtio_rdma_cmd_modify_qp, sq_psn, 32);
	OFF(virtio_rdma_cmd_modify_qp, dest_qp_num, 36);
	OFF(virtio_rdma_cmd_modify_qp, qp_access_flags, 40);
	OFF(virtio_rdma_cmd_modify_qp, rate_limit, 44);
	OFF(virtio_rdma_cmd_modify_qp, cap, 48);
	OFF(virtio_rdma_cmd_modify_qp, ah_attr, 72);
	OFF(virtio_rdma_cmd_modify_qp, reserved, 112);

	OFF(virtio_rdma_cmd_query_qp, attr_mask, 4);
	OFF(virtio_rdma_ack_query_qp, path_mtu, 1);
	OFF(virtio_rdma_ack_query_qp, sq_draining, 2);
	OFF(virtio_rdma_ack_query_qp, rnr_retry, 8);
	OFF(virtio_rdma_ack_query_qp, qkey, 16);
	OFF(virtio_rdma_ack_query_qp, rq_psn, 20);
	OFF(virtio_rdma_ack_query_qp, sq_psn, 24);
	OFF(virtio_rdma_ack_query_qp, dest_qp_num, 28);
	OFF(virtio_rdma_ack_query_qp, qp_access_flags, 32);
	OFF(virtio_rdma_ack_query_qp, rate_limit, 36);
	OFF(virtio_rdma_ack_query_qp, cap, 40);
	OFF(virtio_rdma_ack_query_qp, ah_attr, 64);
	OFF(virtio_rdma_ack_query_qp, reserved, 104);

	OFF(virtio_rdma_cmd_create_ah, ah_attr, 8);
	OFF(virtio_rdma_cmd_destroy_ah, ah, 4);
	OFF(virtio_rdma_cmd_add_gid, gid, 8);
	OFF(virtio_rdma_cmd_req_notify, flags, 4);

	OFF(virtio_rdma_sge, length, 8);
	OFF(virtio_rdma_sge, lkey, 12);
	OFF(virtio_rdma_sq_req, opcode, 8);
	OFF(virtio_rdma_sq_req, send_flags, 9);
	OFF(virtio_rdma_sq_req, imm_data, 12);
	OFF(virtio_rdma_sq_req, rdma.remote_addr, 16);
	OFF(virtio_rdma_sq_req, rdma.rkey, 24);
	OFF(virtio_rdma_sq_req, ud.remote_qpn, 16);
	OFF(virtio_rdma_sq_req, ud.remote_qkey, 20);
	OFF(virtio_rdma_sq_req, ud.ah, 24);
	OFF(virtio_rdma_sq_req, reserved, 16);
	OFF(virtio_rdma_sq_req, inline_data, 48);
	OFF(virtio_rdma_sq_req, num_sge, 560);
	OFF(virtio_rdma_sq_req, inline_len, 560);
	OFF(virtio_rdma_sq_req, reserved2, 564);
	OFF(virtio_rdma_sq_req, sg_list, 576);
	OFF(virtio_rdma_rq_req, num_sge, 8);
	OFF(virtio_rdma_rq_req, sg_list, 24);
	OFF(virtio_rdma_cq_req, status, 8);
	OFF(virtio_rdma_cq_req, opcode, 9);
	OFF(virtio_rdma_cq_req, vendor_err, 12);
	OFF(virtio_rdma_cq_req, byte_len, 16);
	OFF(virtio_rdma_cq_req, imm_data, 20);
	OFF(virtio_rdma_cq_req, qp_num, 24);
	OFF(virtio_rdma_cq_req, src_qp, 28);
	OFF(virtio_rdma_cq_req, wc_flags, 32);
	OFF(virtio_rdma_cq_req, reserved, 36);
}

/* The structures are little-endian images: build one with htole and check
 * the bytes. */
static void test_byte_images(void)
{
	struct virtio_rdma_cmd_create_qp c;
	uint8_t want[56];

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(0x11223344);
	c.qp_type = VIRTIO_IB_QPT_RC;
	c.sq_sig_all = 1;
	c.send_cqn = htole32(5);
	c.recv_cqn = htole32(6);
	c.cap.max_send_wr = htole32(0x100);
	c.cap.max_inline_data = htole32(64);
	memset(want, 0, sizeof(want));
	want[0] = 0x44; want[1] = 0x33; want[2] = 0x22; want[3] = 0x11;
	want[4] = 2; want[5] = 1;
	want[8] = 5; want[12] = 6;
	want[16] = 0x00; want[17] = 0x01;
	want[32] = 64;
	CHECK_MEM(&c, want, sizeof(want));

	/* inline_len shares the low two bytes of num_sge (little-endian). */
	struct virtio_rdma_sq_req s;
	memset(&s, 0, sizeof(s));
	s.inline_len = htole16(0x1234);
	CHECK_EQ(((uint8_t *)&s)[560], 0x34);
	CHECK_EQ(((uint8_t *)&s)[561], 0x12);
	CHECK_EQ(le32toh(s.num_sge), 0x1234);
}

static void test_qpn(void)
{
	CHECK_EQ(vrdma_qpn_make(1, 0), VRDMA_GSI_QPN);
	CHECK_EQ(vrdma_qpn_index(VRDMA_GSI_QPN), 1);
	CHECK_EQ(vrdma_qpn_gen(VRDMA_GSI_QPN), 0);
	CHECK_EQ(vrdma_qpn_make(0x3fff, 0x3ff), 0xffffff);
	CHECK_EQ(vrdma_qpn_make(5, 3), 5 | (3 << 14));
	CHECK_EQ(vrdma_qpn_index(5 | (3 << 14)), 5);
	CHECK_EQ(vrdma_qpn_gen(5 | (3 << 14)), 3);
	CHECK_EQ(vrdma_qpn_make(0x4005, 0x401), 5 | (1 << 14)); /* masked */
	CHECK_EQ(VRDMA_MAX_QP_INDEXES, 16384);
	for (uint32_t i = 0; i < VRDMA_MAX_QP_INDEXES; i += 97)
		for (uint32_t g = 0; g <= VRDMA_QPN_GEN_MASK; g += 31) {
			uint32_t q = vrdma_qpn_make(i, g);
			CHECK(q <= VRDMA_QPN_MASK);
			CHECK_EQ(vrdma_qpn_index(q), i);
			CHECK_EQ(vrdma_qpn_gen(q), g);
		}
}

static void test_vq_layout(void)
{
	uint32_t idx;

	/* N = 1, M = 4, L = 3: 0 rx, 1 tx, 2 ctrl, 3..6 CQs, 7.. QP pairs. */
	CHECK_EQ(vrdma_vq_ctrl(1), 2);
	CHECK_EQ(vrdma_vq_cq(1, 0), 3);
	CHECK_EQ(vrdma_vq_cq(1, 3), 6);
	CHECK_EQ(vrdma_vq_sq(1, 4, 0), 7);
	CHECK_EQ(vrdma_vq_rq(1, 4, 0), 8);
	CHECK_EQ(vrdma_vq_sq(1, 4, 2), 11);
	CHECK_EQ(vrdma_vq_rq(1, 4, 2), 12);
	CHECK_EQ(vrdma_vq_count(1, 4, 3), 13);

	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 0, &idx), VRDMA_VQ_NET_RX);
	CHECK_EQ(idx, 0);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 1, &idx), VRDMA_VQ_NET_TX);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 2, &idx), VRDMA_VQ_CTRL);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 3, &idx), VRDMA_VQ_CQ);
	CHECK_EQ(idx, 0);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 6, &idx), VRDMA_VQ_CQ);
	CHECK_EQ(idx, 3);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 7, &idx), VRDMA_VQ_SQ);
	CHECK_EQ(idx, 0);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 12, &idx), VRDMA_VQ_RQ);
	CHECK_EQ(idx, 2);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 13, &idx), VRDMA_VQ_INVALID);
	CHECK_EQ(vrdma_vq_decode(1, 4, 3, 0xffffffff, &idx), VRDMA_VQ_INVALID);

	/* Round trip over a full-size layout (N = 1, M = L = 16384). */
	uint32_t n = 1, m = 16384, l = 16384;
	for (uint32_t c = 0; c < m; c++) {
		CHECK(vrdma_vq_decode(n, m, l, vrdma_vq_cq(n, c), &idx) == VRDMA_VQ_CQ && idx == c);
	}
	for (uint32_t i = 0; i < l; i++) {
		CHECK(vrdma_vq_decode(n, m, l, vrdma_vq_sq(n, m, i), &idx) == VRDMA_VQ_SQ && idx == i);
		CHECK(vrdma_vq_decode(n, m, l, vrdma_vq_rq(n, m, i), &idx) == VRDMA_VQ_RQ && idx == i);
	}
	CHECK_EQ(vrdma_vq_count(n, m, l), 3 + 16384 + 32768);
	CHECK_EQ(vrdma_vq_decode(n, m, l, vrdma_vq_count(n, m, l), &idx), VRDMA_VQ_INVALID);
	/* Two net queue pairs shift everything by two. */
	CHECK_EQ(vrdma_vq_decode(2, 4, 3, 3, &idx), VRDMA_VQ_NET_TX);
	CHECK_EQ(idx, 1);
	CHECK_EQ(vrdma_vq_decode(2, 4, 3, 4, &idx), VRDMA_VQ_CTRL);
	CHECK_EQ(vrdma_vq_cq(2, 0), 5);
}

/* ---- vrdma extensions (VIRTIO_NET_F_ROCE_EXT) ---------------------------- */

static void test_ext_constants(void)
{
	CHECK_EQ(VIRTIO_NET_F_ROCE_EXT, 4);
	CHECK(VIRTIO_NET_F_ROCE_EXT != VIRTIO_NET_F_ROCE);
	CHECK(VIRTIO_NET_F_ROCE_EXT != VIRTIO_NET_F_CTRL_VQ);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_CREATE_SRQ, 18);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ, 19);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, 20);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, 21);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_ALLOC_MR, 22);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_ALLOC_MW, 23);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, 24);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, 25);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_RESIZE_QP, 26);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, 27);
	CHECK_EQ(VIRTIO_NET_CTRL_ROCE_EXT_NUM_CMDS, 28);

	/* device_cap_flags: distinct bits above the RFC's bit 0 */
	CHECK_EQ(VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN, 1);
	CHECK_EQ(VIRTIO_IB_DEVICE_SRQ, 2);
	CHECK_EQ(VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS, 4);
	CHECK_EQ(VIRTIO_IB_DEVICE_MEM_WINDOW, 8);
	CHECK_EQ(VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B, 16);
	CHECK_EQ(VIRTIO_IB_DEVICE_RESIZE_CQ, 32);
	CHECK_EQ(VIRTIO_IB_DEVICE_RESIZE_MAX_WR, 64);
	CHECK_EQ(VIRTIO_IB_DEVICE_CAP_EXT_MASK,
		 VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN | VIRTIO_IB_DEVICE_SRQ |
		 VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS | VIRTIO_IB_DEVICE_MEM_WINDOW |
		 VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B | VIRTIO_IB_DEVICE_RESIZE_CQ |
		 VIRTIO_IB_DEVICE_RESIZE_MAX_WR);
	CHECK_EQ(VIRTIO_IB_ATOMIC_NONE, 0);
	CHECK_EQ(VIRTIO_IB_ATOMIC_HCA, 1);
	CHECK_EQ(VIRTIO_IB_ATOMIC_GLOB, 2);

	CHECK_EQ(VIRTIO_IB_ACCESS_REMOTE_ATOMIC, 8);
	CHECK_EQ(VIRTIO_IB_ACCESS_MW_BIND, 16);
	CHECK_EQ(VIRTIO_IB_ACCESS_EXT_MASK, 0x1f);
	CHECK_EQ(VIRTIO_IB_MW_ACCESS_MASK, 0xe);

	/* WR opcodes: the virtio-rdma RFC (v1) / libibverbs numbering */
	CHECK_EQ(VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, 5);
	CHECK_EQ(VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, 6);
	CHECK_EQ(VIRTIO_IB_WR_LOCAL_INV, 7);
	CHECK_EQ(VIRTIO_IB_WR_BIND_MW, 8);
	CHECK_EQ(VIRTIO_IB_WR_SEND_WITH_INV, 9);
	CHECK_EQ(VIRTIO_IB_WR_REG_MR, 0x20);
	CHECK_EQ(VIRTIO_IB_WR_RDMA_READ_WITH_INV_RSVD, 11); /* still reserved */

	CHECK_EQ(VIRTIO_IB_WC_COMP_SWAP, 5);
	CHECK_EQ(VIRTIO_IB_WC_FETCH_ADD, 6);
	CHECK_EQ(VIRTIO_IB_WC_BIND_MW, 7);
	CHECK_EQ(VIRTIO_IB_WC_LOCAL_INV, 8);
	CHECK_EQ(VIRTIO_IB_WC_REG_MR, 9);
	CHECK_EQ(VIRTIO_IB_WC_MW_BIND_ERR, 16);
	CHECK_EQ(VIRTIO_IB_WC_WITH_INV, 4);
	CHECK_EQ(VIRTIO_IB_WC_WITH_INV & (VIRTIO_IB_WC_GRH | VIRTIO_IB_WC_WITH_IMM), 0);

	CHECK_EQ(VIRTIO_IB_KEY_CONSUMER_MASK, 0xff);
	CHECK_EQ(VIRTIO_IB_MR_TYPE_MEM_REG, 0);
	CHECK_EQ(VIRTIO_IB_MW_TYPE_1, 1);
	CHECK_EQ(VIRTIO_IB_MW_TYPE_2, 2);
	CHECK_EQ(VIRTIO_IB_SRQ_MAX_WR, 1);
	CHECK_EQ(VIRTIO_IB_SRQ_LIMIT, 2);
	CHECK_EQ(VIRTIO_IB_QP_CREATE_SRQ, 1);

	/* events: the values of enum ibv_event_type */
	CHECK_EQ(VIRTIO_IB_EVENT_CQ_ERR, 0);
	CHECK_EQ(VIRTIO_IB_EVENT_QP_FATAL, 1);
	CHECK_EQ(VIRTIO_IB_EVENT_QP_REQ_ERR, 2);
	CHECK_EQ(VIRTIO_IB_EVENT_QP_ACCESS_ERR, 3);
	CHECK_EQ(VIRTIO_IB_EVENT_COMM_EST, 4);
	CHECK_EQ(VIRTIO_IB_EVENT_SQ_DRAINED, 5);
	CHECK_EQ(VIRTIO_IB_EVENT_DEVICE_FATAL, 8);
	CHECK_EQ(VIRTIO_IB_EVENT_PORT_ACTIVE, 9);
	CHECK_EQ(VIRTIO_IB_EVENT_PORT_ERR, 10);
	CHECK_EQ(VIRTIO_IB_EVENT_SRQ_ERR, 14);
	CHECK_EQ(VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED, 15);
	CHECK_EQ(VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED, 16);
	CHECK_EQ(VIRTIO_IB_EVENT_GID_CHANGE, 18);
	CHECK_EQ(VIRTIO_IB_EVENT_NUM, 19);
}

static void test_ext_sizes(void)
{
	SZ(virtio_net_roce_ext_config, 40);
	SZ(virtio_rdma_event, 16);
	SZ(virtio_rdma_ack_query_device_ext, 128);
	SZ(virtio_rdma_ack_query_port_ext, 32);
	SZ(virtio_rdma_cmd_create_qp_ext, 56);
	SZ(virtio_rdma_ack_query_qp_ext, 120);
	SZ(virtio_rdma_cmd_create_srq, 16);
	SZ(virtio_rdma_ack_create_srq, 16);
	SZ(virtio_rdma_cmd_modify_srq, 16);
	SZ(virtio_rdma_cmd_query_srq, 4);
	SZ(virtio_rdma_ack_query_srq, 16);
	SZ(virtio_rdma_cmd_destroy_srq, 4);
	SZ(virtio_rdma_cmd_alloc_mr, 16);
	SZ(virtio_rdma_ack_alloc_mr, 12);
	SZ(virtio_rdma_cmd_alloc_mw, 8);
	SZ(virtio_rdma_ack_alloc_mw, 8);
	SZ(virtio_rdma_cmd_dealloc_mw, 4);
	SZ(virtio_rdma_cmd_resize_cq, 8);
	SZ(virtio_rdma_ack_resize_cq, 4);
	SZ(virtio_rdma_cmd_resize_qp, 32);
	SZ(virtio_rdma_ack_resize_qp, 24);
	SZ(virtio_rdma_cmd_query_pkey, 4);
	SZ(virtio_rdma_ack_query_pkey, 4);
	SZ(virtio_rdma_sq_req_ext, 576);
	SZ(virtio_rdma_cq_req_ext, 48);
	/* Extended views are the same size as the RFC structures they reread. */
	CHECK_EQ(sizeof(struct virtio_rdma_ack_query_device_ext),
		 sizeof(struct virtio_rdma_ack_query_device));
	CHECK_EQ(sizeof(struct virtio_rdma_ack_query_port_ext),
		 sizeof(struct virtio_rdma_ack_query_port));
	CHECK_EQ(sizeof(struct virtio_rdma_cmd_create_qp_ext),
		 sizeof(struct virtio_rdma_cmd_create_qp));
	CHECK_EQ(sizeof(struct virtio_rdma_ack_query_qp_ext),
		 sizeof(struct virtio_rdma_ack_query_qp));
	CHECK_EQ(sizeof(struct virtio_rdma_sq_req_ext), sizeof(struct virtio_rdma_sq_req));
	CHECK_EQ(sizeof(struct virtio_rdma_cq_req_ext), sizeof(struct virtio_rdma_cq_req));
	CHECK_EQ(sizeof(struct virtio_rdma_ack_alloc_mr),
		 sizeof(struct virtio_rdma_ack_reg_user_mr));
}

static void test_ext_offsets(void)
{
	/* Every field of a seed structure keeps its offset in the _ext view. */
	OFF(virtio_net_roce_ext_config, mac, 0);
	OFF(virtio_net_roce_ext_config, status, 6);
	OFF(virtio_net_roce_ext_config, mtu, 10);
	OFF(virtio_net_roce_ext_config, supported_hash_types, 20);
	OFF(virtio_net_roce_ext_config, max_rdma_qps, 24);
	OFF(virtio_net_roce_ext_config, max_rdma_cqs, 28);
	OFF(virtio_net_roce_ext_config, max_rdma_srqs, 32);
	OFF(virtio_net_roce_ext_config, ext_reserved, 36);

	OFF(virtio_rdma_event, type, 0);
	OFF(virtio_rdma_event, id, 4);
	OFF(virtio_rdma_event, vendor_err, 8);
	OFF(virtio_rdma_event, reserved, 12);

	OFF(virtio_rdma_ack_query_device_ext, device_cap_flags, 0);
	OFF(virtio_rdma_ack_query_device_ext, max_mr_size, 8);
	OFF(virtio_rdma_ack_query_device_ext, page_size_cap, 16);
	OFF(virtio_rdma_ack_query_device_ext, hw_ver, 24);
	OFF(virtio_rdma_ack_query_device_ext, max_qp_wr, 28);
	OFF(virtio_rdma_ack_query_device_ext, max_cqe, 44);
	OFF(virtio_rdma_ack_query_device_ext, max_qp_rd_atom, 56);
	OFF(virtio_rdma_ack_query_device_ext, max_ah, 64);
	OFF(virtio_rdma_ack_query_device_ext, local_ca_ack_delay, 68);
	OFF(virtio_rdma_ack_query_device_ext, max_srq_wr, 72);
	OFF(virtio_rdma_ack_query_device_ext, max_srq_sge, 76);
	OFF(virtio_rdma_ack_query_device_ext, max_mw, 80);
	OFF(virtio_rdma_ack_query_device_ext, max_fast_reg_page_list_len, 84);
	OFF(virtio_rdma_ack_query_device_ext, max_pkeys, 88);
	OFF(virtio_rdma_ack_query_device_ext, atomic_cap, 90);
	OFF(virtio_rdma_ack_query_device_ext, padding2, 91);
	OFF(virtio_rdma_ack_query_device_ext, reserved, 92);
	CHECK_EQ(offsetof(struct virtio_rdma_ack_query_device_ext, max_srq_wr),
		 offsetof(struct virtio_rdma_ack_query_device, reserved));

	OFF(virtio_rdma_ack_query_port_ext, max_msg_sz, 4);
	OFF(virtio_rdma_ack_query_port_ext, pkey_tbl_len, 8);
	OFF(virtio_rdma_ack_query_port_ext, gid1_ipv4, 12);
	OFF(virtio_rdma_ack_query_port_ext, gid2_ipv6, 16);

	OFF(virtio_rdma_cmd_create_qp_ext, qp_type, 4);
	OFF(virtio_rdma_cmd_create_qp_ext, sq_sig_all, 5);
	OFF(virtio_rdma_cmd_create_qp_ext, send_cqn, 8);
	OFF(virtio_rdma_cmd_create_qp_ext, recv_cqn, 12);
	OFF(virtio_rdma_cmd_create_qp_ext, cap, 16);
	OFF(virtio_rdma_cmd_create_qp_ext, ext_flags, 40);
	OFF(virtio_rdma_cmd_create_qp_ext, srqn, 44);
	OFF(virtio_rdma_cmd_create_qp_ext, reserved, 48);
	CHECK_EQ(offsetof(struct virtio_rdma_cmd_create_qp_ext, ext_flags),
		 offsetof(struct virtio_rdma_cmd_create_qp, reserved));

	OFF(virtio_rdma_ack_query_qp_ext, qkey, 16);
	OFF(virtio_rdma_ack_query_qp_ext, cap, 40);
	OFF(virtio_rdma_ack_query_qp_ext, ah_attr, 64);
	OFF(virtio_rdma_ack_query_qp_ext, ext_flags, 104);
	OFF(virtio_rdma_ack_query_qp_ext, srqn, 108);
	OFF(virtio_rdma_ack_query_qp_ext, reserved, 112);
	CHECK_EQ(offsetof(struct virtio_rdma_ack_query_qp_ext, ext_flags),
		 offsetof(struct virtio_rdma_ack_query_qp, reserved));

	OFF(virtio_rdma_cmd_create_srq, max_wr, 4);
	OFF(virtio_rdma_cmd_create_srq, max_sge, 8);
	OFF(virtio_rdma_ack_create_srq, max_wr, 4);
	OFF(virtio_rdma_ack_create_srq, max_sge, 8);
	OFF(virtio_rdma_cmd_modify_srq, attr_mask, 4);
	OFF(virtio_rdma_cmd_modify_srq, max_wr, 8);
	OFF(virtio_rdma_cmd_modify_srq, srq_limit, 12);
	OFF(virtio_rdma_ack_query_srq, max_sge, 4);
	OFF(virtio_rdma_ack_query_srq, srq_limit, 8);
	OFF(virtio_rdma_cmd_alloc_mr, mr_type, 4);
	OFF(virtio_rdma_cmd_alloc_mr, max_num_sg, 8);
	OFF(virtio_rdma_ack_alloc_mr, lkey, 4);
	OFF(virtio_rdma_ack_alloc_mr, rkey, 8);
	OFF(virtio_rdma_cmd_alloc_mw, mw_type, 4);
	OFF(virtio_rdma_ack_alloc_mw, rkey, 4);
	OFF(virtio_rdma_cmd_resize_cq, cqe, 4);
	OFF(virtio_rdma_cmd_resize_qp, cap, 8);
	OFF(virtio_rdma_ack_resize_qp, cap, 0);
	OFF(virtio_rdma_ack_query_pkey, pkey, 0);

	OFF(virtio_rdma_sq_req_ext, opcode, 8);
	OFF(virtio_rdma_sq_req_ext, send_flags, 9);
	OFF(virtio_rdma_sq_req_ext, imm_data, 12);
	OFF(virtio_rdma_sq_req_ext, invalidate_rkey, 12);
	OFF(virtio_rdma_sq_req_ext, rdma.remote_addr, 16);
	OFF(virtio_rdma_sq_req_ext, rdma.rkey, 24);
	OFF(virtio_rdma_sq_req_ext, ud.remote_qpn, 16);
	OFF(virtio_rdma_sq_req_ext, ud.remote_qkey, 20);
	OFF(virtio_rdma_sq_req_ext, ud.ah, 24);
	OFF(virtio_rdma_sq_req_ext, atomic.remote_addr, 16);
	OFF(virtio_rdma_sq_req_ext, atomic.compare_add, 24);
	OFF(virtio_rdma_sq_req_ext, atomic.swap, 32);
	OFF(virtio_rdma_sq_req_ext, atomic.rkey, 40);
	OFF(virtio_rdma_sq_req_ext, bind_mw.addr, 16);
	OFF(virtio_rdma_sq_req_ext, bind_mw.length, 24);
	OFF(virtio_rdma_sq_req_ext, bind_mw.mr_lkey, 32);
	OFF(virtio_rdma_sq_req_ext, bind_mw.rkey, 36);
	OFF(virtio_rdma_sq_req_ext, bind_mw.access, 40);
	OFF(virtio_rdma_sq_req_ext, reg.iova, 16);
	OFF(virtio_rdma_sq_req_ext, reg.length, 24);
	OFF(virtio_rdma_sq_req_ext, reg.page_list, 32);
	OFF(virtio_rdma_sq_req_ext, reg.key, 40);
	OFF(virtio_rdma_sq_req_ext, reg.access, 44);
	OFF(virtio_rdma_sq_req_ext, reserved, 16);
	OFF(virtio_rdma_sq_req_ext, inline_data, 48);
	OFF(virtio_rdma_sq_req_ext, num_sge, 560);
	OFF(virtio_rdma_sq_req_ext, inline_len, 560);
	OFF(virtio_rdma_sq_req_ext, reserved2, 564);
	OFF(virtio_rdma_sq_req_ext, sg_list, 576);

	OFF(virtio_rdma_cq_req_ext, status, 8);
	OFF(virtio_rdma_cq_req_ext, opcode, 9);
	OFF(virtio_rdma_cq_req_ext, vendor_err, 12);
	OFF(virtio_rdma_cq_req_ext, byte_len, 16);
	OFF(virtio_rdma_cq_req_ext, imm_data, 20);
	OFF(virtio_rdma_cq_req_ext, invalidated_rkey, 20);
	OFF(virtio_rdma_cq_req_ext, qp_num, 24);
	OFF(virtio_rdma_cq_req_ext, src_qp, 28);
	OFF(virtio_rdma_cq_req_ext, wc_flags, 32);
	OFF(virtio_rdma_cq_req_ext, reserved, 36);
}

/* Byte images: an atomic request and a CREATE_QP with an SRQ read through
 * the RFC structures give the same bytes. */
static void test_ext_byte_images(void)
{
	struct virtio_rdma_sq_req_ext x;
	const uint8_t *b = (const uint8_t *)&x;

	memset(&x, 0, sizeof(x));
	x.opcode = VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP;
	x.atomic.remote_addr = htole64(0x1122334455667788ull);
	x.atomic.compare_add = htole64(1);
	x.atomic.swap = htole64(0x0200000000000000ull);
	x.atomic.rkey = htole32(0xa1b2c3d4);
	CHECK_EQ(b[8], 5);
	CHECK_EQ(b[16], 0x88);
	CHECK_EQ(b[23], 0x11);
	CHECK_EQ(b[24], 1);
	CHECK_EQ(b[39], 2);
	CHECK_EQ(b[40], 0xd4);
	CHECK_EQ(b[43], 0xa1);
	/* The RFC's rdma view of the same bytes: remote_addr is shared. */
	struct virtio_rdma_sq_req seed;
	memcpy(&seed, &x, sizeof(seed));
	CHECK_EQ(le64toh(seed.rdma.remote_addr), 0x1122334455667788ull);

	x.invalidate_rkey = htole32(0x01020304);
	CHECK_EQ(b[12], 4);
	CHECK_EQ(b[15], 1);

	struct virtio_rdma_cmd_create_qp_ext q;
	struct virtio_rdma_cmd_create_qp qs;
	memset(&q, 0, sizeof(q));
	q.ext_flags = htole32(VIRTIO_IB_QP_CREATE_SRQ);
	q.srqn = htole32(7);
	memcpy(&qs, &q, sizeof(qs));
	CHECK_EQ(le32toh(qs.reserved[0]), VIRTIO_IB_QP_CREATE_SRQ);
	CHECK_EQ(le32toh(qs.reserved[1]), 7);

	/* An RFC-only driver's CREATE_QP (reserved all zero) means "no SRQ". */
	memset(&qs, 0, sizeof(qs));
	memcpy(&q, &qs, sizeof(q));
	CHECK_EQ(q.ext_flags, 0);

	struct virtio_rdma_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = htole32(VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	ev.id = htole32(3);
	CHECK_EQ(((uint8_t *)&ev)[0], 15);
	CHECK_EQ(((uint8_t *)&ev)[4], 3);
}

static void test_ext_vq_layout(void)
{
	uint32_t idx;

	/* N = 1, M = 4, L = 3, S = 2: ... 12 last RQ, 13 eventq, 14-15 SRQs. */
	CHECK_EQ(vrdma_vq_eventq(1, 4, 3), 13);
	CHECK_EQ(vrdma_vq_eventq(1, 4, 3), vrdma_vq_count(1, 4, 3));
	CHECK_EQ(vrdma_vq_srq(1, 4, 3, 0), 14);
	CHECK_EQ(vrdma_vq_srq(1, 4, 3, 1), 15);
	CHECK_EQ(vrdma_vq_count_ext(1, 4, 3, 2), 16);
	CHECK_EQ(vrdma_vq_count_ext(1, 4, 3, 0), vrdma_vq_count(1, 4, 3) + 1);

	/* The RFC layout is a prefix: every seed index decodes the same. */
	for (uint32_t vq = 0; vq < vrdma_vq_count(1, 4, 3); vq++) {
		uint32_t i1, i2;
		int k1 = vrdma_vq_decode(1, 4, 3, vq, &i1);
		int k2 = vrdma_vq_decode_ext(1, 4, 3, 2, vq, &i2);
		CHECK_EQ(k1, k2);
		CHECK_EQ(i1, i2);
	}
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 2, 13, &idx), VRDMA_VQ_EVENTQ);
	CHECK_EQ(idx, 0);
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 2, 14, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, 0);
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 2, 15, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, 1);
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 2, 16, &idx), VRDMA_VQ_INVALID);
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 0, 14, &idx), VRDMA_VQ_INVALID);
	CHECK_EQ(vrdma_vq_decode_ext(1, 4, 3, 2, 0xffffffff, &idx), VRDMA_VQ_INVALID);
	/* Kinds of the extension do not collide with the RFC's. */
	CHECK((int)VRDMA_VQ_EVENTQ > (int)VRDMA_VQ_RQ);
	CHECK(VRDMA_VQ_SRQ > VRDMA_VQ_EVENTQ);

	/* Largest layout: N = 1, M = L = 16384 leaves room for 16380 SRQs
	 * within virtio's 65536 virtqueues. */
	uint32_t n = 1, m = 16384, l = 16384;
	uint32_t s = VIRTIO_NET_ROCE_MAX_VQS - vrdma_vq_count_ext(n, m, l, 0);
	CHECK_EQ(s, 16380);
	CHECK_EQ(vrdma_vq_count_ext(n, m, l, s), VIRTIO_NET_ROCE_MAX_VQS);
	CHECK_EQ(vrdma_vq_srq(n, m, l, s - 1), 65535);
	CHECK_EQ(vrdma_vq_decode_ext(n, m, l, s, 65535, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, s - 1);
	CHECK_EQ(vrdma_vq_decode_ext(n, m, l, s, vrdma_vq_eventq(n, m, l), &idx),
		 VRDMA_VQ_EVENTQ);
	for (uint32_t i = 0; i < s; i += 7)
		CHECK(vrdma_vq_decode_ext(n, m, l, s, vrdma_vq_srq(n, m, l, i), &idx) ==
		      VRDMA_VQ_SRQ && idx == i);
}

int main(void)
{
	TEST_PROGRAM("test_abi");
	RUN(test_constants);
	RUN(test_sizes);
	RUN(test_offsets);
	RUN(test_byte_images);
	RUN(test_qpn);
	RUN(test_vq_layout);
	RUN(test_ext_constants);
	RUN(test_ext_sizes);
	RUN(test_ext_offsets);
	RUN(test_ext_byte_images);
	RUN(test_ext_vq_layout);
	return TEST_DONE();
}
