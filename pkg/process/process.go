// Package process runs one kubernix component as a supervised child process
// and keeps enough state on disk to find it again.
//
// A component's process is described by a Command, which is plain data (binary,
// arguments, environment, directories) so that a whole cluster can be printed
// as a plan and golden-tested. Start launches it in its own process group with
// stdout and stderr appended straight to its log file, so the log survives the
// supervisor, and records it in its run directory:
//
//	<RunDir>/pid       the process ID, one decimal line
//	<RunDir>/run.json  a RunInfo: the exact argv and environment, and the
//	                   process start time that guards against PID reuse
//
// The log is capped: Start rotates an oversized one, and CapLog rotates a
// running process's log in place (copy, then truncate), since the child
// writes to the file itself.
//
// WaitReady polls a Probe until the component answers, failing fast with the
// log tail when the process dies first. Stop sends SIGTERM, then SIGKILL.
// Adopt finds a process again from its run directory after the supervisor that
// started it was killed, so that `kubernix down` can stop it.
//
// The package is Linux-only: it reads /proc and uses pidfds.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubernix/kubernix/pkg/config"
)

// Errors returned (wrapped) by this package; test for them with errors.Is.
var (
	// ErrAlreadyRunning: Start found a live process recorded in the run directory.
	ErrAlreadyRunning = errors.New("already running")
	// ErrNotRunning: Adopt found no live process matching the run directory's record.
	ErrNotRunning = errors.New("not running")
	// ErrExited: the process exited while WaitReady was waiting for it.
	ErrExited = errors.New("process exited")
)

// Command is a component's process as data: trivial to print as a plan and
// golden-test. Start runs it; nothing here touches the system.
type Command struct {
	// Name is the component, e.g. "kube-apiserver".
	Name string
	// Scope is the node name the component belongs to, or "control-plane".
	Scope string
	// Path is the absolute path of the binary.
	Path string
	// Args are the arguments after Path (argv[1:] when there is no Wrapper).
	Args []string
	// Env is the full environment as KEY=VALUE entries; nil means
	// Environ(os.Environ()), the supervisor's PATH, HOME, TZ and proxies
	// and nothing else of it. run.json records it, URL passwords
	// redacted (RedactEnv).
	Env []string
	// Dir is the working directory; "" means RunDir.
	Dir string
	// LogFile receives the process's stdout and stderr, appended; its
	// directory is created with mode config.StateDirMode and the file
	// with config.StateFileMode (OpenLog).
	LogFile string
	// LogMaxBytes caps LogFile's size, in bytes: Start rotates a larger
	// log to LogFile.1 before it starts the process, and CapLog rotates
	// the log of a running process. 0 means DefaultLogMaxBytes.
	LogMaxBytes int64
	// LogBackups is how many rotated logs are kept (LogFile.1 the
	// newest); 0 means DefaultLogBackups.
	LogBackups int
	// RunDir holds the "pid" and "run.json" files; it is created with
	// mode config.StateDirMode, and they with config.StateFileMode.
	RunDir string
	// Wrapper, if not empty, is prepended to Path and Args, e.g.
	// ["nsenter", "--target", "123", "--net", "--mount", "--uts", "--"].
	// Wrapper[0] is looked up in PATH when it has no slash. The wrapper must
	// exec the target so that the process ID is the component's.
	Wrapper []string
	// StopGroup makes Stop signal the whole process group (which Start
	// creates with the process as leader) rather than the process alone;
	// members still running when the leader has exited are sent SIGKILL.
	StopGroup bool
}

// Argv returns the full argument vector: Wrapper, then Path, then Args. The
// result is a new slice.
func (c Command) Argv() []string {
	argv := make([]string, 0, len(c.Wrapper)+1+len(c.Args))
	argv = append(argv, c.Wrapper...)
	argv = append(argv, c.Path)
	return append(argv, c.Args...)
}

// environ is the effective environment (see Env).
func (c Command) environ() []string {
	if c.Env == nil {
		return Environ(os.Environ())
	}
	return c.Env
}

// dir is the effective working directory.
func (c Command) dir() string {
	if c.Dir == "" {
		return c.RunDir
	}
	return c.Dir
}

func (c Command) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("missing Name"))
	}
	if !filepath.IsAbs(c.Path) {
		errs = append(errs, fmt.Errorf("path %q is not absolute", c.Path))
	}
	if c.RunDir == "" {
		errs = append(errs, errors.New("missing RunDir"))
	}
	if c.LogFile == "" {
		errs = append(errs, errors.New("missing LogFile"))
	}
	if len(c.Wrapper) > 0 && c.Wrapper[0] == "" {
		errs = append(errs, errors.New("empty wrapper command"))
	}
	return errors.Join(errs...)
}

// Process is a started or adopted component process. Its methods are safe for
// concurrent use.
type Process struct {
	cmd       Command
	pid       int
	startTime uint64 // clock ticks since boot, /proc/<pid>/stat field 22
	adopted   bool
	log       *slog.Logger

	done    chan struct{} // closed when the process has exited
	exitErr error         // written before done is closed; always nil when adopted

	proc  *os.Process // started processes: signals go through Go's pidfd
	pidfd *os.File    // adopted processes, when pidfd_open works

	sweepOnce sync.Once // StopGroup: the final SIGKILL to the group is sent once
}

// Start launches cmd and records it in cmd.RunDir. The process gets its own
// process group, so a Ctrl-C in the supervisor's terminal reaches only the
// supervisor, and no parent-death signal, so it outlives a killed supervisor
// (Adopt finds it again). Its stdout and stderr go straight to cmd.LogFile,
// after a header line "--- kubernix: starting <argv> at <RFC3339 time>";
// a log larger than cmd.LogMaxBytes is first rotated (see CapLog).
//
// If cmd.RunDir records a live process (its pidfile names a running process
// whose start time matches run.json), Start returns an error wrapping
// ErrAlreadyRunning that names the pid, and starts nothing; a stale record is
// replaced. Two concurrent Starts on one RunDir are not guarded against.
//
// ctx bounds only the start itself: cancelling it later does not stop the
// process; use Stop. log may be nil. Errors name the component and its argv.
func Start(ctx context.Context, cmd Command, log *slog.Logger) (*Process, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", cmd.Name, "scope", cmd.Scope)
	cmd.Env = cmd.environ()
	argv := cmd.Argv()
	if err := prepareStart(ctx, cmd, log); err != nil {
		return nil, err
	}
	now := time.Now()
	logf, err := openStartLog(cmd, argv, now, log)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Name, err)
	}
	defer logf.Close() // the child has its own copy once started

	c := exec.Command(argv[0], argv[1:]...)
	c.Env = cmd.Env
	c.Dir = cmd.dir()
	c.Stdout = logf // an *os.File is handed to the child as is: no copying goroutine
	c.Stderr = logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		fmt.Fprintf(logf, "--- kubernix: start failed: %v\n", err)
		return nil, fmt.Errorf("start %s: %s: %w", cmd.Name, shellJoin(argv), err)
	}
	pid := c.Process.Pid
	startTime, err := recordStart(cmd, argv, pid, now)
	if err != nil {
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil, fmt.Errorf("start %s: record pid %d: %w", cmd.Name, pid, err)
	}

	p := &Process{
		cmd: cmd, pid: pid, startTime: startTime, log: log,
		done: make(chan struct{}), proc: c.Process,
	}
	log.Debug("started", "pid", pid, "argv", argv)
	go p.reap(c, logf.Name())
	return p, nil
}

// prepareStart checks cmd and ctx and claims cmd.RunDir (see claimRunDir)
// for Start. Errors name the component.
func prepareStart(ctx context.Context, cmd Command, log *slog.Logger) error {
	if err := cmd.validate(); err != nil {
		return fmt.Errorf("start %s: invalid command: %w", cmd.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Name, err)
	}
	if err := os.MkdirAll(cmd.RunDir, config.StateDirMode); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Name, err)
	}
	if err := claimRunDir(cmd.RunDir, log); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Name, err)
	}
	return nil
}

// openStartLog rotates cmd's log if oversized (a failure is only logged),
// opens it and writes Start's header line for argv started at now.
func openStartLog(cmd Command, argv []string, now time.Time, log *slog.Logger) (*os.File, error) {
	if rotated, err := rotateOversized(cmd); err != nil {
		log.Warn("log not rotated", "log", cmd.LogFile, "err", err)
	} else if rotated {
		log.Debug("rotated the log", "log", cmd.LogFile)
	}
	logf, err := OpenLog(cmd.LogFile)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(logf, "--- kubernix: starting %s at %s\n", shellJoin(argv), now.Format(time.RFC3339)); err != nil {
		logf.Close()
		return nil, fmt.Errorf("write log: %w", err)
	}
	return logf, nil
}

// recordStart writes the run record of cmd, started as pid at now, to
// cmd.RunDir and returns the process's start time (clock ticks since
// boot). The child must not be reaped yet, so /proc/<pid> exists even if it
// already exited.
func recordStart(cmd Command, argv []string, pid int, now time.Time) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	info := RunInfo{
		Name: cmd.Name, Scope: cmd.Scope, Argv: argv, Wrapper: cmd.Wrapper,
		Env: RedactEnv(cmd.environ()), Dir: cmd.dir(), LogFile: cmd.LogFile,
		StopGroup: cmd.StopGroup, PID: pid, StartTime: st.startTime, StartedAt: now,
	}
	return st.startTime, writeRun(cmd.RunDir, info)
}

// OpenLog opens the log file at path for appending, creating it and its
// directory if missing. Logs are their owner's alone: the directory is
// made with mode 0700 and the file gets mode 0600, also when an older
// kubernix created it readable by everyone. Errors name the file.
func OpenLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, config.StateFileMode)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if err := f.Chmod(config.StateFileMode); err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: chmod %s: %w", path, err)
	}
	return f, nil
}

// reap waits for the child, notes its end in the log, and closes done.
func (p *Process) reap(c *exec.Cmd, logPath string) {
	err := c.Wait()
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	p.log.Debug("exited", "pid", p.pid, "status", status)
	if f, ferr := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0); ferr == nil {
		fmt.Fprintf(f, "--- kubernix: %s exited (%s) at %s\n", p.cmd.Name, status, time.Now().Format(time.RFC3339))
		f.Close()
	}
	p.exitErr = err
	close(p.done)
}

// claimRunDir fails with ErrAlreadyRunning if runDir records a live process
// and removes a stale pidfile otherwise.
func claimRunDir(runDir string, log *slog.Logger) error {
	rec := inspect(runDir)
	switch {
	case rec.live:
		return fmt.Errorf("%s: pid %d: %w", runDir, rec.pid, ErrAlreadyRunning)
	case rec.pidfile:
		log.Debug("removing stale pidfile", "run_dir", runDir, "pid", rec.pid, "reason", rec.reason)
		if err := removeFile(pidPath(runDir)); err != nil {
			return fmt.Errorf("remove stale pidfile: %w", err)
		}
	}
	return nil
}

// PID returns the process ID.
func (p *Process) PID() int { return p.pid }

// Command returns the command the process runs. For an adopted process it is
// rebuilt from run.json: Env then holds the recorded environment (URL
// passwords redacted; nil in a record of an older kubernix).
func (p *Process) Command() Command {
	c := p.cmd
	c.Args = slices.Clone(c.Args)
	c.Env = slices.Clone(c.Env)
	c.Wrapper = slices.Clone(c.Wrapper)
	return c
}

// Done returns a channel that is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how the process ended, once Done is closed: nil for exit
// status 0, else an *exec.ExitError naming the exit status or the signal. It
// returns nil while the process runs, and always for an adopted process, whose
// exit status only its real parent can collect.
func (p *Process) ExitErr() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// exited reports whether Done is closed.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// status describes how the process ended, for error messages.
func (p *Process) status() string {
	switch {
	case p.adopted:
		return "exit status unknown (adopted process)"
	case p.exitErr != nil:
		return p.exitErr.Error()
	default:
		return "exit status 0"
	}
}

// shellJoin renders argv as a line a POSIX shell would split back into argv.
func shellJoin(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
