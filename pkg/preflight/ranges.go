package preflight

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/state"
)

// ranges returns cfg with the address ranges of the cluster up starts as
// root, when no source set one of them (config.RangeKeys in
// opts.Explicit); an explicit range is never changed. A cluster that ran
// before keeps the ranges it recorded. A new one whose --cidr overlaps
// what another user of the host's addresses holds (movedRange: an
// address or route of the host, or the recorded ranges of another
// cluster of this state root, running or stopped) moves to the first
// free range of the same size, said in pr.Notices. A rootless cluster's
// ranges are inside its own network namespace: they stay.
func (pp *preparation) ranges(cfg config.Config) (config.Config, error) {
	if pp.opts.Mode != AsRoot || slices.ContainsFunc(config.RangeKeys, func(k string) bool { return slices.Contains(pp.opts.Explicit, k) }) {
		return cfg, nil
	}
	recorded, err := state.LoadCluster(cfg.StateDir)
	switch {
	case err == nil:
		return cfg.WithRangesOf(recorded), nil
	case !errors.Is(err, os.ErrNotExist):
		return cfg, nil // a damaged record: Up refuses it
	}
	hostUses, err := network.HostUses(cfg.Name)
	if err != nil {
		return cfg, fmt.Errorf("check the host's addresses and routes: %w", err)
	}
	uses := append(clusterRanges(state.DefaultInventory(), cfg.StateDir), hostUses...)
	moved, notice := movedRange(cfg, uses)
	if notice != "" {
		pp.pr.Notices = append(pp.pr.Notices, notice)
	}
	return moved, nil
}

// clusterRanges are the address ranges recorded by the clusters of inv
// other than the one in stateDir, running or stopped: a stopped
// cluster's range stays its own, as a Docker network outlives kind's and
// k3d's stopped node containers.
func clusterRanges(inv state.Inventory, stateDir string) []network.HostUse {
	dirs, _ := inv.StateDirs()
	var uses []network.HostUse
	for _, d := range dirs {
		if d == stateDir {
			continue
		}
		other, err := state.LoadRecorded(d)
		if err != nil {
			continue
		}
		ranges := other.Ranges()
		for _, key := range config.RangeKeys {
			if p, err := netip.ParsePrefix(ranges[key]); err == nil {
				uses = append(uses, network.HostUse{Prefix: p.Masked(), Desc: fmt.Sprintf("cluster %q (%s)", other.Name, d)})
			}
		}
	}
	return uses
}

// movedRange returns cfg with its --cidr moved to the first free range of
// its size (config.FreeRange) that overlaps none of uses, and a notice
// naming what held the old one, when the old one overlaps one of uses;
// else cfg as it is and "". With no free range cfg stays too: preflight
// then refuses it, naming what it overlaps.
func movedRange(cfg config.Config, uses []network.HostUse) (config.Config, string) {
	whole, err := netip.ParsePrefix(cfg.CIDR)
	if err != nil {
		return cfg, ""
	}
	whole = whole.Masked()
	var holders []string
	taken := make([]netip.Prefix, 0, len(uses))
	for _, u := range uses {
		taken = append(taken, u.Prefix)
		if u.Prefix.Overlaps(whole) && !slices.Contains(holders, u.Desc) {
			holders = append(holders, u.Desc)
		}
	}
	if len(holders) == 0 {
		return cfg, ""
	}
	free, ok := config.FreeRange(whole.Bits(), taken)
	if !ok {
		return cfg, ""
	}
	return cfg.WithCIDR(free), fmt.Sprintf("--cidr %s is in use by %s; using --cidr %s (recorded: this cluster keeps it)",
		whole, listed(holders), free)
}
