/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * System helpers shared by the unit tests and the test drivers of
 * tests/tools (linked into both, see the Makefile): file descriptor counts
 * and UNIX socket connections.
 */
#ifndef VRDMA_TESTS_COMMON_TEST_SYS_H
#define VRDMA_TESTS_COMMON_TEST_SYS_H

/* Open file descriptors of process pid (0: this process, not counting the
 * one used to count). -1 when /proc cannot be read. */
int tc_count_fds(int pid);

/* A connected SOCK_STREAM | SOCK_CLOEXEC UNIX socket to path, or -errno
 * (-ENAMETOOLONG when path does not fit sun_path). */
int tc_unix_connect(const char *path);

#endif
