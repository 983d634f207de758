package bins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeExe(t *testing.T, dir, name, script string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	binDir, exeDir, pathDir := filepath.Join(root, "bin"), filepath.Join(root, "exe"), filepath.Join(root, "path")
	writeExe(t, binDir, "both", "echo bin")
	writeExe(t, exeDir, "both", "echo exe")
	writeExe(t, exeDir, "exeonly", "echo exe")
	writeExe(t, pathDir, "pathonly", "echo path")
	// A file that is not executable is skipped.
	if err := os.WriteFile(filepath.Join(binDir, "noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExe(t, pathDir, "noexec", "echo path")
	f := &Finder{Dirs: []string{binDir, exeDir}, Path: pathDir}
	tests := []struct {
		name, wantDir string
	}{
		{"both", binDir},
		{"exeonly", exeDir},
		{"pathonly", pathDir},
		{"noexec", pathDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Find(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(got) != tt.wantDir {
				t.Errorf("Find(%s) = %s, want it in %s", tt.name, got, tt.wantDir)
			}
		})
	}
	_, err := f.Find("missing")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), binDir) || !strings.Contains(err.Error(), "$PATH") {
		t.Errorf("Find(missing) = %v, want ErrNotFound naming where it looked", err)
	}
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, script, want string
		wantErr            bool
	}{
		{"stdout", "echo 'tool version 1.2.3'", "tool version 1.2.3", false},
		{"stderr only", "echo 'v9' >&2", "v9", false},
		{"multi-line collapsed", "printf 'name:\\n  Version: v2.4.2\\n'", "name: Version: v2.4.2", false},
		{"failing", "echo broken >&2; exit 3", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeExe(t, dir, strings.ReplaceAll(tt.name, " ", "-"), tt.script)
			got, err := Version(context.Background(), p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("Version = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCachedVersion(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	p := writeExe(t, dir, "tool", "echo v1")
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	rewrite := func(script string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		args   []string
		want   string
	}{
		{"first run", func() {}, nil, "v1"},
		{"same size and mtime: recorded", func() { rewrite("echo v2", at) }, nil, "v1"},
		{"other args: run", func() {}, []string{"--version"}, "v2"},
		{"new mtime: run", func() { rewrite("echo v3", at.Add(time.Second)) }, nil, "v3"},
		{"failure not recorded", func() { rewrite("exit 1", at.Add(2*time.Second)) }, nil, ""},
		{"fixed again", func() { rewrite("echo v4", at.Add(2*time.Second)) }, nil, "v4"},
	}
	for _, s := range steps {
		s.change()
		got, err := CachedVersion(context.Background(), cache, p, s.args...)
		if s.want == "" {
			if err == nil {
				t.Errorf("%s: no error", s.name)
			}
			continue
		}
		if err != nil || got != s.want {
			t.Errorf("%s: %q, %v; want %q", s.name, got, err, s.want)
		}
	}
}

func TestImagesDir(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "_output", "bin")
	images := filepath.Join(root, "_output", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &Finder{Dirs: []string{bin}}
	if _, err := f.ImagesDir(); err == nil || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("no pause.tar: err = %v, want a hint to run make images", err)
	}
	if err := os.WriteFile(filepath.Join(images, "pause.tar"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := f.ImagesDir()
	if err != nil || got != images {
		t.Fatalf("ImagesDir = %q, %v; want %s", got, err, images)
	}
}
