/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Introspection of a running device (see netdev_show.h). Read-only: runs on
 * the event loop between packets, so every object is consistent.
 */
#include "device/netdev_show.h"

#include <arpa/inet.h>
#include <stdio.h>

#include "device/netdev_priv.h"
#include "device/roce_dev.h"
#include "roce/roce_tp.h"
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

void netdev_show_dev(const struct netdev *nd, struct kvw *k)
{
	char buf[64];
	struct roce_counts c = { 0 };

	kvw_obj_begin(k);
	kvw_str(k, "dev", nd->port.name);
	kvw_str(k, "socket", nd->cfg.socket);
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", nd->mac[0], nd->mac[1],
		 nd->mac[2], nd->mac[3], nd->mac[4], nd->mac[5]);
	kvw_str(k, "mac", buf);
	if (nd->cfg.has_ip4 && inet_ntop(AF_INET, &nd->cfg.ip4, buf, sizeof(buf)))
		kvw_str(k, "ip", buf);
	kvw_u64(k, "mtu", nd->cfg.mtu);
	kvw_bool(k, "connected", vhost_server_connected(nd->vs));
	kvw_str(k, "link", nd->link_down ? "down" : "up");
	kvw_bool(k, "roce", nd->roce != NULL);
	if (nd->roce) {
		roce_dev_counts(nd->roce, &c);
		kvw_bool(k, "ext", nd->roce->ext);
		kvw_u64(k, "pd", c.pd);
		kvw_u64(k, "mr", c.mr);
		kvw_u64(k, "cq", c.cq);
		kvw_u64(k, "qp", c.qp);
		kvw_u64(k, "srq", c.srq);
		kvw_u64(k, "max_qp", nd->roce->attr.max_qp);
		kvw_u64(k, "max_cq", nd->roce->attr.max_cq);
	}
	kvw_obj_end(k);
}

void netdev_show_qps(const struct netdev *nd, struct kvw *k)
{
	const struct roce_qp *qp;

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->qps, i, qp) {
		const struct roce_tq *tq = qp->transport;

		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "lqpn", qp->qpn);
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

void netdev_show_cqs(const struct netdev *nd, struct kvw *k)
{
	const struct roce_cq *cq;

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->cqs, i, cq) {
		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "cqn", cq->cqn);
		kvw_u64(k, "cqe", cq->cqe);
		kvw_u64(k, "users", cq->refcnt);
		kvw_bool(k, "armed", cq->armed != 0);
		kvw_obj_end(k);
	}
}

void netdev_show_mrs(const struct netdev *nd, struct kvw *k)
{
	const struct roce_mr *mr;
	char buf[24];

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->mrs, i, mr) {
		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "mrn", mr->mrn);
		kvw_u64(k, "pdn", mr->pd ? mr->pd->pdn : 0);
		snprintf(buf, sizeof(buf), "0x%x", mr->lkey);
		kvw_str(k, "lkey", buf);
		snprintf(buf, sizeof(buf), "0x%x", mr->rkey);
		kvw_str(k, "rkey", buf);
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)mr->iova);
		kvw_str(k, "iova", buf);
		kvw_u64(k, "mrlen", mr->length);
		kvw_u64(k, "pages", mr->npages);
		kvw_u64(k, "access", mr->access);
		kvw_obj_end(k);
	}
}

void netdev_show_pds(const struct netdev *nd, struct kvw *k)
{
	const struct roce_pd *pd;

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->pds, i, pd) {
		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "pdn", pd->pdn);
		kvw_u64(k, "users", pd->refcnt);
		kvw_obj_end(k);
	}
}

void netdev_show_srqs(const struct netdev *nd, struct kvw *k)
{
	const struct roce_srq *srq;

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->srqs, i, srq) {
		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "srqn", srq->srqn);
		kvw_u64(k, "pdn", srq->pd ? srq->pd->pdn : 0);
		kvw_u64(k, "max_wr", srq->max_wr);
		kvw_u64(k, "limit", srq->srq_limit);
		kvw_u64(k, "users", srq->refcnt);
		kvw_obj_end(k);
	}
}

void netdev_show_stats(const struct netdev *nd, struct kvw *k)
{
	const struct netdev_stats *s = &nd->stats;
	const struct vhost_server_stats *vs = vhost_server_stats(nd->vs);

	kvw_obj_begin(k);
	kvw_str(k, "dev", nd->port.name);
	kvw_u64(k, "tx_frames", s->tx_frames);
	kvw_u64(k, "tx_bytes", s->tx_bytes);
	kvw_u64(k, "tx_errors", s->tx_errors);
	kvw_u64(k, "rx_frames", s->rx_frames);
	kvw_u64(k, "rx_bytes", s->rx_bytes);
	kvw_u64(k, "rx_dropped_no_buffer", s->rx_dropped_no_buffer);
	kvw_u64(k, "ctrl_ok", s->ctrl_ok);
	kvw_u64(k, "ctrl_err", s->ctrl_err);
	kvw_u64(k, "ring_errors", s->ring_errors);
	kvw_u64(k, "vhost_connections", vs->connections);
	kvw_u64(k, "vhost_bad_messages", vs->bad_messages);
	kvw_u64(k, "port_rx_frames", nd->port.stats.rx_frames);
	kvw_u64(k, "port_tx_frames", nd->port.stats.tx_frames);
	kvw_u64(k, "port_tx_dropped", nd->port.stats.tx_dropped);
	if (nd->roce_tp) {
		const struct roce_tp_stats *t = roce_tp_get_stats(nd->roce_tp);

		kvw_u64(k, "roce_tx_packets", t->tx_frames);
		kvw_u64(k, "roce_tx_bytes", t->tx_bytes);
		kvw_u64(k, "roce_rx_packets", t->rx_frames);
		kvw_u64(k, "roce_rx_bytes", t->rx_bytes);
		kvw_u64(k, "acks_sent", t->acks_sent);
		kvw_u64(k, "acks_rcvd", t->acks_rcvd);
		kvw_u64(k, "naks_sent", t->naks_sent);
		kvw_u64(k, "rnr_naks_rcvd", t->rnr_naks_rcvd);
		kvw_u64(k, "retransmits", t->retransmits);
		kvw_u64(k, "timeouts", t->timeouts);
		kvw_u64(k, "send_wrs", t->send_wrs);
		kvw_u64(k, "recv_wrs", t->recv_wrs);
		kvw_u64(k, "cqe_written", t->cqe_written);
		kvw_u64(k, "rx_seq_err", t->rx_seq_err);
		kvw_u64(k, "rx_dup", t->rx_dup);
	}
	if (nd->roce) {
		kvw_u64(k, "cmds_ok", nd->roce->stats.ok);
		kvw_u64(k, "cmds_err", nd->roce->stats.err);
	}
	kvw_obj_end(k);
}

void netdev_show_qp_stats(const struct netdev *nd, struct kvw *k)
{
	const struct roce_qp *qp;

	if (!nd->roce)
		return;
	FOR_EACH_OBJ(&nd->roce->qps, i, qp) {
		const struct roce_tq *tq = qp->transport;

		kvw_obj_begin(k);
		kvw_str(k, "dev", nd->port.name);
		kvw_u64(k, "lqpn", qp->qpn);
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
