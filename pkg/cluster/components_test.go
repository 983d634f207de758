package cluster

import (
	"slices"
	"testing"

	"github.com/kubernix/kubernix/pkg/component"
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
		{APIServerReady, []string{"kube-apiserver"}},
		{"kube-controller-manager", []string{"kube-apiserver"}},
		{"kube-scheduler", []string{APIServerReady}},
		{"controller-accounts", []string{APIServerReady}},
		{"cluster-admins", []string{APIServerReady}},
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
