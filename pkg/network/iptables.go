package network

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coreos/go-iptables/iptables"

	"github.com/kubernix/kubernix/pkg/sysctl"
)

// A chain of the cluster and the built-in chain that jumps to it, in the
// iptables of proto (IPv4: iptables, IPv6: ip6tables).
type hookedChain struct {
	proto              iptables.Protocol
	table, hook, chain string
}

// chains lists the cluster's iptables chains with their hooks: IPv4 nat
// and filter, and an IPv6 filter chain (the host routes no IPv6 out of the
// cluster, so there is nothing to masquerade, but bridged IPv6 between the
// nodes passes ip6tables FORWARD, whose policy may be DROP).
func (n Names) chains() []hookedChain {
	return []hookedChain{
		{proto: iptables.ProtocolIPv4, table: "nat", hook: "POSTROUTING", chain: n.NATChain},
		{proto: iptables.ProtocolIPv4, table: "filter", hook: "FORWARD", chain: n.ForwardChain},
		{proto: iptables.ProtocolIPv6, table: "filter", hook: "FORWARD", chain: n.ForwardChain},
	}
}

// planChains lists the chains of n that plan p needs: the IPv6 one only
// when the cluster has IPv6.
func (n Names) planChains(p Plan) []hookedChain {
	var out []hookedChain
	for _, c := range n.chains() {
		if c.proto == iptables.ProtocolIPv4 || p.hasIPv6() {
			out = append(out, c)
		}
	}
	return out
}

// command names the iptables command of c, as messages name it.
func (c hookedChain) command() string {
	if c.proto == iptables.ProtocolIPv6 {
		return "ip6tables"
	}
	return "iptables"
}

// newIPTables returns a runner for `iptables` (IPv4), whichever backend the
// host's alternatives select, as kube-proxy will use it.
func newIPTables() (*iptables.IPTables, error) {
	return newRunner(iptables.ProtocolIPv4)
}

// newRunner returns a runner for `iptables` (ProtocolIPv4) or `ip6tables`
// (ProtocolIPv6). Errors name the command.
func newRunner(proto iptables.Protocol) (*iptables.IPTables, error) {
	ipt, err := iptables.New(iptables.IPFamily(proto), iptables.Timeout(30))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hookedChain{proto: proto}.command(), err)
	}
	return ipt, nil
}

// runners are the host's iptables runners by protocol.
type runners map[iptables.Protocol]*iptables.IPTables

// newRunners returns a runner for each protocol of chains. A host without
// IPv6 in its kernel has no ip6tables to clean: that runner is left out.
func newRunners(chains []hookedChain) (runners, error) {
	out := runners{}
	for _, c := range chains {
		if _, ok := out[c.proto]; ok || (c.proto == iptables.ProtocolIPv6 && !sysctl.HasIPv6()) {
			continue
		}
		ipt, err := newRunner(c.proto)
		if err != nil {
			return nil, err
		}
		out[c.proto] = ipt
	}
	return out, nil
}

// natRules are the rules of the cluster's nat chain: traffic to any cluster
// range is left alone, traffic from the pods or the nodes to anywhere else
// (leaving the cluster) is masqueraded.
func natRules(p Plan) [][]string {
	var out [][]string
	for _, r := range p.clusterRanges() {
		out = append(out, []string{"-d", r.String(), "-j", "RETURN"})
	}
	for _, s := range p.masqueradeSources() {
		out = append(out, []string{"-s", s.String(), "-j", "MASQUERADE"})
	}
	return out
}

// forwardRules are the rules of the cluster's filter chain: accept what is
// forwarded in or out of the cluster bridge and the CNI bridge (bridged
// traffic between ports too, as bridge-nf-call-iptables is on).
func forwardRules(n Names) [][]string {
	var out [][]string
	for _, dev := range []string{n.Bridge, n.CNIBridge} {
		out = append(out,
			[]string{"-i", dev, "-j", "ACCEPT"},
			[]string{"-o", dev, "-j", "ACCEPT"})
	}
	return out
}

// jumpRule is the rule in a hook that sends traffic to the cluster's chain.
func (n Names) jumpRule(chain string) []string {
	return []string{"-m", "comment", "--comment", n.comment(), "-j", chain}
}

// ensureChains (re)writes the chains of plan p and appends their jump
// rules to the hooks unless present.
func ensureChains(ipts runners, p Plan, n Names) error {
	rules := map[string][][]string{n.NATChain: natRules(p), n.ForwardChain: forwardRules(n)}
	for _, c := range n.planChains(p) {
		ipt := ipts[c.proto]
		if ipt == nil {
			return fmt.Errorf("%s: not available", c.command())
		}
		if err := ipt.ClearChain(c.table, c.chain); err != nil {
			return fmt.Errorf("create or flush %s chain %s/%s: %w", c.command(), c.table, c.chain, err)
		}
		for _, r := range rules[c.chain] {
			if err := ipt.Append(c.table, c.chain, r...); err != nil {
				return fmt.Errorf("add rule to %s chain %s/%s: %w", c.command(), c.table, c.chain, err)
			}
		}
		if err := ipt.AppendUnique(c.table, c.hook, n.jumpRule(c.chain)...); err != nil {
			return fmt.Errorf("add jump from %s %s/%s to %s: %w", c.command(), c.table, c.hook, c.chain, err)
		}
	}
	return nil
}

// removeChains deletes every rule in the hooks that jumps to one of the
// cluster's chains, then the chains, in the iptables of ipts. Missing
// chains are not errors.
func removeChains(ipts runners, n Names) error {
	var errs []error
	for _, c := range n.chains() {
		ipt := ipts[c.proto]
		if ipt == nil {
			continue
		}
		jumps, err := jumpsTo(ipt, c)
		if err != nil {
			errs = append(errs, err)
		}
		for _, spec := range jumps {
			if err := ipt.DeleteIfExists(c.table, c.hook, spec...); err != nil {
				errs = append(errs, fmt.Errorf("remove jump from %s %s/%s to %s: %w", c.command(), c.table, c.hook, c.chain, err))
			}
		}
		if err := ipt.ClearAndDeleteChain(c.table, c.chain); err != nil && !isNotExist(err) {
			errs = append(errs, fmt.Errorf("remove %s chain %s/%s: %w", c.command(), c.table, c.chain, err))
		}
	}
	return errors.Join(errs...)
}

// chainLeftovers describes the cluster's chains and jump rules that exist
// in the iptables of ipts.
func chainLeftovers(ipts runners, n Names) ([]string, error) {
	var out []string
	var errs []error
	for _, c := range n.chains() {
		ipt := ipts[c.proto]
		if ipt == nil {
			continue
		}
		ok, err := ipt.ChainExists(c.table, c.chain)
		if err != nil {
			errs = append(errs, fmt.Errorf("check %s chain %s/%s: %w", c.command(), c.table, c.chain, err))
		} else if ok {
			out = append(out, fmt.Sprintf("%s chain %s/%s", c.command(), c.table, c.chain))
		}
		jumps, err := jumpsTo(ipt, c)
		if err != nil {
			errs = append(errs, err)
		}
		for _, spec := range jumps {
			out = append(out, fmt.Sprintf("%s rule %s/%s: %s", c.command(), c.table, c.hook, joinRule(spec)))
		}
	}
	return out, errors.Join(errs...)
}

// jumpsTo returns the rule specs (without "-A <hook>") of every rule in
// c.hook whose target is c.chain.
func jumpsTo(ipt *iptables.IPTables, c hookedChain) ([][]string, error) {
	lines, err := ipt.List(c.table, c.hook)
	if err != nil {
		return nil, fmt.Errorf("list %s %s/%s: %w", c.command(), c.table, c.hook, err)
	}
	var out [][]string
	for _, line := range lines {
		f := splitRule(line)
		if len(f) < 2 || f[0] != "-A" || f[1] != c.hook {
			continue
		}
		spec := f[2:]
		for i := 0; i+1 < len(spec); i++ {
			if (spec[i] == "-j" || spec[i] == "-g") && spec[i+1] == c.chain {
				out = append(out, slices.Clone(spec))
				break
			}
		}
	}
	return out, nil
}

// splitRule splits a line of `iptables -S` into arguments, honouring the
// double quotes (and backslash escapes inside them) iptables puts around
// arguments with spaces, such as comments.
func splitRule(line string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quoted && r == '\\':
			escaped = true
		case r == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// joinRule renders rule arguments as `iptables -S` does, quoting those with
// spaces.
func joinRule(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// isNotExist reports whether an iptables error says the chain or rule does
// not exist.
func isNotExist(err error) bool {
	var e *iptables.Error
	return errors.As(err, &e) && e.IsNotExist()
}
