package cluster

import (
	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"os"
	"slices"
	"testing"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/components/apiserver"
)

// TestBootNeeds checks what each component of a 3-node cluster waits for:
// the kubelets and the controller-manager start once the apiserver
// serves; what lists and watches under the bootstrap RBAC policy (the
// scheduler, kube-proxy) or writes to kube-system starts once it is ready.
func TestBootNeeds(t *testing.T) {
	c := testCluster(t, 3)
	plan := c.Plan
	r := component.NewRegistry(c.Log)
	if err := c.register(r); err != nil {
		t.Fatal(err)
	}
	needs := map[string][]string{}
	for _, ph := range component.Phases {
		for _, comp := range r.Components(ph) {
			if n, ok := comp.(component.Needer); ok {
				needs[comp.Name()] = n.Needs()
			} else {
				needs[comp.Name()] = nil // every earlier phase
			}
		}
	}
	node := plan.Nodes[1].Name
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
		{"kubelet@" + node, []string{"kube-apiserver", "containerd@" + node}},
		{"kube-proxy@" + node, []string{apiserver.ReadyName, "sandbox@" + node}},
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
	for _, b := range bins.Required() {
		required[b.Name] = true
	}
	for _, plan := range []*Plan{testPlan(t, 2), testPlan(t, 1, config.ExecutorProcess), rootlessPlan(t)} {
		ds, err := Describe(plan)
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
			if d.Command.Path != plan.Bin(d.Binary) {
				t.Errorf("%s runs %s, not the %s the doctor found (%s)", d.ID(), d.Command.Path, d.Binary, plan.Bin(d.Binary))
			}
		}
	}
}
