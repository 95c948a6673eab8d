#!/usr/bin/env bash
# Acceptance of the verbs extensions (issue 6): atomics, memory windows and
# invalidation, through plain libibverbs programs (tests/verbs/ext_atomic.c,
# tests/verbs/ext_mw.c) run with vrdma-run like any unmodified program. One
# daemon serves five devices on its switch: S (servers) and C1..C4 (clients,
# one process each: a device serves one front-end at a time), over GID index
# 1 (the IPv4-mapped RoCE v2 GID).
#
# 1. faa_counter: a server registers an 8-byte counter (REMOTE_ATOMIC); four
#    clients, each with its own RC QP, do FAA_ITERS FETCH_AND_ADD of 1 each
#    with 16 in flight; the counter ends at exactly 4 * FAA_ITERS, each
#    client's fetched values are distinct (and increasing in posting order),
#    and all of them together are a permutation of 0 .. 4 * FAA_ITERS - 1.
# 2. cas_lock: four clients take a spin lock (COMPARE_AND_SWAP 0 -> id),
#    increment a remote counter with RDMA READ + WRITE while holding it,
#    release it (CAS id -> 0, fetched value id); the READ also sees the lock
#    word holding the client's id; the final counter is the total of
#    increments, the lock free.
# 3. mw_*: windows and invalidation, one case per check (see ext_mw.c):
#    type 1 and type 2 windows, READ / WRITE inside (bytes compared), WRITE
#    outside the window or beyond its rights refused (REM_ACCESS_ERR, both
#    QPs in ERR, responder async event QP_ACCESS_ERR), binds granting WRITE
#    on an MR without LOCAL_WRITE fail (MW_BIND_ERR), LOCAL_INV and
#    SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey) kill the window;
#    then every case again in one session (mw_all_in_one_session).
# 4. The daemon stops cleanly on SIGTERM (exit 0; under ASan no report).
# 5. fault_*: a second daemon with --fault (drops, duplicates, reordering,
#    corruption; P in percent: 5% of the frames dropped, 2% duplicated, 2%
#    reordered, 1% corrupted): the FAA counter test again, ending at exactly
#    the sum and with the fetched values a permutation (no atomic applied
#    twice, none lost: duplicates are answered from the saved result), the
#    CAS lock test again (a CAS executed twice would break the lock or the
#    count), then a clean stop. These run over GID index 0 (IPv6 link-local):
#    the injector corrupts any byte after the Ethernet header, and an ARP
#    reply has no checksum, so a corrupted one could poison a neighbour
#    entry for a minute (real Ethernet drops such frames by their FCS);
#    neighbour discovery is checked by its ICMPv6 checksum, RoCE by its ICRC.
#
# Every process runs under a timeout; servers are waited for with a bounded
# poll of `ss -ltn`. A failure prints the programs' output and the daemon's
# counters (SIGUSR1 dump) as #-lines.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
ATOMIC="$VRDMA_BUILD/tests/verbs/ext_atomic"
MW="$VRDMA_BUILD/tests/verbs/ext_mw"

STEP_TMO=${VRDMA_EXT_STEP_TMO:-300}   # seconds one group of programs may take
DAEMON_TMO=850
FAA_ITERS=${VRDMA_EXT_FAA_ITERS:-100000}
CAS_ITERS=${VRDMA_EXT_CAS_ITERS:-5000}
FAULT_ITERS=${VRDMA_EXT_FAULT_ITERS:-5000}
FAULT_CAS_ITERS=${VRDMA_EXT_FAULT_CAS_ITERS:-300}
FAULT_SPEC=${VRDMA_EXT_FAULT:-drop=5,dup=2,reorder=2,corrupt=1,seed=$((1 + $$ % 1000))}
MW_CASES="mw1_rw mw2_ro mw2_below mw1_no_lw mw2_no_lw local_inv send_inv"

asan_preload "$LIB"
if [ -n "$PRELOAD" ]; then
	# Sanitized builds are several times slower: fewer iterations.
	FAA_ITERS=${VRDMA_EXT_FAA_ITERS:-20000}
	CAS_ITERS=${VRDMA_EXT_CAS_ITERS:-1000}
	FAULT_ITERS=${VRDMA_EXT_FAULT_ITERS:-2000}
fi

ALL_TESTS="daemon_started faa_counter cas_lock"
for c in $MW_CASES; do ALL_TESTS="$ALL_TESTS mw_$c"; done
ALL_TESTS="$ALL_TESTS mw_all_in_one_session"
ALL_TESTS="$ALL_TESTS daemon_clean_exit fault_daemon_started fault_faa_counter
	fault_cas_lock fault_daemon_clean_exit"

for b in "$DAEMON" "$RUN" "$ATOMIC" "$MW"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done
# The binaries are copied first (a tree of their own: vrdma-run finds the
# libraries in ../lib): a rebuild during the run must not swap them.
mkdir -p "$T_TMP/tree/bin" "$T_TMP/tree/lib" "$T_TMP/tree/tests"
if ! cp "$DAEMON" "$RUN" "$T_TMP/tree/bin/" || ! cp "$ATOMIC" "$MW" "$T_TMP/tree/tests/" ||
   { [ -e "$LIB" ] && ! cp "$VRDMA_BUILD"/lib/*.so* "$T_TMP/tree/lib/"; }; then
	not_ok setup "cannot copy the binaries"
	t_done
fi
DAEMON="$T_TMP/tree/bin/vhost-user-rdma"
RUN="$T_TMP/tree/bin/vrdma-run"
ATOMIC="$T_TMP/tree/tests/ext_atomic"
MW="$T_TMP/tree/tests/ext_mw"
reason=""
if [ ! -e "$LIB" ]; then
	reason="$LIB not built (run make)"
elif ! command -v ss >/dev/null; then
	reason="ss (iproute2) not installed (run scripts/deps.sh test)"
fi
if [ -n "$reason" ]; then
	for t in $ALL_TESTS; do not_ok "$t" "$reason"; done
	t_done
fi

# ---- daemons ---------------------------------------------------------------------
. "$(dirname "$0")/daemon_lib.bash"




# d_check_stop NAME PREFIX SOCK...: SIGTERM; exit 0, a final dump, sockets
# removed, no sanitizer report.
d_check_stop() {
	local name=$1 t=$2 gone=1 s dumps; shift 2
	dumps=$(dumps_of "$name")
	d_stop "$name"
	for s in "$@"; do [ -e "$s" ] && gone=0; done
	if [ "$D_RC" = 0 ] && [ "$(dumps_of "$name")" -gt "$dumps" ] && [ $gone = 1 ] &&
	   ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T_TMP/$name.log"; then
		ok "${t}daemon_clean_exit"
	else
		not_ok "${t}daemon_clean_exit" "exit status $D_RC, sockets removed: $gone"
		grep -A20 -E 'Sanitizer|runtime error' "$T_TMP/$name.log" | head -40 | sed 's/^/#   /'
		tail -n 10 "$T_TMP/$name.log" | sed 's/^/#   /'
	fi
	# How hard the transport worked (information).
	awk '/^device / { dev = 1 }
	     $1 == "roce" && ($2 == "tx" || $2 == "rx") {
		for (i = 3; i < NF; i++)
			if ($i ~ /^(retransmits|timeouts|rx_dup|rx_seq_err|naks_rcvd)$/)
				s[$i] += $(i + 1) }
	     END { printf "# %s transport:", name
		   n = split("retransmits timeouts naks_rcvd rx_dup rx_seq_err", k, " ")
		   for (i = 1; i <= n; i++) printf " %s %d", k[i], s[k[i]]
		   printf "\n" }' name="$name" "$T_TMP/$name.log"
}

# ---- programs (vrun, next_port, wait_listening: tests/lib.sh) ---------------------

# group TEST DAEMON SRV_SOCK "CLI_SOCKS" "SRV_CMD" "CLI_CMD": SRV_CMD -p PORT on
# SRV_SOCK; once it listens, CLI_CMD -p PORT localhost on each of CLI_SOCKS at
# once. ok when every process exits 0 and prints its PASS line.
group() {
	local t=$1 d=$2 ss=$3 cs=$4 scmd=$5 ccmd=$6 spid i n=0 s why="" rc
	local -a pids=() names=()
	local t0=$SECONDS
	if ! next_port; then
		not_ok "$t" "no free TCP port from $PORT_BASE"
		return
	fi
	# shellcheck disable=SC2086
	vrun "$t.srv" "$ss" -- $scmd -p "$PORT" &
	spid=$!
	if wait_listening "$PORT" "$spid"; then
		for s in $cs; do
			n=$((n + 1))
			# shellcheck disable=SC2086
			vrun "$t.cli$n" "$s" -- $ccmd -p "$PORT" localhost &
			pids+=($!)
			names+=("cli$n")
		done
	else
		why="server never listened on port $PORT; "
	fi
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}"
		rc=$?
		[ $rc = 0 ] || why="$why${names[$i]} rc=$rc; "
		[ $rc = 0 ] && ! grep -q 'PASS' "$T_TMP/$t.${names[$i]}.log" &&
			why="$why${names[$i]} printed no PASS; "
	done
	wait "$spid"
	rc=$?
	[ $rc = 0 ] || why="${why}server rc=$rc; "
	[ $rc = 0 ] && ! grep -q 'PASS' "$T_TMP/$t.srv.log" && why="${why}server printed no PASS; "
	if [ -z "$why" ]; then
		ok "$t"
		echo "# $t: $((SECONDS - t0)) s"
		grep -hE 'counter|FETCH|increments|IBV_|REM_ACCESS' "$T_TMP/$t".*.log 2>/dev/null | grep -v connected |
			head -12 | sed "s/^/# $t: /"
	else
		not_ok "$t" "$why(124 = timed out after ${STEP_TMO}s)"
		for f in "$T_TMP/$t".*.log; do
			grep -E 'FAIL|Sanitizer|runtime error' "$f" | head -5 | sed "s|^|#   $(basename "$f" .log): |"
			tail -n 8 "$f" | sed "s|^|#   $(basename "$f" .log): |"
		done
		d_stats "$d" | grep -vE ' 0( |$)' | head -60 | sed 's/^/#   daemon: /'
		# the daemon's own messages (-q: warnings and errors)
		grep -vE '^(device |switch |faults |uplink |  |$)' "$T_TMP/$d.log" | tail -n 20 |
			sed 's/^/#   daemon log: /'
	fi
}

# The five devices of a daemon named N: sockets $T_TMP/N.{s,c1..c4}.sock.
devices() {
	local n=$1 net=$2 i=1 s
	for s in s c1 c2 c3 c4; do
		printf -- '--device socket=%s,mac=02:44:%02x:00:00:%02x,ip=10.%d.0.%d/24 ' \
			"$T_TMP/$n.$s.sock" "$net" "$i" "$net" "$i"
		i=$((i + 1))
	done
}
socks() { local s; for s in c1 c2 c3 c4; do printf '%s ' "$T_TMP/$1.$s.sock"; done; }

# ---- 1..4: the plain daemon -------------------------------------------------------------
# shellcheck disable=SC2046
if ! d_start d $(devices d 64); then
	not_ok daemon_started "$(tail -n 20 "$T_TMP/d.log" | tr '\n' ' ')"
	t_done
fi
ok daemon_started
S="$T_TMP/d.s.sock"

group faa_counter d "$S" "$(socks d)" "$ATOMIC faa-server -c 4 -n $FAA_ITERS" \
	"$ATOMIC faa-client -n $FAA_ITERS -o 16"
group cas_lock d "$S" "$(socks d)" "$ATOMIC cas-server -c 4 -n $CAS_ITERS" \
	"$ATOMIC cas-client -n $CAS_ITERS"
for c in $MW_CASES; do
	group "mw_$c" d "$S" "$T_TMP/d.c1.sock" "$MW server" "$MW client -c $c"
done
# every case again, in one session (QPs recycled, events told apart)
group mw_all_in_one_session d "$S" "$T_TMP/d.c1.sock" "$MW server" "$MW client"
d_check_stop d "" "$S" $(socks d)

# ---- 5: atomics under the fault injector ------------------------------------------------
# shellcheck disable=SC2046
if d_start f --fault "$FAULT_SPEC" $(devices f 65); then
	ok fault_daemon_started
	echo "# fault injection: $FAULT_SPEC, 4 x $FAULT_ITERS FETCH_AND_ADD"
	group fault_faa_counter f "$T_TMP/f.s.sock" "$(socks f)" \
		"$ATOMIC faa-server -g 0 -c 4 -n $FAULT_ITERS" \
		"$ATOMIC faa-client -g 0 -n $FAULT_ITERS -o 16"
	group fault_cas_lock f "$T_TMP/f.s.sock" "$(socks f)" \
		"$ATOMIC cas-server -g 0 -c 4 -n $FAULT_CAS_ITERS" \
		"$ATOMIC cas-client -g 0 -n $FAULT_CAS_ITERS"
	d_check_stop f fault_ "$T_TMP/f.s.sock" $(socks f)
else
	not_ok fault_daemon_started "$(tail -n 20 "$T_TMP/f.log" | tr '\n' ' ')"
fi
t_done
