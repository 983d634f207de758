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
// How the config differs from the one the cluster last ran with is
// printed after the plan (cluster.ConfigChanges); what up would refuse (a
// running cluster, a change that needs a new cluster, the doctor's
// failed checks, a taken port) is printed after the plan, and the exit
// code is then up's.
func dryRun(ctx context.Context, env *common.Env, cfg config.Config) error {
	rootless := doctor.DetectMode() == doctor.ModeRootless
	cfg, portErr, regErr := choosePorts(cfg, rootless)
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
	if pid, ok := cluster.Running(plan.Paths); ok {
		return fmt.Errorf("up would refuse: %w", refuseRunning(cfg, pid, rootless))
	}
	changes, err := cluster.ConfigChanges(cfg, rootless)
	if err != nil {
		return fmt.Errorf("up would refuse: %w", err)
	}
	cluster.WriteChanges(env.Streams.Err, cfg.Name, changes)
	if report.Failed() {
		report.Failures().Print(env.Streams.Err)
		return fmt.Errorf("up would refuse: the host is not ready (`kubernix doctor` shows how to fix it)")
	}
	for _, err := range []error{cluster.RefuseNewCluster(cfg.Name, changes), compErr, portErr, regErr, imagesErr, cluster.CheckAddonImages(plan), cluster.Preflight(cfg)} {
		if err != nil {
			return fmt.Errorf("up would refuse: %w", err)
		}
	}
	return nil
}
