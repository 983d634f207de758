package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/sysctl"
	"golang.org/x/sys/unix"
)

// HostSysctl is a global sysctl a cluster changes and the value it sets.
type HostSysctl struct {
	// Name is the sysctl's dotted name, e.g. "kernel.panic".
	Name string
	// Value is what a cluster sets it to.
	Value string
}

// HostSysctls are the global sysctls a cluster changes, with the values
// it sets: the kubelets' when protectKernelDefaults is false (k8s.io/kubernetes
// pkg/kubelet/cm: setupKernelTunables, Kubernetes v1.37), and
// net.ipv4.ip_forward=1, which the cluster's network needs. kubernix records
// the host's values before the first cluster changes them and restores
// them when the host's last cluster goes, each only while it still holds
// the value here (see sysctlLedger). The last down restores them in this
// order: ip_forward last, before the FORWARD policy, so the host never
// forwards everything on the way back.
var HostSysctls = []HostSysctl{
	{"vm.overcommit_memory", "1"}, {"vm.panic_on_oom", "0"}, {"kernel.panic", "10"}, {"kernel.panic_on_oops", "1"},
	{"kernel.keys.root_maxkeys", "1000000"}, {"kernel.keys.root_maxbytes", "25000000"}, {ipForward, "1"},
}

// forwardPolicySetting names the filter FORWARD policy in the ledger's
// logs, beside the sysctls.
const forwardPolicySetting = "iptables filter FORWARD policy"

// SysctlLedgerFile records, for the whole host (root mode), the sysctls'
// original values, the FORWARD policy kubernix changed, and the state dirs
// of the clusters that use them (sysctlLedger, JSON). It lives in /run: a
// reboot restores the values and forgets the record together.
const SysctlLedgerFile = config.RunDir + "/sysctls.json"

// sysctlLedger is the content of SysctlLedgerFile.
type sysctlLedger struct {
	// Original maps a sysctl's dotted name to its value before the
	// first cluster.
	Original map[string]string `json:"original"`
	// Set maps a sysctl's dotted name to the value the clusters set
	// (HostSysctls when the ledger was made). A ledger of an older
	// kubernix has none: HostSysctls' values count.
	Set map[string]string `json:"set,omitempty"`
	// ForwardPolicy is the change kubernix made to the host's iptables
	// filter FORWARD policy, because it turned forwarding on; nil when
	// it made none.
	ForwardPolicy *policyChange `json:"forward_policy,omitempty"`
	// Clusters are the state dirs of the clusters that joined, in order.
	Clusters []string `json:"clusters"`
}

// policyChange is a change of the filter FORWARD policy.
type policyChange struct {
	// Original is the host's policy before, e.g. "ACCEPT".
	Original string `json:"original"`
	// Set is kubernix's, "DROP".
	Set string `json:"set"`
}

// hostSettings reads and writes what the ledger records: sysctls by
// dotted name and the filter FORWARD policy. liveHost is the host's.
type hostSettings interface {
	Sysctl(name string) (string, error)
	SetSysctl(name, value string) error
	ForwardPolicy() (string, error)
	SetForwardPolicy(policy string) error
}

// liveHost is hostSettings on this host.
type liveHost struct{}

func (liveHost) Sysctl(name string) (string, error)   { return sysctl.Get(name) }
func (liveHost) SetSysctl(name, value string) error   { return sysctl.Set(name, value) }
func (liveHost) ForwardPolicy() (string, error)       { return ForwardPolicy() }
func (liveHost) SetForwardPolicy(policy string) error { return SetForwardPolicy(policy) }

// join adds the cluster of state dir state; the first cluster records the
// originals and the values it sets, read from h (a sysctl that cannot be
// read is skipped). legacy are the originals an older kubernix recorded
// in that state dir, if any: they predate the current values, so they win.
//
// It returns true when the caller must set the FORWARD policy to DROP
// (recorded in ForwardPolicy before it is made): forwarding was off before
// the first cluster and is still off, about to be turned on by this one,
// and the policy accepts. Forwarding kubernix turns on then serves only
// the clusters, whose own chains accept their traffic. Errors are those
// of reading the policy.
func (l *sysctlLedger) join(state string, h hostSettings, legacy map[string]string) (bool, error) {
	if l.Original == nil {
		l.Original, l.Set = map[string]string{}, map[string]string{}
		for _, s := range HostSysctls {
			if v, err := h.Sysctl(s.Name); err == nil {
				l.Original[s.Name], l.Set[s.Name] = v, s.Value
			}
		}
		for k, v := range legacy {
			l.Original[k] = v
			if set, ok := clusterValue(k); ok {
				l.Set[k] = set
			}
		}
	}
	if !slices.Contains(l.Clusters, state) {
		l.Clusters = append(l.Clusters, state)
	}
	if l.Original[ipForward] != "0" {
		return false, nil
	}
	if cur, err := h.Sysctl(ipForward); err != nil || cur != "0" {
		// Already on: the cluster that turned it on set the policy.
		return false, nil
	}
	policy, err := h.ForwardPolicy()
	if err != nil || policy == PolicyDrop {
		return false, err
	}
	if l.ForwardPolicy == nil {
		l.ForwardPolicy = &policyChange{Original: policy, Set: PolicyDrop}
	}
	return true, nil
}

// hostSysctl returns the index of sysctl name in HostSysctls, -1 when it
// is not there.
func hostSysctl(name string) int {
	return slices.IndexFunc(HostSysctls, func(s HostSysctl) bool { return s.Name == name })
}

// clusterValue is the value HostSysctls gives sysctl name.
func clusterValue(name string) (string, bool) {
	if i := hostSysctl(name); i >= 0 {
		return HostSysctls[i].Value, true
	}
	return "", false
}

// leave removes the cluster of state dir state and every cluster for
// which live is false (gone without leaving, e.g. SIGKILLed and never
// brought down). It reports whether none is left: then the caller
// restores (restore) and the ledger is done.
func (l *sysctlLedger) leave(state string, live func(string) bool) bool {
	l.Clusters = slices.DeleteFunc(l.Clusters, func(s string) bool { return s == state || !live(s) })
	return len(l.Clusters) == 0
}

// restoreAction is what the last down does with one recorded setting.
type restoreAction int

const (
	// unchanged: the setting holds the host's original value.
	unchanged restoreAction = iota
	// restoreOriginal: it still holds the value kubernix set, so the
	// original is written back.
	restoreOriginal
	// leaveForeign: someone changed it since kubernix set it (or what
	// kubernix set is unknown), so it stays as it is.
	leaveForeign
)

// decideRestore says what to do with a setting whose value before the
// first cluster was original, that the clusters set to set ("" when
// unknown) and that is current now.
func decideRestore(original, set, current string) restoreAction {
	switch {
	case current == original:
		return unchanged
	case set != "" && current == set:
		return restoreOriginal
	default:
		return leaveForeign
	}
}

// leftSetting is a setting restore left as it is.
type leftSetting struct {
	name, current, set, original string
}

// restore writes each recorded original back through h that decideRestore
// says to, in HostSysctls' order and then the FORWARD policy, and returns
// those it left because they changed since kubernix set them. A sysctl
// that cannot be read is skipped; other errors are joined and the rest is
// still restored.
func (l *sysctlLedger) restore(h hostSettings) ([]leftSetting, error) {
	var left []leftSetting
	var errs []error
	// HostSysctls' order (ip_forward last among them), then any other
	// name an older record holds.
	rank := func(name string) int {
		if i := hostSysctl(name); i >= 0 {
			return i
		}
		return len(HostSysctls)
	}
	names := slices.Sorted(maps.Keys(l.Original))
	slices.SortStableFunc(names, func(a, b string) int { return rank(a) - rank(b) })
	for _, k := range names {
		cur, err := h.Sysctl(k)
		if err != nil {
			continue
		}
		set, ok := l.Set[k]
		if !ok {
			set, _ = clusterValue(k)
		}
		switch decideRestore(l.Original[k], set, cur) {
		case restoreOriginal:
			errs = append(errs, h.SetSysctl(k, l.Original[k]))
		case leaveForeign:
			left = append(left, leftSetting{k, cur, set, l.Original[k]})
		}
	}
	if p := l.ForwardPolicy; p != nil {
		cur, err := h.ForwardPolicy()
		if err != nil {
			errs = append(errs, err)
		} else {
			switch decideRestore(p.Original, p.Set, cur) {
			case restoreOriginal:
				errs = append(errs, h.SetForwardPolicy(p.Original))
			case leaveForeign:
				left = append(left, leftSetting{forwardPolicySetting, cur, p.Set, p.Original})
			}
		}
	}
	return left, errors.Join(errs...)
}

// withSysctlLedger runs f on the ledger under an exclusive lock held across
// read, f and write, so clusters starting and stopping at once do not lose
// each other's entries. An empty ledger (no cluster) is removed.
func withSysctlLedger(f func(*sysctlLedger) error) error {
	if err := os.MkdirAll(config.RunDir, 0o755); err != nil {
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
	return atomicfile.Write(SysctlLedgerFile, b, config.StateFileMode)
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

// JoinSysctls records the cluster of paths in the host's sysctl ledger
// (joinSysctls on this host). Errors are those of the ledger's file and
// lock, of reading the FORWARD policy and of setting it.
func JoinSysctls(paths config.Paths) error { return joinSysctls(paths, liveHost{}) }

// LeaveSysctls drops the cluster of paths from the host's sysctl ledger
// and, when it was the last, restores the host's settings
// (leaveSysctls on this host). live reports whether the cluster of a
// state dir still runs; the ledger forgets those that do not. Errors are
// joined: the ledger's file and lock, and each setting it restored.
func LeaveSysctls(paths config.Paths, live func(stateDir string) bool, log *slog.Logger) error {
	return leaveSysctls(paths, liveHost{}, live, log)
}

// joinSysctls records the cluster in the host's sysctl ledger, the host's
// values if it is the first cluster, and sets the FORWARD policy to DROP
// when the ledger says to (sysctlLedger.join), after recording it: a
// kubernix killed in between leaves a record of a change it did not make,
// which the last down finds already undone, never a change without one.
func joinSysctls(paths config.Paths, h hostSettings) error {
	var drop bool
	err := withSysctlLedger(func(l *sysctlLedger) error {
		legacy, err := readLegacySysctls(paths)
		if err != nil {
			return err
		}
		drop, err = l.join(paths.State, h, legacy)
		return err
	})
	if err != nil || !drop {
		return err
	}
	return h.SetForwardPolicy(PolicyDrop)
}

// leaveSysctls drops the cluster from the ledger and, when it was the
// host's last, writes back the originals of the settings that still hold
// kubernix's values, logging those left as someone else set them.
func leaveSysctls(paths config.Paths, h hostSettings, live func(string) bool, log *slog.Logger) error {
	return withSysctlLedger(func(l *sysctlLedger) error {
		legacy, err := readLegacySysctls(paths)
		if err != nil {
			return err
		}
		if l.Original == nil && legacy != nil {
			// A cluster of an older kubernix, alone on the host.
			l.Original = legacy
		}
		last := l.leave(paths.State, live)
		if !last {
			return nil
		}
		left, err := l.restore(h)
		for _, s := range left {
			log.Info("host setting left as it is: changed since kubernix set it", "setting", s.name,
				"value", s.current, "kubernix set", s.set, "before the first cluster", s.original)
		}
		return err
	})
}
