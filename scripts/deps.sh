#!/usr/bin/env bash
# Installs the Debian 12 packages vrdma needs, quietly and only when missing.
# usage: scripts/deps.sh build|demo|test
set -eu
set -o pipefail
build_pkgs="gcc make clang libclang-rt-14-dev zlib1g-dev libisal-dev libibverbs-dev librdmacm-dev libpcap-dev libseccomp-dev pkg-config"
demo_pkgs="$build_pkgs ibverbs-utils perftest iproute2"
test_pkgs="$demo_pkgs man-db groff-base systemd python3 python3-scapy tshark qemu-system-x86 ipxe-qemu dpdk dpdk-dev procps ucx-utils python3-pyverbs busybox-static ibverbs-providers rdmacm-utils devscripts libfabric-bin fio"

case "${1:-build}" in
build) want=$build_pkgs ;;
demo) want=$demo_pkgs ;;
test) want=$test_pkgs ;;
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
apt-get update -qq >/dev/null
# tshark asks whether non-root users may capture; answer no, quietly.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
