#!/usr/bin/env bash
# Small-message rate (not part of make test): perftest at 64 bytes between
# two devices of one daemon, optionally against a second build tree, runs
# alternating (base, new, base, new, ...), medians reported.
#
#   bench/rate.sh [--base TREE] [--pairs N] [--poll-us "0 50"] [TEST...]
#
# TEST: ib_write_bw ib_send_bw (default both), each run as
#   vrdma-run --socket DEV1 -- TEST -x 0 -F -s 64 -D $RATE_SEC -p PORT &
#   vrdma-run --socket DEV0 -- TEST -x 0 -F -s 64 -D $RATE_SEC -p PORT 127.0.0.1
# on a fresh daemon with two devices on its switch. Per run: the client's
# MsgRate (M msg/s) and the daemon's CPU time (user + system, from
# /proc/PID/stat before it stops) divided by the send WRs it executed
# (`send_wrs` of --stats), in ns per message: the CPU figure moves far
# less than the rate on a busy machine.
# TREE is another checkout whose build/bin is built (e.g. a worktree of
# main); without --base only this tree runs.
# RATE_PIN=1 pins the daemon to CPU 0 and both perftest processes to CPU 1
# (taskset), so the daemon never shares a CPU with its client: that keeps a
# run in one mode (without it, a busy machine flips runs between "daemon
# busy" and "daemon sleeps and wakes per message", a 5-10x difference).
# Tunables: RATE_SEC (perftest -D, 3), RATE_PIN (0). Logs: bench/results/rate-<date>/.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
base="" pairs=3 polls="0" tests=()
while [ $# -gt 0 ]; do
	case $1 in
	--base) base=$(cd "${2:?--base needs a tree}" && pwd) || exit 2; shift ;;
	--pairs) pairs=${2:?--pairs needs a number}; shift ;;
	--poll-us) polls=${2:?--poll-us needs values}; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "bench/rate.sh: unknown option $1" >&2; exit 2 ;;
	*) tests+=("$1") ;;
	esac
	shift
done
[ ${#tests[@]} -gt 0 ] || tests=(ib_write_bw ib_send_bw)
sec=${RATE_SEC:-3}
pin_d=() pin_c=()
if [ "${RATE_PIN:-0}" = 1 ]; then pin_d=(taskset -c 0); pin_c=(taskset -c 1); fi
out=$top/bench/results/rate-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
tick=$(getconf CLK_TCK)
dpid="" spid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
}
trap cleanup EXIT

# one TREE TEST POLL NAME: prints "rate ns_per_msg" (or "- -").
one() {
	local tree=$1 t=$2 poll=$3 n=$4 d port i cpu rate msgs
	d=$(mktemp -d /tmp/vrdma-rate.XXXXXX)
	port=$((20000 + $$ % 10000 + RANDOM % 10000))
	"${pin_d[@]}" "$tree/build/bin/vhost-user-rdma" -q --stats --pidfile "$d/pid" \
		--poll-us "$poll" \
		--device "socket=$d/a.sock,mac=02:11:22:33:48:0a,ip=10.66.0.1/24" \
		--device "socket=$d/b.sock,mac=02:11:22:33:48:0b,ip=10.66.0.2/24" \
		>"$out/$n.daemon.log" 2>&1 &
	dpid=$!
	for ((i = 0; i < 200; i++)); do [ -s "$d/pid" ] && break; sleep 0.05; done
	"${pin_c[@]}" timeout 60 "$tree/build/bin/vrdma-run" --socket "$d/b.sock" -- \
		"$t" -x 0 -F -s 64 -D "$sec" -p "$port" >"$out/$n.server.log" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.05
	done
	"${pin_c[@]}" timeout 60 "$tree/build/bin/vrdma-run" --socket "$d/a.sock" -- \
		"$t" -x 0 -F -s 64 -D "$sec" -p "$port" 127.0.0.1 >"$out/$n.client.log" 2>&1
	wait "$spid"
	spid=""
	cpu=$(awk -v t="$tick" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$dpid/stat")
	kill "$dpid"
	wait "$dpid" 2>/dev/null
	dpid=""
	rm -rf "$d"
	rate=$(awk '/^ *64 /{ print $NF }' "$out/$n.client.log" | tail -n1)
	msgs=$(awk '/send_wrs/{ for (i = 1; i < NF; i++) if ($i == "send_wrs") s += $(i + 1) } END { print s + 0 }' \
		"$out/$n.daemon.log")
	if [ -z "$rate" ] || [ "$msgs" = 0 ]; then echo "- -"; return; fi
	awk -v r="$rate" -v c="$cpu" -v m="$msgs" 'BEGIN { printf "%s %.0f\n", r, c * 1e9 / m }'
}

bench_trees "$top" "$base"
echo "| test | poll-us | tree | M msg/s (runs) | CPU ns/msg (runs) | median M msg/s | median ns/msg |"
echo "|---|---|---|---|---|---:|---:|"
for t in "${tests[@]}"; do
	for p in $polls; do
		declare -A rates=() cpus=()
		for ((k = 1; k <= pairs; k++)); do
			for tree in "${trees[@]}"; do
				tag=$(bench_tag "$tree")
				read -r r c < <(one "$tree" "$t" "$p" "$t.p$p.$tag.$k")
				rates[$tag]+="$r "
				cpus[$tag]+="$c "
			done
		done
		for tree in "${trees[@]}"; do
			tag=$(bench_tag "$tree")
			mr=$(tr ' ' '\n' <<<"${rates[$tag]}" | bench_median)
			mc=$(tr ' ' '\n' <<<"${cpus[$tag]}" | bench_median)
			echo "| $t | $p | $tag | ${rates[$tag]}| ${cpus[$tag]}| $mr | $mc |"
		done
		unset rates cpus
	done
done | tee "$out/table.md"
echo "logs: $out" >&2
