package bins

import (
	"github.com/kubernix/kubernix/pkg/release"
)

const makeBins = "run `make bins` in the kubernix source tree (builds it into _output/bin), `make install`, or pass --bundle-dir or --bin-dir"

// Required lists the binaries a cluster of rel needs, each with the version
// it must print: rel's Kubernetes version for the Kubernetes binaries, its
// containerd and registry versions for those.
func Required(rel release.Release) []Binary {
	k8s, ctrd := rel.Kubernetes, rel.Containerd
	kube := func(name string) Binary {
		return Binary{Name: name, VersionArgs: []string{"--version"}, Want: "Kubernetes " + k8s, Hint: makeBins}
	}
	return []Binary{
		{Name: "etcd", VersionArgs: []string{"--version"}, Want: "etcd Version: 3.", Hint: makeBins},
		kube("kube-apiserver"),
		kube("kube-controller-manager"),
		kube("kube-scheduler"),
		kube("kubelet"),
		kube("kube-proxy"),
		{Name: "kubectl", VersionArgs: []string{"version", "--client"}, Want: k8s, Hint: makeBins},
		{Name: "containerd", VersionArgs: []string{"--version"}, Want: ctrd, Hint: makeBins},
		{Name: "containerd-shim-runc-v2", VersionArgs: []string{"-v"}, Want: ctrd, Hint: makeBins},
		{Name: "runc", VersionArgs: []string{"--version"}, Hint: "apt-get install runc"},
		// The local registry (pkg/components/registry); --registry-port 0 runs none.
		{Name: "registry", VersionArgs: []string{"--version"}, Want: rel.Registry, Hint: makeBins},
		{Name: "crictl", VersionArgs: []string{"--version"}, Optional: true, Hint: makeBins},
		{Name: "crun", VersionArgs: []string{"--version"}, Optional: true, Hint: "apt-get install crun (optional: runc is used otherwise)"},
		{Name: "iptables", VersionArgs: []string{"--version"}, Hint: "apt-get install iptables"},
		{Name: "unshare", VersionArgs: []string{"--version"}, Hint: "apt-get install util-linux"},
		{Name: "nsenter", VersionArgs: []string{"--version"}, Hint: "apt-get install util-linux"},
		{Name: "ip", VersionArgs: []string{"-V"}, Hint: "apt-get install iproute2"},
		{Name: "nft", VersionArgs: []string{"--version"}, Hint: "apt-get install nftables (kube-proxy runs in nftables mode)"},
		// Our pause program (images/pause): it also holds each node
		// sandbox's namespaces, in a fraction of kubernix's memory. It has
		// no version to print: it would block.
		{Name: "pause", Optional: true, Hint: makeBins},
	}
}

// CNIPlugins are the CNI plugin executables kubernix's CNI config uses.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// CNIDirs are searched, in order, for the CNI plugins; Debian's
// containernetworking-plugins installs them into /usr/lib/cni.
var CNIDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Rootless lists the binaries rootless mode needs besides Required, with
// how to install them on Debian and Ubuntu, and on Fedora.
func Rootless() []Binary {
	return []Binary{
		{Name: "rootlesskit", VersionArgs: []string{"--version"},
			Hint: "Debian/Ubuntu: apt-get install rootlesskit; Fedora: dnf install rootlesskit"},
		{Name: "slirp4netns", VersionArgs: []string{"--version"},
			Hint: "Debian/Ubuntu: apt-get install slirp4netns; Fedora: dnf install slirp4netns"},
		{Name: "newuidmap", // prints no version
			Hint: "Debian/Ubuntu: apt-get install uidmap; Fedora: dnf install shadow-utils"},
		{Name: "newgidmap",
			Hint: "Debian/Ubuntu: apt-get install uidmap; Fedora: dnf install shadow-utils"},
	}
}
