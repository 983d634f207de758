package cluster

import (
	"fmt"

	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/plan"
)

// pruneRegistryHosts removes the hosts.toml files kubernix rendered in
// containerd's registry config dir that this plan does not render (a
// mirror dropped, the registry's port changed, the registry turned off).
func pruneRegistryHosts(p *plan.Plan) error {
	var keep []string
	if p.Cfg.LocalRegistryPort() != 0 {
		keep = p.RegistrySpec().HostsFiles()
	}
	if err := registry.PruneHosts(p.Paths.Registries(), keep); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}
	return nil
}
