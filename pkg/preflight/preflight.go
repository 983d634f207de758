package preflight

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/process"
)

// preflight checks, before anything is created, that this host can take
// plan's cluster, in the network namespace of the caller:
//
//   - no address or route of the host (network.HostUses: its LAN, a VPN,
//     another cluster) overlaps the cluster's ranges, which Setup would
//     refuse later (see network.Setup);
//   - every TCP port a component listens on in this namespace (HostPorts,
//     from the descriptions) is free on its address, and no port a flag
//     sets is another component's on the same address (clashProblems);
//   - the host address of every [[nodes]] port mapping is free for its
//     protocol (checkPortMappings).
//
// What the cluster itself left behind (its bridge and routes, listeners
// of the processes recorded in its state dir, e.g. after a killed
// supervisor) does not count: Up removes it before it starts.
//
// The error lists every problem, each naming the flag that fixes it, and
// wraps config.ErrInvalid (exit 2); it is nil when the host is ready, or
// wraps the host error that kept a check from running.
func preflight(pl *plan.Plan) error {
	cfg := pl.Cfg
	var errs []error
	netErrs, err := rangeProblems(cfg, pl.Net)
	if err != nil {
		return fmt.Errorf("check the host's addresses and routes: %w", err)
	}
	errs = append(errs, netErrs...)
	ports, err := plan.HostPorts(pl)
	if err != nil {
		return err
	}
	errs = append(errs, clashProblems(ports)...)
	ours := recordedPIDs(pl.Paths)
	for _, hp := range ports {
		if err := portProblem(hp, ours); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, mappingProblems(cfg, ours)...)
	return problems(errs)
}

// problems is nil for no errors, else one wrapping config.ErrInvalid that
// counts and lists them.
func problems(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	noun := "problems"
	if len(errs) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("%w (%d %s on this host):\n%w", config.ErrInvalid, len(errs), noun, errors.Join(errs...))
}

// maxListed bounds the host addresses and routes one problem lists.
const maxListed = 3

// listed joins the first maxListed of descs with ", ", and says how many
// more there are ("and 4 more").
func listed(descs []string) string {
	if len(descs) > maxListed {
		descs = append(descs[:maxListed:maxListed], fmt.Sprintf("and %d more", len(descs)-maxListed))
	}
	return strings.Join(descs, ", ")
}

// rangeProblems returns one error per flag whose range overlaps an address
// or route of the host that is not the cluster's own, naming each such
// address or route and suggesting a free range (config.FreeRange).
func rangeProblems(cfg config.Config, n config.Network) ([]error, error) {
	uses, err := network.HostUses(cfg.Name)
	if err != nil {
		return nil, err
	}
	return overlapProblems(cfg, n, uses), nil
}

// overlapProblems is rangeProblems for the host's addresses and routes uses.
func overlapProblems(cfg config.Config, n config.Network, uses []network.HostUse) []error {
	whole, _ := netip.ParsePrefix(cfg.CIDR)
	whole = whole.Masked()
	flags := []struct {
		flag string
		p    netip.Prefix
	}{{"--node-cidr", n.Node}, {"--service-cidr", n.Service}, {"--cluster-cidr", n.Cluster}, {"--cidr", whole}, {"--cidr6", n.Whole6}}
	hits := make([][]string, len(flags))
	var taken []netip.Prefix
	for _, u := range uses {
		taken = append(taken, u.Prefix)
		for i, f := range flags {
			if f.p.IsValid() && f.p.Overlaps(u.Prefix) {
				hits[i] = append(hits[i], u.Desc)
				break // the most specific range names the flag
			}
		}
	}
	var errs []error
	for i, f := range flags {
		if len(hits[i]) == 0 {
			continue
		}
		if f.flag == "--cidr6" {
			errs = append(errs, fmt.Errorf("--cidr6 %s overlaps %s on this host; choose another unique local range, e.g. %s (see `ip -6 addr` and `ip -6 route`)", f.p, listed(hits[i]), config.DefaultCIDR6(cfg.Name+"-"+f.p.String())))
			continue
		}
		inWhole := f.flag != "--cidr" && whole.IsValid() && whole.Bits() <= f.p.Bits() && whole.Contains(f.p.Addr())
		where, sugFlag, sugBits := "", f.flag, f.p.Bits()
		if inWhole {
			where = fmt.Sprintf(" (inside --cidr %s)", whole)
		}
		if inWhole || f.flag == "--cidr" {
			sugFlag, sugBits = "--cidr", whole.Bits()
		} else {
			for _, g := range flags { // the cluster's other ranges are not free either
				if g.p.IsValid() && g.p != f.p {
					taken = append(taken, g.p)
				}
			}
		}
		advice := "choose a range that no address or route of this host overlaps (see `ip -4 addr` and `ip -4 route`)"
		if free, ok := config.FreeRange(sugBits, taken); ok {
			advice = fmt.Sprintf("choose a free range, e.g. %s %s", sugFlag, free)
		}
		errs = append(errs, fmt.Errorf("%s %s%s overlaps %s on this host; %s", f.flag, f.p, where, listed(hits[i]), advice))
	}
	return errs
}

// clashProblems returns an error for each port of ports that a port with
// a flag (--registry-port, say) shares with another component on the same
// address, naming the flag.
func clashProblems(ports []plan.HostPort) []error {
	var errs []error
	for i, hp := range ports {
		if hp.Flag == "" {
			continue
		}
		for j, other := range ports {
			if j != i && other.Port == hp.Port && other.IP == hp.IP && other.Flag != hp.Flag {
				errs = append(errs, fmt.Errorf("%s %d: %s listens there too; choose another", hp.Flag, hp.Port, other.Component))
				break
			}
		}
	}
	return errs
}

// portProblem returns an error naming hp, the listener that takes it (its
// address, pid and command when found) and what to do, when a listener
// other than one of the processes in ignore keeps hp from binding; nil
// when it is free.
func portProblem(hp plan.HostPort, ignore map[int]bool) error {
	ls, err := network.PortConflicts(hp.IP, hp.Port)
	if err != nil {
		return fmt.Errorf("check port %d (%s): %w", hp.Port, hp.Component, err)
	}
	l, who, taken := holder(ls, ignore)
	if !taken {
		return nil
	}
	advice := "stop it; kubernix does not move this port"
	switch {
	case hp.Flag != "":
		advice = "stop it, or choose another " + hp.Flag
	case !l.Addr.IsUnspecified():
		advice = "stop it, or choose another --cidr (the port binds the first address of its node network)"
	}
	return fmt.Errorf("port %d is in use, so %s cannot listen on %s: %s holds it; %s", hp.Port, hp.Component, hp.IP, who, advice)
}

// holder returns the first socket of ls that no process of ignore holds,
// and who holds it ("a listener on <addr>", with its pid and command when
// found); taken is false when there is none.
func holder(ls []network.Listener, ignore map[int]bool) (l network.Listener, who string, taken bool) {
	for _, l := range ls {
		pid, comm, found := network.SocketOwner(l.Inode)
		if found && ignore[pid] {
			continue
		}
		who := "a listener on " + l.String()
		if found {
			who += fmt.Sprintf(" (pid %d, %s)", pid, comm)
		}
		return l, who, true
	}
	return network.Listener{}, "", false
}

// recordedPIDs are the live processes recorded in the run dirs of the
// state dir (paths.Run): the cluster's own components, e.g. those a killed
// supervisor left, which Up stops before it starts anew.
func recordedPIDs(paths config.Paths) map[int]bool {
	dirs, _ := filepath.Glob(paths.Run("*", "*"))
	pids := map[int]bool{}
	for _, d := range dirs {
		if pid, ok := process.Running(d); ok {
			pids[pid] = true
		}
	}
	return pids
}
