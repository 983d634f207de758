package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReconfigure checks item 4 of issue 15 on one cluster: up of a
// stopped cluster with another config says what changed and applies it
// (a node added with a label, an addon added; a node removed leaves no
// Node behind);
// a change that needs a new cluster (--cidr) is refused with exit 2
// naming the key and how to proceed, and changes nothing (the recorded
// config, the state dir, the host's routes); up of the running cluster
// with a change is refused listing the change, and without one keeps
// its message; up --dry-run shows the changes.
func TestReconfigure(t *testing.T) {
	const cidr, otherCIDR = "10.184.0.0/16", "10.185.0.0/16"
	e := newEnv(t, "kxr-e2e", cidr)
	e.parallelAt(weightLong)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	node0, node1 := e.name+"-node-0", e.name+"-node-1"

	e.mustKubernix(ctx, "up", "--detach", "--nodes", "1", "--addons", "coredns")
	e.mustKubernix(ctx, "down")

	// Two nodes, the second labelled, and another addon.
	file := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(file, []byte("[[nodes]]\n[[nodes]]\nlabels = { tier = 'kxr' }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	two := []string{"--detach", "--config", file, "--addons", "coredns,local-path-storage"}
	out := e.mustKubernix(ctx, "up", two...)
	for _, want := range []string{"\n  nodes: 1 → 2\n", "\n  nodes[1].labels.tier: (unset) → 'kxr'\n", "\n  addons: ['coredns'] → ['coredns', 'local-path-storage']\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("up with 2 nodes, a label and another addon does not say %q:\n%s", want, out)
		}
	}
	if got := e.nodeNames(ctx); got != node0+" "+node1 {
		t.Errorf("after up with 2 nodes, the nodes are %q, want %s and %s", got, node0, node1)
	}
	if got := e.mustKubectl(ctx, "get", "node", node1, "-o", "jsonpath={.metadata.labels.tier}"); got != "kxr" {
		t.Errorf("node %s has label tier=%q, want kxr", node1, got)
	}
	e.mustKubectl(ctx, "get", "storageclass", "standard")

	// The running cluster: a change is refused and listed; none keeps
	// today's message. Neither is a config error.
	out, code := e.kubernix(ctx, "up", "--detach", "--nodes", "3", "--addons", "coredns,local-path-storage")
	if code != 1 || !strings.Contains(out, "cluster is already running") || !strings.Contains(out, "\n  nodes: 2 → 3\n") ||
		!strings.Contains(out, fmt.Sprintf("`kubernix down --name %s` then `kubernix up` applies the changes", e.name)) {
		t.Errorf("up --nodes 3 of the running 2-node cluster: exit %d, want 1 listing nodes: 2 → 3 and how to apply it:\n%s", code, out)
	}
	out, code = e.kubernix(ctx, "up", two...)
	if code != 1 || !strings.Contains(out, "use another --name, or `kubernix down --name "+e.name+"`") || strings.Contains(out, "differs") {
		t.Errorf("up of the running cluster with its own config: exit %d, want 1 with the running message alone:\n%s", code, out)
	}
	e.mustKubernix(ctx, "down")

	// A change that needs a new cluster changes nothing.
	record := filepath.Join(e.stateDir, "kubernix.toml")
	before, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	stateBefore := snapshotDir(t, e.stateDir)
	out, code = e.kubernix(ctx, "up", append(two, "--cidr", otherCIDR)...)
	for _, want := range []string{
		fmt.Sprintf("\ncidr: '%s' → '%s' (needs a new cluster: ", cidr, otherCIDR),
		"\nservice_cidr: '10.184.16.0/20' → '10.185.16.0/20' (needs a new cluster: ",
		fmt.Sprintf("`kubernix delete --name %s`", e.name),
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("up --cidr %s of the stopped cluster: exit %d, want 2 saying %q:\n%s", otherCIDR, code, want, out)
		}
	}
	if after, err := os.ReadFile(record); err != nil || string(after) != string(before) {
		t.Errorf("the refused up changed the recorded config (%v):\n%s\nwas:\n%s", err, after, before)
	}
	if stateAfter := snapshotDir(t, e.stateDir); stateAfter != stateBefore {
		t.Errorf("the refused up changed the state dir:\n%s\nwas:\n%s", stateAfter, stateBefore)
	}
	if routes, _ := exec.Command("ip", "route", "show", "table", "all").Output(); strings.Contains(string(routes), "10.185.") {
		t.Errorf("the refused up routed %s:\n%s", otherCIDR, routes)
	}

	out = e.mustKubernix(ctx, "up", "--dry-run", "--nodes", "1", "--addons", "coredns,local-path-storage")
	if !strings.Contains(out, "nodes: 2 → 1\n") {
		t.Errorf("up --dry-run --nodes 1 does not show nodes: 2 → 1:\n%s", out)
	}

	out = e.mustKubernix(ctx, "up", "--detach", "--nodes", "1", "--addons", "coredns,local-path-storage")
	if !strings.Contains(out, "nodes: 2 → 1\n") || !strings.Contains(out, "nodes[1].labels.tier: 'kxr' → (unset)\n") {
		t.Errorf("up --nodes 1 does not say nodes: 2 → 1 and the label gone:\n%s", out)
	}
	if got := e.nodeNames(ctx); got != node0 {
		t.Errorf("after up --nodes 1, the nodes are %q, want %s alone", got, node0)
	}
}

// nodeNames lists the cluster's Node objects, space-separated.
func (e *env) nodeNames(ctx context.Context) string {
	e.t.Helper()
	return strings.TrimSpace(e.mustKubectl(ctx, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))
}

// snapshotDir describes every file and directory under dir: its path,
// mode, size and modification time, one a line.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s %d %s\n", path, info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReconfigureRootless: up of a stopped rootless cluster with another
// addon says so and nothing else (its ports and delegated cgroup compare
// as chosen, not as changes), and up of the running one with another
// addon is refused listing that change alone; with its own config it
// keeps the message of the state dir's lock.
func TestReconfigureRootless(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxrreconf", "kxr-rl")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// A port of its own: the default 6443 may be taken, between two ups,
	// by a rootless cluster of a test running beside it, and the port
	// that up then picks is a change it lists.
	up := func(addons string) (string, int) {
		return rc.u.kubernix(ctx, "up", "--detach", "--name", rc.name, "--cidr", "10.184.0.0/16",
			"--apiserver-port", "26443", "--addons", addons)
	}
	if out, code := up("coredns"); code != 0 {
		t.Fatalf("up exited %d:\n%s", code, out)
	}
	if out, code := rc.u.kubernix(ctx, "down", "--name", rc.name); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	const change = "\n  addons: ['coredns'] → ['coredns', 'local-path-storage']\n"
	out, code := up("coredns,local-path-storage")
	if code != 0 || !strings.Contains(out, "applying the changes since its last run:"+change) {
		t.Fatalf("up with another addon: exit %d, want 0 listing that change alone:\n%s", code, out)
	}
	out, code = up("coredns")
	if code != 1 || !strings.Contains(out, "differs from the one it runs with in:\n  addons: ['coredns', 'local-path-storage'] → ['coredns']\n`kubernix down") {
		t.Errorf("up of the running cluster with another addon: exit %d, want 1 listing that change alone:\n%s", code, out)
	}
	out, code = up("coredns,local-path-storage")
	if code != 1 || !strings.Contains(out, "cluster is already running: "+rc.name+" (supervisor pid") || strings.Contains(out, "differs") {
		t.Errorf("up of the running cluster with its config: exit %d, want 1 saying it runs, as root's up does, with no change listed:\n%s", code, out)
	}
}
