package plan

import (
	"os"
	"path/filepath"

	"github.com/kubernix/kubernix/pkg/addons"
	"github.com/kubernix/kubernix/pkg/components/cloudcontroller"
)

// describeCloudController describes, with the loadbalancer addon, the cloud controller, which gives
// LoadBalancer Services an IP of the cluster's pool (pkg/loadbalancer),
// with the identity its RBAC binding (the cluster-admins task) serves.
// In a rootless cluster it also publishes their ports on the host's
// 127.0.0.1 through rootlesskit's API socket. With the ingress addon it
// also gives each Gateway a traefik of its own (pkg/gateway).
func describeCloudController(p *Plan) ([]Described, error) {
	if !p.Cfg.HasAddon(addons.LoadBalancer) {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec := cloudcontroller.Spec{
		Self: self, ClusterName: p.Cfg.Name, Kubeconfig: p.Paths.Kubeconfig(cloudcontroller.Name),
		Pools: p.Net.LoadBalancerCIDRs(), IP: p.APIServerIP, After: []string{clusterAdminsTask},
	}
	if p.Rootless && p.RootlesskitStateDir != "" {
		spec.RootlesskitAPI = filepath.Join(p.RootlesskitStateDir, "api.sock")
	}
	if ingress, ok := addons.Lookup(addons.Ingress); ok && p.Cfg.HasAddon(addons.Ingress) {
		spec.GatewayTemplate = ingress.Deployment
	}
	return plain(cloudcontroller.Describe(spec)), nil
}
