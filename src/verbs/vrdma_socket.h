/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a verbs program finds its vrdma devices (shared by vrdma-run and
 * the libvrdma provider of libibverbs.so.1; header-only so both can use it).
 *
 *   VRDMA_SOCKET=PATH[:PATH...]   the vhost-user sockets of the devices, in
 *                                 order: device i is "vrdma<i>"
 *   otherwise                     the first existing socket, in sorted order,
 *                                 of $VRDMA_SOCKET_DIR/NAME.sock (default
 *                                 /run/vrdma/NAME.sock), else /tmp/vrdma0.sock
 */
#ifndef VRDMA_VERBS_SOCKET_H
#define VRDMA_VERBS_SOCKET_H

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VRDMA_SOCKET_ENV      "VRDMA_SOCKET"
#define VRDMA_SOCKET_DIR_ENV  "VRDMA_SOCKET_DIR"
#define VRDMA_SOCKET_DIR      "/run/vrdma"
#define VRDMA_SOCKET_FALLBACK "/tmp/vrdma0.sock"

/* Whether path names an existing unix socket. */
static inline int vrdma_socket_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The default socket (no VRDMA_SOCKET) into buf. Returns 0, or
 * -ENAMETOOLONG when it does not fit. */
static inline int vrdma_socket_default(char *buf, size_t size)
{
	const char *dir = getenv(VRDMA_SOCKET_DIR_ENV);
	char pattern[4096];
	glob_t g;
	size_t i;
	int n;

	if (!dir || !*dir)
		dir = VRDMA_SOCKET_DIR;
	n = snprintf(pattern, sizeof(pattern), "%s/*.sock", dir);
	if (n > 0 && (size_t)n < sizeof(pattern) && glob(pattern, 0, NULL, &g) == 0) {
		/* glob() sorts its matches */
		for (i = 0; i < g.gl_pathc; i++) {
			if (!vrdma_socket_exists(g.gl_pathv[i]))
				continue;
			n = snprintf(buf, size, "%s", g.gl_pathv[i]);
			globfree(&g);
			return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
		}
		globfree(&g);
	}
	n = snprintf(buf, size, "%s", VRDMA_SOCKET_FALLBACK);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The sockets of VRDMA_SOCKET (or the default one) into paths[0..max).
 * Entries that do not fit are skipped. Returns how many were stored. */
static inline int vrdma_socket_list(char (*paths)[256], int max)
{
	const char *env = getenv(VRDMA_SOCKET_ENV);
	const char *p, *end;
	int n = 0;

	if (!env || !*env)
		return max > 0 && vrdma_socket_default(paths[0], 256) == 0 ? 1 : 0;
	for (p = env; *p && n < max; p = *end ? end + 1 : end) {
		size_t len;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		if (!len || len >= 256)
			continue;
		memcpy(paths[n], p, len);
		paths[n][len] = '\0';
		n++;
	}
	return n;
}

#endif /* VRDMA_VERBS_SOCKET_H */
