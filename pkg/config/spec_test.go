package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in   string
		want v1.Taint
		err  string
	}{
		{in: "dedicated=gpu:NoSchedule", want: v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}},
		{in: "example.com/spot:PreferNoSchedule", want: v1.Taint{Key: "example.com/spot", Effect: v1.TaintEffectPreferNoSchedule}},
		{in: "a=b:NoExecute", want: v1.Taint{Key: "a", Value: "b", Effect: v1.TaintEffectNoExecute}},
		{in: "a=b", err: "missing the effect"},
		{in: "a=b:NoSchedul", err: `effect "NoSchedul": must be NoSchedule, PreferNoSchedule or NoExecute`},
		{in: "-bad=b:NoSchedule", err: `key "-bad"`},
		{in: "a=b c:NoSchedule", err: `value "b c"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTaint(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseTaint(%q) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTaint(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestNodesTables: the nodes key is a count or [[nodes]] tables, one a
// node; --nodes may add nodes after them, or drop the last ones; the tables'
// names make the node names; relative host paths are the file's.
func TestNodesTables(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "k.toml")
	text := "name = 'c'\n[[nodes]]\nname = 'cp'\n[[nodes]]\nlabels = { a = 'b' }\nmounts = [{ host_path = 'data' }]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	state := "KUBERNIX_STATE_DIR=" + filepath.Join(dir, "state")
	cfg, err := load(t, []string{"--config", file}, []string{state})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Nodes != 2 || !slices.Equal(cfg.NodeNames(), []string{"c-cp", "c-node-1"}) {
		t.Errorf("nodes %d named %q, want 2: c-cp, c-node-1", cfg.Nodes, cfg.NodeNames())
	}
	if got := cfg.NodeSpec(1).Mounts[0]; got.HostPath != filepath.Join(dir, "data") || got.Target() != got.HostPath {
		t.Errorf("mount %+v: want host path %s/data, the node's path the same", got, dir)
	}
	more, err := load(t, []string{"--config", file, "--nodes", "3"}, []string{state})
	if err != nil {
		t.Fatal(err)
	}
	if err := more.Validate(); err != nil || more.NodeName(2) != "c-node-2" {
		t.Errorf("--nodes 3: %v, node 2 named %s", err, more.NodeName(2))
	}
	fewer, err := load(t, []string{"--config", file, "--nodes", "1"}, []string{state})
	if err != nil {
		t.Fatal(err)
	}
	if err := fewer.Validate(); err != nil || fewer.Nodes != 1 || len(fewer.NodeSpecs) != 1 || fewer.NodeName(0) != "c-cp" {
		t.Errorf("--nodes 1 with 2 [[nodes]]: %v, %d nodes, %d [[nodes]]; want the first one alone", err, fewer.Nodes, len(fewer.NodeSpecs))
	}
	// Marshal writes the tables (padded to Nodes), and reads back the same.
	b, err := Marshal(more)
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.toml")
	if err := os.WriteFile(back, b, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := load(t, []string{"--config", back}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Nodes != 3 || again.NodeSpec(1).Labels["a"] != "b" || again.NodeName(0) != "c-cp" {
		t.Errorf("read back %d nodes, %+v:\n%s", again.Nodes, again.NodeSpecs, b)
	}
}

// TestValidateSpec: each bad value of the tables is reported, named by
// its key, all at once.
func TestValidateSpec(t *testing.T) {
	dir := t.TempDir()
	base := func() Config {
		c := Default()
		c.StateDir = filepath.Join(dir, "state")
		c.Resolve()
		return c
	}
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"feature gate and runtime config", func(c *Config) {
			c.FeatureGates = map[string]bool{"A=B": true}
			c.RuntimeConfig = map[string]string{"api/beta": "yes", "bogus.k8s.io/v9": "true", "coordinaton.k8s.io/v1beta1": "",
				"batch/v2alpha1": "true", "batch": "true", "coordination.k8s.io/v1beta1": "", "apiregistration.k8s.io/v1": "1"}
		}, []string{`--feature-gates "A=B": not a feature gate name`, `--runtime-config api/beta="yes": must be true or false`,
			`--runtime-config "bogus.k8s.io/v9": the kube-apiserver serves no API group bogus.k8s.io` + "\n",
			`--runtime-config "coordinaton.k8s.io/v1beta1": the kube-apiserver serves no API group coordinaton.k8s.io; did you mean coordination.k8s.io?`,
			`--runtime-config "batch/v2alpha1": the kube-apiserver serves API group batch in versions v1, v1beta1, not v2alpha1`,
			`--runtime-config "batch": not an API group version`}},
		{"audit policy", func(c *Config) { c.AuditPolicy = filepath.Join(dir, "missing.yaml") },
			[]string{"--audit-policy " + dir + "/missing.yaml: not a readable file"}},
		{"component args", func(c *Config) {
			c.Components.APIServer.Args = []string{"-v=2", "--ok=1"}
			c.Components.Containerd.ConfigPatches = []string{"[x"}
		}, []string{`components.kube-apiserver.args[0] "-v=2": must be --flag=value or --flag`, "components.containerd.config_patches[0]: not TOML"}},
		{"component env", func(c *Config) {
			c.Components.Kubelet.Env = []string{"GOGC=50", "GOGC", "1X=2", "A-B=c", "=x"}
			c.Components.Etcd.Env = []string{"ETCD_QUOTA_BACKEND_BYTES=1"}
		}, []string{`components.kubelet.env[1] "GOGC": must be NAME=value`, `components.kubelet.env[2] "1X=2"`,
			`components.kubelet.env[3] "A-B=c"`, `components.kubelet.env[4] "=x"`}},
		{"nodes", func(c *Config) {
			c.Nodes = 2
			c.NodeSpecs = []NodeSpec{{
				Name: "Bad_Name", Labels: map[string]string{"a": "b c"}, Taints: []string{"a=b:Never"},
				Mounts: []Mount{{HostPath: "rel"}, {HostPath: filepath.Join(dir, "missing"), NodePath: "/"}},
				Ports:  []PortMapping{{NodePort: 30080}, {HostPort: 30080, NodePort: 30081}, {NodePort: 70000, Protocol: "sctp", ListenAddress: "::1"}},
			}, {KubeletArgs: []string{"max-pods=3"}}}
		}, []string{
			`nodes[0].name "Bad_Name"`, `nodes[0].labels a="b c"`, `nodes[0].taints[0] "a=b:Never": effect "Never"`,
			`nodes[0].mounts[0].host_path "rel": must be an absolute path`, "nodes[0].mounts[1].host_path " + dir + "/missing: no such file or directory",
			`nodes[0].mounts[1].node_path "/"`, "nodes[0].ports[1]: 127.0.0.1:30080/TCP collides with 127.0.0.1:30080/TCP of nodes[0].ports[0]",
			"nodes[0].ports[2].node_port 70000", `nodes[0].ports[2].protocol "sctp"`, `nodes[0].ports[2].listen_address "::1"`,
			`nodes[1].kubelet_args[0] "max-pods=3"`,
		}},
		{"mounts and ports that collide", func(c *Config) {
			c.Nodes = 2
			c.NodeSpecs = []NodeSpec{{
				Mounts: []Mount{{HostPath: dir, NodePath: "/data"}, {HostPath: dir, NodePath: "/data/sub"}, {HostPath: dir, NodePath: "/proc/x"}, {HostPath: dir, NodePath: "/a/../b"}},
				Ports:  []PortMapping{{NodePort: 30080, HostPort: 8080}, {NodePort: 30081, HostPort: 8080, ListenAddress: "0.0.0.0"}, {NodePort: 30082, HostPort: 8080, Protocol: "UDP", ListenAddress: "0.0.0.0"}},
			}}
		}, []string{
			"nodes[0].mounts[1] at /data/sub and nodes[0].mounts[0] at /data: one node path may not hold, or lie inside, another mount",
			"nodes[0].mounts[2].node_path /proc/x: under /proc", `nodes[0].mounts[3].node_path "/a/../b": must be a clean absolute path other than / (e.g. /b)`,
			"nodes[0].ports[1]: 0.0.0.0:8080/TCP collides with 127.0.0.1:8080/TCP of nodes[0].ports[0]",
		}},
		{"duplicate node names", func(c *Config) {
			c.Nodes = 2
			c.NodeSpecs = []NodeSpec{{Name: "node-1"}}
		}, []string{"nodes[1].name: node 0 is already named kubernix-node-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.modify(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error()+"\n", want) {
					t.Errorf("Validate() = %v\nwant it to contain %q", err, want)
				}
			}
			if n := strings.Count(err.Error(), "\n"); n != len(tt.want) {
				t.Errorf("Validate() reports %d problems, want %d:\n%v", n, len(tt.want), err)
			}
		})
	}
}

// TestUnknownNestedKey: a misspelt key in a table is named with its
// table, and the near key of that table (or of one below it) suggested.
func TestUnknownNestedKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k.toml")
	text := "[components.kubelett]\nargs = []\n[components.kube-proxy]\narg = []\n[[nodes]]\nlables = {}\nmounts = [{ hostpath = '/tmp' }]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, []string{"--config", file}, nil)
	for _, want := range []string{
		`:1: unknown key "components.kubelett"; did you mean components.kubelet?`,
		`:4: unknown key "components.kube-proxy.arg"; did you mean components.kube-proxy.args?`,
		`:6: unknown key "nodes.lables"; did you mean nodes.labels?`,
		`:7: unknown key "nodes.hostpath"; did you mean nodes.mounts.host_path?`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load: %v\nwant it to contain %q", err, want)
		}
	}
}

// TestMapSettings: feature_gates and runtime_config come from the file,
// KUBERNIX_FEATURE_GATES and --feature-gates, later sources replacing
// the whole map.
func TestMapSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k.toml")
	if err := os.WriteFile(file, []byte("feature_gates = { A = true }\nruntime_config = { 'api/beta' = 'true' }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  []string
		want map[string]bool
	}{
		{"file", []string{"--config", file}, nil, map[string]bool{"A": true}},
		{"environment", []string{"--config", file}, []string{"KUBERNIX_FEATURE_GATES=B=false,C=true"}, map[string]bool{"B": false, "C": true}},
		{"flag", []string{"--config", file, "--feature-gates", "D=true"}, []string{"KUBERNIX_FEATURE_GATES=B=false"}, map[string]bool{"D": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.FeatureGates) != len(tt.want) || c.RuntimeConfig["api/beta"] != "true" {
				t.Fatalf("feature gates %v, runtime config %v; want %v and api/beta=true", c.FeatureGates, c.RuntimeConfig, tt.want)
			}
			for k, v := range tt.want {
				if got, ok := c.FeatureGates[k]; !ok || got != v {
					t.Errorf("feature gate %s = %v (set %v), want %v", k, got, ok, v)
				}
			}
		})
	}
	if _, err := load(t, nil, []string{"KUBERNIX_FEATURE_GATES=A=maybe"}); err == nil || !strings.Contains(err.Error(), "KUBERNIX_FEATURE_GATES") {
		t.Errorf("KUBERNIX_FEATURE_GATES=A=maybe: %v, want an error naming it", err)
	}
}
