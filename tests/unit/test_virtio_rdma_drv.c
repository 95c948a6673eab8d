/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma's virtio-rdma device model (src/libvrdma/virtio_rdma.c):
 *  - the encoders and decoders against the wire layout of
 *    include/vrdma/virtio_rdma.h (attribute masks, completion status and
 *    opcodes, send / receive elements with SGEs, inline data, atomics, UD
 *    address vectors, REG_MR, RDMA_READ_WITH_INV; the configuration as
 *    QUERY_DEVICE; MODIFY_QP);
 *  - libvrdma against two in-process virtio-rdma devices on one switch:
 *    detection, device and per-port attributes, GID 1, an RC connection
 *    with SEND, RDMA WRITE, READ and FETCH_AND_ADD compared byte for byte,
 *    fast registration (vrdma_mr_alloc + REG_MR: MAP_MR_SG) read remotely
 *    through its new key, RDMA_READ_WITH_INV invalidating a local key, UD
 *    with an address handle the library keeps, and the clean refusals
 *    (SRQ, memory windows, RDMA_READ_WITH_INV on a UD QP).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"
#include "common/loop.h"
#include "backend/virtio_rdma_dev.h"
#include "libvrdma/rdma_priv.h"
#include "libvrdma/virtio_rdma_codec.h"
#include "port/port.h"
#include "vrdma/vrdma.h"
#include "vrdma/vrdma_rdma.h"

/* ---- codec -------------------------------------------------------------------- */

static void test_values(void)
{
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_STATE), VIRTIO_RDMA_DEV_QP_STATE);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_ACCESS_FLAGS), VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_QKEY), VIRTIO_RDMA_DEV_QP_QKEY);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_AV), VIRTIO_RDMA_DEV_QP_AV);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_MIN_RNR_TIMER), VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_DEST_QPN), VIRTIO_RDMA_DEV_QP_DEST_QPN);
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_RATE_LIMIT), VIRTIO_RDMA_DEV_QP_RATE_LIMIT);
	/* every bit has its IB counterpart; PKEY_INDEX, PORT, ALT_PATH,
	 * PATH_MIG_STATE and EN_SQD_ASYNC_NOTIFY are never sent */
	CHECK_EQ(vrdma_vrd_attr_mask(VIRTIO_IB_QP_ATTR_MASK_ALL),
		 VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_CUR_STATE |
			 VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS | VIRTIO_RDMA_DEV_QP_QKEY |
			 VIRTIO_RDMA_DEV_QP_AV | VIRTIO_RDMA_DEV_QP_PATH_MTU |
			 VIRTIO_RDMA_DEV_QP_TIMEOUT | VIRTIO_RDMA_DEV_QP_RETRY_CNT |
			 VIRTIO_RDMA_DEV_QP_RNR_RETRY | VIRTIO_RDMA_DEV_QP_RQ_PSN |
			 VIRTIO_RDMA_DEV_QP_MAX_QP_RD_ATOMIC | VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER |
			 VIRTIO_RDMA_DEV_QP_SQ_PSN | VIRTIO_RDMA_DEV_QP_MAX_DEST_RD_ATOMIC |
			 VIRTIO_RDMA_DEV_QP_CAP | VIRTIO_RDMA_DEV_QP_DEST_QPN |
			 VIRTIO_RDMA_DEV_QP_RATE_LIMIT);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_SUCCESS), VIRTIO_IB_WC_SUCCESS);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_LOC_PROT_ERR), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_WR_FLUSH_ERR), VIRTIO_IB_WC_WR_FLUSH_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR), VIRTIO_IB_WC_REM_ACCESS_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_RNR_RETRY_EXC_ERR),
		 VIRTIO_IB_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_MW_BIND_ERR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(VIRTIO_RDMA_DEV_WC_INV_EECN_ERR), VIRTIO_IB_WC_GENERAL_ERR);
	CHECK_EQ(vrdma_vrd_wc_status(200), VIRTIO_IB_WC_GENERAL_ERR);
	CHECK_EQ(vrdma_vrd_wc_opcode(VIRTIO_RDMA_DEV_WC_OP_RECV), VIRTIO_IB_WC_RECV);
	CHECK_EQ(vrdma_vrd_wc_opcode(VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM),
		 VIRTIO_IB_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(vrdma_vrd_wc_opcode(VIRTIO_RDMA_DEV_WC_OP_COMP_SWAP), VIRTIO_IB_WC_COMP_SWAP);
	CHECK_EQ(vrdma_vrd_wc_opcode(VIRTIO_RDMA_DEV_WC_OP_LOCAL_INV), VIRTIO_IB_WC_LOCAL_INV);
	CHECK_EQ(vrdma_vrd_wc_opcode(VIRTIO_RDMA_DEV_WC_OP_REG_MR), VIRTIO_IB_WC_REG_MR);
	CHECK_EQ(vrdma_vrd_wc_opcode(7), 0xff);
}

static void test_send_elements(void)
{
	struct vrdma_sge sg[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	struct virtio_rdma_dev_sq_req q;
	struct virtio_rdma_dev_sge s;
	struct vrdma_send_wr wr;
	uint8_t slot[1024];
	char data[40] = "inline bytes for the element";
	struct vrdma_sge isg = { (uintptr_t)data, 28, 0 };
	uint32_t n;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1122334455667788ull;
	wr.opcode = VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_FENCE;
	wr.imm_data = htonl(0xabcdef01);
	wr.rdma.remote_addr = 0x7000123;
	wr.rdma.rkey = 0x4321;
	wr.num_sge = 2;
	wr.sg_list = sg;
	n = vrdma_vrd_sq_encode(NULL, VIRTIO_IB_QPT_RC, 3, slot, &wr, 300);
	CHECK_EQ(n, 75 + 32);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.num_sge), 2);
	CHECK_EQ(le32toh(q.opcode), VIRTIO_RDMA_DEV_WR_RDMA_WRITE_WITH_IMM);
	CHECK_EQ(le32toh(q.send_flags), VIRTIO_RDMA_DEV_SEND_SIGNALED | VIRTIO_RDMA_DEV_SEND_FENCE);
	CHECK_EQ(le64toh(q.wr_id), 0x1122334455667788ull);
	CHECK_EQ(q.ex.imm_data, htonl(0xabcdef01));
	CHECK_EQ(le64toh(q.wr.rdma.remote_addr), 0x7000123);
	CHECK_EQ(le32toh(q.wr.rdma.rkey), 0x4321);
	memcpy(&s, slot + 75 + 16, sizeof(s));
	CHECK_EQ(le64toh(s.addr), 0x2000);
	CHECK_EQ(le32toh(s.length), 200);
	CHECK_EQ(le32toh(s.lkey), 0x22);

	/* inline: the data after the fixed part, num_sge = its length */
	wr.opcode = VIRTIO_IB_WR_SEND;
	wr.send_flags = VIRTIO_IB_SEND_INLINE;
	wr.num_sge = 1;
	wr.sg_list = &isg;
	n = vrdma_vrd_sq_encode(NULL, VIRTIO_IB_QPT_RC, 3, slot, &wr, 28);
	CHECK_EQ(n, 75 + 28);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.num_sge), 28);
	CHECK_EQ(le32toh(q.send_flags), VIRTIO_RDMA_DEV_SEND_INLINE);
	CHECK_MEM(slot + 75, data, 28);

	/* atomic */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP;
	wr.atomic.remote_addr = 0x8000;
	wr.atomic.compare_add = 5;
	wr.atomic.swap = 6;
	wr.atomic.rkey = 7;
	wr.num_sge = 1;
	wr.sg_list = sg;
	n = vrdma_vrd_sq_encode(NULL, VIRTIO_IB_QPT_RC, 3, slot, &wr, 8);
	CHECK_EQ(n, 75 + 16);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.opcode), VIRTIO_RDMA_DEV_WR_ATOMIC_CMP_AND_SWP);
	CHECK_EQ(le64toh(q.wr.atomic.remote_addr), 0x8000);
	CHECK_EQ(le64toh(q.wr.atomic.compare_add), 5);
	CHECK_EQ(le64toh(q.wr.atomic.swap), 6);
	CHECK_EQ(le32toh(q.wr.atomic.rkey), 7);

	/* REG_MR and RDMA_READ_WITH_INV */
	memset(&wr, 0, sizeof(wr));
	wr.opcode = VIRTIO_IB_WR_REG_MR;
	wr.reg.mrn = 9;
	wr.reg.key = 0x905;
	wr.reg.access = VIRTIO_IB_ACCESS_REMOTE_READ;
	n = vrdma_vrd_sq_encode(NULL, VIRTIO_IB_QPT_RC, 3, slot, &wr, 0);
	CHECK_EQ(n, 75);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.opcode), VIRTIO_RDMA_DEV_WR_REG_MR);
	CHECK_EQ(le32toh(q.num_sge), 0);
	CHECK_EQ(le32toh(q.wr.reg.mrn), 9);
	CHECK_EQ(le32toh(q.wr.reg.key), 0x905);
	CHECK_EQ(le32toh(q.wr.reg.access), VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = VRDMA_WR_RDMA_READ_WITH_INV;
	wr.invalidate_rkey = 0x1234;
	wr.rdma.remote_addr = 0x5000;
	wr.rdma.rkey = 0x77;
	wr.num_sge = 1;
	wr.sg_list = sg;
	n = vrdma_vrd_sq_encode(NULL, VIRTIO_IB_QPT_RC, 3, slot, &wr, 100);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(n, 75 + 16);
	CHECK_EQ(le32toh(q.opcode), VIRTIO_RDMA_DEV_WR_RDMA_READ_WITH_INV);
	CHECK_EQ(le32toh(q.ex.invalidate_rkey), 0x1234);
	CHECK_EQ(le64toh(q.wr.rdma.remote_addr), 0x5000);
	CHECK_EQ(le32toh(q.wr.rdma.rkey), 0x77);
}

static void test_ud_element(void)
{
	struct vrdma_rdma_ah ahs[3];
	struct vrdma_rdma r;
	struct virtio_rdma_dev_sq_req q;
	struct vrdma_sge sg = { 0x1000, 64, 0x11 };
	struct vrdma_send_wr wr;
	uint8_t slot[256];

	memset(&r, 0, sizeof(r));
	memset(ahs, 0, sizeof(ahs));
	r.ahs = ahs;
	r.ahs_cap = 3;
	ahs[2].live = true;
	ahs[2].pdn = 4;
	ahs[2].av.grh.dgid[15] = 0x42;
	ahs[2].av.grh.flow_label = 0x12345;
	ahs[2].av.grh.traffic_class = 0xa5;
	ahs[2].av.grh.sgid_index = 1;
	ahs[2].av.grh.hop_limit = 64;
	ahs[2].av.sl = 3;
	ahs[2].av.dmac[0] = 0x52;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = VIRTIO_IB_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(9);
	wr.ud.remote_qpn = 0x123;
	wr.ud.remote_qkey = 0x11111111;
	wr.ud.ah = 2;
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(vrdma_vrd_sq_encode(&r, VIRTIO_IB_QPT_UD, 4, slot, &wr, 64), 75 + 16);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.wr.ud.remote_qpn), 0x123);
	CHECK_EQ(le32toh(q.wr.ud.remote_qkey), 0x11111111);
	CHECK_EQ(le32toh(q.wr.ud.av.port), 1);
	CHECK_EQ(le32toh(q.wr.ud.av.pdn), 4);
	CHECK_EQ(le32toh(q.wr.ud.av.sl_tclass_flowlabel), (3u << 28) | (0xa5u << 20) | 0x12345);
	CHECK_EQ(q.wr.ud.av.dgid[15], 0x42);
	CHECK_EQ(q.wr.ud.av.gid_index, 1);
	CHECK_EQ(q.wr.ud.av.hop_limit, 64);
	CHECK_EQ(q.wr.ud.av.dmac[0], 0x52);
	CHECK_EQ(q.ex.imm_data, htonl(9));
}

static void test_recv_and_completion(void)
{
	struct vrdma_sge sg[2] = { { 0x3000, 10, 1 }, { 0x4000, 20, 2 } };
	struct vrdma_recv_wr wr = { 77, 2, sg };
	struct virtio_rdma_dev_rq_req q;
	struct virtio_rdma_dev_cq_req c;
	struct virtio_rdma_dev_sge s;
	struct vrdma_wc wc;
	uint8_t slot[128];

	CHECK_EQ(vrdma_vrd_rq_encode(slot, &wr), 12 + 32);
	memcpy(&q, slot, sizeof(q));
	CHECK_EQ(le32toh(q.num_sge), 2);
	CHECK_EQ(le64toh(q.wr_id), 77);
	memcpy(&s, slot + 12 + 16, sizeof(s));
	CHECK_EQ(le64toh(s.addr), 0x4000);
	CHECK_EQ(le32toh(s.length), 20);

	memset(&c, 0, sizeof(c));
	c.wr_id = htole64(5);
	c.status = VIRTIO_RDMA_DEV_WC_REM_ACCESS_ERR;
	c.opcode = VIRTIO_RDMA_DEV_WC_OP_RECV_RDMA_WITH_IMM;
	c.byte_len = htole32(1000);
	c.ex.imm_data = htonl(0x55);
	c.qp_num = htole32(0x4002);
	c.src_qp = htole32(9);
	c.wc_flags = htole32(VIRTIO_RDMA_DEV_WC_WITH_IMM | VIRTIO_RDMA_DEV_WC_GRH | 0x80);
	c.sl = 3;
	c.port_num = 1;
	vrdma_vrd_cq_decode(&c, &wc);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_EQ(wc.status, VIRTIO_IB_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc.opcode, VIRTIO_IB_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_EQ(wc.imm_data, htonl(0x55));
	CHECK_EQ(wc.qp_num, 0x4002);
	CHECK_EQ(wc.src_qp, 9);
	CHECK_EQ(wc.wc_flags, VIRTIO_IB_WC_WITH_IMM | VIRTIO_IB_WC_GRH);
	c.wc_flags = htole32(VIRTIO_RDMA_DEV_WC_WITH_INVALIDATE);
	c.opcode = VIRTIO_RDMA_DEV_WC_OP_RECV;
	c.ex.invalidate_rkey = htole32(0x777);
	vrdma_vrd_cq_decode(&c, &wc);
	CHECK_EQ(wc.invalidated_rkey, 0x777);
	CHECK_EQ(wc.wc_flags, VIRTIO_IB_WC_WITH_INV);
}

static void test_config_and_modify(void)
{
	struct virtio_rdma_dev_config cfg;
	struct virtio_rdma_ack_query_device_ext d;
	struct virtio_rdma_cmd_modify_qp m;
	struct virtio_rdma_dev_cmd_modify_qp c;

	memset(&cfg, 0, sizeof(cfg));
	cfg.device_cap_flags = htole64(VIRTIO_RDMA_DEV_CAP_RC_RNR_NAK_GEN |
				       VIRTIO_RDMA_DEV_CAP_MEM_MGT_EXTENSIONS |
				       VIRTIO_RDMA_DEV_CAP_SYS_IMAGE_GUID);
	cfg.max_qp_wr = htole32(1024);
	cfg.max_ah = htole32(100000);
	cfg.atomic_cap = VIRTIO_RDMA_DEV_ATOMIC_HCA;
	cfg.max_fast_reg_page_list_len = htole32(512);
	cfg.max_pkeys = htole16(1);
	vrdma_vrd_device_attr(&cfg, &d);
	CHECK_EQ(le64toh(d.device_cap_flags),
		 VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN | VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);
	CHECK_EQ(le32toh(d.max_qp_wr), 1024);
	CHECK_EQ(le32toh(d.max_ah), 4096); /* the library's AH table */
	CHECK_EQ(d.atomic_cap, VIRTIO_IB_ATOMIC_HCA);
	CHECK_EQ(le32toh(d.max_fast_reg_page_list_len), 512);
	CHECK_EQ(le32toh(d.max_srq_wr), 0);
	CHECK_EQ(le32toh(d.max_mw), 0);
	cfg.atomic_cap = 9;
	vrdma_vrd_device_attr(&cfg, &d);
	CHECK_EQ(d.atomic_cap, VIRTIO_IB_ATOMIC_NONE);

	memset(&m, 0, sizeof(m));
	m.qpn = htole32(0x8003);
	m.attr_mask = htole32(VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
			      VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN);
	m.qp_state = VIRTIO_IB_QPS_RTR;
	m.path_mtu = VIRTIO_IB_MTU_1024;
	m.dest_qp_num = htole32(0x4005);
	m.rq_psn = htole32(0x123456);
	m.ah_attr.grh.dgid[10] = 0xff;
	m.ah_attr.grh.flow_label = htole32(0x54321);
	m.ah_attr.grh.sgid_index = 1;
	m.ah_attr.sl = 2;
	vrdma_vrd_modify_qp(&m, &c);
	CHECK_EQ(le32toh(c.qpn), 0x8003);
	CHECK_EQ(le32toh(c.attr_mask), VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_AV |
					       VIRTIO_RDMA_DEV_QP_PATH_MTU |
					       VIRTIO_RDMA_DEV_QP_DEST_QPN | VIRTIO_RDMA_DEV_QP_RQ_PSN);
	CHECK_EQ(c.attrs.qp_state, 2);
	CHECK_EQ(c.attrs.path_mtu, 3);
	CHECK_EQ(le32toh(c.attrs.dest_qp_num), 0x4005);
	CHECK_EQ(le32toh(c.attrs.rq_psn), 0x123456);
	CHECK_EQ(c.attrs.ah_attr.ah_flags, VIRTIO_RDMA_DEV_AH_GRH);
	CHECK_EQ(c.attrs.ah_attr.port_num, 1);
	CHECK_EQ(c.attrs.ah_attr.sl, 2);
	CHECK_EQ(c.attrs.ah_attr.grh.sgid_index, 1);
	CHECK_EQ(le32toh(c.attrs.ah_attr.grh.flow_label), 0x54321);
	CHECK_EQ(c.attrs.ah_attr.grh.dgid[10], 0xff);
}

/* ---- libvrdma against in-process devices ----------------------------------------- */

struct world {
	char dir[64];
	struct loop *l;
	struct sw *sw;
	struct virtio_rdma_dev *d[2];
	pthread_t thr;
	atomic_bool stop;
	bool thr_up;
};

static void *loop_thread(void *arg)
{
	struct world *w = arg;

	while (!atomic_load(&w->stop))
		loop_run_once(w->l, 20 * 1000 * 1000);
	return NULL;
}

static bool world_up(struct world *w)
{
	struct netdev_cfg c;
	int i;

	memset(w, 0, sizeof(*w));
	strcpy(w->dir, "/tmp/vrdma-v1drv-XXXXXX");
	if (!mkdtemp(w->dir))
		return false;
	w->l = loop_new();
	w->sw = w->l ? sw_new(w->l) : NULL;
	if (!w->sw)
		return false;
	for (i = 0; i < 2; i++) {
		memset(&c, 0, sizeof(c));
		snprintf(c.socket, sizeof(c.socket), "%s/%c", w->dir, 'a' + i);
		c.mac[0] = 0x52;
		c.mac[5] = (uint8_t)(i + 1);
		c.has_ip4 = true;
		c.ip4.s_addr = htonl(0x0a000101 + (uint32_t)i);
		c.mtu = 1500;
		c.max_qps = 4;
		c.max_cqs = 4;
		c.index = (unsigned)i;
		w->d[i] = virtio_rdma_dev_new(w->l, w->sw, &c);
		if (!w->d[i])
			return false;
	}
	w->thr_up = pthread_create(&w->thr, NULL, loop_thread, w) == 0;
	return w->thr_up;
}

static void world_down(struct world *w)
{
	char p[80];
	int i;

	if (w->thr_up) {
		atomic_store(&w->stop, true);
		pthread_join(w->thr, NULL);
	}
	for (i = 0; i < 2; i++) {
		if (w->d[i])
			virtio_rdma_dev_free(w->d[i]);
		snprintf(p, sizeof(p), "%s/%c", w->dir, 'a' + i);
		unlink(p);
	}
	if (w->sw)
		sw_free(w->sw);
	if (w->l)
		loop_free(w->l);
	rmdir(w->dir);
}

/* One side: device, PD, a 64 KiB buffer registered with every right, CQ,
 * RC QP. */
struct side {
	struct vrdma_dev *dev;
	uint32_t pdn;
	uint8_t *buf;
	struct vrdma_mr_info mr;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;
	uint8_t gid1[16];
};

#define BUF 65536

static bool side_up(struct side *s, const char *path)
{
	const uint32_t all = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	struct vrdma_qp_init in;

	memset(s, 0, sizeof(s[0]));
	s->dev = vrdma_dev_open(path, NULL);
	if (!s->dev)
		return false;
	s->buf = aligned_alloc(4096, BUF);
	if (!s->buf)
		return false;
	memset(s->buf, 0, BUF);
	if (vrdma_pd_alloc(s->dev, &s->pdn) ||
	    vrdma_mr_reg(s->dev, s->pdn, s->buf, BUF, (uintptr_t)s->buf, all, &s->mr) ||
	    vrdma_cq_create(s->dev, 64, &s->cq) || vrdma_gid_query(s->dev, 1, s->gid1))
		return false;
	memset(&in, 0, sizeof(in));
	in.pdn = s->pdn;
	in.qp_type = VIRTIO_IB_QPT_RC;
	in.send_cq = s->cq;
	in.recv_cq = s->cq;
	in.cap.max_send_wr = 16;
	in.cap.max_recv_wr = 16;
	in.cap.max_send_sge = 2;
	in.cap.max_recv_sge = 2;
	in.cap.max_inline_data = 64;
	return vrdma_qp_create(s->dev, &in, &s->qp) == 0;
}

static void side_down(struct side *s)
{
	if (s->dev)
		vrdma_dev_close(s->dev);
	free(s->buf);
}

static bool rc_connect(struct side *s, const struct side *peer)
{
	struct vrdma_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.qp_access_flags = VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ |
			    VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	if (vrdma_qp_modify(s->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_ACCESS_FLAGS))
		return false;
	a.qp_state = VIRTIO_IB_QPS_RTR;
	a.path_mtu = VIRTIO_IB_MTU_1024;
	a.dest_qp_num = vrdma_qp_num(peer->qp);
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.grh.dgid, peer->gid1, 16);
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	if (vrdma_qp_modify(s->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
					       VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN |
					       VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
					       VIRTIO_IB_QP_MIN_RNR_TIMER))
		return false;
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100;
	a.max_rd_atomic = 4;
	return vrdma_qp_modify(s->qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_TIMEOUT |
						  VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
						  VIRTIO_IB_QP_SQ_PSN |
						  VIRTIO_IB_QP_MAX_QP_RD_ATOMIC) == 0;
}

/* The next completion of cq (waits on its event, bounded). */
static bool one_wc(struct vrdma_cq *cq, struct vrdma_wc *wc)
{
	for (int i = 0; i < 2000; i++) {
		int n = vrdma_cq_poll(cq, wc, 1);

		if (n == 1)
			return true;
		if (n < 0)
			return false;
		vrdma_cq_wait(cq, 10);
	}
	return false;
}

static int post1(struct side *s, struct vrdma_send_wr *wr)
{
	return vrdma_post_send(s->qp, wr, 1);
}

static void test_libvrdma(void)
{
	struct vrdma_device_attr da;
	struct vrdma_port_attr pa;
	struct vrdma_send_wr wr;
	struct vrdma_recv_wr rw;
	struct vrdma_sge sg;
	struct vrdma_wc wc;
	struct vrdma_srq_attr sa = { 16, 1, 0 };
	struct vrdma_srq *srq;
	struct vrdma_mw_info mw;
	struct vrdma_mr_info fmr, lmr;
	struct side a, b;
	struct world w;
	uint8_t gid0[16];
	uint16_t pkey;
	char path[80];
	uint64_t v;
	int i;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	REQUIRE(world_up(&w));
	snprintf(path, sizeof(path), "%s/a", w.dir);
	CHECK(side_up(&a, path));
	snprintf(path, sizeof(path), "%s/b", w.dir);
	CHECK(side_up(&b, path));
	if (!a.qp || !b.qp)
		goto out;
	CHECK(vrdma_dev_is_virtio_rdma(a.dev));

	/* attributes */
	REQUIRE(vrdma_query_device(a.dev, &da) == 0);
	CHECK(da.ext);
	CHECK_EQ(da.atomic_cap, VIRTIO_IB_ATOMIC_HCA);
	CHECK(da.device_cap_flags & VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS);
	CHECK_EQ(da.max_srq, 0);
	CHECK_EQ(da.max_mw, 0);
	CHECK_EQ(da.max_rdma_qps, 5); /* QP indexes 0..4: pairs 1..4 */
	CHECK_EQ(da.max_rdma_cqs, 4);
	REQUIRE(vrdma_query_port(a.dev, &pa) == 0);
	CHECK(pa.per_port);
	CHECK_EQ(pa.state, VIRTIO_RDMA_DEV_PORT_ACTIVE);
	CHECK_EQ(pa.phys_state, VIRTIO_RDMA_DEV_PHYS_LINK_UP);
	CHECK_EQ(pa.active_width, VIRTIO_RDMA_DEV_WIDTH_1X);
	CHECK_EQ(pa.active_speed, VIRTIO_RDMA_DEV_SPEED_EDR);
	CHECK(pa.port_cap_flags & VIRTIO_RDMA_DEV_PORT_CM_SUP);
	CHECK_EQ(pa.active_mtu, VIRTIO_IB_MTU_1024);
	CHECK_EQ(pa.pkey_tbl_len, 1);
	CHECK(vrdma_query_pkey(a.dev, 0, &pkey) == 0 && pkey == 0xffff);
	CHECK_EQ(vrdma_query_pkey(a.dev, 1, &pkey), -EINVAL);
	/* GID 1 = ::ffff:10.0.1.1 (QUERY_PORT), GID 0 from the MAC */
	CHECK_EQ(a.gid1[10], 0xff);
	CHECK_EQ(a.gid1[15], 1);
	CHECK_EQ(b.gid1[15], 2);
	CHECK(vrdma_gid_query(a.dev, 0, gid0) == 0 && gid0[0] == 0xfe && gid0[15] == 1 &&
	      gid0[8] == (0x52 ^ 2));

	/* what this model has not */
	CHECK_EQ(vrdma_srq_create(a.dev, a.pdn, &sa, &srq), -EOPNOTSUPP);
	CHECK_EQ(vrdma_mw_alloc(a.dev, a.pdn, VIRTIO_IB_MW_TYPE_1, &mw), -EOPNOTSUPP);

	REQUIRE(rc_connect(&a, &b) && rc_connect(&b, &a));
	{
		struct vrdma_qp_attr q;

		REQUIRE(vrdma_qp_query(a.qp, VIRTIO_IB_QP_ATTR_MASK_ALL, &q) == 0);
		CHECK_EQ(q.qp_state, VIRTIO_IB_QPS_RTS);
		CHECK_EQ(q.path_mtu, VIRTIO_IB_MTU_1024);
		CHECK_EQ(q.dest_qp_num, vrdma_qp_num(b.qp));
		CHECK_EQ(q.sq_psn, 100);
		CHECK_EQ(q.timeout, 14);
		CHECK_EQ(q.max_rd_atomic, 4);
		CHECK_EQ(q.cap.max_send_wr, 16);
		CHECK_EQ(q.cap.max_inline_data, 64);
		CHECK_EQ(q.ah_attr.grh.sgid_index, 1);
		CHECK_MEM(q.ah_attr.grh.dgid, b.gid1, 16);
		CHECK_EQ(q.qp_access_flags, VIRTIO_IB_ACCESS_REMOTE_WRITE |
						    VIRTIO_IB_ACCESS_REMOTE_READ |
						    VIRTIO_IB_ACCESS_REMOTE_ATOMIC);
	}

	/* SEND a -> b, two SGEs into one */
	for (i = 0; i < 3000; i++)
		a.buf[i] = (uint8_t)(i * 7 + 1);
	sg.addr = (uintptr_t)b.buf + 8192;
	sg.length = 4096;
	sg.lkey = b.mr.lkey;
	rw.wr_id = 50;
	rw.num_sge = 1;
	rw.sg_list = &sg;
	CHECK_EQ(vrdma_post_recv(b.qp, &rw, 1), 1);
	{
		struct vrdma_sge s2[2] = { { (uintptr_t)a.buf, 1000, a.mr.lkey },
					   { (uintptr_t)a.buf + 1000, 2000, a.mr.lkey } };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1;
		wr.opcode = VIRTIO_IB_WR_SEND;
		wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
		wr.num_sge = 2;
		wr.sg_list = s2;
		CHECK_EQ(post1(&a, &wr), 1);
	}
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 1 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_SEND);
	CHECK(one_wc(b.cq, &wc) && wc.wr_id == 50 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_RECV && wc.byte_len == 3000 &&
	      wc.qp_num == vrdma_qp_num(b.qp));
	CHECK_MEM(b.buf + 8192, a.buf, 3000);

	/* inline RDMA WRITE with immediate a -> b */
	CHECK_EQ(vrdma_post_recv(b.qp, &rw, 1), 1);
	memcpy(a.buf + 100, "inline write payload", 20);
	sg.addr = (uintptr_t)a.buf + 100;
	sg.length = 20;
	sg.lkey = 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_INLINE;
	wr.imm_data = htonl(0xfeed);
	wr.rdma.remote_addr = (uintptr_t)b.buf + 20000;
	wr.rdma.rkey = b.mr.rkey;
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 2 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_RDMA_WRITE);
	CHECK(one_wc(b.cq, &wc) && wc.opcode == VIRTIO_IB_WC_RECV_RDMA_WITH_IMM &&
	      (wc.wc_flags & VIRTIO_IB_WC_WITH_IMM) && wc.imm_data == htonl(0xfeed));
	CHECK_MEM(b.buf + 20000, "inline write payload", 20);

	/* FETCH_AND_ADD on b's buffer */
	v = 1000;
	memcpy(b.buf + 30000, &v, 8);
	sg.addr = (uintptr_t)a.buf + 30000;
	sg.length = 8;
	sg.lkey = a.mr.lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.atomic.remote_addr = (uintptr_t)b.buf + 30000;
	wr.atomic.compare_add = 5;
	wr.atomic.rkey = b.mr.rkey;
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_FETCH_ADD);
	memcpy(&v, a.buf + 30000, 8);
	CHECK_EQ(v, 1000);
	memcpy(&v, b.buf + 30000, 8);
	CHECK_EQ(v, 1005);

	/* fast registration on b (MAP_MR_SG + REG_MR), read by a through
	 * the new key */
	REQUIRE(vrdma_mr_alloc(b.dev, b.pdn, 4, &fmr) == 0);
	for (i = 0; i < 4096; i++)
		b.buf[40960 + i] = (uint8_t)(i ^ 0x5a);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = VIRTIO_IB_WR_REG_MR;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.reg.mrn = fmr.mrn;
	wr.reg.key = vrdma_inc_key(fmr.lkey);
	wr.reg.access = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ;
	wr.reg.iova = 0x10000000;
	wr.reg.length = 4096;
	wr.reg.addr = b.buf + 40960;
	CHECK_EQ(post1(&b, &wr), 1);
	CHECK(one_wc(b.cq, &wc) && wc.wr_id == 4 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_REG_MR);
	sg.addr = (uintptr_t)a.buf + 40960;
	sg.length = 4096;
	sg.lkey = a.mr.lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 5;
	wr.opcode = VIRTIO_IB_WR_RDMA_READ;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.rdma.remote_addr = 0x10000000;
	wr.rdma.rkey = vrdma_inc_key(fmr.lkey);
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 5 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_RDMA_READ);
	CHECK_MEM(a.buf + 40960, b.buf + 40960, 4096);

	/* RDMA_READ_WITH_INV: a reads into a fast-registration MR of its
	 * own, which is invalidated once the data is in place */
	REQUIRE(vrdma_mr_alloc(a.dev, a.pdn, 1, &lmr) == 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 6;
	wr.opcode = VIRTIO_IB_WR_REG_MR;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.reg.mrn = lmr.mrn;
	wr.reg.key = lmr.lkey;
	wr.reg.access = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	wr.reg.iova = (uintptr_t)a.buf + 49152;
	wr.reg.length = 4096;
	wr.reg.addr = a.buf + 49152;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 6 && wc.status == VIRTIO_IB_WC_SUCCESS);
	sg.addr = (uintptr_t)a.buf + 49152;
	sg.length = 3000;
	sg.lkey = lmr.lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = VRDMA_WR_RDMA_READ_WITH_INV;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.invalidate_rkey = lmr.lkey;
	wr.rdma.remote_addr = (uintptr_t)b.buf + 8192;
	wr.rdma.rkey = b.mr.rkey;
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 7 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.opcode == VIRTIO_IB_WC_RDMA_READ);
	CHECK_MEM(a.buf + 49152, b.buf + 8192, 3000);
	/* the key is gone: mapping the MR again works (it is free) */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.opcode = VIRTIO_IB_WR_REG_MR;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.reg.mrn = lmr.mrn;
	wr.reg.key = vrdma_inc_key(lmr.lkey);
	wr.reg.access = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	wr.reg.iova = (uintptr_t)a.buf + 49152;
	wr.reg.length = 4096;
	wr.reg.addr = a.buf + 49152;
	CHECK_EQ(post1(&a, &wr), 1);
	CHECK(one_wc(a.cq, &wc) && wc.wr_id == 8 && wc.status == VIRTIO_IB_WC_SUCCESS);
	/* a mapped MR cannot be mapped again before it is invalidated */
	CHECK_EQ(post1(&a, &wr), -EINVAL);
	CHECK_EQ(vrdma_mr_dereg(a.dev, lmr.mrn), 0);
	CHECK_EQ(vrdma_mr_dereg(b.dev, fmr.mrn), 0);
out:
	side_down(&a);
	side_down(&b);
	world_down(&w);
}

/* UD between the devices with an address handle kept by the library. */
static void test_libvrdma_ud(void)
{
	struct vrdma_dev *d[2] = { NULL, NULL };
	struct vrdma_qp *qp[2] = { NULL, NULL };
	struct vrdma_cq *cq[2] = { NULL, NULL };
	uint8_t *buf[2] = { NULL, NULL }, gid[2][16];
	struct vrdma_mr_info mr[2];
	uint32_t pdn[2], ah = 0;
	struct vrdma_ah_attr av;
	struct vrdma_qp_attr qa;
	struct vrdma_qp_init in;
	struct vrdma_send_wr wr;
	struct vrdma_recv_wr rw;
	struct vrdma_sge sg;
	struct vrdma_wc wc;
	struct world w;
	char path[80];
	int i;

	REQUIRE(world_up(&w));
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%c", w.dir, 'a' + i);
		d[i] = vrdma_dev_open(path, NULL);
		buf[i] = aligned_alloc(4096, 8192);
		if (!d[i] || !buf[i])
			goto out;
		memset(buf[i], 0, 8192);
		memset(&in, 0, sizeof(in));
		if (vrdma_pd_alloc(d[i], &pdn[i]) ||
		    vrdma_mr_reg(d[i], pdn[i], buf[i], 8192, (uintptr_t)buf[i],
				 VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr[i]) ||
		    vrdma_cq_create(d[i], 16, &cq[i]) || vrdma_gid_query(d[i], 1, gid[i]))
			goto out;
		in.pdn = pdn[i];
		in.qp_type = VIRTIO_IB_QPT_UD;
		in.send_cq = in.recv_cq = cq[i];
		in.cap.max_send_wr = in.cap.max_recv_wr = 4;
		in.cap.max_send_sge = in.cap.max_recv_sge = 1;
		if (vrdma_qp_create(d[i], &in, &qp[i]))
			goto out;
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = VIRTIO_IB_QPS_INIT;
		qa.qkey = 0x11111111;
		CHECK_EQ(vrdma_qp_modify(qp[i], &qa, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY), 0);
		qa.qp_state = VIRTIO_IB_QPS_RTR;
		CHECK_EQ(vrdma_qp_modify(qp[i], &qa, VIRTIO_IB_QP_STATE), 0);
		qa.qp_state = VIRTIO_IB_QPS_RTS;
		qa.sq_psn = 1;
		CHECK_EQ(vrdma_qp_modify(qp[i], &qa, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN), 0);
	}
	memset(&av, 0, sizeof(av));
	memcpy(av.grh.dgid, gid[1], 16);
	av.grh.sgid_index = 1;
	av.grh.hop_limit = 64;
	REQUIRE(vrdma_ah_create(d[0], pdn[0], &av, &ah) == 0);
	CHECK(ah >= 1);
	sg.addr = (uintptr_t)buf[1];
	sg.length = 8192;
	sg.lkey = mr[1].lkey;
	rw.wr_id = 9;
	rw.num_sge = 1;
	rw.sg_list = &sg;
	CHECK_EQ(vrdma_post_recv(qp[1], &rw, 1), 1);
	memcpy(buf[0], "datagram over the virtio-rdma device", 36);
	sg.addr = (uintptr_t)buf[0];
	sg.length = 36;
	sg.lkey = mr[0].lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.opcode = VIRTIO_IB_WR_SEND;
	wr.send_flags = VIRTIO_IB_SEND_SIGNALED;
	wr.ud.remote_qpn = vrdma_qp_num(qp[1]);
	wr.ud.remote_qkey = 0x11111111;
	wr.ud.ah = ah;
	wr.num_sge = 1;
	wr.sg_list = &sg;
	CHECK_EQ(vrdma_post_send(qp[0], &wr, 1), 1);
	CHECK(one_wc(cq[0], &wc) && wc.wr_id == 10 && wc.status == VIRTIO_IB_WC_SUCCESS);
	CHECK(one_wc(cq[1], &wc) && wc.wr_id == 9 && wc.status == VIRTIO_IB_WC_SUCCESS &&
	      wc.byte_len == 40 + 36 && wc.src_qp == vrdma_qp_num(qp[0]) &&
	      (wc.wc_flags & VIRTIO_IB_WC_GRH));
	CHECK_MEM(buf[1] + 40, "datagram over the virtio-rdma device", 36);
	/* an unknown handle, READ_WITH_INV on UD: refused before the ring */
	wr.ud.ah = ah + 1;
	CHECK_EQ(vrdma_post_send(qp[0], &wr, 1), -EINVAL);
	wr.ud.ah = ah;
	wr.opcode = VRDMA_WR_RDMA_READ_WITH_INV;
	CHECK_EQ(vrdma_post_send(qp[0], &wr, 1), -EINVAL);
	CHECK_EQ(vrdma_ah_destroy(d[0], pdn[0], ah), 0);
	wr.opcode = VIRTIO_IB_WR_SEND;
	CHECK_EQ(vrdma_post_send(qp[0], &wr, 1), -EINVAL);
out:
	for (i = 0; i < 2; i++) {
		if (d[i])
			vrdma_dev_close(d[i]);
		free(buf[i]);
	}
	world_down(&w);
}

int main(void)
{
	TEST_PROGRAM("test_virtio_rdma_drv");
	RUN(test_values);
	RUN(test_send_elements);
	RUN(test_ud_element);
	RUN(test_recv_and_completion);
	RUN(test_config_and_modify);
	RUN(test_libvrdma);
	RUN(test_libvrdma_ud);
	return TEST_DONE();
}
