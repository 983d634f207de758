package cgroup

import (
	"fmt"
	"os"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Mode is the cgroup hierarchy layout of the host.
type Mode string

// Cgroup layouts, as systemd names them.
const (
	V1      Mode = "v1"      // legacy: per-controller v1 hierarchies only
	Hybrid  Mode = "hybrid"  // v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified
	V2      Mode = "v2"      // unified: /sys/fs/cgroup is cgroup2
	Unknown Mode = "unknown" // /sys/fs/cgroup is missing or something else
)

// Layout describes the host's cgroup layout.
type Layout struct {
	Mode Mode
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

// Detect reads /proc/cgroups, /proc/self/mountinfo and statfs of /sys/fs/cgroup.
func Detect() (Layout, error) {
	var cg Layout
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		cg.Mode = Unknown
		return cg, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	unifiedDir := ""
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		cg.Mode, unifiedDir = V2, "/sys/fs/cgroup"
	case unix.TMPFS_MAGIC:
		cg.Mode = V1
		var ust unix.Statfs_t
		if unix.Statfs("/sys/fs/cgroup/unified", &ust) == nil && ust.Type == unix.CGROUP2_SUPER_MAGIC {
			cg.Mode, unifiedDir = Hybrid, "/sys/fs/cgroup/unified"
		}
	default:
		cg.Mode = Unknown
		return cg, nil
	}
	if unifiedDir != "" {
		if b, err := os.ReadFile(unifiedDir + "/cgroup.controllers"); err == nil {
			cg.UnifiedControllers = strings.Fields(string(b))
		}
	}
	if cg.Mode == V2 {
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
