package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// foreignSysctls are set before the clusters start: the values a host
// had, which must come back when its last cluster goes.
var foreignSysctls = map[string]string{"kernel.panic": "0", "kernel.panic_on_oops": "0", "vm.overcommit_memory": "0"}

// TestHostSafety proves that clusters take only what they made and open
// nothing to the outside (issue 11, items 1 and 2). Around two single-node
// clusters, A and B, side by side, it plants what belongs to others: a
// tmpfs at A's state dir (the user's disk) and one beside it, a directory
// bind-mounted at A's images folder, an iptables chain KUBE-TEST, an
// nftables table "ip kube-proxy" (another kube-proxy's), and the host's
// own sysctl values.
// Then: A serves a Service from the host while B goes up and down (and B
// while A goes down); a cluster with --executor process is refused beside
// the foreign kube-proxy table; a neighbour network namespace that routes
// the cluster range via this host reaches none of A's listeners while the
// host does; everything foreign survives both downs, and the sysctls are
// the host's again after the last one.
func TestHostSafety(t *testing.T) {
	hostAlone(t)
	a := newEnv(t, "e2e-safe-a", "10.211.0.0/16")
	b := newEnv(t, "e2e-safe-b", "10.212.0.0/16")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	plantForeign(t, a)
	for k, v := range foreignSysctls {
		setSysctl(t, k, v)
	}
	for _, e := range []*env{a, b} { // before what plantForeign undoes
		t.Cleanup(func() {
			if out, code := e.kubernix(context.Background(), "down"); code != 0 {
				t.Logf("cleanup down of %s exited %d:\n%s", e.name, code, out)
			}
		})
	}

	t.Logf("up A:\n%s", a.mustKubernix(ctx, "up", "--detach"))
	// The images folder is the user's to mount once the cluster made it.
	imagesMount := bindMount(t, a, filepath.Join(a.stateDir, "images"))
	svcA := a.serve(ctx, "e2e-safe-a-node-0")

	t.Run("process executor refused beside another kube-proxy's table", func(t *testing.T) {
		c := newEnv(t, "e2e-safe-c", "10.213.0.0/16", "--executor", "process")
		out, code := c.kubernix(ctx, "up", "--detach")
		if code == 0 {
			defer c.kubernix(context.Background(), "down")
		}
		if code != 2 || !strings.Contains(out, "ip kube-proxy") || !strings.Contains(out, "--executor") {
			t.Errorf("up --executor process: exit %d, output:\n%s\nwant exit 2 naming the table and the flag", code, out)
		}
		if left := c.leftovers([]string{"e2e-safe-c-node-0"}, false); len(left) > 0 {
			t.Errorf("refused up left: %v", left)
		}
	})

	t.Run("a neighbour reaches nothing, the host everything", func(t *testing.T) {
		n := newNeighbour(t, a.cidr, "")
		defer n.remove()
		targets := map[string]string{
			"apiserver": svcA.bridgeIP + ":6443",
			"etcd":      svcA.bridgeIP + ":2379",
			"kubelet":   svcA.nodeIP + ":10250",
			"NodePort":  svcA.nodeIP + ":" + svcA.nodePort,
			"pod IP":    svcA.podIP + ":8080",
		}
		for what, addr := range targets {
			if err := dial(netns.None(), addr); err != nil {
				t.Errorf("the host cannot reach the %s at %s: %v", what, addr, err)
			}
			if err := dial(n.ns, addr); err == nil {
				t.Errorf("the neighbour reached the %s at %s", what, addr)
			}
		}
	})

	t.Logf("up B:\n%s", b.mustKubernix(ctx, "up", "--detach"))
	svcB := b.serve(ctx, "e2e-safe-b-node-0")
	svcA.mustAnswer(ctx, t, "A, with B up")
	b.mustKubernix(ctx, "down")
	svcA.mustAnswer(ctx, t, "A, after B went down")

	t.Logf("up B again:\n%s", b.mustKubernix(ctx, "up", "--detach"))
	svcB.mustAnswer(ctx, t, "B, up again")
	a.mustKubernix(ctx, "down")
	if left := a.leftovers([]string{"e2e-safe-a-node-0"}, false); len(left) > 0 {
		t.Errorf("down of A left behind:\n%s", strings.Join(left, "\n"))
	}
	svcB.mustAnswer(ctx, t, "B, after A went down")
	checkSysctls(t, false)
	b.mustKubernix(ctx, "down")
	checkSysctls(t, true)

	t.Run("what others made survives", func(t *testing.T) {
		if !isMountPoint(a.stateDir) {
			t.Errorf("the tmpfs at the state dir %s was unmounted", a.stateDir)
		} else if _, err := os.Stat(filepath.Join(a.stateDir, "pki", "ca.crt")); err != nil {
			t.Errorf("the cluster's state is not on the tmpfs at the state dir: %v", err)
		}
		if _, err := os.Stat(filepath.Join(imagesMount, "user-file")); err != nil {
			t.Errorf("the mount at the images folder was removed: %v", err)
		}
		if sibling := a.stateDir + "-sibling"; !isMountPoint(sibling) {
			t.Errorf("the tmpfs beside the state dir, at %s, was unmounted", sibling)
		}
		if out, err := exec.Command("iptables", "-S", "KUBE-TEST").CombinedOutput(); err != nil {
			t.Errorf("the foreign chain KUBE-TEST is gone: %v: %s", err, out)
		}
		if out, err := exec.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput(); err != nil {
			t.Errorf("the foreign table ip kube-proxy is gone: %v: %s", err, out)
		}
	})
}

// TestCleanupFollowsRecord kills the supervisor of a 3-node cluster and
// starts the same cluster with 1 node: the leftovers of nodes 1 and 2 go
// too, as the record of the killed run says they exist.
func TestCleanupFollowsRecord(t *testing.T) {
	e := newEnv(t, "e2e-rec", "10.214.0.0/16")
	e.parallelAt(weightLong)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t.Cleanup(func() { e.kubernix(context.Background(), "down") })
	nodes := []string{"e2e-rec-node-0", "e2e-rec-node-1", "e2e-rec-node-2"}

	e.mustKubernix(ctx, "up", "--detach", "--nodes", "3")
	pid := readPid(t, filepath.Join(e.stateDir, "run", "supervisor", "kubernix", "pid"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	e.mustKubernix(ctx, "up", "--detach", "--nodes", "1")
	if left := e.leftovers(nodes[1:], false); len(left) > 0 {
		// Everything of the cluster still runs: keep only nodes 1 and 2.
		var stale []string
		for _, l := range left {
			if strings.Contains(l, nodes[1]) || strings.Contains(l, nodes[2]) {
				stale = append(stale, l)
			}
		}
		if len(stale) > 0 {
			t.Errorf("after up --nodes 1, the killed run's nodes 1 and 2 remain:\n%s", strings.Join(stale, "\n"))
		}
	}
	e.mustKubernix(ctx, "down")
	if left := e.leftovers(nodes, false); len(left) > 0 {
		t.Errorf("down left behind:\n%s", strings.Join(left, "\n"))
	}
}

// plantForeign makes what other software owns, and removes it at the end:
// a tmpfs at e's state dir and one beside it (same parent), a chain
// KUBE-TEST in the filter table, and a table ip kube-proxy with a chain.
func plantForeign(t *testing.T, e *env) {
	t.Helper()
	if err := unix.Mount("tmpfs", e.stateDir, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", e.stateDir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(e.stateDir, unix.MNT_DETACH) })
	e.foreign(e.stateDir)
	// A file system beside the state dir, under the same parent.
	sibling := e.stateDir + "-sibling"
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sibling, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", sibling, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sibling, unix.MNT_DETACH); _ = os.Remove(sibling) })
	e.foreign(sibling) // its path starts with the state dir's
	run(t, "iptables", "-N", "KUBE-TEST")
	t.Cleanup(func() { _ = exec.Command("iptables", "-X", "KUBE-TEST").Run() })
	run(t, "nft", "add table ip kube-proxy; add chain ip kube-proxy services")
	t.Cleanup(func() { _ = exec.Command("nft", "delete", "table", "ip", "kube-proxy").Run() })
}

// bindMount bind-mounts a new directory holding user-file at dir, under
// e's state dir, as a user would mount their image folder, and returns dir.
func bindMount(t *testing.T, e *env, dir string) string {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "user-file"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", src, dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	e.foreign(dir)
	return dir
}

// foreign marks a mount point under the state dir as not the cluster's.
func (e *env) foreign(mountPoint string) {
	if e.foreignMounts == nil {
		e.foreignMounts = map[string]bool{}
	}
	e.foreignMounts[mountPoint] = true
}

// isMountPoint reports whether dir is on another file system than its parent.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	return unix.Stat(dir, &st) == nil && unix.Stat(filepath.Dir(dir), &parent) == nil && st.Dev != parent.Dev
}

func setSysctl(t *testing.T, name, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(path, old, 0o644) })
}

// checkSysctls reports sysctls that are (restored) or are not (!restored)
// the values foreignSysctls set: while a cluster runs, its kubelet's
// values hold (kernel.panic=10, ...).
func checkSysctls(t *testing.T, restored bool) {
	t.Helper()
	for k, want := range foreignSysctls {
		got := readSysctl(t, k)
		switch {
		case restored && got != want:
			t.Errorf("after the last cluster went, %s=%s, want the host's %s", k, got, want)
		case !restored && got == want:
			t.Errorf("with a cluster running, %s=%s: its kubelet's value was restored under it", k, got)
		}
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("pid %d exits", pid), func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return fmt.Errorf("still alive")
		}
		return nil
	})
}

// service is a netexec Service of one cluster and where it listens.
type service struct {
	e                                 *env
	bridgeIP, nodeIP, nodePort, podIP string
}

// serve deploys netexec with a NodePort Service and waits until the host
// gets an answer through the NodePort.
func (e *env) serve(ctx context.Context, node string) *service {
	e.t.Helper()
	e.apply(ctx, netexecManifest(1, false))
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=120s")
	s := &service{
		e:        e,
		bridgeIP: strings.TrimSuffix(e.cidr, "0.0/16") + "0.1",
		nodeIP:   strings.TrimSpace(e.mustKubectl(ctx, "get", "node", node, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)),
		nodePort: strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.ports[0].nodePort}")),
		podIP:    strings.TrimSpace(e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", "jsonpath={.items[0].status.podIP}")),
	}
	s.mustAnswer(ctx, e.t, e.name)
	return s
}

// mustAnswer fails t unless the NodePort answers from the host.
func (s *service) mustAnswer(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	eventually(t, 30*time.Second, what+": NodePort answers", func() error {
		body, err := httpGet(ctx, "http://"+net.JoinHostPort(s.nodeIP, s.nodePort)+"/hostname")
		if err == nil && !strings.HasPrefix(body, "netexec-") {
			return fmt.Errorf("answer %q is not a netexec pod's hostname", body)
		}
		return err
	})
}

// neighbour is a network namespace the test makes as a LAN neighbour
// would be: a veth to the host (172.31.254.2/30, the host 172.31.254.1)
// and a route for the cluster's range via the host. Its namespace is
// /run/netns/kxnb-<pid> (neighbourNetnsPrefix), which the leak check of
// every cluster (env.leftovers) knows as the tests' own.
type neighbour struct {
	t      *testing.T
	name   string
	ns     netns.NsHandle
	remove func() // removes it and lets the next test make one; safe to call twice
}

// neighbourNetnsPrefix starts the name of a neighbour's namespace.
const neighbourNetnsPrefix = "kxnb-"

// neighbours makes the tests that run in parallel take turns with their
// neighbour: each uses the same link names and addresses.
var neighbours sync.Mutex

// newNeighbour makes the neighbour of a cluster on cidr (and, unless
// cidr6 is "", on the IPv6 range cidr6: the veth then also has
// neighbourHost6 and neighbourPeer6, and a route for cidr6 via the
// host), once no other test has one; it is removed with remove or at
// the end of t.
func newNeighbour(t *testing.T, cidr, cidr6 string) *neighbour {
	t.Helper()
	neighbours.Lock()
	n := &neighbour{t: t, name: neighbourNetnsPrefix + strconv.Itoa(os.Getpid()), ns: netns.None()}
	n.remove = sync.OnceFunc(func() {
		n.ns.Close()
		_ = exec.Command("ip", "link", "del", "kxnbh0").Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
		neighbours.Unlock()
	})
	t.Cleanup(n.remove)
	run(t, "ip", "netns", "add", n.name)
	run(t, "ip", "link", "add", "kxnbh0", "type", "veth", "peer", "name", "kxnbn0", "netns", n.name)
	run(t, "ip", "addr", "add", "172.31.254.1/30", "dev", "kxnbh0")
	run(t, "ip", "link", "set", "kxnbh0", "up")
	for _, args := range [][]string{
		{"addr", "add", "172.31.254.2/30", "dev", "kxnbn0"},
		{"link", "set", "kxnbn0", "up"},
		{"link", "set", "lo", "up"},
		{"route", "add", cidr, "via", "172.31.254.1"},
	} {
		run(t, append([]string{"ip", "-n", n.name}, args...)...)
	}
	if cidr6 != "" {
		run(t, "ip", "addr", "add", neighbourHost6+"/64", "dev", "kxnbh0", "nodad")
		run(t, "ip", "-n", n.name, "addr", "add", neighbourPeer6+"/64", "dev", "kxnbn0", "nodad")
		run(t, "ip", "-n", n.name, "route", "add", cidr6, "via", neighbourHost6)
	}
	ns, err := netns.GetFromName(n.name)
	if err != nil {
		t.Fatal(err)
	}
	n.ns = ns
	if cidr6 != "" {
		n.control(neighbourHost6)
	}
	n.control("172.31.254.1")
	return n
}

// The IPv6 addresses of a neighbour's veth (newNeighbour with a cidr6):
// the host's end and the neighbour's.
const (
	neighbourHost6 = "fdff:e2e:254::1"
	neighbourPeer6 = "fdff:e2e:254::2"
)

// control checks that the neighbour reaches the host at its address
// host, so that a refused cluster address is the guard's doing, not a
// broken path.
func (n *neighbour) control(host string) {
	n.t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		n.t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	if err := dial(n.ns, l.Addr().String()); err != nil {
		n.t.Fatalf("the neighbour cannot reach the host at %s: %v", l.Addr(), err)
	}
}

// dial opens a TCP connection to addr from network namespace ns (the
// test's own with netns.None()), giving up after 2 s.
func dial(ns netns.NsHandle, addr string) error {
	errc := make(chan error, 1)
	go func() {
		if ns.IsOpen() {
			// The thread stays locked: it exits with this goroutine,
			// taking the namespace with it, and never runs another.
			runtime.LockOSThread()
			if err := netns.Set(ns); err != nil {
				errc <- err
				return
			}
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
		}
		errc <- err
	}()
	return <-errc
}

// TestDownLeavesNothing brings clusters of 1 and 3 nodes up and down
// e2eCycles times each and checks, at once after each
// `kubernix down` returns, that nothing of the cluster is left: processes
// (shims and the supervisor included), mounts, network namespaces, links,
// routes, chains, nftables tables and cgroups. The 3-node cluster runs a
// Deployment spread over its nodes from the first up on, so every later
// cycle brings its pods back up (on a re-up the kubelet starts the pods
// bound to its Node) and down again, as TestMultiNode's cycles did.
func TestDownLeavesNothing(t *testing.T) {
	requireIntegration(t, "start a cluster")
	// Both sizes beside the package's other parallel tests: each cluster
	// is its own (parallel), and the leak check looks for its own names.
	t.Parallel()
	cycles := e2eCycles()
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			e := newEnv(t, fmt.Sprintf("e2e-leak%d", nodes), fmt.Sprintf("10.%d.0.0/16", 220+nodes), "--nodes", strconv.Itoa(nodes))
			e.parallelAt(weightLongest) // the two sizes side by side, before the others
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			t.Cleanup(func() { e.kubernix(context.Background(), "down") })
			var names []string
			for i := range nodes {
				names = append(names, fmt.Sprintf("%s-node-%d", e.name, i))
			}
			for cycle := range cycles {
				start := time.Now()
				e.mustKubernix(ctx, "up", "--detach")
				up := time.Since(start)
				if nodes > 1 {
					if cycle == 0 {
						e.apply(ctx, netexecManifest(2*nodes, true))
					}
					e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
				}
				available := time.Since(start)
				e.mustKubernix(ctx, "down")
				down := time.Since(start)
				if left := e.leftovers(names, false); len(left) > 0 {
					t.Fatalf("cycle %d: right after down:\n%s", cycle+1, strings.Join(left, "\n"))
				}
				t.Logf("cycle %d: up %s, netexec Available %s, down %s, leak check %s (from the cycle's start)", cycle+1,
					up.Round(time.Second/10), available.Round(time.Second/10), down.Round(time.Second/10), time.Since(start).Round(time.Second/10))
			}
		})
	}
}

// e2eCycles is how many up and down cycles TestDownLeavesNothing runs of
// each size: KUBERNIX_E2E_CYCLES, or 3 when it is unset or not a positive
// number. Three cycles take the path of a first up and of a re-up from
// the state dir twice; `make soak` runs ten, for the leaks that show only
// now and then (a cycle under load takes 45 s for one node, 65 s for
// three, so ten in every `make test` cost more than any other test).
func e2eCycles() int {
	if n, err := strconv.Atoi(os.Getenv("KUBERNIX_E2E_CYCLES")); err == nil && n > 0 {
		return n
	}
	return 3
}
