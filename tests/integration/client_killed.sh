#!/usr/bin/env bash
# A front-end killed with SIGKILL in the middle of its traffic, 20 times, while
# another pair of devices keeps passing verified traffic.
#
#  - Devices: A (where clients get killed) and the pair B -> C. (Three
#    devices: each device serves one front-end at a time, so the pair needs
#    two devices of its own besides A.)
#  - The pair: vrdma-netcat recv on C and send on B, in runs back to back
#    until the kills are over; the receiver regenerates and compares every
#    frame, so any disturbance fails a run. (A round during which one run
#    ends and the next starts cannot compare the daemon's total counts, which
#    the pair changes too: such a round is done again.)
#  - Each round: note the daemon's fd and mapping counts, start a client on A
#    (vrdma-netcat loopback: it sends to its own MAC and verifies what comes
#    back), wait until the daemon has moved frames for it (SIGUSR1 counters),
#    note what the daemon holds for it (its socket, the client's eventfds by
#    eventfd-id, the client's memfds by inode), SIGKILL it, then poll
#    (bounded) until the daemon holds none of that and its fd and mapping
#    counts are back to the values before the client connected (under ASan
#    only the file-backed mappings: its allocator keeps what it mapped). Then a new
#    client on the same socket must pass verified loopback traffic.
#  - After the 20 rounds: the daemon is alive, nothing grew from round to
#    round, the pair verified every frame, and the daemon exits cleanly on
#    SIGTERM (under ASan: no error, no leak report).
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
NC="$VRDMA_BUILD/bin/vrdma-netcat"
MAC_A=02:00:00:00:0c:01
MAC_B=02:00:00:00:0c:02
MAC_C=02:00:00:00:0c:03
SOCK_A="$T_TMP/a.sock"
SOCK_B="$T_TMP/b.sock"
SOCK_C="$T_TMP/c.sock"
LOG="$T_TMP/daemon.err"
KILLS=${VRDMA_KILLS:-20}
PAIR_COUNT=${VRDMA_KILL_PAIR_COUNT:-1000000}

# The binaries are copied first: a rebuild of the tree during the run must not
# swap them under the test.
mkdir -p "$T_TMP/bin"
for b in "$DAEMON" "$NC"; do
	if [ ! -x "$b" ] || ! cp "$b" "$T_TMP/bin/"; then
		not_ok setup "$b not built"
		t_done
	fi
done
DAEMON="$T_TMP/bin/vhost-user-rdma"
NC="$T_TMP/bin/vrdma-netcat"

# ---- helpers ----------------------------------------------------------------

# stats / counter DEV KEY: the daemon's counter dump (tests/lib.sh).
stats() { stats_dump "$DAEMON_PID" "$LOG"; }
counter() { stats_counter "$@"; }

daemon_fds() { count_fds "$DAEMON_PID"; }
daemon_maps() { wc -l <"/proc/$DAEMON_PID/maps" 2>/dev/null; }
# File-backed mappings (the drivers' memfds, libraries) are compared in every
# build; anonymous ones belong to the allocator, which under ASan grows with
# new allocation sizes and never gives back: all mappings are compared only in
# a plain build.
daemon_file_maps() { awk '$5 != 0' "/proc/$DAEMON_PID/maps" 2>/dev/null | wc -l; }
SANITIZED=""
resources() {
	if [ -n "$SANITIZED" ]; then
		echo "$(daemon_fds) fds $(daemon_file_maps) file-backed-maps"
	else
		echo "$(daemon_fds) fds $(daemon_maps) maps"
	fi
}

# fds_of PID KIND: fd paths of PID's eventfds (KIND eventfd), memfds (memfd)
# or sockets (socket), one find(1) per call.
fds_of() {
	case "$2" in
	eventfd) find "/proc/$1/fd" -mindepth 1 -lname 'anon_inode:\[eventfd\]' 2>/dev/null ;;
	memfd) find "/proc/$1/fd" -mindepth 1 -lname '/memfd:*' 2>/dev/null ;;
	socket) find "/proc/$1/fd" -mindepth 1 -lname 'socket:*' -printf '%l\n' 2>/dev/null ;;
	esac
}

# eventfd_ids PID: the eventfd-id of every eventfd PID holds.
eventfd_ids() {
	local f
	for f in $(fds_of "$1" eventfd); do
		awk '$1 == "eventfd-id:" { print $2 }' "/proc/$1/fdinfo/${f##*/}" 2>/dev/null
	done | sort -u
}

# memfd_inodes PID: inodes of the memfds PID holds open.
memfd_inodes() {
	local f
	for f in $(fds_of "$1" memfd); do
		stat -L -c %i "$f" 2>/dev/null
	done | sort -u
}

# a_sockets: daemon sockets bound to A's path (the listener + connections).
a_sockets() {
	fds_of "$DAEMON_PID" socket | sed 's/^socket:\[\(.*\)\]$/\1/' |
		awk -v p="$SOCK_A" 'FNR == NR { mine[$1]; next } ($7 in mine) && $8 == p { n++ }
			END { print n + 0 }' - /proc/net/unix
}

# held_by_daemon: what the daemon still holds of the victim (eventfds by id,
# mappings of its memfds, connections on A's socket); empty when nothing.
# eventfd ids are recycled by the kernel: an id that a live pair process
# holds now belongs to the pair, not to the dead victim. (A pair process that
# just exited may leave a recycled id in the daemon for a moment: callers
# judge on the first sample where nothing is held, never on one sample.)
held_by_daemon() {
	local f n p efds=() held=()
	if [ -s "$T_TMP/v.efd" ]; then
		for p in $(cat "$T_TMP/pair.pids" 2>/dev/null); do
			kill -0 "$p" 2>/dev/null || continue
			eventfd_ids "$p"
		done >"$T_TMP/pair.efd"
		for f in $(fds_of "$DAEMON_PID" eventfd); do
			efds+=("/proc/$DAEMON_PID/fdinfo/${f##*/}")
		done
		[ ${#efds[@]} -gt 0 ] && held+=($(awk 'FILENAME == ARGV[1] { ids[$1]; next }
			FILENAME == ARGV[2] { delete ids[$1]; next }
			$1 == "eventfd-id:" && ($2 in ids) { n = split(FILENAME, p, "/");
				printf "eventfd:fd=%s,eventfd-id=%s\n", p[n], $2 }' \
			"$T_TMP/v.efd" "$T_TMP/pair.efd" "${efds[@]}" 2>/dev/null))
	fi
	if [ -s "$T_TMP/v.memfd" ]; then
		held+=($(awk 'FNR == NR { ino[$1]; next } ($5 in ino) { printf "mapping:%s,memfd-inode=%s\n", $1, $5 }' \
			"$T_TMP/v.memfd" "/proc/$DAEMON_PID/maps" 2>/dev/null))
	fi
	n=$(a_sockets)
	[ "$n" -gt 1 ] && held+=("$((n - 1))-connection(s)-on-A's-socket")
	[ ${#held[@]} -gt 0 ] && echo "${held[*]}"
}

# The pair: runs of recv on C / send on B until $T_TMP/pair.stop exists.
# pair.state holds "RUN RECV_PID SEND_PID" while both ends of a run are up;
# each finished run appends "RUN SEND_RC RECV_RC" to pair.runs.
pair_runs() {
	local r=0 rp sp rs rr
	while [ ! -e "$T_TMP/pair.stop" ]; do
		r=$((r + 1))
		rm -f "$T_TMP/pair.rready" "$T_TMP/pair.sready"
		"$NC" --timeout-ms 120000 --socket "$SOCK_C" --count "$PAIR_COUNT" --seed $r --ready "$T_TMP/pair.rready" \
			recv >"$T_TMP/pair.$r.recv" 2>&1 &
		rp=$!
		echo "$rp" >>"$T_TMP/pair.pids"
		if ! wait_for_file "$T_TMP/pair.rready"; then
			kill "$rp" 2>/dev/null
			wait "$rp" 2>/dev/null
			echo "$r 99 99" >>"$T_TMP/pair.runs"
			break
		fi
		"$NC" --timeout-ms 120000 --socket "$SOCK_B" --count "$PAIR_COUNT" --seed $r --dst "$MAC_C" \
			--ready "$T_TMP/pair.sready" send >"$T_TMP/pair.$r.send" 2>&1 &
		sp=$!
		echo "$sp" >>"$T_TMP/pair.pids"
		wait_for_file "$T_TMP/pair.sready" && echo "$r $rp $sp" >"$T_TMP/pair.state"
		wait "$sp"
		rs=$?
		wait "$rp"
		rr=$?
		rm -f "$T_TMP/pair.state"
		# A zero status without the summary line still fails the run.
		grep -q "^received $PAIR_COUNT frames .*all verified" "$T_TMP/pair.$r.recv" ||
			{ [ "$rr" = 0 ] && rr=98; }
		grep -q "^sent $PAIR_COUNT frames, all acknowledged" "$T_TMP/pair.$r.send" ||
			{ [ "$rs" = 0 ] && rs=98; }
		echo "$r $rs $rr" >>"$T_TMP/pair.runs"
		[ "$rs" = 0 ] && [ "$rr" = 0 ] || break
	done
}

# pair_sig: which run is up ("RUN RECV SEND up"), or "none" between runs.
pair_sig() {
	local st
	st=$(cat "$T_TMP/pair.state" 2>/dev/null)
	set -- $st
	if [ $# -eq 3 ] && kill -0 "$2" 2>/dev/null && kill -0 "$3" 2>/dev/null; then
		echo "$st up"
	else
		echo none
	fi
}
pair_steady() { [ "$(pair_sig)" != none ]; }

# ---- the daemon ---------------------------------------------------------------

"$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$T_TMP/pid" \
	--device "socket=$SOCK_A,mac=$MAC_A" \
	--device "socket=$SOCK_B,mac=$MAC_B" \
	--device "socket=$SOCK_C,mac=$MAC_C" 2>"$LOG" &
DAEMON_PID=$!
T_PIDS+=("$DAEMON_PID")
if wait_for_file "$T_TMP/pid" && [ "$(cat "$T_TMP/pid")" = "$DAEMON_PID" ]; then
	ok daemon_started
else
	not_ok daemon_started "no pid file: $(head -5 "$LOG" | tr '\n' ' ')"
	t_done
fi
grep -qE 'lib(asan|ubsan)' "/proc/$DAEMON_PID/maps" && SANITIZED=1
IDLE_FDS=$(daemon_fds)

# Warm-up: each device once (an ASan build's allocator maps memory on first
# use and keeps it; the counts below are taken after this).
if "$NC" --timeout-ms 120000 --socket "$SOCK_A" --count 200 --seed 1 loopback >"$T_TMP/warm" 2>&1 &&
   "$NC" --timeout-ms 120000 --socket "$SOCK_B" --count 100 --seed 2 loopback >>"$T_TMP/warm" 2>&1 &&
   "$NC" --timeout-ms 120000 --socket "$SOCK_C" --count 100 --seed 3 loopback >>"$T_TMP/warm" 2>&1; then
	ok warm_up_loopback
else
	not_ok warm_up_loopback "$(tr '\n' ' ' <"$T_TMP/warm")"
fi
fds_idle() { [ "$(daemon_fds)" = "$IDLE_FDS" ]; }
wait_for fds_idle
IDLE_RES=$(resources)

# ---- the pair -------------------------------------------------------------------

pair_runs &
PAIR_LOOP=$!
T_PIDS+=("$PAIR_LOOP")
# Mid-traffic: the daemon has moved frames from B.
pair_moving() { pair_steady && stats && [ "$(counter dev1 tx_frames)" -gt 1000 ]; }
if wait_for pair_moving; then
	ok pair_started
else
	not_ok pair_started "no frames from B: $(cat "$T_TMP"/pair.1.* 2>/dev/null | tr '\n' ' ')"
fi

# ---- the kills --------------------------------------------------------------------

kills=0 attempts=0 voided=0 first_base=""
while [ $kills -lt $KILLS ] && [ $attempts -lt $((KILLS * 3)) ]; do
	attempts=$((attempts + 1))
	i=$((kills + 1))
	# Start while a pair run is up (not between two runs).
	wait_for pair_steady
	sig0=$(pair_sig)
	BASE=$(resources)
	[ -n "$first_base" ] || first_base=$BASE
	stats
	tx0=$(counter dev0 tx_frames)

	rm -f "$T_TMP/v.ready" "$T_TMP/v.efd" "$T_TMP/v.memfd"
	"$NC" --socket "$SOCK_A" --count 2000000000 --seed $((100 + i)) --timeout-ms 600000 \
		--ready "$T_TMP/v.ready" loopback >"$T_TMP/v.out" 2>&1 &
	victim=$!
	if ! wait_for_file "$T_TMP/v.ready"; then
		kill -9 "$victim" 2>/dev/null
		wait "$victim" 2>/dev/null
		not_ok "kill_$i.connected" "the client on A did not come up: $(tr '\n' ' ' <"$T_TMP/v.out")"
		break
	fi
	# Mid-traffic: the daemon has carried frames of this client.
	victim_moving() { stats && [ "$(counter dev0 tx_frames)" -gt $((tx0 + 64)) ]; }
	if ! wait_for victim_moving; then
		kill -9 "$victim" 2>/dev/null
		wait "$victim" 2>/dev/null
		not_ok "kill_$i.traffic" "the client on A moved no frames: $(tr '\n' ' ' <"$T_TMP/v.out")"
		break
	fi
	eventfd_ids "$victim" >"$T_TMP/v.efd"
	memfd_inodes "$victim" >"$T_TMP/v.memfd"
	held=$(held_by_daemon)
	kill -9 "$victim"
	wait "$victim" 2>/dev/null
	if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
		not_ok "kill_$i.daemon_alive" "$(tail -20 "$LOG" | tr '\n' ' ')"
		t_done
	fi
	if [ -z "$held" ]; then
		not_ok "kill_$i.attribution" "the daemon held nothing of the client before the kill" \
			"(eventfds: $(wc -l <"$T_TMP/v.efd"), memfds: $(wc -l <"$T_TMP/v.memfd"))"
	fi

	# The daemon lets go of everything of the dead client (or the pair
	# moved on to its next run, which changes the counts as well).
	# The verdict is on the sample that settled (or the last one).
	settled() {
		left=$(held_by_daemon)
		now=$(resources)
		sig1=$(pair_sig)
		[ -z "$left" ] && { [ "$now" = "$BASE" ] || [ "$sig1" != "$sig0" ]; }
	}
	wait_for settled
	if [ -z "$left" ] && [ "$now" != "$BASE" ] && [ "$sig1" != "$sig0" ]; then
		# The totals moved with the pair: not a verdict on the kill;
		# do the round again.
		voided=$((voided + 1))
		continue
	fi
	[ "$sig0" != none ] && echo "$BASE" >>"$T_TMP/bases"
	if [ -n "$left" ]; then
		not_ok "kill_$i.released" "still held after the client died: $left"
	elif [ "$now" != "$BASE" ]; then
		not_ok "kill_$i.released" "fds/maps before the client: $BASE, after its death (90 s bound): $now;" \
			"fds now: $(ls -l "/proc/$DAEMON_PID/fd" | awk 'NR > 1 { print $NF }' | sort | uniq -c | tr '\n' ' ')"
	else
		ok "kill_$i.released"
	fi

	# The same socket takes a new client, which passes verified traffic.
	if "$NC" --timeout-ms 120000 --socket "$SOCK_A" --count 300 --seed $((200 + i)) loopback >"$T_TMP/new.out" 2>&1 &&
	   grep -q "looped back 300 frames, all verified" "$T_TMP/new.out"; then
		ok "kill_$i.new_client"
	else
		not_ok "kill_$i.new_client" "$(tr '\n' ' ' <"$T_TMP/new.out")"
	fi
	kills=$((kills + 1))
done
[ $kills -eq $KILLS ] || not_ok kills_done "only $kills of $KILLS rounds completed ($voided voided)"

if kill -0 "$DAEMON_PID" 2>/dev/null; then
	ok daemon_alive
else
	not_ok daemon_alive
	t_done
fi

# ---- the pair was never disturbed --------------------------------------------------

runs_during=$(wc -l <"$T_TMP/pair.runs" 2>/dev/null || echo 0)
touch "$T_TMP/pair.stop"
wait "$PAIR_LOOP"
total=$(wc -l <"$T_TMP/pair.runs" 2>/dev/null || echo 0)
bad=$(awk '$2 != 0 || $3 != 0' "$T_TMP/pair.runs" 2>/dev/null)
if [ "$total" -ge 1 ] && [ -z "$bad" ]; then
	ok pair_never_disturbed
	echo "# pair: $total runs of $PAIR_COUNT frames verified ($runs_during finished during" \
		"the kills; $voided rounds redone across a change of run)"
else
	r=$(echo "$bad" | head -1 | cut -d' ' -f1)
	not_ok pair_never_disturbed "runs $total, failed: $bad;" \
		"$(cat "$T_TMP/pair.$r.send" "$T_TMP/pair.$r.recv" 2>/dev/null | tr '\n' ' ')"
fi

# ---- nothing grew ---------------------------------------------------------------------

# The daemon's counts before each round (with the pair connected) never moved.
if [ "$(sort -u "$T_TMP/bases" 2>/dev/null | wc -l)" -le 1 ]; then
	ok baseline_steady
else
	not_ok baseline_steady "fds/maps before the rounds: $(uniq -c "$T_TMP/bases" | tr '\n' ' ')"
fi

# With every client gone, the daemon is back to its idle state after the warm-up.
idle_again() { [ "$(resources)" = "$IDLE_RES" ]; }
wait_for idle_again
now=$(resources)
if [ "$now" = "$IDLE_RES" ]; then
	ok nothing_grew
else
	not_ok nothing_grew "fds/maps idle before the kills: $IDLE_RES, idle after: $now" \
		"(first round's baseline with the pair: $first_base);" \
		"fds: $(ls -l "/proc/$DAEMON_PID/fd" | awk 'NR > 1 { print $NF }' | sort | uniq -c | tr '\n' ' ')"
fi

# ---- clean exit (ASan: no error, no leak) ---------------------------------------------

kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
rc=$?
if [ $rc -eq 0 ] && ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$LOG"; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "exit status $rc: $(grep -A15 -E 'Sanitizer|runtime error' "$LOG" | head -30 | tr '\n' ' ')"
fi

t_done
