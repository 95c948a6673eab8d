/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One process connected to several rdma_server processes at once (built
 * against Debian's librdmacm, run through vrdma-run on vrdma's): for each
 * PORT a synchronous endpoint (rdma_getaddrinfo, rdma_create_ep) connects
 * to ADDRESS:PORT; once every connection is up, each gets the exchange
 * rdma_server expects (a 16-byte SEND, then its 16-byte answer), and each is
 * disconnected. Prints "rdmacm_multi: N connections ok" and exits 0, or the
 * failing call and exits 1.
 *
 * usage: rdmacm_multi ADDRESS PORT...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define MAX_PEERS 8

struct peer {
	struct rdma_cm_id *id;
	struct ibv_mr *send_mr, *recv_mr;
	uint8_t send_msg[16], recv_msg[16];
};

static int die(const char *what, int i)
{
	fprintf(stderr, "rdmacm_multi: connection %d: %s failed: %m\n", i, what);
	return 1;
}

int main(int argc, char **argv)
{
	struct peer peers[MAX_PEERS];
	int n = argc - 2;

	if (n < 1 || n > MAX_PEERS) {
		fprintf(stderr, "usage: rdmacm_multi ADDRESS PORT...\n");
		return 2;
	}
	memset(peers, 0, sizeof(peers));
	for (int i = 0; i < n; i++) {
		struct peer *p = &peers[i];
		struct rdma_addrinfo hints, *res;
		struct ibv_qp_init_attr attr;

		memset(&hints, 0, sizeof(hints));
		hints.ai_port_space = RDMA_PS_TCP;
		if (rdma_getaddrinfo(argv[1], argv[2 + i], &hints, &res))
			return die("rdma_getaddrinfo", i);
		memset(&attr, 0, sizeof(attr));
		attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
		attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
		attr.sq_sig_all = 1;
		if (rdma_create_ep(&p->id, res, NULL, &attr))
			return die("rdma_create_ep", i);
		rdma_freeaddrinfo(res);
		p->recv_mr = rdma_reg_msgs(p->id, p->recv_msg, sizeof(p->recv_msg));
		p->send_mr = rdma_reg_msgs(p->id, p->send_msg, sizeof(p->send_msg));
		if (!p->recv_mr || !p->send_mr)
			return die("rdma_reg_msgs", i);
		if (rdma_post_recv(p->id, NULL, p->recv_msg, sizeof(p->recv_msg), p->recv_mr))
			return die("rdma_post_recv", i);
		if (rdma_connect(p->id, NULL))
			return die("rdma_connect", i);
	}
	/* every connection is up at once; now the exchanges */
	for (int i = 0; i < n; i++) {
		struct peer *p = &peers[i];
		struct ibv_wc wc;

		memset(p->send_msg, 'a' + i, sizeof(p->send_msg));
		if (rdma_post_send(p->id, NULL, p->send_msg, sizeof(p->send_msg), p->send_mr, 0))
			return die("rdma_post_send", i);
		if (rdma_get_send_comp(p->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
			return die("the send completion", i);
		if (rdma_get_recv_comp(p->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
		    wc.byte_len != sizeof(p->recv_msg))
			return die("the receive completion", i);
	}
	for (int i = 0; i < n; i++) {
		struct peer *p = &peers[i];

		if (rdma_disconnect(p->id))
			return die("rdma_disconnect", i);
		rdma_dereg_mr(p->send_mr);
		rdma_dereg_mr(p->recv_mr);
		rdma_destroy_ep(p->id);
	}
	printf("rdmacm_multi: %d connections ok\n", n);
	return 0;
}
