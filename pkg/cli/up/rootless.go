package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/bins"
	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/plan"
	"github.com/kubernix/kubernix/pkg/preflight"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/rootless"
	"github.com/kubernix/kubernix/pkg/state"
)

// runRootless is `kubernix up` as an ordinary user, for a plan Prepare
// checked (AsUser). It records the cluster as rootless, and starts `kubernix up --rootless-child` under rootlesskit,
// which runs the whole cluster in its namespaces. The kubernix inside is
// the supervisor (run/supervisor/kubernix records it: with no PID
// namespace its PID is the host's) and reports through a FIFO. With
// --detach this returns once the cluster is Ready; in the foreground it
// relays Ctrl-C and SIGTERM to rootlesskit (which forwards them to the
// supervisor: an orderly down) and waits for it, or runs the interactive
// shell and then does the same. The state dir's lock, taken before
// anything here changes, is handed on to the supervisor as rootlesskit's
// stdin.
func runRootless(ctx context.Context, env *common.Env, pl *plan.Plan, f *flags, lock *state.StateLock) error {
	cfg := pl.Cfg
	paths := cfg.Paths()
	kit, err := recordRootless(env, pl)
	if err != nil {
		return err
	}
	notifyPath := filepath.Join(paths.Run(state.SupervisorScope, ""), "notify")
	notify, err := openFIFO(notifyPath)
	if err != nil {
		return err
	}
	defer notify.Close()
	if kit.Argv, err = rootlessChildArgv(f, cfg, notifyPath); err != nil {
		return err
	}
	if err := kit.Validate(); err != nil {
		return fmt.Errorf("rootlesskit: %w", err)
	}
	logPath := paths.Log(state.SupervisorScope, "supervisor")
	logFile, err := process.OpenLog(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	sup, err := startRootlesskit(env, kit, f.detach, lock, logFile)
	if err != nil {
		return err
	}
	if err := process.Record(paths.Run(state.RootlesskitScope, state.RootlesskitName), state.RootlesskitName,
		state.RootlesskitScope, sup.cmd.Process.Pid, sup.cmd.Args, logPath); err != nil {
		env.Logger(cfg).Warn("recording rootlesskit", "pid", sup.cmd.Process.Pid, "err", err)
	}
	go func() {
		<-sup.done
		notify.writersGone()
	}()
	var progress io.Writer // in the foreground the supervisor writes to our streams itself
	if f.detach {
		progress = env.Streams.Out
	}
	if err := sup.waitReady(ctx, env, notify, progress); err != nil {
		if errors.Is(err, errNoNotice) {
			err = fmt.Errorf("rootlesskit exited before the cluster was ready (%v)", sup.err)
		}
		if f.detach && !strings.Contains(err.Error(), "\n") {
			err = withLogTail(err, logPath)
		}
		return err
	}
	return superviseRootless(ctx, env, cfg, f.detach, sup, logPath)
}

// recordRootless records plan's cluster as rootless (its cgroup parent
// the delegated one, its ports free on the host's loopback: Prepare
// chose them), and returns rootlesskit's invocation, all but Argv.
func recordRootless(env *common.Env, pl *plan.Plan) (rootless.Kit, error) {
	cfg, facts, port := &pl.Cfg, pl.Facts, pl.Cfg.APIServerPort
	if changed, err := rootless.FillCpuset(cfg.CgroupParent); err != nil {
		return rootless.Kit{}, fmt.Errorf("cgroup %s: %w", cfg.CgroupParent, err)
	} else if changed {
		env.Logger(*cfg).Info("gave the delegated cpuset cgroup its parent's CPUs and memory nodes", "cgroup", cfg.CgroupParent)
	}
	paths := cfg.Paths()
	if err := paths.MakeState(); err != nil {
		return rootless.Kit{}, err
	}
	kitDir := rootless.StateDirFor(paths.State, os.TempDir(), os.Getuid())
	if err := os.RemoveAll(kitDir); err != nil { // left by a killed rootlesskit
		return rootless.Kit{}, err
	}
	if err := os.MkdirAll(filepath.Dir(kitDir), 0o700); err != nil {
		return rootless.Kit{}, err
	}
	err := state.WriteRootless(paths, state.RootlessState{
		UID: os.Getuid(), RootlesskitStateDir: kitDir,
		HostAPIServer: netip.AddrPortFrom(preflight.HostLoopback, uint16(port)),
	})
	return rootless.Kit{
		Rootlesskit: facts.Paths["rootlesskit"], Slirp4netns: facts.Paths["slirp4netns"], StateDir: kitDir,
		HostIP: preflight.HostLoopback, HostPort: port, ChildIP: pl.APIServerIP, ChildPort: port,
		LoopbackPorts: loopbackPorts(cfg),
	}, err
}

// rootlessChildArgv is the command line of the supervisor inside
// rootlesskit: this kubernix as `up --rootless-child` with the parsed
// command line and what runRootless chose, reporting to notifyPath.
func rootlessChildArgv(f *flags, cfg config.Config, notifyPath string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// The state dir is explicit: inside, kubernix is root, whose default
	// differs.
	return append([]string{self, "up"}, passThroughArgs(f.parsed, map[string]string{
		"rootless-child": "true", "notify-path": notifyPath, "no-shell": "true", "state-dir": cfg.Paths().State,
		"apiserver-port": strconv.Itoa(cfg.APIServerPort), "cgroup-parent": cfg.CgroupParent,
		"registry-port": strconv.Itoa(cfg.RegistryPort),
	})...), nil
}

// startRootlesskit starts kit with the lock as its stdin, which it hands
// on to the supervisor inside. Detached, it runs in its own session with
// its output to logFile; in the foreground, in its own process group (a
// Ctrl-C on the terminal reaches only us, and we relay it once) with our
// streams.
func startRootlesskit(env *common.Env, kit rootless.Kit, detached bool, lock *state.StateLock, logFile *os.File) (*started, error) {
	cmd := exec.Command(kit.Rootlesskit, kit.Args()...)
	// The caller's whole environment: the supervisor inside is this
	// kubernix and reads its settings from it as we did (KUBERNIX_*,
	// KUBECONFIG, HOME, XDG_*, TMPDIR), and gives its components only the
	// defined one (process.Environ); rootlesskit (1.x) has no flag read
	// from a variable and sets its ROOTLESSKIT_* for its child itself.
	// The supervisor and rootlesskit run system tools (ip,
	// iptables, nsenter) that a user's PATH may lack.
	cmd.Env = bins.SystemEnviron(os.Environ())
	cmd.Stdin = lock.File()
	if detached {
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.Stdout, cmd.Stderr = env.Streams.Out, env.Streams.Err
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	sup, err := start(cmd, "rootlesskit")
	if err != nil {
		return nil, fmt.Errorf("start rootlesskit: %w", err)
	}
	return sup, nil
}

// superviseRootless follows a rootless cluster once it is Ready. Detached,
// it leaves rootlesskit running and returns. In the foreground it runs the
// interactive shell, or waits for Ctrl-C or SIGTERM, then stops rootlesskit
// (the supervisor inside brings the cluster down) and waits for it.
func superviseRootless(ctx context.Context, env *common.Env, cfg config.Config, detached bool, kit *started, logPath string) error {
	pid, _ := state.Running(cfg.Paths())
	if detached {
		common.Fprintf(env.Streams.Out, "supervisor running rootless as pid %d under rootlesskit pid %d (log %s); `kubernix down --name %s` stops it\n",
			pid, kit.cmd.Process.Pid, logPath, cfg.Name)
		_ = kit.cmd.Process.Release()
		return nil
	}
	if !cfg.NoShell && cfg.Shell != "" && isTerminal(env.Streams.In) {
		if err := runShell(ctx, env, cfg); err != nil {
			env.Logger(cfg).Warn("shell", "err", err)
		}
	} else {
		common.Fprintf(env.Streams.Out, "supervising rootless (pid %d); Ctrl-C or SIGTERM brings the cluster down\n", pid)
		select {
		case <-ctx.Done():
		case <-kit.done:
			return fmt.Errorf("rootless supervisor exited: %v", kit.err)
		}
	}
	_ = kit.cmd.Process.Signal(syscall.SIGTERM)
	<-kit.done
	if kit.err != nil {
		return fmt.Errorf("rootless supervisor: %w", kit.err)
	}
	return nil
}

// notifyFIFO is the reading end of the FIFO through which the rootless
// supervisor reports (see notice).
type notifyFIFO struct {
	*os.File
	path string
	// keep is a writing end of our own: reads wait for notices, also
	// before the supervisor opened its end, until writersGone.
	keep *os.File
}

// openFIFO (re)creates the FIFO at path and opens it for reading. Neither
// open waits for the supervisor. Reads end (io.EOF) only after
// writersGone, once the supervisor's notices are read.
func openFIFO(path string) (*notifyFIFO, error) {
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("create notify FIFO %s: %w", path, err)
	}
	// Read-write, so the open does not wait for a reader; then the
	// reader's open does not wait for a writer.
	keep, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		keep.Close()
		return nil, err
	}
	return &notifyFIFO{File: r, path: path, keep: keep}, nil
}

// writersGone says the supervisor exited: reads end after what it wrote.
func (f *notifyFIFO) writersGone() { _ = f.keep.Close() }

// Close closes both ends and removes the FIFO.
func (f *notifyFIFO) Close() error {
	f.writersGone()
	err := f.File.Close()
	_ = os.Remove(f.path)
	return err
}

// runRootlessChild is `kubernix up --rootless-child`: the supervisor
// inside rootlesskit's namespaces. It gives the paths the components
// hard-code their own tmpfs, checks the host as seen from inside, and
// supervises the cluster like a root `up` would, reporting to the parent
// through the FIFO at --notify-path (run reports its error).
func runRootlessChild(ctx context.Context, env *common.Env, cfg config.Config, f *flags, notify *notifier) error {
	if err := rootless.PrepareMounts(rootless.InUserNamespace()); err != nil {
		return err
	}
	pl, err := prepare(ctx, env, cfg, preflight.PrepareOptions{Mode: preflight.InRootlesskit})
	if err != nil {
		return err
	}
	return supervise(ctx, env, cfg, f, pl, notify)
}

// loopbackPorts are the ports rootlesskit publishes on the host's
// 127.0.0.1 to the same number on its namespace's loopback: the local
// registry's, if it runs (its instance there takes the owner's pushes).
func loopbackPorts(cfg *config.Config) []int {
	if port := cfg.LocalRegistryPort(); port != 0 {
		return []int{port}
	}
	return nil
}
