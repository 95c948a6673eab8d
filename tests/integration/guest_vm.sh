#!/usr/bin/env bash
# RDMA inside a VM: Debian's kernel with vrdma's virtio_rdma driver
# (guest/kernel) in QEMU 10 (scripts/qemu-build.sh), the device a
# vhost-user-device-pci (virtio id 42) on a daemon's model=virtio-rdma device:
# - the guest sees the PCI function 1af4:106a, virtio device 42 is bound to
#   virtio_rdma with VIRTIO_F_VERSION_1 negotiated (the daemon's counters
#   show the same features);
# - the driver read the daemon's configuration (CQs, QPs, the node GUID is
#   the EUI-64 of the device's MAC);
# - the RDMA core lists vrdma0: port ACTIVE / LinkUp, link layer Ethernet,
#   RoCE v2 GIDs (the link-local one from the MAC, the IPv4 one once the
#   netdev has the address), `rdma link` shows it;
# - a kernel RDMA consumer (tests/guest/kernel/vrg_selftest.c): two RC QPs
#   through the device, SEND/RECV, fast registration, RDMA WRITE and READ,
#   data compared byte for byte, and a CQ notification;
# - user verbs through the provider (guest/provider, libvrdmag): ibv_devices
#   lists vrdma0, ibv_devinfo shows the port ACTIVE with its RoCE v2 GIDs,
#   ibv_rc_pingpong (polling, and with completion events) and
#   ibv_ud_pingpong, ib_write_bw and ib_read_lat between two guest processes
#   through the device (the ibv_* receivers check the data: -c); and ibv_rc_pingpong between a guest
#   process (client) and a vrdma-run process on the host (server) on a second
#   device of the same daemon (the virtio-net RoCE device, same subnet),
#   through the daemon's switch; the two exchange their addresses over TCP
#   through a virtio-serial port (QEMU connects it to the host server, busybox
#   nc in the guest to the guest client);
# - rping (rdma_cm in the guest kernel over the device's GSI QP, data
#   verified with -V) between two guest processes and with a host client;
# - a guest process killed while it holds verbs objects: the kernel's
#   cleanup destroys them on the device;
# - the daemon counted the guest's commands; unloading the driver destroys
#   every object and resets the device; no kernel warning; the daemon exits
#   cleanly.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"
. "$(dirname "$0")/rxe_lib.bash"
. "$(dirname "$0")/guest_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
DAEMON_TMO=1800
QPS=4
CQS=4
NVQS=$((1 + CQS + 2 * QPS))
MAC=02:00:00:00:2b:01
IP=10.43.0.1
MAC_H=02:00:00:00:2b:02
IP_H=10.43.0.2
RUN="$VRDMA_BUILD/bin/vrdma-run"
asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"

need setup "$DAEMON" "$RUN" busybox python3 || t_done
trap 'rxe_stop; t_cleanup' EXIT

guest_setup --device "socket=$T_TMP/r.sock,model=virtio-rdma,mac=$MAC,ip=$IP/24,qps=$QPS,cqs=$CQS" \
	--device "socket=$T_TMP/h.sock,mac=$MAC_H,ip=$IP_H/24"
# the host ends of the guest's TCP bridges (virtio-serial ports br0..br2,
# one per host pair: QEMU notices a closed connection only while the guest
# holds the port open, so a port is not reused): QEMU connects port i to a
# host server on BRIDGE_PORTS[i] once one listens
BRIDGE_PORTS=()
bridge_args=()
for i in 0 1 2; do
	next_port || { not_ok setup "no free TCP port"; t_done; }
	BRIDGE_PORTS+=("$PORT")
	bridge_args+=(-chardev "socket,id=br$i,host=127.0.0.1,port=$PORT,reconnect-ms=200"
		-device "virtserialport,chardev=br$i,name=br$i")
done
if guest_boot "$T_TMP/r.sock" "$NVQS" "${bridge_args[@]}"; then
	ok boot
else
	not_ok boot
	t_done
fi

# the PCI function and the virtio device
out=$(rxe_cmd 'for d in /sys/bus/pci/devices/*; do echo "$(cat $d/vendor):$(cat $d/device)"; done')
if grep -q '^0x1af4:0x106a$' <<<"$out"; then ok pci_1af4_106a; else not_ok pci_1af4_106a "$out"; fi
out=$(rxe_cmd 'for v in /sys/bus/virtio/devices/*; do [ "$(cat $v/device)" = 0x002a ] &&
	echo "driver=$(basename $(readlink $v/driver)) features=$(cat $v/features)"; done')
# features: one character per bit from bit 0; bit 32 is VIRTIO_F_VERSION_1
if grep -q '^driver=virtio_rdma features=' <<<"$out" &&
   [ "$(sed -n 's/.*features=//p' <<<"$out" | cut -c33)" = 1 ]; then
	ok virtio_bound
else
	not_ok virtio_bound "$out"
fi
out=$(rxe_cmd 'dmesg | grep "virtio_rdma virtio"')
if grep -q "vrdma0: $CQS CQs, $QPS QPs, $NVQS virtqueues of 1024 entries, netdev vrdma0" <<<"$out"; then
	ok config
else
	not_ok config "$out"
fi

# the RDMA core's view; the IPv4 GID once the netdev has the device's address
# (the core adds it from a work queue: polled, up to 60 s)
rxe_cmd "ip link set vrdma0 up && ip addr add $IP/24 dev vrdma0" >/dev/null
out=$(rxe_cmd 'cd /sys/class/infiniband/vrdma0 && echo "guid=$(cat node_guid)" &&
	cd ports/1 && echo "state=$(cat state)" && echo "phys=$(cat phys_state)" &&
	echo "ll=$(cat link_layer)" && echo "gid0=$(cat gids/0) $(cat gid_attrs/types/0)" &&
	for i in $(seq 1 600); do g=$(cat gids/1); [ "$g" != 0000:0000:0000:0000:0000:0000:0000:0000 ] && break; sleep 0.1; done;
	echo "gid1=$(cat gids/1) $(cat gid_attrs/types/1)"')
want="guid=0000:00ff:fe00:2b01
state=4: ACTIVE
phys=5: LinkUp
ll=Ethernet
gid0=fe80:0000:0000:0000:0000:00ff:fe00:2b01 RoCE v2
gid1=0000:0000:0000:0000:0000:ffff:0a2b:0001 RoCE v2"
if [ "$out" = "$want" ]; then ok ib_device; else not_ok ib_device "$(diff <(echo "$want") <(echo "$out"))"; fi
out=$(rxe_cmd 'rdma link show')
if grep -q '^link vrdma0/1 state ACTIVE physical_state LINK_UP netdev vrdma0' <<<"$out"; then
	ok rdma_link
else
	not_ok rdma_link "$out"
fi

# a kernel consumer moving data through the device
ins=$(rxe_cmd 'insmod /lib/vrg/vrg_selftest.ko dev=vrdma0 gid=1')
rc=$?
out=$(rxe_cmd 'dmesg | grep vrg_selftest:')
if [ $rc -eq 0 ] && grep -q 'vrg_selftest: PASSED' <<<"$out" && ! grep -q FAIL <<<"$out"; then
	ok "kernel_selftest_$(grep -c 'vrg_selftest: ok' <<<"$out")"
else
	not_ok kernel_selftest "insmod: $rc $ins; $(grep -E 'FAIL|wc wr_id' <<<"$out" | head -10); last: $(tail -1 <<<"$out")"
fi

# user verbs: the provider and the driver's uverbs side
out=$(rxe_cmd 'ibv_devices')
if grep -q "vrdma0.*000000fffe002b01" <<<"$out"; then
	ok ibv_devices
else
	not_ok ibv_devices "$out"
fi
out=$(rxe_cmd 'ibv_devinfo -v -d vrdma0')
if grep -q 'state:.*PORT_ACTIVE (4)' <<<"$out" && grep -q 'link_layer:.*Ethernet' <<<"$out" &&
   grep -q "GID\[ *1\]:.*::ffff:$IP, RoCE v2" <<<"$out"; then
	ok ibv_devinfo
else
	not_ok ibv_devinfo "$(grep -E 'state|link_layer|GID|Failed|fail' <<<"$out" | head -8)"
fi

port=$((20000 + $$ % 20000))
# pingpong NAME PROG ARGS: PROG as server and client, two guest processes
# on vrdma0 over the guest's loopback (TCP for the exchange, the device for
# the data); both print their results (ibv_*: the rate; perftest: the table
# row; only the client for ib_read_lat), the ibv_* server checks what it
# received (-c).
pingpong() {
	local name=$1 prog=$2 args=$3 out rc_c rc_s srv gflag
	perf_expect "$prog"
	gflag=$PERF_GFLAG
	port=$((port + 1))
	rxe_cmd "rm -f /tmp/s.rc; ( timeout 110 $prog -d vrdma0 $gflag $args -p $port >/tmp/s.log 2>&1; echo \$? >/tmp/s.rc ) &" >/dev/null
	if ! rxe_cmd "for i in \$(seq 1 600); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.1; done; exit 1" >/dev/null; then
		not_ok "$name" "server did not listen: $(rxe_cmd 'cat /tmp/s.log')"
		return
	fi
	out=$(rxe_cmd "timeout 110 $prog -d vrdma0 $gflag $args -p $port 127.0.0.1")
	rc_c=$?
	srv=$(rxe_cmd "for i in \$(seq 1 1200); do [ -s /tmp/s.rc ] && break; sleep 0.1; done; cat /tmp/s.log; echo RC=\$(cat /tmp/s.rc)")
	rc_s=$(sed -n 's/^RC=//p' <<<"$srv")
	perf_verdict "$name" "$prog" "$args" "" client server "$rc_c" "$rc_s" "$out" "$srv"
}
pingpong rc_pingpong ibv_rc_pingpong "-c -n 100 -s 8192 -m 1024"
pingpong rc_pingpong_events ibv_rc_pingpong "-c -e -n 50 -s 4096 -m 1024"
pingpong ud_pingpong ibv_ud_pingpong "-c -n 100 -s 512"
pingpong write_bw ib_write_bw "-n 200"
pingpong read_lat ib_read_lat "-n 100"

# a host process (vrdma-run, the daemon's second device) as the server, a
# guest process as the client; the server checks the data. The TCP exchange
# goes through a bridge: QEMU connects a virtio-serial port to the
# server's port (retrying until it listens); once that connection is up, a
# busybox nc in the guest serves the guest side (a virtio-serial port reads
# end-of-file while its host side is not connected).
# host_pair NAME BRIDGE PROG ARGS: PROG ARGS as a host server and a guest
# client, the TCP exchange through bridge BRIDGE (0..2)
host_pair() {
	local name=$1 br=$2 prog=$3 args=$4 out srv rc_c rc_s spid hflag gflag
	local BRIDGE_PORT=${BRIDGE_PORTS[$2]}
	perf_expect "$prog"
	gflag=$PERF_GFLAG hflag=$PERF_GFLAG
	[[ $prog == ibv_* ]] || hflag+=" -F"
	# shellcheck disable=SC2086
	timeout 120 env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		"$RUN" --socket "$T_TMP/h.sock" -- $prog -d vrdma0 $hflag $args -p "$BRIDGE_PORT" \
		>"$T_TMP/$name.srv" 2>&1 &
	spid=$!
	bridged() { ss -Htn state established "( sport = :$BRIDGE_PORT )" 2>/dev/null | grep -q . || _gone "$spid"; }
	port=$((port + 1))
	local why=""
	if ! wait_cmd 120 bridged || ! kill -0 "$spid" 2>/dev/null; then
		why="no connection from QEMU: $(ss -Htan "( sport = :$BRIDGE_PORT or dport = :$BRIDGE_PORT )" | tr '\n' ' ')"
	elif ! why=$(rxe_cmd "vp=; for d in /sys/class/virtio-ports/*; do [ \"\$(cat \$d/name)\" = br$br ] && vp=/dev/\$(basename \$d); done
		[ -e \"\$vp\" ] || { echo no port; exit 1; }
		nc -l -p $port <>\$vp >&0 2>/tmp/nc.err &
		for i in \$(seq 1 600); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.1; done
		cat /tmp/nc.err; ps; exit 1"); then
		why="guest nc not listening: $why"
	fi
	if [ -n "$why" ]; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		not_ok "$name" "bridge not up: $why; server: $(tail -3 "$T_TMP/$name.srv" | tr '\n' ' ')"
		return
	fi
	out=$(rxe_cmd "timeout 110 $prog -d vrdma0 $gflag $args -p $port 127.0.0.1")
	rc_c=$?
	wait "$spid"
	rc_s=$?
	srv=$(cat "$T_TMP/$name.srv")
	perf_verdict "$name" "$prog" "$args" "::ffff:$IP_H|255:255:10:43:00:02" \
		"guest client" "host server" "$rc_c" "$rc_s" "$out" "$srv"
}
host_pair rc_pingpong_host 0 ibv_rc_pingpong "-c -n 100 -s 8192 -m 1024"
host_pair write_bw_host 1 ib_write_bw "-n 200"
host_pair read_lat_host 2 ib_read_lat "-n 100"

# rping through the guest kernel's rdma_cm (ib_cm's MADs on the device's
# GSI QP): a guest server, a guest client (loopback through the device) and
# then a host client (vrdma-run, librdmacm over the daemon's connection
# manager on the second device). -V: rping verifies every ping's data and
# exits non-zero otherwise.
rping_pair() {
	local name=$1 where=$2 out rc_c rc_s
	port=$((port + 1))
	rxe_cmd "rm -f /tmp/r.rc; ( timeout 110 rping -s -a $IP -p $port -C 20 -V >/tmp/r.log 2>&1; echo \$? >/tmp/r.rc ) &" >/dev/null
	if ! rxe_cmd "for i in \$(seq 1 1200); do rdma res show cm_id | grep -q 'state LISTEN .*:$port ' && exit 0; sleep 0.1; done; exit 1" >/dev/null; then
		not_ok "$name" "guest rping server did not listen: $(rxe_cmd 'cat /tmp/r.log')"
		return
	fi
	if [ "$where" = guest ]; then
		out=$(rxe_cmd "timeout 110 rping -c -a $IP -p $port -C 20 -V 2>&1")
	else
		out=$(timeout 120 env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
			ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
			"$RUN" --socket "$T_TMP/h.sock" -- rping -c -a "$IP" -p "$port" -C 20 -V 2>&1)
	fi
	rc_c=$?
	srv=$(rxe_cmd "for i in \$(seq 1 1200); do [ -s /tmp/r.rc ] && break; sleep 0.1; done; cat /tmp/r.log; echo RC=\$(cat /tmp/r.rc)")
	rc_s=$(sed -n 's/^RC=//p' <<<"$srv")
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ]; then
		ok "$name"
	else
		not_ok "$name" "$where client rc=$rc_c guest server rc=$rc_s: $(tail -3 <<<"$out" | tr '\n' ' ') / $(tail -4 <<<"$srv" | tr '\n' ' ')"
	fi
}
rping_pair rping guest
rping_pair rping_host host

# a guest process killed while it holds a PD, an MR, a CQ and a QP: the
# kernel's uverbs cleanup destroys them through the driver (the daemon's
# counts come back to what they were)
objs() { d_stats d | grep -A1 "^virtio-rdma $T_TMP/r.sock" | sed -n 's/^  roce objects //p'; }
before=$(objs)
port=$((port + 1))
rxe_cmd "( ibv_rc_pingpong -d vrdma0 -g 1 -p $port >/dev/null 2>&1 & echo \$! >/tmp/k.pid )" >/dev/null
rxe_cmd "for i in \$(seq 1 600); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.1; done; exit 1" >/dev/null
held=$(objs)
rxe_cmd 'kill -9 $(cat /tmp/k.pid)' >/dev/null
objs_back() { [ "$(objs)" = "$before" ]; }
if [ -n "$before" ] && [ "$held" != "$before" ] && wait_cmd 60 objs_back; then
	ok killed_process_cleanup
else
	not_ok killed_process_cleanup "before: $before, held: $held, after: $(objs)"
fi

stats=$(d_stats d)
if grep -q "^virtio-rdma $T_TMP/r.sock: ctrl ok [1-9].* features 0x100000000$" <<<"$stats"; then
	ok daemon_stats
else
	not_ok daemon_stats "$(grep -A3 virtio-rdma <<<"$stats" | head -5)"
fi

# unloading the driver destroys what the kernel created (the MAD agent's
# PD, MR, CQ and GSI QP) and resets the device
out=$(rxe_cmd 'rmmod vrg_selftest && rmmod virtio_rdma && ls /sys/class/infiniband | wc -l')
stats=$(d_stats d)
if [ "$out" = 0 ] && grep -A1 "^virtio-rdma $T_TMP/r.sock" <<<"$stats" |
	grep -q "^  roce objects pd 0 mr 0 cq 0 qp 0$"; then
	ok unload
else
	not_ok unload "$out / $(grep -A1 '^virtio-rdma' <<<"$stats" | head -2)"
fi
out=$(rxe_cmd 'dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|no answer from the device|ib_register_device:|unsupported configuration|answered (cqn|qpn)"')
if [ -z "$out" ]; then ok kernel_log_clean; else not_ok kernel_log_clean "$(head -10 <<<"$out")"; fi
rxe_stop
d_stop d
check clean_exit test "$D_RC" -eq 0
t_done
