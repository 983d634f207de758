package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNodeUse: node settings that cannot work on the executor or
// the rest of the config are refused, each named; those that can pass.
func TestValidateNodeUse(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // "" entries: none; empty: valid
	}{
		{"process executor, read-only mount", func(c *Config) {
			c.Executor = ExecutorProcess
			c.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: dir, ReadOnly: true}}}}
		}, []string{"nodes[0].mounts[0]: --executor process runs the node in the host's mount namespace"}},
		{"process executor, other node path", func(c *Config) {
			c.Executor = ExecutorProcess
			c.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: dir, NodePath: "/data"}}}}
		}, []string{"nodes[0].mounts[0]: --executor process"}},
		{"process executor, same path", func(c *Config) {
			c.Executor = ExecutorProcess
			c.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: dir, NodePath: dir + "/"}}}}
		}, nil},
		{"container executor, read-only mount", func(c *Config) {
			c.Executor = ExecutorContainer
			c.NodeSpecs = []NodeSpec{{Mounts: []Mount{{HostPath: dir, NodePath: "/data", ReadOnly: true}}}}
		}, nil},
		{"node named as the control plane", func(c *Config) {
			c.Name = "control"
			c.NodeSpecs = []NodeSpec{{Name: "plane"}}
		}, []string{`nodes[0].name "plane": the node name control-plane is the control plane's`}},
		{"every node tainted against the addons", func(c *Config) {
			c.Nodes = 2
			c.Addons = []string{"coredns", "registry"}
			c.NodeSpecs = []NodeSpec{{Taints: []string{"gpu=true:NoSchedule"}}, {Taints: []string{"a:PreferNoSchedule", "b:NoExecute"}}}
		}, []string{"nodes[].taints: the coredns addon's pods tolerate none of nodes[0] gpu=true:NoSchedule, nodes[1] b:NoExecute"}},
		{"one node free for the addons", func(c *Config) {
			c.Nodes = 2
			c.NodeSpecs = []NodeSpec{{Taints: []string{"gpu=true:NoSchedule"}}, {Taints: []string{"a:PreferNoSchedule"}}}
		}, nil},
		{"taints the addons tolerate", func(c *Config) {
			c.NodeSpecs = []NodeSpec{{Taints: []string{"CriticalAddonsOnly=true:NoExecute", "node-role.kubernetes.io/control-plane:NoSchedule"}}}
		}, nil},
		{"no addons, every node tainted", func(c *Config) {
			c.Addons = nil
			c.NodeSpecs = []NodeSpec{{Taints: []string{"gpu=true:NoSchedule"}}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.StateDir = filepath.Join(dir, "state")
			c.Resolve()
			tt.modify(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %v\nwant it to contain %q", err, want)
				}
			}
		})
	}
}

// TestSocketPathNodeName: a node name suffix that makes a socket path too
// long is named beside --name and --state-dir.
func TestSocketPathNodeName(t *testing.T) {
	c := Default()
	c.StateDir = filepath.Join(t.TempDir(), "state")
	c.Resolve()
	c.Nodes = 2
	long := strings.Repeat("n", 50)
	c.NodeSpecs = []NodeSpec{{}, {Name: long}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `or a shorter nodes[1].name than "`+long+`"`) {
		t.Errorf("Validate() = %v, want it to name nodes[1].name", err)
	}
}
