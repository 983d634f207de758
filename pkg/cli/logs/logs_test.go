package logs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/state"
)

// TestFind checks how a component given on the command line maps to its
// log: control-plane components by name, node components by name and
// --node or as name@node, and what is not a component of the cluster.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Name, cfg.Nodes = "find", 2
	cp := config.ControlPlaneScope
	logs := []clusterLog{
		{"etcd", cp, filepath.Join(dir, "etcd.log")},
		{"kubelet", cfg.NodeName(0), filepath.Join(dir, "kubelet-0.log")},
		{"kubelet", cfg.NodeName(1), filepath.Join(dir, "kubelet-1.log")},
		{"supervisor", state.SupervisorScope, filepath.Join(dir, "supervisor.log")},
		{"kube-proxy", cfg.NodeName(0), filepath.Join(dir, "never-written.log")},
	}
	for _, l := range logs[:4] {
		if err := os.WriteFile(l.Path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		component string
		node      int
		nodeSet   bool
		want      string // base name of the log, or the error's text
		invalid   bool
	}{
		{"etcd", 0, false, "etcd.log", false},
		{"supervisor", 0, false, "supervisor.log", false},
		{"kubelet", 0, false, "kubelet-0.log", false},
		{"kubelet", 1, true, "kubelet-1.log", false},
		{"kubelet@find-node-1", 0, false, "kubelet-1.log", false},
		{"etcd@find-node-0", 0, false, `no component "etcd@find-node-0" on that node`, true},
		{"nope", 0, false, `no component "nope" (components: etcd, kubelet, supervisor, kube-proxy;`, true},
		{"kubelet", 2, true, "--node 2: the cluster has nodes 0..1", true},
		{"kube-proxy", 0, false, "no log of kube-proxy in find-node-0 yet", false},
	}
	for _, tt := range tests {
		t.Run(tt.component, func(t *testing.T) {
			got, err := find(cfg, logs, tt.component, tt.node, tt.nodeSet)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %q, want one containing %q", err, tt.want)
				}
				if errors.Is(err, config.ErrInvalid) != tt.invalid {
					t.Errorf("error %q: wraps ErrInvalid = %v, want %v", err, !tt.invalid, tt.invalid)
				}
				return
			}
			if filepath.Base(got) != tt.want {
				t.Errorf("log %s, want %s", got, tt.want)
			}
		})
	}
}

// TestCompletions: COMPONENT completes to each log's name once, then to
// name@node for each log of a node.
func TestCompletions(t *testing.T) {
	cp := config.ControlPlaneScope
	logs := []clusterLog{
		{"etcd", cp, "e"}, {"kubelet", "c-node-0", "k0"}, {"kubelet", "c-node-1", "k1"},
		{"audit", cp, "a"}, {"supervisor", state.SupervisorScope, "s"},
	}
	want := []string{"etcd", "kubelet", "audit", "supervisor", "kubelet@c-node-0", "kubelet@c-node-1"}
	if got := completions(logs); !slices.Equal(got, want) {
		t.Fatalf("completions = %q, want %q", got, want)
	}
}
