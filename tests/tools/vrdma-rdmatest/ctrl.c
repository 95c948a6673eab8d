// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-rdmatest "ctrl": the RDMA API on device A. Success paths check what
 * the device answered; error paths check the errno and, for errors the
 * library must catch itself, that no command was sent at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt.h"

#define PG 4096

/* Expect rc == exp and no command sent by the call. */
#define LOCAL_ERR(dev, call, exp)                                               \
	do {                                                                    \
		uint64_t before_ = rt_cmds(dev);                                \
		int rc_ = (call);                                               \
		RT_EQ(rc_, exp);                                                \
		RT_CHECK(rt_cmds(dev) == before_, "%s sent a command", #call);  \
	} while (0)

static struct vrdma_dev *dev_a(struct rt_ctx *c)
{
	if (!c->dev[0])
		c->dev[0] = rt_open(c->sock[0]);
	return c->dev[0];
}

static void t_query(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_device_attr a;
	struct vrdma_port_attr p;

	RT_REQUIRE(d, "no device");
	RT_EQ(vrdma_query_device(d, &a), 0);
	RT_EQ(a.max_rdma_qps, vrdma_dev_max_rdma_qps(d));
	RT_EQ(a.max_rdma_cqs, vrdma_dev_max_rdma_cqs(d));
	RT_EQ(a.max_qp, a.max_rdma_qps - 2);
	RT_EQ(a.page_size_cap, 4096);
	RT_EQ(a.hw_ver, 1);
	RT_CHECK(a.device_cap_flags & VIRTIO_IB_DEVICE_RC_RNR_NAK_GEN, "flags %#" PRIx64,
		 a.device_cap_flags);
	RT_EQ(a.max_qp_wr, 16384);
	RT_EQ(a.max_send_sge, 32);
	RT_EQ(a.max_recv_sge, 32);
	RT_EQ(a.max_sge_rd, 32);
	RT_EQ(a.max_cqe, 1u << 20); /* a ring of at most 32768, the rest in the daemon's backlog */
	RT_EQ(a.max_mr, 65535);
	RT_EQ(a.max_pd, 16384);
	RT_EQ(a.max_ah, 16384);
	RT_EQ(a.max_qp_rd_atom, 128);
	RT_EQ(a.max_qp_init_rd_atom, 128);
	RT_EQ(a.max_mr_size, 1ull << 32);
	RT_EQ(a.max_inline_data, 512);
	RT_EQ(vrdma_query_port(d, &p), 0);
	RT_EQ(p.gid_tbl_len, 16);
	RT_EQ(p.max_msg_sz, 1u << 31);
	RT_CHECK(p.link_up, "link down");
	RT_EQ(p.mtu, 1500);
	RT_EQ(p.active_mtu, VIRTIO_IB_MTU_1024);
	LOCAL_ERR(d, vrdma_query_device(d, NULL), -EINVAL);
}

static void t_gid(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	uint8_t gid[16], exp[16], mac[6], g2[16], g3[16], zero[16];

	RT_REQUIRE(d, "no device");
	memset(zero, 0, 16);
	vrdma_dev_mac(d, mac);
	rt_gid_linklocal(mac, exp);
	RT_EQ(vrdma_gid_query(d, 0, gid), 0);
	RT_CHECK(!memcmp(gid, exp, 16), "GID 0 is not the link-local GID of the MAC");
	LOCAL_ERR(d, vrdma_gid_query(d, 16, gid), -EINVAL);
	LOCAL_ERR(d, vrdma_gid_query(d, 2, gid), -ENODATA);
	if (c->has_ip) {
		rt_gid_ipv4(c->ip, exp);
		LOCAL_ERR(d, vrdma_gid_query(d, 1, gid), 0);
		RT_CHECK(!memcmp(gid, exp, 16), "GID 1 is not ::ffff:ip");
	} else {
		LOCAL_ERR(d, vrdma_gid_query(d, 1, gid), -ENODATA);
	}
	memset(g2, 0, 16);
	g2[0] = 0x20;
	g2[1] = 0x01;
	g2[2] = 0x0d;
	g2[3] = 0xb8;
	g2[15] = 0x42;
	memcpy(g3, g2, 16);
	g3[15] = 0x43;
	RT_EQ(vrdma_gid_add(d, 2, g2), 0);
	RT_EQ(vrdma_gid_query(d, 2, gid), 0);
	RT_CHECK(!memcmp(gid, g2, 16), "GID 2 differs");
	LOCAL_ERR(d, vrdma_gid_add(d, 2, g2), 0); /* same again: no-op */
	LOCAL_ERR(d, vrdma_gid_add(d, 2, g3), -EBUSY);
	LOCAL_ERR(d, vrdma_gid_add(d, 0, g3), -EPERM);
	LOCAL_ERR(d, vrdma_gid_add(d, 1, g3), -EPERM);
	LOCAL_ERR(d, vrdma_gid_add(d, 16, g3), -EINVAL);
	LOCAL_ERR(d, vrdma_gid_add(d, 3, zero), -EINVAL);
	RT_EQ(vrdma_gid_add(d, 15, g3), 0);
	RT_EQ(vrdma_gid_del(d, 2), 0);
	LOCAL_ERR(d, vrdma_gid_del(d, 2), -ENODATA);
	LOCAL_ERR(d, vrdma_gid_query(d, 2, gid), -ENODATA);
	LOCAL_ERR(d, vrdma_gid_del(d, 0), -EPERM);
	LOCAL_ERR(d, vrdma_gid_del(d, 1), -EPERM);
	LOCAL_ERR(d, vrdma_gid_del(d, 16), -EINVAL);
	/* The device agrees: index 2 is free again, 15 is ours. */
	RT_EQ(vrdma_gid_add(d, 2, g3), 0);
	RT_EQ(vrdma_gid_del(d, 2), 0);
	RT_EQ(vrdma_gid_del(d, 15), 0);
}

static void t_pd(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_mr_info mr;
	uint32_t p1 = 0, p2 = 0;

	RT_REQUIRE(d, "no device");
	RT_EQ(vrdma_pd_alloc(d, &p1), 0);
	RT_EQ(vrdma_pd_alloc(d, &p2), 0);
	RT_CHECK(p1 && p2 && p1 != p2, "pdns %u %u", p1, p2);
	LOCAL_ERR(d, vrdma_pd_alloc(d, NULL), -EINVAL);
	LOCAL_ERR(d, vrdma_pd_free(d, 0), -EINVAL);
	LOCAL_ERR(d, vrdma_pd_free(d, 99999), -EINVAL);
	RT_EQ(vrdma_mr_get_dma(d, p1, 0, &mr), 0);
	LOCAL_ERR(d, vrdma_pd_free(d, p1), -EBUSY);
	RT_EQ(vrdma_mr_dereg(d, mr.mrn), 0);
	RT_EQ(vrdma_pd_free(d, p1), 0);
	LOCAL_ERR(d, vrdma_pd_free(d, p1), -EINVAL);
	RT_EQ(vrdma_pd_free(d, p2), 0);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + seed) ^ (i >> 8));
}

static bool same(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i * 131 + seed) ^ (i >> 8)))
			return false;
	return true;
}

/* Whether some page of [p, p + n) is mapped from a memfd libvrdma made
 * for registered memory ("vrdma-mr"), i.e. still shared with the device. */
static bool shared_now(const void *p, size_t n)
{
	uintptr_t s = (uintptr_t)p, e = s + n;
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long ms, me;

		if (sscanf(line, "%lx-%lx", &ms, &me) == 2 && ms < e && me > s &&
		    strstr(line, "vrdma-mr"))
			found = true;
	}
	fclose(f);
	return found;
}

/* Register [p, p + n) and check contents survive registration and
 * deregistration, and that the pages are shared exactly while registered. */
static void reg_roundtrip(struct vrdma_dev *d, uint32_t pdn, void *p, size_t n,
			  const char *what)
{
	const uint32_t acc = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
			     VIRTIO_IB_ACCESS_REMOTE_READ;
	struct vrdma_mr_info mr;
	int rc;

	fill(p, n, 7);
	rc = vrdma_mr_reg(d, pdn, p, n, (uintptr_t)p, acc, &mr);
	RT_CHECK(rc == 0, "%s: reg %d", what, rc);
	if (rc)
		return;
	RT_CHECK(mr.mrn && mr.lkey && mr.rkey, "%s: mrn %u lkey %#x rkey %#x", what, mr.mrn,
		 mr.lkey, mr.rkey);
	RT_CHECK(same(p, n, 7), "%s: contents changed by registration", what);
	RT_CHECK(shared_now(p, n), "%s: not shared while registered", what);
	fill(p, n, 9);
	RT_EQ(vrdma_mr_dereg(d, mr.mrn), 0);
	RT_CHECK(same(p, n, 9), "%s: contents changed by deregistration", what);
	RT_CHECK(!shared_now(p, n), "%s: still shared after deregistration", what);
}

/* A page-aligned buffer on the stack (the pages hold nothing else). */
static void reg_stack(struct vrdma_dev *d, uint32_t pdn)
{
	uint8_t buf[3 * PG] __attribute__((aligned(PG)));

	reg_roundtrip(d, pdn, buf, sizeof(buf), "stack");
}

static void t_mr(struct rt_ctx *c)
{
	const uint32_t lw = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_mr_info m1, m2, m3;
	char tmpl[] = "/tmp/vrdma-rdmatest.XXXXXX";
	uint8_t *heap, *anon, *filep, *none;
	uint32_t pdn = 0, pd2 = 0;
	int fd;

	RT_REQUIRE(d, "no device");
	RT_REQUIRE(vrdma_pd_alloc(d, &pdn) == 0 && vrdma_pd_alloc(d, &pd2) == 0, "pd");

	/* heap, at an odd offset */
	heap = malloc(5 * PG);
	RT_REQUIRE(heap, "malloc");
	reg_roundtrip(d, pdn, heap + 100, 3 * PG + 17, "heap");
	reg_stack(d, pdn);
	anon = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	RT_REQUIRE(anon != MAP_FAILED, "mmap");
	reg_roundtrip(d, pdn, anon + PG, 6 * PG, "anonymous mmap");
	fd = mkstemp(tmpl);
	RT_REQUIRE(fd >= 0, "mkstemp");
	unlink(tmpl);
	RT_REQUIRE(ftruncate(fd, 4 * PG) == 0, "ftruncate");
	filep = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	RT_REQUIRE(filep != MAP_FAILED, "mmap file");
	reg_roundtrip(d, pdn, filep, 4 * PG, "file-private mmap");
	munmap(filep, 4 * PG);
	filep = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	RT_REQUIRE(filep != MAP_FAILED, "mmap file shared");
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, filep, PG, (uintptr_t)filep, lw, &m1), -EOPNOTSUPP);
	munmap(filep, 4 * PG);
	close(fd);

	/* Overlapping registrations; the survivor still works after the
	 * other goes (its pages stay shared), then everything is private. */
	fill(anon, 8 * PG, 3);
	RT_EQ(vrdma_mr_reg(d, pdn, anon, 3 * PG, (uintptr_t)anon, lw, &m1), 0);
	RT_EQ(vrdma_mr_reg(d, pdn, anon + 100, 2 * PG, (uintptr_t)anon + 100, lw, &m2), 0);
	RT_EQ(vrdma_mr_reg(d, pd2, anon, 8 * PG, (uintptr_t)anon, lw, &m3), 0);
	RT_CHECK(m1.mrn != m2.mrn && m2.mrn != m3.mrn, "mrns");
	RT_EQ(m1.rkey, 0); /* no remote access: no rkey */
	RT_EQ(vrdma_mr_dereg(d, m1.mrn), 0);
	RT_EQ(vrdma_mr_dereg(d, m3.mrn), 0);
	RT_CHECK(same(anon, 8 * PG, 3), "contents changed");
	RT_CHECK(shared_now(anon + 100, 2 * PG), "pages of a live MR unshared");
	RT_CHECK(!shared_now(anon + 3 * PG, 5 * PG), "pages of no MR still shared");
	RT_EQ(vrdma_mr_dereg(d, m2.mrn), 0);
	RT_CHECK(same(anon, 8 * PG, 3), "contents changed");
	RT_CHECK(!shared_now(anon, 8 * PG), "still shared after the last MR");

	/* A zero-based style iova (same offset in the page). */
	RT_EQ(vrdma_mr_reg(d, pdn, heap + 100, PG, 0x10000 + ((uintptr_t)(heap + 100) & (PG - 1)),
			   lw, &m1), 0);
	RT_EQ(vrdma_mr_dereg(d, m1.mrn), 0);

	/* Errors caught by the library: nothing sent. */
	LOCAL_ERR(d, vrdma_mr_reg(d, 0, heap, PG, (uintptr_t)heap, lw, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, 777, heap, PG, (uintptr_t)heap, lw, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, 0, (uintptr_t)heap, lw, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, (uintptr_t)heap + 1, lw, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, UINT64_MAX - 100, lw, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, (uintptr_t)heap,
				  VIRTIO_IB_ACCESS_REMOTE_WRITE, &m1), -EINVAL);
	{
		struct vrdma_device_attr da;

		/* REMOTE_ATOMIC needs the extension's atomic_cap; without
		 * it the library refuses it (with it: tools "ext" group). */
		RT_EQ(vrdma_query_device(d, &da), 0);
		if (da.atomic_cap == VIRTIO_IB_ATOMIC_NONE)
			LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, (uintptr_t)heap,
						  lw | VIRTIO_IB_ACCESS_REMOTE_ATOMIC, &m1),
				  -EOPNOTSUPP);
		LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, (uintptr_t)heap,
					  VIRTIO_IB_ACCESS_REMOTE_ATOMIC, &m1),
			  da.atomic_cap == VIRTIO_IB_ATOMIC_NONE ? -EOPNOTSUPP : -EINVAL);
	}
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, PG, (uintptr_t)heap, 1u << 7, &m1), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, heap, (1ull << 32) + 1, (uintptr_t)heap, lw, &m1),
		  -EINVAL);
	LOCAL_ERR(d, vrdma_mr_dereg(d, 0), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_dereg(d, 65535), -EINVAL);
	/* Memory the application does not have. */
	none = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	RT_REQUIRE(none != MAP_FAILED, "mmap");
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, none, PG, (uintptr_t)none, lw, &m1), -EACCES);
	munmap(none, 2 * PG);
	LOCAL_ERR(d, vrdma_mr_reg(d, pdn, none, PG, (uintptr_t)none, lw, &m1), -EFAULT);

	/* DMA MR: local only. */
	RT_EQ(vrdma_mr_get_dma(d, pdn, lw, &m1), 0);
	RT_EQ(m1.rkey, 0);
	RT_CHECK(m1.lkey != 0, "lkey");
	LOCAL_ERR(d, vrdma_mr_get_dma(d, pdn, VIRTIO_IB_ACCESS_REMOTE_READ, &m2), -EINVAL);
	LOCAL_ERR(d, vrdma_mr_get_dma(d, 9999, lw, &m2), -EINVAL);
	RT_EQ(vrdma_mr_dereg(d, m1.mrn), 0);
	LOCAL_ERR(d, vrdma_mr_dereg(d, m1.mrn), -EINVAL);

	RT_EQ(vrdma_pd_free(d, pdn), 0);
	RT_EQ(vrdma_pd_free(d, pd2), 0);
	munmap(anon, 8 * PG);
	free(heap);
}

static void t_cq(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_device_attr a;
	struct vrdma_cq *q1 = NULL, *q2 = NULL, *q3 = NULL;
	struct vrdma_wc wc[4];

	RT_REQUIRE(d && vrdma_query_device(d, &a) == 0, "no device");
	RT_EQ(vrdma_cq_create(d, 1, &q1), 0);
	RT_EQ(vrdma_cq_create(d, 100, &q2), 0);
	RT_EQ(vrdma_cq_create(d, a.max_cqe, &q3), 0);
	RT_REQUIRE(q1 && q2 && q3, "create");
	RT_EQ(vrdma_cq_size(q1), 2);
	RT_EQ(vrdma_cq_size(q2), 128);
	RT_EQ(vrdma_cq_size(q3), a.max_cqe);
	RT_CHECK(vrdma_cq_num(q1) != vrdma_cq_num(q2), "cqns");
	RT_CHECK(vrdma_cq_num(q3) < a.max_rdma_cqs, "cqn %u", vrdma_cq_num(q3));
	RT_CHECK(vrdma_cq_event_fd(q1) >= 0, "no event fd");
	LOCAL_ERR(d, vrdma_cq_create(d, 0, &q1), -EINVAL);
	LOCAL_ERR(d, vrdma_cq_create(d, a.max_cqe + 1, &q1), -EINVAL);
	LOCAL_ERR(d, vrdma_cq_poll(q1, wc, 4), 0);
	RT_EQ(vrdma_cq_arm(q1, VIRTIO_IB_NOTIFY_NEXT_COMPLETION), 0);
	RT_EQ(vrdma_cq_arm(q1, VIRTIO_IB_NOTIFY_SOLICITED), 0);
	RT_EQ(vrdma_cq_arm(q1, VIRTIO_IB_NOTIFY_SOLICITED | VIRTIO_IB_NOTIFY_NEXT_COMPLETION), 0);
	LOCAL_ERR(d, vrdma_cq_arm(q1, 0), -EINVAL);
	LOCAL_ERR(d, vrdma_cq_arm(q1, 4), -EINVAL);
	RT_EQ(vrdma_cq_consume_event(q1), 0);
	RT_EQ(vrdma_cq_wait(q2, 0), 0);
	RT_EQ(vrdma_cq_destroy(q1), 0);
	RT_EQ(vrdma_cq_destroy(q2), 0);
	RT_EQ(vrdma_cq_destroy(q3), 0);
}

static void t_qp(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_qp *rc = NULL, *uc = NULL, *ud = NULL, *gsi = NULL, *x = NULL;
	struct vrdma_qp_init in;
	struct vrdma_qp_attr qa;
	struct vrdma_qp_cap cap;
	struct vrdma_cq *cq = NULL, *cq2 = NULL;
	struct vrdma_send_wr swr;
	struct vrdma_recv_wr rwr;
	uint32_t pdn = 0;

	RT_REQUIRE(d, "no device");
	RT_REQUIRE(vrdma_pd_alloc(d, &pdn) == 0, "pd");
	RT_REQUIRE(vrdma_cq_create(d, 64, &cq) == 0 && vrdma_cq_create(d, 64, &cq2) == 0, "cq");
	memset(&in, 0, sizeof(in));
	in.pdn = pdn;
	in.send_cq = cq;
	in.recv_cq = cq2;
	in.cap.max_send_wr = 10;
	in.cap.max_recv_wr = 100;
	in.cap.max_send_sge = 3;
	in.cap.max_recv_sge = 2;
	in.cap.max_inline_data = 64;
	in.qp_type = VIRTIO_IB_QPT_RC;
	RT_EQ(vrdma_qp_create(d, &in, &rc), 0);
	RT_REQUIRE(rc, "rc");
	vrdma_qp_get_cap(rc, &cap);
	RT_EQ(cap.max_send_wr, 16);
	RT_EQ(cap.max_recv_wr, 128);
	RT_EQ(cap.max_send_sge, 3);
	RT_EQ(cap.max_recv_sge, 2);
	RT_EQ(cap.max_inline_data, 64);
	RT_CHECK((vrdma_qp_num(rc) & 0x3fff) >= 2, "qpn %#x", vrdma_qp_num(rc));
	RT_EQ(vrdma_qp_query(rc, 0, &qa), 0);
	RT_EQ(qa.qp_state, VIRTIO_IB_QPS_RESET);
	RT_EQ(qa.cap.max_send_wr, 16);
	RT_EQ(qa.cap.max_recv_wr, 128);
	RT_EQ(qa.cap.max_inline_data, 64);
	in.qp_type = VIRTIO_IB_QPT_UC;
	RT_EQ(vrdma_qp_create(d, &in, &uc), 0);
	in.qp_type = VIRTIO_IB_QPT_UD;
	in.cap.max_send_wr = 0;
	RT_EQ(vrdma_qp_create(d, &in, &ud), 0);
	if (ud) {
		vrdma_qp_get_cap(ud, &cap);
		RT_EQ(cap.max_send_wr, 0);
	}
	in.cap.max_send_wr = 1;
	in.qp_type = VIRTIO_IB_QPT_GSI;
	RT_EQ(vrdma_qp_create(d, &in, &gsi), 0);
	if (gsi)
		RT_EQ(vrdma_qp_num(gsi), 1);
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -ENOMEM); /* one GSI */

	/* Errors caught by the library. */
	in.qp_type = VIRTIO_IB_QPT_RC;
	in.pdn = 4444;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.pdn = pdn;
	in.qp_type = VIRTIO_IB_QPT_SMI;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.qp_type = 9;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.qp_type = VIRTIO_IB_QPT_RC;
	in.send_cq = NULL;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.send_cq = cq;
	in.cap.max_send_wr = 16385;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.cap.max_send_wr = 1;
	in.cap.max_recv_sge = 33;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.cap.max_recv_sge = 1;
	in.cap.max_inline_data = 513;
	LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
	in.cap.max_inline_data = 0;
	if (c->sock[1]) {
		struct vrdma_cq *bq = NULL;

		if (!c->dev[1])
			c->dev[1] = rt_open(c->sock[1]);
		if (c->dev[1] && vrdma_cq_create(c->dev[1], 4, &bq) == 0) {
			in.recv_cq = bq;
			LOCAL_ERR(d, vrdma_qp_create(d, &in, &x), -EINVAL);
			in.recv_cq = cq2;
			RT_EQ(vrdma_cq_destroy(bq), 0);
		}
	}

	/* A CQ or PD in use cannot go. */
	LOCAL_ERR(d, vrdma_cq_destroy(cq), -EBUSY);
	LOCAL_ERR(d, vrdma_pd_free(d, pdn), -EBUSY);

	/* Posting in RESET. */
	memset(&swr, 0, sizeof(swr));
	swr.opcode = VIRTIO_IB_WR_SEND;
	memset(&rwr, 0, sizeof(rwr));
	RT_EQ(vrdma_post_send(rc, &swr, 1), -EINVAL);
	RT_EQ(vrdma_post_recv(rc, &rwr, 1), -EINVAL);
	RT_EQ(vrdma_post_send(rc, &swr, 0), 0);

	/* QUERY_QP mask validation. */
	LOCAL_ERR(d, vrdma_qp_query(rc, 1u << 17, &qa), -EINVAL);

	RT_EQ(vrdma_qp_destroy(rc), 0);
	RT_EQ(vrdma_qp_destroy(uc), 0);
	RT_EQ(vrdma_qp_destroy(ud), 0);
	RT_EQ(vrdma_qp_destroy(gsi), 0);
	/* GSI can come back. */
	in.qp_type = VIRTIO_IB_QPT_GSI;
	RT_EQ(vrdma_qp_create(d, &in, &gsi), 0);
	RT_EQ(vrdma_qp_destroy(gsi), 0);
	RT_EQ(vrdma_cq_destroy(cq), 0);
	RT_EQ(vrdma_cq_destroy(cq2), 0);
	RT_EQ(vrdma_pd_free(d, pdn), 0);
}

static void t_ah(struct rt_ctx *c)
{
	struct vrdma_dev *d = dev_a(c);
	struct vrdma_ah_attr av;
	uint32_t pdn = 0, pd2 = 0, ah = 0, ah2 = 0, mc = 0;
	uint64_t before;

	RT_REQUIRE(d, "no device");
	RT_REQUIRE(vrdma_pd_alloc(d, &pdn) == 0 && vrdma_pd_alloc(d, &pd2) == 0, "pd");
	memset(&av, 0, sizeof(av));
	av.grh.dgid[0] = 0xfe;
	av.grh.dgid[1] = 0x80;
	av.grh.dgid[15] = 1;
	av.grh.hop_limit = 64;
	av.grh.flow_label = 0xfffff;
	RT_EQ(vrdma_ah_create(d, pdn, &av, &ah), 0);
	RT_CHECK(ah != 0, "handle 0");
	/* a multicast destination is fine for an AH */
	av.grh.dgid[0] = 0xff;
	av.grh.dgid[1] = 0x02;
	RT_EQ(vrdma_ah_create(d, pdn, &av, &mc), 0);
	av.grh.dgid[0] = 0xfe;
	av.grh.dgid[1] = 0x80;
	LOCAL_ERR(d, vrdma_pd_free(d, pdn), -EBUSY);
	LOCAL_ERR(d, vrdma_ah_create(d, 5555, &av, &ah2), -EINVAL);
	av.grh.sgid_index = 16;
	LOCAL_ERR(d, vrdma_ah_create(d, pdn, &av, &ah2), -EINVAL);
	av.grh.sgid_index = 5;
	LOCAL_ERR(d, vrdma_ah_create(d, pdn, &av, &ah2), -EINVAL);
	av.grh.sgid_index = 0;
	av.grh.flow_label = 0x100000;
	LOCAL_ERR(d, vrdma_ah_create(d, pdn, &av, &ah2), -EINVAL);
	av.grh.flow_label = 0;
	memset(av.grh.dgid, 0, 16);
	LOCAL_ERR(d, vrdma_ah_create(d, pdn, &av, &ah2), -EINVAL);
	/* Refused by the device: an IPv4 destination from the IPv6 GID 0. */
	av.grh.dgid[10] = 0xff;
	av.grh.dgid[11] = 0xff;
	av.grh.dgid[12] = 10;
	av.grh.dgid[15] = 9;
	before = rt_cmds(d);
	RT_EQ(vrdma_ah_create(d, pdn, &av, &ah2), -EINVAL);
	RT_EQ(rt_cmds(d), before + 1);
	if (c->has_ip) {
		av.grh.sgid_index = 1;
		RT_EQ(vrdma_ah_create(d, pdn, &av, &ah2), 0);
		RT_EQ(vrdma_ah_destroy(d, pdn, ah2), 0);
	}
	LOCAL_ERR(d, vrdma_ah_destroy(d, pd2, ah), -EINVAL);
	LOCAL_ERR(d, vrdma_ah_destroy(d, pdn, 0), -EINVAL);
	LOCAL_ERR(d, vrdma_ah_destroy(d, pdn, 7777), -EINVAL);
	RT_EQ(vrdma_ah_destroy(d, pdn, ah), 0);
	LOCAL_ERR(d, vrdma_ah_destroy(d, pdn, ah), -EINVAL);
	RT_EQ(vrdma_ah_destroy(d, pdn, mc), 0);
	RT_EQ(vrdma_pd_free(d, pdn), 0);
	RT_EQ(vrdma_pd_free(d, pd2), 0);
}

/* Close with objects alive: the library frees them, a new session gets a
 * clean device. */
static void t_close_alive(struct rt_ctx *c)
{
	struct vrdma_dev *d;
	struct vrdma_cq *cq = NULL;
	struct vrdma_qp *qp = NULL;
	struct vrdma_qp_init in;
	struct vrdma_mr_info mr;
	struct vrdma_rdma_stats st;
	uint32_t pdn = 0;
	uint8_t *buf = malloc(2 * PG);

	vrdma_dev_close(c->dev[0]);
	c->dev[0] = NULL;
	d = dev_a(c);
	RT_REQUIRE(d && buf, "no device");
	fill(buf, 2 * PG, 5);
	RT_EQ(vrdma_pd_alloc(d, &pdn), 0);
	RT_EQ(vrdma_mr_reg(d, pdn, buf, 2 * PG, (uintptr_t)buf, VIRTIO_IB_ACCESS_LOCAL_WRITE,
			   &mr), 0);
	RT_EQ(vrdma_cq_create(d, 8, &cq), 0);
	memset(&in, 0, sizeof(in));
	in.pdn = pdn;
	in.qp_type = VIRTIO_IB_QPT_RC;
	in.send_cq = in.recv_cq = cq;
	in.cap.max_send_wr = in.cap.max_recv_wr = 4;
	in.cap.max_send_sge = in.cap.max_recv_sge = 1;
	RT_EQ(vrdma_qp_create(d, &in, &qp), 0);
	vrdma_dev_close(d);
	c->dev[0] = NULL;
	RT_CHECK(same(buf, 2 * PG, 5), "registered memory changed by close");
	free(buf);
	d = dev_a(c);
	RT_REQUIRE(d, "reopen");
	RT_EQ(vrdma_pd_alloc(d, &pdn), 0);
	RT_EQ(vrdma_rdma_get_stats(d, &st), 0);
	RT_EQ(st.pds, 1);
	RT_EQ(st.qps, 0);
	RT_EQ(vrdma_pd_free(d, pdn), 0);
}

void rt_ctrl_api(struct rt_ctx *c)
{
	RT_RUN(c, t_query);
	RT_RUN(c, t_gid);
	RT_RUN(c, t_pd);
	RT_RUN(c, t_mr);
	RT_RUN(c, t_cq);
	RT_RUN(c, t_qp);
	RT_RUN(c, t_ah);
	RT_RUN(c, t_close_alive);
}
