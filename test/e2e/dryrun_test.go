package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDryRun runs `kubernix up --dry-run --nodes 3` and checks that it
// prints every component in start order, control plane included, with the
// files the nodes would get, and changes nothing on the host: no state
// dir, no kubeconfig, no name claim, and none of what down would remove.
func TestDryRun(t *testing.T) {
	e := newEnv(t, "dry-e2e", "10.109.0.0/16", "--nodes", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := os.Remove(e.stateDir); err != nil { // up would make it
		t.Fatal(err)
	}
	out := e.mustKubernix(ctx, "up", "--dry-run")
	nodes := []string{"dry-e2e-node-0", "dry-e2e-node-1", "dry-e2e-node-2"}
	want := []string{"== etcd", "== kube-apiserver", "== apiserver-ready", "== kube-controller-manager", "== kube-scheduler"}
	for _, n := range nodes {
		want = append(want, "== sandbox@"+n, "== containerd@"+n, "== kubelet@"+n, "== kube-proxy@"+n,
			"--- "+filepath.Join(e.stateDir, "nodes", n, "containerd.toml"),
			"--- "+filepath.Join(e.stateDir, "nodes", n, "kubelet.yaml"),
			"--- "+filepath.Join(e.stateDir, "nodes", n, "kube-proxy.yaml"),
			"--- "+filepath.Join(e.stateDir, "nodes", n, "cni", "net.d", "10-kubernix.conflist"))
	}
	want = append(want, "== coredns-manifest", "== coredns")
	at := 0
	for _, w := range want[:5] { // the control plane, in start order
		i := strings.Index(out[at:], w+"\n")
		if i < 0 {
			t.Fatalf("the plan lacks %q after offset %d, or has it out of order:\n%s", w, at, out)
		}
		at += i
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the plan lacks %q", w)
		}
	}
	if _, err := os.Stat(e.stateDir); !os.IsNotExist(err) {
		t.Errorf("--dry-run made the state dir %s (%v)", e.stateDir, err)
	}
	if _, err := os.Stat(e.kubeconfig); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote the user's kubeconfig (%v)", err)
	}
	if _, err := os.Stat("/run/kubernix/names/dry-e2e"); !os.IsNotExist(err) {
		t.Errorf("--dry-run claimed the cluster name (%v)", err)
	}
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Errorf("--dry-run changed the host:\n%s", strings.Join(left, "\n"))
	}
}
