package preflight

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/rootless"
	"github.com/kubernix/kubernix/pkg/state"
)

// Mode says where the cluster that Prepare plans is to run, and so what
// it checks.
type Mode int

const (
	// AsRoot: `up` as root, the cluster in the host's namespaces.
	AsRoot Mode = iota
	// AsUser: `up` as an ordinary user, before it starts rootlesskit:
	// the ports are checked where rootlesskit publishes them, on the
	// host's 127.0.0.1, and the cgroup parent is the user's delegated
	// one. The cluster's own ranges and listeners are checked inside
	// rootlesskit (InRootlesskit).
	AsUser
	// InRootlesskit: the supervisor inside rootlesskit's namespaces (`up
	// --rootless-child`), from the settings AsUser prepared; the
	// cluster's RootlessState must be recorded.
	InRootlesskit
)

// HostLoopback is where a rootless cluster's apiserver and registry are
// published on the host (rootlesskit's port forward).
var HostLoopback = netip.MustParseAddr("127.0.0.1")

// PrepareOptions say for whom Prepare plans.
type PrepareOptions struct {
	Mode Mode
	// DryRun makes a plan even where a check fails (a binary the doctor
	// misses is then where it was looked for, doctor.Locate): the
	// failures are Prepared.Refusals instead of Prepare's error.
	DryRun bool
	// Explicit are the toml keys of the settings a source set
	// (config.LoadExplicit): Prepare chooses no setting given here.
	Explicit []string
}

// Prepared is a plan that has passed up's checks: what Up starts.
type Prepared struct {
	// Plan is the cluster, its ports chosen.
	Plan *plan.Plan
	// Report is the doctor's, whose failures the caller prints.
	Report doctor.Report
	// Notices say what Prepare chose that the user did not ask for, e.g.
	// "apiserver port 6443 is in use; using 6444".
	Notices []string
	// Changes are how the config differs from the one the cluster last
	// ran with (ConfigChanges), those that need no new cluster applied
	// by Up; none in InRootlesskit (the parent compared them).
	Changes []Change
	// Refusals are, in a dry run, what up would refuse, in the order up
	// checks it: up's error would be the first.
	Refusals []error
}

// Prepare turns cfg (resolved and valid) into the checked plan of the
// cluster `up` starts, for root, rootless (both sides of rootlesskit)
// and `up --dry-run` alike, changing nothing on the host. In order:
//
//   - the cluster must not be running (runningError lists what cfg would
//     change in it);
//   - the Kubernetes release asked for must be built (bins.ReleaseFinder;
//     the config then names its full version, which is recorded);
//   - the doctor's checks (doctor.Check) give the binaries and host facts;
//   - as root, the address ranges are chosen (ranges: a cluster that ran
//     before keeps its own; a new one whose range another cluster or the
//     host holds moves to a free one, unless a source set it);
//   - the apiserver and registry ports are chosen (choosePorts; a default
//     one that is taken moves, and the config is validated again);
//   - what cfg changes in the cluster that ran before (ConfigChanges) must
//     not need a new cluster (refuseNewCluster);
//   - inside rootlesskit, the cluster's rootless record must be there: it
//     says where rootlesskit runs (plan.Rootless);
//   - the plan is made (plan.New), the components check their settings
//     (CheckComponents), the addons' images must be there
//     (checkAddonImages);
//   - the host must take the cluster (preflight, CheckName,
//     checkHostNamespaces; AsUser, the port mappings only).
//
// The error is the first check's that failed: config.ErrInvalid (exit 2)
// for input to change, ErrTaken for a running cluster, or why a check
// could not run. In a dry run only a config that cannot be planned at all
// is an error; the failed checks are in Refusals.
func Prepare(ctx context.Context, cfg config.Config, opts PrepareOptions) (*Prepared, error) {
	pp := &preparation{ctx: ctx, opts: opts, pr: &Prepared{}}
	if err := pp.notRunning(cfg); err != nil {
		return nil, err
	}
	finder, rel, err := bins.ReleaseFinder(cfg.BinDir, cfg.BundleDir, cfg.KubernetesVersion)
	if err != nil {
		if err := pp.refuse(config.Invalid("", []error{fmt.Errorf("--kubernetes-version %s: %w", cfg.KubernetesVersion, err)})); err != nil {
			return pp.pr, err
		}
	}
	// The record holds the release the cluster ran, not how it was named.
	cfg.KubernetesVersion = rel.Kubernetes
	facts := pp.hostFacts(finder, rel, cfg)
	imagesDir, imagesErr := finder.ImagesDir()
	if opts.Mode == AsUser {
		cfg.CgroupParent = facts.CgroupParent
	}
	if cfg, err = pp.ranges(cfg); err != nil {
		return pp.pr, err
	}
	cfg, err = pp.ports(cfg, facts, imagesDir)
	if err != nil {
		return pp.pr, err
	}
	rootless, err := pp.rootless(cfg)
	if err != nil {
		return pp.pr, err
	}
	pl, err := plan.New(cfg, facts, imagesDir, rootless)
	if err != nil {
		return pp.pr, err
	}
	pp.pr.Plan = pl
	for _, check := range []func() error{
		func() error { return pp.checkHost(pl, facts, imagesErr) },
		func() error { return pp.checkChanges(cfg) },
		func() error { return pp.checkPlan(pl) },
	} {
		if err := check(); err != nil {
			return pp.pr, err
		}
	}
	pl.Checked = len(pp.pr.Refusals) == 0
	return pp.pr, nil
}

// preparation is one Prepare: its options and what it found so far.
type preparation struct {
	ctx  context.Context
	opts PrepareOptions
	pr   *Prepared
}

// refuse is err, except in a dry run, which records it in Refusals and
// goes on.
func (pp *preparation) refuse(err error) error {
	if err != nil && pp.opts.DryRun {
		pp.pr.Refusals = append(pp.pr.Refusals, err)
		return nil
	}
	return err
}

// notRunning refuses a running cluster, listing what cfg would change in
// it; inside rootlesskit the parent checked.
func (pp *preparation) notRunning(cfg config.Config) error {
	if pp.opts.Mode == InRootlesskit {
		return nil
	}
	if pid, ok := state.Running(cfg.Paths()); ok {
		return pp.refuse(runningError(cfg.Name, pid, runningChanges(cfg, pp.opts.Mode)))
	}
	return nil
}

// hostFacts runs the doctor's checks (the report goes to pr.Report).
// Where they fail, the facts still name where each missing binary was
// looked for, so that the input's own problems are refused before the
// host's (checkHost).
func (pp *preparation) hostFacts(finder *bins.Finder, rel release.Release, cfg config.Config) doctor.Facts {
	report, facts := doctor.Check(pp.ctx, finder, doctor.Options{Release: rel, CNIDir: cfg.CNIDir, CgroupParent: cfg.CgroupParent, SkipNetworkPolicy: !cfg.NetworkPolicy})
	pp.pr.Report = report
	if report.Failed() {
		located := doctor.Locate(finder, rel, cfg.CNIDir)
		maps.Copy(located.Paths, facts.Paths)
		facts.Paths = located.Paths
		if facts.CNIDir == "" {
			facts.CNIDir = located.CNIDir
		}
	}
	return facts
}

// ports chooses the apiserver and registry ports (choosePorts; the
// notices go to pr.Notices) and validates the config again when the
// registry's moved: a mirror of localhost:<that port> is refused before
// anything is made. Inside rootlesskit the parent chose them.
func (pp *preparation) ports(cfg config.Config, facts doctor.Facts, imagesDir string) (config.Config, error) {
	if pp.opts.Mode == InRootlesskit {
		return cfg, nil
	}
	chosen, notices, errs := choosePorts(cfg, facts, imagesDir, pp.opts.Mode)
	for _, err := range errs {
		if err := pp.refuse(err); err != nil {
			return cfg, err
		}
	}
	pp.pr.Notices = append(pp.pr.Notices, notices...)
	if chosen.RegistryPort != cfg.RegistryPort {
		if err := pp.refuse(chosen.Validate()); err != nil {
			return cfg, err
		}
	}
	return chosen, nil
}

// rootless is how the cluster runs rootless: not as root; AsUser before
// rootlesskit runs; InRootlesskit as the parent recorded it, which must
// be there.
func (pp *preparation) rootless(cfg config.Config) (plan.Rootless, error) {
	switch pp.opts.Mode {
	case AsUser:
		return plan.Rootless{Enabled: true}, nil
	case InRootlesskit:
		st, ok := state.ReadRootless(cfg.Paths())
		if !ok {
			return plan.Rootless{}, fmt.Errorf("%s is missing: --rootless-child is started by `kubernix up` as an ordinary user", state.RootlessFile(cfg.Paths()))
		}
		return plan.Rootless{Enabled: true, StateDir: st.RootlesskitStateDir}, nil
	}
	return plan.Rootless{}, nil
}

// checkHost runs preflight (AsUser only the port mappings, on the host
// where rootlesskit publishes them; the rest is checked inside it), then
// refuses a host the doctor failed and built-in images that are missing.
func (pp *preparation) checkHost(pl *plan.Plan, facts doctor.Facts, imagesErr error) error {
	hostChecks := func() error { return preflight(pl) }
	if pp.opts.Mode == AsUser {
		hostChecks = func() error { return problems(checkPortMappings(pl.Cfg)) }
	}
	if err := pp.refuse(hostChecks()); err != nil {
		return err
	}
	if pp.pr.Report.Failed() {
		if err := pp.refuse(HostNotReady(pp.pr.Report, facts)); err != nil {
			return err
		}
	}
	return pp.refuse(imagesErr)
}

// checkChanges records what cfg changes since the cluster's last up
// (pr.Changes) and refuses those that need a new cluster. A record that
// cannot be read is left to the supervisor, whose Up refuses it before it
// starts anything (RemoveLeftovers); a dry run lists it. Inside
// rootlesskit the parent compared them.
func (pp *preparation) checkChanges(cfg config.Config) error {
	if pp.opts.Mode == InRootlesskit {
		return nil
	}
	changes, err := ConfigChanges(cfg, pp.opts.Mode != AsRoot)
	pp.pr.Changes = changes
	switch {
	case err != nil && pp.opts.DryRun:
		pp.pr.Refusals = append(pp.pr.Refusals, err)
	case err == nil:
		return pp.refuse(refuseNewCluster(cfg.Name, changes))
	}
	return nil
}

// checkPlan lets the components check their settings, and refuses
// missing addon images, a name another cluster claims and a second
// cluster in the host's namespaces.
func (pp *preparation) checkPlan(pl *plan.Plan) error {
	for _, check := range []func() error{
		func() error { return CheckComponents(pp.ctx, pl) },
		func() error { return checkAddonImages(pl) },
		func() error { return CheckName(pl) },
		func() error { return checkHostNamespaces(pp.ctx, pl) },
	} {
		if err := pp.refuse(check()); err != nil {
			return err
		}
	}
	return nil
}

// HostNotReady is the error of the doctor's failed checks in report,
// naming each.
func HostNotReady(report doctor.Report, facts doctor.Facts) error {
	var failed []string
	for _, f := range report.Failures() {
		failed = append(failed, f.Name+": "+f.Detail)
	}
	what := "a cluster"
	if facts.Mode == doctor.ModeRootless {
		what = "a rootless cluster"
	}
	return fmt.Errorf("the host is not ready for %s (`kubernix doctor` shows how to fix it):\n  %s",
		what, strings.Join(failed, "\n  "))
}

// movablePort is a port up moves when it is the default and taken: the
// apiserver's and the registry's.
type movablePort struct {
	// what names it in the notice, e.g. "apiserver".
	what string
	flag string
	def  int
	get  func(config.Config) int
	set  func(*config.Config, int)
}

var movablePorts = []movablePort{
	{"apiserver", apiserver.PortFlag, config.DefaultAPIServerPort,
		func(c config.Config) int { return c.APIServerPort }, func(c *config.Config, p int) { c.APIServerPort = p }},
	{"registry", registry.PortFlag, config.DefaultRegistryPort,
		func(c config.Config) int { return c.LocalRegistryPort() }, func(c *config.Config, p int) { c.RegistryPort = p }},
}

// choosePorts returns cfg with the apiserver and registry ports up uses:
// each as given when its listeners (the described ports its flag sets,
// HostPorts) are free, else, when it is the default, the first of the 99
// after it whose listeners are free (said in a notice). AsUser, the
// listeners are rootlesskit's port forwards on the host's 127.0.0.1. A
// port held by the cluster's own leftover processes (which Up stops)
// counts as free; a registry port of 0 (no registry) stays. Each port
// that cannot be chosen is left as given and its error, wrapping
// config.ErrInvalid and naming the flag, returned.
func choosePorts(cfg config.Config, facts doctor.Facts, imagesDir string, mode Mode) (config.Config, []string, []error) {
	pl, err := plan.New(cfg, facts, imagesDir, plan.Rootless{Enabled: mode != AsRoot})
	if err != nil {
		return cfg, nil, []error{err}
	}
	ports, err := plan.HostPorts(pl)
	if err != nil {
		return cfg, nil, []error{err}
	}
	var ignore map[int]bool
	where := ""
	if mode == AsRoot {
		ignore = recordedPIDs(pl.Paths)
	} else {
		where = " on " + HostLoopback.String()
	}
	var notices []string
	var errs []error
	for _, m := range movablePorts {
		var listeners []plan.HostPort
		for _, hp := range ports {
			if hp.Flag != m.flag {
				continue
			}
			if mode != AsRoot {
				hp = plan.HostPort{Component: hp.Component + " (rootlesskit's port forward)", IP: HostLoopback, Flag: hp.Flag}
			}
			if !slices.ContainsFunc(listeners, func(l plan.HostPort) bool { return l.IP == hp.IP }) {
				listeners = append(listeners, hp)
			}
		}
		given := m.get(cfg)
		if len(listeners) == 0 || given == 0 {
			continue
		}
		port, err := nextFreePort(given, m.def, func(p int) error {
			var errs []error
			for _, hp := range listeners {
				hp.Port = p
				errs = append(errs, portProblem(hp, ignore))
			}
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("%w: %w", config.ErrInvalid, err)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if port != given {
			notices = append(notices, fmt.Sprintf("%s port %d is in use%s; using %d", m.what, given, where, port))
			m.set(&cfg, port)
		}
	}
	return cfg, notices, errs
}

// nextFreePort returns port when check passes on it; when it fails and
// port is def, the first of the 99 ports after it that check passes;
// else check's error on port.
func nextFreePort(port, def int, check func(port int) error) (int, error) {
	err := check(port)
	if err == nil || port != def {
		return port, err
	}
	for p := port + 1; p < port+100; p++ {
		if check(p) == nil {
			return p, nil
		}
	}
	return 0, err
}

// runningChanges is what cfg changes in its running cluster (a record
// that cannot be read lists nothing), its ports chosen as up would choose
// them. A rootless cluster's ports are compared as given (its own port
// forward holds them, which a port check cannot tell from another
// program's), and its cgroup parent, unset, as the delegated one that up
// would take.
func runningChanges(cfg config.Config, mode Mode) []Change {
	finder, rel, _ := bins.ReleaseFinder(cfg.BinDir, cfg.BundleDir, cfg.KubernetesVersion)
	if mode == AsRoot {
		imagesDir, _ := finder.ImagesDir()
		cfg, _, _ = choosePorts(cfg, doctor.Locate(finder, rel, cfg.CNIDir), imagesDir, mode)
	} else if cfg.CgroupParent == "" {
		cfg.CgroupParent, _ = rootless.DelegatedCgroup(os.Getuid())
	}
	cfg.KubernetesVersion = rel.Kubernetes
	changes, _ := ConfigChanges(cfg, mode != AsRoot)
	return changes
}
