#!/usr/bin/env bash
# Builds and runs the congestion-control benchmark (bench/bench_cc.c): two
# senders into one receiver through a rate-limited port, with and without
# congestion control in one run; prints a table and the ratios.
#   bench/run_cc.sh [RATE_MBIT [MIB_PER_SENDER [QUEUE_FRAMES [MARK_FRAMES]]]]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bench/build_engine.sh bench_cc
out=build/bench
echo "# $(uname -m), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
"$out/bench_cc" "$@"
