package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestForwardingOnlyForTheCluster proves issue 23 item 1: with forwarding
// off before, a running cluster does not turn the host into a router.
// Two network namespaces on two unrelated veth pairs to the host, whose
// default routes go via the host, cannot reach each other before `up`,
// while a 2-node cluster runs (whose pods reach each other across the
// nodes and a Service, and the host its pods) and after `down`; rules
// another program adds for its own forwarding (as Docker does) work
// meanwhile; and `down` puts ip_forward, the FORWARD policy and the
// nftables tables back.
func TestForwardingOnlyForTheCluster(t *testing.T) {
	hostAlone(t)
	e := newEnv(t, "e2e-fwd", "10.241.0.0/16", "--nodes", "2", leanAddons)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	pair := newRoutedHost(t, "0")
	pair.mustNotForward(t, "before up")
	tablesBefore := nftTables(t)
	e.downOnCleanup()

	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	wantForwarding(t, "with the cluster up", "1", "DROP")
	pair.mustNotForward(t, "while the cluster runs")
	t.Run("the cluster's own traffic flows", func(t *testing.T) { checkClusterTraffic(ctx, t, e) })
	t.Run("another program's forwarding rules work", func(t *testing.T) {
		rules := [][]string{
			{"-s", pair.cidr[0], "-d", pair.cidr[1], "-j", "ACCEPT"},
			{"-s", pair.cidr[1], "-d", pair.cidr[0], "-j", "ACCEPT"},
		}
		for _, r := range rules {
			run(t, append([]string{"iptables", "-I", "FORWARD"}, r...)...)
			t.Cleanup(func() { _ = exec.Command("iptables", append([]string{"-D", "FORWARD"}, r...)...).Run() })
		}
		pair.mustForward(t, "with accept rules of its own")
		for _, r := range rules {
			run(t, append([]string{"iptables", "-D", "FORWARD"}, r...)...)
		}
		pair.mustNotForward(t, "after those rules went")
	})

	e.mustKubernix(ctx, "down")
	pair.mustNotForward(t, "after down")
	wantForwarding(t, "after down", "0", "ACCEPT")
	// The filter table the policy may have made goes with the policy.
	if after := nftTables(t); after != tablesBefore {
		t.Errorf("after down, the nftables tables are\n%s\nwant those before up:\n%s", after, tablesBefore)
	}
}

// TestForwardingAlreadyOn: when the host forwarded before any cluster
// (ip_forward=1, FORWARD policy ACCEPT), a cluster leaves that as it is:
// the two namespaces of TestForwardingOnlyForTheCluster reach each other
// before, during and after, and the policy stays ACCEPT. Its cluster runs
// with --network-policy=false, which up and status must say (issue 26):
// no netpol-agent runs.
func TestForwardingAlreadyOn(t *testing.T) {
	hostAlone(t)
	e := newEnv(t, "e2e-fwd-on", "10.242.0.0/16", "--network-policy=false", leanAddons)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pair := newRoutedHost(t, "1")
	pair.mustForward(t, "before up")
	e.downOnCleanup()

	up := e.mustKubernix(ctx, "up", "--detach")
	t.Logf("up:\n%s", up)
	wantForwarding(t, "with the cluster up", "1", "ACCEPT")
	pair.mustForward(t, "while the cluster runs")
	if !strings.Contains(up, "NetworkPolicies are accepted but not enforced") {
		t.Errorf("up with --network-policy=false did not say that policies are not enforced:\n%s", up)
	}
	if status := e.mustKubernix(ctx, "status"); !strings.Contains(status, "network policies: off") || strings.Contains(status, "netpol-agent") {
		t.Errorf("status of a cluster with --network-policy=false, want 'network policies: off' and no netpol-agent:\n%s", status)
	}

	e.mustKubernix(ctx, "down")
	pair.mustForward(t, "after down")
	wantForwarding(t, "after down", "1", "ACCEPT")
}

// TestSysctlsChangedMeanwhileStay proves issue 23 item 4: the last down
// restores a host setting only while it still holds the value the cluster
// gave it. The host's kernel.panic, vm.overcommit_memory and ip_forward
// are 0 before up; the kubelet sets the first two (10 and 1) and up the
// third (1); the test sets kernel.panic to 5 while the cluster runs, as
// another program would. After down, kernel.panic is still 5 (and down
// says so), the others are the host's again, and so is the FORWARD policy.
func TestSysctlsChangedMeanwhileStay(t *testing.T) {
	hostAlone(t)
	e := newEnv(t, "e2e-sysctl", "10.243.0.0/16", leanAddons)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	host := map[string]string{"kernel.panic": "0", "vm.overcommit_memory": "0", "net.ipv4.ip_forward": "0"}
	for k, v := range host {
		setSysctl(t, k, v) // restored at cleanup
	}
	setForwardPolicy(t, "ACCEPT")
	e.downOnCleanup()

	t.Logf("up:\n%s", e.mustKubernix(ctx, "up", "--detach"))
	for k, want := range map[string]string{"kernel.panic": "10", "vm.overcommit_memory": "1", "net.ipv4.ip_forward": "1"} {
		if got := readSysctl(t, k); got != want {
			t.Fatalf("with the cluster up, %s=%s, want the cluster's %s", k, got, want)
		}
	}
	writeSysctl(t, "kernel.panic", "5")

	e.mustKubernix(ctx, "down")
	if got := readSysctl(t, "kernel.panic"); got != "5" {
		t.Errorf("after down, kernel.panic=%s, want 5, the value set while the cluster ran", got)
	}
	// The supervisor brought the cluster down.
	supervisorLog := filepath.Join(e.stateDir, "logs", "supervisor", "supervisor.log")
	if b, err := os.ReadFile(supervisorLog); err != nil || !strings.Contains(grepLines(string(b), "left as it is"), "kernel.panic") {
		t.Errorf("the log of down, %s, does not say it left kernel.panic (%v):\n%s", supervisorLog, err, b)
	}
	if got := readSysctl(t, "vm.overcommit_memory"); got != "0" {
		t.Errorf("after down, vm.overcommit_memory=%s, want the host's 0", got)
	}
	wantForwarding(t, "after down", "0", "ACCEPT")
}

// checkClusterTraffic deploys netexec on every node of e's cluster (two
// or more) and checks the paths through the host: a pod reaches a pod on
// another node and the Service's ClusterIP, and the host reaches a pod
// and the NodePort.
func checkClusterTraffic(ctx context.Context, t *testing.T, e *env) {
	e.apply(ctx, netexecManifest(2, true))
	e.mustKubectl(ctx, "wait", "--for=condition=Available", "deployment/netexec", "--timeout=180s")
	type pod struct{ name, ip, node string }
	var pods []pod
	out := e.mustKubectl(ctx, "get", "pods", "-l", "app=netexec", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName}{"\n"}{end}`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			pods = append(pods, pod{f[0], f[1], f[2]})
		}
	}
	if len(pods) != 2 || pods[0].node == pods[1].node {
		t.Fatalf("want one netexec pod on each of two nodes, got:\n%s", out)
	}
	get := func(from pod, ip, port string) (string, error) {
		body, err := e.kubectl(ctx, "exec", from.name, "--", "sh", "-c",
			`printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 3 `+ip+` `+port+` | tail -n 1`)
		return strings.TrimSpace(body), err
	}
	eventually(t, 20*time.Second, "pod to pod across nodes", func() error {
		body, err := get(pods[0], pods[1].ip, "8080")
		if err == nil && body != pods[1].name {
			return fmt.Errorf("got %q from %s, want %s", body, pods[1].ip, pods[1].name)
		}
		return err
	})
	clusterIP := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.clusterIP}"))
	eventually(t, 20*time.Second, "pod to the Service", func() error {
		body, err := get(pods[1], clusterIP, "8080")
		if err == nil && !strings.HasPrefix(body, "netexec-") {
			return fmt.Errorf("got %q from %s", body, clusterIP)
		}
		return err
	})
	if err := dial(netns.None(), net.JoinHostPort(pods[0].ip, "8080")); err != nil {
		t.Errorf("the host cannot reach the pod at %s: %v", pods[0].ip, err)
	}
	nodeIP := strings.TrimSpace(e.mustKubectl(ctx, "get", "node", pods[1].node, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`))
	nodePort := strings.TrimSpace(e.mustKubectl(ctx, "get", "svc", "netexec", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	(&service{e: e, nodeIP: nodeIP, nodePort: nodePort}).mustAnswer(ctx, t, "the host")
}

// newRoutedHost sets net.ipv4.ip_forward to ipForward and the FORWARD
// policy to ACCEPT for the test (the host's come back when t ends), and
// makes a routedPair.
func newRoutedHost(t *testing.T, ipForward string) *routedPair {
	t.Helper()
	setSysctl(t, "net.ipv4.ip_forward", ipForward)
	setForwardPolicy(t, "ACCEPT")
	return newRoutedPair(t)
}

// wantForwarding fails t unless net.ipv4.ip_forward is ipForward and the
// FORWARD policy is policy.
func wantForwarding(t *testing.T, when, ipForward, policy string) {
	t.Helper()
	if got := readSysctl(t, "net.ipv4.ip_forward"); got != ipForward {
		t.Errorf("%s, net.ipv4.ip_forward=%s, want %s", when, got, ipForward)
	}
	if got := forwardPolicy(t); got != policy {
		t.Errorf("%s, the FORWARD policy is %s, want %s", when, got, policy)
	}
}

// routedPair is two network namespaces the test makes, each on a veth
// pair of its own to the host with a default route via the host: ns 0 in
// 192.168.77.0/24, ns 1 in 172.31.77.0/24 (host .1, namespace .2). Each
// namespace serves TCP on its address; they reach each other only when
// the host forwards between the two veths.
type routedPair struct {
	name    []string // network namespaces
	hostEnd []string // the host's end of each veth pair
	ns      []netns.NsHandle
	cidr    []string
	addr    []string // host:port each namespace listens on
}

// newRoutedPair makes the pair and checks that each namespace reaches
// the host, so a failed dial between them is the host's forwarding, not
// a broken path. It is removed when t ends.
func newRoutedPair(t *testing.T) *routedPair {
	t.Helper()
	removeStaleRoutedPairs(t)
	p := &routedPair{cidr: []string{"192.168.77.0/24", "172.31.77.0/24"}}
	t.Cleanup(p.remove)
	for i, prefix := range []string{"192.168.77.", "172.31.77."} {
		name := fmt.Sprintf("kxfw-%d-%d", os.Getpid(), i)
		hostEnd, nsEnd := routedPairHostEnd(os.Getpid(), i), fmt.Sprintf("kxfwn%d", i)
		run(t, "ip", "netns", "add", name)
		p.name = append(p.name, name)
		p.hostEnd = append(p.hostEnd, hostEnd)
		run(t, "ip", "link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd, "netns", name)
		run(t, "ip", "addr", "add", prefix+"1/24", "dev", hostEnd)
		run(t, "ip", "link", "set", hostEnd, "up")
		for _, args := range [][]string{
			{"addr", "add", prefix + "2/24", "dev", nsEnd},
			{"link", "set", nsEnd, "up"},
			{"link", "set", "lo", "up"},
			{"route", "add", "default", "via", prefix + "1"},
		} {
			run(t, append([]string{"ip", "-n", name}, args...)...)
		}
		ns, err := netns.GetFromName(name)
		if err != nil {
			t.Fatal(err)
		}
		p.ns = append(p.ns, ns)
		p.addr = append(p.addr, serveIn(t, ns, prefix+"2:7777"))
		gateway := serveIn(t, netns.None(), prefix+"1:0")
		if err := dial(ns, gateway); err != nil {
			t.Fatalf("namespace %s cannot reach the host at %s: %v", name, gateway, err)
		}
	}
	return p
}

// forwards returns nil when each namespace reaches the other, else what
// failed.
func (p *routedPair) forwards() error {
	var errs []string
	for i := range 2 {
		if err := dial(p.ns[i], p.addr[1-i]); err != nil {
			errs = append(errs, fmt.Sprintf("%s -> %s: %v", p.cidr[i], p.addr[1-i], err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// mustForward fails t unless the namespaces reach each other.
func (p *routedPair) mustForward(t *testing.T, when string) {
	t.Helper()
	if err := p.forwards(); err != nil {
		t.Errorf("%s, the host does not forward between the test's namespaces: %v", when, err)
	}
}

// mustNotForward fails t if either namespace reaches the other.
func (p *routedPair) mustNotForward(t *testing.T, when string) {
	t.Helper()
	for i := range 2 {
		if err := dial(p.ns[i], p.addr[1-i]); err == nil {
			t.Errorf("%s, the host forwards between unrelated interfaces: %s reached %s", when, p.cidr[i], p.addr[1-i])
		}
	}
}

func (p *routedPair) remove() {
	for _, ns := range p.ns {
		ns.Close()
	}
	for _, link := range p.hostEnd {
		_ = exec.Command("ip", "link", "del", link).Run()
	}
	for _, name := range p.name {
		_ = exec.Command("ip", "netns", "del", name).Run()
	}
}

// routedPairHostEnd names the host's end of veth pair i of the test
// process pid: kxf<pid>h<i>, at most 12 of the 15 bytes a link name has.
func routedPairHostEnd(pid, i int) string { return fmt.Sprintf("kxf%dh%d", pid, i) }

// staleRoutedPair matches what a routedPair of a test process leaves when
// that process is killed before its cleanup: the netns kxfw-<pid>-<i>
// and the host end kxf<pid>h<i>, or kxfwh<i> of the test before that
// name carried the pid.
var (
	staleRoutedNetns = regexp.MustCompile(`^kxfw-([0-9]+)-[0-9]$`)
	staleRoutedLink  = regexp.MustCompile(`^kxf(?:w|([0-9]+))h[0-9]$`)
)

// removeStaleRoutedPairs removes the namespaces and links of routed
// pairs whose test process is gone (a run killed before its cleanup), as
// their addresses and routes would make this run's pair fail.
func removeStaleRoutedPairs(t *testing.T) {
	t.Helper()
	gone := func(pid string) bool {
		n, err := strconv.Atoi(pid)
		return pid == "" || err != nil || n != os.Getpid() && errors.Is(syscall.Kill(n, 0), syscall.ESRCH)
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if m := staleRoutedLink.FindStringSubmatch(l.Attrs().Name); m != nil && gone(m[1]) {
			t.Logf("removing link %s of a test run that is gone", l.Attrs().Name)
			if err := netlink.LinkDel(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if m := staleRoutedNetns.FindStringSubmatch(e.Name()); m != nil && gone(m[1]) {
			t.Logf("removing network namespace %s of a test run that is gone", e.Name())
			run(t, "ip", "netns", "del", e.Name())
		}
	}
}

// serveIn listens on TCP addr in network namespace ns (the test's own
// with netns.None()), accepting and closing connections until t ends, and
// returns the address it listens on.
func serveIn(t *testing.T, ns netns.NsHandle, addr string) string {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		if ns.IsOpen() {
			// The thread stays locked: it exits with this goroutine,
			// taking the namespace with it. The socket stays in ns.
			runtime.LockOSThread()
			if err := netns.Set(ns); err != nil {
				done <- result{err: err}
				return
			}
		}
		l, err := net.Listen("tcp", addr)
		done <- result{l, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listen on %s: %v", addr, r.err)
	}
	t.Cleanup(func() { r.l.Close() })
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return r.l.Addr().String()
}

// forwardPolicy is the policy of the host's iptables filter FORWARD chain.
func forwardPolicy(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables", "-S", "FORWARD").Output()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "-P" && f[1] == "FORWARD" {
			return f[2]
		}
	}
	t.Fatalf("iptables -S FORWARD printed no policy:\n%s", out)
	return ""
}

// setForwardPolicy sets the FORWARD policy for the test, unless it is
// already policy (a host without a filter table then gets none), and puts
// the host's back when t ends.
func setForwardPolicy(t *testing.T, policy string) {
	t.Helper()
	old := forwardPolicy(t)
	if old == policy {
		return
	}
	run(t, "iptables", "-P", "FORWARD", policy)
	t.Cleanup(func() { _ = exec.Command("iptables", "-P", "FORWARD", old).Run() })
}

// nftTables lists the host's nftables tables, as `nft list tables` does.
func nftTables(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	return string(out)
}

// readSysctl reads a sysctl by its dotted name.
func readSysctl(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// writeSysctl sets a sysctl as another program would; setSysctl, called
// before, puts the host's value back.
func writeSysctl(t *testing.T, name, value string) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/"+strings.ReplaceAll(name, ".", "/"), []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
}
