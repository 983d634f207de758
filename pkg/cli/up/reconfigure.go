package up

import (
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
)

// checkChanges compares cfg, its ports chosen, with the config its
// cluster last ran with (cluster.ConfigChanges): it refuses, changing
// nothing, what needs a new cluster (an error wrapping config.ErrInvalid),
// and prints the other changes, which up applies.
func checkChanges(env *common.Env, cfg config.Config, rootless bool) error {
	changes, err := cluster.ConfigChanges(cfg, rootless)
	if err != nil {
		return err
	}
	if err := cluster.RefuseNewCluster(cfg.Name, changes); err != nil {
		return err
	}
	cluster.WriteChanges(env.Streams.Out, cfg.Name, changes)
	return nil
}

// refuseRunning is up's error for cfg's cluster while its supervisor pid
// runs: cluster.ErrTaken, listing what cfg changes (a record that cannot
// be read lists nothing), its ports chosen as up would choose them. A
// rootless cluster's ports are compared as given: its own port forward
// holds them, which ChoosePortOn cannot tell from another program's.
func refuseRunning(cfg config.Config, pid int, rootless bool) error {
	if !rootless {
		cfg, _, _ = choosePorts(cfg, false)
	}
	changes, _ := cluster.ConfigChanges(cfg, rootless)
	return cluster.RunningError(cfg.Name, pid, changes)
}

// choosePorts returns cfg with the apiserver and registry ports up would
// use (cluster.ChoosePort and ChooseRegistryPort; rootless, those free on
// the host's loopback), each left as it is when it cannot be chosen, and
// the errors choosing them.
func choosePorts(cfg config.Config, rootless bool) (config.Config, error, error) {
	port, portErr := cluster.ChoosePort(cfg)
	if rootless {
		port, portErr = cluster.ChoosePortOn(hostLoopback, cfg.APIServerPort)
	}
	if portErr == nil {
		cfg.APIServerPort = port
	}
	regPort, regErr := cluster.ChooseRegistryPort(cfg)
	if rootless {
		regPort, regErr = cluster.ChooseRegistryPortOn(hostLoopback, cfg.LocalRegistryPort())
	}
	if regErr == nil && regPort != 0 {
		cfg.RegistryPort = regPort
	}
	return cfg, portErr, regErr
}
