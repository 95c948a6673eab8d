#!/usr/bin/env bash
# Builds and runs the in-process loss benchmark (bench/bench_loss.c): one RC
# QP between two devices of the transport engine, lossless and through the
# fault injector in one run, no daemon and no scheduler in the way; prints
# the CPU ratio and the counters that explain it (frames, ACKs, NAKs,
# packets sent again) for WRITEs of 64 KiB and READs of 2 MiB.
#   bench/run_loss_tp.sh [FAULT_SPEC]        (default drop=1,seed=1)
#   bench/run_loss_tp.sh --ir [FAULT_SPEC]   instructions instead of time
# --ir runs 5000 WRITEs of 64 KiB lossless, then lossy, under valgrind's
# callgrind (installed if missing) and prints the instructions executed
# per frame dropped, outside memcpy/memmove (the one copy per byte, which
# loss does not add to): a count that does not depend on the machine's
# load, so a change to the loss path shows as a number from one run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
ir=0
if [ "${1:-}" = --ir ]; then ir=1; shift; fi
bench/build_engine.sh bench_loss
out=build/bench
spec=${1:-drop=1,seed=1}
echo "# $(uname -m), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
if [ $ir = 0 ]; then
	"$out/bench_loss" write 65536 20000 64 "$spec"
	"$out/bench_loss" read 2097152 600 16 "$spec"
	exit 0
fi

command -v valgrind >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
tmp=$(mktemp -d /tmp/vrdma-loss-ir.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# irs MODE: "total copy drops" of one run under callgrind
irs() {
	BENCH_LOSS_ONLY=$1 valgrind --tool=callgrind --callgrind-out-file="$tmp/$1.cg" \
		"$out/bench_loss" write 65536 5000 64 "$spec" >"$tmp/$1.out" 2>"$tmp/$1.err" || true
	# (one run only: the other's line says FAILED)
	grep -q "^$1 .* timeouts [0-9]*\$" "$tmp/$1.out" ||
		{ echo "run_loss_tp: the $1 run failed:" >&2; cat "$tmp/$1.out" "$tmp/$1.err" >&2; exit 1; }
	callgrind_annotate --auto=no --threshold=100 "$tmp/$1.cg" 2>/dev/null | awk -v run="$1" -v out="$tmp/$1.out" '
		/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
		/mem(cpy|move)/ { gsub(",", "", $1); copy += $1 }
		END { while ((getline l < out) > 0) { n = split(l, f); if (f[1] == run) for (i = 1; i < n; i++) if (f[i] == "drops") d = f[i + 1] }
		      print total, copy + 0, d + 0 }'
}
read -r t0 c0 _ < <(irs lossless)
read -r t1 c1 d1 < <(irs lossy)
[ -n "${t0:-}" ] && [ -n "${t1:-}" ] && [ "${t0:-0}" -gt 0 ] ||
	{ echo "run_loss_tp: no instruction counts from callgrind_annotate" >&2; exit 1; }
echo "WRITE 5000 x 65536 bytes, 64 outstanding, faults $spec (instructions, callgrind)"
echo "lossless  total $t0  outside the copy $((t0 - c0))"
echo "lossy     total $t1  outside the copy $((t1 - c1))  drops $d1"
awk -v t0="$t0" -v c0="$c0" -v t1="$t1" -v c1="$c1" -v d="$d1" 'BEGIN {
	printf "lossy / lossless: total %.3f, outside the copy %.3f; %.0f instructions outside the copy per drop\n",
		t1 / t0, (t1 - c1) / (t0 - c0), d ? ((t1 - c1) - (t0 - c0)) / d : 0 }'
