// Package boot defines what kubernix starts and in which order: a
// Component has a Phase, may name the components it needs (Needer), and
// once started has a Stoppable handle. The Sequence starts phases in order
// and the components of a phase in parallel, each component as soon as
// what it needs is ready, and stops whatever started in reverse order,
// also after a failure part-way.
package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Phase orders the boot. By default a component needs every component of
// the earlier phases, and the components of one phase start in parallel; a
// component that needs less says so (Needer), and starts as soon as that
// is ready, so the boot follows the real dependencies:
//
//   - Infrastructure: etcd, and each node's sandbox (its namespaces, with
//     the container executor). Every other control-plane component stores
//     its state through the apiserver, which cannot start without its
//     datastore.
//   - ControlPlane: kube-apiserver, ready once it serves, and
//     apiserver-ready, a gate that is ready once its /readyz passes (the
//     post-start hooks made the bootstrap RBAC policy). Controllers, nodes
//     and addons all talk to it, and it needs only etcd.
//   - Controller: kube-controller-manager, kube-scheduler (and the service
//     accounts of the controller-manager's controllers, made in advance),
//     and each node's containerd. The controller-manager needs the
//     apiserver serving (it waits for its /healthz itself), the scheduler
//     the apiserver ready (its RBAC bindings exist only then).
//     containerd needs only
//     its node's sandbox: it boots, and imports the built-in images, while
//     etcd and the apiserver do.
//   - NodeAgent: each node's kubelet, kube-proxy and NetworkPolicy agent
//     (netpol-agent). The kubelet needs the apiserver serving, where it
//     registers (the node authorizer needs no RBAC objects), and its
//     node's containerd, its container runtime; kube-proxy needs the
//     apiserver ready, whose Services and EndpointSlices it watches, and
//     its node's sandbox; the agent needs the same, and the cluster-admins
//     task that grants its RBAC. None waits for the controller-manager or
//     the scheduler.
//   - Addons: CoreDNS and other workloads, which need Ready nodes, the
//     scheduler and the controllers to run: every earlier component.
//
// Stopping reverses the needs: a component stops once everything that
// needs it has. In particular the apiserver stops before etcd, since with
// its datastore gone it ignores SIGTERM for over a minute, and a node's
// containerd before its sandbox.
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
	// Name is unique within the sequence, e.g. "etcd" or "kubelet@node-1".
	Name() string
	Phase() Phase
	// Start starts the component and returns once it is ready (its
	// readiness probe passed), or an error. On error, Start has already
	// cleaned up after itself.
	Start(ctx context.Context) (Stoppable, error)
}

// Needer is implemented by a Component that needs other components than
// the default, every component of the earlier phases: Needs names them,
// of its own phase or earlier ones, and the component starts as soon as
// those are ready. A node's kubelet, say, needs the apiserver and its own
// node's containerd, not the scheduler.
type Needer interface {
	Needs() []string
}

// WithNeeds returns c as a Needer that needs the components named.
func WithNeeds(c Component, needs ...string) Component { return &withNeeds{c, needs} }

type withNeeds struct {
	Component
	needs []string
}

func (w *withNeeds) Needs() []string { return w.needs }

// Timing records when a component was started and when it became ready.
type Timing struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// Needs are the components it waited for (see Needer), sorted; empty
	// (not nil) when none.
	Needs   []string      `json:"needs"`
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

// Sequence holds the components of a cluster.
type Sequence struct {
	log        *slog.Logger
	components []Component

	mu      sync.Mutex
	started []started // in start order
}

type started struct {
	name  string
	needs []string
	stop  Stoppable
}

// NewSequence returns an empty sequence logging to log.
func NewSequence(log *slog.Logger) *Sequence {
	return &Sequence{log: log}
}

// ErrDuplicate is returned by Add for a second component with the same name.
var ErrDuplicate = errors.New("duplicate component")

// Add registers components. It errors (wrapping ErrDuplicate) on a name
// already registered, or on a phase outside Phases, and adds none then.
func (r *Sequence) Add(cs ...Component) error {
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
func (r *Sequence) Components(p Phase) []Component {
	var out []Component
	for _, c := range r.components {
		if c.Phase() == p {
			out = append(out, c)
		}
	}
	return out
}

// Start starts the components, each once everything it needs is ready:
// by default every component of the earlier phases, so phases start in
// order and the components within a phase in parallel; a Needer narrows
// that. On the first failure it cancels the components starting, starts no
// more, waits, and returns the error of the one that failed first (with
// the others' that were not cancellations), as "phase <P>: start <name>:
// …"; what did start stays registered for Stop. Needs that name an
// unknown component, a component of a later phase, or form a cycle are an
// error before anything starts. obs may be nil.
func (r *Sequence) Start(ctx context.Context, obs Observer) error {
	needs, err := r.needs()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	b := &boot{
		r: r, cancel: cancel, obs: obs, needs: needs,
		ready:  map[string]chan struct{}{},
		phases: newPhaseTracker(r.components, obs),
		errs:   make([]error, len(r.components)),
	}
	for _, c := range r.components {
		b.ready[c.Name()] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i, c := range r.components {
		wg.Go(func() { b.start(ctx, i, c) })
	}
	wg.Wait()
	return b.err(ctx)
}

// boot is one run of Sequence.Start.
type boot struct {
	r      *Sequence
	cancel context.CancelCauseFunc // cancels the boot's ctx, the first failure its cause
	obs    Observer
	needs  map[string][]string      // see Sequence.needs
	ready  map[string]chan struct{} // by name, closed once it is ready
	phases *phaseTracker
	errs   []error // by index in r.components
}

// start starts c, the i-th component, once everything it needs is ready,
// unless ctx, the boot's, is cancelled first.
func (b *boot) start(ctx context.Context, i int, c Component) {
	for _, n := range b.needs[c.Name()] {
		select {
		case <-b.ready[n]:
		case <-ctx.Done():
			return // never started
		}
	}
	if ctx.Err() != nil {
		return
	}
	p := c.Phase()
	b.phases.started(p)
	t := Timing{Name: c.Name(), Phase: p.String(), Needs: b.needs[c.Name()], Started: time.Now()}
	b.r.log.Debug("starting", "component", c.Name(), "phase", p)
	stop, err := c.Start(ctx)
	t.Ready = time.Now()
	t.Elapsed = t.Ready.Sub(t.Started)
	if err != nil {
		err = fmt.Errorf("phase %s: start %s: %w", p, c.Name(), err)
		t.Error = err.Error()
		b.errs[i] = err
		b.cancel(err)
	} else {
		b.r.mu.Lock()
		b.r.started = append(b.r.started, started{name: c.Name(), needs: b.needs[c.Name()], stop: stop})
		b.r.mu.Unlock()
		b.r.log.Debug("ready", "component", c.Name(), "elapsed", t.Elapsed)
	}
	if b.obs != nil {
		b.obs.ComponentDone(t)
	}
	if err == nil {
		// The observer hears of the phase before dependants start.
		b.phases.ready(p)
		close(b.ready[c.Name()])
	}
}

// err returns, once every start has returned, the error of the component
// that failed first, joined with the others' that were not cancellations;
// else ctx's error when the boot was cancelled from outside.
func (b *boot) err(ctx context.Context) error {
	// Report the component that failed first, not those it cancelled.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		var rest []error
		for _, err := range b.errs {
			if err != nil && err != cause && !errors.Is(err, context.Canceled) {
				rest = append(rest, err)
			}
		}
		return errors.Join(append([]error{cause}, rest...)...)
	}
	if err := errors.Join(b.errs...); err != nil {
		return err
	}
	return ctx.Err() // cancelled from outside before everything started
}

// needs returns, by component name, the names of the components it needs
// (see Start), sorted, and checks them.
func (r *Sequence) needs() (map[string][]string, error) {
	byName := map[string]Component{}
	for _, c := range r.components {
		byName[c.Name()] = c
	}
	out := map[string][]string{}
	var errs []error
	for _, c := range r.components {
		ns := []string{} // not nil: a Timing tells "needs nothing" from "not recorded"
		if n, ok := c.(Needer); ok {
			ns = append(ns, n.Needs()...)
			for _, name := range ns {
				dep, ok := byName[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("component %s needs %s, which is not registered", c.Name(), name))
				case dep.Phase() > c.Phase():
					errs = append(errs, fmt.Errorf("component %s (phase %s) needs %s of the later phase %s", c.Name(), c.Phase(), name, dep.Phase()))
				}
			}
		} else {
			for _, dep := range r.components {
				if dep.Phase() < c.Phase() {
					ns = append(ns, dep.Name())
				}
			}
		}
		slices.Sort(ns)
		out[c.Name()] = slices.Compact(ns)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Within a phase, needs could loop.
	names := make([]string, len(r.components))
	for i, c := range r.components {
		names[i] = c.Name()
	}
	if _, err := Order(names, func(name string) []string { return out[name] }); err != nil {
		return nil, err
	}
	return out, nil
}

// Order returns names ordered so that each comes after the names it needs
// (needs(name), each a member of names), depth first in the given order:
// ties keep that order. It errors, naming the path, when needs form a
// cycle.
func Order(names []string, needs func(name string) []string) ([]string, error) {
	state := map[string]int{} // 1 visiting, 2 placed
	out := make([]string, 0, len(names))
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("components need each other in a cycle: %s", strings.Join(append(path, name), " -> "))
		case 2:
			return nil
		}
		state[name] = 1
		for _, n := range needs(name) {
			if err := visit(n, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, name)
		return nil
	}
	for _, name := range names {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// phaseTracker tells an Observer when the first component of a phase
// starts and when the last one is ready.
type phaseTracker struct {
	obs     Observer
	mu      sync.Mutex
	left    map[Phase]int // components not ready yet
	began   map[Phase]time.Time
	ordered []Phase
}

func newPhaseTracker(cs []Component, obs Observer) *phaseTracker {
	t := &phaseTracker{obs: obs, left: map[Phase]int{}, began: map[Phase]time.Time{}}
	for _, c := range cs {
		t.left[c.Phase()]++
	}
	return t
}

func (t *phaseTracker) started(p Phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.began[p]; ok {
		return
	}
	t.began[p] = time.Now()
	if t.obs != nil {
		t.obs.PhaseStarted(p)
	}
}

func (t *phaseTracker) ready(p Phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.left[p]--
	if t.left[p] == 0 && t.obs != nil {
		t.obs.PhaseDone(p, time.Since(t.began[p]))
	}
}

// Stop stops every started component, each only after the components that
// need it have stopped (with the default needs: phases in reverse, and
// within a phase in parallel). It stops everything even when some stops
// fail, and returns their errors joined. Calling it again is a no-op.
func (r *Sequence) Stop(ctx context.Context) error {
	r.mu.Lock()
	all := r.started
	r.started = nil
	r.mu.Unlock()
	stopped := map[string]chan struct{}{}
	dependents := map[string][]string{}
	for _, s := range all {
		stopped[s.name] = make(chan struct{})
	}
	for _, s := range all {
		for _, n := range s.needs {
			if _, ok := stopped[n]; ok {
				dependents[n] = append(dependents[n], s.name)
			}
		}
	}
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			defer close(stopped[s.name])
			for _, d := range dependents[s.name] {
				<-stopped[d]
			}
			r.log.Debug("stopping", "component", s.name)
			if err := s.stop.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", s.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
