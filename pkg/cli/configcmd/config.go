// Package configcmd implements `kubernix config view`.
package configcmd

import (
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
)

// NewCommand returns `kubernix config` with its `view` subcommand, which
// prints the effective config (defaults < --config file < KUBERNIX_* < flags)
// as TOML, in the form --config reads. Invalid settings exit 2 listing every
// problem.
func NewCommand(env *common.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect kubernix's configuration",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "view",
		Short: "Print the effective configuration as TOML",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := env.Config()
			if err != nil {
				return err
			}
			b, err := config.Marshal(cfg)
			if err != nil {
				return err
			}
			_, err = env.Streams.Out.Write(b)
			return err
		},
	})
	return cmd
}
