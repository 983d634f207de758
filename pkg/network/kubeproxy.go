package network

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"sigs.k8s.io/knftables"
)

// KubeProxyTable is the nftables table kube-proxy's nftables mode makes,
// in the ip and ip6 families (k8s.io/kubernetes pkg/proxy/nftables:
// kubeProxyTable). Its name is fixed, so only one kube-proxy can run in a
// network namespace.
const KubeProxyTable = "kube-proxy"

// kubeProxyFamilies are the families kube-proxy makes its table in.
var kubeProxyFamilies = []knftables.Family{knftables.IPv4Family, knftables.IPv6Family}

// KubeProxyTables lists, as "ip kube-proxy" and "ip6 kube-proxy", the
// kube-proxy tables that exist in this network namespace. It errors when
// nft cannot be run or listed.
func KubeProxyTables(ctx context.Context) ([]string, error) {
	var out []string
	var errs []error
	for _, family := range kubeProxyFamilies {
		nft, err := knftables.New(family, KubeProxyTable)
		if err != nil {
			errs = append(errs, fmt.Errorf("nftables %s: %w", family, err))
			continue
		}
		if _, err := nft.List(ctx, "chains"); err == nil {
			out = append(out, string(family)+" "+KubeProxyTable)
		} else if !knftables.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("list nftables table %s %s: %w", family, KubeProxyTable, err))
		}
	}
	return out, errors.Join(errs...)
}

// DeleteKubeProxyTables deletes kube-proxy's tables in this network
// namespace; missing ones are no error. Call it only for tables the
// caller's own kube-proxy made (see the cluster package's host namespace
// claim): another kube-proxy's Service rules live there too.
func DeleteKubeProxyTables(ctx context.Context) error {
	var errs []error
	for _, family := range kubeProxyFamilies {
		nft, err := knftables.New(family, KubeProxyTable)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				continue // no nft here: nothing can have made the table
			}
			errs = append(errs, fmt.Errorf("nftables %s: %w", family, err))
			continue
		}
		tx := nft.NewTransaction()
		tx.Delete(&knftables.Table{})
		if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete nftables table %s %s: %w", family, KubeProxyTable, err))
		}
	}
	return errors.Join(errs...)
}
