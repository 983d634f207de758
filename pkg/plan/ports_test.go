package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/components"
	ppcomp "github.com/kubernix/kubernix/pkg/components/portproxy"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// portsConfig is a 2-node cluster on 10.61.0.0/16 whose node 1 publishes
// a NodePort on 127.0.0.1 and a UDP hostPort on every address.
func portsConfig(executor string, family ...string) config.Config {
	cfg := config.Default()
	if len(family) > 0 && config.HasIPv6(family[0]) {
		cfg.IPFamily, cfg.CIDR6 = family[0], "fd00:61::/48"
	}
	cfg.Name = "golden"
	cfg.CIDR = "10.61.0.0/16"
	cfg.Nodes, cfg.Executor = 2, executor
	cfg.NodeSpecs = []config.NodeSpec{{}, {Ports: []config.PortMapping{
		{NodePort: 30080, HostPort: 8080},
		{NodePort: 5353, Protocol: "udp", ListenAddress: "0.0.0.0"},
	}}}
	return cfg
}

// TestPublished: each mapping goes to its own node's IP (its sandbox's,
// or the bridge address when the node is the host), with its defaults.
func TestPublished(t *testing.T) {
	tests := []struct {
		executor, family string
		want             []string
	}{
		{config.ExecutorContainer, config.IPFamilyIPv4, []string{"tcp:127.0.0.1:8080=10.61.0.3:30080", "udp:0.0.0.0:5353=10.61.0.3:5353"}},
		{config.ExecutorProcess, config.IPFamilyIPv4, []string{"tcp:127.0.0.1:8080=10.61.0.1:30080", "udp:0.0.0.0:5353=10.61.0.1:5353"}},
		// The NodePorts of an IPv6 cluster answer on the nodes' IPv6
		// addresses only; those of a dual-stack one on both.
		{config.ExecutorContainer, config.IPFamilyIPv6, []string{"tcp:127.0.0.1:8080=[fd00:61::3]:30080", "udp:0.0.0.0:5353=[fd00:61::3]:5353"}},
		{config.ExecutorContainer, config.IPFamilyDual, []string{"tcp:127.0.0.1:8080=10.61.0.3:30080", "udp:0.0.0.0:5353=10.61.0.3:5353"}},
	}
	for _, tt := range tests {
		t.Run(tt.executor+"/"+tt.family, func(t *testing.T) {
			pl := plantest.Of(t, portsConfig(tt.executor, tt.family))
			var got []string
			for _, f := range pl.Forwards() {
				got = append(got, f.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Forwards = %q, want %q", got, tt.want)
			}
			var lines []string
			for _, p := range pl.Published() {
				lines = append(lines, p.String())
			}
			want := []string{"127.0.0.1:8080/TCP -> node golden-node-1 port 30080", "0.0.0.0:5353/UDP -> node golden-node-1 port 5353"}
			if !slices.Equal(lines, want) {
				t.Errorf("Published = %q, want %q", lines, want)
			}
		})
	}
}

// TestDescribePortProxy: the port proxy is described only when a node
// publishes a port, in the Infrastructure phase, with every forward.
func TestDescribePortProxy(t *testing.T) {
	find := func(pl *plan.Plan) *components.Description {
		ds, err := plan.Describe(pl)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Name == ppcomp.Name {
				return &d
			}
		}
		return nil
	}
	if d := find(plantest.Plan(t, 2)); d != nil {
		t.Errorf("a cluster without port mappings describes %s", d.ID())
	}
	d := find(plantest.Of(t, portsConfig(config.ExecutorContainer)))
	if d == nil {
		t.Fatal("no port-proxy described for [[nodes]] ports")
	}
	args := strings.Join(d.Command.Args, " ")
	for _, want := range []string{"port-proxy", "--healthz=10.61.0.1:10260", "--forward=tcp:127.0.0.1:8080=10.61.0.3:30080", "--forward=udp:0.0.0.0:5353=10.61.0.3:5353"} {
		if !strings.Contains(args, want) {
			t.Errorf("command %q lacks %q", args, want)
		}
	}
	if d.Phase != boot.Infrastructure || d.Kind != components.KindProcess || d.Probe.HTTPGet != "http://10.61.0.1:10260/healthz" {
		t.Errorf("port-proxy: phase %s, kind %s, probe %q", d.Phase, d.Kind, d.Probe.HTTPGet)
	}
	if !strings.Contains(d.Summary, "127.0.0.1:8080/TCP -> 10.61.0.3:30080") {
		t.Errorf("summary %q does not list the forwards", d.Summary)
	}
}

// TestHostPortsPortProxy: the port proxy's /healthz port is checked
// before up when, and only when, a node publishes a port.
func TestHostPortsPortProxy(t *testing.T) {
	for _, withPorts := range []bool{false, true} {
		cfg := portsConfig(config.ExecutorContainer)
		if !withPorts {
			cfg.NodeSpecs = nil
		}
		has := slices.ContainsFunc(plantest.HostPorts(t, plantest.Of(t, cfg)), func(hp plan.HostPort) bool {
			return hp.Component == "port-proxy (healthz)" && hp.Port == ppcomp.HealthzPort && hp.IP.String() == "10.61.0.1"
		})
		if has != withPorts {
			t.Errorf("with port mappings %v: HostPorts lists the port proxy's healthz: %v", withPorts, has)
		}
	}
}
