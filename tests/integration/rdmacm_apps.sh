#!/usr/bin/env bash
# Real applications over rdma_cm through vrdma-run (issue 11): unmodified
# Debian binaries, server on device B and client on device A of one daemon.
# The programs run in a network namespace made here whose veth pair holds
# the devices' addresses (10.64.0.1 on va, 10.64.0.2 on vb): libfabric's
# verbs provider offers a device for FI_EP_MSG only when an interface holds
# one of its addresses, and fi_pingpong / ucx_perftest exchange their
# addresses over TCP (their control connection stays on that namespace's
# loopback route; RDMA goes through the daemon's switch).
#
# 1. fi_info -p verbs (libfabric 1.17) lists vrdma0 for FI_EP_MSG (rdma_cm
#    RC) and vrdma0-dgram for FI_EP_DGRAM.
# 2. fi_pingpong -p verbs -e msg -c (data integrity checks, every size up
#    to 1 MiB, 100 iterations each): both exit 0, the client prints its
#    1 MiB row with 100 acknowledged.
# 2b. fi_pingpong -p "verbs;ofi_rxm" -e rdm -c (libfabric's RDM endpoint
#    over verbs, with its defaults: a 65536-entry CQ), every size up to
#    1 MiB, 100 iterations each, between the two devices and between two
#    processes on device B: both exit 0, the client prints its 1 MiB row
#    with 100 acknowledged.
# 3. ucx_perftest (UCX 1.13) put_bw over rc_verbs with zero-copy 64 KiB
#    puts (RDMA WRITE): both exit 0 and the client prints its Final row.
# 4. fio 3.33's rdma engine, verb=write (RDMA WRITE), verb=read (RDMA
#    READ) and verb=send (SEND into the server's receives), 4 MiB in 64 KiB
#    blocks: both sides exit 0 and the client reports io=4096KiB. (fio
#    tries ibv_destroy_cq before ibv_destroy_qp and acknowledges CQ events
#    by completions: the CQ still in use must be refused at once, as
#    rdma-core does, not waited on.) verb=send: see 4c below for fio's own
#    start-up race and how the test copes with it.
# 4d. qperf 0.4.11 over rdma_cm (-cm1), one connection per test: rc_bw,
#    rc_lat, rc_rdma_read_bw, rc_rdma_write_lat, and the atomics checked by
#    value (ver_rc_compare_swap, ver_rc_fetch_add): the client exits 0 and
#    prints each result. qperf ends a test with SIGALRM, whose handler has
#    no SA_RESTART: a waiting ibv_get_cq_event must return EINTR as with
#    rdma-core. Connected QPs allow remote atomics, as the kernel CM's do.
#    qperf 0.4.11 sends the server's port before rdma_listen (fixed upstream
#    after that release), so a connection can be rejected (no listener
#    yet): such an attempt is run again.
# 5. The daemon stops cleanly.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns_lib.bash"

RUN="$VRDMA_BUILD/bin/vrdma-run"
NS="vrdma-$$-apps"
IP_A=10.64.0.1
IP_B=10.64.0.2
STEP_TMO=150
ALL_TESTS="daemon_started fi_info_verbs fi_pingpong_msg fi_pingpong_rdm fi_pingpong_rdm_one_device ucx_perftest_put_bw fio_rdma_write fio_rdma_read fio_rdma_send qperf_rc_bw qperf_rc_lat qperf_rc_rdma_read_bw qperf_rc_rdma_write_lat qperf_ver_rc_compare_swap qperf_ver_rc_fetch_add daemon_clean_exit"

ns_require
if ! need setup "$NS_DAEMON" "$RUN" fi_info fi_pingpong ucx_perftest fio qperf ss; then
	for t in $ALL_TESTS; do not_ok "$t" "see setup"; done
	t_done
fi
asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"

A="$T_TMP/a.sock"
B="$T_TMP/b.sock"
if ns_add "$NS" &&
   ip link add va netns "$NS" type veth peer name vb netns "$NS" &&
   ip -n "$NS" addr add "$IP_A/24" dev va && ip -n "$NS" addr add "$IP_B/24" dev vb &&
   ip -n "$NS" link set va up && ip -n "$NS" link set vb up &&
   nsd_start d "$NS" --device "socket=$A,mac=02:64:00:00:02:0a,ip=$IP_A/24" \
	--device "socket=$B,mac=02:64:00:00:02:0b,ip=$IP_B/24"; then
	ok daemon_started
else
	not_ok daemon_started "$(nsd_tail d)"
	t_done
fi

# The programs run in the namespace (lib.sh's vrun).
VRUN_NETNS="$NS"

# free_port: a TCP port nobody listens on in the namespace.
free_port() {
	local i p
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + ($$ * 7 + RANDOM) % 20000))
		ns_tcp_listening "$NS" "$p" || { echo "$p"; return; }
	done
	echo $((20000 + $$ % 20000))
}

# pair NAME READY "SERVER" "CLIENT": the server on B in the background,
# once READY (a command given the server's pid) holds the client on A (on
# $CLI_SOCK if set); sets RC_S / RC_C.
pair() {
	local name=$1 ready=$2 srv=$3 cli=$4 spid
	# shellcheck disable=SC2086
	vrun "$name.srv" "$B" -- $srv &
	spid=$!
	if ! wait_cmd 120 $ready "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		RC_S=noready RC_C=none
		return
	fi
	# shellcheck disable=SC2086
	vrun "$name.cli" "${CLI_SOCK:-$A}" -- $cli
	RC_C=$?
	wait "$spid"
	RC_S=$?
}

report() {
	local name=$1 good=$2
	if [ "$good" = 1 ]; then
		ok "$name"
	else
		not_ok "$name" "server rc=$RC_S client rc=$RC_C (124: timed out)"
		tail -n 8 "$T_TMP/$name.srv.log" 2>/dev/null | sed 's/^/#   srv: /'
		tail -n 8 "$T_TMP/$name.cli.log" 2>/dev/null | sed 's/^/#   cli: /'
	fi
}

# 1
vrun fi_info "$A" -- fi_info -p verbs
rc=$?
if [ $rc = 0 ] && grep -q 'domain: vrdma0$' "$T_TMP/fi_info.log" &&
   grep -q 'type: FI_EP_MSG' "$T_TMP/fi_info.log" &&
   grep -q 'domain: vrdma0-dgram' "$T_TMP/fi_info.log"; then
	ok fi_info_verbs
else
	not_ok fi_info_verbs "exit status $rc: $(tr '\n' ' ' <"$T_TMP/fi_info.log" | head -c 600)"
fi

# 2
port=$(free_port)
tcp_ready() { ns_tcp_listening "$NS" "$port"; }
pair fi_pingpong_msg tcp_ready "fi_pingpong -p verbs -e msg -c -I 100 -B $port" \
	"fi_pingpong -p verbs -e msg -c -I 100 -P $port $IP_B"
g=0
[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] &&
	grep -Eq '^1m +100 += ?100 ' "$T_TMP/fi_pingpong_msg.cli.log" && g=1
report fi_pingpong_msg $g

# 2b
rdm_pair() {
	local name=$1
	port=$(free_port)
	pair "$name" tcp_ready "fi_pingpong -p verbs;ofi_rxm -e rdm -c -I 100 -B $port" \
		"fi_pingpong -p verbs;ofi_rxm -e rdm -c -I 100 -P $port $IP_B"
	g=0
	[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] &&
		grep -Eq '^1m +100 += ?100 ' "$T_TMP/$name.cli.log" && g=1
	report "$name" $g
}
rdm_pair fi_pingpong_rdm
CLI_SOCK=$B rdm_pair fi_pingpong_rdm_one_device

# 3
port=$(free_port)
pair ucx_perftest_put_bw tcp_ready "ucx_perftest -p $port" \
	"ucx_perftest -p $port -d vrdma0:1 -x rc_verbs -t put_bw -D zcopy -s 65536 -n 500 127.0.0.1"
g=0
[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] && grep -q '^Final: *500 ' "$T_TMP/ucx_perftest_put_bw.cli.log" && g=1
report ucx_perftest_put_bw $g

# 4: fio's server prints "waiting for connection" once rdma_listen returned.
fio_listening() { grep -q 'waiting for connection' "$T_TMP/$1.srv.log" 2>/dev/null; }
fio_pair() {
	local name=$1 verb=$2 job="--ioengine=rdma --port=$3 --bs=64k --size=4m"
	# shellcheck disable=SC2086
	pair "$name" "fio_listening $name" "fio --name=srv $job --rw=read --iodepth=$4" \
		"fio --name=cli $job --rw=write --iodepth=4 --verb=$verb --hostname=$IP_B"
}
fio_pair fio_rdma_write write "$(free_port)" 4
g=0
[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] && grep -q 'io=4096KiB' "$T_TMP/fio_rdma_write.cli.log" && g=1
report fio_rdma_write $g

# 4b: verb=read (RDMA READ of the server's buffers).
fio_pair fio_rdma_read read "$(free_port)" 4
g=0
[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] && grep -q 'io=4096KiB' "$T_TMP/fio_rdma_read.cli.log" && g=1
report fio_rdma_read $g

# 4c: verb=send. fio's client connects with rnr_retry_count 0 and sends
# 0.5 s after the handshake; its server posts its receives only once the
# handshake is over. A server with a receive for every block (iodepth 64 =
# 4 MiB / 64 KiB) never reposts one, so the only race left is fio's own at
# the start: a server later than 0.5 s makes the client's first SEND end in
# RNR_RETRY_EXC_ERR ("cq completion status 13"), after which fio waits for
# ever, as it would on a NIC. That attempt is stopped and run again.
fio_rnr() { grep -q 'cq completion status 13' "$T_TMP/fio_send$attempt.cli.log" 2>/dev/null; }
fio_cli_done() { ! kill -0 "$1" 2>/dev/null || fio_rnr; }
# kill_tree PID: PID and its descendants (a hung fio ignores SIGTERM while
# it waits for a CQ event).
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill -KILL "$1" 2>/dev/null
}
for attempt in 1 2 3; do
	port=$(free_port)
	job="--ioengine=rdma --port=$port --bs=64k --size=4m"
	# shellcheck disable=SC2086
	vrun "fio_send$attempt.srv" "$B" -- fio --name=srv $job --rw=read --iodepth=64 &
	spid=$!
	RC_S=noready RC_C=none
	if wait_cmd 120 fio_listening "fio_send$attempt"; then
		# shellcheck disable=SC2086
		vrun "fio_send$attempt.cli" "$A" -- fio --name=cli $job --rw=write --iodepth=4 --verb=send \
			--hostname=$IP_B &
		cpid=$!
		wait_cmd "$STEP_TMO" fio_cli_done "$cpid"
		if fio_rnr; then
			echo "# fio_rdma_send: attempt $attempt: fio's start-up race (RNR), again"
			kill_tree "$cpid"
			kill_tree "$spid"
			wait "$cpid" "$spid" 2>/dev/null
			continue
		fi
		wait "$cpid"
		RC_C=$?
		wait "$spid"
		RC_S=$?
	else
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	break
done
for s in srv cli; do cp "$T_TMP/fio_send$attempt.$s.log" "$T_TMP/fio_rdma_send.$s.log" 2>/dev/null; done
g=0
[ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] && grep -q 'io=4096KiB' "$T_TMP/fio_rdma_send.cli.log" && g=1
report fio_rdma_send $g

# 4d
port=$(free_port)
vrun qperf.srv "$B" -- qperf -lp "$port" &
spid=$!
qperf_ready=0
wait_cmd 120 tcp_ready && qperf_ready=1
for t in rc_bw rc_lat rc_rdma_read_bw rc_rdma_write_lat ver_rc_compare_swap ver_rc_fetch_add; do
	RC_S=noready RC_C=none
	if [ $qperf_ready = 1 ]; then
		for attempt in 1 2 3 4 5; do
			vrun "qperf_$t.cli" "$A" -- qperf -lp "$port" -cm1 -t 1 "$IP_B" "$t"
			RC_C=$?
			RC_S=running
			grep -q 'Event rejected' "$T_TMP/qperf_$t.cli.log" || break
			echo "# qperf_$t: attempt $attempt: qperf's listen race (REJ), again"
		done
	fi
	g=0
	[ "$RC_C" = 0 ] && grep -Eq '^ +(bw|latency|msg_rate) += +[0-9.]+ ' "$T_TMP/qperf_$t.cli.log" &&
		g=1
	cp "$T_TMP/qperf.srv.log" "$T_TMP/qperf_$t.srv.log" 2>/dev/null
	report "qperf_$t" $g
done
kill_tree "$spid"
wait "$spid" 2>/dev/null

# 5
nsd_stop d TERM
if [ "$D_LAST_RC" = 0 ]; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "exit status $D_LAST_RC: $(nsd_tail d)"
fi
t_done
