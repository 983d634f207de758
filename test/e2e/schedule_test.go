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
	// weightHostAlone: the hostAlone tests run first, one after the
	// other, so that the root tests wait for them as little as may be.
	weightHostAlone = 1000
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
	// running counts the members of each group (the tests of one shared
	// cluster) that hold its slot: a group holds one slot while any
	// member runs, and its members run side by side on it.
	running map[string]int
	// roots is how many slots tests of kindRoot hold (a group's one);
	// alone says whether a test of kindHostAlone holds one.
	roots int
	alone bool
}

// kind is what a test's clusters take of the host, which decides what
// may run beside it.
type kind int

const (
	// kindRoot: root clusters, which share the host with one another
	// (each its own names, ranges and ports).
	kindRoot kind = iota
	// kindRootless: rootless clusters, which hold only their user, a
	// delegated cgroup subtree and ports on 127.0.0.1, and no network
	// namespace, link, rule, route or sysctl of the host's: they run
	// beside anything, kindHostAlone tests included.
	kindRootless
	// kindHostAlone: a test that must be the host's only root cluster
	// (hostAlone). It starts when no kindRoot test runs, and while one
	// waits no kindRoot test starts, so that it is not starved.
	kindHostAlone
)

// slotWait is a test waiting for a slot; ready is closed when it has one.
type slotWait struct {
	weight int
	seq    int
	group  string // the shared cluster's name; "" for a test of its own
	kind   kind
	ready  chan struct{}
}

func newScheduler(n int) *scheduler {
	return &scheduler{free: n, running: map[string]int{}}
}

// acquire blocks t, whose clusters are of kind k, until it holds a
// slot, which it gives back when it ends (t.Cleanup). Each test asks
// once, right after t.Parallel (which panics when called twice), through
// parallelAt, sharedCluster, rootlessParallel or hostAlone.
func (s *scheduler) acquire(t *testing.T, weight int, k kind) {
	t.Helper()
	asked := time.Now()
	release := s.wait(weight, k)
	t.Logf("kubernix-e2e: slot after %s", time.Since(asked).Round(time.Second))
	t.Cleanup(release)
}

// acquireShared is acquire for a test of the shared cluster named group:
// the group's tests run side by side on one slot (they add pods to one
// cluster, not clusters), which its first member waits for as acquire
// does. When the last running member ends, the slot goes back and idle
// (which brings the cluster down) runs; its error fails that test.
// The tests of a group all ask at once, when Go starts the parallel
// tests, so the cluster lives about as long as its longest test.
func (s *scheduler) acquireShared(t *testing.T, weight int, group string, k kind, idle func() error) {
	t.Helper()
	asked := time.Now()
	release := s.waitGroup(weight, group, k)
	t.Logf("kubernix-e2e: slot of %s after %s", group, time.Since(asked).Round(time.Second))
	t.Cleanup(func() {
		if last := release(); last {
			if err := idle(); err != nil {
				t.Errorf("shared cluster %s: %v", group, err)
			}
		}
	})
}

// wait blocks until the caller, a test of kind k, holds a slot and
// returns what gives it back (once).
func (s *scheduler) wait(weight int, k kind) (release func()) {
	r := s.waitGroup(weight, "", k)
	return func() { r() }
}

// waitGroup blocks until the caller, of kind k, holds a slot, or, for a
// member of group (not ""), until the group does, and returns what gives
// it back (once): it reports whether it was the group's last running
// member, which gave the group's slot back. A group's members are all of
// one kind.
func (s *scheduler) waitGroup(weight int, group string, k kind) (release func() (last bool)) {
	s.mu.Lock()
	if group != "" && s.running[group] > 0 {
		s.running[group]++
		s.mu.Unlock()
	} else {
		s.asked++
		w := &slotWait{weight: weight, seq: s.asked, group: group, kind: k, ready: make(chan struct{})}
		s.waiting = append(s.waiting, w)
		s.lastAsk = time.Now()
		s.schedule()
		s.mu.Unlock()
		<-w.ready
	}
	var once sync.Once
	return func() (last bool) {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if group != "" {
				s.running[group]--
				if s.running[group] > 0 {
					return
				}
				last = true
			}
			s.hold(k, -1)
			s.schedule()
		})
		return last
	}
}

// schedule arranges for the waiting tests to get the free slots once no
// test has asked for slotsSettle. s.mu is held.
func (s *scheduler) schedule() {
	if s.dispatch != nil || s.free == 0 || len(s.waiting) == 0 {
		return
	}
	s.dispatch = time.AfterFunc(time.Until(s.lastAsk.Add(slotsSettle)), s.handOut)
}

// handOut gives the free slots to the waiting tests of highest weight
// that may start (mayStart), or waits on if one asked within slotsSettle.
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
	for i := 0; s.free > 0 && i < len(s.waiting); {
		w := s.waiting[i]
		if !s.mayStart(w.kind) {
			i++
			continue
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		s.hold(w.kind, +1)
		close(w.ready)
		if w.group == "" {
			continue
		}
		// The group's other waiting members join it on its slot.
		s.running[w.group]++
		s.waiting = slices.DeleteFunc(s.waiting, func(o *slotWait) bool {
			if o.group != w.group {
				return false
			}
			s.running[w.group]++
			close(o.ready)
			return true
		})
		i = 0 // the members may have stood before i
	}
}

// hold counts a slot taken (n = +1) or given back (n = -1) by a test of
// kind k: the free slots, and what mayStart reads. s.mu is held.
func (s *scheduler) hold(k kind, n int) {
	s.free -= n
	switch k {
	case kindRoot:
		s.roots += n
	case kindHostAlone:
		s.alone = n > 0
	}
}

// mayStart says whether a test of kind k may start now, beside the tests
// that hold slots (see kind). s.mu is held.
func (s *scheduler) mayStart(k kind) bool {
	switch k {
	case kindRootless:
		return true
	case kindHostAlone:
		return s.roots == 0 && !s.alone
	}
	return !s.alone && !slices.ContainsFunc(s.waiting, func(w *slotWait) bool { return w.kind == kindHostAlone })
}
