#!/usr/bin/env bash
# rdma_cm through vrdma's librdmacm.so.1 (issue 11): unmodified Debian
# programs (rdmacm-utils, perftest -R) through vrdma-run, server on device B
# and client on device A of one daemon, joined by its switch.
#
# 1. rping -C 1000 -V (every ping's data verified by rping), ucmatose -c 4
#    (four RC connections with data), udaddy (UD through SIDR),
#    rdma_server / rdma_client (synchronous ids, rdma_getaddrinfo,
#    rdma_create_ep, rdma_get_request), ib_send_bw -R, ib_write_lat -R and
#    ib_atomic_bw -R (remote atomics on a connected QP, as Linux's CM
#    grants them): both sides exit 0 with their completion lines.
# 1b. IPv6 (B's link-local address, GID 0): rping -C 100 -V, ucmatose -c 2,
#    udaddy.
# 1c. tests/verbs/rdmacm_api on A alone: devices, bind errors, the
#    channel fd (EAGAIN, poll), a connection between two ids of one
#    process on one device (private data, a 4 KiB SEND compared,
#    DISCONNECTED on both ends), data before the RTU (a client id
#    without QP: the server is established by the client's first SEND),
#    a reject (status 28 + private data).
# 2. A client to a port nobody listens on while the server's device runs a
#    CM (a listener on another port): rping fails at once (REJ, "invalid
#    service ID") instead of waiting for REQ timeouts.
# 2a. Several rdma_cm processes on one device (the CM is the daemon's, per
#    device): while one rping server listens on B, a second rping server on
#    B (another port) serves a client; a listen on the port the first one
#    holds fails (rping -s: "rdma_listen: Address already in use").
# 2c. rping server and client as two processes on the same device socket
#    (-C 1000 -V), and so ib_send_bw -R and ib_write_lat -R; two
#    rdma_server processes on B at once, and a third
#    process on B (tests/verbs/rdmacm_multi) connected to both at once.
# 2d. Isolation: while an rping pair on B is connected, a third process on
#    B names every handle the device's CM could have given them (RELEASE,
#    DISCONNECT, REJECT, UNLISTEN, RTU, ESTABLISHED; tests/verbs/
#    rdmacm_foreign): all refused (ENOENT), no event of theirs seen, and
#    the pair completes its pings (-C 1000 -V).
# 2e. A client SIGKILLed while connected: the daemon sends the DREQ for its
#    context (device A's CM counters), the server's rdma_cm reports
#    DISCONNECTED (rping -s prints "DISCONNECT EVENT" and ends).
# 2b. Not provided, refused cleanly: mckey (multicast join: ENOSYS) ends
#    with its error status and no signal.
# 3. Under --fault drop=2,dup=1,reorder=1,seed=N (CM MADs and data alike):
#    rping -C 1000 -V and ucmatose -c 4 complete.
# 4. The daemons stop cleanly (exit 0).
#
# A server is ready once its process has the "vrdma-cm" thread (started by
# rdma_listen once the device's CM took the listen); each client then runs
# once. Every process runs under a timeout. Not covered: multicast
# (rsockets: rsocket.sh).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/librdmacm.so.1"
API="$VRDMA_BUILD/tests/verbs/rdmacm_api"
MULTI="$VRDMA_BUILD/tests/verbs/rdmacm_multi"
FOREIGN="$VRDMA_BUILD/tests/verbs/rdmacm_foreign"
STEP_TMO=150
DAEMON_TMO=900
IP_A=10.64.0.1
IP_B=10.64.0.2
LL_B=fe80::64:ff:fe00:b   # B's link-local address (EUI-64 of 02:64:00:00:00:0b)
PORT=$((20000 + $$ % 10000))
FAULT_SPEC=${VRDMA_RDMACM_FAULT:-drop=2,dup=1,reorder=1,seed=$((1 + $$ % 1000))}

ALL_TESTS="daemon_started rping_verified ucmatose udaddy rdma_server_client ib_send_bw_R
	ib_write_lat_R ib_atomic_bw_R rdmacm_api rping_ipv6 ucmatose_ipv6 udaddy_ipv6 no_listener_rejected second_process_served
	listen_in_use_refused same_device_rping two_servers_one_device foreign_handles_refused
	killed_client_disconnected mckey_refused daemon_clean_exit fault_daemon_started
	fault_rping_verified fault_ucmatose fault_daemon_clean_exit"
ALL_TESTS="$ALL_TESTS same_device_ib_send_bw_R same_device_ib_write_lat_R"

asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"
reason=""
for b in "$DAEMON" "$RUN" "$LIB" "$API" "$MULTI" "$FOREIGN"; do [ -e "$b" ] || reason="$b not built (run make)"; done
for p in rping ucmatose udaddy rdma_server rdma_client ib_send_bw ib_write_lat; do
	command -v $p >/dev/null || reason="$p not installed (scripts/deps.sh test)"
done
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

# cmpair NAME SRV_SOCK CLI_SOCK "SRV CMD" "CLI CMD" PATTERN [RETRY]: the
# server on SRV_SOCK, once it listens the client on CLI_SOCK; ok if both
# exit 0 and their output has PATTERN. RETRY: the pair runs again (at most
# 3 times) when the client's output has this text.
cmpair() {
	local name=$1 ss=$2 cs=$3 srv=$4 cli=$5 pat=$6 retry=${7:-} spid rs rc n
	for n in 1 2 3; do
		# shellcheck disable=SC2086
		vstart "$name.srv" "$ss" $srv
		spid=$VPID
		if ! wait_for cm_ready "$spid"; then
			kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
			not_ok "$name" "server did not listen: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")"
			return
		fi
		# shellcheck disable=SC2086
		vstart "$name.cli" "$cs" $cli
		wait "$VPID"; rc=$?
		if [ $rc != 0 ] && [ -n "$retry" ] && grep -q -- "$retry" "$T_TMP/$name.cli.log"; then
			echo "# $name: attempt $n: client saw \"$retry\"; again"
			kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
			continue
		fi
		wait "$spid"; rs=$?
		break
	done
	if [ "$rc" = 0 ] && [ "$rs" = 0 ] && cat "$T_TMP/$name".*.log | grep -q -- "$pat"; then
		ok "$name"
	else
		not_ok "$name" "server rc=$rs client rc=$rc (124: timed out after ${STEP_TMO}s)"
		tail -n 15 "$T_TMP/$name.srv.log" | sed 's/^/#   srv: /'
		tail -n 15 "$T_TMP/$name.cli.log" | sed 's/^/#   cli: /'
	fi
}

# perftest -R: after its TCP-less handshake the server destroys its control
# listener and listens again; a client quick enough to send its REQ in
# between is rejected (REJ reason 8, as Linux does) and perftest 4.5 does
# not retry: the pair is run again.
PERF_RACE="RDMA_CM_EVENT_REJECTED; error: 8"

run_all() {
	local t=$1 d=$2 a=$3 b=$4
	PORT=$((PORT + 1))
	cmpair "${t}rping_verified" "$b" "$a" "rping -s -a $IP_B -p $PORT -C 1000 -V" \
		"rping -c -a $IP_B -p $PORT -C 1000 -V" ""
	[ -n "$t" ] && return
	cmpair ucmatose "$b" "$a" "ucmatose -b $IP_B -c 4" "ucmatose -s $IP_B -c 4" \
		"data transfers complete"
	cmpair udaddy "$b" "$a" "udaddy -b $IP_B" "udaddy -s $IP_B" "data transfers complete"
	PORT=$((PORT + 1))
	cmpair rdma_server_client "$b" "$a" "rdma_server -s $IP_B -p $PORT" \
		"rdma_client -s $IP_B -p $PORT" "rdma_client: end 0"
	PORT=$((PORT + 1))
	cmpair ib_send_bw_R "$b" "$a" "ib_send_bw -R -p $PORT -n 200" \
		"ib_send_bw -R -p $PORT -n 200 $IP_B" "^ 65536 *200" "$PERF_RACE"
	PORT=$((PORT + 1))
	cmpair ib_write_lat_R "$b" "$a" "ib_write_lat -R -p $PORT -n 200" \
		"ib_write_lat -R -p $PORT -n 200 $IP_B" "^ 2 *200" "$PERF_RACE"
	PORT=$((PORT + 1))
	cmpair ib_atomic_bw_R "$b" "$a" "ib_atomic_bw -R -p $PORT -n 200" \
		"ib_atomic_bw -R -p $PORT -n 200 $IP_B" "^ 8 *200" "$PERF_RACE"
}

# two_servers: two rdma_server processes on B (ports PORT+1, PORT+2) at
# once, and one process on B connected to both at once.
two_servers() {
	local p1=$((PORT + 1)) p2=$((PORT + 2)) s1 s2 rc r1 r2
	PORT=$p2
	vstart ms1.srv "$B" rdma_server -s $IP_B -p $p1
	s1=$VPID
	vstart ms2.srv "$B" rdma_server -s $IP_B -p $p2
	s2=$VPID
	if ! wait_for cm_ready "$s1" || ! wait_for cm_ready "$s2"; then
		kill "$s1" "$s2" 2>/dev/null; wait "$s1" "$s2" 2>/dev/null
		not_ok two_servers_one_device "the servers did not listen"
		return
	fi
	vstart ms.cli "$B" "$MULTI" $IP_B $p1 $p2
	wait "$VPID"; rc=$?
	wait "$s1"; r1=$?
	wait "$s2"; r2=$?
	if [ $rc = 0 ] && [ $r1 = 0 ] && [ $r2 = 0 ] &&
	   grep -q "rdmacm_multi: 2 connections ok" "$T_TMP/ms.cli.log" &&
	   grep -q "rdma_server: end 0" "$T_TMP/ms1.srv.log" &&
	   grep -q "rdma_server: end 0" "$T_TMP/ms2.srv.log"; then
		ok two_servers_one_device
	else
		not_ok two_servers_one_device "client rc=$rc servers rc=$r1 $r2"
		cat "$T_TMP"/ms*.log | tail -n 20 | sed 's/^/#   /'
	fi
}

# foreign_handles: rdmacm_foreign on B while an rping pair of B is connected.
foreign_handles() {
	local srv cli rc rs rcl
	PORT=$((PORT + 1))
	vstart iso.srv "$B" rping -s -a $IP_B -p $PORT -C 1000 -V -v
	srv=$VPID
	if ! wait_for cm_ready "$srv"; then
		kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
		not_ok foreign_handles_refused "server did not listen"
		return
	fi
	vstart iso.cli "$B" rping -c -a $IP_B -p $PORT -C 1000 -V -v
	cli=$VPID
	wait_for grep -qs "ping data" "$T_TMP/iso.cli.log"
	vstart iso.foreign "$B" "$FOREIGN"
	wait "$VPID"; rc=$?
	wait "$cli"; rcl=$?
	wait "$srv"; rs=$?
	if [ $rc = 0 ] && [ $rcl = 0 ] && [ $rs = 0 ] &&
	   grep -q "rdmacm_foreign: 24576 commands refused" "$T_TMP/iso.foreign.log"; then
		ok foreign_handles_refused
	else
		not_ok foreign_handles_refused "foreign rc=$rc client rc=$rcl server rc=$rs"
		tail -n 5 "$T_TMP/iso.foreign.log" | sed 's/^/#   /'
	fi
}

# cm_count DAEMON DEV WAY FIELD: a CM counter of device DEV ("cm sent" or
# "cm recv" line of the stats dump).
cm_count() {
	d_stats "$1" | awk -v dev="$2" -v way="$3" -v f="$4" '
		/^device / { d = $2 }
		d == dev && $1 == "cm" && $2 == way {
			for (i = 3; i < NF; i++) if ($i == f) print $(i + 1)
		}' | head -n 1
}

# killed_client: rping -c on A SIGKILLed while pinging rping -s on B.
killed_client() {
	local srv cli pid rs sent0 rel0 recv0 sent rel recv
	PORT=$((PORT + 1))
	vstart kill.srv "$B" rping -s -a $IP_B -p $PORT -v
	srv=$VPID
	if ! wait_for cm_ready "$srv"; then
		kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
		not_ok killed_client_disconnected "server did not listen"
		return
	fi
	vstart kill.cli "$A" rping -c -a $IP_B -p $PORT -v
	cli=$VPID
	if ! wait_for grep -qs "ping data" "$T_TMP/kill.cli.log"; then
		kill "$cli" "$srv" 2>/dev/null; wait "$cli" "$srv" 2>/dev/null
		not_ok killed_client_disconnected "client did not ping"
		return
	fi
	sent0=$(cm_count d dev0 sent dreq)
	rel0=$(cm_count d dev0 contexts_gone conns_released)
	recv0=$(cm_count d dev1 recv dreq)
	pid=$(pgrep -P "$cli" | head -n 1)
	[ -n "$pid" ] && kill -KILL "$pid"
	{ wait "$cli"; } 2>/dev/null # its "Killed" job message
	wait "$srv"; rs=$?
	# the server heard of it through the DREQ: the counters are final
	sent=$(cm_count d dev0 sent dreq)
	rel=$(cm_count d dev0 contexts_gone conns_released)
	recv=$(cm_count d dev1 recv dreq)
	echo "# killed client: server rc=$rs; device A's CM: DREQ sent $sent0 -> $sent," \
		"connections of gone contexts released $rel0 -> $rel; B's CM: DREQ received $recv"
	# rping ends on whichever comes first: the DISCONNECTED event, or the
	# error completion of an RDMA op in flight towards the gone QP
	if [ $rs != 124 ] && [ "${recv:-0}" -gt "${recv0:-0}" ] &&
	   grep -Eq "server DISCONNECT EVENT|cq completion failed|completion error" "$T_TMP/kill.srv.log" &&
	   [ "${sent:-0}" -gt "${sent0:-0}" ] && [ "${rel:-0}" -gt "${rel0:-0}" ]; then
		ok killed_client_disconnected
	else
		not_ok killed_client_disconnected "server rc=$rs"
		tail -n 15 "$T_TMP/kill.srv.log" | sed 's/^/#   srv: /'
	fi
}

A="$T_TMP/a.sock"
B="$T_TMP/b.sock"
if d_start d --device "socket=$A,mac=02:64:00:00:00:0a,ip=$IP_A/24" \
	--device "socket=$B,mac=02:64:00:00:00:0b,ip=$IP_B/24"; then
	ok daemon_started
	run_all "" d "$A" "$B"
	vstart api "$A" "$API" $IP_A
	wait "$VPID"; rc=$?
	if [ $rc = 0 ] && [ "$(grep -c '^ok rdmacm_api' "$T_TMP/api.log")" = 6 ]; then
		ok rdmacm_api
	else
		not_ok rdmacm_api "exit status $rc"
		sed 's/^/#   /' "$T_TMP/api.log" | tail -n 20
	fi
	PORT=$((PORT + 1))
	cmpair rping_ipv6 "$B" "$A" "rping -s -a $LL_B -p $PORT -C 100 -V" \
		"rping -c -a $LL_B -p $PORT -C 100 -V" ""
	cmpair ucmatose_ipv6 "$B" "$A" "ucmatose -b $LL_B -c 2" "ucmatose -s $LL_B -c 2" \
		"data transfers complete"
	cmpair udaddy_ipv6 "$B" "$A" "udaddy -b $LL_B" "udaddy -s $LL_B" "data transfers complete"
	# 2: a CM on B (a listener on PORT) but nobody on PORT + 1
	PORT=$((PORT + 1))
	vstart nl.srv "$B" rping -s -a $IP_B -p $PORT -C 1
	nlpid=$VPID
	if wait_for cm_ready "$nlpid"; then
		vstart nl.cli "$A" rping -c -a $IP_B -p $((PORT + 1)) -C 1
		wait "$VPID"; rc=$?
		if [ $rc != 0 ] && [ $rc != 124 ]; then ok no_listener_rejected
		else not_ok no_listener_rejected "client rc=$rc: $(tr '\n' ' ' <"$T_TMP/nl.cli.log")"; fi
	else
		not_ok no_listener_rejected "server did not listen"
	fi
	# 2a: nlpid listens on B's PORT: another process of B serves another
	# port, and a listen on PORT fails
	cmpair second_process_served "$B" "$A" "rping -s -a $IP_B -p $((PORT + 2)) -C 10 -V" \
		"rping -c -a $IP_B -p $((PORT + 2)) -C 10 -V" ""
	vstart inuse "$B" rping -s -a $IP_B -p $PORT -C 1
	wait "$VPID"; rc=$?
	if { [ $rc = 255 ] || { [ $rc != 0 ] && [ $rc -lt 124 ]; }; } &&
	   grep -q "rdma_listen: Address already in use" "$T_TMP/inuse.log"; then
		ok listen_in_use_refused
	else
		not_ok listen_in_use_refused "rc=$rc: $(tr '\n' ' ' <"$T_TMP/inuse.log")"
	fi
	kill "$nlpid" 2>/dev/null; wait "$nlpid" 2>/dev/null
	# 2c: server and client on one device; two servers and a third process
	PORT=$((PORT + 3))
	cmpair same_device_rping "$B" "$B" "rping -s -a $IP_B -p $PORT -C 1000 -V" \
		"rping -c -a $IP_B -p $PORT -C 1000 -V" ""
	PORT=$((PORT + 1))
	cmpair same_device_ib_send_bw_R "$B" "$B" "ib_send_bw -R -p $PORT -n 200" \
		"ib_send_bw -R -p $PORT -n 200 $IP_B" "^ 65536 *200" "$PERF_RACE"
	PORT=$((PORT + 1))
	cmpair same_device_ib_write_lat_R "$B" "$B" "ib_write_lat -R -p $PORT -n 200" \
		"ib_write_lat -R -p $PORT -n 200 $IP_B" "^ 2 *200" "$PERF_RACE"
	two_servers
	# 2d: another process's handles
	foreign_handles
	# 2e: a client killed while connected
	killed_client
	# 2b: multicast is refused, without a crash
	vstart mckey "$A" mckey -m 239.1.1.1 -b $IP_A
	wait "$VPID"; rc=$?
	# an error status (255 for -1), not a timeout (124) or a signal (128+)
	if { [ $rc = 255 ] || { [ $rc != 0 ] && [ $rc -lt 124 ]; }; } &&
	   grep -q "failure joining: Function not implemented" "$T_TMP/mckey.log"; then
		ok mckey_refused
	else
		not_ok mckey_refused "rc=$rc: $(tr '\n' ' ' <"$T_TMP/mckey.log")"
	fi
	d_stop d
	if [ "$D_RC" = 0 ]; then ok daemon_clean_exit
	else not_ok daemon_clean_exit "exit status $D_RC"; tail -n 20 "$T_TMP/d.log" | sed 's/^/#   /'; fi
else
	not_ok daemon_started "$(tail -n 20 "$T_TMP/d.log" | tr '\n' ' ')"
fi

# ---- 3: under the fault injector ----
FA="$T_TMP/fa.sock"
FB="$T_TMP/fb.sock"
if d_start f --fault "$FAULT_SPEC" --device "socket=$FA,mac=02:64:00:00:01:0a,ip=$IP_A/24" \
	--device "socket=$FB,mac=02:64:00:00:01:0b,ip=$IP_B/24"; then
	ok fault_daemon_started
	echo "# fault injection: $FAULT_SPEC"
	run_all fault_ f "$FA" "$FB"
	cmpair fault_ucmatose "$FB" "$FA" "ucmatose -b $IP_B -c 4" "ucmatose -s $IP_B -c 4" \
		"data transfers complete"
	d_stats f | grep '^faults' | sed 's/^/# /'
	d_stop f
	if [ "$D_RC" = 0 ]; then ok fault_daemon_clean_exit
	else not_ok fault_daemon_clean_exit "exit status $D_RC"; fi
else
	not_ok fault_daemon_started "$(tail -n 20 "$T_TMP/f.log" | tr '\n' ' ')"
fi
t_done
