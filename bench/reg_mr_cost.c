/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost of ibv_reg_mr on ordinary application memory, per GiB, through
 * vrdma-run. QEMU's pvrdma documented up to 0.5 s/GiB.
 *
 *   cc -O2 -D_GNU_SOURCE bench/reg_mr_cost.c -libverbs -o build/bench/reg_mr_cost
 *   build/bin/vrdma-run --socket S -- build/bench/reg_mr_cost [MiB...]
 *   (default sizes: 64 256 1024)
 *
 * For each size and each kind of buffer:
 *   malloc   malloc(), touched
 *   memalign memalign(4096), touched
 *   mmap     mmap(MAP_PRIVATE | MAP_ANONYMOUS), touched
 *   private  anonymous private memory from the raw mmap system call: what
 *            malloc gives without vrdma-run's shared-heap allocator, i.e.
 *            the copy path, measured in the same run for comparison
 * it times, REG_MR_REPEAT times (default 3, each on a fresh touched
 * buffer), the first ibv_reg_mr, ibv_dereg_mr and a second ibv_reg_mr of
 * the same buffer (re-registration), checks the contents after each step,
 * and says which path the buffer took: "zero-copy" when it lies in the
 * allocator's memfd heap (/proc/self/maps: memfd:vrdma-heap), else "copy".
 * One line per case (best and median of the runs, s/GiB), then a summary at
 * the largest size. Exit status 0 when every registration succeeded and the
 * contents stayed intact. Timing is reported, never asserted.
 */
#include <infiniband/verbs.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum kind { K_MALLOC, K_MEMALIGN, K_MMAP, K_PRIVATE, K_N };
static const char *const kind_name[K_N] = { "malloc", "memalign", "mmap", "private" };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *get_buf(enum kind k, size_t len)
{
	void *p = NULL;

	switch (k) {
	case K_MALLOC:
		p = malloc(len);
		break;
	case K_MEMALIGN:
		p = memalign(4096, len);
		break;
	case K_MMAP:
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
		break;
	case K_PRIVATE:
		p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
		break;
	default:
		break;
	}
	return p;
}

static void put_buf(enum kind k, char *p, size_t len)
{
	if (k == K_MALLOC || k == K_MEMALIGN)
		free(p);
	else if (k == K_MMAP)
		munmap(p, len);
	else
		syscall(SYS_munmap, p, len);
}

/* Whether p lies in a mapping of the shared heap. */
static int in_heap(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
			found = strstr(line, "memfd:vrdma-heap") != NULL;
	}
	fclose(f);
	return found;
}

static int intact(const char *b, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i += 4096)
		if ((unsigned char)b[i] != v || (unsigned char)b[i + 4095] != v)
			return 0;
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One case, reps times: fresh buffer, touched; first reg, dereg, re-reg,
 * dereg, contents checked after each. Times in t_first / t_rereg (sorted).
 * Returns 0, or 1 on a failure (printed). */
static int one_case(struct ibv_pd *pd, enum kind k, size_t mib, int reps, double *t_first,
		    double *t_rereg, double *t_dereg, int *zero_copy)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	size_t len = mib << 20;

	for (int r = 0; r < reps; r++) {
		char *buf = get_buf(k, len);
		struct ibv_mr *mr;
		double t[5];

		if (!buf) {
			fprintf(stderr, "%s %zu MiB: no memory\n", kind_name[k], mib);
			return 1;
		}
		memset(buf, 0x5a + r, len);
		*zero_copy = in_heap(buf);
		t[0] = now();
		mr = ibv_reg_mr(pd, buf, len, acc);
		t[1] = now();
		if (!mr || !intact(buf, len, 0x5a + r)) {
			fprintf(stderr, "%s %zu MiB: %s\n", kind_name[k], mib,
				mr ? "contents changed by ibv_reg_mr" : "ibv_reg_mr failed");
			put_buf(k, buf, len);
			return 1;
		}
		t[2] = now();
		ibv_dereg_mr(mr);
		t[3] = now();
		mr = ibv_reg_mr(pd, buf, len, acc);
		t[4] = now();
		if (!mr || !intact(buf, len, 0x5a + r)) {
			fprintf(stderr, "%s %zu MiB: re-registration %s\n", kind_name[k], mib,
				mr ? "changed the contents" : "failed");
			put_buf(k, buf, len);
			return 1;
		}
		ibv_dereg_mr(mr);
		if (!intact(buf, len, 0x5a + r)) {
			fprintf(stderr, "%s %zu MiB: contents changed by dereg\n", kind_name[k], mib);
			put_buf(k, buf, len);
			return 1;
		}
		buf[0] = 1; /* still ordinary writable memory */
		put_buf(k, buf, len);
		t_first[r] = t[1] - t[0];
		t_dereg[r] = t[3] - t[2];
		t_rereg[r] = t[4] - t[3];
	}
	qsort(t_first, (size_t)reps, sizeof(double), cmp_double);
	qsort(t_rereg, (size_t)reps, sizeof(double), cmp_double);
	qsort(t_dereg, (size_t)reps, sizeof(double), cmp_double);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t dflt[] = { 64, 256, 1024 };
	struct ibv_device **l = ibv_get_device_list(NULL);
	const char *rs = getenv("REG_MR_REPEAT");
	int reps = rs ? atoi(rs) : 3;
	size_t nsizes = argc > 1 ? (size_t)argc - 1 : 3;
	double best[K_N][2], med[K_N][2];
	size_t last_mib = 0;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int bad = 0, zc[K_N] = { 0 };

	if (reps < 1 || reps > 100)
		reps = 3;
	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])) || !(pd = ibv_alloc_pd(ctx))) {
		fprintf(stderr, "no device\n");
		return 1;
	}
	printf("%d run(s) per case; s/GiB: best / median of the runs\n", reps);
	for (size_t si = 0; si < nsizes; si++) {
		size_t mib = argc > 1 ? strtoul(argv[si + 1], NULL, 0) : dflt[si];

		if (!mib)
			continue;
		last_mib = mib;
		for (int k = 0; k < K_N; k++) {
			double tf[100], tr[100], td[100], g = mib / 1024.0;

			if (one_case(pd, k, mib, reps, tf, tr, td, &zc[k])) {
				bad = 1;
				continue;
			}
			printf("%-8s %5zu MiB %-9s reg %.3f / %.3f s/GiB  re-reg %.3f / %.3f s/GiB  "
			       "dereg %.3f / %.3f s/GiB  contents intact\n",
			       kind_name[k], mib, zc[k] ? "zero-copy" : "copy", tf[0] / g,
			       tf[reps / 2] / g, tr[0] / g, tr[reps / 2] / g, td[0] / g,
			       td[reps / 2] / g);
			fflush(stdout);
			best[k][0] = tf[0] / g;
			med[k][0] = tf[reps / 2] / g;
			best[k][1] = tr[0] / g;
			med[k][1] = tr[reps / 2] / g;
		}
	}
	if (!bad && last_mib) {
		printf("summary at %zu MiB (pvrdma documented up to 0.5 s/GiB):\n", last_mib);
		for (int k = 0; k < K_N; k++)
			printf("  %-8s %-9s reg %.3f s/GiB (median %.3f, %.1fx below 0.5), "
			       "re-reg %.3f s/GiB (median %.3f)\n",
			       kind_name[k], zc[k] ? "zero-copy" : "copy", best[k][0], med[k][0],
			       med[k][0] > 0 ? 0.5 / med[k][0] : 0, best[k][1], med[k][1]);
		printf("  zero-copy vs copy path (medians): malloc %.0fx, memalign %.0fx, "
		       "mmap %.0fx faster\n",
		       med[K_MALLOC][0] > 0 ? med[K_PRIVATE][0] / med[K_MALLOC][0] : 0,
		       med[K_MEMALIGN][0] > 0 ? med[K_PRIVATE][0] / med[K_MEMALIGN][0] : 0,
		       med[K_MMAP][0] > 0 ? med[K_PRIVATE][0] / med[K_MMAP][0] : 0);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	return bad;
}
