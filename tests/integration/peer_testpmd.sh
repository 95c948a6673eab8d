#!/usr/bin/env bash
# Two DPDK testpmd processes (net_virtio_user: a vhost-user front-end written
# outside this project) drive two devices of one vhost-user-rdma daemon: one
# sends with --forward-mode=txonly, the other counts with --forward-mode=rxonly.
# Two sender sessions run one after the other on the same socket.
#
# Asserts: the front-ends complete the vhost-user handshake and start their
# rings, again for the second session; frames sent on device A arrive on device
# B in both sessions; the receiver's count equals what the daemon delivered to
# B, everything A transmitted is accounted for on B (delivered or counted as a
# drop) and went through the switch exactly once; no protocol, ring or
# sanitizer errors; every process stops cleanly on SIGTERM.
#
# Over vhost-user, virtio-user never tells the back-end its MAC nor lets it
# see the control queue (SET_FEATURES carries neither VIRTIO_NET_F_MAC nor
# VIRTIO_NET_F_CTRL_VQ), so it cannot make the device promiscuous and uses a
# random MAC unless given one. Each testpmd therefore gets its device's MAC
# (mac= devarg; the daemon drops frames with a foreign source MAC), and the
# sender addresses the receiver's MAC (--eth-peer); the switch floods it as
# unknown unicast since the receiver never sends.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peer_lib.bash"

peer_require dpdk-testpmd "install the Debian package dpdk-dev (scripts/deps.sh test)"
peer_require "$PEER_DAEMON" "build it first (make)"

SOCK_A=$T_TMP/a.sock
SOCK_B=$T_TMP/b.sock
MAC_A=02:56:52:00:00:0a
MAC_B=02:56:52:00:00:0b

# txonly sends UDP from 198.18.0.1 (testpmd's default): allowed by the
# operator (port security: docs/spec.md "Tenant isolation").
if ! daemon_start --device "socket=$SOCK_A,mac=$MAC_A,allow-ip=198.18.0.0/15" \
		--device "socket=$SOCK_B,mac=$MAC_B,allow-ip=198.18.0.0/15"; then
	not_ok daemon_start "vhost-user-rdma did not write its pidfile"
	peer_tail daemon
	t_done
fi
ok daemon_start

# --no-flush-rx: testpmd would otherwise drain and drop (uncounted in its
# totals) what arrived before forwarding started.
testpmd_start rx "$SOCK_B" "$MAC_B" rxonly --no-flush-rx
# Start the sender once the receiver forwards: when its port starts, the
# virtio PMD silently discards whatever is already in its used ring, which
# would make its count differ from the daemon's for a reason of its own.
rx_forwarding() { ! peer_alive rx || testpmd_forwarding rx; }
wait_cmd 45 rx_forwarding

# ring_started SOCKET IDX [N]: the daemon logged at least N (default 1)
# starts of ring IDX by the front-end on SOCKET.
ring_started() { [ "$(grep -c "$1: ring $2 started" "$T_TMP/daemon.log")" -ge "${3:-1}" ]; }

# Everything A's sender put on the wire is accounted for on B (delivered or
# counted as a drop) and the receiver has counted all that B delivered.
settled() {
	peer_alive rx && peer_alive daemon || return 0
	daemon_snapshot || return 1
	[ "$(daemon_stat "$SOCK_A" tx_frames)" -eq "$(daemon_rx_accounted "$SOCK_B")" ] &&
		[ "$(testpmd_last rx RX-packets)" -eq "$(daemon_stat "$SOCK_B" rx_frames)" ]
}

# Two sender sessions one after the other on device A: the second checks
# that the socket accepts the next front-end and that rings set up again work.
tx_sent=0
for session in 1 2; do
	seen=$(testpmd_last rx RX-packets)
	testpmd_start "tx$session" "$SOCK_A" "$MAC_A" txonly --eth-peer="0,$MAC_B"
	more_counted() {
		peer_alive daemon && peer_alive rx && peer_alive "tx$session" || return 0
		[ "$(testpmd_last rx RX-packets)" -gt "$seen" ]
	}
	# The event: the receiver counted new frames (bounded: testpmd start-up
	# with --no-huge takes a few seconds, longer on a loaded machine).
	t0=$SECONDS
	wait_cmd 60 more_counted
	echo "# session $session: receiver counting after $((SECONDS - t0)) s"
	for n in daemon rx "tx$session"; do
		peer_alive "$n" || { not_ok "${n}_alive" "$n exited early"; peer_tail "$n" 25; }
	done
	[ $T_FAILED -eq 0 ] || t_done

	if ring_started "$SOCK_A" 0 "$session" && ring_started "$SOCK_A" 1 "$session" &&
	   ring_started "$SOCK_B" 0 && ring_started "$SOCK_B" 1; then
		ok "handshake_tx$session"
	else
		not_ok "handshake_tx$session" "rings 0 and 1 were not started"
		grep -a -E "$SOCK_A|$SOCK_B" "$T_TMP/daemon.log" | tail -20 | sed 's/^/#   /'
	fi
	if [ "$(testpmd_last rx RX-packets)" -gt "$seen" ]; then
		ok "frames_received_tx$session"
	else
		not_ok "frames_received_tx$session" "testpmd rxonly on device B counted no new frame in 60 s"
		daemon_snapshot && grep -a -A5 '^device' "$T_TMP/daemon.log" | tail -12 | sed 's/^/#   /'
		peer_tail "tx$session"; peer_tail rx
	fi

	peer_stop "tx$session" TERM 20
	tx_rc=$P_LAST_RC
	sent=$(testpmd_total "tx$session" TX-packets)
	if [ "$tx_rc" -eq 0 ] && [ -n "$sent" ]; then
		ok "tx${session}_clean_exit"
	else
		not_ok "tx${session}_clean_exit" "testpmd txonly exited with status $tx_rc (totals: '$sent')"
		peer_tail "tx$session"
	fi
	tx_sent=$((tx_sent + ${sent:-0}))
	t0=$SECONDS
	wait_cmd 20 settled
	echo "# session $session: counters settled after $((SECONDS - t0)) s"
done

peer_stop rx TERM 20
rx_rc=$P_LAST_RC
rx_total=$(testpmd_total rx RX-packets)
if [ "$rx_rc" -eq 0 ] && [ -n "$rx_total" ]; then
	ok rx_clean_exit
else
	not_ok rx_clean_exit "testpmd rxonly exited with status $rx_rc (totals printed: '${rx_total}')"
	peer_tail rx
fi
rx_total=${rx_total:-0}

# The daemon must survive both front-ends leaving, then exit cleanly.
if peer_alive daemon; then
	ok daemon_survives_disconnects
else
	not_ok daemon_survives_disconnects "vhost-user-rdma died when the front-ends left"
	peer_tail daemon 30
fi
peer_stop daemon TERM 20
d_rc=$P_LAST_RC
if [ "$d_rc" -eq 0 ] && ! [ -e "$SOCK_A" ] && ! [ -e "$SOCK_B" ]; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "status $d_rc, sockets left: $(ls "$T_TMP"/*.sock 2>/dev/null)"
	peer_tail daemon 30
fi

# Counters printed by the daemon at exit (--stats).
a_tx=$(daemon_stat "$SOCK_A" tx_frames)
b_rx=$(daemon_stat "$SOCK_B" rx_frames)
b_in=$(daemon_rx_accounted "$SOCK_B")
flooded=$(daemon_switch_stat flooded)
forwarded=$(daemon_switch_stat forwarded)
echo "# testpmd txonly sent $tx_sent; daemon: A tx_frames $a_tx, switch flooded $flooded" \
	"forwarded $forwarded, B rx_frames $b_rx (accounted $b_in); testpmd rxonly counted $rx_total"

if [ "$rx_total" -gt 0 ] && [ "$rx_total" -eq "$b_rx" ]; then
	ok rx_count_matches_daemon
else
	not_ok rx_count_matches_daemon "receiver counted $rx_total, daemon delivered $b_rx to B"
fi
if [ "$a_tx" -gt 0 ] && [ "$a_tx" -le "$tx_sent" ]; then
	ok tx_count_matches_sender
else
	not_ok tx_count_matches_sender "daemon took $a_tx frames from A, testpmd sent $tx_sent"
fi
# Two ports, no uplink: each frame from A is forwarded or flooded exactly once.
if [ "$a_tx" -eq "$b_in" ] && [ "$((flooded + forwarded))" -eq "$a_tx" ]; then
	ok switch_accounts_every_frame
else
	not_ok switch_accounts_every_frame "A sent $a_tx, B accounted $b_in, switch flooded+forwarded $((flooded + forwarded))"
fi
errs=0
for s in "$SOCK_A" "$SOCK_B"; do
	for f in bad_messages ring_errors tx_errors tx_spoofed ctrl_err; do
		v=$(daemon_stat "$s" "$f")
		[ "$v" -eq 0 ] || { echo "# $s: $f $v"; errs=1; }
	done
done
if daemon_sanitizer_clean; then
	ok daemon_no_sanitizer_report
else
	not_ok daemon_no_sanitizer_report "ASan/UBSan reported in the daemon log"
	grep -a -A12 -E 'Sanitizer|runtime error:' "$T_TMP/daemon.log" | head -30 | sed 's/^/#   /'
fi
if [ $errs -eq 0 ]; then
	ok no_protocol_errors
else
	not_ok no_protocol_errors "the daemon counted errors with a well-behaved front-end"
	grep -a -E 'warn|error' "$T_TMP/daemon.log" | head -20 | sed 's/^/#   /'
fi
t_done
