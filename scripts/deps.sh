#!/usr/bin/env bash
# Installs the Debian 12 packages vrdma needs, quietly and only when missing.
# usage: scripts/deps.sh build|demo|test|qemu
set -eu
set -o pipefail
# QEMU 10 for guests (scripts/qemu-build.sh; meson comes from bookworm-backports).
qemu_pkgs="gcc make ninja-build python3-venv flex bison pkg-config libglib2.0-dev patch xz-utils bzip2 seabios qemu-system-data"
build_pkgs="gcc make clang libclang-rt-14-dev zlib1g-dev libisal-dev libibverbs-dev librdmacm-dev libpcap-dev libseccomp-dev libxdp-dev libbpf-dev pkg-config"
demo_pkgs="$build_pkgs ibverbs-utils perftest iproute2"
test_pkgs="$demo_pkgs man-db groff-base systemd python3 python3-scapy tshark qemu-system-x86 ipxe-qemu dpdk dpdk-dev procps ucx-utils python3-pyverbs busybox-static ibverbs-providers rdmacm-utils netcat-openbsd devscripts libfabric-bin fio qperf openmpi-bin libopenmpi-dev linux-headers-amd64 $qemu_pkgs"

case "${1:-build}" in
build) want=$build_pkgs ;;
demo) want=$demo_pkgs ;;
test) want=$test_pkgs ;;
qemu) want=$qemu_pkgs ;;
*) echo "deps.sh: unknown set $1" >&2; exit 2 ;;
esac

missing=()
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Other installs may run at the same time: one apt at a time.
exec 9>/tmp/vrdma-apt.lock
flock 9
apt-get update -qq >/dev/null
# tshark asks whether non-root users may capture; answer no, quietly.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
# (debconf's note that apt-utils is missing, on a minimal system, is noise)
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
	2> >(grep -v '^debconf: delaying package configuration' >&2)
