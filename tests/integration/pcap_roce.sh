#!/usr/bin/env bash
# --pcap on a running daemon: RoCE v2 traffic of unmodified verbs programs
# (RC pingpong with multi-packet messages, UD pingpong) is captured at the
# switch; every captured RoCE frame carries a valid ICRC by scapy's own RoCE
# code (scapy.contrib.roce.BTH) and tshark decodes the InfiniBand headers.
# The IP header: TTL 64 by default and the device's ttl= otherwise (the
# programs ask for hop limit 1), ECN ECT(0).
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
BIN=$VRDMA_BUILD/bin
DAEMON=$BIN/vhost-user-rdma
RUN=$BIN/vrdma-run
for t in "$DAEMON" "$RUN" "$VRDMA_BUILD/lib/libibverbs.so.1"; do
	if [ ! -e "$t" ]; then
		not_ok prerequisites "missing $t (build first: make)"
		t_done
	fi
done
for t in ibv_rc_pingpong ibv_ud_pingpong tshark ss; do
	if ! command -v "$t" >/dev/null; then
		not_ok prerequisites "missing $t (scripts/deps.sh test installs it)"
		t_done
	fi
done
if ! "$PY" -c 'from scapy.contrib.roce import BTH' 2>/dev/null; then
	not_ok prerequisites "$PY cannot import scapy.contrib.roce (python3-scapy)"
	t_done
fi
ok prerequisites

# Under ASan the verbs programs load our sanitized libibverbs: preload the
# runtimes (as two_backends.sh does).
asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"
# verbs: a verbs program through vrdma-run (with the sanitizer runtimes
# preloaded when our library is the ASan build; only for these programs).
verbs() {
	env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout -k 5 120 "$RUN" "$@"
}

CAP=$T_TMP/cap.pcap
"$DAEMON" -q "${T_DAEMON_PRIV[@]}" --pidfile "$T_TMP/pid" --pcap "$CAP" \
	--device "socket=$T_TMP/a.sock,mac=02:00:00:00:77:01,ip=10.77.7.1/24" \
	--device "socket=$T_TMP/b.sock,mac=02:00:00:00:77:02,ip=10.77.7.2/24,ttl=77" \
	2>"$T_TMP/daemon.err" &
DPID=$!
T_PIDS+=("$DPID")
if ! wait_for_file "$T_TMP/pid"; then
	not_ok daemon_started "$(cat "$T_TMP/daemon.err")"
	t_done
fi
ok daemon_started

port=$((30000 + $$ % 10000))
# pair NAME TOOL ARGS...: server on device b, client on device a.
pair() {
	local name=$1 tool=$2 srv rc1 rc2
	shift 2
	port=$((port + 1))
	verbs --socket "$T_TMP/b.sock" -- "$tool" -p "$port" "$@" >"$T_TMP/$name.srv" 2>&1 &
	srv=$!
	if ! wait_for listening "$port"; then
		not_ok "$name" "server did not listen: $(tail -3 "$T_TMP/$name.srv")"
		kill "$srv" 2>/dev/null
		return
	fi
	verbs --socket "$T_TMP/a.sock" -- "$tool" -p "$port" "$@" localhost >"$T_TMP/$name.cli" 2>&1
	rc1=$?
	wait "$srv"
	rc2=$?
	if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && grep -q "bytes in" "$T_TMP/$name.cli"; then
		ok "$name"
	else
		not_ok "$name" "client rc $rc1, server rc $rc2: $(tail -3 "$T_TMP/$name.cli" | tr '\n' ' ')"
	fi
}

# 4096-byte messages over a 1024-byte path MTU: SEND FIRST/MIDDLE/LAST + ACKs.
pair rc_pingpong ibv_rc_pingpong -g 1 -n 20 -s 4096 -m 1024
pair ud_pingpong ibv_ud_pingpong -g 1 -n 20 -s 512

kill -TERM "$DPID"
wait "$DPID"
rc=$?
T_PIDS=()
if [ $rc -eq 0 ] && [ -s "$CAP" ]; then
	ok daemon_exit_capture_written
else
	not_ok daemon_exit_capture_written "daemon rc $rc; $(tail -5 "$T_TMP/daemon.err")"
fi

"$PY" - "$T_PROG" "$CAP" <<'PYEOF' || T_FAILED=1
import sys
import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import rdpcap, raw, Ether, IP, UDP
from scapy.contrib.roce import BTH

prog, path = sys.argv[1], sys.argv[2]
frames = rdpcap(path)
roce = bad = badip = 0
ops = set()
ttl_of = {"02:00:00:00:77:01": 64, "02:00:00:00:77:02": 77}
for fr in frames:
    wire = raw(fr)
    p = Ether(wire)
    if UDP not in p or p[UDP].dport != 4791 or BTH not in p:
        continue
    roce += 1
    ops.add(p[BTH].opcode)
    if IP not in p or p[IP].ttl != ttl_of.get(p.src) or p[IP].tos & 3 != 2:
        badip += 1
        if badip < 5:
            print("#   frame %d from %s: ttl %s tos %s" % (roce, p.src,
                  p[IP].ttl if IP in p else "-", p[IP].tos if IP in p else "-"))
    q = Ether(wire)
    q[BTH].icrc = None
    if raw(q)[-4:] != wire[-4:]:
        bad += 1
        if bad < 5:
            print("#   frame %d: ICRC %s, scapy %s" % (roce, wire[-4:].hex(), raw(q)[-4:].hex()))

def result(name, good, why=""):
    print(("ok %s.%s" if good else "not ok %s.%s") % (prog, name))
    if not good and why:
        print("#   " + why)
    return good

good = result("roce_frames_captured", roce >= 100, "%d RoCE frames" % roce)
good &= result("every_icrc_valid_by_scapy", roce > 0 and bad == 0, "%d of %d bad" % (bad, roce))
good &= result("ttl_and_ect0", roce > 0 and badip == 0, "%d of %d bad" % (badip, roce))
# RC SEND FIRST (0x00), MIDDLE (0x01), LAST (0x02), ACK (0x11), UD SEND ONLY (0x64)
want = {0x00, 0x01, 0x02, 0x11, 0x64}
good &= result("opcodes_seen", want <= ops, "seen %s" % sorted(hex(o) for o in ops))
sys.exit(0 if good else 1)
PYEOF

# tshark decodes the InfiniBand BTH of the RoCE v2 frames.
tshark -r "$CAP" --disable-protocol rpcordma -Y "udp.dstport == 4791" \
	-T fields -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
	>"$T_TMP/tshark.txt" 2>"$T_TMP/tshark.err"
n=$(awk 'NF == 3' "$T_TMP/tshark.txt" | wc -l)
ops=$(awk 'NF == 3 { print $1 }' "$T_TMP/tshark.txt" | sort -u | tr '\n' ' ')
if [ "$n" -ge 100 ] && echo " $ops" | grep -q " 0 " && echo " $ops" | grep -q " 17 " &&
	echo " $ops" | grep -q " 100 "; then
	ok tshark_decodes_bth
else
	not_ok tshark_decodes_bth "$n decoded frames, opcodes: $ops; $(head -3 "$T_TMP/tshark.err")"
fi
t_done
