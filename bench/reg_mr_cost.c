/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost of ibv_reg_mr on ordinary application memory (malloc'ed, touched),
 * per GiB: run through vrdma-run. QEMU's pvrdma documented up to 0.5 s/GiB.
 *   cc -O2 bench/reg_mr_cost.c -libverbs -o build/bench/reg_mr_cost
 *   build/bin/vrdma-run --socket S -- build/bench/reg_mr_cost [MiB]
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	size_t len = mib << 20;
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	double t0, t1, t2;
	char *buf;

	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])) || !(pd = ibv_alloc_pd(ctx))) {
		fprintf(stderr, "no device\n");
		return 1;
	}
	buf = aligned_alloc(4096, len);
	if (!buf)
		return 1;
	memset(buf, 0x5a, len);
	t0 = now();
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	t1 = now();
	if (!mr) {
		perror("ibv_reg_mr");
		return 1;
	}
	for (size_t i = 0; i < len; i += 4096)
		if (buf[i] != 0x5a) {
			fprintf(stderr, "contents changed at %zu\n", i);
			return 1;
		}
	ibv_dereg_mr(mr);
	t2 = now();
	printf("reg_mr %zu MiB: %.3f s (%.3f s/GiB), dereg %.3f s, contents intact\n", mib,
	       t1 - t0, (t1 - t0) * 1024.0 / mib, t2 - t1);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	free(buf);
	return 0;
}
