// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "limits" and "soak".
 *
 * limits: every resource created up to its limit, then one more: through
 * the API on device A (the library refuses the extra one itself, -ENOMEM,
 * without a command) and as raw commands on device B (the device answers
 * VIRTIO_NET_ERR). Everything is destroyed and the limit reached again, so a
 * refused command leaked nothing.
 *
 * soak: --count cycles of PD + MR (heap memory, shared and unshared each
 * time) + CQ + QP (+ modify) + AH, created and destroyed. The daemon's fd
 * count (/proc/PID/fd) must be the same after the cycles as after a
 * warm-up, and its VmRSS may grow by at most --rss-kb; the client's own fd
 * count must not move either.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "common/test_sys.h"

#define PG 4096

/* ---- limits ------------------------------------------------------------------ */

static struct vrdma_dev *open_idx(struct rt_ctx *c, int i)
{
	if (!c->sock[i])
		return NULL;
	if (!c->dev[i])
		c->dev[i] = rt_open(c->sock[i]);
	return c->dev[i];
}

static void t_limit_cq(struct rt_ctx *c)
{
	struct vrdma_dev *d = open_idx(c, 0);
	struct vrdma_cq **v;
	uint32_t m, n = 0, i, round;
	uint64_t before;

	RT_REQUIRE(d, "no device");
	m = vrdma_dev_max_rdma_cqs(d);
	if (c->exp_cqs)
		RT_EQ(m, c->exp_cqs);
	v = calloc(m + 1, sizeof(*v));
	RT_REQUIRE(v, "calloc");
	for (round = 0; round < 2; round++) {
		for (n = 0; n <= m; n++) {
			int rc = vrdma_cq_create(d, 4, &v[n]);

			if (rc) {
				RT_EQ(rc, -ENOMEM);
				break;
			}
		}
		RT_EQ(n, m);
		before = rt_cmds(d);
		RT_EQ(vrdma_cq_create(d, 4, &v[m]), -ENOMEM);
		RT_EQ(rt_cmds(d), before);
		for (i = 0; i < n; i++)
			RT_EQ(vrdma_cq_destroy(v[i]), 0);
	}
	free(v);
}

static void t_limit_qp(struct rt_ctx *c)
{
	struct vrdma_dev *d = open_idx(c, 0);
	struct vrdma_qp_init in;
	struct vrdma_qp **v, *gsi = NULL, *x;
	struct vrdma_cq *cq = NULL;
	uint32_t l, n, i, pdn = 0;
	uint64_t before;

	RT_REQUIRE(d, "no device");
	l = vrdma_dev_max_rdma_qps(d);
	if (c->exp_qps)
		RT_EQ(l, c->exp_qps);
	v = calloc(l, sizeof(*v));
	RT_REQUIRE(v && vrdma_pd_alloc(d, &pdn) == 0 && vrdma_cq_create(d, 8, &cq) == 0, "setup");
	memset(&in, 0, sizeof(in));
	in.pdn = pdn;
	in.qp_type = VIRTIO_IB_QPT_UD;
	in.send_cq = in.recv_cq = cq;
	in.cap.max_send_wr = in.cap.max_recv_wr = 2;
	in.cap.max_send_sge = in.cap.max_recv_sge = 1;
	for (n = 0; n < l; n++) {
		int rc = vrdma_qp_create(d, &in, &v[n]);

		if (rc) {
			RT_EQ(rc, -ENOMEM);
			break;
		}
	}
	RT_EQ(n, l - 2); /* index 0 reserved, index 1 = GSI */
	before = rt_cmds(d);
	RT_EQ(vrdma_qp_create(d, &in, &x), -ENOMEM);
	RT_EQ(rt_cmds(d), before);
	in.qp_type = VIRTIO_IB_QPT_GSI;
	RT_EQ(vrdma_qp_create(d, &in, &gsi), 0);
	RT_EQ(vrdma_qp_create(d, &in, &x), -ENOMEM);
	RT_EQ(vrdma_qp_destroy(gsi), 0);
	for (i = 0; i < n; i++)
		RT_EQ(vrdma_qp_destroy(v[i]), 0);
	RT_EQ(vrdma_cq_destroy(cq), 0);
	RT_EQ(vrdma_pd_free(d, pdn), 0);
	free(v);
}

/* PDs, AHs and DMA MRs up to max_pd / max_ah / max_mr (API). */
static void t_limit_pd_ah_mr(struct rt_ctx *c)
{
	struct vrdma_dev *d = open_idx(c, 0);
	struct vrdma_device_attr a;
	struct vrdma_ah_attr av;
	struct vrdma_mr_info *mrs, mr;
	uint32_t *pds, *ahs, n, i, x;
	uint64_t before;

	RT_REQUIRE(d && vrdma_query_device(d, &a) == 0, "no device");
	pds = calloc(a.max_pd, sizeof(*pds));
	ahs = calloc(a.max_ah, sizeof(*ahs));
	mrs = calloc(a.max_mr, sizeof(*mrs));
	RT_REQUIRE(pds && ahs && mrs, "calloc");
	for (n = 0; n < a.max_pd && vrdma_pd_alloc(d, &pds[n]) == 0; n++)
		;
	RT_EQ(n, a.max_pd);
	before = rt_cmds(d);
	RT_EQ(vrdma_pd_alloc(d, &x), -ENOMEM);
	RT_EQ(rt_cmds(d), before);
	for (i = 1; i < n; i++)
		RT_EQ(vrdma_pd_free(d, pds[i]), 0);

	memset(&av, 0, sizeof(av));
	av.grh.dgid[0] = 0xfe;
	av.grh.dgid[1] = 0x80;
	av.grh.dgid[15] = 9;
	for (n = 0; n < a.max_ah && vrdma_ah_create(d, pds[0], &av, &ahs[n]) == 0; n++)
		;
	RT_EQ(n, a.max_ah);
	before = rt_cmds(d);
	RT_EQ(vrdma_ah_create(d, pds[0], &av, &x), -ENOMEM);
	RT_EQ(rt_cmds(d), before);
	for (i = 0; i < n; i++)
		RT_EQ(vrdma_ah_destroy(d, pds[0], ahs[i]), 0);

	for (n = 0; n < a.max_mr && vrdma_mr_get_dma(d, pds[0], 0, &mrs[n]) == 0; n++)
		;
	RT_EQ(n, a.max_mr);
	before = rt_cmds(d);
	RT_EQ(vrdma_mr_get_dma(d, pds[0], 0, &mr), -ENOMEM);
	RT_EQ(rt_cmds(d), before);
	for (i = 0; i < n; i++)
		RT_EQ(vrdma_mr_dereg(d, mrs[i].mrn), 0);
	RT_EQ(vrdma_pd_free(d, pds[0]), 0);
	free(pds);
	free(ahs);
	free(mrs);
}

/* The same limits as the device enforces them (raw commands on B). */
static void t_limit_raw(struct rt_ctx *c)
{
	struct vrdma_dev *d = open_idx(c, c->sock[1] ? 1 : 0);
	struct virtio_rdma_ack_query_device qd;
	uint32_t m, l, max_pd, max_ah, max_mr, n, i, round, pdn, *h;
	struct virtio_rdma_ack_create_pd pa;

	RT_REQUIRE(d, "no device");
	RT_REQUIRE(rt_raw(d, VIRTIO_NET_CTRL_ROCE_QUERY_DEVICE, NULL, 0, &qd, sizeof(qd)) == 0,
		   "query");
	m = vrdma_dev_max_rdma_cqs(d);
	l = vrdma_dev_max_rdma_qps(d);
	max_pd = le32toh(qd.max_pd);
	max_ah = le32toh(qd.max_ah);
	max_mr = le32toh(qd.max_mr);
	h = calloc(max_mr + 1, sizeof(*h));
	RT_REQUIRE(h, "calloc");
	for (round = 0; round < 2; round++) {
		/* CQs */
		for (n = 0; n <= m; n++) {
			struct virtio_rdma_cmd_create_cq cc = { htole32(4) };
			struct virtio_rdma_ack_create_cq ca;

			if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_CQ, &cc, sizeof(cc), &ca,
				   sizeof(ca)))
				break;
			h[n] = le32toh(ca.cqn);
		}
		RT_EQ(n, m);
		/* QPs on CQ h[0] */
		pdn = 0;
		if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, &pa, sizeof(pa)) == 0)
			pdn = le32toh(pa.pdn);
		{
			uint32_t *q = calloc(l, sizeof(*q)), k;
			struct virtio_rdma_cmd_create_qp cq;
			struct virtio_rdma_ack_create_qp qa;

			memset(&cq, 0, sizeof(cq));
			cq.pdn = htole32(pdn);
			cq.qp_type = VIRTIO_IB_QPT_UD;
			cq.send_cqn = cq.recv_cqn = htole32(h[0]);
			cq.cap.max_send_wr = cq.cap.max_recv_wr = htole32(1);
			for (k = 0; q && k < l; k++) {
				if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &cq, sizeof(cq), &qa,
					   sizeof(qa)))
					break;
				q[k] = le32toh(qa.qpn);
			}
			RT_EQ(k, l - 2);
			for (i = 0; q && i < k; i++) {
				struct virtio_rdma_cmd_destroy_qp dq = { htole32(q[i]) };

				RT_EQ(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &dq, sizeof(dq),
					     NULL, 0), 0);
			}
			free(q);
		}
		for (i = 0; i < n; i++) {
			struct virtio_rdma_cmd_destroy_cq dc = { htole32(h[i]) };

			RT_EQ(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_CQ, &dc, sizeof(dc), NULL, 0),
			      0);
		}
		/* AHs and DMA MRs in pdn */
		{
			struct virtio_rdma_cmd_create_ah ca;
			struct virtio_rdma_ack_create_ah aa;

			memset(&ca, 0, sizeof(ca));
			ca.pdn = htole32(pdn);
			ca.ah_attr.grh.dgid[0] = 0xfe;
			ca.ah_attr.grh.dgid[15] = 1;
			for (n = 0; n <= max_ah; n++) {
				if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_AH, &ca, sizeof(ca), &aa,
					   sizeof(aa)))
					break;
				h[n] = le32toh(aa.ah);
			}
			RT_EQ(n, max_ah);
			for (i = 0; i < n; i++) {
				struct virtio_rdma_cmd_destroy_ah da = { htole32(pdn), htole32(h[i]) };

				RT_EQ(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_AH, &da, sizeof(da),
					     NULL, 0), 0);
			}
		}
		if (round == 0) {
			struct virtio_rdma_cmd_get_dma_mr g = { htole32(pdn), 0 };
			struct virtio_rdma_ack_get_dma_mr ga;

			for (n = 0; n <= max_mr; n++) {
				if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_GET_DMA_MR, &g, sizeof(g), &ga,
					   sizeof(ga)))
					break;
				h[n] = le32toh(ga.mrn);
			}
			RT_EQ(n, max_mr);
			for (i = 0; i < n; i++) {
				struct virtio_rdma_cmd_dereg_mr dm = { htole32(h[i]) };

				RT_EQ(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DEREG_MR, &dm, sizeof(dm), NULL,
					     0), 0);
			}
		}
		/* PDs (pdn is one of them) */
		h[0] = pdn;
		for (n = 1; n <= max_pd; n++) {
			if (rt_raw(d, VIRTIO_NET_CTRL_ROCE_CREATE_PD, NULL, 0, &pa, sizeof(pa)))
				break;
			h[n] = le32toh(pa.pdn);
		}
		RT_EQ(n, max_pd);
		for (i = 0; i < n; i++) {
			struct virtio_rdma_cmd_destroy_pd dp = { htole32(h[i]) };

			RT_EQ(rt_raw(d, VIRTIO_NET_CTRL_ROCE_DESTROY_PD, &dp, sizeof(dp), NULL, 0),
			      0);
		}
	}
	free(h);
}

void rt_limits(struct rt_ctx *c)
{
	RT_RUN(c, t_limit_cq);
	RT_RUN(c, t_limit_qp);
	RT_RUN(c, t_limit_pd_ah_mr);
	RT_RUN(c, t_limit_raw);
}

/* ---- soak ------------------------------------------------------------------- */

static long rss_kb(int pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* One create/destroy cycle. Returns 0 or the first failure. */
static int cycle(struct vrdma_dev *d, uint8_t *buf, size_t len, unsigned i)
{
	struct vrdma_qp_init in;
	struct vrdma_qp_attr qa;
	struct vrdma_ah_attr av;
	struct vrdma_mr_info mr;
	struct vrdma_cq *cq = NULL;
	struct vrdma_qp *qp = NULL;
	uint32_t pdn, ah;
	int rc;

	rc = vrdma_pd_alloc(d, &pdn);
	if (rc)
		return rc;
	rc = vrdma_mr_reg(d, pdn, buf + i % 64, len, (uintptr_t)buf + i % 64,
			  VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE, &mr);
	if (rc)
		goto pd;
	rc = vrdma_cq_create(d, 32 + i % 100, &cq);
	if (rc)
		goto mr;
	memset(&in, 0, sizeof(in));
	in.pdn = pdn;
	in.qp_type = i & 1 ? VIRTIO_IB_QPT_RC : VIRTIO_IB_QPT_UD;
	in.send_cq = in.recv_cq = cq;
	in.cap.max_send_wr = 16 + i % 50;
	in.cap.max_recv_wr = 16;
	in.cap.max_send_sge = in.cap.max_recv_sge = 2;
	rc = vrdma_qp_create(d, &in, &qp);
	if (rc)
		goto cq;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VIRTIO_IB_QPS_INIT;
	qa.qkey = 0x1111;
	qa.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	rc = vrdma_qp_modify(qp, &qa, VIRTIO_IB_QP_STATE |
				      (i & 1 ? VIRTIO_IB_QP_ACCESS_FLAGS : VIRTIO_IB_QP_QKEY));
	if (rc)
		goto qp;
	memset(&av, 0, sizeof(av));
	av.grh.dgid[0] = 0xfe;
	av.grh.dgid[1] = 0x80;
	av.grh.dgid[15] = (uint8_t)(i | 1);
	rc = vrdma_ah_create(d, pdn, &av, &ah);
	if (rc)
		goto qp;
	rc = vrdma_ah_destroy(d, pdn, ah);
qp:
	if (vrdma_qp_destroy(qp) && !rc)
		rc = -EIO;
cq:
	if (vrdma_cq_destroy(cq) && !rc)
		rc = -EIO;
mr:
	if (vrdma_mr_dereg(d, mr.mrn) && !rc)
		rc = -EIO;
pd:
	if (vrdma_pd_free(d, pdn) && !rc)
		rc = -EIO;
	return rc;
}

static void t_soak(struct rt_ctx *c)
{
	unsigned n = c->count ? c->count : 10000, i, warm;
	struct vrdma_dev *d = open_idx(c, 0);
	int fd0, fd1, my0, my1, rc = 0;
	long rss0, rss1;
	size_t len = 16 * PG;
	uint8_t *buf;

	RT_REQUIRE(d, "no device");
	if (!c->pid)
		RT_SKIP("no --pid");
	buf = malloc(len + 64);
	RT_REQUIRE(buf, "malloc");
	/* Warm-up: the device hands out CQ and QP indexes in FIFO order, so
	 * every index (and what the daemon keeps per ring) is used once. */
	warm = (vrdma_dev_max_rdma_cqs(d) > vrdma_dev_max_rdma_qps(d) ?
			vrdma_dev_max_rdma_cqs(d) : vrdma_dev_max_rdma_qps(d)) + 100;
	for (i = 0; i < warm && !rc; i++)
		rc = cycle(d, buf, len, i);
	RT_REQUIRE(rc == 0, "warm-up cycle %u: %d", i, rc);
	fd0 = tc_count_fds(c->pid);
	rss0 = rss_kb(c->pid);
	my0 = tc_count_fds(0);
	for (i = 0; i < n && !rc; i++)
		rc = cycle(d, buf, len, warm + i);
	RT_CHECK(rc == 0, "cycle %u: %d", i, rc);
	fd1 = tc_count_fds(c->pid);
	rss1 = rss_kb(c->pid);
	my1 = tc_count_fds(0);
	printf("# %u cycles: daemon fds %d -> %d, VmRSS %ld -> %ld kB; client fds %d -> %d\n",
	       i, fd0, fd1, rss0, rss1, my0, my1);
	RT_CHECK(fd0 > 0 && fd0 == fd1, "daemon fds %d -> %d", fd0, fd1);
	RT_CHECK(rss0 > 0 && rss1 - rss0 <= (long)c->rss_bound_kb, "daemon VmRSS %ld -> %ld kB",
		 rss0, rss1);
	RT_CHECK(my0 == my1, "client fds %d -> %d", my0, my1);
	free(buf);
}

void rt_soak(struct rt_ctx *c)
{
	RT_RUN(c, t_soak);
}
