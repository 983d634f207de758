// Package components adapts kubernix's component processes to the registry:
// Proc is a component.Component backed by one supervised upstream process.
// The per-component packages beside this one (etcd, apiserver, ...) turn a
// spec into a process.Command and a readiness probe, as pure functions.
package components

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/component"
	"github.com/kubernix/kubernix/pkg/process"
)

// Defaults for Proc's timing fields.
const (
	DefaultReadyTimeout  = 2 * time.Minute
	DefaultProbeInterval = 50 * time.Millisecond
	DefaultStopGrace     = 10 * time.Second
)

// Proc is a Component backed by one process. The supervisor restarts it
// with backoff when it exits on its own after having been ready.
type Proc struct {
	ComponentName  string
	ComponentPhase component.Phase
	Command        process.Command
	// Probe decides readiness; required.
	Probe process.Probe
	// ProbeInterval between readiness attempts; DefaultProbeInterval if zero.
	ProbeInterval time.Duration
	// ReadyTimeout bounds the wait for readiness; DefaultReadyTimeout if zero.
	ReadyTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL; DefaultStopGrace if zero.
	StopGrace time.Duration
	// Wrap, if set, is called at every (re)start for Command.Wrapper: the
	// node sandbox's PID is only known once it runs.
	Wrap func() []string
	// Prepare runs before every (re)start, e.g. to render config files.
	Prepare func(ctx context.Context) error
	// AfterReady runs once after the first readiness, e.g. to import images;
	// its error fails the start.
	AfterReady func(ctx context.Context) error
	// AfterRestart runs after the readiness of every restart (AfterReady
	// does not), e.g. to bring a restarted containerd's images up to date;
	// its error fails that restart like a failed readiness: the process is
	// stopped and restarted after the backoff.
	AfterRestart func(ctx context.Context) error
	// BeforeStop runs before the process is signalled, e.g. to remove pods
	// through CRI; its error is reported but the process is stopped anyway.
	BeforeStop func(ctx context.Context) error
	// Restart is the backoff of restarts after unexpected exits. Steps bounds
	// consecutive failed restarts; when exhausted, OnGiveUp is called.
	Restart wait.Backoff
	// OnGiveUp is called (once, from the supervising goroutine) when the
	// process keeps dying; may be nil.
	OnGiveUp func(err error)
	Log      *slog.Logger
}

// DefaultRestart is the restart backoff: 0.5 s doubling to 30 s, giving up
// after 6 consecutive failures.
var DefaultRestart = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: 6}

// Name implements component.Component.
func (p *Proc) Name() string { return p.ComponentName }

// Phase implements component.Component.
func (p *Proc) Phase() component.Phase { return p.ComponentPhase }

// Start starts the process, waits for readiness and AfterReady, and
// supervises it until the returned Stoppable's Stop. On error nothing of it
// is left running.
func (p *Proc) Start(ctx context.Context) (component.Stoppable, error) {
	proc, err := p.launch(ctx)
	if err != nil {
		return nil, err
	}
	if p.AfterReady != nil {
		if err := p.AfterReady(ctx); err != nil {
			stopErr := p.stopProcess(context.WithoutCancel(ctx), proc)
			return nil, errors.Join(err, stopErr)
		}
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &supervised{p: p, proc: proc, cancel: cancel, stopping: make(chan struct{}), done: make(chan struct{})}
	go s.supervise(sctx)
	return s, nil
}

// launch prepares, starts and waits for readiness; on failure it stops the process.
func (p *Proc) launch(ctx context.Context) (*process.Process, error) {
	if p.Prepare != nil {
		if err := p.Prepare(ctx); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	cmd := p.Command
	if p.Wrap != nil {
		cmd.Wrapper = p.Wrap()
	}
	proc, err := process.Start(ctx, cmd, p.Log)
	if err != nil {
		return nil, err
	}
	timeout := p.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	interval := p.ProbeInterval
	if interval == 0 {
		interval = DefaultProbeInterval
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := proc.WaitReady(rctx, p.Probe, interval); err != nil {
		stopErr := p.stopProcess(context.WithoutCancel(ctx), proc)
		return nil, errors.Join(err, stopErr)
	}
	return proc, nil
}

func (p *Proc) stopProcess(ctx context.Context, proc *process.Process) error {
	grace := p.StopGrace
	if grace == 0 {
		grace = DefaultStopGrace
	}
	var errs []error
	if p.BeforeStop != nil {
		select {
		case <-proc.Done():
		default:
			if err := p.BeforeStop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, proc.Stop(ctx, grace))
	return errors.Join(errs...)
}

// supervised is a started Proc.
type supervised struct {
	p        *Proc
	mu       sync.Mutex
	proc     *process.Process
	stopOnce sync.Once
	cancel   context.CancelFunc // aborts a restart in progress
	stopping chan struct{}
	done     chan struct{}
}

// supervise restarts the process when it exits unexpectedly.
func (s *supervised) supervise(ctx context.Context) {
	defer close(s.done)
	backoff := s.p.Restart
	if backoff.Steps == 0 {
		backoff = DefaultRestart
	}
	for {
		s.mu.Lock()
		proc := s.proc
		s.mu.Unlock()
		select {
		case <-s.stopping:
			return
		case <-proc.Done():
		}
		exitErr := proc.ExitErr()
		s.p.Log.Warn("component exited unexpectedly; restarting", "component", s.p.ComponentName, "err", exitErr)
		for {
			if backoff.Steps <= 0 {
				s.p.Log.Error("component keeps failing; giving up", "component", s.p.ComponentName, "err", exitErr)
				if s.p.OnGiveUp != nil {
					s.p.OnGiveUp(fmt.Errorf("%s keeps exiting: %w", s.p.ComponentName, exitErr))
				}
				return
			}
			select {
			case <-s.stopping:
				return
			case <-time.After(backoff.Step()):
			}
			next, err := s.p.launch(ctx)
			if err == nil && s.p.AfterRestart != nil {
				if err = s.p.AfterRestart(ctx); err != nil {
					err = errors.Join(fmt.Errorf("after restart: %w", err), s.p.stopProcess(context.WithoutCancel(ctx), next))
				}
			}
			if err != nil {
				exitErr = err
				s.p.Log.Warn("restart failed", "component", s.p.ComponentName, "err", err)
				continue
			}
			s.mu.Lock()
			s.proc = next
			s.mu.Unlock()
			s.p.Log.Info("component restarted", "component", s.p.ComponentName, "pid", next.PID())
			backoff = s.p.Restart
			if backoff.Steps == 0 {
				backoff = DefaultRestart
			}
			break
		}
	}
}

// Stop ends supervision and stops the process; idempotent.
func (s *supervised) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.cancel()
		<-s.done
		s.mu.Lock()
		proc := s.proc
		s.mu.Unlock()
		err = s.p.stopProcess(ctx, proc)
	})
	return err
}
