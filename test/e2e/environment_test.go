package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shellEnviron are variables of the caller's shell that the components
// would read their settings from (etcd its ETCD_*, the registry its
// REGISTRY_*, containerd's clients CONTAINERD_*), and a proxy, which is
// passed on: its password must not reach the records.
var shellEnviron = []string{
	"ETCD_NAME=from-the-shell",
	"ETCD_DATA_DIR=/nonexistent/etcd",
	"REGISTRY_HTTP_ADDR=127.0.0.1:1",
	"CONTAINERD_ADDRESS=/nonexistent/containerd.sock",
	"GODEBUG=kubernixtest=1",
	"LANG=C.UTF-8",
	"HTTPS_PROXY=http://kxuser:kxsecret@127.0.0.1:9",
}

// notPassed are the keys (KEY=, any value) or entries (KEY=VALUE) of the
// caller's environment that no component may see.
var notPassed = []string{"ETCD_NAME=", "ETCD_DATA_DIR=", "REGISTRY_HTTP_ADDR=127.0.0.1:1", "CONTAINERD_ADDRESS=",
	"GODEBUG=", "LANG=C.UTF-8", "KUBECONFIG=", "NOTIFY_SOCKET="}

// TestEnvironment (issue 23, item 6): a cluster started from a shell whose
// environment holds ETCD_NAME, ETCD_DATA_DIR, REGISTRY_HTTP_ADDR,
// CONTAINERD_ADDRESS and the like comes up unaffected (etcd refuses to
// start when a variable shadows one of its flags), and no component's
// process has those variables: each gets the defined environment (PATH,
// HOME, TZ, the proxies) plus what its description sets, which its
// run.json records (the proxy's password redacted) and `up --dry-run`
// shows.
func TestEnvironment(t *testing.T) {
	e := newEnv(t, "kxenv", "10.131.0.0/16", "--addons", "registry")
	e.parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The proxy must not carry the cluster's own traffic.
	environ := append(e.environ(), append(slices.Clone(shellEnviron), "NO_PROXY="+e.cidr+",127.0.0.1,localhost")...)

	t.Run("dry-run shows the environment", func(t *testing.T) {
		out, code := e.kubernixIn(ctx, environ, "up", "--dry-run")
		if code != 0 {
			t.Fatalf("up --dry-run exited %d:\n%s", code, out)
		}
		_, etcd, _ := strings.Cut(out, "\n== etcd\n")
		etcd, _, _ = strings.Cut(etcd, "\n== ")
		var env string
		for _, line := range strings.Split(etcd, "\n") {
			if v, ok := strings.CutPrefix(line, "env:"); ok {
				env = strings.TrimSpace(v)
			}
		}
		for _, want := range []string{"PATH=", "HOME=", "HTTPS_PROXY=http://kxuser:xxxxx@127.0.0.1:9", "NO_PROXY=" + e.cidr} {
			if !strings.Contains(env, want) {
				t.Errorf("etcd's env in the plan lacks %q: %q", want, env)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			v, ok := strings.CutPrefix(line, "env:")
			if !ok {
				continue
			}
			for _, kv := range strings.Fields(v) {
				if passedFromShell(kv) {
					t.Errorf("the plan shows %q from the caller's environment: %s", kv, line)
				}
			}
		}
		if strings.Contains(out, "kxsecret") {
			t.Error("the plan shows the proxy's password")
		}
	})

	e.downOnCleanup()
	out, code := e.kubernixIn(ctx, environ, "up", "--detach")
	if code != 0 {
		t.Fatalf("up with ETCD_NAME and others in the environment exited %d:\n%s", code, out)
	}
	e.mustKubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
	e.mustKubectl(ctx, "get", "--raw", "/readyz/etcd")

	pidfiles, err := filepath.Glob(filepath.Join(e.stateDir, "run", "*", "*", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, pidfile := range pidfiles {
		runDir := filepath.Dir(pidfile)
		scope := filepath.Base(filepath.Dir(runDir))
		if scope == "supervisor" { // kubernix itself keeps the caller's environment
			continue
		}
		name := filepath.Base(runDir)
		pid := readPid(t, pidfile)
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			t.Errorf("%s/%s (pid %d): %v", scope, name, pid, err)
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		checked[name] = true
		for _, kv := range got {
			if passedFromShell(kv) {
				t.Errorf("%s/%s (pid %d) has %q from the caller's environment", scope, name, pid, kv)
			}
		}
		for _, want := range []string{"HOME=", "HTTPS_PROXY=http://kxuser:kxsecret@127.0.0.1:9"} {
			if !slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, want) }) {
				t.Errorf("%s/%s (pid %d) lacks %q: %q", scope, name, pid, want, got)
			}
		}
		var rec struct {
			Env []string `json:"env"`
		}
		runJSON := mustRead(t, filepath.Join(runDir, "run.json"))
		if err := json.Unmarshal(runJSON, &rec); err != nil {
			t.Fatal(err)
		}
		redacted := slices.Clone(got)
		for i, kv := range redacted {
			redacted[i] = strings.Replace(kv, ":kxsecret@", ":xxxxx@", 1)
		}
		slices.Sort(redacted)
		if recorded := slices.Sorted(slices.Values(rec.Env)); !slices.Equal(recorded, redacted) {
			t.Errorf("%s/%s: run.json env %q, the process has %q", scope, name, rec.Env, redacted)
		}
		if bytes.Contains(runJSON, []byte("kxsecret")) {
			t.Errorf("%s/%s: run.json holds the proxy's password", scope, name)
		}
	}
	t.Logf("checked the environment of %v", slices.Sorted(maps.Keys(checked)))
	for _, name := range []string{"etcd", "kube-apiserver", "registry", "containerd", "kubelet", "kube-proxy"} {
		if !checked[name] {
			t.Errorf("no running %s found under %s to check (checked %v)", name, filepath.Join(e.stateDir, "run"), checked)
		}
	}
}

// passedFromShell reports whether kv is one of notPassed.
func passedFromShell(kv string) bool {
	return slices.ContainsFunc(notPassed, func(not string) bool {
		return kv == not || strings.HasSuffix(not, "=") && strings.HasPrefix(kv, not)
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
