#!/usr/bin/env bash
# Two Linux guests, each with vrdma's virtio_rdma driver and the rdma-core
# provider (guest/kernel, guest/provider), on two model=virtio-rdma devices
# of one daemon (same subnet, its switch between them):
# - ibv_rc_pingpong, ib_write_bw and ib_read_lat between a process in guest
#   A (server) and one in guest B (client); the ibv_rc_pingpong server checks the data
#   (-c). The guests have no network but the device: their TCP exchange goes
#   through a virtio-serial link (QEMU A listens on a host port, QEMU B
#   connects to it; busybox nc in each guest joins it to the programs);
# - rping -V through the two guest kernels' rdma_cm;
# - NVMe over RDMA: nvmet-rdma in guest A exports a RAM disk, nvme-rdma in
#   guest B connects through /dev/nvme-fabrics; data written on each side is
#   compared on the other (docs/guest.md);
# - the daemon exits cleanly.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"
. "$(dirname "$0")/rxe_lib.bash"
. "$(dirname "$0")/guest_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
DAEMON_TMO=1800
NVQS=13 # 1 + 4 CQs + 2 x 4 QPs
IP_A=10.43.0.1
IP_B=10.43.0.3

need setup "$DAEMON" busybox python3 || t_done
PID_A="" PID_B="" CTL_A="" CTL_B=""
stop_guests() {
	RXE_PID=$PID_A RXE_CTL=$CTL_A rxe_stop
	RXE_PID=$PID_B RXE_CTL=$CTL_B rxe_stop
}
trap 'stop_guests; t_cleanup' EXIT
# on A|B CMD: CMD in that guest
on() {
	local RXE_CTL
	if [ "$1" = A ]; then RXE_CTL=$CTL_A; else RXE_CTL=$CTL_B; fi
	rxe_cmd "$2"
}

guest_setup --device "socket=$T_TMP/a.sock,model=virtio-rdma,mac=02:00:00:00:2b:01,ip=$IP_A/24,qps=4,cqs=4" \
	--device "socket=$T_TMP/b.sock,model=virtio-rdma,mac=02:00:00:00:2b:03,ip=$IP_B/24,qps=4,cqs=4"
# links 0..2: QEMU A listens, QEMU B connects (retrying until A is up)
LINKS=()
args_a=() args_b=()
for i in 0 1 2; do
	next_port || { not_ok setup "no free TCP port"; t_done; }
	LINKS+=("$PORT")
	args_a+=(-chardev "socket,id=ln$i,host=127.0.0.1,port=$PORT,server=on,wait=off"
		-device "virtserialport,chardev=ln$i,name=ln$i")
	args_b+=(-chardev "socket,id=ln$i,host=127.0.0.1,port=$PORT,reconnect-ms=200"
		-device "virtserialport,chardev=ln$i,name=ln$i")
done
if GUEST_TAG=a guest_boot "$T_TMP/a.sock" "$NVQS" "${args_a[@]}"; then
	PID_A=$RXE_PID CTL_A=$RXE_CTL
	if GUEST_TAG=b guest_boot "$T_TMP/b.sock" "$NVQS" "${args_b[@]}"; then
		PID_B=$RXE_PID CTL_B=$RXE_CTL
		ok boot_two_guests
	else
		PID_B=$RXE_PID
		not_ok boot_two_guests "guest B"
		t_done
	fi
else
	PID_A=$RXE_PID
	not_ok boot_two_guests "guest A"
	t_done
fi
on A "ip link set vrdma0 up && ip addr add $IP_A/24 dev vrdma0" >/dev/null
on B "ip link set vrdma0 up && ip addr add $IP_B/24 dev vrdma0" >/dev/null
# the IPv4 GIDs (the core adds them from a work queue: polled)
gid_wait='for i in $(seq 1 600); do [ "$(cat /sys/class/infiniband/vrdma0/ports/1/gids/1)" != 0000:0000:0000:0000:0000:0000:0000:0000 ] && exit 0; sleep 0.1; done; exit 1'
if on A "$gid_wait" >/dev/null && on B "$gid_wait" >/dev/null; then
	ok ipv4_gids
else
	not_ok ipv4_gids
	t_done
fi

port=$((20000 + $$ % 20000))
# pair NAME LINK PROG ARGS: PROG ARGS as a server in guest A and a client in
# guest B, the TCP exchange through link LINK
pair() {
	local name=$1 link=$2 prog=$3 args=$4 lp=${LINKS[$2]} out srv rc_c rc_s gflag why=""
	perf_expect "$prog"
	gflag=$PERF_GFLAG
	local vp="vp=; for d in /sys/class/virtio-ports/*; do [ \"\$(cat \$d/name)\" = ln$link ] && vp=/dev/\$(basename \$d); done; [ -e \"\$vp\" ] || { echo no port; exit 1; }"
	port=$((port + 1))
	linked() { ss -Htn state established "( sport = :$lp )" 2>/dev/null | grep -q .; }
	if ! wait_cmd 120 linked; then
		why="QEMU B did not connect link $link"
	elif ! why=$(on A "rm -f /tmp/s.rc; ( timeout 110 $prog -d vrdma0 $gflag $args -p $port >/tmp/s.log 2>&1; echo \$? >/tmp/s.rc ) &
		for i in \$(seq 1 600); do netstat -ltn | grep -q ':$port ' && break; sleep 0.1; done
		netstat -ltn | grep -q ':$port ' || { cat /tmp/s.log; exit 1; }
		$vp
		nc 127.0.0.1 $port <>\$vp >&0 2>/dev/null &"); then
		why="guest A server or its end of the link: $why"
	elif ! why=$(on B "$vp
		nc -l -p $port <>\$vp >&0 2>/dev/null &
		for i in \$(seq 1 600); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.1; done; exit 1"); then
		why="guest B end of the link: $why"
	fi
	if [ -n "$why" ]; then
		not_ok "$name" "$why"
		return
	fi
	out=$(on B "timeout 110 $prog -d vrdma0 $gflag $args -p $port 127.0.0.1")
	rc_c=$?
	srv=$(on A "for i in \$(seq 1 1200); do [ -s /tmp/s.rc ] && break; sleep 0.1; done; cat /tmp/s.log; echo RC=\$(cat /tmp/s.rc)")
	rc_s=$(sed -n 's/^RC=//p' <<<"$srv")
	perf_verdict "$name" "$prog" "$args" "::ffff:$IP_A|255:255:10:43:00:01" \
		"client (guest B)" "server (guest A)" "$rc_c" "$rc_s" "$out" "$srv"
}
pair rc_pingpong 0 ibv_rc_pingpong "-c -n 100 -s 8192 -m 1024"
pair write_bw 1 ib_write_bw "-n 200"
pair read_lat 2 ib_read_lat "-n 100"

# rping through both guest kernels' rdma_cm (no link needed)
port=$((port + 1))
on A "rm -f /tmp/r.rc; ( timeout 110 rping -s -a $IP_A -p $port -C 20 -V >/tmp/r.log 2>&1; echo \$? >/tmp/r.rc ) &" >/dev/null
if on A "for i in \$(seq 1 1200); do rdma res show cm_id | grep -q 'state LISTEN .*:$port ' && exit 0; sleep 0.1; done; exit 1" >/dev/null; then
	out=$(on B "timeout 110 rping -c -a $IP_A -p $port -C 20 -V 2>&1")
	rc_c=$?
	srv=$(on A "for i in \$(seq 1 1200); do [ -s /tmp/r.rc ] && break; sleep 0.1; done; cat /tmp/r.log; echo RC=\$(cat /tmp/r.rc)")
	rc_s=$(sed -n 's/^RC=//p' <<<"$srv")
	check rping test "$rc_c" = 0 -a "$rc_s" = 0
else
	not_ok rping "guest A rping server did not listen: $(on A 'cat /tmp/r.log')"
fi

# NVMe over RDMA: guest A's nvmet-rdma exports a RAM disk (brd), guest B's
# nvme-rdma connects through /dev/nvme-fabrics (no nvme-cli in the guests);
# data written on either side is compared on the other.
NQN=nqn.2014-08.org.vrdma:ram0
load='mount -t configfs none /sys/kernel/config 2>/dev/null
for m in $(cat /etc/modules.extra); do
	case $m in brd.ko) insmod /lib/modules/$m rd_nr=1 rd_size=16384 ;; *) insmod /lib/modules/$m ;; esac || exit 1
done'
nvmet="$load
cd /sys/kernel/config/nvmet || exit 1
mkdir subsystems/$NQN && echo 1 >subsystems/$NQN/attr_allow_any_host &&
mkdir subsystems/$NQN/namespaces/1 && echo -n /dev/ram0 >subsystems/$NQN/namespaces/1/device_path &&
echo 1 >subsystems/$NQN/namespaces/1/enable &&
mkdir ports/1 && echo rdma >ports/1/addr_trtype && echo ipv4 >ports/1/addr_adrfam &&
echo $IP_A >ports/1/addr_traddr && echo 4420 >ports/1/addr_trsvcid &&
ln -s /sys/kernel/config/nvmet/subsystems/$NQN ports/1/subsystems/$NQN || exit 1
for i in \$(seq 1 600); do rdma res show cm_id | grep -q 'state LISTEN .*:4420' && exit 0; sleep 0.1; done; exit 1"
nvme_dev=""
if why=$(on A "$nvmet"); then
	ok nvme_target
	# the write returns once the controller is up; reading gives its instance
	if why=$(on B "$load
		exec 4<>/dev/nvme-fabrics || exit 1
		echo 'transport=rdma,traddr=$IP_A,trsvcid=4420,nqn=$NQN' >&4 || exit 1
		read -r line <&4; inst=\$(echo \$line | sed -n 's/^instance=\([0-9]*\),.*/\1/p')
		[ -n \"\$inst\" ] || { echo \"\$line\"; exit 1; }
		for i in \$(seq 1 1200); do [ -b /dev/nvme\${inst}n1 ] && echo nvme\${inst} && exit 0; sleep 0.1; done
		echo no namespace; exit 1"); then
		nvme_dev=$(tail -1 <<<"$why")
		ok nvme_connect
	else
		not_ok nvme_connect "$why"
	fi
else
	not_ok nvme_target "$why"
fi
if [ -n "$nvme_dev" ]; then
	# B: 4 MiB in 1 MiB writes (registered MRs), 256 KiB in 4 KiB writes
	# (inline data) at 8 MiB; read back in 64 KiB reads, compared
	out=$(on B "dd if=/dev/urandom of=/tmp/p1 bs=1M count=4 2>/dev/null &&
		dd if=/dev/urandom of=/tmp/p2 bs=4k count=64 2>/dev/null &&
		dd if=/tmp/p1 of=/dev/${nvme_dev}n1 bs=1M oflag=direct conv=fsync 2>/dev/null &&
		dd if=/tmp/p2 of=/dev/${nvme_dev}n1 bs=4k seek=2048 oflag=direct conv=fsync 2>/dev/null &&
		dd if=/dev/${nvme_dev}n1 of=/tmp/b1 bs=64k count=64 iflag=direct 2>/dev/null &&
		dd if=/dev/${nvme_dev}n1 of=/tmp/b2 bs=64k skip=128 count=4 iflag=direct 2>/dev/null &&
		cmp /tmp/p1 /tmp/b1 && cmp /tmp/p2 /tmp/b2 && sha256sum /tmp/p1 /tmp/p2 | cut -d' ' -f1")
	rc=$?
	check nvme_host_write_read test "$rc" = 0 -a "$(wc -l <<<"$out")" = 2
	# A: what landed in the RAM disk is what B wrote
	tgt=$(on A "dd if=/dev/ram0 bs=1M count=4 2>/dev/null | sha256sum | cut -d' ' -f1
		dd if=/dev/ram0 bs=4k skip=2048 count=64 2>/dev/null | sha256sum | cut -d' ' -f1")
	check nvme_target_data test -n "$tgt" -a "$tgt" = "$out"
	# A writes at 12 MiB into the RAM disk, B reads it through NVMe
	tgt=$(on A "dd if=/dev/urandom of=/tmp/p3 bs=64k count=16 2>/dev/null &&
		dd if=/tmp/p3 of=/dev/ram0 bs=64k seek=192 oflag=direct conv=fsync 2>/dev/null &&
		sha256sum /tmp/p3 | cut -d' ' -f1")
	out=$(on B "dd if=/dev/${nvme_dev}n1 bs=1M skip=12 count=1 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1")
	check nvme_target_write_host_read test -n "$tgt" -a "$tgt" = "$out"
	out=$(on B "echo 1 >/sys/class/nvme/$nvme_dev/delete_controller &&
		for i in \$(seq 1 600); do [ -e /sys/class/nvme/$nvme_dev ] || exit 0; sleep 0.1; done; exit 1")
	check nvme_disconnect test $? = 0
else
	for c in nvme_host_write_read nvme_target_data nvme_target_write_host_read nvme_disconnect; do
		not_ok "$c" "no NVMe device"
	done
fi

out=$(on A 'dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|no answer from the device|I/O error|Bogus|resetting|error recovery|Reconnecting"'
	on B 'dmesg | grep -E "WARNING:|BUG:|Oops|Call Trace|no answer from the device|I/O error|Bogus|resetting|error recovery|Reconnecting"')
if [ -z "$out" ]; then ok kernel_logs_clean; else not_ok kernel_logs_clean "$(head -10 <<<"$out")"; fi
stop_guests
d_stop d
check clean_exit test "$D_RC" -eq 0
t_done
