/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registration of ordinary application memory (issue 5), as a plain verbs
 * program run through vrdma-run, in two processes:
 *
 *   reg_mr_share server SOCK                 passive peer: one 8 MiB MR
 *   reg_mr_share client SOCK [--expect-zero-copy | --expect-copy]
 *
 * They exchange {qpn, gid, addr, rkey} over the UNIX socket SOCK, connect RC
 * QPs (port 1, GID index 1), and the socket then carries the client's
 * requests to the server: check a range of its buffer against a pattern,
 * fill a range with a pattern, done.
 *
 * The client registers buffers from malloc, memalign, calloc, realloc
 * (grown), mmap, the stack, a small malloc and a global array; for each:
 * contents intact after ibv_reg_mr, RDMA WRITE to the server (server checks
 * the bytes), RDMA READ of a new pattern back (client checks), ibv_dereg_mr,
 * contents still intact and writable, then free / munmap. Then overlapping
 * registrations (three MRs over one buffer, dereg of the covering one while
 * the others keep working, re-registration) on heap and on copy-path
 * memory, and fork() after registration: the child sees the parent's data
 * and gets a private copy (its writes do not reach the parent), and the
 * parent's MRs keep working. --expect-zero-copy: the large heap buffers must
 * lie in the shared heap (memfd:vrdma-heap) and the others not;
 * --expect-copy: none may. Prints "ok NAME" lines; exit 0 if all passed.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SRV_LEN (8u << 20)
#define CHUNK (1u << 20)
#define GID_INDEX 1
#define GUARD_MS 120000 /* a lost completion ends in a failure, not a hang */

enum { OP_CHECK = 1, OP_FILL, OP_DONE };
enum { EXPECT_ANY, EXPECT_ZC, EXPECT_COPY };

struct conn_info {
	uint32_t qpn, psn, rkey, len;
	uint64_t addr;
	uint8_t gid[16];
};

struct req {
	uint32_t op, off, len, seed, base;
};

static const char *role = "reg_mr_share";
static int sock = -1;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct conn_info peer;
static int expect = EXPECT_ANY;
static int failed;

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void result(bool ok, const char *name)
{
	printf("%s %s\n", ok ? "ok" : "not ok", name);
	fflush(stdout);
	if (!ok)
		failed = 1;
}

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 12) + (i >> 20));
}

static void fill(uint8_t *p, size_t len, uint32_t seed, size_t base)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(seed, base + i);
}

/* Index of the first byte that differs from the pattern, or SIZE_MAX. */
static size_t mismatch(const uint8_t *p, size_t len, uint32_t seed, size_t base)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat(seed, base + i))
			return i;
	return SIZE_MAX;
}

static bool all_eq(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void xfer_all(int fd, void *p, size_t len, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? write(fd, (char *)p + done, len - done)
			       : read(fd, (char *)p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("socket %s: %s", wr ? "write" : "read", n ? strerror(errno) : "EOF");
		done += (size_t)n;
	}
}

/* Whether p lies in a mapping of the shared heap. */
static bool in_heap(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
			found = strstr(line, "memfd:vrdma-heap") != NULL;
	}
	fclose(f);
	return found;
}

/* ---- verbs setup ----------------------------------------------------------- */

static void setup(struct conn_info *me)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_LOCAL_WRITE,
	};
	union ibv_gid gid;

	if (!l || !l[0])
		die("no RDMA device");
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0)))
		die("device setup");
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("QP to INIT");
	if (ibv_query_gid(ctx, 1, GID_INDEX, &gid))
		die("ibv_query_gid");
	me->qpn = qp->qp_num;
	me->psn = (uint32_t)getpid() & 0xffffff;
	memcpy(me->gid, gid.raw, 16);
}

static void connect_qp(const struct conn_info *me)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer.qpn,
		.rq_psn = peer.psn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .hop_limit = 64, .sgid_index = GID_INDEX },
		},
	};

	memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me->psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("QP to RTS");
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RDMA WRITE (write) or READ of len bytes between local p (mr) and the
 * server's buffer at off, in CHUNK pieces. Returns true on success. */
static bool rdma(bool write, void *p, struct ibv_mr *mr, size_t len, size_t off)
{
	for (size_t done = 0; done < len;) {
		size_t n = len - done < CHUNK ? len - done : CHUNK;
		struct ibv_sge sge = {
			.addr = (uintptr_t)p + done, .length = (uint32_t)n, .lkey = mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = done,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = peer.addr + off + done, .rkey = peer.rkey },
		}, *bad;
		struct ibv_wc wc;
		long t0 = now_ms();
		int r;

		if (ibv_post_send(qp, &wr, &bad)) {
			fprintf(stderr, "%s: ibv_post_send failed\n", role);
			return false;
		}
		while ((r = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() - t0 < GUARD_MS)
			;
		if (r != 1 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "%s: %s completion: %s\n", role, write ? "WRITE" : "READ",
				r == 1 ? ibv_wc_status_str(wc.status) : "none");
			return false;
		}
		done += n;
	}
	return true;
}

/* ---- server ---------------------------------------------------------------- */

static int server(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct conn_info me = { 0 };
	uint8_t *buf = malloc(SRV_LEN);
	struct ibv_mr *mr;
	char tmp[sizeof(sa.sun_path)];
	int ls;
	uint64_t sum0 = 0, sum1 = 0;

	role = "reg_mr_share server";
	if (!buf)
		die("malloc");
	memset(buf, 0, SRV_LEN);
	setup(&me);
	mr = ibv_reg_mr(pd, buf, SRV_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr");
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	me.len = SRV_LEN;
	/* Listen under a temporary name, then rename: SOCK exists only once
	 * connecting to it works. */
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	if (strlen(path) + 5 > sizeof(tmp))
		die("socket path too long: %s", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	memcpy(sa.sun_path, tmp, sizeof(tmp));
	unlink(tmp);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    rename(tmp, path))
		die("listen on %s: %s", path, strerror(errno));
	sock = accept(ls, NULL, NULL);
	if (sock < 0)
		die("accept");
	close(ls);
	unlink(path);
	xfer_all(sock, &me, sizeof(me), true);
	xfer_all(sock, &peer, sizeof(peer), false);
	connect_qp(&me);
	for (;;) {
		struct req q;
		uint32_t ans = 0;

		xfer_all(sock, &q, sizeof(q), false);
		if (q.op == OP_DONE)
			break;
		if (q.off > SRV_LEN || q.len > SRV_LEN - q.off)
			die("bad request");
		if (q.op == OP_FILL) {
			fill(buf + q.off, q.len, q.seed, q.base);
		} else {
			size_t m = mismatch(buf + q.off, q.len, q.seed, q.base);

			ans = m == SIZE_MAX ? 0 : (uint32_t)m + 1;
		}
		xfer_all(sock, &ans, sizeof(ans), true);
	}
	/* Our own data survives the dereg. */
	for (size_t i = 0; i < SRV_LEN; i++)
		sum0 = sum0 * 31 + buf[i];
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	for (size_t i = 0; i < SRV_LEN; i++)
		sum1 = sum1 * 31 + buf[i];
	if (sum0 != sum1)
		die("buffer changed by ibv_dereg_mr");
	free(buf);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("server done\n");
	return 0;
}

/* ---- client ---------------------------------------------------------------- */

static uint32_t ask(uint32_t op, size_t off, size_t len, uint32_t seed, size_t base)
{
	struct req q = { op, (uint32_t)off, (uint32_t)len, seed, (uint32_t)base };
	uint32_t ans;

	xfer_all(sock, &q, sizeof(q), true);
	if (op == OP_DONE)
		return 0;
	xfer_all(sock, &ans, sizeof(ans), false);
	return ans;
}

/* Server bytes [off, off+len) equal pattern (seed, base)? */
static bool server_has(size_t off, size_t len, uint32_t seed, size_t base)
{
	uint32_t a = ask(OP_CHECK, off, len, seed, base);

	if (a)
		fprintf(stderr, "%s: server byte %zu differs\n", role, off + a - 1);
	return a == 0;
}

static void check_path(const char *name, const void *p, bool heap_kind)
{
	char n[96];
	bool h = in_heap(p);

	if (expect == EXPECT_ANY)
		return;
	snprintf(n, sizeof(n), "%s.%s", name, expect == EXPECT_ZC ? "zero_copy_path" : "copy_path");
	result(expect == EXPECT_ZC ? h == heap_kind : !h, n);
}

/* The whole cycle on one buffer of len bytes (len <= SRV_LEN). */
static void cycle(const char *name, uint8_t *b, size_t len, uint32_t seed, bool heap_kind)
{
	char n[96];
	struct ibv_mr *mr;
	bool ok;

	check_path(name, b, heap_kind);
	fill(b, len, seed, 0);
	mr = ibv_reg_mr(pd, b, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fprintf(stderr, "%s: %s: ibv_reg_mr: %s\n", role, name, strerror(errno));
	else if (mismatch(b, len, seed, 0) != SIZE_MAX)
		fprintf(stderr, "%s: %s: byte %zu changed by ibv_reg_mr\n", role, name,
			mismatch(b, len, seed, 0));
	snprintf(n, sizeof(n), "%s.reg", name);
	result(mr != NULL && mismatch(b, len, seed, 0) == SIZE_MAX, n);
	if (!mr)
		return;
	snprintf(n, sizeof(n), "%s.rdma_write", name);
	result(rdma(true, b, mr, len, 0) && server_has(0, len, seed, 0), n);
	ask(OP_FILL, 0, len, seed + 1, 0);
	snprintf(n, sizeof(n), "%s.rdma_read", name);
	result(rdma(false, b, mr, len, 0) && mismatch(b, len, seed + 1, 0) == SIZE_MAX, n);
	ok = ibv_dereg_mr(mr) == 0 && mismatch(b, len, seed + 1, 0) == SIZE_MAX;
	memset(b, 0xee, len); /* still ordinary writable memory */
	ok = ok && b[0] == 0xee && b[len - 1] == 0xee;
	snprintf(n, sizeof(n), "%s.dereg_intact", name);
	result(ok, n);
}

static uint8_t global_buf[64 << 10];

static void __attribute__((noinline)) stack_case(void)
{
	uint8_t b[48 << 10];

	cycle("stack", b, sizeof(b), 60, false);
}

static void *raw_mmap(size_t len)
{
	void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void overlap_case(const char *name, uint8_t *x, bool heap_kind)
{
	const size_t M = 1u << 20;
	struct ibv_mr *m1, *m2, *m3;
	char n[96];
	bool ok;

	check_path(name, x, heap_kind);
	fill(x, 4 * M, 70, 0);
	m1 = ibv_reg_mr(pd, x, 4 * M, IBV_ACCESS_LOCAL_WRITE);
	m2 = ibv_reg_mr(pd, x + M, 2 * M, IBV_ACCESS_LOCAL_WRITE);
	m3 = ibv_reg_mr(pd, x + 3 * M + 100, M - 100, IBV_ACCESS_LOCAL_WRITE);
	snprintf(n, sizeof(n), "%s.reg3", name);
	result(m1 && m2 && m3 && mismatch(x, 4 * M, 70, 0) == SIZE_MAX, n);
	if (!m1 || !m2 || !m3)
		die("overlapping registration failed");
	snprintf(n, sizeof(n), "%s.write_inner", name);
	result(rdma(true, x + M, m2, 2 * M, 0) && server_has(0, 2 * M, 70, M), n);
	ok = ibv_dereg_mr(m1) == 0;
	snprintf(n, sizeof(n), "%s.inner_after_outer_dereg", name);
	result(ok && rdma(true, x + M, m2, 2 * M, 2 * M) && server_has(2 * M, 2 * M, 70, M) &&
		       mismatch(x, 4 * M, 70, 0) == SIZE_MAX, n);
	ask(OP_FILL, 0, M - 100, 71, 0);
	snprintf(n, sizeof(n), "%s.read_unaligned", name);
	result(rdma(false, x + 3 * M + 100, m3, M - 100, 0) &&
		       mismatch(x + 3 * M + 100, M - 100, 71, 0) == SIZE_MAX &&
		       mismatch(x, 3 * M + 100, 70, 0) == SIZE_MAX, n);
	ok = ibv_dereg_mr(m2) == 0 && ibv_dereg_mr(m3) == 0;
	m1 = ibv_reg_mr(pd, x, 4 * M, IBV_ACCESS_LOCAL_WRITE);
	fill(x, 4 * M, 72, 0);
	snprintf(n, sizeof(n), "%s.rereg", name);
	result(ok && m1 && rdma(true, x, m1, 4 * M, 0) && server_has(0, 4 * M, 72, 0), n);
	snprintf(n, sizeof(n), "%s.dereg_intact", name);
	result(m1 && ibv_dereg_mr(m1) == 0 && mismatch(x, 4 * M, 72, 0) == SIZE_MAX, n);
}

/* Whether [p, p+len) is mapped. */
static bool mapped(const void *p, size_t len)
{
	static unsigned char vec[4096];

	return len <= sizeof(vec) * 4096 &&
	       mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), len, vec) == 0;
}

static void fork_case(void)
{
	const size_t hl = 2u << 20, pl = 256u << 10;
	uint8_t *h = malloc(hl), *p = raw_mmap(pl);
	struct ibv_mr *mh, *mp;
	int st = -1;
	pid_t c;

	if (!h)
		die("malloc");
	fill(h, hl, 80, 0);
	fill(p, pl, 81, 0);
	mh = ibv_reg_mr(pd, h, hl, IBV_ACCESS_LOCAL_WRITE);
	mp = ibv_reg_mr(pd, p, pl, IBV_ACCESS_LOCAL_WRITE);
	if (!mh || !mp)
		die("registration before fork");
	fflush(stdout);
	c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		/*
		 * What the child has (docs/performance.md, "fork"): every
		 * registered buffer as a private copy (no MADV_DONTFORK). It
		 * must never share its pages with the parent.
		 */
		bool hm = mapped(h, hl), pm = mapped(p, pl);
		int bad = 0;

		if (!hm || !pm) {
			fprintf(stderr, "%s: fork child: registered buffer not inherited (heap %d, mmap %d)\n",
				role, hm, pm);
			bad = 1;
		}
		if ((hm && mismatch(h, hl, 80, 0) != SIZE_MAX) ||
		    (pm && mismatch(p, pl, 81, 0) != SIZE_MAX)) {
			fprintf(stderr, "%s: fork child: inherited data differs\n", role);
			bad = 1;
		}
		if (hm)
			memset(h, 0x11, hl);
		if (pm)
			memset(p, 0x22, pl);
		_exit(bad);
	}
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "%s: fork child: wait status %#x\n", role, st);
	result(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork.child_inherits_as_documented");
	result(mismatch(h, hl, 80, 0) == SIZE_MAX && mismatch(p, pl, 81, 0) == SIZE_MAX,
	       "fork.child_writes_private");
	result(rdma(true, h, mh, hl, 0) && server_has(0, hl, 80, 0) &&
		       rdma(true, p, mp, pl, hl) && server_has(hl, pl, 81, 0),
	       "fork.parent_mrs_work");
	result(ibv_dereg_mr(mh) == 0 && ibv_dereg_mr(mp) == 0 &&
		       mismatch(h, hl, 80, 0) == SIZE_MAX && mismatch(p, pl, 81, 0) == SIZE_MAX,
	       "fork.dereg_intact");
	free(h);
	syscall(SYS_munmap, p, pl);
}

static int client(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct conn_info me = { 0 };
	uint8_t *b, *small;

	role = "reg_mr_share client";
	setup(&me);
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect to %s: %s", path, strerror(errno));
	xfer_all(sock, &peer, sizeof(peer), false);
	xfer_all(sock, &me, sizeof(me), true);
	connect_qp(&me);

	b = malloc(4u << 20);
	if (!b)
		die("malloc");
	cycle("malloc", b, 4u << 20, 10, true);
	free(b);

	b = memalign(4096, 2u << 20);
	if (!b)
		die("memalign");
	cycle("memalign", b, 2u << 20, 20, true);
	free(b);

	if (posix_memalign((void **)&b, 1u << 16, 1u << 20))
		die("posix_memalign");
	result(((uintptr_t)b & 0xffff) == 0, "posix_memalign.aligned");
	cycle("posix_memalign", b, 1u << 20, 25, true);
	free(b);

	b = calloc(1, 1u << 20);
	if (!b)
		die("calloc");
	result(all_eq(b, 1u << 20, 0), "calloc.zeroed");
	cycle("calloc", b, 1u << 20, 30, true);
	free(b);

	b = malloc(1000);
	if (!b)
		die("malloc");
	fill(b, 1000, 40, 0);
	b = realloc(b, 3u << 20);
	if (!b)
		die("realloc");
	result(mismatch(b, 1000, 40, 0) == SIZE_MAX, "realloc.kept_data");
	cycle("realloc", b, 3u << 20, 41, true);
	b = realloc(b, 5u << 20); /* grow a deregistered block again */
	result(b && all_eq(b, 3u << 20, 0xee), "realloc.regrow");
	free(b);

	b = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		die("mmap");
	cycle("mmap", b, 1u << 20, 50, true);
	result(munmap(b, 1u << 20) == 0, "mmap.munmap");

	stack_case();

	small = malloc(8192);
	if (!small)
		die("malloc");
	cycle("small_malloc", small, 8192, 61, false);
	free(small);

	cycle("global", global_buf, sizeof(global_buf), 62, false);

	b = malloc(4u << 20);
	if (!b)
		die("malloc");
	overlap_case("overlap_heap", b, true);
	free(b);
	b = raw_mmap(4u << 20);
	overlap_case("overlap_private", b, false);
	syscall(SYS_munmap, b, 4u << 20);

	fork_case();

	ask(OP_DONE, 0, 0, 0, 0);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("client done: %s\n", failed ? "FAILED" : "all passed");
	return failed;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "client")) {
		if (argc >= 4 && !strcmp(argv[3], "--expect-zero-copy"))
			expect = EXPECT_ZC;
		else if (argc >= 4 && !strcmp(argv[3], "--expect-copy"))
			expect = EXPECT_COPY;
		return client(argv[2]);
	}
	fprintf(stderr, "usage: reg_mr_share server SOCK | client SOCK "
			"[--expect-zero-copy | --expect-copy]\n");
	return 2;
}
