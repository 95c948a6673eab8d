/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Security of one device (netdev_sec.h): options, MAC pinning and changes,
 * the transmit check and the ADD_GID check.
 */
#include "backend/netdev_sec.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "backend/netdev_priv.h"
#include "roce/roce_tp.h"
#include "vhost/vhost_mem.h"
#include "vrdma/virtio_net_roce.h"

void netdev_sec_cfg_defaults(struct netdev_cfg *cfg)
{
	memset(&cfg->psec, 0, sizeof(cfg->psec));
	cfg->mem_max = NETDEV_DEFAULT_MEM_MAX;
	cfg->state_mem_max = NETDEV_DEFAULT_STATE_MEM_MAX;
}

static int sec_err(char *err, size_t errlen, const char *key, const char *val,
		   const char *what)
{
	snprintf(err, errlen, "%s '%s': expected %s", key, val, what);
	return -EINVAL;
}

static int parse_onoff(const char *val, bool *out)
{
	if (!strcmp(val, "on"))
		*out = true;
	else if (!strcmp(val, "off"))
		*out = false;
	else
		return -1;
	return 0;
}

/* SIZE: bytes with an optional K, M, G or T suffix (powers of 1024). */
static int parse_size(const char *val, uint64_t min, uint64_t *out)
{
	unsigned long long v;
	char *end;
	unsigned shift = 0;

	if (!*val || *val == '-' || *val == '+')
		return -1;
	errno = 0;
	v = strtoull(val, &end, 10);
	if (errno || end == val)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (*end || v > (UINT64_MAX >> shift) || (v << shift) < min)
		return -1;
	*out = v << shift;
	return 0;
}

int netdev_sec_cfg_key(struct netdev_cfg *cfg, const char *key, const char *val,
		       char *err, size_t errlen)
{
	bool on;
	int rc;

	if (!strcmp(key, "port-security")) {
		if (parse_onoff(val, &on) < 0)
			return sec_err(err, errlen, key, val, "on or off");
		cfg->psec.off = !on;
	} else if (!strcmp(key, "mac-change")) {
		if (parse_onoff(val, &on) < 0)
			return sec_err(err, errlen, key, val, "on or off");
		cfg->psec.mac_change = on;
	} else if (!strcmp(key, "allow-ip")) {
		rc = psec_cfg_allow(&cfg->psec, val);
		if (rc == -ENOSPC) {
			snprintf(err, errlen, "allow-ip: at most %d per device", PSEC_ALLOW_MAX);
			return -EINVAL;
		}
		if (rc < 0)
			return sec_err(err, errlen, key, val, "an IPv4 or IPv6 ADDR[/PREFIX]");
	} else if (!strcmp(key, "mem")) {
		if (parse_size(val, 1ull << 20, &cfg->mem_max) < 0)
			return sec_err(err, errlen, key, val, "a size of at least 1M (K, M, G, T)");
	} else if (!strcmp(key, "state-mem")) {
		if (parse_size(val, 1ull << 20, &cfg->state_mem_max) < 0)
			return sec_err(err, errlen, key, val, "a size of at least 1M (K, M, G, T)");
	} else {
		return 1;
	}
	return 0;
}

int netdev_sec_port_init(struct psec *ps, struct sw *sw, struct port *port,
			 const struct netdev_cfg *c, const void *home)
{
	int rc;

	psec_init(ps, &c->psec, c->mac, c->has_ip4 ? &c->ip4 : NULL,
		  c->has_ip6 ? &c->ip6 : NULL);
	ps->home = home;
	rc = sw_mac_pin(sw, c->mac, port);
	if (rc < 0) {
		LOG_ERR("%s: cannot reserve MAC %02x:%02x:%02x:%02x:%02x:%02x on the switch: %s",
			c->socket, c->mac[0], c->mac[1], c->mac[2], c->mac[3], c->mac[4],
			c->mac[5], rc == -EADDRINUSE ? "another device has it" : strerror(-rc));
		return rc;
	}
	/* (the switch's pin covers this thread; the registry every thread) */
	rc = psec_register(ps);
	if (rc < 0) {
		LOG_ERR("%s: cannot reserve MAC %02x:%02x:%02x:%02x:%02x:%02x: another device "
			"has it (on another loop thread)", c->socket, c->mac[0], c->mac[1],
			c->mac[2], c->mac[3], c->mac[4], c->mac[5]);
		sw_mac_unpin(sw, c->mac, port);
		return rc;
	}
	return 0;
}

void netdev_sec_port_fini(struct psec *ps)
{
	psec_unregister(ps);
	/* the switch forgets the port's entries when it detaches */
}

int netdev_sec_init(struct netdev_port *dp)
{
	int rc;

	/* the budgets are the device's: its contexts charge them together */
	dp->mem_budget = vhost_mem_budget_new(dp->cfg.mem_max);
	if (!dp->mem_budget)
		return -ENOMEM;
	dp->state_budget.max = dp->cfg.state_mem_max;
	rc = netdev_sec_port_init(&dp->psec, dp->sw, &dp->port, &dp->cfg,
				  dp->cfg.roce ? (const void *)dp->loop : NULL);
	if (rc < 0) {
		vhost_mem_budget_put(dp->mem_budget);
		dp->mem_budget = NULL;
	}
	return rc;
}

void netdev_sec_attach_server(struct netdev *nd)
{
	struct vhost_mem *m = vhost_server_mem(nd->vs);

	m->max_mapped = nd->cfg.mem_max;
	m->budget = nd->dp->mem_budget;
	if (nd->roce_tp) {
		roce_tp_set_state_budget(nd->roce_tp, nd->cfg.state_mem_max);
		roce_tp_share_state_budget(nd->roce_tp, &nd->dp->state_budget);
		nd->roce_tp->log_rl = &nd->log_rl; /* its refusals are logged as its own */
	}
}

void netdev_sec_fini(struct netdev_port *dp)
{
	netdev_sec_port_fini(&dp->psec);
	/* regions still mapped keep their own reference */
	vhost_mem_budget_put(dp->mem_budget);
	dp->mem_budget = NULL;
}

bool netdev_sec_addr_ok(struct psec *ps, const uint8_t gid[16], struct vlog_rl *rl,
			const char *name)
{
	if (psec_addr_ok(ps, gid))
		return true;
	ps->stats.gid_refused++;
	LOG_PEER_RL(rl, "%s: ADD_GID of an address not the device's refused (see allow-ip=)",
		    name);
	return false;
}

bool netdev_sec_tx_ok(struct netdev *nd, const struct pkt *p)
{
	enum psec_verdict v = psec_check_tx(&nd->dp->psec, p->data, p->len);

	if (v == PSEC_OK)
		return true;
	nd->stats.tx_spoofed++;
	LOG_PEER_RL(&nd->log_rl, "%s: tx frame dropped by port security: %s", nd->cfg.socket,
		    psec_verdict_name(v));
	return false;
}

int netdev_sec_set_mac(struct netdev *nd, const uint8_t mac[6], bool reset)
{
	struct netdev_port *dp = nd->dp;
	struct psec *ps = &dp->psec;
	bool to_cfg = !memcmp(mac, nd->cfg.mac, 6);
	uint8_t old[6];
	int rc;

	/* A reset of one context leaves a MAC that others still use. */
	if (reset && dp->nctx > 1)
		mac = ps->mac;
	if (!memcmp(mac, ps->mac, 6)) {
		memcpy(nd->mac, mac, 6);
		return 0;
	}
	if (!to_cfg) {
		int owner = sw_mac_lookup(nd->sw, mac);

		if (!nd->cfg.psec.off && !nd->cfg.psec.mac_change) {
			ps->stats.mac_refused++;
			LOG_PEER_RL(&nd->log_rl, "%s: MAC change refused (mac-change=off)",
				    nd->cfg.socket);
			return -EPERM;
		}
		if (owner >= 0 && owner != nd->port->id) {
			ps->stats.mac_refused++;
			LOG_PEER_RL(&nd->log_rl, "%s: MAC change to a MAC in use on port %d refused",
				    nd->cfg.socket, owner);
			return -EADDRINUSE;
		}
		rc = sw_mac_pin(nd->sw, mac, nd->port);
		if (rc < 0) {
			ps->stats.mac_refused++;
			LOG_PEER_RL(&nd->log_rl, "%s: MAC change refused: %s", nd->cfg.socket,
				    strerror(-rc));
			return rc;
		}
	}
	/* process-wide: a device of another thread may have it */
	memcpy(old, ps->mac, 6);
	if (psec_claim_mac(ps, mac) < 0) {
		if (!to_cfg)
			sw_mac_unpin(nd->sw, mac, nd->port);
		ps->stats.mac_refused++;
		LOG_PEER_RL(&nd->log_rl, "%s: MAC change to a MAC in use on another thread refused",
			    nd->cfg.socket);
		return -EADDRINUSE;
	}
	/* the configured MAC stays reserved for this device; the port's MAC
	 * is the one every context's frames must carry */
	if (memcmp(old, nd->cfg.mac, 6))
		sw_mac_unpin(nd->sw, old, nd->port);
	memcpy(nd->mac, mac, 6);
	if (!reset)
		netdev_roce_set_mac(nd, mac);
	return 0;
}

bool netdev_sec_ctrl_ok(struct netdev *nd, uint8_t cls, uint8_t cmd, const void *data,
			size_t len)
{
	struct virtio_rdma_cmd_add_gid ag;

	if (cls != VIRTIO_NET_CTRL_ROCE || cmd != VIRTIO_NET_CTRL_ROCE_ADD_GID ||
	    len < sizeof(ag))
		return true;
	memcpy(&ag, data, sizeof(ag));
	return netdev_sec_addr_ok(&nd->dp->psec, ag.gid, &nd->log_rl, nd->cfg.socket);
}

void netdev_sec_dump(const struct psec *ps, const struct port *port,
		     const struct vhost_mem_budget *mem, const struct roce_budget *state, FILE *f)
{
	const struct psec_stats *s = &ps->stats;

	fprintf(f, "  security tx_spoofed_mac %" PRIu64 " tx_spoofed_arp %" PRIu64
		" tx_spoofed_ip %" PRIu64 " tx_spoofed_nd %" PRIu64 " tx_bad_vlan %" PRIu64
		" gid_refused %" PRIu64 " mac_refused %" PRIu64 " rx_spoofed %" PRIu64
		" learn_limited %" PRIu64 " mem_refused %" PRIu64 "\n",
		s->tx_spoofed_mac, s->tx_spoofed_arp, s->tx_spoofed_ip, s->tx_spoofed_nd,
		s->tx_bad_vlan, s->gid_refused, s->mac_refused, port->stats.rx_spoofed,
		port->stats.learn_limited, mem ? mem->refused : 0);
	/* the device's totals over all its contexts */
	fprintf(f, "  device_budget mem_mapped %" PRIu64 " mem_max %" PRIu64
		" state_mem %" PRIu64 " state_mem_max %" PRIu64 "\n",
		mem ? mem->mapped : 0, mem ? mem->max : 0, state->used, state->max);
}

void netdev_sec_dump_port(const struct netdev_port *dp, FILE *f)
{
	netdev_sec_dump(&dp->psec, &dp->port, dp->mem_budget, &dp->state_budget, f);
}

void netdev_sec_dump_stats(const struct netdev *nd, FILE *f)
{
	const struct vhost_mem *mem = vhost_server_mem(nd->vs);

	fprintf(f, "  logs_suppressed %llu\n"
		"  budget mem_mapped %" PRIu64 " mem_refused %" PRIu64 " state_mem %" PRIu64 "\n",
		nd->log_rl.suppressed, vhost_mem_mapped(mem), mem->mapped_refused,
		nd->roce_tp ? nd->roce_tp->state_mem : 0);
}
