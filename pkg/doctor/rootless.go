package doctor

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/kubernix/kubernix/pkg/rootless"
	"github.com/kubernix/kubernix/pkg/sysctl"
)

// Mode is how a cluster runs for the process that checks: who it is and
// in which user namespace.
type Mode string

// Modes of DetectMode.
const (
	// ModeRoot: root in the host's user namespace; the components run as root.
	ModeRoot Mode = "root"
	// ModeRootless: an ordinary user; `up` re-executes itself under rootlesskit.
	ModeRootless Mode = "rootless"
	// ModeRootlessChild: root of a user namespace (rootlesskit's), where a
	// rootless cluster's components run.
	ModeRootlessChild Mode = "rootless-child"
)

// DetectMode returns the mode of the calling process.
func DetectMode() Mode {
	switch {
	case os.Geteuid() != 0:
		return ModeRootless
	case rootless.InUserNamespace():
		return ModeRootlessChild
	}
	return ModeRoot
}

// Snapshotters Facts.Snapshotter names (containerd's built-in ones).
const (
	SnapshotterOverlayfs = "overlayfs"
	SnapshotterNative    = "native"
)

// Fixes for the rootless prerequisites, for Debian, Ubuntu and Fedora.
const (
	fixUserNS = "as root: sysctl -w user.max_user_namespaces=28633 (all distributions); " +
		"older Debian kernels also need sysctl -w kernel.unprivileged_userns_clone=1; " +
		"Ubuntu 23.10 and later restrict them by AppArmor: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, " +
		"or an AppArmor profile allowing userns for rootlesskit; persist in /etc/sysctl.d/"
	fixTun = "as root: chmod 0666 /dev/net/tun, or setfacl -m u:%s:rw /dev/net/tun " +
		"(persist with a udev rule: KERNEL==\"tun\", MODE=\"0666\"); if it is missing: modprobe tun"
	fixSubIDs = "as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s " +
		"(Debian, Ubuntu and Fedora alike; or add the line %s:100000:65536 to /etc/subuid and /etc/subgid), " +
		"choosing a range no other user has"
	fixIDMap = "newuidmap and newgidmap must be setuid root or have file capabilities: " +
		"Debian/Ubuntu: apt-get install --reinstall uidmap; Fedora: dnf reinstall shadow-utils"
	fixDelegation = "with systemd and cgroup v2 (Debian, Ubuntu, Fedora): as root, " +
		"printf '[Service]\\nDelegate=yes\\n' > /etc/systemd/system/user@.service.d/delegate.conf " +
		"(mkdir the dir first), systemctl daemon-reload, and log in again; " +
		"on cgroup v1 or without systemd: as root, for each hierarchy H under /sys/fs/cgroup: " +
		"mkdir H/kubernix-%d && chown -R %s H/kubernix-%d (and copy cpuset.cpus and cpuset.mems from the parent); " +
		"or name another delegated cgroup with --cgroup-parent"
)

// checkRootless checks, as the user, what rootless mode needs of the host.
func checkRootless(ctx context.Context, facts *Facts, opts Options) Report {
	g := &group{name: "rootless"}
	uid := os.Getuid()
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	checkOverlayFS(g)
	checkUserNamespaces(ctx, g, facts)
	checkSubIDs(g, name, uid)
	if err := rootless.CanOpenTun(); err != nil {
		g.add("/dev/net/tun", StatusFail, err.Error()+" (slirp4netns needs it)", fmt.Sprintf(fixTun, name))
	} else {
		g.add("/dev/net/tun", StatusOK, "can open", "")
	}
	for _, b := range []string{"newuidmap", "newgidmap"} {
		if p := facts.Paths[b]; p != "" && !rootless.HasFileCapsOrSetuid(p) {
			g.add(b+" privileges", StatusFail, p+" is neither setuid root nor has file capabilities", fixIDMap)
		}
	}
	checkCgroups(g, facts)
	parent, err := delegated(uid, opts.CgroupParent)
	if err != nil {
		g.add("cgroup delegation", StatusFail, err.Error(), fmt.Sprintf(fixDelegation, uid, name, uid))
	} else {
		facts.CgroupParent = parent
		g.add("cgroup delegation", StatusOK, parent+" is writable in every hierarchy", "")
	}
	return g.r
}

// checkUserNamespaces checks that the user can create a user namespace and
// mount overlayfs in it; without overlayfs facts.Snapshotter becomes native.
func checkUserNamespaces(ctx context.Context, g *group, facts *Facts) {
	detail := "unshare -U works"
	if v, err := sysctl.Get("user.max_user_namespaces"); err == nil {
		detail += ", user.max_user_namespaces=" + v
	}
	unshare := facts.Paths["unshare"]
	if unshare == "" {
		g.add("user namespaces", StatusFail, "cannot check: unshare not found", "apt-get install util-linux")
		return
	}
	overlay, err := rootless.ProbeUserNamespace(ctx, unshare)
	if err != nil {
		g.add("user namespaces", StatusFail, err.Error(), fixUserNS)
		return
	}
	g.add("user namespaces", StatusOK, detail, "")
	if overlay {
		g.add("overlayfs in userns", StatusOK, "can mount: containerd uses the overlayfs snapshotter", "")
	} else {
		facts.Snapshotter = SnapshotterNative
		g.add("overlayfs in userns", StatusInfo, "cannot mount overlay in a user namespace (kernel before 5.11)",
			"containerd uses the native snapshotter (slower: it copies layers); fuse-overlayfs is not supported")
	}
}

// checkSubIDs checks that the user (name, uid) has enough subordinate user
// and group IDs.
func checkSubIDs(g *group, name string, uid int) {
	for _, f := range []string{rootless.SubUIDFile, rootless.SubGIDFile} {
		ranges, err := rootless.SubIDs(f, name, uid)
		switch n := rootless.Total(ranges); {
		case err != nil:
			g.add(f, StatusFail, err.Error(), fmt.Sprintf(fixSubIDs, name, name))
		case n < rootless.MinSubIDs:
			g.add(f, StatusFail, fmt.Sprintf("%d subordinate IDs for %s, need at least %d", n, name, rootless.MinSubIDs), fmt.Sprintf(fixSubIDs, name, name))
		default:
			g.add(f, StatusOK, fmt.Sprintf("%d subordinate IDs for %s", n, name), "")
		}
	}
}

// delegated returns the cgroup subtree the user may use: want when set
// (and usable), else the detected one.
func delegated(uid int, want string) (string, error) {
	if want == "" {
		return rootless.DelegatedCgroup(uid)
	}
	return want, rootless.UsableCgroup(want)
}
