package cluster

import (
	"context"
	"errors"
	"os"

	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// claimName records that plan's state dir uses its name.
func claimName(pl *plan.Plan) error {
	if pl.Rootless {
		return nil
	}
	if err := os.MkdirAll(state.NamesDir, 0o755); err != nil {
		return err
	}
	return state.WriteFile(state.NameFile(pl.Cfg.Name), []byte(pl.Paths.State+"\n"))
}

// releaseName drops the record if it is plan's.
func releaseName(pl *plan.Plan) error {
	if pl.Rootless {
		return nil
	}
	if state.NameHolder(pl.Cfg.Name) != pl.Paths.State {
		return nil
	}
	if err := os.Remove(state.NameFile(pl.Cfg.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// claimHostNamespaces records plan as the holder of the host's namespaces
// when its node runs there.
func claimHostNamespaces(pl *plan.Plan) error {
	if !pl.UsesHostNamespaces() {
		return nil
	}
	return state.WriteFile(state.HostNamespacesFile, []byte(pl.Paths.State+"\n"))
}

// releaseHostNamespaces removes what plan's node made in the host's
// namespaces (kube-proxy's nftables tables) and the claim, when the claim
// is plan's: tables of anyone else are never touched.
func releaseHostNamespaces(ctx context.Context, pl *plan.Plan) error {
	if state.HostNamespacesHolder() != pl.Paths.State {
		return nil
	}
	if err := network.DeleteKubeProxyTables(ctx); err != nil {
		return err
	}
	if err := os.Remove(state.HostNamespacesFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// hostNamespacesLeftovers lists the claim and kube-proxy's tables in the
// host's namespaces when the claim is plan's.
func hostNamespacesLeftovers(ctx context.Context, pl *plan.Plan) []string {
	if state.HostNamespacesHolder() != pl.Paths.State {
		return nil
	}
	out := []string{"claim " + state.HostNamespacesFile}
	tables, _ := network.KubeProxyTables(ctx)
	for _, t := range tables {
		out = append(out, "nftables table "+t)
	}
	return out
}
