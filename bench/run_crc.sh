#!/usr/bin/env bash
# Builds and runs the ICRC CRC-32 benchmark (zlib vs ISA-L), see
# docs/performance.md "CRC-32 for ICRC".
#   bench/run_crc.sh [RUNS]      (default 40 short runs per cell, best kept)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/bench
mkdir -p "$out"
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -Isrc -D_GNU_SOURCE \
	bench/bench_crc.c src/roce/roce_icrc.c -o "$out/bench_crc" -lz -lisal
echo "# $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
echo "# zlib $(pkg-config --modversion zlib 2>/dev/null || echo ?)," \
	"ISA-L $(dpkg-query -W -f='${Version}' libisal-dev 2>/dev/null || echo ?)"
"$out/bench_crc" "$@"
