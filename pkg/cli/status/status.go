// Package status implements `kubernix status`.
package status

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/process"
)

// NewCommand returns `kubernix status`: the supervisor, every component
// with its PID, its state (running, stopped, or as the supervisor recorded
// it: unhealthy, restarting, crash-looping, failed), its restarts and last
// failure, and, when the apiserver answers, the nodes'
// Ready condition and the addons' availability. --timings shows when each
// component started and became ready in the last up. It exits 1 when
// something is not running or not healthy.
func NewCommand(env *common.Env) *cobra.Command {
	var timings bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's components, PIDs and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			if timings {
				return printTimings(env.Streams.Out, cfg.Paths())
			}
			return printStatus(cmd.Context(), env.Streams.Out, cfg)
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().BoolVar(&timings, "timings", false, "show the phase and component timings of the last up")
	return cmd
}

func printStatus(ctx context.Context, out io.Writer, cfg config.Config) error {
	p := cfg.Paths()
	plan, _, err := common.Plan(ctx, cfg, false)
	if err != nil {
		return err
	}
	ds, err := cluster.Describe(plan)
	if err != nil {
		return err
	}
	pid, supervised := cluster.Running(p)
	if supervised {
		fmt.Fprintf(out, "cluster %q: supervisor pid %d, state %s\n", cfg.Name, pid, p.State)
	} else {
		fmt.Fprintf(out, "cluster %q: no supervisor running (state %s)\n", cfg.Name, p.State)
	}
	healthy := printComponents(out, ds, supervised) && supervised
	for _, n := range cfg.NodeNames() {
		if b, err := os.ReadFile(cluster.FailedFile(p, n)); err == nil {
			healthy = false
			fmt.Fprintf(out, "node %s FAILED: %s", n, b)
		}
	}
	warnExpiring(out, plan)
	// With no apiserver, its address may not be routed to the cluster
	// any more (after down): do not dial it through the default route.
	if _, ok := process.Running(p.Run(config.ControlPlaneScope, apiserver.Name)); !ok {
		fmt.Fprintln(out, "apiserver: not running")
		return unhealthy(cfg)
	}
	client, err := newClient(p)
	if err != nil {
		return err
	}
	if ok, err := printNodes(ctx, out, client); err != nil {
		fmt.Fprintf(out, "apiserver: not answering (%v)\n", err)
		return unhealthy(cfg)
	} else if !ok {
		healthy = false
	}
	if !printAddons(ctx, out, client, cfg, ds) || !healthy {
		return unhealthy(cfg)
	}
	return nil
}

func unhealthy(cfg config.Config) error {
	return &common.ExitError{Code: 1, Err: fmt.Errorf("cluster %q is not healthy", cfg.Name)}
}

func newClient(p config.Paths) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.ClientKubeconfig(p))
	if err != nil {
		return nil, err
	}
	rc.Timeout = 3 * time.Second
	return kubernetes.NewForConfig(rc)
}

// printComponents prints a line per process of the cluster (ds) in start
// order: its PID, state, restarts, start time and last failure. It
// reports whether every one runs, healthy. The supervisor's records
// count only while it runs (supervised).
func printComponents(out io.Writer, ds []components.Description, supervised bool) bool {
	healthy := true
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSCOPE\tPID\tSTATE\tRESTARTS\tSINCE\tLAST FAILURE")
	order, err := components.StartOrder(ds)
	if err != nil {
		order = ds
	}
	for _, d := range components.Processes(order) {
		dir := d.Command.RunDir
		info, _ := process.ReadRun(dir)
		pid, running := process.Running(dir)
		if !running {
			pid = info.PID
		}
		rec, err := components.ReadSupervision(dir)
		if err != nil || !supervised {
			rec = components.Supervision{} // none, or the last run's
		}
		state := componentState(running, rec.State)
		if state != components.StateRunning {
			healthy = false
		}
		since := "-"
		if !info.StartedAt.IsZero() {
			since = info.StartedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Name, d.Scope, pidString(pid), state, rec.Restarts, since, lastFailure(rec))
	}
	tw.Flush()
	return healthy
}

func pidString(pid int) string {
	if pid <= 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// printNodes prints each Node's Ready condition, internal IP and pod
// CIDRs, and reports whether all are Ready; the error is the API's.
func printNodes(ctx context.Context, out io.Writer, client kubernetes.Interface) (bool, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	healthy := true
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tREADY\tINTERNAL-IP\tPOD-CIDR")
	for _, n := range nodes.Items {
		ready := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status)
			}
		}
		if ready != "True" {
			healthy = false
		}
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, ready, ip, strings.Join(n.Spec.PodCIDRs, ","))
	}
	tw.Flush()
	return healthy, nil
}

// printAddons prints each enabled addon's health, from the addon table:
// its Deployment's ready replicas and whether its processes run. It
// reports whether each has a ready replica and all its processes.
func printAddons(ctx context.Context, out io.Writer, client kubernetes.Interface, cfg config.Config, ds []components.Description) bool {
	healthy := true
	for _, name := range cfg.Addons {
		a, ok := addons.Lookup(name)
		if !ok {
			continue
		}
		var parts []string
		if a.Deployment != "" {
			part, ok := deploymentHealth(ctx, client, a.Deployment)
			parts, healthy = append(parts, part), healthy && ok
		}
		for _, d := range components.Processes(ds) {
			if slices.Contains(a.Components, d.Name) {
				_, running := process.Running(d.Command.RunDir)
				state := "running"
				if !running {
					state, healthy = "not running", false
				}
				parts = append(parts, components.ID(d.Name, d.Scope)+" "+state)
			}
		}
		fmt.Fprintf(out, "addon %s: %s\n", a.Name, strings.Join(parts, ", "))
	}
	return healthy
}

// deploymentHealth words the ready replicas of the Deployment
// "namespace/name", and reports whether one is ready.
func deploymentHealth(ctx context.Context, client kubernetes.Interface, deployment string) (string, bool) {
	ns, name, _ := strings.Cut(deployment, "/")
	dep, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error(), false
	}
	return fmt.Sprintf("%d/%d ready", dep.Status.ReadyReplicas, dep.Status.Replicas), dep.Status.ReadyReplicas > 0
}

// componentState is the state status shows for a component whose
// process runs or not, given the state its supervisor recorded ("" for
// none): a failure the supervisor is handling (restarting, crash-looping,
// failed) or a failing liveness check shows as such; otherwise it is
// running or stopped.
func componentState(running bool, recorded components.State) components.State {
	switch recorded {
	case components.StateRestarting, components.StateCrashLooping, components.StateFailed:
		return recorded
	case components.StateUnhealthy:
		if running {
			return recorded
		}
	}
	if running {
		return components.StateRunning
	}
	return components.StateStopped
}

// lastFailure is the first line of the component's last failure and when
// it happened, or "-".
func lastFailure(rec components.Supervision) string {
	if rec.LastFailure == "" {
		return "-"
	}
	first, _, _ := strings.Cut(rec.LastFailure, "\n")
	const max = 100
	if len(first) > max {
		first = first[:max-3] + "..."
	}
	return fmt.Sprintf("%s: %s", rec.LastFailureAt.Local().Format(time.TimeOnly), first)
}

// warnExpiring prints a warning for each certificate of the cluster that
// expires within pki.RenewBefore or has expired, and for each it cannot
// read. It changes nothing and does not make the cluster unhealthy: the
// cluster works until the date, and the next up renews them.
func warnExpiring(out io.Writer, plan *cluster.Plan) {
	now := time.Now()
	exp, err := pki.Expiring(pki.Files(plan.PKISpec()).Certificates(), now, pki.RenewBefore)
	for _, line := range expiryWarnings(exp, now) {
		fmt.Fprintln(out, line)
	}
	if err != nil {
		fmt.Fprintf(out, "WARNING: certificates not checked: %v\n", err)
	}
}

// expiryWarnings words one line per expiring certificate: which file and
// identity, when, and what to do.
func expiryWarnings(exp []pki.Expiry, now time.Time) []string {
	var out []string
	for _, e := range exp {
		when := "expired"
		if left := e.NotAfter.Sub(now); left > 0 {
			when = "expires in " + duration.HumanDuration(left)
		}
		out = append(out, fmt.Sprintf("WARNING: certificate %s (%s) %s, at %s: `kubernix down` then `kubernix up` renews it",
			e.Path, e.CommonName, when, e.NotAfter.UTC().Format(time.RFC3339)))
	}
	return out
}

func printTimings(out io.Writer, p config.Paths) error {
	t, err := cluster.ReadTimings(p)
	if err != nil {
		return fmt.Errorf("no timings recorded (has the cluster been up?): %w", err)
	}
	fmt.Fprintf(out, "total %s (prepare %s)\n", t.Total.Round(time.Millisecond), t.Prepare.Round(time.Millisecond))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tCOMPONENT\tSTARTED(+s)\tREADY(+s)\tTOOK")
	var first time.Time
	for _, c := range t.Components {
		if first.IsZero() || c.Started.Before(first) {
			first = c.Started
		}
	}
	sort.Slice(t.Components, func(i, j int) bool { return t.Components[i].Started.Before(t.Components[j].Started) })
	for _, c := range t.Components {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%s\n", c.Phase, c.Name, c.Started.Sub(first).Seconds(), c.Ready.Sub(first).Seconds(), c.Elapsed.Round(time.Millisecond))
	}
	return tw.Flush()
}
