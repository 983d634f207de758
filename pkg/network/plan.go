package network

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Plan is the host-side network of one cluster, as Setup and AttachNode
// build it. The fields without a 6 are IPv4 and required; the ...6 fields
// are the IPv6 half of a dual-stack cluster, all zero for none (then the
// network is exactly the IPv4 one). Setup masks every prefix.
type Plan struct {
	// Cluster is the cluster name, a DNS label (e.g. "kubernix"); NamesFor
	// derives the interface and chain names from it.
	Cluster string
	// NodeCIDR is the node network on the cluster bridge, e.g. 10.10.0.0/24.
	NodeCIDR netip.Prefix
	// BridgeIP is the host's address on the bridge, inside NodeCIDR (its
	// first host address, e.g. 10.10.0.1); the bridge gets
	// BridgeIP/NodeCIDR.Bits().
	BridgeIP netip.Addr
	// ClusterCIDR is the pod range, e.g. 10.10.128.0/17.
	ClusterCIDR netip.Prefix
	// ServiceCIDR is the Service ClusterIP range, e.g. 10.10.16.0/20.
	ServiceCIDR netip.Prefix
	// LoadBalancerCIDR is the pool of LoadBalancer Service IPs, e.g.
	// 10.10.32.0/20, routed like ServiceCIDR (kube-proxy serves both);
	// the zero Prefix for none.
	LoadBalancerCIDR netip.Prefix
	// Whole is the whole cluster range the three CIDRs were carved from,
	// e.g. 10.10.0.0/16. It may be the zero Prefix when the user gave the
	// three CIDRs separately.
	Whole netip.Prefix
	// Nodes are the cluster's nodes and their pod CIDRs.
	Nodes []NodeRoute
	// ServiceVia is where host traffic to ServiceCIDR (and
	// LoadBalancerCIDR) goes: a node IP
	// (container executor: kube-proxy's rules live in that node), or the
	// zero Addr for "dev bridge" (process executor: kube-proxy's rules live
	// in the host and rewrite the packet before it leaves).
	ServiceVia netip.Addr

	// NodeCIDR6 is the IPv6 node network on the cluster bridge, e.g.
	// fd12:3456:789a::/64; the zero Prefix for a cluster without IPv6,
	// and then every other ...6 field (of the nodes too) must be zero.
	NodeCIDR6 netip.Prefix
	// BridgeIP6 is the host's IPv6 address on the bridge, a host address
	// of NodeCIDR6 (its first, e.g. fd12:3456:789a::1); the bridge gets
	// BridgeIP6/NodeCIDR6.Bits().
	BridgeIP6 netip.Addr
	// ClusterCIDR6 is the IPv6 pod range, e.g. fd12:3456:789a:8000::/49.
	ClusterCIDR6 netip.Prefix
	// ServiceCIDR6 is the IPv6 Service ClusterIP range, e.g.
	// fd12:3456:789a:1::/112.
	ServiceCIDR6 netip.Prefix
	// LoadBalancerCIDR6 is the IPv6 pool of LoadBalancer Service IPs, e.g.
	// fd12:3456:789a:2::/112; the zero Prefix for none.
	LoadBalancerCIDR6 netip.Prefix
	// Whole6 is the whole IPv6 cluster range, e.g. fd12:3456:789a::/48; it
	// may be the zero Prefix, as Whole may.
	Whole6 netip.Prefix
	// ServiceVia6 is ServiceVia for IPv6: node 0's IP6, or the zero Addr
	// for "dev bridge".
	ServiceVia6 netip.Addr
}

// NodeRoute is one node of a Plan.
type NodeRoute struct {
	// Index is the node's number, from 0; it names the host veth.
	Index int
	// IP is the node's address on the node network, e.g. 10.10.0.2 for
	// node 0 in a sandbox, or BridgeIP for a Local node.
	IP netip.Addr
	// PodCIDR is the node's pod range inside ClusterCIDR, e.g. 10.10.128.0/24.
	PodCIDR netip.Prefix
	// Local marks a node that is the host itself (process executor): its
	// pods sit on the host's CNI bridge, which the CNI plugin routes, so
	// Setup adds no route via a node IP for it.
	Local bool
	// IP6 is the node's IPv6 address on the node network, e.g.
	// fd12:3456:789a::2, or BridgeIP6 (or zero) for a Local node; zero
	// when the plan has no IPv6.
	IP6 netip.Addr
	// PodCIDR6 is the node's IPv6 pod range inside ClusterCIDR6, e.g.
	// fd12:3456:789a:8000::/64; zero when the plan has no IPv6.
	PodCIDR6 netip.Prefix
}

// normalized returns p with every prefix masked.
func (p Plan) normalized() Plan {
	p.NodeCIDR = p.NodeCIDR.Masked()
	p.ClusterCIDR = p.ClusterCIDR.Masked()
	p.ServiceCIDR = p.ServiceCIDR.Masked()
	p.LoadBalancerCIDR = p.LoadBalancerCIDR.Masked()
	p.Whole = p.Whole.Masked()
	p.NodeCIDR6 = p.NodeCIDR6.Masked()
	p.ClusterCIDR6 = p.ClusterCIDR6.Masked()
	p.ServiceCIDR6 = p.ServiceCIDR6.Masked()
	p.LoadBalancerCIDR6 = p.LoadBalancerCIDR6.Masked()
	p.Whole6 = p.Whole6.Masked()
	nodes := make([]NodeRoute, len(p.Nodes))
	for i, n := range p.Nodes {
		n.PodCIDR = n.PodCIDR.Masked()
		n.PodCIDR6 = n.PodCIDR6.Masked()
		nodes[i] = n
	}
	p.Nodes = nodes
	return p
}

// node returns the node of p with Index i.
func (p Plan) node(i int) (NodeRoute, bool) {
	for _, n := range p.Nodes {
		if n.Index == i {
			return n, true
		}
	}
	return NodeRoute{}, false
}

// hasIPv6 reports whether p has an IPv6 half (NodeCIDR6 is set).
func (p Plan) hasIPv6() bool { return p.NodeCIDR6.IsValid() }

// half is one address family's part of a Plan (its IPv4 fields, or its
// ...6 fields), so validation and routes are written once for both.
type half struct {
	// v6 marks the IPv6 half.
	v6 bool
	// The plan's prefixes and addresses of this family.
	nodeCIDR, clusterCIDR, serviceCIDR, loadBalancerCIDR, whole netip.Prefix
	bridgeIP, serviceVia                                        netip.Addr
	// nodes are the plan's nodes, with their IP and pod CIDR of this
	// family.
	nodes []halfNode
}

// halfNode is a NodeRoute in one family.
type halfNode struct {
	index   int
	ip      netip.Addr
	podCIDR netip.Prefix
	local   bool
}

// v4 is the IPv4 half of p.
func (p Plan) v4() half {
	h := half{nodeCIDR: p.NodeCIDR, clusterCIDR: p.ClusterCIDR, serviceCIDR: p.ServiceCIDR,
		loadBalancerCIDR: p.LoadBalancerCIDR, whole: p.Whole, bridgeIP: p.BridgeIP, serviceVia: p.ServiceVia}
	for _, n := range p.Nodes {
		h.nodes = append(h.nodes, halfNode{index: n.Index, ip: n.IP, podCIDR: n.PodCIDR, local: n.Local})
	}
	return h
}

// v6 is the IPv6 half of p, meaningful when p.hasIPv6().
func (p Plan) v6() half {
	h := half{v6: true, nodeCIDR: p.NodeCIDR6, clusterCIDR: p.ClusterCIDR6, serviceCIDR: p.ServiceCIDR6,
		loadBalancerCIDR: p.LoadBalancerCIDR6, whole: p.Whole6, bridgeIP: p.BridgeIP6, serviceVia: p.ServiceVia6}
	for _, n := range p.Nodes {
		h.nodes = append(h.nodes, halfNode{index: n.Index, ip: n.IP6, podCIDR: n.PodCIDR6, local: n.Local})
	}
	return h
}

// halves are the halves of p: IPv4, then IPv6 when p has it.
func (p Plan) halves() []half {
	if p.hasIPv6() {
		return []half{p.v4(), p.v6()}
	}
	return []half{p.v4()}
}

// validate reports every problem of a normalized plan at once.
func (p Plan) validate() error {
	var errs problems
	if msgs := validation.IsDNS1123Label(p.Cluster); len(msgs) > 0 {
		errs.add("cluster name %q: %s", p.Cluster, strings.Join(msgs, "; "))
	}
	p.v4().validate(&errs)
	if p.hasIPv6() {
		p.v6().validate(&errs)
	} else {
		p.validateNo6(&errs)
	}
	return errors.Join(errs...)
}

// validateNo6 reports the IPv6 fields set in a plan without NodeCIDR6.
func (p Plan) validateNo6(errs *problems) {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"BridgeIP6", p.BridgeIP6.IsValid()}, {"ClusterCIDR6", p.ClusterCIDR6.IsValid()},
		{"ServiceCIDR6", p.ServiceCIDR6.IsValid()}, {"LoadBalancerCIDR6", p.LoadBalancerCIDR6.IsValid()},
		{"Whole6", p.Whole6.IsValid()}, {"ServiceVia6", p.ServiceVia6.IsValid()},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	for _, n := range p.Nodes {
		if n.IP6.IsValid() || n.PodCIDR6.IsValid() {
			set = append(set, fmt.Sprintf("node %d IP6/PodCIDR6", n.Index))
		}
	}
	if len(set) > 0 {
		errs.add("no IPv6 node CIDR, but IPv6 fields are set: %s", strings.Join(set, ", "))
	}
}

// validate reports the problems of one half: its prefixes, bridge
// address, service gateway and nodes.
func (h half) validate(errs *problems) {
	if !h.validatePrefixes(errs) {
		return
	}
	if h.nodeCIDR.Bits() > h.nodeCIDR.Addr().BitLen()-2 {
		errs.add("%s %s has no room for the bridge and a node", h.what("node CIDR"), h.nodeCIDR)
	}
	if !h.nodeCIDR.Contains(h.bridgeIP) || !isHost(h.nodeCIDR, h.bridgeIP) {
		errs.add("%s %s is not a host address of %s %s", h.what("bridge IP"), h.bridgeIP, h.what("node CIDR"), h.nodeCIDR)
	}
	if h.serviceVia.IsValid() && (!h.nodeCIDR.Contains(h.serviceVia) || h.serviceVia == h.bridgeIP) {
		errs.add("%s %s: not a node address in %s %s", h.what("service route via"), h.serviceVia, h.what("node CIDR"), h.nodeCIDR)
	}
	h.validateNodes(errs)
}

// what names a range or field of h in messages: "node CIDR" for IPv4,
// "IPv6 node CIDR" for IPv6 ("IP" becoming "address").
func (h half) what(s string) string {
	if !h.v6 {
		return s
	}
	return "IPv6 " + strings.Replace(s, "IP", "address", 1)
}

// family is "IPv4" or "IPv6".
func (h half) family() string {
	if h.v6 {
		return "IPv6"
	}
	return "IPv4"
}

// inFamily reports whether pr is a valid prefix of h's family.
func (h half) inFamily(pr netip.Prefix) bool {
	if h.v6 {
		return pr.IsValid() && pr.Addr().Is6() && !pr.Addr().Is4In6()
	}
	return pr.IsValid() && pr.Addr().Is4()
}

// problems collects validation errors.
type problems []error

func (e *problems) add(format string, args ...any) { *e = append(*e, fmt.Errorf(format, args...)) }

// namedPrefix is one of a plan's ranges, with what it is for messages.
type namedPrefix struct {
	what string
	pr   netip.Prefix
}

// validatePrefixes checks that the node, cluster and service CIDRs (and the
// whole range and the LoadBalancer CIDR, when set) are prefixes of h's
// family and that the node, cluster, service and LoadBalancer CIDRs do not
// overlap. It returns false when one of the three is not a prefix: the
// checks that use them would only repeat that.
func (h half) validatePrefixes(errs *problems) bool {
	check := func(what string, pr netip.Prefix) bool {
		if !h.inFamily(pr) {
			errs.add("%s %q is not an %s prefix", what, pr, h.family())
			return false
		}
		return true
	}
	named := []namedPrefix{{h.what("node CIDR"), h.nodeCIDR}, {h.what("cluster CIDR"), h.clusterCIDR}, {h.what("service CIDR"), h.serviceCIDR}}
	ok := true
	for _, c := range named {
		ok = check(c.what, c.pr) && ok
	}
	if h.whole.IsValid() {
		check(h.what("whole cluster range"), h.whole)
	}
	if h.loadBalancerCIDR.IsValid() && check(h.what("LoadBalancer CIDR"), h.loadBalancerCIDR) {
		named = append(named, namedPrefix{h.what("LoadBalancer CIDR"), h.loadBalancerCIDR})
	}
	if !ok {
		return false
	}
	for i := range named {
		for _, b := range named[i+1:] {
			if named[i].pr.Overlaps(b.pr) {
				errs.add("%s %s overlaps %s %s", named[i].what, named[i].pr, b.what, b.pr)
			}
		}
	}
	return true
}

// validateNodes checks the nodes' IPs and pod CIDRs of h (and, in the IPv4
// half, their indexes), alone and against each other.
func (h half) validateNodes(errs *problems) {
	seen := map[int]bool{}
	for j, n := range h.nodes {
		if !h.v6 {
			if n.index < 0 || n.index > MaxNodeIndex {
				errs.add("node index %d is outside 0..%d", n.index, MaxNodeIndex)
			}
			if seen[n.index] {
				errs.add("node index %d appears twice", n.index)
			}
			seen[n.index] = true
		}
		switch {
		case n.local && n.ip.IsValid() && n.ip != h.bridgeIP:
			errs.add("node %d is local but its %s %s is not the %s %s", n.index, h.what("IP"), n.ip, h.what("bridge IP"), h.bridgeIP)
		case !n.local && (!h.nodeCIDR.Contains(n.ip) || !isHost(h.nodeCIDR, n.ip) || n.ip == h.bridgeIP):
			errs.add("node %d %s %s is not a free host address of %s %s", n.index, h.what("IP"), n.ip, h.what("node CIDR"), h.nodeCIDR)
		}
		if !n.podCIDR.IsValid() || !contains(h.clusterCIDR, n.podCIDR) {
			errs.add("node %d %s %s is not inside %s %s", n.index, h.what("pod CIDR"), n.podCIDR, h.what("cluster CIDR"), h.clusterCIDR)
		}
		for _, o := range h.nodes[j+1:] {
			if n.podCIDR.IsValid() && n.podCIDR.Overlaps(o.podCIDR) {
				errs.add("%s of nodes %d (%s) and %d (%s) overlap", h.what("pod CIDRs"), n.index, n.podCIDR, o.index, o.podCIDR)
			}
			if !n.local && n.ip == o.ip {
				errs.add("nodes %d and %d share %s %s", n.index, o.index, h.what("IP"), n.ip)
			}
		}
	}
}

// isHost reports whether a may be a host's address in the masked prefix
// p: not its network address (in IPv6 the Subnet-Router anycast address)
// nor its IPv4 broadcast address. Prefixes of /31 and /32 (/127, /128)
// have no such addresses.
func isHost(p netip.Prefix, a netip.Addr) bool {
	if p.Bits() >= p.Addr().BitLen()-1 {
		return true
	}
	if p.Addr().Is6() {
		return a != p.Addr()
	}
	last := lastAddr(p)
	return a != p.Addr() && a != last
}

// lastAddr is the highest address of the masked IPv4 prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// contains reports whether prefix inner lies entirely inside outer.
func contains(outer, inner netip.Prefix) bool {
	return outer.IsValid() && inner.IsValid() && outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// clusterRanges is the smallest list of IPv4 prefixes that covers every
// IPv4 cluster address of a normalized plan (see half.clusterRanges).
func (p Plan) clusterRanges() []netip.Prefix { return p.v4().clusterRanges() }

// clusterRanges6 is clusterRanges for IPv6; nil when p has no IPv6.
func (p Plan) clusterRanges6() []netip.Prefix {
	if !p.hasIPv6() {
		return nil
	}
	return p.v6().clusterRanges()
}

// clusterRanges is the smallest list of prefixes that covers every
// cluster address of h: the whole range (when set) plus whichever of the
// node, service, cluster and LoadBalancer CIDRs lie outside it.
func (h half) clusterRanges() []netip.Prefix {
	var out []netip.Prefix
	if h.whole.IsValid() {
		out = append(out, h.whole)
	}
	for _, c := range []netip.Prefix{h.nodeCIDR, h.serviceCIDR, h.clusterCIDR, h.loadBalancerCIDR} {
		if c.IsValid() && !contains(h.whole, c) {
			out = append(out, c)
		}
	}
	return out
}

// routeSpec is one host route Setup maintains, independent of link
// indexes; IPv4 or IPv6.
type routeSpec struct {
	Dst netip.Prefix
	// Via is the gateway; zero for a device route or an unreachable route.
	Via netip.Addr
	// Unreachable marks an `unreachable` route (no device) with the
	// cluster's high metric; otherwise the route goes out the bridge.
	Unreachable bool
}

func (r routeSpec) String() string {
	switch {
	case r.Unreachable:
		return "unreachable " + r.Dst.String()
	case r.Via.IsValid():
		return r.Dst.String() + " via " + r.Via.String()
	default:
		return r.Dst.String() + " dev bridge"
	}
}

// routes lists the host routes Setup makes for a normalized plan, IPv4
// then IPv6: each non-local node's pod CIDR via its node IP, and an
// unreachable route over every cluster range. The unreachable routes are
// less specific than (or, for an equal prefix, carry a higher metric than)
// every real route, so they only catch addresses nothing else routes, and
// such a packet never leaves by the default route. The service routes
// come later (see serviceRoutes).
func (p Plan) routes() []routeSpec {
	var out []routeSpec
	for _, h := range p.halves() {
		for _, n := range h.nodes {
			if !n.local {
				out = append(out, routeSpec{Dst: n.podCIDR, Via: n.ip})
			}
		}
		for _, r := range h.clusterRanges() {
			out = append(out, routeSpec{Dst: r, Unreachable: true})
		}
	}
	return out
}

// serviceRoutes lists the host routes RouteServices makes for a normalized
// plan, IPv4 then IPv6: the service CIDR and the LoadBalancer CIDR via
// ServiceVia (ServiceVia6), or on the bridge.
func (p Plan) serviceRoutes() []routeSpec {
	var out []routeSpec
	for _, h := range p.halves() {
		out = append(out, routeSpec{Dst: h.serviceCIDR, Via: h.serviceVia})
		if h.loadBalancerCIDR.IsValid() {
			out = append(out, routeSpec{Dst: h.loadBalancerCIDR, Via: h.serviceVia})
		}
	}
	return out
}

// masqueradeSources are the source ranges whose traffic is masqueraded when
// it leaves the cluster ranges: pods, and the node sandboxes themselves.
func (p Plan) masqueradeSources() []netip.Prefix {
	return []netip.Prefix{p.ClusterCIDR, p.NodeCIDR}
}
