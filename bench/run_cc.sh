#!/usr/bin/env bash
# Builds and runs the congestion-control benchmark (bench/bench_cc.c): two
# senders into one receiver through a rate-limited port, with and without
# congestion control in one run; prints a table and the ratios.
#   bench/run_cc.sh [RATE_MBIT [MIB_PER_SENDER [QUEUE_FRAMES [MARK_FRAMES]]]]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s -j2 all
out=build/bench
mkdir -p "$out"
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -Isrc -Itests -D_GNU_SOURCE \
	bench/bench_cc.c build/lib/libvrdma-core.a -o "$out/bench_cc" -lz -lisal -lpcap -pthread
echo "# $(uname -m), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
"$out/bench_cc" "$@"
