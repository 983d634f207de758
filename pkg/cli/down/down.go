// Package down implements `kubernix down`.
package down

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/process"
)

// NewCommand returns `kubernix down`: it asks a live supervisor to bring
// the cluster down in order and waits for it; then, or when the supervisor
// is gone (even SIGKILLed), it removes whatever is left from the state dir.
// The state dir (PKI, etcd data) is kept for the next up.
func NewCommand(env *common.Env) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the cluster and remove everything it put on the host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := env.SavedConfig()
			if err != nil {
				return err
			}
			log := env.Logger(cfg)
			begin := time.Now()
			if sup, err := process.Adopt(cluster.SupervisorRunDir(cfg.Paths())); err == nil && sup.PID() != os.Getpid() {
				pid := sup.PID()
				common.Fprintf(env.Streams.Out, "asking supervisor (pid %d) to bring cluster %q down\n", pid, cfg.Name)
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
					return fmt.Errorf("signal supervisor %d: %w", pid, err)
				}
				// Until the process is gone, not only its pidfile: an
				// up right after down must not meet it.
				select {
				case <-sup.Done():
				case <-time.After(timeout):
					log.Warn("supervisor did not exit in time; cleaning up without it", "pid", pid)
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			plan, _, err := common.Plan(ctx, cfg, false)
			if err != nil {
				return err
			}
			if err := cluster.Cleanup(context.WithoutCancel(ctx), plan, log); err != nil {
				return err
			}
			left, err := cluster.Leftovers(plan)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				return fmt.Errorf("left behind after down: %v", left)
			}
			common.Fprintf(env.Streams.Out, "cluster %q is down (%s)\n", cfg.Name, time.Since(begin).Round(10*time.Millisecond))
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the supervisor's orderly down")
	return cmd
}
