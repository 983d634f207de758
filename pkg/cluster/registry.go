package cluster

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/kubernix/kubernix/pkg/components/registry"
	"github.com/kubernix/kubernix/pkg/config"
)

// registryFlag moves the local registry's port.
const registryFlag = "--registry-port"

// registryPorts are the listeners of the local registry on port in the
// namespace the cluster runs in: the bridge address and the loopback
// address pushes go to (rootless, rootlesskit's namespace's, where its
// port forward from the host arrives). None when port is 0 (no registry).
func registryPorts(bridge netip.Addr, port int) []HostPort {
	if port == 0 {
		return nil
	}
	return []HostPort{{registry.Name, bridge, port, registryFlag}, {registry.LocalName, registryLocalIP, port, registryFlag}}
}

// ChooseRegistryPort returns the local registry's port for cfg (a root
// cluster): its own, or, when that is the default and taken on the bridge
// address or 127.0.0.1 (say, by another kubernix cluster's registry),
// the next free one (the caller says so). An explicitly chosen port that
// is taken is an error naming --registry-port, wrapping
// config.ErrInvalid. A port held by the cluster's own leftover processes
// counts as free. 0 (no registry) is returned as is.
func ChooseRegistryPort(cfg config.Config) (int, error) {
	n, err := cfg.Network()
	if err != nil {
		return 0, err
	}
	ignore := recordedPIDs(cfg.Paths())
	return chooseRegistryPort(cfg.LocalRegistryPort(), func(port int) []HostPort {
		return registryPorts(n.BridgeIP(), port)
	}, ignore)
}

// ChooseRegistryPortOn is ChooseRegistryPort for the host side of a
// rootless cluster's port forward on ip (127.0.0.1).
func ChooseRegistryPortOn(ip netip.Addr, port int) (int, error) {
	return chooseRegistryPort(port, func(port int) []HostPort {
		return []HostPort{{registry.Name + " (rootlesskit's port forward)", ip, port, registryFlag}}
	}, nil)
}

func chooseRegistryPort(port int, listeners func(int) []HostPort, ignore map[int]bool) (int, error) {
	if port == 0 {
		return 0, nil
	}
	return nextFreePort(port, config.DefaultRegistryPort, func(port int) error {
		var errs []error
		for _, hp := range listeners(port) {
			if err := portProblem(hp, ignore); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: %w", config.ErrInvalid, errors.Join(errs...))
		}
		return nil
	})
}
