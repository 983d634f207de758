package network

import (
	"context"
	"fmt"

	"sigs.k8s.io/knftables"
)

// The guard is the cluster's own nftables table (family ip, named
// Names.GuardTable) that keeps the cluster to this machine. The host
// forwards (net.ipv4.ip_forward=1) and the control plane listens on the
// bridge, so without it a LAN neighbour that routes the cluster's range
// to this machine would reach the apiserver, etcd, the kubelets, NodePorts
// and pods. Its two base chains run just before the filter hooks
// (priority filter - 10) and drop any packet addressed to a cluster range
// that arrives on an interface other than loopback, the cluster bridge or
// the CNI bridge, unless it belongs to a connection started from inside
// (replies to pods' masqueraded egress come back on the host's uplink).
// An nftables drop is final whatever other tables or iptables chains
// accept, so rules of other software cannot open the cluster by accident.

// guardPriority runs the guard before the filter chains of iptables and
// of other nftables tables at the same hooks.
const guardPriority = knftables.FilterPriority + "-10"

// guardRangesSet is the guard's set of the cluster's address ranges.
const guardRangesSet = "cluster-ranges"

// newGuard returns an nftables handle on the guard table of names n.
func newGuard(n Names) (knftables.Interface, error) {
	nft, err := knftables.New(knftables.IPv4Family, n.GuardTable())
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
	tx.Add(&knftables.Set{Name: guardRangesSet, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
	for _, r := range p.clusterRanges() {
		tx.Add(&knftables.Element{Set: guardRangesSet, Key: []string{r.String()}})
	}
	ours := fmt.Sprintf(`{ "lo", %q, %q }`, n.Bridge, n.CNIBridge)
	for _, hook := range []knftables.BaseChainHook{knftables.InputHook, knftables.ForwardHook} {
		chain := string(hook)
		tx.Add(&knftables.Chain{
			Name: chain, Type: knftables.PtrTo(knftables.FilterType),
			Hook: knftables.PtrTo(hook), Priority: knftables.PtrTo(guardPriority),
		})
		tx.Add(&knftables.Rule{Chain: chain, Rule: "ct state established,related accept"})
		tx.Add(&knftables.Rule{
			Chain:   chain,
			Rule:    knftables.Concat("ip daddr", "@"+guardRangesSet, "iifname !=", ours, "drop"),
			Comment: knftables.PtrTo("into the cluster from outside this machine"),
		})
	}
}

// ensureGuard creates or rewrites the guard table of plan p.
func ensureGuard(ctx context.Context, p Plan, n Names) error {
	nft, err := newGuard(n)
	if err != nil {
		return err
	}
	tx := nft.NewTransaction()
	guardTransaction(tx, p, n)
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table ip %s: %w", n.GuardTable(), err)
	}
	return nil
}

// removeGuard deletes the guard table; a missing one is no error.
func removeGuard(ctx context.Context, n Names) error {
	return removeTable(ctx, knftables.IPv4Family, n.GuardTable())
}

// guardLeftovers lists the guard table if it exists.
func guardLeftovers(ctx context.Context, n Names) ([]string, error) {
	return tableLeftovers(ctx, knftables.IPv4Family, n.GuardTable())
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
