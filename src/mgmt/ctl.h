/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control protocol of the daemon (vrdmactl(8)): a client connects to the
 * control socket, writes one request line, reads the answer until EOF. An
 * answer that starts with "error: " is a failure. Requests (words separated
 * by blanks, at most CTL_LINE_MAX bytes of printable ASCII):
 *
 *   [json] dev [show [NAME]]                   devices
 *   [json] res [show] [qp|cq|mr|pd|srq] [dev NAME]   resources
 *   [json] stat [show] [dev NAME]              counters (device, port, QP)
 *   dev add NAME [KEY=VALUE[,KEY=VALUE...]]    hot-plug (keys of --device)
 *   dev del NAME                               hot-unplug
 *   capture start NAME FILE                    pcap of one device's frames
 *   capture stop NAME
 *   reload                                     re-read the config file
 */
#ifndef VRDMA_MGMT_CTL_H
#define VRDMA_MGMT_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "mgmt/conf.h"

#define CTL_LINE_MAX 1024

enum ctl_cmd {
	CTL_DEV_SHOW,
	CTL_RES_SHOW,
	CTL_STAT_SHOW,
	CTL_DEV_ADD,
	CTL_DEV_DEL,
	CTL_CAPTURE_START,
	CTL_CAPTURE_STOP,
	CTL_RELOAD,
};

/* Resource kinds of "res show" (bit mask). */
enum {
	CTL_RES_QP = 1 << 0,
	CTL_RES_CQ = 1 << 1,
	CTL_RES_MR = 1 << 2,
	CTL_RES_PD = 1 << 3,
	CTL_RES_SRQ = 1 << 4,
	CTL_RES_ALL = 0x1f,
};

struct ctl_req {
	enum ctl_cmd cmd;
	bool json;
	unsigned res;                 /* CTL_RES_* with CTL_RES_SHOW */
	char dev[MCONF_NAME_MAX];     /* "" = every device */
	char arg[MCONF_SPEC_MAX];     /* device options or capture file */
};

/* Parse one request (len bytes, a trailing '\n' allowed). Returns 0 or
 * -EINVAL with a message in err. */
int ctl_parse(const char *line, size_t len, struct ctl_req *r, char *err, size_t errlen);

#endif /* VRDMA_MGMT_CTL_H */
