// Package cloudcontroller implements the hidden `kubernix cloud-controller`,
// the supervised process that gives LoadBalancer Services their IPs
// (pkg/loadbalancer; described by pkg/components/cloudcontroller).
package cloudcontroller

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/loadbalancer"
)

// NewCommand returns `kubernix cloud-controller --kubeconfig FILE --pool
// CIDR --healthz ADDR:PORT --cluster-name NAME`. Its flags are its own, not
// the cluster config's: the supervisor passes them (components.Description).
func NewCommand(env *common.Env) *cobra.Command {
	var kubeconfig, pool, healthz, cluster, rootlesskitAPI string
	cmd := &cobra.Command{
		Use:    "cloud-controller --kubeconfig FILE --pool CIDR --healthz ADDR:PORT",
		Short:  "internal: run the service controller that gives LoadBalancer Services an IP of the pool",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := loadbalancer.Options{Kubeconfig: kubeconfig, ClusterName: cluster, RootlesskitAPI: rootlesskitAPI}
			var err error
			if opts.Pool, err = netip.ParsePrefix(pool); err != nil {
				return fmt.Errorf("%w: --pool %q: %v", config.ErrInvalid, pool, err)
			}
			if opts.Healthz, err = netip.ParseAddrPort(healthz); err != nil {
				return fmt.Errorf("%w: --healthz %q: %v", config.ErrInvalid, healthz, err)
			}
			log := slog.New(slog.NewTextHandler(env.Streams.Err, nil))
			return loadbalancer.Run(cmd.Context(), log, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the controller's identity")
	f.StringVar(&pool, "pool", "", "IPv4 prefix LoadBalancer IPs come from")
	f.StringVar(&healthz, "healthz", "", "address:port of the plain-HTTP /healthz")
	f.StringVar(&cluster, "cluster-name", config.DefaultName, "the cluster's name")
	f.StringVar(&rootlesskitAPI, "rootlesskit-api", "", "rootlesskit's API socket: also publish LoadBalancer ports on the host's 127.0.0.1 (rootless)")
	for _, name := range []string{"kubeconfig", "pool", "healthz"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
