#!/usr/bin/env bash
# The installed product, used only from its install tree (nothing from the
# build tree at run time):
#  1. make install into a DESTDIR (PREFIX=/usr) puts the daemon in sbin, the
#     tools in bin, libvrdma.so.1.0.0 with its soname links, headers and
#     vrdma.pc (a program compiles and links with pkg-config's flags), the
#     drop-in libibverbs.so.1, the allocator and the device files library in
#     lib/vrdma, the unit, the
#     config and the man pages; make uninstall removes them again.
#  2. Every installed man page renders with `man --warnings -l` without a
#     warning; the systemd unit passes `systemd-analyze verify`.
#  3. The installed daemon starts from a config file (two devices, sockets
#     and control socket in one directory, socket-mode applied); a broken
#     config is refused with its line number.
#  4. ib_write_bw runs between the two devices (the client's vrdma-run finds
#     its device through VRDMA_SOCKET_DIR); meanwhile vrdmactl shows the QPs
#     (RTS, PSNs) with their counters moving, the device's open contexts and
#     the context of each QP, and its JSON (res, stat, dev) passes
#     python3 -m json.tool.
#  5. Hot-plug: two devices added with vrdmactl serve ibv_rc_pingpong -c
#     while ib_write_bw goes on; its QP keeps moving and stays RTS after the
#     pingpong and after the new devices are removed again (sockets gone),
#     and a capture started on one device at run time records frames; a
#     device removed while a context is open on it goes cleanly.
#  6. SIGHUP (systemctl reload) re-reads the edited config: a device added,
#     the others untouched.
. "$(dirname "$0")/../lib.sh"

ROOT="$T_TMP/root"
RUNDIR="$T_TMP/run"
STEP_TMO=150
LIB="$VRDMA_BUILD/lib/libibverbs.so.1"

asan_preload "$LIB"
VENV=(env LD_PRELOAD="$PRELOAD"
	ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1")

ALL_TESTS="install_tree pkgconfig man_pages service_unit uninstall config_error daemon_from_config
	socket_mode control_access watch perftest_qp_shown contexts_shown counters_moving json_valid
	hotplug_pingpong
	traffic_uninterrupted capture unplug_open_context hot_unplug reload perftest_done daemon_clean_exit"
for c in ib_write_bw ibv_rc_pingpong man python3 pkg-config ss systemd-analyze setpriv; do
	if ! command -v "$c" >/dev/null; then
		for t in $ALL_TESTS; do not_ok "$t" "$c not installed (scripts/deps.sh test)"; done
		t_done
	fi
done

# ---- 1. install ----------------------------------------------------------------
if ! make -s -C "$VRDMA_TOP" install NO_BUILD=1 BUILD="$VRDMA_BUILD" PREFIX=/usr \
	DESTDIR="$ROOT" >"$T_TMP/install.log" 2>&1; then
	not_ok install_tree "make install failed: $(tail -5 "$T_TMP/install.log" | tr '\n' ' ')"
	t_done
fi
missing=""
for f in usr/sbin/vhost-user-rdma usr/bin/vrdma-run usr/bin/vrdmactl usr/bin/vrdma-netcat \
	usr/lib/libvrdma.so.1.0.0 usr/lib/libvrdma.so.1 usr/lib/libvrdma.so \
	usr/include/vrdma/vrdma.h usr/lib/pkgconfig/vrdma.pc usr/lib/vrdma/libibverbs.so.1 \
	usr/lib/vrdma/libvrdma-shmalloc.so usr/lib/vrdma/libvrdma-devfiles.so \
	usr/lib/systemd/system/vhost-user-rdma.service \
	etc/vrdma/vrdma.conf usr/share/man/man8/vhost-user-rdma.8 usr/share/man/man8/vrdmactl.8 \
	usr/share/man/man1/vrdma-run.1 usr/share/man/man5/vrdma.conf.5; do
	[ -e "$ROOT/$f" ] || missing="$missing $f"
done
soname=$(objdump -p "$ROOT/usr/lib/libvrdma.so.1.0.0" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
if [ -z "$missing" ] && [ "$soname" = libvrdma.so.1 ] &&
   [ "$(readlink "$ROOT/usr/lib/libvrdma.so")" = libvrdma.so.1 ] &&
   ! [ -e "$ROOT/usr/lib/libibverbs.so.1" ] && ! [ -e "$ROOT/usr/bin/vrdma-rdmatest" ]; then
	ok install_tree
else
	not_ok install_tree "missing:$missing soname '$soname'"
fi

# A program built against the installed headers and library.
cat >"$T_TMP/prog.c" <<'EOF'
#include <vrdma/vrdma.h>
int main(void)
{
	int (*volatile f)(const struct vrdma_dev *) = vrdma_dev_event_fd;

	return f ? 0 : 1;
}
EOF
PKGENV=(env PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$ROOT/usr/lib/pkgconfig"
	PKG_CONFIG_SYSROOT_DIR="$ROOT" PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1)
if ver=$("${PKGENV[@]}" pkg-config --modversion vrdma) && [ -n "$ver" ] &&
   gcc -o "$T_TMP/prog" "$T_TMP/prog.c" $("${PKGENV[@]}" pkg-config --cflags --libs vrdma) \
	>"$T_TMP/cc.log" 2>&1 &&
   objdump -p "$T_TMP/prog" | grep -q 'NEEDED *libvrdma.so.1'; then
	ok pkgconfig
	echo "# vrdma.pc version $ver"
else
	not_ok pkgconfig "version '$ver': $(cat "$T_TMP/cc.log" | tr '\n' ' ')"
fi

# ---- 2. man pages --------------------------------------------------------------
bad=""
n=0
for m in "$ROOT"/usr/share/man/man*/*; do
	n=$((n + 1))
	w=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
	[ -z "$w" ] || bad="$bad ${m##*/}: $w;"
	MANWIDTH=80 man -l "$m" 2>/dev/null | grep -q . || bad="$bad ${m##*/}: empty;"
done
if [ -z "$bad" ] && [ "$n" -ge 5 ]; then
	ok man_pages
	echo "# $n man pages render without warnings"
else
	not_ok man_pages "$n pages:$bad"
fi

# The unit passes systemd's checks (its binary taken from the install tree).
unit="$ROOT/usr/lib/systemd/system/vhost-user-rdma.service"
sed "s|=/usr/sbin/|=$ROOT/usr/sbin/|" "$unit" >"$T_TMP/vhost-user-rdma.service"
if grep -q '^ExecStart=/usr/sbin/vhost-user-rdma --config /etc/vrdma/vrdma.conf$' "$unit" &&
   grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit" &&
   grep -q '^RuntimeDirectory=vrdma$' "$unit" &&
   systemd-analyze verify --man=no "$T_TMP/vhost-user-rdma.service" >"$T_TMP/unit.log" 2>&1; then
	ok service_unit
else
	not_ok service_unit "$(cat "$T_TMP/unit.log" | tr '\n' ' ')"
fi

# uninstall from a second tree (the first one is used below)
if make -s -C "$VRDMA_TOP" install NO_BUILD=1 BUILD="$VRDMA_BUILD" PREFIX=/usr \
	DESTDIR="$T_TMP/root2" >/dev/null 2>&1 &&
   make -s -C "$VRDMA_TOP" uninstall PREFIX=/usr DESTDIR="$T_TMP/root2" >/dev/null 2>&1 &&
   [ -z "$(find "$T_TMP/root2" -type f -o -type l)" ]; then
	ok uninstall
else
	not_ok uninstall "left: $(find "$T_TMP/root2" -type f -o -type l | tr '\n' ' ')"
fi

# ---- 3. the daemon from a config file --------------------------------------------
DAEMON="$ROOT/usr/sbin/vhost-user-rdma"
RUN="$ROOT/usr/bin/vrdma-run"
CTL="$ROOT/usr/bin/vrdmactl"
CONF="$ROOT/etc/vrdma/vrdma.conf"
mkdir -p "$RUNDIR"
cat >"$CONF" <<EOF
[global]
socket-dir = $RUNDIR
socket-mode = 0660
socket-group = nogroup
poll-us = 0

[device a]
ip = 10.63.$(( $$ % 200 )).1/24
mac = 02:63:00:00:00:0a

[device b]
socket = b.sock
ip = 10.63.$(( $$ % 200 )).2/24
mac = 02:63:00:00:00:0b
EOF
printf '[global]\nsocket-dir = %s\n\n[device x]\nmtu = 99999\n' "$RUNDIR" >"$T_TMP/bad.conf"
out=$("$DAEMON" --config "$T_TMP/bad.conf" 2>&1)
rc=$?
if [ $rc = 2 ] && [[ $out == *"line 5: mtu '99999'"* ]]; then
	ok config_error
else
	not_ok config_error "rc=$rc: $out"
fi

timeout -k 5 850 "$DAEMON" --config "$CONF" --pidfile "$T_TMP/d.pid" --stats \
	>"$T_TMP/daemon.log" 2>&1 </dev/null &
DTPID=$!
T_PIDS+=($DTPID)
if wait_for_file "$T_TMP/d.pid" 30 && [ -S "$RUNDIR/a.sock" ] && [ -S "$RUNDIR/b.sock" ] &&
   [ -S "$RUNDIR/control" ]; then
	ok daemon_from_config
else
	not_ok daemon_from_config "$(tail -5 "$T_TMP/daemon.log" | tr '\n' ' ')"
	t_done
fi
DPID=$(cat "$T_TMP/d.pid")
ctl() { timeout 30 "$CTL" -s "$RUNDIR/control" "$@"; }
if [ "$(stat -c %a:%G "$RUNDIR/a.sock")" = 660:nogroup ] &&
   [ "$(stat -c %a:%G "$RUNDIR/control")" = 660:nogroup ]; then
	ok socket_mode
else
	not_ok socket_mode "$(stat -c '%n %a %G' "$RUNDIR"/*)"
fi
# The socket group may look but not change; others cannot connect.
chmod 711 "$T_TMP" "$RUNDIR"
as_user() { setpriv --reuid=nobody --regid="$1" --clear-groups -- "${@:2}"; }
as_user nogroup "$CTL" -s "$RUNDIR/control" dev show >"$T_TMP/ro.log" 2>&1; r1=$?
as_user nogroup "$CTL" -s "$RUNDIR/control" dev add zz >"$T_TMP/rw.log" 2>&1; r2=$?
as_user daemon "$CTL" -s "$RUNDIR/control" dev show >"$T_TMP/no.log" 2>&1; r3=$?
if [ $r1 = 0 ] && grep -q '^dev a ' "$T_TMP/ro.log" && [ $r2 = 1 ] &&
   grep -q 'permission denied' "$T_TMP/rw.log" && ! ctl dev show zz >/dev/null 2>&1 && [ $r3 = 3 ]; then
	ok control_access
else
	not_ok control_access "group look rc=$r1, group change rc=$r2 ($(cat "$T_TMP/rw.log")), other rc=$r3 ($(cat "$T_TMP/no.log"))"
fi
# watch mode: three answers.
if [ "$(ctl -w 0.1 -c 3 dev show a | grep -c '^dev a ')" = 3 ]; then
	ok watch
else
	not_ok watch "$(ctl -w 0.1 -c 3 dev show a 2>&1 | tr '\n' ' ')"
fi

# ---- 4. perftest, seen through vrdmactl ------------------------------------------
# start_pair NAME SRV_SOCK CLI_SOCK|dir CMD...: server, then client (the
# client finds its socket through VRDMA_SOCKET_DIR when CLI_SOCK is "dir").
start_pair() {
	local name=$1 ss=$2 cs=$3 i; shift 3
	next_port || return 1
	timeout -k 5 "$STEP_TMO" "${VENV[@]}" "$RUN" -s "$ss" -- "$@" -p "$PORT" \
		>"$T_TMP/$name.srv.log" 2>&1 </dev/null &
	SRV=$!
	T_PIDS+=($SRV)
	wait_listening "$PORT" "$SRV" || return 1
	if [ "$cs" = dir ]; then
		timeout -k 5 "$STEP_TMO" "${VENV[@]}" VRDMA_SOCKET_DIR="$RUNDIR" "$RUN" -- "$@" \
			-p "$PORT" localhost >"$T_TMP/$name.cli.log" 2>&1 </dev/null &
	else
		timeout -k 5 "$STEP_TMO" "${VENV[@]}" "$RUN" -s "$cs" -- "$@" -p "$PORT" localhost \
			>"$T_TMP/$name.cli.log" 2>&1 </dev/null &
	fi
	CLI=$!
	T_PIDS+=($CLI)
}

# ib_write_bw for a bounded time, long enough to overlap the hot-plug below
# (-D: seconds of traffic; the test waits for events, not for this time).
start_pair bw "$RUNDIR/b.sock" dir ib_write_bw -F -x 1 -s 4096 -D 60
BW_SRV=$SRV BW_CLI=$CLI
# qp_psn DEV: "state sq_psn" of DEV's first RC QP in RTS, from the text output.
qp_psn() {
	ctl res show qp dev "$1" 2>/dev/null | awk '
		{ st = ""; psn = ""; ty = ""
		  for (i = 2; i < NF; i++) { if ($i == "state") st = $(i + 1);
			if ($i == "sq_psn") psn = $(i + 1); if ($i == "type") ty = $(i + 1) }
		  if (ty == "RC" && st == "RTS") { print st, psn; exit } }'
}
qp_up() {
	wait_until '[ -n "$(qp_psn a)" ] || ! kill -0 "$BW_CLI" 2>/dev/null' 120
	[ -n "$(qp_psn a)" ]
}
if qp_up; then
	ok perftest_qp_shown
	ctl res show qp | sed 's/^/# /'
else
	not_ok perftest_qp_shown "$(ctl res show qp 2>&1 | tr '\n' ' ') $(tail -3 "$T_TMP/bw.cli.log")"
fi
# The device is a port with contexts: dev show gives its open contexts and one
# line per context; every QP of the device names one of those contexts.
ctx_check() {
	ctl dev show a >"$T_TMP/ctx.dev" 2>&1 && ctl res show qp dev a >"$T_TMP/ctx.qp" 2>&1 &&
	awk '
		function val(k,  i) { for (i = 2; i < NF; i++) if ($i == k) return $(i + 1); return "" }
		FILENAME ~ /dev$/ && $1 == "dev" && $2 == "a" { n = val("contexts") }
		FILENAME ~ /dev$/ && $1 == "ctx" && val("dev") == "a" { ids[$2] = 1; if (val("state") == "open") nctx++ }
		FILENAME ~ /qp$/ && $1 == "qp" { nqp++; if (!(val("ctx") in ids)) bad = 1 }
		END { exit !(n >= 1 && n == nctx && nqp >= 1 && !bad) }' "$T_TMP/ctx.dev" "$T_TMP/ctx.qp"
}
if ctx_check; then
	ok contexts_shown
	sed 's/^/# /' "$T_TMP/ctx.dev"
else
	not_ok contexts_shown "$(cat "$T_TMP/ctx.dev" "$T_TMP/ctx.qp" 2>&1 | tr '\n' ' ')"
fi
# moving: the PSN changes between two looks (polled, bounded).
psn_moves() {
	local qp=$1 first now
	first=$(qp_psn "$qp")
	[ -n "$first" ] || return 1
	wait_until 'now=$(qp_psn "$qp"); [ -n "$now" ] && [ "$now" != "$first" ] ||
		! kill -0 "$BW_CLI" 2>/dev/null' 30
	[ -n "$now" ] && [ "$now" != "$first" ]
}
s1=$(ctl stat show dev a | awk '{ for (i = 1; i < NF; i++) if ($i == "roce_tx_packets") print $(i + 1) }' | head -1)
if psn_moves a; then
	s2=$(ctl stat show dev a | awk '{ for (i = 1; i < NF; i++) if ($i == "roce_tx_packets") print $(i + 1) }' | head -1)
	if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ]; then
		ok counters_moving
		echo "# dev a roce_tx_packets $s1 -> $s2"
	else
		not_ok counters_moving "roce_tx_packets '$s1' -> '$s2'"
	fi
else
	not_ok counters_moving "QP PSN did not move: $(ctl res show qp 2>&1 | tr '\n' ' ')"
fi
bad=""
for q in "res show" "res show qp" "stat show" "dev show" "stat show dev a"; do
	# shellcheck disable=SC2086
	ctl -j $q >"$T_TMP/j.json" 2>&1 && python3 -m json.tool "$T_TMP/j.json" >/dev/null 2>&1 ||
		bad="$bad [$q: $(head -c 200 "$T_TMP/j.json")]"
done
if [ -z "$bad" ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
qps = [q for q in d["qp"] if q["dev"] == "a" and q["state"] == "RTS"]
sys.exit(0 if qps and "sq_psn" in qps[0] and qps[0]["ctx"] >= 1 and
         d["dev"][0]["roce_tx_packets"] > 0 and d["dev"][0]["contexts"] >= 1 else 1)' \
	<(ctl -j stat show dev a) 2>/dev/null; then
	ok json_valid
else
	not_ok json_valid "$bad"
fi

# ---- 5. hot-plug while ib_write_bw runs ---------------------------------------------
hp=""
ctl dev add c "ip=10.64.$(( $$ % 200 )).1/24,mac=02:64:00:00:00:0c" >"$T_TMP/add.log" 2>&1 || hp="dev add c: $(cat "$T_TMP/add.log")"
ctl dev add d "ip=10.64.$(( $$ % 200 )).2/24,mac=02:64:00:00:00:0d" >>"$T_TMP/add.log" 2>&1 || hp="$hp dev add d: $(cat "$T_TMP/add.log")"
ctl capture start c "$T_TMP/c.pcap" >/dev/null 2>&1 || hp="$hp capture start failed"
if [ -z "$hp" ] && [ -S "$RUNDIR/c.sock" ] && [ -S "$RUNDIR/d.sock" ]; then
	if start_pair pp "$RUNDIR/d.sock" "$RUNDIR/c.sock" ibv_rc_pingpong -g 1 -c -n 500; then
		wait "$CLI"; rc_c=$?
		wait "$SRV"; rc_s=$?
		if [ $rc_c = 0 ] && [ $rc_s = 0 ] && grep -q 'iters in' "$T_TMP/pp.cli.log"; then
			ok hotplug_pingpong
			grep 'bytes in' "$T_TMP/pp.cli.log" | sed 's/^/# /'
		else
			not_ok hotplug_pingpong "rc $rc_s/$rc_c: $(cat "$T_TMP/pp.srv.log" "$T_TMP/pp.cli.log" | tr '\n' ' ')"
		fi
	else
		not_ok hotplug_pingpong "server did not listen: $(cat "$T_TMP/pp.srv.log")"
	fi
else
	not_ok hotplug_pingpong "$hp"
fi
ctl capture stop c >/dev/null 2>&1
if kill -0 "$BW_CLI" 2>/dev/null && psn_moves a; then
	ok traffic_uninterrupted
else
	not_ok traffic_uninterrupted "ib_write_bw stopped or its QP did not move: $(ctl res show qp dev a 2>&1 | tr '\n' ' ')"
fi
# pcap: the header, then RoCE v2 frames (UDP port 4791) of both ends.
if python3 - "$T_TMP/c.pcap" >"$T_TMP/pcap.log" 2>&1 <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", d[:24])
assert magic in (0xa1b2c3d4, 0xa1b23c4d) and link == 1
off, macs = 24, set()
while off + 16 <= len(d):
    _, _, incl, _ = struct.unpack("<IIII", d[off:off + 16])
    f = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(f) >= 42 and f[12:14] == b"\x08\x00" and f[23] == 17 and f[36:38] == b"\x12\xb7":
        macs.add(f[6:12])
assert {bytes.fromhex("02640000000c"), bytes.fromhex("02640000000d")} <= macs, macs
EOF
then
	ok capture
else
	not_ok capture "$(ls -l "$T_TMP/c.pcap" 2>&1): $(tail -n 2 "$T_TMP/pcap.log" | tr '\n' ' ')"
fi
# A device removed while a context is open on it: an ibv_rc_pingpong server
# holds a context (with its QP) on c while it waits for its peer; dev del
# closes that context with the port, the daemon and the others carry on.
held=""
hold_open() { ctl dev show c 2>/dev/null | grep -Eq '^ctx [0-9]+ dev c state open'; }
if next_port; then
	timeout -k 5 "$STEP_TMO" "${VENV[@]}" "$RUN" -s "$RUNDIR/c.sock" -- ibv_rc_pingpong -g 1 \
		-p "$PORT" >"$T_TMP/hold.log" 2>&1 </dev/null &
	HOLD=$!
	T_PIDS+=($HOLD)
	wait_for hold_open && held=yes
fi
ctl dev del c >"$T_TMP/del.log" 2>&1 || held="$held del failed: $(cat "$T_TMP/del.log")"
if [ "$held" = yes ] && ! [ -e "$RUNDIR/c.sock" ] && ctl dev show a >/dev/null 2>&1 &&
   grep -q 'device c removed' "$T_TMP/del.log"; then
	ok unplug_open_context
else
	not_ok unplug_open_context "'$held' $(ctl dev 2>&1 | tr '\n' ' ') $(tail -3 "$T_TMP/hold.log")"
fi
[ -n "${HOLD:-}" ] && { kill -TERM "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; }
ctl dev del d >/dev/null 2>&1
if ! [ -e "$RUNDIR/c.sock" ] && ! [ -e "$RUNDIR/d.sock" ] && ! ctl dev show c >/dev/null 2>&1 &&
   kill -0 "$BW_CLI" 2>/dev/null && psn_moves a; then
	ok hot_unplug
else
	not_ok hot_unplug "$(ls "$RUNDIR") $(ctl dev 2>&1 | tr '\n' ' ')"
fi

# ---- 6. reload ---------------------------------------------------------------------
printf '\n[device e]\nip = 10.65.%d.1/24\n' $(( $$ % 200 )) >>"$CONF"
kill -HUP "$DPID"
if wait_for test -S "$RUNDIR/e.sock" && ctl dev show e >/dev/null 2>&1 && ctl dev show a >/dev/null 2>&1 &&
   kill -0 "$BW_CLI" 2>/dev/null && psn_moves a; then
	ok reload
else
	not_ok reload "$(ctl dev 2>&1 | tr '\n' ' ') $(tail -3 "$T_TMP/daemon.log")"
fi

wait "$BW_CLI"; rc_c=$?
wait "$BW_SRV"; rc_s=$?
if [ $rc_c = 0 ] && [ $rc_s = 0 ] && grep -Eq '^ *4096 ' "$T_TMP/bw.cli.log"; then
	ok perftest_done
	grep -E '^ *4096 ' "$T_TMP/bw.cli.log" | sed 's/^/# ib_write_bw: /'
else
	# perftest's errors go to stderr unbuffered, above its buffered stdout.
	not_ok perftest_done "rc $rc_s/$rc_c: $(grep -HiE "fail|couldn|unable|error" "$T_TMP/bw.cli.log" "$T_TMP/bw.srv.log" | tr "\n" " ") $(tail -n 5 "$T_TMP/bw.cli.log" "$T_TMP/bw.srv.log" | tr "\n" " ") daemon: $(tail -n 8 "$T_TMP/daemon.log" | tr "\n" " ")"
fi

kill -TERM "$DPID"
wait_gone "$DPID" 60
wait "$DTPID"
rc=$?
if [ $rc = 0 ] && ! [ -e "$RUNDIR/control" ] && ! [ -e "$RUNDIR/a.sock" ] &&
   ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T_TMP/daemon.log"; then
	ok daemon_clean_exit
else
	not_ok daemon_clean_exit "rc=$rc: $(grep -A10 -E 'Sanitizer|runtime error' "$T_TMP/daemon.log" | head -20 | tr '\n' ' ')"
fi
t_done
