#!/usr/bin/env bash
# The standalone virtio-rdma device (model=virtio-rdma) in the daemon:
# - two virtio-rdma devices and a virtio-net RoCE device on one daemon;
# - a vhost-user front-end (test_virtio_rdma_dev --daemon) drives both
#   virtio-rdma devices: control queue, completion / send / receive rings,
#   an RC connection whose MACs the devices resolve themselves (pinned
#   local neighbours), SEND and READ compared byte for byte;
# - the daemon's counters (SIGUSR1) show the commands, and it exits cleanly;
# - libvrdma (vrdma-netcat) recognises the device's model;
# - vrdma-evil's vhost-user attacks and its bad-chain attacks on the control
#   queue (--model virtio-rdma) against a virtio-rdma device, then traffic
#   again;
# - the tenant attacks that apply to this device (port security and budgets,
#   as on the virtio-net device): ADD_GID of the virtio-net device's
#   addresses (gid_refused), QPs with maximal limits until state-mem=8M
#   refuses one (state_refused), a sparse-memfd address-space bomb beyond
#   mem= (mem_refused); each counted in the device's counters, the device
#   answering afterwards, traffic verified after all attacks;
# - a bad model value is refused at start.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
FE="$VRDMA_BUILD/tests/test_virtio_rdma_dev"
DAEMON_TMO=300

need setup "$DAEMON" "$FE" || t_done

if d_start d \
	--device "socket=$T_TMP/a.sock,model=virtio-rdma,mac=02:00:00:00:1a:01,ip=10.26.0.1/24,qps=4,cqs=2,state-mem=8M" \
	--device "socket=$T_TMP/b.sock,model=virtio-rdma,mac=02:00:00:00:1a:02,ip=10.26.0.2/24,qps=4,cqs=2" \
	--device "socket=$T_TMP/n.sock,mac=02:00:00:00:1a:03,ip=10.26.0.3/24"; then
	ok start
else
	not_ok start "$(tail -5 "$T_TMP/d.log")"
	t_done
fi

# libvrdma recognises the model (its verbs programs:
# tests/integration/virtio_rdma_verbs.sh): MAC from sys_image_guid, QP
# indexes 0..max_qp
NC="$VRDMA_BUILD/bin/vrdma-netcat"
out=$(timeout 60 "$NC" --socket "$T_TMP/a.sock" info 2>&1)
if grep -qx "model virtio-rdma" <<<"$out" && grep -qx "mac 02:00:00:00:1a:01" <<<"$out" &&
   grep -qx "max_rdma_qps 5" <<<"$out"; then
	ok libvrdma_model
else
	not_ok libvrdma_model "$out"
fi

out=$(timeout 120 "$FE" --daemon "$T_TMP/a.sock" 10.26.0.1 "$T_TMP/b.sock" 10.26.0.2 2>&1)
if grep -q '^ok test_virtio_rdma_dev.test_daemon_devices' <<<"$out"; then
	ok traffic
else
	not_ok traffic "$(grep -v '^vrdma' <<<"$out" | head -20)"
fi

# Hostile front-ends (tests/tools/vrdma-evil) against device a: every attack on
# the vhost-user layer (malformed messages, fds, memory tables, ring indexes
# and sizes, config space, features, truncated messages, connect floods),
# each on a new connection; the daemon must react as for the other device
# and survive. (The ring and tenant_* attacks of vrdma-evil speak virtio-net; the ring
# checks of this device are in tests/unit/test_virtio_rdma_dev.c.)
EVIL="$VRDMA_BUILD/tests/bin/vrdma-evil"
RINGS=11 # qps=4 cqs=2: 1 + 2 + 2 * 4
if [ -x "$EVIL" ]; then
	bad=""
	n=0
	for a in $("$EVIL" list | awk '{print $1}' |
		   grep -Ev '^(tx|rx|ctrl)\.|^ext_|^tenant_|^(vring_addr_outside|mem_remove_under_rings|fd_churn|mem_slots_exhaust|mem_shrink_sealable|mem_shrink_unsealable|status0_stops_rings)$'); do
		n=$((n + 1))
		v=$(timeout 120 "$EVIL" --socket "$T_TMP/a.sock" --rings $RINGS --timeout-ms 60000 "$a" 2>/dev/null |
		    grep '^verdict')
		[ "$v" = "verdict ok" ] || bad="$bad $a($v)"
		kill -0 "${D_PID[d]}" 2>/dev/null || { bad="$bad $a(daemon gone)"; break; }
	done
	if [ -z "$bad" ] && [ "$n" -gt 40 ]; then
		ok "evil_vhost_user_$n"
	else
		not_ok evil_vhost_user "$n attacks;$bad"
	fi
	# bad chains on its control queue (ring 0): error eventfd, NEEDS_RESET,
	# ring left alone, and a command answered after RESET_DEVICE
	bad=""
	n=0
	for a in $("$EVIL" list | awk '{print $1}' | grep '^ctrl\.'); do
		n=$((n + 1))
		v=$(timeout 120 "$EVIL" --socket "$T_TMP/a.sock" --model virtio-rdma --timeout-ms 60000 "$a" 2>/dev/null |
		    grep '^verdict')
		[ "$v" = "verdict ok" ] || bad="$bad $a($v)"
		kill -0 "${D_PID[d]}" 2>/dev/null || { bad="$bad $a(daemon gone)"; break; }
	done
	if [ -z "$bad" ] && [ "$n" -gt 10 ]; then
		ok "evil_ctrl_ring_$n"
	else
		not_ok evil_ctrl_ring "$n attacks;$bad"
	fi
	# tenants: port security and budgets of this device
	bad=""
	before=$(d_stats d)
	for a in tenant_rdmadev_gid tenant_rdmadev_qps tenant_mem_bomb; do
		v=$(timeout 300 "$EVIL" --socket "$T_TMP/a.sock" --model virtio-rdma --timeout-ms 60000 \
			--victim-mac 02:00:00:00:1a:03 --victim-ip 10.26.0.3 "$a" 2>/dev/null |
		    grep '^verdict')
		[ "$v" = "verdict ok" ] || bad="$bad $a($v)"
		kill -0 "${D_PID[d]}" 2>/dev/null || { bad="$bad $a(daemon gone)"; break; }
	done
	after=$(d_stats d)
	# a counter of device a in a dump
	rdev_counter() {
		awk -v sock="$T_TMP/a.sock:" -v key="$2" '
			/^virtio-rdma / { in_dev = ($2 == sock) ; next }
			/^[^ ]/ { in_dev = 0 }
			in_dev { for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }
		' <<<"$1"
	}
	for k in gid_refused state_refused mem_refused; do
		b=$(rdev_counter "$before" $k)
		n=$(rdev_counter "$after" $k)
		[ "${n:-0}" -gt "${b:-0}" ] || bad="$bad $k($b->$n)"
	done
	if [ -z "$bad" ]; then
		ok evil_tenant_attacks
	else
		not_ok evil_tenant_attacks "$bad"
	fi
	# still serving well-behaved drivers after all that
	out=$(timeout 120 "$FE" --daemon "$T_TMP/a.sock" 10.26.0.1 "$T_TMP/b.sock" 10.26.0.2 2>&1)
	if grep -q '^ok test_virtio_rdma_dev.test_daemon_devices' <<<"$out"; then
		ok traffic_after_attacks
	else
		not_ok traffic_after_attacks "$(grep -v '^vrdma' <<<"$out" | head -20)"
	fi
else
	not_ok evil "$EVIL not built (run make)"
fi

stats=$(d_stats d)
if grep -q "^virtio-rdma $T_TMP/a.sock: ctrl ok [1-9]" <<<"$stats" &&
   grep -q "^virtio-rdma $T_TMP/b.sock: ctrl ok [1-9]" <<<"$stats"; then
	ok stats
else
	not_ok stats "$(grep -A3 virtio-rdma <<<"$stats" | head -10)"
fi

d_stop d
check clean_exit test "$D_RC" -eq 0

if timeout 30 "$DAEMON" -q --device "socket=$T_TMP/x.sock,model=rdma" 2>"$T_TMP/x.log"; then
	not_ok bad_model "accepted model=rdma"
elif grep -q "model 'rdma'" "$T_TMP/x.log"; then
	ok bad_model
else
	not_ok bad_model "$(cat "$T_TMP/x.log")"
fi
t_done
