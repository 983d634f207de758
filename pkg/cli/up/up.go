// Package up implements `kubernix up`: it validates the config, checks the
// host, and brings the cluster up, staying in the foreground as its
// supervisor (Ctrl-C or SIGTERM runs an orderly down) or, with --detach,
// handing over to a background supervisor and returning once Ready.
package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kubernix/kubernix/internal/fileinfo"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cli/down"
	"github.com/kubernix/kubernix/pkg/cli/envcmd"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/doctor"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/preflight"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/state"
)

type flags struct {
	detach   bool
	retain   bool
	notifyFD int
	timeout  time.Duration
	// rootlessChild: this is the kubernix that rootlesskit runs (see
	// rootless.go); notifyPath is then the FIFO to the parent.
	rootlessChild bool
	notifyPath    string
	// dryRun prints the plan and changes nothing (dryrun.go).
	dryRun bool
	// parsed is the parsed command line, which a supervisor that up
	// starts gets (passThroughArgs).
	parsed *pflag.FlagSet
}

// NewCommand returns `kubernix up`.
func NewCommand(env *common.Env) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster and supervise it (foreground, or --detach)",
		Long: `Start a cluster: etcd, the control plane, and per node containerd, kubelet
and kube-proxy, then CoreDNS. It returns (with --detach) or reports ready once
every node is Ready and CoreDNS is Available, and merges the context
kubernix-<name> into your kubeconfig.

In the foreground, kubernix stays the cluster's supervisor: Ctrl-C, SIGTERM
or SIGHUP (the terminal closed) brings it down in order; under nohup SIGHUP
stays ignored. On a terminal it starts --shell with the cluster's
environment (see kubernix env) and brings the cluster down when it exits.
A detached supervisor ignores SIGHUP. One up or down of a cluster runs at
a time: another fails at once, naming the process that runs it.

Run as an ordinary user, kubernix runs the cluster rootless: it re-executes
itself under rootlesskit (a user namespace with slirp4netns networking) and
publishes the apiserver on 127.0.0.1; kubernix doctor lists what the host
must provide for that.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.parsed = cmd.Flags()
			return run(cmd.Context(), env, f)
		},
	}
	env.BindConfig(cmd)
	cmd.Flags().BoolVarP(&f.detach, "detach", "d", false, "start a background supervisor and return once the cluster is Ready")
	cmd.Flags().BoolVar(&f.retain, "retain", false, "on failure, keep what was started for inspection (kubernix down removes it)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up if the cluster is not Ready in this time")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print every component's command line, environment, needs and files in start order, and change nothing")
	cmd.Flags().IntVar(&f.notifyFD, "notify-fd", 0, "internal: report progress and readiness to a detaching parent on this fd")
	_ = cmd.Flags().MarkHidden("notify-fd")
	cmd.Flags().StringVar(&f.notifyPath, "notify-path", "", "internal: report progress and readiness to the parent on this FIFO")
	_ = cmd.Flags().MarkHidden("notify-path")
	cmd.Flags().BoolVar(&f.rootlessChild, "rootless-child", false, "internal: run the cluster inside rootlesskit's namespaces")
	_ = cmd.Flags().MarkHidden("rootless-child")
	return cmd
}

// run is `kubernix up`. A supervisor that another kubernix started reports
// its error, if any, to it (openNotifier).
func run(ctx context.Context, env *common.Env, f *flags) error {
	notify, err := openNotifier(f)
	if err != nil {
		return err
	}
	defer notify.Close()
	err = runUp(ctx, env, f, notify)
	notify.fail(err)
	return err
}

func runUp(ctx context.Context, env *common.Env, f *flags, notify *notifier) error {
	cfg, err := upConfig(env)
	if err == nil {
		err = common.CheckTimeout(f.timeout)
	}
	if err != nil {
		return err
	}
	if f.dryRun {
		return dryRun(ctx, env, cfg)
	}
	if f.notifyFD > 0 || f.rootlessChild {
		// A supervisor kubernix started has no terminal to lose: a
		// SIGHUP is stray. The kubernix in the terminal, if any, turns
		// the terminal's SIGHUP into a SIGTERM to it.
		signal.Ignore(syscall.SIGHUP)
	}
	// One up or down of a cluster at a time, held for the supervisor's
	// life: a supervisor we start inherits it (state.Lock). Taking it
	// makes the state dir, so as root it is taken once the read-only
	// checks have passed: bad input leaves nothing behind.
	stdin, _ := env.Streams.In.(*os.File)
	lockState := func() (*state.StateLock, error) { return lockAndRecord(cfg, stdin) }
	if f.rootlessChild {
		lock, err := state.Lock(cfg, state.VerbUp, stdin)
		if err != nil {
			return err
		}
		defer lock.Close()
		return runRootlessChild(ctx, env, cfg, f, notify)
	}
	mode := preflight.AsRoot
	switch doctor.DetectMode() {
	case doctor.ModeRootless:
		mode = preflight.AsUser
	case doctor.ModeRootlessChild:
		return errors.New("kubernix up runs as root, or as an ordinary user (it then starts rootlesskit itself), not as root of a user namespace")
	}
	// Every check, read-only, before the lock (which makes the state
	// dir): bad input leaves nothing behind.
	pl, err := prepare(ctx, env, cfg, preflight.PrepareOptions{Mode: mode})
	if err != nil {
		return err
	}
	lock, err := lockState()
	if err != nil {
		return err
	}
	defer lock.Close()
	if mode == preflight.AsUser {
		return endEphemeral(env, pl.Cfg, f, runRootless(ctx, env, pl, f, lock))
	}
	if err := state.ClearRootless(cfg.Paths()); err != nil {
		return err
	}
	if f.detach {
		return detach(ctx, env, pl.Cfg, f, lock)
	}
	return endEphemeral(env, pl.Cfg, f, supervise(ctx, env, pl.Cfg, f, pl, notify))
}

// endEphemeral deletes the ephemeral cluster (config.Config.Ephemeral) of
// a foreground up that brought it down, or that failed to bring it up
// (unless --retain), as down does (down.DeleteEphemeral); err is the
// up's, returned with the deletion's. A detached up, the supervisor it
// starts, and a foreground up that `kubernix down` stopped (it deletes
// the cluster once it has the lock: state.DownRequestedFile) leave it
// to down.
func endEphemeral(env *common.Env, cfg config.Config, f *flags, err error) error {
	if !cfg.Ephemeral || f.detach || f.notifyFD > 0 || (err != nil && f.retain) ||
		fileinfo.Exists(state.DownRequestedFile(cfg.Paths())) {
		return err
	}
	return errors.Join(err, down.DeleteEphemeral(env, cfg))
}

// prepare is preflight.Prepare for up, told which settings the sources
// set (opts.Explicit: Prepare chooses none of them): it prints what Prepare chose and the
// doctor's failures to the error stream, and the changes up applies to
// the output, and returns the checked plan.
func prepare(ctx context.Context, env *common.Env, cfg config.Config, opts preflight.PrepareOptions) (*plan.Plan, error) {
	opts.Explicit, _ = explicit(env) // upConfig read the sources already
	pr, err := preflight.Prepare(ctx, cfg, opts)
	if pr == nil {
		return nil, err
	}
	for _, n := range pr.Notices {
		common.Fprintf(env.Streams.Err, "%s\n", n)
	}
	if pr.Report.Failed() {
		pr.Report.Failures().Print(env.Streams.Err)
	}
	if err != nil {
		return nil, err
	}
	preflight.WriteChanges(env.Streams.Out, cfg.Name, pr.Changes)
	return pr.Plan, nil
}

// supervise brings the planned cluster up, reports progress and readiness
// to notify (the parent that started this supervisor, or nil), and
// supervises it until the context ends (or the interactive shell exits),
// then brings it down.
func supervise(ctx context.Context, env *common.Env, cfg config.Config, f *flags, pl *plan.Plan, notify *notifier) error {
	log := env.Logger(cfg)
	progress := env.Streams.Out
	if notify != nil {
		progress = io.MultiWriter(progress, notify)
	}
	common.Fprintf(env.Streams.Out, "Starting %s\n", pl)
	upCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := cluster.Up(upCtx, pl, log, cluster.Options{Progress: progress, Retain: f.retain, Asked: asked(env, cfg)})
	if err != nil {
		return err
	}
	if err := notify.ready(); err != nil {
		log.Warn("report ready to the parent", "err", err)
	}
	interactive := !cfg.NoShell && cfg.Shell != "" && notify == nil && isTerminal(env.Streams.In)
	if interactive {
		err = runShell(ctx, env, cfg)
	} else {
		common.Fprintf(env.Streams.Out, "supervising; Ctrl-C or SIGTERM brings the cluster down\n")
		<-ctx.Done()
	}
	common.Fprintf(env.Streams.Out, "bringing cluster %q down\n", cfg.Name)
	return errors.Join(err, c.Down(context.WithoutCancel(ctx)))
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runShell runs the user's shell with the cluster's environment until it exits.
func runShell(ctx context.Context, env *common.Env, cfg config.Config) error {
	common.Fprintf(env.Streams.Out, "starting %s with the cluster's environment; exit it to bring the cluster down\n", cfg.Shell)
	sh := exec.Command(cfg.Shell)
	sh.Stdin, sh.Stdout, sh.Stderr = env.Streams.In, env.Streams.Out, env.Streams.Err
	sh.Env = append(os.Environ(), envcmd.Vars(cfg)...)
	if err := sh.Start(); err != nil {
		return err
	}
	// The shell owns the terminal: a Ctrl-C there is for it, not for us;
	// nor, once it exited, for the down that follows (as a second Ctrl-C
	// in the foreground is not).
	signal.Ignore(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- sh.Wait() }()
	select {
	case <-done:
		return nil
	case <-ctx.Done(): // SIGTERM
		_ = sh.Process.Signal(syscall.SIGHUP)
		<-done
		return nil
	}
}

// detach starts `kubernix up` again as a background supervisor in its own
// session, logging to <state>/supervisor.log, and relays its progress until
// it reports ready (exit 0) or an error (its message, and its exit code).
// The supervisor gets the state dir's lock as its stdin, and so holds it.
func detach(ctx context.Context, env *common.Env, cfg config.Config, f *flags, lock *state.StateLock) error {
	logPath := cfg.Paths().Log(state.SupervisorScope, "supervisor")
	if err := cfg.Paths().MakeState(); err != nil {
		return err
	}
	logFile, err := process.OpenLog(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	sup, err := startSupervisor(env, f, cfg, lock, logFile, w)
	w.Close()
	if err != nil {
		return err
	}
	err = sup.waitReady(ctx, env, r, env.Streams.Out)
	if errors.Is(err, errNoNotice) {
		return withLogTail(fmt.Errorf("supervisor exited before the cluster was ready (%v)", sup.err), logPath)
	}
	if err != nil {
		return err
	}
	common.Fprintf(env.Streams.Out, "supervisor running as pid %d (log %s); `kubernix down --name %s` stops it\n", sup.cmd.Process.Pid, logPath, cfg.Name)
	_ = sup.cmd.Process.Release()
	return nil
}

// startSupervisor starts this kubernix as `up` with the parsed command line
// (without --detach), in its own session, with notices to the pipe notify
// (its fd 3), stdin the lock and output to logFile. The ports and address
// ranges Prepare chose are given as flags: the supervisor starts what was
// checked.
func startSupervisor(env *common.Env, f *flags, cfg config.Config, lock *state.StateLock, logFile, notify *os.File) (*started, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	set := map[string]string{
		"notify-fd": "3", "no-shell": "true", "apiserver-port": strconv.Itoa(cfg.APIServerPort),
		"registry-port": strconv.Itoa(cfg.RegistryPort),
	}
	maps.Copy(set, rangeFlags(chosenRanges(env, cfg)))
	args := append([]string{"up"}, passThroughArgs(f.parsed, set)...)
	child := exec.Command(self, args...)
	child.Stdin = lock.File()
	child.Stdout, child.Stderr = logFile, logFile
	child.ExtraFiles = []*os.File{notify}
	// The caller's whole environment: the supervisor is this kubernix,
	// reading its settings from it (KUBERNIX_*, SUDO_*, KUBECONFIG, HOME)
	// as we did; its components get only the defined one
	// (process.Environ).
	child.Env = os.Environ()
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	sup, err := start(child, "supervisor")
	if err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	return sup, nil
}

// lockAndRecord marks the state dir as kubernix's (Paths.MakeState),
// takes its lock for up (state.Lock) and records it in the user's index
// of clusters, for `kubernix list` (state.Inventory). The marker comes
// first: an up started beside this one then finds a kubernix state dir
// (not a foreign one holding a lock file) and is refused by the lock,
// naming its holder. A down request of the last run
// (state.DownRequestedFile) is removed. The supervisor inside
// rootlesskit does not record: there it is root of a user namespace, and
// the index is its user's, in the state root outside.
func lockAndRecord(cfg config.Config, inherited *os.File) (*state.StateLock, error) {
	if err := cfg.Paths().MakeState(); err != nil {
		return nil, err
	}
	lock, err := state.Lock(cfg, state.VerbUp, inherited)
	if err != nil {
		return nil, err
	}
	if err := state.DefaultInventory().Record(cfg.Paths().State); err != nil {
		lock.Close()
		return nil, err
	}
	// What a down of the last run asked is done.
	if err := os.Remove(state.DownRequestedFile(cfg.Paths())); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, err
	}
	return lock, nil
}
