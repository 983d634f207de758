package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// TestFakeComponent builds a kubernix with one more component, added
// the way a new one is: its package (pkg/components/fake) and one entry
// in the cluster's describers (pkg/cluster/fake_component.go, build tag
// kubernix_fake_component): a "fake" process in the control plane with a
// port on the bridge address, and one in each node's sandbox with a port
// on its node IP. It shows that every verb handles the new components
// with no other change: preflight refuses the ports taken (a node's is
// checked on the host with the process executor), up --dry-run shows
// them, up starts them serving there, status lists them running, logs
// lists and prints their logs, and down after a SIGKILLed supervisor
// stops them with the rest, leaving nothing behind.
func TestFakeComponent(t *testing.T) {
	e := newEnv(t, "fake-e2e", "10.108.0.0/16", "--nodes", "2", leanAddons)
	e.parallel()
	e.binDir = fakeBinDir(t, e.binDir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.downOnCleanup()
	nodes := []string{"fake-e2e-node-0", "fake-e2e-node-1"}

	for _, tt := range []struct {
		args []string
		port int
		want string
	}{
		{nil, 10271, "port 10271 is in use, so fake (healthz) cannot listen on 10.108.0.1"},
		{[]string{"--nodes", "1", "--executor", "process"}, 10270, "port 10270 is in use, so fake@fake-e2e-node-0 (healthz) cannot listen on 10.108.0.1"},
	} {
		ln, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", tt.port))
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"--detach", "--dry-run"} {
			e.upRefused(ctx, t, append([]string{mode}, tt.args...), tt.want)
		}
		ln.Close()
	}
	plan := e.mustKubernix(ctx, "up", "--dry-run")
	for _, want := range []string{"== fake\n", "port-proxy --healthz=10.108.0.1:10271", "== fake@" + nodes[0] + "\n", "== fake@" + nodes[1] + "\n", ":10270\n"} {
		if !strings.Contains(plan, want) {
			t.Errorf("up --dry-run does not show %q:\n%s", want, plan)
		}
	}

	e.mustKubernix(ctx, "up", "--detach")
	pids := map[string]int{}
	for _, scope := range append([]string{"control-plane"}, nodes...) {
		pid := readPid(t, filepath.Join(e.stateDir, "run", scope, "fake", "pid"))
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("fake component of %s (pid %d) is not running: %v", scope, pid, err)
		}
		pids[scope] = pid
	}
	urls := map[string]string{}
	for scope, pid := range pids {
		urls[scope] = healthzURL(t, pid)
		if _, err := httpGet(ctx, urls[scope]); err != nil {
			t.Errorf("fake component of %s does not serve on its port: %v", scope, err)
		}
	}
	if !strings.HasPrefix(urls["control-plane"], "http://10.108.0.1:10271/") {
		t.Errorf("the control plane's fake serves on %s, want the bridge address and port 10271", urls["control-plane"])
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
		if !strings.Contains(out, "--- kubernix: starting") || !strings.Contains(out, "port-proxy --healthz=") {
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
	for scope, url := range urls {
		if _, err := httpGet(ctx, url); err == nil {
			t.Errorf("down after SIGKILL left the fake component of %s serving on %s", scope, url)
		}
	}
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Fatalf("down after SIGKILL left:\n%s", strings.Join(left, "\n"))
	}
}

// healthzURL is the /healthz URL a fake component (the port proxy)
// serves, from its command line's --healthz.
func healthzURL(t *testing.T, pid int) string {
	t.Helper()
	p, err := procfs.NewProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	args, err := p.CmdLine()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if addr, ok := strings.CutPrefix(a, "--healthz="); ok {
			return "http://" + addr + "/healthz"
		}
	}
	t.Fatalf("pid %d has no --healthz: %q", pid, args)
	return ""
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
