package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/process"
)

// EnsureCgroup creates a node's cgroup root (e.g. "/kubernix/c/node-0",
// Plan.CgroupRoot) in every cgroup hierarchy of the host, before the
// node's sandbox starts in it (cgroup.Ensure). Errors are those of the
// cgroup file system.
func EnsureCgroup(root string) error { return cgroup.Ensure(root) }

// MountCgroupControllers mounts the cgroup v1 controllers the kernel has
// enabled but no hierarchy of layout mounts (layout.Unmounted), so that
// runc finds them and container stats are not 0. It does nothing on a
// cgroup v2 host. It returns the controllers it mounted; the error joins
// those it could not mount.
func MountCgroupControllers(layout cgroup.Layout) ([]string, error) {
	if layout.Mode == cgroup.V2 || len(layout.Unmounted) == 0 {
		return nil, nil
	}
	return cgroup.MountControllers(layout.Unmounted)
}

// Orphans lists the PIDs, sorted, of a node's processes that outlived it:
// containerd shims started with -address containerdSocket, the node's
// containerd socket, and every process in the node's cgroups at
// cgroupRoot. Errors are those of reading /proc and the cgroup file
// system; the PIDs found are returned with them.
func Orphans(containerdSocket, cgroupRoot string) ([]int, error) {
	shims, err := process.WithArgs("-address", containerdSocket)
	if err != nil {
		return nil, err
	}
	inCgroups, err := cgroup.PIDs(cgroupRoot)
	pids := append(shims, inCgroups...)
	slices.Sort(pids)
	return slices.Compact(pids), err
}

// RemoveHostResources removes what a node made on the host outside its
// sandbox once its processes are gone: its cgroups at cgroupRoot in every
// hierarchy and the mount points MakeMountPoints recorded in
// mountPointsRecord (the mounts on them went with the sandbox). Errors are
// joined; both are attempted.
func RemoveHostResources(cgroupRoot, mountPointsRecord string) error {
	cgErr := cgroup.Remove(cgroupRoot)
	return errors.Join(cgErr, RemoveMountPoints(mountPointsRecord))
}

// RemoveCgroupParent removes the cgroup parent of a cluster's nodes
// (e.g. "/kubernix/c") in every hierarchy where it is empty; a parent
// another cluster still uses stays.
func RemoveCgroupParent(parent string) { cgroup.RemoveEmpty(parent) }

// HostLeftovers describes what of node name is still on the host outside
// its sandbox, one line each: its cgroups at cgroupRoot and the mount
// points mountPointsRecord lists that still exist. Empty after
// RemoveHostResources.
func HostLeftovers(name, cgroupRoot, mountPointsRecord string) []string {
	var out []string
	cgs, _ := cgroup.Existing(cgroupRoot)
	for _, cg := range cgs {
		out = append(out, "cgroup "+cg)
	}
	for _, p := range MountPointsLeft(mountPointsRecord) {
		out = append(out, fmt.Sprintf("mount point %s of node %s", p, name))
	}
	return out
}
