// Package made reads and writes the small records kubernix keeps of
// what it made on the host, so that it removes only that, also after a
// crash (the mount points of a node's mounts, the iptables tables of the
// host): a JSON array of strings in a file, written atomically.
package made

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/kubernix/kubernix/internal/atomicfile"
	"github.com/kubernix/kubernix/pkg/config"
)

// Read returns the strings of the record at path: none when it is
// missing. It errors when the file cannot be read or is not a JSON array
// of strings, naming path.
func Read(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var items []string
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	return items, nil
}

// Write replaces the record at path with items (config.StateFileMode),
// making its directory (config.StateDirMode); with no items it removes the record (a missing one is no
// error).
func Write(path string, items []string) error {
	if len(items) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.Marshal(items)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), config.StateFileMode)
}

// Locked runs f holding an exclusive flock(2) on path+".lock" (made,
// with its directory, as Write makes the record), so that processes that
// check what exists on the host, change it and update the record at path
// do so one at a time: two clusters coming and going at once then never
// see each other's half-done work. The lock goes with the process, also on
// a crash. It returns the error of taking the lock (naming the file) or
// f's.
func Locked(path string, f func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), config.StateDirMode); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, config.StateFileMode)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	return f()
}
