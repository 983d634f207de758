package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// TestFakeComponent builds a kubernix with one more entry in the cluster's
// component descriptions (pkg/cluster/fake_component.go, build tag
// kubernix_fake_component: a "fake" process in the control plane and one
// in each node's sandbox) and shows that every verb handles the new
// components with no other change: up starts them, status lists them
// running, logs lists and prints their logs, and down after a SIGKILLed
// supervisor stops them with the rest, leaving nothing behind.
func TestFakeComponent(t *testing.T) {
	e := newEnv(t, "fake-e2e", "10.108.0.0/16", "--nodes", "2")
	e.parallel()
	e.binDir = fakeBinDir(t, e.binDir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"fake-e2e-node-0", "fake-e2e-node-1"}

	e.mustKubernix(ctx, "up", "--detach")
	pids := map[string]int{}
	for _, scope := range append([]string{"control-plane"}, nodes...) {
		pid := readPid(t, filepath.Join(e.stateDir, "run", scope, "fake", "pid"))
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("fake component of %s (pid %d) is not running: %v", scope, pid, err)
		}
		pids[scope] = pid
	}

	status := e.mustKubernix(ctx, "status")
	for scope, pid := range pids {
		if !hasRow(status, "fake", scope, fmt.Sprint(pid), "running") {
			t.Errorf("status has no row: fake %s %d running:\n%s", scope, pid, status)
		}
	}

	list := e.mustKubernix(ctx, "logs")
	for scope := range pids {
		if !hasRow(list, "fake", scope, filepath.Join(e.stateDir, "logs", scope, "fake.log")) {
			t.Errorf("logs does not list the fake component of %s:\n%s", scope, list)
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubelet", "audit", "supervisor"} {
		if !hasRow(list, name) {
			t.Errorf("logs does not list %s:\n%s", name, list)
		}
	}
	for _, args := range [][]string{{"etcd"}, {"kube-apiserver"}, {"kube-scheduler"}} {
		if out := e.mustKubernix(ctx, "logs", args...); !strings.Contains(out, "--- kubernix: starting") {
			t.Errorf("logs %v does not print the component's log:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"fake"}, {"fake", "--node", "1"}, {"fake@" + nodes[0]}} {
		out := e.mustKubernix(ctx, "logs", args...)
		if !strings.Contains(out, "--- kubernix: starting") || !strings.Contains(out, "/fake") {
			t.Errorf("logs %v does not print the fake component's log:\n%s", args, out)
		}
	}

	e.killSupervisor(t)
	for scope, pid := range pids {
		if !running(pid) {
			t.Fatalf("fake component of %s (pid %d) died with the supervisor: the test proves nothing", scope, pid)
		}
	}
	e.mustKubernix(ctx, "down")
	for scope, pid := range pids {
		if running(pid) {
			t.Errorf("down after SIGKILL left the fake component of %s (pid %d) running", scope, pid)
		}
	}
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Fatalf("down after SIGKILL left:\n%s", strings.Join(left, "\n"))
	}
}

// fakeBinDir returns a bin dir holding a kubernix built with the
// kubernix_fake_component tag and links to every other binary of binDir.
func fakeBinDir(t *testing.T, binDir string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(binDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "kubernix" {
			if err := os.Symlink(filepath.Join(binDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	build := exec.Command("go", "build", "-tags", "kubernix_fake_component", "-o", filepath.Join(dir, "kubernix"), "./cmd/kubernix")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the kubernix with the fake component: %v\n%s", err, out)
	}
	return dir
}

// hasRow reports whether a line of out has the fields want, in order,
// each a whole field.
func hasRow(out string, want ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		i := 0
		for _, w := range f {
			if i < len(want) && w == want[i] {
				i++
			}
		}
		if i == len(want) {
			return true
		}
	}
	return false
}

// running reports whether pid is a live process, not a zombie: the fake
// components' parent, the SIGKILLed supervisor, is gone, so nothing may
// reap them soon after they exit.
func running(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z" && st.State != "X"
}
