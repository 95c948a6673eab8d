/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the guest memory table (src/vhost/vhost_mem.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "common/log.h"
#include "vhost/vhost_mem.h"

#define PG 4096u

/* A memfd of size bytes, each 4 KiB page starting with its page number. */
static int make_memfd(size_t size)
{
	int fd = memfd_create("test_vhost_mem", MFD_CLOEXEC);
	size_t off;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	for (off = 0; off < size; off += PG) {
		uint32_t pg = (uint32_t)(off / PG);

		if (pwrite(fd, &pg, sizeof(pg), (off_t)off) != sizeof(pg)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Is [p, p+len) mapped in this process? */
static bool is_mapped(void *p, size_t len)
{
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)(PG - 1));

	return msync(page, len, MS_ASYNC) == 0;
}

static void test_add_translate(void)
{
	struct vhost_mem m;
	int fd = make_memfd(16 * PG), fd2;
	uint8_t *h, *fh;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(m.max_regions, VHOST_MEM_MAX_REGIONS);

	/* gpa 0x100000.. backed by file pages 2..5, uva elsewhere. */
	fd2 = dup(fd);
	CHECK_EQ(vhost_mem_add(&m, 0x100000, 4 * PG, 0x7f0000000000ull, 2 * PG, fd2), 0);
	CHECK(!fd_is_open(fd2)); /* ownership taken */
	CHECK_EQ(m.nregions, 1);
	CHECK_EQ(m.generation, 1);

	h = vhost_mem_gpa_to_host(&m, 0x100000, 4);
	REQUIRE(h != NULL);
	CHECK_EQ(*(uint32_t *)h, 2);
	h = vhost_mem_gpa_to_host(&m, 0x100000 + 3 * PG, PG);
	REQUIRE(h != NULL);
	CHECK_EQ(*(uint32_t *)h, 5);
	CHECK(vhost_mem_uva_to_host(&m, 0x7f0000000000ull + PG, 4) ==
	      vhost_mem_gpa_to_host(&m, 0x100000 + PG, 4));

	/* MAP_SHARED: our writes reach the file and back. */
	fh = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(fh != MAP_FAILED);
	h = vhost_mem_gpa_to_host(&m, 0x100010, 8);
	memcpy(h, "abcdefgh", 8);
	CHECK_MEM(fh + 2 * PG + 0x10, "abcdefgh", 8);
	memcpy(fh + 3 * PG + 0x20, "XYZ", 3);
	CHECK_MEM((uint8_t *)vhost_mem_gpa_to_host(&m, 0x100000 + PG + 0x20, 3), "XYZ", 3);

	/* Region lookup. */
	CHECK(vhost_mem_find(&m, 0x100000) == m.regions[0]);
	CHECK(vhost_mem_find(&m, 0x100000 + 4 * PG - 1) == m.regions[0]);
	CHECK(vhost_mem_find(&m, 0x100000 + 4 * PG) == NULL);
	CHECK(vhost_mem_find(&m, 0xfffff) == NULL);

	munmap(fh, 16 * PG);
	vhost_mem_clear(&m);
	CHECK_EQ(m.nregions, 0);
	close(fd);
}

static void test_unaligned_offset(void)
{
	struct vhost_mem m;
	int fd = make_memfd(8 * PG);
	uint8_t pat[64], *h;
	unsigned i;

	REQUIRE(fd >= 0);
	for (i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + 1);
	REQUIRE(pwrite(fd, pat, sizeof(pat), PG + 100) == sizeof(pat));

	vhost_mem_init(&m);
	/* Offset PG + 100 is not page aligned; size not a page multiple either. */
	CHECK_EQ(vhost_mem_add(&m, 0x5000, 3 * PG + 5, 0x5000, PG + 100, dup(fd)), 0);
	h = vhost_mem_gpa_to_host(&m, 0x5000, sizeof(pat));
	REQUIRE(h != NULL);
	CHECK_MEM(h, pat, sizeof(pat));
	/* Last byte is reachable, one more is not. */
	CHECK(vhost_mem_gpa_to_host(&m, 0x5000 + 3 * PG + 4, 1) != NULL);
	CHECK(vhost_mem_gpa_to_host(&m, 0x5000 + 3 * PG + 4, 2) == NULL);
	CHECK(vhost_mem_gpa_to_host(&m, 0x5000 + 3 * PG + 5, 0) == NULL);
	*(uint8_t *)vhost_mem_gpa_to_host(&m, 0x5000 + 3 * PG + 4, 1) = 0x5a;
	vhost_mem_clear(&m);
	{
		uint8_t b = 0;

		CHECK_EQ(pread(fd, &b, 1, PG + 100 + 3 * PG + 4), 1);
		CHECK_EQ(b, 0x5a);
	}
	close(fd);
}

static void test_refuse(void)
{
	struct vhost_mem m;
	int fd = make_memfd(8 * PG), d;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(vhost_mem_add(&m, 0x10000, 2 * PG, 0x10000, 0, dup(fd)), 0);

	/* Every refusal closes the fd too. */
	d = dup(fd);
	CHECK_EQ(vhost_mem_add(&m, 0x20000, 0, 0x20000, 0, d), -EINVAL);
	CHECK(!fd_is_open(d));
	/* Overlaps: inside, straddling the start, straddling the end, covering. */
	d = dup(fd);
	CHECK_EQ(vhost_mem_add(&m, 0x10000 + PG, PG, 0, 0, d), -EEXIST);
	CHECK(!fd_is_open(d));
	CHECK_EQ(vhost_mem_add(&m, 0x10000 - PG, 2 * PG, 0, 0, dup(fd)), -EEXIST);
	CHECK_EQ(vhost_mem_add(&m, 0x10000 + 2 * PG - 1, 2 * PG, 0, 0, dup(fd)), -EEXIST);
	CHECK_EQ(vhost_mem_add(&m, 0x0, 0x100000, 0, 0, dup(fd)), -EEXIST);
	/* Adjacent on both sides is fine. */
	CHECK_EQ(vhost_mem_add(&m, 0x10000 - PG, PG, 0, 0, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x10000 + 2 * PG, PG, 0, PG, dup(fd)), 0);
	CHECK_EQ(m.nregions, 3);

	/* Wrapping ranges. */
	CHECK_EQ(vhost_mem_add(&m, UINT64_MAX - PG + 1, PG, 0, 0, dup(fd)), -EINVAL);
	CHECK_EQ(vhost_mem_add(&m, 0x900000, PG, UINT64_MAX - 10, 0, dup(fd)), -EINVAL);
	CHECK_EQ(vhost_mem_add(&m, 0x900000, PG, 0, UINT64_MAX - 10, dup(fd)), -EINVAL);
	CHECK_EQ(vhost_mem_add(&m, 0x900000, UINT64_MAX, 0, 0, dup(fd)), -EINVAL);
	/* Past the end of the file (would SIGBUS on access). */
	CHECK_EQ(vhost_mem_add(&m, 0x900000, 8 * PG, 0, PG, dup(fd)), -EINVAL);
	/* Bad fd. */
	CHECK_EQ(vhost_mem_add(&m, 0x900000, PG, 0, 0, -1), -EBADF);
	CHECK_EQ(m.nregions, 3);

	/* Remove needs an exact match. */
	CHECK_EQ(vhost_mem_remove(&m, 0x10000, PG, 0x10000), -ENOENT);
	CHECK_EQ(vhost_mem_remove(&m, 0x10000, 2 * PG, 0x10001), -ENOENT);
	CHECK_EQ(vhost_mem_remove(&m, 0x10000 + PG, 2 * PG, 0x10000), -ENOENT);
	CHECK_EQ(vhost_mem_remove(&m, 0x10, 2 * PG, 0x10000), -ENOENT);
	CHECK_EQ(vhost_mem_remove(&m, 0x10000, 2 * PG, 0x10000), 0);
	CHECK_EQ(vhost_mem_remove(&m, 0x10000, 2 * PG, 0x10000), -ENOENT);
	CHECK_EQ(m.nregions, 2);
	CHECK(vhost_mem_gpa_to_host(&m, 0x10000, 1) == NULL);

	vhost_mem_clear(&m);
	close(fd);
}

static void test_high_addresses(void)
{
	struct vhost_mem m;
	int fd = make_memfd(2 * PG);
	const uint64_t g = UINT64_MAX - 2 * PG + 1; /* last byte at UINT64_MAX - PG */
	struct iovec iov[4];

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(vhost_mem_add(&m, g, PG, UINT64_MAX - PG, 0, dup(fd)), 0);
	CHECK(vhost_mem_gpa_to_host(&m, g + PG - 1, 1) != NULL);
	CHECK(vhost_mem_gpa_to_host(&m, g + PG - 1, 2) == NULL);
	CHECK(vhost_mem_gpa_to_host(&m, g, UINT64_MAX) == NULL);
	CHECK(vhost_mem_gpa_to_host(&m, g + 1, UINT64_MAX - 1) == NULL);
	CHECK(vhost_mem_gpa_to_host(&m, UINT64_MAX, 1) == NULL);
	CHECK(vhost_mem_gpa_to_host(&m, UINT64_MAX, 0) == NULL);
	CHECK(vhost_mem_uva_to_host(&m, UINT64_MAX - 1, 1) != NULL);
	CHECK(vhost_mem_uva_to_host(&m, UINT64_MAX - 1, 2) == NULL);
	CHECK(vhost_mem_uva_to_host(&m, UINT64_MAX, UINT64_MAX) == NULL);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, g, PG, iov, 4), 1);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, g + 8, UINT64_MAX, iov, 4), -EFAULT);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, UINT64_MAX, 1, iov, 4), -EFAULT);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, UINT64_MAX, 2, iov, 4), -EFAULT);
	/* Huge lengths from low addresses. */
	CHECK(vhost_mem_gpa_to_host(&m, 0, UINT64_MAX) == NULL);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0, UINT64_MAX, iov, 4), -EFAULT);
	vhost_mem_clear(&m);
	close(fd);
}

static void test_iov_split(void)
{
	struct vhost_mem m;
	int fd = make_memfd(16 * PG);
	struct iovec iov[4];
	uint32_t v;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	/* Three adjacent regions from scattered file pages, then a gap. */
	CHECK_EQ(vhost_mem_add(&m, 0x0000, PG, 0x0000, 7 * PG, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x2000, PG, 0x2000, 3 * PG, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x1000, PG, 0x1000, 1 * PG, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x4000, PG, 0x4000, 9 * PG, dup(fd)), 0);

	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x0, 3 * PG, iov, 4), 3);
	memcpy(&v, iov[0].iov_base, 4);
	CHECK_EQ(v, 7);
	memcpy(&v, iov[1].iov_base, 4);
	CHECK_EQ(v, 1);
	memcpy(&v, iov[2].iov_base, 4);
	CHECK_EQ(v, 3);
	CHECK_EQ(iov[0].iov_len + iov[1].iov_len + iov[2].iov_len, 3 * PG);

	/* Across one boundary, unaligned ends. */
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0xffe, 4, iov, 4), 2);
	CHECK(iov[0].iov_len == 2 && iov[1].iov_len == 2);
	CHECK(iov[1].iov_base == vhost_mem_gpa_to_host(&m, 0x1000, 1));
	/* Too few iovecs. */
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x0, 3 * PG, iov, 2), -E2BIG);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x0, 1, iov, 0), -E2BIG);
	/* Into the gap. */
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x2000, PG + 1, iov, 4), -EFAULT);
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x3fff, 2, iov, 4), -EFAULT);
	CHECK(vhost_mem_gpa_to_host(&m, 0xfff, 2) == NULL); /* no chaining here */
	/* Empty range. */
	CHECK_EQ(vhost_mem_gpa_to_iov(&m, 0x3000, 0, iov, 4), 0);
	vhost_mem_clear(&m);
	close(fd);
}

static void test_held_reference(void)
{
	struct vhost_mem m;
	int fd = make_memfd(4 * PG);
	struct vhost_mem_region *r, *r2;
	uint8_t *h, *h2;
	uint64_t gen;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(vhost_mem_add(&m, 0x1000, 2 * PG, 0x1000, 0, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x9000, PG, 0x9000, 0, dup(fd)), 0);
	r = vhost_mem_find(&m, 0x1800);
	REQUIRE(r != NULL);
	vhost_mem_region_get(r);
	h = vhost_mem_gpa_to_host(&m, 0x1000, 2 * PG);
	REQUIRE(h != NULL);

	gen = m.generation;
	CHECK_EQ(vhost_mem_remove(&m, 0x1000, 2 * PG, 0x1000), 0);
	CHECK(m.generation > gen);
	CHECK(vhost_mem_region_dead(r));
	CHECK(vhost_mem_gpa_to_host(&m, 0x1000, 1) == NULL);
	CHECK(vhost_mem_find(&m, 0x1000) == NULL);
	/* Same GPA may be reused at once by a new region. */
	CHECK_EQ(vhost_mem_add(&m, 0x1000, PG, 0x1000, PG, dup(fd)), 0);
	/* The holder's mapping still works. */
	CHECK(is_mapped(h, 2 * PG));
	h[PG + 5] = 0x42;
	CHECK_EQ(h[PG + 5], 0x42);
	vhost_mem_region_put(r);
	CHECK(!is_mapped(h, 2 * PG));

	/* clear() with a holder: same rule. */
	r2 = vhost_mem_find(&m, 0x9000);
	REQUIRE(r2 != NULL);
	vhost_mem_region_get(r2);
	h2 = r2->host;
	vhost_mem_clear(&m);
	CHECK(vhost_mem_region_dead(r2));
	CHECK(is_mapped(h2, PG));
	CHECK_EQ(*(uint32_t *)h2, 0);
	vhost_mem_region_put(r2);
	CHECK(!is_mapped(h2, PG));
	close(fd);
}

static uint32_t rng_state = 12345;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

static void shuffle(unsigned *a, unsigned n)
{
	unsigned i;

	for (i = n - 1; i > 0; i--) {
		unsigned j = rnd() % (i + 1), t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

static void test_many_regions(void)
{
	enum { N = 500 };
	static unsigned order[VHOST_MEM_MAX_REGIONS];
	struct vhost_mem m;
	int fd = make_memfd(VHOST_MEM_MAX_REGIONS * PG);
	unsigned i, k, bad = 0;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	for (i = 0; i < VHOST_MEM_MAX_REGIONS; i++)
		order[i] = i;
	shuffle(order, N);
	/* Region i: gpa i * 2 pages (gaps between), file page i. */
	for (k = 0; k < N; k++) {
		i = order[k];
		if (vhost_mem_add(&m, (uint64_t)i * 2 * PG, PG, 0x40000000ull + i * PG,
				  (uint64_t)i * PG, dup(fd)) != 0)
			bad++;
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(m.nregions, N);
	for (i = 1; i < m.nregions; i++)
		if (m.regions[i - 1]->gpa >= m.regions[i]->gpa)
			bad++;
	CHECK_EQ(bad, 0);
	for (i = 0; i < N; i++) {
		uint32_t *p = vhost_mem_gpa_to_host(&m, (uint64_t)i * 2 * PG, 4);
		uint32_t *u = vhost_mem_uva_to_host(&m, 0x40000000ull + i * PG, 4);

		if (!p || *p != i || p != u)
			bad++;
		if (vhost_mem_gpa_to_host(&m, (uint64_t)i * 2 * PG + PG, 1))
			bad++; /* the gap */
	}
	CHECK_EQ(bad, 0);

	/* Fill to the limit, then refuse. */
	for (i = N; i < VHOST_MEM_MAX_REGIONS; i++)
		CHECK_EQ(vhost_mem_add(&m, (uint64_t)i * 2 * PG, PG, 0x40000000ull + i * PG,
				       (uint64_t)i * PG, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x10000000, PG, 0, 0, dup(fd)), -ENOSPC);

	/* Remove in another order; the rest stays reachable. */
	shuffle(order, VHOST_MEM_MAX_REGIONS);
	for (k = 0; k < VHOST_MEM_MAX_REGIONS; k++) {
		i = order[k];
		if (vhost_mem_remove(&m, (uint64_t)i * 2 * PG, PG, 0x40000000ull + i * PG))
			bad++;
		if (vhost_mem_gpa_to_host(&m, (uint64_t)i * 2 * PG, 1))
			bad++;
		if (k + 1 < VHOST_MEM_MAX_REGIONS) {
			unsigned j = order[k + 1];
			uint32_t *p = vhost_mem_gpa_to_host(&m, (uint64_t)j * 2 * PG, 4);

			if (!p || *p != j)
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(m.nregions, 0);
	vhost_mem_clear(&m);
	close(fd);
}


/*
 * Truncation: a sealable memfd is sealed against shrinking; an unsealable one
 * is guarded: after the front-end shrinks it, accesses beyond the new end
 * read zeros instead of killing us, the table counts the fault and signals
 * its fault fd, dead regions too. Pages before the cut are untouched.
 */
static void test_seal_or_guard(void)
{
	struct vhost_mem m;
	unsigned g0 = vhost_mem_guarded_regions();
	int fs = memfd_create("tvm-seal", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int fu = make_memfd(4 * PG);
	int fss = memfd_create("tvm-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct vhost_mem_region *rs, *ru, *rss;
	const uint32_t marker = 0xabcd1234;
	volatile uint8_t *h;
	uint64_t cnt = 0;

	REQUIRE(fs >= 0 && fu >= 0 && fss >= 0 && efd >= 0);
	REQUIRE(ftruncate(fs, 4 * PG) == 0 && ftruncate(fss, 4 * PG) == 0);
	REQUIRE(pwrite(fu, &marker, sizeof(marker), 0) == sizeof(marker));
	/* Sealing itself sealed, shrink not: cannot be sealed by us. */
	REQUIRE(fcntl(fss, F_ADD_SEALS, F_SEAL_SEAL) == 0);
	vhost_mem_init(&m);
	vhost_mem_set_fault_fd(&m, efd);
	CHECK_EQ(vhost_mem_add(&m, 0x10000, 4 * PG, 0x10000, 0, dup(fs)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x20000, 4 * PG, 0x20000, 0, dup(fu)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x30000, 4 * PG, 0x30000, 0, dup(fss)), 0);
	rs = vhost_mem_find(&m, 0x10000);
	ru = vhost_mem_find(&m, 0x20000);
	rss = vhost_mem_find(&m, 0x30000);
	REQUIRE(rs && ru && rss);

	CHECK(rs->sealed);
	CHECK_EQ(rs->guard, -1);
	CHECK(fcntl(fs, F_GET_SEALS) & F_SEAL_SHRINK);
	errno = 0;
	CHECK_EQ(ftruncate(fs, PG), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(ftruncate(fs, 8 * PG), 0); /* growing is the front-end's business */
	CHECK(!ru->sealed && ru->guard >= 0);
	CHECK(!rss->sealed && rss->guard >= 0);
	CHECK_EQ(vhost_mem_guarded_regions(), g0 + 2);

	/* Cut to one page. */
	REQUIRE(ftruncate(fu, PG) == 0);
	h = ru->host;
	CHECK_EQ(vhost_mem_faults(&m), 0);
	CHECK_EQ(*(volatile uint32_t *)(h + 2 * PG), 0); /* was 2: faulted */
	CHECK_EQ(vhost_mem_faults(&m), 1);
	CHECK_EQ(read(efd, &cnt, sizeof(cnt)), (ssize_t)sizeof(cnt));
	CHECK_EQ(cnt, 1);
	h[3 * PG + 1] = 9; /* the rest of the region was replaced at once */
	CHECK_EQ(h[3 * PG + 1], 9);
	CHECK_EQ(vhost_mem_faults(&m), 1);
	CHECK_EQ(*(volatile uint32_t *)h, marker); /* before the cut: the file */

	/* Removed but held: still guarded, still reported here. */
	vhost_mem_region_get(ru);
	CHECK_EQ(vhost_mem_remove(&m, 0x20000, 4 * PG, 0x20000), 0);
	CHECK_EQ(vhost_mem_ndead(&m), 1);
	CHECK_EQ(*(volatile uint32_t *)(h + PG), 0); /* page 1: still the file */
	CHECK_EQ(vhost_mem_faults(&m), 2);
	vhost_mem_region_put(ru);
	CHECK_EQ(vhost_mem_ndead(&m), 0);
	CHECK_EQ(vhost_mem_guarded_regions(), g0 + 1);

	/* A fresh account after clear(). */
	vhost_mem_clear(&m);
	CHECK_EQ(vhost_mem_faults(&m), 0);
	CHECK_EQ(vhost_mem_guarded_regions(), g0);
	close(fs);
	close(fu);
	close(fss);
	close(efd);
}

/* In a child: touch a truncated mapping that is not a region (how = 0), or
 * send ourselves SIGBUS (how = 1). Returns the wait status. */
static int sigbus_child(int how)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		struct rlimit no = { 0, 0 };
		int fd = make_memfd(2 * PG);
		volatile uint32_t *p;

		setrlimit(RLIMIT_CORE, &no);
		if (fd < 0)
			_exit(3);
		p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			_exit(3);
		if (how == 0)
			(void)p[PG / 4];
		else
			raise(SIGBUS);
		_exit(0); /* survived: wrong */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* SIGBUS anywhere else keeps its old meaning: the process dies. */
static void test_sigbus_elsewhere(void)
{
	struct vhost_mem m;
	int fd = make_memfd(PG);

	/* Make sure the handler is installed (a guarded region). */
	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(vhost_mem_add(&m, 0x1000, PG, 0x1000, 0, dup(fd)), 0);
	REQUIRE(m.nregions == 1 && m.regions[0]->guard >= 0);
	for (int how = 0; how < 2; how++) {
		int st = sigbus_child(how);

#ifdef VRDMA_SANITIZE
		/* The sanitizer's own handler was there before ours: it
		 * reports and exits non-zero. */
		CHECK(st != -1 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0));
		CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 3);
#else
		CHECK(st != -1 && WIFSIGNALED(st));
		CHECK_EQ(WTERMSIG(st), SIGBUS);
#endif
	}
	vhost_mem_clear(&m);
	close(fd);
}

/* Live + dead regions together are bounded; clear() starts a new account. */
static void test_dead_budget(void)
{
	struct vhost_mem m;
	struct vhost_mem_region *r[3];
	int fd = make_memfd(8 * PG);
	uint8_t *h0;

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	CHECK_EQ(m.max_dead, VHOST_MEM_MAX_DEAD);
	m.max_regions = 3;
	m.max_dead = 2;
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(vhost_mem_add(&m, 0x10000 * (i + 1), PG, 0x10000 * (i + 1), i * PG,
				       dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x90000, PG, 0x90000, 0, dup(fd)), -ENOSPC);
	for (unsigned i = 0; i < 3; i++) {
		r[i] = vhost_mem_find(&m, 0x10000 * (i + 1));
		REQUIRE(r[i]);
		vhost_mem_region_get(r[i]);
	}
	h0 = r[0]->host;
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(vhost_mem_remove(&m, 0x10000 * (i + 1), PG, 0x10000 * (i + 1)), 0);
	CHECK_EQ(m.nregions, 0);
	CHECK_EQ(vhost_mem_ndead(&m), 3);
	/* 3 dead: two more live make 5 = 3 + 2, then no more. */
	CHECK_EQ(vhost_mem_add(&m, 0x50000, PG, 0x50000, 0, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x60000, PG, 0x60000, 0, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x70000, PG, 0x70000, 0, dup(fd)), -ENOSPC);
	vhost_mem_region_put(r[2]);
	CHECK_EQ(vhost_mem_ndead(&m), 2);
	CHECK_EQ(vhost_mem_add(&m, 0x70000, PG, 0x70000, 0, dup(fd)), 0);
	/* clear(): the holders keep their mappings; the account is new. */
	vhost_mem_clear(&m);
	CHECK_EQ(vhost_mem_ndead(&m), 0);
	CHECK(is_mapped(h0, PG));
	CHECK_EQ(*(uint32_t *)h0, 0);
	vhost_mem_region_put(r[0]);
	vhost_mem_region_put(r[1]);
	CHECK(!is_mapped(h0, PG));
	close(fd);
}

/* User address lookups: sorted index, overlapping ranges, bounded scan. */
static void test_uva_lookup(void)
{
	struct vhost_mem m;
	struct vhost_mem_region *a, *b, *c;
	int fd = make_memfd(32 * PG);

	REQUIRE(fd >= 0);
	vhost_mem_init(&m);
	/* B lies inside A's user range (another GPA), C further up. */
	CHECK_EQ(vhost_mem_add(&m, 0x300000, 2 * PG, 0x7010000, 10 * PG, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x100000, 8 * PG, 0x7000000, 0, dup(fd)), 0);
	CHECK_EQ(vhost_mem_add(&m, 0x200000, PG, 0x7002000, 12 * PG, dup(fd)), 0);
	a = vhost_mem_find(&m, 0x100000);
	b = vhost_mem_find(&m, 0x200000);
	c = vhost_mem_find(&m, 0x300000);
	REQUIRE(a && b && c);
	CHECK(vhost_mem_find_uva(&m, 0x7002100, 16) == b);
	CHECK(vhost_mem_find_uva(&m, 0x7002800, PG) == a); /* runs past B, not A */
	CHECK(vhost_mem_find_uva(&m, 0x7005000, 16) == a);
	CHECK(vhost_mem_find_uva(&m, 0x7000000, 0) == a);
	CHECK(vhost_mem_find_uva(&m, 0x7008000, 1) == NULL);
	CHECK(vhost_mem_find_uva(&m, 0x6fff000, 1) == NULL);
	CHECK(vhost_mem_find_uva(&m, 0x7010000 + 2 * PG - 1, 1) == c);
	CHECK(vhost_mem_find_uva(&m, 0x7010000 + 2 * PG - 1, 2) == NULL);
	CHECK(vhost_mem_find_uva(&m, UINT64_MAX, 1) == NULL);
	CHECK(vhost_mem_find_uva(&m, 0x7000000, UINT64_MAX) == NULL);
	CHECK(vhost_mem_uva_to_host(&m, 0x7010000 + 5, 4) == c->host + 5);
	CHECK_EQ(*(uint32_t *)vhost_mem_uva_to_host(&m, 0x7002000, 4), 12);
	CHECK_EQ(vhost_mem_remove(&m, 0x200000, PG, 0x7002000), 0);
	CHECK(vhost_mem_find_uva(&m, 0x7002100, 16) == a);
	CHECK_EQ(vhost_mem_remove(&m, 0x100000, 8 * PG, 0x7000000), 0);
	CHECK(vhost_mem_find_uva(&m, 0x7002100, 16) == NULL);
	CHECK(vhost_mem_find_uva(&m, 0x7010000, 16) == c);
	vhost_mem_clear(&m);

	/* 20 regions at one user address, the largest indexed first: a range
	 * only it contains is not searched for that far (hostile layout). */
	vhost_mem_init(&m);
	for (unsigned k = 0; k < 20; k++)
		CHECK_EQ(vhost_mem_add(&m, 0x1000000 * (k + 1), (20 - k) * PG, 0x9000000, 0,
				       dup(fd)), 0);
	CHECK(vhost_mem_find_uva(&m, 0x9000000, 1) != NULL);
	CHECK(vhost_mem_find_uva(&m, 0x9000000 + 19 * PG, 1) == NULL);
	CHECK(vhost_mem_find_uva(&m, 0x9000000 + 3 * PG, 1) != NULL);
	vhost_mem_clear(&m);
	close(fd);
}

int main(void)
{
	TEST_PROGRAM("test_vhost_mem");
	vlog_level = VLOG_ERR;
	RUN(test_add_translate);
	RUN(test_unaligned_offset);
	RUN(test_refuse);
	RUN(test_high_addresses);
	RUN(test_iov_split);
	RUN(test_held_reference);
	RUN(test_many_regions);
	RUN(test_seal_or_guard);
	RUN(test_sigbus_elsewhere);
	RUN(test_dead_budget);
	RUN(test_uva_lookup);
	return TEST_DONE();
}
