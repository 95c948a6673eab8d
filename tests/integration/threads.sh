#!/usr/bin/env bash
# A daemon with two loop threads (--threads 2, docs/design.md "Processes and
# threads"): unmodified verbs programs through vrdma-run between two devices
#
#   1. on different threads (round robin: dev0 on thread 0, dev1 on thread
#      1; every frame between them crosses a trunk): Ethernet frames through
#      the drivers' queues (vrdma-netcat, every byte verified, every size),
#      ibv_rc_pingpong -c
#      (buffers validated), ib_write_bw / ib_read_bw / ib_send_bw 64 KiB
#      with 16 QPs, ib_write_bw -c UC the same, rping -V (rdma_cm, every
#      ping's data verified);
#   2. both on thread 1 of the same daemon (a config file: threads = 2,
#      thread = 1 in the device sections):
#      ibv_rc_pingpong -c and ib_write_bw; then SIGHUP with a third device
#      on thread 0 in the file (a pingpong to it), and SIGHUP without it;
#   3. with the control socket, --pcap and --fault drop=1: a device
#      hot-plugged onto thread 1 (vrdmactl dev add ... thread=1), a
#      pingpong to it from thread 0 (RC recovers the drops), vrdmactl stat
#      show and a SIGUSR1 dump while it runs, dev del; one capture file per
#      thread, both with frames.
# As root, the first daemon also has a TAP uplink on thread 1
# (--uplink tap:NAME,thread=1): the host's frames on it are received.
#
# Each daemon's final --stats dump: no frame dropped inside the daemon
# (rx_queue_full and tx_queue_full 0 on both devices, no QP in error, no
# completion with an error status), in 1 thread 1's switch forwarded the
# traffic (it crossed), in 2 thread 0's switch forwarded nothing but the
# floods; both daemons exit 0 (threads stopped and joined). Nothing is
# timed.
#
# VRDMA_DAEMON=PATH runs another build of the daemon (make tsan:
# build/tsan/bin/vhost-user-rdma; the programs keep $VRDMA_BUILD's
# libraries).
. "$(dirname "$0")/../lib.sh"

DAEMON="${VRDMA_DAEMON:-$VRDMA_BUILD/bin/vhost-user-rdma}"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"

SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"
IP_A=10.66.0.1
IP_B=10.66.0.2

STEP_TMO=300
DAEMON_TMO=1200

asan_preload "$LIB"

ALL_TESTS="x_daemon_started x_rc_pingpong x_write_bw x_read_bw x_send_bw x_uc_write_bw x_rping
	x_seccomp_all_threads x_eth_frames x_eth_sweep x_crossed x_no_drops x_clean_exit
	one_daemon_started one_rc_pingpong one_write_bw one_reload_pingpong one_reload one_same_thread
	one_no_drops one_clean_exit
	ctl_daemon_started ctl_dev_add ctl_rc_pingpong ctl_stat_show ctl_dev_del ctl_pcap_per_thread
	ctl_clean_exit x_uplink_thread1"

reason=""
CTL="$VRDMA_BUILD/bin/vrdmactl"
if [ ! -x "$DAEMON" ] || [ ! -x "$RUN" ] || [ ! -e "$LIB" ] || [ ! -x "$CTL" ] ||
   [ ! -x "$VRDMA_BUILD/bin/vrdma-netcat" ]; then
	reason="daemon, vrdma-run or libibverbs.so.1 not built"
else
	for p in ib_write_bw ib_read_bw ib_send_bw ibv_rc_pingpong rping ss; do
		command -v $p >/dev/null || reason="$p not installed (scripts/deps.sh test)"
	done
fi
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

. "$(dirname "$0")/daemon_lib.bash"

# pair T SRV_ARGS... -- CLI_ARGS...: server on B (TCP port $PORT), client on
# A; RC_S / RC_C their exit status.
pair() {
	local t=$1 srv=() spid; shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	vrun "$t.srv" "$SB" -- "${srv[@]}" &
	spid=$!
	if ! wait_listening "$PORT" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		RC_S=nolisten RC_C=none
		return
	fi
	vrun "$t.cli" "$SA" -- "$@"
	RC_C=$?
	wait "$spid"
	RC_S=$?
}

fail_logs() {
	tail -n 15 "$T_TMP/$1.srv.log" 2>/dev/null | sed 's/^/#   srv: /'
	tail -n 15 "$T_TMP/$1.cli.log" 2>/dev/null | sed 's/^/#   cli: /'
}

pingpong() {
	local t=$1
	next_port
	pair "$t" ibv_rc_pingpong -g 1 -c -n 500 -p "$PORT" -- \
		ibv_rc_pingpong -g 1 -c -n 500 -p "$PORT" localhost
	if [ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] &&
	   grep -Eq '^[0-9]+ iters in' "$T_TMP/$t.cli.log" &&
	   grep -Eq '^[0-9]+ iters in' "$T_TMP/$t.srv.log"; then
		ok "$t"
	else
		not_ok "$t" "server rc=$RC_S client rc=$RC_C"
		fail_logs "$t"
	fi
}

# row LOG: perftest printed its 65536-byte result row.
row() { awk '$1 == 65536 && $2 ~ /^[0-9]+$/ && NF >= 5 { f = 1 } END { exit !f }' "$1"; }

bw() {
	local t=$1 why=""; shift
	next_port
	pair "$t" "$@" -p "$PORT" -- "$@" -p "$PORT" localhost
	[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] || why="server rc=$RC_S client rc=$RC_C; "
	row "$T_TMP/$t.cli.log" || why="${why}client printed no 65536-byte row; "
	row "$T_TMP/$t.srv.log" || why="${why}server printed no 65536-byte row; "
	if [ -z "$why" ]; then
		ok "$t"
		awk '$1 == 65536 { print "# '"$t"': " $0 }' "$T_TMP/$t.cli.log"
	else
		not_ok "$t" "$why"
		fail_logs "$t"
	fi
}

rping_pair() {
	local t=$1 spid rc rs
	next_port
	vstart "$t.srv" "$SB" rping -s -a $IP_B -p "$PORT" -C 500 -V
	spid=$VPID
	if ! wait_for cm_ready "$spid"; then
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
		not_ok "$t" "server did not listen"
		fail_logs "$t"
		return
	fi
	vstart "$t.cli" "$SA" rping -c -a $IP_B -p "$PORT" -C 500 -V
	wait "$VPID"; rc=$?
	wait "$spid"; rs=$?
	if [ "$rc" = 0 ] && [ "$rs" = 0 ]; then
		ok "$t"
	else
		not_ok "$t" "server rc=$rs client rc=$rc"
		fail_logs "$t"
	fi
}


# last_dump NAME: the daemon's final --stats dump into $T_TMP/NAME.last.
last_dump() {
	awk '/^device / { if (!on) { buf = ""; on = 1 } }
	     on         { buf = buf $0 "\n" }
	     /^payload_refs / { last = buf; on = 0 }
	     END        { printf "%s", last }' "$T_TMP/$1.log" >"$T_TMP/$1.last"
}

# no_drops T NAME: check_no_drops on NAME's final --stats dump.
no_drops() { check_no_drops "$1" "$T_TMP/$2.last"; }

# fwd NAME: frames thread 1's switch forwarded (final dump); fwd0: thread 0's.
fwd1() { awk '$1 == "switch" && $2 == "thread" && $3 == 1 { print $5 }' "$T_TMP/$1.last"; }
fwd0() { awk '$1 == "switch" && $2 == "forwarded" { print $3 }' "$T_TMP/$1.last"; }

stop_check() {
	local t=$1 name=$2
	d_stop "$name"
	if grep -q "Sanitizer" "$T_TMP/$name.log"; then
		not_ok "$t" "a sanitizer reported"
		grep -A 30 "Sanitizer" "$T_TMP/$name.log" | head -n 60 | sed 's/^/#   /'
	elif [ "$D_RC" = 0 ]; then
		ok "$t"
	else
		not_ok "$t" "exit status $D_RC"
		tail -n 30 "$T_TMP/$name.log" | sed 's/^/#   /'
	fi
	last_dump "$name"
}

# -u 20: a 4 s transport timeout, so that a daemon slowed down many times
# (ThreadSanitizer on a busy machine) does not run out of retries; the
# checks are about data, completions and drops, not speed
COMMON=(-x 1 -F -s 65536 -q 16 -n 50 -u 20)

# ---- 1. the two devices on different threads ----
# (as root: a TAP uplink on thread 1 too)
TAP="vrt$$"
UP=()
[ "$(id -u)" -eq 0 ] && UP=(--uplink "tap:$TAP,thread=1")
MAC_A=02:66:00:00:00:0a
MAC_B=02:66:00:00:00:0b
if d_start x --threads 2 \
	--device "socket=$SA,mac=$MAC_A,ip=$IP_A/24,qps=64" \
	--device "socket=$SB,mac=$MAC_B,ip=$IP_B/24,qps=64" "${UP[@]}"; then
	ok x_daemon_started
	# every thread runs under the system-call filter (installed with TSYNC)
	n=0 f=0
	for st in /proc/"${D_PID[x]}"/task/*/status; do
		n=$((n + 1))
		[ "$(awk '$1 == "Seccomp:" { print $2 }' "$st")" = 2 ] && f=$((f + 1))
	done
	if [ "$n" -ge 2 ] && [ "$f" = "$n" ]; then
		ok x_seccomp_all_threads
	else
		not_ok x_seccomp_all_threads "$f of $n threads filtered"
	fi
	# the host's frames on the TAP (IPv6 neighbour discovery, MLD once it
	# is up) come in on thread 1's loop
	if [ ${#UP[@]} -gt 0 ]; then
		if ip link set "$TAP" up &&
		   wait_until '[ "$(d_stats x | awk -v n="$TAP" '"'"'$1 == "uplink" && $2 == n { v = $4 } END { print v + 0 }'"'"')" -gt 0 ]'; then
			ok x_uplink_thread1
		else
			not_ok x_uplink_thread1 "no frame from $TAP"
		fi
	else
		skip x_uplink_thread1 "a TAP uplink needs root"
	fi
	nc_exchange x_eth_frames "$SA" "$SB" "$MAC_B" 3000 11
	nc_exchange x_eth_sweep "$SB" "$SA" "$MAC_A" 2910 13 --window 16 --sweep
	pingpong x_rc_pingpong
	bw x_write_bw ib_write_bw "${COMMON[@]}"
	bw x_read_bw ib_read_bw "${COMMON[@]}"
	bw x_send_bw ib_send_bw "${COMMON[@]}"
	# (UC runs by reference: a run is filled in at the trunk, and that
	# completes its WR on the sending thread)
	bw x_uc_write_bw ib_write_bw -c UC "${COMMON[@]}"
	rping_pair x_rping
	stop_check x_clean_exit x
	f=$(fwd1 x)
	if [ -n "$f" ] && [ "$f" -gt 10000 ]; then
		ok x_crossed
	else
		not_ok x_crossed "thread 1's switch forwarded '${f}' frames"
		sed 's/^/#   /' "$T_TMP/x.last"
	fi
	no_drops x_no_drops x
else
	for t in x_daemon_started x_seccomp_all_threads x_eth_frames x_eth_sweep x_rc_pingpong x_write_bw x_read_bw \
		x_send_bw x_rping x_crossed x_no_drops x_clean_exit x_uplink_thread1; do
		not_ok "$t" "daemon did not start: $(tail -n 5 "$T_TMP/x.log" | tr '\n' ' ')"
	done
fi

# ---- 2. both devices on thread 1 of a two-thread daemon ----
# (from a config file: threads = 2, thread = 1 in each device section)
cat >"$T_TMP/one.conf" <<EOF
[global]
socket-dir = $T_TMP
control = none
threads = 2
[device a]
socket = $SA
ip = $IP_A/24
qps = 64
thread = 1
[device b]
socket = $SB
ip = $IP_B/24
qps = 64
thread = 1
EOF
chmod 0644 "$T_TMP/one.conf"
if d_start one --config "$T_TMP/one.conf"; then
	ok one_daemon_started
	pingpong one_rc_pingpong
	bw one_write_bw ib_write_bw "${COMMON[@]}"
	d_stats one >"$T_TMP/onemid.last" # (thread 0 has had nothing to forward so far)
	# SIGHUP with a device added on thread 0, then removed again
	cp "$T_TMP/one.conf" "$T_TMP/one.base"
	printf '[device c]\nsocket = %s\nip = 10.66.0.3/24\nthread = 0\n' "$T_TMP/c2.sock" \
		>>"$T_TMP/one.conf"
	kill -HUP "${D_PID[one]}"
	if wait_until '[ -S "$T_TMP/c2.sock" ]' &&
	   SB="$T_TMP/c2.sock" pingpong one_reload_pingpong &&
	   cp "$T_TMP/one.base" "$T_TMP/one.conf" && kill -HUP "${D_PID[one]}" &&
	   wait_until '[ ! -e "$T_TMP/c2.sock" ]'; then
		ok one_reload
	else
		not_ok one_reload "$(tail -n 5 "$T_TMP/one.log")"
	fi
	stop_check one_clean_exit one
	f0=$(fwd0 onemid)
	f1=$(fwd1 onemid)
	# thread 0 has no device: its switch sees nothing but what the trunk
	# floods to it (ARP)
	if [ -n "$f1" ] && [ "$f1" -gt 10000 ] && [ -n "$f0" ] && [ "$f0" -eq 0 ]; then
		ok one_same_thread
	else
		not_ok one_same_thread "thread 0 forwarded '$f0', thread 1 '$f1'"
		sed 's/^/#   /' "$T_TMP/onemid.last"
	fi
	no_drops one_no_drops one
else
	for t in one_daemon_started one_rc_pingpong one_write_bw one_reload_pingpong one_reload \
		one_same_thread one_no_drops one_clean_exit; do
		not_ok "$t" "daemon did not start: $(tail -n 5 "$T_TMP/one.log" | tr '\n' ' ')"
	done
fi
# ---- 3. control socket, hot-plug onto thread 1, pcap and faults ----
SC="$T_TMP/c.sock"
if d_start ctl --threads 2 --control "$T_TMP/control" --pcap "$T_TMP/cap.pcap" \
	--fault drop=1,seed=7 --device "socket=$SA,ip=$IP_A/24,qps=64"; then
	ok ctl_daemon_started
	if "$CTL" -s "$T_TMP/control" dev add c "socket=$SC,ip=10.66.0.3/24,thread=1" \
		>"$T_TMP/ctl.out" 2>&1 && [ -S "$SC" ]; then
		ok ctl_dev_add
	else
		not_ok ctl_dev_add "$(cat "$T_TMP/ctl.out")"
	fi
	SB=$SC
	pingpong ctl_rc_pingpong
	if "$CTL" -s "$T_TMP/control" stat show >"$T_TMP/stat.out" 2>&1 &&
	   grep -q forwarded "$T_TMP/stat.out" && grep -q "dev c\|^c\b\|c " "$T_TMP/stat.out" &&
	   d_stats ctl >"$T_TMP/ctl.dump" && grep -q "^switch thread 1 " "$T_TMP/ctl.dump"; then
		ok ctl_stat_show
	else
		not_ok ctl_stat_show "$(head -c 600 "$T_TMP/stat.out")"
	fi
	# the trunks' and every thread's counters, in both reports
	if grep -q "trunk0-1" "$T_TMP/stat.out" && grep -q "trunk1-0" "$T_TMP/stat.out" &&
	   grep -q "rx_busy_set" "$T_TMP/stat.out" && grep -q "dropped_horizon" "$T_TMP/stat.out" &&
	   grep -q "^thread 0 copies_streamed [0-9]" "$T_TMP/stat.out" &&
	   grep -q "^thread 1 copies_streamed [0-9]* copies_streamed_bytes [0-9]" "$T_TMP/stat.out" &&
	   grep -q " tx_parks [0-9]* tx_unparks [0-9]" "$T_TMP/stat.out" &&
	   grep -q "^trunk trunk0-1 tx [0-9]* tx_overflow [0-9]* tx_dropped 0 " "$T_TMP/ctl.dump" &&
	   grep -q "^trunk trunk1-0 .* rx_dropped 0 " "$T_TMP/ctl.dump" &&
	   grep -q "^faults thread 1 dropped [0-9]" "$T_TMP/ctl.dump" &&
	   grep -q "^switch thread 1 .* dropped_horizon [0-9]" "$T_TMP/ctl.dump"; then
		ok ctl_trunk_stats
	else
		not_ok ctl_trunk_stats "$(grep -E "^(trunk|faults|switch)" "$T_TMP/ctl.dump" | head -c 600)"
	fi
	if "$CTL" -s "$T_TMP/control" dev del c >"$T_TMP/ctl.out" 2>&1 &&
	   wait_until '[ ! -e "$SC" ]' 60; then
		ok ctl_dev_del
	else
		not_ok ctl_dev_del "$(cat "$T_TMP/ctl.out")"
	fi
	# a MAC belongs to one device of the process, whatever the thread
	if "$CTL" -s "$T_TMP/control" dev add m0 "socket=$T_TMP/m0.sock,mac=02:66:00:00:00:0a,thread=0" \
		>"$T_TMP/ctl.out" 2>&1 &&
	   ! "$CTL" -s "$T_TMP/control" dev add m1 \
		"socket=$T_TMP/m1.sock,mac=02:66:00:00:00:0a,thread=1" >>"$T_TMP/ctl.out" 2>&1 &&
	   [ ! -e "$T_TMP/m1.sock" ] && "$CTL" -s "$T_TMP/control" dev del m0 >>"$T_TMP/ctl.out" 2>&1 &&
	   wait_until '[ ! -e "$T_TMP/m0.sock" ]' 60 &&
	   "$CTL" -s "$T_TMP/control" dev add m1 "socket=$T_TMP/m1.sock,mac=02:66:00:00:00:0a,thread=1" \
		>>"$T_TMP/ctl.out" 2>&1 && "$CTL" -s "$T_TMP/control" dev del m1 >>"$T_TMP/ctl.out" 2>&1; then
		ok ctl_mac_one_owner
	else
		not_ok ctl_mac_one_owner "$(cat "$T_TMP/ctl.out")"
	fi
	stop_check ctl_clean_exit ctl
	# a pcap file is a 24-byte header, then the frames
	s0=$(stat -c %s "$T_TMP/cap.pcap" 2>/dev/null || echo 0)
	s1=$(stat -c %s "$T_TMP/cap.pcap.1" 2>/dev/null || echo 0)
	if [ "$s0" -gt 1000 ] && [ "$s1" -gt 1000 ]; then
		ok ctl_pcap_per_thread
	else
		not_ok ctl_pcap_per_thread "cap.pcap $s0 bytes, cap.pcap.1 $s1 bytes"
	fi
else
	for t in ctl_daemon_started ctl_dev_add ctl_rc_pingpong ctl_stat_show ctl_dev_del \
		ctl_pcap_per_thread ctl_clean_exit; do
		not_ok "$t" "daemon did not start: $(tail -n 5 "$T_TMP/ctl.log" | tr '\n' ' ')"
	done
fi
t_done
