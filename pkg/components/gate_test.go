package components

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	errNotYet := errors.New("not yet")
	tests := []struct {
		name string
		// failures is how many probes fail before one passes; -1: all.
		failures int32
		timeout  time.Duration
		wantErr  string
		// wantCalls is the least number of probes expected.
		wantCalls int32
	}{
		{"ready at the first probe", 0, time.Second, "", 1},
		{"ready after failed probes", 3, 5 * time.Second, "", 4},
		{"never ready: the timeout and the last probe error", -1, 200 * time.Millisecond, "gate not ready after", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			g := &Gate{
				ComponentName: "gate",
				Probe: func(context.Context) error {
					if n := calls.Add(1); tt.failures < 0 || n <= tt.failures {
						return errNotYet
					}
					return nil
				},
				ProbeInterval: 10 * time.Millisecond,
				ReadyTimeout:  tt.timeout,
			}
			s, err := g.Start(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if err := s.Stop(context.Background()); err != nil {
					t.Errorf("Stop: %v", err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start error = %v, want one containing %q", err, tt.wantErr)
				}
				if !errors.Is(err, errNotYet) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Start error = %v, want it to wrap the last probe error and the deadline", err)
				}
			}
			if got := calls.Load(); got < tt.wantCalls {
				t.Errorf("probes = %d, want at least %d", got, tt.wantCalls)
			}
		})
	}
}

func TestGateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gate{ComponentName: "gate", ProbeInterval: 10 * time.Millisecond, Probe: func(context.Context) error {
		cancel()
		return errors.New("not yet")
	}}
	if _, err := g.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start error = %v, want context.Canceled", err)
	}
}
