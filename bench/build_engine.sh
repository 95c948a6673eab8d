#!/usr/bin/env bash
# Builds bench/NAME.c, a benchmark of the transport engine in one process
# (the fake driver rings of tests/unit/roce_tp_fake.h), against
# build/lib/libvrdma-core.a into build/bench/NAME, after `make all`.
#   bench/build_engine.sh NAME
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s -j2 all
mkdir -p build/bench
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude -Isrc -Itests -D_GNU_SOURCE \
	"bench/$1.c" build/lib/libvrdma-core.a -o "build/bench/$1" -lz -lisal -lpcap -lm -pthread
