#!/usr/bin/env bash
# Installs the Debian packages kubernix needs, skipping those already present.
# Idempotent; a warm run only queries dpkg.
set -euo pipefail

packages=(
	runc crun                       # OCI runtimes (containerd's runc v2 shim runs one)
	containernetworking-plugins     # CNI: bridge, host-local, loopback, portmap -> /usr/lib/cni
	nftables                        # nft: kube-proxy (nftables mode)
	iptables iproute2               # node networking (masquerade, CNI portmap)
	util-linux                      # nsenter, unshare, mount
	busybox-static                  # the shell tools of the built-in agnhost and busybox images
	zsh bash bind9-dnsutils bind9-host curl netcat-openbsd socat libc-bin
	                                # agnhost's sh and tools (dig, curl, nc, getent...), with their libraries
	rootlesskit slirp4netns uidmap  # rootless mode
	wget                            # GNU wget of the conformance busybox image (mkimage -set conformance)
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "missing Debian packages: ${missing[*]}" >&2
	echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
