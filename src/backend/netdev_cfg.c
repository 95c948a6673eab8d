/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parsing of --device specifications (untrusted command-line input: every
 * value is range checked and every error names the offending key).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "backend/netdev.h"
#include "backend/netdev_sec.h"
#include "vhost/vhost_server.h"

static int cfg_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int cfg_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_u32(const char *s, unsigned long min, unsigned long max, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	/* A device MAC must be unicast and not all zeros. */
	if (mac[0] & 1)
		return -1;
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return -1;
	return 0;
}

/* "ADDR/PREFIX" (prefix optional: 24 for v4, 64 for v6). */
static int parse_prefix(char *s, int af, void *addr, uint8_t *prefix)
{
	char *slash = strchr(s, '/');
	uint32_t p = af == AF_INET ? 24 : 64;

	if (slash) {
		*slash = '\0';
		if (parse_u32(slash + 1, 0, af == AF_INET ? 32 : 128, &p) < 0)
			return -1;
	}
	if (inet_pton(af, s, addr) != 1)
		return -1;
	*prefix = (uint8_t)p;
	return 0;
}

int netdev_parse_cfg(const char *spec, unsigned index, struct netdev_cfg *cfg,
		     char *err, size_t errlen)
{
	char *copy, *save = NULL, *tok;
	bool ext_given = false, srqs_given = false;
	uint64_t rfc_vqs, max_vqs;
	int rc = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->index = index;
	cfg->thread = -1;
	cfg->mtu = NETDEV_DEFAULT_MTU;
	cfg->max_qps = NETDEV_DEFAULT_QPS;
	cfg->max_cqs = NETDEV_DEFAULT_CQS;
	cfg->roce = true;
	cfg->roce_ext = true;
	cfg->max_srqs = NETDEV_DEFAULT_SRQS;
	netdev_sec_cfg_defaults(cfg);
	cfg->max_contexts = NETDEV_DEFAULT_CONTEXTS;
	/* Locally administered default MAC: 02:56:52:00 + index. */
	cfg->mac[0] = 0x02;
	cfg->mac[1] = 0x56;
	cfg->mac[2] = 0x52;
	cfg->mac[3] = (uint8_t)(index >> 16);
	cfg->mac[4] = (uint8_t)(index >> 8);
	cfg->mac[5] = (uint8_t)(index + 1);

	copy = strdup(spec);
	if (!copy)
		return cfg_err(err, errlen, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');
		uint32_t v;

		if (!val) {
			rc = cfg_err(err, errlen, "'%s': expected key=value", tok);
			break;
		}
		*val++ = '\0';
		if (!strcmp(tok, "socket")) {
			if (!*val || strlen(val) >= sizeof(cfg->socket)) {
				rc = cfg_err(err, errlen, "socket path empty or longer than %zu bytes",
					     sizeof(cfg->socket) - 1);
				break;
			}
			strcpy(cfg->socket, val);
		} else if (!strcmp(tok, "mac")) {
			if (parse_mac(val, cfg->mac) < 0) {
				rc = cfg_err(err, errlen, "mac '%s': expected a unicast xx:xx:xx:xx:xx:xx", val);
				break;
			}
		} else if (!strcmp(tok, "ip")) {
			if (parse_prefix(val, AF_INET, &cfg->ip4, &cfg->ip4_prefix) < 0) {
				rc = cfg_err(err, errlen, "ip '%s': expected an IPv4 ADDR[/PREFIX]", val);
				break;
			}
			cfg->has_ip4 = true;
		} else if (!strcmp(tok, "ip6")) {
			if (parse_prefix(val, AF_INET6, &cfg->ip6, &cfg->ip6_prefix) < 0) {
				rc = cfg_err(err, errlen, "ip6 '%s': expected an IPv6 ADDR[/PREFIX]", val);
				break;
			}
			cfg->has_ip6 = true;
		} else if (!strcmp(tok, "ttl")) {
			if (parse_u32(val, 1, 255, &v) < 0) {
				rc = cfg_err(err, errlen, "ttl '%s': expected 1..255", val);
				break;
			}
			cfg->ttl = (uint8_t)v;
		} else if (!strcmp(tok, "thread")) {
			if (parse_u32(val, 0, NETDEV_THREAD_MAX, &v) < 0) {
				rc = cfg_err(err, errlen, "thread '%s': expected 0..%d", val,
					     NETDEV_THREAD_MAX);
				break;
			}
			cfg->thread = (int)v;
		} else if (!strcmp(tok, "vlan")) {
			if (parse_u32(val, 1, 4094, &v) < 0) {
				rc = cfg_err(err, errlen, "vlan '%s': expected 1..4094", val);
				break;
			}
			cfg->vlan_id = (uint16_t)v;
		} else if (!strcmp(tok, "mtu")) {
			if (parse_u32(val, 576, PKT_MAX_FRAME - 18, &v) < 0) {
				rc = cfg_err(err, errlen, "mtu '%s': expected 576..%d", val, PKT_MAX_FRAME - 18);
				break;
			}
			cfg->mtu = (uint16_t)v;
		} else if (!strcmp(tok, "qps")) {
			if (parse_u32(val, 2, NETDEV_MAX_QPS, &v) < 0) {
				rc = cfg_err(err, errlen, "qps '%s': expected 2..%d", val, NETDEV_MAX_QPS);
				break;
			}
			cfg->max_qps = v;
		} else if (!strcmp(tok, "cqs")) {
			if (parse_u32(val, 1, NETDEV_MAX_CQS, &v) < 0) {
				rc = cfg_err(err, errlen, "cqs '%s': expected 1..%d", val, NETDEV_MAX_CQS);
				break;
			}
			cfg->max_cqs = v;
		} else if (!strcmp(tok, "roce")) {
			if (!strcmp(val, "on")) {
				cfg->roce = true;
			} else if (!strcmp(val, "off")) {
				cfg->roce = false;
			} else {
				rc = cfg_err(err, errlen, "roce '%s': expected on or off", val);
				break;
			}
		} else if (!strcmp(tok, "ext")) {
			if (!strcmp(val, "on")) {
				cfg->roce_ext = true;
			} else if (!strcmp(val, "off")) {
				cfg->roce_ext = false;
			} else {
				rc = cfg_err(err, errlen, "ext '%s': expected on or off", val);
				break;
			}
			ext_given = true;
		} else if (!strcmp(tok, "srqs")) {
			if (parse_u32(val, 0, NETDEV_MAX_SRQS, &v) < 0) {
				rc = cfg_err(err, errlen, "srqs '%s': expected 0..%d", val, NETDEV_MAX_SRQS);
				break;
			}
			cfg->max_srqs = v;
			srqs_given = true;
		} else if (!strcmp(tok, "contexts")) {
			if (parse_u32(val, 1, NETDEV_MAX_CONTEXTS, &v) < 0) {
				rc = cfg_err(err, errlen, "contexts '%s': expected 1..%d", val,
					     NETDEV_MAX_CONTEXTS);
				break;
			}
			cfg->max_contexts = v;
		} else if (!strcmp(tok, "model")) {
			if (!strcmp(val, "virtio-net")) {
				cfg->model = NETDEV_MODEL_NET;
			} else if (!strcmp(val, "virtio-rdma")) {
				cfg->model = NETDEV_MODEL_VIRTIO_RDMA;
			} else {
				rc = cfg_err(err, errlen, "model '%s': expected virtio-net or virtio-rdma", val);
				break;
			}
		} else if ((v = (uint32_t)netdev_sec_cfg_key(cfg, tok, val, err, errlen)) != 1) {
			if (v) {
				rc = -EINVAL;
				break;
			}
		} else {
			rc = cfg_err(err, errlen, "unknown key '%s' (socket, mac, ip, ip6, ttl, vlan, thread, mtu, qps, cqs, roce, ext, srqs, contexts, model, %s)",
				     tok, NETDEV_SEC_KEYS);
			break;
		}
	}
	free(copy);
	if (rc == 0 && !cfg->socket[0])
		rc = cfg_err(err, errlen, "socket=PATH is required");
	if (rc || cfg->model == NETDEV_MODEL_VIRTIO_RDMA || !cfg->roce || !cfg->roce_ext)
		return rc;
	/* 2 + 1 + cqs + 2 qps, then the event queue and srqs SRQ rings: at most
	 * 65536 virtqueues (16-bit numbers) and what the vhost server serves.
	 * Defaults shrink to fit; values given explicitly must fit. */
	rfc_vqs = 3ull + cfg->max_cqs + 2ull * cfg->max_qps;
	max_vqs = MIN((uint64_t)NETDEV_MAX_VQS, (uint64_t)VHOST_SERVER_MAX_RINGS);
	if (rfc_vqs + 1 > max_vqs) {
		if (ext_given)
			return cfg_err(err, errlen, "ext=on: 4 + cqs + 2 * qps virtqueues exceed %llu",
				       (unsigned long long)max_vqs);
		cfg->roce_ext = false;
		return 0;
	}
	if (rfc_vqs + 1 + cfg->max_srqs > max_vqs) {
		if (srqs_given)
			return cfg_err(err, errlen,
				       "srqs=%u: 4 + cqs + 2 * qps + srqs virtqueues exceed %llu",
				       cfg->max_srqs, (unsigned long long)max_vqs);
		cfg->max_srqs = (uint32_t)(max_vqs - rfc_vqs - 1);
	}
	return 0;
}
