#!/usr/bin/env bash
# RDMA data path through libvrdma and the daemon's RoCE v2 transport
# (tests/tools/vrdma-rdmatest "data"): RC SEND/RECV (with immediate), WRITE (with
# immediate), READ at every MTU boundary up to 4 MiB; scatter/gather and
# inline; UC; UD with the GRH area; loopback on one device; completion
# events; send-queue full and flushes; protection errors. Every payload is
# compared byte for byte. Run twice: polling the CQs, and sleeping on their
# event fds. Then Debian's ibv_rc_pingpong (poll, -e), ibv_uc_pingpong and
# ibv_ud_pingpong, server and client as two processes on two devices,
# through vrdma-run.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RT="$VRDMA_BUILD/tests/bin/vrdma-rdmatest"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"

need setup "$DAEMON" "$RT" || t_done

rm -f "$T_TMP/pid"
bg "$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$T_TMP/pid" 2>"$T_TMP/daemon.log" \
	--device "socket=$T_TMP/a.sock,mac=02:00:00:00:0c:01,ip=10.8.0.1/24" \
	--device "socket=$T_TMP/b.sock,mac=02:00:00:00:0c:02,ip=10.8.0.2/24"
if ! wait_for_file "$T_TMP/pid"; then
	not_ok daemon_started "no pid file: $(cat "$T_TMP/daemon.log")"
	t_done
fi
PID=$(cat "$T_TMP/pid")

# rdmatest NAME ARGS...: run the test client; its ok/not ok lines are ours.
rdmatest() {
	local name=$1 rc
	shift
	"$RT" --prefix "$T_PROG.$name" "$@" >"$T_TMP/$name.out" 2>&1
	rc=$?
	cat "$T_TMP/$name.out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok ' "$T_TMP/$name.out"; then
		not_ok "$name" "vrdma-rdmatest exited with $rc"
	fi
}

rdmatest poll --socket "$T_TMP/a.sock" --socket "$T_TMP/b.sock" data
rdmatest events --socket "$T_TMP/a.sock" --socket "$T_TMP/b.sock" --events data

# --- Debian's pingpong programs through vrdma-run --------------------------------

. "$(dirname "$0")/verbs_lib.bash"

if need pingpong "$RUN" "$LIB" ibv_rc_pingpong ibv_uc_pingpong \
	ibv_ud_pingpong ss; then
	asan_preload "$LIB"
	port=18600
	# pingpong NAME PROG ARGS...: server on device a, client on device b.
	pingpong() {
		local name=$1
		shift
		vpair "$name" "$T_TMP/a.sock" "$T_TMP/b.sock" "$@"
	}
	pingpong ibv_rc_pingpong ibv_rc_pingpong -g 0 -n 2000
	pingpong ibv_rc_pingpong_events ibv_rc_pingpong -g 0 -n 2000 -e
	pingpong ibv_rc_pingpong_check ibv_rc_pingpong -g 0 -n 500 -c -s 65536
	pingpong ibv_uc_pingpong ibv_uc_pingpong -g 0 -n 2000
	pingpong ibv_ud_pingpong ibv_ud_pingpong -g 0 -n 2000 -s 1024
fi

kill "$PID"
wait "$PID" 2>/dev/null
rc=$?
if [ $rc -eq 0 ]; then
	ok daemon_exit
else
	not_ok daemon_exit "exit status $rc: $(tail -20 "$T_TMP/daemon.log")"
fi

t_done
