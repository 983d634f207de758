package state

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
	"github.com/kubernix/kubernix/pkg/process"
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
// the lock file: PID 0 and Verb "" when that cannot be read (the holder
// was writing it) or does not check out: the process it names is gone,
// or is not the one that took the lock (its start time differs), so
// nobody may be signalled on the file's word.
type BusyError struct {
	Name string
	PID  int
	Verb string
	// StartTime is the holder's start time (process.StartTime), for
	// process.Signal to check again before it signals PID.
	StartTime uint64
	// File is the lock file.
	File string
}

func (e *BusyError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("pid %d (kubernix %s)", e.PID, e.Verb)
	}
	switch e.Verb {
	case VerbUp:
		return fmt.Sprintf("cluster %q is being started or supervised by %s; bring it down first with `kubernix down --name %s`", e.Name, who, e.Name)
	case VerbDown:
		return fmt.Sprintf("cluster %q is being brought down by %s; try again once it is done", e.Name, who)
	}
	return fmt.Sprintf("cluster %q is in use by %s, which holds its lock %s", e.Name, who, e.File)
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
// without waiting, and records this process's PID, verb and start time in
// the lock file. It creates the state dir (config.StateDirMode) and the
// lock file if need be. The lock file is the caller's alone (mode 0600,
// which Lock sets on one an older kubernix made 0644): flock(2) works on a
// file opened read-only, so anyone who can read it can take the lock.
//
// inherited (may be nil) hands the lock over to a supervisor that a holder
// started: when it is the lock file itself, as the holder's open file
// (exec.Cmd.Stdin = lock.File(): `up --detach` starts the supervisor so,
// and rootlesskit passes its stdin on to the supervisor inside), it is
// used instead of a new open file, and the lock it holds is shared.
//
// When another process holds the lock, the error is a *BusyError (wrapping
// ErrBusy) naming it, if the lock file's record of it checks out (see
// BusyError). A lock file owned by another user is refused with an error
// wrapping config.ErrInvalid; other errors name the lock file.
func Lock(cfg config.Config, verb string, inherited *os.File) (*StateLock, error) {
	paths := cfg.Paths()
	if err := os.MkdirAll(paths.State, config.StateDirMode); err != nil {
		return nil, err
	}
	path := LockFile(paths)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the state dir: %w", err)
	}
	if err := ownLock(f); err != nil {
		f.Close()
		return nil, err
	}
	if inherited != nil && sameFile(f, inherited) {
		f.Close()
		f = inherited
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			h := holderOf(func() lockHolder { return readHolder(paths) })
			return nil, &BusyError{Name: cfg.Name, PID: h.pid, Verb: h.verb, StartTime: h.startTime, File: path}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The record is written over the last one, then cut to its length:
	// the file is never empty meanwhile, and a mix of the two does not
	// parse (see readHolder).
	start, err := process.StartTime(os.Getpid())
	if err == nil {
		rec := []byte(fmt.Sprintf("%d %s %d\n", os.Getpid(), verb, start))
		if _, err = f.WriteAt(rec, 0); err == nil {
			err = f.Truncate(int64(len(rec)))
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: record the holder: %w", path, err)
	}
	return &StateLock{f: f}, nil
}

// ownLock checks that the open lock file f is the caller's and makes it
// readable by nobody else (0600). A lock file of another user's is an
// error wrapping config.ErrInvalid: whoever owns it can take the lock and
// write the holder kubernix reads from it.
func ownLock(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: lock file %s is owned by %s, not by you: its owner can take the lock and write the holder kubernix reads from it; "+
			"make sure no kubernix of this cluster runs, then remove it", config.ErrInvalid, f.Name(), config.UserName(int(st.Uid)))
	}
	if st.Mode&0o777 == 0o600 {
		return nil
	}
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
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

// lockHolder is the process that holds a cluster's lock.
type lockHolder struct {
	pid       int
	verb      string
	startTime uint64
}

// holderWait is how long holderOf reads a lock file again while its
// record does not check out.
const holderWait = 500 * time.Millisecond

// holderOf returns the holder read returns (readHolder of a lock file),
// reading again for up to holderWait while it names nobody: a process
// that just took the lock, or a supervisor that inherited it, writes its
// record right after, and two `up`s started together would otherwise
// catch the file before that.
func holderOf(read func() lockHolder) lockHolder {
	var h lockHolder
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, holderWait, true, func(context.Context) (bool, error) {
		h = read()
		return h.pid > 0, nil
	})
	return h
}

// readHolder returns the holder the lock file of paths records when that
// record checks out: the process it names still runs and started at the
// recorded start time, or, in the record of an older kubernix (PID and
// verb only), it is the cluster's supervisor as its run record says
// (process.Running checks its start time). Otherwise, as when the file
// cannot be read, it returns the zero holder: nobody to signal.
func readHolder(paths config.Paths) lockHolder {
	b, err := os.ReadFile(LockFile(paths))
	if err != nil {
		return lockHolder{}
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || len(f) > 3 {
		return lockHolder{}
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return lockHolder{}
	}
	h := lockHolder{pid: pid, verb: f[1]}
	if len(f) == 3 {
		if h.startTime, err = strconv.ParseUint(f[2], 10, 64); err != nil || !process.Alive(pid, h.startTime) {
			return lockHolder{}
		}
		return h
	}
	sup := SupervisorRunDir(paths)
	if running, ok := process.Running(sup); !ok || running != pid {
		return lockHolder{}
	}
	run, err := process.ReadRun(sup)
	if err != nil || run.PID != pid {
		return lockHolder{}
	}
	h.startTime = run.StartTime
	return h
}

func sameFile(a, b *os.File) bool {
	sa, err := a.Stat()
	if err != nil {
		return false
	}
	sb, err := b.Stat()
	return err == nil && os.SameFile(sa, sb)
}
