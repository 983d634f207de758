package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/cgroup"
	"github.com/kubernix/kubernix/pkg/cli/status"
	"github.com/kubernix/kubernix/pkg/node"
	"github.com/kubernix/kubernix/pkg/sysctl"
)

// TestMain runs the package's tests, then brings down the clusters they
// shared (see sharedCluster and sharedRootlessCluster) and checks that nothing of them is left: a
// leftover fails the run as a failed test would.
func TestMain(m *testing.M) {
	flag.Parse()
	restore, err := raiseInotifyInstances()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		os.Exit(1)
	}
	defer restore()
	if err := mountCgroupControllers(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		restore()
		os.Exit(1)
	}
	code := m.Run()
	for _, s := range []struct {
		name  string
		close func() error
	}{{sharedRoot.name, sharedRoot.close}, {sharedRootless.name, sharedRootless.close}} {
		if err := s.close(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: shared cluster %s: %v\n", s.name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	restore()
	os.Exit(code)
}

// startsClusters reports whether this run starts clusters: as root, not
// -short, with the built binaries (KUBERNIX_BIN_DIR). TestMain changes
// the host for the run only then.
func startsClusters() bool {
	return !testing.Short() && os.Geteuid() == 0 && os.Getenv("KUBERNIX_BIN_DIR") != ""
}

// mountCgroupControllers mounts the cgroup v1 controllers that the kernel
// has and no hierarchy mounts, before any test, as the first root `up` on
// a host does (and leaves them: README, "What kubernix changes on your machine"). On a
// fresh machine that first `up` would otherwise come in the middle of the
// run, after a rootless test user was delegated a cgroup in every
// hierarchy then mounted: the new hierarchies would lack it, and that
// user's `up` be refused ("no cgroup subtree is delegated"). It does
// nothing without root or cluster binaries, or on a cgroup v2 host.
func mountCgroupControllers() error {
	if !startsClusters() {
		return nil
	}
	layout, err := cgroup.Detect()
	if err != nil {
		return err
	}
	mounted, err := node.MountCgroupControllers(layout)
	if len(mounted) > 0 {
		fmt.Fprintf(os.Stderr, "mounted the cgroup v1 controllers %v, as kubernix up does\n", mounted)
	}
	return err
}

// inotifyInstances is the fs.inotify.max_user_instances the tests' root
// clusters need at once: each node's kubelet and containerd and each
// control plane take about 30 inotify instances for two nodes, and the
// shared cluster, -parallel own ones and a test's second cluster run side
// by side; the kernel's default, 128, is 4 such clusters, and a kubelet
// that gets none exits ("Failed to start cAdvisor ... too many open
// files"). 512 is what kind asks of a host for several clusters.
const inotifyInstances = 512

// raiseInotifyInstances raises fs.inotify.max_user_instances to
// inotifyInstances for the run, when it is lower and the run starts
// clusters (root, not -short), and returns what restores the host's value.
func raiseInotifyInstances() (restore func(), err error) {
	const key = "fs.inotify.max_user_instances"
	nothing := func() {}
	if !startsClusters() {
		return nothing, nil
	}
	old, err := sysctl.Get(key)
	if err != nil {
		return nothing, err
	}
	// A run killed before its restore left the host's value in the
	// ledger: that, not the raised one, is what to restore.
	if b, err := os.ReadFile(inotifyLedger); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			old = v
		}
	}
	n, err := strconv.Atoi(old)
	if err != nil {
		return nothing, fmt.Errorf("%s %q (from %s if it exists): %w", key, old, inotifyLedger, err)
	}
	if n >= inotifyInstances {
		os.Remove(inotifyLedger) // nothing to restore: the host's value is high enough
		return nothing, nil
	}
	if err := os.WriteFile(inotifyLedger, []byte(old+"\n"), 0o644); err != nil {
		return nothing, err
	}
	if err := sysctl.Set(key, strconv.Itoa(inotifyInstances)); err != nil {
		return nothing, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := sysctl.Set(key, old); err != nil {
				fmt.Fprintf(os.Stderr, "restore %s=%s: %v\n", key, old, err)
				return
			}
			os.Remove(inotifyLedger)
		})
	}, nil
}

// inotifyLedger holds the host's fs.inotify.max_user_instances while a
// run has raised it, so that the next run restores it if this one is
// killed before it could.
const inotifyLedger = "/run/kubernix-e2e-inotify-instances"

// sharedRoot is the multi-node root cluster (two nodes, every default
// addon) of the tests that only read their cluster or add objects of their
// own, which they remove at their end (sharedCluster). Made by the first
// test that asks for it, brought down (with the leak check) when the last
// of them ends (scheduler.acquireShared), or else by TestMain.
// sharedAddons are the shared clusters' addons: the defaults, ingress
// (TestIngress) among them.
const sharedAddons = "coredns,local-path-storage,metrics-server,ingress,loadbalancer,registry"

var sharedRoot = &shared{name: "kx-shared", cidr: "10.150.0.0/16", nodes: 2}

// shared is a cluster several tests use side by side.
type shared struct {
	name, cidr string
	nodes      int

	mu   sync.Mutex
	env  *env  // nil until started
	err  error // why it could not start
	dirs []string
}

// nodeNames are the cluster's node names, in order.
func (s *shared) nodeNames() []string {
	var out []string
	for i := range s.nodes {
		out = append(out, fmt.Sprintf("%s-node-%d", s.name, i))
	}
	return out
}

// sharedCluster returns, for test t, an env on the shared root cluster,
// starting it first if no test did. Its kubectl and apply act in a
// namespace of t's own (named after the test), which is deleted, with what
// t made in it, when t ends. A test that makes cluster-wide objects
// removes them itself, under names of its own. t runs in parallel
// (t.Parallel) with the other tests on the cluster, which hold one slot
// together (scheduler.acquireShared), and the package's other parallel
// tests: after every sequential one, so never beside one that
// needs the host alone (hostAlone). It skips as newEnv does, and fails t
// when the cluster could not start.
func sharedCluster(t *testing.T) *env {
	t.Helper()
	binDir := requireIntegration(t, "start a cluster")
	t.Parallel()
	slots.acquireShared(t, weightDefault, sharedRoot.name, kindRoot, sharedRoot.close)
	s := sharedRoot
	s.mu.Lock()
	if s.env == nil && s.err == nil {
		s.env, s.err = s.start(binDir)
	}
	if s.err != nil {
		s.mu.Unlock()
		t.Fatalf("shared cluster %s: %v", s.name, s.err)
	}
	e := *s.env
	s.mu.Unlock()
	e.t = t
	ns := testNamespace(t.Name())
	e.namespace = ns
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.namespaceless(func() { e.mustKubectl(ctx, "create", "namespace", ns) })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		e.namespaceless(func() {
			if out, err := e.kubectl(ctx, "delete", "namespace", ns, "--wait=true"); err != nil {
				t.Errorf("delete the test's namespace: %v\n%s", err, out)
			}
		})
	})
	return &e
}

// testNamespace is a namespace name for the test named name: lower case,
// dashes for what a DNS label may not hold, at most 63 characters.
func testNamespace(name string) string {
	n := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > 50 {
		n = n[:50]
	}
	return "e2e-" + strings.TrimRight(n, "-")
}

// namespaceless runs f with e's kubectl in the context's own namespace.
func (e *env) namespaceless(f func()) {
	ns := e.namespace
	e.namespace = ""
	defer func() { e.namespace = ns }()
	f()
}

// start brings the cluster up (detached) with the binaries in binDir, its
// state and kubeconfig in temp dirs of its own.
func (s *shared) start(binDir string) (*env, error) {
	state, err := os.MkdirTemp("", "kx-e2e-shared-")
	if err != nil {
		return nil, err
	}
	kc, err := os.MkdirTemp("", "kx-e2e-shared-kubeconfig-")
	if err != nil {
		return nil, err
	}
	s.dirs = []string{state, kc}
	claims.mu.Lock()
	claims.held[s.name], claims.held[s.cidr] = "the shared cluster", "the shared cluster"
	claims.mu.Unlock()
	e := &env{
		binDir: binDir, name: s.name, stateDir: state, cidr: s.cidr,
		kubeconfig: filepath.Join(kc, "user-kubeconfig"),
		// A registry port of its own, as newEnv gives (ownRegistryPort).
		extra:       append([]string{"--nodes", fmt.Sprint(s.nodes), "--addons", sharedAddons}, registryPortFlag()...),
		netnsBefore: runNetns(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := e.run(ctx, "up", "--detach"); err != nil {
		s.env = e // so close brings down what started
		return e, fmt.Errorf("up: %w\n%s", err, out)
	}
	if err := waitAddonsHealthy(ctx, func(ctx context.Context) (string, error) {
		return e.run(ctx, "status", "-o", "json")
	}); err != nil {
		s.env = e
		return e, err
	}
	return e, nil
}

// waitAddonsHealthy waits until statusJSON (`kubernix status -o json` of a
// cluster) reports every addon healthy, those deployed once the cluster
// is Ready (ingress) included: so that the tests that share a cluster
// find it whole, or to check that the cluster is. The error says which
// addon was not, and why.
func waitAddonsHealthy(ctx context.Context, statusJSON func(context.Context) (string, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, _ := statusJSON(ctx) // exits 1 while unhealthy
		var st status.Status
		// The JSON, then what status says on stderr when unhealthy.
		if err := json.NewDecoder(strings.NewReader(out[max(strings.Index(out, "{"), 0):])).Decode(&st); err != nil {
			last = fmt.Errorf("status -o json: %w\n%s", err, out)
			return false, nil
		}
		last = st.AddonsReady()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("addons: %w", errors.Join(err, last))
	}
	return nil
}

// run runs kubernix verb with the cluster's flags, without a test.
func (e *env) run(ctx context.Context, verb string, more ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), append(append([]string{verb}, e.argsOf(verb)...), more...)...)
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// hostAlone makes t a test that must be the host's only root cluster:
// one that checks what the first cluster changes on the host and the
// last one restores (sysctls, the FORWARD policy), or host-wide state
// another root cluster would add to (kube-proxy's tables in the host's
// namespace). It runs in parallel (t.Parallel) beside rootless tests
// only (kindHostAlone): no root test starts while it waits or runs. The
// shared root cluster is down by then (its group ended, or never started); a
// close here brings it down (with the leak check) if not.
func hostAlone(t *testing.T) {
	t.Helper()
	t.Parallel()
	slots.acquire(t, weightHostAlone, kindHostAlone)
	if err := sharedRoot.close(); err != nil {
		t.Fatalf("shared cluster %s: %v", sharedRoot.name, err)
	}
}

// close brings the cluster down if it was started and checks that nothing
// of it is left (env.leftovers), then removes its temp dirs.
func (s *shared) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env == nil {
		return nil
	}
	defer func() {
		for _, d := range s.dirs {
			os.RemoveAll(d)
		}
		s.env, s.err, s.dirs = nil, nil, nil
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := s.env.run(ctx, "down"); err != nil {
		return fmt.Errorf("down: %w\n%s", err, out)
	}
	if left := s.env.leftovers(s.nodeNames(), false); len(left) > 0 {
		return errors.New("down left:\n" + strings.Join(left, "\n"))
	}
	return nil
}

// parallel lets the test of e run beside the package's other parallel
// tests (as many at once as slots allows, after every sequential test). Only a
// test with a cluster of its own (container executor) that neither changes
// nor checks anything host-wide that another cluster touches (sysctls,
// named network namespaces, fixed host ports, root's list of clusters)
// may call it. Its name and CIDR must not be another running test's
// (claim); its registry port is its own (newEnv).
func (e *env) parallel() {
	e.t.Helper()
	e.parallelAt(weightDefault)
}

// parallelAt is parallel for a test of the given weight: the heavier
// start first (see slots).
func (e *env) parallelAt(weight int) {
	e.t.Helper()
	if _, done := parallelTests.LoadOrStore(e.t, true); !done {
		e.t.Parallel()
		slots.acquire(e.t, weight, kindRoot)
	}
	claims.take(e.t, e.name, e.cidr)
}

// ownRegistryPort gives the cluster a registry port no other test's
// cluster uses (--registry-port), unless its flags or cluster file set
// one: two clusters starting at once would otherwise both pick the first
// free one from 5000 (rootless ones run beside every other kind).
func (e *env) ownRegistryPort() {
	e.t.Helper()
	if !slices.Contains(e.extra, "--registry-port") && !configSetsRegistryPort(e.t, e.extra) {
		e.extra = append(e.extra, registryPortFlag()...)
	}
}

// parallelTests are the tests that called t.Parallel through parallel
// (a test with two clusters calls parallel for each).
var parallelTests sync.Map

// configSetsRegistryPort reports whether the cluster file that args give
// with --config sets registry_port (which a flag would override).
func configSetsRegistryPort(t *testing.T, args []string) bool {
	t.Helper()
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		return false
	}
	b, err := os.ReadFile(args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^\s*registry_port\s*=`).Match(b)
}

// registryPortFlag is --registry-port with a port no other cluster of
// this run was given: from 15001 up, away from the 5000 and up that
// clusters without one take.
func registryPortFlag() []string {
	return []string{"--registry-port", strconv.Itoa(int(nextRegistryPort.Add(1)))}
}

// nextRegistryPort is the last port registryPortFlag gave.
var nextRegistryPort atomic.Int32

func init() { nextRegistryPort.Store(15000) }

// claims are the cluster names and CIDRs of the running parallel tests.
var claims = &claimSet{held: map[string]string{}}

// claimSet maps a cluster name or CIDR to the test holding it.
type claimSet struct {
	mu   sync.Mutex
	held map[string]string
}

// take claims name and cidr for t until it ends, failing t when another
// running test holds either or a CIDR overlapping cidr.
func (c *claimSet) take(t *testing.T, name, cidr string) {
	t.Helper()
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		t.Fatalf("cluster %s: CIDR %q: %v", name, cidr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, holder := range c.held {
		if k == name {
			t.Fatalf("cluster name %s is also test %s's: give each test its own", name, holder)
		}
		if q, err := netip.ParsePrefix(k); err == nil && q.Overlaps(p) {
			t.Fatalf("CIDR %s of cluster %s overlaps %s of test %s: give each test its own", cidr, name, k, holder)
		}
	}
	c.held[name], c.held[cidr] = t.Name(), t.Name()
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.held, name)
		delete(c.held, cidr)
	})
}
