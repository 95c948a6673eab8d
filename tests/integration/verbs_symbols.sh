#!/usr/bin/env bash
# vrdma's libibverbs.so.1 as a drop-in for Debian's unmodified verbs tools:
# - every IBVERBS_* symbol and version imported by ibverbs-utils, perftest,
#   libmlx5, libefa, librdmacm and libibumad is exported (objdump -T), and
#   so is every default-version export of the installed libibverbs;
# - each tool starts with LD_LIBRARY_PATH=<build>/lib and LD_BIND_NOW=1
#   (no unresolved symbol in it or in the vendor libraries it loads);
# - with the fake device (VRDMA_FAKE_DEVICE=1 and the test build of the
#   library in <build>/tests/lib, tests/fake/) ibv_devices and ibv_devinfo
#   show vrdma0, ibv_rc_pingpong sets up its QP, and an ib_write_bw server /
#   client pair runs to the end;
# - vrdma-run sets LD_LIBRARY_PATH and VRDMA_SOCKET as documented.
source "$(dirname "$0")/../lib.sh"

LIB="$VRDMA_BUILD/lib/libibverbs.so.1"
LIBDIR="$VRDMA_BUILD/lib"
FAKELIB="$VRDMA_BUILD/tests/lib"
RUN="$VRDMA_BUILD/bin/vrdma-run"
SYSLIB=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
LOADER_ERR='symbol lookup error|undefined symbol|version .IBVERBS[^ ]* not found|error while loading shared libraries|cannot open shared object'

need setup "$LIB" "$FAKELIB/libibverbs.so.1" "$LIBDIR/libvrdma-devfiles.so" \
	"$FAKELIB/libvrdma-devfiles.so" objdump || t_done

# An ASan-built library needs the sanitizer runtimes first in a plain binary.
asan_preload "$LIB"
[ -z "$PRELOAD" ] ||
	export ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1"

# fake_run CMD...: CMD against the test build of our library (the fake device).
fake_run() {
	env LD_LIBRARY_PATH="$FAKELIB" LD_BIND_NOW=1 LD_PRELOAD="$PRELOAD" \
		VRDMA_FAKE_DEVICE=1 "$@"
}

# "name version" pairs: defined IBVERBS symbols of $1 / imported ones.
exports_of() {
	objdump -T "$1" | awk '$0 ~ /IBVERBS/ && $0 !~ /\*UND\*/ && $(NF-1) !~ /^\(/ {
		print $NF, $(NF-1) }' | sort -u
}
imports_of() {
	objdump -T "$1" | awk '$0 ~ /\*UND\*/ && $0 ~ /IBVERBS/ {
		v = $(NF-1); gsub(/[()]/, "", v); print $NF, v }' | sort -u
}

exports_of "$LIB" >"$T_TMP/ours"

# The shipped libraries carry no test code: the fake device (its selector and
# its environment variable) is only in the test builds in tests/lib.
bad=
for f in "$LIB" "$LIBDIR/libvrdma-devfiles.so"; do
	if nm "$f" | grep -Eq 'vibv_prov_test_select|devfiles_test_count' ||
		grep -aq VRDMA_FAKE_DEVICE "$f"; then
		bad="$bad $f"
	fi
done
for f in "$FAKELIB/libibverbs.so.1" "$FAKELIB/libvrdma-devfiles.so"; do
	grep -aq VRDMA_FAKE_DEVICE "$f" || bad="$bad (test build without the fake device: $f)"
done
if [ -z "$bad" ]; then
	ok shipped.no_fake_device
else
	not_ok shipped.no_fake_device "fake device in:$bad"
fi

# The test build of libvrdma-devfiles.so gives the fake devices their /dev
# node (a uverbs-like character device) and GID type files; the shipped one
# does not.
# node_check LIB: what the device files look like with LIB preloaded and two
# fake devices (bash's [ -c ] goes through stat(), which the library answers).
node_check() {
	env LD_PRELOAD="${PRELOAD:+$PRELOAD:}$1" VRDMA_FAKE_DEVICE=2 bash -c '
		for i in 1 2; do
			[ -c /dev/infiniband/vrdma$i ] && echo "node$i" || echo "none$i"
		done
		cat /sys/class/infiniband/vrdma1/ports/1/gid_attrs/types/0 2>/dev/null || echo "no gid type"' 2>&1 |
		tr '\n' ' '
}
got=$(node_check "$FAKELIB/libvrdma-devfiles.so")
shipped=$(node_check "$LIBDIR/libvrdma-devfiles.so")
if [ "$got" = "node1 none2 RoCE v2 " ] && [ "$shipped" = "none1 none2 no gid type " ]; then
	ok devfiles.fake_device_node
else
	not_ok devfiles.fake_device_node "test build: '$got'; shipped: '$shipped'"
fi

# --- symbol coverage -------------------------------------------------------

if [ -f "$SYSLIB" ]; then
	exports_of "$SYSLIB" | grep -v '^IBVERBS' >"$T_TMP/real"
	missing=$(comm -23 "$T_TMP/real" "$T_TMP/ours")
	if [ -z "$missing" ]; then
		ok exports.same_as_rdma_core
	else
		not_ok exports.same_as_rdma_core "missing: $(echo "$missing" | tr '\n' ' ')"
	fi
else
	not_ok exports.same_as_rdma_core "no $SYSLIB (libibverbs1: run scripts/deps.sh test)"
fi

bins=()
for b in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_uc_pingpong \
	ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch \
	ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
	ib_atomic_bw ib_atomic_lat raw_ethernet_bw raw_ethernet_lat \
	raw_ethernet_burst_lat raw_ethernet_fs_rate; do
	p=$(command -v "$b") && bins+=("$p")
done
libs=()
for l in libmlx5.so.1 libefa.so.1 librdmacm.so.1 libibumad.so.3; do
	[ -f "/usr/lib/x86_64-linux-gnu/$l" ] && libs+=("/usr/lib/x86_64-linux-gnu/$l")
done
if [ ${#bins[@]} -eq 0 ]; then
	not_ok imports "ibverbs-utils / perftest not installed (run scripts/deps.sh test)"
fi
for f in "${bins[@]}" "${libs[@]}"; do
	missing=$(comm -23 <(imports_of "$f") "$T_TMP/ours")
	if [ -z "$missing" ]; then
		ok "imports.$(basename "$f")"
	else
		not_ok "imports.$(basename "$f")" "missing: $(echo "$missing" | tr '\n' ' ')"
	fi
done

# --- every tool starts ------------------------------------------------------

for f in "${bins[@]}"; do
	b=$(basename "$f")
	# -h: usage text (ibv_devices has no options and lists the devices)
	fake_run timeout 20 "$f" -h >"$T_TMP/$b.out" 2>&1 </dev/null
	rc=$?
	if grep -Eq "$LOADER_ERR" "$T_TMP/$b.out"; then
		not_ok "starts.$b" "$(grep -E "$LOADER_ERR" "$T_TMP/$b.out" | head -3)"
	elif [ $rc -ne 124 ] && { [ $rc -lt 128 ] || [ $rc -eq 255 ]; } &&
		grep -Eq 'Usage|node GUID' "$T_TMP/$b.out"; then
		ok "starts.$b"
	else
		not_ok "starts.$b" "rc=$rc: $(head -3 "$T_TMP/$b.out")"
	fi
done

# --- the fake device through the real tools ---------------------------------

if command -v ibv_devices >/dev/null; then
	fake_run ibv_devices >"$T_TMP/devices" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -Eq '^\s+vrdma0\s+007672fffe640001$' "$T_TMP/devices"; then
		ok ibv_devices.lists_vrdma0
	else
		not_ok ibv_devices.lists_vrdma0 "rc=$rc: $(cat "$T_TMP/devices")"
	fi
	env LD_LIBRARY_PATH="$FAKELIB" LD_PRELOAD="$PRELOAD" VRDMA_FAKE_DEVICE=3 \
		ibv_devices >"$T_TMP/devices3" 2>&1
	if [ "$(grep -Ec '^\s+vrdma[0-2]\s' "$T_TMP/devices3")" = 3 ]; then
		ok ibv_devices.three_fake_devices
	else
		not_ok ibv_devices.three_fake_devices "$(cat "$T_TMP/devices3")"
	fi
fi

if command -v ibv_devinfo >/dev/null; then
	fake_run ibv_devinfo -v >"$T_TMP/devinfo" 2>&1
	rc=$?
	want=('hca_id:	vrdma0' 'vendor_id:			0x1af4' 'vendor_part_id:			4161'
		'node_guid:			0076:72ff:fe64:0001' 'state:			PORT_ACTIVE (4)'
		'link_layer:		Ethernet' 'active_mtu:		1024 (3)'
		'GID[  0]:		fe80::76:72ff:fe64:1, RoCE v2'
		'GID[  1]:		::ffff:192.0.2.1, RoCE v2')
	bad=
	for w in "${want[@]}"; do
		grep -Fq -- "$w" "$T_TMP/devinfo" || bad="$bad [$w]"
	done
	if [ $rc -eq 0 ] && [ -z "$bad" ]; then
		ok ibv_devinfo.shows_vrdma0
	else
		not_ok ibv_devinfo.shows_vrdma0 "rc=$rc missing:$bad"
	fi
fi

# ibv_rc_pingpong as a client of a closed port: the device is opened and
# the QP set up (it prints its address) before the connection fails.
if command -v ibv_rc_pingpong >/dev/null; then
	next_port
	port=$PORT
	fake_run timeout 20 ibv_rc_pingpong -g 0 -p "$port" 127.0.0.1 >"$T_TMP/rc" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q 'local address:.*GID fe80::76:72ff:fe64:1' "$T_TMP/rc"; then
		ok ibv_rc_pingpong.sets_up_qp
	else
		not_ok ibv_rc_pingpong.sets_up_qp "rc=$rc: $(cat "$T_TMP/rc")"
	fi
fi

# ib_write_bw: RDMA writes complete at once on the fake device, so a server /
# client pair runs through connection setup, the data loop and teardown.
if command -v ib_write_bw >/dev/null && command -v ss >/dev/null; then
	next_port
	port=$PORT
	fake_run timeout 60 ib_write_bw -d vrdma0 -x 1 -n 50 -p "$port" >"$T_TMP/wbw.srv" 2>&1 &
	srv=$!
	T_PIDS+=("$srv")
	if wait_listening "$port" "$srv"; then
		fake_run timeout 60 ib_write_bw -d vrdma0 -x 1 -n 50 -p "$port" 127.0.0.1 \
			>"$T_TMP/wbw.cli" 2>&1
		crc=$?
		wait "$srv"
		src=$?
		if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
			grep -q 'ibv_wr\* API     : OFF' "$T_TMP/wbw.cli" &&
			grep -q 'GID index       : 1' "$T_TMP/wbw.cli" &&
			grep -Eq '^ 65536 +50 ' "$T_TMP/wbw.cli"; then
			ok ib_write_bw.fake_pair_runs
		else
			not_ok ib_write_bw.fake_pair_runs "client rc=$crc server rc=$src: $(cat "$T_TMP/wbw.cli" "$T_TMP/wbw.srv")"
		fi
	else
		not_ok ib_write_bw.fake_pair_runs "server did not listen: $(cat "$T_TMP/wbw.srv")"
	fi
fi

# --- vrdma-run ----------------------------------------------------------------

if [ -x "$RUN" ]; then
	out=$(env -u LD_LIBRARY_PATH LD_PRELOAD="$PRELOAD" VRDMA_FAKE_DEVICE=1 "$RUN" -- \
		sh -c 'LD_LIBRARY_PATH=$0:$LD_LIBRARY_PATH exec "$@"' "$FAKELIB" ibv_devices 2>&1)
	if echo "$out" | grep -Eq '^\s+vrdma0\s+007672fffe640001$'; then
		ok vrdma_run.fake_ibv_devices
	else
		not_ok vrdma_run.fake_ibv_devices "$out"
	fi

	libdir=$(cd "$LIBDIR" && pwd -P)
	out=$(LD_LIBRARY_PATH=/some/where "$RUN" -s /nonexistent/a.sock -s /nonexistent/b.sock \
		-- sh -c 'echo "$VRDMA_SOCKET|$LD_LIBRARY_PATH"' 2>/dev/null)
	if [ "$out" = "/nonexistent/a.sock:/nonexistent/b.sock|$libdir:/some/where" ]; then
		ok vrdma_run.socket_option
	else
		not_ok vrdma_run.socket_option "got '$out'"
	fi

	out=$(VRDMA_SOCKET=/from/env.sock "$RUN" sh -c 'echo "$VRDMA_SOCKET"' 2>/dev/null)
	check vrdma_run.socket_env test "$out" = /from/env.sock

	mkdir -p "$T_TMP/run-empty" "$T_TMP/run-dir"
	out=$(env -u VRDMA_SOCKET VRDMA_SOCKET_DIR="$T_TMP/run-empty" "$RUN" \
		sh -c 'echo "$VRDMA_SOCKET"' 2>/dev/null)
	check vrdma_run.socket_fallback test "$out" = /tmp/vrdma0.sock

	/usr/bin/python3 -c 'import socket, sys
for p in sys.argv[1:]:
    socket.socket(socket.AF_UNIX).bind(p)' "$T_TMP/run-dir/y.sock" "$T_TMP/run-dir/x.sock"
	out=$(env -u VRDMA_SOCKET VRDMA_SOCKET_DIR="$T_TMP/run-dir" "$RUN" \
		sh -c 'echo "$VRDMA_SOCKET"' 2>"$T_TMP/run.err")
	if [ "$out" = "$T_TMP/run-dir/x.sock" ] && ! grep -q warning "$T_TMP/run.err"; then
		ok vrdma_run.socket_dir_sorted
	else
		not_ok vrdma_run.socket_dir_sorted "got '$out' $(cat "$T_TMP/run.err")"
	fi

	"$RUN" -- /nonexistent/command >/dev/null 2>&1
	check vrdma_run.exit_127 test $? -eq 127
	"$RUN" >/dev/null 2>&1
	check vrdma_run.exit_2_without_command test $? -eq 2
	"$RUN" --help | grep -q '/tmp/vrdma0.sock'
	check vrdma_run.help_documents_default test $? -eq 0
else
	not_ok vrdma_run "$RUN not built (run make)"
fi

t_done
