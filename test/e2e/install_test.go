package e2e

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/images"
	"github.com/kubernix/kubernix/pkg/process"
)

// bundleFiles are the regular files `make install` puts into
// PREFIX/lib/kubernix/bin; bundleLinks are the multi-call binary's names,
// links to kube.
var (
	bundleFiles = []string{"kube", "kubectl", "agnhost", "containerd", "containerd-shim-runc-v2", "crictl",
		"coredns", "pause", "local-path-provisioner", "registry", "metrics-server"}
	bundleLinks = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}
)

// makeIn runs make in the source tree with args and returns its combined
// output and exit code (-1 when make could not run).
func makeIn(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", append([]string{"-C", root}, args...)...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("make %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// TestInstall installs kubernix with `make install PREFIX=…` from the
// outputs already built beside KUBERNIX_BIN_DIR (nothing is rebuilt), moves
// the installed tree elsewhere and runs it through a symlink from another
// directory, with an old kubectl first on PATH and no KUBERNIX_* variable:
// up --detach, a pod runs, the bundle's kubectl is the one used, down; then
// `make uninstall` removes every file it installed.
func TestInstall(t *testing.T) {
	e := newEnv(t, "kxi-inst", "10.171.0.0/16")
	e.parallel() // its up passes the registry port newEnv gave (e.extra)
	out := filepath.Dir(e.binDir)
	if _, code := makeIn(t, "-q", "OUT="+out, "bins", "build"); code != 0 {
		t.Skipf("integration test: the binaries in %s are older than the sources; run `make bins build images` first (the test installs what is built, it does not build)", out)
	}
	tmp := t.TempDir()
	prefix, moved := filepath.Join(tmp, "inst"), filepath.Join(tmp, "moved")
	log, code := makeIn(t, "install", "OUT="+out, "PREFIX="+prefix)
	if code != 0 {
		t.Fatalf("make install exited %d:\n%s", code, log)
	}
	for _, rebuilt := range []string{"go build", "GOBIN=", "\nbuilt "} {
		if strings.Contains(log, rebuilt) {
			t.Errorf("make install with up-to-date outputs rebuilt something (%q):\n%s", rebuilt, log)
		}
	}
	checkInstalled(t, prefix)
	// Relocatable: the tree works from wherever it is copied to, also
	// through a symlink to its kubernix.
	if err := os.Rename(prefix, moved); err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(tmp, "links")
	oldBin := filepath.Join(tmp, "old")
	for _, d := range []string{links, oldBin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(moved, "bin", "kubernix"), filepath.Join(links, "kubernix")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(oldBin, "kubectl"), []byte("#!/bin/sh\necho 'Client Version: v1.32.0'\necho 'old kubectl' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.binDir = links
	// No sbin dirs either: root's PATH in some shells and services lacks
	// them, and kubernix itself runs iptables and nft.
	environ := []string{"PATH=" + oldBin + ":/usr/local/bin:/usr/bin:/bin", "KUBECONFIG=" + e.kubeconfig}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "KUBECONFIG" && !strings.HasPrefix(k, "KUBERNIX_") {
			environ = append(environ, kv)
		}
	}
	runInstalled(t, e, environ, filepath.Join(moved, "lib", "kubernix"))

	if log, code := makeIn(t, "uninstall", "PREFIX="+moved); code != 0 {
		t.Fatalf("make uninstall exited %d:\n%s", code, log)
	}
	var left []string
	err := filepath.WalkDir(moved, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (!d.IsDir() || strings.Contains(p, "kubernix")) {
			left = append(left, p)
		}
		return err
	})
	if err != nil || len(left) > 0 {
		t.Errorf("make uninstall left %q (%v)", left, err)
	}
}

// checkInstalled checks the tree `make install` laid out in prefix: the
// kubernix binary, the bundle's binaries (the multi-call binary's names as
// links to it) and exactly the built-in images.
func checkInstalled(t *testing.T, prefix string) {
	t.Helper()
	lib := filepath.Join(prefix, "lib", "kubernix")
	for _, f := range append([]string{filepath.Join(prefix, "bin", "kubernix")}, prefixed(filepath.Join(lib, "bin"), bundleFiles)...) {
		if st, err := os.Lstat(f); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			t.Errorf("%s: not an installed executable (%v)", f, err)
		}
	}
	for _, l := range prefixed(filepath.Join(lib, "bin"), bundleLinks) {
		if target, err := os.Readlink(l); err != nil || target != "kube" {
			t.Errorf("%s links to %q (%v), want kube", l, target, err)
		}
	}
	var want, got []string
	for _, b := range images.Builtins() {
		want = append(want, b.FileName())
	}
	entries, err := os.ReadDir(filepath.Join(lib, "images"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("installed images %q, want the built-in ones %q", got, want)
	}
}

func prefixed(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// runInstalled runs the installed kubernix of e (from a temp directory,
// with environ) against the bundle lib: doctor names the bundle, up
// --detach, the bundle's kubectl through `kubernix shell` runs a pod, down.
func runInstalled(t *testing.T, e *env, environ []string, lib string) {
	cwd := t.TempDir()
	cluster := []string{"--name", e.name, "--state-dir", e.stateDir}
	run := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), args...)
		cmd.Env, cmd.Dir = environ, cwd
		b, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(b), exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), 0
	}
	doctor, _ := run("doctor")
	for _, want := range []string{"bundle                   " + lib + "  (installed layout)", "built-in images          " + filepath.Join(lib, "images")} {
		if !strings.Contains(doctor, want) {
			t.Errorf("doctor does not say %q:\n%s", want, doctor)
		}
	}
	down := false
	t.Cleanup(func() {
		if down {
			return
		}
		if out, code := run(append([]string{"down"}, cluster...)...); code != 0 {
			t.Logf("cleanup down exited %d:\n%s", code, out)
		}
	})
	if out, code := run(append(append([]string{"up", "--detach", "--cidr", e.cidr}, cluster...), e.extra...)...); code != 0 {
		log, _ := os.ReadFile(filepath.Join(e.stateDir, "logs", "supervisor", "supervisor.log"))
		t.Fatalf("installed kubernix up --detach exited %d:\n%s\nsupervisor log:\n%s", code, out, log)
	} else {
		t.Logf("up --detach:\n%s", out)
	}
	info, err := process.ReadRun(filepath.Join(e.stateDir, "run", "control-plane", "kube-apiserver"))
	if err != nil || !slices.Contains(info.Argv, filepath.Join(lib, "bin", "kube-apiserver")) {
		t.Errorf("kube-apiserver ran as %q (%v), want the bundle's %s", info.Argv, err, filepath.Join(lib, "bin", "kube-apiserver"))
	}
	env, code := run(append([]string{"env"}, cluster...)...)
	if code != 0 || !strings.Contains(env, "PATH='"+filepath.Join(lib, "bin")+":") {
		t.Errorf("kubernix env exited %d, want PATH led by %s:\n%s", code, filepath.Join(lib, "bin"), env)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, code := run(append(append(append([]string{"shell"}, cluster...), "--", "kubectl", "--context", "kubernix-"+e.name), args...)...)
		if code != 0 {
			t.Fatalf("kubernix shell -- kubectl %s exited %d:\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	if v := kubectl("version", "--client"); !strings.Contains(v, "Client Version: v1.37") {
		t.Errorf("kubectl through kubernix shell is not the bundle's: %q", v)
	}
	nodes := kubectl("get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}")
	if strings.TrimSpace(nodes) != e.name+"-node-0 True" {
		t.Fatalf("nodes = %q, want one Ready node %s-node-0", nodes, e.name)
	}
	kubectl("run", "agnhost", "--image="+agnhost, "--image-pull-policy=Never", "--restart=Never")
	kubectl("wait", "--for=condition=Ready", "pod/agnhost", "--timeout=120s")
	if out := kubectl("exec", "agnhost", "--", "cat", "/etc/hostname"); strings.TrimSpace(out) != "agnhost" {
		t.Errorf("exec cat /etc/hostname = %q, want agnhost", out)
	}
	out, code := run(append([]string{"down"}, cluster...)...)
	if code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	down = true
}

// TestRootlessUserPath runs a rootless cluster as an ordinary user whose
// PATH, as on Debian, has no /usr/sbin or /sbin, though iptables, nft and
// ip are only there: up --detach, the node Ready, a pod runs, down.
func TestRootlessUserPath(t *testing.T) {
	rootlessParallel(t)
	rc := newRootlessCluster(t, "kxisbin", "kxi-sb")
	u := rc.u
	u.path = "/usr/local/bin:/usr/bin:/bin"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, code := u.kubernix(ctx, "doctor"); code != 0 {
		t.Errorf("doctor as %s with PATH %s exited %d:\n%s", u.name, u.path, code, out)
	}
	out, code := u.kubernix(ctx, "up", "--detach", "--name", rc.name, "--cidr", "10.172.0.0/16", leanAddons)
	if code != 0 {
		log, _ := os.ReadFile(filepath.Join(rc.state, "logs", "supervisor", "supervisor.log"))
		t.Fatalf("up --detach as %s with PATH %s exited %d:\n%s\nsupervisor log:\n%s", u.name, u.path, code, out, log)
	}
	nodes := u.mustKubectl(ctx, rc.kctx, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}")
	if strings.TrimSpace(nodes) != rc.name+"-node-0 True" {
		t.Fatalf("nodes = %q, want one Ready node %s-node-0", nodes, rc.name)
	}
	u.mustKubectl(ctx, rc.kctx, "run", "agnhost", "--image="+agnhost, "--image-pull-policy=Never", "--restart=Never")
	u.mustKubectl(ctx, rc.kctx, "wait", "--for=condition=Ready", "pod/agnhost", "--timeout=120s")
	if out := u.mustKubectl(ctx, rc.kctx, "exec", "agnhost", "--", "cat", "/etc/hostname"); strings.TrimSpace(out) != "agnhost" {
		t.Errorf("exec cat /etc/hostname = %q, want agnhost", out)
	}
	if out, code := u.kubernix(ctx, "down", "--name", rc.name); code != 0 {
		t.Errorf("down exited %d:\n%s", code, out)
	}
}
