package network

// Integration tests: they need root and change the host's network, but only
// things they create themselves: links named after a test cluster (or
// "ntc<pid>"), routes inside 10.254.0.0/16 and chains named after the test
// cluster. Traffic only goes between the host and a network namespace the
// test made, over the test's own bridge.

import (
	"context"
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

	"github.com/coreos/go-iptables/iptables"
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
	for _, c := range n.planChains(p) {
		jumps, err := jumpsTo(ipt, c)
		if err != nil || len(jumps) != 1 {
			t.Errorf("jumps from %s/%s to %s = %q, %v; want exactly one after two Setups", c.table, c.hook, c.chain, jumps, err)
		}
	}
	if len(n.planChains(p)) != 2 {
		t.Errorf("chains of an IPv4 cluster = %v; want the nat and the filter chain of iptables", n.planChains(p))
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

// ipv6Forwarding is the host sysctl the IPv6 half must never set: it would
// stop the host accepting router advertisements.
const ipv6Forwarding = "net.ipv6.conf.all.forwarding"

// needIPv6 skips t unless the host has IPv6.
func needIPv6(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		t.Skipf("integration test needs IPv6 on the host: %v", err)
	}
}

// nsHandle returns a netlink handle in the network namespace of pid,
// closed when t ends.
func nsHandle(t *testing.T, pid int) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// globalAddrs6 lists the global IPv6 addresses of l (through h), as
// "addr/bits".
func globalAddrs6(t *testing.T, h *netlink.Handle, l netlink.Link) []netlink.Addr {
	t.Helper()
	addrs, err := h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatalf("list IPv6 addresses of %s: %v", l.Attrs().Name, err)
	}
	return slices.DeleteFunc(addrs, func(a netlink.Addr) bool { return a.IP.IsLinkLocalUnicast() })
}

// wantOnlyAddr6 fails t unless l's only global IPv6 address is want, with
// no duplicate address detection and not tentative.
func wantOnlyAddr6(t *testing.T, h *netlink.Handle, l netlink.Link, want string) {
	t.Helper()
	addrs := globalAddrs6(t, h, l)
	if len(addrs) != 1 || addrs[0].IPNet.String() != want {
		t.Errorf("global IPv6 addresses of %s = %v, want just %s", l.Attrs().Name, addrs, want)
		return
	}
	if f := addrs[0].Flags; f&unix.IFA_F_NODAD == 0 || f&unix.IFA_F_TENTATIVE != 0 {
		t.Errorf("address %s on %s: flags %#x, want nodad and not tentative", want, l.Attrs().Name, f)
	}
}

// routes6 lists the IPv6 routes of the main table with Protocol through h,
// as describeRoute renders them up to the device (h may be in another
// namespace).
func routes6(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	rs, err := h.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Protocol: Protocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatalf("list IPv6 routes: %v", err)
	}
	var out []string
	for _, r := range rs {
		r.LinkIndex = 0
		route, _, _ := strings.Cut(describeRoute(r, nil), " proto ")
		out = append(out, route)
	}
	return out
}

// TestDualStack sets up a dual-stack plan with two sandboxed nodes: the
// bridge gets both addresses, the host IPv6 routes (and never IPv6
// forwarding), each sandbox its IPv6 address, default route and a route to
// the other node's IPv6 pod CIDR; host and nodes reach each other over
// IPv6; Teardown leaves no IPv6 route, address or table.
func TestDualStack(t *testing.T) {
	needRoot(t, "unshare", "nsenter")
	needIPv6(t)
	pingCmd(t)
	cluster := testCluster(t, "dual")
	n := NamesFor(cluster)
	p := dualPlan(cluster)
	forwarding6, err := sysctl.Get(ipv6Forwarding)
	if err != nil {
		t.Fatal(err)
	}
	// As Docker leaves a host that forwards IPv6: bridged IPv6 between the
	// nodes passes the host's ip6tables FORWARD (bridge-nf-call-ip6tables).
	dropForward6(t)

	if err := Setup(p); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	wantNoRouteDeletes(t, func() {
		if err := Setup(p); err != nil {
			t.Fatalf("Setup again: %v", err)
		}
	})
	if v, err := sysctl.Get(ipv6Forwarding); err != nil || v != forwarding6 {
		t.Errorf("%s = %q, %v after Setup; want it untouched (%s)", ipv6Forwarding, v, err, forwarding6)
	}
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	host, err := netlink.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	if addrs, err := netlink.AddrList(br, netlink.FAMILY_V4); err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "10.254.0.1/24" {
		t.Errorf("bridge IPv4 addresses = %v, %v; want just 10.254.0.1/24", addrs, err)
	}
	wantOnlyAddr6(t, host, br, "fd12:3456:789a::1/64")
	bi := br.Attrs().Index
	wantHostRoutes6(t, p, bi)

	pid0, pid1 := startNetns(t), startNetns(t)
	for i, pid := range []int{pid0, pid1} {
		if err := AttachNode(p, i, pid); err != nil {
			t.Fatalf("AttachNode %d: %v", i, err)
		}
	}
	wantNode6(t, nsHandle(t, pid0), "fd12:3456:789a::2/64", "fd12:3456:789a:8001::/64 via fd12:3456:789a::3")
	wantNode6(t, nsHandle(t, pid1), "fd12:3456:789a::3/64", "fd12:3456:789a:8000::/64 via fd12:3456:789a::2")
	wantTraffic6(t, pid0, pid1)
	wantLeftovers(t, cluster, "link "+n.Bridge, "unreachable fd12:3456:789a::/48", "nftables table inet "+n.GuardTable(),
		"ip6tables chain filter/"+n.ForwardChain, "ip6tables rule filter/FORWARD")

	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	wantClean(t, cluster)
	for _, r := range routes6(t, host) {
		if strings.Contains(r, "fd12:3456:789a:") {
			t.Errorf("IPv6 route %q left after Teardown", r)
		}
	}
	wantUnreachableGone(t, "fd12:3456:789a:5::5")
}

// dropForward6 sets the policy of the host's ip6tables filter FORWARD
// chain to DROP until t ends, then back to what it was (and removes the
// ip6 filter table if that made it).
func dropForward6(t *testing.T) {
	t.Helper()
	ipt, err := iptables.New(iptables.IPFamily(iptables.ProtocolIPv6))
	if err != nil {
		t.Skipf("ip6tables: %v", err)
	}
	ctx := context.Background()
	if _, exists, err := tableContent(ctx, nftHostTable, "ip6 filter"); err == nil && !exists {
		t.Cleanup(func() {
			if err := deleteTable(ctx, nftHostTable, "ip6 filter"); err != nil {
				t.Error(err)
			}
		})
	}
	before, err := forwardPolicy(ipt)
	if err != nil {
		t.Fatal(err)
	}
	if err := ipt.ChangePolicy("filter", "FORWARD", PolicyDrop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ipt.ChangePolicy("filter", "FORWARD", before); err != nil {
			t.Errorf("restore the ip6tables FORWARD policy %s: %v", before, err)
		}
	})
}

// wantNoRouteDeletes runs f and fails t if a route with Protocol was
// deleted meanwhile: a second Setup leaves the routes that are right
// alone (IPv6 ones carry the kernel's default metric).
func wantNoRouteDeletes(t *testing.T, f func()) {
	t.Helper()
	ch := make(chan netlink.RouteUpdate, 256)
	done := make(chan struct{})
	if err := netlink.RouteSubscribe(ch, done); err != nil {
		t.Fatalf("subscribe to route changes: %v", err)
	}
	f()
	close(done)
	for u := range ch {
		if u.Type == unix.RTM_DELROUTE && u.Protocol == Protocol {
			t.Errorf("route %q deleted and added again", describeRoute(u.Route, nil))
		}
	}
}

// wantHostRoutes6 checks the host's IPv6 routes of dualPlan p, before and
// after RouteServices, with the bridge at link index bi.
func wantHostRoutes6(t *testing.T, p Plan, bi int) {
	t.Helper()
	wantVia(t, "fd12:3456:789a:8000::7", bi, "fd12:3456:789a::2") // node 0's pods
	wantVia(t, "fd12:3456:789a:8001::7", bi, "fd12:3456:789a::3") // node 1's pods
	wantVia(t, "fd12:3456:789a::2", bi, "")                       // a node
	wantUnreachable(t, "fd12:3456:789a:1::1")                     // a service IP, before RouteServices
	wantUnreachable(t, "fd12:3456:789a:8002::7")                  // local node's pods: no CNI bridge
	wantUnreachable(t, "fd12:3456:789a:5::5")                     // unused part of the whole range
	for i := range 2 {
		if err := RouteServices(p); err != nil {
			t.Fatalf("RouteServices #%d: %v", i+1, err)
		}
	}
	wantVia(t, "fd12:3456:789a:1::1", bi, "fd12:3456:789a::2") // a service IP, via node 0
	wantVia(t, "fd12:3456:789a:2::1", bi, "fd12:3456:789a::2") // a LoadBalancer IP, via node 0
}

// wantNode6 checks the IPv6 side of a node's namespace through h: its
// address, default route, route to the other node's pods and rules.
func wantNode6(t *testing.T, h *netlink.Handle, addr, peerRoute string) {
	t.Helper()
	eth, err := h.LinkByName(NodeInterface)
	if err != nil {
		t.Fatal(err)
	}
	wantOnlyAddr6(t, h, eth, addr)
	got := routes6(t, h)
	for _, want := range []string{"default via fd12:3456:789a::1", peerRoute} {
		if !slices.Contains(got, want) {
			t.Errorf("node IPv6 routes %q lack %q", got, want)
		}
	}
	rules, err := h.RuleList(netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	var dsts []string
	for _, r := range rules {
		if r.Priority == serviceUnreachablePriority && r.IifName == NodeInterface && r.Dst != nil {
			dsts = append(dsts, r.Dst.String())
		}
	}
	if want := []string{"fd12:3456:789a:1::/112", "fd12:3456:789a:2::/112"}; !slices.Equal(dsts, want) {
		t.Errorf("node IPv6 unreachable rules to %q, want %q", dsts, want)
	}
}

// wantTraffic6 pings over IPv6 between the host and the nodes in the
// namespaces of pid0 and pid1, and from node 0 to an address of node 1's
// pod CIDR (on node 1's lo), which only the peer route delivers.
func wantTraffic6(t *testing.T, pid0, pid1 int) {
	t.Helper()
	h1 := nsHandle(t, pid1)
	lo, err := h1.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := netlink.ParseAddr("fd12:3456:789a:8001::1/128")
	if err := h1.AddrAdd(lo, pod); err != nil {
		t.Fatalf("add a pod address to node 1: %v", err)
	}
	for _, c := range []struct {
		what string
		pid  int
		ip   string
	}{
		{"host → node 0", 0, "fd12:3456:789a::2"},
		{"node 0 → bridge", pid0, "fd12:3456:789a::1"},
		{"node 0 → node 1", pid0, "fd12:3456:789a::3"},
		{"node 0 → node 1's pod", pid0, "fd12:3456:789a:8001::1"},
		{"host → node 1's pod", 0, "fd12:3456:789a:8001::1"},
	} {
		if err := ping(t, c.pid, c.ip); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
}

// TestAttachNodeIPv6Disabled: a dual-stack AttachNode into a namespace
// whose new links have IPv6 disabled fails wrapping EACCES, naming the
// sysctl, and removes its veth again.
func TestAttachNodeIPv6Disabled(t *testing.T) {
	needRoot(t, "unshare", "nsenter")
	needIPv6(t)
	cluster := testCluster(t, "noipv6")
	n := NamesFor(cluster)
	p := dualPlan(cluster)
	if err := Setup(p); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	pid := startNetns(t)
	off := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--net",
		"sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
	if out, err := off.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", off, err, out)
	}
	err := AttachNode(p, 0, pid)
	if !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), "disable_ipv6") {
		t.Errorf("AttachNode = %v, want EACCES naming disable_ipv6", err)
	}
	if _, err := netlink.LinkByName(n.HostVeth(0)); !isNotFound(err) {
		t.Errorf("host veth after the failed AttachNode: %v, want not found", err)
	}
}

// TestServiceOnBridge6: a dual-stack process-executor plan without a
// whole IPv6 range routes the IPv6 service CIDR on the bridge once
// RouteServices ran, and a stray global IPv6 address on the bridge goes
// on the next Setup while a link-local one stays.
func TestServiceOnBridge6(t *testing.T) {
	needRoot(t)
	needIPv6(t)
	cluster := testCluster(t, "proc6")
	n := NamesFor(cluster)
	p := dualPlan(cluster)
	p.Whole, p.Whole6 = netip.Prefix{}, netip.Prefix{}
	p.ServiceVia, p.ServiceVia6 = netip.Addr{}, netip.Addr{}
	p.Nodes = p.Nodes[2:] // the local node
	if err := Setup(p); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	// (A bridge without ports has no link-local address yet: add one.)
	for _, a := range []string{"fd12:3456:789a::99/64", "fe80::99/64"} {
		addr, _ := netlink.ParseAddr(a)
		addr.Flags = unix.IFA_F_NODAD
		if err := netlink.AddrAdd(br, addr); err != nil {
			t.Fatalf("add %s to the bridge: %v", a, err)
		}
	}
	if err := Setup(p); err != nil {
		t.Fatalf("Setup again: %v", err)
	}
	host, err := netlink.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	wantOnlyAddr6(t, host, br, "fd12:3456:789a::1/64")
	if addrs, err := netlink.AddrList(br, netlink.FAMILY_V6); err != nil ||
		!slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == "fe80::99/64" }) {
		t.Errorf("bridge IPv6 addresses = %v, %v; want fe80::99/64 kept", addrs, err)
	}
	wantUnreachable(t, "fd12:3456:789a:1::1") // until RouteServices
	if err := RouteServices(p); err != nil {
		t.Fatalf("RouteServices: %v", err)
	}
	wantVia(t, "fd12:3456:789a:1::1", br.Attrs().Index, "")
	wantUnreachable(t, "fd12:3456:789a:8002::9") // no CNI bridge yet
	if err := Teardown(cluster); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	wantClean(t, cluster)
}
