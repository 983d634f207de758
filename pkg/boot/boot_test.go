package boot

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// journal records events from fake components in the order they happen.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

// fake is a Component whose Start can wait on a barrier or fail.
type fake struct {
	name    string
	phase   Phase
	j       *journal
	err     error           // Start fails with it
	barrier *sync.WaitGroup // if set: Done, then Wait before returning (proves parallelism)
	block   bool            // Start blocks until ctx is cancelled
	stopErr error
	began   chan struct{} // if set: closed when Start is called
	waitFor []*fake       // Start waits until these began (their began must be set)
	needs   []string      // if set: implements Needer
}

// needer is a fake with needs of its own (Needer).
type needer struct{ *fake }

func (n needer) Needs() []string { return n.needs }

func (f *fake) Name() string { return f.name }
func (f *fake) Phase() Phase { return f.phase }
func (f *fake) Start(ctx context.Context) (Stoppable, error) {
	f.j.add("start " + f.name)
	if f.began != nil {
		close(f.began)
	}
	for _, w := range f.waitFor {
		<-w.began
	}
	if f.barrier != nil {
		f.barrier.Done()
		f.barrier.Wait()
	}
	if f.block {
		<-ctx.Done()
		f.j.add("cancelled " + f.name)
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	return StopFunc(func(context.Context) error {
		f.j.add("stop " + f.name)
		return f.stopErr
	}), nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func index(events []string, e string) int { return slices.Index(events, e) }

func TestStartOrderAndReverseStop(t *testing.T) {
	j := &journal{}
	r := NewSequence(quiet())
	err := r.Add(
		&fake{name: "coredns", phase: Addons, j: j},
		&fake{name: "kubelet", phase: NodeAgent, j: j},
		&fake{name: "scheduler", phase: Controller, j: j},
		&fake{name: "apiserver", phase: ControlPlane, j: j},
		&fake{name: "etcd", phase: Infrastructure, j: j},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start etcd", "start apiserver", "start scheduler", "start kubelet", "start coredns",
		"stop coredns", "stop kubelet", "stop scheduler", "stop apiserver", "stop etcd",
	}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	// A second Stop does nothing.
	if err := r.Stop(context.Background()); err != nil || len(j.list()) != len(want) {
		t.Fatalf("second Stop: err %v, events %v", err, j.list())
	}
}

func TestPhaseStartsInParallel(t *testing.T) {
	j := &journal{}
	var barrier sync.WaitGroup
	barrier.Add(3)
	r := NewSequence(quiet())
	for _, n := range []string{"a", "b", "c"} {
		if err := r.Add(&fake{name: n, phase: Controller, j: j, barrier: &barrier}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx, nil) }()
	// Each Start waits until all three have begun: only parallel starts finish.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("components of one phase did not start in parallel")
	}
}

func TestFailurePartWay(t *testing.T) {
	tests := []struct {
		name      string
		failIn    Phase
		wantStart []string // must have started
		notStart  []string // must not have started
		wantStop  []string // stopped, in this order
	}{
		{
			name:      "controller fails",
			failIn:    Controller,
			wantStart: []string{"etcd", "apiserver", "ctrl-ok", "ctrl-bad"},
			notStart:  []string{"kubelet"},
			wantStop:  []string{"stop ctrl-ok", "stop apiserver", "stop etcd"},
		},
		{
			name:      "infrastructure fails",
			failIn:    Infrastructure,
			wantStart: []string{"etcd-bad"},
			notStart:  []string{"apiserver", "kubelet"},
			wantStop:  []string{"stop etcd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			boom := errors.New("boom")
			r := NewSequence(quiet())
			add := func(f *fake) {
				f.j = j
				if err := r.Add(f); err != nil {
					t.Fatal(err)
				}
			}
			etcd := &fake{name: "etcd", phase: Infrastructure, began: make(chan struct{})}
			ctrlOK := &fake{name: "ctrl-ok", phase: Controller, began: make(chan struct{})}
			add(etcd)
			add(&fake{name: "apiserver", phase: ControlPlane})
			add(ctrlOK)
			add(&fake{name: "kubelet", phase: NodeAgent})
			// The failing component fails once its sibling started.
			switch tt.failIn {
			case Controller:
				add(&fake{name: "ctrl-bad", phase: Controller, err: boom, waitFor: []*fake{ctrlOK}})
			case Infrastructure:
				add(&fake{name: "etcd-bad", phase: Infrastructure, err: boom, waitFor: []*fake{etcd}})
			}
			err := r.Start(context.Background(), nil)
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "phase "+tt.failIn.String()) {
				t.Fatalf("Start error = %v, want boom in phase %s", err, tt.failIn)
			}
			events := j.list()
			for _, n := range tt.wantStart {
				if index(events, "start "+n) < 0 {
					t.Errorf("%s did not start: %v", n, events)
				}
			}
			for _, n := range tt.notStart {
				if index(events, "start "+n) >= 0 {
					t.Errorf("%s started after the failure: %v", n, events)
				}
			}
			if err := r.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			var stops []string
			for _, e := range j.list() {
				if strings.HasPrefix(e, "stop ") {
					stops = append(stops, e)
				}
			}
			if !slices.Equal(stops, tt.wantStop) {
				t.Errorf("stops = %v, want %v", stops, tt.wantStop)
			}
		})
	}
}

func TestFailureCancelsSiblings(t *testing.T) {
	j := &journal{}
	boom := errors.New("boom")
	r := NewSequence(quiet())
	slow := &fake{name: "slow", phase: Controller, j: j, block: true, began: make(chan struct{})}
	if err := r.Add(slow, &fake{name: "bad", phase: Controller, j: j, err: boom, waitFor: []*fake{slow}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.Start(ctx, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Start = %v, want boom", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("Start reports the cancelled sibling, want only the cause: %v", err)
	}
	if index(j.list(), "cancelled slow") < 0 {
		t.Errorf("sibling was not cancelled: %v", j.list())
	}
}

func TestStopCollectsErrorsAndStopsAll(t *testing.T) {
	j := &journal{}
	e1, e2 := errors.New("e1"), errors.New("e2")
	r := NewSequence(quiet())
	if err := r.Add(
		&fake{name: "a", phase: Infrastructure, j: j, stopErr: e1},
		&fake{name: "b", phase: ControlPlane, j: j, stopErr: e2},
		&fake{name: "c", phase: Controller, j: j},
	); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	err := r.Stop(context.Background())
	if !errors.Is(err, e1) || !errors.Is(err, e2) {
		t.Fatalf("Stop = %v, want both e1 and e2", err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if index(j.list(), "stop "+n) < 0 {
			t.Errorf("%s not stopped", n)
		}
	}
}

func TestAddRejects(t *testing.T) {
	r := NewSequence(quiet())
	j := &journal{}
	if err := r.Add(&fake{name: "x", phase: Infrastructure, j: j}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    []Component
	}{
		{"duplicate", []Component{&fake{name: "x", phase: Addons, j: j}}},
		{"duplicate within call", []Component{&fake{name: "y", phase: Addons, j: j}, &fake{name: "y", phase: Addons, j: j}}},
		{"unknown phase", []Component{&fake{name: "z", phase: Phase(42), j: j}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.Add(tt.c...); err == nil {
				t.Fatal("Add accepted it")
			}
			if got := len(r.Components(Addons)) + len(r.Components(Phase(42))); got != 0 {
				t.Errorf("a rejected Add registered %d components", got)
			}
		})
	}
}

type recorder struct {
	mu      sync.Mutex
	phases  []string
	timings []Timing
}

func (o *recorder) PhaseStarted(p Phase) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.phases = append(o.phases, "start "+p.String())
}
func (o *recorder) PhaseDone(p Phase, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.phases = append(o.phases, "done "+p.String())
}
func (o *recorder) ComponentDone(t Timing) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.timings = append(o.timings, t)
}

func TestObserverSeesPhasesAndTimings(t *testing.T) {
	j := &journal{}
	r := NewSequence(quiet())
	if err := r.Add(&fake{name: "etcd", phase: Infrastructure, j: j}, &fake{name: "dns", phase: Addons, j: j}); err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	if err := r.Start(context.Background(), obs); err != nil {
		t.Fatal(err)
	}
	want := []string{"start Infrastructure", "done Infrastructure", "start Addons", "done Addons"}
	if !slices.Equal(obs.phases, want) {
		t.Errorf("phases = %v, want %v", obs.phases, want)
	}
	if len(obs.timings) != 2 || obs.timings[0].Name != "etcd" || obs.timings[0].Ready.Before(obs.timings[0].Started) {
		t.Errorf("timings = %+v", obs.timings)
	}
}

func TestNeeds(t *testing.T) {
	j := &journal{}
	r := NewSequence(quiet())
	kubelet := &fake{name: "kubelet", phase: NodeAgent, j: j, began: make(chan struct{}), needs: []string{"apiserver", "containerd"}}
	// The scheduler is ready only once the kubelet began: with the default
	// needs (every earlier phase), the kubelet would wait for it forever.
	scheduler := &fake{name: "scheduler", phase: Controller, j: j, waitFor: []*fake{kubelet}}
	sandbox := &fake{name: "sandbox", phase: Infrastructure, j: j}
	containerd := &fake{name: "containerd", phase: Infrastructure, j: j, needs: []string{"sandbox"}}
	if err := r.Add(
		&fake{name: "etcd", phase: Infrastructure, j: j},
		sandbox, needer{containerd},
		&fake{name: "apiserver", phase: ControlPlane, j: j},
		scheduler, needer{kubelet},
		&fake{name: "coredns", phase: Addons, j: j},
	); err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Start(ctx, obs); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ev := j.list()
	before := func(a, b string) {
		t.Helper()
		if ia, ib := index(ev, a), index(ev, b); ia < 0 || ib < 0 || ia > ib {
			t.Errorf("%q not before %q: %v", a, b, ev)
		}
	}
	before("start sandbox", "start containerd")
	before("start apiserver", "start kubelet")
	before("start kubelet", "start coredns")   // default needs: every earlier phase
	before("start scheduler", "start coredns") // …the scheduler too
	before("stop coredns", "stop kubelet")
	before("stop kubelet", "stop containerd")
	before("stop containerd", "stop sandbox") // same phase, in need order
	before("stop apiserver", "stop etcd")
	for _, tm := range obs.timings {
		if tm.Name == "kubelet" && !slices.Equal(tm.Needs, []string{"apiserver", "containerd"}) {
			t.Errorf("kubelet timing needs %v", tm.Needs)
		}
		if tm.Name == "apiserver" && !slices.Equal(tm.Needs, []string{"containerd", "etcd", "sandbox"}) {
			t.Errorf("apiserver timing needs %v, want every Infrastructure component", tm.Needs)
		}
	}
}

func TestNeedsRejected(t *testing.T) {
	tests := []struct {
		name string
		cs   func(j *journal) []Component
		want string
	}{
		{"unknown", func(j *journal) []Component {
			return []Component{needer{&fake{name: "a", phase: Controller, j: j, needs: []string{"nope"}}}}
		}, "a needs nope, which is not registered"},
		{"later phase", func(j *journal) []Component {
			return []Component{
				needer{&fake{name: "a", phase: ControlPlane, j: j, needs: []string{"b"}}},
				&fake{name: "b", phase: NodeAgent, j: j},
			}
		}, "a (phase ControlPlane) needs b of the later phase NodeAgent"},
		{"cycle", func(j *journal) []Component {
			return []Component{
				needer{&fake{name: "a", phase: Infrastructure, j: j, needs: []string{"b"}}},
				needer{&fake{name: "b", phase: Infrastructure, j: j, needs: []string{"a"}}},
			}
		}, "cycle: a -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			r := NewSequence(quiet())
			if err := r.Add(tt.cs(j)...); err != nil {
				t.Fatal(err)
			}
			err := r.Start(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v, want an error containing %q", err, tt.want)
			}
			if ev := j.list(); len(ev) != 0 {
				t.Errorf("components started despite bad needs: %v", ev)
			}
		})
	}
}
