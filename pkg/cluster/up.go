package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components/cloudcontroller"
	"github.com/kubernix/kubernix/pkg/components/containerd"
	"github.com/kubernix/kubernix/pkg/components/netpolagent"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/pki"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

// Options tune Up.
type Options struct {
	// Progress receives one line per phase and the final summary; may be nil.
	Progress io.Writer
	// Retain keeps what a failed Up started (processes, network, mounts)
	// for inspection instead of cleaning it up.
	Retain bool
	// KubeconfigPath is where the admin context is merged; "" means the
	// invoking user's kubeconfig (kubeconfig.UserTarget).
	KubeconfigPath string
	// Asked is the settings up was given, as config.MarshalExplicit
	// renders them, written to Paths.AskedConfigFile once the cluster is
	// Ready; nil writes nothing.
	Asked []byte
}

// Cluster is a running cluster, as Up returns it.
type Cluster struct {
	Plan       *plan.Plan
	PKI        *pki.Bundle
	Log        *slog.Logger
	opts       Options
	client     kubernetes.Interface
	restConfig *rest.Config
	registry   *boot.Sequence
	timings    *timings
	images     imagesFolder // images.go
	// began is when this up started: status older than that (etcd keeps
	// the last run's) says nothing about this run.
	began time.Time
	// importer reads each image tarball once for all nodes (built-in
	// images and the images folder's).
	importer *containerd.Importer
	// kubeconfigWarning says why the context is not in the user's
	// kubeconfig, if it is not (see mergeUserKubeconfig).
	kubeconfigWarning string

	mu     sync.Mutex
	agents map[string][]boot.Stoppable // node name -> kubelet, kube-proxy
	// after deploys the after-Ready addons once Up's boot is over
	// (afterready.go).
	after afterReady
}

// Up brings the cluster of a plan that Prepare checked up, and returns
// once every node is Ready and the addons are Available. It checks
// nothing again: the caller holds the state dir's lock (Lock) since
// Prepare. On failure it cleans up everything it did (unless
// opts.Retain) and returns the error, which names the failing component
// and carries its log tail. A plan Prepare did not pass is an error.
func Up(ctx context.Context, pl *plan.Plan, log *slog.Logger, opts Options) (*Cluster, error) {
	if !pl.Checked {
		return nil, errors.New("the plan of cluster " + pl.Cfg.Name + " did not pass Prepare's checks")
	}
	c := &Cluster{Plan: pl, Log: log, opts: opts, timings: newTimings(), agents: map[string][]boot.Stoppable{}}
	if err := RemoveLeftovers(ctx, pl, log); err != nil {
		return nil, err
	}
	if err := claimName(pl); err != nil {
		return nil, fmt.Errorf("claim cluster name: %w", err)
	}
	if err := claimHostNamespaces(pl); err != nil {
		return nil, fmt.Errorf("claim the host's namespaces: %w", err)
	}
	begin := time.Now()
	c.began = begin
	err := c.up(ctx)
	if err != nil {
		if opts.Retain {
			return nil, fmt.Errorf("%w (--retain: state kept in %s; `kubernix down` removes it)", err, pl.Paths.State)
		}
		cleanupErr := c.Down(context.WithoutCancel(ctx))
		return nil, errors.Join(err, cleanupErr)
	}
	c.timings.Total = time.Since(begin)
	_ = c.timings.save(pl.Paths)
	if opts.Asked != nil {
		if err := state.WriteFile(pl.Paths.AskedConfigFile(), opts.Asked); err != nil {
			log.Warn("record the settings up was given", "err", err)
		}
	}
	c.progress("cluster %q ready in %s: %d node(s), kubectl context %s\n", pl.Cfg.Name, round(c.timings.Total), len(pl.Nodes), pl.Cfg.ContextName())
	c.progress("%s", c.kubeconfigWarning)
	if !pl.Cfg.NetworkPolicy {
		// Progress reaches the user also when up detaches; the log is the
		// supervisor's.
		c.progress("WARNING: %s\n", netpolOffWarning)
		log.Warn(netpolOffWarning)
	}
	c.startAfterReady(ctx)
	return c, nil
}

// netpolOffWarning is what up says of a cluster made with
// network_policy = false.
const netpolOffWarning = "network_policy is false (--network-policy=false): NetworkPolicies are accepted but not enforced"

func (c *Cluster) up(ctx context.Context) error {
	p := c.Plan
	if err := p.Paths.MakeState(); err != nil {
		return err
	}
	if err := privateDirs(p.Paths.Logs(), p.Paths.Images()); err != nil {
		return err
	}
	if err := process.RecordSelf(p.Paths.Run(state.SupervisorScope, state.SupervisorName), state.SupervisorName, state.SupervisorScope); err != nil {
		return fmt.Errorf("record supervisor: %w", err)
	}
	// The record says how this run was laid out, so a cleanup after a
	// crash finds what it made whatever the defaults are by then.
	recorded := p.Cfg
	recorded.Executor = p.Executor
	b, err := config.Marshal(recorded)
	if err != nil {
		return err
	}
	if err := state.WriteFile(p.Paths.ConfigFile(), b); err != nil {
		return err
	}
	if err := c.prepareHost(); err != nil {
		return err
	}
	if err := pruneRegistryHosts(p); err != nil {
		return err
	}
	if err := c.prepare(); err != nil {
		return err
	}
	// A killed `image load` may have left its store behind.
	if err := os.RemoveAll(p.Paths.ImageCache()); err != nil {
		return err
	}
	if err := privateDirs(p.Paths.ImageCache()); err != nil {
		return err
	}
	if c.importer, err = containerd.NewImporter(filepath.Join(p.Paths.ImageCache(), "supervisor")); err != nil {
		return err
	}
	c.registry = boot.NewSequence(c.Log)
	if err := c.register(c.registry); err != nil {
		return err
	}
	if err := c.registry.Start(ctx, c); err != nil {
		return err
	}
	c.startImageWatcher(ctx)
	c.kubeconfigWarning = c.mergeUserKubeconfig()
	return nil
}

// prepare sets the host network up, ensures the PKI, writes the
// kubeconfigs and makes the supervisor's API client.
func (c *Cluster) prepare() error {
	p := c.Plan
	prep := time.Now()
	if err := network.Setup(p.NetworkPlan()); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	var err error
	if c.PKI, err = pki.Ensure(p.PKISpec()); err != nil {
		return err
	}
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}
	c.timings.Prepare = time.Since(prep)
	c.progress("%-15s network, PKI and kubeconfigs  %s\n", "Prepare", round(c.timings.Prepare))
	c.restConfig, err = clientcmd.BuildConfigFromFlags("", state.SuperAdminKubeconfig(p.Paths))
	if err != nil {
		return err
	}
	c.restConfig.QPS, c.restConfig.Burst = 50, 100
	c.client, err = kubernetes.NewForConfig(c.restConfig)
	return err
}

// RecordedPlan returns the plan of the config the cluster in plan's state
// dir was last started with (<state>/kubernix.toml), with plan's host
// facts: what a cleanup after a crash must work from. Without a record it
// returns plan itself. Errors wrap config.ErrInvalid when the record
// cannot be read.
func RecordedPlan(pl *plan.Plan) (*plan.Plan, error) {
	file := pl.Paths.ConfigFile()
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return pl, nil
	}
	cfg, err := config.Load(nil, []string{config.EnvPrefix + "CONFIG=" + file})
	if err != nil {
		return nil, fmt.Errorf("the record of the last run: %w", err)
	}
	cfg.StateDir = pl.Paths.State
	return plan.New(cfg, pl.Facts, pl.ImagesDir, plan.Rootless{Enabled: pl.Rootless, StateDir: pl.RootlesskitStateDir})
}

// RemoveLeftovers removes what a run of the cluster in plan's state dir
// left behind when its supervisor was killed, as that run recorded it
// (RecordedPlan: its node count and executor may differ from plan's).
// Call it only when the cluster's supervisor is not running. It does
// nothing when there are no leftovers.
func RemoveLeftovers(ctx context.Context, pl *plan.Plan, log *slog.Logger) error {
	recorded, err := RecordedPlan(pl)
	if err != nil {
		return err
	}
	if left, _ := Leftovers(recorded); len(left) > 0 {
		log.Info("removing leftovers of a previous run", "items", len(left))
		if err := Cleanup(context.WithoutCancel(ctx), recorded, log); err != nil {
			return fmt.Errorf("remove leftovers of a previous run: %w", err)
		}
	}
	return nil
}

// writeKubeconfigs writes one kubeconfig per client identity.
func (c *Cluster) writeKubeconfigs() error {
	p, b := c.Plan, c.PKI
	server := p.APIServerURL()
	ids := map[string]pki.Pair{
		"admin":                   b.Admin,
		state.SuperAdmin:          b.SuperAdmin,
		"kube-controller-manager": b.ControllerManager,
		"kube-scheduler":          b.Scheduler,
		"kube-proxy":              b.KubeProxy,
		cloudcontroller.Name:      b.CloudController,
		netpolagent.Name:          b.NetpolAgent,
	}
	for _, nd := range p.Nodes {
		ids[nd.Name] = b.Kubelets[nd.Name].Client
	}
	for id, pair := range ids {
		ctxName := p.Cfg.ContextName()
		if err := kubeconfig.Write(p.Paths.Kubeconfig(id), ctxName, server, b.CA.Cert, pair); err != nil {
			return fmt.Errorf("kubeconfig %s: %w", id, err)
		}
	}
	if st, ok := state.ReadRootless(p.Paths); ok && p.Rootless {
		hostServer := "https://" + st.HostAPIServer.String()
		if err := kubeconfig.Write(state.HostKubeconfig(p.Paths), p.Cfg.ContextName(), hostServer, b.CA.Cert, b.Admin); err != nil {
			return fmt.Errorf("kubeconfig for the host: %w", err)
		}
	}
	return nil
}

// Down stops the components in reverse order and removes everything the
// cluster put on the host. The state dir (PKI, etcd data) is kept for the
// next up.
func (c *Cluster) Down(ctx context.Context) error {
	var errs []error
	begin := time.Now()
	c.stopAfterReady()
	c.stopImageWatcher()
	if c.registry != nil {
		errs = append(errs, c.registry.Stop(ctx))
	}
	if c.importer != nil {
		errs = append(errs, c.importer.Close())
	}
	errs = append(errs, Cleanup(ctx, c.Plan, c.Log))
	c.progress("cluster %q down in %s\n", c.Plan.Cfg.Name, round(time.Since(begin)))
	return errors.Join(errs...)
}

func (c *Cluster) progress(format string, args ...any) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, format, args...)
	}
}

// PhaseStarted implements boot.Observer.
func (c *Cluster) PhaseStarted(boot.Phase) {}

// PhaseDone implements boot.Observer: one progress line per phase.
func (c *Cluster) PhaseDone(ph boot.Phase, elapsed time.Duration) {
	names := c.timings.names(ph)
	c.progress("%-15s %-30s %s\n", ph, strings.Join(names, ", "), round(elapsed))
	c.timings.phase(ph, elapsed)
}

// ComponentDone implements boot.Observer.
func (c *Cluster) ComponentDone(t boot.Timing) { c.timings.add(t) }

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

type timings struct {
	mu sync.Mutex
	state.Timings
}

func newTimings() *timings {
	return &timings{Timings: state.Timings{Phases: map[string]time.Duration{}}}
}

func (t *timings) add(ct boot.Timing) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Components = append(t.Components, ct)
}

func (t *timings) phase(ph boot.Phase, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Phases[ph.String()] = d
}

func (t *timings) names(ph boot.Phase) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, ct := range t.Components {
		if ct.Phase == ph.String() {
			out = append(out, ct.Name)
		}
	}
	sort.Strings(out)
	if len(out) > 4 {
		out = append(out[:3], fmt.Sprintf("+%d more", len(out)-3))
	}
	return out
}

func (t *timings) save(paths config.Paths) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, err := json.MarshalIndent(t.Timings, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteFile(state.TimingsFile(paths), b)
}
