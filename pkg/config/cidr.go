package config

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
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
	// LoadBalancer is the pool of LoadBalancer Service IPs.
	LoadBalancer netip.Prefix
	// NodeMaskSize is the prefix length of each node's pod CIDR.
	NodeMaskSize int
}

// Network parses the node, service, cluster and LoadBalancer CIDRs. It errors if any is
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
	if n.LoadBalancer, err = netip.ParsePrefix(c.LoadBalancerCIDR); err != nil {
		return n, fmt.Errorf("LoadBalancer CIDR: %w", err)
	}
	n.Node, n.Service, n.Cluster = n.Node.Masked(), n.Service.Masked(), n.Cluster.Masked()
	n.LoadBalancer = n.LoadBalancer.Masked()
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

// PrivateRanges are the IPv4 ranges a cluster's CIDRs must lie in: the
// private ranges of RFC 1918 (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)
// and the shared address space of RFC 6598 (100.64.0.0/10), which no
// internet host uses either; Kubernetes distributions use it for pods and
// Services, and a host whose VPN (Tailscale) or carrier-grade NAT uses part
// of it is caught by the host check, like a LAN in the RFC 1918 ranges.
// Any other range (8.8.0.0/16, link-local 169.254.0.0/16, 0.0.0.0/4,
// multicast) would shadow hosts or protocols the machine needs.
var PrivateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
}

// IsPrivate reports whether p lies entirely inside one of PrivateRanges.
func IsPrivate(p netip.Prefix) bool {
	for _, r := range PrivateRanges {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// maxFreeCandidates bounds the subnets FreeRange tries per private range.
const maxFreeCandidates = 1 << 16

// FreeRange returns a prefix of length bits inside PrivateRanges that
// overlaps none of taken, trying 10.0.0.0/8 first, from the subnet that
// holds DefaultCIDR's address on (wrapping around), then the other ranges
// in order; false when there is none (or bits is not 8..30).
func FreeRange(bits int, taken []netip.Prefix) (netip.Prefix, bool) {
	if bits < 8 || bits > 30 {
		return netip.Prefix{}, false
	}
	start := netip.MustParsePrefix(DefaultCIDR).Addr()
	for _, r := range PrivateRanges {
		if bits < r.Bits() {
			continue
		}
		n := 1 << min(bits-r.Bits(), 30)
		first := 0
		if r.Contains(start) {
			p, _ := start.Prefix(bits)
			first = int(addrIndex(r, p.Addr(), bits))
		}
		for i := range min(n, maxFreeCandidates) {
			cand := mustSubnet(r, bits, (first+i)%n)
			if !slices.ContainsFunc(taken, cand.Overlaps) {
				return cand, true
			}
		}
	}
	return netip.Prefix{}, false
}

// addrIndex is the index of the /bits subnet of the IPv4 prefix r that
// holds a.
func addrIndex(r netip.Prefix, a netip.Addr, bits int) uint32 {
	b, base := a.As4(), r.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	w := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	return (v - w) >> (32 - bits)
}

// RangeKeys are the toml keys of the settings that place a cluster's
// addresses, in field order; each is also a flag, with "-" for "_"
// (--cidr, --node-cidr, --service-cidr, --cluster-cidr,
// --loadbalancer-cidr).
var RangeKeys = []string{"cidr", "node_cidr", "service_cidr", "cluster_cidr", "loadbalancer_cidr"}

// ranges are pointers to c's fields of RangeKeys, in that order.
func (c *Config) ranges() []*string {
	return []*string{&c.CIDR, &c.NodeCIDR, &c.ServiceCIDR, &c.ClusterCIDR, &c.LoadBalancerCIDR}
}

// Ranges returns c's address-range settings, RangeKeys to their values
// ("" when unset).
func (c Config) Ranges() map[string]string {
	out := make(map[string]string, len(RangeKeys))
	for i, p := range c.ranges() {
		out[RangeKeys[i]] = *p
	}
	return out
}

// WithRangesOf returns c with the address ranges (RangeKeys) of other.
func (c Config) WithRangesOf(other Config) Config {
	theirs := other.ranges()
	for i, p := range c.ranges() {
		*p = *theirs[i]
	}
	return c
}

// WithCIDR returns c with CIDR whole and the ranges Resolve derives from
// it (node network, service CIDR, cluster CIDR, LoadBalancer pool)
// derived again from whole.
func (c Config) WithCIDR(whole netip.Prefix) Config {
	for _, p := range c.ranges() {
		*p = ""
	}
	c.CIDR = whole.String()
	c.Resolve()
	return c
}
