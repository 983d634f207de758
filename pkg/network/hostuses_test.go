package network

import (
	"errors"
	"net"
	"net/netip"
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
