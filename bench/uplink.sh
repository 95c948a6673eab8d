#!/usr/bin/env bash
# Uplink frame rate against the raw sockets, ratios from one run.
#
#   ns A: [tx] -- ua ==veth== ub -- [rx] :ns B
#
# Raw references (bench/afxdp_raw.c): an AF_XDP socket (copy mode) on ua
# sends N frames of SIZE bytes as fast as it can, one on ub counts them;
# generic XDP, native XDP (veth has it), and AF_PACKET (sendmmsg/recvmmsg).
# vrdma: two daemons, one per namespace, each with --uplink af_xdp:IF (then
# af_packet:IF); bench/uplink_frames.c pushes the same N frames through
# device A's virtio-net transmit queue (vrdma_net_send_burst) and counts
# them on device B's receive queue. Frames received per second (first to
# last frame) are compared: vrdma / raw AF_XDP generic for the AF_XDP uplink
# (goal >= 0.8), vrdma / raw AF_PACKET for the AF_PACKET uplink. ROUNDS
# alternating rounds, medians compared. Then RoCE over each uplink:
# ib_write_bw and ib_send_bw -x 1 -F at 64 KiB and 64 B between the two
# daemons' devices (the verbs programs run in our namespace: the daemons'
# sockets are files, perftest's side channel is 127.0.0.1).
#
# usage: bench/uplink.sh [N] [ROUNDS] [--only frames|roce]
# environment: UPLINK_SIZES ("60 1514"), UPLINK_KINDS ("af_xdp af_packet"),
# UPLINK_RAW ("generic native packet"), UPLINK_ROCE_SEC (5),
# UPLINK_DAEMON_OPTS (extra daemon options, e.g. "--poll-us 50").
# Needs root, libxdp-dev/libbpf-dev, perftest (scripts/deps.sh test), a build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
n=${1:-500000}
rounds=${2:-3}
only=${4:-}
[ "${3:-}" = --only ] || only=
sizes=${UPLINK_SIZES:-60 1514}
kinds=${UPLINK_KINDS:-af_xdp/generic af_xdp af_packet}
raws=${UPLINK_RAW:-generic native packet}
roce_sec=${UPLINK_ROCE_SEC:-5}
dopts=${UPLINK_DAEMON_OPTS:-}
[ "$(id -u)" = 0 ] || { echo "uplink: needs root (namespaces, XDP)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vrdma-uplink.XXXXXX)
na=vrdma-$$-ua
nb=vrdma-$$-ub
ia=ua$$
ib=ub$$
mac_a=02:00:00:00:3a:01
mac_b=02:00:00:00:3b:01
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$na" 2>/dev/null
	ip netns del "$nb" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

mkdir -p "$top/build/bench"
raw=$top/build/bench/afxdp_raw
frames=$top/build/bench/uplink_frames
gcc -std=gnu11 -O2 -Wall -D_GNU_SOURCE "$top/bench/afxdp_raw.c" -lxdp -lbpf -o "$raw" ||
	{ echo "uplink: afxdp_raw did not build" >&2; exit 1; }
gcc -std=gnu11 -O2 -Wall -D_GNU_SOURCE -I"$top/include" "$top/bench/uplink_frames.c" \
	-L"$top/build/lib" -lvrdma -Wl,-rpath,"$top/build/lib" -o "$frames" ||
	{ echo "uplink: uplink_frames did not build (make first)" >&2; exit 1; }

ip netns add "$na" && ip netns add "$nb" &&
ip link add "$ia" mtu 1500 netns "$na" type veth peer name "$ib" mtu 1500 netns "$nb" || exit 1
for x in "$na $ia" "$nb $ib"; do
	set -- $x
	ip netns exec "$1" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$2/disable_ipv6"
	ip -n "$1" link set lo up
	ip -n "$1" link set "$2" up
done

# wait_file FILE PID: until FILE exists (false if PID died or 30 s passed).
wait_file() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# key FILE KEY: the value of a "key value" line.
key() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# xfer NAME RXCMD... -- TXCMD...: receiver first (its -r READY), then the
# sender; prints "rx_fps tx_fps rx_frames".
xfer() {
	local name=$1 rxc=() txc=() rp
	shift
	while [ "$1" != -- ]; do rxc+=("$1"); shift; done
	shift
	txc=("$@")
	rm -f "$tmp/ready"
	timeout 120 "${rxc[@]}" -n "$n" -r "$tmp/ready" >"$tmp/$name.rx" 2>&1 &
	rp=$!
	if ! wait_file "$tmp/ready" $rp; then
		echo "uplink: $name: receiver did not start: $(tr '\n' ' ' <"$tmp/$name.rx")" >&2
		echo "0 0 0"
		return
	fi
	timeout 120 "${txc[@]}" -n "$n" >"$tmp/$name.tx" 2>&1
	wait $rp
	echo "$(key "$tmp/$name.rx" rx_fps) $(key "$tmp/$name.tx" tx_fps) $(key "$tmp/$name.rx" rx_frames)"
}

# daemons KIND: one daemon per namespace with --uplink KIND:IF (a few
# tries: the kernel releases the previous XDP socket of the interface
# asynchronously, and a bind meanwhile is refused).
daemons() {
	local t
	for t in 1 2 3 4 5; do
		daemons_try "$1" && return 0
		sleep 1
	done
	return 1
}
daemons_try() {
	local k=${1%%/*} mode= tag=${1//\//-}
	[ "$1" = "$k" ] || mode=${1#*/}
	rm -f "$tmp/da.pid" "$tmp/db.pid" "$tmp/a.sock" "$tmp/b.sock"
	xdp_off
	ip netns exec "$na" env VRDMA_XDP_MODE="$mode" "$bin/vhost-user-rdma" -q --stats \
		--pidfile "$tmp/da.pid" $dopts \
		--device "socket=$tmp/a.sock,mac=$mac_a,ip=10.79.0.1/24" --uplink "$k:$ia" \
		>"$tmp/da.$tag.log" 2>&1 </dev/null &
	da=$!
	ip netns exec "$nb" env VRDMA_XDP_MODE="$mode" "$bin/vhost-user-rdma" -q --stats \
		--pidfile "$tmp/db.pid" $dopts \
		--device "socket=$tmp/b.sock,mac=$mac_b,ip=10.79.0.2/24" --uplink "$k:$ib" \
		>"$tmp/db.$tag.log" 2>&1 </dev/null &
	db=$!
	pids+=($da $db)
	wait_file "$tmp/da.pid" $da && wait_file "$tmp/db.pid" $db && return 0
	echo "uplink: $k daemons did not start:" >&2
	tail -n 5 "$tmp/da.$tag.log" "$tmp/db.$tag.log" >&2
	undaemons
	return 1
}
undaemons() {
	kill -TERM $da $db 2>/dev/null
	wait $da $db 2>/dev/null
}
# xdp_off: no XDP program left on either end (a process that could not
# detach its program leaves it behind).
xdp_off() {
	local m
	for m in xdpgeneric xdpdrv; do
		ip -n "$na" link set dev "$ia" $m off 2>/dev/null
		ip -n "$nb" link set dev "$ib" $m off 2>/dev/null
	done
}

# med "V1 V2 ...": the median.
med() {
	echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
		END { if (!NR) print 0; else if (NR % 2) print v[(NR + 1) / 2];
		      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A res=()   # "case size" -> rx_fps values of every round
echo "uplink: $n frames per run, $rounds rounds, sizes $sizes, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$only" ] || [ "$only" = frames ]; then
	for ((r = 0; r < rounds; r++)); do
		for m in $raws; do
			for s in $sizes; do
				for t in 1 2 3 4 5; do
					# (a bind just after the previous socket closed may be refused)
					xdp_off
					set -- $(xfer "raw-$m-$s-$r" ip netns exec "$nb" "$raw" rx -i "$ib" -m "$m" -- \
						ip netns exec "$na" "$raw" tx -i "$ia" -m "$m" -s "$s")
					[ "$1" != 0 ] && break
					sleep 1
				done
				[ "$1" = 0 ] || res["raw_$m $s"]+="$1 "
				echo "round $r raw $m $s B: rx $1 fps (tx $2 fps, received $3 of $n)"
			done
		done
		for k in $kinds; do
			daemons "$k" || continue
			for s in $sizes; do
				set -- $(xfer "vrdma-${k//\//-}-$s-$r" "$frames" rx --socket "$tmp/b.sock" -- \
					"$frames" tx --socket "$tmp/a.sock" --dst "$mac_b" -s "$s")
				[ "$1" = 0 ] || res["vrdma_$k $s"]+="$1 "
				echo "round $r vrdma $k $s B: rx $1 fps (tx $2 fps, received $3 of $n)"
			done
			[ "${k%%/*}" = af_xdp ] && [ "$r" = 0 ] &&
				echo "daemon $k: $(ip -n "$nb" -d link show dev "$ib" | grep -o 'xdp[a-z]*/id' | head -n 1)"
			undaemons
		done
	done
	echo
	echo "| frames | size | median rx frames/s | ratio |"
	echo "|---|---|---|---|"
	for s in $sizes; do
		for m in $raws; do
			echo "| raw AF_XDP/AF_PACKET $m | $s | $(med "${res["raw_$m $s"]:-}") | |"
		done
		for k in $kinds; do
			case $k in
			af_xdp/generic) ref=raw_generic; rn="raw generic" ;;
			af_xdp*) ref=raw_native; rn="raw native" ;;
			*) ref=raw_packet; rn="raw packet" ;;
			esac
			v=$(med "${res["vrdma_$k $s"]:-}")
			rv=$(med "${res["$ref $s"]:-}")
			echo "| vrdma --uplink $k | $s | $v | $(awk -v a="$v" -v b="$rv" -v n="$rn" 'BEGIN {
				if (b > 0) printf "%.2f x %s", a / b, n; else print "-" }') |"
		done
	done
fi

if [ -z "$only" ] || [ "$only" = roce ]; then
	command -v ib_write_bw >/dev/null || { echo "uplink: ib_write_bw missing (perftest)" >&2; exit 1; }
	port=$((20000 + RANDOM % 20000))
	echo
	echo "| RoCE over the uplink | size | MB/s | Mmsg/s |"
	echo "|---|---|---|---|"
	for k in $kinds; do
		daemons "$k" || continue
		for t in ib_write_bw ib_send_bw; do
			for s in 65536 64; do
				port=$((port + 1))
				log=$tmp/${k//\//-}.$t.$s
				timeout 90 "$bin/vrdma-run" --socket "$tmp/b.sock" -- $t -x 1 -F -s $s -D "$roce_sec" -p $port \
					>"$log.srv" 2>&1 &
				sp=$!
				for ((i = 0; i < 600; i++)); do
					ss -ltn 2>/dev/null | grep -q ":$port " && break
					sleep 0.05
				done
				timeout 90 "$bin/vrdma-run" --socket "$tmp/a.sock" -- $t -x 1 -F -s $s -D "$roce_sec" -p $port \
					127.0.0.1 >"$log" 2>&1
				wait $sp
				echo "| $k $t | $s | $(awk -v s=$s '$1 == s && NF >= 5 { print $4 " | " $5 }' "$log" | tail -n 1) |"
			done
		done
		undaemons
	done
	echo "(perftest: server on device B, client on device A: $bin/vrdma-run --socket SOCK -- ib_X_bw -x 1 -F -s SIZE -D $roce_sec)"
fi
