package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Stop ends the process: SIGTERM (with SIGCONT, so that a stopped process
// acts on it), a second SIGTERM after grace/2 (kube-apiserver
// ignores the first one for up to 60 s when etcd is gone, and exits on the
// second), SIGKILL after grace, then it waits for the exit. With grace <= 0 it
// sends SIGKILL at once. Signals go to the process alone, or to its process
// group when Command.StopGroup is set. On success the pidfile is removed;
// run.json and the log stay.
//
// Stop is idempotent: stopping a process that has already exited returns nil,
// whatever its exit status. It returns an error if a signal cannot be sent
// (e.g. EPERM), or wrapping ctx.Err() if ctx ends before the process exits;
// in that case SIGKILL has been sent and the pidfile is kept.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if err := p.stop(ctx, grace); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", p.cmd.Name, p.pid, err)
	}
	p.sweepGroup()
	if err := p.removePidfile(); err != nil {
		return fmt.Errorf("stop %s (pid %d): remove pidfile: %w", p.cmd.Name, p.pid, err)
	}
	return nil
}

func (p *Process) stop(ctx context.Context, grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if grace > 0 {
		if err := p.terminate(); err != nil {
			return err
		}
		half := time.NewTimer(grace / 2)
		defer half.Stop()
		full := time.NewTimer(grace)
		defer full.Stop()
	wait:
		for {
			select {
			case <-p.done:
				return nil
			case <-half.C:
				p.log.Debug("still running, sending SIGTERM again", "pid", p.pid)
				if err := p.terminate(); err != nil {
					return err
				}
			case <-full.C:
				break wait
			case <-ctx.Done():
				_ = p.signal(unix.SIGKILL)
				return ctx.Err()
			}
		}
		p.log.Warn("did not stop in time, sending SIGKILL", "pid", p.pid, "grace", grace)
	}
	if err := p.signal(unix.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for exit after SIGKILL: %w", ctx.Err())
	}
}

// terminate sends SIGTERM and then SIGCONT: a stopped process (SIGSTOP, a
// debugger, a terminal's job control) acts on SIGTERM only once it
// continues, and SIGCONT is harmless to a running one.
func (p *Process) terminate() error {
	if err := p.signal(unix.SIGTERM); err != nil {
		return err
	}
	return p.signal(unix.SIGCONT)
}

// signal sends sig to the process, or to its group with StopGroup. A process
// that has already exited is not an error.
func (p *Process) signal(sig unix.Signal) error {
	if p.exited() {
		return nil
	}
	var err error
	switch {
	case p.cmd.StopGroup:
		// The group ID is the leader's pid, which cannot be reused while the
		// leader (checked above) or any other member is alive.
		err = unix.Kill(-p.pid, sig)
	case p.proc != nil:
		// os.Process signals through a pidfd, immune to PID reuse.
		err = p.proc.Signal(sig)
		if errors.Is(err, os.ErrProcessDone) {
			err = nil
		}
	case p.pidfd != nil:
		rc, rerr := p.pidfd.SyscallConn()
		if rerr != nil {
			return rerr
		}
		if cerr := rc.Control(func(fd uintptr) { err = unix.PidfdSendSignal(int(fd), sig, nil, 0) }); cerr != nil {
			return cerr
		}
	default:
		if ok, _ := matches(p.pid, p.startTime); !ok {
			return nil
		}
		err = unix.Kill(p.pid, sig)
	}
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", unix.SignalName(sig), err)
	}
	return nil
}

// sweepGroup sends SIGKILL, once, to what is left of the process group after
// the leader exited, when StopGroup is set.
func (p *Process) sweepGroup() {
	if !p.cmd.StopGroup || !p.exited() {
		return
	}
	p.sweepOnce.Do(func() {
		if err := unix.Kill(-p.pid, unix.SIGKILL); err == nil {
			p.log.Debug("killed the rest of the process group", "pgid", p.pid)
		}
	})
}

// removePidfile removes the pidfile if it still names this process.
func (p *Process) removePidfile() error {
	if pid, err := readPidfile(p.cmd.RunDir); err != nil || pid != p.pid {
		return nil
	}
	return removeFile(pidPath(p.cmd.RunDir))
}
