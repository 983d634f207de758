package imagefolder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/components/containerd"
	testingclock "k8s.io/utils/clock/testing"
)

// runFixture is a Folder running over a fixture on a fake clock: only
// within moves the clock, so what the Folder waits for (settling, retries,
// the resync) happens between a test's steps, never during one.
type runFixture struct {
	*fixture
	clock *testingclock.FakeClock
}

// runFolder runs a Folder over fx with short periods until the test ends.
// Its fake clock starts a day before the real one: the files the test
// writes, with real mtimes, are in its future, so they settle by
// observation on the fake clock alone (see settled), however slowly the
// test runs.
func runFolder(t *testing.T, fx *fixture, opts Options) *runFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now().Add(-24 * time.Hour))
	opts.Clock = clk
	opts.Settle = orDefault(opts.Settle, 100*time.Millisecond)
	opts.RetryBase = orDefault(opts.RetryBase, 20*time.Millisecond)
	opts.RetryMax = orDefault(opts.RetryMax, 200*time.Millisecond)
	f := fx.folder(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		f.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return &runFixture{fixture: fx, clock: clk}
}

// withinSteps is how many times within moves the fake clock, by
// withinStep each time, before it gives up: 10 s of the Folder's time,
// many settle and retry periods.
const (
	withinSteps = 500
	withinStep  = 20 * time.Millisecond
)

// within moves the fake clock by withinStep, giving the Folder's
// goroutines a moment of real time after each step, until cond holds; it
// fails the test after withinSteps steps.
func (fx *runFixture) within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range withinSteps {
		if cond() {
			return
		}
		fx.clock.Step(withinStep)
		time.Sleep(5 * time.Millisecond)
	}
	if !cond() {
		t.Fatalf("%s: not within %v of the Folder's time", what, withinSteps*withinStep)
	}
}

// digestOn returns the digest and source label of ref on node i.
func (fx *fixture) digestOn(i int, ref string) (string, string) {
	img, ok := fx.rt.image(fx.nodes[i].Socket, ref)
	if !ok {
		return "", ""
	}
	return img.Digest, img.Labels[containerd.LabelSource]
}

// TestRun drives a running Folder through the file system alone.
func TestRun(t *testing.T) {
	fx := newFixture(t)
	fx.write("early.tar", "example.test/early:1 sha256:e\n", time.Time{})
	rf := runFolder(t, fx, Options{})
	onAll := func(ref, digest string) func() bool {
		return func() bool {
			for i := range fx.nodes {
				if d, _ := fx.digestOn(i, ref); d != digest {
					return false
				}
			}
			return true
		}
	}
	rf.within(t, "a file present at start imported", onAll("example.test/early:1", "sha256:e"))

	t.Run("dropped file imported", func(t *testing.T) {
		tmp := filepath.Join(fx.dir, ".app.tar.partial")
		if err := os.WriteFile(tmp, []byte("example.test/app:1 sha256:v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(fx.dir, "app.tar")); err != nil {
			t.Fatal(err)
		}
		rf.within(t, "app.tar imported", onAll("example.test/app:1", "sha256:v1"))
		fx.wantImage("example.test/app:1", "sha256:v1", "app.tar")
	})

	t.Run("rewritten file imported again", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(fx.dir, "app.tar"), []byte("example.test/app:1 sha256:v2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rf.within(t, "app.tar v2 imported", onAll("example.test/app:1", "sha256:v2"))
	})

	t.Run("slow write imported once", func(t *testing.T) {
		path := filepath.Join(fx.dir, "slow.tar")
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		// 8 chunks 40 ms apart on the Folder's clock, 320 ms in all:
		// each comes before the last has settled (100 ms), and the file
		// is seen changed at every look while it is written, however
		// long a chunk takes in real time.
		for i := range 8 {
			fmt.Fprintf(out, "example.test/slow%d:1 sha256:%d\n", i, i)
			rf.clock.Step(40 * time.Millisecond)
			time.Sleep(5 * time.Millisecond)
			if n := fx.rt.importCount("slow.tar"); n != 0 {
				t.Fatalf("slow.tar imported %d times after chunk %d, while still written", n, i)
			}
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		rf.within(t, "slow.tar imported", onAll("example.test/slow7:1", "sha256:7"))
		for range 20 { // 20 settle periods more: no import again
			rf.clock.Step(100 * time.Millisecond)
			time.Sleep(2 * time.Millisecond)
		}
		if n := fx.rt.importCount("slow.tar"); n != len(fx.nodes) {
			t.Errorf("slow.tar imported %d times, want once per node (%d)", n, len(fx.nodes))
		}
	})

	t.Run("removed file unpinned", func(t *testing.T) {
		fx.remove("app.tar")
		rf.within(t, "app.tar released", func() bool {
			for i := range fx.nodes {
				if _, src := fx.digestOn(i, "example.test/app:1"); src != "" {
					return false
				}
			}
			return true
		})
		fx.wantImage("example.test/app:1", "sha256:v2", "")
	})

	t.Run("failing import retried", func(t *testing.T) {
		fx.rt.mu.Lock()
		fx.rt.failNext = 4
		fx.rt.mu.Unlock()
		fx.write("retry.tar", "example.test/retry:1 sha256:r\n", time.Time{})
		rf.within(t, "retry.tar imported after failures", onAll("example.test/retry:1", "sha256:r"))
	})

	t.Run("corrupt file does not stop the watch", func(t *testing.T) {
		fx.write("bad.tar", "corrupt", time.Time{})
		fx.write("after.tar", "example.test/after:1 sha256:a\n", time.Time{})
		rf.within(t, "after.tar imported", onAll("example.test/after:1", "sha256:a"))
	})

	t.Run("folder removed and created again", func(t *testing.T) {
		if err := os.RemoveAll(fx.dir); err != nil {
			t.Fatal(err)
		}
		rf.within(t, "images of the removed folder released", func() bool {
			_, src := fx.digestOn(0, "example.test/early:1")
			return src == ""
		})
		if err := os.MkdirAll(fx.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fx.write("back.tar", "example.test/back:1 sha256:b\n", time.Time{})
		rf.within(t, "a file in the new folder imported", onAll("example.test/back:1", "sha256:b"))
	})
}

// TestRunCatchesUpOnRestart: changes made while no Folder ran are applied
// when one runs again.
func TestRunCatchesUpOnRestart(t *testing.T) {
	fx := newFixture(t)
	fx.write("keep.tar", "example.test/keep:1 sha256:k\n", time.Time{})
	fx.write("drop.tar", "example.test/drop:1 sha256:d\n", time.Time{})
	for _, nd := range fx.nodes {
		f := fx.folder(Options{})
		if err := f.SyncNode(t.Context(), nd.Name); err != nil {
			t.Fatal(err)
		}
		f.queue.ShutDown()
	}
	fx.remove("drop.tar")
	fx.write("new.tar", "example.test/new:1 sha256:n\n", time.Time{})
	rf := runFolder(t, fx, Options{})
	rf.within(t, "new.tar imported and drop.tar released", func() bool {
		d, _ := fx.digestOn(1, "example.test/new:1")
		_, src := fx.digestOn(1, "example.test/drop:1")
		return d == "sha256:n" && src == ""
	})
	if n := fx.rt.importCount("keep.tar"); n != 2 {
		t.Errorf("unchanged keep.tar imported %d times, want 2 (once per node, before the restart)", n)
	}
}
