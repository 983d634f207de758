package imagefolder

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRecordUpToDate(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	v1 := FileState{Size: 100, ModTime: t0}
	r := newRecord()
	r.set("app.tar", "n0", v1, []Image{{Ref: "example.test/app:v1", Digest: "sha256:1"}}, t0)
	r.set("gone.tar", "n0", v1, nil, t0)
	r.invalidate("gone.tar", "n0")
	tests := []struct {
		name       string
		file, node string
		st         FileState
		want       bool
	}{
		{"same version", "app.tar", "n0", v1, true},
		{"same instant in another zone", "app.tar", "n0", FileState{Size: 100, ModTime: t0.In(time.FixedZone("x", 3600))}, true},
		{"size changed", "app.tar", "n0", FileState{Size: 101, ModTime: t0}, false},
		{"mtime changed", "app.tar", "n0", FileState{Size: 100, ModTime: t0.Add(time.Nanosecond)}, false},
		{"other node", "app.tar", "n1", v1, false},
		{"unknown file", "new.tar", "n0", v1, false},
		{"invalidated", "gone.tar", "n0", v1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.upToDate(tt.file, tt.node, tt.st); got != tt.want {
				t.Errorf("upToDate(%s, %s, %v) = %v, want %v", tt.file, tt.node, tt.st, got, tt.want)
			}
		})
	}
}

func TestRecordImportsCount(t *testing.T) {
	r := newRecord()
	now := time.Now()
	for i, want := range []int{1, 2, 3} {
		ni := r.set("app.tar", "n0", FileState{Size: int64(i)}, nil, now)
		if ni.Imports != want {
			t.Errorf("import %d: Imports = %d, want %d", i, ni.Imports, want)
		}
	}
	r.invalidate("app.tar", "n0")
	if ni := r.set("app.tar", "n0", FileState{Size: 9}, nil, now); ni.Imports != 4 {
		t.Errorf("after invalidate: Imports = %d, want 4 (kept)", ni.Imports)
	}
	r.forget("app.tar", "n0")
	if _, ok := r.Files["app.tar"]; ok {
		t.Error("file kept after its last node was forgotten")
	}
}

func TestRecordProviders(t *testing.T) {
	r := newRecord()
	now := time.Now()
	shared := Image{Ref: "example.test/shared:1", Digest: "sha256:s"}
	r.set("a.tar", "n0", FileState{}, []Image{shared, {Ref: "example.test/a:1"}}, now)
	r.set("b.tar", "n0", FileState{}, []Image{shared}, now)
	r.set("c.txt", "n1", FileState{}, []Image{shared}, now)
	tests := []struct {
		node, ref, except string
		want              []string
	}{
		{"n0", shared.Ref, "a.tar", []string{"b.tar"}},
		{"n0", shared.Ref, "", []string{"a.tar", "b.tar"}},
		{"n0", "example.test/a:1", "a.tar", nil},
		{"n1", shared.Ref, "a.tar", []string{"c.txt"}},
		{"n2", shared.Ref, "", nil},
	}
	for _, tt := range tests {
		if got := r.providers(tt.node, tt.ref, tt.except); !slices.Equal(got, tt.want) {
			t.Errorf("providers(%s, %s, except %s) = %v, want %v", tt.node, tt.ref, tt.except, got, tt.want)
		}
	}
	if got := r.filesOf("n0"); !slices.Equal(got, []string{"a.tar", "b.tar"}) {
		t.Errorf("filesOf(n0) = %v", got)
	}
}

func TestRecordSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "images.json")
	r, err := LoadRecord(path)
	if err != nil || len(r.Files) != 0 {
		t.Fatalf("missing record: %v, %v; want empty", r, err)
	}
	mtime := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.Local)
	r.set("app.tar", "n0", FileState{Size: 42, ModTime: mtime}, []Image{{Ref: "example.test/app:v1", Digest: "sha256:1"}}, mtime)
	if err := r.save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.upToDate("app.tar", "n0", FileState{Size: 42, ModTime: mtime}) {
		t.Errorf("reloaded record lost the version: %+v", got.Files["app.tar"].Nodes["n0"])
	}
	if imgs := got.get("app.tar", "n0").Images; len(imgs) != 1 || imgs[0].Digest != "sha256:1" {
		t.Errorf("reloaded images %v", imgs)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("save left temp files: %v", entries)
	}

	for name, content := range map[string]string{"garbage": "{not json", "future version": `{"version": 99, "files": {}}`} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadRecord(path); err == nil {
				t.Error("LoadRecord accepted it")
			}
		})
	}
}

// TestNewMovesCorruptRecordAside: an unreadable record does not stop the
// folder; it starts empty and keeps the bad file for inspection.
func TestNewMovesCorruptRecordAside(t *testing.T) {
	fx := newFixture(t)
	if err := os.WriteFile(fx.rec, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := fx.folder(Options{})
	if n := len(f.Record().Files); n != 0 {
		t.Errorf("record has %d files, want 0", n)
	}
	if _, err := os.Stat(fx.rec + ".corrupt"); err != nil {
		t.Errorf("corrupt record not kept aside: %v", err)
	}
}
