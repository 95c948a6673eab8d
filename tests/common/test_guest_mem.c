/* SPDX-License-Identifier: BSD-3-Clause */
/* Guest memory for device-side tests (see test_guest_mem.h). */
#include <sys/mman.h>
#include <unistd.h>

#include "common/test_guest_mem.h"

uint8_t *tc_guest_region(struct vhost_mem *mem, uint64_t gpa, uint64_t bytes)
{
	int fd = memfd_create("tc_guest", 0), fd2;
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0)
		return NULL;
	fd2 = dup(fd);
	/* the table owns fd from here on, success or not */
	if (vhost_mem_add(mem, gpa, bytes, gpa, 0, fd) < 0) {
		close(fd2);
		return NULL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	close(fd2);
	return p == MAP_FAILED ? NULL : p;
}
