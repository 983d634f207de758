package up

import (
	"bufio"
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
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/cli/common"
	"github.com/kubernix/kubernix/pkg/cluster"
	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/host"
	"github.com/kubernix/kubernix/pkg/process"
	"github.com/kubernix/kubernix/pkg/rootless"
)

// hostLoopback is where a rootless cluster's apiserver is published on the
// host.
var hostLoopback = netip.MustParseAddr("127.0.0.1")

// runRootless is `kubernix up` as an ordinary user. It checks the rootless
// prerequisites (failing before anything starts), records the cluster as
// rootless, and starts `kubernix up --rootless-child` under rootlesskit,
// which runs the whole cluster in its namespaces. The kubernix inside is
// the supervisor (run/supervisor/kubernix records it: with no PID
// namespace its PID is the host's) and reports through a FIFO. With
// --detach this returns once the cluster is Ready; in the foreground it
// relays Ctrl-C and SIGTERM to rootlesskit (which forwards them to the
// supervisor: an orderly down) and waits for it, or runs the interactive
// shell and then does the same. The state dir's lock, taken before
// anything here changes, is handed on to the supervisor as rootlesskit's
// stdin.
func runRootless(ctx context.Context, env *common.Env, cfg config.Config, f *flags, lock *cluster.StateLock) error {
	paths := cfg.Paths()
	if pid, ok := cluster.Running(paths); ok {
		return fmt.Errorf("%w: %s (supervisor pid %d); use another --name, or `kubernix down --name %s`", cluster.ErrTaken, cfg.Name, pid, cfg.Name)
	}
	report, facts, err := common.Check(ctx, cfg)
	if err != nil {
		report.Failures().Print(env.Streams.Err)
		return err
	}
	log := env.Logger(cfg)
	port, err := cluster.ChoosePortOn(hostLoopback, cfg.APIServerPort)
	if err != nil {
		return err
	}
	if port != cfg.APIServerPort {
		common.Fprintf(env.Streams.Err, "apiserver port %d is in use on %s; using %d\n", cfg.APIServerPort, hostLoopback, port)
		cfg.APIServerPort = port
	}
	cfg.CgroupParent = facts.CgroupParent
	if changed, err := rootless.FillCpuset(cfg.CgroupParent); err != nil {
		return fmt.Errorf("cgroup %s: %w", cfg.CgroupParent, err)
	} else if changed {
		log.Info("gave the delegated cpuset cgroup its parent's CPUs and memory nodes", "cgroup", cfg.CgroupParent)
	}
	n, err := cfg.Network()
	if err != nil {
		return err
	}
	if err := paths.MakeState(); err != nil {
		return err
	}
	kitDir := rootless.StateDirFor(paths.State, os.TempDir(), os.Getuid())
	if err := os.RemoveAll(kitDir); err != nil { // left by a killed rootlesskit
		return err
	}
	if err := os.MkdirAll(filepath.Dir(kitDir), 0o700); err != nil {
		return err
	}
	err = cluster.WriteRootless(paths, cluster.RootlessState{
		UID: os.Getuid(), RootlesskitStateDir: kitDir,
		HostAPIServer: netip.AddrPortFrom(hostLoopback, uint16(port)),
	})
	if err != nil {
		return err
	}

	notifyPath := filepath.Join(paths.Run(cluster.SupervisorScope, ""), "notify")
	notify, err := openFIFO(notifyPath)
	if err != nil {
		return err
	}
	defer func() {
		notify.Close()
		os.Remove(notifyPath)
	}()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The state dir is explicit: inside, kubernix is root, whose default
	// differs.
	inner := []string{self, "up", "--rootless-child", "--notify-path", notifyPath, "--no-shell", "--state-dir", paths.State,
		"--timeout", f.timeout.String(), "--apiserver-port", strconv.Itoa(port), "--cgroup-parent", cfg.CgroupParent}
	if f.retain {
		inner = append(inner, "--retain")
	}
	inner = append(inner, passThroughArgs(os.Args[1:])...)
	kit := rootless.Kit{
		Rootlesskit: facts.Paths["rootlesskit"], Slirp4netns: facts.Paths["slirp4netns"], StateDir: kitDir,
		HostIP: hostLoopback, HostPort: port, ChildIP: n.BridgeIP(), ChildPort: port,
		Argv: inner,
	}
	if err := kit.Validate(); err != nil {
		return fmt.Errorf("rootlesskit: %w", err)
	}

	logPath := paths.Log(cluster.SupervisorScope, "supervisor")
	logFile, err := process.OpenLog(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(kit.Rootlesskit, kit.Args()...)
	cmd.Env = os.Environ()
	// rootlesskit hands its stdin to the supervisor inside: the lock.
	cmd.Stdin = lock.File()
	if f.detach {
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Its own process group: a Ctrl-C on the terminal reaches only us,
		// and we relay it once.
		cmd.Stdout, cmd.Stderr = env.Streams.Out, env.Streams.Err
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start rootlesskit: %w", err)
	}
	kitPID := cmd.Process.Pid
	if err := process.Record(paths.Run(cluster.RootlesskitScope, cluster.RootlesskitName), cluster.RootlesskitName,
		cluster.RootlesskitScope, kitPID, cmd.Args, logPath); err != nil {
		log.Warn("recording rootlesskit", "pid", kitPID, "err", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ready, err := waitReady(ctx, env, notify, exited, f.detach)
	if !ready {
		if err == nil || errors.Is(err, context.Canceled) {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
		if f.detach {
			if tail, _ := process.Tail(logPath, 20); len(tail) > 0 && !strings.Contains(fmt.Sprint(err), "\n") {
				err = fmt.Errorf("%w; last lines of %s:\n%s", err, logPath, strings.Join(tail, "\n"))
			}
		}
		return err
	}
	pid, _ := cluster.Running(paths)
	if f.detach {
		common.Fprintf(env.Streams.Out, "supervisor running rootless as pid %d under rootlesskit pid %d (log %s); `kubernix down --name %s` stops it\n",
			pid, kitPID, logPath, cfg.Name)
		_ = cmd.Process.Release()
		return nil
	}
	if !cfg.NoShell && cfg.Shell != "" && isTerminal(env.Streams.In) {
		if err := runShell(ctx, env, cfg); err != nil {
			log.Warn("shell", "err", err)
		}
	} else {
		common.Fprintf(env.Streams.Out, "supervising rootless (pid %d); Ctrl-C or SIGTERM brings the cluster down\n", pid)
		select {
		case <-ctx.Done():
		case err := <-exited:
			return fmt.Errorf("rootless supervisor exited: %v", err)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		return fmt.Errorf("rootless supervisor: %w", err)
	}
	return nil
}

// openFIFO (re)creates the FIFO at path and opens it for reading. It is
// opened read-write, so the open does not wait for the writer and a writer
// that closes it early does not end the reads: the caller watches the
// writer's process instead.
func openFIFO(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("create notify FIFO %s: %w", path, err)
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

// waitReady reads the child's notify lines until "ready" (true), an
// "error" line, the child's exit or ctx's end. progress lines are printed
// when detached (in the foreground the child writes to our streams
// itself).
func waitReady(ctx context.Context, env *common.Env, notify io.Reader, exited <-chan error, detached bool) (bool, error) {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(notify)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			switch {
			case !ok:
				return false, errors.New("notify FIFO closed before the cluster was ready")
			case strings.HasPrefix(line, "progress "):
				if detached {
					common.Fprintf(env.Streams.Out, "%s\n", strings.TrimPrefix(line, "progress "))
				}
			case line == "ready":
				return true, nil
			case strings.HasPrefix(line, "error "):
				err := errors.New(strings.ReplaceAll(strings.TrimPrefix(line, "error "), "\\n", "\n"))
				select { // the child brings down what it started, then exits
				case <-exited:
				case <-time.After(5 * time.Minute):
				}
				return false, err
			}
		case err := <-exited:
			return false, fmt.Errorf("rootlesskit exited before the cluster was ready (%v)", err)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// runRootlessChild is `kubernix up --rootless-child`: the supervisor
// inside rootlesskit's namespaces. It gives the paths the components
// hard-code their own tmpfs, checks the host as seen from inside, and
// supervises the cluster like a root `up` would, reporting to the parent
// through the FIFO at --notify-path.
func runRootlessChild(ctx context.Context, env *common.Env, cfg config.Config, f *flags) error {
	var notify io.Writer
	if f.notifyPath != "" {
		nf, err := os.OpenFile(f.notifyPath, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("open notify FIFO: %w", err)
		}
		defer nf.Close()
		notify = nf
	}
	fail := func(err error) error {
		if notify != nil {
			fmt.Fprintf(notify, "error %s\n", strings.ReplaceAll(err.Error(), "\n", "\\n"))
		}
		return err
	}
	if err := rootless.PrepareMounts(host.InUserNamespace()); err != nil {
		return fail(err)
	}
	plan, report, err := common.Plan(ctx, cfg, true)
	if err != nil {
		if report != nil {
			report.Failures().Print(env.Streams.Err)
		}
		return fail(err)
	}
	if !plan.Rootless {
		return fail(fmt.Errorf("%s is missing: --rootless-child is started by `kubernix up` as an ordinary user", cluster.RootlessFile(plan.Paths)))
	}
	return supervise(ctx, env, cfg, f, plan, notify)
}
