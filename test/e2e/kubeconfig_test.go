package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestKubeconfigMalformed: a user kubeconfig that cannot be merged does
// not take down a cluster that is Ready (issue 11, item 4). `up --detach`
// succeeds and warns, saying how to reach the cluster; the cluster works
// through its admin kubeconfig; the user's file is never touched, by up or
// by down.
func TestKubeconfigMalformed(t *testing.T) {
	e := newEnv(t, "kcfbad", "10.64.0.0/16", leanAddons)
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const malformed = "apiVersion: v1\nclusters: [\n  - name: broken\n"
	if err := os.WriteFile(e.kubeconfig, []byte(malformed), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	unchanged := func(when string) {
		t.Helper()
		if b, err := os.ReadFile(e.kubeconfig); err != nil || string(b) != malformed {
			t.Errorf("%s: the user's kubeconfig changed (%v): %q", when, err, b)
		}
	}

	out, code := e.kubernix(ctx, "up", "--detach")
	if code != 0 {
		t.Fatalf("up with a malformed kubeconfig exited %d (the cluster was torn down):\n%s", code, out)
	}
	t.Logf("up --detach:\n%s", out)
	admin := filepath.Join(e.stateDir, "kubeconfig", "admin.kubeconfig")
	for _, want := range []string{"WARNING", e.kubeconfig, "KUBECONFIG=" + admin + " kubectl", "kubernix env --name " + e.name} {
		if !strings.Contains(out, want) {
			t.Errorf("up's output does not say %q:\n%s", want, out)
		}
	}
	unchanged("after up")
	e.mustKubectl(ctx, "--kubeconfig", admin, "wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")
	if env := e.mustKubernix(ctx, "env"); !strings.Contains(env, "export KUBECONFIG='"+admin+"'") {
		t.Errorf("kubernix env does not export the admin kubeconfig:\n%s", env)
	}

	if out, code := e.kubernix(ctx, "down"); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	unchanged("after down")
	if left := e.leftovers([]string{e.name + "-node-0"}, true); len(left) > 0 {
		t.Errorf("down left:\n%s", strings.Join(left, "\n"))
	}
}

// TestKubeconfigSudo: under sudo the context goes to the invoking user's
// ~/.kube/config (not root's, wherever $HOME points), created owned by the
// user with mode 0600 (~/.kube 0700), and the user's own kubectl reaches
// the cluster with it. `down`, after a SIGKILL of the supervisor and with
// a different environment (no sudo, another $KUBECONFIG and $HOME),
// removes the context from that same file, which keeps its owner and mode.
func TestKubeconfigSudo(t *testing.T) {
	e := newEnv(t, "kcfsudo", "10.66.0.0/16", leanAddons)
	e.parallel()
	u := newTestUser(t, "kxkcfg")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })

	dir := t.TempDir()
	rootHome := filepath.Join(dir, "root-home") // $HOME as sudo sets it: root's
	upEnv := append(environWithout("PATH", "HOME", "KUBECONFIG", "SUDO_USER", "SUDO_UID", "SUDO_GID"),
		"HOME="+rootHome, "SUDO_USER="+u.name, "SUDO_UID="+strconv.Itoa(u.uid), "SUDO_GID="+strconv.Itoa(u.gid),
		"PATH="+e.binDir+":"+os.Getenv("PATH"))
	if out, code := e.kubernixIn(ctx, upEnv, "up", "--detach"); code != 0 {
		t.Fatalf("up under sudo exited %d:\n%s", code, out)
	}

	kubeDir := filepath.Join(u.home, ".kube")
	userCfg := filepath.Join(kubeDir, "config")
	if _, err := os.Stat(filepath.Join(rootHome, ".kube", "config")); err == nil {
		t.Errorf("the context went to $HOME/.kube/config of root, %s", rootHome)
	}
	checkOwned := func(when string) {
		t.Helper()
		for path, mode := range map[string]os.FileMode{kubeDir: 0o700, userCfg: 0o600} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != u.uid || int(st.Gid) != u.gid || fi.Mode().Perm() != mode {
				t.Errorf("%s: %s: owner %d:%d mode %v, want %d:%d %v", when, path, st.Uid, st.Gid, fi.Mode().Perm(), u.uid, u.gid, mode)
			}
		}
	}
	checkOwned("after up")
	// The user's own kubectl, with the user's environment, reaches the cluster.
	kubectl := filepath.Join(u.home, "kubectl")
	copyFile(t, filepath.Join(e.binDir, "kubectl"), kubectl, 0o755)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "get", "nodes", "-o", "name")
	cmd.Env = []string{"HOME=" + u.home, "USER=" + u.name, "PATH=/usr/bin:/bin"}
	cmd.Dir = u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "node/"+e.name+"-node-0") {
		t.Errorf("kubectl as %s: %v: %s%s", u.name, err, stdout.String(), stderr.String())
	}

	e.killSupervisor(t)
	otherCfg := filepath.Join(dir, "other-kubeconfig")
	downEnv := append(environWithout("PATH", "HOME", "KUBECONFIG", "SUDO_USER", "SUDO_UID", "SUDO_GID"),
		"HOME="+filepath.Join(dir, "other-home"), "KUBECONFIG="+otherCfg, "PATH="+e.binDir+":"+os.Getenv("PATH"))
	if out, code := e.kubernixIn(ctx, downEnv, "down"); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, out)
	}
	cfg, err := clientcmd.LoadFromFile(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	kctx := "kubernix-" + e.name
	if cfg.Contexts[kctx] != nil || cfg.Clusters[kctx] != nil || cfg.AuthInfos[kctx] != nil || cfg.CurrentContext == kctx {
		t.Errorf("down left the context %s in %s", kctx, userCfg)
	}
	checkOwned("after down")
	if _, err := os.Stat(otherCfg); err == nil {
		t.Errorf("down wrote its own $KUBECONFIG %s", otherCfg)
	}
}

// testUser is an ordinary user the test creates.
type testUser struct {
	name     string
	uid, gid int
	home     string
}

// newTestUser creates the user name with a home directory (useradd -m),
// removing one left by an interrupted run first, and removes it at the end
// of the test.
func newTestUser(t *testing.T, name string) testUser {
	t.Helper()
	requireIntegration(t, "create a user")
	for _, b := range []string{"useradd", "userdel"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("integration test: %s is not installed (Debian: passwd)", b)
		}
	}
	func() {
		hostFiles.Lock() // useradd and userdel fail while another holds /etc/passwd
		defer hostFiles.Unlock()
		if _, err := user.Lookup(name); err == nil {
			run(t, "userdel", "-r", "-f", name)
		}
		run(t, "useradd", "-m", "-s", "/bin/sh", name)
	}()
	t.Cleanup(func() {
		hostFiles.Lock()
		defer hostFiles.Unlock()
		if out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return testUser{name: name, uid: uid, gid: gid, home: u.HomeDir}
}

// environWithout is the test's environment without the variables named.
func environWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
