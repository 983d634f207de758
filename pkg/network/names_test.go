package network

import (
	"regexp"
	"strings"
	"testing"
)

func TestNamesFor(t *testing.T) {
	var (
		bridgeRE = regexp.MustCompile(`^kx-[0-9a-f]{8}$`)
		cniRE    = regexp.MustCompile(`^kc-[0-9a-f]{8}$`)
		vethRE   = regexp.MustCompile(`^kx[0-9a-f]{7}n[0-9]+$`)
		natRE    = regexp.MustCompile(`^KUBERNIX-[0-9A-F]{8}$`)
		fwdRE    = regexp.MustCompile(`^KUBERNIX-FWD-[0-9A-F]{8}$`)
		guardRE  = regexp.MustCompile(`^kubernix-[0-9a-f]{8}$`)
		netpolRE = regexp.MustCompile(`^kubernix-netpol-[0-9a-f]{8}$`)
	)
	tests := []struct {
		cluster string
	}{
		{"kubernix"},
		{"a"},
		{"nettest-12345"},
		{"dev"},
		{"dev2"},
		{strings.Repeat("x", 63)},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.cluster, func(t *testing.T) {
			n := NamesFor(tt.cluster)
			if again := NamesFor(tt.cluster); again.Bridge != n.Bridge || again.HostVeth(7) != n.HostVeth(7) ||
				again.NATChain != n.NATChain || again.ForwardChain != n.ForwardChain || again.Metric != n.Metric {
				t.Errorf("NamesFor(%q) not stable: %+v then %+v", tt.cluster, n, again)
			}
			links := map[string]string{
				"bridge": n.Bridge, "CNI bridge": n.CNIBridge,
				"veth 0": n.HostVeth(0), "veth max": n.HostVeth(MaxNodeIndex),
			}
			for what, name := range links {
				if len(name) > MaxLinkName {
					t.Errorf("%s %q is %d bytes, more than %d", what, name, len(name), MaxLinkName)
				}
			}
			for what, name := range map[string]string{"nat chain": n.NATChain, "forward chain": n.ForwardChain} {
				if len(name) > MaxChainName {
					t.Errorf("%s %q is %d bytes, more than %d", what, name, len(name), MaxChainName)
				}
			}
			for re, name := range map[*regexp.Regexp]string{bridgeRE: n.Bridge, cniRE: n.CNIBridge,
				vethRE: n.HostVeth(42), natRE: n.NATChain, fwdRE: n.ForwardChain,
				guardRE: n.GuardTable(), netpolRE: n.NetpolTable()} {
				if !re.MatchString(name) {
					t.Errorf("%q does not match %s", name, re)
				}
			}
			if !strings.HasSuffix(n.Bridge, n.Hash) || !strings.HasSuffix(n.NATChain, strings.ToUpper(n.Hash)) {
				t.Errorf("names do not share the hash %s: %+v", n.Hash, n)
			}
			if n.Metric < 0x4b000000 || n.Metric > 0x4bffffff {
				t.Errorf("Metric %#x outside 0x4b000000..0x4bffffff", n.Metric)
			}
			if !n.isHostVeth(n.HostVeth(3)) || n.isHostVeth(n.Bridge) || n.isHostVeth(n.VethPrefix) ||
				n.isHostVeth(n.VethPrefix+"03") || n.isHostVeth(n.VethPrefix+"x") {
				t.Errorf("isHostVeth misclassifies names of %+v", n)
			}
			for _, name := range []string{n.Bridge, n.CNIBridge, n.HostVeth(0), n.NATChain, n.ForwardChain, n.GuardTable(), n.NetpolTable()} {
				if other, dup := seen[name]; dup {
					t.Errorf("%q is used by clusters %q and %q", name, other, tt.cluster)
				}
				seen[name] = tt.cluster
			}
		})
	}
}

func TestNamesOwnOnlyTheirCluster(t *testing.T) {
	a, b := NamesFor("one"), NamesFor("two")
	for _, name := range []string{b.Bridge, b.CNIBridge, b.HostVeth(0), "eth0", "lo", "kx-", "kxn0"} {
		if a.owns(name) {
			t.Errorf("cluster %q claims link %q", a.Cluster, name)
		}
	}
	for _, name := range []string{a.Bridge, a.CNIBridge, a.HostVeth(0), a.HostVeth(MaxNodeIndex)} {
		if !a.owns(name) {
			t.Errorf("cluster %q does not claim its link %q", a.Cluster, name)
		}
	}
}
