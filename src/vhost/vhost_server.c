/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user back-end: listening socket, one front-end session at a time,
 * message handlers, vring life cycle. See vhost_server.h for the contract.
 *
 * Message handling: vhost_msg_check_request() validates the framing (flags,
 * payload size, fd count), then one handler per request validates the
 * contents (ring index, ring size, addresses, feature bits, regions) and acts.
 * A handler answers one of:
 *   VH_OK     done (REPLY_ACK 0 if the front-end asked for it)
 *   VH_REPLY  the reply is in msg
 *   VH_FAIL   refused; REPLY_ACK 1 if asked for, the session goes on
 *   VH_BAD    protocol violation; REPLY_ACK 1 if asked for, then the session
 *             is closed
 * A request we do not implement is VH_FAIL when the front-end asked for an
 * ack (it learns the answer), VH_BAD otherwise (it would believe it worked).
 *
 * Vring life cycle. A ring is "started" (the device owns r->vq) once it has a
 * size, addresses, a kick (fd or "no fd") and is enabled, and its three parts
 * translate into shared memory. Rings >= 256 cannot be given a kick without
 * the wide-index extension; for those SET_VRING_ADDR counts as the kick and
 * they run without a kick fd (the device polls). The ring is stopped by
 * GET_VRING_BASE (which also drops the kick, as the spec's "stop ring"),
 * SET_VRING_ENABLE 0, a change of size/addresses/base, a memory change that
 * removes its memory, RESET_DEVICE/RESET_OWNER and the end of the session.
 *
 * Memory safety across memory-table changes: a started ring holds references
 * on the regions of its three parts, and when a region goes away while some
 * ring has popped elements it has not given back yet, the server keeps a
 * reference too (the "graveyard") until a later memory change finds every
 * running ring with nothing outstanding, or no ring runs, so buffers the
 * device popped but has not completed yet stay mapped. The graveyard never
 * lets go of a region early: if it cannot hold one more, the front-end is
 * disconnected (stats.grave_overflows). It is bounded by the memory table's
 * live + dead budget (vhost_mem.h).
 *
 * Costs a front-end can impose (one loop thread serves every device):
 *  - rings are on a "running" or a "waiting for memory" list; a memory change
 *    looks at the running rings whose regions died and retries only the
 *    waiting rings whose parts the new region overlaps; UVA lookups are
 *    O(log regions);
 *  - each wake-up of the connection handles at most VHOST_SERVER_MSG_BUDGET
 *    units of work, where a message costs 1 plus its scans, ring starts and
 *    mmaps (VS_STEPS_PER_UNIT steps a unit);
 *  - fds: kick/call/err fds are counted per connection against max_fds
 *    (VHOST_SERVER_MAX_CONN_FDS by default); rings >= 256 (wide index only)
 *    take fds only once their size and addresses are set; a kick fd beyond
 *    the budget is closed and the ring runs polled, a call or error fd
 *    beyond it is refused (stats.fds_refused);
 *  - accept() failing for lack of fds (or memory) stops watching the
 *    listening socket and retries from a timer instead of spinning.
 *
 * Shared memory truncated under the device (SIGBUS, vhost_mem.h): the fault
 * handler signals the server's fault eventfd; from the loop, the server
 * disconnects that front-end (stats.mem_faults).
 */
#include "vhost/vhost_server.h"

#include <errno.h>
#include <poll.h>
#include <linux/virtio_config.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "vhost/vhost_msg.h"

#ifndef VIRTIO_CONFIG_S_NEEDS_RESET
#define VIRTIO_CONFIG_S_NEEDS_RESET 0x40
#endif
#define VHOST_VRING_F_LOG 0
#define VHOST_F_RING_INDIRECT_DESC 28
#define VHOST_F_RING_EVENT_IDX 29

/* Protocol features this server implements. */
#define VHOST_SERVER_PF_IMPLEMENTED                                              \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) |                                    \
	 (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                             \
	 (1ull << VHOST_USER_PROTOCOL_F_NET_MTU) |                               \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIG) |                                \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |                   \
	 (1ull << VHOST_USER_PROTOCOL_F_STATUS) |                                \
	 (1ull << VHOST_USER_PROTOCOL_F_RESET_DEVICE) |                          \
	 (1ull << VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX))

#define PF_BIT(b) (1ull << (b))
#define F_PROTOCOL (1ull << VHOST_USER_F_PROTOCOL_FEATURES)

/* Ring slots: a table of chunk pointers, each chunk 256 slot pointers,
 * allocated when a ring of that chunk is first configured. */
#define VRING_CHUNK_SHIFT 8
#define VRING_CHUNK (1u << VRING_CHUNK_SHIFT)
/* Rings a front-end without the wide index can give a kick fd. */
#define VRING_STD_KICKABLE 256
/* Work units handled per wake-up of the connection socket (a simple
 * message is one unit). */
#define VHOST_SERVER_MSG_BUDGET 64
/* Steps of work that make one unit, and what costs steps. */
#define VS_STEPS_PER_UNIT 256
#define VS_COST_SLOT 1            /* a ring slot visited by a scan */
#define VS_COST_TRY 8             /* a ring start attempt (translation) */
#define VS_COST_MMAP 256          /* a region mapped */
/* Kicks that bring no work (the avail index did not move since the last
 * kick): after VS_KICK_IDLE_MAX in a row the kick fd is left unwatched for
 * VS_KICK_PAUSE_NS, doubled on every pause up to 2^VS_KICK_PAUSE_SHIFT_MAX
 * times, back to the start once a kick brings work (docs/design.md
 * "Scheduling and fairness"). */
#define VS_KICK_IDLE_MAX 64
#define VS_KICK_PAUSE_NS (1000ull * 1000)
#define VS_KICK_PAUSE_SHIFT_MAX 7
/* Wait before accepting again after accept() ran out of fds or memory. */
#define VS_ACCEPT_RETRY_NS (100ull * 1000 * 1000)

enum { VS_LIST_NONE, VS_LIST_WAITING, VS_LIST_RUNNING };

enum { VH_OK = 0, VH_REPLY = 1, VH_FAIL = -1, VH_BAD = -2 };

struct vring_slot {
	struct vhost_vring r;     /* public part, handed to the device */
	bool enable_explicit;     /* SET_VRING_ENABLE seen */
	bool kick_watched;        /* kick_fd registered with the loop */
	bool kick_paused;         /* ... left out for a while: idle kicks */
	uint8_t kick_pause_shift; /* next pause is VS_KICK_PAUSE_NS << this */
	uint16_t kick_idle_run;   /* idle kicks in a row */
	uint16_t kick_avail;      /* avail index at the last kick */
	struct loop_timer kick_timer; /* ends a pause */
	bool warned;              /* translation failure logged */
	uint8_t list;             /* VS_LIST_*: which list links it */
	struct vring_slot *lprev, *lnext;
};

struct vhost_server {
	struct loop *loop;
	struct vhost_dev_ops ops;
	void *ctx;
	char *path;
	dev_t sock_dev;
	ino_t sock_ino;
	int listen_fd;
	bool listen_watched;
	char *name;             /* log name without a socket (NULL: path) */

	/* Session */
	int conn_fd;
	bool connected;
	bool disconnecting;
	int in_msg;               /* depth of message handling */
	bool disconnect_pending;  /* requested while in_msg */
	struct vhost_msg_rx rx;
	struct vhost_mem mem;
	uint64_t offered_features;
	uint64_t offered_pf;
	uint64_t features;        /* acked virtio features (without bit 30) */
	bool features_set;
	bool pf_negotiated;       /* VHOST_USER_F_PROTOCOL_FEATURES acked */
	uint64_t pf;              /* acked protocol features */
	uint8_t status;           /* last SET_STATUS */
	bool status_halted;       /* SET_STATUS 0 stopped the rings: none starts
				   * again before DRIVER_OK or a ring message */
	uint8_t dev_status;       /* device-set bits */
	uint32_t mtu;

	/* Rings */
	uint32_t max_rings;
	unsigned nchunks;
	struct vring_slot ***chunks;
	unsigned nstarted;
	struct vring_slot *running;  /* started rings */
	struct vring_slot *waiting;  /* ready, but memory does not translate */

	/* Regions removed while rings run */
	struct vhost_mem_region **grave;
	unsigned ngrave, grave_cap;

	/* Budgets */
	unsigned nfds;            /* kick/call/err fds held by the session */
	unsigned max_fds;
	uint64_t steps;           /* work of the current message */
	struct loop_timer accept_timer;
	int fault_fd;             /* eventfd signalled on SIGBUS in our memory */
	bool fault_watched;

	struct vhost_server_stats stats;
};

static const char *vs_name(const struct vhost_server *s)
{
	return s->path ? s->path : s->name ? s->name : "vhost";
}

static void vs_check_faults(struct vhost_server *s);

/* ---- fds from the front-end ---- */

/*
 * Without /proc: is fd an anonymous inode (eventfd, timerfd, epoll...)? Those
 * have no file type bits and live on the anon inode file system, like an
 * eventfd of our own. None of them blocks once non-blocking or raises SIGPIPE;
 * one that is not an eventfd just fails its reads (session closed) or writes.
 */
static bool vs_is_anon_inode(int fd)
{
	struct stat st, ref;
	int probe;

	if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != 0)
		return false;
	probe = eventfd(0, EFD_CLOEXEC);
	if (probe < 0)
		return true; /* the type bits alone */
	if (fstat(probe, &ref) < 0)
		ref.st_dev = st.st_dev;
	close(probe);
	return ref.st_dev == st.st_dev;
}

/*
 * Accept an fd for KICK/CALL/ERR: it must be an eventfd (so reads and writes
 * are 8 bytes, never block once non-blocking, never raise SIGPIPE). Where
 * /proc is not mounted, an anonymous inode is required instead.
 * Returns 0 or -errno.
 */
static int vs_prepare_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;
	int fl;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n >= 0) {
		link[n] = '\0';
		if (strcmp(link, "anon_inode:[eventfd]") != 0)
			return -EINVAL;
	} else if (!vs_is_anon_inode(fd)) {
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void vs_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Put fd (or -1) into a ring's kick/call/err place, closing what was there
 * and keeping the session's fd count. */
static void vs_ring_fd_set(struct vhost_server *s, int *place, int fd)
{
	if (*place >= 0) {
		close(*place);
		s->nfds--;
		vhost_fd_budget_put();
	}
	*place = fd;
	if (fd >= 0) {
		s->nfds++;
		vhost_fd_budget_take();
	}
}

/* ---- ring lists ---- */

static struct vring_slot **vs_list_head(struct vhost_server *s, uint8_t list)
{
	return list == VS_LIST_RUNNING ? &s->running : &s->waiting;
}

static void vs_list_del(struct vhost_server *s, struct vring_slot *v)
{
	if (v->list == VS_LIST_NONE)
		return;
	if (v->lprev)
		v->lprev->lnext = v->lnext;
	else
		*vs_list_head(s, v->list) = v->lnext;
	if (v->lnext)
		v->lnext->lprev = v->lprev;
	v->lprev = v->lnext = NULL;
	v->list = VS_LIST_NONE;
}

static void vs_list_add(struct vhost_server *s, struct vring_slot *v, uint8_t list)
{
	struct vring_slot **head = vs_list_head(s, list);

	vs_list_del(s, v);
	v->lprev = NULL;
	v->lnext = *head;
	if (*head)
		(*head)->lprev = v;
	*head = v;
	v->list = list;
}

/* ---- graveyard ---- */

static void vs_grave_release(struct vhost_server *s)
{
	for (unsigned i = 0; i < s->ngrave; i++)
		vhost_mem_region_put(s->grave[i]);
	s->ngrave = 0;
}

/* No running ring has an element popped and not given back: no pointer into
 * driver memory is kept outside the references. */
static bool vs_quiescent(struct vhost_server *s)
{
	for (struct vring_slot *v = s->running; v; v = v->lnext) {
		s->steps += VS_COST_SLOT;
		if (v->r.vq.stats.popped != v->r.vq.stats.pushed)
			return false;
	}
	return true;
}

/*
 * Regions are about to leave the table: must they be kept mapped? Not when
 * no ring runs or nothing is outstanding (then the graveyard is emptied too).
 */
static bool vs_grave_needed(struct vhost_server *s)
{
	if (s->nstarted && !vs_quiescent(s))
		return true;
	vs_grave_release(s);
	return false;
}

/*
 * Keep region reg mapped (it is about to leave the table) while elements
 * popped before now may still point into it. Returns 0, or -ENOSPC when it
 * cannot be held (the caller ends the session before removing anything).
 */
static int vs_grave_hold(struct vhost_server *s, struct vhost_mem_region *reg)
{
	unsigned max = s->mem.max_regions + s->mem.max_dead;

	if (!reg)
		return 0;
	if (s->ngrave == s->grave_cap) {
		unsigned cap = s->grave_cap ? s->grave_cap * 2 : 16;
		void *n;

		if (cap > max)
			cap = max;
		n = cap > s->grave_cap ? realloc(s->grave, cap * sizeof(*s->grave)) : NULL;
		if (!n) {
			s->stats.grave_overflows++;
			LOG_PEER("%s: %u removed regions still in use; cannot keep more",
				 vs_name(s), s->ngrave);
			return -ENOSPC;
		}
		s->grave = n;
		s->grave_cap = cap;
	}
	vhost_mem_region_get(reg);
	s->grave[s->ngrave++] = reg;
	return 0;
}

/* ---- ring slots ---- */

static struct vring_slot *vs_slot(const struct vhost_server *s, uint32_t idx)
{
	struct vring_slot **c;

	if (idx >= s->max_rings)
		return NULL;
	c = s->chunks[idx >> VRING_CHUNK_SHIFT];
	return c ? c[idx & (VRING_CHUNK - 1)] : NULL;
}

static bool vs_kickable(const struct vhost_server *s, uint32_t idx)
{
	return idx < VRING_STD_KICKABLE ||
	       (s->pf & PF_BIT(VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX));
}

/* The slot of ring idx (< max_rings), created on first use. NULL: no memory. */
static void vs_kick_resume(struct loop_timer *t, void *arg);

static struct vring_slot *vs_slot_get(struct vhost_server *s, uint32_t idx)
{
	struct vring_slot **c = s->chunks[idx >> VRING_CHUNK_SHIFT];
	struct vring_slot *v;

	if (!c) {
		c = calloc(VRING_CHUNK, sizeof(*c));
		if (!c)
			return NULL;
		s->chunks[idx >> VRING_CHUNK_SHIFT] = c;
	}
	v = c[idx & (VRING_CHUNK - 1)];
	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->r.idx = idx;
	v->r.kick_fd = -1;
	v->r.call_fd = -1;
	v->r.err_fd = -1;
	v->r.srv = s;
	v->r.enabled = s->features_set && !s->pf_negotiated;
	loop_timer_init(&v->kick_timer, vs_kick_resume, v);
	c[idx & (VRING_CHUNK - 1)] = v;
	return v;
}

/* Next allocated slot at or after *pos (advanced past it), or NULL. */
static struct vring_slot *vs_slot_next(const struct vhost_server *s, uint32_t *pos)
{
	while (*pos < s->max_rings) {
		struct vring_slot **c = s->chunks[*pos >> VRING_CHUNK_SHIFT];
		struct vring_slot *v;

		if (!c) {
			*pos = (*pos | (VRING_CHUNK - 1)) + 1;
			continue;
		}
		v = c[*pos & (VRING_CHUNK - 1)];
		(*pos)++;
		if (v)
			return v;
	}
	return NULL;
}

#define vs_for_each_slot(s, v, pos) \
	for ((pos) = 0; ((v) = vs_slot_next((s), &(pos))) != NULL;)

/*
 * Translate the three ring parts of r (whole sizes for r->num entries).
 * Returns 0 with host pointers and their regions, or -EFAULT.
 */
static int vs_translate(struct vhost_server *s, const struct vhost_vring *r,
			void *host[3], struct vhost_mem_region *reg[3])
{
	const uint64_t uva[3] = { r->desc_uva, r->avail_uva, r->used_uva };
	const uint64_t len[3] = { vq_desc_size(r->num), vq_avail_size(r->num),
				  vq_used_size(r->num) };
	static const uintptr_t align[3] = { 16, 2, 4 };

	for (int i = 0; i < 3; i++) {
		reg[i] = vhost_mem_find_uva(&s->mem, uva[i], len[i]);
		if (!reg[i])
			return -EFAULT;
		host[i] = reg[i]->host + (uva[i] - reg[i]->uva);
		if ((uintptr_t)host[i] & (align[i] - 1))
			return -EFAULT;
	}
	return 0;
}

/* Does any part of ring r overlap region reg's user address range? */
static bool vs_ring_touches(const struct vhost_vring *r, const struct vhost_mem_region *reg)
{
	const uint64_t uva[3] = { r->desc_uva, r->avail_uva, r->used_uva };
	const uint64_t len[3] = { vq_desc_size(r->num), vq_avail_size(r->num),
				  vq_used_size(r->num) };
	uint64_t rlast = reg->uva + (reg->size - 1);

	for (int i = 0; i < 3; i++) {
		uint64_t last = len[i] - 1 > UINT64_MAX - uva[i] ? UINT64_MAX
								  : uva[i] + (len[i] - 1);

		if (uva[i] <= rlast && reg->uva <= last)
			return true;
	}
	return false;
}

static void vs_put_held(struct vhost_vring *r)
{
	for (int i = 0; i < 3; i++) {
		vhost_mem_region_put(r->held[i]);
		r->held[i] = NULL;
	}
}

static void vs_kick_cb(void *arg, uint32_t events);
static void vs_kick_pause(struct vhost_server *s, struct vring_slot *v);

static bool vs_ring_ready(const struct vhost_vring *r)
{
	return !r->started && r->num && r->addr_set && r->kick_set && r->enabled;
}

/*
 * Start the ring if it is ready and its memory translates. Returns 0 (started
 * or not ready yet) or -errno when the kick fd cannot be watched (the session
 * must end).
 */
static int vs_ring_try_start(struct vhost_server *s, struct vring_slot *v)
{
	struct vhost_vring *r = &v->r;
	struct vhost_mem_region *reg[3];
	void *host[3];
	int err;

	if (v->list == VS_LIST_WAITING)
		vs_list_del(s, v);
	if (!vs_ring_ready(r) || s->status_halted)
		return 0;
	s->steps += VS_COST_TRY;
	s->stats.ring_start_attempts++;
	if (vs_translate(s, r, host, reg) < 0) {
		if (!v->warned)
			LOG_PEER("%s: ring %u addresses not in shared memory (yet)",
				 vs_name(s), r->idx);
		v->warned = true;
		vs_list_add(s, v, VS_LIST_WAITING);
		return 0;
	}
	err = vq_dev_init(&r->vq, &s->mem, r->num, host[0], host[1], host[2], r->base,
			  (s->features >> VHOST_F_RING_EVENT_IDX) & 1,
			  (s->features >> VHOST_F_RING_INDIRECT_DESC) & 1);
	if (err) {
		if (!v->warned)
			LOG_PEER("%s: ring %u cannot start: %s", vs_name(s), r->idx,
				 strerror(-err));
		v->warned = true;
		vs_list_add(s, v, VS_LIST_WAITING);
		return 0;
	}
	if (r->kick_fd >= 0 && s->loop) {
		err = loop_add_fd(s->loop, r->kick_fd, EPOLLIN, vs_kick_cb, v);
		if (err) {
			LOG_PEER("%s: ring %u kick fd cannot be watched: %s", vs_name(s),
				 r->idx, strerror(-err));
			return err;
		}
		v->kick_watched = true;
	}
	v->kick_avail = r->vq.last_avail_idx;
	v->kick_idle_run = 0;
	v->kick_pause_shift = 0;
	for (int i = 0; i < 3; i++) {
		vhost_mem_region_get(reg[i]);
		r->held[i] = reg[i];
	}
	v->warned = false;
	r->started = true;
	s->nstarted++;
	vs_list_add(s, v, VS_LIST_RUNNING);
	if (s->ops.ring_started)
		s->ops.ring_started(s->ctx, r);
	return 0;
}

/* Stop the ring if it runs: the device lets go of it, base keeps its place. */
static void vs_ring_stop(struct vhost_server *s, struct vring_slot *v)
{
	struct vhost_vring *r = &v->r;

	if (!r->started)
		return;
	if (v->kick_watched) {
		loop_del_fd(s->loop, r->kick_fd);
		v->kick_watched = false;
	}
	if (v->kick_paused) {
		loop_timer_cancel(s->loop, &v->kick_timer);
		v->kick_paused = false;
	}
	if (s->ops.ring_stopped)
		s->ops.ring_stopped(s->ctx, r);
	r->started = false;
	r->base = r->vq.last_avail_idx;
	vs_put_held(r);
	vs_list_del(s, v);
	if (--s->nstarted == 0)
		vs_grave_release(s);
}

static void vs_stop_all(struct vhost_server *s)
{
	while (s->running)
		vs_ring_stop(s, s->running);
}

/* Try to start every ring that is not running. Returns 0 or -errno. */
static int vs_start_all(struct vhost_server *s)
{
	struct vring_slot *v;
	uint32_t pos;
	int err;

	vs_for_each_slot(s, v, pos) {
		s->steps += VS_COST_SLOT;
		err = vs_ring_try_start(s, v);
		if (err)
			return err;
	}
	return 0;
}

/* Free every slot (rings must be stopped), closing its fds. */
static void vs_free_slots(struct vhost_server *s)
{
	for (unsigned c = 0; c < s->nchunks; c++) {
		struct vring_slot **chunk = s->chunks[c];

		if (!chunk)
			continue;
		for (unsigned i = 0; i < VRING_CHUNK; i++) {
			struct vring_slot *v = chunk[i];

			if (!v)
				continue;
			vs_ring_stop(s, v);
			vs_list_del(s, v);
			vs_ring_fd_set(s, &v->r.kick_fd, -1);
			vs_ring_fd_set(s, &v->r.call_fd, -1);
			vs_ring_fd_set(s, &v->r.err_fd, -1);
			free(v);
		}
		free(chunk);
		s->chunks[c] = NULL;
	}
}

/*
 * The memory table changed. If regions were removed, running rings whose
 * memory went away are moved onto the new mapping of the same addresses, or
 * stopped (and wait for memory) if those addresses are gone. If regions were
 * added, rings waiting for memory are retried: those the new region "added"
 * overlaps, or all of them when added is NULL. Returns 0 or -errno.
 */
static int vs_mem_changed(struct vhost_server *s, bool removed, bool grew,
			  const struct vhost_mem_region *added)
{
	struct vring_slot *v, *next;

	for (v = removed ? s->running : NULL; v; v = next) {
		struct vhost_vring *r = &v->r;
		struct vhost_mem_region *reg[3];
		void *host[3];

		next = v->lnext;
		s->steps += VS_COST_SLOT;
		if (!vhost_mem_region_dead(r->held[0]) &&
		    !vhost_mem_region_dead(r->held[1]) &&
		    !vhost_mem_region_dead(r->held[2]))
			continue;
		s->steps += VS_COST_TRY;
		if (vs_translate(s, r, host, reg) < 0) {
			LOG_PEER("%s: ring %u memory removed while running; ring stopped",
				 vs_name(s), r->idx);
			vs_ring_stop(s, v);
			v->warned = true;
			vs_list_add(s, v, VS_LIST_WAITING);
			continue;
		}
		r->vq.desc = host[0];
		r->vq.avail = host[1];
		r->vq.used = host[2];
		for (int i = 0; i < 3; i++)
			vhost_mem_region_get(reg[i]);
		vs_put_held(r);
		for (int i = 0; i < 3; i++)
			r->held[i] = reg[i];
	}
	if (s->ops.mem_changed)
		s->ops.mem_changed(s->ctx);
	/* A ring tried here leaves the list (started, or back at its head):
	 * next is saved first and only v's links change. */
	for (v = grew ? s->waiting : NULL; v; v = next) {
		int err;

		next = v->lnext;
		s->steps += VS_COST_SLOT;
		if (added && !vs_ring_touches(&v->r, added))
			continue;
		err = vs_ring_try_start(s, v);
		if (err)
			return err;
	}
	return 0;
}

/* ---- session state ---- */

/* Stop every ring, reset the device, forget rings and negotiated features
 * (RESET_DEVICE, RESET_OWNER, end of session). Memory is kept. */
static void vs_reset_device(struct vhost_server *s)
{
	vs_stop_all(s);
	if (s->ops.reset)
		s->ops.reset(s->ctx);
	vs_free_slots(s);
	vs_grave_release(s);
	s->features = 0;
	s->features_set = false;
	s->pf_negotiated = false;
	s->status = 0;
	s->status_halted = false;
	s->dev_status = 0;
}

static void vs_session_begin(struct vhost_server *s)
{
	s->connected = true;
	s->stats.connections++;
	vhost_msg_rx_init(&s->rx);
	if (s->ops.connected)
		s->ops.connected(s->ctx);
}

static void vs_listen_cb(void *arg, uint32_t events);

static void vs_watch_listen(struct vhost_server *s)
{
	int err;

	if (s->listen_fd < 0 || s->listen_watched || !s->loop)
		return;
	err = loop_add_fd(s->loop, s->listen_fd, EPOLLIN, vs_listen_cb, s);
	if (err)
		LOG_ERR("%s: cannot watch the listening socket: %s", vs_name(s),
			strerror(-err));
	else
		s->listen_watched = true;
}

void vhost_server_disconnect(struct vhost_server *s, const char *why)
{
	if (!s || !s->connected || s->disconnecting)
		return;
	if (s->in_msg) {
		s->disconnect_pending = true;
		return;
	}
	s->disconnecting = true;
	LOG_INFO("%s: front-end session closed (%s)", vs_name(s), why ? why : "");

	vs_stop_all(s);
	if (s->ops.reset)
		s->ops.reset(s->ctx);
	if (s->ops.disconnected)
		s->ops.disconnected(s->ctx);
	vs_free_slots(s);
	vs_grave_release(s);
	vhost_mem_clear(&s->mem);
	if (s->conn_fd >= 0) {
		if (s->loop)
			loop_del_fd(s->loop, s->conn_fd);
		vs_close_fd(&s->conn_fd);
	}
	vhost_msg_rx_reset(&s->rx);
	s->features = 0;
	s->features_set = false;
	s->pf_negotiated = false;
	s->pf = 0;
	s->status = 0;
	s->status_halted = false;
	s->dev_status = 0;
	s->mtu = 0;
	s->connected = false;
	s->disconnect_pending = false;
	s->disconnecting = false;
	vs_watch_listen(s);
}

/* ---- message handlers ---- */

typedef int (*vs_handler)(struct vhost_server *s, struct vhost_user_msg *msg,
			  int *fds, int nfds);

/* A request we do not implement, or one the device refused. */
static int vs_refuse(const struct vhost_user_msg *msg)
{
	if (vhost_msg_need_reply(msg) && !vhost_msg_has_reply(msg->hdr.request))
		return VH_FAIL;
	return VH_BAD;
}

static int vs_bad(struct vhost_server *s, const struct vhost_user_msg *msg,
		  const char *why)
{
	LOG_PEER("%s: bad %s: %s", vs_name(s), vhost_msg_name(msg->hdr.request), why);
	return VH_BAD;
}

static int vs_unsupported(struct vhost_server *s, struct vhost_user_msg *msg,
			  int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	LOG_PEER("%s: %s not supported", vs_name(s), vhost_msg_name(msg->hdr.request));
	return vs_refuse(msg);
}

static int vs_get_features(struct vhost_server *s, struct vhost_user_msg *msg,
			   int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	vhost_msg_reply_u64(msg, s->offered_features);
	return VH_REPLY;
}

static int vs_set_features(struct vhost_server *s, struct vhost_user_msg *msg,
			   int *fds, int nfds)
{
	uint64_t f = msg->payload.u64;
	struct vring_slot *v;
	uint32_t pos;
	bool pfn;

	(void)fds;
	(void)nfds;
	if (f & ~s->offered_features)
		return vs_bad(s, msg, "features not offered");
	pfn = (f & F_PROTOCOL) != 0;
	f &= ~F_PROTOCOL;
	if (s->ops.set_features) {
		int err = s->ops.set_features(s->ctx, f);

		if (err) {
			LOG_PEER("%s: device refused features %#llx: %s", vs_name(s),
				 (unsigned long long)f, strerror(-err));
			return vs_refuse(msg);
		}
	}
	s->features = f;
	s->features_set = true;
	s->pf_negotiated = pfn;
	/* Rings never enabled explicitly: enabled iff no protocol features. */
	vs_for_each_slot(s, v, pos) {
		s->steps += VS_COST_SLOT;
		if (v->enable_explicit)
			continue;
		v->r.enabled = !pfn;
		if (!v->r.enabled) {
			vs_ring_stop(s, v);
			vs_list_del(s, v);
		}
	}
	return vs_start_all(s) ? VH_BAD : VH_OK;
}

static int vs_get_protocol_features(struct vhost_server *s, struct vhost_user_msg *msg,
				    int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	vhost_msg_reply_u64(msg, s->offered_pf);
	return VH_REPLY;
}

static int vs_set_protocol_features(struct vhost_server *s, struct vhost_user_msg *msg,
				    int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	if (msg->payload.u64 & ~s->offered_pf)
		return vs_bad(s, msg, "protocol features not offered");
	s->pf = msg->payload.u64;
	return VH_OK;
}

static int vs_set_owner(struct vhost_server *s, struct vhost_user_msg *msg,
			int *fds, int nfds)
{
	(void)s;
	(void)msg;
	(void)fds;
	(void)nfds;
	return VH_OK;
}

static int vs_reset(struct vhost_server *s, struct vhost_user_msg *msg,
		    int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	if (msg->hdr.request == VHOST_USER_RESET_DEVICE &&
	    !(s->offered_pf & PF_BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE)))
		return vs_unsupported(s, msg, fds, nfds);
	vs_reset_device(s);
	return VH_OK;
}

static int vs_set_mem_table(struct vhost_server *s, struct vhost_user_msg *msg,
			    int *fds, int nfds)
{
	const struct vhost_user_memory *mt = &msg->payload.memory;
	bool removed = s->mem.nregions > 0;
	int err;

	(void)nfds;
	/* The whole old table goes away: keep it mapped while elements popped
	 * from running rings may point into it. */
	if (removed && vs_grave_needed(s)) {
		for (unsigned i = 0; i < s->mem.nregions; i++)
			if (vs_grave_hold(s, s->mem.regions[i]) < 0)
				return VH_BAD; /* nothing removed yet */
	}
	vhost_mem_remove_all(&s->mem);
	for (uint32_t i = 0; i < mt->nregions; i++) {
		const struct vhost_user_mem_region *reg = &mt->regions[i];

		s->steps += VS_COST_MMAP;
		err = vhost_mem_add(&s->mem, reg->guest_phys_addr, reg->memory_size,
				    reg->userspace_addr, reg->mmap_offset, fds[i]);
		fds[i] = -1;
		if (err) {
			LOG_PEER("%s: SET_MEM_TABLE region %u (gpa %#llx size %#llx): %s",
				 vs_name(s), i, (unsigned long long)reg->guest_phys_addr,
				 (unsigned long long)reg->memory_size, strerror(-err));
			return VH_BAD;
		}
	}
	return vs_mem_changed(s, removed, mt->nregions > 0, NULL) ? VH_BAD : VH_OK;
}

static int vs_add_mem_reg(struct vhost_server *s, struct vhost_user_msg *msg,
			  int *fds, int nfds)
{
	const struct vhost_user_mem_region *reg = &msg->payload.mem_reg.region;
	int err;

	if (!(s->offered_pf & PF_BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)))
		return vs_unsupported(s, msg, fds, nfds);
	s->steps += VS_COST_MMAP;
	err = vhost_mem_add(&s->mem, reg->guest_phys_addr, reg->memory_size,
			    reg->userspace_addr, reg->mmap_offset, fds[0]);
	fds[0] = -1;
	if (err) {
		LOG_PEER("%s: ADD_MEM_REG (gpa %#llx size %#llx): %s%s", vs_name(s),
			 (unsigned long long)reg->guest_phys_addr,
			 (unsigned long long)reg->memory_size, strerror(-err),
			 err == -ENOSPC ? " (memory slots or removed-region budget used up)"
			 : err == -EDQUOT ? " (mapped memory budget mem= used up)" : "");
		/* Out of slots is a limit the front-end may handle if it asked
		 * for an ack; anything else is a bad request. */
		return err == -ENOSPC || err == -EDQUOT ? vs_refuse(msg) : VH_BAD;
	}
	return vs_mem_changed(s, false, true,
			      vhost_mem_find(&s->mem, reg->guest_phys_addr)) ? VH_BAD : VH_OK;
}

static int vs_rem_mem_reg(struct vhost_server *s, struct vhost_user_msg *msg,
			  int *fds, int nfds)
{
	const struct vhost_user_mem_region *reg = &msg->payload.mem_reg.region;
	struct vhost_mem_region *old;

	if (!(s->offered_pf & PF_BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)))
		return vs_unsupported(s, msg, fds, nfds);
	/* A stray fd (older QEMU sends one) is closed by the caller. */
	old = vhost_mem_find(&s->mem, reg->guest_phys_addr);
	if (!old || old->gpa != reg->guest_phys_addr || old->size != reg->memory_size ||
	    old->uva != reg->userspace_addr)
		return vs_bad(s, msg, "no such region");
	if (vs_grave_needed(s) && vs_grave_hold(s, old) < 0)
		return VH_BAD;
	vhost_mem_remove(&s->mem, reg->guest_phys_addr, reg->memory_size,
			 reg->userspace_addr);
	return vs_mem_changed(s, true, false, NULL) ? VH_BAD : VH_OK;
}

/* The ring of a vring-state message, created; NULL after logging. */
static struct vring_slot *vs_msg_slot(struct vhost_server *s,
				      const struct vhost_user_msg *msg, uint32_t idx)
{
	struct vring_slot *v;

	if (idx >= s->max_rings) {
		LOG_PEER("%s: %s for ring %u, device has %u", vs_name(s),
			 vhost_msg_name(msg->hdr.request), idx, s->max_rings);
		return NULL;
	}
	v = vs_slot_get(s, idx);
	if (!v)
		LOG_ERR("%s: out of memory for ring %u", vs_name(s), idx);
	return v;
}

static int vs_set_vring_num(struct vhost_server *s, struct vhost_user_msg *msg,
			    int *fds, int nfds)
{
	uint32_t num = msg->payload.state.num;
	struct vring_slot *v;

	(void)fds;
	(void)nfds;
	if (!IS_POW2(num) || num > 32768)
		return vs_bad(s, msg, "ring size not a power of two <= 32768");
	v = vs_msg_slot(s, msg, msg->payload.state.index);
	if (!v)
		return VH_BAD;
	vs_ring_stop(s, v);
	v->r.num = (uint16_t)num;
	v->warned = false;
	s->status_halted = false; /* the front-end sets rings up again */
	return vs_ring_try_start(s, v) ? VH_BAD : VH_OK;
}

static int vs_set_vring_addr(struct vhost_server *s, struct vhost_user_msg *msg,
			     int *fds, int nfds)
{
	const struct vhost_user_vring_addr *a = &msg->payload.addr;
	struct vring_slot *v;

	if (a->flags & (1u << VHOST_VRING_F_LOG)) {
		LOG_PEER("%s: ring %u: dirty logging not supported", vs_name(s), a->index);
		return vs_unsupported(s, msg, fds, nfds);
	}
	if (a->flags)
		return vs_bad(s, msg, "unknown flags");
	if ((a->desc_user_addr & 15) || (a->avail_user_addr & 1) ||
	    (a->used_user_addr & 3))
		return vs_bad(s, msg, "misaligned ring");
	v = vs_msg_slot(s, msg, a->index);
	if (!v)
		return VH_BAD;
	vs_ring_stop(s, v);
	v->r.addr_flags = a->flags;
	v->r.desc_uva = a->desc_user_addr;
	v->r.avail_uva = a->avail_user_addr;
	v->r.used_uva = a->used_user_addr;
	v->r.addr_set = true;
	if (!vs_kickable(s, v->r.idx))
		v->r.kick_set = true; /* no kick message can reach this ring */
	v->warned = false;
	s->status_halted = false; /* the front-end sets rings up again */
	return vs_ring_try_start(s, v) ? VH_BAD : VH_OK;
}

static int vs_set_vring_base(struct vhost_server *s, struct vhost_user_msg *msg,
			     int *fds, int nfds)
{
	struct vring_slot *v;

	(void)fds;
	(void)nfds;
	if (msg->payload.state.num > 0xffff)
		return vs_bad(s, msg, "base > 0xffff");
	v = vs_msg_slot(s, msg, msg->payload.state.index);
	if (!v)
		return VH_BAD;
	vs_ring_stop(s, v);
	v->r.base = (uint16_t)msg->payload.state.num;
	s->status_halted = false; /* the front-end sets rings up again */
	return vs_ring_try_start(s, v) ? VH_BAD : VH_OK;
}

static int vs_get_vring_base(struct vhost_server *s, struct vhost_user_msg *msg,
			     int *fds, int nfds)
{
	uint32_t idx = msg->payload.state.index;
	struct vring_slot *v;

	(void)fds;
	(void)nfds;
	if (idx >= s->max_rings)
		return vs_bad(s, msg, "ring index out of range");
	v = vs_slot(s, idx);
	msg->payload.state.num = 0;
	if (v) {
		vs_ring_stop(s, v);
		vs_list_del(s, v);
		vs_ring_fd_set(s, &v->r.kick_fd, -1);
		v->r.kick_set = false;
		msg->payload.state.num = v->r.base;
	}
	vhost_msg_make_reply(msg, sizeof(msg->payload.state));
	return VH_REPLY;
}

/* SET_VRING_KICK / CALL / ERR. */
static int vs_set_vring_fd(struct vhost_server *s, struct vhost_user_msg *msg,
			   int *fds, int nfds)
{
	bool wide = s->pf & PF_BIT(VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX);
	uint32_t req = msg->hdr.request;
	struct vring_slot *v;
	struct vhost_vring *r;
	uint32_t idx;
	bool nofd;
	int fd = -1, err;

	if (vhost_msg_vring_fd_decode(msg->payload.u64, wide, &idx, &nofd) < 0)
		return vs_bad(s, msg, "reserved bits set");
	if (idx >= s->max_rings) {
		LOG_PEER("%s: %s for ring %u, device has %u", vs_name(s),
			 vhost_msg_name(req), idx, s->max_rings);
		return VH_BAD;
	}
	/* Beyond the 256 rings a standard front-end can name (and configures
	 * early), fds only go to rings that have a size and addresses, so
	 * slots cannot be created by the thousand just to hold fds. */
	v = vs_slot(s, idx);
	if (!nofd && idx >= VRING_STD_KICKABLE && (!v || !v->r.num || !v->r.addr_set)) {
		s->stats.fds_refused++;
		LOG_PEER("%s: %s ring %u: ring not configured yet; fd refused", vs_name(s),
			 vhost_msg_name(req), idx);
		return vs_refuse(msg);
	}
	v = vs_msg_slot(s, msg, idx);
	if (!v)
		return VH_BAD;
	r = &v->r;
	if (!nofd) {
		int *place = req == VHOST_USER_SET_VRING_CALL ? &r->call_fd :
			     req == VHOST_USER_SET_VRING_ERR ? &r->err_fd : &r->kick_fd;

		if (nfds != 1)
			return vs_bad(s, msg, "fd missing");
		err = vs_prepare_eventfd(fds[0]);
		if (!err && req == VHOST_USER_SET_VRING_KICK)
			err = vhost_kick_fd_check(fds[0]);
		if (err) {
			LOG_PEER("%s: %s ring %u: fd is not a usable eventfd (%s)",
				 vs_name(s), vhost_msg_name(req), idx, strerror(-err));
			return VH_BAD;
		}
		if (*place < 0 && (s->nfds >= s->max_fds || vhost_fd_budget_used_up())) {
			s->stats.fds_refused++;
			LOG_PEER("%s: %s ring %u: %u fds held, the limit%s", vs_name(s),
				 vhost_msg_name(req), idx, s->nfds,
				 req == VHOST_USER_SET_VRING_KICK ? "; ring polled instead"
								  : "; refused");
			if (req != VHOST_USER_SET_VRING_KICK)
				return vs_refuse(msg);
			/* The device polls a ring without a kick fd; the
			 * front-end's kicks are harmless writes to its own fd. */
			nofd = true;
		} else {
			fd = fds[0];
			fds[0] = -1;
		}
	}

	if (req == VHOST_USER_SET_VRING_CALL) {
		vs_ring_fd_set(s, &r->call_fd, fd);
		return VH_OK;
	}
	if (req == VHOST_USER_SET_VRING_ERR) {
		vs_ring_fd_set(s, &r->err_fd, fd);
		return VH_OK;
	}

	/* KICK: a running ring swaps its watched fd; a change between fd and
	 * polling restarts it so the device sees the new mode. */
	if (r->started && (r->kick_fd >= 0) == (fd >= 0) && fd >= 0 && v->kick_watched) {
		loop_del_fd(s->loop, r->kick_fd);
		v->kick_watched = false;
		vs_ring_fd_set(s, &r->kick_fd, fd);
		err = loop_add_fd(s->loop, fd, EPOLLIN, vs_kick_cb, v);
		if (err) {
			LOG_PEER("%s: ring %u kick fd cannot be watched: %s", vs_name(s),
				 idx, strerror(-err));
			return VH_BAD;
		}
		v->kick_watched = true;
		return VH_OK;
	}
	vs_ring_stop(s, v);
	vs_ring_fd_set(s, &r->kick_fd, fd);
	r->kick_set = true;
	s->status_halted = false; /* the front-end sets rings up again */
	return vs_ring_try_start(s, v) ? VH_BAD : VH_OK;
}

static int vs_set_vring_enable(struct vhost_server *s, struct vhost_user_msg *msg,
			       int *fds, int nfds)
{
	struct vring_slot *v;

	(void)fds;
	(void)nfds;
	if (msg->payload.state.num > 1)
		return vs_bad(s, msg, "enable not 0 or 1");
	v = vs_msg_slot(s, msg, msg->payload.state.index);
	if (!v)
		return VH_BAD;
	v->enable_explicit = true;
	v->r.enabled = msg->payload.state.num == 1;
	if (!v->r.enabled) {
		vs_ring_stop(s, v);
		vs_list_del(s, v);
		return VH_OK;
	}
	s->status_halted = false; /* the front-end sets rings up again */
	return vs_ring_try_start(s, v) ? VH_BAD : VH_OK;
}

static int vs_get_queue_num(struct vhost_server *s, struct vhost_user_msg *msg,
			    int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	vhost_msg_reply_u64(msg, s->ops.queue_num);
	return VH_REPLY;
}

static int vs_get_max_mem_slots(struct vhost_server *s, struct vhost_user_msg *msg,
				int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	vhost_msg_reply_u64(msg, s->mem.max_regions);
	return VH_REPLY;
}

static int vs_net_set_mtu(struct vhost_server *s, struct vhost_user_msg *msg,
			  int *fds, int nfds)
{
	uint64_t mtu = msg->payload.u64;

	(void)fds;
	(void)nfds;
	if (mtu < 68 || mtu > 65535) {
		LOG_PEER("%s: NET_SET_MTU %llu refused", vs_name(s), (unsigned long long)mtu);
		return VH_FAIL;
	}
	s->mtu = (uint32_t)mtu;
	return VH_OK;
}

static int vs_get_config(struct vhost_server *s, struct vhost_user_msg *msg,
			 int *fds, int nfds)
{
	struct vhost_user_config *c = &msg->payload.config;
	int err = -ENOTSUP;

	(void)fds;
	(void)nfds;
	if (s->ops.get_config)
		err = s->ops.get_config(s->ctx, c->offset, c->region, c->size);
	if (err) {
		/* The spec's way to say "failed": an empty payload. */
		s->stats.refused++;
		vhost_msg_make_reply(msg, 0);
		return VH_REPLY;
	}
	vhost_msg_make_reply(msg, VHOST_USER_CONFIG_HDR_SIZE + c->size);
	return VH_REPLY;
}

static int vs_set_config(struct vhost_server *s, struct vhost_user_msg *msg,
			 int *fds, int nfds)
{
	const struct vhost_user_config *c = &msg->payload.config;
	int err = -ENOTSUP;

	(void)fds;
	(void)nfds;
	if (c->flags > 1)
		return vs_bad(s, msg, "unknown flags");
	if (s->ops.set_config)
		err = s->ops.set_config(s->ctx, c->offset, c->region, c->size);
	if (err) {
		LOG_PEER("%s: SET_CONFIG offset %u size %u refused: %s", vs_name(s),
			 c->offset, c->size, strerror(-err));
		return VH_FAIL;
	}
	return VH_OK;
}

static int vs_set_status(struct vhost_server *s, struct vhost_user_msg *msg,
			 int *fds, int nfds)
{
	uint8_t old;

	(void)fds;
	(void)nfds;
	if (msg->payload.u64 > 0xff)
		return vs_bad(s, msg, "status > 0xff");
	old = s->status;
	s->status = (uint8_t)msg->payload.u64;
	if (s->status == 0)
		s->dev_status = 0; /* a reset clears DEVICE_NEEDS_RESET */
	if (s->status == 0 && old != 0) {
		/* Writing 0 resets the device: it must stop consuming buffers.
		 * Rings keep their configuration and base (GET_VRING_BASE still
		 * answers) and start again on DRIVER_OK or a ring message. */
		vs_stop_all(s);
		s->status_halted = true;
	}
	if (s->ops.set_status)
		s->ops.set_status(s->ctx, s->status);
	if (s->status_halted && (s->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
		s->status_halted = false;
		if (vs_start_all(s))
			return VH_BAD;
	}
	return VH_OK;
}

static int vs_get_status(struct vhost_server *s, struct vhost_user_msg *msg,
			 int *fds, int nfds)
{
	(void)fds;
	(void)nfds;
	vhost_msg_reply_u64(msg, (uint64_t)(s->status | s->dev_status));
	return VH_REPLY;
}

static const vs_handler vs_handlers[VHOST_USER_MAX_REQUEST] = {
	[VHOST_USER_GET_FEATURES] = vs_get_features,
	[VHOST_USER_SET_FEATURES] = vs_set_features,
	[VHOST_USER_SET_OWNER] = vs_set_owner,
	[VHOST_USER_RESET_OWNER] = vs_reset,
	[VHOST_USER_SET_MEM_TABLE] = vs_set_mem_table,
	[VHOST_USER_SET_VRING_NUM] = vs_set_vring_num,
	[VHOST_USER_SET_VRING_ADDR] = vs_set_vring_addr,
	[VHOST_USER_SET_VRING_BASE] = vs_set_vring_base,
	[VHOST_USER_GET_VRING_BASE] = vs_get_vring_base,
	[VHOST_USER_SET_VRING_KICK] = vs_set_vring_fd,
	[VHOST_USER_SET_VRING_CALL] = vs_set_vring_fd,
	[VHOST_USER_SET_VRING_ERR] = vs_set_vring_fd,
	[VHOST_USER_GET_PROTOCOL_FEATURES] = vs_get_protocol_features,
	[VHOST_USER_SET_PROTOCOL_FEATURES] = vs_set_protocol_features,
	[VHOST_USER_GET_QUEUE_NUM] = vs_get_queue_num,
	[VHOST_USER_SET_VRING_ENABLE] = vs_set_vring_enable,
	[VHOST_USER_NET_SET_MTU] = vs_net_set_mtu,
	[VHOST_USER_GET_CONFIG] = vs_get_config,
	[VHOST_USER_SET_CONFIG] = vs_set_config,
	[VHOST_USER_RESET_DEVICE] = vs_reset,
	[VHOST_USER_GET_MAX_MEM_SLOTS] = vs_get_max_mem_slots,
	[VHOST_USER_ADD_MEM_REG] = vs_add_mem_reg,
	[VHOST_USER_REM_MEM_REG] = vs_rem_mem_reg,
	[VHOST_USER_SET_STATUS] = vs_set_status,
	[VHOST_USER_GET_STATUS] = vs_get_status,
};

/*
 * Validate and handle one message; fds are consumed. Returns VH_* with
 * *send set when msg now holds a reply to send (also a NACK before a close).
 */
static int vs_dispatch(struct vhost_server *s, struct vhost_user_msg *msg,
		       int *fds, int nfds, bool *send)
{
	uint32_t req = msg->hdr.request;
	bool need_ack = vhost_msg_need_reply(msg) && !vhost_msg_has_reply(req);
	int err, ret;

	*send = false;
	s->stats.messages++;
	err = vhost_msg_check_request(msg, nfds);
	if (err) {
		LOG_PEER("%s: malformed %s (request %u, flags %#x, size %u, %d fds): %s",
			 vs_name(s), vhost_msg_name(req), req, msg->hdr.flags,
			 msg->hdr.size, nfds, strerror(-err));
		ret = VH_BAD;
	} else {
		vs_handler h = vs_handlers[req];

		LOG_DEBUG("%s: %s", vs_name(s), vhost_msg_name(req));
		ret = h ? h(s, msg, fds, nfds) : vs_unsupported(s, msg, fds, nfds);
	}
	if (nfds > 0)
		vhost_msg_close_fds(fds, MIN(nfds, VHOST_USER_MAX_FDS));

	switch (ret) {
	case VH_REPLY:
		*send = true;
		break;
	case VH_OK:
		if (need_ack) {
			vhost_msg_reply_u64(msg, 0);
			*send = true;
		}
		break;
	case VH_FAIL:
		s->stats.refused++;
		if (need_ack) {
			vhost_msg_reply_u64(msg, 1);
			*send = true;
		}
		break;
	default:
		s->stats.bad_messages++;
		if (need_ack) {
			vhost_msg_reply_u64(msg, 1);
			*send = true;
		}
		break;
	}
	return ret;
}

int vhost_server_handle_msg(struct vhost_server *s, struct vhost_user_msg *msg,
			    int *fds, int nfds)
{
	bool send;
	int ret;

	if (nfds > VHOST_USER_MAX_FDS) {
		/* Not a message the socket could deliver: close all of them. */
		vhost_msg_close_fds(fds, nfds);
		nfds = VHOST_USER_MAX_FDS + 1;
		fds = NULL;
	}
	if (!s->connected)
		vs_session_begin(s);
	s->in_msg++;
	if (fds || nfds <= 0) {
		ret = vs_dispatch(s, msg, fds, nfds < 0 ? 0 : nfds, &send);
	} else {
		int none[VHOST_USER_MAX_FDS + 1];

		for (int i = 0; i < nfds; i++)
			none[i] = -1;
		ret = vs_dispatch(s, msg, none, nfds, &send);
	}
	s->in_msg--;
	if (ret == VH_BAD) {
		s->disconnect_pending = false;
		vhost_server_disconnect(s, "bad message");
		return -EPROTO;
	}
	if (s->disconnect_pending)
		vhost_server_disconnect(s, "requested by the device");
	vs_check_faults(s);
	return send ? 1 : 0;
}

/* ---- sockets ---- */

/* Did an access to this session's memory fault (the front-end truncated a
 * file it shared)? Then give up on the front-end. */
static void vs_check_faults(struct vhost_server *s)
{
	if (!s->connected || s->in_msg || !vhost_mem_faults(&s->mem))
		return;
	s->stats.mem_faults++;
	LOG_PEER("%s: shared memory was truncated under the device (SIGBUS)", vs_name(s));
	vhost_server_disconnect(s, "shared memory truncated");
}

static void vs_fault_cb(void *arg, uint32_t events)
{
	struct vhost_server *s = arg;
	uint64_t cnt;

	(void)events;
	while (read(s->fault_fd, &cnt, sizeof(cnt)) == (ssize_t)sizeof(cnt))
		;
	vs_check_faults(s);
}

/* Handle one received message from the socket and answer it. */
static void vs_conn_msg(struct vhost_server *s)
{
	int fds[VHOST_USER_MAX_FDS];
	int nfds = vhost_msg_rx_take(&s->rx, fds);
	struct vhost_user_msg *msg = &s->rx.msg;
	bool send;
	int ret;

	s->in_msg++;
	ret = vs_dispatch(s, msg, fds, nfds, &send);
	s->in_msg--;
	if (send) {
		int err = vhost_msg_send(s->conn_fd, msg, NULL, 0, 0);

		if (err && ret != VH_BAD) {
			LOG_PEER("%s: cannot send the %s reply: %s", vs_name(s),
				 vhost_msg_name(msg->hdr.request), strerror(-err));
			s->disconnect_pending = false;
			vhost_server_disconnect(s, "reply not sent");
			return;
		}
	}
	if (ret == VH_BAD) {
		s->disconnect_pending = false;
		vhost_server_disconnect(s, "bad message");
	} else if (s->disconnect_pending) {
		vhost_server_disconnect(s, "requested by the device");
	}
	vs_check_faults(s);
}

static void vs_conn_cb(void *arg, uint32_t events)
{
	struct vhost_server *s = arg;
	uint64_t used = 0;

	(void)events;
	/* Level-triggered: what is left waits for the next wake-up, after the
	 * other devices had their turn. */
	while (used < VHOST_SERVER_MSG_BUDGET && s->connected) {
		int r = vhost_msg_rx_read(&s->rx, s->conn_fd);

		if (r == 0)
			return;
		if (r < 0) {
			if (r == -EMSGSIZE) {
				s->stats.bad_messages++;
				LOG_PEER("%s: oversized message or too many fds", vs_name(s));
			}
			vhost_server_disconnect(s, r == -ECONNRESET ? "front-end closed"
								   : strerror(-r));
			return;
		}
		s->steps = 0;
		vs_conn_msg(s);
		used += 1 + s->steps / VS_STEPS_PER_UNIT;
	}
}

int vhost_server_attach_fd(struct vhost_server *s, int fd)
{
	int err;

	if (fd < 0)
		return -EINVAL;
	if (!s->loop) {
		close(fd);
		return -EINVAL;
	}
	if (s->connected) {
		close(fd);
		return -EBUSY;
	}
	err = loop_add_fd(s->loop, fd, EPOLLIN, vs_conn_cb, s);
	if (err) {
		close(fd);
		return err;
	}
	s->conn_fd = fd;
	if (s->listen_watched) {
		/* One front-end at a time: the next waits in the backlog. */
		loop_del_fd(s->loop, s->listen_fd);
		s->listen_watched = false;
	}
	vs_session_begin(s);
	LOG_INFO("%s: front-end connected", vs_name(s));
	return 0;
}

static void vs_accept_retry_cb(struct loop_timer *t, void *arg)
{
	struct vhost_server *s = arg;

	(void)t;
	if (!s->connected)
		vs_watch_listen(s);
}

static void vs_listen_cb(void *arg, uint32_t events)
{
	struct vhost_server *s = arg;
	int fd, e;

	(void)events;
	fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED)
			return;
		/* Out of fds (EMFILE, ENFILE) or memory, or worse: the
		 * connection stays in the backlog and the socket stays
		 * readable, so stop watching it for a while instead of
		 * spinning. */
		s->stats.accept_errors++;
		LOG_PEER("%s: accept: %s; retrying in %llu ms", vs_name(s), strerror(e),
			 VS_ACCEPT_RETRY_NS / 1000000);
		if (s->listen_watched) {
			loop_del_fd(s->loop, s->listen_fd);
			s->listen_watched = false;
		}
		loop_timer_arm(s->loop, &s->accept_timer, loop_now_ns() + VS_ACCEPT_RETRY_NS);
		return;
	}
	vhost_peer_log(vs_name(s), fd);
	if (s->ops.accept) {
		s->ops.accept(s->ctx, fd);
		return;
	}
	if (vhost_server_attach_fd(s, fd) < 0)
		LOG_PEER("%s: front-end connection dropped", vs_name(s));
}

static void vs_kick_cb(void *arg, uint32_t events)
{
	struct vring_slot *v = arg;
	struct vhost_vring *r = &v->r;
	struct vhost_server *s = r->srv;
	uint64_t cnt;
	ssize_t n;

	(void)events;
	n = read(r->kick_fd, &cnt, sizeof(cnt));
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n != (ssize_t)sizeof(cnt)) {
		LOG_PEER("%s: ring %u kick fd unreadable", vs_name(s), r->idx);
		vhost_server_disconnect(s, "kick fd unreadable");
		return;
	}
	s->stats.kicks++;
	if (r->started && r->vq.avail) {
		uint16_t idx = le16toh(__atomic_load_n(&r->vq.avail->idx, __ATOMIC_ACQUIRE));

		if (idx != v->kick_avail) {
			v->kick_avail = idx;
			v->kick_idle_run = 0;
			v->kick_pause_shift = 0;
		} else {
			s->stats.kicks_idle++;
			if (++v->kick_idle_run >= VS_KICK_IDLE_MAX) {
				vs_kick_pause(s, v);
				return; /* nothing new: the device has no use for it */
			}
		}
	}
	if (r->started && s->ops.ring_kick)
		s->ops.ring_kick(s->ctx, r); /* r may be gone after this */
}

/* A driver kicks without posting anything, again and again (a spinning or
 * hostile driver): stop watching its kick fd for a while, so it cannot keep
 * the loop busy; the pause doubles while it goes on. */
static void vs_kick_pause(struct vhost_server *s, struct vring_slot *v)
{
	struct vhost_vring *r = &v->r;

	if (!v->kick_watched || !s->loop)
		return;
	loop_del_fd(s->loop, r->kick_fd);
	v->kick_watched = false;
	v->kick_paused = true;
	v->kick_idle_run = 0;
	s->stats.kicks_throttled++;
	loop_timer_arm(s->loop, &v->kick_timer,
		       loop_now_ns() + (VS_KICK_PAUSE_NS << v->kick_pause_shift));
	if (v->kick_pause_shift < VS_KICK_PAUSE_SHIFT_MAX)
		v->kick_pause_shift++;
	LOG_DEBUG("%s: ring %u: idle kicks, kick fd paused", vs_name(s), r->idx);
}

/* The pause is over: watch the kick fd again (a kick that came meanwhile is
 * still pending in it and fires at once) and look at the ring once. */
static void vs_kick_resume(struct loop_timer *t, void *arg)
{
	struct vring_slot *v = arg;
	struct vhost_vring *r = &v->r;
	struct vhost_server *s = r->srv;

	(void)t;
	if (!v->kick_paused)
		return;
	v->kick_paused = false;
	if (!r->started || r->kick_fd < 0 || v->kick_watched)
		return;
	if (loop_add_fd(s->loop, r->kick_fd, EPOLLIN, vs_kick_cb, v) < 0) {
		LOG_PEER("%s: ring %u kick fd cannot be watched again", vs_name(s), r->idx);
		vhost_server_disconnect(s, "kick fd cannot be watched");
		return;
	}
	v->kick_watched = true;
	if (s->ops.ring_kick)
		s->ops.ring_kick(s->ctx, r); /* r may be gone after this */
}

/* Bind and listen on path (replacing a stale socket file). Returns fd or
 * -errno. */
static int vs_listen(struct vhost_server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);

	if (lstat(path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (probe >= 0) {
			int r = connect(probe, (struct sockaddr *)&sa, sizeof(sa));
			int e = errno;

			close(probe);
			if (r == 0 || e == EAGAIN || e == EINPROGRESS)
				return -EADDRINUSE;
		}
		unlink(path);
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (stat(path, &st) == 0) {
		s->sock_dev = st.st_dev;
		s->sock_ino = st.st_ino;
	}
	return fd;
}

struct vhost_server *vhost_server_new(struct loop *loop, const char *path,
				      const struct vhost_dev_ops *ops, void *ctx)
{
	struct vhost_server *s;
	int err;

	if (!ops || ops->max_rings == 0 || ops->max_rings > VHOST_SERVER_MAX_RINGS ||
	    (path && !loop)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->loop = loop;
	s->ops = *ops;
	s->ctx = ctx;
	s->listen_fd = -1;
	s->conn_fd = -1;
	s->fault_fd = -1;
	s->max_fds = VHOST_SERVER_MAX_CONN_FDS;
	loop_timer_init(&s->accept_timer, vs_accept_retry_cb, s);
	s->max_rings = ops->max_rings;
	s->nchunks = (ops->max_rings + VRING_CHUNK - 1) / VRING_CHUNK;
	s->chunks = calloc(s->nchunks, sizeof(*s->chunks));
	s->offered_features = ops->features | F_PROTOCOL;
	s->offered_pf = ops->protocol_features & VHOST_SERVER_PF_IMPLEMENTED;
	if (!ops->get_config && !ops->set_config)
		s->offered_pf &= ~PF_BIT(VHOST_USER_PROTOCOL_F_CONFIG);
	vhost_mem_init(&s->mem);
	vhost_msg_rx_init(&s->rx);
	if (!s->chunks) {
		err = -ENOMEM;
		goto fail;
	}
	if (loop) {
		/* Where the SIGBUS handler reports faults in our memory. */
		s->fault_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->fault_fd < 0) {
			err = -errno;
			goto fail;
		}
		err = loop_add_fd(loop, s->fault_fd, EPOLLIN, vs_fault_cb, s);
		if (err)
			goto fail;
		s->fault_watched = true;
		vhost_mem_set_fault_fd(&s->mem, s->fault_fd);
	}
	if (path) {
		s->path = strdup(path);
		if (!s->path) {
			err = -ENOMEM;
			goto fail;
		}
		s->listen_fd = vs_listen(s, path);
		if (s->listen_fd < 0) {
			err = s->listen_fd;
			s->listen_fd = -1;
			LOG_ERR("%s: cannot listen: %s", path, strerror(-err));
			goto fail;
		}
		vs_watch_listen(s);
		if (!s->listen_watched) {
			err = -ENOMEM;
			close(s->listen_fd);
			unlink(path);
			goto fail;
		}
	}
	return s;

fail:
	if (s->fault_watched)
		loop_del_fd(loop, s->fault_fd);
	if (s->fault_fd >= 0)
		close(s->fault_fd);
	free(s->chunks);
	free(s->path);
	free(s);
	errno = -err;
	return NULL;
}

void vhost_server_free(struct vhost_server *s)
{
	struct stat st;

	if (!s)
		return;
	s->in_msg = 0;
	s->disconnecting = false;
	vhost_server_disconnect(s, "server freed");
	vs_free_slots(s);
	vs_grave_release(s);
	vhost_mem_set_fault_fd(&s->mem, -1);
	vhost_mem_clear(&s->mem);
	if (s->fault_fd >= 0) {
		if (s->fault_watched)
			loop_del_fd(s->loop, s->fault_fd);
		close(s->fault_fd);
	}
	if (s->loop)
		loop_timer_cancel(s->loop, &s->accept_timer);
	if (s->listen_fd >= 0) {
		if (s->listen_watched)
			loop_del_fd(s->loop, s->listen_fd);
		close(s->listen_fd);
		/* Remove the socket file only if it is still ours. */
		if (s->path && stat(s->path, &st) == 0 && st.st_dev == s->sock_dev &&
		    st.st_ino == s->sock_ino)
			unlink(s->path);
	}
	free(s->grave);
	free(s->chunks);
	free(s->path);
	free(s->name);
	free(s);
}

bool vhost_server_check_hangup(struct vhost_server *s)
{
	struct pollfd p = { .fd = s->conn_fd, .events = POLLRDHUP };

	if (!s->connected || s->conn_fd < 0 || s->in_msg)
		return false;
	if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return false;
	vhost_server_disconnect(s, "front-end closed");
	return true;
}

void vhost_server_set_name(struct vhost_server *s, const char *name)
{
	free(s->name);
	s->name = strdup(name);
}

/* ---- accessors and device-side helpers ---- */

struct vhost_mem *vhost_server_mem(struct vhost_server *s)
{
	return &s->mem;
}

void vhost_server_set_max_fds(struct vhost_server *s, unsigned max_fds)
{
	s->max_fds = max_fds;
}

uint64_t vhost_server_features(const struct vhost_server *s)
{
	return s->features;
}

uint64_t vhost_server_protocol_features(const struct vhost_server *s)
{
	return s->pf;
}

bool vhost_server_connected(const struct vhost_server *s)
{
	return s->connected;
}

const struct vhost_server_stats *vhost_server_stats(const struct vhost_server *s)
{
	return &s->stats;
}

const char *vhost_server_path(const struct vhost_server *s)
{
	return s->path ? s->path : "";
}

struct vhost_vring *vhost_server_vring(struct vhost_server *s, unsigned idx)
{
	struct vring_slot *v = vs_slot(s, idx);

	return v ? &v->r : NULL;
}

/* Add 1 to an eventfd the front-end gave us (non-blocking; a full counter
 * already means "signalled"). */
static void vs_signal(int fd)
{
	uint64_t one = 1;
	ssize_t n;

	do {
		n = write(fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
}

void vhost_vring_call(struct vhost_vring *r)
{
	if (r->call_fd < 0)
		return;
	vs_signal(r->call_fd);
	r->srv->stats.calls++;
}

void vhost_vring_notify(struct vhost_vring *r)
{
	if (!r->started)
		return;
	if (vq_dev_should_notify(&r->vq))
		vhost_vring_call(r);
}

void vhost_server_set_status_bits(struct vhost_server *s, uint8_t bits)
{
	s->dev_status |= bits;
}

uint8_t vhost_server_status(const struct vhost_server *s)
{
	return s->status | s->dev_status;
}

void vhost_vring_report_error(struct vhost_vring *r)
{
	vhost_server_set_status_bits(r->srv, VIRTIO_CONFIG_S_NEEDS_RESET);
	if (r->err_fd >= 0)
		vs_signal(r->err_fd);
}
