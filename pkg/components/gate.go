package components

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/boot"
	"github.com/kubernix/kubernix/pkg/process"
)

// Gate is a component without a process of its own: it is ready once its
// Probe passes, and components that need it start only then. It splits
// one process's readiness in two, e.g. the apiserver serving (its process
// component is ready) and the apiserver ready (its /readyz passes, after
// the post-start hooks made the bootstrap RBAC policy): what needs only
// the first starts sooner.
type Gate struct {
	ComponentName  string
	ComponentPhase boot.Phase
	// Probe decides readiness; required.
	Probe process.Probe
	// ProbeInterval between attempts; DefaultProbeInterval if zero.
	ProbeInterval time.Duration
	// ReadyTimeout bounds the wait; DefaultReadyTimeout if zero.
	ReadyTimeout time.Duration
}

// Name implements boot.Component.
func (g *Gate) Name() string { return g.ComponentName }

// Phase implements boot.Component.
func (g *Gate) Phase() boot.Phase { return g.ComponentPhase }

// Start probes, first at once and then every ProbeInterval, until the
// probe passes. It returns an error wrapping ctx's error or
// context.DeadlineExceeded (after ReadyTimeout), with the last probe
// error. Its Stoppable does nothing.
func (g *Gate) Start(ctx context.Context) (boot.Stoppable, error) {
	interval, timeout := g.ProbeInterval, g.ReadyTimeout
	if interval == 0 {
		interval = DefaultProbeInterval
	}
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	begin := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		if last = g.Probe(ctx); last != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if last == nil {
			last = errors.New("no probe completed")
		}
		return nil, fmt.Errorf("%s not ready after %s: %w; last probe error: %w",
			g.ComponentName, time.Since(begin).Round(time.Millisecond), err, last)
	}
	return boot.StopFunc(func(context.Context) error { return nil }), nil
}
