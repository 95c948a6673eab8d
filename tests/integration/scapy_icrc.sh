#!/usr/bin/env bash
# RoCE v2 frames built by vrdma (src/roce) checked by an independent
# implementation, scapy:
#   - IPv4: scapy.contrib.roce.BTH recomputes the ICRC (icrc=None, rebuild);
#   - IPv6 (scapy's BTH has no IPv6 ICRC): the ICRC recipe applied to the
#     headers as scapy decodes them, with zlib.crc32; the same recipe is also
#     run on the IPv4 frames and must agree with scapy's own result;
#   - UDP checksums, where the frame has one, recomputed by scapy;
#   - opcode, destination QP and PSN as scapy decodes them.
# Frames come from `test_roce_pkt --emit-pcap` (several opcodes, IPv4 and
# IPv6, VLAN, IPv4 options, padding).
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
GEN=$VRDMA_BUILD/tests/test_roce_pkt

if [ ! -x "$GEN" ]; then
	not_ok generate "missing $GEN (build first)"
	t_done
fi
if ! "$PY" -c 'from scapy.contrib.roce import BTH' 2>/dev/null; then
	not_ok icrc "$PY cannot import scapy.contrib.roce (python3-scapy: run scripts/deps.sh test)"
	t_done
fi
if ! "$GEN" --emit-pcap "$T_TMP/frames.pcap"; then
	not_ok generate "test_roce_pkt --emit-pcap failed"
	t_done
fi
ok generate

"$PY" - "$T_PROG" "$T_TMP/frames.pcap" <<'EOF' || T_FAILED=1
import struct
import sys
import zlib

import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import rdpcap, raw, Ether, IP, IPv6, UDP
from scapy.contrib.roce import BTH

prog, path = sys.argv[1], sys.argv[2]
meta = [l.split() for l in open(path + ".txt")]
frames = rdpcap(path)
failed = 0


def result(name, good, why=""):
    global failed
    if good:
        print("ok %s.%s" % (prog, name))
    else:
        failed = 1
        print("not ok %s.%s" % (prog, name))
        if why:
            print("#   " + why)


def recipe_icrc(pkt):
    """ICRC by the recipe: 8 x 0xFF, IP/UDP/BTH with variant fields set to
    ones, the rest up to the ICRC; CRC-32 stored little-endian."""
    if IP in pkt:
        ip = pkt[IP].copy()
        ip.tos = 0xFF
        ip.ttl = 0xFF
        ip.chksum = 0xFFFF
    else:
        ip = pkt[IPv6].copy()
        ip.tc = 0xFF
        ip.fl = 0xFFFFF
        ip.hlim = 0xFF
    ip[UDP].chksum = 0xFFFF
    ip[BTH].fecn = 1
    ip[BTH].becn = 1
    ip[BTH].resv6 = 0x3F
    data = raw(ip)
    ulen = ip[UDP].len
    end = len(data) - len(raw(ip[UDP])) + ulen   # end of the UDP datagram
    crc = zlib.crc32(b"\xff" * 8 + data[:end - 4]) & 0xFFFFFFFF
    return struct.pack("<I", crc)


if len(frames) != len(meta):
    result("count", False, "%d frames, %d descriptions" % (len(frames), len(meta)))

for fr, m in zip(frames, meta):
    name, opcode, opname, dqpn, psn, plen = m
    opcode, dqpn, psn, plen = int(opcode, 16), int(dqpn), int(psn), int(plen)
    wire = raw(fr)
    pkt = Ether(wire)
    if BTH not in pkt or UDP not in pkt:
        result(name, False, "scapy does not see UDP/BTH")
        continue
    bth = pkt[BTH]
    why = []
    if bth.opcode != opcode or bth.dqpn != dqpn or bth.psn != psn:
        why.append("BTH fields: opcode %#x dqpn %d psn %d" % (bth.opcode, bth.dqpn, bth.psn))
    if bth.version != 0:
        why.append("TVer %d" % bth.version)
    if bth.padcount != (-plen) % 4:
        why.append("pad count %d for payload %d" % (bth.padcount, plen))
    known = BTH().get_field("opcode").i2s.get(opcode)
    if known is not None and known != opname:
        why.append("scapy names opcode %s, vrdma %s" % (known, opname))
    if pkt[UDP].dport != 4791:
        why.append("UDP dport %d" % pkt[UDP].dport)
    icrc = wire[-4:]
    mine = recipe_icrc(pkt)
    if mine != icrc:
        why.append("ICRC %s, recipe %s" % (icrc.hex(), mine.hex()))
    if IP in pkt:
        if not pkt[IP].flags.DF:
            why.append("IPv4 DF not set")
        q = Ether(wire)
        q[BTH].icrc = None
        rebuilt = raw(q)
        if rebuilt[-4:] != icrc:
            why.append("ICRC %s, scapy BTH %s" % (icrc.hex(), rebuilt[-4:].hex()))
        q = Ether(wire)
        del q[IP].chksum
        if raw(q)[:len(wire)] != wire:
            why.append("IPv4 header checksum differs from scapy's")
    if pkt[UDP].chksum != 0:
        q = Ether(wire)
        del q[UDP].chksum
        good = raw(q)
        if good != wire:
            want = (q.__class__(good))[UDP].chksum
            why.append("UDP checksum %#06x, scapy %#06x" % (pkt[UDP].chksum, want))
    result(name, not why, "; ".join(why))

sys.exit(failed)
EOF
t_done
