package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMountPoints: the mount points missing on the host are made and
// recorded, those in the sandbox's own tmpfs and those that exist are
// not, and removal takes only what is still empty, innermost first: a
// directory the user filled meanwhile is theirs.
func TestMountPoints(t *testing.T) {
	dir := t.TempDir()
	srcDir := filepath.Join(dir, "src")
	srcFile := filepath.Join(dir, "file.txt")
	existing := filepath.Join(dir, "existing")
	for _, d := range []string{srcDir, existing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(srcFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	binds := []Bind{
		{Source: srcDir, Target: filepath.Join(dir, "a", "b", "c")},
		{Source: srcFile, Target: filepath.Join(dir, "a", "f.txt"), ReadOnly: true},
		{Source: srcDir, Target: existing},
		{Source: srcDir, Target: "/run/kubernix-test/x"},
		{Source: srcDir, Target: filepath.Join(dir, "private", "y")},
	}
	record := filepath.Join(dir, "state", "mount-points.json")
	if err := MakeMountPoints(binds, []string{filepath.Join(dir, "private")}, record); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b"), filepath.Join(dir, "a", "b", "c"), filepath.Join(dir, "a", "f.txt")}
	if got := MountPointsLeft(record); !slices.Equal(got, want) {
		t.Fatalf("made %v, want %v", got, want)
	}
	if st, err := os.Stat(filepath.Join(dir, "a", "f.txt")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("file mount point: %v, %v", st, err)
	}
	for _, p := range []string{"/run/kubernix-test", filepath.Join(dir, "private")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s made on the host", p)
		}
	}
	// Again (a restart): nothing new, nothing recorded twice.
	if err := MakeMountPoints(binds, []string{filepath.Join(dir, "private")}, record); err != nil {
		t.Fatal(err)
	}
	if got := MountPointsLeft(record); !slices.Equal(got, want) {
		t.Fatalf("after a restart %v, want %v", got, want)
	}
	// A file the user put in a made directory keeps it and its parents.
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "c", "mine"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveMountPoints(record); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "a", "f.txt")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "c", "mine")); err != nil {
		t.Errorf("the user's file went: %v", err)
	}
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("an existing mount point went: %v", err)
	}
	// The filled directory is the user's now: not a leftover.
	if got := MountPointsLeft(record); len(got) != 0 {
		t.Errorf("left after removal: %v", got)
	}
	if _, err := os.Lstat(record); err == nil {
		t.Error("record left")
	}
}

// TestParseBind: --bind takes Bind.String back; relative paths are refused.
func TestParseBind(t *testing.T) {
	b := Bind{Source: "/a,b=c:d", Target: "/x y", ReadOnly: true}
	if got, err := ParseBind(b.String()); err != nil || got != b {
		t.Errorf("ParseBind(%s) = %+v, %v", b, got, err)
	}
	for _, bad := range []string{`{"source":"a","target":"/b"}`, `not json`} {
		if _, err := ParseBind(bad); err == nil {
			t.Errorf("ParseBind(%s): no error", bad)
		}
	}
}
