/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvrdma-devfiles.so: the device files of vrdma devices, preloaded by
 * vrdma-run for libraries that look at the file system next to libibverbs.
 *
 * vrdma devices have no kernel side: no /dev/infiniband/uverbsN and no
 * /sys/class/infiniband/<dev>. Some libraries test those before they use a
 * device through libibverbs; UCX (uct_ib_device_is_accessible) only offers
 * a device whose /dev/infiniband/<dev_name> is a character device readable
 * and writable by the process, and reads the RoCE version of a GID from
 * /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>.
 *
 * For the devices of this process (vrdma0 .. vrdma<N-1>, N the number of
 * sockets in VRDMA_SOCKET), and only for them, this library answers:
 *   stat / lstat / access  /dev/infiniband/vrdmaI: a character device
 *                          (major 231, minor 192 + I, mode 0666, like a
 *                          uverbs node), R_OK | W_OK granted
 *   open (read only)       /sys/class/infiniband/vrdmaI/ports/1/gid_attrs/
 *                          types/<index>: "RoCE v2\n" (every GID of a vrdma
 *                          port is RoCE v2), from an anonymous memfd
 * Opening the /dev node itself still fails (ENOENT): libibverbs never does
 * it for these devices. Every other path goes to the C library unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DEVFILES_DEV_PREFIX  "/dev/infiniband/vrdma"
#define DEVFILES_SYS_PREFIX  "/sys/class/infiniband/vrdma"
#define DEVFILES_GID_TYPE    "/ports/1/gid_attrs/types/"
#define DEVFILES_UVERBS_MAJOR 231
#define DEVFILES_UVERBS_MINOR 192
#define DEVFILES_MAX_DEVICES 64

#define DEVFILES_EXPORT __attribute__((visibility("default")))

/* The number of devices the test build of this library serves instead
 * (tests/fake/devfiles/: the fake devices), or 0. Defined only in the test
 * build; the shipped library has no definition and never calls it. */
unsigned int devfiles_test_count(void) __attribute__((weak, visibility("hidden")));

/* Number of vrdma devices of this process (computed once; threads racing
 * at the first call compute the same value). */
static unsigned int devfiles_count(void)
{
	static int cached = -1;
	int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	const char *s;

	if (n >= 0)
		return (unsigned int)n;
	n = devfiles_test_count ? (int)devfiles_test_count() : 0;
	s = getenv("VRDMA_SOCKET");
	if (n == 0 && s && *s) {
		n = 1;
		for (; *s; s++)
			n += *s == ':';
	}
	if (n > DEVFILES_MAX_DEVICES)
		n = DEVFILES_MAX_DEVICES;
	__atomic_store_n(&cached, n, __ATOMIC_RELAXED);
	return (unsigned int)n;
}

/* If path starts with prefix followed by the index of one of our devices,
 * returns the rest of path after the index (and the index), else NULL. */
static const char *devfiles_match(const char *path, const char *prefix, unsigned int *idx)
{
	size_t len = strlen(prefix);
	unsigned int v = 0;
	const char *p;

	if (!path || strncmp(path, prefix, len) != 0)
		return NULL;
	p = path + len;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return NULL;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned int)(*p - '0');
		if (v >= DEVFILES_MAX_DEVICES)
			return NULL;
		p++;
	}
	if (v >= devfiles_count())
		return NULL;
	*idx = v;
	return p;
}

/* Whether path is the /dev node of one of our devices (filling st). */
static bool devfiles_node(const char *path, struct stat *st)
{
	unsigned int idx;
	const char *rest = devfiles_match(path, DEVFILES_DEV_PREFIX, &idx);

	if (!rest || *rest)
		return false;
	if (st) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(DEVFILES_UVERBS_MAJOR, DEVFILES_UVERBS_MINOR + idx);
		st->st_nlink = 1;
		st->st_uid = getuid();
		st->st_gid = getgid();
		st->st_blksize = 4096;
	}
	return true;
}

/* The content of a sysfs file we serve, or NULL. */
static const char *devfiles_sysfs(const char *path)
{
	unsigned int idx;
	const char *rest = devfiles_match(path, DEVFILES_SYS_PREFIX, &idx);
	size_t len = strlen(DEVFILES_GID_TYPE);
	const char *p;

	if (!rest || strncmp(rest, DEVFILES_GID_TYPE, len) != 0)
		return NULL;
	p = rest + len;
	if (!*p || strlen(p) > 3)
		return NULL;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return NULL;
	return "RoCE v2\n";
}

/* A read-only fd holding text, or -1 with errno set. */
static int devfiles_text_fd(const char *text, int flags)
{
	size_t len = strlen(text);
	int fd = memfd_create("vrdma-devfile", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		int err = errno ? errno : EIO;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static void *devfiles_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Whether an open of path with flags is ours; *fd the result. */
static bool devfiles_open(const char *path, int flags, int *fd)
{
	const char *text;

	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_DIRECTORY)))
		return false;
	text = devfiles_sysfs(path);
	if (!text)
		return false;
	*fd = devfiles_text_fd(text, flags);
	return true;
}

DEVFILES_EXPORT int stat(const char *path, struct stat *st)
{
	static int (*next)(const char *, struct stat *);

	if (devfiles_node(path, st))
		return 0;
	if (!next)
		next = (int (*)(const char *, struct stat *))devfiles_next("stat");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(path, st);
}

DEVFILES_EXPORT int lstat(const char *path, struct stat *st)
{
	static int (*next)(const char *, struct stat *);

	if (devfiles_node(path, st))
		return 0;
	if (!next)
		next = (int (*)(const char *, struct stat *))devfiles_next("lstat");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(path, st);
}

/* On x86-64 struct stat64 has the layout of struct stat. */
_Static_assert(sizeof(struct stat64) == sizeof(struct stat), "stat64");

DEVFILES_EXPORT int stat64(const char *path, struct stat64 *st)
{
	static int (*next)(const char *, struct stat64 *);

	if (devfiles_node(path, (struct stat *)st))
		return 0;
	if (!next)
		next = (int (*)(const char *, struct stat64 *))devfiles_next("stat64");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(path, st);
}

/* Programs built against glibc before 2.33 call these. */
DEVFILES_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	static int (*next)(int, const char *, struct stat *);

	if (devfiles_node(path, st))
		return 0;
	if (!next)
		next = (int (*)(int, const char *, struct stat *))devfiles_next("__xstat");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(ver, path, st);
}

DEVFILES_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	static int (*next)(int, const char *, struct stat64 *);

	if (devfiles_node(path, (struct stat *)st))
		return 0;
	if (!next)
		next = (int (*)(int, const char *, struct stat64 *))devfiles_next("__xstat64");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(ver, path, st);
}

DEVFILES_EXPORT int access(const char *path, int mode)
{
	static int (*next)(const char *, int);

	if (devfiles_node(path, NULL))
		return (mode & X_OK) ? (errno = EACCES, -1) : 0;
	if (!next)
		next = (int (*)(const char *, int))devfiles_next("access");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(path, mode);
}

/* open / open64: one of our files, or the C library's call name. */
static int devfiles_open_call(const char *name, const char *path, int flags, mode_t mode)
{
	int (*next)(const char *, int, ...);
	int fd;

	if (devfiles_open(path, flags, &fd))
		return fd;
	next = (int (*)(const char *, int, ...))devfiles_next(name);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(path, flags, mode);
}

/* The mode argument of an open call, present when it may create a file. */
#define DEVFILES_OPEN_MODE(flags, mode)                         \
	do {                                                    \
		if ((flags) & (O_CREAT | __O_TMPFILE)) {        \
			va_list ap;                             \
			va_start(ap, flags);                    \
			mode = (mode_t)va_arg(ap, int);         \
			va_end(ap);                             \
		}                                               \
	} while (0)

DEVFILES_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	DEVFILES_OPEN_MODE(flags, mode);
	return devfiles_open_call("open", path, flags, mode);
}

DEVFILES_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	DEVFILES_OPEN_MODE(flags, mode);
	return devfiles_open_call("open64", path, flags, mode);
}

DEVFILES_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	int (*next)(int, const char *, int, ...);
	mode_t mode = 0;
	int fd;

	DEVFILES_OPEN_MODE(flags, mode);
	if (path[0] == '/' && devfiles_open(path, flags, &fd))
		return fd;
	next = (int (*)(int, const char *, int, ...))devfiles_next("openat");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(dirfd, path, flags, mode);
}
