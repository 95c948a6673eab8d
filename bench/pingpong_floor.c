// SPDX-License-Identifier: BSD-3-Clause
/*
 * Latency floors of the two wake-up mechanisms vrdma uses between a program
 * and the daemon, measured between two processes on this machine
 * (bench/run.sh, docs/performance.md "Before and after, one run"):
 *
 *   eventfd  each side blocks in read() on its own eventfd and wakes the
 *            other with write() on the other's: the floor of interrupt
 *            mode (a kick or a call is an eventfd write, the wait a
 *            blocking read/poll);
 *   spin     each side spins on a counter in shared memory the other side
 *            increments: the floor of busy-polling mode (virtqueue rings
 *            are shared memory read in a loop).
 *
 * The parent measures round trips; like sockperf and perftest's *_lat, the
 * reported latency is one way, half a round trip.
 *
 * usage: pingpong_floor -m eventfd|spin [-n ITERS] [-w WARMUP]
 * output: "pingpong_<mode>_<stat>_us <value>" for p50, avg, p99, min, then a
 *         comment line with the parameters.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int efd_wait(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static int efd_wake(int fd)
{
	uint64_t v = 1;

	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

/* Shared page: ping counts the parent's sends, pong the child's answers. */
struct spin_page {
	_Alignas(64) _Atomic uint64_t ping;
	_Alignas(64) _Atomic uint64_t pong;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

int main(int argc, char **argv)
{
	const char *mode = NULL;
	long iters = 100000, warm = 1000, total;
	int to_child, to_parent, c, status;
	struct spin_page *sp = NULL;
	uint64_t *rtt, sum = 0;
	pid_t pid;

	while ((c = getopt(argc, argv, "m:n:w:")) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 'n': iters = strtol(optarg, NULL, 10); break;
		case 'w': warm = strtol(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (!mode || (strcmp(mode, "eventfd") && strcmp(mode, "spin")) || iters < 1 ||
	    iters > 100000000 || warm < 0 || warm > 100000000)
		goto usage;
	total = iters + warm;
	rtt = calloc((size_t)iters, sizeof(*rtt));
	to_child = eventfd(0, 0);
	to_parent = eventfd(0, 0);
	sp = mmap(NULL, sizeof(*sp), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!rtt || to_child < 0 || to_parent < 0 || sp == MAP_FAILED) {
		fprintf(stderr, "pingpong_floor: setup: %s\n", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "pingpong_floor: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		for (long i = 1; i <= total; i++) {
			if (mode[0] == 'e') {
				if (efd_wait(to_child) || efd_wake(to_parent))
					_exit(1);
			} else {
				while (atomic_load_explicit(&sp->ping, memory_order_acquire) < (uint64_t)i)
					cpu_relax();
				atomic_store_explicit(&sp->pong, (uint64_t)i, memory_order_release);
			}
		}
		_exit(0);
	}
	for (long i = 1; i <= total; i++) {
		uint64_t t0 = now_ns(), t1;

		if (mode[0] == 'e') {
			if (efd_wake(to_child) || efd_wait(to_parent)) {
				fprintf(stderr, "pingpong_floor: eventfd: %s\n", strerror(errno));
				kill(pid, SIGKILL);
				return 1;
			}
		} else {
			atomic_store_explicit(&sp->ping, (uint64_t)i, memory_order_release);
			while (atomic_load_explicit(&sp->pong, memory_order_acquire) < (uint64_t)i)
				cpu_relax();
		}
		t1 = now_ns();
		if (i > warm)
			rtt[i - warm - 1] = t1 - t0;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pingpong_floor: the other side failed\n");
		return 1;
	}
	qsort(rtt, (size_t)iters, sizeof(*rtt), cmp_u64);
	for (long i = 0; i < iters; i++)
		sum += rtt[i];
	/* one way = half a round trip, in microseconds */
	printf("pingpong_%s_p50_us %.3f\n", mode, rtt[iters / 2] / 2000.0);
	printf("pingpong_%s_avg_us %.3f\n", mode, (double)sum / (double)iters / 2000.0);
	printf("pingpong_%s_p99_us %.3f\n", mode, rtt[(iters * 99) / 100] / 2000.0);
	printf("pingpong_%s_min_us %.3f\n", mode, rtt[0] / 2000.0);
	printf("# two processes, %ld round trips after %ld warm-up, one-way = RTT/2\n",
	       iters, warm);
	free(rtt);
	return 0;
usage:
	fprintf(stderr, "usage: pingpong_floor -m eventfd|spin [-n ITERS] [-w WARMUP]\n");
	return 2;
}
