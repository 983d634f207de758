package loadbalancer

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ErrNoPool is returned (wrapped) when a Service needs an address of an IP
// family the controller has no pool of.
var ErrNoPool = errors.New("no LoadBalancer pool of the IP family")

// Prefix lengths a pool may have. An IPv4 pool of /30 or larger has at
// least two host addresses besides its network and broadcast ones. An
// IPv6 pool has no broadcast address, so only its network address (the
// subnet-router anycast address, ::0 of the prefix) is never handed out:
// /126 has three host addresses; /64 is the largest, one subnet (the
// cluster's own IPv6 pool is a /112, config.Network.LoadBalancer6).
const (
	maxBits4 = 30
	minBits6 = 64
	maxBits6 = 126
)

// ParsePools parses the controller's --pool values, each one prefix, and
// checks them with ValidatePools. It errors naming every bad value.
func ParsePools(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, v := range values {
		p, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("LoadBalancer pool %q: %w", v, err))
			continue
		}
		out = append(out, p.Masked())
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, ValidatePools(out)
}

// ValidatePools checks a controller's pools: one or two masked prefixes,
// at most one per IP family, each IPv4 of /30 or larger or IPv6 of /64 to
// /126 (not IPv4-mapped). It returns every problem, joined, or nil.
func ValidatePools(pools []netip.Prefix) error {
	var errs []error
	if len(pools) == 0 || len(pools) > 2 {
		errs = append(errs, fmt.Errorf("%d LoadBalancer pools: want one or two, one per IP family", len(pools)))
	}
	seen := map[v1.IPFamily]netip.Prefix{}
	for _, p := range pools {
		if err := validatePool(p); err != nil {
			errs = append(errs, err)
			continue
		}
		f := familyOf(p.Addr())
		if q, ok := seen[f]; ok {
			errs = append(errs, fmt.Errorf("LoadBalancer pools %s and %s: both %s; give at most one per IP family", q, p, f))
		}
		seen[f] = p
	}
	return errors.Join(errs...)
}

// validatePool checks one pool's family and length.
func validatePool(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return errors.New("LoadBalancer pool: not a prefix")
	case p.Addr().Is4In6():
		return fmt.Errorf("LoadBalancer pool %s: an IPv4-mapped IPv6 prefix; give the IPv4 prefix", p)
	case p.Addr().Is4() && p.Bits() > maxBits4:
		return fmt.Errorf("LoadBalancer pool %s: must be an IPv4 prefix of /%d or larger", p, maxBits4)
	case p.Addr().Is6() && (p.Bits() < minBits6 || p.Bits() > maxBits6):
		return fmt.Errorf("LoadBalancer pool %s: an IPv6 pool must be /%d to /%d", p, minBits6, maxBits6)
	}
	return nil
}

// familyOf is a's IP family, as Services name them.
func familyOf(a netip.Addr) v1.IPFamily {
	if a.Is4() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// configFlag names, for error messages, the cluster setting the pool of
// family comes from.
func configFlag(f v1.IPFamily) string {
	if f == v1.IPv6Protocol {
		return "--cidr6"
	}
	return "--loadbalancer-cidr"
}

// usableIn reports whether a is a host address of prefix: inside it and
// not its network address, nor, for IPv4, its broadcast address.
func usableIn(prefix netip.Prefix, a netip.Addr) bool {
	if !prefix.Contains(a) || a == prefix.Addr() {
		return false
	}
	return a.Is6() || prefix.Contains(a.Next()) // not the IPv4 broadcast address
}

// families names fams for messages: "IPv6", "IPv4 and IPv6".
func families(fams []v1.IPFamily) string {
	var names []string
	for _, f := range fams {
		names = append(names, string(f))
	}
	return strings.Join(names, " and ")
}
