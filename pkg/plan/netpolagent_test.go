package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/netpolagent"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// TestNetpolAgents: network_policy describes one agent per node, which
// owns the sandbox's table in a node sandbox and the cluster's own table
// in the host's (or rootlesskit's) namespace, and waits for its RBAC;
// network_policy = false describes none.
func TestNetpolAgents(t *testing.T) {
	hostTable := network.NamesFor("golden").NetpolTable()
	tests := []struct {
		name      string
		pl        func(t testing.TB) *plan.Plan
		off       bool
		wantTable string // "" for no agent
	}{
		{"3 sandboxed nodes", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 3) }, false, netpolagent.SandboxTable},
		{"process executor", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 1, config.ExecutorProcess) }, false, hostTable},
		{"rootless", plantest.Rootless, false, hostTable},
		{"off, sandboxed", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 3) }, true, ""},
		{"off, process executor", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 1, config.ExecutorProcess) }, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := tt.pl(t)
			pl.Cfg.NetworkPolicy = !tt.off
			ds := describeByID(t, pl)
			for _, nd := range pl.Nodes {
				id := components.ID(netpolagent.Name, nd.Name)
				d, ok := ds[id]
				if ok != (tt.wantTable != "") {
					t.Fatalf("%s described %v, want %v", id, ok, tt.wantTable != "")
				}
				if !ok {
					continue
				}
				if got, _ := flagValue(d.Command.Args, "--table"); got != tt.wantTable {
					t.Errorf("%s --table=%q, want %q", id, got, tt.wantTable)
				}
				if !slices.Contains(d.Needs, "cluster-admins") {
					t.Errorf("%s needs %q, not the cluster-admins task that grants its RBAC", id, d.Needs)
				}
				if got, _ := flagValue(d.Command.Args, "--kubeconfig"); got != pl.Paths.Kubeconfig(netpolagent.Name) {
					t.Errorf("%s --kubeconfig=%q, want the agents' shared %s", id, got, pl.Paths.Kubeconfig(netpolagent.Name))
				}
			}
			for id := range ds {
				if strings.HasPrefix(id, netpolagent.Name+"@") && pl.NodeByName(strings.TrimPrefix(id, netpolagent.Name+"@")) == nil {
					t.Errorf("%s is on no node of the plan", id)
				}
			}
		})
	}
}

// flagValue returns the value of --flag=value in args.
func flagValue(args []string, flag string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}
