package up

import (
	"context"
	"fmt"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/preflight"
)

// dryRun is `kubernix up --dry-run`: it prints the plan of the cluster up
// would start (plan.WritePlan), as root or, for an ordinary user,
// rootless, and changes nothing: no state dir, PKI, network or process.
// It goes through up's own checks (preflight.Prepare, in a dry run): what
// the config changes in the cluster that ran before is printed after the
// plan, and so is what up would refuse (a running cluster, a change that
// needs a new cluster, the doctor's failed checks, a taken port), with
// up's exit code.
func dryRun(ctx context.Context, env *common.Env, cfg config.Config) error {
	mode := preflight.AsRoot
	if doctor.DetectMode() == doctor.ModeRootless {
		mode = preflight.AsUser
	}
	explicitKeys, _ := explicit(env) // runUp read the sources already
	pr, err := preflight.Prepare(ctx, cfg, preflight.PrepareOptions{Mode: mode, DryRun: true, Explicit: explicitKeys})
	if err != nil {
		return err
	}
	if err := plan.WritePlan(env.Streams.Out, pr.Plan); err != nil {
		return err
	}
	for _, n := range pr.Notices {
		common.Fprintf(env.Streams.Err, "%s\n", n)
	}
	preflight.WriteChanges(env.Streams.Err, cfg.Name, pr.Changes)
	if pr.Report.Failed() {
		pr.Report.Failures().Print(env.Streams.Err)
	}
	if len(pr.Refusals) > 0 {
		return fmt.Errorf("up would refuse: %w", pr.Refusals[0])
	}
	return nil
}
