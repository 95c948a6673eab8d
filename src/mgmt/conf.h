/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's configuration file (vrdma.conf(5)): INI-style sections,
 * "[global]" for daemon options and one "[device NAME]" per device with the
 * keys of --device. Untrusted input: every error names its line.
 */
#ifndef VRDMA_MGMT_CONF_H
#define VRDMA_MGMT_CONF_H

#include <stdbool.h>
#include <stddef.h>

#define MCONF_MAX_DEVICES 256
#define MCONF_MAX_UPLINKS 16
#define MCONF_NAME_MAX 32         /* device names, with the NUL */
#define MCONF_PATH_MAX 108        /* socket paths (sun_path), with the NUL */
#define MCONF_SPEC_MAX 512        /* a --device string, with the NUL */
#define MCONF_FILE_MAX (1 << 20)  /* bytes read from a file */
#define MCONF_LINE_MAX 1024

/* Default directory of sockets and the control socket's name in it (no
 * ".sock" suffix: vrdma-run picks the first *.sock of the directory). */
#define MCONF_SOCKET_DIR "/run/vrdma"
#define MCONF_CONTROL_NAME "control"

struct mconf_device {
	char name[MCONF_NAME_MAX];
	char spec[MCONF_SPEC_MAX];   /* "socket=PATH,KEY=VALUE..." for netdev_parse_cfg */
	char socket[MCONF_PATH_MAX]; /* resolved socket path */
	unsigned line;               /* of its section header */
};

struct mconf {
	char socket_dir[MCONF_PATH_MAX];
	int socket_mode;             /* -1: not set */
	char socket_group[MCONF_NAME_MAX]; /* "" not set; a name or a number */
	char control[MCONF_PATH_MAX];      /* "" none */
	int poll_us;                 /* -1: not set */
	int threads;                 /* 0: not set; "auto": -1 */
	int streaming;               /* streaming-stores: -1 not set, 1 auto, 0 off */
	int sched_policy;            /* -1: not set; SCHED_OTHER, SCHED_FIFO or SCHED_RR */
	int sched_prio;              /* 1..99 with FIFO and RR */
	char pcap[256];
	char fault[256];
	char uplinks[MCONF_MAX_UPLINKS][64];
	unsigned nuplinks;
	struct mconf_device dev[MCONF_MAX_DEVICES];
	unsigned ndevices;
};

/* Parse len bytes of text (need not be NUL-terminated) into *c.
 * Returns 0, or -EINVAL with "line N: ..." in err. */
int mconf_parse(const char *text, size_t len, struct mconf *c, char *err, size_t errlen);
/* Read and parse path. Returns 0 or -errno with a message in err. */
int mconf_load(const char *path, struct mconf *c, char *err, size_t errlen);
/* Parse a socket mode "0660" (octal, at most 0777). Returns 0 or -EINVAL. */
int mconf_parse_mode(const char *s, int *mode);
/* Parse a scheduling policy "other", "fifo[:PRIO]" or "rr[:PRIO]" (PRIO
 * 1..99, default MCONF_SCHED_PRIO). Returns 0 or -EINVAL. */
#define MCONF_SCHED_PRIO 10
int mconf_parse_sched(const char *s, int *policy, int *prio);
/* Parse streaming-stores: 1 for "auto", 0 for "off", -EINVAL otherwise. */
int mconf_parse_streaming(const char *s);
/* Whether s is a device name: 1..31 of [A-Za-z0-9_.-], not starting with '.'. */
bool mconf_valid_name(const char *s);

#endif /* VRDMA_MGMT_CONF_H */
