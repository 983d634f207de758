// Package portproxy implements the hidden `kubernix port-proxy`, the
// supervised process that publishes [[nodes]] ports on the host
// (pkg/portproxy; described by pkg/components/portproxy).
package portproxy

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/portproxy"
)

// NewCommand returns `kubernix port-proxy --healthz ADDR:PORT --forward
// PROTO:LISTEN=TARGET...`. Its flags are its own, not the cluster
// config's: the supervisor passes them (components.Description).
func NewCommand(env *common.Env) *cobra.Command {
	var healthz, rootlesskitAPI string
	var forwards []string
	cmd := &cobra.Command{
		Use:    "port-proxy --healthz ADDR:PORT --forward PROTO:LISTEN_IP:PORT=TARGET_IP:PORT...",
		Short:  "internal: publish ports of the cluster's nodes on the host",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := portproxy.Options{RootlesskitAPI: rootlesskitAPI}
			var err error
			if opts.Healthz, err = netip.ParseAddrPort(healthz); err != nil {
				return fmt.Errorf("%w: --healthz %q: %v", config.ErrInvalid, healthz, err)
			}
			for _, s := range forwards {
				f, err := portproxy.ParseForward(s)
				if err != nil {
					return fmt.Errorf("%w: --forward %v", config.ErrInvalid, err)
				}
				opts.Forwards = append(opts.Forwards, f)
			}
			log := slog.New(slog.NewTextHandler(env.Streams.Err, nil))
			return portproxy.Run(cmd.Context(), log, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&healthz, "healthz", "", "address:port of the plain-HTTP /healthz")
	f.StringArrayVar(&forwards, "forward", nil, "a port to publish, PROTO:LISTEN_IP:PORT=TARGET_IP:PORT (repeat)")
	f.StringVar(&rootlesskitAPI, "rootlesskit-api", "", "rootlesskit's API socket: publish through its port driver (rootless)")
	_ = cmd.MarkFlagRequired("healthz")
	return cmd
}
