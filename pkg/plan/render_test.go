package plan_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
	"github.com/kubernix/kubernix/pkg/release"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestNodeFilesGolden renders node 0 and node 2 of a 3-node cluster and
// compares with testdata/<node>/; run with -update to rewrite them. The
// structured files must also parse back.
func TestNodeFilesGolden(t *testing.T) {
	pl := plantest.Plan(t, 3)
	self, _ := os.Executable()
	for _, idx := range []int{0, 2} {
		nd := pl.Nodes[idx]
		t.Run(nd.Name, func(t *testing.T) {
			files, err := plan.NodeFiles(pl, nd)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "node-"+string(rune('0'+idx))), files, self)
			var m map[string]any
			if err := toml.Unmarshal(files["containerd.toml"], &m); err != nil {
				t.Errorf("containerd.toml does not parse: %v", err)
			}
			for _, y := range []string{"kubelet.yaml", "kube-proxy.yaml"} {
				if err := yaml.Unmarshal(files[y], &m); err != nil {
					t.Errorf("%s does not parse: %v", y, err)
				}
			}
		})
	}
}

// TestPerNodeValues checks the values that must differ between nodes (or
// must not): addresses, pod CIDRs, sockets, ports, cgroups.
func TestPerNodeValues(t *testing.T) {
	tests := []struct {
		nodes, idx                     int
		executor                       string
		ip, podCIDR, socket, cgroup    string
		kubeletHealth, kubeProxyHealth string
	}{
		{1, 0, "process", "10.10.0.1", "10.10.128.0/24", "/STATE/nodes/golden-node-0/containerd.sock", "/kubernix/golden-node-0",
			"http://10.10.0.1:10248/healthz", "http://10.10.0.1:10256/healthz"},
		{3, 0, "container", "10.10.0.2", "10.10.128.0/24", "/STATE/nodes/golden-node-0/containerd.sock", "/kubernix/golden-node-0",
			"http://10.10.0.2:10248/healthz", "http://10.10.0.2:10256/healthz"},
		{3, 2, "container", "10.10.0.4", "10.10.130.0/24", "/STATE/nodes/golden-node-2/containerd.sock", "/kubernix/golden-node-2",
			"http://10.10.0.4:10248/healthz", "http://10.10.0.4:10256/healthz"},
		{1, 0, "", "10.10.0.2", "10.10.128.0/24", "/STATE/nodes/golden-node-0/containerd.sock", "/kubernix/golden-node-0",
			"http://10.10.0.2:10248/healthz", "http://10.10.0.2:10256/healthz"},
	}
	for _, tt := range tests {
		t.Run(tt.executor+"/"+tt.ip+"/"+string(rune('0'+tt.nodes)), func(t *testing.T) {
			pl := plantest.Plan(t, tt.nodes, tt.executor)
			want := tt.executor
			if want == "" {
				want = config.ExecutorContainer // the default, one node too
			}
			if pl.Executor != want {
				t.Fatalf("executor = %s, want %s", pl.Executor, want)
			}
			nd := pl.Nodes[tt.idx]
			got := map[string]string{
				"ip":          nd.IP.String(),
				"pod CIDR":    nd.PodCIDR.String(),
				"socket":      pl.Paths.Node(nd.Name).ContainerdSocket(),
				"cgroup":      pl.CgroupRoot(nd),
				"kubelet":     pl.KubeletSpec(nd).HealthURL(),
				"kube-proxy":  pl.KubeProxySpec(nd).HealthURL(),
				"apiserverIP": pl.APIServerIP.String(),
			}
			wantValues := map[string]string{
				"ip": tt.ip, "pod CIDR": tt.podCIDR, "socket": tt.socket, "cgroup": tt.cgroup,
				"kubelet": tt.kubeletHealth, "kube-proxy": tt.kubeProxyHealth, "apiserverIP": "10.10.0.1",
			}
			for k, w := range wantValues {
				if got[k] != w {
					t.Errorf("%s = %q, want %q", k, got[k], w)
				}
			}
			np := pl.NetworkPlan()
			if len(np.Nodes) != tt.nodes || np.Nodes[tt.idx].Local != (want == "process") {
				t.Errorf("network plan nodes = %+v", np.Nodes)
			}
			if want == "container" && np.ServiceVia.String() != "10.10.0.2" {
				t.Errorf("service CIDR routed via %s, want node 0", np.ServiceVia)
			}
		})
	}
}

// checkGolden compares each rendered file, machine paths replaced, with
// dir/<name>; -update rewrites them.
func checkGolden(t *testing.T, dir string, files map[string][]byte, self string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		got := plan.Placeholders(files[name], self, "$KUBERNIX")
		golden := filepath.Join(dir, name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from %s (run with -update if intended): %s", name, golden, firstDiff(string(got), string(want)))
		}
	}
}

// TestPlanGolden renders the whole plan `up --dry-run` prints (every
// component, control plane included, in start order with its command
// line, environment, probes and files) for a 1-node, a 3-node, a
// rootless and an ephemeral cluster, and a 1-node cluster of each other
// release kubernix builds, and compares it with testdata/plan/<name>.txt
// (-update rewrites them). Machine paths are placeholders.
func TestPlanGolden(t *testing.T) {
	// The plan shows each process's whole environment: the test's own
	// would make it machine-specific. ETCD_NAME must not show.
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
		os.Unsetenv(k)
	}
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("HOME", "/home/user")
	t.Setenv("ETCD_NAME", "from-the-shell")
	self, _ := os.Executable()
	tests := []struct {
		name string
		pl   func(t testing.TB) *plan.Plan
	}{
		{"1-node", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 1) }},
		{"3-node", func(t testing.TB) *plan.Plan { return plantest.Plan(t, 3) }},
		{"rootless", plantest.Rootless},
		{"3-node-dual", func(t testing.TB) *plan.Plan { return plantest.Family(t, 3, config.IPFamilyDual) }},
		{"3-node-ipv6", func(t testing.TB) *plan.Plan { return plantest.Family(t, 3, config.IPFamilyIPv6) }},
		{"1-node-ephemeral", func(t testing.TB) *plan.Plan {
			pl := plantest.Plan(t, 1)
			pl.Cfg.Ephemeral = true
			return pl
		}},
	}
	// One per other release: where its flags or files differ, it shows.
	for _, v := range release.Known()[1:] {
		tests = append(tests, struct {
			name string
			pl   func(t testing.TB) *plan.Plan
		}{"1-node-" + v, func(t testing.TB) *plan.Plan { return plantest.Release(t, v) }})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := plan.WritePlan(&out, tt.pl(t)); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "plan"), map[string][]byte{tt.name + ".txt": out.Bytes()}, self)
		})
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "same lines, other line endings"
}
