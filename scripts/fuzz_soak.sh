#!/usr/bin/env bash
# Long fuzzing of every libFuzzer target (make fuzz-soak; not part of make
# test). Each target runs FUZZ_SECONDS (default 600) from its seeds
# (fuzz/corpus/NAME/) plus the working corpus of earlier runs
# (build/fuzz-corpus/fuzz_NAME/); afterwards the new inputs are merged back
# into that working corpus (-merge=1, only inputs adding coverage) and any
# crash / leak / timeout input is kept in build/fuzz-findings/NAME/.
# Prints one line per target: executions, coverage (edges), corpus size,
# findings. Exit status 1 if any target found something.
#
#   FUZZ_SECONDS=600 FUZZ_ONLY=REGEX FUZZ_JOBS=1 scripts/fuzz_soak.sh
# (FUZZ_JOBS targets run at once, each on one core: lines come as they end)
#
# Seeds under fuzz/corpus/ stay small and hand-picked: to promote a finding
# (after the fix) copy its input there under a name saying what it covers.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
secs=${FUZZ_SECONDS:-600}
only=${FUZZ_ONLY:-}
fuzzdir=build/fuzz
found=0

jobs=${FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz_soak: FUZZ_JOBS must be a positive number" >&2; exit 2; }

# soak TARGET_BINARY: one target; prints its line, status 1 on a finding.
soak() {
	local f=$1 b n work finds newc log seeds before rc execs cov nfind
	b=$(basename "$f")
	n=${b#fuzz_}
	work=build/fuzz-corpus/$b
	finds=build/fuzz-findings/$n
	newc=$(mktemp -d "/tmp/vrdma-soak-$n.XXXXXX")
	log=build/fuzz-soak/$n.log
	mkdir -p "$work" "$finds" build/fuzz-soak
	seeds=fuzz/corpus/$n
	[ -d "$seeds" ] || seeds=""
	before=$(ls "$finds" | wc -l)
	# New inputs go to a scratch directory, then merge into the work corpus.
	"$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$finds/" "$newc" "$work" $seeds >"$log" 2>&1
	rc=$?
	"$f" -merge=1 -timeout=10 -rss_limit_mb=2048 "$work" "$newc" >>"$log" 2>&1
	rm -rf "$newc"
	execs=$(awk '/stat::number_of_executed_units/ { print $NF }' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{ print $2 }')
	nfind=$(($(ls "$finds" | wc -l) - before))
	[ $rc -ne 0 ] && [ $nfind -eq 0 ] && nfind="rc=$rc"
	printf '%-22s %12s %8s %8s %9s\n' "$n" "${execs:-?}" "${cov:-?}" "$(ls "$work" | wc -l)" "$nfind"
	[ "$nfind" = 0 ]
}

printf '%-22s %12s %8s %8s %9s\n' target execs cov corpus findings
running=0
for f in "$fuzzdir"/fuzz_*; do
	[ -x "$f" ] || continue
	n=$(basename "$f")
	n=${n#fuzz_}
	[ -n "$only" ] && ! [[ $n =~ $only ]] && continue
	# FUZZ_JOBS targets at a time; a line per target as it ends
	if [ $running -ge "$jobs" ]; then
		wait -n || found=1
		running=$((running - 1))
	fi
	soak "$f" &
	running=$((running + 1))
done
while [ $running -gt 0 ]; do
	wait -n || found=1
	running=$((running - 1))
done
[ $found = 0 ] || echo "findings kept in build/fuzz-findings/ (logs: build/fuzz-soak/)"
exit $found
