// Package rootless runs a kubernix cluster as an ordinary user: `kubernix
// up` re-executes itself under rootlesskit, which gives it a user
// namespace (the user is "root" there, mapped to the user's uid, and the
// user's /etc/subuid and /etc/subgid ranges above), a mount namespace, and
// a network namespace connected to the host by slirp4netns, with the
// apiserver's port published on the host's 127.0.0.1 by rootlesskit's
// builtin port driver. Everything of the cluster then runs inside.
//
// This package holds the pieces of that: the rootlesskit command line
// (Kit), the prerequisites (SubIDs, DelegatedCgroup), the tmpfs mounts the
// child makes before anything starts (PrepareMounts), and the OCI runtime
// wrapper that adapts containerd's bundles to the user namespace
// (RewriteBundle, behind `kubernix oci-runtime-wrap` and the
// crun-rootless.sh script from assets).
package rootless

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
)

// CopyUp are the host directories rootlesskit replaces by a writable tmpfs
// (of links to the originals) in the namespace: the components write below
// them (/etc/resolv.conf for slirp's DNS, /run/containerd, /run/netns,
// /var/lib/kubelet, /var/lib/cni, /var/log/pods...).
var CopyUp = []string{"/etc", "/run", "/var/lib", "/var/log"}

// Kit is a rootlesskit invocation.
type Kit struct {
	// Rootlesskit and Slirp4netns are the binaries' paths.
	Rootlesskit, Slirp4netns string
	// StateDir is rootlesskit's --state-dir; it must not exist or be empty,
	// and its sockets' paths (StateDir + "/api.sock"...) must stay under
	// 108 bytes (see StateDirFor).
	StateDir string
	// HostIP:HostPort on the host is forwarded to ChildIP:ChildPort in the
	// namespace (the apiserver).
	HostIP    netip.Addr
	HostPort  int
	ChildIP   netip.Addr
	ChildPort int
	// LoopbackPorts are further TCP ports forwarded from HostIP to the
	// namespace's own loopback (ChildLoopback) unchanged: the local
	// registry's, which only the host side then reaches, not the nodes'
	// and pods' namespaces; 0 entries are skipped.
	LoopbackPorts []int
	// Argv is the command run in the namespace.
	Argv []string
}

// ChildLoopback is the loopback address of rootlesskit's network
// namespace. Its builtin port driver dials a forwarded port from inside
// the namespace, so it reaches a listener there.
var ChildLoopback = netip.MustParseAddr("127.0.0.1")

// Args returns rootlesskit's argv (without the binary): slirp4netns
// networking without access to the host's loopback, the CopyUp dirs, the
// builtin port driver publishing the apiserver and LoopbackPorts, the
// state dir, then Argv.
func (k Kit) Args() []string {
	args := []string{
		"--net=slirp4netns", "--slirp4netns-binary=" + k.Slirp4netns,
		"--disable-host-loopback",
	}
	for _, d := range CopyUp {
		args = append(args, "--copy-up="+d)
	}
	args = append(args,
		"--port-driver=builtin",
		"--publish="+PortSpec(k.HostIP, k.HostPort, k.ChildIP, k.ChildPort),
	)
	for _, p := range k.LoopbackPorts {
		if p != 0 {
			args = append(args, "--publish="+PortSpec(k.HostIP, p, ChildLoopback, p))
		}
	}
	args = append(args,
		"--state-dir="+k.StateDir,
		"--",
	)
	return append(args, k.Argv...)
}

// Validate reports every problem with k at once.
func (k Kit) Validate() error {
	var errs []error
	for name, p := range map[string]string{"rootlesskit": k.Rootlesskit, "slirp4netns": k.Slirp4netns, "state dir": k.StateDir} {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s %q: not an absolute path", name, p))
		}
	}
	if len(k.StateDir)+len(longestStateFile) > maxSocketPath {
		errs = append(errs, fmt.Errorf("rootlesskit state dir %s: too long for its sockets (at most %d bytes)", k.StateDir, maxSocketPath-len(longestStateFile)))
	}
	if !k.HostIP.IsValid() || !k.ChildIP.IsValid() {
		errs = append(errs, errors.New("port forward: host and child IP must be set"))
	}
	if len(k.Argv) == 0 {
		errs = append(errs, errors.New("no command to run"))
	}
	return errors.Join(errs...)
}

// PortSpec is rootlesskit's --publish value forwarding TCP hostIP:hostPort
// to childIP:childPort ("<parent IP>:<parent port>:<child IP>:<child
// port>/tcp", rootlesskit ≥ 0.14).
func PortSpec(hostIP netip.Addr, hostPort int, childIP netip.Addr, childPort int) string {
	return netip.AddrPortFrom(hostIP, uint16(hostPort)).String() + ":" +
		netip.AddrPortFrom(childIP, uint16(childPort)).String() + "/tcp"
}

// maxSocketPath is the longest path a unix socket can be bound to.
const maxSocketPath = 107

// longestStateFile is the longest name rootlesskit binds a socket to in its
// state dir, with its slash.
const longestStateFile = "/.bp-ready.pipe"

// StateDirFor returns rootlesskit's state dir for a cluster whose state
// lives in stateDir: <stateDir>/rootlesskit, or, when that is too long for
// a socket path, a dir named after a hash of stateDir under tmpDir.
func StateDirFor(stateDir, tmpDir string, uid int) string {
	dir := filepath.Join(stateDir, "rootlesskit")
	if len(dir)+len(longestStateFile) <= maxSocketPath {
		return dir
	}
	return filepath.Join(tmpDir, "kubernix-"+strconv.Itoa(uid), shortHash(stateDir))
}
