/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-heap allocator (src/shmalloc, preloaded by vrdma-run) keeps
 * the semantics of the functions it replaces. Run through vrdma-run (it
 * opens no device); with --expect-heap, large blocks must come from
 * the heap (memfd:vrdma-heap in /proc/self/maps), else from anywhere.
 *
 * Checks: 4 threads of random malloc / calloc (zeroed) / memalign (aligned)
 * / realloc (data kept) / free with contents verified before each free and
 * malloc_usable_size >= the request; posix_memalign / aligned_alloc / valloc
 * / pvalloc alignment; anonymous mmap, partial munmap (the rest stays
 * usable), madvise(MADV_DONTNEED) reads zeroes, mremap growth keeps the data
 * and the new part is zero; a page protected with mprotect is read-write
 * again when its memory is reused; realloc from a small (glibc) block to a large
 * one and back; fork(): the child sees the data, its writes stay its own;
 * free(NULL), realloc(p, 0). Prints "ok NAME" lines; exit 0 if all passed.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int failed;

static void result(bool ok, const char *name)
{
	printf("%s shmalloc.%s\n", ok ? "ok" : "not ok", name);
	fflush(stdout);
	if (!ok)
		failed = 1;
}

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

static bool all_eq(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static _Atomic int thread_bad;

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	uint8_t *v[48] = { 0 };
	size_t sz[48] = { 0 };

	for (int it = 0; it < 6000; it++) {
		int k = (int)(rand_r(&seed) % 48);
		size_t s;
		int how;

		if (v[k]) {
			if (!all_eq(v[k], sz[k], (uint8_t)k))
				thread_bad = 1;
			free(v[k]);
			v[k] = NULL;
			continue;
		}
		s = rand_r(&seed) % 4 == 0 ? 1u + (unsigned)rand_r(&seed) % 2000u
					    : (unsigned)rand_r(&seed) % (1u << 20);
		how = (int)(rand_r(&seed) % 4);
		if (how == 0) {
			v[k] = malloc(s);
		} else if (how == 1) {
			v[k] = calloc(1, s);
			if (v[k] && !all_eq(v[k], s, 0))
				thread_bad = 1;
		} else if (how == 2) {
			v[k] = memalign(1u << 16, s);
			if (((uintptr_t)v[k] & 0xffff))
				thread_bad = 1;
		} else {
			uint8_t *p = malloc(100);

			if (!p) {
				thread_bad = 1;
				break;
			}
			memset(p, 0x77, 100);
			v[k] = realloc(p, s);
			if (v[k] && !all_eq(v[k], s < 100 ? s : 100, 0x77))
				thread_bad = 1;
		}
		if (!v[k] && s) {
			thread_bad = 1;
			break;
		}
		if (v[k] && malloc_usable_size(v[k]) < s)
			thread_bad = 1;
		if (v[k])
			memset(v[k], k, s);
		sz[k] = s;
	}
	for (int k = 0; k < 48; k++)
		free(v[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	bool expect_heap = argc > 1 && !strcmp(argv[1], "--expect-heap");
	const size_t M = 1u << 20;
	pthread_t t[4];
	uint8_t *p, *q, *m;
	void *a = NULL;
	int st = -1;
	pid_t c;

	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	result(!thread_bad, "threads_random_blocks");

	p = malloc(4 * M);
	result(p && (!expect_heap || in_heap(p)), "malloc_large_in_heap");
	q = malloc(100);
	result(q && !in_heap(q), "malloc_small_not_in_heap");
	free(q);
	free(p);

	result(posix_memalign(&a, 1u << 21, 3 * M) == 0 && !((uintptr_t)a & ((1u << 21) - 1)),
	       "posix_memalign_2m");
	free(a);
	result(posix_memalign(&a, 3, 100) != 0, "posix_memalign_bad_alignment");
	a = aligned_alloc(1u << 16, 1u << 17);
	result(a && !((uintptr_t)a & 0xffff), "aligned_alloc");
	free(a);
	a = valloc(M);
	result(a && !((uintptr_t)a & 4095), "valloc");
	free(a);
	a = pvalloc(M + 1);
	result(a && !((uintptr_t)a & 4095) && malloc_usable_size(a) >= M + 4096, "pvalloc");
	free(a);

	/* realloc across the threshold, both ways */
	p = malloc(1000);
	memset(p, 0x31, 1000);
	p = realloc(p, 2 * M);
	result(p && all_eq(p, 1000, 0x31) && (!expect_heap || in_heap(p)), "realloc_grow_to_heap");
	memset(p, 0x32, 2 * M);
	p = realloc(p, 8 * M);
	result(p && all_eq(p, 2 * M, 0x32), "realloc_grow_in_heap");
	p = realloc(p, 500);
	result(p && all_eq(p, 500, 0x32), "realloc_shrink");
	free(p);
	p = malloc(M);
	result(realloc(p, 0) == NULL, "realloc_zero_frees");
	free(NULL);

	/* freed memory comes back zeroed through calloc */
	p = malloc(2 * M);
	memset(p, 0xab, 2 * M);
	free(p);
	p = calloc(2, M);
	result(p && all_eq(p, 2 * M, 0), "calloc_after_free_zeroed");
	free(p);

	m = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	result(m != MAP_FAILED && all_eq(m, 16 * 4096, 0) && (!expect_heap || in_heap(m)),
	       "mmap_anon_zeroed");
	memset(m, 7, 16 * 4096);
	result(munmap(m + 10 * 4096, 6 * 4096) == 0 && all_eq(m, 10 * 4096, 7), "munmap_part");
	result(madvise(m, 4096, MADV_DONTNEED) == 0 && all_eq(m, 4096, 0) &&
		       all_eq(m + 4096, 9 * 4096, 7), "madvise_dontneed_zero");
	m = mremap(m, 10 * 4096, 64 * 4096, MREMAP_MAYMOVE);
	result(m != MAP_FAILED && all_eq(m + 4096, 9 * 4096, 7) &&
		       all_eq(m + 10 * 4096, 54 * 4096, 0), "mremap_grow");
	result(m != MAP_FAILED && munmap(m, 64 * 4096) == 0, "munmap_all");

	/* a guard page made with mprotect does not outlive its mapping */
	for (int i = 0; i < 4; i++) {
		m = mmap(NULL, 32 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			break;
		memset(m, 1, 32 * 4096); /* faults here if a guard page came back */
		mprotect(m + 4096, 4096, PROT_NONE);
		munmap(m, 32 * 4096);
	}
	p = malloc(32 * 4096);
	if (p)
		memset(p, 2, 32 * 4096);
	free(p);
	result(m != MAP_FAILED && p, "mprotect_not_inherited_by_reuse");

	/* fork: private copy for the child */
	p = malloc(3 * M);
	memset(p, 0x41, 3 * M);
	c = fork();
	if (c == 0) {
		bool ok = all_eq(p, 3 * M, 0x41);

		memset(p, 0x42, 3 * M);
		q = malloc(5 * M); /* the child's heap works */
		if (q)
			memset(q, 1, 5 * M);
		free(q);
		free(p);
		_exit(ok && q ? 0 : 1);
	}
	waitpid(c, &st, 0);
	result(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork_child_sees_data");
	result(all_eq(p, 3 * M, 0x41), "fork_child_writes_private");
	free(p);

	printf("reg_shmalloc: %s\n", failed ? "FAILED" : "all passed");
	return failed;
}
