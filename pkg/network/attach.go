package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NodeInterface is the name of a sandboxed node's end of its veth pair,
// inside the node's network namespace.
const NodeInterface = "eth0"

// AttachNode joins the network namespace of process pid to the cluster
// bridge as node i of plan p: a veth pair whose host end Names.HostVeth(i)
// is enslaved to the bridge and up, and whose peer is created directly in
// that namespace as NodeInterface with the node's IP/NodeCIDR.Bits(), up,
// next to lo (up) and a default route via BridgeIP, and rules that make
// the ServiceCIDR and the LoadBalancerCIDR unreachable for what arrives
// on NodeInterface (see serviceUnreachable). A dual-stack plan adds the
// IPv6 half (see configureNode6), whose IPv6 routes to the other nodes' pod
// CIDRs are those of the plan's nodes at the time of the call.
//
// It is idempotent: a host veth left from an earlier (partial) attempt is
// deleted first, taking its peer with it. On failure it removes the veth
// again. It errors when p is invalid (as Setup would report), when p has no
// node i, when node i is Local, when the
// bridge is missing (Setup has not run), when the namespace already has
// a NodeInterface of its own (wrapping unix.EEXIST), and, for a dual-stack
// plan, when IPv6 is disabled on NodeInterface (wrapping unix.EACCES).
func AttachNode(p Plan, i int, pid int) error {
	p = p.normalized()
	if err := p.validate(); err != nil {
		return fmt.Errorf("attach node %d: network plan of cluster %q: %w", i, p.Cluster, err)
	}
	n := NamesFor(p.Cluster)
	node, ok := p.node(i)
	switch {
	case !ok:
		return fmt.Errorf("attach node %d of cluster %q: the plan has no such node", i, p.Cluster)
	case node.Local:
		return fmt.Errorf("attach node %d of cluster %q: the node runs on the host, it has no namespace to attach", i, p.Cluster)
	case pid <= 0:
		return fmt.Errorf("attach node %d of cluster %q: invalid pid %d", i, p.Cluster, pid)
	}
	host := n.HostVeth(i)
	br, err := netlink.LinkByName(n.Bridge)
	if err != nil {
		return fmt.Errorf("attach node %d: cluster bridge %s (run Setup first): %w", i, n.Bridge, err)
	}
	if err := deleteLink(host); err != nil {
		return fmt.Errorf("attach node %d: remove stale veth: %w", i, err)
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: host, MTU: br.Attrs().MTU},
		PeerName:      NodeInterface,
		PeerNamespace: netlink.NsPid(pid),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("attach node %d: create veth %s: namespace of pid %d already has an %s, or %s exists: %w",
				i, host, pid, NodeInterface, host, err)
		}
		return fmt.Errorf("attach node %d: create veth %s with peer %s in the namespace of pid %d: %w",
			i, host, NodeInterface, pid, err)
	}
	if err := configureVeth(p, node, host, br, pid); err != nil {
		return errors.Join(fmt.Errorf("attach node %d: %w", i, err), deleteLink(host))
	}
	return nil
}

// configureVeth enslaves and raises the host end, then addresses and routes
// the peer inside the namespace of pid.
func configureVeth(p Plan, node NodeRoute, host string, br netlink.Link, pid int) error {
	l, err := netlink.LinkByName(host)
	if err != nil {
		return fmt.Errorf("look up veth %s: %w", host, err)
	}
	if err := netlink.LinkSetMaster(l, br); err != nil {
		return fmt.Errorf("enslave %s to %s: %w", host, br.Attrs().Name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", host, err)
	}

	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return fmt.Errorf("open network namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in namespace of pid %d: %w", pid, err)
	}
	defer h.Close()
	if err := configureNode(h, p, node); err != nil {
		return fmt.Errorf("in namespace of pid %d: %w", pid, err)
	}
	return nil
}

// configureNode addresses and routes NodeInterface and raises lo in the
// node's namespace, through h.
func configureNode(h *netlink.Handle, p Plan, node NodeRoute) error {
	eth, err := h.LinkByName(NodeInterface)
	if err != nil {
		return fmt.Errorf("look up %s: %w", NodeInterface, err)
	}
	addr := prefixAddr(netip.PrefixFrom(node.IP, p.NodeCIDR.Bits()))
	if err := h.AddrReplace(eth, addr); err != nil {
		return fmt.Errorf("add address %s to %s: %w", addr.IPNet, NodeInterface, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("set %s up: %w", NodeInterface, err)
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("look up lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	def := &netlink.Route{
		LinkIndex: eth.Attrs().Index,
		Dst:       &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
		Gw:        p.BridgeIP.AsSlice(),
		Protocol:  Protocol,
	}
	if err := h.RouteReplace(def); err != nil {
		return fmt.Errorf("add default route via %s: %w", p.BridgeIP, err)
	}
	if p.hasIPv6() {
		if err := configureNode6(h, p, node, eth); err != nil {
			return err
		}
	}
	for _, r := range serviceUnreachable(p) {
		if err := h.RuleAdd(r); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("add rule iif %s to %s unreachable: %w", NodeInterface, r.Dst, err)
		}
	}
	return nil
}

// configureNode6 gives NodeInterface (eth, up) the IPv6 half of plan p:
// node.IP6/NodeCIDR6.Bits() without duplicate address detection (usable
// at once), a default route via BridgeIP6, and a route to every other
// sandboxed node's PodCIDR6 via its IP6: the host does not forward IPv6,
// so nodes reach each other's pods over the bridge. A Local node's pods
// are left to the default route.
func configureNode6(h *netlink.Handle, p Plan, node NodeRoute, eth netlink.Link) error {
	addr := prefixAddr(netip.PrefixFrom(node.IP6, p.NodeCIDR6.Bits()))
	addr.Flags = unix.IFA_F_NODAD
	if err := h.AddrReplace(eth, addr); errors.Is(err, unix.EACCES) {
		return fmt.Errorf("add address %s to %s: IPv6 is disabled on it (net.ipv6.conf.%s.disable_ipv6 is 1): %w",
			addr.IPNet, NodeInterface, NodeInterface, err)
	} else if err != nil {
		return fmt.Errorf("add address %s to %s: %w", addr.IPNet, NodeInterface, err)
	}
	routes := []*netlink.Route{{
		LinkIndex: eth.Attrs().Index,
		Dst:       &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		Gw:        p.BridgeIP6.AsSlice(),
		Protocol:  Protocol,
	}}
	for _, o := range p.Nodes {
		if o.Index != node.Index && !o.Local {
			routes = append(routes, &netlink.Route{
				LinkIndex: eth.Attrs().Index,
				Dst:       prefixAddr(o.PodCIDR6).IPNet,
				Gw:        o.IP6.AsSlice(),
				Protocol:  Protocol,
			})
		}
	}
	for _, r := range routes {
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("add route %s via %s: %w", r.Dst, r.Gw, err)
		}
	}
	return nil
}

// serviceUnreachablePriority is the preference of serviceUnreachable's
// rules: before the main table's (32766), after the local table's (0).
const serviceUnreachablePriority = 100

// serviceUnreachable are the policy rules in a node's namespace that make
// a packet to the ServiceCIDR or the LoadBalancerCIDR that arrives on
// NodeInterface, from the host, and that kube-proxy's rules did not
// rewrite (before routing) fail with ICMP net unreachable: a LoadBalancer
// IP no Service holds, or any Service IP while kube-proxy has not written
// its rules. Without them the node would forward it back to the host,
// whose route for the range sends it to node 0 again, until its TTL runs
// out. They match only what is forwarded from NodeInterface: the node's
// own processes (hostNetwork pods) and its pods route Service IPs as
// before. The host's own connects do not wait for them (the kernel limits
// such ICMP errors to a few a second): it routes Service IPs only once
// node 0's kube-proxy has written its rules (see RouteServices). A
// dual-stack plan adds IPv6 rules for ServiceCIDR6 and LoadBalancerCIDR6.
func serviceUnreachable(p Plan) []*netlink.Rule {
	var out []*netlink.Rule
	for _, r := range []netip.Prefix{p.ServiceCIDR, p.LoadBalancerCIDR, p.ServiceCIDR6, p.LoadBalancerCIDR6} {
		if !r.IsValid() {
			continue
		}
		rule := netlink.NewRule()
		if r.Addr().Is6() {
			rule.Family = netlink.FAMILY_V6
		}
		rule.Priority = serviceUnreachablePriority
		rule.IifName = NodeInterface
		rule.Dst = prefixAddr(r).IPNet
		rule.Type = unix.RTN_UNREACHABLE
		rule.Protocol = uint8(Protocol)
		out = append(out, rule)
	}
	return out
}

// DetachNode removes host veth i of cluster, which takes its peer in the
// node's namespace with it. A missing veth is not an error.
func DetachNode(cluster string, i int) error {
	n := NamesFor(cluster)
	if err := deleteLink(n.HostVeth(i)); err != nil {
		return fmt.Errorf("detach node %d of cluster %q: %w", i, cluster, err)
	}
	return nil
}

// deleteLink deletes the host link called name; a missing link is not an
// error.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil && !isGone(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
