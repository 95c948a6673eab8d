#!/usr/bin/env bash
# A front-end killed with SIGKILL in the middle of its traffic, 20 times, while
# another pair of devices keeps passing verified traffic.
#
#  - Devices: A (where clients get killed) and the pair B -> C. (Three
#    devices: each device serves one front-end at a time, so the pair needs
#    two devices of its own besides A.)
#  - The pair: vrdma-netcat recv on C and send on B, one long run; the
#    receiver regenerates and compares every frame, so any disturbance fails
#    it.
#  - Each round: note the daemon's fd and mapping counts, start a client on A
#    (vrdma-netcat loopback: it sends to its own MAC and verifies what comes
#    back), wait until the daemon has moved frames for it (SIGUSR1 counters),
#    note what the daemon holds for it (its socket, the client's eventfds by
#    eventfd-id, the client's memfds by inode), SIGKILL it, then poll
#    (bounded) until the daemon holds none of that and its fd and mapping
#    counts are back to the values before the client connected. Then a new
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
KILLS=20
PAIR_COUNT=${VRDMA_KILL_PAIR_COUNT:-1500000}

for b in "$DAEMON" "$NC"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done

# ---- helpers ----------------------------------------------------------------

STATS_SEEN=0
# stats: SIGUSR1 and wait for the whole dump (last line "faults ..."), left
# in $T_TMP/stats.
stats() {
	local i n
	kill -USR1 "$DAEMON_PID" 2>/dev/null || return 1
	for ((i = 0; i < 400; i++)); do
		n=$(grep -c '^faults dropped' "$LOG")
		[ "$n" -gt "$STATS_SEEN" ] && break
		sleep 0.05
	done
	[ "$n" -gt "$STATS_SEEN" ] || return 1
	awk -v k="$STATS_SEEN" '/^faults dropped/ { c++; if (c == k + 1) { print; exit } }
		c == k { print }' "$LOG" >"$T_TMP/stats"
	STATS_SEEN=$n
}

# counter DEV KEY: a counter of device DEV in the last dump.
counter() {
	awk -v dev="$1" -v key="$2" '
		/^device / { in_dev = ($2 == dev) }
		/^(switch|faults|uplink) / { in_dev = 0 }
		in_dev { for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }
	' "$T_TMP/stats"
}

daemon_fds() { ls "/proc/$DAEMON_PID/fd" 2>/dev/null | wc -l; }
daemon_maps() { wc -l <"/proc/$DAEMON_PID/maps" 2>/dev/null; }
resources() { echo "$(daemon_fds) $(daemon_maps)"; }

# eventfd_ids PID: the eventfd-id of every eventfd PID holds.
eventfd_ids() {
	local f
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[eventfd]" ] || continue
		awk '$1 == "eventfd-id:" { print $2 }' "/proc/$1/fdinfo/${f##*/}" 2>/dev/null
	done | sort -u
}

# memfd_inodes PID: inodes of the memfds PID holds open.
memfd_inodes() {
	local f
	for f in /proc/"$1"/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		/memfd:*) stat -L -c %i "$f" 2>/dev/null ;;
		esac
	done | sort -u
}

# a_sockets: daemon sockets bound to A's path (the listener + connections).
a_sockets() {
	local f l n=0
	for f in /proc/"$DAEMON_PID"/fd/*; do
		l=$(readlink "$f" 2>/dev/null)
		case "$l" in
		socket:*) l=${l#socket:[}; l=${l%]}
			awk -v i="$l" -v p="$SOCK_A" '$7 == i && $8 == p { found = 1 } END { exit !found }' \
				/proc/net/unix && n=$((n + 1)) ;;
		esac
	done
	echo $n
}

# held_by_daemon: what the daemon still holds of the victim (eventfds by id,
# mappings of its memfds, connections on A's socket); empty when nothing.
held_by_daemon() {
	local f id n held=()
	if [ -s "$T_TMP/v.efd" ]; then
		for f in /proc/"$DAEMON_PID"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[eventfd]" ] || continue
			id=$(awk '$1 == "eventfd-id:" { print $2 }' "/proc/$DAEMON_PID/fdinfo/${f##*/}" 2>/dev/null)
			grep -qx "$id" "$T_TMP/v.efd" && held+=("eventfd fd ${f##*/} (eventfd-id $id)")
		done
	fi
	if [ -s "$T_TMP/v.memfd" ]; then
		while read -r range perm off dev ino path; do
			grep -qx "$ino" "$T_TMP/v.memfd" && held+=("mapping $range of memfd inode $ino")
		done <"/proc/$DAEMON_PID/maps"
	fi
	n=$(a_sockets)
	[ "$n" -gt 1 ] && held+=("$((n - 1)) connection(s) on A's socket")
	[ ${#held[@]} -gt 0 ] && echo "${held[*]}"
}

released() { [ -z "$(held_by_daemon)" ] && [ "$(resources)" = "$BASE" ]; }

pair_alive() { kill -0 "$PAIR_SEND" 2>/dev/null && kill -0 "$PAIR_RECV" 2>/dev/null; }

# ---- the daemon ---------------------------------------------------------------

"$DAEMON" -q --pidfile "$T_TMP/pid" \
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
IDLE_FDS=$(daemon_fds)

# Warm-up: each device once (an ASan build's allocator maps memory on first
# use and keeps it; the counts below are taken after this).
if "$NC" --socket "$SOCK_A" --count 200 --seed 1 loopback >"$T_TMP/warm" 2>&1 &&
   "$NC" --socket "$SOCK_B" --count 100 --seed 2 loopback >>"$T_TMP/warm" 2>&1 &&
   "$NC" --socket "$SOCK_C" --count 100 --seed 3 loopback >>"$T_TMP/warm" 2>&1; then
	ok warm_up_loopback
else
	not_ok warm_up_loopback "$(tr '\n' ' ' <"$T_TMP/warm")"
fi
fds_idle() { [ "$(daemon_fds)" = "$IDLE_FDS" ]; }
wait_for fds_idle
IDLE_RES=$(resources)

# ---- the pair -------------------------------------------------------------------

"$NC" --socket "$SOCK_C" --count "$PAIR_COUNT" --seed 9 --ready "$T_TMP/pair.ready" \
	--timeout-ms 60000 recv >"$T_TMP/pair.recv" 2>&1 &
PAIR_RECV=$!
T_PIDS+=("$PAIR_RECV")
if ! wait_for_file "$T_TMP/pair.ready"; then
	not_ok pair_started "receiver on C did not come up: $(tr '\n' ' ' <"$T_TMP/pair.recv")"
	t_done
fi
"$NC" --socket "$SOCK_B" --count "$PAIR_COUNT" --seed 9 --dst "$MAC_C" --timeout-ms 60000 send \
	>"$T_TMP/pair.send" 2>&1 &
PAIR_SEND=$!
T_PIDS+=("$PAIR_SEND")
# Mid-traffic: the daemon has moved frames from B.
pair_moving() { stats && [ "$(counter dev1 tx_frames)" -gt 1000 ]; }
if wait_for pair_moving; then
	ok pair_started
else
	not_ok pair_started "no frames from B: $(tr '\n' ' ' <"$T_TMP/pair.send")"
fi

# ---- the kills --------------------------------------------------------------------

kills=0 attempts=0 voided=0 first_base="" pair_end_round=""
while [ $kills -lt $KILLS ] && [ $attempts -lt $((KILLS + 10)) ]; do
	attempts=$((attempts + 1))
	i=$((kills + 1))
	pair_before=no
	pair_alive && pair_before=yes
	BASE=$(resources)
	[ -n "$first_base" ] || first_base=$BASE
	[ $pair_before = yes ] && echo "$BASE" >>"$T_TMP/bases"
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

	# The daemon lets go of everything of the dead client.
	wait_for released
	left=$(held_by_daemon)
	now=$(resources)
	pair_after=no
	pair_alive && pair_after=yes
	if [ -n "$left" ]; then
		not_ok "kill_$i.released" "still held after the client died: $left"
	elif [ "$now" != "$BASE" ] && [ "$pair_before" != "$pair_after" ]; then
		# The pair ended in the middle of this round: its counts moved
		# too. Not a verdict on the kill; do the round again.
		voided=$((voided + 1))
		pair_end_round=$i
		continue
	elif [ "$now" != "$BASE" ]; then
		not_ok "kill_$i.released" "fds/maps before the client: $BASE, 20 s after its death: $now;" \
			"fds now: $(ls -l "/proc/$DAEMON_PID/fd" | awk 'NR > 1 { print $NF }' | sort | uniq -c | tr '\n' ' ')"
	else
		ok "kill_$i.released"
	fi

	# The same socket takes a new client, which passes verified traffic.
	if "$NC" --socket "$SOCK_A" --count 300 --seed $((200 + i)) loopback >"$T_TMP/new.out" 2>&1 &&
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
if pair_alive; then
	echo "# the pair was still running after the $KILLS kills"
else
	echo "# the pair finished during kill round ${pair_end_round:-?}; later rounds ran without it"
fi

# ---- the pair was never disturbed --------------------------------------------------

wait "$PAIR_SEND"
rs=$?
wait "$PAIR_RECV"
rr=$?
if [ $rs -eq 0 ] && [ $rr -eq 0 ] &&
   grep -q "^received $PAIR_COUNT frames .*all verified" "$T_TMP/pair.recv" &&
   grep -q "^sent $PAIR_COUNT frames, all acknowledged" "$T_TMP/pair.send"; then
	ok pair_never_disturbed
else
	not_ok pair_never_disturbed "send rc=$rs recv rc=$rr:" \
		"$(cat "$T_TMP/pair.send" "$T_TMP/pair.recv" | tr '\n' ' ')"
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
		"(first round's baseline with the pair: $first_base)"
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
