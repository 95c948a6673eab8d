/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RoCE device control path (src/backend/rres_*.c) driven through
 * rres_ctrl_exec() with wire-format commands: every command's success path,
 * every error path (each must leave no state behind), the QP state machine
 * table for RC/UC/UD, limits, 10,000 create/destroy cycles, and MR page
 * translation against a real vhost_mem backed by memfd regions.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "common/test_guest_mem.h"
#include "common/util.h"
#include "backend/netdev.h"
#include "backend/rres_dev.h"
#include "vhost/vhost_server.h"
#include "vhost/vhost_mem.h"

/* Two regions of shared memory: A (64 pages) and B (16 pages), a gap between. */
#define GPA_A   0x100000ull
#define PAGES_A 64
#define GPA_B   0x400000ull
#define PAGES_B 16
#define PG      4096ull

static struct rres_dev rd;
static struct vhost_mem mem;
static uint8_t *map_a, *map_b; /* our own view of the same memfds */
static uint8_t obuf[512];
static size_t olen;

static const uint8_t MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static struct rres_dev_cfg base_cfg(void)
{
	struct rres_dev_cfg c;

	memset(&c, 0, sizeof(c));
	memcpy(c.mac, MAC, 6);
	c.has_ip4 = true;
	c.ip4 = htonl(0x0a000001);
	c.eth_mtu = 1500;
	c.max_rdma_qps = 16;
	c.max_rdma_cqs = 8;
	c.max_pd = 8;
	c.max_mr = 8;
	c.max_ah = 8;
	c.mem = &mem;
	c.deterministic = true;
	c.seed = 42;
	return c;
}

static bool setup_cfg(const struct rres_dev_cfg *c)
{
	vhost_mem_init(&mem);
	map_a = tc_guest_region(&mem, GPA_A, PAGES_A * PG);
	map_b = tc_guest_region(&mem, GPA_B, PAGES_B * PG);
	if (!map_a || !map_b)
		return false;
	return rres_dev_init(&rd, c) == 0;
}

static bool setup(void)
{
	struct rres_dev_cfg c = base_cfg();

	return setup_cfg(&c);
}

static void teardown(void)
{
	rres_dev_fini(&rd);
	vhost_mem_clear(&mem);
	if (map_a)
		munmap(map_a, PAGES_A * PG);
	if (map_b)
		munmap(map_b, PAGES_B * PG);
	map_a = map_b = NULL;
}

static enum rres_err X(uint8_t cmd, const void *in, size_t len)
{
	memset(obuf, 0xa5, sizeof(obuf));
	return rres_ctrl_exec_err(&rd, cmd, in, len, obuf, sizeof(obuf), &olen);
}

static uint32_t out32(size_t off)
{
	return get_le32(obuf + off);
}

static void counts(struct rres_counts *c)
{
	rres_dev_counts(&rd, c);
}

static bool no_objects(void)
{
	struct rres_counts c;

	counts(&c);
	return !c.pd && !c.mr && !c.cq && !c.qp && !c.ah && !rd.mr_pages;
}

/* ---- command builders ----------------------------------------------------- */

static enum rres_err pd_create(uint32_t *pdn)
{
	enum rres_err e = X(VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0);

	*pdn = e ? 0 : out32(0);
	return e;
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

static enum rres_err cq_create(uint32_t cqe, uint32_t *cqn)
{
	enum rres_err e = one32(VIRTIO_NET_CTRL_ROCE_CREATE_CQ, cqe);

	*cqn = e ? 0 : out32(0);
	return e;
}

static enum rres_err dma_mr(uint32_t pdn, uint32_t access, uint32_t *mrn, uint32_t *lkey,
			    uint32_t *rkey)
{
	enum rres_err e = two32(VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, pdn, access);

	*mrn = e ? 0 : out32(0);
	*lkey = e ? 0 : out32(4);
	*rkey = e ? 0 : out32(8);
	return e;
}

/* REG_USER_MR with an explicit npages field and page list (len_adj changes
 * the command length by that many bytes). */
static enum rres_err reg_mr_raw(uint32_t pdn, uint32_t access, uint64_t va, uint64_t len,
				uint32_t npages_field, const uint64_t *gpas, uint32_t ngpas,
				long len_adj, uint32_t *mrn, uint32_t *lkey, uint32_t *rkey)
{
	size_t n = 32 + 8 * (size_t)ngpas + 8;
	uint8_t *buf = calloc(1, n);
	struct virtio_rdma_cmd_reg_user_mr *c = (void *)buf;
	enum rres_err e;
	uint32_t i;

	c->pdn = htole32(pdn);
	c->access_flags = htole32(access);
	c->virt_addr = htole64(va);
	c->length = htole64(len);
	c->npages = htole32(npages_field);
	for (i = 0; i < ngpas; i++)
		c->pages[i] = htole64(gpas[i]);
	e = X(VIRTIO_NET_CTRL_ROCE_REG_USER_MR, buf, (size_t)((long)(32 + 8 * (size_t)ngpas) + len_adj));
	if (mrn)
		*mrn = e ? 0 : out32(0);
	if (lkey)
		*lkey = e ? 0 : out32(4);
	if (rkey)
		*rkey = e ? 0 : out32(8);
	free(buf);
	return e;
}

static enum rres_err reg_mr(uint32_t pdn, uint32_t access, uint64_t va, uint64_t len,
			    const uint64_t *gpas, uint32_t n, uint32_t *mrn, uint32_t *lkey,
			    uint32_t *rkey)
{
	return reg_mr_raw(pdn, access, va, len, n, gpas, n, 0, mrn, lkey, rkey);
}

/* Register `pages` consecutive pages of region A starting at page `first`. */
static enum rres_err reg_a(uint32_t pdn, uint32_t access, uint32_t first, uint32_t pages,
			   uint32_t *mrn, uint32_t *lkey, uint32_t *rkey)
{
	uint64_t g[PAGES_A];
	uint32_t i;

	for (i = 0; i < pages; i++)
		g[i] = GPA_A + (first + i) * PG;
	return reg_mr(pdn, access, 0x7000000000ull, pages * PG, g, pages, mrn, lkey, rkey);
}

struct qcap {
	uint32_t swr, rwr, ssge, rsge, inl;
};

static enum rres_err qp_create_cap(uint32_t pdn, uint8_t type, uint32_t scq, uint32_t rcq,
				   const struct qcap *cap, uint8_t sig_all, uint32_t *qpn)
{
	struct virtio_rdma_cmd_create_qp c;
	enum rres_err e;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.qp_type = type;
	c.sq_sig_all = sig_all;
	c.send_cqn = htole32(scq);
	c.recv_cqn = htole32(rcq);
	c.cap.max_send_wr = htole32(cap->swr);
	c.cap.max_recv_wr = htole32(cap->rwr);
	c.cap.max_send_sge = htole32(cap->ssge);
	c.cap.max_recv_sge = htole32(cap->rsge);
	c.cap.max_inline_data = htole32(cap->inl);
	e = X(VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c));
	*qpn = e ? 0 : out32(0);
	return e;
}

static const struct qcap CAP = { 64, 64, 4, 4, 128 };

static enum rres_err qp_create(uint32_t pdn, uint8_t type, uint32_t scq, uint32_t rcq,
			       uint32_t *qpn)
{
	return qp_create_cap(pdn, type, scq, rcq, &CAP, 0, qpn);
}

static void ah_attr_fill(struct virtio_rdma_ah_attr *a, uint8_t sgid_index)
{
	static const uint8_t dgid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					  0x50, 0x54, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02 };
	static const uint8_t dmac[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x02 };

	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid, dgid, 16);
	a->grh.flow_label = htole32(0x12345);
	a->grh.sgid_index = sgid_index;
	a->grh.hop_limit = 64;
	a->grh.traffic_class = 0x28;
	memcpy(a->dmac, dmac, 6);
}

/* A MODIFY_QP with every attribute set to a valid value. */
static void mq_fill(struct virtio_rdma_cmd_modify_qp *c, uint32_t qpn, uint32_t mask,
		    uint8_t state)
{
	memset(c, 0, sizeof(*c));
	c->qpn = htole32(qpn);
	c->attr_mask = htole32(mask);
	c->qp_state = state;
	c->path_mtu = VIRTIO_IB_MTU_1024;
	c->max_rd_atomic = 4;
	c->max_dest_rd_atomic = 4;
	c->min_rnr_timer = 12;
	c->timeout = 14;
	c->retry_cnt = 7;
	c->rnr_retry = 6;
	c->qkey = htole32(0x11111111);
	c->rq_psn = htole32(0x123456);
	c->sq_psn = htole32(0x654321);
	c->dest_qp_num = htole32(0xabc);
	c->qp_access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
				     VIRTIO_IB_ACCESS_REMOTE_READ);
	c->rate_limit = htole32(1000);
	ah_attr_fill(&c->ah_attr, 0);
}

static enum rres_err modify(const struct virtio_rdma_cmd_modify_qp *c)
{
	return X(VIRTIO_NET_CTRL_ROCE_MODIFY_QP, c, sizeof(*c));
}

static enum rres_err modify_to(uint32_t qpn, uint32_t mask, uint8_t state)
{
	struct virtio_rdma_cmd_modify_qp c;

	mq_fill(&c, qpn, mask | VIRTIO_IB_QP_STATE, state);
	return modify(&c);
}

static enum rres_err query(uint32_t qpn, struct virtio_rdma_ack_query_qp *a)
{
	enum rres_err e = two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, 0);

	if (!e)
		memcpy(a, obuf, sizeof(*a));
	return e;
}

static int qp_state(uint32_t qpn)
{
	struct virtio_rdma_ack_query_qp a;

	return query(qpn, &a) ? -1 : a.qp_state;
}

static enum rres_err ah_create(uint32_t pdn, const struct virtio_rdma_ah_attr *attr, uint32_t *ah)
{
	struct virtio_rdma_cmd_create_ah c;
	enum rres_err e;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.ah_attr = *attr;
	e = X(VIRTIO_NET_CTRL_ROCE_CREATE_AH, &c, sizeof(c));
	*ah = e ? 0 : out32(0);
	return e;
}

static enum rres_err gid_add(uint16_t idx, const uint8_t gid[16])
{
	struct virtio_rdma_cmd_add_gid c;

	memset(&c, 0, sizeof(c));
	c.index = htole16(idx);
	memcpy(c.gid, gid, 16);
	return X(VIRTIO_NET_CTRL_ROCE_ADD_GID, &c, sizeof(c));
}

static enum rres_err gid_del(uint16_t idx)
{
	le16 v = htole16(idx);

	return X(VIRTIO_NET_CTRL_ROCE_DEL_GID, &v, 2);
}

/* Required attributes per transition into a state (for the tests that walk
 * a QP up the ladder). */
#define RC_INIT_REQ VIRTIO_IB_QP_ACCESS_FLAGS
#define RC_RTR_REQ (VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |           \
		    VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER)
#define RC_RTS_REQ (VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |    \
		    VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC)
#define UC_RTR_REQ (VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |           \
		    VIRTIO_IB_QP_RQ_PSN)

static uint32_t req_init(uint8_t t)
{
	return t == VIRTIO_IB_QPT_RC || t == VIRTIO_IB_QPT_UC ? VIRTIO_IB_QP_ACCESS_FLAGS
							       : VIRTIO_IB_QP_QKEY;
}

static uint32_t req_rtr(uint8_t t)
{
	return t == VIRTIO_IB_QPT_RC ? RC_RTR_REQ : t == VIRTIO_IB_QPT_UC ? UC_RTR_REQ : 0;
}

static uint32_t req_rts(uint8_t t)
{
	return t == VIRTIO_IB_QPT_RC ? RC_RTS_REQ : VIRTIO_IB_QP_SQ_PSN;
}

/* Drive QP qpn of type t from RESET to state s. Returns true on success. */
static bool goto_state(uint32_t qpn, uint8_t t, uint8_t s)
{
	if (s == VIRTIO_IB_QPS_RESET)
		return true;
	if (s == VIRTIO_IB_QPS_ERR)
		return modify_to(qpn, 0, VIRTIO_IB_QPS_ERR) == RRES_OK;
	if (modify_to(qpn, req_init(t), VIRTIO_IB_QPS_INIT))
		return false;
	if (s == VIRTIO_IB_QPS_INIT)
		return true;
	if (modify_to(qpn, req_rtr(t), VIRTIO_IB_QPS_RTR))
		return false;
	if (s == VIRTIO_IB_QPS_RTR)
		return true;
	if (modify_to(qpn, req_rts(t), VIRTIO_IB_QPS_RTS))
		return false;
	if (s == VIRTIO_IB_QPS_RTS)
		return true;
	if (s == VIRTIO_IB_QPS_SQD)
		return modify_to(qpn, 0, VIRTIO_IB_QPS_SQD) == RRES_OK;
	if (s == VIRTIO_IB_QPS_SQE)
		return rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_SQE) == 0;
	return false;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_query_device_port(void)
{
	struct virtio_rdma_ack_query_device d;
	struct virtio_rdma_ack_query_port p;
	uint8_t junk[4] = { 0 };

	REQUIRE(setup());
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0), RRES_OK);
	CHECK_EQ(olen, sizeof(d));
	memcpy(&d, obuf, sizeof(d));
	CHECK_EQ(le64toh(d.device_cap_flags), VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN);
	CHECK_EQ(le64toh(d.max_mr_size), RRES_DEF_MAX_MR_SIZE);
	CHECK_EQ(le64toh(d.page_size_cap), 4096);
	CHECK_EQ(le32toh(d.hw_ver), 1);
	CHECK_EQ(le32toh(d.max_qp_wr), RRES_DEF_MAX_QP_WR);
	CHECK_EQ(le32toh(d.max_send_sge), RRES_DEF_MAX_SGE);
	CHECK_EQ(le32toh(d.max_recv_sge), RRES_DEF_MAX_SGE);
	CHECK_EQ(le32toh(d.max_sge_rd), RRES_DEF_MAX_SGE);
	CHECK_EQ(le32toh(d.max_cqe), RRES_DEF_MAX_CQE);
	CHECK_EQ(le32toh(d.max_mr), 8);
	CHECK_EQ(le32toh(d.max_pd), 8);
	CHECK_EQ(le32toh(d.max_ah), 8);
	CHECK_EQ(le32toh(d.max_qp_rd_atom), RRES_DEF_MAX_QP_RD_ATOM);
	CHECK_EQ(le32toh(d.max_qp_init_rd_atom), RRES_DEF_MAX_QP_RD_ATOM);
	CHECK_EQ(d.local_ca_ack_delay, 15);
	for (int i = 0; i < 14; i++)
		CHECK_EQ(d.reserved[i], 0);
	CHECK_EQ(rd.attr.max_qp, 15);
	CHECK_EQ(rd.attr.max_cq, 8);
	CHECK_EQ(rd.attr.active_mtu, VIRTIO_IB_MTU_1024);

	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0), RRES_OK);
	CHECK_EQ(olen, sizeof(p));
	memcpy(&p, obuf, sizeof(p));
	CHECK_EQ(le32toh(p.gid_tbl_len), 16);
	CHECK_EQ(le32toh(p.max_msg_sz), 1u << 31);

	/* Wrong lengths, no room for the ack, the plain wrapper. */
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, junk, 1), RRES_ERR_BAD_LEN);
	CHECK_EQ(olen, 0);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, junk, 4), RRES_ERR_BAD_LEN);
	CHECK_EQ(rres_ctrl_exec_err(&rd, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, obuf, 127, &olen),
		 RRES_ERR_OUT_SPACE);
	CHECK_EQ(rres_ctrl_exec_err(&rd, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, NULL, 64, &olen),
		 RRES_ERR_OUT_SPACE);
	CHECK_EQ(rres_ctrl_exec(&rd, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, obuf, 32, &olen),
		 VIRTIO_NET_OK);
	CHECK_EQ(rres_ctrl_exec(&rd, VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0, obuf, 31, &olen),
		 VIRTIO_NET_ERR);
	CHECK_EQ(rd.stats.errs[RRES_ERR_BAD_LEN], 2);
	CHECK_EQ(rd.stats.errs[RRES_ERR_OUT_SPACE], 3);
	teardown();
}

static void test_unknown_cmd_and_lengths(void)
{
	uint8_t buf[1024] = { 0 };
	uint8_t cmd;

	REQUIRE(setup());
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_NUM_CMDS, NULL, 0), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(X(255, buf, 8), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(rd.stats.errs[RRES_ERR_UNKNOWN_CMD], 2);
	/* Every fixed-size command with one byte too few / too many. */
	for (cmd = 0; cmd < VIRTIO_NET_CTRL_ROCE_NUM_CMDS; cmd++) {
		static const size_t len[] = { 0, 0, 4, 4, 0, 4, 8, 32, 4, 56, 128, 8, 4, 48, 8, 24, 2, 8 };

		if (cmd == VIRTIO_NET_CTRL_ROCE_REG_USER_MR)
			continue;
		if (len[cmd])
			CHECK_EQ(X(cmd, buf, len[cmd] - 1), RRES_ERR_BAD_LEN);
		CHECK_EQ(X(cmd, buf, len[cmd] + 1), RRES_ERR_BAD_LEN);
		CHECK_EQ(X(cmd, buf, len[cmd] + 8), RRES_ERR_BAD_LEN);
		if (len[cmd])
			CHECK_EQ(X(cmd, NULL, len[cmd]), RRES_ERR_BAD_LEN);
	}
	CHECK(no_objects());
	CHECK_EQ(rd.stats.ok, 0);
	teardown();
}

static void test_pd(void)
{
	uint32_t pdn, pdn2, mrn, lk, rk, cqn, qpn, ah;
	struct virtio_rdma_ah_attr attr;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(olen, 4);
	CHECK(pdn != 0);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	CHECK(pdn2 != pdn);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_OK);
	CHECK_EQ(olen, 0);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, 0xffffffff), RRES_ERR_BAD_HANDLE);

	/* A PD in use by an MR, a QP or an AH cannot go. */
	CHECK_EQ(dma_mr(pdn, 0, &mrn, &lk, &rk), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	ah_attr_fill(&attr, 0);
	CHECK_EQ(ah_create(pdn, &attr, &ah), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_ERR_IN_USE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, ah), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
	CHECK(no_objects());
	CHECK_EQ(rd.stats.errs[RRES_ERR_IN_USE], 3);
	CHECK_EQ(rd.stats.errs[RRES_ERR_BAD_HANDLE], 3);
	teardown();
}

static void test_cq(void)
{
	uint32_t cqn, cqn2, pdn, qpn;
	struct rres_cq *cq;

	REQUIRE(setup());
	CHECK_EQ(cq_create(0, &cqn), RRES_ERR_RANGE);
	CHECK_EQ(cq_create(RRES_DEF_MAX_CQE + 1, &cqn), RRES_ERR_RANGE);
	CHECK_EQ(rd.cqs.used, 0);
	CHECK_EQ(cq_create(RRES_DEF_MAX_CQE, &cqn), RRES_OK);
	CHECK_EQ(cqn, 0); /* cqn = CQ index, the first is 0 */
	cq = rres_cq_lookup(&rd, cqn);
	REQUIRE(cq);
	CHECK_EQ(cq->cqe, RRES_DEF_MAX_CQE);
	CHECK_EQ(cq->vq, 3); /* 2N+1+c with N = 1 */
	CHECK_EQ(cq_create(1, &cqn2), RRES_OK);
	CHECK_EQ(cqn2, 1);
	CHECK_EQ(rres_cq_lookup(&rd, cqn2)->vq, 4);

	/* REQ_NOTIFY_CQ flags. */
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, 0), RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, 4), RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, 0x80000001), RRES_ERR_FLAGS);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, 7, 1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, 8, 1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(cq->armed, 0);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, VIRTIO_IB_NOTIFY_SOLICITED), RRES_OK);
	CHECK_EQ(cq->armed, RRES_CQ_ARM_SOLICITED);
	/* Solicited arm: a plain completion does not notify, a solicited one
	 * does and disarms. */
	CHECK(!rres_cq_notify_check(cq, false));
	CHECK(rres_cq_notify_check(cq, true));
	CHECK_EQ(cq->armed, 0);
	CHECK(!rres_cq_notify_check(cq, true));
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, VIRTIO_IB_NOTIFY_NEXT_COMPLETION), RRES_OK);
	CHECK(rres_cq_notify_check(cq, false));
	CHECK(!rres_cq_notify_check(cq, false));
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_REQ_NOTIFY_CQ, cqn, 3), RRES_OK);
	CHECK_EQ(cq->armed, 3);
	CHECK(rres_cq_notify_check(cq, false));

	/* A CQ used by a QP (as send or as receive CQ) cannot go. */
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn2, &qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn2), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn2), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, 99), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK(no_objects());
	teardown();
}

static void test_dma_mr(void)
{
	uint32_t pdn, pdn2, mrn, lk, rk;
	struct rres_mr *mr;
	struct iovec iov[4];

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	CHECK_EQ(dma_mr(pdn, VIRTIO_IB_ACCESS_REMOTE_READ, &mrn, &lk, &rk), RRES_ERR_FLAGS);
	CHECK_EQ(dma_mr(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE, &mrn, &lk, &rk),
		 RRES_ERR_FLAGS);
	CHECK_EQ(dma_mr(pdn, 1u << 3, &mrn, &lk, &rk), RRES_ERR_FLAGS);
	CHECK_EQ(dma_mr(77, 0, &mrn, &lk, &rk), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(rd.mrs.used, 0);
	CHECK_EQ(dma_mr(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mrn, &lk, &rk), RRES_OK);
	CHECK_EQ(olen, 12);
	CHECK(mrn != 0);
	CHECK_EQ(lk >> RRES_KEY_BITS, mrn);
	CHECK_EQ(rk, 0);
	mr = rres_mr_lookup(&rd, mrn);
	REQUIRE(mr);
	CHECK_EQ(mr->type, RRES_MR_DMA);

	/* Lookups: the key must match exactly, the PD too, and the access. */
	CHECK(rres_mr_lookup_lkey(&rd, lk, rres_pd_lookup(&rd, pdn), VIRTIO_IB_ACCESS_LOCAL_WRITE) == mr);
	CHECK(rres_mr_lookup_lkey(&rd, lk ^ 1, rres_pd_lookup(&rd, pdn), 0) == NULL);
	CHECK(rres_mr_lookup_lkey(&rd, lk, rres_pd_lookup(&rd, pdn2), 0) == NULL);
	CHECK(rres_mr_lookup_lkey(&rd, lk, rres_pd_lookup(&rd, pdn), VIRTIO_IB_ACCESS_REMOTE_READ) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, lk, rres_pd_lookup(&rd, pdn), 0) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, 0, rres_pd_lookup(&rd, pdn), 0) == NULL);

	/* A DMA MR addresses GPAs through the live memory table. */
	CHECK_EQ(rres_mr_to_iov(&rd, mr, GPA_A + 100, 200, iov, 4), 1);
	CHECK(iov[0].iov_len == 200);
	memcpy(iov[0].iov_base, "dma!", 4);
	CHECK_MEM(map_a + 100, "dma!", 4);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, GPA_A + PAGES_A * PG - 10, 20, iov, 4), -EFAULT);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x10, 1, iov, 4), -EFAULT);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, GPA_B, 0, iov, 4), 0);

	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, 1u << 30), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_OK);
	CHECK(no_objects());
	teardown();
}

static void test_reg_user_mr(void)
{
	const uint32_t rw = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			    VIRTIO_IB_ACCESS_REMOTE_READ;
	uint64_t va = 0x7f0000001f00ull, len = 0x1900; /* 0x100 + 0x1000 + 0x800: 3 pages */
	uint64_t g[4] = { GPA_A + 5 * PG, GPA_B + 2 * PG, GPA_A + 6 * PG, GPA_A };
	uint32_t pdn, mrn, lk, rk, mrn2, lk2, rk2;
	struct vhost_mem_region *ra, *rb;
	struct rres_mr *mr;
	struct iovec iov[8];
	uint8_t data[0x2200];
	int n, i;

	REQUIRE(setup());
	ra = vhost_mem_find(&mem, GPA_A);
	rb = vhost_mem_find(&mem, GPA_B);
	REQUIRE(ra && rb);
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(pd_create(&pdn), RRES_OK);

	/* Every malformed registration fails and leaves nothing. */
	CHECK_EQ(reg_mr_raw(pdn, rw, va, len, 3, g, 3, -1, NULL, NULL, NULL), RRES_ERR_BAD_LEN);
	CHECK_EQ(reg_mr_raw(pdn, rw, va, len, 3, g, 3, 8, NULL, NULL, NULL), RRES_ERR_BAD_LEN);
	CHECK_EQ(reg_mr_raw(pdn, rw, va, len, 3, g, 3, -8, NULL, NULL, NULL), RRES_ERR_BAD_LEN);
	CHECK_EQ(reg_mr_raw(pdn, rw, va, len, 3, g, 3, -(32 + 24 - 4), NULL, NULL, NULL), RRES_ERR_BAD_LEN);
	CHECK_EQ(reg_mr_raw(pdn, rw, va, len, 0xffffffff, g, 3, 0, NULL, NULL, NULL), RRES_ERR_BAD_LEN);
	CHECK_EQ(reg_mr(pdn, rw, va, len, g, 2, NULL, NULL, NULL), RRES_ERR_NPAGES);
	CHECK_EQ(reg_mr(pdn, rw, va, len, g, 4, NULL, NULL, NULL), RRES_ERR_NPAGES);
	CHECK_EQ(reg_mr(pdn, rw, va & ~0xfffull, 3 * PG, g, 4, NULL, NULL, NULL), RRES_ERR_NPAGES);
	CHECK_EQ(reg_mr(pdn, rw, va, 0, g, 1, NULL, NULL, NULL), RRES_ERR_NPAGES);
	CHECK_EQ(reg_mr(pdn, rw, 0, 1, g, 0, NULL, NULL, NULL), RRES_ERR_NPAGES);
	CHECK_EQ(reg_mr(pdn, rw, UINT64_MAX - 10, 100, g, 1, NULL, NULL, NULL), RRES_ERR_RANGE);
	CHECK_EQ(reg_mr(pdn, rw, va, RRES_DEF_MAX_MR_SIZE + 1, g, 3, NULL, NULL, NULL), RRES_ERR_RANGE);
	CHECK_EQ(reg_mr(pdn, VIRTIO_IB_ACCESS_REMOTE_WRITE, va, len, g, 3, NULL, NULL, NULL), RRES_ERR_FLAGS);
	CHECK_EQ(reg_mr(pdn, rw | (1u << 3), va, len, g, 3, NULL, NULL, NULL), RRES_ERR_FLAGS);
	CHECK_EQ(reg_mr(pdn, 1u << 31, va, len, g, 3, NULL, NULL, NULL), RRES_ERR_FLAGS);
	CHECK_EQ(reg_mr(pdn + 1, rw, va, len, g, 3, NULL, NULL, NULL), RRES_ERR_BAD_HANDLE);
	{
		uint64_t bad[3];

		memcpy(bad, g, sizeof(bad));
		bad[1] = GPA_B + 2 * PG + 8; /* misaligned */
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
		bad[1] = GPA_A + PAGES_A * PG; /* the gap after A */
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
		bad[1] = 0; /* below everything */
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
		bad[1] = GPA_B + PAGES_B * PG;
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
		bad[1] = 0xfffffffffffff000ull;
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
		bad[2] = GPA_B - PG; /* last page bad: nothing held from the others */
		bad[1] = GPA_B;
		CHECK_EQ(reg_mr(pdn, rw, va, len, bad, 3, NULL, NULL, NULL), RRES_ERR_PAGE);
	}
	CHECK_EQ(rd.mrs.used, 0);
	CHECK_EQ(rd.mrs.nfree, rd.mrs.cap);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(rb->refcnt, 1);
	CHECK_EQ(rres_pd_lookup(&rd, pdn)->refcnt, 0);

	/* Success: pages over two regions, unaligned start. */
	CHECK_EQ(reg_mr(pdn, rw, va, len, g, 3, &mrn, &lk, &rk), RRES_OK);
	CHECK_EQ(olen, 12);
	CHECK_EQ(lk >> RRES_KEY_BITS, mrn);
	CHECK_EQ(rk >> RRES_KEY_BITS, mrn);
	CHECK(lk != 0 && rk != 0);
	CHECK_EQ(ra->refcnt, 2); /* one reference per region, not per page */
	CHECK_EQ(rb->refcnt, 2);
	CHECK_EQ(rd.mr_pages, 3);
	mr = rres_mr_lookup(&rd, mrn);
	REQUIRE(mr);
	CHECK_EQ(mr->type, RRES_MR_USER);
	CHECK_EQ(mr->npages, 3);
	CHECK_EQ(mr->iova, va);
	CHECK_EQ(mr->length, len);
	CHECK(mr->pages[0] == ra->host + 5 * PG);
	CHECK(mr->pages[1] == rb->host + 2 * PG);
	CHECK(mr->pages[2] == ra->host + 6 * PG);

	/* Whole MR through iovecs: 0x100 bytes in page 0, 4096 in page 1,
	 * 0x800 in page 2; no two pages are contiguous in the host. */
	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	n = rres_mr_to_iov(&rd, mr, va, len, iov, 8);
	CHECK_EQ(n, 3);
	{
		size_t off = 0;

		for (i = 0; i < n; i++) {
			memcpy(iov[i].iov_base, data + off, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		CHECK_EQ(off, len);
	}
	CHECK_MEM(map_a + 5 * PG + 0xf00, data, 0x100);
	CHECK_MEM(map_b + 2 * PG, data + 0x100, PG);
	CHECK_MEM(map_a + 6 * PG, data + 0x1100, 0x800);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va - 1, 2, iov, 8), -EFAULT);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va + len - 1, 2, iov, 8), -EFAULT);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va + len, 0, iov, 8), 0);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va + len - 1, 1, iov, 8), 1);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va, len, iov, 2), -E2BIG);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, va + 0x100, PG + 10, iov, 8), 2);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, UINT64_MAX, 1, iov, 8), -EFAULT);

	/* Keys: exact match, right PD, remote lookups need remote access. */
	CHECK(rres_mr_lookup_rkey(&rd, rk, mr->pd, VIRTIO_IB_ACCESS_REMOTE_WRITE) == mr);
	CHECK(rres_mr_lookup_rkey(&rd, rk ^ 0x80, mr->pd, 0) == NULL);
	CHECK(rres_mr_lookup_lkey(&rd, lk, mr->pd, VIRTIO_IB_ACCESS_LOCAL_WRITE) == mr);

	/* Contiguous pages of one region merge into one iovec; local-only MR
	 * has no rkey. */
	CHECK_EQ(reg_a(pdn, 0, 10, 4, &mrn2, &lk2, &rk2), RRES_OK);
	CHECK_EQ(rk2, 0);
	CHECK(lk2 != lk);
	CHECK_EQ(rres_mr_to_iov(&rd, rres_mr_lookup(&rd, mrn2), 0x7000000000ull, 4 * PG, iov, 1), 1);
	CHECK(rres_mr_lookup_lkey(&rd, lk2, mr->pd, VIRTIO_IB_ACCESS_LOCAL_WRITE) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, rk2, mr->pd, 0) == NULL);
	CHECK_EQ(ra->refcnt, 3);

	/* Zero-length MR: no pages. */
	CHECK_EQ(reg_mr(pdn, 0, 0x1234, 0, g, 0, &lk2, NULL, NULL), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, lk2), RRES_OK);

	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn2), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(rb->refcnt, 1);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK(no_objects());
	CHECK_EQ(rd.stats.errs[RRES_ERR_PAGE], 6);
	CHECK_EQ(rd.stats.errs[RRES_ERR_NPAGES], 5);
	teardown();
}

/* An MR keeps its pages valid after the driver removes the region. */
static void test_mr_region_removed(void)
{
	uint64_t g[2] = { GPA_B, GPA_B + PG };
	struct vhost_mem_region *rb;
	uint32_t pdn, mrn, lk, rk;
	struct rres_mr *mr;
	struct iovec iov[2];

	REQUIRE(setup());
	rb = vhost_mem_find(&mem, GPA_B);
	REQUIRE(rb);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(reg_mr(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE, 0, 2 * PG, g, 2, &mrn, &lk, &rk), RRES_OK);
	CHECK_EQ(rb->refcnt, 2);
	CHECK_EQ(vhost_mem_remove(&mem, GPA_B, PAGES_B * PG, GPA_B), 0);
	CHECK(vhost_mem_region_dead(rb));
	CHECK_EQ(rb->refcnt, 1);
	mr = rres_mr_lookup(&rd, mrn);
	/* Pages 0 and 1 of B are contiguous: one iovec. */
	CHECK_EQ(rres_mr_to_iov(&rd, mr, PG - 2, 4, iov, 2), 1);
	CHECK_EQ(iov[0].iov_len, 4);
	memcpy(iov[0].iov_base, "abcd", 4);
	CHECK_MEM(map_b + PG - 2, "abcd", 4);
	/* New registrations of the removed pages fail. */
	CHECK_EQ(reg_mr(pdn, 0, 0, PG, g, 1, NULL, NULL, NULL), RRES_ERR_PAGE);
	/* Deregistration drops the last reference (ASan: no leak, no UAF). */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	/* Without a memory table, page registration fails cleanly. */
	rres_dev_set_mem(&rd, NULL);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(reg_mr(pdn, 0, 0, PG, g, 1, NULL, NULL, NULL), RRES_ERR_PAGE);
	CHECK_EQ(dma_mr(pdn, 0, &mrn, &lk, &rk), RRES_OK);
	CHECK_EQ(rres_mr_to_iov(&rd, rres_mr_lookup(&rd, mrn), GPA_A, 1, iov, 2), -EFAULT);
	teardown();
}

static void test_qp_create(void)
{
	uint32_t pdn, cqn, qpn, qpn2, gsi;
	struct qcap cap;
	struct rres_qp *qp;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_SMI, cqn, cqn, &qpn), RRES_ERR_QP_TYPE);
	CHECK_EQ(qp_create(pdn, 5, cqn, cqn, &qpn), RRES_ERR_QP_TYPE);
	CHECK_EQ(qp_create(pdn, 255, cqn, cqn, &qpn), RRES_ERR_QP_TYPE);
	CHECK_EQ(qp_create(pdn + 1, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn + 1, cqn, &qpn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, 1000, &qpn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &CAP, 2, &qpn), RRES_ERR_RANGE);
	cap = CAP;
	cap.swr = RRES_DEF_MAX_QP_WR + 1;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 0, &qpn), RRES_ERR_RANGE);
	cap = CAP;
	cap.rwr = RRES_DEF_MAX_QP_WR + 1;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 0, &qpn), RRES_ERR_RANGE);
	cap = CAP;
	cap.ssge = RRES_DEF_MAX_SGE + 1;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 0, &qpn), RRES_ERR_RANGE);
	cap = CAP;
	cap.rsge = RRES_DEF_MAX_SGE + 1;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 0, &qpn), RRES_ERR_RANGE);
	cap = CAP;
	cap.inl = 513;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 0, &qpn), RRES_ERR_RANGE);
	CHECK(no_objects() || (rd.pds.used == 1 && rd.cqs.used == 1 && rd.qps.used == 0));
	CHECK_EQ(rres_pd_lookup(&rd, pdn)->refcnt, 0);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->refcnt, 0);

	/* Limits exactly at the maximum are fine. */
	cap.swr = cap.rwr = RRES_DEF_MAX_QP_WR;
	cap.ssge = cap.rsge = RRES_DEF_MAX_SGE;
	cap.inl = 512;
	CHECK_EQ(qp_create_cap(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &cap, 1, &qpn), RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	REQUIRE(qp);
	CHECK_EQ(qp->index, 2); /* 0 reserved, 1 = GSI */
	CHECK_EQ(qpn, 2);
	CHECK(qp->sq_sig_all);
	CHECK_EQ(qp->cap.max_inline_data, 512);
	CHECK_EQ(qp->attr.qp_state, VIRTIO_IB_QPS_RESET);
	/* N = 1, M = 8: send 2N+M+1+2i, receive 2N+M+2+2i. */
	CHECK_EQ(qp->sq_vq, 2 + 8 + 1 + 2 * 2);
	CHECK_EQ(qp->rq_vq, 2 + 8 + 2 + 2 * 2);
	CHECK_EQ(rres_pd_lookup(&rd, pdn)->refcnt, 1);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->refcnt, 2);

	/* GSI is QPN 1, only one. */
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_GSI, cqn, cqn, &gsi), RRES_OK);
	CHECK_EQ(gsi, VRDMA_GSI_QPN);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_GSI, cqn, cqn, &qpn2), RRES_ERR_LIMIT);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, gsi), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_GSI, cqn, cqn, &gsi), RRES_OK);
	CHECK_EQ(gsi, VRDMA_GSI_QPN);

	/* Handles: exact QPN only (a stale generation or index 0 is unknown). */
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &qpn2), RRES_OK);
	CHECK_EQ(vrdma_qpn_index(qpn2), 3);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn2 | (1u << 14)), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn2 | (1u << 24)), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, 15), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, 16), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn2), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn2), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, gsi), RRES_OK);
	CHECK_EQ(rd.qps.used, 0);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->refcnt, 0);
	teardown();
}

static void test_qp_modify_rc_ladder(void)
{
	struct virtio_rdma_cmd_modify_qp c;
	struct virtio_rdma_ack_query_qp a;
	uint32_t pdn, cqn, qpn;
	struct rres_qp *qp;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);

	CHECK_EQ(modify_to(qpn, RC_INIT_REQ, VIRTIO_IB_QPS_INIT), RRES_OK);
	CHECK_EQ(olen, 0);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_INIT);
	CHECK_EQ(le32toh(a.qp_access_flags), 7);
	CHECK_EQ(a.path_mtu, 0); /* not set yet */

	CHECK_EQ(modify_to(qpn, RC_RTR_REQ, VIRTIO_IB_QPS_RTR), RRES_OK);
	CHECK_EQ(modify_to(qpn, RC_RTS_REQ, VIRTIO_IB_QPS_RTS), RRES_OK);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_RTS);
	CHECK_EQ(a.path_mtu, VIRTIO_IB_MTU_1024);
	CHECK_EQ(a.max_rd_atomic, 4);
	CHECK_EQ(a.max_dest_rd_atomic, 4);
	CHECK_EQ(a.min_rnr_timer, 12);
	CHECK_EQ(a.timeout, 14);
	CHECK_EQ(a.retry_cnt, 7);
	CHECK_EQ(a.rnr_retry, 6);
	CHECK_EQ(le32toh(a.rq_psn), 0x123456);
	CHECK_EQ(le32toh(a.sq_psn), 0x654321);
	CHECK_EQ(le32toh(a.dest_qp_num), 0xabc);
	CHECK_EQ(le32toh(a.qkey), 0); /* never set on RC */
	CHECK_EQ(le32toh(a.cap.max_send_wr), CAP.swr);
	CHECK_EQ(le32toh(a.cap.max_recv_sge), CAP.rsge);
	CHECK_EQ(le32toh(a.cap.max_inline_data), CAP.inl);
	mq_fill(&c, qpn, 0, 0);
	CHECK_MEM(&a.ah_attr, &c.ah_attr, sizeof(a.ah_attr));
	CHECK(qp->attr.av.ipv4 == false);
	CHECK_MEM(qp->attr.av.sgid, rres_gid_get(&rd, 0), 16);
	CHECK_EQ(a.sq_draining, 0);

	/* RTS -> RTS with optional attributes (rate limit, min RNR timer). */
	mq_fill(&c, qpn, VIRTIO_IB_QP_RATE_LIMIT | VIRTIO_IB_QP_MIN_RNR_TIMER | VIRTIO_IB_QP_CUR_STATE, 0);
	c.rate_limit = htole32(777);
	c.min_rnr_timer = 31;
	c.cur_qp_state = VIRTIO_IB_QPS_RTS;
	CHECK_EQ(modify(&c), RRES_OK);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(le32toh(a.rate_limit), 777);
	CHECK_EQ(a.min_rnr_timer, 31);
	c.cur_qp_state = VIRTIO_IB_QPS_RTR; /* wrong current state */
	CHECK_EQ(modify(&c), RRES_ERR_STATE);

	/* SQD drains, then back to RTS. */
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_SQD), RRES_OK);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_SQD);
	CHECK_EQ(a.sq_draining, 1);
	mq_fill(&c, qpn, VIRTIO_IB_QP_TIMEOUT, 0); /* SQD -> SQD */
	c.timeout = 20;
	CHECK_EQ(modify(&c), RRES_OK);
	CHECK_EQ(qp->sq_draining, true);
	rres_qp_sq_drained(qp);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(a.sq_draining, 0);
	CHECK_EQ(a.timeout, 20);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RTS), RRES_OK);

	/* ERR, then RESET clears every attribute. */
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_ERR), RRES_OK);
	CHECK_EQ(qp_state(qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RTS), RRES_ERR_STATE);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RESET), RRES_OK);
	CHECK_EQ(query(qpn, &a), RRES_OK);
	{
		struct virtio_rdma_ack_query_qp z;

		memset(&z, 0, sizeof(z));
		z.cap = a.cap;
		CHECK_MEM(&a, &z, sizeof(a));
	}
	/* And the QP can be brought up again. */
	CHECK(goto_state(qpn, VIRTIO_IB_QPT_RC, VIRTIO_IB_QPS_RTS));
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	teardown();
}

/* The expected transition table (IBTA, restricted to the RFC's attribute
 * mask), written out independently of the implementation's table. */
static bool expect_transition(uint8_t t, uint8_t cur, uint8_t next, uint32_t *req, uint32_t *opt)
{
	const bool rc = t == VIRTIO_IB_QPT_RC, uc = t == VIRTIO_IB_QPT_UC;
	const uint32_t CS = VIRTIO_IB_QP_CUR_STATE, ACC = VIRTIO_IB_QP_ACCESS_FLAGS,
		       QK = VIRTIO_IB_QP_QKEY, RL = VIRTIO_IB_QP_RATE_LIMIT;
	uint32_t to_rts_opt = rc ? CS | ACC | VIRTIO_IB_QP_MIN_RNR_TIMER | RL
				 : uc ? CS | ACC | RL : CS | QK | RL;

	*req = *opt = 0;
	if (next == VIRTIO_IB_QPS_RESET || next == VIRTIO_IB_QPS_ERR)
		return true; /* any state -> RESET / ERR */
	switch (cur) {
	case VIRTIO_IB_QPS_RESET:
		if (next != VIRTIO_IB_QPS_INIT)
			return false;
		*req = rc || uc ? ACC : QK;
		return true;
	case VIRTIO_IB_QPS_INIT:
		if (next == VIRTIO_IB_QPS_INIT) {
			*opt = rc || uc ? ACC : QK;
			return true;
		}
		if (next != VIRTIO_IB_QPS_RTR)
			return false;
		*req = rc ? RC_RTR_REQ : uc ? UC_RTR_REQ : 0;
		*opt = rc || uc ? ACC : QK;
		return true;
	case VIRTIO_IB_QPS_RTR:
		if (next != VIRTIO_IB_QPS_RTS)
			return false;
		*req = rc ? RC_RTS_REQ : VIRTIO_IB_QP_SQ_PSN;
		*opt = to_rts_opt;
		return true;
	case VIRTIO_IB_QPS_RTS:
		if (next == VIRTIO_IB_QPS_RTS) {
			*opt = to_rts_opt;
			return true;
		}
		return next == VIRTIO_IB_QPS_SQD;
	case VIRTIO_IB_QPS_SQD:
		if (next == VIRTIO_IB_QPS_RTS) {
			*opt = to_rts_opt;
			return true;
		}
		if (next != VIRTIO_IB_QPS_SQD)
			return false;
		*opt = rc ? VIRTIO_IB_QP_AV | VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT |
				    VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC |
				    VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | ACC | VIRTIO_IB_QP_MIN_RNR_TIMER
			  : uc ? VIRTIO_IB_QP_AV | ACC : QK;
		return true;
	case VIRTIO_IB_QPS_SQE:
		if (next != VIRTIO_IB_QPS_RTS)
			return false;
		*opt = rc ? 0 : uc ? CS | ACC : CS | QK;
		return true;
	default:
		return false;
	}
}

/* A fresh QP of type t in state cur, modified with mask to next: check the
 * outcome against the expected table and that a failure changed nothing. */
static void try_transition(uint32_t pdn, uint32_t cqn, uint8_t t, uint8_t cur, uint8_t next,
			   uint32_t mask, enum rres_err want)
{
	struct virtio_rdma_cmd_modify_qp c;
	struct virtio_rdma_ack_query_qp before, after;
	enum rres_err got;
	uint32_t qpn;

	if (qp_create(pdn, t, cqn, cqn, &qpn)) {
		CHECK(!"qp_create");
		return;
	}
	if (!goto_state(qpn, t, cur)) {
		CHECK(!"goto_state");
		goto out;
	}
	query(qpn, &before);
	mq_fill(&c, qpn, mask, next);
	c.cur_qp_state = cur;
	/* Values that differ from the ladder's, so a change is visible. */
	c.timeout = 3;
	c.qkey = htole32(0x2222);
	got = modify(&c);
	if (got != want) {
		printf("#   type %u %u -> %u mask 0x%x: got %s want %s\n", t, cur, next, mask,
		       rres_err_name(got), rres_err_name(want));
		CHECK_EQ(got, want);
	}
	query(qpn, &after);
	if (got)
		CHECK_MEM(&before, &after, sizeof(before));
	else
		CHECK_EQ(after.qp_state, (mask & VIRTIO_IB_QP_STATE) ? next : cur);
out:
	one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn);
}

static void test_qp_state_table(void)
{
	static const uint8_t types[] = { VIRTIO_IB_QPT_RC, VIRTIO_IB_QPT_UC, VIRTIO_IB_QPT_UD };
	const uint32_t S = VIRTIO_IB_QP_STATE;
	uint32_t pdn, cqn, req, opt, ireq, iopt;
	unsigned ti, bit, tried = 0;
	uint8_t cur, next;
	bool valid;

	REQUIRE(setup());
	REQUIRE(pd_create(&pdn) == RRES_OK);
	REQUIRE(cq_create(16, &cqn) == RRES_OK);
	for (ti = 0; ti < sizeof(types); ti++) {
		uint8_t t = types[ti];

		for (cur = 0; cur <= VIRTIO_IB_QPS_ERR; cur++) {
			if (cur == VIRTIO_IB_QPS_SQE && t == VIRTIO_IB_QPT_RC)
				continue; /* RC never enters SQE */
			for (next = 0; next <= VIRTIO_IB_QPS_ERR; next++) {
				valid = expect_transition(t, cur, next, &req, &opt);
				/* The implementation's table says the same. */
				{
					bool iv;

					rres_qp_transition(t, cur, next, &iv, &ireq, &iopt);
					CHECK_EQ(iv, valid);
					if (valid) {
						CHECK_EQ(ireq, req);
						CHECK_EQ(iopt, opt);
					}
				}
				/* Exactly the required attributes. */
				try_transition(pdn, cqn, t, cur, next, S | req,
					       valid ? RRES_OK : RRES_ERR_STATE);
				tried++;
				if (!valid)
					continue;
				/* Required and every optional one. */
				try_transition(pdn, cqn, t, cur, next, S | req | opt, RRES_OK);
				/* Each required one missing. */
				for (bit = 0; bit < 17; bit++)
					if (req & (1u << bit))
						try_transition(pdn, cqn, t, cur, next,
							       S | (req & ~(1u << bit)),
							       RRES_ERR_ATTR_MASK);
				/* Each attribute that is neither. */
				for (bit = 1; bit < 17; bit++)
					if (!((req | opt) & (1u << bit)))
						try_transition(pdn, cqn, t, cur, next,
							       S | req | (1u << bit),
							       RRES_ERR_ATTR_MASK);
				/* Without the STATE bit: attributes only, same state. */
				if (next == cur && !req && opt)
					try_transition(pdn, cqn, t, cur, next, opt & ~VIRTIO_IB_QP_CUR_STATE,
						       RRES_OK);
				tried += 2;
			}
		}
		/* Without STATE, a state whose self-transition is illegal. */
		if (t != VIRTIO_IB_QPT_UD)
			try_transition(pdn, cqn, t, VIRTIO_IB_QPS_RTR, VIRTIO_IB_QPS_RTR,
				       VIRTIO_IB_QP_ACCESS_FLAGS, RRES_ERR_STATE);
	}
	CHECK(tried > 100);
	/* SQE is never a target of MODIFY_QP; unknown states are out of range. */
	try_transition(pdn, cqn, VIRTIO_IB_QPT_UD, VIRTIO_IB_QPS_RTS, VIRTIO_IB_QPS_SQE, S,
		       RRES_ERR_STATE);
	try_transition(pdn, cqn, VIRTIO_IB_QPT_UD, VIRTIO_IB_QPS_RTS, 7, S, RRES_ERR_RANGE);
	try_transition(pdn, cqn, VIRTIO_IB_QPT_UD, VIRTIO_IB_QPS_RTS, 255, S, RRES_ERR_RANGE);
	CHECK_EQ(rd.qps.used, 0);
	teardown();
}

/* GSI: QKEY at INIT, SQ_PSN at RTS; controlled Q_Keys allowed. */
static void test_qp_gsi(void)
{
	struct virtio_rdma_cmd_modify_qp c;
	uint32_t pdn, cqn, qpn;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_GSI, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(modify_to(qpn, VIRTIO_IB_QP_ACCESS_FLAGS, VIRTIO_IB_QPS_INIT), RRES_ERR_ATTR_MASK);
	mq_fill(&c, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY, VIRTIO_IB_QPS_INIT);
	c.qkey = htole32(0x80010000);
	CHECK_EQ(modify(&c), RRES_OK);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RTR), RRES_OK);
	CHECK_EQ(modify_to(qpn, VIRTIO_IB_QP_RATE_LIMIT | VIRTIO_IB_QP_SQ_PSN, VIRTIO_IB_QPS_RTS),
		 RRES_ERR_ATTR_MASK);
	CHECK_EQ(modify_to(qpn, VIRTIO_IB_QP_SQ_PSN, VIRTIO_IB_QPS_RTS), RRES_OK);
	CHECK_EQ(rres_qp_lookup(&rd, qpn)->attr.qkey, 0x80010000);
	CHECK_EQ(rres_qp_lookup(&rd, qpn)->attr.path_mtu, VIRTIO_IB_MTU_1024);
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_SQE), 0);
	CHECK_EQ(modify_to(qpn, VIRTIO_IB_QP_QKEY, VIRTIO_IB_QPS_RTS), RRES_OK);
	teardown();
}

static void test_qp_modify_ranges(void)
{
	struct virtio_rdma_cmd_modify_qp c;
	uint32_t pdn, cqn, rc, ud, qpn_bad;
	const uint32_t S = VIRTIO_IB_QP_STATE;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &rc), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &ud), RRES_OK);

#define BAD(qpn, mask, state, field, val, err)                                 \
	do {                                                                   \
		mq_fill(&c, (qpn), (mask) | S, (state));                       \
		c.field = (val);                                               \
		CHECK_EQ(modify(&c), (err));                                   \
	} while (0)

	/* RESET -> INIT */
	BAD(rc, RC_INIT_REQ, 1, qp_access_flags, htole32(8), RRES_ERR_FLAGS);
	BAD(rc, RC_INIT_REQ, 1, qp_access_flags, htole32(0x80000000), RRES_ERR_FLAGS);
	BAD(ud, VIRTIO_IB_QP_QKEY, 1, qkey, htole32(0x80000000), RRES_ERR_RANGE);
	BAD(rc, RC_INIT_REQ | (1u << 17), 1, qp_state, 1, RRES_ERR_ATTR_MASK);
	BAD(rc, RC_INIT_REQ | VIRTIO_IB_QP_CAP, 1, qp_state, 1, RRES_ERR_ATTR_MASK);
	BAD(rc, RC_INIT_REQ | VIRTIO_IB_QP_CUR_STATE, 1, cur_qp_state, 0, RRES_ERR_ATTR_MASK);
	BAD(rc, RC_INIT_REQ, 1, qpn, htole32(rc | (1u << 14)), RRES_ERR_BAD_HANDLE);
	BAD(rc, RC_INIT_REQ, 1, qpn, htole32(0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_state(rc), VIRTIO_IB_QPS_RESET);
	CHECK_EQ(qp_state(ud), VIRTIO_IB_QPS_RESET);
	CHECK_EQ(modify_to(rc, RC_INIT_REQ, VIRTIO_IB_QPS_INIT), RRES_OK);
	CHECK_EQ(modify_to(ud, VIRTIO_IB_QP_QKEY, VIRTIO_IB_QPS_INIT), RRES_OK);

	/* INIT -> RTR: every RC value out of range, one at a time. */
	BAD(rc, RC_RTR_REQ, 2, path_mtu, 0, RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, path_mtu, 6, RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, path_mtu, VIRTIO_IB_MTU_2048, RRES_ERR_RANGE); /* > port (1500) */
	BAD(rc, RC_RTR_REQ, 2, min_rnr_timer, 32, RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, rq_psn, htole32(0x1000000), RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, dest_qp_num, htole32(0x1000000), RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, max_dest_rd_atomic, RRES_DEF_MAX_QP_RD_ATOM + 1, RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.sgid_index, 16, RRES_ERR_GID);
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.sgid_index, 255, RRES_ERR_GID);
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.sgid_index, 5, RRES_ERR_GID); /* empty entry */
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.sgid_index, 1, RRES_ERR_RANGE); /* v4 sgid, v6 dgid */
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.flow_label, htole32(0x100000), RRES_ERR_RANGE);
	BAD(rc, RC_RTR_REQ, 2, ah_attr.grh.dgid[0], 0xff, RRES_ERR_RANGE); /* multicast */
	BAD(rc, RC_RTR_REQ, 2, ah_attr.dmac[0], 0x01, RRES_ERR_RANGE);
	mq_fill(&c, rc, RC_RTR_REQ | S, 2);
	memset(c.ah_attr.grh.dgid, 0, 16);
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	/* IPv4: sgid 1 with an IPv4-mapped dgid, but not a multicast one. */
	mq_fill(&c, rc, RC_RTR_REQ | S, 2);
	c.ah_attr.grh.sgid_index = 1;
	memset(c.ah_attr.grh.dgid, 0, 16);
	c.ah_attr.grh.dgid[10] = c.ah_attr.grh.dgid[11] = 0xff;
	c.ah_attr.grh.dgid[12] = 224;
	c.ah_attr.grh.dgid[15] = 1;
	CHECK_EQ(modify(&c), RRES_ERR_RANGE);
	CHECK_EQ(qp_state(rc), VIRTIO_IB_QPS_INIT);
	c.ah_attr.grh.dgid[12] = 10;
	c.ah_attr.grh.dgid[15] = 2;
	CHECK_EQ(modify(&c), RRES_OK);
	CHECK(rres_qp_lookup(&rd, rc)->attr.av.ipv4);

	/* RTR -> RTS */
	BAD(rc, RC_RTS_REQ, 3, timeout, 32, RRES_ERR_RANGE);
	BAD(rc, RC_RTS_REQ, 3, retry_cnt, 8, RRES_ERR_RANGE);
	BAD(rc, RC_RTS_REQ, 3, rnr_retry, 8, RRES_ERR_RANGE);
	BAD(rc, RC_RTS_REQ, 3, sq_psn, htole32(0xffffffff), RRES_ERR_RANGE);
	BAD(rc, RC_RTS_REQ, 3, max_rd_atomic, RRES_DEF_MAX_QP_RD_ATOM + 1, RRES_ERR_RANGE);
	CHECK_EQ(qp_state(rc), VIRTIO_IB_QPS_RTR);
	mq_fill(&c, rc, RC_RTS_REQ | S, 3);
	c.timeout = 31;
	c.retry_cnt = 0;
	c.rnr_retry = 7;
	c.sq_psn = htole32(0xffffff);
	c.max_rd_atomic = RRES_DEF_MAX_QP_RD_ATOM;
	CHECK_EQ(modify(&c), RRES_OK);

	/* The boundary values work; UD takes any non-controlled Q_Key. */
	BAD(ud, 0, 2, qkey, 0, RRES_OK);
	BAD(ud, VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_QKEY, 3, qkey, htole32(0x7fffffff), RRES_OK);

	/* Unknown QP. */
	qpn_bad = 0x3fff;
	BAD(qpn_bad, 0, 6, qp_state, 6, RRES_ERR_BAD_HANDLE);
#undef BAD
	CHECK_EQ(rd.stats.errs[RRES_ERR_GID], 3);
	teardown();
}

static void test_query_qp(void)
{
	struct virtio_rdma_ack_query_qp a;
	uint32_t pdn, cqn, qpn;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(16, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, VIRTIO_IB_QP_ATTR_MASK_ALL), RRES_OK);
	CHECK_EQ(olen, sizeof(a));
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, 1u << 17), RRES_ERR_ATTR_MASK);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn + 1, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(rres_ctrl_exec_err(&rd, VIRTIO_NET_CTRL_ROCE_QUERY_QP,
				    (le32[2]){ htole32(qpn), 0 }, 8, obuf, sizeof(a) - 1, &olen),
		 RRES_ERR_OUT_SPACE);
	CHECK(goto_state(qpn, VIRTIO_IB_QPT_UD, VIRTIO_IB_QPS_RTS));
	CHECK_EQ(query(qpn, &a), RRES_OK);
	CHECK_EQ(a.qp_state, VIRTIO_IB_QPS_RTS);
	CHECK_EQ(le32toh(a.qkey), 0x11111111);
	CHECK_EQ(le32toh(a.sq_psn), 0x654321);
	CHECK_EQ(a.path_mtu, VIRTIO_IB_MTU_1024); /* the port's for UD */
	CHECK_EQ(le32toh(a.rq_psn), 0); /* not set on UD */
	/* The transport moves a UD QP to SQE; QUERY_QP shows it; SQE -> RTS. */
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_SQE), 0);
	CHECK_EQ(qp_state(qpn), VIRTIO_IB_QPS_SQE);
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_SQE), -EINVAL);
	CHECK_EQ(modify_to(qpn, VIRTIO_IB_QP_CUR_STATE, VIRTIO_IB_QPS_RTS), RRES_ERR_STATE);
	{
		struct virtio_rdma_cmd_modify_qp c;

		mq_fill(&c, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_CUR_STATE, VIRTIO_IB_QPS_RTS);
		c.cur_qp_state = VIRTIO_IB_QPS_SQE;
		CHECK_EQ(modify(&c), RRES_OK);
	}
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_ERR), 0);
	CHECK_EQ(qp_state(qpn), VIRTIO_IB_QPS_ERR);
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_RTS), -EINVAL);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RESET), RRES_OK);
	CHECK_EQ(rres_qp_async_state(&rd, rres_qp_lookup(&rd, qpn), VIRTIO_IB_QPS_ERR), -EINVAL);
	teardown();
}

static void test_ah(void)
{
	struct virtio_rdma_ah_attr attr;
	uint32_t pdn, pdn2, ah, ah2;
	struct rres_ah *p;

	REQUIRE(setup());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	ah_attr_fill(&attr, 0);
	CHECK_EQ(ah_create(pdn + 7, &attr, &ah), RRES_ERR_BAD_HANDLE);
	attr.grh.sgid_index = 9;
	CHECK_EQ(ah_create(pdn, &attr, &ah), RRES_ERR_GID);
	attr.grh.sgid_index = 0;
	attr.grh.flow_label = htole32(1u << 20);
	CHECK_EQ(ah_create(pdn, &attr, &ah), RRES_ERR_RANGE);
	CHECK_EQ(rd.ahs.used, 0);
	ah_attr_fill(&attr, 0);
	/* UD address handles may be multicast. */
	attr.grh.dgid[0] = 0xff;
	attr.dmac[0] = 0x33;
	CHECK_EQ(ah_create(pdn, &attr, &ah2), RRES_OK);
	ah_attr_fill(&attr, 0);
	CHECK_EQ(ah_create(pdn, &attr, &ah), RRES_OK);
	CHECK(ah != 0 && ah != ah2);
	p = rres_ah_lookup(&rd, ah, rres_pd_lookup(&rd, pdn));
	REQUIRE(p);
	CHECK_EQ(p->av.flow_label, 0x12345);
	CHECK_EQ(p->av.hop_limit, 64);
	CHECK_EQ(p->av.traffic_class, 0x28);
	CHECK_MEM(p->av.dgid, attr.grh.dgid, 16);
	CHECK_MEM(p->av.dmac, attr.dmac, 6);
	CHECK(rres_ah_lookup(&rd, ah, rres_pd_lookup(&rd, pdn2)) == NULL);
	/* Destroy needs the AH's own PD. */
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn2, ah), RRES_ERR_WRONG_PD);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, 0, ah), RRES_ERR_WRONG_PD);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, 0), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, 1000), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(rd.ahs.used, 2);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, ah), RRES_OK);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, ah), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, ah2), RRES_OK);
	CHECK_EQ(rd.stats.errs[RRES_ERR_WRONG_PD], 2);
	teardown();
}

static void test_gid(void)
{
	static const uint8_t ll[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
					0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56 };
	static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 };
	uint8_t g6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9 };
	uint8_t zero[16] = { 0 }, buf[8] = { 0 };
	uint32_t pdn, cqn, qpn;
	struct rres_counts c;
	struct rres_dev_cfg cfg;

	REQUIRE(setup());
	CHECK_MEM(rres_gid_get(&rd, 0), ll, 16);
	CHECK_MEM(rres_gid_get(&rd, 1), v4, 16);
	CHECK(rres_gid_get(&rd, 2) == NULL);
	CHECK(rres_gid_get(&rd, 16) == NULL);

	CHECK_EQ(gid_add(0, g6), RRES_ERR_GID);
	CHECK_EQ(gid_add(1, g6), RRES_ERR_GID);
	CHECK_EQ(gid_add(16, g6), RRES_ERR_GID);
	CHECK_EQ(gid_add(0xffff, g6), RRES_ERR_GID);
	CHECK_EQ(gid_add(2, zero), RRES_ERR_RANGE);
	CHECK_EQ(gid_add(2, g6), RRES_OK);
	CHECK_EQ(gid_add(2, g6), RRES_OK); /* the same again: no-op */
	CHECK_EQ(gid_add(15, g6), RRES_OK);
	g6[15] = 10;
	CHECK_EQ(gid_add(2, g6), RRES_ERR_IN_USE);
	CHECK_EQ(rres_gid_get(&rd, 2)[15], 9);
	counts(&c);
	CHECK_EQ(c.gid_drv, 2);

	/* A QP path keeps the source GID it resolved. */
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(modify_to(qpn, RC_INIT_REQ, VIRTIO_IB_QPS_INIT), RRES_OK);
	{
		struct virtio_rdma_cmd_modify_qp m;

		mq_fill(&m, qpn, RC_RTR_REQ | VIRTIO_IB_QP_STATE, VIRTIO_IB_QPS_RTR);
		m.ah_attr.grh.sgid_index = 15;
		CHECK_EQ(modify(&m), RRES_OK);
	}

	CHECK_EQ(gid_del(0), RRES_ERR_GID);
	CHECK_EQ(gid_del(1), RRES_ERR_GID);
	CHECK_EQ(gid_del(3), RRES_ERR_GID);
	CHECK_EQ(gid_del(16), RRES_ERR_GID);
	CHECK_EQ(gid_del(15), RRES_OK);
	CHECK_EQ(gid_del(15), RRES_ERR_GID);
	CHECK(rres_gid_get(&rd, 15) == NULL);
	CHECK_EQ(rres_qp_lookup(&rd, qpn)->attr.av.sgid[15], 9);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_DEL_GID, buf, 8), RRES_ERR_BAD_LEN);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_DEL_GID, buf, 1), RRES_ERR_BAD_LEN);

	/* Address changes update the device GIDs; reset restores defaults. */
	rres_dev_set_ip4(&rd, false, 0);
	CHECK(rres_gid_get(&rd, 1) == NULL);
	rres_dev_set_ip4(&rd, true, htonl(0xc0a80001));
	CHECK_EQ(rres_gid_get(&rd, 1)[12], 192);
	rres_dev_set_mac(&rd, (const uint8_t[6]){ 0x02, 0, 0, 0, 0, 1 });
	CHECK_EQ(rres_gid_get(&rd, 0)[8], 0x00);
	CHECK_EQ(rres_gid_get(&rd, 0)[15], 0x01);
	rres_dev_reset(&rd);
	counts(&c);
	CHECK_EQ(c.gid_drv, 0);
	CHECK(no_objects());
	CHECK(rres_gid_get(&rd, 0) != NULL);
	teardown();

	/* No IPv4 address: GID 1 is empty. */
	cfg = base_cfg();
	cfg.has_ip4 = false;
	REQUIRE(setup_cfg(&cfg));
	CHECK(rres_gid_get(&rd, 1) == NULL);
	CHECK_MEM(rres_gid_get(&rd, 0), ll, 16);
	teardown();
}

/* Create up to each limit, then one more: ERR, nothing leaked. */
static void test_limits(void)
{
	uint32_t pdn[9], mrn[9], cqn[9], qpn[16], ah[9], x, lk, rk, i;
	struct virtio_rdma_ah_attr attr;
	struct vhost_mem_region *ra;
	struct rres_dev_cfg cfg;

	REQUIRE(setup());
	ra = vhost_mem_find(&mem, GPA_A);
	for (i = 0; i < 8; i++)
		CHECK_EQ(pd_create(&pdn[i]), RRES_OK);
	CHECK_EQ(pd_create(&x), RRES_ERR_LIMIT);
	CHECK_EQ(rd.pds.used, 8);
	for (i = 0; i < 8; i++)
		CHECK_EQ(cq_create(1, &cqn[i]), RRES_OK);
	CHECK_EQ(cq_create(1, &x), RRES_ERR_LIMIT);
	CHECK_EQ(cqn[7], 7);
	for (i = 0; i < 7; i++)
		CHECK_EQ(reg_a(pdn[0], 0, i, 1, &mrn[i], &lk, &rk), RRES_OK);
	CHECK_EQ(dma_mr(pdn[1], 0, &mrn[7], &lk, &rk), RRES_OK);
	CHECK_EQ(dma_mr(pdn[1], 0, &x, &lk, &rk), RRES_ERR_LIMIT);
	CHECK_EQ(reg_a(pdn[0], 0, 0, 1, &x, &lk, &rk), RRES_ERR_LIMIT);
	CHECK_EQ(ra->refcnt, 8);
	CHECK_EQ(rd.mr_pages, 7);
	ah_attr_fill(&attr, 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(ah_create(pdn[2], &attr, &ah[i]), RRES_OK);
	CHECK_EQ(ah_create(pdn[2], &attr, &x), RRES_ERR_LIMIT);
	/* max_rdma_qps 16: indexes 2..15 for ordinary QPs, 1 for GSI. */
	for (i = 0; i < 14; i++) {
		CHECK_EQ(qp_create(pdn[3], VIRTIO_IB_QPT_RC, cqn[0], cqn[1], &qpn[i]), RRES_OK);
		CHECK_EQ(vrdma_qpn_index(qpn[i]), i + 2);
	}
	CHECK_EQ(qp_create(pdn[3], VIRTIO_IB_QPT_UD, cqn[0], cqn[1], &x), RRES_ERR_LIMIT);
	CHECK_EQ(qp_create(pdn[3], VIRTIO_IB_QPT_GSI, cqn[0], cqn[1], &qpn[14]), RRES_OK);
	CHECK_EQ(rd.qps.used, rd.attr.max_qp);
	CHECK_EQ(rres_cq_lookup(&rd, cqn[0])->refcnt, 15);
	/* The rings of the last QP are the device's last rings. */
	CHECK_EQ(rres_qp_lookup(&rd, qpn[13])->rq_vq, rres_ring_count(&rd) - 1);

	for (i = 0; i < 15; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn[i]), RRES_OK);
	for (i = 0; i < 8; i++)
		CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn[2], ah[i]), RRES_OK);
	for (i = 0; i < 8; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn[i]), RRES_OK);
	for (i = 0; i < 8; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn[i]), RRES_OK);
	for (i = 0; i < 8; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn[i]), RRES_OK);
	CHECK(no_objects());
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(rd.stats.errs[RRES_ERR_LIMIT], 6);
	teardown();

	/* The device-wide registered page budget. */
	cfg = base_cfg();
	cfg.max_mr_pages = 10;
	cfg.max_mr_size = 8 * PG;
	REQUIRE(setup_cfg(&cfg));
	CHECK_EQ(pd_create(&pdn[0]), RRES_OK);
	CHECK_EQ(reg_a(pdn[0], 0, 0, 9, &x, &lk, &rk), RRES_ERR_RANGE); /* > max_mr_size */
	CHECK_EQ(reg_a(pdn[0], 0, 0, 8, &mrn[0], &lk, &rk), RRES_OK);
	CHECK_EQ(reg_a(pdn[0], 0, 8, 3, &x, &lk, &rk), RRES_ERR_LIMIT);
	CHECK_EQ(reg_a(pdn[0], 0, 8, 2, &mrn[1], &lk, &rk), RRES_OK);
	CHECK_EQ(rd.mr_pages, 10);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn[0]), RRES_OK);
	CHECK_EQ(reg_a(pdn[0], 0, 8, 3, &x, &lk, &rk), RRES_OK);
	teardown();

	/* Configuration limits. */
	cfg = base_cfg();
	cfg.max_rdma_qps = 0;
	CHECK_EQ(rres_dev_init(&rd, &cfg), -EINVAL);
	cfg.max_rdma_qps = 16385;
	CHECK_EQ(rres_dev_init(&rd, &cfg), -EINVAL);
	cfg.max_rdma_qps = 1;
	cfg.max_rdma_cqs = 16385;
	CHECK_EQ(rres_dev_init(&rd, &cfg), -EINVAL);
	/* One vring pair only: pair 0 is reserved, so no QP at all. */
	cfg.max_rdma_cqs = 1;
	REQUIRE(setup_cfg(&cfg));
	CHECK_EQ(rd.attr.max_qp, 0);
	CHECK_EQ(pd_create(&pdn[0]), RRES_OK);
	CHECK_EQ(cq_create(1, &cqn[0]), RRES_OK);
	CHECK_EQ(qp_create(pdn[0], VIRTIO_IB_QPT_RC, 0, 0, &x), RRES_ERR_LIMIT);
	CHECK_EQ(qp_create(pdn[0], VIRTIO_IB_QPT_GSI, 0, 0, &x), RRES_ERR_LIMIT);
	teardown();
}

/* 10,000 create/destroy cycles of every kind of object: counts back to
 * zero, region references balanced, QPNs never repeat at an index back to
 * back and never hit the multicast QPN. */
static void test_cycles(void)
{
	static uint32_t last_qpn[16];
	struct virtio_rdma_ah_attr attr;
	uint32_t pdn, cqn, cqn2, mrn, lk, rk, qpn, ah, i;
	struct vhost_mem_region *ra;
	struct rres_counts c;

	REQUIRE(setup());
	ra = vhost_mem_find(&mem, GPA_A);
	ah_attr_fill(&attr, 0);
	memset(last_qpn, 0xff, sizeof(last_qpn));
	for (i = 0; i < 10000; i++) {
		bool ok = true;

		ok &= pd_create(&pdn) == RRES_OK;
		ok &= cq_create(8, &cqn) == RRES_OK;
		ok &= cq_create(8, &cqn2) == RRES_OK;
		ok &= reg_a(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ,
			    i % 60, 1 + i % 4, &mrn, &lk, &rk) == RRES_OK;
		ok &= qp_create(pdn, i % 3 == 0 ? VIRTIO_IB_QPT_UD : VIRTIO_IB_QPT_RC, cqn, cqn2,
				&qpn) == RRES_OK;
		ok &= ah_create(pdn, &attr, &ah) == RRES_OK;
		if (!ok) {
			CHECK(ok);
			break;
		}
		ok &= goto_state(qpn, i % 3 == 0 ? VIRTIO_IB_QPT_UD : VIRTIO_IB_QPT_RC,
				 (uint8_t)(i % 5));
		CHECK(qpn != VRDMA_QPN_MULTICAST);
		CHECK(qpn != last_qpn[vrdma_qpn_index(qpn)]);
		last_qpn[vrdma_qpn_index(qpn)] = qpn;
		/* Out of order on purpose: dependants first or the destroy fails. */
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn) == RRES_ERR_IN_USE;
		ok &= two32(VIRTIO_NET_CTRL_ROCE_DESTROY_AH, pdn, ah) == RRES_OK;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn) == RRES_ERR_IN_USE;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn) == RRES_OK;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn) == RRES_OK;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn) == RRES_OK;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn2) == RRES_OK;
		ok &= one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn) == RRES_OK;
		if (!ok) {
			CHECK(ok);
			break;
		}
	}
	counts(&c);
	CHECK_EQ(c.pd + c.mr + c.cq + c.qp + c.ah, 0);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(rd.pds.nfree, rd.pds.cap);
	CHECK_EQ(rd.qps.nfree, rd.qps.cap);
	teardown();
}

/* QPN generations: advance on reuse, skip the multicast QPN 0xFFFFFF. */
static void test_qpn_generation(void)
{
	struct rres_dev_cfg cfg = base_cfg();
	uint32_t pdn, cqn, qpn, i, n = 16384 - 2;
	uint32_t *q = calloc(n, sizeof(*q));

	REQUIRE(q);
	cfg.max_rdma_qps = 16384;
	REQUIRE(setup_cfg(&cfg));
	CHECK_EQ(rd.attr.max_qp, 16383);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	for (i = 0; i < n - 1; i++)
		CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &q[i]), RRES_OK);
	CHECK_EQ(vrdma_qpn_index(q[n - 2]), 16382);
	/* Index 16383 with generation 0x3fe, then 0x3ff would be 0xFFFFFF. */
	rd.qp_gen[16383] = 0x3fe;
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(qpn, (0x3feu << 14) | 0x3fff);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(qpn, 0x3fff); /* generation 0, not 0x3ff */
	/* A stale QPN of the same index is unknown. */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, (0x3feu << 14) | 0x3fff), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &i), RRES_ERR_LIMIT);
	free(q);
	teardown();
}

struct hook_log {
	int qp_create, qp_modify, qp_destroy, cq_create, cq_destroy;
	int fail_qp, fail_cq;
	uint8_t last_old, last_new;
	uint32_t last_mask;
};
static struct hook_log hl;

static int h_qp_create(struct rres_dev *d, struct rres_qp *qp)
{
	(void)d;
	hl.qp_create++;
	if (hl.fail_qp)
		return -ENOMEM;
	qp->transport = &hl;
	return 0;
}

static void h_qp_modify(struct rres_dev *d, struct rres_qp *qp, uint8_t old, uint32_t mask)
{
	(void)d;
	hl.qp_modify++;
	hl.last_old = old;
	hl.last_new = qp->attr.qp_state;
	hl.last_mask = mask;
}

static void h_qp_destroy(struct rres_dev *d, struct rres_qp *qp)
{
	(void)d;
	CHECK(qp->transport == &hl);
	hl.qp_destroy++;
}

static int h_cq_create(struct rres_dev *d, struct rres_cq *cq)
{
	(void)d;
	(void)cq;
	hl.cq_create++;
	return hl.fail_cq ? -ENOMEM : 0;
}

static void h_cq_destroy(struct rres_dev *d, struct rres_cq *cq)
{
	(void)d;
	(void)cq;
	hl.cq_destroy++;
}

static void test_hooks(void)
{
	uint32_t pdn, cqn, qpn, qpn2, x;

	REQUIRE(setup());
	memset(&hl, 0, sizeof(hl));
	rd.hooks.qp_create = h_qp_create;
	rd.hooks.qp_modify = h_qp_modify;
	rd.hooks.qp_destroy = h_qp_destroy;
	rd.hooks.cq_create = h_cq_create;
	rd.hooks.cq_destroy = h_cq_destroy;
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	hl.fail_cq = 1;
	CHECK_EQ(cq_create(4, &cqn), RRES_ERR_NOMEM);
	CHECK_EQ(rd.cqs.used, 0);
	hl.fail_cq = 0;
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	CHECK_EQ(cqn, 0); /* the failed create did not consume index 0 */
	hl.fail_qp = 1;
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_ERR_NOMEM);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_GSI, cqn, cqn, &qpn), RRES_ERR_NOMEM);
	CHECK_EQ(rd.qps.used, 0);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->refcnt, 0);
	CHECK_EQ(rres_pd_lookup(&rd, pdn)->refcnt, 0);
	hl.fail_qp = 0;
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	CHECK_EQ(vrdma_qpn_index(qpn), 2);
	CHECK_EQ(hl.qp_create, 3);
	CHECK(goto_state(qpn, VIRTIO_IB_QPT_RC, VIRTIO_IB_QPS_RTS));
	CHECK_EQ(hl.qp_modify, 3);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_ERR), RRES_OK);
	CHECK_EQ(hl.last_old, VIRTIO_IB_QPS_RTS);
	CHECK_EQ(hl.last_new, VIRTIO_IB_QPS_ERR);
	CHECK_EQ(hl.last_mask, VIRTIO_IB_QP_STATE);
	CHECK_EQ(modify_to(qpn, 0, VIRTIO_IB_QPS_RTS), RRES_ERR_STATE);
	CHECK_EQ(hl.qp_modify, 4); /* failed modify: no hook */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(hl.qp_destroy, 1);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_UD, cqn, cqn, &qpn2), RRES_OK);
	CHECK_EQ(cq_create(4, &x), RRES_OK);
	/* Device reset destroys everything through the hooks. */
	rres_dev_reset(&rd);
	CHECK_EQ(hl.qp_destroy, 2);
	CHECK_EQ(hl.cq_destroy, 2);
	CHECK(no_objects());
	teardown();
}

static void test_rings(void)
{
	uint32_t pdn, cqn, qpn, idx;
	bool is_send;

	REQUIRE(setup());
	/* N = 1, M = 8, L = 16: 0 rx, 1 tx, 2 ctrl, 3..10 CQs, 11.. QP pairs. */
	CHECK_EQ(rres_ring_count(&rd), 3 + 8 + 32);
	CHECK(rres_ring_usable(&rd, 0));
	CHECK(rres_ring_usable(&rd, 1));
	CHECK(rres_ring_usable(&rd, 2));
	CHECK(!rres_ring_usable(&rd, 3));
	CHECK(!rres_ring_usable(&rd, 11)); /* pair 0: never */
	CHECK(!rres_ring_usable(&rd, 12));
	CHECK(!rres_ring_usable(&rd, 43));
	CHECK(!rres_ring_usable(&rd, 1000));
	CHECK_EQ(rres_ring_decode(&rd, 3, &idx), VRDMA_VQ_CQ);
	CHECK_EQ(rres_ring_decode(&rd, 43, &idx), VRDMA_VQ_INVALID);

	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	CHECK(rres_ring_usable(&rd, 3));
	CHECK(rres_ring_cq(&rd, 3) == rres_cq_lookup(&rd, cqn));
	CHECK(rres_ring_cq(&rd, 4) == NULL);
	CHECK(rres_ring_cq(&rd, 2) == NULL);
	CHECK_EQ(rres_ring_of_cq(&rd, cqn), 3);
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	/* QP index 2: send 2+8+1+4 = 15, receive 16. */
	CHECK_EQ(rres_ring_of_sq(&rd, 2), 15);
	CHECK_EQ(rres_ring_of_rq(&rd, 2), 16);
	CHECK(rres_ring_usable(&rd, 15));
	CHECK(rres_ring_usable(&rd, 16));
	CHECK(!rres_ring_usable(&rd, 13)); /* GSI's pair: no GSI yet */
	CHECK(rres_ring_qp(&rd, 15, &is_send) == rres_qp_lookup(&rd, qpn));
	CHECK(is_send);
	CHECK(rres_ring_qp(&rd, 16, &is_send) == rres_qp_lookup(&rd, qpn));
	CHECK(!is_send);
	CHECK(rres_ring_qp(&rd, 3, &is_send) == NULL);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK(!rres_ring_usable(&rd, 15));
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
	CHECK(!rres_ring_usable(&rd, 3));
	teardown();
}

static void test_keys_random(void)
{
	struct rres_dev_cfg cfg = base_cfg();
	uint32_t pdn, mrn, lk1, rk1, lk2, rk2, i, same = 0;

	/* Non-deterministic devices (getrandom): keys differ between two
	 * devices most of the time; lkey and rkey bits are independent. */
	cfg.deterministic = false;
	REQUIRE(setup_cfg(&cfg));
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	for (i = 0; i < 64; i++) {
		CHECK_EQ(reg_a(pdn, 7, 0, 1, &mrn, &lk1, &rk1), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
		CHECK_EQ(reg_a(pdn, 7, 0, 1, &mrn, &lk2, &rk2), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
		/* Same index reused with a different key each time. */
		if (lk1 >> 8 == lk2 >> 8)
			CHECK(lk1 != lk2);
		same += (lk1 & 0xff) == (rk1 & 0xff);
	}
	CHECK(same < 16);
	teardown();

	/* ChaCha20 keystream of the all-zero key, nonce and counter
	 * (RFC 7539 A.1 test vector 1): 76 b8 e0 ad a0 f1 3d 90 ... */
	{
		struct rres_rng z;

		memset(&z, 0, sizeof(z));
		z.pos = 16;
		CHECK_EQ(rres_rng_u32(&z), 0xade0b876);
		CHECK_EQ(rres_rng_u32(&z), 0x903df1a0);
	}
	/* Deterministic seeding is reproducible. */
	{
		struct rres_rng a, b;

		rres_rng_seed(&a, true, 7);
		rres_rng_seed(&b, true, 7);
		for (i = 0; i < 100; i++)
			CHECK_EQ(rres_rng_u32(&a), rres_rng_u32(&b));
		rres_rng_seed(&b, true, 8);
		CHECK(rres_rng_u32(&a) != rres_rng_u32(&b));
	}
}

static void test_mtu(void)
{
	CHECK_EQ(rres_mtu_from_eth(1500), VIRTIO_IB_MTU_1024);
	CHECK_EQ(rres_mtu_from_eth(9000), VIRTIO_IB_MTU_4096);
	CHECK_EQ(rres_mtu_from_eth(2048 + 84), VIRTIO_IB_MTU_2048);
	CHECK_EQ(rres_mtu_from_eth(2048 + 83), VIRTIO_IB_MTU_1024);
	CHECK_EQ(rres_mtu_from_eth(300), 0);
	CHECK_EQ(rres_mtu_from_eth(340), VIRTIO_IB_MTU_256);
}

static void test_names(void)
{
	CHECK(!strcmp(rres_cmd_name(VIRTIO_NET_CTRL_ROCE_CREATE_QP), "CREATE_QP"));
	CHECK(!strcmp(rres_cmd_name(200), "?"));
	for (int e = 0; e < RRES_ERR_MAX; e++)
		CHECK(rres_err_name((enum rres_err)e) != NULL);
	CHECK(!strcmp(rres_err_name(RRES_ERR_WRONG_PD), "wrong_pd"));
}

/* ---- extensions (ROCE_EXT) ------------------------------------------------ */

/* S = 4 SRQs, 4 windows, 16 pages per fast registration, 8 MRs. */
static struct rres_dev_cfg ext_cfg(void)
{
	struct rres_dev_cfg c = base_cfg();

	c.ext_offered = true;
	c.max_rdma_srqs = 4;
	c.max_mw = 4;
	c.max_fast_reg_page_list_len = 16;
	return c;
}

static bool setup_ext(void)
{
	struct rres_dev_cfg c = ext_cfg();

	if (!setup_cfg(&c))
		return false;
	rres_dev_set_ext(&rd, true);
	return true;
}

static bool no_ext_objects(void)
{
	struct rres_counts c;

	counts(&c);
	return no_objects() && !c.srq && !c.mw && !rd.nmw && !rres_event_pending(&rd);
}

static enum rres_err srq_create(uint32_t pdn, uint32_t max_wr, uint32_t max_sge, uint32_t *srqn)
{
	le32 w[4] = { htole32(pdn), htole32(max_wr), htole32(max_sge), 0 };
	enum rres_err e = X(VIRTIO_NET_CTRL_ROCE_CREATE_SRQ, w, sizeof(w));

	*srqn = e ? 0 : out32(0);
	return e;
}

static enum rres_err srq_modify(uint32_t srqn, uint32_t mask, uint32_t max_wr, uint32_t limit)
{
	le32 w[4] = { htole32(srqn), htole32(mask), htole32(max_wr), htole32(limit) };

	return X(VIRTIO_NET_CTRL_ROCE_MODIFY_SRQ, w, sizeof(w));
}

static enum rres_err alloc_mr(uint32_t pdn, uint32_t type, uint32_t nsg, uint32_t *mrn,
			      uint32_t *key)
{
	le32 w[4] = { htole32(pdn), htole32(type), htole32(nsg), 0 };
	enum rres_err e = X(VIRTIO_NET_CTRL_ROCE_ALLOC_MR, w, sizeof(w));

	*mrn = e ? 0 : out32(0);
	*key = e ? 0 : out32(4);
	if (!e)
		CHECK_EQ(out32(4), out32(8));
	return e;
}

static enum rres_err alloc_mw(uint32_t pdn, uint32_t type, uint32_t *mwn, uint32_t *rkey)
{
	enum rres_err e = two32(VIRTIO_NET_CTRL_ROCE_ALLOC_MW, pdn, type);

	*mwn = e ? 0 : out32(0);
	*rkey = e ? 0 : out32(4);
	return e;
}

/* CREATE_QP with the extension words. */
static enum rres_err qp_create_ext(uint32_t pdn, uint8_t type, uint32_t cqn, uint32_t ext_flags,
				   uint32_t srqn, uint32_t *qpn)
{
	struct virtio_rdma_cmd_create_qp_ext c;
	enum rres_err e;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(pdn);
	c.qp_type = type;
	c.send_cqn = htole32(cqn);
	c.recv_cqn = htole32(cqn);
	c.cap.max_send_wr = htole32(CAP.swr);
	c.cap.max_recv_wr = htole32(CAP.rwr);
	c.cap.max_send_sge = htole32(CAP.ssge);
	c.cap.max_recv_sge = htole32(CAP.rsge);
	c.cap.max_inline_data = htole32(CAP.inl);
	c.ext_flags = htole32(ext_flags);
	c.srqn = htole32(srqn);
	e = X(VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c));
	*qpn = e ? 0 : out32(0);
	return e;
}

static enum rres_err resize_qp(uint32_t qpn, const struct qcap *cap)
{
	struct virtio_rdma_cmd_resize_qp c;

	memset(&c, 0, sizeof(c));
	c.qpn = htole32(qpn);
	c.cap.max_send_wr = htole32(cap->swr);
	c.cap.max_recv_wr = htole32(cap->rwr);
	c.cap.max_send_sge = htole32(cap->ssge);
	c.cap.max_recv_sge = htole32(cap->rsge);
	c.cap.max_inline_data = htole32(cap->inl);
	return X(VIRTIO_NET_CTRL_ROCE_RESIZE_QP, &c, sizeof(c));
}

/* Command data lengths of 18..27. */
static const size_t ext_len[10] = { 16, 16, 4, 4, 16, 8, 4, 8, 32, 4 };
static const size_t ext_ack[10] = { 16, 0, 16, 0, 12, 8, 0, 4, 24, 4 };

static void test_ext_off(void)
{
	struct virtio_rdma_ack_query_device_ext d;
	struct virtio_rdma_ack_query_qp_ext q;
	uint8_t buf[64] = { 0 }, zero[56] = { 0 };
	uint32_t pdn, cqn, qpn, x, lk, rk, i;
	struct rres_dev_cfg cfg;

	/* Offered, not negotiated: the RFC-only device. */
	cfg = ext_cfg();
	REQUIRE(setup_cfg(&cfg));
	for (i = 0; i < 10; i++) {
		CHECK_EQ(X(18 + i, buf, ext_len[i]), RRES_ERR_UNKNOWN_CMD);
		CHECK_EQ(rd.stats.cmds[18 + i], 1);
	}
	CHECK_EQ(X(28, buf, 4), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(rd.stats.errs[RRES_ERR_UNKNOWN_CMD], 11);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0), RRES_OK);
	memcpy(&d, obuf, sizeof(d));
	CHECK_EQ(le64toh(d.device_cap_flags), VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN);
	CHECK_MEM(obuf + 72, zero, 56);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0), RRES_OK);
	CHECK_MEM(obuf + 8, zero, 4);
	CHECK_MEM(obuf + 16, zero, 16);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	/* CREATE_QP's reserved words are ignored (a bogus SRQ flag too). */
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, 0xffffffff, 77, &qpn), RRES_OK);
	CHECK(rres_qp_lookup(&rd, qpn)->srq == NULL);
	CHECK_EQ(rres_qp_lookup(&rd, qpn)->ext_flags, 0);
	CHECK_EQ(rres_qp_lookup(&rd, qpn)->cap.max_recv_wr, CAP.rwr);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, 0), RRES_OK);
	memcpy(&q, obuf, sizeof(q));
	CHECK_MEM(obuf + 104, zero, 16);
	/* New access flags refused. */
	CHECK_EQ(reg_a(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC, 0, 1,
		       &x, &lk, &rk), RRES_ERR_FLAGS);
	CHECK_EQ(reg_a(pdn, VIRTIO_IB_ACCESS_MW_BIND, 0, 1, &x, &lk, &rk), RRES_ERR_FLAGS);
	{
		struct virtio_rdma_cmd_modify_qp c;

		mq_fill(&c, qpn, VIRTIO_IB_QP_STATE | req_init(VIRTIO_IB_QPT_RC), VIRTIO_IB_QPS_INIT);
		c.qp_access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE |
					    VIRTIO_IB_ACCESS_REMOTE_ATOMIC);
		CHECK_EQ(modify(&c), RRES_ERR_FLAGS);
		CHECK_EQ(qp_state(qpn), VIRTIO_IB_QPS_RESET);
		/* with the extension it is accepted */
		rres_dev_set_ext(&rd, true);
		CHECK_EQ(modify(&c), RRES_OK);
		CHECK_EQ(rres_qp_lookup(&rd, qpn)->attr.qp_access_flags,
			 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_ATOMIC);
		c.qp_access_flags = htole32(VIRTIO_IB_ACCESS_MW_BIND);
		c.attr_mask = htole32(VIRTIO_IB_QP_ACCESS_FLAGS);
		CHECK_EQ(modify(&c), RRES_ERR_FLAGS); /* not a QP flag */
		rres_dev_set_ext(&rd, false);
	}
	/* No events; extension rings exist but are not usable. */
	rres_event_raise(&rd, &rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
	rres_dev_set_mac(&rd, (const uint8_t[6]){ 0x52, 0, 0, 0, 0, 9 });
	CHECK(!rres_event_pending(&rd));
	CHECK_EQ(rd.events_raised, 0);
	CHECK_EQ(rres_ring_count(&rd), 3 + 8 + 32 + 1 + 4);
	CHECK(!rres_ring_usable(&rd, rres_ring_of_eventq(&rd)));
	CHECK(!rres_ring_usable(&rd, rres_ring_of_srq(&rd, 0)));
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK(no_ext_objects());
	teardown();

	/* Not offered at all: the RFC layout. */
	REQUIRE(setup());
	CHECK(!rd.ext_offered);
	CHECK_EQ(rres_ring_count(&rd), 3 + 8 + 32);
	CHECK_EQ(rd.max_rdma_srqs, 0);
	teardown();
}

static void test_ext_query(void)
{
	struct virtio_rdma_ack_query_device_ext d;
	struct virtio_rdma_ack_query_port_ext p;
	uint8_t buf[64] = { 0 }, zero[36] = { 0 };
	uint32_t i;

	REQUIRE(setup_ext());
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0), RRES_OK);
	CHECK_EQ(olen, 128);
	memcpy(&d, obuf, sizeof(d));
	CHECK_EQ(le64toh(d.device_cap_flags),
		 VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN | VIRTIO_IB_DEVICE_SRQ |
		 VIRTIO_IB_DEVICE_MEM_MGT_EXTENSIONS | VIRTIO_IB_DEVICE_MEM_WINDOW |
		 VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B | VIRTIO_IB_DEVICE_RESIZE_CQ |
		 VIRTIO_IB_DEVICE_RESIZE_MAX_WR);
	CHECK_EQ(le32toh(d.max_srq_wr), RRES_DEF_MAX_QP_WR);
	CHECK_EQ(le32toh(d.max_srq_sge), RRES_DEF_MAX_SGE);
	CHECK_EQ(le32toh(d.max_mw), 4);
	CHECK_EQ(le32toh(d.max_fast_reg_page_list_len), 16);
	CHECK_EQ(le16toh(d.max_pkeys), 1);
	CHECK_EQ(d.atomic_cap, VIRTIO_IB_ATOMIC_HCA);
	CHECK_EQ(d.padding2, 0);
	CHECK_MEM(d.reserved, zero, sizeof(d.reserved));
	CHECK_EQ(rd.attr.max_srq, 4);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0), RRES_OK);
	memcpy(&p, obuf, sizeof(p));
	CHECK_EQ(le16toh(p.pkey_tbl_len), 1);
	CHECK_EQ(p.padding, 0);
	CHECK_EQ(p.gid1_ipv4[0], 10);
	CHECK_EQ(p.gid1_ipv4[3], 1);
	CHECK_MEM(p.gid2_ipv6, zero, 16);
	/* QUERY_PKEY */
	{
		le16 w[2] = { 0, 0 };

		CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, w, 4), RRES_OK);
		CHECK_EQ(olen, 4);
		CHECK_EQ(get_le16(obuf), 0xffff);
		CHECK_EQ(get_le16(obuf + 2), 0);
		w[0] = htole16(1);
		CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, w, 4), RRES_ERR_RANGE);
		w[0] = htole16(0xffff);
		CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PKEY, w, 4), RRES_ERR_RANGE);
	}
	/* Exact lengths and ack room for 18..27. */
	for (i = 0; i < 10; i++) {
		CHECK_EQ(X(18 + i, buf, ext_len[i] - 1), RRES_ERR_BAD_LEN);
		CHECK_EQ(X(18 + i, buf, ext_len[i] + 1), RRES_ERR_BAD_LEN);
		CHECK_EQ(X(18 + i, NULL, ext_len[i]), RRES_ERR_BAD_LEN);
		if (ext_ack[i])
			CHECK_EQ(rres_ctrl_exec_err(&rd, 18 + i, buf, ext_len[i], obuf,
						    ext_ack[i] - 1, &olen),
				 RRES_ERR_OUT_SPACE);
		CHECK_EQ(olen, 0);
	}
	CHECK(no_ext_objects());
	CHECK(!strcmp(rres_cmd_name(VIRTIO_NET_CTRL_ROCE_QUERY_PKEY), "QUERY_PKEY"));
	CHECK(!strcmp(rres_cmd_name(VIRTIO_NET_CTRL_ROCE_CREATE_SRQ), "CREATE_SRQ"));
	CHECK(!strcmp(rres_err_name(RRES_ERR_CQ_STATE), "cq_state"));
	/* A capability the device does not report: unknown. */
	rd.attr.ext_cap_flags &= ~(VIRTIO_IB_DEVICE_RESIZE_CQ | VIRTIO_IB_DEVICE_MEM_WINDOW);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, 0, 1), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_ALLOC_MW, 1, 1), RRES_ERR_UNKNOWN_CMD);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, 1), RRES_ERR_UNKNOWN_CMD);
	{
		uint32_t pdn, x, lk, rk;

		CHECK_EQ(pd_create(&pdn), RRES_OK);
		CHECK_EQ(reg_a(pdn, VIRTIO_IB_ACCESS_MW_BIND, 0, 1, &x, &lk, &rk), RRES_ERR_FLAGS);
	}
	teardown();

	/* max_rdma_srqs 0 with ROCE_EXT: no SRQ capability. */
	{
		struct rres_dev_cfg c = ext_cfg();
		uint32_t pdn, cqn, x;

		c.max_rdma_srqs = 0;
		REQUIRE(setup_cfg(&c));
		rres_dev_set_ext(&rd, true);
		CHECK(rd.ext_offered);
		CHECK_EQ(rres_ring_count(&rd), 3 + 8 + 32 + 1);
		CHECK(!(rd.attr.ext_cap_flags & VIRTIO_IB_DEVICE_SRQ));
		CHECK_EQ(pd_create(&pdn), RRES_OK);
		CHECK_EQ(cq_create(4, &cqn), RRES_OK);
		CHECK_EQ(srq_create(pdn, 1, 1, &x), RRES_ERR_UNKNOWN_CMD);
		CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, VIRTIO_IB_QP_CREATE_SRQ, 0, &x),
			 RRES_ERR_FLAGS);
		teardown();
	}
}

struct ext_hooks {
	int srq_create, srq_destroy, events;
	int fail_srq, cq_resize_rc, qp_resize_rc;
	bool overflowed;
	uint32_t last_cqe;
};
static struct ext_hooks eh;

static int eh_srq_create(struct rres_dev *d, struct rres_srq *s)
{
	(void)d;
	(void)s;
	eh.srq_create++;
	return eh.fail_srq ? -ENOMEM : 0;
}

static void eh_srq_destroy(struct rres_dev *d, struct rres_srq *s)
{
	(void)d;
	(void)s;
	eh.srq_destroy++;
}

static void eh_event(struct rres_dev *d)
{
	(void)d;
	eh.events++;
}

static int eh_cq_resize(struct rres_dev *d, struct rres_cq *cq, uint32_t cqe)
{
	(void)d;
	(void)cq;
	eh.last_cqe = cqe;
	return eh.cq_resize_rc;
}

static bool eh_cq_overflowed(struct rres_dev *d, struct rres_cq *cq)
{
	(void)d;
	(void)cq;
	return eh.overflowed;
}

static int eh_qp_resize(struct rres_dev *d, struct rres_qp *qp, const struct rres_qp_cap *c)
{
	(void)d;
	(void)qp;
	(void)c;
	return eh.qp_resize_rc;
}

static void ext_hooks_set(void)
{
	memset(&eh, 0, sizeof(eh));
	rd.hooks.srq_create = eh_srq_create;
	rd.hooks.srq_destroy = eh_srq_destroy;
	rd.hooks.event_raised = eh_event;
	rd.hooks.cq_resize = eh_cq_resize;
	rd.hooks.cq_overflowed = eh_cq_overflowed;
	rd.hooks.qp_resize = eh_qp_resize;
}

static void test_srq(void)
{
	uint32_t pdn, pdn2, cqn, srqn[5], qpn, qpn2, x, i;
	struct virtio_rdma_ack_query_qp_ext q;
	struct rres_srq *s;
	struct rres_qp *qp;

	REQUIRE(setup_ext());
	ext_hooks_set();
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	/* errors: nothing left behind */
	CHECK_EQ(srq_create(99, 8, 1, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(srq_create(pdn, 0, 1, &x), RRES_ERR_RANGE);
	CHECK_EQ(srq_create(pdn, RRES_DEF_MAX_QP_WR + 1, 1, &x), RRES_ERR_RANGE);
	CHECK_EQ(srq_create(pdn, 8, RRES_DEF_MAX_SGE + 1, &x), RRES_ERR_RANGE);
	eh.fail_srq = 1;
	CHECK_EQ(srq_create(pdn, 8, 1, &x), RRES_ERR_NOMEM);
	eh.fail_srq = 0;
	CHECK_EQ(rd.srqs.used, 0);
	CHECK_EQ(rres_pd_lookup(&rd, pdn)->refcnt, 0);
	/* success: the ack, then the limit S = 4 */
	CHECK_EQ(srq_create(pdn2, RRES_DEF_MAX_QP_WR, RRES_DEF_MAX_SGE, &srqn[0]), RRES_OK);
	CHECK_EQ(olen, 16);
	CHECK_EQ(srqn[0], 0); /* the failed create did not consume index 0 */
	CHECK_EQ(out32(4), RRES_DEF_MAX_QP_WR);
	CHECK_EQ(out32(8), RRES_DEF_MAX_SGE);
	CHECK_EQ(out32(12), 0);
	for (i = 1; i < 4; i++)
		CHECK_EQ(srq_create(pdn, 8, 0, &srqn[i]), RRES_OK);
	CHECK_EQ(srq_create(pdn, 8, 1, &x), RRES_ERR_LIMIT);
	CHECK_EQ(eh.srq_create, 5);
	s = rres_srq_lookup(&rd, srqn[1]);
	REQUIRE(s);
	CHECK_EQ(s->vq, rres_ring_of_srq(&rd, srqn[1]));
	CHECK_EQ(s->ev.id, srqn[1]);
	CHECK(rres_ring_srq(&rd, s->vq) == s);
	CHECK(rres_ring_usable(&rd, s->vq));
	CHECK_EQ(s->srq_limit, 0);
	/* MODIFY_SRQ / QUERY_SRQ */
	CHECK_EQ(srq_modify(77, VIRTIO_IB_SRQ_LIMIT, 0, 1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(srq_modify(srqn[1], 0, 0, 1), RRES_ERR_ATTR_MASK);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_MAX_WR, 16, 0), RRES_ERR_ATTR_MASK);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_MAX_WR | VIRTIO_IB_SRQ_LIMIT, 16, 1),
		 RRES_ERR_ATTR_MASK);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_LIMIT | 4, 0, 1), RRES_ERR_ATTR_MASK);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_LIMIT, 0, 9), RRES_ERR_RANGE);
	CHECK_EQ(s->srq_limit, 0);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_LIMIT, 12345, 8), RRES_OK);
	CHECK_EQ(olen, 0);
	CHECK_EQ(s->srq_limit, 8);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, srqn[1]), RRES_OK);
	CHECK_EQ(olen, 16);
	CHECK_EQ(out32(0), 8);
	CHECK_EQ(out32(4), 0);
	CHECK_EQ(out32(8), 8);
	CHECK_EQ(out32(12), 0);
	CHECK_EQ(srq_modify(srqn[1], VIRTIO_IB_SRQ_LIMIT, 0, 0), RRES_OK);
	CHECK_EQ(s->srq_limit, 0);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_QUERY_SRQ, 4), RRES_ERR_BAD_HANDLE);
	/* CREATE_QP with an SRQ */
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, 2, srqn[0], &x), RRES_ERR_FLAGS);
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, VIRTIO_IB_QP_CREATE_SRQ, 4, &x),
		 RRES_ERR_BAD_HANDLE);
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_GSI, cqn, VIRTIO_IB_QP_CREATE_SRQ, srqn[0], &x),
		 RRES_ERR_QP_TYPE);
	CHECK_EQ(rd.qps.used, 0);
	CHECK_EQ(rres_srq_lookup(&rd, srqn[0])->refcnt, 0);
	/* the SRQ's PD need not be the QP's */
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_UD, cqn, VIRTIO_IB_QP_CREATE_SRQ, srqn[0], &qpn),
		 RRES_OK);
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, 0, srqn[2], &qpn2), RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	REQUIRE(qp);
	CHECK(qp->srq == rres_srq_lookup(&rd, srqn[0]));
	CHECK_EQ(qp->cap.max_recv_wr, 0);
	CHECK_EQ(qp->cap.max_recv_sge, 0);
	CHECK_EQ(qp->ev.id, qpn);
	CHECK_EQ(rres_srq_lookup(&rd, srqn[0])->refcnt, 1);
	CHECK(rres_qp_lookup(&rd, qpn2)->srq == NULL);
	/* its own receive ring is never used */
	CHECK(rres_ring_usable(&rd, qp->sq_vq));
	CHECK(!rres_ring_usable(&rd, qp->rq_vq));
	CHECK(rres_ring_usable(&rd, rres_qp_lookup(&rd, qpn2)->rq_vq));
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, 0), RRES_OK);
	memcpy(&q, obuf, sizeof(q));
	CHECK_EQ(le32toh(q.ext_flags), VIRTIO_IB_QP_CREATE_SRQ);
	CHECK_EQ(le32toh(q.srqn), srqn[0]);
	CHECK_EQ(le32toh(q.cap.max_recv_wr), 0);
	CHECK_EQ(q.reserved[0] | q.reserved[1], 0);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn2, 0), RRES_OK);
	memcpy(&q, obuf, sizeof(q));
	CHECK_EQ(le32toh(q.ext_flags), 0);
	CHECK_EQ(le32toh(q.srqn), 0);
	/* in use */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, srqn[0]), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, 4), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
	CHECK_EQ(rres_srq_lookup(&rd, srqn[0])->refcnt, 0);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn2), RRES_OK);
	for (i = 0; i < 4; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, srqn[i]), RRES_OK);
	CHECK_EQ(eh.srq_destroy, 4);
	CHECK(!rres_ring_usable(&rd, rres_ring_of_srq(&rd, srqn[1])));
	CHECK(rres_ring_srq(&rd, rres_ring_of_srq(&rd, srqn[1])) == NULL);
	/* FIFO reuse: the next SRQ is index 4? no: S = 4, so index 0 again */
	CHECK_EQ(srq_create(pdn, 8, 1, &srqn[4]), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, srqn[4]), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_OK);
	CHECK(no_ext_objects());
	CHECK_EQ(rd.stats.cmds[VIRTIO_NET_CTRL_ROCE_CREATE_SRQ], 11);
	teardown();
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* Write a le64 page array into region B (page index `at`), return its GPA. */
static uint64_t page_list(uint32_t at, const uint64_t *gpas, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		put64(map_b + at * PG + 8 * i, gpas[i]);
	return GPA_B + at * PG;
}

static void test_fast_reg(void)
{
	uint32_t pdn, pdn2, mrn, key, umrn, ulk, urk, x, lk, i, many[8];
	const uint32_t LW = VIRTIO_IB_ACCESS_LOCAL_WRITE, RW = VIRTIO_IB_ACCESS_REMOTE_WRITE,
		       RR = VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vhost_mem_region *ra = vhost_mem_find(&mem, GPA_A);
	uint64_t g[17], pl;
	struct iovec iov[4];
	struct rres_pd *pd;
	struct rres_mr *mr;
	struct rres_dev_cfg cfg;

	REQUIRE(setup_ext());
	ra = vhost_mem_find(&mem, GPA_A);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	pd = rres_pd_lookup(&rd, pdn);
	/* ALLOC_MR errors */
	CHECK_EQ(alloc_mr(77, 0, 4, &x, &lk), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(alloc_mr(77, 1, 4, &x, &lk), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(alloc_mr(pdn, 1, 4, &x, &lk), RRES_ERR_RANGE);
	CHECK_EQ(alloc_mr(pdn, 0, 0, &x, &lk), RRES_ERR_RANGE);
	CHECK_EQ(alloc_mr(pdn, 0, 17, &x, &lk), RRES_ERR_RANGE);
	CHECK(no_objects() == false); /* the two PDs */
	CHECK_EQ(rd.mrs.used, 0);
	CHECK_EQ(rd.mr_pages, 0);
	/* ALLOC_MR: FREE, key with consumer byte 0, page budget taken */
	CHECK_EQ(alloc_mr(pdn, 0, 16, &mrn, &key), RRES_OK);
	CHECK_EQ(olen, 12);
	CHECK_EQ(key >> 16, mrn);
	CHECK_EQ(key & 0xff, 0);
	CHECK((key & 0xff00) != 0);
	CHECK_EQ(rd.mr_pages, 16);
	mr = rres_mr_lookup(&rd, mrn);
	REQUIRE(mr);
	CHECK_EQ(mr->type, RRES_MR_FAST);
	CHECK_EQ(mr->state, RRES_MR_FREE);
	CHECK_EQ(mr->max_pages, 16);
	CHECK(rres_mr_lookup_lkey(&rd, key, pd, 0) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, key, pd, 0) == NULL);
	/* a page list of 3 pages of A for [iova, iova + 2 pages + 2) at offset 4094 */
	for (i = 0; i < 17; i++)
		g[i] = GPA_A + (10 + i) * PG;
	pl = page_list(0, g, 17);
	for (i = 0; i < 3 * PG; i++)
		map_a[10 * PG + i] = (uint8_t)(i * 7);
	/* REG_MR failures: LOC_PROT_ERR and nothing changes */
	CHECK_EQ(rres_mr_fast_reg(&rd, rres_pd_lookup(&rd, pdn2), key | 1, 0x1ffe, 2 * PG + 4,
				  pl, LW), VIRTIO_IB_WC_LOC_PROT_ERR);            /* other PD */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, (key ^ 0x100) | 1, 0x1ffe, 2 * PG + 4, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* device bits */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0, 17 * PG, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* > max_num_sg */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, UINT64_MAX - 10, 100, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* wraps */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0, RRES_DEF_MAX_MR_SIZE + 1, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* > max_mr_size */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl, RW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* RW without LW */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl, 1u << 5),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* unknown bit */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl + 4, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* list misaligned */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, 0x300000, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* list outside */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, GPA_B + PAGES_B * PG - 16, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* list crosses end */
	put64(map_b + 8, GPA_A + 11 * PG + 8);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* page misaligned */
	put64(map_b + 8, 0x300000);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* page outside */
	put64(map_b + 8, GPA_A + PAGES_A * PG);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key, 0x1ffe, 2 * PG + 4, pl, LW),
		 VIRTIO_IB_WC_LOC_PROT_ERR);                                   /* page past A */
	put64(map_b + 8, GPA_A + 11 * PG);
	CHECK_EQ(mr->state, RRES_MR_FREE);
	CHECK_EQ(mr->nregions, 0);
	CHECK_EQ(ra->refcnt, 1);
	/* success with consumer byte 0x11 */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | 0x11, 0x1ffe, 2 * PG + 4, pl,
				  LW | RR | VIRTIO_IB_ACCESS_MW_BIND), 0);
	CHECK_EQ(mr->state, RRES_MR_VALID);
	CHECK_EQ(mr->npages, 4);
	CHECK_EQ(ra->refcnt, 2);
	CHECK_EQ(rd.mr_pages, 16);
	CHECK(rres_mr_lookup_lkey(&rd, key | 0x11, pd, LW) == mr);
	CHECK(rres_mr_lookup_rkey(&rd, key | 0x11, pd, RR) == mr);
	CHECK(rres_mr_lookup_rkey(&rd, key | 0x11, pd, RW) == NULL);
	CHECK(rres_mr_lookup_lkey(&rd, key, pd, 0) == NULL);             /* stale byte */
	CHECK(rres_mr_lookup_lkey(&rd, key | 0x11, rres_pd_lookup(&rd, pdn2), 0) == NULL);
	/* bytes: iova 0x1ffe is page 0 offset 4094 */
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x1ffe, 2 * PG + 4, iov, 4), 1); /* A is contiguous */
	CHECK(iov[0].iov_len == 2 * PG + 4);
	CHECK_MEM(iov[0].iov_base, map_a + 10 * PG + 4094, 2 * PG + 4);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x1ffe + 2 * PG + 4, 1, iov, 4), -EFAULT);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x1ffd, 1, iov, 4), -EFAULT);
	/* registered again while VALID: refused */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | 0x12, 0, PG, pl, LW), VIRTIO_IB_WC_LOC_PROT_ERR);
	/* invalidation: exact key, PD, kind */
	CHECK_EQ(rres_key_invalidate(&rd, pd, key), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(rres_key_invalidate(&rd, rres_pd_lookup(&rd, pdn2), key | 0x11),
		 VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(reg_a(pdn, LW | RR, 0, 1, &umrn, &ulk, &urk), RRES_OK);
	CHECK_EQ(rres_key_invalidate(&rd, pd, ulk), VIRTIO_IB_WC_LOC_PROT_ERR); /* user MR */
	CHECK_EQ(rres_key_invalidate(&rd, pd, urk), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, ulk, 0, PG, pl, LW), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(mr->state, RRES_MR_VALID);
	CHECK_EQ(rres_key_invalidate(&rd, pd, key | 0x11), 0);
	CHECK_EQ(mr->state, RRES_MR_FREE);
	CHECK_EQ(ra->refcnt, 2);                       /* the user MR's only */
	CHECK(rres_mr_lookup_lkey(&rd, key | 0x11, pd, 0) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, key | 0x11, pd, RR) == NULL);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x1ffe, 1, iov, 4), -EFAULT);
	CHECK_EQ(rres_key_invalidate(&rd, pd, key | 0x11), 0); /* FREE: no change */
	CHECK_EQ(rres_key_invalidate(&rd, pd, key | 0x12), VIRTIO_IB_WC_LOC_PROT_ERR);
	/* registered again with another consumer byte, zero length */
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | 0x12, 0x5000, 0, 0, LW), 0);
	CHECK(rres_mr_lookup_lkey(&rd, key | 0x12, pd, 0) == mr);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x5000, 0, iov, 4), 0);
	CHECK_EQ(rres_mr_to_iov(&rd, mr, 0x5000, 1, iov, 4), -EFAULT);
	/* DEREG_MR in any state, budget back; DEALLOC_MW of an MR refused */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, mrn), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, umrn), RRES_OK);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK_EQ(ra->refcnt, 1);
	/* a VALID one deregistered drops its page references */
	CHECK_EQ(alloc_mr(pdn, 0, 4, &mrn, &key), RRES_OK);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | 0xff, 0, 4 * PG, pl, LW), 0);
	CHECK_EQ(ra->refcnt, 2);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(ra->refcnt, 1);
	/* MRs limit (8) */
	for (i = 0; i < 8; i++)
		CHECK_EQ(alloc_mr(pdn, 0, 1, &many[i], &lk), RRES_OK);
	CHECK_EQ(alloc_mr(pdn, 0, 1, &x, &lk), RRES_ERR_LIMIT);
	CHECK_EQ(dma_mr(pdn, 0, &x, &lk, &urk), RRES_ERR_LIMIT);
	for (i = 0; i < 8; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, many[i]), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_OK);
	CHECK(no_ext_objects());
	teardown();

	/* The page budget counts max_num_sg. */
	cfg = ext_cfg();
	cfg.max_mr_pages = 20;
	REQUIRE(setup_cfg(&cfg));
	rres_dev_set_ext(&rd, true);
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(alloc_mr(pdn, 0, 16, &mrn, &key), RRES_OK);
	CHECK_EQ(alloc_mr(pdn, 0, 5, &x, &lk), RRES_ERR_LIMIT);
	CHECK_EQ(reg_a(pdn, 0, 0, 5, &x, &lk, &urk), RRES_ERR_LIMIT);
	CHECK_EQ(alloc_mr(pdn, 0, 4, &x, &lk), RRES_OK);
	CHECK_EQ(rd.mr_pages, 20);
	rres_dev_reset(&rd);
	CHECK_EQ(rd.mr_pages, 0);
	CHECK(no_ext_objects());
	teardown();
}

static void test_mw(void)
{
	const uint32_t LW = VIRTIO_IB_ACCESS_LOCAL_WRITE, RW = VIRTIO_IB_ACCESS_REMOTE_WRITE,
		       RR = VIRTIO_IB_ACCESS_REMOTE_READ, RA = VIRTIO_IB_ACCESS_REMOTE_ATOMIC,
		       MB = VIRTIO_IB_ACCESS_MW_BIND;
	uint32_t pdn, pdn2, m1, k1, m2, k2, m3, k3, w1, r1, w2, r2, x, dlk, drk, mrn, key, i;
	uint32_t ws[4];
	struct rres_mr *mr1, *mr3, *mw1, *mw2;
	struct iovec iov[4];
	struct rres_pd *pd, *pd2;
	uint64_t va = 0x7000000000ull, g[4], pl;

	REQUIRE(setup_ext());
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(pd_create(&pdn2), RRES_OK);
	pd = rres_pd_lookup(&rd, pdn);
	pd2 = rres_pd_lookup(&rd, pdn2);
	/* REG_USER_MR accepts MW_BIND and REMOTE_ATOMIC (with LOCAL_WRITE) now */
	CHECK_EQ(reg_a(pdn, RA, 0, 1, &x, &dlk, &drk), RRES_ERR_FLAGS);
	CHECK_EQ(reg_a(pdn, LW | MB, 0, 4, &m1, &k1, &x), RRES_OK);      /* base of windows */
	CHECK_EQ(x, 0);                                                  /* no rkey */
	CHECK_EQ(reg_a(pdn, MB | RR, 4, 1, &m2, &k2, &x), RRES_OK);      /* read-only MR */
	CHECK_EQ(reg_a(pdn, LW | RA, 5, 1, &m3, &k3, &x), RRES_OK);      /* no MW_BIND */
	CHECK(x != 0);
	mr3 = rres_mr_lookup(&rd, m3);
	CHECK(rres_mr_lookup_rkey(&rd, x, pd, RA) == mr3);
	CHECK_EQ(dma_mr(pdn, LW, &x, &dlk, &drk), RRES_OK);
	mr1 = rres_mr_lookup(&rd, m1);
	for (i = 0; i < 4 * PG; i++)
		map_a[i] = (uint8_t)(i * 13 + 1);
	/* ALLOC_MW */
	CHECK_EQ(alloc_mw(77, 1, &x, &x), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(alloc_mw(pdn, 0, &x, &x), RRES_ERR_RANGE);
	CHECK_EQ(alloc_mw(pdn, 3, &x, &x), RRES_ERR_RANGE);
	CHECK_EQ(alloc_mw(pdn, 1, &w1, &r1), RRES_OK);
	CHECK_EQ(olen, 8);
	CHECK_EQ(alloc_mw(pdn, 2, &w2, &r2), RRES_OK);
	CHECK_EQ(r1 >> 16, w1);
	CHECK_EQ(r1 & 0xff, 0);
	mw1 = rres_mr_lookup(&rd, w1);
	mw2 = rres_mr_lookup(&rd, w2);
	REQUIRE(mw1 && mw2);
	CHECK_EQ(mw1->mw_type, 1);
	CHECK_EQ(mw2->mw_type, 2);
	CHECK(rres_mr_lookup_rkey(&rd, r1, pd, 0) == NULL);              /* not bound */
	{
		struct rres_counts c;

		counts(&c);
		CHECK_EQ(c.mw, 2);
		CHECK_EQ(c.mr, 4);
	}
	/* DEREG_MR of a window, DEALLOC_MW of an MR: bad handle */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, w1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, m1), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, 999), RRES_ERR_BAD_HANDLE);
	/* BIND_MW failures: MW_BIND_ERR, window unchanged */
	CHECK_EQ(rres_mw_bind(&rd, pd2, r2 | 1, k1, va, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR); /* PD */
	CHECK_EQ(rres_mw_bind(&rd, pd, (r2 ^ 0x100) | 1, k1, va, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, k1, k1, va, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR); /* MR key */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k3, va, PG, RR),
		 VIRTIO_IB_WC_MW_BIND_ERR);                              /* MR without MW_BIND */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, dlk, 0x100000, PG, RR),
		 VIRTIO_IB_WC_MW_BIND_ERR);                              /* DMA MR */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1 ^ 1, va, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1, va - 1, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1, va + 3 * PG, PG + 1, RR),
		 VIRTIO_IB_WC_MW_BIND_ERR);                              /* past the MR */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1, UINT64_MAX, 2, RR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1, va, PG, LW), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k1, va, PG, MB), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k2, va, PG, RW),
		 VIRTIO_IB_WC_MW_BIND_ERR);                              /* MR without LW */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 1, k2, va, PG, RA), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(mw2->state, RRES_MR_FREE);
	CHECK_EQ(mr1->nbound, 0);
	/* bind type 2: pages 1..2 of MR 1, read + write */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 0x21, k1, va + PG, 2 * PG, RR | RW), 0);
	CHECK_EQ(mw2->state, RRES_MR_VALID);
	CHECK_EQ(mr1->nbound, 1);
	CHECK(rres_mr_lookup_rkey(&rd, r2 | 0x21, pd, RR | RW) == mw2);
	CHECK(rres_mr_lookup_rkey(&rd, r2 | 0x21, pd, RA) == NULL);      /* no such right */
	CHECK(rres_mr_lookup_rkey(&rd, r2 | 0x21, pd2, RR) == NULL);     /* other PD */
	CHECK(rres_mr_lookup_rkey(&rd, r2, pd, RR) == NULL);             /* stale byte */
	CHECK(rres_mr_lookup_lkey(&rd, r2 | 0x21, pd, 0) == NULL);       /* never local */
	CHECK_EQ(rres_mr_to_iov(&rd, mw2, va + PG, 2 * PG, iov, 4), 1);
	CHECK_MEM(iov[0].iov_base, map_a + PG, 2 * PG);
	CHECK_EQ(rres_mr_to_iov(&rd, mw2, va + PG + 100, 10, iov, 4), 1);
	CHECK_MEM(iov[0].iov_base, map_a + PG + 100, 10);
	CHECK_EQ(rres_mr_to_iov(&rd, mw2, va, 1, iov, 4), -EFAULT);       /* in the MR, not in it */
	CHECK_EQ(rres_mr_to_iov(&rd, mw2, va + 3 * PG - 1, 2, iov, 4), -EFAULT);
	/* a bound type 2 window is not bound again; the MR is in use */
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 0x22, k1, va, PG, RR), VIRTIO_IB_WC_MW_BIND_ERR);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, m1), RRES_ERR_IN_USE);
	/* invalidation: type 2 yes (exact key), type 1 never */
	CHECK_EQ(rres_key_invalidate(&rd, pd, r2 | 0x22), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(rres_key_invalidate(&rd, pd2, r2 | 0x21), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(rres_key_invalidate(&rd, pd, r2 | 0x21), 0);
	CHECK_EQ(mw2->state, RRES_MR_FREE);
	CHECK_EQ(mr1->nbound, 0);
	CHECK(rres_mr_lookup_rkey(&rd, r2 | 0x21, pd, RR) == NULL);
	CHECK_EQ(rres_mr_to_iov(&rd, mw2, va + PG, 1, iov, 4), -EFAULT);
	CHECK_EQ(rres_key_invalidate(&rd, pd, r2 | 0x21), 0);             /* FREE: nothing */
	CHECK_EQ(rres_key_invalidate(&rd, pd, r1), VIRTIO_IB_WC_LOC_PROT_ERR);
	/* type 1: bind, move to another MR, unbind with length 0 */
	CHECK_EQ(rres_mw_bind(&rd, pd, r1 | 1, k1, va, PG, RR), 0);
	CHECK_EQ(mr1->nbound, 1);
	CHECK_EQ(rres_key_invalidate(&rd, pd, r1 | 1), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(rres_mw_bind(&rd, pd, r1 | 2, k2, va, PG, RR), 0);
	CHECK_EQ(mr1->nbound, 0);
	CHECK_EQ(rres_mr_lookup(&rd, m2)->nbound, 1);
	CHECK(rres_mr_lookup_rkey(&rd, r1 | 1, pd, RR) == NULL);
	CHECK(rres_mr_lookup_rkey(&rd, r1 | 2, pd, RR) == mw1);
	CHECK_EQ(rres_mr_to_iov(&rd, mw1, va, 8, iov, 4), 1);
	CHECK_MEM(iov[0].iov_base, map_a + 4 * PG, 8);
	CHECK_EQ(rres_mw_bind(&rd, pd, r1 | 3, 0, 0, 0, 0), 0);
	CHECK_EQ(mw1->state, RRES_MR_FREE);
	CHECK_EQ(rres_mr_lookup(&rd, m2)->nbound, 0);
	CHECK(rres_mr_lookup_rkey(&rd, r1 | 2, pd, RR) == NULL);
	/* a window never outlives its fast-registration MR either */
	CHECK_EQ(alloc_mr(pdn, 0, 4, &mrn, &key), RRES_OK);
	for (i = 0; i < 4; i++)
		g[i] = GPA_A + (20 + i) * PG;
	pl = page_list(1, g, 4);
	CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | 5, 0x10000, 4 * PG, pl, LW | MB | RA), 0);
	CHECK_EQ(rres_mw_bind(&rd, pd, r2 | 0x30, key | 5, 0x10000 + 8, 8, RA | RW), 0);
	CHECK(rres_mr_lookup_rkey(&rd, r2 | 0x30, pd, RA) == mw2);
	CHECK_EQ(rres_key_invalidate(&rd, pd, key | 5), VIRTIO_IB_WC_LOC_PROT_ERR);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_ERR_IN_USE);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_ERR_IN_USE);
	/* DEALLOC_MW unbinds first */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, w2), RRES_OK);
	CHECK_EQ(rres_mr_lookup(&rd, mrn)->nbound, 0);
	CHECK_EQ(rres_key_invalidate(&rd, pd, key | 5), 0);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, w1), RRES_OK);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, w1), RRES_ERR_BAD_HANDLE);
	/* the window limit (4) */
	for (i = 0; i < 4; i++)
		CHECK_EQ(alloc_mw(pdn2, 1 + (i & 1), &ws[i], &x), RRES_OK);
	CHECK_EQ(alloc_mw(pdn2, 1, &x, &x), RRES_ERR_LIMIT);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn2), RRES_ERR_IN_USE);
	for (i = 0; i < 4; i++)
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, ws[i]), RRES_OK);
	/* type 2 needs its capability */
	rd.attr.ext_cap_flags &= ~VIRTIO_IB_DEVICE_MEM_WINDOW_TYPE_2B;
	CHECK_EQ(alloc_mw(pdn2, 2, &x, &x), RRES_ERR_RANGE);
	/* a bound window dies with a device reset, before its MR */
	CHECK_EQ(alloc_mw(pdn, 1, &w1, &r1), RRES_OK);
	CHECK_EQ(rres_mw_bind(&rd, pd, r1 | 1, k1, va, PG, RR), 0);
	rres_dev_reset(&rd);
	CHECK(no_ext_objects());
	CHECK_EQ(vhost_mem_find(&mem, GPA_A)->refcnt, 1);
	teardown();
}

static void test_resize(void)
{
	uint32_t pdn, cqn, qpn, qpn2, srqn, x;
	struct rres_qp *qp;
	struct qcap c;

	REQUIRE(setup_ext());
	ext_hooks_set();
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	/* RESIZE_CQ */
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, 5, 8), RRES_ERR_BAD_HANDLE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 0), RRES_ERR_RANGE);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, RRES_DEF_MAX_CQE + 1), RRES_ERR_RANGE);
	eh.overflowed = true;
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 8), RRES_ERR_CQ_STATE);
	eh.overflowed = false;
	eh.cq_resize_rc = -ERANGE;
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 2), RRES_ERR_RANGE);
	eh.cq_resize_rc = -ENOMEM;
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 64), RRES_ERR_NOMEM);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->cqe, 4);
	eh.cq_resize_rc = 0;
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 64), RRES_OK);
	CHECK_EQ(olen, 4);
	CHECK_EQ(out32(0), 64);
	CHECK_EQ(eh.last_cqe, 64);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->cqe, 64);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_RESIZE_CQ, cqn, 1), RRES_OK);
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->cqe, 1);
	CHECK_EQ(rd.stats.errs[RRES_ERR_CQ_STATE], 1);
	/* RESIZE_QP */
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	qp = rres_qp_lookup(&rd, qpn);
	c = CAP;
	c.swr = 128;
	c.rwr = 1;
	CHECK_EQ(resize_qp(qpn + (1u << 14), &c), RRES_ERR_BAD_HANDLE);
	c.ssge++;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	c.ssge--;
	c.rsge--;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	c.rsge++;
	c.inl = 0;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	c.inl = CAP.inl;
	c.swr = RRES_DEF_MAX_QP_WR + 1;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	c.swr = 128;
	c.rwr = RRES_DEF_MAX_QP_WR + 1;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	c.rwr = 1;
	eh.qp_resize_rc = -ERANGE;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_RANGE);
	eh.qp_resize_rc = -ENOMEM;
	CHECK_EQ(resize_qp(qpn, &c), RRES_ERR_NOMEM);
	CHECK_EQ(qp->cap.max_send_wr, CAP.swr);
	eh.qp_resize_rc = 0;
	CHECK_EQ(resize_qp(qpn, &c), RRES_OK);
	CHECK_EQ(olen, 24);
	CHECK_EQ(out32(0), 128);
	CHECK_EQ(out32(4), 1);
	CHECK_EQ(out32(8), CAP.ssge);
	CHECK_EQ(out32(12), CAP.rsge);
	CHECK_EQ(out32(16), CAP.inl);
	CHECK_EQ(out32(20), 0);
	CHECK_EQ(qp->cap.max_send_wr, 128);
	CHECK_EQ(qp->cap.max_recv_wr, 1);
	CHECK_EQ(two32(VIRTIO_NET_CTRL_ROCE_QUERY_QP, qpn, 0), RRES_OK);
	CHECK_EQ(out32(40), 128);
	CHECK_EQ(out32(44), 1);
	/* with an SRQ: max_recv_wr 0 and max_recv_sge 0 */
	CHECK_EQ(srq_create(pdn, 8, 1, &srqn), RRES_OK);
	CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_UC, cqn, VIRTIO_IB_QP_CREATE_SRQ, srqn, &qpn2),
		 RRES_OK);
	c = CAP;
	c.rsge = 0;
	CHECK_EQ(resize_qp(qpn2, &c), RRES_ERR_RANGE); /* max_recv_wr 64 */
	c.rwr = 0;
	CHECK_EQ(resize_qp(qpn2, &c), RRES_OK);
	(void)x;
	rres_dev_reset(&rd);
	CHECK(no_ext_objects());
	CHECK_EQ(eh.srq_destroy, 1);
	teardown();
}

static void test_events(void)
{
	uint32_t pdn, cqn, cqn2, qpn, srqn, id, i;
	struct rres_cq *cq, *cq2;
	struct rres_qp *qp;
	struct rres_srq *srq;
	uint8_t type;

	REQUIRE(setup_ext());
	ext_hooks_set();
	CHECK(!rres_event_pop(&rd, &type, &id));
	CHECK_EQ(pd_create(&pdn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	CHECK_EQ(cq_create(4, &cqn2), RRES_OK);
	CHECK_EQ(srq_create(pdn, 8, 1, &srqn), RRES_OK);
	CHECK_EQ(srq_create(pdn, 8, 1, &srqn), RRES_OK); /* srqn 1 */
	CHECK_EQ(qp_create(pdn, VIRTIO_IB_QPT_RC, cqn, cqn, &qpn), RRES_OK);
	cq = rres_cq_lookup(&rd, cqn);
	cq2 = rres_cq_lookup(&rd, cqn2);
	qp = rres_qp_lookup(&rd, qpn);
	srq = rres_srq_lookup(&rd, srqn);
	CHECK_EQ(cq2->ev.id, 1);
	CHECK_EQ(srq->ev.id, 1);
	/* FIFO of objects, type order within one, merging */
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	rres_event_raise(&rd, &cq2->ev, VIRTIO_IB_EVENT_CQ_ERR);
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
	rres_event_raise(&rd, &srq->ev, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	rres_event_raise(&rd, &rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_NUM); /* ignored */
	CHECK_EQ(rd.events_raised, 6);
	CHECK_EQ(rd.events_merged, 1);
	CHECK_EQ(eh.events, 5);
	CHECK(rres_event_pending(&rd));
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_QP_FATAL);
	CHECK_EQ(id, qpn);
	/* raised again while the object is still queued: same place */
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_COMM_EST);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_COMM_EST);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_QP_LAST_WQE_REACHED);
	CHECK_EQ(id, qpn);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(id, cqn2);
	/* a popped-empty object goes to the back when raised again */
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_SQ_DRAINED);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_SRQ_LIMIT_REACHED);
	CHECK_EQ(id, srqn);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_PORT_ERR);
	CHECK_EQ(id, 1);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_SQ_DRAINED);
	CHECK(!rres_event_pop(&rd, &type, &id));
	CHECK(!rres_event_pending(&rd));
	/* DESTROY drops the object's pending events, wherever it is queued */
	rres_event_raise(&rd, &cq->ev, VIRTIO_IB_EVENT_CQ_ERR);
	rres_event_raise(&rd, &qp->ev, VIRTIO_IB_EVENT_QP_FATAL);
	rres_event_raise(&rd, &srq->ev, VIRTIO_IB_EVENT_SRQ_ERR);
	rres_event_raise(&rd, &cq2->ev, VIRTIO_IB_EVENT_CQ_ERR);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);   /* middle */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn2), RRES_OK);  /* tail */
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);   /* head */
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_SRQ_ERR);
	CHECK(!rres_event_pop(&rd, &type, &id));
	rres_event_raise(&rd, &srq->ev, VIRTIO_IB_EVENT_SRQ_ERR);
	CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, srqn), RRES_OK);
	CHECK(!rres_event_pending(&rd));
	/* port: link and GID changes */
	rres_dev_link_changed(&rd, false);
	rres_dev_link_changed(&rd, true);
	rres_dev_set_mac(&rd, MAC);                          /* unchanged: no event */
	rres_dev_set_ip4(&rd, true, htonl(0x0a000001));      /* unchanged */
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_PORT_ACTIVE);
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_PORT_ERR);
	CHECK(!rres_event_pop(&rd, &type, &id));
	rres_dev_set_mac(&rd, (const uint8_t[6]){ 0x52, 0x54, 0, 0, 0, 7 });
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_GID_CHANGE);
	CHECK_EQ(id, 1);
	CHECK_EQ(rres_gid_get(&rd, 0)[15], 7);
	rres_dev_set_ip4(&rd, false, 0);
	rres_dev_set_ip4(&rd, true, htonl(0x0a000002));      /* merged */
	CHECK(rres_event_pop(&rd, &type, &id));
	CHECK_EQ(type, VIRTIO_IB_EVENT_GID_CHANGE);
	CHECK(!rres_event_pop(&rd, &type, &id));
	/* bounded: many raises on few objects never grow anything */
	for (i = 0; i < 10000; i++)
		rres_event_raise(&rd, &rd.port_ev, (uint8_t)(i % VIRTIO_IB_EVENT_NUM));
	for (i = 0; rres_event_pop(&rd, &type, &id); i++)
		;
	CHECK_EQ(i, VIRTIO_IB_EVENT_NUM);
	/* reset drops everything; so does turning the extension off; without
	 * it nothing is raised */
	rres_event_raise(&rd, &rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
	rres_dev_reset(&rd);
	CHECK(!rres_event_pending(&rd));
	CHECK_EQ(cq_create(4, &cqn), RRES_OK);
	rres_event_raise(&rd, &rres_cq_lookup(&rd, cqn)->ev, VIRTIO_IB_EVENT_CQ_ERR);
	rres_event_raise(&rd, &rd.port_ev, VIRTIO_IB_EVENT_PORT_ERR);
	rres_dev_set_ext(&rd, false);
	CHECK(!rres_event_pending(&rd));
	CHECK_EQ(rres_cq_lookup(&rd, cqn)->ev.pending, 0);
	CHECK(!rres_cq_lookup(&rd, cqn)->ev.queued);
	CHECK_EQ(rd.port_ev.pending, 0);
	rres_dev_link_changed(&rd, false);
	CHECK(!rres_event_pending(&rd));
	teardown();
}

static void test_ext_rings(void)
{
	uint32_t idx, ev;
	struct rres_dev_cfg c;

	REQUIRE(setup_ext());
	/* N = 1, M = 8, L = 16: 43 seed rings, event queue 43, SRQs 44..47 */
	ev = rres_ring_of_eventq(&rd);
	CHECK_EQ(ev, 43);
	CHECK_EQ(rres_ring_count(&rd), 48);
	CHECK_EQ((int)rres_ring_decode(&rd, 43, &idx), VRDMA_VQ_EVENTQ);
	CHECK_EQ((int)rres_ring_decode(&rd, 44, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, 0);
	CHECK_EQ((int)rres_ring_decode(&rd, 47, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, 3);
	CHECK_EQ((int)rres_ring_decode(&rd, 48, &idx), VRDMA_VQ_INVALID);
	CHECK_EQ((int)rres_ring_decode(&rd, 42, &idx), VRDMA_VQ_RQ);
	CHECK_EQ(rres_ring_of_srq(&rd, 3), 47);
	CHECK(rres_ring_usable(&rd, 43));
	CHECK(!rres_ring_usable(&rd, 44));       /* no SRQ yet */
	CHECK(!rres_ring_usable(&rd, 48));
	CHECK(rres_ring_srq(&rd, 43) == NULL);
	CHECK(rres_ring_cq(&rd, 43) == NULL);
	CHECK(rres_ring_qp(&rd, 44, NULL) == NULL);
	rres_dev_set_ext(&rd, false);
	CHECK(!rres_ring_usable(&rd, 43));
	teardown();

	/* Total virtqueues stay <= 65536: S is clamped. */
	c = ext_cfg();
	c.max_rdma_qps = 16384;
	c.max_rdma_cqs = 16384;
	c.max_rdma_srqs = 16384;
	REQUIRE(setup_cfg(&c));
	CHECK_EQ(rd.max_rdma_srqs, 16380);
	CHECK_EQ(rres_ring_count(&rd), 65536);
	CHECK_EQ((int)rres_ring_decode(&rd, 65535, &idx), VRDMA_VQ_SRQ);
	CHECK_EQ(idx, 16379);
	teardown();
}

/* 3,000 cycles of every extension object: counts and budgets back to zero. */
static void test_ext_cycles(void)
{
	uint32_t pdn, cqn, srqn, qpn, mrn, key, mwn, rkey, m1, k1, x, i;
	struct vhost_mem_region *ra;
	struct rres_pd *pd;
	uint64_t g[2], pl;

	REQUIRE(setup_ext());
	ra = vhost_mem_find(&mem, GPA_A);
	g[0] = GPA_A;
	g[1] = GPA_A + PG;
	pl = page_list(2, g, 2);
	for (i = 0; i < 3000; i++) {
		CHECK_EQ(pd_create(&pdn), RRES_OK);
		pd = rres_pd_lookup(&rd, pdn);
		CHECK_EQ(cq_create(4, &cqn), RRES_OK);
		CHECK_EQ(srq_create(pdn, 8, 1, &srqn), RRES_OK);
		CHECK_EQ(qp_create_ext(pdn, VIRTIO_IB_QPT_RC, cqn, VIRTIO_IB_QP_CREATE_SRQ, srqn,
				       &qpn), RRES_OK);
		CHECK_EQ(alloc_mr(pdn, 0, 2, &mrn, &key), RRES_OK);
		CHECK_EQ(rres_mr_fast_reg(&rd, pd, key | (i & 0xff), 0, 2 * PG, pl,
					  VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND), 0);
		CHECK_EQ(reg_a(pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_MW_BIND, 0, 1,
			       &m1, &k1, &x), RRES_OK);
		CHECK_EQ(alloc_mw(pdn, 1 + (i & 1), &mwn, &rkey), RRES_OK);
		CHECK_EQ(rres_mw_bind(&rd, pd, rkey | 1, (i & 2) ? k1 : key | (i & 0xff),
				      (i & 2) ? 0x7000000000ull : 0, 8,
				      VIRTIO_IB_ACCESS_REMOTE_READ), 0);
		rres_event_raise(&rd, &rres_qp_lookup(&rd, qpn)->ev, VIRTIO_IB_EVENT_QP_FATAL);
		rres_event_raise(&rd, &rres_srq_lookup(&rd, srqn)->ev, VIRTIO_IB_EVENT_SRQ_ERR);
		if (i % 3 == 0) {
			rres_dev_reset(&rd);
			continue;
		}
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_QP, qpn), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_SRQ, srqn), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEALLOC_MW, mwn), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, mrn), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DEREG_MR, m1), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, cqn), RRES_OK);
		CHECK_EQ(one32(VIRTIO_NET_CTRL_ROCE_DESTROY_PD, pdn), RRES_OK);
	}
	CHECK(no_ext_objects());
	CHECK_EQ(ra->refcnt, 1);
	CHECK_EQ(rd.mr_pages, 0);
	teardown();
}

/* ip6=: GID 2 preset and in QUERY_PORT (gid2_ipv6); ADD_GID of the same
 * GID there is a no-op, another one is in use. */
static void test_gid_ipv6(void)
{
	struct rres_dev_cfg c = base_cfg();
	static const uint8_t ip6[16] = { 0xfd, 0, 0, 0x79, [15] = 1 };
	uint8_t other[16];
	struct virtio_rdma_ack_query_port p;

	c.has_ip6 = true;
	memcpy(c.ip6, ip6, 16);
	REQUIRE(setup_cfg(&c));
	CHECK_MEM(rres_gid_get(&rd, 2), ip6, 16);
	CHECK_EQ(X(VIRTIO_NET_CTRL_ROCE_QUERY_PORT, NULL, 0), RRES_OK);
	memcpy(&p, obuf, sizeof(p));
	CHECK_MEM(p.gid2_ipv6, ip6, 16);
	CHECK_EQ(gid_add(2, ip6), RRES_OK);
	memcpy(other, ip6, 16);
	other[15] = 2;
	CHECK(gid_add(2, other) != RRES_OK);
	CHECK_EQ(gid_add(3, other), RRES_OK);
	teardown();
}

/* ttl= and vlan= (netdev_parse_cfg): ranges, defaults, clear errors. */
static void test_netdev_cfg_net(void)
{
	struct netdev_cfg c;
	char err[256];

	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s", 0, &c, err, sizeof(err)), 0);
	CHECK_EQ(c.ttl, 0);
	CHECK_EQ(c.vlan_id, 0);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ttl=1,vlan=4094", 0, &c, err, sizeof(err)), 0);
	CHECK_EQ(c.ttl, 1);
	CHECK_EQ(c.vlan_id, 4094);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ttl=255,vlan=1", 0, &c, err, sizeof(err)), 0);
	CHECK_EQ(c.ttl, 255);
	CHECK_EQ(c.vlan_id, 1);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ttl=0", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "ttl") != NULL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ttl=256", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,vlan=0", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "vlan") != NULL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,vlan=4095", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,vlan=-1", 0, &c, err, sizeof(err)), -EINVAL);
}

/* The device options of the extension (netdev_parse_cfg). */
static void test_netdev_cfg_ext(void)
{
	struct netdev_cfg c;
	char err[256];
	uint32_t room;

	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s", 0, &c, err, sizeof(err)), 0);
	CHECK(c.roce && c.roce_ext);
	CHECK_EQ(c.max_srqs, NETDEV_DEFAULT_SRQS);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ext=off,srqs=7", 0, &c, err, sizeof(err)), 0);
	CHECK(!c.roce_ext);
	CHECK_EQ(c.max_srqs, 7);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ext=on,srqs=0", 0, &c, err, sizeof(err)), 0);
	CHECK(c.roce_ext);
	CHECK_EQ(c.max_srqs, 0);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,srqs=16384", 0, &c, err, sizeof(err)), 0);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,srqs=16385", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "srqs") != NULL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,srqs=-1", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,ext=yes", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "ext") != NULL);
	/* the ring budget: defaults shrink, explicit values must fit */
	room = (uint32_t)MIN(65536u, VHOST_SERVER_MAX_RINGS) - (3 + 16000 + 2 * 16384) - 1;
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,qps=16384,cqs=16000", 0, &c, err, sizeof(err)), 0);
	CHECK(c.roce_ext);
	CHECK_EQ(c.max_srqs, MIN(room, NETDEV_DEFAULT_SRQS));
	if (room < 16384) {
		char spec[96];

		snprintf(spec, sizeof(spec), "socket=/tmp/s,qps=16384,cqs=16000,srqs=%u", room + 1);
		CHECK_EQ(netdev_parse_cfg(spec, 0, &c, err, sizeof(err)), -EINVAL);
		snprintf(spec, sizeof(spec), "socket=/tmp/s,qps=16384,cqs=16000,srqs=%u", room);
		CHECK_EQ(netdev_parse_cfg(spec, 0, &c, err, sizeof(err)), 0);
		CHECK_EQ(c.max_srqs, room);
	}
	if (VHOST_SERVER_MAX_RINGS < 3 + 16384 + 2 * 16384 + 1) {
		CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,qps=16384,cqs=16384", 0, &c, err,
					  sizeof(err)), 0);
		CHECK(!c.roce_ext);
		CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,qps=16384,cqs=16384,ext=on", 0, &c, err,
					  sizeof(err)), -EINVAL);
	}
	/* no extension check without roce */
	CHECK_EQ(netdev_parse_cfg("socket=/tmp/s,roce=off,srqs=16384,qps=16384,cqs=16384", 0, &c,
				  err, sizeof(err)), 0);
}

int main(void)
{
	TEST_PROGRAM("test_rres_ctrl");
	RUN(test_query_device_port);
	RUN(test_unknown_cmd_and_lengths);
	RUN(test_pd);
	RUN(test_cq);
	RUN(test_dma_mr);
	RUN(test_reg_user_mr);
	RUN(test_mr_region_removed);
	RUN(test_qp_create);
	RUN(test_qp_modify_rc_ladder);
	RUN(test_qp_state_table);
	RUN(test_qp_gsi);
	RUN(test_qp_modify_ranges);
	RUN(test_query_qp);
	RUN(test_ah);
	RUN(test_gid);
	RUN(test_limits);
	RUN(test_cycles);
	RUN(test_qpn_generation);
	RUN(test_hooks);
	RUN(test_rings);
	RUN(test_keys_random);
	RUN(test_mtu);
	RUN(test_names);
	RUN(test_ext_off);
	RUN(test_ext_query);
	RUN(test_srq);
	RUN(test_fast_reg);
	RUN(test_mw);
	RUN(test_resize);
	RUN(test_events);
	RUN(test_ext_rings);
	RUN(test_ext_cycles);
	RUN(test_netdev_cfg_ext);
	RUN(test_netdev_cfg_net);
	RUN(test_gid_ipv6);
	return TEST_DONE();
}
