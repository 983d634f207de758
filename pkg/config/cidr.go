package config

import (
	"fmt"
	"math/big"
	"net/netip"
)

// Subnet returns the index-th subnet of length bits inside p (both IPv4 or
// both IPv6), counted from 0. It errors when bits is shorter than p's prefix
// or longer than the address, or index is past the last subnet.
func Subnet(p netip.Prefix, bits, index int) (netip.Prefix, error) {
	p = p.Masked()
	size := p.Addr().BitLen()
	if bits < p.Bits() || bits > size {
		return netip.Prefix{}, fmt.Errorf("cannot split %s into /%d subnets", p, bits)
	}
	if index < 0 || big.NewInt(int64(index)).Cmp(new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits()))) >= 0 {
		return netip.Prefix{}, fmt.Errorf("%s has no subnet #%d of size /%d", p, index, bits)
	}
	base := new(big.Int).SetBytes(p.Addr().AsSlice())
	base.Add(base, new(big.Int).Lsh(big.NewInt(int64(index)), uint(size-bits)))
	addr, _ := netip.AddrFromSlice(base.FillBytes(make([]byte, size/8)))
	return netip.PrefixFrom(addr, bits), nil
}

func mustSubnet(p netip.Prefix, bits, index int) netip.Prefix {
	s, err := Subnet(p, bits, index)
	if err != nil {
		panic(err) // callers pass constants proven valid
	}
	return s
}

// NthAddr returns the n-th address of p counted from its network address
// (n=1 is the first host address). It errors when n falls outside p.
func NthAddr(p netip.Prefix, n int) (netip.Addr, error) {
	s, err := Subnet(p, p.Addr().BitLen(), n)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s has no address #%d", p, n)
	}
	return s.Addr(), nil
}

// Overlaps reports whether a and b share any address.
func Overlaps(a, b netip.Prefix) bool { return a.Overlaps(b) }

// Network is the parsed, resolved address plan of a cluster. Build it with
// Config.Network after Resolve and Validate.
type Network struct {
	Node, Service, Cluster netip.Prefix
	// NodeMaskSize is the prefix length of each node's pod CIDR.
	NodeMaskSize int
}

// Network parses the node, service and cluster CIDRs. It errors if any is
// missing or invalid; Validate reports the same problems in detail.
func (c *Config) Network() (Network, error) {
	var n Network
	var err error
	if n.Node, err = netip.ParsePrefix(c.NodeCIDR); err != nil {
		return n, fmt.Errorf("node CIDR: %w", err)
	}
	if n.Service, err = netip.ParsePrefix(c.ServiceCIDR); err != nil {
		return n, fmt.Errorf("service CIDR: %w", err)
	}
	if n.Cluster, err = netip.ParsePrefix(c.ClusterCIDR); err != nil {
		return n, fmt.Errorf("cluster CIDR: %w", err)
	}
	n.Node, n.Service, n.Cluster = n.Node.Masked(), n.Service.Masked(), n.Cluster.Masked()
	n.NodeMaskSize = c.NodeCIDRMaskSize
	return n, nil
}

// BridgeIP is the host side of the cluster bridge: the node network's first
// host address. The control plane listens here.
func (n Network) BridgeIP() netip.Addr {
	a, _ := NthAddr(n.Node, 1)
	return a
}

// NodeIP is the address of node i (from 0) on the node network: host address i+2.
func (n Network) NodeIP(i int) (netip.Addr, error) { return NthAddr(n.Node, i+2) }

// PodCIDR is the pod CIDR of node i: the i-th /NodeMaskSize subnet of the cluster CIDR.
func (n Network) PodCIDR(i int) (netip.Prefix, error) { return Subnet(n.Cluster, n.NodeMaskSize, i) }

// KubernetesServiceIP is the ClusterIP of the default/kubernetes Service:
// the service CIDR's first host address, as the apiserver allocates it.
func (n Network) KubernetesServiceIP() netip.Addr {
	a, _ := NthAddr(n.Service, 1)
	return a
}

// DNSServiceIP is the ClusterIP kubernix gives CoreDNS: the service CIDR's
// tenth host address (kubeadm's convention).
func (n Network) DNSServiceIP() netip.Addr {
	a, _ := NthAddr(n.Service, 10)
	return a
}

// MaxNodes is how many nodes the plan has room for: the lesser of the pod
// CIDRs in the cluster CIDR and the node addresses in the node network.
func (n Network) MaxNodes() int {
	pods := 1 << min(30, max(0, n.NodeMaskSize-n.Cluster.Bits()))
	hosts := (1 << min(30, n.Node.Addr().BitLen()-n.Node.Bits())) - 3 // network, bridge, broadcast
	return max(0, min(pods, hosts))
}
