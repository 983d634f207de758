package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/state"
)

// ErrTaken is the error of a cluster that is already running: its state
// dir's supervisor is alive, or its name is claimed by a live cluster in
// another state dir (CheckName).
var ErrTaken = errors.New("cluster is already running")

// CheckName returns an error wrapping ErrTaken and config.ErrInvalid when a
// live cluster of plan's name runs from another state dir. Rootless
// clusters live in their own namespaces and are not checked.
func CheckName(pl *plan.Plan) error {
	if pl.Rootless {
		return nil
	}
	other := state.NameHolder(pl.Cfg.Name)
	if other == "" || other == pl.Paths.State {
		return nil
	}
	if pid, ok := state.Running(config.Paths{State: other}); ok {
		return fmt.Errorf("%w: %w: cluster name %q is in use by the cluster in %s (supervisor pid %d); choose another --name, or stop it with `kubernix down --name %s --state-dir %s`",
			config.ErrInvalid, ErrTaken, pl.Cfg.Name, other, pid, pl.Cfg.Name, other)
	}
	return nil
}

// checkHostNamespaces returns an error wrapping config.ErrInvalid when
// plan's node would run in the host's namespaces (process executor) but
// they are not free: another live cluster holds them, or kube-proxy
// tables that are not this cluster's exist there. It changes nothing.
func checkHostNamespaces(ctx context.Context, pl *plan.Plan) error {
	if !pl.UsesHostNamespaces() {
		return nil
	}
	holder := state.HostNamespacesHolder()
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
