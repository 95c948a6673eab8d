/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames the transport sends without an ICRC (PKT_F_LOCAL_ICRC_SKIPPED):
 * they stay that way between device ports of one switch, and get a valid
 * ICRC, byte for byte the one a full build writes, before they are captured,
 * faulted or reach any other port (an uplink) (docs/design.md, "ICRC between local
 * devices").
 */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "common/util.h"
#include "port/fault.h"
#include "port/pkt.h"
#include "port/port.h"
#include "roce/roce_icrc.h"
#include "roce/roce_pkt.h"

struct mock {
	struct port port;
	struct pkt_queue q;
};

static void mock_xmit(struct port *p, struct pkt *pkt)
{
	struct mock *m = p->priv;

	pkt_queue_push(&m->q, pkt);
}

static const struct port_ops mock_ops = { .xmit = mock_xmit };

static void mock_init(struct mock *m, const char *name, bool uplink)
{
	memset(m, 0, sizeof(*m));
	m->port.ops = &mock_ops;
	m->port.hairpin = !uplink;
	m->port.uplink = uplink;
	m->port.icrc_skip_ok = !uplink;
	m->port.priv = m;
	snprintf(m->port.name, sizeof(m->port.name), "%s", name);
	pkt_queue_init(&m->q);
}

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b };
static const uint8_t MAC_UNKNOWN[6] = { 0x02, 0, 0, 0, 0, 0x0c };

static void path_to(struct roce_path *path, const uint8_t *dmac, bool udp_csum)
{
	static const uint8_t ip_a[4] = { 10, 0, 0, 1 }, ip_b[4] = { 10, 0, 0, 2 };

	memset(path, 0, sizeof(*path));
	memcpy(path->smac, MAC_A, 6);
	memcpy(path->dmac, dmac, 6);
	roce_gid_from_ipv4(path->sgid, ip_a);
	roce_gid_from_ipv4(path->dgid, ip_b);
	path->udp_sport = 0xC001;
	if (udp_csum)
		path->flags |= ROCE_PATH_F_UDP_CSUM;
}

/* A WRITE ONLY frame with 300 payload bytes depending on tag, as the
 * transport sends it (skip) or with its ICRC (reference). */
static struct pkt *roce_frame(const uint8_t *dmac, unsigned tag, bool skip, bool udp_csum)
{
	struct roce_path path;
	struct roce_hdr_fields f;
	struct pkt *p = pkt_alloc();
	uint8_t *pl;

	if (!p)
		return NULL;
	path_to(&path, dmac, udp_csum);
	memset(&f, 0, sizeof(f));
	f.opcode = ROCE_OP_RC_RDMA_WRITE_ONLY;
	f.pkey = ROCE_PKEY_DEFAULT;
	f.dqpn = 0x12;
	f.psn = 100 + tag;
	f.reth.va = 0x1000;
	f.reth.rkey = 0x77;
	f.reth.len = 300;
	if (roce_pkt_build(p, &path, &f, 300, &pl)) {
		pkt_free(p);
		return NULL;
	}
	for (unsigned i = 0; i < 300; i++)
		pl[i] = (uint8_t)(i * 13 + tag);
	if (roce_pkt_finalize(p, skip ? ROCE_TX_F_SKIP_ICRC : 0)) {
		pkt_free(p);
		return NULL;
	}
	return p;
}

/* p is the reference frame for tag, with a valid ICRC and no mark. */
static void check_sealed(const struct pkt *p, const uint8_t *dmac, unsigned tag, bool udp_csum)
{
	struct pkt *ref = roce_frame(dmac, tag, false, udp_csum);
	struct roce_pkt_info info;

	REQUIRE(ref);
	CHECK(!(p->flags & PKT_F_LOCAL_ICRC_SKIPPED));
	CHECK_EQ(p->len, ref->len);
	CHECK_MEM(p->data, ref->data, ref->len);
	CHECK_EQ(roce_icrc_frame_verify(p->data, p->len), 0);
	CHECK_EQ(roce_pkt_parse(p->data, p->len,
				ROCE_RX_F_ICRC | (udp_csum ? ROCE_RX_F_UDP_CSUM : 0), &info), 0);
	pkt_free(ref);
}

/* Teach the switch that mac is behind port in (a broadcast from it). */
static void learn(struct sw *s, struct port *in, const uint8_t *mac)
{
	struct pkt *p = pkt_alloc();

	REQUIRE(p);
	memset(p->data, 0xff, 6);
	memcpy(p->data + 6, mac, 6);
	p->data[12] = 0x88;
	p->data[13] = 0xb5;
	memset(p->data + 14, 0, 46);
	p->len = 60;
	sw_input(s, in, p);
}

/* Device to device: no ICRC computed; the receiver accepts the frame. */
static void local_stays_unsealed(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	struct roce_pkt_info info;
	struct pkt *p;

	REQUIRE(s);
	mock_init(&a, "a", false);
	mock_init(&b, "b", false);
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &b.port), 0);
	learn(s, &b.port, MAC_B);
	pkt_queue_purge(&a.q);
	sw_input(s, &a.port, roce_frame(MAC_B, 1, true, false));
	REQUIRE(b.q.len == 1);
	p = pkt_queue_pop(&b.q);
	CHECK(p->flags & PKT_F_LOCAL_ICRC_SKIPPED);
	CHECK_EQ(get_le32(p->data + p->len - 4), 0);
	CHECK_EQ(roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info), 0);
	CHECK_EQ(info.payload_len, 300);
	/* the same bytes without the mark are refused: the check is real */
	CHECK_EQ(roce_pkt_parse(p->data, p->len, ROCE_RX_F_ICRC, &info), -ROCE_RX_E_ICRC);
	pkt_free(p);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* Unicast and flooded frames to an uplink carry the ICRC a full build
 * writes (also with a UDP checksum, which covers the ICRC). */
static void uplink_gets_icrc(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b, up;
	struct pkt *p;

	REQUIRE(s);
	mock_init(&a, "a", false);
	mock_init(&b, "b", false);
	mock_init(&up, "up", true);
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &b.port), 0);
	CHECK_EQ(sw_attach(s, &up.port), 0);
	learn(s, &up.port, MAC_B);
	learn(s, &a.port, MAC_A);
	pkt_queue_purge(&a.q);
	pkt_queue_purge(&b.q);
	pkt_queue_purge(&up.q);
	for (unsigned csum = 0; csum < 2; csum++) {
		sw_input(s, &a.port, roce_frame(MAC_B, 2 + csum, true, csum));
		REQUIRE(up.q.len == 1);
		CHECK_EQ(b.q.len, 0);
		p = pkt_queue_pop(&up.q);
		check_sealed(p, MAC_B, 2 + csum, csum);
		pkt_free(p);

		/* unknown destination: flooded to b (unsealed) and up (sealed) */
		sw_input(s, &a.port, roce_frame(MAC_UNKNOWN, 5 + csum, true, csum));
		REQUIRE(up.q.len == 1);
		REQUIRE(b.q.len == 1);
		p = pkt_queue_pop(&up.q);
		check_sealed(p, MAC_UNKNOWN, 5 + csum, csum);
		pkt_free(p);
		pkt_queue_purge(&b.q);
	}
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* A port that did not say it takes frames without ICRC (e.g. a device
 * whose peer is not our transport) gets them sealed, even without uplink. */
static void other_port_gets_icrc(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, o;
	struct pkt *p;

	REQUIRE(s);
	mock_init(&a, "a", false);
	mock_init(&o, "other", false);
	o.port.icrc_skip_ok = false;
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &o.port), 0);
	learn(s, &o.port, MAC_B);
	pkt_queue_purge(&a.q);
	sw_input(s, &a.port, roce_frame(MAC_B, 9, true, false));
	REQUIRE(o.q.len == 1);
	p = pkt_queue_pop(&o.q);
	check_sealed(p, MAC_B, 9, false);
	pkt_free(p);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* With capture on, the capture and the receiver see a sealed frame. */
static void pcap_gets_icrc(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	char path[] = "/tmp/vrdma-test-switch-icrc-XXXXXX";
	uint8_t gh[24], rh[16];
	static uint8_t buf[PKT_MAX_FRAME];
	uint32_t incl;
	struct pkt *p;
	FILE *f;
	int fd;

	REQUIRE(s);
	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	mock_init(&a, "a", false);
	mock_init(&b, "b", false);
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &b.port), 0);
	CHECK_EQ(sw_set_pcap(s, path), 0);
	sw_input(s, &a.port, roce_frame(MAC_B, 7, true, false));
	REQUIRE(b.q.len == 1);
	p = pkt_queue_pop(&b.q);
	check_sealed(p, MAC_B, 7, false);
	CHECK_EQ(sw_set_pcap(s, NULL), 0);
	f = fopen(path, "rb");
	REQUIRE(f);
	CHECK_EQ(fread(gh, 1, sizeof(gh), f), sizeof(gh));
	CHECK_EQ(fread(rh, 1, sizeof(rh), f), sizeof(rh));
	memcpy(&incl, rh + 8, 4);
	CHECK_EQ(incl, p->len);
	if (incl == p->len) {
		CHECK_EQ(fread(buf, 1, incl, f), incl);
		CHECK_MEM(buf, p->data, p->len);
	}
	fclose(f);
	unlink(path);
	pkt_free(p);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* The fault injector corrupts a sealed frame, so the receiver's ICRC check
 * still catches the corruption. */
static void fault_gets_icrc(void)
{
	uint64_t base = pkt_outstanding();
	struct sw *s = sw_new(NULL);
	struct mock a, b;
	struct fault_cfg cfg;
	struct roce_pkt_info info;
	struct pkt *p;
	int caught = 0;

	REQUIRE(s);
	mock_init(&a, "a", false);
	mock_init(&b, "b", false);
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &b.port), 0);
	CHECK_EQ(fault_cfg_parse(&cfg, "corrupt=100,port=a"), 0);
	CHECK_EQ(sw_set_fault(s, &cfg, NULL), 0);
	for (unsigned i = 0; i < 20; i++)
		sw_input(s, &a.port, roce_frame(MAC_B, i, true, false));
	CHECK_EQ(sw_get_stats(s)->fault_corrupted, 20);
	for (unsigned i = 0; (p = pkt_queue_pop(&b.q)); i++) {
		struct pkt *ref = roce_frame(MAC_B, i, false, false);

		REQUIRE(ref && ref->len == p->len);
		CHECK(!(p->flags & PKT_F_LOCAL_ICRC_SKIPPED));
		if (roce_pkt_parse_pkt(p, ROCE_RX_F_ICRC, &info) != 0) {
			caught++;
		} else {
			/* accepted: the flipped byte is one the ICRC does not
			 * cover (IPv4 TOS, TTL, checksum; UDP checksum) */
			unsigned pos = 0;

			while (pos < p->len && p->data[pos] == ref->data[pos])
				pos++;
			CHECK(pos == 15 || pos == 22 || pos == 24 || pos == 25 ||
			      pos == 40 || pos == 41);
			caught++;
		}
		pkt_free(ref);
		pkt_free(p);
	}
	CHECK_EQ(caught, 20); /* every frame delivered and accounted for */
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

int main(void)
{
	TEST_PROGRAM("test_switch_icrc");
	RUN(local_stays_unsealed);
	RUN(uplink_gets_icrc);
	RUN(other_port_gets_icrc);
	RUN(pcap_gets_icrc);
	RUN(fault_gets_icrc);
	return TEST_DONE();
}
