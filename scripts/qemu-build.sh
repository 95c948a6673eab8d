#!/usr/bin/env bash
# Builds the QEMU that exposes vrdma's virtio-rdma device to a guest and
# prints the path of its qemu-system-x86_64.
#
# QEMU 10 from Debian's bookworm-backports source package (fetched through a
# private apt list: the system's apt sources are not changed), with
# dist/qemu/*.patch applied (the generic vhost-user-device made creatable),
# only the x86_64 system emulator and the features a vhost-user guest needs.
# Installed under $VRDMA_QEMU_CACHE (default /var/cache/vrdma) in
# qemu-<version>-<patch hash>-r<recipe>; a second run, or a concurrent one,
# reuses it.
#
# usage: scripts/qemu-build.sh [--update]
#   --update   refresh the private bookworm-backports lists first (otherwise
#              they are fetched only once)
# env: VRDMA_QEMU_CACHE  cache root; VRDMA_QEMU_JOBS  make -j (default 2)
set -eu
set -o pipefail

# Version of the build recipe below: bump when the configure line changes.
QEMU_RECIPE=1
SUITE=bookworm-backports
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

here=$(cd "$(dirname "$0")/.." && pwd)
root=${VRDMA_QEMU_CACHE:-/var/cache/vrdma}
jobs=${VRDMA_QEMU_JOBS:-2}
apt_dir=$root/qemu-apt
update=0
[ "${1:-}" = --update ] && update=1

say() { echo "qemu-build: $*" >&2; }
die() { say "$*"; exit 1; }
# (set -e ends the script at a failed command: say which)
trap 'say "line $LINENO: a command failed (status $?)"' ERR

"$here/scripts/deps.sh" qemu >&2 || die "build dependencies missing (scripts/deps.sh qemu)"
mkdir -p "$apt_dir/lists/partial" || die "cannot create $apt_dir"
exec 8>"$root/qemu.lock"
flock 8

apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Get::List-Cleanup=0
	-o APT::Sandbox::User=root) # private directories: no _apt sandbox
if [ ! -s "$apt_dir/sources.list" ] || [ $update -eq 1 ] ||
	! ls "$apt_dir"/lists/*Sources* >/dev/null 2>&1; then
	mkdir -p "$apt_dir/cache/archives/partial"
	cat >"$apt_dir/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR $SUITE main
deb-src [signed-by=$KEYRING] $MIRROR $SUITE main
EOF
	apt-get -qq "${apt_opts[@]}" update >&2 || die "apt-get update of the private $SUITE lists failed"
fi

# The source package's version and its upstream tarball (name, sha256).
src=$(apt-cache "${apt_opts[@]}" showsrc qemu 2>/dev/null) || die "no qemu source in $SUITE"
# (here-strings, not pipes: awk leaving early would end the writer with
# SIGPIPE, and pipefail with set -e would end this script without a word)
version=$(awk '/^Version:/ { print $2; exit }' <<<"$src")
orig=$(awk '/^Checksums-Sha256:/ { f = 1; next } /^[A-Z]/ { f = 0 } f && $3 ~ /orig\.tar\./ { print $1, $3; exit }' <<<"$src")
[ -n "$version" ] && [ -n "$orig" ] || die "cannot read qemu's version or tarball from the $SUITE Sources"
orig_sha=${orig%% *}
orig_name=${orig#* }
case ${version#*:} in
1[0-9].*) ;;
*) die "qemu $version in $SUITE: QEMU 10 or later is needed" ;;
esac

patches=$(ls "$here"/dist/qemu/*.patch)
phash=$(cat $patches | sha256sum | cut -c1-12)
key="qemu-${version#*:}-$phash-r$QEMU_RECIPE"
key=${key//[^A-Za-z0-9._-]/_}
dest=$root/$key
if [ -x "$dest/bin/qemu-system-x86_64" ]; then
	echo "$dest/bin/qemu-system-x86_64"
	exit 0
fi

# Meson: QEMU 10 needs >= 1.5 (and pycotap) and Debian's source drops the
# bundled wheels; bookworm-backports' packages are used from unpacked .debs
# (not installed).
work=$(mktemp -d "$root/qemu-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get -qq "${apt_opts[@]}" download meson/$SUITE python3-pycotap/$SUITE >&2) ||
	die "cannot download meson and python3-pycotap from $SUITE"
for d in "$work"/*.deb; do dpkg-deb -x "$d" "$work/py"; done

tarball=$apt_dir/$orig_name
if [ ! -s "$tarball" ] || ! echo "$orig_sha  $tarball" | sha256sum -c --quiet >/dev/null 2>&1; then
	rm -f "$tarball"
	# apt-get source verifies what it fetches; the .dsc may lag behind the
	# mirror, so only the upstream tarball (checked below) is required.
	(cd "$apt_dir" && apt-get -qq "${apt_opts[@]}" source --download-only "qemu=$version" >/dev/null 2>&1) || true
fi
echo "$orig_sha  $tarball" | sha256sum -c --quiet >/dev/null 2>&1 || die "$orig_name missing or its sha256 differs"

say "building $key (QEMU $version; about 20-60 min on 2 shared CPUs)"
start=$(date +%s)
tar -xJf "$tarball" -C "$work"
srcdir=$(echo "$work"/qemu-*/)
for p in $patches; do
	patch -d "$srcdir" -p1 --quiet <"$p" || die "patch $(basename "$p") does not apply"
done
# Debian's source drops the EDK2 images that QEMU's build unpacks for x86:
# empty stand-ins (nothing is installed with --disable-install-blobs).
for f in $(sed -n "s/^ *'\(edk2-[a-z0-9_-]*\.fd\)',\$/\1/p" "$srcdir/pc-bios/meson.build"); do
	[ -e "$srcdir/pc-bios/$f.bz2" ] || bzip2 </dev/null >"$srcdir/pc-bios/$f.bz2"
done
mkdir "$work/build"
cd "$work/build"
export PYTHONPATH="$work/py/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$work/py/usr/bin:$PATH"
# Only the x86_64 system emulator; every optional feature off except the
# accelerators and the vhost(-user) front ends.
nice -n 19 "$srcdir/configure" --prefix="$dest" --python=/usr/bin/python3 --target-list=x86_64-softmmu \
	--without-default-features --enable-tcg --enable-kvm --enable-vhost-user \
	--enable-vhost-net --enable-vhost-kernel --disable-docs --disable-tools \
	--disable-guest-agent --disable-werror --disable-install-blobs \
	>"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log" >&2; die "configure failed"; }
# Only the emulator: the default target also builds QEMU's own tests.
nice -n 19 make -j"$jobs" qemu-system-x86_64 >"$work/make.log" 2>&1 ||
	{ tail -40 "$work/make.log" >&2; die "make failed"; }
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp/bin" "$dest.tmp/share/qemu"
cp qemu-system-x86_64 "$dest.tmp/bin/"
# Debian's source has no firmware blobs: SeaBIOS from Debian's seabios, the
# option ROMs (booting -kernel) from Debian's qemu-system-data; their
# interfaces (fw_cfg) are stable across QEMU versions.
for f in /usr/share/seabios/bios-256k.bin /usr/share/seabios/vgabios-stdvga.bin \
	/usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/linuxboot.bin \
	/usr/share/qemu/multiboot_dma.bin /usr/share/qemu/pvh.bin /usr/share/qemu/kvmvapic.bin; do
	ln -s "$f" "$dest.tmp/share/qemu/"
done
echo "QEMU $version, patches $phash, recipe $QEMU_RECIPE, built in $(($(date +%s) - start)) s" >"$dest.tmp/BUILD-INFO"
mv "$dest.tmp" "$dest"
say "built in $(($(date +%s) - start)) s"
echo "$dest/bin/qemu-system-x86_64"
