/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The queries and the smaller verbs libraries use, on two vrdma devices in
 * one process (vrdma-run --socket A --socket B -- api_query [-g GID]):
 *
 *  - ibv_query_device_ex against ibv_query_device (orig_attr identical,
 *    device_cap_flags_ex, phys_port_cnt_ex, timestamp clock; an unknown
 *    input comp_mask refused); ibv_query_rt_values_ex non-decreasing
 *  - ibv_query_port (the extended one of verbs.h) against the exported
 *    compatibility entry point; RoCE: Ethernet link layer, IP-based GIDs
 *  - ibv_query_gid_ex for every index against ibv_query_gid (RoCE v2 type,
 *    ENODATA for empty entries, EINVAL beyond the table),
 *    ibv_query_gid_table (the non-empty entries, EINVAL when too small),
 *    ibv_query_gid_type (rdma-core's private one, used by ibv_devinfo)
 *  - ibv_get_device_index (position in the list), ibv_query_ece /
 *    ibv_set_ece EOPNOTSUPP, ibv_query_qp_data_in_order 0,
 *    ibv_is_fork_initialized IBV_FORK_UNNEEDED, ibv_import_* NULL with
 *    EOPNOTSUPP, ibv_reg_dmabuf_mr EOPNOTSUPP, ibv_advise_mr prefetch 0
 *  - ibv_alloc_td / ibv_alloc_parent_domain: a QP, an extended CQ and MRs
 *    made on the parent domain, an RDMA WRITE and READ to MRs registered
 *    with ibv_reg_mr_iova / ibv_reg_mr_iova2 at an I/O address unrelated
 *    to the buffer (bytes land at buffer + offset), then the parent domain
 *    and thread domain freed (EBUSY for the TD while the domain uses it)
 */
#include "api_common.h"

/* rdma-core's private GID type query (IBVERBS_PRIVATE_34). */
enum api_gid_type_sysfs { API_GID_SYSFS_ROCE_V1, API_GID_SYSFS_ROCE_V2 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum api_gid_type_sysfs *type);

#define BUF 8192

static void device_checks(struct api_end *a)
{
	struct ibv_device_attr d;
	struct ibv_device_attr_ex dx;
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };
	struct ibv_values_ex v1 = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK }, v2 = v1;
	int r;

	memset(&d, 0, sizeof(d));
	memset(&dx, 0xa5, sizeof(dx));
	if (ibv_query_device(a->c.ctx, &d))
		ext_die("ibv_query_device");
	r = ibv_query_device_ex(a->c.ctx, NULL, &dx);
	API_CHECK(!r && !memcmp(&d, &dx.orig_attr, sizeof(d)),
		  "ibv_query_device_ex: orig_attr identical to ibv_query_device");
	API_CHECK((uint32_t)dx.device_cap_flags_ex == (uint32_t)d.device_cap_flags &&
			  (dx.device_cap_flags_ex >> 32) == 0 && dx.phys_port_cnt_ex == d.phys_port_cnt &&
			  dx.phys_port_cnt_ex == 1 && dx.comp_mask == 0,
		  "device_cap_flags_ex 0x%" PRIx64 " = device_cap_flags, phys_port_cnt_ex %u",
		  dx.device_cap_flags_ex, dx.phys_port_cnt_ex);
	API_CHECK(dx.hca_core_clock == 1000000 && dx.completion_timestamp_mask == UINT64_MAX,
		  "timestamps: hca_core_clock %" PRIu64 " kHz, mask 0x%" PRIx64, dx.hca_core_clock,
		  dx.completion_timestamp_mask);
	API_CHECK(!dx.odp_caps.general_caps && !dx.tso_caps.max_tso && !dx.rss_caps.supported_qpts &&
			  !dx.max_wq_type_rq && !dx.packet_pacing_caps.qp_rate_limit_max &&
			  !dx.raw_packet_caps && !dx.tm_caps.max_num_tags && !dx.cq_mod_caps.max_cq_count &&
			  !dx.max_dm_size && !dx.pci_atomic_caps.fetch_add && !dx.xrc_odp_caps,
		  "no ODP, TSO, RSS, WQs, pacing, raw packet, tag matching, CQ moderation, device "
		  "memory, PCI atomics (all 0)");
	API_CHECK(d.vendor_id == 0x1af4 && d.max_qp > 0 && d.max_cqe > 0 && d.max_mr_size > 0 &&
			  d.atomic_cap != IBV_ATOMIC_NONE && d.max_srq > 0 && d.max_mw > 0,
		  "device: vendor 0x%x, %d QPs, %d CQEs, atomics %d, %d SRQs, %d windows", d.vendor_id,
		  d.max_qp, d.max_cqe, d.atomic_cap, d.max_srq, d.max_mw);
	r = ibv_query_device_ex(a->c.ctx, &in, &dx);
	API_CHECK(r == EINVAL, "ibv_query_device_ex with an unknown input comp_mask: EINVAL (%d)", r);

	r = ibv_query_rt_values_ex(a->c.ctx, &v1);
	r |= ibv_query_rt_values_ex(a->c.ctx, &v2);
	API_CHECK(!r && v1.comp_mask == IBV_VALUES_MASK_RAW_CLOCK &&
			  v2.raw_clock.tv_sec * 1000000000ll + v2.raw_clock.tv_nsec >=
				  v1.raw_clock.tv_sec * 1000000000ll + v1.raw_clock.tv_nsec,
		  "ibv_query_rt_values_ex: raw clock reported and non-decreasing");
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr);

static void port_gid_checks(struct api_end *a)
{
	struct ibv_port_attr p, pc;
	struct ibv_gid_entry e, tbl[64];
	union ibv_gid g;
	ssize_t n;
	int i, nonempty = 0, bad = 0, r;

	memset(&p, 0, sizeof(p));
	memset(&pc, 0, sizeof(pc));
	/* the extended query of verbs.h (verbs_context query_port) */
	if (___ibv_query_port(a->c.ctx, 1, &p))
		ext_die("ibv_query_port (extended)");
	if (ibv_query_port(a->c.ctx, 1, (struct _compat_ibv_port_attr *)&pc))
		ext_die("ibv_query_port (exported)");
	API_CHECK(!memcmp(&p, &pc, offsetof(struct ibv_port_attr, port_cap_flags2)) &&
			  p.port_cap_flags2 == 0,
		  "ibv_query_port: the extended and the compatibility query agree; "
		  "port_cap_flags2 0");
	API_CHECK(p.link_layer == IBV_LINK_LAYER_ETHERNET &&
			  (p.port_cap_flags & IBV_PORT_IP_BASED_GIDS) && p.gid_tbl_len > 1 &&
			  p.state == IBV_PORT_ACTIVE && p.pkey_tbl_len >= 1,
		  "port: Ethernet, IP-based GIDs, %d GIDs, active, MTU %d", p.gid_tbl_len,
		  p.active_mtu);
	r = ___ibv_query_port(a->c.ctx, 2, &p);
	API_CHECK(r == EINVAL, "port 2 does not exist: EINVAL (%d)", r);
	if (___ibv_query_port(a->c.ctx, 1, &p))
		ext_die("ibv_query_port");

	for (i = 0; i < p.gid_tbl_len; i++) {
		enum api_gid_type_sysfs t;

		if (ibv_query_gid(a->c.ctx, 1, i, &g))
			ext_die("ibv_query_gid %d", i);
		r = ibv_query_gid_ex(a->c.ctx, 1, (uint32_t)i, &e, 0);
		if (r == ENODATA) {
			static const union ibv_gid zero;

			if (memcmp(&g, &zero, sizeof(g)))
				bad++;
			continue;
		}
		if (r || memcmp(&e.gid, &g, sizeof(g)) || e.gid_index != (uint32_t)i ||
		    e.port_num != 1 || e.gid_type != IBV_GID_TYPE_ROCE_V2 || e.ndev_ifindex != 0)
			bad++;
		if (ibv_query_gid_type(a->c.ctx, 1, (unsigned int)i, &t) || t != API_GID_SYSFS_ROCE_V2)
			bad++;
		if (nonempty < 64)
			tbl[nonempty] = e;
		nonempty++;
	}
	API_CHECK(!bad && nonempty >= 2,
		  "ibv_query_gid_ex = ibv_query_gid for all %d indexes (%d in use, RoCE v2, "
		  "ibv_query_gid_type agrees)", p.gid_tbl_len, nonempty);
	API_CHECK(!memcmp(&tbl[a->c.gid_index].gid, &a->c.gid, sizeof(a->c.gid)),
		  "GID index %d is the one ibv_query_gid gave at open", a->c.gid_index);
	r = ibv_query_gid_ex(a->c.ctx, 1, (uint32_t)p.gid_tbl_len, &e, 0);
	API_CHECK(r == EINVAL, "ibv_query_gid_ex beyond the table: EINVAL (%d)", r);
	{
		struct ibv_gid_entry all[64];

		n = ibv_query_gid_table(a->c.ctx, all, 64, 0);
		bad = n != nonempty;
		for (i = 0; !bad && i < n && i < 64; i++)
			bad = memcmp(&all[i], &tbl[i], sizeof(all[i])) != 0;
		API_CHECK(!bad, "ibv_query_gid_table: %zd entries, each equal to ibv_query_gid_ex", n);
		n = ibv_query_gid_table(a->c.ctx, all, 1, 0);
		API_CHECK(n == -EINVAL, "ibv_query_gid_table with room for 1: -EINVAL (%zd)", n);
	}
}

static void misc_checks(struct api_end *a)
{
	struct ibv_device **list;
	struct ibv_ece ece;
	int n, i, bad = 0, r;
	void *buf = calloc(1, 4096);
	struct ibv_mr *mr;
	struct ibv_sge sge;

	list = ibv_get_device_list(&n);
	for (i = 0; i < n; i++)
		if (ibv_get_device_index(list[i]) != i)
			bad++;
	API_CHECK(!bad && n >= 2, "ibv_get_device_index: the position in the list for %d devices", n);
	ibv_free_device_list(list);

	memset(&ece, 0, sizeof(ece));
	r = ibv_query_ece(a->qp, &ece);
	API_CHECK(r == EOPNOTSUPP, "ibv_query_ece: EOPNOTSUPP (%d)", r);
	ece.vendor_id = 0x1af4;
	r = ibv_set_ece(a->qp, &ece);
	API_CHECK(r == EOPNOTSUPP, "ibv_set_ece: EOPNOTSUPP (%d)", r);
	r = ibv_query_qp_data_in_order(a->qp, IBV_WR_RDMA_WRITE, 0);
	API_CHECK(r == 0, "ibv_query_qp_data_in_order: 0, no in-order guarantee given (%d)", r);
	API_CHECK(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED,
		  "ibv_is_fork_initialized: IBV_FORK_UNNEEDED");

	errno = 0;
	API_CHECK(!ibv_import_pd(a->c.ctx, 1) && errno == EOPNOTSUPP, "ibv_import_pd: EOPNOTSUPP");
	errno = 0;
	API_CHECK(!ibv_import_mr(a->c.pd, 1) && errno == EOPNOTSUPP, "ibv_import_mr: EOPNOTSUPP");
	errno = 0;
	API_CHECK(!ibv_import_dm(a->c.ctx, 1) && errno == EOPNOTSUPP, "ibv_import_dm: EOPNOTSUPP");
	errno = 0;
	API_CHECK(!ibv_import_device(0) && errno == EOPNOTSUPP, "ibv_import_device: EOPNOTSUPP");
	errno = 0;
	API_CHECK(!ibv_reg_dmabuf_mr(a->c.pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE) &&
			  errno == EOPNOTSUPP,
		  "ibv_reg_dmabuf_mr: EOPNOTSUPP");

	mr = ext_reg(&a->c, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey };
	r = ibv_advise_mr(a->c.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			  &sge, 1);
	API_CHECK(r == 0, "ibv_advise_mr prefetch: 0 (%d)", r);
	r = ibv_advise_mr(a->c.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 9, &sge, 1);
	API_CHECK(r == EINVAL, "ibv_advise_mr with an unknown flag: EINVAL (%d)", r);
	ibv_dereg_mr(mr);
	free(buf);
}

/* Parent domain, thread domain, MRs at an I/O address. */
static void domain_checks(struct api_end *a, struct api_end *b)
{
	struct ibv_td_init_attr tda = { .comp_mask = 0 };
	struct ibv_td *td = ibv_alloc_td(b->c.ctx, &tda);
	struct ibv_parent_domain_init_attr pa;
	struct ibv_pd *pdom, *real_pd;
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	uint8_t *la = calloc(1, BUF), *rem = aligned_alloc(4096, BUF), *rem2 = aligned_alloc(4096, BUF);
	struct ibv_mr *mla, *mrem, *mrem2;
	const uint64_t iova = 0x7700000000ull, iova2 = 0x10000;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct api_wc w;
	int r;

	if (!td)
		ext_die("ibv_alloc_td: %s", strerror(errno));
	memset(&pa, 0, sizeof(pa));
	pa.pd = b->c.pd;
	pa.td = td;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.pd_context = b;
	pdom = ibv_alloc_parent_domain(b->c.ctx, &pa);
	if (!pdom)
		ext_die("ibv_alloc_parent_domain: %s", strerror(errno));
	API_CHECK(pdom != b->c.pd && pdom->context == b->c.ctx,
		  "ibv_alloc_parent_domain: a domain of the context");
	r = ibv_dealloc_td(td);
	API_CHECK(r == EBUSY, "ibv_dealloc_td while a parent domain uses it: EBUSY (%d)", r);

	/* b's QP, CQ and MRs on the parent domain */
	real_pd = b->c.pd;
	b->c.pd = pdom;
	ca.parent_domain = pdom;
	b->cqx = ibv_create_cq_ex(b->c.ctx, &ca);
	if (!b->cqx)
		ext_die("ibv_create_cq_ex on a parent domain: %s", strerror(errno));
	b->cq = ibv_cq_ex_to_cq(b->cqx);
	api_qp(b, IBV_QPT_RC, 0);
	API_CHECK(b->qp->pd == pdom, "a QP created on the parent domain");
	memset(rem, 0, BUF);
	memset(rem2, 0, BUF);
	mrem = ibv_reg_mr_iova2(pdom, rem, BUF, iova,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	mrem2 = ibv_reg_mr_iova(pdom, rem2, BUF, iova2,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mrem || !mrem2)
		ext_die("ibv_reg_mr_iova(2) on the parent domain: %s", strerror(errno));
	API_CHECK(mrem->pd == pdom && mrem->addr == rem && mrem->length == BUF,
		  "ibv_reg_mr_iova2: MR of the parent domain at %p, iova 0x%" PRIx64, (void *)rem, iova);

	a->cq = ext_cq(&a->c, 64);
	api_qp(a, IBV_QPT_RC, 0);
	api_connect(a, b);
	mla = ext_reg(&a->c, la, BUF, IBV_ACCESS_LOCAL_WRITE);

	api_fill(la, 3000, 40);
	sge = (struct ibv_sge){ .addr = (uintptr_t)la, .length = 3000, .lkey = mla->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = iova + 777;
	wr.wr.rdma.rkey = mrem->rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post WRITE: %s", strerror(errno));
	w = api_poll(a, "WRITE to an iova");
	API_CHECK(w.status == IBV_WC_SUCCESS && !memcmp(rem + 777, la, 3000),
		  "RDMA WRITE to iova + 777 lands at buffer + 777 (ibv_reg_mr_iova2, parent domain)");
	api_fill(rem2 + 4000, 1000, 41);
	memset(la, 0, BUF);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	sge.length = 1000;
	wr.wr.rdma.remote_addr = iova2 + 4000;
	wr.wr.rdma.rkey = mrem2->rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		ext_die("post READ: %s", strerror(errno));
	w = api_poll(a, "READ from an iova");
	API_CHECK(w.status == IBV_WC_SUCCESS && !memcmp(la, rem2 + 4000, 1000),
		  "RDMA READ from iova 0x%" PRIx64 " + 4000 reads buffer + 4000 (ibv_reg_mr_iova)",
		  iova2);

	ibv_dereg_mr(mla);
	ibv_dereg_mr(mrem);
	ibv_dereg_mr(mrem2);
	ibv_destroy_qp(a->qp);
	ibv_destroy_qp(b->qp);
	a->qp = b->qp = NULL;
	ibv_destroy_cq(a->cq);
	ibv_destroy_cq(b->cq);
	a->cq = b->cq = NULL;
	b->c.pd = real_pd;
	r = ibv_dealloc_pd(pdom);
	API_CHECK(r == 0, "ibv_dealloc_pd of the parent domain: 0 (%d)", r);
	r = ibv_dealloc_td(td);
	API_CHECK(r == 0, "ibv_dealloc_td: 0 (%d)", r);
	free(la);
	free(rem);
	free(rem2);
}

int main(int argc, char **argv)
{
	struct api_end a, b;
	int gid = 1, opt;

	ext_prog = "api_query";
	while ((opt = getopt(argc, argv, "g:")) != -1) {
		if (opt == 'g')
			gid = atoi(optarg);
		else
			ext_die("usage: api_query [-g GID_INDEX]");
	}
	srand48(getpid());
	api_open(&a, 0, gid);
	api_open(&b, 1, gid);
	device_checks(&a);
	port_gid_checks(&a);
	port_gid_checks(&b);
	a.cq = ext_cq(&a.c, 16);
	api_qp(&a, IBV_QPT_RC, 0);
	misc_checks(&a);
	ibv_destroy_qp(a.qp);
	ibv_destroy_cq(a.cq);
	a.qp = NULL;
	a.cq = NULL;
	domain_checks(&a, &b);
	api_close(&a);
	api_close(&b);
	return api_exit();
}
