#!/usr/bin/env bash
# Loop threads (--threads, docs/design.md "Processes and threads"), ratios
# from one run: ib_write_bw -s 65536 and -s 64 (-D SECS, 1 QP) from device A
# to device B of
#   one:   a --threads 1 daemon (today's single loop);
#   same:  a --threads 2 daemon, A and B both on thread 1 (thread=1);
#   cross: a --threads 2 daemon, A on thread 0 and B on thread 1 (every
#          frame crosses a trunk).
# In ROUNDS alternating rounds (the machine's load changes), medians.
#
# usage: bench/threads.sh [SECONDS] [ROUNDS]
# Needs perftest (scripts/deps.sh test) and a build (make).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
secs=${1:-5}
rounds=${2:-3}
tmp=$(mktemp -d /tmp/vrdma-threads.XXXXXX)
dpid=""
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
command -v ib_write_bw >/dev/null || { echo "threads: ib_write_bw missing (perftest)" >&2; exit 1; }

# daemon ARGS...: (re)start the daemon with ARGS and devices a, b.
daemon() {
	if [ -n "$dpid" ]; then
		kill "$dpid" 2>/dev/null
		wait "$dpid" 2>/dev/null
	fi
	rm -f "$tmp/pid"
	"$bin/vhost-user-rdma" -q --pidfile "$tmp/pid" "$@" >"$tmp/daemon.log" 2>&1 &
	dpid=$!
	for ((i = 0; i < 400; i++)); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
	[ -s "$tmp/pid" ] || { echo "threads: daemon did not start" >&2; cat "$tmp/daemon.log" >&2; exit 1; }
}

port=$((20000 + RANDOM % 20000))
# run LOG SIZE: ib_write_bw of SIZE bytes, B serving, A sending; prints MB/s.
run() {
	local log=$1 size=$2 srv i
	port=$((port + 1))
	"$bin/vrdma-run" --socket "$tmp/b.sock" -- ib_write_bw -x 1 -F -s "$size" -D "$secs" \
		-p $port >"$log.srv" 2>&1 &
	srv=$!
	for ((i = 0; i < 400; i++)); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.05
	done
	"$bin/vrdma-run" --socket "$tmp/a.sock" -- ib_write_bw -x 1 -F -s "$size" -D "$secs" \
		-p $port 127.0.0.1 >"$log" 2>&1
	wait $srv
	awk -v s="$size" '$1 == s && NF >= 4 { v = $4 } END { print v }' "$log"
}

A="socket=$tmp/a.sock,ip=10.73.0.1/24"
B="socket=$tmp/b.sock,ip=10.73.0.2/24"
declare -A res
for ((r = 0; r < rounds; r++)); do
	for mode in one same cross; do
		case $mode in
		one) daemon --device "$A" --device "$B" ;;
		same) daemon --threads 2 --device "$A,thread=1" --device "$B,thread=1" ;;
		cross) daemon --threads 2 --device "$A" --device "$B" ;;
		esac
		for size in 65536 64; do
			res[$mode.$size]+=" $(run "$tmp/$mode.$size.$r" $size)"
		done
	done
done
med() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
	END { if (!NR) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for size in 65536 64; do
	o=$(med ${res[one.$size]}); s=$(med ${res[same.$size]}); c=$(med ${res[cross.$size]})
	echo "ib_write_bw -s $size -D $secs: --threads 1:${res[one.$size]} MB/s;" \
		"--threads 2 same thread:${res[same.$size]}; two threads:${res[cross.$size]}"
	awk -v o="$o" -v s="$s" -v c="$c" -v z="$size" 'BEGIN {
		if (o <= 0) { print "threads: a measurement failed"; exit 1 }
		printf "  %s B medians: one %.0f, same %.0f (%.2f of one), cross %.0f (%.2f of one)\n",
			z, o, s, s / o, c, c / o }'
done
