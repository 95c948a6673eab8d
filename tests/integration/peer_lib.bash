# Helpers for the integration tests that drive vhost-user-rdma with real
# vhost-user front-ends written elsewhere (DPDK testpmd, QEMU). Source it after
# tests/lib.sh. Not a test itself: tests/run.sh only runs *.sh files.
#
# Every process started with peer_spawn is stopped at exit (SIGTERM, then
# SIGKILL after a bounded wait), DPDK runtime directories made by the test are
# removed, then tests/lib.sh removes $T_TMP.

declare -A P_PID=()        # name -> pid
P_ORDER=()                 # names, in start order
P_DPDK_PREFIXES=()         # --file-prefix values used by this test
P_LAST_RC=0                # exit status of the last peer_stop

# peer_require CMD HINT: a missing front-end or binary is a failure, not a
# skip (CI installs the packages with scripts/deps.sh test). HINT says how to
# get CMD. Exits the test when CMD is missing.
peer_require() {
	local cmd=$1 hint=$2
	command -v "$cmd" >/dev/null 2>&1 && return 0
	not_ok prerequisites "$cmd not found: $hint"
	exit 1
}

# peer_spawn NAME CMD...: start CMD in the background, stdout and stderr in
# $T_TMP/NAME.log, stdin from /dev/null.
peer_spawn() {
	local name=$1; shift
	"$@" >"$T_TMP/$name.log" 2>&1 </dev/null &
	P_PID[$name]=$!
	P_ORDER+=("$name")
}

peer_pid() { echo "${P_PID[$1]:-}"; }

# peer_alive NAME: true while the process runs.
peer_alive() {
	local p=${P_PID[$1]:-}
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

# peer_stop NAME SIGNAL [SECONDS]: send SIGNAL, wait up to SECONDS (default 15)
# for the exit, then SIGKILL. Sets P_LAST_RC to the exit status (137 after
# SIGKILL); returns 0 if the process exited by itself after SIGNAL.
peer_stop() {
	local name=$1 sig=$2 secs=${3:-15} p killed=0
	p=${P_PID[$name]:-}
	P_LAST_RC=0
	[ -n "$p" ] || return 0
	kill -"$sig" "$p" 2>/dev/null
	wait_gone "$p" "$secs"
	if kill -0 "$p" 2>/dev/null; then
		echo "# $name (pid $p) ignored SIG$sig for ${secs}s: SIGKILL"
		kill -KILL "$p" 2>/dev/null
		killed=1
	fi
	wait "$p" 2>/dev/null
	P_LAST_RC=$?
	unset "P_PID[$name]"
	return $killed
}

# peer_tail NAME [LINES]: show the end of a process log as TAP comments.
peer_tail() {
	local f="$T_TMP/$1.log"
	[ -f "$f" ] || return 0
	echo "# --- last ${2:-15} lines of $1.log"
	tail -n "${2:-15}" "$f" | tr -d '\r' | sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/^/#   /'
}

peer_cleanup() {
	local i n
	for ((i = ${#P_ORDER[@]} - 1; i >= 0; i--)); do
		n=${P_ORDER[$i]}
		[ -n "${P_PID[$n]:-}" ] && peer_stop "$n" TERM 5 >/dev/null
	done
	# VRDMA_KEEP_LOGS=DIR keeps the logs and captures for a post-mortem.
	if [ -n "${VRDMA_KEEP_LOGS:-}" ] && mkdir -p "$VRDMA_KEEP_LOGS/$T_PROG"; then
		cp -f "$T_TMP"/*.log "$T_TMP"/*.pcap "$VRDMA_KEEP_LOGS/$T_PROG/" 2>/dev/null
	fi
	for n in "${P_DPDK_PREFIXES[@]}"; do
		rm -rf "/var/run/dpdk/$n" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$n" "/tmp/dpdk/$n"
	done
	t_cleanup
}
trap peer_cleanup EXIT

# ---- the daemon ----

PEER_DAEMON=$VRDMA_BUILD/bin/vhost-user-rdma

# daemon_start ARGS...: start vhost-user-rdma (-v -v --stats --pidfile added)
# and wait until its pidfile says every socket listens. Returns 1 on failure.
daemon_start() {
	peer_require "$PEER_DAEMON" "build it first (make)"
	peer_spawn daemon "$PEER_DAEMON" -v -v "${T_DAEMON_PRIV[@]}" --stats --pidfile "$T_TMP/daemon.pid" "$@"
	wait_cmd 20 daemon_started
}
daemon_started() {
	peer_alive daemon || return 1
	[ -s "$T_TMP/daemon.pid" ] && [ "$(cat "$T_TMP/daemon.pid")" = "$(peer_pid daemon)" ]
}

# daemon_snapshot: ask for counters (SIGUSR1) and wait until they are printed.
daemon_snapshot() {
	local before
	before=$(grep -c '^switch forwarded' "$T_TMP/daemon.log")
	kill -USR1 "$(peer_pid daemon)" 2>/dev/null || return 1
	wait_cmd 10 daemon_printed_more "$before"
}
daemon_printed_more() {
	[ "$(grep -c '^switch forwarded' "$T_TMP/daemon.log")" -gt "$1" ]
}

# daemon_stat SOCKET FIELD: FIELD of device SOCKET from the last counter dump.
daemon_stat() {
	awk -v s="($1)" -v f="$2" '
		$1 == "device" { in_dev = ($3 == s); next }
		$1 == "switch" || $1 == "faults" || $1 == "uplink" { in_dev = 0 }
		in_dev { for (i = 1; i < NF; i++) if ($i == f) v = $(i + 1) }
		END { print v + 0 }' "$T_TMP/daemon.log"
}

# daemon_switch_stat FIELD: switch counter from the last dump.
daemon_switch_stat() {
	awk -v f="$1" '
		$1 == "switch" { for (i = 2; i < NF; i++) if ($i == f) v = $(i + 1) }
		END { print v + 0 }' "$T_TMP/daemon.log"
}

# daemon_sanitizer_clean: the daemon log holds no ASan/UBSan/LSan report.
daemon_sanitizer_clean() {
	! grep -a -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T_TMP/daemon.log"
}

# daemon_rx_accounted SOCKET: frames the switch handed to the device SOCKET:
# delivered to the driver plus every receive-side drop counter.
daemon_rx_accounted() {
	local f t=0
	for f in rx_frames rx_dropped_no_buffer rx_dropped_too_big rx_filtered; do
		t=$((t + $(daemon_stat "$1" "$f")))
	done
	echo $t
}

# ---- DPDK testpmd with net_virtio_user ----

# testpmd_start NAME SOCKET MAC MODE [TESTPMD ARGS...]: one virtio-user port on
# SOCKET with MAC, forwarding MODE, counters printed every second.
testpmd_start() {
	local name=$1 sock=$2 mac=$3 mode=$4 prefix cpus
	shift 4
	prefix="vrdma-$T_PROG-$$-$name"
	P_DPDK_PREFIXES+=("$prefix")
	# Two lcores (main + forwarding) that may run on any allowed CPU, so
	# several busy-polling testpmd processes share small machines fairly.
	cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
	peer_spawn "$name" dpdk-testpmd --no-huge -m 512 --no-pci --file-prefix "$prefix" \
		--lcores "0@($cpus),1@($cpus)" \
		--vdev "net_virtio_user0,path=$sock,queues=1,mac=$mac" \
		-- --auto-start --forward-mode="$mode" --total-num-mbufs=16384 \
		--stats-period 1 "$@"
}

# testpmd_last NAME FIELD: last value of FIELD (RX-packets, TX-packets, ...)
# printed by testpmd NAME (periodic port stats, then the totals at exit).
testpmd_last() {
	grep -a -o "$2: *[0-9]*" "$T_TMP/$1.log" | awk '{ v = $2 } END { print v + 0 }'
}

# testpmd_total NAME FIELD: FIELD of the "Accumulated forward statistics"
# block printed when testpmd exits (empty if it was not printed).
testpmd_total() {
	awk -v f="$2:" '
		/Accumulated forward statistics/ { acc = 1; next }
		acc { for (i = 1; i < NF; i++) if ($i == f) { print $(i + 1); exit } }' \
		"$T_TMP/$1.log"
}

# testpmd_forwarding NAME: testpmd NAME started forwarding (first stats out).
testpmd_forwarding() {
	grep -a -q 'Port statistics' "$T_TMP/$1.log"
}
