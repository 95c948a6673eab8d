# Daemons for integration scripts (sourced after tests/lib.sh; the caller
# sets DAEMON and DAEMON_TMO). Each daemon has a NAME: its log is
# $T_TMP/NAME.log, D_TPID[NAME] the pid of its timeout wrapper, D_PID[NAME]
# the daemon's own pid, and D_RC the exit status d_stop collected.
declare -A D_TPID=() D_PID=()
D_RC=0

# d_start NAME ARGS...: a daemon with ARGS (plus -q --stats --pidfile), log
# in $T_TMP/NAME.log; succeeds once the pid file is written (every socket
# listens), fails if it exits first or takes 60 s.
d_start() {
	local name=$1 pidf="$T_TMP/$1.pid"; shift
	rm -f "$pidf"
	timeout -k 5 "$DAEMON_TMO" "$DAEMON" -q "${T_DAEMON_PRIV[@]}" --stats --pidfile "$pidf" "$@" \
		>"$T_TMP/$name.log" 2>&1 </dev/null &
	D_TPID[$name]=$!
	T_PIDS+=($!)
	wait_until '[ -s "$pidf" ] || ! kill -0 "${D_TPID[$name]}" 2>/dev/null' 60
	[ -s "$pidf" ] || return 1
	D_PID[$name]=$(cat "$pidf")
}

# Number of counter dumps in NAME's log.
dumps_of() { grep -c '^faults ' "$T_TMP/$1.log"; }

# d_stats NAME: SIGUSR1 the daemon, wait (at most 90 s) for the whole dump
# and print it.
d_stats() {
	local name=$1 log="$T_TMP/$1.log" from n
	from=$(($(wc -l <"$log") + 1))
	n=$(dumps_of "$name")
	kill -USR1 "${D_PID[$name]}" 2>/dev/null || { echo "(daemon $name is gone)"; return 1; }
	wait_until '[ "$(dumps_of "$name")" -gt "$n" ]'
	tail -n +"$from" "$log"
}

# d_stop NAME: SIGTERM to the daemon itself, reap it (SIGKILL after 60 s of
# wall time); D_RC is its exit status. The signal goes to the daemon, not to
# its timeout wrapper: GNU timeout starts its -k countdown when it forwards a
# signal, which would turn a slow (loaded machine) but clean shutdown into a
# SIGKILL after 5 s (exit status 137).
d_stop() {
	local name=$1 p=${D_TPID[$1]} t0
	t0=$(date +%s%N)
	kill -TERM "${D_PID[$1]:-$p}" 2>/dev/null
	wait_until '! kill -0 "$p" 2>/dev/null || [[ $(ps -o stat= -p "$p" 2>/dev/null) == Z* ]]' 60
	kill -0 "$p" 2>/dev/null && ! [[ $(ps -o stat= -p "$p" 2>/dev/null) == Z* ]] &&
		kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	D_RC=$?
	echo "# daemon $name stopped in $((($(date +%s%N) - t0) / 1000000)) ms (status $D_RC)"
}
