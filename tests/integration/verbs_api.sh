#!/usr/bin/env bash
# The modern verbs API and what libraries probe (issue 18), through
# vrdma-run on two devices A and B of one daemon (GID index 1, the
# IPv4-mapped RoCE v2 GID):
#
# 1. api_cq (tests/verbs/api_cq.c): extended CQs, every supported wc_flag
#    checked against the work that produced it, timestamps, refusals.
# 2. api_wr (tests/verbs/api_wr.c): every ibv_wr_* operation of the
#    qp_ex API with the data compared, batches, abort, errors, windows.
# 3. api_query (tests/verbs/api_query.c): ibv_query_device_ex, port, GID
#    queries compared with the basic calls; domains, MRs at an iova, clean
#    refusals.
#    Each runs as one process on both devices (vrdma-run --socket A
#    --socket B), exits 0 and prints PASS; the number of checks is shown.
#    api_pyverbs (tests/verbs/api_pyverbs.py, Debian's python3-pyverbs):
#    every pyverbs module loads, its queries agree, a PD, MR and (extended)
#    CQs work.
# 4. ucx_info -d (UCX 1.13, Debian's ucx-utils) lists the memory domain
#    vrdma0 with the transports rc_verbs and ud_verbs on device vrdma0:1;
#    with the device files turned off (VRDMA_DEVFILES=0) it lists none (UCX
#    only offers a device whose /dev/infiniband node exists).
# 5. ucx_perftest tag_bw (64 KiB messages) between a server on A and a
#    client on B, over ud_verbs alone with UCX's default GID (index 1,
#    IPv4) and with GID index 0 (IPv6), and over rc_verbs (with ud_verbs for
#    wire-up): both exit 0 and the client prints its Final row. ucx_perftest does not check payloads; the data
#    path itself is checked byte for byte by 1-3.
# 6. Open MPI 4.1 (Debian's openmpi-bin) with its UCX layer (pml ucx over
#    rc_verbs and ud_verbs, nothing else): tests/mpi/mpi_pingpong.c, built
#    here with mpicc, one rank on each device: every size from 1 byte to
#    1 MiB there and back, changed by the other rank and compared byte for
#    byte, and an allreduce; mpirun exits 0 and rank 0 prints PASS.
# 7. The daemon stops cleanly on SIGTERM.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
PROGS="api_cq api_wr api_query"
STEP_TMO=300
DAEMON_TMO=600

asan_preload "$LIB"

ALL_TESTS="daemon_started $PROGS api_pyverbs ucx_info_lists_verbs ucx_info_needs_dev_node
	ucx_perftest_ud_verbs ucx_perftest_ud_verbs_gid0 ucx_perftest_rc_verbs mpi_ucx_pingpong
	daemon_clean_exit"
for b in "$DAEMON" "$RUN"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done
if [ ! -e "$LIB" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$LIB not built (run make)"; done
	t_done
fi

. "$(dirname "$0")/daemon_lib.bash"

SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"
NET=$((100 + $$ % 100))
if ! d_start d --device "socket=$SA,mac=02:44:18:00:00:01,ip=10.$NET.18.1/24" \
	--device "socket=$SB,mac=02:44:18:00:00:02,ip=10.$NET.18.2/24"; then
	not_ok daemon_started "$(tail -n 20 "$T_TMP/d.log" | tr '\n' ' ')"
	t_done
fi
ok daemon_started

for p in $PROGS; do
	vrun "$p" "$SA" "$SB" -- "$VRDMA_BUILD/tests/verbs/$p"
	rc=$?
	if [ $rc = 0 ] && grep -q "^$p: PASS" "$T_TMP/$p.log"; then
		ok "$p"
		echo "# $p: $(grep -c "^$p: ok:" "$T_TMP/$p.log") checks passed"
	else
		not_ok "$p" "exit status $rc"
		grep -E 'FAIL|Sanitizer|runtime error' "$T_TMP/$p.log" | head -20 | sed 's/^/#   /'
		tail -n 5 "$T_TMP/$p.log" | sed 's/^/#   /'
	fi
done

vrun api_pyverbs "$SA" -- /usr/bin/python3 "$VRDMA_TOP/tests/verbs/api_pyverbs.py"
rc=$?
if [ $rc = 0 ] && grep -q "^api_pyverbs: PASS" "$T_TMP/api_pyverbs.log"; then
	ok api_pyverbs
	echo "# api_pyverbs: $(grep -c "^api_pyverbs: ok:" "$T_TMP/api_pyverbs.log") checks passed"
else
	not_ok api_pyverbs "exit status $rc"
	grep -E 'FAIL|Error|Sanitizer' "$T_TMP/api_pyverbs.log" | head -10 | sed 's/^/#   /'
	tail -n 5 "$T_TMP/api_pyverbs.log" | sed 's/^/#   /'
fi

# UCX: a memory domain vrdma0 with rc_verbs and ud_verbs on vrdma0:1.
ucx_lists() {
	awk '/^# Memory domain:/ { md = $4 }
	     /^#      Transport:/ { tl = $3 }
	     /^#         Device:/ { if (md == "vrdma0" && $3 == "vrdma0:1") seen[tl] = 1 }
	     END { exit !(seen["rc_verbs"] && seen["ud_verbs"]) }' "$1"
}
vrun ucx_info "$SA" -- ucx_info -d
rc=$?
if [ $rc = 0 ] && ucx_lists "$T_TMP/ucx_info.log"; then
	ok ucx_info_lists_verbs
	grep -E '^# Memory domain: vrdma|Transport: (rc|ud)_verbs|Device: vrdma' "$T_TMP/ucx_info.log" |
		sed 's/^# */# ucx_info: /'
else
	not_ok ucx_info_lists_verbs "exit status $rc; no rc_verbs / ud_verbs on vrdma0:1"
	grep -E 'Memory domain|Transport|Device:|ERROR|WARN' "$T_TMP/ucx_info.log" | head -30 |
		sed 's/^/#   /'
fi
VRDMA_DEVFILES=0 vrun ucx_info_nofiles "$SA" -- ucx_info -d
rc=$?
if [ $rc = 0 ] && grep -q 'Transport: tcp' "$T_TMP/ucx_info_nofiles.log" &&
   ! grep -q 'vrdma0' "$T_TMP/ucx_info_nofiles.log"; then
	ok ucx_info_needs_dev_node
else
	not_ok ucx_info_needs_dev_node "exit status $rc, or vrdma0 listed without the device files"
fi

# ucx_perftest server on A, client on B (a free TCP port, bounded waits).
ucx_perf() {
	local t=$1 tls=$2 gid=$3 port spid rc src why=""
	next_port
	port=$PORT
	UCX_TLS=$tls UCX_NET_DEVICES=vrdma0:1 UCX_IB_GID_INDEX=$gid \
		vrun "$t.srv" "$SA" -- ucx_perftest -p "$port" &
	spid=$!
	wait_listening "$port" "$spid"
	UCX_TLS=$tls UCX_NET_DEVICES=vrdma0:1 UCX_IB_GID_INDEX=$gid \
		vrun "$t.cli" "$SB" -- ucx_perftest -p "$port" -t tag_bw -s 65536 -n 500 127.0.0.1
	rc=$?
	[ $rc = 0 ] || why="client exit status $rc; "
	grep -q '^Final:' "$T_TMP/$t.cli.log" || why="${why}no Final row; "
	wait "$spid"
	src=$?
	[ $src = 0 ] || why="${why}server exit status $src"
	if [ -z "$why" ]; then
		ok "$t"
		grep '^Final:' "$T_TMP/$t.cli.log" | sed "s/^/# $t: /"
	else
		not_ok "$t" "$why"
		grep -hE 'ERROR|Fatal|WARN' "$T_TMP/$t".*.log | head -10 | sed 's/^/#   /'
	fi
}
ucx_perf ucx_perftest_ud_verbs ud_verbs auto
ucx_perf ucx_perftest_ud_verbs_gid0 ud_verbs 0
ucx_perf ucx_perftest_rc_verbs rc_verbs,ud_verbs auto

# 6: each rank runs under vrdma-run (with the sanitizer runtimes first in
# the ASan build), mpirun itself does not.
rank_cmd() {
	echo "env ${PRELOAD:+LD_PRELOAD=$PRELOAD} ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 $RUN --socket $1 -- $T_TMP/mpi_pingpong"
}
if ! mpicc -O2 -o "$T_TMP/mpi_pingpong" "$(dirname "$0")/../mpi/mpi_pingpong.c" >"$T_TMP/mpicc.log" 2>&1; then
	not_ok mpi_ucx_pingpong "mpicc: $(head -c 300 "$T_TMP/mpicc.log")"
else
	# shellcheck disable=SC2046
	timeout -k 5 "$STEP_TMO" mpirun --allow-run-as-root --oversubscribe \
		-x UCX_NET_DEVICES=vrdma0:1 -x UCX_TLS=rc_verbs,ud_verbs,self \
		--mca pml ucx --mca btl self --mca osc ^ucx \
		-np 1 $(rank_cmd "$SA") : -np 1 $(rank_cmd "$SB") >"$T_TMP/mpi.log" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^mpi_pingpong: PASS' "$T_TMP/mpi.log"; then
		ok mpi_ucx_pingpong
	else
		not_ok mpi_ucx_pingpong "mpirun exit status $rc"
		tail -n 12 "$T_TMP/mpi.log" | sed 's/^/#   /'
	fi
fi

d_stop d
if [ "$D_RC" = 0 ] && ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T_TMP/d.log"; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "exit status $D_RC"
	tail -n 10 "$T_TMP/d.log" | sed 's/^/#   /'
fi
t_done
