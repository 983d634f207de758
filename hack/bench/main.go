// Command bench measures kubernix (GitHub issue #7): for each cluster size
// it brings a real cluster up with `kubernix up --detach`, verifies it,
// samples its memory, optionally times an image import, and tears it down,
// several times; then it writes a report as JSON and Markdown.
//
//	go run ./hack/bench -nodes 1,3,5,10 -runs 3   # what `make bench` runs
//	go run ./hack/bench -nodes 1 -runs 1          # quick, for development
//
// Per run it records: the wall time of `up` (it returns once every node is
// Ready and CoreDNS Available), checked afterwards with the bundled kubectl;
// the supervisor's timings.json (per component start and ready, per phase);
// the critical path (Prepare plus, per phase, the slowest component's
// start-to-ready time) and the overhead ratio wall / critical path; the RSS
// of every process of the cluster, sampled once -rss-delay after up
// returned; the time of `kubernix image load` of a generated ~50 MB image
// (sizes in -import-nodes, when this kubernix has the verb); the time of
// `kubernix down`; and what down left on the host.
//
// The first -cold runs of each size are cold: each starts from a fresh
// state dir, so up generates the PKI and starts with empty etcd and
// containerd stores. The later runs of the size are warm: they reuse the
// last cold run's state dir (PKI, etcd data, imported images). Rows of the report are per size and mode. After the
// last run the state dir is removed, unless -keep-state or a run failed.
// A failed or interrupted up is followed by a SIGTERM to the detached
// supervisor it started (by PID), then down.
//
// The bench is a measurement, not a test: it asserts nothing about speed.
// It exits non-zero, after writing the report, when a run failed (up
// failed, nodes not Ready, down failed, leftovers). It needs root and the
// built binaries (`make bins images build`), uses its own cluster name,
// state dir under /tmp and CIDR, and a private KUBECONFIG file, so it
// neither touches ~/.kube/config nor other clusters on the machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubernix/kubernix/internal/toolmain"
	"github.com/kubernix/kubernix/pkg/config"
)

func main() { toolmain.Main("bench", run) }

// options are bench's flags.
type options struct {
	nodes       intList
	runs        int
	cold        int // how many of runs are cold
	out         string
	binDir      string
	skipImport  bool
	timeout     time.Duration
	name        string
	stateDir    string
	cidr        string
	rssDelay    time.Duration
	importMB    int
	importNodes intList
	keepState   bool
	addons      string
	// networkPolicy false runs every up with --network-policy=false.
	networkPolicy bool
	// ipFamily, if set, is every up's --ip-family.
	ipFamily string
	// withAddons, if set, are addons added to -addons in an extra cold
	// run before each cold run, for what they cost.
	withAddons string
	// withFlags, if set, are up flags (space-separated) given in an extra
	// cold run before each cold run, for what they change.
	withFlags string
}

// run is bench: it parses args, measures, and writes the report.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	o, err := parseFlags(stderr, args)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("bench starts real clusters and needs root, as `kubernix up` does")
	}
	for _, b := range []string{"kubernix", "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.binDir, b)); err != nil {
			return fmt.Errorf("%w (run `make bins images build`)", err)
		}
	}
	b := &bench{opts: o, stdout: stdout}
	return b.run(ctx)
}

// parseFlags parses and validates args; every problem is reported at once.
func parseFlags(stderr io.Writer, args []string) (options, error) {
	o := options{nodes: intList{1, 3, 5, 10}, importNodes: intList{1, 3}}
	fs := newFlagSet(stderr, &o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	coldSet := false
	fs.Visit(func(f *flag.Flag) { coldSet = coldSet || f.Name == "cold" })
	errs = append(errs, o.checkCounts(coldSet)...)
	errs = append(errs, o.checkPaths()...)
	return o, errors.Join(errs...)
}

// newFlagSet defines bench's flags, with their defaults, into o.
func newFlagSet(stderr io.Writer, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&o.nodes, "nodes", "comma-separated cluster sizes to measure")
	fs.IntVar(&o.runs, "runs", 5, "runs per size: the first -cold of them cold (fresh state dir), the others warm (state dir reused)")
	fs.IntVar(&o.cold, "cold", 3, "how many of each size's runs are cold (1 to -runs; unset: at most -runs)")
	fs.StringVar(&o.out, "out", "_output/bench", "directory for the reports (bench-<time>.json/.md/.log, latest.json/.md)")
	fs.StringVar(&o.binDir, "bin-dir", "_output/bin", "directory holding kubernix, kubectl and the upstream binaries")
	fs.BoolVar(&o.skipImport, "skip-import", false, "do not measure the image import")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound of each kubernix command (up also gets it as --timeout)")
	fs.StringVar(&o.name, "name", "bench", "cluster name")
	fs.StringVar(&o.stateDir, "state-dir", "/tmp/kx-bench", "state directory (removed before each cold run)")
	fs.StringVar(&o.cidr, "cidr", "10.210.0.0/16", "cluster CIDR; must not overlap other clusters on the machine")
	fs.DurationVar(&o.rssDelay, "rss-delay", 5*time.Second, "how long after up returned the memory is sampled")
	fs.IntVar(&o.importMB, "import-mb", 50, "size of the generated image's layer, in MB (10^6 bytes)")
	fs.Var(&o.importNodes, "import-nodes", "comma-separated sizes at which the image import is timed")
	fs.StringVar(&o.addons, "addons", "", "--addons of every up, e.g. coredns (default: kubernix's default addons)")
	fs.BoolVar(&o.networkPolicy, "network-policy", true, "enforce NetworkPolicies (false: every up gets --network-policy=false, to measure what the agents cost)")
	fs.StringVar(&o.withAddons, "with-addons", "", "addons (comma-separated) to measure the cost of: before each cold run, a cold run with them added to -addons; the report compares the two")
	fs.StringVar(&o.withFlags, "with-flags", "", "up flags (space-separated, e.g. --ephemeral) to measure: before each cold run, a cold run with them added; the report compares the two")
	fs.StringVar(&o.ipFamily, "ip-family", "", "--ip-family of every up: ipv4, ipv6 or dual (default: kubernix's, ipv4)")
	fs.BoolVar(&o.keepState, "keep-state", false, "keep the state dir (component logs) after the last run; it is kept anyway when a run failed")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench [flags]\n")
		fs.PrintDefaults()
	}
	return fs
}

// checkCounts validates the numeric flags; unless -cold was set (coldSet),
// it lowers its default to -runs.
func (o *options) checkCounts(coldSet bool) []error {
	var errs []error
	if len(o.nodes) == 0 {
		errs = append(errs, errors.New("-nodes: no sizes"))
	}
	for _, n := range o.nodes {
		if n < 1 {
			errs = append(errs, fmt.Errorf("-nodes: %d is not a node count", n))
		}
	}
	if o.runs < 1 {
		errs = append(errs, fmt.Errorf("-runs %d: at least 1", o.runs))
	}
	if !coldSet && o.runs >= 1 {
		o.cold = min(o.cold, o.runs)
	}
	if o.cold < 1 || (o.runs >= 1 && o.cold > o.runs) {
		errs = append(errs, fmt.Errorf("-cold %d: from 1 to -runs (%d)", o.cold, o.runs))
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("-timeout %s: must be positive", o.timeout))
	}
	if o.rssDelay < 0 {
		errs = append(errs, fmt.Errorf("-rss-delay %s: must not be negative", o.rssDelay))
	}
	if !slices.Contains([]string{"", "ipv4", "ipv6", "dual"}, o.ipFamily) {
		errs = append(errs, fmt.Errorf("-ip-family %q: ipv4, ipv6 or dual", o.ipFamily))
	}
	if o.importMB < 1 {
		errs = append(errs, fmt.Errorf("-import-mb %d: at least 1", o.importMB))
	}
	valueMayFollow := false
	for _, f := range strings.Fields(o.withFlags) {
		switch {
		case strings.HasPrefix(f, "-"):
			valueMayFollow = !strings.Contains(f, "=")
		case valueMayFollow:
			valueMayFollow = false
		default:
			errs = append(errs, fmt.Errorf("-with-flags %q: %q is neither a flag nor its value; give up flags, each --flag, --flag=value or --flag value", o.withFlags, f))
		}
	}
	return errs
}

// checkPaths makes -out, -bin-dir and -state-dir absolute and checks that
// the state dir is a dedicated directory whose node sockets, at the largest
// size, fit config.MaxSocketPath.
func (o *options) checkPaths() []error {
	var errs []error
	for _, p := range []*string{&o.out, &o.binDir, &o.stateDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			errs = append(errs, err)
		}
		*p = abs
	}
	if o.stateDir == "/" || o.stateDir == "/tmp" {
		errs = append(errs, fmt.Errorf("-state-dir %s: bench removes it; use a dedicated directory", o.stateDir))
	}
	maxNodes := 0
	for _, n := range o.nodes {
		maxNodes = max(maxNodes, n)
	}
	if maxNodes > 0 {
		paths := config.Paths{State: o.stateDir}
		for _, s := range paths.Node(Layout{Name: o.name}.NodeName(maxNodes - 1)).Sockets() {
			if len(s) > config.MaxSocketPath {
				errs = append(errs, fmt.Errorf("-state-dir %s: socket path %s is %d bytes, over %d", o.stateDir, s, len(s), config.MaxSocketPath))
			}
		}
	}
	return errs
}

// intList is a flag of comma-separated integers.
type intList []int

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	return joinInts(*l)
}

func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}
