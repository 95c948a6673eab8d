// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: tenants against RDMA traffic and the budgets of a device
 * (docs/spec.md "Tenant isolation").
 *   tenant_rc_inject     RC RDMA WRITEs forged through the Ethernet queue
 *                        towards a QP of the device at --victim-socket, with
 *                        the QP's peer GID as source (port security drops
 *                        them) and with our own GID (the responder drops
 *                        them: not the QP's peer); the victim's memory is
 *                        untouched and its traffic verified;
 *   tenant_ctx_mem       contexts of one device opened until the device's
 *                        mem= total refuses one; the first keeps working and
 *                        a context fits again once the others are closed;
 *   tenant_ctx_qps       one context takes the device's state-mem= with
 *                        large QPs (the largest of which one fits); the other context is refused too (a
 *                        device total) and its traffic goes on; the budget
 *                        comes back when the QPs are destroyed;
 *   tenant_rdmadev_gid   (--model virtio-rdma) ADD_GID of the victim's IPv4
 *                        and link-local GIDs;
 *   tenant_rdmadev_qps   (--model virtio-rdma) QPs with maximal work-request
 *                        limits until state-mem= refuses one.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evil.h"
#include "port/pkt.h"
#include "rdma.h"
#include "roce/roce_opcode.h"
#include "roce/roce_pkt.h"
#include "vrdma/virtio_rdma.h"

#define INJECT_LEN 64
#define INJECT_FRAMES 64
#define CTX_MAX 40

static void gid_link_local(uint8_t gid[16], const uint8_t mac[6])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 2;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

/* Wait until the transmit ring has given every buffer back. */
static int tx_drain(struct evil_dev *d)
{
	struct vq_drv *vq = &d->r[EVIL_TXQ].vq;
	uint32_t ulen;

	for (;;) {
		while (vq_drv_get_used(vq, &ulen))
			;
		if (vq_drv_num_free(vq) == EVIL_RING_NUM)
			return 0;
		if (!evil_wait_used(d, EVIL_TXQ, d->o->timeout_ms))
			return -ETIMEDOUT;
	}
}

/* INJECT_FRAMES RC RDMA WRITE ONLY packets to the victim's QP B, PSNs from
 * psn on, from sgid, into target (its rkey). Returns frames sent or -errno. */
static int inject(struct evil_dev *d, const struct evil_rdev *v, const uint8_t sgid[16],
		  uint32_t psn, const uint8_t *target)
{
	uint8_t payload[INJECT_LEN];
	struct roce_path path;
	struct roce_hdr_fields f;
	int sent = 0;

	memset(payload, 0xee, sizeof(payload));
	memset(&path, 0, sizeof(path));
	memcpy(path.smac, d->mac, 6); /* our own MAC: the MAC check passes */
	memcpy(path.dmac, v->mac, 6);
	memcpy(path.sgid, sgid, 16);
	memcpy(path.dgid, v->gid0, 16);
	path.udp_sport = roce_udp_sport_from_qpn(v->qpn[0]);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_WRITE_ONLY;
	f.pkey = 0xffff;
	f.ackreq = true;
	f.dqpn = v->qpn[1];
	f.reth.va = evil_gpa(target);
	f.reth.rkey = v->data_rkey;
	f.reth.len = INJECT_LEN;
	for (int i = 0; i < INJECT_FRAMES; i++) {
		struct pkt *p = pkt_alloc();
		int rc;

		if (!p)
			return -ENOMEM;
		f.psn = (psn + (uint32_t)i) & 0xffffff;
		rc = roce_pkt_build_frame(p, &path, &f, payload, sizeof(payload));
		if (rc == 0) {
			/* leave room: the ring's buffers are reused round robin */
			if (EVIL_RING_NUM - vq_drv_num_free(&d->r[EVIL_TXQ].vq) > 16)
				rc = tx_drain(d);
			if (rc == 0)
				rc = evil_tx(d, p->data, p->len);
		}
		pkt_free(p);
		if (rc < 0)
			return rc;
		sent++;
	}
	return sent;
}

static bool untouched(const uint8_t *b, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

static int run_rc_inject(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_opts vo = *o;
	struct evil_rdev v;
	struct evil_dev d;
	uint8_t own[16], *target;
	int spoofed, foreign, rc;
	bool intact;

	(void)a;
	if (!o->victim_socket) {
		evil_say("setup: --victim-socket required");
		return EVIL_SETUP;
	}
	vo.socket = o->victim_socket;
	if (rdev_open(&v, &vo, 0) < 0) {
		rdev_close(&v);
		return EVIL_SETUP;
	}
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		rdev_close(&v);
		return EVIL_SETUP;
	}
	/* what a successful injection would overwrite */
	target = v.data + RDEV_RECV_OFF;
	memset(target, 0x5a, 4096);
	evil_say("victim qpn 0x%x (peer qpn 0x%x), expected psn 0x1000", v.qpn[1], v.qpn[0]);
	/* 1: the victim QP's peer GID as source (another device's address) */
	spoofed = inject(&d, &v, v.gid0, 0x1000, target);
	/* 2: our own GID as source, which port security lets through */
	gid_link_local(own, d.mac);
	foreign = inject(&d, &v, own, 0x1000, target + 1024);
	evil_say("forged_sent spoofed %d own_gid %d", spoofed, foreign);
	rc = tx_drain(&d);
	/* the victim's own traffic runs after the forged frames (one receive
	 * queue per context, in order): a verified WRITE of its peer */
	if (rc == 0)
		rc = rdev_probe(&v, 61);
	intact = untouched(target, 4096, 0x5a);
	evil_say("victim_memory %s", intact ? "untouched" : "overwritten");
	rc = evil_verdict(spoofed == INJECT_FRAMES && foreign == INJECT_FRAMES && rc == 0 &&
				  intact && rdev_probe(&v, 62) == 0,
			  "sent %d + %d, victim traffic %s, memory %s", spoofed, foreign,
			  rc ? strerror(-rc) : "ok", intact ? "intact" : "overwritten");
	evil_say("outcome alive");
	evil_dev_close(&d);
	rdev_close(&v);
	return rc;
}

static int run_ctx_mem(const struct evil_opts *o, const struct evil_attack *a)
{
	static struct evil_dev c[CTX_MAX];
	int n = 0, rc, probe, again = -1;

	(void)a;
	/* each context shares its own memory with the device */
	for (; n < CTX_MAX; n++) {
		if (evil_dev_open(&c[n], o, 0) < 0) {
			evil_dev_close(&c[n]);
			break;
		}
	}
	evil_say("contexts_mapped %d", n);
	if (n == 0) {
		evil_say("setup: not even one context");
		return EVIL_SETUP;
	}
	probe = evil_loopback(&c[0], 51);
	for (int i = 1; i < n; i++)
		evil_dev_close(&c[i]);
	/* the closed contexts' memory comes back (the daemon frees them from
	 * its loop soon after the hang-up: try again until then) */
	for (int t = 0; t < o->timeout_ms / 100 && again < 0; t++) {
		if (evil_dev_open(&c[1], o, 0) == 0)
			again = 0;
		else
			usleep(100000);
		evil_dev_close(&c[1]);
	}
	rc = evil_verdict(n < CTX_MAX && probe == 0 && again == 0 && evil_loopback(&c[0], 53) == 0,
			  "%d contexts mapped (%s), first context %s, a new one after closing %s",
			  n, n < CTX_MAX ? "then refused" : "never refused", probe ? "broken" : "ok",
			  again ? "failed" : "ok");
	evil_say("outcome alive");
	evil_dev_close(&c[0]);
	return rc;
}

/* One QP in context d with the device's largest limits, work requests
 * divided by div. Returns the ack (and *qpn) or -errno. */
static int big_qp(struct evil_rdev *d, uint32_t div, uint32_t *qpn)
{
	struct virtio_rdma_cmd_create_qp_ext c;
	struct virtio_rdma_ack_create_qp ack;
	int rc;

	memset(&c, 0, sizeof(c));
	c.pdn = htole32(d->pdn);
	c.qp_type = VIRTIO_IB_QPT_RC;
	c.send_cqn = htole32(d->cqn);
	c.recv_cqn = htole32(d->cqn);
	c.cap.max_send_wr = htole32(le32toh(d->dev.max_qp_wr) / div);
	c.cap.max_recv_wr = htole32(le32toh(d->dev.max_qp_wr) / div);
	c.cap.max_send_sge = d->dev.max_send_sge;
	c.cap.max_recv_sge = d->dev.max_recv_sge;
	c.cap.max_inline_data = htole32(VIRTIO_RDMA_INLINE_DATA_SIZE);
	rc = rdev_cmd(d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c), &ack, sizeof(ack));
	if (rc == VIRTIO_NET_OK)
		*qpn = le32toh(ack.qpn);
	return rc;
}

static void destroy_qps(struct evil_rdev *d, const uint32_t *qpns, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		le32 q = htole32(qpns[i]);

		rdev_cmd(d, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &q, sizeof(q), NULL, 0);
	}
}

static int run_ctx_qps(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev v, x;
	uint32_t qpns[64], other = 0, div;
	unsigned made = 0;
	int last = VIRTIO_NET_OK, second, after, rc;

	(void)a;
	if (rdev_open(&v, o, 0) < 0) {
		rdev_close(&v);
		return EVIL_SETUP;
	}
	if (rdev_open(&x, o, RDEV_F_NO_RECV_POST) < 0) {
		rdev_close(&x);
		rdev_close(&v);
		return EVIL_SETUP;
	}
	/* the largest QPs of which one fits (the QP table is not the limit) */
	for (div = 2; div <= 64 && !made; div *= 2)
		if (big_qp(&x, div, &qpns[0]) == VIRTIO_NET_OK)
			made = 1;
	div /= 2;
	while (made && made < sizeof(qpns) / sizeof(qpns[0])) {
		last = big_qp(&x, div, &qpns[made]);
		if (last != VIRTIO_NET_OK)
			break;
		made++;
	}
	/* the same QP in the other context, which holds little of the budget
	 * itself: refused too, the budget is the device's */
	second = big_qp(&v, div, &other);
	if (second == VIRTIO_NET_OK)
		destroy_qps(&v, &other, 1);
	evil_say("qps_created %u (limits / %u) then %d; in the other context %d", made, div, last,
		 second);
	/* the other context's QPs, created before, keep working */
	rc = rdev_probe(&v, 41);
	destroy_qps(&x, qpns, made);
	after = big_qp(&v, div, &other);
	if (after == VIRTIO_NET_OK)
		destroy_qps(&v, &other, 1);
	evil_say("after the destroys: %d", after);
	rc = evil_verdict(made > 0 && last == VIRTIO_NET_ERR && second == VIRTIO_NET_ERR &&
				  rc == 0 && after == VIRTIO_NET_OK && rdev_probe(&v, 42) == 0,
			  "%u large QPs, last answer %d, other context %d, its traffic %s, "
			  "after %d", made, last, second, rc ? strerror(-rc) : "ok", after);
	evil_say("outcome alive");
	rdev_close(&x);
	rdev_close(&v);
	return rc;
}

/* ---- the virtio-rdma device (id 42) ---- */

static bool rdmadev_works(struct evil_dev *d)
{
	uint8_t port = 1, attr[161];

	return evil_rdma_cmd_rsp(d, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1, attr,
				 sizeof(attr)) == 0;
}

static int rdmadev_open(struct evil_dev *d, const struct evil_opts *o)
{
	if (!o->rdma_dev) {
		evil_say("setup: needs --model virtio-rdma");
		return -EINVAL;
	}
	if (evil_dev_open(d, o, 0) < 0) {
		evil_dev_close(d);
		return -EIO;
	}
	return 0;
}

static int run_rdmadev_gid(const struct evil_opts *o, const struct evil_attack *a)
{
	struct virtio_rdma_dev_cmd_add_gid ag;
	struct evil_dev d;
	int r4, r6, rc;

	(void)a;
	if (!o->has_victim_mac || !o->has_victim_ip) {
		evil_say("setup: --victim-mac and --victim-ip required");
		return EVIL_SETUP;
	}
	if (rdmadev_open(&d, o) < 0)
		return EVIL_SETUP;
	memset(&ag, 0, sizeof(ag));
	ag.gid_type = htole32(VIRTIO_RDMA_DEV_GID_TYPE_ROCE_V2);
	ag.index = htole16(3);
	ag.port_num = htole32(1);
	ag.gid[10] = ag.gid[11] = 0xff;
	memcpy(ag.gid + 12, o->victim_ip, 4);
	r4 = evil_rdma_cmd(&d, VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag));
	gid_link_local(ag.gid, o->victim_mac);
	r6 = evil_rdma_cmd(&d, VIRTIO_RDMA_DEV_CMD_ADD_GID, &ag, sizeof(ag));
	evil_say("add_gid_ipv4 %d add_gid_link_local %d", r4, r6);
	rc = evil_verdict(r4 == VIRTIO_RDMA_DEV_CTRL_ERR && r6 == VIRTIO_RDMA_DEV_CTRL_ERR &&
				  rdmadev_works(&d),
			  "ADD_GID of the victim's addresses: %d %d", r4, r6);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

static int run_rdmadev_qps(const struct evil_opts *o, const struct evil_attack *a)
{
	struct virtio_rdma_dev_cmd_create_cq cc = { htole32(64) };
	struct virtio_rdma_dev_rsp_create_cq cq;
	struct virtio_rdma_dev_rsp_create_pd pd;
	struct virtio_rdma_dev_config cfg;
	struct evil_dev d;
	uint32_t qpns[64];
	unsigned made = 0;
	int last = 0, rc;

	(void)a;
	if (rdmadev_open(&d, o) < 0)
		return EVIL_SETUP;
	if (vhost_client_get_config(&d.vc, 0, &cfg, 128) < 0 ||
	    evil_rdma_cmd_rsp(&d, VIRTIO_RDMA_DEV_CMD_CREATE_PD, NULL, 0, &pd, sizeof(pd)) ||
	    evil_rdma_cmd_rsp(&d, VIRTIO_RDMA_DEV_CMD_CREATE_CQ, &cc, sizeof(cc), &cq,
			      sizeof(cq))) {
		evil_say("setup: configuration, CREATE_PD or CREATE_CQ failed");
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	while (made < sizeof(qpns) / sizeof(qpns[0])) {
		struct virtio_rdma_dev_cmd_create_qp c;
		struct virtio_rdma_dev_rsp_create_qp r;

		memset(&c, 0, sizeof(c));
		c.pdn = pd.pdn;
		c.qp_type = 2; /* IB_QPT_RC */
		c.max_send_wr = cfg.max_qp_wr;
		c.max_recv_wr = cfg.max_qp_wr;
		c.max_send_sge = cfg.max_send_sge;
		c.max_recv_sge = cfg.max_recv_sge;
		c.send_cqn = cq.cqn;
		c.recv_cqn = cq.cqn;
		last = evil_rdma_cmd_rsp(&d, VIRTIO_RDMA_DEV_CMD_CREATE_QP, &c, sizeof(c), &r,
					 sizeof(r));
		if (last != VIRTIO_RDMA_DEV_CTRL_OK)
			break;
		qpns[made++] = le32toh(r.qpn);
	}
	evil_say("qps_created %u then %d", made, last);
	for (unsigned i = 0; i < made; i++) {
		struct virtio_rdma_dev_cmd_destroy_qp q = { htole32(qpns[i]) };

		evil_rdma_cmd(&d, VIRTIO_RDMA_DEV_CMD_DESTROY_QP, &q, sizeof(q));
	}
	rc = evil_verdict(last == VIRTIO_RDMA_DEV_CTRL_ERR && rdmadev_works(&d),
			  "%u maximal QPs, last answer %d", made, last);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

const struct evil_attack evil_tenant_rdma_attacks[] = {
	{ "tenant_rc_inject", EVIL_SURVIVE,
	  "forged RC WRITEs to another device's QP (its peer's GID, then our own)",
	  run_rc_inject, 0 },
	{ "tenant_ctx_mem", EVIL_SURVIVE, "contexts of one device until mem= refuses one",
	  run_ctx_mem, 0 },
	{ "tenant_ctx_qps", EVIL_SURVIVE,
	  "one context takes the device's state-mem= with large QPs, another is refused",
	  run_ctx_qps, 0 },
	{ "tenant_rdmadev_gid", EVIL_SURVIVE,
	  "virtio-rdma device: ADD_GID of the victim's IPv4 and link-local GIDs",
	  run_rdmadev_gid, 0 },
	{ "tenant_rdmadev_qps", EVIL_SURVIVE,
	  "virtio-rdma device: maximal QPs until state-mem= refuses one", run_rdmadev_qps, 0 },
};
const unsigned evil_tenant_rdma_nattacks =
	sizeof(evil_tenant_rdma_attacks) / sizeof(evil_tenant_rdma_attacks[0]);
