package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// procPollInterval is how often an adopted process is checked in /proc when
// pidfds are unavailable.
const procPollInterval = 50 * time.Millisecond

// Adopt returns the process recorded in runDir, for a supervisor that did not
// start it (e.g. `kubernix down` after the one that ran `up` was SIGKILLed).
// The recorded pid must be alive and have the start time recorded in
// run.json, which guards against PID reuse. Done is driven by a pidfd, or by
// polling /proc every 50 ms where pidfd_open is unavailable; Stop works as for
// a started process; ExitErr is always nil.
//
// If no live matching process is recorded, Adopt removes the stale pidfile, if
// any, and returns an error wrapping ErrNotRunning that says why.
func Adopt(runDir string) (*Process, error) { return adopt(runDir, true) }

func adopt(runDir string, usePidfd bool) (*Process, error) {
	rec := inspect(runDir)
	if !rec.pidfile {
		return nil, fmt.Errorf("adopt %s: no pidfile: %w", runDir, ErrNotRunning)
	}
	notRunning := func(reason string) error {
		err := fmt.Errorf("adopt %s: %s: %w", runDir, reason, ErrNotRunning)
		if rerr := removeFile(pidPath(runDir)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove stale pidfile: %w", rerr))
		}
		return err
	}
	if !rec.live {
		return nil, notRunning(rec.reason)
	}

	var pidfd *os.File
	if usePidfd {
		fd, err := unix.PidfdOpen(rec.pid, 0)
		switch {
		case err == nil:
			pidfd = os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(rec.pid))
		case errors.Is(err, unix.ESRCH):
			return nil, notRunning(fmt.Sprintf("pid %d has exited", rec.pid))
		}
		// Other errors (ENOSYS, EPERM under seccomp): poll /proc instead.
	}
	// Check again now that the pidfd pins the process: the pid may have been
	// reused between inspect and pidfd_open.
	if ok, reason := matches(rec.pid, rec.info.StartTime); !ok {
		if pidfd != nil {
			pidfd.Close()
		}
		return nil, notRunning(reason)
	}

	info := rec.info
	cmd := Command{
		Name: info.Name, Scope: info.Scope, Env: info.Env, Dir: info.Dir,
		LogFile: info.LogFile, RunDir: runDir, StopGroup: info.StopGroup,
	}
	if n := len(info.Wrapper); n < len(info.Argv) {
		cmd.Wrapper = info.Wrapper
		cmd.Path = info.Argv[n]
		cmd.Args = info.Argv[n+1:]
	}
	p := &Process{
		cmd: cmd, pid: rec.pid, startTime: info.StartTime, adopted: true,
		log:  slog.New(slog.DiscardHandler),
		done: make(chan struct{}), pidfd: pidfd,
	}
	go p.watch()
	return p, nil
}

// watch closes done when the adopted process exits: when its pidfd becomes
// readable, or, without a pidfd, when /proc no longer shows it alive.
func (p *Process) watch() {
	defer close(p.done)
	if p.pidfd != nil && p.waitPidfd() == nil {
		return
	}
	_ = wait.PollUntilContextCancel(context.Background(), procPollInterval, true,
		func(context.Context) (bool, error) {
			ok, _ := matches(p.pid, p.startTime)
			return !ok, nil
		})
}

// waitPidfd blocks until the pidfd reports that the process exited. The
// pidfd is never closed while Process is reachable (the os.File finalizer
// closes it later), so signal can use it without racing a close.
func (p *Process) waitPidfd() error {
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return err
	}
	for {
		var n int
		var perr error
		err := rc.Control(func(fd uintptr) {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		})
		switch {
		case err != nil:
			return err
		case errors.Is(perr, unix.EINTR):
			continue
		case perr != nil:
			return perr
		case n > 0:
			return nil
		}
	}
}
