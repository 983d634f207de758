// Package network builds and removes the host side of a kubernix cluster's
// network on one Linux host: the cluster bridge with the host's address on
// the node network, a veth per sandboxed node, host-gw routes to each node's
// pod CIDR, a route for the service CIDR, unreachable routes over the rest of
// the cluster ranges (so no cluster address leaves by the default route), and
// two iptables chains: masquerade for traffic leaving the cluster and
// FORWARD accept for the cluster's bridges.
//
// Everything is named after a hash of the cluster name (see NamesFor) and
// every route carries Protocol, so Teardown and Leftovers work from the
// cluster name alone, e.g. after the supervisor was killed. All functions
// need root (CAP_NET_ADMIN) and, for the chains, the iptables command
// (iptables-nft or -legacy, whichever `iptables` is: the backend
// kube-proxy uses).
//
// A dual-stack plan (Plan.NodeCIDR6 set) adds an IPv6 half: the bridge's
// IPv6 address, host routes to each node's IPv6 pod CIDR, unreachable
// routes over the IPv6 cluster ranges, IPv6 service routes and the guard's
// IPv6 set. The host never forwards IPv6 (net.ipv6.conf.all.forwarding
// would stop it accepting router advertisements), so there is no IPv6
// masquerade: the host's own traffic to the cluster needs only routes, and
// the nodes reach each other's pods over the bridge, each sandbox routing
// every other node's IPv6 pod CIDR via that node (AttachNode).
package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/kubernix/kubernix/pkg/sysctl"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Protocol is the routing protocol number (75, "proto 75" in `ip route`)
// on every route this package adds, so it can tell its routes from others.
const Protocol netlink.RouteProtocol = 0x4b

// ErrConflict is wrapped by Setup's error when a cluster range overlaps an
// address or route on the host that is not the cluster's own.
var ErrConflict = errors.New("address range already in use on the host")

// ipForward is the sysctl that lets the host route between the bridge and
// its other interfaces.
const ipForward = "net.ipv4.ip_forward"

// Setup creates or updates, idempotently, the host network of plan p:
//
//   - the bridge Names.Bridge, up, with BridgeIP/NodeCIDR.Bits() as its only
//     IPv4 address and, for a dual-stack plan, IPv6 enabled, router
//     advertisements ignored and BridgeIP6/NodeCIDR6.Bits() (without
//     duplicate address detection) as its only global IPv6 address;
//   - net.ipv4.ip_forward=1 (left on by Teardown; the cluster package
//     records the host's value first and, when it was 0, sets the FORWARD
//     policy to DROP before this, so only what rules accept is forwarded:
//     see policy.go);
//   - the routes of the plan (see Plan), IPv4 and IPv6: pod CIDR via node
//     IP for each non-local node, unreachable routes over the cluster
//     ranges; routes of the cluster that are no longer in the plan are
//     removed, the service routes too (RouteServices adds them once
//     kube-proxy has written its rules);
//   - the nat chain Names.NATChain (`-d <cluster range> -j RETURN` for each
//     range, then `-s ClusterCIDR -j MASQUERADE` and `-s NodeCIDR -j
//     MASQUERADE`) appended to POSTROUTING, and the filter chain
//     Names.ForwardChain (ACCEPT in and out of the bridge and the CNI bridge)
//     appended to FORWARD, so a FORWARD policy of DROP does not cut off pods
//     while rules placed earlier (kube-proxy's) still apply first;
//   - the guard, the nftables table Names.GuardTable, which drops traffic
//     into the cluster ranges that does not start on this machine (see
//     guard.go): nothing of the cluster is reachable from the LAN.
//
// Before changing anything it validates p (every problem at once) and checks
// the host: an address or route of another interface or program (another
// cluster included) that overlaps the node, cluster or service CIDR or the
// whole cluster range (which the unreachable routes cover), or their IPv6
// counterparts, fails Setup with an error wrapping ErrConflict that lists
// each such address with its link and each such route; so does a link
// called Names.Bridge that is not a bridge. Default routes (and the
// VPN-style 0.0.0.0/1 and 128.0.0.0/1, ::/1 and 8000::/1) do not count:
// the cluster's more specific routes win over them as intended. Other
// errors name the step that failed.
func Setup(p Plan) error {
	p = p.normalized()
	if err := p.validate(); err != nil {
		return fmt.Errorf("network plan of cluster %q: %w", p.Cluster, err)
	}
	n := NamesFor(p.Cluster)
	if err := checkHost(p, n); err != nil {
		return fmt.Errorf("network of cluster %q: %w", p.Cluster, err)
	}
	ipts, err := newRunners(n.planChains(p))
	if err != nil {
		return fmt.Errorf("network of cluster %q: %w", p.Cluster, err)
	}
	br, err := ensureBridge(p, n)
	if err != nil {
		return fmt.Errorf("cluster bridge %s: %w", n.Bridge, err)
	}
	if err := enableForwarding(); err != nil {
		return err
	}
	if err := syncRoutes(p, n, br.Attrs().Index); err != nil {
		return fmt.Errorf("routes of cluster %q: %w", p.Cluster, err)
	}
	if err := withHostTables(hostTablesFile(), func() error {
		missing := missingTables(context.Background(), nftHostTable, hookTables(n.planChains(p)))
		if err := ensureChains(ipts, p, n); err != nil {
			return fmt.Errorf("iptables of cluster %q: %w", p.Cluster, err)
		}
		if err := recordMadeTables(context.Background(), nftHostTable, hostTablesFile(), missing); err != nil {
			return fmt.Errorf("record the iptables tables cluster %q made: %w", p.Cluster, err)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := ensureGuard(context.Background(), p, n); err != nil {
		return fmt.Errorf("guard of cluster %q: %w", p.Cluster, err)
	}
	return nil
}

// checkHost returns an error wrapping ErrConflict that lists every conflict
// between the plan and the host, one per line; nil when there is none.
func checkHost(p Plan, n Names) error {
	links, err := listLinks()
	if err != nil {
		return err
	}
	var conflicts []string
	for _, l := range links {
		if a := l.Attrs(); a.Name == n.Bridge && l.Type() != "bridge" {
			conflicts = append(conflicts, fmt.Sprintf("link %s exists but is a %s, not a bridge", a.Name, l.Type()))
		}
	}
	uses, err := hostUses(n, links)
	if err != nil {
		return err
	}
	var ranges []namedPrefix
	for _, h := range p.halves() {
		ranges = append(ranges, namedPrefix{h.what("node CIDR"), h.nodeCIDR}, namedPrefix{h.what("cluster CIDR"), h.clusterCIDR},
			namedPrefix{h.what("service CIDR"), h.serviceCIDR}, namedPrefix{h.what("LoadBalancer CIDR"), h.loadBalancerCIDR},
			namedPrefix{h.what("whole cluster range"), h.whole})
	}
	for _, u := range uses {
		for _, r := range ranges {
			if r.pr.IsValid() && r.pr.Overlaps(u.Prefix) {
				conflicts = append(conflicts, fmt.Sprintf("%s overlaps the %s %s", u.Desc, r.what, r.pr))
				break
			}
		}
	}
	if len(conflicts) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrConflict, strings.Join(conflicts, "\n  "))
}

// HostUse is an address or route of this host that is not a given
// cluster's own: a cluster range that overlaps it conflicts with it.
type HostUse struct {
	// Prefix is the address's network (e.g. 192.168.1.0/24 for
	// 192.168.1.5/24) or the route's destination.
	Prefix netip.Prefix
	// Desc says what it is, as the conflict messages of Setup do: e.g.
	// `address 192.168.1.5/24 on link eth0` or `route "10.0.0.0/8 via
	// 192.168.1.1 dev eth0"`, with " (another kubernix cluster's)" when it
	// looks like one.
	Desc string
}

// HostUses lists the addresses and routes of this host (in the calling
// thread's network namespace) that are not cluster's own (see NamesFor):
// what Setup checks the plan's ranges against. The IPv4 ones come first,
// then the IPv6 ones, of which it lists only those that can hold global
// addresses (not link-local fe80::/10, multicast ff00::/8, ::1 or ::). Like
// Setup, it leaves out the local table and the kernel's prefix routes
// (they mirror addresses) and default-like routes (0.0.0.0/0, 0.0.0.0/1,
// 128.0.0.0/1, ::/0, ::/1, 8000::/1). It needs no privileges. Errors name
// the dump that failed.
func HostUses(cluster string) ([]HostUse, error) {
	links, err := listLinks()
	if err != nil {
		return nil, err
	}
	return hostUses(NamesFor(cluster), links)
}

// hostUses is HostUses for the cluster of n, given the host's links.
func hostUses(n Names, links []netlink.Link) ([]HostUse, error) {
	linkName := map[int]string{}
	ours := map[int]bool{}
	for _, l := range links {
		a := l.Attrs()
		linkName[a.Index] = a.Name
		ours[a.Index] = n.owns(a.Name)
	}
	var uses []HostUse
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		addrs, err := addrUses(family, linkName, ours)
		if err != nil {
			return nil, err
		}
		routes, err := routeUses(n, family, linkName, ours)
		if err != nil {
			return nil, err
		}
		uses = append(append(uses, addrs...), routes...)
	}
	return uses, nil
}

// addrUses lists the host's addresses of family (netlink.FAMILY_V4 or
// FAMILY_V6) on links not in ours, as hostUses does.
func addrUses(family int, linkName map[int]string, ours map[int]bool) ([]HostUse, error) {
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, family) })
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	var uses []HostUse
	for _, a := range addrs {
		if ours[a.LinkIndex] {
			continue
		}
		pr, ok := usePrefix(a.IPNet)
		if !ok {
			continue
		}
		dev := nameOr(linkName, a.LinkIndex)
		uses = append(uses, HostUse{Prefix: pr.Masked(), Desc: fmt.Sprintf("address %s on link %s%s", pr, dev, kubernixHint(dev, 0))})
	}
	return uses, nil
}

// routeUses lists the host's routes of family (netlink.FAMILY_V4 or
// FAMILY_V6) that are not the cluster of n's, as hostUses does.
func routeUses(n Names, family int, linkName map[int]string, ours map[int]bool) ([]HostUse, error) {
	routes, err := retryDump(func() ([]netlink.Route, error) {
		return netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var uses []HostUse
	for _, r := range routes {
		// The local table and the kernel's prefix routes only mirror
		// addresses, listed by addrUses.
		if r.Table == unix.RT_TABLE_LOCAL || r.Protocol == unix.RTPROT_KERNEL ||
			ours[r.LinkIndex] || n.ownsUnreachable(r) {
			continue
		}
		pr, ok := usePrefix(r.Dst)
		if !ok || defaultLike(pr) {
			continue
		}
		uses = append(uses, HostUse{Prefix: pr, Desc: fmt.Sprintf("route %q%s", describeRoute(r, linkName), kubernixHint(linkName[r.LinkIndex], r.Protocol))})
	}
	return uses, nil
}

// Prefixes of IPv6 addresses that are never global: they cannot conflict
// with a cluster range.
var (
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
	multicast6 = netip.MustParsePrefix("ff00::/8")
)

// usePrefix is the prefix (not masked) of a host address or route
// destination n that can conflict with a cluster range: any IPv4 one, and
// an IPv6 one unless it lies inside fe80::/10 or ff00::/8 or is ::1/128
// or ::/128. False for nil, too.
func usePrefix(n *net.IPNet) (netip.Prefix, bool) {
	pr, ok := netPrefix(n)
	if !ok {
		return netip.Prefix{}, false
	}
	if m := pr.Masked(); pr.Addr().Is6() &&
		(contains(linkLocal6, m) || contains(multicast6, m) || (m.Bits() == 128 && !m.Addr().IsGlobalUnicast())) {
		return netip.Prefix{}, false
	}
	return pr, true
}

// kubernixHint marks a link or route that looks like another kubernix
// cluster's, so the user knows which `kubernix down` frees the range.
func kubernixHint(link string, proto netlink.RouteProtocol) string {
	if proto == Protocol || strings.HasPrefix(link, "kx-") || strings.HasPrefix(link, "kc-") ||
		(strings.HasPrefix(link, "kx") && len(link) > 10 && link[9] == 'n') {
		return " (another kubernix cluster's)"
	}
	return ""
}

// defaultLike reports whether pr is a default route or one of the two
// half-default routes (0.0.0.0/1 and 128.0.0.0/1, ::/1 and 8000::/1) VPN
// clients use to replace it; those cover everything, and the cluster's
// more specific routes win over them as intended.
func defaultLike(pr netip.Prefix) bool { return pr.Bits() <= 1 }

// ownsUnreachable reports whether r is one of this cluster's unreachable
// routes: they have no device, so Protocol and Metric tell them apart.
func (n Names) ownsUnreachable(r netlink.Route) bool {
	return r.Protocol == Protocol && r.Type == unix.RTN_UNREACHABLE && r.Priority == n.Metric &&
		(r.Table == unix.RT_TABLE_MAIN || r.Table == 0)
}

// ensureBridge creates the cluster bridge if needed, brings it up and makes
// BridgeIP/NodeCIDR.Bits() its only IPv4 address, and gives it the IPv6
// address of the plan (see ensureBridge6).
func ensureBridge(p Plan, n Names) (netlink.Link, error) {
	br, err := netlink.LinkByName(n.Bridge)
	switch {
	case isNotFound(err):
		attrs := netlink.NewLinkAttrs()
		attrs.Name = n.Bridge
		attrs.HardwareAddr = n.BridgeMAC
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		if br, err = netlink.LinkByName(n.Bridge); err != nil {
			return nil, fmt.Errorf("look up after create: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("look up: %w", err)
	}
	want := prefixAddr(netip.PrefixFrom(p.BridgeIP, p.NodeCIDR.Bits()))
	have, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(br, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range have {
		if a.IPNet.String() == want.IPNet.String() {
			continue
		}
		if err := netlink.AddrDel(br, &a); err != nil && !isGone(err) {
			return nil, fmt.Errorf("remove stale address %s: %w", a.IPNet, err)
		}
	}
	if err := netlink.AddrReplace(br, want); err != nil {
		return nil, fmt.Errorf("add address %s: %w", want.IPNet, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("set up: %w", err)
	}
	// After the link is up: a link going down loses its IPv6 addresses.
	if err := ensureBridge6(p, br); err != nil {
		return nil, err
	}
	return br, nil
}

// ensureBridge6 makes BridgeIP6/NodeCIDR6.Bits() the only global IPv6
// address of the bridge br (none for a plan without IPv6), first enabling
// IPv6 on it (see enableIPv6). The address skips duplicate address
// detection, so routes via the nodes work at once; the bridge's
// link-local addresses stay.
func ensureBridge6(p Plan, br netlink.Link) error {
	var want *netlink.Addr
	if p.hasIPv6() {
		if err := enableIPv6(br.Attrs().Name); err != nil {
			return err
		}
		want = prefixAddr(netip.PrefixFrom(p.BridgeIP6, p.NodeCIDR6.Bits()))
		want.Flags = unix.IFA_F_NODAD
	}
	have, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(br, netlink.FAMILY_V6) })
	if err != nil {
		return fmt.Errorf("list IPv6 addresses: %w", err)
	}
	for _, a := range have {
		if a.IP.IsLinkLocalUnicast() || (want != nil && a.IPNet.String() == want.IPNet.String()) {
			continue
		}
		if err := netlink.AddrDel(br, &a); err != nil && !isGone(err) {
			return fmt.Errorf("remove stale address %s: %w", a.IPNet, err)
		}
	}
	if want == nil {
		return nil
	}
	if err := netlink.AddrReplace(br, want); err != nil {
		return fmt.Errorf("add address %s: %w", want.IPNet, err)
	}
	return nil
}

// enableIPv6 turns IPv6 on for the host link called name and has it
// ignore router advertisements (a node must not become the host's
// router). Both sysctls are the link's own and go with it, so there is
// nothing to restore.
func enableIPv6(name string) error {
	for _, c := range []struct{ key, value string }{{"disable_ipv6", "0"}, {"accept_ra", "0"}} {
		key := "net.ipv6.conf." + name + "." + c.key
		if v, err := sysctl.Get(key); err == nil && v == c.value {
			continue
		}
		if err := sysctl.Set(key, c.value); err != nil {
			return fmt.Errorf("enable IPv6 (is it disabled on this host?): %w", err)
		}
	}
	return nil
}

// enableForwarding sets net.ipv4.ip_forward=1 unless it already is.
func enableForwarding() error {
	if v, err := sysctl.Get(ipForward); err == nil && v == "1" {
		return nil
	}
	return sysctl.Set(ipForward, "1")
}

// syncRoutes makes the cluster's routes (those with Protocol on the bridge,
// and its unreachable routes) exactly the plan's.
func syncRoutes(p Plan, n Names, bridge int) error {
	want := map[routeSpec]bool{}
	for _, r := range p.routes() {
		want[r] = true
	}
	have, err := clusterRoutes(n, bridge)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range have {
		if s, ok := specOf(r, bridge); ok && want[s] {
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("remove stale route %q: %w", describeRoute(r, nil), err))
		}
	}
	for _, s := range p.routes() {
		r := s.netlink(n, bridge)
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("add route %s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// RouteServices adds, idempotently, the host routes of plan p's service
// CIDR and LoadBalancer CIDR: via ServiceVia, or on the bridge when it is
// the zero Addr. Until then the cluster's unreachable routes cover them,
// so a host process's connect to a Service IP fails at once
// (EHOSTUNREACH, no packet sent). Call it once the kube-proxy whose rules
// serve the host (ServiceVia's node's, or the host's) has written them:
// before that, node 0 would send such a packet back to the host, which
// routes it to node 0 again until its TTL runs out, and the connect waits
// out its timeout (an apiserver checking an aggregated API left in etcd
// by the last run waited 5 s, and its /readyz with it). Setup removes
// them. Errors name the route.
func RouteServices(p Plan) error {
	p = p.normalized()
	n := NamesFor(p.Cluster)
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		return fmt.Errorf("service routes of cluster %q: bridge %s: %w", p.Cluster, n.Bridge, err)
	}
	var errs []error
	for _, s := range p.serviceRoutes() {
		if err := netlink.RouteReplace(s.netlink(n, br.Attrs().Index)); err != nil {
			errs = append(errs, fmt.Errorf("add route %s: %w", s, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("service routes of cluster %q: %w", p.Cluster, err)
	}
	return nil
}

// clusterRoutes lists the IPv4 and IPv6 routes of the cluster: Protocol
// routes on link index bridge (0: none) and the cluster's unreachable
// routes.
func clusterRoutes(n Names, bridge int) ([]netlink.Route, error) {
	all, err := protocolRoutes()
	if err != nil {
		return nil, err
	}
	var out []netlink.Route
	for _, r := range all {
		if (bridge != 0 && r.LinkIndex == bridge) || n.ownsUnreachable(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// protocolRoutes lists the host's IPv4 and IPv6 routes that carry
// Protocol (main table).
func protocolRoutes() ([]netlink.Route, error) {
	var out []netlink.Route
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := retryDump(func() ([]netlink.Route, error) {
			return netlink.RouteListFiltered(family, &netlink.Route{Protocol: Protocol}, netlink.RT_FILTER_PROTOCOL)
		})
		if err != nil {
			return nil, fmt.Errorf("list routes: %w", err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// ip6DefaultMetric is the metric the kernel gives an IPv6 route added
// without one (IP6_RT_PRIO_USER); an IPv4 route's is 0.
const ip6DefaultMetric = 1024

// netlink turns s into the route to add, on the bridge with link index
// bridge.
func (s routeSpec) netlink(n Names, bridge int) *netlink.Route {
	r := &netlink.Route{
		Dst:      prefixAddr(s.Dst).IPNet,
		Protocol: Protocol,
		Table:    unix.RT_TABLE_MAIN,
	}
	switch {
	case s.Unreachable:
		r.Type = unix.RTN_UNREACHABLE
		r.Priority = n.Metric
	case s.Via.IsValid():
		r.LinkIndex = bridge
		r.Gw = s.Via.AsSlice()
	default:
		r.LinkIndex = bridge
		r.Scope = netlink.SCOPE_LINK
	}
	return r
}

// specOf is the inverse of routeSpec.netlink for routes of the cluster.
func specOf(r netlink.Route, bridge int) (routeSpec, bool) {
	dst, ok := netPrefix(r.Dst)
	if !ok {
		return routeSpec{}, false
	}
	if r.Type == unix.RTN_UNREACHABLE {
		return routeSpec{Dst: dst, Unreachable: true}, true
	}
	metric := 0
	if dst.Addr().Is6() {
		metric = ip6DefaultMetric
	}
	if r.LinkIndex != bridge || r.Type != unix.RTN_UNICAST || r.Priority != metric {
		return routeSpec{}, false
	}
	s := routeSpec{Dst: dst}
	if r.Gw != nil {
		gw, ok := netip.AddrFromSlice(r.Gw)
		if !ok {
			return routeSpec{}, false
		}
		s.Via = gw.Unmap()
	}
	return s, true
}

// netPrefix converts a *net.IPNet to an IPv4 or IPv6 netip.Prefix (not
// masked; an IPv4-mapped address becomes IPv4); false for nil, or when
// the mask does not fit the address (a 16-byte mask on an IPv4 address).
func netPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, bits := n.Mask.Size()
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

// prefixAddr converts an IPv4 or IPv6 prefix to a netlink address.
func prefixAddr(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{
		IP:   p.Addr().AsSlice(),
		Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
	}}
}

// describeRoute renders r like `ip route`, naming devices from links when
// known.
func describeRoute(r netlink.Route, links map[int]string) string {
	var b strings.Builder
	switch r.Type {
	case unix.RTN_UNICAST:
	case unix.RTN_UNREACHABLE:
		b.WriteString("unreachable ")
	case unix.RTN_BLACKHOLE:
		b.WriteString("blackhole ")
	case unix.RTN_PROHIBIT:
		b.WriteString("prohibit ")
	case unix.RTN_THROW:
		b.WriteString("throw ")
	case unix.RTN_LOCAL:
		b.WriteString("local ")
	case unix.RTN_BROADCAST:
		b.WriteString("broadcast ")
	default:
		fmt.Fprintf(&b, "type %d ", r.Type)
	}
	if pr, ok := netPrefix(r.Dst); ok && pr.Bits() > 0 {
		b.WriteString(pr.String())
	} else {
		b.WriteString("default")
	}
	if r.Gw != nil {
		fmt.Fprintf(&b, " via %s", r.Gw)
	}
	if r.LinkIndex != 0 {
		fmt.Fprintf(&b, " dev %s", nameOr(links, r.LinkIndex))
	}
	if r.Protocol != 0 {
		fmt.Fprintf(&b, " proto %d", r.Protocol)
	}
	if r.Priority != 0 {
		fmt.Fprintf(&b, " metric %d", r.Priority)
	}
	if r.Table != 0 && r.Table != unix.RT_TABLE_MAIN {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	return b.String()
}

// nameOr returns the name of link index i, or "#<i>" when unknown.
func nameOr(links map[int]string, i int) string {
	if name, ok := links[i]; ok {
		return name
	}
	if l, err := netlink.LinkByIndex(i); err == nil {
		return l.Attrs().Name
	}
	return fmt.Sprintf("#%d", i)
}

// listLinks lists the host's links, retrying an interrupted dump.
func listLinks() ([]netlink.Link, error) {
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	return links, nil
}

// retryDump calls dump until its result is not marked interrupted (the
// kernel's table changed during the dump), at most a few times.
func retryDump[T any](dump func() ([]T, error)) ([]T, error) {
	var err error
	for range 5 {
		var v []T
		if v, err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return nil, err
}

// isNotFound reports whether err says a link does not exist.
func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// isGone reports whether err says the thing to delete is already gone.
func isGone(err error) bool {
	return isNotFound(err) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT)
}
