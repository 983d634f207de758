package e2e

import (
	"runtime"
	"slices"
	"sync"
	"testing"
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
			holder := s.wait(weightDefault)
			var (
				mu   sync.Mutex
				got  []int
				done sync.WaitGroup
			)
			for i, w := range tt.weights {
				done.Add(1)
				go func() {
					defer done.Done()
					release := s.wait(w)
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
			release := s.wait(i % 3 * weightLong)
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
