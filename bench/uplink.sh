#!/usr/bin/env bash
# Uplink frame rate against the raw sockets on the same veth, ratios from one
# run.
#
#   ns A: [sender] -- XA ==veth== XB -- [receiver] :ns B
#
# One veth pair for the raw references and one per uplink kind, all between
# the same two namespaces; the daemons stay up, so raw and vrdma runs of one
# size follow each other directly.
#
# Raw references (bench/afxdp_raw.c): an AF_XDP socket (copy mode) on XA
# sends N frames of SIZE bytes as fast as it can, one on XB counts them;
# generic XDP, native XDP (veth has it), and AF_PACKET (sendmmsg/recvmmsg).
# vrdma: two daemons per kind, one per namespace, each with --uplink
# af_xdp:IF,mode=generic (then mode=native) or af_packet:IF;
# bench/uplink_frames.c pushes the same N frames through device A's
# virtio-net transmit queue (vrdma_net_send_burst) and counts them on device
# B's receive queue. Metrics: frames received per second (first to last
# frame), and the CPU time all processes of the case used per frame received
# (senders and receivers from their own getrusage, daemons from /proc): on a
# shared machine the rate follows the load of others, the CPU cost much
# less.
# Each round runs every case once, per size raw then vrdma; reported: the
# medians over ROUNDS rounds and the medians of the per-round ratios
# against raw of the same mode (goal >= 0.8 for AF_XDP generic).
# Then RoCE over each uplink: ib_write_bw and ib_send_bw -x 1 -F at 64 KiB
# and 64 B between the two daemons' devices (the verbs programs run in our
# namespace: the daemons' sockets are files, perftest's side channel is
# 127.0.0.1), with the sending daemon's retransmits.
#
# usage: bench/uplink.sh [N] [ROUNDS] [--only frames|roce]   (300000, 5)
# environment: UPLINK_SIZES ("60 1514"),
# UPLINK_KINDS ("af_xdp/generic af_xdp/native af_packet"; KIND@DAEMON runs
# another daemon binary, e.g. "af_xdp/generic@/tmp/before af_xdp/generic"
# compares two builds in alternating runs),
# UPLINK_ROCE_SEC (5), UPLINK_DAEMON_OPTS (extra daemon options, e.g.
# "--poll-us 50").
# Needs root, libxdp-dev/libbpf-dev, perftest (scripts/deps.sh test), a build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
n=${1:-300000}
rounds=${2:-5}
only=${4:-}
[ "${3:-}" = --only ] || only=
sizes=${UPLINK_SIZES:-60 1514}
kinds=(${UPLINK_KINDS:-af_xdp/generic af_xdp/native af_packet})
roce_sec=${UPLINK_ROCE_SEC:-5}
dopts=${UPLINK_DAEMON_OPTS:-}
[ "$(id -u)" = 0 ] || { echo "uplink: needs root (namespaces, XDP)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vrdma-uplink.XXXXXX)
na=vrdma-$$-ua
nb=vrdma-$$-ub
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

# Pair names: raw ur$$a/ur$$b, kind i u$i$$a/u$i$$b.
ifa() { echo "u$1$$a"; }
ifb() { echo "u$1$$b"; }
ip netns add "$na" && ip netns add "$nb" || exit 1
ip -n "$na" link set lo up
ip -n "$nb" link set lo up
for p in r $(seq 0 $((${#kinds[@]} - 1))); do
	a=$(ifa "$p") b=$(ifb "$p")
	ip link add "$a" mtu 1500 netns "$na" type veth peer name "$b" mtu 1500 netns "$nb" || exit 1
	ip netns exec "$na" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$a/disable_ipv6"
	ip netns exec "$nb" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$b/disable_ipv6"
	ip -n "$na" link set "$a" up
	ip -n "$nb" link set "$b" up
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
# sender; prints "rx_fps tx_fps rx_frames rx_cpu_seconds tx_cpu_seconds"
# ("0 0 0 0 0" if the receiver failed).
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
		wait $rp
		echo "0 0 0 0 0"
		return
	fi
	timeout 120 "${txc[@]}" -n "$n" >"$tmp/$name.tx" 2>&1
	wait $rp
	echo "$(key "$tmp/$name.rx" rx_fps) $(key "$tmp/$name.tx" tx_fps) $(key "$tmp/$name.rx" rx_frames)" \
		"$(key "$tmp/$name.rx" rx_cpu_seconds) $(key "$tmp/$name.tx" tx_cpu_seconds)"
}

# raw_xfer MODE SIZE NAME: one raw run on the raw pair (a bind just after
# the previous socket of the interface closed may be refused: retried).
raw_xfer() {
	local t out
	for t in 1 2 3 4 5; do
		for x in xdpgeneric xdpdrv; do
			ip -n "$na" link set dev "$(ifa r)" $x off 2>/dev/null
			ip -n "$nb" link set dev "$(ifb r)" $x off 2>/dev/null
		done
		out=$(xfer "$3" ip netns exec "$nb" "$raw" rx -i "$(ifb r)" -m "$1" -- \
			ip netns exec "$na" "$raw" tx -i "$(ifa r)" -m "$1" -s "$2")
		[ "${out%% *}" != 0 ] && break
		sleep 1
	done
	echo "$out"
}

# start_daemons I: the two daemons of kind I (sockets a$I.sock, b$I.sock).
declare -A dpid=()
start_daemons() {
	local i=$1 spec=${kinds[$1]%%@*} daemon=$bin/vhost-user-rdma k mode= x
	[ "$spec" = "${kinds[$i]}" ] || daemon=${kinds[$i]#*@}
	k=${spec%%/*}
	[ "$spec" = "$k" ] || mode=${spec#*/}
	for x in a b; do
		local ns=$na ifn mac=$mac_a ip=10.79.0.1/24
		[ $x = b ] && { ns=$nb; mac=$mac_b; ip=10.79.0.2/24; }
		ifn=$(if$x "$i")
		rm -f "$tmp/d$x$i.pid"
		ip netns exec "$ns" "$daemon" -q --stats \
			--pidfile "$tmp/d$x$i.pid" $dopts --device "socket=$tmp/$x$i.sock,mac=$mac,ip=$ip" \
			--uplink "$k:$ifn${mode:+,mode=$mode}" >"$tmp/d$x$i.log" 2>&1 </dev/null &
		dpid[$x$i]=$!
		pids+=($!)
		wait_file "$tmp/d$x$i.pid" $! || {
			echo "uplink: daemon $x for ${kinds[$i]} did not start:" >&2
			tail -n 5 "$tmp/d$x$i.log" >&2
			return 1
		}
	done
}

# retx X I: retransmits daemon X of kind I counted so far (SIGUSR1 dump).
retx() {
	local l=$tmp/d$1$2.log n0 n
	n0=$(grep -c '^faults' "$l")
	kill -USR1 "${dpid[$1$2]}" 2>/dev/null || { echo 0; return; }
	for _ in $(seq 50); do
		n=$(grep -c '^faults' "$l")
		[ "$n" -gt "$n0" ] && break
		sleep 0.1
	done
	awk '/^device / { r = 0 } { for (i = 1; i < NF; i++) if ($i == "retransmits") r += $(i + 1) }
	     END { print r + 0 }' "$l"
}

# ticks I: CPU clock ticks (user + system) both daemons of kind I used so far.
ticks() {
	cat "/proc/${dpid[a$1]}/stat" "/proc/${dpid[b$1]}/stat" 2>/dev/null |
		sed 's/.*) //' | awk '{ t += $12 + $13 } END { print t + 0 }'
}
hz=$(getconf CLK_TCK)
# us_per_frame FRAMES CPU_SECONDS...: CPU microseconds per frame received.
us_per_frame() {
	local f=$1
	shift
	echo "$@" | awk -v f="$f" '{ for (i = 1; i <= NF; i++) c += $i }
		END { if (f > 0) printf "%.3f", c * 1e6 / f; else print 0 }'
}

# med "V1 V2 ...": the median.
med() {
	echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
		END { if (!NR) print 0; else if (NR % 2) print v[(NR + 1) / 2];
		      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

up=()
for i in "${!kinds[@]}"; do
	start_daemons "$i" && up+=("$i")
	case ${kinds[$i]} in
	af_xdp*) echo "daemons ${kinds[$i]}: $(ip -n "$nb" link show dev "$(ifb "$i")" | grep -o ' xdp[a-z]* ' | head -n 1)" ;;
	esac
done

declare -A res=() ratio=() cost=() cratio=()   # "case size" -> values of every round
echo "uplink: $n frames per run, $rounds rounds, sizes $sizes, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$only" ] || [ "$only" = frames ]; then
	for ((r = 0; r < rounds; r++)); do
		for s in $sizes; do
			for i in "${up[@]}"; do
				k=${kinds[$i]}
				case ${k%%@*} in
				af_xdp/native) m=native ;;
				af_xdp*) m=generic ;;
				*) m=packet ;;
				esac
				set -- $(raw_xfer "$m" "$s" "raw-$m-$s-$r")
				rv=$1
				rc=$(us_per_frame "$3" "$4" "$5")
				[ "$1" = 0 ] || { res["raw $m $s"]+="$1 "; cost["raw $m $s"]+="$rc "; }
				echo "round $r $s B raw $m: rx $1 fps (tx $2 fps, received $3 of $n), $rc us CPU/frame"
				t0=$(ticks "$i")
				set -- $(xfer "vrdma-$i-$s-$r" "$frames" rx --socket "$tmp/b$i.sock" -- \
					"$frames" tx --socket "$tmp/a$i.sock" --dst "$mac_b" -s "$s")
				t1=$(ticks "$i")
				vc=$(us_per_frame "$3" "$4" "$5" "$(awk -v t=$((t1 - t0)) -v h="$hz" 'BEGIN { print t / h }')")
				if [ "$1" != 0 ]; then
					res["vrdma $k $s"]+="$1 "
					cost["vrdma $k $s"]+="$vc "
					if [ "$rv" != 0 ]; then
						ratio["$k $s"]+="$(awk -v a="$1" -v b="$rv" 'BEGIN { printf "%.3f", a / b }') "
						cratio["$k $s"]+="$(awk -v a="$vc" -v b="$rc" 'BEGIN { printf "%.3f", b / a }') "
					fi
				fi
				echo "round $r $s B vrdma $k: rx $1 fps (tx $2 fps, received $3 of $n), $vc us CPU/frame" \
					"(clients $4 + $5 s, daemons $((t1 - t0)) ticks)"
			done
		done
	done
	echo
	echo "rate: frames received per second; CPU: CPU time of every process of the case"
	echo "(senders, receivers, daemons) per frame received; ratios: per round, vrdma / raw"
	echo "for the rate, raw / vrdma for the CPU (1 = as cheap as the raw sockets)."
	echo
	echo "| size | case | median rate (frames/s) | median CPU us/frame | reference | rate ratio: median (rounds) | CPU ratio: median (rounds) |"
	echo "|---|---|---|---|---|---|---|"
	for s in $sizes; do
		for i in "${up[@]}"; do
			k=${kinds[$i]}
			case ${k%%@*} in
			af_xdp/native) m=native ;;
			af_xdp*) m=generic ;;
			*) m=packet ;;
			esac
			echo "| $s | raw $m | $(med "${res["raw $m $s"]:-}") | $(med "${cost["raw $m $s"]:-}") | | | |"
			echo "| $s | vrdma --uplink $k | $(med "${res["vrdma $k $s"]:-}") |" \
				"$(med "${cost["vrdma $k $s"]:-}") | raw $m |" \
				"$(med "${ratio["$k $s"]:-}") (${ratio["$k $s"]:-none}) |" \
				"$(med "${cratio["$k $s"]:-}") (${cratio["$k $s"]:-none}) |"
		done
	done
fi

if [ -z "$only" ] || [ "$only" = roce ]; then
	command -v ib_write_bw >/dev/null || { echo "uplink: ib_write_bw missing (perftest)" >&2; exit 1; }
	port=$((20000 + RANDOM % 20000))
	echo
	echo "| RoCE over the uplink | size | MB/s | Mmsg/s | retransmits (A) |"
	echo "|---|---|---|---|---|"
	for i in "${up[@]}"; do
		k=${kinds[$i]}
		for t in ib_write_bw ib_send_bw; do
			for s in 65536 64; do
				port=$((port + 1))
				log=$tmp/roce-$i.$t.$s
				r0=$(retx a "$i")
				timeout 90 "$bin/vrdma-run" --socket "$tmp/b$i.sock" -- $t -x 1 -F -s $s -D "$roce_sec" \
					-p $port >"$log.srv" 2>&1 &
				sp=$!
				for ((w = 0; w < 600; w++)); do
					ss -ltn 2>/dev/null | grep -q ":$port " && break
					sleep 0.05
				done
				timeout 90 "$bin/vrdma-run" --socket "$tmp/a$i.sock" -- $t -x 1 -F -s $s -D "$roce_sec" \
					-p $port 127.0.0.1 >"$log" 2>&1
				wait $sp
				r1=$(retx a "$i")
				echo "| $k $t | $s | $(awk -v s=$s '$1 == s && NF >= 5 { print $4 " | " $5 }' "$log" |
					tail -n 1) | $((r1 - r0)) |"
			done
		done
	done
	echo "(perftest: server on device B, client on device A:" \
		"vrdma-run --socket SOCK -- ib_X_bw -x 1 -F -s SIZE -D $roce_sec [-p PORT 127.0.0.1])"
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
