/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap writer on top of libpcap's dumper, see pcap.h for the flushing rules.
 */
#include "port/pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"

#define PCAPW_SNAPLEN 65535u
#define PCAPW_BUF_SIZE (256u * 1024u)
#define PCAPW_REC_HDR 16u /* on-disk record header */

struct pcapw {
	pcap_t *pd;
	pcap_dumper_t *dumper;
	FILE *fp;
	char *iobuf;
	size_t pending;             /* bytes in the stdio buffer */
	struct loop *loop;
	struct loop_poller *poller;
	struct pcapw_stats stats;
};

static int pcapw_flush_now(struct pcapw *w)
{
	if (!w->pending)
		return 0;
	w->pending = 0;
	if (pcap_dump_flush(w->dumper) != 0) {
		w->stats.errors++;
		clearerr(w->fp);
		LOG_PEER("pcap: flush failed: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

static bool pcapw_poll(void *arg)
{
	pcapw_flush_now(arg);
	/* Flushing is housekeeping: never keep the loop busy-polling. */
	return false;
}

static bool pcapw_arm(void *arg)
{
	pcapw_flush_now(arg);
	return false;
}

static const struct loop_poller_ops pcapw_poller_ops = {
	.poll = pcapw_poll,
	.arm = pcapw_arm,
};

struct pcapw *pcapw_open(const char *path, struct loop *loop)
{
	struct pcapw *w;
	int err;

	if (!path || !*path) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->iobuf = malloc(PCAPW_BUF_SIZE);
	if (!w->iobuf) {
		err = ENOMEM;
		goto fail;
	}
	w->pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, PCAPW_SNAPLEN,
						     PCAP_TSTAMP_PRECISION_NANO);
	if (!w->pd) {
		err = ENOMEM;
		goto fail;
	}
	/* Not through a symbolic link (ELOOP), so a link planted at the path
	 * cannot redirect the capture onto another file; O_NONBLOCK so that a
	 * FIFO without a reader fails (ENXIO) instead of hanging. */
	{
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC |
				    O_NONBLOCK, 0644);
		int fl;

		if (fd < 0) {
			err = errno;
			LOG_ERR("pcap: cannot create %s: %s%s", path, strerror(err),
				err == ELOOP ? " (a symbolic link)" : "");
			goto fail;
		}
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		w->fp = fdopen(fd, "wb");
		if (!w->fp) {
			err = errno;
			close(fd);
			LOG_ERR("pcap: cannot create %s: %s", path, strerror(err));
			goto fail;
		}
	}
	/* Our own buffer, set before the first write, so we know how much is
	 * pending and never let stdio write part of a record. */
	setvbuf(w->fp, w->iobuf, _IOFBF, PCAPW_BUF_SIZE);
	w->dumper = pcap_dump_fopen(w->pd, w->fp);
	if (!w->dumper) {
		err = EIO;
		LOG_ERR("pcap: %s: %s", path, pcap_geterr(w->pd));
		fclose(w->fp);
		w->fp = NULL;
		goto fail;
	}
	w->pending = 1;
	if (pcapw_flush_now(w)) {
		err = EIO;
		goto fail_dump;
	}
	if (loop) {
		w->poller = loop_add_poller(loop, &pcapw_poller_ops, w);
		if (!w->poller) {
			err = ENOMEM;
			goto fail_dump;
		}
		w->loop = loop;
	}
	return w;

fail_dump:
	pcap_dump_close(w->dumper); /* closes fp */
fail:
	if (w->pd)
		pcap_close(w->pd);
	free(w->iobuf);
	free(w);
	errno = err;
	return NULL;
}

int pcapw_write(struct pcapw *w, const void *data, uint32_t len)
{
	struct pcap_pkthdr h;
	struct timespec ts;
	uint32_t cap = MIN(len, PCAPW_SNAPLEN);
	int ret = 0;

	if (w->pending + PCAPW_REC_HDR + cap > PCAPW_BUF_SIZE)
		ret = pcapw_flush_now(w);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = ts.tv_sec;
	h.ts.tv_usec = ts.tv_nsec; /* nanoseconds: the pcap_t is NANO precision */
	h.caplen = cap;
	h.len = len;
	pcap_dump((u_char *)w->dumper, &h, data);
	w->pending += PCAPW_REC_HDR + cap;
	if (unlikely(ferror(w->fp))) {
		clearerr(w->fp);
		w->stats.errors++;
		ret = -EIO;
	} else {
		w->stats.frames++;
		w->stats.bytes += len;
	}
	if (!w->loop && pcapw_flush_now(w))
		ret = -EIO;
	return ret;
}

int pcapw_flush(struct pcapw *w)
{
	return pcapw_flush_now(w);
}

void pcapw_close(struct pcapw *w)
{
	if (!w)
		return;
	if (w->poller)
		loop_del_poller(w->loop, w->poller);
	pcapw_flush_now(w);
	pcap_dump_close(w->dumper);
	pcap_close(w->pd);
	free(w->iobuf);
	free(w);
}

const struct pcapw_stats *pcapw_get_stats(const struct pcapw *w)
{
	return &w->stats;
}
