/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame capture to a pcap file (libpcap's writer: DLT_EN10MB, snaplen 65535,
 * nanosecond timestamps from CLOCK_REALTIME, so Wireshark/tshark and
 * pcap_open_offline() read it).
 *
 * The file must stay readable if the daemon is killed at any moment, so a
 * record never reaches the file half written: records are buffered in a
 * private stdio buffer which is flushed before a record would not fit, and
 *  - with a loop: once per loop iteration (a poller) whenever something was
 *    written, so one batch of frames costs one write(2);
 *  - without a loop: after every frame.
 * The header is flushed when the file is opened.
 */
#ifndef VRDMA_PORT_PCAP_H
#define VRDMA_PORT_PCAP_H

#include <stdint.h>

struct loop;
struct pcapw;

struct pcapw_stats {
	uint64_t frames, bytes; /* records written */
	uint64_t errors;        /* write or flush failures */
};

/* Create (truncate, mode 0644) path and write the pcap header. A symbolic
 * link at path is refused (ELOOP). loop may be NULL (flush per frame).
 * Returns the writer, or NULL with errno set (and a message logged). */
struct pcapw *pcapw_open(const char *path, struct loop *loop);

/* Append one frame of len bytes (at most 65535 are stored; the original
 * length is recorded). Returns 0, or -EIO after a write error (counted; the
 * writer keeps trying on later frames). */
int pcapw_write(struct pcapw *w, const void *data, uint32_t len);

/* Write buffered records to the file now. Returns 0 or -EIO. */
int pcapw_flush(struct pcapw *w);

/* Flush, close the file and free w (NULL is a no-op). */
void pcapw_close(struct pcapw *w);

/* Counters of w. */
const struct pcapw_stats *pcapw_get_stats(const struct pcapw *w);

#endif /* VRDMA_PORT_PCAP_H */
