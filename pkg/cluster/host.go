package cluster

import (
	"fmt"
	"os"

	"github.com/kubernix/kubernix/pkg/network"
	"github.com/kubernix/kubernix/pkg/node"
)

// prepareHost joins the host's sysctl ledger before the kubelets and
// network.Setup change the host (so the FORWARD policy is DROP before
// forwarding is on), and mounts the cgroup v1 controllers the kernel has
// but no hierarchy mounts, so container stats work. A rootless cluster
// does neither.
func (c *Cluster) prepareHost() error {
	if c.Plan.Rootless {
		// In a user namespace the kubelets cannot change kernel
		// tunables (KubeletInUserNamespace lets them go on), and no
		// cgroup hierarchy can be mounted.
		return nil
	}
	if err := network.JoinSysctls(c.Plan.Paths); err != nil {
		return fmt.Errorf("record the host's sysctls and forwarding: %w", err)
	}
	if os.Geteuid() == 0 {
		mounted, err := node.MountCgroupControllers(c.Plan.Facts.Cgroups)
		if len(mounted) > 0 {
			c.Log.Info("mounted cgroup v1 controllers the host left unmounted, so container stats work", "controllers", mounted)
		}
		if err != nil {
			c.Log.Debug("some cgroup controllers could not be mounted", "err", err)
		}
	}
	return nil
}
