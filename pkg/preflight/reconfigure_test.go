package preflight

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state/statetest"
)

// recordRun writes a state dir as a run of cfg leaves it: kubernix.toml
// with the executor resolved (as Up records it), and etcd's data dir when
// withData.
func recordRun(t *testing.T, cfg config.Config, withData bool) {
	t.Helper()
	p := cfg.Paths()
	if err := p.MakeState(); err != nil {
		t.Fatal(err)
	}
	cfg.Executor = cfg.EffectiveExecutor(false)
	b, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	statetest.MustWrite(t, p.ConfigFile(), string(b))
	if withData {
		if err := os.MkdirAll(p.EtcdData(), 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConfigChanges: what shapes the cluster is listed, what needs a new
// cluster (its ranges, with etcd data to keep) is marked so and refused
// naming each key, the rest is applied; settings of the invocation are
// left out.
func TestConfigChanges(t *testing.T) {
	tests := []struct {
		name     string
		noData   bool
		release  string // the recorded kubernetes_version; "" for none
		edit     func(*config.Config)
		want     []string
		refusals []string // keys refuseNewCluster names
	}{
		{name: "unchanged", edit: func(*config.Config) {}},
		{name: "executor auto is the recorded one", edit: func(c *config.Config) { c.Executor = config.ExecutorAuto }},
		{name: "invocation settings", edit: func(c *config.Config) {
			c.LogLevel, c.LogFormat, c.Shell, c.NoShell, c.Kubeconfig = "debug", "json", "/bin/zsh", true, "/tmp/kc"
		}},
		{name: "applied", edit: func(c *config.Config) {
			c.Nodes, c.RegistryPort, c.ClusterDomain = 3, 5002, "example.test"
			c.FeatureGates = map[string]bool{"Foo": true}
			c.NodeSpecs = []config.NodeSpec{{Labels: map[string]string{"tier": "gpu"}}}
			c.Components.APIServer.Args = []string{"--v=4"}
		}, want: []string{
			"nodes: 2 → 3", "nodes[0].labels.tier: (unset) → 'gpu'", "registry_port: 5001 → 5002",
			"cluster_domain: 'cluster.local' → 'example.test'", "feature_gates.Foo: (unset) → true",
			"components.kube-apiserver.args: (unset) → ['--v=4']",
		}},
		{name: "node removed", edit: func(c *config.Config) { c.Nodes = 1 }, want: []string{"nodes: 2 → 1"}},
		{name: "loadbalancer pool applied", edit: func(c *config.Config) { c.LoadBalancerCIDR = "10.184.48.0/20" },
			want: []string{"loadbalancer_cidr: '10.184.32.0/20' → '10.184.48.0/20'"}},
		{name: "pod CIDR size", edit: func(c *config.Config) { c.NodeCIDRMaskSize = 25 },
			want:     []string{"node_cidr_mask_size: 24 → 25 (needs a new cluster: a Node's pod CIDR (spec.podCIDR) cannot change once set)"},
			refusals: []string{"node_cidr_mask_size"}},
		{name: "another cidr", edit: func(c *config.Config) {
			c.CIDR, c.NodeCIDR, c.ServiceCIDR, c.ClusterCIDR, c.LoadBalancerCIDR = "10.185.0.0/16", "", "", "", ""
			c.Resolve()
			c.Nodes = 3
		}, want: []string{
			"nodes: 2 → 3",
			"cidr: '10.184.0.0/16' → '10.185.0.0/16' (needs a new cluster: the service CIDR or pod CIDR carved from it moves with it)",
			"node_cidr: '10.184.0.0/24' → '10.185.0.0/24'",
			"service_cidr: '10.184.16.0/20' → '10.185.16.0/20' (needs a new cluster: existing Services (kubernetes, kube-dns) keep their ClusterIPs, which cannot change, in etcd)",
			"cluster_cidr: '10.184.128.0/17' → '10.185.128.0/17' (needs a new cluster: a Node's pod CIDR (spec.podCIDR) cannot change once set)",
			"loadbalancer_cidr: '10.184.32.0/20' → '10.185.32.0/20'",
		}, refusals: []string{"cidr", "service_cidr", "cluster_cidr"}},
		{name: "another cidr, its ranges kept", edit: func(c *config.Config) { c.CIDR = "10.184.0.0/15" },
			want: []string{"cidr: '10.184.0.0/16' → '10.184.0.0/15'"}},
		{name: "node network applied", edit: func(c *config.Config) { c.NodeCIDR = "10.184.1.0/24" },
			want: []string{"node_cidr: '10.184.0.0/24' → '10.184.1.0/24'"}},
		{name: "unset version is the default", release: "v1.37.2", edit: func(c *config.Config) { c.KubernetesVersion = "" }},
		{name: "upgrade one minor", release: "v1.36.3", edit: func(c *config.Config) { c.KubernetesVersion = "v1.37.2" },
			want: []string{"kubernetes_version: 'v1.36.3' → 'v1.37.2'"}},
		{name: "downgrade", edit: func(c *config.Config) { c.KubernetesVersion = "v1.36.3" },
			want:     []string{"kubernetes_version: 'v1.37.2' → 'v1.36.3' (needs a new cluster: v1.37.2 → v1.36.3 is a downgrade, which upstream does not support: etcd holds the objects as the newer release wrote them)"},
			refusals: []string{"kubernetes_version"}},
		{name: "skip a minor", release: "v1.35.4", edit: func(c *config.Config) { c.KubernetesVersion = "v1.37.2" },
			want:     []string{"kubernetes_version: 'v1.35.4' → 'v1.37.2' (needs a new cluster: v1.35.4 → v1.37.2 skips a minor: Kubernetes upgrades one minor at a time; up with --kubernetes-version v1.36 first)"},
			refusals: []string{"kubernetes_version"}},
		{name: "downgrade before etcd has data", noData: true, edit: func(c *config.Config) { c.KubernetesVersion = "v1.36.3" },
			want: []string{"kubernetes_version: 'v1.37.2' → 'v1.36.3'"}},
		{name: "another cidr before etcd has data", noData: true, edit: func(c *config.Config) { c.NodeCIDRMaskSize = 25 },
			want: []string{"node_cidr_mask_size: 24 → 25"}},
		{name: "made ephemeral", edit: func(c *config.Config) { c.Ephemeral = true },
			want:     []string{"ephemeral: false → true (needs a new cluster: down deletes an ephemeral cluster, and its etcd writes without fsync: a cluster's data does not change between the two)"},
			refusals: []string{"ephemeral"}},
		{name: "made ephemeral before etcd has data", noData: true, edit: func(c *config.Config) { c.Ephemeral = true },
			want: []string{"ephemeral: false → true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := config.Default()
			old.Name, old.StateDir, old.CIDR, old.Nodes = "kxr-unit", t.TempDir(), "10.184.0.0/16", 2
			old.KubernetesVersion = tt.release
			old.Resolve()
			recordRun(t, old, !tt.noData)
			cfg := old
			tt.edit(&cfg)
			changes, err := ConfigChanges(cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := joinChanges(changes, "\n"), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("ConfigChanges:\n got %s\nwant %s", got, want)
			}
			err = refuseNewCluster(cfg.Name, changes)
			if len(tt.refusals) == 0 {
				if err != nil {
					t.Errorf("refuseNewCluster = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("refuseNewCluster = %v, want an error wrapping config.ErrInvalid", err)
			}
			for _, key := range tt.refusals {
				if !strings.Contains(err.Error(), "\n"+key+": ") {
					t.Errorf("refuseNewCluster does not name %q on a line of its own:\n%v", key, err)
				}
			}
			if !strings.Contains(err.Error(), "`kubernix delete --name kxr-unit` (its state, etcd data included, is lost) then `kubernix up`") {
				t.Errorf("refuseNewCluster does not say how to proceed:\n%v", err)
			}
			for _, key := range []string{"node_cidr", "loadbalancer_cidr", "nodes"} {
				if strings.Contains(err.Error(), "\n"+key+": ") {
					t.Errorf("refuseNewCluster names %s, which up applies:\n%v", key, err)
				}
			}
		})
	}
}

// TestConfigChangesNoRecord: a cluster that never ran has nothing to compare.
func TestConfigChangesNoRecord(t *testing.T) {
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	cfg.Resolve()
	if changes, err := ConfigChanges(cfg, false); err != nil || changes != nil {
		t.Errorf("ConfigChanges = %v, %v; want none", changes, err)
	}
}

// TestRunningError: a running cluster given its own config gets today's
// message; given another, the changes and how to apply them.
func TestRunningError(t *testing.T) {
	applied := Change{Change: config.Change{Key: "nodes", Old: "1", New: "2"}}
	refused := Change{Change: config.Change{Key: "cidr", Old: "'a'", New: "'b'"}, NewCluster: "why"}
	tests := []struct {
		name    string
		changes []Change
		want    []string
		not     []string
	}{
		{"unchanged", nil, []string{"kx (supervisor pid 42); use another --name, or `kubernix down --name kx`"}, []string{"differs"}},
		{"changed", []Change{applied}, []string{"\n  nodes: 1 → 2\n", "`kubernix down --name kx` then `kubernix up` applies the changes"}, []string{"delete"}},
		{"needs a new cluster", []Change{applied, refused}, []string{"cidr: 'a' → 'b' (needs a new cluster: why)", "`kubernix delete --name kx`"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runningError("kx", 42, tt.changes)
			if !errors.Is(err, ErrTaken) || errors.Is(err, config.ErrInvalid) {
				t.Fatalf("runningError = %v, want ErrTaken (and its exit code)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("runningError lacks %q:\n%v", w, err)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("runningError has %q:\n%v", n, err)
				}
			}
		})
	}
}

// TestReconfigureKeys: the classification names only keys the config has.
func TestReconfigureKeys(t *testing.T) {
	keys := config.Keys()
	for _, k := range slices.Concat(unshapingKeys, carvedKeys, slices.Collect(maps.Keys(newClusterKeys))) {
		if !slices.Contains(keys, k) {
			t.Errorf("key %q is not a config key", k)
		}
	}
}

// TestWriteChanges: up prints the changes it applies, one a line, and
// nothing without any.
func TestWriteChanges(t *testing.T) {
	applied := Change{Change: config.Change{Key: "nodes", Old: "1", New: "2"}}
	refused := Change{Change: config.Change{Key: "cidr", Old: "'a'", New: "'b'"}, NewCluster: "why"}
	tests := []struct {
		name    string
		changes []Change
		want    string
	}{
		{"none", nil, ""},
		{"refused only", []Change{refused}, ""},
		{"applied", []Change{refused, applied}, "cluster \"kx\": applying the changes since its last run:\n  nodes: 1 → 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			WriteChanges(&b, "kx", tt.changes)
			if b.String() != tt.want {
				t.Errorf("WriteChanges wrote %q, want %q", b.String(), tt.want)
			}
		})
	}
}
