#!/usr/bin/env bash
# Interoperability with Linux rxe: Debian's kernel in QEMU (tests/integration/
# rxe_lib.bash), its virtio-net NIC a vhost-user port (roce=off) of a daemon
# that also serves a vrdma device; rxe0 on the guest's eth0. The verbs
# programs run in both directions: the guest as server and the vrdma device
# (vrdma-run) as client, then the other way round:
#   ibv_rc_pingpong, ibv_uc_pingpong (8 KiB messages over a 1024-byte MTU),
#   ibv_ud_pingpong, ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw;
#   and ib_read_bw -s 2097152 with vrdma reading from rxe;
# and the rdma_cm programs between the guest's kernel rdma_cm and vrdma's
# librdmacm.so.1: rping -C 100 -V (data verified), ucmatose -c 4, udaddy
# (SIDR, UD), ib_send_bw -R, and rstream -T v (rsockets: Debian's
# librdmacm in the guest against ours; data verified by rstream).
# Their TCP side channel goes through a TAP uplink of the daemon, inside a
# namespace made here (the guest's eth0 reaches the TAP's address).
#
#   ns: [vrdma-run progs]  tap rx-tap (10.80.0.100) --tap-- daemon switch
#                            devices: h (vrdma, 10.80.0.1)   g (roce=off) -- QEMU guest eth0
#                                                                          (10.80.0.2, rxe0)
# Then: every RoCE frame of the switch capture has a valid ICRC (scapy and
# the IBTA recipe) and TTL 64 (the programs ask for hop limit 1 or 255; rxe
# uses the route's 64, vrdma its ttl= default 64); vrdma's frames are
# ECT(0); the vrdma device dropped no frame for lack of a neighbour and
# resolved the guest's MAC.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns_lib.bash"
. "$(dirname "$0")/rxe_lib.bash"

RUN="$VRDMA_BUILD/bin/vrdma-run"
PY=/usr/bin/python3
NS="vrdma-$$-rxe"
TAP=rx-tap
SH="$T_TMP/h.sock"
SG="$T_TMP/g.sock"
MAC_H=02:00:00:00:80:01
MAC_G=02:00:00:00:80:02
IP_H=10.80.0.1
IP_G=10.80.0.2
IP_TAP=10.80.0.100
CAP="$T_TMP/rxe.pcap"

ns_require
for t in "$NS_DAEMON" "$RUN"; do
	[ -x "$t" ] || { not_ok setup "$t not built"; t_done; }
done
for t in "$RXE_QEMU" ibv_rc_pingpong ib_write_bw rdma busybox apt-get dpkg-deb; do
	command -v "$t" >/dev/null || {
		not_ok setup "missing $t (scripts/deps.sh test installs it)"
		t_done
	}
done
"$PY" -c 'from scapy.contrib.roce import BTH' 2>/dev/null ||
	{ not_ok setup "$PY cannot import scapy.contrib.roce (python3-scapy)"; t_done; }
asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"

if rxe_prepare; then
	ok guest_image
else
	not_ok guest_image "cannot build the rxe guest kernel / initramfs"
	t_done
fi

rxe_cleanup() { rxe_stop; ns_cleanup; }
trap rxe_cleanup EXIT

if ns_add "$NS" &&
   nsd_start da "$NS" --pcap "$CAP" \
	--device "socket=$SH,mac=$MAC_H,ip=$IP_H/24" \
	--device "socket=$SG,mac=$MAC_G,roce=off,allow-ip=$IP_G/32" \
	--uplink "tap:$TAP" &&
   ns_quiet "$NS" "$TAP" && ip -n "$NS" addr add "$IP_TAP/24" dev "$TAP" &&
   ip -n "$NS" link set "$TAP" up; then
	ok daemon_started
else
	not_ok daemon_started "$(nsd_tail da)"
	t_done
fi

# guest_drops SNAP: the guest device's rx_dropped_no_buffer in a stats dump
# (empty if the dump has none).
guest_drops() {
	awk -v s="($SG)" '$1 == "device" { on = ($3 == s); next } /^[^ ]/ { on = 0 }
		on { for (i = 1; i < NF; i++) if ($i == "rx_dropped_no_buffer") { n += $(i + 1); f = 1 } }
		END { if (f) print n + 0 }' "$1"
}

t0=$SECONDS
if rxe_boot "$SG" "$MAC_G" "$IP_G/24"; then
	ok guest_booted
	echo "# guest up in $((SECONDS - t0)) s"
	# what was dropped for the guest before its receive ring ran
	# (guest_rx_no_drops below counts only the traffic after)
	G_DROPS0=0
	if nsd_stats da 1; then
		G_DROPS0=$(guest_drops "$NSD_SNAP")
	fi
else
	not_ok guest_booted "see the console above"
	t_done
fi
GI=$(rxe_gid_index "$IP_G")
if [ -n "$GI" ]; then
	ok rxe0_gid
else
	not_ok rxe0_gid "no RoCE v2 GID for $IP_G: $(rxe_cmd 'rdma link; ls /sys/class/infiniband')"
	t_done
fi

# hrun NAME ARGS...: a verbs program on the vrdma device, in the namespace.
hrun() {
	local name=$1; shift
	ip netns exec "$NS" env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout 90 "$RUN" --socket "$SH" -- "$@" >"$T_TMP/$name.log" 2>&1 </dev/null
}

port=$((20000 + $$ % 20000))
# PASS: the line both sides print on success.
pass_re() {
	case "$1" in
	ibv_*) echo "bytes in .* seconds" ;;
	*) echo "^ *[0-9]+ +[0-9]+ " ;;
	esac
}

# pair_diag VRDMA_LOG RXE_TEXT: after a failed pair, what explains it, as
# TAP comments: both programs' last lines, the daemon's transport counters
# that move on trouble, the guest's rxe counters and kernel messages.
pair_diag() {
	echo "#   vrdma side:"
	tail -n 6 "$1" | sed 's/^/#     /'
	echo "#   rxe side:"
	echo "$2" | tail -n 6 | sed 's/^/#     /'
	if nsd_stats da 1; then
		echo "#   daemon:"
		awk '/^device / { d++ } d == 1 && /^  (roce|rx_frames)/ { for (i = 1; i < NF; i++)
			if ($i ~ /^(retransmits|timeouts|rewinds|qp_errors|rnr_naks_sent|rnr_naks_rcvd|rx_seq_err|rx_dup|rx_queue_full|rx_dropped_no_buffer|alive_expired|probes|hold_probes)$/)
				printf "%s %s ", $i, $(i + 1) }' "$NSD_SNAP" | fold -w 150 | sed 's/^/#     /'
		echo
	fi
	echo "#   guest:"
	rxe_cmd "rdma statistic show link rxe0/1 2>&1 | fold -w 150; dmesg | tail -n 5" | sed 's/^/#     /'
}

# guest_server NAME PROG HARGS GARGS: PROG on rxe0 as the server, on vrdma
# as the client.
guest_server() {
	local name=$1 prog=$2 hargs=$3 gargs=$4 rc_c rc_s out re
	port=$((port + 1))
	re=$(pass_re "$prog")
	rxe_cmd "rm -f /tmp/s.rc; ( $prog $gargs -p $port >/tmp/s.log 2>&1; echo \$? >/tmp/s.rc ) &" >/dev/null
	if ! rxe_cmd "for i in \$(seq 1 1200); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.05; done; exit 1" >/dev/null; then
		not_ok "$name" "guest server did not listen: $(rxe_cmd 'cat /tmp/s.log')"
		return
	fi
	# shellcheck disable=SC2086
	hrun "$name.cli" "$prog" $hargs -p "$port" "$IP_G"
	rc_c=$?
	out=$(rxe_cmd "for i in \$(seq 1 600); do [ -s /tmp/s.rc ] && break; sleep 0.1; done; cat /tmp/s.log; echo RC=\$(cat /tmp/s.rc)")
	rc_s=$(echo "$out" | sed -n 's/^RC=//p')
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && grep -Eq "$re" "$T_TMP/$name.cli.log" &&
	   echo "$out" | grep -Eq "$re"; then
		ok "$name"
	else
		not_ok "$name" "vrdma client rc=$rc_c rxe server rc=$rc_s:" \
			"$(tail -3 "$T_TMP/$name.cli.log" | tr '\n' ' ') / $(echo "$out" | tail -4 | tr '\n' ' ')"
		pair_diag "$T_TMP/$name.cli.log" "$out"
	fi
}

# host_server NAME PROG HARGS GARGS: PROG on vrdma as the server, on rxe0 as
# the client.
host_server() {
	local name=$1 prog=$2 hargs=$3 gargs=$4 spid rc_c rc_s out re
	port=$((port + 1))
	re=$(pass_re "$prog")
	# shellcheck disable=SC2086
	hrun "$name.srv" "$prog" $hargs -p "$port" &
	spid=$!
	if ! wait_cmd 20 ns_tcp_listening "$NS" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		not_ok "$name" "vrdma server did not listen: $(tail -3 "$T_TMP/$name.srv.log")"
		return
	fi
	out=$(rxe_cmd "$prog $gargs -p $port $IP_TAP")
	rc_c=$?
	wait "$spid"
	rc_s=$?
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && grep -Eq "$re" "$T_TMP/$name.srv.log" &&
	   echo "$out" | grep -Eq "$re"; then
		ok "$name"
	else
		not_ok "$name" "rxe client rc=$rc_c vrdma server rc=$rc_s:" \
			"$(echo "$out" | tail -4 | tr '\n' ' ') / $(tail -3 "$T_TMP/$name.srv.log" | tr '\n' ' ')"
		pair_diag "$T_TMP/$name.srv.log" "$out"
	fi
}

# both NAME PROG ARGS: the two directions, -g / -x GID index per side.
both() {
	local name=$1 prog=$2 args=$3 hflag gflag
	case "$prog" in
	ibv_*) hflag="-d vrdma0 -g 1"; gflag="-d rxe0 -g $GI" ;;
	*) hflag="-d vrdma0 -x 1 -F"; gflag="-d rxe0 -x $GI -F" ;;
	esac
	guest_server "rxe_srv.$name" "$prog" "$hflag $args" "$gflag $args"
	host_server "vrdma_srv.$name" "$prog" "$hflag $args" "$gflag $args"
}

t0=$SECONDS
both rc_pingpong ibv_rc_pingpong "-n 20 -s 8192 -m 1024"
both uc_pingpong ibv_uc_pingpong "-n 20 -s 8192 -m 1024"
both ud_pingpong ibv_ud_pingpong "-n 20 -s 512"
both write_bw ib_write_bw "-n 50 -s 16384 -m 1024"
both read_bw ib_read_bw "-n 50 -s 16384 -m 1024"
# 2 MiB READs from rxe: rxe queues a whole READ's responses at once, the
# guest's fq_codel drops some (its NIC drains slowly under TCG), and rxe
# answers a re-request only after the READ it is sending (docs/design.md
# "Loss recovery", queueing responders). -u 20 (4.3 s): a TCG guest on a
# busy host falls silent for hundreds of ms; the default 67 ms timeout
# would count those as lost responses (docs/performance.md "Against Linux rxe").
guest_server rxe_srv.read_bw_2m ib_read_bw "-d vrdma0 -x 1 -F -n 5 -u 20 -s 2097152 -m 1024" \
	"-d rxe0 -x $GI -F -n 5 -u 20 -s 2097152 -m 1024"
both send_bw ib_send_bw "-n 50 -s 16384 -m 1024"
both atomic_bw ib_atomic_bw "-n 50 -m 1024"
echo "# verbs programs: $((SECONDS - t0)) s"

# rdma_cm: the guest's kernel rdma_cm (rdma_ucm, ib_cm over rxe0) against
# vrdma's librdmacm.so.1 through vrdma-run, both directions. A guest server
# is ready once the kernel lists its cm_id as LISTEN on the port; a vrdma
# server once its process runs the CM thread "vrdma-cm".

# cm_thread PID: PID or one of its descendants has the vrdma-cm thread.
cm_thread() {
	local c
	grep -qx vrdma-cm /proc/"$1"/task/*/comm 2>/dev/null && return 0
	for c in $(pgrep -P "$1"); do cm_thread "$c" && return 0; done
	return 1
}

# cm_guest_server NAME PORT "GUEST SERVER" "HOST CLIENT" PATTERN [RETRY]:
# the server on rxe0, the client through vrdma-run; both exit 0 and print
# PATTERN (rping -V: exit 0 is the check, every ping's data verified).
# RETRY: as for cm_host_server.
# rc_seen NAME RC OUTPUT: RC, but 0 for rping's own teardown race: after a
# normal end (DISCONNECT EVENT) its CM thread reads the event channel the
# main thread has destroyed and exits with 255 (fixed upstream in rdma-core
# pull request 1622, 2025; Debian 12's rping in the guest has it).
rc_seen() {
	if [ "$2" = 255 ] && grep -q 'DISCONNECT EVENT' <<<"$3" &&
	   grep -q 'rdma_get_cm_event: Bad file descriptor' <<<"$3"; then
		echo "# $1: rping's teardown race (exit 255 after a normal end), counted as 0" >&2
		echo 0
	else
		echo "$2"
	fi
}

cm_guest_server() {
	local name=$1 p=$2 srv=$3 cli=$4 pat=$5 retry=${6:-} rc_c rc_s out n
	for n in 1 2 3; do
		rxe_cmd "rm -f /tmp/s.rc; ( $srv >/tmp/s.log 2>&1; echo \$? >/tmp/s.rc ) &" >/dev/null
		if ! rxe_cmd "for i in \$(seq 1 1000); do rdma res show cm_id | grep -q 'state LISTEN .*:$p ' && exit 0; sleep 0.05; done; exit 1" >/dev/null; then
			not_ok "$name" "guest server did not listen: $(rxe_cmd 'cat /tmp/s.log')"
			return
		fi
		# shellcheck disable=SC2086
		hrun "$name.cli" $cli
		rc_c=$?
		if [ "$rc_c" != 0 ] && [ -n "$retry" ] && grep -q -- "$retry" "$T_TMP/$name.cli.log"; then
			echo "# $name: attempt $n: client saw \"$retry\"; again"
			rxe_cmd "kill \$(pidof ${srv%% *}) 2>/dev/null; for i in \$(seq 1 600); do [ -s /tmp/s.rc ] && break; sleep 0.1; done" >/dev/null
			continue
		fi
		break
	done
	out=$(rxe_cmd "for i in \$(seq 1 600); do [ -s /tmp/s.rc ] && break; sleep 0.1; done; cat /tmp/s.log; echo RC=\$(cat /tmp/s.rc)")
	rc_s=$(echo "$out" | sed -n 's/^RC=//p')
	rc_s=$(rc_seen "$name" "$rc_s" "$out")
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && { [ -z "$pat" ] ||
	   { grep -Eq -- "$pat" "$T_TMP/$name.cli.log" && echo "$out" | grep -Eq -- "$pat"; }; }; then
		ok "$name"
	else
		not_ok "$name" "vrdma client rc=$rc_c rxe server rc=$rc_s:" \
			"$(tail -3 "$T_TMP/$name.cli.log" | tr '\n' ' ') / $(echo "$out" | tail -4 | tr '\n' ' ')"
		pair_diag "$T_TMP/$name.cli.log" "$out"
	fi
}

# stop_tree PID: SIGTERM to PID's descendants, deepest first, then to PID.
stop_tree() {
	local c
	for c in $(pgrep -P "$1"); do stop_tree "$c"; done
	kill "$1" 2>/dev/null
}

# cm_host_server NAME PORT "HOST SERVER" "GUEST CLIENT" PATTERN [RETRY]: the
# server through vrdma-run, the client on rxe0; @PORT@ in the commands is
# PORT. RETRY: run the pair again (at most 3 times, on PORT+1, PORT+2: the
# device's connection manager may still hold the stopped server's listen)
# when the client's output has it (perftest -R re-listens after its
# handshake: a REQ in between is rejected, reason 8, and perftest's client
# gives up or crashes in its own retry).
cm_host_server() {
	local name=$1 p0=$2 srv0=$3 cli0=$4 pat=$5 retry=${6:-} spid rc_c rc_s out n srv cli
	for n in 1 2 3; do
		srv=${srv0//@PORT@/$((p0 + n - 1))}
		cli=${cli0//@PORT@/$((p0 + n - 1))}
		# shellcheck disable=SC2086
		hrun "$name.srv" $srv &
		spid=$!
		if ! wait_cmd 90 cm_thread "$spid"; then
			kill "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			not_ok "$name" "vrdma server did not listen: $(tail -3 "$T_TMP/$name.srv.log")"
			return
		fi
		out=$(rxe_cmd "$cli 2>&1")
		rc_c=$?
		if [ "$rc_c" != 0 ] && [ -n "$retry" ] && echo "$out" | grep -q -- "$retry"; then
			echo "# $name: attempt $n: client saw \"$retry\"; again"
			stop_tree "$spid"
			wait "$spid" 2>/dev/null
			continue
		fi
		break
	done
	wait "$spid"
	rc_s=$?
	rc_c=$(rc_seen "$name" "$rc_c" "$out")
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && { [ -z "$pat" ] ||
	   { grep -Eq -- "$pat" "$T_TMP/$name.srv.log" && echo "$out" | grep -Eq -- "$pat"; }; }; then
		ok "$name"
	else
		not_ok "$name" "rxe client rc=$rc_c vrdma server rc=$rc_s:" \
			"$(echo "$out" | tail -4 | tr '\n' ' ') / $(tail -3 "$T_TMP/$name.srv.log" | tr '\n' ' ')"
		pair_diag "$T_TMP/$name.srv.log" "$out"
	fi
}

t0=$SECONDS
PERF_RACE="Failed to connect RDMA CM"
port=$((port + 1))
cm_guest_server rxe_srv.rping $port "rping -s -a $IP_G -p $port -C 100 -V" \
	"rping -c -a $IP_G -p $port -C 100 -V" ""
port=$((port + 1))
cm_host_server vrdma_srv.rping $port "rping -s -a $IP_H -p @PORT@ -C 100 -V" \
	"rping -c -a $IP_H -p @PORT@ -C 100 -V" ""
port=$((port + 2))
port=$((port + 1))
cm_guest_server rxe_srv.ucmatose $port "ucmatose -b $IP_G -p $port -c 4" \
	"ucmatose -s $IP_G -p $port -c 4" "data transfers complete"
port=$((port + 1))
cm_host_server vrdma_srv.ucmatose $port "ucmatose -b $IP_H -p @PORT@ -c 4" \
	"ucmatose -s $IP_H -p @PORT@ -c 4" "data transfers complete"
port=$((port + 2))
# udaddy's port is fixed (7174; its -p is the port space)
cm_guest_server rxe_srv.udaddy 7174 "udaddy -b $IP_G" "udaddy -s $IP_G" \
	"data transfers complete"
cm_host_server vrdma_srv.udaddy 7174 "udaddy -b $IP_H" "udaddy -s $IP_H" \
	"data transfers complete"
port=$((port + 1))
cm_guest_server rxe_srv.send_bw_R $port "ib_send_bw -R -d rxe0 -p $port -n 50 -s 16384" \
	"ib_send_bw -R -d vrdma0 -p $port -n 50 -s 16384 $IP_G" "^ 16384 +50 " \
	"Failed to connect RDMA CM"
port=$((port + 1))
cm_host_server vrdma_srv.send_bw_R $port "ib_send_bw -R -d vrdma0 -p @PORT@ -n 50 -s 16384" \
	"ib_send_bw -R -d rxe0 -p @PORT@ -n 50 -s 16384 $IP_H" "^ 16384 +50 " "$PERF_RACE"
port=$((port + 2))
port=$((port + 1))
cm_guest_server rxe_srv.rstream $port "rstream -b $IP_G -p $port -S 10000 -C 20 -T v" \
	"rstream -s $IP_G -p $port -S 10000 -C 20 -T v" "^custom "
port=$((port + 1))
cm_host_server vrdma_srv.rstream $port "rstream -b $IP_H -p @PORT@ -S 10000 -C 20 -T v" \
	"rstream -s $IP_H -p @PORT@ -S 10000 -C 20 -T v" "^custom "
port=$((port + 2))
echo "# rdma_cm programs: $((SECONDS - t0)) s"

# The vrdma device's neighbour counters.
if nsd_stats da 1; then
	blk=$(awk -v s="($SH)" '$1 == "device" { on = ($3 == s); next } /^[^ ]/ { on = 0 } on' "$NSD_SNAP")
	if ! echo "$blk" | grep -q neigh_dropped && echo "$blk" | grep -q neigh_resolved; then
		ok neigh_dropped_zero
	else
		not_ok neigh_dropped_zero "$(echo "$blk" | grep -o 'neigh_[a-z]* [0-9]*' | tr '\n' ' ')"
	fi
	# The guest drains its receive ring slowly (TCG): RoCE senders of the
	# daemon wait for it (switch flow control), nothing is dropped for it.
	n=$(guest_drops "$NSD_SNAP")
	if [ -n "$n" ] && [ "$n" = "$G_DROPS0" ]; then
		ok guest_rx_no_drops
	else
		not_ok guest_rx_no_drops "guest device: rx_dropped_no_buffer ${n:-missing} (after boot: $G_DROPS0)"
	fi
else
	not_ok neigh_dropped_zero "no stats dump"
	not_ok guest_rx_no_drops "no stats dump"
fi

rxe_stop
nsd_stop da TERM
if [ "$D_LAST_RC" = 0 ] && [ -s "$CAP" ]; then
	ok daemon_exit_capture_written
else
	not_ok daemon_exit_capture_written "rc $D_LAST_RC"
fi

"$PY" - "$T_PROG" "$CAP" "$MAC_H" "$MAC_G" <<'PYEOF' || T_FAILED=1
import struct, sys, zlib, logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import rdpcap, raw, Ether, IP, UDP
from scapy.contrib.roce import BTH

prog, path, mac_h, mac_g = sys.argv[1:5]

def icrc(wire):
    ihl = (wire[14] & 15) * 4
    ip = bytearray(wire[14:14 + ihl])
    ip[1] = ip[8] = 0xff
    ip[10:12] = b'\xff\xff'
    udp = bytearray(wire[14 + ihl:22 + ihl])
    udp[6:8] = b'\xff\xff'
    bth = bytearray(wire[22 + ihl:34 + ihl])
    bth[4] = 0xff
    buf = b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(bth) + wire[34 + ihl:-4]
    return struct.pack('<I', zlib.crc32(buf) & 0xffffffff)

n = {mac_h: 0, mac_g: 0}
bad_icrc = bad_ttl = bad_ecn = 0
ops = set()
for fr in rdpcap(path):
    w = raw(fr)
    p = Ether(w)
    if IP not in p or UDP not in p or p[UDP].dport != 4791 or BTH not in p:
        continue
    n[p.src] = n.get(p.src, 0) + 1
    ops.add(p[BTH].opcode)
    q = Ether(w)
    q[BTH].icrc = None
    if raw(q)[-4:] != w[-4:] or icrc(w) != w[-4:]:
        bad_icrc += 1
    if p[IP].ttl != 64:
        bad_ttl += 1
    if p.src == mac_h and p[IP].tos & 3 != 2:
        bad_ecn += 1

def result(name, good, why):
    print(("ok %s.%s" if good else "not ok %s.%s") % (prog, name))
    if not good:
        print("#   " + why)
    return good

total = sum(n.values())
g = result("frames_both_ways", n[mac_h] >= 100 and n[mac_g] >= 100,
           "vrdma %d, rxe %d RoCE frames" % (n[mac_h], n[mac_g]))
g &= result("icrc_valid", total and not bad_icrc, "%d of %d bad" % (bad_icrc, total))
g &= result("ttl_64", total and not bad_ttl, "%d of %d frames not TTL 64" % (bad_ttl, total))
g &= result("vrdma_ect0", n[mac_h] and not bad_ecn, "%d frames not ECT(0)" % bad_ecn)
# RC SEND FIRST/MIDDLE/LAST, WRITE FIRST, READ request / response FIRST,
# ACK, ATOMIC ACK, FETCH & ADD; UC SEND FIRST; UD SEND ONLY
want = {0x00, 0x01, 0x02, 0x06, 0x0c, 0x0d, 0x11, 0x12, 0x14, 0x20, 0x64}
g &= result("opcodes_seen", want <= ops, "missing %s" % sorted(hex(o) for o in want - ops))
sys.exit(0 if g else 1)
PYEOF
t_done
