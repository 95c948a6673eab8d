/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test build of libvrdma-devfiles.so (build/tests/lib): the device
 * files of the fake devices too, as many as VRDMA_FAKE_DEVICE=N names
 * (the count tests/fake/provider_fake.c uses: 1..8, any other non-zero
 * value 1).
 */
#include <stdlib.h>
#include <string.h>

unsigned int devfiles_test_count(void) __attribute__((visibility("hidden")));

unsigned int devfiles_test_count(void)
{
	const char *e = getenv("VRDMA_FAKE_DEVICE");
	long n;

	if (!e || !*e || strcmp(e, "0") == 0)
		return 0;
	n = strtol(e, NULL, 10);
	return n >= 1 && n <= 8 ? (unsigned int)n : 1;
}
