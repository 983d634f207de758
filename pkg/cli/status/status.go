// Package status implements `kubernix status`.
package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

// NewCommand returns `kubernix status`: the supervisor, every component
// with its PID, its state (running, stopped, or as the supervisor recorded
// it: unhealthy, restarting, crash-looping, failed), its restarts and last
// failure, and, when the apiserver answers, the nodes'
// Ready condition and the addons' availability, as a table or with -o
// json|yaml as a Status. --timings shows when each component started and
// became ready in the last up (a Timings). It exits 1 when something is
// not running or not healthy, in every format.
func NewCommand(env *common.Env) *cobra.Command {
	var timings bool
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's components, PIDs and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckOutput(output); err != nil {
				return err
			}
			cfg, err := env.SavedConfig()
			var damaged *state.DamagedError
			if errors.As(err, &damaged) && !timings {
				st := collectDamaged(cfg, damaged, time.Now())
				if err := common.PrintOutput(env.Streams.Out, output, st, st.Table); err != nil {
					return err
				}
				return &common.ExitError{Code: 1, Err: fmt.Errorf("cluster %q is damaged: %w", cfg.Name, damaged)}
			}
			if err != nil {
				return err
			}
			if timings {
				t, err := state.ReadTimings(cfg.Paths())
				if err != nil {
					return fmt.Errorf("no timings recorded (has the cluster been up?): %w", err)
				}
				tt := newTimings(t)
				return common.PrintOutput(env.Streams.Out, output, tt, tt.Table)
			}
			st, err := collect(cmd.Context(), cfg, time.Now())
			if err != nil {
				return err
			}
			if err := common.PrintOutput(env.Streams.Out, output, st, st.Table); err != nil {
				return err
			}
			if !st.Healthy {
				return &common.ExitError{Code: 1, Err: fmt.Errorf("cluster %q is not healthy", cfg.Name)}
			}
			return nil
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().BoolVar(&timings, "timings", false, "show the phase and component timings of the last up")
	common.AddOutputFlag(cmd, &output)
	return cmd
}

// collect takes the status of the cluster of cfg at now. The error is
// the plan's; what it cannot reach (the apiserver) is recorded in the
// Status.
func collect(ctx context.Context, cfg config.Config, now time.Time) (Status, error) {
	p := cfg.Paths()
	pl, err := common.Plan(cfg)
	if err != nil {
		return Status{}, err
	}
	ds, err := plan.Describe(pl)
	if err != nil {
		return Status{}, err
	}
	st := Status{Cluster: cfg.Name, StateDir: p.State, KubernetesVersion: pl.Release.Kubernetes, IPFamily: cfg.IPFamily, Ephemeral: cfg.Ephemeral, Time: now.UTC()}
	st.Supervisor.PID, st.Supervisor.Running = state.Running(p)
	if !st.Supervisor.Running {
		st.Supervisor.PID = 0
	}
	st.Components = componentStatus(ds, st.Supervisor.Running)
	st.Ports = pl.Published()
	st.NetworkPolicies = NetworkPoliciesOff
	if cfg.NetworkPolicy {
		st.NetworkPolicies = NetworkPoliciesEnforced
	}
	for _, n := range cfg.NodeNames() {
		if b, err := os.ReadFile(state.FailedFile(p, n)); err == nil {
			st.FailedNodes = append(st.FailedNodes, FailedNode{Node: n, Reason: strings.TrimRight(string(b), "\n")})
		}
	}
	exp, err := pki.Expiring(pki.Files(pl.PKISpec()).Certificates(), now, pki.RenewBefore)
	st.ExpiringCertificates = certificates(exp)
	if err != nil {
		st.CertificatesError = err.Error()
	}
	// With no apiserver, its address may not be routed to the cluster
	// any more (after down): do not dial it through the default route.
	if _, ok := process.Running(p.Run(config.ControlPlaneScope, apiserver.Name)); ok {
		st.APIServer.Running = true
		client, err := newClient(p)
		if err != nil {
			return st, err
		}
		if st.Nodes, err = nodeStatus(ctx, client); err != nil {
			st.APIServer.Error = err.Error()
		} else {
			st.APIServer.Answering = true
			st.Addons = addonStatus(ctx, client, cfg, ds)
		}
	}
	st.Healthy = st.healthy()
	return st, nil
}

// collectDamaged is the status of a cluster whose record cannot be read
// (damaged), at now: the damage, the supervisor and the processes its
// run records name (state.RunDirs), as the supervisor recorded them
// while it runs; the apiserver is not asked, as without the record the
// cluster's addresses are not known. Never healthy.
func collectDamaged(cfg config.Config, damaged *state.DamagedError, now time.Time) Status {
	p := cfg.Paths()
	st := Status{Cluster: cfg.Name, StateDir: p.State, Time: now.UTC(), Damaged: damaged.Error()}
	st.Supervisor.PID, st.Supervisor.Running = state.Running(p)
	var ds []components.Description
	for _, dir := range state.RunDirs(p) {
		info, _ := process.ReadRun(dir)
		d := components.Description{Name: filepath.Base(dir), Scope: filepath.Base(filepath.Dir(dir)), Kind: components.KindProcess}
		if info.Name != "" {
			d.Name, d.Scope = info.Name, info.Scope
		}
		d.Command.RunDir = dir
		ds = append(ds, d)
	}
	st.Components = componentStatus(ds, st.Supervisor.Running)
	for _, c := range st.Components {
		if c.Name == apiserver.Name && c.State == components.StateRunning {
			st.APIServer = APIServer{Running: true, Error: "the cluster's record is damaged"}
		}
	}
	return st
}

// healthy is Status.Healthy, from the rest of s.
func (s Status) healthy() bool {
	ok := s.Damaged == "" && s.Supervisor.Running && len(s.FailedNodes) == 0 && s.APIServer.Answering
	for _, c := range s.Components {
		ok = ok && c.State == components.StateRunning
	}
	for _, n := range s.Nodes {
		ok = ok && n.Ready == string(corev1.ConditionTrue)
	}
	for _, a := range s.Addons {
		ok = ok && (a.Healthy || a.Installing)
	}
	return ok
}

func newClient(p config.Paths) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", state.ClientKubeconfig(p))
	if err != nil {
		return nil, err
	}
	rc.Timeout = 3 * time.Second
	return kubernetes.NewForConfig(rc)
}

// componentStatus is the status of each process of the cluster (ds) in
// start order: its PID, state, restarts, start time and last failure.
// The supervisor's records count only while it runs (supervised).
func componentStatus(ds []components.Description, supervised bool) []Component {
	order, err := components.StartOrder(ds)
	if err != nil {
		order = ds
	}
	out := []Component{}
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
		c := Component{Name: d.Name, Node: d.Scope, PID: pid, State: componentState(running, rec.State),
			Restarts: rec.Restarts, LastFailure: rec.LastFailure}
		if !info.StartedAt.IsZero() {
			c.Since = &info.StartedAt
		}
		if rec.LastFailure != "" {
			c.LastFailureAt = &rec.LastFailureAt
		}
		out = append(out, c)
	}
	return out
}

// nodeStatus lists each Node's Ready condition, internal IP and pod
// CIDRs; the error is the API's.
func nodeStatus(ctx context.Context, client kubernetes.Interface) ([]Node, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := []Node{}
	for _, n := range nodes.Items {
		nd := Node{Name: n.Name, Ready: string(corev1.ConditionUnknown), KubeletVersion: n.Status.NodeInfo.KubeletVersion, PodCIDRs: n.Spec.PodCIDRs}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				nd.Ready = string(c.Status)
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				nd.InternalIPs = append(nd.InternalIPs, a.Address)
			}
		}
		if len(nd.InternalIPs) > 0 {
			nd.InternalIP = nd.InternalIPs[0]
		}
		out = append(out, nd)
	}
	return out, nil
}

// addonStatus is each enabled addon's health, from the addon table: its
// Deployment's ready replicas and whether its processes run. An addon is
// healthy when it has a ready replica and all its processes.
func addonStatus(ctx context.Context, client kubernetes.Interface, cfg config.Config, ds []components.Description) []Addon {
	out := []Addon{}
	for _, name := range cfg.Addons {
		a, ok := addons.Lookup(name)
		if !ok {
			continue
		}
		st := Addon{Name: a.Name, Healthy: true}
		if a.Deployment != "" {
			st.Deployment = deploymentStatus(ctx, client, a.Deployment)
			st.Healthy = st.Deployment.ReadyReplicas > 0
		}
		if a.AfterReady && !st.Healthy {
			st.Installing, st.Error = afterReadyState(cfg.Paths(), a.Name)
		}
		for _, d := range components.Processes(ds) {
			if slices.Contains(a.Components, d.Name) {
				_, running := process.Running(d.Command.RunDir)
				st.Processes = append(st.Processes, AddonProcess{ID: components.ID(d.Name, d.Scope), Running: running})
				st.Healthy = st.Healthy && running
			}
		}
		out = append(out, st)
	}
	return out
}

// afterReadyState is how the supervisor's deployment of after-Ready addon
// name (addons.Addon.AfterReady) stands, as it recorded it
// (state.AfterReadyRunDir): installing while it deploys it, or why it
// failed. Without a record (an older kubernix's cluster) it is neither.
func afterReadyState(p config.Paths, name string) (installing bool, failure string) {
	rec, err := components.ReadSupervision(state.AfterReadyRunDir(p, name))
	if err != nil {
		return false, ""
	}
	switch rec.State {
	case components.StateStarting:
		return true, ""
	case components.StateFailed:
		return false, rec.LastFailure
	}
	return false, ""
}

// deploymentStatus reads the ready replicas of the Deployment
// "namespace/name".
func deploymentStatus(ctx context.Context, client kubernetes.Interface, deployment string) *Deployment {
	ns, name, _ := strings.Cut(deployment, "/")
	dep, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return &Deployment{Name: deployment, Error: err.Error()}
	}
	return &Deployment{Name: deployment, ReadyReplicas: dep.Status.ReadyReplicas, Replicas: dep.Status.Replicas}
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
