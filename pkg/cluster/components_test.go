package cluster

import (
	"context"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/release"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
)

// TestBootNeeds checks what each component of a 3-node cluster waits for:
// the kubelets and the controller-manager start once the apiserver
// serves; what lists and watches under the bootstrap RBAC policy (the
// scheduler, kube-proxy) or writes to kube-system starts once it is ready,
// and the NetworkPolicy agents once their own RBAC is applied too.
func TestBootNeeds(t *testing.T) {
	c := testCluster(t, 3)
	pl := c.Plan
	r := boot.NewSequence(c.Log)
	if err := c.register(r); err != nil {
		t.Fatal(err)
	}
	needs := map[string][]string{}
	for _, ph := range boot.Phases {
		for _, comp := range r.Components(ph) {
			if n, ok := comp.(boot.Needer); ok {
				needs[comp.Name()] = n.Needs()
			} else {
				needs[comp.Name()] = nil // every earlier phase
			}
		}
	}
	node := pl.Nodes[1].Name
	tests := []struct {
		component string
		want      []string
	}{
		{"kube-apiserver", []string{"etcd"}},
		{apiserver.ReadyName, []string{"kube-apiserver"}},
		{"kube-controller-manager", []string{"kube-apiserver"}},
		{"kube-scheduler", []string{apiserver.ReadyName}},
		{"controller-accounts", []string{apiserver.ReadyName}},
		{"cluster-admins", []string{apiserver.ReadyName}},
		{"containerd@" + node, []string{"sandbox@" + node}},
		{"kubelet@" + node, []string{"kube-apiserver", "containerd@" + node, "kube-proxy@" + node}},
		{"kube-proxy@" + node, []string{apiserver.ReadyName, "sandbox@" + node}},
		{"netpol-agent@" + node, []string{apiserver.ReadyName, "cluster-admins", "sandbox@" + node}},
		{"coredns-manifest", []string{apiserver.ReadyName}},
	}
	for _, tt := range tests {
		got, ok := needs[tt.component]
		if !ok {
			t.Errorf("%s is not registered", tt.component)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s needs %q, want %q", tt.component, got, tt.want)
		}
	}
}

// TestDescribedBinariesRequired ties the components to the doctor: every
// binary a described component runs is one the doctor looks for
// (bins.Required), so `kubernix doctor` checks what up will start.
func TestDescribedBinariesRequired(t *testing.T) {
	required := map[string]bool{}
	for _, b := range bins.Required(release.Default()) {
		required[b.Name] = true
	}
	for _, pl := range []*plan.Plan{plantest.Plan(t, 2), plantest.Plan(t, 1, config.ExecutorProcess), plantest.Rootless(t)} {
		ds, err := plan.Describe(pl)
		if err != nil {
			t.Fatal(err)
		}
		self, _ := os.Executable()
		for _, d := range components.Processes(ds) {
			if d.Binary == components.SelfBinary {
				if d.Command.Path != self {
					t.Errorf("%s runs %s, not this binary %s", d.ID(), d.Command.Path, self)
				}
				continue
			}
			if d.Binary == "" || !required[d.Binary] {
				t.Errorf("%s runs binary %q, which the doctor does not look for (bins.Required)", d.ID(), d.Binary)
			}
			if d.Command.Path != pl.Bin(d.Binary) {
				t.Errorf("%s runs %s, not the %s the doctor found (%s)", d.ID(), d.Command.Path, d.Binary, pl.Bin(d.Binary))
			}
		}
	}
}

// TestAddonComponents checks that each addon's components (addons.Table)
// are described exactly when the addon is enabled, and that `--addons
// coredns` alone gives the cluster of before the workload addons.
func TestAddonComponents(t *testing.T) {
	for _, a := range addons.Table {
		for _, on := range []bool{true, false} {
			pl := plantest.Plan(t, 1)
			pl.Cfg.Addons = []string{"coredns"}
			if on {
				pl.Cfg.Addons = append(pl.Cfg.Addons, a.Name)
			}
			ds, err := plan.Describe(pl)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range a.Components {
				found := slices.ContainsFunc(ds, func(d components.Description) bool { return d.Name == name })
				if found != on {
					t.Errorf("addon %s enabled %v: component %s described %v", a.Name, on, name, found)
				}
			}
		}
	}
	pl := plantest.Plan(t, 1)
	pl.Cfg.Addons = []string{"coredns"}
	if pl.NetworkPlan().LoadBalancerCIDR.IsValid() {
		t.Error("without the loadbalancer addon the host still routes the pool")
	}
	if ports := plantest.HostPorts(t, pl); slices.ContainsFunc(ports, func(hp plan.HostPort) bool { return hp.Port == pl.Cfg.RegistryPort }) {
		t.Errorf("without the registry addon its port is still checked: %v", ports)
	}
}

// TestDescribedBehaviours: every task a describer makes carries its work
// (Described.Hooks gives a Task), and every component builds into the
// boot sequence with the behaviours its describer gave it, so a new task
// without them fails here, not at up.
func TestDescribedBehaviours(t *testing.T) {
	for _, pl := range []*plan.Plan{plantest.Plan(t, 2), plantest.Plan(t, 1, config.ExecutorProcess), plantest.Rootless(t)} {
		all, err := plan.DescribeAll(pl)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range all {
			h := d.Hooks(idleLive{})
			if d.Kind == components.KindTask && h.Task == nil {
				t.Errorf("task %s has nothing to do", d.ID())
			}
			if d.Kind == components.KindProcess && d.Probe.HTTPGet == "" && d.Probe.CRI == "" && h.Ready == nil {
				t.Errorf("process %s has no readiness check", d.ID())
			}
		}
	}
}

// TestProbedPortsDeclared: a component probed on an address and port of
// its own (its Probe's or Liveness's HTTPGet) declares that port in
// Ports, so preflight checks it before up (HostPorts).
func TestProbedPortsDeclared(t *testing.T) {
	for _, pl := range []*plan.Plan{plantest.Plan(t, 2), plantest.Plan(t, 1, config.ExecutorProcess), plantest.Rootless(t)} {
		ds, err := plan.Describe(pl)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Kind != components.KindProcess {
				continue
			}
			for _, p := range []*components.Probe{&d.Probe, d.Liveness} {
				if p == nil || p.HTTPGet == "" {
					continue
				}
				u, err := url.Parse(p.HTTPGet)
				if err != nil {
					t.Fatal(err)
				}
				at, err := netip.ParseAddrPort(u.Host)
				if err != nil {
					t.Fatalf("%s probes %s: %v", d.ID(), p.HTTPGet, err)
				}
				if !slices.ContainsFunc(d.Ports, func(dp components.Port) bool { return dp.IP == at.Addr() && dp.Port == int(at.Port()) }) {
					t.Errorf("%s is probed on %s but does not declare it in Ports %v", d.ID(), at, d.Ports)
				}
			}
		}
	}
}

// idleLive is a Live that does nothing, for building hooks.
type idleLive struct{}

func (idleLive) ApplyManifest(context.Context, components.Description) error { return nil }
func (idleLive) WaitAvailable(context.Context, string) error                 { return nil }
func (idleLive) MakeControllerAccounts(context.Context) error                { return nil }
func (idleLive) ApplyAdminBindings(context.Context) error                    { return nil }
func (idleLive) DeleteStaleNodes(context.Context) error                      { return nil }
func (idleLive) RegisterNode(context.Context, *node.Node) error              { return nil }
func (idleLive) NodeReady(context.Context, *node.Node, time.Time) error      { return nil }
func (idleLive) ImportImages(context.Context, *node.Node) error              { return nil }
func (idleLive) SyncImagesFolder(context.Context, *node.Node) error          { return nil }
func (idleLive) NodeFailed(*node.Node, error)                                {}
func (idleLive) DeployAfterReady(components.Description, []string)           {}
