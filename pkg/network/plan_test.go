package network

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var (
	mp = netip.MustParsePrefix
	ma = netip.MustParseAddr
)

// examplePlan is the default layout of a 10.254.0.0/16 cluster with two
// sandboxed nodes (0 and 1) and one local node (2).
func examplePlan(cluster string) Plan {
	return Plan{
		Cluster:     cluster,
		NodeCIDR:    mp("10.254.0.0/24"),
		BridgeIP:    ma("10.254.0.1"),
		ServiceCIDR: mp("10.254.16.0/20"),
		ClusterCIDR: mp("10.254.128.0/17"),
		Whole:       mp("10.254.0.0/16"),
		// The pool of LoadBalancer IPs.
		LoadBalancerCIDR: mp("10.254.32.0/20"),
		Nodes: []NodeRoute{
			{Index: 0, IP: ma("10.254.0.2"), PodCIDR: mp("10.254.128.0/24")},
			{Index: 1, IP: ma("10.254.0.3"), PodCIDR: mp("10.254.129.0/24")},
			{Index: 2, IP: ma("10.254.0.1"), PodCIDR: mp("10.254.130.0/24"), Local: true},
		},
		ServiceVia: ma("10.254.0.2"),
	}
}

// dualPlan is examplePlan with an IPv6 half in fd12:3456:789a::/48: nodes
// 0 and 1 at ::2 and ::3 with /64 pod CIDRs, local node 2 at the bridge.
func dualPlan(cluster string) Plan {
	p := examplePlan(cluster)
	p.NodeCIDR6 = mp("fd12:3456:789a::/64")
	p.BridgeIP6 = ma("fd12:3456:789a::1")
	p.ClusterCIDR6 = mp("fd12:3456:789a:8000::/49")
	p.ServiceCIDR6 = mp("fd12:3456:789a:1::/112")
	p.LoadBalancerCIDR6 = mp("fd12:3456:789a:2::/112")
	p.Whole6 = mp("fd12:3456:789a::/48")
	p.ServiceVia6 = ma("fd12:3456:789a::2")
	p.Nodes = slices.Clone(p.Nodes)
	for i, ip6 := range []string{"fd12:3456:789a::2", "fd12:3456:789a::3", "fd12:3456:789a::1"} {
		p.Nodes[i].IP6 = ma(ip6)
		p.Nodes[i].PodCIDR6 = netip.PrefixFrom(ma(fmt.Sprintf("fd12:3456:789a:800%d::", i)), 64)
	}
	return p
}

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Plan)
		wants []string // substrings of the error; none: valid
	}{
		{"example", func(*Plan) {}, nil},
		{"separate CIDRs, no whole", func(p *Plan) { p.Whole = netip.Prefix{} }, nil},
		{"service on bridge", func(p *Plan) { p.ServiceVia = netip.Addr{} }, nil},
		{"unmasked prefixes", func(p *Plan) { p.ClusterCIDR = mp("10.254.200.1/17") }, nil},
		{"bad name", func(p *Plan) { p.Cluster = "Not_A_Label" }, []string{`cluster name "Not_A_Label"`}},
		{"missing CIDRs", func(p *Plan) { p.NodeCIDR, p.ServiceCIDR = netip.Prefix{}, netip.Prefix{} },
			[]string{"node CIDR", "service CIDR"}},
		{"IPv6", func(p *Plan) { p.ClusterCIDR = mp("fd00::/64") }, []string{"cluster CIDR"}},
		{"overlap", func(p *Plan) { p.ServiceCIDR = mp("10.254.128.0/20") },
			[]string{"cluster CIDR 10.254.128.0/17 overlaps service CIDR 10.254.128.0/20"}},
		{"pool overlaps services", func(p *Plan) { p.LoadBalancerCIDR = mp("10.254.16.0/24") },
			[]string{"service CIDR 10.254.16.0/20 overlaps LoadBalancer CIDR 10.254.16.0/24"}},
		{"no pool", func(p *Plan) { p.LoadBalancerCIDR = netip.Prefix{} }, nil},
		{"bridge outside", func(p *Plan) { p.BridgeIP = ma("10.254.1.1") }, []string{"bridge IP 10.254.1.1"}},
		{"bridge is network address", func(p *Plan) { p.BridgeIP = ma("10.254.0.0") }, []string{"bridge IP 10.254.0.0"}},
		{"every node problem at once", func(p *Plan) {
			p.Nodes[0].IP = ma("10.254.0.1")
			p.Nodes[1].PodCIDR = mp("10.254.1.0/24")
			p.Nodes[2].Index = 0
			p.ServiceVia = ma("10.254.9.9")
		}, []string{"node 0 IP 10.254.0.1", "node 1 pod CIDR 10.254.1.0/24", "node index 0 appears twice", "service route via 10.254.9.9"}},
		{"pod CIDRs overlap", func(p *Plan) { p.Nodes[1].PodCIDR = mp("10.254.128.0/23") },
			[]string{"pod CIDRs of nodes 0 (10.254.128.0/24) and 1 (10.254.128.0/23) overlap"}},
		{"index too big", func(p *Plan) { p.Nodes[1].Index = MaxNodeIndex + 1 }, []string{"node index 100000"}},
		{"dual stack", func(p *Plan) { *p = dualPlan(p.Cluster) }, nil},
		{"dual stack, separate IPv6 CIDRs, services on the bridge", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.Whole6, p.LoadBalancerCIDR6, p.ServiceVia6 = netip.Prefix{}, netip.Prefix{}, netip.Addr{}
			p.ServiceCIDR6 = mp("fd99::/112")
		}, nil},
		{"local node without IPv6 address", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.Nodes[2].IP6 = netip.Addr{}
		}, nil},
		{"IPv6 fields without IPv6 node CIDR", func(p *Plan) {
			p.ClusterCIDR6 = mp("fd12:3456:789a:8000::/49")
			p.ServiceVia6 = ma("fd12:3456:789a::2")
			p.Nodes[1].PodCIDR6 = mp("fd12:3456:789a:8001::/64")
		}, []string{"no IPv6 node CIDR, but IPv6 fields are set: ClusterCIDR6, ServiceVia6, node 1 IP6/PodCIDR6"}},
		{"IPv4 prefixes in IPv6 fields", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.ServiceCIDR6 = mp("10.9.0.0/16")
			p.ClusterCIDR6 = mp("::ffff:10.8.0.0/112")
			p.Whole6 = mp("10.0.0.0/8")
		}, []string{`IPv6 service CIDR "10.9.0.0/16" is not an IPv6 prefix`,
			`IPv6 cluster CIDR "::ffff:10.8.0.0/112" is not an IPv6 prefix`, `IPv6 whole cluster range "10.0.0.0/8" is not an IPv6 prefix`}},
		{"IPv6 in an IPv4 field", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.ServiceCIDR = mp("fd12:3456:789a:1::/112")
		}, []string{`service CIDR "fd12:3456:789a:1::/112" is not an IPv4 prefix`}},
		{"IPv6 overlap", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.LoadBalancerCIDR6 = mp("fd12:3456:789a:8000::/112")
		}, []string{"IPv6 cluster CIDR fd12:3456:789a:8000::/49 overlaps IPv6 LoadBalancer CIDR fd12:3456:789a:8000::/112"}},
		{"IPv6 node CIDR too small", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.NodeCIDR6 = mp("fd12:3456:789a::/127")
		}, []string{"IPv6 node CIDR fd12:3456:789a::/127 has no room"}},
		{"IPv6 bridge address is the subnet-router anycast", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.BridgeIP6 = ma("fd12:3456:789a::")
		}, []string{"IPv6 bridge address fd12:3456:789a:: is not a host address of IPv6 node CIDR fd12:3456:789a::/64"}},
		{"every IPv6 node problem at once, with an IPv4 one", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.Nodes[0].IP6 = ma("fd12:3456:789a::1")
			p.Nodes[1].IP6 = netip.Addr{}
			p.Nodes[1].PodCIDR6 = mp("fd12:3456:789a:1::/64")
			p.Nodes[2].IP6 = ma("fd12:3456:789a::5")
			p.ServiceVia6 = ma("fd12:3456:789b::2")
			p.Nodes[0].PodCIDR = mp("10.254.1.0/24")
		}, []string{
			"node 0 IPv6 address fd12:3456:789a::1 is not a free host address of IPv6 node CIDR fd12:3456:789a::/64",
			"node 1 IPv6 address invalid IP is not a free host address",
			"node 1 IPv6 pod CIDR fd12:3456:789a:1::/64 is not inside IPv6 cluster CIDR fd12:3456:789a:8000::/49",
			"node 2 is local but its IPv6 address fd12:3456:789a::5 is not the IPv6 bridge address fd12:3456:789a::1",
			"IPv6 service route via fd12:3456:789b::2: not a node address in IPv6 node CIDR",
			"node 0 pod CIDR 10.254.1.0/24 is not inside cluster CIDR",
		}},
		{"IPv6 pod CIDRs overlap, shared IPv6 address", func(p *Plan) {
			*p = dualPlan(p.Cluster)
			p.Nodes[1].PodCIDR6 = mp("fd12:3456:789a:8000::/63")
			p.Nodes[1].IP6 = p.Nodes[0].IP6
		}, []string{"IPv6 pod CIDRs of nodes 0 (fd12:3456:789a:8000::/64) and 1 (fd12:3456:789a:8000::/63) overlap",
			"nodes 0 and 1 share IPv6 address fd12:3456:789a::2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := examplePlan("kubernix")
			tt.edit(&p)
			err := p.normalized().validate()
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate passed, want errors %q", tt.wants)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestPlanRoutesAndRules(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(*Plan)
		wantRanges  []string
		wantRanges6 []string
		wantRoutes  []string // Setup's
		// wantServiceRoutes are RouteServices'.
		wantServiceRoutes []string
		wantNAT           []string
	}{
		{
			name:       "whole range, service via node 0",
			edit:       func(*Plan) {},
			wantRanges: []string{"10.254.0.0/16"},
			wantRoutes: []string{
				"10.254.128.0/24 via 10.254.0.2",
				"10.254.129.0/24 via 10.254.0.3",
				"unreachable 10.254.0.0/16",
			},
			wantServiceRoutes: []string{"10.254.16.0/20 via 10.254.0.2", "10.254.32.0/20 via 10.254.0.2"},
			wantNAT: []string{
				"-d 10.254.0.0/16 -j RETURN",
				"-s 10.254.128.0/17 -j MASQUERADE",
				"-s 10.254.0.0/24 -j MASQUERADE",
			},
		},
		{
			name: "separate CIDRs, process executor",
			edit: func(p *Plan) {
				p.Whole = netip.Prefix{}
				p.ServiceVia = netip.Addr{}
				p.ServiceCIDR = mp("10.96.0.0/12")
				p.Nodes = []NodeRoute{{Index: 0, IP: p.BridgeIP, PodCIDR: mp("10.254.128.0/24"), Local: true}}
			},
			wantRanges:        []string{"10.254.0.0/24", "10.96.0.0/12", "10.254.128.0/17", "10.254.32.0/20"},
			wantServiceRoutes: []string{"10.96.0.0/12 dev bridge", "10.254.32.0/20 dev bridge"},
			wantRoutes: []string{
				"unreachable 10.254.0.0/24",
				"unreachable 10.96.0.0/12",
				"unreachable 10.254.128.0/17",
				"unreachable 10.254.32.0/20",
			},
			wantNAT: []string{
				"-d 10.254.0.0/24 -j RETURN",
				"-d 10.96.0.0/12 -j RETURN",
				"-d 10.254.128.0/17 -j RETURN",
				"-d 10.254.32.0/20 -j RETURN",
				"-s 10.254.128.0/17 -j MASQUERADE",
				"-s 10.254.0.0/24 -j MASQUERADE",
			},
		},
		{
			name:       "service CIDR outside the whole range",
			edit:       func(p *Plan) { p.ServiceCIDR = mp("10.96.0.0/12") },
			wantRanges: []string{"10.254.0.0/16", "10.96.0.0/12"},
			wantRoutes: []string{
				"10.254.128.0/24 via 10.254.0.2",
				"10.254.129.0/24 via 10.254.0.3",
				"unreachable 10.254.0.0/16",
				"unreachable 10.96.0.0/12",
			},
			wantServiceRoutes: []string{"10.96.0.0/12 via 10.254.0.2", "10.254.32.0/20 via 10.254.0.2"},
			wantNAT: []string{
				"-d 10.254.0.0/16 -j RETURN",
				"-d 10.96.0.0/12 -j RETURN",
				"-s 10.254.128.0/17 -j MASQUERADE",
				"-s 10.254.0.0/24 -j MASQUERADE",
			},
		},
		{
			name:        "dual stack: IPv6 routes after the IPv4 ones, no IPv6 masquerade",
			edit:        func(p *Plan) { *p = dualPlan(p.Cluster) },
			wantRanges:  []string{"10.254.0.0/16"},
			wantRanges6: []string{"fd12:3456:789a::/48"},
			wantRoutes: []string{
				"10.254.128.0/24 via 10.254.0.2",
				"10.254.129.0/24 via 10.254.0.3",
				"unreachable 10.254.0.0/16",
				"fd12:3456:789a:8000::/64 via fd12:3456:789a::2",
				"fd12:3456:789a:8001::/64 via fd12:3456:789a::3",
				"unreachable fd12:3456:789a::/48",
			},
			wantServiceRoutes: []string{
				"10.254.16.0/20 via 10.254.0.2", "10.254.32.0/20 via 10.254.0.2",
				"fd12:3456:789a:1::/112 via fd12:3456:789a::2", "fd12:3456:789a:2::/112 via fd12:3456:789a::2",
			},
			wantNAT: []string{
				"-d 10.254.0.0/16 -j RETURN",
				"-s 10.254.128.0/17 -j MASQUERADE",
				"-s 10.254.0.0/24 -j MASQUERADE",
			},
		},
		{
			name: "dual stack, separate IPv6 CIDRs, process executor",
			edit: func(p *Plan) {
				*p = dualPlan(p.Cluster)
				p.Whole6, p.ServiceVia, p.ServiceVia6, p.LoadBalancerCIDR6 = netip.Prefix{}, netip.Addr{}, netip.Addr{}, netip.Prefix{}
				p.Nodes = p.Nodes[2:]
			},
			wantRanges:  []string{"10.254.0.0/16"},
			wantRanges6: []string{"fd12:3456:789a::/64", "fd12:3456:789a:1::/112", "fd12:3456:789a:8000::/49"},
			wantRoutes: []string{
				"unreachable 10.254.0.0/16",
				"unreachable fd12:3456:789a::/64",
				"unreachable fd12:3456:789a:1::/112",
				"unreachable fd12:3456:789a:8000::/49",
			},
			wantServiceRoutes: []string{
				"10.254.16.0/20 dev bridge", "10.254.32.0/20 dev bridge", "fd12:3456:789a:1::/112 dev bridge",
			},
			wantNAT: []string{
				"-d 10.254.0.0/16 -j RETURN",
				"-s 10.254.128.0/17 -j MASQUERADE",
				"-s 10.254.0.0/24 -j MASQUERADE",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := examplePlan("kubernix")
			tt.edit(&p)
			p = p.normalized()
			if err := p.validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got := strs(p.clusterRanges()); !reflect.DeepEqual(got, tt.wantRanges) {
				t.Errorf("clusterRanges = %q, want %q", got, tt.wantRanges)
			}
			if got := strs(p.clusterRanges6()); !slices.Equal(got, tt.wantRanges6) {
				t.Errorf("clusterRanges6 = %q, want %q", got, tt.wantRanges6)
			}
			if got := strs(p.routes()); !reflect.DeepEqual(got, tt.wantRoutes) {
				t.Errorf("routes = %q, want %q", got, tt.wantRoutes)
			}
			if got := strs(p.serviceRoutes()); !reflect.DeepEqual(got, tt.wantServiceRoutes) {
				t.Errorf("serviceRoutes = %q, want %q", got, tt.wantServiceRoutes)
			}
			var nat []string
			for _, r := range natRules(p) {
				nat = append(nat, strings.Join(r, " "))
			}
			if !reflect.DeepEqual(nat, tt.wantNAT) {
				t.Errorf("natRules = %q, want %q", nat, tt.wantNAT)
			}
		})
	}
}

func TestForwardRules(t *testing.T) {
	n := NamesFor("kubernix")
	var got []string
	for _, r := range forwardRules(n) {
		got = append(got, strings.Join(r, " "))
	}
	want := []string{
		"-i " + n.Bridge + " -j ACCEPT", "-o " + n.Bridge + " -j ACCEPT",
		"-i " + n.CNIBridge + " -j ACCEPT", "-o " + n.CNIBridge + " -j ACCEPT",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forwardRules = %q, want %q", got, want)
	}
}

func TestSplitRule(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"-A FORWARD -j KUBERNIX-FWD-0A1B2C3D", []string{"-A", "FORWARD", "-j", "KUBERNIX-FWD-0A1B2C3D"}},
		{`-A POSTROUTING -m comment --comment "kubernix cluster dev" -j KUBERNIX-0A1B2C3D`,
			[]string{"-A", "POSTROUTING", "-m", "comment", "--comment", "kubernix cluster dev", "-j", "KUBERNIX-0A1B2C3D"}},
		{`-A X -m comment --comment "say \"hi\"" -j RETURN`,
			[]string{"-A", "X", "-m", "comment", "--comment", `say "hi"`, "-j", "RETURN"}},
		{"  -P   FORWARD ACCEPT ", []string{"-P", "FORWARD", "ACCEPT"}},
		{`--comment ""`, []string{"--comment", ""}},
	}
	for _, tt := range tests {
		if got := splitRule(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitRule(%q) = %q, want %q", tt.line, got, tt.want)
		}
		if back := splitRule(joinRule(tt.want)); !reflect.DeepEqual(back, tt.want) {
			t.Errorf("splitRule(joinRule(%q)) = %q", tt.want, back)
		}
	}
}

func strs[T interface{ String() string }](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// TestServiceUnreachable: a node namespace's rules cover the service and
// LoadBalancer CIDRs of both families, the IPv6 ones as IPv6 rules.
func TestServiceUnreachable(t *testing.T) {
	tests := []struct {
		name string
		p    Plan
		want []string // "family dst"
	}{
		{"IPv4", examplePlan("kubernix"), []string{"0 10.254.16.0/20", "0 10.254.32.0/20"}},
		{"dual stack", dualPlan("kubernix"), []string{"0 10.254.16.0/20", "0 10.254.32.0/20",
			fmt.Sprintf("%d fd12:3456:789a:1::/112", netlink.FAMILY_V6), fmt.Sprintf("%d fd12:3456:789a:2::/112", netlink.FAMILY_V6)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range serviceUnreachable(tt.p.normalized()) {
				if r.Type != unix.RTN_UNREACHABLE || r.IifName != NodeInterface || r.Priority != serviceUnreachablePriority {
					t.Errorf("rule %v: want unreachable, iif %s, priority %d", r, NodeInterface, serviceUnreachablePriority)
				}
				got = append(got, fmt.Sprintf("%d %s", r.Family, r.Dst))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("serviceUnreachable = %q, want %q", got, tt.want)
			}
		})
	}
}
