package components

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/process"
)

func TestCrashLoop(t *testing.T) {
	policy := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second}
	const stable = time.Minute
	s := time.Second
	tests := []struct {
		name   string
		policy wait.Backoff
		// ran is how long the process ran before each failure.
		ran          []time.Duration
		wantDelays   []time.Duration
		wantFailures []int
	}{
		{
			name:         "grows to the cap and stays there, never giving up",
			policy:       policy,
			ran:          []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			wantDelays:   []time.Duration{s / 2, s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s, 30 * s},
			wantFailures: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		},
		{
			name:         "a run shorter than stable continues the loop",
			policy:       policy,
			ran:          []time.Duration{10 * s, 59 * s, 0},
			wantDelays:   []time.Duration{s / 2, s, 2 * s},
			wantFailures: []int{1, 2, 3},
		},
		{
			name:         "a stable run starts over",
			policy:       policy,
			ran:          []time.Duration{0, 0, 0, stable, 0},
			wantDelays:   []time.Duration{s / 2, s, 2 * s, s / 2, s},
			wantFailures: []int{1, 2, 3, 1, 2},
		},
		{
			name:         "factor 1 keeps the delay",
			policy:       wait.Backoff{Duration: s, Factor: 1, Cap: 30 * s},
			ran:          []time.Duration{0, 0, 0},
			wantDelays:   []time.Duration{s, s, s},
			wantFailures: []int{1, 2, 3},
		},
		{
			name:         "a first delay above the cap is capped after the first",
			policy:       wait.Backoff{Duration: 20 * s, Factor: 2, Cap: 30 * s},
			ran:          []time.Duration{0, 0, 0},
			wantDelays:   []time.Duration{20 * s, 30 * s, 30 * s},
			wantFailures: []int{1, 2, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCrashLoop(tt.policy, stable)
			for i, ran := range tt.ran {
				delay, failures := c.failed(ran)
				if delay != tt.wantDelays[i] || failures != tt.wantFailures[i] {
					t.Errorf("failure %d (ran %s): delay %s, failures %d; want %s, %d",
						i+1, ran, delay, failures, tt.wantDelays[i], tt.wantFailures[i])
				}
			}
		})
	}
}

func TestLivenessThreshold(t *testing.T) {
	fail := errors.New("timeout")
	tests := []struct {
		name   string
		checks []error
		// hungAt is the index of the check after which the process counts
		// as hung, -1 for none.
		hungAt int
	}{
		{"passing checks", []error{nil, nil, nil, nil}, -1},
		{"fewer failures than the threshold", []error{fail, fail, nil, fail}, -1},
		{"a pass in between starts the count over", []error{fail, fail, nil, fail, fail, fail}, 5},
		{"threshold failures in a row", []error{nil, fail, fail, fail}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &liveness{threshold: 3}
			got := -1
			for i, err := range tt.checks {
				if l.observe(err) && got < 0 {
					got = i
				}
			}
			if got != tt.hungAt {
				t.Errorf("hung after check %d, want %d", got, tt.hungAt)
			}
		})
	}
}

// crashing returns a Proc whose process exits with status 3 shortly after
// each start, ready until then, restarted 5 ms after its first failure,
// at most 20 ms apart, never running stable; starts counts its (re)starts.
func crashing(t *testing.T, starts *atomic.Int32) *Proc {
	t.Helper()
	dir := t.TempDir()
	return &Proc{
		ComponentName: "crashing",
		Command: process.Command{
			Name: "crashing", Scope: "test", Path: "/bin/sh", Args: []string{"-c", "sleep 0.05; exit 3"},
			LogFile: filepath.Join(dir, "crashing.log"), RunDir: filepath.Join(dir, "run"),
		},
		Prepare:     func(context.Context) error { starts.Add(1); return nil },
		Probe:       func(context.Context) error { return nil },
		Restart:     wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond},
		StableAfter: time.Hour,
		StopGrace:   time.Second,
		Log:         slog.New(slog.DiscardHandler),
	}
}

// TestRestartsForever: a component that keeps crashing is restarted for
// as long as it is supervised (before, the supervisor gave up after six
// restarts and left it dead), and its record says it crash-loops.
func TestRestartsForever(t *testing.T) {
	var starts atomic.Int32
	p := crashing(t, &starts)
	s, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	waitFor(t, "20 restarts", func() bool { return starts.Load() >= 21 })
	rec, err := ReadSupervision(p.Command.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != StateCrashLooping && rec.State != StateRunning {
		t.Errorf("state %q, want %q (or %q between two crashes)", rec.State, StateCrashLooping, StateRunning)
	}
	if rec.Restarts < 20 || rec.Failures < 20 {
		t.Errorf("record %+v: want at least 20 restarts and failures in a row", rec)
	}
	if !strings.Contains(rec.LastFailure, "exit status 3") {
		t.Errorf("last failure %q does not give the exit status", rec.LastFailure)
	}
}

// TestGiveUpAfter: with GiveUpAfter, the supervisor gives up after that
// many failures in a row, calls OnGiveUp once and records the failure.
func TestGiveUpAfter(t *testing.T) {
	var starts, gaveUp atomic.Int32
	p := crashing(t, &starts)
	p.GiveUpAfter = 3
	p.OnGiveUp = func(error) { gaveUp.Add(1) }
	s, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	waitFor(t, "OnGiveUp", func() bool { return gaveUp.Load() == 1 })
	<-s.(*supervised).done
	// The first start and two restarts, each ending in a failure.
	if got := starts.Load(); got != 3 {
		t.Errorf("%d starts, want 3", got)
	}
	rec, err := ReadSupervision(p.Command.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != StateFailed || rec.Failures != 3 {
		t.Errorf("record %+v: want state %q after 3 failures", rec, StateFailed)
	}
}

// TestLivenessRestartsHungProcess: a process that stops answering (here
// SIGSTOPped) is found by its liveness check, stopped although it is
// stopped, and restarted; a process that answers again before the
// threshold is left alone.
func TestLivenessRestartsHungProcess(t *testing.T) {
	tests := []struct {
		name string
		// hangFor is how many liveness checks fail (0: until restarted).
		hangFor     int32
		wantRestart bool
	}{
		{"hung until restarted", 0, true},
		{"a hiccup below the threshold", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var hung atomic.Bool
			var checks, failed, starts atomic.Int32
			p := &Proc{
				ComponentName: "hangs",
				Command: process.Command{
					Name: "hangs", Scope: "test", Path: "/bin/sleep", Args: []string{"600"},
					LogFile: filepath.Join(dir, "hangs.log"), RunDir: filepath.Join(dir, "run"),
				},
				Prepare: func(context.Context) error { starts.Add(1); hung.Store(false); return nil },
				Probe:   func(context.Context) error { return nil },
				Liveness: func(context.Context) error {
					checks.Add(1)
					if hung.Load() && (tt.hangFor == 0 || failed.Load() < tt.hangFor) {
						failed.Add(1)
						return errors.New("no answer")
					}
					return nil
				},
				LivenessPeriod: 10 * time.Millisecond,
				Restart:        wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond},
				StopGrace:      time.Minute, // SIGCONT lets the stopped sleep act on SIGTERM
				Log:            slog.New(slog.DiscardHandler),
			}
			s, err := p.Start(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			first := s.(*supervised).current()
			if err := syscall.Kill(first.PID(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			hung.Store(true)
			if !tt.wantRestart {
				waitFor(t, "the hiccup and 5 more checks", func() bool { return failed.Load() == tt.hangFor && checks.Load() > 10 })
				if got := starts.Load(); got != 1 {
					t.Errorf("%d starts after %d failed checks (threshold %d), want 1", got, tt.hangFor, DefaultLivenessThreshold)
				}
				_ = syscall.Kill(first.PID(), syscall.SIGCONT)
				return
			}
			waitFor(t, "a restart", func() bool { return starts.Load() == 2 && s.(*supervised).current() != first })
			select {
			case <-first.Done():
			default:
				t.Errorf("the hung process (pid %d) still runs", first.PID())
			}
			rec, err := ReadSupervision(p.Command.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Restarts != 1 || !strings.Contains(rec.LastFailure, fmt.Sprintf("liveness check failed %d times", DefaultLivenessThreshold)) {
				t.Errorf("record %+v: want 1 restart after a liveness failure", rec)
			}
		})
	}
}

// TestLivenessCheckGivenTime: a liveness check may take LivenessTimeout,
// far longer than a readiness attempt (process.ProbeTimeout): a process
// that answers late on a loaded machine is not taken for a hung one.
func TestLivenessCheckGivenTime(t *testing.T) {
	dir := t.TempDir()
	given := make(chan time.Duration, 1)
	p := &Proc{
		ComponentName: "slow",
		Command: process.Command{
			Name: "slow", Scope: "test", Path: "/bin/sleep", Args: []string{"600"},
			LogFile: filepath.Join(dir, "slow.log"), RunDir: filepath.Join(dir, "run"),
		},
		Probe: func(context.Context) error { return nil },
		Liveness: func(ctx context.Context) error {
			if dl, ok := ctx.Deadline(); ok {
				select {
				case given <- time.Until(dl):
				default:
				}
			}
			return nil
		},
		LivenessPeriod: 10 * time.Millisecond,
		Log:            slog.New(slog.DiscardHandler),
	}
	s, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	select {
	case d := <-given:
		if d <= process.ProbeTimeout || d > LivenessTimeout {
			t.Errorf("a liveness check was given %s, want more than a readiness attempt's %s, at most LivenessTimeout (%s)", d, process.ProbeTimeout, LivenessTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no liveness check with a deadline within 10 s")
	}
}
