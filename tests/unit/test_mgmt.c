/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The service's parsers and writer (src/mgmt): vrdma.conf (keys, sections,
 * defaults, errors with their line numbers), control requests (every
 * command, rejects) and the text/JSON key-value writer.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "common/util.h"
#include "mgmt/conf.h"
#include "mgmt/ctl.h"
#include "mgmt/kv.h"

static struct mconf conf;
static char err[512];

static int parse(const char *text)
{
	err[0] = '\0';
	return mconf_parse(text, strlen(text), &conf, err, sizeof(err));
}

static void conf_full(void)
{
	const char *t =
		"# comment\n"
		"; another\n"
		"[global]\n"
		"socket-dir = /run/x\n"
		"socket-mode = 0660\n"
		"socket-group = rdma\n"
		"poll-us = 50\n"
		"sched = rr:20\n"
		"streaming-stores = off\n"
		"uplink = tap:up0\r\n"
		"\n"
		"[device vrdma0]\n"
		"ip = 10.0.0.1/24\n"
		"  mtu=9000  \n"
		"[device b]\n"
		"socket = /tmp/b.sock\n"
		"[device c]\n"
		"socket = c1.sock\n"
		"contexts = 8\n"
		"qps = 64";   /* no final newline */

	REQUIRE(parse(t) == 0);
	CHECK(!strcmp(conf.socket_dir, "/run/x"));
	CHECK_EQ(conf.socket_mode, 0660);
	CHECK(!strcmp(conf.socket_group, "rdma"));
	CHECK_EQ(conf.poll_us, 50);
	CHECK_EQ(conf.sched_policy, SCHED_RR);
	CHECK_EQ(conf.sched_prio, 20);
	CHECK_EQ(conf.streaming, 0);
	CHECK_EQ(conf.nuplinks, 1);
	CHECK(!strcmp(conf.uplinks[0], "tap:up0"));
	REQUIRE(conf.ndevices == 3);
	CHECK(!strcmp(conf.dev[0].name, "vrdma0"));
	CHECK(!strcmp(conf.dev[0].socket, "/run/x/vrdma0.sock"));
	CHECK(!strcmp(conf.dev[0].spec, "socket=/run/x/vrdma0.sock,ip=10.0.0.1/24,mtu=9000"));
	CHECK_EQ(conf.dev[0].line, 12);
	CHECK(!strcmp(conf.dev[1].socket, "/tmp/b.sock"));
	CHECK(!strcmp(conf.dev[1].spec, "socket=/tmp/b.sock"));
	CHECK(!strcmp(conf.dev[2].spec, "socket=/run/x/c1.sock,qps=64,contexts=8"));
}

/* The security, budget and network keys of a device section reach its
 * --device string; allow-ip takes a list. */
static void conf_device_keys(void)
{
	const char *t =
		"[device s]\n"
		"port-security = on\n"
		"mac-change = off\n"
		"allow-ip = 10.9.0.0/16  fd00::/64\n"
		"mem = 2G\n"
		"state-mem = 256M\n"
		"vlan = 100\n"
		"ttl = 32\n";

	REQUIRE(parse(t) == 0);
	REQUIRE(conf.ndevices == 1);
	CHECK(!strcmp(conf.dev[0].spec, "socket=/run/vrdma/s.sock,vlan=100,ttl=32,port-security=on,"
				      "mac-change=off,allow-ip=10.9.0.0/16,allow-ip=fd00::/64,"
				      "mem=2G,state-mem=256M"));
}

static void sched_policies(void)
{
	static const struct {
		const char *s;
		int rc, policy, prio;
	} cases[] = {
		{ "other", 0, SCHED_OTHER, 0 },   { "fifo", 0, SCHED_FIFO, MCONF_SCHED_PRIO },
		{ "fifo:1", 0, SCHED_FIFO, 1 },   { "rr:99", 0, SCHED_RR, 99 },
		{ "fifo:0", -EINVAL, 0, 0 },      { "fifo:100", -EINVAL, 0, 0 },
		{ "fifo:", -EINVAL, 0, 0 },       { "fifo:-1", -EINVAL, 0, 0 },
		{ "fifo5", -EINVAL, 0, 0 },       { "rr:1x", -EINVAL, 0, 0 },
		{ "", -EINVAL, 0, 0 },            { "idle", -EINVAL, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int policy = -1, prio = -1;

		CHECK_EQ(mconf_parse_sched(cases[i].s, &policy, &prio), cases[i].rc);
		if (cases[i].rc == 0) {
			CHECK_EQ(policy, cases[i].policy);
			CHECK_EQ(prio, cases[i].prio);
		}
	}
}

static void conf_defaults(void)
{
	REQUIRE(parse("[device a]\n") == 0);
	CHECK(!strcmp(conf.socket_dir, MCONF_SOCKET_DIR));
	CHECK_EQ(conf.socket_mode, -1);
	CHECK_EQ(conf.poll_us, -1);
	CHECK_EQ(conf.sched_policy, -1);
	CHECK_EQ(conf.streaming, -1);
	CHECK(!conf.control[0]);
	CHECK(!strcmp(conf.dev[0].socket, MCONF_SOCKET_DIR "/a.sock"));
	REQUIRE(parse("") == 0);
	CHECK_EQ(conf.ndevices, 0);
}

/* Each bad file is refused with the line of the problem in the message. */
static void conf_errors(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "[device a]\nfoo = 1\n", "line 2: unknown key 'foo'" },
		{ "[device a]\nmodel = virtio-rdma\n", "line 2: unknown key 'model'" },
		{ "[device a]\nport-security = maybe\n", "line 2: port-security 'maybe'" },
		{ "[device a]\nallow-ip = 10.0.0.0/8 bogus\n", "line 2: allow-ip 'bogus'" },
		{ "[device a]\nstate-mem = 10\n", "line 2: state-mem '10'" },
		{ "[device a]\nvlan = 4095\n", "line 2: vlan" },
		{ "[device a]\nmtu = 99999\n", "line 2: mtu '99999'" },
		{ "[device a]\ncontexts = 0\n", "line 2: contexts '0'" },
		{ "[device a]\nmtu = 1500\nmtu = 1500\n", "line 3: mtu given twice (first at line 2)" },
		{ "[device a]\n[device a]\n", "line 2: device a defined twice" },
		{ "ip = 1.2.3.4\n", "line 1: 'ip' outside a section" },
		{ "[global]\nsocket-mode = 999\n", "line 2: socket-mode" },
		{ "[global]\nsocket-mode = -1\n", "line 2: socket-mode" },
		{ "[global]\nsocket-dir = rel\n", "line 2: socket-dir" },
		{ "[global]\npoll-us = 1000001\n", "line 2: poll-us" },
		{ "[global]\nsched = fifo:0\n", "line 2: sched 'fifo:0'" },
		{ "[global]\nsched = deadline\n", "line 2: sched 'deadline'" },
		{ "[global]\nstreaming-stores = on\n", "line 2: streaming-stores 'on'" },
		{ "[global]\nuplink = eth0\n", "line 2: uplink" },
		{ "[global]\nbogus = 1\n", "line 2: unknown key 'bogus' in [global]" },
		{ "[device a]\n[global]\n", "line 2: [global] must come before" },
		{ "[global]\n[global]\n", "line 2: second [global]" },
		{ "[devices a]\n", "line 1: unknown section" },
		{ "[device a b]\n", "line 1: device name 'a b'" },
		{ "[device ../x]\n", "line 1: device name" },
		{ "[device a\n", "line 1: expected [global]" },
		{ "[device a]\nip\n", "line 2: expected KEY = VALUE" },
		{ "[device a]\n= 1\n", "line 2: expected KEY = VALUE" },
		{ "[device a]\nip = 1.2.3.4,mtu=9000\n", "line 2: ip: ',' is not allowed" },
		{ "[device a]\nsocket = x\n\n[device b]\nsocket = x\n", "line 4: devices a and b share" },
		{ "# x\n[device a]\nip = 1\x01\n", "line 3: control character 0x01" },
		{ "[device a]\nqps = 16384\ncqs = 16384\nsrqs = 16384\n", "line 1: device a:" },
	};
	char big[MCONF_LINE_MAX + 20];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i].text);

		if (rc != -EINVAL || !strstr(err, bad[i].msg))
			printf("#   case %zu: rc %d, message '%s', expected '%s'\n", i, rc, err, bad[i].msg);
		CHECK_EQ(rc, -EINVAL);
		CHECK(strstr(err, bad[i].msg) != NULL);
	}
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_EQ(parse(big), -EINVAL);
	CHECK(strstr(err, "line 1: longer than") != NULL);
	/* A NUL byte inside the text is a control character, not an end. */
	CHECK_EQ(mconf_parse("[device a]\n\0x\n", 13, &conf, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "line 2: control character 0x00") != NULL);
}

static void conf_load_missing(void)
{
	CHECK_EQ(mconf_load("/nonexistent/vrdma.conf", &conf, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "/nonexistent/vrdma.conf") != NULL);
	CHECK_EQ(mconf_load("/", &conf, err, sizeof(err)), -EINVAL);
}

static int req(const char *s, struct ctl_req *r)
{
	return ctl_parse(s, strlen(s), r, err, sizeof(err));
}

static void ctl_requests(void)
{
	struct ctl_req r;

	REQUIRE(req("dev\n", &r) == 0);
	CHECK_EQ(r.cmd, CTL_DEV_SHOW);
	CHECK(!r.json && !r.dev[0]);
	REQUIRE(req("json dev show vrdma0", &r) == 0);
	CHECK(r.json && r.cmd == CTL_DEV_SHOW && !strcmp(r.dev, "vrdma0"));
	REQUIRE(req("res", &r) == 0);
	CHECK(r.cmd == CTL_RES_SHOW && r.res == CTL_RES_ALL);
	REQUIRE(req("res show qp dev a", &r) == 0);
	CHECK(r.res == CTL_RES_QP && !strcmp(r.dev, "a"));
	REQUIRE(req("res  mr", &r) == 0);
	CHECK_EQ(r.res, CTL_RES_MR);
	REQUIRE(req("json stat show dev x", &r) == 0);
	CHECK(r.cmd == CTL_STAT_SHOW && !strcmp(r.dev, "x"));
	REQUIRE(req("dev add c ip=10.0.0.3/24,mtu=9000\n", &r) == 0);
	CHECK(r.cmd == CTL_DEV_ADD && !strcmp(r.dev, "c") && !strcmp(r.arg, "ip=10.0.0.3/24,mtu=9000"));
	REQUIRE(req("dev add c", &r) == 0);
	CHECK(!r.arg[0]);
	REQUIRE(req("dev del c", &r) == 0);
	CHECK_EQ(r.cmd, CTL_DEV_DEL);
	REQUIRE(req("capture start c /tmp/c.pcap", &r) == 0);
	CHECK(r.cmd == CTL_CAPTURE_START && !strcmp(r.arg, "/tmp/c.pcap"));
	REQUIRE(req("capture stop c", &r) == 0);
	CHECK_EQ(r.cmd, CTL_CAPTURE_STOP);
	REQUIRE(req("reload", &r) == 0);
	CHECK_EQ(r.cmd, CTL_RELOAD);
}

static void ctl_rejects(void)
{
	static const char *const bad[] = {
		"", "\n", "json", "frob", "dev frob", "dev add", "dev del", "dev add ../x",
		"res show qq", "res dev", "stat show qp", "capture", "capture start a",
		"capture start a rel.pcap", "capture go a", "reload now", "dev show a b",
		"dev\tshow", "dev show \x80", "a b c d e f g h i",
	};
	struct ctl_req r;
	char big[CTL_LINE_MAX + 10];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = req(bad[i], &r);

		if (rc != -EINVAL)
			printf("#   '%s' accepted\n", bad[i]);
		CHECK_EQ(rc, -EINVAL);
		CHECK(err[0] != '\0');
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_EQ(req(big, &r), -EINVAL);
	CHECK_EQ(ctl_parse("dev\0show", 8, &r, err, sizeof(err)), -EINVAL);
}

static void kv_text_and_json(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct kvw k;

	REQUIRE(f);
	kvw_begin(&k, f, true);
	kvw_list_begin(&k, "qp");
	kvw_obj_begin(&k);
	kvw_str(&k, "dev", "a\"b\\c\n");
	kvw_u64(&k, "lqpn", 17);
	kvw_bool(&k, "ok", true);
	kvw_obj_end(&k);
	kvw_obj_begin(&k);
	kvw_obj_end(&k);
	kvw_list_end(&k);
	kvw_list_begin(&k, "cq");
	kvw_list_end(&k);
	kvw_end(&k);
	fclose(f);
	CHECK(!strcmp(buf, "{\"qp\":[{\"dev\":\"a\\\"b\\\\c\\u000a\",\"lqpn\":17,\"ok\":true},{}],\"cq\":[]}\n"));
	free(buf);

	f = open_memstream(&buf, &len);
	REQUIRE(f);
	kvw_begin(&k, f, false);
	kvw_list_begin(&k, "dev");
	kvw_obj_begin(&k);
	kvw_str(&k, "dev", "vrdma0");
	kvw_u64(&k, "mtu", 1500);
	kvw_str(&k, "dev", "x");
	kvw_obj_end(&k);
	kvw_list_end(&k);
	kvw_end(&k);
	fclose(f);
	CHECK(!strcmp(buf, "dev vrdma0 mtu 1500 dev x\n"));
	free(buf);
}

int main(void)
{
	TEST_PROGRAM("test_mgmt");
	RUN(conf_full);
	RUN(conf_defaults);
	RUN(sched_policies);
	RUN(conf_device_keys);
	RUN(conf_errors);
	RUN(conf_load_missing);
	RUN(ctl_requests);
	RUN(ctl_rejects);
	RUN(kv_text_and_json);
	return TEST_DONE();
}
