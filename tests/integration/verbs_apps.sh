#!/usr/bin/env bash
# Unmodified Debian verbs programs (ibverbs-utils, perftest) on vrdma through
# vrdma-run: the acceptance of issue 5 inside one back-end. One daemon serves
# two devices, A (vrdma0 of the client) and B (vrdma0 of the server), joined
# by its switch; every server runs on B and every client on A, as two
# processes, over GID index 1 (the IPv4-mapped RoCE v2 GID).
#
# 1. ibv_devices and ibv_devinfo -v (both devices in one process): names
#    vrdma0 / vrdma1, node GUIDs made from the MACs (EUI-64), one port,
#    PORT_ACTIVE, Ethernet link layer, the active MTU of a 1500-byte device,
#    GID[0] the link-local address from the MAC and GID[1] ::ffff:IPv4, both
#    RoCE v2.
# 2. ibv_rc_pingpong -c (buffers validated), ibv_rc_pingpong -c -e (CQ
#    events), ibv_rc_pingpong -c -t -e (extended CQ with timestamps and
#    events: an event must find a completion to poll), ibv_uc_pingpong,
#    ibv_ud_pingpong: both sides exit 0 and print
#    their "bytes in ... seconds" and "iters in ... seconds" lines.
# 3. perftest ib_send_bw, ib_write_bw, ib_read_bw, and ib_write_bw -c UC
#    -a (every size 2..8 MiB: the client prints a row for each, the server
#    exits 0 with its row) and
#    ib_send_lat, ib_write_lat, ib_read_lat -s 65536 (the client prints the
#    65536-byte row).
# 3b. The extensions of issue 6: ibv_srq_pingpong -g 0 (shared receive
#    queues, over the link-local GID) prints its bandwidth and latency
#    lines on both ends; ib_atomic_bw and ib_atomic_lat with -A FETCH_AND_ADD
#    and -A CMP_AND_SWAP print their 8-byte rows (atomic_cap HCA, REMOTE_ATOMIC
#    MRs and QPs, the atomic responder).
# 4. The daemon stops cleanly on SIGTERM (exit 0: no sanitizer report under
#    ASan, final --stats dump) and that dump shows no errors: no failed
#    commands, broken rings, QPs moved to error, CQ overflows, or completions
#    with an error status other than flushes.
# 5. A second daemon in busy-poll mode (--poll-us 50): ibv_rc_pingpong -c
#    and ib_send_bw -a again, then the same clean stop and health check.
#
# Servers listen on TCP ports picked from 20000 + pid % 10000 (free ones
# only) and are waited for with a bounded poll of `ss -ltn`; every process
# runs under a timeout. A failure prints both programs' output and the
# daemon's counters (SIGUSR1 dump) as #-lines.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"

SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"
SPA="$T_TMP/pa.sock"
SPB="$T_TMP/pb.sock"
MAC_A=02:11:22:33:44:0a
MAC_B=02:11:22:33:44:0b
IP_A=10.61.0.1
IP_B=10.61.0.2

ITERS=50                # perftest iterations per size
STEP_TMO=150            # seconds any one verbs program may take (ASan is slow)
DAEMON_TMO=600          # the daemon's own bound

asan_preload "$LIB"

ALL_TESTS="ibv_devices ibv_devinfo rc_pingpong_chk rc_pingpong_events rc_pingpong_ts_events uc_pingpong
	ud_pingpong ib_send_bw ib_write_bw ib_read_bw uc_ib_write_bw ib_send_lat ib_write_lat
	ib_read_lat srq_pingpong ib_atomic_bw_fetch_add ib_atomic_bw_cmp_swap ib_atomic_lat_fetch_add
	ib_atomic_lat_cmp_swap daemon_clean_exit daemon_health onecopy poll_daemon_started
	poll_rc_pingpong_chk poll_ib_send_bw poll_daemon_clean_exit poll_daemon_health poll_onecopy"

for b in "$DAEMON" "$RUN"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done
reason=""
if [ ! -e "$LIB" ]; then
	reason="$LIB not built (run make)"
elif ! command -v ibv_rc_pingpong >/dev/null || ! command -v ib_send_bw >/dev/null; then
	reason="ibverbs-utils / perftest not installed (scripts/deps.sh test)"
elif ! command -v ss >/dev/null; then
	reason="ss (iproute2) not installed (run scripts/deps.sh test)"
fi
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

# ---- daemons -------------------------------------------------------------------
declare -A ALLOW=()             # name -> "dev:counter:max ..." tolerated by the health check
. "$(dirname "$0")/daemon_lib.bash"





# d_check_stop NAME SOCK...: the daemon stops cleanly (exit 0, one more
# dump, sockets removed), then its last dump shows no errors.
d_check_stop() {
	local name=$1 t=$2 dumps bad; shift 2
	dumps=$(dumps_of "$name")
	d_stop "$name"
	local gone=1 s
	for s in "$@"; do [ -e "$s" ] && gone=0; done
	if [ "$D_RC" = 0 ] && [ "$(dumps_of "$name")" -gt "$dumps" ] && [ $gone = 1 ]; then
		ok "${t}daemon_clean_exit"
	else
		not_ok "${t}daemon_clean_exit" "exit status $D_RC, sockets removed: $gone"
		tail -n 30 "$T_TMP/$name.log" | sed 's/^/#   /'
	fi
	# The last dump: from the last "device" block before the final
	# "faults" line back to the first device of that dump.
	awk '/^device /  { if (!indump) { buf = ""; indump = 1 } }
	     indump      { buf = buf $0 "\n" }
	     /^faults /  { last = buf; indump = 0 }
	     END         { printf "%s", last }' "$T_TMP/$name.log" >"$T_TMP/$name.last"
	# wc_ext counts completions with an extension opcode (atomics...), not
	# errors; ALLOW[NAME] lists "dev:counter:max" tolerated counts.
	bad=$(awk -v errs="ctrl_err ring_errors tx_errors bad_messages mem_faults \
		tx_build_err wr_bad_chain qp_errors cq_overflows cqe_dropped cq_bad_buffers \
		rx_bad_resp neigh_dropped wc_ext_blocked srq_errors cq_err_events" \
		-v allow="${ALLOW[$name]}" '
		BEGIN { n = split(errs, e, " "); for (i = 1; i <= n; i++) is_err[e[i]] = 1
			n = split(allow, a, " ")
			for (i = 1; i <= n; i++) { split(a[i], f, ":"); tol[f[1] " " f[2]] = f[3] } }
		$1 == "device" { dev = $2; next }
		/^[^ ]/ { dev = ""; next }
		dev != "" {
			for (i = 1; i < NF; i++) {
				k = $i; v = $(i + 1)
				if (v !~ /^[0-9]+$/ || v == 0) continue
				if ((dev " " k) in tol && v <= tol[dev " " k]) continue
				if ((k in is_err) ||
				    ($1 == "roce" && $2 == "commands" && k == "err") ||
				    (k ~ /^wc_/ && k != "wc_success" && k != "wc_wr_flush_err" &&
				     k != "wc_ext"))
					printf "%s %s %s; ", dev, k == "err" ? "roce_commands_err" : k, v
			}
		}' "$T_TMP/$name.last")
	if [ ! -s "$T_TMP/$name.last" ]; then
		not_ok "${t}daemon_health" "no final --stats dump"
	elif [ -z "$bad" ]; then
		ok "${t}daemon_health"
	else
		not_ok "${t}daemon_health" "$bad"
		sed 's/^/#   /' "$T_TMP/$name.last"
	fi
	# RC payloads between the two local devices went by reference and were
	# placed from the sender's memory (docs/design.md, "One copy between
	# local devices"): both counters moved, by the same packets.
	local onecopy
	onecopy=$(awk '$1 == "roce" && ($2 == "tx" || $2 == "rx") {
		for (i = 3; i < NF; i++)
			if ($i == "tx_by_ref" || $i == "rx_by_ref") s[$i] += $(i + 1) }
	     END { printf "%d %d", s["tx_by_ref"], s["rx_by_ref"] }' "$T_TMP/$name.last")
	if [ "${onecopy% *}" -gt 0 ] && [ "${onecopy#* }" -gt 0 ]; then
		ok "${t}onecopy"
	else
		not_ok "${t}onecopy" "tx_by_ref rx_by_ref: $onecopy"
	fi
	# How hard the transport had to work (information, not a check).
	awk '$1 == "roce" && $2 == "tx" {
		for (i = 3; i < NF; i++)
			if ($i ~ /^(retransmits|timeouts|rewinds|naks_rcvd|rnr_naks_rcvd)$/)
				s[$i] += $(i + 1) }
	     $1 == "roce" && $2 == "rx" {
		for (i = 3; i < NF; i++)
			if ($i ~ /^(rx_dup|rx_seq_err)$/) s[$i] += $(i + 1) }
	     END { printf "# %s transport:", name
		   n = split("retransmits timeouts rewinds naks_rcvd rnr_naks_rcvd rx_dup rx_seq_err", k, " ")
		   for (i = 1; i <= n; i++) printf " %s %d", k[i], s[k[i]]
		   printf "\n" }' name="$name" "$T_TMP/$name.last"
}

# ---- verbs programs (vrun, next_port, wait_listening: tests/lib.sh) ------------
# diag NAME DAEMON RC_SRV RC_CLI: #-lines telling why a pair failed.
diag() {
	local name=$1 d=$2
	echo "#   server rc=$3 client rc=$4 (124 = timed out after ${STEP_TMO}s)"
	tail -n 25 "$T_TMP/$name.srv.log" 2>/dev/null | sed 's/^/#   srv: /'
	tail -n 25 "$T_TMP/$name.cli.log" 2>/dev/null | sed 's/^/#   cli: /'
	d_stats "$d" | sed 's/^/#   daemon: /'
}

# pair NAME DAEMON SRV_SOCK CLI_SOCK CMD...: CMD -p PORT as a server on
# SRV_SOCK, once it listens the same with localhost as a client on CLI_SOCK.
# Sets RC_S / RC_C; fails (with PAIR_WHY) if the server never listened.
pair() {
	local name=$1 d=$2 ss=$3 cs=$4 spid; shift 4
	RC_S=-1 RC_C=-1 PAIR_WHY=""
	if ! next_port; then
		PAIR_WHY="no free TCP port from $PORT_BASE"
		return 1
	fi
	vrun "$name.srv" "$ss" -- "$@" -p "$PORT" &
	spid=$!
	if ! wait_listening "$PORT" "$spid"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		RC_S=$?
		PAIR_WHY="server never listened on port $PORT"
		return 1
	fi
	vrun "$name.cli" "$cs" -- "$@" -p "$PORT" localhost
	RC_C=$?
	wait "$spid"
	RC_S=$?
	return 0
}

# report TEST NAME DAEMON WHY: ok if WHY is empty, else not ok with the
# diagnostics.
report() {
	if [ -z "$4" ]; then
		ok "$1"
	else
		not_ok "$1" "$4"
		diag "$2" "$3" "$RC_S" "$RC_C"
	fi
}

# pingpong TEST DAEMON SRV_SOCK CLI_SOCK PROG ARGS...: both ends exit 0 and
# print their bandwidth and latency lines.
pingpong() {
	local t=$1 d=$2 ss=$3 cs=$4 why="" f; shift 4
	if pair "$t" "$d" "$ss" "$cs" "$@"; then
		if [ "$RC_S" != 0 ] || [ "$RC_C" != 0 ]; then
			why="$1 exited with server rc=$RC_S client rc=$RC_C"
		else
			for f in srv cli; do
				grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec' \
					"$T_TMP/$t.$f.log" &&
				grep -Eq '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter' \
					"$T_TMP/$t.$f.log" || why="$why$f printed no bandwidth/latency lines; "
			done
		fi
	else
		why=$PAIR_WHY
	fi
	report "$t" "$t" "$d" "$why"
	[ -z "$why" ] && grep -E 'bytes in' "$T_TMP/$t.cli.log" | sed "s/^/# $t: /"
}

# perf_rows LOG: the byte counts of perftest's result rows, one a line
# ("#bytes #iterations ..." rows: a number, then ITERS).
perf_rows() {
	awk -v n="$ITERS" '$1 ~ /^[0-9]+$/ && $2 == n && NF >= 5 { print $1 }' "$1"
}

# perftest TEST DAEMON SRV_SOCK CLI_SOCK SIZES PROG ARGS...: both ends exit
# 0, the client prints one result row for each of SIZES (space separated),
# a bandwidth server its row for the last size.
perftest() {
	local t=$1 d=$2 ss=$3 cs=$4 sizes=$5 why="" s got last; shift 5
	if pair "$t" "$d" "$ss" "$cs" "$@" -x 1 -F -n "$ITERS"; then
		if [ "$RC_S" != 0 ] || [ "$RC_C" != 0 ]; then
			why="$1 exited with server rc=$RC_S client rc=$RC_C"
		else
			got=" $(perf_rows "$T_TMP/$t.cli.log" | tr '\n' ' ')"
			for s in $sizes; do
				[[ $got == *" $s "* ]] || why="${why}client printed no $s-byte row; "
			done
			last=${sizes##* }
			if [[ $1 == *_bw ]] &&
			   ! perf_rows "$T_TMP/$t.srv.log" | grep -qx "$last"; then
				why="${why}server printed no $last-byte row; "
			fi
		fi
	else
		why=$PAIR_WHY
	fi
	report "$t" "$t" "$d" "$why"
	[ -z "$why" ] && echo "# $t: $(perf_rows "$T_TMP/$t.cli.log" | wc -l) client rows," \
		"sizes $(perf_rows "$T_TMP/$t.cli.log" | sed -n '1p;$p' | tr '\n' ' ' |
			sed 's/ $//; s/ / .. /')"
}

ALL_SIZES=$(s=2; while [ $s -le 8388608 ]; do printf '%d ' $s; s=$((s * 2)); done)
ALL_SIZES=${ALL_SIZES% }

# ---- 1. the daemon, the devices ---------------------------------------------------
if ! d_start d \
	--device "socket=$SA,mac=$MAC_A,ip=$IP_A/24" \
	--device "socket=$SB,mac=$MAC_B,ip=$IP_B/24"; then
	not_ok daemon_started "$(tail -n 20 "$T_TMP/d.log" | tr '\n' ' ')"
	t_done
fi
ok daemon_started

# eui64 MAC: the GUID a MAC gives (ff:fe in the middle, U/L bit flipped), as
# 16 hex digits.
eui64() {
	local IFS=: b
	read -r -a b <<<"$1"
	printf '%02x%s%sfffe%s%s%s' $((0x${b[0]} ^ 2)) "${b[1]}" "${b[2]}" "${b[3]}" "${b[4]}" "${b[5]}"
}
# link_local MAC: fe80::... from the EUI-64, as ibv_devinfo prints it.
link_local() {
	local g
	g=$(eui64 "$1")
	printf 'fe80::%x:%x:%x:%x' $((0x${g:0:4})) $((0x${g:4:4})) $((0x${g:8:4})) $((0x${g:12:4}))
}
GUID_A=$(eui64 "$MAC_A")
GUID_B=$(eui64 "$MAC_B")

vrun devices "$SA" "$SB" -- ibv_devices
rc=$?
got=$(awk '$1 ~ /^vrdma/ { print $1, $2 }' "$T_TMP/devices.log" | tr '\n' ';')
if [ $rc = 0 ] && [ "$got" = "vrdma0 $GUID_A;vrdma1 $GUID_B;" ]; then
	ok ibv_devices
else
	not_ok ibv_devices "rc=$rc, want vrdma0 $GUID_A, vrdma1 $GUID_B, got '$got'"
	sed 's/^/#   /' "$T_TMP/devices.log"
fi

# devinfo_block DEV: the lines of one hca_id block.
devinfo_block() {
	awk -v d="$1" '$1 == "hca_id:" { on = ($2 == d) } on' "$T_TMP/devinfo.log"
}
# devinfo_check DEV MAC IP: what a program sees of one device.
devinfo_check() {
	local dev=$1 mac=$2 ip=$3 g errs="" blk ll
	g=$(eui64 "$mac")
	blk=$(devinfo_block "$dev")
	want() { grep -Eq "$1" <<<"$blk" || errs="$errs$dev: no '$2'; "; }
	want "^hca_id:[[:space:]]+$dev\$" "hca_id $dev"
	want "node_guid:[[:space:]]+${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}\$" "node_guid from $mac"
	want "phys_port_cnt:[[:space:]]+1\$" "phys_port_cnt 1"
	want "state:[[:space:]]+PORT_ACTIVE \(4\)" "PORT_ACTIVE"
	want "phys_state:[[:space:]]+LINK_UP" "LINK_UP"
	want "link_layer:[[:space:]]+Ethernet\$" "link_layer Ethernet"
	want "active_mtu:[[:space:]]+1024 \(3\)" "active_mtu 1024 (1500-byte device)"
	ll=$(link_local "$mac")
	want "GID\[ *0\]:[[:space:]]+$ll, RoCE v2\$" "GID[0] $ll, RoCE v2"
	want "GID\[ *1\]:[[:space:]]+::ffff:$ip, RoCE v2\$" "GID[1] ::ffff:$ip, RoCE v2"
	want "max_qp:[[:space:]]+[1-9]" "max_qp > 0"
	want "max_cq:[[:space:]]+[1-9]" "max_cq > 0"
	want "max_mr:[[:space:]]+[1-9]" "max_mr > 0"
	want "pkey_tbl_len:[[:space:]]+[1-9]" "pkey_tbl_len > 0"
	DEVINFO_ERRS="$DEVINFO_ERRS$errs"
}
vrun devinfo "$SA" "$SB" -- ibv_devinfo -v
rc=$?
DEVINFO_ERRS=""
[ $rc = 0 ] || DEVINFO_ERRS="ibv_devinfo -v exited $rc; "
devinfo_check vrdma0 "$MAC_A" "$IP_A"
devinfo_check vrdma1 "$MAC_B" "$IP_B"
[ "$(grep -c '^hca_id:' "$T_TMP/devinfo.log")" = 2 ] ||
	DEVINFO_ERRS="${DEVINFO_ERRS}not exactly two hca_id blocks; "
if [ -z "$DEVINFO_ERRS" ]; then
	ok ibv_devinfo
else
	not_ok ibv_devinfo "$DEVINFO_ERRS"
	grep -E 'hca_id|node_guid|state|link_layer|mtu|GID' "$T_TMP/devinfo.log" | sed 's/^/#   /'
fi

# ---- 2. pingpongs -----------------------------------------------------------------
pingpong rc_pingpong_chk d "$SB" "$SA" ibv_rc_pingpong -g 1 -c -n 500
pingpong rc_pingpong_events d "$SB" "$SA" ibv_rc_pingpong -g 1 -c -e -n 500
pingpong rc_pingpong_ts_events d "$SB" "$SA" ibv_rc_pingpong -g 1 -c -t -e -n 500
pingpong uc_pingpong d "$SB" "$SA" ibv_uc_pingpong -g 1 -n 500
pingpong ud_pingpong d "$SB" "$SA" ibv_ud_pingpong -g 1 -n 500

# ---- 3. perftest ------------------------------------------------------------------
perftest ib_send_bw d "$SB" "$SA" "$ALL_SIZES" ib_send_bw -a
perftest ib_write_bw d "$SB" "$SA" "$ALL_SIZES" ib_write_bw -a
perftest ib_read_bw d "$SB" "$SA" "$ALL_SIZES" ib_read_bw -a
# (UC messages of more than one packet go by reference and complete once
# placed: docs/design.md "One copy between local devices")
perftest uc_ib_write_bw d "$SB" "$SA" "$ALL_SIZES" ib_write_bw -c UC -a
perftest ib_send_lat d "$SB" "$SA" 65536 ib_send_lat -s 65536
perftest ib_write_lat d "$SB" "$SA" 65536 ib_write_lat -s 65536
perftest ib_read_lat d "$SB" "$SA" 65536 ib_read_lat -s 65536

# ---- 3b. the extensions (issue 6) --------------------------------------------------
if command -v ibv_srq_pingpong >/dev/null; then
	pingpong srq_pingpong d "$SB" "$SA" ibv_srq_pingpong -g 0 -n 500
else
	not_ok srq_pingpong "ibv_srq_pingpong not installed (ibverbs-utils: run scripts/deps.sh test)"
fi
if command -v ib_atomic_bw >/dev/null && command -v ib_atomic_lat >/dev/null; then
	perftest ib_atomic_bw_fetch_add d "$SB" "$SA" 8 ib_atomic_bw -A FETCH_AND_ADD
	perftest ib_atomic_bw_cmp_swap d "$SB" "$SA" 8 ib_atomic_bw -A CMP_AND_SWAP
	perftest ib_atomic_lat_fetch_add d "$SB" "$SA" 8 ib_atomic_lat -A FETCH_AND_ADD
	perftest ib_atomic_lat_cmp_swap d "$SB" "$SA" 8 ib_atomic_lat -A CMP_AND_SWAP
	# perftest 4.5's ib_atomic_lat server returns from main without
	# destroying its QP (checked under gdb: no ibv_destroy_qp, no
	# ibv_close_device); the device then moves that QP, whose rings were
	# stopped by the vanished front-end, to ERR (spec.md "QP states and
	# the queues"). One per run on B (dev1), not a transport error.
	ALLOW[d]="dev1:qp_errors:2"
else
	for t in ib_atomic_bw_fetch_add ib_atomic_bw_cmp_swap ib_atomic_lat_fetch_add \
		ib_atomic_lat_cmp_swap; do
		not_ok "$t" "perftest's ib_atomic_* not installed (run scripts/deps.sh test)"
	done
fi

# ---- 4. clean stop, no errors -----------------------------------------------------
d_check_stop d "" "$SA" "$SB"

# ---- 5. busy-poll mode --------------------------------------------------------------
if d_start dp --poll-us 50 \
	--device "socket=$SPA,mac=$MAC_A,ip=$IP_A/24" \
	--device "socket=$SPB,mac=$MAC_B,ip=$IP_B/24"; then
	ok poll_daemon_started
	pingpong poll_rc_pingpong_chk dp "$SPB" "$SPA" ibv_rc_pingpong -g 1 -c -n 500
	perftest poll_ib_send_bw dp "$SPB" "$SPA" "$ALL_SIZES" ib_send_bw -a
	d_check_stop dp poll_ "$SPA" "$SPB"
else
	not_ok poll_daemon_started "$(tail -n 20 "$T_TMP/dp.log" | tr '\n' ' ')"
fi
t_done
