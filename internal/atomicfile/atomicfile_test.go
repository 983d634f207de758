package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
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

func TestWriteFunc(t *testing.T) {
	failed := errors.New("write failed")
	tests := []struct {
		name    string
		write   func(io.Writer) error
		want    string // content of the file afterwards
		wantErr error
	}{
		{"streamed", func(w io.Writer) error {
			for _, s := range []string{"new ", "content"} {
				if _, err := io.WriteString(w, s); err != nil {
					return err
				}
			}
			return nil
		}, "new content", nil},
		{"write fails midway", func(w io.Writer) error {
			_, _ = io.WriteString(w, "partial")
			return failed
		}, "old", failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := WriteFunc(p, 0o644, tt.write)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WriteFunc error = %v, want %v", err, tt.wantErr)
			}
			if got, _ := os.ReadFile(p); string(got) != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if st, _ := os.Stat(p); tt.wantErr == nil && st.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", st.Mode().Perm())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
}

func TestWriteOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_CHOWN) to give a file to another user")
	}
	const uid, gid = 4321, 4322
	tests := []struct {
		name             string
		uid, gid         int
		wantUID, wantGID uint32
	}{
		{"both", uid, gid, uid, gid},
		{"owner only", uid, -1, uid, 0},
		{"group only", -1, gid, 0, gid},
		{"neither", -1, -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := WriteOwned(p, []byte("new"), 0o640, tt.uid, tt.gid); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			sys := st.Sys().(*syscall.Stat_t)
			if sys.Uid != tt.wantUID || sys.Gid != tt.wantGID || st.Mode().Perm() != 0o640 {
				t.Errorf("owner %d:%d mode %v, want %d:%d 0640", sys.Uid, sys.Gid, st.Mode().Perm(), tt.wantUID, tt.wantGID)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
}
