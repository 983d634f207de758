package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"sigs.k8s.io/knftables"
)

// The guard is the cluster's own nftables table (family inet, named
// Names.GuardTable) that keeps the cluster to this machine. The host
// forwards (net.ipv4.ip_forward=1) and the control plane listens on the
// bridge, so without it a LAN neighbour that routes the cluster's range
// to this machine would reach the apiserver, etcd, the kubelets, NodePorts
// and pods. Its two base chains run just before the filter hooks
// (priority filter - 10) and drop any packet addressed to a cluster range
// (the IPv4 set, or the IPv6 set, empty without IPv6) that arrives on an
// interface other than loopback, the cluster bridge or the CNI bridge,
// unless it belongs to a connection started from inside (replies to pods'
// masqueraded egress come back on the host's uplink). An nftables drop is
// final whatever other tables or iptables chains accept, so rules of other
// software cannot open the cluster by accident. kubernix versions before
// IPv6 made the table in family ip; Setup, Teardown and Leftovers handle
// such a table too.

// guardPriority runs the guard before the filter chains of iptables and
// of other nftables tables at the same hooks.
const guardPriority = knftables.FilterPriority + "-10"

// The guard's sets of the cluster's IPv4 and IPv6 address ranges.
const (
	guardRangesSet  = "cluster-ranges"
	guardRangesSet6 = "cluster-ranges6"
)

// guardFamily is the family of the guard table; legacyGuardFamily is the
// one older kubernix versions made it in.
const (
	guardFamily       = knftables.InetFamily
	legacyGuardFamily = knftables.IPv4Family
)

// newGuard returns an nftables handle on the guard table of names n.
func newGuard(n Names) (knftables.Interface, error) {
	nft, err := knftables.New(guardFamily, n.GuardTable())
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return nft, nil
}

// guardTransaction fills tx with the guard of plan p (normalized): the
// table, flushed and rewritten whole, so a second Setup converges.
func guardTransaction(tx *knftables.Transaction, p Plan, n Names) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("kubernix cluster " + p.Cluster + ": only this machine reaches the cluster")})
	tx.Flush(&knftables.Table{})
	for _, s := range []struct {
		name, typ string
		ranges    []netip.Prefix
	}{{guardRangesSet, "ipv4_addr", p.clusterRanges()}, {guardRangesSet6, "ipv6_addr", p.clusterRanges6()}} {
		tx.Add(&knftables.Set{Name: s.name, Type: s.typ, Flags: []knftables.SetFlag{knftables.IntervalFlag}})
		for _, r := range s.ranges {
			tx.Add(&knftables.Element{Set: s.name, Key: []string{r.String()}})
		}
	}
	ours := fmt.Sprintf(`{ "lo", %q, %q }`, n.Bridge, n.CNIBridge)
	for _, hook := range []knftables.BaseChainHook{knftables.InputHook, knftables.ForwardHook} {
		chain := string(hook)
		tx.Add(&knftables.Chain{
			Name: chain, Type: knftables.PtrTo(knftables.FilterType),
			Hook: knftables.PtrTo(hook), Priority: knftables.PtrTo(guardPriority),
		})
		tx.Add(&knftables.Rule{Chain: chain, Rule: "ct state established,related accept"})
		for _, daddr := range []string{"ip daddr @" + guardRangesSet, "ip6 daddr @" + guardRangesSet6} {
			tx.Add(&knftables.Rule{
				Chain:   chain,
				Rule:    knftables.Concat(daddr, "iifname !=", ours, "drop"),
				Comment: knftables.PtrTo("into the cluster from outside this machine"),
			})
		}
	}
}

// ensureGuard creates or rewrites the guard table of plan p, then removes
// a guard table of the older family (it guarded the same ranges, until
// the new one is in place).
func ensureGuard(ctx context.Context, p Plan, n Names) error {
	nft, err := newGuard(n)
	if err != nil {
		return err
	}
	tx := nft.NewTransaction()
	guardTransaction(tx, p, n)
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table %s %s: %w", guardFamily, n.GuardTable(), err)
	}
	return removeTable(ctx, legacyGuardFamily, n.GuardTable())
}

// removeGuard deletes the guard table, and one of the older family; a
// missing one is no error.
func removeGuard(ctx context.Context, n Names) error {
	return errors.Join(removeTable(ctx, guardFamily, n.GuardTable()), removeTable(ctx, legacyGuardFamily, n.GuardTable()))
}

// guardLeftovers lists the guard table, and one of the older family, if
// they exist.
func guardLeftovers(ctx context.Context, n Names) ([]string, error) {
	var out []string
	var errs []error
	for _, family := range []knftables.Family{guardFamily, legacyGuardFamily} {
		left, err := tableLeftovers(ctx, family, n.GuardTable())
		out = append(out, left...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// removeNetpolTable deletes the host's NetworkPolicy table of a
// process-executor node (Names.NetpolTable); a missing one is no error.
func removeNetpolTable(ctx context.Context, n Names) error {
	return removeTable(ctx, knftables.InetFamily, n.NetpolTable())
}

// netpolLeftovers lists the host's NetworkPolicy table if it exists.
func netpolLeftovers(ctx context.Context, n Names) ([]string, error) {
	return tableLeftovers(ctx, knftables.InetFamily, n.NetpolTable())
}

// removeTable deletes the nftables table of family and name; a missing
// one is no error.
func removeTable(ctx context.Context, family knftables.Family, name string) error {
	nft, err := knftables.New(family, name)
	if err != nil {
		return err
	}
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("delete nftables table %s %s: %w", family, name, err)
	}
	return nil
}

// tableLeftovers lists the nftables table of family and name if it
// exists.
func tableLeftovers(ctx context.Context, family knftables.Family, name string) ([]string, error) {
	nft, err := knftables.New(family, name)
	if err != nil {
		return nil, err
	}
	if _, err := nft.List(ctx, "chains"); err != nil {
		if knftables.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list nftables table %s %s: %w", family, name, err)
	}
	return []string{fmt.Sprintf("nftables table %s %s", family, name)}, nil
}
