package up

import (
	"os"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// checkChanges compares cfg, its ports chosen, with the config its
// cluster last ran with (cluster.ConfigChanges): it refuses, changing
// nothing, what needs a new cluster (an error wrapping config.ErrInvalid),
// and prints the other changes, which up applies. A record it cannot read
// is left to the supervisor, whose cluster.Up refuses it before it starts
// anything (RemoveLeftovers) and reports that as its own error.
func checkChanges(env *common.Env, cfg config.Config, rootless bool) error {
	changes, err := cluster.ConfigChanges(cfg, rootless)
	if err != nil {
		return nil
	}
	if err := cluster.RefuseNewCluster(cfg.Name, changes); err != nil {
		return err
	}
	cluster.WriteChanges(env.Streams.Out, cfg.Name, changes)
	return nil
}

// refuseRunning is up's error for cfg's cluster while its supervisor pid
// runs: cluster.ErrTaken, listing runningChanges.
func refuseRunning(cfg config.Config, pid int, asUser bool) error {
	return cluster.RunningError(cfg.Name, pid, runningChanges(cfg, asUser))
}

// refuseRunningChanged is refuseRunning for a rootless cluster, checked
// before the state dir's lock, which its supervisor holds: nil when the
// cluster does not run or cfg changes nothing in it, so that the lock's
// message stays the one of an unchanged config.
func refuseRunningChanged(cfg config.Config) error {
	pid, ok := cluster.Running(cfg.Paths())
	if !ok {
		return nil
	}
	changes := runningChanges(cfg, true)
	if len(changes) == 0 {
		return nil
	}
	return cluster.RunningError(cfg.Name, pid, changes)
}

// runningChanges is what cfg changes in its running cluster (a record
// that cannot be read lists nothing), its ports chosen as up would choose
// them. A rootless cluster's ports are compared as given (its own port
// forward holds them, which ChoosePortOn cannot tell from another
// program's), and its cgroup parent, unset, as the delegated one that up
// would take.
func runningChanges(cfg config.Config, asUser bool) []cluster.Change {
	if !asUser {
		cfg, _, _ = choosePorts(cfg, false)
	} else if cfg.CgroupParent == "" {
		cfg.CgroupParent, _ = rootless.DelegatedCgroup(os.Getuid())
	}
	changes, _ := cluster.ConfigChanges(cfg, asUser)
	return changes
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

// upConfig is up's config: with Env.UseClusterSettings, a cluster that
// ran before starts from the settings its last up was given, which it
// says on the error stream.
func upConfig(env *common.Env) (config.Config, error) {
	if asked := env.UseClusterSettings(); asked != "" {
		common.Fprintf(env.Streams.Err, "starting from the settings of the cluster's last up (%s)\n", asked)
	}
	return env.Config()
}

// asked renders the settings this up was given, for the cluster's
// AskedConfigFile: cfg, with what no source set explicitly commented out;
// nil (nothing written) when the sources cannot be read again.
func asked(env *common.Env, cfg config.Config) []byte {
	_, explicit, err := config.LoadExplicit(env.Flags, env.Environ)
	if err != nil {
		return nil
	}
	b, err := config.MarshalExplicit(cfg, explicit)
	if err != nil {
		return nil
	}
	return b
}
