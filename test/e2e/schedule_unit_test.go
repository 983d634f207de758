package e2e

import (
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSchedulerOrder checks the order in which a scheduler of one slot
// hands it out: the highest weight first, then the first to ask.
func TestSchedulerOrder(t *testing.T) {
	tests := []struct {
		name    string
		weights []int // in the order the tests ask
		want    []int // indexes of weights, in the order they get the slot
	}{
		{"equal weights: first come, first served", []int{0, 0, 0}, []int{0, 1, 2}},
		{"the longest first", []int{weightDefault, weightLong, weightLongest, weightDefault}, []int{2, 1, 0, 3}},
		{"long tests asking last", []int{0, 0, 0, weightLong, weightLongest, weightLong}, []int{4, 3, 5, 0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(1)
			// The slot is held until every test asked, so the order is
			// the scheduler's, not the goroutines'.
			holder := s.wait(weightDefault, kindRoot)
			var (
				mu   sync.Mutex
				got  []int
				done sync.WaitGroup
			)
			for i, w := range tt.weights {
				done.Add(1)
				go func() {
					defer done.Done()
					release := s.wait(w, kindRoot)
					mu.Lock()
					got = append(got, i)
					mu.Unlock()
					release()
				}()
				waitAsked(s, i+2) // ask in order: the holder, then 0, 1, ...
			}
			holder()
			done.Wait()
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSchedulerLimit checks that no more tests hold a slot at once than
// the scheduler has, and that every one gets a slot.
func TestSchedulerLimit(t *testing.T) {
	const slotCount, tests = 3, 20
	s := newScheduler(slotCount)
	var (
		mu            sync.Mutex
		running, most int
		done          sync.WaitGroup
	)
	for i := range tests {
		done.Add(1)
		go func() {
			defer done.Done()
			release := s.wait(i%3*weightLong, kindRoot)
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			runtime.Gosched()
			mu.Lock()
			running--
			mu.Unlock()
			release()
			release() // twice gives back one slot
		}()
	}
	done.Wait()
	if most > slotCount {
		t.Errorf("%d tests held a slot at once, want at most %d", most, slotCount)
	}
	if s.free != slotCount || len(s.waiting) != 0 {
		t.Errorf("after all: %d free slots and %d waiting, want %d and 0", s.free, len(s.waiting), slotCount)
	}
}

// waitAsked returns once n waits began on s.
func waitAsked(s *scheduler, n int) {
	for {
		s.mu.Lock()
		asked := s.asked
		s.mu.Unlock()
		if asked >= n {
			return
		}
		runtime.Gosched()
	}
}

// nextReady is the name of the next test to get a slot, sent on ready; a
// scheduler that never lets one run fails t here rather than hanging the
// package.
func nextReady(t *testing.T, ready <-chan string) string {
	t.Helper()
	select {
	case name := <-ready:
		return name
	case <-time.After(30 * time.Second):
		t.Fatal("no test got a slot")
		return ""
	}
}

// TestSchedulerGroup checks the slot of a shared cluster's tests: its
// members hold one slot together (all at once, while a test of its own
// waits for the slot), a member asking while the group runs joins it
// without waiting, and only the last member to end gives the slot back
// and is told so (it brings the cluster down).
func TestSchedulerGroup(t *testing.T) {
	s := newScheduler(1)
	holder := s.wait(weightDefault, kindRoot) // everyone asks before the hand-out
	ready := make(chan string, 4)
	releases := map[string]func() bool{}
	var mu sync.Mutex
	ask := func(name, group string, n int) {
		go func() {
			r := s.waitGroup(weightDefault, group, kindRoot)
			mu.Lock()
			releases[name] = r
			mu.Unlock()
			ready <- name
		}()
		waitAsked(s, n)
	}
	ask("a", "g", 2)
	ask("own", "", 3)
	ask("b", "g", 4)
	holder()
	next := func() string { t.Helper(); return nextReady(t, ready) }
	got := []string{next(), next()}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first to run: %v, want the group's a and b together", got)
	}
	ask("c", "g", 4) // joins the running group: no new wait
	if name := next(); name != "c" {
		t.Fatalf("%s ran, want c to join the group", name)
	}
	mu.Lock()
	release := maps.Clone(releases) // own's goroutine writes releases later
	mu.Unlock()
	for _, name := range []string{"a", "c"} {
		if last := release[name](); last {
			t.Errorf("%s's release reported the last member, while b runs", name)
		}
	}
	select {
	case name := <-ready:
		t.Fatalf("%s ran while the group held the slot", name)
	default:
	}
	if last := release["b"](); !last {
		t.Error("b's release, the group's last, did not report it")
	}
	if last := release["b"](); last {
		t.Error("a second release of b reported the last member again")
	}
	if name := next(); name != "own" {
		t.Fatalf("%s ran, want the test of its own once the group ended", name)
	}
	if s.running["g"] != 0 || s.free != 0 {
		t.Errorf("group g: %d running, %d free slots; want 0 and 0 (own holds it)", s.running["g"], s.free)
	}
}

// TestSchedulerHostAlone checks the kinds of test: a hostAlone test
// waits until no root test runs, no root test starts while one waits or
// runs, and rootless tests run beside either.
func TestSchedulerHostAlone(t *testing.T) {
	s := newScheduler(2)
	holder := s.wait(weightDefault, kindRoot)
	ready := make(chan string, 4)
	var mu sync.Mutex
	releases := map[string]func(){}
	ask := func(name string, k kind, n int) {
		go func() {
			r := s.wait(weightDefault, k)
			mu.Lock()
			releases[name] = r
			mu.Unlock()
			ready <- name
		}()
		waitAsked(s, n)
	}
	next := func() string { t.Helper(); return nextReady(t, ready) }
	none := func(when string) {
		t.Helper()
		select {
		case name := <-ready:
			t.Fatalf("%s: %s got a slot", when, name)
		case <-time.After(3 * slotsSettle):
		}
	}
	release := func(name string) {
		mu.Lock()
		r := releases[name]
		mu.Unlock()
		r()
	}
	ask("alone", kindHostAlone, 2)
	ask("root", kindRoot, 3)
	ask("rootless", kindRootless, 4)
	if name := next(); name != "rootless" {
		t.Fatalf("%s got the free slot, want the rootless test (a root one runs, a hostAlone one waits)", name)
	}
	release("rootless")
	none("a root test running, a hostAlone one waiting, a slot free")
	holder()
	if name := next(); name != "alone" {
		t.Fatalf("%s got a slot once no root test ran, want the hostAlone one", name)
	}
	ask("rootless2", kindRootless, 5)
	if name := next(); name != "rootless2" {
		t.Fatalf("%s got the slot beside the hostAlone test, want the rootless one", name)
	}
	none("a hostAlone test running")
	release("alone")
	if name := next(); name != "root" {
		t.Fatalf("%s got the slot once the hostAlone test ended, want the root one", name)
	}
	release("rootless2")
	release("root")
	if s.free != 2 || s.roots != 0 || s.alone || len(s.waiting) != 0 {
		t.Errorf("after all: %d free, %d roots, alone %v, %d waiting; want 2, 0, false, 0", s.free, s.roots, s.alone, len(s.waiting))
	}
}
