// Package component defines what kubernix starts and in which order: a
// Component has a Phase and, once started, a Stoppable handle. The Registry
// starts phases in order, the components of a phase in parallel, and stops
// whatever started in reverse order, also after a failure part-way.
package component

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Phase orders the boot. Every component of a phase must be ready before
// the next phase starts; components within a phase start in parallel.
//
//   - Infrastructure: etcd. Every other control-plane component stores its
//     state through the apiserver, which cannot start without its datastore.
//   - ControlPlane: kube-apiserver. Controllers, nodes and addons all talk to
//     it, and it needs only etcd.
//   - Controller: kube-controller-manager, kube-scheduler, and each node's
//     containerd. They need the apiserver (containerd does not, but it has
//     no dependants before the kubelet and starting it here overlaps its
//     boot with the controllers').
//   - NodeAgent: each node's kubelet and kube-proxy. The kubelet needs its
//     container runtime ready and registers with the apiserver; kube-proxy
//     watches Services and EndpointSlices.
//   - Addons: CoreDNS and other workloads, which need Ready nodes, the
//     scheduler and the controllers to run.
//
// Stopping reverses the order: in particular the apiserver stops before
// etcd, since with its datastore gone it ignores SIGTERM for over a minute.
type Phase int

// The phases, in boot order.
const (
	Infrastructure Phase = iota
	ControlPlane
	Controller
	NodeAgent
	Addons
)

// Phases lists every phase in boot order.
var Phases = []Phase{Infrastructure, ControlPlane, Controller, NodeAgent, Addons}

func (p Phase) String() string {
	switch p {
	case Infrastructure:
		return "Infrastructure"
	case ControlPlane:
		return "ControlPlane"
	case Controller:
		return "Controller"
	case NodeAgent:
		return "NodeAgent"
	case Addons:
		return "Addons"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Stoppable is a started component. Stop must be idempotent: stopping a
// stopped component returns nil.
type Stoppable interface {
	Stop(ctx context.Context) error
}

// StopFunc adapts a function to Stoppable.
type StopFunc func(ctx context.Context) error

// Stop calls f.
func (f StopFunc) Stop(ctx context.Context) error { return f(ctx) }

// Component is something the cluster starts.
type Component interface {
	// Name is unique within the registry, e.g. "etcd" or "kubelet@node-1".
	Name() string
	Phase() Phase
	// Start starts the component and returns once it is ready (its
	// readiness probe passed), or an error. On error, Start has already
	// cleaned up after itself.
	Start(ctx context.Context) (Stoppable, error)
}

// Timing records when a component was started and when it became ready.
type Timing struct {
	Name    string        `json:"name"`
	Phase   string        `json:"phase"`
	Started time.Time     `json:"started"`
	Ready   time.Time     `json:"ready"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Error   string        `json:"error,omitempty"`
}

// Observer is told about boot progress; all methods may be called
// concurrently. A nil Observer is allowed.
type Observer interface {
	PhaseStarted(p Phase)
	PhaseDone(p Phase, elapsed time.Duration)
	ComponentDone(t Timing)
}

// Registry holds the components of a cluster.
type Registry struct {
	log        *slog.Logger
	components []Component

	mu      sync.Mutex
	started []started // in start order
}

type started struct {
	name  string
	phase Phase
	stop  Stoppable
}

// NewRegistry returns an empty registry logging to log.
func NewRegistry(log *slog.Logger) *Registry {
	return &Registry{log: log}
}

// ErrDuplicate is returned by Add for a second component with the same name.
var ErrDuplicate = errors.New("duplicate component")

// Add registers components. It errors (wrapping ErrDuplicate) on a name
// already registered, or on a phase outside Phases, and adds none then.
func (r *Registry) Add(cs ...Component) error {
	names := map[string]bool{}
	for _, c := range r.components {
		names[c.Name()] = true
	}
	for _, c := range cs {
		if names[c.Name()] {
			return fmt.Errorf("%w: %s", ErrDuplicate, c.Name())
		}
		if !slices.Contains(Phases, c.Phase()) {
			return fmt.Errorf("component %s: unknown phase %d", c.Name(), c.Phase())
		}
		names[c.Name()] = true
	}
	r.components = append(r.components, cs...)
	return nil
}

// Components returns the registered components of phase p, in order added.
func (r *Registry) Components(p Phase) []Component {
	var out []Component
	for _, c := range r.components {
		if c.Phase() == p {
			out = append(out, c)
		}
	}
	return out
}

// Start starts every phase in order, the components within a phase in
// parallel, each phase only after the previous one is ready. On the first
// failure it cancels the rest of that phase, waits for it, and returns the
// error(s) joined; what did start stays registered for Stop. obs may be nil.
func (r *Registry) Start(ctx context.Context, obs Observer) error {
	for _, p := range Phases {
		cs := r.Components(p)
		if len(cs) == 0 {
			continue
		}
		if obs != nil {
			obs.PhaseStarted(p)
		}
		begin := time.Now()
		if err := r.startPhase(ctx, p, cs, obs); err != nil {
			return fmt.Errorf("phase %s: %w", p, err)
		}
		if obs != nil {
			obs.PhaseDone(p, time.Since(begin))
		}
	}
	return nil
}

func (r *Registry) startPhase(ctx context.Context, p Phase, cs []Component, obs Observer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := Timing{Name: c.Name(), Phase: p.String(), Started: time.Now()}
			r.log.Debug("starting", "component", c.Name(), "phase", p)
			stop, err := c.Start(ctx)
			t.Ready = time.Now()
			t.Elapsed = t.Ready.Sub(t.Started)
			if err != nil {
				err = fmt.Errorf("start %s: %w", c.Name(), err)
				t.Error = err.Error()
				errs[i] = err
				cancel(err)
			} else {
				r.mu.Lock()
				r.started = append(r.started, started{name: c.Name(), phase: p, stop: stop})
				r.mu.Unlock()
				r.log.Debug("ready", "component", c.Name(), "elapsed", t.Elapsed)
			}
			if obs != nil {
				obs.ComponentDone(t)
			}
		}()
	}
	wg.Wait()
	// Report the component that failed first, not those it cancelled.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		var rest []error
		for _, err := range errs {
			if err != nil && err != cause && !errors.Is(err, context.Canceled) {
				rest = append(rest, err)
			}
		}
		return errors.Join(append([]error{cause}, rest...)...)
	}
	return errors.Join(errs...)
}

// Stop stops every started component in reverse start order: phases in
// reverse, and within a phase in parallel. It stops everything even when
// some stops fail, and returns their errors joined. Calling it again is a
// no-op.
func (r *Registry) Stop(ctx context.Context) error {
	r.mu.Lock()
	all := r.started
	r.started = nil
	r.mu.Unlock()
	var errs []error
	for i := len(Phases) - 1; i >= 0; i-- {
		var batch []started
		for _, s := range all {
			if s.phase == Phases[i] {
				batch = append(batch, s)
			}
		}
		errs = append(errs, stopAll(ctx, r.log, batch)...)
	}
	return errors.Join(errs...)
}

func stopAll(ctx context.Context, log *slog.Logger, batch []started) []error {
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, s := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Debug("stopping", "component", s.name)
			if err := s.stop.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", s.name, err)
			}
		}()
	}
	wg.Wait()
	return errs
}
