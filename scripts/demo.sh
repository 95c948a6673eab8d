#!/usr/bin/env bash
# make demo: start the backend from a config file with two devices on its
# built-in switch, pass Ethernet frames between them, run unmodified verbs
# programs (Debian's ibv_rc_pingpong and perftest) through them, look at the
# running daemon with vrdmactl, and end with a summary. Everything it starts
# is stopped on exit.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin="$top/build/bin"
dir=$(mktemp -d /tmp/vrdma-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
say() { printf '\n== %s\n' "$*"; }
note() { printf '   %s\n' "$@"; }
ctl() { "$bin/vrdmactl" -s "$dir/control" "$@"; }
# wait_listen PORT PID: until a server listens on PORT (bounded; fails if PID exits).
wait_listen() {
	for _ in $(seq 600); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

cat >"$dir/vrdma.conf" <<EOF
# Two devices on the daemon's built-in switch; sockets in $dir.
[global]
socket-dir = $dir
socket-mode = 0600

[device vrdma0]
mac = 02:56:52:00:00:01
ip = 10.77.0.1/24

[device vrdma1]
mac = 02:56:52:00:00:02
ip = 10.77.0.2/24
EOF
say "starting vhost-user-rdma from a config file (what the systemd service does)"
sed 's/^/   | /' "$dir/vrdma.conf"
"$bin/vhost-user-rdma" --config "$dir/vrdma.conf" --pidfile "$dir/daemon.pid" &
daemon=$!
pids+=("$daemon")
for _ in $(seq 200); do [ -e "$dir/daemon.pid" ] && break; sleep 0.05; done
[ -e "$dir/daemon.pid" ] || { echo "demo: the daemon did not start" >&2; exit 1; }
note "each device is a virtio-net device with the RoCE extension on its own socket;" \
     "vrdmactl talks to the daemon's control socket:"
ctl dev show | sed 's/^/   /'

say "device 0 as a virtio-net driver sees it (vrdma-netcat info)"
"$bin/vrdma-netcat" --socket "$dir/vrdma0.sock" info | sed 's/^/   /'

say "10000 Ethernet frames (60..1514 bytes) from device 0 to device 1, verified byte for byte"
"$bin/vrdma-netcat" --socket "$dir/vrdma1.sock" recv --count 10000 --ready "$dir/rx.ready" &
rx=$!
pids+=("$rx")
for _ in $(seq 200); do [ -e "$dir/rx.ready" ] && break; sleep 0.05; done
"$bin/vrdma-netcat" --socket "$dir/vrdma0.sock" send --count 10000 --dst 02:56:52:00:00:02
wait "$rx"

say "an unmodified verbs program: Debian's ibv_rc_pingpong, server on device 1, client on device 0"
note "vrdma-run puts vrdma's libibverbs.so.1 first; GID index 1 is the device's IPv4 address"
port=$((20000 + $$ % 10000))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ibv_rc_pingpong -g 1 -p "$port" -n 2000 -c \
	>"$dir/pp.srv" 2>&1 &
srv=$!
pids+=("$srv")
wait_listen "$port" "$srv"
# (a client that fails ends the demo here; its server would wait for good)
if ! "$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ibv_rc_pingpong -g 1 -p "$port" -n 2000 \
	-c 127.0.0.1 >"$dir/pp.cli" 2>&1; then
	sed 's/^/   /' "$dir/pp.cli"
	echo "demo: the ibv_rc_pingpong client failed" >&2
	exit 1
fi
sed 's/^/   /' "$dir/pp.cli"
wait "$srv"
pingpong=$(grep -E 'bytes in' "$dir/pp.cli" | head -1)

say "bandwidth: perftest ib_write_bw, 64 KiB RDMA WRITEs for 5 seconds"
note "meanwhile vrdmactl shows the QPs: state, PSNs, outstanding work requests"
port=$((port + 1))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ib_write_bw -F -x 1 -s 65536 -D 5 -p "$port" \
	>"$dir/bw.srv" 2>&1 &
srv=$!
pids+=("$srv")
wait_listen "$port" "$srv"
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ib_write_bw -F -x 1 -s 65536 -D 5 -p "$port" \
	127.0.0.1 >"$dir/bw.cli" 2>&1 &
cli=$!
pids+=("$cli")
qps=""
for _ in $(seq 200); do
	qps=$(ctl res show qp | grep 'state RTS' || true)
	[ -n "$qps" ] && break
	sleep 0.05
done
sleep 1
ctl res show qp >"$dir/qps.txt" || true
sed 's/^/   /' "$dir/qps.txt"
wait "$cli"
wait "$srv"
grep -E '^ *#bytes|^ *65536 ' "$dir/bw.cli" | sed 's/^/   /'
bw=$(awk '$1 == 65536 { print $4 }' "$dir/bw.cli" | head -1)

say "latency: perftest ib_send_lat, 64-byte SENDs"
port=$((port + 1))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ib_send_lat -F -x 1 -s 64 -n 2000 -p "$port" \
	>"$dir/lat.srv" 2>&1 &
srv=$!
pids+=("$srv")
wait_listen "$port" "$srv"
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ib_send_lat -F -x 1 -s 64 -n 2000 -p "$port" \
	127.0.0.1 >"$dir/lat.cli" 2>&1
wait "$srv"
grep -E '^ *#bytes|^ *64 ' "$dir/lat.cli" | sed 's/^/   /'
lat=$(awk '$1 == 64 { print $5 }' "$dir/lat.cli" | head -1)

say "the extensions: ib_atomic_lat (remote FETCH_AND_ADD), server on device 1, client on device 0"
port=$((port + 1))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ib_atomic_lat -x 1 -F -A FETCH_AND_ADD -n 2000 \
	-p "$port" >"$dir/at.srv" 2>&1 &
srv=$!
pids+=("$srv")
wait_listen "$port" "$srv"
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ib_atomic_lat -x 1 -F -A FETCH_AND_ADD -n 2000 \
	-p "$port" 127.0.0.1 >"$dir/at.cli" 2>&1
wait "$srv"
grep -E '^ *#bytes|^ *8 ' "$dir/at.cli" | sed 's/^/   /'

say "hot-plug: vrdmactl adds a third device at run time, the others keep running"
ctl dev add vrdma2 ip=10.77.0.3/24 | sed 's/^/   /'
ctl dev show | sed 's/^/   /'
ctl dev del vrdma2 | sed 's/^/   /'

say "device counters (vrdmactl stat show dev vrdma0)"
ctl stat show dev vrdma0 | grep '^dev' | tr ' ' '\n' | paste - - | sed -n '2,40p' |
	awk '{ printf "   %-22s %s\n", $1, $2 }' | head -24

kill -TERM "$daemon"
wait "$daemon" 2>/dev/null || true
pids=()

say "summary"
note "pingpong (ibv_rc_pingpong, 2000 x 4096 bytes, buffers checked): ${pingpong:-?}" \
     "bandwidth (ib_write_bw, 64 KiB WRITEs, 5 s):                  ${bw:-?} MB/s" \
     "latency (ib_send_lat, 64-byte SENDs, typical):                ${lat:-?} usec" \
     "QPs while ib_write_bw ran (vrdmactl res show qp):"
sed 's/^/     /' "$dir/qps.txt"
echo "demo finished"
