// Package cloudcontroller implements the hidden `kubernix cloud-controller`,
// the supervised process that gives LoadBalancer Services their IPs
// (pkg/loadbalancer) and, with --gateway-template, each Gateway of
// traefik's GatewayClasses a traefik of its own (pkg/gateway); described
// by pkg/components/cloudcontroller.
package cloudcontroller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/gateway"
	"github.com/kubernix/kubernix/pkg/kubeconfig"
	"github.com/kubernix/kubernix/pkg/loadbalancer"
)

// NewCommand returns `kubernix cloud-controller --kubeconfig FILE --pool
// CIDR[,CIDR] --healthz ADDR:PORT --cluster-name NAME [--gateway-template
// NAMESPACE/NAME]`. Its flags are its own, not the cluster config's: the
// supervisor passes them (components.Description).
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
			template, err := f.gatewayTemplate()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(env.Streams.Err, nil))
			g, ctx := errgroup.WithContext(cmd.Context())
			g.Go(func() error { return loadbalancer.Run(ctx, log, opts) })
			if template != (types.NamespacedName{}) {
				g.Go(func() error { return runGateways(ctx, log, f.kubeconfig, template) })
			}
			return g.Wait()
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
	kubeconfig, healthz, cluster, rootlesskitAPI, gateways string
	pools                                                  []string
}

// bind defines f's flags in fs.
func (f *flags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the controller's identity")
	fs.StringSliceVar(&f.pools, "pool", nil, "prefix LoadBalancer IPs come from: an IPv4 (/30 or larger) and/or an IPv6 one (/64 to /126), primary family first (repeat, or separate with commas)")
	fs.StringVar(&f.healthz, "healthz", "", "address:port of the plain-HTTP /healthz")
	fs.StringVar(&f.cluster, "cluster-name", config.DefaultName, "the cluster's name")
	fs.StringVar(&f.rootlesskitAPI, "rootlesskit-api", "", "rootlesskit's API socket: also publish the ports of IPv4 LoadBalancer IPs on the host's 127.0.0.1 (rootless)")
	fs.StringVar(&f.gateways, "gateway-template", "", "namespace/name of the ingress addon's traefik Deployment: give each Gateway of traefik's GatewayClasses a traefik of its own made from it")
}

// gatewayTemplate is --gateway-template, zero when it is not given; it
// errors, wrapping config.ErrInvalid, when it is not namespace/name.
func (f *flags) gatewayTemplate() (types.NamespacedName, error) {
	if f.gateways == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, err := cache.SplitMetaNamespaceKey(f.gateways)
	if err != nil || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("%w: --gateway-template %q: want namespace/name", config.ErrInvalid, f.gateways)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// runGateways runs the Gateway provisioner with the identity of the
// kubeconfig file.
func runGateways(ctx context.Context, log *slog.Logger, kubeconfigFile string, template types.NamespacedName) error {
	rc, err := kubeconfig.RESTConfig(kubeconfigFile, "kubernix-cloud-controller")
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	gw, err := gatewayclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	return gateway.Run(ctx, log, kube, gw, template)
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
