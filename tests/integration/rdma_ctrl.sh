#!/usr/bin/env bash
# libvrdma's RDMA API and the device's RoCE control path, through the real
# control queue of a running vhost-user-rdma (tests/tools/vrdma-rdmatest):
# - ctrl:    every API call's success and error paths (library-side errors
#            send no command; device refusals map to the documented errnos)
# - raw:     every RoCE command as raw bytes: success, VIRTIO_NET_ERR for
#            bad lengths, handles, foreign PDs, out-of-range values, and no
#            partial state after a refusal
# - qpstate: the QP state machine of RC, UC and UD via modify / query
# - limits:  a daemon with qps=8,cqs=4: every resource up to its limit and
#            one more, twice (nothing leaked by the refusals)
# - soak:    10,000 PD+MR+CQ+QP+AH cycles keep the daemon's fd count exact
#            and its VmRSS within a bound
# - Debian's ibv_devices and ibv_devinfo -v through vrdma-run list the
#   daemon's devices (name, node GUID from the MAC, port, GIDs).
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RT="$VRDMA_BUILD/tests/bin/vrdma-rdmatest"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
MAC_A=02:00:00:00:0b:01
MAC_B=02:00:00:00:0b:02
MAC_C=02:00:00:00:0b:03

need setup "$DAEMON" "$RT" || t_done

# Sanitized daemon: keep ASan's quarantine small so VmRSS measures the
# daemon, not the quarantine; the RSS bound is wider there.
RSS_KB=2048
if objdump -T "$DAEMON" 2>/dev/null | grep -q __asan_init ||
   nm "$DAEMON" 2>/dev/null | grep -q __asan_init; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
	RSS_KB=16384
fi

# start_daemon NAME OPTS...: a daemon with devices a and b (IPv4
# addresses) and c (none); sets PID. The GID tests add global IPv6 GIDs:
# allowed by allow-ip.
start_daemon() {
	local name=$1
	shift
	rm -f "$T_TMP/$name.pid"
	bg "$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$T_TMP/$name.pid" 2>"$T_TMP/$name.log" \
		--device "socket=$T_TMP/$name-a.sock,mac=$MAC_A,ip=10.9.0.1/24,allow-ip=2000::/3$1" \
		--device "socket=$T_TMP/$name-b.sock,mac=$MAC_B,ip=10.9.0.2/24,allow-ip=2000::/3$1" \
		--device "socket=$T_TMP/$name-c.sock,mac=$MAC_C,allow-ip=2000::/3$1"
	if ! wait_for_file "$T_TMP/$name.pid"; then
		not_ok "$name.daemon_started" "no pid file"
		return 1
	fi
	PID=$(cat "$T_TMP/$name.pid")
	return 0
}

# stop_daemon NAME: SIGTERM; it must exit cleanly (sanitizers report there).
stop_daemon() {
	local rc
	kill "$PID"
	wait "$PID" 2>/dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$1.daemon_exit"
	else
		not_ok "$1.daemon_exit" "exit status $rc: $(tail -20 "$T_TMP/$1.log")"
	fi
}

# rdmatest NAME ARGS...: run the test client; its ok/not ok lines are ours.
rdmatest() {
	local name=$1 rc
	shift
	"$RT" --prefix "$T_PROG.$name" "$@" >"$T_TMP/$name.out" 2>&1
	rc=$?
	cat "$T_TMP/$name.out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok ' "$T_TMP/$name.out"; then
		not_ok "$name" "vrdma-rdmatest exited with $rc"
	fi
}

# --- default limits: API, raw commands, state machine, soak ---------------------

if start_daemon main ""; then
	rdmatest api --socket "$T_TMP/main-a.sock" --socket "$T_TMP/main-b.sock" \
		--ip 10.9.0.1 ctrl raw qpstate
	rdmatest soak --socket "$T_TMP/main-a.sock" --pid "$PID" --count 10000 \
		--rss-kb "$RSS_KB" soak

	# --- Debian's tools through vrdma-run ----------------------------------
	if need ibv_tools "$RUN" "$LIB" ibv_devices ibv_devinfo; then
		asan_preload "$LIB"
		vrun() {
			env LD_PRELOAD="$PRELOAD" \
				ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
				"$RUN" "$@"
		}
		out=$(vrun -s "$T_TMP/main-a.sock" -s "$T_TMP/main-b.sock" -- ibv_devices 2>&1)
		if echo "$out" | grep -Eq '^\s+vrdma0\s+000000fffe000b01$' &&
		   echo "$out" | grep -Eq '^\s+vrdma1\s+000000fffe000b02$'; then
			ok ibv_devices
		else
			not_ok ibv_devices "$out"
		fi
		out=$(vrun -s "$T_TMP/main-a.sock" -- ibv_devinfo -v 2>&1)
		rc=$?
		miss=
		for pat in 'hca_id:\s+vrdma0' 'node_guid:\s+0000:00ff:fe00:0b01' \
			   'vendor_id:\s+0x1af4' 'max_qp:\s+1022' 'max_cq:\s+1024' \
			   'max_qp_wr:\s+16384' 'max_mr:\s+65535' 'state:\s+PORT_ACTIVE' \
			   'active_mtu:\s+1024 \(3\)' 'link_layer:\s+Ethernet' \
			   'gid_tbl_len:\s+16' 'GID\[\s*0\]:\s+fe80::ff:fe00:b01, RoCE v2' \
			   'GID\[\s*1\]:\s+::ffff:10\.9\.0\.1, RoCE v2'; do
			echo "$out" | grep -Eq "$pat" || miss="$miss [$pat]"
		done
		if [ $rc -eq 0 ] && [ -z "$miss" ]; then
			ok ibv_devinfo
		else
			not_ok ibv_devinfo "rc=$rc missing:$miss" "$out"
		fi
		# A device without an IPv4 address lists the link-local GID only.
		out=$(vrun -s "$T_TMP/main-c.sock" -- ibv_devinfo -v 2>&1)
		if echo "$out" | grep -Eq 'GID\[\s*0\]:\s+fe80::ff:fe00:b03' &&
		   ! echo "$out" | grep -q 'GID\[ *1\]'; then
			ok ibv_devinfo_no_ipv4
		else
			not_ok ibv_devinfo_no_ipv4 "$out"
		fi
	fi
	stop_daemon main
fi

# --- small limits --------------------------------------------------------------

if start_daemon small ",qps=8,cqs=4"; then
	rdmatest limits --socket "$T_TMP/small-a.sock" --socket "$T_TMP/small-b.sock" \
		--qps 8 --cqs 4 limits
	stop_daemon small
fi

t_done
