// SPDX-License-Identifier: BSD-3-Clause
/*
 * libvrdma device: open (negotiation, config space, queues), close, accessors.
 */
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "vrdma/virtio_rdma.h"
#include "libvrdma/dev.h"

#define BIT64(n) (1ull << (n))

/* Virtio features libvrdma knows how to drive. */
#define VRDMA_WANT_FEATURES                                                     \
	(BIT64(VIRTIO_F_VERSION_1) | BIT64(VIRTIO_NET_F_MAC) |                  \
	 BIT64(VIRTIO_NET_F_MTU) | BIT64(VIRTIO_NET_F_STATUS) |                 \
	 BIT64(VIRTIO_NET_F_CTRL_VQ) | BIT64(VIRTIO_NET_F_CTRL_RX) |            \
	 BIT64(VIRTIO_NET_F_CTRL_MAC_ADDR) | BIT64(VIRTIO_RING_F_EVENT_IDX) |   \
	 BIT64(VIRTIO_RING_F_INDIRECT_DESC) | BIT64(VIRTIO_NET_F_ROCE) |         \
	 BIT64(VIRTIO_NET_F_ROCE_EXT))

/* vhost-user protocol features libvrdma uses. */
#define VRDMA_WANT_PROTOCOL_FEATURES                                            \
	(BIT64(VHOST_USER_PROTOCOL_F_MQ) | BIT64(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT64(VHOST_USER_PROTOCOL_F_CONFIG) |                                  \
	 BIT64(VHOST_USER_PROTOCOL_F_RESET_DEVICE) |                            \
	 BIT64(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |                     \
	 BIT64(VHOST_USER_PROTOCOL_F_STATUS) |                                  \
	 BIT64(VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX))

/* More slots than this are not useful to us (and bound our table). */
#define VRDMA_MAX_MEM_SLOTS 4096
#define VRDMA_DEFAULT_RING 256
#define VRDMA_DEFAULT_TIMEOUT_MS 30000

void vrdma_dev_mark_dead(struct vrdma_dev *dev)
{
	if (!atomic_exchange(&dev->dead, true))
		LOG_DEBUG("vrdma: back-end connection lost");
}

int vrdma_dev_vc_result(struct vrdma_dev *dev, int rc)
{
	if (!vhost_client_alive(&dev->vc))
		vrdma_dev_mark_dead(dev);
	return rc;
}

int vrdma_dev_probe(struct vrdma_dev *dev)
{
	struct pollfd p;

	if (vrdma_dev_is_dead(dev))
		return -ENOTCONN;
	return vrdma_dev_poll(dev, &p, 1, 0) == -ENOTCONN ? -ENOTCONN : 0;
}

int vrdma_dev_poll(struct vrdma_dev *dev, struct pollfd *p, nfds_t n, int wait_ms)
{
	int rc;

	p[0].fd = vhost_client_fd(&dev->vc);
	p[0].events = POLLRDHUP;
	for (nfds_t i = 0; i < n; i++)
		p[i].revents = 0;
	rc = poll(p, n, wait_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc > 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
		vrdma_dev_mark_dead(dev);
		return -ENOTCONN;
	}
	return rc;
}

static bool has_feature(const struct vrdma_dev *dev, unsigned bit)
{
	return (dev->features >> bit) & 1;
}

static int set_status(struct vrdma_dev *dev, uint8_t status)
{
	int rc;

	dev->status = status;
	if (!vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_STATUS))
		return 0;
	rc = vhost_client_set_status(&dev->vc, status);
	return vrdma_dev_vc_result(dev, rc);
}

static void random_mac(uint8_t mac[6])
{
	if (getrandom(mac, 6, 0) != 6) {
		/* No entropy source: still unique enough per process. */
		unsigned v = (unsigned)getpid() * 2654435761u;

		memcpy(mac, &v, 4);
		mac[4] = 0x5a;
		mac[5] = 0xa5;
	}
	mac[0] = (uint8_t)((mac[0] & 0xfe) | 0x02); /* unicast, locally administered */
}

/*
 * Read the config space (untrusted) for the features we are about to ack and
 * drop the ones whose fields are unusable. Layout (virtio 1.x struct
 * virtio_net_config, then the RoCE fields): mac 0, status 6, mtu 10, ...,
 * supported_hash_types 20, max_rdma_qps 24, max_rdma_cqs 28.
 */
static int read_config(struct vrdma_dev *dev)
{
	uint8_t cfg[VRDMA_CFG_ROCE_EXT_SIZE];
	uint32_t len = sizeof(struct virtio_net_config);
	bool roce = has_feature(dev, VIRTIO_NET_F_ROCE);
	bool ext = roce && has_feature(dev, VIRTIO_NET_F_ROCE_EXT);
	int rc;

	memset(cfg, 0, sizeof(cfg));
	if (!vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_CONFIG)) {
		/* Nothing readable: fall back to what needs no config. */
		dev->features &= ~(BIT64(VIRTIO_NET_F_MAC) | BIT64(VIRTIO_NET_F_MTU) |
				   BIT64(VIRTIO_NET_F_STATUS) | BIT64(VIRTIO_NET_F_ROCE) |
				   BIT64(VIRTIO_NET_F_ROCE_EXT));
		random_mac(dev->mac);
		dev->mtu = 1500;
		return 0;
	}
	if (ext) {
		/* The extension's 40 bytes (max_rdma_srqs at 32). */
		len = VRDMA_CFG_ROCE_EXT_SIZE;
		rc = vrdma_dev_vc_result(dev, vhost_client_get_config(&dev->vc, 0, cfg, len));
		if (rc == 0)
			goto parse;
		if (rc != -EIO)
			return rc;
		LOG_WARN("vrdma: config space too short for the RoCE extension; not using it");
		ext = false;
		dev->features &= ~BIT64(VIRTIO_NET_F_ROCE_EXT);
	}
	if (roce)
		len = VRDMA_CFG_ROCE_SIZE;
	rc = vrdma_dev_vc_result(dev, vhost_client_get_config(&dev->vc, 0, cfg, len));
	if (rc == -EIO && roce) {
		/* The device refused the longer read: no usable RoCE fields. */
		LOG_WARN("vrdma: config space too short for RoCE fields; RoCE disabled");
		roce = false;
		dev->features &= ~BIT64(VIRTIO_NET_F_ROCE);
		len = sizeof(struct virtio_net_config);
		rc = vrdma_dev_vc_result(dev, vhost_client_get_config(&dev->vc, 0, cfg, len));
	}
	if (rc < 0)
		return rc;
parse:
	if (has_feature(dev, VIRTIO_NET_F_MAC))
		memcpy(dev->mac, cfg + offsetof(struct virtio_net_config, mac), 6);
	else
		random_mac(dev->mac);

	dev->mtu = 1500;
	if (has_feature(dev, VIRTIO_NET_F_MTU)) {
		uint16_t mtu = get_le16(cfg + offsetof(struct virtio_net_config, mtu));

		if (mtu < 68) {
			LOG_WARN("vrdma: device MTU %u is invalid; ignoring VIRTIO_NET_F_MTU", mtu);
			dev->features &= ~BIT64(VIRTIO_NET_F_MTU);
		} else {
			dev->mtu = mtu;
		}
	}
	if (roce) {
		uint32_t qps = get_le32(cfg + VRDMA_CFG_MAX_RDMA_QPS_OFF);
		uint32_t cqs = get_le32(cfg + VRDMA_CFG_MAX_RDMA_CQS_OFF);

		if (qps < 1 || qps > VRDMA_MAX_RDMA_QUEUES || cqs < 1 ||
		    cqs > VRDMA_MAX_RDMA_QUEUES) {
			LOG_WARN("vrdma: device RoCE limits invalid (qps %u cqs %u); RoCE disabled",
				 qps, cqs);
			dev->features &= ~(BIT64(VIRTIO_NET_F_ROCE) | BIT64(VIRTIO_NET_F_ROCE_EXT));
			ext = false;
		} else {
			dev->max_rdma_qps = qps;
			dev->max_rdma_cqs = cqs;
		}
	}
	if (ext) {
		uint32_t srqs = get_le32(cfg + VRDMA_CFG_MAX_RDMA_SRQS_OFF);
		uint64_t total = vrdma_vq_count_ext(1, dev->max_rdma_cqs, dev->max_rdma_qps, 0) +
				 (uint64_t)srqs;

		if (srqs > VIRTIO_NET_ROCE_MAX_SRQS || total > VIRTIO_NET_ROCE_MAX_VQS) {
			LOG_WARN("vrdma: device max_rdma_srqs %u invalid; RoCE extension not used",
				 srqs);
			dev->features &= ~BIT64(VIRTIO_NET_F_ROCE_EXT);
		} else {
			dev->max_rdma_srqs = srqs;
		}
	}
	return 0;
}

/* Whether the back-end is the standalone virtio-rdma device (id 42): it
 * offers no virtio-net feature and its configuration space starts with
 * phys_port_cnt 1 and names part 42 (docs/spec.md "The virtio-rdma
 * device"). */
static bool is_virtio_rdma_device(struct vrdma_dev *dev, uint64_t offered)
{
	uint8_t cfg[20];

	if (offered & (BIT64(VIRTIO_NET_F_MAC) | BIT64(VIRTIO_NET_F_CTRL_VQ) |
		       BIT64(VIRTIO_NET_F_STATUS) | BIT64(VIRTIO_NET_F_MTU)))
		return false;
	if (!vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_CONFIG) ||
	    vhost_client_get_config(&dev->vc, 0, cfg, sizeof(cfg)) < 0)
		return false;
	return get_le32(cfg) == 1 &&
	       get_le32(cfg + offsetof(struct virtio_rdma_dev_config, vendor_part_id)) ==
		       VIRTIO_ID_RDMA;
}

/* The virtio-rdma device's configuration (its defined bytes 0..127,
 * untrusted): limits checked, the MAC taken from sys_image_guid (the
 * EUI-64 of the MAC, as the device builds it). */
static int read_config_virtio_rdma(struct vrdma_dev *dev)
{
	const size_t len = offsetof(struct virtio_rdma_dev_config, reserved);
	struct virtio_rdma_dev_config *c = &dev->rdma_cfg;
	uint32_t qps, cqs;
	uint8_t g[8];
	int rc;

	memset(c, 0, sizeof(*c));
	rc = vrdma_dev_vc_result(dev, vhost_client_get_config(&dev->vc, 0, c, (uint32_t)len));
	if (rc < 0)
		return rc;
	qps = le32toh(c->max_qp);
	cqs = le32toh(c->max_cq);
	if (qps < 1 || qps >= VIRTIO_RDMA_DEV_MAX_QPS || cqs < 1 || cqs > VIRTIO_RDMA_DEV_MAX_CQS ||
	    virtio_rdma_dev_vq_count(cqs, qps) > VIRTIO_NET_ROCE_MAX_VQS) {
		LOG_ERR("vrdma: virtio-rdma device limits invalid (max_qp %u max_cq %u)", qps, cqs);
		return -EPROTO;
	}
	/* QP indexes 0 (reserved) and 1..max_qp (the virtqueue pairs) */
	dev->max_rdma_qps = qps + 1;
	dev->max_rdma_cqs = cqs;
	memcpy(g, &c->sys_image_guid, 8);
	dev->mac[0] = g[0] ^ 0x02;
	dev->mac[1] = g[1];
	dev->mac[2] = g[2];
	dev->mac[3] = g[5];
	dev->mac[4] = g[6];
	dev->mac[5] = g[7];
	dev->mtu = 1500; /* until QUERY_PORT tells the active MTU */
	return 0;
}

static int negotiate(struct vrdma_dev *dev)
{
	struct vhost_client *vc = &dev->vc;
	uint64_t offered, pf = 0, slots;
	uint8_t st;
	int rc;

	rc = vrdma_dev_vc_result(dev, vhost_client_get_features(vc, &offered));
	if (rc == -ENOTCONN) {
		/* Closed before the first reply: the device refuses contexts
		 * beyond its limit that way (docs/spec.md, "Contexts"). */
		LOG_ERR("vrdma: the device closed the connection at once: all its contexts "
			"are in use (its contexts=N limit) or it is stopping");
		return -EBUSY;
	}
	if (rc < 0)
		return rc;
	dev->dev_features = offered;
	if (!(offered & BIT64(VIRTIO_F_VERSION_1))) {
		LOG_ERR("vrdma: back-end does not offer VIRTIO_F_VERSION_1");
		return -ENOTSUP;
	}
	if (offered & BIT64(VHOST_USER_F_PROTOCOL_FEATURES)) {
		rc = vhost_client_get_protocol_features(vc, &pf);
		if (!rc) {
			pf &= VRDMA_WANT_PROTOCOL_FEATURES & ~dev->opts.protocol_features_off;
			rc = vhost_client_set_protocol_features(vc, pf);
		}
		rc = vrdma_dev_vc_result(dev, rc);
		if (rc < 0)
			return rc;
	}
	dev->protocol_features = vc->protocol_features;
	dev->wide_index = vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_VRDMA_WIDE_INDEX);

	rc = vrdma_dev_vc_result(dev, vhost_client_set_owner(vc));
	if (rc < 0)
		return rc;

	if (vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)) {
		rc = vrdma_dev_vc_result(dev, vhost_client_get_max_mem_slots(vc, &slots));
		if (rc < 0)
			return rc;
		if (slots == 0) {
			LOG_ERR("vrdma: back-end offers 0 memory slots");
			return -EPROTO;
		}
		dev->max_mem_slots = (unsigned)MIN(slots, (uint64_t)VRDMA_MAX_MEM_SLOTS);
	} else {
		dev->max_mem_slots = VHOST_USER_MEMORY_MAX_NREGIONS;
	}

	dev->virtio_rdma = is_virtio_rdma_device(dev, offered);
	dev->features = offered & VRDMA_WANT_FEATURES & ~dev->opts.features_off;
	if (dev->virtio_rdma)
		dev->features &= BIT64(VIRTIO_F_VERSION_1) | BIT64(VIRTIO_RING_F_EVENT_IDX) |
				 BIT64(VIRTIO_RING_F_INDIRECT_DESC);
	if (!has_feature(dev, VIRTIO_NET_F_CTRL_VQ))
		dev->features &= ~(BIT64(VIRTIO_NET_F_CTRL_RX) |
				   BIT64(VIRTIO_NET_F_CTRL_MAC_ADDR) |
				   BIT64(VIRTIO_NET_F_ROCE));
	/* The extension needs RoCE (and so the control queue). */
	if (!has_feature(dev, VIRTIO_NET_F_ROCE))
		dev->features &= ~BIT64(VIRTIO_NET_F_ROCE_EXT);

	rc = dev->virtio_rdma ? read_config_virtio_rdma(dev) : read_config(dev);
	if (rc < 0)
		return rc;

	rc = set_status(dev, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	if (rc < 0)
		return rc;
	rc = vhost_client_set_features(vc, dev->features |
				       (offered & BIT64(VHOST_USER_F_PROTOCOL_FEATURES)));
	rc = vrdma_dev_vc_result(dev, rc);
	if (rc < 0)
		return rc;
	rc = set_status(dev, dev->status | VIRTIO_CONFIG_S_FEATURES_OK);
	if (rc < 0)
		return rc;
	if (vhost_client_has_pf(vc, VHOST_USER_PROTOCOL_F_STATUS)) {
		rc = vrdma_dev_vc_result(dev, vhost_client_get_status(vc, &st));
		if (rc < 0)
			return rc;
		if (!(st & VIRTIO_CONFIG_S_FEATURES_OK)) {
			LOG_ERR("vrdma: back-end refused features %#llx (status %#x)",
				(unsigned long long)dev->features, st);
			return -ENOTSUP;
		}
	}
	dev->event_idx = has_feature(dev, VIRTIO_RING_F_EVENT_IDX);
	dev->indirect = has_feature(dev, VIRTIO_RING_F_INDIRECT_DESC);
	return 0;
}

static int setup_event_fd(struct vrdma_dev *dev)
{
	struct epoll_event ev;

	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epfd < 0)
		return -errno;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u32 = 1;
	if (dev->rx.q && dev->rx.q->call_fd >= 0 &&
	    epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->rx.q->call_fd, &ev) < 0)
		return -errno;
	/* Only hang-ups: replies on the socket must not wake the application. */
	ev.events = EPOLLRDHUP;
	ev.data.u32 = 0;
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, vhost_client_fd(&dev->vc), &ev) < 0)
		return -errno;
	return 0;
}

static void dev_free(struct vrdma_dev *dev)
{
	vrdma_net_destroy(dev);
	vrdma_ctrl_destroy(dev);
	for (unsigned i = 0; i < dev->queues_cap; i++)
		if (dev->queues[i])
			vrdma_queue_teardown(dev->queues[i]);
	free(dev->queues);
	vhost_client_close(&dev->vc);
	vrdma_shm_destroy(dev);
	free(dev->mregs);
	if (dev->epfd >= 0)
		close(dev->epfd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

/* Open on socket_path, or (socket_path NULL) on the connected socket fd. */
static struct vrdma_dev *dev_open(const char *socket_path, int fd,
				  const struct vrdma_dev_opts *opts)
{
	pthread_mutexattr_t ma;
	struct vrdma_dev *dev;
	int rc;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		if (fd >= 0)
			close(fd);
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		dev->opts = *opts;
	dev->epfd = -1;
	atomic_init(&dev->dead, false);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&dev->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	vhost_client_init_fd(&dev->vc, -1);

	dev->ring_size = dev->opts.ring_size ? (uint16_t)dev->opts.ring_size : VRDMA_DEFAULT_RING;
	if (dev->opts.ring_size > 32768 || dev->ring_size < 2 || !IS_POW2(dev->ring_size)) {
		rc = -EINVAL;
		goto fail;
	}
	dev->timeout_ms = dev->opts.timeout_ms ? dev->opts.timeout_ms : VRDMA_DEFAULT_TIMEOUT_MS;
	if (dev->timeout_ms < 0)
		dev->timeout_ms = -1;
	dev->next_arena_size = dev->opts.arena_size ? ALIGN_UP(dev->opts.arena_size, 4096ull)
						    : VRDMA_ARENA_DEFAULT;

	vrdma_dev_lock(dev);
	if (socket_path)
		rc = vhost_client_connect(&dev->vc, socket_path);
	else
		rc = vhost_client_init_fd(&dev->vc, fd);
	fd = -1;
	if (rc < 0)
		goto fail_locked;
	dev->vc.timeout_ms = dev->timeout_ms;
	rc = negotiate(dev);
	if (rc < 0)
		goto fail_locked;
	/* A virtio-rdma device has no Ethernet queues. */
	rc = dev->virtio_rdma ? 0 : vrdma_net_setup(dev);
	if (rc < 0)
		goto fail_locked;
	if (has_feature(dev, VIRTIO_NET_F_CTRL_VQ) || dev->virtio_rdma) {
		rc = vrdma_ctrl_setup(dev);
		if (rc < 0)
			goto fail_locked;
	}
	rc = setup_event_fd(dev);
	if (rc < 0)
		goto fail_locked;
	rc = set_status(dev, dev->status | VIRTIO_CONFIG_S_DRIVER_OK);
	if (rc < 0)
		goto fail_locked;
	vrdma_mem_dev_register(dev);
	vrdma_dev_unlock(dev);

	/* A device without a MAC of its own learns the one we picked. */
	if (!has_feature(dev, VIRTIO_NET_F_MAC) && has_feature(dev, VIRTIO_NET_F_CTRL_MAC_ADDR)) {
		uint8_t mac[6];

		memcpy(mac, dev->mac, 6);
		rc = vrdma_ctrl_set_mac(dev, mac);
		if (rc < 0)
			LOG_WARN("vrdma: setting MAC address failed: %s", strerror(-rc));
	}
	return dev;

fail_locked:
	vrdma_dev_unlock(dev);
fail:
	if (fd >= 0)
		close(fd);
	LOG_DEBUG("vrdma: open %s failed: %s", socket_path ? socket_path : "(fd)",
		  strerror(-rc));
	/* Leave the back-end clean if it is still listening to us. */
	if (vhost_client_alive(&dev->vc) &&
	    vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_STATUS))
		vhost_client_set_status(&dev->vc, 0);
	atomic_store(&dev->dead, true);
	dev_free(dev);
	errno = -rc;
	return NULL;
}

struct vrdma_dev *vrdma_dev_open(const char *socket_path, const struct vrdma_dev_opts *opts)
{
	if (!socket_path) {
		errno = EINVAL;
		return NULL;
	}
	return dev_open(socket_path, -1, opts);
}

struct vrdma_dev *vrdma_dev_open_fd(int fd, const struct vrdma_dev_opts *opts)
{
	if (fd < 0) {
		errno = EINVAL;
		return NULL;
	}
	return dev_open(NULL, fd, opts);
}

void vrdma_dev_close(struct vrdma_dev *dev)
{
	if (!dev)
		return;
	vrdma_dev_lock(dev);
	if (!vrdma_dev_is_dead(dev)) {
		/* Reset: the back-end stops every ring and forgets our memory. */
		if (vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_STATUS))
			vhost_client_set_status(&dev->vc, 0);
		else if (vhost_client_has_pf(&dev->vc, VHOST_USER_PROTOCOL_F_RESET_DEVICE))
			vhost_client_reset_device(&dev->vc);
	}
	/* From here on nothing talks to the back-end any more. */
	atomic_store(&dev->dead, true);
	if (dev->rdma_destroy)
		dev->rdma_destroy(dev);
	vrdma_mem_dev_unregister(dev);
	vrdma_dev_unlock(dev);
	dev_free(dev);
}

int vrdma_dev_event_fd(const struct vrdma_dev *dev)
{
	return dev->epfd;
}

void vrdma_dev_mac(const struct vrdma_dev *dev, uint8_t mac[6])
{
	memcpy(mac, dev->mac, 6);
}

uint16_t vrdma_dev_mtu(const struct vrdma_dev *dev)
{
	return dev->mtu;
}

uint64_t vrdma_dev_features(const struct vrdma_dev *dev)
{
	return dev->features;
}

uint64_t vrdma_dev_protocol_features(const struct vrdma_dev *dev)
{
	return dev->protocol_features;
}

bool vrdma_dev_alive(const struct vrdma_dev *dev)
{
	return !vrdma_dev_is_dead(dev);
}

uint32_t vrdma_dev_max_rdma_qps(const struct vrdma_dev *dev)
{
	return has_feature(dev, VIRTIO_NET_F_ROCE) || dev->virtio_rdma ? dev->max_rdma_qps : 0;
}

uint32_t vrdma_dev_max_rdma_cqs(const struct vrdma_dev *dev)
{
	return has_feature(dev, VIRTIO_NET_F_ROCE) || dev->virtio_rdma ? dev->max_rdma_cqs : 0;
}

bool vrdma_dev_is_virtio_rdma(const struct vrdma_dev *dev)
{
	return dev->virtio_rdma;
}

uint32_t vrdma_dev_max_rdma_srqs(const struct vrdma_dev *dev)
{
	return has_feature(dev, VIRTIO_NET_F_ROCE_EXT) ? dev->max_rdma_srqs : 0;
}

int vrdma_dev_link_up(struct vrdma_dev *dev)
{
	uint8_t st[2];
	int rc;

	if (!has_feature(dev, VIRTIO_NET_F_STATUS))
		return vrdma_dev_is_dead(dev) ? -ENOTCONN : 1;
	vrdma_dev_lock(dev);
	if (vrdma_dev_is_dead(dev))
		rc = -ENOTCONN;
	else
		rc = vrdma_dev_vc_result(dev, vhost_client_get_config(&dev->vc,
				offsetof(struct virtio_net_config, status), st, 2));
	vrdma_dev_unlock(dev);
	if (rc < 0)
		return rc;
	return (get_le16(st) & VIRTIO_NET_S_LINK_UP) ? 1 : 0;
}

void vrdma_dev_get_stats(const struct vrdma_dev *dev, struct vrdma_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->tx_frames = dev->tx.frames;
	st->tx_bytes = dev->tx.bytes;
	st->tx_kicks = dev->tx.q ? dev->tx.q->kicks : 0;
	st->tx_full = dev->tx.full;
	st->rx_frames = dev->rx.frames;
	st->rx_bytes = dev->rx.bytes;
	st->rx_kicks = dev->rx.q ? dev->rx.q->kicks : 0;
	st->rx_bad = dev->rx.bad;
	st->rx_truncated = dev->rx.truncated;
	st->ctrl_cmds = dev->ctrl.cmds;
	st->ctrl_errors = dev->ctrl.errors;
	st->mem_regions = dev->nmregs;
	st->shm_bytes = dev->shm_bytes;
}
