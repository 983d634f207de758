// Package host inspects the machine kubernix runs on: kernel features,
// cgroup layout, capabilities and sysctls. `kubernix doctor` prints these
// facts and `kubernix up` renders component configs from them.
package host

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// CgroupMode is the cgroup hierarchy layout of the host.
type CgroupMode string

// Cgroup layouts, as systemd names them.
const (
	CgroupV1      CgroupMode = "v1"      // legacy: per-controller v1 hierarchies only
	CgroupHybrid  CgroupMode = "hybrid"  // v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified
	CgroupV2      CgroupMode = "v2"      // unified: /sys/fs/cgroup is cgroup2
	CgroupUnknown CgroupMode = "unknown" // /sys/fs/cgroup is missing or something else
)

// Cgroups describes the host's cgroup layout.
type Cgroups struct {
	Mode CgroupMode
	// Mounted lists the v1 controllers that have a mounted hierarchy, e.g. "cpu", "memory".
	Mounted []string
	// Unmounted lists controllers the kernel has enabled (/proc/cgroups) but no
	// v1 hierarchy mounts (v1 and hybrid only). runc then cannot find them and
	// container stats read 0.
	Unmounted []string
	// UnifiedControllers lists the controllers enabled in the cgroup2 hierarchy
	// (cgroup.controllers), hybrid and v2 only.
	UnifiedControllers []string
}

// DetectCgroups reads /proc/cgroups, /proc/self/mountinfo and statfs of /sys/fs/cgroup.
func DetectCgroups() (Cgroups, error) {
	var cg Cgroups
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		cg.Mode = CgroupUnknown
		return cg, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	unifiedDir := ""
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		cg.Mode, unifiedDir = CgroupV2, "/sys/fs/cgroup"
	case unix.TMPFS_MAGIC:
		cg.Mode = CgroupV1
		var ust unix.Statfs_t
		if unix.Statfs("/sys/fs/cgroup/unified", &ust) == nil && ust.Type == unix.CGROUP2_SUPER_MAGIC {
			cg.Mode, unifiedDir = CgroupHybrid, "/sys/fs/cgroup/unified"
		}
	default:
		cg.Mode = CgroupUnknown
		return cg, nil
	}
	if unifiedDir != "" {
		if b, err := os.ReadFile(unifiedDir + "/cgroup.controllers"); err == nil {
			cg.UnifiedControllers = strings.Fields(string(b))
		}
	}
	if cg.Mode == CgroupV2 {
		return cg, nil
	}
	// A v1 hierarchy's super block options name its controllers
	// ("rw,cpu,cpuacct").
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return cg, fmt.Errorf("list cgroup mounts: %w", err)
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		for _, opt := range strings.Split(m.VFSOptions, ",") {
			mounted[opt] = true
		}
	}
	enabled, err := enabledControllers()
	if err != nil {
		return cg, err
	}
	for _, c := range enabled {
		if mounted[c] {
			cg.Mounted = append(cg.Mounted, c)
		} else {
			cg.Unmounted = append(cg.Unmounted, c)
		}
	}
	return cg, nil
}

// enabledControllers lists the controllers /proc/cgroups marks enabled
// (parsed by prometheus/procfs).
func enabledControllers() ([]string, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	summaries, err := fs.CgroupSummarys()
	if err != nil {
		return nil, fmt.Errorf("read /proc/cgroups: %w", err)
	}
	var out []string
	for _, c := range summaries {
		if c.Enabled == 1 {
			out = append(out, c.SubsysName)
		}
	}
	return out, nil
}

// HasFilesystem reports whether the kernel supports the file system type
// (as listed in /proc/filesystems, e.g. "overlay").
func HasFilesystem(fstype string) (bool, error) {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[len(f)-1] == fstype {
			return true, nil
		}
	}
	return false, nil
}

// CanUnshareNet reports whether this process may create a network namespace.
// It unshares on a locked OS thread that is then discarded.
func CanUnshareNet() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is left locked: it exits with this goroutine, taking
		// the new namespace with it, and never runs other goroutines.
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	return <-errc
}

// HasCapability reports whether capability c (e.g. unix.CAP_SYS_RESOURCE) is
// in this process's effective set.
func HasCapability(c int) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0, nil
}

// Sysctl reads a sysctl by its dotted name, e.g. "net.ipv4.ip_forward".
func Sysctl(name string) (string, error) {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// SetSysctl writes a sysctl by its dotted name.
func SetSysctl(name, value string) error {
	err := os.WriteFile("/proc/sys/"+strings.ReplaceAll(name, ".", "/"), []byte(value), 0o644)
	if err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
