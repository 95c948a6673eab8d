/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP creation and destruction rate through vrdma-run, and the daemon's
 * resident memory per QP (bench/run.sh, docs/performance.md).
 *
 *   cc -O2 -D_GNU_SOURCE bench/qp_create.c -libverbs -o build/bench/qp_create
 *   build/bin/vrdma-run --socket S -- build/bench/qp_create [-n QPS] [-p DAEMON_PID]
 *
 * Opens the first device, one PD and one CQ, then creates QPS RC QPs
 * (default 1000, at most the device's max_qp minus 2), each moved to INIT
 * as a program would, and destroys them again. With -p it reads the
 * daemon's VmRSS from /proc/PID/status before and after the creations.
 * Output: "qp_create_per_s X", "qp_destroy_per_s X", "qps N" and, with -p,
 * "daemon_rss_per_qp_bytes X". Exit status 0 when every call succeeded.
 * Timing is reported, never asserted.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* VmRSS of pid in bytes, or -1. */
static long long rss_of(long pid)
{
	char path[64], line[256];
	long long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lld kB", &kib) == 1)
			break;
	fclose(f);
	return kib < 0 ? -1 : kib * 1024;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qps;
	long n = 1000, pid = 0, made = 0;
	long long rss0 = -1, rss1 = -1;
	double t0, t1, t2;
	int c, rc = 0;

	while ((c = getopt(argc, argv, "n:p:")) != -1) {
		switch (c) {
		case 'n': n = strtol(optarg, NULL, 10); break;
		case 'p': pid = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: qp_create [-n QPS] [-p DAEMON_PID]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		fprintf(stderr, "qp_create: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_device(ctx, &da)) {
		fprintf(stderr, "qp_create: cannot open or query %s\n", ibv_get_device_name(list[0]));
		return 1;
	}
	if (n > da.max_qp - 2)
		n = da.max_qp - 2;
	if (n < 1) {
		fprintf(stderr, "qp_create: device allows %d QPs\n", da.max_qp);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	qps = calloc((size_t)n, sizeof(*qps));
	if (!pd || !cq || !qps) {
		fprintf(stderr, "qp_create: PD/CQ setup failed\n");
		return 1;
	}
	if (pid)
		rss0 = rss_of(pid);
	t0 = now();
	for (made = 0; made < n; made++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		};

		qps[made] = ibv_create_qp(pd, &ia);
		if (!qps[made] ||
		    ibv_modify_qp(qps[made], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
			fprintf(stderr, "qp_create: QP %ld of %ld failed\n", made + 1, n);
			if (qps[made])
				made++;
			rc = 1;
			break;
		}
	}
	t1 = now();
	if (pid)
		rss1 = rss_of(pid);
	for (long i = 0; i < made; i++)
		if (ibv_destroy_qp(qps[i]))
			rc = 1;
	t2 = now();
	printf("qps %ld\n", made);
	printf("qp_create_per_s %.0f\n", made / (t1 - t0));
	printf("qp_destroy_per_s %.0f\n", made / (t2 - t1));
	if (rss0 >= 0 && rss1 >= 0 && made)
		printf("daemon_rss_per_qp_bytes %.0f\n", (double)(rss1 - rss0) / (double)made);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(qps);
	return rc;
}
