package network

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// addForeignRoute adds `unreachable <dst> proto static` (no link needed),
// removed when t ends.
func addForeignRoute(t *testing.T, dst string) {
	t.Helper()
	_, ipnet, err := net.ParseCIDR(dst)
	if err != nil {
		t.Fatal(err)
	}
	r := &netlink.Route{Dst: ipnet, Type: unix.RTN_UNREACHABLE, Protocol: unix.RTPROT_STATIC, Table: unix.RT_TABLE_MAIN}
	if err := netlink.RouteAdd(r); err != nil {
		t.Fatalf("add route unreachable %s: %v", dst, err)
	}
	t.Cleanup(func() {
		if err := netlink.RouteDel(r); err != nil {
			t.Errorf("cleanup: delete route unreachable %s: %v", dst, err)
		}
	})
}

// TestSetupConflictWholeRange: a route of the host inside the whole
// cluster range, though outside the node, service and cluster CIDRs, is a
// conflict: the cluster's unreachable routes and firewall cover the whole
// range.
func TestSetupConflictWholeRange(t *testing.T) {
	needRoot(t)
	cluster := testCluster(t, "whole")
	addForeignRoute(t, "10.254.64.0/24")
	err := Setup(examplePlan(cluster))
	want := `route "unreachable 10.254.64.0/24 proto 4" overlaps the whole cluster range 10.254.0.0/16`
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Setup = %v, want ErrConflict with %q", err, want)
	}
	wantClean(t, cluster)
}

// TestHostUses lists a foreign route and another cluster's bridge address,
// but not the cluster's own.
func TestHostUses(t *testing.T) {
	needRoot(t)
	cluster, other := testCluster(t, "uses"), testCluster(t, "uses-other")
	if err := Setup(examplePlan(cluster)); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	addForeignRoute(t, "10.253.7.0/24")
	find := func(uses []HostUse, pr string) (HostUse, bool) {
		for _, u := range uses {
			if u.Prefix == netip.MustParsePrefix(pr) {
				return u, true
			}
		}
		return HostUse{}, false
	}
	own, err := HostUses(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := find(own, "10.253.7.0/24"); !ok || !strings.Contains(u.Desc, "unreachable 10.253.7.0/24") {
		t.Errorf("HostUses(%s) lacks the foreign route: %+v", cluster, own)
	}
	for _, u := range own {
		if netip.MustParsePrefix("10.254.0.0/16").Overlaps(u.Prefix) {
			t.Errorf("HostUses(%s) lists the cluster's own %s", cluster, u.Desc)
		}
	}
	others, err := HostUses(other)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := find(others, "10.254.0.0/24"); !ok || !strings.Contains(u.Desc, "address 10.254.0.1/24 on link "+NamesFor(cluster).Bridge+" (another kubernix cluster's)") {
		t.Errorf("HostUses(%s) lacks %s's bridge address: %+v", other, cluster, others)
	}
}

// TestUsePrefix: IPv4 prefixes and global IPv6 ones can conflict;
// link-local, multicast, loopback and unspecified IPv6 ones cannot.
func TestUsePrefix(t *testing.T) {
	tests := []struct {
		in   string
		want string // "": not a use
	}{
		{"10.254.0.1/24", "10.254.0.1/24"},
		{"fd00::2/64", "fd00::2/64"},
		{"2001:db8::/32", "2001:db8::/32"},
		{"::/1", "::/1"}, // default-like: routeUses drops it
		{"fe80::1/64", ""},
		{"fe80::/10", ""},
		{"ff02::1/128", ""},
		{"ff00::/8", ""},
		{"::1/128", ""},
		{"::/128", ""},
	}
	for _, tt := range tests {
		_, n, err := net.ParseCIDR(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = net.ParseIP(strings.Split(tt.in, "/")[0])
		got, ok := usePrefix(n)
		if ok != (tt.want != "") || (ok && got.String() != tt.want) {
			t.Errorf("usePrefix(%s) = %s, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	if _, ok := usePrefix(nil); ok {
		t.Errorf("usePrefix(nil) is a use")
	}
}

// TestSetupConflictIPv6: a foreign IPv6 route inside the whole IPv6
// cluster range is a conflict for a dual-stack plan, and none for an
// IPv4 one.
func TestSetupConflictIPv6(t *testing.T) {
	needRoot(t)
	needIPv6(t)
	cluster := testCluster(t, "whole6")
	addForeignRoute(t, "fd12:3456:789a:40::/64")
	err := Setup(dualPlan(cluster))
	for _, want := range []string{`route "unreachable fd12:3456:789a:40::/64`, "overlaps the IPv6 whole cluster range fd12:3456:789a::/48"} {
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
			t.Errorf("Setup = %v, want ErrConflict with %q", err, want)
		}
	}
	wantClean(t, cluster)
	if err := Setup(examplePlan(cluster)); err != nil {
		t.Errorf("Setup of the IPv4 plan: %v", err)
	}
}

// TestHostUsesIPv6 lists a foreign IPv6 route and another cluster's IPv6
// bridge address and unreachable route, but not the cluster's own, and
// no link-local, multicast or loopback IPv6 address or route.
func TestHostUsesIPv6(t *testing.T) {
	needRoot(t)
	needIPv6(t)
	cluster, other := testCluster(t, "uses6"), testCluster(t, "uses6-other")
	if err := Setup(dualPlan(cluster)); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	addForeignRoute(t, "fd12:3456:789b::/64")
	own, err := HostUses(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(own, func(u HostUse) bool {
		return u.Prefix == mp("fd12:3456:789b::/64") && strings.Contains(u.Desc, "unreachable fd12:3456:789b::/64")
	}) {
		t.Errorf("HostUses(%s) lacks the foreign IPv6 route: %+v", cluster, own)
	}
	others, err := HostUses(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"address fd12:3456:789a::1/64 on link " + NamesFor(cluster).Bridge + " (another kubernix cluster's)",
		`route "unreachable fd12:3456:789a::/48`,
	} {
		if !slices.ContainsFunc(others, func(u HostUse) bool { return strings.Contains(u.Desc, want) }) {
			t.Errorf("HostUses(%s) lacks %q: %+v", other, want, others)
		}
	}
	for _, u := range append(own, others...) {
		if u.Prefix.Addr().Is6() && !u.Prefix.Addr().IsGlobalUnicast() {
			t.Errorf("HostUses lists %s", u.Desc)
		}
	}
	for _, u := range own {
		if mp("fd12:3456:789a::/48").Overlaps(u.Prefix) {
			t.Errorf("HostUses(%s) lists the cluster's own %s", cluster, u.Desc)
		}
	}
}
