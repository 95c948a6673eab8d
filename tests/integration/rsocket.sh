#!/usr/bin/env bash
# rsockets of vrdma's librdmacm.so.1 (issue 11): unmodified Debian programs
# through vrdma-run, server on device B and client on device A of one
# daemon (joined by its switch), or both on B.
#
# 1. rstream (rdmacm-utils), data verified by rstream itself (-T v):
#    the default test (every size, latency then bandwidth, two connections
#    one after the other), sizes 17, 4097 and 1000000 (-S; not below 16:
#    rstream's handshake sends 16 bytes of its transfer-size buffer), blocking (-T b),
#    non-blocking (-T n: MSG_DONTWAIT, rpoll with timeout 0) and
#    asynchronous (-T a: O_NONBLOCK socket, rconnect EINPROGRESS, rpoll
#    before each call), -T r (rdma_getaddrinfo and RDMA_ROUTE) and -k
#    (SO_KEEPALIVE, TCP_KEEPIDLE read back); 1000 verified 4 KiB transfers
#    between two processes on B.
# 2. riostream (riomap of the receive buffer, riowrite into the peer's
#    iomap, rsend/rrecv for the handshake): verified transfers of 100000
#    bytes (blocking and -T a) and a 64-byte latency run.
# 3. librspreload (Debian's, LD_PRELOAD through vrdma-run) under ordinary
#    TCP programs: vrdma-tcpxfer recv (socket, bind, listen, poll, accept,
#    read) on B and vrdma-tcpxfer send (connect, poll, write, shutdown) or
#    nc.openbsd -N on A; a 3 MB random file compared byte for byte.
# 4. tests/verbs/rsocket_api on A alone: the calls' errors and semantics
#    (SOCK_DGRAM refused with EOPNOTSUPP, options, O_NONBLOCK connect and
#    accept, rpoll/rselect over rsockets and a pipe, MSG_PEEK, MSG_WAITALL,
#    SHUT_WR, riomap/riowrite, the peer's close).
# 5. Under --fault drop=2,dup=1,reorder=1: rstream -S 100000 -T v.
# 6. The daemons stop cleanly (exit 0).
#
# A server is ready once its process has the "vrdma-cm" thread (rdma_listen
# done) or, for vrdma-tcpxfer, once it printed "listening". Every process
# runs under a timeout.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/librdmacm.so.1"
XFER="$VRDMA_BUILD/tests/bin/vrdma-tcpxfer"
API="$VRDMA_BUILD/tests/verbs/rsocket_api"
STEP_TMO=300
DAEMON_TMO=1800
IP_A=10.64.0.1
IP_B=10.64.0.2
FAULT_SPEC=${VRDMA_RSOCKET_FAULT:-drop=2,dup=1,reorder=1,seed=$((1 + $$ % 1000))}
RSPRELOAD=$(dpkg -L librdmacm1 2>/dev/null | grep '/librspreload\.so$' | head -n 1)

ALL_TESTS="daemon_started rstream_default rstream_size_17 rstream_size_4097 rstream_size_1000000
	rstream_blocking rstream_nonblocking rstream_async rstream_resolve rstream_keepalive
	rstream_same_device riostream_verified
	riostream_async riostream_latency rspreload_tcpxfer rspreload_nc rsocket_api
	daemon_clean_exit fault_daemon_started fault_rstream fault_daemon_clean_exit"

asan_preload "$LIB"
reason=""
for b in "$DAEMON" "$RUN" "$LIB" "$XFER" "$API"; do [ -e "$b" ] || reason="$b not built (run make)"; done
for p in rstream riostream nc.openbsd; do
	command -v $p >/dev/null || reason="$p not installed (scripts/deps.sh test)"
done
[ -n "$RSPRELOAD" ] || reason="librspreload.so not found (dpkg -L librdmacm1)"
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

# pair NAME SRV_SOCK CLI_SOCK READY "SRV CMD" "CLI CMD" PATTERN: the
# server on SRV_SOCK, once READY (a command given the server's pid) the
# client on CLI_SOCK; ok if both exit 0 and PATTERN is in both outputs
# (empty: no check).
pair() {
	local name=$1 ss=$2 cs=$3 ready=$4 srv=$5 cli=$6 pat=$7 spid rs rc
	# shellcheck disable=SC2086
	vstart "$name.srv" "$ss" $srv
	spid=$VPID
	if ! wait_cmd 60 "$ready" "$spid" "$name"; then
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
		not_ok "$name" "server did not listen: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")"
		return
	fi
	# shellcheck disable=SC2086
	vstart "$name.cli" "$cs" $cli
	wait "$VPID"; rc=$?
	wait "$spid"; rs=$?
	if [ "$rc" = 0 ] && [ "$rs" = 0 ] &&
	   { [ -z "$pat" ] || { grep -q -- "$pat" "$T_TMP/$name.srv.log" &&
				 grep -q -- "$pat" "$T_TMP/$name.cli.log"; }; }; then
		ok "$name"
		grep -h -- "$pat" "$T_TMP/$name.cli.log" | tail -n 3 | sed "s/^/# $name: /"
	else
		not_ok "$name" "server rc=$rs client rc=$rc (124: timed out after ${STEP_TMO}s)"
		tail -n 15 "$T_TMP/$name.srv.log" | sed 's/^/#   srv: /'
		tail -n 15 "$T_TMP/$name.cli.log" | sed 's/^/#   cli: /'
	fi
}

cm_ready_pid() { cm_ready "$1"; }
xfer_ready() { grep -qs '^listening' "$T_TMP/$2.srv.log" || _gone "$1"; }

# rs_pair NAME PROG SRV_SOCK CLI_SOCK ARGS...: PROG (rstream, riostream)
# server bound to B's address and client, both with ARGS; the client's
# last result line is a transfer ("custom" or a size name).
rs_pair() {
	local name=$1 prog=$2 ss=$3 cs=$4; shift 4
	next_port
	pair "$name" "$ss" "$cs" cm_ready_pid "$prog -b $IP_B -p $PORT $*" \
		"$prog -s $IP_B -p $PORT $*" "Gb/sec"
}

# preload_xfer NAME OUT CLIENT...: vrdma-tcpxfer recv on B into OUT, then
# CLIENT on A (stdin: $T_TMP/in.bin), both under librspreload; ok if both
# exit 0 and OUT is in.bin byte for byte.
preload_xfer() {
	local name=$1 out=$2 spid rc rs; shift 2
	next_port
	VPRE=$RSPRELOAD vstart "$name.srv" "$B" "$XFER" recv $IP_B $PORT "$out"
	spid=$VPID
	if ! wait_cmd 60 xfer_ready "$spid" "$name"; then
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
		not_ok "$name" "server did not listen: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")"
		return
	fi
	# shellcheck disable=SC2046
	VPRE=$RSPRELOAD VIN="$T_TMP/in.bin" vstart "$name.cli" "$A" \
		$(for a in "$@"; do echo "${a//@PORT@/$PORT}"; done)
	wait "$VPID"; rc=$?
	wait "$spid"; rs=$?
	if [ $rc = 0 ] && [ $rs = 0 ] && cmp -s "$T_TMP/in.bin" "$out"; then
		ok "$name"
	else
		not_ok "$name" "server rc=$rs client rc=$rc; $(cmp "$T_TMP/in.bin" "$out" 2>&1)"
		tail -n 5 "$T_TMP/$name".*.log | sed 's/^/#   /'
	fi
}

A="$T_TMP/a.sock"
B="$T_TMP/b.sock"
if d_start d --device "socket=$A,mac=02:64:00:00:00:0a,ip=$IP_A/24" \
	--device "socket=$B,mac=02:64:00:00:00:0b,ip=$IP_B/24"; then
	ok daemon_started
	rs_pair rstream_default rstream "$B" "$A" -T v
	rs_pair rstream_size_17 rstream "$B" "$A" -S 17 -C 500 -T v
	rs_pair rstream_size_4097 rstream "$B" "$A" -S 4097 -C 300 -T v
	rs_pair rstream_size_1000000 rstream "$B" "$A" -S 1000000 -C 30 -T v
	rs_pair rstream_blocking rstream "$B" "$A" -T b -T v -S 65536 -C 200
	rs_pair rstream_nonblocking rstream "$B" "$A" -T n -T v -S 100000 -C 100
	rs_pair rstream_async rstream "$B" "$A" -T a -T v -S 30000 -C 200
	rs_pair rstream_resolve rstream "$B" "$A" -T r -T v -S 10000 -C 100
	next_port
	pair rstream_keepalive "$B" "$A" cm_ready_pid \
		"rstream -b $IP_B -p $PORT -k 5 -T v -S 10000 -C 100" \
		"rstream -s $IP_B -p $PORT -k 5 -T v -S 10000 -C 100" "Keepalive: ON"
	# (not the default test: its 100,000 64-byte round trips of spinning
	# processes take minutes on a busy machine, docs/performance.md
	# "Spinning programs on a busy machine")
	rs_pair rstream_same_device rstream "$B" "$B" -T v -S 4096 -C 1000
	rs_pair riostream_verified riostream "$B" "$A" -T v -S 100000 -C 100
	rs_pair riostream_async riostream "$B" "$A" -T a -T v -S 100000 -C 50
	rs_pair riostream_latency riostream "$B" "$A" -S 64 -C 1 -I 200

	# 3: librspreload under ordinary TCP programs
	head -c 3000000 /dev/urandom >"$T_TMP/in.bin"
	preload_xfer rspreload_tcpxfer "$T_TMP/out1.bin" "$XFER" send $IP_B @PORT@ "$T_TMP/in.bin"
	preload_xfer rspreload_nc "$T_TMP/out2.bin" nc.openbsd -N $IP_B @PORT@

	# 4: the API's semantics, one process on A
	next_port
	vstart api "$A" "$API" $IP_A $PORT
	wait "$VPID"; rc=$?
	if [ $rc = 0 ] && grep -q '^rsocket_api: all passed' "$T_TMP/api.log"; then
		ok rsocket_api
		grep -c '^ok ' "$T_TMP/api.log" | sed 's/^/# rsocket_api: checks passed: /'
	else
		not_ok rsocket_api "exit status $rc"
		grep -v '^ok ' "$T_TMP/api.log" | tail -n 20 | sed 's/^/#   /'
	fi
	d_stop d
	if [ "$D_RC" = 0 ]; then ok daemon_clean_exit
	else not_ok daemon_clean_exit "exit status $D_RC"; tail -n 20 "$T_TMP/d.log" | sed 's/^/#   /'; fi
else
	not_ok daemon_started "$(tail -n 20 "$T_TMP/d.log" | tr '\n' ' ')"
fi

# ---- 5: under the fault injector ----
FA="$T_TMP/fa.sock"
FB="$T_TMP/fb.sock"
if d_start f --fault "$FAULT_SPEC" --device "socket=$FA,mac=02:64:00:00:01:0a,ip=$IP_A/24" \
	--device "socket=$FB,mac=02:64:00:00:01:0b,ip=$IP_B/24"; then
	ok fault_daemon_started
	echo "# fault injection: $FAULT_SPEC"
	rs_pair fault_rstream rstream "$FB" "$FA" -S 100000 -C 100 -T v
	d_stop f
	if [ "$D_RC" = 0 ]; then ok fault_daemon_clean_exit
	else not_ok fault_daemon_clean_exit "exit status $D_RC"; fi
else
	not_ok fault_daemon_started "$(tail -n 20 "$T_TMP/f.log" | tr '\n' ' ')"
fi
t_done
