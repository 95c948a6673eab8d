# Linux rxe as a RoCE v2 peer: Debian's kernel (linux-image-amd64, which
# ships rdma_rxe) booted in QEMU with its virtio-net NIC on a vhost-user port
# of a vhost-user-rdma daemon (that port with roce=off), rxe0 created on it.
# Source after tests/lib.sh and netns_lib.bash. Not a test itself.
#
#   rxe_prepare            kernel + initramfs in $RXE_CACHE (built once per
#                          package versions, kept outside the clone)
#   rxe_boot SOCK MAC IP/PREFIX [QEMU_ARGS...]
#                          boot the guest on vhost-user socket SOCK, its eth0
#                          with MAC and IP; returns once rxe0 is up
#   rxe_cmd CMD            run a shell command line in the guest (output on
#                          stdout, exit status returned); bounded by
#                          RXE_CMD_TIMEOUT seconds
#   rxe_gid_index IP       the guest's RoCE v2 GID index of IP (stdout)
#   rxe_stop               power the guest off (SIGKILL if it hangs)
#
# The guest has the host's own verbs programs (ibverbs-utils, perftest),
# rdma_cm programs (rdmacm-utils: rping, ucmatose, udaddy; the kernel's
# rdma_cm through rdma_ucm), rdma (iproute2), libibverbs with the rxe
# provider, and busybox. Its command channel is a virtio-serial port (reliable, unlike a second UART): every
# command's output ends with a line "@@RC <status>".
#
# The kernel skips its IO-APIC timer check (no_timer_check): under TCG on a
# loaded host the check can miss its ticks and panic the boot.
#
# Acceleration: KVM when /dev/kvm opens, else TCG (VRDMA_RXE_ACCEL=tcg|kvm
# forces one). Under TCG QEMU 7.2 needs MSI-X off on a vhost-user
# virtio-net-pci (vectors=0), so it is always off.

RXE_CACHE_ROOT=${VRDMA_RXE_CACHE:-/var/cache/vrdma}
RXE_CMD_TIMEOUT=${RXE_CMD_TIMEOUT:-120}
RXE_QEMU=${VRDMA_QEMU:-qemu-system-x86_64}
RXE_PID=""
RXE_CTL=""
RXE_KERNEL=""
RXE_INITRD=""
# Version of the guest image recipe below: bump when it changes.
RXE_RECIPE=10

# Modules the guest loads (with their dependencies, in dependency order).
RXE_MODULES="virtio_pci virtio_net virtio_console crc32_generic rdma_rxe rdma_ucm"
# Modules copied too but loaded by the tests that need them (the order of
# those not already loaded is /etc/modules.extra): NVMe over RDMA.
RXE_EXTRA_MODULES="configfs brd nvmet nvmet_rdma nvme_rdma"
# Programs copied into the guest with every library they load.
RXE_PROGS="ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_devinfo
ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_send_lat ib_read_lat
ib_atomic_lat rdma rping ucmatose udaddy rstream"

rxe_pkg_version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null; }

# rxe_kernel_pkg: the linux-image-6.x-amd64 package linux-image-amd64 names.
rxe_kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}

# rxe_mod_deps KO: the modules KO depends on (its .modinfo "depends=").
rxe_mod_deps() {
	tr '\0' '\n' <"$1" | sed -n 's/^depends=//p' | head -1 | tr ',' ' '
}

# rxe_build DIR KPKG: build vmlinuz and initrd.gz into DIR.
rxe_build() {
	local out=$1 kpkg=$2 w kdir kver root m p lib todo done_mods order=""
	w=$(mktemp -d /tmp/vrdma-rxe-build.XXXXXX) || return 1
	(cd "$w" && apt-get download -qq "$kpkg" >/dev/null 2>"$w/apt.err") || {
		echo "# apt-get download $kpkg failed: $(tail -2 "$w/apt.err")"
		rm -rf "$w"
		return 1
	}
	dpkg-deb -x "$w"/linux-image-*.deb "$w/x" || { rm -rf "$w"; return 1; }
	kver=$(ls "$w/x/lib/modules" | head -1)
	kdir="$w/x/lib/modules/$kver/kernel"
	root="$w/root"
	mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc/libibverbs.d,lib/modules,lib64,usr/lib/x86_64-linux-gnu/libibverbs}
	# Modules: depth-first over "depends=", loaded in that order.
	declare -A path_of=() seen=()
	while IFS= read -r p; do
		m=$(basename "$p" .ko)
		path_of[$m]=$p
		path_of[${m//-/_}]=$p
	done < <(find "$kdir" -name '*.ko')
	rxe_visit() {
		local mod=$1 d
		[ -n "${seen[$mod]:-}" ] && return 0
		seen[$mod]=1
		[ -n "${path_of[$mod]:-}" ] || return 0   # built in
		for d in $(rxe_mod_deps "${path_of[$mod]}"); do rxe_visit "$d"; done
		cp "${path_of[$mod]}" "$root/lib/modules/"
		order="$order $(basename "${path_of[$mod]}")"
	}
	for m in $RXE_MODULES; do rxe_visit "$m"; done
	echo "$order" >"$root/etc/modules.order"
	order=""
	for m in $RXE_EXTRA_MODULES; do rxe_visit "$m"; done
	echo "$order" >"$root/etc/modules.extra"
	# Programs and libraries (ldd, recursively through the copied ones).
	cp /bin/busybox "$root/bin/busybox"
	for p in $RXE_PROGS; do
		p=$(command -v "$p") && cp "$p" "$root/bin/"
	done
	cp /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so "$root/usr/lib/x86_64-linux-gnu/libibverbs/"
	# glibc loads libgcc_s at run time for pthread_cancel (rping's server)
	mkdir -p "$root/lib/x86_64-linux-gnu"
	cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$root/lib/x86_64-linux-gnu/"
	cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
	for p in "$root"/bin/* "$root"/usr/lib/x86_64-linux-gnu/libibverbs/*; do
		ldd "$p" 2>/dev/null | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
	done | sort -u | while read -r lib; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /etc/modules.order); do insmod /lib/modules/$m; done
ip=$(sed -n 's/.* rxe_ip=\([^ ]*\).*/\1/p' /proc/cmdline)
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
ip link set lo up
ip link set eth0 up
ip addr add "$ip" dev eth0
rdma link add rxe0 type rxe netdev eth0
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
# A read while the host side is not connected sees end of file: wait for the
# next connection (the host connects once per command). A command is one
# line of base64 (so it may span lines).
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
	chmod +x "$root/init"
	cp "$w/x/boot/vmlinuz-$kver" "$w/vmlinuz"
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$w/initrd.gz" || {
		rm -rf "$w"
		return 1
	}
	mkdir -p "$out.tmp.$$"
	mv "$w/vmlinuz" "$w/initrd.gz" "$out.tmp.$$/" && mv "$out.tmp.$$" "$out"
	rm -rf "$w" "$out.tmp.$$"
	[ -s "$out/initrd.gz" ]
}

# rxe_prepare: RXE_KERNEL / RXE_INITRD from the cache (built on a miss,
# under a lock so concurrent tests build it once).
rxe_prepare() {
	local kpkg key dir
	kpkg=$(rxe_kernel_pkg)
	[ -n "$kpkg" ] || { echo "# no linux-image-amd64 in apt's lists"; return 1; }
	key="$kpkg-$(apt-cache policy "$kpkg" | awk '/Candidate:/ { print $2 }')"
	key="$key-bb$(rxe_pkg_version busybox-static)-rdma$(rxe_pkg_version ibverbs-providers)"
	key="$key-pt$(rxe_pkg_version perftest)-cm$(rxe_pkg_version rdmacm-utils)-r$RXE_RECIPE"
	# and the recipe's text: two edits with the same number never share an image
	key="$key-$( { declare -f rxe_build; echo "$RXE_MODULES/$RXE_EXTRA_MODULES/$RXE_PROGS"; } |
		sha256sum | cut -c1-8)"
	key=${key//[^A-Za-z0-9._-]/_}
	dir="$RXE_CACHE_ROOT/rxe/$key"
	mkdir -p "$RXE_CACHE_ROOT/rxe" || return 1
	if [ ! -s "$dir/initrd.gz" ]; then
		(
			flock 9
			[ -s "$dir/initrd.gz" ] || rxe_build "$dir" "$kpkg"
		) 9>"$RXE_CACHE_ROOT/rxe/.lock" || return 1
	fi
	RXE_KERNEL="$dir/vmlinuz"
	RXE_INITRD="$dir/initrd.gz"
}

rxe_accel() {
	case "${VRDMA_RXE_ACCEL:-}" in
	kvm|tcg) echo "$VRDMA_RXE_ACCEL"; return ;;
	esac
	echo tcg
}

# rxe_chan: the command-channel client (python, reads until the marker).
rxe_chan() {
	/usr/bin/python3 - "$RXE_CTL" "$@" <<'PYEOF'
import base64, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + float(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
while True:
    try:
        s.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(125)
        time.sleep(0.05)
buf = b""
if mode == "cmd":
    s.sendall(base64.b64encode(sys.argv[4].encode()) + b"\n")
    marker = b"@@RC "
else:
    marker = b"@@READY"
while True:
    i = buf.find(marker)
    if i >= 0 and (mode != "cmd" or buf.find(b"\n", i) >= 0):
        break
    left = deadline - time.monotonic()
    if left <= 0:
        sys.stdout.write(buf.decode(errors="replace"))
        sys.exit(124)
    s.settimeout(left)
    try:
        d = s.recv(65536)
    except socket.timeout:
        continue
    if not d:
        sys.stdout.write(buf.decode(errors="replace"))
        sys.exit(125)
    buf += d
sys.stdout.write(buf[:i].decode(errors="replace"))
if mode == "cmd":
    sys.exit(int(buf[i + 5:buf.find(b"\n", i)]))
PYEOF
}

# rxe_boot SOCK MAC IP/PREFIX [QEMU_ARGS...]
rxe_boot() {
	local sock=$1 mac=$2 ip=$3 accel; shift 3
	accel=$(rxe_accel)
	RXE_CTL="$T_TMP/rxe-ctl.sock"
	echo "# rxe guest: $accel, $(basename "$RXE_KERNEL")"
	"$RXE_QEMU" -accel "$accel" -m 512M -smp 1 -nographic -display none -no-reboot \
		-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
		-kernel "$RXE_KERNEL" -initrd "$RXE_INITRD" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check rxe_ip=$ip" \
		-chardev socket,id=n0c,path="$sock" \
		-netdev vhost-user,chardev=n0c,id=n0 \
		-device virtio-net-pci,netdev=n0,mac="$mac",vectors=0 \
		-device virtio-serial-pci,vectors=0 \
		-chardev socket,id=ctl,path="$RXE_CTL",server=on,wait=off \
		-device virtserialport,chardev=ctl,name=ctl \
		"$@" >"$T_TMP/rxe-console.log" 2>&1 </dev/null &
	RXE_PID=$!
	rxe_chan ready 180 >/dev/null || {
		echo "# rxe guest did not come up; console:"
		tail -n 20 "$T_TMP/rxe-console.log" | sed 's/^/#   /'
		return 1
	}
}

rxe_cmd() {
	rxe_chan cmd "$RXE_CMD_TIMEOUT" "$1"
}

# rxe_gid_index IP: the guest's RoCE v2 GID index whose GID is ::ffff:IP.
rxe_gid_index() {
	rxe_cmd "cd /sys/class/infiniband/rxe0/ports/1; for i in \$(ls gids); do
		[ \"\$(cat gid_attrs/types/\$i 2>/dev/null)\" = 'RoCE v2' ] &&
		grep -qi '0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${1//./ })' gids/\$i &&
		{ echo \$i; break; }; done" | head -1 | tr -d '\r' | grep -E '^[0-9]+$'
}

rxe_stop() {
	[ -n "$RXE_PID" ] || return 0
	rxe_chan cmd 10 "poweroff -f" >/dev/null 2>&1
	for _ in $(seq 1 100); do kill -0 "$RXE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$RXE_PID" 2>/dev/null
	wait "$RXE_PID" 2>/dev/null
	RXE_PID=""
}
