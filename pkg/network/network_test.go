package network

// Integration tests: they need root and change the host's network, but only
// things they create themselves: links named after a test cluster (or
// "ntc<pid>"), routes inside 10.254.0.0/16 and chains named after the test
// cluster. Traffic only goes between the host and a network namespace the
// test made, over the test's own bridge.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/sysctl"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// crashEnv makes the test binary a child that sets up a cluster network
// (named by the variable's value), attaches node 0 to the namespace of the
// pid in crashPidEnv, and then kills itself with SIGKILL.
const (
	crashEnv    = "KUBERNIX_NETTEST_CRASH_CLUSTER"
	crashPidEnv = "KUBERNIX_NETTEST_CRASH_PID"
)

// TestMain runs the tests and fails the package if they left the host's
// net.ipv4.ip_forward other than they found it: Setup turns forwarding
// on and Teardown leaves it (the cluster package's ledger restores it),
// so each test that sets a network up puts it back (testCluster). Make
// unit once left a CI host forwarding after it.
func TestMain(m *testing.M) {
	if cluster := os.Getenv(crashEnv); cluster != "" {
		os.Exit(crashChild(cluster))
	}
	before, err := sysctl.Get(ipForward)
	code := m.Run()
	if after, _ := sysctl.Get(ipForward); err == nil && after != before {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left %s=%s; it was %s\n", ipForward, after, before)
		if err := sysctl.Set(ipForward, before); err != nil {
			fmt.Fprintf(os.Stderr, "restore %s: %v\n", ipForward, err)
		}
		code = 1
	}
	os.Exit(code)
}

func crashChild(cluster string) int {
	pid, err := strconv.Atoi(os.Getenv(crashPidEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 3
	}
	p := examplePlan(cluster)
	if err := Setup(p); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 3
	}
	if err := AttachNode(p, 0, pid); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 3
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// needRoot skips t unless it runs as root with the tools the test uses.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("integration test needs root: it creates bridges, veths, routes, iptables chains and network namespaces")
	}
	for _, tool := range append([]string{"iptables"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("integration test needs %s in PATH: %v", tool, err)
		}
	}
}

// testCluster returns a cluster name unique to this process and tag, and
// tears its network down when t ends (also after a failure).
func testCluster(t *testing.T, tag string) string {
	t.Helper()
	name := fmt.Sprintf("nettest-%d-%s", os.Getpid(), tag)
	// Setup turns forwarding on; it goes back after the teardown (the
	// cleanups run last first).
	if forwarding, err := sysctl.Get(ipForward); err == nil {
		t.Cleanup(func() {
			if err := sysctl.Set(ipForward, forwarding); err != nil {
				t.Errorf("restore %s=%s: %v", ipForward, forwarding, err)
			}
		})
	}
	t.Cleanup(func() {
		if err := Teardown(name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if left, err := Leftovers(name); err != nil || len(left) > 0 {
		t.Fatalf("cluster %s is not clean before the test: %q, %v", name, left, err)
	}
	return name
}

// startNetns starts `unshare --net sleep 300`, a process in a new network
// namespace, and returns its pid; it is killed by pid when t ends.
func startNetns(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd, err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err == nil && ns != self {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not enter a new network namespace: %v", pid, err)
		}
	}
}

// pingCmd is the ping command line: ping, or busybox's.
func pingCmd(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("ping"); err == nil {
		return []string{"ping"}
	}
	if _, err := exec.LookPath("busybox"); err == nil {
		return []string{"busybox", "ping"}
	}
	t.Skip("integration test needs ping (iputils or busybox)")
	return nil
}

// ping sends one echo request to ip, from the host or (pid > 0) from the
// network namespace of pid, with a few retries for links coming up.
func ping(t *testing.T, pid int, ip string) error {
	t.Helper()
	var args []string
	if pid > 0 {
		args = []string{"nsenter", "--target", strconv.Itoa(pid), "--net"}
	}
	args = append(append(args, pingCmd(t)...), "-c", "1", "-W", "1", ip)
	var err error
	for range 3 {
		var out []byte
		if out, err = exec.Command(args[0], args[1:]...).CombinedOutput(); err == nil {
			return nil
		}
		err = fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return err
}

// routeVia reports where the host routes ip: the route netlink.RouteGet
// returns, or the error (EHOSTUNREACH for an unreachable route).
func routeVia(t *testing.T, ip string) (netlink.Route, error) {
	t.Helper()
	rs, err := netlink.RouteGet(net.ParseIP(ip))
	if err != nil {
		return netlink.Route{}, err
	}
	if len(rs) == 0 {
		t.Fatalf("RouteGet(%s) returned no route and no error", ip)
	}
	return rs[0], nil
}

// wantUnreachable fails t unless the host refuses to route ip: neither the
// default route nor any device takes it.
func wantUnreachable(t *testing.T, ip string) {
	t.Helper()
	r, err := routeVia(t, ip)
	if err == nil {
		t.Errorf("route to %s: %s, want unreachable", ip, describeRoute(r, nil))
		return
	}
	if !errors.Is(err, unix.EHOSTUNREACH) && !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("route to %s: %v, want EHOSTUNREACH", ip, err)
	}
}

// wantVia fails t unless the host routes ip out of link index dev, via gw
// (gw "" for on-link).
func wantVia(t *testing.T, ip string, dev int, gw string) {
	t.Helper()
	r, err := routeVia(t, ip)
	if err != nil {
		t.Errorf("route to %s: %v, want via %q on link #%d", ip, err, gw, dev)
		return
	}
	gotGW := ""
	if r.Gw != nil {
		gotGW = r.Gw.String()
	}
	if r.LinkIndex != dev || gotGW != gw {
		t.Errorf("route to %s: %s, want via %q on link #%d", ip, describeRoute(r, nil), gw, dev)
	}
}

func wantLeftovers(t *testing.T, cluster string, want ...string) []string {
	t.Helper()
	left, err := Leftovers(cluster)
	if err != nil {
		t.Fatalf("Leftovers: %v", err)
	}
	for _, w := range want {
		if !slices.ContainsFunc(left, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("Leftovers %q lack %q", left, w)
		}
	}
	return left
}

func wantClean(t *testing.T, cluster string) {
	t.Helper()
	left, err := Leftovers(cluster)
	if err != nil || len(left) > 0 {
		t.Errorf("after Teardown, Leftovers = %q, %v; want none", left, err)
	}
}

func TestLifecycle(t *testing.T) {
	needRoot(t, "unshare", "nsenter")
	pingCmd(t)
	cluster := testCluster(t, "life")
	n := NamesFor(cluster)
	p := examplePlan(cluster)

	for i := range 2 {
		if err := Setup(p); err != nil {
			t.Fatalf("Setup #%d: %v", i+1, err)
		}
	}

	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	if br.Type() != "bridge" || br.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("bridge %s: type %s flags %v, want an up bridge", n.Bridge, br.Type(), br.Attrs().Flags)
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "10.254.0.1/24" {
		t.Errorf("bridge addresses = %v, %v; want just 10.254.0.1/24", addrs, err)
	}
	if v, err := sysctl.Get(ipForward); err != nil || v != "1" {
		t.Errorf("ip_forward = %q, %v; want 1", v, err)
	}

	bi := br.Attrs().Index
	wantVia(t, "10.254.128.7", bi, "10.254.0.2") // node 0's pods
	wantVia(t, "10.254.129.7", bi, "10.254.0.3") // node 1's pods
	wantUnreachable(t, "10.254.16.1")            // a service IP: kube-proxy has not written its rules
	wantVia(t, "10.254.0.2", bi, "")             // a node
	wantUnreachable(t, "10.254.130.7")           // local node's pods: no CNI bridge yet
	wantUnreachable(t, "10.254.5.5")             // unused part of the whole range
	wantUnreachable(t, "10.254.200.1")           // pod CIDR of no node
	for i := range 2 {
		if err := RouteServices(p); err != nil {
			t.Fatalf("RouteServices #%d: %v", i+1, err)
		}
	}
	wantVia(t, "10.254.16.1", bi, "10.254.0.2") // a service IP, via node 0
	wantVia(t, "10.254.32.1", bi, "10.254.0.2") // a LoadBalancer IP, via node 0

	ipt, err := newIPTables()
	if err != nil {
		t.Fatal(err)
	}
	nat, err := ipt.List("nat", n.NATChain)
	if err != nil {
		t.Fatalf("list nat chain: %v", err)
	}
	for _, want := range []string{
		"-A " + n.NATChain + " -d 10.254.0.0/16 -j RETURN",
		"-A " + n.NATChain + " -s 10.254.128.0/17 -j MASQUERADE",
	} {
		if !slices.Contains(nat, want) {
			t.Errorf("nat chain %q lacks %q", nat, want)
		}
	}
	fwd, err := ipt.List("filter", n.ForwardChain)
	if err != nil || !slices.Contains(fwd, "-A "+n.ForwardChain+" -i "+n.Bridge+" -j ACCEPT") {
		t.Errorf("forward chain = %q, %v; want ACCEPT -i %s", fwd, err, n.Bridge)
	}
	for _, c := range n.chains() {
		jumps, err := jumpsTo(ipt, c)
		if err != nil || len(jumps) != 1 {
			t.Errorf("jumps from %s/%s to %s = %q, %v; want exactly one after two Setups", c.table, c.hook, c.chain, jumps, err)
		}
	}

	// A node in its own network namespace.
	pid := startNetns(t)
	for i := range 2 { // the second run replaces the first veth
		if err := AttachNode(p, 0, pid); err != nil {
			t.Fatalf("AttachNode #%d: %v", i+1, err)
		}
	}
	if err := ping(t, pid, "10.254.0.1"); err != nil {
		t.Errorf("node → bridge: %v", err)
	}
	if err := ping(t, 0, "10.254.0.2"); err != nil {
		t.Errorf("host → node: %v", err)
	}
	wantLeftovers(t, cluster, "link "+n.Bridge, "link "+n.HostVeth(0), "unreachable 10.254.0.0/16",
		"iptables chain nat/"+n.NATChain, "iptables chain filter/"+n.ForwardChain,
		"iptables rule nat/POSTROUTING", "iptables rule filter/FORWARD")

	if err := AttachNode(p, 2, pid); err == nil {
		t.Errorf("AttachNode of a local node succeeded")
	}
	if err := AttachNode(p, 9, pid); err == nil {
		t.Errorf("AttachNode of a node not in the plan succeeded")
	}

	if err := DetachNode(cluster, 0); err != nil {
		t.Fatalf("DetachNode: %v", err)
	}
	if _, err := netlink.LinkByName(n.HostVeth(0)); !isNotFound(err) {
		t.Errorf("host veth after DetachNode: %v, want not found", err)
	}
	if has, err := nsHasLink(pid, NodeInterface); err != nil || has {
		t.Errorf("%s in the node namespace after DetachNode: %v, %v", NodeInterface, has, err)
	}
	if err := DetachNode(cluster, 0); err != nil {
		t.Errorf("second DetachNode: %v", err)
	}
	if err := AttachNode(p, 0, pid); err != nil {
		t.Fatalf("AttachNode after DetachNode: %v", err)
	}
	if err := ping(t, 0, "10.254.0.2"); err != nil {
		t.Errorf("host → node after re-attach: %v", err)
	}

	// An update drops node 1: its route goes, its range becomes unreachable.
	p2 := p
	p2.Nodes = slices.DeleteFunc(slices.Clone(p.Nodes), func(nr NodeRoute) bool { return nr.Index == 1 })
	if err := Setup(p2); err != nil {
		t.Fatalf("Setup without node 1: %v", err)
	}
	wantUnreachable(t, "10.254.129.7")
	wantVia(t, "10.254.128.7", bi, "10.254.0.2")

	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	wantClean(t, cluster)
	if has, err := nsHasLink(pid, NodeInterface); err != nil || has {
		t.Errorf("%s in the node namespace after Teardown: %v, %v", NodeInterface, has, err)
	}
	if err := Teardown(cluster); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
}

// nsHasLink reports whether the network namespace of pid has a link name.
func nsHasLink(pid int, name string) (bool, error) {
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return false, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return false, err
	}
	defer h.Close()
	_, err = h.LinkByName(name)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func TestServiceOnBridgeWithoutWhole(t *testing.T) {
	needRoot(t)
	cluster := testCluster(t, "proc")
	n := NamesFor(cluster)
	p := examplePlan(cluster)
	p.Whole = netip.Prefix{}
	p.ServiceVia = netip.Addr{}
	p.Nodes = []NodeRoute{{Index: 0, IP: p.BridgeIP, PodCIDR: mp("10.254.128.0/24"), Local: true}}
	if err := Setup(p); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	// A stray address on the bridge goes on the next Setup.
	stray, _ := netlink.ParseAddr("10.254.0.99/24")
	if err := netlink.AddrAdd(br, stray); err != nil {
		t.Fatal(err)
	}
	if err := Setup(p); err != nil {
		t.Fatalf("Setup again: %v", err)
	}
	if addrs, err := netlink.AddrList(br, netlink.FAMILY_V4); err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "10.254.0.1/24" {
		t.Errorf("bridge addresses after Setup = %v, %v; want just 10.254.0.1/24", addrs, err)
	}
	wantUnreachable(t, "10.254.16.1") // until RouteServices
	if err := RouteServices(p); err != nil {
		t.Fatalf("RouteServices: %v", err)
	}
	wantVia(t, "10.254.16.1", br.Attrs().Index, "") // kube-proxy's host rules take it from here
	if err := Setup(p); err != nil {
		t.Fatalf("Setup after RouteServices: %v", err)
	}
	wantUnreachable(t, "10.254.16.1") // a new Setup: kube-proxy writes its rules again first
	if err := RouteServices(p); err != nil {
		t.Fatalf("RouteServices: %v", err)
	}
	wantUnreachable(t, "10.254.128.9") // no CNI bridge yet
	wantUnreachable(t, "10.254.200.1")
	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	wantClean(t, cluster)
}

func TestSetupConflict(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name  string
		addr  string // on the foreign link
		route string // a route on the foreign link
		want  string
	}{
		{name: "address in node CIDR", addr: "10.254.0.77/24", want: "address 10.254.0.77/24 on link %s overlaps the node CIDR 10.254.0.0/24"},
		{name: "route in service CIDR", route: "10.254.16.0/22", want: `route "10.254.16.0/22 dev %s`},
		{name: "wide address", addr: "10.254.255.1/16", want: "address 10.254.255.1/16 on link %s overlaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := testCluster(t, "conflict")
			foreign := fmt.Sprintf("ntc%d", os.Getpid()%1000000)
			attrs := netlink.NewLinkAttrs()
			attrs.Name = foreign
			// This kernel may lack the dummy driver; a bridge does as well.
			if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
				t.Fatalf("create %s: %v", foreign, err)
			}
			t.Cleanup(func() {
				if err := deleteLink(foreign); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			})
			l, err := netlink.LinkByName(foreign)
			if err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
			if tt.addr != "" {
				a, err := netlink.ParseAddr(tt.addr)
				if err != nil {
					t.Fatal(err)
				}
				if err := netlink.AddrAdd(l, a); err != nil {
					t.Fatalf("add %s to %s: %v", tt.addr, foreign, err)
				}
			}
			if tt.route != "" {
				_, dst, _ := net.ParseCIDR(tt.route)
				if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
					t.Fatalf("add route %s dev %s: %v", tt.route, foreign, err)
				}
			}

			err = Setup(examplePlan(cluster))
			if err == nil {
				t.Fatalf("Setup succeeded despite %s on %s", tt.name, foreign)
			}
			if !errors.Is(err, ErrConflict) {
				t.Errorf("Setup error %v does not wrap ErrConflict", err)
			}
			if want := fmt.Sprintf(tt.want, foreign); !strings.Contains(err.Error(), want) {
				t.Errorf("Setup error %q lacks %q", err, want)
			}
			wantClean(t, cluster) // nothing was changed
		})
	}
}

func TestTeardownAfterCrash(t *testing.T) {
	needRoot(t, "unshare")
	cluster := testCluster(t, "crash")
	n := NamesFor(cluster)
	pid := startNetns(t)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), crashEnv+"="+cluster, crashPidEnv+"="+strconv.Itoa(pid))
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("crash child: %v, want killed by SIGKILL\n%s", err, out)
	}

	wantLeftovers(t, cluster, "link "+n.Bridge, "link "+n.HostVeth(0), "unreachable 10.254.0.0/16",
		"iptables chain nat/"+n.NATChain, "iptables chain filter/"+n.ForwardChain)
	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown from the name alone: %v", err)
	}
	wantClean(t, cluster)
	if has, err := nsHasLink(pid, NodeInterface); err != nil || has {
		t.Errorf("%s in the node namespace after Teardown: %v, %v", NodeInterface, has, err)
	}
	wantUnreachableGone(t, "10.254.5.5")
}

// wantUnreachableGone checks that the host no longer refuses ip, i.e. the
// cluster's unreachable routes are gone (only a route lookup, no traffic).
func wantUnreachableGone(t *testing.T, ip string) {
	t.Helper()
	if _, err := routeVia(t, ip); errors.Is(err, unix.EHOSTUNREACH) {
		t.Errorf("route to %s still unreachable after Teardown", ip)
	}
}

func TestSetupConflictWithOtherCluster(t *testing.T) {
	needRoot(t)
	first, second := testCluster(t, "first"), testCluster(t, "second")
	if err := Setup(examplePlan(first)); err != nil {
		t.Fatalf("Setup %s: %v", first, err)
	}
	before := wantLeftovers(t, first)
	err := Setup(examplePlan(second))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Setup of a second cluster on the same range: %v, want ErrConflict", err)
	}
	for _, want := range []string{
		"address 10.254.0.1/24 on link " + NamesFor(first).Bridge + " (another kubernix cluster's)",
		`route "unreachable 10.254.0.0/16 proto 75`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Setup error %q lacks %q", err, want)
		}
	}
	wantClean(t, second)
	if after := wantLeftovers(t, first); !slices.Equal(before, after) {
		t.Errorf("the failed Setup changed the first cluster: %q, then %q", before, after)
	}
}

func TestSetupLinkNameTaken(t *testing.T) {
	needRoot(t)
	cluster := testCluster(t, "taken")
	n := NamesFor(cluster)
	attrs := netlink.NewLinkAttrs()
	attrs.Name = n.Bridge
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: fmt.Sprintf("ntp%d", os.Getpid()%1000000)}); err != nil {
		t.Fatalf("create veth %s: %v", n.Bridge, err)
	}
	t.Cleanup(func() { _ = deleteLink(n.Bridge) })
	err := Setup(examplePlan(cluster))
	if want := "link " + n.Bridge + " exists but is a veth, not a bridge"; !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Errorf("Setup = %v, want ErrConflict with %q", err, want)
	}
	if _, err := netlink.LinkByName(n.Bridge); err != nil {
		t.Errorf("Setup removed the foreign %s: %v", n.Bridge, err)
	}
}
