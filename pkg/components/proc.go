// Package components adapts kubernix's component processes to the registry:
// Proc is a boot.Component backed by one supervised upstream process.
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

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/process"
)

// Defaults for Proc's timing fields.
const (
	DefaultReadyTimeout  = 2 * time.Minute
	DefaultProbeInterval = 50 * time.Millisecond
	DefaultStopGrace     = 10 * time.Second
	// DefaultLivenessPeriod is the time between liveness checks.
	DefaultLivenessPeriod = 5 * time.Second
	// LivenessTimeout bounds one liveness check: a process on a loaded
	// machine (a 2-core laptop under upstream's conformance run) may take
	// seconds to answer a ping, and killing it then only adds load.
	// kubeadm gives the apiserver's /livez 15 s a check, 8 checks in a
	// row, every 10 s; a developer's cluster should recover from a real
	// hang sooner.
	LivenessTimeout = 10 * time.Second
	// DefaultLivenessThreshold is how many failed liveness checks in a
	// row have a process restarted: with DefaultLivenessPeriod and
	// LivenessTimeout, a process that hangs is restarted 40 to 60 s after
	// it stopped answering, one that answers within 10 s at least once in
	// 4 checks is left alone.
	DefaultLivenessThreshold = 4
)

// Proc is a Component backed by one process. Once it was ready, the
// supervisor restarts it whenever it exits on its own or stops answering
// its liveness checks, with a backoff that grows to a cap and never gives
// up (unless GiveUpAfter says so), and records how it fares for `kubernix
// status` (Supervision). Its log is capped (process.Command.LogMaxBytes).
type Proc struct {
	ComponentName  string
	ComponentPhase boot.Phase
	Command        process.Command
	// Probe decides readiness; required.
	Probe process.Probe
	// ProbeInterval between readiness attempts; DefaultProbeInterval if zero.
	ProbeInterval time.Duration
	// ReadyTimeout bounds the wait for readiness; DefaultReadyTimeout if zero.
	ReadyTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL; DefaultStopGrace if zero.
	StopGrace time.Duration
	// Liveness checks, every LivenessPeriod once the process has been
	// ready, that it still works; each check is bounded by
	// LivenessTimeout. After LivenessThreshold failed checks in a
	// row the process counts as hung (SIGSTOP, a deadlock): it is
	// stopped (SIGTERM with SIGCONT, SIGKILL after StopGrace; BeforeStop
	// does not run) and restarted like a process that exited. nil means
	// Probe, which must then check this process alone: a readiness probe
	// that waits for other components (the kubelet's waits for its Node's
	// status in the apiserver) needs a Liveness of its own, or their
	// outage would restart this one too.
	Liveness process.Probe
	// LivenessPeriod is the time between liveness checks;
	// DefaultLivenessPeriod if zero.
	LivenessPeriod time.Duration
	// LivenessThreshold is how many failed checks in a row mean the
	// process hangs; DefaultLivenessThreshold if zero.
	LivenessThreshold int
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
	// Restart spaces the restarts after failures (an exit, a liveness
	// kill, a failed restart): the first after Duration, each next one
	// Factor times later, up to Cap (DefaultRestart if Duration is zero;
	// DefaultRestart.Cap if Cap is zero). Steps is not used: restarts go
	// on for ever, unless GiveUpAfter is set.
	Restart wait.Backoff
	// StableAfter is how long a process must run, ready, for its next
	// failure to start the backoff over rather than continue a crash
	// loop; 2 × Restart.Cap if zero, as the kubelet's CrashLoopBackOff.
	StableAfter time.Duration
	// GiveUpAfter, if > 0, ends supervision after that many failures in a
	// row: OnGiveUp is called and the component is left stopped, recorded
	// as failed. 0 (the default) restarts it for ever.
	GiveUpAfter int
	// OnGiveUp is called (once, from the supervising goroutine) when the
	// supervisor gives up (GiveUpAfter); may be nil.
	OnGiveUp func(err error)
	Log      *slog.Logger
}

// DefaultRestart is the restart backoff: 0.5 s doubling to 30 s, then every
// 30 s for as long as the component keeps failing.
var DefaultRestart = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second}

func (p *Proc) restartPolicy() wait.Backoff {
	b := p.Restart
	if b.Duration == 0 {
		b = DefaultRestart
	}
	if b.Cap == 0 {
		b.Cap = DefaultRestart.Cap
	}
	return b
}

func (p *Proc) stableAfter() time.Duration {
	if p.StableAfter > 0 {
		return p.StableAfter
	}
	return 2 * p.restartPolicy().Cap
}

func (p *Proc) liveness() (process.Probe, time.Duration, int) {
	probe, period, threshold := p.Liveness, p.LivenessPeriod, p.LivenessThreshold
	if probe == nil {
		probe = p.Probe
	}
	if period <= 0 {
		period = DefaultLivenessPeriod
	}
	if threshold <= 0 {
		threshold = DefaultLivenessThreshold
	}
	return probe, period, threshold
}

// Name implements boot.Component.
func (p *Proc) Name() string { return p.ComponentName }

// Phase implements boot.Component.
func (p *Proc) Phase() boot.Phase { return p.ComponentPhase }

// Start starts the process, waits for readiness and AfterReady, and
// supervises it until the returned Stoppable's Stop. On error nothing of it
// is left running.
func (p *Proc) Start(ctx context.Context) (boot.Stoppable, error) {
	s := &supervised{p: p, stopping: make(chan struct{}), done: make(chan struct{})}
	s.record(func(r *Supervision) { *r = Supervision{State: StateStarting} })
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
	s.proc, s.readyAt = proc, time.Now()
	s.record(func(r *Supervision) { r.State = StateRunning })
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
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

func (p *Proc) stopGrace() time.Duration {
	if p.StopGrace == 0 {
		return DefaultStopGrace
	}
	return p.StopGrace
}

func (p *Proc) stopProcess(ctx context.Context, proc *process.Process) error {
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
	errs = append(errs, proc.Stop(ctx, p.stopGrace()))
	return errors.Join(errs...)
}

// supervised is a started Proc.
type supervised struct {
	p        *Proc
	mu       sync.Mutex
	proc     *process.Process
	readyAt  time.Time // when proc became ready
	rec      Supervision
	stopOnce sync.Once
	cancel   context.CancelFunc // aborts a restart in progress
	stopping chan struct{}
	done     chan struct{}
}

// record updates the Supervision record and writes it to the run
// directory; a failed write is logged, as status is only informative.
func (s *supervised) record(update func(*Supervision)) {
	s.mu.Lock()
	update(&s.rec)
	rec := s.rec
	s.mu.Unlock()
	if err := WriteSupervision(s.p.Command.RunDir, rec); err != nil {
		s.p.Log.Warn("recording supervision state", "component", s.p.ComponentName, "err", err)
	}
}

// supervise restarts the process whenever it fails (see watch), with the
// crash-loop backoff, until Stop or, with GiveUpAfter, until it gives up.
func (s *supervised) supervise(ctx context.Context) {
	defer close(s.done)
	loop := newCrashLoop(s.p.restartPolicy(), s.p.stableAfter())
	log := s.p.Log.With("component", s.p.ComponentName)
	for {
		s.mu.Lock()
		proc, readyAt := s.proc, s.readyAt
		s.mu.Unlock()
		failure := s.watch(ctx, proc)
		if failure == nil {
			return // stopping
		}
		delay, failures := loop.failed(time.Since(readyAt))
		for {
			if s.p.GiveUpAfter > 0 && failures >= s.p.GiveUpAfter {
				log.Error("component keeps failing; giving up", "failures", failures, "err", failure)
				s.recordFailure(StateFailed, failures, failure, time.Time{})
				if s.p.OnGiveUp != nil {
					s.p.OnGiveUp(fmt.Errorf("%s failed %d times in a row: %w", s.p.ComponentName, failures, failure))
				}
				return
			}
			state := StateRestarting
			if failures > 1 {
				state = StateCrashLooping
			}
			log.Warn("component failed; restarting", "err", failure, "failures", failures, "in", delay)
			s.recordFailure(state, failures, failure, time.Now().Add(delay))
			select {
			case <-s.stopping:
				return
			case <-time.After(delay):
			}
			s.record(func(r *Supervision) { r.Restarts++ })
			next, err := s.p.launch(ctx)
			if err == nil && s.p.AfterRestart != nil {
				if err = s.p.AfterRestart(ctx); err != nil {
					err = errors.Join(fmt.Errorf("after restart: %w", err), s.p.stopProcess(context.WithoutCancel(ctx), next))
				}
			}
			if err == nil {
				s.mu.Lock()
				s.proc, s.readyAt = next, time.Now()
				s.mu.Unlock()
				s.record(func(r *Supervision) { r.State, r.NextRestart = StateRunning, time.Time{} })
				log.Info("component restarted", "pid", next.PID())
				break
			}
			select {
			case <-s.stopping:
				return // the restart was aborted by Stop
			default:
			}
			failure = fmt.Errorf("restart failed: %w", err)
			delay, failures = loop.failed(0)
		}
	}
}

func (s *supervised) recordFailure(state State, failures int, failure error, next time.Time) {
	s.record(func(r *Supervision) {
		r.State, r.Failures, r.NextRestart = state, failures, next
		r.LastFailure, r.LastFailureAt = failure.Error(), time.Now()
	})
}

// watch waits until proc fails, checking its liveness and capping its log
// every LivenessPeriod. It returns why proc failed: its exit status, or
// the liveness failure for which it stopped it. It returns nil once Stop
// is called.
func (s *supervised) watch(ctx context.Context, proc *process.Process) error {
	probe, period, threshold := s.p.liveness()
	live := &liveness{threshold: threshold}
	log := s.p.Log.With("component", s.p.ComponentName, "pid", proc.PID())
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-s.stopping:
			return nil
		case <-proc.Done():
			if err := proc.ExitErr(); err != nil {
				return fmt.Errorf("exited: %w", err)
			}
			return errors.New("exited: exit status 0")
		case <-tick.C:
		}
		if rotated, err := proc.CapLog(); err != nil {
			log.Warn("capping the log", "err", err)
		} else if rotated {
			log.Debug("rotated the log", "log", proc.Command().LogFile)
		}
		pctx, cancel := context.WithTimeout(process.WithAttemptTimeout(ctx, LivenessTimeout), LivenessTimeout)
		err := probe(pctx)
		cancel()
		select {
		case <-s.stopping:
			return nil
		case <-proc.Done():
			continue // report the exit, not the failed check
		default:
		}
		wasFailing := live.failures > 0
		if !live.observe(err) {
			switch {
			case err != nil:
				log.Warn("liveness check failed", "failures", live.failures, "threshold", threshold, "err", err)
				s.record(func(r *Supervision) { r.State = StateUnhealthy })
			case wasFailing:
				log.Info("liveness check passes again")
				s.record(func(r *Supervision) { r.State = StateRunning })
			}
			continue
		}
		failure := fmt.Errorf("liveness check failed %d times in a row: %w", live.failures, err)
		log.Warn("component hangs; stopping it", "err", failure)
		if serr := proc.Stop(ctx, s.p.stopGrace()); serr != nil {
			select {
			case <-s.stopping:
				return nil
			default:
			}
			log.Warn("stopping the hung process", "err", serr)
		}
		return failure
	}
}

// current returns the process being supervised.
func (s *supervised) current() *process.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Stop ends supervision and stops the process; idempotent.
func (s *supervised) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.cancel()
		<-s.done
		err = s.p.stopProcess(ctx, s.current())
	})
	return err
}
