package preflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/components/controllermanager"
	"github.com/kubernix/kubernix/pkg/components/kubelet"
	"github.com/kubernix/kubernix/pkg/components/kubeproxy"
	"github.com/kubernix/kubernix/pkg/components/scheduler"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/process"
)

// CheckComponents checks, before anything is created, what the components
// themselves decide about plan's config, and reads the user's audit
// policy into plan.AuditPolicy:
//
//   - the audit policy file (--audit-policy) decodes as the apiserver
//     decodes it (apiserver.CheckAuditPolicy);
//   - every Kubernetes component knows and accepts each feature gate
//     (--feature-gates), asked of its own binary (gateChecks), all at once;
//     a component whose binary is missing (config validate on a host
//     without them; up's doctor requires them) is not asked.
//
// The error names each problem's flag and wraps config.ErrInvalid (exit
// 2), or wraps the error that kept a check from running.
func CheckComponents(ctx context.Context, pl *plan.Plan) error {
	var errs []error
	if file := pl.Cfg.AuditPolicy; file != "" {
		b, err := os.ReadFile(file)
		if err == nil {
			err = apiserver.CheckAuditPolicy(b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--audit-policy %s: not an audit policy the kube-apiserver takes (apiVersion audit.k8s.io/v1, kind Policy, at least one rule): %w", file, err))
		}
		pl.AuditPolicy = b
	}
	gateErrs, err := checkFeatureGates(ctx, pl)
	if err != nil {
		return fmt.Errorf("check --feature-gates: %w", err)
	}
	if errs = append(errs, gateErrs...); len(errs) > 0 {
		return fmt.Errorf("%w: %w", config.ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// gateCheck is how one component's binary says whether it accepts a set
// of feature gates without starting: Args (given the gates' flag and a
// scratch dir) make it parse and set its feature gates, then stop.
// Verified against the v1.37 binaries: an unknown gate (or a locked
// one set against its lock) makes each exit 1 with "unrecognized feature
// gate: <gate>" (or "cannot set feature gate ... locked") before it does
// anything else; accepted gates make it go on as described.
type gateCheck struct {
	name string
	args func(gates, dir string) []string
	// reached, if set, is found in the output only when the binary went
	// past its feature gates, for a binary that has no way to stop there
	// with exit status 0; else exit status 0 means accepted.
	reached func(dir string) string
}

// gateChecks asks each Kubernetes component about its feature gates:
//   - kube-apiserver, -controller-manager, -scheduler parse their flags,
//     set the gates, then print their version and exit 0 (--version);
//   - kube-proxy does the same, then writes its default config to the
//     scratch dir (--write-config-to) and exits 0 (--version ignores the
//     gates: it exits while parsing);
//   - the kubelet sets the gates after its flags (--version and --help
//     exit before that), then loads its --config: given a file that does
//     not exist, it exits 1 naming that file, which it reaches only once
//     it accepted the gates.
var gateChecks = []gateCheck{
	{name: apiserver.Name, args: versionArgs},
	{name: controllermanager.Name, args: versionArgs},
	{name: scheduler.Name, args: versionArgs},
	{name: kubeproxy.Name, args: func(gates, dir string) []string {
		return []string{gates, "--write-config-to=" + filepath.Join(dir, "kube-proxy.yaml")}
	}},
	{name: kubelet.Name, args: func(gates, dir string) []string {
		return []string{gates, "--config=" + kubeletSentinel(dir)}
	}, reached: kubeletSentinel},
}

func versionArgs(gates, _ string) []string { return []string{gates, "--version"} }

// kubeletSentinel is the missing config file the kubelet's gate check
// names in its --config.
func kubeletSentinel(dir string) string { return filepath.Join(dir, "kubelet-gate-check-absent.yaml") }

// gateCheckTimeout bounds one run of a component binary by gateChecks.
const gateCheckTimeout = 30 * time.Second

// checkFeatureGates returns one error per component that refuses
// plan's feature gates, naming the component and each gate it refuses
// alone, with its own words; none when there are no gates. The error
// says why a check could not run (a binary that does not start).
func checkFeatureGates(ctx context.Context, pl *plan.Plan) ([]error, error) {
	gates := pl.Cfg.FeatureGates
	if len(gates) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "kubernix-gates-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	problems := make([]error, len(gateChecks))
	g, gctx := errgroup.WithContext(ctx)
	for i, gc := range gateChecks {
		if !fileinfo.Exists(pl.Bin(gc.name)) {
			continue
		}
		g.Go(func() error {
			var err error
			problems[i], err = gc.refusal(gctx, pl.Bin(gc.name), gates, filepath.Join(dir, gc.name))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(problems, func(err error) bool { return err == nil }), nil
}

// refusal returns nil when binary accepts gates, else an error naming
// the component and each gate it refuses on its own (all of them when
// none alone is refused), with its last output line.
func (gc gateCheck) refusal(ctx context.Context, binary string, gates map[string]bool, dir string) (error, error) {
	ok, out, err := gc.accepts(ctx, binary, gates, dir)
	if ok || err != nil {
		return nil, err
	}
	refused := map[string]bool{}
	for _, gate := range slices.Sorted(maps.Keys(gates)) {
		alone := map[string]bool{gate: gates[gate]}
		if ok, gateOut, err := gc.accepts(ctx, binary, alone, dir); err != nil {
			return nil, err
		} else if !ok {
			refused[gate], out = gates[gate], gateOut
		}
	}
	if len(refused) == 0 {
		refused = gates
	}
	return fmt.Errorf("--feature-gates %s: %s refuses it: %s", strings.TrimPrefix(components.FeatureGatesArgs(refused)[0], "--feature-gates="),
		gc.name, lastLine(out)), nil
}

// accepts runs binary with gates and reports whether it accepted them,
// with its output. The error says why it did not run.
func (gc gateCheck) accepts(ctx context.Context, binary string, gates map[string]bool, dir string) (bool, []byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gateCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, gc.args(components.FeatureGatesArgs(gates)[0], dir)...)
	cmd.Env = process.Environ(os.Environ()) // as the component gets it
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		return false, out, fmt.Errorf("run %s: %w", cmd, errors.Join(err, ctx.Err()))
	}
	if gc.reached != nil {
		return bytes.Contains(out, []byte(gc.reached(dir))), out, nil
	}
	return err == nil, out, nil
}

// lastLine is the last non-empty line of out, trimmed, without its klog
// header (severity, date, time, pid, file:line).
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if klogHeader.MatchString(line) {
		_, line, _ = strings.Cut(line, "] ")
	}
	return line
}

// klogHeader starts a klog line: "E1201 23:15:15.374437   20267 run.go:72] ".
var klogHeader = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^ \]]+\] `)
