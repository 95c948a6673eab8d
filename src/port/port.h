/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports and the built-in L2 switch.
 *
 * Every device and every uplink is a port of one switch (one per backend
 * process / loop). A frame enters the switch with sw_input() and leaves
 * through the output port's xmit(). The switch learns source MACs, forwards
 * unicast to the learned port, floods broadcast, multicast and unknown
 * unicast. A port with hairpin set (device ports) may receive its own frames
 * back: that is how a device reaches itself (loopback), like a real RNIC.
 *
 * Every frame that enters the switch passes, in this order:
 *  1. the capture (pcap), if enabled, as it arrived;
 *  2. the fault injector (drop / duplicate / reorder / corrupt), if enabled for
 *     this port;
 *  3. forwarding.
 *
 * xmit() must not call back into sw_input() synchronously: device ports queue
 * the frame and process it from their poller; uplinks write it out.
 */
#ifndef VRDMA_PORT_PORT_H
#define VRDMA_PORT_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "port/pkt.h"

struct sw;
struct port;
struct loop;

struct port_ops {
	/* Take ownership of a frame leaving the switch through this port. */
	void (*xmit)(struct port *p, struct pkt *pkt);
	/* Release the port's resources (called by port_destroy). */
	void (*destroy)(struct port *p);
	/* Flow control inside the switch (both optional, see sw_input_try):
	 * busy: true while the port should not be given more frames from the
	 * other ports of this switch (its receive queue is past its high mark);
	 * ready: a port this one was refused by has room again. ready() runs
	 * inside another port's code: it must only mark and wake, never call
	 * sw_input. */
	bool (*busy)(const struct port *p);
	void (*ready)(struct port *p);
	/* Optional: true while the port should not be given frames for the
	 * destination of pkt (a trunk whose far receiver for it is busy). */
	bool (*busy_to)(const struct port *p, const struct pkt *pkt);
};

/* The switch counts rx_* (in sw_input) and tx_frames/tx_bytes (when it hands
 * a frame to xmit); a port counts tx_dropped itself, and may count rx_errors
 * for frames it could not read. */
struct port_stats {
	uint64_t rx_frames, rx_bytes;   /* into the switch from this port */
	uint64_t tx_frames, tx_bytes;   /* out of the switch to this port */
	uint64_t tx_dropped;            /* port could not take the frame */
	uint64_t rx_errors;             /* malformed frames from this port */
	uint64_t rx_spoofed;            /* source MAC pinned to another port, dropped */
	uint64_t learn_limited;         /* source MACs not learned: port at its limit */
};

struct port {
	const struct port_ops *ops;
	struct sw *sw;
	uint16_t id;          /* index in the switch, assigned by sw_attach */
	bool hairpin;         /* may receive frames it sent (devices) */
	bool uplink;          /* frames to/from the host network */
	/* Takes frames our transport sent without their ICRC
	 * (PKT_F_LOCAL_ICRC_SKIPPED): a device whose RoCE engine is in this
	 * process. Every other port gets the ICRC filled in first. */
	bool icrc_skip_ok;
	/* One end of a trunk to another thread's switch (port/trunk.h): a
	 * frame from one trunk never leaves by another (split horizon), and
	 * the fault injector and the capture saw it on its first switch. */
	bool trunk;
	uint16_t mac_limit;   /* learned MACs at most (0 = SW_PORT_MAC_MAX) */
	char name[32];
	struct port_stats stats;
	void *priv;           /* owner */
};

#define SW_MAX_PORTS 1024

struct sw *sw_new(struct loop *loop);
void sw_free(struct sw *s);

/* Attach p (ops, name, hairpin, uplink, priv set by the caller). Returns 0 or
 * -ENOSPC. */
int sw_attach(struct sw *s, struct port *p);
/* Detach p; forgets MACs learned on it. */
void sw_detach(struct sw *s, struct port *p);

/* A frame from port p enters the switch. Takes ownership of pkt. Frames
 * shorter than an Ethernet header are dropped and counted. */
void sw_input(struct sw *s, struct port *p, struct pkt *pkt);

/* Flow control between ports of one switch: like sw_input, but a unicast
 * frame to a learned port whose busy() says so is refused: returns -EAGAIN,
 * the frame stays with the caller, and the caller's ready() is called once
 * that port calls sw_port_ready (or detaches), or any other port that
 * refused it does: on ready() the caller retries every frame it holds (a
 * refusal makes it wait again). Returns 0 when the frame was
 * taken. Frames to busy ports are never dropped this way; floods, uplinks
 * and the fault injector keep the plain sw_input semantics. */
int sw_input_try(struct sw *s, struct port *p, struct pkt *pkt);
/* The learned port a unicast frame from p would leave by, or NULL (unknown
 * or group destination, runt). */
struct port *sw_unicast_port(struct sw *s, const struct port *p, const struct pkt *pkt);
/* Port p, busy before, has room again: wake the ports it refused (in a
 * rotating order, so no sender is always first). Cheap when none waits. */
void sw_port_ready(struct sw *s, struct port *p);

/* Capture every frame entering the switch to a pcap file (NULL stops).
 * Returns 0 or -errno. */
int sw_set_pcap(struct sw *s, const char *path);
/* Capture the frames port p sends into and receives from the switch to a
 * pcap file (NULL stops). Returns 0 or -errno. */
int sw_set_port_pcap(struct sw *s, struct port *p, const char *path);

/* Fault injection, see port/fault.h. port_name NULL = every port. */
/* (Addition: port_name NULL and cfg->port set = that port. A per-port
 * configuration overrides the every-port one for that port; cfg NULL or
 * without any fault removes the configuration, delivering held frames.
 * Returns 0 or -errno.) */
struct fault_cfg;
int sw_set_fault(struct sw *s, const struct fault_cfg *cfg, const char *port_name);

struct sw_stats {
	uint64_t forwarded, flooded, dropped_no_port, dropped_runt;
	uint64_t fault_dropped, fault_duplicated, fault_reordered, fault_corrupted;
	uint64_t fault_ce_marked;
	uint64_t fault_run_passed; /* packets of runs the injector left alone unbuilt */
	/* Additions: unicast to the input port of a port without hairpin;
	 * source MACs not learned because the table was full. */
	uint64_t dropped_hairpin, learn_full;
	/* source MAC pinned to another port (port security) */
	uint64_t dropped_spoofed;
	/* Flow control: frames refused by sw_input_try (left with the sender)
	 * and wake-ups of waiting senders. */
	uint64_t held_busy, woken;
	/* From a trunk to a trunk (split horizon, port.trunk). */
	uint64_t dropped_horizon;
};
const struct sw_stats *sw_get_stats(const struct sw *s);

/* --- Additions (frames and ports helper) --- */

/* MAC table bounds: at most SW_MAC_MAX learned addresses (more are flooded
 * to, not learned); an address is forgotten SW_MAC_AGE_SEC / 2 to
 * SW_MAC_AGE_SEC seconds after its last frame (only when the switch has a
 * loop). */
#define SW_MAC_MAX 6144
#define SW_MAC_AGE_SEC 300

/* Learned MACs per port at most (port->mac_limit overrides): one port
 * cannot fill the table and turn everyone's unicast into floods. */
#define SW_PORT_MAC_MAX 1024

/* Pin mac to port p (a static entry: never learned elsewhere, never aged;
 * frames from another port with it as source are dropped and counted).
 * Returns 0, -EADDRINUSE (pinned to another port), -ENOSPC or -EINVAL. */
int sw_mac_pin(struct sw *s, const uint8_t mac[6], struct port *p);
/* Remove the static entry of mac if p holds it. */
void sw_mac_unpin(struct sw *s, const uint8_t mac[6], struct port *p);
bool sw_mac_pinned(const struct sw *s, const uint8_t mac[6]);
/* The port id a MAC was learned on, or -ENOENT. */
int sw_mac_lookup(const struct sw *s, const uint8_t mac[6]);
/* Number of learned MACs. */
unsigned sw_mac_count(const struct sw *s);
/* One aging step (the loop timer runs it every SW_MAC_AGE_SEC / 2 s): forget
 * the MACs not seen since the previous step. */
void sw_mac_age(struct sw *s);
/* Counters of the capture file, or NULL when not capturing. */
struct pcapw_stats;
const struct pcapw_stats *sw_get_pcap_stats(const struct sw *s);

/* Uplinks. Each opens its fd, registers it with the loop and attaches itself
 * to the switch. Return the port or NULL with errno set and a message logged. */
struct port *tap_port_open(struct sw *s, struct loop *loop, const char *ifname);
struct port *afpacket_port_open(struct sw *s, struct loop *loop, const char *ifname);
/* AF_XDP (afxdp.c, needs libxdp: only the daemon links it). spec:
 * IF[,mode=generic|native] (default: native when the driver has it). */
struct port *afxdp_port_open(struct sw *s, struct loop *loop, const char *spec);
void port_destroy(struct port *p);

#endif /* VRDMA_PORT_PORT_H */
