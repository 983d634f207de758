package e2e

import (
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The package's parallel tests start through slots rather than only Go's
// -parallel: Go starts them, once the sequential tests are done, in an
// order of its own, and a long test (TestDownLeavesNothing's twenty ups)
// started last leaves the run ending with it alone on an idle machine.
// With slots the longest tests (weight) start first. The Makefile runs
// `go test -parallel` high and sets KUBERNIX_E2E_PARALLEL, the number of
// the tests' clusters that run at once (on 2 cores 3: with a fourth, each
// cluster slows more than the fourth adds).

// Weights of the tests that slots starts before the others.
const (
	weightDefault = 0
	weightLong    = 10  // several ups or a long wait: images, cycles of one cluster
	weightLongest = 100 // TestDownLeavesNothing's ten cycles, TestImages
)

// slotsSettle is how long slots waits, after a test asked for a slot,
// for more to ask before it hands out one: when the sequential tests are
// done, Go lets every parallel one go at once, and they ask within
// milliseconds of each other.
const slotsSettle = 100 * time.Millisecond

// slots is the package's scheduler of parallel tests.
var slots = newScheduler(parallelClusters())

// parallelClusters is KUBERNIX_E2E_PARALLEL, the number of parallel tests
// that run at once; 3 when it is unset or not a positive number.
func parallelClusters() int {
	if n, err := strconv.Atoi(os.Getenv("KUBERNIX_E2E_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 3
}

// scheduler hands out a fixed number of slots to the tests that ask, the
// highest weight first, the first to ask first among equal weights.
type scheduler struct {
	mu       sync.Mutex
	free     int
	waiting  []*slotWait
	lastAsk  time.Time
	dispatch *time.Timer // pending hand-out, nil when none
	asked    int         // how many waits began, for their order
}

// slotWait is a test waiting for a slot; ready is closed when it has one.
type slotWait struct {
	weight int
	seq    int
	ready  chan struct{}
}

func newScheduler(n int) *scheduler {
	return &scheduler{free: n}
}

// acquire blocks t until it holds a slot, which it gives back when it
// ends (t.Cleanup). Each test asks once, right after t.Parallel (which
// panics when called twice), through parallelAt, sharedCluster or
// rootlessParallel.
func (s *scheduler) acquire(t *testing.T, weight int) {
	t.Helper()
	asked := time.Now()
	release := s.wait(weight)
	t.Logf("kubernix-e2e: slot after %s", time.Since(asked).Round(time.Second))
	t.Cleanup(release)
}

// wait blocks until the caller holds a slot and returns what gives it
// back (once).
func (s *scheduler) wait(weight int) (release func()) {
	s.mu.Lock()
	s.asked++
	w := &slotWait{weight: weight, seq: s.asked, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.lastAsk = time.Now()
	s.schedule()
	s.mu.Unlock()
	<-w.ready
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.free++
		s.schedule()
	})
}

// schedule arranges for the waiting tests to get the free slots once no
// test has asked for slotsSettle. s.mu is held.
func (s *scheduler) schedule() {
	if s.dispatch != nil || s.free == 0 || len(s.waiting) == 0 {
		return
	}
	s.dispatch = time.AfterFunc(time.Until(s.lastAsk.Add(slotsSettle)), s.handOut)
}

// handOut gives the free slots to the waiting tests of highest weight,
// or waits on if one asked within slotsSettle.
func (s *scheduler) handOut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatch = nil
	if wait := time.Until(s.lastAsk.Add(slotsSettle)); wait > 0 {
		s.dispatch = time.AfterFunc(wait, s.handOut)
		return
	}
	slices.SortStableFunc(s.waiting, func(a, b *slotWait) int {
		if a.weight != b.weight {
			return b.weight - a.weight
		}
		return a.seq - b.seq
	})
	for s.free > 0 && len(s.waiting) > 0 {
		s.free--
		close(s.waiting[0].ready)
		s.waiting = s.waiting[1:]
	}
}
