#!/usr/bin/env bash
# Unmodified verbs programs (Debian's ibverbs-utils and perftest) on the
# standalone virtio-rdma device (model=virtio-rdma) through vrdma-run and
# the drop-in libibverbs.so.1 (libvrdma's virtio-rdma model):
# - one daemon with two virtio-rdma devices (a, b) and a virtio-net RoCE
#   device (n);
# - ibv_devinfo shows the device (atomics, fast registration, no SRQ) and
#   the port attributes the device reports itself (width 1X, speed EDR);
# - ibv_rc_pingpong -c (buffers validated), ibv_uc_pingpong,
#   ibv_ud_pingpong, ib_write_bw, ib_read_bw, ib_send_bw (every size 2 B ..
#   1 MiB), ib_write_lat, ib_atomic_bw (FETCH_AND_ADD, CMP_AND_SWAP)
#   between a and b, and again between a and n (the two models on one
#   switch, both directions for the pingpongs): both ends exit 0 and print
#   their result lines;
# - ibv_srq_pingpong fails cleanly on the virtio-rdma device (it has no
#   SRQ: ibv_create_srq fails EOPNOTSUPP) and still runs on n;
# - hot-plug: a virtio-rdma device added with vrdmactl (dev show lists it
#   with its model) serves ibv_rc_pingpong -c with device a, is removed
#   (its socket gone, no longer listed), and a bad request on it is refused;
# - the daemon exits cleanly.
# Servers listen on TCP ports from 20000 + pid % 10000 (free ones only),
# waited for with a bounded poll of `ss -ltn`; every process has a timeout.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
RUN="$VRDMA_BUILD/bin/vrdma-run"
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
CTL="$VRDMA_BUILD/bin/vrdmactl"
DAEMON_TMO=900
STEP_TMO=200
ITERS=50

SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"
SN="$T_TMP/n.sock"

need setup "$DAEMON" "$RUN" "$LIB" "$CTL" || t_done
for p in ibv_rc_pingpong ibv_srq_pingpong ib_write_bw ib_atomic_bw ss; do
	if ! command -v $p >/dev/null; then
		not_ok setup "$p not installed (scripts/deps.sh test)"
		t_done
	fi
done

asan_preload "$LIB"
ASAN_ENV="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1"

port=$((20000 + $$ % 10000))
next_port() {
	port=$((port + 1))
	while ss -ltn 2>/dev/null | grep -q ":$port "; do port=$((port + 1)); done
}
port_listening() { ss -ltn 2>/dev/null | grep -q ":$1 "; }

# run_on SOCK LOG PROG ARGS...: PROG through vrdma-run on device SOCK.
run_on() {
	local sock=$1 log=$2
	shift 2
	timeout -k 5 "$STEP_TMO" env LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="$ASAN_ENV" \
		"$RUN" -s "$sock" -- "$@" >"$log" 2>&1
}

# pair NAME SRV_SOCK CLI_SOCK PATTERN PROG ARGS...: server on SRV_SOCK,
# client on CLI_SOCK; ok when both exit 0 and both logs match PATTERN
# (grep -E).
pair() {
	local name=$1 ss=$2 cs=$3 pat=$4 spid src crc why=""
	shift 4
	next_port
	run_on "$ss" "$T_TMP/$name.srv" "$@" -p $port &
	spid=$!
	if ! wait_for port_listening $port; then
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		not_ok "$name" "server did not listen: $(tail -5 "$T_TMP/$name.srv")"
		return
	fi
	run_on "$cs" "$T_TMP/$name.cli" "$@" -p $port 127.0.0.1
	crc=$?
	wait $spid
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] || why="client rc=$crc server rc=$src; "
	grep -Eq "$pat" "$T_TMP/$name.cli" || why="${why}client printed no result; "
	grep -Eq "$pat" "$T_TMP/$name.srv" || why="${why}server printed no result; "
	if [ -z "$why" ]; then
		ok "$name"
		grep -E "$pat" "$T_TMP/$name.cli" | tail -1 | sed "s/^/# $name: /"
	else
		not_ok "$name" "$why $(tail -6 "$T_TMP/$name.cli" "$T_TMP/$name.srv" | tr '\n' ' ')"
	fi
}

PP='^[0-9]+ iters in [0-9.]+ seconds'
# perftest prints a result row: size, ITERS, numbers
PT="^ *[0-9]+ +$ITERS +[0-9.]+"

if d_start d --control "$T_TMP/ctl" \
	--device "socket=$SA,model=virtio-rdma,mac=02:00:00:00:2a:01,ip=10.27.0.1/24,qps=8,cqs=8" \
	--device "socket=$SB,model=virtio-rdma,mac=02:00:00:00:2a:02,ip=10.27.0.2/24,qps=8,cqs=8" \
	--device "socket=$SN,mac=02:00:00:00:2a:03,ip=10.27.0.3/24"; then
	ok start
else
	not_ok start "$(tail -5 "$T_TMP/d.log")"
	t_done
fi

if run_on "$SA" "$T_TMP/devinfo" ibv_devinfo -v &&
   grep -q 'atomic_cap:.*ATOMIC_HCA' "$T_TMP/devinfo" &&
   grep -q 'MEM_MGT_EXTENSIONS' "$T_TMP/devinfo" &&
   grep -Eq 'max_srq:[[:space:]]+0$' "$T_TMP/devinfo" &&
   grep -q 'PORT_ACTIVE' "$T_TMP/devinfo" &&
   grep -Eq 'active_width:[[:space:]]+1X \(1\)' "$T_TMP/devinfo" &&
   grep -Eq 'active_speed:.*\(32\)' "$T_TMP/devinfo"; then
	ok devinfo
else
	not_ok devinfo "$(head -40 "$T_TMP/devinfo" | tr '\n' ' ')"
fi

# name prefix, server device, client device
for p in "v1:$SB:$SA" "mixed:$SN:$SA" "mixed_rev:$SA:$SN"; do
	IFS=: read -r tag s c <<<"$p"
	pair ${tag}_rc_pingpong "$s" "$c" "$PP" ibv_rc_pingpong -g 1 -c -n 500
	pair ${tag}_uc_pingpong "$s" "$c" "$PP" ibv_uc_pingpong -g 1 -n 500
	pair ${tag}_ud_pingpong "$s" "$c" "$PP" ibv_ud_pingpong -g 1 -n 500
	[ "$tag" = mixed_rev ] && continue
	pair ${tag}_ib_write_bw "$s" "$c" "$PT" ib_write_bw -a -m 1024 -F -x 1 -n $ITERS
	pair ${tag}_ib_read_bw "$s" "$c" "$PT" ib_read_bw -a -m 1024 -F -x 1 -n $ITERS
	pair ${tag}_ib_send_bw "$s" "$c" "$PT" ib_send_bw -a -m 1024 -F -x 1 -n $ITERS
	pair ${tag}_ib_write_lat "$s" "$c" "$PT" ib_write_lat -F -x 1 -n $ITERS
	pair ${tag}_ib_atomic_bw_fetch_add "$s" "$c" "$PT" ib_atomic_bw -A FETCH_AND_ADD -F -x 1 -n $ITERS
	pair ${tag}_ib_atomic_bw_cmp_swap "$s" "$c" "$PT" ib_atomic_bw -A CMP_AND_SWAP -F -x 1 -n $ITERS
done

# No SRQ on the virtio-rdma device: the program stops at ibv_create_srq
# (EOPNOTSUPP) with its message, before any connection.
next_port
run_on "$SA" "$T_TMP/srq" ibv_srq_pingpong -g 1 -n 10 -p $port
rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "Couldn't create SRQ" "$T_TMP/srq"; then
	ok srq_pingpong_refused
else
	not_ok srq_pingpong_refused "rc=$rc $(tr '\n' ' ' <"$T_TMP/srq")"
fi

# hot-plug through the control socket
SH="$T_TMP/h.sock"
ctl() { timeout 60 "$CTL" -s "$T_TMP/ctl" "$@"; }
if ctl dev add h "socket=$SH,model=virtio-rdma,mac=02:00:00:00:2a:04,ip=10.27.0.4/24,qps=4,cqs=4" \
	>"$T_TMP/add" 2>&1 && ctl dev show h >"$T_TMP/show" 2>&1 &&
   grep -Eq "^dev h model virtio-rdma socket $SH .* max_qp 4 max_cq 4$" "$T_TMP/show" &&
   ctl dev show >"$T_TMP/show_all" 2>&1 && grep -q "^dev h model virtio-rdma" "$T_TMP/show_all" &&
   grep -q "^dev dev2 socket $SN" "$T_TMP/show_all"; then
	ok hotplug_add
else
	not_ok hotplug_add "$(cat "$T_TMP/add" "$T_TMP/show" "$T_TMP/show_all" 2>/dev/null | tr '\n' ' ')"
fi
pair hotplug_rc_pingpong "$SH" "$SA" "$PP" ibv_rc_pingpong -g 1 -c -n 200
if ! ctl res show dev h >"$T_TMP/res" 2>&1 && grep -q "virtio-rdma device" "$T_TMP/res"; then
	ok hotplug_res_refused
else
	not_ok hotplug_res_refused "$(cat "$T_TMP/res")"
fi
if ctl dev del h >"$T_TMP/del" 2>&1 && [ ! -e "$SH" ] && ctl dev show >"$T_TMP/show_all" 2>&1 &&
   ! grep -q "^dev h " "$T_TMP/show_all"; then
	ok hotplug_del
else
	not_ok hotplug_del "$(cat "$T_TMP/del" "$T_TMP/show_all" | tr '\n' ' ')"
fi

d_stop d
check clean_exit test "$D_RC" -eq 0
t_done
