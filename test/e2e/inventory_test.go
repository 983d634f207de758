package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubernix/kubernix/pkg/release"
)

// listed is an element of `kubernix list -o json`, with the fields the
// test checks (pkg/cli/list.Cluster).
type listed struct {
	Name     string `json:"name"`
	Nodes    int    `json:"nodes"`
	Version  string `json:"kubernetesVersion"`
	State    string `json:"state"`
	Mode     string `json:"mode"`
	StateDir string `json:"stateDir"`
	Started  string `json:"started"`
}

// TestInventory: `kubernix list` (and `get clusters`, -o json) shows two
// running clusters and a stopped one with their states and node counts,
// and a cluster whose supervisor was SIGKILLed as broken; `down` of a
// cluster that does not exist exits 0 with a note; `delete --all` leaves
// no state dir, no context in the kubeconfig, no claim in /run/kubernix
// and an empty list (issue #14).
//
// Isolation: list, down --all and delete --all act on every cluster of
// root on this machine, and must see only this test's. Every kubernix
// command of the test runs in a private mount namespace of the test
// (privateNS) in which tmpfs mounts hide the state root /var/lib/kubernix
// (root's default state dirs and the index of state dirs) and
// /run/kubernix/names (the name claims of root's running clusters): those
// are the only places list looks. The clusters' state dirs are temp dirs
// of their own, and the kubeconfig one of the test's (KUBERNIX merges
// into $KUBECONFIG). What else is host-wide stays shared on purpose: the
// sysctl ledger in /run/kubernix (so a cluster of someone else does not
// restore sysctls under ours) and the network, whose bridge, chain and
// nft table names derive from the unique cluster names.
func TestInventory(t *testing.T) {
	names := []string{"kxl-inv-a", "kxl-inv-b", "kxl-inv-c"}
	cidrs := []string{"10.173.0.0/16", "10.174.0.0/16", "10.175.0.0/16"}
	var envs []*env
	for i, n := range names {
		e := newEnv(t, n, cidrs[i], leanAddons, "--nodes", "1")
		e.parallel() // its clusters are seen only in its own mount namespace
		envs = append(envs, e)
	}
	ns := privateNS(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	for _, e := range envs {
		e.kubeconfig = kubeconfig
		e.downInOnCleanup(ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	a, b, c := envs[0], envs[1], envs[2]

	for _, e := range envs {
		e.mustKubernixIn(ctx, ns, "up", "--detach")
	}
	c.mustKubernixIn(ctx, ns, "down")

	def := release.Default().Kubernetes
	table, code := runIn(ctx, ns, a.environ(), filepath.Join(a.binDir, "kubernix"), "list")
	t.Logf("list:\n%s", table)
	if code != 0 {
		t.Fatalf("list exited %d", code)
	}
	for _, row := range [][]string{
		{a.name, "1", def, "running", "root", a.stateDir},
		{b.name, "1", def, "running", "root", b.stateDir},
		{c.name, "1", def, "stopped", "root", c.stateDir},
	} {
		if !hasListRow(table, row) {
			t.Errorf("list shows no row %q:\n%s", row, table)
		}
	}
	if rows := strings.Count(strings.TrimSpace(table), "\n"); rows != 3 {
		t.Errorf("list shows %d clusters, want 3:\n%s", rows, table)
	}
	want := map[string]listed{
		a.name: {a.name, 1, def, "running", "root", a.stateDir, ""},
		b.name: {b.name, 1, def, "running", "root", b.stateDir, ""},
		c.name: {c.name, 1, def, "stopped", "root", c.stateDir, ""},
	}
	checkListJSON(t, a.listJSON(ctx, ns, "list"), want)
	checkListJSON(t, a.listJSON(ctx, ns, "get", "clusters"), want)

	// --name alone finds a cluster up was given another --state-dir for.
	out, code := runIn(ctx, ns, a.environ(), filepath.Join(a.binDir, "kubernix"), "status", "--name", a.name)
	if code != 0 || !strings.Contains(out, a.stateDir) {
		t.Errorf("status --name %s (no --state-dir) exited %d, want 0 and its state dir %s:\n%s", a.name, code, a.stateDir, out)
	}

	b.killSupervisor(t)
	broken := want[b.name]
	broken.State = "broken"
	want[b.name] = broken
	checkListJSON(t, a.listJSON(ctx, ns, "list"), want)

	out, code = runIn(ctx, ns, a.environ(), filepath.Join(a.binDir, "kubernix"), "down", "--name", "kxl-inv-missing")
	if code != 0 || !strings.Contains(out, `cluster "kxl-inv-missing" does not exist`) {
		t.Errorf("down of a missing cluster exited %d, want 0 and a note:\n%s", code, out)
	}

	out, code = runIn(ctx, ns, a.environ(), filepath.Join(a.binDir, "kubernix"), "delete", "--all")
	t.Logf("delete --all:\n%s", out)
	if code != 0 {
		t.Fatalf("delete --all exited %d", code)
	}
	for _, e := range envs {
		if _, err := os.Stat(e.stateDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("delete --all left the state dir %s: %v", e.stateDir, err)
		}
		if out, code := runIn(ctx, ns, nil, "test", "-e", "/run/kubernix/names/"+e.name); code == 0 {
			t.Errorf("delete --all left the name claim /run/kubernix/names/%s %s", e.name, out)
		}
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.Contexts {
		if strings.HasPrefix(name, "kubernix-kxl-inv-") {
			t.Errorf("delete --all left the context %s in %s", name, kubeconfig)
		}
	}
	checkListJSON(t, a.listJSON(ctx, ns, "list"), map[string]listed{})
}

// privateNS makes a persistent mount namespace for the test's kubernix
// commands (runIn): a copy of the host's, private (nothing mounted in it
// reaches the host, nor the reverse), with empty tmpfs over
// /var/lib/kubernix and /run/kubernix/names. It returns the file holding
// the namespace (for nsenter --mount=); cleanup unmounts it, which ends
// the namespace once no process is left in it. Both directories are
// created on the host if missing (empty: they are kubernix's own).
func privateNS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// unshare --mount=<file> bind-mounts the namespace on the file, which
	// must not be on a shared mount.
	for _, args := range [][]string{{"--bind", dir, dir}, {"--make-private", dir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %q: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("umount", "--lazy", dir).Run() })
	file := filepath.Join(dir, "mnt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("unshare", "--mount="+file, "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Fatalf("unshare: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "--lazy", file).Run() })
	for _, d := range []string{"/var/lib/kubernix", "/run/kubernix/names"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, code := runIn(context.Background(), file, nil, "mount", "-t", "tmpfs", "-o", "mode=0755", "kubernix-e2e", d); code != 0 {
			t.Fatalf("mount a tmpfs on %s in the test's namespace: %s", d, out)
		}
	}
	return file
}

// runIn runs name with args in the mount namespace ns, with the process
// environment environ (nil: this process's), and returns its combined
// output and exit code (-1 when it could not run).
func runIn(ctx context.Context, ns string, environ []string, name string, args ...string) (string, int) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--mount=" + ns, "--", name}, args...)...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	return fmt.Sprintf("%s%v", out, err), -1
}

// mustKubernixIn runs kubernix verb with the cluster's flags in ns and
// fails the test on a non-zero exit.
func (e *env) mustKubernixIn(ctx context.Context, ns, verb string, more ...string) string {
	e.t.Helper()
	args := append(append([]string{verb}, e.argsOf(verb)...), more...)
	out, code := runIn(ctx, ns, e.environ(), filepath.Join(e.binDir, "kubernix"), args...)
	if code != 0 {
		e.t.Fatalf("kubernix %s exited %d:\n%s", verb, code, out)
	}
	return out
}

// downInOnCleanup brings the cluster down in ns when the test ends, in
// case the test did not.
func (e *env) downInOnCleanup(ns string) {
	e.t.Cleanup(func() {
		args := append([]string{"down"}, e.argsOf("down")...)
		if out, code := runIn(context.Background(), ns, e.environ(), filepath.Join(e.binDir, "kubernix"), args...); code != 0 {
			e.t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
}

// listJSON runs `kubernix <verb...> -o json` in ns (no cluster flags) and
// parses its output.
func (e *env) listJSON(ctx context.Context, ns string, verb ...string) []listed {
	e.t.Helper()
	cmd := exec.CommandContext(ctx, "nsenter", append(append([]string{"--mount=" + ns, "--", filepath.Join(e.binDir, "kubernix")}, verb...), "-o", "json")...)
	cmd.Env = e.environ()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("kubernix %s -o json: %v:\n%s%s", strings.Join(verb, " "), err, out, stderr.String())
	}
	var got []listed
	if err := json.Unmarshal(out, &got); err != nil {
		e.t.Fatalf("kubernix %s -o json: %v:\n%s", strings.Join(verb, " "), err, out)
	}
	return got
}

// checkListJSON checks that got lists exactly the clusters of want, with
// their nodes, state, mode and state dir, and a start time.
func checkListJSON(t *testing.T, got []listed, want map[string]listed) {
	t.Helper()
	var seen []string
	for _, g := range got {
		seen = append(seen, g.Name)
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("list -o json shows %+v, which is not one of this test's clusters", g)
			continue
		}
		if _, err := time.Parse(time.RFC3339, g.Started); err != nil {
			t.Errorf("cluster %s: started %q: %v", g.Name, g.Started, err)
		}
		g.Started = ""
		if g != w {
			t.Errorf("list -o json shows %+v, want %+v", g, w)
		}
	}
	for name := range want {
		if !slices.Contains(seen, name) {
			t.Errorf("list -o json does not show cluster %s: %+v", name, got)
		}
	}
}

// hasListRow reports whether the table has a line whose fields are
// want's, with the AGE column (the 5th) of any value.
func hasListRow(table string, want []string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) == len(want)+1 && slices.Equal(f[:4], want[:4]) && slices.Equal(f[5:], want[4:]) {
			return true
		}
	}
	return false
}
