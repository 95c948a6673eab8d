#!/usr/bin/env bash
# Two vhost-user-rdma back-ends, each in a network namespace of its own,
# joined by a veth pair through their uplinks: the topology RDMA between two
# hosts needs. Namespaces, links and daemons are made here and always removed.
#
#   ns A: daemon A --af_packet-- eth-a ==veth== eth-b --af_packet-- daemon B :ns B
#         devices a (mtu 1500), a9 (mtu 9000)        devices b, b9 (same)
#
# 1. af_packet on both sides, veth MTU 9000: vrdma-netcat frames A -> B and
#    B -> A (every size 60..1514, byte for byte, windowed acks so nothing may
#    be lost), jumbo frames up to 9014 bytes, a standard device to a jumbo one,
#    broadcast from A verified byte for byte by a libvrdma client on B.
#    After each exchange the daemons' counters (SIGUSR1 dumps) must match what
#    was sent exactly: uplink rx/tx on both sides, device rx/tx, no drops, and
#    the kernel's own veth counters must agree with the uplink counters.
# 2. The veth MTU drops to 1500 under a jumbo device: its oversize frames are
#    refused by the kernel, counted as uplink tx_dropped, none reach B, and
#    both daemons keep working.
# 3. RDMA across the two back-ends with unmodified verbs programs run by
#    vrdma-run (ibv_rc_pingpong both ways, with 64 KiB messages on the jumbo
#    devices, and ib_write_bw) on GID index 1, the IPv4-mapped GID (found in
#    ibv_devinfo -v); first inside one daemon, to tell a transport failure
#    from a cross-back-end one. The programs run in a third namespace whose
#    loopback carries their TCP side channel (they reach the daemons through
#    the sockets), so their ports clash with nothing. Every frame one uplink
#    sent must have arrived at the other. Skipped, with the reason, only
#    when the environment lacks something (verbs library or programs not
#    built / installed, no RoCE offered).
# 4. Daemon B is replaced by one whose uplink is a TAP (tap.c) bridged to the
#    veth with a Linux bridge: the same exchanges and counter checks, and a
#    pingpong through it.
# 5. Both daemons stop cleanly on SIGTERM (exit 0, so no sanitizer report in
#    the ASan build; final --stats dump printed; sockets removed).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns_lib.bash"

NC="$VRDMA_BUILD/bin/vrdma-netcat"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIBVRDMA="$VRDMA_BUILD/lib/libvrdma.so"
PY=/usr/bin/python3

NS_A="vrdma-$$-a"
NS_B="vrdma-$$-b"
NS_C="vrdma-$$-c"      # where the verbs programs' TCP side channel lives
IF_A=eth-a
IF_B=eth-b
TAP_B=tap-b
BR_B=br-b
MAC_A=02:00:00:00:1a:01
MAC_A9=02:00:00:00:1a:09
MAC_B=02:00:00:00:1b:01
MAC_B9=02:00:00:00:1b:09
BCAST=ff:ff:ff:ff:ff:ff
IP_A=10.77.0.1
IP_A9=10.77.0.9
IP_B=10.77.0.2
IP_B9=10.77.0.10

SA="$T_TMP/a.sock"
SA9="$T_TMP/a9.sock"
SB="$T_TMP/b.sock"
SB9="$T_TMP/b9.sock"

ns_require
for b in "$NS_DAEMON" "$NC"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done

# Sanitizer builds of libvrdma / libibverbs need their runtime loaded first
# in programs that are not (python, the verbs programs).
asan_preload "$LIBVRDMA"

# ---- the broadcast receiver: a libvrdma client (python ctypes) that speaks
# vrdma-netcat's protocol but expects frames addressed to ff:ff:ff:ff:ff:ff.
cat >"$T_TMP/bcast_recv.py" <<'EOF'
import ctypes, errno, os, struct, sys, time

lib_path, sock, count, seed, fmin, fmax, window, ready, tmo = sys.argv[1:10]
count, seed, fmin, fmax, window, tmo = (int(v) for v in
                                        (count, seed, fmin, fmax, window, tmo))
window = max(2, min(window, 128))
M = (1 << 64) - 1
lib = ctypes.CDLL(lib_path, use_errno=True)
vp, sz = ctypes.c_void_p, ctypes.c_size_t
lib.vrdma_dev_open.restype = vp
lib.vrdma_dev_open.argtypes = [ctypes.c_char_p, vp]
lib.vrdma_dev_close.argtypes = [vp]
lib.vrdma_dev_mac.argtypes = [vp, ctypes.c_char_p]
lib.vrdma_net_recv.restype = ctypes.c_ssize_t
lib.vrdma_net_recv.argtypes = [vp, ctypes.c_char_p, sz]
lib.vrdma_net_send.argtypes = [vp, ctypes.c_char_p, sz]
lib.vrdma_net_wait.argtypes = [vp, ctypes.c_uint, ctypes.c_int]
lib.vrdma_net_flush.argtypes = [vp, ctypes.c_int]

def frame(dst, src, seq):
    """vrdma-netcat's frame seq (tools/vrdma-netcat/main.c, frame_build)."""
    span = fmax - fmin + 1
    n = fmin if seq == 0 else fmax if seq == 1 else \
        fmin + ((seq * 2654435761) & M) % span
    x = ((((seed << 32) | seq) * 0x9e3779b97f4a7c15) + 1) & M
    out = bytearray(dst + src + b'\x88\xb5VRNC' + struct.pack('<IIH', seed, seq, n))
    while len(out) < n:
        x ^= (x << 13) & M
        x ^= x >> 7
        x ^= (x << 17) & M
        out += struct.pack('<Q', x)[:n - len(out)]
    return bytes(out)

def fail(msg):
    print('bcast_recv: ' + msg, file=sys.stderr)
    sys.exit(1)

dev = lib.vrdma_dev_open(sock.encode(), None)
if not dev:
    fail('%s: cannot open: %s' % (sock, os.strerror(ctypes.get_errno() or errno.EIO)))
mac = ctypes.create_string_buffer(6)
lib.vrdma_dev_mac(dev, mac)
mac = mac.raw
open(ready, 'w').close()
buf = ctypes.create_string_buffer(65600)

def recv():
    deadline = time.monotonic() + tmo / 1000
    while True:
        n = lib.vrdma_net_recv(dev, buf, len(buf))
        if n != -errno.EAGAIN:
            if n < 0:
                fail('receive: ' + os.strerror(-n))
            return buf.raw[:n]
        left = int((deadline - time.monotonic()) * 1000)
        if left <= 0:
            return None
        rc = lib.vrdma_net_wait(dev, 1, left)
        if rc < 0:
            fail('wait: ' + os.strerror(-rc))

def send(f):
    while True:
        rc = lib.vrdma_net_send(dev, f, len(f))
        if rc != -errno.EAGAIN:
            if rc < 0:
                fail('send: ' + os.strerror(-rc))
            return
        if lib.vrdma_net_wait(dev, 2, tmo) <= 0:
            fail('transmit ring stuck')

seq = since_ack = total = 0
bcast = b'\xff' * 6
while seq < count:
    f = recv()
    if f is None:
        fail('no frame %u within %u ms' % (seq, tmo))
    if len(f) < 14 or f[12:14] != b'\x88\xb5':
        continue
    if len(f) < 28:
        fail('frame %u: runt (%u bytes)' % (seq, len(f)))
    got = struct.unpack('<I', f[22:26])[0]
    if got != seq:
        fail('expected frame %u, got %u' % (seq, got))
    want = frame(bcast, f[6:12], seq)
    if f != want:
        i = next((i for i in range(min(len(f), len(want))) if f[i] != want[i]),
                 min(len(f), len(want)))
        fail('frame %u (%u bytes, got %u) differs at byte %u' % (seq, len(want), len(f), i))
    total += len(f)
    seq += 1
    since_ack += 1
    if since_ack >= window // 2 or seq == count:
        ack = f[6:12] + mac + b'\x88\xb6VRNA' + struct.pack('<I', seq)
        send(ack + bytes(60 - len(ack)))
        since_ack = 0
lib.vrdma_net_flush(dev, tmo)
lib.vrdma_dev_close(dev)
print('received %u broadcast frames (%u bytes), all verified' % (count, total))
EOF

bcast_recv() {
	env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		"$PY" "$T_TMP/bcast_recv.py" "$LIBVRDMA" "$@"
}

# ---- counters -----------------------------------------------------------------
# Per daemon: its uplink name, the kernel interface carrying it, and whether
# the kernel counts in the same direction as the uplink (af_packet: the
# daemon's tx is the interface's tx) or the opposite one (tap: what the daemon
# writes, the kernel receives).
declare -A UPLINK=() KIF=() KNS=() KREV=()
declare -A SNAP_OLD=() SNAP_NEW=() KOLD=()

# snap_all WHEN DAEMON...: counter snapshots (WHEN = old|new) of the daemons
# and of their kernel interfaces.
snap_all() {
	local when=$1 d s; shift
	for d in "$@"; do
		nsd_stats "$d" 1 || { echo "# no stats dump from $d"; nsd_tail "$d"; return 1; }
		s=$NSD_SNAP
		if [ "$when" = old ]; then
			SNAP_OLD[$d]=$s
			KOLD[$d]="$(ns_ifstat "${KNS[$d]}" "${KIF[$d]}" tx_packets) $(ns_ifstat "${KNS[$d]}" "${KIF[$d]}" rx_packets)"
		else
			SNAP_NEW[$d]=$s
		fi
	done
}

# counters_match NAME D_TX SOCK_TX D_RX SOCK_RX DATA ACKS: after an exchange
# of DATA frames from device SOCK_TX of daemon D_TX to SOCK_RX of D_RX,
# answered by ACKS acknowledgements, every counter moved by exactly that.
counters_match() {
	local name=$1 dt=$2 st=$3 dr=$4 sr=$5 data=$6 acks=$7 errs=() d k v
	local ktx krx otx orx
	local -A exp=()
	exp[$dt.tx]=$data; exp[$dt.rx]=$acks; exp[$dr.rx]=$data; exp[$dr.tx]=$acks
	for d in "$dt" "$dr"; do
		v=$(delta "${SNAP_OLD[$d]}" "${SNAP_NEW[$d]}" stat_uplink "${UPLINK[$d]}" tx)
		[ "$v" = "${exp[$d.tx]}" ] || errs+=("$d uplink tx +$v, want +${exp[$d.tx]}")
		v=$(delta "${SNAP_OLD[$d]}" "${SNAP_NEW[$d]}" stat_uplink "${UPLINK[$d]}" rx)
		[ "$v" = "${exp[$d.rx]}" ] || errs+=("$d uplink rx +$v, want +${exp[$d.rx]}")
		for k in tx_dropped rx_errors; do
			v=$(delta "${SNAP_OLD[$d]}" "${SNAP_NEW[$d]}" stat_uplink "${UPLINK[$d]}" $k)
			[ "$v" = 0 ] || errs+=("$d uplink $k +$v")
		done
		# The kernel carried exactly what the daemon says it sent and got.
		ktx=$(ns_ifstat "${KNS[$d]}" "${KIF[$d]}" tx_packets)
		krx=$(ns_ifstat "${KNS[$d]}" "${KIF[$d]}" rx_packets)
		read -r otx orx <<<"${KOLD[$d]}"
		if [ -n "${KREV[$d]}" ]; then
			[ $((krx - orx)) = "${exp[$d.tx]}" ] ||
				errs+=("$d kernel ${KIF[$d]} rx_packets +$((krx - orx)), want +${exp[$d.tx]}")
			[ $((ktx - otx)) = "${exp[$d.rx]}" ] ||
				errs+=("$d kernel ${KIF[$d]} tx_packets +$((ktx - otx)), want +${exp[$d.rx]}")
		else
			[ $((ktx - otx)) = "${exp[$d.tx]}" ] ||
				errs+=("$d kernel ${KIF[$d]} tx_packets +$((ktx - otx)), want +${exp[$d.tx]}")
			[ $((krx - orx)) = "${exp[$d.rx]}" ] ||
				errs+=("$d kernel ${KIF[$d]} rx_packets +$((krx - orx)), want +${exp[$d.rx]}")
		fi
	done
	# The devices: the sender's driver sent DATA and got ACKS, the
	# receiver's the reverse.
	v=$(delta "${SNAP_OLD[$dt]}" "${SNAP_NEW[$dt]}" stat_dev "$st" tx_frames)
	[ "$v" = "$data" ] || errs+=("$dt device $(basename "$st") tx_frames +$v, want +$data")
	v=$(delta "${SNAP_OLD[$dt]}" "${SNAP_NEW[$dt]}" stat_dev "$st" rx_frames)
	[ "$v" = "$acks" ] || errs+=("$dt device $(basename "$st") rx_frames +$v, want +$acks")
	v=$(delta "${SNAP_OLD[$dr]}" "${SNAP_NEW[$dr]}" stat_dev "$sr" rx_frames)
	[ "$v" = "$data" ] || errs+=("$dr device $(basename "$sr") rx_frames +$v, want +$data")
	v=$(delta "${SNAP_OLD[$dr]}" "${SNAP_NEW[$dr]}" stat_dev "$sr" tx_frames)
	[ "$v" = "$acks" ] || errs+=("$dr device $(basename "$sr") tx_frames +$v, want +$acks")
	v=$(delta "${SNAP_OLD[$dr]}" "${SNAP_NEW[$dr]}" stat_dev "$sr" rx_dropped_no_buffer)
	[ "$v" = 0 ] || errs+=("$dr device $(basename "$sr") rx_dropped_no_buffer +$v")
	if [ ${#errs[@]} -eq 0 ]; then
		ok "${name}_counters"
	else
		not_ok "${name}_counters" "$(IFS=';'; echo "${errs[*]}")"
	fi
}

# acks_for COUNT WINDOW: acknowledgements a receiver sends for COUNT frames
# (one every WINDOW/2 frames and one for the last).
acks_for() {
	local w=$2
	[ "$w" -gt 128 ] && w=128
	[ "$w" -lt 2 ] && w=2
	echo $(( ($1 + w / 2 - 1) / (w / 2) ))
}

# mtu_of SOCK: the MTU the device was given.
mtu_of() { case $1 in "$SA9" | "$SB9") echo 9000 ;; *) echo 1500 ;; esac; }

# dumps_of NAME: how many counter dumps the daemon printed (SIGUSR1 + exit).
dumps_of() { grep -c '^faults ' "$T_TMP/$1.log"; }

# xchg NAME D_TX SOCK_TX D_RX SOCK_RX DST COUNT SEED WINDOW [netcat args]:
# receiver on SOCK_RX (vrdma-netcat recv, or the broadcast receiver when
# DST is ff:ff:ff:ff:ff:ff), sender on SOCK_TX; both must verify everything,
# then the counters must match.
xchg() {
	local name=$1 dt=$2 st=$3 dr=$4 sr=$5 dst=$6 count=$7 seed=$8 win=$9
	shift 9
	local ready="$T_TMP/$name.ready" rpid rc_r rc_s min=60 max
	# Both ends must agree on the sizes: the smaller MTU bounds them.
	max=$(( $(mtu_of "$st") < $(mtu_of "$sr") ? $(mtu_of "$st") : $(mtu_of "$sr") ))
	max=$((max + 14))
	snap_all old "$dt" "$dr" || { not_ok "$name" "no counters"; return; }
	rm -f "$ready"
	if [ "$dst" = "$BCAST" ]; then
		bcast_recv "$sr" "$count" "$seed" "$min" "$max" "$win" "$ready" 10000 \
			>"$T_TMP/$name.recv" 2>&1 &
	else
		"$NC" --socket "$sr" --count "$count" --seed "$seed" --window "$win" \
			--min "$min" --max "$max" --ready "$ready" "$@" recv >"$T_TMP/$name.recv" 2>&1 &
	fi
	rpid=$!
	if ! wait_cmd 20 test -e "$ready"; then
		kill "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		not_ok "$name" "receiver did not come up: $(tr '\n' ' ' <"$T_TMP/$name.recv")"
		return
	fi
	"$NC" --socket "$st" --count "$count" --seed "$seed" --window "$win" --dst "$dst" \
		--min "$min" --max "$max" "$@" send >"$T_TMP/$name.send" 2>&1
	rc_s=$?
	wait "$rpid"
	rc_r=$?
	if [ $rc_s -eq 0 ] && [ $rc_r -eq 0 ] && grep -q "received $count " "$T_TMP/$name.recv"; then
		ok "$name"
	else
		not_ok "$name" "send rc=$rc_s recv rc=$rc_r:" \
			"$(cat "$T_TMP/$name.send" "$T_TMP/$name.recv" | tr '\n' ' ')"
		return
	fi
	snap_all new "$dt" "$dr" || { not_ok "${name}_counters" "no counters"; return; }
	counters_match "$name" "$dt" "$st" "$dr" "$sr" "$count" "$(acks_for "$count" "$win")"
}

# ---- 1. topology, af_packet on both sides ------------------------------------
if ns_add "$NS_A" && ns_add "$NS_B" && ns_add "$NS_C" &&
   ns_veth "$NS_A" "$IF_A" "$NS_B" "$IF_B" 9000; then
	ok topology
else
	not_ok topology "cannot create the namespaces and the veth pair"
	t_done
fi

# start_a / start_b NAME UPLINK: the two daemons, two devices each.
start_a() {
	nsd_start da "$NS_A" \
		--device "socket=$SA,mac=$MAC_A,ip=$IP_A/24" \
		--device "socket=$SA9,mac=$MAC_A9,ip=$IP_A9/24,mtu=9000" \
		--uplink "af_packet:$IF_A"
}
start_b() {
	nsd_start "$1" "$NS_B" \
		--device "socket=$SB,mac=$MAC_B,ip=$IP_B/24" \
		--device "socket=$SB9,mac=$MAC_B9,ip=$IP_B9/24,mtu=9000" \
		--uplink "$2"
}
if start_a && start_b db "af_packet:$IF_B"; then
	ok daemons_started
else
	not_ok daemons_started "$(nsd_tail da; nsd_tail db)"
	t_done
fi
UPLINK[da]=$IF_A; KIF[da]=$IF_A; KNS[da]=$NS_A; KREV[da]=""
UPLINK[db]=$IF_B; KIF[db]=$IF_B; KNS[db]=$NS_B; KREV[db]=""

# The devices are what we asked for (each daemon lives in its namespace; its
# sockets are plain files, reachable from here).
info_ok() { "$NC" --socket "$1" info 2>&1 | grep -qx "$2"; }
if info_ok "$SA" "mac $MAC_A" && info_ok "$SB" "mac $MAC_B" &&
   info_ok "$SA9" "mtu 9000" && info_ok "$SB9" "mtu 9000" && info_ok "$SB" "link up"; then
	ok devices_info
else
	not_ok devices_info "$("$NC" --socket "$SB" info 2>&1 | tr '\n' ' ')"
fi

# Every size 60..1514 once, each way.
xchg a_to_b da "$SA" db "$SB" "$MAC_B" 1455 101 64 --sweep
xchg b_to_a db "$SB" da "$SA" "$MAC_A" 1455 102 64 --sweep
# Spread sizes, small windows (an ack every frame) and large ones.
xchg b_to_a_window2 db "$SB" da "$SA" "$MAC_A" 300 103 2
xchg a_to_b_window128 da "$SA" db "$SB" "$MAC_B" 2000 104 128
# Jumbo: 60..9014 over the 9000-byte veth.
xchg jumbo_a_to_b da "$SA9" db "$SB9" "$MAC_B9" 800 105 64
xchg jumbo_b_to_a db "$SB9" da "$SA9" "$MAC_A9" 800 106 64
# A standard device to a jumbo one (sizes bounded by the sender).
xchg a_to_jumbo_b da "$SA" db "$SB9" "$MAC_B9" 300 107 64
# Broadcast from A, verified byte for byte by a driver on B.
xchg broadcast_a_to_b da "$SA" db "$SB" "$BCAST" 500 108 64
xchg broadcast_b_to_a db "$SB9" da "$SA9" "$BCAST" 200 109 32

# ---- 2. oversize frames on a 1500-byte link ------------------------------------
if ip -n "$NS_A" link set "$IF_A" mtu 1500 && ip -n "$NS_B" link set "$IF_B" mtu 1500; then
	snap_all old da db
	"$NC" --socket "$SA9" --count 8 --window 16 --min 1600 --max 9014 --seed 110 \
		--timeout-ms 1000 --dst "$MAC_B9" send >"$T_TMP/oversize.send" 2>&1
	rc=$?
	snap_all new da db
	tx=$(delta "${SNAP_OLD[da]}" "${SNAP_NEW[da]}" stat_uplink "$IF_A" tx)
	drop=$(delta "${SNAP_OLD[da]}" "${SNAP_NEW[da]}" stat_uplink "$IF_A" tx_dropped)
	brx=$(delta "${SNAP_OLD[db]}" "${SNAP_NEW[db]}" stat_uplink "$IF_B" rx)
	# The sender gets no ack (nothing arrived): it must say so and fail.
	if [ $rc -eq 1 ] && grep -q "no ack" "$T_TMP/oversize.send" &&
	   [ "$tx" = 8 ] && [ "$drop" = 8 ] && [ "$brx" = 0 ] && nsd_alive da; then
		ok oversize_dropped_and_counted
	else
		not_ok oversize_dropped_and_counted "send rc=$rc, uplink tx +$tx tx_dropped +$drop," \
			"B rx +$brx: $(tr '\n' ' ' <"$T_TMP/oversize.send")"
	fi
	xchg after_oversize_a_to_b da "$SA" db "$SB" "$MAC_B" 1455 111 64 --sweep
	ip -n "$NS_A" link set "$IF_A" mtu 9000 && ip -n "$NS_B" link set "$IF_B" mtu 9000
else
	not_ok oversize_dropped_and_counted "cannot change the veth MTU"
fi

# ---- 3. RDMA between the two back-ends ---------------------------------------------
# vrdma-run clients talk to the daemons through their sockets, so they can run
# anywhere; they run in namespace C, whose loopback carries their TCP side
# channel (no port clash with anything else on the host).
# ip_of SOCK: the IPv4 address the device was given.
ip_of() {
	case $1 in
	"$SA") echo "$IP_A" ;; "$SA9") echo "$IP_A9" ;;
	"$SB") echo "$IP_B" ;; "$SB9") echo "$IP_B9" ;;
	esac
}

# vrun NAME SOCK CMD...: a verbs program on one device, in namespace C, at
# most 20 s, its output line-buffered (what it printed before a hang stays in
# $T_TMP/NAME.log). A driver cannot read the device's IPv4 address (GID 1):
# VRDMA_IPV4 tells vrdma's libibverbs (src/verbs/provider_vrdma.c).
vrun() {
	local name=$1 sock=$2; shift 2
	ip netns exec "$NS_C" env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		VRDMA_IPV4="$(ip_of "$sock")" \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout 20 stdbuf -oL "$RUN" --socket "$sock" -- "$@" >"$T_TMP/$name.log" 2>&1 </dev/null
}

# gid_index SOCK IP: the index of the IPv4-mapped GID of IP in ibv_devinfo.
gid_index() {
	vrun devinfo "$1" ibv_devinfo -v || return 1
	awk -v g="::ffff:$2" '$1 ~ /^GID\[/ && $0 ~ g {
		gsub(/[^0-9]/, "", $2); print $2; exit }' "$T_TMP/devinfo.log" |
		grep .
}

# pingpong NAME SRV_SOCK CLI_SOCK GID_INDEX PORT [args]: ibv_rc_pingpong
# server and client; both must print their bandwidth line and exit 0. Why
# not goes to $T_TMP/NAME.diag.
pingpong() {
	local name=$1 ss=$2 cs=$3 gi=$4 port=$5 spid rc_s rc_c; shift 5
	vrun "$name.srv" "$ss" ibv_rc_pingpong -d vrdma0 -g "$gi" -p "$port" "$@" &
	spid=$!
	if ! wait_cmd 20 ns_tcp_listening "$NS_C" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "server not listening: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")" >"$T_TMP/$name.diag"
		return 1
	fi
	vrun "$name.cli" "$cs" ibv_rc_pingpong -d vrdma0 -g "$gi" -p "$port" "$@" localhost
	rc_c=$?
	wait "$spid"
	rc_s=$?
	[ "$rc_s" -eq 0 ] && [ "$rc_c" -eq 0 ] &&
	grep -q "bytes in .* seconds = .*Mbit/sec" "$T_TMP/$name.srv.log" &&
	grep -q "bytes in .* seconds = .*Mbit/sec" "$T_TMP/$name.cli.log" && return 0
	rdma_diag "$name" "$rc_s" "$rc_c" 5
	return 1
}

# rdma_diag NAME RC_SRV RC_CLI LINES: what a failed verbs test left, into
# $T_TMP/NAME.diag: exit statuses (124: killed after 20 s), the end of both
# outputs, the RoCE counters of every running daemon.
rdma_diag() {
	local name=$1 d
	{
		echo "server rc=$2 client rc=$3 (124 = hung)"
		tail -n "$4" "$T_TMP/$name.srv.log" | sed 's/^/srv: /'
		tail -n "$4" "$T_TMP/$name.cli.log" | sed 's/^/cli: /'
		for d in "${!D_PID[@]}"; do
			nsd_stats "$d" 1 && grep -E '^device|^  roce (rx|tx|wr)|^uplink' "$NSD_SNAP" |
				sed "s/^/$d: /"
		done
	} >"$T_TMP/$name.diag"
}

# rcheck TEST NAME FN ARGS...: ok TEST if FN NAME ARGS succeeds, else not ok
# with $T_TMP/NAME.diag.
rcheck() {
	local t=$1 name=$2 fn=$3; shift 3
	if "$fn" "$name" "$@"; then
		ok "$t"
	else
		not_ok "$t"
		sed 's/^/#   /' "$T_TMP/$name.diag" 2>/dev/null
	fi
}

# perf_result LOG: perftest printed a result row (#bytes #iterations ...).
perf_result() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { found = 1 } END { exit !found }' "$1"; }

# perf NAME SRV_SOCK CLI_SOCK GID_INDEX PORT TOOL [args]: a perftest
# bandwidth test; both ends exit 0 and print their result row. Why not goes
# to $T_TMP/NAME.diag.
perf() {
	local name=$1 ss=$2 cs=$3 gi=$4 port=$5 tool=$6 spid rc_s rc_c; shift 6
	vrun "$name.srv" "$ss" "$tool" -d vrdma0 -x "$gi" -p "$port" "$@" &
	spid=$!
	if ! wait_cmd 20 ns_tcp_listening "$NS_C" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "server not listening: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")" >"$T_TMP/$name.diag"
		return 1
	fi
	vrun "$name.cli" "$cs" "$tool" -d vrdma0 -x "$gi" -p "$port" "$@" localhost
	rc_c=$?
	wait "$spid"
	rc_s=$?
	[ "$rc_s" -eq 0 ] && [ "$rc_c" -eq 0 ] &&
	perf_result "$T_TMP/$name.cli.log" && perf_result "$T_TMP/$name.srv.log" && return 0
	rdma_diag "$name" "$rc_s" "$rc_c" 8
	return 1
}

# wire_symmetric NAME D1 D2: since the old snapshots, every frame either
# daemon's uplink sent arrived at the other one's (the veth loses nothing),
# some did, none was refused, and the kernel counted the same on both veth
# ends.
wire_symmetric() {
	local name=$1 d1=$2 d2=$3 errs=() t1 r1 t2 r2 k d v
	snap_all new "$d1" "$d2" || { not_ok "$name" "no counters"; return; }
	t1=$(delta "${SNAP_OLD[$d1]}" "${SNAP_NEW[$d1]}" stat_uplink "${UPLINK[$d1]}" tx)
	r1=$(delta "${SNAP_OLD[$d1]}" "${SNAP_NEW[$d1]}" stat_uplink "${UPLINK[$d1]}" rx)
	t2=$(delta "${SNAP_OLD[$d2]}" "${SNAP_NEW[$d2]}" stat_uplink "${UPLINK[$d2]}" tx)
	r2=$(delta "${SNAP_OLD[$d2]}" "${SNAP_NEW[$d2]}" stat_uplink "${UPLINK[$d2]}" rx)
	[ "$t1" = "$r2" ] && [ "$t2" = "$r1" ] || errs+=("$d1 tx +$t1 rx +$r1, $d2 tx +$t2 rx +$r2")
	[[ $t1 =~ ^[0-9]+$ && $t2 =~ ^[0-9]+$ ]] && [ "$t1" -gt 0 ] && [ "$t2" -gt 0 ] ||
		errs+=("no frames crossed")
	for d in "$d1" "$d2"; do
		for k in tx_dropped rx_errors; do
			v=$(delta "${SNAP_OLD[$d]}" "${SNAP_NEW[$d]}" stat_uplink "${UPLINK[$d]}" $k)
			[ "$v" = 0 ] || errs+=("$d uplink $k +$v")
		done
	done
	if [ ${#errs[@]} -eq 0 ]; then
		ok "$name"
		echo "# $name: $t1 frames A -> B, $t2 frames B -> A"
	else
		not_ok "$name" "$(IFS=';'; echo "${errs[*]}")"
	fi
}

# Capabilities the RDMA checks need from the environment (not from the code
# under test): the verbs library and launcher built, the verbs programs
# installed, RoCE offered by the devices.
rdma_reason=""
if [ ! -x "$RUN" ] || [ ! -e "$VRDMA_BUILD/lib/libibverbs.so.1" ]; then
	rdma_reason="vrdma-run or libibverbs.so.1 not built (run make)"
elif ! command -v ibv_rc_pingpong >/dev/null || ! command -v ib_write_bw >/dev/null; then
	rdma_reason="ibverbs-utils / perftest not installed (scripts/deps.sh test)"
elif [ "$("$NC" --socket "$SA" info 2>/dev/null | awk '$1 == "max_rdma_qps" { print $2 }')" = 0 ]; then
	rdma_reason="the devices offer no RoCE (max_rdma_qps 0)"
fi
RDMA_TESTS="ipv4_gid rc_pingpong_same_backend rc_pingpong_b_to_a rc_pingpong_a_to_b
	rc_pingpong_jumbo ib_write_bw rdma_wire_counters"
if [ -n "$rdma_reason" ]; then
	for t in $RDMA_TESTS rc_pingpong_over_tap; do not_ok "$t" "$rdma_reason"; done
elif ! GI=$(gid_index "$SA" "$IP_A") || ! GI_B=$(gid_index "$SB" "$IP_B") ||
     [ "$GI_B" != "$GI" ]; then
	for t in $RDMA_TESTS; do
		not_ok "$t" "no common IPv4-mapped GID index for $IP_A / $IP_B in ibv_devinfo -v:" \
			"$(grep 'GID\[' "$T_TMP/devinfo.log" | tr '\n\t' '  ')"
	done
	GI=""
else
	ok ipv4_gid
	echo "# IPv4-mapped GID index: $GI"
	# Inside one daemon first (tells a transport failure from a
	# cross-back-end one), then across the veth, both ways.
	rcheck rc_pingpong_same_backend pp0 pingpong "$SA9" "$SA" "$GI" 18514 -n 20
	snap_all old da db
	rcheck rc_pingpong_b_to_a pp1 pingpong "$SB" "$SA" "$GI" 18515 -n 200
	rcheck rc_pingpong_a_to_b pp2 pingpong "$SA" "$SB" "$GI" 18516 -n 200 -s 8192
	rcheck rc_pingpong_jumbo pp3 pingpong "$SB9" "$SA9" "$GI" 18517 -n 100 -s 65536 -m 4096
	rcheck ib_write_bw wbw perf "$SB" "$SA" "$GI" 18518 ib_write_bw -n 200 -s 65536
	wire_symmetric rdma_wire_counters da db
fi

# ---- 4. B's uplink is a TAP bridged to the veth ------------------------------------
nsd_stop db TERM
# It exits 0 and prints its counters one last time (--stats).
if [ "$D_LAST_RC" = 0 ] && [ "$(dumps_of db)" = $((D_SNAP[db] + 1)) ]; then
	ok daemon_b_stopped
else
	not_ok daemon_b_stopped "exit status $D_LAST_RC" "$(nsd_tail db)"
fi
if ip -n "$NS_B" link add "$BR_B" type bridge mcast_snooping 0 &&
   ip -n "$NS_B" tuntap add dev "$TAP_B" mode tap &&
   ns_quiet "$NS_B" "$BR_B" && ns_quiet "$NS_B" "$TAP_B" &&
   ip -n "$NS_B" link set "$TAP_B" mtu 9000 master "$BR_B" &&
   ip -n "$NS_B" link set "$IF_B" master "$BR_B" &&
   ip -n "$NS_B" link set "$BR_B" mtu 9000 up && ip -n "$NS_B" link set "$TAP_B" up; then
	ok tap_bridge_created
else
	not_ok tap_bridge_created "cannot build $BR_B / $TAP_B in $NS_B"
	t_done
fi
if start_b dbt "tap:$TAP_B" &&
   wait_cmd 20 ns_bridge_port_forwarding "$NS_B" "$TAP_B" &&
   wait_cmd 20 ns_bridge_port_forwarding "$NS_B" "$IF_B"; then
	ok daemon_b_tap_started
else
	not_ok daemon_b_tap_started "$(nsd_tail dbt)"
	t_done
fi
UPLINK[dbt]=$TAP_B; KIF[dbt]=$TAP_B; KNS[dbt]=$NS_B; KREV[dbt]=1

xchg tap_a_to_b da "$SA" dbt "$SB" "$MAC_B" 1455 201 64 --sweep
xchg tap_b_to_a dbt "$SB" da "$SA" "$MAC_A" 1455 202 64 --sweep
xchg tap_jumbo_a_to_b da "$SA9" dbt "$SB9" "$MAC_B9" 500 203 64
xchg tap_jumbo_b_to_a dbt "$SB9" da "$SA9" "$MAC_A9" 500 204 64
xchg tap_broadcast_b_to_a dbt "$SB" da "$SA" "$BCAST" 300 205 64
# RDMA through the tap uplink too.
if [ -n "${GI:-}" ]; then
	rcheck rc_pingpong_over_tap pp4 pingpong "$SA" "$SB" "$GI" 18519 -n 200 -s 4096
elif [ -z "$rdma_reason" ]; then
	not_ok rc_pingpong_over_tap "no IPv4-mapped GID (see ipv4_gid)"
fi

# ---- 5. clean shutdown -----------------------------------------------------------------
for d in da dbt; do
	snaps=${D_SNAP[$d]}
	nsd_stop "$d" TERM
	if [ "$D_LAST_RC" = 0 ] && [ "$(dumps_of "$d")" = $((snaps + 1)) ]; then
		ok "${d}_clean_exit"
	else
		not_ok "${d}_clean_exit" "exit status $D_LAST_RC" "$(nsd_tail "$d" 30)"
	fi
done
if [ ! -e "$SA" ] && [ ! -e "$SB" ] && [ ! -e "$SA9" ] && [ ! -e "$SB9" ]; then
	ok sockets_removed
else
	not_ok sockets_removed "$(ls "$T_TMP"/*.sock 2>/dev/null | tr '\n' ' ')"
fi
t_done
