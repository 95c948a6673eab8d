#!/usr/bin/env bash
# Loss recovery against Linux rxe, the reference (not part of make test; needs
# root, QEMU and what tests/integration/interop_rxe.sh needs). Debian's kernel
# boots in QEMU with rdma_rxe on a vhost-user port of the daemon
# (tests/integration/rxe_lib.bash); perftest runs between rxe0 and a vrdma
# device, once on a lossless daemon and once on one with --fault drop=1 (every
# frame through the switch, both directions), and each case prints the ratio
# lossy / lossless:
#   vrdma->rxe   vrdma-run client (requester), rxe0 server (responder)
#   rxe->vrdma   rxe0 client (requester), vrdma-run server (responder)
# for ib_write_bw -s 65536 and ib_read_bw -s 2097152 (-D $LOSS_SEC). The
# rxe->vrdma rows are rxe's own recovery under the same injector: the
# reference the vrdma->rxe rows compare with. vrdma reading from rxe uses a
# 4.3 s transport timeout (-u 20, LOSS_RXE_READ_U): the TCG guest falls
# silent for hundreds of ms while it sends a 2 MiB READ's responses
# (docs/performance.md "Against Linux rxe").
#
#   bench/loss_rxe.sh [CASE...]   cases: write read (default both);
#                                 LOSS_SEC (10), LOSS_FAULT_SEED (1),
#                                 LOSS_RXE_READ_U (20)
#
# Raw logs go to bench/results/loss_rxe-<date>/.
. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/../tests/integration/netns_lib.bash"
. "$(dirname "$0")/../tests/integration/rxe_lib.bash"

sec=${LOSS_SEC:-10}
cases=${*:-write read}
seed=${LOSS_FAULT_SEED:-1}
read_u=${LOSS_RXE_READ_U:-20}
out=$VRDMA_TOP/bench/results/loss_rxe-$(date -u +%Y%m%d-%H%M%S)
RUN="$VRDMA_BUILD/bin/vrdma-run"
NS="vrdma-$$-lrxe"
TAP=lr-tap
SH="$T_TMP/h.sock"
SG="$T_TMP/g.sock"
MAC_H=02:00:00:00:81:01
MAC_G=02:00:00:00:81:02
IP_H=10.81.0.1
IP_G=10.81.0.2
IP_TAP=10.81.0.100
port=$((20000 + $$ % 20000))
mkdir -p "$out"

ns_require
need setup "$NS_DAEMON" "$RUN" "$RXE_QEMU" ib_write_bw ib_read_bw || exit 1
rxe_prepare || { echo "cannot build the rxe guest kernel / initramfs" >&2; exit 1; }
rxe_cleanup() { rxe_stop; ns_cleanup; }
trap rxe_cleanup EXIT
ns_add "$NS" || exit 1

# bw_of TEXT-FILE SIZE: perftest's average MB/s for SIZE.
bw_of() { awk -v s="$2" '$1 == s && NF >= 5 { print $4 }' "$1" | tail -1; }

# phase NAME [DAEMON-ARGS...]: daemon + guest up, every case run, both down.
phase() {
	local name=$1 gi; shift
	nsd_start "$name" "$NS" "$@" \
		--device "socket=$SH,mac=$MAC_H,ip=$IP_H/24" \
		--device "socket=$SG,mac=$MAC_G,roce=off,allow-ip=$IP_G/32" \
		--uplink "tap:$TAP" || { echo "daemon $name did not start" >&2; return 1; }
	ns_quiet "$NS" "$TAP"
	ip -n "$NS" addr add "$IP_TAP/24" dev "$TAP" 2>/dev/null
	ip -n "$NS" link set "$TAP" up
	rxe_boot "$SG" "$MAC_G" "$IP_G/24" >"$out/$name.boot.log" 2>&1 ||
		{ echo "guest did not boot (phase $name)" >&2; return 1; }
	gi=$(rxe_gid_index "$IP_G")
	for k in $cases; do
		case $k in
		write) run_case "$name" write ib_write_bw 65536 "$gi" ;;
		read) run_case "$name" read ib_read_bw 2097152 "$gi" ;;
		esac
	done
	rxe_stop
	nsd_stop "$name" TERM 15
	cp "$T_TMP/$name.log" "$out/$name.daemon.log" 2>/dev/null
}

# run_case PHASE KIND PROG SIZE GID: both directions, results to files.
run_case() {
	local ph=$1 k=$2 prog=$3 size=$4 gi=$5 args vargs spid
	args="-s $size -D $sec"
	vargs=$args
	[ "$k" = read ] && vargs="$args -u $read_u"
	# vrdma requester, rxe responder
	port=$((port + 1))
	rxe_cmd "( $prog -d rxe0 -x $gi -F $vargs -p $port >/tmp/s.log 2>&1 ) &" >/dev/null
	rxe_cmd "for i in \$(seq 1 200); do netstat -ltn | grep -q ':$port ' && exit 0; sleep 0.05; done; exit 1" >/dev/null
	ip netns exec "$NS" timeout $((sec + 60)) "$RUN" --socket "$SH" -- \
		"$prog" -d vrdma0 -x 1 -F $vargs -p "$port" "$IP_G" >"$out/$ph.$k.vrdma_rxe.log" 2>&1 </dev/null
	rxe_cmd "sleep 1; cat /tmp/s.log" >"$out/$ph.$k.vrdma_rxe.srv.log"
	# rxe requester, vrdma responder
	port=$((port + 1))
	ip netns exec "$NS" timeout $((sec + 60)) "$RUN" --socket "$SH" -- \
		"$prog" -d vrdma0 -x 1 -F $args -p "$port" >"$out/$ph.$k.rxe_vrdma.srv.log" 2>&1 </dev/null &
	spid=$!
	wait_cmd 20 ns_tcp_listening "$NS" "$port"
	RXE_CMD_TIMEOUT=$((sec + 60)) rxe_cmd "$prog -d rxe0 -x $gi -F $args -p $port $IP_TAP" \
		>"$out/$ph.$k.rxe_vrdma.log" 2>&1
	wait "$spid"
}

phase lossless
phase lossy --fault "drop=1,seed=$seed"
{
	for kind in $cases; do
		size=65536
		[ "$kind" = read ] && size=2097152
		for dir in vrdma_rxe rxe_vrdma; do
			a=$(bw_of "$out/lossless.$kind.$dir.log" "$size")
			b=$(bw_of "$out/lossy.$kind.$dir.log" "$size")
			printf '%-6s %-11s -s %-8s lossless %8s MB/s  lossy %8s MB/s  ratio %s\n' \
				"$kind" "${dir/_/->}" "$size" "${a:--}" "${b:--}" \
				"$(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.3fx", b / a; else print "-" }')"
		done
	done
	echo "lossy daemon: $(grep -h 'faults dropped' "$out/lossy.daemon.log")"
	grep -h 'roce tx' "$out/lossy.daemon.log" | sed 's/^/  /'
} | tee "$out/summary.txt"
