/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Security of one device: its port security (src/port/port_security.h) and
 * the options that configure it, hooked into the device model by small
 * calls. docs/spec.md "Security model" describes what a driver can and
 * cannot do.
 */
#ifndef VRDMA_BACKEND_NETDEV_SEC_H
#define VRDMA_BACKEND_NETDEV_SEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct netdev;
struct netdev_cfg;
struct netdev_port;
struct pkt;
struct port;
struct psec;
struct roce_budget;
struct sw;
struct vhost_mem_budget;
struct vlog_rl;

#define NETDEV_SEC_KEYS "port-security, mac-change, allow-ip, mem, state-mem"

/* Budgets when not given (docs/spec.md "Security model"). */
#define NETDEV_DEFAULT_MEM_MAX (64ull << 30)        /* mapped guest memory */
#define NETDEV_DEFAULT_STATE_MEM_MAX (1ull << 30)   /* daemon-side queues */

void netdev_sec_cfg_defaults(struct netdev_cfg *cfg);
/* A --device key of this module: 0 parsed, -EINVAL bad value (message in
 * err), 1 not one of ours. */
int netdev_sec_cfg_key(struct netdev_cfg *cfg, const char *key, const char *val,
		       char *err, size_t errlen);

/* Port security of a device port of either model (port attached to sw):
 * ps set up from cfg, the MAC pinned, the addresses registered with home
 * (the loop whose RoCE engine serves the device, NULL if none). Returns 0
 * or -errno (message logged). */
int netdev_sec_port_init(struct psec *ps, struct sw *sw, struct port *port,
			 const struct netdev_cfg *cfg, const void *home);
void netdev_sec_port_fini(struct psec *ps);
/* ADD_GID of gid may run: inside the device's addresses, else counted
 * (gid_refused) and logged under name. */
bool netdev_sec_addr_ok(struct psec *ps, const uint8_t gid[16], struct vlog_rl *rl,
			const char *name);
/* The security counters and the device's budget totals. */
void netdev_sec_dump(const struct psec *ps, const struct port *port,
		     const struct vhost_mem_budget *mem, const struct roce_budget *state, FILE *f);

/* After the device's port is attached: its budgets, then pin the MAC and
 * register the addresses (once per device; its contexts share them).
 * Returns 0 or -errno (message logged). */
int netdev_sec_init(struct netdev_port *dp);
void netdev_sec_fini(struct netdev_port *dp);
/* Once a context's vhost server exists: it charges the device's mem= and
 * state-mem= budgets (totals of all its contexts). */
void netdev_sec_attach_server(struct netdev *nd);

/* A frame the driver sends: true if it may enter the switch (else counted
 * and logged). */
bool netdev_sec_tx_ok(struct netdev *nd, const struct pkt *p);
/* Change the device MAC (driver request of any of its contexts, or the
 * configured one back on a reset of its only context). Returns 0, -EPERM
 * (mac-change=off) or -EADDRINUSE. */
int netdev_sec_set_mac(struct netdev *nd, const uint8_t mac[6], bool reset);
/* A control command of class cls may run (ADD_GID inside the allowed set). */
bool netdev_sec_ctrl_ok(struct netdev *nd, uint8_t cls, uint8_t cmd, const void *data,
			size_t len);
/* Counters of the device (port security) and of one context (budgets). */
void netdev_sec_dump_port(const struct netdev_port *dp, FILE *f);
void netdev_sec_dump_stats(const struct netdev *nd, FILE *f);

#endif /* VRDMA_BACKEND_NETDEV_SEC_H */
