// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: one tenant against the others (docs/spec.md "Security
 * model"). The victim is another device of the same daemon (--victim-mac,
 * --victim-ip); the test around it checks that the victim's traffic keeps
 * flowing intact and only to the victim, and that the attack was counted.
 *   tenant_spoof_mac   a QEMU-like driver (VIRTIO_NET_F_MAC not acked) sends
 *                      with the victim's source MAC;
 *   tenant_cfg_mac     the victim's MAC written to the config space before
 *                      VERSION_1 is negotiated (after a reset), then sent;
 *   tenant_arp_poison  unsolicited ARP replies / neighbour advertisements
 *                      claiming the victim's addresses;
 *   tenant_flood_macs  thousands of source MACs (a port without port
 *                      security, like an uplink) to fill the MAC table;
 *   tenant_mem_bomb    sparse memfds of 1 TiB and 2 x 40 GiB offered as
 *                      guest memory (beyond the mem= budget; also with
 *                      --model virtio-rdma);
 *   tenant_sem_kick    a semaphore-mode eventfd with a count as a kick fd;
 *   tenant_kick_storm  thousands of kicks that bring no work (nothing
 *                      posted), each one waited for until the daemon read it;
 *   tenant_log_flood   thousands of refused frames in a burst (log lines
 *                      about this device only);
 *   tenant_rdma_gid    ADD_GID of the victim's IPv4 and link-local GIDs;
 *   tenant_rdma_qps    QPs with the largest work-request limits until the
 *                      state-mem= budget refuses one.
 * Each prints "outcome ..." and a verdict; the device itself must keep
 * working (verified loopback or RDMA traffic).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "evil.h"
#include "rdma.h"
#include "vrdma/virtio_rdma.h"

#define ETH_P_ARP 0x0806
#define ETH_P_IPV6 0x86dd

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* Wait until at most max frames are in flight on the transmit ring (its
 * buffers are reused round robin: never overwrite one the device has not
 * consumed). Returns 0 or -ETIMEDOUT. */
static int tx_settle(struct evil_dev *d, unsigned max)
{
	struct vq_drv *vq = &d->r[EVIL_TXQ].vq;
	uint32_t ulen;

	for (;;) {
		while (vq_drv_get_used(vq, &ulen))
			;
		if ((unsigned)(EVIL_RING_NUM - vq_drv_num_free(vq)) <= max)
			return 0;
		if (!evil_wait_used(d, EVIL_TXQ, d->o->timeout_ms))
			return -ETIMEDOUT;
	}
}

/* Transmit, waiting for a free buffer. */
static int tx_wait(struct evil_dev *d, const void *f, size_t len)
{
	int rc = tx_settle(d, 16);

	return rc ? rc : evil_tx(d, f, len);
}

static void eth(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
}

static bool need_victim(const struct evil_opts *o, bool ip)
{
	if (o->has_victim_mac && (!ip || o->has_victim_ip))
		return true;
	evil_say("setup: --victim-mac%s required", ip ? " and --victim-ip" : "");
	return false;
}

/* After an attack: the attacker's own traffic still works, checked with n
 * verified loopback frames. */
static bool still_works(struct evil_dev *d, unsigned n)
{
	if (d->o->rdma_dev) {
		/* the virtio-rdma device has no Ethernet queues: its commands */
		uint8_t port = 1, attr[161];

		for (unsigned i = 0; i < n; i++) {
			int rc = evil_rdma_cmd_rsp(d, VIRTIO_RDMA_DEV_CMD_QUERY_PORT, &port, 1,
						   attr, sizeof(attr));

			if (rc) {
				evil_say("QUERY_PORT %u: %d", i, rc);
				return false;
			}
		}
		return true;
	}
	if (tx_settle(d, 0)) {
		evil_say("transmit ring not consumed");
		return false;
	}
	for (unsigned i = 0; i < n; i++) {
		int rc = evil_loopback(d, 1000 + i);

		if (rc) {
			evil_say("loopback %u: %s", i, strerror(-rc));
			return false;
		}
	}
	return true;
}

static int run_spoof_mac(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t f[64];
	int rc, sent = 0;

	(void)a;
	if (!need_victim(o, false))
		return EVIL_SETUP;
	if (evil_dev_open(&d, o, EVIL_F_NO_MAC) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	memset(f, 0x5a, sizeof(f));
	for (int i = 0; i < 256; i++) {
		eth(f, i & 1 ? bcast : d.mac, o->victim_mac, 0x88b5);
		if (tx_wait(&d, f, sizeof(f)) == 0)
			sent++;
	}
	evil_say("spoofed_sent %d", sent);
	rc = evil_verdict(sent == 256 && still_works(&d, 16),
			  "sent %d spoofed frames; own traffic broken afterwards", sent);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

static int run_cfg_mac(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t mac[6], f[64];
	int set_rc, rc;

	(void)a;
	if (!need_victim(o, false))
		return EVIL_SETUP;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	/* After a reset no feature is negotiated: the legacy config write. */
	if (evil_say_rc("RESET_DEVICE", vhost_client_reset_device(&d.vc)) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	set_rc = vhost_client_set_config(&d.vc, 0, o->victim_mac, 6);
	evil_say("set_config_rc %d", set_rc);
	if (evil_dev_restart(&d) < 0 || vhost_client_get_config(&d.vc, 0, mac, 6) < 0) {
		evil_say("outcome closed");
		evil_dev_close(&d);
		return evil_verdict(false, "session lost after the config write");
	}
	memset(f, 0x33, sizeof(f));
	eth(f, bcast, o->victim_mac, 0x88b5);
	tx_wait(&d, f, sizeof(f));
	rc = evil_verdict(!memcmp(mac, d.mac, 6) && still_works(&d, 16),
			  "config MAC is now %02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
			  mac[2], mac[3], mac[4], mac[5]);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

/* ARP reply: sender = (our MAC, victim IP), to broadcast. */
static void arp_claim(const struct evil_opts *o, const struct evil_dev *d, uint8_t f[60])
{
	uint8_t *a = f + 14;

	memset(f, 0, 60);
	eth(f, bcast, d->mac, ETH_P_ARP);
	a[1] = 1;          /* Ethernet */
	a[2] = 0x08;       /* IPv4 */
	a[4] = 6;
	a[5] = 4;
	a[7] = 2;          /* reply */
	memcpy(a + 8, d->mac, 6);
	memcpy(a + 14, o->victim_ip, 4);
	memcpy(a + 18, bcast, 6);
	memcpy(a + 24, o->victim_ip, 4);
}

/* Unsolicited NA for the victim's link-local address, from ours. */
static void na_claim(const struct evil_opts *o, const struct evil_dev *d, uint8_t f[86])
{
	uint8_t *ip = f + 14, *m = ip + 40;
	uint32_t sum = 0;

	memset(f, 0, 86);
	eth(f, (const uint8_t[6]){ 0x33, 0x33, 0, 0, 0, 1 }, d->mac, ETH_P_IPV6);
	ip[0] = 0x60;
	ip[5] = 32;
	ip[6] = 58;
	ip[7] = 255;
	ip[8] = 0xfe;
	ip[9] = 0x80;
	ip[16] = d->mac[0] ^ 2;
	ip[17] = d->mac[1];
	ip[18] = d->mac[2];
	ip[19] = 0xff;
	ip[20] = 0xfe;
	ip[21] = d->mac[3];
	ip[22] = d->mac[4];
	ip[23] = d->mac[5];
	ip[24] = 0xff;
	ip[25] = 0x02;
	ip[39] = 1;
	m[0] = 136;
	m[4] = 0x20;       /* override */
	m[8] = 0xfe;
	m[9] = 0x80;
	m[16] = o->victim_mac[0] ^ 2;
	m[17] = o->victim_mac[1];
	m[18] = o->victim_mac[2];
	m[19] = 0xff;
	m[20] = 0xfe;
	m[21] = o->victim_mac[3];
	m[22] = o->victim_mac[4];
	m[23] = o->victim_mac[5];
	m[24] = 2;         /* target link-layer address: ours */
	m[25] = 1;
	memcpy(m + 26, d->mac, 6);
	for (int i = 8; i < 40; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	sum += 32 + 58;
	for (int i = 0; i < 32; i += 2)
		sum += (uint32_t)(m[i] << 8 | m[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	m[2] = (uint8_t)(~sum >> 8);
	m[3] = (uint8_t)~sum;
}

static int run_arp_poison(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t arp[60], na[86];
	int rc, sent = 0;

	(void)a;
	if (!need_victim(o, true))
		return EVIL_SETUP;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	arp_claim(o, &d, arp);
	na_claim(o, &d, na);
	for (int i = 0; i < 64; i++) {
		sent += tx_wait(&d, arp, sizeof(arp)) == 0;
		sent += tx_wait(&d, na, sizeof(na)) == 0;
	}
	evil_say("claims_sent %d", sent);
	rc = evil_verdict(sent == 128 && still_works(&d, 16), "own traffic broken afterwards");
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

static int run_flood_macs(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t f[60], buf[EVIL_BUF];
	int rc, sent = 0;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	memset(f, 0, sizeof(f));
	for (int i = 0; i < a->arg; i++) {
		uint8_t src[6] = { 0x02, 0xee, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, 0x01 };

		/* to ourselves: only the learning matters, not a broadcast */
		eth(f, d.mac, src, 0x88b6);
		sent += tx_wait(&d, f, sizeof(f)) == 0;
		/* take what came back so the device's queue never overflows */
		while (evil_rx(&d, buf, sizeof(buf), 0) > 0)
			;
	}
	evil_say("sources_sent %d", sent);
	rc = evil_verdict(sent == a->arg && still_works(&d, 16), "sent %d of %d", sent, a->arg);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

static int run_log_flood(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t f[60];
	int rc, sent = 0;
	const uint8_t other[6] = { 0x02, 0xbb, 0xbb, 0xbb, 0xbb, 0x01 };

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	memset(f, 0, sizeof(f));
	eth(f, bcast, other, 0x88b5);
	for (int i = 0; i < 2000; i++)
		sent += tx_wait(&d, f, sizeof(f)) == 0;
	evil_say("refused_sent %d", sent);
	rc = evil_verdict(sent == 2000 && still_works(&d, 4), "sent %d", sent);
	evil_say("outcome alive");
	evil_dev_close(&d);
	return rc;
}

static int run_mem_bomb(const struct evil_opts *o, const struct evil_attack *a)
{
	static const uint64_t sizes[] = { 1ull << 40, 40ull << 30, 40ull << 30 };
	struct evil_dev d;
	int rc, refused = 0;
	enum evil_outcome out;
	uint64_t nack;
	unsigned replies;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct vhost_user_mem_region reg;
		int fd = memfd_create("vrdma-evil-bomb", MFD_CLOEXEC);

		if (fd < 0 || ftruncate(fd, (off_t)sizes[i]) < 0) {
			if (fd >= 0)
				close(fd);
			evil_dev_close(&d);
			return evil_say_rc("sparse memfd", -errno) ? EVIL_SETUP : EVIL_SETUP;
		}
		memset(&reg, 0, sizeof(reg));
		/* far above the arena, never overlapping it */
		reg.guest_phys_addr = (2ull << 40) + (uint64_t)i * (2ull << 40);
		reg.userspace_addr = reg.guest_phys_addr;
		reg.memory_size = sizes[i];
		rc = vhost_client_add_mem_reg(&d.vc, &reg, fd);
		close(fd);
		evil_say("region %u of %llu GiB: %s", i, (unsigned long long)(sizes[i] >> 30),
			 rc ? "refused" : "mapped");
		refused += rc != 0;
	}
	out = evil_outcome(d.vc.fd, true, o->timeout_ms, &nack, &replies);
	evil_say("outcome %s", evil_outcome_name(out));
	/* 1 TiB and the second 40 GiB are beyond the 64 GiB default */
	rc = evil_verdict(out == EVIL_OUT_ALIVE && refused >= 2 && still_works(&d, 8),
			  "%d regions refused, session %s", refused, evil_outcome_name(out));
	evil_dev_close(&d);
	return rc;
}

static int run_sem_kick(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	enum evil_outcome out;
	uint64_t nack, v = 1000;
	unsigned replies;
	int fd, rc;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	if (fd < 0 || write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		if (fd >= 0)
			close(fd);
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	rc = vhost_client_set_vring_kick(&d.vc, EVIL_TXQ, fd);
	close(fd);
	evil_say("set_vring_kick_rc %d", rc);
	out = evil_outcome(d.vc.fd, rc == 0, o->timeout_ms, &nack, &replies);
	evil_say("outcome %s", evil_outcome_name(out));
	rc = evil_verdict(out == EVIL_OUT_CLOSED, "semaphore kick fd kept (%s)",
			  evil_outcome_name(out));
	evil_dev_close(&d);
	return rc;
}

static int run_rdma_gid(const struct evil_opts *o, const struct evil_attack *a)
{
	struct virtio_rdma_cmd_add_gid ag;
	struct evil_rdev d;
	int r4, r6, rc;

	(void)a;
	if (!need_victim(o, true))
		return EVIL_SETUP;
	if (rdev_open(&d, o, 0) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	memset(&ag, 0, sizeof(ag));
	ag.index = htole16(3);
	ag.gid[10] = ag.gid[11] = 0xff;
	memcpy(ag.gid + 12, o->victim_ip, 4);
	r4 = rdev_cmd(&d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0);
	memset(ag.gid, 0, 16);
	ag.gid[0] = 0xfe;
	ag.gid[1] = 0x80;
	ag.gid[8] = o->victim_mac[0] ^ 2;
	ag.gid[9] = o->victim_mac[1];
	ag.gid[10] = o->victim_mac[2];
	ag.gid[11] = 0xff;
	ag.gid[12] = 0xfe;
	ag.gid[13] = o->victim_mac[3];
	ag.gid[14] = o->victim_mac[4];
	ag.gid[15] = o->victim_mac[5];
	r6 = rdev_cmd(&d, VIRTIO_NET_CTRL_ROCE_ADD_GID, &ag, sizeof(ag), NULL, 0);
	evil_say("add_gid_ipv4 %d add_gid_link_local %d", r4, r6);
	rc = evil_verdict(r4 == VIRTIO_NET_ERR && r6 == VIRTIO_NET_ERR && rdev_probe(&d, 7) == 0,
			  "ADD_GID of the victim's addresses: %d %d", r4, r6);
	evil_say("outcome alive");
	rdev_close(&d);
	return rc;
}

static int run_rdma_qps(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_rdev d;
	uint32_t qpns[64];
	unsigned made = 0;
	int last = VIRTIO_NET_OK, rc;

	(void)a;
	if (rdev_open(&d, o, 0) < 0) {
		rdev_close(&d);
		return EVIL_SETUP;
	}
	while (made < sizeof(qpns) / sizeof(qpns[0])) {
		struct virtio_rdma_cmd_create_qp_ext c;
		struct virtio_rdma_ack_create_qp ack;

		memset(&c, 0, sizeof(c));
		c.pdn = htole32(d.pdn);
		c.qp_type = VIRTIO_IB_QPT_RC;
		c.send_cqn = htole32(d.cqn);
		c.recv_cqn = htole32(d.cqn);
		c.cap.max_send_wr = d.dev.max_qp_wr;
		c.cap.max_recv_wr = d.dev.max_qp_wr;
		c.cap.max_send_sge = d.dev.max_send_sge;
		c.cap.max_recv_sge = d.dev.max_recv_sge;
		c.cap.max_inline_data = htole32(VIRTIO_RDMA_INLINE_DATA_SIZE);
		last = rdev_cmd(&d, VIRTIO_NET_CTRL_ROCE_CREATE_QP, &c, sizeof(c), &ack, sizeof(ack));
		if (last != VIRTIO_NET_OK)
			break;
		qpns[made++] = le32toh(ack.qpn);
	}
	evil_say("qps_created %u then %d", made, last);
	for (unsigned i = 0; i < made; i++) {
		le32 q = htole32(qpns[i]);

		rdev_cmd(&d, VIRTIO_NET_CTRL_ROCE_DESTROY_QP, &q, sizeof(q), NULL, 0);
	}
	rc = evil_verdict(last == VIRTIO_NET_ERR && rdev_probe(&d, 9) == 0,
			  "%u maximal QPs, last answer %d", made, last);
	evil_say("outcome alive");
	rdev_close(&d);
	return rc;
}

/* Kicks without work: the daemon must pause the kick fd (counted) instead of
 * spinning on it, and the ring must work again afterwards. */
static int run_kick_storm(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	unsigned kicks = 0, waits = 0;
	int rc;

	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	for (int i = 0; i < a->arg; i++) {
		struct pollfd pfd = { .fd = d.r[EVIL_TXQ].kick, .events = POLLIN };

		evil_kick(&d, EVIL_TXQ);
		kicks++;
		/* Until the daemon has read it (a paused fd stays readable:
		 * then wait for the pause to end, at most 10 ms per look). */
		while (poll(&pfd, 1, 0) == 1 && waits < 100000) {
			waits++;
			poll(NULL, 0, 1);
		}
	}
	evil_say("kicks %u waits %u", kicks, waits);
	rc = evil_verdict(still_works(&d, 16), "kick storm of %u kicks", kicks);
	evil_dev_close(&d);
	return rc;
}

const struct evil_attack evil_tenant_attacks[] = {
	{ "tenant_spoof_mac", EVIL_SURVIVE, "frames with the victim's source MAC, F_MAC not acked",
	  run_spoof_mac, 0 },
	{ "tenant_cfg_mac", EVIL_SURVIVE, "victim's MAC written to the config space before VERSION_1",
	  run_cfg_mac, 0 },
	{ "tenant_arp_poison", EVIL_SURVIVE, "unsolicited ARP replies and NAs for the victim's addresses",
	  run_arp_poison, 0 },
	{ "tenant_flood_macs", EVIL_SURVIVE, "3000 source MACs to fill the switch's table",
	  run_flood_macs, 3000 },
	{ "tenant_mem_bomb", EVIL_SURVIVE, "sparse memfds of 1 TiB and 2 x 40 GiB as guest memory",
	  run_mem_bomb, 0 },
	{ "tenant_sem_kick", EVIL_CLOSED, "a semaphore-mode eventfd with a count as kick fd",
	  run_sem_kick, 0 },
	{ "tenant_kick_storm", EVIL_SURVIVE, "2000 kicks that bring no work",
	  run_kick_storm, 2000 },
	{ "tenant_log_flood", EVIL_SURVIVE, "2000 refused frames in a burst", run_log_flood, 0 },
	{ "tenant_rdma_gid", EVIL_SURVIVE, "ADD_GID of the victim's IPv4 and link-local GIDs",
	  run_rdma_gid, 0 },
	{ "tenant_rdma_qps", EVIL_SURVIVE, "QPs with maximal work-request limits until refused",
	  run_rdma_qps, 0 },
};
const unsigned evil_tenant_nattacks = sizeof(evil_tenant_attacks) / sizeof(evil_tenant_attacks[0]);
