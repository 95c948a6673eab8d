/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who connected to a vhost-user socket: the peer's credentials (SO_PEERCRED),
 * logged with every connection so an operator can tell tenants apart.
 */
#include "vhost/vhost_server.h"

#include <sys/socket.h>

#include "common/log.h"

void vhost_peer_log(const char *name, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr)) {
		LOG_INFO("%s: front-end connected (credentials unknown)", name);
		return;
	}
	LOG_INFO("%s: front-end connected: pid %d uid %u gid %u", name, (int)cr.pid,
		 (unsigned)cr.uid, (unsigned)cr.gid);
}
