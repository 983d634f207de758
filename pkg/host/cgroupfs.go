package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupMounts lists the mount points of every cgroup hierarchy (v1
// hierarchies and the cgroup2 mount), from /proc/self/mountinfo.
func CgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) >= 5 && len(qf) >= 1 && (qf[0] == "cgroup" || qf[0] == "cgroup2") {
			out = append(out, unescapeMount(pf[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// EnsureCgroup creates cgroup path (e.g. "/kubernix/node-0") and its parents
// in every cgroup hierarchy, copying cpuset.cpus and cpuset.mems from the
// parent in the cpuset hierarchy, where a new cgroup starts empty and could
// hold no task. Existing cgroups are left as they are.
func EnsureCgroup(path string) error {
	mounts, err := CgroupMounts()
	if err != nil {
		return err
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for _, m := range mounts {
		dir := m
		for _, part := range parts {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil {
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
	}
	return nil
}

// RemoveCgroup removes cgroup path and everything below it in every
// hierarchy, deepest first. Cgroups that still hold tasks cannot be removed;
// their errors are joined. A missing cgroup is not an error.
func RemoveCgroup(path string) error {
	mounts, err := CgroupMounts()
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

// CgroupExists lists the hierarchies where cgroup path exists.
func CgroupExists(path string) ([]string, error) {
	mounts, err := CgroupMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		p := filepath.Join(m, strings.Trim(path, "/"))
		if Exists(p) {
			out = append(out, p)
		}
	}
	return out, nil
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
