/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One process, two contexts of one device (ibv_open_device twice): RC
 * (SEND, RDMA WRITE, RDMA READ, FETCH_AND_ADD when the device has atomics)
 * and UD traffic between them, every byte compared. Then isolation: context
 * B posting a SEND with context A's lkey completes in error, and A's traffic
 * goes on.
 *
 * usage: two_contexts [-d DEVICE] [-g GID_INDEX] [-n ROUNDS]
 * Prints "two_contexts: ok ..." lines; exits 0 when every check passed.
 */
#include "ext_common.h"

#define BUF_LEN 65536
#define UD_LEN 1024
#define GRH_LEN 40
#define QKEY 0x11111111u

struct side {
	struct ext_ctx c;
	struct ibv_cq *cq;
	struct ibv_qp *rc, *ud;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t psn;
};

static void side_open(struct side *s, const char *dev, int gid_index)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	ext_open(&s->c, dev, gid_index);
	if (s->c.dattr.atomic_cap != IBV_ATOMIC_NONE)
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	s->cq = ext_cq(&s->c, 64);
	if (posix_memalign((void **)&s->buf, 4096, BUF_LEN))
		ext_die("posix_memalign");
	memset(s->buf, 0, BUF_LEN);
	s->mr = ext_reg(&s->c, s->buf, BUF_LEN, access);
	s->rc = ext_rc_qp(&s->c, s->cq, s->cq, 16, 16, access);
	s->psn = (uint32_t)(lrand48() & 0xffffff);
}

static void post_recv(struct side *s, struct ibv_qp *qp, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		ext_die("ibv_post_recv: %s", strerror(errno));
}

static void post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, wr, &bad))
		ext_die("ibv_post_send (opcode %d): %s", wr->opcode, strerror(errno));
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void check(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			ext_die("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
}

static struct ibv_qp *ud_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = s->c.port, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(s->c.pd, &ia);

	if (!qp)
		ext_die("ibv_create_qp (UD): %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		ext_die("UD QP to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		ext_die("UD QP to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		ext_die("UD QP to RTS: %s", strerror(errno));
	return qp;
}

/* One RC round from a to b: SEND, RDMA WRITE, RDMA READ back, atomics. */
static void rc_round(struct side *a, struct side *b, uint32_t round)
{
	uint8_t want[4096];
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	/* SEND: a[0..4096) -> b[0..4096) */
	fill(want, sizeof(want), round);
	memcpy(a->buf, want, sizeof(want));
	post_recv(b, b->rc, 0, sizeof(want));
	sge = (struct ibv_sge){ .addr = (uintptr_t)a->buf, .length = sizeof(want),
				.lkey = a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	post_send(a->rc, &wr);
	ext_wait_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND (sender)");
	wc = ext_wait_wc(b->cq, IBV_WC_SUCCESS, IBV_WC_RECV, "SEND (receiver)");
	if (wc.byte_len != sizeof(want))
		ext_die("SEND received %u bytes, expected %zu", wc.byte_len, sizeof(want));
	check(b->buf, want, sizeof(want), "SEND data");

	/* RDMA WRITE: a[4096..8192) -> b[8192..12288) */
	fill(want, sizeof(want), round + 1000);
	memcpy(a->buf + 4096, want, sizeof(want));
	sge = (struct ibv_sge){ .addr = (uintptr_t)a->buf + 4096, .length = sizeof(want),
				.lkey = a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	wr.wr.rdma.rkey = b->mr->rkey;
	post_send(a->rc, &wr);
	ext_wait_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	check(b->buf + 8192, want, sizeof(want), "RDMA WRITE data");

	/* RDMA READ: b[8192..12288) -> a[16384..20480) */
	memset(a->buf + 16384, 0, sizeof(want));
	sge = (struct ibv_sge){ .addr = (uintptr_t)a->buf + 16384, .length = sizeof(want),
				.lkey = a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	wr.wr.rdma.rkey = b->mr->rkey;
	post_send(a->rc, &wr);
	ext_wait_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, "RDMA READ");
	check(a->buf + 16384, want, sizeof(want), "RDMA READ data");

	if (a->c.dattr.atomic_cap != IBV_ATOMIC_NONE) {
		uint64_t *target = (uint64_t *)(void *)(b->buf + 32768);
		uint64_t *old = (uint64_t *)(void *)(a->buf + 32768);
		uint64_t before = 1000 + round;

		*target = before;
		*old = 0;
		sge = (struct ibv_sge){ .addr = (uintptr_t)old, .length = 8, .lkey = a->mr->lkey };
		wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sge, .num_sge = 1,
					   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					   .send_flags = IBV_SEND_SIGNALED };
		wr.wr.atomic.remote_addr = (uintptr_t)target;
		wr.wr.atomic.rkey = b->mr->rkey;
		wr.wr.atomic.compare_add = 5;
		post_send(a->rc, &wr);
		ext_wait_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, "FETCH_AND_ADD");
		if (*old != before || *target != before + 5)
			ext_die("FETCH_AND_ADD: old %" PRIu64 " target %" PRIu64 ", expected %"
				PRIu64 " and %" PRIu64, *old, *target, before, before + 5);
	}
}

/* One UD datagram from a to b (b's buffer gets the GRH, then the data). */
static void ud_round(struct side *a, struct side *b, struct ibv_ah *ah, uint32_t round)
{
	uint8_t want[UD_LEN];
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	fill(want, sizeof(want), round + 7);
	memcpy(a->buf + 40960, want, sizeof(want));
	memset(b->buf + 49152, 0, GRH_LEN + UD_LEN);
	post_recv(b, b->ud, 49152, GRH_LEN + UD_LEN);
	sge = (struct ibv_sge){ .addr = (uintptr_t)a->buf + 40960, .length = UD_LEN,
				.lkey = a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->ud->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	post_send(a->ud, &wr);
	ext_wait_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_SEND, "UD SEND");
	wc = ext_wait_wc(b->cq, IBV_WC_SUCCESS, IBV_WC_RECV, "UD RECV");
	if (wc.byte_len != GRH_LEN + UD_LEN)
		ext_die("UD received %u bytes, expected %d", wc.byte_len, GRH_LEN + UD_LEN);
	if (wc.src_qp != a->ud->qp_num)
		ext_die("UD source QP %u, expected %u", wc.src_qp, a->ud->qp_num);
	check(b->buf + 49152 + GRH_LEN, want, UD_LEN, "UD data");
}

static struct ibv_ah *ah_to(struct side *from, struct side *to)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = from->c.port,
		.grh = { .dgid = to->c.gid, .sgid_index = (uint8_t)from->c.gid_index,
			 .hop_limit = 64 },
	};
	struct ibv_ah *ah = ibv_create_ah(from->c.pd, &aa);

	if (!ah)
		ext_die("ibv_create_ah: %s", strerror(errno));
	return ah;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int gid_index = 1, rounds = 20, opt;
	struct side a, b;
	struct ext_dest da, db;
	struct ibv_ah *ab, *ba;
	struct ibv_qp *bad_qp;

	ext_prog = "two_contexts";
	while ((opt = getopt(argc, argv, "d:g:n:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'n': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: two_contexts [-d DEVICE] [-g GID_INDEX] [-n ROUNDS]\n");
			return 2;
		}
	}
	srand48(getpid());
	side_open(&a, dev, gid_index);
	side_open(&b, dev, gid_index);
	if (a.c.ctx == b.c.ctx)
		ext_die("two opens gave the same context");
	ext_say("ok two contexts open (QPs %u and %u)", a.rc->qp_num, b.rc->qp_num);
	if (a.rc->qp_num == b.rc->qp_num)
		ext_die("both contexts' QPs have QPN %u", a.rc->qp_num);

	da = ext_local_dest(&a.c, a.rc);
	db = ext_local_dest(&b.c, b.rc);
	ext_connect_qp(&a.c, a.rc, da.psn, &db);
	ext_connect_qp(&b.c, b.rc, db.psn, &da);
	for (int i = 0; i < rounds; i++) {
		rc_round(&a, &b, (uint32_t)i);
		rc_round(&b, &a, (uint32_t)i + 500);
	}
	ext_say("ok RC %d rounds each way (SEND, WRITE, READ%s) data compared", rounds,
		a.c.dattr.atomic_cap != IBV_ATOMIC_NONE ? ", FETCH_AND_ADD" : "");

	a.ud = ud_qp(&a);
	b.ud = ud_qp(&b);
	ab = ah_to(&a, &b);
	ba = ah_to(&b, &a);
	for (int i = 0; i < rounds; i++) {
		ud_round(&a, &b, ab, (uint32_t)i);
		ud_round(&b, &a, ba, (uint32_t)i);
	}
	ext_say("ok UD %d datagrams each way data compared", rounds);

	/* Isolation: B's QP sends from A's buffer with A's lkey. The key is
	 * not B's: the SEND completes in error and never reads A's memory. */
	{
		struct ext_dest dx, dy;
		struct ibv_qp *peer = ext_rc_qp(&a.c, a.cq, a.cq, 4, 4, IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_wc wc;

		bad_qp = ext_rc_qp(&b.c, b.cq, b.cq, 4, 4, IBV_ACCESS_LOCAL_WRITE);
		dx = ext_local_dest(&b.c, bad_qp);
		dy = ext_local_dest(&a.c, peer);
		ext_connect_qp(&b.c, bad_qp, dx.psn, &dy);
		ext_connect_qp(&a.c, peer, dy.psn, &dx);
		post_send(bad_qp, &wr);
		ext_poll_n(b.cq, &wc, 1, "SEND with the other context's lkey");
		if (wc.status == IBV_WC_SUCCESS)
			ext_die("a SEND with the other context's lkey succeeded");
		ext_say("ok foreign lkey refused (%s)", ibv_wc_status_str(wc.status));
		if (ibv_destroy_qp(bad_qp) || ibv_destroy_qp(peer))
			ext_die("ibv_destroy_qp");
		/* flushes of the error QP */
		while (ibv_poll_cq(b.cq, 1, &wc) > 0)
			;
	}
	for (int i = 0; i < 3; i++)
		rc_round(&a, &b, 900 + (uint32_t)i);
	ext_say("ok traffic goes on after the refusal");

	if (ibv_destroy_ah(ab) || ibv_destroy_ah(ba))
		ext_die("ibv_destroy_ah");
	struct side *sides[2] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		struct side *s = sides[i];

		if (ibv_destroy_qp(s->ud) || ibv_destroy_qp(s->rc) || ibv_dereg_mr(s->mr) ||
		    ibv_destroy_cq(s->cq))
			ext_die("teardown: %s", strerror(errno));
		ext_close(&s->c);
		free(s->buf);
	}
	ext_say("ok done");
	return 0;
}
