// Package sandbox implements the hidden `kubernix sandbox-init`, the
// process that holds a container-executor node's namespaces.
package sandbox

import (
	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/node"
)

// NewCommand returns `kubernix sandbox-init`, run by unshare(1) inside new
// namespaces; see node.SandboxInit.
func NewCommand(env *common.Env) *cobra.Command {
	var hostname, ready, pause string
	var ipv6 bool
	var shared, private, bindArgs []string
	cmd := &cobra.Command{
		Use:    "sandbox-init",
		Short:  "internal: hold a node sandbox's namespaces",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var binds []node.Bind
			for _, arg := range bindArgs {
				b, err := node.ParseBind(arg)
				if err != nil {
					return err
				}
				binds = append(binds, b)
			}
			return node.SandboxInit(cmd.Context(), hostname, shared, private, binds, ready, pause, ipv6)
		},
	}
	cmd.Flags().StringVar(&hostname, "hostname", "", "hostname of the sandbox")
	cmd.Flags().StringVar(&ready, "ready-file", "", "file written once the sandbox is set up")
	cmd.Flags().StringArrayVar(&shared, "shared", nil, "directory to make an rshared bind mount")
	cmd.Flags().StringArrayVar(&private, "private", nil, "directory to cover with an empty tmpfs of the sandbox's own")
	cmd.Flags().StringArrayVar(&bindArgs, "bind", nil, `host path to mount in the sandbox, as JSON: {"source":..., "target":..., "readOnly":true}`)
	cmd.Flags().StringVar(&pause, "exec", "", "program to exec once the sandbox is set up, to hold it")
	cmd.Flags().BoolVar(&ipv6, "ipv6", false, "keep IPv6 on and forward it (a node of a dual-stack or IPv6 cluster)")
	_ = env
	return cmd
}
