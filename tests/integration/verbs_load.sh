#!/usr/bin/env bash
# Many busy RC QPs between two devices of one daemon (issue 20): unmodified
# perftest through vrdma-run, 64 KiB messages, server on device B, client on
# device A, over GID index 1.
#
#   ib_write_bw -q 16, -q 128, -q 1024 -t 8; ib_send_bw -q 64;
#   ib_read_bw -q 64
#
# Each: both ends exit 0 and print their 65536-byte result row (perftest
# checks every completion's status). Then the daemon's counters: inside one
# daemon no frame is dropped for lack of queue room (rx_queue_full and
# tx_queue_full 0 on every device: the switch holds frames for a busy
# receiver instead), no QP moved to error, no completion with an error
# status. Iteration counts are small so the run stays short on a loaded
# machine; nothing is timed.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"

SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"
MAC_A=02:11:22:33:45:0a
MAC_B=02:11:22:33:45:0b
IP_A=10.63.0.1
IP_B=10.63.0.2

STEP_TMO=300            # seconds any one verbs program may take (ASan is slow)
DAEMON_TMO=1200         # the daemon's own bound

asan_preload "$LIB"

ALL_TESTS="write_bw_q16 write_bw_q128 write_bw_q1024_t8 send_bw_q64 read_bw_q64
	no_drops_inside daemon_clean_exit"

reason=""
if [ ! -x "$DAEMON" ] || [ ! -x "$RUN" ] || [ ! -e "$LIB" ]; then
	reason="daemon, vrdma-run or libibverbs.so.1 not built"
elif ! command -v ib_write_bw >/dev/null || ! command -v ib_read_bw >/dev/null; then
	reason="perftest not installed (scripts/deps.sh test)"
elif ! command -v ss >/dev/null; then
	reason="ss (iproute2) not installed"
fi
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

. "$(dirname "$0")/daemon_lib.bash"

# row LOG: perftest printed its 65536-byte result row.
row() { awk '$1 == 65536 && $2 ~ /^[0-9]+$/ && NF >= 5 { f = 1 } END { exit !f }' "$1"; }

# bw TEST PROG ARGS...: server on B, client on A; both exit 0 with a row.
bw() {
	local t=$1 spid port rs rc why=""; shift
	next_port
	port=$PORT
	vrun "$t.srv" "$SB" -- "$@" -p "$port" &
	spid=$!
	if ! wait_listening "$port" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		not_ok "$t" "server never listened on port $port"
		sed 's/^/#   srv: /' "$T_TMP/$t.srv.log" | tail -n 20
		return
	fi
	vrun "$t.cli" "$SA" -- "$@" -p "$port" localhost
	rc=$?
	wait "$spid"
	rs=$?
	[ "$rs" = 0 ] && [ "$rc" = 0 ] || why="server rc=$rs client rc=$rc; "
	row "$T_TMP/$t.cli.log" || why="${why}client printed no 65536-byte row; "
	row "$T_TMP/$t.srv.log" || why="${why}server printed no 65536-byte row; "
	if [ -z "$why" ]; then
		ok "$t"
		awk '$1 == 65536 { print "# '"$t"': " $0 }' "$T_TMP/$t.cli.log"
	else
		not_ok "$t" "$why"
		tail -n 15 "$T_TMP/$t.srv.log" | sed 's/^/#   srv: /'
		tail -n 15 "$T_TMP/$t.cli.log" | sed 's/^/#   cli: /'
		d_stats d | sed 's/^/#   daemon: /'
	fi
}

# 1024 QPs on each device (plus QP 0 / 1).
if ! d_start d \
	--device "socket=$SA,mac=$MAC_A,ip=$IP_A/24,qps=1040,cqs=64" \
	--device "socket=$SB,mac=$MAC_B,ip=$IP_B/24,qps=1040,cqs=64"; then
	for t in $ALL_TESTS; do not_ok "$t" "daemon did not start: $(tail -n 5 "$T_TMP/d.log" | tr '\n' ' ')"; done
	t_done
fi

COMMON=(-x 1 -F -s 65536)
bw write_bw_q16 ib_write_bw "${COMMON[@]}" -q 16 -n 100
bw write_bw_q128 ib_write_bw "${COMMON[@]}" -q 128 -n 20
bw write_bw_q1024_t8 ib_write_bw "${COMMON[@]}" -q 1024 -t 8 -n 5
bw send_bw_q64 ib_send_bw "${COMMON[@]}" -q 64 -n 30
bw read_bw_q64 ib_read_bw "${COMMON[@]}" -q 64 -n 30

# The final dump (written at SIGTERM): per device counters.
dumps=$(dumps_of d)
d_stop d
if [ "$D_RC" = 0 ] && [ "$(dumps_of d)" -gt "$dumps" ]; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "exit status $D_RC"
	tail -n 30 "$T_TMP/d.log" | sed 's/^/#   /'
fi
awk '/^device / { if (!on) { buf = ""; on = 1 } }
     on         { buf = buf $0 "\n" }
     /^faults / { last = buf; on = 0 }
     END        { printf "%s", last }' "$T_TMP/d.log" >"$T_TMP/d.last"
check_no_drops no_drops_inside "$T_TMP/d.last"
awk '$1 == "roce" && $2 == "tx" {
	for (i = 3; i < NF; i++)
		if ($i ~ /^(tx_held|retransmits|timeouts|rewinds)$/) s[$i] += $(i + 1) }
     END { printf "# transport: tx_held %d retransmits %d timeouts %d rewinds %d\n",
		  s["tx_held"], s["retransmits"], s["timeouts"], s["rewinds"] }' "$T_TMP/d.last"
t_done
