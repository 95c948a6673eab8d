#!/usr/bin/env bash
# make demo: start the backend with two devices on the built-in switch, pass
# Ethernet frames between them, then run an unmodified verbs program
# (Debian's ibv_rc_pingpong) through them. Everything it starts is stopped on
# exit.
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

echo "== starting vhost-user-rdma with two devices on the built-in switch"
"$bin/vhost-user-rdma" \
	--device "socket=$dir/vrdma0.sock,mac=02:56:52:00:00:01,ip=10.77.0.1/24" \
	--device "socket=$dir/vrdma1.sock,mac=02:56:52:00:00:02,ip=10.77.0.2/24" \
	--pidfile "$dir/daemon.pid" --stats &
daemon=$!
pids+=("$daemon")
for _ in $(seq 200); do [ -e "$dir/daemon.pid" ] && break; sleep 0.05; done
[ -e "$dir/daemon.pid" ] || { echo "demo: the daemon did not start" >&2; exit 1; }

echo "== device 0:"
"$bin/vrdma-netcat" --socket "$dir/vrdma0.sock" info
echo "== device 1:"
"$bin/vrdma-netcat" --socket "$dir/vrdma1.sock" info

echo "== 10000 Ethernet frames (60..1514 bytes) from device 0 to device 1, verified byte for byte"
"$bin/vrdma-netcat" --socket "$dir/vrdma1.sock" recv --count 10000 --ready "$dir/rx.ready" &
rx=$!
pids+=("$rx")
for _ in $(seq 200); do [ -e "$dir/rx.ready" ] && break; sleep 0.05; done
"$bin/vrdma-netcat" --socket "$dir/vrdma0.sock" send --count 10000 --dst 02:56:52:00:00:02
wait "$rx"

echo "== device 0 reaching itself (loopback through the switch)"
"$bin/vrdma-netcat" --socket "$dir/vrdma0.sock" loopback --count 1000

echo "== an unmodified verbs program: Debian's ibv_rc_pingpong, server on device 1, client on device 0"
echo "   (vrdma-run puts our libibverbs.so.1 first; GID index 1 is the device's IPv4 address)"
port=$((20000 + $$ % 10000))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ibv_rc_pingpong -g 1 -p "$port" -n 2000 -c &
srv=$!
pids+=("$srv")
for _ in $(seq 400); do
	ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
	sleep 0.05
done
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ibv_rc_pingpong -g 1 -p "$port" -n 2000 -c localhost
wait "$srv"

echo "== the extensions: ib_atomic_lat (remote FETCH_AND_ADD), server on device 1, client on device 0"
port=$((port + 1))
"$bin/vrdma-run" --socket "$dir/vrdma1.sock" -- ib_atomic_lat -x 1 -F -A FETCH_AND_ADD -n 2000 -p "$port" &
srv=$!
pids+=("$srv")
for _ in $(seq 400); do
	ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
	sleep 0.05
done
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ib_atomic_lat -x 1 -F -A FETCH_AND_ADD -n 2000 -p "$port" localhost
wait "$srv"

echo "== ibv_devinfo through vrdma-run"
"$bin/vrdma-run" --socket "$dir/vrdma0.sock" -- ibv_devinfo

echo "== backend counters"
kill -TERM "$daemon"
wait "$daemon" || true
pids=()
echo "demo finished"
