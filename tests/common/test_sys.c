/* SPDX-License-Identifier: BSD-3-Clause */
/* System helpers of the tests (test_sys.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/test_sys.h"

int tc_count_fds(int pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/fd");
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return pid ? n : n - 1; /* not the directory's own fd */
}

int tc_unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}
