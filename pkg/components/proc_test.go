package components

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/process"
)

// flaky returns a Proc whose process exits once, 300 ms after its first
// start, and runs until stopped after that.
func flaky(t *testing.T) *Proc {
	t.Helper()
	dir := t.TempDir()
	mark := filepath.Join(dir, "started-once")
	return &Proc{
		ComponentName: "flaky",
		Command: process.Command{
			Name: "flaky", Scope: "test", Path: "/bin/sh",
			Args:    []string{"-c", `if [ -e "$0" ]; then exec sleep 600; fi; touch "$0"; sleep 0.3; exit 1`, mark},
			LogFile: filepath.Join(dir, "flaky.log"), RunDir: filepath.Join(dir, "run"),
		},
		Probe:     func(context.Context) error { return nil },
		Restart:   wait.Backoff{Duration: 50 * time.Millisecond, Factor: 1, Steps: 5},
		StopGrace: time.Second,
		Log:       slog.New(slog.DiscardHandler),
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAfterRestart(t *testing.T) {
	tests := []struct {
		name string
		// failures is how many AfterRestart calls fail before one succeeds.
		failures int32
	}{
		{"runs after a restart, not the first start", 0},
		{"its error fails the restart, which is retried", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := flaky(t)
			var ready, restarted, calls atomic.Int32
			p.AfterReady = func(context.Context) error { ready.Add(1); return nil }
			p.AfterRestart = func(context.Context) error {
				if calls.Add(1) <= tt.failures {
					return errors.New("injected")
				}
				restarted.Add(1)
				return nil
			}
			s, err := p.Start(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			if ready.Load() != 1 || calls.Load() != 0 {
				t.Fatalf("after start: AfterReady %d, AfterRestart %d calls; want 1, 0", ready.Load(), calls.Load())
			}
			waitFor(t, "AfterRestart after the process exited", func() bool { return restarted.Load() == 1 })
			if got := calls.Load(); got != tt.failures+1 {
				t.Errorf("AfterRestart called %d times, want %d", got, tt.failures+1)
			}
			if ready.Load() != 1 {
				t.Errorf("AfterReady ran %d times, want once", ready.Load())
			}
			select {
			case <-s.(*supervised).current().Done():
				t.Error("the restarted process is not running")
			default:
			}
		})
	}
}
