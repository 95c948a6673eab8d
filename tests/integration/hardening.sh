#!/usr/bin/env bash
# Least privilege of the daemon:
# - the binaries carry the hardening flags (hardening-check from devscripts:
#   PIE, stack protector, fortify, RELRO, immediate binding);
# - --socket-mode and --socket-group set the device sockets' mode and group;
# - --user drops root once sockets are open: the running daemon has the
#   user's uid/gid, no capability, no_new_privs, and its seccomp filter
#   (mode 2) unless --no-seccomp;
# - every connection is logged with the peer's credentials (SO_PEERCRED);
# - with --user and --config: SIGHUP and vrdmactl reload add and remove
#   devices, vrdmactl dev add / dev del hot-plug one, all as that user under
#   the filter; a socket where the user may not write and a config file it
#   may not read are refused with a reason, the daemon keeps serving and
#   exits cleanly, removing its sockets;
# - bad values of these options (and of --sched, --streaming-stores) are
#   refused with exit status 2, bad values
#   of the tenant-isolation device options (mem=, state-mem=, allow-ip=,
#   mac-change=, port-security=) with an error naming the key.
. "$(dirname "$0")/../lib.sh"

DAEMON="$VRDMA_BUILD/bin/vhost-user-rdma"
NC="$VRDMA_BUILD/bin/vrdma-netcat"

for b in "$DAEMON" "$NC"; do
	if [ ! -x "$b" ]; then
		not_ok setup "$b not built"
		t_done
	fi
done

# hardening-check: every check it makes but control-flow protection (it
# looks for markers gcc 12 does not leave in static archives), fortify
# excepted under ASan (its interceptors replace the fortified functions).
hc_opts=(--nocfprotection)
if nm "$DAEMON" 2>/dev/null | grep -q __asan_init; then
	hc_opts+=(--nofortify)
fi
for b in "$DAEMON" "$NC" "$VRDMA_BUILD/lib/libvrdma.so" "$VRDMA_BUILD/lib/libibverbs.so.1"; do
	[ -e "$b" ] || continue
	if out=$(hardening-check "${hc_opts[@]}" "$b" 2>&1); then
		ok "hardening.$(basename "$b")"
	else
		not_ok "hardening.$(basename "$b")" "$(echo "$out" | grep -i ': no' | tr '\n' ' ')"
	fi
done

# status_field PID NAME: a field of /proc/PID/status.
status_field() { awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ +/, ""); print; exit }' "/proc/$1/status"; }

# start NAME OPTS...: a daemon with one device; sets PID.
start() {
	local name=$1
	shift
	rm -f "$T_TMP/$name.pid"
	bg "$DAEMON" -v --pidfile "$T_TMP/$name.pid" "$@" \
		--device "socket=$T_TMP/$name.sock,mac=02:00:00:00:1a:01" 2>"$T_TMP/$name.log"
	if ! wait_for_file "$T_TMP/$name.pid"; then
		not_ok "$name.started" "$(tail -3 "$T_TMP/$name.log")"
		return 1
	fi
	PID=$(cat "$T_TMP/$name.pid")
	ok "$name.started"
}

stop() {
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
}

if [ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null && getent group nogroup >/dev/null; then
	nobody_uid=$(id -u nobody)
	nogroup_gid=$(getent group nogroup | cut -d: -f3)
	if start user --user nobody:nogroup --socket-mode 0660 --socket-group nogroup; then
		mode=$(stat -c %a "$T_TMP/user.sock")
		grp=$(stat -c %g "$T_TMP/user.sock")
		[ "$mode" = 660 ] && ok socket_mode || not_ok socket_mode "mode $mode"
		[ "$grp" = "$nogroup_gid" ] && ok socket_group || not_ok socket_group "gid $grp"
		uids=$(status_field "$PID" Uid)
		gids=$(status_field "$PID" Gid)
		[ "$uids" = "$nobody_uid $nobody_uid $nobody_uid $nobody_uid" ] && ok user_uid ||
			not_ok user_uid "Uid: $uids"
		[ "$gids" = "$nogroup_gid $nogroup_gid $nogroup_gid $nogroup_gid" ] && ok user_gid ||
			not_ok user_gid "Gid: $gids"
		[ "$(status_field "$PID" CapEff)" = 0000000000000000 ] &&
		[ "$(status_field "$PID" CapPrm)" = 0000000000000000 ] && ok no_capabilities ||
			not_ok no_capabilities "CapEff $(status_field "$PID" CapEff)"
		[ "$(status_field "$PID" NoNewPrivs)" = 1 ] && ok no_new_privs || not_ok no_new_privs
		[ "$(status_field "$PID" Seccomp)" = 2 ] && ok seccomp_on || not_ok seccomp_on
		# a connection is served (under the filter) and its peer logged
		if "$NC" --socket "$T_TMP/user.sock" info >"$T_TMP/info" 2>&1 &&
		   grep -q "^mac 02:00:00:00:1a:01" "$T_TMP/info"; then
			ok served_unprivileged
		else
			not_ok served_unprivileged "$(cat "$T_TMP/info")"
		fi
		if wait_for grep -q "front-end connected: pid [0-9]* uid 0 gid 0" "$T_TMP/user.log"; then
			ok peer_credentials_logged
		else
			not_ok peer_credentials_logged "$(tail -3 "$T_TMP/user.log")"
		fi
		kill -0 "$PID" 2>/dev/null && ok alive_after_client || not_ok alive_after_client
		stop
	fi

	# --user with run-time changes: the config file re-read (SIGHUP and
	# vrdmactl reload) and hot-plug (vrdmactl dev add / dev del), all after
	# the switch to nobody and under the seccomp filter. The socket
	# directory belongs to the user; what the user may not do is reported
	# to the caller and the daemon keeps running.
	SVC="$T_TMP/svc"
	mkdir -p "$SVC"
	chmod 0711 "$T_TMP"
	chown nobody:nogroup "$SVC"
	chmod 0750 "$SVC"
	CTL="$VRDMA_BUILD/bin/vrdmactl"
	conf() {
		{
			echo "[global]"
			echo "socket-dir = $SVC"
			echo "control = $SVC/control"
			for n in "$@"; do
				echo "[device $n]"
				echo "mac = 02:00:00:00:1c:0${#n}"
			done
		} >"$SVC/vrdma.conf.new"
		chmod 0644 "$SVC/vrdma.conf.new"
		mv "$SVC/vrdma.conf.new" "$SVC/vrdma.conf"
	}
	served() { timeout 60 "$NC" --socket "$1" info 2>&1 | grep -q "^mac $2\$"; }
	conf a
	rm -f "$T_TMP/svc.pid"
	bg "$DAEMON" -v --pidfile "$T_TMP/svc.pid" --config "$SVC/vrdma.conf" \
		--user nobody:nogroup 2>"$T_TMP/svc.log"
	if wait_for_file "$T_TMP/svc.pid" && wait_for_file "$SVC/control"; then
		PID=$(cat "$T_TMP/svc.pid")
		[ "$(status_field "$PID" Seccomp)" = 2 ] &&
		[ "$(status_field "$PID" Uid)" = "$nobody_uid $nobody_uid $nobody_uid $nobody_uid" ] &&
			ok reload_user.started || not_ok reload_user.started "$(tail -3 "$T_TMP/svc.log")"
		# SIGHUP: a device added
		conf a bb
		kill -HUP "$PID"
		if wait_for_file "$SVC/bb.sock" && served "$SVC/bb.sock" 02:00:00:00:1c:02; then
			ok reload_user.sighup_add
		else
			not_ok reload_user.sighup_add "$(tail -5 "$T_TMP/svc.log")"
		fi
		# vrdmactl reload: one added, one removed (its socket unlinked)
		conf a ccc
		if "$CTL" -s "$SVC/control" reload >"$T_TMP/ctl.out" 2>&1 &&
		   wait_for_file "$SVC/ccc.sock" && served "$SVC/ccc.sock" 02:00:00:00:1c:03 &&
		   wait_for test ! -e "$SVC/bb.sock"; then
			ok reload_user.ctl_reload
		else
			not_ok reload_user.ctl_reload "$(cat "$T_TMP/ctl.out") $(tail -5 "$T_TMP/svc.log")"
		fi
		# hot-plug
		if "$CTL" -s "$SVC/control" dev add dddd mac=02:00:00:00:1c:04 >"$T_TMP/ctl.out" 2>&1 &&
		   served "$SVC/dddd.sock" 02:00:00:00:1c:04 &&
		   "$CTL" -s "$SVC/control" dev del dddd >>"$T_TMP/ctl.out" 2>&1 &&
		   wait_for test ! -e "$SVC/dddd.sock"; then
			ok reload_user.hotplug
		else
			not_ok reload_user.hotplug "$(cat "$T_TMP/ctl.out") $(tail -5 "$T_TMP/svc.log")"
		fi
		# what nobody may not do: a socket outside its directory, a config
		# file it cannot read; refused with a reason, nothing changes
		mkdir -p "$T_TMP/root-only"
		chmod 0700 "$T_TMP/root-only"
		if ! "$CTL" -s "$SVC/control" dev add eeeee "socket=$T_TMP/root-only/e.sock" \
			>"$T_TMP/ctl.out" 2>&1 && [ -s "$T_TMP/ctl.out" ] && [ ! -e "$T_TMP/root-only/e.sock" ]; then
			ok reload_user.hotplug_refused
		else
			not_ok reload_user.hotplug_refused "$(cat "$T_TMP/ctl.out")"
		fi
		conf a ccc ffffff
		chmod 0600 "$SVC/vrdma.conf"
		if ! "$CTL" -s "$SVC/control" reload >"$T_TMP/ctl.out" 2>&1 && [ -s "$T_TMP/ctl.out" ] &&
		   [ ! -e "$SVC/ffffff.sock" ] && served "$SVC/ccc.sock" 02:00:00:00:1c:03; then
			ok reload_user.reload_refused
		else
			not_ok reload_user.reload_refused "$(cat "$T_TMP/ctl.out")"
		fi
		# still the same process, unprivileged, filtered; a clean exit
		# that removes its sockets
		if kill -0 "$PID" 2>/dev/null && served "$SVC/a.sock" 02:00:00:00:1c:01 &&
		   [ "$(status_field "$PID" CapEff)" = 0000000000000000 ] &&
		   [ "$(status_field "$PID" Seccomp)" = 2 ]; then
			ok reload_user.alive
		else
			not_ok reload_user.alive "$(tail -5 "$T_TMP/svc.log")"
		fi
		kill "$PID"
		wait "$PID"
		rc=$?
		if [ $rc -eq 0 ] && [ ! -e "$SVC/a.sock" ] && [ ! -e "$SVC/ccc.sock" ] &&
		   ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T_TMP/svc.log"; then
			ok reload_user.clean_exit
		else
			not_ok reload_user.clean_exit "status $rc; $(ls "$SVC"); $(tail -5 "$T_TMP/svc.log")"
		fi
	else
		not_ok reload_user.started "$(tail -5 "$T_TMP/svc.log")"
	fi
else
	skip user "not root or no nobody/nogroup: --user cannot be exercised"
fi

# --sched: a real-time policy for the daemon, refused without the privilege
if start rt --sched fifo:7; then
	pol=$(chrt -p "$PID" 2>&1 | tr '\n' ' ')
	case $pol in
	*SCHED_FIFO*"priority: 7"*) ok sched_fifo ;;
	*) not_ok sched_fifo "$pol" ;;
	esac
	stop
fi
if [ "$(id -u)" -eq 0 ] && getent passwd nobody >/dev/null; then
	mkdir -m 1777 "$T_TMP/rt" 2>/dev/null
	setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups --inh-caps=-all \
		--bounding-set=-all prlimit --rtprio=0 "$DAEMON" --sched rr:3 \
		--device "socket=$T_TMP/rt/d.sock" >/dev/null 2>"$T_TMP/rt.err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "cannot set the rr policy.*CAP_SYS_NICE" "$T_TMP/rt.err"; then
		ok sched_refused_unprivileged
	else
		not_ok sched_refused_unprivileged "exit $rc: $(cat "$T_TMP/rt.err")"
	fi
else
	skip sched_refused_unprivileged "not root or no user nobody: cannot drop the privilege"
fi

if start noseccomp --no-seccomp; then
	[ "$(status_field "$PID" Seccomp)" = 0 ] && ok seccomp_off || not_ok seccomp_off
	stop
fi

# refused values
while read -r name opt val; do
	"$DAEMON" "$opt" "$val" --device "socket=$T_TMP/bad.sock" >/dev/null 2>"$T_TMP/bad.err"
	rc=$?
	if [ $rc -eq 2 ] && [ -s "$T_TMP/bad.err" ]; then
		ok "refused.$name"
	else
		not_ok "refused.$name" "exit $rc for $opt $val"
	fi
done <<EOF
unknown_user --user no-such-user-$$
unknown_group --user nobody:no-such-group-$$
mode_not_octal --socket-mode 0999
mode_word --socket-mode rw
unknown_socket_group --socket-group no-such-group-$$
sched_word --sched deadline
sched_prio_high --sched fifo:100
sched_prio_zero --sched rr:0
streaming_word --streaming-stores on
EOF

# refused device options of this model: a clear error naming the key
while read -r name spec key; do
	"$DAEMON" --device "socket=$T_TMP/bad.sock,$spec" >/dev/null 2>"$T_TMP/bad.err"
	rc=$?
	if [ $rc -ne 0 ] && grep -q "$key" "$T_TMP/bad.err"; then
		ok "refused.$name"
	else
		not_ok "refused.$name" "exit $rc for $spec: $(cat "$T_TMP/bad.err")"
	fi
done <<EOF
mem_too_small mem=4K mem
mem_suffix mem=3X mem
state_mem_negative state-mem=-1 state-mem
allow_ip_bad allow-ip=10.0.0.0/40 allow-ip
allow_ip_word allow-ip=example allow-ip
mac_change_value mac-change=yes mac-change
port_security_value port-security=maybe port-security
EOF

t_done
