#!/usr/bin/env bash
# Fairness between tenants of one daemon: a victim pair of devices (A -> B)
# measures its 64-byte latency (ib_send_lat, median) and its bandwidth
# (ib_write_bw 64 KiB, average) alone, then again while an aggressor pair
# (C -> D) of the same daemon runs ib_write_bw at full load. Prints the ratios
# from this one run (docs/spec.md "Tenant isolation"): the goal is latency
# loaded / alone <= 2 and bandwidth loaded / alone >= 0.5 (a fair share of
# two tenants).
#
# Then PAIRS (default 16) pairs of devices of a second daemon run
# ib_write_bw -s 65536 at the same time, against one of those pairs alone
# just before: aggregate / alone (goal >= 0.9) and Jain's fairness index of
# the PAIRS bandwidths (goal >= 0.95). The clients busy-poll (perftest has
# no completion events for WRITE, nor with -D), so they run at nice 19
# there: on a small machine 16 spinning clients would otherwise take the
# CPUs from the daemon, and the daemon's sharing is what is measured.
#
# usage: bench/fairness.sh [SECONDS] [PAIRS] [pairs]   (bandwidth run length,
# default 5; a third argument "pairs": the PAIRS measurement only;
# FAIRNESS_CPU=S also prints the daemon's CPU use S seconds into the PAIRS run)
# Needs perftest (scripts/deps.sh test) and a build (make).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
secs=${1:-5}
npairs=${2:-16}
tmp=$(mktemp -d /tmp/vrdma-fairness.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
for t in ib_send_lat ib_write_bw; do
	command -v $t >/dev/null || { echo "fairness: $t missing (perftest)" >&2; exit 1; }
done

# BENCH_SCHED: the daemons' --sched (e.g. "fifo:10", as bench/run.sh).
# VRDMA_THREADS=N: daemons with --threads N; each pair of devices on one
# thread (victim thread 0, aggressor thread 1; pair n thread n % N), or,
# with VRDMA_THREADS_CROSS=1, devices round robin (each pair crosses).
dopts=() t0="" t1=""
[ -n "${BENCH_SCHED:-}" ] && dopts+=(--sched "$BENCH_SCHED")
if [ -n "${VRDMA_THREADS:-}" ]; then
	dopts+=(--threads "$VRDMA_THREADS")
	[ -z "${VRDMA_THREADS_CROSS:-}" ] && t0=",thread=0" t1=",thread=$((1 % VRDMA_THREADS))"
fi
"$bin/vhost-user-rdma" -q --pidfile "$tmp/pid" "${dopts[@]}" \
	--device "socket=$tmp/a.sock,ip=10.70.0.1/24$t0" --device "socket=$tmp/b.sock,ip=10.70.0.2/24$t0" \
	--device "socket=$tmp/c.sock,ip=10.70.0.3/24$t1" --device "socket=$tmp/d.sock,ip=10.70.0.4/24$t1" &
pids+=($!)
for ((i = 0; i < 200; i++)); do [ -e "$tmp/pid" ] && break; sleep 0.05; done
[ -e "$tmp/pid" ] || { echo "fairness: daemon did not start" >&2; exit 1; }

port=$((20000 + RANDOM % 20000))
# pair SRV_SOCK CLI_SOCK LOG CMD...: server then client (127.0.0.1 for the
# out-of-band exchange), both through vrdma-run; the client's output to LOG.
pair() {
	local s=$1 c=$2 log=$3 srv i
	shift 3
	port=$((port + 1))
	"$bin/vrdma-run" --socket "$s" -- "$@" -p $port >"$log.srv" 2>&1 &
	srv=$!
	for ((i = 0; i < 200; i++)); do
		ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.05
	done
	"$bin/vrdma-run" --socket "$c" -- "$@" -p $port 127.0.0.1 >"$log" 2>&1
	wait $srv
}
# col LOG SIZE N: column N of the result line for SIZE.
col() { awk -v s="$2" -v n="$3" '$1 == s && NF >= n { v = $n } END { print v }' "$1"; }

if [ "${3:-}" != pairs ]; then
pair "$tmp/b.sock" "$tmp/a.sock" "$tmp/lat.alone" ib_send_lat -s 64 -n 5000
pair "$tmp/b.sock" "$tmp/a.sock" "$tmp/bw.alone" ib_write_bw -s 65536 -D "$secs"

# The aggressor at full load for the whole loaded measurement.
pair "$tmp/d.sock" "$tmp/c.sock" "$tmp/agg" ib_write_bw -s 65536 -D $((secs + 6)) &
agg=$!
pids+=($agg)
sleep 2 # let the aggressor reach full rate (a measurement, not a synchronisation)
pair "$tmp/b.sock" "$tmp/a.sock" "$tmp/lat.loaded" ib_send_lat -s 64 -n 5000
pair "$tmp/b.sock" "$tmp/a.sock" "$tmp/bw.loaded" ib_write_bw -s 65536 -D "$secs"

wait $agg
ag=$(col "$tmp/agg" 65536 4)
echo "aggressor 64 KiB bandwidth while loading: ${ag:-?} MB/s (over its whole run)"
la=$(col "$tmp/lat.alone" 64 5)
ll=$(col "$tmp/lat.loaded" 64 5)
ba=$(col "$tmp/bw.alone" 65536 4)
bl=$(col "$tmp/bw.loaded" 65536 4)
echo "victim 64 B latency median: alone ${la:-?} us, with the aggressor ${ll:-?} us"
echo "victim 64 KiB bandwidth: alone ${ba:-?} MB/s, with the aggressor ${bl:-?} MB/s"
if [ -n "$la" ] && [ -n "$ll" ] && [ -n "$ba" ] && [ -n "$bl" ]; then
	awk -v la="$la" -v ll="$ll" -v ba="$ba" -v bl="$bl" 'BEGIN {
		printf "latency ratio loaded/alone %.2f (goal <= 2)\n", ll / la
		printf "bandwidth ratio loaded/alone %.2f (goal >= 0.5)\n", bl / ba }'
else
	echo "fairness: a measurement failed; logs:" >&2
	tail -3 "$tmp"/lat.* "$tmp"/bw.* >&2
	exit 1
fi
fi

# ---- PAIRS tenants at once on one daemon ----
devs=()
for ((i = 0; i < 2 * npairs; i++)); do
	t=""
	[ -n "${VRDMA_THREADS:-}" ] && [ -z "${VRDMA_THREADS_CROSS:-}" ] &&
		t=",thread=$((i / 2 % VRDMA_THREADS))"
	devs+=(--device "socket=$tmp/p$i.sock,ip=10.71.$((i / 200)).$((i % 200 + 1))/16$t")
done
"$bin/vhost-user-rdma" -q --pidfile "$tmp/pid2" "${dopts[@]}" "${devs[@]}" &
pids+=($!)
for ((i = 0; i < 400; i++)); do [ -s "$tmp/pid2" ] && break; sleep 0.05; done
[ -s "$tmp/pid2" ] || { echo "fairness: second daemon did not start" >&2; exit 1; }
cmd=(nice -n 19 ib_write_bw -s 65536 -D "$secs")
pair "$tmp/p1.sock" "$tmp/p0.sock" "$tmp/one" "${cmd[@]}"
jobs_=()
for ((n = 0; n < npairs; n++)); do
	port=$((port + 1)) # (pair's own increment is lost in its subshell)
	pair "$tmp/p$((2 * n + 1)).sock" "$tmp/p$((2 * n)).sock" "$tmp/all.$n" "${cmd[@]}" &
	jobs_+=($!)
done
if [ -n "${FAIRNESS_CPU:-}" ]; then # the daemon's CPU use in the middle of the run
	sleep "$FAIRNESS_CPU"
	dp=$(cat "$tmp/pid2")
	c0=$(awk '{ print $14 + $15 }' /proc/$dp/stat); sleep 2; c1=$(awk '{ print $14 + $15 }' /proc/$dp/stat)
	echo "daemon CPU $(( (c1 - c0) / 2 ))% ($(getconf CLK_TCK) ticks/s)"
fi
for j in "${jobs_[@]}"; do wait "$j"; done
one=$(col "$tmp/one" 65536 4)
vals=""
for ((n = 0; n < npairs; n++)); do vals="$vals $(col "$tmp/all.$n" 65536 4)"; done
echo "${cmd[*]}: one pair alone ${one:-?} MB/s; $npairs pairs at once:$vals MB/s"
echo "${one:-x}$vals" | awk -v k="$npairs" '{
	if (NF != k + 1 || $1 == "x") { print "fairness: a pair failed"; exit 1 }
	for (i = 2; i <= NF; i++) { s += $i; q += $i * $i }
	printf "pairs aggregate %.0f MB/s, aggregate/alone %.2f (goal >= 0.9), Jain index %.3f (goal >= 0.95)\n",
		s, s / $1, s * s / (k * q) }' || exit 1
