/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap capture: frames written are read back byte for byte with libpcap, the
 * file is readable while still open (a killed daemon leaves a usable file),
 * the switch captures before fault injection, and tshark reads the file.
 */
#include "harness.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/util.h"
#include "port/fault.h"
#include "port/pcap.h"
#include "port/pkt.h"
#include "port/port.h"

static char tmpdir[64];

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void fill(uint8_t *b, uint32_t len, unsigned tag)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 31 + tag * 7 + (i >> 8));
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const uint32_t lens[] = { 60, 14, 13, 1, 1514, 9216, 64, 4096, 9000, 61 };

/* Read path and compare with the frames of lens[] (tags 0..n-1). Returns the
 * number of records read; counts mismatches in *bad. */
static int read_back(const char *path, int n, int *bad, uint64_t t0, uint64_t t1)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	static uint8_t ref[PKT_MAX_FRAME];
	uint64_t last = 0;
	pcap_t *p;
	int i = 0, r;

	p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	if (!p) {
		printf("#   pcap_open_offline: %s\n", err);
		(*bad)++;
		return -1;
	}
	if (pcap_datalink(p) != DLT_EN10MB)
		(*bad)++;
	while ((r = pcap_next_ex(p, &h, &data)) == 1) {
		uint64_t t = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;

		if (i >= n) {
			(*bad)++;
			break;
		}
		fill(ref, lens[i % ARRAY_SIZE(lens)], (unsigned)i);
		if (h->caplen != lens[i % ARRAY_SIZE(lens)] || h->len != h->caplen ||
		    memcmp(data, ref, h->caplen)) {
			printf("#   record %d differs\n", i);
			(*bad)++;
		}
		if (t < last || (t0 && (t < t0 || t > t1))) {
			printf("#   record %d: bad timestamp\n", i);
			(*bad)++;
		}
		last = t;
		i++;
	}
	if (r == -1) {
		printf("#   pcap_next_ex: %s\n", pcap_geterr(p));
		(*bad)++;
	}
	pcap_close(p);
	return i;
}

static void write_read(void)
{
	char path[128];
	static uint8_t buf[PKT_MAX_FRAME];
	struct pcapw *w;
	uint64_t t0, t1;
	int bad = 0, n = 40;

	path_of(path, sizeof(path), "a.pcap");
	t0 = realtime_ns();
	w = pcapw_open(path, NULL);
	REQUIRE(w);
	for (int i = 0; i < n; i++) {
		fill(buf, lens[i % ARRAY_SIZE(lens)], (unsigned)i);
		CHECK_EQ(pcapw_write(w, buf, lens[i % ARRAY_SIZE(lens)]), 0);
	}
	/* Still open, nothing flushed by hand: already complete on disk. */
	CHECK_EQ(read_back(path, n, &bad, 0, 0), n);
	pcapw_close(w);
	t1 = realtime_ns();
	CHECK_EQ(read_back(path, n, &bad, t0, t1), n);
	CHECK_EQ(bad, 0);
}

/* With a loop, records reach the file once per loop iteration. */
static void batched_by_loop(void)
{
	char path[128];
	static uint8_t buf[PKT_MAX_FRAME];
	struct loop *l = loop_new();
	struct pcapw *w;
	int bad = 0, n = 100;

	REQUIRE(l);
	path_of(path, sizeof(path), "b.pcap");
	w = pcapw_open(path, l);
	REQUIRE(w);
	/* Header only so far, but already a valid file. */
	CHECK_EQ(read_back(path, n, &bad, 0, 0), 0);
	for (int i = 0; i < n; i++) {
		fill(buf, lens[i % ARRAY_SIZE(lens)], (unsigned)i);
		pcapw_write(w, buf, lens[i % ARRAY_SIZE(lens)]);
	}
	loop_run_once(l, 0);
	CHECK_EQ(read_back(path, n, &bad, 0, 0), n);
	CHECK_EQ(pcapw_get_stats(w)->frames, n);
	CHECK_EQ(pcapw_get_stats(w)->errors, 0);
	pcapw_close(w);
	CHECK_EQ(read_back(path, n, &bad, 0, 0), n);
	CHECK_EQ(bad, 0);
	loop_free(l);
}

static void open_errors(void)
{
	errno = 0;
	CHECK(pcapw_open("/nonexistent-dir/x.pcap", NULL) == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK(pcapw_open("", NULL) == NULL);
}

struct mock {
	struct port port;
	unsigned got;
};

static void mock_xmit(struct port *p, struct pkt *pkt)
{
	((struct mock *)p->priv)->got++;
	pkt_free(pkt);
}

static const struct port_ops mock_ops = { .xmit = mock_xmit };

/* The switch captures every frame as it arrived: runts and frames the
 * fault injector then drops are in the file. */
static void switch_capture(void)
{
	uint64_t base = pkt_outstanding();
	char path[128];
	struct sw *s = sw_new(NULL);
	struct mock a = { 0 }, b = { 0 };
	struct fault_cfg cfg;
	int bad = 0, n = 20;

	REQUIRE(s);
	a.port.ops = b.port.ops = &mock_ops;
	a.port.priv = &a;
	b.port.priv = &b;
	strcpy(a.port.name, "a");
	strcpy(b.port.name, "b");
	CHECK_EQ(sw_attach(s, &a.port), 0);
	CHECK_EQ(sw_attach(s, &b.port), 0);
	path_of(path, sizeof(path), "sw.pcap");
	CHECK_EQ(sw_set_pcap(s, path), 0);
	CHECK_EQ(fault_cfg_parse(&cfg, "drop=100,port=a"), 0);
	CHECK_EQ(sw_set_fault(s, &cfg, NULL), 0);
	for (int i = 0; i < n; i++) {
		struct pkt *p = pkt_alloc();

		REQUIRE(p);
		p->len = lens[i % ARRAY_SIZE(lens)];
		fill(p->data, p->len, (unsigned)i);
		p->data[0] &= 0xfe; /* unicast, unknown: flood */
		p->data[6] &= 0xfe;
		sw_input(s, i & 1 ? &b.port : &a.port, p);
	}
	CHECK(sw_get_pcap_stats(s) != NULL);
	CHECK_EQ(sw_get_pcap_stats(s)->frames, n);
	CHECK_EQ(sw_set_pcap(s, NULL), 0);
	CHECK(sw_get_pcap_stats(s) == NULL);
	CHECK_EQ(sw_get_stats(s)->fault_dropped, 8); /* a's 10 minus 2 runts */
	CHECK_EQ(sw_get_stats(s)->dropped_runt, 4);
	CHECK_EQ(a.got, 8);                          /* b's, minus runts */
	/* read_back compares with unmodified patterns: fix the group bits. */
	{
		char err[PCAP_ERRBUF_SIZE];
		struct pcap_pkthdr *h;
		const u_char *d;
		static uint8_t ref[PKT_MAX_FRAME];
		pcap_t *p = pcap_open_offline(path, err);
		int i = 0;

		REQUIRE(p);
		while (pcap_next_ex(p, &h, &d) == 1) {
			uint32_t len = lens[i % ARRAY_SIZE(lens)];

			fill(ref, len, (unsigned)i);
			if (len > 0)
				ref[0] &= 0xfe;
			if (len > 6)
				ref[6] &= 0xfe;
			if (h->caplen != len || memcmp(d, ref, len))
				bad++;
			i++;
		}
		pcap_close(p);
		CHECK_EQ(i, n);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(sw_set_pcap(s, "/nonexistent-dir/x.pcap"), -ENOENT);
	port_destroy(&a.port);
	port_destroy(&b.port);
	sw_free(s);
	CHECK_EQ(pkt_outstanding(), base);
}

/* tshark (a test dependency) reads the file and sees the same lengths. */
static void tshark_reads(void)
{
	char path[128], cmd[512], line[64];
	static uint8_t buf[PKT_MAX_FRAME];
	struct pcapw *w;
	FILE *f;
	int i = 0, bad = 0, n = 10, st;

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		FAIL("tshark not installed (run scripts/deps.sh test)");
	path_of(path, sizeof(path), "t.pcap");
	w = pcapw_open(path, NULL);
	REQUIRE(w);
	for (int k = 0; k < n; k++) {
		fill(buf, lens[k], (unsigned)k);
		pcapw_write(w, buf, lens[k]);
	}
	/* Not closed: what a killed daemon leaves behind. */
	snprintf(cmd, sizeof(cmd), "tshark -n -r '%s' -T fields -e frame.len 2>/dev/null", path);
	f = popen(cmd, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		if (i >= n || (uint32_t)strtoul(line, NULL, 10) != lens[i])
			bad++;
		i++;
	}
	st = pclose(f);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(i, n);
	CHECK_EQ(bad, 0);
	pcapw_close(w);
}

int main(void)
{
	char cmd[128];
	int rc;

	TEST_PROGRAM("test_pcap");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vrdma-test_pcap.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("not ok test_pcap.setup\n");
		return 1;
	}
	RUN(write_read);
	RUN(batched_by_loop);
	RUN(open_errors);
	RUN(switch_capture);
	RUN(tshark_reads);
	rc = TEST_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
