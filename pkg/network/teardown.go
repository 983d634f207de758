package network

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"
)

// Teardown removes, from the cluster name alone, everything Setup and
// AttachNode made for cluster: the jump rules and the chains of iptables
// and ip6tables (and, once empty, the iptables tables any cluster's rules
// made: hosttables.go), the guard table (and one of the older family ip),
// a process-executor node's NetworkPolicy table, the host veths (their
// peers go with them), the CNI bridge, the cluster bridge (its routes,
// IPv4 and IPv6, go with it) and the cluster's unreachable routes of both
// families. It is idempotent:
// what is already gone is skipped, and every other failure is collected
// with errors.Join while the rest is still removed. net.ipv4.ip_forward is
// left as it is (the cluster package restores it with the other sysctls
// when the host's last cluster goes).
func Teardown(cluster string) error {
	n := NamesFor(cluster)
	var errs []error
	if err := withHostTables(hostTablesFile(), func() error {
		var errs []error
		if ipts, err := newRunners(n.chains()); err != nil {
			errs = append(errs, err)
		} else if err := removeChains(ipts, n); err != nil {
			errs = append(errs, err)
		}
		if err := removeMadeTables(context.Background(), nftHostTable, hostTablesFile()); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		errs = append(errs, err)
	}
	if err := removeGuard(context.Background(), n); err != nil {
		errs = append(errs, err)
	}
	if err := removeNetpolTable(context.Background(), n); err != nil {
		errs = append(errs, err)
	}

	links, err := clusterLinks(n)
	if err != nil {
		errs = append(errs, err)
	}
	// Veths first, so the bridge goes last among the links.
	sort.SliceStable(links, func(i, j int) bool {
		return n.isHostVeth(links[i].Attrs().Name) && !n.isHostVeth(links[j].Attrs().Name)
	})
	for _, l := range links {
		if err := netlink.LinkDel(l); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("delete link %s: %w", l.Attrs().Name, err))
		}
	}

	routes, err := clusterRoutes(n, 0)
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range routes {
		if err := netlink.RouteDel(&r); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("delete route %q: %w", describeRoute(r, nil), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down network of cluster %q: %w", cluster, err)
	}
	return nil
}

// Leftovers lists what of cluster's network exists on the host, one
// human-readable line each: the cluster's links (bridge, CNI bridge, host
// veths), routes carrying Protocol on those links, its unreachable routes
// (IPv4 and IPv6), its iptables and ip6tables chains and the jump rules
// to them, its guard table (either family) and its NetworkPolicy table in
// the host's namespace. It is empty after Teardown. It errors only when it cannot
// look (netlink, iptables or nft failing), returning what it found so far.
func Leftovers(cluster string) ([]string, error) {
	n := NamesFor(cluster)
	var out []string
	var errs []error
	links, err := clusterLinks(n)
	if err != nil {
		errs = append(errs, err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
		out = append(out, fmt.Sprintf("link %s (%s)", l.Attrs().Name, l.Type()))
	}
	routes, err := protocolRoutes()
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range routes {
		if _, onOurs := names[r.LinkIndex]; (onOurs && r.LinkIndex != 0) || n.ownsUnreachable(r) {
			out = append(out, "route "+describeRoute(r, names))
		}
	}
	if ipts, err := newRunners(n.chains()); err != nil {
		errs = append(errs, err)
	} else {
		chains, err := chainLeftovers(ipts, n)
		out = append(out, chains...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	guard, err := guardLeftovers(context.Background(), n)
	out = append(out, guard...)
	if err != nil {
		errs = append(errs, err)
	}
	netpol, err := netpolLeftovers(context.Background(), n)
	out = append(out, netpol...)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("leftovers of cluster %q: %w", cluster, err)
	}
	return out, nil
}

// clusterLinks lists the host links that belong to the cluster by name.
func clusterLinks(n Names) ([]netlink.Link, error) {
	all, err := listLinks()
	if err != nil {
		return nil, err
	}
	var out []netlink.Link
	for _, l := range all {
		if n.owns(l.Attrs().Name) {
			out = append(out, l)
		}
	}
	return out, nil
}
