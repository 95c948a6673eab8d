# Shell helpers for integration tests (source it). Each check prints
# "ok NAME" / "not ok NAME" / "skip NAME: why" like tests/harness.h.
#
# VRDMA_BUILD is the build tree under test (set by tests/run.sh).
: "${VRDMA_BUILD:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build}"
VRDMA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VRDMA_BUILD VRDMA_TOP
T_PROG=$(basename "$0" .sh)
T_FAILED=0
T_TMP=$(mktemp -d "/tmp/vrdma-${T_PROG}.XXXXXX")
T_PIDS=()

# The daemon under test runs as in production: unprivileged (--user nobody
# when the tests run as root) under its seccomp filter (on by default).
T_DAEMON_PRIV=()
# Like a run directory of the daemon's user, T_TMP belongs to it, so that
# the daemon removes its sockets and pid file on exit.
if [ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null; then
	T_DAEMON_PRIV=(--user nobody)
	chown nobody "$T_TMP"
fi

ok()      { echo "ok $T_PROG.$1"; }
not_ok()  { echo "not ok $T_PROG.$1"; shift; [ $# -gt 0 ] && echo "#   $*"; T_FAILED=1; }
skip()    { echo "skip $T_PROG.$1: $2"; }
# need NAME ITEM...: each ITEM is a path built by make (it starts with /) or
# a command installed by "scripts/deps.sh test". When one is missing this is
# "not ok NAME" saying what and how to get it (a missing tool is a failure,
# never a skip), and need returns 1.
need() {
	local n=$1 i miss=""
	shift
	for i in "$@"; do
		case "$i" in
		/*) [ -e "$i" ] || miss+=" $i (not built: run make)" ;;
		*) command -v "$i" >/dev/null ||
			miss+=" $i (not installed: run scripts/deps.sh test)" ;;
		esac
	done
	[ -z "$miss" ] && return 0
	not_ok "$n" "missing:$miss"
	return 1
}
# check NAME CMD...: ok if CMD succeeds.
check()   { local n=$1; shift; if "$@"; then ok "$n"; else not_ok "$n" "command failed: $*"; fi; }

# bg CMD...: start a background process, remembered for cleanup.
bg() { "$@" & T_PIDS+=($!); }

t_cleanup() {
	local p
	for p in "${T_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${T_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	# VRDMA_KEEP_TMP=1 keeps the logs of a run for a post-mortem
	if [ -n "${VRDMA_KEEP_TMP:-}" ]; then echo "# kept $T_TMP"; else rm -rf "$T_TMP"; fi
}
trap t_cleanup EXIT

# wait_cmd SECONDS CMD...: runs CMD every 0.05 s until it succeeds (returns
# 0) or SECONDS have passed (returns 1). It waits for a condition: SECONDS is
# only a generous bound.
wait_cmd() {
	local end=$((SECONDS + $1))
	shift
	while :; do
		"$@" && return 0
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.05
	done
}

# wait_until COND [SECONDS]: wait_cmd for the command line COND (evaluated
# each time; the caller's variables, not its "$1", are visible), 90 s bound:
# generous, since CI runs the ASan builds beside other work.
wait_until() { wait_cmd "${2:-90}" eval "$1"; }

# wait_for_file PATH [SECONDS]: wait until PATH exists.
wait_for_file() { wait_cmd "${2:-90}" test -e "$1"; }

# wait_for CMD...: wait until CMD succeeds (90 s bound).
wait_for() { wait_cmd 90 "$@"; }

# wait_gone PID [SECONDS]: wait until process PID has exited.
wait_gone() { wait_cmd "${2:-60}" _gone "$1"; }
_gone() { ! kill -0 "$1" 2>/dev/null; }

# count_fds PID: the number of open file descriptors of process PID.
count_fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

# listening PORT: something listens on TCP port PORT.
listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# next_port: a TCP port no socket uses, in PORT; PORT_BASE (default from the
# pid, so that tests running at once pick different ranges) + a counter, all
# below the kernel's ephemeral range (32768..), where a client socket of any
# program may hold a port. A server still races other programs for it: retry
# on "address in use" (see start_server in shared_device.sh).
: "${PORT_BASE:=$((20000 + ($$ * 7) % 7000))}"
PORT_NEXT=0
port_used() { ss -Htan "sport = :$1" 2>/dev/null | grep -q .; }
next_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		PORT=$((PORT_BASE + PORT_NEXT))
		PORT_NEXT=$(((PORT_NEXT + 1) % 5000))
		port_used "$PORT" || return 0
	done
	return 1
}

# wait_listening PORT PID [SECONDS]: wait (120 s bound) until something listens on PORT
# or process PID (the server) has exited; returns 0 when PORT listens.
wait_listening() {
	wait_cmd "${3:-120}" _listening_or_gone "$1" "$2"
	listening "$1"
}
_listening_or_gone() { listening "$1" || _gone "$2"; }

# stats_dump PID LOG: SIGUSR1 to daemon PID, wait for its next whole counter
# dump in LOG (the last line of a dump starts "faults dropped"), copy it to
# $T_TMP/stats. STATS_SEEN counts the dumps taken so far.
STATS_SEEN=0
stats_dump() {
	local pid=$1 log=$2 n
	kill -USR1 "$pid" 2>/dev/null || return 1
	wait_until 'n=$(grep -c "^faults dropped" "$log"); [ "$n" -gt "$STATS_SEEN" ]' || return 1
	awk -v k="$STATS_SEEN" '/^faults dropped/ { c++; if (c == k + 1) { print; exit } }
		c == k { print }' "$log" >"$T_TMP/stats"
	STATS_SEEN=$n
}

# stats_counter DEV KEY: counter KEY of device DEV (dev0, dev1, ...) in the
# last dump of stats_dump.
stats_counter() {
	awk -v dev="$1" -v key="$2" '
		/^device / { in_dev = ($2 == dev) }
		/^(switch|faults|uplink) / { in_dev = 0 }
		in_dev { for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }
	' "$T_TMP/stats"
}

# asan_preload LIB: PRELOAD becomes the sanitizer runtimes when LIB (one of
# our libraries) is an ASan build, so that unsanitized programs can load it;
# else empty.
asan_preload() {
	PRELOAD=""
	if [ -f "$1" ] && objdump -T "$1" 2>/dev/null | grep -q __asan_init; then
		PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
	fi
}

# vrun NAME SOCK... -- CMD...: CMD through vrdma-run ($RUN, default the
# build's) on the device(s) SOCK, PRELOAD first, bounded by STEP_TMO
# (default 60 s), output in $T_TMP/NAME.log. VRUN_NETNS runs it in that
# network namespace.
vrun() {
	local name=$1 socks=(); shift
	while [ "$1" != -- ]; do socks+=(--socket "$1"); shift; done
	shift
	${VRUN_NETNS:+ip netns exec "$VRUN_NETNS"} env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout -k 5 "${STEP_TMO:-60}" stdbuf -oL "${RUN:-$VRDMA_BUILD/bin/vrdma-run}" \
		"${socks[@]}" -- "$@" >"$T_TMP/$name.log" 2>&1 </dev/null
}

# vstart NAME SOCK CMD...: as vrun, one device, in the background (VPID: the
# timeout wrapper, also in T_PIDS). VPRE: a library preloaded in front of
# vrdma-run's own; VIN: the command's standard input.
vstart() {
	local name=$1 sock=$2 pre=${PRELOAD:-}; shift 2
	[ -n "${VPRE:-}" ] && pre="${pre:+$pre:}$VPRE"
	env ${pre:+LD_PRELOAD="$pre"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout -k 5 "${STEP_TMO:-60}" stdbuf -oL "${RUN:-$VRDMA_BUILD/bin/vrdma-run}" \
		--socket "$sock" -- "$@" >"$T_TMP/$name.log" 2>&1 <"${VIN:-/dev/null}" &
	VPID=$!
	T_PIDS+=($!)
}

# cm_ready PID: a process under PID (vstart's timeout wrapper) runs
# librdmacm's CM thread (it has connected to its device).
cm_ready() {
	local c
	for c in $(pgrep -P "$1") $(pgrep -P "$(pgrep -P "$1" | head -n1)" 2>/dev/null); do
		grep -qx vrdma-cm /proc/"$c"/task/*/comm 2>/dev/null && return 0
	done
	return 1
}

# nc_exchange NAME FROM_SOCK TO_SOCK TO_MAC COUNT SEED [args]: COUNT Ethernet
# frames from FROM's driver to TO's (vrdma-netcat, a receiver on TO, a sender
# on FROM); both verify every byte.
nc_exchange() {
	local name=$1 from=$2 to=$3 to_mac=$4 count=$5 seed=$6
	shift 6
	local nc="$VRDMA_BUILD/bin/vrdma-netcat" ready="$T_TMP/$name.ready" rpid rc_r rc_s
	rm -f "$ready"
	"$nc" --timeout-ms 120000 --socket "$to" --count "$count" --seed "$seed" --ready "$ready" "$@" recv \
		>"$T_TMP/$name.recv" 2>&1 &
	rpid=$!
	if ! wait_for_file "$ready"; then
		kill "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		not_ok "$name" "receiver did not come up: $(cat "$T_TMP/$name.recv")"
		return
	fi
	"$nc" --timeout-ms 120000 --socket "$from" --count "$count" --seed "$seed" --dst "$to_mac" "$@" send \
		>"$T_TMP/$name.send" 2>&1
	rc_s=$?
	wait "$rpid"
	rc_r=$?
	if [ $rc_s -eq 0 ] && [ $rc_r -eq 0 ] && grep -q "received $count frames" "$T_TMP/$name.recv"; then
		ok "$name"
	else
		not_ok "$name" "send rc=$rc_s recv rc=$rc_r:" \
			"$(cat "$T_TMP/$name.send" "$T_TMP/$name.recv" | tr '\n' ' ')"
	fi
}

# check_no_drops T DUMP: test T passes if the daemon's --stats dump in file
# DUMP shows no frame lost inside the daemon (receive or transmit queue full)
# and no QP or work-completion error.
check_no_drops() {
	local t=$1 dump=$2 bad
	bad=$(awk '$1 == "device" { dev = $2; next }
		/^[^ ]/ { dev = ""; next }
		dev != "" {
			for (i = 1; i < NF; i++) {
				k = $i; v = $(i + 1)
				if (v !~ /^[0-9]+$/ || v == 0) continue
				if (k == "rx_queue_full" || k == "tx_queue_full" || k == "qp_errors" ||
				    (k ~ /^wc_/ && k != "wc_success" && k != "wc_wr_flush_err" && k != "wc_ext"))
					printf "%s %s %s; ", dev, k, v
			}
		}' "$dump")
	if [ ! -s "$dump" ]; then
		not_ok "$t" "no final --stats dump"
	elif [ -z "$bad" ]; then
		ok "$t"
	else
		not_ok "$t" "$bad"
		sed 's/^/#   /' "$dump"
	fi
}

t_done() { exit $T_FAILED; }
