package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/util/retry"
)

// Mounts lists the mount points of every cgroup hierarchy (v1
// hierarchies and the cgroup2 mount), in /proc/self/mountinfo order (parsed,
// and octal escapes such as \040 undone, by moby/sys/mountinfo).
func Mounts() ([]string, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("list cgroup mounts: %w", err)
	}
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// Ensure creates cgroup path (e.g. "/kubernix/node-0") and its parents
// in every cgroup hierarchy, copying cpuset.cpus and cpuset.mems from the
// parent in the cpuset hierarchy, where a new cgroup starts empty and could
// hold no task. Existing cgroups are left as they are. Another cluster's
// down may remove a shared parent (RemoveEmpty("/kubernix")) between its
// check and the child's mkdir, which then fails with ENOENT: the path is
// made again from its top (client-go's retry.OnError, DefaultRetry).
func Ensure(path string) error {
	mounts, err := Mounts()
	if err != nil {
		return err
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for _, m := range mounts {
		if err := ensureRetrying(m, parts, os.Mkdir); err != nil {
			return err
		}
	}
	return nil
}

// ensureRetrying is ensureIn, made again from root while a mkdir fails
// because a parent went meanwhile (parentRemoved), up to DefaultRetry's
// five tries; the last error is returned.
func ensureRetrying(root string, parts []string, mkdir func(string, os.FileMode) error) error {
	return retry.OnError(retry.DefaultRetry, parentRemoved, func() error { return ensureIn(root, parts, mkdir) })
}

// parentRemoved says whether err is a mkdir's ENOENT: the parent was
// removed meanwhile (or its hierarchy is gone, which the retries end).
func parentRemoved(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// ensureIn creates root/parts[0]/parts[1]/… with mkdir, each missing one
// with the cpuset.cpus and cpuset.mems of its parent where it has them.
func ensureIn(root string, parts []string, mkdir func(string, os.FileMode) error) error {
	dir := root
	for _, part := range parts {
		parent := dir
		dir = filepath.Join(dir, part)
		if err := mkdir(dir, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("set %s of cgroup %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// Remove removes cgroup path and everything below it in every
// hierarchy, deepest first. Layout that still hold tasks cannot be removed;
// their errors are joined. A missing cgroup is not an error.
func Remove(path string) error {
	mounts, err := Mounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		root := filepath.Join(m, strings.Trim(path, "/"))
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Existing lists the hierarchies where cgroup path exists.
func Existing(path string) ([]string, error) {
	mounts, err := Mounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		p := filepath.Join(m, strings.Trim(path, "/"))
		if fileinfo.Exists(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// PIDs lists, sorted and without duplicates, the PIDs in the
// cgroup.procs files of cgroup path (e.g. "/kubernix/node-0") and every
// cgroup below it, in every hierarchy where it exists (Existing). A
// missing cgroup has no PIDs; files that vanish or cannot be read while
// walking (a cgroup removed meanwhile) are skipped.
func PIDs(path string) ([]int, error) {
	dirs, err := Existing(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || de.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// RemoveEmpty removes cgroup path (not what is below it) in every
// hierarchy where it is empty; where it still has children or tasks, or
// is missing, it is left and nothing is reported.
func RemoveEmpty(path string) {
	mounts, _ := Mounts()
	for _, m := range mounts {
		_ = unix.Rmdir(filepath.Join(m, strings.Trim(path, "/")))
	}
}

// MountControllers mounts each named v1 controller as its own hierarchy at
// /sys/fs/cgroup/<name>, as on a systemd host, so runc and cAdvisor find
// it. It returns the controllers it mounted; failures (e.g. a controller
// bound to the cgroup2 hierarchy) are joined in the error and skipped.
func MountControllers(names []string) ([]string, error) {
	var done []string
	var errs []error
	for _, n := range names {
		dir := filepath.Join("/sys/fs/cgroup", n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := unix.Mount("cgroup", dir, "cgroup", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, n); err != nil {
			_ = unix.Rmdir(dir)
			errs = append(errs, fmt.Errorf("mount cgroup controller %s: %w", n, err))
			continue
		}
		done = append(done, n)
	}
	return done, errors.Join(errs...)
}

// Writable reports whether the caller may create cgroups in the cgroup
// directory dir and move processes into it.
func Writable(dir string) bool {
	return unix.Access(dir, unix.W_OK|unix.X_OK) == nil && unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) == nil
}
