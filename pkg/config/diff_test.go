package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDiff: one change a key, through nested tables, the node count and
// each node's settings; equal values (an empty map and none among them)
// are no change.
func TestDiff(t *testing.T) {
	base := func() Config {
		c := Default()
		c.Name, c.StateDir = "c", "/tmp/c"
		c.Resolve()
		return c
	}
	tests := []struct {
		name string
		edit func(old, new *Config)
		want []string
	}{
		{"unchanged", func(_, _ *Config) {}, nil},
		{"empty map is unset", func(_, n *Config) { n.FeatureGates = map[string]bool{} }, nil},
		{"node count", func(_, n *Config) { n.Nodes = 3 }, []string{"nodes: 1 → 3"}},
		{"feature gates", func(o, n *Config) {
			o.FeatureGates = map[string]bool{"Gone": true, "Flip": false}
			n.FeatureGates = map[string]bool{"Flip": true, "Foo": true}
		}, []string{"feature_gates.Flip: false → true", "feature_gates.Foo: (unset) → true", "feature_gates.Gone: true → (unset)"}},
		{"component args", func(o, n *Config) {
			o.Components.APIServer.Args = []string{"--a=1"}
			n.Components.APIServer.Args = []string{"--a=1", "--b"}
		}, []string{"components.kube-apiserver.args: ['--a=1'] → ['--a=1', '--b']"}},
		{"CIDR split in key order", func(_, n *Config) {
			n.CIDR, n.NodeCIDR, n.ServiceCIDR, n.ClusterCIDR, n.LoadBalancerCIDR = "10.185.0.0/16", "", "", "", ""
			n.Resolve()
		}, []string{
			"cidr: '10.10.0.0/16' → '10.185.0.0/16'", "node_cidr: '10.10.0.0/24' → '10.185.0.0/24'",
			"service_cidr: '10.10.16.0/20' → '10.185.16.0/20'", "cluster_cidr: '10.10.128.0/17' → '10.185.128.0/17'",
			"loadbalancer_cidr: '10.10.32.0/20' → '10.185.32.0/20'",
		}},
		{"addons", func(o, n *Config) { o.Addons, n.Addons = []string{"coredns"}, []string{"coredns", "registry"} }, []string{"addons: ['coredns'] → ['coredns', 'registry']"}},
		{"node added with settings", func(_, n *Config) {
			n.Nodes = 2
			n.NodeSpecs = []NodeSpec{{}, {Labels: map[string]string{"example.com/tier": "gpu"}, Taints: []string{"a:NoSchedule"}}}
		}, []string{"nodes: 1 → 2", "nodes[1].labels.'example.com/tier': (unset) → 'gpu'", "nodes[1].taints: (unset) → ['a:NoSchedule']"}},
		{"node removed", func(o, n *Config) {
			o.Nodes, o.NodeSpecs = 2, []NodeSpec{{Name: "cp"}, {Name: "w"}}
			n.NodeSpecs = []NodeSpec{{Name: "cp"}}
		}, []string{"nodes: 2 → 1", "nodes[1].name: 'w' → (unset)"}},
		{"mount of a node", func(o, n *Config) {
			o.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: "/a"}}}}
			n.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: "/a", ReadOnly: true}}}}
		}, []string{"nodes[0].mounts[0].read_only: (unset) → true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := base(), base()
			tt.edit(&old, &new)
			changes, err := Diff(old, new)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range changes {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestDiffRecord: a config written as up records it (Marshal) and read
// back differs in nothing from the one written, with [[nodes]] tables for
// fewer nodes than the count.
func TestDiffRecord(t *testing.T) {
	dir := t.TempDir()
	c := Default()
	c.Name, c.StateDir, c.Nodes = "c", filepath.Join(dir, "state"), 3
	c.NodeSpecs = []NodeSpec{{Name: "cp", Labels: map[string]string{"a": "b"}, Mounts: []Mount{{HostPath: dir}}}}
	c.FeatureGates = map[string]bool{"Foo": true}
	c.Components.Kubelet.Args = []string{"--v=2"}
	c.Resolve()
	b, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "kubernix.toml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	read, err := Load(nil, []string{EnvPrefix + "CONFIG=" + file})
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := Diff(read, c); err != nil || len(changes) > 0 {
		t.Errorf("Diff(record, config) = %v, %v; want no change", changes, err)
	}
}
