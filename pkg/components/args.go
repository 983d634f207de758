package components

import (
	"net/netip"
	"strings"

	cliflag "k8s.io/component-base/cli/flag"
)

// MergeArgs returns ours followed by extra, where a flag of extra that
// ours sets too replaces ours instead: the user's value wins and the
// order is otherwise kept. A flag of extra given more than once keeps
// every occurrence (its last one wins in the component's own parsing, or
// the flag is repeatable). Flags are "--name=value" or "--name" (see
// FlagName); in ours, an argument that is not a flag is the value of the
// flag before it ("--config", "path"), and goes with it.
func MergeArgs(ours, extra []string) []string {
	if len(extra) == 0 {
		return ours
	}
	given := map[string]bool{}
	for _, arg := range extra {
		given[FlagName(arg)] = true
	}
	var out []string
	drop := false
	for _, arg := range ours {
		if name := FlagName(arg); name != "" {
			drop = given[name]
		}
		if !drop {
			out = append(out, arg)
		}
	}
	return append(out, extra...)
}

// FlagName is the name of a command-line flag "--name=value" or "--name"
// (or with a single dash): "name"; "" for an argument that is not a flag.
func FlagName(arg string) string {
	if !strings.HasPrefix(arg, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}

// FeatureGatesArgs returns the --feature-gates flag of gates, sorted by
// gate ("--feature-gates=A=true,B=false"), or none for no gates.
func FeatureGatesArgs(gates map[string]bool) []string {
	if len(gates) == 0 {
		return nil
	}
	return []string{"--feature-gates=" + cliflag.NewMapStringBool(&gates).String()}
}

// MapArgs returns flag with the pairs of m sorted by key
// ("--flag=a=x,b=y"), or none for an empty m.
func MapArgs(flag string, m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	return []string{"--" + flag + "=" + cliflag.NewMapStringString(&m).String()}
}

// JoinPrefixes renders prefixes as a dual-stack flag value takes them:
// comma-separated, in order ("10.10.16.0/20,fd00:1::/112").
func JoinPrefixes(prefixes []netip.Prefix) string {
	s := make([]string, len(prefixes))
	for i, p := range prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// NodeIPs are a node component's Kubernetes addresses: ips, primary
// family first, or [fallback] (the node's IPv4 address) when ips is
// empty.
func NodeIPs(ips []netip.Addr, fallback netip.Addr) []netip.Addr {
	if len(ips) == 0 {
		return []netip.Addr{fallback}
	}
	return ips
}

// JoinAddrs renders addrs comma-separated, in order, as kubelet
// --node-ip takes them.
func JoinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
