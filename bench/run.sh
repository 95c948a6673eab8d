#!/usr/bin/env bash
# vrdma benchmark harness (not part of make test). One command:
#
#   bench/run.sh [--quick] [--only ref|vrdma] [--check] [--out DIR]
#
# 1. references measured in the same run: kernel TCP over loopback (iperf3,
#    one stream), TCP ping-pong latency (sockperf, 64 B), memcpy bandwidth
#    on one core (bench/memcpy_bw.c);
# 2. vrdma: for each --poll-us value (default "0 50") a daemon with two
#    devices on its built-in switch, then perftest through build/bin/vrdma-run,
#    server on device 1 and client on device 0, two processes;
#    then, on the first daemon, the cost of ibv_reg_mr per GiB
#    (bench/reg_mr_cost.c: zero-copy through vrdma-run's shared-heap
#    allocator for malloc / memalign / mmap buffers, the copy path for
#    private memory, against pvrdma's documented 0.5 s/GiB);
# 3. a markdown table (absolute numbers and ratios against the references),
#    the raw logs and every command line in bench/results/<date>/, and the
#    table on stdout.
#
# If the vrdma data path is not usable (ibv_devinfo through vrdma-run shows
# no active port, or ibv_rc_pingpong -g 0 does not complete), the table says
# "vrdma: not ready (reason)" and perftest is skipped. Every step runs under
# `timeout`; everything started is stopped on exit.
#
#   --quick        short runs (smoke test of the harness, numbers are noisy)
#   --only ref     references only; --only vrdma: vrdma only (ratios then "-")
#   --check        only build and check whether vrdma is ready (exit 0 if so)
#   --out DIR      results directory (default bench/results/<date>)
#
# Tunables (environment; see bench/README.md): BENCH_POLL ("0 50"),
# BENCH_REPEAT (runs per measurement, best kept; 3), BENCH_GID (perftest -x
# and pingpong -g GID index; 0), BENCH_BW_SIZES (bytes, or "all" for
# perftest -a), BENCH_BW_BYTES (bytes per bw run, sets -n, clamped to
# 100..BENCH_BW_MAX_ITERS), BENCH_BW_ITERS (-n with "all"), BENCH_LAT_SIZES,
# BENCH_LAT_ITERS, BENCH_TCP_SEC, BENCH_LAT_SEC, BENCH_MEMCPY_SEC,
# BENCH_DEV_OPTS (appended to each --device, e.g. ",mtu=9000"),
# BENCH_SCHED (the daemon's --sched, e.g. "fifo:10"; default: not given),
# BENCH_PERFTEST_ARGS (extra perftest arguments, e.g. "-e"),
# BENCH_PAIR_TIMEOUT (seconds per perftest pair; 90), BENCH_REG_SIZES (MiB
# per reg_mr_cost case, "64 256 1024"; --quick: "64 256"; "" skips it),
# BENCH_FLOOR_ITERS (round trips per wake-up floor; 200000), BENCH_QPS (QPs
# created by bench/qp_create.c; 1000), BENCH_NO_MAKE=1,
# BENCH_NO_APT=1.
set -u
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
bin=$top/build/bin

quick=0 only="" check_only=0 out=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--only) only=${2:?--only needs ref or vrdma}; shift ;;
	--check) check_only=1 ;;
	--out) out=${2:?--out needs a directory}; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
case $only in "" | ref | vrdma) ;; *) echo "bench/run.sh: --only ref|vrdma" >&2; exit 2 ;; esac

if [ $quick = 1 ]; then
	: "${BENCH_TCP_SEC:=3}" "${BENCH_LAT_SEC:=3}" "${BENCH_MEMCPY_SEC:=0.5}"
	: "${BENCH_BW_BYTES:=67108864}" "${BENCH_LAT_ITERS:=500}"
	: "${BENCH_BW_SIZES:=64 4096 65536 1048576}" "${BENCH_LAT_SIZES:=64 4096}"
	: "${BENCH_REPEAT:=1}" "${BENCH_BW_MAX_ITERS:=5000}" "${BENCH_REG_SIZES=64 256}"
	: "${BENCH_FLOOR_ITERS:=20000}"
fi
: "${BENCH_POLL:=0 50}"
: "${BENCH_REPEAT:=3}"
: "${BENCH_GID:=0}"
: "${BENCH_BW_SIZES:=64 256 1024 4096 16384 65536 262144 1048576 8388608}"
: "${BENCH_BW_BYTES:=536870912}"
: "${BENCH_BW_ITERS:=1000}"
: "${BENCH_BW_MAX_ITERS:=100000}"
: "${BENCH_LAT_SIZES:=64 1024 4096 65536}"
: "${BENCH_LAT_ITERS:=2000}"
: "${BENCH_TCP_SEC:=10}"
: "${BENCH_LAT_SEC:=10}"
: "${BENCH_MEMCPY_SEC:=2}"
: "${BENCH_FLOOR_ITERS:=200000}"
: "${BENCH_QPS:=1000}"
: "${BENCH_DEV_OPTS:=}"
: "${BENCH_PERFTEST_ARGS:=}"
: "${BENCH_PAIR_TIMEOUT:=90}"
: "${BENCH_REG_SIZES=64 256 1024}"
: "${BENCH_PORT:=18599}"	# first pair uses the next free port

stamp=$(date +%Y-%m-%d_%H%M%S)
[ -n "$out" ] || out=$top/bench/results/$stamp
mkdir -p "$out/logs" || exit 1
out=$(cd "$out" && pwd)
tsv=$out/results.tsv		# section mode test size metric value run
cmds=$out/commands.txt
: >"$tsv"
: >"$cmds"
tmp=$(mktemp -d /tmp/vrdma-bench.XXXXXX)

# ---------------------------------------------------------------- helpers
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=()
	rm -rf "$tmp"
}
trap cleanup EXIT
# fd 3: the script's stderr, also inside functions whose output is redirected.
exec 3>&2
trap 'echo "bench/run.sh: interrupted" >&3; exit 130' INT TERM

log() { echo "bench: $*" >&3; }
# rec SECTION MODE TEST SIZE METRIC VALUE: one result of repeat $run.
run=1
rec() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$run" >>"$tsv"; }
# cmd LINE: record a command line (what a user would type to repeat it).
cmd() { local l="$*"; echo "${l//"$tmp"/\$TMP}" >>"$cmds"; }
# stop PID: TERM, up to 5 s, then KILL; forget it.
stop() {
	local p=$1 q
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	local keep=()
	for q in "${pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	pids=("${keep[@]}")
}
# run_fg CMD...: run CMD in the background and wait for it, so that a TERM
# or INT reaches the trap at once (bash runs traps only between foreground
# commands); the cleanup stops CMD. Returns CMD's status.
run_fg() {
	local p rc q keep=()
	"$@" &
	p=$!
	pids+=("$p")
	wait "$p"
	rc=$?
	for q in "${pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	pids=("${keep[@]}")
	return $rc
}
# wait_port PORT PID: until something listens on TCP PORT (max 15 s) and PID lives.
wait_port() {
	for _ in $(seq 150); do
		kill -0 "$2" 2>/dev/null || return 1
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}
# wait_exit PID SECONDS: wait for PID to exit; kill it after SECONDS. Returns its status.
wait_exit() {
	local p=$1 n=$(($2 * 10)) rc
	while [ $n -gt 0 ] && kill -0 "$p" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	kill -0 "$p" 2>/dev/null && { stop "$p"; return 124; }
	wait "$p"
	rc=$?
	local keep=() q
	for q in "${pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	pids=("${keep[@]}")
	return $rc
}
# last_line FILE: last non-empty line, one line, for "reason" texts.
last_line() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1 | tr -d '\r' | cut -c1-160; }
# next_port: the next TCP port after BENCH_PORT that nothing uses (tests
# running at the same time use perftest's 18515 and a few above).
next_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		BENCH_PORT=$((BENCH_PORT + 1))
		[ $BENCH_PORT -gt 19999 ] && BENCH_PORT=18600
		ss -Htan "( sport = :$BENCH_PORT or dport = :$BENCH_PORT )" 2>/dev/null |
			grep -q . || return 0
	done
}

PY=/usr/bin/python3
[ -x $PY ] || PY=python3

# ------------------------------------------------------------- 0. setup
install_deps() {
	local want="iperf3 sockperf perftest ibverbs-utils python3 iproute2 gcc make gnuplot-nox" p missing=()
	[ "${BENCH_NO_APT:-0}" = 1 ] && return 0
	for p in $want; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		log "missing packages ${missing[*]} (run as root to install them)"
		return 1
	fi
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# iperf3 asks whether to start a daemon: no.
	echo "iperf3 iperf3/start_daemon boolean false" | debconf-set-selections 2>/dev/null
	timeout 300 apt-get update -qq >/dev/null 2>&1
	timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>"$out/logs/apt.log" 2>&1 || { log "apt-get failed, see $out/logs/apt.log"; return 1; }
}
install_deps
# Project dependencies (build set) too, through the project's own script.
[ "${BENCH_NO_APT:-0}" = 1 ] || timeout 900 scripts/deps.sh build >>"$out/logs/apt.log" 2>&1

# Build, then run vrdma from a private copy of its binaries ($tmp/vrdma) so
# that a rebuild of build/ during the run (other work in the tree) cannot
# swap libraries under a test. A copy caught mid-link is not valid ELF:
# rebuild and copy again (3 tries).
build_note=""
snapshot() {
	local f ok=1
	rm -rf "$tmp/vrdma"
	mkdir -p "$tmp/vrdma/bin" "$tmp/vrdma/lib"
	for f in bin/vhost-user-rdma bin/vrdma-run lib/libibverbs.so.1 lib/libvrdma.so \
		lib/libvrdma-shmalloc.so; do
		[ -e "build/$f" ] || continue
		cp "build/$f" "$tmp/vrdma/$f" && readelf -h "$tmp/vrdma/$f" >/dev/null 2>&1 || ok=0
	done
	[ $ok = 1 ]
}
if [ "$only" != ref ]; then
	for try in 1 2 3; do
		if [ "${BENCH_NO_MAKE:-0}" != 1 ]; then
			log "make (log: $out/logs/make.log)"
			if run_fg timeout 900 make -j"$(nproc)" >"$out/logs/make.log" 2>&1; then
				build_note=""
			else
				build_note="make failed ($(last_line "$out/logs/make.log")); using the binaries already in build/"
			fi
		fi
		snapshot && break
		build_note="build/ changed while copying it (try $try)"
		sleep 15
	done
	bin=$tmp/vrdma/bin
	sha=$(sha256sum "$tmp/vrdma/lib/libibverbs.so.1" "$tmp/vrdma/bin/vhost-user-rdma" 2>/dev/null |
		awk '{ printf "%s%s %s", sep, substr($1, 1, 12), $2; sep = ", " }')
fi
mkdir -p build/bench
cmd "gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/reg_mr_cost.c -libverbs -o build/bench/reg_mr_cost"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/reg_mr_cost.c -libverbs \
	-o build/bench/reg_mr_cost 2>"$out/logs/reg_mr_cost_build.log" || log "reg_mr_cost did not build"
cmd "gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/qp_create.c -libverbs -o build/bench/qp_create"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/qp_create.c -libverbs \
	-o build/bench/qp_create 2>"$out/logs/qp_create_build.log" || log "qp_create did not build"
cmd "gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/memcpy_bw.c -o build/bench/memcpy_bw"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/memcpy_bw.c \
	-o build/bench/memcpy_bw 2>"$out/logs/memcpy_build.log" || log "memcpy_bw did not build"
cmd "gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/pingpong_floor.c -o build/bench/pingpong_floor"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE bench/pingpong_floor.c \
	-o build/bench/pingpong_floor 2>"$out/logs/pingpong_build.log" || log "pingpong_floor did not build"

{
	echo "date: $(date -Is)"
	echo "host: $(uname -srm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "git: $(git rev-parse --short HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -q . && echo '(+ uncommitted changes)')"
	echo "versions: $(iperf3 --version 2>/dev/null | head -n1); sockperf $(sockperf --version 2>/dev/null | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -n1); perftest $(dpkg-query -W -f='${Version}' perftest 2>/dev/null); gcc $(gcc -dumpfullversion 2>/dev/null)"
	[ -n "$build_note" ] && echo "build: $build_note"
	[ -n "${sha:-}" ] && echo "vrdma binaries (sha256): ${sha//"$tmp"\/vrdma\//}"
} >"$out/env.txt"

# ------------------------------------------------------------- 1. references
run_iperf3() {
	local port=15201 srv cl=$out/logs/iperf3.r$run.client.json
	cmd "iperf3 -s -1 -p $port -B 127.0.0.1 &  iperf3 -c 127.0.0.1 -p $port -t $BENCH_TCP_SEC -J"
	timeout -k 5 $((BENCH_TCP_SEC + 60)) iperf3 -s -1 -p $port -B 127.0.0.1 \
		>"$out/logs/iperf3.r$run.server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	if ! wait_port $port $srv; then
		rec ref - iperf3 - error "server did not start"
		stop $srv
		return
	fi
	run_fg timeout -k 5 $((BENCH_TCP_SEC + 30)) iperf3 -c 127.0.0.1 -p $port \
		-t "$BENCH_TCP_SEC" -J >"$cl" 2>"$out/logs/iperf3.r$run.client.err"
	wait_exit $srv 10
	local bps
	bps=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"])' "$cl" 2>/dev/null)
	if [ -n "$bps" ]; then
		rec ref - iperf3 - bps "$bps"
	else
		rec ref - iperf3 - error "$(last_line "$out/logs/iperf3.r$run.client.err")"
	fi
}

run_sockperf() {
	local port=11711 srv cl=$out/logs/sockperf.r$run.client.log
	cmd "sockperf sr --tcp -i 127.0.0.1 -p $port &  sockperf pp --tcp -i 127.0.0.1 -p $port -m 64 -t $BENCH_LAT_SEC"
	timeout -k 5 $((BENCH_LAT_SEC + 60)) sockperf sr --tcp -i 127.0.0.1 -p $port \
		>"$out/logs/sockperf.r$run.server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	if ! wait_port $port $srv; then
		rec ref - sockperf - error "server did not start"
		stop $srv
		return
	fi
	run_fg timeout -k 5 $((BENCH_LAT_SEC + 30)) sockperf pp --tcp -i 127.0.0.1 -p $port \
		-m 64 -t "$BENCH_LAT_SEC" >"$cl" 2>&1
	stop $srv
	# Strip colour escapes, then pick avg / median / p99 (one-way: RTT/2).
	sed -i 's/\x1b\[[0-9;]*m//g' "$cl"
	local avg p50 p99
	avg=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$cl" | tail -n1)
	p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$cl" | tail -n1)
	p99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' "$cl" | tail -n1)
	if [ -n "$avg" ]; then
		rec ref - sockperf 64 avg_us "$avg"
		[ -n "$p50" ] && rec ref - sockperf 64 p50_us "$p50"
		[ -n "$p99" ] && rec ref - sockperf 64 p99_us "$p99"
	else
		rec ref - sockperf 64 error "$(last_line "$cl")"
	fi
}

run_memcpy() {
	local l=$out/logs/memcpy_bw.log
	cmd "build/bench/memcpy_bw -t $BENCH_MEMCPY_SEC"
	if ! run_fg timeout -k 5 $((${BENCH_MEMCPY_SEC%.*} * 4 + 60)) build/bench/memcpy_bw \
		-t "$BENCH_MEMCPY_SEC" >"$l" 2>&1; then
		rec ref - memcpy - error "$(last_line "$l")"
		return
	fi
	local k v
	while read -r k v; do
		case $k in memcpy_*_GBps) rec ref - memcpy - "$k" "$v" ;; esac
	done <"$l"
}

# run_floor MODE: latency floor of a wake-up mechanism between two
# processes (bench/pingpong_floor.c: eventfd = interrupt mode, spin = shared
# memory busy-polling), BENCH_FLOOR_ITERS round trips, one-way = RTT/2.
run_floor() {
	local m=$1 l=$out/logs/pingpong_$1.r$run.log k v
	cmd "build/bench/pingpong_floor -m $m -n $BENCH_FLOOR_ITERS"
	if ! run_fg timeout -k 5 120 build/bench/pingpong_floor -m "$m" -n "$BENCH_FLOOR_ITERS" \
		>"$l" 2>&1; then
		rec ref - "floor_$m" 64 error "$(last_line "$l")"
		return
	fi
	while read -r k v; do
		case $k in pingpong_"$m"_*_us) k=${k#pingpong_"$m"_}; rec ref - "floor_$m" 64 "$k" "$v" ;; esac
	done <"$l"
}

# ------------------------------------------------------------- 2. vrdma
daemon_pid=""
cur_mode=""
sock0="" sock1=""
# start_daemon POLL_US: two devices on the switch; sets sock0/sock1/daemon_pid.
start_daemon() {
	local p=$1 d=$tmp/poll$1
	mkdir -p "$d"
	sock0=$d/vrdma0.sock sock1=$d/vrdma1.sock
	local args=(--device "socket=$sock0,mac=02:56:52:00:00:01,ip=10.77.0.1/24$BENCH_DEV_OPTS"
		--device "socket=$sock1,mac=02:56:52:00:00:02,ip=10.77.0.2/24$BENCH_DEV_OPTS"
		--poll-us "$p" --stats --pidfile "$d/pid")
	[ -n "${BENCH_SCHED:-}" ] && args+=(--sched "$BENCH_SCHED")
	cmd "build/bin/vhost-user-rdma ${args[*]} &"
	"$bin/vhost-user-rdma" "${args[@]}" >"$out/logs/daemon.poll$p.log" 2>&1 &
	daemon_pid=$!
	pids+=("$daemon_pid")
	for _ in $(seq 100); do
		[ -s "$d/pid" ] && return 0
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	stop "$daemon_pid"
	daemon_pid=""
}

# vrun SOCK CMD...: run CMD through vrdma-run on device SOCK.
vrun() { local s=$1; shift; "$bin/vrdma-run" --socket "$s" -- "$@"; }

# pair NAME TIMEOUT -- ARGS...: one verbs test as two processes, server on
# device 1, client on device 0 (connects to 127.0.0.1). Logs in
# $out/logs/NAME.{server,client}.log. Returns 0 if both succeed; sets
# pair_reason otherwise.
pair_reason=""
pair() {
	local name=$1 t=$2 srv rc_c rc_s
	shift 3
	next_port
	local port=$BENCH_PORT
	local sl=$out/logs/$name.server.log cl=$out/logs/$name.client.log
	cmd "build/bin/vrdma-run --socket DEV1 -- $* -p $port &  build/bin/vrdma-run --socket DEV0 -- $* -p $port 127.0.0.1"
	timeout -k 5 "$t" "$bin/vrdma-run" --socket "$sock1" -- stdbuf -oL "$@" -p "$port" \
		>"$sl" 2>&1 &
	srv=$!
	pids+=("$srv")
	if ! wait_port "$port" "$srv"; then
		wait_exit "$srv" 1
		pair_reason="server did not listen: $(last_line "$sl")"
		return 1
	fi
	run_fg timeout -k 5 "$t" "$bin/vrdma-run" --socket "$sock0" -- stdbuf -oL "$@" -p "$port" \
		127.0.0.1 >"$cl" 2>&1
	rc_c=$?
	wait_exit "$srv" 15
	rc_s=$?
	pair_reason=""
	[ $rc_c = 124 ] && pair_reason="client timed out after ${t}s: $(last_line "$cl")"
	[ -z "$pair_reason" ] && [ $rc_c != 0 ] && pair_reason="client exit $rc_c: $(last_line "$cl")"
	[ -z "$pair_reason" ] && [ $rc_s != 0 ] && pair_reason="server exit $rc_s: $(last_line "$sl")"
	[ -z "$pair_reason" ]
}

# vrdma_ready MODE: sets ready_reason (empty when ready).
ready_reason=""
vrdma_ready() {
	local m=$1 l=$out/logs/$1.ibv_devinfo.log
	ready_reason=""
	for f in vhost-user-rdma vrdma-run; do
		[ -x "$bin/$f" ] || { ready_reason="build/bin/$f missing"; return 1; }
	done
	[ -e "$bin/../lib/libibverbs.so.1" ] || { ready_reason="build/lib/libibverbs.so.1 missing"; return 1; }
	cmd "build/bin/vrdma-run --socket DEV0 -- ibv_devinfo -v"
	run_fg timeout -k 5 30 "$bin/vrdma-run" --socket "$sock0" -- ibv_devinfo -v >"$l" 2>&1
	local rc=$?
	if [ $rc != 0 ] || ! grep -q PORT_ACTIVE "$l"; then
		ready_reason="ibv_devinfo through vrdma-run: $( [ $rc = 124 ] && echo 'timed out' || echo "exit $rc, $(last_line "$l")")"
		return 1
	fi
	if ! pair "$m.ibv_rc_pingpong" 60 -- ibv_rc_pingpong -g "$BENCH_GID" -n 1000; then
		ready_reason="ibv_rc_pingpong -g $BENCH_GID: $pair_reason"
		return 1
	fi
	grep -q 'bytes in' "$out/logs/$m.ibv_rc_pingpong.client.log" ||
		{ ready_reason="ibv_rc_pingpong printed no result"; return 1; }
	return 0
}

# parse_perftest MODE TEST SIZE KIND LOG: records the table rows of LOG.
parse_perftest() {
	local m=$1 t=$2 kind=$4 l=$5
	# Rows: whitespace, #bytes, #iterations, numbers...
	awk -v m="$m" -v t="$t" -v kind="$kind" -v run="$run" '
		/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+/ {
			if (kind == "bw" && NF >= 5) {
				printf "vrdma\t%s\t%s\t%s\tpeak_MiBps\t%s\t%s\n", m, t, $1, $3, run
				printf "vrdma\t%s\t%s\t%s\tavg_MiBps\t%s\t%s\n", m, t, $1, $4, run
				printf "vrdma\t%s\t%s\t%s\tMpps\t%s\t%s\n", m, t, $1, $5, run
			} else if (kind == "lat" && NF >= 9) {
				printf "vrdma\t%s\t%s\t%s\tmin_us\t%s\t%s\n", m, t, $1, $3, run
				printf "vrdma\t%s\t%s\t%s\ttypical_us\t%s\t%s\n", m, t, $1, $5, run
				printf "vrdma\t%s\t%s\t%s\tavg_us\t%s\t%s\n", m, t, $1, $6, run
				printf "vrdma\t%s\t%s\t%s\tp99_us\t%s\t%s\n", m, t, $1, $8, run
			}
		}' "$l" >>"$tsv"
}

# daemon_retx: retransmits counted by the daemon so far (all devices): asks
# for its counters (SIGUSR1, printed to its log) and reads the last block.
daemon_retx() {
	local l=$out/logs/daemon.$cur_mode.log n0 n
	n0=$(grep -c '^faults' "$l" 2>/dev/null)
	kill -USR1 "$daemon_pid" 2>/dev/null || { echo 0; return; }
	for _ in $(seq 20); do
		n=$(grep -c '^faults' "$l" 2>/dev/null)
		[ "${n:-0}" -gt "${n0:-0}" ] && break
		sleep 0.1
	done
	awk '/^device dev0 / { r = 0 }
	     { for (i = 1; i < NF; i++) if ($i == "retransmits") r += $(i + 1) }
	     END { print r + 0 }' "$l"
}

# cpu_ticks PID: utime+stime of PID in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# perftest_once MODE TEST SIZE KIND ARGS...: one server/client pair (repeat
# $run); records its table, the daemon's retransmits and CPU share, or the
# error. Returns 0 on success, 1 on a failure, 2 on a hang (timeout), 3 if
# the daemon died.
perftest_once() {
	local m=$1 t=$2 s=$3 kind=$4 retx0 before after wall0 wall1
	shift 4
	log "$m: $t $* (run $run/$BENCH_REPEAT)"
	retx0=$(daemon_retx)
	before=$(cpu_ticks "$daemon_pid")
	wall0=$(date +%s.%N)
	if pair "$m.$t.$s.r$run" "$BENCH_PAIR_TIMEOUT" -- "$t" "$@"; then
		wall1=$(date +%s.%N)
		after=$(cpu_ticks "$daemon_pid")
		parse_perftest "$m" "$t" "$s" "$kind" "$out/logs/$m.$t.$s.r$run.client.log"
		rec vrdma "$m" "$t" "$s" retransmits $(($(daemon_retx) - retx0))
		# Daemon CPU seconds per second during the pair (setup included).
		rec vrdma "$m" "$t" "$s" daemon_cpu \
			"$(awk -v a="$before" -v b="$after" -v w0="$wall0" -v w1="$wall1" \
				-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz / (w1 - w0) }')"
		return 0
	fi
	rec vrdma "$m" "$t" "$s" error "$pair_reason"
	log "$m: $t $s failed: $pair_reason"
	# A dead daemon fails everything after it.
	if ! kill -0 "$daemon_pid" 2>/dev/null; then
		rec vrdma "$m" - - error "daemon died: $(last_line "$out/logs/daemon.$m.log")"
		return 3
	fi
	case $pair_reason in *"timed out"*) return 2 ;; esac
	return 1
}

run_perftest() {
	local m=$1 t s n kind sizes
	for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
		case $t in *_bw) kind=bw ;; *) kind=lat ;; esac
		if [ $kind = bw ]; then sizes=$BENCH_BW_SIZES; else sizes=$BENCH_LAT_SIZES; fi
		for s in $sizes; do
			# shellcheck disable=SC2206 # BENCH_PERFTEST_ARGS is a word list
			local args=(-F -x "$BENCH_GID" $BENCH_PERFTEST_ARGS)
			if [ "$s" = all ]; then
				args+=(-a -n "$BENCH_BW_ITERS")
			elif [ $kind = bw ]; then
				n=$((BENCH_BW_BYTES / s))
				[ $n -gt "$BENCH_BW_MAX_ITERS" ] && n=$BENCH_BW_MAX_ITERS
				[ $n -lt 100 ] && n=100
				args+=(-s "$s" -n "$n")
			else
				args+=(-s "$s" -n "$BENCH_LAT_ITERS")
			fi
			# A pair that hung is not repeated (each hang costs
			# BENCH_PAIR_TIMEOUT); a dead daemon ends this mode.
			for run in $(seq "$BENCH_REPEAT"); do
				perftest_once "$m" "$t" "$s" "$kind" "${args[@]}"
				case $? in 2) break ;; 3) run=1; return ;; esac
			done
			run=1
		done
	done
}

# run_reg_mr MODE: ibv_reg_mr cost on device 0 (bench/reg_mr_cost.c, 3 runs
# per case, best and median recorded in s/GiB).
run_reg_mr() {
	local m=$1 l=$out/logs/reg_mr_cost.log
	[ -n "$BENCH_REG_SIZES" ] && [ -x build/bench/reg_mr_cost ] || return 0
	log "$m: ibv_reg_mr cost ($BENCH_REG_SIZES MiB)"
	# shellcheck disable=SC2086 # a list of sizes
	cmd "build/bin/vrdma-run --socket DEV0 -- build/bench/reg_mr_cost $BENCH_REG_SIZES"
	# shellcheck disable=SC2086
	if ! run_fg timeout -k 5 600 "$bin/vrdma-run" --socket "$sock0" -- \
		build/bench/reg_mr_cost $BENCH_REG_SIZES >"$l" 2>&1; then
		rec reg "$m" - - error "reg_mr_cost: $(last_line "$l")"
		return 0
	fi
	# kind MiB path reg BEST / MED s/GiB re-reg BEST / MED s/GiB dereg BEST / MED
	awk -v m="$m" '$3 == "MiB" && $NF == "intact" {
		printf "reg\t%s\t%s\t%s\tpath\t%s\n", m, $1, $2, $4
		printf "reg\t%s\t%s\t%s\treg_best\t%s\n", m, $1, $2, $6
		printf "reg\t%s\t%s\t%s\treg_med\t%s\n", m, $1, $2, $8
		printf "reg\t%s\t%s\t%s\trereg_med\t%s\n", m, $1, $2, $13
		printf "reg\t%s\t%s\t%s\tdereg_med\t%s\n", m, $1, $2, $18
	}' "$l" >>"$tsv"
}

# run_qp_create MODE: QP creation/destruction rate and the daemon's memory
# per QP on device 0 (bench/qp_create.c, BENCH_QPS QPs).
run_qp_create() {
	local m=$1 l=$out/logs/qp_create.log k v
	[ -x build/bench/qp_create ] || return 0
	log "$m: QP creation ($BENCH_QPS QPs)"
	cmd "build/bin/vrdma-run --socket DEV0 -- build/bench/qp_create -n $BENCH_QPS -p DAEMON_PID"
	if ! run_fg timeout -k 5 300 "$bin/vrdma-run" --socket "$sock0" -- \
		build/bench/qp_create -n "$BENCH_QPS" -p "$daemon_pid" >"$l" 2>&1; then
		rec qp "$m" - - error "qp_create: $(last_line "$l")"
		return 0
	fi
	while read -r k v; do rec qp "$m" - - "$k" "$v"; done <"$l"
}

run_vrdma() {
	local p m any_ready=1 reg_done=0
	for p in $BENCH_POLL; do
		m=poll$p
		cur_mode=$m
		log "$m: starting daemon (--poll-us $p)"
		if ! start_daemon "$p"; then
			rec vrdma "$m" - - notready "daemon did not start: $(last_line "$out/logs/daemon.$m.log")"
			stop_daemon
			any_ready=0
			continue
		fi
		if vrdma_ready "$m"; then
			rec vrdma "$m" - - ready yes
			[ $check_only = 1 ] || run_perftest "$m"
			if [ $check_only = 0 ] && [ $reg_done = 0 ]; then
				run_reg_mr "$m"
				run_qp_create "$m"
				reg_done=1
			fi
		else
			rec vrdma "$m" - - notready "$ready_reason"
			log "$m: not ready: $ready_reason"
			any_ready=0
		fi
		stop_daemon
	done
	return $((1 - any_ready))
}

# ------------------------------------------------------------- run
if [ $check_only = 1 ]; then
	run_vrdma
	rc=$?
	cut -f2,5,6 "$tsv"
	exit $rc
fi
if [ "$only" != vrdma ]; then
	for run in $(seq "$BENCH_REPEAT"); do
		log "references: iperf3 (${BENCH_TCP_SEC}s, run $run/$BENCH_REPEAT)"
		run_iperf3
		log "references: sockperf ping-pong 64 B (${BENCH_LAT_SEC}s, run $run/$BENCH_REPEAT)"
		run_sockperf
		log "references: eventfd and shared-memory spin ping-pong (run $run/$BENCH_REPEAT)"
		run_floor eventfd
		run_floor spin
	done
	run=1
	log "references: memcpy_bw"
	run_memcpy
fi
[ "$only" != ref ] && run_vrdma
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"

# ------------------------------------------------------------- 3. report
$PY - "$tsv" "$out/env.txt" "$cmds" "$BENCH_POLL" >"$out/table.md" <<'EOF'
import sys, collections
tsv, envf, cmdf, polls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
modes = ["poll" + m for m in polls]

# ref[test][run][metric], vr[(test, size)][mode][run][metric], notes[mode]
ref = collections.defaultdict(lambda: collections.defaultdict(dict))
vr = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(dict)))
notes = collections.defaultdict(list)
reg = collections.defaultdict(dict)   # (kind, MiB) -> metric -> value
reg_err = []
qp = {}                               # qp_create metric -> value
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    if len(f) == 6:
        f.append("1")
    if len(f) != 7:
        continue
    sec, mode, test, size, metric, val, run = f
    val = val.replace("|", "/")
    if sec == "qp":
        qp[metric] = val
        continue
    if sec == "reg":
        if metric == "error":
            reg_err.append(val)
        else:
            reg[(test, size)][metric] = val
        continue
    if sec == "ref":
        ref[test][run][metric] = val
    elif test == "-":
        notes[mode].append((metric, val))
    else:
        vr[(test, size)][mode][run][metric] = val

def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None

def fmt(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"

def ratio(a, b, d=3):
    return "-" if a is None or not b else f"{a / b:.{d}f}"

def size_str(s):
    if not str(s).isdigit():
        return str(s)
    s = int(s)
    for unit, v in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= v and s % v == 0:
            return f"{s // v} {unit}"
    return f"{s} B"

def best(runs, key, bigger):
    """The metrics of the best run (by key), the number of good runs, the
    last error; runs without the key are failures."""
    good = [r for r in runs.values() if num(r.get(key)) is not None]
    errs = [r["error"] for r in runs.values() if "error" in r]
    if not good:
        return None, 0, (errs[-1] if errs else None)
    pick = (max if bigger else min)(good, key=lambda r: num(r[key]))
    return pick, len(good), (errs[-1] if errs else None)

o = []
p = o.append
p("# vrdma benchmark\n")
for line in open(envf):
    p(f"- {line.strip()}")
p("")

# ---- references
ip, ip_n, ip_err = best(ref["iperf3"], "bps", True)
spk, sp_n, sp_err = best(ref["sockperf"], "p50_us", False)
tcp_bps = num(ip["bps"]) if ip else None
tcp = tcp_bps / 8e9 if tcp_bps else None
sp = {k: num(spk.get(k)) if spk else None for k in ("avg_us", "p50_us", "p99_us")}
mcr = ref["memcpy"].get("1", {})
mc = {k: num(mcr.get(f"memcpy_{k}_GBps")) for k in ("4k_hot", "1m_hot", "1m_cold", "rand_4k_cold")}

p("## References (same run)\n")
p("Best of the repeats (iperf3: highest throughput; sockperf: lowest median); "
  "every run is in results.tsv and logs/.\n")
p("| reference | value | runs |")
p("|---|---:|---|")
if tcp_bps:
    allr = ", ".join(f"{num(r['bps']) / 1e9:.2f}" for r in ref["iperf3"].values() if "bps" in r)
    p(f"| kernel TCP loopback, iperf3, 1 stream | {tcp_bps / 1e9:.2f} Gbit/s = {tcp:.3f} GB/s | {allr} Gbit/s |")
else:
    p(f"| kernel TCP loopback, iperf3 | {ip_err or 'not measured'} | |")
if sp["avg_us"] is not None:
    allr = ", ".join(f"{r.get('p50_us')}/{r.get('avg_us')}" for r in ref["sockperf"].values() if "avg_us" in r)
    p(f"| TCP ping-pong 64 B, sockperf, one-way latency | median {fmt(sp['p50_us'])} us, avg {fmt(sp['avg_us'])} us, p99 {fmt(sp['p99_us'])} us | median/avg {allr} us |")
else:
    p(f"| TCP ping-pong 64 B, sockperf | {sp_err or 'not measured'} | |")
fl = {}
for fm, label in (("eventfd", "eventfd ping-pong, two processes (interrupt-mode floor)"),
                  ("spin", "shared-memory spin ping-pong, two processes (busy-poll floor)")):
    fk, fn, ferr = best(ref.get(f"floor_{fm}", {}), "p50_us", False)
    fl[fm] = num(fk.get("p50_us")) if fk else None
    if fk:
        p(f"| {label}, one-way | median {fmt(fl[fm])} us, avg {fmt(num(fk.get('avg_us')))} us, p99 {fmt(num(fk.get('p99_us')))} us | {fn} runs |")
    else:
        p(f"| {label} | {ferr or 'not measured'} | |")
for k, label in (("4k_hot", "4 KiB hot"), ("1m_hot", "1 MiB hot"), ("1m_cold", "1 MiB cold"), ("rand_4k_cold", "random 4 KiB cold")):
    p(f"| memcpy {label}, one core | {fmt(mc[k])} GB/s | best 1 ms round |")
p("")

# ---- vrdma status
p("## vrdma status\n")
for m in modes:
    st = notes.get(m, [])
    nr = [v for k, v in st if k == "notready"]
    if nr:
        txt = "vrdma: not ready (" + "; ".join(nr) + ")"
    elif st:
        txt = "; ".join("ready" if k == "ready" else v for k, v in st)
    else:
        txt = "not run"
    p(f"- `--poll-us {m[4:]}`: {txt}")
p("")

def sort_key(k):
    return (k[0], int(k[1]) if k[1].isdigit() else 0)

bw_rows = sorted((k for k in vr if k[0].endswith("_bw")), key=sort_key)
lat_rows = sorted((k for k in vr if k[0].endswith("_lat")), key=sort_key)

def pick(t, s, m):
    runs = vr.get((t, s), {}).get(m, {})
    if t.endswith("_bw"):
        return best(runs, "avg_MiBps", True)
    return best(runs, "typical_us", False)

def bw_gb(m, t, s):
    r = pick(t, s, m)[0]
    return num(r["avg_MiBps"]) * 1048576 / 1e9 if r else None

def lat(m, t, s, k):
    r = pick(t, s, m)[0]
    return num(r.get(k)) if r else None

if bw_rows or lat_rows:
    p("## Headline ratios\n")
    p("vrdma divided by the reference measured in the same run (higher is better "
      "for bandwidth, lower is better for latency).\n")
    p("| ratio | " + " | ".join(f"--poll-us {m[4:]}" for m in modes) + " |")
    p("|---|" + "---:|" * len(modes))
    for t in ("ib_write_bw", "ib_send_bw", "ib_read_bw"):
        p(f"| {t} 64 KiB / iperf3 TCP | " + " | ".join(ratio(bw_gb(m, t, "65536"), tcp) for m in modes) + " |")
    bests = {}
    for m in modes:
        c = [(bw_gb(m, t, s), t, s) for t, s in bw_rows if bw_gb(m, t, s) is not None]
        bests[m] = max(c) if c else None
    p("| best vrdma bw (any test, any size) / iperf3 TCP | " + " | ".join(
        "-" if not bests[m] else f"{ratio(bests[m][0], tcp)} ({bests[m][1]} {size_str(bests[m][2])}, {bests[m][0]:.3f} GB/s)"
        for m in modes) + " |")
    p("| best vrdma bw / memcpy 1 MiB cold | " + " | ".join(
        "-" if not bests[m] else ratio(bests[m][0], mc["1m_cold"]) for m in modes) + " |")
    for t in ("ib_send_lat", "ib_write_lat"):
        p(f"| {t} 64 B median / sockperf median | " + " | ".join(ratio(lat(m, t, "64", "typical_us"), sp["p50_us"], 2) for m in modes) + " |")
        p(f"| {t} 64 B avg / sockperf avg | " + " | ".join(ratio(lat(m, t, "64", "avg_us"), sp["avg_us"], 2) for m in modes) + " |")
    # the floor of the mode's own wake-up: eventfd in interrupt mode (poll 0), spin when polling
    floor = lambda m: fl.get("eventfd") if m == "poll0" else fl.get("spin")
    p("| ib_write_lat 64 B median / wake-up floor median (eventfd at poll 0, spin otherwise) | " + " | ".join(
        ratio(lat(m, "ib_write_lat", "64", "typical_us"), floor(m), 2) for m in modes) + " |")
    two = lambda x: 2 * x if x else None
    p("| ib_read_lat 64 B median / (2 x sockperf median) | " + " | ".join(
        ratio(lat(m, "ib_read_lat", "64", "typical_us"), two(sp["p50_us"]), 2) for m in modes) + " |")
    p("| ib_read_lat 64 B avg / (2 x sockperf avg) | " + " | ".join(
        ratio(lat(m, "ib_read_lat", "64", "avg_us"), two(sp["avg_us"]), 2) for m in modes) + " |")
    p("")

def fail_cell(err, ncols):
    return f" failed: {err or 'no result'} |" + " |" * (ncols - 1)

p("## vrdma bandwidth by message size\n")
p("Best run of the repeats (highest BW average). GB/s = 10^9 bytes/s (perftest's "
  "MB/sec are MiB/s, converted). x TCP = vrdma / kernel TCP loopback (iperf3); "
  "x memcpy = vrdma / memcpy 1 MiB cold; cpu = daemon CPU seconds per second "
  "during that run (setup included); retx = packets the daemon retransmitted "
  "during that run; ok = runs that completed / runs.\n")
if bw_rows:
    head, line = "| test | size |", "|---|---:|"
    for m in modes:
        head += f" {m} GB/s | x TCP | x memcpy | Mpps | cpu | retx | ok |"
        line += "---:|" * 7
    p(head)
    p(line)
    for t, s in bw_rows:
        r = f"| {t} | {size_str(s)} |"
        for m in modes:
            runs = vr[(t, s)].get(m, {})
            b, n, err = pick(t, s, m)
            if not b:
                r += fail_cell(err, 7) if runs else " - |" * 7
                continue
            gb = num(b["avg_MiBps"]) * 1048576 / 1e9
            r += (f" {gb:.3f} | {ratio(gb, tcp)} | {ratio(gb, mc['1m_cold'])} |"
                  f" {fmt(num(b.get('Mpps')), 3)} | {fmt(num(b.get('daemon_cpu')))} |"
                  f" {b.get('retransmits', '-')} | {n}/{len(runs)} |")
        p(r)
    p("")
    errs = [(t, s, m, pick(t, s, m)[2]) for t, s in bw_rows for m in modes if pick(t, s, m)[2]]
else:
    p("no bandwidth results (see vrdma status)\n")
    errs = []

p("## vrdma latency\n")
p("Best run of the repeats (lowest t_typical). perftest t_typical (its median) "
  "/ t_avg / 99th percentile in us. send and write report half the round trip, "
  "like sockperf; read reports a full round trip, so its ratios are against "
  "twice sockperf's one-way numbers. x TCP med = vrdma t_typical / sockperf "
  "median; x TCP avg = vrdma t_avg / sockperf average (64 B TCP).\n")
if lat_rows:
    head, line = "| test | size |", "|---|---:|"
    for m in modes:
        head += f" {m} typical | avg | p99 | x TCP med | x TCP avg | retx | ok |"
        line += "---:|" * 7
    p(head)
    p(line)
    for t, s in lat_rows:
        r = f"| {t} | {size_str(s)} |"
        k = 2 if t == "ib_read_lat" else 1
        for m in modes:
            runs = vr[(t, s)].get(m, {})
            b, n, err = pick(t, s, m)
            if not b:
                r += fail_cell(err, 7) if runs else " - |" * 7
                continue
            typ, avg = num(b.get("typical_us")), num(b.get("avg_us"))
            r += (f" {fmt(typ)} | {fmt(avg)} | {fmt(num(b.get('p99_us')))} |"
                  f" {ratio(typ, k * sp['p50_us'] if sp['p50_us'] else None, 2)} |"
                  f" {ratio(avg, k * sp['avg_us'] if sp['avg_us'] else None, 2)} |"
                  f" {b.get('retransmits', '-')} | {n}/{len(runs)} |")
        p(r)
    p("")
    errs += [(t, s, m, pick(t, s, m)[2]) for t, s in lat_rows for m in modes if pick(t, s, m)[2]]
else:
    p("no latency results (see vrdma status)\n")

p("## Memory registration (bench/reg_mr_cost.c)\n")
if reg:
    p("ibv_reg_mr of a fresh touched buffer, s/GiB, median of 3 runs (best in "
      "parentheses). malloc / memalign / mmap buffers come from vrdma-run's "
      "shared-heap allocator (zero-copy); private is anonymous memory from the raw "
      "mmap system call (the copy path), in the same run. x pvrdma = 0.5 s/GiB "
      "(QEMU pvrdma's documented cost) / ours.\n")
    p("| buffer | MiB | path | reg | x pvrdma | re-reg | dereg |")
    p("|---|---:|---|---:|---:|---:|---:|")
    for (k, mib), r in sorted(reg.items(), key=lambda x: (int(x[0][1]) if x[0][1].isdigit() else 0, x[0][0])):
        med = num(r.get("reg_med"))
        p(f"| {k} | {mib} | {r.get('path', '-')} | {fmt(med, 3)} ({fmt(num(r.get('reg_best')), 3)}) |"
          f" {ratio(0.5, med, 1)} | {fmt(num(r.get('rereg_med')), 3)} | {fmt(num(r.get('dereg_med')), 3)} |")
    p("")
elif reg_err:
    p("failed: " + "; ".join(reg_err) + "\n")
else:
    p("not run\n")

p("## QP creation (bench/qp_create.c)\n")
if "qps" in qp:
    p("| QPs | created/s (RC, to INIT) | destroyed/s | daemon VmRSS per QP |")
    p("|---:|---:|---:|---:|")
    rss = num(qp.get("daemon_rss_per_qp_bytes"))
    p(f"| {qp['qps']} | {qp.get('qp_create_per_s', '-')} | {qp.get('qp_destroy_per_s', '-')} | "
      f"{'-' if rss is None else f'{rss / 1024:.1f} KiB'} |")
    p("")
else:
    p(("failed: " + qp["error"]) if "error" in qp else "not run")
    p("")

if errs:
    p("## Failed runs\n")
    for t, s, m, e in errs:
        p(f"- {m} {t} {size_str(s)}: {e}")
    p("")

p("## Commands\n")
p("$TMP is a fresh temporary directory holding a copy of build/bin and build/lib "
  "(the daemon and vrdma-run below run from $TMP/vrdma/bin); DEV0/DEV1 are the "
  "two sockets (vrdma0.sock, vrdma1.sock) of the daemon started just before. "
  "perftest and ibv_rc_pingpong run under `stdbuf -oL` (line-buffered logs). "
  "Repeated runs repeat the same line.\n")
p("```")
prev = None
for line in open(cmdf):
    line = line.rstrip("\n")
    if line != prev:
        p(line)
    prev = line
p("```")
print("\n".join(o))
EOF
rc=$?
[ "$(dirname "$out")" = "$top/bench/results" ] &&
	ln -sfn "$(basename "$out")" "$top/bench/results/latest" 2>/dev/null
cat "$out/table.md"
echo
# bw.svg and lat.svg of this run (copy them to docs/img to update the docs)
"$top/bench/plot.sh" "$out" >/dev/null || echo "bench: no plots (bench/plot.sh failed)" >&2
echo "bench: results in $out (table.md, results.tsv, bw.svg, lat.svg, commands.txt, logs/)"
exit $rc
