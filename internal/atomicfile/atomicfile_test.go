package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, tt := range []struct {
		data string
		mode os.FileMode
	}{{"first", 0o600}, {"second", 0o644}} {
		if err := Write(p, []byte(tt.data), tt.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != tt.data {
			t.Fatalf("content = %q, %v; want %q", got, err, tt.data)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != tt.mode {
			t.Errorf("mode = %v, want %v", st.Mode().Perm(), tt.mode)
		}
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
