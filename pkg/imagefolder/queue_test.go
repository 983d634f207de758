package imagefolder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestSettled(t *testing.T) {
	const settle = time.Second
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v1 := FileState{Size: 10, ModTime: now.Add(-100 * time.Millisecond)}
	v2 := FileState{Size: 20, ModTime: now.Add(-50 * time.Millisecond)}
	old := FileState{Size: 10, ModTime: now.Add(-time.Hour)}
	future := FileState{Size: 10, ModTime: now.Add(time.Hour)}
	tests := []struct {
		name     string
		cur      FileState
		prev     observation
		seen     bool
		wantWait time.Duration
		wantObs  observation
	}{
		{"first sight, long unmodified: import now", old, observation{}, false, 0, observation{old, now}},
		{"first sight, just modified: look again after settle", v1, observation{}, false, settle, observation{v1, now}},
		{"first sight, mtime in the future: by observation only", future, observation{}, false, settle, observation{future, now}},
		{"changed since last look: settle again from now", v2, observation{v1, now.Add(-2 * time.Second)}, true, settle, observation{v2, now}},
		{"unchanged, not long enough: the rest of settle", v1, observation{v1, now.Add(-300 * time.Millisecond)}, true, 700 * time.Millisecond, observation{v1, now.Add(-300 * time.Millisecond)}},
		{"unchanged for settle: import now", v1, observation{v1, now.Add(-settle)}, true, 0, observation{v1, now.Add(-settle)}},
		{"future mtime unchanged for settle: import now", future, observation{future, now.Add(-2 * settle)}, true, 0, observation{future, now.Add(-2 * settle)}},
		{"same size, new mtime: changed", FileState{Size: 10, ModTime: v1.ModTime.Add(time.Millisecond)}, observation{v1, now.Add(-time.Minute)}, true, settle,
			observation{FileState{Size: 10, ModTime: v1.ModTime.Add(time.Millisecond)}, now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, obs := settled(tt.cur, tt.prev, tt.seen, now, settle)
			if wait != tt.wantWait {
				t.Errorf("wait = %v, want %v", wait, tt.wantWait)
			}
			if !obs.state.Equal(tt.wantObs.state) || !obs.at.Equal(tt.wantObs.at) {
				t.Errorf("observation = %+v, want %+v", obs, tt.wantObs)
			}
		})
	}
}

// queueFixture drives a Folder's queue by hand on a fake clock: events are
// AddAfter calls as the watch loop makes them, and work is processNext.
type queueFixture struct {
	*fixture
	f     *Folder
	clock *testingclock.FakeClock
	ctx   context.Context
}

func newQueueFixture(t *testing.T) *queueFixture {
	fx := newFixture(t)
	clk := testingclock.NewFakeClock(time.Now())
	f := fx.folder(Options{Clock: clk, Settle: time.Second, RetryBase: time.Second, RetryMax: time.Minute})
	t.Cleanup(f.queue.ShutDown)
	return &queueFixture{fixture: fx, f: f, clock: clk, ctx: t.Context()}
}

// event is what the watch loop does for an event on file.
func (q *queueFixture) event(file string) { q.f.queue.AddAfter(file, q.f.settle) }

// writeNow writes file with the fake clock's time as mtime, and its event.
func (q *queueFixture) writeNow(file, content string) {
	q.write(file, content, q.clock.Now())
	q.event(file)
}

// step advances the fake clock by d and waits until the queue holds want
// keys (the delaying queue moves due keys over in its own goroutine).
func (q *queueFixture) step(d time.Duration, want int) {
	q.t.Helper()
	// AddAfter hands keys to the queue's goroutine through a channel: let
	// it take them at the current time first.
	time.Sleep(10 * time.Millisecond)
	q.clock.Step(d)
	deadline := time.Now().Add(2 * time.Second)
	for q.f.queue.Len() != want {
		if time.Now().After(deadline) {
			q.t.Fatalf("after %v: queue holds %d keys, want %d", d, q.f.queue.Len(), want)
		}
		time.Sleep(time.Millisecond)
	}
	// Let a due key that is not yet over settle in.
	time.Sleep(5 * time.Millisecond)
	if n := q.f.queue.Len(); n != want {
		q.t.Fatalf("after %v: queue holds %d keys, want %d", d, n, want)
	}
}

// work processes the queued keys.
func (q *queueFixture) work() {
	q.t.Helper()
	for q.f.queue.Len() > 0 {
		q.f.processNext(q.ctx)
	}
}

// TestQueueCollapsesEvents: a burst of events for one file is one key and
// one import; events for two files are two keys.
func TestQueueCollapsesEvents(t *testing.T) {
	q := newQueueFixture(t)
	q.write("a.tar", "example.test/a:1 sha256:a1\n", time.Time{})
	q.write("b.tar", "example.test/b:1 sha256:b1\n", time.Time{})
	for range 50 {
		q.event("a.tar")
	}
	q.event("b.tar")
	q.step(500*time.Millisecond, 0)
	q.event("a.tar") // later events do not postpone the key
	q.step(500*time.Millisecond, 2)
	q.work()
	if n := q.rt.importCount("a.tar"); n != 2 { // once per node
		t.Errorf("a.tar imported %d times, want 2 (one per node)", n)
	}
	if n := q.rt.importCount("b.tar"); n != 2 {
		t.Errorf("b.tar imported %d times, want 2", n)
	}
	q.wantImage("example.test/a:1", "sha256:a1", "a.tar")
	q.clock.Step(time.Minute)
	time.Sleep(10 * time.Millisecond)
	q.work()
	if n := q.rt.importCount("a.tar"); n != 2 {
		t.Errorf("a.tar imported %d times after all events, want 2", n)
	}
}

// TestQueueSettlesSlowWrite: a file written in chunks, each before the
// last one settled, is imported once, after the last chunk settled.
func TestQueueSettlesSlowWrite(t *testing.T) {
	q := newQueueFixture(t)
	var content strings.Builder
	chunk := func(i int) {
		fmt.Fprintf(&content, "example.test/slow%d:1 sha256:%d\n", i, i)
		q.writeNow("slow.tar", content.String())
	}
	chunk(0)
	for i := 1; i < 6; i++ {
		// Every 600 ms a chunk: the key comes due every second and finds
		// the file changed each time.
		q.clock.Step(600 * time.Millisecond)
		chunk(i)
		time.Sleep(5 * time.Millisecond)
		q.work()
		if n := q.rt.importCount("slow.tar"); n != 0 {
			t.Fatalf("imported after chunk %d, while still written", i)
		}
	}
	q.step(time.Second, 1) // the file changed at the last look: once more
	q.work()
	if n := q.rt.importCount("slow.tar"); n != 0 {
		t.Fatalf("imported before it was seen unchanged for the settle period")
	}
	q.step(time.Second, 1)
	q.work()
	if n := q.rt.importCount("slow.tar"); n != 2 {
		t.Fatalf("slow.tar imported %d times, want once per node (2)", n)
	}
	q.wantImage("example.test/slow5:1", "sha256:5", "slow.tar")
	if ni := q.f.Record().get("slow.tar", "n0"); ni == nil || ni.Imports != 1 || len(ni.Images) != 6 {
		t.Errorf("record %+v, want 1 import of 6 images", ni)
	}
	q.clock.Step(time.Minute)
	time.Sleep(10 * time.Millisecond)
	q.work()
	if n := q.rt.importCount("slow.tar"); n != 2 {
		t.Fatalf("slow.tar imported %d times in the end, want 2", n)
	}
}

// TestQueueRetriesWithBackoff: a failing import is retried after 1 s, 2 s,
// ... and the limiter forgets the file once it succeeds.
func TestQueueRetriesWithBackoff(t *testing.T) {
	q := newQueueFixture(t)
	q.write("app.tar", "example.test/app:1 sha256:1\n", time.Time{})
	q.rt.failNext = 3 // both nodes fail, then one of them again
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	if got := q.f.limiter.NumRequeues("app.tar"); got != 1 {
		t.Fatalf("requeues after the first failure: %d, want 1", got)
	}
	q.step(999*time.Millisecond, 0)
	q.step(time.Millisecond, 1)
	q.work() // one node fails again
	if got := q.f.limiter.NumRequeues("app.tar"); got != 2 {
		t.Fatalf("requeues after the second failure: %d, want 2", got)
	}
	q.step(1999*time.Millisecond, 0)
	q.step(time.Millisecond, 1)
	q.work()
	if got := q.f.limiter.NumRequeues("app.tar"); got != 0 {
		t.Errorf("limiter still tracks the file after success: %d", got)
	}
	q.wantImage("example.test/app:1", "sha256:1", "app.tar")
	if n := q.rt.importCount("app.tar"); n != 2 {
		t.Errorf("successful imports %d, want one per node", n)
	}
}

// TestQueueChangeAndRemove: a changed file is imported again; the images
// the new version no longer has are unpinned; removing the file unpins the
// rest, except images another file provides.
func TestQueueChangeAndRemove(t *testing.T) {
	q := newQueueFixture(t)
	q.write("app.tar", "example.test/app:1 sha256:v1\nexample.test/extra:1 sha256:e\nexample.test/shared:1 sha256:s\n", time.Time{})
	q.write("other.tar", "example.test/shared:1 sha256:s\n", time.Time{})
	q.event("other.tar")
	q.step(time.Second, 1)
	q.work()
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	q.wantImage("example.test/app:1", "sha256:v1", "app.tar")
	q.wantImage("example.test/shared:1", "sha256:s", "app.tar")

	// New version: app changes digest, extra is gone.
	q.clock.Step(time.Minute)
	q.write("app.tar", "example.test/app:1 sha256:v2\nexample.test/shared:1 sha256:s\n", q.clock.Now().Add(-time.Hour))
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	q.wantImage("example.test/app:1", "sha256:v2", "app.tar")
	q.wantImage("example.test/extra:1", "sha256:e", "")
	if ni := q.f.Record().get("app.tar", "n1"); ni.Imports != 2 {
		t.Errorf("imports of app.tar on n1: %d, want 2", ni.Imports)
	}

	q.remove("app.tar")
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	q.wantImage("example.test/app:1", "sha256:v2", "")
	q.wantImage("example.test/shared:1", "sha256:s", "other.tar") // still provided
	if _, ok := q.f.Record().Files["app.tar"]; ok {
		t.Error("removed file still recorded")
	}
	// The record on disk says the same.
	r, err := LoadRecord(q.rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Files["app.tar"]; ok || r.get("other.tar", "n0") == nil {
		t.Errorf("saved record: %+v", r.Files)
	}
}

// TestQueueLeavesOthersImages: removing a file does not unpin an image
// whose source is now something else (a later `kubernix image load`).
func TestQueueLeavesOthersImages(t *testing.T) {
	q := newQueueFixture(t)
	q.write("app.tar", "example.test/app:1 sha256:v1\n", time.Time{})
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	for _, nd := range q.nodes {
		if err := q.rt.SetLabels(q.ctx, nd.Socket, "example.test/app:1", map[string]string{"io.kubernix.source": "load:/tmp/app.tar"}); err != nil {
			t.Fatal(err)
		}
	}
	q.remove("app.tar")
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	for _, nd := range q.nodes {
		img, _ := q.rt.image(nd.Socket, "example.test/app:1")
		if img.Labels["io.cri-containerd.pinned"] != "pinned" || img.Labels["io.kubernix.source"] != "load:/tmp/app.tar" {
			t.Errorf("node %s: labels %v changed by the removal of a file that no longer owned the image", nd.Name, img.Labels)
		}
	}
}

// TestQueueList: a .txt list is pulled on every node; a bad line fails
// the file with its line number, and a fixed list is pulled.
func TestQueueList(t *testing.T) {
	q := newQueueFixture(t)
	q.rt.registry["registry.example.test/app:1"] = "sha256:r1"
	q.rt.registry["docker.io/library/busybox:latest"] = "sha256:bb"
	q.write("list.txt", "# images\nregistry.example.test/app:1\n\nbusybox  # short name\nBad:Ref\n", time.Time{})
	q.event("list.txt")
	q.step(time.Second, 1)
	q.work()
	if n := q.f.limiter.NumRequeues("list.txt"); n != 1 {
		t.Errorf("bad list not queued for retry (requeues %d)", n)
	}
	q.write("list.txt", "# images\nregistry.example.test/app:1\n\nbusybox  # short name\n", time.Time{})
	q.event("list.txt")
	q.step(time.Second, 1)
	q.work()
	q.wantImage("registry.example.test/app:1", "sha256:r1", "list.txt")
	q.wantImage("docker.io/library/busybox:latest", "sha256:bb", "list.txt")

	// An image already present (from a tarball) is not pulled: it needs no
	// registry.
	q.write("local.tar", "example.test/local:1 sha256:l\n", time.Time{})
	q.event("local.tar")
	q.step(time.Second, 1)
	q.work()
	q.write("local.txt", "example.test/local:1\n", time.Time{})
	q.event("local.txt")
	q.step(time.Second, 1)
	q.work()
	q.wantImage("example.test/local:1", "sha256:l", "local.txt")
	if n := q.rt.pulls["example.test/local:1"]; n != 0 {
		t.Errorf("a present image was pulled %d times", n)
	}
	if n := q.rt.pulls["registry.example.test/app:1"]; n != 2 {
		t.Errorf("app pulled %d times, want once per node", n)
	}
}

// TestQueueIgnoresUnchanged: a recorded, unchanged file costs no import,
// also with a new Folder (a restart) reading the record.
func TestQueueIgnoresUnchanged(t *testing.T) {
	q := newQueueFixture(t)
	q.write("app.tar", "example.test/app:1 sha256:v1\n", time.Time{})
	q.event("app.tar")
	q.step(time.Second, 1)
	q.work()
	f2 := q.fixture.folder(Options{Clock: q.clock})
	defer f2.queue.ShutDown()
	if _, err := f2.process(q.ctx, "app.tar"); err != nil {
		t.Fatal(err)
	}
	if n := q.rt.importCount("app.tar"); n != 2 {
		t.Errorf("imports %d, want 2 (once per node, not again after the restart)", n)
	}
	// Touching the file makes it another version.
	later := q.clock.Now().Add(-30 * time.Minute)
	if err := os.Chtimes(filepath.Join(q.dir, "app.tar"), later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.process(q.ctx, "app.tar"); err != nil {
		t.Fatal(err)
	}
	if n := q.rt.importCount("app.tar"); n != 4 {
		t.Errorf("imports %d, want 4 after the mtime changed", n)
	}
}
