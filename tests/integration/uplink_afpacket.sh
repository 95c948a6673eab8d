#!/usr/bin/env bash
# Two AF_PACKET uplinks over a veth pair inside a network namespace this
# script creates (and always deletes): frames a switch sends out of one end
# arrive at the other (tests/unit/test_afpacket.c does the frame checks; here
# it runs inside the namespace with VRDMA_AFP_IF_A/B naming the pair).
. "$(dirname "$0")/../lib.sh"

NS="vrdma-afp-$$"
BIN="$VRDMA_BUILD/tests/test_afpacket"

if [ "$(id -u)" -ne 0 ]; then
	skip setup "needs root to create a network namespace"
	t_done
fi
need setup ip || t_done
if [ ! -x "$BIN" ]; then
	not_ok setup "$BIN not built"
	t_done
fi

ns_cleanup() {
	ip netns del "$NS" 2>/dev/null
	t_cleanup
}
trap ns_cleanup EXIT

if ! ip netns add "$NS"; then
	not_ok setup "ip netns add $NS failed"
	t_done
fi
ok netns_created
if ip -n "$NS" link add afpa mtu 9000 type veth peer name afpb mtu 9000 &&
   ip netns exec "$NS" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/afpa/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/afpb/disable_ipv6' &&
   ip -n "$NS" link set afpb up && ip -n "$NS" link set afpa up; then
	ok veth_created
else
	not_ok veth_created "cannot create the veth pair in $NS"
	t_done
fi

# The frame tests, inside the namespace, over our pair. Their ok/not ok
# lines are counted by tests/run.sh; the exit status is checked here too.
ip netns exec "$NS" env VRDMA_AFP_IF_A=afpa VRDMA_AFP_IF_B=afpb "$BIN" >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/out"
grep -q '^ok test_afpacket.frames_cross' "$T_TMP/out" || sed 's/^/#   /' "$T_TMP/err"
if [ $rc -eq 0 ] && grep -q '^ok test_afpacket.frames_cross' "$T_TMP/out"; then
	ok frames_cross_namespace
else
	not_ok frames_cross_namespace "test_afpacket exited with $rc"
fi

# The kernel saw the frames on the wire too (veth counters).
tx=$(ip netns exec "$NS" cat /sys/class/net/afpa/statistics/tx_packets 2>/dev/null || echo 0)
rx=$(ip netns exec "$NS" cat /sys/class/net/afpb/statistics/rx_packets 2>/dev/null || echo 0)
if [ "${tx:-0}" -gt 0 ] && [ "$tx" = "$rx" ]; then
	ok veth_counters
else
	not_ok veth_counters "afpa tx_packets=$tx afpb rx_packets=$rx"
fi

ip netns del "$NS"
if ip netns list | grep -qw "$NS"; then
	not_ok netns_deleted "$NS still exists"
else
	ok netns_deleted
fi
t_done
