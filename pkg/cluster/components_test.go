package cluster

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/pki"
)

// TestBootNeeds checks what each component of a 3-node cluster waits for:
// the kubelets and the controller-manager start once the apiserver
// serves; what lists and watches under the bootstrap RBAC policy (the
// scheduler, kube-proxy) or writes to kube-system starts once it is ready.
func TestBootNeeds(t *testing.T) {
	plan := testPlan(t, 3)
	plan.Paths = config.Paths{State: t.TempDir()}
	bundle, err := pki.Ensure(plan.PKISpec())
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Plan: plan, PKI: bundle, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
		{APIServerReady, []string{"kube-apiserver"}},
		{"kube-controller-manager", []string{"kube-apiserver"}},
		{"kube-scheduler", []string{APIServerReady}},
		{"controller-accounts", []string{APIServerReady}},
		{"containerd@" + node, []string{"sandbox@" + node}},
		{"kubelet@" + node, []string{"kube-apiserver", "containerd@" + node}},
		{"kube-proxy@" + node, []string{APIServerReady, "sandbox@" + node}},
		{"coredns-manifest", []string{APIServerReady}},
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
