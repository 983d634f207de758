package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/host"
)

// HostSysctls are the global sysctls a cluster changes: the ones kubelets
// set when protectKernelDefaults is false (k8s.io/kubernetes
// pkg/kubelet/cm: setupKernelTunables, Kubernetes v1.37), and
// net.ipv4.ip_forward, which the cluster's network needs. kubernix records
// the host's values before the first cluster changes them and restores
// them when the host's last cluster goes (see sysctlLedger).
var HostSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward",
}

// SysctlLedgerFile records, for the whole host (root mode), the sysctls'
// original values and the state dirs of the clusters that use them
// (sysctlLedger, JSON). It lives in /run: a reboot restores the values
// and forgets the record together.
const SysctlLedgerFile = RunDir + "/sysctls.json"

// RunDir holds kubernix's host-wide records (root mode).
const RunDir = "/run/kubernix"

// sysctlLedger is the content of SysctlLedgerFile.
type sysctlLedger struct {
	// Original maps a sysctl's dotted name to its value before the
	// first cluster.
	Original map[string]string `json:"original"`
	// Clusters are the state dirs of the clusters that joined, in order.
	Clusters []string `json:"clusters"`
}

// join adds the cluster of state dir state; the first cluster records the
// originals, read with read (a sysctl that cannot be read is skipped).
// legacy are the originals an older kubernix recorded in that state dir,
// if any: they predate the current values, so they win.
func (l *sysctlLedger) join(state string, read func(string) (string, error), legacy map[string]string) {
	if l.Original == nil {
		l.Original = map[string]string{}
		for _, k := range HostSysctls {
			if v, err := read(k); err == nil {
				l.Original[k] = v
			}
		}
		maps.Copy(l.Original, legacy)
	}
	if !slices.Contains(l.Clusters, state) {
		l.Clusters = append(l.Clusters, state)
	}
}

// leave removes the cluster of state dir state and every cluster for
// which live is false (gone without leaving, e.g. SIGKILLed and never
// brought down). When none is left it returns the originals to restore
// (and the ledger is done); else nil.
func (l *sysctlLedger) leave(state string, live func(string) bool) map[string]string {
	l.Clusters = slices.DeleteFunc(l.Clusters, func(s string) bool { return s == state || !live(s) })
	if len(l.Clusters) > 0 {
		return nil
	}
	return l.Original
}

// withSysctlLedger runs f on the ledger under an exclusive lock held across
// read, f and write, so clusters starting and stopping at once do not lose
// each other's entries. An empty ledger (no cluster) is removed.
func withSysctlLedger(f func(*sysctlLedger) error) error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(SysctlLedgerFile+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	var l sysctlLedger
	switch b, err := os.ReadFile(SysctlLedgerFile); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("parse %s: %w", SysctlLedgerFile, err)
		}
	}
	if err := f(&l); err != nil {
		return err
	}
	if len(l.Clusters) == 0 {
		if err := os.Remove(SysctlLedgerFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(SysctlLedgerFile, b)
}

// legacySysctlFile is where kubernix before the host-wide ledger recorded
// the originals, per state dir.
func legacySysctlFile(paths config.Paths) string {
	return filepath.Join(paths.State, "host", "sysctls.json")
}

// readLegacySysctls reads and removes the legacy per-state-dir record;
// nil when there is none.
func readLegacySysctls(paths config.Paths) (map[string]string, error) {
	file := legacySysctlFile(paths)
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	orig := map[string]string{}
	if err := json.Unmarshal(b, &orig); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	return orig, os.Remove(file)
}

// joinSysctls records the cluster in the host's sysctl ledger, and the
// host's values if it is the first cluster.
func joinSysctls(paths config.Paths) error {
	return withSysctlLedger(func(l *sysctlLedger) error {
		legacy, err := readLegacySysctls(paths)
		if err != nil {
			return err
		}
		l.join(paths.State, host.Sysctl, legacy)
		return nil
	})
}

// leaveSysctls drops the cluster from the ledger and, when it was the
// host's last, writes back the original values.
func leaveSysctls(paths config.Paths) error {
	return withSysctlLedger(func(l *sysctlLedger) error {
		legacy, err := readLegacySysctls(paths)
		if err != nil {
			return err
		}
		if l.Original == nil && legacy != nil {
			// A cluster of an older kubernix, alone on the host.
			l.Original = legacy
		}
		restore := l.leave(paths.State, func(state string) bool {
			_, ok := Running(config.Paths{State: state})
			return ok
		})
		var errs []error
		for k, v := range restore {
			if cur, err := host.Sysctl(k); err == nil && cur != v {
				errs = append(errs, host.SetSysctl(k, v))
			}
		}
		return errors.Join(errs...)
	})
}

// prepareHost joins the host's sysctl ledger before the kubelets change
// them, and mounts the cgroup v1 controllers the kernel has but no
// hierarchy mounts, so container stats work. A rootless cluster does
// neither.
func (c *Cluster) prepareHost() error {
	if c.Plan.Rootless {
		// In a user namespace the kubelets cannot change kernel
		// tunables (KubeletInUserNamespace lets them go on), and no
		// cgroup hierarchy can be mounted.
		return nil
	}
	if err := joinSysctls(c.Plan.Paths); err != nil {
		return fmt.Errorf("record the host's sysctls: %w", err)
	}
	cg := c.Plan.Facts.Cgroups
	if cg.Mode != host.CgroupV2 && len(cg.Unmounted) > 0 && os.Geteuid() == 0 {
		mounted, err := host.MountControllers(cg.Unmounted)
		if len(mounted) > 0 {
			c.Log.Info("mounted cgroup v1 controllers the host left unmounted, so container stats work", "controllers", mounted)
		}
		if err != nil {
			c.Log.Debug("some cgroup controllers could not be mounted", "err", err)
		}
	}
	return nil
}
