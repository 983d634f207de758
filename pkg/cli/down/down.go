// Package down implements `kubernix down`.
package down

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

// NewCommand returns `kubernix down`: it asks a live supervisor to bring
// the cluster down in order and waits for it; then, or when the supervisor
// is gone (even SIGKILLed), it removes whatever is left from the state dir.
// The state dir (PKI, etcd data) is kept for the next up.
//
// It holds the state dir's lock (state.Lock) while it works. When an
// `up` holds it, whether the cluster is starting or running, down sends
// that supervisor SIGTERM (one that is starting aborts and removes what
// it started) and waits for the lock; after --timeout it sends SIGKILL and
// cleans up itself. When another `down` holds it, it waits for it.
func NewCommand(env *common.Env) *cobra.Command {
	var (
		timeout time.Duration
		all     bool
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the cluster (or --all) and remove everything it put on the host",
		Long: `Stop the cluster and remove everything it put on the host; the state dir
(PKI, etcd data, logs) is kept for the next up (` + "`kubernix delete`" + ` removes it).
A cluster that does not exist is not an error: down says so and exits 0.
--all brings down every running or broken cluster of this user on this
machine (those ` + "`kubernix list`" + ` shows), one after the other, and exits 1 if
any failed, after trying all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := common.CheckTimeout(timeout); err != nil {
				return err
			}
			if err := CheckAll(cmd, all); err != nil {
				return err
			}
			if all {
				return All(cmd.Context(), env, timeout)
			}
			// The cluster-selecting flags (--name, --state-dir).
			cfg, err := env.SavedConfig()
			if errors.Is(err, os.ErrNotExist) {
				common.Fprintf(env.Streams.Err, "cluster %q does not exist (no kubernix.toml in %s): nothing to bring down\n", cfg.Name, cfg.StateDir)
				return nil
			}
			var damaged *state.DamagedError
			errors.As(err, &damaged)
			if err := env.WarnDamaged(err); err != nil {
				return err
			}
			if err := Down(cmd.Context(), env, cfg, timeout); err != nil {
				return err
			}
			if damaged != nil && !damaged.Missing() {
				common.Fprintf(env.Streams.Err, "%s is kept as it is, and the next `kubernix up` refuses it: fix or remove it first "+
					"(up then starts from the settings of %s, if any), or remove the cluster with `kubernix delete`\n",
					damaged.File, cfg.Paths().AskedConfigFile())
			}
			return nil
		},
	}
	env.BindSelector(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the supervisor's orderly down")
	cmd.Flags().BoolVar(&all, "all", false, "bring down every running or broken cluster of this user on this machine")
	return cmd
}

// Down brings the cluster of cfg (its recorded config, or for a damaged
// record the one state.Recover made) down as `kubernix down` does and
// reports it on env's output. It asks a live supervisor first, which
// needs only cfg's name and state dir: the supervisor has its plan in
// memory. Then it cleans up from the plan of cfg, which also stops every
// live process recorded in the state dir (cluster.Cleanup). Errors are
// the cleanup's, or name what was left behind.
func Down(ctx context.Context, env *common.Env, cfg config.Config, timeout time.Duration) error {
	log := env.Logger(cfg)
	begin := time.Now()
	lock, err := lockForDown(ctx, env, cfg, timeout)
	if err != nil {
		return err
	}
	defer lock.Close()
	// A supervisor of an older kubernix holds no lock.
	if sup, err := process.Adopt(state.SupervisorRunDir(cfg.Paths())); err == nil && sup.PID() != os.Getpid() {
		pid := sup.PID()
		common.Fprintf(env.Streams.Out, "asking supervisor (pid %d) to bring cluster %q down\n", pid, cfg.Name)
		requestDown(cfg)
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
	pl, err := common.Plan(cfg)
	if err != nil {
		return err
	}
	if err := cluster.Cleanup(context.WithoutCancel(ctx), pl, log); err != nil {
		return err
	}
	left, err := cluster.Leftovers(pl)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind after down: %v", left)
	}
	common.Fprintf(env.Streams.Out, "cluster %q is down (%s)\n", cfg.Name, time.Since(begin).Round(10*time.Millisecond))
	if cfg.Ephemeral {
		return DeleteEphemeral(env, cfg)
	}
	return nil
}

// requestDown tells the supervisor of cfg's cluster, before it is
// signalled, that this down waits for it (state.DownRequestedFile). A
// failure to write it only means that a foreground up deletes its
// ephemeral cluster itself.
func requestDown(cfg config.Config) {
	_ = os.WriteFile(state.DownRequestedFile(cfg.Paths()), nil, 0o600)
}

// DeleteEphemeral removes the state dir of cfg's ephemeral cluster
// (config.Config.Ephemeral), once it is down, and its entry in the index
// of clusters, as `kubernix delete` does (state.Purge). A record of this
// process as the cluster's supervisor (a foreground up that brought it
// down) goes first. Errors are state.Purge's: what of the cluster
// remains, or why its state dir could not be removed.
func DeleteEphemeral(env *common.Env, cfg config.Config) error {
	p := cfg.Paths()
	if _, err := os.Stat(p.State); errors.Is(err, os.ErrNotExist) {
		return nil // the foreground up that supervised it deleted it
	}
	if pid, ok := process.Running(state.SupervisorRunDir(p)); ok && pid == os.Getpid() {
		if err := os.RemoveAll(state.SupervisorRunDir(p)); err != nil {
			return err
		}
	}
	if err := state.Purge(state.DefaultInventory(), p, cfg.Name); err != nil {
		return fmt.Errorf("ephemeral cluster %q: %w", cfg.Name, err)
	}
	common.Fprintf(env.Streams.Out, "cluster %q deleted (ephemeral: state dir %s removed)\n", cfg.Name, p.State)
	return nil
}

// All runs Down on every cluster of the user's inventory
// (state.DefaultInventory) that is running or broken, in the
// inventory's order, whatever failed before (see ForEach).
func All(ctx context.Context, env *common.Env, timeout time.Duration) error {
	return ForEach(ctx, env, false, func(cfg config.Config) error { return Down(ctx, env, cfg, timeout) })
}

// ForEach calls f with the recorded config of every cluster of the
// user's inventory that is running or broken (and stopped ones too with
// stopped), in order, until ctx ends; that of a cluster whose record is
// damaged is the one recovered from its other records, after a warning
// (state.LoadCluster, Env.WarnDamaged); failures are reported on the error
// stream and counted in the error (exit 1). An inventory that could not
// be read in full is an error too (exit 1), after what was read is done.
func ForEach(ctx context.Context, env *common.Env, stopped bool, f func(config.Config) error) error {
	infos, err := state.DefaultInventory().Find()
	failed, tried := 0, 0
	for _, in := range infos {
		if in.State == state.StateStopped && !stopped {
			continue
		}
		tried++
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cfg, err := state.LoadCluster(in.StateDir)
		if err = env.WarnDamaged(err); err == nil {
			err = f(cfg)
		}
		if err != nil {
			failed++
			common.Fprintf(env.Streams.Err, "kubernix: cluster %q (%s): %v\n", in.Name, in.StateDir, err)
		}
	}
	if tried == 0 && err == nil {
		common.Fprintf(env.Streams.Err, "no clusters to act on (kubernix list shows them)\n")
	}
	if failed > 0 {
		err = errors.Join(fmt.Errorf("%d of %d cluster(s) failed", failed, tried), err)
	}
	if err != nil {
		return &common.ExitError{Code: 1, Err: err}
	}
	return nil
}

// lockForDown takes the state dir's lock for down, asking a supervisor
// that holds it to bring the cluster down and waiting up to timeout, then
// killing a supervisor that did not (its components are left to the
// cleanup, as after any killed supervisor). Only a holder whose record in
// the lock file checks out is signalled (state.BusyError: its PID and
// start time, checked again by process.Signal); for any other it waits.
func lockForDown(ctx context.Context, env *common.Env, cfg config.Config, timeout time.Duration) (*state.StateLock, error) {
	var holder *state.BusyError
	lock, err := state.WaitLock(ctx, cfg, state.VerbDown, timeout, func(b *state.BusyError) {
		holder = b
		if b.Verb != state.VerbUp || b.PID <= 0 {
			common.Fprintf(env.Streams.Out, "waiting: %v\n", b)
			return
		}
		common.Fprintf(env.Streams.Out, "asking supervisor (pid %d) to bring cluster %q down\n", b.PID, cfg.Name)
		requestDown(cfg)
		if err := process.Signal(b.PID, b.StartTime, syscall.SIGTERM); err != nil && !errors.Is(err, process.ErrNotRunning) {
			common.Fprintf(env.Streams.Err, "signal supervisor %d: %v\n", b.PID, err)
		}
	})
	if err == nil || !errors.Is(err, state.ErrBusy) || holder == nil || holder.Verb != state.VerbUp {
		return lock, err
	}
	var now *state.BusyError
	if !errors.As(err, &now) || now.PID <= 0 || now.Verb != state.VerbUp {
		return nil, err
	}
	common.Fprintf(env.Streams.Err, "supervisor (pid %d) did not bring the cluster down in %s; killing it and cleaning up without it\n", now.PID, timeout)
	if err := process.Signal(now.PID, now.StartTime, syscall.SIGKILL); err != nil && !errors.Is(err, process.ErrNotRunning) {
		return nil, fmt.Errorf("kill supervisor %d: %w", now.PID, err)
	}
	return state.WaitLock(ctx, cfg, state.VerbDown, 30*time.Second, nil)
}

// CheckAll returns an error wrapping config.ErrInvalid (exit 2) when
// --all (all) is given with a flag that selects one cluster: --name,
// --state-dir (or its alias --root) or --config.
func CheckAll(cmd *cobra.Command, all bool) error {
	if !all {
		return nil
	}
	var set []string
	for _, name := range []string{"name", "state-dir", "config"} {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%w: --all acts on every cluster of this user; leave out %s, or leave out --all to act on one cluster",
		config.ErrInvalid, strings.Join(set, " and "))
}
