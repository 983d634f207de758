// Package deletecmd implements `kubernix delete`.
package deletecmd

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cli/down"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/preflight"
	"github.com/kubernix/kubernix/pkg/state"
)

// NewCommand returns `kubernix delete [--name N | --all]`: down (which
// also removes the cluster's context from the kubeconfig up merged it
// into, and its claims in /run/kubernix), then the cluster's state dir and
// its entry in the index of clusters (state.Purge). A state dir that is
// not kubernix's is refused before anything is done. A cluster that does
// not exist is not an error (a note on the error stream, exit 0), as with
// `kind delete cluster`. --all deletes every cluster of the user on this
// machine, stopped ones included, and exits 1 if any failed, after trying
// all.
func NewCommand(env *common.Env) *cobra.Command {
	var (
		timeout time.Duration
		all     bool
	)
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Bring the cluster (or --all) down and remove its state dir and kubeconfig context",
		Long: `Bring the cluster down (see ` + "`kubernix down`" + `), then remove its state dir
(PKI, etcd data, logs, images folder), its kubeconfig context and its entry
in the list of clusters. The state dir is removed only if it is
kubernix's (it holds .kubernix-state or kubernix.toml); anything else is
refused and nothing is done. A cluster that does not exist is not an
error. --all deletes every cluster ` + "`kubernix list`" + ` shows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckTimeout(timeout); err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := down.CheckAll(cmd, all); err != nil {
				return err
			}
			if all {
				return down.ForEach(ctx, env, true, func(cfg config.Config) error { return Delete(ctx, env, cfg, timeout) })
			}
			// The cluster-selecting flags (--name, --state-dir).
			cfg, err := env.SavedConfig()
			if errors.Is(err, os.ErrNotExist) {
				return deleteMissing(env, cfg)
			}
			if err := env.WarnDamaged(err); err != nil {
				return err
			}
			return Delete(ctx, env, cfg, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the supervisor's orderly down")
	env.BindSelector(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "delete every cluster of this user on this machine")
	return cmd
}

// Delete refuses a state dir that is not kubernix's (state.CheckOwned),
// then brings the cluster of cfg (its recorded config) down as `kubernix
// down` does and removes its state dir and index entry (state.Purge).
func Delete(ctx context.Context, env *common.Env, cfg config.Config, timeout time.Duration) error {
	p := cfg.Paths()
	if err := state.CheckOwned(p.State); err != nil {
		return err
	}
	err := down.Down(ctx, env, cfg, timeout)
	if errors.Is(err, preflight.ErrTaken) && isStopped(p.State) {
		// Another live cluster has taken the name since: the host's
		// resources named after it are that cluster's, and nothing of
		// this one is left to bring down.
		err = nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(p.State); cfg.Ephemeral && errors.Is(err, os.ErrNotExist) {
		return nil // down deleted the ephemeral cluster (down.DeleteEphemeral)
	}
	if err := state.Purge(state.DefaultInventory(), p, cfg.Name); err != nil {
		return err
	}
	common.Fprintf(env.Streams.Out, "cluster %q deleted (state dir %s removed)\n", cfg.Name, p.State)
	return nil
}

// deleteMissing is delete of a cluster never started (no kubernix.toml):
// a state dir that up claimed (a refused or aborted up) is
// removed if it is kubernix's, and the note says there was no cluster.
func deleteMissing(env *common.Env, cfg config.Config) error {
	p := cfg.Paths()
	if _, err := os.Stat(p.State); err == nil {
		if err := state.Purge(state.DefaultInventory(), p, cfg.Name); err != nil {
			return err
		}
	}
	common.Fprintf(env.Streams.Err, "cluster %q does not exist (no kubernix.toml in %s): nothing to delete\n", cfg.Name, p.State)
	return nil
}

// isStopped reports whether the cluster in stateDir is stopped, as
// `kubernix list` says (state.Inspect).
func isStopped(stateDir string) bool {
	info, err := state.Inspect(stateDir)
	return err == nil && info.State == state.StateStopped
}
