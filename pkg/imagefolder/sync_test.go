package imagefolder

import (
	"strings"
	"testing"
	"time"

	"github.com/kubernix/kubernix/pkg/components/containerd"
)

// TestSyncNode covers what a (re)starting node gets: what it lacks, and
// nothing it has.
func TestSyncNode(t *testing.T) {
	tests := []struct {
		name string
		// before prepares the folder, the record (through a first sync of
		// both nodes) and the runtime.
		before func(fx *fixture, f *Folder)
		// wantImports is how many more imports of app.tar the sync of n0
		// makes.
		wantImports int
		wantErr     string
	}{
		{name: "recorded and present: nothing", before: func(*fixture, *Folder) {}, wantImports: 0},
		{
			name: "changed while the node was down",
			before: func(fx *fixture, f *Folder) {
				fx.write("app.tar", "example.test/app:1 sha256:v2\n", time.Now().Add(-time.Minute))
			},
			wantImports: 1,
		},
		{
			name: "recorded but gone from containerd (its state was wiped)",
			before: func(fx *fixture, f *Folder) {
				fx.rt.mu.Lock()
				delete(fx.rt.stores[fx.nodes[0].Socket], "example.test/app:1")
				fx.rt.mu.Unlock()
			},
			wantImports: 1,
		},
		{
			name: "a corrupt new file fails alone",
			before: func(fx *fixture, f *Folder) {
				fx.write("bad.tar", "corrupt", time.Time{})
			},
			wantImports: 0,
			wantErr:     "bad.tar",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.write("app.tar", "example.test/app:1 sha256:v1\n", time.Time{})
			f := fx.folder(Options{})
			defer f.queue.ShutDown()
			for _, nd := range fx.nodes {
				if err := f.SyncNode(t.Context(), nd.Name); err != nil {
					t.Fatal(err)
				}
			}
			if n := fx.rt.importCount("app.tar"); n != 2 {
				t.Fatalf("first syncs imported %d times, want 2", n)
			}
			tt.before(fx, f)
			err := f.SyncNode(t.Context(), "n0")
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("SyncNode error %v, want one naming %s", err, tt.wantErr)
			}
			if n := fx.rt.importCount("app.tar") - 2; n != tt.wantImports {
				t.Errorf("sync of n0 imported app.tar %d times, want %d", n, tt.wantImports)
			}
			if tt.wantErr != "" && f.limiter.NumRequeues("bad.tar") == 0 {
				t.Error("failed file not queued for retry")
			}
		})
	}
}

// TestSyncNodeReleasesRemoved: a file removed while the node was down is
// released when it starts again.
func TestSyncNodeReleasesRemoved(t *testing.T) {
	fx := newFixture(t)
	fx.write("app.tar", "example.test/app:1 sha256:v1\n", time.Time{})
	f := fx.folder(Options{})
	defer f.queue.ShutDown()
	for _, nd := range fx.nodes {
		if err := f.SyncNode(t.Context(), nd.Name); err != nil {
			t.Fatal(err)
		}
	}
	fx.remove("app.tar")
	for _, nd := range fx.nodes {
		if err := f.SyncNode(t.Context(), nd.Name); err != nil {
			t.Fatal(err)
		}
	}
	fx.wantImage("example.test/app:1", "sha256:v1", "")
	if len(f.Record().Files) != 0 {
		t.Errorf("record keeps %v", f.Record().Files)
	}
}

// TestSyncNodeWaitsForSettle: a file being written when the node starts
// is imported once it settled, not before.
func TestSyncNodeWaitsForSettle(t *testing.T) {
	fx := newFixture(t)
	fx.write("app.tar", "example.test/app:1 sha256:v1\n", time.Now())
	f := fx.folder(Options{Settle: 200 * time.Millisecond})
	defer f.queue.ShutDown()
	begin := time.Now()
	if err := f.SyncNode(t.Context(), "n0"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 200*time.Millisecond {
		t.Errorf("sync took %v: did not wait for the file to settle", took)
	}
	if n := fx.rt.importCount("app.tar"); n != 1 {
		t.Errorf("imports %d, want 1", n)
	}
}

// TestSyncNodeDown: an unreachable node is an error, naming the node.
func TestSyncNodeDown(t *testing.T) {
	fx := newFixture(t)
	fx.write("app.tar", "example.test/app:1 sha256:v1\n", time.Time{})
	fx.rt.setDown(fx.nodes[1].Socket, true)
	f := fx.folder(Options{})
	defer f.queue.ShutDown()
	err := f.SyncNode(t.Context(), "n1")
	if err == nil || !strings.Contains(err.Error(), "n1") {
		t.Errorf("SyncNode of a down node: %v, want an error naming n1", err)
	}
	if err := f.SyncNode(t.Context(), "nope"); err == nil {
		t.Error("SyncNode of an unknown node succeeded")
	}
}

// TestReleaseUnrecorded: an image labelled with a file of the folder that
// the record lacks (the supervisor was killed between the import and the
// record's write) is released once the file is gone, by SyncNode and by
// the removal of the file alike.
func TestReleaseUnrecorded(t *testing.T) {
	fx := newFixture(t)
	f := fx.folder(Options{})
	defer f.queue.ShutDown()
	labels := map[string]string{"io.cri-containerd.pinned": "pinned", "io.kubernix.source": SourceLabel("lost.tar")}
	for _, nd := range fx.nodes {
		fx.rt.mu.Lock()
		s, _ := fx.rt.store(nd.Socket)
		s["example.test/lost:1"] = containerd.ImportedImage{Ref: "example.test/lost:1", Digest: "sha256:l", Labels: labels}
		fx.rt.mu.Unlock()
	}
	if err := f.SyncNode(t.Context(), "n0"); err != nil {
		t.Fatal(err)
	}
	if img, _ := fx.rt.image(fx.nodes[0].Socket, "example.test/lost:1"); len(img.Labels) != 0 {
		t.Errorf("SyncNode left the labels %v", img.Labels)
	}
	if _, err := f.process(t.Context(), "lost.tar"); err != nil {
		t.Fatal(err)
	}
	fx.wantImage("example.test/lost:1", "sha256:l", "")
}
