package kubeconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/pkg/process"
)

// LockTimeout is how long Merge and Remove wait for another writer of the
// same kubeconfig to finish: 10 seconds.
const LockTimeout = 10 * time.Second

// lockPoll is how often a waiting writer retries the lock.
const lockPoll = 50 * time.Millisecond

// ErrLocked is wrapped by the error of Merge or Remove when the kubeconfig
// stayed locked for LockTimeout.
var ErrLocked = errors.New("kubeconfig is locked")

// lockMarker is the Owner of every lock record kubernix writes.
const lockMarker = "kubernix"

// maxLockRecord bounds what is read of a lock file, in bytes: a record is
// far smaller.
const maxLockRecord = 4096

// LockRecord is what kubernix writes into a kubeconfig's lock file, as
// one line of JSON: who holds the lock, precisely enough that the next
// kubernix can tell a holder that is gone (killed mid-merge) from one
// that runs. kubectl's lock files are empty.
type LockRecord struct {
	// Owner is "kubernix".
	Owner string `json:"owner"`
	// PID is the holder's process ID, in the PID namespace PIDNamespace.
	PID int `json:"pid"`
	// StartTime is the holder's start time in clock ticks after boot
	// (process.StartTime): a later process with the same PID differs.
	StartTime uint64 `json:"start_time"`
	// PIDNamespace is the holder's /proc/self/ns/pid link, e.g.
	// "pid:[4026531836]": its PID means nothing in another namespace.
	PIDNamespace string `json:"pid_namespace"`
	// BootID is the kernel's boot ID (/proc/sys/kernel/random/boot_id)
	// when the lock was taken: a different one on the same host means
	// the machine was rebooted since.
	BootID string `json:"boot_id"`
	// Host is the holder's host name: a kubeconfig in a home directory
	// shared by several machines may be locked by another one.
	Host string `json:"host"`
}

// ownLockRecord describes the calling process; a field it cannot read is
// left empty, and a record with one empty is never judged stale.
func ownLockRecord() LockRecord {
	rec := LockRecord{Owner: lockMarker, PID: os.Getpid()}
	rec.StartTime, _ = process.StartTime(rec.PID)
	rec.PIDNamespace, _ = os.Readlink("/proc/self/ns/pid")
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		rec.BootID = strings.TrimSpace(string(b))
	}
	rec.Host, _ = os.Hostname()
	return rec
}

// complete reports whether every field of r is set.
func (r LockRecord) complete() bool {
	return r.Owner == lockMarker && r.PID > 0 && r.StartTime > 0 && r.PIDNamespace != "" && r.BootID != "" && r.Host != ""
}

// staleLock decides whether content, read from a kubeconfig's lock file,
// is a lock kubernix took whose holder is gone, as seen by the process
// here describes; alive reports whether a PID with a start time runs (as
// process.Alive). It returns the record read and why the lock is stale
// or is kept. Only a complete record of kubernix's, written on this host,
// counts: then it is stale when written before the last reboot (another
// boot ID), or, in this PID namespace, when its PID does not run with its
// start time (a reused PID is another process). Anything else is kept:
// kubectl's empty lock, an older kubernix's bare PID, a record being
// written, another host's or PID namespace's, and a live holder's.
func staleLock(content []byte, here LockRecord, alive func(pid int, startTime uint64) bool) (LockRecord, bool, string) {
	var rec LockRecord
	if err := json.Unmarshal(content, &rec); err != nil || rec.Owner != lockMarker {
		return rec, false, "not taken by kubernix (kubectl's lock is empty)"
	}
	switch {
	case !rec.complete() || !here.complete():
		return rec, false, "the record is incomplete"
	case rec.Host != here.Host:
		return rec, false, fmt.Sprintf("taken by kubernix pid %d on host %s", rec.PID, rec.Host)
	case rec.BootID != here.BootID:
		return rec, true, fmt.Sprintf("taken by kubernix pid %d before this host last booted", rec.PID)
	case rec.PIDNamespace != here.PIDNamespace:
		return rec, false, fmt.Sprintf("taken by kubernix pid %d in another PID namespace", rec.PID)
	case alive(rec.PID, rec.StartTime):
		return rec, false, fmt.Sprintf("held by kubernix pid %d, which is running", rec.PID)
	}
	return rec, true, fmt.Sprintf("taken by kubernix pid %d, which is no longer running", rec.PID)
}

// lockFile takes the lock of the kubeconfig at path the way client-go's
// clientcmd (and so kubectl) does: by creating path+".lock" exclusively in
// path's directory, which must exist. kubectl fails when the lock file
// exists rather than waiting, so the file is held only while path is read
// and written, and removed by unlock. A kernel lock (flock) on a lock file
// left in place would not exclude kubectl, and the lingering file would
// make every `kubectl config` command fail; hence this protocol.
//
// The lock file holds a LockRecord. A lock that kubernix took and whose
// holder is gone (staleLock) is removed (breakStale), with a warning on
// log (nil: none), and the lock is taken; any other existing lock file is
// waited for. After timeout the error wraps ErrLocked and names the file
// and its holder, for the user to remove once no kubectl is running.
func lockFile(path string, timeout time.Duration, log *slog.Logger) (unlock func() error, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := path + ".lock"
	own := ownLockRecord()
	record, err := json.Marshal(own)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			// One write: a reader sees the whole record or an empty
			// file, which it leaves alone.
			_, werr := f.Write(append(record, '\n'))
			if err := errors.Join(werr, f.Close()); err != nil {
				os.Remove(name)
				return nil, fmt.Errorf("kubeconfig: lock %s: %w", path, err)
			}
			return func() error {
				if err := os.Remove(name); err != nil {
					return fmt.Errorf("kubeconfig: unlock %s: %w", path, err)
				}
				return nil
			}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("kubeconfig: lock %s: %w", path, err)
		}
		held, broken := breakStale(name, own)
		if broken {
			log.Warn("removed a stale lock of the kubeconfig", "lock", name, "why", held)
			continue
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("kubeconfig: lock %s: %w: %s existed for %s (%s); "+
				"remove it if no kubectl or kubernix is changing the file", path, ErrLocked, name, timeout, held)
		}
		time.Sleep(lockPoll)
	}
}

// breakStale removes the lock file name if it holds a stale lock
// (staleLock, for the process own describes), and says whose lock it
// was or why it stays. Of several kubernix processes that find the same
// stale lock, one removes it: each takes a flock on the file it opened
// and removes name only while name is still that file with that record,
// so none removes a lock taken after the stale one went. A file it cannot
// open or read stays.
func breakStale(name string, own LockRecord) (string, bool) {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err), false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return "another kubernix is removing it", false
	}
	content, err := io.ReadAll(io.LimitReader(f, maxLockRecord))
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err), false
	}
	_, stale, why := staleLock(content, own, process.Alive)
	if !stale {
		return why, false
	}
	opened, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err), false
	}
	if now, err := os.Lstat(name); err != nil || !os.SameFile(opened, now) {
		return "removed by another kubernix", false
	}
	if err := os.Remove(name); err != nil {
		return fmt.Sprintf("%s; removing it failed: %v", why, err), false
	}
	return why, true
}
