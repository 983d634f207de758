package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/release"
)

// garbage is one line of garbage, as appended to a record in issue #23.
const garbage = "this is not TOML\n"

// writeAdminKubeconfig writes the admin kubeconfig of the state dir p with
// the current context ctx, as every up writes it.
func writeAdminKubeconfig(t *testing.T, p config.Paths, ctx string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p.Kubeconfig("admin")), 0o700); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.CurrentContext = ctx
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig("admin")); err != nil {
		t.Fatal(err)
	}
}

// shortDir is a temp dir whose path is short enough for the sockets of a
// node in it (t.TempDir's, named after the test, may not be).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
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

// mkdirs makes each dir.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

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
			mkdirs(t, p.Node("c-node-1").Dir, p.Node("c-node-0").Dir, p.Node("c-gpu").Dir, p.Node("other-node-0").Dir,
				p.Run("c-node-0", node.SandboxName))
			mustWrite(t, filepath.Join(p.State, "nodes", "c-stray-file"), "")
			mustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/ci/c-node-0"))
		}, wantNodes: []string{"c-gpu", "c-node-0", "c-node-1"}, wantExecutor: config.ExecutorContainer, wantParent: "/ci"},
		{name: "process executor, default cgroups", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			mkdirs(t, p.Node("c-node-0").Dir)
			mustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/kubernix/c-node-0"))
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess, wantParent: "/kubernix"},
		{name: "a kubelet config naming another cgroup is not trusted", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			mkdirs(t, p.Node("c-node-0").Dir)
			mustWrite(t, p.Node("c-node-0").KubeletConfig(), kubelet("/elsewhere"))
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess},
		{name: "a damaged kubelet config", cluster: "c", setup: func(t *testing.T, p config.Paths) {
			mkdirs(t, p.Node("c-node-0").Dir)
			mustWrite(t, p.Node("c-node-0").KubeletConfig(), "cgroupRoot: [\n")
		}, wantNodes: []string{"c-node-0"}, wantExecutor: config.ExecutorProcess},
		{name: "no name: no nodes", cluster: "", setup: func(t *testing.T, p config.Paths) {
			mkdirs(t, p.Node("c-node-0").Dir)
		}, wantExecutor: config.ExecutorProcess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: shortDir(t)}
			tt.setup(t, p)
			cfg := Recover(p.State, tt.cluster)
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
			plan, err := NewPlan(cfg, testFacts(), "")
			if err != nil {
				t.Fatalf("NewPlan of the recovered config: %v", err)
			}
			if _, err := Describe(plan); err != nil {
				t.Fatalf("Describe of the recovered plan: %v", err)
			}
		})
	}
}

// TestRecordedName: the name comes from the admin kubeconfig's current
// context when no name claim names the state dir; a context that is not
// kubernix's names nothing.
func TestRecordedName(t *testing.T) {
	tests := []struct {
		name, context, want string
	}{
		{"kubernix's context", "kubernix-dev", "dev"},
		{"another context", "kind-dev", ""},
		{"not a cluster name", "kubernix-Dev_1", ""},
		{"no kubeconfig", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: t.TempDir()}
			if tt.context != "" {
				writeAdminKubeconfig(t, p, tt.context)
			}
			if got := RecordedName(p); got != tt.want {
				t.Errorf("RecordedName = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLoadCluster: a record that does not parse, or one that is missing
// while the cluster's processes remain, is a *DamagedError naming the
// file, with the config recovered from the other records; a missing
// record of a cluster that is not on the host is os.ErrNotExist.
func TestLoadCluster(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(t *testing.T, p config.Paths)
		wantDamaged bool
		wantMissing bool
	}{
		{name: "one line of garbage", wantDamaged: true, setup: func(t *testing.T, p config.Paths) {
			makeCluster(t, p.State, "dev", 2)
			appendTo(t, p.ConfigFile(), garbage)
		}},
		{name: "a bad value", wantDamaged: true, setup: func(t *testing.T, p config.Paths) {
			makeCluster(t, p.State, "dev", 2)
			appendTo(t, p.ConfigFile(), "nodes = \"three\"\n")
		}},
		{name: "missing, processes live", wantDamaged: true, wantMissing: true, setup: func(t *testing.T, p config.Paths) {
			makeCluster(t, p.State, "dev", 2)
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
			if err := os.Remove(p.ConfigFile()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing, nothing left", setup: func(t *testing.T, p config.Paths) {
			if err := p.MakeState(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing, not kubernix's", setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := config.Paths{State: filepath.Join(t.TempDir(), "s")}
			tt.setup(t, p)
			mkdirs(t, p.Node("dev-node-0").Dir, p.Node("dev-node-1").Dir)
			writeAdminKubeconfig(t, p, "kubernix-dev")
			cfg, err := LoadCluster(p.State)
			var damaged *DamagedError
			if !tt.wantDamaged {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("LoadCluster = %v, want os.ErrNotExist", err)
				}
				return
			}
			if !errors.As(err, &damaged) || damaged.File != p.ConfigFile() || damaged.Missing() != tt.wantMissing {
				t.Fatalf("LoadCluster = %v, want a DamagedError of %s (missing %v)", err, p.ConfigFile(), tt.wantMissing)
			}
			if !strings.Contains(err.Error(), p.ConfigFile()) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not name %s on one line", err, p.ConfigFile())
			}
			if cfg.Name != "dev" || cfg.Nodes != 2 || cfg.StateDir != p.State {
				t.Errorf("recovered config: name %q, %d nodes, state dir %s; want dev, 2, %s", cfg.Name, cfg.Nodes, cfg.StateDir, p.State)
			}
		})
	}
}

// appendTo appends text to the file at path.
func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestInspectDamaged: a cluster whose record is damaged is broken, the
// damage its first problem, whether it runs, was killed or is down.
func TestInspectDamaged(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, p config.Paths)
		wantSuper  bool
		wantRemain string
	}{
		{name: "down", setup: func(*testing.T, config.Paths) {}},
		{name: "running", wantSuper: true, setup: func(t *testing.T, p config.Paths) { superviseHere(t, p) }},
		{name: "supervisor killed", wantRemain: "process control-plane/etcd (pid ", setup: func(t *testing.T, p config.Paths) {
			recordProcess(t, p, config.ControlPlaneScope, "etcd", liveProcess(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := makeCluster(t, filepath.Join(t.TempDir(), "c"), "c", 1)
			writeAdminKubeconfig(t, p, "kubernix-c")
			appendTo(t, p.ConfigFile(), garbage)
			tt.setup(t, p)
			got, err := Inspect(p.State)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != StateBroken || got.Name != "c" || (got.Supervisor != 0) != tt.wantSuper {
				t.Errorf("Inspect = %+v, want broken, name c, supervised %v", got, tt.wantSuper)
			}
			if len(got.Problems) == 0 || !strings.Contains(got.Problems[0], p.ConfigFile()) {
				t.Errorf("Problems = %q, want the damaged %s first", got.Problems, p.ConfigFile())
			}
			if all := strings.Join(got.Problems, "; "); !strings.Contains(all, tt.wantRemain) {
				t.Errorf("Problems = %q, want one with %q", all, tt.wantRemain)
			}
		})
	}
}

// TestUndescribed: Cleanup also stops the processes recorded in the state
// dir that the plan does not describe (the port proxy of a run whose
// record, which published ports, is damaged), and only those; the
// supervisor's scope and the failed-node file are not among them.
func TestUndescribed(t *testing.T) {
	p := makeCluster(t, shortDir(t), "c", 1)
	appendTo(t, p.ConfigFile(), garbage)
	writeAdminKubeconfig(t, p, "kubernix-c")
	mkdirs(t, p.Node("c-node-0").Dir, p.Run(config.ControlPlaneScope, "etcd"), p.Run(config.ControlPlaneScope, "port-proxy"),
		p.Run("c-node-0", "kubelet"), SupervisorRunDir(p))
	mustWrite(t, FailedFile(p, "c-node-0"), "containerd died\n")
	cfg, err := LoadRecorded(p.State)
	if !errors.As(err, new(*DamagedError)) {
		t.Fatalf("LoadRecorded = %v, want a DamagedError", err)
	}
	plan, err := NewPlan(cfg, testFacts(), "")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Describe(plan)
	if err != nil {
		t.Fatal(err)
	}
	got := undescribed(plan, ds)
	if want := []string{p.Run(config.ControlPlaneScope, "port-proxy")}; !slices.Equal(got, want) {
		t.Errorf("undescribed = %q, want %q", got, want)
	}
}
