package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubernix/kubernix/pkg/config"
)

// The verbs that lock a cluster's state dir, as the lock file records them.
const (
	// VerbUp holds the lock for the life of the supervisor.
	VerbUp = "up"
	// VerbDown holds it while `kubernix down` runs.
	VerbDown = "down"
)

// ErrBusy is wrapped by the error of Lock and WaitLock when another
// process holds the cluster's lock (see BusyError).
var ErrBusy = errors.New("cluster is busy")

// BusyError says who holds a cluster's lock, as the holder recorded it in
// the lock file: PID 0 and Verb "" when it could not be read (the holder
// was writing it).
type BusyError struct {
	Name string
	PID  int
	Verb string
}

func (e *BusyError) Error() string {
	who := "another kubernix process"
	if e.PID > 0 {
		who = fmt.Sprintf("pid %d (kubernix %s)", e.PID, e.Verb)
	}
	switch e.Verb {
	case VerbUp:
		return fmt.Sprintf("cluster %q is being started or supervised by %s; bring it down first with `kubernix down --name %s`", e.Name, who, e.Name)
	case VerbDown:
		return fmt.Sprintf("cluster %q is being brought down by %s; try again once it is done", e.Name, who)
	}
	return fmt.Sprintf("cluster %q is in use by %s", e.Name, who)
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// LockFile is the lock of a cluster's state dir. It is never removed: a
// new file would be a new lock, not held by the current holder.
func LockFile(paths config.Paths) string { return filepath.Join(paths.State, ".lock") }

// StateLock is a held lock on a cluster's state dir (flock(2) on
// LockFile): one `kubernix up` or `down` of a cluster at a time. The
// kernel releases it when the last process holding the open lock file
// closes it or exits, a SIGKILLed one included, so it is never stale.
type StateLock struct{ f *os.File }

// Lock takes the lock of cfg's state dir for verb (VerbUp or VerbDown),
// without waiting, and records this process's PID and verb in the lock
// file. It creates the state dir (0755) and the lock file (0644) if need
// be.
//
// inherited (may be nil) hands the lock over to a supervisor that a holder
// started: when it is the lock file itself, as the holder's open file
// (exec.Cmd.Stdin = lock.File(): `up --detach` starts the supervisor so,
// and rootlesskit passes its stdin on to the supervisor inside), it is
// used instead of a new open file, and the lock it holds is shared.
//
// When another process holds the lock, the error is a *BusyError (wrapping
// ErrBusy) naming it; other errors name the lock file.
func Lock(cfg config.Config, verb string, inherited *os.File) (*StateLock, error) {
	paths := cfg.Paths()
	if err := os.MkdirAll(paths.State, 0o755); err != nil {
		return nil, err
	}
	path := LockFile(paths)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the state dir: %w", err)
	}
	if inherited != nil && sameFile(f, inherited) {
		f.Close()
		f = inherited
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, holder := readHolder(path)
			return nil, &BusyError{Name: cfg.Name, PID: pid, Verb: holder}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), verb)), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: record the holder: %w", path, err)
	}
	return &StateLock{f: f}, nil
}

// WaitLock is Lock (with nothing inherited) that waits, up to timeout,
// while another process holds the lock. busy, if not nil, is called once,
// with the first *BusyError, e.g. to ask the holder to stop. The error is
// the last *BusyError, wrapped with the timeout, when the lock did not
// come in time, or wraps ctx's error.
func WaitLock(ctx context.Context, cfg config.Config, verb string, timeout time.Duration, busy func(*BusyError)) (*StateLock, error) {
	var (
		lock    *StateLock
		lastErr error
		told    bool
	)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		lock, err = Lock(cfg, verb, nil)
		var b *BusyError
		if !errors.As(err, &b) {
			return err == nil, err
		}
		lastErr = err
		if !told && busy != nil {
			told = true
			busy(b)
		}
		return false, nil
	})
	switch {
	case err == nil:
		return lock, nil
	case lastErr != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w (waited %s)", lastErr, timeout)
	}
	return nil, err
}

// File returns the open lock file, for a child process to share the lock
// (see Lock's inherited).
func (l *StateLock) File() *os.File { return l.f }

// Close drops this process's hold of the lock: the lock ends when no
// process that shares it holds it any more. It never unlocks explicitly,
// which would release it for a child it was handed over to.
func (l *StateLock) Close() error { return l.f.Close() }

// readHolder reads the PID and verb the holder recorded; 0 and "" if it
// cannot.
func readHolder(path string) (int, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	pidText, verb, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return 0, ""
	}
	return pid, verb
}

func sameFile(a, b *os.File) bool {
	sa, err := a.Stat()
	if err != nil {
		return false
	}
	sb, err := b.Stat()
	return err == nil && os.SameFile(sa, sb)
}
