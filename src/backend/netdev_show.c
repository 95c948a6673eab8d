/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Introspection of a running device (see netdev_show.h). Read-only: runs on
 * the event loop between packets, so every object is consistent. A device is
 * a port; its resources belong to its contexts (one per connection), so every
 * resource names its context.
 */
#include "backend/netdev_show.h"

#include <arpa/inet.h>
#include <stdio.h>

#include "backend/netdev_priv.h"
#include "backend/rres_dev.h"
#include "roce/roce_tp.h"
#include "vhost/vhost_mem.h"
#include "vhost/vhost_server.h"

static const char *qp_state_name(uint8_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static const char *qp_type_name(uint8_t t)
{
	switch (t) {
	case VIRTIO_IB_QPT_GSI: return "GSI";
	case VIRTIO_IB_QPT_RC: return "RC";
	case VIRTIO_IB_QPT_UC: return "UC";
	case VIRTIO_IB_QPT_UD: return "UD";
	default: return "?";
	}
}

/* Each live object of table t, in index order. */
#define FOR_EACH_OBJ(t, i, o) \
	for (uint32_t i = 0; i < (t)->size; i++) \
		if (((o) = (t)->slot[i]) != NULL)

/* Each context of port dp (open and closing ones). */
#define FOR_EACH_CTX(dp, nd) \
	for (const struct netdev *nd = (dp)->ctxs; nd; nd = nd->next)

/* Each live object o of table tab (qps, cqs, mrs...) of the contexts of dp
 * that have RoCE, with nd its context. */
#define FOR_EACH_ROCE_OBJ(dp, nd, tab, o) \
	FOR_EACH_CTX(dp, nd) \
		if (nd->roce) \
			FOR_EACH_OBJ(&nd->roce->tab, i_##tab, o)

static void show_mac(struct kvw *k, const char *key, const uint8_t m[6])
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
		 m[4], m[5]);
	kvw_str(k, key, buf);
}

/* A resource's line and the keys it starts with: its device and context. */
static void show_obj_begin(struct kvw *k, const struct netdev *nd)
{
	kvw_obj_begin(k);
	kvw_str(k, "dev", nd->dp->port.name);
	kvw_u64(k, "ctx", nd->id);
}

static void show_hex(struct kvw *k, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	kvw_str(k, key, buf);
}

static void show_counts(struct kvw *k, const struct rres_counts *c)
{
	kvw_u64(k, "pd", c->pd);
	kvw_u64(k, "mr", c->mr);
	kvw_u64(k, "cq", c->cq);
	kvw_u64(k, "qp", c->qp);
	kvw_u64(k, "srq", c->srq);
}

/* The start of a QP's line: its owner and number. */
static void show_qp_head(struct kvw *k, const struct netdev *nd, const struct rres_qp *qp)
{
	show_obj_begin(k, nd);
	kvw_u64(k, "lqpn", qp->qpn);
}

void netdev_show_dev(const struct netdev_port *dp, struct kvw *k)
{
	char buf[64];
	struct rres_counts sum = { 0 };

	FOR_EACH_CTX(dp, nd) {
		struct rres_counts c = { 0 };

		if (!nd->roce)
			continue;
		rres_dev_counts(nd->roce, &c);
		sum.pd += c.pd;
		sum.mr += c.mr;
		sum.cq += c.cq;
		sum.qp += c.qp;
		sum.srq += c.srq;
	}
	kvw_obj_begin(k);
	kvw_str(k, "dev", dp->port.name);
	kvw_str(k, "socket", dp->cfg.socket);
	show_mac(k, "mac", dp->cfg.mac);
	if (dp->cfg.has_ip4 && inet_ntop(AF_INET, &dp->cfg.ip4, buf, sizeof(buf)))
		kvw_str(k, "ip", buf);
	kvw_u64(k, "mtu", dp->cfg.mtu);
	kvw_str(k, "link", dp->link_down ? "down" : "up");
	kvw_u64(k, "contexts", dp->nctx);
	kvw_u64(k, "max_contexts", dp->cfg.max_contexts);
	kvw_bool(k, "roce", dp->pool != NULL);
	if (dp->pool) {
		show_counts(k, &sum);
		kvw_u64(k, "max_qp", dp->pool->attr.max_qp);
		kvw_u64(k, "max_cq", dp->pool->attr.max_cq);
	}
	kvw_obj_end(k);
}

void netdev_show_ctxs(const struct netdev_port *dp, struct kvw *k)
{
	FOR_EACH_CTX(dp, nd) {
		struct rres_counts c = { 0 };

		/* "ctx" first: a context's line never reads as a device's */
		kvw_obj_begin(k);
		kvw_u64(k, "ctx", nd->id);
		kvw_str(k, "dev", dp->port.name);
		kvw_str(k, "state", nd->closing ? "closing" : "open");
		kvw_bool(k, "connected", vhost_server_connected(nd->vs));
		show_mac(k, "mac", nd->mac);
		kvw_bool(k, "roce", nd->roce != NULL);
		if (nd->roce) {
			rres_dev_counts(nd->roce, &c);
			kvw_bool(k, "ext", nd->roce->ext);
			show_counts(k, &c);
		}
		kvw_obj_end(k);
	}
}

void netdev_show_qps(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_qp *qp;

	FOR_EACH_ROCE_OBJ(dp, nd, qps, qp) {
		const struct roce_tq *tq = qp->transport;

		show_qp_head(k, nd, qp);
		kvw_str(k, "type", qp_type_name(qp->type));
		kvw_str(k, "state", qp_state_name(qp->attr.qp_state));
		if (qp->type == VIRTIO_IB_QPT_RC || qp->type == VIRTIO_IB_QPT_UC)
			kvw_u64(k, "rqpn", qp->attr.dest_qp_num);
		kvw_u64(k, "pdn", qp->pd ? qp->pd->pdn : 0);
		kvw_u64(k, "send_cqn", qp->send_cq ? qp->send_cq->cqn : 0);
		kvw_u64(k, "recv_cqn", qp->recv_cq ? qp->recv_cq->cqn : 0);
		if (qp->srq)
			kvw_u64(k, "srqn", qp->srq->srqn);
		kvw_u64(k, "max_send_wr", qp->cap.max_send_wr);
		kvw_u64(k, "max_recv_wr", qp->cap.max_recv_wr);
		if (tq) {
			kvw_u64(k, "sq_psn", tq->sq_psn);
			kvw_u64(k, "una_psn", tq->una);
			kvw_u64(k, "rq_psn", tq->epsn);
			kvw_u64(k, "msn", tq->msn);
			kvw_u64(k, "send_outstanding", tq->sq_tail - tq->sq_head);
			kvw_u64(k, "reads_outstanding", tq->rd_out);
			kvw_u64(k, "retry_left", tq->retry_left);
			kvw_bool(k, "rnr_wait", tq->rnr_wait);
		} else {
			kvw_u64(k, "sq_psn", qp->attr.sq_psn);
			kvw_u64(k, "rq_psn", qp->attr.rq_psn);
		}
		kvw_obj_end(k);
	}
}

void netdev_show_cqs(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_cq *cq;

	FOR_EACH_ROCE_OBJ(dp, nd, cqs, cq) {
		show_obj_begin(k, nd);
		kvw_u64(k, "cqn", cq->cqn);
		kvw_u64(k, "cqe", cq->cqe);
		kvw_u64(k, "users", cq->refcnt);
		kvw_bool(k, "armed", cq->armed != 0);
		kvw_obj_end(k);
	}
}

void netdev_show_mrs(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_mr *mr;

	FOR_EACH_ROCE_OBJ(dp, nd, mrs, mr) {
		show_obj_begin(k, nd);
		kvw_u64(k, "mrn", mr->mrn);
		kvw_u64(k, "pdn", mr->pd ? mr->pd->pdn : 0);
		show_hex(k, "lkey", mr->lkey);
		show_hex(k, "rkey", mr->rkey);
		show_hex(k, "iova", mr->iova);
		kvw_u64(k, "mrlen", mr->length);
		kvw_u64(k, "pages", mr->npages);
		kvw_u64(k, "access", mr->access);
		kvw_obj_end(k);
	}
}

void netdev_show_pds(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_pd *pd;

	FOR_EACH_ROCE_OBJ(dp, nd, pds, pd) {
		show_obj_begin(k, nd);
		kvw_u64(k, "pdn", pd->pdn);
		kvw_u64(k, "users", pd->refcnt);
		kvw_obj_end(k);
	}
}

void netdev_show_srqs(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_srq *srq;

	FOR_EACH_ROCE_OBJ(dp, nd, srqs, srq) {
		show_obj_begin(k, nd);
		kvw_u64(k, "srqn", srq->srqn);
		kvw_u64(k, "pdn", srq->pd ? srq->pd->pdn : 0);
		kvw_u64(k, "max_wr", srq->max_wr);
		kvw_u64(k, "limit", srq->srq_limit);
		kvw_u64(k, "users", srq->refcnt);
		kvw_obj_end(k);
	}
}

void netdev_show_stats(const struct netdev_port *dp, struct kvw *k)
{
	struct netdev_stats s;
	struct vhost_server_stats vs;
	struct rres_stats rs;
	struct roce_tp_stats t;

	netdev_port_sum(dp, &s, &vs, &rs, &t);
	kvw_obj_begin(k);
	kvw_str(k, "dev", dp->port.name);
	kvw_u64(k, "contexts", dp->nctx);
	kvw_u64(k, "contexts_opened", dp->stats.contexts_opened);
	kvw_u64(k, "contexts_closed", dp->stats.contexts_closed);
	kvw_u64(k, "contexts_refused", dp->stats.contexts_refused);
	kvw_u64(k, "rx_steered", dp->stats.rx_steered);
	kvw_u64(k, "rx_no_context", dp->stats.rx_no_context);
	kvw_u64(k, "tx_frames", s.tx_frames);
	kvw_u64(k, "tx_bytes", s.tx_bytes);
	kvw_u64(k, "tx_errors", s.tx_errors);
	kvw_u64(k, "rx_frames", s.rx_frames);
	kvw_u64(k, "rx_bytes", s.rx_bytes);
	kvw_u64(k, "rx_dropped_no_buffer", s.rx_dropped_no_buffer);
	kvw_u64(k, "ctrl_ok", s.ctrl_ok);
	kvw_u64(k, "ctrl_err", s.ctrl_err);
	kvw_u64(k, "ring_errors", s.ring_errors);
	kvw_u64(k, "tx_parks", s.tx_parks);
	kvw_u64(k, "tx_unparks", s.tx_unparks);
	kvw_u64(k, "vhost_connections", vs.connections);
	kvw_u64(k, "vhost_bad_messages", vs.bad_messages);
	kvw_u64(k, "port_rx_frames", dp->port.stats.rx_frames);
	kvw_u64(k, "port_tx_frames", dp->port.stats.tx_frames);
	kvw_u64(k, "port_tx_dropped", dp->port.stats.tx_dropped);
	/* port security (docs/spec.md "Tenant isolation") */
	kvw_u64(k, "tx_spoofed", s.tx_spoofed);
	kvw_u64(k, "tx_spoofed_mac", dp->psec.stats.tx_spoofed_mac);
	kvw_u64(k, "tx_spoofed_arp", dp->psec.stats.tx_spoofed_arp);
	kvw_u64(k, "tx_spoofed_ip", dp->psec.stats.tx_spoofed_ip);
	kvw_u64(k, "tx_spoofed_nd", dp->psec.stats.tx_spoofed_nd);
	kvw_u64(k, "gid_refused", dp->psec.stats.gid_refused);
	kvw_u64(k, "mac_refused", dp->psec.stats.mac_refused);
	kvw_u64(k, "rx_spoofed", dp->port.stats.rx_spoofed);
	kvw_u64(k, "learn_limited", dp->port.stats.learn_limited);
	/* budgets: the device's totals over its contexts */
	if (dp->mem_budget) {
		kvw_u64(k, "mem_mapped", dp->mem_budget->mapped);
		kvw_u64(k, "mem_max", dp->mem_budget->max);
		kvw_u64(k, "mem_refused", dp->mem_budget->refused);
	}
	kvw_u64(k, "state_mem", dp->state_budget.used);
	kvw_u64(k, "state_mem_max", dp->state_budget.max);
	if (dp->cfg.roce) {
		kvw_u64(k, "state_refused", t.state_refused);
		kvw_u64(k, "rx_bad_src", t.rx_bad_src);
		kvw_u64(k, "roce_tx_packets", t.tx_frames);
		kvw_u64(k, "roce_tx_bytes", t.tx_bytes);
		kvw_u64(k, "roce_rx_packets", t.rx_frames);
		kvw_u64(k, "roce_rx_bytes", t.rx_bytes);
		kvw_u64(k, "acks_sent", t.acks_sent);
		kvw_u64(k, "acks_rcvd", t.acks_rcvd);
		kvw_u64(k, "naks_sent", t.naks_sent);
		kvw_u64(k, "rnr_naks_rcvd", t.rnr_naks_rcvd);
		kvw_u64(k, "retransmits", t.retransmits);
		kvw_u64(k, "timeouts", t.timeouts);
		kvw_u64(k, "send_wrs", t.send_wrs);
		kvw_u64(k, "recv_wrs", t.recv_wrs);
		kvw_u64(k, "cqe_written", t.cqe_written);
		kvw_u64(k, "rx_seq_err", t.rx_seq_err);
		kvw_u64(k, "rx_dup", t.rx_dup);
		kvw_u64(k, "cmds_ok", rs.ok);
		kvw_u64(k, "cmds_err", rs.err);
	}
	kvw_obj_end(k);
}

void netdev_show_qp_stats(const struct netdev_port *dp, struct kvw *k)
{
	const struct rres_qp *qp;

	FOR_EACH_ROCE_OBJ(dp, nd, qps, qp) {
		const struct roce_tq *tq = qp->transport;

		show_qp_head(k, nd, qp);
		kvw_str(k, "state", qp_state_name(qp->attr.qp_state));
		if (tq) {
			/* PSNs count packets modulo 2^24. */
			kvw_u64(k, "sq_psn", tq->sq_psn);
			kvw_u64(k, "rq_psn", tq->epsn);
			kvw_u64(k, "send_outstanding", tq->sq_tail - tq->sq_head);
			kvw_u64(k, "send_posted", tq->sq_tail);
			kvw_u64(k, "send_completed", tq->sq_head);
			kvw_u64(k, "sent_since_rewind", tq->sent_since_rewind);
		}
		kvw_obj_end(k);
	}
}
