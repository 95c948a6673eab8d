#!/usr/bin/env bash
# Builds and runs the in-process loss benchmark (bench/bench_loss.c): one RC
# QP between two devices of the transport engine, lossless and through the
# fault injector in one run, no daemon and no scheduler in the way; prints
# the CPU ratio and the counters that explain it (frames, ACKs, NAKs,
# packets sent again) for WRITEs of 64 KiB and READs of 2 MiB.
#   bench/run_loss_tp.sh [FAULT_SPEC]     (default drop=1,seed=1)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bench/build_engine.sh bench_loss
out=build/bench
spec=${1:-drop=1,seed=1}
echo "# $(uname -m), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
"$out/bench_loss" write 65536 20000 64 "$spec"
"$out/bench_loss" read 2097152 600 16 "$spec"
