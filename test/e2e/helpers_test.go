// Package e2e holds kubernix's integration tests: they start real clusters
// on this machine with the built binaries, as CI does (root, `make test`).
// They skip, saying why, where they cannot run: not root, or the binaries
// and images not built (set KUBERNIX_BIN_DIR, as `make test` does).
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// env is one test cluster's identity and the tools to drive it.
type env struct {
	t        *testing.T
	binDir   string
	name     string
	stateDir string
	cidr     string
	// cidr6 is the cluster's IPv6 range, "" for an IPv4 cluster: the
	// leak check looks for routes in it too.
	cidr6      string
	kubeconfig string // the user kubeconfig kubernix merges into
	extra      []string
	// netnsBefore are the entries of /run/netns when the test began.
	netnsBefore map[string]bool
	// foreignMounts are mount points under the state dir that the test
	// made as other software would: not the cluster's leftovers.
	foreignMounts map[string]bool
	// namespace, if set, is the namespace kubectl acts in (a test's own
	// on a shared cluster, see sharedCluster).
	namespace string
	// rangeChosen leaves --cidr out of the cluster's flags: up chooses
	// the range (cidr is then the one the test expects, for its checks).
	rangeChosen bool
}

// leanAddons is the flag of a cluster with no addons (no pods of its
// own: no CoreDNS, storage, metrics-server, LoadBalancer or registry),
// for the tests whose assertions involve none. Such a 1-node cluster's
// up takes about 10.5 CPU-seconds on this machine and each idle minute
// 5.6, against 17 and 9.4 with the default addons; the tests of the
// addons, and those of the host that should see everything a default
// cluster does (TestSingleNode, TestMultiNode, TestHostSafety,
// TestDownLeavesNothing, TestInstall, the shared clusters), keep them.
const leanAddons = "--addons="

// newEnv skips unless the test can start clusters, and returns an env for
// a cluster named name on cidr, with its state and kubeconfig in temp dirs
// and a registry port of its own (ownRegistryPort).
func newEnv(t *testing.T, name, cidr string, extra ...string) *env {
	t.Helper()
	binDir := requireIntegration(t, "start a cluster")
	for _, b := range []string{"kubernix", "kubectl", "kube-apiserver", "containerd"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatalf("KUBERNIX_BIN_DIR=%s lacks %s: run `make bins build images`", binDir, b)
		}
	}
	// Short paths: sockets live under the state dir.
	state, err := os.MkdirTemp("", "kx-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	e := &env{
		t: t, binDir: binDir, name: name, stateDir: state, cidr: cidr,
		// Outside the state dir, which must be empty or kubernix's.
		kubeconfig: filepath.Join(t.TempDir(), "user-kubeconfig"), extra: extra,
		netnsBefore: runNetns(),
	}
	e.ownRegistryPort()
	return e
}

// runNetns lists the named network namespaces in /run/netns.
func runNetns() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// args are the flags naming this cluster.
func (e *env) args() []string {
	args := []string{"--name", e.name, "--state-dir", e.stateDir, "--cidr", e.cidr}
	if e.rangeChosen {
		args = args[:4]
	}
	return append(args, e.extra...)
}

// argsOf are the cluster's flags that verb takes: all of args for the
// verbs that take every setting (up, config view), else those selecting
// the cluster.
func (e *env) argsOf(verb string) []string {
	if verb == "up" || verb == "config" {
		return e.args()
	}
	return []string{"--name", e.name, "--state-dir", e.stateDir}
}

func (e *env) environ() []string {
	return append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "PATH="+e.binDir+":"+os.Getenv("PATH"))
}

// kubernix runs kubernix with the cluster's flags after the verb and
// returns its combined output and exit code.
func (e *env) kubernix(ctx context.Context, verb string, more ...string) (string, int) {
	e.t.Helper()
	return e.kubernixIn(ctx, e.environ(), verb, more...)
}

// kubernixIn is kubernix with the process environment environ.
func (e *env) kubernixIn(ctx context.Context, environ []string, verb string, more ...string) (string, int) {
	e.t.Helper()
	args := append(append([]string{verb}, e.argsOf(verb)...), more...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubernix"), args...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

// mustKubernix is kubernix that fails the test on a non-zero exit.
func (e *env) mustKubernix(ctx context.Context, verb string, more ...string) string {
	e.t.Helper()
	out, code := e.kubernix(ctx, verb, more...)
	if code != 0 {
		e.t.Fatalf("kubernix %s exited %d:\n%s", verb, code, out)
	}
	return out
}

// kubectl runs the bundled kubectl against the cluster's merged context.
func (e *env) kubectl(ctx context.Context, args ...string) (string, error) {
	e.t.Helper()
	flags := []string{"--context", "kubernix-" + e.name}
	if e.namespace != "" {
		flags = append(flags, "--namespace", e.namespace)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "kubectl"), append(flags, args...)...)
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (e *env) mustKubectl(ctx context.Context, args ...string) string {
	e.t.Helper()
	out, err := e.kubectl(ctx, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// eventually calls f every 500 ms until it returns nil, and fails t with
// f's last error when timeout passes first.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	eventuallyEvery(t, timeout, 500*time.Millisecond, what, f)
}

// eventuallyEvery is eventually calling f every interval: for conditions
// that change only every few seconds (metrics-server's scrapes, the HPA's
// syncs), where each call of a kubectl costs about 0.2 CPU-seconds.
func eventuallyEvery(t *testing.T, timeout, interval time.Duration, what string, f func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, last)
	}
}

// httpGet fetches url (only addresses on this machine or in our bridges).
func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return b.String(), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return b.String(), err
}

// hostReachesNetexec waits up to timeout for a GET of /hostname at
// hostPort, from the host, to answer with a netexec pod's name; it fails
// t, naming what, when none does.
func hostReachesNetexec(ctx context.Context, t *testing.T, timeout time.Duration, what, hostPort string) {
	t.Helper()
	eventually(t, timeout, what, func() error {
		body, err := httpGet(ctx, "http://"+hostPort+"/hostname")
		if err == nil && !strings.HasPrefix(body, "netexec-") {
			return fmt.Errorf("got %q", body)
		}
		return err
	})
}

// hash8 is the 8-hex-digit hash kubernix derives its link and chain names from.
func hash8(name string) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:])[:8]
}

// leftovers inspects the host independently of kubernix's own bookkeeping
// and lists what of the cluster remains. It checks:
//   - processes: any whose command line or cwd mentions the state dir;
//   - mounts: under the state dir (pods' network namespaces among them);
//   - network namespaces in /run/netns that were not there when the test
//     began, but the tests' own neighbours (newNeighbour);
//   - links: the cluster bridge, CNI bridge and node veths (by name hash);
//   - iptables: the cluster's KUBERNIX-* chains, and KUBE-* chains in the
//     host namespace (process executor);
//   - nftables: the cluster's guard table, and kube-proxy's tables in the
//     host namespace (process executor);
//   - cgroups: /kubernix/<node> in every hierarchy.
func (e *env) leftovers(nodes []string, hostKubeChains bool) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || d.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		if strings.Contains(string(cmdline), e.stateDir) {
			out = append(out, fmt.Sprintf("process %s: %s", d.Name(), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && e.foreignMounts[f[4]] {
			continue
		}
		if strings.Contains(line, e.stateDir) {
			out = append(out, "mount: "+line)
		}
	}
	for name := range runNetns() {
		if !e.netnsBefore[name] && !strings.HasPrefix(name, neighbourNetnsPrefix) {
			out = append(out, "netns: /run/netns/"+name)
		}
	}
	h := hash8(e.name)
	tables, _ := exec.Command("nft", "list", "tables").Output()
	for _, line := range strings.Split(string(tables), "\n") {
		line = strings.TrimSpace(line)
		if (hostKubeChains && strings.HasSuffix(line, " kube-proxy")) || strings.HasSuffix(line, " kubernix-"+h) {
			out = append(out, "nftables: "+line)
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		if strings.Contains(line, "kx-"+h) || strings.Contains(line, "kc-"+h) || strings.Contains(line, "kx"+h[:7]+"n") {
			out = append(out, "link: "+line)
		}
	}
	rules, _ := exec.Command("iptables-save").Output()
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.Contains(line, "KUBERNIX-"+strings.ToUpper(h)) || strings.Contains(line, "KUBERNIX-FWD-"+strings.ToUpper(h)) ||
			(hostKubeChains && strings.HasPrefix(line, ":KUBE-")) {
			out = append(out, "iptables: "+line)
		}
	}
	out = append(out, routesLeft(e.cidr)...)
	if e.cidr6 != "" {
		out = append(out, routesLeft6(e.cidr6)...)
	}
	for _, n := range nodes {
		matches, _ := filepath.Glob("/sys/fs/cgroup/*/kubernix/" + n)
		for _, m := range matches {
			out = append(out, "cgroup: "+m)
		}
	}
	return out
}

// routesLeft lists the host's routes (every table) that name an address
// of cidr's /16, such as "10.163.": each line prefixed "route: ".
func routesLeft(cidr string) []string {
	var out []string
	routes, _ := exec.Command("ip", "route", "show", "table", "all").Output()
	for _, line := range strings.Split(string(routes), "\n") {
		if strings.Contains(line, cidr16(cidr)) {
			out = append(out, "route: "+line)
		}
	}
	return out
}

// routesLeft6 lists the host's IPv6 routes (every table) into the IPv6
// prefix cidr6, each line prefixed "route: ".
func routesLeft6(cidr6 string) []string {
	r := netip.MustParsePrefix(cidr6)
	var out []string
	routes, _ := exec.Command("ip", "-6", "route", "show", "table", "all").Output()
	for _, line := range strings.Split(string(routes), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (f[0] == "unreachable" || f[0] == "blackhole") {
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if !strings.Contains(dst, "/") {
			dst += "/128"
		}
		if p, err := netip.ParsePrefix(dst); err == nil && p.Overlaps(r) {
			out = append(out, "route: "+line)
		}
	}
	return out
}

// cidr16 is the first two octets of the IPv4 range cidr with a dot,
// "10.163." for 10.163.0.0/16: the tests' ranges are /16s.
func cidr16(cidr string) string {
	return strings.Join(strings.SplitN(cidr, ".", 3)[:2], ".") + "."
}

// requireIntegration skips the test unless it may change the host: not
// -short, running as root (the skip message says it is needed to what),
// and KUBERNIX_BIN_DIR set. It
// returns the bin dir.
func requireIntegration(t *testing.T, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skipf("integration test: needs root to %s (run `make test` as root)", what)
	}
	binDir := os.Getenv("KUBERNIX_BIN_DIR")
	if binDir == "" {
		t.Skip("integration test: KUBERNIX_BIN_DIR is not set (`make test` sets it after building the binaries)")
	}
	return binDir
}

// killSupervisor SIGKILLs the cluster's supervisor, as a crash would, and
// waits until it is gone.
func (e *env) killSupervisor(t *testing.T) {
	t.Helper()
	sup := readPid(t, filepath.Join(e.stateDir, "run", "supervisor", "kubernix", "pid"))
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "supervisor gone", func() error {
		if syscall.Kill(sup, 0) == nil {
			return fmt.Errorf("pid %d alive", sup)
		}
		return nil
	})
}

// upRefused runs up with args, which must be refused: exit 2, its output
// holding each of want, and nothing left (checkRefusedLeftNothing). An up
// wrongly accepted is taken down again at cleanup.
func (e *env) upRefused(ctx context.Context, t *testing.T, args []string, want ...string) {
	t.Helper()
	before := dirList(t, e.stateDir)
	out, code := e.kubernix(ctx, "up", args...)
	if code == 0 && !slices.Contains(args, "--dry-run") {
		t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	}
	if code != 2 {
		t.Errorf("up %s: exit %d, want 2; output:\n%s", strings.Join(args, " "), code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("up %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	e.checkRefusedLeftNothing(t, before)
}

// checkRefusedLeftNothing checks, after an up that was refused, that the
// host holds nothing of the cluster's single node and that the state dir
// still holds just before (dirList).
func (e *env) checkRefusedLeftNothing(t *testing.T, before []string) {
	t.Helper()
	if left := e.leftovers([]string{e.name + "-node-0"}, false); len(left) > 0 {
		t.Errorf("refused up left:\n%s", strings.Join(left, "\n"))
	}
	if after := dirList(t, e.stateDir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("refused up changed the state dir: %q, then %q", before, after)
	}
}
