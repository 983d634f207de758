package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/config"
	"github.com/kubernix/kubernix/pkg/process"
)

func lockConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Name = "locked"
	cfg.StateDir = t.TempDir()
	return cfg
}

// heldLock returns the config of a state dir whose lock this process
// holds for up, closed at the end of the test.
func heldLock(t *testing.T) (config.Config, *StateLock) {
	t.Helper()
	cfg := lockConfig(t)
	held, err := Lock(cfg, VerbUp, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	return cfg, held
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
			cfg, held := heldLock(t)
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

// TestLockHolderChecked: the holder a lock file records is believed only
// when the process it names still runs with the recorded start time, or,
// in an older kubernix's record without one, is the cluster's recorded
// supervisor; otherwise BusyError names nobody to signal.
func TestLockHolderChecked(t *testing.T) {
	self := os.Getpid()
	start, err := process.StartTime(self)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		record string
		// supervisor records this process as the cluster's supervisor.
		supervisor bool
		wantPID    int
	}{
		{"its start time", fmt.Sprintf("%d up %d\n", self, start), false, self},
		{"another start time (a reused PID)", fmt.Sprintf("%d up %d\n", self, start+1), false, 0},
		{"an older kubernix's record, of the supervisor", fmt.Sprintf("%d up\n", self), true, self},
		{"an older kubernix's record, of another process", fmt.Sprintf("%d up\n", self), false, 0},
		{"garbage", "12 up 3 4\n", false, 0},
		{"empty (being written)", "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := heldLock(t)
			if err := os.WriteFile(LockFile(cfg.Paths()), []byte(tt.record), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.supervisor {
				if err := process.RecordSelf(SupervisorRunDir(cfg.Paths()), SupervisorName, SupervisorScope); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Lock(cfg, VerbDown, nil)
			var busy *BusyError
			if !errors.As(err, &busy) {
				t.Fatalf("Lock = %v, want a BusyError", err)
			}
			if busy.PID != tt.wantPID || (tt.wantPID != 0) != (busy.StartTime == start) {
				t.Errorf("BusyError %+v, want pid %d (start time %d when not 0)", busy, tt.wantPID, start)
			}
			if tt.wantPID == 0 && !strings.Contains(err.Error(), "another process, which holds its lock "+LockFile(cfg.Paths())) {
				t.Errorf("message %q does not name the lock file", err)
			}
		})
	}
}

// TestHolderOfWrittenLate: a holder that took the lock but has not yet
// written its record (two ups started together; a supervisor that just
// inherited the lock) is still named once its record checks out, within
// holderWait; a record that never does names nobody.
func TestHolderOfWrittenLate(t *testing.T) {
	holder := lockHolder{pid: 42, verb: VerbUp, startTime: 7}
	tests := []struct {
		name string
		// late is how many reads find no holder before the record.
		late int
		want lockHolder
	}{
		{"written", 0, holder},
		{"written after the first read", 1, holder},
		{"never written", -1, lockHolder{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			got := holderOf(func() lockHolder {
				reads++
				if tt.late < 0 || reads <= tt.late {
					return lockHolder{}
				}
				return holder
			})
			if got != tt.want {
				t.Errorf("holderOf = %+v after %d reads, want %+v", got, reads, tt.want)
			}
		})
	}
}

// TestLockMode: the lock file is the caller's alone: made 0600, one of an
// older kubernix (0644) made so, and one another user owns refused.
func TestLockMode(t *testing.T) {
	cfg := lockConfig(t)
	path := LockFile(cfg.Paths())
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	lock, err := Lock(cfg, VerbUp, nil)
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if os.Geteuid() != 0 {
		t.Skip("a lock file of another user's needs root to make")
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(cfg, VerbDown, nil); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), path+" is owned by uid 65534") {
		t.Errorf("Lock of a lock file uid 65534 owns = %v, want it refused naming the file", err)
	}
}
