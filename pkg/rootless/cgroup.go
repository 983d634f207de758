package rootless

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/prometheus/procfs"
)

// ErrNoDelegation is wrapped by DelegatedCgroup's error when the user may
// not manage a cgroup subtree in every hierarchy.
var ErrNoDelegation = errors.New("no cgroup subtree is delegated to the user")

// DefaultCgroupParent is the subtree an administrator delegates to the user
// with uid on a host without systemd delegation (see DelegationFix).
func DefaultCgroupParent(uid int) string { return "/kubernix-" + strconv.Itoa(uid) }

// DelegatedCgroup returns the cgroup path (the same in every hierarchy,
// v1 controllers and the cgroup2 mount) under which the user with uid may
// create the nodes' cgroups: the process's own cgroup when it is the same
// path in every hierarchy and writable in each (a systemd user session with
// Delegate=yes), else DefaultCgroupParent(uid) when it exists and is
// writable in each. The error wraps ErrNoDelegation and names the
// hierarchies that are missing or not writable.
func DelegatedCgroup(uid int) (string, error) {
	mounts, err := cgroup.Mounts()
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", fmt.Errorf("%w: no cgroup hierarchy is mounted", ErrNoDelegation)
	}
	if own, err := ownCgroup(); err == nil && own != "/" {
		if len(unwritable(mounts, own)) == 0 {
			return own, nil
		}
	}
	parent := DefaultCgroupParent(uid)
	if bad := unwritable(mounts, parent); len(bad) > 0 {
		return "", fmt.Errorf("%w: %s is missing or not writable in %s", ErrNoDelegation, parent, strings.Join(bad, ", "))
	}
	return parent, nil
}

// UsableCgroup returns nil when cgroup path (e.g. a --cgroup-parent)
// exists and is writable in every hierarchy, else an error wrapping
// ErrNoDelegation that names the hierarchies where it is not.
func UsableCgroup(path string) error {
	mounts, err := cgroup.Mounts()
	if err != nil {
		return err
	}
	if bad := unwritable(mounts, path); len(bad) > 0 {
		return fmt.Errorf("%w: %s is missing or not writable in %s", ErrNoDelegation, path, strings.Join(bad, ", "))
	}
	return nil
}

// unwritable lists the hierarchies (mount points) where cgroup path is
// missing or the caller may not create cgroups and move processes.
func unwritable(mounts []string, path string) []string {
	var bad []string
	for _, m := range mounts {
		if !cgroup.Writable(filepath.Join(m, strings.Trim(path, "/"))) {
			bad = append(bad, m)
		}
	}
	return bad
}

// ownCgroup returns the process's cgroup when it is the same path in every
// hierarchy (from /proc/self/cgroup, parsed by prometheus/procfs).
func ownCgroup() (string, error) {
	self, err := procfs.Self()
	if err != nil {
		return "", err
	}
	cgs, err := self.Cgroups()
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	return commonCgroup(cgs)
}

// commonCgroup returns the path all of cgs share, or an error naming two
// that differ, or that there are none.
func commonCgroup(cgs []procfs.Cgroup) (string, error) {
	path := ""
	for _, cg := range cgs {
		switch {
		case path == "":
			path = cg.Path
		case cg.Path != path:
			return "", fmt.Errorf("the process is in different cgroups per hierarchy (%s, %s)", path, cg.Path)
		}
	}
	if path == "" {
		return "", errors.New("no cgroup in /proc/self/cgroup")
	}
	return path, nil
}

// FillCpuset gives cgroup path in the cpuset hierarchy (if there is one)
// the CPUs and memory nodes of its nearest ancestor that has them, when its
// own are empty: a v1 cpuset cgroup created by chown-style delegation starts
// empty, and neither it nor any cgroup below it could hold a task. It
// reports whether it changed anything.
func FillCpuset(path string) (bool, error) {
	mounts, err := cgroup.Mounts()
	if err != nil {
		return false, err
	}
	changed := false
	for _, m := range mounts {
		dir := filepath.Join(m, strings.Trim(path, "/"))
		if !fileinfo.Exists(filepath.Join(dir, "cpuset.cpus")) {
			continue
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			own, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				return changed, err
			}
			if strings.TrimSpace(string(own)) != "" {
				continue
			}
			val := ""
			for p := filepath.Dir(dir); strings.HasPrefix(p, m) && val == ""; p = filepath.Dir(p) {
				b, err := os.ReadFile(filepath.Join(p, file))
				if err != nil {
					break
				}
				val = strings.TrimSpace(string(b))
				if p == m {
					break
				}
			}
			if val == "" {
				return changed, fmt.Errorf("%s of %s is empty and no parent has any", file, dir)
			}
			if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0o644); err != nil {
				return changed, fmt.Errorf("set %s of %s: %w", file, dir, err)
			}
			changed = true
		}
	}
	return changed, nil
}
