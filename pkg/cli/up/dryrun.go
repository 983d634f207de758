package up

import (
	"context"
	"fmt"
	"maps"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
)

// dryRun is `kubernix up --dry-run`: it prints the plan of the cluster up
// would start (cluster.WritePlan), as root or, for an ordinary user,
// rootless, and changes nothing: no state dir, PKI, network or process.
// What up would refuse (the doctor's failed checks, a taken port) is
// printed after the plan, and the exit code is then up's.
func dryRun(ctx context.Context, env *common.Env, cfg config.Config) error {
	rootless := doctor.DetectMode() == doctor.ModeRootless
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
	finder := bins.NewFinder(cfg.BinDir, cfg.BundleDir)
	report, facts := doctor.Check(ctx, finder, doctor.Options{CNIDir: cfg.CNIDir, CgroupParent: cfg.CgroupParent})
	// Where a binary is missing, the plan names where it was looked for.
	located := doctor.Locate(finder, cfg.CNIDir)
	maps.Copy(located.Paths, facts.Paths)
	facts.Paths = located.Paths
	if facts.CNIDir == "" {
		facts.CNIDir = located.CNIDir
	}
	imagesDir, imagesErr := finder.ImagesDir()
	newPlan := cluster.NewPlan
	if rootless {
		cfg.CgroupParent = facts.CgroupParent
		newPlan = cluster.NewRootlessPlan
	}
	plan, err := newPlan(cfg, facts, imagesDir)
	if err != nil {
		return err
	}
	compErr := cluster.CheckComponents(ctx, plan)
	if err := cluster.WritePlan(env.Streams.Out, plan); err != nil {
		return err
	}
	if report.Failed() {
		report.Failures().Print(env.Streams.Err)
		return fmt.Errorf("up would refuse: the host is not ready (`kubernix doctor` shows how to fix it)")
	}
	for _, err := range []error{compErr, portErr, regErr, imagesErr, cluster.CheckAddonImages(plan), cluster.Preflight(cfg)} {
		if err != nil {
			return fmt.Errorf("up would refuse: %w", err)
		}
	}
	return nil
}
