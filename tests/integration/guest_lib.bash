# A Linux guest with vrdma's virtio-rdma guest driver: Debian's kernel (the
# image of rxe_lib.bash) booted in QEMU 10 (scripts/qemu-build.sh) with the
# device as a vhost-user-device-pci (virtio id 42) on a daemon's
# model=virtio-rdma device. Source after tests/lib.sh and rxe_lib.bash.
# Not a test itself.
#
#   guest_prepare          QEMU (GUEST_QEMU), the modules built against the
#                          guest kernel's headers, the rdma-core provider
#                          (guest/provider) and the guest image
#                          (GUEST_KERNEL, GUEST_INITRD), all cached
#   guest_boot SOCK NVQS [QEMU_ARGS...]
#                          boot on the vhost-user socket SOCK, a device with
#                          NVQS virtqueues; returns once the command channel
#                          is up (the driver is loaded by then); GUEST_TAG
#                          (default guest) names its files, so that a test
#                          can run two guests (saving RXE_PID / RXE_CTL)
#   rxe_cmd CMD / rxe_stop as for the rxe guest
#
# The guest image is the rxe guest's initramfs with a second archive
# appended (the kernel unpacks both): the modules (/lib/vrg), the provider
# (libvrdmag-rdmav34.so and its driver file, next to the host's libibverbs
# the base image carries) and an init that loads virtio_rdma.ko after the
# base modules.

# Version of the overlay and module recipe below: bump when it changes.
GUEST_RECIPE=3
GUEST_QEMU=""
GUEST_KERNEL=""
GUEST_INITRD=""
GUEST_MODDIR=""

# guest_headers_pkg: the linux-headers package of the guest kernel.
guest_headers_pkg() {
	local k
	k=$(rxe_kernel_pkg) || return 1
	echo "linux-headers-${k#linux-image-}"
}

# guest_modules_build DIR HDRDIR: virtio_rdma.ko, vrg_selftest.ko and the
# provider libvrdmag-rdmav34.so into DIR (the host is the guest's Debian
# release: its compiler and libibverbs-dev build the guest's provider).
guest_modules_build() {
	local out=$1 kdir=$2 w
	w=$(mktemp -d /tmp/vrdma-guest-mod.XXXXXX) || return 1
	mkdir -p "$w/drv" "$w/st" "$w/prov"
	cp "$VRDMA_TOP"/guest/kernel/{Kbuild,*.c,*.h} "$w/drv/"
	cp "$VRDMA_TOP"/tests/guest/kernel/{Kbuild,*.c} "$w/st/"
	cp "$VRDMA_TOP"/guest/provider/{Makefile,*.c,*.h} "$w/prov/"
	if ! nice -n 19 make -s -C "$kdir" M="$w/drv" modules >"$w/build.log" 2>&1 ||
		! nice -n 19 make -s -C "$kdir" M="$w/st" modules >>"$w/build.log" 2>&1 ||
		! nice -n 19 make -s -C "$w/prov" >>"$w/build.log" 2>&1; then
		echo "# module build failed:"
		tail -20 "$w/build.log" | sed 's/^/#   /'
		rm -rf "$w"
		return 1
	fi
	mkdir -p "$out.tmp.$$"
	cp "$w/drv/virtio_rdma.ko" "$w/st/vrg_selftest.ko" "$w/prov/libvrdmag-rdmav34.so" "$out.tmp.$$/"
	rm -rf "$w"
	mv "$out.tmp.$$" "$out"
}

# guest_overlay DIR MODDIR BASE_INITRD: DIR/initrd.gz = base + overlay.
guest_overlay() {
	local out=$1 mods=$2 base=$3 w
	w=$(mktemp -d /tmp/vrdma-guest-img.XXXXXX) || return 1
	mkdir -p "$w/root/lib/vrg" "$w/root/usr/lib/x86_64-linux-gnu/libibverbs" "$w/root/etc/libibverbs.d"
	cp "$mods"/*.ko "$w/root/lib/vrg/"
	cp "$mods"/libvrdmag-rdmav34.so "$w/root/usr/lib/x86_64-linux-gnu/libibverbs/"
	cp "$VRDMA_TOP"/guest/provider/vrdmag.driver "$w/root/etc/libibverbs.d/"
	mkdir -p "$w/root/bin"
	cp "$(command -v ibv_devices)" "$w/root/bin/" # the libraries are ibv_devinfo's
	cat >"$w/root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /etc/modules.order); do insmod /lib/modules/$m; done
insmod /lib/vrg/virtio_rdma.ko
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
ip link set lo up
port=
for i in $(seq 1 100); do
	for d in /sys/class/virtio-ports/*; do
		[ "$(cat "$d/name" 2>/dev/null)" = ctl ] && port=/dev/$(basename "$d")
	done
	[ -n "$port" ] && [ -e "$port" ] && break
	sleep 0.1
done
exec 3<>"$port"
echo "@@READY" >&3
while true; do
	if ! read -r line <&3; then
		sleep 0.05
		continue
	fi
	echo "$line" | base64 -d >/tmp/cmd
	sh /tmp/cmd </dev/null >/tmp/out 2>&1
	rc=$?
	cat /tmp/out >&3
	echo "@@RC $rc" >&3
done
EOF
	chmod +x "$w/root/init"
	mkdir -p "$out.tmp.$$"
	{ cat "$base"; (cd "$w/root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1); } \
		>"$out.tmp.$$/initrd.gz" || { rm -rf "$w" "$out.tmp.$$"; return 1; }
	rm -rf "$w"
	mv "$out.tmp.$$" "$out"
}

guest_prepare() {
	local hpkg kdir key src dir
	GUEST_QEMU=$("$VRDMA_TOP/scripts/qemu-build.sh") || { echo "# QEMU build failed"; return 1; }
	rxe_prepare || return 1
	hpkg=$(guest_headers_pkg) || return 1
	kdir=/usr/src/${hpkg}
	if [ ! -e "$kdir/Makefile" ]; then
		flock /tmp/vrdma-apt.lock env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "$hpkg" >/dev/null 2>&1 ||
			{ echo "# cannot install $hpkg"; return 1; }
	fi
	src=$(cat "$VRDMA_TOP"/guest/kernel/{Kbuild,*.c,*.h} "$VRDMA_TOP"/tests/guest/kernel/{Kbuild,*.c} \
		"$VRDMA_TOP"/guest/provider/{Makefile,*.c,*.h,*.driver} |
		sha256sum | cut -c1-12)
	# the base image's key too (its directory name)
	key="$hpkg-$(rxe_pkg_version "$hpkg")-$src-r$GUEST_RECIPE-$(basename "$(dirname "$RXE_INITRD")" | sha256sum | cut -c1-8)"
	key=${key//[^A-Za-z0-9._-]/_}
	dir="$RXE_CACHE_ROOT/guest/$key"
	mkdir -p "$RXE_CACHE_ROOT/guest" || return 1
	if [ ! -s "$dir/img/initrd.gz" ]; then
		(
			flock 9
			[ -s "$dir/mod/libvrdmag-rdmav34.so" ] || guest_modules_build "$dir/mod" "$kdir" || exit 1
			[ -s "$dir/img/initrd.gz" ] || guest_overlay "$dir/img" "$dir/mod" "$RXE_INITRD"
		) 9>"$RXE_CACHE_ROOT/guest/.lock" || return 1
	fi
	GUEST_MODDIR="$dir/mod"
	GUEST_KERNEL=$RXE_KERNEL
	GUEST_INITRD="$dir/img/initrd.gz"
}

# guest_boot SOCK NVQS [QEMU_ARGS...]
guest_boot() {
	local sock=$1 nvqs=$2 accel; shift 2
	accel=$(rxe_accel)
	local tag=${GUEST_TAG:-guest}
	RXE_CTL="$T_TMP/$tag-ctl.sock"
	echo "# guest: $accel, $(basename "$GUEST_KERNEL"), $("$GUEST_QEMU" --version | head -1)"
	"$GUEST_QEMU" -accel "$accel" -m 512M -smp 1 -nodefaults -display none -serial stdio \
		-no-reboot -object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
		-kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
		-append "console=ttyS0 panic=-1 no_timer_check" \
		-chardev socket,id=rd,path="$sock" \
		-device vhost-user-device-pci,chardev=rd,virtio-id=42,num_vqs="$nvqs",config_size=128,vq_size=1024 \
		-device virtio-serial-pci,vectors=0 \
		-chardev socket,id=ctl,path="$RXE_CTL",server=on,wait=off \
		-device virtserialport,chardev=ctl,name=ctl \
		"$@" >"$T_TMP/$tag-console.log" 2>&1 </dev/null &
	RXE_PID=$!
	# wait for the guest's ready line, or for QEMU to exit (polled)
	rxe_chan ready 600 >/dev/null &
	local chan=$!
	while kill -0 "$chan" 2>/dev/null && kill -0 "$RXE_PID" 2>/dev/null; do
		sleep 0.2
	done
	kill -0 "$RXE_PID" 2>/dev/null || kill "$chan" 2>/dev/null
	wait "$chan" || {
		echo "# guest did not come up; console:"
		tail -n 30 "$T_TMP/$tag-console.log" | sed 's/^/#   /'
		return 1
	}
}

# perf_expect PROG: what a perftest / ibv_*_pingpong run prints when it
# worked: PERF_GFLAG (its option for GID 1), PERF_RE (the client's result
# line), PERF_SRE (the server's; empty for ib_read_lat, whose client alone
# reports).
perf_expect() {
	case "$1" in
	ibv_*) PERF_GFLAG="-g 1" PERF_RE='bytes in .* seconds' PERF_SRE=$PERF_RE ;;
	ib_read_lat) PERF_GFLAG="-x 1" PERF_RE='^ *[0-9]+ +[0-9]+ ' PERF_SRE='' ;;
	*) PERF_GFLAG="-x 1" PERF_RE='^ *[0-9]+ +[0-9]+ ' PERF_SRE=$PERF_RE ;;
	esac
}

# perf_verdict NAME PROG ARGS PEER CLIENT SERVER RC_C RC_S OUT SRV: the
# outcome of a pair run with perf_expect PROG: both sides exit 0, print
# their result lines, the server saw no invalid data and the client shows
# the server's GID (PEER: an extended regex of its forms; empty: not
# checked, a loopback pair). ok with the
# rates (CLIENT, SERVER: who ran each side), else not_ok with both tails.
perf_verdict() {
	local name=$1 prog=$2 args=$3 peer=$4 cli=$5 srv_who=$6 rc_c=$7 rc_s=$8 out=$9 srv=${10}
	if [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] && grep -Eq "$PERF_RE" <<<"$out" &&
	   grep -Eq "$PERF_SRE" <<<"$srv" && ! grep -q 'invalid data' <<<"$srv" &&
	   { [ -z "$peer" ] || grep -Eq "GID.*($peer)" <<<"$out"; }; then
		ok "$name"
		case "$prog" in
		ibv_*) echo "# $name ($prog $args): $cli $(grep -o '[0-9.]* Mbit/sec' <<<"$out"), $srv_who $(grep -o '[0-9.]* Mbit/sec' <<<"$srv")" ;;
		*) echo "# $name ($prog $args), $cli: $(grep -E "$PERF_RE" <<<"$out" | tr -s ' \t' ' ')" ;;
		esac
	else
		not_ok "$name" "$cli rc=$rc_c $srv_who rc=$rc_s: $(tail -3 <<<"$out" | tr '\n' ' ') / $(tail -4 <<<"$srv" | tr '\n' ' ')"
	fi
}

# guest_setup DAEMON_ARGS...: the guest's parts (test "prepare") and the
# daemon d started with DAEMON_ARGS (daemon_lib.bash); the test ends here
# (t_done) if either fails.
guest_setup() {
	if guest_prepare; then
		ok prepare
	else
		not_ok prepare "QEMU, modules or guest image could not be built"
		t_done
	fi
	if ! d_start d "$@"; then
		not_ok start "$(tail -5 "$T_TMP/d.log")"
		t_done
	fi
}
