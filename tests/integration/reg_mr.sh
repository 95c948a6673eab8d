#!/usr/bin/env bash
# Registration of ordinary application memory through vrdma-run (issue 5):
# zero-copy through the preloaded shared-heap allocator, the copy path for
# everything else, and the allocator switched off.
#
# 1. reg_shmalloc (tests/verbs/reg_shmalloc.c) through vrdma-run on the fake
#    device (the test build of libibverbs.so.1 put first, tests/fake/): the
#    allocator keeps malloc / calloc / realloc / memalign family / mmap /
#    munmap / mremap / madvise / fork semantics (threads included); with the
#    allocator on (plain build) large blocks must come from its heap. Again
#    with --no-shmalloc (glibc alone passes the same checks).
# 2. One daemon, two devices on its switch; reg_mr_share server on device B,
#    client on device A (two processes, UNIX socket for the handshake):
#    buffers from malloc, memalign, posix_memalign, calloc, realloc, mmap,
#    the stack, a small malloc and a global array are registered, written to
#    the peer with RDMA WRITE (peer compares the bytes), read back with RDMA
#    READ (client compares), deregistered (data intact, memory writable,
#    freed); overlapping registrations on heap and copy-path memory; fork()
#    after registration. With the allocator on (plain build) the large heap
#    buffers must take the zero-copy path; the run is repeated with
#    vrdma-run --no-shmalloc, where none may.
# 3. bench/reg_mr_cost.c built with gcc and run on 16 MiB buffers (both
#    paths, first registration and re-registration, contents checked; no
#    timing is asserted).
# 4. The daemon stops cleanly on SIGTERM (exit 0: no sanitizer report).
#
# Under ASan (build/asan) the sanitizer runtime is preloaded first and the
# sanitizer build of vrdma-run does not preload libvrdma-shmalloc (its
# allocator would stay inert under ASan's anyway): only the copy path is
# exercised there and no zero-copy expectation is made.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
SHM="$VRDMA_BUILD/lib/libvrdma-shmalloc.so"
FAKELIB="$VRDMA_BUILD/tests/lib"
SHARE="$VRDMA_BUILD/tests/verbs/reg_mr_share"
ALLOC="$VRDMA_BUILD/tests/verbs/reg_shmalloc"
TMO=300

for b in "$DAEMON" "$RUN" "$LIB" "$FAKELIB/libibverbs.so.1" "$SHARE" "$ALLOC"; do
	if [ ! -e "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done

asan_preload "$LIB"
asan=0
VR=("$RUN")
if [ -n "$PRELOAD" ]; then
	asan=1
	VR=(env "LD_PRELOAD=$PRELOAD" "$RUN")
fi
zc=1
[ $asan = 1 ] && zc=0
[ -e "$SHM" ] || zc=0

# prefix LABEL: "ok X" -> "ok reg_mr.LABEL.X" (same for "not ok").
prefix() { sed -E "s/^(ok|not ok) /\1 $T_PROG.$1./"; }

# ---- 1. the allocator alone ----------------------------------------------------
for mode in on off; do
	args=() expect=()
	if [ $mode = off ]; then
		args=(--no-shmalloc)
	elif [ $zc = 1 ]; then
		expect=(--expect-heap)
	fi
	out="$T_TMP/alloc_$mode.log"
	# (it checks that a bad alignment is refused: ASan must return it)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" \
		VRDMA_FAKE_DEVICE=1 timeout -k 5 $TMO "${VR[@]}" "${args[@]}" -- \
		sh -c 'LD_LIBRARY_PATH=$0:$LD_LIBRARY_PATH exec "$@"' "$FAKELIB" "$ALLOC" "${expect[@]}" \
		>"$out" 2>&1
	rc=$?
	grep -E '^(ok|not ok) ' "$out" | prefix "alloc_$mode"
	if [ $rc = 0 ]; then ok "alloc_$mode.exit"; else
		not_ok "alloc_$mode.exit" "exit $rc: $(tail -n 3 "$out" | tr '\n' ' ')"; fi
done

# ---- 2. registrations with a peer ----------------------------------------------
SA="$T_TMP/a.sock" SB="$T_TMP/b.sock" PIDF="$T_TMP/daemon.pid"
timeout -k 5 900 "$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$PIDF" \
	--device "socket=$SA,mac=02:11:22:33:66:0a,ip=10.63.0.1/24" \
	--device "socket=$SB,mac=02:11:22:33:66:0b,ip=10.63.0.2/24" \
	>"$T_TMP/daemon.log" 2>&1 </dev/null &
DPID=$!
T_PIDS+=($DPID)
if ! wait_for_file "$PIDF" 30; then
	not_ok daemon_started "$(tail -n 5 "$T_TMP/daemon.log" | tr '\n' ' ')"
	t_done
fi
ok daemon_started

# pair LABEL CLIENT_ARGS...: server on B, client on A; the client's checks
# are reported as reg_mr.LABEL.*, plus LABEL.client_exit / server_exit.
pair() {
	local label=$1 hs="$T_TMP/$1.hs" spid crc src; shift
	local vr=() ca=()
	while [ $# -gt 0 ]; do
		case $1 in --no-shmalloc) vr+=("$1") ;; *) ca+=("$1") ;; esac
		shift
	done
	timeout -k 5 $TMO "${VR[@]}" --socket "$SB" "${vr[@]}" -- "$SHARE" server "$hs" \
		>"$T_TMP/$label.server.log" 2>&1 &
	spid=$!
	T_PIDS+=($spid)
	if ! wait_for_file "$hs" 30; then
		not_ok "$label.server_listens" "$(tail -n 3 "$T_TMP/$label.server.log" | tr '\n' ' ')"
		wait $spid
		return
	fi
	timeout -k 5 $TMO "${VR[@]}" --socket "$SA" "${vr[@]}" -- "$SHARE" client "$hs" "${ca[@]}" \
		>"$T_TMP/$label.client.log" 2>&1
	crc=$?
	wait $spid
	src=$?
	grep -E '^(ok|not ok) ' "$T_TMP/$label.client.log" | prefix "$label"
	if [ $crc = 0 ]; then ok "$label.client_exit"; else
		not_ok "$label.client_exit" "exit $crc"
		grep -v -E '^ok ' "$T_TMP/$label.client.log" | sed 's/^/#   client: /'
	fi
	if [ $src = 0 ]; then ok "$label.server_exit"; else
		not_ok "$label.server_exit" "exit $src"
		sed 's/^/#   server: /' "$T_TMP/$label.server.log"
	fi
}

if [ $zc = 1 ]; then
	pair default --expect-zero-copy
else
	pair default
fi
pair no_shmalloc --no-shmalloc --expect-copy

# ---- 3. the benchmark, as a smoke test -----------------------------------------
if [ $asan = 0 ] && gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE \
	"$VRDMA_TOP/bench/reg_mr_cost.c" -libverbs -o "$T_TMP/reg_mr_cost" 2>"$T_TMP/bench_cc.log"; then
	if REG_MR_REPEAT=1 timeout -k 5 $TMO "${VR[@]}" --socket "$SA" -- "$T_TMP/reg_mr_cost" 16 \
		>"$T_TMP/bench.log" 2>&1 &&
		[ "$(grep -c 'MiB .* contents intact$' "$T_TMP/bench.log")" = 4 ] &&
		{ [ $zc = 0 ] || [ "$(grep -c 'MiB zero-copy ' "$T_TMP/bench.log")" = 3 ]; }; then
		ok bench_reg_mr_cost
	else
		not_ok bench_reg_mr_cost "$(tr '\n' ' ' <"$T_TMP/bench.log")"
	fi
elif [ $asan = 1 ]; then
	echo "# bench_reg_mr_cost: the benchmark smoke run belongs to the plain flavour (timings)"
else
	not_ok bench_reg_mr_cost "does not build: $(head -n 3 "$T_TMP/bench_cc.log" | tr '\n' ' ')"
fi

# ---- 4. clean stop ---------------------------------------------------------------
# To the daemon itself, not its timeout wrapper (which would SIGKILL a slow
# but clean shutdown 5 s later: daemon_lib.bash d_stop).
kill -TERM "$(cat "$PIDF")" 2>/dev/null || kill -TERM $DPID
wait $DPID
rc=$?
if [ $rc = 0 ]; then ok daemon_clean_exit; else
	not_ok daemon_clean_exit "exit $rc: $(tail -n 5 "$T_TMP/daemon.log" | tr '\n' ' ')"; fi
t_done
