#!/usr/bin/env bash
# RoCE v2 the way a real network sees it: two vhost-user-rdma back-ends, each
# in a network namespace of its own, joined by a veth pair through their
# AF_PACKET uplinks; daemon A captures its switch (--pcap).
#
#   ns A: daemon A --af_packet-- eth-a ==veth== eth-b --af_packet-- daemon B :ns B
#
# Cases (each with fresh daemons):
#   ipv6  devices with ip6=ADDR/PREFIX: GID 2 is that address;
#         ibv_rc_pingpong -g 2 (multi-packet messages) and ibv_ud_pingpong
#         -g 2 across the uplink; the peers find each other by neighbour
#         discovery (NS/NA in the capture).
#   ipv4  GID 1 (IPv4-mapped), the same programs.
#   vlan  both devices with vlan=100, over IPv4 (GID 1) and IPv6 (GID 2),
#         the programs with service level 5 (-l 5): every RoCE frame carries
#         the 802.1Q tag with PCP 5 (ARP / ND are tagged too, else the peers
#         would not find each other).
# Every case checks the capture with scapy: every RoCE frame has a valid
# ICRC, the right IP version, hop limit / TTL 64 (the programs ask for 1),
# ECN ECT(0); and the daemons' counters: no frame dropped for lack of a
# neighbour (neigh_dropped absent), no go-back-N rewind.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns_lib.bash"

RUN="$VRDMA_BUILD/bin/vrdma-run"
PY=/usr/bin/python3
NS_A="vrdma-$$-na"
NS_B="vrdma-$$-nb"
NS_C="vrdma-$$-nc"      # the verbs programs' TCP side channel
IF_A=rn-a
IF_B=rn-b
SA="$T_TMP/a.sock"
SB="$T_TMP/b.sock"

ns_require
for b in "$NS_DAEMON" "$RUN"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done
for t in ibv_rc_pingpong ibv_ud_pingpong; do
	if ! command -v "$t" >/dev/null; then
		not_ok setup "missing $t (scripts/deps.sh test installs it)"
		t_done
	fi
done
if ! "$PY" -c 'from scapy.contrib.roce import BTH' 2>/dev/null; then
	not_ok setup "$PY cannot import scapy.contrib.roce (python3-scapy)"
	t_done
fi
asan_preload "$VRDMA_BUILD/lib/libibverbs.so.1"

if ns_add "$NS_A" && ns_add "$NS_B" && ns_add "$NS_C" &&
   ns_veth "$NS_A" "$IF_A" "$NS_B" "$IF_B" 1500; then
	ok topology
else
	not_ok topology "cannot create the namespaces and the veth pair"
	t_done
fi

# vrun NAME SOCK CMD...: a verbs program on one device, in namespace C, at
# most 30 s, output in $T_TMP/NAME.log.
vrun() {
	local name=$1 sock=$2; shift 2
	ip netns exec "$NS_C" env ${PRELOAD:+LD_PRELOAD="$PRELOAD"} \
		ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1" \
		timeout 30 stdbuf -oL "$RUN" --socket "$sock" -- "$@" >"$T_TMP/$name.log" 2>&1 </dev/null
}

port=$((20000 + $$ % 20000))

# vpair NAME PROG ARGS...: PROG as a server on device b, client on device a.
vpair() {
	local name=$1 spid rc_s rc_c; shift
	port=$((port + 1))
	vrun "$name.srv" "$SB" "$@" -p "$port" &
	spid=$!
	if ! wait_cmd 20 ns_tcp_listening "$NS_C" "$port"; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		not_ok "$name" "server not listening: $(tr '\n' ' ' <"$T_TMP/$name.srv.log")"
		return
	fi
	vrun "$name.cli" "$SA" "$@" -p "$port" localhost
	rc_c=$?
	wait "$spid"
	rc_s=$?
	if [ $rc_s -eq 0 ] && [ $rc_c -eq 0 ] && grep -q "bytes in" "$T_TMP/$name.cli.log" &&
	   grep -q "bytes in" "$T_TMP/$name.srv.log"; then
		ok "$name"
	else
		not_ok "$name" "server rc=$rc_s client rc=$rc_c:" \
			"$(tail -3 "$T_TMP/$name.cli.log" "$T_TMP/$name.srv.log" | tr '\n' ' ')"
	fi
}

# check_pcap NAME PCAP IPVER VLAN: scapy checks of every RoCE frame.
check_pcap() {
	"$PY" - "$T_PROG.$1" "$2" "$3" "$4" <<'PYEOF' || T_FAILED=1
import sys, logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import rdpcap, raw, Ether, Dot1Q, IP, IPv6, UDP
from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6ND_NA
from scapy.contrib.roce import BTH

import struct, zlib

def icrc(wire):
    """The ICRC by the IBTA recipe (docs: wire format), written here again
    for IPv6, which scapy's RoCE code does not support."""
    l3 = 18 if wire[12:14] == b'\x81\x00' else 14
    if wire[l3] >> 4 == 6:
        ip = bytearray(wire[l3:l3 + 40])
        ip[0] |= 0x0f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
        l4 = l3 + 40
    else:
        ihl = (wire[l3] & 15) * 4
        ip = bytearray(wire[l3:l3 + ihl])
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
        l4 = l3 + ihl
    udp = bytearray(wire[l4:l4 + 8])
    udp[6:8] = b'\xff\xff'
    bth = bytearray(wire[l4 + 8:l4 + 20])
    bth[4] = 0xff
    buf = b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(bth) + wire[l4 + 20:-4]
    return struct.pack('<I', zlib.crc32(buf) & 0xffffffff)

name, path, ipver, vlan = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
roce = bad_icrc = bad_ip = bad_tag = nd = 0
why = []
for fr in rdpcap(path):
    wire = raw(fr)
    p = Ether(wire)
    if ICMPv6ND_NS in p or ICMPv6ND_NA in p:
        nd += 1
    if UDP not in p or p[UDP].dport != 4791 or BTH not in p:
        continue
    roce += 1
    if icrc(wire) != wire[-4:]:
        bad_icrc += 1
    elif IP in p:
        # IPv4: scapy's own ICRC must agree too
        q = Ether(wire)
        q[BTH].icrc = None
        if raw(q)[-4:] != wire[-4:]:
            bad_icrc += 1
    v = ipver or (6 if IPv6 in p else 4)
    l3 = p[IPv6] if v == 6 and IPv6 in p else p[IP] if v == 4 and IP in p else None
    if l3 is None:
        bad_ip += 1
        why.append("frame %d: not IPv%d" % (roce, v))
    else:
        hl = l3.hlim if v == 6 else l3.ttl
        tc = l3.tc if v == 6 else l3.tos
        if hl != 64 or tc & 3 != 2:
            bad_ip += 1
            why.append("frame %d: hop limit %d, tclass 0x%x" % (roce, hl, tc))
    if vlan:
        if Dot1Q not in p or p[Dot1Q].vlan != vlan or p[Dot1Q].prio != 5:
            bad_tag += 1
    elif Dot1Q in p:
        bad_tag += 1

def result(n, good, msg):
    print(("ok %s.%s" if good else "not ok %s.%s") % (name, n))
    if not good:
        print("#   " + msg)
    return good

g = result("roce_frames_captured", roce >= 20, "%d RoCE frames" % roce)
g &= result("icrc_valid", roce and not bad_icrc, "%d of %d bad" % (bad_icrc, roce))
g &= result("ip_header", roce and not bad_ip, "; ".join(why[:4]))
g &= result("vlan_tag", roce and not bad_tag, "%d of %d frames with the wrong tag" % (bad_tag, roce))
if ipver != 4:
    g &= result("neighbour_discovery", nd >= 2, "%d NS/NA frames" % nd)
sys.exit(0 if g else 1)
PYEOF
}

# counters NAME: neither daemon dropped a frame for lack of a neighbour nor
# rewound a connection.
counters() {
	local name=$1 d bad=""
	for d in da db; do
		if ! nsd_stats "$d" 1; then
			bad="$bad $d:no-stats"
			continue
		fi
		grep -q "neigh_dropped" "$NSD_SNAP" && bad="$bad $d:$(grep -o 'neigh_dropped [0-9]*' "$NSD_SNAP")"
		grep -q " rewinds " "$NSD_SNAP" && bad="$bad $d:$(grep -o ' rewinds [0-9]*' "$NSD_SNAP")"
		grep -q "neigh_resolved" "$NSD_SNAP" || bad="$bad $d:nothing-resolved"
	done
	if [ -z "$bad" ]; then
		ok "$name.no_neighbour_drops"
	else
		not_ok "$name.no_neighbour_drops" "$bad"
	fi
}

# run_case NAME GID IPVER VLAN OPTS_A OPTS_B
run_case() {
	local name=$1 gid=$2 ipver=$3 vlan=$4 oa=$5 ob=$6 cap="$T_TMP/$1.pcap"
	if nsd_start da "$NS_A" --pcap "$cap" --device "socket=$SA,$oa" --uplink "af_packet:$IF_A" &&
	   nsd_start db "$NS_B" --device "socket=$SB,$ob" --uplink "af_packet:$IF_B"; then
		ok "$name.daemons_started"
	else
		not_ok "$name.daemons_started" "$(nsd_tail da; nsd_tail db)"
		nsd_stop da TERM; nsd_stop db TERM
		return
	fi
	for g in $gid; do
		# shellcheck disable=SC2086
		vpair "$name.rc_pingpong_g$g" ibv_rc_pingpong -d vrdma0 -g "$g" -n 20 -s 8192 -m 1024 $PP_ARGS
		# shellcheck disable=SC2086
		vpair "$name.ud_pingpong_g$g" ibv_ud_pingpong -d vrdma0 -g "$g" -n 20 -s 512 $PP_ARGS
	done
	counters "$name"
	nsd_stop da TERM
	nsd_stop db TERM
	if [ -s "$cap" ]; then
		check_pcap "$name" "$cap" "$ipver" "$vlan"
	else
		not_ok "$name.capture" "no capture written"
	fi
}

PP_ARGS=""
run_case ipv6 2 6 0 \
	"mac=02:00:00:00:6a:01,ip=10.79.0.1/24,ip6=fd00:79::1/64" \
	"mac=02:00:00:00:6b:01,ip=10.79.0.2/24,ip6=fd00:79::2/64"
run_case ipv4 1 4 0 \
	"mac=02:00:00:00:6a:01,ip=10.79.0.1/24" \
	"mac=02:00:00:00:6b:01,ip=10.79.0.2/24"
PP_ARGS="-l 5"    # service level 5: 802.1Q PCP 5
run_case vlan "1 2" 0 100 \
	"mac=02:00:00:00:6a:01,ip=10.79.0.1/24,ip6=fd00:79::1/64,vlan=100" \
	"mac=02:00:00:00:6b:01,ip=10.79.0.2/24,ip6=fd00:79::2/64,vlan=100"
t_done
