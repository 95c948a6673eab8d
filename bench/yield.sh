#!/usr/bin/env bash
# Programs that spin on their CQs, where the CPU is shared (not part of make
# test; docs/performance.md "Spinning programs on a busy machine"). Each
# program runs between two devices of a fresh daemon, in three settings:
#   idle   nothing else runs
#   loops  beside YIELD_LOOPS (2) CPU-bound shell loops
#   onecpu both processes of the program on CPU 1, the daemon on CPU 0
#          (two programs, or a program and its peer, that share one CPU)
#   allone the daemon and both processes on CPU 1 (a one-CPU host)
# optionally alternating with another built tree (--base), runs per setting
# and tree YIELD_RUNS (3); prints median (range) per program, setting and
# tree. Programs (perftest -x 0 -F, through vrdma-run):
#   write_lat  ib_write_lat -s 64 -n 3000           t_typical, us
#   send_lat   ib_send_lat -s 64 -n 3000            t_typical, us
#   pingpong   ibv_rc_pingpong -g 1 -s 64 -n 2000   us per iteration
#   pingpong_1m  ibv_rc_pingpong -g 1 -s 1048576 -n 200  us per iteration
#   write_bw   ib_write_bw -s 65536 -D 4            MB/s
#
#   bench/yield.sh [--base TREE] [--settings "idle loops onecpu allone"] [PROGRAM...]
# Logs: bench/results/yield-<date>/.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
base="" settings="idle loops onecpu allone" progs=()
while [ $# -gt 0 ]; do
	case $1 in
	--base) base=$(cd "${2:?--base needs a tree}" && pwd) || exit 2; shift ;;
	--settings) settings=${2:?--settings needs names}; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench/yield.sh: unknown option $1" >&2; exit 2 ;;
	*) progs+=("$1") ;;
	esac
	shift
done
[ ${#progs[@]} -gt 0 ] || progs=(write_lat send_lat pingpong pingpong_1m write_bw)
runs=${YIELD_RUNS:-3}
nloops=${YIELD_LOOPS:-2}
for c in ib_write_lat ib_send_lat ibv_rc_pingpong ib_write_bw; do
	command -v $c >/dev/null || { echo "yield: $c missing (scripts/deps.sh test)" >&2; exit 1; }
done
out=$top/bench/results/yield-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
dpid="" spid="" loops=()
stop_loops() {
	[ ${#loops[@]} -gt 0 ] || return 0
	kill "${loops[@]}" 2>/dev/null
	wait "${loops[@]}" 2>/dev/null
	loops=()
}
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	stop_loops
}
trap cleanup EXIT

# cmd PROGRAM PORT [HOST]: the program's command line, into argv
argv=()
cmd() {
	case $1 in
	write_lat) argv=(ib_write_lat -x 0 -F -s 64 -n 3000) ;;
	send_lat) argv=(ib_send_lat -x 0 -F -s 64 -n 3000) ;;
	pingpong) argv=(ibv_rc_pingpong -g 1 -s 64 -n 2000) ;;
	pingpong_1m) argv=(ibv_rc_pingpong -g 1 -s 1048576 -n 200) ;;
	write_bw) argv=(ib_write_bw -x 0 -F -s 65536 -D 4) ;;
	esac
	argv+=(-p "$2")
	[ $# -gt 2 ] && argv+=("$3")
	return 0
}

# result PROGRAM LOG: the figure of a client log (empty if none)
result() {
	case $1 in
	write_lat | send_lat) awk '$1 == 64 && NF >= 5 { v = $5 } END { if (v != "") print v }' "$2" ;;
	pingpong | pingpong_1m) awk '/usec\/iter/ { for (i = 1; i < NF; i++) if ($(i + 1) == "usec/iter") v = $i } END { if (v != "") print v }' "$2" ;;
	write_bw) awk '$1 == 65536 && NF >= 4 { v = $4 } END { if (v != "") print v }' "$2" ;;
	esac
}

# one TREE PROGRAM SETTING NAME: runs it once, prints its figure or "-"
one() {
	local tree=$1 p=$2 s=$3 n=$4 d port i pin_d=() pin_c=()
	case $s in
	onecpu) pin_d=(taskset -c 0) pin_c=(taskset -c 1) ;;
	allone) pin_d=(taskset -c 1) pin_c=(taskset -c 1) ;;
	esac
	d=$(mktemp -d /tmp/vrdma-yield.XXXXXX)
	port=$((20000 + $$ % 10000 + RANDOM % 10000))
	"${pin_d[@]}" "$tree/build/bin/vhost-user-rdma" -q --pidfile "$d/pid" \
		--device "socket=$d/a.sock,mac=02:11:22:33:49:0a,ip=10.67.0.1/24" \
		--device "socket=$d/b.sock,mac=02:11:22:33:49:0b,ip=10.67.0.2/24" \
		>"$out/$n.daemon.log" 2>&1 &
	dpid=$!
	for ((i = 0; i < 200; i++)); do [ -s "$d/pid" ] && break; sleep 0.05; done
	if [ "$s" = loops ]; then
		for ((i = 0; i < nloops; i++)); do
			sh -c 'while :; do :; done' &
			loops+=($!)
		done
	fi
	cmd "$p" "$port"
	"${pin_c[@]}" timeout 120 "$tree/build/bin/vrdma-run" --socket "$d/b.sock" -- \
		"${argv[@]}" >"$out/$n.server.log" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.05
	done
	cmd "$p" "$port" 127.0.0.1
	"${pin_c[@]}" timeout 120 "$tree/build/bin/vrdma-run" --socket "$d/a.sock" -- \
		"${argv[@]}" >"$out/$n.client.log" 2>&1
	wait "$spid"
	spid=""
	stop_loops
	kill "$dpid"
	wait "$dpid" 2>/dev/null
	dpid=""
	rm -rf "$d"
	local v
	v=$(result "$p" "$out/$n.client.log")
	echo "${v:--}"
}

bench_trees "$top" "$base"
echo "| program | setting | tree | runs | median (range) |"
echo "|---|---|---|---|---|"
for p in "${progs[@]}"; do
	for s in $settings; do
		declare -A vals=()
		for ((k = 1; k <= runs; k++)); do
			for tree in "${trees[@]}"; do
				tag=$(bench_tag "$tree")
				vals[$tag]+="$(one "$tree" "$p" "$s" "$p.$s.$tag.$k") "
			done
		done
		for tree in "${trees[@]}"; do
			tag=$(bench_tag "$tree")
			echo "| $p | $s | $tag | ${vals[$tag]}| $(tr ' ' '\n' <<<"${vals[$tag]}" | bench_range) |"
		done
		unset vals
	done
done | tee "$out/table.md"
echo "logs: $out" >&2
