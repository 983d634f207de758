package pki

import (
	"fmt"
	"os"
	"path/filepath"
)

// writer writes files atomically and remembers what it wrote.
type writer struct {
	written []string
}

// write replaces path with data at mode, creating parent directories with
// mode 0700.
func (w *writer) write(path string, data []byte, mode os.FileMode) error {
	if err := writeFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	w.written = append(w.written, path)
	return nil
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it over path, so readers see either the old or the new content.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
