# Helpers for integration tests that run vhost-user-rdma daemons in network
# namespaces of their own, joined by veth pairs (and bridges, taps). Source it
# after tests/lib.sh. Not a test itself: tests/run.sh only runs *.sh files.
#
# Everything made here is undone at exit, in this order: daemons (SIGTERM,
# SIGKILL after a bounded wait), namespaces (which deletes every interface in
# them: veths, bridges, taps), then tests/lib.sh's cleanup ($T_TMP).
#
# Daemons: nsd_start NAME NS ARGS... starts one inside NS (its sockets live in
# $T_TMP, a file-system path, so clients in any namespace reach them), with
# --stats and a pid file; nsd_stats NAME takes a SIGUSR1 snapshot of its
# counters, read back with stat_uplink / stat_dev.

NS_LIST=()                 # namespaces created by this test
declare -A D_PID=()        # daemon name -> pid
declare -A D_SNAP=()       # daemon name -> snapshots taken so far
D_LAST_RC=0                # exit status of the last nsd_stop
NS_DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"

# ns_require: skip the whole test without root (namespaces need it); a
# missing ip (iproute2) is a failure.
ns_require() {
	if [ "$(id -u)" -ne 0 ]; then
		skip setup "needs root to create network namespaces"
		exit 0
	fi
	need setup ip || exit 1
}

ns_cleanup() {
	local n
	for n in "${!D_PID[@]}"; do nsd_stop "$n" TERM 10 >/dev/null; done
	for n in "${NS_LIST[@]}"; do ip netns del "$n" 2>/dev/null; done
	t_cleanup
}
trap ns_cleanup EXIT

# ns_add NAME: a new namespace with its loopback up. Returns ip's status.
ns_add() {
	ip netns add "$1" || return 1
	NS_LIST+=("$1")
	ip -n "$1" link set lo up
}

# ns_quiet NS IF: no IPv6 on IF, so the kernel sends nothing by itself on it
# (no router solicitations, MLD reports, DAD): the uplink counters then count
# only the test's frames.
ns_quiet() {
	ip netns exec "$1" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$2/disable_ipv6"
}

# ns_veth NS_A IF_A NS_B IF_B MTU: a veth pair made directly inside the two
# namespaces (it never appears in ours), quiet, up.
ns_veth() {
	local na=$1 ia=$2 nb=$3 ib=$4 mtu=$5
	ip link add "$ia" mtu "$mtu" netns "$na" type veth peer name "$ib" mtu "$mtu" netns "$nb" &&
	ns_quiet "$na" "$ia" && ns_quiet "$nb" "$ib" &&
	ip -n "$na" link set "$ia" up && ip -n "$nb" link set "$ib" up
}

# ns_ifstat NS IF COUNTER: a kernel interface counter (rx_packets, ...).
ns_ifstat() {
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3" 2>/dev/null || echo -1
}

# ns_bridge_port_forwarding NS IF: true once IF is a forwarding bridge port.
ns_bridge_port_forwarding() {
	[ "$(ip netns exec "$1" cat "/sys/class/net/$2/brport/state" 2>/dev/null)" = 3 ]
}

# ns_tcp_listening NS PORT: true once something listens on TCP PORT in NS.
ns_tcp_listening() {
	ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q .
}

# nsd_start NAME NS ARGS...: start the daemon in NS with ARGS (plus -q,
# --stats, --pidfile), log in $T_TMP/NAME.log; returns once the pid file
# names it (every socket listens) or fails if it exits or takes 20 s.
nsd_start() {
	local name=$1 ns=$2; shift 2
	local pidf="$T_TMP/$name.pid" pid
	rm -f "$pidf"
	ip netns exec "$ns" "$NS_DAEMON" -q "${T_DAEMON_PRIV[@]}" --stats --pidfile "$pidf" "$@" \
		>"$T_TMP/$name.log" 2>&1 </dev/null &
	pid=$!
	D_PID[$name]=$pid
	D_SNAP[$name]=0
	wait_cmd 20 nsd_up_or_gone "$name"
	# ip netns exec execs the daemon: the pid we hold is the daemon's.
	[ -s "$pidf" ] && [ "$(cat "$pidf")" = "$pid" ]
}

nsd_up_or_gone() { [ -s "$T_TMP/$1.pid" ] || nsd_gone "${D_PID[$1]}"; }

nsd_alive() { kill -0 "${D_PID[$1]:-0}" 2>/dev/null; }

# nsd_stop NAME SIGNAL [SECONDS]: signal the daemon and reap it (SIGKILL
# after SECONDS, default 15). Sets D_LAST_RC; returns 0 if it exited by
# itself.
nsd_stop() {
	local name=$1 sig=$2 secs=${3:-15} p killed=0
	p=${D_PID[$name]:-}
	D_LAST_RC=0
	[ -n "$p" ] || return 0
	kill -"$sig" "$p" 2>/dev/null
	if ! wait_cmd "$secs" nsd_gone "$p"; then
		echo "# daemon $name (pid $p) ignored SIG$sig for ${secs}s: SIGKILL"
		kill -KILL "$p" 2>/dev/null
		killed=1
	fi
	wait "$p" 2>/dev/null
	D_LAST_RC=$?
	unset "D_PID[$name]"
	return $killed
}

# nsd_gone PID: true once PID exited (a zombie not yet reaped counts).
nsd_gone() { ! kill -0 "$1" 2>/dev/null || [[ $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]]; }

# nsd_tail NAME [LINES]: the end of a daemon's log as TAP comments.
nsd_tail() {
	[ -f "$T_TMP/$1.log" ] && tail -n "${2:-15}" "$T_TMP/$1.log" | sed 's/^/#   /'
}

# nsd_stats NAME NUPLINKS: SIGUSR1 the daemon and wait for the whole dump
# (it ends with one "uplink" line per uplink). Sets NSD_SNAP to the
# snapshot's file name; fails if the dump does not come within 20 s. (Not in
# a subshell: it counts the dumps in D_SNAP.)
nsd_stats() {
	local name=$1 nup=$2 log="$T_TMP/$1.log" from
	from=$(($(wc -l <"$log") + 1))
	D_SNAP[$name]=$((${D_SNAP[$name]} + 1))
	NSD_SNAP="$T_TMP/$name.stats.${D_SNAP[$name]}"
	kill -USR1 "${D_PID[$name]}" 2>/dev/null || return 1
	wait_cmd 20 nsd_dump_done "$log" "$from" "$nup" || return 1
	tail -n +"$from" "$log" >"$NSD_SNAP"
}

nsd_dump_done() {
	[ "$(tail -n +"$2" "$1" | grep -c '^uplink ')" -ge "$3" ] &&
	tail -n +"$2" "$1" | grep -q '^faults '
}

# stat_uplink SNAP IFNAME KEY: a counter of an uplink line
# ("uplink NAME rx N tx N tx_dropped N rx_errors N"); empty if absent.
stat_uplink() {
	awk -v n="$2" -v k="$3" '$1 == "uplink" && $2 == n {
		for (i = 3; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"
}

# stat_dev SNAP SOCKET KEY: a counter of a device block ("device NAME
# (SOCKET)" followed by indented "key value ..." lines; the RoCE engine's
# "roce ..." lines are not looked at); empty if absent.
stat_dev() {
	awk -v s="($2)" -v k="$3" '
		$1 == "device" { in_dev = ($3 == s); next }
		/^[^ ]/ { in_dev = 0 }
		$1 == "roce" { next }
		in_dev { for (i = 1; i < NF; i++)
			if ($i == k && $(i + 1) ~ /^[0-9]+$/) { print $(i + 1); exit } }' "$1"
}

# delta OLD_SNAP NEW_SNAP FN ARGS...: FN NEW ARGS - FN OLD ARGS ("?" when
# either is missing).
delta() {
	local a b old=$1 new=$2 fn=$3; shift 3
	a=$("$fn" "$old" "$@"); b=$("$fn" "$new" "$@")
	if [ -z "$a" ] || [ -z "$b" ]; then echo "?"; else echo $((b - a)); fi
}
