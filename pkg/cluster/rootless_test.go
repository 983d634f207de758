package cluster

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/state"
)

// rootlessPlan is a 1-node rootless plan with the facts the doctor finds
// inside rootlesskit's namespace on a cgroup v1 host.
func rootlessPlan(t *testing.T) *plan.Plan {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "golden"
	cfg.StateDir = "/STATE"
	cfg.CgroupParent = "/kubernix-1000"
	// What a rootless cluster of one node resolves to (EffectiveExecutor):
	// NewPlan reads rootless.json, which this test has not.
	cfg.Executor = config.ExecutorProcess
	cfg.Resolve()
	cfg.StateDir = "/STATE"
	facts := doctor.Facts{Release: release.Default(),
		Mode:        doctor.ModeRootlessChild,
		Cgroups:     cgroup.Layout{Mode: cgroup.Hybrid},
		Paths:       map[string]string{},
		CNIDir:      "/usr/lib/cni",
		Snapshotter: doctor.SnapshotterOverlayfs,
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "registry"} {
		facts.Paths[b] = "/BIN/" + b
	}
	facts.Paths["runc"] = "/usr/sbin/runc"
	facts.Paths["nft"] = "/usr/sbin/nft"
	pl, err := plan.NewPlan(cfg, facts, "/IMAGES")
	if err != nil {
		t.Fatal(err)
	}
	pl.Rootless = true // as the state dir's rootless.json would say
	return pl
}

// TestRootlessNodeFilesGolden renders the node of a rootless cluster and
// compares with testdata/rootless-node-0/ (-update rewrites them): the
// runtime wrapper as containerd's runtime binary, oom_score_adj
// restricted, the kubelet's KubeletInUserNamespace gate, its cgroupRoot
// under the delegated subtree and no node allocatable enforcement.
func TestRootlessNodeFilesGolden(t *testing.T) {
	pl := rootlessPlan(t)
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
	pl := rootlessPlan(t)
	if got := pl.CgroupRoot(pl.Nodes[0]); got != "/kubernix-1000/golden-node-0" {
		t.Errorf("cgroup root = %s", got)
	}
	if s := pl.KubeletSpec(pl.Nodes[0]); !s.Rootless {
		t.Error("kubelet spec not rootless")
	}
	if !strings.Contains(pl.String(), "rootless") {
		t.Errorf("plan string %q does not say rootless", pl.String())
	}
	root := testPlan(t, 1)
	if got := root.CgroupRoot(root.Nodes[0]); got != "/kubernix/golden-node-0" {
		t.Errorf("root mode cgroup root = %s", got)
	}
}

func TestRootlessState(t *testing.T) {
	paths := config.Paths{State: t.TempDir()}
	if _, ok := state.ReadRootless(paths); ok {
		t.Fatal("rootless without a record")
	}
	if state.ClientKubeconfig(paths) != paths.Kubeconfig("admin") {
		t.Error("root cluster's client kubeconfig is not admin's")
	}
	want := state.RootlessState{UID: 1000, RootlesskitStateDir: "/x/rootlesskit"}
	want.HostAPIServer, _ = parseAddrPort("127.0.0.1:6443")
	if err := state.WriteRootless(paths, want); err != nil {
		t.Fatal(err)
	}
	got, ok := state.ReadRootless(paths)
	if !ok || got != want {
		t.Errorf("ReadRootless = %+v, %v; want %+v", got, ok, want)
	}
	if state.ClientKubeconfig(paths) != state.HostKubeconfig(paths) {
		t.Error("rootless cluster's client kubeconfig is not the host one")
	}
	if err := state.ClearRootless(paths); err != nil {
		t.Fatal(err)
	}
	if err := state.ClearRootless(paths); err != nil {
		t.Errorf("second ClearRootless: %v", err)
	}
}

func parseAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }
