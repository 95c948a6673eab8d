/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-rdma device model's control path (src/backend/virtio_rdma_ctrl.c)
 * driven with packed wire-format requests through virtio_rdma_dev_ctrl_exec():
 * every command's success path and its error paths (each failure must leave
 * no state behind and no response), the configuration space, the cqn /
 * virtqueue and qpn / virtqueue pair rules, and the translation of the IB
 * attribute masks, access flags and address vectors onto the core.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "common/test_guest_mem.h"
#include "common/util.h"
#include "backend/virtio_rdma_dev.h"
#include "vhost/vhost_mem.h"

#define GPA_A   0x100000ull
#define PAGES_A 64
#define PG      4096ull

static struct rres_dev rd;
static struct vhost_mem mem;
static uint8_t *map_a;
static uint8_t obuf[512];
static size_t olen;

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static bool setup(void)
{
	struct rres_dev_cfg c;

	vhost_mem_init(&mem);
	map_a = tc_guest_region(&mem, GPA_A, PAGES_A * PG);
	if (!map_a)
		return false;
	memset(&c, 0, sizeof(c));
	memcpy(c.mac, MAC, 6);
	c.has_ip4 = true;
	c.ip4 = htonl(0x0a000001);
	c.eth_mtu = 1500;
	c.max_rdma_qps = 9; /* 8 QPs */
	c.max_rdma_cqs = 4;
	c.max_pd = 4;
	c.max_mr = 6;
	c.max_ah = 4;
	c.max_mr_pages = 48;
	c.max_fast_reg_page_list_len = 8;
	c.mem = &mem;
	c.deterministic = true;
	c.seed = 7;
	if (rres_dev_init(&rd, &c))
		return false;
	virtio_rdma_dev_setup(&rd);
	return true;
}

static void teardown(void)
{
	rres_dev_fini(&rd);
	vhost_mem_clear(&mem);
	if (map_a)
		munmap(map_a, PAGES_A * PG);
	map_a = NULL;
}

static int failures_with_state_change;

/* Execute; a failure must change nothing and give no response. */
static enum rres_err X(uint8_t cmd, const void *in, size_t len)
{
	struct rres_counts before, after;
	uint64_t pages = rd.mr_pages;
	enum rres_err e;

	rres_dev_counts(&rd, &before);
	memset(obuf, 0xa5, sizeof(obuf));
	e = virtio_rdma_dev_ctrl_exec(&rd, cmd, in, len, obuf, sizeof(obuf), &olen);
	rres_dev_counts(&rd, &after);
	if (e && (olen || memcmp(&before, &after, sizeof(before)) || pages != rd.mr_pages ||
		  obuf[0] != 0xa5))
		failures_with_state_change++;
	return e;
}

static uint32_t out32(size_t off)
{
	return get_le32(obuf + off);
}

static enum rres_err one32(uint8_t cmd, uint32_t v)
{
	le32 w = htole32(v);

	return X(cmd, &w, 4);
}

static enum rres_err two32(uint8_t cmd, uint32_t a, uint32_t b)
{
	le32 w[2] = { htole32(a), htole32(b) };

	return X(cmd, w, 8);
}

static uint32_t pd_create(void)
{
	return X(VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0) ? 0 : out32(0);
}

static uint32_t cq_create(uint32_t cqe)
{
	return one32(VIRTIO_RDMA_DEV_CMD_CREATE_CQ, cqe) ? 0 : out32(0);
}

static enum rres_err qp_create_raw(uint32_t pdn, uint8_t type, uint8_t sig, uint32_t scq,
				   uint32_t rcq, uint32_t *qpn)
{
	struct virtio_rdma_dev_cmd_create_qp c;
	enum rres_err e;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.qp_type = type;
	c.sq_sig_type = sig;
	c.max_send_wr = htole32(16);
	c.max_send_sge = htole32(2);
	c.send_cqn = htole32(scq);
	c.max_recv_wr = htole32(16);
	c.max_recv_sge = htole32(2);
	c.recv_cqn = htole32(rcq);
	c.max_inline_data = htole32(64);
	e = X(VIRTIO_RDMA_DEV_CMD_CREATE_QP, &c, sizeof(c));
	*qpn = e ? 0 : out32(0);
	return e;
}

static void ah_fill(struct virtio_rdma_dev_ah_attr *a)
{
	static const uint8_t dgid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 };
	static const uint8_t dmac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x02 };

	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, dgid, 16);
	a->grh.flow_label = htole32(0x12345);
	a->grh.sgid_index = 1; /* the IPv4 GID */
	a->grh.hop_limit = 64;
	a->grh.traffic_class = 0x28;
	a->sl = 3;
	a->static_rate = 0;
	a->port_num = 1;
	a->ah_flags = VIRTIO_RDMA_DEV_AH_GRH;
	memcpy(a->dmac, dmac, 6);
}

static void mq_fill(struct virtio_rdma_dev_cmd_modify_qp *c, uint32_t qpn, uint32_t mask,
		    uint8_t state)
{
	struct virtio_rdma_dev_qp_attr *a = &c->attrs;

	memset(c, 0, sizeof(*c));
	c->qpn = htole32(qpn);
	c->attr_mask = htole32(mask);
	a->qp_state = state;
	a->path_mtu = VIRTIO_IB_MTU_1024;
	a->qkey = htole32(0x11111111);
	a->rq_psn = htole32(0x123456);
	a->sq_psn = htole32(0x654321);
	a->dest_qp_num = htole32(0xabc);
	a->qp_access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE |
				     VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE |
				     VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ |
				     VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC);
	a->pkey_index = 0;
	a->max_rd_atomic = 4;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->port_num = 1;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 6;
	ah_fill(&a->ah_attr);
}

#define M_INIT (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_PKEY_INDEX | VIRTIO_RDMA_DEV_QP_PORT | \
		VIRTIO_RDMA_DEV_QP_ACCESS_FLAGS)
#define M_RTR (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_AV | VIRTIO_RDMA_DEV_QP_PATH_MTU |      \
	       VIRTIO_RDMA_DEV_QP_DEST_QPN | VIRTIO_RDMA_DEV_QP_RQ_PSN |                            \
	       VIRTIO_RDMA_DEV_QP_MAX_DEST_RD_ATOMIC | VIRTIO_RDMA_DEV_QP_MIN_RNR_TIMER)
#define M_RTS (VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_TIMEOUT | VIRTIO_RDMA_DEV_QP_RETRY_CNT | \
	       VIRTIO_RDMA_DEV_QP_RNR_RETRY | VIRTIO_RDMA_DEV_QP_SQ_PSN |                           \
	       VIRTIO_RDMA_DEV_QP_MAX_QP_RD_ATOMIC)

static enum rres_err modify(const struct virtio_rdma_dev_cmd_modify_qp *c)
{
	return X(VIRTIO_RDMA_DEV_CMD_MODIFY_QP, c, sizeof(*c));
}

static enum rres_err modify_to(uint32_t qpn, uint32_t mask, uint8_t state)
{
	struct virtio_rdma_dev_cmd_modify_qp c;

	mq_fill(&c, qpn, mask, state);
	return modify(&c);
}

static enum rres_err query_qp(uint32_t qpn, uint32_t mask, struct virtio_rdma_dev_qp_attr *a)
{
	enum rres_err e = two32(VIRTIO_RDMA_DEV_CMD_QUERY_QP, qpn, mask);

	if (!e)
		memcpy(a, obuf, sizeof(*a));
	return e;
}

/* Page list of `n` pages of region A starting at page `first`, written at
 * page `at` of A; returns its GPA. */
static uint64_t page_list(uint32_t at, uint32_t first, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint64_t g = htole64(GPA_A + (first + k) * PG);

		memcpy(map_a + at * PG + 8 * k, &g, 8);
	}
	return GPA_A + at * PG;
}

/* The daemon's own mapping of a GPA (not map_a, our second view). */
static void *host(uint64_t gpa)
{
	return vhost_mem_gpa_to_host(&mem, gpa, 1);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_config(void)
{
	struct virtio_rdma_dev_config c;

	REQUIRE(setup());
	virtio_rdma_dev_config(&rd, &c);
	CHECK_EQ(le32toh(c.phys_port_cnt), 1);
	CHECK_EQ(le32toh(c.max_qp), 8);
	CHECK_EQ(le32toh(c.max_cq), 4);
	CHECK_EQ(le32toh(c.max_pd), 4);
	CHECK_EQ(le32toh(c.max_mr), 6);
	CHECK_EQ(le32toh(c.vendor_part_id), VIRTIO_ID_RDMA);
	CHECK(le64toh(c.device_cap_flags) & VIRTIO_RDMA_DEV_CAP_MEM_MGT_EXTENSIONS);
	CHECK(le64toh(c.device_cap_flags) & VIRTIO_RDMA_DEV_CAP_RC_RNR_NAK_GEN);
	CHECK_EQ(c.atomic_cap, VIRTIO_RDMA_DEV_ATOMIC_HCA);
	CHECK_EQ(le32toh(c.max_mw), 0);
	CHECK_EQ(le32toh(c.max_fast_reg_page_list_len), 8);
	CHECK_EQ(le16toh(c.max_pkeys), 1);
	CHECK_EQ(le64toh(c.page_size_cap), 4096);
	/* EUI-64 of the MAC */
	CHECK_EQ(((uint8_t *)&c.sys_image_guid)[0], 0x50);
	CHECK_EQ(((uint8_t *)&c.sys_image_guid)[3], 0xff);
	CHECK_EQ(((uint8_t *)&c.sys_image_guid)[7], 0x56);
	/* byte offsets of the packed layout seen by a driver */
	CHECK_EQ(((uint8_t *)&c)[96], VIRTIO_RDMA_DEV_ATOMIC_HCA);
	CHECK_EQ(get_le32((uint8_t *)&c + 68), 4);
	/* virtqueue layout */
	CHECK_EQ(virtio_rdma_dev_vq_count(4, 8), 21);
	CHECK_EQ(virtio_rdma_dev_vq_sq(4, 1), 5);
	CHECK_EQ(virtio_rdma_dev_vq_rq(4, 1), 6);
	CHECK_EQ(virtio_rdma_dev_vq_rq(4, 8), 20);
	teardown();
}

static void test_unknown_and_lengths(void)
{
	static const size_t len[VIRTIO_RDMA_DEV_NUM_CMDS] = {
		0, 1, 4, 4, 0, 4, 8, 12, 32, 44, 4, 66, 137, 8, 4, 6, 26, 6, 8,
	};
	uint8_t big[200];

	REQUIRE(setup());
	memset(big, 0, sizeof(big));
	CHECK_EQ(X(0, NULL, 0), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_NUM_CMDS, NULL, 0), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(X(255, big, 4), RRES_ERR_UNKNOWN_CMD);
	for (uint8_t c = 1; c < VIRTIO_RDMA_DEV_NUM_CMDS; c++) {
		CHECK_EQ(X(c, big, len[c] + 1), RRES_ERR_BAD_LEN);
		if (len[c])
			CHECK_EQ(X(c, big, len[c] - 1), RRES_ERR_BAD_LEN);
		CHECK_EQ(X(c, NULL, len[c] ? len[c] : 1), RRES_ERR_BAD_LEN);
		CHECK(strcmp(virtio_rdma_dev_cmd_name(c), "?") != 0);
	}
	CHECK(strcmp(virtio_rdma_dev_cmd_name(0), "?") == 0);
	CHECK(strcmp(virtio_rdma_dev_cmd_name(19), "?") == 0);
	/* no room for the response */
	big[0] = 1;
	CHECK_EQ(virtio_rdma_dev_ctrl_exec(&rd, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, big, 1, obuf, 160,
					   &olen),
		 RRES_ERR_OUT_SPACE);
	CHECK_EQ(olen, 0);
	CHECK_EQ(virtio_rdma_dev_ctrl_exec(&rd, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, NULL, 4,
					   &olen),
		 RRES_ERR_OUT_SPACE);
	CHECK_EQ(rd.stats.rdma_dev_cmds[VIRTIO_RDMA_DEV_CMD_QUERY_PORT], 4);
	CHECK_EQ(rd.stats.errs[RRES_ERR_UNKNOWN_CMD], 3);
	CHECK_EQ(rd.stats.ok, 0);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_query_port(void)
{
	struct virtio_rdma_dev_rsp_query_port p;
	uint8_t port = 1;

	REQUIRE(setup());
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1), RRES_OK);
	CHECK_EQ(olen, sizeof(p));
	memcpy(&p, obuf, sizeof(p));
	CHECK_EQ(p.state, VIRTIO_RDMA_DEV_PORT_ACTIVE);
	CHECK_EQ(p.phys_state, VIRTIO_RDMA_DEV_PHYS_LINK_UP);
	CHECK_EQ(p.active_mtu, VIRTIO_IB_MTU_1024); /* Ethernet 1500 */
	CHECK_EQ(p.max_mtu, VIRTIO_IB_MTU_4096);
	CHECK_EQ(le32toh(p.phys_mtu), 1024);
	CHECK_EQ(le32toh(p.gid_tbl_len), RRES_GID_TBL_LEN);
	CHECK_EQ(le32toh(p.port_cap_flags), VIRTIO_RDMA_DEV_PORT_CM_SUP);
	CHECK_EQ(le32toh(p.max_msg_sz), RRES_DEF_MAX_MSG_SZ);
	CHECK_EQ(le16toh(p.pkey_tbl_len), 1);
	CHECK_EQ(p.active_width, VIRTIO_RDMA_DEV_WIDTH_1X);
	CHECK_EQ(le16toh(p.active_speed), VIRTIO_RDMA_DEV_SPEED_EDR);
	port = 0;
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1), RRES_ERR_RANGE);
	port = 2;
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1), RRES_ERR_RANGE);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_pd_cq(void)
{
	uint32_t pd, cq[4], qpn;
	struct rres_cq *c;

	REQUIRE(setup());
	pd = pd_create();
	CHECK(pd != 0);
	for (int i = 0; i < 4; i++) {
		cq[i] = cq_create(16);
		/* cqn is the index of a completion virtqueue: 1..max_cq */
		CHECK(cq[i] >= 1 && cq[i] <= 4);
		c = rres_cq_lookup(&rd, cq[i] - 1);
		REQUIRE(c != NULL);
		CHECK_EQ(virtio_rdma_dev_vq_cq(cq[i]), cq[i]);
	}
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_CREATE_CQ, 16), RRES_ERR_LIMIT);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, cq[3]), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, cq[3]), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, 5), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_CREATE_CQ, 0), RRES_ERR_RANGE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_CREATE_CQ, RRES_DEF_MAX_CQE + 1), RRES_ERR_RANGE);
	/* REQ_NOTIFY_CQ */
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, cq[0],
		       VIRTIO_RDMA_DEV_NOTIFY_NEXT_COMPLETION), RRES_OK);
	CHECK_EQ(rres_cq_lookup(&rd, cq[0] - 1)->armed, RRES_CQ_ARM_NEXT);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, cq[1], VIRTIO_RDMA_DEV_NOTIFY_SOLICITED),
		 RRES_OK);
	CHECK_EQ(rres_cq_lookup(&rd, cq[1] - 1)->armed, RRES_CQ_ARM_SOLICITED);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, 0, 1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, cq[3], 1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_REQ_NOTIFY_CQ, cq[0], 4), RRES_ERR_FLAGS);
	/* PD and CQ in use by a QP */
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, cq[0], cq[1], &qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_CQ, cq[0]), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_QP, qpn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd), RRES_ERR_BAD_HANDLE);
	for (int i = 0; i < 4; i++)
		(void)pd_create();
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0), RRES_ERR_LIMIT);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_dma_mr(void)
{
	uint32_t pd;
	struct rres_mr *mr;

	REQUIRE(setup());
	pd = pd_create();
	/* a DMA MR is local only (it spans all driver memory) */
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ),
		 RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, VIRTIO_RDMA_DEV_ACCESS_REMOTE_ATOMIC),
		 RRES_ERR_FLAGS);
	/* HUGETLB / RELAXED_ORDERING are hints: accepted, dropped */
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd,
		       VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_HUGETLB |
			       VIRTIO_RDMA_DEV_ACCESS_RELAXED_ORDERING),
		 RRES_OK);
	CHECK_EQ(olen, 12);
	mr = rres_mr_lookup(&rd, out32(0));
	REQUIRE(mr != NULL);
	CHECK_EQ(mr->lkey, out32(4));
	CHECK_EQ(mr->rkey, out32(8));
	CHECK_EQ(mr->access, VIRTIO_IB_ACCESS_LOCAL_WRITE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DEREG_MR, out32(0)), RRES_OK);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, VIRTIO_RDMA_DEV_ACCESS_ZERO_BASED),
		 RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, VIRTIO_RDMA_DEV_ACCESS_ON_DEMAND),
		 RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, 1u << 30), RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd + 1, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DEREG_MR, 12345), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static enum rres_err create_mr(uint32_t pd, uint32_t access, uint32_t max_sg, uint32_t *mrn)
{
	le32 w[3] = { htole32(pd), htole32(access), htole32(max_sg) };
	enum rres_err e = X(VIRTIO_RDMA_DEV_CMD_CREATE_MR, w, sizeof(w));

	*mrn = e ? 0 : out32(0);
	return e;
}

static enum rres_err map_mr_sg(uint32_t mrn, uint32_t npages, uint64_t start, uint64_t len,
			       uint64_t pages)
{
	struct virtio_rdma_dev_cmd_map_mr_sg c;

	c.mrn = htole32(mrn);
	c.npages = htole32(npages);
	c.start = htole64(start);
	c.length = htole64(len);
	c.pages = htole64(pages);
	return X(VIRTIO_RDMA_DEV_CMD_MAP_MR_SG, &c, sizeof(c));
}

static void test_create_mr_map_sg(void)
{
	uint32_t pd, mrn, mrn2, dma, lkey, rkey;
	struct rres_mr *mr;
	struct iovec iov[4];
	uint64_t list;

	REQUIRE(setup());
	pd = pd_create();
	CHECK_EQ(create_mr(pd, VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_WRITE,
			   4, &mrn), RRES_OK);
	lkey = out32(4);
	rkey = out32(8);
	mr = rres_mr_lookup(&rd, mrn);
	REQUIRE(mr != NULL);
	CHECK_EQ(mr->type, RRES_MR_FAST);
	/* not usable before MAP_MR_SG */
	CHECK(rres_mr_lookup_lkey(&rd, lkey, mr->pd, 0) == NULL);
	CHECK_EQ(create_mr(pd, 0, 0, &mrn2), RRES_ERR_RANGE);
	CHECK_EQ(create_mr(pd, 0, 9, &mrn2), RRES_ERR_RANGE); /* > max_fast_reg_page_list_len */
	CHECK_EQ(create_mr(pd + 7, 0, 2, &mrn2), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(create_mr(pd, VIRTIO_RDMA_DEV_ACCESS_ZERO_BASED, 2, &mrn2), RRES_ERR_FLAGS);

	list = page_list(40, 3, 4);
	/* errors first: each leaves the MR unmapped */
	CHECK_EQ(map_mr_sg(mrn + 100, 3, 0x10000, 3 * PG, list), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(map_mr_sg(mrn, 2, 0x10000, 3 * PG, list), RRES_ERR_NPAGES);
	CHECK_EQ(map_mr_sg(mrn, 4, 0x10000, 3 * PG, list), RRES_ERR_NPAGES);
	CHECK_EQ(map_mr_sg(mrn, 5, 0x10800, 4 * PG, list), RRES_ERR_LIMIT);
	CHECK_EQ(map_mr_sg(mrn, 1, UINT64_MAX, 2, list), RRES_ERR_RANGE);
	CHECK_EQ(map_mr_sg(mrn, 3, 0x10000, 3 * PG, 0x90000000ull), RRES_ERR_PAGE);
	CHECK_EQ(map_mr_sg(mrn, 3, 0x10000, 3 * PG, list + 4), RRES_ERR_PAGE);
	CHECK(rres_mr_lookup_lkey(&rd, lkey, mr->pd, 0) == NULL);
	/* success: the keys now name pages 3..5 of region A */
	CHECK_EQ(map_mr_sg(mrn, 3, 0x10000, 3 * PG, list), RRES_OK);
	CHECK_EQ(olen, 4);
	CHECK_EQ(out32(0), 3);
	CHECK(rres_mr_lookup_lkey(&rd, lkey, mr->pd, VIRTIO_IB_ACCESS_LOCAL_WRITE) == mr);
	CHECK(rres_mr_lookup_rkey(&rd, rkey, mr->pd, VIRTIO_IB_ACCESS_REMOTE_WRITE) == mr);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x10000 + PG, 16, iov, 4), 1);
	CHECK(iov[0].iov_base == host(GPA_A + 4 * PG));
	/* mapped once: a second MAP_MR_SG is refused */
	CHECK_EQ(map_mr_sg(mrn, 3, 0x10000, 3 * PG, list), RRES_ERR_IN_USE);
	/* not a fast-registration MR */
	CHECK_EQ(two32(VIRTIO_RDMA_DEV_CMD_GET_DMA_MR, pd, 0), RRES_OK);
	dma = out32(0);
	CHECK_EQ(map_mr_sg(dma, 1, 0, PG, list), RRES_ERR_RANGE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DEREG_MR, dma), RRES_OK);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd), RRES_OK);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static enum rres_err reg_user_mr(uint32_t pd, uint32_t access, uint64_t va, uint64_t len,
				 uint64_t pages, uint32_t npages, uint32_t *mrn)
{
	struct virtio_rdma_dev_cmd_reg_user_mr c;
	enum rres_err e;

	c.pdn = htole32(pd);
	c.access_flags = htole32(access);
	c.start = htole64(0x7f0000000000ull + va);
	c.length = htole64(len);
	c.virt_addr = htole64(va);
	c.pages = htole64(pages);
	c.npages = htole32(npages);
	e = X(VIRTIO_RDMA_DEV_CMD_REG_USER_MR, &c, sizeof(c));
	*mrn = e ? 0 : out32(0);
	return e;
}

static void test_reg_user_mr(void)
{
	uint32_t pd, mrn, x;
	struct rres_mr *mr;
	struct iovec iov[4];
	uint64_t list, bad;

	REQUIRE(setup());
	list = page_list(50, 10, 4);
	pd = pd_create();
	CHECK_EQ(reg_user_mr(pd, VIRTIO_RDMA_DEV_ACCESS_LOCAL_WRITE | VIRTIO_RDMA_DEV_ACCESS_REMOTE_READ,
			     0x20000100, 3 * PG, list, 4, &mrn), RRES_OK);
	mr = rres_mr_lookup(&rd, mrn);
	REQUIRE(mr != NULL);
	CHECK_EQ(mr->lkey, out32(4));
	CHECK_EQ(mr->rkey, out32(8));
	CHECK_EQ(mr->iova, 0x20000100);
	CHECK_EQ(mr->npages, 4);
	CHECK_EQ(rd.mr_pages, 4);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x20000100 + PG, 8, iov, 4), 1);
	CHECK(iov[0].iov_base == host(GPA_A + 11 * PG + 0x100));
	/* the table is copied at registration: later changes do not matter */
	memset(map_a + 50 * PG, 0, 32);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x20000100, 8, iov, 4), 1);
	CHECK(iov[0].iov_base == host(GPA_A + 10 * PG + 0x100));
	list = page_list(50, 10, 4);
	/* errors */
	CHECK_EQ(reg_user_mr(pd + 3, 0, 0, PG, list, 1, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(reg_user_mr(pd, VIRTIO_RDMA_DEV_ACCESS_ZERO_BASED, 0, PG, list, 1, &x),
		 RRES_ERR_FLAGS);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, list, 0, &x), RRES_ERR_NPAGES);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, list, 2, &x), RRES_ERR_NPAGES);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, list, 49, &x), RRES_ERR_LIMIT);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, 0x90000000ull, 1, &x), RRES_ERR_PAGE);
	/* table running past the end of the region */
	CHECK_EQ(reg_user_mr(pd, 0, 0, 2 * PG, GPA_A + PAGES_A * PG - 8, 2, &x), RRES_ERR_PAGE);
	/* a page outside shared memory */
	bad = htole64(0x90000000ull);
	memcpy(map_a + 51 * PG, &bad, 8);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, GPA_A + 51 * PG, 1, &x), RRES_ERR_PAGE);
	/* a misaligned page */
	bad = htole64(GPA_A + 0x10);
	memcpy(map_a + 51 * PG, &bad, 8);
	CHECK_EQ(reg_user_mr(pd, 0, 0, PG, GPA_A + 51 * PG, 1, &x), RRES_ERR_PAGE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, pd), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_qp_create(void)
{
	uint32_t pd, cq, qpn, gsi, x;
	struct rres_qp *qp;

	REQUIRE(setup());
	pd = pd_create();
	cq = cq_create(64);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, VIRTIO_RDMA_DEV_SIGNAL_REQ_WR, cq, cq, &qpn),
		 RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	REQUIRE(qp != NULL);
	CHECK(!qp->sq_sig_all);
	CHECK_EQ(qp->type, VIRTIO_IB_QPT_RC);
	CHECK(qp->send_cq == rres_cq_lookup(&rd, cq - 1));
	CHECK_EQ(qp->cap.max_send_wr, 16);
	CHECK_EQ(qp->cap.max_inline_data, 64);
	/* its virtqueue pair */
	CHECK_EQ(virtio_rdma_dev_qp_pair(qpn), qp->index);
	CHECK(virtio_rdma_dev_qp_pair(qpn) >= 2 && virtio_rdma_dev_qp_pair(qpn) <= 8);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_UD, VIRTIO_RDMA_DEV_SIGNAL_ALL_WR, cq, cq, &x),
		 RRES_OK);
	CHECK(rres_qp_lookup(&rd, x)->sq_sig_all);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_GSI, 0, cq, cq, &gsi), RRES_OK);
	CHECK_EQ(gsi, VRDMA_GSI_QPN);
	CHECK_EQ(virtio_rdma_dev_qp_pair(gsi), 1);
	/* errors */
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 2, cq, cq, &x), RRES_ERR_RANGE);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_SMI, 0, cq, cq, &x), RRES_ERR_QP_TYPE);
	CHECK_EQ(qp_create_raw(pd, 9, 0, cq, cq, &x), RRES_ERR_QP_TYPE);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, 0, cq, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, cq, 0, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, cq + 1, cq, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create_raw(pd + 1, VIRTIO_RDMA_DEV_QPT_RC, 0, cq, cq, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_RDMA_DEV_CMD_DESTROY_QP, qpn ^ (1u << VRDMA_QPN_INDEX_BITS)),
		 RRES_ERR_BAD_HANDLE);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_modify_query_qp(void)
{
	struct virtio_rdma_dev_cmd_modify_qp c;
	struct virtio_rdma_dev_qp_attr a;
	uint32_t pd, cq, qpn, ud;
	struct rres_qp *qp;

	REQUIRE(setup());
	pd = pd_create();
	cq = cq_create(64);
	REQUIRE(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, cq, cq, &qpn) == RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	/* RESET -> INIT with the IB mask a Linux driver sends */
	mq_fill(&c, qpn, M_INIT | VIRTIO_RDMA_DEV_QP_ALT_PATH, VIRTIO_IB_QPS_INIT);
	CHECK_EQ(modify(&c), RRES_ERR_ATTR_MASK);
	mq_fill(&c, qpn, M_INIT | VIRTIO_RDMA_DEV_QP_PATH_MIG_STATE, VIRTIO_IB_QPS_INIT);
	CHECK_EQ(modify(&c), RRES_ERR_ATTR_MASK);
	mq_fill(&c, qpn, M_INIT | (1u << 21), VIRTIO_IB_QPS_INIT);
	CHECK_EQ(modify(&c), RRES_ERR_ATTR_MASK);
	mq_fill(&c, qpn, M_INIT | (1u << 26), VIRTIO_IB_QPS_INIT);
	CHECK_EQ(modify(&c), RRES_ERR_ATTR_MASK);
	mq_fill(&c, qpn, M_INIT, VIRTIO_IB_QPS_INIT);
	c.attrs.port_num = 2;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_INIT, VIRTIO_IB_QPS_INIT);
	c.attrs.pkey_index = htole16(1);
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_INIT, VIRTIO_IB_QPS_INIT);
	c.attrs.qp_access_flags = htole32(VIRTIO_RDMA_DEV_ACCESS_ZERO_BASED);
	CHECK_EQ(modify(&c), RRES_ERR_FLAGS);
	/* ACCESS_FLAGS is required for RC INIT (core rule through the map) */
	CHECK_EQ(modify_to(qpn, VIRTIO_RDMA_DEV_QP_STATE, VIRTIO_IB_QPS_INIT), RRES_ERR_ATTR_MASK);
	CHECK_EQ(qp->attr.qp_state, VIRTIO_IB_QPS_RESET);
	CHECK_EQ(modify_to(qpn, M_INIT | VIRTIO_RDMA_DEV_QP_EN_SQD_ASYNC_NOTIFY, VIRTIO_IB_QPS_INIT),
		 RRES_OK);
	CHECK_EQ(qp->attr.qp_state, VIRTIO_IB_QPS_INIT);
	CHECK_EQ(qp->attr.qp_access_flags,
		 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			 VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_ATOMIC);
	/* INIT -> RTR: the address vector must carry a GRH on port 1 */
	mq_fill(&c, qpn, M_RTR, VIRTIO_IB_QPS_RTR);
	c.attrs.ah_attr.ah_flags = 0;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_RTR, VIRTIO_IB_QPS_RTR);
	c.attrs.ah_attr.ah_flags = 3;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_RTR, VIRTIO_IB_QPS_RTR);
	c.attrs.ah_attr.port_num = 0;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_RTR, VIRTIO_IB_QPS_RTR);
	c.attrs.ah_attr.sl = 16;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	mq_fill(&c, qpn, M_RTR, VIRTIO_IB_QPS_RTR);
	c.attrs.ah_attr.grh.sgid_index = 9; /* empty GID entry */
	CHECK_EQ(modify(&c), RRES_ERR_GID);
	CHECK_EQ(modify_to(qpn, M_RTR, VIRTIO_IB_QPS_RTR), RRES_OK);
	CHECK_EQ(qp->attr.dest_qp_num, 0xabc);
	CHECK(qp->attr.av_valid);
	CHECK_EQ(qp->attr.av.flow_label, 0x12345);
	CHECK(qp->attr.av.ipv4);
	CHECK_EQ(modify_to(qpn, M_RTS, VIRTIO_IB_QPS_RTS), RRES_OK);
	CHECK_EQ(qp->attr.sq_psn, 0x654321);
	/* an illegal transition */
	CHECK_EQ(modify_to(qpn, M_RTR, VIRTIO_IB_QPS_RTR), RRES_ERR_STATE);
	CHECK_EQ(modify_to(qpn + 1, M_RTS, VIRTIO_IB_QPS_RTS), RRES_ERR_BAD_HANDLE);

	/* QUERY_QP */
	CHECK_EQ(query_qp(qpn, M_RTR | M_RTS | M_INIT, &a), RRES_OK);
	CHECK_EQ(olen, sizeof(a));
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_RTS);
	CHECK_EQ(a.cur_qp_state, VIRTIO_IB_QPS_RTS);
	CHECK_EQ(a.path_mtu, VIRTIO_IB_MTU_1024);
	CHECK_EQ(le32toh(a.dest_qp_num), 0xabc);
	CHECK_EQ(le32toh(a.rq_psn), 0x123456);
	CHECK_EQ(le32toh(a.sq_psn), 0x654321);
	CHECK_EQ(a.port_num, 1);
	CHECK_EQ(a.timeout, 14);
	CHECK_EQ(a.retry_cnt, 7);
	CHECK_EQ(a.rnr_retry, 6);
	CHECK_EQ(a.min_rnr_timer, 12);
	CHECK_EQ(le32toh(a.cap.max_send_wr), 16);
	CHECK_EQ(le32toh(a.cap.max_inline_data), 64);
	CHECK_EQ(a.ah_attr.ah_flags, VIRTIO_RDMA_DEV_AH_GRH);
	CHECK_EQ(a.ah_attr.port_num, 1);
	CHECK_EQ(a.ah_attr.grh.sgid_index, 1);
	CHECK_EQ(a.ah_attr.grh.hop_limit, 64);
	CHECK_EQ(le32toh(a.ah_attr.grh.flow_label), 0x12345);
	CHECK_EQ(a.ah_attr.dmac[5], 0x02);
	CHECK_EQ(query_qp(qpn, VIRTIO_RDMA_DEV_QP_ALT_PATH, &a), RRES_ERR_ATTR_MASK);
	CHECK_EQ(query_qp(qpn, 1u << 31, &a), RRES_ERR_ATTR_MASK);
	CHECK_EQ(query_qp(qpn + 1, 0, &a), RRES_ERR_BAD_HANDLE);

	/* UD: INIT needs QKEY */
	REQUIRE(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_UD, 0, cq, cq, &ud) == RRES_OK);
	CHECK_EQ(modify_to(ud, VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_PKEY_INDEX |
				       VIRTIO_RDMA_DEV_QP_PORT, VIRTIO_IB_QPS_INIT),
		 RRES_ERR_ATTR_MASK);
	CHECK_EQ(modify_to(ud, VIRTIO_RDMA_DEV_QP_STATE | VIRTIO_RDMA_DEV_QP_PKEY_INDEX |
				       VIRTIO_RDMA_DEV_QP_PORT | VIRTIO_RDMA_DEV_QP_QKEY,
			   VIRTIO_IB_QPS_INIT),
		 RRES_OK);
	CHECK_EQ(rres_qp_lookup(&rd, ud)->attr.qkey, 0x11111111);
	/* to ERR and back to RESET */
	CHECK_EQ(modify_to(qpn, VIRTIO_RDMA_DEV_QP_STATE, VIRTIO_IB_QPS_ERR), RRES_OK);
	CHECK_EQ(modify_to(qpn, VIRTIO_RDMA_DEV_QP_STATE, VIRTIO_IB_QPS_RESET), RRES_OK);
	CHECK_EQ(query_qp(qpn, 0, &a), RRES_OK);
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_RESET);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

static void test_pkey_gid(void)
{
	struct virtio_rdma_dev_cmd_query_pkey qp;
	struct virtio_rdma_dev_cmd_add_gid ag;
	struct virtio_rdma_dev_cmd_del_gid dg;
	static const uint8_t gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9 };

	REQUIRE(setup());
	qp.port = htole32(1);
	qp.index = 0;
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PKEY, &qp, sizeof(qp)), RRES_OK);
	CHECK_EQ(olen, 2);
	CHECK_EQ(get_le16(obuf), 0xffff);
	qp.index = htole16(1);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PKEY, &qp, sizeof(qp)), RRES_ERR_RANGE);
	qp.index = 0;
	qp.port = htole32(2);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_QUERY_PKEY, &qp, sizeof(qp)), RRES_ERR_RANGE);

	memset(&ag, 0, sizeof(ag));
	memcpy(ag.gid, gid, 16);
	ag.gid_type = htole32(VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2);
	ag.index = htole16(RRES_GID_FIRST_DRV);
	ag.port_num = htole32(1);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_OK);
	CHECK_EQ(olen, 0);
	REQUIRE(rres_gid_get(&rd, RRES_GID_FIRST_DRV) != NULL);
	CHECK_MEM(rres_gid_get(&rd, RRES_GID_FIRST_DRV), gid, 16);
	ag.index = htole16(RRES_GID_FIRST_DRV + 1);
	ag.gid_type = htole32(VIRTIO_RDMA_DEV_GID_TYPE_ROCE);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_ERR_GID);
	ag.gid_type = htole32(VIRTIO_RDMA_DEV_GID_TYPE_IB);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_ERR_GID);
	ag.gid_type = htole32(VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2);
	ag.port_num = htole32(0);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_ERR_RANGE);
	ag.port_num = htole32(1);
	ag.index = htole16(RRES_GID_IPV4); /* the device's own entries */
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_ERR_GID);
	ag.index = htole16(RRES_GID_TBL_LEN);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag)), RRES_ERR_GID);

	dg.index = htole16(RRES_GID_FIRST_DRV);
	dg.port = htole32(3);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_DEL_GID, &dg, sizeof(dg)), RRES_ERR_RANGE);
	dg.port = htole32(1);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_DEL_GID, &dg, sizeof(dg)), RRES_OK);
	CHECK(rres_gid_get(&rd, RRES_GID_FIRST_DRV) == NULL);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_DEL_GID, &dg, sizeof(dg)), RRES_ERR_GID);
	dg.index = htole16(RRES_GID_LINKLOCAL);
	CHECK_EQ(X(VIRTIO_RDMA_DEV_CMD_DEL_GID, &dg, sizeof(dg)), RRES_ERR_GID);
	CHECK_EQ(failures_with_state_change, 0);
	teardown();
}

/* The core's ring mapping follows the virtio-rdma layout: CQ c on ring c,
 * QP pair i on rings N+2i-1 / N+2i, nothing beyond 1+N+2M. */
static void test_rings(void)
{
	uint32_t pd, cq, cq2, qpn, idx, pair;
	struct rres_qp *qp;
	bool is_send = false;

	REQUIRE(setup());
	CHECK_EQ(rres_ring_count(&rd), virtio_rdma_dev_vq_count(4, 8));
	CHECK_EQ(rres_ring_decode(&rd, 0, &idx), VRDMA_VQ_CTRL);
	CHECK_EQ(rres_ring_decode(&rd, 21, &idx), VRDMA_VQ_INVALID);
	CHECK_EQ(rres_ring_decode(&rd, UINT32_MAX, &idx), VRDMA_VQ_INVALID);
	CHECK(rres_ring_usable(&rd, 0));
	pd = pd_create();
	cq = cq_create(16);
	cq2 = cq_create(16);
	CHECK_EQ(rres_cq_lookup(&rd, cq - 1)->vq, cq);
	CHECK(rres_ring_cq(&rd, cq) == rres_cq_lookup(&rd, cq - 1));
	CHECK(rres_ring_cq(&rd, cq2) == rres_cq_lookup(&rd, cq2 - 1));
	CHECK(rres_ring_usable(&rd, cq));
	CHECK(!rres_ring_usable(&rd, 4)); /* CQ 4 not created */
	CHECK_EQ(rres_ring_decode(&rd, 4, &idx), VRDMA_VQ_CQ);
	CHECK_EQ(idx, 3);
	REQUIRE(qp_create_raw(pd, VIRTIO_RDMA_DEV_QPT_RC, 0, cq, cq2, &qpn) == RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	pair = virtio_rdma_dev_qp_pair(qpn);
	CHECK_EQ(qp->sq_vq, virtio_rdma_dev_vq_sq(4, pair));
	CHECK_EQ(qp->rq_vq, virtio_rdma_dev_vq_rq(4, pair));
	CHECK_EQ(qp->sq_vq, 4 + 2 * pair - 1);
	CHECK(rres_ring_qp(&rd, qp->sq_vq, &is_send) == qp);
	CHECK(is_send);
	CHECK(rres_ring_qp(&rd, qp->rq_vq, &is_send) == qp);
	CHECK(!is_send);
	CHECK(rres_ring_usable(&rd, qp->sq_vq) && rres_ring_usable(&rd, qp->rq_vq));
	/* pair 1 (GSI) and the last pair */
	CHECK_EQ(rres_ring_decode(&rd, 5, &idx), VRDMA_VQ_SQ);
	CHECK_EQ(idx, 1);
	CHECK_EQ(rres_ring_decode(&rd, 6, &idx), VRDMA_VQ_RQ);
	CHECK_EQ(idx, 1);
	CHECK_EQ(rres_ring_decode(&rd, 20, &idx), VRDMA_VQ_RQ);
	CHECK_EQ(idx, 8);
	CHECK(!rres_ring_usable(&rd, 5));
	/* after a reset the layout stays */
	rres_dev_reset(&rd);
	CHECK_EQ(rres_ring_count(&rd), 21);
	CHECK(rres_ring_qp(&rd, 4 + 2 * pair - 1, &is_send) == NULL);
	teardown();
}

/* Every command counted once per execution, successes and failures. */
static void test_counters(void)
{
	uint64_t ok, err;

	REQUIRE(setup());
	ok = rd.stats.ok;
	err = rd.stats.err;
	(void)pd_create();
	(void)one32(VIRTIO_RDMA_DEV_CMD_DESTROY_PD, 77);
	CHECK_EQ(rd.stats.ok, ok + 1);
	CHECK_EQ(rd.stats.err, err + 1);
	CHECK_EQ(rd.stats.rdma_dev_cmds[VIRTIO_RDMA_DEV_CMD_CREATE_PD], 1);
	CHECK_EQ(rd.stats.rdma_dev_cmds[VIRTIO_RDMA_DEV_CMD_DESTROY_PD], 1);
	CHECK_EQ(rd.stats.errs[RRES_ERR_BAD_HANDLE], 1);
	teardown();
}

int main(void)
{
	TEST_PROGRAM("test_virtio_rdma_ctrl");
	RUN(test_config);
	RUN(test_unknown_and_lengths);
	RUN(test_query_port);
	RUN(test_pd_cq);
	RUN(test_dma_mr);
	RUN(test_create_mr_map_sg);
	RUN(test_reg_user_mr);
	RUN(test_qp_create);
	RUN(test_modify_query_qp);
	RUN(test_pkey_gid);
	RUN(test_rings);
	RUN(test_counters);
	return TEST_DONE();
}
