package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// LockTimeout is how long Merge and Remove wait for another writer of the
// same kubeconfig to finish: 10 seconds.
const LockTimeout = 10 * time.Second

// lockPoll is how often a waiting writer retries the lock.
const lockPoll = 50 * time.Millisecond

// ErrLocked is wrapped by the error of Merge or Remove when the kubeconfig
// stayed locked for LockTimeout.
var ErrLocked = errors.New("kubeconfig is locked")

// lockFile takes the lock of the kubeconfig at path the way client-go's
// clientcmd (and so kubectl) does: by creating path+".lock" exclusively in
// path's directory, which must exist. kubectl fails when the lock file
// exists rather than waiting, so the file is held only while path is read
// and written, and removed by unlock. The lock file holds the owner's pid
// to help whoever finds a stale one.
//
// A kernel lock (flock) on a lock file left in place would not exclude
// kubectl, and the lingering file would make every `kubectl config` command
// fail; hence this protocol.
//
// A stale lock (one left by a killed kubectl or kubernix) is never removed
// here: nothing tells it from a live one (clientcmd's lock file is empty,
// without a pid, and a pid may be reused), and breaking a live lock lets two
// writers lose each other's edits. kubectl itself refuses to write while the
// file exists. After timeout the error wraps ErrLocked and names the file,
// for the user to remove once no kubectl is running.
func lockFile(path string, timeout time.Duration) (unlock func() error, err error) {
	name := path + ".lock"
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_, werr := fmt.Fprintf(f, "%d\n", os.Getpid())
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
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("kubeconfig: lock %s: %w: %s existed for %s; "+
				"remove it if no kubectl or kubernix is changing the file", path, ErrLocked, name, timeout)
		}
		time.Sleep(lockPoll)
	}
}
