package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/config"
)

func lockConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "locked"
	cfg.StateDir = t.TempDir()
	return cfg
}

// TestLock: one holder at a time, named in the error; a lock handed over
// as an open file is shared, not taken twice, and lasts until its last
// holder closes it.
func TestLock(t *testing.T) {
	tests := []struct {
		name string
		// heldBy is the verb of the first holder.
		heldBy  string
		wantMsg string
	}{
		{"up holds it", VerbUp, "is being started or supervised by pid"},
		{"down holds it", VerbDown, "is being brought down by pid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := lockConfig(t)
			first, err := Lock(cfg, tt.heldBy, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Lock(cfg, VerbUp, nil)
			var busy *BusyError
			if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) {
				t.Fatalf("second Lock = %v, want a BusyError", err)
			}
			if busy.PID != os.Getpid() || busy.Verb != tt.heldBy || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("BusyError %+v (%q): want pid %d, verb %s, a message with %q", busy, err, os.Getpid(), tt.heldBy, tt.wantMsg)
			}

			// Handed over (a child's stdin): another descriptor of the
			// holder's open file shares the lock.
			fd, err := unix.Dup(int(first.File().Fd()))
			if err != nil {
				t.Fatal(err)
			}
			child, err := Lock(cfg, VerbUp, os.NewFile(uintptr(fd), "handed-over"))
			if err != nil {
				t.Fatalf("Lock with the holder's open file: %v", err)
			}
			// A file of the lock's path opened anew is not the lock.
			other, err := os.Open(LockFile(cfg.Paths()))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := Lock(cfg, VerbUp, other); !errors.Is(err, ErrBusy) {
				t.Errorf("Lock with a new file of the lock's path = %v, want ErrBusy", err)
			}
			// The parent lets go: the child still holds it, as it says.
			first.Close()
			if _, err := Lock(cfg, VerbDown, nil); !errors.As(err, &busy) || busy.Verb != VerbUp {
				t.Errorf("Lock once the first holder closed = %v, want held by the child's up", err)
			}
			child.Close()
			last, err := Lock(cfg, VerbDown, nil)
			if err != nil {
				t.Fatalf("Lock after every holder closed: %v", err)
			}
			last.Close()
		})
	}
}

func TestWaitLock(t *testing.T) {
	tests := []struct {
		name string
		// release is when the holder lets go; 0 never.
		release, timeout time.Duration
		wantBusy         bool
	}{
		{"the holder lets go in time", 300 * time.Millisecond, time.Minute, false},
		{"the holder keeps it", 0, 500 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := lockConfig(t)
			held, err := Lock(cfg, VerbUp, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if tt.release > 0 {
				time.AfterFunc(tt.release, func() { held.Close() })
			}
			told := 0
			lock, err := WaitLock(context.Background(), cfg, VerbDown, tt.timeout, func(b *BusyError) {
				told++
				if b.Verb != VerbUp || b.PID != os.Getpid() {
					t.Errorf("busy with %+v, want this process's up", b)
				}
			})
			if told != 1 {
				t.Errorf("busy called %d times, want once", told)
			}
			if tt.wantBusy {
				if !errors.Is(err, ErrBusy) {
					t.Errorf("WaitLock = %v, want ErrBusy after the timeout", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lock.Close()
		})
	}
}
