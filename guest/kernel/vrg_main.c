// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * virtio_rdma: binds the virtio-rdma device (id 42), runs its control
 * queue, gives it a netdev (the RDMA core derives RoCE GIDs from one) and
 * registers it with the RDMA core as a RoCE v2 device with one port.
 */
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>
#include <rdma/ib_mad.h>

#include "vrg.h"

/* How long a control command may take (the device may run under TCG). */
#define VRG_CTRL_TIMEOUT (60 * HZ)

struct vrg_cmd {
	struct completion done;
	bool detached;                /* the caller is gone: the callback frees */
	u32 notify_cqn;               /* REQ_NOTIFY_CQ's cqn, else 0 */
	unsigned int used_len;
	size_t in_len, out_len;
	u8 buf[];                     /* command byte, request; status, response */
};

static void vrg_ctrl_done(struct virtqueue *vq)
{
	struct vrg_dev *d = vq->vdev->priv;
	struct vrg_cmd *c;
	unsigned long flags;
	unsigned int len;

	u32 cqn;

	spin_lock_irqsave(&d->ctrl_lock, flags);
	while ((c = virtqueue_get_buf(vq, &len))) {
		c->used_len = len;
		if (c->notify_cqn && c->notify_cqn <= d->max_cq)
			set_bit(c->notify_cqn, d->notify_done);
		if (c->detached)
			kfree(c);
		else
			complete(&c->done);
	}
	spin_unlock_irqrestore(&d->ctrl_lock, flags);
	/* Completions the device wrote before it saw REQ_NOTIFY_CQ raised no
	 * interrupt: look for them now (outside the control lock, as the
	 * handler may post commands). */
	for_each_set_bit(cqn, d->notify_done, d->max_cq + 1)
		if (test_and_clear_bit(cqn, d->notify_done))
			vrg_cq_check(d, cqn);
}

static struct vrg_cmd *vrg_ctrl_post(struct vrg_dev *d, u8 cmd, const void *in, size_t in_len,
				     size_t out_len, bool detached, gfp_t gfp)
{
	struct scatterlist sg_out, sg_in, *sgs[2] = { &sg_out, &sg_in };
	struct vrg_cmd *c = kzalloc(sizeof(*c) + 2 + in_len + out_len, gfp);
	unsigned long flags;
	int rc;

	if (!c)
		return ERR_PTR(-ENOMEM);
	init_completion(&c->done);
	c->detached = detached;
	if (cmd == VRG_CMD_REQ_NOTIFY_CQ)
		c->notify_cqn = le32_to_cpu(((const struct vrg_cmd_req_notify *)in)->cqn);
	c->in_len = in_len;
	c->out_len = out_len;
	c->buf[0] = cmd;
	if (in_len)
		memcpy(c->buf + 1, in, in_len);
	sg_init_one(&sg_out, c->buf, 1 + in_len);
	sg_init_one(&sg_in, c->buf + 1 + in_len, 1 + out_len);
	spin_lock_irqsave(&d->ctrl_lock, flags);
	rc = virtqueue_add_sgs(d->vqs[0], sgs, 1, 1, c, GFP_ATOMIC);
	if (!rc)
		virtqueue_kick(d->vqs[0]);
	spin_unlock_irqrestore(&d->ctrl_lock, flags);
	if (rc) {
		kfree(c);
		return ERR_PTR(rc == -ENOSPC ? -EBUSY : rc);
	}
	return c;
}

int vrg_ctrl(struct vrg_dev *d, u8 cmd, const void *in, size_t in_len, void *out, size_t out_len)
{
	struct vrg_cmd *c = vrg_ctrl_post(d, cmd, in, in_len, out_len, false, GFP_KERNEL);
	unsigned long flags;
	const u8 *rsp;
	int rc = 0;

	if (IS_ERR(c))
		return PTR_ERR(c);
	if (!wait_for_completion_timeout(&c->done, VRG_CTRL_TIMEOUT)) {
		spin_lock_irqsave(&d->ctrl_lock, flags);
		if (!completion_done(&c->done)) {
			c->detached = true; /* still the ring's: freed when it comes back */
			spin_unlock_irqrestore(&d->ctrl_lock, flags);
			dev_err(&d->vdev->dev, "command %u: no answer from the device\n", cmd);
			return -ETIMEDOUT;
		}
		spin_unlock_irqrestore(&d->ctrl_lock, flags);
	}
	rsp = c->buf + 1 + in_len;
	if (c->used_len < 1 || rsp[0] != VRG_CTRL_OK)
		rc = -EIO;
	else if (c->used_len < 1 + out_len)
		rc = -EPROTO;
	else if (out_len)
		memcpy(out, rsp + 1, out_len);
	kfree(c);
	return rc;
}

int vrg_ctrl_notify(struct vrg_dev *d, u32 cqn, u32 flags)
{
	struct vrg_cmd_req_notify r = { .cqn = cpu_to_le32(cqn), .flags = cpu_to_le32(flags) };
	struct vrg_cmd *c = vrg_ctrl_post(d, VRG_CMD_REQ_NOTIFY_CQ, &r, sizeof(r), 0, true, GFP_ATOMIC);

	return IS_ERR(c) ? PTR_ERR(c) : 0;
}

/* ---- the netdev: an address for the GID table, no Ethernet path ---- */

static netdev_tx_t vrg_netdev_xmit(struct sk_buff *skb, struct net_device *nd)
{
	/* The device has no Ethernet queues: RoCE goes through the QPs. */
	nd->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops vrg_netdev_ops = {
	.ndo_start_xmit = vrg_netdev_xmit,
	.ndo_validate_addr = eth_validate_addr,
};

static int vrg_netdev_create(struct vrg_dev *d)
{
	struct net_device *nd = alloc_etherdev(0);
	int rc;

	if (!nd)
		return -ENOMEM;
	strscpy(nd->name, "vrdma%d", sizeof(nd->name));
	nd->netdev_ops = &vrg_netdev_ops;
	nd->flags |= IFF_NOARP;
	nd->min_mtu = ETH_MIN_MTU;
	nd->max_mtu = 4096;
	eth_hw_addr_set(nd, d->mac);
	SET_NETDEV_DEV(nd, &d->vdev->dev);
	rc = register_netdev(nd);
	if (rc) {
		free_netdev(nd);
		return rc;
	}
	netif_carrier_on(nd);
	d->netdev = nd;
	return 0;
}

/* ---- device and port ---- */

static int vrg_query_device(struct ib_device *ib, struct ib_device_attr *a, struct ib_udata *udata)
{
	struct vrg_dev *d = to_vdev(ib);
	const struct vrg_config *c = &d->cfg;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = 0;
	a->sys_image_guid = (__force __be64)c->sys_image_guid;
	a->max_mr_size = le64_to_cpu(c->max_mr_size);
	a->page_size_cap = le64_to_cpu(c->page_size_cap);
	a->vendor_id = le32_to_cpu(c->vendor_id);
	a->vendor_part_id = le32_to_cpu(c->vendor_part_id);
	a->hw_ver = le32_to_cpu(c->hw_ver);
	a->max_qp = d->max_qp;
	a->max_qp_wr = min(le32_to_cpu(c->max_qp_wr), d->vring_num);
	a->device_cap_flags = le64_to_cpu(c->device_cap_flags) &
			      (IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_SYS_IMAGE_GUID |
			       IB_DEVICE_MEM_MGT_EXTENSIONS);
	a->max_send_sge = le32_to_cpu(c->max_send_sge);
	a->max_recv_sge = le32_to_cpu(c->max_recv_sge);
	a->max_sge_rd = le32_to_cpu(c->max_sge_rd);
	a->max_cq = d->max_cq;
	/* a CQ holds at most its virtqueue's entries */
	a->max_cqe = min(le32_to_cpu(c->max_cqe), d->vring_num);
	a->max_mr = le32_to_cpu(c->max_mr);
	a->max_pd = le32_to_cpu(c->max_pd);
	a->max_qp_rd_atom = le32_to_cpu(c->max_qp_rd_atom);
	a->max_res_rd_atom = le32_to_cpu(c->max_res_rd_atom);
	a->max_qp_init_rd_atom = le32_to_cpu(c->max_qp_init_rd_atom);
	a->atomic_cap = c->atomic_cap == 1 ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	a->max_ah = le32_to_cpu(c->max_ah);
	a->max_fast_reg_page_list_len = min_t(u32, le32_to_cpu(c->max_fast_reg_page_list_len),
					      PAGE_SIZE / sizeof(u64));
	a->max_pkeys = le16_to_cpu(c->max_pkeys);
	a->local_ca_ack_delay = c->local_ca_ack_delay;
	return 0;
}

static int vrg_query_port(struct ib_device *ib, u32 port, struct ib_port_attr *a)
{
	struct vrg_dev *d = to_vdev(ib);
	struct vrg_rsp_query_port *r;
	u8 p = port;
	int rc;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	rc = vrg_ctrl(d, VRG_CMD_QUERY_PORT, &p, 1, r, sizeof(*r));
	if (!rc) {
		a->state = r->state;
		a->max_mtu = r->max_mtu;
		a->active_mtu = r->active_mtu;
		a->phys_mtu = le32_to_cpu(r->phys_mtu);
		a->gid_tbl_len = max_t(int, le32_to_cpu(r->gid_tbl_len) - VRG_GID_BASE, 0);
		a->port_cap_flags = le32_to_cpu(r->port_cap_flags);
		a->max_msg_sz = le32_to_cpu(r->max_msg_sz);
		a->bad_pkey_cntr = le32_to_cpu(r->bad_pkey_cntr);
		a->qkey_viol_cntr = le32_to_cpu(r->qkey_viol_cntr);
		a->pkey_tbl_len = le16_to_cpu(r->pkey_tbl_len);
		a->active_width = r->active_width;
		a->active_speed = le16_to_cpu(r->active_speed);
		a->phys_state = r->phys_state;
	}
	kfree(r);
	return rc;
}

static int vrg_port_immutable(struct ib_device *ib, u32 port, struct ib_port_immutable *im)
{
	struct ib_port_attr a;
	int rc = ib_query_port(ib, port, &a);

	if (rc)
		return rc;
	im->pkey_tbl_len = a.pkey_tbl_len;
	im->gid_tbl_len = a.gid_tbl_len;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP; /* RoCE v2 only */
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer vrg_link_layer(struct ib_device *ib, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int vrg_query_pkey(struct ib_device *ib, u32 port, u16 index, u16 *pkey)
{
	struct vrg_cmd_query_pkey c = { .port = cpu_to_le32(port), .index = cpu_to_le16(index) };
	__le16 v;
	int rc = vrg_ctrl(to_vdev(ib), VRG_CMD_QUERY_PKEY, &c, sizeof(c), &v, sizeof(v));

	if (!rc)
		*pkey = le16_to_cpu(v);
	return rc;
}

static int vrg_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrg_cmd_add_gid c = {
		.gid_type = cpu_to_le32(2), /* RoCE v2 */
		.index = cpu_to_le16(attr->index + VRG_GID_BASE),
		.port_num = cpu_to_le32(attr->port_num),
	};

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	memcpy(c.gid, attr->gid.raw, 16);
	return vrg_ctrl(to_vdev(attr->device), VRG_CMD_ADD_GID, &c, sizeof(c), NULL, 0);
}

static int vrg_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrg_cmd_del_gid c = {
		.index = cpu_to_le16(attr->index + VRG_GID_BASE),
		.port = cpu_to_le32(attr->port_num),
	};

	return vrg_ctrl(to_vdev(attr->device), VRG_CMD_DEL_GID, &c, sizeof(c), NULL, 0);
}

static const struct ib_device_ops vrg_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,
	.query_device = vrg_query_device,
	.query_port = vrg_query_port,
	.get_port_immutable = vrg_port_immutable,
	.get_link_layer = vrg_link_layer,
	.query_pkey = vrg_query_pkey,
	.add_gid = vrg_add_gid,
	.del_gid = vrg_del_gid,
};

/* ---- virtio ---- */

static int vrg_find_vqs(struct vrg_dev *d)
{
	unsigned int n = d->nvqs, i;
	vq_callback_t **cbs;
	const char **names;
	int rc = -ENOMEM;

	d->vqs = kcalloc(n, sizeof(*d->vqs), GFP_KERNEL);
	cbs = kcalloc(n, sizeof(*cbs), GFP_KERNEL);
	names = kcalloc(n, sizeof(*names), GFP_KERNEL);
	if (!d->vqs || !cbs || !names)
		goto out;
	names[0] = "ctrl";
	cbs[0] = vrg_ctrl_done;
	for (i = 1; i < n; i++) {
		if (i <= d->max_cq) {
			names[i] = "cq";
			cbs[i] = vrg_cq_vq_done;
		} else {
			names[i] = (i - d->max_cq) & 1 ? "sq" : "rq";
			cbs[i] = NULL; /* reclaimed when posting: no interrupts */
		}
	}
	rc = virtio_find_vqs(d->vdev, n, d->vqs, cbs, names, NULL);
	if (!rc) {
		d->vring_num = U32_MAX;
		for (i = 0; i < n; i++)
			d->vring_num = min(d->vring_num, virtqueue_get_vring_size(d->vqs[i]));
	}
out:
	kfree(cbs);
	kfree(names);
	return rc;
}

static void vrg_free_rings(struct vrg_dev *d)
{
	unsigned int i;
	void *buf;

	for (i = 0; i < d->nvqs; i++) {
		if (i >= 1 && i <= d->max_cq)
			continue; /* slots of cq_rings */
		while ((buf = virtqueue_detach_unused_buf(d->vqs[i])))
			kfree(buf);
	}
	if (d->cq_rings)
		for (i = 1; i <= d->max_cq; i++)
			kfree(d->cq_rings[i].slot);
	kfree(d->cq_rings);
	kfree(d->cqs);
	bitmap_free(d->notify_done);
}

static int vrg_probe(struct virtio_device *vdev)
{
	struct vrg_dev *d;
	const u8 *g;
	int rc;

	d = ib_alloc_device(vrg_dev, ib);
	if (!d)
		return -ENOMEM;
	d->vdev = vdev;
	vdev->priv = d;
	spin_lock_init(&d->ctrl_lock);
	spin_lock_init(&d->cq_lock);
	xa_init(&d->qps);
	virtio_cread_bytes(vdev, 0, &d->cfg, sizeof(d->cfg));
	d->max_cq = le32_to_cpu(d->cfg.max_cq);
	d->max_qp = le32_to_cpu(d->cfg.max_qp);
	if (le32_to_cpu(d->cfg.phys_port_cnt) != 1 || !d->max_cq || !d->max_qp ||
	    d->max_cq > 1024 || d->max_qp > 1024) {
		dev_err(&vdev->dev, "unsupported configuration: %u ports, %u CQs, %u QPs\n",
			le32_to_cpu(d->cfg.phys_port_cnt), d->max_cq, d->max_qp);
		rc = -EINVAL;
		goto fail_dev;
	}
	d->nvqs = 1 + d->max_cq + 2 * d->max_qp;
	/* sys_image_guid is the EUI-64 of the device's MAC */
	g = (const u8 *)&d->cfg.sys_image_guid;
	d->mac[0] = g[0] ^ 2;
	d->mac[1] = g[1];
	d->mac[2] = g[2];
	memcpy(d->mac + 3, g + 5, 3);
	d->cq_rings = kcalloc(d->max_cq + 1, sizeof(*d->cq_rings), GFP_KERNEL);
	d->cqs = kcalloc(d->max_cq + 1, sizeof(*d->cqs), GFP_KERNEL);
	d->notify_done = bitmap_zalloc(d->max_cq + 1, GFP_KERNEL);
	if (!d->cq_rings || !d->cqs || !d->notify_done) {
		rc = -ENOMEM;
		goto fail_free;
	}
	rc = vrg_find_vqs(d);
	if (rc) {
		dev_err(&vdev->dev, "%u virtqueues: %d\n", d->nvqs, rc);
		goto fail_free;
	}
	virtio_device_ready(vdev);

	rc = vrg_netdev_create(d);
	if (rc)
		goto fail_vqs;
	d->ib.node_type = RDMA_NODE_IB_CA;
	d->ib.phys_port_cnt = 1;
	d->ib.num_comp_vectors = 1;
	d->ib.node_guid = (__force __be64)d->cfg.sys_image_guid;
	d->ib.dev.parent = &vdev->dev;
	strscpy(d->ib.node_desc, "virtio-rdma", sizeof(d->ib.node_desc));
	ib_set_device_ops(&d->ib, &vrg_dev_ops);
	ib_set_device_ops(&d->ib, &vrg_verbs_ops);
	/* the data path of user processes goes through these write commands */
	d->ib.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				 BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				 BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				 BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	rc = ib_device_set_netdev(&d->ib, d->netdev, 1);
	if (rc)
		goto fail_netdev;
	rc = ib_register_device(&d->ib, "vrdma%d", vdev->dev.parent);
	if (rc) {
		dev_err(&vdev->dev, "ib_register_device: %d\n", rc);
		goto fail_netdev;
	}
	dev_info(&vdev->dev, "%s: %u CQs, %u QPs, %u virtqueues of %u entries, netdev %s\n",
		 dev_name(&d->ib.dev), d->max_cq, d->max_qp, d->nvqs, d->vring_num,
		 d->netdev->name);
	return 0;

fail_netdev:
	unregister_netdev(d->netdev);
	free_netdev(d->netdev);
fail_vqs:
	virtio_reset_device(vdev);
	vrg_free_rings(d);
	vdev->config->del_vqs(vdev);
	d->cq_rings = NULL;
	d->cqs = NULL;
	d->notify_done = NULL;
fail_free:
	kfree(d->cq_rings);
	kfree(d->cqs);
	bitmap_free(d->notify_done);
	kfree(d->vqs);
fail_dev:
	ib_dealloc_device(&d->ib);
	return rc;
}

static void vrg_remove(struct virtio_device *vdev)
{
	struct vrg_dev *d = vdev->priv;

	ib_unregister_device(&d->ib);
	unregister_netdev(d->netdev);
	free_netdev(d->netdev);
	virtio_reset_device(vdev);
	vrg_free_rings(d);
	vdev->config->del_vqs(vdev);
	kfree(d->vqs);
	xa_destroy(&d->qps);
	ib_dealloc_device(&d->ib);
}

static const struct virtio_device_id vrg_id_table[] = {
	{ VIRTIO_ID_RDMA, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static struct virtio_driver vrg_driver = {
	.driver.name = KBUILD_MODNAME,
	.driver.owner = THIS_MODULE,
	.id_table = vrg_id_table,
	.probe = vrg_probe,
	.remove = vrg_remove,
};

module_virtio_driver(vrg_driver);
MODULE_DEVICE_TABLE(virtio, vrg_id_table);
MODULE_DESCRIPTION("virtio-rdma device (virtio id 42) for the RDMA core");
MODULE_LICENSE("Dual BSD/GPL");
