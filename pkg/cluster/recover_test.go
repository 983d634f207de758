package cluster

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/release"
	"github.com/kubernix/kubernix/pkg/state"
	"github.com/kubernix/kubernix/pkg/state/statetest"
)

// TestRecover: the nodes, executor and cgroup parent of a cluster come
// from its node dirs, sandbox run dirs and kubelet configs.
func TestRecover(t *testing.T) {
	kubelet := func(cgroupRoot string) string {
		return "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupRoot: " + cgroupRoot + "\n"
	}
	tests := []struct {
		name         string
		cluster      string
		setup        func(t *testing.T, p config.Paths)
		wantNodes    []string
		wantExecutor string
		wantParent   string
	}{
		{name: "never started a node", cluster: "c", setup: func(*testing.T, config.Paths) {},
			wantExecutor: config.ExecutorProcess},
		{name: "sandboxed nodes, named and numbered", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			statetest.Mkdirs(t, p.Node("c-node-1").Dir, p.Node("c-node-0").Dir, p.Node("c-gpu").Dir, p.Node("other-node-0").Dir,
				p.Run("c-node-0", node.SandboxName))
			statetest.MustWrite(t, filepath.Join(p.State, "nodes", "c-stray-file"), "")
			statetest.MustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/ci/c-node-0"))
		}, wantNodes: []string{"c-gpu", "c-node-0", "c-node-1"}, wantExecutor: config.ExecutorContainer, wantParent: "/ci"},
		{name: "process executor, default cgroups", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			statetest.Mkdirs(t, p.Node("c-node-0").Dir)
			statetest.MustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/kubernix/c-node-0"))
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess, wantParent: "/kubernix"},
		{name: "a kubelet config naming another cgroup is not trusted", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			statetest.Mkdirs(t, p.Node("c-node-0").Dir)
			statetest.MustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/elsewhere"))
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess},
		{name: "a damaged kubelet config", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			statetest.Mkdirs(t, p.Node("c-node-0").Dir)
			statetest.MustWrite(t, p.Node("c-node-0").KubeletConfig(), "cgroupRoot: [\n")
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess},
		{name: "no name: no nodes", cluster: "", setup: func(t *testing.T, p config.Paths) {
			statetest.Mkdirs(t, p.Node("c-node-0").Dir)
		}, wantExecutor: config.ExecutorProcess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: statetest.ShortDir(t)}
			tt.setup(t, p)
			cfg := state.Recover(p.State, tt.cluster)
			if cfg.Name != tt.cluster || cfg.StateDir != p.State {
				t.Errorf("Recover: name %q, state dir %s; want %q, %s", cfg.Name, cfg.StateDir, tt.cluster, p.State)
			}
			if got := cfg.NodeNames(); !slices.Equal(got, tt.wantNodes) && len(got)+len(tt.wantNodes) > 0 {
				t.Errorf("nodes %q, want %q", got, tt.wantNodes)
			}
			if cfg.Executor != tt.wantExecutor || cfg.CgroupParent != tt.wantParent {
				t.Errorf("executor %q, cgroup parent %q; want %q, %q", cfg.Executor, cfg.CgroupParent, tt.wantExecutor, tt.wantParent)
			}
			// What down works from.
			pl, err := plan.New(cfg, testFacts(), "", plan.Rootless{})
			if err != nil {
				t.Fatalf("plan.New of the recovered config: %v", err)
			}
			if _, err := plan.Describe(pl); err != nil {
				t.Fatalf("Describe of the recovered plan: %v", err)
			}
		})
	}
}

// testFacts are host facts with every binary found, as down's plan has
// them on a host with kubernix's bundle.
func testFacts() doctor.Facts {
	facts := doctor.Facts{Paths: map[string]string{}, CNIDir: "/usr/lib/cni", Release: release.Default()}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
		"containerd", "registry", "runc", "nft", "unshare", "nsenter", "pause"} {
		facts.Paths[b] = "/BIN/" + b
	}
	return facts
}

// TestUndescribed: Cleanup also stops the processes recorded in the state
// dir that the plan does not describe (the port proxy of a run whose
// record, which published ports, is damaged), and only those; the
// supervisor's scope and the failed-node file are not among them.
func TestUndescribed(t *testing.T) {
	p := statetest.MakeCluster(t, statetest.ShortDir(t), "c", 1)
	statetest.AppendTo(t, p.ConfigFile(), statetest.Garbage)
	statetest.WriteAdminKubeconfig(t, p, "kubernix-c")
	statetest.Mkdirs(t, p.Node("c-node-0").Dir, p.Run(config.ControlPlaneScope, "etcd"), p.Run(config.ControlPlaneScope, "port-proxy"),
		p.Run("c-node-0", "kubelet"), state.SupervisorRunDir(p))
	statetest.MustWrite(t, state.FailedFile(p, "c-node-0"), "containerd died\n")
	cfg, err := state.LoadRecorded(p.State)
	if !errors.As(err, new(*state.DamagedError)) {
		t.Fatalf("LoadRecorded = %v, want a DamagedError", err)
	}
	pl, err := plan.New(cfg, testFacts(), "", plan.Rootless{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := plan.Describe(pl)
	if err != nil {
		t.Fatal(err)
	}
	got := undescribed(pl, ds)
	if want := []string{p.Run(config.ControlPlaneScope, "port-proxy")}; !slices.Equal(got, want) {
		t.Errorf("undescribed = %q, want %q", got, want)
	}
}
