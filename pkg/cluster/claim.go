package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// checkName returns an error wrapping ErrTaken and config.ErrInvalid when a
// live cluster of plan's name runs from another state dir. Rootless
// clusters live in their own namespaces and are not checked.
func checkName(pl *plan.Plan) error {
	if pl.Rootless {
		return nil
	}
	b, err := os.ReadFile(state.NameFile(pl.Cfg.Name))
	if err != nil {
		return nil
	}
	other := strings.TrimSpace(string(b))
	if other == pl.Paths.State {
		return nil
	}
	if pid, ok := state.Running(config.Paths{State: other}); ok {
		return fmt.Errorf("%w: %w: cluster name %q is in use by the cluster in %s (supervisor pid %d); choose another --name, or stop it with `kubernix down --name %s --state-dir %s`",
			config.ErrInvalid, ErrTaken, pl.Cfg.Name, other, pid, pl.Cfg.Name, other)
	}
	return nil
}

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
	b, err := os.ReadFile(state.NameFile(pl.Cfg.Name))
	if err != nil || strings.TrimSpace(string(b)) != pl.Paths.State {
		return nil
	}
	if err := os.Remove(state.NameFile(pl.Cfg.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// hostNamespacesHolder returns the state dir recorded in
// HostNamespacesFile, "" when there is none.
func hostNamespacesHolder() string {
	b, err := os.ReadFile(state.HostNamespacesFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// checkHostNamespaces returns an error wrapping config.ErrInvalid when
// plan's node would run in the host's namespaces (process executor) but
// they are not free: another live cluster holds them, or kube-proxy
// tables that are not this cluster's exist there. It changes nothing.
func checkHostNamespaces(ctx context.Context, pl *plan.Plan) error {
	if !pl.UsesHostNamespaces() {
		return nil
	}
	holder := hostNamespacesHolder()
	if holder == pl.Paths.State {
		return nil // ours, from a run that was killed: cleaned up at up
	}
	hint := "use --executor container (the default), which runs the node in a sandbox of its own"
	if holder != "" {
		if pid, ok := state.Running(config.Paths{State: holder}); ok {
			return fmt.Errorf("%w: --executor process: the host's namespaces already hold the node of the cluster in %s (supervisor pid %d), and only one cluster can run there; %s",
				config.ErrInvalid, holder, pid, hint)
		}
	}
	tables, err := network.KubeProxyTables(ctx)
	if err != nil {
		return fmt.Errorf("--executor process: %w", err)
	}
	if len(tables) > 0 {
		owner := "another kube-proxy (k3s, kubeadm, another cluster)"
		if holder != "" {
			owner = fmt.Sprintf("the cluster in %s, which was not brought down (`kubernix down --state-dir %s`)", holder, holder)
		}
		return fmt.Errorf("%w: --executor process: the host's network namespace has the nftables table(s) %s of %s, which this cluster's kube-proxy would share; %s",
			config.ErrInvalid, strings.Join(tables, ", "), owner, hint)
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
	if hostNamespacesHolder() != pl.Paths.State {
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
	if hostNamespacesHolder() != pl.Paths.State {
		return nil
	}
	out := []string{"claim " + state.HostNamespacesFile}
	tables, _ := network.KubeProxyTables(ctx)
	for _, t := range tables {
		out = append(out, "nftables table "+t)
	}
	return out
}
