/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma.conf parser (see conf.h and vrdma.conf(5)). Device keys are checked
 * one by one with the --device parser, so a bad value is reported at its line.
 */
#include "mgmt/conf.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/netdev.h"

/* The --device keys a [device] section may set ("socket" first; allow-ip takes
 * a space-separated list). model= is left out: a virtio-rdma device is served
 * from --device or hot-plugged. */
static const char *const device_keys[] = {
	"socket", "mac", "ip", "ip6", "mtu", "qps", "cqs", "roce", "ext", "srqs", "contexts",
	"vlan", "ttl", "port-security", "mac-change", "allow-ip", "mem", "state-mem", "thread",
};
#define NDEVKEYS (sizeof(device_keys) / sizeof(device_keys[0]))

/* Per device section while parsing: the value and line of each key. */
struct sect {
	char val[NDEVKEYS][MCONF_PATH_MAX];
	unsigned line[NDEVKEYS];
};

static int conf_err(char *err, size_t errlen, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int conf_err(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (err && errlen) {
		if (line)
			n = snprintf(err, errlen, "line %u: ", line);
		if (n < 0 || (size_t)n >= errlen)
			n = 0;
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

bool mconf_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= MCONF_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

int mconf_parse_mode(const char *s, int *mode)
{
	unsigned long v;
	char *end;

	if (!*s || strlen(s) > 4)
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || v > 0777 || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	*mode = (int)v;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int mconf_parse_streaming(const char *s)
{
	if (!strcmp(s, "auto"))
		return 1;
	if (!strcmp(s, "off"))
		return 0;
	return -EINVAL;
}

int mconf_parse_sched(const char *s, int *policy, int *prio)
{
	unsigned long v = MCONF_SCHED_PRIO;
	const char *arg = NULL;
	int pol;

	if (!strcmp(s, "other")) {
		*policy = SCHED_OTHER;
		*prio = 0;
		return 0;
	}
	if (!strncmp(s, "fifo", 4)) {
		pol = SCHED_FIFO;
		arg = s + 4;
	} else if (!strncmp(s, "rr", 2)) {
		pol = SCHED_RR;
		arg = s + 2;
	} else {
		return -EINVAL;
	}
	if (*arg && (*arg != ':' || parse_uint(arg + 1, 99, &v) < 0 || v < 1))
		return -EINVAL;
	*policy = pol;
	*prio = (int)v;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

static int copy_val(char *dst, size_t cap, const char *val, char *err, size_t errlen,
		    unsigned line, const char *key)
{
	if (strlen(val) >= cap)
		return conf_err(err, errlen, line, "%s: longer than %zu bytes", key, cap - 1);
	strcpy(dst, val);
	return 0;
}

static int global_key(struct mconf *c, const char *key, const char *val, unsigned line,
		      char *err, size_t errlen)
{
	unsigned long v;

	if (!strcmp(key, "socket-dir")) {
		if (val[0] != '/')
			return conf_err(err, errlen, line, "socket-dir '%s': expected an absolute path", val);
		/* Leave room for "/NAME.sock". */
		if (strlen(val) >= MCONF_PATH_MAX - MCONF_NAME_MAX - 6)
			return conf_err(err, errlen, line, "socket-dir: longer than %d bytes",
					MCONF_PATH_MAX - MCONF_NAME_MAX - 7);
		strcpy(c->socket_dir, val);
		return 0;
	}
	if (!strcmp(key, "socket-mode")) {
		if (mconf_parse_mode(val, &c->socket_mode) < 0)
			return conf_err(err, errlen, line, "socket-mode '%s': expected octal 0..0777", val);
		return 0;
	}
	if (!strcmp(key, "socket-group")) {
		if (!mconf_valid_name(val))
			return conf_err(err, errlen, line, "socket-group '%s': expected a group name or number", val);
		strcpy(c->socket_group, val);
		return 0;
	}
	if (!strcmp(key, "control")) {
		if (!strcmp(val, "none")) {
			strcpy(c->control, "none");
			return 0;
		}
		if (val[0] != '/')
			return conf_err(err, errlen, line, "control '%s': expected an absolute path or none", val);
		return copy_val(c->control, sizeof(c->control), val, err, errlen, line, key);
	}
	if (!strcmp(key, "poll-us")) {
		if (parse_uint(val, 1000000, &v) < 0)
			return conf_err(err, errlen, line, "poll-us '%s': expected 0..1000000", val);
		c->poll_us = (int)v;
		return 0;
	}
	if (!strcmp(key, "threads")) {
		if (!strcmp(val, "auto")) {
			c->threads = -1;
			return 0;
		}
		if (parse_uint(val, 64, &v) < 0 || !v)
			return conf_err(err, errlen, line, "threads '%s': expected 1..64 or auto", val);
		c->threads = (int)v;
		return 0;
	}
	if (!strcmp(key, "streaming-stores")) {
		c->streaming = mconf_parse_streaming(val);
		if (c->streaming < 0)
			return conf_err(err, errlen, line, "streaming-stores '%s': expected auto or off", val);
		return 0;
	}
	if (!strcmp(key, "sched")) {
		if (mconf_parse_sched(val, &c->sched_policy, &c->sched_prio) < 0)
			return conf_err(err, errlen, line, "sched '%s': expected other, fifo[:1..99] or rr[:1..99]", val);
		return 0;
	}
	if (!strcmp(key, "pcap"))
		return copy_val(c->pcap, sizeof(c->pcap), val, err, errlen, line, key);
	if (!strcmp(key, "fault"))
		return copy_val(c->fault, sizeof(c->fault), val, err, errlen, line, key);
	if (!strcmp(key, "uplink")) {
		if (c->nuplinks == MCONF_MAX_UPLINKS)
			return conf_err(err, errlen, line, "at most %d uplinks", MCONF_MAX_UPLINKS);
		if (strncmp(val, "tap:", 4) && strncmp(val, "af_packet:", 10) && strncmp(val, "af_xdp:", 7))
			return conf_err(err, errlen, line,
					"uplink '%s': expected tap:NAME, af_packet:IFACE or af_xdp:IFACE", val);
		return copy_val(c->uplinks[c->nuplinks++], sizeof(c->uplinks[0]), val, err, errlen,
				line, key);
	}
	return conf_err(err, errlen, line, "unknown key '%s' in [global] (socket-dir, socket-mode, "
			"socket-group, control, poll-us, threads, streaming-stores, sched, pcap, fault, uplink)", key);
}

/* SPEC = HEAD + ",KEY=VAL" (allow-ip: one ",allow-ip=X" per space-separated
 * word of VAL). Returns 0, or -1 if it does not fit. */
static int spec_append(char *spec, size_t size, const char *head, const char *key,
		       const char *val)
{
	size_t n = (size_t)snprintf(spec, size, "%s", head);
	char word[MCONF_PATH_MAX];
	const char *p = val;
	int w;

	if (n >= size)
		return -1;
	if (strcmp(key, "allow-ip")) {
		w = snprintf(spec + n, size - n, ",%s=%s", key, val);
		return w < 0 || (size_t)w >= size - n ? -1 : 0;
	}
	while (*p) {
		size_t len = strcspn(p, " \t");

		if (len) {
			if (len >= sizeof(word))
				return -1;
			memcpy(word, p, len);
			word[len] = 0;
			w = snprintf(spec + n, size - n, ",allow-ip=%s", word);
			if (w < 0 || (size_t)w >= size - n)
				return -1;
			n += (size_t)w;
		}
		p += len;
		p += strspn(p, " \t");
	}
	return 0;
}

static int device_key(struct sect *s, const char *key, const char *val, unsigned line,
		      char *err, size_t errlen)
{
	char spec[MCONF_SPEC_MAX], msg[200];
	struct netdev_cfg cfg;
	size_t k;

	for (k = 0; k < NDEVKEYS; k++)
		if (!strcmp(key, device_keys[k]))
			break;
	if (k == NDEVKEYS) {
		char names[300];
		size_t n = 0;

		for (size_t i = 0; i < NDEVKEYS && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					      device_keys[i]);
		return conf_err(err, errlen, line, "unknown key '%s' (%s)", key, names);
	}
	if (s->line[k])
		return conf_err(err, errlen, line, "%s given twice (first at line %u)", key, s->line[k]);
	if (strchr(val, ','))
		return conf_err(err, errlen, line, "%s: ',' is not allowed in a value", key);
	if (strlen(val) >= sizeof(s->val[k]))
		return conf_err(err, errlen, line, "%s: longer than %zu bytes", key, sizeof(s->val[k]) - 1);
	if (k > 0) {
		/* Check the value alone now, to report it at its line. */
		if (spec_append(spec, sizeof(spec), "socket=/x", key, val) < 0)
			return conf_err(err, errlen, line, "%s: too long", key);
		if (netdev_parse_cfg(spec, 0, &cfg, msg, sizeof(msg)) < 0)
			return conf_err(err, errlen, line, "%s", msg);
	} else if (!*val) {
		return conf_err(err, errlen, line, "socket: empty");
	}
	strcpy(s->val[k], val);
	s->line[k] = line;
	return 0;
}

/* Turn a finished device section into its socket path and --device string. */
static int device_finish(struct mconf *c, struct mconf_device *d, const struct sect *s,
			 char *err, size_t errlen)
{
	char msg[200];
	struct netdev_cfg cfg;
	int w;
	char path[MCONF_PATH_MAX];

	if (!s->line[0])
		w = snprintf(path, sizeof(path), "%s/%s.sock", c->socket_dir, d->name);
	else if (!strchr(s->val[0], '/'))
		w = snprintf(path, sizeof(path), "%s/%s", c->socket_dir, s->val[0]);
	else
		w = snprintf(path, sizeof(path), "%s", s->val[0]);
	if (w < 0 || (size_t)w >= sizeof(path))
		return conf_err(err, errlen, s->line[0] ? s->line[0] : d->line,
				"device %s: socket path longer than %zu bytes", d->name,
				sizeof(path) - 1);
	memcpy(d->socket, path, sizeof(path));
	w = snprintf(d->spec, sizeof(d->spec), "socket=%s", path);
	if (w < 0 || (size_t)w >= sizeof(d->spec))
		return conf_err(err, errlen, d->line, "device %s: too many options", d->name);
	for (size_t k = 1; k < NDEVKEYS; k++) {
		char head[MCONF_SPEC_MAX];

		if (!s->line[k])
			continue;
		memcpy(head, d->spec, sizeof(head));
		if (spec_append(d->spec, sizeof(d->spec), head, device_keys[k], s->val[k]) < 0)
			return conf_err(err, errlen, d->line, "device %s: too many options", d->name);
	}
	/* Combinations (ring limits) are only known with every key. */
	if (netdev_parse_cfg(d->spec, 0, &cfg, msg, sizeof(msg)) < 0)
		return conf_err(err, errlen, d->line, "device %s: %s", d->name, msg);
	return 0;
}

int mconf_parse(const char *text, size_t len, struct mconf *c, char *err, size_t errlen)
{
	struct sect *secs = NULL;
	char buf[MCONF_LINE_MAX + 2];
	unsigned line = 0;
	int cur = -2;             /* -2 none yet, -1 [global], else device index */
	bool seen_global = false;
	size_t pos = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->socket_mode = -1;
	c->poll_us = -1;
	c->streaming = -1;
	c->sched_policy = -1;
	strcpy(c->socket_dir, MCONF_SOCKET_DIR);
	if (len > MCONF_FILE_MAX)
		return conf_err(err, errlen, 0, "larger than %d bytes", MCONF_FILE_MAX);
	secs = calloc(MCONF_MAX_DEVICES, sizeof(*secs));
	if (!secs)
		return conf_err(err, errlen, 0, "out of memory");

	while (pos < len && rc == 0) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char *s, *eq, *key, *val;

		line++;
		if (n > MCONF_LINE_MAX) {
			rc = conf_err(err, errlen, line, "longer than %d bytes", MCONF_LINE_MAX);
			break;
		}
		memcpy(buf, text + pos, n);
		buf[n] = '\0';
		pos += n + (nl ? 1 : 0);
		if (n && buf[n - 1] == '\r')
			buf[--n] = '\0';
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)buf[i];

			if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
				rc = conf_err(err, errlen, line, "control character 0x%02x", ch);
				break;
			}
		}
		if (rc)
			break;
		s = trim(buf);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']'), *name;

			if (!end || end[1]) {
				rc = conf_err(err, errlen, line, "expected [global] or [device NAME]");
				break;
			}
			*end = '\0';
			s = trim(s + 1);
			if (!strcmp(s, "global")) {
				if (seen_global) {
					rc = conf_err(err, errlen, line, "second [global] section");
					break;
				}
				if (c->ndevices) {
					rc = conf_err(err, errlen, line, "[global] must come before the devices");
					break;
				}
				seen_global = true;
				cur = -1;
				continue;
			}
			if (strncmp(s, "device", 6) || (s[6] != ' ' && s[6] != '\t')) {
				rc = conf_err(err, errlen, line, "unknown section [%s] (global, device NAME)", s);
				break;
			}
			name = trim(s + 7);
			if (!mconf_valid_name(name)) {
				rc = conf_err(err, errlen, line, "device name '%s': expected 1..%d of "
					      "A-Z a-z 0-9 _ - .", name, MCONF_NAME_MAX - 1);
				break;
			}
			for (unsigned i = 0; i < c->ndevices; i++) {
				if (!strcmp(c->dev[i].name, name)) {
					rc = conf_err(err, errlen, line, "device %s defined twice (line %u)",
						      name, c->dev[i].line);
					break;
				}
			}
			if (rc)
				break;
			if (c->ndevices == MCONF_MAX_DEVICES) {
				rc = conf_err(err, errlen, line, "at most %d devices", MCONF_MAX_DEVICES);
				break;
			}
			strcpy(c->dev[c->ndevices].name, name);
			c->dev[c->ndevices].line = line;
			cur = (int)c->ndevices++;
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			rc = conf_err(err, errlen, line, "expected KEY = VALUE");
			break;
		}
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		if (!*key) {
			rc = conf_err(err, errlen, line, "expected KEY = VALUE");
			break;
		}
		if (cur == -2)
			rc = conf_err(err, errlen, line, "'%s' outside a section", key);
		else if (cur == -1)
			rc = global_key(c, key, val, line, err, errlen);
		else
			rc = device_key(&secs[cur], key, val, line, err, errlen);
	}
	for (unsigned i = 0; rc == 0 && i < c->ndevices; i++) {
		rc = device_finish(c, &c->dev[i], &secs[i], err, errlen);
		for (unsigned j = 0; rc == 0 && j < i; j++)
			if (!strcmp(c->dev[i].socket, c->dev[j].socket))
				rc = conf_err(err, errlen, c->dev[i].line, "devices %s and %s share socket %s",
					      c->dev[j].name, c->dev[i].name, c->dev[i].socket);
	}
	free(secs);
	return rc;
}

int mconf_load(const char *path, struct mconf *c, char *err, size_t errlen)
{
	struct stat st;
	char *text;
	ssize_t n;
	size_t got = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MCONF_FILE_MAX) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file of at most %d bytes", path, MCONF_FILE_MAX);
		return -EINVAL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	rc = mconf_parse(text, got, c, err, errlen);
	free(text);
	if (rc < 0) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", err);
		snprintf(err, errlen, "%s: %s", path, msg);
	}
	return rc;
}
