# Verbs programs in pairs for integration scripts (sourced after
# tests/lib.sh). The caller sets RUN (vrdma-run), PRELOAD (the sanitizer
# runtimes for an ASan build of libibverbs.so.1, or empty) and port (the
# last TCP port used; each pair takes the next one).

# vpair NAME SRV_SOCK CLI_SOCK PROG ARGS...: PROG ARGS through vrdma-run as
# a server on SRV_SOCK and a client on CLI_SOCK (connecting to 127.0.0.1);
# ok NAME if both exit 0 and both print their "iters in" line.
vpair() {
	local name=$1 ssock=$2 csock=$3 prog=$4 spid src crc
	shift 4
	port=$((port + 1))
	env LD_PRELOAD="$PRELOAD" \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		"$RUN" -s "$ssock" -- "$prog" -p $port "$@" >"$T_TMP/$name.srv" 2>&1 &
	spid=$!
	if ! wait_listening "$port" "$spid"; then
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		not_ok "$name" "server did not listen: $(cat "$T_TMP/$name.srv")"
		return
	fi
	timeout 120 env LD_PRELOAD="$PRELOAD" \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		"$RUN" -s "$csock" -- "$prog" -p $port "$@" 127.0.0.1 \
		>"$T_TMP/$name.cli" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
	   grep -q 'iters in' "$T_TMP/$name.cli" && grep -q 'iters in' "$T_TMP/$name.srv"; then
		ok "$name"
		grep 'iters in' "$T_TMP/$name.cli" | sed 's/^/# /'
	else
		not_ok "$name" "client rc=$crc server rc=$src:" \
			"$(cat "$T_TMP/$name.cli" "$T_TMP/$name.srv" | tr '\n' ' ')"
	fi
}
