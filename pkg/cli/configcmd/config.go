// Package configcmd implements `kubernix config view`, `kubernix config
// validate` and `kubernix config reference`.
package configcmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/preflight"
)

// NewCommand returns `kubernix config` with its subcommands: `view`, which
// prints the effective config (defaults < --config file < KUBERNIX_* < flags)
// as TOML, in the form --config reads (config.MarshalExplicit),
// `validate FILE` (newValidate) and `reference`, which prints the
// Markdown reference of every key (config.Reference, as docs/config.md
// holds it). Invalid settings exit 2 listing every problem.
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
			env.UseClusterSettings()
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
	reference := &cobra.Command{
		Use:   "reference",
		Short: "Print the reference of every config file key, as Markdown",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := env.Streams.Out.Write(config.Reference())
			return err
		},
	}
	cmd.AddCommand(view, newValidate(env), reference)
	return cmd
}

// newValidate returns `kubernix config validate FILE`: FILE read as
// --config reads it, with the KUBERNIX_* variables of env over it, then
// Config.Validate. It prints "FILE: valid" and exits 0, or returns every
// problem of the file (its version, unknown keys, malformed values) or,
// once it reads, of the settings, wrapping config.ErrInvalid (exit 2); a
// missing or unreadable FILE is such a problem too. It writes nothing.
func newValidate(env *common.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a config file: its version, its keys and their values",
		Long: `Check FILE as 'kubernix up --config FILE' would read it, with the KUBERNIX_*
variables over it: its apiVersion and kind, unknown keys (each named with its
line and the key it is near), malformed values, then every setting as up
validates it (values, ranges, the state directory), the audit policy as the
kube-apiserver decodes it, and the feature gates with each component binary
found (as up finds them). It prints "FILE: valid"
and exits 0, or lists every problem and exits 2. It changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := config.NewFlags()
			flags.File = args[0]
			cfg, err := config.Load(flags, env.Environ)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			pl, err := common.Plan(cfg)
			if err == nil {
				err = preflight.CheckComponents(cmd.Context(), pl)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			common.Fprintf(env.Streams.Out, "%s: valid\n", args[0])
			return nil
		},
	}
}
