// Package cli assembles the kubernix command line: the root command, its
// global flags and one subcommand per verb (packages beside this one).
package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/cloudcontroller"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cli/configcmd"
	"github.com/kubernix/kubernix/pkg/cli/deletecmd"
	"github.com/kubernix/kubernix/pkg/cli/doctor"
	"github.com/kubernix/kubernix/pkg/cli/down"
	"github.com/kubernix/kubernix/pkg/cli/envcmd"
	"github.com/kubernix/kubernix/pkg/cli/image"
	"github.com/kubernix/kubernix/pkg/cli/list"
	"github.com/kubernix/kubernix/pkg/cli/logs"
	"github.com/kubernix/kubernix/pkg/cli/ociwrap"
	"github.com/kubernix/kubernix/pkg/cli/sandbox"
	"github.com/kubernix/kubernix/pkg/cli/status"
	"github.com/kubernix/kubernix/pkg/cli/up"
	"github.com/kubernix/kubernix/pkg/cli/version"
	"github.com/kubernix/kubernix/pkg/config"
)

// Run executes kubernix with args (without the program name) and returns the
// process exit code; errors are printed to streams.Err. environ is the
// environment as KEY=VALUE strings (os.Environ()).
func Run(ctx context.Context, streams common.Streams, args, environ []string) int {
	root := NewRootCommand(streams, environ)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		common.Fprintf(streams.Err, "kubernix: %v\n", err)
	}
	return common.ExitCode(err)
}

// NewRootCommand builds the kubernix command tree.
func NewRootCommand(streams common.Streams, environ []string) *cobra.Command {
	verbose := 0
	root := &cobra.Command{
		Use:           "kubernix",
		Short:         "Run a real local multi-node Kubernetes cluster from upstream binaries",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return errors.Join(config.ErrInvalid, err)
	})
	env := &common.Env{
		Streams: streams,
		Flags:   config.NewFlags(root.PersistentFlags()),
		Environ: environ,
		Verbose: &verbose,
	}
	root.PersistentFlags().CountVarP(&verbose, "verbose", "v", "more log output (repeat for more)")
	root.AddCommand(
		version.NewCommand(env),
		configcmd.NewCommand(env),
		doctor.NewCommand(env),
		up.NewCommand(env),
		down.NewCommand(env),
		deletecmd.NewCommand(env),
		list.NewCommand(env),
		list.NewGetCommand(env),
		status.NewCommand(env),
		logs.NewCommand(env),
		image.NewCommand(env),
		envcmd.NewEnvCommand(env),
		envcmd.NewShellCommand(env),
		sandbox.NewCommand(env),
		ociwrap.NewCommand(env),
		cloudcontroller.NewCommand(env),
	)
	return root
}
