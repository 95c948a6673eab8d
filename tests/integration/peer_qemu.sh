#!/usr/bin/env bash
# QEMU (a vhost-user front-end written outside this project) drives device A
# of a vhost-user-rdma daemon with -netdev vhost-user + virtio-net-pci; with
# -boot n and no guest OS, the iPXE firmware drives the NIC and broadcasts
# DHCP requests. A DPDK testpmd in rxonly mode (net_virtio_user) counts what
# arrives on device B.
#
# Asserts: QEMU completes the vhost-user handshake (memory table, rings 0 and
# 1 started) without vhost errors on either side; frames from the guest reach
# the receiver on device B; every frame the guest sent (and nothing else) is
# delivered to B, matching the receiver's count; the switch capture holds a
# DHCPDISCOVER from the guest's MAC; after a guest reset (system_reset) the
# rings are set up again on the same connection and the guest sends again; the
# daemon survives QEMU being killed and exits cleanly, with no sanitizer report.
#
# QEMU does not pass VIRTIO_NET_F_MAC / CTRL_* to a vhost-user back-end (it
# emulates them), so the guest NIC gets the daemon's MAC on the command line.
#
# The guest runs under TCG by default: on nested-virtualisation hosts iPXE can
# hang under KVM before it touches the NIC (seen here with any NIC model).
# VRDMA_QEMU_ACCEL=kvm selects KVM.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/peer_lib.bash"

QEMU=${VRDMA_QEMU:-qemu-system-x86_64}
ACCEL=${VRDMA_QEMU_ACCEL:-tcg}
peer_require "$QEMU" "install the Debian package qemu-system-x86 (scripts/deps.sh test)"
peer_require dpdk-testpmd "install the Debian package dpdk-dev (scripts/deps.sh test)"
peer_require python3 "install the Debian package python3"
peer_require "$PEER_DAEMON" "build it first (make)"
if ! [ -e /usr/lib/ipxe/qemu/efi-virtio.rom ] && ! [ -e /usr/share/qemu/efi-virtio.rom ]; then
	not_ok prerequisites "iPXE option ROM efi-virtio.rom not found: install Debian package 'ipxe-qemu' (scripts/deps.sh test)"
	exit 1
fi

SOCK_A=$T_TMP/a.sock
SOCK_B=$T_TMP/b.sock
MAC_A=02:56:52:00:00:0a
MAC_B=02:56:52:00:00:0b
PCAP=$T_TMP/switch.pcap

if ! daemon_start --pcap "$PCAP" --device "socket=$SOCK_A,mac=$MAC_A" \
		--device "socket=$SOCK_B,mac=$MAC_B"; then
	not_ok daemon_start "vhost-user-rdma did not write its pidfile"
	peer_tail daemon
	t_done
fi
ok daemon_start

ring_started() { grep -q "$1: ring $2 started" "$T_TMP/daemon.log"; }

# capture_counts: "FRAMES DHCP": frames from the guest's MAC in the switch
# capture, and how many of them are DHCPDISCOVERs.
capture_counts() {
	python3 - "$PCAP" "$MAC_A" <<'EOF'
import struct, sys
path, mac = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', ''))
guest = dhcp = 0
try:
    data = open(path, 'rb').read()
except OSError:
    data = b''
if len(data) >= 24:
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + 'I', data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(f) < 14 or f[6:12] != mac:
            continue
        guest += 1
        # IPv4 / UDP to port 67 / BOOTREQUEST / DHCP message type 1
        if f[12:14] != b'\x08\x00' or len(f) < 34 or f[23] != 17:
            continue
        ihl = (f[14] & 0xf) * 4
        udp = 14 + ihl
        if len(f) < udp + 8 or struct.unpack('>H', f[udp + 2:udp + 4])[0] != 67:
            continue
        b = udp + 8
        if len(f) < b + 240 or f[b] != 1 or f[b + 236:b + 240] != b'\x63\x82\x53\x63':
            continue
        o = b + 240
        while o + 1 < len(f) and f[o] != 255:
            if f[o] == 0:
                o += 1
                continue
            if f[o] == 53 and f[o + 1] >= 1 and o + 2 < len(f) and f[o + 2] == 1:
                dhcp += 1
                break
            o += 2 + f[o + 1]
print(guest, dhcp)
EOF
}

# The receiver first, so that no guest frame finds device B without buffers.
testpmd_start rx "$SOCK_B" "$MAC_B" rxonly --no-flush-rx
rx_forwarding() { ! peer_alive rx || testpmd_forwarding rx; }
wait_cmd 45 rx_forwarding
if ! peer_alive rx || ! ring_started "$SOCK_B" 0; then
	not_ok receiver_start "testpmd rxonly on device B did not start"
	peer_tail rx 25; peer_tail daemon
	t_done
fi
ok receiver_start

peer_spawn qemu "$QEMU" -accel "$ACCEL" -m 256M -nodefaults -display none \
	-object memory-backend-memfd,id=mem,size=256M,share=on -numa node,memdev=mem \
	-chardev "socket,id=c0,path=$SOCK_A" \
	-netdev vhost-user,chardev=c0,id=n0 \
	-device "virtio-net-pci,netdev=n0,mac=$MAC_A" \
	-boot n -serial "file:$T_TMP/serial.log" \
	-monitor "unix:$T_TMP/monitor.sock,server=on,wait=off"

# qemu_hmp CMD: run a human-monitor command, wait for the next prompt.
qemu_hmp() {
	python3 - "$T_TMP/monitor.sock" "$1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
buf, end = b'', time.time() + 10
while b'(qemu)' not in buf and time.time() < end:
    buf += s.recv(4096)
s.sendall(sys.argv[2].encode() + b'\n')
buf = b''
while b'(qemu)' not in buf and time.time() < end:
    buf += s.recv(4096)
sys.exit(0 if b'(qemu)' in buf else 1)
EOF
}

# The event: the receiver counted frames and a DHCPDISCOVER from the guest
# entered the switch (the capture is flushed once per loop iteration).
guest_frames_arrived() {
	peer_alive qemu && peer_alive rx && peer_alive daemon || return 0
	[ "$(testpmd_last rx RX-packets)" -gt 0 ] || return 1
	local g d
	read -r g d < <(capture_counts)
	[ "${d:-0}" -gt 0 ]
}
t0=$SECONDS
wait_cmd 60 guest_frames_arrived
echo "# guest DHCP seen and frames counted on device B after $((SECONDS - t0)) s ($ACCEL)"
for n in daemon rx qemu; do
	peer_alive "$n" || { not_ok "${n}_alive" "$n exited early"; peer_tail "$n" 25; }
done

# QEMU gives memory with SET_MEM_TABLE, or region by region with ADD_MEM_REG
# when the back-end offers CONFIGURE_MEM_SLOTS.
# (session messages are logged as SOCKET#CONTEXT: ...)
if grep -q -E "$SOCK_A(#[0-9]+)?: (SET_MEM_TABLE|ADD_MEM_REG)" "$T_TMP/daemon.log" &&
   ring_started "$SOCK_A" 0 && ring_started "$SOCK_A" 1; then
	ok qemu_handshake
else
	not_ok qemu_handshake "QEMU did not set the memory table and start rings 0 and 1"
	grep -a "$SOCK_A" "$T_TMP/daemon.log" | tail -25 | sed 's/^/#   /'
fi

n=$(testpmd_last rx RX-packets)
if [ "$n" -gt 0 ]; then
	ok guest_frames_reach_device_b
else
	not_ok guest_frames_reach_device_b "no DHCP from the guest counted on device B in 60 s"
	daemon_snapshot && grep -a -A2 '^device' "$T_TMP/daemon.log" | tail -6 | sed 's/^/#   /'
	echo "# iPXE console: $(tr -d '\r' <"$T_TMP/serial.log" 2>/dev/null | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tail -c 300 | tr '\n' ' ')"
fi

# Guest reset: QEMU stops the rings (GET_VRING_BASE) and sets them up again
# on the same connection when iPXE restarts; the guest must send again.
ring0_starts() { grep -c "$SOCK_A: ring 0 started" "$T_TMP/daemon.log"; }
restarted() { ! peer_alive qemu || [ "$(ring0_starts)" -ge 2 ]; }
sent_after() {
	peer_alive qemu && peer_alive daemon || return 0
	daemon_snapshot && [ "$(daemon_stat "$SOCK_A" tx_frames)" -gt "$1" ]
}
if qemu_hmp system_reset && wait_cmd 45 restarted && [ "$(ring0_starts)" -ge 2 ] &&
   daemon_snapshot; then
	# Frames taken after this snapshot come from the restarted rings.
	t1=$(daemon_stat "$SOCK_A" tx_frames)
	if wait_cmd 45 sent_after "$t1" && peer_alive qemu; then
		ok guest_reset_rings_restart
	else
		not_ok guest_reset_rings_restart "no frame from the guest after its rings restarted"
		grep -a "$SOCK_A" "$T_TMP/daemon.log" | tail -20 | sed 's/^/#   /'
	fi
else
	not_ok guest_reset_rings_restart "system_reset: rings of $SOCK_A were not started again"
	grep -a "$SOCK_A" "$T_TMP/daemon.log" | tail -20 | sed 's/^/#   /'
	peer_tail qemu
fi

# Kill the guest (as a crashing VM would go); the daemon must keep serving.
peer_stop qemu TERM 10
# One warning is expected: the daemon offers VHOST_USER_PROTOCOL_F_CONFIG
# (its own front-end reads the RoCE config space through it), which QEMU's
# virtio-net does not use and masks.
if grep -a -i -E 'vhost|virtio' "$T_TMP/qemu.log" | grep -v -i 'terminating on signal' |
		grep -v 'supports VHOST_USER_PROTOCOL_F_CONFIG but QEMU does not' |
		sed 's/^/#   /' | grep .; then
	not_ok qemu_no_vhost_errors "QEMU reported vhost-user / virtio errors (above)"
else
	ok qemu_no_vhost_errors
fi
a_gone() { grep -q -E "$SOCK_A(#[0-9]+)?: front-end session closed" "$T_TMP/daemon.log"; }
if wait_cmd 10 a_gone && peer_alive daemon; then
	ok daemon_survives_qemu_exit
else
	not_ok daemon_survives_qemu_exit "the daemon did not see QEMU leave or died"
	peer_tail daemon 30
fi

# Everything the guest sent is accounted for on B, and counted by the receiver.
settled() {
	peer_alive rx && peer_alive daemon || return 0
	daemon_snapshot || return 1
	[ "$(daemon_stat "$SOCK_A" tx_frames)" -eq "$(daemon_rx_accounted "$SOCK_B")" ] &&
		[ "$(testpmd_last rx RX-packets)" -eq "$(daemon_stat "$SOCK_B" rx_frames)" ]
}
wait_cmd 20 settled
peer_stop rx TERM 20
rx_rc=$P_LAST_RC
rx_total=$(testpmd_total rx RX-packets)
if [ "$rx_rc" -eq 0 ] && [ -n "$rx_total" ]; then
	ok rx_clean_exit
else
	not_ok rx_clean_exit "testpmd rxonly exited with status $rx_rc (totals: '$rx_total')"
	peer_tail rx
fi
rx_total=${rx_total:-0}

peer_stop daemon TERM 20
d_rc=$P_LAST_RC
if [ "$d_rc" -eq 0 ] && ! [ -e "$SOCK_A" ] && ! [ -e "$SOCK_B" ]; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "status $d_rc, sockets left: $(ls "$T_TMP"/*.sock 2>/dev/null)"
	peer_tail daemon 30
fi

a_tx=$(daemon_stat "$SOCK_A" tx_frames)
b_rx=$(daemon_stat "$SOCK_B" rx_frames)
b_in=$(daemon_rx_accounted "$SOCK_B")
echo "# daemon: A tx_frames $a_tx, B rx_frames $b_rx (accounted $b_in); receiver counted $rx_total"
if [ "$a_tx" -gt 0 ] && [ "$b_rx" -eq "$a_tx" ] && [ "$rx_total" -eq "$b_rx" ]; then
	ok every_guest_frame_delivered
else
	not_ok every_guest_frame_delivered "guest sent $a_tx, daemon delivered $b_rx to B, receiver counted $rx_total"
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
	not_ok no_protocol_errors "the daemon counted errors with QEMU / testpmd"
	grep -a -E 'warn|error' "$T_TMP/daemon.log" | head -20 | sed 's/^/#   /'
fi

# What entered the switch from the guest: all of it, and a DHCPDISCOVER.
read -r cap_guest cap_dhcp < <(capture_counts)
echo "# switch capture: $cap_guest frame(s) from the guest, $cap_dhcp DHCPDISCOVER"
if [ "${cap_dhcp:-0}" -gt 0 ] && [ "${cap_guest:-0}" -eq "$a_tx" ]; then
	ok guest_dhcp_captured
else
	not_ok guest_dhcp_captured "capture: ${cap_guest:-?} guest frames (daemon counted $a_tx), ${cap_dhcp:-?} DHCPDISCOVER"
fi
t_done
