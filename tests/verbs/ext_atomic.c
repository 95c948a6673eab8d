// SPDX-License-Identifier: BSD-3-Clause
/*
 * ext_atomic: acceptance program for RDMA atomics (issue 6), standard verbs.
 *
 *   ext_atomic faa-server -p PORT [-c CLIENTS] [-n ITERS]
 *   ext_atomic faa-client -p PORT [-n ITERS] [-o OUTSTANDING] HOST
 *   ext_atomic cas-server -p PORT [-c CLIENTS] [-n ITERS]
 *   ext_atomic cas-client -p PORT [-n ITERS] HOST
 *   common: [-d DEVICE] [-g GID_INDEX]
 *
 * faa: the server registers an 8-byte counter (0) with REMOTE_ATOMIC and
 * gives each of CLIENTS clients (own process, own RC QP) its address and
 * rkey. Each client does ITERS FETCH_AND_ADD of 1 with OUTSTANDING in
 * flight, checks every completion (success, FETCH_ADD, byte_len 8) and that
 * the values it fetched are distinct, and sends them to the server. The
 * server checks that the counter is CLIENTS * ITERS and that all fetched
 * values together are exactly 0 .. CLIENTS * ITERS - 1 (each once), and
 * sends its verdict to every client: everybody exits 0 only if all holds.
 *
 * cas: the server holds a lock word and a counter. Each client, ITERS
 * times: takes the lock with COMPARE_AND_SWAP 0 -> id (retrying while the
 * fetched value is not 0), reads the counter (RDMA READ), writes it back
 * plus one (RDMA WRITE), releases the lock with CAS id -> 0 (the fetched
 * value must be id); the READ also returns the lock word, which must be id.
 * The server checks counter == CLIENTS * ITERS and the
 * lock free: a lost update would show a smaller counter.
 */
#include "verbs/ext_common.h"

#include <getopt.h>

#define MSG_DONE 1
#define MSG_VERDICT 2

struct opts {
	const char *mode, *dev, *host;
	int port, gid, clients, iters, outstanding;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- servers ---------------------------------------------------------------- */

struct srv_conn {
	int fd;
	struct ibv_qp *qp;
};

/* Accept o->clients clients, each with its own QP, and give them {addr,
 * rkey} of mr and an id 1..clients. */
static void srv_accept_all(struct ext_ctx *c, const struct opts *o, struct ibv_cq *cq,
			   struct ibv_mr *mr, struct srv_conn *conns, int access)
{
	int lfd = ext_listen(o->port);

	for (int i = 0; i < o->clients; i++) {
		struct ext_dest rem, loc;

		conns[i].fd = ext_accept(lfd);
		ext_recv_all(conns[i].fd, &rem, sizeof(rem));
		conns[i].qp = ext_rc_qp(c, cq, cq, 4, 1, access);
		loc = ext_local_dest(c, conns[i].qp);
		ext_connect_qp(c, conns[i].qp, loc.psn, &rem);
		loc.addr = (uint64_t)(uintptr_t)mr->addr;
		loc.rkey = mr->rkey;
		loc.len = (uint32_t)mr->length;
		loc.id = (uint32_t)i + 1;
		ext_send_all(conns[i].fd, &loc, sizeof(loc));
		ext_say("client %d connected (QP %u <-> %u)", i + 1, conns[i].qp->qp_num, rem.qpn);
	}
	close(lfd);
}

static void srv_verdict(struct srv_conn *conns, int n, bool ok)
{
	for (int i = 0; i < n; i++)
		ext_send_msg(conns[i].fd, MSG_VERDICT, ok, 0, 0, 0);
}

static void srv_teardown(struct ext_ctx *c, struct srv_conn *conns, int n, struct ibv_mr *mr,
			 struct ibv_cq *cq)
{
	for (int i = 0; i < n; i++) {
		if (ibv_destroy_qp(conns[i].qp))
			ext_die("ibv_destroy_qp");
		close(conns[i].fd);
	}
	if (ibv_dereg_mr(mr) || ibv_destroy_cq(cq))
		ext_die("dereg / destroy_cq");
	ext_close(c);
}

static int faa_server(const struct opts *o)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t total = (uint64_t)o->clients * (uint64_t)o->iters, got = 0, cnt;
	struct srv_conn *conns = calloc((size_t)o->clients, sizeof(*conns));
	uint64_t *all = calloc(total ? total : 1, sizeof(uint64_t));
	uint64_t *counter = aligned_alloc(4096, 4096);
	struct ext_ctx c;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	bool ok = true;

	if (!conns || !all || !counter)
		ext_die("out of memory");
	ext_open(&c, o->dev, o->gid);
	if (c.dattr.atomic_cap == IBV_ATOMIC_NONE)
		ext_die("the device reports atomic_cap NONE");
	memset(counter, 0, 4096);
	cq = ext_cq(&c, 16);
	mr = ext_reg(&c, counter, 4096, access);
	srv_accept_all(&c, o, cq, mr, conns, access);
	for (int i = 0; i < o->clients; i++) {
		struct ext_msg m = ext_expect_msg(conns[i].fd, MSG_DONE);

		if (m.v[0] != (uint64_t)o->iters) {
			ext_say("FAIL: client %d reports %" PRIu64 " values, expected %d", i + 1,
				m.v[0], o->iters);
			ok = false;
			srv_verdict(conns, o->clients, false);
			return 1;
		}
		ext_recv_all(conns[i].fd, all + got, m.v[0] * sizeof(uint64_t));
		got += m.v[0];
		ext_say("client %d done: %" PRIu64 " values", i + 1, m.v[0]);
	}
	cnt = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
	if (cnt != total) {
		ext_say("FAIL: counter is %" PRIu64 ", expected %" PRIu64, cnt, total);
		ok = false;
	}
	qsort(all, total, sizeof(uint64_t), cmp_u64);
	for (uint64_t k = 0; k < total; k++)
		if (all[k] != k) {
			ext_say("FAIL: fetched values are not a permutation of 0..%" PRIu64
				": sorted[%" PRIu64 "] = %" PRIu64, total - 1, k, all[k]);
			ok = false;
			break;
		}
	for (int k = 1; k < 4096 / 8; k++)
		if (counter[k]) {
			ext_say("FAIL: word %d next to the counter changed", k);
			ok = false;
		}
	srv_verdict(conns, o->clients, ok);
	if (ok)
		ext_say("counter %" PRIu64 " == %d clients x %d; fetched values are a permutation "
			"of 0..%" PRIu64, cnt, o->clients, o->iters, total - 1);
	srv_teardown(&c, conns, o->clients, mr, cq);
	free(conns);
	free(all);
	free(counter);
	if (!ok)
		ext_die("atomic counter test failed");
	ext_say("PASS");
	return 0;
}

static int cas_server(const struct opts *o)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	uint64_t total = (uint64_t)o->clients * (uint64_t)o->iters;
	struct srv_conn *conns = calloc((size_t)o->clients, sizeof(*conns));
	uint64_t *words = aligned_alloc(4096, 4096);
	struct ext_ctx c;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	bool ok = true;

	if (!conns || !words)
		ext_die("out of memory");
	ext_open(&c, o->dev, o->gid);
	if (c.dattr.atomic_cap == IBV_ATOMIC_NONE)
		ext_die("the device reports atomic_cap NONE");
	memset(words, 0, 4096);   /* [0] lock, [1] counter */
	cq = ext_cq(&c, 16);
	mr = ext_reg(&c, words, 4096, access);
	srv_accept_all(&c, o, cq, mr, conns, access);
	for (int i = 0; i < o->clients; i++) {
		struct ext_msg m = ext_expect_msg(conns[i].fd, MSG_DONE);

		ext_say("client %d done: %" PRIu64 " increments, %" PRIu64 " failed lock attempts",
			i + 1, m.v[0], m.v[1]);
		if (m.v[0] != (uint64_t)o->iters)
			ok = false;
	}
	if (words[0] != 0) {
		ext_say("FAIL: lock word is %" PRIu64 " after every client released it", words[0]);
		ok = false;
	}
	if (words[1] != total) {
		ext_say("FAIL: counter is %" PRIu64 ", expected %" PRIu64 " (lost updates: the "
			"lock did not exclude)", words[1], total);
		ok = false;
	}
	srv_verdict(conns, o->clients, ok);
	if (ok)
		ext_say("counter %" PRIu64 " == %d clients x %d under the CAS lock", words[1],
			o->clients, o->iters);
	srv_teardown(&c, conns, o->clients, mr, cq);
	free(conns);
	free(words);
	if (!ok)
		ext_die("CAS lock test failed");
	ext_say("PASS");
	return 0;
}

/* ---- clients ------------------------------------------------------------------ */

struct cli {
	struct ext_ctx c;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ext_dest rem;
	int fd;
};

static void cli_connect(struct cli *k, const struct opts *o, int sq_depth)
{
	struct ext_dest loc;

	ext_open(&k->c, o->dev, o->gid);
	k->cq = ext_cq(&k->c, sq_depth + 1);
	k->qp = ext_rc_qp(&k->c, k->cq, k->cq, sq_depth, 1, 0);
	loc = ext_local_dest(&k->c, k->qp);
	k->fd = ext_connect(o->host, o->port);
	ext_send_all(k->fd, &loc, sizeof(loc));
	ext_recv_all(k->fd, &k->rem, sizeof(k->rem));
	ext_connect_qp(&k->c, k->qp, loc.psn, &k->rem);
	ext_say("connected as client %u (QP %u <-> %u), counter at 0x%" PRIx64 " rkey 0x%x",
		k->rem.id, k->qp->qp_num, k->rem.qpn, k->rem.addr, k->rem.rkey);
}

static int cli_finish(struct cli *k, struct ibv_mr *mr, bool local_ok)
{
	struct ext_msg m = ext_expect_msg(k->fd, MSG_VERDICT);

	if (ibv_destroy_qp(k->qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(k->cq))
		ext_die("teardown");
	ext_close(&k->c);
	close(k->fd);
	if (!m.v[0])
		ext_die("the server's check failed (see its output)");
	if (!local_ok)
		ext_die("local checks failed");
	ext_say("PASS");
	return 0;
}

static void post_atomic(struct cli *k, struct ibv_mr *mr, uint64_t *res, uint64_t wr_id,
			enum ibv_wr_opcode op, uint64_t remote, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)res, 8, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	wr.wr.atomic.remote_addr = remote;
	wr.wr.atomic.rkey = k->rem.rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	rc = ibv_post_send(k->qp, &wr, &bad);
	if (rc)
		ext_die("ibv_post_send(atomic %d): %s", op, strerror(rc));
}

static void post_rw(struct cli *k, struct ibv_mr *mr, uint64_t *buf, uint32_t len,
		    uint64_t wr_id, enum ibv_wr_opcode op, uint64_t remote)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = k->rem.rkey;
	rc = ibv_post_send(k->qp, &wr, &bad);
	if (rc)
		ext_die("ibv_post_send(%d): %s", op, strerror(rc));
}

static void check_atomic_wc(const struct ibv_wc *wc, enum ibv_wc_opcode op, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		ext_die("%s (wr_id %" PRIu64 "): status %s (%d)", what, wc->wr_id,
			ibv_wc_status_str(wc->status), wc->status);
	if (wc->opcode != op)
		ext_die("%s (wr_id %" PRIu64 "): opcode %d, expected %d", what, wc->wr_id,
			wc->opcode, op);
	if (wc->byte_len != 8)
		ext_die("%s (wr_id %" PRIu64 "): byte_len %u, expected 8", what, wc->wr_id,
			wc->byte_len);
}

static int faa_client(const struct opts *o)
{
	size_t n = (size_t)o->iters;
	uint64_t *res = aligned_alloc(4096, (n * 8 + 4095) & ~(size_t)4095);
	uint64_t *sorted = malloc(n * 8 + 8);
	uint64_t deadline, posted = 0, done = 0;
	struct ibv_wc wc[32];
	struct ibv_mr *mr;
	struct cli k;
	bool ok = true;

	if (!res || !sorted)
		ext_die("out of memory");
	memset(res, 0xff, n * 8);
	cli_connect(&k, o, o->outstanding);
	mr = ext_reg(&k.c, res, (n * 8 + 4095) & ~(size_t)4095, IBV_ACCESS_LOCAL_WRITE);
	deadline = ext_now_ms() + EXT_TIMEOUT_MS;
	while (done < n) {
		int r;

		while (posted < n && posted - done < (uint64_t)o->outstanding) {
			post_atomic(&k, mr, &res[posted], posted, IBV_WR_ATOMIC_FETCH_AND_ADD,
				    k.rem.addr, 1, 0);
			posted++;
		}
		r = ibv_poll_cq(k.cq, 32, wc);
		if (r < 0)
			ext_die("ibv_poll_cq: %d", r);
		for (int i = 0; i < r; i++) {
			check_atomic_wc(&wc[i], IBV_WC_FETCH_ADD, "FETCH_AND_ADD");
			if (wc[i].wr_id != done)
				ext_die("completion of wr_id %" PRIu64 " out of order (expected %"
					PRIu64 ")", wc[i].wr_id, done);
			done++;
			deadline = ext_now_ms() + EXT_TIMEOUT_MS;
		}
		if (!r && ext_now_ms() > deadline)
			ext_die("no completion for %d ms (%" PRIu64 " of %zu done)", EXT_TIMEOUT_MS,
				done, n);
	}
	memcpy(sorted, res, n * 8);
	qsort(sorted, n, 8, cmp_u64);
	for (size_t i = 1; i < n; i++)
		if (sorted[i] == sorted[i - 1]) {
			ext_say("FAIL: value %" PRIu64 " fetched twice", sorted[i]);
			ok = false;
			break;
		}
	for (size_t i = 1; i < n; i++)
		if (res[i] <= res[i - 1]) {
			ext_say("FAIL: fetched values not increasing in posting order at %zu: %"
				PRIu64 " then %" PRIu64, i, res[i - 1], res[i]);
			ok = false;
			break;
		}
	ext_say("%zu FETCH_AND_ADD completed, fetched values distinct: %s (first %" PRIu64
		", last %" PRIu64 ")", n, ok ? "yes" : "NO", n ? res[0] : 0, n ? res[n - 1] : 0);
	ext_send_msg(k.fd, MSG_DONE, n, 0, 0, 0);
	ext_send_all(k.fd, res, n * 8);
	free(sorted);
	{
		int rc = cli_finish(&k, mr, ok);

		free(res);
		return rc;
	}
}

static int cas_client(const struct opts *o)
{
	/* [0] CAS result, [1] new counter value, [2..3] lock and counter read */
	uint64_t *buf = aligned_alloc(4096, 4096);
	uint64_t id, lock_addr, ctr_addr, fails = 0, last = 0;
	struct ibv_wc wc[2];
	struct ibv_mr *mr;
	struct cli k;
	bool ok = true;

	if (!buf)
		ext_die("out of memory");
	memset(buf, 0, 4096);
	cli_connect(&k, o, 4);
	mr = ext_reg(&k.c, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	id = k.rem.id;
	lock_addr = k.rem.addr;
	ctr_addr = k.rem.addr + 8;
	for (int it = 0; it < o->iters; it++) {
		/* take the lock */
		for (;;) {
			post_atomic(&k, mr, &buf[0], 1, IBV_WR_ATOMIC_CMP_AND_SWP, lock_addr, 0, id);
			ext_poll_n(k.cq, wc, 1, "CAS acquire");
			check_atomic_wc(&wc[0], IBV_WC_COMP_SWAP, "CAS acquire");
			if (buf[0] == 0)
				break;
			if (buf[0] == id)
				ext_die("lock already held by us (id %" PRIu64 ")", id);
			fails++;
		}
		/* counter += 1 with READ then WRITE; the READ takes the lock
		 * word too, which must be ours while we hold it */
		post_rw(&k, mr, &buf[2], 16, 2, IBV_WR_RDMA_READ, lock_addr);
		ext_poll_n(k.cq, wc, 1, "RDMA READ of the lock and the counter");
		if (wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RDMA_READ)
			ext_die("READ: status %s opcode %d", ibv_wc_status_str(wc[0].status),
				wc[0].opcode);
		if (buf[2] != id) {
			ext_say("FAIL: lock word is %" PRIu64 " while we (%" PRIu64 ") hold it",
				buf[2], id);
			ok = false;
		}
		buf[1] = buf[3];
		if (buf[1] < last) {
			ext_say("FAIL: counter went back from %" PRIu64 " to %" PRIu64, last, buf[1]);
			ok = false;
		}
		buf[1]++;
		last = buf[1];
		post_rw(&k, mr, &buf[1], 8, 3, IBV_WR_RDMA_WRITE, ctr_addr);
		/* release: ordered after the WRITE on the same RC QP */
		post_atomic(&k, mr, &buf[0], 4, IBV_WR_ATOMIC_CMP_AND_SWP, lock_addr, id, 0);
		ext_poll_n(k.cq, wc, 2, "WRITE + CAS release");
		if (wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RDMA_WRITE)
			ext_die("WRITE: status %s opcode %d", ibv_wc_status_str(wc[0].status),
				wc[0].opcode);
		check_atomic_wc(&wc[1], IBV_WC_COMP_SWAP, "CAS release");
		if (buf[0] != id)
			ext_die("release: lock word was %" PRIu64 ", expected our id %" PRIu64,
				buf[0], id);
	}
	ext_say("%d increments under the lock, %" PRIu64 " failed acquisitions", o->iters,
		fails);
	ext_send_msg(k.fd, MSG_DONE, (uint64_t)o->iters, fails, 0, 0);
	{
		int rc = cli_finish(&k, mr, ok);

		free(buf);
		return rc;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ext_atomic faa-server|cas-server -p PORT [-c CLIENTS] [-n ITERS]\n"
		"       ext_atomic faa-client|cas-client -p PORT [-n ITERS] [-o OUTSTANDING] HOST\n"
		"       common options: [-d DEVICE] [-g GID_INDEX]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .gid = 1, .clients = 4, .iters = 100000, .outstanding = 16 };
	int ch;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	o.mode = argv[1];
	ext_prog = o.mode;
	srand48(getpid() ^ (long)ext_now_ms());
	optind = 2;
	while ((ch = getopt(argc, argv, "p:c:n:o:d:g:")) != -1) {
		switch (ch) {
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.clients = atoi(optarg); break;
		case 'n': o.iters = atoi(optarg); break;
		case 'o': o.outstanding = atoi(optarg); break;
		case 'd': o.dev = optarg; break;
		case 'g': o.gid = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind < argc)
		o.host = argv[optind];
	if (o.port <= 0 || o.clients <= 0 || o.iters <= 0 || o.outstanding <= 0 ||
	    o.outstanding > 1024)
		usage();
	if (!strcmp(o.mode, "faa-server"))
		return faa_server(&o);
	if (!strcmp(o.mode, "cas-server"))
		return cas_server(&o);
	if (!o.host)
		usage();
	if (!strcmp(o.mode, "faa-client"))
		return faa_client(&o);
	if (!strcmp(o.mode, "cas-client"))
		return cas_client(&o);
	usage();
	return 2;
}
