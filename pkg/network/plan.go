package network

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Plan is the host-side network of one cluster, as Setup and AttachNode
// build it. All prefixes are IPv4; Setup masks them.
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
}

// normalized returns p with every prefix masked.
func (p Plan) normalized() Plan {
	p.NodeCIDR = p.NodeCIDR.Masked()
	p.ClusterCIDR = p.ClusterCIDR.Masked()
	p.ServiceCIDR = p.ServiceCIDR.Masked()
	p.LoadBalancerCIDR = p.LoadBalancerCIDR.Masked()
	p.Whole = p.Whole.Masked()
	nodes := make([]NodeRoute, len(p.Nodes))
	for i, n := range p.Nodes {
		n.PodCIDR = n.PodCIDR.Masked()
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

// validate reports every problem of a normalized plan at once.
func (p Plan) validate() error {
	var errs problems
	if msgs := validation.IsDNS1123Label(p.Cluster); len(msgs) > 0 {
		errs.add("cluster name %q: %s", p.Cluster, strings.Join(msgs, "; "))
	}
	if !p.validatePrefixes(&errs) {
		return errors.Join(errs...)
	}
	if p.NodeCIDR.Bits() > 30 {
		errs.add("node CIDR %s has no room for the bridge and a node", p.NodeCIDR)
	}
	if !p.NodeCIDR.Contains(p.BridgeIP) || !isHost(p.NodeCIDR, p.BridgeIP) {
		errs.add("bridge IP %s is not a host address of node CIDR %s", p.BridgeIP, p.NodeCIDR)
	}
	if p.ServiceVia.IsValid() && (!p.NodeCIDR.Contains(p.ServiceVia) || p.ServiceVia == p.BridgeIP) {
		errs.add("service route via %s: not a node address in node CIDR %s", p.ServiceVia, p.NodeCIDR)
	}
	p.validateNodes(&errs)
	return errors.Join(errs...)
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
// whole range and the LoadBalancer CIDR, when set) are IPv4 prefixes and
// that the node, cluster, service and LoadBalancer CIDRs do not overlap. It returns false when one of the three is not a prefix: the
// checks that use them would only repeat that.
func (p Plan) validatePrefixes(errs *problems) bool {
	v4 := func(what string, pr netip.Prefix) bool {
		if !pr.IsValid() || !pr.Addr().Is4() {
			errs.add("%s %q is not an IPv4 prefix", what, pr)
			return false
		}
		return true
	}
	named := []namedPrefix{{"node CIDR", p.NodeCIDR}, {"cluster CIDR", p.ClusterCIDR}, {"service CIDR", p.ServiceCIDR}}
	ok := true
	for _, c := range named {
		ok = v4(c.what, c.pr) && ok
	}
	if p.Whole.IsValid() {
		v4("whole cluster range", p.Whole)
	}
	if p.LoadBalancerCIDR.IsValid() && v4("LoadBalancer CIDR", p.LoadBalancerCIDR) {
		named = append(named, namedPrefix{"LoadBalancer CIDR", p.LoadBalancerCIDR})
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

// validateNodes checks the nodes' indexes, IPs and pod CIDRs, alone and
// against each other.
func (p Plan) validateNodes(errs *problems) {
	seen := map[int]bool{}
	for j, n := range p.Nodes {
		if n.Index < 0 || n.Index > MaxNodeIndex {
			errs.add("node index %d is outside 0..%d", n.Index, MaxNodeIndex)
		}
		if seen[n.Index] {
			errs.add("node index %d appears twice", n.Index)
		}
		seen[n.Index] = true
		switch {
		case n.Local && n.IP.IsValid() && n.IP != p.BridgeIP:
			errs.add("node %d is local but its IP %s is not the bridge IP %s", n.Index, n.IP, p.BridgeIP)
		case !n.Local && (!p.NodeCIDR.Contains(n.IP) || !isHost(p.NodeCIDR, n.IP) || n.IP == p.BridgeIP):
			errs.add("node %d IP %s is not a free host address of node CIDR %s", n.Index, n.IP, p.NodeCIDR)
		}
		if !n.PodCIDR.IsValid() || !contains(p.ClusterCIDR, n.PodCIDR) {
			errs.add("node %d pod CIDR %s is not inside cluster CIDR %s", n.Index, n.PodCIDR, p.ClusterCIDR)
		}
		for _, o := range p.Nodes[j+1:] {
			if n.PodCIDR.IsValid() && n.PodCIDR.Overlaps(o.PodCIDR) {
				errs.add("pod CIDRs of nodes %d (%s) and %d (%s) overlap", n.Index, n.PodCIDR, o.Index, o.PodCIDR)
			}
			if !n.Local && n.IP == o.IP {
				errs.add("nodes %d and %d share IP %s", n.Index, o.Index, n.IP)
			}
		}
	}
}

// isHost reports whether a is neither the network nor the broadcast address
// of the masked IPv4 prefix p (prefixes of /31 and /32 have no such addresses).
func isHost(p netip.Prefix, a netip.Addr) bool {
	if p.Bits() >= 31 {
		return true
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

// clusterRanges is the smallest list of prefixes that covers every cluster
// address of a normalized plan: Whole (when set) plus whichever of the node,
// service, cluster and LoadBalancer CIDRs lie outside it.
func (p Plan) clusterRanges() []netip.Prefix {
	var out []netip.Prefix
	if p.Whole.IsValid() {
		out = append(out, p.Whole)
	}
	for _, c := range []netip.Prefix{p.NodeCIDR, p.ServiceCIDR, p.ClusterCIDR, p.LoadBalancerCIDR} {
		if c.IsValid() && !contains(p.Whole, c) {
			out = append(out, c)
		}
	}
	return out
}

// routeSpec is one host route Setup maintains, independent of link indexes.
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

// routes lists the host routes Setup makes for a normalized plan: each
// non-local node's pod CIDR via its node IP, and an unreachable route over
// every cluster range. The unreachable routes are less specific than (or,
// for an equal prefix, carry a higher metric than) every real route, so
// they only catch addresses nothing else routes, and such a packet never
// leaves by the default route. The service routes come later (see
// serviceRoutes).
func (p Plan) routes() []routeSpec {
	var out []routeSpec
	for _, n := range p.Nodes {
		if !n.Local {
			out = append(out, routeSpec{Dst: n.PodCIDR, Via: n.IP})
		}
	}
	for _, r := range p.clusterRanges() {
		out = append(out, routeSpec{Dst: r, Unreachable: true})
	}
	return out
}

// serviceRoutes lists the host routes RouteServices makes for a normalized
// plan: the service CIDR and the LoadBalancer CIDR via ServiceVia (or on
// the bridge).
func (p Plan) serviceRoutes() []routeSpec {
	out := []routeSpec{{Dst: p.ServiceCIDR, Via: p.ServiceVia}}
	if p.LoadBalancerCIDR.IsValid() {
		out = append(out, routeSpec{Dst: p.LoadBalancerCIDR, Via: p.ServiceVia})
	}
	return out
}

// masqueradeSources are the source ranges whose traffic is masqueraded when
// it leaves the cluster ranges: pods, and the node sandboxes themselves.
func (p Plan) masqueradeSources() []netip.Prefix {
	return []netip.Prefix{p.ClusterCIDR, p.NodeCIDR}
}
