// Package netpolagent implements the hidden `kubernix netpol-agent`, the
// supervised process of each node that enforces NetworkPolicies in the
// node's network namespace (pkg/netpol; described by
// pkg/components/netpolagent).
package netpolagent

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/netpol"
)

// NewCommand returns `kubernix netpol-agent --kubeconfig FILE --node NAME
// --table NAME --healthz ADDR:PORT`. Its flags are its own, not the
// cluster config's: the supervisor passes them (components.Description).
func NewCommand(env *common.Env) *cobra.Command {
	var opts netpol.Options
	var healthz string
	cmd := &cobra.Command{
		Use:    "netpol-agent --kubeconfig FILE --node NAME --table NAME --healthz ADDR:PORT",
		Short:  "internal: enforce the cluster's NetworkPolicies on one node with an nftables table",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Healthz, err = netip.ParseAddrPort(healthz); err != nil {
				return fmt.Errorf("%w: --healthz %q: %v", config.ErrInvalid, healthz, err)
			}
			log := slog.New(slog.NewTextHandler(env.Streams.Err, nil))
			return netpol.Run(cmd.Context(), log, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig of the agent's identity")
	f.StringVar(&opts.Node, "node", "", "name of the node whose pods the table filters")
	f.StringVar(&opts.Table, "table", "", "name of the inet nftables table the agent owns")
	f.StringVar(&healthz, "healthz", "", "address:port of the plain-HTTP /healthz")
	for _, name := range []string{"kubeconfig", "node", "table", "healthz"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
