package cluster

import (
	"os"

	"github.com/kubernix/kubernix/pkg/components"
	"github.com/kubernix/kubernix/pkg/components/cloudcontroller"
)

// describeCloudController describes the cloud controller, which gives
// LoadBalancer Services an IP of the cluster's pool (pkg/loadbalancer),
// with the identity its RBAC binding (the cluster-admins task) serves.
func describeCloudController(p *Plan) ([]components.Description, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []components.Description{cloudcontroller.Describe(cloudcontroller.Spec{
		Self: self, ClusterName: p.Cfg.Name, Kubeconfig: p.Paths.Kubeconfig(cloudcontroller.Name),
		Pool: p.Net.LoadBalancer, IP: p.APIServerIP, After: []string{clusterAdminsTask},
	})}, nil
}
