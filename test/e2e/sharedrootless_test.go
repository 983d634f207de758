package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// tb is what the rootless helpers need of the test they act for: a
// *testing.T, or setupScope while the shared rootless cluster is set up
// (its user outlives the test that started it).
type tb interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Skipf(format string, args ...any)
}

// setupScope stands in for a test while the shared rootless cluster is
// set up and torn down: Fatal, Fatalf and Skipf panic with a setupFailure
// that start recovers as its error; Errorf and Logf are collected; and
// the cleanups run, last first, when close asks.
type setupScope struct {
	mu       sync.Mutex
	cleanups []func()
	errs     []error
}

// setupFailure is why the set-up stopped (Fatal or Skipf).
type setupFailure struct{ msg string }

func (f setupFailure) Error() string { return f.msg }

func (s *setupScope) Helper() {}

func (s *setupScope) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *setupScope) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
}

func (s *setupScope) Fatal(args ...any) { panic(setupFailure{fmt.Sprint(args...)}) }

func (s *setupScope) Fatalf(format string, args ...any) {
	panic(setupFailure{fmt.Sprintf(format, args...)})
}

func (s *setupScope) Skipf(format string, args ...any) {
	panic(setupFailure{"skipped: " + fmt.Sprintf(format, args...)})
}

func (s *setupScope) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "shared rootless cluster: "+format+"\n", args...)
}

// close runs the cleanups, last first, and returns the errors reported
// (Errorf) since the scope began.
func (s *setupScope) close() error {
	s.mu.Lock()
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// sharedRootless is the one-node rootless cluster of the rootless tests
// that only read their cluster or add namespaced objects of their own
// (sharedRootlessCluster): one user, prepared as TestRootless describes,
// runs it. Started by the first test that asks, brought down when the
// last of them ends (scheduler.acquireShared), or else by TestMain, and
// then checked for anything left (rootlessCluster.leftovers).
var sharedRootless = &sharedRL{user: "kxrlshared", name: "kx-rs", cidr: "10.151.0.0/16"}

// sharedRL is a rootless cluster several tests use side by side.
type sharedRL struct {
	user, name, cidr string

	mu    sync.Mutex
	scope *setupScope      // nil until started
	rc    *rootlessCluster // nil until up was tried
	err   error            // why it could not start
}

// sharedRootlessCluster returns, for test t, the shared rootless cluster
// (starting it first if no test did) with a namespace of t's own, named
// after the test, in which the cluster's kubectl acts, and a directory of
// its own in the user's home for manifests (dir); both, with what t made
// in them, are deleted when t ends. t runs in parallel with the package's
// other parallel tests, on one slot with the cluster's other tests
// (scheduler.acquireShared). It skips as newRootlessUser does, and fails
// t when the cluster could not start.
func sharedRootlessCluster(t *testing.T) *rootlessCluster {
	t.Helper()
	binDir := requireRootless(t)
	t.Parallel()
	slots.acquireShared(t, weightDefault, sharedRootless.name, kindRootless, sharedRootless.close)
	s := sharedRootless
	s.mu.Lock()
	if s.scope == nil {
		s.err = s.start(binDir)
	}
	if s.err != nil {
		s.mu.Unlock()
		t.Fatalf("shared rootless cluster %s: %v", s.name, s.err)
	}
	rc, u := *s.rc, *s.rc.u
	s.mu.Unlock()
	u.t, rc.u = t, &u
	rc.namespace = testNamespace(t.Name())
	rc.dir = filepath.Join(u.home, rc.namespace)
	if err := os.Mkdir(rc.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rc.dir) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u.mustKubectl(ctx, rc.kctx, "create", "namespace", rc.namespace)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := u.kubectl(ctx, rc.kctx, "delete", "namespace", rc.namespace, "--wait=true"); err != nil {
			t.Errorf("delete the test's namespace: %v", err)
		}
	})
	return &rc
}

// start creates the user, prepares the host for it and brings the
// cluster up (detached). A failure of any step is returned; what was
// done is undone by close.
func (s *sharedRL) start(binDir string) (err error) {
	s.scope = &setupScope{}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(setupFailure)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	u := addRootlessUser(s.scope, binDir, s.user)
	u.addSubIDs()
	u.openTun()
	u.delegateCgroups()
	s.rc = &rootlessCluster{u: u, name: s.name, kctx: "kubernix-" + s.name, cidr: s.cidr,
		state: filepath.Join(u.home, ".local", "share", "kubernix", s.name), dir: u.home}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, code := u.kubernix(ctx, "up", "--detach", "--name", s.name, "--cidr", s.cidr, "--addons", sharedAddons); code != 0 {
		log, _ := os.ReadFile(filepath.Join(s.rc.state, "logs", "supervisor", "supervisor.log"))
		return fmt.Errorf("up --detach as %s exited %d:\n%s\nsupervisor log:\n%s", u.name, code, out, log)
	}
	return waitAddonsHealthy(ctx, func(ctx context.Context) (string, error) {
		out, _ := u.kubernix(ctx, "status", "-o", "json", "--name", s.name)
		return out, nil
	})
}

// close brings the cluster down if it was started, checks that nothing
// of it is left (rootlessCluster.leftovers), then removes the user and
// restores what start changed on the host.
func (s *sharedRL) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scope == nil {
		return nil
	}
	var errs []error
	if s.rc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, code := s.rc.u.kubernix(ctx, "down", "--name", s.name); code != 0 {
			errs = append(errs, fmt.Errorf("down exited %d:\n%s", code, out))
		} else if left := s.rc.leftovers(); len(left) > 0 {
			errs = append(errs, errors.New("down left:\n"+strings.Join(left, "\n")))
		}
	}
	errs = append(errs, s.scope.close())
	s.scope, s.rc, s.err = nil, nil, nil
	return errors.Join(errs...)
}

// leftovers lists what of the cluster is left on the host after its
// down: the user's processes, cgroups below the delegated subtree, the
// context in ~/.kube/config, links, routes of its range, mounts of its
// state dir.
func (rc *rootlessCluster) leftovers() []string {
	u := rc.u
	var left []string
	left = append(left, u.processes()...)
	for _, cg := range u.childCgroups() {
		left = append(left, "cgroup "+cg)
	}
	if b, err := os.ReadFile(filepath.Join(u.home, ".kube", "config")); err == nil && strings.Contains(string(b), rc.kctx) {
		left = append(left, "kubeconfig context "+rc.kctx+" in ~/.kube/config")
	}
	h := hash8(rc.name)
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		if strings.Contains(line, "kx-"+h) || strings.Contains(line, "kc-"+h) {
			left = append(left, "link: "+line)
		}
	}
	left = append(left, routesLeft(rc.cidr)...)
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, rc.state) {
			left = append(left, "mount: "+line)
		}
	}
	return left
}

// kubectl runs kubectl as the cluster's user in its context and, when
// set, the test's namespace.
func (rc *rootlessCluster) kubectl(ctx context.Context, args ...string) (string, error) {
	rc.u.t.Helper()
	if rc.namespace != "" {
		args = append([]string{"--namespace", rc.namespace}, args...)
	}
	return rc.u.kubectl(ctx, rc.kctx, args...)
}

// mustKubectl is kubectl that fails the test on an error.
func (rc *rootlessCluster) mustKubectl(ctx context.Context, args ...string) string {
	rc.u.t.Helper()
	out, err := rc.kubectl(ctx, args...)
	if err != nil {
		rc.u.t.Fatal(err)
	}
	return out
}

// inNamespace is manifest with its objects in the test's namespace
// rather than default.
func (rc *rootlessCluster) inNamespace(manifest string) string {
	if rc.namespace == "" {
		return manifest
	}
	return strings.ReplaceAll(manifest, "namespace: default", "namespace: "+rc.namespace)
}
