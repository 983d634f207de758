// Package cli assembles the kubernix command line: the root command, its
// global flags and one subcommand per verb (packages beside this one).
package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/cloudcontroller"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cli/configcmd"
	"github.com/kubernix/kubernix/pkg/cli/deletecmd"
	"github.com/kubernix/kubernix/pkg/cli/doctor"
	"github.com/kubernix/kubernix/pkg/cli/down"
	"github.com/kubernix/kubernix/pkg/cli/envcmd"
	"github.com/kubernix/kubernix/pkg/cli/image"
	"github.com/kubernix/kubernix/pkg/cli/kubeconfigcmd"
	"github.com/kubernix/kubernix/pkg/cli/list"
	"github.com/kubernix/kubernix/pkg/cli/logs"
	"github.com/kubernix/kubernix/pkg/cli/netpolagent"
	"github.com/kubernix/kubernix/pkg/cli/ociwrap"
	"github.com/kubernix/kubernix/pkg/cli/portproxy"
	"github.com/kubernix/kubernix/pkg/cli/registrycmd"
	"github.com/kubernix/kubernix/pkg/cli/sandbox"
	"github.com/kubernix/kubernix/pkg/cli/status"
	"github.com/kubernix/kubernix/pkg/cli/up"
	"github.com/kubernix/kubernix/pkg/cli/version"
	"github.com/kubernix/kubernix/pkg/config"
)

// Run executes kubernix with args (without the program name) and returns the
// process exit code; errors are printed to streams.Err. environ is the
// environment as KEY=VALUE strings (os.Environ()).
//
// An error before the verb runs (an unknown verb or flag, a wrong number
// of arguments, a missing required flag) is a usage error: it exits 2,
// as an invalid configuration does, with a pointer to the verb's --help.
func Run(ctx context.Context, streams common.Streams, args, environ []string) int {
	root := NewRootCommand(streams, environ)
	root.SetArgs(args)
	ran := false
	root.PersistentPreRun = func(*cobra.Command, []string) { ran = true }
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !ran {
		err = &common.ExitError{Code: 2, Err: fmt.Errorf("%w\nRun '%s --help' for usage.", err, cmd.CommandPath())}
	}
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
	env := &common.Env{
		Streams: streams,
		Flags:   config.NewFlags(),
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
		registrycmd.NewCommand(env),
		envcmd.NewEnvCommand(env),
		envcmd.NewShellCommand(env),
		kubeconfigcmd.NewCommand(env),
		sandbox.NewCommand(env),
		ociwrap.NewCommand(env),
		cloudcontroller.NewCommand(env),
		netpolagent.NewCommand(env),
		portproxy.NewCommand(env),
	)
	for _, c := range root.Commands() {
		requireSubcommand(c)
	}
	return root
}

// requireSubcommand makes each command below cmd (cmd too) that only
// groups others (config, image) print its help when run alone and fail
// as a usage error (exit 2) when given anything else, as cobra does for
// the root command; cobra would print the help and exit 0.
func requireSubcommand(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireSubcommand(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.DisableFlagsInUseLine = true
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return &common.ExitError{Code: 2, Err: fmt.Errorf("unknown command %q for %q\nRun '%s --help' for usage.", args[0], cmd.CommandPath(), cmd.CommandPath())}
	}
}
