// Package configcmd implements `kubernix config view`.
package configcmd

import (
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// NewCommand returns `kubernix config` with its `view` subcommand, which
// prints the effective config (defaults < --config file < KUBERNIX_* < flags)
// as TOML, in the form --config reads (config.MarshalExplicit). Invalid
// settings exit 2 listing every problem.
func NewCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect kubernix's configuration",
		Args:  cobra.NoArgs,
	}
	view := &cobra.Command{
		Use:   "view",
		Short: "Print the effective configuration as TOML, in the form --config reads",
		Long: `Print the effective configuration (defaults < --config file < KUBERNIX_*
variables < flags) as TOML. The settings set explicitly are plain lines; the
defaults and the values derived from other settings are commented out, so
that a file saved from it and read back with --config gives the same
cluster, and editing a setting (say cidr) moves what derives from it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, explicit, err := config.LoadExplicit(env.Flags, env.Environ)
			if err == nil {
				err = cfg.Validate()
			}
			if err != nil {
				return err
			}
			b, err := config.MarshalExplicit(cfg, explicit)
			if err != nil {
				return err
			}
			_, err = env.Streams.Out.Write(b)
			return err
		},
	}
	env.BindConfig(view)
	cmd.AddCommand(view)
	return cmd
}
