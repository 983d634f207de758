package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/plan/plantest"
)

// describeByID describes plan and indexes the descriptions by ID.
func describeByID(t *testing.T, pl *plan.Plan) map[string]components.Description {
	t.Helper()
	ds, err := plan.Describe(pl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]components.Description{}
	for _, d := range ds {
		out[d.ID()] = d
	}
	return out
}

// fileOf returns the content of d's file at path.
func fileOf(t *testing.T, d components.Description, path string) string {
	t.Helper()
	for _, f := range d.Files {
		if f.Path == path {
			return string(f.Content)
		}
	}
	t.Fatalf("%s renders no %s", d.ID(), path)
	return ""
}

// TestComponentSettings checks that feature_gates, runtime_config,
// [components.<name>] args and env, each node's kubelet_args, containerd's
// config_patches and the audit policy reach the described components:
// what up starts and up --dry-run prints.
func TestComponentSettings(t *testing.T) {
	pl := plantest.Plan(t, 2)
	pl.Cfg.FeatureGates = map[string]bool{"Zeta": false, "CoordinatedLeaderElection": true}
	pl.Cfg.RuntimeConfig = map[string]string{"coordination.k8s.io/v1beta1": "true", "api/alpha": "false"}
	pl.Cfg.Components.APIServer.Args = []string{"--enable-admission-plugins=NodeRestriction,DenyServiceExternalIPs", "--v=2"}
	pl.Cfg.Components.Etcd.Args = []string{"--log-level=info"}
	pl.Cfg.Components.Kubelet.Args = []string{"--max-pods=60", "--v=3"}
	pl.Cfg.Components.Kubelet.Env = []string{"GOGC=50", "GOMAXPROCS=1", "PATH=/nowhere"}
	pl.Cfg.Components.KubeProxy.Args = []string{"--v=4"}
	pl.Cfg.Components.Containerd.Args = []string{"--log-level=debug"}
	pl.Cfg.Components.Containerd.ConfigPatches = []string{"[plugins.'io.containerd.cri.v1.runtime']\nmax_container_log_line_size = 32768\n"}
	pl.Cfg.NodeSpecs = []config.NodeSpec{{}, {KubeletArgs: []string{"--max-pods=50"}}}
	pl.AuditPolicy = []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None}]\n")
	ds := describeByID(t, pl)
	n0, n1 := "@"+pl.Nodes[0].Name, "@"+pl.Nodes[1].Name
	const gates = "CoordinatedLeaderElection=true,Zeta=false"
	tests := []struct {
		id, flag, want string // want "" means unset
	}{
		{"kube-apiserver", "--feature-gates", gates},
		{"kube-apiserver", "--runtime-config", "api/alpha=false,coordination.k8s.io/v1beta1=true"},
		{"kube-apiserver", "--enable-admission-plugins", "NodeRestriction,DenyServiceExternalIPs"},
		{"kube-apiserver", "--v", "2"},
		{"kube-controller-manager", "--feature-gates", gates},
		{"kube-scheduler", "--feature-gates", gates},
		{"etcd", "--feature-gates", ""},
		{"etcd", "--log-level", "info"},
		{"kubelet" + n0, "--max-pods", "60"},
		{"kubelet" + n1, "--max-pods", "50"},
		{"kubelet" + n1, "--v", "3"},
		{"kube-proxy" + n1, "--v", "4"},
		{"containerd" + n0, "--log-level", "debug"},
	}
	for _, tt := range tests {
		args := ds[tt.id].Command.Args
		var got []string
		for _, a := range args {
			if components.FlagName(a) == strings.TrimPrefix(tt.flag, "--") {
				got = append(got, a)
			}
		}
		want := []string{tt.flag + "=" + tt.want}
		if tt.want == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s given as %q, want %q (args %q)", tt.id, tt.flag, got, want, args)
		}
	}
	if env := ds["kubelet"+n1].Environ(); !slices.Contains(env, "GOGC=50") || !slices.Contains(env, "GOMAXPROCS=1") ||
		!slices.Contains(env, "PATH=/nowhere") {
		t.Errorf("kubelet%s: [components.kubelet] env not in its environment, or kubernix's PATH not replaced: %q", n1, env)
	}
	if env := ds["kube-proxy"+n1].Environ(); slices.Contains(env, "GOGC=50") {
		t.Errorf("kube-proxy%s has the kubelet's env: %q", n1, env)
	}
	if args := ds["kubelet"+n1].Command.Args; !strings.HasPrefix(args[len(args)-1], "--max-pods=50") {
		t.Errorf("kubelet%s: the node's kubelet_args do not come last: %q", n1, args)
	}
	for _, id := range []string{"kubelet" + n0, "kube-proxy" + n1} {
		np := pl.Paths.Node(ds[id].Scope)
		path := np.KubeletConfig()
		if strings.HasPrefix(id, "kube-proxy") {
			path = np.KubeProxyConfig()
		}
		if cfg := fileOf(t, ds[id], path); !strings.Contains(cfg, "featureGates:\n  CoordinatedLeaderElection: true\n  Zeta: false\n") {
			t.Errorf("%s: the feature gates are not in its config:\n%s", id, cfg)
		}
	}
	if got := fileOf(t, ds["containerd"+n1], pl.Paths.Node(pl.Nodes[1].Name).ContainerdConfig()); !strings.Contains(got, "max_container_log_line_size = 32768") {
		t.Errorf("containerd config.toml without the patch:\n%s", got)
	}
	if got := fileOf(t, ds["kube-apiserver"], pl.Paths.AuditPolicy()); got != string(pl.AuditPolicy) {
		t.Errorf("audit policy file = %q, want the user's %q", got, pl.AuditPolicy)
	}
}

// TestEphemeralComponents checks that etcd and the apiserver of an
// ephemeral cluster, and only of one, trade durability and fidelity for
// speed: etcd without fsync (--unsafe-no-fsync), the apiserver without
// its watch cache (--watch-cache=false).
func TestEphemeralComponents(t *testing.T) {
	for _, ephemeral := range []bool{false, true} {
		pl := plantest.Plan(t, 1)
		pl.Cfg.Ephemeral = ephemeral
		ds := describeByID(t, pl)
		for id, flag := range map[string]string{"etcd": "--unsafe-no-fsync", "kube-apiserver": "--watch-cache=false"} {
			d, ok := ds[id]
			if !ok {
				t.Fatalf("no %s described", id)
			}
			if got := slices.Contains(d.Command.Args, flag); got != ephemeral {
				t.Errorf("ephemeral = %v: %s has %s: %v, want %v: %q", ephemeral, id, flag, got, ephemeral, d.Command.Args)
			}
		}
	}
}
