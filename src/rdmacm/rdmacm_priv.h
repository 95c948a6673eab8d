/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vrdma's librdmacm.so.1: the rdma_cm API of Debian's librdmacm over the
 * connection manager each device runs in the daemon (its CM commands and
 * events: docs/spec.md "rdma_cm over the device's connection manager").
 * Public structures come from <rdma/rdma_cma.h> itself, so their layouts
 * are Debian's.
 *
 * One lock (rcm_lock) guards every id, channel and device; the library's
 * thread takes it to turn CM events into rdma_cm events. Errors: -1 and
 * errno, as librdmacm.
 */
#ifndef VRDMA_RDMACM_PRIV_H
#define VRDMA_RDMACM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm/cm_mad.h"

#define RCM_EXPORT __attribute__((visibility("default")))
#define RCM_MAX_DEVS 16
#define RCM_GSI_QKEY 0x80010000u
#define RCM_UDP_QKEY 0x01234567u

struct rcm_channel;

/* A device of the process: its verbs context; once an id needs the CM on
 * it, the library's thread watches its async fd for CM events. */
struct rcm_dev {
	struct ibv_context *verbs;
	uint64_t guid;
	union ibv_gid gid[8];       /* the port's GIDs (v4-mapped and link-local) */
	int ngid;
	enum ibv_mtu active_mtu;
	bool cm_up;
	struct ibv_pd *pd;          /* for ids that bring none */
};

/* The private part of an rdma_cm_id (the public one first). */
struct rcm_id {
	struct rdma_cm_id id;
	struct rcm_dev *dev;
	struct rcm_channel *ch;
	bool sync;                  /* created without a channel: calls block */
	bool passive;               /* made by a REQ: holds no port */
	bool bound, listening, connected, disc_reported;
	unsigned events_out;        /* events delivered and not yet acked */
	uint16_t sport;
	bool has_conn;              /* conn_id names a connection of the device's CM */
	bool rep_pending;           /* REP received, RTU or REJ not yet sent */
	uint32_t conn_id;
	bool listen_on[RCM_MAX_DEVS];
	uint32_t listen_id[RCM_MAX_DEVS];
	struct rcm_id *listen_parent;
	uint32_t psn;               /* the starting PSN we announce: our receive PSN */
	uint32_t remote_qpn, remote_psn;
	uint8_t mtu;                /* path MTU code */
	uint8_t resp_res, init_depth, rnr_retry, retry_count;
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool sidr;                  /* UD id: SIDR instead of REQ/REP */
	uint32_t sidr_qpn, sidr_qkey;
	struct ibv_sa_path_rec path;
	struct ibv_qp_init_attr *qp_attr; /* rdma_create_ep on a listener: for its requests */
	struct ibv_pd *ep_pd;
	struct rcm_id *next;        /* every id */
};

/* What rdma_get_cm_event does with the QP before returning an event: QPs
 * are only touched from the user's calls, as in librdmacm. */
enum rcm_action { RCM_ACT_NONE, RCM_ACT_REP };

struct rcm_event {
	struct rdma_cm_event ev;
	struct rcm_id *owner;       /* delivered, not yet acked: counted in its events_out */
	enum rcm_action action;
	uint8_t pd[256];
	struct rcm_event *next;
};

struct rcm_channel {
	struct rdma_event_channel ch;
	struct rcm_event *head, *tail;
	bool private_ch;            /* made for a synchronous id */
	unsigned readers;           /* threads inside rdma_get_cm_event */
	bool destroyed;             /* freed by the last reader (rcm_channel_free) */
};

/* Frees a channel and its queued events (rcm_lock held); with a thread still
 * waiting in rdma_get_cm_event the fd stays open (that thread blocks on, as on
 * librdmacm's device file) and the last reader frees it. */
void rcm_channel_free(struct rcm_channel *ch);

extern pthread_mutex_t rcm_lock;
extern pthread_cond_t rcm_acked;    /* an event was acked (rcm_lock) */

/* An unused entry of a GID table (all zero). */
static inline bool rcm_gid_unused(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return !memcmp(g->raw, zero, 16);
}

/* rdmacm_dev.c */
int rcm_devs_init(void);                                   /* locked */
int rcm_ndevs(void);
struct rcm_dev *rcm_dev_get(int i);
struct rcm_dev *rcm_dev_by_verbs(struct ibv_context *verbs);
/* The device owning IP address sa (NULL: none); any address: device 0. */
struct rcm_dev *rcm_dev_by_addr(const struct sockaddr *sa, bool *any);
int rcm_dev_gid_index(struct rcm_dev *d, const uint8_t gid[16]);
int rcm_dev_cm_start(struct rcm_dev *d);                   /* locked: -errno */
/* A CM command of the device (VIRTIO_NET_CTRL_ROCE_CM_*): 0 or -errno. */
int rcm_cm_cmd(struct rcm_dev *d, uint8_t cmd, const void *in, size_t in_len, void *out,
	       size_t out_len);
/* Lets go of a connection of the device's CM (RELEASE). */
void rcm_cm_release(struct rcm_dev *d, uint32_t conn_id);

/* rdmacm_id.c */
struct virtio_rdma_cm_event;
void rcm_cm_event(struct rcm_dev *d, const struct virtio_rdma_cm_event *ev); /* locked */
void rcm_event_complete(struct rcm_event *e);              /* locked */
/* The QP saw traffic before the RTU (ESTABLISHED command): 0 or -errno. */
int rcm_id_establish(struct rcm_id *r);                    /* locked */

/* rdmacm_channel.c */
struct rcm_event *rcm_event_new(struct rcm_id *id, enum rdma_cm_event_type type, int status);
void rcm_event_post(struct rcm_channel *ch, struct rcm_event *e);   /* locked */
void rcm_channel_drop_id(struct rcm_channel *ch, struct rcm_id *id); /* locked */
/* Waits for the next event of a synchronous id's channel (unlocked). */
int rcm_sync_wait(struct rcm_id *id, enum rdma_cm_event_type want);

#endif /* VRDMA_RDMACM_PRIV_H */
