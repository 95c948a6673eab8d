#!/usr/bin/env bash
# The standalone virtio-rdma device (model=virtio-rdma) in the daemon:
# - two virtio-rdma devices and a virtio-net RoCE device on one daemon;
# - a vhost-user front-end (test_virtio_rdma_dev --daemon) drives both
#   virtio-rdma devices: control queue, completion / send / receive rings,
#   an RC connection whose MACs the devices resolve by ARP, SEND and READ
#   compared byte for byte;
# - the daemon's counters (SIGUSR1) show the commands, and it exits cleanly;
# - libvrdma (vrdma-netcat) recognises the device and refuses it clearly;
# - a bad model value is refused at start.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/daemon_lib.bash"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
FE="$VRDMA_BUILD/tests/test_virtio_rdma_dev"
DAEMON_TMO=300

for f in "$DAEMON" "$FE"; do
	if [ ! -x "$f" ]; then
		skip all "$f not built"
		t_done
	fi
done

if d_start d \
	--device "socket=$T_TMP/a.sock,model=virtio-rdma,mac=02:00:00:00:1a:01,ip=10.26.0.1/24,qps=4,cqs=2" \
	--device "socket=$T_TMP/b.sock,model=virtio-rdma,mac=02:00:00:00:1a:02,ip=10.26.0.2/24,qps=4,cqs=2" \
	--device "socket=$T_TMP/n.sock,mac=02:00:00:00:1a:03,ip=10.26.0.3/24"; then
	ok start
else
	not_ok start "$(tail -5 "$T_TMP/d.log")"
	t_done
fi

# libvrdma recognises the model and refuses it with a clear error (it does
# not drive it yet) instead of driving it as a virtio-net device
NC="$VRDMA_BUILD/bin/vrdma-netcat"
if out=$(timeout 60 "$NC" --socket "$T_TMP/a.sock" info 2>&1); then
	not_ok libvrdma_refuses "opened: $out"
elif grep -q "virtio-rdma device (virtio id 42" <<<"$out"; then
	ok libvrdma_refuses
else
	not_ok libvrdma_refuses "$out"
fi

out=$(timeout 120 "$FE" --daemon "$T_TMP/a.sock" 10.26.0.1 "$T_TMP/b.sock" 10.26.0.2 2>&1)
if grep -q '^ok test_virtio_rdma_dev.test_daemon_devices' <<<"$out"; then
	ok traffic
else
	not_ok traffic "$(grep -v '^vrdma' <<<"$out" | head -20)"
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
