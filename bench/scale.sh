#!/usr/bin/env bash
# Scale of one daemon, ratios from one run:
#  - many QPs: ib_write_bw -x 1 -F -s 65536 -D SECS -q 1024 -t 8 against -q 1
#    between two devices (goal >= 0.8);
#    in ROUNDS alternating rounds, medians compared; and the memory's bounds
#    on that ratio (a cold memcpy, streaming stores: bench/copy_cold.c);
#  - QP creation rate and daemon memory per QP (bench/qp_create.c).
#
# usage: bench/scale.sh [SECONDS] [ROUNDS] [--only qps|create]
# Needs perftest (scripts/deps.sh test) and a build (make).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
secs=${1:-5}
rounds=${2:-3}
only=${4:-}
[ "${3:-}" = --only ] || only=
tmp=$(mktemp -d /tmp/vrdma-scale.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
command -v ib_write_bw >/dev/null || { echo "scale: ib_write_bw missing (perftest)" >&2; exit 1; }

devs=()
for ((i = 0; i < 2; i++)); do
	devs+=(--device "socket=$tmp/d$i.sock,ip=10.71.$((i / 200)).$((i % 200 + 1))/16,qps=1040,cqs=64")
done
# VRDMA_THREADS=N: --threads N (the two devices round robin: on two threads)
"$bin/vhost-user-rdma" -q --pidfile "$tmp/pid" ${VRDMA_THREADS:+--threads "$VRDMA_THREADS"} \
	"${devs[@]}" >"$tmp/daemon.log" 2>&1 &
pids+=($!)
for ((i = 0; i < 400; i++)); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
[ -s "$tmp/pid" ] || { echo "scale: daemon did not start" >&2; exit 1; }
dpid=$(cat "$tmp/pid")

port=$((20000 + RANDOM % 20000))
# pair N LOG CMD...: server on device 2N+1, client on 2N; client output to LOG.
pair() {
	local n=$1 log=$2 p srv i
	shift 2
	port=$((port + 1))
	p=$port
	"$bin/vrdma-run" --socket "$tmp/d$((2 * n + 1)).sock" -- "$@" -p $p >"$log.srv" 2>&1 &
	srv=$!
	for ((i = 0; i < 400; i++)); do
		ss -ltn 2>/dev/null | grep -q ":$p " && break
		sleep 0.05
	done
	"$bin/vrdma-run" --socket "$tmp/d$((2 * n)).sock" -- "$@" -p $p 127.0.0.1 >"$log" 2>&1
	wait $srv
}
# bw LOG: average MB/s of the 64 KiB result line.
bw() { awk '$1 == 65536 && NF >= 4 { v = $4 } END { print v }' "$1"; }

if [ -z "$only" ] || [ "$only" = qps ]; then
	# Alternating rounds (the machine's load changes), medians compared.
	cmd="ib_write_bw -x 1 -F -s 65536 -D $secs"
	a=(); b=()
	for ((r = 0; r < rounds; r++)); do
		pair 0 "$tmp/q1.$r" $cmd -q 1
		pair 0 "$tmp/q1024.$r" $cmd -q 1024 -t 8
		a+=($(bw "$tmp/q1.$r")); b+=($(bw "$tmp/q1024.$r"))
	done
	echo "qps: $cmd -q 1: ${a[*]} MB/s; -q 1024 -t 8: ${b[*]} MB/s"
	printf '%s\n' "${a[*]}" "${b[*]}" | awk -v k="$rounds" '
		function med(s,   v, n, i, j, t) { n = split(s, v, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
		NR == 1 { x = $0 } NR == 2 { y = $0 }
		END { split(x, p, " "); split(y, q, " ")
			if (length(p) != k || length(q) != k) { print "qps: a measurement failed"; exit 1 }
			printf "qps medians: -q 1 %.0f MB/s, -q 1024 %.0f MB/s, ratio %.2f (goal >= 0.8)\n",
				med(x), med(y), med(y) / med(x) }' | tee "$tmp/qps"
	# The memory's bound, same run: -q 1024's buffers (64 KiB per QP and
	# side) are far beyond the caches, so each of its bytes is copied from
	# memory to memory, while -q 1 copies within the cache. One copy per
	# byte cannot beat a cold memcpy: ratio <= memcpy 1 MiB cold / -q 1.
	if gcc -std=gnu11 -O2 -D_GNU_SOURCE "$top/bench/memcpy_bw.c" -o "$tmp/memcpy_bw" 2>/dev/null; then
		cold=$("$tmp/memcpy_bw" -t 2 | awk '$1 == "memcpy_1m_cold_GBps" { print $2 }')
		# (memcpy_bw: 10^9 bytes/s; perftest's MB: 2^20 bytes)
		awk -v c="${cold:-0}" '/^qps medians/ { q1 = $5 } END {
			if (c <= 0 || q1 <= 0) { print "qps bound: not measured (memcpy_bw or -q 1 failed)"; exit }
			printf "qps bound: memcpy 1 MiB cold %.0f MB/s (best round), so -q 1024 / -q 1 <= %.2f\n",
				c * 1000 / 1.048576, c * 1000 / 1.048576 / q1 }' "$tmp/qps"
	fi
	# The daemon writes such cold destinations with streaming stores
	# (docs/design.md "Cold destinations"), which beat a cold memcpy.
	if "$top/bench/build_engine.sh" copy_cold >/dev/null 2>&1; then
		strm=$("$top/build/bench/copy_cold" 1024 | awk '$1 == 1024 { print $4 }')
		awk -v c="${strm:-0}" '/^qps medians/ { q1 = $5 } END {
			if (c <= 0 || q1 <= 0) { print "qps bound: streaming stores not measured"; exit }
			printf "qps bound: streaming stores, 1024 buffers of 64 KiB in rotation %.0f MB/s (best round), so -q 1024 / -q 1 <= %.2f\n",
				c * 1000 / 1.048576, c * 1000 / 1.048576 / q1 }' "$tmp/qps"
	fi
fi

if [ -z "$only" ] || [ "$only" = create ]; then
	mkdir -p "$top/build/bench"
	if cc -O2 -D_GNU_SOURCE "$top/bench/qp_create.c" -L"$top/build/lib" -libverbs \
		-o "$tmp/qp_create" 2>"$tmp/cc.log"; then
		"$bin/vrdma-run" --socket "$tmp/d0.sock" -- "$tmp/qp_create" -n 1000 -p "$dpid" |
			sed 's/^/create: /'
	else
		echo "scale: qp_create did not build" >&2
		cat "$tmp/cc.log" >&2
	fi
fi
