#!/usr/bin/env bash
# A device shared by many contexts (one per vhost-user connection), like a
# real RDMA NIC opened by many processes. One daemon, devices A (default
# contexts=64) and L (contexts=2).
#
# 1. ibv_devinfo on A while an ib_write_bw pair holds A mid-run (the client
#    is stopped with SIGSTOP once its traffic started, so the check does not
#    depend on how fast the machine is): it answers with the port
#    PORT_ACTIVE; after SIGCONT the pair exits 0 with its result row.
# 2. Server and client on the same socket A, unmodified Debian programs:
#    ibv_rc_pingpong -c, ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong, ib_write_bw,
#    ib_read_bw, ib_send_lat, ib_atomic_bw.
# 3. tests/verbs/two_contexts: one process opens A twice; RC (SEND, WRITE,
#    READ, FETCH_AND_ADD) and UD between the contexts, data compared; a SEND
#    with the other context's lkey completes in error and traffic goes on.
# 4. 16 processes on A at once (8 ibv_rc_pingpong -c pairs), all exit 0.
# 5. 100 contexts SIGKILLed (10 rounds of 10 ibv_rc_pingpong servers, each
#    holding its QP while it waits for a client) while pairs run verified
#    traffic back to back on A: every pair exits 0, the daemon's fd count
#    returns to its count before the rounds, its file mappings too, and (plain
#    build only: ASan keeps freed memory in quarantine) its RSS stays within 16 MiB of what it was after the first round
#    (malloc keeps freed memory; a leak of 100 contexts would be far more).
# 6. L (contexts=2) with two contexts held: a third opener (ibv_devinfo)
#    fails at once with the documented message; the daemon counts it
#    refused; once the holders are gone, a new opener succeeds.
# 7. With the daemon stopped (SIGSTOP), an opener waiting for its first reply
#    ends at once on SIGTERM and on SIGINT (default dispositions; exit status
#    128 + signal), instead of waiting out its 30 s reply timeout.
# 8. The daemon stops cleanly on SIGTERM (exit 0; no sanitizer report).
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
TWO="$VRDMA_BUILD/tests/verbs/two_contexts"
SA="$T_TMP/a.sock"
SL="$T_TMP/l.sock"
STEP_TMO=200
DAEMON_TMO=1200
KILL_ROUNDS=${VRDMA_SHARED_KILL_ROUNDS:-10}
KILL_BATCH=10

ALL_TESTS="daemon_started devinfo_during_write_bw write_bw_unaffected same_socket_rc_pingpong
	same_socket_uc_pingpong same_socket_ud_pingpong same_socket_srq_pingpong same_socket_ib_write_bw
	same_socket_ib_read_bw same_socket_ib_send_lat same_socket_ib_atomic_bw two_contexts
	sixteen_processes kill_100_traffic_ok kill_100_fds_baseline kill_100_maps_baseline
	kill_100_rss context_limit_refused context_limit_counted context_limit_freed
	blocked_open_sigTERM blocked_open_sigINT daemon_clean_exit"

asan_preload "$LIB"
ASAN=0
[ -z "$PRELOAD" ] || ASAN=1
reason=""
for b in "$DAEMON" "$RUN" "$LIB" "$TWO"; do
	[ -e "$b" ] || reason="$b not built"
done
if ! command -v ibv_rc_pingpong >/dev/null || ! command -v ib_write_bw >/dev/null; then
	reason="ibverbs-utils / perftest not installed (scripts/deps.sh test)"
elif ! command -v ss >/dev/null; then
	reason="ss (iproute2) not installed"
fi
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

. "$(dirname "$0")/daemon_lib.bash"

# start_server NAME SOCK CMD...: CMD -p PORT in the background (pid in SPID),
# returns once it listens (or fails). A port taken between the check and the
# server's bind (another test on this machine) is retried on the next port.
start_server() {
	local name=$1 sock=$2 try; shift 2
	for ((try = 0; try < 5; try++)); do
		next_port || return 1
		vrun "$name.srv" "$sock" -- "$@" -p "$PORT" &
		SPID=$!
		wait_listening "$PORT" "$SPID" && return 0
		kill -0 "$SPID" 2>/dev/null && return 1
		wait "$SPID" 2>/dev/null
		grep -q "Couldn't listen" "$T_TMP/$name.srv.log" || return 1
	done
	return 1
}

# pair NAME SOCK CMD...: server and client of CMD on the same socket; sets
# RC_S and RC_C.
pair() {
	local name=$1 sock=$2; shift 2
	RC_S=-1 RC_C=-1
	start_server "$name" "$sock" "$@" || { wait "$SPID" 2>/dev/null; return 1; }
	vrun "$name.cli" "$sock" -- "$@" -p "$PORT" localhost
	RC_C=$?
	wait "$SPID"
	RC_S=$?
}

why_pair() {
	local name=$1
	echo "server rc=$RC_S client rc=$RC_C"
	tail -n 8 "$T_TMP/$name.srv.log" 2>/dev/null | sed 's/^/#   srv: /'
	tail -n 8 "$T_TMP/$name.cli.log" 2>/dev/null | sed 's/^/#   cli: /'
}

# contexts_open NAME DEV: the "contexts open N" of device DEV in a fresh dump.
contexts_open() {
	d_stats "$1" | awk -v dev="$2" '$1 == "device" { cur = $2 }
		cur == dev && $1 == "contexts" && $2 == "open" { print $3; exit }'
}
refused_of() {
	d_stats "$1" | awk -v dev="$2" '$1 == "device" { cur = $2 }
		cur == dev && $1 == "contexts" && $2 == "open" { print $11; exit }'
}

# prog_pid PID: the verbs program started by `vrun ... &` as PID.
prog_pid() {
	local c
	for c in $(pgrep -P "$1"); do
		case "$(cat "/proc/$c/comm" 2>/dev/null)" in
		bash|env|timeout|stdbuf|vrdma-run) prog_pid "$c" ;;
		*) echo "$c" ;;
		esac
	done
}

# kill_prog PID: SIGKILL the verbs program started by `vrun ... &` as PID
# (a descendant: the shell, timeout, then the program vrdma-run exec'd).
kill_prog() {
	local c
	for c in $(pgrep -P "$1"); do
		case "$(cat "/proc/$c/comm" 2>/dev/null)" in
		bash|env|timeout|stdbuf|vrdma-run) kill_prog "$c" ;;
		*) kill -KILL "$c" 2>/dev/null ;;
		esac
	done
}

# File-backed mappings (ASan's allocator keeps anonymous ones).
map_count() { awk '$6 ~ /^\// { n++ } END { print n + 0 }' "/proc/$1/maps" 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

if d_start d --device "socket=$SA,mac=02:62:00:00:00:0a,ip=10.62.0.1/24" \
	--device "socket=$SL,mac=02:62:00:00:00:0b,ip=10.62.0.2/24,contexts=2"; then
	ok daemon_started
else
	not_ok daemon_started "$(tail -n 5 "$T_TMP/d.log")"
	t_done
fi
DPID=${D_PID[d]}

# ---- 1. ibv_devinfo during ib_write_bw --------------------------------------------
if start_server wbw "$SA" ib_write_bw -x 1 -D 4; then
	vrun wbw.cli "$SA" -- ib_write_bw -x 1 -D 4 -p "$PORT" localhost &
	CPID=$!
	# the client's traffic has started once it printed its table header
	wait_until 'grep -q "BW average" "$T_TMP/wbw.cli.log" 2>/dev/null || ! kill -0 "$CPID" 2>/dev/null' 200
	cprog=$(prog_pid "$CPID")
	[ -n "$cprog" ] && kill -STOP "$cprog"
	vrun devinfo "$SA" -- ibv_devinfo
	rc=$?
	held=0
	[ -n "$cprog" ] && [ "$(contexts_open d dev0)" -ge 2 ] 2>/dev/null && held=1
	[ -n "$cprog" ] && kill -CONT "$cprog"
	if [ $rc = 0 ] && grep -q 'PORT_ACTIVE' "$T_TMP/devinfo.log" && [ $held = 1 ]; then
		ok devinfo_during_write_bw
	else
		not_ok devinfo_during_write_bw "rc=$rc, write_bw client pid '$cprog' holding the device: $held" \
			"$(tr '\n' ' ' <"$T_TMP/devinfo.log")"
	fi
	wait "$CPID"
	RC_C=$?
	wait "$SPID"
	RC_S=$?
	if [ $RC_S = 0 ] && [ $RC_C = 0 ] && grep -Eq '^ *65536 +[0-9]+' "$T_TMP/wbw.cli.log"; then
		ok write_bw_unaffected
		grep -E '^ *65536 ' "$T_TMP/wbw.cli.log" | sed 's/^/# write_bw: /'
	else
		not_ok write_bw_unaffected "$(why_pair wbw)"
	fi
else
	not_ok devinfo_during_write_bw "ib_write_bw server did not start"
	not_ok write_bw_unaffected "ib_write_bw server did not start"
fi

# ---- 2. server and client on one socket ---------------------------------------------
# same NAME ROWPATTERN CMD...
same() {
	local name=$1 pat=$2; shift 2
	if pair "$name" "$SA" "$@" && [ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] &&
	   grep -Eq "$pat" "$T_TMP/$name.cli.log" && grep -Eq "$pat" "$T_TMP/$name.srv.log"; then
		ok "same_socket_$name"
	else
		not_ok "same_socket_$name" "$(why_pair "$name")"
	fi
}
PP='^[0-9]+ iters in [0-9.]+ seconds'
ROW='^ *[0-9]+ +[0-9]+ +[0-9.]+'
same rc_pingpong "$PP" ibv_rc_pingpong -c -g 1 -n 200
same uc_pingpong "$PP" ibv_uc_pingpong -g 1 -n 200
same ud_pingpong "$PP" ibv_ud_pingpong -g 1 -n 200
same srq_pingpong "$PP" ibv_srq_pingpong -g 1 -n 200
same ib_write_bw "$ROW|^ *65536 " ib_write_bw -x 1 -n 200
same ib_read_bw "$ROW|^ *65536 " ib_read_bw -x 1 -n 200
same ib_send_lat "$ROW|^ *2 " ib_send_lat -x 1 -n 200
same ib_atomic_bw "$ROW|^ *8 " ib_atomic_bw -x 1 -n 200

# ---- 3. two contexts in one process --------------------------------------------------
if vrun two "$SA" -- "$TWO" -g 1 -n 20 && grep -q 'two_contexts: ok done' "$T_TMP/two.log"; then
	ok two_contexts
	sed 's/^/# /' "$T_TMP/two.log"
else
	not_ok two_contexts "$(tr '\n' ' ' <"$T_TMP/two.log")"
fi

# ---- 4. 16 processes at once -----------------------------------------------------------
spids=() cpids=() names=()
fail16=""
for k in $(seq 1 8); do
	if start_server p16_$k "$SA" ibv_rc_pingpong -c -g 1 -n 200; then
		spids+=("$SPID")
		vrun "p16_$k.cli" "$SA" -- ibv_rc_pingpong -c -g 1 -n 200 -p "$PORT" localhost &
		cpids+=($!)
		names+=("p16_$k")
	else
		fail16="$fail16 server $k did not start;"
	fi
done
for k in "${!cpids[@]}"; do
	wait "${cpids[$k]}"; RC_C=$?
	wait "${spids[$k]}"; RC_S=$?
	if [ $RC_C != 0 ] || [ $RC_S != 0 ] ||
	   ! grep -Eq "$PP" "$T_TMP/${names[$k]}.cli.log"; then
		fail16="$fail16 ${names[$k]}: $(why_pair "${names[$k]}" | head -n 1);"
	fi
done
[ -z "$fail16" ] && ok sixteen_processes || not_ok sixteen_processes "$fail16"

# ---- 5. SIGKILL 100 contexts while traffic runs ------------------------------------------
fd0=$(count_fds "$DPID")
map0=$(map_count "$DPID")
KILLS_DONE="$T_TMP/kills.done"
rm -f "$KILLS_DONE"
# traffic: pairs back to back until the kills are over (each verifies data)
(
	PORT_NEXT=2500 # a port range of its own
	n=0 bad=0
	while [ ! -e "$KILLS_DONE" ]; do
		n=$((n + 1))
		if ! pair "tr_$n" "$SA" ibv_rc_pingpong -c -g 1 -n 500 || [ "$RC_S" != 0 ] ||
		   [ "$RC_C" != 0 ]; then
			bad=$((bad + 1))
			why_pair "tr_$n" >>"$T_TMP/traffic.why"
		fi
	done
	echo "$n $bad" >"$T_TMP/traffic.result"
) &
TPID=$!
rss1=""
kill_fail=""
for ((r = 0; r < KILL_ROUNDS; r++)); do
	vpids=()
	for ((k = 0; k < KILL_BATCH; k++)); do
		if start_server "v${r}_$k" "$SA" ibv_rc_pingpong -g 1; then
			vpids+=("$SPID")
		else
			kill_fail="$kill_fail round $r victim $k did not start;"
		fi
	done
	for p in "${vpids[@]}"; do kill_prog "$p"; done
	for p in "${vpids[@]}"; do { wait "$p"; } 2>/dev/null; done
	# the daemon has let the killed contexts go (only the traffic pair's
	# remain) before the next round, so a slow daemon never meets contexts=
	wait_until '[ "$(contexts_open d dev0)" -le 2 ] 2>/dev/null' 120
	[ $r = 0 ] && rss1=$(rss_kb "$DPID")
done
touch "$KILLS_DONE"
wait "$TPID"
read -r tn tbad <"$T_TMP/traffic.result" 2>/dev/null || { tn=0; tbad=1; }
if [ -z "$kill_fail" ] && [ "${tbad:-1}" = 0 ] && [ "${tn:-0}" -ge 1 ]; then
	ok kill_100_traffic_ok
	echo "# $((KILL_ROUNDS * KILL_BATCH)) contexts killed during $tn verified pingpong runs"
else
	not_ok kill_100_traffic_ok "$kill_fail runs $tn failed $tbad: $(head -c 2000 "$T_TMP/traffic.why" 2>/dev/null)"
fi
wait_until '[ "$(count_fds "$DPID")" -le "$fd0" ] && [ "$(map_count "$DPID")" -le "$map0" ]'
fd1=$(count_fds "$DPID")
map1=$(map_count "$DPID")
[ "$fd1" -le "$fd0" ] && ok kill_100_fds_baseline ||
	not_ok kill_100_fds_baseline "daemon fds $fd1, before the kills $fd0"
[ "$map1" -le "$map0" ] && ok kill_100_maps_baseline ||
	not_ok kill_100_maps_baseline "daemon file mappings $map1, before the kills $map0"
rss2=$(rss_kb "$DPID")
if [ $ASAN = 1 ]; then
	: # a plain-build check: ASan keeps freed memory in quarantine
elif [ -n "$rss1" ] && [ "$rss2" -le $((rss1 + 16384)) ]; then
	ok kill_100_rss
	echo "# daemon RSS after the first round ${rss1} kB, after all $((KILL_ROUNDS * KILL_BATCH)) kills ${rss2} kB"
else
	not_ok kill_100_rss "RSS after the first round ${rss1} kB, at the end ${rss2} kB"
fi

# ---- 6. contexts=2 -------------------------------------------------------------------------
hold=()
for k in 1 2; do
	start_server "hold$k" "$SL" ibv_rc_pingpong -g 1 && hold+=("$SPID")
done
ref0=$(refused_of d dev1)
vrun third "$SL" -- ibv_devinfo
rc=$?
if [ ${#hold[@]} = 2 ] && [ $rc != 0 ] && [ $rc != 124 ] &&
   grep -q 'all its contexts are in use' "$T_TMP/third.log"; then
	ok context_limit_refused
	grep 'contexts' "$T_TMP/third.log" | sed 's/^/# /'
else
	not_ok context_limit_refused "holders ${#hold[@]}, rc=$rc: $(tr '\n' ' ' <"$T_TMP/third.log")"
fi
ref1=$(refused_of d dev1)
[ -n "$ref0" ] && [ -n "$ref1" ] && [ "$ref1" -gt "$ref0" ] && ok context_limit_counted ||
	not_ok context_limit_counted "refused before $ref0 after $ref1"
for p in "${hold[@]}"; do kill_prog "$p"; done
for p in "${hold[@]}"; do { wait "$p"; } 2>/dev/null; done
if vrun fourth "$SL" -- ibv_devinfo && grep -q PORT_ACTIVE "$T_TMP/fourth.log"; then
	ok context_limit_freed
else
	not_ok context_limit_freed "$(tr '\n' ' ' <"$T_TMP/fourth.log")"
fi

# ---- 7. an opener waiting for a stopped daemon ends on SIGTERM / SIGINT -----------------
# (the daemon is SIGSTOPped; the program is past exec and waiting for its
# first reply; background jobs start with SIGINT ignored, so a small wrapper
# restores its default disposition first)
kill -STOP "$DPID"
for sig in TERM INT; do
	env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		python3 -c 'import signal, os, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$RUN" --socket "$SA" -- ibv_devinfo \
		>"$T_TMP/sig$sig.log" 2>&1 </dev/null &
	spid=$!
	wait_until '[ "$(cat "/proc/$spid/comm" 2>/dev/null)" = ibv_devinfo ] &&
		ls -l "/proc/$spid/fd" 2>/dev/null | grep -q "socket:"'
	kill -"$sig" "$spid"
	wait "$spid"
	rc=$?
	want=$((128 + $(kill -l "$sig")))
	if [ $rc = $want ]; then
		ok "blocked_open_sig$sig"
	else
		not_ok "blocked_open_sig$sig" "exit status $rc, expected $want: $(tr '\n' ' ' <"$T_TMP/sig$sig.log")"
	fi
done
kill -CONT "$DPID"

# ---- 8. clean stop -------------------------------------------------------------------------
d_stop d
if [ "$D_RC" = 0 ]; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "exit status $D_RC"
	tail -n 30 "$T_TMP/d.log" | sed 's/^/#   /'
fi
t_done
