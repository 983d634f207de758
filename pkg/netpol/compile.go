// Package netpol enforces NetworkPolicies on one node: it compiles the
// cluster's policies, pods and namespaces into one nftables table of the
// node's network namespace (family inet), rewritten whole in one `nft -f`
// transaction on every change (Compile), and runs the agent that follows
// the API and applies it (Run).
//
// The table filters the traffic of the node's own pods only: a pod's
// egress on the node it runs on, its ingress on the node it runs on, so a
// connection across nodes is judged once for each end. Traffic is judged
// after kube-proxy's DNAT (forward hook, priority filter+10), so a policy
// sees the pod behind a Service IP, as upstream's e2e suite probes it.
// Established connections pass (conntrack), as do connections from the
// node's own addresses (kubelet probes, kube-proxy's hairpin masquerade).
// A refused connection is rejected (a TCP reset, an ICMP
// admin-prohibited otherwise) rather than dropped, so a client learns at
// once. design: docs/design/netpol.md.
package netpol

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go4.org/netipx"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/knftables"
)

// Input is what one node's table is compiled from: every NetworkPolicy,
// pod and namespace of the cluster, and the node's name (pods whose
// spec.nodeName it is are the node's own).
type Input struct {
	Node       string
	Policies   []*networkingv1.NetworkPolicy
	Pods       []*corev1.Pod
	Namespaces []*corev1.Namespace
}

// family is one IP family of the inet table.
type family struct {
	suffix  string // of set names: "v4", "v6"
	payload string // nft's address payload: "ip", "ip6"
	addr    string // nft's address type: "ipv4_addr", "ipv6_addr"
	is4     bool
}

var families = []family{
	{suffix: "v4", payload: "ip", addr: "ipv4_addr", is4: true},
	{suffix: "v6", payload: "ip6", addr: "ipv6_addr"},
}

// Chain names of the table.
const (
	chainForward = "forward"
	chainInput   = "input"
	chainIngress = "ingress"
	chainEgress  = "egress"
)

// pod is a pod that policies can select: running or pending, not on the
// host's network, with at least one IP.
type pod struct {
	*corev1.Pod
	ips []netip.Addr
}

// view indexes an Input.
type view struct {
	in         Input
	pods       []pod
	namespaces map[string]labels.Set
}

func newView(in Input) *view {
	v := &view{in: in, namespaces: map[string]labels.Set{}}
	for _, ns := range in.Namespaces {
		l := labels.Set{}
		for k, val := range ns.Labels {
			l[k] = val
		}
		// The apiserver sets it on every namespace (since 1.21); an
		// object from elsewhere may lack it.
		l[corev1.LabelMetadataName] = ns.Name
		v.namespaces[ns.Name] = l
	}
	for _, p := range in.Pods {
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var ips []netip.Addr
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				ips = append(ips, a.Unmap())
			}
		}
		if len(ips) == 0 {
			continue
		}
		v.pods = append(v.pods, pod{Pod: p, ips: ips})
	}
	slices.SortFunc(v.pods, func(a, b pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return v
}

// selected returns the pods of namespace ns that sel selects.
func (v *view) selected(ns string, sel labels.Selector) []pod {
	var out []pod
	for _, p := range v.pods {
		if p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// selector converts a LabelSelector; an invalid one selects nothing
// (labels.Nothing), as the apiserver never admits one.
func selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// peers returns the pods and the address ranges the peers of a rule of
// the policy in namespace ns select, and whether the rule names any peer
// (an empty list allows every peer).
func (v *view) peers(ns string, list []networkingv1.NetworkPolicyPeer) (pods []pod, blocks *netipx.IPSet, any bool) {
	var b netipx.IPSetBuilder
	seen := map[string]bool{}
	for _, peer := range list {
		switch {
		case peer.IPBlock != nil:
			cidr, err := netip.ParsePrefix(peer.IPBlock.CIDR)
			if err != nil {
				continue
			}
			var rule netipx.IPSetBuilder
			rule.AddPrefix(cidr.Masked())
			for _, e := range peer.IPBlock.Except {
				if ex, err := netip.ParsePrefix(e); err == nil {
					rule.RemovePrefix(ex.Masked())
				}
			}
			s, _ := rule.IPSet()
			b.AddSet(s)
		case peer.NamespaceSelector != nil:
			nsSel := selector(peer.NamespaceSelector)
			podSel := labels.Everything()
			if peer.PodSelector != nil {
				podSel = selector(peer.PodSelector)
			}
			for _, p := range v.pods {
				if l, ok := v.namespaces[p.Namespace]; ok && nsSel.Matches(l) && podSel.Matches(labels.Set(p.Labels)) && !seen[p.Namespace+"/"+p.Name] {
					seen[p.Namespace+"/"+p.Name] = true
					pods = append(pods, p)
				}
			}
		case peer.PodSelector != nil:
			for _, p := range v.selected(ns, selector(peer.PodSelector)) {
				if !seen[p.Namespace+"/"+p.Name] {
					seen[p.Namespace+"/"+p.Name] = true
					pods = append(pods, p)
				}
			}
		}
	}
	blocks, _ = b.IPSet()
	return pods, blocks, len(list) == 0
}

// portSpec is what a rule's ports compile to: numeric ports and ranges
// as "proto . port[-end]" elements, and named ports, which each target
// or destination pod resolves for itself.
type portSpec struct {
	numeric []string
	named   []namedPort
	any     bool // no ports: every port of every protocol
}

type namedPort struct {
	name  string
	proto corev1.Protocol
}

// protoName is the nft name of a protocol (tcp, udp, sctp).
func protoName(p corev1.Protocol) string { return strings.ToLower(string(p)) }

func ports(list []networkingv1.NetworkPolicyPort) portSpec {
	if len(list) == 0 {
		return portSpec{any: true}
	}
	var s portSpec
	for _, p := range list {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		switch {
		case p.Port == nil:
			s.numeric = append(s.numeric, protoName(proto)+" . 0-65535")
		case p.Port.StrVal != "":
			s.named = append(s.named, namedPort{name: p.Port.StrVal, proto: proto})
		case p.EndPort != nil && *p.EndPort > p.Port.IntVal:
			s.numeric = append(s.numeric, fmt.Sprintf("%s . %d-%d", protoName(proto), p.Port.IntVal, *p.EndPort))
		default:
			s.numeric = append(s.numeric, fmt.Sprintf("%s . %d", protoName(proto), p.Port.IntVal))
		}
	}
	slices.Sort(s.numeric)
	s.numeric = slices.Compact(s.numeric)
	return s
}

// resolve returns the "addr . proto . port" elements of the named ports
// on pods of family f: each pod's container port of that name and
// protocol.
func (s portSpec) resolve(pods []pod, f family) []string {
	var out []string
	for _, p := range pods {
		for _, np := range s.named {
			port, ok := containerPort(p.Pod, np)
			if !ok {
				continue
			}
			for _, ip := range p.ips {
				if ip.Is4() == f.is4 {
					out = append(out, fmt.Sprintf("%s . %s . %d", ip, protoName(np.proto), port))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func containerPort(p *corev1.Pod, np namedPort) (int32, bool) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			proto := cmp.Or(cp.Protocol, corev1.ProtocolTCP)
			if cp.Name == np.name && proto == np.proto {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// addrElements returns the addresses of family f of pods and blocks as
// set elements of an interval set: disjoint ranges, prefixes where they
// are one.
func addrElements(pods []pod, blocks *netipx.IPSet, f family) []string {
	var b netipx.IPSetBuilder
	if blocks != nil {
		b.AddSet(blocks)
	}
	for _, p := range pods {
		for _, ip := range p.ips {
			b.Add(ip)
		}
	}
	s, _ := b.IPSet()
	var out []string
	for _, r := range s.Ranges() {
		if r.From().Is4() != f.is4 {
			continue
		}
		if pfx, ok := r.Prefix(); ok {
			if pfx.IsSingleIP() {
				out = append(out, pfx.Addr().String())
			} else {
				out = append(out, pfx.String())
			}
			continue
		}
		out = append(out, r.From().String()+"-"+r.To().String())
	}
	return out
}

// local returns the pods of pods that run on the node.
func (v *view) local(pods []pod) []pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p pod) bool { return p.Spec.NodeName != v.in.Node })
}

// policyTypes returns whether the policy isolates its pods for ingress
// and for egress: its policyTypes, or as the apiserver defaults them
// (Ingress always, Egress when it has egress rules).
func policyTypes(np *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress),
		slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
}

// Compile adds to tx the whole table of the node: it creates the table
// if it does not exist, deletes it and adds it again, so applying tx
// replaces what an earlier Compile made in one transaction. tx's
// family must be inet (knftables.New(knftables.InetFamily, table)).
func Compile(tx *knftables.Transaction, in Input) {
	v := newView(in)
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("NetworkPolicies of node " + in.Node + ", by kubernix")})

	policies := slices.Clone(in.Policies)
	slices.SortFunc(policies, func(a, b *networkingv1.NetworkPolicy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})

	for _, c := range []struct {
		name string
		hook knftables.BaseChainHook
	}{{chainForward, knftables.ForwardHook}, {chainInput, knftables.InputHook}} {
		tx.Add(&knftables.Chain{
			Name: c.name, Type: knftables.PtrTo(knftables.FilterType), Hook: knftables.PtrTo(c.hook),
			Priority: knftables.PtrTo(knftables.FilterPriority + "+10"), Policy: knftables.PtrTo(knftables.AcceptPolicy),
		})
	}
	tx.Add(&knftables.Chain{Name: chainIngress})
	tx.Add(&knftables.Chain{Name: chainEgress})
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "ct state established,related accept"})
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "fib saddr type local accept"})
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: "ct state established,related accept"})

	for _, f := range families {
		ingressIsolated, egressIsolated := "ingress-isolated-"+f.suffix, "egress-isolated-"+f.suffix
		var inIso, egIso []pod
		for i, np := range policies {
			ing, eg := policyTypes(np)
			targets := v.local(v.selected(np.Namespace, selector(&np.Spec.PodSelector)))
			if ing {
				inIso = append(inIso, targets...)
				v.rules(tx, f, fmt.Sprintf("p%d-in", i), np, targets, true)
			}
			if eg {
				egIso = append(egIso, targets...)
				v.rules(tx, f, fmt.Sprintf("p%d-eg", i), np, targets, false)
			}
		}
		addSet(tx, ingressIsolated, f.addr, "local pods isolated for ingress", addrElements(inIso, nil, f))
		addSet(tx, egressIsolated, f.addr, "local pods isolated for egress", addrElements(egIso, nil, f))
		tx.Add(&knftables.Rule{Chain: chainForward, Rule: f.payload + " saddr @" + egressIsolated + " jump " + chainEgress})
		tx.Add(&knftables.Rule{Chain: chainForward, Rule: f.payload + " daddr @" + ingressIsolated + " jump " + chainIngress})
		tx.Add(&knftables.Rule{Chain: chainInput, Rule: f.payload + " saddr @" + egressIsolated + " jump " + chainEgress})
	}
	for _, c := range []string{chainIngress, chainEgress} {
		tx.Add(&knftables.Rule{Chain: c, Rule: "meta l4proto tcp reject with tcp reset"})
		tx.Add(&knftables.Rule{Chain: c, Rule: "reject with icmpx admin-prohibited"})
	}
}

// rules adds, for family f, the sets and the allowing rules of the
// policy np's ingress (ingress) or egress rules for its local targets:
// each allowing rule returns, and the chain ends in a reject.
func (v *view) rules(tx *knftables.Transaction, f family, prefix string, np *networkingv1.NetworkPolicy, targets []pod, ingress bool) {
	if len(targets) == 0 {
		return
	}
	chain, self, other := chainEgress, "saddr", "daddr"
	var list [][]networkingv1.NetworkPolicyPeer
	var portLists [][]networkingv1.NetworkPolicyPort
	if ingress {
		chain, self, other = chainIngress, "daddr", "saddr"
		for _, r := range np.Spec.Ingress {
			list, portLists = append(list, r.From), append(portLists, r.Ports)
		}
	} else {
		for _, r := range np.Spec.Egress {
			list, portLists = append(list, r.To), append(portLists, r.Ports)
		}
	}
	what := np.Namespace + "/" + np.Name
	targetSet := prefix + "-targets-" + f.suffix
	addSet(tx, targetSet, f.addr, "targets of "+what, addrElements(targets, nil, f))
	for r := range list {
		peerPods, blocks, anyPeer := v.peers(np.Namespace, list[r])
		ps := ports(portLists[r])
		name := fmt.Sprintf("%s%d", prefix, r)
		match := f.payload + " " + self + " @" + targetSet
		if !anyPeer {
			peerSet := name + "-peers-" + f.suffix
			addSet(tx, peerSet, f.addr, "peers of rule "+strconv.Itoa(r)+" of "+what, addrElements(peerPods, blocks, f))
			match += " " + f.payload + " " + other + " @" + peerSet
		}
		if ps.any {
			tx.Add(&knftables.Rule{Chain: chain, Rule: match + " return"})
			continue
		}
		// A named port is the destination's: the target's for ingress,
		// the peer's for egress.
		owners := targets
		if !ingress {
			owners = peerPods
			if anyPeer {
				owners = v.pods
			}
		}
		addPortRules(tx, f, portRule{chain: chain, match: match, name: name, what: fmt.Sprintf("rule %d of %s", r, what)}, ps, owners)
	}
}

// portRule is one allowing rule of a policy's ingress or egress, up to
// its ports: chain, the match of its targets and peers, the prefix of
// its set names, and what it is, for the sets' comments.
type portRule struct {
	chain, match, name, what string
}

// addPortRules adds the returning rules of r for the ports of ps: one
// for its numeric ports and ranges (a set of both families, added with
// the first), one for its named ports, resolved on owners.
func addPortRules(tx *knftables.Transaction, f family, r portRule, ps portSpec, owners []pod) {
	if len(ps.numeric) > 0 {
		portSet := r.name + "-ports"
		if f.is4 {
			tx.Add(&knftables.Set{Name: portSet, Type: "inet_proto . inet_service", Flags: []knftables.SetFlag{knftables.IntervalFlag},
				Comment: knftables.PtrTo("ports of " + r.what)})
			for _, e := range ps.numeric {
				tx.Add(&knftables.Element{Set: portSet, Key: []string{e}})
			}
		}
		tx.Add(&knftables.Rule{Chain: r.chain, Rule: r.match + " meta l4proto . th dport @" + portSet + " return"})
	}
	if len(ps.named) > 0 {
		namedSet := r.name + "-named-" + f.suffix
		tx.Add(&knftables.Set{Name: namedSet, Type: f.addr + " . inet_proto . inet_service",
			Comment: knftables.PtrTo("named ports of " + r.what)})
		for _, e := range ps.resolve(owners, f) {
			tx.Add(&knftables.Element{Set: namedSet, Key: []string{e}})
		}
		tx.Add(&knftables.Rule{Chain: r.chain, Rule: r.match + " " + f.payload + " daddr . meta l4proto . th dport @" + namedSet + " return"})
	}
}

// addSet adds an interval set of addresses of type typ and its elements.
func addSet(tx *knftables.Transaction, name, typ, comment string, elements []string) {
	tx.Add(&knftables.Set{Name: name, Type: typ, Flags: []knftables.SetFlag{knftables.IntervalFlag}, Comment: knftables.PtrTo(comment)})
	for _, e := range elements {
		tx.Add(&knftables.Element{Set: name, Key: []string{e}})
	}
}
