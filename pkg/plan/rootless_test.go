package plan_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/components/cloudcontroller"
	ppcomp "github.com/kubernix/kubernix/pkg/components/portproxy"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// TestRootlessNodeFilesGolden renders the node of a rootless cluster and
// compares with testdata/rootless-node-0/ (-update rewrites them): the
// runtime wrapper as containerd's runtime binary, oom_score_adj
// restricted, the kubelet's KubeletInUserNamespace gate, its cgroupRoot
// under the delegated subtree and no node allocatable enforcement.
func TestRootlessNodeFilesGolden(t *testing.T) {
	pl := plantest.Rootless(t)
	self, _ := os.Executable()
	files, err := plan.NodeFiles(pl, pl.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "rootless-node-0"), files, self)
	var ctrd struct {
		Plugins map[string]map[string]any `toml:"plugins"`
	}
	if err := toml.Unmarshal(files["containerd.toml"], &ctrd); err != nil {
		t.Fatalf("containerd.toml does not parse: %v", err)
	}
	rt := ctrd.Plugins["io.containerd.cri.v1.runtime"]
	if rt["restrict_oom_score_adj"] != true {
		t.Errorf("restrict_oom_score_adj = %v, want true", rt["restrict_oom_score_adj"])
	}
	opts := rt["containerd"].(map[string]any)["runtimes"].(map[string]any)["runc"].(map[string]any)["options"].(map[string]any)
	if opts["BinaryName"] != "/STATE/bin/crun-rootless" {
		t.Errorf("BinaryName = %v, want the wrapper", opts["BinaryName"])
	}
	var kl struct {
		FeatureGates           map[string]bool `json:"featureGates"`
		CgroupRoot             string          `json:"cgroupRoot"`
		CgroupsPerQOS          bool            `json:"cgroupsPerQOS"`
		EnforceNodeAllocatable []string        `json:"enforceNodeAllocatable"`
	}
	if err := yaml.Unmarshal(files["kubelet.yaml"], &kl); err != nil {
		t.Fatal(err)
	}
	if !kl.FeatureGates["KubeletInUserNamespace"] || kl.CgroupRoot != "/kubernix-1000/golden-node-0" || !kl.CgroupsPerQOS ||
		strings.Join(kl.EnforceNodeAllocatable, ",") != "none" {
		t.Errorf("kubelet config = %+v", kl)
	}
}

// TestRootlessPlan checks what differs in a rootless plan: the cgroups,
// the host kubeconfig and that its Cleanup skips the host network.
func TestRootlessPlan(t *testing.T) {
	pl := plantest.Rootless(t)
	if got := pl.CgroupRoot(pl.Nodes[0]); got != "/kubernix-1000/golden-node-0" {
		t.Errorf("cgroup root = %s", got)
	}
	if s := pl.KubeletSpec(pl.Nodes[0]); !s.Rootless {
		t.Error("kubelet spec not rootless")
	}
	if !strings.Contains(pl.String(), "rootless") {
		t.Errorf("plan string %q does not say rootless", pl.String())
	}
	root := plantest.Plan(t, 1)
	if got := root.CgroupRoot(root.Nodes[0]); got != "/kubernix/golden-node-0" {
		t.Errorf("root mode cgroup root = %s", got)
	}
}

// TestRootlessIPv6: a rootless plan of a dual-stack or IPv6 cluster of
// one node runs it in rootlesskit's namespaces with the process
// executor, its node's addresses the bridge's of each family, and the
// apiserver on the primary family's.
func TestRootlessIPv6(t *testing.T) {
	for _, tt := range []struct{ family, apiserver, nodeIPs string }{
		{config.IPFamilyDual, "10.10.0.1", "[10.10.0.1 fd64:1f81:2031::1]"},
		{config.IPFamilyIPv6, "fd64:1f81:2031::1", "[fd64:1f81:2031::1]"},
	} {
		pl := plantest.Family(t, 1, tt.family)
		rl, err := plan.New(pl.Cfg, pl.Facts, "/IMAGES", plan.Rootless{Enabled: true})
		if err != nil {
			t.Fatalf("%s: rootless plan: %v", tt.family, err)
		}
		if rl.Executor != config.ExecutorProcess || rl.APIServerIP.String() != tt.apiserver || fmt.Sprint(rl.Nodes[0].IPs) != tt.nodeIPs {
			t.Errorf("%s: executor %s, apiserver %s, node IPs %v; want process, %s, %s", tt.family, rl.Executor, rl.APIServerIP, rl.Nodes[0].IPs, tt.apiserver, tt.nodeIPs)
		}
	}
}

// TestRootlesskitAPI: in a rootless cluster whose rootlesskit is
// recorded (plan.Rootless.StateDir), the cloud controller and the port
// proxy publish through rootlesskit's API socket there; before it is
// recorded, and as root, they get no socket.
func TestRootlesskitAPI(t *testing.T) {
	cfg := portsConfig(config.ExecutorProcess)
	cfg.Nodes = 1
	cfg.NodeSpecs = cfg.NodeSpecs[1:]
	const want = "--rootlesskit-api=/RK/api.sock"
	for _, tt := range []struct {
		name     string
		rootless plan.Rootless
		socket   bool
	}{
		{"recorded", plan.Rootless{Enabled: true, StateDir: "/RK"}, true},
		{"before rootlesskit", plan.Rootless{Enabled: true}, false},
		{"root", plan.Rootless{StateDir: "/RK"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := describeByID(t, plantest.With(t, cfg, plantest.Facts(), tt.rootless))
			for _, id := range []string{cloudcontroller.Name, ppcomp.Name} {
				d, ok := ds[id]
				if !ok {
					t.Fatalf("no %s in %v", id, slices.Collect(maps.Keys(ds)))
				}
				if got := slices.Contains(d.Command.Args, want); got != tt.socket {
					t.Errorf("%s args %q: has %s = %v, want %v", id, d.Command.Args, want, got, tt.socket)
				}
			}
		})
	}
}
