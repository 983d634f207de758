package made

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRecord: a missing record reads as none; what is written reads back;
// writing none removes the file; a record that is not a JSON array of
// strings is an error naming it.
func TestRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "made.json")
	if got, err := Read(path); err != nil || got != nil {
		t.Fatalf("Read(missing) = %q, %v; want none", got, err)
	}
	if err := Write(path, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Read = %q, %v; want [a b]", got, err)
	}
	if err := Write(path, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the record is still there after writing none: %v", err)
	}
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Fatal("Read of a record that is not an array: no error")
	}
}

// TestLocked: while f runs, the lock is held (another flock on the file
// would block); f's error is returned.
func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "made.json")
	err := Locked(path, func() error {
		f, err := os.Open(path + ".lock")
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("flock while Locked runs f = %v, want EWOULDBLOCK", err)
		}
		return errSentinel
	})
	if !errors.Is(err, errSentinel) {
		t.Fatalf("Locked = %v, want f's error", err)
	}
}

var errSentinel = errors.New("from f")
