#!/usr/bin/env bash
# The AF_XDP uplink (src/port/afxdp.c) between two back-ends, each in a
# network namespace of its own, joined by a veth pair (no XDP driver support:
# libxdp falls back to generic mode). Namespaces, links and daemons are made
# here and always removed.
#
#   ns A: daemon A --af_xdp-- xa ==veth== xb --af_xdp-- daemon B :ns B
#
# 1. vrdma-netcat frames A -> B and B -> A, every size 60..1514, byte for
#    byte (windowed acks, so nothing may be lost); afterwards the uplink
#    counters (SIGUSR1 dumps) are exactly what was sent, none dropped, and
#    the kernel's veth counters agree.
# 2. Frames over the veth MTU (from a device with MTU 9000) are refused by
#    the uplink and counted as tx_dropped; none reaches the wire.
# 3. Daemon B is replaced by one with an AF_PACKET uplink: the two uplink
#    types exchange the same frames.
# 4. An uplink that cannot be opened (no such interface; no privilege) is a
#    clear error at start naming the alternative, not a crash.
# 5. The daemons stop cleanly on SIGTERM (exit 0: no sanitizer report).
# 6. Once the XDP program a --user daemon leaves behind is removed
#    (`ip link set dev IF xdp off`), a daemon configured by vrdma.conf
#    (`uplink = af_xdp:IF`) takes the interface again and frames cross.
# 7. An interface without native XDP (a Linux bridge) gets the generic mode.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/netns_lib.bash"

NC="$VRDMA_BUILD/bin/vrdma-netcat"
NS_A="vrdma-$$-xa"
NS_B="vrdma-$$-xb"
IF_A=xa
IF_B=xb
MAC_A=02:00:00:00:2a:01
MAC_B=02:00:00:00:2b:01
SA="$T_TMP/a.sock"
SA9="$T_TMP/a9.sock"
MAC_A9=02:00:00:00:2a:09
SB="$T_TMP/b.sock"

ns_require
for b in "$NS_DAEMON" "$NC"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done

if ns_add "$NS_A" && ns_add "$NS_B" && ns_veth "$NS_A" "$IF_A" "$NS_B" "$IF_B" 1500; then
	ok topology
else
	not_ok topology "cannot create the namespaces and the veth pair"
	t_done
fi

start_a() {
	nsd_start da "$NS_A" --device "socket=$SA,mac=$MAC_A,ip=10.78.0.1/24" \
		--device "socket=$SA9,mac=$MAC_A9,ip=10.78.0.9/24,mtu=9000" --uplink "af_xdp:$IF_A"
}
start_b() {
	nsd_start "$1" "$NS_B" --device "socket=$SB,mac=$MAC_B,ip=10.78.0.2/24" --uplink "$2"
}
if start_a && start_b db "af_xdp:$IF_B"; then
	ok daemons_started
else
	not_ok daemons_started "$(nsd_tail da; nsd_tail db)"
	t_done
fi
# xdp_on NS IF: an XDP program (libxdp's, for our socket) is on IF.
xdp_on() { ip -n "$1" link show dev "$2" | grep -q 'prog/xdp'; }
if xdp_on "$NS_A" "$IF_A" && xdp_on "$NS_B" "$IF_B"; then
	ok xdp_programs_attached
else
	not_ok xdp_programs_attached "$(ip -n "$NS_A" link show dev "$IF_A"; ip -n "$NS_B" link show dev "$IF_B")"
fi

# acks_for COUNT WINDOW: acknowledgements vrdma-netcat's receiver sends.
acks_for() { echo $(( ($1 + $2 / 2 - 1) / ($2 / 2) )); }

# xchg NAME D_TX SOCK_TX IF_TX NS_TX D_RX SOCK_RX IF_RX NS_RX DST COUNT SEED:
# frames from SOCK_TX to SOCK_RX, verified by the receiver; then the uplink
# and veth counters moved by exactly the frames and acks.
xchg() {
	local name=$1 dt=$2 st=$3 it=$4 nt=$5 dr=$6 sr=$7 ir=$8 nr=$9 dst=${10} count=${11} seed=${12}
	local win=64 ready="$T_TMP/$name.ready" rpid rc_s rc_r ot or acks errs=() k v
	local kt0 kr0 kt1 kr1
	acks=$(acks_for "$count" $win)
	nsd_stats "$dt" 1 && ot=$NSD_SNAP && nsd_stats "$dr" 1 && or=$NSD_SNAP ||
		{ not_ok "$name" "no counters"; return; }
	kt0=$(ns_ifstat "$nt" "$it" tx_packets); kr0=$(ns_ifstat "$nr" "$ir" rx_packets)
	rm -f "$ready"
	"$NC" --socket "$sr" --count "$count" --seed "$seed" --window $win --min 60 --max 1514 \
		--sweep --ready "$ready" recv >"$T_TMP/$name.recv" 2>&1 &
	rpid=$!
	if ! wait_cmd 20 test -e "$ready"; then
		kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
		not_ok "$name" "receiver did not come up: $(tr '\n' ' ' <"$T_TMP/$name.recv")"
		return
	fi
	"$NC" --socket "$st" --count "$count" --seed "$seed" --window $win --dst "$dst" \
		--min 60 --max 1514 --sweep send >"$T_TMP/$name.send" 2>&1
	rc_s=$?
	wait "$rpid"
	rc_r=$?
	if [ $rc_s -eq 0 ] && [ $rc_r -eq 0 ] && grep -q "received $count " "$T_TMP/$name.recv"; then
		ok "$name"
	else
		not_ok "$name" "send rc=$rc_s recv rc=$rc_r:" \
			"$(cat "$T_TMP/$name.send" "$T_TMP/$name.recv" | tr '\n' ' ')" "$(nsd_tail "$dt"; nsd_tail "$dr")"
		return
	fi
	nsd_stats "$dt" 1 && nsd_stats "$dr" 1 || { not_ok "${name}_counters" "no counters"; return; }
	v=$(delta "$ot" "$T_TMP/$dt.stats.${D_SNAP[$dt]}" stat_uplink "$it" tx)
	[ "$v" = "$count" ] || errs+=("$dt uplink tx +$v, want +$count")
	v=$(delta "$ot" "$T_TMP/$dt.stats.${D_SNAP[$dt]}" stat_uplink "$it" rx)
	[ "$v" = "$acks" ] || errs+=("$dt uplink rx +$v, want +$acks")
	v=$(delta "$or" "$T_TMP/$dr.stats.${D_SNAP[$dr]}" stat_uplink "$ir" rx)
	[ "$v" = "$count" ] || errs+=("$dr uplink rx +$v, want +$count")
	v=$(delta "$or" "$T_TMP/$dr.stats.${D_SNAP[$dr]}" stat_uplink "$ir" tx)
	[ "$v" = "$acks" ] || errs+=("$dr uplink tx +$v, want +$acks")
	for k in tx_dropped rx_errors; do
		v=$(delta "$ot" "$T_TMP/$dt.stats.${D_SNAP[$dt]}" stat_uplink "$it" $k)
		[ "$v" = 0 ] || errs+=("$dt uplink $k +$v")
		v=$(delta "$or" "$T_TMP/$dr.stats.${D_SNAP[$dr]}" stat_uplink "$ir" $k)
		[ "$v" = 0 ] || errs+=("$dr uplink $k +$v")
	done
	kt1=$(ns_ifstat "$nt" "$it" tx_packets); kr1=$(ns_ifstat "$nr" "$ir" rx_packets)
	[ $((kt1 - kt0)) = "$count" ] || errs+=("kernel $it tx_packets +$((kt1 - kt0)), want +$count")
	[ $((kr1 - kr0)) = "$count" ] || errs+=("kernel $ir rx_packets +$((kr1 - kr0)), want +$count")
	if [ ${#errs[@]} -eq 0 ]; then
		ok "${name}_counters"
	else
		not_ok "${name}_counters" "$(IFS=';'; echo "${errs[*]}")"
	fi
}

# ---- 1. AF_XDP on both sides --------------------------------------------------
xchg xdp_a_to_b da "$SA" "$IF_A" "$NS_A" db "$SB" "$IF_B" "$NS_B" "$MAC_B" 1455 301
xchg xdp_b_to_a db "$SB" "$IF_B" "$NS_B" da "$SA" "$IF_A" "$NS_A" "$MAC_A" 1455 302

# ---- 2. over the MTU: tx_dropped -------------------------------------------------
# The sender gets no acknowledgement (nothing arrives) and gives up; the four
# frames went to the uplink before it waited (window 128).
if nsd_stats da 1 && o1=$NSD_SNAP && nsd_stats db 1 && o2=$NSD_SNAP; then
	k0=$(ns_ifstat "$NS_A" "$IF_A" tx_packets)
	"$NC" --socket "$SA9" --count 4 --window 128 --dst "$MAC_B" --min 2014 --max 2014 \
		--timeout-ms 2000 send >"$T_TMP/big.send" 2>&1
	rc=$?
	# The daemon may still be handling the frames: wait for the count.
	dropped4() {
		nsd_stats da 1 && n1=$NSD_SNAP &&
		[ "$(delta "$o1" "$n1" stat_uplink "$IF_A" tx_dropped)" = 4 ]
	}
	wait_cmd 20 dropped4
	k1=$(ns_ifstat "$NS_A" "$IF_A" tx_packets)
	if nsd_stats da 1 && n1=$NSD_SNAP && nsd_stats db 1 && n2=$NSD_SNAP; then
		d=$(delta "$o1" "$n1" stat_uplink "$IF_A" tx_dropped)
		r=$(delta "$o2" "$n2" stat_uplink "$IF_B" rx)
		if [ $rc -ne 0 ] && [ "$d" = 4 ] && [ "$r" = 0 ] && [ "$k1" = "$k0" ]; then
			ok oversize_tx_dropped
		else
			not_ok oversize_tx_dropped "send rc=$rc tx_dropped +$d, B rx +$r, $IF_A tx_packets $k0 -> $k1"
		fi
	else
		not_ok oversize_tx_dropped "no counters"
	fi
else
	not_ok oversize_tx_dropped "no counters"
fi

# ---- 3. AF_XDP to AF_PACKET -----------------------------------------------------
nsd_stop db TERM
if [ "$D_LAST_RC" = 0 ]; then
	ok daemon_b_xdp_stopped
else
	not_ok daemon_b_xdp_stopped "exit status $D_LAST_RC" "$(nsd_tail db 30)"
fi
if start_b dp "af_packet:$IF_B"; then
	ok daemon_b_afpacket_started
	xchg xdp_to_afpacket da "$SA" "$IF_A" "$NS_A" dp "$SB" "$IF_B" "$NS_B" "$MAC_B" 800 303
	xchg afpacket_to_xdp dp "$SB" "$IF_B" "$NS_B" da "$SA" "$IF_A" "$NS_A" "$MAC_A" 800 304
else
	not_ok daemon_b_afpacket_started "$(nsd_tail dp)"
fi

# ---- 4. a refused uplink: clear error, clean exit ---------------------------------
ip netns exec "$NS_B" "$NS_DAEMON" -q "${T_DAEMON_PRIV[@]}" --device "socket=$T_TMP/c.sock" \
	--uplink "af_xdp:nosuch$$" >"$T_TMP/refused.log" 2>&1 </dev/null
rc=$?
if [ $rc = 1 ] && grep -q "af_xdp:nosuch$$" "$T_TMP/refused.log"; then
	ok refused_uplink_error
else
	not_ok refused_uplink_error "exit status $rc: $(tr '\n' ' ' <"$T_TMP/refused.log")"
fi
# An unknown attach mode: refused before anything is opened.
ip netns exec "$NS_B" "$NS_DAEMON" -q "${T_DAEMON_PRIV[@]}" --device "socket=$T_TMP/c.sock" \
	--uplink "af_xdp:$IF_B,mode=fast" >"$T_TMP/badmode.log" 2>&1 </dev/null
rc=$?
if [ $rc = 1 ] && grep -q "expected mode=generic or mode=native" "$T_TMP/badmode.log"; then
	ok refused_uplink_mode
else
	not_ok refused_uplink_mode "exit status $rc: $(tr '\n' ' ' <"$T_TMP/badmode.log")"
fi
# Without privilege (neither root nor capabilities) the XDP socket is refused.
ip netns exec "$NS_B" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$NS_DAEMON" -q --device "socket=$T_TMP/d.sock" --uplink "af_xdp:$IF_B" \
	>"$T_TMP/noperm.log" 2>&1 </dev/null
rc=$?
if [ $rc = 1 ] && grep -q "af_packet" "$T_TMP/noperm.log"; then
	ok unprivileged_uplink_error
else
	not_ok unprivileged_uplink_error "exit status $rc: $(tr '\n' ' ' <"$T_TMP/noperm.log")"
fi

# ---- 5. clean stop -------------------------------------------------------------
stop_clean() {
	nsd_stop "$1" TERM
	if [ "$D_LAST_RC" = 0 ]; then
		ok "${1}_clean_exit"
	else
		not_ok "${1}_clean_exit" "exit status $D_LAST_RC" "$(nsd_tail "$1" 30)"
	fi
}
stop_clean da

# ---- 6. from the config file, after removing the program left behind -----------
cat >"$T_TMP/vrdma.conf" <<CONF
[global]
socket-dir = $T_TMP
uplink = af_xdp:$IF_A,mode=generic

[device c]
socket = $SA
mac = $MAC_A
ip = 10.78.0.1/24
CONF
if ip -n "$NS_A" link set dev "$IF_A" xdp off && nsd_start dc "$NS_A" --config "$T_TMP/vrdma.conf"; then
	if xdp_on "$NS_A" "$IF_A"; then
		ok config_daemon_started
	else
		not_ok config_daemon_started "no XDP program on $IF_A"
	fi
	# mode=generic: attached in generic mode although veth has native XDP
	if ip -n "$NS_A" link show dev "$IF_A" | grep -q xdpgeneric; then
		ok forced_generic_mode
	else
		not_ok forced_generic_mode "$(ip -n "$NS_A" link show dev "$IF_A")"
	fi
	xchg config_to_afpacket dc "$SA" "$IF_A" "$NS_A" dp "$SB" "$IF_B" "$NS_B" "$MAC_B" 300 305
	stop_clean dc
else
	not_ok config_daemon_started "$(nsd_tail dc)"
fi
stop_clean dp

# ---- 7. no native XDP: generic mode ------------------------------------------------
if ip -n "$NS_B" link add xbr type bridge && ip -n "$NS_B" link set xbr up &&
   nsd_start dg "$NS_B" --device "socket=$T_TMP/g.sock" --uplink af_xdp:xbr; then
	if ip -n "$NS_B" link show dev xbr | grep -q xdpgeneric; then
		ok generic_mode
	else
		not_ok generic_mode "$(ip -n "$NS_B" link show dev xbr)"
	fi
	stop_clean dg
else
	not_ok generic_mode "$(nsd_tail dg)"
fi
t_done
