#!/usr/bin/env bash
# The extensions of docs/spec.md "Extensions beyond the RFC" through libvrdma
# and a real daemon (tests/tools/vrdma-rdmatest "ext"): capabilities and P_Key, an
# SRQ shared by two QPs (data compared), FETCH_AND_ADD / CMP_AND_SWP across
# two devices, fast registration + LOCAL_INV + SEND_WITH_INV, memory windows
# of type 1 and 2, CQ resize with completions pending, QP resize, and
# asynchronous events (SRQ limit, CQ overflow: CQ_ERR + QP_FATAL, remote
# access error: QP_ACCESS_ERR). Then devices started with ext=off: libvrdma
# does not negotiate the extension, every extension call fails with
# EOPNOTSUPP without a command ("extoff"), and the RFC data path still
# works ("data"). Also Debian's ibv_srq_pingpong through vrdma-run (the verbs
# layer's SRQ on this driver), polling and with completion events.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RT="$VRDMA_BUILD/tests/bin/vrdma-rdmatest"

need setup "$DAEMON" "$RT" || t_done

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

# daemon NAME DEVICE-OPTIONS...: start a daemon with devices a and b.
daemon() {
	local name=$1 extra=$2
	rm -f "$T_TMP/$name.pid"
	bg "$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$T_TMP/$name.pid" 2>"$T_TMP/$name.log" \
		--device "socket=$T_TMP/$name-a.sock,mac=02:00:00:00:0e:01,ip=10.9.0.1/24$extra" \
		--device "socket=$T_TMP/$name-b.sock,mac=02:00:00:00:0e:02,ip=10.9.0.2/24$extra"
	if ! wait_for_file "$T_TMP/$name.pid"; then
		not_ok "${name}_started" "no pid file: $(cat "$T_TMP/$name.log")"
		return 1
	fi
	return 0
}

# stop NAME: the daemon must exit cleanly.
stop() {
	local name=$1 pid rc
	pid=$(cat "$T_TMP/$name.pid")
	kill "$pid"
	wait "$pid" 2>/dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "${name}_exit"
	else
		not_ok "${name}_exit" "exit status $rc: $(tail -20 "$T_TMP/$name.log")"
	fi
}

. "$(dirname "$0")/verbs_lib.bash"
port=18700

# pingpong NAME PROG ARGS...: Debian's program through vrdma-run, server on
# device ext-a, client on ext-b (the verbs layer on this provider).
pingpong() {
	local name=$1
	shift
	vpair "$name" "$T_TMP/ext-a.sock" "$T_TMP/ext-b.sock" "$@"
}

RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
asan_preload "$LIB"

if daemon ext ""; then
	rdmatest ext --socket "$T_TMP/ext-a.sock" --socket "$T_TMP/ext-b.sock" ext
	# 16 RC QPs on one SRQ per side, through libibverbs (ibv_create_srq,
	# ibv_post_srq_recv, QPs with an SRQ), polling and with events
	if need ibv_srq_pingpong "$RUN" "$LIB" ibv_srq_pingpong ss; then
		pingpong ibv_srq_pingpong ibv_srq_pingpong -g 0 -n 1000
		pingpong ibv_srq_pingpong_events ibv_srq_pingpong -g 0 -n 500 -e -q 4
	fi
	stop ext
fi

if daemon seed ",ext=off"; then
	rdmatest extoff --socket "$T_TMP/seed-a.sock" --socket "$T_TMP/seed-b.sock" extoff
	rdmatest seed_data --socket "$T_TMP/seed-a.sock" \
		--socket "$T_TMP/seed-b.sock" data
	stop seed
fi

t_done
