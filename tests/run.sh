#!/usr/bin/env bash
# Runs every test of vrdma and prints one summary line at the end:
#   N passed, N failed, N skipped
#
# usage: tests/run.sh [--flavour DIR]... [--fuzz DIR] [--fuzz-seconds N] [--only REGEX]
#   --flavour DIR   a build tree (build, build/asan): the DIR/tests/test_*
#                   program of every tests/unit/test_*.c and every
#                   tests/integration/*.sh are run against it
#   --fuzz DIR      the DIR/fuzz_* target of every fuzz/fuzz_*.c runs for
#                   --fuzz-seconds
#   --tsan DIR      the ThreadSanitizer build (make tsan): DIR/tests/test_trunk,
#                   and tests/integration/threads.sh with DIR's daemon
#                   (VRDMA_DAEMON) and the first flavour's programs
# A program whose source exists but which is missing from DIR is a failure.
#
# A test program prints "ok NAME", "not ok NAME" or "skip NAME: why" lines
# (tests/harness.h, tests/lib.sh). A program that exits non-zero without a
# "not ok" line, or prints nothing, counts as one failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

flavours=()
fuzzdir=""
tsandir=""
fuzz_seconds=${VRDMA_FUZZ_SECONDS:-15}
only=${VRDMA_TEST_ONLY:-}
while [ $# -gt 0 ]; do
	case "$1" in
	--flavour) flavours+=("$2"); shift 2 ;;
	--fuzz) fuzzdir="$2"; shift 2 ;;
	--tsan) tsandir="$2"; shift 2 ;;
	--fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
	--only) only="$2"; shift 2 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ ${#flavours[@]} -gt 0 ] || flavours=(build)

passed=0 failed=0 skipped=0
failures=()
logdir="$top/build/test-logs"
mkdir -p "$logdir"

# run_one LABEL TIMEOUT CMD...: runs a test, counts its lines.
run_one() {
	local label=$1 tmo=$2; shift 2
	local log="$logdir/$(echo "$label" | tr '/ ' '__').log"
	local start=$SECONDS rc
	timeout --kill-after=10 "$tmo" "$@" >"$log" 2>&1 </dev/null
	rc=$?
	local p f s
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	s=$(grep -c '^skip ' "$log")
	grep -E '^(not ok |skip )' "$log" | sed "s|^|  [$label] |"
	if [ "$f" -gt 0 ]; then
		failures+=("$label")
		sed -n '/^not ok /,$p' "$log" | grep '^#' | head -40 | sed 's/^/    /'
	fi
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "  [$label] not ok: timed out after ${tmo}s"
		else
			echo "  [$label] not ok: exited with status $rc"
		fi
		tail -20 "$log" | sed 's/^/    /'
		failures+=("$label")
	elif [ $rc -eq 0 ] && [ $((p + f + s)) -eq 0 ]; then
		f=1
		echo "  [$label] not ok: printed no test result"
		failures+=("$label")
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	printf '%-52s %3d ok %3d failed %3d skipped %4ds\n' "$label" "$p" "$f" "$s" $((SECONDS - start))
}

# missing LABEL BIN: a test whose source exists but whose program was not
# built counts as one failure (a build that silently dropped it hides it).
missing() {
	[ -x "$2" ] && return 1
	echo "  [$1] not ok: $2 not built (source exists; see the build log)"
	failures+=("$1")
	failed=$((failed + 1))
	printf '%-52s %3d ok %3d failed %3d skipped %4ds\n' "$1" 0 1 0 0
	return 0
}

for fl in "${flavours[@]}"; do
	name=$(basename "$fl")
	[ "$fl" = build ] && name=default
	export VRDMA_BUILD="$top/$fl"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	for src in tests/unit/test_*.c; do
		[ -f "$src" ] || continue
		b=$(basename "$src" .c)
		[ -n "$only" ] && ! [[ "$b" =~ $only ]] && continue
		missing "$name/$b" "$fl/tests/$b" && continue
		run_one "$name/$b" 600 "$fl/tests/$b"
	done
	for t in tests/integration/*.sh; do
		[ -f "$t" ] || continue
		b=$(basename "$t" .sh)
		[ -n "$only" ] && ! [[ "$b" =~ $only ]] && continue
		run_one "$name/$b" 900 bash "$t"
	done
done

if [ -n "$tsandir" ]; then
	export VRDMA_BUILD="$top/${flavours[0]}"
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}
	for b in test_trunk; do
		[ -n "$only" ] && ! [[ "$b" =~ $only ]] && continue
		missing "tsan/$b" "$tsandir/tests/$b" && continue
		run_one "tsan/$b" 600 "$tsandir/tests/$b"
	done
	if [ -z "$only" ] || [[ threads =~ $only ]]; then
		missing "tsan/threads" "$tsandir/bin/vhost-user-rdma" ||
			VRDMA_DAEMON="$top/$tsandir/bin/vhost-user-rdma" run_one "tsan/threads" 900 \
				bash tests/integration/threads.sh
	fi
fi

if [ -n "$fuzzdir" ]; then
	for src in fuzz/fuzz_*.c; do
		[ -f "$src" ] || continue
		b=$(basename "$src" .c)
		f="$fuzzdir/$b"
		[ -n "$only" ] && ! [[ "$b" =~ $only ]] && continue
		missing "fuzz/$b" "$f" && continue
		corpus="$top/build/fuzz-corpus/$b"
		mkdir -p "$corpus"
		seeds="$top/fuzz/corpus/${b#fuzz_}"
		[ -d "$seeds" ] || seeds=""
		run_one "fuzz/$b" $((fuzz_seconds + 120)) \
			bash -c "'$f' -max_total_time=$fuzz_seconds -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 '$corpus' $seeds && echo 'ok fuzz.$b'"
	done
fi

# recap of every failure right above the summary, so the end of a long log
# (all that CI systems often keep) says what failed and why
if [ ${#failures[@]} -gt 0 ]; then
	echo "failure details:"
	for label in $(printf '%s\n' "${failures[@]}" | sort -u); do
		log="$logdir/$(echo "$label" | tr '/ ' '__').log"
		if grep -q '^not ok ' "$log" 2>/dev/null; then
			grep -E '^(not ok |#)' "$log" | grep -A6 '^not ok ' | grep -v "^--$" | head -8 |
				sed "s|^|  [$label] |"
		else
			tail -6 "$log" 2>/dev/null | sed "s|^|  [$label] |"
		fi
	done
	echo "failed: $(printf '%s\n' "${failures[@]}" | sort -u | tr '\n' ' ')"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
