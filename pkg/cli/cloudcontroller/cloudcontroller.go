// Package cloudcontroller implements the hidden `kubernix cloud-controller`,
// the supervised process that gives LoadBalancer Services their IPs
// (pkg/loadbalancer; described by pkg/components/cloudcontroller).
package cloudcontroller

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/loadbalancer"
)

// NewCommand returns `kubernix cloud-controller --kubeconfig FILE --pool
// CIDR[,CIDR] --healthz ADDR:PORT --cluster-name NAME`. Its flags are its
// own, not the cluster config's: the supervisor passes them
// (components.Description).
func NewCommand(env *common.Env) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:    "cloud-controller --kubeconfig FILE --pool CIDR[,CIDR] --healthz ADDR:PORT",
		Short:  "internal: run the service controller that gives LoadBalancer Services an IP of the pool of each of their IP families",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(env.Streams.Err, nil))
			return loadbalancer.Run(cmd.Context(), log, opts)
		},
	}
	f.bind(cmd.Flags())
	for _, name := range []string{"kubeconfig", "pool", "healthz"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// flags are the command's flags.
type flags struct {
	kubeconfig, healthz, cluster, rootlesskitAPI string
	pools                                        []string
}

// bind defines f's flags in fs.
func (f *flags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the controller's identity")
	fs.StringSliceVar(&f.pools, "pool", nil, "prefix LoadBalancer IPs come from: an IPv4 (/30 or larger) and/or an IPv6 one (/64 to /126), primary family first (repeat, or separate with commas)")
	fs.StringVar(&f.healthz, "healthz", "", "address:port of the plain-HTTP /healthz")
	fs.StringVar(&f.cluster, "cluster-name", config.DefaultName, "the cluster's name")
	fs.StringVar(&f.rootlesskitAPI, "rootlesskit-api", "", "rootlesskit's API socket: also publish the ports of IPv4 LoadBalancer IPs on the host's 127.0.0.1 (rootless)")
}

// options are Run's options of f. It errors, wrapping config.ErrInvalid,
// when --pool or --healthz is not usable.
func (f *flags) options() (loadbalancer.Options, error) {
	opts := loadbalancer.Options{Kubeconfig: f.kubeconfig, ClusterName: f.cluster, RootlesskitAPI: f.rootlesskitAPI}
	var err error
	if opts.Pools, err = loadbalancer.ParsePools(f.pools); err != nil {
		return opts, fmt.Errorf("%w: --pool: %w", config.ErrInvalid, err)
	}
	if opts.Healthz, err = netip.ParseAddrPort(f.healthz); err != nil {
		return opts, fmt.Errorf("%w: --healthz %q: %v", config.ErrInvalid, f.healthz, err)
	}
	return opts, nil
}
