package config

import (
	"crypto/sha256"
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
	// Family is the cluster's IP family (Config.IPFamily): IPFamilyIPv4,
	// IPFamilyIPv6 or IPFamilyDual.
	Family string
	// Node, Service, Cluster and LoadBalancer are the IPv4 node network,
	// service CIDR, pod range and LoadBalancer pool. The node network is
	// used in every family; the other three only when Family has IPv4.
	Node, Service, Cluster netip.Prefix
	// LoadBalancer is the pool of LoadBalancer Service IPs.
	LoadBalancer netip.Prefix
	// NodeMaskSize is the prefix length of each node's pod CIDR.
	NodeMaskSize int
	// Whole6 is the IPv6 range (Config.CIDR6) the IPv6 ranges below are
	// carved from (see Config.Network); all are the zero Prefix when
	// Family has no IPv6.
	Whole6 netip.Prefix
	// Node6 is the IPv6 node network: Whole6's first /64.
	Node6 netip.Prefix
	// Service6 is the IPv6 service CIDR: the first /112 of Whole6's
	// second /64 (kube-apiserver takes IPv6 service ranges of /108 or
	// smaller).
	Service6 netip.Prefix
	// LoadBalancer6 is the IPv6 LoadBalancer pool: the first /112 of
	// Whole6's third /64.
	LoadBalancer6 netip.Prefix
	// Cluster6 is the IPv6 pod range: Whole6's upper half.
	Cluster6 netip.Prefix
	// NodeMaskSize6 is the prefix length of each node's IPv6 pod CIDR:
	// NodeMaskSize6Default.
	NodeMaskSize6 int
}

// NodeMaskSize6Default is the prefix length of each node's IPv6 pod CIDR,
// kube-controller-manager's --node-cidr-mask-size-ipv6 default.
const NodeMaskSize6Default = 64

// ULARange is the IPv6 unique local address range (RFC 4193) a cluster's
// IPv6 range must lie in: like the IPv4 PrivateRanges, no internet host
// uses it.
var ULARange = netip.MustParsePrefix("fc00::/7")

// DefaultCIDR6 is the IPv6 range of a cluster named name that sets none:
// a /48 of fd00::/8 whose 40-bit global ID (RFC 4193 section 3.2) is the
// first 5 bytes of the SHA-256 of the name, so clusters of different
// names get different ranges and a cluster keeps its range across runs.
func DefaultCIDR6(name string) netip.Prefix {
	sum := sha256.Sum256([]byte("kubernix/" + name))
	var a [16]byte
	a[0] = 0xfd
	copy(a[1:6], sum[:5])
	return netip.PrefixFrom(netip.AddrFrom16(a), 48)
}

// HasIPv4 reports whether a cluster of family has IPv4 pods and Services.
func HasIPv4(family string) bool { return family != IPFamilyIPv6 }

// HasIPv6 reports whether a cluster of family has IPv6 pods and Services.
func HasIPv6(family string) bool { return family == IPFamilyIPv6 || family == IPFamilyDual }

// resolveCIDR6 sets CIDR6 to DefaultCIDR6 when the family has IPv6 and
// none is set.
func (c *Config) resolveCIDR6() {
	if c.CIDR6 == "" && HasIPv6(c.IPFamily) && c.Name != "" {
		c.CIDR6 = DefaultCIDR6(c.Name).String()
	}
}

// split6 carves the IPv6 ranges of n from whole, a masked IPv6 prefix of
// /32 to /56 (Validate checks it).
func (n *Network) split6(whole netip.Prefix) error {
	var err error
	n.Whole6 = whole
	n.NodeMaskSize6 = NodeMaskSize6Default
	if n.Node6, err = Subnet(whole, 64, 0); err != nil {
		return fmt.Errorf("IPv6 node network: %w", err)
	}
	for i, p := range []*netip.Prefix{&n.Service6, &n.LoadBalancer6} {
		if *p, err = Subnet(whole, 64, i+1); err != nil {
			return fmt.Errorf("IPv6 ranges: %w", err)
		}
		*p = netip.PrefixFrom(p.Addr(), 112)
	}
	if n.Cluster6, err = Subnet(whole, whole.Bits()+1, 1); err != nil {
		return fmt.Errorf("IPv6 pod range: %w", err)
	}
	return nil
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
	n.Family = c.IPFamily
	if n.Family == "" {
		n.Family = IPFamilyIPv4
	}
	if !HasIPv6(n.Family) {
		return n, nil
	}
	whole6, err := netip.ParsePrefix(c.CIDR6)
	if err != nil || !whole6.Addr().Is6() || whole6.Addr().Is4In6() || whole6.Bits() < 32 || whole6.Bits() > 56 {
		return n, fmt.Errorf("IPv6 range %q: not an IPv6 prefix of /32 to /56", c.CIDR6)
	}
	return n, n.split6(whole6.Masked())
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
// the primary service CIDR's first host address, as the apiserver allocates it.
func (n Network) KubernetesServiceIP() netip.Addr {
	a, _ := NthAddr(n.ServiceCIDRs()[0], 1)
	return a
}

// DNSServiceIP is the ClusterIP kubernix gives CoreDNS: the primary
// service CIDR's tenth host address (kubeadm's convention).
func (n Network) DNSServiceIP() netip.Addr {
	a, _ := NthAddr(n.ServiceCIDRs()[0], 10)
	return a
}

// BridgeIP6 is the host's IPv6 address on the cluster bridge: Node6's
// first host address; the zero Addr without IPv6.
func (n Network) BridgeIP6() netip.Addr {
	if !n.Node6.IsValid() {
		return netip.Addr{}
	}
	a, _ := NthAddr(n.Node6, 1)
	return a
}

// NodeIP6 is the IPv6 address of node i (from 0): Node6's host address
// i+2; the zero Addr without IPv6.
func (n Network) NodeIP6(i int) (netip.Addr, error) {
	if !n.Node6.IsValid() {
		return netip.Addr{}, nil
	}
	return NthAddr(n.Node6, i+2)
}

// PodCIDR6 is the IPv6 pod CIDR of node i: the i-th /NodeMaskSize6 subnet
// of Cluster6; the zero Prefix without IPv6.
func (n Network) PodCIDR6(i int) (netip.Prefix, error) {
	if !n.Cluster6.IsValid() {
		return netip.Prefix{}, nil
	}
	return Subnet(n.Cluster6, n.NodeMaskSize6, i)
}

// ServiceCIDRs are the cluster's service CIDRs, primary family first
// (kube-apiserver --service-cluster-ip-range): one per family.
func (n Network) ServiceCIDRs() []netip.Prefix { return n.byFamily(n.Service, n.Service6) }

// ClusterCIDRs are the cluster's pod ranges, primary family first
// (kube-controller-manager and kube-proxy --cluster-cidr).
func (n Network) ClusterCIDRs() []netip.Prefix { return n.byFamily(n.Cluster, n.Cluster6) }

// LoadBalancerCIDRs are the cluster's LoadBalancer pools, primary
// family first.
func (n Network) LoadBalancerCIDRs() []netip.Prefix {
	return n.byFamily(n.LoadBalancer, n.LoadBalancer6)
}

// byFamily returns v4 and v6 as Family has them: [v4], [v6] or [v4, v6].
func (n Network) byFamily(v4, v6 netip.Prefix) []netip.Prefix {
	switch n.Family {
	case IPFamilyIPv6:
		return []netip.Prefix{v6}
	case IPFamilyDual:
		return []netip.Prefix{v4, v6}
	}
	return []netip.Prefix{v4}
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
