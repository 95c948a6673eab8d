/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control request parser (see ctl.h). Untrusted input: only printable ASCII,
 * bounded words, every field checked before the daemon sees it.
 */
#include "mgmt/ctl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CTL_MAX_WORDS 8

static int ctl_err(char *err, size_t errlen, const char *msg, const char *word)
{
	if (err && errlen)
		snprintf(err, errlen, "%s%s%.64s%s", msg, word ? " '" : "", word ? word : "",
			 word ? "'" : "");
	return -EINVAL;
}

static int set_dev(struct ctl_req *r, const char *name, char *err, size_t errlen)
{
	if (!mconf_valid_name(name))
		return ctl_err(err, errlen, "bad device name", name);
	strcpy(r->dev, name);
	return 0;
}

int ctl_parse(const char *line, size_t len, struct ctl_req *r, char *err, size_t errlen)
{
	char buf[CTL_LINE_MAX + 1], *w[CTL_MAX_WORDS], *save = NULL, *tok;
	unsigned n = 0, i = 0;

	memset(r, 0, sizeof(*r));
	if (len && line[len - 1] == '\n')
		len--;
	if (len > CTL_LINE_MAX)
		return ctl_err(err, errlen, "request too long", NULL);
	for (size_t k = 0; k < len; k++) {
		unsigned char ch = (unsigned char)line[k];

		if (ch < 0x20 || ch > 0x7e)
			return ctl_err(err, errlen, "request has a non-printable byte", NULL);
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (n == CTL_MAX_WORDS)
			return ctl_err(err, errlen, "too many words", NULL);
		w[n++] = tok;
	}
	if (n && !strcmp(w[0], "json")) {
		r->json = true;
		i++;
	}
	if (i == n)
		return ctl_err(err, errlen, "empty request", NULL);

	if (!strcmp(w[i], "dev")) {
		i++;
		if (i == n || !strcmp(w[i], "show")) {
			r->cmd = CTL_DEV_SHOW;
			if (i < n)
				i++;
			if (i < n && set_dev(r, w[i++], err, errlen) < 0)
				return -EINVAL;
		} else if (!strcmp(w[i], "add") || !strcmp(w[i], "del")) {
			r->cmd = w[i][0] == 'a' ? CTL_DEV_ADD : CTL_DEV_DEL;
			i++;
			if (i == n)
				return ctl_err(err, errlen, "missing device name", NULL);
			if (set_dev(r, w[i++], err, errlen) < 0)
				return -EINVAL;
			if (r->cmd == CTL_DEV_ADD && i < n) {
				if (strlen(w[i]) >= sizeof(r->arg))
					return ctl_err(err, errlen, "device options too long", NULL);
				strcpy(r->arg, w[i++]);
			}
		} else {
			return ctl_err(err, errlen, "expected dev show|add|del, not", w[i]);
		}
	} else if (!strcmp(w[i], "res") || !strcmp(w[i], "stat")) {
		r->cmd = w[i][0] == 'r' ? CTL_RES_SHOW : CTL_STAT_SHOW;
		i++;
		if (i < n && !strcmp(w[i], "show"))
			i++;
		r->res = CTL_RES_ALL;
		if (r->cmd == CTL_RES_SHOW && i < n && strcmp(w[i], "dev")) {
			static const char *const kinds[] = { "qp", "cq", "mr", "pd", "srq" };
			unsigned k;

			for (k = 0; k < 5; k++)
				if (!strcmp(w[i], kinds[k]))
					break;
			if (k == 5)
				return ctl_err(err, errlen, "expected qp, cq, mr, pd or srq, not", w[i]);
			r->res = 1u << k;
			i++;
		}
		if (i < n && !strcmp(w[i], "dev")) {
			i++;
			if (i == n)
				return ctl_err(err, errlen, "missing device name", NULL);
			if (set_dev(r, w[i++], err, errlen) < 0)
				return -EINVAL;
		}
	} else if (!strcmp(w[i], "capture")) {
		i++;
		if (i == n || (strcmp(w[i], "start") && strcmp(w[i], "stop")))
			return ctl_err(err, errlen, "expected capture start|stop", NULL);
		r->cmd = w[i][2] == 'a' ? CTL_CAPTURE_START : CTL_CAPTURE_STOP;
		i++;
		if (i == n)
			return ctl_err(err, errlen, "missing device name", NULL);
		if (set_dev(r, w[i++], err, errlen) < 0)
			return -EINVAL;
		if (r->cmd == CTL_CAPTURE_START) {
			if (i == n)
				return ctl_err(err, errlen, "missing capture file", NULL);
			if (w[i][0] != '/' || strlen(w[i]) >= sizeof(r->arg))
				return ctl_err(err, errlen, "capture file must be an absolute path of at most 511 bytes, not",
					       w[i]);
			strcpy(r->arg, w[i++]);
		}
	} else if (!strcmp(w[i], "reload")) {
		r->cmd = CTL_RELOAD;
		i++;
	} else {
		return ctl_err(err, errlen, "unknown command", w[i]);
	}
	if (i < n)
		return ctl_err(err, errlen, "unexpected word", w[i]);
	return 0;
}
