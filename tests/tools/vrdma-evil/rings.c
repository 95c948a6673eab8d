// SPDX-License-Identifier: BSD-3-Clause
/*
 * vrdma-evil: ring attacks. After a correct handshake (evil_dev_open), one
 * bad chain is published on the receive, transmit or control ring, and the
 * back-end must: signal that ring's error eventfd, report
 * VIRTIO_CONFIG_S_NEEDS_RESET in GET_STATUS, stop touching the ring (its used
 * index never moves again, even after more kicks), and accept RESET_DEVICE
 * and a new ring setup on the same connection, after which frames flow again.
 */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "evil.h"

/* Bad chains. */
enum evil_chain {
	K_HEAD_OOB,      /* avail entry = ring size */
	K_HEAD_FFFF,     /* avail entry = 0xffff */
	K_LOOP_SELF,     /* desc 0 -> 0 */
	K_LOOP_2,        /* desc 0 -> 1 -> 0 */
	K_NEXT_OOB,      /* next = ring size + 3 */
	K_IND_LEN,       /* indirect table of 17 bytes */
	K_IND_LEN0,      /* indirect table of 0 bytes */
	K_IND_HUGE,      /* indirect table of 32769 entries */
	K_IND_NESTED,    /* indirect inside indirect */
	K_IND_LOOP,      /* loop inside an indirect table */
	K_IND_NEXT_OOB,  /* next beyond the indirect table */
	K_IND_OUTSIDE,   /* indirect table outside shared memory */
	K_IND_WITH_NEXT, /* INDIRECT and NEXT together */
	K_IND_NOT_NEG,   /* indirect without VIRTIO_RING_F_INDIRECT_DESC */
	K_ADDR_OUTSIDE,  /* buffer outside shared memory */
	K_ADDR_STRADDLE, /* buffer crossing the end of the region */
	K_ADDR_WRAP,     /* addr + len wraps 2^64 */
	K_LEN_SUM_WRAP,  /* total chain length beyond 2^32 */
	K_CHAIN_LONG,    /* more iovecs than the device takes */
	K_ORDER,         /* device-readable after device-writable */
	K_AVAIL_JUMP,    /* avail idx more than the ring size ahead */
	K_MAX
};

#define ATTACK_ARG(ring, kind) ((ring) * 100 + (kind))
#define BIG_GPA 0x100000000000ull
#define BIG_SIZE ((4ull << 30) + 4096)

static const char *const ring_names[] = { "rx", "tx", "ctrl" };

static void desc_set(struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

/* A second, sparse 4 GiB region far from our arena (never mapped here). */
static int add_big_region(struct evil_dev *d)
{
	struct vhost_user_mem_region reg = { BIG_GPA, BIG_SIZE, BIG_GPA, 0 };
	int fd = memfd_create("vrdma-evil-big", MFD_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)BIG_SIZE) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = vhost_client_add_mem_reg(&d->vc, &reg, fd);
	close(fd);
	return rc;
}

/*
 * Write the bad chain kind on ring idx and publish it (avail entry + index).
 * Descriptors that should look fine are device-writable on the receive ring
 * and device-readable elsewhere. Returns 0 or -errno.
 */
static int post_bad_chain(struct evil_dev *d, unsigned idx, enum evil_chain kind)
{
	struct vq_drv *vq = &d->r[idx].vq;
	struct vring_desc *desc = vq->desc, *ind = (struct vring_desc *)d->ind;
	uint16_t num = vq->num, head = 0;
	uint16_t w = idx == EVIL_RXQ ? VRING_DESC_F_WRITE : 0;
	uint64_t buf = evil_gpa(d->txbuf + 100 * EVIL_BUF);
	uint64_t ind_gpa = evil_gpa(ind);
	uint32_t advance = 1;
	int rc;

	/* The payload of the "fine" descriptors: a frame to ourselves, so that
	 * a device that missed the violation would visibly act on it. */
	memset(d->txbuf + 100 * EVIL_BUF, 0, EVIL_BUF);
	memcpy(d->txbuf + 100 * EVIL_BUF + EVIL_NET_HDR, d->mac, 6);
	switch (kind) {
	case K_HEAD_OOB:
		head = num;
		break;
	case K_HEAD_FFFF:
		head = 0xffff;
		break;
	case K_LOOP_SELF:
		desc_set(&desc[0], buf, 64, w | VRING_DESC_F_NEXT, 0);
		break;
	case K_LOOP_2:
		desc_set(&desc[0], buf, 64, w | VRING_DESC_F_NEXT, 1);
		desc_set(&desc[1], buf, 64, w | VRING_DESC_F_NEXT, 0);
		break;
	case K_NEXT_OOB:
		desc_set(&desc[0], buf, 64, w | VRING_DESC_F_NEXT, (uint16_t)(num + 3));
		break;
	case K_IND_LEN:
		desc_set(&ind[0], buf, 64, w, 0);
		desc_set(&desc[0], ind_gpa, 17, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_LEN0:
		desc_set(&desc[0], ind_gpa, 0, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_HUGE:
		desc_set(&desc[0], ind_gpa, 32769u * 16u, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_NESTED:
		desc_set(&ind[0], ind_gpa + 16 * 16, 16, VRING_DESC_F_INDIRECT, 0);
		desc_set(&ind[16], buf, 64, w, 0);
		desc_set(&desc[0], ind_gpa, 16, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_LOOP:
		desc_set(&ind[0], buf, 64, w | VRING_DESC_F_NEXT, 1);
		desc_set(&ind[1], buf, 64, w | VRING_DESC_F_NEXT, 0);
		desc_set(&desc[0], ind_gpa, 32, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_NEXT_OOB:
		desc_set(&ind[0], buf, 64, w | VRING_DESC_F_NEXT, 7);
		desc_set(&ind[1], buf, 64, w, 0);
		desc_set(&desc[0], ind_gpa, 32, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_OUTSIDE:
		desc_set(&desc[0], 0x1000, 32, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_IND_WITH_NEXT:
		desc_set(&ind[0], buf, 64, w, 0);
		desc_set(&desc[0], ind_gpa, 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
		desc_set(&desc[1], buf, 64, w, 0);
		break;
	case K_IND_NOT_NEG:
		desc_set(&ind[0], buf, 64, w, 0);
		desc_set(&desc[0], ind_gpa, 16, VRING_DESC_F_INDIRECT, 0);
		break;
	case K_ADDR_OUTSIDE:
		desc_set(&desc[0], 0x1000, 64, w, 0);
		break;
	case K_ADDR_STRADDLE:
		desc_set(&desc[0], evil_gpa(d->arena) + d->arena_size - 16, 64, w, 0);
		break;
	case K_ADDR_WRAP:
		desc_set(&desc[0], 0xfffffffffffff000ull, 0x2000, w, 0);
		break;
	case K_LEN_SUM_WRAP:
		rc = add_big_region(d);
		if (rc < 0) {
			evil_say("setup: ADD_MEM_REG of a sparse 4 GiB region: %s", strerror(-rc));
			return rc;
		}
		desc_set(&desc[0], BIG_GPA, 0xffffffffu, w | VRING_DESC_F_NEXT, 1);
		desc_set(&desc[1], BIG_GPA, 0xffffffffu, w, 0);
		break;
	case K_CHAIN_LONG:
		for (uint16_t i = 0; i < 70; i++)
			desc_set(&desc[i], buf + 16u * i, 16, (uint16_t)(w | (i < 69 ? VRING_DESC_F_NEXT : 0)),
				 (uint16_t)(i + 1));
		break;
	case K_ORDER:
		desc_set(&desc[0], buf, 64, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
		desc_set(&desc[1], buf, 64, 0, 0);
		break;
	case K_AVAIL_JUMP:
		desc_set(&desc[0], buf, 64, w, 0);
		advance = num + 1u;
		break;
	default:
		return -EINVAL;
	}
	vq->avail->ring[vq->avail_idx & (num - 1)] = htole16(head);
	vq->avail_idx = (uint16_t)(vq->avail_idx + advance);
	vq_drv_kick_prepare(vq);
	evil_kick(d, idx);
	return 0;
}

static const char *chain_name(enum evil_chain k)
{
	static const char *const n[K_MAX] = {
		"head_oob", "head_ffff", "loop_self", "loop_2", "next_oob", "indirect_len",
		"indirect_len0", "indirect_huge", "indirect_nested", "indirect_loop",
		"indirect_next_oob", "indirect_outside", "indirect_with_next",
		"indirect_not_negotiated", "addr_outside", "addr_straddle", "addr_wrap",
		"len_sum_wrap", "chain_too_long", "write_then_read", "avail_jump",
	};
	return k < K_MAX ? n[k] : "?";
}

/* Ring idx broken: its used index must not move any more. Kick again and
 * make two round trips on the socket, then look. (One-sided: a device that
 * writes late is missed, a failure is never invented.) Returns true if
 * untouched. */
static bool ring_untouched(struct evil_dev *d, unsigned idx, uint16_t used_before)
{
	uint8_t st;

	evil_kick(d, idx);
	if (evil_status(d, &st) < 0 || evil_status(d, &st) < 0)
		return false;
	return d->r[idx].vq.used->idx == used_before;
}

/* Reset the device on the same connection and check it works again. */
static bool reset_and_check(struct evil_dev *d, unsigned idx)
{
	uint8_t st = 0xff;
	int rc;

	rc = vhost_client_reset_device(&d->vc);
	if (!rc)
		rc = evil_status(d, &st);
	evil_say("status_after_reset 0x%02x", st);
	if (rc < 0 || st != 0)
		return false;
	rc = evil_dev_restart(d);
	if (!rc && d->o->rdma_dev) {
		/* the virtio-rdma device: CREATE_PD (command 4) answered OK */
		rc = evil_rdma_cmd(d, 4, NULL, 0);
		if (rc > 0) {
			evil_say("virtio-rdma command refused after the reset (%d)", rc);
			rc = -EIO;
		}
	} else if (!rc) {
		rc = evil_loopback(d, 1000 + idx);
	}
	if (!rc && idx == EVIL_CTRLQ && !d->o->rdma_dev) {
		uint8_t on = 1;

		rc = evil_ctrl(d, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1);
		if (rc > 0) {
			evil_say("control command refused after the reset (ack %d)", rc);
			rc = -EIO;
		}
	}
	if (rc < 0)
		evil_say("after the reset: %s", strerror(-rc));
	return rc == 0;
}

static int run_ring(const struct evil_opts *o, const struct evil_attack *a)
{
	unsigned idx = (unsigned)a->arg / 100;
	enum evil_chain kind = (enum evil_chain)(a->arg % 100);
	unsigned flags = 0;
	struct evil_dev d;
	uint16_t used_before;
	bool err_fired, needs_reset, untouched, reset_ok;
	uint8_t st = 0;
	int rc;

	if (kind == K_IND_NOT_NEG)
		flags |= EVIL_F_NO_INDIRECT;
	if (idx == EVIL_RXQ)
		flags |= EVIL_F_NO_RX_POST;
	if (o->rdma_dev && idx != EVIL_CTRLQ) {
		evil_say("setup: the virtio-rdma device has no %s ring", ring_names[idx]);
		return EVIL_SETUP;
	}
	if (evil_dev_open(&d, o, flags) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	/* The device works before the attack (not for an empty rx ring). */
	if (o->rdma_dev) {
		rc = evil_rdma_cmd(&d, 4, NULL, 0); /* CREATE_PD */
		if (rc != 0) {
			evil_say("setup: virtio-rdma command before the attack: %d", rc);
			evil_dev_close(&d);
			return EVIL_SETUP;
		}
	} else if (idx != EVIL_RXQ && (rc = evil_loopback(&d, 1)) < 0) {
		evil_say("setup: loopback before the attack: %s", strerror(-rc));
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	used_before = d.r[idx].vq.used->idx;
	if (post_bad_chain(&d, idx, kind) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	if (idx == EVIL_RXQ) {
		/* A frame for us makes the device take a receive buffer. */
		uint8_t f[64] = { 0 };

		memcpy(f, d.mac, 6);
		memcpy(f + 6, d.mac, 6);
		f[12] = 0x88;
		f[13] = 0xb7;
		evil_tx(&d, f, sizeof(f));
	}
	err_fired = evil_wait_err(&d, idx, o->timeout_ms);
	rc = evil_status(&d, &st);
	needs_reset = rc == 0 && (st & VIRTIO_CONFIG_S_NEEDS_RESET);
	evil_say("err_eventfd %d", err_fired);
	evil_say("status 0x%02x needs_reset %d", st, needs_reset);
	untouched = rc == 0 && ring_untouched(&d, idx, used_before);
	evil_say("ring_untouched %d", untouched);
	evil_say("outcome %s", err_fired && needs_reset ? "broken" : "not-broken");
	reset_ok = rc == 0 && reset_and_check(&d, idx);
	evil_say("reset_ok %d", reset_ok);
	evil_dev_close(&d);
	return evil_verdict(err_fired && needs_reset && untouched && reset_ok,
			    "ring %s after %s: err eventfd %d, NEEDS_RESET %d, untouched %d, "
			    "works after reset %d", ring_names[idx], chain_name(kind), err_fired,
			    needs_reset, untouched, reset_ok);
}

/*
 * SET_VRING_ADDR with the used ring outside shared memory, on a running
 * device: the back-end must not start (or touch) that ring, keep the session,
 * and start the ring once its addresses are valid again.
 */
static int run_addr_outside(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_ring *r;
	struct vhost_user_vring_addr addr;
	struct evil_dev d;
	uint8_t f[64], back[EVIL_BUF], st = 0xff;
	bool alive, quiet, works;
	int rc, n;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	r = &d.r[EVIL_TXQ];
	memset(&addr, 0, sizeof(addr));
	addr.index = EVIL_TXQ;
	addr.desc_user_addr = evil_gpa(vq_drv_desc(&r->vq));
	addr.avail_user_addr = evil_gpa(vq_drv_avail(&r->vq));
	addr.used_user_addr = 0x10000; /* nothing shared there */
	rc = vhost_client_set_vring_addr(&d.vc, &addr);
	evil_say("set_vring_addr_outside %s", rc == 0 ? "accepted" : rc == -EIO ? "refused" : "failed");
	/* A frame to ourselves on the ring the device must not use yet. */
	memcpy(f, d.mac, 6);
	memcpy(f + 6, d.mac, 6);
	f[12] = 0x88;
	f[13] = 0xb7;
	memset(f + 14, 0x5a, sizeof(f) - 14);
	if (rc == 0)
		rc = evil_tx(&d, f, sizeof(f));
	alive = rc == 0 && evil_status(&d, &st) == 0 && evil_status(&d, &st) == 0;
	quiet = alive && !(st & VIRTIO_CONFIG_S_NEEDS_RESET) &&
		!vq_drv_has_used(&d.r[EVIL_RXQ].vq);
	evil_say("outcome %s", alive ? "alive" : "closed");
	evil_say("status 0x%02x needs_reset %d", st, !!(st & VIRTIO_CONFIG_S_NEEDS_RESET));
	evil_say("ring_untouched %d", quiet);
	/* Valid addresses again: the ring starts and the frame goes round. */
	works = false;
	if (alive) {
		addr.used_user_addr = evil_gpa(vq_drv_used(&r->vq));
		rc = vhost_client_set_vring_addr(&d.vc, &addr);
		n = rc ? rc : evil_rx(&d, back, sizeof(back), o->timeout_ms);
		works = n == (int)sizeof(f) && !memcmp(back, f, sizeof(f));
	}
	evil_say("works_after_fix %d", works);
	evil_dev_close(&d);
	return evil_verdict(alive && quiet && works,
			    "used ring outside shared memory: session kept %d, ring untouched %d, "
			    "works once fixed %d", alive, quiet, works);
}

/*
 * SET_STATUS 0 is a device reset (virtio 1.x 2.1.2 / 2.4): afterwards the
 * device must not consume buffers until the driver sets it up again. Post a
 * frame after the reset and watch the transmit ring: a device that takes
 * the frame is seen at once (its call eventfd); one that leaves it alone is
 * given EVIL_STATUS0_WAIT_MS to prove it (an absence can only be waited for).
 */
#define EVIL_STATUS0_WAIT_MS 1500

static int run_status0(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint8_t f[64] = { 0 }, st = 0xff;
	uint16_t used;
	bool untouched;
	int rc;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0 || evil_loopback(&d, 7) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	used = d.r[EVIL_TXQ].vq.used->idx;
	rc = vhost_client_set_status(&d.vc, 0);
	if (!rc)
		rc = evil_status(&d, &st);
	evil_say("status_after_reset 0x%02x", st);
	memcpy(f, d.mac, 6);
	memcpy(f + 6, d.mac, 6);
	f[12] = 0x88;
	f[13] = 0xb7;
	if (!rc)
		rc = evil_tx(&d, f, sizeof(f));
	untouched = rc == 0 && !evil_wait_used(&d, EVIL_TXQ, EVIL_STATUS0_WAIT_MS) &&
		    d.r[EVIL_TXQ].vq.used->idx == used && evil_status(&d, &st) == 0;
	evil_say("outcome %s", rc ? "closed" : "alive");
	evil_say("ring_untouched %d", untouched);
	evil_dev_close(&d);
	return evil_verdict(rc == 0 && untouched,
			    "after SET_STATUS 0 the device still consumed a frame of the transmit ring");
}

/* Wait until the back-end closes the connection (POLLHUP / EOF).
 * Returns true if it did within timeout_ms. */
static bool wait_closed(struct evil_dev *d, int timeout_ms)
{
	uint64_t nack;
	unsigned replies;

	return evil_outcome(vhost_client_fd(&d->vc), false, timeout_ms, &nack, &replies) ==
	       EVIL_OUT_CLOSED;
}

/*
 * Truncate the shared memfd under the running device. arg 0: a sealable memfd
 * (the back-end must have sealed it against shrinking: the truncation fails
 * and the device keeps working); arg 1: an unsealable one (the truncation
 * works; the back-end's next access faults and it must drop this session
 * only, and survive).
 */
static int run_shrink(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	int seals, rc;
	bool ok;

	if (evil_dev_open(&d, o, a->arg == 0 ? EVIL_F_SEALABLE : 0) < 0 ||
	    evil_loopback(&d, 3) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	seals = fcntl(d.arena_fd, F_GET_SEALS);
	evil_say("seals %s", seals < 0 ? "none (not sealable)" : seals & F_SEAL_SHRINK ?
		 "F_SEAL_SHRINK" : "no F_SEAL_SHRINK");
	if (a->arg == 0) {
		rc = ftruncate(d.arena_fd, 4096);
		evil_say("shrink %s", rc == 0 ? "done" : errno == EPERM ? "refused (sealed)" :
			 strerror(errno));
		if (rc == 0) {
			/* Not sealed: the memory is gone, do not touch it; the
			 * back-end must survive like in the unsealable case. */
			evil_kick(&d, EVIL_TXQ);
			ok = wait_closed(&d, o->timeout_ms);
			evil_say("outcome %s", ok ? "closed" : "timeout");
			evil_dev_close(&d);
			return evil_verdict(false, "the back-end did not seal the sealable memfd "
					    "(session %s after the truncation)",
					    ok ? "closed" : "kept");
		}
		rc = evil_loopback(&d, 4);
		evil_say("outcome %s", rc == 0 ? "alive" : "broken");
		evil_dev_close(&d);
		return evil_verdict(seals >= 0 && (seals & F_SEAL_SHRINK) && rc == 0,
				    "sealed %d, works after the refused shrink %d",
				    seals >= 0 && (seals & F_SEAL_SHRINK), rc == 0);
	}
	if (ftruncate(d.arena_fd, 0) < 0) {
		evil_say("setup: ftruncate: %s", strerror(errno));
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	/* From here on the arena must not be touched (it would fault here
	 * too); a kick makes the device look at its rings. */
	evil_kick(&d, EVIL_TXQ);
	evil_kick(&d, EVIL_CTRLQ);
	ok = wait_closed(&d, o->timeout_ms);
	evil_say("outcome %s", ok ? "closed" : "timeout");
	evil_dev_close(&d);
	return evil_verdict(ok, "the session was not closed after the memory under it was truncated");
}

/* REM_MEM_REG of the memory the running rings live in, then the same region
 * again: the rings must stop (not fault, not use freed memory) and start
 * again once the memory is back. */
static int run_remove_under_rings(const struct evil_opts *o, const struct evil_attack *a)
{
	struct vhost_user_mem_region reg;
	struct evil_dev d;
	uint8_t st = 0;
	int rc, rc2;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0 || evil_loopback(&d, 5) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	memset(&reg, 0, sizeof(reg));
	reg.guest_phys_addr = evil_gpa(d.arena);
	reg.userspace_addr = evil_gpa(d.arena);
	reg.memory_size = d.arena_size;
	rc = vhost_client_rem_mem_reg(&d.vc, &reg);
	evil_say("rem_mem_reg %s", rc == 0 ? "accepted" : strerror(-rc));
	evil_kick(&d, EVIL_TXQ);
	evil_kick(&d, EVIL_RXQ);
	rc2 = evil_status(&d, &st);
	evil_say("outcome %s", rc2 == 0 ? "alive" : "closed");
	evil_say("status 0x%02x needs_reset %d", st, !!(st & VIRTIO_CONFIG_S_NEEDS_RESET));
	if (rc == 0 && rc2 == 0) {
		rc = vhost_client_add_mem_reg(&d.vc, &reg, d.arena_fd);
		if (!rc)
			rc = evil_loopback(&d, 6);
		evil_say("works_after_readd %d", rc == 0);
	}
	evil_dev_close(&d);
	return evil_verdict(rc == 0 && rc2 == 0,
			    "removing the rings' memory and adding it back: %s",
			    strerror(rc ? -rc : -rc2));
}

/* More ADD_MEM_REG than the back-end has slots (GET_MAX_MEM_SLOTS): the extra
 * ones must be refused (NACK) or end the session, never accepted. */
static int run_slots(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	uint64_t slots = 0;
	unsigned accepted = 1, n;
	int fd, rc = 0;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0 ||
	    vhost_client_get_max_mem_slots(&d.vc, &slots) < 0 || slots > 100000) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	n = (unsigned)slots + 8;
	fd = memfd_create("vrdma-evil-slots", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)n * 4096) < 0) {
		if (fd >= 0)
			close(fd);
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	for (unsigned i = 0; i < n; i++) {
		struct vhost_user_mem_region reg = {
			.guest_phys_addr = 0x200000000000ull + (uint64_t)i * 8192,
			.memory_size = 4096,
			.userspace_addr = 0x200000000000ull + (uint64_t)i * 8192,
			.mmap_offset = (uint64_t)i * 4096,
		};

		rc = vhost_client_add_mem_reg(&d.vc, &reg, fd);
		if (rc < 0)
			break;
		accepted++; /* the arena is region 0 */
	}
	close(fd);
	evil_say("slots %llu accepted %u of %u (with the arena) stopped by %s",
		 (unsigned long long)slots, accepted, n + 1,
		 rc == 0 ? "nothing" : rc == -EIO ? "a NACK" : "the end of the session");
	evil_say("outcome %s", vhost_client_alive(&d.vc) ? "alive" : "closed");
	evil_dev_close(&d);
	return evil_verdict(rc < 0 && accepted <= slots,
			    "%u regions accepted with %llu slots", accepted,
			    (unsigned long long)slots);
}

/*
 * Replace the call, error and kick eventfds of the running rings again and
 * again (more fds in total than a session may hold at once): the back-end
 * must close each replaced fd (and give back its share of the fd budget), and
 * the device must still work with the last ones.
 */
#define EVIL_CHURN_ROUNDS 500

static int run_fd_churn(const struct evil_opts *o, const struct evil_attack *a)
{
	struct evil_dev d;
	unsigned done = 0;
	int rc = 0;

	(void)a;
	if (evil_dev_open(&d, o, 0) < 0 || evil_loopback(&d, 8) < 0) {
		evil_dev_close(&d);
		return EVIL_SETUP;
	}
	for (unsigned i = 0; i < EVIL_CHURN_ROUNDS && !rc; i++) {
		for (unsigned idx = 0; idx < EVIL_NRINGS && !rc; idx++) {
			struct evil_ring *r = &d.r[idx];
			int call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			int err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			int kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

			if (call < 0 || err < 0 || kick < 0) {
				rc = -errno;
			} else {
				rc = vhost_client_set_vring_call(&d.vc, idx, call);
				if (!rc)
					rc = vhost_client_set_vring_err(&d.vc, idx, err);
				if (!rc)
					rc = vhost_client_set_vring_kick(&d.vc, idx, kick);
			}
			/* The back-end has its own copies: ours replace the old. */
			close(r->call);
			close(r->err);
			close(r->kick);
			r->call = call;
			r->err = err;
			r->kick = kick;
			if (!rc)
				done += 3;
		}
	}
	evil_say("fds replaced %u%s%s", done, rc ? ", then " : "", rc ? strerror(-rc) : "");
	if (!rc)
		rc = evil_loopback(&d, 9);
	evil_say("outcome %s", vhost_client_alive(&d.vc) ? "alive" : "closed");
	evil_dev_close(&d);
	return evil_verdict(rc == 0, "after replacing %u eventfds: %s", done, strerror(-rc));
}

/* A bad chain of kind k on queue q (rx, tx or ctrl), named "q.name". */
#define RING(q, k, name, what) { #q "." name, EVIL_BROKEN, what, run_ring, ATTACK_ARG(q, k) }
#define rx EVIL_RXQ
#define tx EVIL_TXQ
#define ctrl EVIL_CTRLQ
const struct evil_attack evil_ring_attacks[] = {
	RING(tx, K_HEAD_OOB, "head_oob", "avail ring entry = ring size"),
	RING(tx, K_HEAD_FFFF, "head_ffff", "avail ring entry = 0xffff"),
	RING(tx, K_LOOP_SELF, "loop_self", "descriptor chained to itself"),
	RING(tx, K_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0"),
	RING(tx, K_NEXT_OOB, "next_oob", "next = ring size + 3"),
	RING(tx, K_IND_LEN, "indirect_len", "indirect table of 17 bytes"),
	RING(tx, K_IND_LEN0, "indirect_len0", "indirect table of 0 bytes"),
	RING(tx, K_IND_HUGE, "indirect_huge", "indirect table of 32769 entries"),
	RING(tx, K_IND_NESTED, "indirect_nested", "indirect descriptor inside an indirect table"),
	RING(tx, K_IND_LOOP, "indirect_loop", "loop inside an indirect table"),
	RING(tx, K_IND_NEXT_OOB, "indirect_next_oob", "next beyond the indirect table"),
	RING(tx, K_IND_OUTSIDE, "indirect_outside", "indirect table outside shared memory"),
	RING(tx, K_IND_WITH_NEXT, "indirect_with_next", "INDIRECT and NEXT on one descriptor"),
	RING(tx, K_IND_NOT_NEG, "indirect_not_negotiated",
	     "indirect descriptor without INDIRECT_DESC"),
	RING(tx, K_ADDR_OUTSIDE, "addr_outside", "buffer outside shared memory"),
	RING(tx, K_ADDR_STRADDLE, "addr_straddle", "buffer crossing the end of shared memory"),
	RING(tx, K_ADDR_WRAP, "addr_wrap", "addr + len wraps 2^64"),
	RING(tx, K_LEN_SUM_WRAP, "len_sum_wrap", "chain length beyond 2^32 (4 GiB region)"),
	RING(tx, K_CHAIN_LONG, "chain_too_long",
	     "chain of 70 descriptors (more iovecs than allowed)"),
	RING(tx, K_ORDER, "write_then_read", "device-readable after device-writable"),
	RING(tx, K_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead"),

	RING(ctrl, K_HEAD_OOB, "head_oob", "avail ring entry = ring size"),
	RING(ctrl, K_LOOP_SELF, "loop_self", "descriptor chained to itself"),
	RING(ctrl, K_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0"),
	RING(ctrl, K_NEXT_OOB, "next_oob", "next = ring size + 3"),
	RING(ctrl, K_IND_LEN, "indirect_len", "indirect table of 17 bytes"),
	RING(ctrl, K_IND_HUGE, "indirect_huge", "indirect table of 32769 entries"),
	RING(ctrl, K_IND_NESTED, "indirect_nested", "indirect descriptor inside an indirect table"),
	RING(ctrl, K_IND_LOOP, "indirect_loop", "loop inside an indirect table"),
	RING(ctrl, K_IND_OUTSIDE, "indirect_outside", "indirect table outside shared memory"),
	RING(ctrl, K_ADDR_OUTSIDE, "addr_outside", "buffer outside shared memory"),
	RING(ctrl, K_ADDR_STRADDLE, "addr_straddle", "buffer crossing the end of shared memory"),
	RING(ctrl, K_ADDR_WRAP, "addr_wrap", "addr + len wraps 2^64"),
	RING(ctrl, K_LEN_SUM_WRAP, "len_sum_wrap", "chain length beyond 2^32 (4 GiB region)"),
	RING(ctrl, K_ORDER, "write_then_read", "device-readable after device-writable"),
	RING(ctrl, K_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead"),

	RING(rx, K_HEAD_OOB, "head_oob", "avail ring entry = ring size"),
	RING(rx, K_LOOP_2, "loop_2", "descriptor chain 0 -> 1 -> 0"),
	RING(rx, K_NEXT_OOB, "next_oob", "next = ring size + 3"),
	RING(rx, K_IND_NESTED, "indirect_nested", "indirect descriptor inside an indirect table"),
	RING(rx, K_ADDR_OUTSIDE, "addr_outside", "buffer outside shared memory"),
	RING(rx, K_ADDR_WRAP, "addr_wrap", "addr + len wraps 2^64"),
	RING(rx, K_AVAIL_JUMP, "avail_jump", "avail idx ring size + 1 ahead"),

	{ "vring_addr_outside", EVIL_ALIVE,
	  "SET_VRING_ADDR with the used ring outside shared memory", run_addr_outside, 0 },
	{ "mem_remove_under_rings", EVIL_ALIVE,
	  "REM_MEM_REG of the running rings' memory, then back", run_remove_under_rings, 0 },
	{ "fd_churn", EVIL_ALIVE, "call/err/kick eventfds of running rings replaced 1500 times",
	  run_fd_churn, 0 },
	{ "mem_slots_exhaust", EVIL_SURVIVE, "ADD_MEM_REG beyond GET_MAX_MEM_SLOTS", run_slots, 0 },
	{ "mem_shrink_sealable", EVIL_SURVIVE,
	  "shrink the shared (sealable) memfd under the device", run_shrink, 0 },
	{ "mem_shrink_unsealable", EVIL_SURVIVE,
	  "truncate the shared (unsealable) memfd under the device", run_shrink, 1 },
	{ "status0_stops_rings", EVIL_ALIVE, "SET_STATUS 0, then a frame on the transmit ring",
	  run_status0, 0 },
};
#undef rx
#undef tx
#undef ctrl
#undef RING
const unsigned evil_ring_nattacks = sizeof(evil_ring_attacks) / sizeof(evil_ring_attacks[0]);
